//! Running test steps on the I/O engine: the step loop, a sibling of the
//! engine's job loop.
//!
//! The loop keeps up to `qd` commands in flight in the engine's numbered
//! slots. Before a write it fills the slot's registered buffer from the
//! pattern (for periodic patterns, whose every block is alike, the buffers
//! are filled once per pass instead); after a read completes it verifies the
//! slot's buffer in place. Nothing is allocated per command. As in the job
//! loop, the monotonic clock is read once per turn, right after the kernel
//! returns: that reading stamps every completion reaped and every command
//! queued in the turn, so a command's completion time runs from just before
//! the submitting `io_uring_enter` to just after the reaping one.
//!
//! A write-verify is a write pass over the whole range followed by a
//! read-compare pass over the whole range (as DMM does): every block is
//! read back after all of the step's writes landed, in the same order.
//!
//! A failed command is retried in the same slot up to `retries` times; then
//! it counts as an error. A miscompare is never retried. On an error,
//! `stop-test` and `stop-sequence` stop issuing, drain what is in flight
//! (without checking it) and end the step; `continue` goes on and reports
//! every error (the first [`FAILURE_LIMIT`] in detail, all counted).

use drivelab_device::health::around;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Engine, Uring};
use drivelab_engine::io::{IoDesc, Op};
use drivelab_engine::ioloop::{self, After, Done, Driver, LoopConfig, Next};
use drivelab_patterns::{Generator, Pattern};
use drivelab_stats::{LatencyHistogram, Welford};

use crate::error::StepError;
use crate::layout::Walker;
use crate::narrow::{add_read_sense, reissue, Reissue};
pub use crate::result::Findings;
use crate::result::{dmm_time, Failure, PassResult, Status, StepResult};
use crate::same::{self, SameMethod, SameRun};
use crate::spec::{Count, OnError, Order, StepKind, StepSpec};
use crate::target::TestTarget;

/// Largest total of slot buffers (queue depth × longest transfer), bytes.
pub const MAX_BUFFER_BYTES: u64 = 1 << 30;

/// A step resolved against the target: range and lengths in blocks, seed
/// fixed.
#[derive(Debug, Clone)]
pub struct StepPlan {
    /// 1-based position.
    pub index: usize,
    /// Steps in the sequence.
    pub of: usize,
    /// The step as given.
    pub spec: StepSpec,
    /// The seed in effect.
    pub seed: u64,
    /// First LBA.
    pub start: u64,
    /// Blocks in the range.
    pub count: u64,
    /// Shortest transfer, blocks.
    pub lo: u64,
    /// Longest transfer, blocks.
    pub hi: u64,
    /// Logical block size, bytes.
    pub block_size: u32,
    /// The command of a write-same step, as the drive supports it.
    pub same: Option<SameMethod>,
}

