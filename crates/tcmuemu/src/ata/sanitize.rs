//! The Sanitize Device feature set (ACS-3 4.17, SANITIZE DEVICE B4h,
//! 7.36): CRYPTO SCRAMBLE EXT, BLOCK ERASE EXT and OVERWRITE EXT run in
//! the background for a set time, SANITIZE STATUS EXT reports their
//! progress, SANITIZE FREEZE LOCK EXT freezes the set. The medium changes
//! when the operation ends: crypto scramble leaves noise (a keystream from
//! a new key), block erase zeroes, overwrite the 32-bit pattern
//! (little-endian, as the host's buffer holds it). Media access is aborted
//! while one runs. A fault makes the next one fail half way, or stall
//! there: in progress forever, its progress stopped, the medium unchanged.

use std::time::{Duration, Instant};

use super::outcome::{MediumAction, Outcome};
use super::regs::Regs;

/// SANITIZE DEVICE subcommands (the FEATURE register) and their keys (LBA).
pub mod sub {
    /// SANITIZE STATUS EXT.
    pub const STATUS: u16 = 0x0000;
    /// CRYPTO SCRAMBLE EXT; LBA 31:0 "Cryp".
    pub const CRYPTO: u16 = 0x0011;
    /// BLOCK ERASE EXT; LBA 31:0 "BkEr".
    pub const BLOCK: u16 = 0x0012;
    /// OVERWRITE EXT; LBA 47:32 "OW".
    pub const OVERWRITE: u16 = 0x0014;
    /// SANITIZE FREEZE LOCK EXT; LBA 31:0 "FrLk".
    pub const FREEZE_LOCK: u16 = 0x0020;
}

/// One sanitize operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// CRYPTO SCRAMBLE EXT.
    Crypto,
    /// BLOCK ERASE EXT.
    Block,
    /// OVERWRITE EXT with this pattern.
    Overwrite(u32),
}

impl Kind {
    /// Its name for the state file.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Crypto => "crypto-scramble",
            Kind::Block => "block-erase",
            Kind::Overwrite(_) => "overwrite",
        }
    }
}

/// The feature set's state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sanitize {
    /// How long an operation runs.
    pub duration: Duration,
    /// The one running: what and since when.
    pub running: Option<(Kind, Instant)>,
    /// Whether the last one completed without error.
    pub completed_ok: bool,
    /// Whether the last one failed (cleared by a status with CLEAR
    /// SANITIZE OPERATION FAILED or a successful sanitize).
    pub failed: bool,
    /// SANITIZE FREEZE LOCK EXT was sent.
    pub frozen: bool,
    /// The next operation fails half way (a fault on command).
    pub fail_next: bool,
    /// The next operation stalls half way (a fault on command).
    pub stall_next: bool,
    /// The running operation is stalled: it reports itself in progress,
    /// at half, and never ends.
    pub stalled: bool,
    /// Operations finished: kind, whether it succeeded.
    pub done: Vec<(Kind, bool)>,
    /// Status requests answered while one ran: SANITIZE STATUS EXT, or
    /// REQUEST SENSE on the SAS personality.
    pub status_polls_running: u64,
    /// Crypto scrambles so far (the keystream's key).
    pub keys: u32,
}

impl Sanitize {
    /// Whether media access must be refused now.
    pub fn busy(&self) -> bool {
        self.running.is_some() || self.failed
    }

    /// Bring the running operation up to date: when its time is up, it ends
    /// (or fails half way, with the fault), and the medium action for it is
    /// returned for the caller to carry out.
    pub fn advance(&mut self, now: Instant) -> Option<MediumAction> {
        let (kind, since) = self.running?;
        let elapsed = now.saturating_duration_since(since);
        if self.stalled {
            return None;
        }
        if self.fail_next && elapsed >= self.duration / 2 {
            self.running = None;
            self.fail_next = false;
            self.failed = true;
            self.completed_ok = false;
            self.done.push((kind, false));
            // Half the medium erased: the first half of the work done.
            return Some(half(kind, self.keys));
        }
        if elapsed < self.duration {
            return None;
        }
        self.running = None;
        self.completed_ok = true;
        self.failed = false;
        self.done.push((kind, true));
        Some(match kind {
            Kind::Crypto => {
                self.keys += 1;
                MediumAction::Noise(self.keys)
            }
            Kind::Block => MediumAction::Fill(0),
            Kind::Overwrite(p) => MediumAction::Pattern(p),
        })
    }

