//! The per-job figures fio reports beside the latency statistics, each
//! gathered on the job thread in constant memory:
//!
//! - bandwidth and IOPS *samples*: fio measures each direction's rate over
//!   every `bwavgtime` / `iopsavgtime` window (500 ms by default, fio's
//!   HOWTO) and reports the samples' min, max, mean, standard deviation and
//!   count (`bw_min` … `iops_samples`). As in fio's `__add_samples`, a window
//!   in which a direction moved nothing adds no sample for it, bandwidth is
//!   in KiB/s and both rates are whole numbers (integer division);
//! - the latency distribution (`latency_ns`/`_us`/`_ms`): the share of I/Os
//!   whose latency falls in each of fio's ranges (`io_u_mark_lat_*`): key
//!   `K` counts values from the previous key up to, not including, `K`;
//! - the I/O depth distributions (`iodepth_level`, `iodepth_submit`,
//!   `iodepth_complete`): the depth each I/O was submitted at, and how many
//!   I/Os each turn of the loop submitted and reaped (one turn is one
//!   submitting and reaping system call, fio's submit and getevents calls).
//!   As fio's `td_io_commit` does, every I/O of a turn's batch counts at
//!   the depth once the whole batch is in flight: a loop that refills 4
//!   free slots of 8 submits all 4 at depth 8, not at 5, 6, 7 and 8.

use drivelab_stats::Welford;

/// fio's default `bwavgtime` and `iopsavgtime`, ms.
pub const FIO_AVG_MSEC: u64 = 500;

/// Statistics of one kind of rate sample (fio's `struct io_stat`).
#[derive(Debug, Clone, Default)]
pub struct SampleStat {
    /// The samples' moments.
    pub moments: Welford,
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
}

impl SampleStat {
    /// Add one sample.
    pub fn record(&mut self, v: u64) {
        if self.moments.count() == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.moments.record(v as f64);
    }

    /// Pool another job's samples (fio's `sum_stat`).
    pub fn merge(&mut self, o: &SampleStat) {
        if o.moments.count() == 0 {
            return;
        }
        if self.moments.count() == 0 {
            *self = o.clone();
            return;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.moments.merge(&o.moments);
    }

    /// Number of samples.
    pub fn samples(&self) -> u64 {
        self.moments.count()
    }
}

/// One closed window's rates, per direction (read, write, trim): KiB/s and
/// I/O per second; None for a direction that moved nothing in it.
pub type WindowRates = [Option<(u64, u64)>; 3];

/// Rates over fixed windows of measured time.
#[derive(Debug, Clone)]
pub struct RateSampler {
    window_ns: u64,
    /// End of the open window, ns after the start of measurement.
    next_ns: u64,
    bytes: [u64; 3],
    ios: [u64; 3],
    /// Bandwidth samples per direction, KiB/s.
    pub bw: [SampleStat; 3],
    /// IOPS samples per direction.
    pub iops: [SampleStat; 3],
    /// Bandwidth samples of the three directions together, KiB/s (fio's
    /// samples under `unified_rw_reporting`): a window in which any
    /// direction moved adds one.
    pub mixed_bw: SampleStat,
    /// IOPS samples of the three directions together.
    pub mixed_iops: SampleStat,
}

impl RateSampler {
    /// A sampler over windows of `window_ms` (at least 1).
    pub fn new(window_ms: u64) -> RateSampler {
        let window_ns = window_ms.max(1) * 1_000_000;
        RateSampler {
            window_ns,
            next_ns: window_ns,
            bytes: [0; 3],
            ios: [0; 3],
            bw: Default::default(),
            iops: Default::default(),
            mixed_bw: SampleStat::default(),
            mixed_iops: SampleStat::default(),
        }
    }

    /// The window length, ms.
    pub fn window_ms(&self) -> u64 {
        self.window_ns / 1_000_000
    }

