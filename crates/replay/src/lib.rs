//! Trace replay, RankDisk-style: play a recorded block trace against a
//! target and score it. Four modes:
//!
//! - **Dependency** (the default for scores; hfplayer, FAST'17): each
//!   request waits for the completion it waited for in the trace (inferred
//!   by [`deps`]: issued within a window after a completion), then its
//!   think time; a request that waited for none keeps its gap to its
//!   predecessor's issue. Requests are issued in trace order. A faster drive
//!   completes sooner, so its dependents start sooner and the replay ends
//!   sooner: the score ranks drives. A request whose dependency was still in
//!   flight when its turn came is a *dependency wait* (counted, with the
//!   time waited). The chains of a closed loop each end where the recording
//!   cut them, together; a replay's drive serves them in its own order, so
//!   one can run out of requests while the others still have some. The
//!   completion of a chain's last request (one whose completion nobody
//!   claimed only because the trace ended, [`deps::Infer::open_at_end`])
//!   therefore releases the earliest request still waiting for a
//!   completion, as the freed slot it was; that request's own dependency,
//!   when it completes, does the same. Without this the replay ends at
//!   lower depth than the trace ever was, for as long as the chains
//!   drifted apart. Defaults taken from the trace: the window is a quarter
//!   of its mean service time (at least 1 ms), and the recording host's
//!   reaction to a completion, measured in the trace itself
//!   ([`deps::reaction`]: the time from a completion to the first issue
//!   after it, at the block layer, with the reactions another completion
//!   cut off counted as censored), is taken off each think time: its 95th
//!   percentile, so that whatever the host took to react in all but its
//!   slowest turns is replaced by the replayer's own path rather than
//!   added to it. The median of only the reactions no completion cut off
//!   is 4-6 us on a loop device at 55-70k IOPS and depth 4, where the
//!   estimate's median is 12-15 us; taken off, it leaves most of the
//!   host's path in the replay on top of the replayer's, and the replay
//!   holds 2.0-2.3 requests outstanding where the trace held 2.4-2.7
//!   (2.2-2.5 with the 95th percentile). A host that thinks the same time after every
//!   completion looks like a slow one to this measure, and that think time
//!   is taken off too (at depth 1 nothing is censored, and most of it is);
//!   a reaction of 0 (`--reaction-us 0`) keeps think times whole.
//!   The think time that times a request is counted from the latest
//!   completion the host could have seen before issuing it, not from the
//!   one it was paired with: a host that reaps several completions at once
//!   and submits their replacements together issues the later ones no
//!   later for having been paired with the earlier completions, so the
//!   replay does not spread a batch out by the time its completions were
//!   apart.
//!   That reaction is the host's own completion-to-issue path; the replay
//!   goes through its own instead, once: a request whose think time is
//!   at most the reaction is due when its dependency's completion is
//!   reaped, and goes out after the replayer's own turn (its reaction,
//!   measured as [`ReplayReport::replayer_reaction_ns`]); a longer one is
//!   due the rest of its think time later, and goes out after the turn
//!   that finds it due, the same path again. Neither adds the replayer's
//!   reaction to the recorder's: the block layer sees the replayer's
//!   reaction plus what the trace's think time had beyond the recorder's.
//! - **Original** (open loop): request i is due at
//!   `t0 + (issue_i − issue_0) / speed`, an absolute deadline, so
//!   per-request errors never accumulate into drift. The score is then the
//!   trace's own pace, whatever the drive.
//! - **Gaps** (fio's `read_iolog` timing): request i is due its trace gap
//!   (divided by `speed`) after request i−1 was issued, so a late request
//!   delays the rest. [`pace`] holds both open-loop rules.
//! - **As fast as possible** (no stall): in trace order, as fast as slots
//!   allow.
//! - **Closed loop**: exactly the engine's depth outstanding.
//!
//! Lateness is the actual issue time minus the intended one (the deadline,
//! or the dependency's completion plus think time, or the predecessor's
//! issue plus gap).
//! While a request is not yet due the loop waits in the kernel for
//! completions (so latency is not inflated by late reaping) with a timeout
//! that ends a little before the deadline, then spins on the clock for the
//! last stretch (original timing). In dependency timing a request due
//! within [`DEP_POLL_NS`] is awaited by polling the clock and the
//! completion queue instead, with no kernel timer; only longer waits sleep
//! in the kernel, with a timeout at the deadline. The thread's timer slack
//! is set to 1 ns. When every slot is
//! busy a due request waits for a completion: that is a stall, counted.
//!
//! Score (Intel RankDisk, seed 001): the average "head-to-head" time, the
//! mean time from the start of one request to the start of the next in the
//! replay, in ms; and 1000 / that, in I/O per second.
//!
//! Offsets past the end of a smaller target are wrapped (`offset mod room`)
//! or scaled (`offset × target / trace extent`), then aligned down to the
//! target's logical block; lengths are rounded up to it. Both are counted.
//!
//! [`session`] runs a whole replay from paths: trace, target checks,
//! optional recording of the replay, report; it replays from a [`spool`],
//! the trace parsed beforehand into binary records, so that no parsing
//! happens between a completion and the next issue. [`figures`] reads a
//! stored replay or audit back, with its figures and headline.

pub mod deps;
pub mod figures;
pub mod pace;
mod recent;
pub mod session;
pub mod spool;

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use std::sync::atomic::{AtomicBool, AtomicU64};

use drivelab_engine::engine::Engine;
use drivelab_engine::io::{IoDesc, Op};
use drivelab_engine::ioloop::{self, After, Done, Driver, LoopConfig, Next};
use drivelab_stats::{LatencyHistogram, Welford};
use drivelab_trace::fasthash::{map_with_capacity as idx_map, set_with_capacity, FastMap, FastSet};
use drivelab_trace::{Op as TOp, Request};
use serde::{Deserialize, Serialize};

/// How requests are timed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timing {
    /// Each request at its original time divided by `speed` (1.0 = as recorded).
    Original {
        /// Time compression factor (> 0).
        speed: f64,
    },
    /// Each request at least its trace gap (divided by `speed`) after the
    /// previous one's issue: fio's `read_iolog` timing ([`pace::Pace::Gaps`]).
    Gaps {
        /// Time compression factor (> 0).
        speed: f64,
    },
    /// As fast as free slots allow, in trace order.
    NoStall,
    /// Closed loop: keep exactly the engine's depth outstanding.
    ClosedLoop,
    /// Keep the trace's dependencies and think times (see [`deps`]).
    Dependency {
        /// A request issued at most this long after a completion depends
        /// on it, ns. `None`: [`default_window`] of the trace (1 ms when
        /// [`replay`] is called without it).
        window_ns: Option<u64>,
        /// The recording host's own reaction to a completion, ns: this much
        /// of each think time is taken off, since the replay goes through
        /// its own completion-to-issue path (reaping, submitting, the block
        /// layer) instead. `None`: the 95th percentile of the recording
        /// host's reaction measured in the trace ([`deps::reaction`]) when
        /// the session reads it; 0 when [`replay`] is called without it.
        reaction_ns: Option<u64>,
    },
}

impl Timing {
    /// The dependency mode with the window and reaction taken from the
    /// trace.
    pub const DEPENDENCY: Timing = Timing::Dependency {
        window_ns: None,
        reaction_ns: None,
    };

    /// The mode's name in reports: "dependency", "original", "afap",
    /// "closed-loop".
    pub fn name(&self) -> &'static str {
        match self {
            Timing::Dependency { .. } => "dependency",
            Timing::Original { .. } => "original",
            Timing::Gaps { .. } => "gaps",
            Timing::NoStall => "afap",
            Timing::ClosedLoop => "closed-loop",
        }
    }
}

