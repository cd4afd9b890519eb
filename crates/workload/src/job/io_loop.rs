//! One job's loop on one thread: generate, queue, submit, reap, record.
//!
//! Timing: the loop reads the monotonic clock once per turn, right after
//! the kernel returns. That one reading stamps every completion reaped in
//! the turn and every I/O queued in it (they are submitted by the next
//! `io_uring_enter`, immediately after). So latency is measured from just
//! before the submitting system call to just after the reaping one: the
//! same span fio calls `lat`, at one clock read per turn instead of two per
//! I/O. With `rate_iops`, each I/O also has an intended issue time
//! (t0 + n / rate) and its latency from that time is recorded separately,
//! so a device that falls behind shows it (no coordinated omission).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use std::time::Instant;

use drivelab_stats::TimeSeries;

use crate::job::open_logs::OpenLogs;
use crate::job::outcome::{DirStats, IoFailure, JobError, JobOutcome, LiveCounters, MAX_ERRORS};

use crate::job::gen::{GenConfig, Generator, IoDesc, Op};
use crate::job::latency_target::{LatSearch, Step as LatStep};
use crate::job::samples::JobSamples;
use crate::job::steadystate::SteadyState;
use crate::run::fio_logs::JobLogs;
use drivelab_engine::engine::Engine;
use drivelab_engine::ioloop::{self, After, Done, Driver, LoopConfig, Next};

pub use drivelab_engine::clock::now_ns;

/// How a job runs.
#[derive(Debug, Clone)]
pub struct JobConfig {
    /// What to issue.
    pub gen: GenConfig,
    /// Stop this long after measuring starts (None: run until `io_limit`).
    pub runtime: Option<Duration>,
    /// Stop after issuing this many bytes (None: until `runtime`).
    pub io_limit: Option<u64>,
    /// Run this long before measuring.
    pub ramp: Duration,
    /// Cap in I/O per second.
    pub rate_iops: Option<u64>,
    /// The periodic syncs, (every N writes, the operation), in fio's
    /// order of precedence: when the write count is a multiple of
    /// several N, the first of them is issued.
    pub syncs: Vec<(u32, Op)>,
    /// Interval of the per-interval series.
    pub log_interval: Duration,
    /// Number of targets (for per-target byte counts).
    pub targets: usize,
    /// Per-direction caps (`rate`, `rate_iops=R,W`, `rate_process`).
    pub pace: crate::job::rate::RateConfig,
    /// An I/O waits while one it overlaps is in flight
    /// (`serialize_overlap`).
    pub serialize_overlap: bool,
    /// Per-direction minimums checked per window (`ratemin`,
    /// `rate_iops_min`, `rate_cycle`); None: none.
    pub min_rate: Option<crate::job::rate::MinRate>,
    /// Content of written blocks (`verify`); None: buffers filled once.
    pub verify: Option<crate::job::types::Content>,
    /// Check each read against `verify` (`do_verify` on a reading job).
    pub check_reads: bool,
    /// fio's log files and the window of the rate samples.
    pub logs: crate::run::fio_logs::LogSpec,
    /// The job's name and number in the run (from 1), naming its log files.
    pub log_name: (String, usize),
    /// Set when a job of the group with `exitall` has finished: this job
    /// then ends too, as finished (None: no job of the group has exitall).
    pub group_end: Option<std::sync::Arc<AtomicBool>>,
    /// Stop after issuing this many I/Os (`number_ios` times `loops`);
    /// None: no count limit.
    pub io_count_limit: Option<u64>,
    /// fio's think time: after `blocks` I/Os, wait for them to complete,
    /// then issue nothing for `ns`.
    pub think: Option<Think>,
    /// Where the job publishes its per-direction counts for a progress
    /// display (None: nobody watches).
    pub live: Option<std::sync::Arc<LiveCounters>>,
    /// Error policy, verify backlog and dumps, dedupe buffers.
    pub extras: crate::job::error_policy::LoopExtras,
    /// The job's place in its `flow` (None: no flow control).
    pub flow: Option<std::sync::Arc<crate::job::flow::Joined>>,
    /// Per-I/O priorities (`cmdprio*`; None: the thread's for every I/O).
    pub cmdprio: Option<crate::job::prio::CmdPrio>,
    /// Submission and completion batching (`iodepth_batch*`, `iodepth_low`).
    pub batch: crate::job::batch::Batching,
    /// The thread's I/O priority value (`prio`/`prioclass`; 0: none set).
    pub ioprio: u16,
    /// Where the job answers `--status-interval` snapshot requests, at a
    /// turn boundary (None: nobody asks; see [`crate::run::status`]).
    pub status: Option<std::sync::Arc<crate::run::status::StatusCell>>,
    /// fio's latency target search (off unless `latency_target` is set).
    pub lat: crate::job::latency_target::LatSpec,
    /// fio's steady-state termination (None: not watched).
    pub steady: Option<crate::job::steadystate::SteadyJob>,
    /// `zonemode=zbd`: the job's view of its target's zones.
    pub zbd: Option<crate::job::zbd::JobZones>,
    /// A path engine (filecreate and the like): latency is recorded only
    /// for the first completion per target and pass, the file operation;
    /// the bytes of one pass over all targets. None: every I/O's latency.
    pub op_per_file: Option<u64>,
    /// Set by an engine whose peer ended the stream (ioengine=net's close
    /// message, or a closed connection): the job ends as finished, and the
    /// zero-byte completion that said so is not an I/O (None: no stream).
    pub stream_end: Option<std::sync::Arc<AtomicBool>>,
    /// fio's `write_iolog`: the log's path (None: no log); the files are
    /// named by `extras.target_names`.
    pub iolog: Option<String>,
    /// fio's trims of verified writes (`trim_percentage`, `trim_backlog`;
    /// None: none).
    pub trim: Option<crate::job::trim::TrimOpts>,
    /// fio's `read_iolog`: the log's I/Os instead of the generator's
    /// (None: the generator's).
    pub replay: Option<crate::job::iolog_replay::Replay>,
    /// fio's `lockfile` (none: no locking).
    pub lockfile: crate::job::lockfile::LockMode,
    /// The engine opens and closes the job's files as its open set says
    /// (fio's `openfiles`, `create_on_open`); false: every file stays open.
    pub lazy_files: bool,
}

/// fio's `thinktime`: a pause in issuing after every `blocks` reads,
/// writes or trims, once they have completed. As fio's documentation puts
/// it, this caps the queue depth at `blocks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Think {
    /// Length of the pause, ns (`thinktime`).
    pub ns: u64,
    /// The last part of the pause spent spinning on the clock, ns
    /// (`thinktime_spin`).
    pub spin_ns: u64,
    /// I/Os between pauses (`thinktime_blocks`), at least 1.
    pub blocks: u32,
    /// `blocks` counts completed I/Os (`thinktime_blocks_type=complete`),
    /// else issued ones.
    pub on_completion: bool,
    /// Think after this long doing I/O, ns (`thinktime_iotime`); 0: not.
    pub iotime_ns: u64,
    /// Whether `blocks` brings a pause (not with `thinktime_iotime` alone).
    pub by_blocks: bool,
    /// The rate's clock runs on through a pause (`rate_ignore_thinktime`).
    pub rate_ignore: bool,
}

