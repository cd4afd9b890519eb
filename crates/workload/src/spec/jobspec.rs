//! The job specification and its option setters.

use std::time::Duration;

use crate::engines::front::Front;
use crate::spec::family::OptionFamily;
pub use crate::spec::kinds::{AccessLine, Distribution, EngineKind, RwMode, WriteKind, Zone};
use crate::spec::options::{lookup, OptionKind};
use crate::spec::size::{parse_bytes, parse_duration, SizeSpec};
use crate::spec::value::{parse_flag, per_direction};
use crate::SpecError;

/// Default interval of the per-interval series (`log_interval`): 1 s.
pub const DEFAULT_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// One job: what to do to which targets, for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Job name (`name`); default "drivelab".
    pub name: String,
    /// Targets (`filename`, repeatable or `:`-separated; `\:` is a colon
    /// in a name, as in fio).
    pub filenames: Vec<String>,
    /// The `filename` values that `:` split into several names, as given:
    /// the plan refuses one that names an existing file while its parts
    /// do not ([`check_filename_splits`]).
    pub filename_splits: Vec<String>,
    /// Access pattern (`rw`); default read.
    pub rw: RwMode,
    /// Block size in bytes (`bs`); default 4 KiB.
    pub bs: u64,
    /// Size mix (`bssplit`): (bytes, weight); overrides `bs` when set.
    pub bssplit: Vec<(u64, u32)>,
    /// `bsrange=MIN-MAX` as given (the mix is in `bssplit`), for
    /// `bs_unaligned`; None after `bs` or `bssplit`.
    pub bsrange: Option<(u64, u64)>,
    /// Read share for mixed modes in percent (`rwmixread`); default 50.
    pub rwmixread: u8,
    /// Share of random accesses for random modes (`percentage_random`); default 100.
    pub percentage_random: u8,
    /// Access lines set by a preset; when set they replace rw/bs/bssplit/rwmixread.
    pub access: Option<Vec<AccessLine>>,
    /// Outstanding I/Os per job (`iodepth`); default 1.
    pub iodepth: u32,
    /// Number of clones of this job (`numjobs`); default 1, at most
    /// [`MAX_TOTAL_JOBS`] (which also bounds the sum over all jobs of a run).
    pub numjobs: u32,
    /// Run time limit (`runtime`).
    pub runtime: Option<Duration>,
    /// Keep running for `runtime` even when `size` is done (`time_based`).
    pub time_based: bool,
    /// Region size per job, split over the targets (`size`); default: the whole target.
    pub size: Option<SizeSpec>,
    /// Bytes of I/O to do (`io_size`); default: `size`.
    pub io_size: Option<SizeSpec>,
    /// Start of the region (`offset`); default 0.
    pub offset: SizeSpec,
    /// Time to run before measuring (`ramp_time`); default 0.
    pub ramp_time: Duration,
    /// O_DIRECT (`direct`); default: on for block devices and for files where the
    /// filesystem supports it.
    pub direct: Option<bool>,
    /// Engine (`ioengine`); default io_uring.
    pub ioengine: EngineKind,
    /// The front `ioengine` chose ([`crate::engines::registry`]): how the
    /// job's engine is built and run.
    pub front: Front,
    /// Rate cap in I/O per second per job (`rate_iops`).
    pub rate_iops: Option<u64>,
    /// Offset distribution for random accesses (`random_distribution`).
    pub random_distribution: Distribution,
    /// Touch every block once per pass in random order (`randommap`); default off,
    /// so sizes are exactly what was asked.
    pub randommap: bool,
    /// `random_generator=lfsr`: the map is kept by the sequence itself (fio
    /// then keeps no random map, which decides its verify order).
    pub random_lfsr: bool,
    /// Issue an fsync after every N writes (`fsync`); 0 = never.
    pub fsync: u32,
    /// Write with FUA (`fua`, via RWF_DSYNC on direct I/O).
    pub fua: bool,
    /// Interval of the per-interval series (`log_interval`); default 1 s.
    pub log_interval: Duration,
    /// fio's log files and rate samples (`write_*_log`, `log_*`,
    /// `bwavgtime`, `iopsavgtime`).
    pub logs: crate::run::fio_logs::LogSpec,
    /// The options set for this job, as written, in order (fio's `job
    /// options`); the first `global_given` came from `[global]`.
    pub given: Vec<(String, String)>,
    /// How many of `given` a job file's `[global]` section set.
    pub global_given: usize,
    /// Every option set, in order, as given (a bare flag with no value),
    /// including those fio's `job options` leave out: the job again on one
    /// command line (`--showcmd`).
    pub set_order: Vec<(String, Option<String>)>,
    /// Where verify state files go (fio's `--aux-path`; None: the current
    /// directory).
    pub aux_path: Option<std::path::PathBuf>,
    /// Seed for the offset generator (`randseed`); default fixed so runs repeat.
    pub randseed: u64,
    /// Block alignment of random offsets (`blockalign`); default: the smallest size.
    pub blockalign: Option<u64>,
    /// Per-direction block sizes after the first (`bs=R,W,T`): write, trim.
    pub bs_dir: [Option<u64>; 2],
    /// Per-direction size mixes after the first (`bssplit=R,W,T`): write, trim.
    pub bssplit_dir: [Option<Vec<(u64, u32)>>; 2],
    /// `rw=MODE:N`: for sequential modes bytes added after each I/O (negative
    /// runs backwards); 0 = contiguous.
    pub rw_delta: i64,
    /// `rw=MODE:N` for random modes: I/Os issued sequentially from each
    /// random offset; 1 = a new random offset for every I/O.
    pub rw_seq_run: u32,
    /// Bandwidth cap per direction (`rate=R,W`), bytes/s; 0 = none.
    pub rate: [u64; 2],
    /// Per-direction IOPS caps (`rate_iops=R,W` with a comma).
    pub rate_iops_dir: Option<[u64; 2]>,
    /// Smallest average bandwidth per direction (`ratemin`), bytes/s; 0 = none.
    pub ratemin: [u64; 2],
    /// Smallest average IOPS per direction (`rate_iops_min`); 0 = none.
    pub rate_iops_min: [u64; 2],
    /// The window of `ratemin` and `rate_iops_min`, ms (`rate_cycle`).
    pub rate_cycle_ms: u64,
    /// `rate_process=poisson`: exponential gaps between I/Os with the rate's mean.
    pub rate_poisson: bool,
    /// Wait this long after the run starts before starting the job (`startdelay`).
    pub startdelay: Duration,
    /// Free text describing the job (`description`).
    pub description: Option<String>,
    /// Report the jobs of this job's reporting group as one (`group_reporting`).
    pub group_reporting: bool,
    /// Write until the device is full (`fill_device`): the whole block device.
    pub fill_device: bool,
    /// The verify family: `verify`, `do_verify`, `verify_pattern`,
    /// `verify_interval`, `buffer_pattern` ([`crate::job::verify::VerifyOpts`]).
    pub verify: crate::job::verify::VerifyOpts,
    /// Every engine's option block ([`crate::engines::opts::EngineBlocks`]).
    pub engine: crate::engines::opts::EngineBlocks,
    /// Error policy, verify extras, dedupe and compression
    /// (`continue_on_error`, `verify_backlog`, `dedupe_percentage`…).
    pub errkeys: crate::job::error_policy::ErrKeys,
    /// The same offsets every run (`randrepeat`); default on.
    pub randrepeat: bool,
    /// Files go in this directory (`directory`).
    pub directory: Option<String>,
    /// Name of files the job makes itself when no `filename` is given
    /// (`filename_format`); `$jobname`, `$jobnum`, `$filenum` are replaced.
    pub filename_format: Option<String>,
    /// The `ioengine` name as written, when it differs from drivelab's engine's.
    pub ioengine_as_written: Option<String>,
    /// Start a new reporting group with this job (`new_group`).
    pub new_group: bool,
    /// Do the job's I/O this many times over (`loops`); default 1.
    pub loops: u32,
    /// Start only once every clone of the earlier job of this name has
    /// finished (`wait_for`).
    pub wait_for: Option<String>,
    /// Size of each file (`filesize`); `size` then defaults to it times the files.
    pub filesize: Option<u64>,
    /// Multi-file options and filesystem engines (`nrfiles`,
    /// `file_service_type`, `ioengine=filecreate`, …; [`crate::engines::files`]).
    pub files: crate::engines::opts::files::FileOptions,
    /// `zonemode`: None when not given (then `zonesize` alone means
    /// strided, as in fio), Some(false) for none, Some(true) for strided.
    pub zonemode_strided: Option<bool>,
    /// Clone k of `numjobs` starts at `offset` + k × this (`offset_increment`).
    pub offset_increment: SizeSpec,
    /// `exitall` and `exit_what` ([`crate::job::flow::ExitOpts`]).
    pub exit: crate::job::flow::ExitOpts,
    /// Stop after this many I/Os, times `loops` (`number_ios`); 0 = no limit.
    pub number_ios: u64,
    /// Pause after every `thinktime_blocks` I/Os, once they completed (`thinktime`).
    pub thinktime: Duration,
    /// Part of each pause spent spinning on the clock (`thinktime_spin`).
    pub thinktime_spin: Duration,
    /// I/Os between two pauses (`thinktime_blocks`); default 1.
    pub thinktime_blocks: u32,
    /// `zonesize`, `zonerange`, `zoneskip`, bytes (0: not given).
    pub zonesize: u64,
    /// See `zonesize`.
    pub zonerange: u64,
    /// See `zonesize`.
    pub zoneskip: u64,
    /// `flow`, `flow_id`, `flow_sleep`.
    pub flow: crate::job::flow::FlowOpts,
    /// `prio`, `prioclass` and the `cmdprio*` options.
    pub prio: crate::job::prio::PrioOpts,
    /// `numa_cpu_nodes`, `numa_mem_policy`.
    pub numa: crate::job::numa::NumaOpts,
    /// `iodepth_batch*`, `iodepth_low`.
    pub batch: crate::job::batch::BatchOpts,
    /// fio's `latency_target` family (`latency_target.rs`).
    pub lat_target: crate::job::latency_target::LatSpec,
    /// fio's `steadystate` family (`steadystate.rs`).
    pub steady: crate::job::steadystate::SsSpec,
    /// `zonemode=zbd` and its options ([`crate::job::zbd`]).
    pub zbd: crate::job::zbd::ZbdOptions,
    /// fio's sync and page-cache options ([`crate::job::sync`]).
    pub syncs: crate::job::sync::SyncOpts,
    /// Options accepted with no effect of drivelab's own
    /// ([`crate::spec::accepted`]).
    pub accepted: crate::spec::accepted::Accepted,
    /// What the job's report shows ([`crate::run::report_opts`]).
    pub report: crate::run::report_opts::ReportOpts,
    /// How the job's results are written out ([`crate::run::output_opts`]).
    pub output: crate::run::output_opts::OutputOpts,
    /// Offsets and sizes beyond offset, bs and rw ([`crate::job::offsets`]).
    pub offsets: crate::job::offsets::OffsetOpts,
    /// When think time comes and what it does to a rate
    /// ([`crate::job::think`]).
    pub think: crate::job::think::ThinkOpts,
    /// Trims of verified writes ([`crate::job::trim`]).
    pub trims: crate::job::trim::TrimOpts,
    /// fio's iolog replay ([`crate::job::iolog_replay`]).
    pub replay: crate::job::iolog_replay::ReplayOpts,
    /// fio's `lockfile` ([`crate::job::lockfile`]).
    pub locks: crate::job::lockfile::LockOpts,
    /// The write hint and locked memory ([`crate::job::target_opts`]).
    pub target_opts: crate::job::target_opts::TargetOpts,
    /// The CPUs the job runs on ([`crate::job::cpus`]).
    pub cpus: crate::job::cpus::CpuOpts,
    /// What the write buffers hold ([`crate::job::buffers`]).
    pub buffers: crate::job::buffers::BufOpts,
    /// Commands run around the job ([`crate::run::exec_hooks`]).
    pub hooks: crate::run::exec_hooks::ExecHooks,
}

