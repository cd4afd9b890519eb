//! The NVMe submission and completion queue entries as they travel in
//! capsules (NVMe Base 2.0, "Common Command Format" and "Common Completion
//! Queue Entry"), and completion status values. A leaf: every stage reads
//! commands and writes completions through these types.

/// Copies `v` into `b` at byte `at` (the data structures' fields).
pub(crate) fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

/// A 64-byte submission queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sqe(pub [u8; 64]);

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Sqe {
    /// An entry with `opcode` and command identifier `cid`, all else zero.
    pub fn new(opcode: u8, cid: u16) -> Sqe {
        let mut b = [0u8; 64];
        b[0] = opcode;
        b[2..4].copy_from_slice(&cid.to_le_bytes());
        Sqe(b)
    }
    /// CDW0 bits 7:0.
    pub fn opcode(&self) -> u8 {
        self.0[0]
    }
    /// CDW0 bits 31:16, the command identifier.
    pub fn cid(&self) -> u16 {
        u16::from_le_bytes([self.0[2], self.0[3]])
    }
    /// The Fabrics command type (byte 4), for opcode 7Fh.
    pub fn fctype(&self) -> u8 {
        self.0[4]
    }
    /// Namespace identifier (bytes 4-7).
    pub fn nsid(&self) -> u32 {
        le32(&self.0, 4)
    }
    /// Command dword `n` (10..=15).
    pub fn cdw(&self, n: usize) -> u32 {
        le32(&self.0, 4 * n)
    }
    /// The data length the SGL descriptor in DPTR (bytes 24-39) describes:
    /// its Length field (bytes 32-35).
    pub fn data_len(&self) -> u32 {
        le32(&self.0, 32)
    }
    /// Sets the namespace identifier.
    pub fn with_nsid(mut self, nsid: u32) -> Sqe {
        self.0[4..8].copy_from_slice(&nsid.to_le_bytes());
        self
    }
    /// Sets command dword `n` (2..=15).
    pub fn with_cdw(mut self, n: usize, v: u32) -> Sqe {
        self.0[4 * n..4 * n + 4].copy_from_slice(&v.to_le_bytes());
        self
    }
    /// Sets the SGL data block descriptor's length (transport data block,
    /// as Linux's nvme-tcp sends it: type 5Ah).
    pub fn with_data_len(mut self, len: u32) -> Sqe {
        self.0[32..36].copy_from_slice(&len.to_le_bytes());
        self.0[39] = 0x5A;
        self
    }
    /// Sets the Fabrics command type (byte 4; opcode 7Fh commands).
    pub fn with_fctype(mut self, t: u8) -> Sqe {
        self.0[4] = t;
        self
    }
}

/// A completion status: Status Code Type, Status Code and Do Not Retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// Status Code Type (0 generic, 1 command specific, 2 media).
    pub sct: u8,
    /// Status Code.
    pub sc: u8,
    /// Do Not Retry.
    pub dnr: bool,
}

impl Status {
    /// Successful completion.
    pub const SUCCESS: Status = Status::generic(0x00);
    /// Invalid Command Opcode.
    pub const INVALID_OPCODE: Status = Status::generic(0x01).no_retry();
    /// Invalid Field in Command.
    pub const INVALID_FIELD: Status = Status::generic(0x02).no_retry();
    /// Data Transfer Error.
    pub const DATA_TRANSFER: Status = Status::generic(0x04);
    /// Internal Error.
    pub const INTERNAL: Status = Status::generic(0x06);
    /// Invalid Namespace or Format.
    pub const INVALID_NS: Status = Status::generic(0x0B).no_retry();
    /// Command Sequence Error.
    pub const SEQUENCE: Status = Status::generic(0x0C).no_retry();
    /// Sanitize Failed: the last sanitize failed; the controller is in
    /// sanitize failure mode.
    pub const SANITIZE_FAILED: Status = Status::generic(0x1C).no_retry();
    /// Sanitize In Progress.
    pub const SANITIZE_IN_PROGRESS: Status = Status::generic(0x1D).no_retry();
    /// LBA Out of Range.
    pub const LBA_RANGE: Status = Status::generic(0x80).no_retry();
    /// Invalid Log Page (command specific).
    pub const INVALID_LOG_PAGE: Status = Status {
        sct: 1,
        sc: 0x09,
        dnr: true,
    };
    /// Invalid Format (command specific, Format NVM).
    pub const INVALID_FORMAT: Status = Status {
        sct: 1,
        sc: 0x0A,
        dnr: true,
    };
    /// Fabrics Connect Invalid Parameters (command specific 82h).
    pub const CONNECT_INVALID_PARAM: Status = Status {
        sct: 1,
        sc: 0x82,
        dnr: true,
    };
    /// Fabrics Connect Invalid Host (command specific 84h).
    pub const CONNECT_INVALID_HOST: Status = Status {
        sct: 1,
        sc: 0x84,
        dnr: true,
    };