/// The longest the job loop waits for a deadline before looking at the
/// stop and end flags again, ns.
const WAKE_STEP_NS: u64 = 20_000_000;

/// Give each failed I/O the words its engine kept for it (the SCSI sense,
/// the NVMe status): `failures` are the engine's (I/O, words) pairs.
pub(crate) fn attach_details<'a>(
    errors: &mut [IoFailure],
    failures: impl Iterator<Item = (&'a IoDesc, &'a str)> + Clone,
) {
    for e in errors.iter_mut() {
        let same = |io: &IoDesc| {
            io.op == e.op && io.target == e.target && io.offset == e.offset && io.len == e.len
        };
        if let Some((_, words)) = failures.clone().find(|(io, _)| same(io)) {
            e.detail = Some(words.to_string());
        }
    }
}

fn thread_rusage() -> (u64, u64, u64) {
    let u = drivelab_engine::sys::thread_usage();
    (u.user_ns, u.system_ns, u.context_switches)
}

/// The job as a driver of the I/O loop: the generator says what comes
/// next, completions go into the statistics, the ramp and the runtime are
/// watched once per turn.
struct JobDriver<'a, const FILL: bool> {
    cfg: &'a JobConfig,
    pacer: Option<crate::job::rate::Pacer>,
    pending: Option<IoDesc>,
    verify_failure: Option<String>,
    /// The `min_rate` check's open window.
    min_rate: crate::job::rate::MinRateCheck,
    /// Under `serialize_overlap`: the (target, start, end) of the reads,
    /// writes and trims in flight, and an I/O held back until the one it
    /// overlaps completes (with its due time).
    in_flight: Vec<(u32, u64, u64)>,
    overlap_held: Option<(IoDesc, Option<u64>)>,
    gen: Generator,
    rated: bool,
    dirs: [DirStats; 4],
    per_target: Vec<[(u64, u64); 3]>,
    interval_ns: u64,
    series: TimeSeries,
    ramp_end: u64,
    measuring: bool,
    meas_start: u64,
    deadline: Option<u64>,
    issued_bytes: u64,
    issued_ios: u64,
    /// Reads, writes and trims issued since the last think time.
    think_issued: u32,
    /// Reads, writes and trims completed since the last think time.
    think_done: u32,
    /// The current think time: (its start, its end), monotonic ns.
    think_until: Option<(u64, u64)>,
    /// When the job last started doing I/O after thinking (or at all),
    /// monotonic ns; for `thinktime_iotime`.
    think_io_since: Option<u64>,
    /// Writes issued, and their count when the last periodic sync was.
    writes: u64,
    synced_at: u64,
    last_write_target: u32,
    /// The bytes written since the last sync, [first, end) (a range
    /// sync's offset and length, as fio's first_write/last_write).
    written_since_sync: Option<(u64, u64)>,
    errors: Vec<IoFailure>,
    short_ios: [u64; 3],
    progress: &'a AtomicU64,
    config_error: Option<String>,
    samples: JobSamples,
    logs: Option<JobLogs>,
    /// An error the policy does not pass: the job stops.
    fatal: bool,
    err_count: crate::job::types::ErrorCount,
    filler: Option<crate::job::dedupe::BufFiller>,
    backlog: Option<crate::job::verify::Backlog>,
    trimmer: Option<crate::job::trim::Trimmer>,
    replay: Option<crate::job::iolog_replay::Replay>,
    locks: Option<crate::job::lockfile::Held>,
    last_read: bool,
    failed_writes: Vec<IoDesc>,
    verify_stopped: bool,
    flow: Option<crate::job::flow::FlowMember>,
    cmdprio: Option<crate::job::prio::CmdPrio>,
    /// The latency target search, and a drain it waits for.
    lat: Option<LatSearch>,
    lat_drain: Option<LatStep>,
    lat_done: bool,
    /// The steady-state judge's state (from the measurement start).
    steady: Option<SteadyState>,
    /// `zonemode=zbd`: the zone rules, the I/O held back until a zone is
    /// free, and whether the job met fio's end of data.
    zbd: Option<crate::job::zbd::JobZones>,
    zbd_held: Option<IoDesc>,
    zbd_end: bool,
    /// Path engines: targets operated on in this pass, and its bytes so far.
    op_seen: (Vec<bool>, u64),
    /// fio's `write_iolog`, and the clock reading of the turn (its times).
    iolog: Option<crate::run::iolog::IoLog>,
    now: u64,
    /// The open set's events already in the iolog.
    logged: usize,
}

