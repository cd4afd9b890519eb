//! fio's io_uring engine options (`sqthread_poll`, `sqthread_poll_cpu`,
//! `fixedbufs`, `registerfiles`, `nonvectored`, `force_async`, `nowait`,
//! `hipri`), libaio's (`userspace_reap`, `nowait`) and pvsync2's (`hipri`,
//! `nowait`) on a loop device this test attaches over a file, run by fio
//! 3.33 and by drivelab in the same test:
//!
//! - one job file, unchanged for both tools: every job moves the same I/Os
//!   and bytes with the same error, and shows the same engine keys in its
//!   `job options` (fio leaves bare flags such as `fixedbufs` out; `=1`
//!   shows them);
//! - SQPOLL really runs: while a `sqthread_poll` job runs, drivelab's
//!   process has the kernel's `iou-sqp-PID` thread, and `strace -c` counts
//!   its `io_uring_enter` calls far below its I/Os — and not so without
//!   `sqthread_poll` (the same job, the control);
//! - `force_async=1` puts the kernel's io-wq workers (`iou-wrk-TID`) in
//!   drivelab's process; without it, on a loop device (which takes
//!   non-blocking submissions), there are none;
//! - `hipri` on a loop device (no poll queues): the kernel fails each
//!   polled I/O with EOPNOTSUPP; both tools end the job with error 95 after
//!   the same I/Os and exit 1;
//! - refusals (exit 2, one line naming the key, nothing written): `hipri`
//!   without `direct=1` on io_uring, a `sqthread_poll_cpu` that is not an
//!   online CPU, `hipri` with `ioengine=psync`.
//!
//! Needs root (loop devices), fio and strace.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_testkit::{
    digest, isolate_store, json_after_notes, require_root, require_tools, run, LoopDev, TempDir,
};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
const MIB: u64 = 1 << 20;
/// Linux's errno of "Operation not supported", as fio's JSON `error` has it.
const EOPNOTSUPP: u64 = 95;

/// The engine keys compared between the tools' `job options`.
const KEYS: &[&str] = &[
    "ioengine",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "nonvectored",
    "nowait",
    "force_async",
    "userspace_reap",
];

fn fio(args: &[&str]) -> (i32, Value, String) {
    let mut a = vec!["--output-format=json"];
    a.extend_from_slice(args);
    let (code, out, err) = run("fio", &a);
    (code, json_after_notes("fio", &out), err)
}

fn drivelab(args: &[&str]) -> (i32, Value, String) {
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--force", "--no-store", "--output-format=json"]);
    let (code, out, err) = run(BIN, &a);
    (code, json_after_notes("drivelab", &out), err)
}

/// One job of a tool's JSON: its name, (error, read I/Os, read bytes,
/// write I/Os, write bytes) and the compared `job options` (key, value if
/// shown).
type Job = (String, [u64; 5], Vec<(String, Option<String>)>);

