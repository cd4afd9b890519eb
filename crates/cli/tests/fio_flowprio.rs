//! fio's flow control, I/O priorities, exit_what, NUMA and batching
//! options: each job is run by fio 3.33 and by drivelab in the same test
//! (fresh scratch directories named by `${DL_SCRATCH}`), and what each did
//! is compared: the I/O ratio `flow` sets between two jobs, which jobs
//! `exit_what` ended early, the per-priority latency objects (`prios`) in
//! the JSON, the requests a loop device gets with and without a submit
//! batch. The job files are the shrunk fio examples in tests/data/fio-jobs.

mod fio_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_device::diskstats::DiskStats;
use drivelab_testkit::{json_after_notes, require_root, LoopDev, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn job(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fio-jobs")
        .join(name)
}

fn fio_available() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Run `tool` ("fio" or "drivelab") on `job` in a fresh scratch directory;
/// its JSON.
fn run(tool: &str, job: &Path) -> Value {
    run_kept(tool, job).0
}

/// As [`run`], keeping the scratch directory (the files the run left).
fn run_kept(tool: &str, job: &Path) -> (Value, TempDir) {
    assert!(
        fio_available(),
        "fio is not installed; this test compares drivelab with it (apt-get install fio)"
    );
    let dir = TempDir::new(&format!("flowprio-{tool}"));
    let mut cmd = if tool == "fio" {
        let mut c = Command::new("fio");
        c.arg("--output-format=json").arg(job);
        c
    } else {
        let mut c = Command::new(BIN);
        c.arg("run")
            .arg(job)
            .arg("--output-format=json")
            .arg("--no-store");
        c
    };
    let out = cmd
        .current_dir(dir.path())
        .env("DL_SCRATCH", dir.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{tool} {} failed ({}): {}\n{stdout}",
        job.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_after_notes(tool, &stdout);
    (v, dir)
}

/// The distinct last fields (priorities) of a log file's lines.
fn log_prios(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut v: Vec<String> = text
        .lines()
        .filter_map(|l| l.rsplit(", ").next())
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

fn jobs(v: &Value) -> &Vec<Value> {
    v["jobs"].as_array().expect("jobs")
}

fn by_name<'a>(v: &'a Value, name: &str) -> &'a Value {
    jobs(v)
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name}: {v}"))
}