    /// Whether an I/O completing at `t_ns` (after the start of measurement)
    /// falls past the open window, so [`RateSampler::close`] is due first.
    #[inline]
    pub fn due(&self, t_ns: u64) -> bool {
        t_ns >= self.next_ns
    }

    /// Close the open window: add each direction's sample and return the
    /// rates with the window's end (ms after the start of measurement).
    pub fn close(&mut self) -> (u64, WindowRates) {
        let spent_ms = self.window_ns / 1_000_000;
        let mut out: WindowRates = [None; 3];
        for (d, slot) in out.iter_mut().enumerate() {
            if self.bytes[d] == 0 && self.ios[d] == 0 {
                continue;
            }
            let bw = self.bytes[d] * 1000 / spent_ms / 1024;
            let iops = self.ios[d] * 1000 / spent_ms;
            self.bw[d].record(bw);
            self.iops[d].record(iops);
            *slot = Some((bw, iops));
        }
        let (bytes, ios): (u64, u64) = (self.bytes.iter().sum(), self.ios.iter().sum());
        if bytes > 0 || ios > 0 {
            self.mixed_bw.record(bytes * 1000 / spent_ms / 1024);
            self.mixed_iops.record(ios * 1000 / spent_ms);
        }
        self.bytes = [0; 3];
        self.ios = [0; 3];
        let end_ms = self.next_ns / 1_000_000;
        self.next_ns += self.window_ns;
        (end_ms, out)
    }

    /// Count a completed I/O of direction `dir` (0 read, 1 write, 2 trim).
    #[inline]
    pub fn add(&mut self, dir: usize, bytes: u64) {
        self.bytes[dir] += bytes;
        self.ios[dir] += 1;
    }

    /// Pool another job's samples.
    pub fn merge(&mut self, o: &RateSampler) {
        for d in 0..3 {
            self.bw[d].merge(&o.bw[d]);
            self.iops[d].merge(&o.iops[d]);
        }
        self.mixed_bw.merge(&o.mixed_bw);
        self.mixed_iops.merge(&o.mixed_iops);
    }
}

/// fio's latency ranges: upper bounds (exclusive) of `latency_ns` and
/// `latency_us` (in their unit), and of `latency_ms` (the last, `>=2000`,
/// takes the rest).
pub const LAT_BOUNDS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
/// `latency_ms` keys beyond [`LAT_BOUNDS`]: 2000 and `>=2000`.
pub const LAT_MS_EXTRA: [u64; 1] = [2000];

/// Counts of I/Os per fio latency range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatBuckets {
    /// Below 1 µs, by [`LAT_BOUNDS`] in ns.
    pub ns: [u64; 10],
    /// 1 µs to 1 ms, by [`LAT_BOUNDS`] in µs.
    pub us: [u64; 10],
    /// 1 ms and above: [`LAT_BOUNDS`] in ms, then 2000 ms, then more.
    pub ms: [u64; 12],
}

fn range_index(v: u64) -> usize {
    // v < 1000 here.
    LAT_BOUNDS.iter().position(|&b| v < b).unwrap_or(9)
}

impl LatBuckets {
    /// Count one latency, ns.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        if ns < 1000 {
            self.ns[range_index(ns)] += 1;
        } else if ns < 1_000_000 {
            self.us[range_index(ns / 1000)] += 1;
        } else {
            let ms = ns / 1_000_000;
            let i = if ms < 1000 {
                range_index(ms)
            } else if ms < 2000 {
                10
            } else {
                11
            };
            self.ms[i] += 1;
        }
    }

    /// Add another job's counts.
    pub fn merge(&mut self, o: &LatBuckets) {
        for (a, b) in self.ns.iter_mut().zip(&o.ns) {
            *a += b;
        }
        for (a, b) in self.us.iter_mut().zip(&o.us) {
            *a += b;
        }
        for (a, b) in self.ms.iter_mut().zip(&o.ms) {
            *a += b;
        }
    }
}

