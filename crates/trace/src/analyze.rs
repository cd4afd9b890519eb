//! The AnalyzeTrace part of IPEAK: one streaming pass over a trace that
//! yields the distributions a storage reviewer looks at: transfer sizes,
//! queue depth, seek distance, service time, inter-arrival time, throughput
//! over time and an access map (offset against time).
//!
//! Definitions (all in constant memory):
//! - **Queue depth** is the depth *seen by each arriving request*: the
//!   number of requests issued and not yet complete at its issue time,
//!   itself included (so an Iometer run at 4 outstanding I/Os shows 4). It
//!   needs completions and issue order; outstanding completion times live in
//!   a min-heap bounded by [`Analyzer::MAX_DEPTH`] (beyond it the earliest
//!   completion is retired early). Requests without a completion are left
//!   out of the queue-depth distribution. All devices share one queue.
//! - **Seek distance** is, per device, this request's start minus the
//!   previous request's end, in 512-byte sectors (0 = sequential), kept in
//!   signed log2 buckets: bucket `0` holds 0, bucket `±k` holds
//!   distances with `2^(k-1) <= |d| < 2^k`.
//! - **Sizes** are exact for the first [`Analyzer::MAX_SIZES`] distinct
//!   sizes; later new sizes are rounded up to a power of two (`sizes_exact`
//!   turns false).
//! - **Service time** is complete − issue; **inter-arrival** is the
//!   difference of consecutive issue times (0 when a trace goes backwards,
//!   counted in `out_of_order`). Percentiles come from a log-linear
//!   histogram (±0.4 %).
//! - **Duration** runs from the earliest issue to the latest issue or
//!   completion, in whatever order the trace lists them; IOPS is requests
//!   over that duration.
//! - **Throughput** is a per-second series by issue time; past
//!   [`Analyzer::MAX_POINTS`] intervals the interval doubles. Intervals are
//!   aligned to the first request's issue time; a request issued earlier
//!   adds whole intervals in front, so the series starts less than one
//!   interval before the earliest issue.
//! - **Access map**: a uniform reservoir sample (Vitter's Algorithm R) of at
//!   most [`Analyzer::MAP_POINTS`] requests, for plots (JSON carries an even sample of at most `Analysis::JSON_MAP_POINTS`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::fasthash::FastMap;
use crate::hist::LogHist;
pub use crate::hist::Summary;
use crate::model::{Op, Request};

/// One bar of the size distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeBucket {
    /// Transfer size, bytes.
    pub bytes: u64,
    /// Requests of this size.
    pub count: u64,
    /// count / requests.
    pub fraction: f64,
}

/// One bar of the queue-depth distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DepthBucket {
    /// Queue depth seen by the arriving request (itself included).
    pub depth: u64,
    /// Requests that saw this depth.
    pub count: u64,
    /// count / requests with a known depth.
    pub fraction: f64,
}

/// One bar of a seek-distance distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeekBucket {
    /// Signed bucket: 0 for distance 0, ±k for 2^(k-1) <= |d| < 2^k sectors.
    pub bucket: i32,
    /// Smallest |distance| in the bucket, sectors.
    pub from_sectors: u64,
    /// Largest |distance| in the bucket, sectors.
    pub to_sectors: u64,
    /// Requests in the bucket.
    pub count: u64,
    /// count / requests with a predecessor on the same device.
    pub fraction: f64,
}

/// Seek-distance results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeekDistance {
    /// Share of requests that start where the previous one (same device)
    /// ended.
    pub zero_fraction: f64,
    /// Mean |distance| in sectors.
    pub mean_abs: f64,
    /// Signed distribution (negative = backwards).
    pub signed: Vec<SeekBucket>,
    /// Distribution of |distance| (buckets 0..).
    pub absolute: Vec<SeekBucket>,
}

/// One bar of a log2 time histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeBucket {
    /// Lower bound, ns (0, then powers of two).
    pub from_ns: u64,
    /// Values in [from_ns, 2·from_ns).
    pub count: u64,
}

