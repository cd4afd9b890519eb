//! The engine interface: what every engine does with an I/O.
//!
//! An engine takes I/Os into numbered slots (`queue`), hands them to the
//! kernel in one batch (`commit`, which may also wait for completions) and
//! returns what finished (`reap`). Slot `i` always uses buffer `i` of the
//! engine's [`BufferPool`](crate::buf::BufferPool), so nothing is allocated
//! per I/O. The job loop is generic over the engine, so dispatch costs
//! nothing per I/O. The engines themselves are in [`crate::engines`].

use std::collections::VecDeque;
use std::time::Duration;

use crate::io::IoDesc;

/// What finished: the slot and the kernel's result (bytes, or −errno).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The slot the I/O was queued in.
    pub slot: u32,
    /// Bytes transferred (≥ 0) or a negated errno.
    pub result: i32,
}

/// What an engine can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Several I/Os can be in flight at once.
    pub asynchronous: bool,
    /// The engine touches real targets.
    pub real_io: bool,
}

/// The small interface every engine implements.
pub trait Engine {
    /// fio's name for the engine.
    fn name(&self) -> &'static str;
    /// Capabilities.
    fn caps(&self) -> Caps;
    /// How many slots (and buffers) the engine has.
    fn depth(&self) -> u32;
    /// Put an I/O into a free slot (the caller owns slot bookkeeping).
    fn queue(&mut self, slot: u32, io: &IoDesc);
    /// Queue an I/O with its own I/O priority (the kernel's ioprio value:
    /// class << 13 | level). An engine that cannot carry a priority per
    /// I/O queues it as [`queue`](Engine::queue) does: it then runs at the
    /// thread's priority.
    fn queue_prio(&mut self, slot: u32, io: &IoDesc, _ioprio: u16) {
        self.queue(slot, io)
    }
    /// Submit what was queued; then wait until at least `wait` completions
    /// are ready or `timeout` passes.
    fn commit(&mut self, wait: u32, timeout: Option<Duration>) -> std::io::Result<()>;
    /// Hand every ready completion to `f`; returns how many.
    fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize;
    /// Hand at most `max` ready completions to `f` (fio's
    /// `iodepth_batch_complete_max`), leaving the rest for the next call;
    /// returns how many. An engine that cannot leave completions for later
    /// hands over all, as [`reap`](Engine::reap) does.
    #[inline]
    fn reap_max<F: FnMut(Completion)>(&mut self, _max: usize, f: F) -> usize {
        self.reap(f)
    }
    /// Whether a completion is ready to reap, found without waiting: what a
    /// loop polls while the next I/O is due too soon to sleep for
    /// ([`LoopConfig::poll_ns`](crate::ioloop::LoopConfig::poll_ns)). An
    /// engine that cannot tell says `false`: the poll then runs to its
    /// deadline and reaps after.
    #[inline]
    fn completion_ready(&mut self) -> bool {
        false
    }
    /// The buffer of a slot (to fill before a write or check after a read).
    fn buffer(&mut self, slot: u32) -> &mut [u8];
    /// Open target `target` (fio's `openfiles`: an engine made over an
    /// [`Opener`](crate::openset::Opener) opens its files when told). An engine whose targets are
    /// all open from the start has nothing to do.
    fn open_file(&mut self, _target: u32) -> std::io::Result<()> {
        Ok(())
    }
    /// Close target `target`, which has no I/O in flight (an engine whose
    /// targets stay open has nothing to do).
    fn close_file(&mut self, _target: u32) -> std::io::Result<()> {
        Ok(())
    }
}

/// The most slots an engine has: io_uring rings take at most 32768
/// submission entries, and every other engine is held to the same bound so
/// that one limit (the workload option table's `iodepth` maximum) is true
/// for all of them.
pub const MAX_DEPTH: u32 = 32768;

/// Hand every completion in `q` to `f`, oldest first; returns how many.
pub(crate) fn drain<F: FnMut(Completion)>(q: &mut VecDeque<Completion>, mut f: F) -> usize {
    let n = q.len();
    while let Some(c) = q.pop_front() {
        f(c);
    }
    n
}
