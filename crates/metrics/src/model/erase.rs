//! An erase's figures, per drive: its state, the bytes of its current
//! phase done and planned, the share done (verify's is the verification
//! progress), throughput and time left in the phase, time since it began,
//! and the plan's estimate. Read from the same relaxed atomics
//! ([`drivelab_erase::sched::Progress`]) the progress line reads; a
//! [`Tracker`] notes when each phase began, looking every few hundred
//! milliseconds from the thread that draws the progress line.

use std::sync::Arc;
use std::time::Instant;

use drivelab_erase::sched::{Phase, Progress};

use super::catalog::{
    DRIVE_TEMPERATURE, ERASE_DONE, ERASE_ELAPSED, ERASE_ESTIMATE, ERASE_ETA, ERASE_PROGRESS, ERASE_STATE,
    ERASE_THROUGHPUT, ERASE_TOTAL,
};
use super::info::{self, Held};
use super::run::finished_family;
use super::temperature;
use super::{Family, Value};

/// How often a drive's temperature is read (a read may be a command to
/// the drive: drivetemp and nvme ask it each time).
pub const TEMPERATURE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Every state a drive is in, as labelled (`Phase::word`, lower case).
pub const STATES: [Phase; 6] = [
    Phase::Waiting,
    Phase::Erasing,
    Phase::Verifying,
    Phase::Done,
    Phase::Failed,
    Phase::Stopped,
];

/// A state's label.
pub fn state_word(p: Phase) -> String {
    p.word().to_ascii_lowercase()
}

/// One drive being erased.
#[derive(Debug, Clone)]
pub struct EraseDrive {
    /// The target held (path, kernel name, serial).
    pub held: Held,
    /// The plan's estimate of erase plus verify, seconds.
    pub estimated_s: f64,
    /// Its live counters.
    pub progress: Arc<Progress>,
}

impl EraseDrive {
    /// Drive `d` of `n` erased under `opts`, followed through `progress`.
    pub fn of(
        d: &drivelab_erase::Drive,
        opts: &drivelab_erase::Options,
        n: usize,
        progress: Arc<Progress>,
    ) -> EraseDrive {
        let (erase_s, verify_s, _) = drivelab_erase::plan::estimate::estimate(d, opts, n);
        EraseDrive {
            held: Held {
                path: d.dev.path.display().to_string(),
                device: d.dev.name.clone(),
                serial: d.serial().unwrap_or_default().to_string(),
            },
            estimated_s: erase_s + verify_s,
            progress,
        }
    }
}

/// What the tracker knows of a drive's phases.
#[derive(Debug, Clone, Copy)]
struct Seen {
    phase: Phase,
    /// When it left waiting.
    began: Option<Instant>,
    /// When the current phase began, and its bytes done then.
    phase_began: Option<(Instant, u64)>,
    /// When it finished (done, failed or stopped).
    ended: Option<Instant>,
    /// The last phase that moved bytes (erasing, verifying).
    active: Option<Phase>,
}

/// The drives of one erase and when each phase was seen to begin.
#[derive(Debug)]
pub struct Tracker {
    drives: Vec<EraseDrive>,
    seen: Vec<Seen>,
    /// Each drive's temperature, °C, and when it was last read.
    temps: Vec<Option<f64>>,
    temps_read: Option<Instant>,
}

fn finished(p: Phase) -> bool {
    matches!(p, Phase::Done | Phase::Failed | Phase::Stopped)
}

impl Tracker {
    /// A tracker of `drives`, all waiting.
    pub fn new(drives: Vec<EraseDrive>) -> Tracker {
        let seen = drives
            .iter()
            .map(|_| Seen {
                phase: Phase::Waiting,
                began: None,
                phase_began: None,
                ended: None,
                active: None,
            })
            .collect();
        let temps = drives.iter().map(|_| None).collect();
        Tracker {
            drives,
            seen,
            temps,
            temps_read: None,
        }
    }

    /// Look at every drive's progress at `now`.
    pub fn observe(&mut self, now: Instant) {
        for (d, s) in self.drives.iter().zip(self.seen.iter_mut()) {
            let phase = d.progress.phase();
            if phase == s.phase {
                continue;
            }
            if s.began.is_none() && phase != Phase::Waiting {
                s.began = Some(now);
            }
            if matches!(phase, Phase::Erasing | Phase::Verifying) {
                // A phase's bytes start where `Progress::enter` put them
                // (a resumed erase starts past zero).
                let done = d.progress.done.load(std::sync::atomic::Ordering::Relaxed);
                s.phase_began = Some((now, done));
                s.active = Some(phase);
            }
            if finished(phase) {
                s.ended.get_or_insert(now);
            }
            s.phase = phase;
        }
    }

