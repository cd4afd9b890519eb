//! fio's verify options that change what a verifying job does, run under
//! fio 3.33 and drivelab with the same job file: `verify_only` counts a
//! writing job's writes without issuing them and checks what an earlier run
//! wrote. Compared: the writes and reads reaching the data file (strace),
//! its digest before and after, the counts and error in the JSON. Needs fio
//! and strace (tests/run installs them).

use std::process::Command;

use drivelab_testkit::TempDir;
use serde_json::Value;

mod fio_common;

/// What one run gave: the JSON's job, and the trace's calls on the file.
struct Ran {
    job: Value,
    writes: usize,
    reads: usize,
}

/// Run the job (64 random 4 KiB crc32c-verified writes over 256 KiB)
/// under `tool`, with `extra` job lines, under strace.
fn run(tool: &str, dir: &TempDir, extra: &str) -> Ran {
    drivelab_testkit::isolate_store();
    let file = dir.join("data");
    let job = dir.join("job.fio");
    std::fs::write(
        &job,
        format!(
            "[job]\nioengine=psync\nfilename={}\nsize=256k\nbs=4k\nrw=randwrite\nverify=crc32c\n{extra}\n",
            file.display()
        ),
    )
    .unwrap();
    let trace = dir.join("trace");
    // strace runs the tool's command.
    let cmd = fio_common::tool(tool);
    let out = Command::new("strace")
        .args(["-f", "-qq", "-y", "-s", "0", "-o"])
        .arg(&trace)
        .args(["-e", "trace=pread64,preadv2,pwrite64,pwritev2"])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .arg("--output-format=json")
        .arg(&job)
        .output()
        .expect("strace runs");
    let json = fio_common::json_of(tool, &String::from_utf8_lossy(&out.stdout));
    let trace = std::fs::read_to_string(&trace).unwrap_or_default();
    let on_file = |call: &str| {
        let needle = format!("<{}>", file.display());
        trace
            .lines()
            .filter(|l| l.contains(&needle) && l.contains(call))
            .count()
    };
    Ran {
        job: json["jobs"][0].clone(),
        writes: on_file("pwrite"),
        reads: on_file("pread"),
    }
}

fn ios(ran: &Ran, dir: &str) -> u64 {
    ran.job[dir]["total_ios"].as_u64().unwrap_or(u64::MAX)
}

#[test]
fn verify_only_checks_an_earlier_run_without_writing() {
    let dir = TempDir::new("fio-verify-opts");
    let file = dir.join("data");
    let mut failed = Vec::new();
    for tool in ["fio", "drivelab"] {
        let _ = std::fs::remove_file(&file);
        let wrote = run(tool, &dir, "");
        let before = drivelab_testkit::digest(&file);
        let only = run(tool, &dir, "verify_only=1");
        let after = drivelab_testkit::digest(&file);
        // One block of the earlier run's data replaced: the check fails.
        let mut data = std::fs::read(&file).unwrap();
        data[40960..45056].iter_mut().for_each(|b| *b ^= 0x5a);
        std::fs::write(&file, &data).unwrap();
        let bad = run(tool, &dir, "verify_only=1");
        let got = format!(
            "write run: {} writes; verify_only: {} writes and {} reads on the file, JSON writes {} reads {} error {}, file kept {}; after a corrupted block: error {}",
            wrote.writes,
            only.writes,
            only.reads,
            ios(&only, "write"),
            ios(&only, "read"),
            only.job["error"],
            before == after,
            bad.job["error"]
        );
        eprintln!("{tool:<8} {got}");
        let ok = wrote.writes == 64
            && only.writes == 0
            && only.reads == 64
            && ios(&only, "write") == 64
            && ios(&only, "read") == 64
            && only.job["error"] == 0
            && before == after
            && bad.job["error"] == libc::EILSEQ;
        if !ok {
            failed.push(format!("{tool}: {got}"));
        }
    }
    let _ = std::fs::remove_file(&file);
    assert!(failed.is_empty(), "{failed:#?}");
}
