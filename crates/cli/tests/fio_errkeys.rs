//! fio's error policy, verify extras and dedupe buffers, each run by fio
//! 3.33 and by drivelab on the same job in the same test and compared:
//! writes that fail for real (ENOSPC on a tmpfs the test mounts and fills)
//! gone past with `continue_on_error`/`ignore_error` (`total_err`,
//! `first_error`, `error`, I/O counts, whether the job went on); corrupted
//! blocks found and dumped under `continue_on_error=verify` and stopped at
//! under `verify_fatal`; `verify_backlog` interleaving its checks with the
//! writes as fio does (the order of directions in the latency logs); and the
//! duplicate-block and compression ratios of what `dedupe_*` and
//! `buffer_compress_percentage` wrote.

mod fio_common;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use drivelab_testkit::{require_root, run, sh, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn job_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fio-jobs")
        .join(name)
}

fn require_fio() {
    let ok = Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "fio is not installed; these tests compare drivelab with it (apt-get install fio)"
    );
}

/// One tool's run: exit status, its JSON, stderr.
struct Ran {
    code: i32,
    json: Value,
    stderr: String,
}

/// Run `tool` ("fio" or "drivelab") on `job` with `args`, in `cwd`, with
/// `${DL_SCRATCH}` set to `scratch`.
fn run_tool(tool: &str, job: &Path, args: &[&str], cwd: &Path, scratch: &Path) -> Ran {
    let mut cmd = if tool == "fio" {
        Command::new("fio")
    } else {
        let mut c = Command::new(BIN);
        c.arg("run");
        c
    };
    cmd.arg(job)
        .arg("--output-format=json")
        .args(args)
        .current_dir(cwd)
        .env("DL_SCRATCH", scratch);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // fio prints a fatal error's line before its JSON.
    let start = stdout.find('{').unwrap_or(0);
    let json: Value = serde_json::from_str(&stdout[start..])
        .unwrap_or_else(|e| panic!("{tool} {}: not JSON ({e}): {stdout}", job.display()));
    Ran {
        code: out.status.code().unwrap_or(-1),
        json,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop.
struct Tmpfs(TempDir);

impl Tmpfs {
    fn new(tag: &str, size: &str) -> Tmpfs {
        let d = TempDir::new(tag);
        let p = d.path().to_str().unwrap().to_string();
        sh(
            "mount",
            &["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", &p],
        );
        Tmpfs(d)
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// Empty the directory `dir`.
fn clear(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let _ = std::fs::remove_file(e.path());
    }
}

/// A sparse file of `size` bytes (both tools then write into it without
/// laying it out first).
fn sparse(path: &Path, size: u64) {
    let f = std::fs::File::create(path).unwrap();
    f.set_len(size).unwrap();
}

fn job_of<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {v}"))
}

/// The keys both tools must agree on for one job.
fn error_keys(j: &Value) -> (Value, Value, Value, Value, Value, Value, Value) {
    (
        j["error"].clone(),
        j["total_err"].clone(),
        j["first_error"].clone(),
        j["read"]["total_ios"].clone(),
        j["write"]["total_ios"].clone(),
        j["read"]["io_bytes"].clone(),
        j["write"]["io_bytes"].clone(),
    )
}

#[test]
fn enospc_on_a_full_tmpfs_is_gone_past_as_fio_does() {
    require_root();
    require_fio();
    // 1 MiB of space for a 2 MiB file: the second half of the writes fail
    // with ENOSPC.
    let fs = Tmpfs::new("errkeys-enospc", "1m");
    let cwd = TempDir::new("errkeys-enospc-cwd");
    let job = job_file("enospc-pressure.fio");
    let file = fs.path().join("aio-dio-verifier");
    let mut seen = Vec::new();
    for tool in ["fio", "drivelab"] {
        clear(fs.path());
        clear(cwd.path());
        sparse(&file, 2 << 20);
        let lat = cwd.join(tool);
        let r = run_tool(
            tool,
            &job,
            &[&format!("--write_lat_log={}", lat.display())],
            cwd.path(),
            fs.path(),
        );
        assert_eq!(r.code, 0, "{tool}: {}", r.stderr);
        let j = job_of(&r.json, "aio-dio-verifier");
        seen.push((
            error_keys(j),
            fio_common::lat_log_directions(&cwd.join(&format!("{tool}_clat.1.log"))),
        ));
    }
    let (fio, dl) = (&seen[0], &seen[1]);
    assert_eq!(fio.0, dl.0, "error keys and counts: fio vs drivelab");
    assert_eq!(fio.1, dl.1, "verify_backlog's reads among the writes");
    // The job went on past every ENOSPC: 256 writes succeeded, 256 failed,
    // and each written block was read back once.
    assert_eq!(fio.0 .1, 256, "{:?}", fio.0);
    assert_eq!(fio.0 .2, 28);
    assert_eq!(fio.0 .4, 512);
    assert_eq!(fio.0 .3, 256);
}

#[test]
fn enospc_outside_ignore_error_ends_the_job_in_both() {
    require_root();
    require_fio();
    let fs = Tmpfs::new("errkeys-enospc-stop", "1m");
    let cwd = TempDir::new("errkeys-enospc-stop-cwd");
    // Only ignore_error's list is dropped: continue_on_error=write passes
    // EIO alone, so the first ENOSPC ends the job.
    let text = std::fs::read_to_string(job_file("enospc-pressure.fio")).unwrap();
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("ignore_error"))
        .map(|l| format!("{l}\n"))
        .collect();
    let job = cwd.join("stop.fio");
    std::fs::write(&job, text).unwrap();
    let file = fs.path().join("aio-dio-verifier");
    let mut seen = Vec::new();
    for tool in ["fio", "drivelab"] {
        clear(fs.path());
        sparse(&file, 2 << 20);
        let r = run_tool(tool, &job, &[], cwd.path(), fs.path());
        assert_eq!(r.code, 1, "{tool} must fail: {}", r.stderr);
        let j = job_of(&r.json, "aio-dio-verifier");
        assert_eq!(j["error"], 28, "{tool}");
        assert_eq!(j["total_err"], 1, "{tool}");
        assert_eq!(j["first_error"], 28, "{tool}");
        seen.push(j["write"]["io_bytes"].clone());
    }
    assert_eq!(seen[0], seen[1], "bytes written before the job ended");
    // drivelab names the failed write's blocks.
    clear(fs.path());
    sparse(&file, 2 << 20);
    let r = run_tool("drivelab", &job, &[], cwd.path(), fs.path());
    let e = &job_of(&r.json, "aio-dio-verifier")["errors"][0];
    assert_eq!(e["op"], "write");
    assert_eq!(e["errno"], 28);
    assert!(e["first_lba"].as_u64().is_some(), "{e}");
}

/// Write `file` with `verify=crc32c` (no check), then corrupt the blocks at
/// `bad` offsets.
fn write_then_corrupt(tool: &str, dir: &Path, bad: &[u64]) {
    let w = dir.join("w.fio");
    std::fs::write(
        &w,
        "[w]\nfilename=${DL_SCRATCH}/v.dat\nsize=1m\nbs=4k\nrw=write\nverify=crc32c\ndo_verify=0\n",
    )
    .unwrap();
    let r = run_tool(tool, &w, &[], dir, dir);
    assert_eq!(r.code, 0, "{tool}: {}", r.stderr);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("v.dat"))
        .unwrap();
    for &o in bad {
        use std::io::{Seek, SeekFrom};
        f.seek(SeekFrom::Start(o + 100)).unwrap();
        f.write_all(b"corrupt!").unwrap();
    }
}

