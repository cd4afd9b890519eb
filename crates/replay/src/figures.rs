//! A stored replay or audit read back ([`SessionReport`],
//! [`AuditReport`]), and the figures `drivelab compare` sets side by side
//! and the one line `drivelab history` shows of a replay (an audit's are
//! its replay's), and what the HTML report draws of each ([`ReplayView`],
//! [`AuditView`]), and what a result must hold for the report to draw it
//! ([`SessionReport::check_stored`], [`AuditReport::check_stored`]). They
//! are defined here, beside the structs they read, so that a renamed field
//! is a compile error or a failing test here rather than a figure that
//! silently drops out.

use drivelab_report::metrics::{push, read_lenient, short, Metric};
use drivelab_report::stored::{fields, Want};
use drivelab_report::views::{scalar_fields, AuditView, Percentiles, ReplayView};
use serde_json::Value;

use crate::session::{AuditReport, SessionReport};
use crate::{Dist, ReplayReport};

impl SessionReport {
    /// A replay's result as stored (any version's JSON): each field
    /// missing takes its default; a result that cannot be read is an empty
    /// one.
    pub fn from_stored(v: &Value) -> SessionReport {
        read_lenient(v).unwrap_or_default()
    }

    /// Whether `v` holds what the HTML report draws of a replay: its
    /// request counts, duration, score and distributions (which
    /// [`SessionReport::from_stored`] would otherwise default). The error
    /// is one line naming the field.
    pub fn check_stored(v: &Value) -> Result<(), String> {
        replay_fields(v, "")
    }
}

/// The fields of a replay at `v` the report draws; `at` names `v` in the
/// error ("" for a replay, "replay." for an audit's).
fn replay_fields(v: &Value, at: &str) -> Result<(), String> {
    use Want::*;
    fields(
        v,
        at,
        &[
            ("requests", U64),
            ("completed", U64),
            ("errors", U64),
            ("duration_s", Num),
            ("score.iops", Num),
            ("score.head_to_head_ms", Num),
            ("service_time_ns.count", U64),
            ("lateness_ns.count", U64),
        ],
    )
}

impl AuditReport {
    /// An audit's result as stored, read as [`SessionReport::from_stored`]
    /// reads a replay.
    pub fn from_stored(v: &Value) -> AuditReport {
        read_lenient(v).unwrap_or_default()
    }

    /// Whether `v` holds what the HTML report draws of an audit: its
    /// verdict, criteria, a comparison that reads as one, and its replay
    /// as [`SessionReport::check_stored`] wants it. The error is one line
    /// naming the field.
    pub fn check_stored(v: &Value) -> Result<(), String> {
        use Want::*;
        fields(
            v,
            "",
            &[
                ("pass", Bool),
                ("criteria", Arr),
                ("comparison", Obj),
                ("replay", Obj),
            ],
        )?;
        serde_json::from_value::<drivelab_trace::Comparison>(v["comparison"].clone())
            .map_err(|e| format!("comparison: {e}"))?;
        replay_fields(&v["replay"], "replay.")
    }
}

/// A replay's figures: IOPS, duration and service times.
pub fn metrics(r: &ReplayReport) -> Vec<Metric> {
    let mut out = Vec::new();
    push(&mut out, "IOPS".into(), "IOPS", Some(r.score.iops), true);
    let secs = Some(r.duration_s);
    push(&mut out, "duration".into(), "s", secs, false);
    let st = &r.service_time_ns;
    for (ns, label) in [
        (st.mean, "mean"),
        (st.p50 as f64, "p50"),
        (st.p99 as f64, "p99"),
        (st.p999 as f64, "p99.9"),
    ] {
        let us = Some(ns / 1e3);
        push(&mut out, format!("{label} service time"), "µs", us, false);
    }
    out
}

/// IOPS, bytes, duration and errors of a replay.
pub fn headline(r: &ReplayReport) -> String {
    format!(
        "{} IOPS, {} B over {} s, {} errors",
        short(r.score.iops),
        short((r.bytes_read + r.bytes_written) as f64),
        short(r.duration_s),
        r.errors
    )
}

impl From<&Dist> for Percentiles {
    fn from(d: &Dist) -> Percentiles {
        Percentiles {
            count: d.count,
            p50: d.p50,
            p90: d.p90,
            p99: d.p99,
            p999: d.p999,
        }
    }
}

impl From<&SessionReport> for ReplayView {
    fn from(s: &SessionReport) -> ReplayView {
        let r = &s.replay;
        ReplayView {
            fields: scalar_fields(s),
            trace: s.trace.clone(),
            target: s.target.clone(),
            score_withheld: r.score.withheld.clone(),
            head_to_head_ms: r.score.head_to_head_ms,
            iops: r.score.iops,
            service_time_ns: Percentiles::from(&r.service_time_ns),
            lateness_ns: Percentiles::from(&r.lateness_ns),
        }
    }
}