/// Resolve `specs` against `target`. `seed` is the sequence's seed;
/// `seed_given` whether the user chose it (a `verify` of `random` or
/// `stamped` data with no write of it earlier in the sequence needs the
/// seed the write used).
pub fn plan_steps(
    target: &TestTarget,
    specs: &[StepSpec],
    seed: u64,
    seed_given: bool,
) -> Result<Vec<StepPlan>, StepError> {
    let bs = u64::from(target.block_size.0);
    let cap = target.blocks.0;
    let mut out = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        let step = i + 1;
        let perr = |msg: String| StepError::Plan { step, msg };
        s.validate().map_err(|e| perr(e.to_string()))?;
        if s.transfer.min % bs != 0 || s.transfer.max % bs != 0 {
            return Err(perr(format!(
                "transfer length (bs) {} is not a whole number of the target's {bs}-byte logical blocks; use a multiple of {bs}",
                s.transfer
            )));
        }
        if s.start >= cap {
            return Err(perr(format!(
                "start block {} is past the end of the target ({cap} blocks); give a start below {cap}",
                s.start
            )));
        }
        let count = match s.count {
            Count::All => cap - s.start,
            Count::Blocks(n) => n,
        };
        if s.start.checked_add(count).is_none_or(|e| e > cap) {
            return Err(perr(format!(
                "blocks {}..{} run past the end of the target ({cap} blocks); lower --count or --start, or use --count all",
                s.start,
                s.start.saturating_add(count)
            )));
        }
        if u64::from(s.qd) * s.transfer.max > MAX_BUFFER_BYTES {
            return Err(perr(format!(
                "queue depth {} × transfer length {} needs more than 1 GiB of buffers; lower --qd or --bs",
                s.qd, s.transfer.max
            )));
        }
        let step_seed = s.seed.unwrap_or(seed);
        let seeded = matches!(s.pattern, Pattern::Random | Pattern::Stamped);
        if s.kind == StepKind::Verify && seeded && s.seed.is_none() && !seed_given {
            let written = specs[..i]
                .iter()
                .any(|p| p.kind.writes() && p.pattern == s.pattern && p.seed.is_none());
            if !written {
                return Err(perr(format!(
                    "verifying {} data needs the seed it was written with; pass --seed N (the write step's log prints it)",
                    s.pattern
                )));
            }
        }
        // Build the generator once here so pattern errors surface before
        // anything is written.
        Generator::builder(s.pattern.clone(), bs as usize)
            .seed(step_seed)
            .build()
            .map_err(|e| perr(e.to_string()))?;
        let (mut lo, mut hi) = (s.transfer.min / bs, s.transfer.max / bs);
        let same = if s.kind == StepKind::WriteSame {
            let refuse = |why: String| perr(format!("write-same: {why}"));
            same::check_pattern(&s.pattern).map_err(refuse)?;
            let m = SameMethod::probe(&target.path, target.block_size.0, s.start + count)
                .map_err(refuse)?;
            lo = m.chunk().min(count);
            hi = lo;
            Some(m)
        } else {
            None
        };
        out.push(StepPlan {
            index: step,
            of: specs.len(),
            spec: s.clone(),
            seed: step_seed,
            start: s.start,
            count,
            lo,
            hi,
            block_size: target.block_size.0,
            same,
        });
    }
    Ok(out)
}

impl StepPlan {
    /// Blocks the step transfers when every command succeeds: the range,
    /// once per pass (what the progress counter counts up to).
    pub fn planned_blocks(&self) -> u64 {
        self.count * self.spec.kind.passes()
    }

    /// The access order as a fresh walker (each pass starts its own).
    pub fn walker(&self) -> Walker {
        let (a, n, lo, hi, seed) = (self.start, self.count, self.lo, self.hi, self.seed);
        match self.spec.order {
            Order::Sequential => Walker::sequential(a, n, lo, hi, seed),
            Order::Random => Walker::random(a, n, lo, hi, seed),
            Order::Butterfly => Walker::butterfly(a, n, lo, hi, seed),
        }
    }

    /// The pattern generator of this step.
    pub fn generator(&self) -> Result<Generator, StepError> {
        Generator::builder(self.spec.pattern.clone(), self.block_size as usize)
            .seed(self.seed)
            .run_id(self.seed)
            .sequence(self.spec.pass)
            .build()
            .map_err(|e| StepError::Plan {
                step: self.index,
                msg: e.to_string(),
            })
    }
}

/// What one pass should do.
#[derive(Debug, Clone, Copy)]
pub struct PassConfig {
    /// Read or Write.
    pub op: Op,
    /// Compare data read against the pattern.
    pub compare: bool,
    /// Logical block size, bytes.
    pub block_size: u64,
    /// Longest transfer, blocks (the slot buffers hold at least this).
    pub max_blocks: u64,
    /// Commands in flight at most (the engine has one slot more).
    pub qd: u32,
    /// Stop-on-error policy.
    pub on_error: OnError,
    /// Retries per failed command.
    pub retries: u32,
    /// Blocks the step's earlier passes did: `progress` counts on from
    /// them, so it shows the step's blocks, not the pass's.
    pub progress_from: u64,
}

