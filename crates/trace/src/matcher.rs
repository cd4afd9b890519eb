//! Turns a stream of issue / complete / requeue events (blkparse D/C, the
//! kernel's block_rq_issue / block_rq_complete) into requests, in issue
//! order, in bounded memory.
//!
//! Issues and completions are matched by (device, sector), first issued
//! first matched when several are outstanding at the same key. A completion
//! for fewer sectors than outstanding is partial: the rest stays outstanding
//! at `sector + nr_sector` and the request completes with the last part. A
//! requeue cancels the outstanding issue (the driver will issue it again;
//! the re-issue is the request kept). A request is emitted once it and all
//! earlier ones are complete; one still outstanding after
//! [`Matcher::MAX_AGE_NS`] of trace time, or when more than
//! [`Matcher::MAX_PENDING`] are waiting, is emitted without a completion and
//! counted as unmatched, which bounds memory on traces with lost events.

use std::collections::VecDeque;

use crate::fasthash::{self, FastMap};
use crate::model::{Flags, Op, Request};
use crate::source::ReadStats;

type Key = (u32, u64);

/// The requests outstanding at one key, first issued first: nearly always
/// one, held in place, so an issue and its completion allocate nothing.
struct Waiting {
    first: u64,
    rest: VecDeque<u64>,
}

struct Slot {
    req: Request,
    /// Current key while outstanding (moves on partial completion).
    key: Key,
    remaining_sectors: u64,
    done: bool,
    cancelled: bool,
}

/// The matcher. Feed events with [`Matcher::issue`], [`Matcher::complete`]
/// and [`Matcher::requeue`]; take finished requests with [`Matcher::pop`];
/// call [`Matcher::finish`] at end of input.
pub struct Matcher {
    pending: VecDeque<Slot>,
    /// Sequence number of `pending[0]`.
    base: u64,
    outstanding: FastMap<Key, Waiting>,
    latest_ns: u64,
    stats: ReadStats,
    finishing: bool,
}

impl Default for Matcher {
    fn default() -> Self {
        Self::new()
    }
}

impl Matcher {
    /// Trace time after which an uncompleted request is given up on: 60 s.
    pub const MAX_AGE_NS: u64 = 60_000_000_000;
    /// Most requests held waiting for completions: 1,048,576.
    pub const MAX_PENDING: usize = 1 << 20;

    /// An empty matcher.
    pub fn new() -> Self {
        Matcher {
            pending: VecDeque::new(),
            base: 0,
            outstanding: fasthash::map_with_capacity(256),
            latest_ns: 0,
            stats: ReadStats::default(),
            finishing: false,
        }
    }

    /// Counters (unmatched, partial, requeues).
    pub fn stats(&self) -> ReadStats {
        self.stats
    }

    /// Number of requests issued and not yet emitted.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// An issue at `t_ns` of `nr_sectors` 512-byte sectors at `sector`.
    pub fn issue(
        &mut self,
        t_ns: u64,
        dev: u32,
        sector: u64,
        nr_sectors: u64,
        op: Op,
        flags: Flags,
    ) {
        self.latest_ns = self.latest_ns.max(t_ns);
        let seq = self.base + self.pending.len() as u64;
        let key = (dev, sector);
        self.pending.push_back(Slot {
            req: Request {
                issue_ns: t_ns,
                complete_ns: None,
                device: dev,
                op,
                offset: sector.saturating_mul(512),
                len: nr_sectors.saturating_mul(512),
                flags,
            },
            key,
            remaining_sectors: nr_sectors,
            done: false,
            cancelled: false,
        });
        self.wait_at(key, seq);
    }

    /// Request `seq` is outstanding at `key`, after any already there.
    fn wait_at(&mut self, key: Key, seq: u64) {
        match self.outstanding.get_mut(&key) {
            Some(w) => w.rest.push_back(seq),
            None => {
                self.outstanding.insert(
                    key,
                    Waiting {
                        first: seq,
                        rest: VecDeque::new(),
                    },
                );
            }
        }
    }

    fn take_outstanding(&mut self, key: Key) -> Option<u64> {
        let w = self.outstanding.get_mut(&key)?;
        let seq = w.first;
        match w.rest.pop_front() {
            Some(next) => w.first = next,
            None => {
                self.outstanding.remove(&key);
            }
        }
        Some(seq)
    }

    fn slot(&mut self, seq: u64) -> Option<&mut Slot> {
        let i = seq.checked_sub(self.base)?;
        self.pending.get_mut(usize::try_from(i).ok()?)
    }

    /// A completion at `t_ns` of `nr_sectors` at `sector`.
    pub fn complete(&mut self, t_ns: u64, dev: u32, sector: u64, nr_sectors: u64) {
        self.latest_ns = self.latest_ns.max(t_ns);
        let Some(seq) = self.take_outstanding((dev, sector)) else {
            self.stats.unmatched_completions += 1;
            return;
        };
        let Some(slot) = self.slot(seq) else {
            self.stats.unmatched_completions += 1;
            return;
        };
        if nr_sectors > 0 && nr_sectors < slot.remaining_sectors {
            slot.remaining_sectors -= nr_sectors;
            let key = (dev, sector.saturating_add(nr_sectors));
            slot.key = key;
            self.stats.partial_completions += 1;
            self.wait_at(key, seq);
        } else {
            slot.remaining_sectors = 0;
            slot.done = true;
            slot.req.complete_ns = Some(t_ns);
        }
    }

