//! A stored erase result read back into [`Summary`], the figures
//! `drivelab compare` sets side by side and the one line `drivelab history`
//! shows of it, what the HTML report draws of it ([`EraseView`]) and what a
//! result must hold for the report to draw it ([`Summary::check_stored`]).
//! They are defined here, beside the struct they read, so that a renamed
//! field is a compile error or a failing test here rather than a figure
//! that silently drops out.

use drivelab_report::metrics::{push, read_lenient, short, Metric};
use drivelab_report::stored::{each, fields, Want};
use drivelab_report::views::{DriveView, EraseView};
use serde_json::Value;

use crate::outcome::{Outcome, Summary};

impl Summary {
    /// An erase's result as stored (any version's JSON): each field
    /// missing takes its default; a result that cannot be read is an empty
    /// one.
    pub fn from_stored(v: &Value) -> Summary {
        read_lenient(v).unwrap_or_default()
    }

    /// Whether `v` holds what the HTML report draws of an erase: its
    /// strategy and drives, and each drive's device, result and bytes
    /// (which [`Summary::from_stored`] would otherwise default). The error
    /// is one line naming the field.
    pub fn check_stored(v: &Value) -> Result<(), String> {
        use Want::*;
        fields(v, "", &[("strategy", Str), ("drives", Arr)])?;
        each(v, "drives", |d, at| {
            fields(d, at, &[("device", Str), ("result", Str), ("bytes", U64)])
        })
    }
}

/// An erase's figures: erase time, rate and verify time per drive, then
/// the whole erase's time and rate.
pub fn metrics(r: &Summary) -> Vec<Metric> {
    let mut out = Vec::new();
    for d in &r.drives {
        let dev = if d.device.is_empty() {
            "drive"
        } else {
            d.device.as_str()
        };
        let secs = d.erase_seconds;
        push(
            &mut out,
            format!("{dev} erase time"),
            "s",
            Some(secs),
            false,
        );
        let rate = (secs > 0.0).then(|| d.bytes as f64 / secs / 1e6);
        push(&mut out, format!("{dev} erase rate"), "MB/s", rate, true);
        let verify = Some(d.verify_seconds);
        push(&mut out, format!("{dev} verify time"), "s", verify, false);
    }
    let secs = Some(r.complete_seconds);
    push(&mut out, "complete time".into(), "s", secs, false);
    let rate = Some(r.aggregate_mb_per_s);
    push(&mut out, "aggregate rate".into(), "MB/s", rate, true);
    out
}

/// Drives, bytes, time and aggregate rate.
pub fn headline(r: &Summary) -> String {
    format!(
        "{} drive(s), {} B in {} s, {} MB/s",
        r.drives.len(),
        short(r.total_bytes as f64),
        short(r.complete_seconds),
        short(r.aggregate_mb_per_s)
    )
}

impl From<&Summary> for EraseView {
    fn from(r: &Summary) -> EraseView {
        EraseView {
            strategy: r.strategy.name().into(),
            pattern: r.pattern.clone(),
            verify: r.verify.name().into(),
            total_bytes: r.total_bytes,
            complete_seconds: r.complete_seconds,
            aggregate_mb_per_s: r.aggregate_mb_per_s,
            drives: r.drives.iter().map(DriveView::from).collect(),
        }
    }
}

