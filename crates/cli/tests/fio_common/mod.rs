//! Shared helpers of the tests that run one job under fio 3.33 and under
//! drivelab and compare what an option changes: the command of each tool
//! and the JSON of a `--output-format=json,normal` output.

#![allow(dead_code)]

use std::process::Command;

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// `fio` or `drivelab run`, ready for the job file and options.
pub fn tool(tool: &str) -> Command {
    if tool == "fio" {
        Command::new("fio")
    } else {
        let mut c = Command::new(BIN);
        c.arg("run");
        c
    }
}

/// Run the job file `job` under `tool` with `--output-format=json,normal`
/// into `out` (a file); it must succeed: the JSON and the whole output.
pub fn run_json_normal(
    tool: &str,
    job: &std::path::Path,
    out: &std::path::Path,
) -> (Value, String) {
    let done = self::tool(tool)
        .arg("--output-format=json,normal")
        .arg(format!("--output={}", out.display()))
        .arg(job)
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&done.stderr)
    );
    let all = std::fs::read_to_string(out).unwrap();
    (json_of(tool, &all), all)
}

/// The JSON object of a `json,normal` output (before or after the text).
pub fn json_of(tool: &str, all: &str) -> Value {
    let start = if all.starts_with('{') {
        0
    } else {
        all.find("\n{").map_or(0, |i| i + 1)
    };
    serde_json::Deserializer::from_str(&all[start..])
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("{tool}: no JSON in {all}"))
}

/// `tool` run under strace (threads followed, file names shown, no
/// buffers) with the job file and `args`, tracing the system calls
/// `calls` (comma-separated) into `trace`, with strace's own `flags`
/// (`-ttt`, `-T`); what the tool printed.
pub fn under_strace(
    tool: &str,
    trace: &std::path::Path,
    flags: &[&str],
    calls: &str,
    args: &[&str],
    job: &std::path::Path,
) -> std::process::Output {
    let cmd = self::tool(tool);
    Command::new("strace")
        .args(["-f", "-qq", "-y", "-s", "0"])
        .args(flags)
        .arg("-o")
        .arg(trace)
        .args(["-e", &format!("trace={calls}")])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .args(args)
        .arg(job)
        .output()
        .expect("strace runs")
}

/// The directions of the I/Os in a latency log (`write_lat_log`), in
/// order, run-length encoded: (direction, count).
pub fn lat_log_directions(log: &std::path::Path) -> Vec<(u32, u32)> {
    let text = std::fs::read_to_string(log)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", log.display()));
    let mut v: Vec<(u32, u32)> = Vec::new();
    for line in text.lines() {
        let d: u32 = line.split(',').nth(2).unwrap().trim().parse().unwrap();
        match v.last_mut() {
            Some((last, n)) if *last == d => *n += 1,
            _ => v.push((d, 1)),
        }
    }
    v
}
