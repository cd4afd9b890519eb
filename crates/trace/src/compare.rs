//! The IPEAK audit: compare a trace with a second-generation capture of its
//! replay (or any two traces) and give the seed's verdict, criterion by
//! criterion, each with its figure.
//!
//! One streaming pass reads both traces merged by issue time (each relative
//! to its own start).
//! - **Pairing**: a request of A pairs with one of B with the same
//!   (op, offset, length). Within one such key the pairing is in order: the
//!   k-th request of A with that key pairs with the k-th of B, so duplicates
//!   (the same sector read twice) never cross and inter-arrival errors are
//!   those of the replay, not of the pairing. The search is windowed: a
//!   request still unpaired after [`WINDOW`] further requests of its own
//!   trace is counted unpaired (missing from B, or stray in B).
//! - **Order agreement**: walking A's matched requests in A's order, the
//!   share of consecutive pairs whose partners in B are in the same order
//!   (1.0 = identical order; an adjacent-pair Kendall-tau concordance).
//! - **Inter-arrival error**: for consecutive matched pairs (in A order),
//!   (B's issue gap) − (A's issue gap), ns, summarised; `interarrival_error`
//!   is mean |error| / mean A gap.
//! - **Distribution distances**: total variation distance (½ Σ |p − q|,
//!   0 = identical, 1 = disjoint) between the two traces' size, queue-depth
//!   (per arrival, as AnalyzeTrace counts it), signed seek-distance and
//!   service-time (log2 buckets) distributions, and the **time-weighted**
//!   queue depth (the share of the trace's time spent at each depth, from
//!   the first issue to the last issue, idle time at depth 0 included);
//!   depths and service times only when both traces have completions. The
//!   window ends at the last issue because a capture cut from a running
//!   workload (the seed's original) stops with requests in flight, while
//!   its replay runs to the end and drains: the drain (depth N down to 0
//!   over N service times) is in one and not the other. A request without
//!   a completion (in flight when the capture stopped) counts as
//!   outstanding to the window's end. When every request is issued at
//!   once, the window runs to the last completion.
//! - **Score**: head-to-head time (the mean time from the start of one
//!   request to the start of the next: (last issue − first issue) / (n − 1))
//!   in ms, and 1000 / that in IO/s (Intel RankDisk's score, seed 001).
//!
//! - **Plot series** (constant memory, for the audit's charts): each
//!   trace's time-weighted queue depth over time, in at most
//!   [`SERIES_BUCKETS`] buckets of equal width from its first issue (the
//!   width doubles, neighbours merged, as the trace grows), and its
//!   service-time CDF as [`CDF_POINTS`] quantiles of a log-linear
//!   histogram (±0.4 %).
//!
//! The verdict is the seed's list ([`Criterion`]): counts and bytes per op
//! identical; no stray and no missing access; the size distribution
//! identical; time-weighted queue-depth distributions within a total
//! variation distance of `tolerance` (the seed: 0.05); mean service time
//! within `2 × tolerance` (10 %); the score of B within `tolerance` (5 %) of
//! A's. A criterion whose figure is unknown (no completions) is shown and
//! does not decide. `differs` is true when a criterion fails; `reasons`
//! names them. Order agreement and the inter-arrival error are figures, not
//! criteria: a replay that keeps dependencies on a faster drive moves the
//! issue times on purpose.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::analyze::{Analysis, Analyzer};
use crate::error::Result;
use crate::hist::{LogHist, Summary};
use crate::model::{Op, Request};

/// Matching window, requests: 1,048,576.
pub const WINDOW: usize = 1 << 20;

type Key = (Op, u64, u64);

/// Distances between the two traces' distributions (total variation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Distances {
    /// Transfer sizes.
    pub sizes: f64,
    /// Queue depth; `None` when either trace lacks completions (the
    /// distribution is unknown there, so it is not compared).
    pub queue_depth: Option<f64>,
    /// Signed seek distance buckets.
    pub seek_distance: f64,
    /// Service time, log2 buckets; `None` when either trace lacks
    /// completions.
    pub service_time: Option<f64>,
    /// Time-weighted queue depth; `None` when either trace lacks
    /// completions.
    pub queue_depth_time: Option<f64>,
}

/// The share of a trace's time spent at one queue depth.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DepthShare {
    /// Requests outstanding.
    pub depth: u64,
    /// Share of the time from the first issue to the last completion.
    pub fraction: f64,
}

/// Time-weighted queue depth of one trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeDepth {
    /// Time-weighted mean depth.
    pub mean: f64,
    /// Shares by depth, ascending; empty without completions.
    pub shares: Vec<DepthShare>,
}

/// Buckets of the queue-depth-over-time series, at most.
pub const SERIES_BUCKETS: usize = 400;

/// Points of a service-time CDF: the quantiles 0, 0.01 … 0.99, 0.995,
/// 0.999 and 1 (fewer when values repeat).
pub const CDF_POINTS: usize = 103;

/// One bucket of a trace's queue depth over time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DepthPoint {
    /// The bucket's middle, seconds from the trace's first issue.
    pub t_s: f64,
    /// Time-weighted mean depth over the bucket.
    pub depth: f64,
}

/// One point of a service-time CDF.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CdfPoint {
    /// Service time, ns.
    pub ns: u64,
    /// Share of requests served within `ns`.
    pub fraction: f64,
}

/// What the audit's charts draw for one trace, bucketed (constant memory
/// whatever the trace's length).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlotSeries {
    /// Width of a depth bucket, seconds.
    pub bucket_s: f64,
    /// Time-weighted queue depth over time, one point per bucket.
    pub depth_over_time: Vec<DepthPoint>,
    /// Service-time CDF; empty without completions.
    pub service_time_cdf: Vec<CdfPoint>,
}