    /// Start `kind` now (the caller has checked it may start).
    pub fn start(&mut self, kind: Kind, now: Instant) {
        self.running = Some((kind, now));
        self.completed_ok = false;
        self.stalled = std::mem::take(&mut self.stall_next);
    }

    /// Progress of the running operation, 0..=65535 of 65536.
    pub fn progress(&self, now: Instant) -> u16 {
        let Some((_, since)) = self.running else {
            return 0;
        };
        if self.duration.is_zero() {
            return 0xFFFF;
        }
        let f = now.saturating_duration_since(since).as_secs_f64() / self.duration.as_secs_f64();
        let most = if self.stalled { 0.5 } else { 1.0 };
        (f.min(most) * 65535.0) as u16
    }

    /// One SANITIZE DEVICE command.
    pub fn execute(&mut self, tf: &Regs, now: Instant) -> Outcome {
        let key = tf.lba & 0xFFFF_FFFF;
        let kind = match tf.feature {
            sub::STATUS => return self.status(tf, now),
            sub::FREEZE_LOCK if key == 0x4672_4C6B => {
                self.frozen = true;
                return Outcome::ok(Regs::default());
            }
            sub::CRYPTO if key == 0x4372_7970 => Kind::Crypto,
            sub::BLOCK if key == 0x426B_4572 => Kind::Block,
            sub::OVERWRITE if tf.lba >> 32 == 0x4F57 => Kind::Overwrite(key as u32),
            _ => return Outcome::abort(),
        };
        // Aborted while frozen or while one runs; after a failure only in
        // failure mode (COUNT bit 4) may another start.
        if self.frozen || self.running.is_some() || (self.failed && tf.count & 0x10 == 0) {
            return Outcome::abort();
        }
        self.start(kind, now);
        Outcome::ok(Regs::default())
    }

    /// SANITIZE STATUS EXT: COUNT bit 15 completed without error, bit 14
    /// in progress, bit 13 frozen; LBA 15:0 progress. A failed operation
    /// answers with ERROR ABRT and its reason in LBA 7:0 (1: sanitize
    /// command unsuccessful), unless CLEAR (COUNT bit 0) is asked.
    fn status(&mut self, tf: &Regs, now: Instant) -> Outcome {
        if self.running.is_some() {
            self.status_polls_running += 1;
        }
        if self.failed && self.running.is_none() {
            if tf.count & 1 != 0 {
                self.failed = false;
            } else {
                let mut o = Outcome::abort();
                o.regs.lba = 0x01;
                return o;
            }
        }
        let count = (u16::from(self.completed_ok) << 15)
            | (u16::from(self.running.is_some()) << 14)
            | (u16::from(self.frozen) << 13);
        Outcome::ok(Regs {
            count,
            lba: u64::from(self.progress(now)),
            ..Regs::default()
        })
    }
}