/// One interval of the throughput series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThroughputPoint {
    /// Interval start, seconds from the start of the series (at most one
    /// interval before the earliest issue; see the module doc).
    pub t_s: f64,
    /// Requests issued in the interval.
    pub requests: u64,
    /// Bytes read by requests issued in the interval.
    pub bytes_read: u64,
    /// Bytes written by requests issued in the interval.
    pub bytes_written: u64,
}

/// Throughput over time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Interval length, seconds (1 unless the trace is very long).
    pub interval_s: u64,
    /// One point per interval, from the first request.
    pub points: Vec<ThroughputPoint>,
}

/// A sampled request for the access map.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AccessPoint {
    /// Issue time, ns from the earliest issue.
    pub t_ns: u64,
    /// Offset, bytes.
    pub offset: u64,
    /// Operation.
    pub op: Op,
}

/// The result of an analysis: one serde struct.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Requests of every kind.
    pub requests: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Trim/discard requests.
    pub trims: u64,
    /// Flush requests.
    pub flushes: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Bytes trimmed.
    pub bytes_trimmed: u64,
    /// From the earliest issue to the latest issue or completion, seconds.
    pub duration_s: f64,
    /// reads / (reads + writes); 0 when there are neither.
    pub read_fraction: f64,
    /// Requests per second over the duration.
    pub iops: f64,
    /// Mean transfer size of reads and writes, bytes.
    pub mean_size_bytes: f64,
    /// Transfer sizes (all ops), ascending.
    pub sizes: Vec<SizeBucket>,
    /// Whether `sizes` is exact (see module doc).
    pub sizes_exact: bool,
    /// Queue depth seen by arriving requests, ascending; empty without
    /// completions.
    pub queue_depth: Vec<DepthBucket>,
    /// Mean queue depth seen by arriving requests.
    pub queue_depth_mean: Option<f64>,
    /// Seek distances.
    pub seek_distance: SeekDistance,
    /// Service time (complete − issue), ns.
    pub service_time_ns: Summary,
    /// Service-time histogram (log2 buckets), for plots.
    pub service_time_histogram: Vec<TimeBucket>,
    /// Inter-arrival time, ns.
    pub interarrival_ns: Summary,
    /// Requests whose issue time is earlier than the previous one's.
    pub out_of_order: u64,
    /// Throughput over time.
    pub throughput: Throughput,
    /// Access-map sample for plots. JSON carries at most
    /// [`Analysis::JSON_MAP_POINTS`] of them, evenly spaced, each as
    /// `[t_ns, offset, op]` (for the HTML report's access map).
    #[serde(
        serialize_with = "json_access_map",
        deserialize_with = "json_access_map_back",
        default
    )]
    pub access_map: Vec<AccessPoint>,
    /// Largest offset + length seen, bytes (the access map's y range).
    pub max_offset: u64,
}

impl Analysis {
    /// Most access-map points written to JSON.
    pub const JSON_MAP_POINTS: usize = 2000;
}

fn json_access_map<S: serde::Serializer>(
    map: &[AccessPoint],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let n = map.len().min(Analysis::JSON_MAP_POINTS);
    let mut seq = s.serialize_seq(Some(n))?;
    for i in 0..n {
        // Evenly spaced over the sample: index i * len / n.
        let p = &map[i * map.len() / n];
        seq.serialize_element(&(p.t_ns, p.offset, p.op))?;
    }
    seq.end()
}

fn json_access_map_back<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<AccessPoint>, D::Error> {
    let v: Vec<(u64, u64, Op)> = Deserialize::deserialize(d)?;
    Ok(v.into_iter()
        .map(|(t_ns, offset, op)| AccessPoint { t_ns, offset, op })
        .collect())
}

