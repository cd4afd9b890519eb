//! The named data patterns and their textual form.
//!
//! A DMM user names a pattern (`pattern=decrementing`) in a test step; this
//! module is where that name becomes a [`Pattern`] and back, so the log
//! prints exactly what the user can type again. The byte content of each
//! pattern is defined here too ([`Pattern::periodic_byte`]), once, and the
//! generator builds its buffers from it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use drivelab_device::input::{self, InputError, Kind};

use crate::error::PatternError;

/// Largest `fixed:` pattern, in bytes (64 KiB).
pub const MAX_FIXED_BYTES: usize = 64 * 1024;
/// Largest `file:` pattern file, in bytes (16 MiB).
pub const MAX_FILE_BYTES: u64 = match Kind::Pattern.bound() {
    Some(b) => b,
    None => 0,
};

/// A data pattern, applied per logical block.
///
/// Offset `i` below is the byte offset within the logical block: it restarts
/// at 0 at every block, so every block of a periodic pattern is identical.
/// When the block size is not a multiple of a pattern's period (2 for the
/// alternating patterns, 8 for walking bits, 256 for incrementing /
/// decrementing, the length of a `fixed:`/`file:` buffer), the last period
/// of each block is cut short and the next block starts the period afresh.
#[derive(Clone, PartialEq, Eq)]
pub enum Pattern {
    /// `allzeros`: every byte 0x00.
    AllZeros,
    /// `allones`: every byte 0xFF.
    AllOnes,
    /// `altzeroandone`: every byte 0x55 (bits 0101…).
    AltZeroAndOne,
    /// `altoneandzero`: every byte 0xAA (bits 1010…).
    AltOneAndZero,
    /// `incrementing`: byte `i mod 256`.
    Incrementing,
    /// `decrementing`: byte `255 − (i mod 256)`.
    Decrementing,
    /// `random`: a seeded pseudo-random stream keyed by (seed, LBA), so any
    /// block can be regenerated alone.
    Random,
    /// `walkingzeros`: byte `!(1 << (i mod 8))`.
    WalkingZeros,
    /// `walkingones`: byte `1 << (i mod 8)`.
    WalkingOnes,
    /// `alt1and0thenalt0and1`: bytes 0xAA, 0x55, 0xAA, 0x55, …
    Alt1And0ThenAlt0And1,
    /// `alt0and1thenalt1and0`: bytes 0x55, 0xAA, 0x55, 0xAA, …
    Alt0And1ThenAlt1And0,
    /// `fixed:0xHH…`: the given bytes repeated, byte `bytes[i mod len]`.
    Fixed(Vec<u8>),
    /// `file:PATH`: the file's bytes repeated, byte `data[i mod len]`
    /// (so only the first block-size bytes of a longer file are used).
    File {
        /// The file the bytes came from (for the log).
        path: PathBuf,
        /// The file's content (1 byte to [`MAX_FILE_BYTES`]).
        data: Vec<u8>,
    },
    /// `stamped` (beyond DMM): every block carries a header (magic, LBA, run
    /// id, sequence number, CRC-32C) and a random payload keyed by (seed,
    /// LBA, sequence), so a miscompare can be told apart as corrupted,
    /// misdirected or stale. See [`crate::stamp`].
    Stamped,
}

/// The eleven DMM pattern names, in the order DMM lists them.
static DMM_NAMED: [Pattern; 11] = [
    Pattern::AllZeros,
    Pattern::AllOnes,
    Pattern::AltZeroAndOne,
    Pattern::AltOneAndZero,
    Pattern::Incrementing,
    Pattern::Decrementing,
    Pattern::Random,
    Pattern::WalkingZeros,
    Pattern::WalkingOnes,
    Pattern::Alt1And0ThenAlt0And1,
    Pattern::Alt0And1ThenAlt1And0,
];

