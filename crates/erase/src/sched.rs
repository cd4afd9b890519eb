//! Sharing one host link among many drives: the bus limit, the round-robin
//! turn ([`Shared`] holds both), and the per-drive progress the display
//! reads.
//!
//! `--bus-limit` is a pacer shared by every drive thread: each command that
//! carries data reserves its bytes on one virtual clock before it is
//! submitted (GCRA: the reservation starts at `max(now, next_free)` and
//! moves `next_free` on by `bytes / rate`). A drive holds at most one
//! reservation at a time and reservations are served in arrival order, so
//! when every drive is bus-bound each gets one chunk per round (an equal
//! share), while a drive slower than its share simply asks less often and
//! the others use what it leaves (max-min fair). The round-robin strategy of
//! the thesis ("one command per disk, then change the disk") is a turn that
//! passes from drive to drive after each command.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::plan::Strategy;

/// What the drives of one erase share: the bus limit, the round-robin
/// turn, the stop flag (Ctrl-C), and how many drives write at once.
#[derive(Debug)]
pub struct Shared<'a> {
    /// `--bus-limit`, when given.
    pub bus: Option<BusLimiter>,
    /// The turn, under the round-robin strategy.
    pub turn: Option<Turn>,
    /// Set to stop every drive (its journal kept).
    pub stop: &'a AtomicBool,
    /// Drives writing at the same time (1 when sequential).
    pub drives: usize,
}

impl<'a> Shared<'a> {
    /// The sharing of `n` drives under `strategy`.
    pub fn new(
        strategy: Strategy,
        n: usize,
        bus_limit: Option<u64>,
        stop: &'a AtomicBool,
    ) -> Shared<'a> {
        Shared {
            bus: bus_limit.map(BusLimiter::new),
            turn: (strategy == Strategy::RoundRobin).then(|| Turn::new(n)),
            stop,
            drives: match strategy {
                Strategy::Sequential => 1,
                _ => n,
            },
        }
    }

    /// Whether the erase is being stopped.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Drive `i` is about to send a command carrying `bus_bytes` over the
    /// link: wait for its turn and its share of the bus. False when the
    /// erase was stopped while waiting: the command is not to be sent (a
    /// stop is noticed within [`STOP_POLL`]).
    pub fn before_command(&self, i: usize, bus_bytes: u64) -> bool {
        if let Some(t) = &self.turn {
            if !t.acquire(i, self.stop) {
                return false;
            }
        }
        if bus_bytes > 0 {
            if let Some(b) = &self.bus {
                return b.take(bus_bytes, self.stop);
            }
        }
        !self.stopped()
    }

    /// The most bytes one drive should have on the link at once: what the
    /// bus limit carries in [`BUS_WINDOW_NS`], shared by the drives writing
    /// together, in whole logical blocks of `lbs` (at least one); `None`
    /// without a limit. A command holds its reservation for as long as the
    /// bus needs to carry it, so a command larger than this would keep the
    /// drive (and a stop) waiting for seconds at a low limit.
    pub fn bus_budget(&self, lbs: u64) -> Option<u64> {
        let b = self.bus.as_ref()?;
        let lbs = lbs.max(1);
        let share =
            b.rate as u128 * u128::from(BUS_WINDOW_NS) / 1_000_000_000 / self.drives.max(1) as u128;
        let share = u64::try_from(share).unwrap_or(u64::MAX);
        Some((share / lbs).max(1) * lbs)
    }

    /// Drive `i` has sent its command: pass the turn on.
    pub fn after_command(&self, i: usize) {
        if let Some(t) = &self.turn {
            t.release(i);
        }
    }

    /// Drive `i` sends no more commands.
    pub fn finish(&self, i: usize) {
        if let Some(t) = &self.turn {
            t.finish(i);
        }
    }
}

/// How long a wait for the turn or the bus sleeps at most before looking
/// at the stop flag again.
pub const STOP_POLL: Duration = Duration::from_millis(100);

