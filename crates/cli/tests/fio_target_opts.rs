//! fio's options that act on a job's targets and memory do what they do
//! in fio 3.33: the same job runs under both tools and what the option
//! changes is seen from outside: the write lifetime hint's fcntl on the
//! target (`write_hint`, by strace; with direct I/O both tools fail, the
//! kernel refusing fio's per-file hint) and the memory locked while the
//! job runs (`lockmem`, VmLck in /proc). Needs fio and strace (tests/run
//! installs them).

mod fio_common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_testkit::TempDir;

/// The tool's command on `job`.
fn tool_cmd(tool: &str, job: &std::path::Path) -> Command {
    let mut c = fio_common::tool(tool);
    c.arg(job);
    c
}

fn write_job(dir: &TempDir, name: &str, opts: &str) -> std::path::PathBuf {
    drivelab_testkit::isolate_store();
    let job = dir.join(name);
    std::fs::write(
        &job,
        format!(
            "[job]\nioengine=psync\nfilename={}\nsize=64k\nbs=4k\nrw=write\n{opts}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    job
}

/// The tool run on `job` under `strace -f -e trace=fcntl`.
fn straced(tool: &str, job: &std::path::Path) -> std::process::Output {
    let cmd = tool_cmd(tool, job);
    Command::new("strace")
        .args(["-f", "-e", "trace=fcntl"])
        .args(cmd.get_program().to_str())
        .args(cmd.get_args())
        .output()
        .unwrap()
}

/// F_SET_RW_HINT is fcntl command 0x40c, F_SET_FILE_RW_HINT 0x40e.
#[test]
fn write_hint_sets_the_files_write_life_as_fio_does() {
    let dir = TempDir::new("fio-write-hint");
    for tool in ["fio", "drivelab"] {
        let job = write_job(&dir, "hint.fio", "direct=0\nwrite_hint=short");
        let out = straced(tool, &job);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{tool}: {err}");
        let set = err
            .lines()
            .filter(|l| l.contains("fcntl(") && l.contains("0x40c") && l.ends_with("= 0"))
            .count();
        assert_eq!(set, 1, "{tool}: {err}");
        // Without the option, no hint.
        let job = write_job(&dir, "nohint.fio", "direct=0");
        let out = Command::new("strace")
            .args(["-f", "-e", "trace=fcntl"])
            .args(tool_cmd(tool, &job).get_program().to_str())
            .args(tool_cmd(tool, &job).get_args())
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("0x40c"),
            "{tool}"
        );
        // Direct I/O: the per-file hint, which this kernel refuses; the
        // job fails under both tools.
        let job = write_job(&dir, "direct.fio", "direct=1\nwrite_hint=short");
        let out = tool_cmd(tool, &job).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        let refused = if tool == "fio" {
            text.contains("fcntl write hint")
        } else {
            !out.status.success() && text.contains("fcntl write hint")
        };
        let kernel_takes_it = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .and_then(|r| {
                let mut p = r.trim().split(['.', '-']);
                Some((
                    p.next()?.parse::<u32>().ok()?,
                    p.next()?.parse::<u32>().ok()?,
                ))
            })
            .is_some_and(|v| v < (5, 17));
        assert!(refused || kernel_takes_it, "{tool}: {text}");
    }
}

/// The largest VmLck (kB) of the processes whose command line names
/// `job`, polled until `child` ends.
fn max_locked(child: &mut std::process::Child, job: &std::path::Path) -> u64 {
    let needle = job.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut most = 0;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let p = e.path();
            let cmd = std::fs::read(p.join("cmdline")).unwrap_or_default();
            if !String::from_utf8_lossy(&cmd).contains(&needle) {
                continue;
            }
            let status = std::fs::read_to_string(p.join("status")).unwrap_or_default();
            let kb = status
                .lines()
                .find_map(|l| l.strip_prefix("VmLck:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0);
            most = most.max(kb);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(child.wait().unwrap().success());
    most
}

/// 2 s of rated reads: 24 MiB locked while the job runs under both tools,
/// none without the option.
#[test]
fn lockmem_locks_the_memory_while_the_job_runs_as_in_fio() {
    let dir = TempDir::new("fio-lockmem");
    std::fs::write(dir.join("data"), vec![7u8; 1 << 20]).unwrap();
    for tool in ["fio", "drivelab"] {
        for (name, lock, want) in [
            ("lock.fio", "lockmem=24m", 24 * 1024),
            ("nolock.fio", "", 0),
        ] {
            let job = dir.join(name);
            std::fs::write(
                &job,
                format!(
                    "[job]\nioengine=psync\nfilename={}\nsize=1m\nbs=4k\nrw=read\ndirect=0\ntime_based\nruntime=2\nrate=1m\n{lock}\n",
                    dir.join("data").display()
                ),
            )
            .unwrap();
            let mut child = tool_cmd(tool, &job)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            assert_eq!(max_locked(&mut child, &job), want, "{tool} {lock:?}");
        }
    }
}

/// The scheduler in use on `dev` (the bracketed one).
fn scheduler(dev: &str) -> String {
    let line = std::fs::read_to_string(format!("/sys/block/{dev}/queue/scheduler")).unwrap();
    line.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or("")
        .to_string()
}

/// Writes to the test's own loop device with ioscheduler=mq-deadline: the
/// device runs under mq-deadline while the job runs, under both tools;
/// drivelab switches it back after the run (fio leaves it switched, so
/// the test switches it back itself).
#[test]
fn ioscheduler_switches_the_claimed_devices_scheduler_for_the_run() {
    drivelab_testkit::require_root();
    let dir = TempDir::new("fio-ioscheduler");
    let lo = drivelab_testkit::LoopDev::new_in(&dir, 16 << 20);
    let sched = format!("/sys/block/{}/queue/scheduler", lo.name);
    let offered = std::fs::read_to_string(&sched).unwrap();
    if !offered.contains("mq-deadline") {
        eprintln!("skipped: {} offers no mq-deadline ({offered})", lo.name);
        return;
    }
    std::fs::write(&sched, "none").unwrap();
    for tool in ["fio", "drivelab"] {
        let job = dir.join("sched.fio");
        std::fs::write(
            &job,
            format!(
                "[job]\nioengine=psync\nfilename={}\nsize=4m\nbs=4k\nrw=write\ndirect=1\ntime_based\nruntime=2\nrate=2m\nioscheduler=mq-deadline\n",
                lo.dev()
            ),
        )
        .unwrap();
        let mut child = tool_cmd(tool, &job)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut seen = Vec::new();
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            let s = scheduler(&lo.name);
            if seen.last() != Some(&s) {
                seen.push(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(seen.iter().any(|s| s == "mq-deadline"), "{tool}: {seen:?}");
        if tool == "drivelab" {
            assert_eq!(scheduler(&lo.name), "none", "drivelab switches it back");
        }
        std::fs::write(&sched, "none").unwrap();
    }
    // A job that only reads claims nothing: refused before any I/O.
    let job = dir.join("read.fio");
    std::fs::write(
        &job,
        format!(
            "[job]\nfilename={}\nsize=1m\nrw=read\nioscheduler=mq-deadline\n",
            lo.dev()
        ),
    )
    .unwrap();
    let out = tool_cmd("drivelab", &job).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ioscheduler") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert_eq!(scheduler(&lo.name), "none");
}

/// opendir=DIR: the regular files under DIR at any depth (a symlink left
/// out) are the job's files, each read whole: the files and reads of the
/// iolog under both tools.
#[test]
fn opendir_takes_the_files_under_the_directory_as_fio_does() {
    let dir = TempDir::new("fio-opendir");
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    for (k, f) in ["a", "b", "sub/c"].iter().enumerate() {
        std::fs::write(tree.join(f), vec![k as u8; 64 << 10]).unwrap();
    }
    std::os::unix::fs::symlink(tree.join("a"), tree.join("link")).unwrap();
    for tool in ["fio", "drivelab"] {
        let log = dir.join(&format!("{tool}.iolog"));
        let job = dir.join("opendir.fio");
        std::fs::write(
            &job,
            format!(
                "[job]\nioengine=psync\nopendir={}\nrw=read\nbs=4k\ndirect=0\nwrite_iolog={}\n",
                tree.display(),
                log.display()
            ),
        )
        .unwrap();
        let out = tool_cmd(tool, &job).output().unwrap();
        assert!(
            out.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut reads: std::collections::BTreeMap<String, usize> = Default::default();
        for l in std::fs::read_to_string(&log).unwrap().lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if let Some(at) = f.iter().position(|w| *w == "read") {
                *reads.entry(f[at - 1].to_string()).or_default() += 1;
            }
        }
        let want: std::collections::BTreeMap<String, usize> = ["a", "b", "sub/c"]
            .iter()
            .map(|f| (tree.join(f).display().to_string(), 16))
            .collect();
        assert_eq!(reads, want, "{tool}");
    }
}
