//! Sense data: sense keys, ASC/ASCQ names, fixed and descriptor formats,
//! and the ATA Status Return descriptor of SAT.

use serde::Serialize;

use crate::scsi::bytes::{get_u64, hex};

// ---------------------------------------------------------------------------

/// A sense key (SPC-5 4.4.8 table), with its name.
pub fn sense_key_name(key: u8) -> &'static str {
    match key & 0x0F {
        0x0 => "NO SENSE",
        0x1 => "RECOVERED ERROR",
        0x2 => "NOT READY",
        0x3 => "MEDIUM ERROR",
        0x4 => "HARDWARE ERROR",
        0x5 => "ILLEGAL REQUEST",
        0x6 => "UNIT ATTENTION",
        0x7 => "DATA PROTECT",
        0x8 => "BLANK CHECK",
        0x9 => "VENDOR SPECIFIC",
        0xA => "COPY ABORTED",
        0xB => "ABORTED COMMAND",
        0xC => "RESERVED",
        0xD => "VOLUME OVERFLOW",
        0xE => "MISCOMPARE",
        _ => "COMPLETED",
    }
}

/// Sense key values drivelab tests for.
pub mod sense_key {
    /// NO SENSE.
    pub const NO_SENSE: u8 = 0x0;
    /// RECOVERED ERROR.
    pub const RECOVERED_ERROR: u8 = 0x1;
    /// NOT READY.
    pub const NOT_READY: u8 = 0x2;
    /// MEDIUM ERROR.
    pub const MEDIUM_ERROR: u8 = 0x3;
    /// HARDWARE ERROR.
    pub const HARDWARE_ERROR: u8 = 0x4;
    /// ILLEGAL REQUEST.
    pub const ILLEGAL_REQUEST: u8 = 0x5;
    /// UNIT ATTENTION.
    pub const UNIT_ATTENTION: u8 = 0x6;
    /// DATA PROTECT.
    pub const DATA_PROTECT: u8 = 0x7;
    /// ABORTED COMMAND.
    pub const ABORTED_COMMAND: u8 = 0xB;
}

/// Additional sense code and qualifier in words (the common ones from the
/// SPC-5 ASC/ASCQ table). Unknown pairs give `None`.
pub fn asc_ascq_name(asc: u8, ascq: u8) -> Option<String> {
    let s = match (asc, ascq) {
        (0x00, 0x00) => "no additional sense information",
        (0x00, 0x16) => "operation in progress",
        (0x00, 0x1D) => "ATA pass through information available",
        (0x04, 0x00) => "logical unit not ready, cause not reportable",
        (0x04, 0x01) => "logical unit is in process of becoming ready",
        (0x04, 0x02) => "logical unit not ready, initializing command required",
        (0x04, 0x03) => "logical unit not ready, manual intervention required",
        (0x04, 0x04) => "logical unit not ready, format in progress",
        (0x04, 0x07) => "logical unit not ready, operation in progress",
        (0x04, 0x09) => "logical unit not ready, self-test in progress",
        (0x04, 0x1B) => "logical unit not ready, sanitize in progress",
        (0x04, q) => return Some(format!("logical unit not ready (ascq 0x{q:02X})")),
        // What target_core_user answers for a command its backstore's
        // command timer ended (the user-space drive never answered).
        (0x08, 0x00) => "logical unit communication failure",
        (0x0C, 0x00) => "write error",
        (0x0C, 0x02) => "write error, auto reallocation failed",
        (0x0C, q) => return Some(format!("write error (ascq 0x{q:02X})")),
        (0x10, 0x00) => "ID CRC or ECC error",
        (0x11, 0x00) => "unrecovered read error",
        (0x11, 0x04) => "unrecovered read error, auto reallocate failed",
        (0x11, q) => return Some(format!("unrecovered read error (ascq 0x{q:02X})")),
        (0x14, 0x01) => "record not found",
        (0x1A, 0x00) => "parameter list length error",
        (0x1D, 0x00) => "miscompare during verify operation",
        (0x20, 0x00) => "invalid command operation code",
        (0x21, 0x00) => "logical block address out of range",
        (0x24, 0x00) => "invalid field in CDB",
        (0x25, 0x00) => "logical unit not supported",
        (0x26, 0x00) => "invalid field in parameter list",
        (0x27, 0x00) => "write protected",
        (0x27, 0x07) => "space allocation failed write protect",
        (0x27, _) => "write protected",
        (0x28, 0x00) => "not ready to ready change, medium may have changed",
        (0x29, 0x00) => "power on, reset, or bus device reset occurred",
        (0x29, _) => "power on or reset occurred",
        (0x2A, 0x01) => "mode parameters changed",
        (0x2A, 0x09) => "capacity data has changed",
        (0x31, 0x00) => "medium format corrupted",
        (0x31, 0x03) => "sanitize command failed",
        (0x3A, 0x00) => "medium not present",
        (0x3A, _) => "medium not present",
        (0x3F, 0x0E) => "reported LUNs data has changed",
        (0x44, 0x00) => "internal target failure",
        (0x47, _) => "SCSI parity error",
        (0x4B, _) => "data phase error",
        (0x5D, _) => "failure prediction threshold exceeded",
        _ => return None,
    };
    Some(s.to_string())
}