/// Time-weighted depth in equal buckets from a start time; when a bucket
/// past [`SERIES_BUCKETS`] is needed the width doubles and neighbours are
/// merged, so memory is constant.
struct DepthSeries {
    start: Option<u64>,
    width: u64,
    /// depth × ns per bucket.
    area: Vec<f64>,
    end: u64,
}

impl Default for DepthSeries {
    fn default() -> Self {
        DepthSeries {
            start: None,
            width: 1_000,
            area: Vec::new(),
            end: 0,
        }
    }
}

impl DepthSeries {
    /// Depth `d` from `from` to `to`.
    fn add(&mut self, mut from: u64, to: u64, d: usize) {
        let start = *self.start.get_or_insert(from);
        self.end = self.end.max(to);
        while from < to {
            let mut idx = ((from - start) / self.width) as usize;
            while idx >= SERIES_BUCKETS {
                self.width *= 2;
                let merged: Vec<f64> = self.area.chunks(2).map(|c| c.iter().sum()).collect();
                self.area = merged;
                idx = ((from - start) / self.width) as usize;
            }
            if self.area.len() <= idx {
                self.area.resize(idx + 1, 0.0);
            }
            let bucket_end = start + (idx as u64 + 1) * self.width;
            let seg = to.min(bucket_end) - from;
            self.area[idx] += d as f64 * seg as f64;
            from += seg;
        }
    }

    fn points(&self, first_issue: u64) -> Vec<DepthPoint> {
        let Some(start) = self.start else {
            return Vec::new();
        };
        self.area
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let b0 = start + i as u64 * self.width;
                let b1 = (b0 + self.width).min(self.end);
                (b1 > b0).then(|| DepthPoint {
                    t_s: ((b0 + b1) as f64 / 2.0 - first_issue as f64) / 1e9,
                    depth: a / (b1 - b0) as f64,
                })
            })
            .collect()
    }
}

/// The CDF of `h` at [`CDF_POINTS`] quantiles (0 and 1 exact: the least
/// and the greatest value), one point per distinct value.
fn cdf(h: &LogHist) -> Vec<CdfPoint> {
    let Some((min, max)) = h.range() else {
        return Vec::new();
    };
    let mut qs: Vec<f64> = (0..100).map(|k| k as f64 / 100.0).collect();
    qs.extend([0.995, 0.999, 1.0]);
    let mut out: Vec<CdfPoint> = Vec::with_capacity(qs.len());
    for q in qs {
        let ns = match q {
            0.0 => min,
            1.0 => max,
            _ => h.quantile(q).unwrap_or(max),
        };
        match out.last_mut() {
            Some(p) if p.ns >= ns => p.fraction = q,
            _ => out.push(CdfPoint { ns, fraction: q }),
        }
    }
    out
}

/// Intel RankDisk's score of a trace (seed 001).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HeadToHead {
    /// Mean time from the start of one request to the start of the next, ms.
    pub head_to_head_ms: f64,
    /// 1000 / head_to_head_ms.
    pub iops: f64,
}

impl HeadToHead {
    /// The score of `n` requests issued from `first_ns` to `last_ns`;
    /// `None` for fewer than two requests or no time between them.
    pub fn of(n: u64, first_ns: u64, last_ns: u64) -> Option<HeadToHead> {
        if n < 2 || last_ns <= first_ns {
            return None;
        }
        let ms = (last_ns - first_ns) as f64 / (n - 1) as f64 / 1e6;
        Some(HeadToHead {
            head_to_head_ms: ms,
            iops: 1000.0 / ms,
        })
    }
}

/// One of the seed's audit criteria, with its figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criterion {
    /// What is checked ("reads", "stray accesses", "score", …).
    pub name: String,
    /// The figure, in words ("A 39043 / 159.9 MB, B 39043 / 159.9 MB").
    pub figure: String,
    /// The limit ("identical", "0", "<= 0.05", "within 10 %").
    pub limit: String,
    /// Passed; `None` when the figure is unknown (it does not decide).
    pub pass: Option<bool>,
}

impl Criterion {
    /// The verdict word: PASS, FAIL or "n/a".
    pub fn verdict(&self) -> &'static str {
        match self.pass {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "n/a",
        }
    }
}

/// The score criterion: `replay` within `limit` (a fraction) of `original`,
/// both in IO/s. Unknown when either is.
pub fn score_criterion(original: Option<f64>, replay: Option<f64>, limit: f64) -> Criterion {
    let (figure, pass) = match (original, replay) {
        (Some(o), Some(r)) if o > 0.0 => {
            let dev = (r - o) / o;
            (
                format!(
                    "replay {r:.2} IO/s ({:.3} ms head-to-head), original {o:.2} IO/s: {:+.2} %",
                    1000.0 / r.max(f64::MIN_POSITIVE),
                    dev * 100.0
                ),
                Some(dev.abs() <= limit),
            )
        }
        _ => ("unknown (fewer than two requests)".into(), None),
    };
    Criterion {
        name: "score".into(),
        figure,
        limit: format!("within {:.0} % of the original IO/s", limit * 100.0),
        pass,
    }
}

