//! Newtypes for the quantities a storage tool mixes up most easily.
//!
//! A logical block address, a count of blocks, a count of bytes and a sector
//! size are all integers; keeping them apart in the type system means a
//! sector count can never be passed where bytes are expected.

use serde::{Deserialize, Serialize};

/// A logical block address, in units of the device's logical block size.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Lba(pub u64);

/// A number of logical blocks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct BlockCount(pub u64);

/// A number of bytes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Bytes(pub u64);

/// A logical or physical sector size in bytes (512, 4096, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SectorSize(pub u32);

impl SectorSize {
    /// The classic 512-byte sector.
    pub const S512: SectorSize = SectorSize(512);

    /// Bytes covered by `n` blocks of this size.
    pub fn bytes(self, n: BlockCount) -> Bytes {
        Bytes(n.0 * u64::from(self.0))
    }

    /// The block that holds byte offset `b` (rounded down).
    pub fn lba_of(self, b: Bytes) -> Lba {
        Lba(b.0 / u64::from(self.0))
    }

    /// Byte offset of the start of block `lba`.
    pub fn offset_of(self, lba: Lba) -> Bytes {
        Bytes(lba.0 * u64::from(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sector_conversions_round_trip() {
        let s = SectorSize(4096);
        assert_eq!(s.bytes(BlockCount(3)), Bytes(12288));
        assert_eq!(s.lba_of(Bytes(12289)), Lba(3));
        assert_eq!(s.offset_of(Lba(3)), Bytes(12288));
    }
}