/// The window of bus time one drive's commands in flight may hold under
/// `--bus-limit`: a quarter second.
pub const BUS_WINDOW_NS: u64 = 250_000_000;

/// Caps the aggregate bytes per second of all drives sharing it.
#[derive(Debug)]
pub struct BusLimiter {
    rate: f64,
    burst_ns: u64,
    origin: Instant,
    next_free_ns: Mutex<u64>,
}

impl BusLimiter {
    /// A limiter of `bytes_per_sec` (> 0) for the aggregate.
    pub fn new(bytes_per_sec: u64) -> BusLimiter {
        BusLimiter {
            rate: bytes_per_sec.max(1) as f64,
            // Allow 20 ms of credit to build up, so a short pause in one
            // drive does not waste the link.
            burst_ns: 20_000_000,
            origin: Instant::now(),
            next_free_ns: Mutex::new(0),
        }
    }

    /// The configured rate, bytes per second.
    pub fn rate(&self) -> u64 {
        self.rate as u64
    }

    /// Reserve `bytes` and sleep until the reservation starts, looking at
    /// `stop` every [`STOP_POLL`]; false when stopped before then.
    pub fn take(&self, bytes: u64, stop: &AtomicBool) -> bool {
        let now = self.origin.elapsed().as_nanos() as u64;
        let start = self.reserve(now, bytes);
        loop {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = self.origin.elapsed().as_nanos() as u64;
            if now >= start {
                return true;
            }
            std::thread::sleep(Duration::from_nanos(start - now).min(STOP_POLL));
        }
    }

    /// Reserve `bytes` for a caller asking at `now` (ns since the
    /// limiter was made); returns when its transfer may start. Reservations
    /// follow each other at the rate; unused time older than the burst
    /// window is not credited.
    fn reserve(&self, now: u64, bytes: u64) -> u64 {
        let mut next = match self.next_free_ns.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let start = (*next).max(now.saturating_sub(self.burst_ns));
        *next = start + (bytes as f64 / self.rate * 1e9) as u64;
        start
    }
}

/// The round-robin turn: drive `i` may send a command only while it holds
/// the turn, which passes to the next unfinished drive when it is released.
#[derive(Debug)]
pub struct Turn {
    state: Mutex<(usize, Vec<bool>)>,
    cv: Condvar,
}

impl Turn {
    /// A turn over `n` drives, starting with drive 0.
    pub fn new(n: usize) -> Turn {
        Turn {
            state: Mutex::new((0, vec![true; n])),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, Vec<bool>)> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Wait until it is drive `i`'s turn, looking at `stop` every
    /// [`STOP_POLL`]; false when stopped first.
    pub fn acquire(&self, i: usize, stop: &AtomicBool) -> bool {
        let mut g = self.lock();
        while g.0 != i {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            g = match self.cv.wait_timeout(g, STOP_POLL) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        true
    }

    fn advance(g: &mut (usize, Vec<bool>)) {
        let n = g.1.len();
        for k in 1..=n {
            let j = (g.0 + k) % n;
            if g.1[j] {
                g.0 = j;
                return;
            }
        }
        g.0 = usize::MAX;
    }

    /// Drive `i` has sent its command: pass the turn on.
    pub fn release(&self, i: usize) {
        let mut g = self.lock();
        if g.0 == i {
            Self::advance(&mut g);
        }
        self.cv.notify_all();
    }

    /// Drive `i` is finished (done or failed): skip it from now on.
    pub fn finish(&self, i: usize) {
        let mut g = self.lock();
        if i < g.1.len() {
            g.1[i] = false;
        }
        if g.0 == i {
            Self::advance(&mut g);
        }
        self.cv.notify_all();
    }
}

/// Phase of one drive, for the progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Not started (sequential strategy: waiting for the drives before it).
    Waiting = 0,
    /// Writing / erasing.
    Erasing = 1,
    /// Reading back.
    Verifying = 2,
    /// Finished successfully (possibly with exceptions).
    Done = 3,
    /// Failed.
    Failed = 4,
    /// Stopped by Ctrl-C (journal kept).
    Stopped = 5,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            1 => Phase::Erasing,
            2 => Phase::Verifying,
            3 => Phase::Done,
            4 => Phase::Failed,
            5 => Phase::Stopped,
            _ => Phase::Waiting,
        }
    }

    /// Lower-case word.
    pub fn word(self) -> &'static str {
        match self {
            Phase::Waiting => "waiting",
            Phase::Erasing => "erasing",
            Phase::Verifying => "verifying",
            Phase::Done => "done",
            Phase::Failed => "FAILED",
            Phase::Stopped => "stopped",
        }
    }
}