/// The comparison result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Requests in A.
    pub requests_a: u64,
    /// Requests in B.
    pub requests_b: u64,
    /// Requests of A matched in B.
    pub matched: u64,
    /// matched / requests_a (1.0 when A is empty and B is too).
    pub match_fraction: f64,
    /// Requests of B that matched nothing in A.
    pub extra_in_b: u64,
    /// Adjacent-pair order concordance of matched requests.
    pub order_agreement: f64,
    /// (B gap − A gap) for consecutive matched pairs, ns; percentiles of the
    /// absolute error.
    pub interarrival_abs_error_ns: Summary,
    /// Mean signed error (B − A), ns.
    pub interarrival_mean_error_ns: Option<f64>,
    /// mean |error| / mean A gap.
    pub interarrival_error: f64,
    /// Distribution distances.
    pub distances: Distances,
    /// Time-weighted queue depth of A.
    pub queue_depth_time_a: TimeDepth,
    /// Time-weighted queue depth of B.
    pub queue_depth_time_b: TimeDepth,
    /// RankDisk score of A.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_a: Option<HeadToHead>,
    /// RankDisk score of B.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_b: Option<HeadToHead>,
    /// What the audit's charts draw for A.
    #[serde(default)]
    pub plot_a: PlotSeries,
    /// What the audit's charts draw for B.
    #[serde(default)]
    pub plot_b: PlotSeries,
    /// The seed's criteria, each with its figure and verdict.
    pub criteria: Vec<Criterion>,
    /// Tolerance applied.
    pub tolerance: f64,
    /// Whether a criterion failed.
    pub differs: bool,
    /// The failed criteria, each with its figure.
    pub reasons: Vec<String>,
    /// Analysis of A.
    pub a: Analysis,
    /// Analysis of B.
    pub b: Analysis,
}

struct ASlot {
    key: Key,
    issue: u64,
    partner: Option<(u64, u64)>,
}

struct State {
    a_pending: VecDeque<ASlot>,
    a_base: u64,
    unmatched_a: HashMap<Key, VecDeque<(u64, u64)>>,
    unmatched_b: HashMap<Key, VecDeque<(u64, u64)>>,
    b_window: VecDeque<(u64, Key)>,
    nb: u64,
    matched: u64,
    extra_b: u64,
    last_b_idx: Option<u64>,
    concordant: u64,
    pairs: u64,
    prev: Option<(u64, u64)>,
    err_abs: LogHist,
    err_sum: f64,
    gap_a_sum: f64,
    err_n: u64,
}

/// Time-weighted queue depth and the issue span of one trace, streaming
/// (requests in issue order; completions kept in a heap until passed).
#[derive(Default)]
struct DepthClock {
    out: BinaryHeap<Reverse<u64>>,
    /// ns spent at each depth.
    at: Vec<u64>,
    last: Option<u64>,
    n: u64,
    first_issue: Option<u64>,
    last_issue: u64,
    last_complete: u64,
    series: DepthSeries,
    svc: LogHist,
}

impl DepthClock {
    /// Most requests counted outstanding at once (as the analyzer's cap).
    const MAX_DEPTH: usize = 1 << 16;

    fn advance(&mut self, t: u64) {
        if let Some(l) = self.last {
            if t > l {
                let d = self.out.len();
                if self.at.len() <= d {
                    self.at.resize(d + 1, 0);
                }
                self.at[d] += t - l;
                self.series.add(l, t, d);
            }
        }
        self.last = Some(self.last.map_or(t, |l| l.max(t)));
    }

    fn add(&mut self, r: &Request) {
        self.n += 1;
        self.first_issue.get_or_insert(r.issue_ns);
        self.last_issue = self.last_issue.max(r.issue_ns);
        // A request without a completion (cut off at the end of a
        // recording) is in flight to the end.
        let c = match r.complete_ns {
            Some(c) => {
                self.svc.record(c.saturating_sub(r.issue_ns));
                self.last_complete = self.last_complete.max(c);
                c
            }
            None => u64::MAX,
        };
        while let Some(&Reverse(t)) = self.out.peek() {
            if t > r.issue_ns {
                break;
            }
            self.advance(t);
            self.out.pop();
        }
        self.advance(r.issue_ns);
        if self.out.len() >= Self::MAX_DEPTH {
            self.out.pop();
        }
        self.out.push(Reverse(c.max(r.issue_ns)));
    }

    /// (depth, ns) pairs and the summary.
    fn finish(&mut self) -> (Vec<(u64, u64)>, TimeDepth) {
        // The window's end: the last issue (see the module doc), or the
        // last completion when every request was issued at once.
        let end = match self.first_issue {
            Some(f) if self.last_issue > f => self.last_issue,
            _ => self.last_complete,
        };
        while let Some(&Reverse(t)) = self.out.peek() {
            if t > end {
                break;
            }
            self.advance(t);
            self.out.pop();
        }
        self.advance(end);
        self.out.clear();
        let total: u64 = self.at.iter().sum();
        if total == 0 {
            return (Vec::new(), TimeDepth::default());
        }
        let pairs: Vec<(u64, u64)> = self
            .at
            .iter()
            .enumerate()
            .filter(|(_, t)| **t > 0)
            .map(|(d, t)| (d as u64, *t))
            .collect();
        let mean = pairs
            .iter()
            .map(|(d, t)| *d as f64 * *t as f64)
            .sum::<f64>()
            / total as f64;
        let shares = pairs
            .iter()
            .map(|(d, t)| DepthShare {
                depth: *d,
                fraction: *t as f64 / total as f64,
            })
            .collect();
        (pairs, TimeDepth { mean, shares })
    }

    /// The plot series (after [`DepthClock::finish`]).
    fn plots(&self) -> PlotSeries {
        PlotSeries {
            bucket_s: self.series.width as f64 / 1e9,
            depth_over_time: self.series.points(self.first_issue.unwrap_or(0)),
            service_time_cdf: cdf(&self.svc),
        }
    }

    fn score(&self) -> Option<HeadToHead> {
        HeadToHead::of(self.n, self.first_issue?, self.last_issue)
    }
}

fn key(r: &Request) -> Key {
    (r.op, r.offset, r.len)
}

