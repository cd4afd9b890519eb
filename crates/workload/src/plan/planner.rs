//! From specs to a plan: every target looked at, every size resolved,
//! every bound checked — and nothing written. A plan that fails leaves
//! every device and file exactly as it was. The safety assessment of the
//! targets a run writes is the device claim's, taken when the run starts
//! ([`crate::run::execute`]), once per target.

use std::borrow::Cow;
use std::fs::OpenOptions;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::job::types::Region;
use crate::plan::model::{
    Plan, PlanError, PlanOptions, PlannedJob, PlannedTarget, NULL_DEFAULT_SIZE,
};
use crate::{EngineKind, JobSpec, SizeSpec, WriteKind};
use drivelab_device::blockdev::{backing_device_of_file, BlockDevice};

fn job_writes(spec: &JobSpec) -> bool {
    spec.access_lines().iter().any(|l| l.read_pct < 100) || spec.fsync > 0
}

/// The earlier jobs (indices into `earlier`, the names of the jobs planned
/// so far) a job's `wait_for` names.
fn wait_for<'a>(
    spec: &JobSpec,
    earlier: impl Iterator<Item = &'a str>,
) -> Result<Vec<usize>, PlanError> {
    let Some(name) = &spec.wait_for else {
        return Ok(Vec::new());
    };
    let v: Vec<usize> = earlier
        .enumerate()
        .filter(|(_, n)| n == name)
        .map(|(i, _)| i)
        .collect();
    if v.is_empty() {
        return Err(PlanError::Spec(crate::SpecError::Invalid(format!(
            "job '{}': wait_for={name} names no job before it; wait_for takes the name of an earlier job",
            spec.name
        ))));
    }
    Ok(v)
}

/// A job's region on one file must hold at least one transfer.
fn check_region(spec: &JobSpec, path: &str, total: u64) -> Result<(), PlanError> {
    if total < spec.max_bs() {
        return Err(PlanError::target(
            path,
            format!(
                "the region ({total} bytes) is smaller than one {}-byte transfer; give a larger --size",
                spec.max_bs()
            ),
        ));
    }
    Ok(())
}

/// One job unit checked on its own and in the form the plan works on:
/// `filename` values ':' would split against the path they name, sizes
/// counted in zones (zonemode=zbd's `8z`) in bytes, ioengine=net's one
/// "file" the socket ([`crate::engines::noio::net`]), then the spec's and its files' own
/// validation.
fn ready(spec: &JobSpec) -> Result<Cow<'_, JobSpec>, PlanError> {
    let dir = spec.directory.as_deref();
    crate::check_filename_splits(spec, &|n| in_directory(dir, n))?;
    let spec = match crate::job::zbd::resolve_zone_counts(spec)? {
        Some(s) => Cow::Owned(s),
        None => Cow::Borrowed(spec),
    };
    let spec = match crate::engines::noio::net::planned(&spec)? {
        Some(s) => Cow::Owned(s),
        None => spec,
    };
    spec.validate()?;
    crate::engines::files::validate(&spec)?;
    Ok(spec)
}

/// The plan's checks that need no target looked at (`--parse-only`): the
/// job count, each job's own validation, `filename` values ':' would split
/// against the path they name, `wait_for`, and the region an explicit
/// size in bytes gives each file. A job set that passes may still be
/// refused by [`plan`] for what its targets are.
pub fn check(jobs: &[(JobSpec, bool)]) -> Result<(), PlanError> {
    crate::check_total_jobs(jobs.iter().map(|(spec, _)| spec))?;
    let mut names: Vec<String> = Vec::new();
    let units = with_file_names(jobs);
    for (spec, _, clones) in &units {
        let spec = &*ready(spec)?;
        wait_for(spec, names.iter().map(String::as_str))?;
        let nfiles = spec.filenames.len();
        let explicit = match spec.size {
            _ if spec.filesize.is_some() || spec.fill_device => None,
            Some(SizeSpec::Bytes(b)) if nfiles > 0 => Some(b / nfiles as u64),
            _ => None,
        };
        let sizes = crate::engines::files::file_sizes(spec, clones.start, nfiles);
        for (f, size) in spec.filenames.iter().zip(sizes) {
            let total = if spec.filesize.is_some() {
                Some(size)
            } else {
                explicit
            };
            if let Some(total) = total {
                check_region(spec, f, total)?;
            }
        }
        names.extend(clones.clone().map(|_| spec.name.clone()));
    }
    Ok(())
}

