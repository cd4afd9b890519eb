//! One I/O at a time: the engine shape that fio's synchronous engines
//! share, written once.
//!
//! The filesystem engines ([`crate::engines::fileops`]), the e4defrag engine
//! ([`crate::engines::e4defrag`]) and the net engine (in `drivelab-workload`) each
//! do one operation per I/O, synchronously, at depth 1. What differs is
//! only that operation: it is a [`RunOne`], and [`OneShot`] turns it into
//! an [`Engine`] — `queue` puts the I/O in a deque, `commit` runs each one
//! queued in order, `reap` hands their completions over. The one buffer
//! the loop fills before a write and checks after a read is the
//! adapter's, handed to the operation with each I/O.
//!
//! The psync engine has the same shape but opens and closes its targets
//! through an [`Opener`](crate::openset::Opener) and hands the kernel a
//! raw pointer; it stays as it is, measured against fio.

use std::collections::VecDeque;
use std::time::Duration;

use crate::buf::{BufferPool, Fill};
use crate::engine::interface::{drain, Caps, Completion, Engine};
use crate::io::IoDesc;

/// The one operation a synchronous engine does per I/O.
pub trait RunOne {
    /// fio's name for the engine.
    fn name(&self) -> &'static str;
    /// Do `io` with the slot's buffer (the engine's one buffer, which the
    /// loop filled for a write and checks after a read); the result as the
    /// loop takes it: bytes (≥ 0) or a negated errno.
    fn run_one(&mut self, io: &IoDesc, buf: &mut [u8]) -> i32;
}

/// A [`RunOne`] as an [`Engine`] of depth 1: synchronous, on real targets.
pub struct OneShot<W> {
    work: W,
    pool: BufferPool,
    pending: VecDeque<(u32, IoDesc)>,
    ready: VecDeque<Completion>,
}

impl<W: RunOne> OneShot<W> {
    /// `work` with one buffer of `max_len` bytes (at least 1, rounded up to
    /// a page) holding what `fill` says.
    pub fn over(work: W, max_len: usize, fill: Fill) -> std::io::Result<OneShot<W>> {
        Ok(OneShot {
            work,
            pool: BufferPool::new(1, max_len.max(1), fill)?,
            pending: VecDeque::with_capacity(1),
            ready: VecDeque::with_capacity(1),
        })
    }

    /// The operation.
    pub fn work(&self) -> &W {
        &self.work
    }

    /// The operation, to change or ask it between I/Os.
    pub fn work_mut(&mut self) -> &mut W {
        &mut self.work
    }
}

impl<W: RunOne> Engine for OneShot<W> {
    fn name(&self) -> &'static str {
        self.work.name()
    }

    fn caps(&self) -> Caps {
        Caps {
            asynchronous: false,
            real_io: true,
        }
    }

    fn depth(&self) -> u32 {
        1
    }

    fn queue(&mut self, slot: u32, io: &IoDesc) {
        self.pending.push_back((slot, *io));
    }

    fn commit(&mut self, _wait: u32, _timeout: Option<Duration>) -> std::io::Result<()> {
        while let Some((slot, io)) = self.pending.pop_front() {
            // The loop queues only slots below the depth, which all have a
            // buffer; another slot fails its I/O rather than the job.
            let result = match self.pool.get_mut(slot as usize) {
                Some(buf) => self.work.run_one(&io, buf),
                None => -libc::EINVAL,
            };
            self.ready.push_back(Completion { slot, result });
        }
        Ok(())
    }

    fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize {
        drain(&mut self.ready, f)
    }

    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slice(slot as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Op;

    /// Completes each I/O with the first byte of its buffer, and counts.
    struct Echo(u32);

    impl RunOne for Echo {
        fn name(&self) -> &'static str {
            "echo"
        }
        fn run_one(&mut self, io: &IoDesc, buf: &mut [u8]) -> i32 {
            self.0 += 1;
            assert!(buf.len() >= io.len as usize);
            i32::from(buf[0])
        }
    }

    #[test]
    fn runs_each_queued_io_in_order_at_commit() {
        let mut e = OneShot::over(Echo(0), 512, Fill::Zeroed).unwrap();
        assert_eq!((e.name(), e.depth()), ("echo", 1));
        assert!(!e.caps().asynchronous);
        let io = IoDesc {
            target: 0,
            op: Op::Write,
            offset: 0,
            len: 512,
        };
        e.buffer(0)[0] = 7;
        e.queue(0, &io);
        assert_eq!(e.reap(|_| panic!("nothing runs before commit")), 0);
        e.commit(1, None).unwrap();
        e.buffer(0)[0] = 9;
        e.queue(0, &io);
        e.commit(1, None).unwrap();
        let mut got = Vec::new();
        assert_eq!(e.reap(|c| got.push((c.slot, c.result))), 2);
        assert_eq!(got, [(0, 7), (0, 9)]);
        assert_eq!(e.work().0, 2);
        // A slot without a buffer fails its I/O, not the job.
        e.queue(3, &io);
        e.commit(1, None).unwrap();
        e.reap(|c| assert_eq!((c.slot, c.result), (3, -libc::EINVAL)));
    }
}
