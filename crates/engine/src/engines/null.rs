//! [`Null`]: completes every I/O at once without touching a target: the
//! pipeline's own cost.

use std::collections::VecDeque;
use std::time::Duration;

use crate::buf::{BufferPool, Fill};
use crate::engine::interface::{drain, Caps, Completion, Engine, MAX_DEPTH};
use crate::io::IoDesc;

/// Completes every I/O immediately with its full length; touches nothing.
pub struct Null {
    depth: u32,
    pool: BufferPool,
    done: VecDeque<Completion>,
}

impl Null {
    /// A null engine of `depth` slots (buffers of `max_len` bytes exist so
    /// callers that fill or check buffers behave the same).
    pub fn new(depth: u32, max_len: usize, fill: Fill) -> std::io::Result<Null> {
        let depth = depth.clamp(1, MAX_DEPTH);
        Ok(Null {
            depth,
            pool: BufferPool::new(depth as usize, max_len, fill)?,
            done: VecDeque::with_capacity(depth as usize),
        })
    }
}

impl Engine for Null {
    fn name(&self) -> &'static str {
        "null"
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

    #[inline]
    fn queue(&mut self, slot: u32, io: &IoDesc) {
        let result = if io.op.is_sync() { 0 } else { io.len as i32 };
        self.done.push_back(Completion { slot, result });
    }

    fn commit(&mut self, _wait: u32, _timeout: Option<Duration>) -> std::io::Result<()> {
        Ok(())
    }

    #[inline]
    fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize {
        drain(&mut self.done, f)
    }

    #[inline]
    fn completion_ready(&mut self) -> bool {
        !self.done.is_empty()
    }

    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slice(slot as usize)
    }
}