/// The ATA Status Return sense data descriptor (type 0x09, SAT-5 12.2.2.7),
/// or the same registers taken from fixed-format sense (ASC/ASCQ 00/1D).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AtaStatusReturn {
    /// EXTEND: the 48-bit (upper) halves are valid.
    pub extend: bool,
    /// ERROR register.
    pub error: u8,
    /// COUNT (15:0). From fixed-format sense only bits 7:0 are known.
    pub count: u16,
    /// LBA (47:0). From fixed-format sense only bits 23:0 are known.
    pub lba: u64,
    /// DEVICE register.
    pub device: u8,
    /// STATUS register (bit 0 ERR, bit 3 DRQ, bit 5 DF, bit 6 DRDY, bit 7 BSY).
    pub status: u8,
    /// Whether the registers came from fixed-format sense (upper bytes lost).
    pub from_fixed_format: bool,
}

impl AtaStatusReturn {
    /// The registers a SATL puts in fixed-format sense (SAT-5 12.2.2.6):
    /// INFORMATION bytes 3-6 hold ERROR, STATUS, DEVICE, COUNT(7:0);
    /// COMMAND-SPECIFIC INFORMATION byte 8 bit 7 EXTEND, bytes 9-11 LBA
    /// 7:0, 15:8, 23:16. Use only for the answer to an ATA PASS-THROUGH
    /// command: libata fills these even when ASC/ASCQ is not 00/1D (an
    /// aborted command comes back as ABORTED COMMAND 00/00).
    ///
    /// Older Linux libata (seen on 6.1) writes the same registers five bytes
    /// late: ERROR, STATUS, DEVICE, COUNT at bytes 8-11, EXTEND at byte 16
    /// and LBA 7:0, 15:8, 23:16 at bytes 17-19 (past the 18 bytes it
    /// reports, so usually only LBA 7:0 survives). When STATUS is zero where
    /// the standard puts it (a real ATA status always has a bit set) and
    /// byte 9 is not, that layout is used.
    pub fn from_fixed_sense(s: &[u8]) -> Option<AtaStatusReturn> {
        let rc = *s.first()? & 0x7F;
        if (rc != 0x70 && rc != 0x71) || s.len() < 12 {
            return None;
        }
        let at = |i: usize| s.get(i).copied().unwrap_or(0);
        let legacy = at(4) == 0 && at(9) != 0;
        let (e, st, dv, ct, ext, l0, l1, l2) = if legacy {
            (8, 9, 10, 11, 16, 17, 18, 19)
        } else {
            (3, 4, 5, 6, 8, 9, 10, 11)
        };
        Some(AtaStatusReturn {
            extend: at(ext) & 0x80 != 0,
            error: at(e),
            status: at(st),
            device: at(dv),
            count: u16::from(at(ct)),
            lba: u64::from(at(l0)) | (u64::from(at(l1)) << 8) | (u64::from(at(l2)) << 16),
            from_fixed_format: true,
        })
    }

