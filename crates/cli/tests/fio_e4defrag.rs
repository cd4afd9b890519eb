//! fio's `ioengine=e4defrag` (`donorname`, `inplace`): the job files in
//! tests/data/fio-jobs/e4defrag (after fio's examples/e4defrag.fio and
//! e4defrag2.fio, their first lines say what was shrunk) run under fio
//! 3.33 and drivelab, each on a fresh ext4 filesystem of its own (a loop
//! device this test attaches, formats, mounts, and unmounts and detaches
//! by name when done, on failure too), and both must report the same
//! moves and leave the files the same way: the target keeps its data, its
//! blocks are new (with `inplace=0` exactly the donor's former ones, and
//! the donor holds the target's former ones), the donor is left beside
//! it (empty after `inplace=1`). On tmpfs fio creates both files and fails
//! its first move with ENOTTY; drivelab refuses before creating anything.
//!
//! The tests need root (loop devices, mounts): without it they say so on
//! one line and pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_testkit::{effective_uid, sh, LoopDev, Mounted, TempDir, Tmpfs};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
const MIB: u64 = 1 << 20;
/// The target files' size in the job files.
const FILE: u64 = 4 * MIB;

fn root_or_skip(test: &str) -> bool {
    if effective_uid() == 0 {
        return true;
    }
    eprintln!("{test}: skipped: needs root (loop devices, mkfs.ext4, mount)");
    false
}

fn job(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fio-jobs/e4defrag")
        .join(name)
}

/// A fresh ext4 filesystem (4 KiB blocks) on a loop device of this test,
/// mounted on a directory of its own. Fields drop in order: unmount, then
/// detach the loop device (by name), then remove the directory.
struct Ext4 {
    _mounted: Mounted,
    _dev: LoopDev,
    mnt: PathBuf,
    _dir: TempDir,
}

impl Ext4 {
    fn new(tag: &str) -> Ext4 {
        let dir = TempDir::new(tag);
        let dev = LoopDev::new_in(&dir, 128 * MIB);
        sh("mkfs.ext4", &["-q", "-F", "-b", "4096", dev.dev()]);
        let mounted = Mounted::mount_in(dev.dev(), &dir, "mnt", None);
        let mnt = mounted.path.clone();
        Ext4 {
            _mounted: mounted,
            _dev: dev,
            mnt,
            _dir: dir,
        }
    }
}

/// Run `tool` (fio or drivelab) on `job` with `${DL_SCRATCH}` = `dir`:
/// (exit status, JSON, stderr).
fn run(tool: &str, job: &Path, dir: &Path) -> (i32, Value, String) {
    let mut cmd = if tool == "fio" {
        Command::new("fio")
    } else {
        let mut c = Command::new(BIN);
        c.args(["run", "--no-store"]);
        c
    };
    let out = cmd
        .arg("--output-format=json")
        .arg(job)
        .current_dir(dir)
        .env("DL_SCRATCH", dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool} (is it installed?): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // fio prints its warnings (and verify complaints) before the JSON.
    let start = stdout
        .find("\n{")
        .map(|i| i + 1)
        .filter(|_| !stdout.starts_with('{'))
        .unwrap_or(0);
    let json = serde_json::from_str(&stdout[start..]).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, stderr)
}

/// One job entry: name, then (error, write I/Os, write bytes, read I/Os).
type Counts = (String, (u64, u64, u64, u64));

/// Per job entry of fio's JSON.
fn per_job(v: &Value) -> Vec<Counts> {
    v["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("no jobs in {v}"))
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap_or_default().to_string(),
                (
                    j["error"].as_u64().unwrap_or(u64::MAX),
                    j["write"]["total_ios"].as_u64().unwrap_or(0),
                    j["write"]["io_bytes"].as_u64().unwrap_or(0),
                    j["read"]["total_ios"].as_u64().unwrap_or(0),
                ),
            )
        })
        .collect()
}

