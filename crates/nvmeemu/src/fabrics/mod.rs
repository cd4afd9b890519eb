//! Fabrics commands (NVMe over Fabrics 1.1, section 3): Connect, which
//! binds a TCP connection to a queue, and Property Get / Property Set,
//! which stand in for the controller registers a PCIe drive maps in
//! memory (CAP, VS, CC, CSTS).
//!
//! Linux's host enables the controller by reading CAP, writing CC.EN and
//! polling CSTS.RDY; it shuts it down by writing CC.SHN and polling
//! CSTS.SHST. Both changes take effect at once here.

use crate::cmd::{Sqe, Status};
use crate::ctrl::{Ctrl, Outcome};

/// The opcode of every Fabrics command.
pub const OPCODE: u8 = 0x7F;

/// Fabrics command types (byte 4 of the command).
pub mod fctype {
    /// Property Set.
    pub const PROPERTY_SET: u8 = 0x00;
    /// Connect.
    pub const CONNECT: u8 = 0x01;
    /// Property Get.
    pub const PROPERTY_GET: u8 = 0x04;
}

/// Property offsets (NVMe Base 2.0, "Controller Properties").
pub mod prop {
    /// Controller Capabilities (8 bytes).
    pub const CAP: u32 = 0x00;
    /// Version.
    pub const VS: u32 = 0x08;
    /// Controller Configuration.
    pub const CC: u32 = 0x14;
    /// Controller Status.
    pub const CSTS: u32 = 0x1C;
}

/// The version the controller reports (VS and Identify VER): 1.4.
pub const VERSION: u32 = 0x0001_0400;
/// Queue entries the controller supports, 0's based (CAP.MQES).
pub const MQES: u64 = 127;

/// The CAP value: MQES, CQR, a 15 s ready timeout (TO, 500 ms units), the
/// NVM command set (CSS bit 37), 4 KiB pages (MPSMIN = MPSMAX = 0).
pub fn cap() -> u64 {
    MQES | (1 << 16) | (30 << 24) | (1 << 37)
}

/// What a Connect asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connect {
    /// Queue ID (0 admin).
    pub qid: u16,
    /// Submission queue size, 0's based.
    pub sqsize: u16,
    /// Keep alive timeout, ms.
    pub kato: u32,
    /// The controller ID asked for (FFFFh: any).
    pub cntlid: u16,
    /// The subsystem NQN.
    pub subnqn: String,
    /// The host NQN.
    pub hostnqn: String,
}

fn nqn(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

impl Connect {
    /// Decodes a Connect command and its 1024 bytes of data (HOSTID at 0,
    /// CNTLID at 16, SUBNQN at 256, HOSTNQN at 512).
    pub fn parse(sqe: &Sqe, data: &[u8]) -> Result<Connect, Status> {
        if data.len() < 1024 {
            return Err(Status::INVALID_FIELD);
        }
        let w = |at: usize| u16::from_le_bytes([sqe.0[at], sqe.0[at + 1]]);
        Ok(Connect {
            qid: w(42),
            sqsize: w(44),
            kato: sqe.cdw(12),
            cntlid: u16::from_le_bytes([data[16], data[17]]),
            subnqn: nqn(&data[256..512]),
            hostnqn: nqn(&data[512..768]),
        })
    }

    /// Checks the Connect against the controller and gives the
    /// completion's DW0 (the controller ID, for the admin queue).
    pub fn accept(&self, c: &mut Ctrl) -> Result<u32, Status> {
        if self.subnqn != c.cfg.subnqn {
            return Err(Status::CONNECT_INVALID_HOST);
        }
        if u64::from(self.sqsize) > MQES || self.sqsize == 0 {
            return Err(Status::CONNECT_INVALID_PARAM);
        }
        if self.qid == 0 {
            return Ok(u32::from(c.cntlid));
        }
        if self.cntlid != c.cntlid || self.qid > c.io_queues {
            return Err(Status::CONNECT_INVALID_PARAM);
        }
        Ok(0)
    }
}

/// Property Get and Property Set (Connect is handled by the connection,
/// which owns the queue it makes).
pub fn execute(c: &mut Ctrl, sqe: &Sqe) -> Outcome {
    let eight = sqe.0[40] & 0x7 == 1;
    let offset = sqe.cdw(11);
    let value = u64::from(sqe.cdw(12)) | (u64::from(sqe.cdw(13)) << 32);
    match sqe.fctype() {
        fctype::PROPERTY_GET => {
            let v = match offset {
                prop::CAP => cap(),
                prop::VS => u64::from(VERSION),
                prop::CC => u64::from(c.cc),
                prop::CSTS => u64::from(c.csts),
                _ => return Outcome::status(Status::INVALID_FIELD),
            };
            let v = if eight { v } else { v & 0xFFFF_FFFF };
            Outcome::Done {
                status: Status::SUCCESS,
                dw0: v as u32,
                dw1: (v >> 32) as u32,
                data: Vec::new(),
            }
        }
        fctype::PROPERTY_SET if offset == prop::CC => {
            let cc = value as u32;
            c.cc = cc;
            let en = cc & 1;
            let shn = (cc >> 14) & 3;
            // RDY follows EN; SHST reports the shutdown complete at once.
            c.csts = en | if shn != 0 { 2 << 2 } else { 0 };
            Outcome::status(Status::SUCCESS)
        }
        fctype::PROPERTY_SET => Outcome::status(Status::INVALID_FIELD),
        _ => Outcome::status(Status::INVALID_OPCODE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_fields_at_their_offsets() {
        let sqe = Sqe::new(OPCODE, 1)
            .with_fctype(fctype::CONNECT)
            .with_cdw(10, 3 << 16) // QID 3 (bytes 42-43)
            .with_cdw(11, 127) // SQSIZE (bytes 44-45)
            .with_cdw(12, 5000);
        let mut data = vec![0u8; 1024];
        data[16..18].copy_from_slice(&7u16.to_le_bytes());
        data[256..256 + 9].copy_from_slice(b"nqn.a:sub");
        data[512..512 + 10].copy_from_slice(b"nqn.a:host");
        let c = Connect::parse(&sqe, &data).unwrap();
        assert_eq!((c.qid, c.sqsize, c.kato, c.cntlid), (3, 127, 5000, 7));
        assert_eq!(
            (c.subnqn.as_str(), c.hostnqn.as_str()),
            ("nqn.a:sub", "nqn.a:host")
        );
        assert_eq!(
            Connect::parse(&sqe, &data[..512]),
            Err(Status::INVALID_FIELD)
        );
    }

    #[test]
    fn cap_says_nvm_command_set_and_128_entries() {
        let c = cap();
        assert_eq!(c & 0xFFFF, 127);
        assert_eq!((c >> 37) & 1, 1);
        assert_eq!((c >> 24) & 0xFF, 30);
        assert_eq!((c >> 48) & 0xF, 0);
    }
}
