//! The issue and completion times of a dependency replay's recent
//! requests, by trace index. A request looks up its predecessor's issue or
//! its dependency's completion, both a few indices behind it; the times
//! live in a ring indexed by the trace index itself, so recording and
//! looking up are one array access each, in nearly sequential memory, and
//! nothing is pruned, hashed or allocated per request. A slot holds its
//! index, so one overwritten by a later request is known to be gone: every
//! index below [`Recent::forgotten_below`] may be, and was issued (and,
//! unless still in flight, completed) far behind the replay's front.

/// One request's times.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Its trace index; `u64::MAX` for a slot never used.
    idx: u64,
    /// When it was issued, monotonic ns.
    issued: u64,
    /// When it completed, monotonic ns, until a dependent took it.
    done: Option<u64>,
}

/// The ring.
#[derive(Debug)]
pub(crate) struct Recent {
    slots: Vec<Entry>,
    /// One past the highest index issued.
    end: u64,
}

impl Recent {
    /// Requests remembered: far beyond any queue depth or lookahead.
    pub(crate) const CAP: usize = 1 << 17;

    /// A ring of [`Recent::CAP`] requests with `keep`, else an empty one
    /// (the modes that keep no dependencies).
    pub(crate) fn new(keep: bool) -> Recent {
        let n = if keep { Self::CAP } else { 0 };
        Recent {
            slots: vec![
                Entry {
                    idx: u64::MAX,
                    issued: 0,
                    done: None,
                };
                n
            ],
            end: 0,
        }
    }

    fn at(&self, idx: u64) -> Option<&Entry> {
        let n = self.slots.len() as u64;
        (n > 0)
            .then(|| &self.slots[(idx % n) as usize])
            .filter(|e| e.idx == idx)
    }

    fn at_mut(&mut self, idx: u64) -> Option<&mut Entry> {
        let n = self.slots.len() as u64;
        if n == 0 {
            return None;
        }
        Some(&mut self.slots[(idx % n) as usize]).filter(|e| e.idx == idx)
    }

    /// Request `idx` was issued at `at`.
    pub(crate) fn issued(&mut self, idx: u64, at: u64) {
        let n = self.slots.len() as u64;
        if n == 0 {
            return;
        }
        self.slots[(idx % n) as usize] = Entry {
            idx,
            issued: at,
            done: None,
        };
        self.end = self.end.max(idx + 1);
    }

    /// When request `idx` was issued, if it was and is remembered.
    pub(crate) fn issued_at(&self, idx: u64) -> Option<u64> {
        self.at(idx).map(|e| e.issued)
    }

    /// Request `idx` completed at `at` and nobody waits for it yet.
    pub(crate) fn completed(&mut self, idx: u64, at: u64) {
        if let Some(e) = self.at_mut(idx) {
            e.done = Some(at);
        }
    }

    /// When request `idx` completed, if no dependent took it yet.
    pub(crate) fn done_at(&self, idx: u64) -> Option<u64> {
        self.at(idx).and_then(|e| e.done)
    }

    /// When request `idx` completed, taken by its dependent.
    pub(crate) fn take_done(&mut self, idx: u64) -> Option<u64> {
        self.at_mut(idx).and_then(|e| e.done.take())
    }

    /// Indices below this may have been overwritten by later requests.
    pub(crate) fn forgotten_below(&self) -> u64 {
        self.end.saturating_sub(self.slots.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_remembered_until_one_a_ring_later_takes_its_slot() {
        let mut r = Recent::new(true);
        r.issued(5, 100);
        r.completed(5, 150);
        assert_eq!((r.issued_at(5), r.done_at(5)), (Some(100), Some(150)));
        assert_eq!(r.take_done(5), Some(150));
        assert_eq!((r.issued_at(5), r.done_at(5)), (Some(100), None));
        assert_eq!(r.forgotten_below(), 0);
        let later = 5 + Recent::CAP as u64;
        r.issued(later, 900);
        assert_eq!(r.issued_at(5), None, "overwritten");
        assert_eq!(r.issued_at(later), Some(900));
        assert!(5 < r.forgotten_below());
        // Never issued: unknown, and its completion is not kept.
        r.completed(7, 1);
        assert_eq!(r.done_at(7), None);
        assert_eq!(Recent::new(false).issued_at(0), None);
    }
}
