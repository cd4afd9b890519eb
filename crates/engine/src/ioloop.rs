//! The one I/O loop: every subcommand that moves data (workloads, test
//! steps, erase streams and verification, trace replay) runs through
//! [`run`], and says only what the next I/O is ([`Driver::next`]) and what
//! to make of a completed one ([`Driver::complete`]).
//!
//! The loop owns what every caller used to keep a copy of:
//!
//! - **Slots.** Slot `i` owns buffer `i` of the engine's pool; a slot is
//!   free, in flight, held for a retry, prepared ahead, or waiting for its
//!   completion to be looked at. Nothing is allocated per I/O: the slot
//!   table and the lists are sized once from the engine's depth.
//! - **Batching.** Each turn reaps every ready completion, queues I/O into
//!   every free slot the driver has work for, and enters the kernel once to
//!   both submit and wait ([`Engine::commit`]). fio's batching options
//!   adjust this: [`LoopConfig::submit_batch`] enters the kernel each time
//!   that many are queued, [`LoopConfig::complete_min`] waits for that many
//!   completions, [`LoopConfig::depth_low`] lets a full queue drain to a
//!   low mark before refilling.
//! - **Priorities.** [`Driver::ioprio`] gives an I/O its own priority,
//!   queued with [`Engine::queue_prio`] (io_uring's SQE `ioprio`).
//! - **Clock reads.** One monotonic reading per turn, taken right after the
//!   kernel returns; it stamps every completion reaped and every I/O queued
//!   in the turn (they go to the kernel by the turn's single enter, right
//!   after). Latency is therefore measured from just before the submitting
//!   system call to just after the reaping one — fio's `lat` span — at one
//!   clock read per turn instead of two per I/O. Only deadline waits read
//!   the clock more often, while spinning to a deadline.
//! - **Deadlines.** A driver that has an I/O for later returns
//!   [`Next::At`]; the loop waits in the kernel for completions until a
//!   little before the deadline (so reaping is never late) and, with
//!   [`LoopConfig::spin_ns`], spins on the clock for the last stretch.
//!   With [`LoopConfig::poll_ns`] a deadline that close is awaited without
//!   a kernel timer at all: the loop polls the clock and the completion
//!   queue.
//! - **Rate limits.** With [`LoopConfig::rate_interval_ns`], I/O `n` is not
//!   issued before `t0 + n × interval` (its *intended* time, handed back in
//!   [`Done::intended`], so a device that falls behind shows it: no
//!   coordinated omission).
//! - **Stall accounting.** An I/O whose due time had passed while every
//!   slot was busy waited for a slot, not for its deadline: a stall,
//!   counted in [`LoopStats::stalls`].
//! - **Overlap of buffer work.** With [`LoopConfig::prepare_ahead`] one
//!   spare slot's buffer is filled for the next I/O while the others are in
//!   flight, and completions whose buffers the driver must inspect (reads
//!   to verify) are handed over only after the turn's new I/O has been
//!   submitted, so pattern work overlaps device work even at depth 1.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::clock::{now_ns, sleep_until};
use crate::engine::interface::{Completion, Engine};
use crate::io::IoDesc;

/// What the driver wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Issue this I/O. `due` is its deadline (monotonic ns) when it has
    /// one: an I/O queued after its due time counts toward lateness, and
    /// toward stalls when every slot was busy. `tag` comes back in
    /// [`Done::tag`].
    Io {
        /// The I/O (its buffer has been filled by [`Driver::next`]).
        io: IoDesc,
        /// Deadline, monotonic ns.
        due: Option<u64>,
        /// The driver's own word for this I/O.
        tag: u64,
    },
    /// Nothing is due before this monotonic time, ns.
    At(u64),
    /// Nothing to issue until something completes (the driver's own
    /// in-flight limit, or work that depends on a completion).
    Idle,
    /// Nothing more will be issued: drain what is in flight and return.
    Done,
}

/// What the loop should do with a completed slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// The slot is free again.
    Release,
    /// Issue the same I/O again from the same buffer (a retry).
    Retry,
}

/// One completed I/O, as handed to [`Driver::complete`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    /// The I/O as issued.
    pub io: IoDesc,
    /// The driver's tag from [`Next::Io`].
    pub tag: u64,
    /// Monotonic time it was queued (submitted by that turn's enter), ns.
    pub submitted: u64,
    /// Its intended issue time: the rate limiter's slot or its deadline,
    /// else `submitted`, ns.
    pub intended: u64,
    /// Monotonic time it was reaped, ns.
    pub now: u64,
    /// Bytes transferred (≥ 0) or a negated errno.
    pub result: i32,
    /// How many times it was retried before this completion.
    pub retries: u32,
    /// The loop is draining (stop flag or [`Driver::turn`] said stop).
    pub draining: bool,
}

impl Done {
    /// Latency from submission to completion, ns.
    #[inline]
    pub fn latency(&self) -> u64 {
        self.now.saturating_sub(self.submitted)
    }

    /// Whether it moved every byte it asked for (flushes: no error).
    #[inline]
    pub fn is_full(&self) -> bool {
        self.result >= 0 && (self.io.op.is_sync() || self.result as u64 >= u64::from(self.io.len))
    }
}

/// The part of a subcommand that decides what to issue and what a
/// completion means. The loop is generic over it, so calls cost nothing.
pub trait Driver {
    /// Whether the driver reads or writes the slot buffers it is handed
    /// (test patterns, verification). A driver that does not (a workload
    /// whose buffers were filled once, a replay) says `false`, and the loop
    /// hands it empty slices and its completions straight from the
    /// completion queue: no buffer lookups on the hot path.
    const BUFFERS: bool = true;

    /// The next I/O, given the turn's clock reading `now`, the number of
    /// I/Os `inflight`, and the free slot's buffer `buf` (at least the
    /// engine's largest transfer): fill `buf` for a write.
    fn next(&mut self, now: u64, inflight: u32, buf: &mut [u8]) -> Next;

    /// An I/O completed; `buf` holds what a read brought in.
    fn complete(&mut self, done: &Done, buf: &[u8]) -> After;

    /// Whether [`complete`](Driver::complete) needs to read this
    /// completion's buffer (a read to verify). Such completions are handed
    /// over after the turn's new I/O is submitted, so the work overlaps the
    /// device's. Default: no.
    fn inspects(&self, _io: &IoDesc, _tag: u64) -> bool {
        false
    }

