//! Every workload option, declared once: name, aliases, kind, default,
//! bounds, unit and help. The command line, the job-file parser, validation
//! and `drivelab run --help` all read this table, so they cannot disagree.
//! Bounds are the limits of what runs the option: `iodepth` stops at the
//! engine's [`MAX_DEPTH`] (io_uring's 32768 entries), `numjobs` at the total
//! job-thread cap.

use drivelab_engine::engine::MAX_DEPTH;

use crate::spec::decl::opt;
pub use crate::spec::decl::{OptionDecl, OptionKind};
use crate::SpecError;

/// The options every job takes (fio's names and units) that belong to no
/// family. Each option family's are declared beside the family
/// ([`FAMILIES`]), each engine's beside its option block under
/// `engines/opts/`; [`all`] is the three.
pub const OPTIONS: &[OptionDecl] = &[
    opt!("name", [], Text, "drivelab", "job name"),
    opt!(
        "filename",
        [],
        Text,
        "",
        "target file or block device; repeat or separate with ':' for several"
    ),
    opt!(
        "rw",
        ["readwrite"],
        Text,
        "read",
        "read, write, randread, randwrite, rw/readwrite, randrw, trim, randtrim, trimwrite, randtrimwrite (each block trimmed, then written); MODE:N adds N bytes after each sequential I/O (read:-8k runs backwards), or issues N sequential I/Os per random offset"
    ),
    opt!(
        "bs",
        ["blocksize"],
        Size,
        "4k",
        "transfer size; READ,WRITE[,TRIM] sizes each direction (bs=4k,64k)"
    ),
    opt!(
        "bsrange",
        ["blocksize_range"],
        Text,
        "",
        "MIN-MAX: every multiple of MIN up to MAX, equally often; READ,WRITE per direction"
    ),
    opt!(
        "bssplit",
        [],
        Text,
        "",
        "size mix, fio syntax: 512/10:4k/60:64k/30 (percent of I/Os); READ,WRITE per direction"
    ),
    opt!(
        "rwmixread",
        [],
        Int,
        "50",
        "percent of reads in rw/randrw",
        0,
        100,
        "%"
    ),
    opt!(
        "rwmixwrite",
        [],
        Int,
        "50",
        "percent of writes in rw/randrw",
        0,
        100,
        "%"
    ),
    opt!(
        "percentage_random",
        [],
        Int,
        "100",
        "percent of random offsets in random modes",
        0,
        100,
        "%"
    ),
    opt!(
        "iodepth",
        [],
        Int,
        "1",
        "outstanding I/Os per job",
        1,
        MAX_DEPTH as u64,
        "I/Os in flight"
    ),
    opt!(
        "numjobs",
        [],
        Int,
        "1",
        "number of clones of the job (one thread each)",
        1,
        crate::MAX_TOTAL_JOBS as u64,
        "threads"
    ),
    opt!(
        "runtime",
        ["timeout"],
        Time,
        "",
        "run time limit (bare = seconds); alone, the run is time-based"
    ),
    opt!(
        "time_based",
        [],
        Bool,
        "0",
        "run for the whole runtime, looping over the region"
    ),
    opt!(
        "size",
        [],
        SizeOrPercent,
        "whole target",
        "region per job, split over the targets (or N%)"
    ),
    opt!(
        "io_size",
        ["io_limit"],
        SizeOrPercent,
        "size",
        "bytes of I/O to do, looping over the region"
    ),
    opt!(
        "offset",
        [],
        SizeOrPercent,
        "0",
        "start of the region (or N%)"
    ),
    opt!(
        "offset_increment",
        [],
        SizeOrPercent,
        "0",
        "clone k of numjobs (from 0) starts at offset + k times this (or N% of the target)"
    ),
    opt!("ramp_time", [], Time, "0", "run this long before measuring"),
    opt!(
        "direct",
        [],
        Bool,
        "1 (block devices; files where supported)",
        "O_DIRECT: bypass the page cache"
    ),
    opt!("buffered", [], Bool, "0", "the opposite of direct"),
    opt!(
        "ioengine",
        [],
        Text,
        "io_uring",
        "io_uring, psync, null, sg, io_uring_cmd, e4defrag, net, cpuio or exec; fio's libaio and posixaio run on io_uring, sync, vsync, pvsync, pvsync2, mmap and splice on psync (the same reads and writes of the files, through pread/pwrite), cpp_null on null (the run says so once); sg sends SCSI commands to a SCSI disk, io_uring_cmd NVMe commands to a namespace's /dev/ngXnY; e4defrag moves a donor's extents into ext4 files on writes; net and netsplice move data over sockets; cpuio burns CPU, exec runs a program (no I/O)"
    ),
    opt!(
        "rate_iops",
        [],
        Int,
        "0 (no cap)",
        "cap in I/O per second per job (READ,WRITE: per direction); latency is also measured from the intended issue time",
        0,
        u64::MAX,
        "I/O per second"
    ),
    opt!(
        "random_distribution",
        [],
        Text,
        "random",
        "random, zipf:THETA, pareto:H, normal[:SIGMA%], zoned:ACCESS%/RANGE%:… (e.g. zoned:50/5:30/15:20/), zoned_abs:ACCESS%/SIZE:…"
    ),
    opt!(
        "rate",
        [],
        Text,
        "0 (no cap)",
        "bandwidth cap per direction, READ[,WRITE] in bytes/s (k = 1024)"
    ),
    opt!(
        "ratemin",
        ["rate_min"],
        Text,
        "0 (none)",
        "fail the job when its bandwidth over a rate_cycle window falls below this, READ[,WRITE] in bytes/s (checked from 2 s into the run, as fio)"
    ),
    opt!(
        "rate_iops_min",
        [],
        Text,
        "0 (none)",
        "fail the job when its IOPS over a rate_cycle window falls below this, READ[,WRITE] (checked from 2 s into the run, as fio)"
    ),
    opt!(
        "rate_cycle",
        ["ratecycle"],
        Int,
        "1000",
        "the window of ratemin and rate_iops_min, ms",
        1,
        u32::MAX as u64,
        "ms"
    ),
    opt!(
        "rate_process",
        [],
        Text,
        "linear",
        "linear (evenly spaced I/Os) or poisson (exponential gaps with the same mean)"
    ),
    opt!(
        "startdelay",
        [],
        Time,
        "0",
        "start the job this long after the others of its group"
    ),
    opt!("description", [], Text, "", "free text, shown in the job options"),
    opt!(
        "wait_for",
        [],
        Text,
        "",
        "start once every clone of the earlier job NAME has finished"
    ),
    opt!(
        "zonemode",
        [],
        Text,
        "none",
        "none; strided: I/O stays in a zone until zonesize bytes are done, then skips zoneskip bytes; zbd: zoned block devices, writes at write pointers"
    ),
    opt!(
        "zonesize",
        [],
        Size,
        "",
        "zonemode=strided: bytes to transfer in a zone before moving on (given alone, it turns strided on)"
    ),
    opt!(
        "zonerange",
        [],
        Size,
        "zonesize",
        "zonemode=strided: length of a zone"
    ),
    opt!(
        "zoneskip",
        [],
        Size,
        "0",
        "zonemode=strided: bytes skipped after each zone"
    ),
    opt!(
        "filesize",
        [],
        Size,
        "size / files",
        "size of each file (lo-hi: a random size per file); size (the I/O to do) defaults to it times the files"
    ),
    opt!(
        "loops",
        [],
        Int,
        "1",
        "do the job's I/O (size or io_size) this many times over",
        1,
        u32::MAX as u64,
        "passes"
    ),
    opt!(
        "number_ios",
        [],
        Int,
        "0 (no limit)",
        "stop the job after this many I/Os (times loops), even when size or runtime would go on",
        0,
        u64::MAX,
        "I/Os"
    ),
    OptionDecl {
        name: "thinktime",
        aliases: &[],
        kind: OptionKind::Time,
        default: "0",
        bounds: None,
        unit: "us when bare",
        help: "after every thinktime_blocks I/Os, wait for them to complete, then issue nothing for this long",
    },
    OptionDecl {
        name: "thinktime_spin",
        aliases: &[],
        kind: OptionKind::Time,
        default: "0",
        bounds: None,
        unit: "us when bare",
        help: "of each thinktime, busy-spin this long on the clock instead of sleeping (at most thinktime)",
    },
    opt!(
        "thinktime_blocks",
        [],
        Int,
        "1",
        "I/Os issued between two thinktimes (so at most this many are in flight)",
        1,
        u32::MAX as u64,
        "I/Os"
    ),
    opt!(
        "gtod_reduce",
        [],
        Bool,
        "0",
        "accepted: drivelab already reads the clock once per loop turn, not per I/O"
    ),
    opt!(
        "io_submit_mode",
        [],
        Text,
        "inline",
        "inline or offload, accepted: drivelab's loop always issues each I/O at its scheduled time and measures latency from it, which is what offload is for in fio"
    ),
    opt!(
        "create_serialize",
        [],
        Bool,
        "1",
        "accepted: drivelab lays out every file before any job starts"
    ),
    opt!(
        "new_group",
        [],
        Bool,
        "0",
        "start a new reporting group with this job (as a stonewall does)"
    ),
    opt!(
        "group_reporting",
        [],
        Bool,
        "0",
        "report each reporting group (jobs up to a stonewall or new_group) as one job, summed"
    ),
    opt!(
        "fill_device",
        ["fill_fs"],
        Bool,
        "0",
        "write the whole block device (the job's size is the device's)"
    ),
    opt!(
        "allrandrepeat",
        [],
        Bool,
        "0",
        "make every random sequence repeat from run to run (as randrepeat; drivelab's other generators are seeded from randseed already)"
    ),
    opt!(
        "stonewall",
        ["wait_for_previous"],
        Bool,
        "0",
        "in a job file: start this job after every earlier job has finished, and begin a new reporting group"
    ),
    opt!(
        "atomic",
        [],
        Bool,
        "0",
        "direct I/O (fio adds O_ATOMIC, a flag Linux does not have and ignores, so the I/O is direct I/O)"
    ),
    opt!(
        "randrepeat",
        [],
        Bool,
        "1",
        "the same random offsets every run (0: seeded from the clock)"
    ),
    opt!(
        "random_generator",
        [],
        Text,
        "tausworthe",
        "accepted for fio's names: tausworthe, tausworthe64 (drivelab's xoshiro generator either way), lfsr (each block once per pass, as randommap)"
    ),
    opt!(
        "thread",
        ["threads"],
        Bool,
        "1",
        "accepted: drivelab runs every job as a thread of one process anyway"
    ),
    opt!(
        "directory",
        [],
        Text,
        ".",
        "directory of the job's files (with filename, or fio's default names)"
    ),
    opt!(
        "opendir",
        [],
        Text,
        "",
        "the regular files under this directory, at any depth, are the job's files (symlinks and other kinds left out), each read or written whole unless size says otherwise"
    ),
    opt!(
        "filename_format",
        [],
        Text,
        "$jobname.$jobnum.$filenum",
        "name of files when no filename is given ($jobname, $jobnum, $filenum)"
    ),
    opt!(
        "randommap",
        [],
        Bool,
        "0",
        "random order that touches every block once per pass (sizes stay exact)"
    ),
    opt!(
        "norandommap",
        [],
        Bool,
        "1",
        "the opposite of randommap (drivelab's default)"
    ),
    opt!(
        "fsync",
        [],
        Int,
        "0",
        "fsync after every N writes",
        0,
        u32::MAX as u64,
        "writes"
    ),
    opt!(
        "fua",
        [],
        Bool,
        "0",
        "write with Force Unit Access (RWF_DSYNC on direct I/O)"
    ),
    opt!(
        "log_interval",
        [],
        Time,
        "1000",
        "interval of the timeseries (bare = ms)"
    ),
    opt!(
        "write_bw_log",
        [],
        Text,
        "",
        "write fio's bandwidth log PREFIX_bw.N.log (bare: the job name); KiB/s per I/O, or per log_avg_msec"
    ),
    opt!(
        "write_lat_log",
        [],
        Text,
        "",
        "write fio's latency logs PREFIX_lat.N.log, _clat and _slat (bare: the job name); ns"
    ),
    opt!(
        "write_iops_log",
        [],
        Text,
        "",
        "write fio's IOPS log PREFIX_iops.N.log (bare: the job name)"
    ),
    opt!(
        "write_hist_log",
        [],
        Text,
        "",
        "write fio's latency histogram log PREFIX_clat_hist.N.log every log_hist_msec (bare: the job name)"
    ),
    opt!(
        "log_hist_msec",
        [],
        Int,
        "0",
        "window of the histogram log (0: no entries, as fio)",
        0,
        86_400_000,
        "ms"
    ),
    opt!(
        "log_hist_coarseness",
        [],
        Int,
        "0",
        "sum 2^N of fio's 1856 latency buckets per histogram log field",
        0,
        6,
        ""
    ),
    opt!(
        "log_avg_msec",
        [],
        Int,
        "0",
        "average the bw/iops/lat logs over this many ms (0: one entry per I/O)",
        0,
        86_400_000,
        "ms"
    ),
    opt!(
        "log_max_value",
        [],
        Bool,
        "0",
        "with log_avg_msec: log each window's largest latency rather than its mean (the bw and iops logs hold one rate per window either way)"
    ),
    opt!(
        "per_job_logs",
        [],
        Bool,
        "1",
        "name the log files PREFIX_KIND.N.log with the job's number (0: PREFIX_KIND.log, shared by jobs of the same prefix)"
    ),
    opt!(
        "log_unix_epoch",
        [],
        Bool,
        "0",
        "log times in ms since the Unix epoch instead of since the job started"
    ),
    opt!(
        "log_alternate_epoch",
        [],
        Bool,
        "0",
        "log times in ms since the epoch of the clock log_alternate_epoch_clock_id names instead of since the job started"
    ),
    opt!(
        "log_alternate_epoch_clock_id",
        [],
        Int,
        "0",
        "the clock_gettime clock whose epoch log_alternate_epoch and log_unix_epoch use: 0 realtime (the Unix epoch), 1 monotonic, 7 boottime, …",
        0,
        i32::MAX as u64,
        "clock id"
    ),
    opt!(
        "log_offset",
        [],
        Bool,
        "0",
        "add each I/O's offset to the log entries"
    ),
    opt!(
        "log_prio",
        [],
        Bool,
        "0",
        "log each I/O's priority value instead of whether it is real-time class (drivelab issues every I/O at the default priority: 0)"
    ),
    opt!(
        "bwavgtime",
        [],
        Int,
        "500",
        "window of the bandwidth samples (bw_min/max/mean/dev)",
        1,
        86_400_000,
        "ms"
    ),
    opt!(
        "iopsavgtime",
        [],
        Int,
        "500",
        "window of the IOPS samples (iops_min/max/mean/stddev)",
        1,
        86_400_000,
        "ms"
    ),
    opt!(
        "randseed",
        [],
        Int,
        "fixed",
        "seed of the offset generator",
        0,
        u64::MAX,
        ""
    ),
    opt!(
        "blockalign",
        ["ba"],
        Size,
        "smallest size",
        "alignment of random offsets"
    ),
];

