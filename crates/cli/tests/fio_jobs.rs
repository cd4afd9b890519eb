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

use drivelab_testkit::{json_after_notes, require_root, run, LoopDev, TempDir};
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

/// Every checksum drivelab computes: the writing job reads its blocks
/// back clean, and one byte changed afterwards fails a reading job at
/// that block, naming the checksum.
#[test]
fn verify_catches_a_block_changed_after_it_was_written() {
    require_root();
    let dir = TempDir::new("fio-jobs-verify");
    let target = dir.join("v.bin");
    for kind in [
        "crc32c", "crc32", "crc64", "crc16", "crc7", "md5", "sha1", "sha256", "sha512", "sha3-224",
        "sha3-256", "sha3-384", "sha3-512", "xxhash",
    ] {
        let common = format!(
            "[global]\nfilename={}\nsize=256k\nbs=4k\nverify={kind}\nioengine=psync\n",
            target.display()
        );
        let w = write(&dir, "w.fio", &format!("{common}[w]\nrw=write\n"));
        let (code, out, err) = drivelab(&w, &dir);
        assert_eq!(code, 0, "{kind}: {err}\n{out}");
        // The write job read everything back and checked it.
        assert!(out.contains("read:"), "{kind}: {out}");
        // Change one byte of the 10th block, then read and verify.
        let mut data = std::fs::read(&target).unwrap();
        data[9 * 4096 + 100] ^= 0xff;
        std::fs::write(&target, &data).unwrap();
        let r = write(&dir, "r.fio", &format!("{common}[r]\nrw=read\n"));
        let (code, out, err) = drivelab(&r, &dir);
        assert_eq!(
            code, 1,
            "{kind}: a corrupted block must fail the job: {err}\n{out}"
        );
        assert!(
            out.contains(&format!("verify ({kind}) failed at offset 36864")),
            "{out}"
        );
        std::fs::remove_file(&target).unwrap();
    }
}

