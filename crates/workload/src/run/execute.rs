//! Running a plan: prepare files, start one thread per job, sample the
//! devices once a second while they run, and build the report.

use std::collections::BTreeMap;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::job::gen::GenConfig;
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use crate::job::io_loop::JobConfig;
use crate::job::outcome::{DirStats, IoFailure, JobError, JobOutcome, LiveCounters};
use drivelab_device::claim::{Claim, ClaimOptions, Consent};
use drivelab_device::diskstats::{Delta, Sampler};
use drivelab_engine::io::Op;
use drivelab_report::{
    percentile_key, DeviceSecond, DirReport, DiskUtil, IoErrorReport, JobReport, LatReport,
    LbaRange, RunReport, SeriesPoint, SyncReport,
};
use drivelab_stats::FIO_DEFAULT_PERCENTILES;

use crate::job::samples::{SampleStat, DEPTH_BATCH_KEYS, DEPTH_LEVEL_KEYS, LAT_BOUNDS};
use drivelab_report::OrderedMap;

use crate::plan::model::{Plan, PlannedJob, PlannedTarget};
use crate::run::device_check::{verdict, Reported, Seen};
use crate::run::error::RunError;
use crate::run::output_opts::Unified;
use crate::run::start::{Ctl, JobRun, StartGate, Ticket};
use crate::run::status::{self, StatusCell, StatusClock, StatusOptions};

/// What the run reports once a second while it runs.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Seconds since the jobs started.
    pub elapsed_s: f64,
    /// Expected length of the run, seconds, when time-based.
    pub planned_s: Option<f64>,
    /// I/Os completed in the last second, all jobs.
    pub iops: f64,
    /// Jobs still running.
    pub running: usize,
    /// Still in the ramp (not measuring).
    pub ramping: bool,
    /// Bytes per second in the last second, per direction (read, write, trim).
    pub dir_bw: [f64; 3],
    /// I/Os per second in the last second, per direction.
    pub dir_iops: [f64; 3],
    /// Bytes moved since measuring started, all jobs of the group.
    pub bytes_done: u64,
    /// Bytes the group's jobs are to move at most, when every job has a
    /// size limit (a runtime may end them sooner).
    pub bytes_planned: Option<u64>,
}

/// Claim every target a job writes (the device crate's safety assessment,
/// the user's consent and an exclusive hold, kept for the whole run), then
/// create, extend and lay out files as the plan says: every claim is taken
/// before any file is laid out, so a refused target (or one given twice)
/// leaves the others unwritten. Targets only read are not claimed. Returns
/// one entry per plan target.
fn claim_targets(
    plan: &Plan,
    sets: &crate::engines::files::RunSets,
) -> Result<Vec<Option<Claim>>, RunError> {
    let consent = Consent {
        force: plan.force,
        confirm: None,
    };
    let mut claims = Vec::with_capacity(plan.targets.len());
    for (i, t) in plan.targets.iter().enumerate() {
        let null = plan
            .jobs
            .iter()
            .any(|j| j.targets.contains(&i) && !j.spec.front.on_targets());
        let written = plan.jobs.iter().any(|j| j.writes && j.targets.contains(&i));
        let grows = !t.is_block && (t.create || t.size > t.existing_size);
        if null || sets.holds(i) || !(written || grows) {
            claims.push(None);
            continue;
        }
        // fio: a new file only written gets its size from `fallocate`
        // (and the writes); one that is read is laid out whole.
        let by_prealloc = t.create && !t.layout;
        let opts = ClaimOptions {
            direct: false,
            create_size: (!t.is_block).then_some(if by_prealloc { 0 } else { t.size }),
        };
        claims.push(Some(
            Claim::open(&t.path, &consent, &opts).map_err(RunError::Claim)?,
        ));
    }
    for (i, (t, claim)) in plan.targets.iter().zip(&claims).enumerate() {
        let Some(claim) = claim else { continue };
        if !t.is_block && (t.create || t.size > t.existing_size) {
            claim
                .preallocate(crate::engines::files::prealloc_of(plan, i), t.size)
                .map_err(|source| RunError::Prepare {
                    path: t.path.display().to_string(),
                    source,
                })?;
        }
        if t.layout {
            // fio's create_fsync (default on): the laid-out file is synced,
            // unless every job on it turned that off.
            let fsync = plan
                .jobs
                .iter()
                .filter(|j| j.targets.contains(&i))
                .any(|j| j.spec.syncs.create_fsync);
            lay_out(claim, t, fsync)?;
        }
    }
    Ok(claims)
}

/// Write real data into a file's grown part, so reads hit data rather
/// than holes.
fn lay_out(claim: &Claim, t: &PlannedTarget, fsync: bool) -> Result<(), RunError> {
    let err = |source| RunError::Prepare {
        path: t.path.display().to_string(),
        source,
    };
    let chunk = 1usize << 20;
    let mut buf = vec![0u8; chunk];
    let mut s = 0x5eed_u64;
    for c in buf.chunks_exact_mut(8) {
        c.copy_from_slice(&drivelab_patterns::prng::splitmix64(&mut s).to_le_bytes());
    }
    let mut off = t.existing_size;
    while off < t.size {
        let n = (t.size - off).min(chunk as u64) as usize;
        claim.write_at(&buf[..n], off).map_err(err)?;
        off += n as u64;
    }
    if fsync {
        claim.sync().map_err(err)?;
    }
    Ok(())
}

/// The trims a planned job does: its family's options when it writes
/// with `verify` and `do_verify` and sets a share and a backlog (not
/// under `verify_only`, which writes nothing, nor `experimental_verify`:
/// fio's log_io_piece, which the trims are taken from, logs only then).
fn trims(job: &PlannedJob) -> Option<crate::job::trim::TrimOpts> {
    let t = &job.spec.trims;
    let v = &job.spec.verify;
    (t.active() && job.writes && job.verify.is_some() && v.do_verify && !v.only && !v.experimental)
        .then(|| t.clone())
}

/// The job loop's configuration of a planned job (season runs jobs on its
/// own claim). `number`: the job's place in the run, from 1 (fio's thread
/// number, which names its log files).
pub fn job_config(job: &PlannedJob, number: usize) -> JobConfig {
    let spec = &job.spec;
    let ignore_think = spec.think.rate_ignore && !spec.thinktime.is_zero();
    JobConfig {
        gen: GenConfig {
            lines: spec.access_lines(),
            write_kind: spec.rw.write_kind(),
            regions: job.regions.clone(),
            align: job.align,
            distribution: spec.random_distribution.clone(),
            randommap: spec.randommap,
            seed: spec.randseed,
            seq_delta: spec.rw_delta,
            seq_run: spec.rw_seq_run,
            identical: spec.offsets.identical,
            unaligned: spec.offsets.bs_unaligned.then_some(spec.bsrange).flatten(),
            // Checked by the plan.
            strided: spec.strided().ok().flatten(),
            file_service: spec.files.service,
            open_limit: crate::engines::files::open_set_limit(job),
        },
        runtime: job.runtime,
        io_limit: job.io_limit,
        ramp: spec.ramp_time,
        rate_iops: spec.rate_iops.filter(|_| !ignore_think),
        syncs: spec.syncs.periodic(spec.fsync),
        log_interval: spec.log_interval,
        targets: job.targets.len(),
        serialize_overlap: spec.offsets.serialize_overlap,
        min_rate: (spec.ratemin != [0, 0] || spec.rate_iops_min != [0, 0]).then_some(
            crate::job::rate::MinRate {
                bytes: spec.ratemin,
                iops: spec.rate_iops_min,
                cycle_ns: spec.rate_cycle_ms.saturating_mul(1_000_000),
            },
        ),
        pace: crate::job::rate::RateConfig {
            bytes: spec.rate,
            // rate_ignore_thinktime moves the rate's schedule on through
            // each pause: the job's pacer, not the loop's rate_iops clock.
            iops: match spec.rate_iops {
                Some(r) if ignore_think => [r, r],
                _ => spec.rate_iops_dir.unwrap_or([0, 0]),
            },
            poisson: spec.rate_poisson,
        },
        // fio's buffer_pattern fills every write that verify does not.
        verify: job.verify.clone().or_else(|| {
            spec.verify
                .buffer_pattern
                .clone()
                .map(|p| crate::job::types::Content {
                    kind: crate::job::types::VerifyKind::Pattern,
                    interval: spec.max_bs() as usize,
                    pattern: Some(p),
                    header_at: 0,
                })
        }),
        // fio checks a job's own reads only when it does not also write
        // (a mixed job's reads may meet blocks it has not written yet); a
        // writing job's blocks are checked by its read-back.
        check_reads: spec.verify.do_verify && job.verify.is_some() && !job.writes,
        logs: spec.logs.clone(),
        log_name: (spec.name.clone(), number),
        live: None,
        status: None,
        iolog: spec.files.iolog.clone(),
        trim: trims(job),
        lockfile: spec.locks.mode,
        replay: job
            .replay
            .clone()
            .map(|log| crate::job::iolog_replay::Replay::new(log, job.spec.replay.no_stall)),
        lazy_files: crate::engines::files::lazy(job),
        op_per_file: crate::engines::files::path_engine(spec)
            .map(|_| job.regions.iter().map(|r| r.end - r.start).sum()),
        group_end: None,
        stream_end: spec.front.streams().then(Default::default),
        zbd: None,
        // fio: number_ios counts over all loops of the job; create_only
        // ends the job after its files are laid out, with no I/O.
        io_count_limit: if spec.syncs.create_only {
            Some(0)
        } else {
            (spec.number_ios > 0).then(|| spec.number_ios.saturating_mul(u64::from(spec.loops)))
        },
        think: (!spec.thinktime.is_zero()).then(|| crate::job::io_loop::Think {
            ns: spec.thinktime.as_nanos() as u64,
            spin_ns: spec.thinktime_spin.as_nanos() as u64,
            blocks: spec.thinktime_blocks.max(1),
            on_completion: spec.think.on_completion,
            iotime_ns: spec.think.iotime_us.saturating_mul(1000),
            // fio: thinktime_iotime alone thinks by time only.
            by_blocks: spec.think.iotime_us == 0
                || spec.given.iter().any(|(k, _)| k == "thinktime_blocks"),
            rate_ignore: spec.think.rate_ignore,
        }),
        extras: crate::job::error_policy::LoopExtras {
            policy: spec.errkeys.policy.clone(),
            verify: crate::job::types::VerifyExtras {
                // experimental_verify keeps no log of the writes to check
                // as the job goes (fio's log_io_piece is skipped).
                backlog: if spec.verify.experimental {
                    0
                } else {
                    spec.errkeys.verify.backlog
                },
                ..spec.errkeys.verify
            },
            target_names: Vec::new(),
            // refill_buffers: the filler with no dedupe or compression
            // gives every write new random data.
            dedupe: ((spec.errkeys.dedupe.active() || spec.buffers.refill) && job.verify.is_none())
                .then(|| {
                    crate::job::dedupe::DedupeSetup {
                        spec: spec.errkeys.dedupe,
                        min_write: spec.min_bs(),
                        size: job
                            .io_limit
                            .unwrap_or_else(|| job.regions.iter().map(|r| r.end - r.start).sum()),
                        index: number.saturating_sub(1),
                        // The run's other jobs are filled in by the runner
                        // (`dedupe_global`).
                        states: (1..=number)
                            .map(|n| crate::job::dedupe::job_state(spec.randseed, n))
                            .collect(),
                        seed: crate::job::dedupe::job_state(spec.randseed ^ 0x5eed, number),
                    }
                }),
        },

        // Joined by the job's thread while it sets up (see run_one).
        flow: None,
        cmdprio: crate::job::prio::CmdPrio::new(&spec.prio, spec.randseed),
        batch: spec.batch.resolve(spec.iodepth),
        ioprio: spec.prio.thread_ioprio().unwrap_or(0),
        lat: spec.lat_target,
        steady: spec
            .steady
            .enabled()
            .then(|| crate::job::steadystate::SteadyJob::own(spec.steady)),
    }
}