/// The physical block of each logical block of `path` (`filefrag -v`, in
/// filesystem blocks); None for a hole.
fn physical(path: &Path) -> Vec<Option<u64>> {
    let out = sh("filefrag", &["-v", path.to_str().unwrap()]);
    let blocks = std::fs::metadata(path).unwrap().len().div_ceil(4096) as usize;
    let mut v = vec![None; blocks];
    for line in out.lines() {
        let f: Vec<&str> = line.split(':').map(str::trim).collect();
        if f.len() < 4 || f[0].parse::<u64>().is_err() {
            continue;
        }
        let range = |s: &str| -> (u64, u64) {
            let (a, b) = s.split_once("..").unwrap_or((s, s));
            (a.trim().parse().unwrap(), b.trim().parse().unwrap())
        };
        let (l0, l1) = range(f[1]);
        let (p0, _) = range(f[2]);
        for l in l0..=l1 {
            if let Some(slot) = v.get_mut(l as usize) {
                *slot = Some(p0 + (l - l0));
            }
        }
    }
    v
}

/// Random data in `path` (`len` bytes), synced: the file a job moves
/// blocks under, with data to keep.
fn make_target(path: &Path, len: u64, seed: u64) -> Vec<u8> {
    let mut s = seed;
    let data: Vec<u8> = (0..len / 8)
        .flat_map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s ^ (s >> 29)).to_le_bytes()
        })
        .collect();
    std::fs::write(path, &data).unwrap();
    sh("sync", &[]);
    data
}

/// What one tool did with a single-job file on a fresh filesystem whose
/// `target` was made first.
struct Moved {
    json: Value,
    data_kept: bool,
    before: Vec<Option<u64>>,
    after: Vec<Option<u64>>,
    donor: Vec<Option<u64>>,
    donor_size: u64,
    files: Vec<String>,
}

fn moved(tool: &str, name: &str, target: &str, donor: &str) -> Moved {
    let fs = Ext4::new(&format!("e4d-{tool}"));
    let t = fs.mnt.join(target);
    let data = make_target(&t, FILE, 0x5eed);
    let before = physical(&t);
    let (code, json, err) = run(tool, &job(name), &fs.mnt);
    assert_eq!(code, 0, "{tool} {name}: {err}\n{json}");
    eprintln!(
        "{tool} {name}: (job, (error, writes, bytes, reads)): {:?}",
        per_job(&json)
    );
    sh("sync", &[]);
    let d = fs.mnt.join(donor);
    let mut files: Vec<String> = std::fs::read_dir(&fs.mnt)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lost+found")
        .collect();
    files.sort();
    Moved {
        json,
        data_kept: std::fs::read(&t).unwrap() == data,
        before,
        after: physical(&t),
        donor: physical(&d),
        donor_size: std::fs::metadata(&d).unwrap().len(),
        files,
    }
}

#[test]
fn inplace_0_gives_the_file_the_donors_blocks_as_fio_does() {
    if !root_or_skip("inplace_0_gives_the_file_the_donors_blocks_as_fio_does") {
        return;
    }
    let runs: BTreeMap<&str, Moved> = ["fio", "drivelab"]
        .into_iter()
        .map(|tool| (tool, moved(tool, "isolated.fio", "file1", "file.def")))
        .collect();
    let counts: Vec<_> = runs.values().map(|m| per_job(&m.json)).collect();
    // One job, 128 moves of 32 KiB, no error, no reads: in both tools.
    assert_eq!(
        counts[1],
        vec![("isolated-e4defrag".to_string(), (0, 128, FILE, 0))],
        "fio"
    );
    assert_eq!(counts[0], counts[1], "drivelab vs fio");
    for (tool, m) in &runs {
        assert_eq!(m.files, ["file.def", "file1"], "{tool}");
        assert!(m.data_kept, "{tool}: the target's data changed");
        assert!(
            m.before.iter().all(Option::is_some),
            "{tool}: {:?}",
            m.before
        );
        // Every block moved once: the target is on new blocks, and the
        // donor (allocated for the whole file) now holds the old ones.
        for (i, (b, a)) in m.before.iter().zip(&m.after).enumerate() {
            assert_ne!(b, a, "{tool}: block {i} did not move");
        }
        assert_eq!(m.donor, m.before, "{tool}: the donor holds other blocks");
        assert_eq!(m.donor_size, FILE, "{tool}");
    }
}

