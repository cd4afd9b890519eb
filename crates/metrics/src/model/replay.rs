//! A replay's figures: the requests of its trace, those issued, completed
//! and failed, and the bytes moved per direction. While it runs they come
//! from the counters the replay copies once per turn of its loop
//! ([`drivelab_replay::Progress`]); at the end from its report, the same
//! the final JSON holds.

use std::sync::atomic::Ordering::Relaxed;

use drivelab_replay::{Progress, ReplayReport};

use super::catalog::{
    REPLAY_BYTES, REPLAY_COMPLETED, REPLAY_FAILED, REPLAY_ISSUED, REPLAY_PLANNED,
};
use super::info;
use super::run::finished_family;
use super::{Family, Value};

/// A replay's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Requests in the trace (0 before its first pass has counted them).
    pub planned: u64,
    /// Requests issued.
    pub issued: u64,
    /// Requests completed without error.
    pub completed: u64,
    /// Requests that failed.
    pub failed: u64,
    /// Bytes read by completed requests.
    pub bytes_read: u64,
    /// Bytes written by completed requests.
    pub bytes_written: u64,
}

impl Figures {
    /// The counters as the running replay last copied them.
    pub fn of_progress(p: &Progress) -> Figures {
        Figures {
            planned: p.planned.load(Relaxed),
            issued: p.requests.load(Relaxed),
            completed: p.completed.load(Relaxed),
            failed: p.errors.load(Relaxed),
            bytes_read: p.bytes_read.load(Relaxed),
            bytes_written: p.bytes_written.load(Relaxed),
        }
    }

    /// The final figures: the report's, with the trace's size from
    /// `p`.
    pub fn of_report(r: &ReplayReport, p: &Progress) -> Figures {
        Figures {
            planned: p.planned.load(Relaxed),
            issued: r.requests,
            completed: r.completed,
            failed: r.errors,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
        }
    }
}

/// Every figure of `f`; `over`: the replay has ended.
pub fn families(f: &Figures, over: bool) -> Vec<Family> {
    let one = |m, v| {
        let mut fam = Family::of(m);
        fam.push(&[], v);
        fam
    };
    let mut bytes = Family::of(&REPLAY_BYTES);
    bytes.push(&["read"], Value::Counter(f.bytes_read));
    bytes.push(&["write"], Value::Counter(f.bytes_written));
    let mut out = vec![info::build("trace replay"), finished_family(over)];
    if f.planned > 0 {
        out.push(one(&REPLAY_PLANNED, Value::Gauge(f.planned as f64)));
    }
    out.extend([
        one(&REPLAY_ISSUED, Value::Counter(f.issued)),
        one(&REPLAY_COMPLETED, Value::Counter(f.completed)),
        one(&REPLAY_FAILED, Value::Counter(f.failed)),
        bytes,
    ]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::find;

    #[test]
    fn the_report_settles_what_the_progress_showed() {
        let p = Progress::default();
        p.planned.store(100, Relaxed);
        p.requests.store(40, Relaxed);
        p.completed.store(36, Relaxed);
        let live = families(&Figures::of_progress(&p), false);
        assert_eq!(
            find(&live, &REPLAY_ISSUED).unwrap().get(&[]),
            Some(&Value::Counter(40))
        );
        let r = ReplayReport {
            requests: 100,
            completed: 99,
            errors: 1,
            bytes_written: 4096 * 99,
            ..ReplayReport::default()
        };
        let end = families(&Figures::of_report(&r, &p), true);
        assert_eq!(
            find(&end, &REPLAY_COMPLETED).unwrap().get(&[]),
            Some(&Value::Counter(99))
        );
        assert_eq!(
            find(&end, &REPLAY_BYTES).unwrap().get(&["write"]),
            Some(&Value::Counter(4096 * 99))
        );
        assert_eq!(
            find(&end, &REPLAY_PLANNED).unwrap().get(&[]),
            Some(&Value::Gauge(100.0))
        );
    }
}