/// What watches a running job: its progress counter, its live counters,
/// its group's `exitall` flag and its `--status-interval` cell.
type JobWatch<'a> = (
    &'a AtomicU64,
    &'a Arc<LiveCounters>,
    &'a Option<Arc<AtomicBool>>,
    Option<&'a Arc<StatusCell>>,
    &'a Option<crate::job::steadystate::SteadyJob>,
);

fn run_one(
    plan: &Plan,
    (claims, zones, sets): (
        &[Option<Claim>],
        &[Option<crate::job::zbd::SharedZones>],
        &crate::engines::files::RunSets,
    ),
    job: &PlannedJob,
    ticket: Ticket<'_>,
    stop: &AtomicBool,
    (progress, live, group_end, status, steady): JobWatch<'_>,
    finished: &[AtomicBool],
) -> Result<JobOutcome, RunError> {
    let spec = &job.spec;
    let number = plan
        .jobs
        .iter()
        .position(|j| std::ptr::eq(j, job))
        .map_or(1, |i| i + 1);
    let mut cfg = job_config(job, number);
    cfg.extras.target_names = job
        .targets
        .iter()
        .map(|&t| plan.targets[t].path.display().to_string())
        .collect();
    if let Some(d) = cfg.extras.dedupe.as_mut() {
        // fio spreads a global working set over every job of the run.
        d.states = (1..=plan.jobs.len())
            .map(|n| crate::job::dedupe::job_state(spec.randseed, n))
            .collect();
    }
    cfg.live = Some(live.clone());
    cfg.group_end = group_end.clone();
    cfg.status = status.cloned();
    cfg.steady = steady.clone();
    if let (Some(z), Some(&ti), Some(r)) = (&job.zbd, job.targets.first(), job.regions.first()) {
        if let Some(Some(set)) = zones.get(ti) {
            cfg.zbd = Some(crate::job::zbd::JobZones::new(
                set.clone(),
                z.clone(),
                number as u32,
                *r,
            ));
        }
    }
    let fail = |source| RunError::Job {
        job: spec.name.clone(),
        source,
    };
    // The thread's placement and priority (before its engine and buffers,
    // as fio), and its place in its flow (before any job of the group
    // starts, so every weight counts from the first I/O).
    crate::job::prio::set_up_thread(spec).map_err(|e| fail(JobError::Config(e)))?;
    spec.cpus
        .apply(number)
        .map_err(|e| fail(JobError::Config(e)))?;
    cfg.flow = crate::job::flow::join(&spec.flow);
    let front = spec.front.get();
    let ctl = Ctl {
        stop,
        progress,
        finished,
    };
    let r = JobRun {
        plan,
        claims,
        sets,
        job,
        cfg: &cfg,
        ticket,
        ctl,
    };
    spec.hooks
        .run(&spec.name, "prerun")
        .map_err(|e| fail(JobError::Config(e)))?;
    let mut o = front.run(r)?;
    spec.hooks
        .run(&spec.name, "postrun")
        .map_err(|e| fail(JobError::Config(e)))?;
    if front.on_targets() {
        for e in o.errors.iter_mut() {
            let Some(&ti) = job.targets.get(e.target as usize) else {
                continue;
            };
            e.unreadable = narrow_failed_read(&plan.targets[ti], e);
            // Every block of it failed again: the device no longer
            // answers, and narrowing the other failed reads would only
            // take time (they stay listed, not narrowed).
            if e.unreadable
                .as_ref()
                .is_some_and(|u| wholly(u, e, plan.targets[ti].logical_block))
            {
                break;
            }
        }
    }
    Ok(o)
}

/// The exact unreadable blocks of a failed read on a block device: the
/// read's range read again with synchronous O_DIRECT reads (a descriptor of
/// its own, read-only), failing pieces halved down to single blocks by
/// the engine's narrowing ([`drivelab_engine::narrow::narrow`]), as inclusive LBA
/// ranges. None for writes, trims and syncs (a run does not rewrite a
/// drive to find its bad blocks), for files, and when the device cannot be
/// opened again (it is gone).
fn narrow_failed_read(t: &PlannedTarget, e: &IoFailure) -> Option<Vec<(u64, u64)>> {
    let lbs = u64::from(t.logical_block.max(1));
    let (off, len) = (e.offset, u64::from(e.len));
    if e.op != Op::Read || !t.is_block || len == 0 || off % lbs != 0 || len % lbs != 0 {
        return None;
    }
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&t.path)
        .ok()?;
    let mut scratch = Vec::new();
    let mut read = |o: u64, l: u64| -> Result<(), String> {
        let buf = drivelab_engine::narrow::aligned(&mut scratch, l as usize);
        match f.read_at(buf, o) {
            Ok(k) if k as u64 == l => Ok(()),
            Ok(k) => Err(format!("short read: {k} of {l} bytes")),
            Err(err) => Err(err.to_string()),
        }
    };
    let why = std::io::Error::from_raw_os_error(e.errno).to_string();
    let n = drivelab_engine::narrow::narrow(off, len, lbs, why, &mut read);
    Some(lba_ranges(&n.bad, lbs))
}

/// Whether `unreadable` is every block of the failed I/O `e` (more than
/// one block: a single bad block is a medium error like any other).
fn wholly(unreadable: &[(u64, u64)], e: &IoFailure, lbs: u32) -> bool {
    let lbs = u64::from(lbs.max(1));
    let (first, blocks) = (e.offset / lbs, u64::from(e.len) / lbs);
    blocks > 1 && unreadable == [(first, first + blocks - 1)]
}

/// Failed byte ranges (offset, length, error) as inclusive LBA ranges;
/// adjacent ones are one range whatever their errors.
fn lba_ranges(bad: &[(u64, u64, String)], lbs: u64) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for &(o, l, _) in bad {
        let (first, last) = (o / lbs, (o + l) / lbs - 1);
        match ranges.last_mut() {
            Some(r) if r.1 + 1 == first => r.1 = last,
            _ => ranges.push((first, last)),
        }
    }
    ranges
}

/// Device names to sample: every distinct device under a target.
fn device_names(plan: &Plan) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for t in &plan.targets {
        if let Some(d) = &t.device {
            if !v.contains(&d.name) {
                v.push(d.name.clone());
            }
        }
    }
    v
}

#[derive(Default)]
struct DeviceWindow {
    total: Option<Delta>,
    per_second: Vec<(u64, u64)>,
    /// Every sample (the short last one too, so the series sums to `total`).
    series: Vec<DeviceSecond>,
}

fn add_delta(acc: &mut Option<Delta>, d: &Delta) {
    match acc {
        None => *acc = Some(d.clone()),
        Some(a) => a.accumulate(d),
    }
}