impl<const FILL: bool> JobDriver<'_, FILL> {
    /// Whether a completion's latency is recorded: always, except under a
    /// path engine, where only the file operation (the first I/O to a
    /// target in a pass) is.
    #[inline]
    fn file_op(&mut self, io: &IoDesc) -> bool {
        let Some(pass) = self.cfg.op_per_file else {
            return true;
        };
        if io.op.is_sync() {
            return false;
        }
        let (seen, bytes) = &mut self.op_seen;
        if *bytes >= pass {
            *bytes = 0;
            seen.iter_mut().for_each(|s| *s = false);
        }
        *bytes += u64::from(io.len);
        match seen.get_mut(io.target as usize) {
            Some(s) if !*s => {
                *s = true;
                true
            }
            _ => false,
        }
    }

    /// A periodic sync is due: N writes since the last, and another I/O
    /// to come (fio asks for its sync before the next I/O, so a job whose
    /// budget ends on the Nth write ends without it).
    /// fio's `lat_fatal`: "max latency exceeded", the job ends with
    /// ETIMEDOUT on this I/O.
    fn lat_fatal(&mut self, io: &IoDesc) {
        self.fatal = true;
        self.keep_failure(io, libc::ETIMEDOUT, false, None);
    }

    /// Keep a failed I/O among the first [`MAX_ERRORS`].
    fn keep_failure(&mut self, io: &IoDesc, errno: i32, passed: bool, detail: Option<&str>) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(IoFailure {
                op: io.op,
                target: io.target,
                offset: io.offset,
                len: io.len,
                errno,
                passed,
                unreadable: None,
                detail: detail.map(str::to_string),
            });
        }
    }

    /// The periodic sync due after the writes so far, if any (none
    /// after the last write of the job, as in fio).
    fn due_sync(&self) -> Option<Op> {
        if self.writes == self.synced_at || self.budget_spent() {
            return None;
        }
        let n = self.writes;
        self.cfg
            .syncs
            .iter()
            .find(|&&(every, _)| every > 0 && n % u64::from(every) == 0)
            .map(|&(_, op)| op)
    }

    fn sync_due(&self) -> bool {
        self.due_sync().is_some()
    }

    /// The next generated I/O, under zonemode=zbd moved to where the zone
    /// rules allow; Err: what the loop does instead.
    #[inline]
    fn generate(&mut self, now: u64, inflight: u32) -> Result<IoDesc, Next> {
        if let Some(r) = self.replay.as_mut() {
            return r.next(now);
        }
        let Some(z) = self.zbd.as_mut() else {
            return match self.gen.try_next_io() {
                Some(io) => Ok(io),
                // The open set waits for a closing file's I/O.
                None if inflight > 0 => Err(Next::Idle),
                None => {
                    self.config_error =
                        Some("openfiles: no file of the job could be opened or served".to_string());
                    Err(Next::Done)
                }
            };
        };
        let io = match self.zbd_held.take() {
            Some(io) => io,
            None => self.gen.next_io(),
        };
        match z.adjust(io, inflight) {
            crate::job::zbd::Adjust::Issue(a) => {
                self.gen.follow(&a);
                Ok(a)
            }
            crate::job::zbd::Adjust::Wait => {
                self.zbd_held = Some(io);
                Err(if inflight > 0 {
                    Next::Idle
                } else {
                    Next::At(now + 50_000)
                })
            }
            crate::job::zbd::Adjust::Eof => {
                self.zbd_end = true;
                Err(Next::Done)
            }
            crate::job::zbd::Adjust::Failed(e) => {
                self.config_error = Some(e);
                self.zbd_end = true;
                Err(Next::Done)
            }
        }
    }

    fn budget_spent(&self) -> bool {
        self.zbd_end
            || self.cfg.io_limit.is_some_and(|l| self.issued_bytes >= l)
            || self
                .cfg
                .io_count_limit
                .is_some_and(|n| self.issued_ios >= n)
    }

    /// Under `thinktime`: `Some(next)` while the job thinks (waiting for
    /// its in-flight I/Os, then for the end of the pause), None to issue.
    #[inline]
    fn thinking(&mut self, now: u64, inflight: u32) -> Option<Next> {
        let t = self.cfg.think?;
        if let Some((start, end)) = self.think_until {
            if now < end {
                return Some(Next::At(end));
            }
            self.think_until = None;
            self.think_io_since = Some(now);
            // rate_ignore_thinktime: the rate's schedule moves on by the
            // pause, so nothing held back is issued at once after it.
            if t.rate_ignore {
                if let Some(p) = self.pacer.as_mut() {
                    p.shift(end - start);
                }
            }
            return None;
        }
        let since = *self.think_io_since.get_or_insert(now);
        let counted = if t.on_completion {
            self.think_done
        } else {
            self.think_issued
        };
        let by_time = t.iotime_ns > 0 && now.saturating_sub(since) >= t.iotime_ns;
        let by_blocks = t.by_blocks && counted >= t.blocks;
        if !(by_time || by_blocks) {
            return None;
        }
        if inflight > 0 {
            // fio quiesces first: the pause starts when the queue is empty.
            return Some(Next::Idle);
        }
        self.think_issued = 0;
        self.think_done = 0;
        // Never past the job's runtime (fio cuts the pause at its end too).
        let end = (now + t.ns).min(self.deadline.unwrap_or(u64::MAX));
        self.think_until = Some((now, end));
        Some(Next::At(end))
    }

    /// Under `latency_target`: `Some(Idle)` while the search's depth is
    /// reached or a drain it asked for is under way (fio's quiesce), None
    /// to issue.
    #[inline]
    fn lat_gate(&mut self, now: u64, inflight: u32) -> Option<Next> {
        if let Some(step) = self.lat_drain {
            if inflight > 0 {
                return Some(Next::Idle);
            }
            self.lat_drain = None;
            if step == LatStep::FinalRun {
                // Only the depth found is reported: start measuring over.
                if let Err(e) = self.restart_measuring(now) {
                    self.config_error = Some(e);
                    return Some(Next::Done);
                }
            }
            if let Some(ls) = self.lat.as_mut() {
                ls.new_cycle(now);
            }
        }
        let qd = self.lat.as_ref().map_or(u32::MAX, |l| l.qd);
        (inflight >= qd).then_some(Next::Idle)
    }

    /// Reads, writes and trims completed and their bytes, since measuring
    /// started.
    fn own_counts(&self) -> (u64, u64) {
        self.dirs[..3]
            .iter()
            .fold((0, 0), |(i, b), d| (i + d.ios, b + d.bytes))
    }

    /// Measuring starts (the end of `ramp_time`) or starts over (the
    /// latency target's final window): counts, statistics and the runtime
    /// start from `now`.
    fn restart_measuring(&mut self, now: u64) -> Result<(), String> {
        self.measuring = true;
        self.meas_start = now;
        self.deadline = self.cfg.runtime.map(|r| now + r.as_nanos() as u64);
        // fio counts number_ios from the end of the ramp.
        self.issued_ios = 0;
        for d in self.dirs.iter_mut() {
            *d = DirStats::new(self.rated);
        }
        for pt in self.per_target.iter_mut() {
            *pt = [(0, 0); 3];
        }
        self.samples = JobSamples::new(self.samples.rates.window_ms());
        self.series =
            TimeSeries::new(self.interval_ns, Instant::now()).map_err(|e| e.to_string())?;
        if let Some(ls) = self.lat.as_mut() {
            ls.restart(now);
        }
        if let Some(sj) = self.cfg.steady.as_ref().filter(|s| s.judge) {
            let mut st = SteadyState::new(sj.clone(), now, (0, 0));
            let counts = st.member_counts().unwrap_or((0, 0));
            st.restart(now, counts);
            self.steady = Some(st);
        }
        Ok(())
    }

    /// Once per turn: the latency target's window and the steady-state
    /// check; true when either ends the job.
    #[inline]
    fn searches_done(&mut self, now: u64) -> bool {
        if self.measuring && self.lat_drain.is_none() {
            if let Some(ls) = self.lat.as_mut() {
                match ls.check(now) {
                    LatStep::Go | LatStep::Fatal => {}
                    LatStep::Done => self.lat_done = true,
                    s => self.lat_drain = Some(s),
                }
            }
        }
        if let Some(sj) = &self.cfg.steady {
            if SteadyState::group_ended(sj) {
                return true;
            }
        }
        if self.steady.as_ref().is_some_and(|st| st.due(now)) {
            let own = self.own_counts();
            if let Some(st) = self.steady.as_mut() {
                let counts = st.member_counts().unwrap_or(own);
                if st.check(now, counts) {
                    return true;
                }
            }
        }
        self.lat_done
    }
}