    /// A requeue of the request outstanding at (dev, sector).
    pub fn requeue(&mut self, t_ns: u64, dev: u32, sector: u64) {
        self.latest_ns = self.latest_ns.max(t_ns);
        if let Some(seq) = self.take_outstanding((dev, sector)) {
            if let Some(slot) = self.slot(seq) {
                slot.cancelled = true;
                self.stats.requeues += 1;
            }
        }
    }

    /// Declare end of input: everything still outstanding is emitted without
    /// completion.
    pub fn finish(&mut self) {
        self.finishing = true;
    }

    /// The next request whose turn has come, if any.
    pub fn pop(&mut self) -> Option<Request> {
        loop {
            let front = self.pending.front()?;
            let ready = front.done
                || front.cancelled
                || self.finishing
                || self.latest_ns.saturating_sub(front.req.issue_ns) > Self::MAX_AGE_NS
                || self.pending.len() > Self::MAX_PENDING;
            if !ready {
                return None;
            }
            let slot = self.pending.pop_front()?;
            self.base += 1;
            if slot.cancelled {
                continue;
            }
            if !slot.done {
                self.stats.unmatched_issues += 1;
                let seq = self.base - 1;
                if let Some(w) = self.outstanding.get_mut(&slot.key) {
                    if w.first == seq {
                        match w.rest.pop_front() {
                            Some(next) => w.first = next,
                            None => {
                                self.outstanding.remove(&slot.key);
                            }
                        }
                    } else {
                        w.rest.retain(|s| *s != seq);
                    }
                }
            }
            return Some(slot.req);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(m: &mut Matcher) -> Vec<Request> {
        std::iter::from_fn(|| m.pop()).collect()
    }

    #[test]
    fn emits_in_issue_order_after_out_of_order_completion() {
        let mut m = Matcher::new();
        m.issue(10, 1, 100, 8, Op::Read, Flags::empty());
        m.issue(20, 1, 200, 8, Op::Write, Flags::empty());
        m.complete(30, 1, 200, 8);
        assert!(drain(&mut m).is_empty());
        m.complete(40, 1, 100, 8);
        let out = drain(&mut m);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].offset, out[0].complete_ns), (100 * 512, Some(40)));
        assert_eq!((out[1].offset, out[1].complete_ns), (200 * 512, Some(30)));
    }

    #[test]
    fn several_outstanding_at_one_sector_complete_first_issued_first() {
        // Three writes to one sector in flight at once; the second one's
        // completion is lost and it is given up by age: the others still
        // match in issue order, and the lost one leaves nothing behind.
        let half = Matcher::MAX_AGE_NS / 2;
        let mut m = Matcher::new();
        for t in [0, 1, half] {
            m.issue(t, 1, 64, 8, Op::Write, Flags::empty());
        }
        m.complete(10, 1, 64, 8);
        assert_eq!(
            m.pop().map(|r| (r.issue_ns, r.complete_ns)),
            Some((0, Some(10)))
        );
        let late = Matcher::MAX_AGE_NS + 5;
        m.issue(late, 1, 64, 8, Op::Write, Flags::empty());
        let out = drain(&mut m);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].issue_ns, out[0].complete_ns), (1, None));
        m.complete(late + 1, 1, 64, 8);
        m.complete(late + 2, 1, 64, 8);
        let out = drain(&mut m);
        assert_eq!(
            out.iter()
                .map(|r| (r.issue_ns, r.complete_ns))
                .collect::<Vec<_>>(),
            [(half, Some(late + 1)), (late, Some(late + 2))]
        );
        assert_eq!(m.stats().unmatched_issues, 1);
        assert_eq!(m.stats().unmatched_completions, 0);
    }

    #[test]
    fn partial_completion_completes_with_the_last_part() {
        let mut m = Matcher::new();
        m.issue(0, 1, 1000, 256, Op::Write, Flags::empty());
        m.complete(5, 1, 1000, 128);
        assert!(m.pop().is_none());
        m.complete(9, 1, 1128, 128);
        let r = m.pop().unwrap();
        assert_eq!((r.len, r.complete_ns), (256 * 512, Some(9)));
        assert_eq!(m.stats().partial_completions, 1);
    }

    #[test]
    fn requeue_keeps_the_reissue() {
        let mut m = Matcher::new();
        m.issue(0, 1, 8, 8, Op::Read, Flags::empty());
        m.requeue(1, 1, 8);
        m.issue(2, 1, 8, 8, Op::Read, Flags::empty());
        m.complete(3, 1, 8, 8);
        let out = drain(&mut m);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].issue_ns, out[0].complete_ns), (2, Some(3)));
        assert_eq!(m.stats().requeues, 1);
    }

    #[test]
    fn lost_completion_is_released_by_age_and_counted() {
        let mut m = Matcher::new();
        m.issue(0, 1, 8, 8, Op::Read, Flags::empty());
        m.issue(1, 1, 16, 8, Op::Read, Flags::empty());
        m.complete(Matcher::MAX_AGE_NS + 10, 1, 16, 8);
        let out = drain(&mut m);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].complete_ns, None);
        assert_eq!(m.stats().unmatched_issues, 1);
        m.complete(Matcher::MAX_AGE_NS + 20, 1, 8, 8);
        assert_eq!(m.stats().unmatched_completions, 1);
    }
}
