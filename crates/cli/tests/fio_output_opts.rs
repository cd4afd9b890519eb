//! fio's output options shape drivelab's report as they shape fio 3.33's:
//! the same rate-limited job (psync reads and writes of a 1 MiB file in a
//! temp dir) runs under both tools with each option, and the part of the
//! text and JSON the option changes is compared: the units and figures of
//! the IOPS, bandwidth and size fields (digits masked, units and the
//! places of decimals kept), the directions reported, the jobs reported,
//! the block lifetime section; `kb_base` also changes how the job's sizes
//! read, seen in the block size and bytes moved. `log_max_value` is
//! checked in the latency log against the JSON's largest latency. Needs
//! fio (tests/run installs it).

mod fio_common;

use drivelab_testkit::TempDir;
use serde_json::Value;

struct Case {
    /// Job lines after the common ones.
    opts: &'static str,
    /// What both tools must show of it (a line of [`shape`]'s).
    want: &'static [&'static str],
    /// Lines (their start) the tools show differently, each for the reason
    /// beside it, left out of the comparison.
    apart: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        opts: "",
        want: &[
            "bs=(R) 9B-9B",
            "read: IOPS=9, BW=9KiB/s (9kB/s)(9KiB/9msec)",
            "READ: bw=9KiB/s (9kB/s), 9KiB/s-9KiB/s (9kB/s-9kB/s), io=9KiB (9kB), run=9-9msec",
            "json: read,write,trim",
        ],
        apart: None,
    },
    Case {
        opts: "kb_base=1000",
        want: &[
            "bs=(R) 9B-9B",
            "read: IOPS=9, BW=9kB/s (9KiB/s)(9kB/9msec)",
            "READ: bw=9kB/s (9KiB/s), 9kB/s-9kB/s (9KiB/s-9KiB/s), io=9kB (9KiB), run=9-9msec",
            "json: read,write,trim",
        ],
        apart: None,
    },
    Case {
        opts: "unit_base=1",
        want: &[
            "read: IOPS=9, BW=9.9Mibit/s (9.9Mbit/s)(9KiB/9msec)",
            "READ: bw=9.9Mibit/s (9.9Mbit/s), 9.9Mibit/s-9.9Mibit/s (9.9Mbit/s-9.9Mbit/s), io=9KiB (9kB), run=9-9msec",
        ],
        apart: None,
    },
    Case {
        opts: "significant_figures=6",
        want: &[
            "read: IOPS=9, BW=9.9KiB/s (9.9kB/s)(9B/9msec)",
            "READ: bw=9.9KiB/s (9.9kB/s), 9.9KiB/s-9.9KiB/s (9.9kB/s-9.9kB/s), io=9B (9B), run=9-9msec",
        ],
        apart: None,
    },
    Case {
        opts: "significant_figures=2",
        want: &[
            "bs=(R) 9KiB-9KiB",
            "read: IOPS=9k, BW=9MiB/s (9MB/s)(9MiB/9msec)",
        ],
        apart: None,
    },
    Case {
        opts: "unified_rw_reporting=mixed",
        want: &[
            "mixed: IOPS=9, BW=9KiB/s (9kB/s)(9KiB/9msec)",
            "MIXED: bw=9KiB/s (9kB/s), 9KiB/s-9KiB/s (9kB/s-9kB/s), io=9KiB (9kB), run=9-9msec",
            "json: mixed",
        ],
        apart: None,
    },
    Case {
        opts: "unified_rw_reporting=1",
        want: &["json: mixed"],
        apart: None,
    },
    Case {
        opts: "unified_rw_reporting=both",
        want: &[
            "read: IOPS=9, BW=9KiB/s (9kB/s)(9KiB/9msec)",
            "MIXED: bw=9KiB/s (9kB/s), 9KiB/s-9KiB/s (9kB/s-9kB/s), io=9KiB (9kB), run=9-9msec",
            "json: read,write,trim,mixed",
        ],
        // fio 3.33 prints the job's mixed line with zeros under "both"
        // ("mixed: IOPS=0, BW=0 (0)(0B/…)") while its group line and JSON
        // hold the sums; drivelab prints the sums there too.
        apart: Some("mixed:"),
    },
    Case {
        opts: "stats=0",
        want: &["jobs named 0", "no job section"],
        // fio prints the job's header line before it runs; drivelab
        // prints it with the job's report, which stats=0 leaves out.
        apart: Some("bs=(R)"),
    },
    Case {
        opts: "block_error_percentiles=1",
        want: &[
            "block lifetime percentiles :",
            "| states : unwritten=9, trimmed=9, written=9, trim failure=9, write failure=9",
        ],
        apart: None,
    },
];

