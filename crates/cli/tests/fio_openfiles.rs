//! fio's `openfiles` and `create_on_open`: the job files in
//! tests/data/fio-jobs/openfiles (their first lines say what each tests)
//! run under fio 3.33 and drivelab in fresh scratch directories in the same
//! test, each job writing fio's `write_iolog`, and what each tool did is
//! compared: the files' opens and closes and every I/O in order
//! (roundrobin, sequential: the same lines but the times), or per file
//! (random: the same counts of opens, closes, I/Os and bytes), never more
//! of a job's files open at once than `openfiles` says (from the iolog,
//! and from /proc/PID/fd sampled while a paced drivelab job runs), and for
//! `create_on_open` no file during the start delay, each created when
//! first opened.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_testkit::{json_after_notes, require_root, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn job(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fio-jobs/openfiles")
        .join(name)
}

fn command(tool: &str, job: &Path, dir: &Path) -> Command {
    let mut cmd = if tool == "fio" {
        Command::new("fio")
    } else {
        let mut c = Command::new(BIN);
        c.arg("run");
        c
    };
    cmd.arg("--output-format=json")
        .arg(job)
        .current_dir(dir)
        .env("DL_SCRATCH", dir);
    cmd
}

/// Run `tool` on `job` in `dir`; its JSON.
fn run_in(tool: &str, job: &Path, dir: &Path) -> Value {
    let out = command(tool, job, dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    parse(tool, job, out)
}

fn parse(tool: &str, job: &Path, out: std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{tool} {} failed ({}): {}\n{stdout}",
        job.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    json_after_notes(tool, &stdout)
}

/// One iolog line without its time: file name (no directory), action,
/// and for an I/O its offset and length.
type Line = (String, String, Option<(u64, u64)>);

fn iolog(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("fio version 3 iolog"),
        "{}",
        path.display()
    );
    lines
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert!(w.len() == 3 || w.len() == 5, "{}: {l}", path.display());
            let name = Path::new(w[1])
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let io = (w.len() == 5).then(|| (w[3].parse().unwrap(), w[4].parse().unwrap()));
            (name, w[2].to_string(), io)
        })
        .collect()
}

/// What a log shows per file: opens, closes, I/Os, bytes; and the most
/// files open at once.
fn per_file(log: &[Line]) -> (BTreeMap<String, [u64; 4]>, usize) {
    let mut m: BTreeMap<String, [u64; 4]> = BTreeMap::new();
    let mut open = std::collections::BTreeSet::new();
    let mut most = 0;
    for (f, act, io) in log {
        let e = m.entry(f.clone()).or_default();
        match act.as_str() {
            "open" => {
                assert!(open.insert(f.clone()), "{f} opened twice: {log:?}");
                most = most.max(open.len());
                e[0] += 1;
            }
            "close" => {
                assert!(open.remove(f), "{f} closed while not open");
                e[1] += 1;
            }
            "add" => {}
            _ => {
                assert!(open.contains(f), "I/O to {f} while it is not open");
                e[2] += 1;
                e[3] += io.map_or(0, |(_, len)| len);
            }
        }
    }
    assert!(open.is_empty(), "left open: {open:?}");
    (m, most)
}

/// (I/Os, bytes) written per job, by name.
fn written(v: &Value) -> BTreeMap<String, (u64, u64)> {
    let mut m = BTreeMap::new();
    for j in v["jobs"].as_array().expect("jobs") {
        let d = |k: &str| {
            (
                j[k]["total_ios"].as_u64().unwrap_or(0),
                j[k]["io_bytes"].as_u64().unwrap_or(0),
            )
        };
        let (r, w) = (d("read"), d("write"));
        m.insert(
            j["jobname"].as_str().unwrap_or_default().to_string(),
            (r.0 + w.0, r.1 + w.1),
        );
    }
    m
}

/// Run a job file under both tools; (fio dir, drivelab dir) and checks
/// the JSON counts per job are equal.
fn both(name: &str) -> (TempDir, TempDir) {
    let j = job(name);
    let fdir = TempDir::new("openfiles-fio");
    let ddir = TempDir::new("openfiles-dl");
    let f = run_in("fio", &j, fdir.path());
    let d = run_in("drivelab", &j, ddir.path());
    assert_eq!(written(&d), written(&f), "{name}");
    (fdir, ddir)
}

#[test]
fn roundrobin_and_sequential_open_close_and_write_in_fios_order_with_or_without_openfiles() {
    require_root();
    // Per job: the most files open at once (its openfiles for roundrobin;
    // sequential needs only one) and the loops.
    for (name, jobs) in [
        (
            "roundrobin.fio",
            &[
                ("rr-psync", 2, 1),
                ("rr-uring", 2, 1),
                ("rr-read", 3, 1),
                ("rr-loops", 2, 2),
            ][..],
        ),
        (
            "sequential.fio",
            &[("seq-psync", 1, 1), ("seq-uring", 1, 1)][..],
        ),
        // No openfiles: roundrobin has every file open at once.
        ("all-open.fio", &[("all-rr", 8, 1), ("all-seq", 1, 1)][..]),
    ] {
        let (fdir, ddir) = both(name);
        for &(j, n, loops) in jobs {
            let log = format!("{j}.iolog");
            let (f, d) = (iolog(&fdir.join(&log)), iolog(&ddir.join(&log)));
            // The same adds, opens, closes and I/Os, in the same order.
            assert_eq!(d, f, "{name} {j}");
            let (files, most) = per_file(&d);
            assert_eq!(files.len(), 8, "{j}: {files:?}");
            for (file, c) in &files {
                assert_eq!(*c, [loops, loops, 4 * loops, 16384 * loops], "{j} {file}");
            }
            assert_eq!(most, n, "{j}");
        }
    }
}

