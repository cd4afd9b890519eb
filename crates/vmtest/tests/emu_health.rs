//! Issue 28: the emulated drives' health logs and self-tests, read in the
//! guest by smartctl and by `drivelab health`, compared with the
//! emulator's own counts (its state file) and with the I/O the test did.
//!
//! - SATA behind the SATL (`drivelab-tcmuemu --sata --bad-lba 20000`):
//!   4 MiB written and 2 MiB read with dd (64 KiB direct I/O); the Device
//!   Statistics log (04h: logical sectors and commands written and read,
//!   read by `smartctl -l devstat`) moves by exactly that; a read through
//!   the bad sector fails and lands in the SMART error logs (summary 01h
//!   and extended comprehensive 03h, read by `smartctl -l xerror -l
//!   error`) as UNC at LBA 20000, counted as the emulator counts; the SCT
//!   temperature history (Data Tables 0002h, `smartctl -l scttemp`) holds
//!   the drive's temperature; a short self-test (`drivelab health
//!   --self-test short`) fails with a read failure at LBA 20000, smartctl's
//!   self-test log says the same, and plain `drivelab health` now reports
//!   FAILED with that self-test; `smartctl -x` shows the logs with no
//!   warning or "not supported" for any of them.
//! - SAS (`drivelab-tcmuemu --bad-lba 20000`): `drivelab health
//!   --self-test short` is a SEND DIAGNOSTIC background short self-test,
//!   followed in the self-test results page (10h) until it fails at LBA
//!   20000; `smartctl -t short` starts another, and `smartctl -l
//!   selftest` lists both as the emulator logged them.
//! - NVMe/TCP (`drivelab-nvmeemu --bad-lba 20000`): Identify says Device
//!   Self-test is supported (OACS bit 4, EDSTT, DSTO, read by nvme-cli);
//!   `drivelab health --self-test short` on the namespace is a Device
//!   Self-test followed in the Device Self-test log until it fails at LBA
//!   20000, the log read raw by nvme-cli (get-log 06h) holds the same
//!   result, and plain
//!   `drivelab health` reports FAILED for it.
//!
//! One boot. Needs root, QEMU, the cached kernel (`bash tests/vm/setup.sh`)
//! and the host's smartctl and nvme-cli (tests/run installs smartmontools
//! and nvme-cli).

use std::time::Duration;

use drivelab_vmtest::results::{json, out, print_times, status, why};
use drivelab_vmtest::{Checks, GuestRun};
use serde_json::Value;

const SMARTCTL: &str = "/usr/sbin/smartctl";
const NVME_CLI: &str = "/usr/sbin/nvme";
/// Each drive's size, MiB.
const MIB: u64 = 16;
/// The sector neither drive can read.
const BAD_LBA: u64 = 20000;
/// The short self-test's length, s.
const SELF_TEST_S: u64 = 3;
/// Sectors dd writes (4 MiB) and reads (2 MiB), in 64 KiB commands.
const WRITTEN: u64 = 8192;
const READ: u64 = 4096;