/// Run the plan. `stop` ends it early (Ctrl-C): the results so far are
/// still returned, marked interrupted. `on_progress` is called about once a
/// second from the calling thread.
pub fn execute(
    plan: &Plan,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunReport, RunError> {
    execute_with_status(plan, stop, on_progress, None)
}

/// [`execute`], with fio's `--status-interval`: `status.on_status` gets a
/// report of every job so far every `status.every` (see [`crate::run::status`]).
pub fn execute_with_status(
    plan: &Plan,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
    mut status: Option<StatusOptions<'_>>,
) -> Result<RunReport, RunError> {
    let started = SystemTime::now();
    let (mut clock, cells) = status_start(status.as_ref(), plan.jobs.len());
    let (sets, owned) = claim_run(plan)?;
    let sets = &sets;
    let claims = &owned;
    let zones = crate::job::zbd::open_sets(plan, claims)
        .map_err(|(path, source)| RunError::Prepare { path, source })?;
    let zones = &zones[..];
    let names = device_names(plan);
    let mut windows: Vec<DeviceWindow> = names.iter().map(|_| DeviceWindow::default()).collect();
    let mut outcomes: Vec<Option<JobOutcome>> = vec![None; plan.jobs.len()];
    let finished: Vec<AtomicBool> = plan.jobs.iter().map(|_| AtomicBool::new(false)).collect();
    let finished = &finished[..];
    let mut first_error: Option<RunError> = None;
    let groups = stonewall_groups(plan);
    // exit_what=all: a finished exitall job ends every job; later stonewall
    // groups never start.
    let all_end = AtomicBool::new(false);
    let all_end = &all_end;
    // The device series' time zero: when measurement starts (the first
    // sampler), as the engine series counts from its measurement start.
    let mut series_origin: Option<Instant> = None;
    for group in &groups {
        if stop.load(Ordering::Relaxed)
            || all_end.load(Ordering::Relaxed)
            || matches!(first_error, Some(RunError::Spawn { .. }))
        {
            break;
        }
        let gate = StartGate::new();
        let counters: Vec<AtomicU64> = group.iter().map(|_| AtomicU64::new(0)).collect();
        let live: Vec<Arc<LiveCounters>> = group.iter().map(|_| Arc::default()).collect();
        let done = AtomicUsize::new(0);
        let (flags, group_end, steady) = group_ends(plan, group, &live);
        let flags = &flags;
        let GroupShape {
            ramp,
            planned,
            bytes_planned,
        } = GroupShape::of(plan, group);
        let results: Vec<Result<JobOutcome, RunError>> = std::thread::scope(|s| {
            let (handles, spawn_error) = spawn_jobs(
                s,
                GroupJobs {
                    plan,
                    targets: (claims, zones, sets),
                    group,
                    gate: &gate,
                    stop,
                    counters: &counters,
                    live: &live,
                    group_end: &group_end,
                    steady: &steady,
                    cells: &cells,
                    flags,
                    all_end,
                    finished,
                    done: &done,
                },
            );
            let started = handles.len();
            // Jobs never started count as done for the progress loop.
            let missing = group.len() - started;
            let go = spawn_error.is_none();
            let mut sampler = open_gate(&gate, (started, go), ramp, &names, &mut series_origin);
            let t_start = Instant::now();
            if let Some(c) = clock.as_mut() {
                c.new_group();
            }
            let group_cells: Vec<Arc<StatusCell>> = group
                .iter()
                .filter_map(|&i| cells.get(i).cloned())
                .collect();
            let mut last_sample = t_start;
            let mut meter = ProgressMeter::new(t_start);
            let measure_from = t_start + ramp;
            loop {
                let all_done = done.load(Ordering::Acquire) + missing >= group.len();
                let now = Instant::now();
                sample_devices(
                    (&mut sampler, &mut last_sample, &mut series_origin),
                    now,
                    now >= measure_from,
                    all_done,
                    &names,
                    &mut windows,
                );
                if now.duration_since(meter.last) >= Duration::from_secs(1) {
                    let p = meter.read(now, &counters, &live);
                    on_progress(&Progress {
                        elapsed_s: now.duration_since(t_start).as_secs_f64(),
                        planned_s: planned,
                        running: started.saturating_sub(done.load(Ordering::Acquire)),
                        ramping: now < measure_from,
                        bytes_planned,
                        ..p
                    });
                }
                if all_done {
                    break;
                }
                let mut nap = Duration::from_millis(20);
                if let (Some(c), Some(st)) = (clock.as_mut(), status.as_mut()) {
                    if c.poll(now, &group_cells) {
                        let so_far = snapshot_outcomes(plan, &cells, &outcomes, group[0]);
                        let now = SystemTime::now();
                        let report =
                            build_report(plan, claims, &names, &windows, &so_far, now, false);
                        (st.on_status)(&report);
                    }
                    nap = nap.min(c.sleep_cap(Instant::now()));
                }
                std::thread::sleep(nap);
            }
            join_jobs(handles, spawn_error)
        });
        keep_results(group, results, &mut outcomes, &mut first_error);
    }
    if all_end.load(Ordering::Relaxed) {
        list_groups_never_started(plan, &groups, finished, &mut outcomes);
    }
    if let Some(e) = first_error.filter(|e| leaves_run_incomplete(e, &outcomes)) {
        return Err(e);
    }
    let report = build_report(
        plan,
        claims,
        &names,
        &windows,
        &outcomes,
        started,
        stop.load(Ordering::Relaxed),
    );
    // fio's unlink: the jobs' files go once the run is over.
    if let Some((path, source)) = sets.unlink_after(plan, owned).into_iter().next() {
        return Err(RunError::Prepare { path, source });
    }
    Ok(report)
}

/// What the job threads of one stonewall group share, borrowed from
/// [`execute_with_status`] for the group's scope.
struct GroupJobs<'e> {
    plan: &'e Plan,
    targets: (
        &'e [Option<Claim>],
        &'e [Option<crate::job::zbd::SharedZones>],
        &'e crate::engines::files::RunSets,
    ),
    /// The group's job indices.
    group: &'e [usize],
    gate: &'e StartGate,
    stop: &'e AtomicBool,
    /// Per job of the group: I/Os done, live counters, its reporting
    /// group's end flag and its steady-state judge.
    counters: &'e [AtomicU64],
    live: &'e [Arc<LiveCounters>],
    group_end: &'e [Option<Arc<AtomicBool>>],
    steady: &'e [Option<crate::job::steadystate::SteadyJob>],
    /// Per job of the plan: its status cell (none without status snapshots).
    cells: &'e [Arc<StatusCell>],
    flags: &'e crate::job::flow::GroupFlags,
    all_end: &'e AtomicBool,
    finished: &'e [AtomicBool],
    /// Jobs of the group finished.
    done: &'e AtomicUsize,
}

type JobHandle<'s> = std::thread::ScopedJoinHandle<'s, Result<JobOutcome, RunError>>;

/// One thread per job of the group, each waiting at the start gate;
/// stops at the first thread the system refuses, with that error.
fn spawn_jobs<'s, 'e: 's>(
    s: &'s std::thread::Scope<'s, 'e>,
    g: GroupJobs<'e>,
) -> (Vec<JobHandle<'s>>, Option<RunError>) {
    let mut handles = Vec::with_capacity(g.group.len());
    for ((((&i, ctr), live), group_end), steady) in g
        .group
        .iter()
        .zip(g.counters)
        .zip(g.live)
        .zip(g.group_end)
        .zip(g.steady)
    {
        let job = &g.plan.jobs[i];
        let cell = g.cells.get(i);
        let GroupJobs {
            plan,
            targets,
            gate,
            stop,
            flags,
            all_end,
            finished,
            done,
            ..
        } = g;
        let spawned = std::thread::Builder::new()
            .name(format!("job-{}", job.spec.name))
            .spawn_scoped(s, move || {
                let r = run_one(
                    plan,
                    targets,
                    job,
                    gate.ticket(),
                    stop,
                    (ctr, live, group_end, cell, steady),
                    finished,
                );
                if let Some(c) = cell {
                    c.finish(r.as_ref().ok());
                }
                // exitall, or exitall_on_error and the job failed.
                let failed = r.as_ref().map_or(true, |o| {
                    o.verify_failure.is_some() || o.errors.iter().any(|e| !e.passed)
                });
                if job.spec.exit.exitall || (job.spec.exit.on_error && failed) {
                    flags.finished(job, all_end);
                }
                finished[i].store(true, Ordering::Release);
                done.fetch_add(1, Ordering::Release);
                r
            });
        match spawned {
            Ok(h) => handles.push(h),
            Err(source) => {
                let e = RunError::Spawn {
                    job: job.spec.name.clone(),
                    source,
                };
                return (handles, Some(e));
            }
        }
    }
    (handles, None)
}

/// The run's file sets claimed and laid out, then every target claimed for
/// writing, then e4defrag's donor files: nothing is written before every
/// claim is held.
fn claim_run(
    plan: &Plan,
) -> Result<(crate::engines::files::RunSets, Vec<Option<Claim>>), RunError> {
    let mut sets = crate::engines::files::RunSets::claim(plan).map_err(|e| match e {
        crate::engines::files::SetError::Claim(c) => RunError::Claim(c),
        crate::engines::files::SetError::Prepare(path, source) => {
            RunError::Prepare { path, source }
        }
    })?;
    let owned = claim_targets(plan, &sets)?;
    sets.donors = crate::engines::e4defrag::Donors::claim(plan, &owned)?;
    Ok((sets, owned))
}

