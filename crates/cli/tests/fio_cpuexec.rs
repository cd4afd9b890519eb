//! fio's `ioengine=cpuio` and `ioengine=exec`: the job files in
//! tests/data/fio-jobs/cpuexec (fio's examples/cpuio.fio and exec.fio,
//! shrunk, with turbostat replaced by monitor.sh beside them, and two of
//! our own; each file's first line says what changed) run under fio 3.33
//! and drivelab, each tool in a fresh directory of its own (the programs'
//! output files land in the current directory), and what each did is
//! compared:
//!
//! - both succeed with the same jobs in the same stonewall groups, no
//!   bytes moved, and every JSON key fio writes for these jobs is in
//!   drivelab's;
//! - cpuio: each job's `usr_cpu` lies in a broad band around its
//!   `cpuload` (50 → 25 to 75 %), fio's too (a behavioural check; on a
//!   host loaded by other work the lower bound is scaled by the share of a
//!   CPU a spinning thread of the test gets around each tool's run);
//! - exec: the same output files (`<jobname>.stdout`/`.stderr`, none
//!   with `std_redirect=0`) with the same contents: the arguments with
//!   `%r`/`%n` replaced alike, the SIGTERM the script's trap saw at the
//!   job's end (drivelab's always; fio 3.33 sends it only about half the
//!   time, see [`same_output`]), a program ignoring SIGTERM gone after
//!   `grace_time`; no program left running after either tool;
//! - a program failing on its own: fio 3.33 ignores its status (error 0,
//!   exit 0); drivelab makes it the job's error (exit status 1);
//! - bad input (cpuload 0 or over 100, an unknown cpumode, exec without
//!   program, cpuio without cpuload): exit 2, one line naming the key,
//!   nothing run.
//!
//! The tests take a lock: they measure CPU use, so they do not run
//! beside each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use drivelab_testkit::TempDir;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fio-jobs/cpuexec")
        .join(name)
}

/// What one tool did: exit status, JSON, stderr, the files it left in its
/// directory (name → contents; its JSON aside), and how many of the
/// monitor scripts it started are still running.
struct Ran {
    code: i32,
    json: Value,
    stderr: String,
    files: BTreeMap<String, String>,
    survivors: usize,
}

/// Run `tool` (fio or drivelab) on `job` in a fresh directory.
fn run(tool: &str, job: &Path) -> Ran {
    let dir = TempDir::new(&format!("cpuexec-{tool}"));
    let pids = dir.join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    // Bounded: a job that never ends (a broken exit_on_io_done) fails the
    // test instead of hanging it.
    let mut cmd = Command::new("timeout");
    cmd.arg("120");
    if tool == "fio" {
        cmd.arg("fio");
    } else {
        cmd.args([BIN, "run", "--no-store"]);
    }
    let out = cmd
        .arg("--output-format=json")
        .arg(job)
        .current_dir(dir.path())
        .env("DL_MONITOR", data("monitor.sh"))
        .env("MONITOR_PID_DIR", &pids)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool} (is it installed?): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let start = stdout.find('{').unwrap_or(0);
    let json = serde_json::from_str(&stdout[start..]).unwrap_or(Value::Null);
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if e.path().is_file() {
            let name = e.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(e.path()).unwrap();
            files.insert(name, String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    // A pid whose /proc entry is still this script's: still running.
    let survivors = std::fs::read_dir(&pids)
        .unwrap()
        .flatten()
        .filter(|e| {
            let cmdline = Path::new("/proc").join(e.file_name()).join("cmdline");
            std::fs::read(cmdline).is_ok_and(|c| String::from_utf8_lossy(&c).contains("monitor.sh"))
        })
        .count();
    Ran {
        code: out.status.code().unwrap_or(-1),
        json,
        stderr,
        files,
        survivors,
    }
}

fn jobs(v: &Value) -> &Vec<Value> {
    v["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("no jobs in {v}"))
}

/// (name, group) of each job entry.
fn names(v: &Value) -> Vec<(String, u64)> {
    jobs(v)
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap_or_default().to_string(),
                j["groupid"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect()
}

/// Every leaf path of a job entry ("read/clat_ns/N"), the options' and
/// percentiles' own keys aside (they name values).
fn leaves(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if path.ends_with("job options") || path.ends_with("percentile") {
                    out.insert(path.to_string());
                    continue;
                }
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}/{k}")
                };
                leaves(x, &p, out);
            }
        }
        _ => {
            out.insert(path.to_string());
        }
    }
}