impl<const FILL: bool> JobDriver<'_, FILL> {
    /// A copy of what the job has done up to `now` (a turn boundary), for a
    /// `--status-interval` snapshot; CPU time and faults are the cell's.
    #[cold]
    fn so_far(&self, now: u64) -> JobOutcome {
        let runtime_ns = if self.measuring {
            now.saturating_sub(self.meas_start)
        } else {
            0
        };
        let mut samples = self.samples.clone();
        let t0 = self
            .ramp_end
            .saturating_sub(self.cfg.ramp.as_nanos() as u64);
        samples.elapsed_ns = now.saturating_sub(t0);
        JobOutcome {
            dirs: self.dirs.clone(),
            runtime_ns,
            per_target: self.per_target.clone(),
            series: self.series.clone().finish(runtime_ns),
            errors: self.errors.clone(),
            short_ios: self.short_ios,
            drop_ios: [0; 3],
            interrupted: false,
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            ctx_switches: 0,
            verify_failure: self.verify_failure.clone(),
            samples,
            latency_depth: self.lat.as_ref().map(|l| l.qd),
            steady: self.steady.as_ref().map(SteadyState::outcome),
            zone_resets: self.zbd.as_ref().map(|z| z.resets),
            program: None,
            err_count: self.err_count,
            verify_left: None,
            trimmed: None,
            failed_writes: Vec::new(),
            verify_stopped: self.verify_stopped,
        }
    }

    /// What to issue next (see [`Driver::next`]).
    #[inline]
    fn next_io(&mut self, now: u64, inflight: u32, buf: &mut [u8]) -> Next {
        if self.fatal || self.verify_failure.is_some() {
            return Next::Done;
        }
        if let Some((io, due)) = self.overlap_held.take() {
            return self.issue(io, due, buf);
        }
        if self.lat.is_some() {
            if let Some(n) = self.lat_gate(now, inflight) {
                return n;
            }
        }
        if self.cfg.think.is_some() {
            if let Some(n) = self.thinking(now, inflight) {
                return n;
            }
        }
        // Asked once per new I/O (not again for one held by the pacer).
        if self.flow.is_some() && self.pending.is_none() && !self.sync_due() && !self.budget_spent()
        {
            if let Some(n) = self.flow.as_mut().and_then(|f| f.hold(now, inflight)) {
                return n;
            }
        }
        if let Some(b) = self.backlog.as_mut() {
            if let Some(io) = b.next(self.last_read) {
                if let Some(l) = self.iolog.as_mut() {
                    l.io(self.now, &io);
                }
                return Next::Io {
                    io,
                    due: None,
                    tag: crate::job::verify::VERIFY_TAG,
                };
            }
        }
        if let Some(io) = self.trimmer.as_mut().and_then(|t| t.next(self.last_read)) {
            // Outside the job's budget, as fio counts a writing job's
            // bytes by its writes.
            if let Some(l) = self.iolog.as_mut() {
                l.io(self.now, &io);
            }
            return Next::Io {
                io,
                due: None,
                tag: 0,
            };
        }
        let Some(mut p) = self.pacer.take() else {
            return self.unpaced(now, inflight, buf);
        };
        let io = match self.pending.take() {
            Some(io) => Some(io),
            None if self.sync_due() || self.budget_spent() => None,
            None => match self.generate(now, inflight) {
                Ok(io) => Some(io),
                Err(n) => {
                    self.pacer = Some(p);
                    return n;
                }
            },
        };
        let next = match io {
            None => self.unpaced(now, inflight, buf),
            Some(io) => {
                let due = p.slot(io.op, now);
                match due.filter(|&at| at > now) {
                    Some(at) => {
                        self.pending = Some(io);
                        Next::At(at)
                    }
                    None => {
                        p.advance(io.op, io.len);
                        self.issue(io, due, buf)
                    }
                }
            }
        };
        self.pacer = Some(p);
        next
    }

    /// The next I/O when nothing is paced (or a sync, or the end).
    #[inline]
    fn unpaced(&mut self, now: u64, inflight: u32, buf: &mut [u8]) -> Next {
        if let Some(op) = self.due_sync() {
            self.synced_at = self.writes;
            let t = self.last_write_target as usize;
            let closed = self.cfg.lazy_files && self.gen.open_set().is_some_and(|o| !o.is_open(t));
            if closed {
                // Its file was closed (openfiles): nothing to flush there.
                return self.unpaced(now, inflight, buf);
            }
            let (start, end) = self.written_since_sync.take().unwrap_or_default();
            let (offset, len) = match op {
                Op::SyncRange(_) => (start, u32::try_from(end - start).unwrap_or(u32::MAX)),
                _ => (0, 0),
            };
            let io = IoDesc {
                target: self.last_write_target,
                op,
                offset,
                len,
            };
            return Next::Io {
                io,
                due: None,
                tag: 0,
            };
        }
        if self.budget_spent() {
            return Next::Done;
        }
        match self.generate(now, inflight) {
            Ok(io) => self.issue(io, None, buf),
            Err(n) => n,
        }
    }

    /// Account a generated I/O as issued (and fill its buffer under verify).
    #[inline]
    fn issue(&mut self, io: IoDesc, due: Option<u64>, buf: &mut [u8]) -> Next {
        if self.cfg.serialize_overlap && !io.op.is_sync() {
            let (start, end) = (io.offset, io.offset + u64::from(io.len));
            let overlaps = self
                .in_flight
                .iter()
                .any(|&(t, s, e)| t == io.target && s < end && start < e);
            if overlaps {
                // fio's serialize_overlap: wait for completions, then again.
                self.overlap_held = Some((io, due));
                return Next::Idle;
            }
            self.in_flight.push((io.target, start, end));
        }
        if let Some(l) = self.locks.as_mut() {
            if !l.take(io.target, io.op) {
                // lockfile: another job has it; after this turn's commit.
                self.overlap_held = Some((io, due));
                return Next::Idle;
            }
        }
        if io.op == Op::Write {
            self.writes += 1;
            self.last_write_target = io.target;
            let end = io.offset + u64::from(io.len);
            self.written_since_sync = Some(match self.written_since_sync {
                Some((s, e)) => (s.min(io.offset), e.max(end)),
                None => (io.offset, end),
            });
            if FILL {
                if let Some(c) = &self.cfg.verify {
                    c.fill(&mut buf[..io.len as usize], io.offset);
                } else if let Some(f) = self.filler.as_mut() {
                    f.fill(&mut buf[..io.len as usize]);
                }
            }
        }
        let backlog = match self.backlog.as_mut() {
            Some(b) if io.op == Op::Write => b.written(io),
            _ => 0,
        };
        if let Some(t) = self.trimmer.as_mut().filter(|_| io.op == Op::Write) {
            t.written(io);
        }
        if self.iolog.is_some() {
            self.log_file_events();
            if let Some(l) = self.iolog.as_mut() {
                l.io(self.now, &io);
            }
        }
        // Under trimwrite only the writes count toward the size (fio's
        // io_bytes_exceeded counts a writing job's writes).
        if !(io.op == Op::Trim && self.cfg.gen.write_kind == crate::WriteKind::TrimWrite) {
            self.issued_bytes += u64::from(io.len);
        }
        self.issued_ios += 1;
        self.think_issued = self.think_issued.saturating_add(1);
        // The tag carries the I/O's priority in its low 16 bits (0: the
        // thread's) and, under verify_backlog, the write's backlog number
        // above them (see `tag_prio`, `tag_backlog`).
        let prio = match self.cmdprio.as_mut() {
            Some(c) => u64::from(c.pick(io.op.index(), io.len)),
            None => 0,
        };
        let tag = (backlog << 16) | prio;
        Next::Io { io, due, tag }
    }
}