/// Look at one target path without writing anything.
fn inspect(path: &str, writes: bool) -> Result<PlannedTarget, PlanError> {
    let p = Path::new(path);
    match std::fs::metadata(p) {
        Ok(md) if md.file_type().is_block_device() => {
            let dev =
                BlockDevice::from_path(p).map_err(|e| PlanError::target(path, e.to_string()))?;
            if dev.size.0 == 0 {
                return Err(PlanError::target(
                    path,
                    "the device has size 0 (an unattached loop device?); attach it or pick another",
                ));
            }
            // Opening read-only proves we may read it at all. A device a
            // job writes is opened by its claim instead, which assesses it
            // first, so a refusal names the reason, not a failed open.
            if !writes {
                OpenOptions::new().read(true).open(p).map_err(|e| {
                    let hint = drivelab_device::blockdev::unless_root(" (run as root?)");
                    PlanError::target(path, format!("cannot open: {e}{hint}"))
                })?;
            }
            Ok(PlannedTarget {
                path: p.to_path_buf(),
                is_block: true,
                size: dev.size.0,
                logical_block: dev.logical_sector.0,
                existing_size: dev.size.0,
                device: Some(dev),
                create: false,
                layout: false,
            })
        }
        Ok(md) if md.is_file() => {
            let device = backing_device_of_file(p).ok().flatten();
            let logical_block = device.as_ref().map(|d| d.logical_sector.0).unwrap_or(512);
            Ok(PlannedTarget {
                path: p.to_path_buf(),
                is_block: false,
                size: md.len(),
                logical_block,
                device,
                create: false,
                existing_size: md.len(),
                layout: false,
            })
        }
        Ok(_) => Err(PlanError::target(
            path,
            "not a regular file or block device; give a file or /dev node",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !parent.is_dir() {
                return Err(PlanError::target(path, "does not exist and its directory does not either; create the directory or fix the path"));
            }
            if drivelab_device::blockdev::in_devtmpfs(parent) {
                return Err(PlanError::target(
                    path,
                    "no such device; list devices with 'drivelab devices'",
                ));
            }
            let device = backing_device_of_file(parent).ok().flatten();
            let logical_block = device.as_ref().map(|d| d.logical_sector.0).unwrap_or(512);
            Ok(PlannedTarget {
                path: p.to_path_buf(),
                is_block: false,
                size: 0,
                logical_block,
                device,
                create: true,
                existing_size: 0,
                layout: false,
            })
        }
        Err(e) => Err(PlanError::target(path, format!("cannot inspect: {e}"))),
    }
}

/// Replace fio's `$jobname`, `$jobnum` and `$filenum` in a file name format.
pub fn format_filename(fmt: &str, jobname: &str, jobnum: u32, filenum: u32) -> String {
    fmt.replace("$jobname", jobname)
        .replace("$jobnum", &jobnum.to_string())
        .replace("$filenum", &filenum.to_string())
}

/// Put a relative file name under `directory`.
fn in_directory(dir: Option<&str>, name: &str) -> String {
    match dir {
        Some(d) if !Path::new(name).is_absolute() => Path::new(d).join(name).display().to_string(),
        _ => name.to_string(),
    }
}

/// Jobs with their file names resolved: `directory` applied, and a job
/// without `filename` but with a `filename_format` split into one job per
/// clone, each on its own file (fio's `jobname.N.0`). Each entry carries the
/// clones it stands for.
fn with_file_names(jobs: &[(JobSpec, bool)]) -> Vec<(JobSpec, bool, std::ops::Range<u32>)> {
    let mut units = Vec::new();
    for (spec, stonewall) in jobs {
        let mut spec = spec.clone();
        let dir = spec.directory.clone();
        for f in spec.filenames.iter_mut() {
            *f = in_directory(dir.as_deref(), f);
        }
        match (&spec.filename_format, spec.filenames.is_empty()) {
            (Some(fmt), true) => {
                for c in 0..spec.numjobs {
                    let mut s = spec.clone();
                    // fio: nrfiles files per clone, $filenum from 0.
                    s.filenames = (0..spec.files.nrfiles)
                        .map(|f| {
                            in_directory(dir.as_deref(), &format_filename(fmt, &spec.name, c, f))
                        })
                        .collect();
                    units.push((s, *stonewall && c == 0, c..c + 1));
                }
            }
            _ => {
                let n = spec.numjobs;
                units.push((spec, *stonewall, 0..n));
            }
        }
    }
    units
}

/// The content rule of a job with `verify`, checked against its sizes.
fn verify_content(
    spec: &JobSpec,
    align: u64,
) -> Result<Option<crate::job::types::Content>, PlanError> {
    use crate::job::verify::{Content, VerifyKind, HEADER};
    let Some(kind) = spec.verify.kind else {
        return Ok(None);
    };
    let bad = |why: String| PlanError::Spec(crate::SpecError::Invalid(why));
    let interval = spec.verify.interval.unwrap_or_else(|| spec.min_bs());
    if spec.access_lines().iter().any(|l| l.size % interval != 0) || align % interval != 0 {
        return Err(bad(format!(
            "job '{}': verify_interval {interval} must divide every block size and the block alignment; use a smaller verify_interval",
            spec.name
        )));
    }
    if kind != VerifyKind::Pattern && interval < 2 * HEADER as u64 {
        return Err(bad(format!(
            "job '{}': verify={} needs verify blocks of at least {} bytes; raise verify_interval or bs",
            spec.name,
            kind.name(),
            2 * HEADER
        )));
    }
    if kind == VerifyKind::Pattern && spec.verify.pattern.is_none() {
        return Err(bad(format!(
            "job '{}': verify=pattern needs verify_pattern (e.g. verify_pattern=0xaa555aa5)",
            spec.name
        )));
    }
    if spec.rw.write_kind() == WriteKind::Trim {
        return Err(bad(format!(
            "job '{}': verify checks data, and trims write none; drop verify or use a write mode",
            spec.name
        )));
    }
    if spec.trims.active() && spec.errkeys.verify.backlog > 0 {
        return Err(bad(format!(
            "job '{}': trim_backlog and verify_backlog both take from the written blocks as the job goes, which drivelab does not interleave; drop one of them",
            spec.name
        )));
    }
    if spec.ioengine == EngineKind::Null {
        return Err(bad(format!(
            "job '{}': the null engine moves no data, so there is nothing to verify; use io_uring or psync",
            spec.name
        )));
    }
    if !spec.ramp_time.is_zero() && job_writes(spec) && spec.verify.do_verify {
        return Err(bad(format!(
            "job '{}': verify reads back what the whole job wrote, ramp_time included; drop ramp_time or verify",
            spec.name
        )));
    }
    // verify_offset: the header changes places with the data there, so
    // both must lie inside the block (pattern blocks have no header).
    let header_at = match spec.verify.header_at {
        Some(at) if kind != VerifyKind::Pattern => {
            if at + HEADER as u64 > interval {
                return Err(bad(format!(
                    "job '{}': verify_offset={at} puts the {HEADER}-byte verify header past the end of the {interval}-byte verify block; give at most {}",
                    spec.name,
                    interval - HEADER as u64
                )));
            }
            at as usize
        }
        _ => 0,
    };
    Ok(Some(Content {
        kind,
        interval: interval as usize,
        pattern: spec.verify.pattern.clone(),
        header_at,
    }))
}

/// Resolve jobs (spec, stonewall) into a plan. Reads and probes only.
/// The part of a `len`-byte region that whole transfers of a fixed block
/// size cover, as fio does it: random offsets come from a map of whole
/// blocks (the partial tail is never drawn), and a sequential pass takes
/// one more block past the region's end only while it still lies within
/// the target (`room` bytes from the region's start), so a file whose size
/// is not a multiple of the block size is read to its last whole block
/// and not wrapped back to its start. Mixed sizes keep the region.
fn whole_transfers(spec: &JobSpec, len: u64, room: u64) -> u64 {
    let bs = spec.min_bs();
    if bs == 0 || bs != spec.max_bs() || len % bs == 0 {
        return len;
    }
    let floor = len - len % bs;
    let sequential = spec.access_lines().iter().all(|l| l.random_pct == 0);
    if sequential && spec.rw_delta == 0 && floor + bs <= room {
        floor + bs
    } else {
        floor
    }
}

/// A `read_iolog` job as it runs: its files are the log's (in its
/// directory, or the redirect), its buffers fit the log's largest I/O (fio
/// reallocates them as it reads the log), its I/O is buffered unless the
/// job asks for direct, as fio's default, and its files are grown without
/// preallocation.
fn replayed(mut s: JobSpec, log: &crate::job::iolog_replay::Loaded) -> JobSpec {
    let dir = s.directory.clone();
    s.filenames = log
        .files
        .iter()
        .map(|f| in_directory(dir.as_deref(), f))
        .collect();
    let largest = log.ios.iter().map(|(io, _)| u64::from(io.len)).max();
    s.access = None;
    s.bssplit.clear();
    s.bssplit_dir = Default::default();
    s.bs_dir = Default::default();
    s.bs = largest.unwrap_or(512).next_multiple_of(512).max(512);
    s.direct = Some(s.direct.unwrap_or(false));
    // The log's writes extend its files; fio lays out nothing first (its
    // job has no size), so nothing is preallocated: a hole until written.
    s.files.fallocate = drivelab_device::claim::Prealloc::None;
    // A blktrace's depth, as fio takes it when iodepth is not given.
    if let Some(d) = log
        .depth
        .filter(|_| !s.set_order.iter().any(|(k, _)| k == "iodepth"))
    {
        s.iodepth = d;
    }
    s
}

/// A `read_iolog` job's regular files grown (or created) as far as the
/// log writes, as fio's writes extend them; the grown part is a hole
/// until written, as in fio's file.
fn grow_replayed(
    log: &crate::job::iolog_replay::Loaded,
    idx: &[usize],
    targets: &mut [PlannedTarget],
) -> Result<(), PlanError> {
    let files: Vec<(u64, bool)> = idx
        .iter()
        .map(|&i| (targets[i].size, !targets[i].is_block))
        .collect();
    let ends = crate::job::iolog_replay::file_ends(log, &files)?;
    for (&i, end) in idx.iter().zip(ends) {
        let t = &mut targets[i];
        if !t.is_block && end > t.size {
            t.size = end;
        }
    }
    Ok(())
}

pub fn plan(jobs: &[(JobSpec, bool)], opts: &PlanOptions) -> Result<Plan, PlanError> {
    crate::check_total_jobs(jobs.iter().map(|(spec, _)| spec))?;
    let mut targets: Vec<PlannedTarget> = Vec::new();
    let mut out: Vec<PlannedJob> = Vec::new();
    let mut group = 0u32;
    let clock_seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    for (spec, stonewall, clones) in &with_file_names(jobs) {
        let spec = ready(spec)?;
        // read_iolog: the job's files are the log's (or the redirect).
        let replay = crate::job::iolog_replay::load(&spec.replay)?;
        let spec = &*match &replay {
            Some(log) => Cow::Owned(replayed(spec.into_owned(), log)),
            None => spec,
        };
        if !out.is_empty() && (*stonewall || spec.new_group) && clones.start == 0 {
            group += 1;
        }
        let writes = replay
            .as_ref()
            .map_or_else(|| job_writes(spec), |l| l.writes);
        // No target to open: the null engine, net's socket, cpuio, exec.
        let null = !spec.front.on_targets();
        let path_engine = crate::engines::files::path_engine(spec);
        let idx = job_targets(spec, writes, &mut targets)?;
        if let Some(log) = &replay {
            grow_replayed(log, &idx, &mut targets)?;
        }
        let planned: Vec<&PlannedTarget> = idx.iter().map(|&i| &targets[i]).collect();
        spec.front.check(spec, &planned)?;
        let devs: Vec<(String, Option<String>)> = planned
            .iter()
            .map(|t| {
                let dev = t.device.as_ref().filter(|_| t.is_block);
                (t.path.display().to_string(), dev.map(|d| d.name.clone()))
            })
            .collect();
        let devs: Vec<(&str, Option<&str>)> = devs
            .iter()
            .map(|(p, d)| (p.as_str(), d.as_deref()))
            .collect();
        spec.target_opts
            .check_scheduler(writes, &devs)
            .map_err(|why| PlanError::target(devs.first().map_or("", |d| d.0), why))?;
        // Direct I/O: on for block devices; for files where the filesystem takes it.
        let direct = match spec.direct {
            Some(d) => d,
            _ if path_engine.is_some() => false,
            // Sizes of any byte count: buffered, as fio's default.
            None if spec.offsets.bs_unaligned => false,
            None => {
                null || idx.iter().all(|&i| {
                    targets[i].is_block
                        || drivelab_device::blockdev::direct_supported(&targets[i].path)
                })
            }
        };
        let (mut regions, increments) =
            job_regions(spec, (&idx, &mut targets), clones, (direct, null))?;
        check_strided(spec, idx.len())?;
        let paths: Vec<&Path> = idx.iter().map(|&i| targets[i].path.as_path()).collect();
        let zbd = crate::job::zbd::plan_job(spec, &paths, &mut regions, direct, writes)?;
        let align = spec.blockalign.unwrap_or_else(|| spec.min_bs()).max(1);
        if direct {
            let lb = idx
                .iter()
                .map(|&i| u64::from(targets[i].logical_block))
                .max()
                .unwrap_or(512);
            if align % lb != 0 {
                return Err(PlanError::Spec(crate::SpecError::Invalid(format!(
                    "blockalign {align} is not a multiple of the logical block size {lb}"
                ))));
            }
        }
        let (mut io_limit, runtime) = job_limits(spec, &regions)?;
        if let Some(log) = &replay {
            // The log's I/Os are the job's, however many bytes they move.
            io_limit = None;
            // Without a size, the log may reach anywhere on its targets,
            // not only up to a whole number of the largest I/O.
            if spec.size.is_none() {
                for (r, &i) in regions.iter_mut().zip(&idx) {
                    r.end = r.end.max(targets[i].size);
                }
            }
            let ends: Vec<u64> = regions.iter().map(|r| r.end).collect();
            crate::job::iolog_replay::check_fits(log, &ends)?;
            if log.trims {
                check_discard(idx.iter().map(|&i| &targets[i]))?;
            }
        }
        // zonemode=zbd: trims are zone resets, no discard.
        if spec.rw.write_kind().trims() && zbd.is_none() {
            check_discard(idx.iter().map(|&i| &targets[i]))?;
        }
        let verify = verify_content(spec, align)?;
        // trim_percentage: a writing job's queued blocks are discarded.
        if verify.is_some() && spec.trims.active() && zbd.is_none() {
            check_discard(idx.iter().map(|&i| &targets[i]))?;
        }
        let wait_for = wait_for(spec, out.iter().map(|j| j.spec.name.as_str()))?;
        for clone in clones.clone() {
            let mut s = spec.clone();
            let base = if spec.randrepeat {
                spec.randseed
            } else {
                spec.randseed ^ clock_seed
            };
            s.randseed = base.wrapping_add(u64::from(clone).wrapping_mul(0x9E37_79B9));
            let shift = u64::from(clone);
            let regions = regions
                .iter()
                .zip(&increments)
                .map(|(r, inc)| Region {
                    start: r.start + inc * shift,
                    end: r.end + inc * shift,
                })
                .collect();
            out.push(PlannedJob {
                spec: s,
                clone,
                targets: idx.clone(),
                regions,
                direct,
                io_limit,
                runtime,
                align,
                stonewall: *stonewall && clone == 0,
                writes,
                group,
                verify: verify.clone(),
                wait_for: wait_for.clone(),
                zbd: zbd.clone(),
                replay: replay.clone(),
            });
        }
    }
    crate::engines::noio::check_groups(&out)?;
    Ok(Plan {
        targets,
        jobs: out,
        force: opts.force,
    })
}

/// The job's files as the plan's targets (their indices): each path
/// inspected once, a file engine's path as it is, the null and net
/// engines' names with no target to open, io_uring_cmd's and sg's
/// character devices as their block devices.
fn job_targets(
    spec: &JobSpec,
    writes: bool,
    targets: &mut Vec<PlannedTarget>,
) -> Result<Vec<usize>, PlanError> {
    // No target to open: the null engine, net's socket, cpuio, exec.
    let null = !spec.front.on_targets();
    let path_engine = crate::engines::files::path_engine(spec);
    let mut idx = Vec::new();
    for f in &spec.filenames {
        if let Some(t) = path_engine.map(|_| crate::engines::files::path_target(f)) {
            idx.push(targets.len());
            targets.push(t?);
            continue;
        }
        if null {
            let size = spec
                .size
                .map(|s| s.resolve(NULL_DEFAULT_SIZE))
                .unwrap_or(NULL_DEFAULT_SIZE);
            targets.push(PlannedTarget {
                path: PathBuf::from(f),
                is_block: false,
                size,
                logical_block: 512,
                device: None,
                create: false,
                existing_size: size,
                layout: false,
            });
            idx.push(targets.len() - 1);
            continue;
        }
        // io_uring_cmd's /dev/ngXnY and sg's /dev/sgN are planned (and
        // claimed) as their disk's block device; the engine opens the node.
        let mapped;
        let f: &str = match spec.front.planned_path(&spec.name, f)? {
            Some(p) => {
                mapped = p.display().to_string();
                &mapped
            }
            None => f,
        };
        if let Some(i) = targets.iter().position(|t| t.path == Path::new(f)) {
            idx.push(i);
            continue;
        }
        targets.push(inspect(f, writes)?);
        idx.push(targets.len() - 1);
    }
    Ok(idx)
}

/// The job's region on each of its targets (and how far each clone's
/// region sits from the last, `offset_increment`): sizes resolved, bounds
/// and direct I/O's alignment checked, a file grown to hold its region.
fn job_regions(
    spec: &JobSpec,
    (idx, targets): (&[usize], &mut [PlannedTarget]),
    clones: &std::ops::Range<u32>,
    (direct, null): (bool, bool),
) -> Result<(Vec<Region>, Vec<u64>), PlanError> {
    let nfiles = spec.filenames.len() as u64;
    let mut regions = Vec::new();
    // offset_increment: how far each clone's region sits from the last.
    let mut increments = Vec::new();
    let last_clone = u64::from(clones.end.saturating_sub(1));
    let mut sizes = crate::engines::files::file_sizes(spec, clones.start, idx.len());
    for &i in idx {
        let t = &mut targets[i];
        let total = match spec.size {
            _ if spec.filesize.is_some() => sizes.next().unwrap_or(0),
            _ if spec.fill_device => {
                if !t.is_block {
                    return Err(PlanError::target(
                        &t.path.display().to_string(),
                        "fill_device on a regular file would fill its whole filesystem; give a block device, or size= for the file",
                    ));
                }
                t.size.saturating_sub(spec.offset.resolve(t.size))
            }
            Some(s) => {
                let base = if t.is_block || t.size > 0 { t.size } else { 0 };
                if let (SizeSpec::Percent(_), 0) = (s, base) {
                    return Err(PlanError::target(
                        &t.path.display().to_string(),
                        "a percentage size needs an existing target; give --size in bytes to create it",
                    ));
                }
                s.resolve(base) / nfiles
            }
            None if t.size == 0 && !null => return Err(PlanError::target(
                &t.path.display().to_string(),
                "the file does not exist or is empty: give --size (e.g. --size=1g) to create it",
            )),
            // fio: without a size, each existing file is done whole.
            None => t.size,
        };
        if t.create && !spec.files.allow_create {
            return Err(PlanError::target(
                &t.path.display().to_string(),
                "does not exist, and allow_file_create=0 forbids creating it: create the file or drop allow_file_create",
            ));
        }
        // fio's file_append: the I/O starts at the file's end.
        let offset = match spec.offset {
            _ if spec.files.append && !t.is_block => t.existing_size,
            // fio rounds a share of the target up to offset_align, else to
            // the smallest block.
            p @ SizeSpec::Percent(_) => spec
                .offsets
                .align_up(p.resolve(t.size.max(total)), spec.min_bs().max(1)),
            b @ SizeSpec::Bytes(_) => b.resolve(t.size.max(total)),
        };
        let increment = match spec.offset_increment {
            SizeSpec::Bytes(b) => b,
            // fio aligns a share of the target to the smallest block.
            p @ SizeSpec::Percent(_) => {
                let b = p.resolve(t.size.max(total));
                b - b % spec.min_bs().max(1)
            }
        };
        let end = offset
            .checked_add(total)
            .and_then(|e| e.checked_add(increment.checked_mul(last_clone)?))
            .ok_or_else(|| {
                PlanError::target(
                    &t.path.display().to_string(),
                    "offset + size (+ offset_increment per clone) overflows",
                )
            })?;
        if t.is_block && end > t.size {
            return Err(PlanError::target(
                &t.path.display().to_string(),
                format!(
                    "offset {offset} + size {total}{} runs past the end of the device ({} bytes); use a smaller --size or --offset{}",
                    if last_clone > 0 && increment > 0 {
                        format!(" + {last_clone} × offset_increment {increment}")
                    } else {
                        String::new()
                    },
                    t.size,
                    if increment > 0 { " or offset_increment" } else { "" }
                ),
            ));
        }
        if !t.is_block && !null && end > t.size {
            t.size = end;
            // Reads of the grown part must hit data, not holes; fio's
            // overwrite and create_only lay the file out as well.
            let s = &spec.syncs;
            if s.overwrite || s.create_only || spec.access_lines().iter().any(|l| l.read_pct > 0) {
                t.layout = true;
            }
        }
        let lb = u64::from(t.logical_block);
        if direct {
            for l in spec.access_lines() {
                if l.size % lb != 0 {
                    return Err(PlanError::target(
                        &t.path.display().to_string(),
                        format!(
                            "block size {} is not a multiple of the logical block size {lb}, which direct I/O needs; use a multiple of {lb} or --direct=0",
                            l.size
                        ),
                    ));
                }
            }
            if increment % lb != 0 {
                return Err(PlanError::target(
                    &t.path.display().to_string(),
                    format!("offset_increment {increment} is not a multiple of the logical block size {lb}; direct I/O needs aligned offsets"),
                ));
            }
            if offset % lb != 0 {
                return Err(PlanError::target(
                    &t.path.display().to_string(),
                    format!("offset {offset} is not a multiple of the logical block size {lb}; direct I/O needs aligned offsets"),
                ));
            }
        }
        check_region(spec, &t.path.display().to_string(), total)?;
        regions.push(Region {
            start: offset,
            end: offset + whole_transfers(spec, total, t.size.saturating_sub(offset)),
        });
        increments.push(increment);
    }
    Ok((regions, increments))
}

/// zonemode=strided's limits: one file, no rw modifier, uniform offsets.
fn check_strided(spec: &JobSpec, nfiles: usize) -> Result<(), PlanError> {
    if spec.strided()?.is_some() {
        let refuse = |why: &str| {
            Err(PlanError::Spec(crate::SpecError::Invalid(format!(
                "job '{}': zonemode=strided {why}",
                spec.name
            ))))
        };
        if nfiles > 1 {
            return refuse("works on one file; this job has several (fio turns zonemode off then)");
        }
        if spec.rw_delta != 0 || spec.rw_seq_run > 1 {
            return refuse("takes no rw=MODE:N modifier");
        }
        if !matches!(
            spec.random_distribution,
            crate::spec::kinds::Distribution::Random
        ) {
            return refuse("draws random offsets uniformly in the zone: drop random_distribution");
        }
    }
    Ok(())
}

/// The job's bytes to move (none: time-based) and runtime.
fn job_limits(
    spec: &JobSpec,
    regions: &[Region],
) -> Result<(Option<u64>, Option<std::time::Duration>), PlanError> {
    let region_total: u64 = regions.iter().map(|r| r.end - r.start).sum();
    // With filesize, size is the I/O to do (fio), the files' sizes aside.
    let explicit_io = spec
        .io_size
        .or(spec.size.filter(|_| spec.filesize.is_some()))
        .map(|s| s.resolve(region_total));
    let limits = if spec.time_based {
        if spec.runtime.is_none() {
            return Err(PlanError::Spec(crate::SpecError::Invalid(
                "time_based needs a runtime (e.g. --runtime=30)".to_string(),
            )));
        }
        (None, spec.runtime)
    } else if spec.runtime.is_some()
        && spec.size.is_none()
        && spec.filesize.is_none()
        && explicit_io.is_none()
    {
        // drivelab: a runtime alone means time-based over the whole target.
        (None, spec.runtime)
    } else {
        let once = explicit_io.unwrap_or(region_total);
        (
            Some(once.saturating_mul(u64::from(spec.loops))),
            spec.runtime,
        )
    };
    Ok(limits)
}

/// A trim workload needs discard on each block device.
fn check_discard<'a>(targets: impl Iterator<Item = &'a PlannedTarget>) -> Result<(), PlanError> {
    for t in targets {
        if t.is_block {
            if let Some(d) = &t.device {
                if d.discard_max_bytes.0 == 0 {
                    return Err(PlanError::target(
                        &t.path.display().to_string(),
                        "the device does not support discard (discard_max_bytes is 0); trim workloads need it",
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(opts: &[(&str, &str)]) -> JobSpec {
        let mut s = JobSpec::default();
        for (k, v) in opts {
            s.set(k, Some(v)).unwrap();
        }
        s
    }

    #[test]
    fn offset_increment_moves_each_clone() {
        let dir = std::env::temp_dir().join(format!("dl-offinc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t");
        let s = spec(&[
            ("filename", f.to_str().unwrap()),
            ("size", "64k"),
            ("offset", "8k"),
            ("offset_increment", "1m"),
            ("numjobs", "3"),
            ("rw", "write"),
        ]);
        let p = plan(&[(s, false)], &PlanOptions::default()).unwrap();
        let starts: Vec<(u64, u64)> = p
            .jobs
            .iter()
            .map(|j| (j.regions[0].start, j.regions[0].end))
            .collect();
        let k = 1u64 << 20;
        assert_eq!(
            starts,
            vec![
                (8192, 8192 + 65536),
                (k + 8192, k + 8192 + 65536),
                (2 * k + 8192, 2 * k + 8192 + 65536)
            ]
        );
        // The file is made large enough for the last clone.
        assert_eq!(p.targets[0].size, 2 * k + 8192 + 65536);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn offset_increment_as_a_share_of_the_target() {
        let s = spec(&[
            ("filename", "x"),
            ("ioengine", "null"),
            ("size", "1m"),
            ("offset_increment", "10%"),
            ("numjobs", "2"),
        ]);
        let p = plan(&[(s, false)], &PlanOptions::default()).unwrap();
        // 10% of 1 MiB, rounded down to the 4 KiB block.
        assert_eq!(p.jobs[1].regions[0].start, 102_400);
        assert_eq!(p.jobs[0].regions[0].start, 0);
    }

    #[test]
    fn bad_offset_increment_names_the_key() {
        let e = JobSpec::default()
            .set("offset_increment", Some("lots"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("offset_increment"), "{e}");
    }
}
