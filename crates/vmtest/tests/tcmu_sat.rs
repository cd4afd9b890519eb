//! Issue 28 item 1: drivelab against an emulated SCSI drive served from
//! user space through the guest kernel's own SCSI target
//! (target_core_user + tcm_loop). `drivelab-tcmuemu` (crates/tcmuemu)
//! creates the user backstore and a loopback LUN over it; the guest's sd
//! and sg drivers find a disk, and every CDB they and drivelab send comes
//! to the emulator through its UIO command ring:
//!
//! - the kernel sees a disk of the emulator's size, with its vendor,
//!   product and serial (VPD 80h) and its block limits;
//! - 1 MiB written through the block layer lands in the backing file at
//!   the same offset, and the emulator counts the blocks written;
//! - `drivelab health` names the drive as the emulator does;
//! - `drivelab run` reads it whole, and the emulator counts every block.
//!
//! One boot; the emulator's state file is copied after each step and
//! compared on the host. Needs root, QEMU and the cached kernel
//! (`bash tests/vm/setup.sh`).

use std::time::Duration;

use drivelab_vmtest::drivelab_bin::static_package_binary;
use drivelab_vmtest::{Checks, GuestRun, Vm};
use serde_json::Value;

/// The drive's size, MiB.
const MIB: u64 = 16;

