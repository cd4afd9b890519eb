//! An erase's figures, per drive: its state, the bytes of its current
//! phase done and planned, the share done (verify's is the verification
//! progress), throughput and time left in the phase, time since it began,
//! and the plan's estimate. Read from the same relaxed atomics
//! ([`drivelab_erase::sched::Progress`]) the progress line reads; a
//! [`Tracker`] notes when each phase began, looking every few hundred
//! milliseconds from the thread that draws the progress line.

use std::sync::Arc;
use std::time::Instant;

use drivelab_erase::plan::method::Method;
use drivelab_erase::sched::{Phase, Progress};

use super::catalog::{
    DRIVE_TEMPERATURE, ERASE_DONE, ERASE_ELAPSED, ERASE_ESTIMATE, ERASE_ETA, ERASE_PROGRESS,
    ERASE_STATE, ERASE_THROUGHPUT, ERASE_TOTAL,
};
use super::health::{self, DriveHealth, HEALTH_EVERY};
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
    /// The erase method (whether the drive runs it on its own).
    pub method: Method,
    /// Whether it has health of its own to read (NVMe, ATA, SCSI).
    pub has_health: bool,
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
            method: d.choice.method,
            has_health: drivelab_device::health::around::has_health(d.dev.kind),
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

/// A phase's figures as the result gives them: its label, bytes done and
/// planned, and its seconds.
#[derive(Debug, Clone, PartialEq)]
struct Settled {
    phase: &'static str,
    done: u64,
    total: u64,
    /// Bytes this run moved in the phase (a resumed erase's done
    /// includes earlier runs').
    moved: u64,
    seconds: f64,
}

