//! A test sequence's figures, per step: its state, the bytes it has
//! transferred and the bytes it plans, and once it has finished, its
//! commands and bytes per pass and its failures. The running step's bytes
//! come from the progress counter the progress line reads; a finished
//! step's figures are its [`StepResult`], the same the final JSON holds.

use drivelab_steps::{Status, StepPlan, StepResult};

use super::catalog::{
    TEST_BAD_BLOCKS, TEST_BYTES, TEST_IOS, TEST_IO_ERRORS, TEST_MISCOMPARES, TEST_STEP_DONE,
    TEST_STEP_PLANNED, TEST_STEP_STATE,
};
use super::info::{self, Held};
use super::run::finished_family;
use super::{Family, Value};

/// Every state a step is in, as labelled.
pub const STATES: [&str; 6] = [
    "waiting",
    "running",
    "passed",
    "failed",
    "skipped",
    "interrupted",
];

/// A finished step's state label.
fn state_of(s: Status) -> &'static str {
    match s {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::Skipped => "skipped",
        Status::Interrupted => "interrupted",
    }
}

/// Where a sequence is: the steps planned, the results of those finished
/// (the first `finished.len()` plans), and the blocks the running step
/// (the next plan) has done.
pub struct Sequence<'a> {
    /// Every step, in order.
    pub plans: &'a [StepPlan],
    /// The results of the steps finished so far, in order.
    pub finished: &'a [StepResult],
    /// Blocks the running step has transferred (its progress counter).
    pub running_blocks: u64,
    /// The target held for writing, if any.
    pub held: Option<&'a Held>,
}

/// Every figure of `seq`; `over`: the sequence has ended (no step runs).
pub fn families(seq: &Sequence<'_>, over: bool) -> Vec<Family> {
    let mut state = Family::of(&TEST_STEP_STATE);
    let mut done = Family::of(&TEST_STEP_DONE);
    let mut planned = Family::of(&TEST_STEP_PLANNED);
    let mut ios = Family::of(&TEST_IOS);
    let mut bytes = Family::of(&TEST_BYTES);
    let mut errors = Family::of(&TEST_IO_ERRORS);
    let mut miscompares = Family::of(&TEST_MISCOMPARES);
    let mut bad = Family::of(&TEST_BAD_BLOCKS);
    for (i, p) in seq.plans.iter().enumerate() {
        let step = p.index.to_string();
        let kind = p.spec.kind.name();
        let l = [step.as_str(), kind];
        let bs = u64::from(p.block_size);
        planned.push(&l, Value::Gauge((p.planned_blocks() * bs) as f64));
        let (now, blocks) = match seq.finished.get(i) {
            Some(r) => {
                for pass in &r.passes {
                    let lo = [step.as_str(), kind, &pass.op];
                    ios.push(&lo, Value::Counter(pass.ios));
                    bytes.push(&lo, Value::Counter(pass.bytes));
                }
                errors.push(&l, Value::Counter(r.io_errors));
                miscompares.push(&l, Value::Counter(r.miscompares));
                bad.push(&l, Value::Counter(r.bad_blocks));
                (state_of(r.status), r.blocks_transferred)
            }
            None if i == seq.finished.len() && !over => ("running", seq.running_blocks),
            None => ("waiting", 0),
        };
        done.push(&l, Value::Gauge((blocks * bs) as f64));
        for s in STATES {
            let v = if s == now { 1.0 } else { 0.0 };
            state.push(&[step.as_str(), kind, s], Value::Gauge(v));
        }
    }
    let mut out = vec![info::build("test"), finished_family(over)];
    if let Some(h) = seq.held {
        out.push(info::claims(std::slice::from_ref(h)));
    }
    out.extend([state, done, planned, ios, bytes, errors, miscompares, bad]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::find;
    use drivelab_steps::result::PassResult;
    use drivelab_steps::{StepKind, StepSpec};

    fn plan(index: usize, kind: StepKind, count: u64) -> StepPlan {
        StepPlan {
            index,
            of: 2,
            spec: StepSpec::new(kind),
            seed: 1,
            start: 0,
            count,
            lo: 16,
            hi: 16,
            block_size: 512,
            same: None,
        }
    }

    #[test]
    fn a_finished_step_shows_its_passes_and_the_next_one_runs() {
        let plans = [
            plan(1, StepKind::WriteVerify, 1024),
            plan(2, StepKind::Read, 1024),
        ];
        let pass = |op: &'static str| PassResult {
            op: op.into(),
            ios: 64,
            bytes: 512 * 1024,
            blocks: 1024,
            ..PassResult::default()
        };
        let first = StepResult {
            index: 1,
            status: Status::Failed,
            blocks_transferred: 2048,
            passes: vec![pass("write"), pass("read")],
            miscompares: 3,
            ..StepResult::default()
        };
        let seq = Sequence {
            plans: &plans,
            finished: std::slice::from_ref(&first),
            running_blocks: 100,
            held: None,
        };
        let f = families(&seq, false);
        let state = find(&f, &TEST_STEP_STATE).unwrap();
        assert_eq!(
            state.get(&["1", "write-verify", "failed"]),
            Some(&Value::Gauge(1.0))
        );
        assert_eq!(
            state.get(&["1", "write-verify", "running"]),
            Some(&Value::Gauge(0.0))
        );
        assert_eq!(
            state.get(&["2", "read", "running"]),
            Some(&Value::Gauge(1.0))
        );
        let planned = find(&f, &TEST_STEP_PLANNED).unwrap();
        assert_eq!(
            planned.get(&["1", "write-verify"]),
            Some(&Value::Gauge(2048.0 * 512.0))
        );
        let done = find(&f, &TEST_STEP_DONE).unwrap();
        assert_eq!(done.get(&["2", "read"]), Some(&Value::Gauge(51200.0)));
        let ios = find(&f, &TEST_IOS).unwrap();
        assert_eq!(
            ios.get(&["1", "write-verify", "read"]),
            Some(&Value::Counter(64))
        );
        assert_eq!(ios.samples.len(), 2, "only the finished step's passes");
        let mis = find(&f, &TEST_MISCOMPARES).unwrap();
        assert_eq!(mis.get(&["1", "write-verify"]), Some(&Value::Counter(3)));

        // Ended after the first step (the second skipped by the caller's
        // result is what a real sequence has; without it, it waits).
        let f = families(&seq, true);
        let state = find(&f, &TEST_STEP_STATE).unwrap();
        assert_eq!(
            state.get(&["2", "read", "waiting"]),
            Some(&Value::Gauge(1.0))
        );
    }
}