    /// Every figure at `now` (observed first); `over`: the erase has ended.
    pub fn families(&mut self, now: Instant, over: bool) -> Vec<Family> {
        use std::sync::atomic::Ordering::Relaxed;
        self.observe(now);
        if self
            .temps_read
            .is_none_or(|t| now.duration_since(t) >= TEMPERATURE_EVERY)
        {
            for (d, t) in self.drives.iter().zip(self.temps.iter_mut()) {
                *t = temperature::celsius(&d.held.device);
            }
            self.temps_read = Some(now);
        }
        let mut temp = Family::of(&DRIVE_TEMPERATURE);
        let mut state = Family::of(&ERASE_STATE);
        let mut done_f = Family::of(&ERASE_DONE);
        let mut total_f = Family::of(&ERASE_TOTAL);
        let mut ratio = Family::of(&ERASE_PROGRESS);
        let mut tput = Family::of(&ERASE_THROUGHPUT);
        let mut eta = Family::of(&ERASE_ETA);
        let mut elapsed = Family::of(&ERASE_ELAPSED);
        let mut estimate = Family::of(&ERASE_ESTIMATE);
        let mut held = Vec::new();
        for ((d, s), t) in self.drives.iter().zip(&self.seen).zip(&self.temps) {
            held.push(d.held.clone());
            let dl = [d.held.device.as_str(), d.held.serial.as_str()];
            if let Some(c) = t {
                temp.push(&[dl[0]], Value::Gauge(*c));
            }
            for p in STATES {
                let on = if p == s.phase { 1.0 } else { 0.0 };
                state.push(&[dl[0], dl[1], &state_word(p)], Value::Gauge(on));
            }
            estimate.push(&dl, Value::Gauge(d.estimated_s));
            if let Some(b) = s.began {
                let end = s.ended.unwrap_or(now);
                elapsed.push(&dl, Value::Gauge(end.duration_since(b).as_secs_f64()));
            }
            let done = d.progress.done.load(Relaxed);
            let total = d.progress.total.load(Relaxed);
            // A finished drive keeps the figures of the last phase it was in.
            let Some(word) = s.active.map(state_word) else {
                continue;
            };
            let pl = [dl[0], dl[1], word.as_str()];
            done_f.push(&pl, Value::Gauge(done as f64));
            total_f.push(&pl, Value::Gauge(total as f64));
            ratio.push(
                &pl,
                Value::Gauge(if total > 0 {
                    (done as f64 / total as f64).min(1.0)
                } else {
                    0.0
                }),
            );
            if let Some((t0, d0)) = s.phase_began {
                let end = s.ended.unwrap_or(now);
                let secs = end.duration_since(t0).as_secs_f64();
                let moved = done.saturating_sub(d0);
                if secs > 0.0 && moved > 0 {
                    let rate = moved as f64 / secs;
                    tput.push(&pl, Value::Gauge(rate));
                    let left = if finished(s.phase) {
                        0.0
                    } else {
                        total.saturating_sub(done) as f64 / rate
                    };
                    eta.push(&pl, Value::Gauge(left));
                }
            }
        }
        vec![
            info::build("erase"),
            info::claims(&held),
            finished_family(over),
            state,
            done_f,
            total_f,
            ratio,
            tput,
            eta,
            elapsed,
            estimate,
            temp,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::find;
    use std::time::Duration;

    #[test]
    fn a_drive_is_followed_through_its_phases() {
        let p = Arc::new(Progress::default());
        let mut t = Tracker::new(vec![EraseDrive {
            held: Held {
                path: "/dev/loop9".into(),
                device: "loop9".into(),
                serial: String::new(),
            },
            estimated_s: 12.0,
            progress: p.clone(),
        }]);
        let t0 = Instant::now();
        let f = t.families(t0, false);
        let st = find(&f, &ERASE_STATE).unwrap();
        assert_eq!(st.get(&["loop9", "", "waiting"]), Some(&Value::Gauge(1.0)));
        assert!(find(&f, &ERASE_DONE).unwrap().samples.is_empty());
        p.enter(Phase::Erasing, 0, 1000);
        t.observe(t0 + Duration::from_secs(1));
        p.done.store(400, std::sync::atomic::Ordering::Relaxed);
        let f = t.families(t0 + Duration::from_secs(3), false);
        let l = ["loop9", "", "erasing"];
        assert_eq!(find(&f, &ERASE_STATE).unwrap().get(&l), Some(&Value::Gauge(1.0)));
        assert_eq!(find(&f, &ERASE_DONE).unwrap().get(&l), Some(&Value::Gauge(400.0)));
        assert_eq!(find(&f, &ERASE_PROGRESS).unwrap().get(&l), Some(&Value::Gauge(0.4)));
        let dl = ["loop9", ""];
        // 400 bytes in the 2 s since erasing began: 200 B/s, 3 s left.
        assert_eq!(find(&f, &ERASE_THROUGHPUT).unwrap().get(&l), Some(&Value::Gauge(200.0)));
        assert_eq!(find(&f, &ERASE_ETA).unwrap().get(&l), Some(&Value::Gauge(3.0)));
        assert_eq!(find(&f, &ERASE_ELAPSED).unwrap().get(&dl), Some(&Value::Gauge(2.0)));
        p.enter(Phase::Verifying, 0, 500);
        t.observe(t0 + Duration::from_secs(4));
        p.done.store(500, std::sync::atomic::Ordering::Relaxed);
        p.set_phase(Phase::Done);
        let f = t.families(t0 + Duration::from_secs(5), true);
        let last = ["loop9", "", "verifying"];
        assert_eq!(find(&f, &ERASE_PROGRESS).unwrap().get(&last), Some(&Value::Gauge(1.0)));
        assert_eq!(
            find(&f, &ERASE_STATE).unwrap().get(&["loop9", "", "done"]),
            Some(&Value::Gauge(1.0))
        );
        assert_eq!(find(&f, &ERASE_ETA).unwrap().get(&last), Some(&Value::Gauge(0.0)));
        // Elapsed stops when the drive finishes.
        let later = t.families(t0 + Duration::from_secs(50), true);
        assert_eq!(find(&later, &ERASE_ELAPSED).unwrap().get(&dl), Some(&Value::Gauge(4.0)));
    }
}
