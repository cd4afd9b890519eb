//! Format NVM (NVMe Base 1.4, 5.23): one namespace (or all, NSID
//! FFFFFFFFh) formatted with LBA format 0 (the only one), with the Secure
//! Erase Setting (SES) chosen: 0 none, 1 user data erase, 2 cryptographic
//! erase. No erase and a user data erase both deallocate every block
//! (they read back as zeroes; the medium is fresh again); a cryptographic erase replaces the
//! namespace's media key, so written blocks read back as noise.

use crate::cmd::{Sqe, Status};
use crate::ctrl::{Ctrl, EraseEvent, Outcome};

/// Executes Format NVM: CDW10 bits 3:0 and 13:12 LBAF, 7:5 PI, 11:9 SES.
pub fn execute(c: &mut Ctrl, sqe: &Sqe) -> Outcome {
    if c.sanitize.status == 2 {
        return Outcome::status(Status::SANITIZE_IN_PROGRESS);
    }
    let cdw10 = sqe.cdw(10);
    let lbaf = (cdw10 & 0xF) | (((cdw10 >> 12) & 3) << 4);
    let pi = (cdw10 >> 5) & 7;
    let ses = ((cdw10 >> 9) & 7) as u8;
    if lbaf != 0 || pi != 0 {
        return Outcome::status(Status::INVALID_FORMAT);
    }
    if ses > 2 {
        return Outcome::status(Status::INVALID_FIELD);
    }
    let nsid = sqe.nsid();
    let nsids: Vec<u32> = if nsid == 0xFFFF_FFFF {
        (1..=c.namespaces.len() as u32).collect()
    } else if c.namespace(nsid).is_some() {
        vec![nsid]
    } else {
        return Outcome::status(Status::INVALID_NS);
    };
    let mut blocks = 0;
    let keep_key = c.faults.crypto_noop;
    for &n in &nsids {
        let Some(m) = c.namespace(n) else { continue };
        let count = m.blocks();
        if ses == 2 {
            if !keep_key {
                m.change_key();
            }
        } else {
            m.erase();
        }
        blocks += count;
    }
    c.erases.push(EraseEvent {
        command: "format",
        action: ses,
        nsids,
        blocks,
        result: "completed",
    });
    Outcome::status(Status::SUCCESS)
}