/// Each option family's options, declared beside the family (see
/// [`crate::spec::family`]), under the heading `run --help` gives them. A
/// family is listed here and in `JobSpec`'s `families!`; a test holds the
/// two to the same families.
pub const FAMILIES: &[(&str, &[OptionDecl])] = &[
    ("files", crate::engines::opts::files::FileOptions::OPTIONS),
    ("verify", crate::job::verify::VerifyOpts::OPTIONS),
    ("exitall", crate::job::flow::ExitOpts::OPTIONS),
    ("zonemode=zbd", crate::job::zbd::ZbdOptions::OPTIONS),
    (
        "latency target",
        crate::job::latency_target::LatSpec::OPTIONS,
    ),
    ("steady state", crate::job::steadystate::SsSpec::OPTIONS),
    ("flow", crate::job::flow::FlowOpts::OPTIONS),
    ("priorities", crate::job::prio::PrioOpts::OPTIONS),
    ("NUMA", crate::job::numa::NumaOpts::OPTIONS),
    ("batching", crate::job::batch::BatchOpts::OPTIONS),
    (
        "error policy, verify and dedupe",
        crate::job::error_policy::ErrKeys::OPTIONS,
    ),
    ("sync and page cache", crate::job::sync::SyncOpts::OPTIONS),
    (
        "accepted (no effect of drivelab's own)",
        crate::spec::accepted::Accepted::OPTIONS,
    ),
    ("report", crate::run::report_opts::ReportOpts::OPTIONS),
    ("output", crate::run::output_opts::OutputOpts::OPTIONS),
    (
        "offsets and sizes",
        crate::job::offsets::OffsetOpts::OPTIONS,
    ),
    ("think time", crate::job::think::ThinkOpts::OPTIONS),
    (
        "trims of verified writes",
        crate::job::trim::TrimOpts::OPTIONS,
    ),
    (
        "iolog replay",
        crate::job::iolog_replay::ReplayOpts::OPTIONS,
    ),
    ("file locks", crate::job::lockfile::LockOpts::OPTIONS),
    (
        "targets and memory",
        crate::job::target_opts::TargetOpts::OPTIONS,
    ),
    ("CPU placement", crate::job::cpus::CpuOpts::OPTIONS),
    ("write buffers", crate::job::buffers::BufOpts::OPTIONS),
    (
        "commands around the job",
        crate::run::exec_hooks::ExecHooks::OPTIONS,
    ),
];

