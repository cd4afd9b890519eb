//! drivelab's JSON has every key fio's has: fio 3.33 and drivelab run the
//! same job on a regular file in the same test, both outputs are flattened
//! to leaf paths (`jobs.0.read.bw_min`), and no fio path may be missing from
//! drivelab's, nor have another JSON type (integer, float, string), except
//! the paths in [`ALLOWED_MISSING`], each with its reason. The same runs
//! check `json+` bins, terse v3 and several formats at once.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use drivelab_report::jsonplus::{plat_idx_to_val, plat_val_to_idx};
use drivelab_testkit::{run, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// fio paths drivelab leaves out on purpose.
const ALLOWED_MISSING: &[(&str, &str)] = &[];

/// The JSON kind of a leaf, as a consumer sees it.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Leaf paths of `v` with their kinds; an empty object or array is a leaf.
fn flatten(v: &Value, prefix: &str, out: &mut BTreeMap<String, &'static str>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                flatten(x, &join(k), out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                flatten(x, &join(&i.to_string()), out);
            }
        }
        _ => {
            out.insert(prefix.to_string(), kind(v));
        }
    }
}

/// The job both tools run: 4 KiB random reads on `file` for 2 s.
fn job_args(file: &Path) -> Vec<String> {
    [
        "--name=keys",
        &format!("--filename={}", file.display()),
        "--size=16m",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=psync",
        "--runtime=2",
        "--time_based",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run_fio(dir: &TempDir, file: &Path, format: &str) -> String {
    let mut args = job_args(file);
    args.push(format!("--output-format={format}"));
    let out = Command::new("fio")
        .args(&args)
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

fn run_drivelab(file: &Path, format: &str) -> String {
    let mut args = vec!["run".to_string()];
    args.extend(job_args(file));
    args.push(format!("--output-format={format}"));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = run(BIN, &refs);
    assert_eq!(code, 0, "drivelab: {err}");
    out
}

#[test]
fn drivelab_json_has_every_fio_key_of_the_same_job() {
    let dir = TempDir::new("fio-json-keys");
    let file = dir.join("data.bin");
    // fio lays the file out; drivelab then runs on the same file.
    let fio_json: Value = serde_json::from_str(&run_fio(&dir, &file, "json")).expect("fio JSON");
    let dl_json: Value = serde_json::from_str(&run_drivelab(&file, "json")).expect("drivelab JSON");
    let (mut fio, mut dl) = (BTreeMap::new(), BTreeMap::new());
    flatten(&fio_json, "", &mut fio);
    flatten(&dl_json, "", &mut dl);
    let mut missing = Vec::new();
    let mut wrong_kind = Vec::new();
    for (path, k) in &fio {
        match dl.get(path) {
            None if ALLOWED_MISSING.iter().any(|(p, _)| p == path) => {}
            None => missing.push(path.clone()),
            Some(d) if d != k => wrong_kind.push(format!("{path}: fio {k}, drivelab {d}")),
            Some(_) => {}
        }
    }
    eprintln!(
        "fio {} leaf paths, drivelab {}; missing {} (allowed: {}), of another kind {}",
        fio.len(),
        dl.len(),
        missing.len(),
        ALLOWED_MISSING.len(),
        wrong_kind.len()
    );
    assert!(
        missing.is_empty(),
        "fio keys missing from drivelab's JSON: {missing:#?}"
    );
    assert!(
        wrong_kind.is_empty(),
        "keys of another JSON kind: {wrong_kind:#?}"
    );
    // fio's readers recognise the format by "fio version"; its value
    // names drivelab, never fio's version.
    let version = format!("drivelab-{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(dl_json["fio version"].as_str(), Some(version.as_str()));
    assert_eq!(dl_json["drivelab version"].as_str(), Some(version.as_str()));
    // The samples are real: 2 s at 500 ms windows, each with reads.
    let r = &dl_json["jobs"][0]["read"];
    assert!(r["bw_samples"].as_u64().unwrap() >= 2, "{r}");
    assert!(r["bw_min"].as_u64().unwrap() <= r["bw_max"].as_u64().unwrap());
    // One job: its share of the group is its mean sample over the group's
    // bandwidth, at most 100 %.
    let agg = r["bw_agg"].as_f64().unwrap();
    assert!(agg > 0.0 && agg <= 100.0, "{agg}");
    let pct: f64 = dl_json["jobs"][0]["iodepth_level"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((pct - 100.0).abs() < 1e-6, "{pct}");
    // Plain JSON has no bins.
    assert!(r["clat_ns"].get("bins").is_none());
}

#[test]
fn json_plus_bins_are_in_fios_buckets_and_count_every_io() {
    let dir = TempDir::new("fio-json-plus");
    let file = dir.join("data.bin");
    let fio_json: Value = serde_json::from_str(&run_fio(&dir, &file, "json+")).expect("fio JSON+");
    let dl: Value = serde_json::from_str(&run_drivelab(&file, "json+")).expect("drivelab JSON+");
    for v in [&fio_json, &dl] {
        let clat = &v["jobs"][0]["read"]["clat_ns"];
        let bins = clat["bins"].as_object().expect("bins");
        let mut sum = 0;
        for (k, n) in bins {
            let val: u64 = k.parse().expect("numeric key");
            // A key is the value fio gives its own bucket.
            assert_eq!(plat_idx_to_val(plat_val_to_idx(val)), val, "{k}");
            sum += n.as_u64().unwrap();
        }
        assert_eq!(sum, clat["N"].as_u64().unwrap());
    }
}

#[test]
fn terse_v3_has_fios_fields_and_formats_combine() {
    let dir = TempDir::new("fio-terse");
    let file = dir.join("data.bin");
    let fio = run_fio(&dir, &file, "terse");
    let dl = run_drivelab(&file, "terse");
    let fio_line = fio
        .lines()
        .find(|l| l.starts_with("3;"))
        .expect("fio terse");
    let dl_line = dl.lines().next().expect("drivelab terse");
    let (f, d): (Vec<&str>, Vec<&str>) =
        (fio_line.split(';').collect(), dl_line.split(';').collect());
    assert_eq!(f.len(), d.len(), "fio: {fio_line}\ndrivelab: {dl_line}");
    assert_eq!(d[0], "3");
    assert!(d[1].starts_with("drivelab-"), "{}", d[1]);
    assert_eq!(d[2], "keys");
    // The same kinds of field in the same places: a percentile where fio
    // has one, a percentage where fio has one.
    for (i, (a, b)) in f.iter().zip(&d).enumerate().skip(2) {
        assert_eq!(
            a.contains("%="),
            b.contains("%="),
            "field {}: {a} / {b}",
            i + 1
        );
        assert_eq!(
            a.ends_with('%'),
            b.ends_with('%'),
            "field {}: {a} / {b}",
            i + 1
        );
    }
    // --minimal is terse.
    let (code, out, _) = run(
        BIN,
        &[
            "run",
            &format!("--filename={}", file.display()),
            "--size=16m",
            "--rw=randread",
            "--runtime=1",
            "--time_based",
            "--minimal",
        ],
    );
    assert_eq!(code, 0);
    assert!(out.starts_with("3;drivelab-"), "{out}");
    // Several formats at once, in fio's order: terse, JSON, text.
    let both = run_drivelab(&file, "normal,json,terse");
    let json_at = both.find("\n{").expect("JSON");
    let text_at = both.find("Run status group 0").expect("text");
    assert!(both.starts_with("3;"), "{both}");
    assert!(json_at < text_at);
    let end = both[json_at..].find("\n}\n").expect("end of JSON") + json_at + 3;
    let _: Value = serde_json::from_str(&both[json_at..end]).expect("the JSON part parses");
    // The text has fio's lines, in fio's order.
    let text = &both[end..];
    let order = [
        "keys: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=psync, iodepth=1",
        "keys: (groupid=0, jobs=1): err= 0:",
        "  read: IOPS=",
        "    clat (",
        "     lat (",
        "    clat percentiles (",
        "   bw (  KiB/s): min=",
        "   iops        : min=",
        "  cpu          : usr=",
        "  IO depths    : 1=100.0%",
        "     submit    : 0=",
        "     complete  : 0=",
        "     issued rwts: total=",
        "     latency   : target=0, window=0, percentile=100.00%, depth=1",
        "Run status group 0 (all jobs):",
        "   READ: bw=",
    ];
    let mut at = 0;
    for line in order {
        let found = text[at..]
            .find(line)
            .unwrap_or_else(|| panic!("'{line}' not in order in:\n{text}"));
        at += found + line.len();
    }
    // A format fio does not have: one line, exit 2.
    let (code, _, err) = run(BIN, &["run", "--output-format=xml"]);
    assert_eq!(code, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `iodepth_level` the way fio counts it (`td_io_commit`): every I/O of a
/// submitted batch at the depth the batch brought the queue to. Both tools
/// run 4 KiB random reads at iodepth 8 on the same file (libaio, which
/// drivelab runs on io_uring; buffered, so any user and filesystem can run
/// it) and must each show at least 95 % of their I/Os at depth 8. Counted
/// per I/O as it was queued (1 to 8 as a batch fills), drivelab showed
/// half of them below 8 on the same job.
#[test]
fn io_depths_count_each_batch_at_the_depth_it_reached_as_fio_does() {
    let dir = TempDir::new("fio-json-depths");
    let file = dir.join("depth.bin");
    let args = |tool: &str| -> Vec<String> {
        let mut a: Vec<String> = if tool == "fio" {
            vec![]
        } else {
            vec!["run".into()]
        };
        a.extend(
            [
                "--name=depth",
                &format!("--filename={}", file.display()),
                "--size=16m",
                "--rw=randread",
                "--bs=4k",
                "--ioengine=libaio",
                "--iodepth=8",
                "--runtime=1",
                "--time_based",
                "--output-format=json",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        a
    };
    let fio = Command::new("fio")
        .args(args("fio"))
        .current_dir(dir.path())
        .output()
        .expect("fio runs (tests/run installs it)");
    assert!(
        fio.status.success(),
        "fio: {}",
        String::from_utf8_lossy(&fio.stderr)
    );
    let fio: Value = serde_json::from_slice(&fio.stdout).expect("fio JSON");
    let dl_args = args("drivelab");
    let refs: Vec<&str> = dl_args.iter().map(String::as_str).collect();
    let (code, out, err) = run(BIN, &refs);
    assert_eq!(code, 0, "drivelab: {err}");
    let dl: Value = serde_json::from_str(&out).expect("drivelab JSON");
    for (tool, v) in [("fio", &fio), ("drivelab", &dl)] {
        let levels = &v["jobs"][0]["iodepth_level"];
        let at8 = levels["8"].as_f64().unwrap_or(0.0);
        eprintln!("{tool}: iodepth_level {levels}");
        assert!(at8 >= 95.0, "{tool}: {at8}% of I/Os at depth 8: {levels}");
    }
}
