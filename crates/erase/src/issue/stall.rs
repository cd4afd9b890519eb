//! When a polled sanitize is stuck: a drive whose status says "in
//! progress" for ever, its progress frozen, would keep drivelab polling for
//! ever. A sanitize cannot be aborted (NVMe, ATA and SCSI alike: it
//! survives resets and power cycles until it ends), so giving up is about
//! the host only: drivelab stops polling, says where the progress stood,
//! certifies nothing and leaves the drive to finish or fail by itself.
//!
//! The bound is on the progress standing still, not on the whole run: a
//! drive that moves, however slowly, is waited for. It is derived from the
//! drive's own estimate of the operation (the NVMe Sanitize Status log's
//! estimated time for the action) generously: [`ESTIMATE_FACTOR`] times
//! it, at least [`FLOOR`]; a drive that gives no estimate (ATA and SCSI
//! report none for sanitize) gets [`NO_ESTIMATE`]. `--stall-timeout`
//! replaces the bound, or turns it off (`never`).

use std::time::{Duration, Instant};

use crate::plan::StallLimit;

/// How many times the drive's estimate its progress may stand still.
pub const ESTIMATE_FACTOR: u32 = 4;
/// The least bound when the drive gives an estimate: progress reporting is
/// coarse on many drives (a block erase may stay at 0 until it is done).
pub const FLOOR: Duration = Duration::from_secs(120);
/// The bound when the drive gives no estimate.
pub const NO_ESTIMATE: Duration = Duration::from_secs(30 * 60);

/// The bound `limit` sets for a drive estimating `estimate` (None: no
/// estimate), and how it was arrived at, for the message; None: never.
pub fn bound(limit: StallLimit, estimate: Option<Duration>) -> Option<(Duration, String)> {
    match (limit, estimate) {
        (StallLimit::Never, _) => None,
        (StallLimit::Seconds(s), _) => {
            Some((Duration::from_secs(s), format!("--stall-timeout {s}")))
        }
        (StallLimit::Derived, Some(e)) => Some((
            (e * ESTIMATE_FACTOR).max(FLOOR),
            format!(
                "{ESTIMATE_FACTOR} x the drive's estimate of {} s, at least {} s",
                e.as_secs(),
                FLOOR.as_secs()
            ),
        )),
        (StallLimit::Derived, None) => Some((
            NO_ESTIMATE,
            format!("the drive gives no estimate: {} s", NO_ESTIMATE.as_secs()),
        )),
    }
}

/// A sanitize given up on: its progress stood still past the bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stalled {
    /// The progress it stood at, of 65,536.
    pub progress: u16,
    /// How long it stood there, s.
    pub seconds: u64,
    /// The bound and how it was arrived at.
    pub bound: String,
}

impl Stalled {
    /// The progress in percent.
    pub fn percent(&self) -> f64 {
        f64::from(self.progress) * 100.0 / 65_536.0
    }

    /// One line: where it stopped, what drivelab did and what to do.
    pub fn message(&self, status: &str) -> String {
        format!(
            "the drive still reports the sanitize in progress ({status}) but its progress has stood at {:.1} % for {} s (the bound: {}); drivelab stopped waiting and certifies nothing; the drive may still finish it by itself (a sanitize cannot be aborted); check it later, or rerun with a longer --stall-timeout (or never) to wait",
            self.percent(),
            self.seconds,
            self.bound
        )
    }
}

/// Watches a sanitize's progress, poll after poll.
#[derive(Debug)]
pub struct StallWatch {
    limit: StallLimit,
    bound: Option<(Duration, String)>,
    last: Option<u16>,
    since: Instant,
}

impl StallWatch {
    /// A watch from `now` under `limit`, with no estimate known yet.
    pub fn new(limit: StallLimit, now: Instant) -> StallWatch {
        StallWatch {
            limit,
            bound: bound(limit, None),
            last: None,
            since: now,
        }
    }

    /// The drive's estimate of the whole operation (read with its status).
    pub fn estimate(&mut self, estimate: Option<Duration>) {
        self.bound = bound(self.limit, estimate);
    }

    /// One poll at `now`: the progress it reported (None: it reported
    /// none). `Some` when the progress has stood still past the bound.
    pub fn see(&mut self, progress: Option<u16>, now: Instant) -> Option<Stalled> {
        if progress.is_some() && progress != self.last {
            self.last = progress;
            self.since = now;
        }
        let (b, how) = self.bound.as_ref()?;
        let still = now.saturating_duration_since(self.since);
        (still >= *b).then(|| Stalled {
            progress: self.last.unwrap_or(0),
            seconds: still.as_secs(),
            bound: how.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_follows_the_drives_estimate_generously_or_the_users_choice() {
        let s = Duration::from_secs;
        let b = |l, e| bound(l, e).map(|(d, _)| d);
        // Four times the estimate, never under two minutes.
        assert_eq!(b(StallLimit::Derived, Some(s(4))), Some(FLOOR));
        assert_eq!(b(StallLimit::Derived, Some(s(600))), Some(s(2400)));
        assert_eq!(b(StallLimit::Derived, Some(s(0))), Some(FLOOR));
        assert_eq!(b(StallLimit::Derived, None), Some(NO_ESTIMATE));
        assert_eq!(b(StallLimit::Seconds(20), Some(s(600))), Some(s(20)));
        assert_eq!(b(StallLimit::Never, Some(s(4))), None);
        let how = bound(StallLimit::Derived, Some(s(600))).map(|(_, h)| h);
        assert_eq!(
            how.as_deref(),
            Some("4 x the drive's estimate of 600 s, at least 120 s")
        );
    }

    #[test]
    fn progress_that_moves_is_waited_for_and_progress_that_stands_still_is_not() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut w = StallWatch::new(StallLimit::Seconds(10), t0);
        // Slow but moving: each step within the bound, long past it in all.
        for (i, p) in [(0, 0u16), (9, 100), (18, 200), (27, 300)] {
            assert_eq!(w.see(Some(p), at(i)), None, "{i} s");
        }
        // A poll without progress information does not reset the clock.
        assert_eq!(w.see(None, at(36)), None);
        let st = w.see(Some(300), at(37)).expect("stood still 10 s");
        assert_eq!((st.progress, st.seconds), (300, 10));
        // A drive that moves again is waited for again.
        assert_eq!(w.see(Some(301), at(38)), None);
        let mut never = StallWatch::new(StallLimit::Never, t0);
        assert_eq!(never.see(Some(5), at(1_000_000)), None);
        // The estimate, once known, sets the derived bound.
        let mut d = StallWatch::new(StallLimit::Derived, t0);
        d.estimate(Some(Duration::from_secs(60)));
        assert_eq!(d.see(Some(32768), at(0)), None);
        assert_eq!(d.see(Some(32768), at(239)), None);
        let st = d.see(Some(32768), at(240)).expect("4 x 60 s");
        assert!((st.percent() - 50.0).abs() < 0.01);
        let m = st.message("in progress");
        assert!(
            m.contains("50.0 %") && m.contains("240 s") && !m.contains('\n'),
            "{m}"
        );
    }
}
