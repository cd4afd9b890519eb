//! The ATA command table: the opcodes drivelab sends, and which commands
//! change the medium or the drive's lasting state.

/// ATA command codes used here (ACS-4).
pub mod command {
    /// IDENTIFY DEVICE.
    pub const IDENTIFY_DEVICE: u8 = 0xEC;
    /// SMART (feature selects READ LOG D5h / WRITE LOG D6h).
    pub const SMART: u8 = 0xB0;
    /// SANITIZE DEVICE.
    pub const SANITIZE_DEVICE: u8 = 0xB4;
    /// READ LOG EXT.
    pub const READ_LOG_EXT: u8 = 0x2F;
    /// WRITE LOG EXT.
    pub const WRITE_LOG_EXT: u8 = 0x3F;
    /// DATA SET MANAGEMENT (TRIM).
    pub const DATA_SET_MANAGEMENT: u8 = 0x06;
    /// SECURITY SET PASSWORD.
    pub const SECURITY_SET_PASSWORD: u8 = 0xF1;
    /// SECURITY UNLOCK.
    pub const SECURITY_UNLOCK: u8 = 0xF2;
    /// SECURITY ERASE PREPARE.
    pub const SECURITY_ERASE_PREPARE: u8 = 0xF3;
    /// SECURITY ERASE UNIT.
    pub const SECURITY_ERASE_UNIT: u8 = 0xF4;
    /// SECURITY FREEZE LOCK.
    pub const SECURITY_FREEZE_LOCK: u8 = 0xF5;
    /// SECURITY DISABLE PASSWORD.
    pub const SECURITY_DISABLE_PASSWORD: u8 = 0xF6;
}

/// Whether the ATA command `command` with FEATURE bits 7:0 `feature`
/// changes the medium or the drive's lasting state (ACS-4 command tables):
/// data writes, TRIM, SANITIZE, the security erase and password commands,
/// capacity changes (SET MAX, DCO SET/RESTORE), microcode download, log
/// writes (SCT commands, including SCT Write Same, go through them) and
/// SMART EXECUTE OFF-LINE IMMEDIATE (a self-test). [`crate::scsi::sg::SgDevice`]
/// refuses these on a handle that is not claimed for writing.
///
/// Reads, IDENTIFY, SMART READ LOG / READ DATA / RETURN STATUS, SANITIZE
/// STATUS EXT (feature 0000h), READ NATIVE MAX ADDRESS (EXT), GET NATIVE MAX
/// ADDRESS EXT (78h/0000h) and DEVICE CONFIGURATION IDENTIFY (B1h/C2h) do not.
pub fn modifies_medium(command: u8, feature: u8) -> bool {
    match command {
        // DATA SET MANAGEMENT (TRIM), DATA SET MANAGEMENT XL.
        0x06 | 0x07 => true,
        // WRITE SECTOR(S), WRITE SECTOR(S) without retry (obsolete).
        0x30 | 0x31 => true,
        // WRITE SECTOR(S) EXT, WRITE DMA EXT, WRITE DMA QUEUED EXT (obsolete).
        0x34..=0x36 => true,
        // SET MAX ADDRESS EXT.
        0x37 => true,
        // CFA WRITE SECTORS WITHOUT ERASE, WRITE MULTIPLE EXT, WRITE STREAM
        // DMA EXT, WRITE STREAM EXT, WRITE VERIFY (obsolete), WRITE DMA FUA
        // EXT, WRITE DMA QUEUED FUA EXT (obsolete), WRITE LOG EXT.
        0x38..=0x3F => true,
        // WRITE UNCORRECTABLE EXT.
        0x45 => true,
        // WRITE LOG DMA EXT.
        0x57 => true,
        // TRUSTED SEND, TRUSTED SEND DMA (TCG: locking ranges, crypto erase).
        0x5E | 0x5F => true,
        // WRITE FPDMA QUEUED.
        0x61 => true,
        // NCQ NON-DATA (ZERO EXT, ZAC MANAGEMENT OUT subcommands), SEND
        // FPDMA QUEUED (DATA SET MANAGEMENT subcommand).
        0x63 | 0x64 => true,
        // DOWNLOAD MICROCODE, DOWNLOAD MICROCODE DMA.
        0x92 | 0x93 => true,
        // ZAC MANAGEMENT OUT (RESET WRITE POINTER and friends).
        0x9F => true,
        // SMART: EXECUTE OFF-LINE IMMEDIATE (D4h), WRITE LOG (D6h).
        command::SMART => matches!(feature, 0xD4 | 0xD6),
        // ACCESSIBLE MAX ADDRESS CONFIGURATION: all but GET NATIVE MAX
        // ADDRESS EXT (0000h): SET ACCESSIBLE MAX ADDRESS EXT (0001h) changes
        // the capacity, FREEZE ACCESSIBLE MAX ADDRESS EXT (0002h) the state.
        0x78 => feature != 0x00,
        // DEVICE CONFIGURATION OVERLAY: RESTORE (C0h), FREEZE LOCK (C1h),
        // SET (C3h), SET DMA (C5h).
        0xB1 => matches!(feature, 0xC0 | 0xC1 | 0xC3 | 0xC5),
        // SANITIZE DEVICE: everything but SANITIZE STATUS EXT (0000h).
        command::SANITIZE_DEVICE => feature != 0x00,
        // CFA ERASE SECTORS.
        0xC0 => true,
        // WRITE MULTIPLE, WRITE DMA, WRITE DMA without retry (obsolete),
        // WRITE DMA QUEUED (obsolete), CFA WRITE MULTIPLE WITHOUT ERASE,
        // WRITE MULTIPLE FUA EXT.
        0xC5 | 0xCA..=0xCE => true,
        // The Security feature set (ACS-3): SET PASSWORD, UNLOCK, ERASE
        // PREPARE, ERASE UNIT, FREEZE LOCK, DISABLE PASSWORD; each changes
        // the drive's security state or (ERASE UNIT) its every block.
        0xF1..=0xF6 => true,
        // SET MAX ADDRESS (and its SET PASSWORD / LOCK / UNLOCK / FREEZE LOCK).
        0xF9 => true,
        _ => false,
    }
}
