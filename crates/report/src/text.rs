//! The human-readable report, laid out like fio's so a fio user finds every
//! number where they expect it, followed by drivelab's device check.

use std::fmt::Write;

use crate::model::{DirReport, JobReport, LatReport, OrderedMap, RunReport, TextUnits};

/// Bandwidth as fio prints it: binary and decimal units side by side.
pub fn bw_pair(bytes_per_s: f64) -> String {
    let (b, bu) = scale(
        bytes_per_s,
        1024.0,
        &["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"],
    );
    let (d, du) = scale(
        bytes_per_s,
        1000.0,
        &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"],
    );
    format!("{b:.1}{bu} ({d:.1}{du})")
}

fn scale(v: f64, base: f64, units: &[&'static str]) -> (f64, &'static str) {
    let mut v = v;
    let mut i = 0;
    while v >= base && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    (v, units[i])
}

/// I/O per second the way fio abbreviates it (12.3k, 1.05M).
pub fn iops_short(iops: f64) -> String {
    if iops >= 1e6 {
        format!("{:.2}M", iops / 1e6)
    } else if iops >= 1e4 {
        format!("{:.1}k", iops / 1e3)
    } else if iops >= 1e3 {
        format!("{:.2}k", iops / 1e3)
    } else {
        format!("{iops:.0}")
    }
}

/// Bytes with a binary unit.
pub fn bytes_short(b: u64) -> String {
    let (v, u) = scale(b as f64, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"]);
    if u == "B" {
        format!("{b}B")
    } else {
        format!("{v:.1}{u}")
    }
}

/// A number as fio's `num2str` shows it: divided by `base` until it is
/// below 10000, with one decimal when divided and below 100 ("14.5MiB/s",
/// "3916KiB/s", "128MiB/s"); `units` from the undivided unit up.
pub fn fio_num(v: f64, base: f64, units: &[&str]) -> String {
    let mut v = v;
    let mut i = 0;
    while v >= 10_000.0 && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    if i > 0 && v < 100.0 {
        format!("{v:.1}{}", units[i])
    } else {
        format!("{}{}", v.round() as u64, units[i])
    }
}

/// The unit fio's `num2str` appends (its `enum n2s_unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum N2s {
    /// A plain count (IOPS).
    None,
    /// Bytes.
    Byte,
    /// Bytes per second.
    BytePerSec,
    /// Bits per second (the value is bytes, multiplied by 8).
    BitPerSec,
}

/// Decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// fio 3.33's `num2str`: `num` divided by 1024 (`pow2`) or 1000 until it
/// has at most `maxlen` digits (`significant_figures`), then the quotient
/// with as many decimals of the last remainder as `maxlen` leaves room for
/// (none when at most one is left, rounding up from half), the prefix
/// (Ki, Mi… or k, M…) and the unit. The decimals are the remainder over
/// the base printed with that many places; one that rounds to 1 adds one
/// to the quotient (15.97 → "16.0").
pub fn num2str(num: u64, maxlen: usize, pow2: bool, unit: N2s) -> String {
    const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut num = match unit {
        N2s::BitPerSec => num.saturating_mul(8),
        _ => num,
    };
    let unit = match unit {
        N2s::None => "",
        N2s::Byte => "B",
        N2s::BytePerSec => "B/s",
        N2s::BitPerSec => "bit/s",
    };
    let mut post = 0;
    let mut last: Option<u64> = None;
    while post < SI.len() && digits(num) > maxlen {
        last = Some(num % thousand);
        num /= thousand;
        post += 1;
    }
    if post >= SI.len() {
        post = 0;
    }
    let prefix = if pow2 { IEC[post] } else { SI[post] };
    let Some(modulo) = last else {
        return format!("{num}{prefix}{unit}");
    };
    let len = digits(num);
    if maxlen <= len + 1 {
        if modulo >= thousand / 2 {
            num += 1;
        }
        return format!("{num}{prefix}{unit}");
    }
    let frac = format!("{:.*}", maxlen - len - 1, modulo as f64 / thousand as f64);
    // "1.0": the remainder rounded up into the next whole number.
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{prefix}{unit}", frac.get(2..).unwrap_or(""))
}

/// A rate or size in the job's units, the preferred form then the other
/// one: "14.5MiB/s (15.2MB/s)"; bits with `unit_base=1`, decimal first
/// with `kb_base=1000`.
fn pair(v: u64, unit: N2s, u: &TextUnits) -> (String, String) {
    let unit = match unit {
        N2s::BytePerSec if u.bits => N2s::BitPerSec,
        other => other,
    };
    let i2p = u.kb_base != 1000;
    let n = usize::from(u.sig_figs);
    (num2str(v, n, i2p, unit), num2str(v, n, !i2p, unit))
}

/// Bandwidth as fio prints it: "14.5MiB/s (15.2MB/s)".
pub fn fio_bw(bytes_per_s: f64) -> String {
    format!(
        "{} ({})",
        fio_num(
            bytes_per_s,
            1024.0,
            &["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"]
        ),
        fio_num(
            bytes_per_s,
            1000.0,
            &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"]
        )
    )
}

/// fio's unit for a latency line: msec or usec once the figures are large
/// enough (fio's `nsec_to_msec` / `nsec_to_usec` thresholds), else nsec.
fn lat_unit(min: u64, max: u64) -> (&'static str, f64) {
    if min > 2_000_000 && max > 99_999_999 {
        ("msec", 1e6)
    } else if min > 2000 && max > 99_999 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

fn write_lat(out: &mut String, label: &str, l: &LatReport) {
    if l.n == 0 {
        return;
    }
    let (unit, div) = lat_unit(l.min, l.max);
    let _ = writeln!(
        out,
        "{label} ({unit}): min={}, max={}, avg={:5.2}, stdev={:5.2}",
        (l.min as f64 / div) as u64,
        (l.max as f64 / div) as u64,
        l.mean / div,
        l.stddev / div
    );
}

/// "    clat percentiles (usec):" and its rows of four.
fn write_percentiles(out: &mut String, label: &str, l: &LatReport) {
    if l.n == 0 || l.percentile.is_empty() {
        return;
    }
    let mut entries: Vec<(f64, u64)> = l
        .percentile
        .iter()
        .filter_map(|(k, v)| k.parse::<f64>().ok().map(|p| (p, *v)))
        .collect();
    entries.sort_by(|a, b| a.0.total_cmp(&b.0));
    let top = entries.last().map_or(0, |e| e.1);
    let (unit, div) = if top > 99_999_999 {
        ("msec", 1e6)
    } else if top > 99_999 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    };
    let _ = writeln!(out, "    {label} percentiles ({unit}):");
    let rows: Vec<String> = entries
        .chunks(4)
        .map(|row| {
            row.iter()
                .map(|(p, v)| format!("{p:5.2}th=[{:5}]", (*v as f64 / div).round() as u64))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    let last = rows.len().saturating_sub(1);
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(out, "     | {r}{}", if i < last { "," } else { "" });
    }
}

fn write_dir(out: &mut String, name: &str, d: &DirReport, zone_resets: u64, u: &TextUnits) {
    // fio shows a direction that moved bytes (a cpuio or exec job's
    // zero-byte "I/Os" show only in the distributions below), and not one
    // folded into `mixed`.
    if d.io_bytes == 0 || d.folded {
        return;
    }
    let (bw, bw_alt) = pair(d.bw_bytes, N2s::BytePerSec, u);
    let (io, _) = pair(d.io_bytes, N2s::Byte, u);
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={bw} ({bw_alt})({io}/{}msec){}",
        num2str(d.iops as u64, usize::from(u.sig_figs), false, N2s::None),
        d.runtime,
        if name == "write" {
            format!("; {zone_resets} zone resets")
        } else {
            String::new()
        }
    );
    write_lat(out, "    slat", &d.slat_ns);
    write_lat(out, "    clat", &d.clat_ns);
    write_lat(out, "     lat", &d.lat_ns);
    for p in &d.prios {
        let label = format!("    clat prio {}/{}", p.prioclass, p.prio);
        write_lat(out, &label, &p.clat_ns);
    }
    write_percentiles(out, "clat", &d.clat_ns);
    write_percentiles(out, "lat", &d.lat_ns);
    for p in &d.prios {
        let share = 100.0 * p.clat_ns.n as f64 / d.clat_ns.n.max(1) as f64;
        let label = format!("clat prio {}/{} ({share:.2}% of IOs)", p.prioclass, p.prio);
        write_percentiles(out, &label, &p.clat_ns);
    }
    if let Some(l) = &d.lat_from_intended_ns {
        write_lat(out, "    lat from intended issue", l);
    }
    if d.bw_samples > 0 {
        // fio: the samples are KiB/s whatever the units, named kB under
        // kb_base=1000, and divided once more above kb_base² ("MiB").
        let kb = f64::from(u.kb_base);
        let (mut min, mut max, mut mean, mut dev) =
            (d.bw_min as f64, d.bw_max as f64, d.bw_mean, d.bw_dev);
        let mut label = if u.kb_base == 1000 { "kB" } else { "KiB" };
        if mean > kb * kb {
            (min, max, mean, dev) = (min / kb, max / kb, mean / kb, dev / kb);
            label = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({label:>5}/s): min={:5}, max={:5}, per={:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            min as u64, max as u64, d.bw_agg, d.bw_samples
        );
    }
    if d.iops_samples > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            d.iops_min, d.iops_max, d.iops_mean, d.iops_stddev, d.iops_samples
        );
    }
}