const SCRIPT: &str = r#"
export PATH=$PATH:/usr/sbin XDG_CONFIG_HOME=/tmp/cfg
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mark start
state() { sleep 0.3; cp /tmp/$1.json $2.state.json; }
# emu NAME HBA SERIAL ARGS...: an emulated drive with a bad sector.
emu() {
  n=$1; h=$2; s=$3; shift 3
  drivelab-tcmuemu --backing /tmp/$n.img --size-mib @MIB@ --name $n --hba $h --serial $s \
      --bad-lba @BAD@ --self-test-seconds @ST@ --state /tmp/$n.json "$@" > $n.emu.out 2> $n.emu.err &
  EMUS="$EMUS $!"
  i=0; while [ -z "$(disk_of $s)" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
}

# --- SATA: statistics, error logs, temperature history, a failing self-test.
emu sata 1 DLTCMUHEALTH1 --sata --product "TCMU HEALTH SSD"
SATA=$(disk_of DLTCMUHEALTH1)
state sata s0
head -c 4194304 /dev/zero | tr '\000' '\132' | dd of=$SATA bs=64k iflag=fullblock oflag=direct 2>/dev/null
state sata s1
dd if=$SATA of=/dev/null bs=64k count=32 iflag=direct 2>/dev/null
state sata s2
mark io
# 8 sectors around the bad one: the read fails.
dd if=$SATA of=/dev/null bs=512 skip=$((@BAD@ - 4)) count=8 iflag=direct 2> badread.err
echo $? > badread.status
state sata s3
run_json sata_errlog smartctl -l xerror -l error -j $SATA
run_json sata_devstat smartctl -l devstat -j $SATA
run_json sata_scttemp smartctl -l scttemp -j $SATA
state sata s4
mark logs
run_json sata_st drivelab health $SATA --self-test short --yes --poll-ms 500 --output-format json
state sata s5
run_json sata_selftest smartctl -l selftest -l xselftest -j $SATA
run_json sata_health drivelab health $SATA --output-format json
drivelab health $SATA > sata_health.txt 2>&1
smartctl -x $SATA > sata_x.txt 2>&1
echo $? > sata_x.status
mark sata

# --- SAS: SEND DIAGNOSTIC and the self-test results page.
emu sas 2 DLTCMUHEALTH2 --product "TCMU HEALTH SAS"
SAS=$(disk_of DLTCMUHEALTH2)
run_json sas_st drivelab health $SAS --self-test short --yes --poll-ms 500 --output-format json
smartctl -t short $SAS > sas_t.txt 2>&1
sleep $((@ST@ + 2))
run_json sas_selftest smartctl -l selftest -j $SAS
state sas u1
mark sas

# --- NVMe/TCP: Device Self-test.
ip link set lo up
SER=DLEMUHEALTH3; NQN=nqn.2026-01.io.drivelab:health
drivelab-nvmeemu --listen 127.0.0.1:4420 --nqn $NQN --serial $SER --namespace-mib @MIB@ \
    --self-test-seconds @ST@ --bad-lba @BAD@ --state /tmp/nvme.json > nvme.emu.out 2> nvme.emu.err &
EMUS="$EMUS $!"
i=0; while [ ! -s /tmp/nvme.json ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
echo "transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$NQN,hostnqn=$NQN:host" > /dev/nvme-fabrics
for c in /sys/class/nvme/nvme*; do [ "$(sysattr $c/serial)" = "$SER" ] && CTRL=/dev/${c##*/}; done
NS=${CTRL}n1
i=0; while [ ! -b $NS ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
run_json nvme_id nvme id-ctrl $CTRL -o json
run_json nvme_st drivelab health $NS --self-test short --yes --poll-ms 500 --output-format json
run_json nvme_health drivelab health $NS --output-format json
nvme get-log $CTRL --log-id=6 --log-len=564 --raw-binary 2> nvme_stlog.err | od -An -tx1 -v | tr -d ' \n' > nvme_stlog.hex
sleep 0.5; cp /tmp/nvme.json v1.state.json
mark nvme
echo 1 > /sys/class/nvme/${CTRL#/dev/}/delete_controller
for d in $SATA $SAS; do echo 1 > /sys/block/${d#/dev/}/device/delete; done
kill $EMUS
true
"#;

fn script() -> String {
    SCRIPT
        .replace("@MIB@", &MIB.to_string())
        .replace("@BAD@", &BAD_LBA.to_string())
        .replace("@ST@", &SELF_TEST_S.to_string())
}

fn boot() -> GuestRun {
    drivelab_vmtest::emu::boot_with_tools(
        &script(),
        Duration::from_secs(600),
        &[SMARTCTL, NVME_CLI],
    )
}

fn text(run: &GuestRun, name: &str) -> String {
    run.file(name).unwrap_or_default()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// A General Statistics value from `smartctl -l devstat -j`.
fn devstat(sc: &Value, offset: u64) -> Option<u64> {
    sc["ata_device_statistics"]["pages"]
        .as_array()?
        .iter()
        .find(|p| p["number"] == 1)?["table"]
        .as_array()?
        .iter()
        .find(|e| e["offset"] == offset)?["value"]
        .as_u64()
}

fn statistics_checks(c: &mut Checks, run: &GuestRun) {
    let (s0, s1, s2, s3) = (
        json(run, "s0.state.json"),
        json(run, "s1.state.json"),
        json(run, "s2.state.json"),
        json(run, "s3.state.json"),
    );
    let st = |v: &Value, k: &str| u(&v["ata"]["statistics"][k]);
    c.check(
        "SATA: the drive's statistics move by dd's I/O: 8192 sectors in 64 writes, 4096 in 32 reads",
        st(&s1, "sectors_written") - st(&s0, "sectors_written") == WRITTEN
            && st(&s1, "write_commands") - st(&s0, "write_commands") == WRITTEN / 128
            && st(&s2, "sectors_read") - st(&s1, "sectors_read") == READ
            && st(&s2, "read_commands") - st(&s1, "read_commands") == READ / 128,
        || format!("before {}; after the write {}; after the read {}", s0["ata"]["statistics"], s1["ata"]["statistics"], s2["ata"]["statistics"]),
    );
    let sc = out(run, "sata_devstat");
    let want = [
        (0x08, "power_on_resets"),
        (0x10, "power_on_hours"),
        (0x18, "sectors_written"),
        (0x20, "write_commands"),
        (0x28, "sectors_read"),
        (0x30, "read_commands"),
    ];
    c.check(
        "SATA: smartctl -l devstat (GPL log 04h, General Statistics) = the emulator's counts",
        status(run, "sata_devstat") == 0
            && want
                .iter()
                .all(|(off, k)| devstat(&sc, *off) == Some(st(&s3, k))),
        || {
            format!(
                "{}; state {}",
                why(run, "sata_devstat"),
                s3["ata"]["statistics"]
            )
        },
    );
}

fn error_log_checks(c: &mut Checks, run: &GuestRun) {
    let s3 = json(run, "s3.state.json");
    let errors = &s3["ata"]["errors"];
    let unc = errors["kept"].as_array().is_some_and(|k| {
        k.iter()
            .any(|e| e["error"] == 0x40 && e["lba"] == BAD_LBA && e["command"] == 0x25)
    });
    c.check(
        "SATA: a read through the bad sector fails (dd exits non-zero) and the drive logs UNC at its LBA",
        text(run, "badread.status").trim() != "0" && unc,
        || format!("dd {}; {}; errors {errors}", text(run, "badread.status"), text(run, "badread.err")),
    );
    let sc = out(run, "sata_errlog");
    let log = &sc["ata_smart_error_log"];
    let count = u(&errors["count"]);
    let newest_x = &log["extended"]["table"][0];
    c.check(
        "SATA: smartctl -l xerror -l error reads both logs: their count = the emulator's, the newest an UNC (error 40h) at LBA 20000",
        count > 0
            && u(&log["extended"]["count"]) == count
            && u(&log["summary"]["count"]) == count
            && newest_x["completion_registers"]["error"] == 0x40
            && newest_x["completion_registers"]["lba"] == BAD_LBA
            && log["summary"]["table"][0]["completion_registers"]["lba"] == BAD_LBA,
        || format!("{}; state {errors}", why(run, "sata_errlog")),
    );
    let t = out(run, "sata_scttemp");
    let hist = &t["ata_sct_temperature_history"];
    let samples: Vec<u64> = hist["table"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let temp = u(&s3["ata"]["smart"]["temperature_c"]);
    c.check(
        "SATA: smartctl -l scttemp reads the SCT status and the temperature history (Data Tables 0002h): 128 entries, every sample the drive's temperature",
        status(run, "sata_scttemp") == 0
            && u(&t["ata_sct_status"]["temperature"]["current"]) == temp
            && hist["size"] == 128
            && !samples.is_empty()
            && samples.iter().all(|s| *s == temp),
        || format!("{}; temperature {temp}", why(run, "sata_scttemp")),
    );
}

fn self_test_checks(c: &mut Checks, run: &GuestRun) {
    let st = out(run, "sata_st");
    let r = &st["self_test"][0]["result"];
    c.check(
        "SATA: drivelab health --self-test short exits 1: failed in the read element (7) at LBA 20000",
        status(run, "sata_st") == 1 && r["result"] == 7 && r["failing_lba"] == BAD_LBA,
        || why(run, "sata_st"),
    );
    let s5 = json(run, "s5.state.json");
    let logged = s5["ata"]["self_test"]["log"]
        .as_array()
        .and_then(|l| l.last())
        .cloned()
        .unwrap_or(Value::Null);
    let sc = out(run, "sata_selftest");
    let e = &sc["ata_smart_self_test_log"]["standard"]["table"][0];
    let x = &sc["ata_smart_self_test_log"]["extended"]["table"][0];
    c.check(
        "SATA: smartctl -l selftest -l xselftest: the newest test a read failure at LBA 20000, as the emulator logged it",
        e["status"]["value"] == logged["status"]
            && e["status"]["passed"] == false
            && e["lba"] == BAD_LBA
            && x["lba"] == BAD_LBA
            && logged["failing_lba"] == BAD_LBA,
        || format!("{}; logged {logged}", why(run, "sata_selftest")),
    );
    let h = out(run, "sata_health")["devices"][0].clone();
    let last = &h["ata"]["last_self_test"];
    c.check(
        "SATA: plain drivelab health reports FAILED with the newest self-test's read failure at LBA 20000 (RETURN STATUS passes)",
        h["verdict"] == "failed" && last["result"] == 7 && last["failing_lba"] == BAD_LBA,
        || format!("{}; text {}", why(run, "sata_health"), text(run, "sata_health.txt")),
    );
}

/// The `smartctl -x` lines that would say one of the logs this drive
/// keeps is missing or unreadable.
fn log_warnings(x: &str) -> Vec<String> {
    let ours = [
        "Error Log",
        "Log 0x01",
        "Log 0x03",
        "Log 0x04",
        "Device Statistics",
        "SCT",
        "Temperature History",
        "Self-test",
        "Directory",
    ];
    let bad = [
        "not supported",
        "failed",
        "Invalid",
        "invalid",
        "Warning",
        "Unexpected",
    ];
    x.lines()
        .filter(|l| bad.iter().any(|b| l.contains(b)))
        .filter(|l| ours.iter().any(|o| l.contains(o)))
        // The SCT command and the log the drive does not implement
        // (scterc, the selective self-test log 09h), and the execution
        // status of the self-test that failed, as it should.
        .filter(|l| {
            !l.contains("Error Recovery Control")
                && !l.contains("Selective")
                && !l.contains("read element")
        })
        .map(str::to_string)
        .collect()
}

fn smartctl_x_checks(c: &mut Checks, run: &GuestRun) {
    let x = text(run, "sata_x.txt");
    let w = log_warnings(&x);
    c.check(
        "SATA: smartctl -x shows the error logs, the Device Statistics and the temperature history, with no warning for any log the drive keeps",
        w.is_empty()
            && x.contains("SMART Extended Comprehensive Error Log Version: 1")
            && x.contains("Device Statistics (GP Log 0x04)")
            && x.contains("Logical Sectors Written")
            && x.contains("SCT Temperature History Version:")
            && x.contains("UNC at LBA = 0x00004e20 = 20000")
            && x.contains("Completed: read failure"),
        || format!("warnings {w:?}; output:\n{x}"),
    );
}

fn sas_checks(c: &mut Checks, run: &GuestRun) {
    let st = out(run, "sas_st");
    let r = &st["self_test"][0]["result"];
    c.check(
        "SAS: drivelab health --self-test short (SEND DIAGNOSTIC, page 10h) exits 1: failed (7) at LBA 20000",
        status(run, "sas_st") == 1 && r["result"] == 7 && r["failing_lba"] == BAD_LBA,
        || why(run, "sas_st"),
    );
    let u1 = json(run, "u1.state.json");
    let log = u1["self_test"]["log"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let sc = out(run, "sas_selftest");
    let entry = |i: usize| &sc["scsi_self_test_".to_string() + &i.to_string()];
    let e0 = entry(0);
    let e1 = entry(1);
    let lba = |e: &Value| e["lba_first_failure"]["value"].clone();
    c.check(
        "SAS: smartctl -t short started a second one; smartctl -l selftest lists both, each a failure at LBA 20000, as the emulator logged them",
        log.len() == 2
            && log.iter().all(|e| e["code"] == 1 && e["failing_lba"] == BAD_LBA)
            && e0["code"]["value"] == 1
            && e1["code"]["value"] == 1
            && e0["result"]["value"] == 7
            && e1["result"]["value"] == 7
            && lba(e0) == BAD_LBA
            && lba(e1) == BAD_LBA,
        || format!("{}; smartctl -t {}; logged {log:?}", why(run, "sas_selftest"), text(run, "sas_t.txt")),
    );
}

/// Byte `at` of a log dumped as hex.
fn hex_byte(hex: &str, at: usize) -> Option<u8> {
    u8::from_str_radix(hex.get(2 * at..2 * at + 2)?, 16).ok()
}

fn nvme_checks(c: &mut Checks, run: &GuestRun) {
    let id = out(run, "nvme_id");
    c.check(
        "NVMe: nvme-cli's Identify Controller: Device Self-test supported (OACS bit 4), EDSTT 1 minute, one test at a time (DSTO)",
        u(&id["oacs"]) & 0x10 != 0 && u(&id["edstt"]) == 1 && u(&id["dsto"]) & 1 == 1,
        || why(run, "nvme_id"),
    );
    let st = out(run, "nvme_st");
    let r = &st["self_test"][0]["result"];
    c.check(
        "NVMe: drivelab health --self-test short (Device Self-test, log 06h) exits 1: a segment failed (7) at LBA 20000",
        status(run, "nvme_st") == 1 && r["result"] == 7 && r["failing_lba"] == BAD_LBA,
        || why(run, "nvme_st"),
    );
    let hex = text(run, "nvme_stlog.hex");
    let lba = (0..8).rev().try_fold(0u64, |v, i| {
        Some((v << 8) | u64::from(hex_byte(&hex, 20 + i)?))
    });
    let v1 = json(run, "v1.state.json");
    let logged = &v1["self_test"]["log"][0];
    c.check(
        "NVMe: nvme-cli's raw Device Self-test log: no test running, the newest a short one failed (17h) in segment 2 at LBA 20000 of NSID 1, as the emulator logged it",
        hex_byte(&hex, 0) == Some(0)
            && hex_byte(&hex, 4) == Some(0x17)
            && hex_byte(&hex, 5) == Some(2)
            && hex_byte(&hex, 12) == Some(1)
            && lba == Some(BAD_LBA)
            && logged["result"] == 7
            && logged["failing_lba"] == BAD_LBA,
        || format!("log {hex}; {}; state {}", text(run, "nvme_stlog.err"), v1["self_test"]),
    );
    let h = out(run, "nvme_health")["devices"][0].clone();
    let last = &h["nvme"]["last_self_test"];
    c.check(
        "NVMe: plain drivelab health reports FAILED with the newest Device Self-test's failure at LBA 20000 (critical warning 0)",
        h["verdict"] == "failed" && last["result"] == 7 && last["failing_lba"] == BAD_LBA,
        || why(run, "nvme_health"),
    );
}

#[test]
fn health_logs_and_self_tests_of_the_emulated_drives_agree_with_smartctl() {
    let run = boot();
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    statistics_checks(&mut c, &run);
    error_log_checks(&mut c, &run);
    self_test_checks(&mut c, &run);
    smartctl_x_checks(&mut c, &run);
    sas_checks(&mut c, &run);
    nvme_checks(&mut c, &run);
    print_times(&run);
    c.finish(&ctx);
}
