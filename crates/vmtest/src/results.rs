//! Reading what a guest script left in its output directory, as the VM
//! tests check it: a result file or a `run_json` command's stdout as JSON
//! (Null when missing), its exit status, a line saying what it printed, an
//! erase report's drive row and the signed certificate that row names, and
//! a certificate checked on the host.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::vm::GuestRun;

/// A result file as JSON, Null when missing or not JSON.
pub fn json(run: &GuestRun, name: &str) -> Value {
    run.json(name).unwrap_or(Value::Null)
}

/// `run_json NAME`'s stdout as JSON, Null when missing or not JSON.
pub fn out(run: &GuestRun, name: &str) -> Value {
    run.outcome_json(name)
        .map(|(_, v)| v)
        .unwrap_or(Value::Null)
}

/// `run_json NAME`'s exit status.
pub fn status(run: &GuestRun, name: &str) -> i64 {
    run.outcome(name).0
}

/// `run_json NAME`'s status, stdout and stderr on one line, for a failed
/// check's message.
pub fn why(run: &GuestRun, name: &str) -> String {
    let (s, o, e) = run.outcome(name);
    format!("status {s}; stdout {o}; stderr {e}")
}

/// A JSON number, or a string of digits (nvme-cli and drivelab print
/// 128-bit counters as strings).
pub fn num(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// The erase report's one drive row (`run_json NAME drivelab erase ...`).
pub fn row(run: &GuestRun, name: &str) -> Value {
    out(run, name)["drives"][0].clone()
}

/// The signed certificate a report row names (its path under `/out/`).
pub fn cert(run: &GuestRun, row: &Value) -> Value {
    row["certificate"]
        .as_str()
        .and_then(|p| p.strip_prefix("/out/"))
        .and_then(|p| std::fs::read_to_string(run.out_dir().join(p)).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .map(|v| v["certificate"].clone())
        .unwrap_or(Value::Null)
}

/// Print the guest's uptime at each `mark` of its script (`marks.txt`),
/// and at the script's start and end, beside the wall time: where a slow
/// run spent its time.
pub fn print_times(run: &GuestRun) {
    println!(
        "guest uptime at each step:\n{}",
        run.file("marks.txt").unwrap_or_default()
    );
    println!(
        "guest uptime at script start {:?} s, at end {:?} s; wall {:.0} s",
        run.boot_to_script_s,
        run.script_end_s,
        run.elapsed.as_secs_f64()
    );
}

/// `drivelab erase verify-cert FILE --public-key KEY`, run on the host with
/// `bin`: its exit status and stdout and stderr together (-1 and why when
/// it could not be run).
pub fn verify_cert(bin: &Path, file: &Path, key: &Path) -> (i32, String) {
    match Command::new(bin)
        .args(["erase", "verify-cert"])
        .arg(file)
        .arg("--public-key")
        .arg(key)
        .output()
    {
        Ok(o) => (
            o.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (-1, format!("cannot run {}: {e}", bin.display())),
    }
}