/// The streaming analyzer: [`Analyzer::add`] each request in issue order,
/// then [`Analyzer::finish`].
pub struct Analyzer {
    n: u64,
    reads: u64,
    writes: u64,
    trims: u64,
    flushes: u64,
    bytes_read: u64,
    bytes_written: u64,
    bytes_trimmed: u64,
    rw_bytes: u64,
    /// Earliest issue time seen.
    min_issue: Option<u64>,
    /// Latest issue or completion time seen.
    last_time: u64,
    /// Start of the throughput series' first interval, ns (may lie before
    /// time 0 after earlier requests were added in front).
    series_base: Option<i128>,
    prev_issue: Option<u64>,
    out_of_order: u64,
    sizes: FastMap<u64, u64>,
    sizes_exact: bool,
    depth_counts: Vec<u64>,
    outstanding: BinaryHeap<Reverse<u64>>,
    depth_sum: u64,
    depth_n: u64,
    last_end: FastMap<u32, u64>,
    /// Counts per signed log2 bucket, index = bucket + 64.
    seek: [u64; 129],
    seek_n: u64,
    seek_zero: u64,
    seek_abs_sum: f64,
    service: LogHist,
    inter: LogHist,
    interval_s: u64,
    series: VecDeque<ThroughputPoint>,
    /// Access-map sample, with absolute issue times until `finish`.
    map: Vec<AccessPoint>,
    rng: u64,
    max_offset: u64,
}

impl Default for Analyzer {
    fn default() -> Self {
        Self::new()
    }
}

/// Signed log2 bucket of a distance.
pub fn seek_bucket(d: i64) -> i32 {
    if d == 0 {
        return 0;
    }
    let k = 64 - d.unsigned_abs().leading_zeros() as i32;
    if d < 0 {
        -k
    } else {
        k
    }
}

fn bucket_range(b: i32) -> (u64, u64) {
    let k = b.unsigned_abs();
    if k == 0 {
        (0, 0)
    } else {
        let lo = 1u64 << (k - 1);
        (lo, lo.saturating_mul(2) - 1)
    }
}

impl Analyzer {
    /// Most distinct sizes kept exactly: 4096.
    pub const MAX_SIZES: usize = 4096;
    /// Queue depths above this are counted at this depth, and the heap of
    /// outstanding completions holds at most this many: 65,536.
    pub const MAX_DEPTH: usize = 65_536;
    /// Most throughput intervals before the interval doubles: 100,000.
    pub const MAX_POINTS: usize = 100_000;
    /// Access-map sample size: 100,000.
    pub const MAP_POINTS: usize = 100_000;

    /// An empty analyzer.
    pub fn new() -> Self {
        Analyzer {
            n: 0,
            reads: 0,
            writes: 0,
            trims: 0,
            flushes: 0,
            bytes_read: 0,
            bytes_written: 0,
            bytes_trimmed: 0,
            rw_bytes: 0,
            min_issue: None,
            last_time: 0,
            series_base: None,
            prev_issue: None,
            out_of_order: 0,
            sizes: FastMap::default(),
            sizes_exact: true,
            depth_counts: Vec::new(),
            outstanding: BinaryHeap::new(),
            depth_sum: 0,
            depth_n: 0,
            last_end: FastMap::default(),
            seek: [0; 129],
            seek_n: 0,
            seek_zero: 0,
            seek_abs_sum: 0.0,
            service: LogHist::new(),
            inter: LogHist::new(),
            interval_s: 1,
            series: VecDeque::new(),
            map: Vec::new(),
            rng: 0x9E37_79B9_7F4A_7C15,
            max_offset: 0,
        }
    }

