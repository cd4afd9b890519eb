//! Per-interval throughput and latency over a run (fio's per-second
//! bandwidth/IOPS/latency logs, drivelab's `timeseries` key).
//!
//! It exists because the caller needs to see *when* things happened —
//! stalls, idle seconds, garbage-collection dips — not only run totals.
//! [`TimeSeries`] accumulates the open interval (I/Os, bytes, latency sum and
//! a coarse log-linear latency histogram) in a fixed buffer allocated once;
//! when time passes the interval's end it is closed into a compact record
//! and every interval skipped without I/O is closed as a zero record, so
//! idle time shows as zero points. [`TimeSeries::finish`] closes the last,
//! possibly partial, interval and yields a [`Series`], which merges with the
//! other jobs' series by addition and produces [`TimePoint`]s.
//!
//! Memory grows with the number of intervals only: a closed interval keeps
//! its counts, its byte count and latency sum, and its non-empty histogram
//! buckets as varint-coded (gap, count) pairs — a few hundred bytes for a
//! latency spread of several octaves, 40 bytes for an idle interval,
//! independent of the I/O count.
//!
//! The per-interval histogram uses the same HdrHistogram-style bucketing as
//! [`crate::LatencyHistogram`] with 16 sub-buckets per power of two, so the
//! per-interval p99 is within [`INTERVAL_P99_RELATIVE_ERROR`] (1/32,
//! 3.1 %) of the true p99 of the interval's latencies (values below 32 ns
//! exact), with fio's rank rule (see the `histogram` module).
//!
//! A completion timestamped before the open interval (reaped late) is
//! counted in the open interval; an interval, once closed, never changes.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::StatsError;
use crate::loglinear::{bucket_count, index, rank, representative};

/// Sub-bucket bits of the per-interval histogram: 16 per power of two.
const SUB_BITS: u32 = 4;

/// Buckets of the per-interval histogram (672).
const BUCKETS: usize = bucket_count(SUB_BITS);

/// Upper bound on `|reported - true| / true` for a per-interval p99: 1/32.
pub const INTERVAL_P99_RELATIVE_ERROR: f64 = 1.0 / 32.0;

/// One interval of a series, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimePoint {
    /// Start of the interval, seconds since the series' start.
    pub t_s: f64,
    /// I/Os completed per second in the interval.
    pub iops: f64,
    /// Bytes transferred per second in the interval.
    pub bw_bytes: f64,
    /// Mean completion latency in the interval, ns; 0 when idle.
    pub lat_mean_ns: f64,
    /// 99th-percentile latency in the interval, ns, within
    /// [`INTERVAL_P99_RELATIVE_ERROR`]; 0 when idle.
    pub lat_p99_ns: u64,
}

/// A closed interval: totals and the non-empty buckets of its histogram.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Interval {
    ios: u64,
    bytes: u64,
    lat_sum_ns: u64,
    /// LEB128 pairs (index gap from the previous non-empty bucket + 1, count).
    buckets: Box<[u8]>,
}

/// A last interval shorter than `interval / SLIVER_DIVISOR` is folded into
/// the one before it when the series finishes.
const SLIVER_DIVISOR: u64 = 10;

/// Records completions into consecutive intervals of one run.
#[derive(Clone)]
pub struct TimeSeries {
    interval_ns: u64,
    start: Instant,
    closed: Vec<Interval>,
    cur_start_ns: u64,
    cur_end_ns: u64,
    cur_ios: u64,
    cur_bytes: u64,
    cur_lat_sum_ns: u64,
    cur_hist: Box<[u64; BUCKETS]>,
}

/// A finished series: closed intervals, mergeable with other jobs' series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    interval_ns: u64,
    start: Instant,
    intervals: Vec<Interval>,
    /// Length of the last interval, ns (shorter than `interval_ns` when the
    /// run ended inside it).
    last_len_ns: u64,
}

