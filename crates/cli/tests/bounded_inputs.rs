//! Inputs that never end (`/dev/zero`, `/dev/urandom`), never start (a
//! FIFO nobody writes), are no file (a directory) or are larger than any
//! input of their kind, given to every command that reads a file: each is
//! refused with one line and exit status 2, quickly, in bounded memory (the
//! binary runs under an address-space limit and a wall-clock kill, so a
//! regression fails here instead of hanging the suite or eating the
//! machine). Then the numeric options that size buffers and queues, and
//! `filename` values with ':' in a device's name.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_testkit::{digest, diskstats, make_image, LoopDev, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
/// Address space the binary may map: far below what reading an endless
/// input would take, far above what a refusal needs.
const MEMORY: &str = "--as=1073741824";
/// Longest a refusal may take before the test kills the binary.
const WALL: Duration = Duration::from_secs(20);

/// How a limited run ended.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Run the binary in `cwd` under the memory limit, killed after [`WALL`].
fn run_limited(cwd: &Path, args: &[String]) -> Outcome {
    let out_path = cwd.join(".stdout");
    let err_path = cwd.join(".stderr");
    let start = Instant::now();
    let mut child = Command::new("prlimit")
        .arg(MEMORY)
        .arg("--")
        .arg(BIN)
        .arg("--no-store")
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("prlimit (util-linux) runs the binary");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > WALL {
            // The test's own child, by its id.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = start.elapsed();
    let read = |p: &Path| {
        let s = std::fs::read_to_string(p).unwrap_or_default();
        let _ = std::fs::remove_file(p);
        s
    };
    Outcome {
        code: status.and_then(|s| s.code()),
        stdout: read(&out_path),
        stderr: read(&err_path),
        took,
    }
}

/// Exit status 2, one line on stderr, nothing on stdout, within [`WALL`].
fn assert_refused(cwd: &Path, args: &[String]) -> String {
    let o = run_limited(cwd, args);
    assert!(o.took < WALL, "{args:?} was killed after {:?}", o.took);
    assert_eq!(o.code, Some(2), "{args:?}: {}{}", o.stderr, o.stdout);
    assert_eq!(o.stderr.trim().lines().count(), 1, "{args:?}: {}", o.stderr);
    assert!(o.stdout.is_empty(), "{args:?} printed: {}", o.stdout);
    o.stderr
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

/// A sparse file of `size` bytes.
fn sparse(p: &Path, size: u64) {
    std::fs::File::create(p).unwrap().set_len(size).unwrap();
}

/// The files every case reads, made in one temp dir.
struct Fixture {
    dir: TempDir,
    fifo: PathBuf,
    subdir: PathBuf,
    include_zero: PathBuf,
    include_cycle: PathBuf,
    image: PathBuf,
    cert: PathBuf,
    trace: PathBuf,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        let dir = TempDir::new(tag);
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        let subdir = dir.join("subdir");
        std::fs::create_dir(&subdir).unwrap();
        let include_zero = dir.join("include-zero.fio");
        std::fs::write(&include_zero, "[global]\ninclude /dev/zero\n[j]\nsize=1m\n").unwrap();
        let include_cycle = dir.join("include-cycle.fio");
        std::fs::write(&include_cycle, "[j]\ninclude b.inc\n").unwrap();
        std::fs::write(dir.join("b.inc"), "include include-cycle.fio\n").unwrap();
        let image = dir.join("target.img");
        make_image(&image, 4 << 20, &[]);
        let cert = dir.join("cert.json");
        std::fs::write(&cert, "{}\n").unwrap();
        let trace = dir.join("good.csv");
        std::fs::write(
            &trace,
            "128166372003061629,wdev,0,Read,3154152448,4096,2030\n",
        )
        .unwrap();
        Fixture {
            dir,
            fifo,
            subdir,
            include_zero,
            include_cycle,
            image,
            cert,
            trace,
        }
    }

    fn s(p: &Path) -> String {
        p.display().to_string()
    }
}

/// One command that reads an input: its arguments with `{}` where the
/// input goes, what the input is in its messages, its bound in bytes
/// (`None`: streamed), whether it is a job file (includes apply) and
/// whether a directory is a valid input of it.
struct Reader {
    args: Vec<String>,
    what: &'static str,
    bound: Option<u64>,
    job_file: bool,
    dir_ok: bool,
}

const MIB: u64 = 1 << 20;

fn readers(f: &Fixture) -> Vec<Reader> {
    let img = Fixture::s(&f.image);
    let cert = Fixture::s(&f.cert);
    let trace = Fixture::s(&f.trace);
    let html = Fixture::s(&f.dir.join("out.html"));
    let conv = Fixture::s(&f.dir.join("out.csv"));
    let r = |a: &[&str], what, bound, job_file, dir_ok| Reader {
        args: args(a),
        what,
        bound,
        job_file,
        dir_ok,
    };
    vec![
        r(&["run", "{}"], "job file", Some(4 * MIB), true, false),
        r(
            &["run", "--parse-only", "{}"],
            "job file",
            Some(4 * MIB),
            true,
            false,
        ),
        r(
            &["season", &img, "--workload", "{}"],
            "job file",
            Some(4 * MIB),
            true,
            false,
        ),
        r(
            &["test", &img, "--sequence", "{}"],
            "sequence file",
            Some(MIB),
            false,
            false,
        ),
        r(
            &["erase", "verify-cert", "{}"],
            "certificate",
            Some(64 * MIB),
            false,
            false,
        ),
        r(
            &["erase", "verify-cert", &cert, "--public-key", "{}"],
            "public key file",
            Some(64 << 10),
            false,
            false,
        ),
        r(
            &["erase", "verify-cert", &cert, "--trusted-keys", "{}"],
            "trust list",
            Some(MIB),
            false,
            true,
        ),
        r(
            &["report", "{}", "--html", &html],
            "result file",
            Some(256 * MIB),
            false,
            false,
        ),
        r(
            &["test", &img, "--step", "write", "--pattern", "file:{}"],
            "pattern file",
            Some(16 * MIB),
            false,
            false,
        ),
        r(
            &[
                "run",
                "--parse-only",
                "--filename=x",
                "--size=1m",
                "--rw=write",
                "--buffer_pattern='{}'",
            ],
            "pattern file",
            Some(16 * MIB),
            false,
            false,
        ),
        r(&["trace", "analyze", "{}"], "trace", None, false, false),
        r(
            &["trace", "convert", "{}", &conv],
            "trace",
            None,
            false,
            false,
        ),
        r(
            &["trace", "compare", &trace, "{}"],
            "trace",
            None,
            false,
            false,
        ),
        r(
            &["trace", "replay", "{}", "--target", &img],
            "trace",
            None,
            false,
            false,
        ),
        r(
            &["trace", "audit", "{}", "--target", &img],
            "trace",
            None,
            false,
            false,
        ),
    ]
}

fn with_input(a: &[String], input: &str) -> Vec<String> {
    a.iter().map(|s| s.replace("{}", input)).collect()
}

#[test]
fn every_reader_refuses_endless_blocking_and_non_file_inputs() {
    let f = Fixture::new("bounded-special");
    let before = digest(&f.image);
    for r in readers(&f) {
        let mut inputs: Vec<(String, &str)> = vec![
            ("/dev/zero".into(), "a character device"),
            ("/dev/urandom".into(), "a character device"),
            (Fixture::s(&f.fifo), "a FIFO"),
        ];
        if !r.dir_ok {
            inputs.push((Fixture::s(&f.subdir), "a directory"));
        }
        for (input, found) in inputs {
            let a = with_input(&r.args, &input);
            let err = assert_refused(f.dir.path(), &a);
            assert!(
                err.contains(found) && err.contains(r.what) && err.contains("regular file"),
                "{a:?}: {err}"
            );
        }
    }
    // Nothing reached the target of the commands that write.
    assert_eq!(digest(&f.image), before);
}

#[test]
fn job_files_refuse_an_include_of_dev_zero_and_an_include_cycle() {
    let f = Fixture::new("bounded-include");
    for r in readers(&f).iter().filter(|r| r.job_file) {
        let a = with_input(&r.args, &Fixture::s(&f.include_zero));
        let err = assert_refused(f.dir.path(), &a);
        assert!(
            err.contains("include")
                && err.contains("/dev/zero")
                && err.contains("character device"),
            "{a:?}: {err}"
        );
        let a = with_input(&r.args, &Fixture::s(&f.include_cycle));
        let err = assert_refused(f.dir.path(), &a);
        assert!(err.contains("cycle"), "{a:?}: {err}");
    }
    // A trusted-key directory whose *.pub is a FIFO is refused, not skipped
    // or waited on.
    let keys = f.dir.join("keys");
    std::fs::create_dir(&keys).unwrap();
    mkfifo(&keys.join("a.pub"));
    let err = assert_refused(
        f.dir.path(),
        &args(&[
            "erase",
            "verify-cert",
            &Fixture::s(&f.cert),
            "--trusted-keys",
            &Fixture::s(&keys),
        ]),
    );
    assert!(err.contains("a FIFO"), "{err}");
}

#[test]
fn inputs_over_their_bound_are_refused_naming_size_and_bound() {
    let f = Fixture::new("bounded-size");
    for (i, r) in readers(&f).iter().enumerate() {
        // The audit reads its trace only for a block device target; replay
        // reads it with the same reader.
        if r.bound.is_none() && r.args[1] == "audit" {
            continue;
        }
        let a = match r.bound {
            Some(bound) => {
                // Sparse: the bound is checked before anything is read.
                let big = f.dir.join(&format!("big-{i}"));
                sparse(&big, bound + 1);
                with_input(&r.args, &Fixture::s(&big))
            }
            None => {
                // A trace is streamed at any size, but a "line" of 2 MiB
                // without a line end (a copy of /dev/zero) is no trace.
                let endless = f.dir.join(&format!("endless-{i}.csv"));
                sparse(&endless, 2 * MIB);
                let mut a = with_input(&r.args, &Fixture::s(&endless));
                a.insert(2, "--format=msr".into());
                if r.args[1] == "convert" {
                    a[2] = "--from=msr".into();
                }
                if r.args[1] == "compare" {
                    a[2] = "--format2=msr".into();
                }
                a
            }
        };
        let err = assert_refused(f.dir.path(), &a);
        match r.bound {
            Some(_) => assert!(
                err.contains("more than the") && err.contains(r.what),
                "{a:?}: {err}"
            ),
            None => assert!(err.contains("longer than"), "{a:?}: {err}"),
        }
    }
}

#[test]
fn queue_depths_and_counts_have_upper_bounds() {
    let f = Fixture::new("bounded-numbers");
    let img = Fixture::s(&f.image);
    let trace = Fixture::s(&f.trace);
    let before = digest(&f.image);
    // Replay's depth and outstanding take the run's iodepth bounds.
    for flag in ["--iodepth", "--max-outstanding"] {
        for n in ["0", "32769", "99999999"] {
            let a = args(&["trace", "replay", &trace, "--target", &img, flag, n]);
            let err = assert_refused(f.dir.path(), &a);
            assert!(err.contains("1 to 32768"), "{a:?}: {err}");
        }
    }
    for (a, want) in [
        (
            vec!["trace", "audit", &trace, "--target", &img, "--iodepth", "0"],
            "1 to 32768",
        ),
        (
            vec!["run", "--parse-only", "--filename=x", "--iodepth=99999999"],
            "iodepth",
        ),
        (
            vec![
                "trace",
                "record",
                &img,
                "--output",
                "r.dlt",
                "--buffer-kb",
                "99999999999",
            ],
            "--buffer-kb",
        ),
        (
            vec!["test", &img, "--step", "read", "--retries", "4000000000"],
            "retries",
        ),
        (vec!["test", &img, "--step", "read", "--qd", "99999"], "qd"),
        (vec!["erase", &img, "--passes", "4000000000"], "--passes"),
        (vec!["erase", &img, "--retries", "4000000000"], "--retries"),
        (
            vec!["erase", &img, "--stall-timeout", "0"],
            "--stall-timeout must be more than 0",
        ),
        (
            vec!["erase", &img, "--stall-timeout", "soon"],
            "--stall-timeout \"soon\": give whole seconds",
        ),
        (
            vec!["season", &img, "--max-rounds", "99999999"],
            "--max-rounds",
        ),
        (vec!["season", &img, "--fill-passes", "0"], "--fill-passes"),
    ] {
        let err = assert_refused(f.dir.path(), &args(&a));
        assert!(err.contains(want), "{a:?}: {err}");
    }
    assert_eq!(digest(&f.image), before);
    assert!(!f.dir.join("r.dlt").exists());
}

#[test]
fn misleading_messages_say_what_is_wrong() {
    let f = Fixture::new("bounded-messages");
    let img = Fixture::s(&f.image);
    let bom = f.dir.join("bom.fio");
    std::fs::write(&bom, "\u{feff}[global]\nsize=1m\n[j]\nfilename=x\n").unwrap();
    // A UTF-8 byte-order mark before [global] is skipped.
    let o = run_limited(
        f.dir.path(),
        &args(&["run", "--parse-only", &Fixture::s(&bom)]),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    for (a, want) in [
        // Named: the arguments that were not given.
        (vec!["report"], "not provided: --html <FILE>, <INPUT>"),
        (vec!["trace", "replay", "t"], "not provided: --target"),
        (vec!["--bs=", "--filename=x"], "a block size such as 4k"),
        (
            vec!["--blockalign=0", "--filename=x"],
            "bad value '0' for blockalign",
        ),
        (
            vec!["season", &img, "--workload", "missing.fio"],
            "job file missing.fio: no such file",
        ),
        (
            vec!["trace", "audit", &Fixture::s(&f.trace), "--target", &img],
            "is not a block device: trace audit records",
        ),
    ] {
        let a: Vec<String> = if a[0].starts_with("--") {
            let mut v = args(&["run", "--parse-only"]);
            v.extend(args(&a));
            v
        } else {
            args(&a)
        };
        let err = assert_refused(f.dir.path(), &a);
        assert!(err.contains(want), "{a:?}: {err}");
        assert!(!err.contains("--record needs"), "{a:?}: {err}");
    }
    // --parse-only refuses what the run refuses before touching a target.
    for (text, want) in [
        (
            "[a]\nfilename=a.bin\nsize=1m\nwait_for=nobody\n",
            "wait_for=nobody",
        ),
        ("[a]\nfilename=a.bin\nsize=1m\nwait_for=a\n", "wait_for=a"),
        (
            "[a]\nfilename=a.bin\nsize=1m\nwait_for=b\n[b]\nfilename=b.bin\nsize=1m\n",
            "wait_for=b",
        ),
        (
            "[a]\nnrfiles=8\nsize=4k\nrw=write\n",
            "smaller than one 4096-byte transfer",
        ),
    ] {
        let job = f.dir.join("p.fio");
        std::fs::write(&job, text).unwrap();
        for a in [
            args(&["run", "--parse-only", &Fixture::s(&job)]),
            args(&["run", &Fixture::s(&job)]),
        ] {
            let err = assert_refused(f.dir.path(), &a);
            assert!(err.contains(want), "{a:?}: {err}");
        }
        assert!(!f.dir.join("a.bin").exists() && !f.dir.join("b.bin").exists());
    }
}

/// Every name in `dir` (to see that no stray file was made).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn colon_in_a_device_name_is_escaped_or_refused_never_split_into_new_files() {
    let f = Fixture::new("bounded-colon");
    let work = f.dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let lo = LoopDev::new_in(&f.dir, 8 << 20);
    // A by-path name with ':' that leads to the test's own loop device.
    let link = work.join("pci-0000:00:1f.2-ata-1");
    std::os::unix::fs::symlink(&lo.path, &link).unwrap();
    let plain = Fixture::s(&link);
    let escaped = plain.replace(':', "\\:");
    let job = work.join("colon.fio");
    let listed = names(&work);
    let write = |filename: &str| {
        args(&[
            "run",
            &format!("--filename={filename}"),
            "--rw=write",
            "--bs=64k",
            "--size=1m",
            "--direct=1",
            "--buffer_pattern=0x5a",
        ])
    };
    // Unescaped: refused, nothing written, nothing created.
    for (how, a) in [
        ("option", write(&plain)),
        ("parse-only", {
            let mut a = write(&plain);
            a.insert(1, "--parse-only".into());
            a
        }),
        ("job file", {
            std::fs::write(
                &job,
                format!("[j]\nfilename={plain}\nrw=write\nbs=64k\nsize=1m\n"),
            )
            .unwrap();
            args(&["run", &Fixture::s(&job)])
        }),
    ] {
        let listed = names(&work);
        let before = (digest(&lo.path), diskstats(&lo.name).2);
        let err = assert_refused(&work, &a);
        assert!(
            err.contains("'\\:'") && err.contains("exists as one path"),
            "{how}: {err}"
        );
        assert_eq!((digest(&lo.path), diskstats(&lo.name).2), before, "{how}");
        assert_eq!(names(&work), listed, "{how}: a stray file appeared");
    }
    std::fs::remove_file(&job).unwrap();
    assert_eq!(names(&work), listed);
    // Escaped, as fio takes it: the device behind the name is written.
    for (how, a) in [
        ("option", write(&escaped)),
        ("job file", {
            std::fs::write(
                &job,
                format!(
                    "[j]\nfilename={escaped}\nrw=write\nbs=64k\nsize=1m\nbuffer_pattern=0xa5\n"
                ),
            )
            .unwrap();
            args(&["run", &Fixture::s(&job)])
        }),
    ] {
        let listed = names(&work);
        let (d0, w0) = (digest(&lo.path), diskstats(&lo.name).2);
        let o = run_limited(&work, &a);
        assert_eq!(o.code, Some(0), "{how}: {}", o.stderr);
        assert_ne!(digest(&lo.path), d0, "{how}: the device was not written");
        assert!(
            diskstats(&lo.name).2 > w0,
            "{how}: no write reached the device"
        );
        assert_eq!(names(&work), listed, "{how}: a stray file appeared");
    }
}