impl JobSpec {
    /// fio's `zonemode=strided`, when on: explicitly, or by `zonesize`
    /// alone; `zonerange` defaults to `zonesize`. `zonemode=strided`
    /// without `zonesize` is an error (as in fio).
    pub fn strided(&self) -> Result<Option<crate::job::types::Strided>, SpecError> {
        let on = self.zonemode_strided.unwrap_or(self.zonesize > 0);
        if !on {
            return Ok(None);
        }
        if self.zonesize == 0 {
            return Err(SpecError::Invalid(
                "zonemode=strided needs zonesize (the bytes to transfer in each zone), e.g. zonesize=256m".to_string(),
            ));
        }
        Ok(Some(crate::job::types::Strided {
            size: self.zonesize,
            range: if self.zonerange > 0 {
                self.zonerange
            } else {
                self.zonesize
            },
            skip: self.zoneskip,
        }))
    }
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            name: "drivelab".to_string(),
            filenames: Vec::new(),
            filename_splits: Vec::new(),
            rw: RwMode::Read,
            bs: 4096,
            bssplit: Vec::new(),
            rwmixread: 50,
            percentage_random: 100,
            access: None,
            iodepth: 1,
            numjobs: 1,
            runtime: None,
            time_based: false,
            size: None,
            io_size: None,
            offset: SizeSpec::Bytes(0),
            ramp_time: Duration::ZERO,
            direct: None,
            ioengine: EngineKind::IoUring,
            front: Front::new(&crate::engines::fronts::block::IO_URING),
            rate_iops: None,
            random_distribution: Distribution::Random,
            randommap: false,
            random_lfsr: false,
            fsync: 0,
            fua: false,
            log_interval: DEFAULT_LOG_INTERVAL,
            logs: crate::run::fio_logs::LogSpec::default(),
            given: Vec::new(),
            global_given: 0,
            set_order: Vec::new(),
            aux_path: None,
            randseed: 0x6472_6976_656c_6162, // "drivelab"
            blockalign: None,
            bs_dir: [None, None],
            bssplit_dir: [None, None],
            rw_delta: 0,
            rw_seq_run: 1,
            bsrange: None,
            rate: [0, 0],
            rate_iops_dir: None,
            ratemin: [0, 0],
            rate_iops_min: [0, 0],
            rate_cycle_ms: 1000,
            rate_poisson: false,
            startdelay: Duration::ZERO,
            description: None,
            group_reporting: false,
            fill_device: false,
            verify: crate::job::verify::VerifyOpts::default(),
            engine: crate::engines::opts::EngineBlocks::default(),
            errkeys: crate::job::error_policy::ErrKeys::default(),
            randrepeat: true,
            directory: None,
            filename_format: None,
            ioengine_as_written: None,
            new_group: false,
            loops: 1,
            wait_for: None,
            filesize: None,
            files: crate::engines::opts::files::FileOptions::default(),
            zonemode_strided: None,
            zbd: crate::job::zbd::ZbdOptions::default(),
            zonesize: 0,
            zonerange: 0,
            zoneskip: 0,
            flow: crate::job::flow::FlowOpts::default(),
            prio: crate::job::prio::PrioOpts::default(),
            numa: crate::job::numa::NumaOpts::default(),
            batch: crate::job::batch::BatchOpts::default(),
            offset_increment: SizeSpec::Bytes(0),
            exit: crate::job::flow::ExitOpts::default(),
            number_ios: 0,
            thinktime: Duration::ZERO,
            thinktime_spin: Duration::ZERO,
            thinktime_blocks: 1,
            lat_target: Default::default(),
            steady: Default::default(),
            syncs: Default::default(),
            accepted: Default::default(),
            report: Default::default(),
            output: Default::default(),
            offsets: Default::default(),
            think: Default::default(),
            trims: Default::default(),
            replay: Default::default(),
            locks: Default::default(),
            target_opts: Default::default(),
            cpus: Default::default(),
            buffers: Default::default(),
            hooks: Default::default(),
        }
    }
}