    /// Decode a type 0x09 descriptor (14 bytes: code, additional length 0x0C, …).
    pub fn parse_descriptor(d: &[u8]) -> Option<AtaStatusReturn> {
        if d.len() < 14 || d[0] != 0x09 {
            return None;
        }
        let lba = u64::from(d[7])
            | (u64::from(d[9]) << 8)
            | (u64::from(d[11]) << 16)
            | (u64::from(d[6]) << 24)
            | (u64::from(d[8]) << 32)
            | (u64::from(d[10]) << 40);
        Some(AtaStatusReturn {
            extend: d[2] & 0x01 != 0,
            error: d[3],
            count: u16::from_be_bytes([d[4], d[5]]),
            lba,
            device: d[12],
            status: d[13],
            from_fixed_format: false,
        })
    }
}

/// Decoded sense data, fixed (0x70/0x71) or descriptor (0x72/0x73) format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sense {
    /// RESPONSE CODE (byte 0 bits 6:0).
    pub response_code: u8,
    /// Descriptor format (0x72/0x73) rather than fixed.
    pub descriptor_format: bool,
    /// Deferred error (0x71/0x73): it belongs to an earlier command.
    pub deferred: bool,
    /// SENSE KEY.
    pub key: u8,
    /// The sense key in words ("MEDIUM ERROR").
    pub key_name: String,
    /// ADDITIONAL SENSE CODE.
    pub asc: u8,
    /// ADDITIONAL SENSE CODE QUALIFIER.
    pub ascq: u8,
    /// ASC/ASCQ in words, when known.
    pub asc_name: Option<String>,
    /// INFORMATION (fixed: bytes 3-6 when VALID; descriptor: type 0x00 when
    /// VALID). For a medium error this is the failing LBA.
    pub information: Option<u64>,
    /// COMMAND-SPECIFIC INFORMATION (fixed bytes 8-11; descriptor type 0x01).
    pub command_specific: Option<u64>,
    /// SENSE KEY SPECIFIC bytes when SKSV is set (fixed bytes 15-17;
    /// descriptor type 0x02).
    pub sense_key_specific: Option<[u8; 3]>,
    /// ATA registers returned by a SATL (descriptor 0x09, or fixed format
    /// with ASC/ASCQ 00/1D).
    pub ata: Option<AtaStatusReturn>,
    /// The sense bytes as returned, lowercase hex (for logs and bug reports).
    pub raw_hex: String,
}

impl Sense {
    /// Decode sense bytes; `None` when there is no recognizable sense
    /// (empty buffer or an unknown response code).
    pub fn parse(s: &[u8]) -> Option<Sense> {
        let rc = *s.first()? & 0x7F;
        match rc {
            0x70 | 0x71 => Some(Self::parse_fixed(s, rc)),
            0x72 | 0x73 => Some(Self::parse_descriptor(s, rc)),
            _ => None,
        }
    }

    fn parse_fixed(s: &[u8], rc: u8) -> Sense {
        let at = |i: usize| s.get(i).copied().unwrap_or(0);
        let valid = at(0) & 0x80 != 0;
        let key = at(2) & 0x0F;
        let info = u32::from_be_bytes([at(3), at(4), at(5), at(6)]);
        let add_len = usize::from(at(7));
        let present = |i: usize| i < s.len() && i < 8 + add_len;
        let csi =
            present(11).then(|| u64::from(u32::from_be_bytes([at(8), at(9), at(10), at(11)])));
        let asc = if present(12) { at(12) } else { 0 };
        let ascq = if present(13) { at(13) } else { 0 };
        let sks = (present(17) && at(15) & 0x80 != 0).then(|| [at(15), at(16), at(17)]);
        let ata = (asc == 0x00 && ascq == 0x1D).then(|| AtaStatusReturn {
            extend: at(8) & 0x80 != 0,
            error: at(3),
            status: at(4),
            device: at(5),
            count: u16::from(at(6)),
            lba: u64::from(at(9)) | (u64::from(at(10)) << 8) | (u64::from(at(11)) << 16),
            from_fixed_format: true,
        });
        Sense {
            response_code: rc,
            descriptor_format: false,
            deferred: rc == 0x71,
            key,
            key_name: sense_key_name(key).to_string(),
            asc,
            ascq,
            asc_name: asc_ascq_name(asc, ascq),
            // With ATA registers in it, INFORMATION is not an LBA.
            information: (valid && ata.is_none()).then_some(u64::from(info)),
            command_specific: if ata.is_some() {
                None
            } else {
                csi.filter(|&v| v != 0)
            },
            sense_key_specific: sks,
            ata,
            raw_hex: hex(s),
        }
    }