#[test]
fn inplace_1_allocates_and_frees_the_donor_per_write_as_fio_does() {
    if !root_or_skip("inplace_1_allocates_and_frees_the_donor_per_write_as_fio_does") {
        return;
    }
    let runs: BTreeMap<&str, Moved> = ["fio", "drivelab"]
        .into_iter()
        .map(|tool| (tool, moved(tool, "fuzzer.fio", "file", "file.def")))
        .collect();
    let counts: Vec<_> = runs.values().map(|m| per_job(&m.json)).collect();
    assert_eq!(
        counts[1],
        vec![("e4defrag-fuzzer-4k".to_string(), (0, 1024, FILE, 0))],
        "fio"
    );
    assert_eq!(counts[0], counts[1], "drivelab vs fio");
    for (tool, m) in &runs {
        assert_eq!(m.files, ["file", "file.def"], "{tool}");
        assert!(m.data_kept, "{tool}: the target's data changed");
        // Each random 4k block moved once onto blocks freshly allocated to
        // the donor, which is truncated to nothing after each move.
        for (i, (b, a)) in m.before.iter().zip(&m.after).enumerate() {
            assert!(a.is_some() && b != a, "{tool}: block {i}: {b:?} → {a:?}");
        }
        assert_eq!((m.donor_size, m.donor.len()), (0, 0), "{tool}");
    }
}

/// The jobs of a whole example file, run by each tool on its own fresh
/// filesystem: (exit status, per-job counts, files left, stderr).
type Whole = (
    i32,
    Vec<(String, (u64, u64, u64, u64))>,
    Vec<String>,
    String,
);

fn whole(tool: &str, name: &str) -> Whole {
    let fs = Ext4::new(&format!("e4d-all-{tool}"));
    let (code, json, err) = run(tool, &job(name), &fs.mnt);
    let mut files: Vec<String> = std::fs::read_dir(&fs.mnt)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lost+found" && !n.ends_with("-verify.state"))
        .collect();
    files.sort();
    eprintln!(
        "{tool} {name}: exit {code}, (job, (error, writes, bytes, reads)): {:?}",
        per_job(&json)
    );
    (code, per_job(&json), files, err)
}

#[test]
fn fios_e4defrag_examples_run_with_their_other_jobs() {
    if !root_or_skip("fios_e4defrag_examples_run_with_their_other_jobs") {
        return;
    }
    const EBUSY: u64 = 16;
    const EILSEQ: u64 = 84;
    // examples/e4defrag.fio: one defrag pass alone, then a time-based
    // defrag job beside four libaio verify=md5 writers of the same file.
    let (_, f, ffiles, ferr) = whole("fio", "e4defrag.fio");
    let (dc, d, dfiles, derr) = whole("drivelab", "e4defrag.fio");
    assert_eq!(dc, 0, "drivelab: {derr}");
    assert_eq!(dfiles, ffiles);
    assert_eq!(dfiles, ["file.def", "file1"]);
    let names = |v: &[Counts]| -> Vec<String> { v.iter().map(|(n, _)| n.clone()).collect() };
    assert_eq!(names(&d), names(&f));
    assert_eq!(d[0], f[0], "the first defrag pass");
    assert_eq!(d[0].1, (0, 128, FILE, 0));
    // The time-based defrag job moved blocks for its second in both.
    assert!(d[1].1 .1 > 0 && f[1].1 .1 > 0, "{d:?} {f:?}");
    assert_eq!(d[1].1 .0, 0, "{derr}");
    for (i, (_, (err, w, _, r))) in d.iter().enumerate().skip(2) {
        // drivelab's verify blocks depend only on their offset, so four
        // writers of one file agree; fio's carry each writer's seed, and
        // fio 3.33 fails these jobs with EILSEQ ("multiple writers may
        // overwrite blocks that belong to other jobs").
        assert_eq!(*err, 0, "drivelab job {i}: {derr}");
        assert!(*w > 0 && *r > 0, "drivelab job {i}");
        assert!([0, EILSEQ].contains(&f[i].1 .0), "fio job {i}: {ferr}");
    }

    // examples/e4defrag2.fio (group_reporting): four clones sharing one
    // donor, two jobs with a donor each, a random inplace=1 fuzzer, then
    // a fuzzer beside buffered and direct libaio verify writers.
    let (_, f, ffiles, ferr) = whole("fio", "e4defrag2.fio");
    let (_, d, dfiles, derr) = whole("drivelab", "e4defrag2.fio");
    assert!(
        derr.contains("time_based needs a runtime")
            && ferr.contains("time_based requires a runtime"),
        "{derr}\n{ferr}"
    );
    assert_eq!(dfiles, ffiles);
    assert_eq!(names(&d), names(&f));
    assert_eq!(d.len(), 4, "{d:?}");
    // The first three groups do the same moves, with no error.
    assert_eq!(d[..3], f[..3]);
    assert_eq!(d[0].1, (0, 4 * 128, 4 * FILE, 0));
    assert_eq!(d[1].1, (0, 2 * 128, 2 * FILE, 0));
    assert_eq!(d[2].1, (0, 1024, FILE, 0));
    // The last group: moves under buffered and direct writers of the same
    // file can meet pages in flight; the kernel then answers EBUSY, which
    // ends the defrag job in both tools (continue_on_error passes only
    // EIO and EILSEQ, as fio's), and fio's writers fail verify as above.
    assert!([0, EBUSY].contains(&d[3].1 .0), "{derr}");
    assert!([0, EBUSY, EILSEQ].contains(&f[3].1 .0), "{ferr}");
    assert!(d[3].1 .1 > 0 && d[3].1 .3 > 0, "{d:?}");
}