/// fio's `filename` list: names separated by `:`, where `\:` is a colon
/// inside a name (`/dev/disk/by-path/pci-0000\:00\:1f.2-ata-1`) and empty
/// names are dropped. Any other `\` stays as it is.
pub fn split_filenames(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Refuse a `filename` value that names an existing file or device as a
/// whole while the names `:` splits it into do not all exist: the user
/// meant the one path (a `/dev/disk/by-path/…:…` name), and splitting it
/// would make new files and leave the device alone. `place` puts a name
/// where the job looks for it (its `directory`).
pub fn check_filename_splits(
    spec: &JobSpec,
    place: &dyn Fn(&str) -> String,
) -> Result<(), SpecError> {
    let exists = |p: &str| std::path::Path::new(&place(p)).symlink_metadata().is_ok();
    for raw in &spec.filename_splits {
        let whole = raw.replace("\\:", ":");
        let parts = split_filenames(raw);
        if exists(&whole) && !parts.iter().all(|p| exists(p)) {
            return Err(SpecError::Invalid(format!(
                "filename={raw}: ':' separates file names, so this is {} files ({}), but {} exists as one path; write each ':' of the name as '\\:' ({})",
                parts.len(),
                parts.join(", "),
                place(&whole),
                raw.replace(':', "\\:").replace("\\\\:", "\\:"),
            )));
        }
    }
    Ok(())
}

/// A signed byte count (`-8k`).
fn parse_signed_bytes(key: &str, v: &str) -> Result<i64, SpecError> {
    let t = v.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let b = parse_bytes(key, body)? as i64;
    Ok(if neg { -b } else { b })
}

/// fio's `bsrange=MIN-MAX`: every multiple of MIN from MIN to MAX, equally likely.
fn parse_bsrange(key: &str, v: &str) -> Result<Vec<(u64, u32)>, SpecError> {
    let bad = |why: &str| SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: format!("MIN-MAX such as 4k-64k ({why})"),
    };
    let (lo, hi) = v.split_once('-').ok_or_else(|| bad("no '-'"))?;
    let lo = parse_bytes(key, lo)?;
    let hi = parse_bytes(key, hi)?;
    if lo == 0 || hi < lo {
        return Err(bad("MIN must be above 0 and at most MAX"));
    }
    let n = hi / lo;
    if n > 4096 {
        return Err(bad("more than 4096 sizes between MIN and MAX"));
    }
    Ok((1..=n).map(|k| (k * lo, 1)).collect())
}

/// The most files `opendir` takes: the walk stops past it (a job file
/// naming `/` is refused, not walked to the end).
const OPENDIR_MAX: usize = 1 << 16;

/// fio's `opendir`: the regular files under `dir`, at any depth, in name
/// order within each directory (symlinks and other kinds left out, as
/// fio's lstat walk leaves them); stops once past [`OPENDIR_MAX`].
fn files_under(dir: &std::path::Path, out: &mut Vec<String>) -> std::io::Result<()> {
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if out.len() > OPENDIR_MAX {
            return Ok(());
        }
        let kind = e.file_type()?;
        if kind.is_file() {
            out.push(e.path().display().to_string());
        } else if kind.is_dir() {
            files_under(&e.path(), out)?;
        }
    }
    Ok(())
}

/// The most job threads one run may start, summed over its jobs' `numjobs`
/// (fio's limit too). Each job is a thread with its own buffers and engine;
/// far more than this exhausts the process's memory maps and the thread
/// start-up aborts.
pub const MAX_TOTAL_JOBS: u32 = 4096;

/// Check that the jobs of one run ask for at most [`MAX_TOTAL_JOBS`] job
/// threads in all (the sum of their `numjobs`).
pub fn check_total_jobs<'a>(jobs: impl IntoIterator<Item = &'a JobSpec>) -> Result<(), SpecError> {
    let mut total: u64 = 0;
    let mut sections = 0usize;
    let mut largest: Option<(&str, u32)> = None;
    for j in jobs {
        total += u64::from(j.numjobs);
        sections += 1;
        if largest.is_none_or(|(_, n)| j.numjobs > n) {
            largest = Some((&j.name, j.numjobs));
        }
    }
    if total <= u64::from(MAX_TOTAL_JOBS) {
        return Ok(());
    }
    let (name, n) = largest.unwrap_or(("", 0));
    Err(SpecError::Invalid(format!(
        "the run asks for {total} job threads in all (numjobs summed over {sections} jobs; '{name}' alone has {n}); at most {MAX_TOTAL_JOBS} may run: lower numjobs or use fewer job sections"
    )))
}

/// A whole number within the bounds the option table declares for `key`.
/// fio's time options counted in microseconds: a bare number is µs, a
/// suffix (`ms`, `s`, …) says otherwise.
fn parse_usec(key: &str, v: &str) -> Result<Duration, SpecError> {
    let t = v.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        let n = parse_uint(key, t, 0, 1_000_000_000_000_000)?;
        return Ok(Duration::from_micros(n));
    }
    parse_duration(key, t).map_err(|_| SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: "a time such as 500 (µs when bare), 500us, 2ms or 1s".to_string(),
    })
}

fn parse_declared(key: &str, v: &str) -> Result<u64, SpecError> {
    let (min, max) = crate::spec::options::bounds(key);
    parse_uint(key, v, min, max)
}

fn parse_uint(key: &str, v: &str, min: u64, max: u64) -> Result<u64, SpecError> {
    let n: u64 = v.trim().parse().map_err(|_| SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: format!("a whole number from {min} to {max}"),
    })?;
    if n < min || n > max {
        return Err(SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: format!("a whole number from {min} to {max}"),
        });
    }
    Ok(n)
}

/// Parse fio's `bssplit`: `size/percent:size/percent…`. An entry without a
/// percentage shares what the others leave, as in fio.
pub(crate) fn parse_bssplit(key: &str, v: &str) -> Result<Vec<(u64, u32)>, SpecError> {
    let bad = |why: &str| SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: format!("size/percent pairs separated by ':', e.g. 512/10:4k/60:64k/30 ({why})"),
    };
    let mut out: Vec<(u64, Option<u32>)> = Vec::new();
    for part in v.split(':').filter(|p| !p.trim().is_empty()) {
        let (s, p) = match part.split_once('/') {
            Some((s, p)) => (s, Some(p)),
            None => (part, None),
        };
        let size = parse_bytes(key, s)?;
        if size == 0 {
            return Err(bad("a size of 0"));
        }
        let pct = match p {
            Some(p) if !p.trim().is_empty() => {
                let v = p
                    .trim()
                    .parse::<u32>()
                    .map_err(|_| bad("percent not a whole number"))?;
                if v > 100 {
                    return Err(bad("a percentage above 100"));
                }
                Some(v)
            }
            _ => None,
        };
        out.push((size, pct));
    }
    if out.is_empty() {
        return Err(bad("empty"));
    }
    // Each share is at most 100, so the sum fits easily; summed in u64 all
    // the same, as the count of entries is the user's.
    let given: u64 = out.iter().filter_map(|(_, p)| *p).map(u64::from).sum();
    if given > 100 {
        return Err(bad("percentages add up to more than 100"));
    }
    let open = out.iter().filter(|(_, p)| p.is_none()).count() as u32;
    let rest = 100 - given as u32;
    if open == 0 && given != 100 {
        return Err(bad("percentages must add up to 100"));
    }
    let mut res = Vec::with_capacity(out.len());
    let mut left = rest;
    let mut open_seen = 0;
    for (s, p) in out {
        let w = match p {
            Some(p) => p,
            None => {
                open_seen += 1;
                let share = if open_seen == open { left } else { rest / open };
                left -= share;
                share
            }
        };
        if w > 0 {
            res.push((s, w));
        }
    }
    Ok(res)
}

