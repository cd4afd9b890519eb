//! The header of the `stamped` pattern: its byte layout, written and read in
//! one place.
//!
//! A plain pattern can only say "these bytes differ". A stamped block says
//! whose it is: when verification finds the wrong data it can tell a
//! corrupted block (checksum bad, or no magic at all) from a misdirected
//! write (a valid block of another LBA landed here) and from a lost or stale
//! write (a valid block of this LBA, but from an older pass or another run).
//!
//! Layout of a stamped block of `B` bytes (all integers little-endian):
//!
//! | offset | bytes | field |
//! |-------:|------:|-------|
//! | 0      | 8     | magic, ASCII `DLSTAMP1` |
//! | 8      | 8     | LBA of the block (in logical blocks) |
//! | 16     | 8     | run id |
//! | 24     | 8     | sequence number (pass / write generation) |
//! | 32     | 4     | CRC-32C (Castagnoli) of bytes 0..32 followed by 36..B |
//! | 36     | 4     | reserved, zero |
//! | 40     | B−40  | payload: the random stream keyed by (seed, LBA, sequence) |

/// The magic at offset 0 of every stamped block: ASCII `DLSTAMP1`.
pub const MAGIC: [u8; 8] = *b"DLSTAMP1";
/// Length of the header in bytes; also the smallest stamped block size.
pub const HEADER_LEN: usize = 40;

const LBA_AT: usize = 8;
const RUN_AT: usize = 16;
const SEQ_AT: usize = 24;
const CRC_AT: usize = 32;
const RESERVED_AT: usize = 36;

/// The identity a stamped block carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// LBA the block was written for, in logical blocks.
    pub lba: u64,
    /// Run id of the run that wrote it.
    pub run_id: u64,
    /// Sequence number (pass / write generation) it was written in.
    pub sequence: u64,
}

/// What reading the header of a block found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampRead {
    /// The magic is missing (the block was never stamped, or its start is
    /// overwritten).
    NoMagic,
    /// The magic is there but the CRC does not match the block's bytes.
    BadChecksum {
        /// The CRC stored in the block.
        stored: u32,
        /// The CRC of the block as found.
        computed: u32,
    },
    /// A valid stamp.
    Valid(Stamp),
}

impl Stamp {
    /// A stamp for block `lba`, written by run `run_id` in pass `sequence`.
    pub fn new(lba: u64, run_id: u64, sequence: u64) -> Stamp {
        Stamp {
            lba,
            run_id,
            sequence,
        }
    }

    /// Write the header fields (all but the CRC) into `block[..HEADER_LEN]`,
    /// the CRC left zero.
    ///
    /// # Panics
    /// If `block` is shorter than [`HEADER_LEN`] (the generator refuses such
    /// block sizes when it is built).
    #[inline]
    pub(crate) fn write_fields(&self, block: &mut [u8]) {
        let h = &mut block[..HEADER_LEN];
        h[..LBA_AT].copy_from_slice(&MAGIC);
        h[LBA_AT..RUN_AT].copy_from_slice(&self.lba.to_le_bytes());
        h[RUN_AT..SEQ_AT].copy_from_slice(&self.run_id.to_le_bytes());
        h[SEQ_AT..CRC_AT].copy_from_slice(&self.sequence.to_le_bytes());
        h[CRC_AT..HEADER_LEN].fill(0);
    }

    /// Stamp `block`, whose payload (`block[HEADER_LEN..]`) is already in
    /// place: writes the header and the CRC over header and payload.
    ///
    /// # Panics
    /// If `block` is shorter than [`HEADER_LEN`].
    pub fn write(&self, block: &mut [u8]) {
        self.write_fields(block);
        let crc = block_crc(block);
        block[CRC_AT..RESERVED_AT].copy_from_slice(&crc.to_le_bytes());
    }

    /// Read and check the header of `block`.
    ///
    /// # Panics
    /// If `block` is shorter than [`HEADER_LEN`].
    pub fn read(block: &[u8]) -> StampRead {
        if block[..LBA_AT] != MAGIC {
            return StampRead::NoMagic;
        }
        let stored = stored_crc(block);
        let computed = block_crc(block);
        if stored != computed {
            return StampRead::BadChecksum { stored, computed };
        }
        let field = |at: usize| crate::rng::le64(&block[at..at + 8]);
        StampRead::Valid(Stamp {
            lba: field(LBA_AT),
            run_id: field(RUN_AT),
            sequence: field(SEQ_AT),
        })
    }
}

/// The CRC stored at offset 32 of `block`.
#[inline]
pub(crate) fn stored_crc(block: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&block[CRC_AT..RESERVED_AT]);
    u32::from_le_bytes(a)
}

/// CRC-32C of `block[0..32]` followed by `block[36..]`: everything but the
/// CRC field itself.
#[inline]
pub(crate) fn block_crc(block: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&block[..CRC_AT]);
    crc32c::crc32c_append(crc, &block[RESERVED_AT..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bitwise CRC-32C (reflected polynomial 0x82F63B78, init and final
    /// xor 0xFFFFFFFF): the definition, as a second route to the CRC.
    fn crc32c_bitwise(parts: &[&[u8]]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for part in parts {
            for &b in *part {
                crc ^= u32::from(b);
                for _ in 0..8 {
                    crc = if crc & 1 != 0 {
                        (crc >> 1) ^ 0x82F6_3B78
                    } else {
                        crc >> 1
                    };
                }
            }
        }
        !crc
    }

    #[test]
    fn crc32c_check_value() {
        // The standard check value of CRC-32C over "123456789".
        assert_eq!(crc32c_bitwise(&[b"123456789"]), 0xE306_9283);
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn header_bytes_match_the_layout_table() {
        let mut block = [0xEEu8; 64];
        Stamp::new(
            0x0102_0304_0506_0708,
            0x1112_1314_1516_1718,
            0x2122_2324_2526_2728,
        )
        .write(&mut block);
        let expected_fields: [u8; 32] = [
            b'D', b'L', b'S', b'T', b'A', b'M', b'P', b'1', // magic
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // LBA, LE
            0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, // run id, LE
            0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21, // sequence, LE
        ];
        assert_eq!(&block[..32], &expected_fields);
        assert_eq!(&block[36..40], &[0, 0, 0, 0], "reserved");
        assert_eq!(&block[40..], &[0xEE; 24], "payload untouched");
        let crc = crc32c_bitwise(&[&block[..32], &block[36..]]);
        assert_eq!(&block[32..36], &crc.to_le_bytes());
    }

    #[test]
    fn read_tells_no_magic_bad_crc_and_valid_apart() {
        let mut block = [0x5Au8; 128];
        let stamp = Stamp::new(9, 1, 2);
        stamp.write(&mut block);
        assert_eq!(Stamp::read(&block), StampRead::Valid(stamp));
        let mut bad = block;
        bad[100] ^= 0x10;
        assert!(matches!(Stamp::read(&bad), StampRead::BadChecksum { .. }));
        let mut bad = block;
        bad[36] = 1; // reserved bytes are covered too
        assert!(matches!(Stamp::read(&bad), StampRead::BadChecksum { .. }));
        assert_eq!(Stamp::read(&[0u8; 64]), StampRead::NoMagic);
    }
}