fn dumps(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".received") || n.ends_with(".expected"))
        .collect();
    v.sort();
    v
}

#[test]
fn corrupted_blocks_are_counted_dumped_or_fatal_as_in_fio() {
    require_root();
    require_fio();
    let bad = [40_960u64, 409_600, 700_416];
    let read_job = "[r]\nfilename=${DL_SCRATCH}/v.dat\nsize=1m\nbs=4k\nrw=read\nverify=crc32c\nverify_dump=1\ncontinue_on_error=verify\n";
    let mut seen = Vec::new();
    for tool in ["fio", "drivelab"] {
        let dir = TempDir::new(&format!("errkeys-verify-{tool}"));
        write_then_corrupt(tool, dir.path(), &bad);
        let r_job = dir.join("r.fio");
        std::fs::write(&r_job, read_job).unwrap();
        let r = run_tool(tool, &r_job, &[], dir.path(), dir.path());
        // Verify errors gone past: fio's exit status is 0, `error` the first.
        assert_eq!(r.code, 0, "{tool}: {}", r.stderr);
        let j = job_of(&r.json, "r");
        seen.push((error_keys(j), dumps(dir.path())));
        // verify_fatal ends the job at the first bad block. (A job file's
        // own values win over fio's command line, so it goes in the file.)
        std::fs::write(&r_job, format!("{read_job}verify_fatal=1\n")).unwrap();
        let r = run_tool(tool, &r_job, &[], dir.path(), dir.path());
        // fio ends the job there, and the run still succeeds: the error is
        // one continue_on_error passes.
        assert_eq!(r.code, 0, "{tool} with verify_fatal: {}", r.stderr);
        let j = job_of(&r.json, "r");
        assert_eq!(j["error"], 84, "{tool}");
        assert_eq!(j["total_err"], 1, "{tool}");
        let read = j["read"]["total_ios"].as_u64().unwrap();
        assert!(read < 256, "{tool} read on after verify_fatal: {read}");
    }
    assert_eq!(seen[0], seen[1], "fio vs drivelab");
    let (keys, files) = &seen[0];
    assert_eq!(
        (keys.0.clone(), keys.1.clone(), keys.2.clone()),
        (84.into(), 3.into(), 84.into())
    );
    assert_eq!(keys.3, 256, "every block read: the job went on");
    let want: Vec<String> = {
        let mut v: Vec<String> = bad
            .iter()
            .flat_map(|o| [format!("v.dat.{o}.expected"), format!("v.dat.{o}.received")])
            .collect();
        v.sort();
        v
    };
    assert_eq!(files, &want);
}