impl State {
    fn push_a(&mut self, r: &Request) {
        let idx = self.a_base + self.a_pending.len() as u64;
        let k = key(r);
        let mut partner = None;
        if let Some(q) = self.unmatched_b.get_mut(&k) {
            // In order within the key: the earliest unpaired B.
            partner = q.pop_front();
            if q.is_empty() {
                self.unmatched_b.remove(&k);
            }
        }
        if partner.is_none() {
            self.unmatched_a
                .entry(k)
                .or_default()
                .push_back((idx, r.issue_ns));
        }
        self.a_pending.push_back(ASlot {
            key: k,
            issue: r.issue_ns,
            partner,
        });
        while self.a_pending.len() > WINDOW {
            self.resolve_front();
        }
    }

    fn push_b(&mut self, r: &Request) {
        let j = self.nb;
        self.nb += 1;
        let k = key(r);
        let mut hit = None;
        if let Some(q) = self.unmatched_a.get_mut(&k) {
            // In order within the key: the earliest unpaired A.
            hit = q.pop_front().map(|(i, _)| i);
            if q.is_empty() {
                self.unmatched_a.remove(&k);
            }
        }
        match hit.and_then(|i| i.checked_sub(self.a_base)) {
            Some(pos) => {
                if let Some(slot) = self.a_pending.get_mut(pos as usize) {
                    slot.partner = Some((j, r.issue_ns));
                }
            }
            None => {
                self.unmatched_b
                    .entry(k)
                    .or_default()
                    .push_back((j, r.issue_ns));
                self.b_window.push_back((j, k));
            }
        }
        while let Some((old, k)) = self.b_window.front().copied() {
            if j - old < WINDOW as u64 {
                break;
            }
            self.b_window.pop_front();
            if let Some(q) = self.unmatched_b.get_mut(&k) {
                if let Some(p) = q.iter().position(|e| e.0 == old) {
                    q.remove(p);
                    self.extra_b += 1;
                }
                if q.is_empty() {
                    self.unmatched_b.remove(&k);
                }
            }
        }
        self.drain_ready();
    }

    fn drain_ready(&mut self) {
        while self.a_pending.front().is_some_and(|s| s.partner.is_some()) {
            self.resolve_front();
        }
    }

    fn resolve_front(&mut self) {
        let Some(slot) = self.a_pending.pop_front() else {
            return;
        };
        let idx = self.a_base;
        self.a_base += 1;
        match slot.partner {
            None => {
                if let Some(q) = self.unmatched_a.get_mut(&slot.key) {
                    q.retain(|e| e.0 != idx);
                    if q.is_empty() {
                        self.unmatched_a.remove(&slot.key);
                    }
                }
            }
            Some((bj, bt)) => {
                self.matched += 1;
                if let Some(last) = self.last_b_idx {
                    self.pairs += 1;
                    if bj > last {
                        self.concordant += 1;
                    }
                }
                self.last_b_idx = Some(bj);
                if let Some((pa, pb)) = self.prev {
                    let ga = slot.issue as i128 - pa as i128;
                    let gb = bt as i128 - pb as i128;
                    let e = gb - ga;
                    self.err_abs
                        .record(u64::try_from(e.unsigned_abs()).unwrap_or(u64::MAX));
                    self.err_sum += e as f64;
                    self.gap_a_sum += ga.unsigned_abs() as f64;
                    self.err_n += 1;
                }
                self.prev = Some((slot.issue, bt));
            }
        }
    }
}

/// Whether both traces carry completions (so queue depth and service time
/// are known on both sides).
fn known(a: &Analysis, b: &Analysis) -> bool {
    a.service_time_ns.count > 0 && b.service_time_ns.count > 0
}

/// Total variation distance between two count vectors keyed alike.
fn tvd<K: std::hash::Hash + Eq + Copy>(a: &[(K, u64)], b: &[(K, u64)]) -> f64 {
    let na: u64 = a.iter().map(|x| x.1).sum();
    let nb: u64 = b.iter().map(|x| x.1).sum();
    if na == 0 && nb == 0 {
        return 0.0;
    }
    if na == 0 || nb == 0 {
        return 1.0;
    }
    let mut m: HashMap<K, (f64, f64)> = HashMap::new();
    for (k, c) in a {
        m.entry(*k).or_default().0 += *c as f64 / na as f64;
    }
    for (k, c) in b {
        m.entry(*k).or_default().1 += *c as f64 / nb as f64;
    }
    0.5 * m.values().map(|(p, q)| (p - q).abs()).sum::<f64>()
}

