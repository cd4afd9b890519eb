//! Admin commands (NVMe Base 1.4, section 5): Identify, Get Log Page,
//! Get / Set Features, Keep Alive, Asynchronous Event Request, Format NVM,
//! Sanitize and Device Self-test.
//!
//! An Asynchronous Event Request is taken and left outstanding (the
//! controller never has an event to report), as the specification allows.
//! While a sanitize runs, Format NVM and a second Sanitize are refused
//! with Sanitize In Progress; Identify, logs, features and Keep Alive are
//! answered (the commands the specification lets through).

pub mod format;
pub mod identify;
pub mod logs;
pub mod sanitize;
pub mod selftest;

use std::sync::Arc;

use crate::cmd::{Sqe, Status};
use crate::ctrl::{Ctrl, Drive, Outcome, MAX_IO_QUEUES};

/// Admin opcodes implemented.
pub mod opcode {
    /// Get Log Page.
    pub const GET_LOG_PAGE: u8 = 0x02;
    /// Identify.
    pub const IDENTIFY: u8 = 0x06;
    /// Set Features.
    pub const SET_FEATURES: u8 = 0x09;
    /// Get Features.
    pub const GET_FEATURES: u8 = 0x0A;
    /// Asynchronous Event Request.
    pub const ASYNC_EVENT: u8 = 0x0C;
    /// Device Self-test.
    pub const DEVICE_SELF_TEST: u8 = 0x14;
    /// Keep Alive.
    pub const KEEP_ALIVE: u8 = 0x18;
    /// Format NVM.
    pub const FORMAT_NVM: u8 = 0x80;
    /// Sanitize.
    pub const SANITIZE: u8 = 0x84;
}

/// Feature identifiers implemented.
pub mod feature {
    /// Temperature Threshold.
    pub const TEMPERATURE_THRESHOLD: u8 = 0x04;
    /// Volatile Write Cache.
    pub const VOLATILE_WRITE_CACHE: u8 = 0x06;
    /// Number of Queues.
    pub const NUMBER_OF_QUEUES: u8 = 0x07;
    /// Asynchronous Event Configuration.
    pub const ASYNC_EVENT_CONFIG: u8 = 0x0B;
    /// Keep Alive Timer.
    pub const KEEP_ALIVE_TIMER: u8 = 0x0F;
}

/// Executes an admin command.
pub fn execute(drive: &Arc<Drive>, c: &mut Ctrl, sqe: &Sqe, _data: &[u8]) -> Outcome {
    match sqe.opcode() {
        opcode::IDENTIFY => identify::execute(c, sqe),
        opcode::GET_LOG_PAGE => logs::execute(c, sqe),
        opcode::SET_FEATURES => set_features(c, sqe),
        opcode::GET_FEATURES => get_features(c, sqe),
        opcode::KEEP_ALIVE => Outcome::status(Status::SUCCESS),
        opcode::ASYNC_EVENT => Outcome::Never,
        opcode::FORMAT_NVM => format::execute(c, sqe),
        opcode::SANITIZE => sanitize::start(drive, c, sqe),
        opcode::DEVICE_SELF_TEST => {
            let hours = c.started.elapsed().as_secs() / 3600;
            let n = c.namespaces.len() as u32;
            Outcome::status(
                c.self_test
                    .command(sqe, n, std::time::Instant::now(), hours),
            )
        }
        _ => Outcome::status(Status::INVALID_OPCODE),
    }
}

/// Number of Queues: both counts 0's based, in DW0 bits 15:0 and 31:16.
fn queues_dw0(n: u16) -> u32 {
    let z = u32::from(n.saturating_sub(1));
    z | (z << 16)
}

fn set_features(c: &mut Ctrl, sqe: &Sqe) -> Outcome {
    let fid = (sqe.cdw(10) & 0xFF) as u8;
    let v = sqe.cdw(11);
    match fid {
        feature::NUMBER_OF_QUEUES => {
            let asked = (v & 0xFFFF).min(v >> 16) as u16;
            if asked == 0xFFFF {
                return Outcome::status(Status::INVALID_FIELD);
            }
            c.io_queues = (asked + 1).min(MAX_IO_QUEUES);
            Outcome::dw0(queues_dw0(c.io_queues))
        }
        feature::VOLATILE_WRITE_CACHE => {
            c.write_cache = v & 1 != 0;
            Outcome::status(Status::SUCCESS)
        }
        feature::TEMPERATURE_THRESHOLD
        | feature::ASYNC_EVENT_CONFIG
        | feature::KEEP_ALIVE_TIMER => Outcome::status(Status::SUCCESS),
        _ => Outcome::status(Status::INVALID_FIELD),
    }
}

fn get_features(c: &mut Ctrl, sqe: &Sqe) -> Outcome {
    match (sqe.cdw(10) & 0xFF) as u8 {
        feature::NUMBER_OF_QUEUES => Outcome::dw0(queues_dw0(c.io_queues)),
        feature::VOLATILE_WRITE_CACHE => Outcome::dw0(u32::from(c.write_cache)),
        feature::TEMPERATURE_THRESHOLD => Outcome::dw0(u32::from(identify::WCTEMP_K)),
        feature::ASYNC_EVENT_CONFIG | feature::KEEP_ALIVE_TIMER => Outcome::dw0(0),
        _ => Outcome::status(Status::INVALID_FIELD),
    }
}
