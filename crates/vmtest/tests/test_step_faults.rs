//! Issue 12 item 8 in a real kernel: `drivelab test` steps over injected
//! faults name the exact bad LBAs, not the failed command's range.
//!
//! - scsi_debug with a medium error on blocks MEDIUM_ERROR_START ..
//!   +MEDIUM_ERROR_COUNT (reads only): a read step starting 10 blocks before
//!   them (one 64 KiB command straddles them) lists exactly that range, with
//!   ENODATA and the decoded MEDIUM ERROR sense, in the JSON and the text;
//!   a verify step under `continue` narrows the failed command, compares
//!   every readable block and reads all but the bad ones; `stop-sequence`
//!   skips the next step.
//! - a virtio-scsi disk whose writes touching one sector fail (QEMU
//!   blkdebug): a write step lists exactly that sector (narrowed with
//!   writes of the same pattern through the claim).
//!
//! Needs root, QEMU and the cached kernel: `bash tests/vm/setup.sh`.

use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};
use serde_json::Value;

/// scsi_debug's bad blocks (the issue's example: a read from 79990).
const MEDIUM_ERROR_START: u64 = 80_000;
const MEDIUM_ERROR_COUNT: u64 = 5;
const SD_MB: u64 = 64;
/// The disk whose writes touching WRITE_ERROR_SECTOR fail with EIO.
const WFAIL: &str = "DLBDWR0001";
const WRITE_ERROR_SECTOR: u64 = 4_100;

const READ: &str = "drivelab test /dev/$SD --step read --start 79990 --count 1000";
const VERIFY: &str = "drivelab test /dev/$SD --step write --step verify --start 79900 --count 400 --pattern incrementing --on-error continue";
const STOPSEQ: &str =
    "drivelab test /dev/$SD --step read --step read --start 79990 --count 1000 --on-error stop-sequence";
const WRITE: &str =
    "drivelab test /dev/$BW --step write --start 4000 --count 400 --pattern allones";

fn guest_script() -> String {
    format!(
        r#"
SD=$(disk_by_model scsi_debug)
BW=$(disk_by_serial {WFAIL})
run_json read_json {READ} --output-format json
run_json read_text {READ}
run_json verify_json {VERIFY} --output-format json
run_json stopseq_json {STOPSEQ} --output-format json
run_json write_json {WRITE} --output-format json
run_json write_text {WRITE}
true
"#
    )
}

