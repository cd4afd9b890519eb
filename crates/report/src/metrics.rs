//! The figures of a result that `drivelab compare` sets side by side and
//! `drivelab history` sums up in one line ([`Metric`]), and those of a run:
//! IOPS, bandwidth and latency per direction.
//!
//! Every figure is read from a typed result: the stored JSON is read into
//! the struct ([`RunReport::from_stored`], or [`read_lenient`] for the
//! structs that default each missing field themselves), then its fields
//! are read, so a renamed field is a compile error, not a metric that
//! silently drops out of comparisons. A run's figures are defined here;
//! each other kind's are defined beside its result struct, in the crate
//! that owns it (steps, erase, season, replay), over [`Metric`] and
//! [`push`].

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::Value;

use crate::model::{DeviceCheck, DirReport, JobReport, RunReport};

/// One figure of a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// What it is ("read IOPS", "sdb erase time").
    pub name: String,
    /// Its unit ("IOPS", "MB/s", "µs", "s").
    pub unit: &'static str,
    /// The value.
    pub value: f64,
    /// Whether more is better (IOPS, bandwidth) or worse (latency, time).
    pub higher_is_better: bool,
}

/// Adds a metric when its value is known and finite.
pub fn push(out: &mut Vec<Metric>, name: String, unit: &'static str, value: Option<f64>, up: bool) {
    if let Some(value) = value.filter(|x| x.is_finite()) {
        out.push(Metric {
            name,
            unit,
            value,
            higher_is_better: up,
        });
    }
}

/// A whole-valued float as an integer, everywhere in `v`, so that a stored
/// `4096000.0` reads into a `u64` field as `4096000` does.
fn whole_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
            {
                *v = Value::from(f as u64);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(whole_numbers),
        Value::Object(o) => o.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// `stored` laid over `base`: objects key by key, anything else replaced.
fn overlay(base: &mut Value, stored: &Value) {
    match (base, stored) {
        (Value::Object(b), Value::Object(s)) => {
            for (k, sv) in s {
                match b.get_mut(k) {
                    Some(bv) => overlay(bv, sv),
                    None => {
                        b.insert(k.clone(), sv.clone());
                    }
                }
            }
        }
        (b, s) => *b = s.clone(),
    }
}

/// `v` read into `T`, each field missing from `v` (a result written by an
/// older version, or only in part) taking `T::default()`'s value; `None`
/// when a field holds something of the wrong type.
pub fn read_stored<T: Serialize + DeserializeOwned + Default>(v: &Value) -> Option<T> {
    let mut base = serde_json::to_value(T::default()).ok()?;
    let mut v = v.clone();
    whole_numbers(&mut v);
    overlay(&mut base, &v);
    serde_json::from_value(base).ok()
}

/// `v` read into `T`, a struct whose every level defaults each missing
/// field (`#[serde(default)]`), so that a result written by an older
/// version, or only in part, still reads; a whole-valued float reads into
/// an integer field. `None` when a field holds something of the wrong type.
pub fn read_lenient<T: DeserializeOwned>(v: &Value) -> Option<T> {
    let mut v = v.clone();
    whole_numbers(&mut v);
    serde_json::from_value(v).ok()
}

/// For `#[serde(deserialize_with = "...")]` on a field of a result whose
/// type is strict (a claim, a health record, a verdict made elsewhere): the
/// field as stored, or its default when it cannot be read (written by an
/// older version, in another shape), so that one such field does not make
/// the whole result unreadable.
pub fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).unwrap_or_default())
}