/// The end flags and steady-state judges of a group's jobs.
///
/// exitall: a job of the group with it that finishes ends others: its
/// reporting group's (fio's default exit_what=group), every running job
/// (stonewall), or every job (all). Each job's flag is its reporting
/// group's (group or new_group). steadystate: the last job of a reported
/// group judges.
#[allow(clippy::type_complexity)]
fn group_ends(
    plan: &Plan,
    group: &[usize],
    live: &[Arc<LiveCounters>],
) -> (
    crate::job::flow::GroupFlags,
    Vec<Option<Arc<AtomicBool>>>,
    Vec<Option<crate::job::steadystate::SteadyJob>>,
) {
    let flags = crate::job::flow::GroupFlags::new(group.iter().map(|&i| &plan.jobs[i]));
    let group_end = group
        .iter()
        .map(|&i| flags.flag(plan.jobs[i].group))
        .collect();
    let steady = crate::job::steadystate::SteadyJob::for_group(
        &group
            .iter()
            .map(|&i| {
                let j = &plan.jobs[i];
                (j.group, j.spec.group_reporting, j.spec.steady)
            })
            .collect::<Vec<_>>(),
        live,
    );
    (flags, group_end, steady)
}

/// One turn of a group's device sampling: the sampler starts once
/// measuring starts (`measuring`; its start is the series' time zero,
/// `origin`, if none is yet), then samples every second and once more
/// when every job is done, after the devices go idle.
fn sample_devices(
    (sampler, last_sample, origin): (&mut Option<Sampler>, &mut Instant, &mut Option<Instant>),
    now: Instant,
    measuring: bool,
    all_done: bool,
    names: &[String],
    windows: &mut [DeviceWindow],
) {
    if sampler.is_none() && measuring {
        *sampler = Sampler::new(names.to_vec()).ok();
        *last_sample = now;
        if sampler.is_some() {
            origin.get_or_insert(now);
        }
    }
    if let Some(sm) = sampler.as_mut() {
        let since = now.duration_since(*last_sample);
        if since >= Duration::from_secs(1) || all_done {
            if all_done {
                // The last completions may not be counted yet.
                sm.wait_idle(Duration::from_millis(200));
            }
            if let Ok(ds) = sm.sample() {
                add_device_sample(windows, &ds, *origin);
            }
            *last_sample = now;
        }
    }
}

/// `--status-interval`'s clock, started, and one status cell per job;
/// neither without it.
fn status_start(
    status: Option<&StatusOptions<'_>>,
    jobs: usize,
) -> (Option<StatusClock>, Vec<Arc<StatusCell>>) {
    let clock = status.map(|s| {
        let mut c = StatusClock::new(s.every);
        c.start(Instant::now());
        c
    });
    let cells = match status {
        Some(_) => (0..jobs).map(|_| Arc::default()).collect(),
        None => Vec::new(),
    };
    (clock, cells)
}

/// Whether the run's first error ends it with no report: no job has an
/// outcome, or a job the system would not start left the run incomplete.
fn leaves_run_incomplete(e: &RunError, outcomes: &[Option<JobOutcome>]) -> bool {
    outcomes.iter().all(Option::is_none) || matches!(e, RunError::Spawn { .. })
}

/// The plan's stonewall groups, as job indices: a job with `stonewall`
/// starts a new group.
fn stonewall_groups(plan: &Plan) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, j) in plan.jobs.iter().enumerate() {
        if groups.is_empty() || j.stonewall {
            groups.push(Vec::new());
        }
        if let Some(g) = groups.last_mut() {
            g.push(i);
        }
    }
    groups
}

/// What a stonewall group's progress line and device sampling know of
/// it before it starts.
struct GroupShape {
    /// The longest `ramp_time` of its jobs.
    ramp: Duration,
    /// Its planned length in seconds (ramp included), when every job has a runtime.
    planned: Option<f64>,
    /// Its planned bytes, when every job has an I/O limit.
    bytes_planned: Option<u64>,
}

impl GroupShape {
    fn of(plan: &Plan, group: &[usize]) -> GroupShape {
        GroupShape {
            ramp: group
                .iter()
                .map(|&i| plan.jobs[i].spec.ramp_time)
                .max()
                .unwrap_or_default(),
            planned: group
                .iter()
                .map(|&i| {
                    plan.jobs[i]
                        .runtime
                        .map(|r| (r + plan.jobs[i].spec.ramp_time).as_secs_f64())
                })
                .try_fold(0.0f64, |m, r| r.map(|r| m.max(r))),
            bytes_planned: group
                .iter()
                .map(|&i| plan.jobs[i].io_limit)
                .sum::<Option<u64>>(),
        }
    }
}

/// One device sample added to every device's window: its totals, a point
/// of its per-second series (timed from `origin`) and, for a sample of
/// half a second or more, the figures of the idle check.
fn add_device_sample(windows: &mut [DeviceWindow], ds: &[Delta], origin: Option<Instant>) {
    let sampled = Instant::now();
    for (w, d) in windows.iter_mut().zip(ds) {
        add_delta(&mut w.total, d);
        if !d.elapsed.is_zero() {
            let from = sampled.checked_sub(d.elapsed).unwrap_or(sampled);
            let t_s = origin
                .map(|o| from.saturating_duration_since(o).as_secs_f64())
                .unwrap_or(0.0);
            w.series.push(DeviceSecond::from_delta(t_s, d));
        }
        // A final sample shorter than half a second says little about
        // idleness; leave it out.
        if d.elapsed >= Duration::from_millis(500) {
            w.per_second.push((
                d.bytes_read + d.bytes_written + d.bytes_discarded,
                d.read_ios + d.write_ios + d.discard_ios,
            ));
        }
    }
}

/// The counters of a group's jobs at its last progress line, for the
/// rates of the next.
struct ProgressMeter {
    /// When the last line was made.
    last: Instant,
    ios: u64,
    bytes: [u64; 3],
    dir_ios: [u64; 3],
}

impl ProgressMeter {
    fn new(t_start: Instant) -> ProgressMeter {
        ProgressMeter {
            last: t_start,
            ios: 0,
            bytes: [0; 3],
            dir_ios: [0; 3],
        }
    }

    /// The rates and bytes since the last line (the fields the counters
    /// give; the caller fills the rest), and `now` becomes the last line.
    fn read(
        &mut self,
        now: Instant,
        counters: &[AtomicU64],
        live: &[Arc<LiveCounters>],
    ) -> Progress {
        let ios: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        let dt = now.duration_since(self.last).as_secs_f64();
        let sum = |f: fn(&LiveCounters) -> &[AtomicU64; 3]| -> [u64; 3] {
            std::array::from_fn(|k| live.iter().map(|l| f(l)[k].load(Ordering::Relaxed)).sum())
        };
        let (bytes, dir_ios) = (sum(|l| &l.bytes), sum(|l| &l.ios));
        let rate = |now: u64, before: u64| now.saturating_sub(before) as f64 / dt;
        let p = Progress {
            elapsed_s: 0.0,
            planned_s: None,
            iops: ios.saturating_sub(self.ios) as f64 / dt,
            running: 0,
            ramping: false,
            dir_bw: std::array::from_fn(|k| rate(bytes[k], self.bytes[k])),
            dir_iops: std::array::from_fn(|k| rate(dir_ios[k], self.dir_ios[k])),
            bytes_done: bytes.iter().sum(),
            bytes_planned: None,
        };
        self.bytes = bytes;
        self.dir_ios = dir_ios;
        self.ios = ios;
        self.last = now;
        p
    }
}

/// The group's job results, in job order, then the error of the job the
/// system would not start; a thread that panicked is an engine failure.
fn join_jobs(
    handles: Vec<JobHandle<'_>>,
    spawn_error: Option<RunError>,
) -> Vec<Result<JobOutcome, RunError>> {
    let mut results: Vec<Result<JobOutcome, RunError>> = handles
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| {
                Err(RunError::Engine {
                    engine: "job thread",
                    source: std::io::Error::other("the job thread panicked"),
                })
            })
        })
        .collect();
    results.extend(spawn_error.map(Err));
    results
}

/// Lets the group's `started` jobs go together once all are ready, or
/// none when one could not be started (`go` false). Without a ramp the
/// device counters' baseline is read between the two: read after the
/// release, a loaded host could let the first I/Os complete before it;
/// the first sampler's start is the device series' time zero (`origin`).
fn open_gate(
    gate: &StartGate,
    (started, go): (usize, bool),
    ramp: Duration,
    names: &[String],
    origin: &mut Option<Instant>,
) -> Option<Sampler> {
    gate.all_arrived(started);
    let sampler = if ramp.is_zero() {
        Sampler::new(names.to_vec()).ok()
    } else {
        None
    };
    gate.release(go);
    if sampler.is_some() {
        origin.get_or_insert_with(Instant::now);
    }
    sampler
}

/// A group's results into the run's outcomes; the run's first error is
/// the cause, not a job called off because of it.
fn keep_results(
    group: &[usize],
    results: Vec<Result<JobOutcome, RunError>>,
    outcomes: &mut [Option<JobOutcome>],
    first_error: &mut Option<RunError>,
) {
    for (&i, r) in group.iter().zip(results) {
        match r {
            Ok(o) => outcomes[i] = Some(o),
            Err(e) => {
                let called_off = matches!(e, RunError::NotStarted { .. });
                if first_error.is_none()
                    || !called_off && matches!(first_error, Some(RunError::NotStarted { .. }))
                {
                    *first_error = Some(e);
                }
            }
        }
    }
}

