//! `--metrics-listen ADDR` and `--metrics-linger TIME` on the command line:
//! the endpoint bound before any I/O (an address that cannot be bound is
//! bad input, exit status 2), the figures published as the work goes, and
//! the endpoint kept up after the work so the last scrape sees the final
//! figures. The endpoint and the figures are `drivelab_metrics`'.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use drivelab_metrics::model::{info, run::finished_family, Family};
use drivelab_metrics::serve::Endpoint;

use crate::error::usage;

/// How often a run's figures are refreshed at most (a status snapshot of
/// every job).
pub const EVERY: Duration = Duration::from_secs(1);

/// The `run` flags' help (the other commands declare theirs with clap).
pub const LISTEN_HELP: &str = "serve live figures for Prometheus at http://ADDR/metrics while the work runs (ADDR: PORT on loopback, or HOST:PORT); see docs/metrics.md";
/// `--metrics-linger`'s help.
pub const LINGER_HELP: &str = "with --metrics-listen: keep serving the final figures for TIME (s when bare) after the work ends, so the last scrape sees them";

/// A live endpoint and how long it stays up after the work.
pub struct Live {
    endpoint: Endpoint,
    /// An erase's drives, followed by [`watch_erase`] and settled by
    /// [`Live::settle_erase`].
    erase: std::sync::Mutex<Option<drivelab_metrics::model::erase::Tracker>>,
    /// A season's drives as last seen by [`watch_season`].
    season: std::sync::Mutex<Vec<(String, drivelab_season::StageFigures)>>,
    /// The season's drives' last health figures.
    season_health: std::sync::Mutex<Vec<Family>>,
    linger: Option<Duration>,
    /// Whether notes go to stderr (not in machine-readable modes).
    notes: bool,
}

impl Live {
    /// Bind `listen` for `command`, serving who serves (drivelab's
    /// build) until the first figures; None without `--metrics-listen`. `--metrics-linger`
    /// without it is bad input.
    pub fn start(
        listen: Option<&str>,
        linger: Option<Duration>,
        command: &str,
        notes: bool,
    ) -> anyhow::Result<Option<Live>> {
        let Some(listen) = listen else {
            if linger.is_some() {
                return Err(usage(
                    "--metrics-linger needs --metrics-listen ADDR (the endpoint to keep up)",
                ));
            }
            return Ok(None);
        };
        let endpoint = Endpoint::bind(listen).map_err(|e| usage(e.to_string()))?;
        endpoint
            .latest()
            .set(vec![info::build(command), finished_family(false)]);
        if notes {
            eprintln!("drivelab: metrics at http://{}/metrics", endpoint.addr());
        }
        Ok(Some(Live {
            endpoint,
            erase: std::sync::Mutex::new(None),
            season: std::sync::Mutex::new(Vec::new()),
            season_health: std::sync::Mutex::new(Vec::new()),
            linger,
            notes,
        }))
    }

    /// [`Live::start`] from a command's `--metrics-listen` and
    /// `--metrics-linger` as typed.
    pub fn from_args(
        listen: Option<&str>,
        linger: Option<&str>,
        command: &str,
        notes: bool,
    ) -> anyhow::Result<Option<Live>> {
        let linger = match linger {
            Some(v) => Some(crate::progress::parse_interval("--metrics-linger", v)?),
            None => None,
        };
        Live::start(listen, linger, command, notes)
    }

