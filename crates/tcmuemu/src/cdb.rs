//! CDBs the emulated drive understands, decoded from their bytes (SBC-4,
//! SPC-5): one enum variant per command with the fields it uses, so the
//! handlers never index a CDB themselves.

use crate::sense::Sense;

/// Operation codes.
pub mod op {
    /// TEST UNIT READY (SPC-5 6.47).
    pub const TEST_UNIT_READY: u8 = 0x00;
    /// FORMAT UNIT (SBC-4 5.3).
    pub const FORMAT_UNIT: u8 = 0x04;
    /// MODE SELECT(6) (SPC-5 6.11).
    pub const MODE_SELECT_6: u8 = 0x15;
    /// MODE SELECT(10) (SPC-5 6.12).
    pub const MODE_SELECT_10: u8 = 0x55;
    /// REQUEST SENSE (SPC-5 6.39).
    pub const REQUEST_SENSE: u8 = 0x03;
    /// INQUIRY (SPC-5 6.7).
    pub const INQUIRY: u8 = 0x12;
    /// MODE SENSE(6) (SPC-5 6.13).
    pub const MODE_SENSE_6: u8 = 0x1A;
    /// READ CAPACITY(10) (SBC-4 5.20).
    pub const READ_CAPACITY_10: u8 = 0x25;
    /// READ(10) (SBC-4 5.16).
    pub const READ_10: u8 = 0x28;
    /// WRITE(10) (SBC-4 5.40).
    pub const WRITE_10: u8 = 0x2A;
    /// SYNCHRONIZE CACHE(10) (SBC-4 5.28).
    pub const SYNCHRONIZE_CACHE_10: u8 = 0x35;
    /// WRITE SAME(10) (SBC-4 5.45).
    pub const WRITE_SAME_10: u8 = 0x41;
    /// UNMAP (SBC-4 5.32).
    pub const UNMAP: u8 = 0x42;
    /// SANITIZE (SBC-4 5.30).
    pub const SANITIZE: u8 = 0x48;
    /// LOG SENSE (SPC-5 6.8).
    pub const LOG_SENSE: u8 = 0x4D;
    /// SEND DIAGNOSTIC (SPC-5 6.42).
    pub const SEND_DIAGNOSTIC: u8 = 0x1D;
    /// MODE SENSE(10) (SPC-5 6.14).
    pub const MODE_SENSE_10: u8 = 0x5A;
    /// READ(16) (SBC-4 5.19).
    pub const READ_16: u8 = 0x88;
    /// WRITE(16) (SBC-4 5.43).
    pub const WRITE_16: u8 = 0x8A;
    /// SYNCHRONIZE CACHE(16) (SBC-4 5.29).
    pub const SYNCHRONIZE_CACHE_16: u8 = 0x91;
    /// WRITE SAME(16) (SBC-4 5.46).
    pub const WRITE_SAME_16: u8 = 0x93;
    /// SERVICE ACTION IN(16); service action 10h is READ CAPACITY(16) (SBC-4 5.21).
    pub const SERVICE_ACTION_IN_16: u8 = 0x9E;
    /// REPORT LUNS (SPC-5 6.33).
    pub const REPORT_LUNS: u8 = 0xA0;
    /// ATA PASS-THROUGH(16) (SAT-4 12.2.2).
    pub const ATA_PASS_THROUGH_16: u8 = 0x85;
    /// ATA PASS-THROUGH(12) (SAT-4 12.2.3).
    pub const ATA_PASS_THROUGH_12: u8 = 0xA1;
    /// MAINTENANCE IN; service action 0Ch is REPORT SUPPORTED OPERATION
    /// CODES (SPC-5 6.35).
    pub const MAINTENANCE_IN: u8 = 0xA3;
}