/// exit_what=all kept the later groups from starting: listed, as fio
/// lists them, with no I/O.
fn list_groups_never_started(
    plan: &Plan,
    groups: &[Vec<usize>],
    finished: &[AtomicBool],
    outcomes: &mut [Option<JobOutcome>],
) {
    for g in groups {
        if g.iter()
            .all(|&i| outcomes[i].is_none() && !finished[i].load(Ordering::Relaxed))
        {
            for &i in g {
                outcomes[i] = Some(status::nothing_done(&plan.jobs[i]));
            }
        }
    }
}

/// Every job's outcome so far, for a `--status-interval` snapshot: for the
/// jobs before `current` (the first job of the group running), the final
/// outcome of their finished groups (none for a job that failed, as in the
/// final report); for the others their cell's latest copy, else nothing
/// done (not started yet).
fn snapshot_outcomes(
    plan: &Plan,
    cells: &[Arc<StatusCell>],
    outcomes: &[Option<JobOutcome>],
    current: usize,
) -> Vec<Option<JobOutcome>> {
    plan.jobs
        .iter()
        .zip(cells)
        .zip(outcomes)
        .enumerate()
        .map(|(i, ((job, cell), o))| {
            if i < current {
                return o.clone();
            }
            Some(status::so_far(cell, || status::nothing_done(job)))
        })
        .collect()
}

/// Latency from a histogram alone (min, max and percentiles exact to the
/// histogram's bound, mean from its exact sum; no stddev).
fn hist_report(h: &drivelab_stats::LatencyHistogram) -> LatReport {
    let mut percentile = BTreeMap::new();
    for (p, v) in h.percentiles(&FIO_DEFAULT_PERCENTILES) {
        percentile.insert(percentile_key(p), v);
    }
    LatReport {
        min: h.min().unwrap_or(0),
        max: h.max().unwrap_or(0),
        mean: h.mean().unwrap_or(0.0),
        stddev: 0.0,
        n: h.count(),
        percentile,
        bins: drivelab_report::jsonplus::fio_bins(h),
    }
}

/// A direction's latency: the histogram's figures, with mean and stddev
/// from the running moments.
fn lat_report(d: &DirStats) -> LatReport {
    if d.ios == 0 {
        return LatReport::default();
    }
    LatReport {
        mean: d.moments.mean(),
        stddev: d.moments.stddev(),
        ..hist_report(&d.lat)
    }
}

/// A direction's report; `samples`: its bandwidth (KiB/s) and IOPS
/// samples, when taken.
fn dir_report(
    d: &DirStats,
    runtime_ns: u64,
    short: u64,
    samples: Option<(&SampleStat, &SampleStat)>,
) -> DirReport {
    let (bw_s, iops_s) = match samples {
        Some((b, i)) => (b.clone(), i.clone()),
        None => (SampleStat::default(), SampleStat::default()),
    };
    let secs = runtime_ns as f64 / 1e9;
    let bw_bytes = if secs > 0.0 {
        (d.bytes as f64 / secs) as u64
    } else {
        0
    };
    let lat = lat_report(d);
    DirReport {
        io_bytes: d.bytes,
        io_kbytes: d.bytes / 1024,
        bw_bytes,
        bw: bw_bytes / 1024,
        iops: if secs > 0.0 { d.ios as f64 / secs } else { 0.0 },
        runtime: if d.ios > 0 { runtime_ns / 1_000_000 } else { 0 },
        total_ios: d.ios,
        short_ios: short,
        drop_ios: 0,
        slat_ns: LatReport::default(),
        clat_ns: lat.clone(),
        // fio keeps bins and percentiles for clat only (lat_percentiles=0).
        lat_ns: LatReport {
            percentile: BTreeMap::new(),
            bins: Default::default(),
            ..lat
        },
        // fio lists them when two or more priorities have samples.
        prios: if d.prios.iter().filter(|p| p.moments.count() > 0).count() >= 2 {
            d.prios
                .iter()
                .map(|p| drivelab_report::model::PrioReport {
                    prioclass: u32::from(p.ioprio >> drivelab_engine::sched::IOPRIO_CLASS_SHIFT),
                    prio: u32::from(p.ioprio & 7),
                    clat_ns: LatReport {
                        mean: p.moments.mean(),
                        stddev: p.moments.stddev(),
                        ..hist_report(&p.lat)
                    },
                })
                .collect()
        } else {
            Vec::new()
        },
        bw_min: bw_s.min,
        bw_max: bw_s.max,
        // Set against the group's total once every job is known.
        bw_agg: 0.0,
        bw_mean: bw_s.moments.mean(),
        bw_dev: bw_s.moments.stddev(),
        bw_samples: bw_s.samples(),
        iops_min: iops_s.min,
        iops_max: iops_s.max,
        iops_mean: iops_s.moments.mean(),
        iops_stddev: iops_s.moments.stddev(),
        iops_samples: iops_s.samples(),
        folded: false,
        lat_from_intended_ns: d
            .lat_intended
            .as_ref()
            .filter(|_| d.ios > 0)
            .map(|h| LatReport {
                mean: d.intended_moments.mean(),
                stddev: d.intended_moments.stddev(),
                ..hist_report(h)
            }),
    }
}

fn op_name(op: drivelab_engine::io::Op) -> &'static str {
    match op {
        drivelab_engine::io::Op::Read => "read",
        drivelab_engine::io::Op::Write => "write",
        drivelab_engine::io::Op::Trim => "trim",
        drivelab_engine::io::Op::Fsync => "fsync",
        drivelab_engine::io::Op::Fdatasync => "fdatasync",
        drivelab_engine::io::Op::SyncRange(_) => "sync_file_range",
    }
}

/// A failed I/O for the report: its device, LBA range (in the target's
/// logical block size) and errno, with the narrowed unreadable blocks.
fn io_error_report(plan: &Plan, job: &PlannedJob, e: &IoFailure) -> IoErrorReport {
    let t = job
        .targets
        .get(e.target as usize)
        .map(|&i| &plan.targets[i]);
    let lbs = t.map_or(512, |t| u64::from(t.logical_block.max(1)));
    let len = u64::from(e.len);
    let span = lba_span(e.op, e.offset, len, lbs);
    IoErrorReport {
        op: op_name(e.op).to_string(),
        device: t.map(|t| t.path.display().to_string()).unwrap_or_default(),
        offset: e.offset,
        len,
        first_lba: span.map(|s| s.0),
        last_lba: span.map(|s| s.1),
        errno: e.errno,
        error: {
            let words = crate::job::latency_target::error_words(&job.spec.lat_target, e.errno);
            match &e.detail {
                Some(d) => format!("{words}: {d}"),
                None => words,
            }
        },
        passed: e.passed,
        unreadable: e.unreadable.as_ref().map(|v| {
            v.iter()
                .map(|&(first_lba, last_lba)| LbaRange {
                    first_lba,
                    last_lba,
                })
                .collect()
        }),
    }
}

/// The inclusive LBA range an I/O covered; none for a flush, which covers
/// no blocks (not "LBA 0-0").
fn lba_span(op: drivelab_engine::io::Op, offset: u64, len: u64, lbs: u64) -> Option<(u64, u64)> {
    (!op.is_sync()).then(|| (offset / lbs, (offset + len.max(1) - 1) / lbs))
}

/// A failed I/O in one line: "read of LBA 4992-5119 (65536 bytes at
/// offset 2555904) on /dev/sdb failed: No data available (os error 61);
/// unreadable: LBA 5000-5003".
pub fn error_words(e: &IoErrorReport) -> String {
    let mut s = match (e.first_lba, e.last_lba) {
        (Some(first), Some(last)) => format!(
            "{} of LBA {}-{} ({} bytes at offset {}) on {} failed: {}",
            e.op, first, last, e.len, e.offset, e.device, e.error
        ),
        _ => format!("{} on {} failed: {}", e.op, e.device, e.error),
    };
    match e.unreadable.as_deref() {
        Some([]) => s.push_str("; every block read fine when read again"),
        Some(v) => {
            let r: Vec<String> = v
                .iter()
                .map(|r| {
                    if r.first_lba == r.last_lba {
                        r.first_lba.to_string()
                    } else {
                        format!("{}-{}", r.first_lba, r.last_lba)
                    }
                })
                .collect();
            s.push_str(&format!("; unreadable: LBA {}", r.join(", ")));
        }
        None => {}
    }
    s
}

/// fio's `job options` of a job: the resolved values drivelab reports,
/// then what was set for the job, as written (so a value the user wrote is
/// shown as written), then its description and verify.
fn job_options(plan: &Plan, job: &PlannedJob) -> BTreeMap<String, String> {
    let spec = &job.spec;
    let mut opts = BTreeMap::new();
    opts.insert("rw".to_string(), spec.rw.name().to_string());
    opts.insert("iodepth".to_string(), spec.iodepth.to_string());
    opts.insert(
        "ioengine".to_string(),
        crate::engines::files::engine_name(spec).to_string(),
    );
    opts.insert("direct".to_string(), u8::from(job.direct).to_string());
    let names = spec.front.filenames(plan, job);
    opts.insert("filename".to_string(), names.join(":"));
    let sizes: Vec<String> = spec
        .access_lines()
        .iter()
        .map(|l| {
            format!(
                "{}/{}/{}r/{}rand",
                l.size, l.weight, l.read_pct, l.random_pct
            )
        })
        .collect();
    opts.insert("access".to_string(), sizes.join(":"));
    if let Some(r) = spec.rate_iops {
        opts.insert("rate_iops".to_string(), r.to_string());
    }
    // fio's job options: what was set for the job, as written (after the
    // resolved values above, so a value the user wrote is shown as written).
    opts.insert("name".to_string(), spec.name.clone());
    opts.insert("bs".to_string(), spec.bs.to_string());
    opts.insert("numjobs".to_string(), spec.numjobs.to_string());
    for (k, v) in &spec.given[spec.global_given.min(spec.given.len())..] {
        if k != "filename" {
            opts.insert(k.clone(), v.clone());
        }
    }
    if let Some(d) = &spec.description {
        opts.insert("description".to_string(), d.clone());
    }
    if let Some(v) = spec.verify.kind {
        opts.insert("verify".to_string(), v.name().to_string());
    }
    opts
}