    /// The I/O priority to queue this I/O with (the kernel's ioprio value,
    /// class << 13 | level; 0: the thread's own). Default: 0.
    #[inline]
    fn ioprio(&self, _io: &IoDesc, _tag: u64) -> u16 {
        0
    }

    /// Once per turn, after reaping and before issuing. Returning `true`
    /// stops issuing for good (the loop drains and returns). Default: no.
    fn turn(&mut self, _now: u64) -> bool {
        false
    }

    /// Right after [`next`](Driver::next) handed out an I/O and before it
    /// is queued: open and close the engine's files the driver's open set
    /// says (fio's `openfiles`; [`Engine::open_file`]). Default: nothing.
    #[inline]
    fn files<E: Engine>(&mut self, _engine: &mut E) {}
}

/// How the loop runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoopConfig<'a> {
    /// Set from another thread (Ctrl-C) to stop issuing and drain.
    pub stop: Option<&'a AtomicBool>,
    /// At most one I/O per this many ns (None: as fast as slots allow).
    pub rate_interval_ns: Option<u64>,
    /// Spin on the clock for this last stretch before a deadline instead
    /// of sleeping through it (0: never spin).
    pub spin_ns: u64,
    /// A deadline at most this far off is awaited by polling: the loop
    /// submits what it queued, then watches the clock and the completion
    /// queue ([`Engine::completion_ready`]) with no kernel timer and no
    /// sleep, and a completion that comes first is reaped at once. A
    /// deadline further off is a kernel wait for a completion with a
    /// timeout. For a driver whose I/O is due microseconds after a
    /// completion (a dependency replay), where a timed wait in the kernel
    /// costs more than the wait itself. 0: never poll.
    pub poll_ns: u64,
    /// Keep one slot's buffer filled ahead for the next I/O while the
    /// others are in flight: at most `depth − 1` I/Os are then in flight.
    pub prepare_ahead: bool,
    /// fio's `iodepth_batch_submit`: enter the kernel to submit each time
    /// this many I/Os have been queued in a turn (None: once per turn,
    /// everything queued in it, with the wait).
    pub submit_batch: Option<u32>,
    /// fio's `iodepth_batch_complete_min`: when waiting, wait for this many
    /// completions (at most those in flight, at least 1; None: 1).
    pub complete_min: Option<u32>,
    /// fio's `iodepth_batch_complete_max`: hand over at most this many
    /// completions per turn, leaving the rest ready for the next (None:
    /// every ready one).
    pub complete_max: Option<u32>,
    /// fio's `iodepth_low`: once every slot is busy, queue nothing new until
    /// at most this many I/Os are in flight (None: refill at once).
    pub depth_low: Option<u32>,
    /// Hand the kernel no two I/Os in one submission that it could merge
    /// into one request: an I/O that starts where one queued since the
    /// last entry into the kernel ends, or ends where it starts (same
    /// target, same operation), is submitted after that one, in an entry
    /// of its own. The block layer merges contiguous I/Os of one
    /// submission (its plug), and the device then sees one request where
    /// the driver issued two. Set where each I/O must reach the device as
    /// the one request it was counted as: a replay (its trace's
    /// requests), a job without fio's `iodepth_batch_submit` (fio then
    /// enters the kernel for each I/O), a test step's commands. A
    /// scheduler that holds requests (mq-deadline, bfq) can still merge
    /// across submissions, as it could for fio, or for the run a trace
    /// recorded.
    pub keep_apart: bool,
}

/// What the loop saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopStats {
    /// Monotonic time of the first turn, ns.
    pub started: u64,
    /// Monotonic time the loop returned, ns.
    pub ended: u64,
    /// I/Os queued (retries included).
    pub issued: u64,
    /// Completions handed to the driver.
    pub completed: u64,
    /// Retries issued.
    pub retries: u64,
    /// I/Os issued past their due time because every slot was busy.
    pub stalls: u64,
    /// Turns of the loop (kernel entries that waited).
    pub turns: u64,
    /// Waits in the kernel with a timeout (a timer armed for a deadline).
    pub timed_waits: u64,
    /// Waits for a deadline by polling ([`LoopConfig::poll_ns`]).
    pub polls: u64,
    /// Most I/Os in flight at once.
    pub max_inflight: u32,
    /// The stop flag ended it.
    pub interrupted: bool,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    io: IoDesc,
    tag: u64,
    submitted: u64,
    intended: u64,
    retries: u32,
    prio: u16,
}

const BLANK: Slot = Slot {
    io: IoDesc {
        target: 0,
        op: crate::io::Op::Read,
        offset: 0,
        len: 0,
    },
    tag: 0,
    submitted: 0,
    intended: 0,
    retries: 0,
    prio: 0,
};

/// The state of one [`run`]: the slot table and its lists, each sized
/// once from the engine's depth.
struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
    retry: Vec<u32>,
    inspect: Vec<(u32, i32)>,
    reaped: Vec<Completion>,
    prepared: Option<u32>,
    inflight: u32,
    /// Queued since the last entry into the kernel (submit batching).
    unsubmitted: u32,
    /// Their slots, for [`LoopConfig::keep_apart`].
    apart: Apart,
    /// The queue filled up and has not drained to the low mark yet.
    draining_to_low: bool,
}

impl Table {
    fn new(depth: u32, keep_apart: bool) -> Table {
        let n = depth as usize;
        Table {
            slots: vec![BLANK; n],
            free: (0..depth).rev().collect(),
            retry: Vec::with_capacity(n),
            inspect: Vec::with_capacity(n),
            reaped: Vec::with_capacity(n * 2 + 8),
            prepared: None,
            inflight: 0,
            unsubmitted: 0,
            apart: Apart::new(depth, keep_apart),
            draining_to_low: false,
        }
    }

    /// Enter the kernel ([`Engine::commit`]): everything queued is handed
    /// to it, so nothing is left unsubmitted, whatever the call returns.
    #[inline]
    fn enter<E: Engine>(
        &mut self,
        engine: &mut E,
        wait: u32,
        timeout: Option<Duration>,
    ) -> std::io::Result<()> {
        self.unsubmitted = 0;
        self.apart.clear();
        engine.commit(wait, timeout)
    }