/// A decoded CDB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cdb {
    /// TEST UNIT READY.
    TestUnitReady,
    /// REQUEST SENSE; DESC asks for descriptor format.
    RequestSense {
        /// Allocation length.
        alloc: usize,
        /// Descriptor format asked for.
        desc: bool,
    },
    /// INQUIRY: the standard data, or VPD page `page` when `evpd`.
    Inquiry {
        /// EVPD bit.
        evpd: bool,
        /// Page code.
        page: u8,
        /// Allocation length.
        alloc: usize,
    },
    /// MODE SENSE (6) or (10).
    ModeSense {
        /// The 10-byte form (8-byte header).
        ten: bool,
        /// DBD: no block descriptor.
        dbd: bool,
        /// PC: 0 current, 1 changeable, 2 default, 3 saved.
        pc: u8,
        /// Page code (3Fh: all).
        page: u8,
        /// Subpage code.
        subpage: u8,
        /// Allocation length.
        alloc: usize,
    },
    /// READ CAPACITY (10), or (16) with its allocation length.
    ReadCapacity {
        /// The 16-byte form's allocation length; `None` for (10).
        alloc16: Option<usize>,
    },
    /// READ (10/16).
    Read {
        /// First LBA.
        lba: u64,
        /// Blocks.
        blocks: u32,
    },
    /// WRITE (10/16).
    Write {
        /// First LBA.
        lba: u64,
        /// Blocks.
        blocks: u32,
    },
    /// SYNCHRONIZE CACHE (10/16).
    SynchronizeCache,
    /// WRITE SAME (10/16).
    WriteSame {
        /// First LBA.
        lba: u64,
        /// Blocks (0: refused, WSNZ).
        blocks: u32,
        /// UNMAP: the blocks may be unmapped instead of written.
        unmap: bool,
        /// NDOB (16 only): no data-out buffer, the block is zeroes.
        ndob: bool,
    },
    /// UNMAP with a parameter list of this length.
    Unmap {
        /// PARAMETER LIST LENGTH.
        len: usize,
    },
    /// REPORT LUNS.
    ReportLuns {
        /// Allocation length.
        alloc: usize,
    },
    /// SANITIZE: decoded by [`crate::scsi_sanitize`].
    Sanitize,
    /// MODE SELECT (6) or (10): its parameter list by [`crate::format`].
    ModeSelect {
        /// The 10-byte form.
        ten: bool,
    },
    /// FORMAT UNIT: checked by [`crate::format`].
    FormatUnit,
    /// LOG SENSE: decoded by [`crate::logpages`].
    LogSense,
    /// SEND DIAGNOSTIC: decoded by [`crate::diagnostic`].
    SendDiagnostic,
    /// ATA PASS-THROUGH (12) or (16): decoded by [`crate::sat`].
    AtaPassThrough,
    /// REPORT SUPPORTED OPERATION CODES for one command: [`crate::rsoc`].
    ReportSupportedOpcode(RsocRequest),
    /// An operation code this drive does not implement.
    Unsupported(u8),
}

/// The length of a CDB from its operation code's group (SPC-5 4.2.5.1);
/// 0 for the reserved groups and variable-length CDBs.
pub fn cdb_len(opcode: u8) -> usize {
    match opcode >> 5 {
        0 => 6,
        1 | 2 => 10,
        4 => 16,
        5 => 12,
        _ => 0,
    }
}