    /// A generic status code.
    pub const fn generic(sc: u8) -> Status {
        Status {
            sct: 0,
            sc,
            dnr: false,
        }
    }
    /// The same status with Do Not Retry set.
    pub const fn no_retry(self) -> Status {
        Status {
            sct: self.sct,
            sc: self.sc,
            dnr: true,
        }
    }
    /// Whether this is a success.
    pub fn is_success(self) -> bool {
        self.sct == 0 && self.sc == 0
    }
    /// The Status Field (CQE DW3 bits 31:17) as the 15 bits above the
    /// phase tag: SC bits 7:0, SCT 10:8, DNR 14.
    pub fn field(self) -> u16 {
        u16::from(self.sc) | (u16::from(self.sct & 7) << 8) | (u16::from(self.dnr) << 14)
    }
    /// Decodes [`Status::field`].
    pub fn from_field(f: u16) -> Status {
        Status {
            sc: (f & 0xFF) as u8,
            sct: ((f >> 8) & 7) as u8,
            dnr: f & (1 << 14) != 0,
        }
    }
}

/// A 16-byte completion queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe {
    /// DW0, command specific.
    pub dw0: u32,
    /// DW1, command specific.
    pub dw1: u32,
    /// SQ head pointer.
    pub sqhd: u16,
    /// SQ identifier.
    pub sqid: u16,
    /// The command identifier completed.
    pub cid: u16,
    /// Its status.
    pub status: Status,
}

impl Cqe {
    /// The 16 bytes (phase tag 0: fabrics have no phase).
    pub fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&self.dw0.to_le_bytes());
        b[4..8].copy_from_slice(&self.dw1.to_le_bytes());
        b[8..10].copy_from_slice(&self.sqhd.to_le_bytes());
        b[10..12].copy_from_slice(&self.sqid.to_le_bytes());
        b[12..14].copy_from_slice(&self.cid.to_le_bytes());
        b[14..16].copy_from_slice(&(self.status.field() << 1).to_le_bytes());
        b
    }
    /// Decodes [`Cqe::encode`]'s bytes.
    pub fn decode(b: &[u8; 16]) -> Cqe {
        let u16at = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
        Cqe {
            dw0: le32(b, 0),
            dw1: le32(b, 4),
            sqhd: u16at(8),
            sqid: u16at(10),
            cid: u16at(12),
            status: Status::from_field(u16at(14) >> 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_field_sits_above_the_phase_bit() {
        // Sanitize In Progress, DNR: SC 1Dh, SCT 0, DNR bit 14 of the
        // field, shifted past the phase tag: 0x801D << 1 as Linux reads it.
        let c = Cqe {
            dw0: 7,
            dw1: 0,
            sqhd: 3,
            sqid: 1,
            cid: 0x1234,
            status: Status::SANITIZE_IN_PROGRESS,
        };
        let b = c.encode();
        assert_eq!(u16::from_le_bytes([b[14], b[15]]), (0x1D | (1 << 14)) << 1);
        assert_eq!(&b[12..14], &[0x34, 0x12]);
        assert_eq!(Cqe::decode(&b), c);
        let lp = Status::INVALID_LOG_PAGE.field();
        assert_eq!(lp, 0x109 | (1 << 14));
    }

    #[test]
    fn sqe_fields_at_their_offsets() {
        let s = Sqe::new(0x02, 0xBEEF)
            .with_nsid(3)
            .with_cdw(10, 0x11)
            .with_cdw(12, 7)
            .with_data_len(4096);
        assert_eq!((s.opcode(), s.cid(), s.nsid()), (0x02, 0xBEEF, 3));
        assert_eq!((s.cdw(10), s.cdw(11), s.cdw(12)), (0x11, 0, 7));
        assert_eq!(s.data_len(), 4096);
        assert_eq!(s.0[39], 0x5A);
        assert_eq!(&s.0[40..44], &[0x11, 0, 0, 0]);
    }
}
