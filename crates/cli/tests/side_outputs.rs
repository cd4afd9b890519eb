//! Side outputs go through one function (`drivelab_device::output`), as
//! writes to a device go through the claim: every command's every output
//! option, given a device, a device's backing file, a symlink to either, a
//! character device or the command's own input, is refused before anything
//! is written (exit status 2, one line in the claim's words), and the
//! device's bytes and write counter are unchanged. A failed trace convert
//! leaves no output and never empties an old one; an existing export is
//! not overwritten unless asked; a full certificate directory leaves no
//! journal behind.

use std::os::unix::fs::{symlink, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_testkit::{
    digest, diskstats, make_image, mkfs_ext4, run, LoopDev, Mounted, TempDir, Tmpfs,
};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/traces");

/// An ext4 image of 8 MiB, attached.
fn ext4_loop(dir: &TempDir, name: &str) -> LoopDev {
    let img = dir.join(name);
    make_image(&img, 8 << 20, &[]);
    mkfs_ext4(img.to_str().unwrap());
    LoopDev::attach(&img, &[])
}

/// One kind of unsafe place: what the output option is given, and what
/// must stay unchanged (bytes of `watch`, the write counter of `dev`).
struct Target {
    kind: String,
    path: PathBuf,
    watch: PathBuf,
    dev: Option<String>,
}

/// The unsafe targets every output is tried on, plus the symlinks to them.
struct Bench {
    cwd: PathBuf,
    targets: Vec<Target>,
    input_trace: PathBuf,
    input_result: PathBuf,
    input_file: PathBuf,
    cert: PathBuf,
}

fn bench(dir: &TempDir, mounted: &LoopDev, sig: &LoopDev, held: &LoopDev) -> Bench {
    let mut targets = Vec::new();
    let mut add = |kind: &str, path: &Path, watch: &Path, dev: Option<&str>| {
        targets.push(Target {
            kind: kind.into(),
            path: path.to_path_buf(),
            watch: watch.to_path_buf(),
            dev: dev.map(String::from),
        })
    };
    add(
        "mounted ext4 loop",
        &mounted.path,
        &mounted.backing,
        Some(&mounted.name),
    );
    add(
        "loop with an ext4 signature",
        &sig.path,
        &sig.backing,
        Some(&sig.name),
    );
    add(
        "loop held O_EXCL",
        &held.path,
        &held.backing,
        Some(&held.name),
    );
    add(
        "backing file of a mounted loop",
        &mounted.backing,
        &mounted.backing,
        Some(&mounted.name),
    );
    add(
        "character device",
        Path::new("/dev/null"),
        Path::new("/dev/null"),
        None,
    );
    let base: Vec<(String, PathBuf, PathBuf, Option<String>)> = targets
        .iter()
        .map(|t| {
            (
                t.kind.clone(),
                t.path.clone(),
                t.watch.clone(),
                t.dev.clone(),
            )
        })
        .collect();
    for (i, (kind, path, watch, dev)) in base.into_iter().enumerate() {
        let link = dir.join(&format!("link-{i}"));
        symlink(&path, &link).unwrap();
        targets.push(Target {
            kind: format!("symlink to {kind}"),
            path: link,
            watch,
            dev,
        });
    }
    let input_trace = dir.join("in.trace");
    std::fs::copy(format!("{SAMPLES}/tpcc-small.trace"), &input_trace).unwrap();
    let input_file = dir.join("target.bin");
    make_image(&input_file, 1 << 20, &[(0, b"target bytes")]);
    let input_result = dir.join("result.json");
    let (code, _, err) = run(
        BIN,
        &[
            "run",
            "--ioengine=null",
            "--filename=x",
            "--size=1m",
            "--output-format=json",
            &format!("--output={}", input_result.display()),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let cert = dir.join("cert.json");
    std::fs::write(&cert, b"{\"not\": \"a certificate\"}\n").unwrap();
    Bench {
        cwd: dir.path().to_path_buf(),
        targets,
        input_trace,
        input_result,
        input_file,
        cert,
    }
}

/// One output option of one command: its arguments with the output at
/// `P`, and the input it reads (for the own-input case), if any.
struct Case {
    name: &'static str,
    args: Vec<String>,
    input: Option<PathBuf>,
    /// For fio's logs: the argument holds LOGPREFIX, and the file is
    /// LOGPREFIX followed by this.
    log: Option<&'static str>,
}

fn case(name: &'static str, args: &[&str], input: Option<&Path>) -> Case {
    Case {
        name,
        args: args.iter().map(|s| s.to_string()).collect(),
        input: input.map(Path::to_path_buf),
        log: None,
    }
}

/// Every file output of every command, with `P` where the path goes.
fn file_cases(b: &Bench) -> Vec<Case> {
    let trace = b.input_trace.to_str().unwrap();
    let target = b.input_file.to_str().unwrap();
    let result = b.input_result.to_str().unwrap();
    let cert = b.cert.to_str().unwrap();
    let f = format!("--filename={target}");
    let null = ["--ioengine=null", "--filename=x", "--size=1m"];
    let run_with = |o: &str| -> Vec<String> {
        let mut v = vec!["run".to_string()];
        v.extend(null.iter().map(|s| s.to_string()));
        v.push(o.to_string());
        v
    };
    let mut v = vec![
        Case {
            name: "run --output",
            args: vec![
                "run".into(),
                f.clone(),
                "--size=1m".into(),
                "--rw=write".into(),
                "--output=P".into(),
            ],
            input: Some(b.input_file.clone()),
            log: None,
        },
        Case {
            name: "run --write_iolog",
            args: vec![
                "run".into(),
                f.clone(),
                "--size=1m".into(),
                "--rw=write".into(),
                "--write_iolog=P".into(),
            ],
            input: Some(b.input_file.clone()),
            log: None,
        },
        Case {
            name: "run --store",
            args: run_with("--store=P"),
            input: None,
            log: None,
        },
        case("devices --output", &["devices", "--output", "P"], None),
        case("history --output", &["history", "--output", "P"], None),
        case("show --output", &["show", "1", "--output", "P"], None),
        case(
            "compare --output",
            &["compare", "1", "1", "--output", "P"],
            None,
        ),
        case(
            "test --output",
            &["test", target, "--step", "read", "--output", "P"],
            Some(&b.input_file),
        ),
        case(
            "test --log",
            &["test", target, "--step", "read", "--log", "P"],
            Some(&b.input_file),
        ),
        case(
            "erase --output",
            &["erase", "/nonexistent-drivelab-target", "--output", "P"],
            None,
        ),
        case(
            "erase verify-cert --output",
            &["erase", "verify-cert", cert, "--output", "P"],
            Some(&b.cert),
        ),
        case(
            "season --output",
            &["season", "/nonexistent-drivelab-target", "--output", "P"],
            None,
        ),
        case(
            "trace analyze --output",
            &["trace", "analyze", trace, "--output", "P"],
            Some(&b.input_trace),
        ),
        case(
            "trace convert OUT",
            &["trace", "convert", trace, "P", "--to", "fio"],
            Some(&b.input_trace),
        ),
        case(
            "trace convert --output",
            &["trace", "convert", trace, "out.iolog", "--output", "P"],
            Some(&b.input_trace),
        ),
        case(
            "trace record --output",
            &[
                "trace",
                "record",
                "/dev/null",
                "--output",
                "P",
                "--to",
                "native",
                "--duration",
                "1",
            ],
            None,
        ),
        case(
            "trace compare --output",
            &["trace", "compare", trace, trace, "--output", "P"],
            Some(&b.input_trace),
        ),
        case(
            "trace replay --record",
            &[
                "trace", "replay", trace, "--target", target, "--record", "P",
            ],
            Some(&b.input_trace),
        ),
        case(
            "trace replay --output",
            &[
                "trace", "replay", trace, "--target", target, "--output", "P",
            ],
            Some(&b.input_file),
        ),
        case(
            "trace audit --record",
            &["trace", "audit", trace, "--target", target, "--record", "P"],
            Some(&b.input_trace),
        ),
        case(
            "trace audit --output",
            &["trace", "audit", trace, "--target", target, "--output", "P"],
            Some(&b.input_file),
        ),
        case(
            "report --html",
            &["report", result, "--html", "P"],
            Some(&b.input_result),
        ),
        case("--store (global)", &["--store", "P", "devices"], None),
    ];
    // fio's logs: a symlink named like the log (PREFIX_bw.1.log).
    for (name, opt, suffix) in [
        ("run --write_bw_log", "--write_bw_log", "_bw.1.log"),
        ("run --write_lat_log", "--write_lat_log", "_lat.1.log"),
        ("run --write_iops_log", "--write_iops_log", "_iops.1.log"),
        (
            "run --write_hist_log",
            "--write_hist_log",
            "_clat_hist.1.log",
        ),
    ] {
        v.push(Case {
            name,
            args: run_with(&format!("{opt}=LOGPREFIX")),
            input: None,
            log: Some(suffix),
        });
    }
    v
}

/// Run `args` and assert the refusal: exit 2, one line naming `shown`,
/// nothing written to `t`.
fn assert_refused(cwd: &Path, what: &str, args: &[String], t: &Target, shown: &Path) {
    let before = (digest(&t.watch), t.dev.as_deref().map(diskstats));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = Command::new(BIN)
        .args(&argv)
        .current_dir(cwd)
        .output()
        .unwrap();
    let (code, stdout, err) = (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let ctx = format!("{what} on {} ({}): {argv:?}", t.kind, shown.display());
    assert_eq!(code, 2, "{ctx}: {err}{stdout}");
    assert_eq!(err.trim().lines().count(), 1, "{ctx}: {err}");
    assert!(err.contains("refusing to write to"), "{ctx}: {err}");
    assert!(err.contains("nothing was written"), "{ctx}: {err}");
    assert!(!err.contains("--force"), "{ctx} offers --force: {err}");
    let after = (digest(&t.watch), t.dev.as_deref().map(diskstats));
    assert_eq!(before.0, after.0, "{ctx}: the bytes changed");
    assert_eq!(
        before.1.map(|d| (d.2, d.3)),
        after.1.map(|d| (d.2, d.3)),
        "{ctx}: the device was written"
    );
}

#[test]
fn every_side_output_refuses_devices_backing_files_symlinks_and_inputs() {
    let dir = TempDir::new("side-outputs");
    let mounted = ext4_loop(&dir, "mounted.img");
    // Read-only: a read-write ext4 writes its own superblock and journal
    // now and then, which the write counter would blame on drivelab.
    let mount = Mounted::mount_in(mounted.dev(), &dir, "mnt", Some("ro"));
    let sig = ext4_loop(&dir, "signature.img");
    let held = LoopDev::new_in(&dir, 8 << 20);
    // Held by this process, so "another process" for drivelab.
    let hold = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&held.path)
        .unwrap();
    let b = bench(&dir, &mounted, &sig, &held);
    let cases = file_cases(&b);
    let mut tried = 0;
    for c in &cases {
        for t in &b.targets {
            let args: Vec<String> = match c.log {
                // A log's name is PREFIX_kind.N.log: only a symlink can
                // stand there, made here to point where `t` does.
                Some(_) if !t.kind.starts_with("symlink") => continue,
                Some(suffix) => {
                    let prefix = b.cwd.join(format!("log{tried}"));
                    let name = PathBuf::from(format!("{}{suffix}", prefix.display()));
                    symlink(std::fs::read_link(&t.path).unwrap(), &name).unwrap();
                    let prefix = prefix.to_str().unwrap();
                    c.args
                        .iter()
                        .map(|a| a.replace("LOGPREFIX", prefix))
                        .collect()
                }
                None => c.args.iter().map(|a| subst(a, &t.path)).collect(),
            };
            assert_refused(&b.cwd, c.name, &args, t, &t.path);
            tried += 1;
        }
        if let Some(input) = &c.input {
            let t = Target {
                kind: "the command's own input".into(),
                path: input.clone(),
                watch: input.clone(),
                dev: None,
            };
            let args: Vec<String> = c.args.iter().map(|a| subst(a, input)).collect();
            assert_refused(&b.cwd, c.name, &args, &t, input);
            tried += 1;
        }
    }
    // Every command in the issue, every kind of target.
    assert!(tried >= 200, "only {tried} cases");
    drop(hold);
    drop(mount);
    let fsck = Command::new("e2fsck")
        .args(["-fn", mounted.dev()])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "the mounted filesystem was damaged: {}",
        String::from_utf8_lossy(&fsck.stdout)
    );
}

/// `P` in an argument becomes `path` (also inside `--opt=P`).
fn subst(arg: &str, path: &Path) -> String {
    let p = path.to_str().unwrap();
    if arg == "P" {
        p.to_string()
    } else if let Some(opt) = arg.strip_suffix("=P") {
        format!("{opt}={p}")
    } else {
        arg.to_string()
    }
}

#[test]
fn a_name_in_an_output_directory_that_is_a_symlink_to_a_device_is_refused() {
    let dir = TempDir::new("side-dirs");
    let mounted = ext4_loop(&dir, "mounted.img");
    // Read-only: a read-write ext4 writes its own superblock and journal
    // now and then, which the write counter would blame on drivelab.
    let mount = Mounted::mount_in(mounted.dev(), &dir, "mnt", Some("ro"));
    let sig = ext4_loop(&dir, "signature.img");
    let devs: [(&str, &Path, &LoopDev); 3] = [
        ("mounted loop", &mounted.path, &mounted),
        ("backing file of a mounted loop", &mounted.backing, &mounted),
        ("loop with a signature", &sig.path, &sig),
    ];
    let trace = format!("{SAMPLES}/tpcc-small.trace");
    for (kind, to, l) in devs {
        for (what, name, args) in [
            (
                "export --csv",
                "summary.csv",
                vec!["export", "1", "--csv", "DIR"],
            ),
            (
                "export --csv --overwrite",
                "series.csv",
                vec!["export", "1", "--csv", "DIR", "--overwrite"],
            ),
            ("man --dir", "drivelab-run.1", vec!["man", "--dir", "DIR"]),
            (
                "trace analyze --plots",
                "sizes.svg",
                vec!["trace", "analyze", &trace, "--plots", "DIR"],
            ),
        ] {
            let d = dir.join(&format!("out-{}-{name}", kind.replace(' ', "-")));
            std::fs::create_dir_all(&d).unwrap();
            symlink(to, d.join(name)).unwrap();
            let argv: Vec<String> = args
                .iter()
                .map(|a| {
                    if *a == "DIR" {
                        d.display().to_string()
                    } else {
                        a.to_string()
                    }
                })
                .collect();
            let t = Target {
                kind: format!("{kind} in DIR"),
                path: d.join(name),
                watch: l.backing.clone(),
                dev: Some(l.name.clone()),
            };
            assert_refused(dir.path(), what, &argv, &t, &d.join(name));
            let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
            assert_eq!(
                left.len(),
                1,
                "{what}: files were written beside the symlink"
            );
        }
    }
    drop(mount);
    let fsck = Command::new("e2fsck")
        .args(["-fn", mounted.dev()])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stdout)
    );
}