/// fio's job keys missing from drivelab's.
fn missing_keys(fio: &Value, dl: &Value) -> Vec<String> {
    let all = |v: &Value| {
        let mut s = BTreeSet::new();
        for j in jobs(v) {
            leaves(j, "", &mut s);
        }
        s
    };
    let (f, d) = (all(fio), all(dl));
    f.difference(&d).cloned().collect()
}

/// The checks both tools' runs of a job file share: success, the same
/// jobs and groups, no bytes moved, no job error, fio's keys present.
fn common(job: &str, fio: &Ran, dl: &Ran) {
    assert_eq!(fio.code, 0, "{job}: fio failed: {}", fio.stderr);
    assert_eq!(dl.code, 0, "{job}: drivelab failed: {}", dl.stderr);
    assert_eq!(names(&fio.json), names(&dl.json), "{job}: jobs and groups");
    for (tool, r) in [("fio", fio), ("drivelab", dl)] {
        for j in jobs(&r.json) {
            let name = &j["jobname"];
            assert_eq!(j["error"], 0, "{job}: {tool}: {name}: error");
            for d in ["read", "write", "trim"] {
                assert_eq!(j[d]["io_bytes"], 0, "{job}: {tool}: {name}: {d} bytes");
            }
            assert!(
                j["read"]["total_ios"].as_u64().unwrap_or(0) > 0,
                "{job}: {tool}: {name}: no burn or look counted"
            );
        }
        assert_eq!(r.survivors, 0, "{job}: {tool} left programs running");
    }
    let missing = missing_keys(&fio.json, &dl.json);
    assert!(
        missing.is_empty(),
        "{job}: fio's keys missing from drivelab's JSON: {missing:?}"
    );
}

/// The share of one CPU a spinning thread gets now (0 to 1): 300 ms of
/// spinning, its CPU time over the wall time. On a host loaded by other
/// work a cpuio job gets less than its cpuload, fio's as drivelab's.
fn cpu_share() -> f64 {
    let cpu = || {
        let u = drivelab_engine::sys::thread_usage();
        u.user_ns + u.system_ns
    };
    let (c0, t0) = (cpu(), Instant::now());
    while t0.elapsed() < Duration::from_millis(300) {
        std::hint::spin_loop();
    }
    (cpu() - c0) as f64 / t0.elapsed().as_nanos() as f64
}

/// [`run`], with the smaller [`cpu_share`] just before and just after.
fn run_measured(tool: &str, job: &Path) -> (Ran, f64) {
    let before = cpu_share();
    let r = run(tool, job);
    (r, before.min(cpu_share()).min(1.0))
}

