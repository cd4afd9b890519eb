//! `bench/depth`'s slow-device part (issue 15 item 1): does the engine keep
//! N requests at a device whose service time is milliseconds?
//!
//! The host has no dm-delay or null_blk, so the slow device is an emulated
//! NVMe disk in the QEMU guest whose medium takes writes at `RATE_KB` KiB/s
//! (QEMU's `throttling.bps-write`, default 4096: 1,000 4 KiB writes a
//! second, so at depth 4 each write is with the "drive" about 4 ms). In the
//! guest, drivelab runs 4 KiB random writes at `--iodepth DEPTH` (default
//! 4) for `RUNTIME` seconds (default 10) while `drivelab trace record`
//! records the disk; the host computes from the recording the time-weighted
//! mean number of requests in flight and the share of the run with DEPTH or
//! more, and prints them beside the device check's aqu-sz. A first run of
//! the same workload, not recorded, gives the device check alone (what the
//! recorder itself costs a one-CPU emulated guest). The trace is written to
//! the guest's memory and copied to the 9p share after: written straight to
//! the share, each flush was a round trip through QEMU's main loop. fio is not in the
//! guest (a static busybox initramfs), so no fio line here.
//!
//! Run: `cargo run --release -p drivelab-vmtest --example depth_slow`
//! (needs QEMU and the cached kernel: `bash tests/vm/setup.sh`).

use std::process::ExitCode;
use std::time::Duration;

use drivelab_vmtest::{Disk, Vm, MIB};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Time-weighted mean in flight and share of time with at least `n`, from
/// blkparse-format text (D = issue, C = completion), first D to last event.
fn depth(text: &str, n: i64) -> Option<(f64, f64, u64)> {
    let mut ev: Vec<(f64, bool)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 7 || (f[5] != "D" && f[5] != "C") {
                return None;
            }
            Some((f[3].parse().ok()?, f[5] == "D"))
        })
        .collect();
    ev.sort_by(|a, b| a.0.total_cmp(&b.0));
    let first = ev.iter().find(|e| e.1)?.0;
    let (mut d, mut last, mut area, mut at_n, mut count) = (0i64, first, 0.0, 0.0, 0u64);
    for &(t, issue) in ev.iter().filter(|e| e.0 >= first) {
        let dt = t - last;
        area += d as f64 * dt;
        if d >= n {
            at_n += dt;
        }
        last = t;
        if issue {
            d += 1;
            count += 1;
        } else {
            d = (d - 1).max(0);
        }
    }
    let span = last - first;
    (span > 0.0).then(|| (area / span, 100.0 * at_n / span, count))
}

fn main() -> ExitCode {
    let rate_kb = env("RATE_KB", 4096);
    let qd = env("DEPTH", 4);
    let runtime = env("RUNTIME", 10);
    let script = format!(
        r#"
D=/dev/$(disk_by_serial DLNVME0001)
[ -d /sys/kernel/tracing/instances ] || mount -t tracefs nodev /sys/kernel/tracing
drivelab run --name=plain --filename="$D" --rw=randwrite --bs=4k --iodepth={qd} --runtime={runtime} \
    --output-format=json > /out/plain.json 2> /out/plain.err
drivelab trace record "$D" --output /tmp/rec.blkparse --output-format json > /out/rec.json 2> /out/rec.err &
RP=$!
sleep 1
drivelab run --name=slow --filename="$D" --rw=randwrite --bs=4k --iodepth={qd} --runtime={runtime} \
    --output-format=json > /out/run.json 2> /out/run.err
echo $? > /out/run.status
sleep 0.5
kill -INT $RP; wait $RP; echo $? > /out/rec.status
cp /tmp/rec.blkparse /out/
"#
    );
    let run = Vm::builder()
        .nvme(Disk::new(256 * MIB, "DLNVME0001").write_limit(rate_kb * 1024))
        .guest_script(&script)
        .with_drivelab()
        .timeout(Duration::from_secs(240 + runtime))
        .run();
    let run = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!("depth_slow: the VM failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let text = run.file("rec.blkparse").unwrap_or_default();
    let report = run.json("run.json").unwrap_or_default();
    let rec = run.json("rec.json").unwrap_or_default();
    let job = &report["jobs"][0]["write"];
    let dc = &report["device_check"][0];
    let plain = run.json("plain.json").unwrap_or_default();
    let pc = &plain["device_check"][0];
    println!(
        "slow NVMe ({rate_kb} KiB/s write limit), 4 KiB random writes, iodepth {qd}, {runtime} s, not recorded: drivelab {:.0} IOPS; device check aqu-sz {:.2}: {}",
        plain["jobs"][0]["write"]["iops"].as_f64().unwrap_or(0.0),
        pc["device_depth"].as_f64().unwrap_or(0.0),
        pc["depth_verdict"].as_str().unwrap_or("-"),
    );
    match depth(&text, qd as i64) {
        Some((mean, pct, count)) => println!(
            "the same, recorded in the guest: drivelab {:.0} IOPS; drivelab record: mean in flight {mean:.2}, >= {qd} {pct:.1}% of the time ({count} requests, lost {}); device check aqu-sz {:.2}: {}",
            job["iops"].as_f64().unwrap_or(0.0),
            rec["lost_events"],
            dc["device_depth"].as_f64().unwrap_or(0.0),
            dc["depth_verdict"].as_str().unwrap_or("-"),
        ),
        None => {
            eprintln!(
                "depth_slow: no recording: run {} rec {}; {}",
                run.file("run.err").unwrap_or_default(),
                run.file("rec.err").unwrap_or_default(),
                run.context()
            );
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