/// The jobs of a tool's JSON, by name.
fn jobs(v: &Value) -> Vec<Job> {
    let mut out: Vec<_> = v["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            let n = |d: &str, k: &str| j[d][k].as_u64().unwrap_or(0);
            let counts = [
                j["error"].as_u64().unwrap_or(0),
                n("read", "total_ios"),
                n("read", "io_bytes"),
                n("write", "total_ios"),
                n("write", "io_bytes"),
            ];
            let opts = KEYS
                .iter()
                .map(|k| {
                    let v = j["job options"][*k].as_str().map(str::to_string);
                    (k.to_string(), v)
                })
                .collect();
            (
                j["jobname"].as_str().unwrap_or("").to_string(),
                counts,
                opts,
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The job file: each option group of the three engines on its own range
/// of the device, one job after the other.
fn job_file(dev: &str) -> String {
    format!(
        "[global]
filename={dev}
direct=1
bs=4k
size=8m
stonewall

[sqpoll-read]
ioengine=io_uring
rw=randread
iodepth=8
sqthread_poll
sqthread_poll_cpu=0
fixedbufs
registerfiles
nonvectored=1
force_async=4
nowait=1

[sqpoll-write]
ioengine=io_uring
rw=randwrite
offset=8m
iodepth=4
sqthread_poll=1
fixedbufs=1
registerfiles=1
force_async=2
nowait=1

[libaio-reap]
ioengine=libaio
rw=randread
offset=16m
iodepth=8
userspace_reap
nowait=1

[pvsync2-hipri]
ioengine=pvsync2
rw=write
offset=24m
hipri=1
nowait=1
"
    )
}

#[test]
fn fios_uring_libaio_and_pvsync2_options_move_what_fio_moves() {
    require_tools(&["/usr/bin/fio", "/usr/bin/strace"]);
    let dir = TempDir::new("uring-opts");
    let lo = LoopDev::new_in(&dir, 64 * MIB);
    let job = dir.join("opts.fio");
    std::fs::write(&job, job_file(lo.dev())).unwrap();
    let job = job.to_str().unwrap();
    let (fc, fv, fe) = fio(&[job]);
    assert_eq!(fc, 0, "fio failed: {fe}");
    let (dc, dv, de) = drivelab(&[job]);
    assert_eq!(dc, 0, "drivelab failed: {de}");
    let (f, d) = (jobs(&fv), jobs(&dv));
    assert_eq!(f.len(), 4, "{f:?}");
    for (fj, dj) in f.iter().zip(&d) {
        println!("{}: fio {:?}, drivelab {:?}", fj.0, fj.1, dj.1);
        assert_eq!(fj.0, dj.0);
        assert_eq!(fj.1[0], 0, "{}: fio's error", fj.0);
        assert!(fj.1[1] + fj.1[3] > 0, "{}: fio moved nothing", fj.0);
        assert_eq!(
            fj.1, dj.1,
            "{}: error, read I/Os, bytes, write I/Os, bytes",
            fj.0
        );
        assert_eq!(fj.2, dj.2, "{}: job options", fj.0);
    }
    // What drivelab does regardless is said once per engine, in the text
    // output (two io_uring jobs, one line).
    let (code, text, err) = run(BIN, &["run", job, "--force", "--no-store"]);
    assert_eq!(code, 0, "{err}");
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("ioengine:"))
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes
        .iter()
        .any(|l| l.contains("libaio runs on drivelab's io_uring")
            && l.contains("pvsync2 runs on drivelab's psync")));
    assert!(notes.iter().any(|l| l.contains(
        "io_uring's fixedbufs, registerfiles and nonvectored are what drivelab's io_uring does regardless"
    )));
    assert!(notes.iter().any(|l| l.contains("libaio's userspace_reap")));
}

/// The threads of process `pid`, by name.
fn thread_names(pid: u32) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|s| s.trim().to_string())
        .collect()
}