impl<const FILL: bool> JobDriver<'_, FILL> {
    /// Carry out what the open set did (fio's `openfiles`): open and close
    /// the engine's files, and log each open and close (`write_iolog`).
    #[inline]
    fn apply_files<E: Engine>(&mut self, engine: &mut E) {
        self.log_file_events();
        let Some(o) = self.gen.open_set() else {
            return;
        };
        if o.events().is_empty() {
            return;
        }
        let events = o.events();
        for e in events.iter() {
            use crate::job::openfiles::FileEvent;
            let r = match *e {
                FileEvent::Open(f) => engine.open_file(f),
                FileEvent::Close(_) => Ok(()),
                FileEvent::Release(f) => engine.close_file(f),
            };
            if let Err(err) = r {
                if self.config_error.is_none() {
                    let f = match *e {
                        FileEvent::Open(f) | FileEvent::Close(f) | FileEvent::Release(f) => f,
                    };
                    let name = self.cfg.extras.target_name(f);
                    self.config_error = Some(format!("cannot open or close {name}: {err}"));
                    self.fatal = true;
                }
            }
        }
        events.clear();
        self.logged = 0;
    }

    /// Log the open set's opens and closes not logged yet (before the I/O
    /// that follows them, as fio's iolog has them).
    #[inline]
    fn log_file_events(&mut self) {
        let (Some(l), Some(o)) = (self.iolog.as_mut(), self.gen.open_set()) else {
            return;
        };
        use crate::job::openfiles::FileEvent;
        use crate::run::iolog::Action;
        let events = o.events();
        for e in &events[self.logged.min(events.len())..] {
            match *e {
                FileEvent::Open(f) => l.file(self.now, f, Action::Open),
                FileEvent::Close(f) => l.file(self.now, f, Action::Close),
                FileEvent::Release(_) => {}
            }
        }
        self.logged = events.len();
    }
}

/// The I/O priority a job's tag carries (its low 16 bits; 0: the thread's).
/// A verify read (`VERIFY_TAG`) goes with the thread's.
#[inline]
fn tag_prio(tag: u64) -> u16 {
    if tag == crate::job::verify::VERIFY_TAG {
        0
    } else {
        tag as u16
    }
}

/// The `verify_backlog` number a write's tag carries (above the priority).
#[inline]
fn tag_backlog(tag: u64) -> u64 {
    tag >> 16
}