#[test]
fn random_service_opens_each_file_once_and_never_more_than_openfiles() {
    require_root();
    let (fdir, ddir) = both("random.fio");
    for j in ["rand-psync", "rand-uring", "rr2-psync"] {
        let log = format!("{j}.iolog");
        let (f, d) = (iolog(&fdir.join(&log)), iolog(&ddir.join(&log)));
        let ((ff, fmost), (df, dmost)) = (per_file(&f), per_file(&d));
        assert_eq!(df, ff, "{j}: per file opens, closes, I/Os, bytes");
        assert_eq!(df.len(), 8, "{j}");
        assert!(
            fmost <= 2 && dmost <= 2,
            "{j}: fio {fmost}, drivelab {dmost}"
        );
        assert_eq!(dmost, 2, "{j}: the open set is used");
        if j == "rr2-psync" {
            assert_eq!(d, f, "{j}: roundrobin:2 in fio's order");
        } else {
            // Each file's blocks once each (rand-uring: random offsets).
            for tool in [&f, &d] {
                let mut blocks: Vec<(String, u64)> = tool
                    .iter()
                    .filter(|(_, a, _)| a == "write")
                    .map(|(n, _, io)| (n.clone(), io.unwrap().0))
                    .collect();
                blocks.sort();
                blocks.dedup();
                assert_eq!(blocks.len(), 32, "{j}");
            }
        }
    }
}

/// Descriptors of `pid` open on files whose names start with `prefix`.
fn open_fds(pid: u32, prefix: &str) -> Option<usize> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .count(),
    )
}

#[test]
fn a_paced_job_never_holds_more_descriptors_than_openfiles() {
    require_root();
    let j = job("paced.fio");
    let dir = TempDir::new("openfiles-paced");
    let mut child: Child = command("drivelab", &j, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (mut most, mut samples, mut seen) = (0, 0, 0);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(60) {
        if let Some(n) = open_fds(pid, "paced.0.") {
            most = most.max(n);
            samples += 1;
            seen += usize::from(n > 0);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    let v = parse("drivelab", &j, out);
    assert_eq!(written(&v)["paced"], (128, 128 * 4096));
    assert!(
        samples > 20 && seen > 10,
        "{samples} samples, {seen} with files open"
    );
    assert!(
        (1..=3).contains(&most),
        "{most} of the job's files open at once"
    );
    let (files, logged) = per_file(&iolog(&dir.join("paced.iolog")));
    assert!(logged <= 3, "{logged}");
    for (f, c) in &files {
        assert_eq!(c[2], 16, "{f}: {c:?}");
    }
    // fio holds to the same limit on the same job.
    let fdir = TempDir::new("openfiles-paced-fio");
    let fv = run_in("fio", &j, fdir.path());
    assert_eq!(written(&fv), written(&v));
    let (ffiles, fmost) = per_file(&iolog(&fdir.join("paced.iolog")));
    assert!(fmost <= 3, "fio: {fmost}");
    assert_eq!(ffiles, files);
}

#[test]
fn create_on_open_makes_no_file_before_the_job_opens_it() {
    require_root();
    let j = job("create-on-open.fio");
    let mut seen = Vec::new();
    for tool in ["fio", "drivelab"] {
        let dir = TempDir::new("openfiles-coo");
        let child = command(tool, &j, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // startdelay=2: a second in, the job has not started.
        std::thread::sleep(Duration::from_secs(1));
        let during: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("coo.0."))
            .collect();
        let v = parse(tool, &j, child.wait_with_output().unwrap());
        assert!(
            during.is_empty(),
            "{tool}: {during:?} before the job started"
        );
        for f in 0..4 {
            let md = std::fs::metadata(dir.join(&format!("coo.0.{f}"))).unwrap();
            assert_eq!(md.len(), 16384, "{tool} coo.0.{f}");
        }
        assert_eq!(written(&v)["coo"], (16, 65536), "{tool}");
        let log = iolog(&dir.join("coo.iolog"));
        let (files, _) = per_file(&log);
        seen.push((files, log));
    }
    assert_eq!(seen[1].0, seen[0].0);
    assert_eq!(
        seen[1].1, seen[0].1,
        "the same opens, I/Os and closes in order"
    );
}

#[test]
fn openfiles_that_cannot_be_kept_are_refused_naming_the_key() {
    require_root();
    for (text, key) in [
        ("openfiles=0\n", "openfiles"),
        ("openfiles=2\nverify=crc32c\ndo_verify=1\n", "openfiles"),
        ("write_iolog=\n", "write_iolog"),
    ] {
        let dir = TempDir::new("openfiles-bad");
        let p = dir.join("bad.fio");
        std::fs::write(
            &p,
            format!("[j]\nrw=write\nbs=4k\nnrfiles=4\nfilesize=16k\n{text}"),
        )
        .unwrap();
        let out = Command::new(BIN)
            .arg("run")
            .arg(&p)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{text}: {err}");
        assert!(err.contains(key), "{text}: {err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name() != "bad.fio")
            .collect();
        assert!(left.is_empty(), "{text}: {left:?}");
    }
}
