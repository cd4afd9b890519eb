//! fio-style size parsing: `4k`, `1m`, `512`, `2g`, `1.5m`, `64KiB`, `10%`.
//!
//! Like fio with its default `kb_base=1024`, every suffix is a power of 1024:
//! `k`/`K`/`KiB`/`KB` = 1024, `m` = 1024², `g` = 1024³, `t` = 1024⁴,
//! `p` = 1024⁵. Under fio's `kb_base=1000` (the job's
//! [`crate::run::output_opts::OutputOpts`]), `k`/`kB` and the other SI
//! prefixes are powers of 1000 and `KiB`/`MiB`/… powers of 1024, as fio
//! reads them; a job's options are set inside [`with_kb_base`], which is how
//! [`parse_bytes`] knows the base without every option's parser carrying
//! it (fio reads it the same way, from the job being parsed). A bare number
//! is bytes. A trailing `%` (where the option allows it) is a share of the
//! target's size, resolved once the target is open.

use std::cell::Cell;

use crate::SpecError;

thread_local! {
    /// The `kb_base` of the job whose options this thread is setting.
    static KB_BASE: Cell<u64> = const { Cell::new(1024) };
}

/// Run `f` with sizes read under `kb_base` (1000 or 1024), then restore
/// the base that was in effect.
pub fn with_kb_base<R>(kb_base: u64, f: impl FnOnce() -> R) -> R {
    let before = KB_BASE.with(|b| b.replace(kb_base));
    let out = f();
    KB_BASE.with(|b| b.set(before));
    out
}

/// A size given either in bytes or as a percentage of the target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeSpec {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A share of the target's size, 0 < p <= 100.
    Percent(f64),
}

impl SizeSpec {
    /// Bytes this spec means on a target of `target_bytes`.
    pub fn resolve(self, target_bytes: u64) -> u64 {
        match self {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(p) => ((target_bytes as f64) * p / 100.0) as u64,
        }
    }
}

/// Parse a byte count with fio's 1024-based suffixes.
pub fn parse_bytes(key: &str, s: &str) -> Result<u64, SpecError> {
    let bad = || SpecError::BadValue {
        key: key.to_string(),
        value: s.to_string(),
        expect: "a size such as 4k, 512, 1m or 2g (k = 1024)".to_string(),
    };
    let t = s.trim();
    if t.is_empty() {
        return Err(bad());
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let suffix = suffix.to_ascii_lowercase();
    let (prefix, iec) = match suffix.strip_suffix("ib") {
        Some(p) => (p, true),
        None => (suffix.strip_suffix('b').unwrap_or(&suffix), false),
    };
    let pow: u32 = match prefix {
        "" if !iec => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return Err(bad()),
    };
    // fio: under kb_base=1000 the SI prefixes are 1000 and the IEC ones
    // 1024; under its default 1024 drivelab reads both as 1024.
    let kb_base = KB_BASE.with(Cell::get);
    let base: u64 = if kb_base == 1000 && !iec { 1000 } else { 1024 };
    let mult = base.pow(pow);
    if num.contains('.') {
        let f: f64 = num.parse().map_err(|_| bad())?;
        let v = f * mult as f64;
        if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
            return Err(bad());
        }
        Ok(v.round() as u64)
    } else {
        let n: u64 = num.parse().map_err(|_| bad())?;
        n.checked_mul(mult).ok_or_else(bad)
    }
}

/// Parse a size that may also be a percentage (`50%`).
pub fn parse_size_spec(key: &str, s: &str) -> Result<SizeSpec, SpecError> {
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p.trim().parse().map_err(|_| SpecError::BadValue {
            key: key.to_string(),
            value: s.to_string(),
            expect: "a percentage between 0 and 100, such as 50%".to_string(),
        })?;
        if !(v > 0.0 && v <= 100.0) {
            return Err(SpecError::BadValue {
                key: key.to_string(),
                value: s.to_string(),
                expect: "a percentage above 0 and at most 100".to_string(),
            });
        }
        return Ok(SizeSpec::Percent(v));
    }
    parse_bytes(key, t).map(SizeSpec::Bytes)
}