/// The programs' output files of the two tools: the same files, the same
/// contents. One allowance for fio 3.33: its job loop checks the runtime
/// (from the job's epoch) before the engine's own check (from the job's
/// start, a little later) that sends SIGTERM, so fio sends it only when
/// the runtime ends during the engine's 50 ms wait, not during its 50 ms
/// think time, and otherwise only SIGKILL at cleanup (about half the
/// time): fio's file may lack the lines the script's SIGTERM trap writes.
/// drivelab always sends SIGTERM at the runtime's end (checked by the
/// callers against the expected contents).
fn same_output(job: &str, fio: &BTreeMap<String, String>, dl: &BTreeMap<String, String>) {
    assert_eq!(
        fio.keys().collect::<Vec<_>>(),
        dl.keys().collect::<Vec<_>>(),
        "{job}: output files, fio vs drivelab"
    );
    for (name, d) in dl {
        let f = &fio[name];
        if f == d {
            continue;
        }
        let untrapped: String = d
            .lines()
            .filter(|l| !l.starts_with("SIGTERM"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            *f, untrapped,
            "{job}: {name}: fio's output is neither drivelab's nor it without the SIGTERM lines"
        );
        eprintln!("{job}: {name}: fio sent no SIGTERM this time (only SIGKILL at its cleanup)");
    }
}

/// usr_cpu of each entry named `name`.
fn usr_cpu(v: &Value, name: &str) -> Vec<f64> {
    jobs(v)
        .iter()
        .filter(|j| j["jobname"] == name)
        .map(|j| j["usr_cpu"].as_f64().unwrap_or(-1.0))
        .collect()
}

/// Each job's CPU use within `lo..=hi`, fio's and drivelab's; on a loaded
/// host the lower bound is scaled by the share of a CPU a spinning thread
/// got around each tool's run.
fn cpu_in_band(
    job: &str,
    (fio, fio_share): (&Value, f64),
    (dl, dl_share): (&Value, f64),
    name: &str,
    (lo, hi): (f64, f64),
) {
    let (f, d) = (usr_cpu(fio, name), usr_cpu(dl, name));
    eprintln!(
        "{job}: {name}: usr_cpu fio {f:?} (CPU share {fio_share:.2}), drivelab {d:?} (CPU share {dl_share:.2}); band {lo}-{hi}"
    );
    assert_eq!(f.len(), d.len(), "{job}: {name}: entries");
    for (tool, v, share) in [("fio", &f, fio_share), ("drivelab", &d, dl_share)] {
        // An idle host: the band as given. A loaded one: a job that sleeps
        // half its time waits for a CPU at every wake-up, so it gets less
        // than a spinning thread's share of its load: half of that bound.
        let low = if share >= 0.9 { lo } else { lo * share / 2.0 };
        for &u in v.iter() {
            assert!(u <= hi, "{job}: {tool}: {name}: usr_cpu {u} over {hi}");
            assert!(
                u >= low,
                "{job}: {tool}: {name}: usr_cpu {u} under {low:.1} ({lo} at a CPU share of {share:.2})"
            );
        }
    }
}

#[test]
fn cpuio_example_burns_its_load_in_both_tools() {
    let _l = serial();
    let job = data("cpuio.fio");
    let (fio, fio_share) = run_measured("fio", &job);
    let (dl, dl_share) = run_measured("drivelab", &job);
    common("cpuio.fio", &fio, &dl);
    assert_eq!(
        names(&dl.json).iter().map(|n| n.1).collect::<Vec<_>>(),
        [0, 0, 1, 1],
        "the qsort jobs are a stonewall group after the noop ones"
    );
    for j in jobs(&dl.json) {
        assert_eq!(j["job options"]["ioengine"], "cpuio");
    }
    for name in ["burn_2x50_noop", "burn_2x50%_qsort"] {
        cpu_in_band(
            "cpuio.fio",
            (&fio.json, fio_share),
            (&dl.json, dl_share),
            name,
            (25.0, 75.0),
        );
    }
    // No files: the jobs have no target.
    let made: Vec<&String> = dl.files.keys().collect();
    assert!(made.is_empty(), "drivelab left files: {made:?}");
}

#[test]
fn exec_example_runs_and_ends_its_programs_as_fio() {
    let _l = serial();
    let job = data("exec.fio");
    let fio = run("fio", &job);
    let dl = run("drivelab", &job);
    common("exec.fio", &fio, &dl);
    assert_eq!(
        names(&dl.json).iter().map(|n| n.1).collect::<Vec<_>>(),
        [0, 0, 0, 1, 2, 2, 2]
    );
    // The same files (none for the sleep job: std_redirect=0), the same
    // contents.
    same_output("exec.fio", &fio.files, &dl.files);
    let want: BTreeSet<&str> = [
        "monitoring_noop.stdout",
        "monitoring_noop.stderr",
        "monitoring_qsort.stdout",
        "monitoring_qsort.stderr",
    ]
    .into();
    assert_eq!(
        dl.files.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        want
    );
    let args =
        "args: -c package -qS --interval 5 -s Busy%,Bzy_MHz,Avg_MHz,CorWatt,PkgWatt,RAMWatt,PkgTmp";
    for m in ["monitoring_noop", "monitoring_qsort"] {
        assert_eq!(
            dl.files[&format!("{m}.stdout")],
            format!("{args}\nSIGTERM\n")
        );
        assert_eq!(
            dl.files[&format!("{m}.stderr")],
            "monitor started\nSIGTERM\n"
        );
    }
    // cpuload=100 on two jobs: each burns (how much a shared host gives
    // is not asked).
    for (tool, r) in [("fio", &fio), ("drivelab", &dl)] {
        for name in ["cpuload_noop", "cpuload_qsort"] {
            for u in usr_cpu(&r.json, name) {
                assert!(u > 5.0, "{tool}: {name}: usr_cpu {u}");
            }
        }
    }
}

#[test]
fn exec_arguments_numjobs_and_grace_time_as_fio() {
    let _l = serial();
    let job = data("exec-args.fio");
    let fio = run("fio", &job);
    let dl = run("drivelab", &job);
    common("exec-args.fio", &fio, &dl);
    same_output("exec-args.fio", &fio.files, &dl.files);
    assert_eq!(
        dl.files["args.stdout"],
        "args: --name args --runtime 2 --both args-2-args\nSIGTERM\n"
    );
    // SIGTERM said and ignored: SIGKILL after grace_time ended it (no
    // survivor, checked above).
    assert_eq!(
        dl.files["stubborn.stdout"],
        "args: --ignore-term stubborn\nSIGTERM ignored\n"
    );
    assert_eq!(dl.files["stubborn.stderr"], "monitor started\n");
}

#[test]
fn a_program_failing_on_its_own_is_drivelabs_job_error() {
    let _l = serial();
    let job = data("exec-status.fio");
    let fio = run("fio", &job);
    let dl = run("drivelab", &job);
    // fio 3.33 never collects the program's status.
    assert_eq!(fio.code, 0, "fio: {}", fio.stderr);
    assert_eq!(jobs(&fio.json)[0]["error"], 0);
    assert_eq!(dl.code, 1, "drivelab: {}", dl.stderr);
    let j = &jobs(&dl.json)[0];
    assert_eq!(j["error"], 3);
    let detail = j["error_detail"].as_str().unwrap_or_default();
    assert!(detail.contains("status 3"), "{detail}");
    assert!(
        dl.stderr.contains("job 'fails'") && dl.stderr.contains("status 3"),
        "{}",
        dl.stderr
    );
    assert_eq!(fio.files, dl.files, "both redirect the same output");
    assert_eq!(dl.files["fails.stdout"], "args: --exit 3\n");
}

#[test]
fn exit_on_io_done_ends_the_burn_with_the_io_job_as_fio() {
    let _l = serial();
    let job = data("exit-on-io-done.fio");
    let fio = run("fio", &job);
    let dl = run("drivelab", &job);
    for (tool, r) in [("fio", &fio), ("drivelab", &dl)] {
        // 124: timeout ended it (the burn never stopped).
        assert_eq!(r.code, 0, "{tool}: {}", r.stderr);
        let j = jobs(&r.json);
        assert_eq!(
            names(&r.json),
            [("io".to_string(), 0), ("burn".to_string(), 0)]
        );
        assert_eq!(j[0]["write"]["io_bytes"], 1 << 20, "{tool}: io job");
        assert_eq!(j[1]["error"], 0, "{tool}: burn job");
        let (io, burn) = (&j[0]["job_runtime"], &j[1]["job_runtime"]);
        eprintln!("{tool}: io job {io} ms, burn job {burn} ms");
        // The burn went on while the I/O ran (it has no runtime of its
        // own): not ended at once, and (exit status 0, not timeout's 124)
        // not burning on after it. Each job's time counts from its own
        // start, so a loaded host can start the burn a little later.
        let (io, burn) = (io.as_u64().unwrap_or(u64::MAX), burn.as_u64().unwrap_or(0));
        assert!(
            burn >= io / 2,
            "{tool}: the burn ended long before the I/O: {burn} ms, the I/O {io} ms"
        );
        assert!(
            j[1]["read"]["total_ios"].as_u64().unwrap_or(0) > 0,
            "{tool}"
        );
    }
}

#[test]
fn bad_input_exits_2_naming_the_key() {
    let _l = serial();
    let dir = TempDir::new("cpuexec-bad");
    for (body, key) in [
        ("ioengine=cpuio\ncpuload=0\nruntime=1", "cpuload"),
        ("ioengine=cpuio\ncpuload=101\nruntime=1", "cpuload"),
        (
            "ioengine=cpuio\ncpuload=50\ncpumode=spin\nruntime=1",
            "cpumode",
        ),
        ("ioengine=cpuio\nruntime=1", "cpuload"),
        ("ioengine=exec\nruntime=1", "program"),
        (
            "ioengine=exec\nprogram=/nonexistent/monitor\nruntime=1",
            "program",
        ),
    ] {
        let f = dir.join("bad.fio");
        std::fs::write(&f, format!("[j]\n{body}\n")).unwrap();
        let out = Command::new(BIN)
            .args(["run", "--no-store"])
            .arg(&f)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{body}: {err}");
        assert!(err.contains(key), "{body}: {err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n != "bad.fio")
            .collect();
        assert!(left.is_empty(), "{body}: files left: {left:?}");
    }
}