/// What to do with offsets beyond the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remap {
    /// `offset mod (target − len)`.
    Wrap,
    /// `offset × target size / trace extent`.
    Scale,
}

/// Replay settings.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// Timing mode.
    pub timing: Timing,
    /// Remapping of offsets beyond the target.
    pub remap: Remap,
    /// Target size, bytes.
    pub target_size: u64,
    /// Target logical block size, bytes.
    pub logical_block: u64,
    /// Extent of the trace (largest offset + len), bytes, for `Remap::Scale`.
    pub trace_extent: u64,
}

/// A first pass over a trace: what the replay needs to size itself.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Prepass {
    /// Requests.
    pub requests: u64,
    /// Largest request, bytes.
    pub max_len: u64,
    /// Largest offset + len.
    pub extent: u64,
    /// Span of issue times, ns.
    pub span_ns: u64,
    /// Requests that modify the target (writes and trims).
    pub modifying: u64,
    /// Mean service time of the requests with a completion, ns.
    pub mean_service_ns: Option<f64>,
}

/// Scan a trace once.
pub fn prepass<I: Iterator<Item = drivelab_trace::Result<Request>>>(
    reqs: I,
) -> drivelab_trace::Result<Prepass> {
    let mut p = Prepass::default();
    let mut first: Option<u64> = None;
    let (mut svc_sum, mut svc_n) = (0.0f64, 0u64);
    for r in reqs {
        let r = r?;
        if let Some(t) = r.service_ns() {
            svc_sum += t as f64;
            svc_n += 1;
        }
        p.requests += 1;
        p.max_len = p.max_len.max(r.len);
        p.extent = p.extent.max(r.offset + r.len);
        p.modifying += u64::from(matches!(r.op, TOp::Write | TOp::Trim));
        let f = *first.get_or_insert(r.issue_ns);
        p.span_ns = p.span_ns.max(r.issue_ns.saturating_sub(f));
    }
    p.mean_service_ns = (svc_n > 0).then(|| svc_sum / svc_n as f64);
    Ok(p)
}

/// The dependency window for a trace whose mean service time is
/// `mean_service_ns`: a quarter of it, at least 1 ms. A host replaces a
/// completed request in microseconds on a fast machine, in milliseconds on
/// a slow or emulated one; either is short beside the drive's own service
/// time, and a request that arrives on its own seldom follows a completion
/// that closely.
pub fn default_window(mean_service_ns: Option<f64>) -> u64 {
    let q = mean_service_ns.map_or(0.0, |m| m / 4.0);
    (q as u64).max(1_000_000)
}

/// Latency-like statistics, ns.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Dist {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// Smallest.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

impl Dist {
    fn from(h: &LatencyHistogram, w: &Welford) -> Dist {
        let p = |q: f64| h.percentile(q).unwrap_or(0);
        Dist {
            count: h.count(),
            mean: w.mean(),
            stddev: w.stddev(),
            min: h.min().unwrap_or(0),
            p50: p(50.0),
            p90: p(90.0),
            p99: p(99.0),
            p999: p(99.9),
            max: h.max().unwrap_or(0),
        }
    }
}

/// The RankDisk score. A replay in which any request failed has none (0,
/// with `withheld` saying why): a failed request is answered at once, so
/// the pace of a replay onto a failing target says nothing of the drive.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Score {
    /// Mean time between the starts of consecutive requests, ms.
    pub head_to_head_ms: f64,
    /// 1000 / head_to_head_ms.
    pub iops: f64,
    /// Why there is no score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
}

/// A replay's counters as it runs, for a reader on another thread (the
/// live metrics): copied from the replay's own figures once per turn of its
/// loop, never per request.
#[derive(Debug, Default)]
pub struct Progress {
    /// Requests in the trace (set before the replay starts).
    pub planned: AtomicU64,
    /// Requests issued.
    pub requests: AtomicU64,
    /// Requests completed without error.
    pub completed: AtomicU64,
    /// Requests that failed.
    pub errors: AtomicU64,
    /// Bytes read by completed requests.
    pub bytes_read: AtomicU64,
    /// Bytes written by completed requests.
    pub bytes_written: AtomicU64,
}

impl Progress {
    /// Copy `r`'s counters.
    fn store(&self, r: &ReplayReport) {
        use std::sync::atomic::Ordering::Relaxed;
        self.requests.store(r.requests, Relaxed);
        self.completed.store(r.completed, Relaxed);
        self.errors.store(r.errors, Relaxed);
        self.bytes_read.store(r.bytes_read, Relaxed);
        self.bytes_written.store(r.bytes_written, Relaxed);
    }
}

/// What a replay did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ReplayReport {
    /// Timing mode: dependency, original, afap or closed-loop.
    pub mode: Cow<'static, str>,
    /// Requests issued.
    pub requests: u64,
    /// Requests completed without error.
    pub completed: u64,
    /// Requests that failed.
    pub errors: u64,
    /// The first failure in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Reads, writes, trims, flushes issued.
    pub reads: u64,
    /// Writes issued.
    pub writes: u64,
    /// Trims issued.
    pub trims: u64,
    /// Flushes issued.
    pub flushes: u64,
    /// Bytes read by requests that completed (a failed one moved none).
    pub bytes_read: u64,
    /// Bytes written by requests that completed.
    pub bytes_written: u64,
    /// First issue to last completion, seconds.
    pub duration_s: f64,
    /// RankDisk-style score.
    pub score: Score,
    /// Service time (issue to completion), ns.
    pub service_time_ns: Dist,
    /// Issue lateness (actual − intended issue time), ns; original and
    /// dependency timing.
    pub lateness_ns: Dist,
    /// Requests that were due while every slot was busy.
    pub stalls: u64,
    /// Waits for a request not yet due: in the kernel with a timer armed,
    /// and by polling the clock and the completion queue ([`DEP_POLL_NS`]).
    pub timed_waits: u64,
    /// See [`ReplayReport::timed_waits`].
    pub polls: u64,
    /// Dependency timing: requests that waited for a completion, and those
    /// timed from their predecessor's issue.
    pub dependencies: deps::DepCounts,
    /// Dependency timing: requests whose dependency was still in flight
    /// when their turn came.
    pub dependency_waits: u64,
    /// Dependency timing: how long those waited for it, ns.
    pub dependency_wait_ns: Dist,
    /// Dependency timing: requests released by a completion not their own
    /// dependency's, because another chain of the trace had run out (see
    /// the module doc).
    pub handed_on: u64,
    /// Dependency timing: the window and the reaction taken off think
    /// times, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependency_window_ns: Option<u64>,
    /// See [`Timing::Dependency::reaction_ns`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reaction_ns: Option<u64>,
    /// Dependency timing: the recording host's reaction measured in the
    /// trace ([`deps::reaction`]), when the session measured it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_reaction: Option<deps::Reaction>,
    /// Dependency timing: the replayer's own reaction, ns: from the clock
    /// read right after the kernel returned a dependency's completion to
    /// the queueing of its dependent in the same turn, for dependents due
    /// at once (think time at most the reaction taken off). The kernel's
    /// parts (completion to wake-up, submission to the block layer) are
    /// not in it; a recording of the replay shows them.
    pub replayer_reaction_ns: Dist,
    /// Requests moved by the remap because they lay beyond the target.
    pub remapped: u64,
    /// Requests whose offset or length was aligned to the logical block.
    pub aligned: u64,
    /// Stopped early (Ctrl-C).
    pub interrupted: bool,
    /// CPU time of the replaying thread from its first turn to its last,
    /// user and system, ns (what `run` reports as usr_cpu and sys_cpu).
    pub cpu_user_ns: u64,
    /// See [`ReplayReport::cpu_user_ns`].
    pub cpu_system_ns: u64,
}

