//! Per-direction pacing for fio's `rate` (bytes/s), per-direction
//! `rate_iops=R,W` and `rate_process=poisson`.
//!
//! Each capped direction has its own clock of intended issue times. After an
//! I/O of `len` bytes the clock advances by the mean gap the cap implies
//! (`len / rate` for a bandwidth cap, `1 / iops` for an IOPS cap, the longer
//! of the two when both are set). With `poisson` the gap is drawn from the
//! exponential distribution with that mean (`-mean · ln(1 − U)`), so arrivals
//! form a Poisson process with the same average rate, as fio's. The job loop
//! hands the intended time to the I/O loop as the I/O's due time, so latency
//! is also measured from it (no coordinated omission).

use drivelab_patterns::prng::Rng;

use drivelab_engine::io::Op;

/// The caps of one job.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RateConfig {
    /// Bytes per second, read and write/trim; 0 = no cap.
    pub bytes: [u64; 2],
    /// I/Os per second, read and write/trim; 0 = no cap.
    pub iops: [u64; 2],
    /// Exponential gaps instead of even ones.
    pub poisson: bool,
}

impl RateConfig {
    /// Whether any direction is capped.
    pub fn any(&self) -> bool {
        self.bytes.iter().chain(self.iops.iter()).any(|&v| v > 0)
    }
}

/// The intended-issue clocks of one job.
#[derive(Debug, Clone)]
pub struct Pacer {
    cfg: RateConfig,
    next: [Option<u64>; 2],
    rng: Rng,
}

fn dir(op: Op) -> Option<usize> {
    match op {
        Op::Read => Some(0),
        Op::Write | Op::Trim => Some(1),
        Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => None,
    }
}

impl Pacer {
    /// A pacer, or None when nothing is capped.
    pub fn new(cfg: RateConfig, seed: u64) -> Option<Pacer> {
        cfg.any().then(|| Pacer {
            cfg,
            next: [None, None],
            rng: Rng::new(seed ^ 0x7261_7465),
        })
    }

    /// Mean gap after an I/O of `len` bytes in direction `d`, ns.
    fn mean_gap(&self, d: usize, len: u32) -> f64 {
        let b = self.cfg.bytes[d];
        let i = self.cfg.iops[d];
        let by_bytes = if b > 0 {
            f64::from(len) * 1e9 / b as f64
        } else {
            0.0
        };
        let by_iops = if i > 0 { 1e9 / i as f64 } else { 0.0 };
        by_bytes.max(by_iops)
    }

    /// The intended issue time of the next I/O `op`, given the clock `now`
    /// (the first I/O of a direction is due at once); None when uncapped.
    pub fn slot(&mut self, op: Op, now: u64) -> Option<u64> {
        let d = dir(op)?;
        if self.mean_gap(d, 1) == 0.0 {
            return None;
        }
        Some(*self.next[d].get_or_insert(now))
    }

    /// Move every direction's schedule on by `ns` (a pause the rate
    /// ignores, fio's `rate_ignore_thinktime`).
    pub fn shift(&mut self, ns: u64) {
        for n in self.next.iter_mut().flatten() {
            *n += ns;
        }
    }

    /// Account an issued I/O: move its direction's clock on by one gap.
    pub fn advance(&mut self, op: Op, len: u32) {
        let Some(d) = dir(op) else { return };
        let mean = self.mean_gap(d, len);
        if mean == 0.0 {
            return;
        }
        let gap = if self.cfg.poisson {
            -mean * (1.0 - self.rng.unit()).ln()
        } else {
            mean
        };
        if let Some(n) = self.next[d].as_mut() {
            *n += gap.round() as u64;
        }
    }
}

/// fio's `ratemin`, `rate_iops_min` and `rate_cycle`, checked while the
/// job runs as fio's check_min_rate does: after a 2 s settling time from
/// the start of measurement, the first check sets a baseline, and every
/// `rate_cycle` after it each direction that has moved data must have
/// done at least its minimum over the window, or the job ends with the
/// failure fio prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MinRate {
    /// Smallest bandwidth, bytes/s, read and write/trim (0: none).
    pub bytes: [u64; 2],
    /// Smallest IOPS, read and write/trim (0: none).
    pub iops: [u64; 2],
    /// The window, ns (`rate_cycle`, 1000 ms by default).
    pub cycle_ns: u64,
}

/// fio's settling time before the first check.
const SETTLE_NS: u64 = 2_000_000_000;