/// How many option families a job spec has (the rows of `families!`).
const FAMILIES: usize = 24;

/// A job spec's option families, each borrowed as `$r` (`&` or `&mut`):
/// the one list `family_of` and `families` take.
macro_rules! families {
    ($spec:ident, $($r:tt)+) => {
        [
            $($r)+ $spec.files,
            $($r)+ $spec.verify,
            $($r)+ $spec.exit,
            $($r)+ $spec.zbd,
            $($r)+ $spec.lat_target,
            $($r)+ $spec.steady,
            $($r)+ $spec.flow,
            $($r)+ $spec.prio,
            $($r)+ $spec.numa,
            $($r)+ $spec.batch,
            $($r)+ $spec.errkeys,
            $($r)+ $spec.syncs,
            $($r)+ $spec.accepted,
            $($r)+ $spec.report,
            $($r)+ $spec.output,
            $($r)+ $spec.offsets,
            $($r)+ $spec.think,
            $($r)+ $spec.trims,
            $($r)+ $spec.replay,
            $($r)+ $spec.locks,
            $($r)+ $spec.target_opts,
            $($r)+ $spec.cpus,
            $($r)+ $spec.buffers,
            $($r)+ $spec.hooks,
        ]
    };
}

impl JobSpec {
    /// The engine as the job names it in fio's terms: as written
    /// (`libaio`, `pvsync2`), else its front's own name (`e4defrag`,
    /// `cpuio`).
    pub fn fio_engine(&self) -> &str {
        self.ioengine_as_written
            .as_deref()
            .unwrap_or(self.front.name())
    }

    /// Set one option by its fio name. `value` is `None` for a bare flag
    /// (`--time_based`, `time_based` in a job file).
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<(), SpecError> {
        // Sizes are read in the job's kb_base (fio's get_kb_base).
        crate::spec::size::with_kb_base(u64::from(self.output.kb_base), || {
            self.set_value(key, value)
        })?;
        let name = lookup(key)?.name;
        self.set_order
            .push((name.to_string(), value.map(|v| v.trim().to_string())));
        // fio leaves a bare exitall out of the job options (`exitall=1`
        // is shown).
        if name == "exitall" && value.is_none() {
            return Ok(());
        }
        // And bare engine flags (`hipri`, `fixedbufs`, …; `hipri=1` is shown).
        if value.is_none() && crate::engines::opts::io::UNSHOWN_BARE.contains(&name) {
            return Ok(());
        }
        let shown = value.unwrap_or("").trim().to_string();
        // Set again in the same section: fio shows the last value once.
        let start = self.global_given.min(self.given.len());
        if let Some(at) = self.given[start..].iter().position(|(k, _)| k == name) {
            self.given.remove(start + at);
        }
        self.given.push((name.to_string(), shown));
        Ok(())
    }