    /// The season has ended: publish its last figures as final.
    pub fn settle_season(&self) {
        let last = self.season.lock().unwrap_or_else(|p| p.into_inner());
        let mut fams = drivelab_metrics::model::season::families(&last, true);
        fams.extend(
            self.season_health
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        self.publish(fams);
    }

    /// Serve `families` from now on.
    pub fn publish(&self, families: Vec<Family>) {
        self.endpoint.latest().set(families);
    }

    fn tracker(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<drivelab_metrics::model::erase::Tracker>> {
        self.erase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The erase has ended with `outcomes`: read the health of every drive
    /// that has its own (the drives are idle now), then publish the final
    /// figures, settled from the result.
    pub fn settle_erase(&self, outcomes: &[drivelab_erase::Outcome]) {
        self.read_health(true);
        if let Some(t) = self.tracker().as_mut() {
            t.settle(outcomes);
            self.publish(t.families(Instant::now(), true));
        }
    }

    /// The test sequence has ended with `steps`: publish its final figures.
    pub fn settle_test(
        &self,
        plans: &[drivelab_steps::StepPlan],
        steps: &[drivelab_steps::StepResult],
        held: Option<&drivelab_metrics::model::info::Held>,
    ) {
        use drivelab_metrics::model::steps::{families, Sequence};
        let seq = Sequence {
            plans,
            finished: steps,
            running_blocks: 0,
            held,
        };
        self.publish(families(&seq, true));
    }

    /// Ask the erase's drives whose health is due (every one that has
    /// health with `last`) at once, each on its own thread, and keep the
    /// readings; the tracker is not held while the drives answer.
    fn read_health(&self, last: bool) {
        use drivelab_metrics::model::health::DriveHealth;
        let now = Instant::now();
        let due = match self.tracker().as_ref() {
            Some(t) => t.health_due(now, last),
            None => return,
        };
        std::thread::scope(|s| {
            for (i, path) in due {
                s.spawn(move || {
                    let h = drivelab_device::health::health(std::path::Path::new(&path), None)
                        .ok()
                        .map(|h| DriveHealth::of(&h));
                    if let Some(t) = self.tracker().as_mut() {
                        t.set_health(i, now, h);
                    }
                });
            }
        });
    }

    /// The replay has ended with `r`: publish its final figures (the
    /// report's own counters; the trace's size from `progress`).
    pub fn settle_replay(
        &self,
        r: &drivelab_replay::ReplayReport,
        progress: &drivelab_replay::Progress,
    ) {
        use drivelab_metrics::model::replay::{families, Figures};
        self.publish(families(&Figures::of_report(r, progress), true));
    }

    /// Keep serving for `--metrics-linger`, or until `stop` (Ctrl-C).
    pub fn linger(&self, stop: &AtomicBool) {
        let Some(d) = self.linger else { return };
        if self.notes {
            eprintln!(
                "drivelab: serving the final figures at http://{}/metrics for {:.0?} (Ctrl-C ends it)",
                self.endpoint.addr(),
                d
            );
        }
        let until = Instant::now() + d;
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= until {
                break;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(100)));
        }
    }
}

/// How often an erase's phases are looked at (as often as the erase's own
/// timeline samples at first: a short verification is still seen).
const ERASE_LOOK: Duration = Duration::from_millis(10);

/// How often an erase's figures are published.
const ERASE_EVERY: Duration = Duration::from_millis(250);

/// Publish an erase's figures until `finished` is set (run beside the
/// progress line, on the erase's watch thread); [`Live::settle_erase`]
/// publishes the final ones.
pub fn watch_erase(
    live: &Live,
    drives: &[drivelab_erase::Drive],
    opts: &drivelab_erase::Options,
    progress: &[std::sync::Arc<drivelab_erase::sched::Progress>],
    finished: &AtomicBool,
) {
    use drivelab_metrics::model::erase::{EraseDrive, Tracker};
    let n = drives.len();
    let t = Tracker::new(
        drives
            .iter()
            .zip(progress)
            .map(|(d, p)| EraseDrive::of(d, opts, n, p.clone()))
            .collect(),
    );
    *live.tracker() = Some(t);
    std::thread::scope(|s| {
        s.spawn(|| watch_health(live, finished));
        publish_erase(live, finished);
    });
}

/// Read the erase's drives' health as it falls due, until `finished`.
fn watch_health(live: &Live, finished: &AtomicBool) {
    while !finished.load(Ordering::Acquire) {
        live.read_health(false);
        let t0 = Instant::now();
        while t0.elapsed() < EVERY && !finished.load(Ordering::Acquire) {
            std::thread::sleep(ERASE_LOOK);
        }
    }
}

/// Publish the erase's figures every [`ERASE_EVERY`] until `finished`.
fn publish_erase(live: &Live, finished: &AtomicBool) {
    let mut published = Instant::now() - ERASE_EVERY;
    loop {
        let over = finished.load(Ordering::Acquire);
        let now = Instant::now();
        if let Some(t) = live.tracker().as_mut() {
            t.observe(now);
            if over || now.duration_since(published) >= ERASE_EVERY {
                live.publish(t.families(now, false));
                published = now;
            }
        }
        if over {
            return;
        }
        std::thread::sleep(ERASE_LOOK);
    }
}

/// What is known of a seasoned drive's health: when it was last asked,
/// whether it has none of its own (its first reading failed), and the
/// last reading.
#[derive(Default)]
struct SeasonHealth {
    asked: Option<Instant>,
    none: bool,
    last: Option<drivelab_metrics::model::health::DriveHealth>,
}

/// Publish a season's figures every [`ERASE_EVERY`], and when a drive
/// changes stage, until `finished` is set (on the season's watch thread,
/// beside the progress lines), with
/// each drive's health as [`season_health`] reads it.
pub fn watch_season(
    live: &Live,
    status: &[std::sync::Arc<drivelab_season::Status>],
    finished: &AtomicBool,
) {
    use drivelab_metrics::model::health;
    let slots: Vec<std::sync::Mutex<SeasonHealth>> =
        status.iter().map(|_| Default::default()).collect();
    std::thread::scope(|s| {
        s.spawn(|| season_health(status, &slots, finished));
        loop {
            let over = finished.load(Ordering::Acquire);
            let now: Vec<(String, drivelab_season::StageFigures)> = status
                .iter()
                .map(|s| {
                    let name = s.device.rsplit('/').next().unwrap_or(&s.device);
                    (name.to_string(), s.figures())
                })
                .collect();
            let mut fams = drivelab_metrics::model::season::families(&now, false);
            let mut hf = health::empty();
            for ((name, _), slot) in now.iter().zip(&slots) {
                let slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(h) = &slot.last {
                    health::push_as(&mut hf, name, &h.serial, h);
                }
            }
            *live.season_health.lock().unwrap_or_else(|p| p.into_inner()) = hf.to_vec();
            fams.extend(hf);
            live.publish(fams);
            *live.season.lock().unwrap_or_else(|p| p.into_inner()) = now;
            if over {
                return;
            }
            // Every ERASE_EVERY, and at once when a drive changes stage:
            // a short stage is served while it lasts.
            let stages = stage_words(status);
            let t0 = Instant::now();
            while t0.elapsed() < ERASE_EVERY
                && !finished.load(Ordering::Acquire)
                && stage_words(status) == stages
            {
                std::thread::sleep(ERASE_LOOK);
            }
        }
    });
}

/// Each seasoned drive's stage, as its progress line names it.
fn stage_words(status: &[std::sync::Arc<drivelab_season::Status>]) -> Vec<String> {
    status.iter().map(|s| s.figures().stage).collect()
}

/// Read each seasoned drive's health every [`HEALTH_EVERY`] while its
/// stage allows it, until `finished`; a drive whose first reading fails
/// (a loop device) is not asked again.
///
/// [`HEALTH_EVERY`]: drivelab_metrics::model::health::HEALTH_EVERY
fn season_health(
    status: &[std::sync::Arc<drivelab_season::Status>],
    slots: &[std::sync::Mutex<SeasonHealth>],
    finished: &AtomicBool,
) {
    use drivelab_metrics::model::health::{may_read_seasoning, DriveHealth, HEALTH_EVERY};
    while !finished.load(Ordering::Acquire) {
        for (st, slot) in status.iter().zip(slots) {
            let stage = st.figures().stage;
            let word = stage.split_whitespace().next().unwrap_or("");
            let due = {
                let s = slot.lock().unwrap_or_else(|p| p.into_inner());
                !s.none && s.asked.is_none_or(|t| t.elapsed() >= HEALTH_EVERY)
            };
            if !due || !may_read_seasoning(word) {
                continue;
            }
            let read = drivelab_device::health::health(std::path::Path::new(&st.device), None);
            let mut s = slot.lock().unwrap_or_else(|p| p.into_inner());
            match read {
                Ok(h) => s.last = Some(DriveHealth::of(&h)),
                Err(_) if s.asked.is_none() => s.none = true,
                Err(_) => {}
            }
            s.asked = Some(Instant::now());
        }
        let t0 = Instant::now();
        while t0.elapsed() < EVERY && !finished.load(Ordering::Acquire) {
            std::thread::sleep(ERASE_LOOK);
        }
    }
}

/// Publish a replay's figures every [`EVERY`] until `finished` is set
/// (on a thread beside the replay), from the counters it copies into
/// `progress` once per turn of its loop.
pub fn watch_replay(live: &Live, progress: &drivelab_replay::Progress, finished: &AtomicBool) {
    use drivelab_metrics::model::replay::{families, Figures};
    while !finished.load(Ordering::Acquire) {
        live.publish(families(&Figures::of_progress(progress), false));
        let t0 = Instant::now();
        while t0.elapsed() < EVERY && !finished.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Publish a test sequence's figures every [`EVERY`] until `finished` is
/// set (on a thread beside the steps): the steps finished so far are
/// `done`, the running one's blocks `progress`.
pub fn watch_test(
    live: &Live,
    plans: &[drivelab_steps::StepPlan],
    done: &std::sync::Mutex<Vec<drivelab_steps::StepResult>>,
    progress: &std::sync::atomic::AtomicU64,
    held: Option<&drivelab_metrics::model::info::Held>,
    finished: &AtomicBool,
) {
    use drivelab_metrics::model::steps::{families, Sequence};
    while !finished.load(Ordering::Acquire) {
        let figures = {
            let done = done.lock().unwrap_or_else(|p| p.into_inner());
            let seq = Sequence {
                plans,
                finished: &done,
                running_blocks: progress.load(Ordering::Relaxed),
                held,
            };
            families(&seq, false)
        };
        live.publish(figures);
        let t0 = Instant::now();
        while t0.elapsed() < EVERY && !finished.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The status snapshot interval when metrics are served, given the user's
/// own `--status-interval`: the user's interval cut into the fewest equal
/// parts of at most [`EVERY`], and how many parts make one of the user's
/// snapshots (0: the user asked for none). Every part refreshes the
/// figures; every n-th is also printed, so the user's snapshots keep their
/// times.
pub fn ticks(user: Option<Duration>) -> (Duration, u32) {
    let Some(u) = user else { return (EVERY, 0) };
    let n = u.as_nanos().div_ceil(EVERY.as_nanos()).max(1);
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    (u / n, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_status_interval_is_cut_into_parts_of_at_most_a_second() {
        let ms = Duration::from_millis;
        assert_eq!(ticks(None), (ms(1000), 0));
        assert_eq!(ticks(Some(ms(200))), (ms(200), 1));
        assert_eq!(ticks(Some(ms(1000))), (ms(1000), 1));
        assert_eq!(
            ticks(Some(ms(2500))),
            (Duration::from_nanos(833_333_333), 3)
        );
        assert_eq!(ticks(Some(ms(5000))), (ms(1000), 5));
        assert_eq!(ticks(Some(ms(1001))), (Duration::from_micros(500_500), 2));
    }
}