impl Pattern {
    /// The eleven patterns DMM names (`allzeros` … `alt0and1thenalt1and0`),
    /// in DMM's order. `stamped`, `fixed:` and `file:` are not among them.
    pub fn all_named() -> &'static [Pattern] {
        &DMM_NAMED
    }

    /// A `fixed:` pattern of the given bytes (1 to [`MAX_FIXED_BYTES`]).
    pub fn fixed(bytes: Vec<u8>) -> Result<Pattern, PatternError> {
        if bytes.is_empty() {
            return Err(PatternError::FixedEmpty {
                text: "fixed:".to_string(),
            });
        }
        if bytes.len() > MAX_FIXED_BYTES {
            return Err(PatternError::FixedTooLong {
                len: bytes.len(),
                max: MAX_FIXED_BYTES,
            });
        }
        Ok(Pattern::Fixed(bytes))
    }

    /// A `file:` pattern: reads the whole file, a regular file of 1 byte
    /// to [`MAX_FILE_BYTES`] (`drivelab_device::input`, [`Kind::Pattern`]).
    /// The only I/O this crate does.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Pattern, PatternError> {
        let path = path.as_ref().to_path_buf();
        let data = input::read(&path, Kind::Pattern).map_err(|e| match e {
            InputError::TooLarge { size, .. } => PatternError::FileTooLarge {
                path: path.clone(),
                size: size.unwrap_or(MAX_FILE_BYTES + 1),
                max: MAX_FILE_BYTES,
            },
            InputError::Io { source, .. } => PatternError::FileRead {
                path: path.clone(),
                source,
            },
            InputError::Missing { .. } => PatternError::FileRead {
                path: path.clone(),
                source: std::io::ErrorKind::NotFound.into(),
            },
            e => PatternError::FileRefused(e),
        })?;
        if data.is_empty() {
            return Err(PatternError::FileEmpty { path });
        }
        Ok(Pattern::File { path, data })
    }

    /// Whether every block of this pattern is the same (true for all but
    /// `random` and `stamped`).
    pub fn is_periodic(&self) -> bool {
        !matches!(self, Pattern::Random | Pattern::Stamped)
    }

    /// Byte at offset `i` of every block of a periodic pattern; `None` for
    /// `random` and `stamped`, whose blocks differ by LBA.
    pub fn periodic_byte(&self, i: usize) -> Option<u8> {
        Some(match self {
            Pattern::AllZeros => 0x00,
            Pattern::AllOnes => 0xFF,
            Pattern::AltZeroAndOne => 0x55,
            Pattern::AltOneAndZero => 0xAA,
            Pattern::Incrementing => (i % 256) as u8,
            Pattern::Decrementing => 255 - (i % 256) as u8,
            Pattern::WalkingOnes => 1u8 << (i % 8),
            Pattern::WalkingZeros => !(1u8 << (i % 8)),
            Pattern::Alt1And0ThenAlt0And1 => {
                if i % 2 == 0 {
                    0xAA
                } else {
                    0x55
                }
            }
            Pattern::Alt0And1ThenAlt1And0 => {
                if i % 2 == 0 {
                    0x55
                } else {
                    0xAA
                }
            }
            Pattern::Fixed(bytes) => bytes[i % bytes.len()],
            Pattern::File { data, .. } => data[i % data.len()],
            Pattern::Random | Pattern::Stamped => return None,
        })
    }
}

impl fmt::Display for Pattern {
    /// The canonical name, which `FromStr` parses back to the same pattern
    /// (for `file:` it re-reads the file).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Pattern::AllZeros => "allzeros",
            Pattern::AllOnes => "allones",
            Pattern::AltZeroAndOne => "altzeroandone",
            Pattern::AltOneAndZero => "altoneandzero",
            Pattern::Incrementing => "incrementing",
            Pattern::Decrementing => "decrementing",
            Pattern::Random => "random",
            Pattern::WalkingZeros => "walkingzeros",
            Pattern::WalkingOnes => "walkingones",
            Pattern::Alt1And0ThenAlt0And1 => "alt1and0thenalt0and1",
            Pattern::Alt0And1ThenAlt1And0 => "alt0and1thenalt1and0",
            Pattern::Stamped => "stamped",
            Pattern::Fixed(bytes) => {
                f.write_str("fixed:0x")?;
                for b in bytes {
                    write!(f, "{b:02X}")?;
                }
                return Ok(());
            }
            Pattern::File { path, .. } => return write!(f, "file:{}", path.display()),
        };
        f.write_str(name)
    }
}

impl fmt::Debug for Pattern {
    /// The canonical name; for `file:` also the length, never the content
    /// (which may be megabytes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::File { data, .. } => write!(f, "Pattern({self}, {} bytes)", data.len()),
            _ => write!(f, "Pattern({self})"),
        }
    }
}

impl FromStr for Pattern {
    type Err = PatternError;

    /// Parse a pattern name, case-insensitively, ignoring surrounding
    /// whitespace and an optional DMM-style `pattern=` prefix:
    /// one of [`Pattern::all_named`], `stamped`, `fixed:0xHH…` (hex, `0x`
    /// optional, two digits per byte) or `file:PATH` (read now).
    fn from_str(s: &str) -> Result<Pattern, PatternError> {
        let mut text = s.trim();
        if let Some(rest) = strip_prefix_ci(text, "pattern=") {
            text = rest.trim();
        }
        if let Some(hex) = strip_prefix_ci(text, "fixed:") {
            return parse_fixed(text, hex);
        }
        if let Some(path) = strip_prefix_ci(text, "file:") {
            if path.is_empty() {
                return Err(PatternError::FileNoPath);
            }
            return Pattern::from_file(path);
        }
        let lower = text.to_ascii_lowercase();
        if lower == "stamped" {
            return Ok(Pattern::Stamped);
        }
        DMM_NAMED
            .iter()
            .find(|p| p.to_string() == lower)
            .cloned()
            .ok_or_else(|| PatternError::UnknownName {
                name: s.to_string(),
            })
    }
}

