//! Which completion each request of a trace waited for (the idea of
//! hfplayer, Haghdoost et al., FAST'17: "On the accuracy and scalability of
//! intensive I/O workload replay").
//!
//! A request issued at most `window` after a completion (of a request issued
//! before it) is taken to have waited for that completion: it depends on
//! it, and the time between the two is its think time. Each completion is
//! the cause of at most one request — the latest completion not yet claimed
//! is taken — so a closed loop at depth N (every completion replaced by one
//! new request) is inferred as N chains and replays at depth N. A request
//! with no unclaimed completion in the window is independent: it keeps its
//! issue time relative to its predecessor's.
//!
//! The inference streams: it holds only the completions still ahead of the
//! current issue time and those within the window behind it.
//!
//! A trace is cut by the end of its recording: the last request of each
//! chain has a completion nobody claimed only because the recording
//! stopped first (it came after the last issue, within the window before
//! it, or was not recorded at all). [`Infer::open_at_end`] names those
//! requests, so a replay can treat their completions as the free slots
//! they were.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use drivelab_trace::Request;
use serde::{Deserialize, Serialize};

/// What a request waits for before it is issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The completion of request `of` (an index in the trace), then
    /// `think_ns`.
    Completion {
        /// Index of the request whose completion it waited for.
        of: u64,
        /// Time from that completion to this issue in the trace, ns.
        think_ns: u64,
        /// Time from the latest completion of any request at or before
        /// this issue to it in the trace, ns (at most `think_ns`): the
        /// host's reaction plus its own think time. Where the host reaped
        /// several completions and submitted their replacements together,
        /// a later one of the batch is paired with an earlier completion
        /// and its `think_ns` holds how far apart the batch's completions
        /// were as well; this does not.
        since_latest_ns: u64,
    },
    /// The issue of its predecessor, then `gap_ns` (0 for the first).
    Issue {
        /// Time from the predecessor's issue to this one in the trace, ns.
        gap_ns: u64,
    },
}

/// A trace request with its place and what it waits for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Planned {
    /// The request.
    pub req: Request,
    /// Its index in the trace (0-based).
    pub idx: u64,
    /// What it waits for.
    pub anchor: Anchor,
}

/// Counts of the inference.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DepCounts {
    /// Requests that depend on a completion.
    pub dependent: u64,
    /// Requests timed from their predecessor's issue.
    pub independent: u64,
}

/// The inference over a stream of requests in issue order; `window_ns`
/// `None` makes every request independent.
pub struct Infer<I> {
    inner: I,
    window_ns: Option<u64>,
    idx: u64,
    prev_issue: Option<u64>,
    /// Completions after the current issue time: (time, index).
    ahead: BinaryHeap<Reverse<(u64, u64)>>,
    /// The latest completion at or before the current issue time.
    latest: u64,
    /// Completions at or before the current issue time, within the
    /// window, in completion order: (time, index, claimed).
    recent: VecDeque<(u64, u64, bool)>,
    /// The latest requests without a completion in the trace (at most
    /// [`Infer::OPEN_KEEP`]).
    open: VecDeque<u64>,
    /// What was inferred so far.
    pub counts: DepCounts,
}

impl<I> Infer<I> {
    /// Requests without a completion remembered for [`Infer::open_at_end`]
    /// (the latest ones; far beyond any queue depth).
    pub const OPEN_KEEP: usize = 1 << 12;

    /// Infer over `inner` with the given window.
    pub fn new(inner: I, window_ns: Option<u64>) -> Self {
        Infer {
            inner,
            window_ns,
            idx: 0,
            prev_issue: None,
            ahead: BinaryHeap::new(),
            latest: 0,
            recent: VecDeque::new(),
            open: VecDeque::new(),
            counts: DepCounts::default(),
        }
    }

    fn plan(&mut self, req: Request) -> Planned {
        let t = req.issue_ns;
        let idx = self.idx;
        self.idx += 1;
        let mut anchor = Anchor::Issue {
            gap_ns: self.prev_issue.map_or(0, |p| t.saturating_sub(p)),
        };
        if let Some(w) = self.window_ns {
            while let Some(&Reverse((c, j))) = self.ahead.peek() {
                if c > t {
                    break;
                }
                self.ahead.pop();
                self.latest = self.latest.max(c);
                self.recent.push_back((c, j, false));
            }
            while self
                .recent
                .front()
                .is_some_and(|&(c, _, claimed)| claimed || c.saturating_add(w) < t)
            {
                self.recent.pop_front();
            }
            if let Some(e) = self.recent.iter_mut().rev().find(|e| !e.2) {
                e.2 = true;
                anchor = Anchor::Completion {
                    of: e.1,
                    think_ns: t - e.0,
                    since_latest_ns: t - self.latest.max(e.0),
                };
            }
            match req.complete_ns {
                Some(c) => self.ahead.push(Reverse((c.max(t), idx))),
                None => {
                    if self.open.len() == Self::OPEN_KEEP {
                        self.open.pop_front();
                    }
                    self.open.push_back(idx);
                }
            }
        }
        match anchor {
            Anchor::Completion { .. } => self.counts.dependent += 1,
            Anchor::Issue { .. } => self.counts.independent += 1,
        }
        self.prev_issue = Some(self.prev_issue.map_or(t, |p| p.max(t)));
        Planned { req, idx, anchor }
    }
}