/// Parse a duration the way fio does: a bare number is seconds; suffixes
/// `us`, `ms`, `s`, `m`, `h` are accepted.
pub fn parse_duration(key: &str, s: &str) -> Result<std::time::Duration, SpecError> {
    let bad = || SpecError::BadValue {
        key: key.to_string(),
        value: s.to_string(),
        expect: "a time such as 10, 10s, 500ms or 2m (bare number = seconds)".to_string(),
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| bad())?;
    let secs = match suffix.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => v,
        "us" | "usec" => v / 1e6,
        "ms" | "msec" => v / 1e3,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(bad()),
    };
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// Format bytes the way fio prints them: the largest 1024 unit that keeps
/// the number at or above 1 (`4096` → `4KiB`, `1536` → `1.50KiB`).
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if v.fract() == 0.0 {
        format!("{}{}", v as u64, UNITS[i])
    } else {
        format!("{v:.2}{}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_are_1024_based_like_fio() {
        assert_eq!(parse_bytes("bs", "4k").unwrap(), 4096);
        assert_eq!(parse_bytes("bs", "4K").unwrap(), 4096);
        assert_eq!(parse_bytes("bs", "4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("bs", "512").unwrap(), 512);
        assert_eq!(parse_bytes("size", "1m").unwrap(), 1 << 20);
        assert_eq!(parse_bytes("size", "2g").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("size", "1.5m").unwrap(), 1_572_864);
        assert!(parse_bytes("bs", "4ib").is_err() && parse_bytes("bs", "4x").is_err());
        with_kb_base(1000, || {
            assert_eq!(parse_bytes("bs", "4k").unwrap(), 4000);
            assert_eq!(parse_bytes("bs", "4kB").unwrap(), 4000);
            assert_eq!(parse_bytes("bs", "4KiB").unwrap(), 4096);
            assert_eq!(parse_bytes("size", "2m").unwrap(), 2_000_000);
            assert_eq!(parse_bytes("size", "512").unwrap(), 512);
        });
        assert_eq!(parse_bytes("bs", "4k").unwrap(), 4096);
        assert_eq!(parse_bytes("size", "1t").unwrap(), 1 << 40);
    }

    #[test]
    fn bad_sizes_name_the_key_and_say_what_is_expected() {
        let e = parse_bytes("bs", "4q").unwrap_err().to_string();
        assert!(
            e.contains("bs") && e.contains("4q") && e.contains("k = 1024"),
            "{e}"
        );
        assert!(parse_bytes("bs", "").is_err());
        assert!(parse_bytes("bs", "-4k").is_err());
        assert!(parse_bytes("bs", "99999999999999999999").is_err());
        assert!(parse_bytes("bs", "20000000p").is_err());
    }

    #[test]
    fn percentages_resolve_against_the_target() {
        let s = parse_size_spec("size", "25%").unwrap();
        assert_eq!(s.resolve(1 << 30), 1 << 28);
        assert!(parse_size_spec("size", "0%").is_err());
        assert!(parse_size_spec("size", "101%").is_err());
    }

    #[test]
    fn durations_default_to_seconds() {
        assert_eq!(parse_duration("runtime", "10").unwrap().as_secs(), 10);
        assert_eq!(parse_duration("runtime", "500ms").unwrap().as_millis(), 500);
        assert_eq!(parse_duration("runtime", "2m").unwrap().as_secs(), 120);
        assert!(parse_duration("runtime", "ten").is_err());
    }

    #[test]
    fn human_bytes_prints_like_fio() {
        assert_eq!(human_bytes(4096), "4KiB");
        assert_eq!(human_bytes(1536), "1.50KiB");
        assert_eq!(human_bytes(512), "512B");
        assert_eq!(human_bytes(1 << 30), "1GiB");
    }
}
