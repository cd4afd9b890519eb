//! `stream`: O_DIRECT pattern writes over io_uring, many in flight, the
//! transfer length and queue depth tuned while running ([`crate::tune`]).
//!
//! The writes go out front to back; the journal's watermark follows the
//! oldest write not yet completed, so a crash never counts a byte that was
//! not written. A failing write is retried in place; one that keeps failing
//! is narrowed down synchronously (retry-skip) or ends the drive (abort).
//! The submit/reap loop is one function, [`submit_reap_loop`]; what to
//! write next and what a completion means are [`Writer`] methods.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Completion, Engine, Target, Uring};
use drivelab_engine::gen::{IoDesc, Op};
use drivelab_patterns::{Generator, Pattern};

use super::{errno_str, Ctx, Flow};
use crate::access;
use crate::outcome::Tuning;
use crate::tune::{self, Start, Tuner};
use crate::EraseError;

/// One write in flight (or finished but not yet below the watermark).
#[derive(Clone, Copy)]
struct Chunk {
    off: u64,
    len: u64,
    slot: u32,
    attempts: u32,
    done: bool,
}

/// The state of one pass's stream.
struct Writer<'g> {
    pass: u32,
    size: u64,
    lbs: u64,
    /// Round-robin: one write per turn.
    rr: bool,
    /// Every block is the same: buffers are filled once.
    periodic: bool,
    gen: &'g Generator,
    /// A second descriptor for synchronous narrowing writes.
    side: File,
    inflight: VecDeque<Chunk>,
    free: Vec<u32>,
    pending: u32,
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

/// An aligned scratch slice inside `buf` (O_DIRECT without unsafe).
fn aligned(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    buf.resize(len + 4096, 0);
    let off = (4096 - (buf.as_ptr() as usize % 4096)) % 4096;
    &mut buf[off..off + len]
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
        let file = access::open_for_direct_write(&d.dev.path)
            .map_err(|e| self.io("open O_DIRECT for writing", e))?;
        let side = file
            .try_clone()
            .map_err(|e| self.io("duplicate the descriptor", e))?;
        let slots = st.max_depth;
        let target = Target {
            file,
            is_block: true,
        };
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
        let mut w = Writer {
            pass,
            size: d.size,
            lbs: u64::from(d.lbs),
            rr: self.shared.turn.is_some(),
            periodic,
            gen,
            side,
            inflight: VecDeque::with_capacity(slots as usize),
            free: (0..slots).rev().collect(),
            pending: 0,
            pos: start,
            failure: None,
            scratch: Vec::new(),
            writes: 0,
            wbytes: 0,
        };
        let t_io = Instant::now();
        submit_reap_loop(self, &mut eng, &mut tuner, &mut w)?;
        let kind = if eng.fixed_buffers() {
            "WRITE_FIXED"
        } else {
            "WRITE"
        };
        self.rec.command(
            &format!("io_uring {kind} (O_DIRECT), pattern writes"),
            w.writes,
            w.wbytes,
        );
        self.rec.io_seconds += t_io.elapsed().as_secs_f64();
        self.rec.tuning = Some(Tuning {
            transfer: u64::from(tuner.transfer_len()),
            depth: tuner.depth(),
            changes: tuner.changes(),
        });
        if let Some(e) = w.failure {
            return Err(e);
        }
        Ok(if w.pos < w.size {
            Flow::Stopped
        } else {
            Flow::Done
        })
    }
}

/// The stream's submit/reap loop: keep the tuner's depth of writes in
/// flight, reap, handle each completion, move the watermark; until nothing
/// is in flight and nothing more may be written. Only a failing ring ends
/// it with an error; a drive's failure is left in `w.failure`.
fn submit_reap_loop(
    ctx: &mut Ctx<'_>,
    eng: &mut Uring,
    tuner: &mut Tuner,
    w: &mut Writer<'_>,
) -> Result<(), EraseError> {
    let mut comps: Vec<Completion> = Vec::with_capacity(w.free.len());
    loop {
        w.issue_more(ctx, eng, tuner);
        if w.pending == 0 {
            return Ok(());
        }
        if let Err(e) = eng.commit(1, Some(Duration::from_millis(200))) {
            // The ring itself failed: nothing more can be reaped.
            return Err(ctx.io("io_uring submit", e));
        }
        comps.clear();
        eng.reap(|c| comps.push(c));
        for c in comps.drain(..) {
            w.complete(ctx, eng, tuner, &c);
        }
        w.advance_watermark(ctx);
    }
}