impl<const FILL: bool> JobDriver<'_, FILL> {
    /// The engine's peer ended the stream ([`JobConfig::stream_end`]).
    #[inline]
    fn stream_ended(&self) -> bool {
        self.cfg
            .stream_end
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

impl<const FILL: bool> Driver for JobDriver<'_, FILL> {
    // Without verify, buffers were filled once (random data, as fio's) and
    // are never looked at; with it, each write is filled by its offset.
    const BUFFERS: bool = FILL;

    #[inline]
    fn next(&mut self, now: u64, inflight: u32, buf: &mut [u8]) -> Next {
        self.now = now;
        let next = self.next_io(now, inflight, buf);
        if self.measuring && matches!(next, Next::Io { .. }) {
            self.samples.depth.queued(inflight + 1);
        }
        // A far deadline (a slow rate, a long think time) is waited for in
        // steps, so that the end of the group (exitall) or of the run is
        // seen within one step rather than at the deadline.
        if let Next::At(w) = next {
            if w > now + WAKE_STEP_NS {
                return Next::At(now + WAKE_STEP_NS);
            }
        }
        next
    }

    #[inline]
    fn ioprio(&self, _io: &IoDesc, tag: u64) -> u16 {
        tag_prio(tag)
    }

    #[inline]
    fn files<E: Engine>(&mut self, engine: &mut E) {
        self.apply_files(engine);
    }

    fn inspects(&self, io: &IoDesc, tag: u64) -> bool {
        FILL && io.op == Op::Read && (self.cfg.check_reads || tag == crate::job::verify::VERIFY_TAG)
    }

    #[inline]
    fn complete(&mut self, d: &Done, buf: &[u8]) -> After {
        let io = d.io;
        if !io.op.is_sync() {
            if let Some(o) = self.gen.open_set() {
                o.completed(io.target as usize);
            }
            self.think_done = self.think_done.saturating_add(1);
            if self.cfg.serialize_overlap {
                let r = (io.target, io.offset, io.offset + u64::from(io.len));
                if let Some(i) = self.in_flight.iter().position(|&x| x == r) {
                    self.in_flight.swap_remove(i);
                }
            }
        }
        if d.result == 0 && !io.op.is_sync() && self.stream_ended() {
            return After::Release;
        }
        if io.op == Op::Write && d.tag != crate::job::verify::VERIFY_TAG {
            if let Some(b) = self.backlog.as_mut() {
                b.completed(tag_backlog(d.tag), d.result >= 0);
            }
        }
        self.last_read = io.op == Op::Read;
        if let Some(z) = self.zbd.as_mut() {
            if !io.op.is_sync() {
                z.completed(&io);
            }
        }
        if d.result <= 0 {
            if let Some(after) = self.nothing_moved(io, d.result) {
                return after;
            }
        }
        let bytes = d.result as u64;
        if !io.op.is_sync() && bytes < u64::from(io.len) {
            self.short_ios[io.op.index()] += 1;
        }
        if FILL
            && io.op == Op::Read
            && (self.cfg.check_reads || d.tag == crate::job::verify::VERIFY_TAG)
            && self.verify_failure.is_none()
        {
            if let Some(c) = &self.cfg.verify {
                let got = &buf[..(bytes as usize).min(buf.len())];
                if let Err(m) = c.check(got, io.offset) {
                    let name = self.cfg.extras.target_name(io.target);
                    match crate::job::verify::verify_failed(
                        &self.cfg.extras,
                        &mut self.err_count,
                        c,
                        got,
                        io.offset,
                        &name,
                        &m,
                    ) {
                        crate::job::verify::Verdict::Pass => {}
                        // Ends the job, not as a failure.
                        crate::job::verify::Verdict::Stop => {
                            self.fatal = true;
                            self.verify_stopped = true;
                        }
                        crate::job::verify::Verdict::Fail => self.verify_failure = Some(m),
                    }
                }
            }
        }
        if self.measuring && !io.op.is_sync() {
            // fio's max_latency: the job ends with ETIMEDOUT.
            let max = self.cfg.lat.max_ns[io.op.index().min(2)];
            if max > 0 && d.latency() > max {
                self.lat_fatal(&io);
            }
        }
        if self.measuring && !io.op.is_sync() && self.lat_drain.is_none() {
            if let Some(ls) = self.lat.as_mut() {
                match ls.completed(d.latency()) {
                    LatStep::Go => {}
                    LatStep::Fatal => self.lat_fatal(&io),
                    s => self.lat_drain = Some(s),
                }
            }
        }
        let timed = self.file_op(&io);
        if self.measuring {
            let lat = d.latency();
            let dir = &mut self.dirs[io.op.index()];
            dir.ios += 1;
            dir.bytes += bytes;
            if timed {
                dir.lat.record(lat);
                dir.moments.record(lat as f64);
                if let Some(c) = &self.cmdprio {
                    // Unpicked I/Os went with the thread's priority.
                    let p = match tag_prio(d.tag) {
                        0 => c.default_prio(),
                        p => p,
                    };
                    crate::job::prio::record(&mut dir.prios, p, lat);
                }
            }
            if let Some(h) = dir.lat_intended.as_mut() {
                let v = d.now.saturating_sub(d.intended);
                h.record(v);
                dir.intended_moments.record(v as f64);
            }
            self.samples.depth.reaped();
            if !io.op.is_sync() {
                let pt = &mut self.per_target[io.target as usize][io.op.index()];
                pt.0 += 1;
                pt.1 += bytes;
                let t = d.now.saturating_sub(self.meas_start);
                self.series.record(t, lat, bytes);
                let s = &mut self.samples;
                while s.rates.due(t) {
                    s.rates.close();
                }
                s.rates.add(io.op.index(), bytes);
                s.lat.record(lat);
                if let Some(l) = self.logs.as_mut() {
                    l.set_ioprio(match tag_prio(d.tag) {
                        0 => self.cfg.ioprio,
                        p => p,
                    });
                    l.io(t, io.op.index(), bytes, lat, io.offset);
                }
            }
        }
        After::Release
    }

    fn turn(&mut self, now: u64) -> bool {
        // lockfile: this turn's I/O went to the engine at its commit.
        if let Some(l) = self.locks.as_mut() {
            l.release();
        }
        if self.measuring {
            self.samples.depth.turn();
        }
        if let Some(l) = self.logs.as_mut() {
            l.between_turns();
        }
        let d = &self.dirs;
        self.progress
            .store(d[0].ios + d[1].ios + d[2].ios, Ordering::Relaxed);
        if let Some(l) = &self.cfg.live {
            for (k, d) in d.iter().enumerate().take(3) {
                l.ios[k].store(d.ios, Ordering::Relaxed);
                l.bytes[k].store(d.bytes, Ordering::Relaxed);
            }
        }
        if let Some(c) = &self.cfg.status {
            if c.due() {
                c.answer(self.so_far(now));
            }
        }
        if !self.measuring && now >= self.ramp_end {
            if let Err(e) = self.restart_measuring(now) {
                self.config_error = Some(e);
                return true;
            }
        }
        if let (Some(m), true) = (self.cfg.min_rate, self.measuring) {
            let d = &self.dirs;
            let bytes = [d[0].bytes, d[1].bytes + d[2].bytes];
            let ios = [d[0].ios, d[1].ios + d[2].ios];
            let since = now.saturating_sub(self.meas_start);
            if let Some(e) = self.min_rate.check(&m, since, bytes, ios) {
                self.verify_failure = Some(e);
            }
        }
        let searched = (self.lat.is_some() || self.cfg.steady.is_some()) && self.searches_done(now);
        let time_up = self.deadline.is_some_and(|d| now >= d);
        let budget_done = self.budget_spent() && self.pending.is_none();
        let group_ended = self
            .cfg
            .group_end
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
            || self.stream_ended();
        time_up
            || budget_done
            || searched
            || group_ended
            || self.fatal
            || self.verify_failure.is_some()
    }
}

/// Run one job to completion on the current thread. `t0` is the common
/// start time of all jobs (from [`now_ns`]); `stop` ends the job early.
/// The job's logs come back open, for its read-back pass to log its reads
/// in; [`OpenLogs::finish`] ends them.
pub fn run_job<E: Engine>(
    engine: &mut E,
    cfg: &JobConfig,
    t0: u64,
    stop: &AtomicBool,
    progress: &AtomicU64,
) -> Result<(JobOutcome, OpenLogs), JobError> {
    if cfg.verify.is_some() || cfg.extras.dedupe.is_some() {
        run_with::<E, true>(engine, cfg, t0, stop, progress)
    } else {
        run_with::<E, false>(engine, cfg, t0, stop, progress)
    }
}

impl<'a, const FILL: bool> JobDriver<'a, FILL> {
    /// A completion that moved no byte (`result` ≤ 0): a failed I/O, or a
    /// read or write that found the target ending before its range (a
    /// disk deleted mid-run reads as empty). fio fails the latter with EIO
    /// ("full resid"); counted as a success it would add an I/O per loop
    /// turn and no byte. None for a flush, and for a stream its peer ended.
    #[cold]
    fn nothing_moved(&mut self, io: IoDesc, result: i32) -> Option<After> {
        if result < 0 {
            return Some(self.failed(io, -result, None));
        }
        let empty = matches!(io.op, Op::Read | Op::Write) && io.len > 0;
        (empty && self.cfg.stream_end.is_none()).then(|| {
            self.failed(
                io,
                libc::EIO,
                Some(
                    "no byte moved: the target now ends before this range (it shrank or vanished)",
                ),
            )
        })
    }

    /// A failed I/O (`errno`): counted as fio counts it, kept for the
    /// report, and whether the job goes on is the error policy's.
    #[cold]
    fn failed(&mut self, io: IoDesc, errno: i32, detail: Option<&str>) -> After {
        let policy = &self.cfg.extras.policy;
        let passed = policy.passes(io.op, errno);
        // As fio counts: every error passed, and the one that ends the
        // job when its kind may be continued past at all (the I/Os
        // still in flight then fail uncounted).
        if passed || (!self.fatal && policy.continues_kind(io.op, errno)) {
            self.err_count.add(errno);
        }
        self.fatal |= !passed;
        if !io.op.is_sync() {
            self.err_count.failed_ios[io.op.index()] += 1;
        }
        if passed && io.op == Op::Write && FILL && self.cfg.verify.is_some() {
            // Never checked afterwards: fio drops a failed write from
            // what it verifies.
            self.failed_writes.push(io);
        }
        self.cfg.extras.report_io_error(&io, errno, passed);
        self.keep_failure(&io, errno, passed, detail);
        // fio counts a failed I/O in total_ios (and its IOPS), not in
        // the bytes moved or the latencies.
        if self.measuring {
            self.dirs[io.op.index()].ios += 1;
        }
        After::Release
    }