impl From<&Outcome> for DriveView {
    fn from(d: &Outcome) -> DriveView {
        DriveView {
            device: d.device.clone(),
            serial: d.serial.clone().unwrap_or_default(),
            method: d.method.name().into(),
            result: d.result.as_str().into(),
            bytes: d.bytes,
            mb_per_s: d.mb_per_s(),
            erase_seconds: d.erase_seconds,
            verify_seconds: d.verify_seconds,
            verification: d.verification.clone(),
            exceptions: d.exceptions as u64,
            certificate: d
                .certificate
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            error: d.error.clone(),
            timeline: d
                .timeline
                .iter()
                .map(|p| (p.phase.to_string(), p.t_s, p.done_bytes))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{EraseResult, Outcome, TimelinePoint, Tuning};
    use crate::plan::{Method, Strategy, VerifyMode};

    fn drive(dev: &str, bytes: u64, erase: f64, verify: f64) -> Outcome {
        Outcome {
            device: dev.into(),
            serial: Some("S123".into()),
            method: Method::Stream,
            reason: "streamed".into(),
            result: EraseResult::ErasedWithExceptions,
            bytes,
            erase_seconds: erase,
            verify_seconds: verify,
            verification: "full read-back".into(),
            tuning: Some(Tuning {
                transfer: 1 << 20,
                depth: 8,
                changes: 2,
            }),
            exceptions: 1,
            certificate: Some("/tmp/cert.json".into()),
            timeline: vec![TimelinePoint {
                t_s: 0.5,
                phase: "erasing".into(),
                done_bytes: bytes / 2,
                total_bytes: bytes,
            }],
            ..Outcome::default()
        }
    }

    #[test]
    fn every_erase_metric_reads_its_field_of_the_struct() {
        let r = Summary {
            strategy: Strategy::RoundRobin,
            pattern: "random".into(),
            verify: VerifyMode::Full,
            bus_limit_bytes_per_s: Some(1 << 30),
            drives: vec![
                drive("/dev/loop8", 8_000_000, 2.0, 0.5),
                drive("/dev/loop9", 3_000_000, 0.0, 0.25),
            ],
            complete_seconds: 2.5,
            total_bytes: 11_000_000,
            aggregate_mb_per_s: 4.4,
        };
        let v = serde_json::to_value(&r).expect("serialise");
        let back = Summary::from_stored(&v);
        // Read back, it writes the same JSON: nothing is lost on the way.
        assert_eq!(serde_json::to_value(&back).expect("serialise"), v);
        let got: Vec<(String, f64, bool)> = metrics(&back)
            .into_iter()
            .map(|m| (m.name, m.value, m.higher_is_better))
            .collect();
        let want = [
            ("/dev/loop8 erase time", 2.0, false),
            ("/dev/loop8 erase rate", 4.0, true),
            ("/dev/loop8 verify time", 0.5, false),
            // No erase time, no rate.
            ("/dev/loop9 erase time", 0.0, false),
            ("/dev/loop9 verify time", 0.25, false),
            ("complete time", 2.5, false),
            ("aggregate rate", 4.4, true),
        ];
        let want: Vec<(String, f64, bool)> = want
            .iter()
            .map(|(n, v, u)| (n.to_string(), *v, *u))
            .collect();
        assert_eq!(got, want);
        assert_eq!(headline(&back), "2 drive(s), 11.00M B in 2.50 s, 4.40 MB/s");
    }

    #[test]
    fn every_field_an_erase_must_hold_is_one_the_struct_writes() {
        let r = Summary {
            drives: vec![drive("/dev/loop8", 8_000_000, 2.0, 0.5)],
            ..Summary::default()
        };
        let mut v = serde_json::to_value(&r).expect("serialise");
        assert_eq!(Summary::check_stored(&v), Ok(()));
        v["drives"][0]["bytes"] = Value::from(1.5);
        assert_eq!(
            Summary::check_stored(&v),
            Err("drives[0].bytes is not a whole number".into())
        );
        v.as_object_mut()
            .expect("a summary is an object")
            .remove("strategy");
        assert_eq!(Summary::check_stored(&v), Err("strategy is missing".into()));
    }

    #[test]
    fn an_erase_stored_with_fields_missing_still_reads() {
        // What an older version may hold: no timeline, tuning, method or
        // verify figures; a byte count written as a float.
        let v = serde_json::json!({"strategy": "parallel", "complete_seconds": 4.0,
            "drives": [{"device": "/dev/sdz", "result": "erased", "bytes": 8000000.0,
                        "erase_seconds": 4.0}]});
        let r = Summary::from_stored(&v);
        assert_eq!(r.drives[0].result, EraseResult::Erased);
        assert_eq!(r.drives[0].method, Method::Auto);
        let got: Vec<(String, f64)> = metrics(&r).into_iter().map(|m| (m.name, m.value)).collect();
        assert_eq!(
            got,
            [
                ("/dev/sdz erase time".to_string(), 4.0),
                ("/dev/sdz erase rate".to_string(), 2.0),
                ("/dev/sdz verify time".to_string(), 0.0),
                ("complete time".to_string(), 4.0),
                ("aggregate rate".to_string(), 0.0),
            ]
        );
        assert_eq!(headline(&r), "1 drive(s), 0.000 B in 4.00 s, 0.000 MB/s");
    }
}
