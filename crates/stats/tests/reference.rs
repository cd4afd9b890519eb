//! The public API against references computed from the raw samples by a
//! second route: per-interval bucketing by division and sorted-array
//! percentiles for the time series, two-pass figures for the moments.

use std::time::Instant;

use drivelab_stats::{
    LatencyHistogram, Series, TimePoint, TimeSeries, Welford, INTERVAL_P99_RELATIVE_ERROR,
    RELATIVE_ERROR,
};

const SEC: u64 = 1_000_000_000;

/// splitmix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn log_uniform(&mut self, lo: f64, hi: f64) -> u64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (lo * ((hi / lo).ln() * u).exp()) as u64
    }
}

/// A completion: time since start, latency, bytes.
type Event = (u64, u64, u64);

/// Events over `secs` seconds with the seconds in `idle` left empty.
fn events(seed: u64, secs: u64, idle: &[u64]) -> Vec<Event> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    let mut t = 0u64;
    while t < secs * SEC {
        t += rng.next() % 200_000;
        if idle.contains(&(t / SEC)) || t >= secs * SEC {
            continue;
        }
        let bytes = 512 << (rng.next() % 8);
        out.push((t, rng.log_uniform(2_000.0, 20_000_000.0), bytes));
    }
    out
}

/// Reference points: bucket by integer division, exact p99 with fio's rank.
fn reference(events: &[Event], interval: u64, end: u64) -> Vec<(u64, u64, u64, u64)> {
    let n = end.div_ceil(interval) as usize;
    let mut per: Vec<Vec<&Event>> = vec![Vec::new(); n];
    for e in events {
        per[(e.0 / interval) as usize].push(e);
    }
    per.iter()
        .map(|evs| {
            let mut lats: Vec<u64> = evs.iter().map(|e| e.1).collect();
            lats.sort_unstable();
            let ios = lats.len() as u64;
            let bytes = evs.iter().map(|e| e.2).sum();
            let lat_sum = lats.iter().sum();
            let p99 = if ios == 0 {
                0
            } else {
                lats[((99 * ios).div_ceil(100).max(1) - 1) as usize]
            };
            (ios, bytes, lat_sum, p99)
        })
        .collect()
}

fn check(points: &[TimePoint], want: &[(u64, u64, u64, u64)], interval: u64, end: u64) {
    assert_eq!(points.len(), want.len());
    for (i, (p, &(ios, bytes, lat_sum, p99))) in points.iter().zip(want).enumerate() {
        let start = i as u64 * interval;
        let len_s = ((start + interval).min(end) - start) as f64 / 1e9;
        assert_eq!(p.t_s, start as f64 / 1e9);
        assert!(
            (p.iops - ios as f64 / len_s).abs() <= 1e-9 * p.iops.max(1.0),
            "iops at {i}"
        );
        assert!(
            (p.bw_bytes - bytes as f64 / len_s).abs() <= 1e-9 * p.bw_bytes.max(1.0),
            "bw at {i}"
        );
        if ios == 0 {
            assert_eq!((p.lat_mean_ns, p.lat_p99_ns), (0.0, 0), "idle interval {i}");
        } else {
            let mean = lat_sum as f64 / ios as f64;
            assert!((p.lat_mean_ns - mean).abs() <= 1e-9 * mean, "mean at {i}");
            let err = (p.lat_p99_ns as f64 - p99 as f64).abs() / p99 as f64;
            assert!(
                err <= INTERVAL_P99_RELATIVE_ERROR,
                "p99 at {i}: {} vs {p99}",
                p.lat_p99_ns
            );
        }
    }
}

fn series_of(events: &[Event], interval: u64, start: Instant, end: u64) -> Series {
    let mut ts = TimeSeries::new(interval, start).unwrap();
    for &(t, lat, bytes) in events {
        ts.record(t, lat, bytes);
    }
    ts.finish(end)
}

#[test]
fn series_with_idle_seconds_matches_the_reference() {
    let end = 10 * SEC + SEC / 3;
    let ev = events(1, 11, &[2, 3, 7, 10]);
    let s = series_of(&ev, SEC, Instant::now(), end);
    let points = s.points();
    check(&points, &reference(&ev, SEC, end), SEC, end);
    for idle in [2, 3, 7, 10] {
        assert_eq!(points[idle].iops, 0.0, "second {idle} is idle");
    }
}

#[test]
fn merged_series_equal_one_series_of_all_completions() {
    let t0 = Instant::now();
    let end = 8 * SEC;
    let interval = SEC / 4;
    let a = events(2, 8, &[1, 5]);
    let b = events(3, 6, &[1, 2]);
    let mut all: Vec<Event> = a.iter().chain(&b).copied().collect();
    all.sort_by_key(|e| e.0);

    let mut merged = series_of(&a, interval, t0, end);
    merged.merge(&series_of(&b, interval, t0, 6 * SEC)).unwrap();
    let whole = series_of(&all, interval, t0, end);
    assert_eq!(merged.points(), whole.points());
    check(
        &merged.points(),
        &reference(&all, interval, end),
        interval,
        end,
    );
    // Second 1 is idle in both jobs: zero points in the total too.
    assert!(merged.points()[4..8].iter().all(|p| p.iops == 0.0));

    // Merging the shorter into the longer gives the same.
    let mut other_way = series_of(&b, interval, t0, 6 * SEC);
    other_way.merge(&series_of(&a, interval, t0, end)).unwrap();
    assert_eq!(other_way.points(), whole.points());
}

#[test]
fn histogram_and_welford_agree_with_two_pass_figures() {
    let mut rng = Rng(9);
    let lats: Vec<u64> = (0..300_000).map(|_| rng.log_uniform(1.0, 1e12)).collect();
    let mut h = LatencyHistogram::new();
    let mut w = Welford::new();
    for &v in &lats {
        h.record(v);
        w.record(v as f64);
    }
    let n = lats.len() as f64;
    let mean = lats.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = lats.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
    assert!((h.mean().unwrap() - mean).abs() <= 1e-12 * mean);
    assert!((w.mean() - mean).abs() <= 1e-9 * mean);
    assert!((w.stddev() - var.sqrt()).abs() <= 1e-9 * var.sqrt());
    let s = w.summary();
    assert_eq!(s.count, lats.len() as u64);
    assert_eq!(Some(s.min as u64), h.min());
    assert_eq!(Some(s.max as u64), h.max());

    let mut sorted = lats.clone();
    sorted.sort_unstable();
    for (p, got) in h.percentiles(&drivelab_stats::FIO_DEFAULT_PERCENTILES) {
        let r = ((p * n / 100.0 - 1e-9).ceil() as usize).max(1);
        let truth = sorted[r - 1] as f64;
        assert!(
            (got as f64 - truth).abs() <= RELATIVE_ERROR * truth,
            "p{p}: {got} vs {truth}"
        );
    }
    // Every recorded value lies in a reported bucket, in order.
    let total: u64 = h.buckets().map(|b| b.count).sum();
    assert_eq!(total, h.count());
}