/// The thread IDs of process `pid`.
fn thread_ids(pid: u32) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The one child of process `pid` (strace's: the traced drivelab).
fn child_of(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What a traced run showed.
struct Traced {
    /// The job's I/Os.
    ios: u64,
    /// drivelab's io_uring_enter calls.
    enters: u64,
    /// Of those, the ones without IORING_ENTER_GETEVENTS: calls made to
    /// submit (or, with a submission thread, to wake it), not to wait.
    submit_enters: u64,
    /// The entries those calls handed over (`to_submit`), summed over
    /// every call.
    to_submit: u64,
    /// The kernel's io_uring threads seen in drivelab's process, by kind:
    /// `iou-sqp` (the SQPOLL thread), `iou-wrk` (io-wq workers). The
    /// kernel names each after the task that made the ring (drivelab's
    /// job thread): `iou-sqp-TID`.
    kernel_threads: BTreeSet<String>,
}

/// A 2-second random-read job under `strace -f` tracing `io_uring_enter`
/// with its arguments, its threads' names sampled every 50 ms.
fn traced_run(dir: &TempDir, dev: &str, extra: &[&str]) -> Traced {
    let tag = extra.join("").replace(['-', '=', '_'], "");
    let trace = dir.join(&format!("strace-{tag}.txt"));
    let json = dir.join(&format!("run-{tag}.json"));
    let out = format!("--output={}", json.display());
    let filename = format!("--filename={dev}");
    let mut args = vec![
        "-f",
        "--seccomp-bpf",
        "-e",
        "trace=io_uring_enter",
        "-o",
        trace.to_str().unwrap(),
        BIN,
        "run",
        "--name=sqp",
        &filename,
        "--ioengine=io_uring",
        "--direct=1",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=8",
        "--size=32m",
        "--time_based",
        "--runtime=2",
        "--force",
        "--no-store",
        "--output-format=json",
        &out,
    ];
    args.extend_from_slice(extra);
    isolate_store();
    let mut child = Command::new("strace")
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("strace runs");
    let start = Instant::now();
    let mut kernel_threads = BTreeSet::new();
    while child.try_wait().expect("wait").is_none() && start.elapsed() < Duration::from_secs(60) {
        if let Some(dl) = child_of(child.id()) {
            let tids = thread_ids(dl);
            for n in thread_names(dl) {
                let Some((kind, tid)) = n.rsplit_once('-') else {
                    continue;
                };
                let ours = tid.parse::<u32>().is_ok_and(|t| tids.contains(&t));
                if ours && (kind == "iou-sqp" || kind == "iou-wrk") {
                    kernel_threads.insert(kind.to_string());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("strace ends");
    assert!(
        out.status.success(),
        "strace/drivelab failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(j["error"], 0, "{j}");
    let ios = j["read"]["total_ios"].as_u64().unwrap();
    let text = std::fs::read_to_string(&trace).unwrap();
    // "PID io_uring_enter(FD, TO_SUBMIT, MIN_COMPLETE, FLAGS, ..." (the
    // arguments are printed before an "<unfinished ...>" too).
    let (mut enters, mut submit_enters, mut to_submit) = (0, 0, 0);
    for l in text.lines() {
        let Some((_, args)) = l.split_once("io_uring_enter(") else {
            continue;
        };
        let a: Vec<&str> = args.splitn(5, ", ").collect();
        enters += 1;
        to_submit += a.get(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        if !a
            .get(3)
            .is_some_and(|f| f.contains("IORING_ENTER_GETEVENTS"))
        {
            submit_enters += 1;
        }
    }
    Traced {
        ios,
        enters,
        submit_enters,
        to_submit,
        kernel_threads,
    }
}

#[test]
fn sqthread_poll_submits_through_the_kernel_thread_not_io_uring_enter() {
    require_tools(&["/usr/bin/fio", "/usr/bin/strace"]);
    let dir = TempDir::new("uring-sqpoll");
    let lo = LoopDev::new_in(&dir, 64 * MIB);
    let sq = traced_run(
        &dir,
        lo.dev(),
        &["--sqthread_poll", "--sqthread_poll_cpu=0"],
    );
    let plain = traced_run(&dir, lo.dev(), &[]);
    let (ios, pios) = (sq.ios, plain.ios);
    let sqp = sq.kernel_threads.contains("iou-sqp");
    let psqp = plain.kernel_threads.contains("iou-sqp");
    println!(
        "sqthread_poll: {ios} I/Os, {} io_uring_enter ({} not waiting); without: {pios} I/Os, {} io_uring_enter handing over {} entries",
        sq.enters, sq.submit_enters, plain.enters, plain.to_submit
    );
    assert!(
        sqp,
        "no iou-sqp thread in drivelab's process during the sqthread_poll job"
    );
    assert!(!psqp, "an iou-sqp thread without sqthread_poll");
    assert!(ios > 200, "{ios} I/Os in 2 s");
    // With the thread, the kernel is entered to submit only when the
    // thread sleeps (to wake it); the other calls wait for completions,
    // whose number depends on how much CPU time the two threads get, not
    // on how I/O is submitted.
    assert!(
        sq.submit_enters * 20 < ios,
        "sqthread_poll: {} io_uring_enter calls to submit for {ios} I/Os",
        sq.submit_enters
    );
    // The control: without the thread every I/O is handed over in an
    // io_uring_enter, and every loop turn enters the kernel.
    assert!(
        plain.to_submit >= pios && plain.enters * 8 >= pios,
        "without sqthread_poll: {} io_uring_enter calls handing over {} entries for {pios} I/Os at depth 8",
        plain.enters,
        plain.to_submit
    );
}

#[test]
fn force_async_sends_submissions_to_io_wq_workers() {
    require_tools(&["/usr/bin/fio", "/usr/bin/strace"]);
    let dir = TempDir::new("uring-force-async");
    let lo = LoopDev::new_in(&dir, 64 * MIB);
    // A loop device takes non-blocking submissions: without force_async
    // reads are issued inline, and no io-wq worker is needed.
    let inline = traced_run(&dir, lo.dev(), &[]);
    let forced = traced_run(&dir, lo.dev(), &["--force_async=1"]);
    println!(
        "kernel threads without force_async: {:?}; with force_async=1: {:?} ({} I/Os)",
        inline.kernel_threads, forced.kernel_threads, forced.ios
    );
    assert!(
        !inline.kernel_threads.contains("iou-wrk"),
        "io-wq workers without force_async: {:?}",
        inline.kernel_threads
    );
    assert!(
        forced.kernel_threads.contains("iou-wrk"),
        "no io-wq worker in drivelab's process with force_async=1: {:?}",
        forced.kernel_threads
    );
}

#[test]
fn hipri_on_a_device_without_poll_queues_fails_as_in_fio() {
    require_tools(&["/usr/bin/fio", "/usr/bin/strace"]);
    let dir = TempDir::new("uring-hipri-loop");
    let lo = LoopDev::new_in(&dir, 16 * MIB);
    let io_poll = std::fs::read_to_string(format!("/sys/block/{}/queue/io_poll", lo.name))
        .unwrap_or_default();
    assert_eq!(io_poll.trim(), "0", "a loop device has no poll queues");
    let filename = format!("--filename={}", lo.dev());
    for qd in ["--iodepth=1", "--iodepth=8"] {
        let args = [
            "--name=hp",
            filename.as_str(),
            "--ioengine=io_uring",
            "--hipri",
            "--direct=1",
            qd,
            "--rw=randread",
            "--bs=4k",
            "--size=1m",
        ];
        let (fc, fv, _) = fio(&args);
        let (dc, dv, de) = drivelab(&args);
        let (f, d) = (jobs(&fv), jobs(&dv));
        println!(
            "hipri {qd}: fio {:?} exit {fc}, drivelab {:?} exit {dc}",
            f[0].1, d[0].1
        );
        assert_eq!(f[0].1[0], EOPNOTSUPP, "fio's error");
        assert_eq!((fc, &f[0].1, &f[0].2), (dc, &d[0].1, &d[0].2), "{de}");
        assert!(de.contains("Operation not supported"), "{de}");
    }
}

#[test]
fn bad_engine_options_are_refused_naming_the_key_and_nothing_is_written() {
    require_root();
    let dir = TempDir::new("uring-opts-bad");
    let lo = LoopDev::new_in(&dir, 16 * MIB);
    let before = digest(&lo.backing);
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    // One past the highest online CPU (the option's bound is 4095).
    let last: u32 = online
        .trim()
        .rsplit([',', '-'])
        .next()
        .and_then(|n| n.parse().ok())
        .expect("online CPUs");
    let absent = format!("--sqthread_poll_cpu={}", (last + 1).min(4095));
    let filename = format!("--filename={}", lo.dev());
    let cases: [(&[&str], &str); 4] = [
        (&["--ioengine=io_uring", "--hipri"], "hipri"),
        (
            &["--ioengine=io_uring", "--hipri", "--direct=0"],
            "direct=1",
        ),
        (
            &["--ioengine=io_uring", "--sqthread_poll", &absent],
            "sqthread_poll_cpu",
        ),
        (&["--ioengine=psync", "--hipri=1", "--direct=1"], "hipri"),
    ];
    for (extra, key) in cases {
        let mut args = vec![
            "run",
            "--name=bad",
            filename.as_str(),
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            "--force",
            "--no-store",
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = run(BIN, &args);
        assert_eq!(code, 2, "{extra:?}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains(key), "{extra:?}: {err}");
        assert!(out.is_empty(), "{extra:?}: {out}");
        assert_eq!(digest(&lo.backing), before, "{extra:?} wrote");
    }
}