    /// A job's driver before its first I/O: the generator and pacer made,
    /// the job's logs and iolog created, counting from `t0`; `depth` is the
    /// engine's (the latency target's search starts there).
    fn new(
        cfg: &'a JobConfig,
        t0: u64,
        depth: u32,
        progress: &'a AtomicU64,
    ) -> Result<JobDriver<'a, FILL>, JobError> {
        let gen = Generator::new(&cfg.gen)?;
        let pacer = crate::job::rate::Pacer::new(cfg.pace, cfg.gen.seed);
        let rated = cfg.rate_iops.is_some() || pacer.is_some();
        let interval_ns = cfg.log_interval.as_nanos().max(1) as u64;
        let series = TimeSeries::new(interval_ns, Instant::now())
            .map_err(|e| JobError::Config(e.to_string()))?;
        let ramp_end = t0 + cfg.ramp.as_nanos() as u64;
        Ok(JobDriver::<FILL> {
            cfg,
            pacer,
            pending: None,
            verify_failure: None,
            min_rate: Default::default(),
            in_flight: Vec::new(),
            overlap_held: None,
            gen,
            rated,
            dirs: std::array::from_fn(|_| DirStats::new(rated)),
            per_target: vec![[(0u64, 0u64); 3]; cfg.targets.max(1)],
            interval_ns,
            series,
            ramp_end,
            measuring: cfg.ramp.is_zero(),
            meas_start: t0,
            deadline: cfg.runtime.map(|r| ramp_end + r.as_nanos() as u64),
            issued_bytes: 0,
            issued_ios: 0,
            think_issued: 0,
            think_done: 0,
            think_until: None,
            think_io_since: None,
            writes: 0,
            synced_at: 0,
            last_write_target: 0,
            written_since_sync: None,
            errors: Vec::new(),
            short_ios: [0; 3],
            progress,
            config_error: None,
            samples: JobSamples::new(cfg.logs.sample_window_ms()),
            logs: JobLogs::create(&cfg.logs, &cfg.log_name.0, cfg.log_name.1)
                .map_err(JobError::Config)?,
            fatal: false,
            err_count: crate::job::types::ErrorCount::default(),
            filler: cfg
                .extras
                .dedupe
                .as_ref()
                .map(crate::job::dedupe::BufFiller::new),
            backlog: (cfg.verify.is_some() && cfg.extras.verify.backlog > 0).then(|| {
                crate::job::verify::Backlog::new(
                    cfg.extras.verify.backlog,
                    cfg.extras.verify.batch(),
                )
            }),
            replay: cfg.replay.clone(),
            locks: crate::job::lockfile::Held::new(cfg.lockfile, &cfg.extras.target_names),
            trimmer: cfg
                .trim
                .as_ref()
                .map(|o| crate::job::trim::Trimmer::new(o, cfg.gen.seed)),
            last_read: false,
            failed_writes: Vec::new(),
            verify_stopped: false,
            flow: cfg.flow.clone().map(crate::job::flow::FlowMember::new),
            cmdprio: cfg.cmdprio.clone(),
            lat: cfg
                .lat
                .enabled()
                .then(|| LatSearch::new(cfg.lat, depth, t0)),
            lat_drain: None,
            lat_done: false,
            steady: None,
            zbd: cfg.zbd.clone(),
            zbd_held: None,
            zbd_end: false,
            op_seen: (vec![false; cfg.targets.max(1)], 0),
            iolog: match &cfg.iolog {
                Some(p) => Some(
                    crate::run::iolog::IoLog::create(p, cfg.extras.target_names.clone(), now_ns())
                        .map_err(JobError::Config)?,
                ),
                None => None,
            },
            now: t0,
            logged: 0,
        })
    }
}

