//! `--status-interval`: fio 3.33 and drivelab run the same job in the same
//! test, each printing the statistics so far every second and then the
//! final result; the number and shape of what each prints are compared.
//! The jobs are paced (`rate_iops`) and sized, so each lasts a known least
//! time and ends with a known count.

use std::path::Path;
use std::process::Command;

use drivelab_testkit::{run, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// 4 KiB random reads of every block of a 14 MiB file at 1000 a second:
/// 3584 I/Os, at least 3.5 s.
const IOS: u64 = 3584;

fn job_args(file: &Path, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--name=status".to_string(),
        format!("--filename={}", file.display()),
        "--size=14m".to_string(),
        "--rw=randread".to_string(),
        "--bs=4k".to_string(),
        "--ioengine=psync".to_string(),
        "--rate_iops=1000".to_string(),
    ]
    .into();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// fio's stdout (asserting success).
fn fio(dir: &TempDir, args: &[String]) -> String {
    let out = Command::new("fio")
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("fio runs (tests/run installs it)");
    assert!(
        out.status.success(),
        "fio: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// drivelab's stdout (asserting success).
fn drivelab(args: &[String]) -> String {
    let mut all = vec!["run".to_string()];
    all.extend(args.iter().cloned());
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let (code, out, err) = run(BIN, &refs);
    assert_eq!(code, 0, "drivelab: {err}");
    out
}

/// The JSON objects one after another in `s` (fio's collated output).
fn objects(s: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(s)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("not a sequence of JSON objects ({e}):\n{s}"))
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

/// The job's completed reads in each object.
fn reads(objs: &[Value]) -> Vec<u64> {
    objs.iter()
        .map(|o| {
            o["jobs"][0]["read"]["total_ios"]
                .as_u64()
                .expect("total_ios")
        })
        .collect()
}

/// Checks for one tool's stream: every object has the final one's shape,
/// counts only grow, the last is the whole job. `consistent`: each
/// snapshot's bytes and latency count agree with its I/O count (drivelab's
/// are copied at one turn boundary; fio's bytes are read apart from its
/// counts, so only its final object is held to it).
fn check_stream(tool: &str, objs: &[Value], consistent: bool) {
    // Snapshots at 1, 2 and 3 s of a run of at least 3.5 s, then the end.
    assert!(objs.len() >= 4, "{tool}: {} objects", objs.len());
    let last = objs.last().unwrap();
    for (i, o) in objs.iter().enumerate() {
        assert_eq!(keys(o), keys(last), "{tool}: top-level keys");
        let jobs = o["jobs"].as_array().expect("jobs");
        assert_eq!(jobs.len(), 1, "{tool}");
        assert_eq!(keys(&jobs[0]), keys(&last["jobs"][0]), "{tool}: job keys");
        let r = &jobs[0]["read"];
        let n = r["total_ios"].as_u64().unwrap();
        if !consistent && i + 1 < objs.len() {
            continue;
        }
        assert_eq!(r["io_bytes"].as_u64().unwrap(), n * 4096, "{tool}");
        assert_eq!(r["clat_ns"]["N"].as_u64().unwrap(), n, "{tool}");
    }
    let counts = reads(objs);
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "{tool}: counts shrink: {counts:?}"
    );
    assert_eq!(*counts.last().unwrap(), IOS, "{tool}: {counts:?}");
    // The snapshots are taken while the job runs.
    assert!(counts[0] > 0 && counts[0] < IOS, "{tool}: {counts:?}");
    let runtimes: Vec<u64> = objs
        .iter()
        .map(|o| o["jobs"][0]["read"]["runtime"].as_u64().unwrap())
        .collect();
    assert!(
        runtimes.windows(2).all(|w| w[0] <= w[1]),
        "{tool}: runtimes {runtimes:?}"
    );
}

#[test]
fn json_snapshots_match_fios_in_number_and_shape() {
    let dir = TempDir::new("status-json");
    let file = dir.join("data.bin");
    let out = dir.join("fio.json");
    // fio writes every object into --output, nothing on stdout.
    let fio_stdout = fio(
        &dir,
        &job_args(
            &file,
            &[
                "--status-interval=1",
                "--output-format=json",
                &format!("--output={}", out.display()),
            ],
        ),
    );
    assert_eq!(fio_stdout, "");
    let fio_objs = objects(&std::fs::read_to_string(&out).unwrap());
    let dl_objs = objects(&drivelab(&job_args(
        &file,
        &["--status-interval=1", "--output-format=json"],
    )));
    eprintln!(
        "fio: {} objects, reads {:?}; drivelab: {} objects, reads {:?}",
        fio_objs.len(),
        reads(&fio_objs),
        dl_objs.len(),
        reads(&dl_objs)
    );
    check_stream("fio", &fio_objs, false);
    check_stream("drivelab", &dl_objs, true);
    assert!(
        fio_objs.len().abs_diff(dl_objs.len()) <= 1,
        "fio {} objects, drivelab {}",
        fio_objs.len(),
        dl_objs.len()
    );
    // Every key fio writes in a snapshot, drivelab writes in its own
    // ("fio version" naming drivelab).
    let dl_top = keys(&dl_objs[0]);
    for k in keys(&fio_objs[0]) {
        assert!(dl_top.contains(&k), "top-level key {k} missing");
    }
    let dl_job = keys(&dl_objs[0]["jobs"][0]);
    for k in keys(&fio_objs[0]["jobs"][0]) {
        assert!(
            dl_job.contains(&k),
            "job key {k} missing from drivelab's snapshot"
        );
    }
    // The samples so far are real: bandwidth samples grow with the run.
    let samples: Vec<u64> = dl_objs
        .iter()
        .map(|o| o["jobs"][0]["read"]["bw_samples"].as_u64().unwrap())
        .collect();
    assert!(samples.windows(2).all(|w| w[0] <= w[1]), "{samples:?}");
    assert!(*samples.last().unwrap() > samples[0], "{samples:?}");
}

#[test]
fn text_and_terse_snapshots_repeat_the_whole_output_into_the_output_file() {
    let dir = TempDir::new("status-text");
    let file = dir.join("data.bin");
    let (fio_out, dl_out) = (dir.join("fio.txt"), dir.join("drivelab.txt"));
    let formats = "--output-format=normal,terse";
    let fio_stdout = fio(
        &dir,
        &job_args(
            &file,
            &[
                "--status-interval=1",
                formats,
                &format!("--output={}", fio_out.display()),
            ],
        ),
    );
    // An earlier result in the file is replaced, as without the option.
    std::fs::write(&dl_out, "earlier results\n").unwrap();
    let dl_stdout = drivelab(&job_args(
        &file,
        &[
            "--status-interval=1",
            formats,
            &format!("--output={}", dl_out.display()),
        ],
    ));
    assert_eq!(fio_stdout, "");
    assert_eq!(dl_stdout, "");
    let count = |path: &Path| {
        let t = std::fs::read_to_string(path).unwrap();
        let terse: Vec<u64> = t
            .lines()
            .filter(|l| l.starts_with("3;"))
            // Field 6 of terse v3: the read I/Os' kilobytes.
            .map(|l| l.split(';').nth(5).unwrap().parse().unwrap())
            .collect();
        let groups = t.matches("Run status group 0 (all jobs):").count();
        (t, terse, groups)
    };
    let (fio_text, fio_terse, fio_groups) = count(&fio_out);
    let (dl_text, dl_terse, dl_groups) = count(&dl_out);
    eprintln!("fio terse KiB {fio_terse:?}; drivelab {dl_terse:?}");
    assert!(!dl_text.contains("earlier results"));
    for (tool, terse, groups, text) in [
        ("fio", &fio_terse, fio_groups, &fio_text),
        ("drivelab", &dl_terse, dl_groups, &dl_text),
    ] {
        // Each output is whole: one terse line and one group summary.
        assert!(terse.len() >= 4, "{tool}: {text}");
        assert_eq!(groups, terse.len(), "{tool}: {text}");
        assert!(terse.windows(2).all(|w| w[0] <= w[1]), "{tool}: {terse:?}");
        assert_eq!(*terse.last().unwrap(), IOS * 4, "{tool}: {terse:?}");
    }
    assert!(fio_terse.len().abs_diff(dl_terse.len()) <= 1);
}

#[test]
fn json_plus_snapshots_carry_bins_that_count_every_io() {
    let dir = TempDir::new("status-jsonplus");
    let file = dir.join("data.bin");
    let args = [
        "--name=bins".to_string(),
        format!("--filename={}", file.display()),
        "--size=4m".to_string(),
        "--rw=randwrite".to_string(),
        "--bs=4k".to_string(),
        "--rate_iops=1000".to_string(),
        "--status-interval=300ms".to_string(),
        "--output-format=json+".to_string(),
    ];
    let objs = objects(&drivelab(&args));
    // 1024 writes at 1000 a second: snapshots at 0.3, 0.6 and 0.9 s.
    assert!(objs.len() >= 4, "{} objects", objs.len());
    for o in &objs {
        let w = &o["jobs"][0]["write"];
        let n = w["total_ios"].as_u64().unwrap();
        // As fio's: a snapshot taken before the first completion has no
        // samples and so no `bins`.
        let Some(bins) = w["clat_ns"]["bins"].as_object() else {
            assert_eq!(n, 0, "{n} writes but no bins");
            continue;
        };
        let sum: u64 = bins.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(sum, n);
    }
    let last = objs.last().unwrap();
    assert_eq!(last["jobs"][0]["write"]["total_ios"], 1024);
}

#[test]
fn a_bad_interval_is_refused_in_one_line_naming_the_option() {
    let dir = TempDir::new("status-bad");
    let file = dir.join("never.bin");
    let out = dir.join("out.json");
    for bad in [
        "--status-interval=soon",
        "--status-interval=0",
        "--status-interval=0.5ms",
        "--status-interval=-1",
    ] {
        let args = [
            "run".to_string(),
            format!("--filename={}", file.display()),
            "--size=1m".to_string(),
            bad.to_string(),
            format!("--output={}", out.display()),
        ];
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, err) = run(BIN, &refs);
        assert_eq!(code, 2, "{bad}: {err}");
        assert_eq!(stdout, "", "{bad}");
        assert_eq!(err.trim_end().lines().count(), 1, "{bad}: {err}");
        assert!(err.contains("--status-interval"), "{bad}: {err}");
        assert!(
            !file.exists() && !out.exists(),
            "{bad}: something was written"
        );
    }
    // Without a value at all.
    let (code, _, err) = run(BIN, &["run", "--size=1m", "--status-interval"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--status-interval"), "{err}");
    // The help states it.
    let (code, help, _) = run(BIN, &["run", "--help"]);
    assert_eq!(code, 0);
    assert!(help.contains("--status-interval TIME"), "{help}");
}