/// fio's `mixed` direction (`unified_rw_reporting`): reads, writes and
/// trims summed, with the bandwidth and IOPS samples of all three together.
fn mixed_report(spec: &crate::JobSpec, o: &JobOutcome) -> DirReport {
    let mut sum = o.dirs[0].clone();
    sum.merge(&o.dirs[1]);
    sum.merge(&o.dirs[2]);
    let r = &o.samples.rates;
    let short = o.short_ios[..3].iter().sum();
    DirReport {
        drop_ios: o.drop_ios[..3].iter().sum(),
        ..spec.report.shape(
            dir_report(
                &sum,
                o.runtime_ns,
                short,
                Some((&r.mixed_bw, &r.mixed_iops)),
            ),
            &sum,
        )
    }
}

fn job_report(plan: &Plan, job: &PlannedJob, o: &JobOutcome) -> JobReport {
    let spec = &job.spec;
    let opts = job_options(plan, job);
    let rt = o.runtime_ns;
    let total_ios = o.dirs[0].ios + o.dirs[1].ios + o.dirs[2].ios;
    let sm = &o.samples;
    let rates = |d: usize| (&sm.rates.bw[d], &sm.rates.iops[d]);
    let lat_total: u64 = sm.lat.ns.iter().sum::<u64>()
        + sm.lat.us.iter().sum::<u64>()
        + sm.lat.ms.iter().sum::<u64>();
    let mut ms_keys: Vec<String> = LAT_BOUNDS.iter().map(|b| b.to_string()).collect();
    ms_keys.push("2000".to_string());
    ms_keys.push(">=2000".to_string());
    let cpu = o.cpu_user_ns + o.cpu_sys_ns;
    let pct = |ns: u64| {
        if rt > 0 {
            ns as f64 * 100.0 / rt as f64
        } else {
            0.0
        }
    };
    let errors: Vec<IoErrorReport> = o
        .errors
        .iter()
        .map(|e| io_error_report(plan, job, e))
        .collect();
    // In words: the failed I/O that holds blocks that cannot be read (an
    // I/O in flight with it may have failed with it and read fine again),
    // else the first.
    // Errors the job went past (continue_on_error) leave fio's `error` 0.
    let headline = errors
        .iter()
        .filter(|e| !e.passed)
        .find(|e| e.unreadable.as_ref().is_some_and(|u| !u.is_empty()))
        .or(errors.iter().find(|e| !e.passed));
    let error_detail = headline.map(|e| {
        let more = errors.len() - 1;
        let mut s = error_words(e);
        if more > 0 {
            s.push_str(&format!(
                " ({more} more failed I/O{} listed)",
                if more == 1 { "" } else { "s" }
            ));
        }
        s
    });
    // fio's verify failures are EILSEQ, a missed ratemin or rate_iops_min
    // EIO (check_min_rate), a missed max_latency ETIMEDOUT.
    let failure_errno = |m: &String| {
        if m.starts_with("verify") {
            libc::EILSEQ
        } else if m.starts_with("rate_min=") || m.starts_with("rate_iops_min=") {
            libc::EIO
        } else {
            libc::ETIMEDOUT
        }
    };
    JobReport {
        jobname: spec.name.clone(),
        groupid: job.group,
        error: headline
            .map(|e| e.errno)
            .or_else(|| o.verify_failure.as_ref().map(failure_errno))
            // exec: a program that failed on its own (crate::engines::noio::exec).
            .or_else(|| o.program.as_ref().map(|p| p.status))
            // fio: a job that went past its errors reports the first.
            .or_else(|| {
                (spec.errkeys.policy.continues() && o.err_count.first != 0)
                    .then_some(o.err_count.first)
            })
            .unwrap_or(0),
        error_detail: error_detail
            .or_else(|| o.verify_failure.clone())
            .or_else(|| o.program.as_ref().map(|p| p.words.clone())),
        errors,
        total_err: spec.errkeys.policy.continues().then_some(o.err_count.total),
        first_error: spec.errkeys.policy.continues().then_some(o.err_count.first),
        notes: errkeys_notes(spec),
        job_options: opts,
        read: DirReport {
            drop_ios: o.drop_ios[0],
            ..spec.report.shape(
                dir_report(&o.dirs[0], rt, o.short_ios[0], Some(rates(0))),
                &o.dirs[0],
            )
        },
        write: DirReport {
            drop_ios: o.drop_ios[1],
            ..spec.report.shape(
                dir_report(&o.dirs[1], rt, o.short_ios[1], Some(rates(1))),
                &o.dirs[1],
            )
        },
        trim: spec.report.shape(
            dir_report(&o.dirs[2], rt, o.short_ios[2], Some(rates(2))),
            &o.dirs[2],
        ),
        mixed: (spec.output.unified != Unified::None).then(|| mixed_report(spec, o)),
        text_units: spec.output.text_units(),
        block_error_percentiles: spec.output.block_errors,
        sync: SyncReport {
            total_ios: o.dirs[3].ios,
            lat_ns: lat_report(&o.dirs[3]),
        },
        job_runtime: rt / 1_000_000,
        usr_cpu: pct(o.cpu_user_ns),
        sys_cpu: pct(o.cpu_sys_ns),
        ctx: o.ctx_switches,
        eta: 0,
        elapsed: o.samples.elapsed_ns.div_ceil(1_000_000_000),
        majf: o.samples.majf,
        minf: o.samples.minf,
        zone_resets: o.zone_resets,
        iodepth_level: percents(&DEPTH_LEVEL_KEYS, &sm.depth.level),
        iodepth_submit: percents(&DEPTH_BATCH_KEYS, &sm.depth.submit),
        iodepth_complete: percents(&DEPTH_BATCH_KEYS, &sm.depth.complete),
        latency_ns: lat_percents(&LAT_BOUNDS.map(|b| b.to_string()), &sm.lat.ns, lat_total),
        latency_us: lat_percents(&LAT_BOUNDS.map(|b| b.to_string()), &sm.lat.us, lat_total),
        latency_ms: lat_percents(&ms_keys, &sm.lat.ms, lat_total),
        latency_depth: o.latency_depth.unwrap_or(spec.iodepth),
        latency_target: spec.lat_target.target_ns,
        latency_percentile: spec.lat_target.percentile,
        latency_window: spec.lat_target.window.as_micros() as u64,
        steadystate: o.steady.as_ref().map(crate::job::steadystate::report),
        cpu_ns_per_io: if total_ios > 0 {
            cpu as f64 / total_ios as f64
        } else {
            0.0
        },
        timeseries: o
            .series
            .points()
            .into_iter()
            .map(|p| SeriesPoint {
                t_s: p.t_s,
                iops: p.iops,
                bw_bytes: p.bw_bytes,
                lat_mean_ns: p.lat_mean_ns,
                lat_p99_ns: p.lat_p99_ns,
            })
            .collect(),
        ioengine: crate::engines::files::engine_name(spec).to_string(),
    }
}

fn build_report(
    plan: &Plan,
    claims: &[Option<Claim>],
    names: &[String],
    windows: &[DeviceWindow],
    outcomes: &[Option<JobOutcome>],
    started: SystemTime,
    interrupted: bool,
) -> RunReport {
    let since = started.duration_since(UNIX_EPOCH).unwrap_or_default();
    let mut report = RunReport {
        drivelab_version: format!("drivelab-{}", env!("CARGO_PKG_VERSION")),
        fio_version: format!("drivelab-{}", env!("CARGO_PKG_VERSION")),
        timestamp: since.as_secs(),
        timestamp_ms: since.as_millis() as u64,
        time: format_utc(since.as_secs()),
        interrupted,
        claims: claims
            .iter()
            .flatten()
            .map(|c| c.assessment().clone())
            .collect(),
        ..Default::default()
    };
    for j in &plan.jobs {
        if let Some(w) = &j.spec.ioengine_as_written {
            report
                .ioengine_map
                .insert(w.clone(), j.spec.ioengine.name().to_string());
        }
    }
    report
        .ioengine_notes
        .extend(crate::engines::opts::io::notes(
            plan.jobs.iter().map(|j| &j.spec),
        ));
    // group_reporting: one report per reporting group, its jobs summed.
    let mut merged: Vec<(usize, JobOutcome)> = Vec::new();
    for (i, (job, o)) in plan.jobs.iter().zip(outcomes).enumerate() {
        let Some(o) = o else { continue };
        let grouped = job.spec.group_reporting;
        match merged.last_mut() {
            Some((first, acc))
                if grouped
                    && plan.jobs[*first].spec.group_reporting
                    && plan.jobs[*first].group == job.group =>
            {
                merge_outcome(acc, o)
            }
            _ => merged.push((i, o.clone())),
        }
    }
    // fio leaves a job with stats=0 out of the report.
    for (i, o) in merged
        .iter()
        .filter(|(i, _)| plan.jobs[*i].spec.output.stats)
    {
        let mut j = job_report(plan, &plan.jobs[*i], o);
        // unified_rw_reporting=mixed: the directions only as `mixed`.
        if plan.jobs[*i].spec.output.unified == Unified::Mixed {
            for d in [&mut j.read, &mut j.write, &mut j.trim] {
                d.folded = true;
            }
        }
        report.jobs.push(j);
    }
    set_bw_agg(&mut report.jobs);
    // fio's `global options`: a job file's [global] section (the same for
    // every job), as written.
    if let Some(j) = plan.jobs.first() {
        report.global_options = j.spec.given[..j.spec.global_given.min(j.spec.given.len())]
            .iter()
            .cloned()
            .collect();
    }
    let reported = reported_per_device(plan, names, outcomes);
    for ((name, w), rep) in names.iter().zip(windows).zip(&reported) {
        let Some(d) = &w.total else { continue };
        report.disk_util.push(DiskUtil {
            name: name.clone(),
            read_ios: d.read_ios,
            write_ios: d.write_ios,
            read_merges: d.read_merges,
            write_merges: d.write_merges,
            read_ticks: d.read_ticks_ms,
            write_ticks: d.write_ticks_ms,
            in_queue: d.time_in_queue_ms,
            util: d.util() * 100.0,
        });
        let seen = Seen {
            read_bytes: d.bytes_read,
            write_bytes: d.bytes_written,
            discard_bytes: d.bytes_discarded,
            ios: d.read_ios + d.write_ios + d.discard_ios,
            flushes: d.flush_ios,
            queue_ms: d.time_in_queue_ms,
            ticks_ms: d.read_ticks_ms + d.write_ticks_ms + d.discard_ticks_ms,
            elapsed_ms: d.elapsed.as_secs_f64() * 1000.0,
        };
        let mut check = verdict(name, rep, &seen, &w.per_second);
        crate::engines::ucmd::passthrough_check(plan, name, &mut check);
        check.series = w.series.clone();
        report.device_check.push(check);
    }
    report
}