/// The list at `key` of `v`, taken out of it (empty when there is none).
fn take_list(v: &mut Value, key: &str) -> Vec<Value> {
    match v.as_object_mut().and_then(|o| o.remove(key)) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

/// Each item of `items` read by [`read_stored`]; one that cannot be read is
/// left out.
fn each<T: Serialize + DeserializeOwned + Default>(items: &[Value]) -> Vec<T> {
    items.iter().filter_map(read_stored).collect()
}

impl RunReport {
    /// A run's result as stored (any version's JSON): every field missing
    /// takes its default; each job, device check and point of their series
    /// is read on its own, and one that cannot be read is left out.
    pub fn from_stored(v: &Value) -> RunReport {
        let mut rest = v.clone();
        let jobs = take_list(&mut rest, "jobs");
        let checks = take_list(&mut rest, "device_check");
        let mut r: RunReport = read_stored(&rest).unwrap_or_default();
        r.jobs = jobs
            .into_iter()
            .filter_map(|mut j| {
                let points = take_list(&mut j, "timeseries");
                let mut job: JobReport = read_stored(&j)?;
                job.timeseries = each(&points);
                Some(job)
            })
            .collect();
        r.device_check = checks
            .into_iter()
            .filter_map(|mut c| {
                let points = take_list(&mut c, "series");
                let mut check: DeviceCheck = read_stored(&c)?;
                check.series = each(&points);
                Some(check)
            })
            .collect();
        r
    }

    /// IOPS and bandwidth (bytes/s) summed over every job and direction.
    pub fn totals(&self) -> (f64, f64) {
        self.jobs
            .iter()
            .flat_map(JobReport::directions)
            .fold((0.0, 0.0), |(iops, bw), (_, d)| {
                (iops + d.iops, bw + d.bw_bytes as f64)
            })
    }
}

impl JobReport {
    /// The job's read, write and trim figures, named.
    pub fn directions(&self) -> [(&'static str, &DirReport); 3] {
        [
            ("read", &self.read),
            ("write", &self.write),
            ("trim", &self.trim),
        ]
    }
}

/// The percentiles a comparison shows: (fio's key, label).
const PERCENTILES: [(&str, &str); 3] = [
    ("50.000000", "p50"),
    ("99.000000", "p99"),
    ("99.900000", "p99.9"),
];

/// A run's figures: per job (named when there are several) and direction
/// that did I/O, IOPS, bandwidth, mean and p50/p99/p99.9 completion latency.
pub fn run(r: &RunReport) -> Vec<Metric> {
    let mut out = Vec::new();
    let many = r.jobs.len() > 1;
    for j in &r.jobs {
        let prefix = if many {
            format!("{} ", j.jobname)
        } else {
            String::new()
        };
        for (dir, d) in j.directions() {
            if d.total_ios == 0 {
                continue;
            }
            let p = format!("{prefix}{dir}");
            push(&mut out, format!("{p} IOPS"), "IOPS", Some(d.iops), true);
            let mb = d.bw_bytes as f64 / 1e6;
            push(&mut out, format!("{p} bandwidth"), "MB/s", Some(mb), true);
            let mean = d.clat_ns.mean / 1e3;
            push(
                &mut out,
                format!("{p} mean latency"),
                "µs",
                Some(mean),
                false,
            );
            for (key, label) in PERCENTILES {
                let us = d.clat_ns.percentile.get(key).map(|ns| *ns as f64 / 1e3);
                push(&mut out, format!("{p} {label} latency"), "µs", us, false);
            }
        }
    }
    out
}

/// A number in a few significant digits: 12.3k, 1.25M, 0.125.
pub fn short(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The one-line summary `drivelab history` shows of a run (the other
/// kinds' are beside their structs, with their figures).
pub mod headline {
    use super::short;
    use crate::model::RunReport;

    /// "N IOPS, M MB/s" over every job and direction.
    pub fn run(r: &RunReport) -> String {
        let (iops, bw) = r.totals();
        format!("{} IOPS, {} MB/s", short(iops), short(bw / 1e6))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DeviceSecond, LatReport, SeriesPoint};

    fn dir(iops: f64, bw_bytes: u64, mean_ns: f64, p: [u64; 3]) -> DirReport {
        let keys = ["50.000000", "99.000000", "99.900000"];
        DirReport {
            total_ios: 10,
            iops,
            bw_bytes,
            clat_ns: LatReport {
                mean: mean_ns,
                percentile: keys.iter().map(|k| k.to_string()).zip(p).collect(),
                ..LatReport::default()
            },
            ..DirReport::default()
        }
    }

    /// A run as `drivelab run` writes it, serialised and read back.
    fn stored(r: &RunReport) -> RunReport {
        RunReport::from_stored(&serde_json::to_value(r).expect("serialise"))
    }

    #[test]
    fn every_run_metric_reads_its_field_of_the_model() {
        let r = RunReport {
            jobs: vec![JobReport {
                jobname: "j".into(),
                read: dir(1000.0, 4_096_000, 2500.0, [2000, 9000, 12000]),
                write: dir(500.0, 2_048_000, 4000.0, [3000, 8000, 15000]),
                ..JobReport::default()
            }],
            ..RunReport::default()
        };
        let got: Vec<(String, f64, bool)> = run(&stored(&r))
            .into_iter()
            .map(|m| (m.name, m.value, m.higher_is_better))
            .collect();
        let want = [
            ("read IOPS", 1000.0, true),
            ("read bandwidth", 4.096, true),
            ("read mean latency", 2.5, false),
            ("read p50 latency", 2.0, false),
            ("read p99 latency", 9.0, false),
            ("read p99.9 latency", 12.0, false),
            ("write IOPS", 500.0, true),
            ("write bandwidth", 2.048, true),
            ("write mean latency", 4.0, false),
            ("write p50 latency", 3.0, false),
            ("write p99 latency", 8.0, false),
            ("write p99.9 latency", 15.0, false),
        ];
        let want: Vec<(String, f64, bool)> = want
            .iter()
            .map(|(n, v, u)| (n.to_string(), *v, *u))
            .collect();
        assert_eq!(got, want);
        assert_eq!(headline::run(&stored(&r)), "1500 IOPS, 6.14 MB/s");
    }

    #[test]
    fn a_run_stored_in_part_with_float_counters_still_reads() {
        // What an older version (or a hand-made record) may hold: no
        // device check, no options, a byte rate written as a float.
        let v = serde_json::json!({"jobs": [{"jobname": "j", "read": {"total_ios": 1000,
            "iops": 95000.0, "bw_bytes": 389120000.0,
            "clat_ns": {"mean": 10500.0, "percentile": {"99.000000": 90000}}}}]});
        let names: Vec<(String, f64)> = run(&RunReport::from_stored(&v))
            .into_iter()
            .map(|m| (m.name, m.value))
            .collect();
        assert_eq!(
            names,
            [
                ("read IOPS".to_string(), 95000.0),
                ("read bandwidth".to_string(), 389.12),
                ("read mean latency".to_string(), 10.5),
                ("read p99 latency".to_string(), 90.0),
            ]
        );
        assert!(run(&RunReport::from_stored(&Value::Null)).is_empty());
    }

    #[test]
    fn series_of_jobs_and_device_checks_are_read_point_by_point() {
        let mut r = RunReport {
            jobs: vec![JobReport {
                jobname: "a".into(),
                timeseries: vec![SeriesPoint {
                    t_s: 1.0,
                    iops: 12.0,
                    bw_bytes: 49152.0,
                    lat_mean_ns: 5.0,
                    lat_p99_ns: 8,
                }],
                ..JobReport::default()
            }],
            ..RunReport::default()
        };
        r.device_check.push(DeviceCheck {
            device: "loop3".into(),
            series: vec![DeviceSecond {
                t_s: 2.0,
                aqu_sz: 1.5,
                ..DeviceSecond::default()
            }],
            ..DeviceCheck::default()
        });
        let back = stored(&r);
        assert_eq!(back.jobs[0].timeseries, r.jobs[0].timeseries);
        assert_eq!(back.device_check[0].series, r.device_check[0].series);
    }
}