#[test]
fn verify_backlog_checks_as_it_writes_as_fio_does() {
    require_root();
    require_fio();
    // cross-stripe-verify.fio's layout (two jobs on their own stretch of
    // one file) with whole stretches written, and a batch smaller than the
    // backlog: after 3 writes, 2 checks, then writes until 3 wait again.
    let text = "[global]\nbs=16k\nrw=write\nverify=crc32c\nfilename=${DL_SCRATCH}/stripes\nsize=1m\nverify_backlog=3\nverify_backlog_batch=2\noffset_increment=4m\noffset=120k\nverify_dump=1\n\n[write-verify]\nnumjobs=2\n";
    let mut seen = Vec::new();
    for tool in ["fio", "drivelab"] {
        let dir = TempDir::new(&format!("errkeys-backlog-{tool}"));
        let job = dir.join("backlog.fio");
        std::fs::write(&job, text).unwrap();
        let r = run_tool(tool, &job, &["--write_lat_log=lat"], dir.path(), dir.path());
        assert_eq!(r.code, 0, "{tool}: {}", r.stderr);
        let jobs = r.json["jobs"].as_array().unwrap();
        seen.push((
            jobs.iter().map(error_keys).collect::<Vec<_>>(),
            fio_common::lat_log_directions(&dir.join("lat_clat.1.log")),
            fio_common::lat_log_directions(&dir.join("lat_clat.2.log")),
        ));
    }
    assert_eq!(seen[0], seen[1], "fio vs drivelab");
    // Every written block read back once: 64 of each per job.
    assert_eq!(seen[0].0[0].3, 64);
    assert_eq!(seen[0].0[0].4, 64);
    assert_eq!(&seen[0].1[..3], &[(1, 3), (0, 2), (1, 2)]);
}