/// What the run asked of each device in `names` (by index): the depth
/// (its largest stonewall group's, groups running one after another),
/// the bytes and I/Os its jobs report there, and how they reached it; the
/// device check compares it with what the device saw.
fn reported_per_device(
    plan: &Plan,
    names: &[String],
    outcomes: &[Option<JobOutcome>],
) -> Vec<Reported> {
    let mut reported: Vec<Reported> = names.iter().map(|_| Reported::default()).collect();
    // Asked depth per device and stonewall group; the device's is its
    // largest group's (groups run one after another).
    let mut asked: BTreeMap<(usize, u32), f64> = BTreeMap::new();
    for (job, o) in plan.jobs.iter().zip(outcomes) {
        if o.is_none() {
            continue;
        }
        let front = job.spec.front;
        if !front.on_targets() {
            continue;
        }
        let depth = if front.queues() {
            f64::from(job.spec.iodepth.max(1))
        } else {
            1.0
        };
        let share = depth / job.targets.len().max(1) as f64;
        for &ti in &job.targets {
            let Some(dev) = &plan.targets[ti].device else {
                continue;
            };
            if let Some(di) = names.iter().position(|n| *n == dev.name) {
                *asked.entry((di, job.group)).or_default() += share;
            }
        }
    }
    for ((di, _), d) in asked {
        reported[di].asked_depth = reported[di].asked_depth.max(d);
    }
    for (job, o) in plan.jobs.iter().zip(outcomes) {
        let Some(o) = o else { continue };
        let spec = &job.spec;
        let paced = spec.rate_iops.is_some()
            || spec.rate_iops_dir.is_some_and(|r| r != [0, 0])
            || spec.rate != [0, 0];
        for (k, &ti) in job.targets.iter().enumerate() {
            let t = &plan.targets[ti];
            let Some(dev) = &t.device else { continue };
            let Some(di) = names.iter().position(|n| *n == dev.name) else {
                continue;
            };
            let pt = o.per_target[k];
            let r = &mut reported[di];
            r.read_bytes += pt[0].1;
            r.write_bytes += pt[1].1;
            // zonemode=zbd: trims are zone resets, which move no bytes.
            let trims = if job.zbd.is_some() { (0, 0) } else { pt[2] };
            r.trim_bytes += trims.1;
            r.ios += pt[0].0 + pt[1].0 + trims.0;
            r.buffered |= !job.direct;
            r.via_filesystem |= !t.is_block;
            r.paced |= paced;
        }
    }
    reported
}

/// What drivelab says about the options of this module's families that it
/// runs its own way.
fn errkeys_notes(spec: &crate::JobSpec) -> Vec<String> {
    let mut notes = Vec::new();
    let x = &spec.errkeys;
    if x.verify.async_threads > 0 && spec.verify.kind.is_some() {
        notes.push(format!(
            "verify_async={}: drivelab checks verify blocks on the job's thread, as reads complete",
            x.verify.async_threads
        ));
    }
    if x.dedupe.active() && spec.verify.kind.is_some() {
        notes.push(
            "dedupe/buffer_compress: verify decides the written data, so these do not apply"
                .to_string(),
        );
    }
    notes
}

/// Add one job's outcome to its reporting group's (fio's group_reporting):
/// I/Os, bytes and latencies summed, the longest runtime, the first error.
fn merge_outcome(acc: &mut JobOutcome, o: &JobOutcome) {
    for (a, b) in acc.dirs.iter_mut().zip(&o.dirs) {
        a.merge(b);
    }
    acc.runtime_ns = acc.runtime_ns.max(o.runtime_ns);
    for (a, b) in acc.short_ios.iter_mut().zip(o.short_ios) {
        *a += b;
    }
    for (a, b) in acc.drop_ios.iter_mut().zip(o.drop_ios) {
        *a += b;
    }
    acc.interrupted |= o.interrupted;
    acc.cpu_user_ns += o.cpu_user_ns;
    acc.cpu_sys_ns += o.cpu_sys_ns;
    acc.ctx_switches += o.ctx_switches;
    acc.samples.merge(&o.samples);
    if let Some(n) = o.zone_resets {
        acc.zone_resets = Some(acc.zone_resets.unwrap_or(0) + n);
    }
    acc.errors.extend(o.errors.iter().cloned());
    acc.err_count.merge(&o.err_count);
    if acc.verify_failure.is_none() {
        acc.verify_failure = o.verify_failure.clone();
    }
    if acc.program.is_none() {
        acc.program = o.program.clone();
    }
    // The group's steady state is its judge's (the last job).
    if o.steady.is_some() {
        acc.steady = o.steady.clone();
    }
}

/// Counts as percentages of their sum, under fio's keys.
fn percents(keys: &[&str], counts: &[u64]) -> OrderedMap<f64> {
    let total: u64 = counts.iter().sum();
    OrderedMap(
        keys.iter()
            .zip(counts)
            .map(|(k, &c)| (k.to_string(), pct_of(c, total)))
            .collect(),
    )
}

/// Latency range counts as percentages of all I/Os.
fn lat_percents(keys: &[String], counts: &[u64], total: u64) -> OrderedMap<f64> {
    OrderedMap(
        keys.iter()
            .zip(counts)
            .map(|(k, &c)| (k.clone(), pct_of(c, total)))
            .collect(),
    )
}

fn pct_of(c: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        c as f64 * 100.0 / total as f64
    }
}

/// fio's `bw_agg`: each job's mean bandwidth sample as a percentage of its
/// group's aggregate bandwidth (the group's bytes over its longest
/// runtime), at most 100.
fn set_bw_agg(jobs: &mut [JobReport]) {
    /// Direction `d` of a job: read, write, trim, then `mixed` if reported.
    fn pick(j: &mut JobReport, d: usize) -> Option<&mut DirReport> {
        match d {
            0 => Some(&mut j.read),
            1 => Some(&mut j.write),
            2 => Some(&mut j.trim),
            _ => j.mixed.as_mut(),
        }
    }
    let groups: Vec<u32> = jobs.iter().map(|j| j.groupid).collect();
    for g in groups {
        for d in 0..4 {
            let (bytes, ms) = jobs
                .iter_mut()
                .filter(|j| j.groupid == g)
                .filter_map(|j| pick(j, d).map(|x| (x.io_bytes, x.runtime)))
                .fold((0u64, 0u64), |(b, m), (xb, xm)| (b + xb, m.max(xm)));
            if bytes == 0 || ms == 0 {
                continue;
            }
            let agg_kib = bytes as f64 * 1000.0 / ms as f64 / 1024.0;
            for j in jobs.iter_mut().filter(|j| j.groupid == g) {
                if let Some(dir) = pick(j, d).filter(|x| x.bw_samples > 0) {
                    dir.bw_agg = (dir.bw_mean * 100.0 / agg_kib).min(100.0);
                }
            }
        }
    }
}