/// Every declared option: [`OPTIONS`], each family's ([`FAMILIES`]), then
/// each engine's, block by block ([`crate::engines::opts::options`]).
pub fn all() -> impl Iterator<Item = &'static OptionDecl> {
    OPTIONS
        .iter()
        .chain(FAMILIES.iter().flat_map(|(_, t)| t.iter()))
        .chain(crate::engines::opts::options())
}

/// The declared bounds of whole-number option `key` (its name or alias).
pub fn bounds(key: &str) -> (u64, u64) {
    lookup(key)
        .ok()
        .and_then(|d| d.bounds)
        .unwrap_or((0, u64::MAX))
}

/// Find an option by name or alias; unknown names get a typed error with a
/// suggestion when one is close.
pub fn lookup(key: &str) -> Result<&'static OptionDecl, SpecError> {
    // fio spells options with underscores; accept hyphens too (--log-interval).
    let norm = key.trim().replace('-', "_");
    let k = norm.as_str();
    if let Some(d) = all().find(|d| d.name == k || d.aliases.contains(&k)) {
        return Ok(d);
    }
    if let Some(r) = crate::spec::refused::refusal(k) {
        return Err(SpecError::Refused {
            key: k.to_string(),
            rule: r.rule,
            reason: r.reason,
        });
    }
    let best = all()
        .flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()))
        .map(|n| (edit_distance(n, k), n))
        .min();
    let hint = match best {
        Some((d, n)) if d <= 2 => format!(" (did you mean '{n}'?)"),
        _ => String::new(),
    };
    Err(SpecError::UnknownOption {
        key: k.to_string(),
        hint,
    })
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The help table, generated from [`all`]: the options of no family, each
/// family's under its heading, then each engine's under the engine names
/// that take them.
pub fn help_text() -> String {
    let mut s = String::new();
    for d in OPTIONS {
        help_row(&mut s, d);
    }
    for (heading, table) in FAMILIES {
        s.push_str(&format!("\n  {heading}:\n"));
        for d in *table {
            help_row(&mut s, d);
        }
    }
    for b in crate::engines::opts::BLOCKS {
        s.push_str(&format!("\n  ioengine={}:\n", b.engines));
        for d in b.options {
            help_row(&mut s, d);
        }
    }
    s
}

