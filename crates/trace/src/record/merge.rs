//! One time order out of per-CPU event streams (tracefs's per-CPU
//! buffers, the BPF recorder's per-CPU rings), for the matcher, which
//! needs an issue before its completion.
//!
//! Each CPU's events arrive in nearly that CPU's time order (an event
//! that interrupts another's program on the same CPU can be written
//! first with the later time). Events are held per CPU and released up
//! to a watermark that the caller sets a few milliseconds behind the
//! moment every CPU was drained: an event is written within microseconds
//! of its timestamp, with preemption off, so by then every event up to
//! the mark is in hand.

use std::collections::VecDeque;

use super::event::Event;

/// How far behind the moment every CPU was drained the merge releases
/// events: 5 ms (see the module doc).
pub(crate) const WATERMARK_NS: u64 = 5_000_000;

/// An event's time.
pub(crate) fn event_time(e: &Event) -> u64 {
    match e {
        Event::Issue { t, .. }
        | Event::Complete { t, .. }
        | Event::Requeue { t, .. }
        | Event::Marker { t } => *t,
    }
}

/// Events held per CPU until the watermark passes them.
#[derive(Default)]
pub(crate) struct Merge {
    held: Vec<VecDeque<Event>>,
    /// Released events, in time order: the caller drains it.
    pub(crate) ready: Vec<Event>,
}

impl Merge {
    /// Hold `ev`, read from `cpu`'s stream.
    pub(crate) fn push(&mut self, cpu: usize, ev: Event) {
        if cpu >= self.held.len() {
            self.held.resize_with(cpu + 1, VecDeque::new);
        }
        self.held[cpu].push_back(ev);
    }

    /// Move every held event at or before `mark` (`u64::MAX`: all of
    /// them) into [`ready`](Merge::ready), after what is there, in time
    /// order.
    pub(crate) fn release(&mut self, mark: u64) {
        let start = self.ready.len();
        for q in &mut self.held {
            // Sorted already but for an event written out of order now and
            // then: the stable sort puts it in place in linear time.
            if !q.iter().is_sorted_by_key(event_time) {
                q.make_contiguous().sort_by_key(event_time);
            }
            while q.front().is_some_and(|e| event_time(e) <= mark) {
                if let Some(e) = q.pop_front() {
                    self.ready.push(e);
                }
            }
        }
        // One sorted run per CPU: merged in place.
        if !self.ready[start..].is_sorted_by_key(event_time) {
            self.ready[start..].sort_by_key(event_time);
        }
    }

    /// [`release`](Merge::release) up to `mark`, then hand `f` every
    /// released event, in time order.
    pub(crate) fn release_each(&mut self, mark: u64, mut f: impl FnMut(Event)) {
        self.release(mark);
        for ev in self.ready.drain(..) {
            f(ev)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(t: u64) -> Event {
        Event::Requeue {
            t,
            dev: 0,
            sector: t,
        }
    }

    /// The CPUs' events come out in one time order up to the mark, an
    /// event its CPU wrote late included; later ones wait.
    #[test]
    fn releases_in_time_order_up_to_the_mark() {
        let mut m = Merge::default();
        for t in [10, 30, 25, 50] {
            m.push(1, issue(t));
        }
        for t in [20, 40] {
            m.push(0, issue(t));
        }
        m.release(30);
        let times: Vec<u64> = m.ready.drain(..).map(|e| event_time(&e)).collect();
        assert_eq!(times, [10, 20, 25, 30]);
        m.push(0, issue(45));
        m.release(u64::MAX);
        let times: Vec<u64> = m.ready.drain(..).map(|e| event_time(&e)).collect();
        assert_eq!(times, [40, 45, 50]);
    }
}
