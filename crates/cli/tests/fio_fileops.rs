//! fio's multi-file jobs and filesystem engines: each job file after fio's
//! examples (tests/data/fio-jobs, their first lines say which) runs under
//! fio 3.33 and drivelab in fresh scratch directories in the same test, and
//! both must leave the same files (names and sizes) and report the same
//! operation counts per job. fio 3.33 has no dircreate/dirstat/dirdelete:
//! those job files (tests/data/fio-jobs/later) are checked against later
//! fio's documented effect.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_testkit::{json_after_notes, require_root, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn job(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fio-jobs")
        .join(name)
}

/// Run `tool` on `job` in `dir` (also `${DL_SCRATCH}`), with `extra`
/// arguments; its JSON.
fn run_in(tool: &str, job: &Path, dir: &Path, extra: &[&str]) -> Value {
    let mut cmd = if tool == "fio" {
        Command::new("fio")
    } else {
        let mut c = Command::new(BIN);
        c.arg("run");
        c
    };
    let out = cmd
        .arg("--output-format=json")
        .args(extra)
        .arg(job)
        .current_dir(dir)
        .env("DL_SCRATCH", dir)
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
    json_after_notes(tool, &stdout)
}

/// Per job: name, then per direction (read, write, trim): I/Os, bytes and
/// completion-latency samples (one per file operation).
type JobCounts = (String, [(u64, u64, u64); 3]);

fn per_job(v: &Value) -> Vec<JobCounts> {
    v["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            let d = |k: &str| {
                (
                    j[k]["total_ios"].as_u64().unwrap_or(0),
                    j[k]["io_bytes"].as_u64().unwrap_or(0),
                    j[k]["clat_ns"]["N"].as_u64().unwrap_or(0),
                )
            };
            (
                j["jobname"].as_str().unwrap_or_default().to_string(),
                [d("read"), d("write"), d("trim")],
            )
        })
        .collect()
}

/// Entries of `dir` but the job files: name → (is a directory, size).
fn entries(dir: &Path) -> BTreeMap<String, (bool, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_name().to_string_lossy().ends_with(".fio"))
        .map(|e| {
            let md = e.metadata().unwrap();
            let size = if md.is_dir() { 0 } else { md.len() };
            (
                e.file_name().to_string_lossy().into_owned(),
                (md.is_dir(), size),
            )
        })
        .collect()
}

/// Run a job file under fio and drivelab; (fio, drivelab) JSON and scratch dirs.
fn both(name: &str) -> ((Value, TempDir), (Value, TempDir)) {
    let j = job(name);
    let fdir = TempDir::new("fileops-fio");
    let ddir = TempDir::new("fileops-dl");
    let f = run_in("fio", &j, fdir.path(), &[]);
    let d = run_in("drivelab", &j, ddir.path(), &[]);
    ((f, fdir), (d, ddir))
}

#[test]
fn file_engines_create_stat_and_delete_what_fio_does() {
    require_root();
    for (name, jobs, files_left) in [
        ("filecreate-ioengine.fio", 4, 160),
        ("filestat-ioengine.fio", 3, 60),
        ("filedelete-ioengine.fio", 3, 0),
    ] {
        let ((f, fdir), (d, ddir)) = both(name);
        let (fc, dc) = (per_job(&f), per_job(&d));
        assert_eq!(dc.len(), jobs, "{name}: {d}");
        // Same operations per job: fio counts each file's blocks as I/Os
        // and takes one latency sample per file operation.
        assert_eq!(dc, fc, "{name}");
        for (job, dirs) in &dc {
            assert!(dirs[0].0 > 0 && dirs[0].2 > 0, "{name} {job}: {dirs:?}");
        }
        let (fe, de) = (entries(fdir.path()), entries(ddir.path()));
        assert_eq!(de.len(), files_left, "{name}: {de:?}");
        assert_eq!(de, fe, "{name}");
        assert_eq!(
            d["jobs"][0]["job options"]["ioengine"],
            name.split('-').next().unwrap()
        );
    }
}

#[test]
fn ftruncate_truncates_to_each_offset_as_fio_does() {
    require_root();
    let ((f, _fd), (d, _dd)) = both("ftruncate.fio");
    assert_eq!(per_job(&d), per_job(&f));
    assert_eq!(per_job(&d)[0].1[1].0, 100);
    // Only the sequential job: the file ends at its last truncate's offset.
    let dir = TempDir::new("fileops-ftrunc");
    let text = std::fs::read_to_string(job("ftruncate.fio")).unwrap();
    let grow = &text[..text.find("[rand-truncate]").unwrap()];
    let mut sizes = Vec::new();
    for tool in ["fio", "drivelab"] {
        let sub = dir.join(tool);
        std::fs::create_dir(&sub).unwrap();
        let p = sub.join("grow.fio");
        std::fs::write(&p, grow).unwrap();
        run_in(tool, &p, &sub, &[]);
        sizes.push(std::fs::metadata(sub.join("truncate")).unwrap().len());
    }
    assert_eq!(sizes, [99 * 4096, 99 * 4096]);
}

#[test]
fn falloc_allocates_and_punches_as_many_times_as_fio() {
    require_root();
    let ((f, fdir), (d, ddir)) = both("falloc.fio");
    let (fc, dc) = (per_job(&f), per_job(&d));
    assert_eq!(dc.len(), fc.len());
    for (a, b) in dc.iter().zip(&fc) {
        assert_eq!(a.0, b.0);
        // The same number of operations per direction; the same bytes but
        // for the random-sized fallocates (bssplit).
        for k in 0..3 {
            assert_eq!(a.1[k].0, b.1[k].0, "{}: {:?} vs fio {:?}", a.0, a.1, b.1);
            if k != 1 || a.0 != "falloc-fuzzer" {
                assert_eq!(a.1[k].1, b.1[k].1, "{}", a.0);
            }
        }
    }
    assert_eq!(dc[0].1[2].0, 100, "{dc:?}");
    assert_eq!(entries(ddir.path()), entries(fdir.path()));
}