/// "2026-11-22 04:05:06 UTC" from Unix seconds.
pub fn format_utc(secs: u64) -> String {
    let ((y, m, d), rem) = drivelab_engine::clock::civil_from_unix(secs);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::StartGate;
    use super::{
        error_words, lba_ranges, narrow_failed_read, wholly, IoFailure, Op, PlannedTarget,
    };
    use drivelab_report::{IoErrorReport, LbaRange};

    fn failure(op: Op, offset: u64, len: u32) -> IoFailure {
        IoFailure {
            op,
            target: 0,
            offset,
            len,
            errno: 61,
            passed: false,
            unreadable: None,
            detail: None,
        }
    }

    fn target(path: &std::path::Path, is_block: bool, size: u64) -> PlannedTarget {
        PlannedTarget {
            path: path.to_path_buf(),
            is_block,
            size,
            logical_block: 512,
            device: None,
            create: false,
            existing_size: size,
            layout: false,
        }
    }

    #[test]
    fn failed_blocks_become_inclusive_lba_ranges() {
        let e = |o: u64, l: u64, w: &str| (o * 512, l * 512, w.to_string());
        // Adjacent ranges with different errors join; a gap splits.
        let bad = [e(5000, 2, "EIO"), e(5002, 2, "ENODATA"), e(5010, 1, "EIO")];
        assert_eq!(lba_ranges(&bad, 512), vec![(5000, 5003), (5010, 5010)]);
        assert!(lba_ranges(&[], 512).is_empty());
    }

    #[test]
    fn a_read_failing_in_every_block_is_wholly_bad() {
        let e = failure(Op::Read, 1168 * 512, 4096);
        assert!(wholly(&[(1168, 1175)], &e, 512));
        assert!(!wholly(&[(1168, 1174)], &e, 512));
        assert!(!wholly(&[(1168, 1170), (1172, 1175)], &e, 512));
        // One block: a medium error, not a dead device.
        assert!(!wholly(&[(7, 7)], &failure(Op::Read, 7 * 512, 512), 512));
    }

    #[test]
    fn error_words_name_the_lbas_and_what_narrowing_found() {
        let mut r = IoErrorReport {
            op: "read".into(),
            device: "/dev/sdx".into(),
            offset: 4992 * 512,
            len: 65536,
            first_lba: Some(4992),
            last_lba: Some(5119),
            errno: 61,
            error: "No data available (os error 61)".into(),
            passed: false,
            unreadable: None,
        };
        assert_eq!(
            error_words(&r),
            "read of LBA 4992-5119 (65536 bytes at offset 2555904) on /dev/sdx failed: No data available (os error 61)"
        );
        r.unreadable = Some(vec![
            LbaRange {
                first_lba: 5000,
                last_lba: 5003,
            },
            LbaRange {
                first_lba: 5010,
                last_lba: 5010,
            },
        ]);
        assert!(error_words(&r).ends_with("; unreadable: LBA 5000-5003, 5010"));
        r.unreadable = Some(Vec::new());
        assert!(error_words(&r).ends_with("; every block read fine when read again"));
    }

    #[test]
    fn a_failed_flush_names_no_blocks() {
        assert_eq!(crate::run::execute::lba_span(Op::Fsync, 0, 0, 512), None);
        assert_eq!(
            crate::run::execute::lba_span(Op::Write, 8192, 4096, 512),
            Some((16, 23))
        );
        let plan_free = IoErrorReport {
            op: "fsync".into(),
            device: "/dev/sdx".into(),
            offset: 0,
            len: 0,
            first_lba: None,
            last_lba: None,
            errno: 5,
            error: "Input/output error (os error 5)".into(),
            passed: false,
            unreadable: None,
        };
        assert_eq!(
            error_words(&plan_free),
            "fsync on /dev/sdx failed: Input/output error (os error 5)"
        );
    }

    #[test]
    fn only_reads_of_block_devices_are_narrowed() {
        let dir = drivelab_testkit::TempDir::new("narrow");
        let file = dir.join("f.bin");
        std::fs::write(&file, vec![0u8; 65536]).unwrap();
        // A file: not a drive's blocks.
        let f = target(&file, false, 65536);
        assert_eq!(narrow_failed_read(&f, &failure(Op::Read, 0, 4096)), None);
        // A write is not rewritten; a misaligned read is not narrowed.
        let b = target(&file, true, 65536);
        assert_eq!(narrow_failed_read(&b, &failure(Op::Write, 0, 4096)), None);
        assert_eq!(narrow_failed_read(&b, &failure(Op::Read, 100, 4096)), None);
        // A target that is gone cannot be read again.
        let gone = target(&dir.join("gone"), true, 65536);
        assert_eq!(narrow_failed_read(&gone, &failure(Op::Read, 0, 4096)), None);
    }

    #[test]
    fn a_read_that_reads_fine_again_narrows_to_nothing() {
        // A real block device (a loop device this test made) whose blocks
        // all read: the failed read is read again, piece by piece, and no
        // block is unreadable.
        drivelab_testkit::require_root();
        let dir = drivelab_testkit::TempDir::new("narrow-loop");
        let dev = drivelab_testkit::LoopDev::new_in(&dir, 1 << 20);
        let t = target(std::path::Path::new(dev.dev()), true, 1 << 20);
        assert_eq!(
            narrow_failed_read(&t, &failure(Op::Read, 8192, 65536)),
            Some(Vec::new())
        );
    }

    #[test]
    fn start_gate_lets_every_arrived_thread_go() {
        let gate = StartGate::new();
        let went = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4).map(|_| s.spawn(|| gate.ticket().wait())).collect();
            gate.open(4, true);
            hs.into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        });
        assert_eq!(went, vec![true; 4]);
    }

    #[test]
    fn start_gate_called_off_when_a_thread_could_not_start_leaves_nobody_waiting() {
        // Three threads started; a fourth could not be: the three are told
        // not to start instead of waiting for it forever.
        let gate = StartGate::new();
        let went = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3).map(|_| s.spawn(|| gate.ticket().wait())).collect();
            gate.open(3, false);
            hs.into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        });
        assert_eq!(went, vec![false; 3]);
    }

    #[test]
    fn start_gate_counts_a_ticket_dropped_unused() {
        // A job that fails while setting up drops its ticket: the gate must
        // still open for the others.
        let gate = StartGate::new();
        let went = std::thread::scope(|s| {
            let waiter = s.spawn(|| gate.ticket().wait());
            s.spawn(|| drop(gate.ticket()));
            gate.open(2, true);
            waiter.join().unwrap()
        });
        assert!(went);
    }

    #[test]
    fn latency_from_intended_issue_reports_its_stddev() {
        // It printed stdev=0.00 over thousands of samples: the figures came
        // from the histogram alone.
        use crate::job::outcome::DirStats;
        use drivelab_stats::{LatencyHistogram, Welford};
        let mut d = DirStats {
            ios: 0,
            bytes: 0,
            lat: LatencyHistogram::new(),
            moments: Welford::new(),
            lat_intended: Some(LatencyHistogram::new()),
            intended_moments: Welford::new(),
            prios: Vec::new(),
        };
        for v in [1_000u64, 2_000, 3_000, 4_000] {
            d.ios += 1;
            d.lat.record(v / 10);
            d.moments.record((v / 10) as f64);
            if let Some(h) = d.lat_intended.as_mut() {
                h.record(v);
            }
            d.intended_moments.record(v as f64);
        }
        let l = super::dir_report(&d, 1_000_000_000, 0, None)
            .lat_from_intended_ns
            .unwrap();
        // Sample stddev of 1000, 2000, 3000, 4000: sqrt(5e6 / 3).
        assert!(
            (l.stddev - (5e6f64 / 3.0).sqrt()).abs() < 1e-6,
            "{}",
            l.stddev
        );
        assert!((l.mean - 2_500.0).abs() < 1e-9, "{}", l.mean);
        assert_eq!(l.n, 4);
    }

    /// A run of null-engine jobs, each set by its options.
    fn run_null_jobs(jobs: &[&[(&str, &str)]]) -> drivelab_report::RunReport {
        let specs: Vec<(crate::JobSpec, bool)> = jobs
            .iter()
            .map(|opts| {
                let mut s = crate::JobSpec::default();
                s.set("filename", Some("null-target")).unwrap();
                s.set("ioengine", Some("null")).unwrap();
                for (k, v) in opts.iter() {
                    s.set(k, Some(v)).unwrap();
                }
                (s, false)
            })
            .collect();
        let p = crate::plan(&specs, &crate::PlanOptions::default()).unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        super::execute(&p, &stop, &mut |_| {}).unwrap()
    }

    #[test]
    fn exitall_ends_the_other_jobs_of_its_group() {
        let long: &[(&str, &str)] = &[
            ("name", "long"),
            ("time_based", "1"),
            ("runtime", "1h"),
            ("size", "1m"),
        ];
        let short: &[(&str, &str)] = &[
            ("name", "short"),
            ("size", "1m"),
            ("exitall", "1"),
            ("thinktime", "1ms"),
            ("number_ios", "20"),
        ];
        let r = run_null_jobs(&[long, short]);
        assert!(!r.interrupted);
        assert_eq!(r.jobs[1].read.total_ios, 20);
        // The hour-long job ended with the short one (after ≥ 20 ms of
        // think time), not after its hour, and reports what it did.
        assert!(
            r.jobs[0].job_runtime < 3_600_000,
            "{}",
            r.jobs[0].job_runtime
        );
        assert!(r.jobs[0].read.total_ios > 0);
        assert_eq!(r.jobs[0].error, 0);
        assert_eq!(
            r.jobs[1].job_options.get("exitall").map(String::as_str),
            Some("1")
        );
    }

    #[test]
    fn exitall_leaves_other_reporting_groups_alone() {
        let a: &[(&str, &str)] = &[("name", "a"), ("size", "64k"), ("exitall", "1")];
        let b: &[(&str, &str)] = &[
            ("name", "b"),
            ("size", "64k"),
            ("new_group", "1"),
            ("thinktime", "1ms"),
        ];
        let r = run_null_jobs(&[a, b]);
        // b's own size ends it: all 16 I/Os, with think time between them.
        assert_eq!(r.jobs[1].read.total_ios, 16);
    }

    #[test]
    fn utc_formatting() {
        assert_eq!(super::format_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::format_utc(1_795_000_000), "2026-11-18 11:06:40 UTC");
    }
}
