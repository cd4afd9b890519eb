//! fio's `flow`: jobs that share a `flow_id` issue I/O in the ratio of
//! their `flow` weights, and what ends a job's peers (`exitall`, `exit_what`).
//!
//! fio 3.33's arithmetic: each flow has one shared counter, starting at 1,
//! and the sum of its members' weights; each member counts its own I/Os.
//! Before an I/O a member compares its share of the shared count with its
//! share of the weight: when `own / shared > weight / total` it is ahead
//! and holds back (with `flow_sleep`, it first lets its I/Os in flight
//! complete, then waits that long; without, it tries again at once).
//! Otherwise it issues, adding one to both counts. A member that leaves
//! takes its count and its weight out of the flow, so the others go on in
//! their own ratio. The job loop asks before each I/O and answers through
//! its deadlines ([`FlowMember::hold`]): one relaxed read of the two shared
//! atomics and one add per I/O, no lock and no sleep.

use crate::spec::decl::{opt, OptionDecl};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use drivelab_engine::ioloop::Next;

/// The flow options of a job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowOpts {
    /// `flow`: the job's weight (0: not in any flow).
    pub weight: u32,
    /// `flow_id`: the flow it counts in.
    pub id: u32,
    /// `flow_sleep`: the pause after being held, µs.
    pub sleep_us: u64,
}

/// One flow's shared state.
#[derive(Debug)]
pub struct Flow {
    id: u32,
    counter: AtomicU64,
    total_weight: AtomicU64,
}

/// The flows of the running jobs, by id (fio keeps one list per run; a
/// flow lives while a member holds it).
static FLOWS: Mutex<Vec<Weak<Flow>>> = Mutex::new(Vec::new());

/// A job's place in its flow: its weight is counted in the flow's total
/// from [`join`] until it is dropped.
#[derive(Debug)]
pub struct Joined {
    flow: Arc<Flow>,
    weight: u64,
    sleep_ns: u64,
}

impl Drop for Joined {
    fn drop(&mut self) {
        self.flow
            .total_weight
            .fetch_sub(self.weight, Ordering::Relaxed);
    }
}

/// Join the flow `opts.id` with the job's weight (None when the job has no
/// `flow`). Done while the job is set up, before any job of its group
/// starts, so every member's weight counts from the first I/O.
pub fn join(opts: &FlowOpts) -> Option<Arc<Joined>> {
    if opts.weight == 0 {
        return None;
    }
    let mut flows = FLOWS.lock().unwrap_or_else(|p| p.into_inner());
    flows.retain(|w| w.strong_count() > 0);
    let flow = flows
        .iter()
        .filter_map(Weak::upgrade)
        .find(|f| f.id == opts.id)
        .unwrap_or_else(|| {
            let f = Arc::new(Flow {
                id: opts.id,
                counter: AtomicU64::new(1),
                total_weight: AtomicU64::new(0),
            });
            flows.push(Arc::downgrade(&f));
            f
        });
    flow.total_weight
        .fetch_add(u64::from(opts.weight), Ordering::Relaxed);
    Some(Arc::new(Joined {
        flow,
        weight: u64::from(opts.weight),
        sleep_ns: opts.sleep_us.saturating_mul(1000),
    }))
}

/// fio's test: a member that did `own` of the flow's `shared` count is
/// ahead of its `weight` in `total` when its share of the count is larger.
#[inline]
pub fn ahead(own: u64, shared: u64, weight: u64, total: u64) -> bool {
    let count_ratio = own as f64 / shared.max(1) as f64;
    let weight_ratio = weight as f64 / total.max(1) as f64;
    count_ratio > weight_ratio
}

/// A running job's flow state.
#[derive(Debug)]
pub struct FlowMember {
    joined: Arc<Joined>,
    own: u64,
    /// Held with flow_sleep: the pause ends at this monotonic time, ns.
    until: Option<u64>,
}

impl FlowMember {
    /// The member for a job that joined its flow.
    pub fn new(joined: Arc<Joined>) -> FlowMember {
        FlowMember {
            joined,
            own: 0,
            until: None,
        }
    }

    /// Before an I/O, at monotonic time `now` with `inflight` I/Os in
    /// flight: `Some(next)` while the job is held back (what the loop is to
    /// do meanwhile), None when the I/O may go (it is then counted).
    #[inline]
    pub fn hold(&mut self, now: u64, inflight: u32) -> Option<Next> {
        if let Some(end) = self.until {
            if now < end {
                return Some(Next::At(end));
            }
            self.until = None;
        }
        let f = &self.joined.flow;
        let shared = f.counter.load(Ordering::Relaxed);
        let total = f.total_weight.load(Ordering::Relaxed);
        if ahead(self.own, shared, self.joined.weight, total) {
            if self.joined.sleep_ns == 0 {
                // fio tries again at once.
                return Some(Next::At(now));
            }
            if inflight > 0 {
                // fio quiesces first: the pause starts with nothing in flight.
                return Some(Next::Idle);
            }
            let end = now + self.joined.sleep_ns;
            self.until = Some(end);
            return Some(Next::At(end));
        }
        f.counter.fetch_add(1, Ordering::Relaxed);
        self.own += 1;
        None
    }

