//! `stream`: O_DIRECT pattern writes over io_uring, many in flight, the
//! transfer length and queue depth tuned while running ([`crate::tune`]).
//!
//! The writes go out front to back; the journal's watermark follows the
//! oldest write not yet completed, so a crash never counts a byte that was
//! not written. A failing write is retried in place; one that keeps failing
//! is narrowed down synchronously (retry-skip) or ends the drive (abort).
//! The stream is a [`Writer`], a driver of the engine's one I/O loop: it
//! says what to write next and what a completion means; the loop owns the
//! slots, the batching and the clock.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Instant;

use drivelab_device::claim::Claim;
use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Engine, Target, Uring};
use drivelab_engine::io::{IoDesc, Op};
use drivelab_engine::ioloop::{self, After, Done, Driver, LoopConfig, Next};
use drivelab_patterns::{Generator, Pattern};

use super::{errno_str, Ctx, Flow};
use crate::outcome::Tuning;
use crate::tune::{self, Start, Tuner};
use crate::{aligned, EraseError};

/// One write in flight (or finished but not yet below the watermark).
#[derive(Clone, Copy)]
struct Chunk {
    off: u64,
    len: u64,
    done: bool,
}

/// The state of one pass's stream, as a driver of the I/O loop.
struct Writer<'w, 'c, 'g> {
    ctx: &'w mut Ctx<'c>,
    tuner: &'w mut Tuner,
    claim: &'c Claim,
    pass: u32,
    size: u64,
    lbs: u64,
    /// Round-robin: one write per turn.
    rr: bool,
    /// Every block is the same: buffers are filled once.
    periodic: bool,
    gen: &'g Generator,
    /// Writes in flight or finished above the watermark, in offset order;
    /// a write's tag is its sequence number, `front_seq` the front's.
    inflight: VecDeque<Chunk>,
    front_seq: u64,
    /// Next byte to write.
    pos: u64,
    failure: Option<EraseError>,
    scratch: Vec<u8>,
    writes: u64,
    wbytes: u64,
}

fn write_io(off: u64, len: u64) -> IoDesc {
    IoDesc {
        target: 0,
        op: Op::Write,
        offset: off,
        len: len as u32,
    }
}

impl Ctx<'_> {
    /// The tuner's start: the plan's (tune::start), or the user's fixed
    /// transfer length and depth; one write in flight under round-robin.
    fn stream_start(&self) -> (Start, bool) {
        let d = self.drive;
        let lbs = u64::from(d.lbs);
        let rr = self.shared.turn.is_some();
        let mut st = tune::start(d.dev.max_sectors_kb, self.shared.drives, d.lbs);
        let mut fixed = rr;
        if let Some(t) = self.opts.transfer {
            st.len = ((u64::from(t) / lbs).max(1) * lbs) as u32;
            fixed = true;
        }
        if let Some(q) = self.opts.queue_depth {
            st.depth = q.max(1);
            fixed = true;
        } else if self.opts.transfer.is_some() {
            // Keep a user's long transfer length within 256 MiB of buffers.
            st.depth = st
                .depth
                .min(((256u64 << 20) / u64::from(st.len)).max(1) as u32);
        }
        if rr {
            st.depth = 1;
        }
        // Under --bus-limit the bus, not the drive, sets the pace: what is
        // in flight is what the limit carries in a quarter second (a
        // user's transfer length kept, at depth 1 when it is more), and
        // the tuner does not grow it.
        if let Some(budget) = self.shared.bus_budget(lbs) {
            if self.opts.transfer.is_none() {
                st.len = u64::from(st.len).min(budget) as u32;
            }
            st.depth = st.depth.min((budget / u64::from(st.len)).max(1) as u32);
            fixed = true;
        }
        st.max_depth = if fixed {
            st.depth
        } else {
            st.max_depth.max(st.depth)
        };
        (st, fixed)
    }

    fn show_tuning(&self, tuner: &Tuner) {
        self.progress
            .transfer
            .store(u64::from(tuner.transfer_len()), Ordering::Relaxed);
        self.progress
            .depth
            .store(u64::from(tuner.depth()), Ordering::Relaxed);
    }

    /// Streamed pattern writes of pass `pass` from byte `start`.
    pub(super) fn stream(
        &mut self,
        pass: u32,
        start: u64,
        gen: &Generator,
    ) -> Result<Flow, EraseError> {
        let d = self.drive;
        let (st, fixed) = self.stream_start();
        let mut tuner = Tuner::new(st, d.lbs, fixed);
        let max_len = tuner.max_len() as usize;
        let claim = self.claim;
        let slots = st.max_depth;
        let target =
            Target::claimed(claim, true).map_err(|e| self.io("open O_DIRECT for writing", e))?;
        // Every buffer gets the pattern below before it is written.
        let mut eng = Uring::new(vec![target], slots, max_len, false, Fill::Zeroed)
            .map_err(|e| self.io("set up io_uring", e))?;
        let periodic = gen.pattern().is_periodic();
        // Every block is the same: fill each buffer once (zeroes are there
        // already: the pool is mapped zeroed).
        if periodic && *gen.pattern() != Pattern::AllZeros {
            for s in 0..slots {
                gen.fill(&mut eng.buffer(s)[..max_len], 0);
            }
        }
        self.show_tuning(&tuner);
        let t_io = Instant::now();
        let size = d.size;
        let lbs = u64::from(d.lbs);
        let rr = self.shared.turn.is_some();
        let mut w = Writer {
            ctx: self,
            tuner: &mut tuner,
            claim,
            pass,
            size,
            lbs,
            rr,
            periodic,
            gen,
            inflight: VecDeque::with_capacity(slots as usize),
            front_seq: 0,
            pos: start,
            failure: None,
            scratch: Vec::new(),
            writes: 0,
            wbytes: 0,
        };
        let looped = ioloop::run(&mut eng, &mut w, &LoopConfig::default());
        w.advance_watermark();
        let (writes, wbytes, failure, pos) = (w.writes, w.wbytes, w.failure, w.pos);
        looped.map_err(|e| self.io("io_uring submit", e))?;
        let kind = if eng.fixed_buffers() {
            "WRITE_FIXED"
        } else {
            "WRITE"
        };
        self.rec.command(
            &format!("io_uring {kind} (O_DIRECT), pattern writes"),
            writes,
            wbytes,
        );
        self.rec.io_seconds += t_io.elapsed().as_secs_f64();
        self.rec.tuning = Some(Tuning {
            transfer: u64::from(tuner.transfer_len()),
            depth: tuner.depth(),
            changes: tuner.changes(),
        });
        if let Some(e) = failure {
            return Err(e);
        }
        Ok(if pos < size {
            Flow::Stopped
        } else {
            Flow::Done
        })
    }
}

