//! One command to the handler of its kind: Fabrics commands on any queue,
//! admin commands on queue 0, I/O commands on the others; a command the
//! faults say to hang is never answered, one they delay is answered late,
//! and a failed one is logged in the error log.

use std::sync::Arc;

use crate::cmd::Sqe;
use crate::ctrl::{Drive, Outcome};

/// Executes one command from queue `qid` of `drive` with the host's `data`.
pub fn execute(drive: &Arc<Drive>, qid: u16, sqe: &Sqe, data: &[u8]) -> Outcome {
    let mut c = drive.lock();
    c.reload_faults();
    if c.faults.hangs(qid == 0, sqe.opcode()) {
        c.unanswered += 1;
        drive.touch();
        return Outcome::Never;
    }
    let out = if sqe.opcode() == crate::fabrics::OPCODE {
        crate::fabrics::execute(&mut c, sqe)
    } else if qid == 0 {
        crate::admin::execute(drive, &mut c, sqe, data)
    } else {
        crate::io::execute(&mut c, sqe, data)
    };
    if let Outcome::Done { status, .. } = &out {
        if !status.is_success() {
            c.log_error(qid, sqe, *status);
        }
    }
    let delay = c.faults.delay(qid == 0, sqe.opcode());
    if delay.is_some() {
        c.delayed += 1;
    }
    drive.touch();
    match delay {
        Some(after) => Outcome::Late {
            after,
            out: Box::new(out),
        },
        None => out,
    }
}