    fn next_rand(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Account one request (requests should come in issue order).
    pub fn add(&mut self, r: &Request) {
        self.n += 1;
        match r.op {
            Op::Read => {
                self.reads += 1;
                self.bytes_read = self.bytes_read.saturating_add(r.len);
                self.rw_bytes = self.rw_bytes.saturating_add(r.len);
            }
            Op::Write => {
                self.writes += 1;
                self.bytes_written = self.bytes_written.saturating_add(r.len);
                self.rw_bytes = self.rw_bytes.saturating_add(r.len);
            }
            Op::Trim => {
                self.trims += 1;
                self.bytes_trimmed = self.bytes_trimmed.saturating_add(r.len);
            }
            Op::Flush => self.flushes += 1,
        }
        self.min_issue = Some(self.min_issue.map_or(r.issue_ns, |m| m.min(r.issue_ns)));
        self.last_time = self
            .last_time
            .max(r.issue_ns)
            .max(r.complete_ns.unwrap_or(0));
        if let Some(p) = self.prev_issue {
            if r.issue_ns < p {
                self.out_of_order += 1;
                self.inter.record(0);
            } else {
                self.inter.record(r.issue_ns - p);
            }
        }
        self.prev_issue = Some(r.issue_ns);

        // sizes
        if let Some(c) = self.sizes.get_mut(&r.len) {
            *c += 1;
        } else if self.sizes.len() < Self::MAX_SIZES {
            self.sizes.insert(r.len, 1);
        } else {
            self.sizes_exact = false;
            *self
                .sizes
                .entry(r.len.checked_next_power_of_two().unwrap_or(r.len))
                .or_insert(0) += 1;
        }

        // queue depth and service time
        if let Some(c) = r.complete_ns {
            while let Some(Reverse(t)) = self.outstanding.peek() {
                if *t > r.issue_ns {
                    break;
                }
                self.outstanding.pop();
            }
            if self.outstanding.len() >= Self::MAX_DEPTH {
                self.outstanding.pop();
            }
            self.outstanding.push(Reverse(c));
            let depth = self.outstanding.len();
            if self.depth_counts.len() <= depth {
                self.depth_counts.resize(depth + 1, 0);
            }
            self.depth_counts[depth] += 1;
            self.depth_sum = self.depth_sum.saturating_add(depth as u64);
            self.depth_n += 1;
            self.service.record(c.saturating_sub(r.issue_ns));
        }

        // seek distance (flushes have no position)
        if r.op != Op::Flush {
            let start = r.offset / 512;
            let end = r.offset.saturating_add(r.len).div_ceil(512);
            if let Some(prev_end) = self.last_end.get(&r.device) {
                let d = (start as i128 - *prev_end as i128)
                    .clamp(i64::MIN as i128, i64::MAX as i128) as i64;
                self.seek[(seek_bucket(d) + 64) as usize] += 1;
                self.seek_n += 1;
                if d == 0 {
                    self.seek_zero += 1;
                }
                self.seek_abs_sum += d.unsigned_abs() as f64;
            }
            if self.last_end.len() < 65_536 || self.last_end.contains_key(&r.device) {
                self.last_end.insert(r.device, end);
            }
            self.max_offset = self.max_offset.max(r.offset.saturating_add(r.len));
        }

        // throughput
        let idx = self.series_slot(r.issue_ns);
        let p = &mut self.series[idx];
        p.requests += 1;
        match r.op {
            Op::Read => p.bytes_read = p.bytes_read.saturating_add(r.len),
            Op::Write => p.bytes_written = p.bytes_written.saturating_add(r.len),
            _ => {}
        }

        // access map (reservoir)
        if r.op != Op::Flush {
            let pt = AccessPoint {
                t_ns: r.issue_ns,
                offset: r.offset,
                op: r.op,
            };
            if self.map.len() < Self::MAP_POINTS {
                self.map.push(pt);
            } else {
                let j = self.next_rand() % self.n;
                if (j as usize) < Self::MAP_POINTS {
                    self.map[j as usize] = pt;
                }
            }
        }
    }

    /// The index in the throughput series of the interval holding issue
    /// time `t`: the series grows at either end, coarsening when it would
    /// pass [`Analyzer::MAX_POINTS`].
    fn series_slot(&mut self, t: u64) -> usize {
        let t = i128::from(t);
        let base = *self.series_base.get_or_insert(t);
        let interval = |a: &Analyzer| i128::from(a.interval_s) * 1_000_000_000;
        if t < base {
            // Whole intervals in front, keeping the alignment.
            loop {
                let k = (base - t + interval(self) - 1) / interval(self);
                if self.series.len() as i128 + k <= Self::MAX_POINTS as i128 {
                    for _ in 0..k {
                        self.series.push_front(ThroughputPoint::default());
                    }
                    self.series_base = Some(base - k * interval(self));
                    break;
                }
                self.coarsen();
            }
        }
        let base = self.series_base.unwrap_or(t);
        let mut idx = (t - base) / interval(self);
        while idx >= Self::MAX_POINTS as i128 {
            self.coarsen();
            idx = (t - base) / interval(self);
        }
        let idx = idx as usize;
        while self.series.len() <= idx {
            self.series.push_back(ThroughputPoint::default());
        }
        idx
    }

    fn coarsen(&mut self) {
        self.interval_s *= 2;
        let old = std::mem::take(&mut self.series);
        for (i, p) in old.into_iter().enumerate() {
            let j = i / 2;
            if self.series.len() <= j {
                self.series.push_back(ThroughputPoint::default());
            }
            let q = &mut self.series[j];
            q.requests += p.requests;
            q.bytes_read = q.bytes_read.saturating_add(p.bytes_read);
            q.bytes_written = q.bytes_written.saturating_add(p.bytes_written);
        }
    }

    /// The results.
    pub fn finish(mut self) -> Analysis {
        let n = self.n;
        let frac = |c: u64, d: u64| if d == 0 { 0.0 } else { c as f64 / d as f64 };
        let mut sizes: Vec<SizeBucket> = self
            .sizes
            .iter()
            .map(|(b, c)| SizeBucket {
                bytes: *b,
                count: *c,
                fraction: frac(*c, n),
            })
            .collect();
        sizes.sort_by_key(|s| s.bytes);
        let queue_depth: Vec<DepthBucket> = self
            .depth_counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(d, c)| DepthBucket {
                depth: d as u64,
                count: *c,
                fraction: frac(*c, self.depth_n),
            })
            .collect();
        let mut signed: Vec<SeekBucket> = self
            .seek
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| {
                let b = i as i32 - 64;
                let (lo, hi) = bucket_range(b);
                SeekBucket {
                    bucket: b,
                    from_sectors: lo,
                    to_sectors: hi,
                    count: *c,
                    fraction: frac(*c, self.seek_n),
                }
            })
            .collect();
        signed.sort_by_key(|s| s.bucket);
        let mut abs: HashMap<i32, u64> = HashMap::new();
        for s in &signed {
            *abs.entry(s.bucket.abs()).or_insert(0) += s.count;
        }
        let mut absolute: Vec<SeekBucket> = abs
            .into_iter()
            .map(|(b, c)| {
                let (lo, hi) = bucket_range(b);
                SeekBucket {
                    bucket: b,
                    from_sectors: lo,
                    to_sectors: hi,
                    count: c,
                    fraction: frac(c, self.seek_n),
                }
            })
            .collect();
        absolute.sort_by_key(|s| s.bucket);
        let min_issue = self.min_issue.unwrap_or(0);
        let duration_ns = self.last_time.saturating_sub(min_issue);
        let duration_s = duration_ns as f64 / 1e9;
        for p in &mut self.map {
            p.t_ns -= min_issue;
        }
        self.map.sort_by_key(|p| p.t_ns);
        let interval_s = self.interval_s;
        let points: Vec<ThroughputPoint> = self
            .series
            .into_iter()
            .enumerate()
            .map(|(i, p)| ThroughputPoint {
                t_s: (i as u64 * interval_s) as f64,
                ..p
            })
            .collect();
        Analysis {
            requests: n,
            reads: self.reads,
            writes: self.writes,
            trims: self.trims,
            flushes: self.flushes,
            bytes_read: self.bytes_read,
            bytes_written: self.bytes_written,
            bytes_trimmed: self.bytes_trimmed,
            duration_s,
            read_fraction: frac(self.reads, self.reads + self.writes),
            iops: if duration_s > 0.0 {
                n as f64 / duration_s
            } else {
                0.0
            },
            mean_size_bytes: if self.reads + self.writes > 0 {
                self.rw_bytes as f64 / (self.reads + self.writes) as f64
            } else {
                0.0
            },
            sizes,
            sizes_exact: self.sizes_exact,
            queue_depth,
            queue_depth_mean: (self.depth_n > 0)
                .then(|| self.depth_sum as f64 / self.depth_n as f64),
            seek_distance: SeekDistance {
                zero_fraction: frac(self.seek_zero, self.seek_n),
                mean_abs: if self.seek_n > 0 {
                    self.seek_abs_sum / self.seek_n as f64
                } else {
                    0.0
                },
                signed,
                absolute,
            },
            service_time_ns: self.service.summary(),
            service_time_histogram: self
                .service
                .log2_buckets()
                .into_iter()
                .map(|(from_ns, count)| TimeBucket { from_ns, count })
                .collect(),
            interarrival_ns: self.inter.summary(),
            out_of_order: self.out_of_order,
            throughput: Throughput { interval_s, points },
            access_map: self.map,
            max_offset: self.max_offset,
        }
    }
}