    /// I/Os this member was let through.
    pub fn count(&self) -> u64 {
        self.own
    }
}

impl Drop for FlowMember {
    fn drop(&mut self) {
        // The member's I/Os leave the shared count with it.
        self.joined
            .flow
            .counter
            .fetch_sub(self.own, Ordering::Relaxed);
    }
}

/// `exit_what`: which jobs a finishing `exitall` job ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of its reporting group (fio's default).
    #[default]
    Group,
    /// Every running job: the rest of its stonewall group.
    Stonewall,
    /// Every job: the running ones end, later groups never start.
    All,
}

impl ExitWhat {
    /// Parse fio's value.
    pub fn parse(key: &str, v: &str) -> Result<ExitWhat, crate::SpecError> {
        match v.trim() {
            "group" => Ok(ExitWhat::Group),
            "stonewall" => Ok(ExitWhat::Stonewall),
            "all" => Ok(ExitWhat::All),
            _ => Err(crate::SpecError::BadValue {
                key: key.to_string(),
                value: v.to_string(),
                expect: "group, stonewall or all".to_string(),
            }),
        }
    }
}

/// `exitall` and `exit_what`: whether a finishing job ends others, and
/// which.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExitOpts {
    /// When this job finishes, end the others of its group (`exitall`).
    pub exitall: bool,
    /// What a finishing `exitall` job ends (`exit_what`).
    pub what: ExitWhat,
    /// When this job ends in an error, end what `exit_what` says
    /// (`exitall_on_error`).
    pub on_error: bool,
}

impl ExitOpts {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "exitall",
            [],
            Bool,
            "0",
            "when this job finishes, end the other jobs of its reporting group (they report what they did)"
        ),
        opt!(
            "exitall_on_error",
            [],
            Bool,
            "0",
            "when this job ends in an error, end the jobs exit_what names (as exitall does when it finishes)"
        ),
        opt!(
            "exit_what",
            [],
            Text,
            "group",
            "which jobs exitall ends when this job finishes: group (its reporting group), stonewall (every running job), all (every job, later stonewall groups never start)"
        ),
    ];
}

impl crate::spec::family::OptionFamily for ExitOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), crate::SpecError> {
        match key {
            "exitall" => self.exitall = crate::spec::value::parse_flag(key, v)?,
            "exitall_on_error" => self.on_error = crate::spec::value::parse_flag(key, v)?,
            _ => self.what = ExitWhat::parse(key, v)?,
        }
        Ok(())
    }
}

/// The end flags of one stonewall group's jobs, one per reporting group,
/// made when a job of it has `exitall` (fio's `fio_terminate_threads`).
#[derive(Debug, Default)]
pub struct GroupFlags {
    flags: Vec<(u32, Arc<std::sync::atomic::AtomicBool>)>,
}

impl GroupFlags {
    /// The flags of the jobs of one stonewall group (none when no job of it
    /// has `exitall`).
    pub fn new<'a>(
        jobs: impl Iterator<Item = &'a crate::plan::model::PlannedJob> + Clone,
    ) -> GroupFlags {
        let mut out = GroupFlags::default();
        if !jobs
            .clone()
            .any(|j| j.spec.exit.exitall || j.spec.exit.on_error)
        {
            return out;
        }
        for j in jobs {
            if !out.flags.iter().any(|(g, _)| *g == j.group) {
                out.flags.push((j.group, Arc::default()));
            }
        }
        out
    }

    /// The flag a job of reporting group `group` watches.
    pub fn flag(&self, group: u32) -> Option<Arc<std::sync::atomic::AtomicBool>> {
        self.flags
            .iter()
            .find(|(g, _)| *g == group)
            .map(|(_, f)| f.clone())
    }

    /// An `exitall` job finished: end what its `exit_what` says; `all`
    /// also keeps later stonewall groups from starting.
    pub fn finished(
        &self,
        job: &crate::plan::model::PlannedJob,
        all: &std::sync::atomic::AtomicBool,
    ) {
        for (g, f) in &self.flags {
            let hit = match job.spec.exit.what {
                ExitWhat::Group => *g == job.group,
                ExitWhat::Stonewall | ExitWhat::All => true,
            };
            if hit {
                f.store(true, Ordering::Relaxed);
            }
        }
        if job.spec.exit.what == ExitWhat::All {
            all.store(true, Ordering::Relaxed);
        }
    }
}