/// Live counters of one drive, written by its worker and read by the
/// display (relaxed atomics; a slightly stale view is fine).
#[derive(Debug, Default)]
pub struct Progress {
    phase: AtomicU8,
    /// Bytes of the current phase done (erase: all passes; verify: read).
    pub done: AtomicU64,
    /// Bytes of the current phase in total.
    pub total: AtomicU64,
    /// Current transfer length, bytes (stream).
    pub transfer: AtomicU64,
    /// Current queue depth (stream).
    pub depth: AtomicU64,
}

impl Progress {
    /// The phase.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Relaxed))
    }

    /// Enter a phase with `total` bytes to do, `done` of them already done.
    pub fn enter(&self, p: Phase, done: u64, total: u64) {
        self.total.store(total, Ordering::Relaxed);
        self.done.store(done, Ordering::Relaxed);
        self.phase.store(p as u8, Ordering::Relaxed);
    }

    /// Set the phase only.
    pub fn set_phase(&self, p: Phase) {
        self.phase.store(p as u8, Ordering::Relaxed);
    }
}

/// Most points kept per drive by [`record_timeline`]: when full, every
/// other point is dropped and the sampling interval doubles, so a timeline
/// of any length stays this small and evenly spaced.
pub const TIMELINE_POINTS: usize = 512;

