//! fio's data pattern syntax, shared by `verify_pattern` and
//! `buffer_pattern`: pieces written one after another, in any order and
//! number, their bytes joined:
//!
//! - `0xHEX`: the bytes of the hex digits, first byte first (an odd count
//!   gets a leading 0; a following `0x` starts the next piece, so
//!   `0xff0x14` is ff 14);
//! - a decimal number in [-2^31, 2^31-1]: its 32-bit two's complement, least
//!   significant byte first, high zero bytes dropped (0 is one zero byte,
//!   -1024 is 00 fc ff ff);
//! - `"string"`: its bytes;
//! - `'file'`: the file's first bytes (at most the pattern's limit).
//!
//! fio (lib/pattern.c) keeps at most 512 pattern bytes; so does this.

use crate::SpecError;

/// The most bytes one pattern holds (fio's `MAX_PATTERN_SIZE`).
pub const MAX_PATTERN: usize = 512;

/// Parse fio's pattern `v` of option `key`.
pub fn parse(key: &str, v: &str) -> Result<Vec<u8>, SpecError> {
    let bad = |why: &str| {
        SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: format!(
            "0xHEX, a decimal number, a \"string\" or a 'file', or several of them joined (e.g. 0xdeadface\"abcd\"-12){why}"
        ),
    }
    };
    let s = v.trim();
    if s.is_empty() {
        return Err(bad(""));
    }
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'') => {
                let end = s[i + 1..]
                    .find(q as char)
                    .map(|e| i + 1 + e)
                    .ok_or_else(|| bad(": a quote is not closed"))?;
                let inner = &s[i + 1..end];
                if q == b'"' {
                    if inner.is_empty() {
                        return Err(bad(": an empty string"));
                    }
                    out.extend_from_slice(inner.as_bytes());
                } else {
                    let room = MAX_PATTERN.saturating_sub(out.len());
                    let data = drivelab_device::input::read(
                        std::path::Path::new(inner),
                        drivelab_device::input::Kind::Pattern,
                    )
                    .map_err(|e| bad(&format!(": {e}")))?;
                    if data.is_empty() {
                        return Err(bad(&format!(": '{inner}' is empty")));
                    }
                    out.extend_from_slice(&data[..data.len().min(room)]);
                }
                i = end + 1;
            }
            b'0' if matches!(b.get(i + 1), Some(b'x' | b'X')) => {
                let start = i + 2;
                let mut end = start;
                while end < b.len() && b[end].is_ascii_hexdigit() {
                    // "0x" inside the digits starts the next piece.
                    if b[end] == b'0' && matches!(b.get(end + 1), Some(b'x' | b'X')) {
                        break;
                    }
                    end += 1;
                }
                let digits = &s[start..end];
                if digits.is_empty() {
                    return Err(bad(": 0x needs hex digits"));
                }
                let padded = if digits.len() % 2 == 1 {
                    format!("0{digits}")
                } else {
                    digits.to_string()
                };
                for k in (0..padded.len()).step_by(2) {
                    let byte = u8::from_str_radix(&padded[k..k + 2], 16).map_err(|_| bad(""))?;
                    out.push(byte);
                }
                i = end;
            }
            c if c == b'-' || c == b'+' || c.is_ascii_digit() => {
                let mut end = i + 1;
                while end < b.len() && b[end].is_ascii_digit() {
                    // A following "0x" starts the next piece.
                    if b[end] == b'0' && matches!(b.get(end + 1), Some(b'x' | b'X')) {
                        break;
                    }
                    end += 1;
                }
                let n: i64 = s[i..end].parse().map_err(|_| bad(""))?;
                let n = i32::try_from(n).map_err(|_| bad(": a decimal must fit 32 bits"))?;
                let mut val = n as u32;
                if val == 0 {
                    out.push(0);
                }
                while val != 0 {
                    out.push((val & 0xff) as u8);
                    val >>= 8;
                }
                i = end;
            }
            _ => return Err(bad("")),
        }
        if out.len() > MAX_PATTERN {
            return Err(bad(&format!(": at most {MAX_PATTERN} bytes")));
        }
    }
    Ok(out)
}

/// Fill `buf` with `pattern` repeated from its first byte (fio's
/// `cpy_pattern`).
pub fn fill(buf: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern[i % pattern.len()];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &str) -> Vec<u8> {
        parse("buffer_pattern", v).unwrap()
    }

    #[test]
    fn fios_documented_examples_give_fios_bytes() {
        // lib/pattern.c's table of combined strings.
        assert_eq!(p("\"abcd\""), b"abcd");
        assert_eq!(p("-1024"), [0x00, 0xfc, 0xff, 0xff]);
        assert_eq!(p("66"), [0x42]);
        assert_eq!(p("0xFF0X1"), [0xff, 0x01]);
        assert_eq!(p("\"123\"0xFFeeCC"), [0x31, 0x32, 0x33, 0xff, 0xee, 0xcc]);
        assert_eq!(p("-100xab\"1\""), [0xf6, 0xff, 0xff, 0xff, 0xab, 0x31]);
        assert_eq!(
            p("0xdeadface\"abcd\"-12"),
            [0xde, 0xad, 0xfa, 0xce, b'a', b'b', b'c', b'd', 0xf4, 0xff, 0xff, 0xff]
        );
        assert_eq!(p("0x01"), [0x01]);
        assert_eq!(p("0x00"), [0x00]);
        assert_eq!(p("0"), [0x00]);
        assert_eq!(p("0x123"), [0x01, 0x23]);
        assert_eq!(p("256"), [0x00, 0x01]);
        assert_eq!(p("0xaa555aa5"), [0xaa, 0x55, 0x5a, 0xa5]);
    }

    #[test]
    fn a_file_piece_reads_the_files_first_bytes() {
        let f = std::env::temp_dir().join(format!("drivelab-pattern-{}", std::process::id()));
        std::fs::write(&f, vec![7u8; 1000]).unwrap();
        let got = p(&format!("0x01'{}'", f.display()));
        std::fs::remove_file(&f).unwrap();
        assert_eq!(got.len(), MAX_PATTERN);
        assert_eq!(got[0], 1);
        assert!(got[1..].iter().all(|&b| b == 7));
    }

    #[test]
    fn malformed_patterns_name_the_key() {
        for v in [
            "",
            "0x",
            "0xzz",
            "\"open",
            "\"\"",
            "abc",
            "4294967296",
            "'/nonexistent/pattern'",
        ] {
            let e = parse("buffer_pattern", v).unwrap_err().to_string();
            assert!(e.contains("buffer_pattern"), "{v}: {e}");
        }
        let long = format!("0x{}", "ab".repeat(MAX_PATTERN + 1));
        assert!(parse("verify_pattern", &long).is_err());
    }

    #[test]
    fn fill_repeats_from_the_first_byte() {
        let mut b = [0u8; 7];
        fill(&mut b, b"abc");
        assert_eq!(&b, b"abcabca");
    }
}