/// The seed's criteria (see the module doc) for analyses `a` and `b`.
fn criteria(
    a: &Analysis,
    b: &Analysis,
    d: &Distances,
    (missing, stray): (u64, u64),
    (qa, qb): (&TimeDepth, &TimeDepth),
    (sa, sb): (Option<HeadToHead>, Option<HeadToHead>),
    tolerance: f64,
) -> Vec<Criterion> {
    let mut out = Vec::new();
    let ops = [
        ("reads", (a.reads, a.bytes_read), (b.reads, b.bytes_read)),
        (
            "writes",
            (a.writes, a.bytes_written),
            (b.writes, b.bytes_written),
        ),
        (
            "trims",
            (a.trims, a.bytes_trimmed),
            (b.trims, b.bytes_trimmed),
        ),
        ("flushes", (a.flushes, 0), (b.flushes, 0)),
    ];
    for (name, x, y) in ops {
        if matches!(name, "trims" | "flushes") && x.0 == 0 && y.0 == 0 {
            continue;
        }
        out.push(Criterion {
            name: format!("{name}: count and bytes"),
            figure: format!("A {} / {} B, B {} / {} B", x.0, x.1, y.0, y.1),
            limit: "identical".into(),
            pass: Some(x == y),
        });
    }
    out.push(Criterion {
        name: "stray accesses (in B, not in A)".into(),
        figure: stray.to_string(),
        limit: "0".into(),
        pass: Some(stray == 0),
    });
    out.push(Criterion {
        name: "missing accesses (in A, not in B)".into(),
        figure: missing.to_string(),
        limit: "0".into(),
        pass: Some(missing == 0),
    });
    let sizes = |x: &Analysis| {
        x.sizes
            .iter()
            .map(|s| (s.bytes, s.count))
            .collect::<Vec<_>>()
    };
    let sectors = |x: &Analysis| x.mean_size_bytes / 512.0;
    out.push(Criterion {
        name: "size distribution".into(),
        figure: format!(
            "mean A {:.4} sectors, B {:.4} sectors; TV distance {:.4}",
            sectors(a),
            sectors(b),
            d.sizes
        ),
        limit: "identical".into(),
        pass: Some(sizes(a) == sizes(b) && a.sizes_exact && b.sizes_exact),
    });
    out.push(Criterion {
        name: "queue depth (time-weighted)".into(),
        figure: match d.queue_depth_time {
            Some(v) => format!(
                "mean A {:.2}, B {:.2}; TV distance {v:.4}",
                qa.mean, qb.mean
            ),
            None => "unknown (a trace without completions)".into(),
        },
        limit: format!("TV distance <= {tolerance}"),
        pass: d.queue_depth_time.map(|v| v <= tolerance),
    });
    let svc = match (a.service_time_ns.mean, b.service_time_ns.mean) {
        (Some(x), Some(y)) if x > 0.0 => Some((x, y, (y - x) / x)),
        _ => None,
    };
    out.push(Criterion {
        name: "mean service time".into(),
        figure: match svc {
            Some((x, y, r)) => format!(
                "A {:.3} ms, B {:.3} ms: {:+.2} %",
                x / 1e6,
                y / 1e6,
                r * 100.0
            ),
            None => "unknown (a trace without completions)".into(),
        },
        limit: format!("within {:.0} %", 2.0 * tolerance * 100.0),
        pass: svc.map(|(_, _, r)| r.abs() <= 2.0 * tolerance),
    });
    out.push(score_criterion(
        sa.map(|s| s.iops),
        sb.map(|s| s.iops),
        tolerance,
    ));
    out
}

/// The distances between the two streams' distributions: sizes, queue
/// depth, seek distance and service time per request, and queue depth
/// over time (`time_pairs_a`, `time_pairs_b`: each stream's (depth, ns)
/// pairs).
fn distances(
    a_an: &Analysis,
    b_an: &Analysis,
    time_pairs_a: &[(u64, u64)],
    time_pairs_b: &[(u64, u64)],
) -> Distances {
    let size_pairs = |x: &Analysis| {
        x.sizes
            .iter()
            .map(|s| (s.bytes, s.count))
            .collect::<Vec<_>>()
    };
    let depth_pairs = |x: &Analysis| {
        x.queue_depth
            .iter()
            .map(|s| (s.depth, s.count))
            .collect::<Vec<_>>()
    };
    let seek_pairs = |x: &Analysis| {
        x.seek_distance
            .signed
            .iter()
            .map(|s| (s.bucket, s.count))
            .collect::<Vec<_>>()
    };
    let svc_pairs = |x: &Analysis| {
        x.service_time_histogram
            .iter()
            .map(|s| (s.from_ns, s.count))
            .collect::<Vec<_>>()
    };
    Distances {
        sizes: tvd(&size_pairs(a_an), &size_pairs(b_an)),
        queue_depth: known(a_an, b_an).then(|| tvd(&depth_pairs(a_an), &depth_pairs(b_an))),
        seek_distance: tvd(&seek_pairs(a_an), &seek_pairs(b_an)),
        service_time: known(a_an, b_an).then(|| tvd(&svc_pairs(a_an), &svc_pairs(b_an))),
        queue_depth_time: (known(a_an, b_an)
            && !time_pairs_a.is_empty()
            && !time_pairs_b.is_empty())
        .then(|| tvd(time_pairs_a, time_pairs_b)),
    }
}