impl From<&AuditReport> for AuditView {
    fn from(a: &AuditReport) -> AuditView {
        AuditView {
            pass: a.pass,
            original_iops: a.original_iops,
            original_iops_from: a.original_iops_from.to_string(),
            criteria: a.criteria.clone(),
            replay: ReplayView::from(&a.replay),
            comparison: a.comparison.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dist, Score};

    fn dist(mean: f64, p50: u64, p99: u64, p999: u64) -> Dist {
        Dist {
            count: 40,
            mean,
            stddev: 2.0,
            min: 1,
            p50,
            p90: p50 + 1,
            p99,
            p999,
            max: p999 + 1,
        }
    }

    fn session() -> SessionReport {
        SessionReport {
            replay: ReplayReport {
                mode: "dependency".into(),
                requests: 40,
                completed: 37,
                errors: 3,
                first_error: Some("EIO".into()),
                bytes_read: 4096,
                bytes_written: 8192,
                duration_s: 1.5,
                score: Score {
                    head_to_head_ms: 5.0,
                    iops: 200.0,
                    withheld: None,
                },
                service_time_ns: dist(1500.0, 1000, 9000, 12000),
                lateness_ns: dist(10.0, 5, 50, 70),
                dependency_window_ns: Some(1_000_000),
                ..ReplayReport::default()
            },
            target: "/dev/loop9".into(),
            trace: "t.blktrace".into(),
            quiet_before_recording: Some(true),
            ..SessionReport::default()
        }
    }

    const WANT: [(&str, f64, bool); 6] = [
        ("IOPS", 200.0, true),
        ("duration", 1.5, false),
        ("mean service time", 1.5, false),
        ("p50 service time", 1.0, false),
        ("p99 service time", 9.0, false),
        ("p99.9 service time", 12.0, false),
    ];

    fn figures(r: &ReplayReport) -> Vec<(String, f64, bool)> {
        metrics(r)
            .into_iter()
            .map(|m| (m.name, m.value, m.higher_is_better))
            .collect()
    }

    fn want() -> Vec<(String, f64, bool)> {
        WANT.iter()
            .map(|(n, v, u)| (n.to_string(), *v, *u))
            .collect()
    }

    #[test]
    fn every_replay_metric_reads_its_field_of_the_struct() {
        let s = session();
        let v = serde_json::to_value(&s).expect("serialise");
        let back = SessionReport::from_stored(&v);
        // Read back, it writes the same JSON: nothing is lost on the way.
        assert_eq!(serde_json::to_value(&back).expect("serialise"), v);
        assert_eq!(figures(&back.replay), want());
        assert_eq!(
            headline(&back.replay),
            "200 IOPS, 12.3k B over 1.50 s, 3 errors"
        );
    }

    #[test]
    fn every_audit_metric_reads_its_replay() {
        let a = AuditReport {
            replay: session(),
            recording: "/tmp/rec".into(),
            original_iops: Some(210.0),
            original_iops_from: "given".into(),
            criteria: vec![drivelab_trace::compare::Criterion {
                name: "reads".into(),
                figure: "A 1, B 1".into(),
                limit: "identical".into(),
                pass: Some(true),
            }],
            pass: true,
            comparison: drivelab_trace::Comparison::default(),
        };
        let v = serde_json::to_value(&a).expect("serialise");
        let back = AuditReport::from_stored(&v);
        assert_eq!(serde_json::to_value(&back).expect("serialise"), v);
        assert_eq!(figures(&back.replay.replay), want());
    }

    #[test]
    fn every_field_a_replay_or_audit_must_hold_is_one_the_struct_writes() {
        let mut v = serde_json::to_value(session()).expect("serialise");
        assert_eq!(SessionReport::check_stored(&v), Ok(()));
        let audit = AuditReport {
            replay: session(),
            ..AuditReport::default()
        };
        let mut a = serde_json::to_value(&audit).expect("serialise");
        assert_eq!(AuditReport::check_stored(&a), Ok(()));
        v["score"]
            .as_object_mut()
            .expect("a score is an object")
            .remove("head_to_head_ms");
        assert_eq!(
            SessionReport::check_stored(&v),
            Err("score.head_to_head_ms is missing".into())
        );
        a["replay"]["lateness_ns"]["count"] = Value::from("many");
        assert_eq!(
            AuditReport::check_stored(&a),
            Err("replay.lateness_ns.count is not a whole number".into())
        );
        a["comparison"] = serde_json::json!({"a": "old"});
        let why = AuditReport::check_stored(&a).expect_err("an unreadable comparison");
        assert!(why.starts_with("comparison: "), "{why}");
    }

    #[test]
    fn a_replay_stored_with_fields_missing_still_reads() {
        // What an older version may hold: no mode, lateness or dependency
        // counts; a byte count written as a float.
        let v = serde_json::json!({"target": "/dev/loop8", "errors": 3,
            "bytes_read": 4096.0, "bytes_written": 8192, "duration_s": 1.5,
            "score": {"iops": 200.0}, "service_time_ns": {"mean": 2000.0, "p99": 7000}});
        let r = SessionReport::from_stored(&v);
        assert_eq!(r.target, "/dev/loop8");
        let got: Vec<(String, f64)> = metrics(&r.replay)
            .into_iter()
            .map(|m| (m.name, m.value))
            .collect();
        assert_eq!(
            got,
            [
                ("IOPS".to_string(), 200.0),
                ("duration".to_string(), 1.5),
                ("mean service time".to_string(), 2.0),
                ("p50 service time".to_string(), 0.0),
                ("p99 service time".to_string(), 7.0),
                ("p99.9 service time".to_string(), 0.0),
            ]
        );
        assert_eq!(
            headline(&r.replay),
            "200 IOPS, 12.3k B over 1.50 s, 3 errors"
        );
        let audit = serde_json::json!({"pass": false, "replay": v});
        assert_eq!(AuditReport::from_stored(&audit).replay.replay, r.replay);
    }

    #[test]
    fn an_audit_whose_criteria_cannot_be_read_keeps_its_replay() {
        // Criteria and a comparison in a shape this version does not read
        // are left out; the verdict and the replay still read.
        let v = serde_json::json!({"pass": true, "criteria": [{"name": 3}],
            "comparison": {"a": "old"}, "replay": {"score": {"iops": 50.0}}});
        let a = AuditReport::from_stored(&v);
        assert!(a.pass && a.criteria.is_empty());
        assert_eq!(a.comparison, drivelab_trace::Comparison::default());
        assert_eq!(a.replay.replay.score.iops, 50.0);
    }
}
