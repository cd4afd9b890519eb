//! Bad input from the command line: every case is one line (or one JSON
//! document in JSON mode) and exit status 2, before any I/O, and none
//! reaches a panic or an abort.

use drivelab_testkit::{run, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// Exit status 2 with exactly one line on stderr and nothing on stdout.
fn assert_bad_input(args: &[&str]) -> String {
    let (code, out, err) = run(BIN, args);
    assert_eq!(code, 2, "{args:?}: {err}{out}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(out.is_empty(), "{args:?} printed on stdout: {out}");
    err
}

#[test]
fn numjobs_4096_in_three_sections_is_refused_instead_of_aborting() {
    // The job threads of all sections together: 3 x 4096 used to abort
    // (SIGABRT, "failed to allocate an alternative stack") with no JSON.
    let dir = TempDir::new("nj3");
    let job = dir.join("nj3.fio");
    let target = dir.join("target.bin");
    std::fs::write(
        &job,
        format!(
            "[global]\nsize=1m\nnumjobs=4096\nruntime=1\nfilename={}\n[a]\n[b]\n[c]\n",
            target.display()
        ),
    )
    .unwrap();
    let job = job.to_str().unwrap();
    let (code, out, err) = run(BIN, &["run", job, "--output-format=json"]);
    assert_eq!(code, 2, "{err}{out}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    assert_eq!(v["exit_status"], 2);
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.contains("12288 job threads") && msg.contains("4096"),
        "{msg}"
    );
    let err = assert_bad_input(&["run", job]);
    assert!(err.contains("lower numjobs"), "{err}");
    assert!(!target.exists(), "the refused run created its target");
}

#[test]
fn numjobs_up_to_the_total_cap_still_runs() {
    // The cap is on the sum: two sections of 2048 null jobs are allowed.
    let dir = TempDir::new("nj2");
    let job = dir.join("nj2.fio");
    std::fs::write(
        &job,
        "[global]\nsize=1m\nnumjobs=2048\nio_size=4k\nioengine=null\nfilename=nj2\n[a]\n[b]\n",
    )
    .unwrap();
    let (code, out, err) = run(BIN, &["run", job.to_str().unwrap(), "--output-format=json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs"].as_array().unwrap().len(), 4096);
}

#[test]
fn a_missing_trace_or_a_directory_given_as_a_trace_is_exit_2() {
    let dir = TempDir::new("trace-input");
    let missing = dir.join("missing.trace");
    let missing = missing.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = dir.join("out.dlt");
    let out = out.to_str().unwrap();
    for args in [
        vec!["trace", "analyze", missing],
        vec!["trace", "analyze", d],
        vec!["trace", "convert", missing, out],
        vec!["trace", "convert", d, out],
        vec!["trace", "compare", missing, d],
        vec!["trace", "compare", d, d],
    ] {
        let err = assert_bad_input(&args);
        assert!(
            err.contains("no such file; give the path of an existing trace")
                || err.contains(
                    "is a directory, not a regular file; give the trace as a regular file"
                ),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_nonexistent_device_path_is_exit_2() {
    let dir = TempDir::new("device-input");
    let d = dir.path().to_str().unwrap();
    for op in ["probe", "inquiry", "identify", "read-capacity"] {
        let err = assert_bad_input(&["device", "/dev/drivelab-no-such-device", op]);
        assert!(err.contains("no such device"), "{op}: {err}");
        let err = assert_bad_input(&["device", d, op]);
        assert!(err.contains("not a device node"), "{op}: {err}");
    }
    // JSON mode: one document on stdout.
    let (code, out, _) = run(
        BIN,
        &[
            "device",
            "/dev/drivelab-no-such-device",
            "probe",
            "--output-format=json",
        ],
    );
    assert_eq!(code, 2);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    assert_eq!(v["exit_status"], 2);
}

#[test]
fn a_new_file_under_dev_shm_is_a_file_not_a_missing_device() {
    // /dev/shm is a tmpfs mounted under /dev: a name missing there is a file
    // to create, while a name missing in /dev itself is a missing device.
    assert!(
        std::path::Path::new("/dev/shm").is_dir(),
        "/dev/shm is missing; this test needs the usual tmpfs there"
    );
    let file = format!("/dev/shm/drivelab-test-{}.bin", std::process::id());
    let (code, out, err) = run(
        BIN,
        &[
            "run",
            &format!("--filename={file}"),
            "--size=1m",
            "--rw=write",
            "--output-format=json",
        ],
    );
    let created = std::path::Path::new(&file).exists();
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, 0, "{err}");
    assert!(created, "{file} was not created");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 1 << 20);
    let err = assert_bad_input(&[
        "run",
        "--filename=/dev/drivelab-no-such-device",
        "--rw=read",
    ]);
    assert!(err.contains("no such device"), "{err}");
}

/// `drivelab help run` prints what `drivelab run --help` prints: the fio
/// option table with its defaults, not clap's one-line summary of `run`.
#[test]
fn help_run_is_run_help() {
    let (c1, a, _) = run(BIN, &["help", "run"]);
    let (c2, b, _) = run(BIN, &["run", "--help"]);
    assert_eq!((c1, c2), (0, 0));
    assert_eq!(a, b);
    assert!(a.contains("--iodepth") && a.contains("Defaults:"), "{a}");
}
