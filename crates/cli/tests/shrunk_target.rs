//! A target that ends before the job's range mid-run: a 32 MiB file cut to
//! 1 MiB while a random read job runs over it. Reads past the new end move
//! no byte (the kernel reports success with 0 bytes); each is a failed I/O
//! (EIO, as fio's "full resid"), named with its range and why, and the run
//! exits 1, on io_uring and on psync. (A SCSI disk deleted mid-run reads
//! the same way once its size is 0: the VM test `faults_run` covers that.)

use std::process::{Command, Stdio};
use std::time::Duration;

use drivelab_testkit::TempDir;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn shrink_mid_run(engine: &str) -> (Option<i32>, Value, String) {
    let dir = TempDir::new(&format!("shrunk-{engine}"));
    let file = dir.join("target.bin");
    std::fs::write(&file, vec![0x5a_u8; 32 << 20]).unwrap();
    let child = Command::new(BIN)
        .args([
            "run",
            "--name=shrunk",
            "--filename",
            file.to_str().unwrap(),
            "--size=32m",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=4",
            "--ioengine",
            engine,
            "--time_based",
            "--runtime=4",
            "--no-store",
            "--output-format=json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout {stdout}, stderr {stderr}"));
    (out.status.code(), v["jobs"][0].clone(), stderr)
}

#[test]
fn reads_past_a_target_that_shrank_mid_run_fail_with_eio_and_say_why() {
    for engine in ["io_uring", "psync"] {
        let (code, job, stderr) = shrink_mid_run(engine);
        assert_eq!(code, Some(1), "{engine}: exit status; stderr {stderr}");
        assert_eq!(job["error"], 5, "{engine}: job error {}", job["errors"]);
        let e = &job["errors"][0];
        assert_eq!(e["errno"], 5, "{engine}: {e}");
        assert!(
            e["offset"].as_u64().is_some_and(|o| o >= 1 << 20),
            "{engine}: the failed read lies past the new end: {e}"
        );
        assert!(
            stderr.contains("no byte moved") && stderr.lines().count() == 1,
            "{engine}: one stderr line saying why: {stderr}"
        );
        // The reads before the cut are counted; the zero-byte ones are not
        // successes (as successes they would count one I/O per loop turn).
        let ios = job["read"]["total_ios"].as_u64().unwrap_or(0);
        let bytes = job["read"]["io_bytes"].as_u64().unwrap_or(0);
        assert!(ios > 0, "{engine}: reads before the cut: {}", job["read"]);
        assert!(
            bytes >= (ios - job["errors"].as_array().map_or(0, |a| a.len()) as u64) * 4096
                || ios < 64,
            "{engine}: I/Os counted without their bytes: {}",
            job["read"]
        );
    }
}
