//! The human-readable report, laid out like fio's so a fio user finds every
//! number where they expect it, followed by drivelab's device check.

use std::fmt::Write;

use crate::model::{DirReport, JobReport, LatReport, RunReport};

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

fn lat_unit(l: &LatReport) -> (&'static str, f64) {
    if l.mean < 10_000.0 {
        ("nsec", 1.0)
    } else if l.mean < 10_000_000.0 {
        ("usec", 1e3)
    } else {
        ("msec", 1e6)
    }
}

fn write_lat(out: &mut String, label: &str, l: &LatReport) {
    if l.n == 0 {
        return;
    }
    let (unit, div) = lat_unit(l);
    let _ = writeln!(
        out,
        "    {label} ({unit}): min={}, max={}, avg={:.2}, stdev={:.2}",
        fmt_num(l.min as f64 / div),
        fmt_num(l.max as f64 / div),
        l.mean / div,
        l.stddev / div
    );
    if l.percentile.is_empty() {
        return;
    }
    let _ = writeln!(out, "     {label} percentiles ({unit}):");
    let mut entries: Vec<(f64, u64)> = l
        .percentile
        .iter()
        .filter_map(|(k, v)| k.parse::<f64>().ok().map(|p| (p, *v)))
        .collect();
    entries.sort_by(|a, b| a.0.total_cmp(&b.0));
    for row in entries.chunks(4) {
        let cells: Vec<String> = row
            .iter()
            .map(|(p, v)| format!("{p:5.2}th=[{:>6}]", fmt_num(*v as f64 / div)))
            .collect();
        let _ = writeln!(out, "     | {},", cells.join(", "));
    }
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 || v.fract() == 0.0 {
        format!("{:.0}", v)
    } else {
        format!("{v:.2}")
    }
}

fn write_dir(out: &mut String, name: &str, d: &DirReport) {
    if d.total_ios == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}({}/{}msec)",
        iops_short(d.iops),
        bw_pair(d.bw_bytes as f64),
        bytes_short(d.io_bytes),
        d.runtime
    );
    write_lat(out, "clat", &d.clat_ns);
    if let Some(l) = &d.lat_from_intended_ns {
        write_lat(out, "lat from intended issue", l);
    }
}

fn write_job(out: &mut String, j: &JobReport) {
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs=1): err={:>2}: ioengine={}",
        j.jobname, j.groupid, j.error, j.ioengine
    );
    if let Some(e) = &j.error_detail {
        let _ = writeln!(out, "  error: {e}");
    }
    write_dir(out, "read", &j.read);
    write_dir(out, "write", &j.write);
    write_dir(out, "trim", &j.trim);
    if j.sync.total_ios > 0 {
        let _ = writeln!(out, "  sync: {} fsyncs", j.sync.total_ios);
        write_lat(out, "sync lat", &j.sync.lat_ns);
    }
    let _ = writeln!(
        out,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, {:.0} ns CPU per I/O",
        j.usr_cpu, j.sys_cpu, j.ctx, j.cpu_ns_per_io
    );
}

/// Render the whole report.
pub fn render(r: &RunReport) -> String {
    let mut out = String::new();
    for j in &r.jobs {
        write_job(&mut out, j);
    }
    if r.jobs.len() > 1 {
        let _ = writeln!(out, "\nRun status (all jobs):");
        for (name, pick) in [("READ", 0usize), ("WRITE", 1), ("TRIM", 2)] {
            let (bytes, bw, ms) = r.jobs.iter().fold((0u64, 0u64, 0u64), |acc, j| {
                let d = match pick {
                    0 => &j.read,
                    1 => &j.write,
                    _ => &j.trim,
                };
                (acc.0 + d.io_bytes, acc.1 + d.bw_bytes, acc.2.max(d.runtime))
            });
            if bytes > 0 {
                let _ = writeln!(
                    out,
                    "  {name:>5}: bw={}, io={}, run={}msec",
                    bw_pair(bw as f64),
                    bytes_short(bytes),
                    ms
                );
            }
        }
    }
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
    fn job_text_has_fio_lines() {
        let mut r = RunReport::default();
        let mut j = JobReport {
            jobname: "j".into(),
            ioengine: "io_uring".into(),
            ..Default::default()
        };
        j.read.total_ios = 10;
        j.read.iops = 1000.0;
        j.read.bw_bytes = 4_096_000;
        j.read.io_bytes = 40960;
        j.read.runtime = 10;
        j.read.clat_ns = LatReport {
            min: 1000,
            max: 90_000,
            mean: 20_000.0,
            stddev: 5.0,
            n: 10,
            ..Default::default()
        };
        j.read.clat_ns.percentile.insert("99.000000".into(), 80_000);
        r.jobs.push(j);
        let t = render(&r);
        assert!(
            t.contains("read: IOPS=1.00k, BW=3.9MiB/s (4.1MB/s)(40.0KiB/10msec)"),
            "{t}"
        );
        assert!(t.contains("clat (usec): min=1, max=90, avg=20.00"), "{t}");
        assert!(t.contains("99.00th=[    80]"), "{t}");
    }
}
