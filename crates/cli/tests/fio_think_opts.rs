//! fio's think time options change drivelab's I/O as they change fio
//! 3.33's: the same job (reads of a 4 MiB file in a temp dir) runs under
//! both tools, and what the option changes is compared: the bytes a rated
//! job moves when its rate catches up after each pause or not
//! (`rate_ignore_thinktime`), the pauses in the iolog when the job thinks
//! after a time of I/O (`thinktime_iotime`), the I/Os between pauses when
//! `thinktime_blocks` counts issued or completed I/Os
//! (`thinktime_blocks_type`); and a job slowed by think time below its
//! `ratemin`, checked per `rate_cycle`. Needs fio (tests/run installs it).

mod fio_common;

use drivelab_testkit::TempDir;
use serde_json::Value;

/// Run the job `opts` (after a psync or given engine's common lines) under
/// `tool`; its JSON.
fn run(tool: &str, dir: &TempDir, opts: &str) -> Value {
    drivelab_testkit::isolate_store();
    let file = dir.join("data");
    if !file.exists() {
        std::fs::write(&file, vec![7u8; 4 << 20]).unwrap();
    }
    let job = dir.join("job.fio");
    std::fs::write(
        &job,
        format!(
            "[job]\nfilename={}\nsize=4m\nbs=4k\ndirect=0\ntime_based\n{opts}\n",
            file.display()
        ),
    )
    .unwrap();
    let out = fio_common::tool(tool)
        .arg("--output-format=json")
        .arg(&job)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{tool} {opts:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{tool}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// 2 s at 1 MiB/s with a 200 ms pause after every 64 reads (256 KiB, a
/// quarter second of the rate): by default the rate catches up after each
/// pause and the job moves its 2 MiB; with rate_ignore_thinktime the pauses
/// are lost, about 0.45 of the time.
#[test]
fn rate_ignore_thinktime_loses_the_pauses_as_in_fio() {
    let dir = TempDir::new("fio-rate-ignore-think");
    for tool in ["fio", "drivelab"] {
        let mut bytes = Vec::new();
        for ignore in [0, 1] {
            let opts = format!(
                "ioengine=psync\nrw=read\nruntime=2\nrate=1m\nthinktime=200ms\nthinktime_blocks=64\nrate_ignore_thinktime={ignore}"
            );
            let j = run(tool, &dir, &opts);
            bytes.push(j["jobs"][0]["read"]["io_bytes"].as_u64().unwrap_or(0));
        }
        eprintln!(
            "{tool}: caught up {} bytes, ignoring the pauses {}",
            bytes[0], bytes[1]
        );
        assert!(bytes[0] >= 1_800_000, "{tool}: {bytes:?}");
        assert!(
            (bytes[1] as f64) < 0.75 * bytes[0] as f64 && bytes[1] > 600_000,
            "{tool}: {bytes:?}"
        );
    }
}

/// The gaps of 80 ms or more between the reads of a `write_iolog` (fio's
/// iolog v3 times are µs here), and the reads.
fn pauses(log: &std::path::Path) -> (usize, usize) {
    let times: Vec<u64> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("read"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    let gaps = times.windows(2).filter(|w| w[1] - w[0] >= 80_000).count();
    (gaps, times.len())
}

/// 1 s of reads at 500 IOPS (their clock running through the pauses),
/// thinking 100 ms after each 100 ms of I/O: four or five pauses, about
/// half the reads; thinktime alone would pause after every read.
#[test]
fn thinktime_iotime_thinks_after_a_time_of_io_as_in_fio() {
    let dir = TempDir::new("fio-think-iotime");
    for tool in ["fio", "drivelab"] {
        let log = dir.join(&format!("{tool}.iolog"));
        let _ = std::fs::remove_file(&log);
        let opts = format!(
            "ioengine=psync\nrw=read\nruntime=1\nrate_iops=500\nrate_ignore_thinktime=1\nthinktime=100ms\nthinktime_iotime=100ms\nwrite_iolog={}",
            log.display()
        );
        run(tool, &dir, &opts);
        let (gaps, reads) = pauses(&log);
        eprintln!("{tool}: {gaps} pauses, {reads} reads");
        assert!((3..=6).contains(&gaps), "{tool}: {gaps} pauses");
        assert!((150..=400).contains(&reads), "{tool}: {reads} reads");
    }
}

/// io_uring at depth 8, a 50 ms pause after every 4 reads for 500 ms:
/// counting issued reads, 4 go between pauses; counting completed ones
/// (fio's default), more are queued before 4 complete, at most the depth.
#[test]
fn thinktime_blocks_type_counts_issued_or_completed_ios_as_in_fio() {
    let dir = TempDir::new("fio-think-blocks-type");
    for tool in ["fio", "drivelab"] {
        let mut ios = Vec::new();
        for ty in ["issue", "complete"] {
            let opts = format!(
                "ioengine=io_uring\niodepth=8\nrw=randread\nruntime=500ms\nthinktime=50ms\nthinktime_blocks=4\nthinktime_blocks_type={ty}"
            );
            let j = run(tool, &dir, &opts);
            ios.push(j["jobs"][0]["read"]["total_ios"].as_u64().unwrap_or(0));
        }
        eprintln!("{tool}: issue {}, complete {}", ios[0], ios[1]);
        // At most 11 pauses fit in 500 ms of 50 ms pauses.
        assert!(ios[0] <= 4 * 11 && ios[0] >= 4 * 5, "{tool}: {ios:?}");
        assert!(ios[1] > ios[0] && ios[1] <= 8 * 11, "{tool}: {ios:?}");
    }
}

/// Reads slowed to about 400 kB/s by a 10 ms pause after each, held to
/// ratemin=2m per 500 ms rate_cycle: after fio's 2 s settling time the
/// first window fails the job with EIO, well before its 5 s runtime, under
/// both tools.
#[test]
fn ratemin_fails_the_job_per_rate_cycle_as_in_fio() {
    let dir = TempDir::new("fio-rate-cycle");
    let file = dir.join("data");
    std::fs::write(&file, vec![7u8; 4 << 20]).unwrap();
    let job = dir.join("ratemin.fio");
    std::fs::write(
        &job,
        format!(
            "[job]\nioengine=psync\nfilename={}\nsize=4m\nbs=4k\nrw=read\ndirect=0\ntime_based\nruntime=5\nthinktime=10ms\nratemin=2m\nrate_cycle=500\n",
            file.display()
        ),
    )
    .unwrap();
    for tool in ["fio", "drivelab"] {
        let json_out = dir.join(&format!("{tool}.json"));
        let out = fio_common::tool(tool)
            .arg("--output-format=json")
            .arg(format!("--output={}", json_out.display()))
            .arg(&job)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{tool}: {err}");
        let all = std::fs::read_to_string(&json_out).unwrap();
        let j = &fio_common::json_of(tool, &all)["jobs"][0];
        assert_eq!(j["error"], 5, "{tool}: {j}");
        let ran = j["job_runtime"].as_u64().unwrap_or(0);
        assert!((2000..4500).contains(&ran), "{tool}: ran {ran} ms of 5000");
    }
}