impl<I> Infer<I> {
    /// Once the trace has run out: the requests whose completion no
    /// request claimed because the trace ended first — completed after its
    /// last issue or within the window before it, or not completed in it
    /// at all (the latest [`Infer::OPEN_KEEP`] of those). In a closed loop
    /// these are the ends of its chains, one per request the recording
    /// cut off. Before the end, the requests that are such so far. Empty
    /// without a window.
    pub fn open_at_end(&self) -> impl Iterator<Item = u64> + '_ {
        self.ahead
            .iter()
            .map(|&Reverse((_, j))| j)
            .chain(self.recent.iter().filter(|e| !e.2).map(|e| e.1))
            .chain(self.open.iter().copied())
    }
}

impl<I: Iterator<Item = drivelab_trace::Result<Request>>> Iterator for Infer<I> {
    type Item = drivelab_trace::Result<Planned>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.inner.next()?.map(|r| self.plan(r)))
    }
}

/// The recording host's reaction to a completion, as the trace shows it at
/// the block layer: the time from a completion to the first request issued
/// after it. A host that replaces completed requests at once (a closed
/// loop: `drivelab run`, fio) shows nothing but its own completion-to-issue
/// path here: the kernel's completion, the wake-up of the issuing thread,
/// its own turn, and the submission down to the block layer's queue event.
///
/// Where another completion comes before any issue, the first one's
/// reaction is not seen to end: it lasted at least until the second, and
/// the issue that follows may answer either. Counting only the reactions no
/// completion interrupted would keep the quick ones and drop the slow ones
/// (the slower a reaction, the likelier a completion comes first): on a
/// loop device at 60k IOPS and depth 4 that median is 4-6 us where the
/// host's is 12-15 us. So the interrupted ones count as censored where the
/// next completion came, and the percentiles are the Kaplan–Meier estimate
/// ([`drivelab_stats::survival`]). A reaction longer than the dependency
/// window is no reaction (the request after it is independent) and counts
/// in neither.
///
/// The dependency inference's think times pair each request with the latest
/// completion it could have waited for; when a host reaps several
/// completions and submits several requests at once, the later ones pair
/// with the earlier completions and show the batch's spread as well, so
/// their percentiles are not the host's reaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reaction {
    /// Completions followed by an issue within the window, before any other
    /// completion: reactions seen to end.
    pub count: u64,
    /// Completions followed first by another completion within the window:
    /// reactions seen to last at least until it.
    pub censored: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 95th percentile, ns: what a dependency replay takes off each think
    /// time by default. Where so many reactions were cut off that the
    /// estimate never reaches 95 %, the longest time recorded, a lower
    /// bound.
    pub p95_ns: u64,
    /// Mean up to the longest reaction seen to end (the area under the
    /// estimated survival function), ns.
    pub mean_ns: f64,
}