    /// With [`LoopConfig::keep_apart`]: whether `io`, to be queued next,
    /// could merge with an I/O queued since the last entry into the
    /// kernel.
    #[inline]
    fn would_merge(&mut self, io: &IoDesc) -> bool {
        self.apart.on && self.apart.would_merge(&self.slots, io)
    }
}

/// What [`LoopConfig::keep_apart`] keeps: the slots queued since the last
/// entry into the kernel, and a table of their boundaries (the start and
/// the end of each, with its target) that answers most "could this one
/// merge?" questions without searching them.
struct Apart {
    on: bool,
    batch: Vec<u32>,
    /// One entry per hashed boundary, 32 per slot and at least 1024 (a
    /// power of two): an entry equal to `epoch` marks a boundary of an I/O
    /// in the batch. Contiguous I/Os share a boundary, so a new I/O with
    /// neither of its entries marked continues none of the batch. A full
    /// batch marks at most 1 entry in 16, so a random I/O searches the
    /// batch about one time in eight at worst.
    marks: Vec<u32>,
    /// The batch's mark; a new batch takes the next one, which unmarks
    /// every entry at once.
    epoch: u32,
    /// 64 − log2 of the number of entries: the hash's top bits index them.
    shift: u32,
    /// The entries of the I/O last asked about, marked when it is queued.
    pending: [usize; 2],
}

impl Apart {
    fn new(depth: u32, on: bool) -> Apart {
        let n = if on {
            (depth as usize * 32).next_power_of_two().max(1024)
        } else {
            1
        };
        Apart {
            on,
            batch: Vec::with_capacity(if on { depth as usize } else { 0 }),
            marks: vec![0; n],
            epoch: 1,
            shift: 64 - n.trailing_zeros(),
            pending: [0; 2],
        }
    }

