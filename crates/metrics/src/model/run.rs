//! A workload's figures from a [`RunReport`]: a `--status-interval`
//! snapshot while it runs, the final result at the end. Read by type from
//! the result struct, so every figure is the one the JSON result carries:
//! I/Os and bytes per job and direction, errors by op, the completion
//! latency histogram (the run's own buckets, summed into power-of-two
//! groups), each job's runtime, and the device check's last whole second.
//!
//! The histogram's bounds are `2^k - 1` ns for k = 7..=33 (127 ns to
//! 8.6 s): latencies are whole nanoseconds and the run's buckets (fio's
//! `bins`) never straddle a power of two, so "at most `2^k - 1` ns" counts
//! exactly the buckets below `2^k`, with no estimate. fio's last bucket
//! also holds every latency past 2^34 ns, so the groups stop at 2^33 and
//! the rest is `+Inf`.

use drivelab_report::model::{DirReport, JobReport, LatReport};
use drivelab_report::RunReport;

use super::catalog::{
    DEV_BYTES, DEV_QUEUE, DEV_READ_BPS, DEV_READ_IOPS, DEV_UTIL, DEV_WRITE_BPS, DEV_WRITE_IOPS,
    FINISHED, JOB_BYTES, JOB_ERRORS, JOB_IOS, JOB_LATENCY, JOB_RUNTIME,
};
use super::info::{self, Held};
use super::{Family, Value};

/// The smallest and largest k of the `2^k - 1` ns bounds.
pub const LE_POWERS: std::ops::RangeInclusive<u32> = 7..=33;

/// The directions of a job, as labelled.
pub const DIRECTIONS: [&str; 3] = ["read", "write", "trim"];

fn dirs(j: &JobReport) -> [&DirReport; 3] {
    [&j.read, &j.write, &j.trim]
}

/// A latency histogram in seconds from a direction's `bins` (fio's bucket
/// values in ns, each with its count).
pub fn latency_histogram(l: &LatReport) -> Value {
    let bounds: Vec<u64> = LE_POWERS.map(|k| (1u64 << k) - 1).collect();
    let mut counts = vec![0u64; bounds.len()];
    let mut binned = 0u64;
    for (key, c) in &l.bins.0 {
        let c = *c;
        let Ok(v) = key.parse::<u64>() else { continue };
        binned += c;
        // The first bound the bucket lies under; past the last: +Inf only.
        if let Some(i) = bounds.iter().position(|&b| v <= b) {
            counts[i] += c;
        }
    }
    let mut cum = 0;
    let buckets = bounds
        .iter()
        .zip(counts)
        .map(|(&b, c)| {
            cum += c;
            (b as f64 / 1e9, cum)
        })
        .collect();
    Value::Histogram {
        buckets,
        count: binned,
        sum: l.mean * binned as f64 / 1e9,
    }
}

/// The targets a run holds, from its report.
pub fn held(r: &RunReport) -> Vec<Held> {
    r.claims
        .iter()
        .map(|c| Held {
            path: c.path.display().to_string(),
            device: c.device.clone().unwrap_or_default(),
            serial: c.serial.clone().unwrap_or_default(),
        })
        .collect()
}

/// Every figure of a run from `r`; `finished`: `r` is the final result.
pub fn families(r: &RunReport, finished: bool) -> Vec<Family> {
    let mut ios = Family::of(&JOB_IOS);
    let mut bytes = Family::of(&JOB_BYTES);
    let mut errors = Family::of(&JOB_ERRORS);
    let mut lat = Family::of(&JOB_LATENCY);
    let mut runtime = Family::of(&JOB_RUNTIME);
    for (i, j) in r.jobs.iter().enumerate() {
        let index = i.to_string();
        let name = j.jobname.as_str();
        for (dir, d) in DIRECTIONS.iter().zip(dirs(j)) {
            let l = [name, index.as_str(), dir];
            ios.push(&l, Value::Counter(d.total_ios));
            bytes.push(&l, Value::Counter(d.io_bytes));
            lat.push(&l, latency_histogram(&d.clat_ns));
        }
        for op in ["read", "write", "trim", "fsync"] {
            let n = j.errors.iter().filter(|e| e.op == op).count() as u64;
            errors.push(&[name, index.as_str(), op], Value::Counter(n));
        }
        runtime.push(
            &[name, index.as_str()],
            Value::Gauge(j.job_runtime as f64 / 1e3),
        );
    }
    let mut out = vec![
        info::build("run"),
        info::claims(&held(r)),
        finished_family(finished),
        ios,
        bytes,
        errors,
        lat,
        runtime,
    ];
    out.extend(device_families(r));
    out
}