/// "  lat (usec)   : 4=0.67%, 10=41.35%" lines: the ranges holding I/Os,
/// five to a line, as fio prints them.
fn write_lat_dist(out: &mut String, unit: &str, m: &OrderedMap<f64>) {
    let cells: Vec<String> =
        m.0.iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(k, v)| format!("{k}={:.2}%", v.max(0.01)))
            .collect();
    for row in cells.chunks(5) {
        let _ = writeln!(out, "  lat ({unit})   : {}", row.join(", "));
    }
}

fn dist_line(m: &OrderedMap<f64>) -> String {
    m.0.iter()
        .map(|(k, v)| format!("{k}={v:.1}%"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn bs_range(j: &JobReport) -> String {
    // The access lines say each size: "size/weight/read%r/random%rand".
    let sizes: Vec<u64> = j
        .job_options
        .get("access")
        .map(|a| {
            a.split(':')
                .filter_map(|l| l.split('/').next()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let (lo, hi) = (
        sizes.iter().copied().min().unwrap_or(0),
        sizes.iter().copied().max().unwrap_or(0),
    );
    let b = |v: u64| pair(v, N2s::Byte, &j.text_units).0;
    let r = format!("{}-{}", b(lo), b(hi));
    format!("(R) {r}, (W) {r}, (T) {r}")
}

/// fio's first line for a job: "name: (g=0): rw=randread, bs=(R) …,
/// ioengine=…, iodepth=…".
pub fn header_line(j: &JobReport) -> String {
    let opt = |k: &str| j.job_options.get(k).cloned().unwrap_or_default();
    format!(
        "{}: (g={}): rw={}, bs={}, ioengine={}, iodepth={}",
        j.jobname,
        j.groupid,
        opt("rw"),
        bs_range(j),
        j.ioengine,
        // The depth asked for; a latency target's search reports the one
        // it found as latency_depth.
        j.job_options
            .get("iodepth")
            .cloned()
            .unwrap_or_else(|| j.latency_depth.max(1).to_string())
    )
}

/// The line fio prints for a job before it runs: [`header_line`] for a job
/// that does I/O; for fio's no-I/O engines, what each says at its start
/// instead (engines/cpu.c: the mode, the load and the length of one burn,
/// which under `cpumode=qsort` is however long a round of sorting took,
/// here the mean burn; engines/exec.c: the program and its arguments as
/// given, "(null)" when there are none).
pub fn intro_line(j: &JobReport) -> String {
    let opt = |k: &str| j.job_options.get(k).map(String::as_str);
    match j.ioengine.as_str() {
        "cpuio" => {
            let qsort = opt("cpumode").is_some_and(|m| m.eq_ignore_ascii_case("qsort"));
            let cycle_us = if qsort {
                (j.read.clat_ns.mean / 1e3).round() as u64
            } else {
                opt("cpuchunks")
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(50_000)
            };
            format!(
                "{} ({}): ioengine=cpuio, cpuload={}, cpucycle={cycle_us}",
                j.jobname,
                if qsort { "qsort" } else { "noop" },
                opt("cpuload").unwrap_or("0")
            )
        }
        "exec" => format!(
            "{} : program={}, arguments={}",
            j.jobname,
            opt("program").unwrap_or(""),
            opt("arguments").unwrap_or("(null)")
        ),
        _ => header_line(j),
    }
}

fn write_job(out: &mut String, j: &JobReport, time: &str) {
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs=1): err={:>2}: {}",
        j.jobname, j.groupid, j.error, time
    );
    if let Some(e) = &j.error_detail {
        let _ = writeln!(out, "  error: {e}");
    }
    for n in &j.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    let resets = j.zone_resets.unwrap_or(0);
    let u = &j.text_units;
    write_dir(out, "read", &j.read, resets, u);
    write_dir(out, "write", &j.write, resets, u);
    write_dir(out, "trim", &j.trim, resets, u);
    if let Some(m) = &j.mixed {
        write_dir(out, "mixed", m, resets, u);
    }
    if j.sync.total_ios > 0 {
        let _ = writeln!(out, "  sync: {} fsyncs", j.sync.total_ios);
        write_lat(out, "    sync", &j.sync.lat_ns);
    }
    write_lat_dist(out, "nsec", &j.latency_ns);
    write_lat_dist(out, "usec", &j.latency_us);
    write_lat_dist(out, "msec", &j.latency_ms);
    let _ = writeln!(
        out,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}",
        j.usr_cpu, j.sys_cpu, j.ctx, j.majf, j.minf
    );
    let _ = writeln!(out, "  cpu per I/O  : {:.0} ns", j.cpu_ns_per_io);
    if !j.iodepth_level.is_empty() {
        let _ = writeln!(out, "  IO depths    : {}", dist_line(&j.iodepth_level));
        let _ = writeln!(out, "     submit    : {}", dist_line(&j.iodepth_submit));
        let _ = writeln!(out, "     complete  : {}", dist_line(&j.iodepth_complete));
    }
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        j.read.total_ios,
        j.write.total_ios,
        j.trim.total_ios,
        j.sync.total_ios,
        j.read.short_ios,
        j.write.short_ios,
        j.trim.short_ios,
        j.read.drop_ios,
        j.write.drop_ios,
        j.trim.drop_ios
    );
    if let (Some(total), Some(first)) = (j.total_err, j.first_error) {
        let _ = writeln!(
            out,
            "     errors    : total={total}, first_error={first}/<{}>",
            errno_text(first)
        );
    }
    let _ = writeln!(
        out,
        "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
        j.latency_target, j.latency_window, j.latency_percentile, j.latency_depth
    );
    if j.block_error_percentiles {
        // fio's section before any trim block has a state (see the field).
        let _ = writeln!(out, "  block lifetime percentiles :");
        let _ = writeln!(
            out,
            "   |        states               : unwritten=0, trimmed=0, written=0, trim failure=0, write failure=0"
        );
    }
    if let Some(ss) = &j.steadystate {
        let _ = writeln!(out, "{}", steadystate_line(ss));
    }
}

/// fio's steady-state line: "  steadystate  : attained=yes, bw=2001KiB/s
/// (2001kB/s), iops=500, iops mean dev=0.400%". As fio, both bandwidth
/// figures are scaled from KiB/s.
pub fn steadystate_line(ss: &crate::model::SteadyStateReport) -> String {
    let kib = (ss.data.bw_mean / 1024) as f64;
    let (crit, pct) = match ss.criterion.strip_suffix('%') {
        Some(c) => (c, "%"),
        None => (ss.criterion.as_str(), ""),
    };
    let crit: f64 = crit.parse().unwrap_or(0.0);
    format!(
        "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}",
        if ss.attained > 0 { "yes" } else { "no" },
        fio_num(kib, 1024.0, &["KiB/s", "MiB/s", "GiB/s", "TiB/s"]),
        fio_num(kib, 1000.0, &["kB/s", "MB/s", "GB/s", "TB/s"]),
        fio_num(ss.data.iops_mean as f64, 1000.0, &["", "k", "M", "G"]),
        ss.ss.split(['_', ':']).next().unwrap_or("iops"),
        if ss.ss.contains("_slope") {
            " slope"
        } else {
            " mean dev"
        },
        crit,
        pct
    )
}

/// "Run status group N (all jobs):" and its READ/WRITE/TRIM lines: the
/// group's bandwidth (its bytes over its longest runtime), the slowest and
/// fastest job, the bytes moved and the shortest and longest runtime.
fn write_groups(out: &mut String, jobs: &[JobReport]) {
    let mut groups: Vec<u32> = jobs.iter().map(|j| j.groupid).collect();
    groups.dedup();
    for g in groups {
        let _ = writeln!(out, "\nRun status group {g} (all jobs):");
        let members: Vec<&JobReport> = jobs.iter().filter(|j| j.groupid == g).collect();
        // fio takes a group's units from its jobs (all alike in practice).
        let u = members.first().map(|j| j.text_units).unwrap_or_default();
        for (name, pick) in [("READ", 0usize), ("WRITE", 1), ("TRIM", 2), ("MIXED", 3)] {
            let dirs: Vec<&DirReport> = members
                .iter()
                .filter_map(|j| match pick {
                    0 => Some(&j.read),
                    1 => Some(&j.write),
                    2 => Some(&j.trim),
                    _ => j.mixed.as_ref(),
                })
                .filter(|d| d.io_bytes > 0 && !d.folded)
                .collect();
            if !dirs.is_empty() {
                write_group_line(out, name, &dirs, &u);
            }
        }
    }
}

/// One "   READ: bw=…" line of a group: the group's bandwidth (its bytes
/// over its longest runtime), the slowest and fastest job, the bytes moved
/// and the shortest and longest runtime.
fn write_group_line(out: &mut String, name: &str, dirs: &[&DirReport], u: &TextUnits) {
    let bytes: u64 = dirs.iter().map(|d| d.io_bytes).sum();
    let run_min = dirs.iter().map(|d| d.runtime).min().unwrap_or(0);
    let run_max = dirs.iter().map(|d| d.runtime).max().unwrap_or(0);
    let agg = (bytes * 1000).checked_div(run_max).unwrap_or(0);
    let bw_min = dirs.iter().map(|d| d.bw_bytes).min().unwrap_or(0);
    let bw_max = dirs.iter().map(|d| d.bw_bytes).max().unwrap_or(0);
    let (agg, agg_alt) = pair(agg, N2s::BytePerSec, u);
    let (min, min_alt) = pair(bw_min, N2s::BytePerSec, u);
    let (max, max_alt) = pair(bw_max, N2s::BytePerSec, u);
    let (io, io_alt) = pair(bytes, N2s::Byte, u);
    let _ = writeln!(
        out,
        "{name:>7}: bw={agg} ({agg_alt}), {min}-{max} ({min_alt}-{max_alt}), io={io} ({io_alt}), run={run_min}-{run_max}msec"
    );
}

/// Render the whole report: each job's header line, each job's results,
/// the group summaries, the disk stats, then drivelab's device check.
pub fn render(r: &RunReport) -> String {
    let mut out = String::new();
    for j in &r.jobs {
        let _ = writeln!(out, "{}", intro_line(j));
    }
    let _ = writeln!(out, "{}", r.drivelab_version);
    let _ = writeln!(out);
    for j in &r.jobs {
        write_job(&mut out, j, &r.time);
    }
    write_groups(&mut out, &r.jobs);
    if !r.disk_util.is_empty() {
        let _ = writeln!(out, "\nDisk stats (read/write):");
        for d in &r.disk_util {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
                d.name,
                d.read_ios,
                d.write_ios,
                d.read_merges,
                d.write_merges,
                d.read_ticks,
                d.write_ticks,
                d.in_queue,
                d.util
            );
        }
    }
    if !r.device_check.is_empty() {
        let _ = writeln!(
            out,
            "\nDevice check (what the device saw, sampled every second):"
        );
        for c in &r.device_check {
            let _ = writeln!(
                out,
                "  {}: reported {} in {} I/Os, device saw {} in {} I/Os (ratio {:.3}); {}/{} seconds idle, throughput CoV {:.2}: {}",
                c.device,
                bytes_short(c.reported_bytes),
                c.reported_ios,
                bytes_short(c.device_bytes),
                c.device_ios,
                c.ratio,
                c.idle_seconds,
                c.samples,
                c.throughput_cov,
                c.verdict
            );
            if !c.depth_verdict.is_empty() {
                let _ = writeln!(
                    out,
                    "    queue depth: asked {:.1}, device mean {:.2} (aqu-sz): {}",
                    c.asked_depth, c.device_depth, c.depth_verdict
                );
            }
        }
    }
    if r.interrupted {
        let _ = writeln!(
            out,
            "\nINTERRUPTED: the numbers above cover the time run before the stop."
        );
    }
    if let Some(e) = &r.error {
        let _ = writeln!(out, "\nerror: {e}");
    }
    out
}

/// An errno in words, as strerror says it (without std's " (os error N)").
fn errno_text(errno: i32) -> String {
    let s = std::io::Error::from_raw_os_error(errno).to_string();
    match s.rfind(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_shows_both_units() {
        assert_eq!(bw_pair(50_331_648.0), "48.0MiB/s (50.3MB/s)");
        assert_eq!(iops_short(12_345.0), "12.3k");
        assert_eq!(iops_short(1_050_000.0), "1.05M");
        assert_eq!(iops_short(80.8), "81");
    }

    #[test]
    fn steadystate_line_is_fios() {
        let ss = crate::model::SteadyStateReport {
            ss: "iops:10.000000%".into(),
            duration: 3,
            attained: 1,
            criterion: "0.400000%".into(),
            data: crate::model::SteadyStateData {
                bw_mean: 2_050_045,
                iops_mean: 500,
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            steadystate_line(&ss),
            "  steadystate  : attained=yes, bw=2001KiB/s (2001kB/s), iops=500, iops mean dev=0.400%"
        );
        let ss = crate::model::SteadyStateReport {
            ss: "bw_slope:1048576.000000".into(),
            criterion: "-12.500000".into(),
            attained: 0,
            ..ss
        };
        assert!(steadystate_line(&ss)
            .ends_with("attained=no, bw=2001KiB/s (2001kB/s), iops=500, bw slope=-12.500"));
    }

    #[test]
    fn numbers_are_fios_num2str() {
        assert_eq!(fio_bw(15_204_352.0), "14.5MiB/s (15.2MB/s)");
        assert_eq!(fio_bw(4_010_069.0), "3916KiB/s (4010kB/s)");
        assert_eq!(fio_num(3723.4, 1000.0, &["", "k"]), "3723");
        assert_eq!(fio_num(12_345.0, 1000.0, &["", "k"]), "12.3k");
        let b = |v| num2str(v, 4, true, N2s::Byte);
        assert_eq!(b(4096), "4096B");
        assert_eq!(b(65536), "64.0KiB");
        assert_eq!(b(131_072), "128KiB");
    }

    /// Figures fio 3.33 printed for these values under kb_base,
    /// unit_base and significant_figures.
    #[test]
    fn units_and_figures_are_fios() {
        let u = |kb_base, bits, sig_figs| TextUnits {
            kb_base,
            bits,
            sig_figs,
        };
        // BW=16.0Mibit/s (16.7Mbit/s) at 2,093,056 B/s (4088 KiB in 2002 ms).
        let bw = 4088 * 1024 * 1000 / 2002;
        assert_eq!(
            pair(bw, N2s::BytePerSec, &u(1024, true, 4)),
            ("16.0Mibit/s".to_string(), "16.7Mbit/s".to_string())
        );
        // kb_base=1000: "BW=1999kB/s (1952KiB/s)(4000kB/2001msec)".
        let bw = 4_000_000 * 1000 / 2001;
        assert_eq!(
            pair(bw, N2s::BytePerSec, &u(1000, false, 4)),
            ("1999kB/s".to_string(), "1952KiB/s".to_string())
        );
        assert_eq!(pair(4_000_000, N2s::Byte, &u(1000, false, 4)).0, "4000kB");
        // significant_figures=6: "BW=2049.0KiB/s (2098.1kB/s)(4100.0KiB/…)".
        let bw = 4_198_400 * 1000 / 2001;
        assert_eq!(
            pair(bw, N2s::BytePerSec, &u(1024, false, 6)),
            ("2049.0KiB/s".to_string(), "2098.1kB/s".to_string())
        );
        assert_eq!(
            pair(4_198_400, N2s::Byte, &u(1024, false, 6)).0,
            "4100.0KiB"
        );
        // significant_figures=2: "IOPS=10k", "bs=(R) 4KiB-4KiB", "(2MiB/…)".
        assert_eq!(num2str(10_100, 2, false, N2s::None), "10k");
        assert_eq!(pair(4096, N2s::Byte, &u(1024, false, 2)).0, "4KiB");
        assert_eq!(pair(2_031_616, N2s::Byte, &u(1024, false, 2)).0, "2MiB");
        // A remainder that rounds to 1 carries into the quotient.
        assert_eq!(num2str(15 * 1024 + 1000, 4, true, N2s::Byte), "16.0KiB");
    }

    #[test]
    fn no_io_jobs_say_what_fios_engines_say_and_show_no_zero_byte_section() {
        let mut r = RunReport {
            drivelab_version: "drivelab-0.1.0".into(),
            ..Default::default()
        };
        let mut burn = JobReport {
            jobname: "burn".into(),
            ioengine: "cpuio".into(),
            ..Default::default()
        };
        burn.job_options.insert("cpuload".into(), "50".into());
        burn.read.total_ios = 10;
        burn.read.runtime = 1000;
        burn.read.clat_ns = LatReport {
            n: 10,
            mean: 41_234_600.0,
            ..Default::default()
        };
        let mut sort = burn.clone();
        sort.jobname = "sort".into();
        sort.job_options.insert("cpumode".into(), "qsort".into());
        let mut prog = JobReport {
            jobname: "mon".into(),
            ioengine: "exec".into(),
            ..Default::default()
        };
        prog.job_options
            .insert("program".into(), "/bin/true".into());
        r.jobs = vec![burn, sort, prog];
        let t = render(&r);
        assert!(
            t.starts_with(
                "burn (noop): ioengine=cpuio, cpuload=50, cpucycle=50000\n\
                 sort (qsort): ioengine=cpuio, cpuload=50, cpucycle=41235\n\
                 mon : program=/bin/true, arguments=(null)\n"
            ),
            "{t}"
        );
        assert!(!t.contains("  read:"), "{t}");
        assert!(!t.contains("READ:"), "{t}");
        assert!(t.contains("Run status group 0 (all jobs):"), "{t}");
        assert!(t.contains("issued rwts: total=10,0,0,0"), "{t}");
    }

    #[test]
    fn job_text_has_fio_lines() {
        let mut r = RunReport {
            drivelab_version: "drivelab-0.1.0".into(),
            ..Default::default()
        };
        let mut j = JobReport {
            jobname: "j".into(),
            ioengine: "io_uring".into(),
            latency_depth: 16,
            ..Default::default()
        };
        j.job_options.insert("rw".into(), "randread".into());
        j.job_options
            .insert("access".into(), "4096/100/100r/100rand".into());
        j.read.total_ios = 10;
        j.read.iops = 1000.0;
        j.read.bw_bytes = 4_096_000;
        j.read.io_bytes = 40960;
        j.read.runtime = 10;
        j.read.clat_ns = LatReport {
            min: 3000,
            max: 190_000,
            mean: 20_000.0,
            stddev: 5.0,
            n: 10,
            ..Default::default()
        };
        j.read.clat_ns.percentile.insert("99.000000".into(), 80_000);
        j.read.clat_ns.percentile.insert("1.000000".into(), 3_000);
        j.read
            .clat_ns
            .percentile
            .insert("99.990000".into(), 190_000);
        j.read.bw_samples = 2;
        j.read.bw_min = 3900;
        j.read.bw_max = 4100;
        j.read.bw_agg = 100.0;
        j.read.bw_mean = 4000.0;
        j.latency_us = OrderedMap(vec![("4".into(), 10.0), ("50".into(), 90.0)]);
        j.iodepth_level = OrderedMap(vec![("1".into(), 0.0), (">=64".into(), 100.0)]);
        r.jobs.push(j);
        let t = render(&r);
        assert!(
            t.starts_with("j: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=io_uring, iodepth=16\n"),
            "{t}"
        );
        assert!(
            t.contains("  read: IOPS=1000, BW=4000KiB/s (4096kB/s)(40.0KiB/10msec)\n"),
            "{t}"
        );
        assert!(
            t.contains("    clat (usec): min=3, max=190, avg=20.00, stdev= 0.01"),
            "{t}"
        );
        assert!(t.contains("    clat percentiles (usec):\n     |  1.00th=[    3], 99.00th=[   80], 99.99th=[  190]\n"), "{t}");
        assert!(t.contains("   bw (  KiB/s): min= 3900, max= 4100, per=100.00%, avg=4000.00, stdev= 0.00, samples=2"), "{t}");
        assert!(t.contains("  lat (usec)   : 4=10.00%, 50=90.00%\n"), "{t}");
        assert!(t.contains("  IO depths    : 1=0.0%, >=64=100.0%\n"), "{t}");
        assert!(t.contains("     issued rwts: total=10,0,0,0"), "{t}");
        assert!(t.contains("Run status group 0 (all jobs):\n   READ: bw=4000KiB/s (4096kB/s), 4000KiB/s-4000KiB/s (4096kB/s-4096kB/s), io=40.0KiB (41.0kB), run=10-10msec\n"), "{t}");
    }
}
