//! I/O commands of the NVM command set (NVM Command Set 1.0, section 3):
//! Flush, Write, Read, Write Zeroes and Dataset Management (deallocate).
//!
//! Reads and writes move whole blocks of the namespace's medium and count
//! toward the SMART log (data units, host commands, busy time). While a
//! sanitize runs every I/O command is refused with Sanitize In Progress;
//! after a failed one, with Sanitize Failed.

use std::time::Instant;

use crate::cmd::{Sqe, Status};
use crate::ctrl::{Ctrl, Outcome};
use drivelab_ftlsim::media::Origin;

/// I/O opcodes implemented.
pub mod opcode {
    /// Flush.
    pub const FLUSH: u8 = 0x00;
    /// Write.
    pub const WRITE: u8 = 0x01;
    /// Read.
    pub const READ: u8 = 0x02;
    /// Write Zeroes.
    pub const WRITE_ZEROES: u8 = 0x08;
    /// Dataset Management.
    pub const DSM: u8 = 0x09;
}

/// The largest transfer, bytes (MDTS).
pub const MAX_TRANSFER: u64 = 4096 << crate::admin::identify::MDTS;

/// Executes an I/O command with the host's `data` (Write's blocks,
/// Dataset Management's ranges).
pub fn execute(c: &mut Ctrl, sqe: &Sqe, data: &[u8]) -> Outcome {
    if c.sanitize.status == 2 {
        return Outcome::status(Status::SANITIZE_IN_PROGRESS);
    }
    if c.sanitize.failure_mode {
        return Outcome::status(Status::SANITIZE_FAILED);
    }
    let t0 = Instant::now();
    let out = match sqe.opcode() {
        opcode::FLUSH => Outcome::status(Status::SUCCESS),
        opcode::WRITE | opcode::READ | opcode::WRITE_ZEROES => rw(c, sqe, data),
        opcode::DSM => dsm(c, sqe, data),
        _ => Outcome::status(Status::INVALID_OPCODE),
    };
    c.counters.busy_ns += t0.elapsed().as_nanos();
    out
}

/// Read, Write and Write Zeroes: CDW10-11 SLBA, CDW12 bits 15:0 NLB (0's
/// based), bit 25 DEAC (Write Zeroes).
fn rw(c: &mut Ctrl, sqe: &Sqe, data: &[u8]) -> Outcome {
    let slba = u64::from(sqe.cdw(10)) | (u64::from(sqe.cdw(11)) << 32);
    let nlb = u64::from(sqe.cdw(12) & 0xFFFF) + 1;
    let deac = sqe.cdw(12) & (1 << 25) != 0;
    let op = sqe.opcode();
    let Some(m) = c.namespace(sqe.nsid()) else {
        return Outcome::status(Status::INVALID_NS);
    };
    if !m.in_range(slba, nlb) {
        return Outcome::status(Status::LBA_RANGE);
    }
    let bytes = nlb * m.block_size() as u64;
    if op != opcode::WRITE_ZEROES && (bytes > MAX_TRANSFER || u64::from(sqe.data_len()) != bytes) {
        return Outcome::status(Status::INVALID_FIELD);
    }
    match op {
        opcode::READ => {
            let out = m.read(slba, nlb);
            c.counters.bytes_read += u128::from(bytes);
            c.counters.read_commands += 1;
            Outcome::data(out)
        }
        opcode::WRITE => {
            if data.len() as u64 != bytes {
                return Outcome::status(Status::DATA_TRANSFER);
            }
            m.write(slba, data, Origin::Host);
            c.counters.bytes_written += u128::from(bytes);
            c.counters.write_commands += 1;
            c.sanitize.global_erased = false;
            Outcome::status(Status::SUCCESS)
        }
        _ => {
            if deac {
                m.deallocate(slba, nlb);
            } else {
                m.fill(slba, nlb, 0, Origin::Host);
            }
            Outcome::status(Status::SUCCESS)
        }
    }
}

/// Dataset Management: CDW10 bits 7:0 NR (0's based), CDW11 bit 2 AD;
/// 16-byte ranges (length in blocks at 4, SLBA at 8).
fn dsm(c: &mut Ctrl, sqe: &Sqe, data: &[u8]) -> Outcome {
    let nr = (sqe.cdw(10) & 0xFF) as usize + 1;
    let ad = sqe.cdw(11) & (1 << 2) != 0;
    let Some(m) = c.namespace(sqe.nsid()) else {
        return Outcome::status(Status::INVALID_NS);
    };
    if data.len() < 16 * nr {
        return Outcome::status(Status::DATA_TRANSFER);
    }
    let ranges: Vec<(u64, u64)> = data
        .chunks_exact(16)
        .take(nr)
        .map(|r| {
            let mut len = [0u8; 4];
            len.copy_from_slice(&r[4..8]);
            let mut lba = [0u8; 8];
            lba.copy_from_slice(&r[8..16]);
            (u64::from_le_bytes(lba), u64::from(u32::from_le_bytes(len)))
        })
        .collect();
    if ranges.iter().any(|&(l, n)| !m.in_range(l, n)) {
        return Outcome::status(Status::LBA_RANGE);
    }
    if ad {
        for (l, n) in ranges {
            m.deallocate(l, n);
        }
    }
    Outcome::status(Status::SUCCESS)
}