#[test]
fn unsupported_fio_keys_are_refused_naming_the_key() {
    require_root();
    let dir = TempDir::new("fio-jobs-refuse");
    for (key, line) in [
        ("flow", "flow=1001"),
        ("verify", "verify=crc99"),
        ("exit_what", "exit_what=some"),
        ("number_ios", "number_ios=many"),
        ("thinktime", "thinktime=soon"),
        ("thinktime_blocks", "thinktime_blocks=0"),
        ("thinktime_spin", "thinktime=100\nthinktime_spin=1ms"),
        ("offset_increment", "offset_increment=far"),
        // zonemode=zbd on a file that is not zoned needs zonesize.
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

/// Run `tool` on `job` in `dir` (as `${DL_SCRATCH}`); its JSON.
fn run_in(tool: &str, job: &Path, dir: &Path) -> Value {
    let mut cmd = if tool == "fio" {
        let mut c = Command::new("fio");
        c.arg("--output-format=json").arg(job);
        c
    } else {
        let mut c = Command::new(BIN);
        c.arg("run").arg(job).arg("--output-format=json");
        c
    };
    let out = cmd
        .current_dir(dir)
        .env("DL_SCRATCH", dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{tool} failed ({}): {}\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    json_after_notes(tool, &stdout)
}

/// Per job, in order: (name, read ios, write ios, read bytes, write bytes).
fn per_job(v: &Value) -> Vec<(String, u64, u64, u64, u64)> {
    v["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            let n = |d: &str, k: &str| j[d][k].as_u64().unwrap_or(0);
            (
                j["jobname"].as_str().unwrap_or_default().to_string(),
                n("read", "total_ios"),
                n("write", "total_ios"),
                n("read", "io_bytes"),
                n("write", "io_bytes"),
            )
        })
        .collect()
}

#[test]
fn number_ios_stops_each_job_where_fio_does() {
    require_root();
    let job = jobs_dir().join("number-ios.fio");
    let fdir = TempDir::new("fio-nios-fio");
    let ddir = TempDir::new("fio-nios-dl");
    let fio = per_job(&run_in("fio", &job, fdir.path()));
    let dl = per_job(&run_in("drivelab", &job, ddir.path()));
    let ios: Vec<(String, u64)> = dl.iter().map(|j| (j.0.clone(), j.1 + j.2)).collect();
    assert_eq!(
        ios,
        vec![
            ("reads".to_string(), 37),
            ("writes".to_string(), 27),
            ("mixed".to_string(), 50)
        ]
    );
    // Same I/O count per job as fio; same bytes where the direction is fixed.
    let fio_ios: Vec<(String, u64)> = fio.iter().map(|j| (j.0.clone(), j.1 + j.2)).collect();
    assert_eq!(ios, fio_ios);
    assert_eq!(dl[..2], fio[..2]);
}

/// Which 4 KiB blocks of `path` hold anything but zeroes.
fn written_blocks(path: &Path) -> Vec<u64> {
    let data = std::fs::read(path).unwrap();
    data.chunks(4096)
        .enumerate()
        .filter(|(_, c)| c.iter().any(|&b| b != 0))
        .map(|(i, _)| i as u64)
        .collect()
}

#[test]
fn offset_increment_writes_the_blocks_fio_writes() {
    require_root();
    let job = jobs_dir().join("offset-increment.fio");
    let fdir = TempDir::new("fio-offinc-fio");
    let ddir = TempDir::new("fio-offinc-dl");
    let fio = run_in("fio", &job, fdir.path());
    let dl = run_in("drivelab", &job, ddir.path());
    assert_eq!(per_job(&dl), per_job(&fio));
    // Clone k writes 64 KiB from 8 KiB + k × 256 KiB: blocks 2-17, 66-81, 130-145.
    let want: Vec<u64> = (0..3u64)
        .flat_map(|k| (2 + 64 * k)..(18 + 64 * k))
        .collect();
    assert_eq!(written_blocks(&fdir.join("stripes.dat")), want);
    assert_eq!(written_blocks(&ddir.join("stripes.dat")), want);
}

#[test]
fn thinktime_bounds_the_iops_and_shows_in_the_job_options() {
    require_root();
    let job = jobs_dir().join("thinktime.fio");
    let fdir = TempDir::new("fio-think-fio");
    let ddir = TempDir::new("fio-think-dl");
    let fio = run_in("fio", &job, fdir.path());
    let dl = run_in("drivelab", &job, ddir.path());
    assert_eq!(per_job(&dl), per_job(&fio));
    // (job, thinktime as written, seconds, most I/Os between pauses): the
    // writer's thinktime_blocks=1 counts completed I/Os (fio 3.33's
    // thinktime_blocks_type=complete), so up to its iodepth of 4 go
    // between two pauses.
    for (k, shown, secs, blocks) in [(0, "1ms", 1e-3, 2.0), (1, "500", 500e-6, 4.0)] {
        let j = &dl["jobs"][k];
        assert_eq!(j["job options"]["thinktime"], shown, "{j}");
        assert_eq!(fio["jobs"][k]["job options"]["thinktime"], shown);
        // n I/Os with a pause after every `blocks` but the last: at least
        // (n / blocks - 1) pauses, so IOPS ≤ n / ((n / blocks - 1) × thinktime).
        let n = (j["read"]["total_ios"].as_u64().unwrap()
            + j["write"]["total_ios"].as_u64().unwrap()) as f64;
        let iops = j["read"]["iops"].as_f64().unwrap() + j["write"]["iops"].as_f64().unwrap();
        let bound = n / ((n / blocks - 1.0) * secs);
        assert!(
            n == 16.0 && iops > 0.0 && iops <= bound,
            "{k}: {iops} IOPS, bound {bound}"
        );
    }
}

#[test]
fn exitall_ends_the_other_jobs_as_fio_does() {
    require_root();
    let dir = TempDir::new("fio-exitall");
    let job = write(
        &dir,
        "x.fio",
        "[global]\ndirectory=${DL_SCRATCH}\nbs=4k\nsize=256k\nioengine=psync\n\
         [long]\nrw=read\ntime_based\nruntime=120\n\
         [short]\nrw=write\nexitall\nnumber_ios=40\nthinktime=1ms\n",
    );
    let fdir = TempDir::new("fio-exitall-fio");
    let ddir = TempDir::new("fio-exitall-dl");
    for v in [
        run_in("fio", &job, fdir.path()),
        run_in("drivelab", &job, ddir.path()),
    ] {
        let jobs = per_job(&v);
        assert_eq!(jobs[1].2, 40, "{jobs:?}");
        // The two-minute job ended with the short one (≥ 39 ms of think
        // time), long before its runtime, having read something.
        let long = &v["jobs"][0];
        let ms = long["read"]["runtime"].as_u64().unwrap();
        assert!(ms < 60_000 && jobs[0].1 > 0, "{ms} ms: {long}");
        assert_eq!(long["error"], 0);
        // Bare, it is left out of the job options, as fio does.
        assert!(v["jobs"][1]["job options"].get("exitall").is_none(), "{v}");
    }
}

#[test]
fn buffer_pattern_fills_every_write_as_fio_does() {
    require_root();
    let job = jobs_dir().join("buffer-pattern.fio");
    let fdir = TempDir::new("fio-bufpat-fio");
    let ddir = TempDir::new("fio-bufpat-dl");
    let fio = run_in("fio", &job, fdir.path());
    let dl = run_in("drivelab", &job, ddir.path());
    assert_eq!(per_job(&dl), per_job(&fio));
    // 0xdeadface "abcd" -12: each write holds it repeated from its first byte.
    let pattern = [
        0xde, 0xad, 0xfa, 0xce, b'a', b'b', b'c', b'd', 0xf4, 0xff, 0xff, 0xff,
    ];
    for (file, bs) in [("seq.dat", 4096usize), ("rand.dat", 8192)] {
        let one: Vec<u8> = pattern.iter().copied().cycle().take(bs).collect();
        let want: Vec<u8> = (0..65536 / bs).flat_map(|_| one.iter().copied()).collect();
        let f = std::fs::read(fdir.join(file)).unwrap();
        let d = std::fs::read(ddir.join(file)).unwrap();
        assert!(f == want, "{file}: fio's file is not the pattern per write");
        assert!(d == want, "{file}: drivelab's file differs from fio's");
    }
}

/// The number after which `key` ends in fio's text (`; 2 zone resets`).
fn count_before(text: &str, key: &str) -> Option<u64> {
    let i = text.find(key)?;
    text[..i]
        .split([' ', ';'])
        .rfind(|w| !w.is_empty())?
        .parse()
        .ok()
}

#[test]
fn zbd_trims_reset_zones_as_fio_does() {
    require_root();
    assert!(
        fio_available(),
        "fio is not installed (apt-get install fio)"
    );
    let job = jobs_dir().join("zbd/zbd-rand-write-trim-gc.fio");
    let devdir = TempDir::new("fio-zbdtrim-dev");
    let lo = LoopDev::new_in(&devdir, 8 << 20);
    let dir = TempDir::new("fio-zbdtrim");
    // fio says its zone resets only in its text: both formats at once.
    let out = Command::new("fio")
        .arg("--output-format=normal,json")
        .arg(&job)
        .env("DL_DEV", lo.dev())
        .current_dir(dir.path())
        .output()
        .expect("fio runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "fio: {text}");
    let (a, b) = (text.find('{').unwrap(), text.rfind('}').unwrap());
    let fio: Value = serde_json::from_str(&text[a..=b]).expect("fio's JSON");
    let fio_resets = count_before(&text, " zone resets");
    let out = Command::new(BIN)
        .args(["run", job.to_str().unwrap(), "--output-format=json"])
        .env("DL_DEV", lo.dev())
        .current_dir(dir.path())
        .output()
        .expect("drivelab runs");
    let dtext = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "drivelab: {dtext}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dl: Value = serde_json::from_str(&dtext).expect("drivelab's JSON");
    // group_reporting: one entry, the three jobs summed.
    let counts = |v: &Value| {
        let j = &v["jobs"][0];
        let n = |d: &str, k: &str| j[d][k].as_u64();
        (
            n("write", "total_ios"),
            n("write", "io_bytes"),
            n("trim", "total_ios"),
            n("trim", "io_bytes"),
        )
    };
    let (f, d) = (counts(&fio), counts(&dl));
    eprintln!(
        "fio {f:?}, {fio_resets:?} zone resets; drivelab {d:?}, {} zone resets",
        dl["jobs"][0]["zone_resets"]
    );
    // 4 + 8 writes of 64 KiB; 2 trims of one zone (io_size=2z).
    assert_eq!(f, (Some(12), Some(768 << 10), Some(2), Some(2 << 20)));
    assert_eq!(d, f, "drivelab's write and trim counts are fio's");
    // No zone fills (768 KiB written, 1 MiB zones): every reset is a trim
    // of a zone with data, in both tools.
    assert_eq!(fio_resets, Some(2), "{text}");
    assert_eq!(dl["jobs"][0]["zone_resets"].as_u64(), Some(2));
    // Nothing was discarded: the trims reset emulated zones.
    assert!(
        dl["device_check"][0]["verdict"] == "agrees",
        "{}",
        dl["device_check"]
    );

    // A trim must be a whole zone: refused by both, drivelab in one line.
    let bad = write(
        &dir,
        "bad.fio",
        &format!(
            "[t]\nfilename={}\nzonemode=zbd\nzonesize=1M\nrw=randtrim\nbs=64k\nsize=4z\n",
            lo.dev()
        ),
    );
    let fio_bad = Command::new("fio").arg(&bad).output().expect("fio runs");
    assert!(!fio_bad.status.success());
    let (code, out, err) = run(BIN, &["run", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("zone size"), "{err}");
}

#[test]
fn a_file_not_a_multiple_of_the_block_size_is_read_as_fio_does() {
    require_root();
    if !fio_available() {
        eprintln!("a_file_not_a_multiple_of_the_block_size_is_read_as_fio_does: no fio; skipped");
        return;
    }
    let job = jobs_dir().join("partial-block.fio");
    let fdir = TempDir::new("fio-tail-fio");
    let ddir = TempDir::new("fio-tail-dl");
    let fio = per_job(&run_in("fio", &job, fdir.path()));
    let dl = per_job(&run_in("drivelab", &job, ddir.path()));
    // A 10000-byte file: two whole 4 KiB blocks, read once each, never a
    // third I/O wrapped back to offset 0.
    let want = vec![
        ("make".to_string(), 0, 2, 0, 8192),
        ("seq".to_string(), 2, 0, 8192, 0),
        ("rand".to_string(), 2, 0, 8192, 0),
        ("past".to_string(), 2, 0, 8192, 0),
    ];
    assert_eq!(dl, want);
    assert_eq!(fio, want);
    for d in [&fdir, &ddir] {
        assert_eq!(std::fs::metadata(d.join("tail.dat")).unwrap().len(), 10000);
    }
}
