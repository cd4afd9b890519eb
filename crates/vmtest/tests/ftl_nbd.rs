//! Issue 14's device to test seasoning on: the simulated SSD
//! (crates/ftlsim) served by `drivelab-ftl-nbd attach` inside the guest
//! appears as /dev/nbd0 (the kernel's nbd driver over a socket pair, no
//! network). drivelab writes to it like to any disk: random 4 KiB writes
//! on the fresh drive, a sequential fill, random overwrites of twice its
//! capacity, then random 4 KiB writes again. The used drive is slower than
//! the fresh one by about the factor the model predicts from the write
//! amplification it counted during the last run: fresh = one page program
//! per write; used = program + (WA − 1) copies + WA/N_p erases. A
//! whole-device discard (NBD TRIM) then unmaps every page, and random
//! writes are back near the fresh rate: cleaning copies nothing, only the
//! erases of the emptied blocks remain, as the model predicts.
//!
//! Needs root, QEMU and the cached kernel: `bash tests/vm/setup.sh`.

use std::time::Duration;

use drivelab_ftlsim::Timing;
use drivelab_vmtest::drivelab_bin::static_package_binary;
use drivelab_vmtest::{Checks, GuestRun, Vm};
use serde_json::Value;

/// 4 MiB of 4 KiB pages, 16-page blocks, 12.5 % over-provisioning.
const SIZE_MIB: u64 = 4;
const PAGES_PER_BLOCK: u32 = 16;
const OP: f64 = 0.125;
/// Flash times ten times a real die's, so the model, not the emulated
/// guest's own cost per I/O (about 2.3 ms under TCG with debug builds:
/// 435 IOPS measured against a 500 µs program time), sets the rate.
const READ_US: u64 = 500;
const PROGRAM_US: u64 = 6000;
const ERASE_US: u64 = 18000;

fn model_args() -> String {
    format!(
        "--size {SIZE_MIB}M --pages-per-block {PAGES_PER_BLOCK} --op {OP} --read-us {READ_US} --program-us {PROGRAM_US} --erase-us {ERASE_US} --units 1"
    )
}

fn guest_script() -> String {
    let model = model_args();
    let rw =
        "drivelab run --filename=/dev/nbd0 --rw=randwrite --bs=4k --iodepth=4 --output-format=json";
    format!(
        r#"
drivelab-ftl-nbd attach /dev/nbd0 {model} --stats /tmp/ftl.json > nbd.out 2> nbd.err &
server=$!
i=0
while [ "$(cat /sys/block/nbd0/size 2>/dev/null)" != "$(({SIZE_MIB} * 2048))" ] && [ $i -lt 100 ]; do
    sleep 0.1; i=$((i + 1))
done
cat /sys/block/nbd0/size > nbd_size.txt
# Fresh: 256 random writes (a quarter of the logical pages: no cleaning yet).
run_json fresh {rw} --io_size=1m
sleep 1; cp /tmp/ftl.json stats_fresh.json
run_json fill drivelab run --filename=/dev/nbd0 --rw=write --bs=128k --iodepth=2 --output-format=json
run_json season {rw} --io_size=$(({SIZE_MIB} * 2))m
sleep 1; cp /tmp/ftl.json stats_seasoned.json
run_json used {rw} --io_size=2m
sleep 1; cp /tmp/ftl.json stats_used.json
blkdiscard /dev/nbd0 > discard.out 2>&1
echo $? > discard.status
run_json purged {rw} --io_size=1m
sleep 1; cp /tmp/ftl.json stats_purged.json
drivelab-ftl-nbd detach /dev/nbd0 > detach.out 2>&1
echo $? > detach.status
wait $server
echo $? > nbd.status
true
"#
    )
}