/// The recording host's [`Reaction`] in a trace (requests in issue order)
/// under dependency window `window_ns`; `None` when no issue followed a
/// completion within it.
pub fn reaction<I: Iterator<Item = drivelab_trace::Result<Request>>>(
    reqs: I,
    window_ns: u64,
) -> drivelab_trace::Result<Option<Reaction>> {
    let mut ended = drivelab_stats::LatencyHistogram::new();
    let mut cut = drivelab_stats::LatencyHistogram::new();
    let mut ahead: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
    // The latest completion at or before the current issue that neither
    // an issue nor another completion followed yet.
    let mut open: Option<u64> = None;
    for r in reqs {
        let r = r?;
        let t = r.issue_ns;
        while let Some(&Reverse(c)) = ahead.peek() {
            if c > t {
                break;
            }
            ahead.pop();
            if let Some(o) = open.replace(c) {
                if c - o <= window_ns {
                    cut.record(c - o);
                }
            }
        }
        if let Some(c) = open.take() {
            if t - c <= window_ns {
                ended.record(t - c);
            }
        }
        if let Some(c) = r.complete_ns {
            ahead.push(Reverse(c.max(t)));
        }
    }
    if ended.count() == 0 {
        return Ok(None);
    }
    let s = drivelab_stats::survival::Survival::kaplan_meier(&ended, &cut);
    let at = |p: f64| s.at_least(p).unwrap_or(0);
    Ok(Some(Reaction {
        count: ended.count(),
        censored: cut.count(),
        p50_ns: at(50.0),
        p90_ns: at(90.0),
        p95_ns: at(95.0),
        mean_ns: s.restricted_mean().unwrap_or(0.0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_trace::Op;

    fn req(issue: u64, complete: u64) -> Request {
        let mut r = Request::new(issue, Op::Read, issue * 8, 4096);
        r.complete_ns = Some(complete);
        r
    }

    fn infer(v: &[Request], w: Option<u64>) -> (Vec<Anchor>, DepCounts) {
        let mut it = Infer::new(v.iter().map(|r| Ok(*r)), w);
        let a = it.by_ref().map(|p| p.unwrap().anchor).collect();
        (a, it.counts)
    }

    #[test]
    fn a_reaction_the_next_completion_cut_off_counts_as_censored() {
        // Two chains of a closed loop, 20 us of service each, started 7 us
        // apart. The host answers a third of the completions in 4 us and
        // the rest in 40 us. A slow answer is nearly always overtaken by
        // the other chain's completion, so of the reactions no completion
        // interrupted most are the 4 us ones: their median is 4 us. The
        // interrupted ones, counted as lasting at least until the next
        // completion, put the median among the slow ones. (The issue that
        // follows a completion may answer the other chain's earlier one,
        // so the slow ones show as 23 and 33 us, not 40.)
        let us = 1000;
        let mut due: BinaryHeap<Reverse<u64>> = [0, 7 * us].into_iter().map(Reverse).collect();
        let mut v = Vec::new();
        for i in 0..300u64 {
            let Reverse(t) = due.pop().unwrap();
            v.push(req(t, t + 20 * us));
            due.push(Reverse(
                t + 20 * us + if i % 3 == 0 { 4 * us } else { 40 * us },
            ));
        }
        v.sort_by_key(|r| r.issue_ns);
        let m = reaction(v.iter().map(|r| Ok(*r)), 1000 * us)
            .unwrap()
            .unwrap();
        assert!(m.censored >= 90, "{m:?}");
        let observed_median = {
            let mut h = drivelab_stats::LatencyHistogram::new();
            let mut open = None;
            let mut ahead: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
            for r in &v {
                while ahead.peek().is_some_and(|c| c.0 <= r.issue_ns) {
                    open = Some(ahead.pop().unwrap().0);
                }
                if let Some(c) = open.take() {
                    h.record(r.issue_ns - c);
                }
                ahead.push(Reverse(r.complete_ns.unwrap()));
            }
            h.percentile(50.0).unwrap()
        };
        assert!(observed_median.abs_diff(4 * us) <= 40, "{observed_median}");
        assert!((20 * us..=40 * us).contains(&m.p50_ns), "{m:?}");
        assert!(m.p50_ns <= m.p90_ns && m.p90_ns <= m.p95_ns, "{m:?}");
        assert!(m.p95_ns <= 40 * us, "{m:?}");
    }

    #[test]
    fn a_closed_loop_at_depth_two_is_two_chains() {
        // Two requests at 0; each completion (10 ms service) is followed
        // 5 us later by the next request.
        let us = 1000;
        let v = [
            req(0, 10_000 * us),
            req(0, 12_000 * us),
            req(10_005 * us, 20_005 * us),
            req(12_005 * us, 22_005 * us),
            req(20_010 * us, 30_010 * us),
        ];
        let (a, n) = infer(&v, Some(1000 * us));
        assert_eq!(
            a,
            vec![
                Anchor::Issue { gap_ns: 0 },
                Anchor::Issue { gap_ns: 0 },
                Anchor::Completion {
                    of: 0,
                    think_ns: 5 * us,
                    since_latest_ns: 5 * us
                },
                Anchor::Completion {
                    of: 1,
                    think_ns: 5 * us,
                    since_latest_ns: 5 * us
                },
                Anchor::Completion {
                    of: 2,
                    think_ns: 5 * us,
                    since_latest_ns: 5 * us
                },
            ]
        );
        assert_eq!(
            n,
            DepCounts {
                dependent: 3,
                independent: 2
            }
        );
    }

    #[test]
    fn a_request_long_after_every_completion_keeps_its_gap() {
        // The second request comes 50 ms after the first completed: beyond
        // a 1 ms window, so it is timed from the first's issue.
        let ms = 1_000_000;
        let v = [req(0, ms), req(51 * ms, 52 * ms)];
        let (a, _) = infer(&v, Some(ms));
        assert_eq!(a[1], Anchor::Issue { gap_ns: 51 * ms });
        // Without a window nothing depends.
        let (a, n) = infer(&v, None);
        assert_eq!(a[1], Anchor::Issue { gap_ns: 51 * ms });
        assert_eq!(n.dependent, 0);
    }

    #[test]
    fn each_completion_causes_at_most_one_request() {
        // Two completions close together, then three issues: the first two
        // take the latest unclaimed completion each, the third has none
        // left and keeps its gap. The second was issued 4 after the latest
        // completion (102), though paired with the earlier one (100).
        let v = [
            req(0, 100),
            req(1, 102),
            req(105, 1000),
            req(106, 1001),
            req(107, 1002),
        ];
        let (a, _) = infer(&v, Some(50));
        let c = |of, think_ns, since_latest_ns| Anchor::Completion {
            of,
            think_ns,
            since_latest_ns,
        };
        assert_eq!(a[2], c(1, 3, 3));
        assert_eq!(a[3], c(0, 6, 4));
        assert_eq!(a[4], Anchor::Issue { gap_ns: 1 });
    }

    #[test]
    fn the_ends_of_the_chains_are_open_at_the_end() {
        // Two chains at depth 2 cut by the end of the recording, after an
        // early request whose completion nobody claimed (the window had
        // passed) and one in flight at the cut (no completion).
        let ms = 1_000_000;
        let mut cut = Request::new(31 * ms, Op::Read, 0, 4096);
        cut.complete_ns = None;
        let v = [
            req(0, ms),
            req(10 * ms, 20 * ms),
            req(11 * ms, 21 * ms),
            req(20 * ms + 5, 30 * ms),
            req(21 * ms + 5, 50 * ms),
            cut,
        ];
        let mut it = Infer::new(v.iter().map(|r| Ok(*r)), Some(ms));
        let a: Vec<Anchor> = it.by_ref().map(|p| p.unwrap().anchor).collect();
        let c = |of, think_ns| Anchor::Completion {
            of,
            think_ns,
            since_latest_ns: think_ns,
        };
        assert_eq!(a[3], c(1, 5));
        assert_eq!(a[4], c(2, 5));
        // Request 5 followed the completion of 3 by 1 ms: it claimed it.
        assert_eq!(a[5], c(3, ms));
        let mut open: Vec<u64> = it.open_at_end().collect();
        open.sort_unstable();
        // 0 completed long before the end and nobody followed it: not cut.
        assert_eq!(open, [4, 5]);
        let mut none = Infer::new(v.iter().map(|r| Ok(*r)), None);
        assert_eq!(none.by_ref().count(), 6);
        assert_eq!(none.open_at_end().count(), 0);
    }

    #[test]
    fn requests_without_completions_are_never_waited_for() {
        let v = [
            Request::new(0, Op::Write, 0, 512),
            Request::new(10, Op::Write, 512, 512),
        ];
        let (a, _) = infer(&v, Some(1_000_000));
        assert_eq!(a[1], Anchor::Issue { gap_ns: 10 });
    }

    #[test]
    fn the_reaction_is_the_first_issue_after_each_completion() {
        // Two completions close together (100, 102), answered by two
        // issues in one batch (105, 106): the host reacted to the latest
        // completion in 3; the second issue of the batch is no reaction of
        // its own (the inference pairs it with the first completion, 6).
        // Then a completion at 1000 answered at 1004, and one at 1010
        // followed by an issue only beyond the window.
        let v = [
            req(0, 100),
            req(1, 102),
            req(105, 1000),
            req(106, 1010),
            req(1004, 5000),
            req(2000, 2100),
        ];
        let r = reaction(v.iter().map(|r| Ok(*r)), 50).unwrap().unwrap();
        assert_eq!(r.count, 2);
        assert_eq!(r.p90_ns, 4);
        assert!((3..=4).contains(&r.p50_ns), "{r:?}");
        assert!((r.mean_ns - 3.5).abs() < 1e-9, "{r:?}");
        let (a, _) = infer(&v, Some(50));
        assert_eq!(
            a[3],
            Anchor::Completion {
                of: 0,
                think_ns: 6,
                since_latest_ns: 4
            }
        );
        assert_eq!(reaction(v[..2].iter().map(|r| Ok(*r)), 50).unwrap(), None);
    }
}
