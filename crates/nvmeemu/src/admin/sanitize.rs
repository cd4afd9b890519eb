//! Sanitize (NVMe Base 1.4, 5.24): block erase, crypto erase and
//! overwrite, run in the background as a drive runs them.
//!
//! The command completes at once; the operation then works through every
//! namespace in steps over the configured time, and the Sanitize Status log
//! reports its progress (SPROG) and state (SSTAT) as it goes. Meanwhile
//! I/O is refused with Sanitize In Progress. A block erase deallocates the
//! blocks (they read as zeroes), an overwrite writes the pattern (inverted
//! between passes when OIPBP asks), a crypto erase replaces every
//! namespace's media key (written blocks then read as noise, not as the
//! old data nor as zeroes; the controller does not also deallocate them).
//! With the `sanitize-fail` fault the operation stops half way, reports
//! failure, and leaves the controller in sanitize failure mode until an
//! Exit Failure Mode sanitize or a successful one. With `sanitize-stall`
//! it stops half way and stays in progress there for good.

use std::sync::Arc;
use std::time::Duration;

use crate::cmd::{Sqe, Status};
use crate::ctrl::{Ctrl, Drive, EraseEvent, Outcome};
use drivelab_ftlsim::media::Origin;

/// Sanitize actions (SANACT).
pub mod action {
    /// Exit Failure Mode.
    pub const EXIT_FAILURE_MODE: u8 = 1;
    /// Block Erase.
    pub const BLOCK_ERASE: u8 = 2;
    /// Overwrite.
    pub const OVERWRITE: u8 = 3;
    /// Crypto Erase.
    pub const CRYPTO_ERASE: u8 = 4;
}

/// Steps a sanitize operation takes (its progress moves this often).
pub const STEPS: u64 = 32;

/// What one sanitize operation does.
#[derive(Debug, Clone, Copy)]
struct Job {
    action: u8,
    pattern: u32,
    passes: u8,
    invert: bool,
    fail: bool,
    stall: bool,
    step: Duration,
}

/// Starts a Sanitize: CDW10 bits 2:0 SANACT, 7:4 OWPASS (0 = 16), 8
/// OIPBP; CDW11 the overwrite pattern.
pub fn start(drive: &Arc<Drive>, c: &mut Ctrl, sqe: &Sqe) -> Outcome {
    if c.sanitize.status == 2 {
        return Outcome::status(Status::SANITIZE_IN_PROGRESS);
    }
    let cdw10 = sqe.cdw(10);
    let act = (cdw10 & 7) as u8;
    match act {
        action::EXIT_FAILURE_MODE => {
            c.sanitize.failure_mode = false;
            return Outcome::status(Status::SUCCESS);
        }
        action::BLOCK_ERASE | action::OVERWRITE | action::CRYPTO_ERASE => {}
        _ => return Outcome::status(Status::INVALID_FIELD),
    }
    let passes = match ((cdw10 >> 4) & 0xF) as u8 {
        0 => 16,
        n => n,
    };
    let fail = c.faults.sanitize_fails;
    let stall = c.faults.sanitize_stalls;
    // The faults are one-shot: the next sanitize works.
    c.faults.sanitize_fails = false;
    c.cfg.faults.sanitize_fails = false;
    c.faults.sanitize_stalls = false;
    c.cfg.faults.sanitize_stalls = false;
    let s = &mut c.sanitize;
    s.status = 2;
    s.progress = 0;
    s.cdw10 = cdw10;
    s.passes = 0;
    s.global_erased = false;
    s.started += 1;
    s.op_blocks = 0;
    s.stalled = false;
    let job = Job {
        action: act,
        pattern: sqe.cdw(11),
        passes,
        invert: cdw10 & (1 << 8) != 0,
        fail,
        stall,
        step: Duration::from_secs_f64(c.cfg.sanitize_seconds.max(0.0) / STEPS as f64),
    };
    if act == action::CRYPTO_ERASE && !c.faults.crypto_noop {
        for m in &mut c.namespaces {
            m.change_key();
        }
    }
    let d = Arc::clone(drive);
    std::thread::spawn(move || run(&d, job));
    Outcome::status(Status::SUCCESS)
}

/// Works through the namespaces in [`STEPS`] steps.
fn run(drive: &Drive, job: Job) {
    for step in 0..STEPS {
        std::thread::sleep(job.step);
        let mut c = drive.lock();
        if job.fail && step == STEPS / 2 {
            finish(&mut c, job, "failed");
            drive.touch();
            return;
        }
        if job.stall && step == STEPS / 2 {
            // In progress at half, never to move again.
            c.sanitize.stalled = true;
            drive.touch();
            return;
        }
        let mut erased = 0;
        for m in &mut c.namespaces {
            let (from, to) = (m.blocks() * step / STEPS, m.blocks() * (step + 1) / STEPS);
            match job.action {
                // The last step leaves the medium fresh (the FTL erased).
                action::BLOCK_ERASE if to == m.blocks() => m.erase(),
                action::BLOCK_ERASE => m.deallocate(from, to - from),
                action::OVERWRITE => {
                    let last_inverted = job.invert && job.passes % 2 == 0;
                    let p = if last_inverted {
                        !job.pattern
                    } else {
                        job.pattern
                    };
                    m.fill(from, to - from, p, Origin::Drive);
                }
                _ => {}
            }
            erased += to - from;
        }
        c.sanitize.blocks_erased += erased;
        c.sanitize.op_blocks += erased;
        c.sanitize.progress = (((step + 1) * 65536) / STEPS).min(65535) as u16;
        drive.touch();
    }
    let mut c = drive.lock();
    finish(&mut c, job, "completed");
    drive.touch();
}

fn finish(c: &mut Ctrl, job: Job, result: &'static str) {
    let ok = result == "completed";
    let s = &mut c.sanitize;
    s.status = if ok { 1 } else { 3 };
    s.failure_mode = !ok;
    s.global_erased = ok;
    if ok && job.action == action::OVERWRITE {
        s.passes = job.passes;
    }
    let blocks = s.op_blocks;
    let nsids = (1..=c.namespaces.len() as u32).collect();
    c.erases.push(EraseEvent {
        command: "sanitize",
        action: job.action,
        nsids,
        blocks,
        result,
    });
}
