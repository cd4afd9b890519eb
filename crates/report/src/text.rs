//! The human-readable report, laid out like fio's so a fio user finds every
//! number where they expect it, followed by drivelab's device check.

use std::fmt::Write;

use crate::model::{DirReport, JobReport, LatReport, OrderedMap, RunReport};

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

fn fio_bytes_bin(b: u64) -> String {
    fio_num(b as f64, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB", "PiB"])
}

fn fio_bytes_dec(b: u64) -> String {
    fio_num(b as f64, 1000.0, &["B", "kB", "MB", "GB", "TB", "PB"])
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

fn write_dir(out: &mut String, name: &str, d: &DirReport, zone_resets: u64) {
    // fio shows a direction that moved bytes (a cpuio or exec job's
    // zero-byte "I/Os" show only in the distributions below).
    if d.io_bytes == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}({}/{}msec){}",
        fio_num(d.iops, 1000.0, &["", "k", "M", "G"]),
        fio_bw(d.bw_bytes as f64),
        fio_bytes_bin(d.io_bytes),
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
        let _ = writeln!(
            out,
            "   bw (  KiB/s): min={:5}, max={:5}, per={:3.2}%, avg={:5.2}, stdev={:5.2}, samples={}",
            d.bw_min, d.bw_max, d.bw_agg, d.bw_mean, d.bw_dev, d.bw_samples
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
    let r = format!("{}-{}", fio_bytes_bin(lo), fio_bytes_bin(hi));
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
    write_dir(out, "read", &j.read, resets);
    write_dir(out, "write", &j.write, resets);
    write_dir(out, "trim", &j.trim, resets);
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
        for (name, pick) in [("READ", 0usize), ("WRITE", 1), ("TRIM", 2)] {
            let dirs: Vec<&DirReport> = jobs
                .iter()
                .filter(|j| j.groupid == g)
                .map(|j| match pick {
                    0 => &j.read,
                    1 => &j.write,
                    _ => &j.trim,
                })
                .filter(|d| d.io_bytes > 0)
                .collect();
            if dirs.is_empty() {
                continue;
            }
            let bytes: u64 = dirs.iter().map(|d| d.io_bytes).sum();
            let run_min = dirs.iter().map(|d| d.runtime).min().unwrap_or(0);
            let run_max = dirs.iter().map(|d| d.runtime).max().unwrap_or(0);
            let agg = if run_max > 0 {
                bytes as f64 * 1000.0 / run_max as f64
            } else {
                0.0
            };
            let bw_min = dirs.iter().map(|d| d.bw_bytes).min().unwrap_or(0) as f64;
            let bw_max = dirs.iter().map(|d| d.bw_bytes).max().unwrap_or(0) as f64;
            let bin = |v: f64| fio_num(v, 1024.0, &["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"]);
            let dec = |v: f64| fio_num(v, 1000.0, &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"]);
            let _ = writeln!(
                out,
                "{name:>7}: bw={}, {}-{} ({}-{}), io={} ({}), run={run_min}-{run_max}msec",
                fio_bw(agg),
                bin(bw_min),
                bin(bw_max),
                dec(bw_min),
                dec(bw_max),
                fio_bytes_bin(bytes),
                fio_bytes_dec(bytes)
            );
        }
    }
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
        assert_eq!(fio_bytes_bin(4096), "4096B");
        assert_eq!(fio_bytes_bin(65536), "64.0KiB");
        assert_eq!(fio_bytes_bin(131_072), "128KiB");
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