/// How a pass narrows a failed command down to its bad blocks.
pub struct Narrowing<'a> {
    /// How the pieces are re-issued.
    pub how: Reissue<'a>,
    /// The block device to ask for the sense of bad reads (SCSI READ of one
    /// block); `None` for writes and targets that are not block devices.
    pub sense_of: Option<&'a std::path::Path>,
}

/// How a pass ended.
#[derive(Debug, Clone)]
pub struct PassOutcome {
    /// Its figures.
    pub result: PassResult,
    /// Latency histogram (for merging across passes).
    pub hist: LatencyHistogram,
    /// Latency moments (for merging).
    pub moments: Welford,
    /// An error ended it early.
    pub stopped_on_error: bool,
    /// The stop flag ended it early.
    pub interrupted: bool,
}

/// One pass as a driver of the engine's I/O loop: the walker says which
/// blocks come next, writes get the pattern, reads to compare are checked
/// in their slot's buffer, failures are retried or counted.
struct PassDriver<'a> {
    walker: Walker,
    gen: &'a Generator,
    cfg: &'a PassConfig,
    findings: &'a mut Findings,
    progress: &'a AtomicU64,
    narrowing: Option<&'a Narrowing<'a>>,
    scratch: Vec<u8>,
    fill_each: bool,
    stopping: bool,
    stopped_on_error: bool,
    moments: Welford,
    hist: LatencyHistogram,
    ios: u64,
    blocks: u64,
}

impl PassDriver<'_> {
    fn op_name(&self) -> &'static str {
        if self.cfg.op == Op::Write {
            "write"
        } else {
            "read"
        }
    }

    fn stop_here(&mut self) {
        if self.cfg.on_error != OnError::Continue {
            self.stopping = true;
            self.stopped_on_error = true;
        }
    }

    fn failed(&mut self, d: &Done) {
        self.findings.io_errors += 1;
        let len = u64::from(d.io.len);
        let (errno, message) = if d.result < 0 {
            (
                -d.result,
                std::io::Error::from_raw_os_error(-d.result).to_string(),
            )
        } else {
            (0, format!("short transfer: {} of {len} bytes", d.result))
        };
        let bs = self.cfg.block_size;
        let (lba, blocks) = (d.io.offset / bs, len / bs);
        let mut bad_ranges = Vec::new();
        let mut found = Vec::new();
        if let Some(nw) = self.narrowing {
            let (gen, compare) = (self.gen, self.cfg.compare);
            let first_only = self.cfg.on_error != OnError::Continue;
            let r = reissue(
                &nw.how,
                &mut self.scratch,
                gen,
                bs,
                lba,
                blocks,
                errno,
                message.clone(),
                |buf, first| {
                    if compare && (found.is_empty() || !first_only) {
                        gen.verify_each(buf, first, |m| {
                            found.push(m);
                            if first_only {
                                ControlFlow::Break(())
                            } else {
                                ControlFlow::Continue(())
                            }
                        });
                    }
                },
            );
            self.blocks += r.good_blocks;
            bad_ranges = r.bad;
            if let Some(path) = nw.sense_of {
                add_read_sense(path, bs, &mut bad_ranges);
            }
            self.findings.bad_blocks += bad_ranges.iter().map(|b| b.count).sum::<u64>();
        }
        self.findings.push(Failure::Io {
            op: self.op_name().into(),
            lba,
            blocks,
            errno,
            message,
            retries: d.retries,
            bad_ranges,
        });
        for m in &found {
            self.findings.miscompare(m, bs);
        }
        self.stop_here();
    }
}