fn boot() -> GuestRun {
    let server = match static_package_binary("drivelab-ftlsim", "drivelab-ftl-nbd") {
        Ok(p) => p,
        Err(e) => panic!("cannot build the NBD server for the guest: {e}"),
    };
    let vm = Vm::builder()
        .module("nbd", "nbds_max=1")
        .binary("drivelab-ftl-nbd", &server)
        .with_drivelab()
        .guest_script(&guest_script())
        .timeout(Duration::from_secs(600));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

/// A result file as JSON, Null when missing or not JSON.
fn json(run: &GuestRun, name: &str) -> Value {
    run.json(name).unwrap_or(Value::Null)
}

fn write_iops(v: &Value) -> f64 {
    v["jobs"][0]["write"]["iops"].as_f64().unwrap_or(0.0)
}

fn count(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(f64::NAN)
}

#[test]
fn simulated_ssd_on_nbd_is_slower_used_than_fresh_by_the_modelled_factor() {
    let run = boot();
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    let size = run.file("nbd_size.txt").unwrap_or_default();
    c.check(
        "/dev/nbd0 has the simulated size",
        size.trim() == (SIZE_MIB * 2048).to_string(),
        || {
            format!(
                "{size:?}; server stderr: {}",
                run.file("nbd.err").unwrap_or_default()
            )
        },
    );
    for name in ["fresh", "fill", "season", "used"] {
        let st = run.file(&format!("{name}.status")).unwrap_or_default();
        c.check(
            &format!("drivelab {name} run exit 0"),
            st.trim() == "0",
            || {
                format!(
                    "{st:?}: {}",
                    run.file(&format!("{name}.err")).unwrap_or_default()
                )
            },
        );
    }
    let fresh = write_iops(&json(&run, "fresh.out"));
    let used = write_iops(&json(&run, "used.out"));
    let (s0, s1, s2) = (
        json(&run, "stats_fresh.json"),
        json(&run, "stats_seasoned.json"),
        json(&run, "stats_used.json"),
    );
    c.check(
        "fresh run caused no cleaning",
        count(&s0, "gc_copies") == 0.0 && count(&s0, "host_writes") == 256.0,
        || s0.to_string(),
    );
    let host = count(&s2, "host_writes") - count(&s1, "host_writes");
    let flash = count(&s2, "flash_writes") - count(&s1, "flash_writes");
    let erases = count(&s2, "erases") - count(&s1, "erases");
    let wa = flash / host;
    c.check("the used run wrote 512 pages", host == 512.0, || {
        format!("{s1} -> {s2}")
    });
    c.check("the used drive amplifies writes (WA > 2)", wa > 2.0, || {
        format!("WA {wa}")
    });
    let t = Timing {
        page_read_ns: READ_US * 1000,
        page_program_ns: PROGRAM_US * 1000,
        block_erase_ns: ERASE_US * 1000,
        units: 1,
        ..Timing::default()
    };
    // The model's service time per host page in each state.
    let fresh_cost = (PROGRAM_US * 1000) as f64;
    let used_cost = ((flash - host) * (READ_US + PROGRAM_US) as f64 * 1000.0
        + host * fresh_cost
        + erases * (ERASE_US * 1000) as f64)
        / host;
    let predicted = used_cost / fresh_cost;
    let measured = fresh / used;
    println!(
        "simulated SSD on /dev/nbd0: fresh {fresh:.0} IOPS, used {used:.0} IOPS, ratio {measured:.2}; model: WA {wa:.2}, {erases} erases, predicted ratio {predicted:.2} (sustained {:.0} IOPS)",
        t.sustained_write_iops(wa, PAGES_PER_BLOCK)
    );
    c.check(
        "the used drive is slower than the fresh one",
        used > 0.0 && used < fresh,
        || format!("fresh {fresh} used {used}"),
    );
    c.check(
        "fresh/used within 30% of the model's factor",
        (measured / predicted - 1.0).abs() < 0.3,
        || format!("measured {measured:.2}, predicted {predicted:.2}"),
    );

    // After a whole-device discard: every mapped page trimmed, no copies,
    // the rate back near fresh by the model's own account of the erases.
    let st = run.file("discard.status").unwrap_or_default();
    c.check("blkdiscard of /dev/nbd0 exit 0", st.trim() == "0", || {
        format!("{st:?}: {}", run.file("discard.out").unwrap_or_default())
    });
    let s3 = json(&run, "stats_purged.json");
    let trimmed = count(&s3, "trimmed") - count(&s2, "trimmed");
    let logical = (SIZE_MIB << 20) as f64 / 4096.0;
    c.check(
        "the discard trimmed every logical page",
        trimmed == logical,
        || format!("{trimmed} of {logical}: {s2} -> {s3}"),
    );
    let p_host = count(&s3, "host_writes") - count(&s2, "host_writes");
    let p_copies = count(&s3, "gc_copies") - count(&s2, "gc_copies");
    let p_erases = count(&s3, "erases") - count(&s2, "erases");
    c.check(
        "after the discard cleaning copies nothing",
        p_host == 256.0 && p_copies == 0.0,
        || format!("{s2} -> {s3}"),
    );
    let purged = write_iops(&json(&run, "purged.out"));
    let p_cost = (p_host * fresh_cost + p_erases * (ERASE_US * 1000) as f64) / p_host;
    let p_predicted = p_cost / fresh_cost;
    let p_measured = fresh / purged;
    println!(
        "after discard: {purged:.0} IOPS, fresh/purged {p_measured:.2}, predicted {p_predicted:.2} ({p_erases} erases)"
    );
    c.check(
        "after the discard the drive is much faster than used",
        purged > 2.0 * used,
        || format!("purged {purged} used {used}"),
    );
    c.check(
        "fresh/after-discard within 30% of the model's factor",
        (p_measured / p_predicted - 1.0).abs() < 0.3,
        || format!("measured {p_measured:.2}, predicted {p_predicted:.2}"),
    );
    let nbd = run.file("nbd.status").unwrap_or_default();
    c.check(
        "the server exited 0 after detach",
        nbd.trim() == "0",
        || format!("{nbd:?}: {}", run.file("nbd.err").unwrap_or_default()),
    );
    c.finish(&ctx);
}