fn ios(j: &Value) -> u64 {
    ["read", "write", "trim"]
        .iter()
        .map(|d| j[d]["total_ios"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn flow_holds_two_jobs_to_their_weights_as_fio_does() {
    require_root();
    // flow.fio: job1 (flow=8) and job2 (flow=1) in one flow, 2 s.
    let f = job("flow.fio");
    for tool in ["fio", "drivelab"] {
        let v = run(tool, &f);
        let (w, r) = (ios(by_name(&v, "job2")), ios(by_name(&v, "job1")));
        assert!(w > 100, "{tool}: job2 did {w} I/Os");
        let ratio = r as f64 / w as f64;
        eprintln!("{tool}: job1 {r} I/Os, job2 {w}: {ratio:.3}");
        assert!(
            (6.4..=9.6).contains(&ratio),
            "{tool}: ratio {ratio} ({r}/{w})"
        );
    }
}

#[test]
fn butterfly_readers_keep_pace_and_read_the_same_bytes() {
    require_root();
    let f = job("butterfly.fio");
    let fio = run("fio", &f);
    let dl = run("drivelab", &f);
    for name in ["forward", "backward"] {
        assert_eq!(
            by_name(&fio, name)["read"]["io_bytes"],
            by_name(&dl, name)["read"]["io_bytes"],
            "{name}"
        );
    }
}

/// (job name, I/Os, longest direction runtime ms) per reported job.
fn summary(v: &Value) -> Vec<(String, u64, u64)> {
    jobs(v)
        .iter()
        .map(|j| {
            let rt = ["read", "write"]
                .iter()
                .map(|d| j[d]["runtime"].as_u64().unwrap_or(0))
                .max()
                .unwrap_or(0);
            (j["jobname"].as_str().unwrap().to_string(), ios(j), rt)
        })
        .collect()
}

#[test]
fn exit_what_ends_the_jobs_fio_ends() {
    require_root();
    // exitwhat.fio: slow1 (100 I/Os, 2 ms apart, exit_what=stonewall) ends
    // fast1, whose rate of 300 B/s would take days over its 16 MiB;
    // slow2 (exit_what=all) ends fast2 and runsnever. Reported by group.
    let f = job("exitwhat.fio");
    let fio = run("fio", &f);
    let dl = run("drivelab", &f);
    let (fs, ds) = (summary(&fio), summary(&dl));
    eprintln!("fio {fs:?}\ndrivelab {ds:?}");
    assert_eq!(fs.len(), 3, "{fs:?}");
    assert_eq!(
        fs.iter().map(|s| &s.0).collect::<Vec<_>>(),
        ds.iter().map(|s| &s.0).collect::<Vec<_>>()
    );
    for s in [&fs, &ds] {
        // slow1 did its 100 I/Os; the others ended with the slow jobs,
        // within seconds.
        assert_eq!(s[0].1, 100, "{s:?}");
        assert!(s[2].1 >= 100, "{s:?}");
        for (name, _, ms) in s.iter() {
            assert!(*ms < 10_000, "{name} ran {ms} ms: {s:?}");
        }
    }

    // exit_what=all also keeps a later stonewall group from starting; fio
    // lists its job with no I/O. (b thinks 2 ms between its writes, so a
    // runs for a while before b ends it.)
    let dir = TempDir::new("flowprio-all");
    let all = dir.path().join("all.fio");
    std::fs::write(
        &all,
        "[global]\nfilename=${DL_SCRATCH}/t\nfilesize=1m\nbs=4k\nioengine=psync\n\
         [a]\nrw=read\ntime_based\nruntime=60\n\
         [b]\nrw=write\nnumber_ios=20\nthinktime=2000\nexitall\nexit_what=all\n\
         [c]\nstonewall\nrw=read\n",
    )
    .unwrap();
    for tool in ["fio", "drivelab"] {
        let s = summary(&run(tool, &all));
        assert_eq!(s.len(), 3, "{tool}: {s:?}");
        assert!(s[0].1 > 0 && s[0].2 < 30_000, "{tool}: {s:?}");
        assert_eq!(s[1].1, 20, "{tool}: {s:?}");
        assert_eq!((s[2].1, s[2].2), (0, 0), "{tool}: {s:?}");
    }
    // exit_what=group (the default) leaves the other reporting group.
    std::fs::write(
        &all,
        "[global]\nfilename=${DL_SCRATCH}/t\nfilesize=1m\nbs=4k\nioengine=psync\n\
         [a]\nrw=read\ntime_based\nruntime=2\n\
         [b]\nnew_group\nrw=write\nnumber_ios=20\nexitall\n",
    )
    .unwrap();
    for tool in ["fio", "drivelab"] {
        let s = summary(&run(tool, &all));
        assert!(s[0].2 >= 1_500, "{tool}: a ended early: {s:?}");
    }
}

/// (class, level, I/Os) of one `prios` entry.
type Prio = (u64, u64, u64);

/// The `prios` entries of a direction: (class, level, N), and each
/// entry's keys and its clat_ns keys.
fn prios(d: &Value) -> (Vec<Prio>, Vec<Vec<String>>) {
    let Some(a) = d["prios"].as_array() else {
        return (Vec::new(), Vec::new());
    };
    let mut keys = Vec::new();
    let mut v = Vec::new();
    for p in a {
        v.push((
            p["prioclass"].as_u64().unwrap(),
            p["prio"].as_u64().unwrap(),
            p["clat_ns"]["N"].as_u64().unwrap(),
        ));
        let mut k: Vec<String> = p.as_object().unwrap().keys().cloned().collect();
        k.extend(
            p["clat_ns"]
                .as_object()
                .unwrap()
                .keys()
                .map(|c| format!("clat_ns.{c}")),
        );
        k.sort();
        keys.push(k);
    }
    v.sort();
    (v, keys)
}

#[test]
fn cmdprio_percentage_reports_latency_per_priority_as_fio_does() {
    require_root();
    // 128 reads of 128k: 20% with class 1 (realtime) in their submission,
    // the rest with the thread's class 3 (idle).
    let f = job("cmdprio-percentage.fio");
    let (fio, fdir) = run_kept("fio", &f);
    let (dl, ddir) = run_kept("drivelab", &f);
    // log_prio: each latency log line ends with the I/O's priority value,
    // in hexadecimal: realtime 0x2000 or idle 0x6000.
    let log = "prio-run.log_clat.1.log";
    assert_eq!(log_prios(&fdir.path().join(log)), ["0x2000", "0x6000"]);
    assert_eq!(log_prios(&ddir.path().join(log)), ["0x2000", "0x6000"]);
    // The thread's own priority (idle) first, as fio lists it.
    for v in [&fio, &dl] {
        assert_eq!(v["jobs"][0]["read"]["prios"][0]["prioclass"], 3, "{v}");
    }
    let (fp, fk) = prios(&fio["jobs"][0]["read"]);
    let (dp, dk) = prios(&dl["jobs"][0]["read"]);
    eprintln!("fio {fp:?}\ndrivelab {dp:?}");
    assert_eq!(fk, dk, "the keys of each prios entry");
    for p in [&fp, &dp] {
        assert_eq!(
            p.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
            [(1, 0), (3, 0)],
            "{p:?}"
        );
        let total: u64 = p.iter().map(|x| x.2).sum();
        assert_eq!(total, 128);
        // About a fifth at realtime (binomial: 25.6 ± 4.5).
        assert!((10..=45).contains(&p[0].2), "{p:?}");
    }
    // The text shows the same lines in both: each priority's clat line
    // and its percentiles with its share of the I/Os.
    for tool in ["fio", "drivelab"] {
        let dir = TempDir::new("flowprio-text");
        let mut cmd = if tool == "fio" {
            Command::new("fio")
        } else {
            let mut c = Command::new(BIN);
            c.args(["run", "--no-store"]);
            c
        };
        let out = cmd
            .arg(&f)
            .current_dir(dir.path())
            .env("DL_SCRATCH", dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{tool}: {text}");
        for line in [
            "    clat prio 3/0 (usec): min=",
            "    clat prio 1/0 (usec): min=",
            "% of IOs) percentiles (usec):",
        ] {
            assert!(text.contains(line), "{tool}: no '{line}' in\n{text}");
        }
    }
    // No prios array for writes, which this job does not do, in either.
    assert!(fio["jobs"][0]["write"].get("prios").is_none());
    assert!(dl["jobs"][0]["write"].get("prios").is_none());
}

#[test]
fn cmdprio_bssplit_gives_priorities_by_block_size_as_fio_does() {
    require_root();
    let dir = TempDir::new("flowprio-bssplit");
    let f = dir.path().join("b.fio");
    // Reads of 64k and 1m; 25% of the 64k reads at 1/1, 75% at 3/2; 1m
    // reads and writes at the thread's 2/7. About 30 reads of 64k: all
    // three priorities show (none at 1/1 has odds of 0.75^30 = 0.02%).
    std::fs::write(
        &f,
        "[global]\nfilename=${DL_SCRATCH}/t\nsize=64m\ndirect=1\nnorandommap\n\
         ioengine=libaio\niodepth=8\nrw=randrw\nrwmixread=80\n\
         [j]\nprioclass=2\nprio=7\nbssplit=64k/40:1024k/60,1024k/100\n\
         cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\n",
    )
    .unwrap();
    for tool in ["fio", "drivelab"] {
        let v = run(tool, &f);
        let (p, _) = prios(&v["jobs"][0]["read"]);
        assert_eq!(
            p.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
            [(1, 1), (2, 7), (3, 2)],
            "{tool}: {p:?}"
        );
        assert!(v["jobs"][0]["write"].get("prios").is_none(), "{tool}");
    }
}

#[test]
fn bad_values_exit_2_with_one_line_naming_the_key() {
    let dir = TempDir::new("flowprio-bad");
    for (k, v) in [
        ("flow", "1001"),
        ("flow_sleep", "-1"),
        ("exit_what", "some"),
        ("prio", "8"),
        ("prioclass", "4"),
        ("cmdprio_percentage", "101"),
        ("cmdprio_class", "0"),
        ("cmdprio", "9"),
        ("cmdprio_bssplit", "64k/60:64k/50"),
        ("numa_cpu_nodes", "99"),
        ("numa_mem_policy", "prefer:0-1"),
        ("numa_mem_policy", "sometimes"),
        ("iodepth_batch", "x"),
        ("iodepth_batch_complete_min", "-1"),
        ("iodepth_batch_complete_max", "y"),
        ("iodepth_low", "z"),
    ] {
        let out = Command::new(BIN)
            .current_dir(dir.path())
            .args([
                "run",
                "--no-store",
                "--filename=x",
                "--ioengine=null",
                "--size=1m",
            ])
            .arg(format!("--{k}={v}"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{k}={v}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{k}={v}: {err}");
        assert!(err.contains(k), "{k}={v}: {err}");
    }
    // cmdprio needs an engine that carries a priority per I/O.
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args([
            "run",
            "--no-store",
            "--filename=x",
            "--ioengine=psync",
            "--size=1m",
            "--cmdprio_percentage=10",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cmdprio"), "{err}");
}

#[test]
fn numa_and_batching_jobs_run_as_in_fio() {
    require_root();
    // numa.fio on a file instead of a device, with fio's batching options:
    // both move the same bytes.
    let dir = TempDir::new("flowprio-numa");
    let text = std::fs::read_to_string(job("numa.fio"))
        .unwrap()
        .replace("${DL_DEV}", "${DL_SCRATCH}/t")
        .replace(
            "iodepth=16\n",
            "iodepth=16\niodepth_batch_submit=4\niodepth_batch_complete_min=2\n\
             iodepth_batch_complete_max=8\niodepth_low=4\n",
        );
    let f = dir.path().join("n.fio");
    std::fs::write(&f, text).unwrap();
    let fio = run("fio", &f);
    let dl = run("drivelab", &f);
    for name in ["job1", "job2"] {
        assert_eq!(
            by_name(&fio, name)["read"]["io_bytes"],
            by_name(&dl, name)["read"]["io_bytes"],
            "{name}"
        );
        assert_eq!(by_name(&dl, name)["read"]["io_bytes"], 8 << 20);
    }
}

#[test]
fn batching_reaches_the_device_as_fio_does() {
    require_root();
    assert!(fio_available(), "apt-get install fio");
    // 2048 contiguous 4 KiB reads at depth 32 on a loop device. Without
    // iodepth_batch_submit fio enters the kernel for each I/O, so the block
    // layer merges none of them and the device gets 2048 requests; drivelab
    // must hand the device the same. Given a batch, the I/Os go in together
    // and the block layer merges contiguous ones, in both.
    drivelab_testkit::isolate_store();
    let dir = TempDir::new("flowprio-merge");
    let lo = LoopDev::new_in(&dir, 16 << 20);
    let seen = |tool: &str, batch: &[&str]| {
        let stats = || DiskStats::read(&lo.name).unwrap();
        let before = stats();
        let target = format!("--filename={}", lo.dev());
        let mut args = vec![
            target.as_str(),
            "--name=seq",
            "--ioengine=io_uring",
            "--direct=1",
            "--rw=read",
            "--bs=4k",
            "--iodepth=32",
            "--size=8m",
            "--output-format=json",
        ];
        args.extend(batch);
        let out = fio_common::tool(tool).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json_after_notes(tool, &String::from_utf8_lossy(&out.stdout));
        assert_eq!(v["jobs"][0]["read"]["total_ios"], 2048, "{tool}");
        let after = stats();
        (
            after.reads - before.reads,
            after.reads_merged - before.reads_merged,
        )
    };
    for tool in ["fio", "drivelab"] {
        assert_eq!(seen(tool, &[]), (2048, 0), "{tool}, one I/O per entry");
        let (requests, merged) = seen(tool, &["--iodepth_batch_submit=16"]);
        assert!(
            merged > 0 && requests + merged == 2048,
            "{tool} batched: {requests} requests, {merged} merged"
        );
    }
}

/// The I/O priorities (as `ionice -p` prints them) of the tasks of `pid`.
fn task_prios(pid: u32) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter_map(|e| {
            let out = Command::new("ionice")
                .arg("-p")
                .arg(e.file_name())
                .output()
                .ok()?;
            Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
        })
        .collect()
}

#[test]
fn prio_and_prioclass_set_the_job_threads_priority_as_fio_does() {
    require_root();
    let dir = TempDir::new("flowprio-thread");
    let f = dir.path().join("p.fio");
    std::fs::write(
        &f,
        "[global]\nfilename=${DL_SCRATCH}/t\nsize=1m\nthread\nioengine=psync\n\
         time_based\nruntime=3\n[j]\nrw=read\nprioclass=2\nprio=6\n",
    )
    .unwrap();
    for tool in ["fio", "drivelab"] {
        let mut cmd = if tool == "fio" {
            Command::new("fio")
        } else {
            let mut c = Command::new(BIN);
            c.args(["run", "--no-store"]);
            c
        };
        let mut child = cmd
            .arg(&f)
            .current_dir(dir.path())
            .env("DL_SCRATCH", dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Look while the job runs (it runs 3 s; the file is laid out first).
        let mut seen = Vec::new();
        for _ in 0..40 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            seen = task_prios(child.id());
            if seen.iter().any(|s| s == "best-effort: prio 6") {
                break;
            }
        }
        let status = child.wait().unwrap();
        assert!(status.success(), "{tool}: {status}");
        assert!(
            seen.iter().any(|s| s == "best-effort: prio 6"),
            "{tool}: no task at best-effort 6: {seen:?}"
        );
    }
}
