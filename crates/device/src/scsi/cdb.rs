//! The CDB table: SCSI operation codes, each CDB's name, the ATA command
//! an ATA PASS-THROUGH CDB carries, and which CDBs change the medium (what
//! [`crate::scsi::sg::SgDevice`] refuses on a handle not claimed for writing).

/// Operation codes used by drivelab (SPC-5 / SBC-4).
pub mod opcode {
    /// TEST UNIT READY.
    pub const TEST_UNIT_READY: u8 = 0x00;
    /// REQUEST SENSE.
    pub const REQUEST_SENSE: u8 = 0x03;
    /// INQUIRY.
    pub const INQUIRY: u8 = 0x12;
    /// READ CAPACITY(10).
    pub const READ_CAPACITY_10: u8 = 0x25;
    /// READ(10).
    pub const READ_10: u8 = 0x28;
    /// WRITE(10).
    pub const WRITE_10: u8 = 0x2A;
    /// WRITE AND VERIFY(10).
    pub const WRITE_AND_VERIFY_10: u8 = 0x2E;
    /// VERIFY(10).
    pub const VERIFY_10: u8 = 0x2F;
    /// SYNCHRONIZE CACHE(10).
    pub const SYNCHRONIZE_CACHE_10: u8 = 0x35;
    /// WRITE SAME(10).
    pub const WRITE_SAME_10: u8 = 0x41;
    /// UNMAP.
    pub const UNMAP: u8 = 0x42;
    /// SANITIZE.
    pub const SANITIZE: u8 = 0x48;
    /// ATA PASS-THROUGH(16) (SAT).
    pub const ATA_PASS_THROUGH_16: u8 = 0x85;
    /// READ(16).
    pub const READ_16: u8 = 0x88;
    /// WRITE(16).
    pub const WRITE_16: u8 = 0x8A;
    /// WRITE AND VERIFY(16).
    pub const WRITE_AND_VERIFY_16: u8 = 0x8E;
    /// VERIFY(16).
    pub const VERIFY_16: u8 = 0x8F;
    /// SYNCHRONIZE CACHE(16).
    pub const SYNCHRONIZE_CACHE_16: u8 = 0x91;
    /// WRITE SAME(16).
    pub const WRITE_SAME_16: u8 = 0x93;
    /// WRITE STREAM(16).
    pub const WRITE_STREAM_16: u8 = 0x9A;
    /// SERVICE ACTION IN(16); READ CAPACITY(16) is service action 0x10.
    pub const SERVICE_ACTION_IN_16: u8 = 0x9E;
    /// ATA PASS-THROUGH(12) (SAT).
    pub const ATA_PASS_THROUGH_12: u8 = 0xA1;
    /// MAINTENANCE IN; REPORT SUPPORTED OPERATION CODES is service action 0x0C.
    pub const MAINTENANCE_IN: u8 = 0xA3;
}

/// A readable name for a CDB's command, for messages ("WRITE SAME(16)").
pub fn command_name(cdb: &[u8]) -> String {
    let Some(&op) = cdb.first() else {
        return "empty CDB".to_string();
    };
    let name = match op {
        opcode::TEST_UNIT_READY => "TEST UNIT READY",
        opcode::REQUEST_SENSE => "REQUEST SENSE",
        opcode::INQUIRY => "INQUIRY",
        opcode::READ_CAPACITY_10 => "READ CAPACITY(10)",
        opcode::READ_10 => "READ(10)",
        opcode::WRITE_10 => "WRITE(10)",
        opcode::WRITE_AND_VERIFY_10 => "WRITE AND VERIFY(10)",
        opcode::VERIFY_10 => "VERIFY(10)",
        opcode::SYNCHRONIZE_CACHE_10 => "SYNCHRONIZE CACHE(10)",
        opcode::WRITE_SAME_10 => "WRITE SAME(10)",
        opcode::UNMAP => "UNMAP",
        opcode::SANITIZE => "SANITIZE",
        opcode::ATA_PASS_THROUGH_16 => "ATA PASS-THROUGH(16)",
        opcode::READ_16 => "READ(16)",
        opcode::WRITE_16 => "WRITE(16)",
        opcode::WRITE_AND_VERIFY_16 => "WRITE AND VERIFY(16)",
        opcode::VERIFY_16 => "VERIFY(16)",
        opcode::SYNCHRONIZE_CACHE_16 => "SYNCHRONIZE CACHE(16)",
        opcode::WRITE_SAME_16 => "WRITE SAME(16)",
        opcode::WRITE_STREAM_16 => "WRITE STREAM(16)",
        opcode::SERVICE_ACTION_IN_16 if cdb.get(1).map(|b| b & 0x1F) == Some(0x10) => {
            "READ CAPACITY(16)"
        }
        opcode::ATA_PASS_THROUGH_12 => "ATA PASS-THROUGH(12)",
        opcode::MAINTENANCE_IN if cdb.get(1).map(|b| b & 0x1F) == Some(0x0C) => {
            "REPORT SUPPORTED OPERATION CODES"
        }
        _ => return format!("SCSI opcode 0x{op:02X}"),
    };
    name.to_string()
}