impl ReplayReport {
    /// CPU time of the replaying thread per request issued, ns.
    pub fn cpu_ns_per_request(&self) -> f64 {
        (self.cpu_user_ns + self.cpu_system_ns) as f64 / self.requests.max(1) as f64
    }
}

fn set_timer_slack() {
    let _ = drivelab_engine::sys::set_timer_slack(1);
}

/// Map a trace request onto the target: remap and align.
fn place(r: &Request, o: &ReplayOptions, remapped: &mut u64, aligned: &mut u64) -> IoDesc {
    let lb = o.logical_block.max(1);
    let op = match r.op {
        TOp::Read => Op::Read,
        TOp::Write => Op::Write,
        TOp::Trim => Op::Trim,
        TOp::Flush => Op::Fsync,
    };
    if op == Op::Fsync {
        return IoDesc {
            target: 0,
            op,
            offset: 0,
            len: 0,
        };
    }
    let mut len = r.len.max(1);
    if len % lb != 0 {
        len = len.div_ceil(lb) * lb;
        *aligned += 1;
    }
    let len = len.min(o.target_size);
    let mut off = r.offset;
    if off % lb != 0 {
        off -= off % lb;
        *aligned += 1;
    }
    if off + len > o.target_size {
        *remapped += 1;
        let room = o.target_size - len;
        off = match o.remap {
            Remap::Wrap => off % (room + 1),
            Remap::Scale => {
                let ext = o.trace_extent.max(1) as u128;
                ((off as u128 * o.target_size as u128 / ext) as u64).min(room)
            }
        };
        off -= off % lb;
    }
    IoDesc {
        target: 0,
        op,
        offset: off,
        len: len as u32,
    }
}

/// A map keyed by trace index: hashed with one multiply, where SipHash
/// costs tens of nanoseconds a lookup and a request takes about ten
/// lookups between its arrival and its completion.
type IdxMap<V> = FastMap<u64, V>;
/// A set of trace indices.
type IdxSet = FastSet<u64>;

/// A replay as a driver of the engine's I/O loop: requests come from the
/// trace in order, each when its mode says it is due.
struct ReplayDriver<'a, I: Iterator<Item = drivelab_trace::Result<Request>>> {
    reqs: deps::Infer<I>,
    /// The next request, looked at and not yet issued.
    peeked: Option<drivelab_trace::Result<deps::Planned>>,
    o: &'a ReplayOptions,
    /// The other modes' deadlines (original or gap timing: requests have
    /// deadlines, [`pace::Pacer::timed`]).
    pacer: pace::Pacer,
    /// Dependency timing.
    dep: bool,
    first_issue: Option<u64>,
    last_issue: u64,
    last_done: u64,
    /// Dependency timing: the recent requests' issue times and the
    /// completion times nobody waited for yet, by index; and the indices
    /// in flight.
    recent: recent::Recent,
    inflight: IdxSet,
    /// Dependency timing: the lookahead (requests pulled from the trace,
    /// not yet issued) by index; those due, by due time; who waits for
    /// whose completion (dependency → dependent) and for whose issue
    /// (predecessor → successor); when each dependency wait began; whether
    /// the trace is exhausted.
    pending: IdxMap<deps::Planned>,
    ready: BinaryHeap<Reverse<(u64, u64)>>,
    by_dep: IdxMap<u64>,
    by_pred: IdxMap<u64>,
    wait_since: IdxMap<u64>,
    exhausted: bool,
    /// Dependency timing: requests whose completion frees a slot for the
    /// earliest request still waiting rather than for a dependent of its
    /// own: the ends of the trace's chains, and the dependencies of the
    /// requests such a slot released.
    hand_on: IdxSet,
    /// Dependency timing: the part of each think time that is the host's
    /// own completion-to-issue path, which the replay incurs again, ns.
    reaction_ns: u64,
    rep: ReplayReport,
    svc: LatencyHistogram,
    svc_w: Welford,
    late: LatencyHistogram,
    late_w: Welford,
    wait: LatencyHistogram,
    wait_w: Welford,
    react: LatencyHistogram,
    react_w: Welford,
    error: Option<drivelab_trace::TraceError>,
    /// Where a live reader sees the counters (copied once per turn).
    progress: Option<&'a Progress>,
}

