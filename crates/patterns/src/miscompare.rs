//! What verification reports when a block is not what was written.
//!
//! A miscompare names the block (LBA), where in it and in the caller's
//! buffer the first wrong byte is, shows up to 32 expected and found bytes
//! from there (what a DMM log prints), and for `stamped` says what kind of
//! wrong it is. It is a small fixed-size value, so reporting one allocates
//! nothing.

use std::fmt;

/// Most bytes of expected / found data a [`Miscompare`] carries.
pub const WINDOW_LEN: usize = 32;

/// What kind of wrong a failing block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MiscompareKind {
    /// A block of a plain (non-stamped) pattern whose bytes differ.
    Data,
    /// Stamped: the block has no stamp magic or its checksum is bad.
    Corrupted,
    /// Stamped: a valid stamp of another block: the write meant for
    /// `belongs_to` landed here (or this block's read returned that one).
    Misdirected {
        /// LBA the block was written for, in logical blocks.
        belongs_to: u64,
    },
    /// Stamped: a valid stamp of this block, but from another pass (sequence
    /// number) or another run: the latest write did not reach the media, or
    /// the read returned old data. A sequence newer than expected is
    /// reported the same way.
    Stale {
        /// Sequence number found in the block.
        found_seq: u64,
        /// Run id found in the block.
        found_run: u64,
    },
    /// Stamped: a valid stamp naming this block, run and sequence, but a
    /// payload generated from another seed (the run id was reused with a
    /// different seed).
    SeedMismatch,
}

impl fmt::Display for MiscompareKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MiscompareKind::Data => f.write_str("data miscompare"),
            MiscompareKind::Corrupted => f.write_str("corrupted (no stamp or bad checksum)"),
            MiscompareKind::Misdirected { belongs_to } => {
                write!(
                    f,
                    "misdirected (holds the block written for LBA {belongs_to})"
                )
            }
            MiscompareKind::Stale {
                found_seq,
                found_run,
            } => write!(
                f,
                "stale (written in sequence {found_seq} of run {found_run:#018x})"
            ),
            MiscompareKind::SeedMismatch => {
                f.write_str("valid stamp but payload from another seed (run id reused)")
            }
        }
    }
}

/// The first wrong byte of a failing block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miscompare {
    /// LBA of the failing block, in logical blocks.
    pub lba: u64,
    /// Offset of the first differing byte within the block, in bytes.
    pub block_offset: usize,
    /// Offset of the first differing byte within the buffer verified, in
    /// bytes.
    pub buffer_offset: usize,
    /// What kind of wrong it is.
    pub kind: MiscompareKind,
    expected: [u8; WINDOW_LEN],
    found: [u8; WINDOW_LEN],
    window: u8,
}

impl Miscompare {
    pub(crate) fn new(
        lba: u64,
        block_offset: usize,
        buffer_offset: usize,
        kind: MiscompareKind,
        expected: &[u8],
        found: &[u8],
    ) -> Miscompare {
        let n = expected.len().min(found.len()).min(WINDOW_LEN);
        let mut e = [0u8; WINDOW_LEN];
        let mut f = [0u8; WINDOW_LEN];
        e[..n].copy_from_slice(&expected[..n]);
        f[..n].copy_from_slice(&found[..n]);
        Miscompare {
            lba,
            block_offset,
            buffer_offset,
            kind,
            expected: e,
            found: f,
            window: n as u8,
        }
    }

    /// The expected bytes from the first differing one: up to
    /// [`WINDOW_LEN`], fewer near the end of the block.
    pub fn expected(&self) -> &[u8] {
        &self.expected[..usize::from(self.window)]
    }

    /// The bytes found, same span as [`Miscompare::expected`].
    pub fn found(&self) -> &[u8] {
        &self.found[..usize::from(self.window)]
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for (n, b) in bytes.iter().enumerate() {
        if n > 0 {
            f.write_str(" ")?;
        }
        write!(f, "{b:02X}")?;
    }
    Ok(())
}

impl fmt::Display for Miscompare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at LBA {}, block offset {} (buffer offset {}): expected ",
            self.kind, self.lba, self.block_offset, self.buffer_offset
        )?;
        write_hex(f, self.expected())?;
        f.write_str(", found ")?;
        write_hex(f, self.found())
    }
}

impl std::error::Error for Miscompare {}

/// The outcome of verifying every block of a buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifySummary {
    /// Blocks verified.
    pub blocks_checked: u64,
    /// Blocks that failed, all of them counted.
    pub blocks_failed: u64,
    /// The first failing blocks, at most the limit the caller gave, in
    /// buffer order.
    pub miscompares: Vec<Miscompare>,
}

impl VerifySummary {
    /// Whether every block verified.
    pub fn is_ok(&self) -> bool {
        self.blocks_failed == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_shows_lba_offsets_kind_and_bytes() {
        let m = Miscompare::new(
            77,
            5,
            4101,
            MiscompareKind::Misdirected { belongs_to: 3 },
            &[0x55, 0xAA],
            &[0x54, 0xAA],
        );
        assert_eq!(
            m.to_string(),
            "misdirected (holds the block written for LBA 3) at LBA 77, block offset 5 \
             (buffer offset 4101): expected 55 AA, found 54 AA"
        );
    }

    #[test]
    fn window_is_capped_at_32_bytes() {
        let e = [1u8; 40];
        let f = [2u8; 40];
        let m = Miscompare::new(0, 0, 0, MiscompareKind::Data, &e, &f);
        assert_eq!(m.expected(), &[1u8; 32]);
        assert_eq!(m.found(), &[2u8; 32]);
    }

    #[test]
    fn miscompare_stays_small() {
        // Small enough to return by value in a Result without boxing.
        assert!(std::mem::size_of::<Miscompare>() <= 128);
    }
}
