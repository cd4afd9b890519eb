//! fio's terse output, version 3 (`--minimal`, `--output-format=terse`):
//! one line of semicolon-separated fields per job, in the order of fio's
//! HOWTO ("Terse output", the v3 field list): version, program, job name,
//! group, error; for reads then writes: KiB moved, KiB/s, IOPS, runtime
//! (ms), submission, completion and total latency (min, max as whole µs;
//! mean, stdev as µs with six decimals), 20 completion percentiles
//! (`P%=µs`, unused slots `0%=0`), bandwidth samples (min, max, share of
//! the group, mean, stdev); CPU (user %, system %, context switches, major
//! and minor faults); I/O depths; latency ranges in µs then ms; then per
//! disk its name and counters. A job with a description ends with it.
//!
//! The second field names drivelab and its version, where fio writes its
//! own version: the numbers are drivelab's.

use crate::model::{DirReport, JobReport, LatReport, OrderedMap, RunReport};

/// Percentile slots in a terse line.
const PCT_SLOTS: usize = 20;

fn lat_fields(f: &mut Vec<String>, l: &LatReport) {
    f.push((l.min / 1000).to_string());
    f.push((l.max / 1000).to_string());
    f.push(format!("{:.6}", l.mean / 1000.0));
    f.push(format!("{:.6}", l.stddev / 1000.0));
}

fn dir_fields(f: &mut Vec<String>, d: &DirReport) {
    let rt = d.runtime;
    f.push(d.io_kbytes.to_string());
    f.push(
        (d.io_kbytes * 1000)
            .checked_div(rt)
            .unwrap_or(0)
            .to_string(),
    );
    f.push(
        (d.total_ios * 1000)
            .checked_div(rt)
            .unwrap_or(0)
            .to_string(),
    );
    f.push(rt.to_string());
    lat_fields(f, &d.slat_ns);
    lat_fields(f, &d.clat_ns);
    let mut pcts: Vec<(f64, u64)> = d
        .clat_ns
        .percentile
        .iter()
        .filter_map(|(k, v)| k.parse::<f64>().ok().map(|p| (p, *v)))
        .collect();
    pcts.sort_by(|a, b| a.0.total_cmp(&b.0));
    for i in 0..PCT_SLOTS {
        match pcts.get(i) {
            Some((p, v)) if d.total_ios > 0 => f.push(format!("{p:.6}%={}", v / 1000)),
            _ => f.push("0%=0".to_string()),
        }
    }
    lat_fields(f, &d.lat_ns);
    f.push(d.bw_min.to_string());
    f.push(d.bw_max.to_string());
    f.push(format!("{:.6}%", d.bw_agg));
    f.push(format!("{:.6}", d.bw_mean));
    f.push(format!("{:.6}", d.bw_dev));
}

fn dist(f: &mut Vec<String>, m: &OrderedMap<f64>, decimals: usize) {
    for (_, v) in &m.0 {
        f.push(format!("{v:.decimals$}%"));
    }
}

/// One job's terse v3 line (without the newline).
pub fn job_line(r: &RunReport, j: &JobReport) -> String {
    let mut f: Vec<String> = vec![
        "3".to_string(),
        r.drivelab_version.clone(),
        j.jobname.clone(),
        j.groupid.to_string(),
        j.error.to_string(),
    ];
    dir_fields(&mut f, &j.read);
    dir_fields(&mut f, &j.write);
    f.push(format!("{:.6}%", j.usr_cpu));
    f.push(format!("{:.6}%", j.sys_cpu));
    f.push(j.ctx.to_string());
    f.push(j.majf.to_string());
    f.push(j.minf.to_string());
    dist(&mut f, &j.iodepth_level, 1);
    dist(&mut f, &j.latency_us, 2);
    dist(&mut f, &j.latency_ms, 2);
    for d in &r.disk_util {
        f.push(d.name.clone());
        for n in [
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks,
            d.write_ticks,
            d.in_queue,
        ] {
            f.push(n.to_string());
        }
        f.push(format!("{:.2}%", d.util));
    }
    if let Some(desc) = j.job_options.get("description") {
        f.push(desc.clone());
    }
    f.join(";")
}

/// Every job's line.
pub fn render(r: &RunReport) -> String {
    let mut s = String::new();
    for j in &r.jobs {
        s.push_str(&job_line(r, j));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DiskUtil;

    #[test]
    fn a_line_has_fios_v3_field_count_and_places() {
        let mut r = RunReport {
            drivelab_version: "drivelab-0.1.0".into(),
            ..Default::default()
        };
        r.disk_util.push(DiskUtil {
            name: "vda".into(),
            util: 46.224,
            ..Default::default()
        });
        let mut j = JobReport {
            jobname: "lg".into(),
            ..Default::default()
        };
        j.read.io_kbytes = 37724;
        j.read.total_ios = 9431;
        j.read.runtime = 1001;
        j.read.clat_ns = LatReport {
            min: 31_200,
            max: 15_838_900,
            mean: 68_119.35,
            stddev: 365_628.925,
            n: 9431,
            ..Default::default()
        };
        j.read.clat_ns.percentile.insert("1.000000".into(), 36_864);
        j.read.clat_ns.percentile.insert("10.000000".into(), 39_168);
        j.read.clat_ns.percentile.insert("5.000000".into(), 38_000);
        j.iodepth_level = OrderedMap(vec![("1".into(), 100.0), ("2".into(), 0.0)]);
        r.jobs.push(j.clone());
        let line = job_line(&r, &r.jobs[0]);
        let f: Vec<&str> = line.split(';').collect();
        assert_eq!(&f[..5], ["3", "drivelab-0.1.0", "lg", "0", "0"]);
        // 37724 KiB in 1001 ms: 37686 KiB/s, as fio printed for the same.
        assert_eq!(&f[5..9], ["37724", "37686", "9421", "1001"]);
        assert_eq!(&f[13..17], ["31", "15838", "68.119350", "365.628925"]);
        // Percentiles in numeric order, in µs; unused slots 0%=0.
        assert_eq!(
            &f[17..20],
            ["1.000000%=36", "5.000000%=38", "10.000000%=39"]
        );
        assert_eq!(f[36], "0%=0");
        // Reads 41 fields, writes 41, CPU 5, then the depth distribution.
        assert_eq!(f[5 + 41 + 41 + 5], "100.0%");
        assert_eq!(*f.last().unwrap(), "46.22%");
        assert_eq!(f[f.len() - 9], "vda");
    }
}
