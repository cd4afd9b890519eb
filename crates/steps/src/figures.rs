//! A stored test result read back into [`TestReport`], the figures
//! `drivelab compare` sets side by side and the one line `drivelab history`
//! shows of it, what the HTML report draws of it ([`TestView`]) and what a
//! result must hold for the report to draw it
//! ([`TestReport::check_stored`]). They are defined here, beside the
//! struct they read, so that a renamed field is a compile error or a
//! failing test here rather than a figure that silently drops out.

use drivelab_report::metrics::{push, read_lenient, short, Metric};
use drivelab_report::stored::{each, fields, Want};
use drivelab_report::views::{StepView, TestView};
use serde_json::Value;

use crate::result::{StepResult, TestReport};

impl TestReport {
    /// A test's result as stored (any version's JSON): each field missing
    /// takes its default; a result that cannot be read is an empty one.
    pub fn from_stored(v: &Value) -> TestReport {
        read_lenient(v).unwrap_or_default()
    }

    /// Whether `v` holds what the HTML report draws of a test: its
    /// target, verdict and steps, and each step's position, kind and rate
    /// (which [`TestReport::from_stored`] would otherwise default). The
    /// error is one line naming the field.
    pub fn check_stored(v: &Value) -> Result<(), String> {
        use Want::*;
        fields(v, "", &[("target", Str), ("passed", Bool), ("steps", Arr)])?;
        each(v, "steps", |s, at| {
            fields(s, at, &[("index", U64), ("kind", Str), ("bw_bytes", Num)])
        })
    }
}

/// A test's figures: rate, IOPS, mean latency and duration per step.
pub fn metrics(r: &TestReport) -> Vec<Metric> {
    let mut out = Vec::new();
    for s in &r.steps {
        // The stored index is already 1-based, as the step log numbers it.
        let p = format!("step {} {}", s.index, s.kind);
        let rate = s.bw_bytes / 1e6;
        push(&mut out, format!("{p} rate"), "MB/s", Some(rate), true);
        push(&mut out, format!("{p} IOPS"), "IOPS", Some(s.iops), true);
        let mean = s.clat_ns.mean / 1e3;
        push(
            &mut out,
            format!("{p} mean latency"),
            "µs",
            Some(mean),
            false,
        );
        let secs = s.runtime_ns as f64 / 1e9;
        push(&mut out, format!("{p} duration"), "s", Some(secs), false);
    }
    out
}

/// The number of steps and each step's rate.
pub fn headline(r: &TestReport) -> String {
    let rates: Vec<String> = r
        .steps
        .iter()
        .map(|s| format!("{} MB/s", short(s.bw_bytes / 1e6)))
        .collect();
    format!("{} step(s): {}", r.steps.len(), rates.join(", "))
}

impl From<&TestReport> for TestView {
    fn from(r: &TestReport) -> TestView {
        TestView {
            target: r.target.clone(),
            block_size: u64::from(r.block_size),
            capacity_blocks: r.capacity_blocks,
            passed: r.passed,
            steps: r.steps.iter().map(StepView::from).collect(),
        }
    }
}

