//! Issue 30 item 3 in a real kernel: `drivelab trace record` against
//! blktrace on the same workload in the same run.
//!
//! blktrace needs the kernel's relay files in debugfs, which the host's
//! kernel does not let a process open (EPERM), so the comparison runs in
//! the guest, whose kernel is built with `CONFIG_BLK_DEV_IO_TRACE`. The
//! host's `blktrace` and `blkparse` are copied in. On a 32 MiB zram device
//! filled with random bytes, `drivelab run` reads 4 KiB at random at QD32
//! for a few seconds three ways, in two rounds (the order reversed in the
//! second): alone, while `drivelab trace record` records the device, and
//! while `blktrace -a queue -a complete` does. Checked:
//!
//! - neither tool loses an event: the recorder's summary says 0 lost and
//!   its exit status is 0, blktrace's own summary says `dropped 0`;
//! - each tool saw every request: the 4 KiB reads in drivelab's trace, and
//!   blktrace's queue (Q) and completion (C) events of 4 KiB, each equal
//!   the number of reads `drivelab run` reports for the recorded run;
//!   every request in drivelab's trace completed.
//!
//! Each tool's cost (its run's IOPS against the plain runs') is printed,
//! not asserted: the guest is emulated (TCG, one CPU), so the figures
//! compare the two tools with each other, not with real hardware.
//!
//! Needs root, QEMU, blktrace and the cached kernel: `bash
//! tests/vm/setup.sh` (tests/run installs blktrace).

use std::time::Duration;

use drivelab_vmtest::{Checks, GuestRun, Vm};
use serde_json::Value;

/// Seconds each run reads.
const RUNTIME_S: u32 = 3;