/// The ATA command and FEATURE 7:0 an ATA PASS-THROUGH(16) (85h: COMMAND
/// in byte 14, FEATURES 7:0 in byte 4) or (12) (A1h: byte 9, byte 3) CDB
/// carries (SAT-5); `None` for another CDB or one too short to hold them.
pub fn ata_in_pass_through(cdb: &[u8]) -> Option<(u8, u8)> {
    match *cdb.first()? {
        opcode::ATA_PASS_THROUGH_16 if cdb.len() >= 16 => Some((cdb[14], cdb[4])),
        opcode::ATA_PASS_THROUGH_12 if cdb.len() >= 12 => Some((cdb[9], cdb[3])),
        _ => None,
    }
}

/// Whether the SCSI command `cdb` changes the medium or the device's
/// lasting state (SBC-4 / SPC-5 / ZBC opcode tables): every WRITE, WRITE
/// AND VERIFY, WRITE SAME, WRITE ATOMIC, WRITE STREAM, WRITE LONG and
/// COMPARE AND WRITE; UNMAP, SANITIZE, FORMAT UNIT, FORMAT WITH PRESET,
/// REASSIGN BLOCKS, ZBC OUT; WRITE BUFFER (microcode download); SECURITY
/// PROTOCOL OUT (TCG locking and crypto erase); and an ATA PASS-THROUGH
/// whose ATA command does ([`crate::ata::commands::modifies_medium`]).
/// [`crate::scsi::sg::SgDevice::execute`] refuses these on a handle that is not
/// claimed for writing.
///
/// A CDB too short to show its ATA command or service action counts as
/// changing the medium: the check must not be dodged by a malformed CDB.
pub fn modifies_medium(cdb: &[u8]) -> bool {
    let Some(&op) = cdb.first() else {
        return false;
    };
    match op {
        // FORMAT UNIT, REASSIGN BLOCKS, WRITE(6).
        0x04 | 0x07 | 0x0A => true,
        // SEND DIAGNOSTIC: starts or aborts a self-test (the drive's state).
        0x1D => true,
        // WRITE(10), WRITE AND VERIFY(10).
        0x2A | 0x2E => true,
        // FORMAT WITH PRESET, WRITE BUFFER, WRITE LONG(10).
        0x38 | 0x3B | 0x3F => true,
        // WRITE SAME(10), UNMAP, SANITIZE.
        0x41 | 0x42 | 0x48 => true,
        // XDWRITEREAD(10) (obsolete).
        0x53 => true,
        // Variable length: all but READ(32) (0009h) and VERIFY(32) (000Ah)
        // write (WRITE(32), WRITE AND VERIFY(32), WRITE SAME(32), ORWRITE(32),
        // WRITE ATOMIC(32), WRITE STREAM(32), WRITE SCATTERED(32), ...).
        0x7F => !matches!(cdb.get(8..10), Some([0x00, 0x09]) | Some([0x00, 0x0A])),
        // ATA PASS-THROUGH(16) / (12): the ATA command decides.
        opcode::ATA_PASS_THROUGH_16 | opcode::ATA_PASS_THROUGH_12 => match ata_in_pass_through(cdb)
        {
            Some((command, feature)) => crate::ata::commands::modifies_medium(command, feature),
            None => true,
        },
        // COMPARE AND WRITE, WRITE(16), ORWRITE(16), WRITE AND VERIFY(16).
        0x89 | 0x8A | 0x8B | 0x8E => true,
        // WRITE SAME(16), ZBC OUT, WRITE STREAM(16), WRITE ATOMIC(16).
        0x93 | 0x94 | 0x9A | 0x9C => true,
        // SERVICE ACTION OUT(16): WRITE LONG(16), WRITE SCATTERED(16).
        0x9F => true,
        // WRITE(12), WRITE AND VERIFY(12), SECURITY PROTOCOL OUT.
        0xAA | 0xAE | 0xB5 => true,
        _ => false,
    }
}

/// `cdb`'s command for a refusal message: its name and opcode, and for an
/// ATA PASS-THROUGH the ATA command and feature it carries
/// ("ATA PASS-THROUGH(16) (opcode 85h) carrying ATA command B0h feature D6h").
pub fn command_with_opcode(cdb: &[u8]) -> String {
    let Some(&op) = cdb.first() else {
        return command_name(cdb);
    };
    let mut s = format!("{} (opcode {op:02X}h)", command_name(cdb));
    if let Some((command, feature)) = ata_in_pass_through(cdb) {
        s.push_str(&format!(
            " carrying ATA command {command:02X}h feature {feature:02X}h"
        ));
    }
    s
}
