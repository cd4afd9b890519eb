//! fio's `latency_target` search and `steadystate` termination: the same
//! job file runs under fio 3.33 and drivelab in the same test, on a scratch
//! file, and both must come to the same verdict (steady state attained or
//! not, the depth the search settled on, the job's error) with the same
//! JSON keys.

use std::path::Path;
use std::process::Command;

use drivelab_testkit::{require_root, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn fio_available() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Run `job` (with `${DIR}` replaced by a fresh scratch directory) under
/// `tool`; its exit status and JSON.
fn run(tool: &str, job: &str) -> (i32, Value) {
    let dir = TempDir::new(&format!("latss-{tool}"));
    let text = job.replace("${DIR}", &dir.path().display().to_string());
    let path = dir.path().join("job.fio");
    std::fs::write(&path, text).unwrap();
    let out = match tool {
        "fio" => Command::new("fio")
            .arg("--output-format=json")
            .arg(&path)
            .current_dir(dir.path())
            .output(),
        _ => Command::new(BIN)
            .args(["run", "--no-store", "--output-format=json"])
            .arg(&path)
            .current_dir(dir.path())
            .output(),
    }
    .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // fio may print notes before its JSON.
    let start = stdout.find('{').unwrap_or_else(|| {
        panic!(
            "{tool}: no JSON ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let json = serde_json::from_str(&stdout[start..])
        .unwrap_or_else(|e| panic!("{tool}: not JSON ({e}): {stdout}"));
    (out.status.code().unwrap_or(-1), json)
}

/// Both tools on one job; both must exit with `status`.
fn both(job: &str, status: i32) -> (Value, Value) {
    require_root();
    assert!(
        fio_available(),
        "fio is not installed; this test compares drivelab with it (apt-get install fio)"
    );
    let (fs, fio) = run("fio", job);
    let (ds, dl) = run("drivelab", job);
    assert_eq!(fs, status, "fio's exit status: {fio}");
    assert_eq!(ds, status, "drivelab's exit status: {dl}");
    (fio, dl)
}

/// Every key path under `v` ("data.iops", …), arrays as one level.
fn key_paths(v: &Value, prefix: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = v {
        for (k, x) in m {
            let p = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            out.push(p.clone());
            key_paths(x, &p, out);
        }
    }
    out.sort();
}

fn keys(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    key_paths(v, "", &mut out);
    out
}

/// The one steady-state block of a run's (single) reported job.
fn ss_block(v: &Value, tool: &str) -> Value {
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 1, "{tool}: {v}");
    let ss = jobs[0]["steadystate"].clone();
    assert!(ss.is_object(), "{tool}: no steadystate block: {v}");
    ss
}

fn runtime_ms(v: &Value) -> u64 {
    let j = &v["jobs"][0];
    j["read"]["runtime"]
        .as_u64()
        .unwrap()
        .max(j["write"]["runtime"].as_u64().unwrap())
}

#[test]
fn a_flat_rate_reaches_steady_state_in_both_and_ends_the_job() {
    // 100 IOPS held by the rate limiter: each second's IOPS is within
    // 10 % of the window's mean, so the job ends after ramp + window,
    // well before its runtime.
    let job = "[flat]\nfilename=${DIR}/flat.dat\nsize=4m\nrw=read\nbs=4k\nioengine=psync\n\
               rate_iops=100\ntime_based\nruntime=20\nss=iops:10%\nss_dur=3\nss_ramp=1\n";
    let (fio, dl) = both(job, 0);
    let (fs, ds) = (ss_block(&fio, "fio"), ss_block(&dl, "drivelab"));
    assert_eq!(
        keys(&ds),
        keys(&fs),
        "steadystate keys\nfio {fs}\ndrivelab {ds}"
    );
    for (tool, ss, v) in [("fio", &fs, &fio), ("drivelab", &ds, &dl)] {
        assert_eq!(ss["attained"], 1, "{tool}: {ss}");
        assert_eq!(ss["ss"], "iops:10.000000%", "{tool}");
        assert_eq!(ss["duration"], 3, "{tool}");
        assert_eq!(ss["data"]["iops"].as_array().unwrap().len(), 3, "{tool}");
        assert_eq!(ss["data"]["bw"].as_array().unwrap().len(), 3, "{tool}");
        assert!(ss["criterion"].as_str().unwrap().ends_with('%'), "{tool}");
        // Ended by steady state, not by the 20 s runtime.
        assert!(runtime_ms(v) < 20_000, "{tool}: {}", runtime_ms(v));
        let opts = &v["jobs"][0]["job options"];
        assert_eq!(opts["steadystate"], "iops:10%", "{tool}");
        assert_eq!(opts["steadystate_duration"], "3", "{tool}");
        assert_eq!(opts["steadystate_ramp_time"], "1", "{tool}");
    }
}

#[test]
fn a_falling_group_rate_misses_steady_state_in_both() {
    // A reporting group of two jobs at 100 IOPS each; the first stops at
    // 2.5 s, so the group's IOPS fall from 200 to 100 within every 4 s
    // window: never within 10 % of the mean. The last job (the longer
    // one) judges the group, and both tools run it to its runtime.
    let job = "[global]\nsize=4m\nrw=read\nbs=4k\nioengine=psync\nrate_iops=100\ntime_based\n\
               group_reporting\nss=iops:10%\nss_dur=4\n\
               [short]\nfilename=${DIR}/a.dat\nruntime=2500ms\n\
               [long]\nfilename=${DIR}/b.dat\nruntime=5\n";
    let (fio, dl) = both(job, 0);
    let (fs, ds) = (ss_block(&fio, "fio"), ss_block(&dl, "drivelab"));
    assert_eq!(
        keys(&ds),
        keys(&fs),
        "steadystate keys\nfio {fs}\ndrivelab {ds}"
    );
    for (tool, ss) in [("fio", &fs), ("drivelab", &ds)] {
        assert_eq!(ss["attained"], 0, "{tool}: {ss}");
        assert_eq!(ss["duration"], 4, "{tool}");
        let iops: Vec<u64> = ss["data"]["iops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(iops.len(), 4, "{tool}");
        // The window saw both jobs, then one: it falls.
        assert!(iops.first() > iops.last(), "{tool}: {iops:?}");
    }
}

/// A latency-target job on a scratch file, `extra` setting the target.
fn lat_job(extra: &str) -> String {
    format!(
        "[global]\nfilename=${{DIR}}/lat.dat\nsize=8m\nioengine=libaio\ndirect=1\nbs=4k\n\
         rw=randread\niodepth=8\ntime_based\nruntime=20\nlatency_window=100ms\n[lat]\n{extra}"
    )
}

fn lat_keys(v: &Value) -> (Value, Value, Value, Value) {
    let j = &v["jobs"][0];
    (
        j["latency_depth"].clone(),
        j["latency_target"].clone(),
        j["latency_window"].clone(),
        j["latency_percentile"].clone(),
    )
}

#[test]
fn a_target_every_io_meets_settles_at_iodepth_and_ends_the_job() {
    // Nothing on a local file takes 10 s: every window succeeds, the depth
    // doubles 1, 2, 4, 8, holds, one final window runs at 8, and the job
    // ends long before its runtime.
    let (fio, dl) = both(&lat_job("latency_target=10s\n"), 0);
    let (f, d) = (lat_keys(&fio), lat_keys(&dl));
    assert_eq!(d, f, "fio {f:?}, drivelab {d:?}");
    assert_eq!(d.0, 8);
    assert_eq!(d.1, 10_000_000_000u64);
    assert_eq!(d.2, 100_000);
    assert_eq!(d.3, 100.0);
    for (tool, v) in [("fio", &fio), ("drivelab", &dl)] {
        assert_eq!(v["jobs"][0]["error"], 0, "{tool}");
        assert!(runtime_ms(v) < 20_000, "{tool}: {}", runtime_ms(v));
        assert!(
            v["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0,
            "{tool}"
        );
    }
}

#[test]
fn a_target_no_io_meets_keeps_depth_one() {
    // No read completes within 1 µs: with a percentile under 100 a failed
    // window at depth 1 changes nothing, so the job runs at depth 1.
    let job =
        lat_job("latency_target=1us\nlatency_percentile=50\n").replace("runtime=20", "runtime=1");
    let (fio, dl) = both(&job, 0);
    let (f, d) = (lat_keys(&fio), lat_keys(&dl));
    assert_eq!(d, f, "fio {f:?}, drivelab {d:?}");
    assert_eq!(d.0, 1);
    assert_eq!(d.3, 50.0);
    for (tool, v) in [("fio", &fio), ("drivelab", &dl)] {
        assert_eq!(v["jobs"][0]["error"], 0, "{tool}");
        let lvl = &v["jobs"][0]["iodepth_level"];
        // Never more than one in flight.
        assert_eq!(lvl["2"].as_f64().unwrap(), 0.0, "{tool}: {lvl}");
        assert_eq!(lvl["4"].as_f64().unwrap(), 0.0, "{tool}: {lvl}");
    }
}

#[test]
fn a_late_io_at_depth_one_and_100_percent_fails_the_job_with_etimedout() {
    let (fio, dl) = both(&lat_job("latency_target=1us\n"), 1);
    for (tool, v) in [("fio", &fio), ("drivelab", &dl)] {
        let j = &v["jobs"][0];
        assert_eq!(j["error"], 110, "{tool}: {j}");
        assert_eq!(j["latency_depth"], 1, "{tool}");
        assert_eq!(j["read"]["total_ios"], 1, "{tool}");
    }
    // drivelab says the timeout is the search's, not the device's.
    let e = dl["jobs"][0]["errors"][0]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(e.contains("latency_target"), "{e}");
}

#[test]
fn bad_values_are_refused_naming_the_key() {
    let dir = TempDir::new("latss-bad");
    let target = dir.path().join("never.dat");
    for (key, value) in [
        ("latency_target", "soon"),
        ("latency_window", "x"),
        ("latency_percentile", "101"),
        ("latency_run", "maybe"),
        ("steadystate", "lat:1%"),
        ("ss", "iops"),
        ("ss_dur", "forever"),
        ("ss_ramp", "-"),
        ("steadystate_check_interval", "100ms"),
        ("ss_dur", "1500ms"),
    ] {
        let out = Command::new(BIN)
            .args(["run", "--no-store", "--size=1m"])
            .arg(format!("--filename={}", target.display()))
            .arg(format!("--{key}={value}"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}={value}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{key}={value}: {err}");
        let canonical = match key {
            "ss" => "steadystate",
            "ss_dur" => "steadystate_duration",
            "ss_ramp" => "steadystate_ramp_time",
            k => k,
        };
        assert!(
            err.contains(key) || err.contains(canonical),
            "{key}={value}: {err}"
        );
        assert!(!Path::new(&target).exists(), "{key}={value} wrote");
    }
}
