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

/// The options every job takes (fio's names and units). Each engine's own
/// options are declared beside its option block under `engines/opts/`;
/// [`all`] is both.
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
        "read, write, randread, randwrite, rw/readwrite, randrw, trim, randtrim; MODE:N adds N bytes after each sequential I/O (read:-8k runs backwards), or issues N sequential I/Os per random offset"
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
        "io_uring, psync, null, sg, io_uring_cmd, e4defrag, net, cpuio or exec; fio's libaio and posixaio run on io_uring, sync, vsync, pvsync and pvsync2 on psync, cpp_null on null (the run says so once); sg sends SCSI commands to a SCSI disk, io_uring_cmd NVMe commands to a namespace's /dev/ngXnY; e4defrag moves a donor's extents into ext4 files on writes; net moves data over sockets; cpuio burns CPU, exec runs a program (no I/O)"
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
        [],
        Text,
        "0 (none)",
        "fail the job when its average bandwidth over the run falls below this, READ[,WRITE] in bytes/s"
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
        "max_open_zones",
        [],
        Int,
        "device's",
        "zonemode=zbd: zones written at once on the device (0: the device's limit)",
        0,
        4096,
        "zones"
    ),
    opt!(
        "job_max_open_zones",
        [],
        Int,
        "0",
        "zonemode=zbd: zones this job writes at once (0: no own limit)",
        0,
        4096,
        "zones"
    ),
    opt!(
        "zone_reset_threshold",
        [],
        Text,
        "0",
        "zonemode=zbd: share of the range holding data (0..1) past which zone_reset_frequency resets zones"
    ),
    opt!(
        "zone_reset_frequency",
        [],
        Text,
        "0",
        "zonemode=zbd: past the threshold, reset the written zone every 1/F writes (0..1; 0: never)"
    ),
    opt!(
        "read_beyond_wp",
        [],
        Bool,
        "0",
        "zonemode=zbd: read sequential zones past their write pointers"
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
        "exitall",
        [],
        Bool,
        "0",
        "when this job finishes, end the other jobs of its reporting group (they report what they did)"
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
        "verify",
        [],
        Text,
        "0 (off)",
        "crc32c (alias crc32c-intel), meta or pattern: written blocks carry a header and checksum, offset or pattern that reads check"
    ),
    opt!(
        "do_verify",
        [],
        Bool,
        "1",
        "with verify: read back and check what a writing job wrote; check what a reading job reads"
    ),
    opt!(
        "verify_pattern",
        [],
        Text,
        "",
        "data of written blocks: 0xHEX, a number or a \"string\"; alone it means verify=pattern"
    ),
    // fio's buffer contents and its sg engine's options.
    opt!(
        "buffer_pattern",
        [],
        Text,
        "",
        "what write buffers hold, repeated: 0xHEX, a number, a \"string\" or a 'file', joined in any order (fio's syntax; random data when unset)"
    ),
    opt!(
        "verify_interval",
        [],
        Size,
        "smallest block size",
        "bytes covered by one verify header (a multiple of 512)"
    ),
    // errkeys: error policy, verify extras, dedupe and compression.
    opt!(
        "continue_on_error",
        [],
        Text,
        "none",
        "none, read, write, io, verify or all (0/1): errors of these kinds (EIO, EILSEQ unless ignore_error lists others) are counted and the job goes on"
    ),
    opt!(
        "ignore_error",
        [],
        Text,
        "",
        "READ,WRITE,VERIFY lists of errnos (names or numbers joined by ':') the job goes past, e.g. ,ENOSPC:122"
    ),
    opt!(
        "error_dump",
        [],
        Bool,
        "1",
        "print every error, also those the job goes past"
    ),
    opt!(
        "verify_backlog",
        [],
        Int,
        "0",
        "check written blocks after every N writes, during the job (0: when it is done)",
        0,
        1 << 32,
        "blocks"
    ),
    opt!(
        "verify_backlog_batch",
        [],
        Int,
        "verify_backlog",
        "blocks checked at each verify_backlog point",
        0,
        1 << 32,
        "blocks"
    ),
    opt!(
        "verify_fatal",
        [],
        Bool,
        "0",
        "end the job at the first failed check even when continue_on_error passes verify errors"
    ),
    opt!(
        "verify_dump",
        [],
        Bool,
        "0",
        "write the block read and the block expected of a failed check to FILE.OFFSET.received/.expected"
    ),
    opt!(
        "verify_async",
        [],
        Int,
        "0",
        "fio's verify threads: accepted; drivelab checks on the job's thread",
        0,
        1024,
        "threads"
    ),
    opt!(
        "dedupe_percentage",
        [],
        Int,
        "0",
        "percent of write buffers that duplicate another",
        0,
        100,
        "%"
    ),
    opt!(
        "dedupe_mode",
        [],
        Text,
        "repeat",
        "repeat (the last unique buffer) or working_set (one of the first unique buffers)"
    ),
    opt!(
        "dedupe_working_set_percentage",
        [],
        Int,
        "5",
        "working set of dedupe_mode=working_set, percent of the job's size",
        0,
        100,
        "%"
    ),
    opt!(
        "dedupe_global",
        [],
        Bool,
        "0",
        "spread the working set over the run's jobs, so they duplicate each other's blocks"
    ),
    opt!(
        "buffer_compress_percentage",
        [],
        Int,
        "0",
        "percent of each write chunk that is zeros (how far it compresses)",
        0,
        100,
        "%"
    ),
    opt!(
        "buffer_compress_chunk",
        [],
        Size,
        "512",
        "bytes per random-then-zeros chunk of buffer_compress_percentage (0: the write size)"
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
    // flowprio: flow control between jobs, I/O priorities, exit_what,
    // NUMA placement and submission/completion batching.
    opt!(
        "flow",
        [],
        Int,
        "0 (no flow control)",
        "weight of this job in its flow_id group: the jobs of a group issue I/O in the ratio of their weights (fio's token counting)",
        0,
        1000,
        ""
    ),
    opt!(
        "flow_id",
        [],
        Int,
        "0",
        "the flow group this job's flow weight counts in",
        0,
        u32::MAX as u64,
        ""
    ),
    opt!(
        "flow_sleep",
        [],
        Int,
        "0",
        "when the job is ahead of its flow share: wait for its I/Os to complete, then this long before trying again (0: try again at once)",
        0,
        u32::MAX as u64,
        "us"
    ),
    opt!(
        "exit_what",
        [],
        Text,
        "group",
        "which jobs exitall ends when this job finishes: group (its reporting group), stonewall (every running job), all (every job, later stonewall groups never start)"
    ),
    opt!(
        "prio",
        [],
        Int,
        "",
        "I/O priority level of the job's thread (ioprio_set; 0 is highest); class best-effort unless prioclass says otherwise",
        0,
        7,
        ""
    ),
    opt!(
        "prioclass",
        [],
        Int,
        "",
        "I/O priority class of the job's thread (ioprio_set): 1 realtime, 2 best-effort, 3 idle (0: best-effort)",
        0,
        3,
        ""
    ),
    opt!(
        "cmdprio_percentage",
        [],
        Text,
        "0",
        "percent of I/Os (READ,WRITE per direction) issued with the priority cmdprio_class/cmdprio in their io_uring submission entry"
    ),
    opt!(
        "cmdprio_class",
        [],
        Text,
        "1",
        "priority class of cmdprio_percentage's I/Os (READ,WRITE): 1 realtime, 2 best-effort, 3 idle"
    ),
    opt!(
        "cmdprio",
        [],
        Text,
        "0",
        "priority level 0-7 of cmdprio_percentage's I/Os (READ,WRITE)"
    ),
    opt!(
        "cmdprio_bssplit",
        [],
        Text,
        "",
        "per block size, the percent of I/Os with a priority: BS/PCT[/CLASS/LEVEL]:… (READ,WRITE); without CLASS/LEVEL, cmdprio_class and cmdprio; a fifth field (a priority hint) is read past, as fio 3.33 does"
    ),
    opt!(
        "numa_cpu_nodes",
        [],
        Text,
        "",
        "run the job's thread on the CPUs of these NUMA nodes (0, 0-1, 0,2; all)"
    ),
    opt!(
        "numa_mem_policy",
        [],
        Text,
        "",
        "NUMA memory policy of the job's thread: default, prefer:NODE, bind:NODES, interleave:NODES, local"
    ),
    opt!(
        "iodepth_batch",
        ["iodepth_batch_submit"],
        Int,
        "unset: each turn's I/Os go in with its one wait",
        "enter the kernel to submit each time this many I/Os are queued (0 or above iodepth: iodepth)",
        0,
        MAX_DEPTH as u64,
        "I/Os"
    ),
    opt!(
        "iodepth_batch_complete_min",
        ["iodepth_batch_complete"],
        Int,
        "1",
        "when waiting, wait for this many completions (at most those in flight; 0: 1, as fio 3.33 when the queue is full)",
        0,
        MAX_DEPTH as u64,
        "I/Os"
    ),
    opt!(
        "iodepth_batch_complete_max",
        [],
        Int,
        "unset: every ready completion",
        "take at most this many completions per turn, leaving the rest for the next (at least iodepth_batch_complete_min)",
        0,
        MAX_DEPTH as u64,
        "I/Os"
    ),
    opt!(
        "iodepth_low",
        [],
        Int,
        "iodepth",
        "once the queue is full, queue no more until this few I/Os are in flight (fio's low watermark)",
        0,
        MAX_DEPTH as u64,
        "I/Os"
    ),
    // fio's latency target search and steady-state termination
    // (latency_target.rs, steadystate.rs).
    OptionDecl {
        name: "latency_target",
        aliases: &[],
        kind: OptionKind::Time,
        default: "0 (off)",
        bounds: None,
        unit: "us when bare",
        help: "search for the highest depth (up to iodepth) at which latency_percentile of I/Os complete within this latency; reported as latency_depth",
    },
    OptionDecl {
        name: "latency_window",
        aliases: &[],
        kind: OptionKind::Time,
        default: "0",
        bounds: None,
        unit: "us when bare",
        help: "with latency_target: how long each depth is tried",
    },
    opt!(
        "latency_percentile",
        [],
        Text,
        "100",
        "with latency_target: the percent of I/Os (0-100) that must be within the target"
    ),
    opt!(
        "latency_run",
        [],
        Bool,
        "0",
        "with latency_target: keep adjusting the depth for the whole run instead of ending at the depth found"
    ),
    opt!(
        "steadystate",
        ["ss"],
        Text,
        "iops_slope:0.01%",
        "end the job at steady state: iops, iops_slope, bw or bw_slope, ':' and a limit, absolute or N% of the mean (iops_slope:0.1%); needs steadystate_duration"
    ),
    opt!(
        "steadystate_duration",
        ["ss_dur"],
        Time,
        "0 (off)",
        "the rolling window steady state is judged over"
    ),
    opt!(
        "steadystate_ramp_time",
        ["ss_ramp"],
        Time,
        "0",
        "run this long before recording steady-state values"
    ),
    opt!(
        "steadystate_check_interval",
        ["ss_interval"],
        Time,
        "1s",
        "one steady-state value per this long (at least 1s; ss_dur a multiple of it)"
    ),
    // Multi-file jobs and filesystem engines (crate::engines::files).
    opt!(
        "nrfiles",
        ["nr_files"],
        Int,
        "1",
        "files per job when fio names them ($jobname.$jobnum.$filenum in directory)",
        1,
        crate::engines::opts::files::MAX_FILES,
        "files"
    ),
    opt!(
        "openfiles",
        [],
        Int,
        "nrfiles",
        "files open at once: below nrfiles, psync/io_uring jobs open and close files as file_service_type moves (filesystem engines open none)",
        1,
        crate::engines::opts::files::MAX_FILES,
        "files"
    ),
    opt!(
        "file_service_type",
        [],
        Text,
        "roundrobin",
        "file of each I/O: roundrobin, sequential, random (each :N I/Os per pick), zipf:θ, pareto:h, normal:σ"
    ),
    opt!(
        "create_on_open",
        [],
        Bool,
        "0",
        "create files when first opened, during the run (filecreate/dircreate: the measured operation)"
    ),
    opt!(
        "write_iolog",
        [],
        Text,
        "",
        "log every file add/open/close and I/O to this file (fio's iolog v3)"
    ),
    opt!(
        "unlink",
        [],
        Bool,
        "0",
        "remove the job's files when it ends"
    ),
    opt!(
        "unlink_each_loop",
        [],
        Bool,
        "0",
        "remove the job's files after each loop (with loops=1: when it ends)"
    ),
    opt!(
        "fallocate",
        [],
        Text,
        "native",
        "how created files get their blocks: none, native, posix, keep, truncate, 0, 1"
    ),
    opt!(
        "stat_type",
        [],
        Text,
        "stat",
        "filestat/dirstat: the lookup timed: stat, lstat or statx"
    ),
    // fio's e4defrag engine (crate::engines::e4defrag).
];

/// Every declared option: [`OPTIONS`], then each engine's own, block by
/// block ([`crate::engines::opts::options`]).
pub fn all() -> impl Iterator<Item = &'static OptionDecl> {
    OPTIONS.iter().chain(crate::engines::opts::options())
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

/// The help table, generated from [`all`]: every job's options, then each
/// engine's under the engine names that take them.
pub fn help_text() -> String {
    let mut s = String::new();
    for d in OPTIONS {
        help_row(&mut s, d);
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

/// A whole number within the bounds the option table declares for `key`.
pub(crate) fn parse_bounded(key: &str, v: &str) -> Result<u64, SpecError> {
    crate::spec::decl::parse_within(key, bounds(key), v)
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