/// Every run of digits as one 9, spaces after '=' and runs of spaces
/// dropped: what is left are the units, prefixes and decimal places.
fn mask(line: &str) -> String {
    let mut out = String::new();
    let mut prev_digit = false;
    for c in line.trim().chars() {
        if c.is_ascii_digit() {
            if !prev_digit {
                out.push('9');
            }
            prev_digit = true;
            continue;
        }
        prev_digit = false;
        if c == ' ' && (out.ends_with('=') || out.ends_with(' ')) {
            continue;
        }
        out.push(c);
    }
    out
}

/// The lines of the text and facts of the JSON the options change.
fn shape(json: &Value, text: &str) -> Vec<String> {
    let mut got = Vec::new();
    for l in text.lines() {
        let t = l.trim_start();
        if let Some(at) = l.find("bs=(R) ") {
            let bs = &l[at..];
            got.push(mask(bs.split(',').next().unwrap_or(bs)));
        }
        let dir_line = ["read:", "write:", "mixed:", "READ:", "WRITE:", "MIXED:"]
            .iter()
            .any(|p| t.starts_with(p));
        if dir_line || t.starts_with("block lifetime") || t.starts_with("|        states") {
            got.push(mask(l));
        }
    }
    let jobs: Vec<&Value> = json["jobs"]
        .as_array()
        .map(|a| a.iter().filter(|j| j.get("jobname").is_some()).collect())
        .unwrap_or_default();
    got.push(format!("jobs named {}", jobs.len()));
    if !text.contains("(groupid=") {
        got.push("no job section".to_string());
    }
    if let Some(j) = jobs.first() {
        let dirs: Vec<&str> = ["read", "write", "trim", "mixed"]
            .into_iter()
            .filter(|d| j.get(*d).is_some())
            .collect();
        got.push(format!("json: {}", dirs.join(",")));
    }
    got
}

/// Run `job` (a job file's text) under `tool` with JSON and text output:
/// the JSON and the text.
fn run(tool: &str, dir: &TempDir, job: &str) -> (Value, String) {
    drivelab_testkit::isolate_store();
    let path = dir.join("job.fio");
    std::fs::write(&path, job).unwrap();
    fio_common::run_json_normal(tool, &path, &dir.join(&format!("{tool}.json")))
}

/// The common job: 1 MiB of sequential reads and writes at 2 MiB/s a
/// direction (so the figures keep their units whatever the machine's
/// speed), buffered as fio's default.
fn job(dir: &TempDir, opts: &str) -> String {
    let file = dir.join("data");
    if !file.exists() {
        std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    }
    format!(
        "[job]\nioengine=psync\nfilename={}\nsize=1m\nbs=4k\nrw=rw\ndirect=0\nrate=2m\n{opts}\n",
        file.display()
    )
}