    fn set_value(&mut self, key: &str, value: Option<&str>) -> Result<(), SpecError> {
        let decl = lookup(key)?;
        let key = decl.name;
        let v = match (value, decl.kind) {
            (Some(v), _) => v,
            (None, OptionKind::Bool) => "1",
            // fio: a bare write_*_log names the logs after the job.
            (None, _) if key.starts_with("write_") && key.ends_with("_log") => "",
            (None, _) => return Err(SpecError::MissingValue(key.to_string())),
        };
        if let Some(r) = crate::spec::refused::value_refusal(key, v) {
            return Err(SpecError::RefusedValue {
                key: key.to_string(),
                value: v.trim().to_string(),
                rule: r.rule,
                reason: r.reason,
            });
        }
        match key {
            "name" => {
                if v.trim().is_empty() {
                    return Err(SpecError::MissingValue(key.to_string()));
                }
                self.name = v.trim().to_string()
            }
            "filename" => {
                let names = split_filenames(v);
                if names.len() > 1 {
                    self.filename_splits.push(v.to_string());
                }
                self.filenames.extend(names);
            }
            "rw" | "readwrite" => {
                let (mode, modifier) = match v.split_once(':') {
                    Some((m, n)) => (m, Some(n)),
                    None => (v, None),
                };
                self.rw = RwMode::parse(mode).ok_or_else(|| SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect:
                        "read, write, randread, randwrite, rw, readwrite, randrw, trim, randtrim, trimwrite or randtrimwrite, optionally :N"
                            .to_string(),
                })?;
                self.rw_delta = 0;
                self.rw_seq_run = 1;
                if let Some(n) = modifier {
                    if self.rw.is_random() {
                        self.rw_seq_run = parse_uint(key, n, 1, u64::from(u32::MAX))? as u32;
                    } else {
                        self.rw_delta = parse_signed_bytes(key, n)?;
                    }
                }
            }
            "bs" | "blocksize" => {
                let dirs = per_direction(v);
                if dirs.iter().all(Option::is_none) {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "a block size such as 4k (READ,WRITE[,TRIM] sizes: 4k,64k)"
                            .to_string(),
                    });
                }
                let mut got = [None; 3];
                for (i, d) in dirs.iter().enumerate() {
                    if let Some(d) = d {
                        let b = parse_bytes(key, d)?;
                        if b == 0 {
                            return Err(SpecError::BadValue {
                                key: key.to_string(),
                                value: v.to_string(),
                                expect: "a block size above 0".to_string(),
                            });
                        }
                        got[i] = Some(b);
                    }
                }
                if let Some(b) = got[0] {
                    self.bs = b;
                    self.bssplit.clear();
                    self.bsrange = None;
                }
                for k in 0..2 {
                    if got[k + 1].is_some() {
                        self.bs_dir[k] = got[k + 1];
                        self.bssplit_dir[k] = None;
                    }
                }
                if dirs[0].is_some() && dirs[1].is_some() && got[0] == got[1] && got[1] == got[2] {
                    self.bs_dir = [None, None];
                }
            }
            "bssplit" | "bsrange" => {
                let dirs = per_direction(v);
                let parse = |d: &str| {
                    if key == "bsrange" {
                        parse_bsrange(key, d)
                    } else {
                        parse_bssplit(key, d)
                    }
                };
                let same = dirs[0] == dirs[1] && dirs[1] == dirs[2];
                if let Some(d) = dirs[0] {
                    self.bssplit = parse(d)?;
                    self.bsrange = (key == "bsrange").then(|| {
                        let sizes = self.bssplit.iter().map(|&(b, _)| b);
                        (sizes.clone().min().unwrap_or(0), sizes.max().unwrap_or(0))
                    });
                }
                for k in 0..2 {
                    if same {
                        self.bssplit_dir[k] = None;
                        self.bs_dir[k] = None;
                    } else if let Some(d) = dirs[k + 1] {
                        self.bssplit_dir[k] = Some(parse(d)?);
                    }
                }
            }
            _ => return self.set_sizing_value(key, v),
        }
        Ok(())
    }

    /// `set_value`'s keys of the mix, depth, job count, time, sizes, the
    /// I/O path and the engine.
    fn set_sizing_value(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        match key {
            "rwmixread" => self.rwmixread = parse_declared(key, v)? as u8,
            "rwmixwrite" => self.rwmixread = 100 - parse_declared(key, v)? as u8,
            "percentage_random" => self.percentage_random = parse_declared(key, v)? as u8,
            "iodepth" => self.iodepth = parse_declared(key, v)? as u32,
            "numjobs" => self.numjobs = parse_uint(key, v, 1, u64::from(MAX_TOTAL_JOBS))? as u32,
            "runtime" => {
                let d = parse_duration(key, v)?;
                self.runtime = if d.is_zero() { None } else { Some(d) };
            }
            "time_based" => self.time_based = parse_flag(key, v)?,
            // Sizes may be counted in zones (zonemode=zbd).
            "size" => self.size = Some(self.zbd.size_in(key, v)?),
            "io_size" | "io_limit" => self.io_size = Some(self.zbd.size_in(key, v)?),
            "offset" => self.offset = self.zbd.size_in(key, v)?,
            "ramp_time" => self.ramp_time = parse_duration(key, v)?,
            "direct" => self.direct = Some(parse_flag(key, v)?),
            "buffered" => self.direct = Some(!parse_flag(key, v)?),
            "ioengine" => {
                let name = v.trim().to_ascii_lowercase();
                let front = crate::engines::registry::lookup(&name).ok_or_else(|| SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect: "io_uring, libaio, posixaio (run on io_uring), psync, sync, vsync, pvsync, pvsync2, mmap, splice (run on psync), null or cpp_null (run on null), sg (SCSI commands), io_uring_cmd (NVMe commands to /dev/ngXnY), net or netsplice (sockets), a filesystem engine: filecreate, filestat, filedelete, dircreate, dirstat, dirdelete, ftruncate, falloc, e4defrag (ext4 extent moves), or cpuio (burn CPU) or exec (run a program)".to_string(),
                })?;
                self.files.engine = None;
                self.engine.noio.engine = None;
                front.choose(self, &name);
                self.front = Front::new(front);
            }
            _ => return self.set_pacing_value(key, v),
        }
        Ok(())
    }

    /// The option family that declares `key`, if one does.
    fn family_of(&mut self, key: &str) -> Option<&mut dyn OptionFamily> {
        let families: [&mut dyn OptionFamily; FAMILIES] = families!(self, &mut);
        families
            .into_iter()
            .find(|f| f.options().iter().any(|d| d.name == key))
    }

    /// Every option family of the job, to check.
    fn families(&self) -> [&dyn OptionFamily; FAMILIES] {
        families!(self, &)
    }

    /// `set_value`'s keys of pacing, job groups and the option families
    /// declared beside their stages (the file options, zbd's zone options,
    /// exitall and exit_what, verify, latency target,
    /// steady state, flow, priorities, batching, NUMA, the engines' blocks).
    fn set_pacing_value(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        // An engine's option: its front sets it in its block; a family's
        // (see `family_of`): the family sets it.
        if let Some(block) = crate::engines::opts::block_of(key) {
            (block.set)(&mut self.engine, key, v)?;
            if !self.engine.keys_set.contains(&key) {
                self.engine.keys_set.push(key);
            }
            return Ok(());
        }
        if let Some(family) = self.family_of(key) {
            return family.set(key, v);
        }
        match key {
            "rate_iops" => {
                if v.contains(',') {
                    let mut r = [0u64; 2];
                    for (k, d) in per_direction(v).iter().take(2).enumerate() {
                        if let Some(d) = d {
                            r[k] = parse_declared(key, d)?;
                        }
                    }
                    self.rate_iops = None;
                    self.rate_iops_dir = (r != [0, 0]).then_some(r);
                } else {
                    let n = parse_declared(key, v)?;
                    self.rate_iops = if n == 0 { None } else { Some(n) };
                    self.rate_iops_dir = None;
                }
            }
            "rate" | "ratemin" | "rate_iops_min" => {
                let mut r = [0u64; 2];
                for (k, d) in per_direction(v).iter().take(2).enumerate() {
                    if let Some(d) = d {
                        r[k] = if key == "rate_iops_min" {
                            parse_uint(key, d, 0, u64::MAX)?
                        } else {
                            parse_bytes(key, d)?
                        };
                    }
                }
                match key {
                    "rate" => self.rate = r,
                    "ratemin" => self.ratemin = r,
                    _ => self.rate_iops_min = r,
                }
            }
            "rate_process" => {
                self.rate_poisson = match v.trim() {
                    "linear" => false,
                    "poisson" => true,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "linear or poisson".to_string(),
                        })
                    }
                }
            }
            "startdelay" => self.startdelay = parse_duration(key, v)?,
            "description" => self.description = Some(v.trim().to_string()),
            "group_reporting" => self.group_reporting = parse_flag(key, v)?,
            "new_group" => self.new_group = parse_flag(key, v)?,
            "loops" => self.loops = parse_declared(key, v)? as u32,
            "wait_for" => {
                let n = v.trim();
                if n.is_empty() {
                    return Err(SpecError::MissingValue(key.to_string()));
                }
                self.wait_for = Some(n.to_string());
            }
            "zonemode" => {
                self.zbd.on = v.trim() == "zbd";
                self.zonemode_strided = match v.trim() {
                    "none" | "zbd" => Some(false),
                    "strided" => Some(true),
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "none, strided or zbd".to_string(),
                        })
                    }
                }
            }
            "offset_increment" => self.offset_increment = self.zbd.size_in(key, v)?,
            "number_ios" => self.number_ios = parse_declared(key, v)?,
            "thinktime" => self.thinktime = parse_usec(key, v)?,
            "thinktime_spin" => self.thinktime_spin = parse_usec(key, v)?,
            "thinktime_blocks" => self.thinktime_blocks = parse_declared(key, v)? as u32,
            "zonesize" => self.zonesize = parse_bytes(key, v)?,
            "zonerange" => self.zonerange = parse_bytes(key, v)?,
            "zoneskip" => self.zoneskip = parse_bytes(key, v)?,
            "filesize" => {
                let (b, range) = crate::engines::opts::files::parse_filesize(key, v)?;
                self.filesize = Some(b);
                self.files.filesize_range = range;
            }
            // Accepted with no change: drivelab reads the clock once per loop
            // turn, and lays out every file before any job starts.
            "gtod_reduce" | "create_serialize" => {
                parse_flag(key, v)?;
            }
            // What offload buys in fio — I/Os issued at their scheduled
            // times, latency counted from them — is how drivelab's loop
            // always issues; its submissions stay on the job's thread.
            "io_submit_mode" => match v.trim() {
                "inline" | "offload" => {}
                _ => {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "inline or offload".to_string(),
                    })
                }
            },
            "fill_device" | "fill_fs" => self.fill_device = parse_flag(key, v)?,
            _ => return self.set_data_value(key, v),
        }
        Ok(())
    }

    /// `set_value`'s keys of randomness, file naming, fio's log files and alignment.
    fn set_data_value(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        match key {
            "randrepeat" => self.randrepeat = parse_flag(key, v)?,
            "allrandrepeat" => {
                if parse_flag(key, v)? {
                    self.randrepeat = true;
                }
            }
            // A job file's stonewall is the job file's (spec::jobfile); a
            // single job has no earlier job to wait for.
            "stonewall" | "wait_for_previous" => {
                parse_flag(key, v)?;
            }
            "atomic" => {
                if parse_flag(key, v)? {
                    self.direct = Some(true);
                }
            }
            "random_generator" => match v.trim() {
                "tausworthe" | "tausworthe64" => self.random_lfsr = false,
                // lfsr's point is a sequence that visits every block once.
                "lfsr" => {
                    self.randommap = true;
                    self.random_lfsr = true;
                }
                _ => {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "tausworthe, tausworthe64 or lfsr".to_string(),
                    })
                }
            },
            "thread" | "threads" => {
                parse_flag(key, v)?;
            }
            "directory" => self.directory = Some(v.trim().to_string()),
            "opendir" => {
                let mut found = Vec::new();
                files_under(std::path::Path::new(v.trim()), &mut found).map_err(|e| {
                    SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: format!("a directory drivelab can list ({e})"),
                    }
                })?;
                if found.is_empty() || found.len() > OPENDIR_MAX {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: format!(
                            "a directory with from 1 to {OPENDIR_MAX} regular files under it ({})",
                            if found.is_empty() {
                                "none found"
                            } else {
                                "more found"
                            }
                        ),
                    });
                }
                self.filenames.extend(found);
            }
            "filename_format" => self.filename_format = Some(v.trim().to_string()),
            "random_distribution" => self.random_distribution = Distribution::parse(key, v)?,
            "norandommap" => self.randommap = !parse_flag(key, v)?,
            "randommap" => self.randommap = parse_flag(key, v)?,
            "fsync" => self.fsync = parse_declared(key, v)? as u32,
            "fua" => self.fua = parse_flag(key, v)?,
            "log_interval" => {
                // fio's log_avg_msec / log_interval is in ms when bare.
                let d = if v.trim().chars().all(|c| c.is_ascii_digit()) {
                    Duration::from_millis(parse_uint(key, v, 1, u64::MAX)?)
                } else {
                    parse_duration(key, v)?
                };
                if d < Duration::from_millis(1) {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "an interval of at least 1 ms (bare number = ms)".to_string(),
                    });
                }
                self.log_interval = d;
            }
            "write_bw_log" | "write_lat_log" | "write_iops_log" | "write_hist_log" => {
                // Bare (or 1, as fio's examples write it): the job's name,
                // decided when the job is run.
                let prefix = match v.trim() {
                    "" | "1" => String::new(),
                    p => p.to_string(),
                };
                let slot = match key {
                    "write_bw_log" => &mut self.logs.bw,
                    "write_lat_log" => &mut self.logs.lat,
                    "write_hist_log" => &mut self.logs.hist,
                    _ => &mut self.logs.iops,
                };
                *slot = Some(prefix);
            }
            "log_avg_msec" => self.logs.avg_msec = parse_declared(key, v)?,
            "log_offset" => self.logs.offset = parse_flag(key, v)?,
            "log_max_value" => self.logs.max_value = parse_flag(key, v)?,
            "rate_cycle" => self.rate_cycle_ms = parse_declared(key, v)?,
            "per_job_logs" => self.logs.per_job = parse_flag(key, v)?,
            "log_unix_epoch" => self.logs.unix_epoch = parse_flag(key, v)?,
            "log_alternate_epoch" => self.logs.alternate_epoch = parse_flag(key, v)?,
            "log_alternate_epoch_clock_id" => {
                self.logs.epoch_clock = parse_declared(key, v)? as i32
            }
            "log_hist_msec" => self.logs.hist_msec = parse_declared(key, v)?,
            "log_hist_coarseness" => self.logs.hist_coarseness = parse_declared(key, v)? as u32,
            "log_prio" => self.logs.prio = parse_flag(key, v)?,
            "bwavgtime" => self.logs.bw_avg_msec = parse_declared(key, v)?,
            "iopsavgtime" => self.logs.iops_avg_msec = parse_declared(key, v)?,
            "randseed" => self.randseed = parse_declared(key, v)?,
            "blockalign" | "ba" => {
                let b = parse_bytes(key, v)?;
                if b == 0 {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "an alignment above 0, a multiple of the logical block size (leave blockalign out to align to the block size)".to_string(),
                    });
                }
                self.blockalign = Some(b);
            }
            other => {
                // Every declared option must be handled above.
                return Err(SpecError::Invalid(format!(
                    "option '{other}' is declared but not handled; please report this"
                )));
            }
        }
        Ok(())
    }

    /// The access lines this job issues: a preset's lines, or the lines
    /// implied by `rw`, `bs`/`bssplit`, `rwmixread` and `percentage_random`.
    pub fn access_lines(&self) -> Vec<AccessLine> {
        if let Some(a) = &self.access {
            return a.clone();
        }
        let read_pct = self.rw.read_pct(self.rwmixread);
        let random_pct = if self.rw.is_random() {
            self.percentage_random
        } else {
            0
        };
        let reads: Vec<(u64, u32)> = if self.bssplit.is_empty() {
            vec![(self.bs, 100)]
        } else {
            self.bssplit.clone()
        };
        // The non-read direction: trims take the third value, writes the second.
        let k = usize::from(self.rw.write_kind() == WriteKind::Trim);
        let others: Vec<(u64, u32)> = match (&self.bssplit_dir[k], self.bs_dir[k]) {
            (Some(split), _) => split.clone(),
            (None, Some(b)) => vec![(b, 100)],
            (None, None) => reads.clone(),
        };
        let line = |(size, weight): (u64, u32), read_pct| AccessLine {
            size,
            weight,
            read_pct,
            random_pct,
        };
        if others == reads || read_pct == 100 || read_pct == 0 {
            let sizes = if read_pct == 0 { others } else { reads };
            return sizes.into_iter().map(|s| line(s, read_pct)).collect();
        }
        // Different sizes per direction: each direction's lines carry its
        // share of the mix, and the shares within a direction its split.
        let rsum: u32 = reads.iter().map(|s| s.1).sum::<u32>().max(1);
        let osum: u32 = others.iter().map(|s| s.1).sum::<u32>().max(1);
        let scale = |w: u32, sum: u32, pct: u8| {
            (u64::from(w) * u64::from(pct) * 100 / u64::from(sum)) as u32
        };
        let mut out: Vec<AccessLine> = reads
            .into_iter()
            .map(|(s, w)| line((s, scale(w, rsum, read_pct)), 100))
            .collect();
        out.extend(
            others
                .into_iter()
                .map(|(s, w)| line((s, scale(w, osum, 100 - read_pct)), 0)),
        );
        out.retain(|l| l.weight > 0);
        out
    }

    /// Checks that need no target: the job can be planned.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.filenames.is_empty() && self.filename_format.is_none() {
            return Err(SpecError::Invalid(format!(
                "job '{}' has no target: give --filename=PATH (a file or block device)",
                self.name
            )));
        }
        for family in self.families() {
            family.check()?;
        }
        crate::engines::opts::check_keys(self)?;
        for block in crate::engines::opts::BLOCKS {
            (block.check)(self)?;
        }
        if self.prio.has_cmdprio() && self.ioengine != EngineKind::IoUring {
            return Err(SpecError::Invalid(format!(
                "cmdprio options set a priority per I/O in io_uring submissions: give ioengine=io_uring or libaio (job '{}' has {})",
                self.name,
                self.ioengine.name()
            )));
        }
        let lines = self.access_lines();
        let total: u32 = lines.iter().map(|l| l.weight).sum();
        if total == 0 {
            return Err(SpecError::Invalid(format!(
                "job '{}' has an access mix whose weights add up to 0",
                self.name
            )));
        }
        if self.offsets.bs_unaligned && self.direct == Some(true) {
            return Err(SpecError::Invalid(format!(
                "bs_unaligned: job '{}' uses direct I/O, which moves whole sectors only; give direct=0 for sizes of any byte count",
                self.name
            )));
        }
        if self.output.block_errors && self.rw.write_kind().trims() {
            return Err(SpecError::Invalid(format!(
                "block_error_percentiles: job '{}' trims, and drivelab records no trim block lifetimes (fio's per-block trim states); leave the option out of trimming jobs",
                self.name
            )));
        }
        if self.rw.write_kind().trims() && self.fua {
            return Err(SpecError::Invalid(
                "fua applies to writes, not to trim".to_string(),
            ));
        }
        if self.fsync > 0 && self.rw.read_pct(self.rwmixread) == 100 {
            return Err(SpecError::Invalid(
                "fsync needs writes: use rw=write, randwrite, rw or randrw".to_string(),
            ));
        }
        if self.thinktime_spin > self.thinktime {
            return Err(SpecError::Invalid(format!(
                "thinktime_spin ({:?}) is part of thinktime ({:?}): give thinktime_spin at most thinktime",
                self.thinktime_spin, self.thinktime
            )));
        }
        Ok(())
    }

    /// The largest transfer size the job issues.
    pub fn max_bs(&self) -> u64 {
        self.access_lines()
            .iter()
            .map(|l| l.size)
            .max()
            .unwrap_or(self.bs)
    }

    /// The smallest transfer size the job issues.
    pub fn min_bs(&self) -> u64 {
        self.access_lines()
            .iter()
            .map(|l| l.size)
            .min()
            .unwrap_or(self.bs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::decl::OptionDecl;

    #[test]
    fn cpp_null_runs_on_null_and_says_so() {
        let mut j = JobSpec::default();
        j.set("ioengine", Some("cpp_null")).unwrap();
        assert_eq!(j.ioengine, EngineKind::Null);
        assert_eq!(j.ioengine_as_written.as_deref(), Some("cpp_null"));
        assert!(j.set("ioengine", Some("rdma")).is_err());
    }

    #[test]
    fn every_family_key_is_a_declared_option_with_one_owner() {
        // A family key that `lookup` does not find is never reached; one
        // that another family, the general table or an engine's block also
        // declares is set by whichever set_value asks first.
        let j = JobSpec::default();
        let mut seen: Vec<&str> = Vec::new();
        for family in j.families() {
            for d in family.options() {
                let key = d.name;
                assert_eq!(lookup(key).map(|d| d.name).ok(), Some(key), "{key}");
                assert!(!seen.contains(&key), "{key} is in two families");
                assert!(
                    crate::engines::opts::block_of(key).is_none(),
                    "{key} is an engine's option too"
                );
                assert!(
                    crate::spec::options::OPTIONS.iter().all(|o| o.name != key),
                    "{key} is in the general table too"
                );
                seen.push(key);
            }
        }
        // The families `set_value` reaches are the ones the option list
        // (and `run --help`) shows, one table each.
        let names = |t: &[OptionDecl]| t.iter().map(|d| d.name).collect::<Vec<_>>();
        let listed: Vec<Vec<&str>> = crate::spec::options::FAMILIES
            .iter()
            .map(|(_, t)| names(t))
            .collect();
        let held: Vec<Vec<&str>> = j.families().iter().map(|f| names(f.options())).collect();
        assert_eq!(listed, held, "spec::options::FAMILIES and families! differ");
        // A value a family refuses is the spec's error, naming the key.
        let mut k = JobSpec::default();
        for (key, v) in [
            ("max_open_zones", "4097"),
            ("exit_what", "some"),
            ("verify_interval", "100"),
            ("nrfiles", "0"),
        ] {
            let e = k.set(key, Some(v)).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }

    #[test]
    fn zones_follow_fio() {
        let mut j = JobSpec::default();
        assert_eq!(j.strided().unwrap(), None);
        // zonesize alone turns strided on; zonerange defaults to it.
        j.set("zonesize", Some("256m")).unwrap();
        j.set("zoneskip", Some("2g")).unwrap();
        let z = j.strided().unwrap().unwrap();
        assert_eq!((z.size, z.range, z.skip), (256 << 20, 256 << 20, 2 << 30));
        j.set("zonemode", Some("none")).unwrap();
        assert_eq!(j.strided().unwrap(), None);
        let mut k = JobSpec::default();
        k.set("zonemode", Some("strided")).unwrap();
        assert!(k.strided().is_err(), "strided needs zonesize");
        k.set("zonemode", Some("zbd")).unwrap();
        assert!(k.zbd.on && k.strided().unwrap().is_none());
        let e = k.set("zonemode", Some("zoned")).unwrap_err().to_string();
        assert!(e.contains("zonemode") && e.contains("zbd"), "{e}");
    }

    #[test]
    fn bssplit_parses_fio_syntax() {
        let v = parse_bssplit("bssplit", "512/10:4k/60:64k/30").unwrap();
        assert_eq!(v, vec![(512, 10), (4096, 60), (65536, 30)]);
        // Entries without a share split the rest evenly, as fio does.
        let v = parse_bssplit("bssplit", "4k/50:8k:16k").unwrap();
        assert_eq!(v, vec![(4096, 50), (8192, 25), (16384, 25)]);
        assert!(parse_bssplit("bssplit", "4k/50:8k/60").is_err());
        assert!(parse_bssplit("bssplit", "4k/50:8k/40").is_err());
        assert!(parse_bssplit("bssplit", "").is_err());
    }

    #[test]
    fn bssplit_shares_that_overflow_are_refused_not_a_panic() {
        // Found by the fuzz target `jobfile`: the shares were summed in u32,
        // so 4294967295 + 1 overflowed (a panic in debug builds; in release
        // the sum wrapped to 0).
        for v in [
            "4k/4294967295:8k/1",
            "4k/101",
            "4k/4294967296",
            "4k/100:8k/4294967295",
        ] {
            let e = parse_bssplit("bssplit", v).unwrap_err().to_string();
            assert!(e.contains("bssplit"), "{v}: {e}");
        }
        let e = parse_bssplit("bssplit", "4k/4294967295:8k/1").unwrap_err();
        assert!(e.to_string().contains("above 100"), "{e}");
        let many = vec!["512/1"; 100].join(":");
        assert_eq!(parse_bssplit("bssplit", &many).unwrap().len(), 100);
    }

    #[test]
    fn set_accepts_fio_names_and_rejects_unknown_ones() {
        let mut j = JobSpec::default();
        j.set("rw", Some("randrw")).unwrap();
        j.set("rwmixread", Some("70")).unwrap();
        j.set("bs", Some("8k")).unwrap();
        j.set("iodepth", Some("32")).unwrap();
        j.set("time_based", None).unwrap();
        j.set("filename", Some("/dev/a:/dev/b")).unwrap();
        assert_eq!(j.filename_splits, vec!["/dev/a:/dev/b"]);
        assert_eq!(j.rw, RwMode::RandRw);
        assert_eq!(j.rwmixread, 70);
        assert_eq!(j.bs, 8192);
        assert_eq!(j.iodepth, 32);
        assert!(j.time_based);
        assert_eq!(j.filenames, vec!["/dev/a", "/dev/b"]);
        let e = j.set("blocksz", Some("4k")).unwrap_err();
        assert!(matches!(e, SpecError::UnknownOption { .. }), "{e:?}");
        assert!(e.to_string().contains("blocksz"));
        assert!(j.set("iodepth", Some("0")).is_err());
        assert!(j.set("rw", Some("randomread")).is_err());
        assert!(j.set("bs", None).is_err());
    }

    #[test]
    fn access_lines_follow_rw_and_bssplit() {
        let mut j = JobSpec::default();
        j.set("rw", Some("randrw")).unwrap();
        j.set("rwmixread", Some("80")).unwrap();
        j.set("bssplit", Some("4k/60:64k/40")).unwrap();
        let l = j.access_lines();
        assert_eq!(l.len(), 2);
        assert!(l.iter().all(|l| l.read_pct == 80 && l.random_pct == 100));
        assert_eq!(j.max_bs(), 65536);
        assert_eq!(j.min_bs(), 4096);
        j.set("rw", Some("write")).unwrap();
        assert!(j
            .access_lines()
            .iter()
            .all(|l| l.read_pct == 0 && l.random_pct == 0));
    }

    #[test]
    fn distributions_parse() {
        let mut j = JobSpec::default();
        j.set("random_distribution", Some("zipf:1.2")).unwrap();
        assert_eq!(j.random_distribution, Distribution::Zipf(1.2));
        j.set("random_distribution", Some("pareto:0.9")).unwrap();
        assert_eq!(j.random_distribution, Distribution::Pareto(0.9));
        j.set("random_distribution", Some("normal")).unwrap();
        assert_eq!(j.random_distribution, Distribution::Normal(10.0));
        j.set("random_distribution", Some("zipf")).unwrap();
        assert_eq!(j.random_distribution, Distribution::Zipf(1.1));
        j.set("random_distribution", Some("pareto")).unwrap();
        assert_eq!(j.random_distribution, Distribution::Pareto(0.2));
        assert!(j.set("random_distribution", Some("zipf:")).is_err());
        assert!(j.set("random_distribution", Some("pareto:2")).is_err());
    }

    #[test]
    fn numjobs_in_three_sections_over_the_total_is_an_error() {
        let mut jobs = Vec::new();
        for name in ["a", "b", "c"] {
            let mut j = JobSpec {
                name: name.to_string(),
                ..JobSpec::default()
            };
            j.set("numjobs", Some("4096")).unwrap();
            jobs.push(j);
        }
        let e = check_total_jobs(&jobs).unwrap_err().to_string();
        assert!(e.contains("12288 job threads"), "{e}");
        assert!(e.contains("at most 4096"), "{e}");
        assert!(check_total_jobs(&jobs[..1]).is_ok());
        jobs[1].set("numjobs", Some("4095")).unwrap();
        jobs[2].set("numjobs", Some("1")).unwrap();
        assert!(check_total_jobs(&jobs[1..]).is_ok());
        assert!(check_total_jobs(&jobs).is_err());
        assert!(JobSpec::default().set("numjobs", Some("4097")).is_err());
    }

    #[test]
    fn validate_requires_a_target() {
        let j = JobSpec::default();
        assert!(j.validate().unwrap_err().to_string().contains("--filename"));
    }

    #[test]
    fn per_direction_sizes_split_the_mix_by_direction() {
        let mut j = JobSpec::default();
        j.set("rw", Some("randrw")).unwrap();
        j.set("rwmixread", Some("70")).unwrap();
        j.set("bs", Some("4k,64k")).unwrap();
        let l = j.access_lines();
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].size, l[0].read_pct), (4096, 100));
        assert_eq!((l[1].size, l[1].read_pct), (65536, 0));
        assert_eq!(l[0].weight * 30, l[1].weight * 70);
        // bssplit per direction; writes only: the write split alone.
        j.set("bssplit", Some("64k/40:1m/60,1m/100")).unwrap();
        assert_eq!(j.bssplit, vec![(65536, 40), (1 << 20, 60)]);
        j.set("rw", Some("write")).unwrap();
        assert_eq!(
            j.access_lines().iter().map(|l| l.size).collect::<Vec<_>>(),
            vec![1 << 20]
        );
        // One value: every direction.
        j.set("bs", Some("8k")).unwrap();
        assert_eq!(j.access_lines().len(), 1);
        assert_eq!(j.max_bs(), 8192);
        // ",16k": reads keep theirs.
        j.set("bs", Some(",16k")).unwrap();
        assert_eq!((j.bs, j.bs_dir[0]), (8192, Some(16384)));
    }

    #[test]
    fn rw_modifiers_rates_and_ranges_parse() {
        let mut j = JobSpec::default();
        j.set("rw", Some("read:-8k")).unwrap();
        assert_eq!((j.rw, j.rw_delta), (RwMode::Read, -8192));
        j.set("rw", Some("randread:8")).unwrap();
        assert_eq!((j.rw_seq_run, j.rw_delta), (8, 0));
        // opendir: a tree with no regular file in it is refused.
        let empty = drivelab_testkit::TempDir::new("opendir-empty");
        std::fs::create_dir(empty.join("sub")).unwrap();
        let e = j
            .set("opendir", Some(empty.path().to_str().unwrap()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("none found"), "{e}");
        assert!(j.set("rw", Some("randread:x")).is_err());
        j.set("rate", Some("500k,1m")).unwrap();
        assert_eq!(j.rate, [500 << 10, 1 << 20]);
        j.set("rate", Some(",1m")).unwrap();
        assert_eq!(j.rate, [0, 1 << 20]);
        j.set("rate_iops", Some("300,300")).unwrap();
        assert_eq!((j.rate_iops, j.rate_iops_dir), (None, Some([300, 300])));
        assert!(j.set("rate_process", Some("bursty")).is_err());
        j.set("bsrange", Some("4k-16k")).unwrap();
        assert_eq!(
            j.bssplit,
            vec![(4096, 1), (8192, 1), (12288, 1), (16384, 1)]
        );
        assert!(j.set("bsrange", Some("16k-4k")).is_err());
        j.set("timeout", Some("60")).unwrap();
        assert_eq!(j.runtime, Some(Duration::from_secs(60)));
        j.set("ioengine", Some("libaio")).unwrap();
        assert_eq!(
            (j.ioengine, j.ioengine_as_written.as_deref()),
            (EngineKind::IoUring, Some("libaio"))
        );
        j.set("ioengine", Some("pvsync2")).unwrap();
        assert_eq!(j.ioengine, EngineKind::Psync);
        j.set("ioengine", Some("psync")).unwrap();
        assert_eq!(j.ioengine_as_written, None);
        let e = j
            .set("ioengine", Some("windowsaio"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ioengine") && e.contains("libaio"), "{e}");
    }

    #[test]
    fn zoned_distributions_parse_and_must_add_up() {
        let mut j = JobSpec::default();
        j.set("random_distribution", Some("zoned:50/5:30/15:20/"))
            .unwrap();
        let Distribution::Zoned(z) = &j.random_distribution else {
            panic!("{:?}", j.random_distribution)
        };
        assert_eq!(z.len(), 3);
        assert_eq!(z[2].len, SizeSpec::Percent(80.0));
        j.set("random_distribution", Some("zoned_abs:60/1m:40/3m"))
            .unwrap();
        assert!(j
            .set("random_distribution", Some("zoned:50/5:30/15"))
            .is_err());
        assert!(j
            .set("random_distribution", Some("zoned:50/5:40/95"))
            .is_err());
    }

    #[test]
    fn verify_pattern_alone_means_verify_pattern() {
        let mut j = JobSpec::default();
        j.set("verify_pattern", Some("0xaa555aa5")).unwrap();
        assert_eq!(j.verify.pattern, Some(vec![0xaa, 0x55, 0x5a, 0xa5]));
        assert_eq!(j.verify.kind, Some(crate::job::types::VerifyKind::Pattern));
        j.set("verify_pattern", Some("\"ab\"")).unwrap();
        assert_eq!(j.verify.pattern, Some(b"ab".to_vec()));
        assert!(j.set("verify_interval", Some("100")).is_err());
    }
}