impl FlowOpts {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "flow",
            [],
            Int,
            "0 (no flow control)",
            "weight of this job in its flow_id group: the jobs of a group issue I/O in the ratio of their weights (fio's token counting)",
            0,
            1000,
            ""
        ),
        opt!(
            "flow_id",
            [],
            Int,
            "0",
            "the flow group this job's flow weight counts in",
            0,
            u32::MAX as u64,
            ""
        ),
        opt!(
            "flow_sleep",
            [],
            Int,
            "0",
            "when the job is ahead of its flow share: wait for its I/Os to complete, then this long before trying again (0: try again at once)",
            0,
            u32::MAX as u64,
            "us"
        ),
    ];
}

impl crate::spec::family::OptionFamily for FlowOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), crate::SpecError> {
        let n = crate::spec::decl::parse_in(Self::OPTIONS, key, v)?;
        match key {
            "flow" => self.weight = n as u32,
            "flow_id" => self.id = n as u32,
            _ => self.sleep_us = n,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_test_is_fios() {
        // A fresh flow: shared count 1. Nobody is ahead at zero.
        assert!(!ahead(0, 1, 1, 9));
        // 1 of 2 done by the weight-1 job of 1+8: ahead.
        assert!(ahead(1, 2, 1, 9));
        // 1 of 9 with weight 1 of 9: exactly its share, not ahead.
        assert!(!ahead(1, 9, 1, 9));
        assert!(ahead(2, 10, 1, 9));
        // The heavy job: 8 of 10 with weight 8 of 9 is not ahead.
        assert!(!ahead(8, 10, 8, 9));
    }

    /// Two members issuing in turns, each as often as `hold` lets it: the
    /// counts end in the ratio of the weights.
    fn interleave(id: u32, w1: u32, w2: u32, rounds: usize) -> (u64, u64) {
        let j1 = join(&FlowOpts {
            weight: w1,
            id,
            sleep_us: 0,
        })
        .unwrap();
        let j2 = join(&FlowOpts {
            weight: w2,
            id,
            sleep_us: 0,
        })
        .unwrap();
        let (mut a, mut b) = (FlowMember::new(j1), FlowMember::new(j2));
        for _ in 0..rounds {
            let _ = a.hold(0, 0);
            let _ = b.hold(0, 0);
        }
        (a.count(), b.count())
    }

    #[test]
    fn members_issue_in_the_ratio_of_their_weights() {
        let (a, b) = interleave(9001, 1, 8, 9000);
        assert!(a > 0 && b > 0);
        let r = b as f64 / a as f64;
        assert!((r - 8.0).abs() < 0.1, "{a} {b} {r}");
        let (a, b) = interleave(9002, 2, 2, 1000);
        assert!(a.abs_diff(b) <= 1, "{a} {b}");
    }

    #[test]
    fn a_member_that_leaves_takes_its_count_and_weight() {
        let j1 = join(&FlowOpts {
            weight: 3,
            id: 9003,
            sleep_us: 0,
        })
        .unwrap();
        let flow = j1.flow.clone();
        let j2 = join(&FlowOpts {
            weight: 1,
            id: 9003,
            sleep_us: 0,
        })
        .unwrap();
        assert_eq!(flow.total_weight.load(Ordering::Relaxed), 4);
        let mut m2 = FlowMember::new(j2);
        assert!(m2.hold(0, 0).is_none());
        assert_eq!(flow.counter.load(Ordering::Relaxed), 2);
        drop(m2);
        assert_eq!(flow.counter.load(Ordering::Relaxed), 1);
        assert_eq!(flow.total_weight.load(Ordering::Relaxed), 3);
        // Alone, the member is never ahead.
        let mut m1 = FlowMember::new(j1);
        for _ in 0..100 {
            assert!(m1.hold(0, 0).is_none());
        }
    }

    #[test]
    fn flow_sleep_quiesces_then_waits() {
        let ja = join(&FlowOpts {
            weight: 1,
            id: 9004,
            sleep_us: 500,
        })
        .unwrap();
        let _jb = join(&FlowOpts {
            weight: 1,
            id: 9004,
            sleep_us: 0,
        })
        .unwrap();
        let mut a = FlowMember::new(ja);
        assert!(a.hold(1000, 0).is_none());
        // Ahead now (1 of 2 with weight 1 of 2 is not ahead; 1 of 2 after
        // the shared count started at 1 is exactly 1/2: issue one more).
        let mut held = None;
        for _ in 0..3 {
            if let Some(n) = a.hold(1000, 2) {
                held = Some(n);
                break;
            }
        }
        assert_eq!(held, Some(Next::Idle));
        assert_eq!(a.hold(1000, 0), Some(Next::At(501_000)));
        assert_eq!(a.hold(2000, 0), Some(Next::At(501_000)));
    }

    #[test]
    fn exit_what_values() {
        assert_eq!(ExitWhat::parse("k", "all").unwrap(), ExitWhat::All);
        let e = ExitWhat::parse("exit_what", "some")
            .unwrap_err()
            .to_string();
        assert!(e.contains("exit_what"), "{e}");
    }
}