/// (duplicate fraction, gzip ratio) of 4 KiB blocks of `files` together.
fn ratios(files: &[PathBuf]) -> (f64, f64) {
    let mut blocks: HashSet<Vec<u8>> = HashSet::new();
    let mut n = 0usize;
    let mut all = Vec::new();
    for f in files {
        let d = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for b in d.chunks(4096) {
            blocks.insert(b.to_vec());
            n += 1;
        }
        all.extend_from_slice(&d);
    }
    let mut gz = Command::new("gzip")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip");
    let mut stdin = gz.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&all).map(|_| all.len()));
    let out = gz.wait_with_output().unwrap();
    let len = writer.join().unwrap().unwrap();
    (
        1.0 - blocks.len() as f64 / n as f64,
        out.stdout.len() as f64 / len as f64,
    )
}

#[test]
fn dedupe_and_compression_ratios_match_fio() {
    require_root();
    require_fio();
    let global = std::fs::read_to_string(job_file("dedupe-global.fio")).unwrap();
    // The same two jobs repeating their last unique buffer, 1k chunks a
    // quarter zeros (a job file's values win over fio's command line, so
    // the variant is a file of its own).
    let repeat = "[global]\ndirectory=${DL_SCRATCH}\nsize=8m\ndedupe_percentage=30\nblocksize=4k\nrw=write\nbuffer_compress_percentage=25\nbuffer_compress_chunk=1k\n\n[a]\n\n[b]\n";
    let jobs: [(&str, &str, f64, f64); 2] = [
        ("dedupe-global.fio", global.as_str(), 0.5, 0.5),
        ("repeat", repeat, 0.3, 0.25),
    ];
    for (name, text, asked, zeros) in jobs {
        let args: [&str; 0] = [];
        let mut seen = Vec::new();
        for tool in ["fio", "drivelab"] {
            let dir = TempDir::new(&format!("errkeys-dedupe-{tool}"));
            let job = dir.join("dedupe.fio");
            std::fs::write(&job, text).unwrap();
            let r = run_tool(tool, &job, &args, dir.path(), dir.path());
            assert_eq!(r.code, 0, "{tool}: {}", r.stderr);
            let (a, b) = (dir.join("a.0.0"), dir.join("b.0.0"));
            seen.push([
                ratios(std::slice::from_ref(&a)),
                ratios(std::slice::from_ref(&b)),
                ratios(&[a, b]),
            ]);
        }
        for (i, (f, d)) in seen[0].iter().zip(&seen[1]).enumerate() {
            assert!(
                (f.0 - d.0).abs() < 0.06,
                "{name} part {i}: duplicate fraction fio {:.3}, drivelab {:.3}",
                f.0,
                d.0
            );
            assert!(
                (f.1 - d.1).abs() < 0.05,
                "{name} part {i}: gzip ratio fio {:.3}, drivelab {:.3}",
                f.1,
                d.1
            );
            // Random bytes do not compress: what gzip keeps is about the
            // random share of the unique blocks.
            assert!(d.1 < 1.0 - zeros + 0.08, "{name} part {i}: {:.3}", d.1);
        }
        // The two files together: the asked share of duplicate blocks.
        let both = seen[1][2].0;
        assert!(
            (both - asked).abs() < 0.06,
            "{name}: drivelab duplicate fraction {both:.3}, asked {asked}"
        );
    }
}

#[test]
fn bad_values_exit_2_naming_the_key() {
    for (key, value) in [
        ("continue_on_error", "sometimes"),
        ("ignore_error", ",ENOSUCH"),
        ("error_dump", "maybe"),
        ("verify_backlog", "-1"),
        ("verify_fatal", "2"),
        ("verify_async", "x"),
        ("dedupe_percentage", "101"),
        ("dedupe_mode", "often"),
        ("dedupe_working_set_percentage", "200"),
        ("buffer_compress_percentage", "150"),
    ] {
        let arg = format!("--{key}={value}");
        let (code, out, err) = run(
            BIN,
            &[
                "run",
                "--name=x",
                "--filename=/nonexistent/x",
                "--size=1m",
                &arg,
            ],
        );
        assert_eq!(code, 2, "{arg}: {out}{err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{arg}: {err}");
        assert!(lines[0].contains(key), "{arg}: {err}");
    }
}