impl<I: Iterator<Item = drivelab_trace::Result<Request>>> ReplayDriver<'_, I> {
    /// Requests looked at ahead in dependency timing: a request whose
    /// dependency has completed is issued even while an earlier one still
    /// waits for its own (the device may complete in another order than in
    /// the trace; in-order issue would then idle the queue).
    const LOOKAHEAD: usize = 64;

    /// Dependency timing: pull requests into the lookahead (each placed at
    /// once: due, waiting for its dependency's completion, or waiting for
    /// its predecessor's issue), then issue the earliest due, or say when
    /// to look again. Every step is a map or heap operation: the replay's
    /// own completion-to-issue path must stay as short as the recording
    /// host's, or it holds fewer requests outstanding than the trace did.
    fn next_dep(&mut self, now: u64) -> Next {
        while self.pending.len() < Self::LOOKAHEAD && self.error.is_none() && !self.exhausted {
            match self.reqs.next() {
                Some(Ok(p)) => self.plan_dep(p, now),
                Some(Err(e)) => self.error = Some(e),
                None => {
                    self.exhausted = true;
                    self.chain_ends();
                }
            }
        }
        if self.error.is_some() && self.pending.is_empty() {
            return Next::Done;
        }
        let Some(&Reverse((due, idx))) = self.ready.peek() else {
            return if self.pending.is_empty() {
                Next::Done
            } else {
                Next::Idle
            };
        };
        if due > now.saturating_add(DEP_BATCH_NS) {
            return Next::At(due);
        }
        self.ready.pop();
        let Some(p) = self.pending.remove(&idx) else {
            return Next::Idle;
        };
        if due == now {
            if let deps::Anchor::Completion {
                since_latest_ns, ..
            } = p.anchor
            {
                if since_latest_ns <= self.reaction_ns {
                    // Due since this turn's reap: the replayer's reaction.
                    let r = drivelab_engine::clock::now_ns().saturating_sub(now);
                    self.react.record(r);
                    self.react_w.record(r as f64);
                }
            }
        }
        self.inflight.insert(p.idx);
        self.recent.issued(p.idx, now);
        // Whoever waited for this issue: its successor (timed from it) and
        // the request that waits for its completion (now in flight).
        if let Some(next) = self.by_pred.remove(&p.idx) {
            if let Some(deps::Anchor::Issue { gap_ns }) = self.pending.get(&next).map(|q| q.anchor)
            {
                self.ready.push(Reverse((now + gap_ns, next)));
            }
        }
        if let Some(&dep) = self.by_dep.get(&p.idx) {
            self.wait_since.insert(dep, now);
            self.rep.dependency_waits += 1;
        }
        self.issue(p, due, now)
    }

    /// Dependency timing: place a request just pulled from the trace.
    fn plan_dep(&mut self, p: deps::Planned, now: u64) {
        let idx = p.idx;
        self.pending.insert(idx, p);
        match p.anchor {
            deps::Anchor::Issue { gap_ns } => {
                if idx == 0 || idx - 1 < self.recent.forgotten_below() {
                    self.ready.push(Reverse((now, idx)));
                } else if let Some(t) = self.recent.issued_at(idx - 1) {
                    self.ready.push(Reverse((t + gap_ns, idx)));
                } else {
                    self.by_pred.insert(idx - 1, idx);
                }
            }
            deps::Anchor::Completion {
                of,
                since_latest_ns,
                ..
            } => {
                if let Some(c) = self.recent.take_done(of) {
                    let due = self.due_after(c, since_latest_ns);
                    self.ready.push(Reverse((due, idx)));
                } else if self.inflight.contains(&of) {
                    // Its dependency is still in flight: a dependency wait.
                    self.by_dep.insert(of, idx);
                    self.wait_since.insert(idx, now);
                    self.rep.dependency_waits += 1;
                } else if self.recent.issued_at(of).is_some() || of < self.recent.forgotten_below()
                {
                    // Completed and forgotten (far behind): at once.
                    self.ready.push(Reverse((now, idx)));
                } else {
                    // Not issued yet (its own dependency pending).
                    self.by_dep.insert(of, idx);
                }
            }
        }
    }

    /// Dependency timing: request `tag` completed at `at`.
    fn done_dep(&mut self, tag: u64, at: u64) {
        self.inflight.remove(&tag);
        match self.by_dep.remove(&tag) {
            Some(idx) => self.release(idx, at),
            None if self.hand_on.remove(&tag) => self.hand_on_slot(at),
            None => {
                self.recent.completed(tag, at);
            }
        }
    }

    /// Dependency timing: request `idx`, which waited for a completion,
    /// got one at `at`: due after its think time.
    fn release(&mut self, idx: u64, at: u64) {
        if let Some(since) = self.wait_since.remove(&idx) {
            let w = at.saturating_sub(since);
            self.wait.record(w);
            self.wait_w.record(w as f64);
        }
        if let Some(deps::Anchor::Completion {
            since_latest_ns, ..
        }) = self.pending.get(&idx).map(|q| q.anchor)
        {
            let due = self.due_after(at, since_latest_ns);
            self.ready.push(Reverse((due, idx)));
        }
    }

    /// Dependency timing: when a request is due whose dependency completed
    /// at `at`: what the trace shows beyond the host's reaction, counted
    /// from the latest completion the host could have seen before the
    /// issue (`since_latest_ns` of [`deps::Anchor::Completion`]).
    fn due_after(&self, at: u64, since_latest_ns: u64) -> u64 {
        at + since_latest_ns.saturating_sub(self.reaction_ns)
    }

    /// Dependency timing: a completion at `at` that no request of the
    /// trace waits for any more freed a slot (see the module doc): it
    /// releases the earliest request still waiting for a completion, whose
    /// own dependency then frees a slot in turn. Runs only once a chain
    /// has run out, over at most the lookahead.
    fn hand_on_slot(&mut self, at: u64) {
        let Some((&of, &idx)) = self.by_dep.iter().min_by_key(|&(_, &idx)| idx) else {
            return;
        };
        self.by_dep.remove(&of);
        self.hand_on.insert(of);
        self.rep.handed_on += 1;
        self.release(idx, at);
    }

    /// Dependency timing, once the whole trace is in the lookahead: the
    /// requests that end its chains free a slot when they complete; those
    /// that have completed already do so now, in the order they completed.
    fn chain_ends(&mut self) {
        self.hand_on.extend(self.reqs.open_at_end());
        let mut done: Vec<(u64, u64)> = self
            .hand_on
            .iter()
            .filter_map(|i| self.recent.done_at(*i).map(|at| (at, *i)))
            .collect();
        done.sort_unstable();
        for (at, i) in done {
            self.recent.take_done(i);
            self.hand_on.remove(&i);
            self.hand_on_slot(at);
        }
    }

    /// Account and hand over request `p`, due at `due`, issued `now`.
    fn issue(&mut self, p: deps::Planned, due: u64, now: u64) -> Next {
        let rep = &mut self.rep;
        let io = place(&p.req, self.o, &mut rep.remapped, &mut rep.aligned);
        match io.op {
            Op::Read => rep.reads += 1,
            Op::Write => rep.writes += 1,
            Op::Trim => rep.trims += 1,
            Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => rep.flushes += 1,
        }
        if self.pacer.timed() || self.dep {
            let l = now.saturating_sub(due);
            self.late.record(l);
            self.late_w.record(l as f64);
        }
        self.first_issue.get_or_insert(now);
        self.last_issue = now;
        rep.requests += 1;
        Next::Io {
            io,
            due: (self.pacer.timed() || self.dep).then_some(due),
            tag: p.idx,
        }
    }
}

impl<I: Iterator<Item = drivelab_trace::Result<Request>>> Driver for ReplayDriver<'_, I> {
    // Buffers were filled once (random data, as fio's); never looked at.
    const BUFFERS: bool = false;

    fn turn(&mut self, _now: u64) -> bool {
        if let Some(p) = self.progress {
            p.store(&self.rep);
        }
        false
    }

    fn next(&mut self, now: u64, _inflight: u32, _buf: &mut [u8]) -> Next {
        if self.dep {
            return self.next_dep(now);
        }
        if self.peeked.is_none() {
            self.peeked = self.reqs.next();
        }
        let p = match self.peeked.as_ref() {
            None => return Next::Done,
            Some(Err(_)) => {
                if let Some(Err(e)) = self.peeked.take() {
                    self.error = Some(e);
                }
                return Next::Done;
            }
            Some(Ok(p)) => *p,
        };
        let due = self.pacer.due(p.req.issue_ns, now);
        if due > now {
            return Next::At(due);
        }
        self.peeked = None;
        self.pacer.issued(p.req.issue_ns, now);
        self.issue(p, due, now)
    }

    fn complete(&mut self, d: &Done, _buf: &[u8]) -> After {
        if !d.is_full() {
            // A short transfer is a failed request too: the target ended
            // before the range (it shrank or vanished).
            self.rep.errors += 1;
            if self.rep.first_error.is_none() {
                self.rep.first_error = Some(if d.result < 0 {
                    format!(
                        "a request failed: {}",
                        std::io::Error::from_raw_os_error(-d.result)
                    )
                } else {
                    format!(
                        "a request moved {} of {} bytes at byte {}: the target ends before it",
                        d.result, d.io.len, d.io.offset
                    )
                });
            }
        } else {
            self.rep.completed += 1;
            let moved = d.result as u64;
            match d.io.op {
                Op::Read => self.rep.bytes_read += moved,
                Op::Write => self.rep.bytes_written += moved,
                Op::Trim | Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => {}
            }
            let l = d.latency();
            self.svc.record(l);
            self.svc_w.record(l as f64);
        }
        if self.dep {
            self.done_dep(d.tag, d.now);
        }
        self.last_done = d.now;
        After::Release
    }
}

/// Replay `reqs` on `engine` (one target, slot buffers at least the trace's
/// largest request). `stop` ends it early.
pub fn replay<E, I>(
    engine: &mut E,
    reqs: I,
    o: &ReplayOptions,
    stop: &AtomicBool,
) -> Result<ReplayReport, ReplayError>
where
    E: Engine,
    I: Iterator<Item = drivelab_trace::Result<Request>>,
{
    replay_watched(engine, reqs, o, stop, None)
}

