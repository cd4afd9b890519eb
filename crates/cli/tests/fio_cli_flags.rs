//! fio's own command-line flags (`fio --help`), beside its job options:
//! every flag the installed fio lists is in `drivelab run --help`, and each
//! one is either carried out or refused in one line with exit 2 and
//! nothing run. What they do is compared with fio 3.33 in the same test:
//! several job files (each a new group), `--section`, `--readonly`,
//! `--showcmd` (its lines run as the file does), the triggers with
//! `--aux-path`, and the printing flags. Needs fio (tests/run installs it).

mod fio_common;

use std::path::Path;
use std::process::Output;

use drivelab_testkit::TempDir;
use serde_json::Value;

fn run_in(tool: &str, cwd: &Path, args: &[&str]) -> Output {
    drivelab_testkit::isolate_store();
    fio_common::tool(tool)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn json(tool: &str, out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    fio_common::json_of(tool, &String::from_utf8_lossy(&out.stdout))
}

/// (job name, group, read I/Os, write I/Os) of each job.
fn jobs(v: &Value) -> Vec<(String, u64, u64, u64)> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["groupid"].as_u64().unwrap(),
                j["read"]["total_ios"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The flags `fio --help` lists, without their dashes.
fn fio_flags() -> Vec<String> {
    let out = std::process::Command::new("fio")
        .arg("--help")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("--"))
        .map(|l| {
            l.split(|c: char| c == '=' || c == '[' || c.is_whitespace())
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn every_flag_fio_lists_is_carried_out_or_refused_in_one_line() {
    let dir = TempDir::new("fio-flags-all");
    let help = run_in("drivelab", dir.path(), &["--help"]);
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let flags = fio_flags();
    assert!(flags.len() >= 35, "fio --help listed {flags:?}");
    let job = dir.join("r.fio");
    std::fs::write(
        &job,
        format!(
            "[r]\nfilename={}\nsize=16k\nrw=read\n",
            dir.join("f").display()
        ),
    )
    .unwrap();
    let job = job.display().to_string();
    let (mut refused, mut taken) = (0, 0);
    for f in &flags {
        assert!(
            help.contains(&format!("--{f} ")) || help.contains(&format!("--{f}[")),
            "drivelab run --help does not list --{f}"
        );
        // Each flag with a value drivelab accepts, on a small read job.
        let value = match f.as_str() {
            "output-format" => "--output-format=json".to_string(),
            "terse-version" => "--terse-version=3".to_string(),
            "eta" => "--eta=never".to_string(),
            "eta-newline" | "status-interval" | "trigger-timeout" => format!("--{f}=10"),
            "output" => format!("--output={}", dir.join("out").display()),
            "aux-path" => format!("--aux-path={}", dir.path().display()),
            "section" => "--section=r".to_string(),
            "cmdhelp" => "--cmdhelp=bs".to_string(),
            "crctest" => "--crctest=crc32c".to_string(),
            "trigger-file" => format!("--trigger-file={}", dir.join("never").display()),
            "trigger" => "--trigger=true".to_string(),
            "alloc-size" | "max-jobs" => format!("--{f}=64"),
            "debug" => "--debug=io".to_string(),
            "idle-prof" => "--idle-prof=system".to_string(),
            "inflate-log" | "client" | "remote-config" | "daemonize" | "trigger-remote" => {
                format!("--{f}=x")
            }
            _ => format!("--{f}"),
        };
        let out = run_in("drivelab", dir.path(), &[&value, &job, "--no-store"]);
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => taken += 1,
            Some(2) => {
                refused += 1;
                assert_eq!(err.lines().count(), 1, "{value}: {err}");
                assert!(err.contains(&format!("--{f}")), "{value}: {err}");
            }
            c => panic!("{value}: exit {c:?}: {err}"),
        }
    }
    // The refusals are the flags of fio's client/server and fio's own
    // internals: each named in the help with its reason.
    assert_eq!(refused, help.matches("refused: ").count(), "{help}");
    assert!(taken > refused, "{taken} taken, {refused} refused");
}

#[test]
fn job_files_sections_readonly_and_showcmd_do_what_fio_3_33_does() {
    let dir = TempDir::new("fio-flags-files");
    let d = dir.path().display().to_string();
    std::fs::write(
        dir.join("a.fio"),
        format!("[global]\nbs=4k\nsize=32k\n[w]\nfilename={d}/f\nrw=write\n[r]\nfilename={d}/f\nrw=randread\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("b.fio"),
        format!("[w2]\nfilename={d}/g\nbs=8k\nsize=64k\nrw=write\nend_fsync=1\n"),
    )
    .unwrap();
    let cases: [&[&str]; 3] = [
        &["a.fio", "b.fio"],
        &["--section=w2", "--section=r", "a.fio", "b.fio"],
        &["--readonly", "--section=r", "a.fio"],
    ];
    for args in cases {
        let mut all: Vec<&str> = args.to_vec();
        all.push("--output-format=json");
        let fio = jobs(&json("fio", &run_in("fio", dir.path(), &all)));
        all.push("--no-store");
        let dl = jobs(&json("drivelab", &run_in("drivelab", dir.path(), &all)));
        assert_eq!(dl, fio, "{args:?}");
    }
    // A job that writes under --readonly: both refuse, nothing written.
    let _ = std::fs::remove_file(dir.join("f"));
    let fio = run_in("fio", dir.path(), &["--readonly", "a.fio"]);
    assert!(!fio.status.success());
    let dl = run_in(
        "drivelab",
        dir.path(),
        &["--readonly", "a.fio", "--no-store"],
    );
    assert_eq!(dl.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&dl.stderr).lines().count(), 1);
    assert!(!dir.join("f").exists(), "a file written under --readonly");
    // --showcmd: each job on one command line, which runs as the file does.
    let shown = run_in("drivelab", dir.path(), &["--showcmd", "a.fio", "b.fio"]);
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert_eq!(shown.lines().count(), 3, "{shown}");
    let from_files = jobs(&json(
        "drivelab",
        &run_in(
            "drivelab",
            dir.path(),
            &["a.fio", "b.fio", "--output-format=json", "--no-store"],
        ),
    ));
    for (line, want) in shown.lines().zip(&from_files) {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(&words[..2], ["drivelab", "run"], "{line}");
        let mut args: Vec<&str> = words[2..].to_vec();
        args.extend(["--output-format=json", "--no-store"]);
        let got = jobs(&json("drivelab", &run_in("drivelab", dir.path(), &args)));
        assert_eq!(
            (&got[0].0, got[0].2, got[0].3),
            (&want.0, want.2, want.3),
            "{line}"
        );
    }
}

#[test]
fn a_trigger_stops_the_run_saves_verify_state_and_runs_its_command() {
    let dir = TempDir::new("fio-flags-trigger");
    let aux = dir.join("aux");
    std::fs::create_dir(&aux).unwrap();
    let job = dir.join("slow.fio");
    // 64 MiB at 8 MiB/s: 8 s unless a trigger stops it.
    std::fs::write(
        &job,
        format!(
            "[slow]\nfilename={}\nsize=64m\nbs=64k\nrw=write\nverify=crc32c\nrate=8m\n",
            dir.join("f").display()
        ),
    )
    .unwrap();
    for tool in ["fio", "drivelab"] {
        for f in std::fs::read_dir(&aux).unwrap() {
            std::fs::remove_file(f.unwrap().path()).unwrap();
        }
        let fired = dir.join(&format!("{tool}-fired"));
        let started = std::time::Instant::now();
        let out = run_in(
            tool,
            dir.path(),
            &[
                "--trigger-timeout=1",
                &format!("--trigger=touch {}", fired.display()),
                &format!("--aux-path={}", aux.display()),
                job.to_str().unwrap(),
                "--output-format=json",
            ],
        );
        let took = started.elapsed();
        assert!(fired.exists(), "{tool}: the trigger's command did not run");
        assert!(
            took.as_secs() < 7,
            "{tool}: not stopped by the trigger ({took:?})"
        );
        let saved: Vec<String> = std::fs::read_dir(&aux)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(saved, ["local-slow-0-verify.state"], "{tool}: {out:?}");
    }
    // A trigger file: seen, removed, and the command run.
    let tf = dir.join("go");
    std::fs::write(&tf, "").unwrap();
    let out = run_in(
        "drivelab",
        dir.path(),
        &[
            &format!("--trigger-file={}", tf.display()),
            "--trigger=echo fired",
            job.to_str().unwrap(),
            "--output-format=json",
            "--no-store",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("fired"));
    assert!(!tf.exists(), "the trigger file was not removed");
}

#[test]
fn the_printing_flags_print_and_run_nothing() {
    let dir = TempDir::new("fio-flags-print");
    let ask = |args: &[&str]| {
        let out = run_in("drivelab", dir.path(), args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let v = ask(&["--version"]);
    assert!(v.starts_with("drivelab-"), "{v}");
    let bs = ask(&["--cmdhelp=bs"]);
    assert!(bs.contains("blocksize"), "{bs}");
    let all = ask(&["--cmdhelp=all"]);
    assert!(all.lines().count() > 200, "{all}");
    let engines = ask(&["--enghelp"]);
    for e in ["io_uring", "psync", "libaio", "sg", "null"] {
        assert!(engines.lines().any(|l| l.trim() == e), "{e}: {engines}");
    }
    let uring = ask(&["--enghelp=io_uring"]);
    assert!(uring.contains("hipri"), "{uring}");
    let crc = ask(&["--crctest=crc32c,md5"]);
    let names: Vec<&str> = crc.lines().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(names, ["crc32c", "md5"], "{crc}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}
