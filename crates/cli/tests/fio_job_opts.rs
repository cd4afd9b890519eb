//! fio's job options of the run around the I/O and the engines fio users
//! name do in drivelab what they do in fio 3.33: the same job file runs
//! under both tools in a temp dir, and what the option changes is
//! compared: the files `exec_prerun`/`exec_postrun` leave, the I/O per
//! direction of `ioengine=mmap`/`splice`, the direct open `atomic` makes.
//! Needs fio and strace (tests/run installs them).

use std::path::Path;
use std::process::Command;

use drivelab_testkit::TempDir;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// Run `job` (a job file's text) under `tool` in `dir`, under strace when
/// `trace` names the calls; (JSON, trace).
fn run(tool: &str, dir: &Path, job: &str, trace: Option<&str>) -> (Value, String) {
    drivelab_testkit::isolate_store();
    let file = dir.join("job.fio");
    std::fs::write(&file, job).unwrap();
    let log = dir.join(format!("{tool}.trace"));
    let mut cmd = match trace {
        Some(calls) => {
            let mut c = Command::new("strace");
            c.args(["-f", "-qq", "-y", "-o"])
                .arg(&log)
                .args(["-e", &format!("trace={calls}")]);
            c
        }
        None => Command::new("env"),
    };
    if tool == "fio" {
        cmd.args(["fio", "--output-format=json"]);
    } else {
        cmd.args([BIN, "run", "--output-format=json"]);
    }
    let out = cmd.arg(&file).current_dir(dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{tool}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = stdout
        .find('{')
        .and_then(|at| serde_json::from_str(&stdout[at..]).ok())
        .unwrap_or_else(|| panic!("{tool}: no JSON in {stdout}"));
    (json, std::fs::read_to_string(&log).unwrap_or_default())
}

/// Run job file `job` under `tool`, which may fail: (its JSON, whether
/// it exited 0).
fn run_failing(tool: &str, job: &Path) -> (Value, bool) {
    let mut cmd = Command::new(if tool == "fio" { "fio" } else { BIN });
    if tool == "drivelab" {
        cmd.arg("run");
    }
    let out = cmd.arg("--output-format=json").arg(job).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = stdout
        .find('{')
        .and_then(|at| serde_json::from_str(&stdout[at..]).ok())
        .unwrap_or_else(|| panic!("{tool}: {stdout}"));
    (json, out.status.success())
}

fn data_file(dir: &Path) -> std::path::PathBuf {
    let f = dir.join("data");
    std::fs::write(&f, vec![0x5au8; 1 << 20]).unwrap();
    f
}

#[test]
fn exec_prerun_and_postrun_leave_their_output_files_as_in_fio() {
    for tool in ["fio", "drivelab"] {
        let dir = TempDir::new("fio-exec-hooks");
        let data = data_file(dir.path());
        let job = format!(
            "[hooked]\nfilename={}\nsize=64k\nrw=read\nioengine=psync\nexec_prerun=echo before $((6*7))\nexec_postrun=echo after && echo oops >&2\n",
            data.display()
        );
        run(tool, dir.path(), &job, None);
        let pre = std::fs::read_to_string(dir.join("hooked.prerun.txt"))
            .unwrap_or_else(|e| panic!("{tool}: hooked.prerun.txt: {e}"));
        let post = std::fs::read_to_string(dir.join("hooked.postrun.txt"))
            .unwrap_or_else(|e| panic!("{tool}: hooked.postrun.txt: {e}"));
        assert_eq!(pre, "before 42\n", "{tool}");
        // fio's `CMD > FILE 2>&1`: the last command's output only.
        assert_eq!(post, "oops\n", "{tool}");
    }
}

#[test]
fn mmap_and_splice_jobs_move_the_same_bytes_as_fio() {
    for engine in ["mmap", "splice"] {
        for rw in ["read", "write", "randrw"] {
            let mut got = Vec::new();
            for tool in ["fio", "drivelab"] {
                let dir = TempDir::new("fio-mmap-splice");
                let data = data_file(dir.path());
                let job = format!(
                    "[j]\nfilename={}\nsize=1m\nbs=4k\nrw={rw}\nioengine={engine}\ndirect=0\nrandrepeat=1\n",
                    data.display()
                );
                let (json, _) = run(tool, dir.path(), &job, None);
                let j = &json["jobs"][0];
                let bytes = |d: &str| j[d]["io_bytes"].as_u64().unwrap_or(0);
                got.push((bytes("read") + bytes("write"), j["error"].as_u64()));
            }
            assert_eq!(got[0], got[1], "{engine} {rw}: fio, drivelab");
            assert_eq!(got[0].0, 1 << 20, "{engine} {rw}");
        }
    }
}

#[test]
fn atomic_opens_the_file_for_direct_io_as_in_fio() {
    for tool in ["fio", "drivelab"] {
        let dir = TempDir::new("fio-atomic");
        let data = data_file(dir.path());
        let job = format!(
            "[j]\nfilename={}\nsize=64k\nbs=4k\nrw=write\nioengine=psync\natomic=1\n",
            data.display()
        );
        let (_, trace) = run(tool, dir.path(), &job, Some("openat"));
        // The file, or its descriptor reopened (drivelab's claim reopens
        // /proc/self/fd/N with the I/O flags).
        let path = format!("\"{}\"", data.display());
        let mut names = vec![path.clone()];
        for l in trace.lines().filter(|l| l.contains(&path)) {
            // "= 4</path>" under strace -y.
            let ret = l.rsplit("= ").next().unwrap_or("");
            if let Ok(fd) = ret.split('<').next().unwrap_or("").trim().parse::<u32>() {
                names.push(format!("\"/proc/self/fd/{fd}\""));
            }
        }
        let direct_rw = trace
            .lines()
            .filter(|l| names.iter().any(|n| l.contains(n.as_str())) && l.contains("O_RDWR"))
            .any(|l| l.contains("O_DIRECT"));
        assert!(direct_rw, "{tool}: no O_DIRECT open of the file:\n{trace}");
    }
}

#[test]
fn allow_file_create_0_refuses_a_missing_file_as_in_fio() {
    for tool in ["fio", "drivelab"] {
        let dir = TempDir::new("fio-no-create");
        let missing = dir.join("missing");
        std::fs::write(
            dir.join("job.fio"),
            format!(
                "[j]\nfilename={}\nsize=64k\nrw=write\nallow_file_create=0\n",
                missing.display()
            ),
        )
        .unwrap();
        let mut cmd = Command::new(if tool == "fio" { "fio" } else { BIN });
        if tool == "drivelab" {
            cmd.arg("run");
        }
        let out = cmd.arg(dir.join("job.fio")).output().unwrap();
        assert!(!out.status.success(), "{tool} ran");
        assert!(!missing.exists(), "{tool} created the file");
        if tool == "drivelab" {
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("allow_file_create=0"), "{err}");
        }
    }
}