#[test]
fn output_options_shape_the_report_as_in_fio() {
    let dir = TempDir::new("fio-output-opts");
    let mut failed = Vec::new();
    for case in CASES {
        let mut shapes = Vec::new();
        for tool in ["fio", "drivelab"] {
            let (json, text) = run(tool, &dir, &job(&dir, case.opts));
            let mut got = shape(&json, &text);
            got.retain(|g| case.apart.is_none_or(|f| !g.starts_with(f)));
            eprintln!("{:<28} {tool:<8} {got:?}", case.opts);
            for w in case.want {
                if !got.iter().any(|g| g == w) {
                    failed.push(format!("{} under {tool}: no '{w}' in {got:?}", case.opts));
                }
            }
            shapes.push(got);
        }
        // Beyond the lines named, both tools show the same shape.
        if shapes[0] != shapes[1] {
            failed.push(format!(
                "{}: fio shows {:?}, drivelab {:?}",
                case.opts, shapes[0], shapes[1]
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// kb_base=1000 reads the job's sizes as fio does (k = 1000, KiB = 1024),
/// wherever in the section it stands: the bytes each tool moved.
#[test]
fn kb_base_1000_reads_sizes_in_powers_of_1000_wherever_it_stands() {
    let dir = TempDir::new("fio-kb-base");
    for (opts, bytes, bs) in [
        ("kb_base=1000", 1_000_000, 4000),
        ("kb_base=1000\nsize=1024KiB\nbs=4KiB", 1 << 20, 4096),
        ("size=500k\nkb_base=1000", 500_000, 4000),
    ] {
        for tool in ["fio", "drivelab"] {
            let text = job(&dir, opts).replace("rate=2m\n", "");
            let (json, _) = run(tool, &dir, &text);
            let j = &json["jobs"][0];
            let moved = j["read"]["io_bytes"].as_u64().unwrap_or(0)
                + j["write"]["io_bytes"].as_u64().unwrap_or(0);
            assert_eq!(moved, bytes, "{tool} with {opts:?}");
            let ios = j["read"]["total_ios"].as_u64().unwrap_or(0)
                + j["write"]["total_ios"].as_u64().unwrap_or(0);
            // bs=4k is 4000 bytes under kb_base=1000, 4KiB 4096.
            assert_eq!(ios, bytes / bs, "{tool} with {opts:?}");
        }
    }
}

/// The values of a `_lat` log's lines.
fn log_values(path: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| l.split(',').nth(1)?.trim().parse().ok())
        .collect()
}

/// The middle value.
fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// With log_avg_msec, log_max_value=1 logs each window's largest latency:
/// the log's largest value is the job's largest latency (JSON `lat_ns`
/// max), under fio as under drivelab, and a window's maximum (of a
/// hundred milliseconds of 4 KiB reads) stands above the windows' means
/// the same job logs without the option.
#[test]
fn log_max_value_logs_the_windows_largest_latency() {
    let dir = TempDir::new("fio-log-max");
    let file = dir.join("data");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    for tool in ["fio", "drivelab"] {
        let mut medians = Vec::new();
        for max in [0, 1] {
            let prefix = dir.join(&format!("{tool}{max}"));
            let job = format!(
                "[job]\nioengine=psync\nfilename={}\nsize=1m\nbs=4k\nrw=randread\ndirect=0\ntime_based\nruntime=600ms\nwrite_lat_log={}\nlog_avg_msec=100\nlog_max_value={max}\n",
                file.display(),
                prefix.display()
            );
            let (json, _) = run(tool, &dir, &job);
            let lat_max = json["jobs"][0]["read"]["lat_ns"]["max"]
                .as_u64()
                .unwrap_or(0);
            let logged = log_values(&dir.join(&format!("{tool}{max}_lat.1.log")));
            assert!(logged.len() >= 5, "{tool}: {} windows", logged.len());
            if max == 1 {
                assert_eq!(
                    logged.iter().max(),
                    Some(&lat_max),
                    "{tool}: log_max_value=1"
                );
            }
            medians.push(median(logged));
        }
        assert!(
            medians[1] > medians[0],
            "{tool}: median window maximum {} vs mean {}",
            medians[1],
            medians[0]
        );
    }
}

/// CLOCK_BOOTTIME in ms, as /proc/uptime gives it (to 10 ms).
fn uptime_ms() -> u64 {
    let s = std::fs::read_to_string("/proc/uptime").unwrap();
    let secs: f64 = s.split_whitespace().next().unwrap().parse().unwrap();
    (secs * 1000.0) as u64
}

/// log_alternate_epoch with clock 7 (CLOCK_BOOTTIME): the log's times
/// count from the boot, as /proc/uptime does, under both tools.
#[test]
fn log_alternate_epoch_counts_from_the_clocks_epoch() {
    let dir = TempDir::new("fio-alt-epoch");
    let file = dir.join("data");
    std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    for tool in ["fio", "drivelab"] {
        let prefix = dir.join(&format!("{tool}-epoch"));
        let job = format!(
            "[job]\nioengine=psync\nfilename={}\nsize=1m\nbs=4k\nrw=read\ndirect=0\ntime_based\nruntime=300ms\nwrite_lat_log={}\nlog_avg_msec=100\nlog_alternate_epoch=1\nlog_alternate_epoch_clock_id=7\n",
            file.display(),
            prefix.display()
        );
        let before = uptime_ms();
        run(tool, &dir, &job);
        let after = uptime_ms();
        let first = std::fs::read_to_string(dir.join(&format!("{tool}-epoch_lat.1.log")))
            .unwrap()
            .lines()
            .next()
            .and_then(|l| l.split(',').next()?.trim().parse::<u64>().ok())
            .unwrap_or(0);
        assert!(
            first + 20 >= before && first <= after + 20,
            "{tool}: first log time {first} ms, boot clock {before}..{after} ms"
        );
    }
}