fn be16(b: &[u8]) -> usize {
    usize::from(u16::from_be_bytes([b[0], b[1]]))
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// Whether the command carries data to the drive (its iovecs hold the
/// data-out buffer): WRITE, and ATA PASS-THROUGH with T_DIR 0 and a
/// transfer length (SAT-4 12.2.2.3).
pub fn is_data_out(cdb: &[u8]) -> bool {
    match cdb.first() {
        Some(&(op::WRITE_10 | op::WRITE_16 | op::WRITE_SAME_10)) => true,
        // WRITE SAME(16) unless NDOB; UNMAP with a parameter list.
        Some(&op::WRITE_SAME_16) => cdb.get(1).is_some_and(|b| b & 0x01 == 0),
        Some(&op::UNMAP) => cdb.get(7..9).is_some_and(|l| l != [0, 0]),
        // SANITIZE with a parameter list (overwrite), MODE SELECT with one,
        // FORMAT UNIT with FMTDATA.
        Some(&op::SANITIZE | &op::MODE_SELECT_10) => cdb.get(7..9).is_some_and(|l| l != [0, 0]),
        Some(&op::MODE_SELECT_6) => cdb.get(4).is_some_and(|l| *l != 0),
        Some(&op::FORMAT_UNIT) => cdb.get(1).is_some_and(|b| b & 0x10 != 0),
        Some(&(op::ATA_PASS_THROUGH_16 | op::ATA_PASS_THROUGH_12)) => {
            cdb.get(2).is_some_and(|b| b & 0x08 == 0 && b & 0x03 != 0)
        }
        _ => false,
    }
}

impl Cdb {
    /// Decode `b` (the CDB bytes; at least its group's length). A CDB too
    /// short for its group is an INVALID FIELD IN CDB.
    pub fn parse(b: &[u8]) -> Result<Cdb, Sense> {
        let Some(&opcode) = b.first() else {
            return Err(Sense::INVALID_FIELD_IN_CDB);
        };
        let need = cdb_len(opcode).max(1);
        if b.len() < need {
            return Err(Sense::INVALID_FIELD_IN_CDB);
        }
        Ok(match opcode {
            op::TEST_UNIT_READY => Cdb::TestUnitReady,
            op::REQUEST_SENSE => Cdb::RequestSense {
                alloc: usize::from(b[4]),
                desc: b[1] & 1 != 0,
            },
            op::INQUIRY => {
                let evpd = b[1] & 1 != 0;
                if !evpd && b[2] != 0 {
                    return Err(Sense::INVALID_FIELD_IN_CDB);
                }
                Cdb::Inquiry {
                    evpd,
                    page: b[2],
                    alloc: be16(&b[3..5]),
                }
            }
            op::MODE_SENSE_6 | op::MODE_SENSE_10 => {
                let ten = opcode == op::MODE_SENSE_10;
                Cdb::ModeSense {
                    ten,
                    dbd: b[1] & 0x08 != 0,
                    pc: b[2] >> 6,
                    page: b[2] & 0x3F,
                    subpage: b[3],
                    alloc: if ten {
                        be16(&b[7..9])
                    } else {
                        usize::from(b[4])
                    },
                }
            }
            op::READ_CAPACITY_10 => Cdb::ReadCapacity { alloc16: None },
            op::SERVICE_ACTION_IN_16 if b[1] & 0x1F == 0x10 => Cdb::ReadCapacity {
                alloc16: Some(be32(&b[10..14]) as usize),
            },
            op::READ_10 => Cdb::Read {
                lba: u64::from(be32(&b[2..6])),
                blocks: be16(&b[7..9]) as u32,
            },
            op::READ_16 => Cdb::Read {
                lba: be64(&b[2..10]),
                blocks: be32(&b[10..14]),
            },
            op::WRITE_10 => Cdb::Write {
                lba: u64::from(be32(&b[2..6])),
                blocks: be16(&b[7..9]) as u32,
            },
            op::WRITE_16 => Cdb::Write {
                lba: be64(&b[2..10]),
                blocks: be32(&b[10..14]),
            },
            op::SYNCHRONIZE_CACHE_10 | op::SYNCHRONIZE_CACHE_16 => Cdb::SynchronizeCache,
            // ANCHOR is refused (ANC_SUP 0 in VPD B2h), as is WRPROTECT.
            op::WRITE_SAME_10 | op::WRITE_SAME_16 if b[1] & 0xF0 != 0 => {
                return Err(Sense::INVALID_FIELD_IN_CDB)
            }
            op::WRITE_SAME_10 => Cdb::WriteSame {
                lba: u64::from(be32(&b[2..6])),
                blocks: be16(&b[7..9]) as u32,
                unmap: b[1] & 0x08 != 0,
                ndob: false,
            },
            op::WRITE_SAME_16 => Cdb::WriteSame {
                lba: be64(&b[2..10]),
                blocks: be32(&b[10..14]),
                unmap: b[1] & 0x08 != 0,
                ndob: b[1] & 0x01 != 0,
            },
            op::UNMAP if b[1] & 0x01 != 0 => return Err(Sense::INVALID_FIELD_IN_CDB),
            op::UNMAP => Cdb::Unmap {
                len: be16(&b[7..9]),
            },
            op::ATA_PASS_THROUGH_16 | op::ATA_PASS_THROUGH_12 => Cdb::AtaPassThrough,
            op::LOG_SENSE => Cdb::LogSense,
            op::SEND_DIAGNOSTIC => Cdb::SendDiagnostic,
            op::SANITIZE => Cdb::Sanitize,
            op::MODE_SELECT_6 => Cdb::ModeSelect { ten: false },
            op::MODE_SELECT_10 => Cdb::ModeSelect { ten: true },
            op::FORMAT_UNIT => Cdb::FormatUnit,
            op::MAINTENANCE_IN if b[1] & 0x1F == 0x0C => {
                Cdb::ReportSupportedOpcode(RsocRequest::parse(b))
            }
            op::REPORT_LUNS => Cdb::ReportLuns {
                alloc: be32(&b[6..10]) as usize,
            },
            other => Cdb::Unsupported(other),
        })
    }
}

/// A decoded one-command REPORT SUPPORTED OPERATION CODES (answered by
/// [`crate::rsoc`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RsocRequest {
    /// REPORTING OPTIONS (byte 2 bits 2:0).
    pub option: u8,
    /// REQUESTED OPERATION CODE.
    pub opcode: u8,
    /// REQUESTED SERVICE ACTION.
    pub service_action: u16,
    /// Allocation length.
    pub alloc: usize,
}