    fn parse_descriptor(s: &[u8], rc: u8) -> Sense {
        let at = |i: usize| s.get(i).copied().unwrap_or(0);
        let key = at(1) & 0x0F;
        let asc = at(2);
        let ascq = at(3);
        let add_len = usize::from(at(7));
        let end = (8 + add_len).min(s.len());
        let mut information = None;
        let mut command_specific = None;
        let mut sense_key_specific = None;
        let mut ata = None;
        let mut i = 8;
        while i + 2 <= end {
            let code = s[i];
            let len = usize::from(s[i + 1]);
            let dend = (i + 2 + len).min(end);
            let d = &s[i..dend];
            match code {
                0x00 if d.len() >= 12 && d[2] & 0x80 != 0 => information = Some(get_u64(d, 4)),
                0x01 if d.len() >= 12 => command_specific = Some(get_u64(d, 4)),
                0x02 if d.len() >= 7 && d[4] & 0x80 != 0 => {
                    sense_key_specific = Some([d[4], d[5], d[6]])
                }
                0x09 => ata = AtaStatusReturn::parse_descriptor(d),
                _ => {}
            }
            i += 2 + len;
        }
        Sense {
            response_code: rc,
            descriptor_format: true,
            deferred: rc == 0x73,
            key,
            key_name: sense_key_name(key).to_string(),
            asc,
            ascq,
            asc_name: asc_ascq_name(asc, ascq),
            information,
            command_specific,
            sense_key_specific,
            ata,
            raw_hex: hex(s),
        }
    }

    /// Whether this says the command (opcode or a field of it) is not
    /// supported: ILLEGAL REQUEST with invalid command operation code
    /// (20/00) or invalid field in CDB (24/00).
    pub fn is_unsupported_command(&self) -> bool {
        self.key == sense_key::ILLEGAL_REQUEST
            && self.ascq == 0x00
            && matches!(self.asc, 0x20 | 0x24)
    }

    /// Whether this is a medium error (key MEDIUM ERROR, or an unrecovered
    /// read / write error code under another key).
    pub fn is_medium_error(&self) -> bool {
        self.key == sense_key::MEDIUM_ERROR || self.asc == 0x11 || self.asc == 0x0C
    }

    /// One line: "MEDIUM ERROR: unrecovered read error (asc 0x11 ascq 0x00), information 0x1234".
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{}: {} (asc 0x{:02X} ascq 0x{:02X})",
            self.key_name,
            self.asc_name
                .as_deref()
                .unwrap_or("unknown additional sense code"),
            self.asc,
            self.ascq
        );
        if let Some(info) = self.information {
            if self.is_medium_error() || self.asc == 0x21 {
                s.push_str(&format!(" at LBA {info}"));
            } else {
                s.push_str(&format!(", information 0x{info:X}"));
            }
        }
        if let Some(a) = &self.ata {
            s.push_str(&format!(
                ", ATA status 0x{:02X} error 0x{:02X}",
                a.status, a.error
            ));
        }
        if self.deferred {
            s.push_str(" (deferred)");
        }
        s
    }
}

impl std::fmt::Display for Sense {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}
