//! Issue 12 item 12 in a real kernel: `drivelab test --step write-same`
//! on drives that implement WRITE SAME (QEMU's virtio-scsi scsi-hd and
//! scsi_debug) writes the pattern over the range (a verify step and an
//! independent `dd | od` of the device find it), is timed and shown beside
//! a streamed write step of the same drive; on QEMU's SATA (AHCI) disk,
//! which has no SCT Write Same, it is refused in one line (exit 2) before
//! anything of the sequence is written.
//!
//! Needs root, QEMU and the cached kernel: `bash tests/vm/setup.sh`.

use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};
use serde_json::Value;

const SCSI: &str = "DLSCSIWS01";
const SATA: &str = "DLSATAWS01";
/// Blocks each step covers (16 MiB of 512-byte blocks).
const COUNT: u64 = 32_768;
/// A block inside the range read back with dd.
const PROBE_LBA: u64 = 12_345;

const SEQ: &str = r#"seed = 1
[[step]]
kind = "write"
pattern = "allones"
count = 32768
[[step]]
kind = "write-same"
pattern = "incrementing"
count = 32768
[[step]]
kind = "verify"
pattern = "incrementing"
count = 32768
"#;

const SIDE: &str = "--step write --step write-same --pattern decrementing --count 32768";
const SATA_CMD: &str =
    "drivelab test /dev/$A --step write --step write-same --pattern incrementing --count 32768";

fn guest_script() -> String {
    format!(
        r#"
S=$(disk_by_serial {SCSI})
A=$(disk_by_serial {SATA})
SD=$(disk_by_model scsi_debug)
cat > seq.toml <<'EOF'
{SEQ}EOF
# (lib.sh's run_json sets $name: use another variable.)
for d in scsi:$S sdebug:$SD; do
    tag=${{d%%:*}}; dev=${{d#*:}}
    run_json seq_$tag drivelab test /dev/$dev --sequence seq.toml --output-format json
    dd if=/dev/$dev bs=512 count=1 skip={PROBE_LBA} iflag=direct 2>/dev/null | od -An -tx1 -v | head -1 > od_$tag.txt
    run_json side_$tag drivelab test /dev/$dev {SIDE}
done
run_json sata {SATA_CMD}
dd if=/dev/$A bs=512 count=1 iflag=direct 2>/dev/null | od -An -tx1 -v | head -1 > od_sata.txt
true
"#
    )
}

fn boot() -> GuestRun {
    let vm = Vm::builder()
        .scsi_hd(Disk::new(32 * MIB, SCSI))
        .sata(Disk::new(32 * MIB, SATA))
        .scsi_debug("dev_size_mb=32")
        .with_drivelab()
        .guest_script(&guest_script())
        .timeout(Duration::from_secs(420));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

fn outcome(run: &GuestRun, name: &str) -> (i64, String, String) {
    run.outcome(name)
}

#[test]
fn write_same_step_writes_the_pattern_beside_a_write_and_sata_is_refused() {
    let run = boot();
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    for name in ["scsi", "sdebug"] {
        let (st, out, err) = outcome(&run, &format!("seq_{name}"));
        println!("[{name}] sequence write(allones), write-same(incrementing), verify (exit {st})\n{out}{err}");
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        let (w, ws, vf) = (&v["steps"][0], &v["steps"][1], &v["steps"][2]);
        c.check(&format!("{name}: sequence exit 0"), st == 0, || {
            format!("exit {st}: {err}")
        });
        c.check(
            &format!("{name}: write-same passed over the range"),
            ws["kind"] == "write-same"
                && ws["status"] == "PASSED"
                && ws["blocks_transferred"] == COUNT,
            || format!("{ws}"),
        );
        let cmd = ws["command"].as_str().unwrap_or("");
        c.check(
            &format!("{name}: sent as SCSI WRITE SAME"),
            cmd.contains("WRITE SAME"),
            || cmd.to_string(),
        );
        let ios = ws["passes"][0]["ios"].as_u64().unwrap_or(0);
        let chunk = ws["transfer_max_blocks"].as_u64().unwrap_or(0);
        c.check(
            &format!("{name}: one command per chunk"),
            chunk > 0 && ios == COUNT.div_ceil(chunk),
            || format!("{ios} commands, chunk {chunk}"),
        );
        c.check(
            &format!("{name}: timed"),
            ws["runtime_ns"].as_u64().unwrap_or(0) > 0
                && ws["bw_bytes"].as_f64().unwrap_or(0.0) > 0.0,
            || format!("{ws}"),
        );
        c.check(
            &format!("{name}: the write step ran first"),
            w["kind"] == "write" && w["status"] == "PASSED",
            || format!("{w}"),
        );
        c.check(
            &format!("{name}: verify finds the write-same pattern"),
            vf["status"] == "PASSED" && vf["blocks_transferred"] == COUNT,
            || format!("{vf}"),
        );
        let od = run.file(&format!("od_{name}.txt")).unwrap_or_default();
        c.check(
            &format!("{name}: dd reads the incrementing pattern"),
            od.split_whitespace().take(4).collect::<Vec<_>>() == ["00", "01", "02", "03"],
            || od.clone(),
        );
        let (st, text, err) = outcome(&run, &format!("side_{name}"));
        println!("[{name}] drivelab test DEV {SIDE}  (exit {st})\n{text}{err}");
        c.check(&format!("{name}: side by side exit 0"), st == 0, || {
            err.clone()
        });
        for k in [
            "Write Test; Sequential;",
            "Write Same Test; Sequential;",
            "Summary, side by side",
            "write-same (test 2) vs streamed write (test 1)",
        ] {
            c.check(
                &format!("{name}: text shows {k:?}"),
                text.contains(k),
                || text.clone(),
            );
        }
    }
    let (st, out, err) = outcome(&run, "sata");
    println!("[sata] {SATA_CMD}  (exit {st})\n{out}{err}");
    c.check("sata: refused with exit 2", st == 2, || {
        format!("exit {st}")
    });
    c.check(
        "sata: one line, nothing on stdout",
        out.is_empty() && err.trim().lines().count() == 1,
        || format!("{out}{err}"),
    );
    c.check(
        "sata: names SCT Write Same and suggests --step write",
        err.contains("SCT Write Same") && err.contains("use --step write"),
        || err.clone(),
    );
    let od = run.file("od_sata.txt").unwrap_or_default();
    c.check(
        "sata: nothing written (block 0 still zero)",
        !od.trim().is_empty() && od.split_whitespace().all(|b| b == "00"),
        || od.clone(),
    );
    if !c.failures().is_empty() {
        println!("{ctx}");
    }
    c.finish("write-same step");
}