/// Which 4 KiB blocks of `path` hold anything but zeroes.
fn written_blocks(path: &Path) -> Vec<u64> {
    std::fs::read(path)
        .unwrap()
        .chunks(4096)
        .enumerate()
        .filter(|(_, c)| c.iter().any(|&b| b != 0))
        .map(|(i, _)| i as u64)
        .collect()
}

#[test]
fn multi_file_jobs_write_the_blocks_fio_writes_in_each_file() {
    require_root();
    let j = job("nrfiles.fio");
    let fdir = TempDir::new("fileops-nr-fio");
    let ddir = TempDir::new("fileops-nr-dl");
    let log = TempDir::new("fileops-nr-log");
    let iolog = log.join("io.log");
    let f = run_in(
        "fio",
        &j,
        fdir.path(),
        &[&format!("--write_iolog={}", iolog.display())],
    );
    let d = run_in("drivelab", &j, ddir.path(), &[]);
    assert_eq!(per_job(&d), per_job(&f));
    // fio's own log of what it wrote: file → blocks.
    let mut logged: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in std::fs::read_to_string(&iolog).unwrap().lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if let [_, file, "write", off, len] = w[..] {
            assert_eq!(len, "4096");
            let name = Path::new(file).file_name().unwrap().to_string_lossy();
            let v = logged.entry(name.into_owned()).or_default();
            v.push(off.parse::<u64>().unwrap() / 4096);
            v.sort();
        }
    }
    let (fe, de) = (entries(fdir.path()), entries(ddir.path()));
    assert_eq!(de, fe);
    // unlink=1: the 'gone' job's files are removed; the others stay.
    let names: Vec<&String> = de.keys().collect();
    assert_eq!(
        names,
        ["rr.0.0", "rr.0.1", "rr.0.2", "seq.0.0", "seq.0.1", "seq.0.2"]
    );
    for name in de.keys() {
        let want = logged.get(name).cloned().unwrap_or_default();
        assert_eq!(written_blocks(&fdir.join(name)), want, "fio {name}");
        assert_eq!(written_blocks(&ddir.join(name)), want, "drivelab {name}");
    }
    // roundrobin spreads 7 blocks 3/2/2; sequential fills the first file.
    assert_eq!(logged["rr.0.0"], [0, 1, 2]);
    assert_eq!(logged["seq.0.0"], [0, 1, 2, 3]);
    assert_eq!(logged["seq.0.1"], [0, 1, 2]);
    assert!(!logged.contains_key("seq.0.2"));
}

#[test]
fn filesize_ranges_give_each_file_a_size_in_the_range() {
    require_root();
    let ((f, fdir), (d, ddir)) = both("filesize-range.fio");
    for (v, dir, tool) in [(&f, &fdir, "fio"), (&d, &ddir, "drivelab")] {
        let e = entries(dir.path());
        assert_eq!(e.len(), 4, "{tool}: {e:?}");
        let mut total = 0;
        for (name, (_, size)) in &e {
            assert!(
                (8192..=65536).contains(size) && size % 4096 == 0,
                "{tool} {name}: {size}"
            );
            total += size;
        }
        // Each file written once over, whatever the order of files.
        assert_eq!(per_job(v)[0].1[1].1, total, "{tool}");
    }
}

#[test]
fn directory_engines_make_look_up_and_remove_directories() {
    require_root();
    let later = |n: &str| job(&format!("later/{n}"));
    let dir = TempDir::new("fileops-dirs");
    for (name, jobs, ios, left) in [
        ("dircreate-ioengine.fio", 3, 10, 30),
        ("dirstat-ioengine.fio", 6, 5, 30),
        ("dirdelete-ioengine.fio", 3, 20, 0),
    ] {
        let sub = dir.join(name);
        std::fs::create_dir(&sub).unwrap();
        let v = run_in("drivelab", &later(name), &sub, &[]);
        let c = per_job(&v);
        assert_eq!(c.len(), jobs, "{name}");
        for (job, dirs) in &c {
            assert_eq!(dirs[0], (ios, ios * 4096, ios), "{name} {job}");
        }
        let e = entries(&sub);
        assert_eq!(e.len(), left, "{name}: {e:?}");
        assert!(e.values().all(|(is_dir, _)| *is_dir), "{name}: {e:?}");
    }
}

#[test]
fn bad_file_options_are_refused_naming_the_key_and_nothing_is_created() {
    require_root();
    for (key, value) in [
        ("nrfiles", "0"),
        ("nr_files", "many"),
        ("openfiles", "0"),
        ("file_service_type", "sideways"),
        ("file_service_type", "random:0"),
        ("fallocate", "maybe"),
        ("stat_type", "fstat"),
        ("filesize", "64k-8k"),
        ("create_on_open", "perhaps"),
        ("unlink", "2"),
    ] {
        let dir = TempDir::new("fileops-bad");
        let p = dir.join("bad.fio");
        std::fs::write(
            &p,
            format!("[j]\nioengine=filecreate\nnrfiles=4\nfilesize=4k\n{key}={value}\n"),
        )
        .unwrap();
        let out = Command::new(BIN)
            .arg("run")
            .arg(&p)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}={value}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{key}={value}: {err}");
        // An alias is named by the option's name.
        let named = if key == "nr_files" { "nrfiles" } else { key };
        assert!(err.contains(named), "{key}={value}: {err}");
        assert!(
            entries(dir.path()).is_empty(),
            "{key}={value} created files"
        );
    }
}