#[test]
fn a_defrag_job_outside_ext4_is_refused_before_anything_is_written() {
    if !root_or_skip("a_defrag_job_outside_ext4_is_refused_before_anything_is_written") {
        return;
    }
    let dir = TempDir::new("e4d-tmpfs");
    let fs = Tmpfs::mount_in(&dir, "tmpfs", 32 * MIB);
    let mnt = fs.path.clone();
    let listing = |p: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    for name in ["isolated.fio", "fuzzer.fio"] {
        let out = Command::new(BIN)
            .args(["run", "--no-store"])
            .arg(job(name))
            .current_dir(&mnt)
            .env("DL_SCRATCH", &mnt)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        let line = err.trim();
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(
            line.contains("tmpfs") && line.contains("ext4") && line.contains("directory="),
            "{line}"
        );
        assert!(listing(&mnt).is_empty(), "{name}: {:?}", listing(&mnt));
    }
    // fio creates the file and the donor, then fails the first move.
    let (code, json, err) = run("fio", &job("isolated.fio"), &mnt);
    assert_ne!(code, 0, "{err}");
    assert_eq!(
        json["jobs"][0]["error"].as_u64(),
        Some(25),
        "ENOTTY: {json}"
    );
    assert_eq!(listing(&mnt), ["file.def", "file1"]);
}

#[test]
fn fios_e4defrag_examples_parse() {
    // The copies here always; fio's own files too when extracted (issue
    // 17's /tmp/fioex/examples, or FIO_EXAMPLES).
    let examples = std::env::var_os("FIO_EXAMPLES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/fioex/examples"));
    let mut files = vec![job("e4defrag.fio"), job("e4defrag2.fio")];
    for n in ["e4defrag.fio", "e4defrag2.fio"] {
        let p = examples.join(n);
        if p.exists() {
            files.push(p);
        } else {
            eprintln!("{}: not found; parsing the copies only", p.display());
        }
    }
    for f in files {
        let out = Command::new(BIN)
            .args(["run", "--parse-only", "--no-store"])
            .arg(&f)
            .current_dir(f.parent().unwrap())
            .env("DL_SCRATCH", "/nonexistent-scratch")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn defrag_options_refuse_bad_values_naming_the_key() {
    for (args, key) in [
        (&["--ioengine=e4defrag", "--inplace=2"][..], "inplace"),
        (
            &["--ioengine=e4defrag", "--rw=randrw", "--donorname=d"][..],
            "rw=write",
        ),
        (&["--ioengine=e4defrag", "--rw=write"][..], "donorname="),
    ] {
        let dir = TempDir::new("e4d-bad");
        let out = Command::new(BIN)
            .args(["run", "--no-store", "--filename=f", "--size=1m"])
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(key) && err.trim().lines().count() == 1,
            "{err}"
        );
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "{args:?}"
        );
    }
}