impl Driver for PassDriver<'_> {
    fn next(&mut self, _now: u64, _inflight: u32, buf: &mut [u8]) -> Next {
        if self.stopping {
            return Next::Done;
        }
        let Some((lba, n)) = self.walker.next_transfer() else {
            return Next::Done;
        };
        let bs = self.cfg.block_size;
        if self.fill_each {
            self.gen.fill(&mut buf[..(n * bs) as usize], lba);
        }
        Next::Io {
            io: IoDesc {
                target: 0,
                op: self.cfg.op,
                offset: lba * bs,
                len: (n * bs) as u32,
            },
            due: None,
            tag: 0,
        }
    }

    fn inspects(&self, _io: &IoDesc, _tag: u64) -> bool {
        self.cfg.compare && !self.stopping
    }

    fn complete(&mut self, d: &Done, buf: &[u8]) -> After {
        let quiet = self.stopping || d.draining;
        if !d.is_full() {
            if quiet {
                return After::Release;
            }
            if d.retries < self.cfg.retries {
                return After::Retry;
            }
            self.failed(d);
            return After::Release;
        }
        let lat = d.latency();
        self.moments.record(lat as f64);
        self.hist.record(lat);
        self.ios += 1;
        let bs = self.cfg.block_size;
        self.blocks += u64::from(d.io.len) / bs;
        if self.cfg.compare && !quiet {
            let len = d.io.len as usize;
            let stop_at_first = self.cfg.on_error != OnError::Continue;
            let findings = &mut *self.findings;
            let failed = self.gen.verify_each(&buf[..len], d.io.offset / bs, |m| {
                findings.miscompare(&m, bs);
                if stop_at_first {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            if failed > 0 {
                self.stop_here();
            }
        }
        After::Release
    }

    fn turn(&mut self, _now: u64) -> bool {
        self.progress
            .store(self.cfg.progress_from + self.blocks, Ordering::Relaxed);
        self.stopping
    }
}

/// Run one pass of `walker`'s transfers on `engine`, at most `cfg.qd`
/// commands in flight. The engine needs `cfg.qd + 1` slots: the spare
/// buffer is filled ahead (writes of non-periodic patterns) or compared
/// (reads) while the device works on the others, so pattern work overlaps
/// I/O even at queue depth 1. `progress` counts blocks completed (on from
/// `cfg.progress_from`); `stop`
/// ends the pass early (in-flight commands drained, not checked). A
/// command that fails its retries is narrowed down to its bad blocks with
/// `narrowing` (when given) before the pass goes on or stops.
#[allow(clippy::too_many_arguments)] // each is a distinct part the caller owns
pub fn run_pass<E: Engine>(
    engine: &mut E,
    walker: Walker,
    gen: &Generator,
    cfg: &PassConfig,
    findings: &mut Findings,
    narrowing: Option<&Narrowing<'_>>,
    stop: &AtomicBool,
    progress: &AtomicU64,
) -> Result<PassOutcome, StepError> {
    let depth = engine.depth();
    let bs = cfg.block_size;
    let write = cfg.op == Op::Write;
    let periodic = gen.pattern().is_periodic();
    if write && periodic {
        // Every block alike: fill each slot once, not per command.
        let len = (cfg.max_blocks * bs) as usize;
        for slot in 0..depth {
            gen.fill(&mut engine.buffer(slot)[..len], 0);
        }
    }
    let mut drv = PassDriver {
        walker,
        gen,
        cfg,
        findings,
        progress,
        narrowing,
        scratch: Vec::new(),
        fill_each: write && !periodic,
        stopping: false,
        stopped_on_error: false,
        moments: Welford::new(),
        hist: LatencyHistogram::new(),
        ios: 0,
        blocks: 0,
    };
    // The engine has qd + 1 slots: prepare-ahead keeps qd in flight and
    // the spare one for the buffer being filled. A pass counts commands:
    // the block layer must not merge two of them into one.
    let lc = LoopConfig {
        stop: Some(stop),
        prepare_ahead: depth > 1,
        keep_apart: true,
        ..LoopConfig::default()
    };
    let st = ioloop::run(engine, &mut drv, &lc)?;
    progress.store(cfg.progress_from + drv.blocks, Ordering::Relaxed);
    let runtime_ns = st.ended.saturating_sub(st.started).max(1);
    let secs = runtime_ns as f64 / 1e9;
    let (ios, blocks) = (drv.ios, drv.blocks);
    let bytes = blocks * bs;
    let result = PassResult {
        op: drv.op_name().into(),
        compared: cfg.compare,
        runtime_ns,
        ios,
        blocks,
        bytes,
        bw_bytes: bytes as f64 / secs,
        mib_per_s: bytes as f64 / secs / 1_048_576.0,
        iops: ios as f64 / secs,
        clat_ns: drv.moments.summary(),
        clat_percentiles_ns: drv
            .hist
            .percentiles(&[50.0, 99.0, 99.9])
            .into_iter()
            .map(|(p, v)| (format!("{p:.6}"), v))
            .collect(),
    };
    Ok(PassOutcome {
        result,
        hist: drv.hist,
        moments: drv.moments,
        stopped_on_error: drv.stopped_on_error,
        interrupted: st.interrupted,
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl StepPlan {
    fn result_shell(&self, started_unix: u64, status: Status) -> StepResult {
        let s = &self.spec;
        StepResult {
            index: self.index,
            of: self.of,
            kind: s.kind.name().into(),
            test_type: s.kind.dmm_name().into(),
            order: s.order.name().into(),
            start_block: self.start,
            block_count: self.count,
            block_size: self.block_size,
            transfer_min_blocks: self.lo,
            transfer_max_blocks: self.hi,
            pattern: s.pattern.to_string(),
            seed: self.seed,
            pass: s.pass,
            queue_depth: s.qd,
            fua: s.fua,
            on_error: s.on_error.name().into(),
            retries: s.retries,
            started: dmm_time(started_unix),
            finished: dmm_time(started_unix),
            started_unix,
            status,
            runtime_ns: 0,
            bw_bytes: 0.0,
            mib_per_s: 0.0,
            iops: 0.0,
            blocks_transferred: 0,
            clat_ns: Welford::new().summary(),
            passes: Vec::new(),
            io_errors: 0,
            miscompares: 0,
            bad_blocks: 0,
            command: self.same.map(|m| m.describe(self.block_size)),
            failures: Vec::new(),
            error: None,
            note: None,
            health: None,
        }
    }

    /// The entry of a step that was not run, with the reason.
    pub fn skipped(&self, why: &str) -> StepResult {
        let mut r = self.result_shell(unix_now(), Status::Skipped);
        r.note = Some(why.to_string());
        r
    }
}

/// How a pass of `op` on `target` narrows its failed commands: reads on a
/// second read-only descriptor (with the sense of bad blocks of a block
/// device), writes through the claim. `None` when that cannot be set up
/// (the failure is then reported for the whole command).
fn narrowing_for(target: &TestTarget, op: Op) -> Option<Narrowing<'_>> {
    match op {
        Op::Write => target.claim.as_ref().map(|c| Narrowing {
            how: Reissue::Write(c),
            sense_of: None,
        }),
        _ => Reissue::reader(&target.path, target.direct)
            .ok()
            .map(|how| Narrowing {
                how,
                sense_of: target.is_block.then_some(target.path.as_path()),
            }),
    }
}

/// Run one step on `target` with the io_uring engine. `progress` counts
/// blocks completed in the current pass.
pub fn run_step(
    target: &TestTarget,
    plan: &StepPlan,
    stop: &AtomicBool,
    progress: &AtomicU64,
) -> Result<StepResult, StepError> {
    if let Some(m) = plan.same {
        return run_write_same(target, plan, m, stop, progress);
    }
    let spec = &plan.spec;
    let gen = plan.generator()?;
    let t = target.engine_target(spec.kind.writes())?;
    let bs = u64::from(plan.block_size);
    let max_len = (plan.hi * bs) as usize;
    let mut engine = Uring::new(
        vec![t],
        spec.qd + 1,
        max_len,
        spec.fua,
        Fill::Random(plan.seed),
    )?;
    let started_unix = unix_now();
    let mut r = plan.result_shell(started_unix, Status::Passed);
    let mut passes: Vec<(Op, bool)> = Vec::with_capacity(2);
    match spec.kind {
        StepKind::Write => passes.push((Op::Write, false)),
        StepKind::Read => passes.push((Op::Read, false)),
        StepKind::Verify => passes.push((Op::Read, true)),
        StepKind::WriteVerify => {
            passes.push((Op::Write, false));
            passes.push((Op::Read, true));
        }
        StepKind::WriteSame => {
            return Err(StepError::Plan {
                step: plan.index,
                msg: "a write-same step was not planned with its command; this is a bug".into(),
            })
        }
    }
    let mut findings = Findings::default();
    let mut moments = Welford::new();
    let mut interrupted = false;
    let mut stopped = false;
    for (op, compare) in passes {
        let cfg = PassConfig {
            op,
            compare,
            block_size: bs,
            max_blocks: plan.hi,
            qd: spec.qd,
            on_error: spec.on_error,
            retries: spec.retries,
            progress_from: r.blocks_transferred,
        };
        let narrowing = narrowing_for(target, op);
        let out = run_pass(
            &mut engine,
            plan.walker(),
            &gen,
            &cfg,
            &mut findings,
            narrowing.as_ref(),
            stop,
            progress,
        )?;
        moments.merge(&out.moments);
        r.runtime_ns += out.result.runtime_ns;
        r.blocks_transferred += out.result.blocks;
        r.passes.push(out.result);
        interrupted |= out.interrupted;
        stopped |= out.stopped_on_error;
        if out.interrupted || out.stopped_on_error {
            break;
        }
    }
    let secs = r.runtime_ns.max(1) as f64 / 1e9;
    let bytes = r.blocks_transferred * bs;
    let ios: u64 = r.passes.iter().map(|p| p.ios).sum();
    r.bw_bytes = bytes as f64 / secs;
    r.mib_per_s = r.bw_bytes / 1_048_576.0;
    r.iops = ios as f64 / secs;
    r.clat_ns = moments.summary();
    r.finished = dmm_time(unix_now());
    r.io_errors = findings.io_errors;
    r.miscompares = findings.miscompares;
    r.bad_blocks = findings.bad_blocks;
    r.error = findings.failures.first().map(Failure::line);
    r.failures = findings.failures;
    r.status = if interrupted {
        Status::Interrupted
    } else if r.io_errors + r.miscompares > 0 {
        Status::Failed
    } else {
        Status::Passed
    };
    if stopped {
        r.note = Some(format!(
            "stopped at the first error ({})",
            spec.on_error.name()
        ));
    }
    Ok(r)
}

/// Run a write-same step: the pattern rendered into one logical block
/// (that of the first LBA), sent with `m` through the claim.
fn run_write_same(
    target: &TestTarget,
    plan: &StepPlan,
    m: SameMethod,
    stop: &AtomicBool,
    progress: &AtomicU64,
) -> Result<StepResult, StepError> {
    let spec = &plan.spec;
    let gen = plan.generator()?;
    let terr = |msg: String| StepError::Target {
        path: target.path.display().to_string(),
        msg,
    };
    let claim = target.claim.as_ref().ok_or_else(|| {
        terr("a write-same step needs the target claimed for writing; this is a bug".into())
    })?;
    let mut dev = drivelab_device::sg::SgDevice::claimed(claim)
        .map_err(|e| terr(format!("cannot open it for SCSI passthrough: {e}")))?;
    dev.set_timeout_ms(same::COMMAND_TIMEOUT_MS);
    let mut block = vec![0u8; plan.block_size as usize];
    gen.fill(&mut block, plan.start);
    let run = SameRun {
        dev: &dev,
        method: m,
        block: &block,
        start: plan.start,
        count: plan.count,
        on_error: spec.on_error,
        retries: spec.retries,
    };
    let started_unix = unix_now();
    let mut r = plan.result_shell(started_unix, Status::Passed);
    let mut findings = Findings::default();
    let out = run.run(&mut findings, stop, progress);
    // The commands wrote behind the page cache: a buffered reader after
    // this step must see the pattern, not the old data.
    claim
        .drop_cached()
        .map_err(|e| terr(format!("cannot drop its cached pages: {e}")))?;
    let p = out.result;
    r.runtime_ns = p.runtime_ns;
    r.blocks_transferred = p.blocks;
    r.bw_bytes = p.bw_bytes;
    r.mib_per_s = p.mib_per_s;
    r.iops = p.iops;
    r.clat_ns = out.moments.summary();
    r.passes.push(p);
    r.finished = dmm_time(unix_now());
    r.io_errors = findings.io_errors;
    r.miscompares = findings.miscompares;
    r.bad_blocks = findings.bad_blocks;
    r.error = findings.failures.first().map(Failure::line);
    r.failures = findings.failures;
    r.status = if out.interrupted {
        Status::Interrupted
    } else if r.io_errors > 0 {
        Status::Failed
    } else {
        Status::Passed
    };
    if out.stopped_on_error {
        r.note = Some(format!(
            "stopped at the first error ({})",
            spec.on_error.name()
        ));
    }
    Ok(r)
}

/// The drive's health before a write step on a drive that has health of
/// its own (reads only; a drive that does not answer is recorded, never
/// an error).
fn health_before(target: &TestTarget, p: &StepPlan) -> Option<around::Before> {
    let dev = target.device.as_ref()?;
    (p.spec.kind.writes() && around::has_health(dev.kind))
        .then(|| around::Before::take(&target.path, dmm_time(unix_now())))
}

/// The reading after the step, judged against the bytes its write pass
/// sent (a write-same step's command is executed by the drive itself).
fn health_after(
    target: &TestTarget,
    p: &StepPlan,
    r: &StepResult,
    before: around::Before,
) -> around::AroundWork {
    let bs = u64::from(p.block_size);
    let written = if p.same.is_some() {
        r.block_count * bs
    } else {
        r.passes.first().map(|w| w.blocks * bs).unwrap_or(0)
    };
    before.after(
        &target.path,
        dmm_time(unix_now()),
        Some((written, p.same.is_some())),
    )
}

/// Run every step in order, handing each finished entry to `on_step` (for
/// a log written as the run goes). A step that fails with `stop-sequence`
/// skips the rest; an interruption skips the rest. Returns every entry.
pub fn run_sequence(
    target: &TestTarget,
    plans: &[StepPlan],
    stop: &AtomicBool,
    progress: &AtomicU64,
    mut on_step: impl FnMut(&StepResult),
) -> Result<Vec<StepResult>, StepError> {
    let mut out = Vec::with_capacity(plans.len());
    let mut skip: Option<String> = None;
    for p in plans {
        let r = match &skip {
            Some(why) => p.skipped(why),
            None => {
                progress.store(0, Ordering::Relaxed);
                let before = health_before(target, p);
                let mut r = run_step(target, p, stop, progress)?;
                if let Some(b) = before {
                    r.health = Some(health_after(target, p, &r, b));
                }
                if r.status == Status::Interrupted {
                    skip = Some("the run was interrupted".into());
                } else if r.status == Status::Failed && p.spec.on_error == OnError::StopSequence {
                    skip = Some(format!(
                        "test {} failed with stop-on-error = stop-sequence",
                        p.index
                    ));
                }
                r
            }
        };
        on_step(&r);
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Transfer;
    use std::os::unix::fs::FileExt;
    use std::path::PathBuf;

    struct TmpFile(PathBuf);
    impl Drop for TmpFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn tmp_file(tag: &str, len: u64) -> TmpFile {
        let p = std::env::temp_dir().join(format!("drivelab-steps-{tag}-{}", std::process::id()));
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(len).unwrap();
        TmpFile(p)
    }

    fn run_one(t: &TestTarget, spec: StepSpec) -> StepResult {
        let plans = plan_steps(t, &[spec], 7, true).unwrap();
        let stop = AtomicBool::new(false);
        let progress = AtomicU64::new(0);
        run_step(t, &plans[0], &stop, &progress).unwrap()
    }

    #[test]
    fn write_then_verify_on_a_file_finds_the_one_changed_block() {
        let f = tmp_file("flip", 1 << 20);
        let t = TestTarget::inspect(&f.0, None, true, false).unwrap();
        assert_eq!(t.blocks.0, 2048);
        let mut w = StepSpec::new(StepKind::WriteVerify);
        w.pattern = Pattern::Random;
        w.transfer = Transfer {
            min: 512,
            max: 32768,
        };
        w.order = Order::Random;
        w.qd = 4;
        let r = run_one(&t, w);
        assert_eq!(r.status, Status::Passed, "{r:?}");
        assert_eq!(r.blocks_transferred, 4096);
        assert_eq!(r.passes[0].blocks, 2048);
        // Independently: block 5 holds the stream of (seed 7, LBA 5) — the
        // same bytes the patterns crate generates for it.
        let g = Generator::builder(Pattern::Random, 512)
            .seed(7)
            .build()
            .unwrap();
        let mut want = vec![0u8; 512];
        g.fill(&mut want, 5);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&f.0)
            .unwrap();
        let mut got = vec![0u8; 512];
        file.read_exact_at(&mut got, 5 * 512).unwrap();
        assert_eq!(got, want);
        // Change one byte of LBA 1234; a verify names it and nothing else.
        let mut b = [0u8; 1];
        file.read_exact_at(&mut b, 1234 * 512 + 100).unwrap();
        b[0] ^= 1;
        file.write_all_at(&b, 1234 * 512 + 100).unwrap();
        let mut v = StepSpec::new(StepKind::Verify);
        v.pattern = Pattern::Random;
        v.on_error = OnError::Continue;
        v.order = Order::Butterfly;
        let r = run_one(&t, v);
        assert_eq!(r.status, Status::Failed);
        assert_eq!((r.miscompares, r.io_errors), (1, 0));
        match &r.failures[0] {
            Failure::Miscompare {
                lba,
                block_offset,
                byte_offset,
                ..
            } => {
                assert_eq!(
                    (*lba, *block_offset, *byte_offset),
                    (1234, 100, 1234 * 512 + 100)
                );
            }
            f => panic!("{f:?}"),
        }
        assert_eq!(r.blocks_transferred, 2048);
    }

    #[test]
    fn plan_rejects_ranges_and_lengths_that_do_not_fit() {
        let f = tmp_file("plan", 1 << 20);
        let t = TestTarget::inspect(&f.0, Some(4096), false, false).unwrap();
        assert_eq!(t.blocks.0, 256);
        let mut s = StepSpec::new(StepKind::Read);
        s.transfer = Transfer { min: 512, max: 512 };
        assert!(
            plan_steps(&t, &[s.clone()], 0, true).is_err(),
            "512 B on 4 KiB blocks"
        );
        s.transfer = Transfer {
            min: 4096,
            max: 4096,
        };
        s.start = 250;
        s.count = Count::Blocks(7);
        assert!(
            plan_steps(&t, &[s.clone()], 0, true).is_err(),
            "past the end"
        );
        s.count = Count::All;
        let p = plan_steps(&t, &[s.clone()], 0, true).unwrap();
        assert_eq!((p[0].start, p[0].count), (250, 6));
        let mut v = StepSpec::new(StepKind::Verify);
        v.pattern = Pattern::Stamped;
        assert!(
            plan_steps(&t, &[v.clone()], 0, false).is_err(),
            "verify needs the seed"
        );
        let mut w = v.clone();
        w.kind = StepKind::Write;
        assert!(
            plan_steps(&t, &[w, v], 0, false).is_ok(),
            "written earlier in the sequence"
        );
    }
}