/// The drives of one erase and when each phase was seen to begin.
#[derive(Debug)]
pub struct Tracker {
    drives: Vec<EraseDrive>,
    seen: Vec<Seen>,
    /// Per drive, once the erase has ended: each phase's figures from its
    /// outcome, which replace what was seen.
    settled: Vec<Option<(Vec<Settled>, f64)>>,
    /// Each drive's temperature, °C, and when it was last read.
    temps: Vec<Option<f64>>,
    temps_read: Option<Instant>,
    /// Each drive's last health reading, and when it was asked.
    health: Vec<Option<DriveHealth>>,
    health_asked: Vec<Option<Instant>>,
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
        let settled = drives.iter().map(|_| None).collect();
        let health = drives.iter().map(|_| None).collect();
        let health_asked = drives.iter().map(|_| None).collect();
        Tracker {
            drives,
            seen,
            settled,
            temps,
            temps_read: None,
            health,
            health_asked,
        }
    }

    /// The drives whose health is due at `now` (index, device path): those
    /// with health of their own, in a phase where a reading disturbs
    /// nothing ([`health::may_read`]), asked [`HEALTH_EVERY`] ago or never;
    /// with `last`, every such drive (the erase has ended).
    pub fn health_due(&self, now: Instant, last: bool) -> Vec<(usize, String)> {
        self.drives
            .iter()
            .enumerate()
            .filter(|(i, d)| {
                let phase = d.progress.phase();
                let due = last
                    || self.health_asked[*i].is_none_or(|t| now.duration_since(t) >= HEALTH_EVERY);
                d.has_health && due && health::may_read(d.method, phase)
            })
            .map(|(i, d)| (i, d.held.path.clone()))
            .collect()
    }

    /// Drive `i` was asked for its health at `asked`; `h` is the reading
    /// (None: it did not answer, the last reading stays).
    pub fn set_health(&mut self, i: usize, asked: Instant, h: Option<DriveHealth>) {
        if let Some(t) = self.health_asked.get_mut(i) {
            *t = Some(asked);
        }
        if let (Some(slot), Some(h)) = (self.health.get_mut(i), h) {
            *slot = Some(h);
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

    /// The erase has ended with `outcomes` (by device path): each drive's
    /// phases are from then on the result's own figures: the erase's bytes
    /// and seconds, and the verification's bytes (the last point its
    /// timeline holds of the phase) and seconds. A phase too short to be
    /// seen while it ran is settled all the same.
    pub fn settle(&mut self, outcomes: &[drivelab_erase::Outcome]) {
        for (d, slot) in self.drives.iter().zip(self.settled.iter_mut()) {
            let Some(o) = outcomes.iter().find(|o| o.device == d.held.path) else {
                continue;
            };
            // A phase's last point, or the point after it when that is the
            // drive's end (done, failed, stopped): the phase's bytes stay in
            // the progress counters when the drive finishes.
            let tl = &o.timeline;
            let last = |word: &str| {
                let i = tl.iter().rposition(|p| p.phase == word)?;
                let p = match tl.get(i + 1) {
                    Some(n) if n.phase != "erasing" && n.phase != "verifying" => n,
                    _ => &tl[i],
                };
                Some((p.done_bytes, p.total_bytes))
            };
            let mut phases = Vec::new();
            if o.bytes > 0 || o.erase_seconds > 0.0 {
                let (done, total) = last("erasing").unwrap_or((o.bytes, o.bytes));
                phases.push(Settled {
                    phase: "erasing",
                    done: done.max(o.bytes + o.resumed_bytes),
                    total,
                    moved: o.bytes,
                    seconds: o.erase_seconds,
                });
            }
            if o.verify_seconds > 0.0 {
                if let Some((done, total)) = last("verifying") {
                    phases.push(Settled {
                        phase: "verifying",
                        done,
                        total,
                        moved: done,
                        seconds: o.verify_seconds,
                    });
                }
            }
            *slot = Some((phases, o.erase_seconds + o.verify_seconds));
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
        let mut hf = health::empty();
        for (d, h) in self.drives.iter().zip(&self.health) {
            if let Some(h) = h {
                health::push(&mut hf, &d.held, h);
            }
        }
        let mut held = Vec::new();
        for (((d, s), t), fin) in self
            .drives
            .iter()
            .zip(&self.seen)
            .zip(&self.temps)
            .zip(&self.settled)
        {
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
            if let Some((phases, secs)) = fin {
                elapsed.push(&dl, Value::Gauge(*secs));
                for p in phases {
                    let pl = [dl[0], dl[1], p.phase];
                    done_f.push(&pl, Value::Gauge(p.done as f64));
                    total_f.push(&pl, Value::Gauge(p.total as f64));
                    ratio.push(&pl, Value::Gauge(share(p.done, p.total)));
                    if p.seconds > 0.0 {
                        tput.push(&pl, Value::Gauge(p.moved as f64 / p.seconds));
                    }
                    eta.push(&pl, Value::Gauge(0.0));
                }
                continue;
            }
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
            ratio.push(&pl, Value::Gauge(share(done, total)));
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
        .into_iter()
        .chain(hf)
        .collect()
    }
}

/// `done` of `total` as a ratio 0..1 (0 of nothing).
fn share(done: u64, total: u64) -> f64 {
    if total > 0 {
        (done as f64 / total as f64).min(1.0)
    } else {
        0.0
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
            method: Method::Stream,
            has_health: false,
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
        assert_eq!(
            find(&f, &ERASE_STATE).unwrap().get(&l),
            Some(&Value::Gauge(1.0))
        );
        assert_eq!(
            find(&f, &ERASE_DONE).unwrap().get(&l),
            Some(&Value::Gauge(400.0))
        );
        assert_eq!(
            find(&f, &ERASE_PROGRESS).unwrap().get(&l),
            Some(&Value::Gauge(0.4))
        );
        let dl = ["loop9", ""];
        // 400 bytes in the 2 s since erasing began: 200 B/s, 3 s left.
        assert_eq!(
            find(&f, &ERASE_THROUGHPUT).unwrap().get(&l),
            Some(&Value::Gauge(200.0))
        );
        assert_eq!(
            find(&f, &ERASE_ETA).unwrap().get(&l),
            Some(&Value::Gauge(3.0))
        );
        assert_eq!(
            find(&f, &ERASE_ELAPSED).unwrap().get(&dl),
            Some(&Value::Gauge(2.0))
        );
        p.enter(Phase::Verifying, 0, 500);
        t.observe(t0 + Duration::from_secs(4));
        p.done.store(500, std::sync::atomic::Ordering::Relaxed);
        p.set_phase(Phase::Done);
        let f = t.families(t0 + Duration::from_secs(5), true);
        let last = ["loop9", "", "verifying"];
        assert_eq!(
            find(&f, &ERASE_PROGRESS).unwrap().get(&last),
            Some(&Value::Gauge(1.0))
        );
        assert_eq!(
            find(&f, &ERASE_STATE).unwrap().get(&["loop9", "", "done"]),
            Some(&Value::Gauge(1.0))
        );
        assert_eq!(
            find(&f, &ERASE_ETA).unwrap().get(&last),
            Some(&Value::Gauge(0.0))
        );
        // Elapsed stops when the drive finishes.
        let later = t.families(t0 + Duration::from_secs(50), true);
        assert_eq!(
            find(&later, &ERASE_ELAPSED).unwrap().get(&dl),
            Some(&Value::Gauge(4.0))
        );
    }

    #[test]
    fn a_verification_too_short_to_be_seen_is_settled_from_the_result() {
        let p = Arc::new(Progress::default());
        let mut t = Tracker::new(vec![EraseDrive {
            held: Held {
                path: "/dev/loop9".into(),
                device: "loop9".into(),
                serial: "S9".into(),
            },
            estimated_s: 3.0,
            progress: p.clone(),
            method: Method::Stream,
            has_health: false,
        }]);
        let t0 = Instant::now();
        p.enter(Phase::Erasing, 0, 4096);
        t.observe(t0);
        // Verification began and ended between two looks.
        p.enter(Phase::Verifying, 0, 2048);
        p.done.store(2048, std::sync::atomic::Ordering::Relaxed);
        p.set_phase(Phase::Done);
        let point = |phase: &'static str, done, total| drivelab_erase::outcome::TimelinePoint {
            t_s: 0.0,
            phase: phase.into(),
            done_bytes: done,
            total_bytes: total,
        };
        let o = drivelab_erase::Outcome {
            device: "/dev/loop9".into(),
            bytes: 4096,
            erase_seconds: 2.0,
            verify_seconds: 0.5,
            // The timeline's last look at verifying saw it half done.
            timeline: vec![
                point("erasing", 4096, 4096),
                point("verifying", 1024, 2048),
                point("done", 2048, 2048),
            ],
            ..Default::default()
        };
        t.settle(&[o]);
        let f = t.families(t0 + Duration::from_secs(9), true);
        let erasing = ["loop9", "S9", "erasing"];
        let verifying = ["loop9", "S9", "verifying"];
        let tput = find(&f, &ERASE_THROUGHPUT).unwrap();
        assert_eq!(tput.get(&erasing), Some(&Value::Gauge(2048.0)));
        assert_eq!(tput.get(&verifying), Some(&Value::Gauge(4096.0)));
        let ratio = find(&f, &ERASE_PROGRESS).unwrap();
        assert_eq!(ratio.get(&verifying), Some(&Value::Gauge(1.0)));
        assert_eq!(
            find(&f, &ERASE_DONE).unwrap().get(&erasing),
            Some(&Value::Gauge(4096.0))
        );
        assert_eq!(
            find(&f, &ERASE_ELAPSED).unwrap().get(&["loop9", "S9"]),
            Some(&Value::Gauge(2.5))
        );
    }
}
