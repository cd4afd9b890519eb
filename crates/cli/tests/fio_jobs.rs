//! fio's job files run unchanged: every job file in tests/data/fio-jobs
//! (our own small files after the examples in fio's `examples/`) is run by
//! fio and by drivelab in the same test, each in a fresh scratch directory
//! named by `${DL_SCRATCH}` (a loop device by `${DL_DEV}` where a job needs
//! a device). Both must succeed, create the same files, and — for
//! size-based jobs — move the same bytes per direction as fio's JSON
//! `io_bytes` says (the first line of each file says how exactly: see
//! tests/data/fio-jobs/README.md).

use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_testkit::{require_root, run, LoopDev, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn jobs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/fio-jobs")
}

/// How a job file's two runs are compared (its first line).
#[derive(Debug, PartialEq)]
enum Compare {
    Exact,
    Total(u64),
    Files,
}

fn compare_mode(text: &str, name: &str) -> Compare {
    let first = text.lines().next().unwrap_or_default();
    let mode = first
        .strip_prefix("# dl-compare: ")
        .unwrap_or_else(|| panic!("{name}: first line must be '# dl-compare: …'"));
    let mut w = mode.split_whitespace();
    match w.next() {
        Some("exact") => Compare::Exact,
        Some("files") => Compare::Files,
        Some("total") => {
            let tol = w.next().unwrap_or("0");
            let (n, mult) = match tol.strip_suffix('k') {
                Some(n) => (n, 1024),
                None => match tol.strip_suffix('m') {
                    Some(n) => (n, 1 << 20),
                    None => (tol, 1),
                },
            };
            Compare::Total(n.parse::<u64>().expect("tolerance") * mult)
        }
        m => panic!("{name}: unknown compare mode {m:?}"),
    }
}

/// (read bytes, write bytes) summed over the jobs of a fio-shaped JSON result.
fn bytes(v: &Value) -> (u64, u64) {
    let jobs = v["jobs"].as_array().expect("jobs");
    let sum = |d: &str| {
        jobs.iter()
            .map(|j| j[d]["io_bytes"].as_u64().unwrap_or(0))
            .sum()
    };
    (sum("read"), sum("write"))
}

/// Files left in the scratch directory, relative, sorted; fio's verify
/// state files (`*-verify.state`, fio's bookkeeping) left out.
fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with("-verify.state"))
        .collect();
    v.sort();
    v
}

struct Outcome {
    json: Value,
    files: Vec<String>,
    stdout: String,
}

fn run_tool(tool: &str, job: &Path, dev: Option<&str>) -> Outcome {
    let scratch = TempDir::new(&format!("fio-jobs-{tool}"));
    let mut cmd = match tool {
        "fio" => {
            let mut c = Command::new("fio");
            c.arg("--output-format=json").arg(job);
            c
        }
        _ => {
            let mut c = Command::new(BIN);
            c.arg("run").arg(job).arg("--output-format=json");
            c
        }
    };
    cmd.current_dir(scratch.path())
        .env("DL_SCRATCH", scratch.path());
    if let Some(d) = dev {
        cmd.env("DL_DEV", d);
    }
    let out = cmd
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
    // fio may print notes before its JSON.
    let start = stdout.find('{').unwrap_or(0);
    let json: Value = serde_json::from_str(&stdout[start..])
        .unwrap_or_else(|e| panic!("{tool} {}: not JSON ({e}): {stdout}", job.display()));
    Outcome {
        json,
        files: files(scratch.path()),
        stdout,
    }
}

