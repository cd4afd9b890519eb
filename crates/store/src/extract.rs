//! The per-second series of a result: the engine's (each job's
//! `timeseries`, named by its job name) and the device's (each device
//! check's `series`, iostat's fields, named by its device). The result is
//! read into `drivelab_report::RunReport` (leniently, so that any version's
//! JSON reads) and its fields are read, so a renamed field of the model is a
//! compile error here. A result of another kind has neither list and
//! stores no series.

use drivelab_report::RunReport;
use serde_json::Value;

use crate::{SeriesRow, Source};

/// `name`, or the source and position when it is empty.
fn name_or(name: &str, source: Source, i: usize) -> String {
    if name.is_empty() {
        format!("{}{i}", source.as_str())
    } else {
        name.to_string()
    }
}

/// Every series row of `result` (engine first, then device), in the order
/// the result lists them.
pub fn series(result: &Value) -> Vec<SeriesRow> {
    let r = RunReport::from_stored(result);
    let mut out = Vec::new();
    for (i, job) in r.jobs.iter().enumerate() {
        let name = name_or(&job.jobname, Source::Engine, i);
        out.extend(job.timeseries.iter().map(|p| SeriesRow {
            source: Source::Engine,
            name: name.clone(),
            t_s: p.t_s,
            iops: Some(p.iops),
            bw_bytes: Some(p.bw_bytes),
            lat_mean_ns: Some(p.lat_mean_ns),
            lat_p99_ns: Some(p.lat_p99_ns as f64),
            ..SeriesRow::default()
        }));
    }
    for (i, check) in r.device_check.iter().enumerate() {
        let name = name_or(&check.device, Source::Device, i);
        out.extend(check.series.iter().map(|p| SeriesRow {
            source: Source::Device,
            name: name.clone(),
            t_s: p.t_s,
            r_iops: Some(p.r_iops),
            w_iops: Some(p.w_iops),
            r_bw_bytes: Some(p.r_bw_bytes),
            w_bw_bytes: Some(p.w_bw_bytes),
            util_pct: Some(p.util_pct),
            aqu_sz: Some(p.aqu_sz),
            r_await_ms: Some(p.r_await_ms),
            w_await_ms: Some(p.w_await_ms),
            ..SeriesRow::default()
        }));
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn engine_and_device_series_are_read_from_their_paths() {
        let v = json!({
            "jobs": [{"jobname": "a", "timeseries": [
                {"t_s": 0.0, "iops": 10.0, "bw_bytes": 40960.0, "lat_mean_ns": 5.5, "lat_p99_ns": 9},
                {"t_s": 1.0, "iops": 12.0, "bw_bytes": 49152.0, "lat_mean_ns": 5.0, "lat_p99_ns": 8}]}],
            "device_check": [{"device": "loop3", "series": [
                {"t_s": 0.0, "r_iops": 7.0, "w_iops": 3.0, "r_bw_bytes": 1.0, "w_bw_bytes": 2.0,
                 "util_pct": 50.0, "aqu_sz": 1.5, "r_await_ms": 0.2, "w_await_ms": 0.4}]},
                {"device": "loop4"}]
        });
        let s = series(&v);
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[1].source, s[1].name.as_str(), s[1].t_s),
            (Source::Engine, "a", 1.0)
        );
        assert_eq!(s[1].lat_p99_ns, Some(8.0));
        assert_eq!(s[1].util_pct, None);
        assert_eq!((s[2].source, s[2].name.as_str()), (Source::Device, "loop3"));
        assert_eq!(
            (s[2].aqu_sz, s[2].w_await_ms, s[2].iops),
            (Some(1.5), Some(0.4), None)
        );
        assert!(series(&json!({"drives": []})).is_empty());
    }
}