impl TimeSeries {
    /// A series of `interval_ns`-long intervals, the first starting at
    /// `start` (give every job of a run the same `start` so that their
    /// series merge). Allocates its 5 KiB working histogram here, once.
    ///
    /// Fails with [`StatsError::ZeroInterval`] when `interval_ns` is 0.
    pub fn new(interval_ns: u64, start: Instant) -> Result<Self, StatsError> {
        if interval_ns == 0 {
            return Err(StatsError::ZeroInterval);
        }
        let cur_hist: Box<[u64; BUCKETS]> = match vec![0u64; BUCKETS].into_boxed_slice().try_into()
        {
            Ok(array) => array,
            Err(_) => unreachable!("vec![0; BUCKETS] has BUCKETS elements"),
        };
        Ok(TimeSeries {
            interval_ns,
            start,
            closed: Vec::new(),
            cur_start_ns: 0,
            cur_end_ns: interval_ns,
            cur_ios: 0,
            cur_bytes: 0,
            cur_lat_sum_ns: 0,
            cur_hist,
        })
    }

    /// Interval length, ns.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The instant the first interval starts at.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Records one completion at `t_ns` since the start, with latency
    /// `latency_ns` and `bytes` transferred. Closes the open interval (and
    /// any idle ones) first when `t_ns` is past its end.
    #[inline]
    pub fn record(&mut self, t_ns: u64, latency_ns: u64, bytes: u64) {
        if t_ns >= self.cur_end_ns {
            self.roll_to(t_ns);
        }
        self.cur_ios += 1;
        self.cur_bytes = self.cur_bytes.saturating_add(bytes);
        self.cur_lat_sum_ns = self.cur_lat_sum_ns.saturating_add(latency_ns);
        self.cur_hist[index(latency_ns, SUB_BITS, BUCKETS)] += 1;
    }

    /// [`TimeSeries::record`] with the time given as an instant (instants
    /// before the start count as the start).
    #[inline]
    pub fn record_at(&mut self, now: Instant, latency_ns: u64, bytes: u64) {
        self.record(self.since_start(now), latency_ns, bytes);
    }

    /// Closes every interval that ends at or before `t_ns` since the start,
    /// so idle time shows up without waiting for the next completion.
    pub fn advance_to(&mut self, t_ns: u64) {
        if t_ns >= self.cur_end_ns {
            self.roll_to(t_ns);
        }
    }

    /// Number of closed intervals so far.
    pub fn closed_len(&self) -> usize {
        self.closed.len()
    }

    /// The most recently closed interval, for live progress; `None` before
    /// the first interval closes.
    pub fn last_point(&self) -> Option<TimePoint> {
        let i = self.closed.len().checked_sub(1)?;
        Some(self.closed[i].point(i, self.interval_ns, self.interval_ns))
    }

    /// Ends the run at `end_ns` since the start: closes every interval up to
    /// it, the last one with its actual (possibly partial) length, so its
    /// rates are per second of that length.
    pub fn finish(mut self, end_ns: u64) -> Series {
        if end_ns > self.cur_end_ns {
            self.roll_to(end_ns);
        }
        let mut last_len_ns = self.interval_ns;
        if end_ns > self.cur_start_ns {
            // The run ended inside (or at the end of) the open interval.
            last_len_ns = (end_ns - self.cur_start_ns).min(self.interval_ns);
            self.close_current();
        } else if self.cur_ios > 0 {
            // Completions stamped after the given end: keep them, with the
            // interval's full length.
            self.close_current();
        }
        let mut intervals = self.closed;
        // A sliver of an interval at the end (the drain of the I/O still in
        // flight when the run stopped, a burst of completions with nothing
        // issued) is no rate of its own: it joins the interval before it,
        // which then reports over its full, longer length.
        if last_len_ns < self.interval_ns / SLIVER_DIVISOR && intervals.len() >= 2 {
            if let Some(tail) = intervals.pop() {
                if let Some(prev) = intervals.last_mut() {
                    prev.absorb(&tail);
                }
                last_len_ns += self.interval_ns;
            }
        }
        Series {
            interval_ns: self.interval_ns,
            start: self.start,
            intervals,
            last_len_ns,
        }
    }

    fn since_start(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.start).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Closes the open interval, adds a zero interval for each interval
    /// with no I/O before the one holding `t_ns`, and opens that one.
    #[cold]
    fn roll_to(&mut self, t_ns: u64) {
        self.close_current();
        let target = t_ns / self.interval_ns;
        let next = self.closed.len() as u64;
        let idle = target.saturating_sub(next);
        self.closed
            .resize(self.closed.len() + idle as usize, Interval::default());
        self.cur_start_ns = target * self.interval_ns;
        self.cur_end_ns = self.cur_start_ns.saturating_add(self.interval_ns);
    }