    /// The entry of a boundary: `pos` on `target`. Equal boundaries always
    /// share an entry; the table only ever answers "maybe" wrongly.
    #[inline(always)]
    fn entry(&self, target: u32, pos: u64) -> usize {
        let key = (pos >> 9) ^ (u64::from(target) << 45);
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Whether `io` starts where an I/O of the batch ends or ends where
    /// one starts (same target, same operation; never a sync). Keeps its
    /// entries for [`Apart::push`], which must queue it next.
    #[inline]
    fn would_merge(&mut self, slots: &[Slot], io: &IoDesc) -> bool {
        let ends_at = |x: &IoDesc| x.offset + u64::from(x.len);
        self.pending = [
            self.entry(io.target, io.offset),
            self.entry(io.target, ends_at(io)),
        ];
        let [a, b] = self.pending;
        if io.op.is_sync() || (self.marks[a] != self.epoch && self.marks[b] != self.epoch) {
            return false;
        }
        self.batch.iter().any(|&s| {
            let q = &slots[s as usize].io;
            q.target == io.target
                && q.op == io.op
                && (ends_at(q) == io.offset || ends_at(io) == q.offset)
        })
    }

    /// Add the slot just queued: the I/O [`Apart::would_merge`] was last
    /// asked about.
    #[inline]
    fn push(&mut self, slot: u32) {
        let [a, b] = self.pending;
        self.marks[a] = self.epoch;
        self.marks[b] = self.epoch;
        self.batch.push(slot);
    }

    /// Empty the batch (the kernel has it).
    #[inline]
    fn clear(&mut self) {
        if !self.batch.is_empty() {
            self.batch.clear();
            self.epoch = self.epoch.wrapping_add(1);
            if self.epoch == 0 {
                // Once in 2^32 batches: old marks could pass for new ones.
                self.marks.fill(0);
                self.epoch = 1;
            }
        }
    }
}

/// Run `driver` on `engine` until the driver says [`Next::Done`] (or
/// [`Driver::turn`] returns `true`, or the stop flag is set) and every I/O
/// in flight has completed. Returns what the loop saw; an error only when
/// the engine's submit/wait call itself fails.
pub fn run<E: Engine, D: Driver>(
    engine: &mut E,
    driver: &mut D,
    cfg: &LoopConfig,
) -> std::io::Result<LoopStats> {
    let depth = engine.depth().max(1);
    let limit = if cfg.prepare_ahead && depth > 1 {
        depth - 1
    } else {
        depth
    };
    let mut t = Table::new(depth, cfg.keep_apart);
    let mut st = LoopStats::default();
    let mut draining = false;
    let mut exhausted = false;
    let mut next_intended: Option<u64> = None;
    // Every slot was busy when the loop last waited.
    let mut was_full = false;
    let mut now = now_ns();
    st.started = now;
    let reap_limit = cfg.complete_max.map_or(usize::MAX, |m| m.max(1) as usize);
    loop {
        // 1. Reap. Completions whose buffers the driver inspects wait in
        // `inspect` until the turn's new I/O is submitted.
        reap(engine, driver, &mut t, &mut st, reap_limit, now, draining);
        if !draining {
            let stop_flag = cfg.stop.is_some_and(|s| s.load(Ordering::Relaxed));
            if stop_flag {
                st.interrupted = true;
            }
            if stop_flag || driver.turn(now) {
                draining = true;
            }
        }
        if draining {
            t.free.append(&mut t.retry);
            if let Some(p) = t.prepared.take() {
                t.free.push(p);
            }
        }
        // 2. Issue: retries first, then the buffer prepared ahead, then new
        // I/O while the driver has any and a slot is free.
        let mut wake: Option<u64> = None;
        let mut queued = 0u32;
        if !draining {
            while let Some(slot) = t.retry.pop() {
                let io = t.slots[slot as usize].io;
                if t.would_merge(&io) {
                    t.enter(engine, 0, None)?;
                }
                let s = &mut t.slots[slot as usize];
                s.submitted = now;
                s.retries += 1;
                st.retries += 1;
                queue(engine, &mut t, &mut st, slot);
                queued += 1;
            }
            if !exhausted {
                let r = fill_slots(
                    engine,
                    driver,
                    &mut t,
                    &mut st,
                    cfg,
                    limit,
                    now,
                    was_full,
                    &mut next_intended,
                );
                queued += r.queued;
                wake = r.wake;
                exhausted = r.exhausted;
            }
        }
        // 3. Buffer work while the device works: submit first, then look at
        // completed reads and fill the spare buffer for the next I/O.
        let ahead = cfg.prepare_ahead && !draining && !exhausted && t.prepared.is_none();
        if queued > 0 && (!t.inspect.is_empty() || ahead) {
            t.enter(engine, 0, None)?;
        }
        hand_over_inspected(engine, driver, &mut t, &mut st, now, draining);
        if ahead && wake.is_none() {
            prepare(engine, driver, &mut t, now, &mut exhausted, &mut wake);
        }
        // 4. Wait for a completion or a deadline, or finish.
        was_full = t.free.is_empty() && t.prepared.is_none();
        if t.inflight == 0 && !t.retry.is_empty() {
            // A retry decided in step 3 (an inspected completion, the last
            // one in flight): nothing is left to wait for, so issue it
            // now. Waiting for a completion here would wait forever.
            continue;
        }
        if t.inflight == 0 {
            if draining || (exhausted && t.prepared.is_none()) {
                break;
            }
            match wake {
                Some(w) => {
                    t.enter(engine, 0, None)?;
                    wait_until(w, cfg.spin_ns.max(cfg.poll_ns));
                }
                // Something freed a slot (a driver Idle with nothing in
                // flight would spin: treat it as a yield).
                None if t.prepared.is_some() || !t.free.is_empty() => {
                    t.enter(engine, 0, None)?;
                }
                None => {}
            }
            now = now_ns();
            continue;
        }
        st.turns += 1;
        match wake {
            Some(w) if w > now && w - now <= cfg.poll_ns => {
                if t.unsubmitted > 0 {
                    t.enter(engine, 0, None)?;
                }
                st.polls += 1;
                now = poll_until(engine, w);
                continue;
            }
            Some(w) if w > now => {
                let left = w - now;
                if left > cfg.spin_ns {
                    st.timed_waits += 1;
                    t.enter(engine, 1, Some(Duration::from_nanos(left - cfg.spin_ns)))?;
                } else {
                    t.enter(engine, 0, None)?;
                    now = spin_until(w);
                    continue;
                }
            }
            Some(_) => t.enter(engine, 0, None)?,
            None => t.enter(engine, wait_count(cfg, t.inflight), None)?,
        }
        now = now_ns();
    }
    st.ended = now_ns();
    Ok(st)
}

/// Step 1 of a turn: reap what completed. Completions whose buffers the
/// driver inspects wait in `t.inspect` until the turn's new I/O is
/// submitted; the others are handed over at once.
#[inline(always)]
fn reap<E: Engine, D: Driver>(
    engine: &mut E,
    driver: &mut D,
    t: &mut Table,
    st: &mut LoopStats,
    reap_limit: usize,
    now: u64,
    draining: bool,
) {
    if !D::BUFFERS {
        // No buffers to look at: hand each completion over as it is
        // reaped.
        let tt = &mut *t;
        let sst = &mut *st;
        engine.reap_max(reap_limit, |c| {
            tt.inflight -= 1;
            hand_over(driver, tt, sst, c.slot, c.result, now, draining, &[]);
        });
    }
    t.reaped.clear();
    if D::BUFFERS {
        engine.reap_max(reap_limit, |c| t.reaped.push(c));
    }
    for i in 0..t.reaped.len() {
        let c = t.reaped[i];
        t.inflight -= 1;
        let s = t.slots[c.slot as usize];
        if !draining && driver.inspects(&s.io, s.tag) {
            t.inspect.push((c.slot, c.result));
        } else {
            hand_over(
                driver,
                t,
                st,
                c.slot,
                c.result,
                now,
                draining,
                engine.buffer(c.slot),
            );
        }
    }
}

/// Step 3 of a turn, once the new I/O is submitted: hand over the
/// completions whose buffers the driver inspects.
#[inline(always)]
fn hand_over_inspected<E: Engine, D: Driver>(
    engine: &mut E,
    driver: &mut D,
    t: &mut Table,
    st: &mut LoopStats,
    now: u64,
    draining: bool,
) {
    if !t.inspect.is_empty() {
        let mut list = std::mem::take(&mut t.inspect);
        for &(slot, result) in list.iter() {
            hand_over(
                driver,
                t,
                st,
                slot,
                result,
                now,
                draining,
                engine.buffer(slot),
            );
        }
        list.clear();
        t.inspect = list;
    }
}

struct Filled {
    queued: u32,
    wake: Option<u64>,
    exhausted: bool,
}

/// Queue new I/O into free slots while the driver has some, up to `limit`
/// in flight and within the rate.
#[allow(clippy::too_many_arguments)]
#[inline]
fn fill_slots<E: Engine, D: Driver>(
    engine: &mut E,
    driver: &mut D,
    t: &mut Table,
    st: &mut LoopStats,
    cfg: &LoopConfig,
    limit: u32,
    now: u64,
    was_full: bool,
    next_intended: &mut Option<u64>,
) -> Filled {
    let mut out = Filled {
        queued: 0,
        wake: None,
        exhausted: false,
    };
    if let Some(low) = cfg.depth_low {
        if t.draining_to_low {
            if t.inflight > low {
                return out;
            }
            t.draining_to_low = false;
        }
    }
    while t.inflight < limit {
        let mut intended = now;
        if cfg.rate_interval_ns.is_some() {
            let ni = *next_intended.get_or_insert(now);
            if ni > now {
                out.wake = Some(ni);
                break;
            }
            intended = ni;
        }
        // A slot whose buffer was filled ahead goes first.
        let (slot, next) = match t.prepared.take() {
            Some(p) => {
                let s = t.slots[p as usize];
                (
                    p,
                    Next::Io {
                        io: s.io,
                        due: None,
                        tag: s.tag,
                    },
                )
            }
            None => {
                let Some(slot) = t.free.pop() else { break };
                let next = if D::BUFFERS {
                    driver.next(now, t.inflight, engine.buffer(slot))
                } else {
                    driver.next(now, t.inflight, &mut [])
                };
                (slot, next)
            }
        };
        match next {
            Next::Io { io, due, tag } => {
                driver.files(engine);
                if let Some(d) = due {
                    if d < now && was_full {
                        st.stalls += 1;
                    }
                    if cfg.rate_interval_ns.is_none() {
                        intended = d.min(now);
                    }
                }
                if let Some(iv) = cfg.rate_interval_ns {
                    *next_intended = Some(intended + iv);
                }
                if t.would_merge(&io) {
                    // A failed submit shows again at the turn's wait.
                    let _ = t.enter(engine, 0, None);
                }
                t.slots[slot as usize] = Slot {
                    io,
                    tag,
                    submitted: now,
                    intended,
                    retries: 0,
                    prio: driver.ioprio(&io, tag),
                };
                queue(engine, t, st, slot);
                out.queued += 1;
                if let Some(b) = cfg.submit_batch {
                    if t.unsubmitted >= b.max(1) {
                        // A failed submit shows again at the turn's wait.
                        let _ = t.enter(engine, 0, None);
                    }
                }
            }
            other => {
                t.free.push(slot);
                match other {
                    Next::At(w) => out.wake = Some(w),
                    Next::Done => out.exhausted = true,
                    _ => {}
                }
                break;
            }
        }
    }
    if cfg.depth_low.is_some() && t.inflight >= limit {
        t.draining_to_low = true;
    }
    out
}

/// Fill the spare slot's buffer for the next I/O while others are in flight.
#[inline]
fn prepare<E: Engine, D: Driver>(
    engine: &mut E,
    driver: &mut D,
    t: &mut Table,
    now: u64,
    exhausted: &mut bool,
    wake: &mut Option<u64>,
) {
    let Some(slot) = t.free.pop() else { return };
    match driver.next(now, t.inflight, engine.buffer(slot)) {
        Next::Io { io, due, tag } => {
            driver.files(engine);
            t.slots[slot as usize] = Slot {
                io,
                tag,
                submitted: now,
                intended: due.unwrap_or(now),
                retries: 0,
                prio: driver.ioprio(&io, tag),
            };
            t.prepared = Some(slot);
        }
        other => {
            t.free.push(slot);
            match other {
                Next::At(w) => *wake = Some(w),
                Next::Done => *exhausted = true,
                _ => {}
            }
        }
    }
}

#[inline]
fn queue<E: Engine>(engine: &mut E, t: &mut Table, st: &mut LoopStats, slot: u32) {
    let s = &t.slots[slot as usize];
    if s.prio != 0 {
        engine.queue_prio(slot, &s.io, s.prio);
    } else {
        engine.queue(slot, &s.io);
    }
    t.unsubmitted += 1;
    if t.apart.on {
        t.apart.push(slot);
    }
    t.inflight += 1;
    st.issued += 1;
    st.max_inflight = st.max_inflight.max(t.inflight);
}

/// Hand one completion to the driver, with its slot's buffer (empty for a
/// driver that does not look at buffers, [`Driver::BUFFERS`] false, which
/// then gets it straight from the reap), and put the slot where it belongs.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn hand_over<D: Driver>(
    driver: &mut D,
    t: &mut Table,
    st: &mut LoopStats,
    slot: u32,
    result: i32,
    now: u64,
    draining: bool,
    buf: &[u8],
) {
    let s = &t.slots[slot as usize];
    let done = Done {
        io: s.io,
        tag: s.tag,
        submitted: s.submitted,
        intended: s.intended,
        now,
        result,
        retries: s.retries,
        draining,
    };
    st.completed += 1;
    match driver.complete(&done, buf) {
        After::Retry if !draining => t.retry.push(slot),
        _ => t.free.push(slot),
    }
}

