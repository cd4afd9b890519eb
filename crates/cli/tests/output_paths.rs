//! Output paths: every file or directory a command will write is checked
//! before any I/O starts (exit status 2, one line, nothing touched), and a
//! result file that fails at the end does not lose the results: they go to
//! standard output, with one line on stderr and a non-zero exit status.

use drivelab_testkit::{run, TempDir, Tmpfs};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/traces");

/// Exit status 2 with one line on stderr naming `what`, nothing on stdout.
fn assert_refused(args: &[&str], what: &str) {
    let (code, out, err) = run(BIN, args);
    assert_eq!(code, 2, "{args:?}: {err}{out}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(what), "{args:?}: {err}");
    assert!(out.is_empty(), "{args:?} printed on stdout: {out}");
}

#[test]
fn run_with_output_in_a_missing_directory_is_refused_before_the_workload() {
    // It used to run the whole workload, then fail and lose the results.
    let dir = TempDir::new("out-run");
    let target = dir.join("target.bin");
    let t = format!("--filename={}", target.display());
    for out in [
        "/nonexistent-drivelab-dir/x.json",
        dir.path().to_str().unwrap(),
    ] {
        assert_refused(
            &["run", &t, "--size=4m", "--runtime=1", "--output", out],
            "--output",
        );
    }
    assert!(!target.exists(), "the refused run created its target");
}

#[test]
fn results_survive_an_output_file_that_fails_at_the_end() {
    // A file on a full filesystem passes the check (a temporary file can be
    // created beside it) and fails the write: the results go to standard
    // output, the old file stays whole and no temporary file is left.
    let dir = TempDir::new("out-full");
    let fs = Tmpfs::mount_in(&dir, "full", 64 << 10);
    let old = fs.join("old.json");
    std::fs::write(&old, b"{\"old\": true}\n").unwrap();
    fs.fill();
    let o = format!("--output={}", old.display());
    let (code, out, err) = run(
        BIN,
        &[
            "run",
            "--ioengine=null",
            "--filename=x",
            "--size=1m",
            &o,
            "--output-format=json",
        ],
    );
    assert_eq!(code, 1, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 1 << 20, "{v}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("old.json") && err.contains("standard output"),
        "{err}"
    );
    // Text mode too.
    let (code, out, err) = run(
        BIN,
        &["run", "--ioengine=null", "--filename=x", "--size=1m", &o],
    );
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("read:") && out.contains("IOPS"), "{out}");
    assert_eq!(std::fs::read(&old).unwrap(), b"{\"old\": true}\n");
    let mut names: Vec<String> = std::fs::read_dir(&fs.path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["filler", "old.json"], "a temporary file was left");
}

#[test]
fn null_and_full_are_refused_as_outputs() {
    for dev in ["/dev/null", "/dev/full"] {
        let o = format!("--output={dev}");
        assert_refused(
            &["run", "--ioengine=null", "--filename=x", "--size=1m", &o],
            "give - for standard output, or a file",
        );
    }
    // An explicit - is standard output.
    let (code, out, err) = run(
        BIN,
        &[
            "run",
            "--ioengine=null",
            "--filename=x",
            "--size=1m",
            "--output=-",
            "--output-format=json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 1 << 20, "{v}");
}

#[test]
fn test_checks_its_log_and_output_before_touching_the_target() {
    let dir = TempDir::new("out-test");
    let target = dir.join("t.bin");
    std::fs::write(&target, vec![0u8; 1 << 20]).unwrap();
    let t = target.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    assert_refused(
        &[
            "test",
            t,
            "--step",
            "write",
            "--log",
            "/nonexistent-drivelab-dir/l.log",
        ],
        "--log",
    );
    assert_refused(&["test", t, "--step", "write", "--output", d], "--output");
    assert!(
        std::fs::read(&target).unwrap().iter().all(|&b| b == 0),
        "a refused test wrote its target"
    );
}

#[test]
fn a_log_that_fails_midway_keeps_the_results() {
    let dir = TempDir::new("out-log");
    let target = dir.join("t.bin");
    std::fs::write(&target, vec![0u8; 1 << 20]).unwrap();
    let fs = Tmpfs::mount_in(&dir, "full", 64 << 10);
    let log = fs.join("test.log");
    std::fs::write(&log, b"old log\n").unwrap();
    fs.fill();
    let (code, out, err) = run(
        BIN,
        &[
            "test",
            target.to_str().unwrap(),
            "--step",
            "read",
            "--log",
            log.to_str().unwrap(),
            "--output-format=json",
        ],
    );
    assert_eq!(code, 1, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    assert_eq!(v["passed"], true, "{v}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("log") && err.contains("test.log"), "{err}");
    assert_eq!(std::fs::read(&log).unwrap(), b"old log\n");
}

#[test]
fn trace_outputs_are_checked_first() {
    let dir = TempDir::new("out-trace");
    let trace = format!("{SAMPLES}/tpcc-small.trace");
    let file = dir.join("f");
    std::fs::write(&file, b"x").unwrap();
    let under_file = format!("{}/plots", file.display());
    let d = dir.path().to_str().unwrap();
    assert_refused(
        &["trace", "analyze", &trace, "--plots", &under_file],
        "--plots",
    );
    assert_refused(&["trace", "analyze", &trace, "--output", d], "--output");
    assert_refused(
        &[
            "trace",
            "record",
            "/dev/null",
            "--output",
            "/nonexistent-drivelab-dir/r.dlt",
            "--duration",
            "1",
        ],
        "--output",
    );
    let target = dir.join("target.bin");
    std::fs::write(&target, vec![0u8; 1 << 20]).unwrap();
    assert_refused(
        &[
            "trace",
            "replay",
            &trace,
            "--target",
            target.to_str().unwrap(),
            "--record",
            "/nonexistent-drivelab-dir/r.dlt",
        ],
        "--record",
    );
    assert!(std::fs::read(&target).unwrap().iter().all(|&b| b == 0));
    // A plots directory that does not exist yet (with its parent) is fine.
    let plots = dir.join("new/plots");
    let (code, _, err) = run(
        BIN,
        &[
            "trace",
            "analyze",
            &trace,
            "--plots",
            plots.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        plots.join("sizes.svg").exists(),
        "no plots in {}",
        plots.display()
    );
}