/// The state of a [`MinRate`] check: the baseline (time, bytes and I/Os
/// per direction) of the open window.
#[derive(Debug, Clone, Default)]
pub struct MinRateCheck {
    base: Option<(u64, [u64; 2], [u64; 2])>,
}

impl MinRateCheck {
    /// Check at `since_start` ns of measurement with the direction totals
    /// `bytes` and `ios` (read, write/trim): the failure in fio's words, or
    /// None.
    pub fn check(
        &mut self,
        m: &MinRate,
        since_start: u64,
        bytes: [u64; 2],
        ios: [u64; 2],
    ) -> Option<String> {
        if since_start < SETTLE_NS {
            return None;
        }
        let Some((t, b0, i0)) = self.base else {
            self.base = Some((since_start, bytes, ios));
            return None;
        };
        let spent = since_start - t;
        if spent < m.cycle_ns.max(1) {
            return None;
        }
        for d in 0..2 {
            if bytes[d] == 0 {
                continue;
            }
            let per_s = |n: u64, n0: u64| {
                (n.saturating_sub(n0) as u128 * 1_000_000_000 / u128::from(spent)) as u64
            };
            let rate = per_s(bytes[d], b0[d]);
            if m.bytes[d] > 0 && rate < m.bytes[d] {
                return Some(format!("rate_min={}B/s not met, got {rate}B/s", m.bytes[d]));
            }
            let iops = per_s(ios[d], i0[d]);
            if m.bytes[d] == 0 && m.iops[d] > 0 && iops < m.iops[d] {
                return Some(format!(
                    "rate_iops_min={} not met, got {iops} IOPS",
                    m.iops[d]
                ));
            }
        }
        self.base = Some((since_start, bytes, ios));
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_is_checked_per_cycle_after_the_settling_time() {
        let m = MinRate {
            bytes: [1_000_000, 0],
            iops: [0, 0],
            cycle_ns: 500_000_000,
        };
        let mut c = MinRateCheck::default();
        // Nothing before 2 s, then the baseline.
        assert_eq!(c.check(&m, 1_000_000_000, [1, 0], [1, 0]), None);
        assert_eq!(c.check(&m, 2_000_000_000, [2_000_000, 0], [10, 0]), None);
        // 600 kB in the next 500 ms: 1.2 MB/s, met; the window moves on.
        assert_eq!(c.check(&m, 2_400_000_000, [2_100_000, 0], [11, 0]), None);
        assert_eq!(c.check(&m, 2_500_000_000, [2_600_000, 0], [12, 0]), None);
        // 250 kB in the next 500 ms: 500 kB/s.
        let e = c.check(&m, 3_000_000_000, [2_850_000, 0], [13, 0]);
        assert_eq!(
            e.as_deref(),
            Some("rate_min=1000000B/s not met, got 500000B/s")
        );
    }

    #[test]
    fn byte_cap_spaces_ios_by_their_size() {
        let mut p = Pacer::new(
            RateConfig {
                bytes: [1 << 20, 0],
                ..Default::default()
            },
            1,
        )
        .unwrap();
        assert_eq!(p.slot(Op::Read, 100), Some(100));
        p.advance(Op::Read, 4096);
        // 4 KiB at 1 MiB/s: 1/256 s.
        assert_eq!(p.slot(Op::Read, 200), Some(100 + 3_906_250));
        // Writes are not capped.
        assert_eq!(p.slot(Op::Write, 200), None);
    }

    #[test]
    fn poisson_gaps_have_the_rate_mean_and_spread() {
        let mut p = Pacer::new(
            RateConfig {
                iops: [0, 1000],
                poisson: true,
                ..Default::default()
            },
            7,
        )
        .unwrap();
        let n = 20_000u64;
        let mut prev = p.slot(Op::Write, 0).unwrap();
        let mut gaps = Vec::new();
        for _ in 0..n {
            p.advance(Op::Write, 4096);
            let t = p.slot(Op::Write, 0).unwrap();
            gaps.push((t - prev) as f64);
            prev = t;
        }
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        // Exponential: mean 1 ms, standard deviation equal to the mean.
        assert!((mean - 1e6).abs() < 0.03e6, "{mean}");
        assert!((var.sqrt() - 1e6).abs() < 0.05e6, "{}", var.sqrt());
        // Linear pacing has no spread.
        let mut q = Pacer::new(
            RateConfig {
                iops: [0, 1000],
                ..Default::default()
            },
            7,
        )
        .unwrap();
        q.slot(Op::Write, 0);
        q.advance(Op::Write, 4096);
        assert_eq!(q.slot(Op::Write, 0), Some(1_000_000));
    }
}