fn boot() -> GuestRun {
    let vm = Vm::builder()
        .scsi_debug(&format!(
            "dev_size_mb={SD_MB} opts=2 medium_error_start={MEDIUM_ERROR_START} medium_error_count={MEDIUM_ERROR_COUNT}"
        ))
        .blkdebug_writes(Disk::new(16 * MIB, WFAIL), WRITE_ERROR_SECTOR)
        .with_drivelab()
        .guest_script(&guest_script())
        .timeout(Duration::from_secs(300));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

/// The exit status, stdout (parsed as JSON when `json`) of a `run_json`.
fn outcome(run: &GuestRun, name: &str) -> (i64, String, String) {
    run.outcome(name)
}

fn parsed(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or(Value::Null)
}

/// `bad_ranges` of a failure as (first, last, count).
fn ranges(f: &Value) -> Vec<(u64, u64, u64)> {
    f["bad_ranges"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|b| {
                    (
                        b["first"].as_u64().unwrap_or(0),
                        b["last"].as_u64().unwrap_or(0),
                        b["count"].as_u64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn test_steps_name_the_exact_bad_lbas_of_injected_faults() {
    let run = boot();
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    let bad = (
        MEDIUM_ERROR_START,
        MEDIUM_ERROR_START + MEDIUM_ERROR_COUNT - 1,
        MEDIUM_ERROR_COUNT,
    );

    // Read straddling the medium error: exit 1, the exact range.
    let (st, out, err) = outcome(&run, "read_json");
    println!("$ {READ} --output-format json  (exit {st})\n{out}{err}");
    let v = parsed(&out);
    let s = &v["steps"][0];
    let f = &s["failures"][0];
    c.check("read: exit 1", st == 1, || format!("exit {st}: {err}"));
    c.check(
        "read: the failed command is the straddling one",
        f["lba"] == 79_990 && f["blocks"] == 128,
        || format!("{f}"),
    );
    c.check(
        "read: bad LBAs are exactly scsi_debug's",
        ranges(f) == vec![bad],
        || format!("{:?} vs {bad:?}", ranges(f)),
    );
    c.check(
        "read: bad_blocks counts them",
        s["bad_blocks"] == MEDIUM_ERROR_COUNT,
        || format!("{}", s["bad_blocks"]),
    );
    c.check(
        "read: errno ENODATA",
        f["bad_ranges"][0]["errno"] == 61,
        || format!("{f}"),
    );
    let sense = f["bad_ranges"][0]["sense"].as_str().unwrap_or("");
    c.check(
        "read: sense is the medium error",
        sense.contains("MEDIUM ERROR") && sense.contains("0x11"),
        || sense.to_string(),
    );
    let line = s["error"].as_str().unwrap_or("");
    let span = format!("LBA {}..{} ({} blocks)", bad.0, bad.1, bad.2);
    c.check(
        "read: error line names the exact range",
        line.contains(&span),
        || line.to_string(),
    );
    c.check(
        "read: stopped at the first error",
        s["note"].as_str().is_some_and(|n| n.contains("stopped")),
        || format!("{}", s["note"]),
    );
    let (st, text, _) = outcome(&run, "read_text");
    println!("$ {READ}  (exit {st})\n{text}");
    c.check(
        "read text: lists the bad range",
        text.contains(&format!("Bad: {span}")),
        || text.clone(),
    );

    // Verify under continue: everything else read and compared.
    let (st, out, err) = outcome(&run, "verify_json");
    let v = parsed(&out);
    let (w, r) = (&v["steps"][0], &v["steps"][1]);
    c.check("verify: exit 1", st == 1, || format!("exit {st}: {err}"));
    c.check(
        "verify: the write step passed (scsi_debug fails reads only)",
        w["status"] == "PASSED",
        || format!("{w}"),
    );
    c.check(
        "verify: one failed command, no miscompare",
        r["io_errors"] == 1 && r["miscompares"] == 0,
        || format!("{r}"),
    );
    c.check(
        "verify: exact bad LBAs",
        ranges(&r["failures"][0]) == vec![bad],
        || format!("{}", r["failures"]),
    );
    c.check(
        "verify: every other block read",
        r["blocks_transferred"] == 400 - MEDIUM_ERROR_COUNT,
        || format!("{}", r["blocks_transferred"]),
    );

    // stop-sequence: the second step is skipped.
    let (st, out, _) = outcome(&run, "stopseq_json");
    let v = parsed(&out);
    c.check(
        "stop-sequence: step 1 failed, step 2 skipped",
        st == 1 && v["steps"][0]["status"] == "FAILED" && v["steps"][1]["status"] == "SKIPPED",
        || out.clone(),
    );

    // Write error on one sector: narrowed with writes through the claim.
    let (st, out, err) = outcome(&run, "write_json");
    println!("$ {WRITE} --output-format json  (exit {st})\n{out}{err}");
    let v = parsed(&out);
    let s = &v["steps"][0];
    let f = &s["failures"][0];
    c.check("write: exit 1", st == 1, || format!("exit {st}: {err}"));
    c.check("write: failed op is write", f["op"] == "write", || {
        format!("{f}")
    });
    c.check(
        "write: exactly the failing sector",
        ranges(f) == vec![(WRITE_ERROR_SECTOR, WRITE_ERROR_SECTOR, 1)],
        || format!("{f}"),
    );
    c.check("write: errno EIO", f["bad_ranges"][0]["errno"] == 5, || {
        format!("{f}")
    });
    let (_, text, _) = outcome(&run, "write_text");
    println!("$ {WRITE}\n{text}");
    c.check(
        "write text: lists the bad sector",
        text.contains(&format!("Bad: LBA {WRITE_ERROR_SECTOR} (1 block)")),
        || text.clone(),
    );
    if !c.failures().is_empty() {
        println!("{ctx}");
    }
    c.finish("test steps over injected faults");
}