/// Keys of `iodepth_level`; the index of a depth is that of the largest
/// key not above it (`>=64` from 64 on).
pub const DEPTH_LEVEL_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
/// Keys of `iodepth_submit` and `iodepth_complete`: the number of I/Os a
/// call moved, up to and including the key (`0` for none, `>=64` above 64).
pub const DEPTH_BATCH_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

fn level_index(depth: u32) -> usize {
    match depth {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

fn batch_index(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// The I/O depth distributions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DepthStats {
    /// I/Os by the depth they were submitted at ([`DEPTH_LEVEL_KEYS`]).
    pub level: [u64; 7],
    /// Turns by the number of I/Os submitted in them ([`DEPTH_BATCH_KEYS`]).
    pub submit: [u64; 7],
    /// Turns by the number of I/Os reaped in them ([`DEPTH_BATCH_KEYS`]).
    pub complete: [u64; 7],
    issued: u32,
    reaped: u32,
    /// In flight after the turn's last I/O was queued.
    depth: u32,
}

impl DepthStats {
    /// An I/O queued with `depth` I/Os in flight counting itself.
    #[inline]
    pub fn queued(&mut self, depth: u32) {
        self.issued += 1;
        self.depth = depth;
    }

    /// An I/O reaped.
    #[inline]
    pub fn reaped(&mut self) {
        self.reaped += 1;
    }

    /// The end of a turn of the loop: count its submit and reap batches.
    #[inline]
    pub fn turn(&mut self) {
        if self.issued > 0 {
            self.submit[batch_index(self.issued)] += 1;
            self.level[level_index(self.depth)] += u64::from(self.issued);
        }
        if self.reaped > 0 {
            self.complete[batch_index(self.reaped)] += 1;
        }
        self.issued = 0;
        self.reaped = 0;
    }

    /// Start counting afresh (the end of the ramp).
    pub fn reset(&mut self) {
        *self = DepthStats::default();
    }

    /// Add another job's counts.
    pub fn merge(&mut self, o: &DepthStats) {
        for (a, b) in self.level.iter_mut().zip(&o.level) {
            *a += b;
        }
        for (a, b) in self.submit.iter_mut().zip(&o.submit) {
            *a += b;
        }
        for (a, b) in self.complete.iter_mut().zip(&o.complete) {
            *a += b;
        }
    }
}

/// Page faults of the calling thread so far: (minor, major), from
/// `/proc/thread-self/stat` (fields 10 and 12, proc(5)); zeros when it
/// cannot be read.
pub fn thread_faults() -> (u64, u64) {
    let Ok(s) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return (0, 0);
    };
    // The command name may hold spaces: fields count from after its ')'.
    let Some(rest) = s.rfind(')').map(|i| &s[i + 1..]) else {
        return (0, 0);
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): field N is f[N - 3].
    let num = |n: usize| f.get(n - 3).and_then(|v| v.parse().ok()).unwrap_or(0);
    (num(10), num(12))
}

/// Everything of this module for one job.
#[derive(Debug, Clone)]
pub struct JobSamples {
    /// Bandwidth and IOPS samples.
    pub rates: RateSampler,
    /// Latency ranges.
    pub lat: LatBuckets,
    /// Depth distributions.
    pub depth: DepthStats,
    /// Minor page faults of the job's thread.
    pub minf: u64,
    /// Major page faults.
    pub majf: u64,
    /// Wall time of the job from its start (ramp included), ns.
    pub elapsed_ns: u64,
}

impl JobSamples {
    /// Empty, with rate windows of `window_ms`.
    pub fn new(window_ms: u64) -> JobSamples {
        JobSamples {
            rates: RateSampler::new(window_ms),
            lat: LatBuckets::default(),
            depth: DepthStats::default(),
            minf: 0,
            majf: 0,
            elapsed_ns: 0,
        }
    }

    /// Pool another job's figures (group_reporting).
    pub fn merge(&mut self, o: &JobSamples) {
        self.rates.merge(&o.rates);
        self.lat.merge(&o.lat);
        self.depth.merge(&o.depth);
        self.minf += o.minf;
        self.majf += o.majf;
        self.elapsed_ns = self.elapsed_ns.max(o.elapsed_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_give_fio_integer_rates_and_skip_idle_directions() {
        let mut s = RateSampler::new(500);
        // 100 reads of 4 KiB in the first 500 ms: 800 KiB/s, 200 IOPS.
        for _ in 0..100 {
            s.add(0, 4096);
        }
        assert!(!s.due(499_999_999));
        assert!(s.due(500_000_000));
        let (end, r) = s.close();
        assert_eq!(end, 500);
        assert_eq!(r, [Some((800, 200)), None, None]);
        // 3 writes of 1000 bytes: 3000 * 1000 / 500 / 1024 = 5 (rounded down).
        for _ in 0..3 {
            s.add(1, 1000);
        }
        let (end, r) = s.close();
        assert_eq!(end, 1000);
        assert_eq!(r, [None, Some((5, 6)), None]);
        assert_eq!(s.bw[0].samples(), 1);
        assert_eq!(s.bw[1].samples(), 1);
        assert_eq!((s.iops[1].min, s.iops[1].max), (6, 6));
    }

    #[test]
    fn latency_ranges_follow_fios_boundaries() {
        let mut b = LatBuckets::default();
        for v in [
            0,
            1,
            2,
            999,
            1_000,
            1_999,
            2_000,
            999_999,
            1_000_000,
            1_999_999_999,
            2_000_000_000,
            u64::MAX,
        ] {
            b.record(v);
        }
        assert_eq!(b.ns[0], 2); // 0, 1: below 2 ns
        assert_eq!(b.ns[1], 1); // 2
        assert_eq!(b.ns[9], 1); // 999
        assert_eq!(b.us[0], 2); // 1.000 and 1.999 µs: below 2 µs
        assert_eq!(b.us[1], 1); // 2 µs
        assert_eq!(b.us[9], 1); // 999.999 µs
        assert_eq!(b.ms[0], 1); // 1 ms
        assert_eq!(b.ms[10], 1); // 1999 ms: below 2000
        assert_eq!(b.ms[11], 2); // 2000 ms and more
    }

    #[test]
    fn depth_buckets_are_fios() {
        // One turn per depth: each I/O alone in its batch.
        let mut d = DepthStats::default();
        for depth in [1, 2, 3, 4, 16, 63, 64, 1000] {
            d.queued(depth);
            d.turn();
        }
        assert_eq!(d.level, [1, 2, 1, 0, 1, 1, 2]);
        assert_eq!(d.submit, [0, 8, 0, 0, 0, 0, 0]);
        // 8 submitted in one turn: the "8" batch; 1 reaped: the "4" batch.
        let mut d = DepthStats::default();
        for depth in 1..=8 {
            d.queued(depth);
        }
        d.reaped();
        d.turn();
        assert_eq!(d.submit, [0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(d.complete, [0, 1, 0, 0, 0, 0, 0]);
        // As fio's td_io_commit: the whole batch counts at the depth it
        // reached, 8, not at 1 to 8.
        assert_eq!(d.level, [0, 0, 0, 8, 0, 0, 0]);
        // Refilling 4 of 8 slots: 4 more at depth 8.
        for depth in 5..=8 {
            d.queued(depth);
        }
        d.turn();
        assert_eq!(d.level, [0, 0, 0, 12, 0, 0, 0]);
        // An idle turn counts nothing.
        d.turn();
        assert_eq!(d.submit.iter().sum::<u64>(), 2);
        assert_eq!(d.level.iter().sum::<u64>(), 12);
    }

    #[test]
    fn faults_are_read_for_this_thread() {
        // Touch fresh memory so the thread has minor faults to count.
        let v = vec![1u8; 1 << 20];
        assert_eq!(v.iter().map(|&b| u64::from(b)).sum::<u64>(), 1 << 20);
        let (minf, _majf) = thread_faults();
        assert!(minf > 0);
    }
}