/// How many completions a wait waits for: fio's `iodepth_batch_complete_min`,
/// at most what is in flight, at least one.
#[inline]
pub fn wait_count(cfg: &LoopConfig, inflight: u32) -> u32 {
    cfg.complete_min.map_or(1, |m| m.min(inflight).max(1))
}

/// Watch the clock and `engine`'s completion queue until monotonic time
/// `w` or a completion, whichever comes first; returns the clock then.
#[inline]
fn poll_until<E: Engine>(engine: &mut E, w: u64) -> u64 {
    loop {
        let now = now_ns();
        if now >= w || engine.completion_ready() {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// Sleep (or, for the last `spin_ns`, spin) until monotonic time `w`.
fn wait_until(w: u64, spin_ns: u64) {
    let now = now_ns();
    if w > now + spin_ns {
        sleep_until(w - spin_ns);
    }
    spin_until(w);
}

/// Spin on the clock until monotonic time `w`; returns the time read.
#[inline]
fn spin_until(w: u64) -> u64 {
    loop {
        let n = now_ns();
        if n >= w {
            return n;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::interface::Caps;
    use crate::io::Op;
    use std::collections::VecDeque;

    /// An engine that behaves as a ring does where it matters here: a
    /// queued I/O completes only at the next commit, and a commit that
    /// waits for a completion when nothing is in flight is an error (a
    /// real ring would block forever). The first I/O at offset 0 fails
    /// once with EIO (unless `failed_once` starts true). Each commit's
    /// I/Os are kept in `commits`.
    struct Ring {
        queued: Vec<(u32, IoDesc)>,
        done: VecDeque<Completion>,
        failed_once: bool,
        buf: Vec<u8>,
        depth: u32,
        commits: Vec<Vec<IoDesc>>,
    }

    impl Engine for Ring {
        fn name(&self) -> &'static str {
            "test-ring"
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
        fn queue(&mut self, slot: u32, io: &IoDesc) {
            self.queued.push((slot, *io));
        }
        fn commit(&mut self, wait: u32, _timeout: Option<Duration>) -> std::io::Result<()> {
            if !self.queued.is_empty() {
                self.commits.push(self.queued.iter().map(|q| q.1).collect());
            }
            for (slot, io) in self.queued.drain(..) {
                let result = if io.offset == 0 && !self.failed_once {
                    self.failed_once = true;
                    -libc::EIO
                } else {
                    io.len as i32
                };
                self.done.push_back(Completion { slot, result });
            }
            if wait > 0 && self.done.is_empty() {
                return Err(std::io::Error::other("waited with nothing in flight"));
            }
            Ok(())
        }
        fn reap<F: FnMut(Completion)>(&mut self, mut f: F) -> usize {
            let n = self.done.len();
            self.done.drain(..).for_each(&mut f);
            n
        }
        fn buffer(&mut self, _slot: u32) -> &mut [u8] {
            &mut self.buf
        }
    }

    /// Reads `n` blocks of 4 KiB, inspecting every completion, retrying
    /// a failed one once.
    struct Reads {
        n: u64,
        issued: u64,
        ok: u64,
        retried: u64,
    }

    impl Driver for Reads {
        fn next(&mut self, _now: u64, _inflight: u32, _buf: &mut [u8]) -> Next {
            if self.issued == self.n {
                return Next::Done;
            }
            self.issued += 1;
            Next::Io {
                io: IoDesc {
                    target: 0,
                    op: Op::Read,
                    offset: (self.issued - 1) * 4096,
                    len: 4096,
                },
                due: None,
                tag: 0,
            }
        }
        fn inspects(&self, _io: &IoDesc, _tag: u64) -> bool {
            true
        }
        fn complete(&mut self, d: &Done, _buf: &[u8]) -> After {
            if d.is_full() {
                self.ok += 1;
                After::Release
            } else if d.retries == 0 {
                self.retried += 1;
                After::Retry
            } else {
                After::Release
            }
        }
    }

    fn ring() -> Ring {
        Ring {
            queued: Vec::new(),
            done: VecDeque::new(),
            failed_once: false,
            buf: vec![0; 4096],
            depth: 4,
            commits: Vec::new(),
        }
    }

    #[test]
    fn a_retry_of_the_last_io_in_flight_is_issued_not_waited_for() {
        // One read, failing once: when its completion is inspected nothing
        // else is in flight, and the retry must still go out.
        let mut d = Reads {
            n: 1,
            issued: 0,
            ok: 0,
            retried: 0,
        };
        let st = run(&mut ring(), &mut d, &LoopConfig::default()).expect("loop");
        assert_eq!((d.ok, d.retried, st.retries), (1, 1, 1));
    }

    #[test]
    fn a_retry_among_others_completes_every_read() {
        let mut d = Reads {
            n: 9,
            issued: 0,
            ok: 0,
            retried: 0,
        };
        let st = run(&mut ring(), &mut d, &LoopConfig::default()).expect("loop");
        assert_eq!((d.ok, d.retried, st.retries), (9, 1, 1));
    }

    /// An engine that completes one I/O per waiting commit (the oldest),
    /// recording each commit's wait count and how many it submitted.
    struct Trickle {
        queued: Vec<u32>,
        inflight: VecDeque<u32>,
        done: VecDeque<Completion>,
        commits: Vec<(u32, usize)>,
        buf: Vec<u8>,
    }

    impl Engine for Trickle {
        fn name(&self) -> &'static str {
            "test-trickle"
        }
        fn caps(&self) -> Caps {
            Caps {
                asynchronous: true,
                real_io: false,
            }
        }
        fn depth(&self) -> u32 {
            4
        }
        fn queue(&mut self, slot: u32, _io: &IoDesc) {
            self.queued.push(slot);
        }
        fn commit(&mut self, wait: u32, _timeout: Option<Duration>) -> std::io::Result<()> {
            self.commits.push((wait, self.queued.len()));
            self.inflight.extend(self.queued.drain(..));
            for _ in 0..wait {
                if let Some(slot) = self.inflight.pop_front() {
                    self.done.push_back(Completion { slot, result: 4096 });
                }
            }
            Ok(())
        }
        fn reap<F: FnMut(Completion)>(&mut self, mut f: F) -> usize {
            let n = self.done.len();
            self.done.drain(..).for_each(&mut f);
            n
        }
        fn buffer(&mut self, _slot: u32) -> &mut [u8] {
            &mut self.buf
        }
    }

    /// Issues `n` reads, recording the in-flight count at each.
    struct Depths {
        n: u64,
        seen: Vec<u32>,
    }

    impl Driver for Depths {
        const BUFFERS: bool = false;
        fn next(&mut self, _now: u64, inflight: u32, _buf: &mut [u8]) -> Next {
            if self.seen.len() as u64 == self.n {
                return Next::Done;
            }
            self.seen.push(inflight);
            Next::Io {
                io: IoDesc {
                    target: 0,
                    op: Op::Read,
                    offset: 0,
                    len: 4096,
                },
                due: None,
                tag: 0,
            }
        }
        fn complete(&mut self, _d: &Done, _buf: &[u8]) -> After {
            After::Release
        }
    }

    fn trickle(cfg: &LoopConfig, n: u64) -> (Vec<u32>, Vec<(u32, usize)>) {
        let mut e = Trickle {
            queued: Vec::new(),
            inflight: VecDeque::new(),
            done: VecDeque::new(),
            commits: Vec::new(),
            buf: vec![0; 4096],
        };
        let mut d = Depths {
            n,
            seen: Vec::new(),
        };
        run(&mut e, &mut d, cfg).expect("loop");
        (d.seen, e.commits)
    }

    #[test]
    fn complete_max_hands_over_at_most_that_many_a_turn() {
        // Ring completes everything queued at each commit; a limit of 1
        // leaves the others ready, so each turn refills one slot.
        struct Capped(Ring);
        impl Engine for Capped {
            fn name(&self) -> &'static str {
                "test-capped"
            }
            fn caps(&self) -> Caps {
                self.0.caps()
            }
            fn depth(&self) -> u32 {
                4
            }
            fn queue(&mut self, slot: u32, io: &IoDesc) {
                self.0.queue(slot, io)
            }
            fn commit(&mut self, wait: u32, t: Option<Duration>) -> std::io::Result<()> {
                self.0.commit(wait, t)
            }
            fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize {
                self.0.reap(f)
            }
            fn reap_max<F: FnMut(Completion)>(&mut self, max: usize, mut f: F) -> usize {
                let n = max.min(self.0.done.len());
                self.0.done.drain(..n).for_each(&mut f);
                n
            }
            fn buffer(&mut self, slot: u32) -> &mut [u8] {
                self.0.buffer(slot)
            }
        }
        let run_with = |cfg: &LoopConfig| {
            let mut d = Depths {
                n: 8,
                seen: Vec::new(),
            };
            run(&mut Capped(ring()), &mut d, cfg).expect("loop");
            d.seen
        };
        assert_eq!(run_with(&LoopConfig::default()), [0, 1, 2, 3, 0, 1, 2, 3]);
        let cfg = LoopConfig {
            complete_max: Some(1),
            ..LoopConfig::default()
        };
        assert_eq!(run_with(&cfg), [0, 1, 2, 3, 3, 3, 3, 3]);
    }

    #[test]
    fn without_a_low_mark_a_freed_slot_is_refilled_at_once() {
        let (seen, _) = trickle(&LoopConfig::default(), 8);
        assert_eq!(seen, [0, 1, 2, 3, 3, 3, 3, 3]);
    }

    #[test]
    fn iodepth_low_lets_a_full_queue_drain_to_it_before_refilling() {
        let cfg = LoopConfig {
            depth_low: Some(1),
            ..LoopConfig::default()
        };
        let (seen, _) = trickle(&cfg, 10);
        // Full at 4, then nothing until one is left in flight.
        assert_eq!(seen, [0, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
    }

    #[test]
    fn complete_min_sets_how_many_completions_a_wait_waits_for() {
        let cfg = LoopConfig {
            complete_min: Some(3),
            ..LoopConfig::default()
        };
        let (seen, commits) = trickle(&cfg, 10);
        // Every wait with 4 in flight waits for 3, and then 3 slots are
        // filled together; at the end, at most what is in flight.
        assert!(
            commits.iter().all(|&(w, _)| (1..=3).contains(&w)),
            "{commits:?}"
        );
        assert_eq!(commits[0], (3, 4));
        assert_eq!(&seen[..7], [0, 1, 2, 3, 1, 2, 3]);
        assert_eq!(wait_count(&cfg, 2), 2);
        assert_eq!(wait_count(&cfg, 0), 1);
        let zero = LoopConfig {
            complete_min: Some(0),
            ..LoopConfig::default()
        };
        assert_eq!(wait_count(&zero, 4), 1);
    }

    #[test]
    fn submit_batch_enters_the_kernel_each_time_that_many_are_queued() {
        let cfg = LoopConfig {
            submit_batch: Some(2),
            ..LoopConfig::default()
        };
        let (_, commits) = trickle(&cfg, 4);
        // The first fill queues 4: two submissions of 2 (no wait), then
        // the waits with nothing left unsubmitted.
        assert_eq!(&commits[..2], [(0, 2), (0, 2)]);
        assert!(commits[2..].iter().all(|&(_, q)| q == 0), "{commits:?}");
        let (_, commits) = trickle(&LoopConfig::default(), 4);
        assert_eq!(commits[0], (1, 4));
    }

    /// An engine whose I/O each complete `svc_ns` after the commit that
    /// submitted it, by the clock; counts the commits that waited with a
    /// timeout.
    struct Clocked {
        svc_ns: u64,
        queued: Vec<u32>,
        inflight: Vec<(u64, u32)>,
        timed: u32,
        buf: Vec<u8>,
    }

    impl Engine for Clocked {
        fn name(&self) -> &'static str {
            "test-clocked"
        }
        fn caps(&self) -> Caps {
            Caps {
                asynchronous: true,
                real_io: false,
            }
        }
        fn depth(&self) -> u32 {
            2
        }
        fn queue(&mut self, slot: u32, _io: &IoDesc) {
            self.queued.push(slot);
        }
        fn commit(&mut self, wait: u32, timeout: Option<Duration>) -> std::io::Result<()> {
            let now = now_ns();
            for slot in self.queued.drain(..) {
                self.inflight.push((now + self.svc_ns, slot));
            }
            if wait > 0 {
                self.timed += u32::from(timeout.is_some());
                let first = self.inflight.iter().map(|x| x.0).min().unwrap_or(now);
                let until = timeout.map_or(first, |t| first.min(now + t.as_nanos() as u64));
                spin_until(until);
            }
            Ok(())
        }
        fn reap<F: FnMut(Completion)>(&mut self, mut f: F) -> usize {
            let now = now_ns();
            let before = self.inflight.len();
            self.inflight.retain(|&(at, slot)| {
                if at <= now {
                    f(Completion { slot, result: 4096 });
                }
                at > now
            });
            before - self.inflight.len()
        }
        fn completion_ready(&mut self) -> bool {
            let now = now_ns();
            self.inflight.iter().any(|x| x.0 <= now)
        }
        fn buffer(&mut self, _slot: u32) -> &mut [u8] {
            &mut self.buf
        }
    }

    /// Two chains of `n` reads each: a read is due `think_ns` after the
    /// completion of its chain's previous one; the second chain starts
    /// `offset_ns` after the first, so one read is in flight while the
    /// other chain waits. Records each read's chain, due and issue times.
    struct Chains {
        n: u64,
        think_ns: u64,
        offset_ns: u64,
        due: [Option<u64>; 2],
        started: bool,
        issued: Vec<(u64, u64, u64)>,
    }

    impl Driver for Chains {
        const BUFFERS: bool = false;
        fn next(&mut self, now: u64, _inflight: u32, _buf: &mut [u8]) -> Next {
            if self.issued.len() as u64 == 2 * self.n {
                return Next::Done;
            }
            if !self.started {
                self.started = true;
                self.due = [Some(now), Some(now + self.offset_ns)];
            }
            let ready = (0..2).filter_map(|c| self.due[c].map(|d| (d, c))).min();
            let Some((due, chain)) = ready else {
                return Next::Idle;
            };
            if due > now {
                return Next::At(due);
            }
            self.due[chain] = None;
            self.issued.push((chain as u64, due, now));
            Next::Io {
                io: IoDesc {
                    target: 0,
                    op: Op::Read,
                    offset: 0,
                    len: 4096,
                },
                due: Some(due),
                tag: chain as u64,
            }
        }
        fn complete(&mut self, d: &Done, _buf: &[u8]) -> After {
            // A chain ends after its n reads, however far the other got.
            let sent = self.issued.iter().filter(|x| x.0 == d.tag).count() as u64;
            if sent < self.n {
                self.due[d.tag as usize] = Some(d.now + self.think_ns);
            }
            After::Release
        }
    }

    #[test]
    fn a_deadline_within_the_poll_horizon_is_awaited_without_a_kernel_timer() {
        // Reads due 20 us after their chain's completion: polled with a
        // horizon of 1 ms, each a kernel wait with a timeout without one.
        // Either way every read goes out once, never before it is due.
        for (poll_ns, timers) in [(1_000_000, false), (0, true)] {
            let mut e = Clocked {
                svc_ns: 50_000,
                queued: Vec::new(),
                inflight: Vec::new(),
                timed: 0,
                buf: vec![0; 4096],
            };
            let mut d = Chains {
                n: 50,
                think_ns: 20_000,
                offset_ns: 25_000,
                due: [None, None],
                started: false,
                issued: Vec::new(),
            };
            let cfg = LoopConfig {
                poll_ns,
                ..LoopConfig::default()
            };
            let st = run(&mut e, &mut d, &cfg).expect("loop");
            assert_eq!((st.issued, st.completed), (100, 100));
            for chain in 0..2 {
                assert_eq!(d.issued.iter().filter(|x| x.0 == chain).count(), 50);
            }
            assert!(d.issued.iter().all(|&(_, due, at)| at >= due));
            if timers {
                assert!(e.timed > 0 && st.timed_waits > 0 && st.polls == 0);
            } else {
                assert_eq!((e.timed, st.timed_waits), (0, 0));
                assert!(st.polls > 0, "{st:?}");
            }
        }
    }

    /// Hands out `ios` in order, all at once.
    struct List {
        ios: Vec<IoDesc>,
        at: usize,
    }

    impl Driver for List {
        const BUFFERS: bool = false;
        fn next(&mut self, _now: u64, _inflight: u32, _buf: &mut [u8]) -> Next {
            let Some(&io) = self.ios.get(self.at) else {
                return Next::Done;
            };
            self.at += 1;
            Next::Io {
                io,
                due: None,
                tag: 0,
            }
        }
        fn complete(&mut self, _d: &Done, _buf: &[u8]) -> After {
            After::Release
        }
    }

    #[test]
    fn keep_apart_submits_no_two_mergeable_ios_together() {
        let io = |target, op, offset| IoDesc {
            target,
            op,
            offset,
            len: 4096,
        };
        // Reads at 0, 4k, 8k and 12k (each continuing the one before), a
        // read at 32k and one at 28k that ends where it starts, then a
        // write at 16k and a read of another target at 16k (neither
        // mergeable with the read at 12k): four I/Os (4k, 8k, 12k, 28k)
        // would merge with one queued before them.
        let ios = vec![
            io(0, Op::Read, 0),
            io(0, Op::Read, 4096),
            io(0, Op::Read, 8192),
            io(0, Op::Read, 12288),
            io(0, Op::Read, 32768),
            io(0, Op::Read, 28672),
            io(0, Op::Write, 16384),
            io(1, Op::Read, 16384),
        ];
        let mergeable = |a: &IoDesc, b: &IoDesc| {
            a.target == b.target
                && a.op == b.op
                && (a.offset + 4096 == b.offset || b.offset + 4096 == a.offset)
        };
        let batches = |keep_apart| {
            // Depth 8, no failure: each commit completes what it submits.
            let mut e = Ring {
                depth: 8,
                failed_once: true,
                ..ring()
            };
            let mut d = List {
                ios: ios.clone(),
                at: 0,
            };
            let cfg = LoopConfig {
                keep_apart,
                ..LoopConfig::default()
            };
            let st = run(&mut e, &mut d, &cfg).expect("loop");
            assert_eq!(st.completed, ios.len() as u64);
            let issued: Vec<IoDesc> = e.commits.iter().flatten().copied().collect();
            assert_eq!(issued, ios, "every I/O, once, in order");
            e.commits
        };
        let merges = |commits: &[Vec<IoDesc>]| {
            commits
                .iter()
                .map(|c| {
                    (0..c.len())
                        .flat_map(|i| (i + 1..c.len()).map(move |j| (i, j)))
                        .filter(|&(i, j)| mergeable(&c[i], &c[j]))
                        .count()
                })
                .sum::<usize>()
        };
        // Without it, all eight go in one submission, four pairs mergeable.
        let together = batches(false);
        assert_eq!((together.len(), merges(&together)), (1, 4), "{together:?}");
        // With it, a new submission starts at each of the four.
        let apart = batches(true);
        assert_eq!(merges(&apart), 0, "{apart:?}");
        let sizes: Vec<usize> = apart.iter().map(Vec::len).collect();
        assert_eq!(sizes, [1, 1, 1, 2, 3], "{apart:?}");
    }

    #[test]
    fn the_boundary_filter_answers_as_a_search_of_the_batch() {
        // Full batches of 32 I/Os (three targets, both operations, 4 to
        // 16 KiB at 4 KiB offsets), then probes that continue one of them,
        // precede one, or fall anywhere: the filter's answer is always the
        // search's, it sends at most a fifth of the random probes to the
        // search, and clearing the batch leaves no entry marked.
        let depth = 32usize;
        let mut slots = vec![BLANK; depth];
        let mut a = Apart::new(depth as u32, true);
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let random_io = |rnd: &mut dyn FnMut() -> u64| IoDesc {
            target: (rnd() % 3) as u32,
            op: if rnd() % 2 == 0 { Op::Read } else { Op::Write },
            offset: (rnd() % 65_536) * 4096,
            len: 4096 * (1 + (rnd() % 4) as u32),
        };
        let (mut random, mut searched) = (0u32, 0u32);
        for _ in 0..100 {
            for s in 0..depth {
                slots[s].io = random_io(&mut rnd);
                let io = slots[s].io;
                a.would_merge(&slots, &io);
                a.push(s as u32);
            }
            for _ in 0..300 {
                let q = slots[(rnd() % depth as u64) as usize].io;
                let probe = match rnd() % 3 {
                    0 => IoDesc {
                        offset: q.offset + u64::from(q.len),
                        ..q
                    },
                    1 => IoDesc {
                        offset: q.offset.saturating_sub(8192),
                        len: 8192,
                        ..q
                    },
                    _ => {
                        let p = random_io(&mut rnd);
                        random += 1;
                        let end = p.offset + u64::from(p.len);
                        let marked = |pos| a.marks[a.entry(p.target, pos)] == a.epoch;
                        searched += u32::from(marked(p.offset) || marked(end));
                        p
                    }
                };
                let ends_at = |x: &IoDesc| x.offset + u64::from(x.len);
                let search = slots.iter().any(|s| {
                    s.io.target == probe.target
                        && s.io.op == probe.op
                        && (ends_at(&s.io) == probe.offset || ends_at(&probe) == s.io.offset)
                });
                assert_eq!(a.would_merge(&slots, &probe), search, "{probe:?}");
            }
            a.clear();
            assert!(a.batch.is_empty() && a.marks.iter().all(|&m| m != a.epoch));
        }
        assert!(searched * 5 <= random, "{searched} of {random} searched");
    }
}