impl From<&StepResult> for StepView {
    fn from(s: &StepResult) -> StepView {
        StepView {
            index: s.index as u64,
            of: s.of as u64,
            kind: s.kind.to_string(),
            test_type: s.test_type.to_string(),
            order: s.order.to_string(),
            pattern: s.pattern.clone(),
            block_count: s.block_count,
            status: s.status.as_str().to_string(),
            started: s.started.clone(),
            bw_bytes: s.bw_bytes,
            iops: s.iops,
            clat_mean_ns: s.clat_ns.mean,
            io_errors: s.io_errors,
            miscompares: s.miscompares,
            runtime_ns: s.runtime_ns,
            error: s.error.clone(),
            passes: s
                .passes
                .iter()
                .map(|p| (p.op.to_string(), p.bw_bytes))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Failure, PassResult, Status, StepResult};

    fn step(
        index: usize,
        kind: &'static str,
        bw: f64,
        iops: f64,
        mean: f64,
        ns: u64,
    ) -> StepResult {
        StepResult {
            index,
            of: 2,
            kind: kind.into(),
            test_type: "Sequential Write".into(),
            order: "butterfly".into(),
            on_error: "continue".into(),
            status: Status::Failed,
            bw_bytes: bw,
            iops,
            runtime_ns: ns,
            clat_ns: drivelab_stats::Summary {
                min: 1.0,
                max: 2.0 * mean,
                mean,
                stddev: 3.0,
                count: 7,
            },
            passes: vec![PassResult {
                op: "read".into(),
                bw_bytes: bw,
                ..PassResult::default()
            }],
            failures: vec![Failure::Io {
                op: "write".into(),
                lba: 8,
                blocks: 2,
                errno: 5,
                message: "Input/output error".into(),
                retries: 3,
                bad_ranges: Vec::new(),
            }],
            ..StepResult::default()
        }
    }

    /// A test as `drivelab test` writes it, serialised and read back.
    fn stored(r: &TestReport) -> TestReport {
        TestReport::from_stored(&serde_json::to_value(r).expect("serialise"))
    }

    #[test]
    fn every_test_metric_reads_its_field_of_the_struct() {
        let r = TestReport {
            target: "/dev/loop9".into(),
            steps: vec![
                step(1, "write", 4_000_000.0, 976.0, 1500.0, 2_500_000_000),
                step(2, "verify", 8_000_000.0, 1953.0, 700.0, 1_250_000_000),
            ],
            ..TestReport::default()
        };
        let back = stored(&r);
        // Read back, it writes the same JSON: nothing is lost on the way.
        assert_eq!(
            serde_json::to_value(&back).expect("serialise"),
            serde_json::to_value(&r).expect("serialise")
        );
        let got: Vec<(String, f64, bool)> = metrics(&back)
            .into_iter()
            .map(|m| (m.name, m.value, m.higher_is_better))
            .collect();
        let want = [
            ("step 1 write rate", 4.0, true),
            ("step 1 write IOPS", 976.0, true),
            ("step 1 write mean latency", 1.5, false),
            ("step 1 write duration", 2.5, false),
            ("step 2 verify rate", 8.0, true),
            ("step 2 verify IOPS", 1953.0, true),
            ("step 2 verify mean latency", 0.7, false),
            ("step 2 verify duration", 1.25, false),
        ];
        let want: Vec<(String, f64, bool)> = want
            .iter()
            .map(|(n, v, u)| (n.to_string(), *v, *u))
            .collect();
        assert_eq!(got, want);
        assert_eq!(headline(&back), "2 step(s): 4.00 MB/s, 8.00 MB/s");
    }

    #[test]
    fn a_test_stored_with_fields_missing_still_reads() {
        // What an older version may hold: no status, passes, failures or
        // latency; a runtime written as a float.
        let v = serde_json::json!({"target": "/dev/loop9", "passed": true,
            "steps": [{"index": 1, "kind": "read", "bw_bytes": 2000000.0,
                       "iops": 500.0, "runtime_ns": 3000000000.0}]});
        let r = TestReport::from_stored(&v);
        assert_eq!((r.target.as_str(), r.passed), ("/dev/loop9", true));
        assert_eq!(r.steps[0].status, Status::Skipped);
        let got: Vec<(String, f64)> = metrics(&r).into_iter().map(|m| (m.name, m.value)).collect();
        assert_eq!(
            got,
            [
                ("step 1 read rate".to_string(), 2.0),
                ("step 1 read IOPS".to_string(), 500.0),
                ("step 1 read mean latency".to_string(), 0.0),
                ("step 1 read duration".to_string(), 3.0),
            ]
        );
        assert_eq!(headline(&r), "1 step(s): 2.00 MB/s");
        assert!(metrics(&TestReport::from_stored(&Value::Null)).is_empty());
    }

    #[test]
    fn a_test_whose_claim_cannot_be_read_keeps_its_figures() {
        // A claim in a shape this version does not read (an older one's)
        // is left out; the steps still read.
        let v = serde_json::json!({"target": "/dev/loop9", "claim": {"path": "/dev/loop9"},
            "steps": [{"index": 1, "kind": "write", "bw_bytes": 1000000.0,
                       "failures": [{"type": "gone"}]}]});
        let r = TestReport::from_stored(&v);
        assert!(r.claim.is_none() && r.steps[0].failures.is_empty());
        assert_eq!(headline(&r), "1 step(s): 1.00 MB/s");
    }

    #[test]
    fn every_field_a_test_must_hold_is_one_the_struct_writes() {
        let r = TestReport {
            target: "/dev/loop9".into(),
            steps: vec![step(1, "write", 4e6, 976.0, 1500.0, 1)],
            ..TestReport::default()
        };
        let mut v = serde_json::to_value(&r).expect("serialise");
        assert_eq!(TestReport::check_stored(&v), Ok(()));
        v["steps"][0]
            .as_object_mut()
            .expect("a step is an object")
            .remove("bw_bytes");
        assert_eq!(
            TestReport::check_stored(&v),
            Err("steps[0].bw_bytes is missing".into())
        );
        v["passed"] = Value::from("yes");
        assert_eq!(
            TestReport::check_stored(&v),
            Err("passed is not true or false".into())
        );
    }

    #[test]
    fn each_status_word_is_the_one_the_json_holds() {
        for st in [
            Status::Passed,
            Status::Failed,
            Status::Skipped,
            Status::Interrupted,
        ] {
            assert_eq!(serde_json::to_value(st).expect("serialise"), st.as_str());
        }
    }
}