/// `drivelab_work_finished`.
pub fn finished_family(finished: bool) -> Family {
    let mut f = Family::of(&FINISHED);
    f.push(&[], Value::Gauge(if finished { 1.0 } else { 0.0 }));
    f
}

/// The device check's figures: each device's last whole second and the
/// bytes it moved.
fn device_families(r: &RunReport) -> Vec<Family> {
    let mut fams = [
        Family::of(&DEV_READ_IOPS),
        Family::of(&DEV_WRITE_IOPS),
        Family::of(&DEV_READ_BPS),
        Family::of(&DEV_WRITE_BPS),
        Family::of(&DEV_UTIL),
        Family::of(&DEV_QUEUE),
    ];
    let mut moved = Family::of(&DEV_BYTES);
    for c in &r.device_check {
        let l = [c.device.as_str()];
        moved.push(&l, Value::Counter(c.device_bytes));
        let Some(s) = c.series.last() else { continue };
        let values = [
            s.r_iops,
            s.w_iops,
            s.r_bw_bytes,
            s.w_bw_bytes,
            s.util_pct / 100.0,
            s.aqu_sz,
        ];
        for (f, v) in fams.iter_mut().zip(values) {
            f.push(&l, Value::Gauge(v));
        }
    }
    let mut out: Vec<Family> = fams.into_iter().collect();
    out.push(moved);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_report::model::OrderedMap;

    fn lat(bins: &[(u64, u64)], mean: f64) -> LatReport {
        LatReport {
            mean,
            n: bins.iter().map(|b| b.1).sum(),
            bins: OrderedMap(bins.iter().map(|(v, c)| (v.to_string(), *c)).collect()),
            ..LatReport::default()
        }
    }

    #[test]
    fn bins_sum_into_cumulative_power_of_two_groups() {
        // 100 ns (exact bucket), 129 (fio's [128,130)), 255 ([254,256)),
        // 256 ([256,260)), 35_584 ([35_328, 35_840)), and one past 2^34.
        let l = lat(
            &[
                (100, 1),
                (129, 2),
                (255, 3),
                (258, 4),
                (35_584, 5),
                (17_314_086_912, 6),
            ],
            1000.0,
        );
        let Value::Histogram {
            buckets,
            count,
            sum,
        } = latency_histogram(&l)
        else {
            panic!("not a histogram")
        };
        assert_eq!(count, 21);
        assert!((sum - 21.0 * 1000.0 / 1e9).abs() < 1e-15);
        let at = |ns: u64| {
            buckets
                .iter()
                .find(|(le, _)| (*le * 1e9).round() as u64 == ns)
                .map(|b| b.1)
        };
        assert_eq!(at(127), Some(1));
        assert_eq!(at(255), Some(6));
        assert_eq!(at(511), Some(10));
        assert_eq!(at(32_767), Some(10));
        assert_eq!(at(65_535), Some(15));
        // The one past every group is in +Inf (the count) only.
        assert_eq!(buckets.last().map(|b| b.1), Some(15));
        assert_eq!(buckets.len(), LE_POWERS.count());
        // Cumulative: never decreasing.
        assert!(buckets
            .windows(2)
            .all(|w| w[0].1 <= w[1].1 && w[0].0 < w[1].0));
    }
}