/// [`replay`], its counters copied into `progress` once per turn of the
/// loop as it runs.
pub fn replay_watched<E, I>(
    engine: &mut E,
    reqs: I,
    o: &ReplayOptions,
    stop: &AtomicBool,
    progress: Option<&Progress>,
) -> Result<ReplayReport, ReplayError>
where
    E: Engine,
    I: Iterator<Item = drivelab_trace::Result<Request>>,
{
    set_timer_slack();
    // A speed that is not above 0 plays at the trace's own pace.
    let sane = |speed: f64| if speed > 0.0 { speed } else { 1.0 };
    let pacer = pace::Pacer::new(match o.timing {
        Timing::Original { speed } => pace::Pace::Original { speed: sane(speed) },
        Timing::Gaps { speed } => pace::Pace::Gaps { speed: sane(speed) },
        _ => pace::Pace::NoStall,
    });
    let timed = pacer.timed();
    let window = match o.timing {
        Timing::Dependency { window_ns, .. } => Some(window_ns.unwrap_or(1_000_000)),
        _ => None,
    };
    // Dependency timing only: the other modes keep no maps.
    let (lookahead, o_depth) = if window.is_some() {
        (ReplayDriver::<I>::LOOKAHEAD, engine.depth() as usize)
    } else {
        (0, 0)
    };
    let mut drv = ReplayDriver {
        reqs: deps::Infer::new(reqs, window),
        peeked: None,
        o,
        pacer,
        dep: window.is_some(),
        first_issue: None,
        last_issue: 0,
        last_done: 0,
        // Sized once for what they hold at most (the recent requests, the
        // lookahead, the slots), so no request allocates.
        recent: recent::Recent::new(window.is_some()),
        inflight: set_with_capacity(o_depth + lookahead),
        pending: idx_map(lookahead),
        ready: BinaryHeap::with_capacity(lookahead),
        by_dep: idx_map(lookahead),
        by_pred: idx_map(lookahead),
        wait_since: idx_map(lookahead),
        exhausted: false,
        hand_on: IdxSet::default(),
        reaction_ns: match o.timing {
            Timing::Dependency { reaction_ns, .. } => reaction_ns.unwrap_or(0),
            _ => 0,
        },
        rep: ReplayReport {
            mode: o.timing.name().into(),
            ..ReplayReport::default()
        },
        svc: LatencyHistogram::new(),
        svc_w: Welford::new(),
        late: LatencyHistogram::new(),
        late_w: Welford::new(),
        wait: LatencyHistogram::new(),
        wait_w: Welford::new(),
        react: LatencyHistogram::new(),
        react_w: Welford::new(),
        error: None,
        progress,
    };
    // Original timing spins the last stretch before a deadline rather than
    // sleep through it; dependency timing polls through the short waits
    // after a completion (see the module doc).
    let lc = LoopConfig {
        stop: Some(stop),
        spin_ns: if timed { 150_000 } else { 0 },
        poll_ns: if window.is_some() { DEP_POLL_NS } else { 0 },
        // The trace's requests reach the device as recorded, not merged
        // by the block layer because they shared a submission here.
        keep_apart: true,
        ..LoopConfig::default()
    };
    let cpu0 = drivelab_engine::sys::thread_usage();
    let st = ioloop::run(engine, &mut drv, &lc)?;
    let cpu1 = drivelab_engine::sys::thread_usage();
    if let Some(e) = drv.error {
        return Err(ReplayError::Trace(e));
    }
    let mut rep = drv.rep;
    rep.interrupted = st.interrupted;
    rep.stalls = st.stalls;
    rep.timed_waits = st.timed_waits;
    rep.polls = st.polls;
    rep.cpu_user_ns = cpu1.user_ns.saturating_sub(cpu0.user_ns);
    rep.cpu_system_ns = cpu1.system_ns.saturating_sub(cpu0.system_ns);
    rep.dependencies = drv.reqs.counts;
    let first = drv.first_issue.unwrap_or(st.started);
    let end = drv.last_done.max(drv.last_issue).max(first);
    rep.duration_s = end.saturating_sub(first) as f64 / 1e9;
    if rep.errors > 0 {
        rep.score.withheld = Some(format!(
            "{} of {} requests failed",
            rep.errors, rep.requests
        ));
    } else if rep.requests > 1 {
        let h2h = (drv.last_issue - first) as f64 / (rep.requests - 1) as f64 / 1e6;
        rep.score = Score {
            head_to_head_ms: h2h,
            iops: if h2h > 0.0 { 1000.0 / h2h } else { 0.0 },
            withheld: None,
        };
    }
    rep.service_time_ns = Dist::from(&drv.svc, &drv.svc_w);
    if timed || window.is_some() {
        rep.lateness_ns = Dist::from(&drv.late, &drv.late_w);
    }
    rep.dependency_wait_ns = Dist::from(&drv.wait, &drv.wait_w);
    rep.replayer_reaction_ns = Dist::from(&drv.react, &drv.react_w);
    if window.is_some() {
        rep.dependency_window_ns = window;
        rep.reaction_ns = Some(drv.reaction_ns);
    }
    Ok(rep)
}

/// Dependency timing: a request due at most this long from now is awaited
/// by polling the clock and the completion queue, with no kernel timer. A
/// dependent request is due a think time after its dependency's
/// completion, with the recording host's reaction taken off: on a fast
/// device most are due at once or within some microseconds, where a kernel
/// wait with a timer (arming it, sleeping, waking, entering the kernel
/// again to submit) costs about as much CPU as a request's own I/O path.
/// Longer waits, rarer, still sleep in the kernel.
pub const DEP_POLL_NS: u64 = 50_000;