/// Sample every drive's progress until `finished` is set (first every
/// 10 ms, slower as the timeline fills, see [`TIMELINE_POINTS`]), then
/// once more. A drive still waiting gets no point; a point is added only
/// when its phase or bytes changed.
pub fn record_timeline(
    progress: &[std::sync::Arc<Progress>],
    finished: &std::sync::atomic::AtomicBool,
) -> Vec<Vec<crate::outcome::TimelinePoint>> {
    let t0 = Instant::now();
    let mut every = Duration::from_millis(10);
    let mut lines: Vec<Vec<crate::outcome::TimelinePoint>> =
        progress.iter().map(|_| Vec::new()).collect();
    loop {
        let last = finished.load(Ordering::Relaxed);
        let t_s = t0.elapsed().as_secs_f64();
        for (p, line) in progress.iter().zip(lines.iter_mut()) {
            let phase = p.phase();
            if phase == Phase::Waiting {
                continue;
            }
            let point = crate::outcome::TimelinePoint {
                t_s,
                phase: phase.word().into(),
                done_bytes: p.done.load(Ordering::Relaxed),
                total_bytes: p.total.load(Ordering::Relaxed),
            };
            let changed = line
                .last()
                .is_none_or(|q| q.phase != point.phase || q.done_bytes != point.done_bytes);
            if changed || last {
                line.push(point);
            }
        }
        if lines.iter().any(|l| l.len() >= TIMELINE_POINTS) {
            for l in &mut lines {
                let keep_last = l.last().cloned();
                let mut i = 0;
                l.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                if let (Some(k), Some(now)) = (keep_last, l.last()) {
                    if now.t_s != k.t_s {
                        l.push(k);
                    }
                }
            }
            every *= 2;
        }
        if last {
            return lines;
        }
        let until = Instant::now() + every;
        loop {
            let now = Instant::now();
            if now >= until || finished.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn timeline_follows_progress_and_ends_with_the_final_state() {
        let p = Arc::new(Progress::default());
        let finished = std::sync::atomic::AtomicBool::new(false);
        let progress = vec![p.clone(), Arc::new(Progress::default())];
        let lines = std::thread::scope(|s| {
            let rec = s.spawn(|| record_timeline(&progress, &finished));
            p.enter(Phase::Erasing, 0, 1000);
            for i in 1..=5u64 {
                std::thread::sleep(Duration::from_millis(120));
                p.done.store(i * 200, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(150));
            p.enter(Phase::Verifying, 0, 1000);
            std::thread::sleep(Duration::from_millis(150));
            p.done.store(1000, Ordering::Relaxed);
            p.set_phase(Phase::Done);
            std::thread::sleep(Duration::from_millis(150));
            finished.store(true, Ordering::Relaxed);
            rec.join().unwrap()
        });
        // The second drive never left "waiting": no points.
        assert!(lines[1].is_empty());
        let l = &lines[0];
        assert!(l.windows(2).all(|w| w[0].t_s <= w[1].t_s));
        assert!(l
            .iter()
            .any(|q| q.phase == "erasing" && q.done_bytes == 1000));
        assert!(l.iter().any(|q| q.phase == "verifying"));
        let end = l.last().unwrap();
        assert_eq!((end.phase.as_ref(), end.done_bytes), ("done", 1000));
        // Within a phase, bytes done only grow.
        assert!(l
            .windows(2)
            .filter(|w| w[0].phase == w[1].phase)
            .all(|w| w[0].done_bytes <= w[1].done_bytes));
    }

    #[test]
    fn bus_limiter_caps_the_aggregate_and_shares_it() {
        // 256 KiB reservations through a 20 MiB/s limit: 12.5 ms apiece.
        let lim = BusLimiter::new(20 << 20);
        let slot = 12_500_000u64;
        // Three drives asking at once, round after round: each gets the
        // next slot in turn, so the aggregate is the rate and the shares
        // are equal (every drive's k-th start is within one round).
        let mut starts = vec![Vec::new(); 3];
        for _ in 0..16 {
            for s in starts.iter_mut() {
                s.push(lim.reserve(0, 256 << 10));
            }
        }
        let all: Vec<u64> = (0..16)
            .flat_map(|k| (0..3).map(move |d| (k, d)))
            .map(|(k, d)| starts[d][k])
            .collect();
        for (i, w) in all.windows(2).enumerate() {
            assert_eq!(w[1] - w[0], slot, "reservation {i}");
        }
        for (k, (lo, hi)) in starts[0].iter().zip(&starts[2]).enumerate() {
            assert!(hi - lo < 3 * slot, "round {k}: {lo}..{hi}");
        }
        // 48 reservations of 256 KiB = 12 MiB take 0.6 s at 20 MiB/s.
        assert_eq!(all[47] + slot, 48 * slot);
        // An idle link credits at most the burst window: a caller arriving
        // 1 s after the last reservation ended starts 20 ms in the past,
        // not at the end of the old schedule.
        let later = 48 * slot + 1_000_000_000;
        assert_eq!(lim.reserve(later, 256 << 10), later - 20_000_000);
        // And the next one queues right behind it.
        assert_eq!(lim.reserve(later, 256 << 10), later - 20_000_000 + slot);
    }

    #[test]
    fn turn_visits_drives_in_order_and_skips_finished_ones() {
        let turn = Arc::new(Turn::new(3));
        let log = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let turn = turn.clone();
                let log = log.clone();
                std::thread::spawn(move || {
                    // Drive 1 sends one command, the others three.
                    let n = if i == 1 { 1 } else { 3 };
                    for _ in 0..n {
                        assert!(turn.acquire(i, &AtomicBool::new(false)));
                        log.lock().unwrap().push(i);
                        turn.release(i);
                    }
                    turn.finish(i);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*log.lock().unwrap(), vec![0, 1, 2, 0, 2, 0, 2]);
    }
}