const SCRIPT: &str = r#"
export PATH=$PATH:/usr/sbin XDG_CONFIG_HOME=/tmp/cfg
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mark() { echo "$1 $(cut -d' ' -f1 /proc/uptime)" >> marks.txt; }
mark start
# emu NAME HBA SERIAL ARGS...: start a drive and wait for its disk.
emu() {
  n=$1; h=$2; s=$3; shift 3
  drivelab-tcmuemu --backing /tmp/$n.img --size-mib @MIB@ --name $n --hba $h --serial $s \
      --state /tmp/$n.json "$@" > $n.emu.out 2> $n.emu.err &
  EMUS="$EMUS $!"
  i=0; while [ -z "$(disk_of $s)" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
}
# disk_of SERIAL: /dev/sdX whose VPD 80h serial is SERIAL.
disk_of() { for d in /sys/block/sd*; do [ "$(vpd80_serial $d/device/vpd_pg80)" = "$1" ] && echo /dev/${d##*/}; done; return 0; }
state() { sleep 0.3; cp /tmp/$1.json $2.state.json; }
md5() { dd if=$1 bs=64k iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1; }

emu sas 1 DLTCMUSAS001 --product "TCMU SAS DISK"
SAS=$(disk_of DLTCMUSAS001)
printf '{"sas":"%s"}\n' "$SAS" > names.json
mark attached
disk_json ${SAS#/dev/} > sas.disk.json
cat /sys/block/${SAS#/dev/}/queue/max_hw_sectors_kb > sas.max_hw_kb
state sas p0
# 1 MiB of 0xA5 at 1 MiB, through the block layer.
head -c 1048576 /dev/zero | tr '\000' '\245' > /tmp/a5.bin
dd if=/tmp/a5.bin of=$SAS bs=64k seek=16 oflag=direct 2>/dev/null
echo $? > sas.dd.status
state sas p1
md5sum < /tmp/a5.bin | cut -d' ' -f1 > sas.written.md5
dd if=/tmp/sas.img bs=64k skip=16 count=16 2>/dev/null | md5sum | cut -d' ' -f1 > sas.backing.md5
dd if=$SAS bs=64k skip=16 count=16 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1 > sas.readback.md5
rm -f /tmp/a5.bin
run_json health drivelab health $SAS --output-format json
state sas p2
run_json read_all drivelab run --name=all --filename=$SAS --rw=read --bs=64k --iodepth=4 --direct=1 --output-format=json
state sas p3
mark steps
kill $EMUS
true
"#;

fn script() -> String {
    SCRIPT.replace("@MIB@", &MIB.to_string())
}

fn boot() -> GuestRun {
    let emu = static_package_binary("drivelab-tcmuemu", "drivelab-tcmuemu")
        .unwrap_or_else(|e| panic!("cannot build the emulator for the guest: {e}"));
    Vm::builder()
        .modules(&["target_core_user", "tcm_loop"])
        .binary("drivelab-tcmuemu", &emu)
        .with_drivelab()
        .guest_script(&script())
        .timeout(Duration::from_secs(600))
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"))
}

/// A result file as JSON, Null when missing or not JSON.
fn json(run: &GuestRun, name: &str) -> Value {
    run.json(name).unwrap_or(Value::Null)
}

/// `run_json NAME`'s stdout as JSON.
fn out(run: &GuestRun, name: &str) -> Value {
    run.outcome_json(name)
        .map(|(_, v)| v)
        .unwrap_or(Value::Null)
}

fn why(run: &GuestRun, name: &str) -> String {
    let (s, o, e) = run.outcome(name);
    format!("status {s}; stdout {o}; stderr {e}")
}

fn text(run: &GuestRun, name: &str) -> String {
    run.file(name).unwrap_or_default().trim().to_string()
}

fn counter(v: &Value, name: &str) -> u64 {
    v["counters"][name].as_u64().unwrap_or(0)
}

const BLOCKS: u64 = (MIB << 20) / 512;

fn disk_checks(c: &mut Checks, run: &GuestRun) {
    let d = json(run, "sas.disk.json");
    c.check(
        "the kernel sees a disk of the emulator's size, vendor, product and serial",
        d["size_512"] == BLOCKS
            && d["logical_block_size"] == 512
            && d["vendor"] == "DRIVELAB"
            && d["model"] == "TCMU SAS DISK"
            && d["serial"] == "DLTCMUSAS001",
        || format!("{d}; emulator: {}", text(run, "sas.emu.err")),
    );
    c.check(
        "the kernel took the emulator's maximum transfer (VPD B0h, 2048 blocks)",
        text(run, "sas.max_hw_kb") == "1024",
        || text(run, "sas.max_hw_kb"),
    );
    let (p0, p1) = (json(run, "p0.state.json"), json(run, "p1.state.json"));
    c.check(
        "1 MiB written through the block layer: 2048 blocks counted by the emulator",
        text(run, "sas.dd.status") == "0"
            && counter(&p1, "blocks_written") - counter(&p0, "blocks_written") == 2048,
        || format!("{p0}\n{p1}"),
    );
    let want = text(run, "sas.written.md5");
    c.check(
        "the backing file holds the bytes at the same offset, and they read back",
        !want.is_empty()
            && text(run, "sas.backing.md5") == want
            && text(run, "sas.readback.md5") == want,
        || {
            format!(
                "written {want}, backing {}, read {}",
                text(run, "sas.backing.md5"),
                text(run, "sas.readback.md5")
            )
        },
    );
    c.check(
        "the emulator answered ATA PASS-THROUGH and the rest it lacks with CHECK CONDITION",
        counter(&p1, "check_conditions") > 0,
        || format!("{p1}"),
    );
}

fn drivelab_checks(c: &mut Checks, run: &GuestRun) {
    let h = out(run, "health");
    let dev = h["devices"][0].clone();
    let s = |v: &Value| v.as_str().map(|t| t.trim().to_string()).unwrap_or_default();
    c.check(
        "drivelab health names the drive as the emulator does (SCSI, serial, model)",
        run.outcome("health").0 == 0
            && s(&dev["serial"]) == "DLTCMUSAS001"
            && s(&dev["model"]).contains("TCMU SAS DISK"),
        || why(run, "health"),
    );
    let (p2, p3) = (json(run, "p2.state.json"), json(run, "p3.state.json"));
    let r = out(run, "read_all");
    let read_bytes = r["jobs"][0]["read"]["io_bytes"].as_u64().unwrap_or(0);
    c.check(
        "drivelab run read the whole drive, and the emulator counted every block",
        run.outcome("read_all").0 == 0
            && read_bytes == MIB << 20
            && counter(&p3, "blocks_read") - counter(&p2, "blocks_read") == BLOCKS,
        || format!("{}; {p2}\n{p3}", why(run, "read_all")),
    );
}

#[test]
fn drivelab_on_a_scsi_drive_emulated_behind_tcmu() {
    let run = boot();
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    let names = json(&run, "names.json");
    c.check(
        "the emulated drive appeared as a SCSI disk",
        names["sas"]
            .as_str()
            .is_some_and(|s| s.starts_with("/dev/sd")),
        || {
            format!(
                "names {names}; emulator: {} {}",
                text(&run, "sas.emu.out"),
                text(&run, "sas.emu.err")
            )
        },
    );
    disk_checks(&mut c, &run);
    drivelab_checks(&mut c, &run);
    println!(
        "guest uptime at each step:\n{}",
        run.file("marks.txt").unwrap_or_default()
    );
    println!(
        "guest uptime at script start {:?} s, at end {:?} s; wall {:.0} s",
        run.boot_to_script_s,
        run.script_end_s,
        run.elapsed.as_secs_f64()
    );
    c.finish(&ctx);
}