fn run_with<E: Engine, const FILL: bool>(
    engine: &mut E,
    cfg: &JobConfig,
    t0: u64,
    stop: &AtomicBool,
    progress: &AtomicU64,
) -> Result<(JobOutcome, OpenLogs), JobError> {
    let mut drv = JobDriver::<FILL>::new(cfg, t0, engine.depth(), progress)?;
    if drv.gen.open_set().is_some() {
        // The open set logs its own opens and closes.
        if let Some(l) = drv.iolog.as_mut() {
            l.set_lazy(false);
        }
    }
    if drv.measuring && cfg.steady.is_some() {
        drv.restart_measuring(t0).map_err(JobError::Config)?;
    }
    let (minf0, majf0) = crate::job::samples::thread_faults();
    let (u0, s0, c0) = thread_rusage();
    let mut lc = LoopConfig {
        stop: Some(stop),
        rate_interval_ns: cfg.rate_iops.map(|r| 1_000_000_000 / r.max(1)),
        spin_ns: cfg.think.map_or(0, |t| t.spin_ns),
        ..LoopConfig::default()
    };
    cfg.batch.apply(&mut lc);
    if let Some(c) = &cfg.status {
        c.enter();
    }
    let st = ioloop::run(engine, &mut drv, &lc)?;
    // The files still open close with the job (as fio's close_files).
    drv.now = now_ns();
    match drv.gen.open_set() {
        Some(o) => {
            o.close_all();
            drv.apply_files(engine);
        }
        None => {
            if let Some(l) = drv.iolog.as_mut() {
                l.close_opened(drv.now);
            }
        }
    }
    // A read-back pass opens each file again at its first read.
    if let Some(l) = drv.iolog.as_mut() {
        l.set_lazy(true);
    }
    // Out of the flow: the others go on in their own ratio.
    drop(drv.flow.take());
    if let Some(c) = &drv.cmdprio {
        // fio lists the thread's own priority first.
        let own = c.default_prio();
        for d in drv.dirs.iter_mut() {
            d.prios.sort_by_key(|p| p.ioprio != own);
        }
    }
    if let Some(e) = drv.config_error {
        return Err(JobError::Config(e));
    }
    let runtime_ns = st.ended.saturating_sub(drv.meas_start);
    let series = drv.series.finish(runtime_ns);
    let (u1, s1, c1) = thread_rusage();
    let (minf1, majf1) = crate::job::samples::thread_faults();
    let mut samples = drv.samples;
    samples.minf = minf1.saturating_sub(minf0);
    samples.majf = majf1.saturating_sub(majf0);
    samples.elapsed_ns = st.ended.saturating_sub(t0);
    let open_logs = OpenLogs::new(
        drv.iolog.take(),
        drv.logs.take(),
        drv.meas_start,
        cfg.ioprio,
    );
    let o = JobOutcome {
        dirs: drv.dirs,
        runtime_ns,
        per_target: drv.per_target,
        series,
        errors: drv.errors,
        short_ios: drv.short_ios,
        drop_ios: [0; 3],
        interrupted: st.interrupted,
        cpu_user_ns: u1.saturating_sub(u0),
        cpu_sys_ns: s1.saturating_sub(s0),
        ctx_switches: c1.saturating_sub(c0),
        verify_failure: drv.verify_failure,
        samples,
        err_count: drv.err_count,
        verify_left: drv.backlog.map(crate::job::verify::Backlog::into_left),
        trimmed: drv.trimmer.map(crate::job::trim::Trimmer::into_trimmed),
        failed_writes: drv.failed_writes,
        verify_stopped: drv.verify_stopped,

        latency_depth: drv.lat.as_ref().map(|l| l.qd),
        steady: drv.steady.as_ref().map(SteadyState::outcome),
        zone_resets: drv.zbd.as_ref().map(|z| z.resets),
        program: None,
    };
    if let Some(c) = &cfg.status {
        c.leave(&o);
    }
    Ok((o, open_logs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_engine::buf::Fill;
    use drivelab_engine::engine::Null;

    /// Run a null-engine job set by `opts` (fio names) and return its outcome.
    fn run_null(opts: &[(&str, &str)]) -> JobOutcome {
        let mut spec = crate::JobSpec::default();
        spec.set("filename", Some("null-target")).unwrap();
        spec.set("ioengine", Some("null")).unwrap();
        for (k, v) in opts {
            spec.set(k, Some(v)).unwrap();
        }
        let plan = crate::plan(&[(spec, false)], &crate::PlanOptions::default()).unwrap();
        let job = &plan.jobs[0];
        let cfg = crate::run::execute::job_config(job, 1);
        let mut e = Null::new(job.spec.iodepth, job.spec.max_bs() as usize, Fill::Zeroed).unwrap();
        let stop = AtomicBool::new(false);
        let progress = AtomicU64::new(0);
        run_job(&mut e, &cfg, now_ns(), &stop, &progress).unwrap().0
    }

    fn ios(o: &JobOutcome) -> u64 {
        o.dirs[..3].iter().map(|d| d.ios).sum()
    }

    #[test]
    fn number_ios_stops_the_job_before_its_size() {
        let o = run_null(&[
            ("size", "1m"),
            ("rw", "randrw"),
            ("iodepth", "8"),
            ("number_ios", "37"),
        ]);
        assert_eq!(ios(&o), 37);
        assert_eq!(o.dirs[0].bytes + o.dirs[1].bytes, 37 * 4096);
        // With loops, fio counts number_ios once per loop.
        let o = run_null(&[("size", "1m"), ("loops", "3"), ("number_ios", "10")]);
        assert_eq!(ios(&o), 30);
        // It never extends the job: size still ends it first.
        let o = run_null(&[("size", "64k"), ("number_ios", "1000")]);
        assert_eq!(ios(&o), 16);
    }

    #[test]
    fn thinktime_pauses_between_blocks_of_ios() {
        // 20 I/Os in blocks of 4 with a 2 ms pause after each block (the
        // last pause may be cut by the end): at least 4 pauses, 8 ms.
        let o = run_null(&[
            ("size", "80k"),
            ("iodepth", "4"),
            ("thinktime", "2ms"),
            ("thinktime_blocks", "4"),
        ]);
        assert_eq!(ios(&o), 20);
        assert!(o.runtime_ns >= 8_000_000, "{}", o.runtime_ns);
        // Bare values are microseconds; a spun part still pauses as long.
        let o = run_null(&[
            ("size", "16k"),
            ("thinktime", "1500"),
            ("thinktime_spin", "500"),
        ]);
        assert_eq!(ios(&o), 4);
        assert!(o.runtime_ns >= 3 * 1_500_000, "{}", o.runtime_ns);
    }

    #[test]
    fn thinktime_blocks_of_issued_ios_caps_the_depth() {
        // Depth 8 but a pause after every 2 I/Os issued: 2 in flight at most.
        let o = run_null(&[
            ("size", "64k"),
            ("iodepth", "8"),
            ("thinktime", "100"),
            ("thinktime_blocks", "2"),
            ("thinktime_blocks_type", "issue"),
        ]);
        assert_eq!(ios(&o), 16);
        // I/Os by the depth they were queued at: 1, 2-3, 4-7, …
        let level = o.samples.depth.level;
        assert!(level[1] > 0, "{level:?}");
        assert_eq!(level[2..].iter().sum::<u64>(), 0, "{level:?}");
    }

    #[test]
    fn serialize_overlap_keeps_overlapping_ios_out_of_flight_together() {
        // Two 4 KiB blocks, depth 8, random writes with no map: without the
        // option up to 8 in flight, with it at most 2 (one per block).
        let opts = |so: &'static str| {
            [
                ("size", "8k"),
                ("bs", "4k"),
                ("rw", "randwrite"),
                ("norandommap", "1"),
                ("iodepth", "8"),
                ("time_based", "1"),
                ("runtime", "100ms"),
                ("serialize_overlap", so),
            ]
        };
        let deep = |o: &JobOutcome| o.samples.depth.level[2..].iter().sum::<u64>();
        let o = run_null(&opts("0"));
        assert!(deep(&o) > 0, "{:?}", o.samples.depth.level);
        let o = run_null(&opts("1"));
        assert!(ios(&o) > 100, "{}", ios(&o));
        assert_eq!(deep(&o), 0, "{:?}", o.samples.depth.level);
    }

    #[test]
    fn thinktime_never_runs_past_the_runtime() {
        let o = run_null(&[("size", "1m"), ("thinktime", "10s"), ("runtime", "50ms")]);
        assert_eq!(ios(&o), 1);
        assert!(o.runtime_ns < 5_000_000_000, "{}", o.runtime_ns);
    }

    #[test]
    fn bad_think_values_name_the_key() {
        let mut j = crate::JobSpec::default();
        let e = j.set("thinktime", Some("soon")).unwrap_err().to_string();
        assert!(e.contains("thinktime"), "{e}");
        let e = j
            .set("thinktime_blocks", Some("0"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("thinktime_blocks"), "{e}");
        let e = j.set("number_ios", Some("-3")).unwrap_err().to_string();
        assert!(e.contains("number_ios"), "{e}");
        j.set("filename", Some("x")).unwrap();
        j.set("thinktime", Some("100")).unwrap();
        assert_eq!(j.thinktime, Duration::from_micros(100));
        j.set("thinktime_spin", Some("1ms")).unwrap();
        let e = j.validate().unwrap_err().to_string();
        assert!(e.contains("thinktime_spin"), "{e}");
    }
}