#[test]
fn trace_convert_onto_its_own_input_is_refused_and_the_input_kept() {
    let dir = TempDir::new("side-convert-self");
    let t = dir.join("t.trace");
    std::fs::copy(format!("{SAMPLES}/tpcc-small.trace"), &t).unwrap();
    let before = digest(&t);
    let ts = t.to_str().unwrap();
    let dot = format!("{}/./t.trace", dir.path().display());
    for out in [ts, dot.as_str()] {
        let (code, _, err) = run(BIN, &["trace", "convert", ts, out, "--to", "native"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("also an input"), "{err}");
    }
    let (code, _, err) = run(BIN, &["report", ts, "--html", ts]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(digest(&t), before);
}

/// A trace that every reader rejects, in its own format: line `n` broken.
fn bad_inputs(dir: &TempDir) -> Vec<(String, PathBuf, &'static str)> {
    let mut v = Vec::new();
    let good = std::fs::read_to_string(format!("{SAMPLES}/tpcc-small.trace")).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    for (i, bad) in [
        "not a request",
        "1 2 3",
        "x y z w v u",
        "\u{0}\u{1}\u{2}",
        "-1 -1 -1 -1 -1",
        "99999999999999999999999 R 0 8",
        "1.0 Q 0 0",
        "{}",
        "# only a comment and then garbage ,,,,",
        "1 W 18446744073709551615 18446744073709551615",
    ]
    .iter()
    .enumerate()
    {
        let p = dir.join(&format!("bad-{i}.trace"));
        let mut text = lines[..lines.len().min(20)].join("\n");
        text.push('\n');
        text.push_str(bad);
        text.push('\n');
        std::fs::write(&p, text).unwrap();
        v.push((format!("native line {bad:?}"), p, "native"));
    }
    for (i, bad) in [
        "garbage",
        "fio version 3 iolog\n0 f write x y",
        "fio version 9 iolog\n",
    ]
    .iter()
    .enumerate()
    {
        let p = dir.join(&format!("bad-{i}.iolog"));
        std::fs::write(&p, bad).unwrap();
        v.push((format!("fio {bad:?}"), p, "fio"));
    }
    for (i, bad) in ["a,b,c", "128166372003061629,hm,0,Read", "x,y,z,w,v,u,t"]
        .iter()
        .enumerate()
    {
        let p = dir.join(&format!("bad-{i}.csv"));
        std::fs::write(&p, bad).unwrap();
        v.push((format!("msr {bad:?}"), p, "msr"));
    }
    for (i, bad) in [
        "  8,0    1        1     0.000000000  1234  Q   W x + y [a]",
        "nonsense",
    ]
    .iter()
    .enumerate()
    {
        let p = dir.join(&format!("bad-{i}.blkparse"));
        std::fs::write(&p, bad).unwrap();
        v.push((format!("blkparse {bad:?}"), p, "blkparse"));
    }
    v
}

#[test]
fn a_failed_convert_leaves_no_output_and_never_empties_an_old_one() {
    let dir = TempDir::new("side-convert-bad");
    let mut tried = 0;
    for (what, input, from) in bad_inputs(&dir) {
        for to in ["native", "fio", "msr", "blkparse"] {
            let ext = match to {
                "native" => "dlt",
                "fio" => "iolog",
                "msr" => "csv",
                _ => "blkparse",
            };
            // No old file: none is left. An old file: it is kept whole.
            for old in [None, Some(b"old output\n".as_slice())] {
                let out = dir.join(&format!("out-{tried}.{ext}"));
                if let Some(o) = old {
                    std::fs::write(&out, o).unwrap();
                }
                let (code, _, err) = run(
                    BIN,
                    &[
                        "trace",
                        "convert",
                        input.to_str().unwrap(),
                        out.to_str().unwrap(),
                        "--from",
                        from,
                        "--to",
                        to,
                    ],
                );
                if code == 0 {
                    // A reader that skips what it cannot use converted it.
                    let _ = std::fs::remove_file(&out);
                    continue;
                }
                assert_ne!(code, 0, "{what} -> {to}: {err}");
                match old {
                    None => assert!(!out.exists(), "{what} -> {to}: a partial output was left"),
                    Some(o) => assert_eq!(
                        std::fs::read(&out).unwrap(),
                        o,
                        "{what} -> {to}: the old output was changed"
                    ),
                }
                tried += 1;
            }
        }
    }
    assert!(tried >= 40, "only {tried} failing conversions");
    // No temporary file anywhere.
    let tmp: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(tmp.is_empty(), "{tmp:?}");
}

#[test]
fn output_on_a_full_filesystem_keeps_the_old_file() {
    let dir = TempDir::new("side-full");
    let fs = Tmpfs::mount_in(&dir, "full", 64 << 10);
    let old = fs.join("r.json");
    std::fs::write(&old, b"old results\n").unwrap();
    fs.fill();
    let trace = format!("{SAMPLES}/tpcc-small.trace");
    let o = old.to_str().unwrap();
    for args in [
        vec!["trace", "analyze", trace.as_str(), "--output", o],
        vec!["trace", "convert", trace.as_str(), o, "--to", "native"],
        vec![
            "run",
            "--ioengine=null",
            "--filename=x",
            "--size=1m",
            "--output",
            o,
        ],
    ] {
        let (code, _, err) = run(BIN, &args);
        assert_ne!(code, 0, "{args:?}: {err}");
        assert_eq!(std::fs::read(&old).unwrap(), b"old results\n", "{args:?}");
        let mut names: Vec<String> = std::fs::read_dir(&fs.path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["filler", "r.json"],
            "{args:?}: a temporary file was left"
        );
    }
}

#[test]
fn export_does_not_overwrite_an_existing_summary_unless_asked() {
    let dir = TempDir::new("side-export");
    let store = dir.join("s.db");
    let s = format!("--store={}", store.display());
    let (code, _, err) = run(
        BIN,
        &["run", "--ioengine=null", "--filename=x", "--size=1m", &s],
    );
    assert_eq!(code, 0, "{err}");
    let csv = dir.join("csv");
    std::fs::create_dir_all(&csv).unwrap();
    std::fs::write(csv.join("summary.csv"), b"mine\n").unwrap();
    let c = csv.to_str().unwrap();
    let (code, _, err) = run(
        BIN,
        &[
            "--store",
            store.to_str().unwrap(),
            "export",
            "1",
            "--csv",
            c,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("summary.csv") && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(std::fs::read(csv.join("summary.csv")).unwrap(), b"mine\n");
    assert!(!csv.join("series.csv").exists());
    let (code, _, err) = run(
        BIN,
        &[
            "--store",
            store.to_str().unwrap(),
            "export",
            "1",
            "--csv",
            c,
            "--overwrite",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let summary = std::fs::read_to_string(csv.join("summary.csv")).unwrap();
    assert!(summary.starts_with("record,kind,"), "{summary}");
}

#[test]
fn an_erase_refused_for_a_full_certificate_directory_leaves_no_journal() {
    let dir = TempDir::new("side-erase-full");
    let l = LoopDev::new_in(&dir, 4 << 20);
    let fs = Tmpfs::mount_in(&dir, "certs", 64 << 10);
    fs.fill();
    let before = (digest(&l.backing), diskstats(&l.name));
    let (code, _, err) = run(
        BIN,
        &[
            "erase",
            l.dev(),
            "--confirm-serial",
            l.dev(),
            "--yes",
            "--certificate-dir",
            fs.path.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--certificate-dir"), "{err}");
    let names: Vec<String> = std::fs::read_dir(&fs.path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["filler"], "a journal or probe was left");
    assert_eq!(digest(&l.backing), before.0);
    assert_eq!(diskstats(&l.name).2, before.1 .2, "the drive was written");
}
