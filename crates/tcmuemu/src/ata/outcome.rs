//! What an ATA command returns: its registers, ERROR, PIO data-in and a
//! change of the medium for the caller to carry out; and the command codes.

use super::regs::{Regs, ERROR_ABRT, STATUS_DRDY, STATUS_ERR};

/// ATA command codes (ACS-3 table "Command codes").
pub mod command {
    /// DATA SET MANAGEMENT (7.5).
    pub const DATA_SET_MANAGEMENT: u8 = 0x06;
    /// READ LOG EXT (7.24).
    pub const READ_LOG_EXT: u8 = 0x2F;
    /// WRITE LOG EXT (7.60).
    pub const WRITE_LOG_EXT: u8 = 0x3F;
    /// READ LOG DMA EXT (7.25).
    pub const READ_LOG_DMA_EXT: u8 = 0x47;
    /// WRITE LOG DMA EXT (7.61).
    pub const WRITE_LOG_DMA_EXT: u8 = 0x57;
    /// READ NATIVE MAX ADDRESS EXT (7.26, HPA feature set).
    pub const READ_NATIVE_MAX_EXT: u8 = 0x27;
    /// SET MAX ADDRESS EXT (7.51).
    pub const SET_MAX_ADDRESS_EXT: u8 = 0x37;
    /// SMART (7.48).
    pub const SMART: u8 = 0xB0;
    /// SANITIZE DEVICE (7.36).
    pub const SANITIZE_DEVICE: u8 = 0xB4;
    /// DEVICE CONFIGURATION (ACS-2 7.10).
    pub const DEVICE_CONFIGURATION: u8 = 0xB1;
    /// FLUSH CACHE (7.10).
    pub const FLUSH_CACHE: u8 = 0xE7;
    /// FLUSH CACHE EXT (7.11).
    pub const FLUSH_CACHE_EXT: u8 = 0xEA;
    /// IDENTIFY DEVICE (7.12).
    pub const IDENTIFY_DEVICE: u8 = 0xEC;
    /// CHECK POWER MODE (7.3).
    pub const CHECK_POWER_MODE: u8 = 0xE5;
    /// SECURITY SET PASSWORD (7.45).
    pub const SECURITY_SET_PASSWORD: u8 = 0xF1;
    /// SECURITY UNLOCK (7.46).
    pub const SECURITY_UNLOCK: u8 = 0xF2;
    /// SECURITY ERASE PREPARE (7.42).
    pub const SECURITY_ERASE_PREPARE: u8 = 0xF3;
    /// SECURITY ERASE UNIT (7.43).
    pub const SECURITY_ERASE_UNIT: u8 = 0xF4;
    /// SECURITY FREEZE LOCK (7.44).
    pub const SECURITY_FREEZE_LOCK: u8 = 0xF5;
    /// SECURITY DISABLE PASSWORD (7.41).
    pub const SECURITY_DISABLE_PASSWORD: u8 = 0xF6;
}

/// What the drive does to its medium as a result of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediumAction {
    /// Fill every native block with this byte.
    Fill(u8),
    /// Fill every native block with this 32-bit pattern, little-endian.
    Pattern(u32),
    /// Fill every native block with the keystream of this key (what a
    /// cryptographic erase leaves: neither the old data nor zeroes).
    Noise(u32),
    /// The action over the first half of the native blocks only (an
    /// operation that failed half way).
    Half(Box<MediumAction>),
    /// Fill `blocks` blocks from `lba` with `with` (a `Fill`, a
    /// `Pattern` or a `Block`): what SCT Write Same writes.
    Blocks {
        /// First block.
        lba: u64,
        /// Blocks.
        blocks: u64,
        /// What they are filled with.
        with: Box<MediumAction>,
    },
    /// This block's bytes, repeated (inside `Blocks` only).
    Block(Vec<u8>),
    /// Deallocate these ranges (first block, blocks): TRIM. A trimmed
    /// block reads as zeroes (IDENTIFY word 69: deterministic, RZAT).
    Trim(Vec<(u64, u64)>),
}

/// An ATA command's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The registers returned (`command` is STATUS).
    pub regs: Regs,
    /// ERROR (nonzero: the command failed).
    pub error: u8,
    /// PIO data-in.
    pub data_in: Vec<u8>,
    /// A change of the medium the caller carries out.
    pub medium: Option<MediumAction>,
}

impl Outcome {
    /// Success with no data and the registers `regs` (STATUS DRDY).
    pub fn ok(mut regs: Regs) -> Outcome {
        regs.command = STATUS_DRDY;
        regs.feature = 0;
        Outcome {
            regs,
            error: 0,
            data_in: Vec::new(),
            medium: None,
        }
    }

    /// Success with data in.
    pub fn data(data: Vec<u8>) -> Outcome {
        Outcome {
            data_in: data,
            ..Outcome::ok(Regs::default())
        }
    }

    /// Command aborted (STATUS ERR, ERROR ABRT).
    pub fn abort() -> Outcome {
        Outcome {
            regs: Regs {
                command: STATUS_DRDY | STATUS_ERR,
                ..Regs::default()
            },
            error: ERROR_ABRT,
            data_in: Vec::new(),
            medium: None,
        }
    }

    /// Whether the command failed.
    pub fn failed(&self) -> bool {
        self.error != 0
    }
}