/// Analyze every request of a reader (stops at the first error).
pub fn analyze(
    reader: &mut dyn Iterator<Item = crate::Result<Request>>,
) -> crate::Result<Analysis> {
    let mut a = Analyzer::new();
    for r in reader {
        a.add(&r?);
    }
    Ok(a.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_buckets() {
        assert_eq!(seek_bucket(0), 0);
        assert_eq!(seek_bucket(1), 1);
        assert_eq!(seek_bucket(2), 2);
        assert_eq!(seek_bucket(3), 2);
        assert_eq!(seek_bucket(4), 3);
        assert_eq!(seek_bucket(-1), -1);
        assert_eq!(seek_bucket(-8), -4);
        assert_eq!(bucket_range(3), (4, 7));
        assert_eq!(seek_bucket(i64::MIN), -64);
    }

    #[test]
    fn constant_depth_four_like_iometer() {
        // Four streams, each request takes 10 ms, a new one is issued the
        // instant one completes (closed loop at 4 outstanding): after the
        // start-up ramp (depths 1,2,3,4) every arrival sees 4.
        let mut a = Analyzer::new();
        let mut reqs = Vec::new();
        for k in 0..100u64 {
            for s in 0..4u64 {
                let t = k * 10_000_000 + s; // staggered by 1 ns
                let mut r = Request::new(t, Op::Read, (k * 4 + s) * 1_000_000, 4096);
                r.complete_ns = Some(t + 10_000_000);
                reqs.push(r);
            }
        }
        for r in &reqs {
            a.add(r);
        }
        let x = a.finish();
        let four = x.queue_depth.iter().find(|d| d.depth == 4).unwrap();
        assert_eq!(four.count, 400 - 3);
        assert_eq!(x.service_time_ns.mean, Some(10_000_000.0));
        assert_eq!(
            x.sizes,
            vec![SizeBucket {
                bytes: 4096,
                count: 400,
                fraction: 1.0
            }]
        );
    }

    #[test]
    fn sequential_is_zero_seek_and_counts_are_exact() {
        let mut a = Analyzer::new();
        for i in 0..10u64 {
            let op = if i % 2 == 0 { Op::Read } else { Op::Write };
            a.add(&Request::new(i * 1_000, op, i * 8192, 8192));
        }
        let x = a.finish();
        assert_eq!((x.requests, x.reads, x.writes), (10, 5, 5));
        assert_eq!((x.bytes_read, x.bytes_written), (5 * 8192, 5 * 8192));
        assert_eq!(x.seek_distance.zero_fraction, 1.0);
        assert_eq!(x.interarrival_ns.mean, Some(1000.0));
        assert_eq!(x.duration_s, 9e-6);
        assert!(x.queue_depth.is_empty());
        assert_eq!(x.service_time_ns.count, 0);
    }

    #[test]
    fn long_trace_coarsens_the_series() {
        let mut a = Analyzer::new();
        let step = 3 * 1_000_000_000u64;
        for i in 0..(Analyzer::MAX_POINTS as u64) {
            a.add(&Request::new(i * step, Op::Read, 0, 512));
        }
        let x = a.finish();
        assert!(x.throughput.points.len() <= Analyzer::MAX_POINTS);
        assert_eq!(
            x.throughput.points.iter().map(|p| p.requests).sum::<u64>(),
            x.requests
        );
        assert!(x.throughput.interval_s >= 4);
    }
}