impl Writer<'_> {
    /// Queue writes while the depth, the free buffers, the drive and the
    /// stop flag allow (one per turn under round-robin).
    fn issue_more(&mut self, ctx: &Ctx<'_>, eng: &mut Uring, tuner: &Tuner) {
        while self.failure.is_none()
            && !ctx.stopped()
            && self.pos < self.size
            && self.pending < tuner.depth()
            && !self.free.is_empty()
        {
            let len = u64::from(tuner.transfer_len()).min(self.size - self.pos);
            ctx.before_command(len);
            let Some(slot) = self.free.pop() else { break };
            if !self.periodic {
                self.gen
                    .fill(&mut eng.buffer(slot)[..len as usize], self.pos / self.lbs);
            }
            eng.queue(slot, &write_io(self.pos, len));
            self.inflight.push_back(Chunk {
                off: self.pos,
                len,
                slot,
                attempts: 1,
                done: false,
            });
            self.pending += 1;
            self.pos += len;
            if self.rr {
                break;
            }
        }
    }

    /// The write in `inflight[ix]` is finished (either way): free its slot.
    fn release(&mut self, ctx: &Ctx<'_>, ix: usize) {
        self.inflight[ix].done = true;
        self.free.push(self.inflight[ix].slot);
        self.pending -= 1;
        if self.rr {
            ctx.after_command();
        }
    }

    /// One completion: count it, or retry it, or give its range up.
    fn complete(&mut self, ctx: &mut Ctx<'_>, eng: &mut Uring, tuner: &mut Tuner, c: &Completion) {
        let Some(ix) = self
            .inflight
            .iter()
            .position(|k| !k.done && k.slot == c.slot)
        else {
            return;
        };
        let k = self.inflight[ix];
        if c.result >= 0 && c.result as u64 == k.len {
            self.writes += 1;
            self.wbytes += k.len;
            ctx.rec.bytes += k.len;
            if k.attempts > 1 {
                ctx.rec.retried += 1;
            }
            self.release(ctx, ix);
            if tuner.observe(k.len) {
                ctx.show_tuning(tuner);
            }
            return;
        }
        let why = if c.result < 0 {
            errno_str(c.result)
        } else {
            format!("short write: {} of {} bytes", c.result, k.len)
        };
        ctx.rec.errors.push(format!(
            "write at LBA {} +{}: {why}",
            k.off / self.lbs,
            k.len / self.lbs
        ));
        if k.attempts <= ctx.opts.retries && self.failure.is_none() {
            self.inflight[ix].attempts += 1;
            eng.queue(k.slot, &write_io(k.off, k.len));
            return;
        }
        self.release(ctx, ix);
        if self.failure.is_none() {
            self.give_up(ctx, k, why);
        }
    }

    /// A write failed its retries: narrow it down with synchronous
    /// pattern-filled O_DIRECT writes, or abort.
    fn give_up(&mut self, ctx: &mut Ctx<'_>, k: Chunk, why: String) {
        let (gen, side, lbs, scratch) = (self.gen, &self.side, self.lbs, &mut self.scratch);
        let op = |o: u64, l: u64| -> Result<(), String> {
            let buf = aligned(scratch, l as usize);
            gen.fill(buf, o / lbs);
            match side.write_at(buf, o) {
                Ok(n) if n as u64 == l => Ok(()),
                Ok(n) => Err(format!("short write: {n} of {l} bytes")),
                Err(e) => Err(e.to_string()),
            }
        };
        if let Err(e) = ctx.give_up(self.pass, k.off, k.len, k.attempts, why, op) {
            self.failure = Some(e);
        }
    }

    /// Move the journal's watermark over the finished front.
    fn advance_watermark(&mut self, ctx: &mut Ctx<'_>) {
        let mut moved = None;
        while self.inflight.front().is_some_and(|k| k.done) {
            if let Some(k) = self.inflight.pop_front() {
                moved = Some(k.off + k.len);
            }
        }
        if let (Some(w), None) = (moved, &self.failure) {
            if let Err(e) = ctx.mark(self.pass, w) {
                self.failure = Some(e);
            }
        }
    }
}