    fn close_current(&mut self) {
        let mut interval = Interval {
            ios: self.cur_ios,
            bytes: self.cur_bytes,
            lat_sum_ns: self.cur_lat_sum_ns,
            buckets: Box::default(),
        };
        if self.cur_ios > 0 {
            interval.buckets = encode(&self.cur_hist[..]);
            self.cur_hist.fill(0);
        }
        self.closed.push(interval);
        self.cur_ios = 0;
        self.cur_bytes = 0;
        self.cur_lat_sum_ns = 0;
    }
}

impl Series {
    /// Interval length, ns.
    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The instant the first interval starts at.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Number of intervals.
    pub fn len(&self) -> usize {
        self.intervals.len()
    }

    /// True when the series has no interval.
    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }

    /// Adds `other` interval by interval (per-job → total): I/Os, bytes and
    /// latency sums add, histograms add, so the p99 is that of the union.
    /// The longer series sets the length.
    ///
    /// Fails when the intervals or the start instants differ.
    pub fn merge(&mut self, other: &Series) -> Result<(), StatsError> {
        if self.interval_ns != other.interval_ns {
            return Err(StatsError::IntervalMismatch {
                ours: self.interval_ns,
                theirs: other.interval_ns,
            });
        }
        if self.start != other.start {
            return Err(StatsError::StartMismatch);
        }
        match self.intervals.len().cmp(&other.intervals.len()) {
            std::cmp::Ordering::Less => {
                self.last_len_ns = other.last_len_ns;
                self.intervals
                    .resize(other.intervals.len(), Interval::default());
            }
            std::cmp::Ordering::Equal => {
                self.last_len_ns = self.last_len_ns.max(other.last_len_ns);
            }
            std::cmp::Ordering::Greater => {}
        }
        for (a, b) in self.intervals.iter_mut().zip(&other.intervals) {
            a.absorb(b);
        }
        Ok(())
    }

    /// One point per interval, idle intervals as zero points.
    pub fn points(&self) -> Vec<TimePoint> {
        let last = self.intervals.len().saturating_sub(1);
        self.intervals
            .iter()
            .enumerate()
            .map(|(i, iv)| {
                let len = if i == last {
                    self.last_len_ns
                } else {
                    self.interval_ns
                };
                iv.point(i, self.interval_ns, len)
            })
            .collect()
    }
}

impl Interval {
    /// Adds `other`'s I/Os, bytes, latency sum and histogram to this one.
    fn absorb(&mut self, other: &Interval) {
        if other.ios == 0 {
            return;
        }
        self.ios += other.ios;
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.lat_sum_ns = self.lat_sum_ns.saturating_add(other.lat_sum_ns);
        let mut scratch = vec![0u64; BUCKETS];
        for (i, c) in decode(&self.buckets).chain(decode(&other.buckets)) {
            scratch[i] += c;
        }
        self.buckets = encode(&scratch);
    }

    fn point(&self, i: usize, interval_ns: u64, len_ns: u64) -> TimePoint {
        let len_s = len_ns as f64 / 1e9;
        let t_s = (i as f64 * interval_ns as f64) / 1e9;
        if self.ios == 0 {
            return TimePoint {
                t_s,
                iops: 0.0,
                bw_bytes: 0.0,
                lat_mean_ns: 0.0,
                lat_p99_ns: 0,
            };
        }
        TimePoint {
            t_s,
            iops: self.ios as f64 / len_s,
            bw_bytes: self.bytes as f64 / len_s,
            lat_mean_ns: self.lat_sum_ns as f64 / self.ios as f64,
            lat_p99_ns: self.percentile(99.0),
        }
    }

    fn percentile(&self, p: f64) -> u64 {
        let target = rank(p, self.ios);
        let mut cumulative = 0;
        for (i, c) in decode(&self.buckets) {
            cumulative += c;
            if cumulative >= target {
                return representative(i, SUB_BITS);
            }
        }
        0
    }
}

