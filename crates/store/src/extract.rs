//! The per-second series of a result, read from its JSON: the engine's
//! (`jobs[i].timeseries[j]`: t_s, iops, bw_bytes, lat_mean_ns, lat_p99_ns,
//! named by `jobs[i].jobname`) and the device's (`device_check[i].series[j]`:
//! iostat's fields, named by `device_check[i].device`). Reading the JSON
//! rather than the result structs keeps the store independent of every
//! command's types: any result with these paths has its series stored.

use serde_json::Value;

use crate::{SeriesRow, Source};

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn rows(
    list: Option<&Value>,
    name_key: &str,
    series_key: &str,
    source: Source,
    out: &mut Vec<SeriesRow>,
) {
    let Some(items) = list.and_then(Value::as_array) else {
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let name = item
            .get(name_key)
            .and_then(Value::as_str)
            .map(String::from)
            .unwrap_or_else(|| format!("{}{i}", source.as_str()));
        let Some(points) = item.get(series_key).and_then(Value::as_array) else {
            continue;
        };
        for p in points {
            let Some(t_s) = num(p, "t_s") else { continue };
            let mut r = SeriesRow {
                source,
                name: name.clone(),
                t_s,
                ..SeriesRow::default()
            };
            match source {
                Source::Engine => {
                    r.iops = num(p, "iops");
                    r.bw_bytes = num(p, "bw_bytes");
                    r.lat_mean_ns = num(p, "lat_mean_ns");
                    r.lat_p99_ns = num(p, "lat_p99_ns");
                }
                Source::Device => {
                    r.r_iops = num(p, "r_iops");
                    r.w_iops = num(p, "w_iops");
                    r.r_bw_bytes = num(p, "r_bw_bytes");
                    r.w_bw_bytes = num(p, "w_bw_bytes");
                    r.util_pct = num(p, "util_pct");
                    r.aqu_sz = num(p, "aqu_sz");
                    r.r_await_ms = num(p, "r_await_ms");
                    r.w_await_ms = num(p, "w_await_ms");
                }
            }
            out.push(r);
        }
    }
}

/// Every series row of `result` (engine first, then device), in the order
/// the result lists them.
pub fn series(result: &Value) -> Vec<SeriesRow> {
    let mut out = Vec::new();
    rows(
        result.get("jobs"),
        "jobname",
        "timeseries",
        Source::Engine,
        &mut out,
    );
    rows(
        result.get("device_check"),
        "device",
        "series",
        Source::Device,
        &mut out,
    );
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
