//! pvsync2's `hipri_percentage` (with `hipri`: the share of I/Os issued
//! with RWF_HIPRI, each drawn at random) on a loop device this test
//! attaches over a file, run by fio 3.33 and by drivelab in the same test:
//!
//! - the same job, unchanged for both tools, under `strace -f`: at 100 (and
//!   with the key absent) every write carries RWF_HIPRI, at 0 none does, at
//!   25 about a quarter do; both tools move the same I/Os and bytes with no
//!   error and show `hipri_percentage` in the job's `job options`;
//! - refusals (exit 2, one line naming the key, nothing written): the key
//!   with an engine other than pvsync2, and a percentage over 100.
//!
//! Needs root (loop devices), fio and strace.

use std::process::Command;

use drivelab_testkit::{
    digest, isolate_store, json_after_notes, require_root, require_tools, run, LoopDev, TempDir,
};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
const MIB: u64 = 1 << 20;

/// What one tool did with a job under strace: (error, write I/Os, write
/// bytes), the job's `hipri_percentage` as shown in its `job options`, and
/// how many of its writes carried RWF_HIPRI.
struct Traced {
    counts: [u64; 3],
    shown: Option<String>,
    hipri_writes: u64,
}

/// `tool` (with `args` before the job's) over `job` under `strace -f`,
/// counting the pwritev2 calls with RWF_HIPRI.
fn traced(dir: &TempDir, tag: &str, tool: &str, args: &[&str], job: &[String]) -> Traced {
    isolate_store();
    let log = dir.join(&format!("strace-{tag}.txt"));
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=pwritev2,pwrite64", "-o"])
        .arg(&log)
        .arg(tool)
        .args(args)
        .args(job)
        .output()
        .expect("strace runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{tag}: {}{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_after_notes(tag, &stdout);
    let j = &v["jobs"][0];
    let n = |k: &str| j["write"][k].as_u64().unwrap_or(0);
    let trace = std::fs::read_to_string(&log).expect("strace's log");
    std::fs::remove_file(&log).ok();
    Traced {
        counts: [
            j["error"].as_u64().unwrap_or(u64::MAX),
            n("total_ios"),
            n("io_bytes"),
        ],
        shown: j["job options"]["hipri_percentage"]
            .as_str()
            .map(str::to_string),
        hipri_writes: trace
            .lines()
            .filter(|l| l.contains("pwritev2(") && l.contains("RWF_HIPRI"))
            .count() as u64,
    }
}

#[test]
fn hipri_percentage_sets_rwf_hipri_on_its_share_of_writes_as_fio_does() {
    require_tools(&["/usr/bin/fio", "/usr/bin/strace"]);
    let dir = TempDir::new("pvsync2-hipri-pct");
    let lo = LoopDev::new_in(&dir, 16 * MIB);
    // (hipri_percentage, least and most writes of 2048 with RWF_HIPRI)
    let cases: [(Option<&str>, u64, u64); 4] = [
        (None, 2048, 2048),
        (Some("100"), 2048, 2048),
        (Some("0"), 0, 0),
        (Some("25"), 300, 730),
    ];
    for (pct, lo_n, hi_n) in cases {
        let mut job = vec![
            "--name=pct".to_string(),
            format!("--filename={}", lo.dev()),
            "--ioengine=pvsync2".to_string(),
            "--rw=randwrite".to_string(),
            "--bs=4k".to_string(),
            "--size=8m".to_string(),
            "--direct=1".to_string(),
            "--hipri=1".to_string(),
        ];
        if let Some(p) = pct {
            job.push(format!("--hipri_percentage={p}"));
        }
        let tag = pct.unwrap_or("absent");
        let f = traced(
            &dir,
            &format!("fio-{tag}"),
            "fio",
            &["--output-format=json"],
            &job,
        );
        let d = traced(
            &dir,
            &format!("drivelab-{tag}"),
            BIN,
            &["run", "--force", "--no-store", "--output-format=json"],
            &job,
        );
        println!(
            "hipri_percentage {tag}: fio {:?} {} with RWF_HIPRI, drivelab {:?} {}",
            f.counts, f.hipri_writes, d.counts, d.hipri_writes
        );
        assert_eq!(f.counts, [0, 2048, 8 * MIB], "{tag}: fio");
        assert_eq!(d.counts, f.counts, "{tag}: error, write I/Os, bytes");
        assert_eq!(d.shown, f.shown, "{tag}: job options");
        assert_eq!(d.shown.as_deref(), pct, "{tag}: job options");
        for (tool, n) in [("fio", f.hipri_writes), ("drivelab", d.hipri_writes)] {
            assert!(
                (lo_n..=hi_n).contains(&n),
                "{tag}: {tool}'s writes with RWF_HIPRI: {n}, not {lo_n} to {hi_n}"
            );
        }
    }
}

#[test]
fn hipri_percentage_off_pvsync2_or_over_100_is_refused_and_nothing_is_written() {
    require_root();
    let dir = TempDir::new("pvsync2-hipri-pct-bad");
    let lo = LoopDev::new_in(&dir, 16 * MIB);
    let before = digest(&lo.backing);
    let filename = format!("--filename={}", lo.dev());
    let cases: [&[&str]; 3] = [
        &["--ioengine=io_uring", "--hipri_percentage=50"],
        &["--ioengine=psync", "--hipri_percentage=50"],
        &["--ioengine=pvsync2", "--hipri=1", "--hipri_percentage=101"],
    ];
    for extra in cases {
        let mut args = vec![
            "run",
            "--name=bad",
            filename.as_str(),
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            "--direct=1",
            "--force",
            "--no-store",
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = run(BIN, &args);
        assert_eq!(code, 2, "{extra:?}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains("hipri_percentage"), "{extra:?}: {err}");
        assert!(out.is_empty(), "{extra:?}: {out}");
        assert_eq!(digest(&lo.backing), before, "{extra:?} wrote");
    }
}