/// Compare two request streams (see the module doc). `tolerance` is a
/// fraction, e.g. 0.05.
pub fn compare(
    a: &mut dyn Iterator<Item = Result<Request>>,
    b: &mut dyn Iterator<Item = Result<Request>>,
    tolerance: f64,
) -> Result<Comparison> {
    let mut st = State {
        a_pending: VecDeque::new(),
        a_base: 0,
        unmatched_a: HashMap::new(),
        unmatched_b: HashMap::new(),
        b_window: VecDeque::new(),
        nb: 0,
        matched: 0,
        extra_b: 0,
        last_b_idx: None,
        concordant: 0,
        pairs: 0,
        prev: None,
        err_abs: LogHist::new(),
        err_sum: 0.0,
        gap_a_sum: 0.0,
        err_n: 0,
    };
    let mut an_a = Analyzer::new();
    let mut an_b = Analyzer::new();
    let mut clock_a = DepthClock::default();
    let mut clock_b = DepthClock::default();
    // Merge the two streams by issue time (each relative to its own start),
    // so a request and its counterpart arrive close together.
    let mut na = a.next().transpose()?;
    let mut nb = b.next().transpose()?;
    loop {
        let take_a = match (&na, &nb) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(x), Some(y)) => x.issue_ns <= y.issue_ns,
        };
        if take_a {
            if let Some(r) = na.take() {
                an_a.add(&r);
                clock_a.add(&r);
                st.push_a(&r);
            }
            na = a.next().transpose()?;
        } else {
            if let Some(r) = nb.take() {
                an_b.add(&r);
                clock_b.add(&r);
                st.push_b(&r);
            }
            nb = b.next().transpose()?;
        }
    }
    while !st.a_pending.is_empty() {
        st.resolve_front();
    }
    let leftover_b: u64 = st.unmatched_b.values().map(|q| q.len() as u64).sum();
    let extra_in_b = st.extra_b + leftover_b;
    let a_an = an_a.finish();
    let b_an = an_b.finish();

    let (time_pairs_a, queue_depth_time_a) = clock_a.finish();
    let (time_pairs_b, queue_depth_time_b) = clock_b.finish();
    let distances = distances(&a_an, &b_an, &time_pairs_a, &time_pairs_b);
    let requests_a = a_an.requests;
    let match_fraction = if requests_a == 0 {
        if b_an.requests == 0 {
            1.0
        } else {
            0.0
        }
    } else {
        st.matched as f64 / requests_a as f64
    };
    let order_agreement = if st.pairs == 0 {
        1.0
    } else {
        st.concordant as f64 / st.pairs as f64
    };
    let interarrival_error = if st.gap_a_sum > 0.0 {
        st.err_abs.mean().unwrap_or(0.0) * st.err_n as f64 / st.gap_a_sum
    } else if st.err_abs.mean().unwrap_or(0.0) > 0.0 {
        1.0
    } else {
        0.0
    };
    let score_a = clock_a.score();
    let score_b = clock_b.score();
    let (plot_a, plot_b) = (clock_a.plots(), clock_b.plots());
    let missing = requests_a.saturating_sub(st.matched);
    let criteria = criteria(
        &a_an,
        &b_an,
        &distances,
        (missing, extra_in_b),
        (&queue_depth_time_a, &queue_depth_time_b),
        (score_a, score_b),
        tolerance,
    );
    let reasons: Vec<String> = criteria
        .iter()
        .filter(|c| c.pass == Some(false))
        .map(|c| format!("{}: {} (limit: {})", c.name, c.figure, c.limit))
        .collect();
    Ok(Comparison {
        requests_a,
        requests_b: b_an.requests,
        matched: st.matched,
        match_fraction,
        extra_in_b,
        order_agreement,
        interarrival_abs_error_ns: st.err_abs.summary(),
        interarrival_mean_error_ns: (st.err_n > 0).then(|| st.err_sum / st.err_n as f64),
        interarrival_error,
        distances,
        queue_depth_time_a,
        queue_depth_time_b,
        score_a,
        score_b,
        plot_a,
        plot_b,
        criteria,
        tolerance,
        differs: !reasons.is_empty(),
        reasons,
        a: a_an,
        b: b_an,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(v: &[Request]) -> impl Iterator<Item = Result<Request>> + '_ {
        v.iter().map(|r| Ok(*r))
    }

    fn trace(n: u64) -> Vec<Request> {
        (0..n)
            .map(|i| {
                let mut r = Request::new(
                    i * 1000,
                    if i % 5 == 0 { Op::Write } else { Op::Read },
                    (i * 7919 % 1000) * 4096,
                    4096,
                );
                r.complete_ns = Some(i * 1000 + 300);
                r
            })
            .collect()
    }

    #[test]
    fn identical_traces_do_not_differ() {
        let a = trace(1000);
        let c = compare(&mut ok(&a), &mut ok(&a), 0.01).unwrap();
        assert_eq!(c.matched, 1000);
        assert_eq!(c.match_fraction, 1.0);
        assert_eq!(c.order_agreement, 1.0);
        assert_eq!(c.interarrival_error, 0.0);
        assert!(!c.differs, "{:?}", c.reasons);
    }

    #[test]
    fn swapped_pair_lowers_order_agreement_by_its_share() {
        let a = trace(101);
        let mut b = a.clone();
        b.swap(10, 11);
        let c = compare(&mut ok(&a), &mut ok(&b), 0.5).unwrap();
        assert_eq!(c.matched, 101);
        // 100 adjacent pairs; swapping 10 and 11 breaks exactly (10,11).
        assert_eq!(c.order_agreement, 99.0 / 100.0);
    }

    #[test]
    fn missing_requests_make_them_differ() {
        let a = trace(100);
        let b: Vec<Request> = a.iter().copied().filter(|r| r.op != Op::Write).collect();
        let c = compare(&mut ok(&a), &mut ok(&b), 0.05).unwrap();
        assert_eq!(c.matched, 80);
        assert_eq!(c.match_fraction, 0.8);
        assert!(c.differs);
        assert!(c.reasons.iter().any(|r| r.starts_with("missing accesses")));
        assert!(c.reasons.iter().any(|r| r.starts_with("writes: count")));
    }

    #[test]
    fn doubled_gaps_are_a_100_percent_interarrival_error() {
        let a = trace(50);
        let b: Vec<Request> = a
            .iter()
            .map(|r| Request {
                issue_ns: r.issue_ns * 2,
                complete_ns: r.complete_ns.map(|c| c * 2),
                ..*r
            })
            .collect();
        let c = compare(&mut ok(&a), &mut ok(&b), 0.05).unwrap();
        assert!((c.interarrival_error - 1.0).abs() < 1e-9);
        assert_eq!(c.interarrival_mean_error_ns, Some(1000.0));
        assert!(c.differs);
    }

    #[test]
    fn unknown_depth_and_service_are_not_compared() {
        let a: Vec<Request> = trace(100)
            .into_iter()
            .map(|r| Request {
                complete_ns: None,
                ..r
            })
            .collect();
        let b = trace(100);
        let c = compare(&mut ok(&a), &mut ok(&b), 0.01).unwrap();
        assert_eq!(
            (c.distances.queue_depth, c.distances.service_time),
            (None, None)
        );
        assert!(!c.differs, "{:?}", c.reasons);
        let c = compare(&mut ok(&b), &mut ok(&b), 0.01).unwrap();
        assert_eq!(
            (c.distances.queue_depth, c.distances.service_time),
            (Some(0.0), Some(0.0))
        );
    }

    /// The criterion named `name` (starting with it).
    fn crit<'a>(c: &'a Comparison, name: &str) -> &'a Criterion {
        c.criteria
            .iter()
            .find(|x| x.name.starts_with(name))
            .unwrap_or_else(|| panic!("no criterion {name}: {:?}", c.criteria))
    }

    /// Requests at the same (op, offset, len): a closed loop at depth 1
    /// reading sector 0 over and over.
    fn duplicates(n: u64, gap: u64, svc: u64) -> Vec<Request> {
        (0..n)
            .map(|i| {
                let mut r = Request::new(i * gap, Op::Read, 0, 4096);
                r.complete_ns = Some(i * gap + svc);
                r
            })
            .collect()
    }

    #[test]
    fn duplicates_pair_in_order_so_inter_arrival_errors_are_the_replays() {
        // B plays the same requests 1 us later each (a constant lateness):
        // every gap is the original's, so paired in order the error is 0.
        // Pairing each with the closest in time would cross them
        // wherever B drifts by more than half a gap.
        let a = duplicates(200, 1000, 800);
        let b: Vec<Request> = a
            .iter()
            .map(|r| Request {
                issue_ns: r.issue_ns + 1000 * 3 / 2,
                complete_ns: r.complete_ns.map(|c| c + 1000 * 3 / 2),
                ..*r
            })
            .collect();
        let c = compare(&mut ok(&a), &mut ok(&b), 0.05).unwrap();
        assert_eq!(c.matched, 200);
        assert_eq!(c.order_agreement, 1.0);
        assert_eq!(c.interarrival_abs_error_ns.max, Some(0));
        assert_eq!(c.interarrival_error, 0.0);
        assert!(!c.differs, "{:?}", c.reasons);
    }

    #[test]
    fn a_shifted_copy_passes_every_criterion() {
        // The whole capture starts 7 ms later: every figure is relative to
        // each trace's own start, so nothing differs.
        let a = trace(500);
        let b: Vec<Request> = a
            .iter()
            .map(|r| Request {
                issue_ns: r.issue_ns + 7_000_000,
                complete_ns: r.complete_ns.map(|c| c + 7_000_000),
                ..*r
            })
            .collect();
        let c = compare(&mut ok(&a), &mut ok(&b), 0.05).unwrap();
        assert!(!c.differs, "{:?}", c.reasons);
        for x in &c.criteria {
            assert_eq!(x.pass, Some(true), "{x:?}");
        }
        assert_eq!(c.distances.queue_depth_time, Some(0.0));
        assert_eq!(c.score_a, c.score_b);
        // 500 requests 1 us apart: 1 us head-to-head, 1,000,000 IO/s.
        let s = c.score_a.unwrap();
        assert!((s.head_to_head_ms - 0.001).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn a_stray_access_fails_stray_counts_and_sizes_but_nothing_is_missing() {
        let a = trace(300);
        let mut b = a.clone();
        // A 512 KiB read in the middle (a probe of the target).
        let mut probe = Request::new(150_500, Op::Read, 1 << 30, 512 << 10);
        probe.complete_ns = Some(150_700);
        b.insert(151, probe);
        let c = compare(&mut ok(&a), &mut ok(&b), 0.05).unwrap();
        assert_eq!(c.matched, 300);
        assert_eq!(c.extra_in_b, 1);
        assert!(c.differs);
        assert_eq!(crit(&c, "stray").pass, Some(false));
        assert_eq!(crit(&c, "stray").figure, "1");
        assert_eq!(crit(&c, "missing").pass, Some(true));
        assert_eq!(crit(&c, "reads").pass, Some(false));
        assert_eq!(crit(&c, "writes").pass, Some(true));
        assert_eq!(crit(&c, "size distribution").pass, Some(false));
        assert!(crit(&c, "reads").figure.contains(&format!(
            "B {} / {} B",
            c.a.reads + 1,
            c.a.bytes_read + (512 << 10)
        )));
    }

    #[test]
    fn time_weighted_depth_counts_time_not_arrivals() {
        // Depth 2 for 1 ms, then depth 1 for 9 ms: per arrival the depths
        // are 1 and 2 (half each), by time 10 % at 2 and 90 % at 1.
        let mut r1 = Request::new(0, Op::Read, 0, 4096);
        r1.complete_ns = Some(10_000_000);
        let mut r2 = Request::new(0, Op::Read, 8192, 4096);
        r2.complete_ns = Some(1_000_000);
        let a = vec![r1, r2];
        let c = compare(&mut ok(&a), &mut ok(&a), 0.05).unwrap();
        let q = &c.queue_depth_time_a;
        assert_eq!(
            q.shares,
            vec![
                DepthShare {
                    depth: 1,
                    fraction: 0.9
                },
                DepthShare {
                    depth: 2,
                    fraction: 0.1
                }
            ]
        );
        assert!((q.mean - 1.1).abs() < 1e-12);
        // A copy with depth 1 throughout (r2 after r1) is 0.1 away.
        let mut s2 = Request::new(10_000_000, Op::Read, 8192, 4096);
        s2.complete_ns = Some(11_000_000);
        let b = vec![r1, s2];
        let c = compare(&mut ok(&a), &mut ok(&b), 0.05).unwrap();
        let d = c.distances.queue_depth_time.unwrap();
        assert!((d - 0.1).abs() < 1e-9, "{d}");
        assert_eq!(crit(&c, "queue depth").pass, Some(false));
    }

    #[test]
    fn slower_service_and_score_fail_with_their_figures() {
        let a = trace(100);
        // Same issue times, service 20 % longer.
        let b: Vec<Request> = a
            .iter()
            .map(|r| Request {
                complete_ns: Some(r.issue_ns + 360),
                ..*r
            })
            .collect();
        let c = compare(&mut ok(&a), &mut ok(&b), 0.05).unwrap();
        let s = crit(&c, "mean service time");
        assert_eq!(s.pass, Some(false));
        assert!(s.figure.ends_with("+20.00 %"), "{}", s.figure);
        assert_eq!(crit(&c, "score").pass, Some(true));
        let sc = score_criterion(Some(80.83), Some(80.84), 0.05);
        assert_eq!(sc.pass, Some(true));
        assert!(sc.figure.contains("12.370 ms"), "{}", sc.figure);
        assert_eq!(
            score_criterion(Some(100.0), Some(94.0), 0.05).pass,
            Some(false)
        );
        assert_eq!(score_criterion(None, Some(94.0), 0.05).pass, None);
    }

    #[test]
    fn plot_series_hold_the_depth_over_time_and_the_service_cdf() {
        // Depth 2 for the first 10 ms, depth 1 for the next 10 ms.
        let ms = 1_000_000;
        let mut r1 = Request::new(0, Op::Read, 0, 4096);
        r1.complete_ns = Some(20 * ms);
        let mut r2 = Request::new(0, Op::Read, 8192, 4096);
        r2.complete_ns = Some(10 * ms);
        let a = vec![r1, r2];
        let c = compare(&mut ok(&a), &mut ok(&a), 0.05).unwrap();
        let p = &c.plot_a;
        assert!(p.depth_over_time.len() <= SERIES_BUCKETS);
        assert!(p.depth_over_time.len() > SERIES_BUCKETS / 4);
        // Each bucket but the one across 10 ms lies wholly in one phase:
        // depth 2 before, 1 after.
        for d in &p.depth_over_time {
            let half = p.bucket_s / 2.0;
            if d.t_s + half <= 0.010 {
                assert_eq!(d.depth, 2.0, "{d:?}");
            } else if d.t_s - half >= 0.010 {
                assert_eq!(d.depth, 1.0, "{d:?}");
            } else {
                assert!(d.depth > 1.0 && d.depth < 2.0, "{d:?}");
            }
        }
        // The last bucket ends with the trace (it may be cut short), and
        // the buckets average to the clock's mean depth, 1.5.
        let last = p.depth_over_time.last().unwrap();
        assert!(last.t_s < 0.020 && last.t_s + p.bucket_s / 2.0 >= 0.020);
        let w: f64 = p.depth_over_time.iter().map(|d| d.depth).sum::<f64>();
        assert!((w / p.depth_over_time.len() as f64 - 1.5).abs() < 0.01);
        assert_eq!(c.plot_a, c.plot_b);
        // Service times 10 ms and 20 ms: the CDF steps at each, ends at 1.
        let cdf = &p.service_time_cdf;
        // (between them, the histogram's estimates of 20 ms, ±0.4 %).
        assert_eq!(
            cdf[0],
            CdfPoint {
                ns: 10 * ms,
                fraction: 0.5
            }
        );
        assert_eq!(
            cdf.last(),
            Some(&CdfPoint {
                ns: 20 * ms,
                fraction: 1.0
            })
        );
        for p in &cdf[1..] {
            assert!(p.ns.abs_diff(20 * ms) * 250 < 20 * ms, "{cdf:?}");
        }
    }

    #[test]
    fn a_long_trace_keeps_its_series_bounded() {
        // 200,000 requests, 1 ms apart, each 300 us: 200 s of trace.
        let a: Vec<Request> = (0..200_000u64)
            .map(|i| {
                let mut r = Request::new(i * 1_000_000, Op::Read, i * 4096, 4096);
                r.complete_ns = Some(i * 1_000_000 + 300_000);
                r
            })
            .collect();
        let c = compare(&mut ok(&a), &mut ok(&a), 0.05).unwrap();
        let p = &c.plot_a;
        assert!(p.depth_over_time.len() <= SERIES_BUCKETS);
        assert!(p.depth_over_time.len() > SERIES_BUCKETS / 2);
        // Busy 30 % of every millisecond: a mean depth of 0.3 per bucket.
        for d in &p.depth_over_time {
            assert!((d.depth - 0.3).abs() < 0.01, "{d:?}");
        }
        assert!(p.service_time_cdf.len() <= CDF_POINTS);
        assert!(p
            .service_time_cdf
            .windows(2)
            .all(|w| w[0].ns < w[1].ns && w[0].fraction < w[1].fraction));
    }

    #[test]
    fn a_capture_cut_in_flight_and_its_drained_replay_have_one_depth() {
        // A closed loop at depth 2 (a request every 5 us, each 10 us):
        // the original capture stops with the last two in flight (no
        // completions); the replay of it runs them to completion and
        // drains. Over the window to the last issue both are at depth 2
        // but for the first 5 us.
        let trace = |cut: bool| -> Vec<Request> {
            (0..100u64)
                .map(|i| {
                    let mut r = Request::new(i * 5_000, Op::Read, i * 4096, 4096);
                    r.complete_ns = (!cut || i < 98).then_some(i * 5_000 + 10_000);
                    r
                })
                .collect()
        };
        let (a, b) = (trace(true), trace(false));
        let c = compare(&mut ok(&a), &mut ok(&b), 0.05).unwrap();
        assert_eq!(c.distances.queue_depth_time, Some(0.0));
        assert_eq!(c.queue_depth_time_a, c.queue_depth_time_b);
        let q = &c.queue_depth_time_a;
        assert_eq!(q.shares.len(), 2, "{q:?}");
        assert!(
            (q.shares[1].fraction - 490.0 / 495.0).abs() < 1e-12,
            "{q:?}"
        );
        assert_eq!(crit(&c, "queue depth").pass, Some(true));
    }

    #[test]
    fn tvd_known_values() {
        assert_eq!(tvd(&[(1u64, 1)], &[(1u64, 5)]), 0.0);
        assert_eq!(tvd(&[(1u64, 1)], &[(2u64, 5)]), 1.0);
        assert!((tvd(&[(1u64, 1), (2, 1)], &[(1u64, 1)]) - 0.5).abs() < 1e-12);
    }
}
