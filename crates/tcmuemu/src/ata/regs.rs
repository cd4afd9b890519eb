//! The ATA registers a command is given and an outcome returns (ACS-3
//! 6.1), and the STATUS and ERROR bits the emulator sets.

/// The ATA registers of a command or of its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Regs {
    /// FEATURE (command) or ERROR (outcome).
    pub feature: u16,
    /// COUNT.
    pub count: u16,
    /// LBA, 48 bits.
    pub lba: u64,
    /// DEVICE.
    pub device: u8,
    /// COMMAND (command) or STATUS (outcome).
    pub command: u8,
}

impl From<drivelab_device::ata::Taskfile> for Regs {
    /// The registers of a taskfile drivelab builds (what its ATA
    /// PASS-THROUGH carries).
    fn from(t: drivelab_device::ata::Taskfile) -> Regs {
        Regs {
            feature: t.feature,
            count: t.count,
            lba: t.lba,
            device: t.device,
            command: t.command,
        }
    }
}

/// ATA STATUS: DRDY.
pub const STATUS_DRDY: u8 = 0x40;
/// ATA STATUS: ERR.
pub const STATUS_ERR: u8 = 0x01;
/// ATA ERROR: ABRT.
pub const ERROR_ABRT: u8 = 0x04;
/// ATA ERROR: IDNF (the address is beyond the max).
pub const ERROR_IDNF: u8 = 0x10;
/// ATA ERROR: UNC (data not recovered).
pub const ERROR_UNC: u8 = 0x40;