fn fio_available() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_job_file_runs_in_fio_and_drivelab_doing_the_same_io() {
    require_root();
    assert!(
        fio_available(),
        "fio is not installed; this test compares drivelab with it (apt-get install fio)"
    );
    let mut names: Vec<PathBuf> = std::fs::read_dir(jobs_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "fio"))
        .collect();
    names.sort();
    assert!(names.len() >= 15, "only {} job files", names.len());
    let devdir = TempDir::new("fio-jobs-dev");
    let mut failures = Vec::new();
    for job in &names {
        let name = job.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(job).unwrap();
        let mode = compare_mode(&text, &name);
        let lo = text
            .contains("${DL_DEV}")
            .then(|| LoopDev::new_in(&devdir, 8 << 20));
        let dev = lo.as_ref().map(|l| l.dev());
        let fio = run_tool("fio", job, dev);
        let dl = run_tool("drivelab", job, dev);
        let (fr, fw) = bytes(&fio.json);
        let (dr, dw) = bytes(&dl.json);
        let mut why = Vec::new();
        if fio.files != dl.files {
            why.push(format!(
                "files: fio {:?}, drivelab {:?}",
                fio.files, dl.files
            ));
        }
        match mode {
            Compare::Exact if (fr, fw) != (dr, dw) => why.push(format!(
                "bytes read/written: fio {fr}/{fw}, drivelab {dr}/{dw}"
            )),
            Compare::Total(tol) if (fr + fw).abs_diff(dr + dw) > tol => why.push(format!(
                "bytes in all: fio {}, drivelab {} (allowed ±{tol})",
                fr + fw,
                dr + dw
            )),
            _ => {}
        }
        if mode != Compare::Files && fr + fw == 0 {
            why.push("fio moved no bytes: the job file tests nothing".to_string());
        }
        eprintln!(
            "{name}: fio {fr}/{fw}, drivelab {dr}/{dw} bytes read/written; files {:?}",
            dl.files
        );
        if !why.is_empty() {
            failures.push(format!("{name}: {}", why.join("; ")));
        }
        // A fio engine name is said once, in a field.
        if text.contains("ioengine=libaio") {
            assert_eq!(
                dl.json["ioengine_map"]["libaio"], "io_uring",
                "{name}: {}",
                dl.stdout
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn drivelab(job: &Path, dir: &TempDir) -> (i32, String, String) {
    let (code, out, err) = run(BIN, &["run", job.to_str().unwrap()]);
    let _ = dir;
    (code, out, err)
}

#[test]
fn inline_comment_is_not_taken_into_the_file_name() {
    require_root();
    let dir = TempDir::new("fio-jobs-comment");
    let target = dir.join("data.bin");
    let job = write(
        &dir,
        "c.fio",
        &format!(
            "[c]\nfilename={}   # the scratch file\nsize=64k\t; small\nrw=write\n",
            target.display()
        ),
    );
    let (code, out, err) = drivelab(&job, &dir);
    assert_eq!(code, 0, "{err}\n{out}");
    assert_eq!(files(dir.path()), vec!["c.fio", "data.bin"]);
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 64 << 10);
}

#[test]
fn text_output_says_the_engine_mapping_once() {
    require_root();
    let dir = TempDir::new("fio-jobs-engine");
    let job = write(
        &dir,
        "e.fio",
        &format!(
            "[global]\nioengine=libaio\nsize=64k\ndirectory={}\n[a]\nrw=write\n[b]\nrw=read\n",
            dir.path().display()
        ),
    );
    let (code, out, err) = drivelab(&job, &dir);
    assert_eq!(code, 0, "{err}\n{out}");
    assert_eq!(
        out.matches("libaio runs on drivelab's io_uring").count(),
        1,
        "{out}"
    );
    assert!(dir.join("a.0.0").exists() && dir.join("b.0.0").exists());
}

#[test]
fn verify_catches_a_block_changed_after_it_was_written() {
    require_root();
    let dir = TempDir::new("fio-jobs-verify");
    let target = dir.join("v.bin");
    let common = format!(
        "[global]\nfilename={}\nsize=256k\nbs=4k\nverify=crc32c\nioengine=psync\n",
        target.display()
    );
    let w = write(&dir, "w.fio", &format!("{common}[w]\nrw=write\n"));
    let (code, out, err) = drivelab(&w, &dir);
    assert_eq!(code, 0, "{err}\n{out}");
    // The write job read everything back and checked it.
    assert!(out.contains("read:"), "{out}");
    // Change one byte of the 10th block, then read and verify.
    let mut data = std::fs::read(&target).unwrap();
    data[9 * 4096 + 100] ^= 0xff;
    std::fs::write(&target, &data).unwrap();
    let r = write(&dir, "r.fio", &format!("{common}[r]\nrw=read\n"));
    let (code, out, err) = drivelab(&r, &dir);
    assert_eq!(code, 1, "a corrupted block must fail the job: {err}\n{out}");
    assert!(
        out.contains("verify (crc32c) failed at offset 36864"),
        "{out}"
    );
}

#[test]
fn unsupported_fio_keys_are_refused_naming_the_key() {
    require_root();
    let dir = TempDir::new("fio-jobs-refuse");
    for (key, line) in [
        ("flow", "flow=2"),
        ("verify", "verify=md5"),
        ("thinktime", "thinktime=2000"),
        // Zoned block devices (fio's zonemode=zbd) are not driven.
        ("zonemode", "zonemode=zbd"),
        ("zonesize", "zonemode=strided"),
        ("DL_UNSET_VARIABLE", "filename=${DL_UNSET_VARIABLE}/x"),
    ] {
        let job = write(
            &dir,
            "x.fio",
            &format!(
                "[x]\nfilename={}\nsize=64k\n{line}\n",
                dir.join("x").display()
            ),
        );
        let (code, out, err) = drivelab(&job, &dir);
        assert_eq!(code, 2, "{key}: {err}\n{out}");
        assert_eq!(err.trim().lines().count(), 1, "{key}: {err}");
        assert!(err.contains(key), "{key}: {err}");
        assert!(!dir.join("x").exists(), "{key}: a refused job wrote");
    }
}

#[test]
fn wait_for_starts_a_job_only_after_the_named_one_finished() {
    require_root();
    let dir = TempDir::new("fio-jobs-waitfor");
    let target = dir.join("w.bin");
    // The reader checks blocks only the (slow, rate-capped) writer writes:
    // started with it, it meets laid-out data and fails; after it, it passes.
    let job = |wait: &str| {
        format!(
            "[global]\nfilename={}\nsize=256k\nbs=4k\nverify=crc32c\nioengine=psync\n\
             [writer]\nrw=write\nrate=1m\ndo_verify=0\n[reader]\n{wait}rw=read\n",
            target.display()
        )
    };
    let together = write(&dir, "t.fio", &job(""));
    let (code, out, _) = drivelab(&together, &dir);
    assert_eq!(code, 1, "the reader ran alongside the writer: {out}");
    std::fs::remove_file(&target).unwrap();
    let waiting = write(&dir, "w.fio", &job("wait_for=writer\n"));
    let (code, out, err) = drivelab(&waiting, &dir);
    assert_eq!(code, 0, "{err}\n{out}");
    let nobody = write(&dir, "n.fio", &job("wait_for=nobody\n"));
    let (code, _, err) = drivelab(&nobody, &dir);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("wait_for=nobody"), "{err}");
}