impl Driver for Writer<'_, '_, '_> {
    /// The next write, while the tuner's depth, the drive and the stop
    /// flag allow (one per turn under round-robin).
    fn next(&mut self, _now: u64, inflight: u32, buf: &mut [u8]) -> Next {
        if self.failure.is_some() || self.ctx.stopped() || self.pos >= self.size {
            return Next::Done;
        }
        if inflight >= self.tuner.depth() || (self.rr && inflight > 0) {
            return Next::Idle;
        }
        let len = u64::from(self.tuner.transfer_len()).min(self.size - self.pos);
        if !self.ctx.before_command(len) {
            self.ctx.after_command();
            return Next::Done;
        }
        if !self.periodic {
            self.gen.fill(&mut buf[..len as usize], self.pos / self.lbs);
        }
        let tag = self.front_seq + self.inflight.len() as u64;
        self.inflight.push_back(Chunk {
            off: self.pos,
            len,
            done: false,
        });
        let io = write_io(self.pos, len);
        self.pos += len;
        Next::Io { io, due: None, tag }
    }

    /// One completion: count it, or retry it, or give its range up.
    fn complete(&mut self, d: &Done, _buf: &[u8]) -> After {
        let ix = (d.tag - self.front_seq) as usize;
        let k = self.inflight[ix];
        let attempts = d.retries + 1;
        if d.is_full() {
            self.writes += 1;
            self.wbytes += k.len;
            self.ctx.rec.bytes += k.len;
            if attempts > 1 {
                self.ctx.rec.retried += 1;
            }
            self.release(ix);
            if self.tuner.observe(k.len) {
                self.ctx.show_tuning(self.tuner);
            }
            return After::Release;
        }
        let why = if d.result < 0 {
            errno_str(d.result)
        } else {
            format!("short write: {} of {} bytes", d.result, k.len)
        };
        self.ctx.rec.errors.push(format!(
            "write at LBA {} +{}: {why}",
            k.off / self.lbs,
            k.len / self.lbs
        ));
        if attempts <= self.ctx.opts.retries && self.failure.is_none() && !d.draining {
            return After::Retry;
        }
        self.release(ix);
        if self.failure.is_none() {
            self.give_up(k, attempts, why);
        }
        After::Release
    }

    /// Once per turn, after the completions: move the watermark.
    fn turn(&mut self, _now: u64) -> bool {
        self.advance_watermark();
        false
    }
}

impl Writer<'_, '_, '_> {
    /// The write in `inflight[ix]` is finished (either way).
    fn release(&mut self, ix: usize) {
        self.inflight[ix].done = true;
        if self.rr {
            self.ctx.after_command();
        }
    }

    /// A write failed its retries: narrow it down with synchronous
    /// pattern-filled O_DIRECT writes through the claim, or abort.
    fn give_up(&mut self, k: Chunk, attempts: u32, why: String) {
        let (gen, claim, lbs, scratch) = (self.gen, self.claim, self.lbs, &mut self.scratch);
        let op = |o: u64, l: u64| -> Result<(), String> {
            let buf = aligned(scratch, l as usize);
            gen.fill(buf, o / lbs);
            claim.write_at(buf, o).map_err(|e| e.to_string())
        };
        if let Err(e) = self.ctx.give_up(self.pass, k.off, k.len, attempts, why, op) {
            self.failure = Some(e);
        }
    }

    /// Move the journal's watermark over the finished front.
    fn advance_watermark(&mut self) {
        let mut moved = None;
        while self.inflight.front().is_some_and(|k| k.done) {
            if let Some(k) = self.inflight.pop_front() {
                self.front_seq += 1;
                moved = Some(k.off + k.len);
            }
        }
        if let (Some(w), None) = (moved, &self.failure) {
            if let Err(e) = self.ctx.mark(self.pass, w) {
                self.failure = Some(e);
            }
        }
    }
}