/// What half an operation leaves: the medium action over the first half.
fn half(kind: Kind, keys: u32) -> MediumAction {
    let whole = match kind {
        Kind::Crypto => MediumAction::Noise(keys + 1),
        Kind::Block => MediumAction::Fill(0),
        Kind::Overwrite(p) => MediumAction::Pattern(p),
    };
    MediumAction::Half(Box::new(whole))
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::ata::{AtaRegisters, AtaSanitize, AtaSanitizeOp, AtaSanitizeStatus};

    fn regs(s: &AtaSanitize) -> Regs {
        Regs::from(s.build())
    }

    fn decoded(o: &Outcome) -> AtaSanitizeStatus {
        AtaSanitizeStatus::from_registers(&AtaRegisters {
            error: o.error,
            status: o.regs.command,
            device: o.regs.device,
            count: o.regs.count,
            lba: o.regs.lba,
            partial: false,
        })
    }

    #[test]
    fn drivelabs_block_erase_runs_reports_progress_and_zeroes() {
        let mut s = Sanitize {
            duration: Duration::from_secs(10),
            ..Sanitize::default()
        };
        let t0 = Instant::now();
        let start = s.execute(&regs(&AtaSanitize::new(AtaSanitizeOp::BlockErase)), t0);
        assert!(!start.failed());
        assert!(s.busy());
        let status = regs(&AtaSanitize::new(AtaSanitizeOp::Status));
        let mid = decoded(&s.execute(&status, t0 + Duration::from_secs(5)));
        assert!(mid.in_progress && !mid.completed_ok);
        assert!((mid.percent() - 50.0).abs() < 1.0, "{}", mid.percent());
        // A second sanitize while one runs is aborted.
        assert!(s
            .execute(&regs(&AtaSanitize::new(AtaSanitizeOp::CryptoScramble)), t0)
            .failed());
        assert_eq!(s.advance(t0 + Duration::from_secs(9)), None);
        assert_eq!(
            s.advance(t0 + Duration::from_secs(10)),
            Some(MediumAction::Fill(0))
        );
        let end = decoded(&s.execute(&status, t0 + Duration::from_secs(11)));
        assert!(end.completed_ok && !end.in_progress);
        assert!(!s.busy());
        assert_eq!(s.status_polls_running, 1);
    }

    #[test]
    fn overwrite_and_crypto_leave_their_data() {
        let mut s = Sanitize::default();
        let t0 = Instant::now();
        let ow = AtaSanitize::new(AtaSanitizeOp::Overwrite).pattern(0xA1B2_C3D4);
        assert!(!s.execute(&regs(&ow), t0).failed());
        assert_eq!(s.advance(t0), Some(MediumAction::Pattern(0xA1B2_C3D4)));
        assert!(!s
            .execute(&regs(&AtaSanitize::new(AtaSanitizeOp::CryptoScramble)), t0)
            .failed());
        assert_eq!(s.advance(t0), Some(MediumAction::Noise(1)));
        // A wrong key is aborted.
        let mut bad = regs(&AtaSanitize::new(AtaSanitizeOp::BlockErase));
        bad.lba = 0;
        assert!(s.execute(&bad, t0).failed());
    }

    #[test]
    fn a_failed_sanitize_is_reported_and_refuses_media_access_until_cleared() {
        let mut s = Sanitize {
            duration: Duration::from_secs(10),
            fail_next: true,
            ..Sanitize::default()
        };
        let t0 = Instant::now();
        s.execute(&regs(&AtaSanitize::new(AtaSanitizeOp::BlockErase)), t0);
        assert_eq!(
            s.advance(t0 + Duration::from_secs(5)),
            Some(MediumAction::Half(Box::new(MediumAction::Fill(0))))
        );
        assert!(s.busy());
        let status = regs(&AtaSanitize::new(AtaSanitizeOp::Status));
        assert!(s.execute(&status, t0).failed());
        // Not in failure mode: another sanitize is refused.
        assert!(s
            .execute(&regs(&AtaSanitize::new(AtaSanitizeOp::BlockErase)), t0)
            .failed());
        let clear = regs(&AtaSanitize::new(AtaSanitizeOp::Status).clear_failed(true));
        let st = decoded(&s.execute(&clear, t0));
        assert!(!st.completed_ok && !st.in_progress);
        assert!(!s.busy());
        assert_eq!(s.done, vec![(Kind::Block, false)]);
    }

    #[test]
    fn a_stalled_sanitize_stays_in_progress_at_half_forever_and_erases_nothing() {
        let mut s = Sanitize {
            duration: Duration::from_secs(10),
            stall_next: true,
            ..Sanitize::default()
        };
        let t0 = Instant::now();
        assert!(!s
            .execute(&regs(&AtaSanitize::new(AtaSanitizeOp::BlockErase)), t0)
            .failed());
        assert!(s.stalled && !s.stall_next, "the fault is one-shot");
        let status = regs(&AtaSanitize::new(AtaSanitizeOp::Status));
        let early = decoded(&s.execute(&status, t0 + Duration::from_secs(2)));
        assert!((early.percent() - 20.0).abs() < 1.0, "{}", early.percent());
        for later in [5, 10, 3600] {
            let at = t0 + Duration::from_secs(later);
            assert_eq!(s.advance(at), None, "{later} s: nothing ends");
            let st = decoded(&s.execute(&status, at));
            assert!(st.in_progress && !st.completed_ok, "{later} s");
            assert!((st.percent() - 50.0).abs() < 1.0, "{}", st.percent());
        }
        assert!(s.busy() && s.done.is_empty());
    }

    #[test]
    fn freeze_lock_refuses_every_later_sanitize() {
        let mut s = Sanitize::default();
        let t0 = Instant::now();
        assert!(!s
            .execute(&regs(&AtaSanitize::new(AtaSanitizeOp::FreezeLock)), t0)
            .failed());
        assert!(s
            .execute(&regs(&AtaSanitize::new(AtaSanitizeOp::BlockErase)), t0)
            .failed());
        let st = decoded(&s.execute(&regs(&AtaSanitize::new(AtaSanitizeOp::Status)), t0));
        assert!(st.frozen);
    }
}