/// Non-empty buckets of `counts` as LEB128 (gap, count) pairs, where gap is
/// the index distance from the previous non-empty bucket (from -1 for the
/// first).
fn encode(counts: &[u64]) -> Box<[u8]> {
    let mut out = Vec::new();
    let mut next = 0usize;
    for (i, &c) in counts.iter().enumerate() {
        if c > 0 {
            put_varint(&mut out, (i - next) as u64);
            put_varint(&mut out, c);
            next = i + 1;
        }
    }
    out.into_boxed_slice()
}

/// The (index, count) pairs written by [`encode`].
fn decode(bytes: &[u8]) -> impl Iterator<Item = (usize, u64)> + '_ {
    let mut pos = 0usize;
    let mut next = 0usize;
    std::iter::from_fn(move || {
        if pos >= bytes.len() {
            return None;
        }
        let gap = get_varint(bytes, &mut pos);
        let count = get_varint(bytes, &mut pos);
        let i = next + gap as usize;
        next = i + 1;
        Some((i, count))
    })
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*pos) {
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn varint_pairs_round_trip() {
        let mut counts = vec![0u64; BUCKETS];
        counts[0] = 1;
        counts[5] = 127;
        counts[6] = 128;
        counts[300] = u64::from(u32::MAX) + 7;
        counts[BUCKETS - 1] = u64::MAX;
        let got: Vec<(usize, u64)> = decode(&encode(&counts)).collect();
        let want: Vec<(usize, u64)> = counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (i, c))
            .collect();
        assert_eq!(got, want);
        assert!(encode(&vec![0u64; BUCKETS]).is_empty());
    }

    #[test]
    fn gaps_produce_zero_intervals() {
        let mut ts = TimeSeries::new(SEC, Instant::now()).unwrap();
        ts.record(SEC / 2, 1_000, 4096);
        ts.record(SEC / 2 + 1, 3_000, 4096);
        ts.record(3 * SEC + 200, 5_000, 8192);
        let points = ts.finish(4 * SEC).points();
        assert_eq!(points.len(), 4);
        let t: Vec<f64> = points.iter().map(|p| p.t_s).collect();
        assert_eq!(t, vec![0.0, 1.0, 2.0, 3.0]);
        assert_eq!(points[0].iops, 2.0);
        assert_eq!(points[0].bw_bytes, 8192.0);
        assert_eq!(points[0].lat_mean_ns, 2_000.0);
        for idle in &points[1..3] {
            assert_eq!(
                *idle,
                TimePoint {
                    t_s: idle.t_s,
                    iops: 0.0,
                    bw_bytes: 0.0,
                    lat_mean_ns: 0.0,
                    lat_p99_ns: 0
                }
            );
        }
        assert_eq!(points[3].iops, 1.0);
        assert_eq!(points[3].bw_bytes, 8192.0);
    }

    #[test]
    fn advance_to_closes_idle_intervals_and_finish_keeps_trailing_idle_time() {
        let mut ts = TimeSeries::new(SEC, Instant::now()).unwrap();
        ts.record(10, 100, 512);
        assert_eq!(ts.closed_len(), 0);
        assert_eq!(ts.last_point(), None);
        ts.advance_to(3 * SEC);
        assert_eq!(ts.closed_len(), 3);
        assert_eq!(ts.last_point().map(|p| (p.t_s, p.iops)), Some((2.0, 0.0)));
        let s = ts.finish(5 * SEC);
        assert_eq!(s.len(), 5);
        assert!(s.points()[1..].iter().all(|p| p.iops == 0.0));
    }

    #[test]
    fn a_sliver_at_the_end_joins_the_interval_before_it() {
        let mut ts = TimeSeries::new(SEC, Instant::now()).unwrap();
        // 1000 I/O per second for 3 s, then the drain: 16 completions in
        // 200 us, which alone would read as 80,000 IOPS.
        for i in 0..3000u64 {
            ts.record(i * SEC / 1000, 1_000, 4096);
        }
        for j in 0..16u64 {
            ts.record(3 * SEC + j * 12_500, 1_000, 4096);
        }
        let points = ts.finish(3 * SEC + 200_000).points();
        assert_eq!(points.len(), 3, "{points:?}");
        let last = points[2];
        let want = 1016.0 / 1.0002;
        assert!((last.iops - want).abs() < 1e-6, "{} vs {want}", last.iops);
        assert!(points.iter().all(|p| p.iops < 1020.0), "{points:?}");
    }

    #[test]
    fn partial_last_interval_is_rated_over_its_length() {
        let mut ts = TimeSeries::new(SEC, Instant::now()).unwrap();
        ts.record(SEC / 10, 100, 1000);
        ts.record(SEC + SEC / 10, 100, 1000);
        // The run ends a quarter of the way into the second interval.
        let p = ts.finish(SEC + SEC / 4).points();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].iops, 1.0);
        assert_eq!(p[1].iops, 4.0);
        assert_eq!(p[1].bw_bytes, 4000.0);
    }

    #[test]
    fn interval_bounds_are_half_open() {
        let mut ts = TimeSeries::new(1000, Instant::now()).unwrap();
        for t in [0u64, 999, 1000, 1999, 2000] {
            ts.record(t, 10, 1);
        }
        let p = ts.finish(3000).points();
        let ios: Vec<f64> = p.iter().map(|p| p.iops * 1000.0 / 1e9).collect();
        assert_eq!(ios, vec![2.0, 2.0, 1.0]);
    }

    #[test]
    fn late_completion_counts_in_the_open_interval() {
        let mut ts = TimeSeries::new(SEC, Instant::now()).unwrap();
        ts.record(SEC + 5, 100, 1);
        ts.record(SEC / 2, 100, 1); // stamped in the closed first interval
        let p = ts.finish(2 * SEC).points();
        assert_eq!(p[0].iops, 0.0);
        assert_eq!(p[1].iops, 2.0);
    }

    #[test]
    fn zero_interval_is_refused() {
        assert_eq!(
            TimeSeries::new(0, Instant::now()).err(),
            Some(StatsError::ZeroInterval)
        );
    }

    #[test]
    fn merge_refuses_misaligned_series() {
        let t0 = Instant::now();
        let a = TimeSeries::new(SEC, t0).unwrap().finish(SEC);
        let b = TimeSeries::new(SEC / 2, t0).unwrap().finish(SEC);
        let c = TimeSeries::new(SEC, t0 + std::time::Duration::from_millis(1))
            .unwrap()
            .finish(SEC);
        let mut m = a.clone();
        assert_eq!(
            m.merge(&b),
            Err(StatsError::IntervalMismatch {
                ours: SEC,
                theirs: SEC / 2
            })
        );
        assert_eq!(m.merge(&c), Err(StatsError::StartMismatch));
        assert_eq!(m, a, "a refused merge changes nothing");
    }

    #[test]
    fn merged_partial_last_interval_takes_the_later_end() {
        let t0 = Instant::now();
        let mut a = TimeSeries::new(SEC, t0).unwrap();
        a.record(2 * SEC + 1, 100, 10);
        let mut b = TimeSeries::new(SEC, t0).unwrap();
        b.record(2 * SEC + 2, 100, 10);
        b.record(2 * SEC + 3, 100, 10);
        // Job a ends at 2.5 s, job b at 2.8 s: the total's third interval
        // lasts 0.8 s and holds 3 I/Os.
        let mut m = a.finish(2 * SEC + SEC / 2);
        m.merge(&b.finish(2 * SEC + 4 * SEC / 5)).unwrap();
        let p = m.points();
        assert_eq!(p.len(), 3);
        assert!((p[2].iops - 3.0 / 0.8).abs() < 1e-9, "{}", p[2].iops);
    }

    #[test]
    fn record_at_uses_the_start_instant() {
        let t0 = Instant::now();
        let mut ts = TimeSeries::new(SEC, t0).unwrap();
        ts.record_at(t0 + std::time::Duration::from_millis(2500), 100, 1);
        ts.record_at(t0, 100, 1);
        let p = ts.finish(3 * SEC).points();
        assert_eq!(p.len(), 3);
        // The second record is late (before the open interval): it joins it.
        assert_eq!(p[2].iops, 2.0);
        assert_eq!(p[0].iops, 0.0);
    }
}
