//! An fio command-line job (`--name=NAME` and options, no job file) runs as
//! fio 3.33 runs it: on fio's own files (`NAME.0.0` and on, in the current
//! directory or `--directory`, kept after the run) with fio's random map
//! (each block once per pass), not on drivelab's scratch file. A run with
//! no job file and no `--name`, which fio refuses, still gets the scratch
//! file. Needs fio (tests/run installs it).

mod fio_common;

use drivelab_testkit::TempDir;

/// The regular files in `dir`, with their sizes, sorted.
fn files(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The offsets of one direction's I/Os in an iolog, per file.
fn offsets(log: &std::path::Path, dir: &str) -> Vec<(String, u64)> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&dir)).then(|| (f[1].to_string(), f[3].parse().unwrap()))
        })
        .collect()
}

fn run(tool: &str, cwd: &TempDir, data: &TempDir, args: &[&str]) -> serde_json::Value {
    drivelab_testkit::isolate_store();
    let out = fio_common::tool(tool)
        .args(args)
        .arg("--output-format=json")
        .arg(format!("--directory={}", data.path().display()))
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    fio_common::json_of(tool, &text)
}

#[test]
fn a_command_line_job_with_a_name_runs_on_fios_files_with_fios_random_map() {
    let cwd = TempDir::new("fio-cmdline-cwd");
    let mut seen = Vec::new();
    for tool in ["fio", "drivelab"] {
        let data = TempDir::new(&format!("fio-cmdline-{tool}"));
        let log = cwd.join(&format!("{tool}.iolog"));
        let _ = std::fs::remove_file(&log);
        // Two files written, then read back at random.
        let w = run(
            tool,
            &cwd,
            &data,
            &[
                "--name=cl",
                "--rw=write",
                "--bs=4k",
                "--size=128k",
                "--nrfiles=2",
            ],
        );
        assert_eq!(w["jobs"][0]["write"]["total_ios"], 32, "{tool}");
        let r = run(
            tool,
            &cwd,
            &data,
            &[
                "--name=cl",
                "--rw=randread",
                "--bs=4k",
                "--size=128k",
                "--nrfiles=2",
                &format!("--write_iolog={}", log.display()),
            ],
        );
        assert_eq!(r["jobs"][0]["read"]["total_ios"], 32, "{tool}");
        // fio's random map: every block of each file read exactly once.
        let mut reads = offsets(&log, "read");
        assert_eq!(reads.len(), 32, "{tool}");
        reads.sort();
        reads.dedup();
        assert_eq!(reads.len(), 32, "{tool}: a block read twice: {reads:?}");
        let names: Vec<(String, u64)> = files(data.path());
        seen.push(names);
        // Nothing of the run in the current directory but the iologs.
        let here = files(cwd.path());
        assert!(
            here.iter().all(|(n, _)| n.ends_with(".iolog")),
            "{tool}: {here:?}"
        );
    }
    assert_eq!(seen[1], seen[0], "the files each tool made and kept");
    assert_eq!(
        seen[0],
        vec![("cl.0.0".to_string(), 65536), ("cl.0.1".to_string(), 65536)]
    );
}

#[test]
fn a_run_without_a_job_file_or_a_name_is_on_the_scratch_file_and_removes_it() {
    let cwd = TempDir::new("fio-cmdline-scratch");
    drivelab_testkit::isolate_store();
    let out = fio_common::tool("drivelab")
        .args([
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--output-format=json",
        ])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = fio_common::json_of("drivelab", &String::from_utf8_lossy(&out.stdout));
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 16);
    assert!(files(cwd.path()).is_empty(), "{:?}", files(cwd.path()));
    // fio itself refuses such a run.
    let fio = fio_common::tool("fio")
        .args(["--rw=write", "--bs=4k", "--size=64k"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&fio.stdout),
        String::from_utf8_lossy(&fio.stderr)
    );
    assert!(said.contains("No job(s) defined"), "{said}");
}
