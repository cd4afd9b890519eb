//! The mixes drivelab promises, checked where they land: at the block layer,
//! through a tracefs capture of block_rq_issue made by the test itself.

use std::collections::BTreeMap;

use drivelab_testkit::{make_image, run, IssueTrace, LoopDev, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// Run drivelab on `dev` and return the block-layer requests its job
/// threads issued (the safety probe's reads come from the main thread).
fn traced(lo: &LoopDev, args: &[&str]) -> Vec<drivelab_testkit::Issued> {
    let trace = IssueTrace::start(&lo.path);
    let mut a = vec!["run", "--filename", lo.dev()];
    a.extend_from_slice(args);
    let (code, out, err) = run(BIN, &a);
    assert_eq!(code, 0, "{err}{out}");
    trace
        .stop()
        .into_iter()
        .filter(|r| r.comm.starts_with("job-"))
        .collect()
}

fn big_loop(dir: &TempDir) -> LoopDev {
    // A large sparse device makes adjacent random requests (which the block
    // layer could merge) vanishingly rare.
    let img = dir.join("big.img");
    make_image(&img, 16 << 30, &[]);
    LoopDev::attach(&img, &[])
}

#[test]
fn fileserver_preset_is_exact_at_the_block_layer() {
    let dir = TempDir::new("mix-fileserver");
    let lo = big_loop(&dir);
    let n: u64 = 100_000;
    let reqs = traced(
        &lo,
        &[
            "--preset",
            "fileserver",
            "--iodepth",
            "4",
            "--io_size",
            &(n * 8 * 1024).to_string(),
            "--force",
        ],
    );
    let data: Vec<_> = reqs
        .iter()
        .filter(|r| r.rwbs.contains('R') || r.rwbs.contains('W'))
        .collect();
    assert!(
        data.len() as u64 >= n / 2,
        "only {} requests traced",
        data.len()
    );
    let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
    for r in &data {
        *sizes.entry(r.bytes).or_default() += 1;
    }
    // REFERENCE.md: 512 B 10%, 1 KiB 5%, 2 KiB 5%, 4 KiB 60%, 8 KiB 2%,
    // 16 KiB 4%, 32 KiB 4%, 64 KiB 10%; 80% read; all random.
    let want: BTreeMap<u64, f64> = [
        (512, 10.0),
        (1024, 5.0),
        (2048, 5.0),
        (4096, 60.0),
        (8192, 2.0),
        (16384, 4.0),
        (32768, 4.0),
        (65536, 10.0),
    ]
    .into_iter()
    .collect();
    let total = data.len() as f64;
    for (size, count) in &sizes {
        assert!(
            want.contains_key(size),
            "the block layer saw a {size}-byte request the spec never asks for ({count} of them)"
        );
    }
    for (size, pct) in &want {
        let got = *sizes.get(size).unwrap_or(&0) as f64 * 100.0 / total;
        assert!(
            (got - pct).abs() <= 0.01 * pct.max(10.0),
            "{size} B: {got:.2}% vs {pct}%"
        );
    }
    let reads = data.iter().filter(|r| r.rwbs.contains('R')).count() as f64 * 100.0 / total;
    assert!((reads - 80.0).abs() <= 1.0, "read share {reads:.2}%");
}

#[test]
fn bssplit_and_rwmixread_hold_within_one_percent_over_100k_ios() {
    let dir = TempDir::new("mix-bssplit");
    let lo = big_loop(&dir);
    // 100k I/Os of mean size 0.1·512 + 0.6·4096 + 0.3·65536 bytes.
    let n: u64 = 100_000;
    let mean = (0.1 * 512.0 + 0.6 * 4096.0 + 0.3 * 65536.0) as u64;
    let reqs = traced(
        &lo,
        &[
            "--rw=randrw",
            "--bssplit=512/10:4k/60:64k/30",
            "--rwmixread=30",
            "--iodepth=8",
            "--io_size",
            &(n * mean).to_string(),
            "--force",
        ],
    );
    let total = reqs.len() as f64;
    assert!(
        (total - n as f64).abs() / n as f64 <= 0.01,
        "{total} requests for {n} I/Os"
    );
    let share = |pred: &dyn Fn(&drivelab_testkit::Issued) -> bool| {
        reqs.iter().filter(|r| pred(r)).count() as f64 / total
    };
    for (size, p) in [(512u64, 0.10), (4096, 0.60), (65536, 0.30)] {
        let got = share(&|r| r.bytes == size);
        assert!(
            (got - p).abs() <= 0.01 * p.max(0.1),
            "{size}: {got:.4} vs {p}"
        );
    }
    let reads = share(&|r| r.rwbs.contains('R'));
    assert!(
        (reads - 0.30).abs() <= 0.01 * 0.30 + 0.001,
        "read share {reads:.4}"
    );
}

#[test]
fn sequential_run_is_sequential_at_the_block_layer() {
    let dir = TempDir::new("mix-seq");
    let lo = big_loop(&dir);
    let reqs = traced(&lo, &["--rw=read", "--bs=64k", "--size=8m", "--iodepth=1"]);
    assert_eq!(reqs.len(), 128);
    for (i, r) in reqs.iter().enumerate() {
        assert_eq!(r.sector, i as u64 * 128, "request {i}");
        assert_eq!(r.bytes, 65536);
    }
}