const SCRIPT: &str = r#"
exec < /dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
echo 32M > /sys/block/zram0/disksize
Z=/dev/zram0
dd if=/dev/urandom of=$Z bs=1M count=32 2>/dev/null
sync
# await PATH: until PATH exists (at most 30 s), then half a second more for
# the tool to enable its events.
await() {
    i=0
    while [ ! -e "$1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    sleep 0.5
}
load() {
    run_json "$1" drivelab run --name="$1" --filename=$Z --rw=randread --bs=4k --iodepth=32 --runtime=@RUNTIME@ --force --no-store --output-format=json
}
plain() { load plain$1; }
recorder() {
    drivelab trace record $Z --output /tmp/r.dlt --output-format json > rec$1.out 2> rec$1.err &
    P=$!
    await /sys/kernel/tracing/instances/drivelab-$P
    load dl$1
    kill -INT $P
    wait $P
    echo $? > rec$1.status
    drivelab trace convert /tmp/r.dlt /tmp/r.csv --to msr > /dev/null 2> conv$1.err
    awk -F, '$4 == "Read" && $6 == 4096 { n++ } END { print n + 0 }' /tmp/r.csv > rec$1.reads
    rm -f /tmp/r.dlt /tmp/r.csv
}
blk() {
    mkdir -p /tmp/bt
    /usr/sbin/blktrace -d $Z -a queue -a complete -D /tmp/bt -o zram0 > bt$1.summary 2>&1 &
    B=$!
    await /sys/kernel/debug/block/zram0/trace0
    load bt$1
    kill -INT $B
    wait $B
    echo $? > bt$1.status
    /usr/bin/blkparse -q -i zram0 -D /tmp/bt -f '%a %N\n' 2> bt$1.parse_err | awk '$2 == 4096 { n[$1]++ } END { print n["Q"] + 0, n["C"] + 0 }' > bt$1.events
    rm -rf /tmp/bt
}
plain 1; recorder 1; blk 1
blk 2; recorder 2; plain 2
true
"#;

fn boot() -> GuestRun {
    let script = SCRIPT.replace("@RUNTIME@", &RUNTIME_S.to_string());
    let vm = Vm::builder()
        .modules(&["zram"])
        .host_tool("/usr/sbin/blktrace")
        .host_tool("/usr/bin/blkparse")
        .with_drivelab()
        .guest_script(&script)
        .timeout(Duration::from_secs(240));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

/// (IOPS, reads) of the run saved as `name`, or why not.
fn run_figures(run: &GuestRun, name: &str) -> Result<(f64, u64), String> {
    let (status, v) = run.outcome_json(name)?;
    let read = &v["jobs"][0]["read"];
    match (status, read["iops"].as_f64(), read["total_ios"].as_u64()) {
        (0, Some(iops), Some(ios)) if ios > 0 => Ok((iops, ios)),
        _ => Err(format!("run {name}: exit status {status}: {v}")),
    }
}

/// A whole number read from the guest's file `name` (its first word).
fn number(run: &GuestRun, name: &str, word: usize) -> Result<u64, String> {
    let text = run.file(name).map_err(|e| e.to_string())?;
    text.split_whitespace()
        .nth(word)
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| format!("{name}: no number in {text:?}"))
}

/// The recorder's round `i`: every read recorded, none lost, all complete.
fn check_recorder(run: &GuestRun, i: u32, ios: u64) -> Result<(), String> {
    let status = number(run, &format!("rec{i}.status"), 0)?;
    let out = run.file(&format!("rec{i}.out")).unwrap_or_default();
    let err = run.file(&format!("rec{i}.err")).unwrap_or_default();
    let summary: Value = serde_json::from_str(&out)
        .map_err(|e| format!("recorder {i}: no summary ({e}): {out} {err}"))?;
    let reads = number(run, &format!("rec{i}.reads"), 0)?;
    println!(
        "round {i}: drivelab trace record: {reads} 4 KiB reads of the run's {ios}, {} requests, {} completed, {} events lost, reader {}, clock {}",
        summary["requests"], summary["completed"], summary["lost_events"], summary["reader"], summary["clock"]
    );
    if status != 0 || summary["lost_events"].as_u64() != Some(0) {
        return Err(format!(
            "recorder {i}: exit status {status}: {summary} {err}"
        ));
    }
    if reads != ios {
        return Err(format!(
            "recorder {i}: {reads} reads recorded, the run did {ios}"
        ));
    }
    if summary["completed"] != summary["requests"] {
        return Err(format!(
            "recorder {i}: not every request completed: {summary}"
        ));
    }
    Ok(())
}

/// blktrace's round `i`: no event dropped, a Q and a C for every read.
fn check_blktrace(run: &GuestRun, i: u32, ios: u64) -> Result<(), String> {
    let status = number(run, &format!("bt{i}.status"), 0)?;
    let summary = run.file(&format!("bt{i}.summary")).unwrap_or_default();
    let queued = number(run, &format!("bt{i}.events"), 0)?;
    let completed = number(run, &format!("bt{i}.events"), 1)?;
    let dropped: Vec<u64> = summary
        .split("(dropped ")
        .skip(1)
        .filter_map(|s| s.split(')').next()?.trim().parse().ok())
        .collect();
    println!(
        "round {i}: blktrace: {queued} Q and {completed} C of 4 KiB for the run's {ios} reads, dropped {dropped:?}"
    );
    if status != 0 || dropped.is_empty() || dropped.iter().any(|&d| d != 0) {
        return Err(format!("blktrace {i}: exit status {status}: {summary}"));
    }
    if queued != ios || completed != ios {
        return Err(format!(
            "blktrace {i}: {queued} Q and {completed} C events, the run did {ios} reads"
        ));
    }
    Ok(())
}

#[test]
fn drivelab_and_blktrace_record_the_same_zram_run_without_losing_an_event() {
    let run = boot();
    let mut c = Checks::new();
    let mut iops = [Vec::new(), Vec::new(), Vec::new()];
    for i in 1..=2 {
        for (k, name) in ["plain", "dl", "bt"].iter().enumerate() {
            let r = run_figures(&run, &format!("{name}{i}"));
            c.check(&format!("run {name}{i} completes"), r.is_ok(), || {
                format!("{r:?}")
            });
            if let Ok((x, _)) = r {
                iops[k].push(x);
            }
        }
        let ios = |name: &str| run_figures(&run, &format!("{name}{i}")).map(|(_, n)| n);
        c.run(
            &format!("round {i}: drivelab's recorder loses nothing"),
            || check_recorder(&run, i, ios("dl")?),
        );
        c.run(&format!("round {i}: blktrace loses nothing"), || {
            check_blktrace(&run, i, ios("bt")?)
        });
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (p, d, b) = (mean(&iops[0]), mean(&iops[1]), mean(&iops[2]));
    let cost = |x: f64| if p > 0.0 { 100.0 * (1.0 - x / p) } else { 0.0 };
    println!(
        "4 KiB random reads at QD32 on zram (TCG, 1 CPU), mean IOPS of 2 rounds: plain {p:.0} {:?}, drivelab trace record {d:.0} {:?} (cost {:.1} %), blktrace {b:.0} {:?} (cost {:.1} %)",
        iops[0],
        iops[1],
        cost(d),
        iops[2],
        cost(b)
    );
    c.finish(&run.context());
}