/// One option's help line.
fn help_row(s: &mut String, d: &OptionDecl) {
    let names = std::iter::once(d.name)
        .chain(d.aliases.iter().copied())
        .collect::<Vec<_>>()
        .join(", ");
    let def = if d.default.is_empty() { "-" } else { d.default };
    let mut extra = format!("default: {def}");
    if let Some((lo, hi)) = d.bounds {
        extra.push_str(&format!("; {lo}..={hi}"));
    }
    let unit = d.unit_text();
    if !unit.is_empty() {
        extra.push_str(&format!("; {unit}"));
    }
    s.push_str(&format!("  --{names:<26} {} [{extra}]\n", d.help));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iodepth_is_bounded_by_what_the_engine_takes() {
        assert_eq!(bounds("iodepth"), (1, u64::from(MAX_DEPTH)));
        let mut j = crate::JobSpec::default();
        assert!(j.set("iodepth", Some(&MAX_DEPTH.to_string())).is_ok());
        let e = j
            .set("iodepth", Some(&(MAX_DEPTH + 1).to_string()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("from 1 to {MAX_DEPTH}")), "{e}");
        assert!(help_text().contains(&format!("1..={MAX_DEPTH}")));
    }

    #[test]
    fn every_declared_option_is_handled_by_set() {
        for d in all() {
            let mut j = crate::JobSpec::default();
            let v = match d.name {
                "rw" => "randread",
                "bssplit" => "4k/100",
                "ioengine" => "null",
                "random_distribution" => "zipf:1.1",
                "rate" | "ratemin" => "1m,2m",
                "rate_iops_min" => "10,20",
                "rate_process" => "poisson",
                "verify" => "crc32c",
                "verify_pattern" => "0xaa55",
                "buffer_pattern" => "0x01\"ab\"",
                "sg_write_mode" => "verify_bytchk_01",
                "random_generator" => "lfsr",
                "bsrange" => "4k-16k",
                "io_submit_mode" => "offload",
                "wait_for" => "x",
                "zonemode" => "strided",
                "continue_on_error" => "write",
                "ignore_error" => ",ENOSPC",
                "dedupe_mode" => "working_set",
                "exit_what" => "stonewall",
                "prioclass" => "2",
                "cmdprio_percentage" | "cmdprio" => "3",
                "cmdprio_class" => "2",
                "cmdprio_bssplit" => "4k/50/1/0",
                "numa_cpu_nodes" => "0",
                "numa_mem_policy" => "bind:0",
                "latency_percentile" => "99.9",
                "steadystate" => "iops:10%",
                "zone_reset_threshold" | "zone_reset_frequency" => "0.5",
                "file_service_type" => "random:2",
                "fallocate" => "keep",
                "stat_type" => "statx",
                "inplace" => "1",
                "cpumode" => "qsort",
                "cmd_type" => "nvme",
                "protocol" => "udp",
                "interface" => "127.0.0.1",
                "sync" => "dsync",
                "fadvise_hint" => "random",
                "nice" => "1",
                "mem" => "mmaphuge",
                "allow_mounted_write" | "log_store_compressed" => "0",
                "cpus_allowed" => "0",
                "cpumask" => "1",
                "cpus_allowed_policy" => "split",
                "clocksource" => "cpu",
                "percentile_list" => "50:99",
                "log_entries" => "2048",
                "kb_base" => "1000",
                "unit_base" => "1",
                "unified_rw_reporting" => "both",
                "rw_sequencer" => "identical",
                "thinktime_blocks_type" => "issue",
                "write_hint" => "short",
                "ioscheduler" => "mq-deadline",
                "sync_file_range" => "write:8",
                "verify_offset" => "64",
                "replay_skip" => "write",
                "lockfile" => "exclusive",
                // A directory with regular files in it.
                "opendir" => env!("CARGO_MANIFEST_DIR"),
                "name" | "filename" => "x",
                _ => match d.kind {
                    OptionKind::Bool => "1",
                    OptionKind::Int => "4",
                    OptionKind::Size | OptionKind::SizeOrPercent => "4k",
                    OptionKind::Time => "2",
                    OptionKind::Text => "x",
                },
            };
            let r = j.set(d.name, Some(v));
            assert!(r.is_ok(), "{}: {:?}", d.name, r);
        }
    }

    #[test]
    fn unknown_names_suggest_the_closest() {
        let e = lookup("iodeth").unwrap_err().to_string();
        assert!(e.contains("did you mean 'iodepth'"), "{e}");
        let e = lookup("frobnicate").unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn hyphens_and_underscores_are_the_same_option() {
        assert_eq!(lookup("log-interval").unwrap().name, "log_interval");
        assert_eq!(lookup("rate-iops").unwrap().name, "rate_iops");
    }

    #[test]
    fn help_lists_every_option() {
        let h = help_text();
        for d in all() {
            assert!(h.contains(&format!("--{}", d.name)), "{}", d.name);
        }
    }
}
