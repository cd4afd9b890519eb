//! The IPEAK audit: compare a trace with a second-generation capture of its
//! replay (or any two traces) and say whether they differ.
//!
//! One streaming pass reads both traces merged by issue time (each relative
//! to its own start).
//! - **Matching**: a request of A matches one of B with the same
//!   (op, offset, length), as a multiset; among several unmatched
//!   candidates the one closest in issue time is taken. The search
//!   is windowed: a request still unmatched after [`WINDOW`] further
//!   requests of its own trace is counted unmatched. For a replay (same
//!   order up to reordering by the device queue) this equals the exact
//!   multiset match and keeps memory bounded.
//! - **Order agreement**: walking A's matched requests in A's order, the
//!   share of consecutive pairs whose partners in B are in the same order
//!   (1.0 = identical order; an adjacent-pair Kendall-tau concordance).
//! - **Inter-arrival error**: for consecutive matched pairs (in A order),
//!   (B's issue gap) − (A's issue gap), ns, summarised; `interarrival_error`
//!   is mean |error| / mean A gap.
//! - **Distribution distances**: total variation distance (½ Σ |p − q|,
//!   0 = identical, 1 = disjoint) between the two traces' size, queue-depth,
//!   signed seek-distance and service-time (log2 buckets) distributions;
//!   queue depth and service time only when both traces have completions.
//!
//! `differs` is true when match_fraction or order_agreement fall below
//! 1 − tolerance, or a distance or the inter-arrival error exceeds it;
//! `reasons` says which.

use std::collections::{HashMap, VecDeque};

use serde::Serialize;

use crate::analyze::{Analysis, Analyzer};
use crate::error::Result;
use crate::hist::{LogHist, Summary};
use crate::model::{Op, Request};

/// Matching window, requests: 1,048,576.
pub const WINDOW: usize = 1 << 20;

type Key = (Op, u64, u64);

/// Distances between the two traces' distributions (total variation).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
}

/// The comparison result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
    /// Tolerance applied.
    pub tolerance: f64,
    /// Whether A and B differ beyond the tolerance.
    pub differs: bool,
    /// What exceeded the tolerance.
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

/// Remove and return the entry whose issue time is closest to `t` (the
/// earliest of equals).
fn take_closest(q: &mut VecDeque<(u64, u64)>, t: u64) -> Option<(u64, u64)> {
    let best = q
        .iter()
        .enumerate()
        .min_by_key(|(_, e)| e.1.abs_diff(t))
        .map(|(i, _)| i)?;
    q.remove(best)
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
            partner = take_closest(q, r.issue_ns);
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
            hit = take_closest(q, r.issue_ns).map(|(i, _)| i);
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
                st.push_a(&r);
            }
            na = a.next().transpose()?;
        } else {
            if let Some(r) = nb.take() {
                an_b.add(&r);
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
    let distances = Distances {
        sizes: tvd(&size_pairs(&a_an), &size_pairs(&b_an)),
        queue_depth: known(&a_an, &b_an).then(|| tvd(&depth_pairs(&a_an), &depth_pairs(&b_an))),
        seek_distance: tvd(&seek_pairs(&a_an), &seek_pairs(&b_an)),
        service_time: known(&a_an, &b_an).then(|| tvd(&svc_pairs(&a_an), &svc_pairs(&b_an))),
    };
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
    let mut reasons = Vec::new();
    if match_fraction < 1.0 - tolerance {
        reasons.push(format!(
            "match_fraction {match_fraction:.4} < {:.4}",
            1.0 - tolerance
        ));
    }
    if extra_in_b as f64 > tolerance * requests_a.max(1) as f64 {
        reasons.push(format!("{extra_in_b} requests of B are not in A"));
    }
    if order_agreement < 1.0 - tolerance {
        reasons.push(format!(
            "order_agreement {order_agreement:.4} < {:.4}",
            1.0 - tolerance
        ));
    }
    if interarrival_error > tolerance {
        reasons.push(format!(
            "interarrival_error {interarrival_error:.4} > {tolerance}"
        ));
    }
    for (name, d) in [
        ("sizes", Some(distances.sizes)),
        ("queue_depth", distances.queue_depth),
        ("seek_distance", Some(distances.seek_distance)),
        ("service_time", distances.service_time),
    ] {
        if let Some(d) = d.filter(|d| *d > tolerance) {
            reasons.push(format!("{name} distance {d:.4} > {tolerance}"));
        }
    }
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
        assert!(c.reasons.iter().any(|r| r.contains("match_fraction")));
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

    #[test]
    fn tvd_known_values() {
        assert_eq!(tvd(&[(1u64, 1)], &[(1u64, 5)]), 0.0);
        assert_eq!(tvd(&[(1u64, 1)], &[(2u64, 5)]), 1.0);
        assert!((tvd(&[(1u64, 1), (2, 1)], &[(1u64, 1)]) - 0.5).abs() < 1e-12);
    }
}