/// Dependency timing: a request due at most this long after the loop's
/// current clock is issued in the current turn, with the requests already
/// queued, rather than by a turn of its own after a poll: a turn of the
/// loop and its submission cost the replayer about a microsecond (its
/// reaction, reaped to queued, [`ReplayReport::replayer_reaction_ns`], is
/// 0.3-1.3 us at the median on a loop device over tmpfs), so a wait
/// shorter than that is not kept anyway, and issuing the request with the
/// turn's other ones saves the second entry into the kernel.
pub const DEP_BATCH_NS: u64 = 1_000;

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] drivelab_trace::TraceError),
    /// The engine failed.
    #[error("the I/O engine failed: {0}")]
    Engine(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_engine::buf::Fill;
    use drivelab_engine::engine::Null;

    fn reqs(n: u64, gap_ns: u64) -> Vec<drivelab_trace::Result<Request>> {
        (0..n)
            .map(|i| Ok(Request::new(i * gap_ns, TOp::Read, i * 4096, 4096)))
            .collect()
    }

    fn opts(timing: Timing) -> ReplayOptions {
        ReplayOptions {
            timing,
            remap: Remap::Wrap,
            target_size: 1 << 30,
            logical_block: 512,
            trace_extent: 1 << 30,
        }
    }

    #[test]
    fn original_timing_keeps_the_schedule_without_drift() {
        let mut e = Null::new(8, 4096, Fill::Random(1)).unwrap();
        let stop = AtomicBool::new(false);
        // 500 requests, 1 ms apart: 499 ms of schedule.
        let t = std::time::Instant::now();
        let r = replay(
            &mut e,
            reqs(500, 1_000_000).into_iter(),
            &opts(Timing::Original { speed: 1.0 }),
            &stop,
        )
        .unwrap();
        let el = t.elapsed().as_secs_f64();
        assert_eq!(r.requests, 500);
        assert_eq!(r.completed, 500);
        // Never early; the upper bound only catches a schedule abandoned
        // (drift shows in head-to-head below, which a loaded host's
        // scheduling delays barely move).
        assert!(
            (0.49..3.0).contains(&el),
            "took {el}s for a 0.499 s schedule"
        );
        // Head-to-head is the original gap.
        assert!(
            (r.score.head_to_head_ms - 1.0).abs() < 0.02,
            "{:?}",
            r.score
        );
        assert!(
            r.lateness_ns.p50 < 1_000_000,
            "median lateness {} ns",
            r.lateness_ns.p50
        );
    }

    #[test]
    fn speed_compresses_time() {
        let mut e = Null::new(8, 4096, Fill::Random(1)).unwrap();
        let stop = AtomicBool::new(false);
        let r = replay(
            &mut e,
            reqs(200, 1_000_000).into_iter(),
            &opts(Timing::Original { speed: 4.0 }),
            &stop,
        )
        .unwrap();
        // 1 ms apart at 4x: 0.25 ms. A loaded host can issue the last
        // request a few ms late (0.02 ms over 199 gaps per 4 ms); 2x (0.5)
        // and 8x (0.125) stay far outside.
        assert!(
            (r.score.head_to_head_ms - 0.25).abs() < 0.05,
            "{:?}",
            r.score
        );
    }

    #[test]
    fn closed_loop_ignores_timing() {
        let mut e = Null::new(4, 4096, Fill::Random(1)).unwrap();
        let stop = AtomicBool::new(false);
        let t = std::time::Instant::now();
        let r = replay(
            &mut e,
            reqs(1000, 10_000_000).into_iter(),
            &opts(Timing::ClosedLoop),
            &stop,
        )
        .unwrap();
        assert_eq!(r.completed, 1000);
        assert!(
            t.elapsed().as_secs_f64() < 5.0,
            "closed loop waited for the 10 s schedule"
        );
        assert_eq!(r.lateness_ns.count, 0);
    }

    fn spooled(
        reqs: Vec<drivelab_trace::Result<Request>>,
        mem_records: usize,
        tag: &str,
    ) -> (spool::Spool, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("drivelab-replay-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let o = spool::SpoolOptions {
            mem_bytes: mem_records * spool::RECORD,
            dir: dir.clone(),
        };
        (spool::Spool::build(reqs.into_iter(), &o).unwrap(), dir)
    }

    #[test]
    fn a_closed_loop_from_a_spool_beyond_its_memory_issues_every_request_once_in_trace_order() {
        // 5,000 requests at scattered offsets, 1,000 of them in memory and
        // the rest read back from the spool file while the replay plays.
        let n = 5_000u64;
        let trace: Vec<Request> = (0..n)
            .map(|i| Request::new(i * 1_000, TOp::Read, (i * 7_919 % n) * 4096, 4096))
            .collect();
        let (s, dir) = spooled(trace.iter().map(|r| Ok(*r)).collect(), 1_000, "closed");
        assert_eq!((s.len(), s.in_file()), (n, n - 1_000));
        let mut e = Slow::new(20_000, 4);
        let stop = AtomicBool::new(false);
        let r = replay(&mut e, s.iter(), &opts(Timing::ClosedLoop), &stop).unwrap();
        assert_eq!((r.requests, r.completed, r.errors), (n, n, 0));
        assert_eq!(r.bytes_read, n * 4096);
        let want: Vec<u64> = trace.iter().map(|r| r.offset).collect();
        assert!(e.queued == want, "the replay's order is not the trace's");
        drop(s);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_dependency_replay_from_the_spool_file_infers_the_same_chains() {
        // The closed loop at depth 2, 10 of its 40 requests in memory: the
        // completions read back from the file make the same two chains.
        let (s, dir) = spooled(closed_loop_trace(40), 10, "dep");
        assert_eq!(s.in_file(), 30);
        let mut e = Slow::new(1_000_000, 16);
        let stop = AtomicBool::new(false);
        let r = replay(&mut e, s.iter(), &opts(Timing::DEPENDENCY), &stop).unwrap();
        assert_eq!((r.requests, r.completed), (40, 40));
        assert_eq!(
            r.dependencies,
            deps::DepCounts {
                dependent: 38,
                independent: 2
            }
        );
        let mut q = e.queued.clone();
        q.sort_unstable();
        q.dedup();
        assert_eq!(q.len(), 40);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A drive that serves every I/O in `service_ns`, all in parallel.
    struct Slow {
        service_ns: u64,
        /// I/O at offsets below this take `slow_ns` instead.
        slow_below: u64,
        slow_ns: u64,
        depth: u32,
        buf: Vec<u8>,
        out: Vec<(u64, Completion)>,
        /// Offsets in the order they were queued, and when each was.
        queued: Vec<u64>,
        queued_at: Vec<u64>,
        /// Time at each number of I/Os outstanding (queued, not yet
        /// reaped), ns, from the second I/O queued to the `until`-th.
        depth_ns: Vec<u64>,
        since: Option<u64>,
        until: usize,
    }

    use drivelab_engine::clock::now_ns;
    use drivelab_engine::engine::{Caps, Completion};

    impl Slow {
        fn new(service_ns: u64, depth: u32) -> Slow {
            Slow {
                service_ns,
                slow_below: 0,
                slow_ns: service_ns,
                depth,
                buf: vec![0; 4096],
                out: Vec::new(),
                queued: Vec::new(),
                queued_at: Vec::new(),
                depth_ns: Vec::new(),
                since: None,
                until: usize::MAX,
            }
        }

        /// Count the time since the last change at the current depth.
        fn account(&mut self, now: u64) {
            if let Some(s) = self.since {
                let d = self.out.len();
                if self.depth_ns.len() <= d {
                    self.depth_ns.resize(d + 1, 0);
                }
                self.depth_ns[d] += now.saturating_sub(s);
                self.since = Some(now);
            }
        }
    }

    impl Engine for Slow {
        fn name(&self) -> &'static str {
            "slow"
        }
        fn caps(&self) -> Caps {
            Caps {
                asynchronous: true,
                real_io: false,
            }
        }
        fn depth(&self) -> u32 {
            self.depth
        }
        fn queue(&mut self, slot: u32, io: &IoDesc) {
            let c = Completion {
                slot,
                result: io.len as i32,
            };
            let t = if io.offset < self.slow_below {
                self.slow_ns
            } else {
                self.service_ns
            };
            let now = now_ns();
            self.account(now);
            self.queued.push(io.offset);
            self.queued_at.push(now);
            self.out.push((now + t, c));
            if self.queued.len() == 2 {
                self.since = Some(now);
            }
            if self.queued.len() >= self.until {
                self.since = None;
            }
        }
        fn commit(
            &mut self,
            wait: u32,
            timeout: Option<std::time::Duration>,
        ) -> std::io::Result<()> {
            if wait == 0 {
                return Ok(());
            }
            let first = self.out.iter().map(|x| x.0).min();
            let limit = timeout.map(|t| now_ns() + t.as_nanos() as u64);
            if let Some(t) = match (first, limit) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            } {
                drivelab_engine::clock::sleep_until(t);
            }
            Ok(())
        }
        fn reap<F: FnMut(Completion)>(&mut self, mut f: F) -> usize {
            let now = now_ns();
            self.account(now);
            let (ready, rest): (Vec<_>, Vec<_>) = self.out.drain(..).partition(|x| x.0 <= now);
            self.out = rest;
            for (_, c) in &ready {
                f(*c);
            }
            ready.len()
        }
        fn completion_ready(&mut self) -> bool {
            let now = now_ns();
            self.out.iter().any(|x| x.0 <= now)
        }
        fn buffer(&mut self, _slot: u32) -> &mut [u8] {
            &mut self.buf
        }
    }

    /// A closed loop at depth 2 recorded on a drive of 4 ms service time:
    /// each completion replaced 20 us later.
    fn closed_loop_trace(n: u64) -> Vec<drivelab_trace::Result<Request>> {
        let (svc, think) = (4_000_000, 20_000);
        let mut v = Vec::new();
        for i in 0..n {
            let chain = i % 2;
            let k = i / 2;
            let issue = chain * 1_000_000 + k * (svc + think);
            let mut r = Request::new(issue, TOp::Read, i * 4096, 4096);
            r.complete_ns = Some(issue + svc);
            v.push(r);
        }
        v.sort_by_key(|r| r.issue_ns);
        v.into_iter().map(Ok).collect()
    }

    #[test]
    fn dependency_timing_ranks_a_faster_and_a_slower_drive() {
        let stop = AtomicBool::new(false);
        let play = |service_ns: u64, timing: Timing| {
            let mut e = Slow::new(service_ns, 16);
            replay(
                &mut e,
                closed_loop_trace(40).into_iter(),
                &opts(timing),
                &stop,
            )
            .unwrap()
        };
        let fast = play(1_000_000, Timing::DEPENDENCY);
        let slow = play(8_000_000, Timing::DEPENDENCY);
        for r in [&fast, &slow] {
            assert_eq!(r.mode, "dependency");
            assert_eq!(r.completed, 40);
            // Two chains: the first of each is timed from the trace start,
            // the other 38 wait for a completion.
            assert_eq!(
                r.dependencies,
                deps::DepCounts {
                    dependent: 38,
                    independent: 2
                }
            );
        }
        // The drive 8 times slower takes longer per request (by far more
        // than any scheduling noise: 4 ms against 0.5 ms head-to-head).
        assert!(
            fast.score.iops > 2.0 * slow.score.iops,
            "fast {:?}, slow {:?}",
            fast.score,
            slow.score
        );
        // On the slow drive dependents come due before their dependency
        // completes: they wait, and it is counted.
        assert!(slow.dependency_waits > 30, "{}", slow.dependency_waits);
        assert_eq!(slow.dependency_wait_ns.count, slow.dependency_waits);
        // The trace's host reacted to every completion in 20 us.
        let m = deps::reaction(closed_loop_trace(40).into_iter(), 1_000_000)
            .unwrap()
            .unwrap();
        assert_eq!(m.count, 38);
        assert!(m.p50_ns.abs_diff(20_000) <= 200, "{m:?}");
        // Original timing plays the trace's pace on both: the schedule, not
        // the drive, sets the score.
        let fast_o = play(1_000_000, Timing::Original { speed: 1.0 });
        let slow_o = play(8_000_000, Timing::Original { speed: 1.0 });
        assert_eq!(fast_o.mode, "original");
        assert_eq!(fast_o.dependency_waits, 0);
        let ratio = fast_o.score.iops / slow_o.score.iops;
        assert!((0.8..1.25).contains(&ratio), "{fast_o:?} {slow_o:?}");
    }

    #[test]
    fn a_batch_the_host_reaped_together_goes_out_together() {
        // A host at depth 2 submits two requests at once; they complete
        // 6 ms apart, and it submits both replacements 20 us after the
        // later completion. The inference pairs the second of each batch
        // with the earlier completion (think time 6 ms); the host's own
        // reaction to its batch was 20 us. On a drive that completes both
        // at once, the batch goes out together again, not 6 ms apart.
        let (us, ms) = (1_000u64, 1_000_000u64);
        let mut v = Vec::new();
        let mut t = 0;
        for k in 0..8u64 {
            for (j, svc) in [(0, 2 * ms), (1, 8 * ms)] {
                let mut r = Request::new(t + j * 100, TOp::Read, (2 * k + j) * 4096, 4096);
                r.complete_ns = Some(t + svc);
                v.push(r);
            }
            t += 8 * ms + 20 * us;
        }
        let stop = AtomicBool::new(false);
        let mut e = Slow::new(ms, 16);
        // A window that takes in the earlier completion of each batch, and
        // the host's 20 us reaction taken off.
        let timing = Timing::Dependency {
            window_ns: Some(10 * ms),
            reaction_ns: Some(20 * us),
        };
        let r = replay(&mut e, v.into_iter().map(Ok), &opts(timing), &stop).unwrap();
        assert_eq!(r.completed, 16);
        assert_eq!(r.dependencies.dependent, 14);
        for pair in e.queued_at[2..].chunks(2) {
            let gap = pair[1] - pair[0];
            assert!(
                gap < 2 * ms,
                "a batch went out {gap} ns apart: {:?}",
                e.queued_at
            );
        }
    }

    /// The closed loop at depth 2 with the chain at odd trace indices on
    /// offsets below 1 MiB, the one at even indices above.
    fn two_chains_apart() -> Vec<drivelab_trace::Result<Request>> {
        closed_loop_trace(40)
            .into_iter()
            .map(|r| {
                r.map(|mut r| {
                    let i = r.offset / 4096;
                    r.offset = if i % 2 == 1 {
                        i * 4096
                    } else {
                        (1 << 20) + i * 4096
                    };
                    r
                })
            })
            .collect()
    }

    #[test]
    fn a_request_whose_dependency_completed_passes_one_still_waiting() {
        // The closed loop at depth 2 again, but in the replay the chain at
        // odd trace indices is slow (20 ms) and the chain at even ones fast
        // (1 ms). Issued strictly in trace order, each fast request would
        // wait behind the slow one before it; with the lookahead the fast
        // chain runs ahead: all its 20 requests are queued before the slow
        // chain's 5th.
        let stop = AtomicBool::new(false);
        let mut e = Slow::new(1_000_000, 16);
        e.slow_below = 1 << 20;
        e.slow_ns = 20_000_000;
        let r = replay(
            &mut e,
            two_chains_apart().into_iter(),
            &opts(Timing::DEPENDENCY),
            &stop,
        )
        .unwrap();
        assert_eq!(r.completed, 40);
        let fast_done = e.queued.iter().rposition(|&o| o >= 1 << 20).unwrap();
        let slow_before = e.queued[..fast_done]
            .iter()
            .filter(|&&o| o < 1 << 20)
            .count();
        assert!(slow_before < 5, "queue order: {:?}", e.queued);
    }

    #[test]
    fn a_chain_that_ran_out_early_leaves_its_slot_to_the_others() {
        // The same two chains: the fast one runs out of requests while the
        // slow one has about 18 left. The trace held 2 outstanding to its
        // end; so must the replay. Before, the slow chain's rest went out
        // one at a time, at depth 1 for most of the replay (the seed's
        // audit saw this as time at depth 3 of 4 at the end of a replay,
        // 0.045 of the time-weighted depth distribution).
        let stop = AtomicBool::new(false);
        let mut e = Slow::new(1_000_000, 16);
        e.slow_below = 1 << 20;
        e.slow_ns = 20_000_000;
        e.until = 40;
        let r = replay(
            &mut e,
            two_chains_apart().into_iter(),
            &opts(Timing::DEPENDENCY),
            &stop,
        )
        .unwrap();
        assert_eq!(r.completed, 40);
        assert_eq!(r.requests, 40);
        // From the second request queued to the last, depth 2 but for the
        // moment from each completion to its replacement's issue (20 us of
        // think time and the loop's turn: well under a tenth of the time
        // even on a loaded host; before, depth 1 for about nine tenths).
        let total: u64 = e.depth_ns.iter().sum();
        let below = e.depth_ns.iter().take(2).sum::<u64>() as f64 / total as f64;
        assert!(below < 0.5, "ns at each depth: {:?}", e.depth_ns);
        assert!(r.handed_on >= 10, "{}", r.handed_on);
        // The fast chain still ran ahead first: handing on changes only
        // what follows its end.
        let fast_done = e.queued.iter().rposition(|&o| o >= 1 << 20).unwrap();
        assert!(fast_done < 25, "queue order: {:?}", e.queued);
    }

    #[test]
    fn a_dependency_replay_past_the_kept_times_issues_each_request_once_in_its_chain() {
        // A closed loop at depth 4 of more than twice the recent times the
        // driver keeps: their ring is overwritten on the way, and every
        // request still goes out once, after its own dependency.
        let n = 2 * recent::Recent::CAP as u64 + 10_000;
        let (svc, think, depth) = (50_000, 5_000, 4);
        let mut v = Vec::new();
        for i in 0..n {
            let (chain, k) = (i % depth, i / depth);
            let issue = chain * 10_000 + k * (svc + think);
            let mut r = Request::new(issue, TOp::Read, i * 4096, 4096);
            r.complete_ns = Some(issue + svc);
            v.push(Ok(r));
        }
        let mut e = Null::new(16, 4096, Fill::Random(1)).unwrap();
        let stop = AtomicBool::new(false);
        let timing = Timing::Dependency {
            window_ns: Some(1_000_000),
            reaction_ns: Some(think),
        };
        let r = replay(&mut e, v.into_iter(), &opts(timing), &stop).unwrap();
        assert_eq!((r.requests, r.completed, r.errors), (n, n, 0));
        assert_eq!(r.reads, n);
        assert_eq!(r.bytes_read, n * 4096);
        assert_eq!(
            r.dependencies,
            deps::DepCounts {
                dependent: n - depth,
                independent: depth
            }
        );
        // Slots are handed on only at the end, where the chains run out:
        // a few requests of the last lookahead, not the whole replay.
        assert!(r.handed_on < 64, "{}", r.handed_on);
        assert!(r.cpu_user_ns + r.cpu_system_ns > 0);
    }

    #[test]
    fn a_dependency_replay_awaits_requests_due_within_the_poll_horizon_without_a_timer() {
        // Replayed with nothing taken off the think times (5 us), every
        // request is due at most 5 us after the loop saw a completion:
        // polled, never a kernel wait with a timer. Each request goes out
        // once, after its dependency (checked by the helper).
        let (r, _) = two_chains_replayed(5_000, 0);
        assert_eq!(r.timed_waits, 0);
        assert!(r.polls > 0, "{r:?}");
    }

    /// Two chains of 20, the second started 10 us after the first (one
    /// poll to wait for), each request issued `think` (less than 10 us, so
    /// each pairs with its own chain's completion) after its dependency's
    /// completion on a drive of 4 ms; replayed on a drive of 1 ms with
    /// `reaction` taken off.
    fn two_chains_replayed(think: u64, reaction: u64) -> (ReplayReport, Slow) {
        let svc = 4_000_000;
        let trace: Vec<_> = (0..40u64)
            .map(|i| {
                let issue = (i % 2) * 10_000 + (i / 2) * (svc + think);
                let mut r = Request::new(issue, TOp::Read, i * 4096, 4096);
                r.complete_ns = Some(issue + svc);
                Ok(r)
            })
            .collect();
        let stop = AtomicBool::new(false);
        let mut e = Slow::new(1_000_000, 16);
        let timing = Timing::Dependency {
            window_ns: Some(1_000_000),
            reaction_ns: Some(reaction),
        };
        let r = replay(&mut e, trace.into_iter(), &opts(timing), &stop).unwrap();
        assert_eq!((r.requests, r.completed, r.errors), (40, 40, 0));
        assert_eq!(
            r.dependencies,
            deps::DepCounts {
                dependent: 38,
                independent: 2
            }
        );
        // Each chain's requests in its own order, each queued once.
        let mut q = e.queued.clone();
        for chain in 0..2 {
            let mine: Vec<u64> = q
                .iter()
                .copied()
                .filter(|o| o / 4096 % 2 == chain)
                .collect();
            assert_eq!(mine.len(), 20);
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "{mine:?}");
        }
        q.sort_unstable();
        q.dedup();
        assert_eq!(q.len(), 40);
        (r, e)
    }

    #[test]
    fn a_think_time_no_longer_than_the_host_reaction_is_replaced_by_the_replayer_reaction() {
        // Think time 5 us, all of it the recording host's reaction: every
        // dependent is due when its dependency's completion is reaped and
        // goes out in that turn, without a wait of its own; the replayer's
        // reaction is measured for each of them, and is all the replay adds
        // (the host's is not added to it). The one poll is the second
        // chain's start, 10 us in.
        let (r, _) = two_chains_replayed(5_000, 5_000);
        assert_eq!(r.timed_waits, 0, "{r:?}");
        assert!(r.polls <= 1, "{r:?}");
        assert_eq!(r.replayer_reaction_ns.count, 38, "{r:?}");
        assert_eq!(r.reaction_ns, Some(5_000));
    }

    #[test]
    fn a_request_due_within_the_batch_slack_goes_out_with_the_turn() {
        // Half a microsecond of each think time is left after the reaction:
        // within DEP_BATCH_NS, so each dependent is queued in the turn that
        // reaped its dependency, not in a turn of its own after a poll (the
        // one poll is the second chain's start, 10 us in). Not
        // due at the reap, it is no measure of the replayer's reaction.
        const { assert!(DEP_BATCH_NS >= 500) };
        let (r, _) = two_chains_replayed(5_000, 4_500);
        assert_eq!(r.timed_waits, 0, "{r:?}");
        assert!(r.polls <= 1, "{r:?}");
        assert_eq!(r.replayer_reaction_ns.count, 0, "{r:?}");
    }

    #[test]
    fn the_default_window_is_a_quarter_of_the_service_time_at_least_1_ms() {
        assert_eq!(default_window(None), 1_000_000);
        assert_eq!(default_window(Some(8_000.0)), 1_000_000);
        assert_eq!(default_window(Some(49_660_000.0)), 12_415_000);
        let p = prepass(closed_loop_trace(10).into_iter()).unwrap();
        assert_eq!(p.mean_service_ns, Some(4_000_000.0));
    }

    #[test]
    fn remap_wraps_and_scales_into_the_target() {
        let o = ReplayOptions {
            timing: Timing::NoStall,
            remap: Remap::Wrap,
            target_size: 1 << 20,
            logical_block: 4096,
            trace_extent: 8 << 20,
        };
        let (mut rm, mut al) = (0, 0);
        let r = Request::new(0, TOp::Write, (5 << 20) + 512, 1000);
        let io = place(&r, &o, &mut rm, &mut al);
        assert_eq!(io.len, 4096);
        assert!(io.offset % 4096 == 0 && io.offset + 4096 <= 1 << 20);
        assert_eq!((rm, al), (1, 2));
        let o = ReplayOptions {
            remap: Remap::Scale,
            ..o
        };
        let io = place(
            &Request::new(0, TOp::Read, 4 << 20, 4096),
            &o,
            &mut rm,
            &mut al,
        );
        assert_eq!(
            io.offset,
            512 << 10,
            "half-way through the trace lands half-way through the target"
        );
    }
}