impl RsocRequest {
    /// Decode the 12-byte CDB (service action 0Ch already matched).
    pub fn parse(b: &[u8]) -> RsocRequest {
        RsocRequest {
            option: b[2] & 0x07,
            opcode: b[3],
            service_action: u16::from_be_bytes([b[4], b[5]]),
            alloc: u32::from_be_bytes([b[6], b[7], b[8], b[9]]) as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdbs_decode_to_their_fields() {
        let cases: &[(&[u8], Result<Cdb, Sense>)] = &[
            (&[0x00, 0, 0, 0, 0, 0], Ok(Cdb::TestUnitReady)),
            (
                &[0x12, 0, 0, 0, 96, 0],
                Ok(Cdb::Inquiry {
                    evpd: false,
                    page: 0,
                    alloc: 96,
                }),
            ),
            (
                &[0x12, 1, 0x83, 0x01, 0x00, 0],
                Ok(Cdb::Inquiry {
                    evpd: true,
                    page: 0x83,
                    alloc: 256,
                }),
            ),
            // A page code without EVPD is an invalid field.
            (&[0x12, 0, 0x80, 0, 96, 0], Err(Sense::INVALID_FIELD_IN_CDB)),
            (
                &[0x28, 0, 0x00, 0x01, 0x02, 0x03, 0, 0x00, 0x80, 0],
                Ok(Cdb::Read {
                    lba: 0x0001_0203,
                    blocks: 128,
                }),
            ),
            (
                &[0x8A, 0, 0, 0, 0, 1, 0, 0, 0, 0x10, 0, 0, 0x01, 0x00, 0, 0],
                Ok(Cdb::Write {
                    lba: 0x0001_0000_0010,
                    blocks: 256,
                }),
            ),
            (
                &[0x9E, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0],
                Ok(Cdb::ReadCapacity { alloc16: Some(32) }),
            ),
            // SERVICE ACTION IN(16) with another service action.
            (
                &[0x9E, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0],
                Ok(Cdb::Unsupported(0x9E)),
            ),
            (
                &[0x5A, 0x08, 0x7F, 0, 0, 0, 0, 0x10, 0x00, 0],
                Ok(Cdb::ModeSense {
                    ten: true,
                    dbd: true,
                    pc: 1,
                    page: 0x3F,
                    subpage: 0,
                    alloc: 4096,
                }),
            ),
            (&[0xC5, 0, 0, 0, 0, 0], Ok(Cdb::Unsupported(0xC5))),
            (
                &[0x41, 0x08, 0, 0, 1, 0, 0, 0x01, 0x00, 0],
                Ok(Cdb::WriteSame {
                    lba: 256,
                    blocks: 256,
                    unmap: true,
                    ndob: false,
                }),
            ),
            (
                &[0x93, 0x01, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 8, 0, 0],
                Ok(Cdb::WriteSame {
                    lba: 0x0001_0000_0002,
                    blocks: 8,
                    unmap: false,
                    ndob: true,
                }),
            ),
            // ANCHOR: not supported.
            (
                &[0x93, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0],
                Err(Sense::INVALID_FIELD_IN_CDB),
            ),
            (
                &[0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0],
                Ok(Cdb::Unmap { len: 24 }),
            ),
            (
                &[0xA1, 0x08, 0x0E, 0, 1, 0, 0, 0, 0, 0xEC, 0, 0],
                Ok(Cdb::AtaPassThrough),
            ),
            // Shorter than its group says.
            (&[0x28, 0, 0, 0], Err(Sense::INVALID_FIELD_IN_CDB)),
            (&[], Err(Sense::INVALID_FIELD_IN_CDB)),
        ];
        for (bytes, want) in cases {
            assert_eq!(&Cdb::parse(bytes), want, "{bytes:02x?}");
        }
    }

    #[test]
    fn data_out_follows_the_opcode_and_t_dir() {
        let cases: &[(&[u8], bool)] = &[
            (&[0x2A, 0, 0, 0, 0, 0, 0, 0, 1, 0], true),
            (&[0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0], false),
            (&[0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0], true),
            (
                &[0x93, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
                true,
            ),
            (
                &[0x93, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
                false,
            ),
            (&[0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0], true),
            (&[0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0], false),
            // SECURITY SET PASSWORD: PIO data-out, T_LENGTH in COUNT.
            (
                &[0x85, 0x0A, 0x26, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xF1, 0],
                true,
            ),
            // IDENTIFY: T_DIR in.
            (
                &[0x85, 0x08, 0x0E, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xEC, 0],
                false,
            ),
            // Non-data: no T_LENGTH.
            (
                &[
                    0x85, 0x06, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x27, 0,
                ],
                false,
            ),
        ];
        for (cdb, want) in cases {
            assert_eq!(is_data_out(cdb), *want, "{cdb:02x?}");
        }
    }

    #[test]
    fn cdb_length_follows_the_group() {
        for (op, len) in [
            (0x00, 6),
            (0x28, 10),
            (0x5A, 10),
            (0xA1, 12),
            (0x85, 16),
            (0x7F, 0),
        ] {
            assert_eq!(cdb_len(op), len, "{op:02x}");
        }
    }
}