#[test]
fn per_job_logs_0_names_the_logs_without_the_job_number_as_in_fio() {
    for tool in ["fio", "drivelab"] {
        for (per_job, want, not) in [
            ("0", "lg_bw.log", "lg_bw.1.log"),
            ("1", "lg_bw.1.log", "lg_bw.log"),
        ] {
            let dir = TempDir::new("fio-per-job-logs");
            let data = data_file(dir.path());
            let job = format!(
                "[j]\nfilename={}\nsize=64k\nrw=read\nioengine=psync\nwrite_bw_log=lg\nper_job_logs={per_job}\n",
                data.display()
            );
            run(tool, dir.path(), &job, None);
            assert!(
                dir.join(want).exists(),
                "{tool} per_job_logs={per_job}: no {want}"
            );
            assert!(
                !dir.join(not).exists(),
                "{tool} per_job_logs={per_job}: {not}"
            );
        }
    }
}

#[test]
fn rate_iops_min_fails_a_job_below_it() {
    // As fio's check_min_rate: from 2 s into the run, per rate_cycle. (fio
    // 3.33 itself, on this job, stops after one I/O without an error, so
    // it is not run here; its ratemin is compared in fio_think_opts.)
    let dir = TempDir::new("rate-iops-min");
    let data = data_file(dir.path());
    for (min, ok) in [("500", false), ("5", true)] {
        let out = Command::new(BIN)
            .args([
                "run",
                "--name=j",
                &format!("--filename={}", data.display()),
                "--size=1m",
                "--rw=read",
                "--ioengine=psync",
                "--thinktime=20ms",
                "--runtime=3",
                "--time_based",
                "--rate_cycle=500",
                &format!("--rate_iops_min={min}"),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.success(), ok, "rate_iops_min={min}: {err}");
        if !ok {
            assert!(err.contains("rate_iops_min=500 not met, got"), "{err}");
        }
    }
}

#[test]
fn log_unix_epoch_stamps_the_logs_in_unix_time_as_in_fio() {
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    for tool in ["fio", "drivelab"] {
        for epoch in ["0", "1"] {
            let dir = TempDir::new("fio-log-epoch");
            let data = data_file(dir.path());
            let job = format!(
                "[j]\nfilename={}\nsize=64k\nrw=read\nioengine=psync\nwrite_bw_log=lg\nlog_unix_epoch={epoch}\n",
                data.display()
            );
            let before = now_ms();
            run(tool, dir.path(), &job, None);
            let after = now_ms();
            let log = std::fs::read_to_string(dir.join("lg_bw.1.log")).unwrap();
            let t: u64 = log
                .lines()
                .next()
                .and_then(|l| l.split(',').next())
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or_else(|| panic!("{tool}: {log}"));
            if epoch == "1" {
                assert!(
                    (before..=after).contains(&t),
                    "{tool}: {t} not in {before}..={after}"
                );
            } else {
                assert!(
                    t < after - before + 1000,
                    "{tool}: {t} is not from the job's start"
                );
            }
        }
    }
}

#[test]
fn max_latency_ends_the_job_with_etimedout_as_in_fio() {
    for tool in ["fio", "drivelab"] {
        for (max, error, ios) in [("1us", 110, 1), ("10s", 0, 16)] {
            let dir = TempDir::new("fio-max-latency");
            let data = data_file(dir.path());
            std::fs::write(
                dir.join("job.fio"),
                format!(
                    "[j]\nfilename={}\nsize=64k\nrw=read\nioengine=psync\ndirect=0\nmax_latency={max}\n",
                    data.display()
                ),
            )
            .unwrap();
            let (json, ok) = run_failing(tool, &dir.join("job.fio"));
            let j = &json["jobs"][0];
            assert_eq!(j["error"].as_u64(), Some(error), "{tool} max_latency={max}");
            assert_eq!(j["read"]["total_ios"].as_u64(), Some(ios), "{tool} {max}");
            assert_eq!(ok, error == 0, "{tool} {max}");
        }
    }
}

#[test]
fn exitall_on_error_ends_the_other_jobs_when_one_fails_as_in_fio() {
    // Job a fails on its first I/O (max_latency=1us: ETIMEDOUT); job b
    // reads for 3 s unless a's error ends it.
    for tool in ["fio", "drivelab"] {
        for on_error in ["1", "0"] {
            let dir = TempDir::new("fio-exitall-on-error");
            let data = data_file(dir.path());
            std::fs::write(
                dir.join("job.fio"),
                format!(
                    "[global]\nfilename={}\nsize=64k\nrw=read\nioengine=psync\ndirect=0\n[a]\nmax_latency=1us\nexitall_on_error={on_error}\n[b]\ntime_based\nruntime=3s\n",
                    data.display()
                ),
            )
            .unwrap();
            let (json, ok) = run_failing(tool, &dir.join("job.fio"));
            assert!(!ok, "{tool}: job a failed, so does the run");
            let jobs = json["jobs"].as_array().unwrap();
            let b = jobs.iter().find(|j| j["jobname"] == "b").unwrap();
            let ms = b["read"]["runtime"].as_u64().unwrap();
            assert_eq!(jobs[0]["error"].as_u64(), Some(110), "{tool}");
            if on_error == "1" {
                assert!(ms < 2000, "{tool}: b ran {ms} ms after a failed");
            } else {
                assert!(ms >= 2900, "{tool}: b ran only {ms} ms");
            }
        }
    }
}