/// `text` without `prefix`, compared ASCII-case-insensitively.
fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) {
        Some(&text[prefix.len()..])
    } else {
        None
    }
}

/// Parse the hex after `fixed:` (`text` is the whole argument, for errors).
fn parse_fixed(text: &str, hex: &str) -> Result<Pattern, PatternError> {
    let (skipped, digits) = match strip_prefix_ci(hex, "0x") {
        Some(rest) => (2, rest),
        None => (0, hex),
    };
    if digits.is_empty() {
        return Err(PatternError::FixedEmpty {
            text: text.to_string(),
        });
    }
    let mut nibbles = Vec::with_capacity(digits.len());
    for (n, c) in digits.chars().enumerate() {
        match c.to_digit(16) {
            Some(v) => nibbles.push(v as u8),
            None => {
                return Err(PatternError::FixedBadDigit {
                    text: text.to_string(),
                    found: c,
                    position: skipped + n,
                })
            }
        }
    }
    if nibbles.len() % 2 != 0 {
        return Err(PatternError::FixedOddDigits {
            text: text.to_string(),
            digits: nibbles.len(),
        });
    }
    let bytes: Vec<u8> = nibbles
        .chunks_exact(2)
        .map(|p| (p[0] << 4) | p[1])
        .collect();
    Pattern::fixed(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_pattern_round_trips_through_its_name() {
        for p in Pattern::all_named() {
            let name = p.to_string();
            assert_eq!(&name.parse::<Pattern>().unwrap(), p);
            assert_eq!(&name.to_uppercase().parse::<Pattern>().unwrap(), p);
            assert_eq!(&format!(" pattern={name} ").parse::<Pattern>().unwrap(), p);
        }
        assert_eq!("Stamped".parse::<Pattern>().unwrap(), Pattern::Stamped);
    }

    #[test]
    fn all_named_is_dmms_list() {
        // The list as printed in seed 000, in its order.
        let dmm = [
            "allzeros",
            "allones",
            "altzeroandone",
            "altoneandzero",
            "incrementing",
            "decrementing",
            "random",
            "walkingzeros",
            "walkingones",
            "alt1and0thenalt0and1",
            "alt0and1thenalt1and0",
        ];
        let ours: Vec<String> = Pattern::all_named().iter().map(|p| p.to_string()).collect();
        assert_eq!(ours, dmm);
    }

    #[test]
    fn fixed_parses_hex_with_or_without_prefix() {
        let p: Pattern = "fixed:0xDEADBEEF".parse().unwrap();
        assert_eq!(p, Pattern::Fixed(vec![0xDE, 0xAD, 0xBE, 0xEF]));
        assert_eq!(p.to_string(), "fixed:0xDEADBEEF");
        let q: Pattern = "FIXED:a5".parse().unwrap();
        assert_eq!(q, Pattern::Fixed(vec![0xA5]));
    }

    #[test]
    fn fixed_errors_are_typed_and_say_what_to_do() {
        let e = "fixed:0xABC".parse::<Pattern>().unwrap_err();
        assert!(matches!(e, PatternError::FixedOddDigits { digits: 3, .. }));
        assert!(e.to_string().contains("two digits per byte"));

        let e = "fixed:0xABZZ".parse::<Pattern>().unwrap_err();
        assert!(matches!(
            e,
            PatternError::FixedBadDigit {
                found: 'Z',
                position: 4,
                ..
            }
        ));
        assert!(e.to_string().contains("0-9 and A-F"));

        let e = "fixed:0x".parse::<Pattern>().unwrap_err();
        assert!(matches!(e, PatternError::FixedEmpty { .. }));
        assert!(e.to_string().contains("fixed:0xDEADBEEF"));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "parses 128 Ki hex digit pairs, 24 s per 4 Ki pairs under Miri; the same parser runs there in fixed_errors_are_typed_and_say_what_to_do"
    )]
    fn fixed_longer_than_the_limit_is_refused() {
        let long = format!("fixed:{}", "00".repeat(MAX_FIXED_BYTES + 1));
        let e = long.parse::<Pattern>().unwrap_err();
        assert!(matches!(e, PatternError::FixedTooLong { .. }));
        assert!(e.to_string().contains("file:PATH"));
    }

    #[test]
    fn unknown_name_lists_the_valid_ones() {
        let e = "zeros".parse::<Pattern>().unwrap_err();
        assert!(matches!(&e, PatternError::UnknownName { name } if name == "zeros"));
        let msg = e.to_string();
        for p in Pattern::all_named() {
            assert!(msg.contains(&p.to_string()), "{msg} lacks {p}");
        }
        assert!(msg.contains("stamped") && msg.contains("fixed:") && msg.contains("file:"));
    }
}
