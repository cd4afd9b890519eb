//! Issue 28 item 1: drivelab against emulated SAS and SATA drives served
//! from user space through the guest kernel's own SCSI target
//! (target_core_user + tcm_loop). `drivelab-tcmuemu` (crates/tcmuemu)
//! creates the user backstore and a loopback LUN over it; the guest's sd
//! and sg drivers find a disk, and every CDB they and drivelab send
//! (SG_IO, ATA PASS-THROUGH) comes to the emulator through its UIO ring:
//!
//! - SAS: the kernel sees a disk of the emulator's size, vendor, product,
//!   serial (VPD 80h) and transfer limit (VPD B0h); 1 MiB written through
//!   the block layer lands in the backing file at the same offset and is
//!   counted; `drivelab health` and smartctl agree with the emulator
//!   (serial, LOG SENSE temperature); `drivelab run` reads it whole; a
//!   command never answered (a fault) is ended by the kernel's timer and
//!   the drive serves what follows.
//! - SATA behind the SATL: `drivelab health` = smartctl = the emulator on
//!   identity, capacity, SMART status and attributes (241 counts the 1 MiB
//!   written).
//! - ATA security erase, enhanced: SET PASSWORD, ERASE PREPARE, ERASE UNIT
//!   reach the drive in that order, no password is left, the drive reads
//!   as its own pattern, the certificate says Purge.
//! - ATA SANITIZE overwrite and crypto scramble: drivelab polls SANITIZE
//!   STATUS EXT while the emulator runs it, waits for the end, Purge; a
//!   sanitize that fails half way (a fault) ends in exit 1, no certificate.
//! - SCSI SANITIZE on the SAS drive, block erase and cryptographic erase:
//!   drivelab asks REPORT SUPPORTED OPERATION CODES, sends SANITIZE with
//!   IMMED, polls REQUEST SENSE while it runs, Purge; the drive reads as
//!   zeroes after the block erase, as neither the old data nor zeroes after
//!   the crypto erase; a sanitize that fails (a fault) ends in exit 1, no
//!   certificate.
//! - A frozen drive and a drive locked by an unknown password: refused in
//!   one line, no security command sent, nothing written.
//! - A device configuration overlay: found (DEVICE CONFIGURATION
//!   IDENTIFY), the erase refused even with `--restore-native-max`,
//!   nothing changed.
//! - A host protected area: the erase is refused without
//!   `--restore-native-max`; with it SET MAX ADDRESS EXT restores the
//!   native max, the whole drive is erased and verified, and the
//!   certificate shows the capacity before, after and native.
//!
//! One boot, eight drives; the emulators' state files are copied after each
//! step and compared on the host. Needs root, QEMU, the cached kernel
//! (`bash tests/vm/setup.sh`) and the host's smartctl (tests/run installs
//! smartmontools).

use std::time::Duration;

use drivelab_vmtest::drivelab_bin::static_package_binary;
use drivelab_vmtest::results::{cert, json, out, print_times, row, why};
use drivelab_vmtest::{Checks, GuestRun, Vm};
use serde_json::Value;

const SMARTCTL: &str = "/usr/sbin/smartctl";

/// The drive's size, MiB.
const MIB: u64 = 16;

const SCRIPT: &str = r#"
export PATH=$PATH:/usr/sbin XDG_CONFIG_HOME=/tmp/cfg
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mark start
# emu NAME HBA SERIAL ARGS...: start a drive and wait for its disk.
emu() {
  n=$1; h=$2; s=$3; shift 3
  drivelab-tcmuemu --backing /tmp/$n.img --size-mib @MIB@ --name $n --hba $h --serial $s \
      --state /tmp/$n.json "$@" > $n.emu.out 2> $n.emu.err &
  EMUS="$EMUS $!"
  i=0; while [ -z "$(disk_of $s)" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
}
# sg_of SERIAL: /dev/sgN whose VPD 80h serial is SERIAL.
sg_of() { for d in /sys/class/scsi_generic/sg*; do [ "$(vpd80_serial $d/device/vpd_pg80)" = "$1" ] && echo /dev/${d##*/}; done; return 0; }
# pat_md5 OCTAL: the MD5 of the drive's size of those bytes repeated.
pat_md5() {
  printf "$1" > /tmp/p.bin
  while [ $(stat -c %s /tmp/p.bin) -lt $((@MIB@ << 20)) ]; do cat /tmp/p.bin /tmp/p.bin > /tmp/p2.bin; mv /tmp/p2.bin /tmp/p.bin; done
  md5sum < /tmp/p.bin | cut -d' ' -f1; rm -f /tmp/p.bin
}
# disk_of SERIAL: /dev/sdX whose VPD 80h serial is SERIAL.
state() { sleep 0.3; cp /tmp/$1.json $2.state.json; }
head -c $((@MIB@ << 20)) /dev/zero | md5sum | cut -d' ' -f1 > zero.md5
# fill DEV OCTAL: that byte over the whole drive.
fill() {
  head -c 1048576 /dev/zero | tr '\000' "\\$2" > /tmp/fill.bin
  i=0; while [ $i -lt @MIB@ ]; do cat /tmp/fill.bin; i=$((i + 1)); done | dd of=$1 bs=64k oflag=direct 2>/dev/null
  rm -f /tmp/fill.bin
}

: > /tmp/sas.control
emu sas 1 DLTCMUSAS001 --product "TCMU SAS DISK" --control /tmp/sas.control --command-timeout @CMD_TIMEOUT_S@
SAS=$(disk_of DLTCMUSAS001)
printf '{"sas":"%s"}\n' "$SAS" > names.json
mark attached
disk_json ${SAS#/dev/} > sas.disk.json
cat /sys/block/${SAS#/dev/}/queue/max_sectors_kb > sas.max_kb
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
run_json sas_smartctl smartctl -i -H -A -j $SAS
state sas p2
run_json read_all drivelab run --name=all --filename=$SAS --rw=read --bs=64k --iodepth=4 --direct=1 --output-format=json
state sas p3
# A command never answered: LOG SENSE hangs; the kernel's command timer
# ends it; the drive still serves what follows.
echo "hang scsi 4d" > /tmp/sas.control
run_json hang_health drivelab health $SAS --output-format json
state sas p4
: > /tmp/sas.control
run_json after_hang dd if=$SAS of=/dev/null bs=64k count=16 iflag=direct
state sas p5
mark sas

# --- SCSI SANITIZE on the SAS drive: block erase, cryptographic erase, and
# a drive whose sanitize fails half way.
fill $SAS 245
md5 $SAS > ssblock.md5_before
state sas q0
run_json ssblock @ERASE@ $SAS --method scsi-sanitize --confirm-serial DLTCMUSAS001 --certificate-dir /out/certs/ssblock
state sas q1
md5 $SAS > ssblock.md5_after
fill $SAS 132
md5 $SAS > sscrypto.md5_before
run_json sscrypto @ERASE@ $SAS --method scsi-sanitize --crypto --confirm-serial DLTCMUSAS001 --certificate-dir /out/certs/sscrypto
state sas q2
md5 $SAS > sscrypto.md5_after
emu sasfail 8 DLTCMUSASF01 --fault sanitize-fail --product "TCMU SAS DISK"
SASFAIL=$(disk_of DLTCMUSASF01)
echo "$SASFAIL" > sasfail.name
run_json sssanfail @ERASE@ $SASFAIL --method scsi-sanitize --confirm-serial DLTCMUSASF01 --certificate-dir /out/certs/sssanfail
state sasfail y1
mark scsi_sanitize

# --- SCSI WRITE SAME and UNMAP (discard) on the SAS drive, through drivelab erase.
state sas w0
run_json ws @ERASE@ $SAS --method write-same --pattern fixed:0xa55a0ff0 --confirm-serial DLTCMUSAS001 --certificate-dir /out/certs/ws
state sas w1
md5 $SAS > ws.md5_after
pat_md5 '\245\132\017\360' > ws.md5_pattern
cat /sys/block/${SAS#/dev/}/queue/discard_max_bytes > sas.discard_max
run_json sasdiscard @ERASE@ $SAS --method discard --confirm-serial DLTCMUSAS001 --certificate-dir /out/certs/sasdiscard
state sas w2
md5 $SAS > sasdiscard.md5_after
mark write_same

# --- A storage array's drive: 520-byte blocks, reformatted to 512.
drivelab-tcmuemu --backing /tmp/s520.img --size-mib @MIB@ --name s520 --hba 9 --serial DLTCMU520001 \
    --block-size 520 --product "TCMU SAS 520" --state /tmp/s520.json > s520.emu.out 2> s520.emu.err &
EMUS="$EMUS $!"
i=0; while [ -z "$(sg_of DLTCMU520001)" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
S520=$(sg_of DLTCMU520001)
S520_SD=$(disk_of DLTCMU520001)
printf '{"sg":"%s","sd":"%s"}\n' "$S520" "$S520_SD" > s520.names.json
state s520 s520.r0
run_json fmt_rc_before drivelab device $S520 read-capacity --output-format json
run_json fmt_noyes drivelab device $S520_SD format-unit --block-size 512 --output-format json
run_json fmt_sg_noforce drivelab device $S520 format-unit --block-size 512 --yes --output-format json
run_json fmt_bad drivelab device $S520_SD format-unit --block-size 513 --yes --output-format json
state s520 s520.r1
run_json fmt drivelab device $S520_SD format-unit --block-size 512 --yes --output-format json
state s520 s520.r2
run_json fmt_rc_after drivelab device $S520 read-capacity --output-format json
i=0; while [ "$(cat /sys/block/${S520_SD#/dev/}/size)" = 0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
cat /sys/block/${S520_SD#/dev/}/size > s520.size_after
mark reformat

# --- SATA: health against smartctl and the emulator.
emu sata 2 DLTCMUSATA01 --sata --product "DRIVELAB TCMU SATA SSD" --revision 1.0 --self-test-seconds @SELF_TEST_S@
SATA=$(disk_of DLTCMUSATA01)
emu frozen 3 DLTCMUFROZ01 --sata --frozen --product "DRIVELAB TCMU SATA SSD"
FROZEN=$(disk_of DLTCMUFROZ01)
emu hpa 4 DLTCMUHPA001 --sata --hpa-mib @HPA_MIB@ --product "DRIVELAB TCMU SATA SSD"
HPA=$(disk_of DLTCMUHPA001)
emu fail 5 DLTCMUFAIL01 --sata --fault sanitize-fail --product "DRIVELAB TCMU SATA SSD"
FAIL=$(disk_of DLTCMUFAIL01)
emu locked 6 DLTCMULOCK01 --sata --locked-password "someone else's" --product "DRIVELAB TCMU SATA SSD"
LOCKED=$(disk_of DLTCMULOCK01)
emu dco 7 DLTCMUDCO001 --sata --dco-mib @HPA_MIB@ --product "DRIVELAB TCMU SATA SSD"
DCO=$(disk_of DLTCMUDCO001)
printf '{"sas":"%s","sata":"%s","frozen":"%s","hpa":"%s","fail":"%s","locked":"%s","dco":"%s"}\n' "$SAS" "$SATA" "$FROZEN" "$HPA" "$FAIL" "$LOCKED" "$DCO" > names.json
mark sata_attached
head -c 1048576 /dev/zero | tr '\000' '\245' > /tmp/a5.bin
dd if=/tmp/a5.bin of=$SATA bs=64k oflag=direct 2>/dev/null
state sata s0
run_json sata_health drivelab health $SATA --output-format json
run_json sata_smartctl smartctl -i -A -H -j $SATA
state sata s1
mark sata_health

# --- SCT Write Same, TRIM through the SATL (discard), SMART self-tests.
run_json sct @ERASE@ $SATA --method sct-write-same --pattern fixed:0x12345678 --confirm-serial DLTCMUSATA01 --certificate-dir /out/certs/sct
state sata t1
md5 $SATA > sct.md5_after
pat_md5 '\022\064\126\170' > sct.md5_pattern
run_json sct_status drivelab device $SATA sct-status --output-format json
run_json satadiscard @ERASE@ $SATA --method discard --confirm-serial DLTCMUSATA01 --certificate-dir /out/certs/satadiscard
state sata t2
md5 $SATA > satadiscard.md5_after
run_json st_drivelab drivelab health $SATA --self-test short --yes --poll-ms 500 --output-format json
state sata t3
run_json st_smartctl_start smartctl -t short $SATA
run_json st_smartctl_running smartctl -c -j $SATA
state sata t4
sleep $((@SELF_TEST_S@ + 1))
run_json st_smartctl_log smartctl -l selftest -j $SATA
run_json st_smartctl_xlog smartctl -l xselftest -l directory -j $SATA
state sata t5
mark sata_sct_trim_selftest

# --- ATA security erase, enhanced: the whole drive filled first.
rm -f /tmp/a5.bin
fill $SATA 245
md5 $SATA > sec.md5_before
state sata s2
run_json sec @ERASE@ $SATA --method ata-security-erase-enhanced --confirm-serial DLTCMUSATA01 --certificate-dir /out/certs/sec
state sata s3
md5 $SATA > sec.md5_after
head -c $((@MIB@ << 20)) /dev/zero | tr '\000' '\154' | md5sum | cut -d' ' -f1 > sec.md5_pattern
mark sec

# --- ATA SANITIZE: overwrite (the zero pattern), crypto scramble, a failure.
fill $SATA 245
state sata s4
run_json ow @ERASE@ $SATA --method ata-sanitize --confirm-serial DLTCMUSATA01 --certificate-dir /out/certs/ow
state sata s5
md5 $SATA > ow.md5_after
fill $SATA 132
md5 $SATA > crypto.md5_before
run_json crypto @ERASE@ $SATA --method ata-sanitize --crypto --confirm-serial DLTCMUSATA01 --certificate-dir /out/certs/crypto
state sata s6
md5 $SATA > crypto.md5_after
run_json sanfail @ERASE@ $FAIL --method ata-sanitize --confirm-serial DLTCMUFAIL01 --certificate-dir /out/certs/sanfail
state fail x1
run_json read_after_fail dd if=$FAIL of=/dev/null bs=512 count=1 iflag=direct
mark sanitize

# --- A frozen drive: refused, nothing sent.
state frozen f0
md5 $FROZEN > frozen.md5_before
run_json frozen @ERASE@ $FROZEN --method ata-security-erase --confirm-serial DLTCMUFROZ01 --certificate-dir /out/certs/frozen
state frozen f1
md5 $FROZEN > frozen.md5_after
mark frozen

# --- A drive locked by someone else's password: refused, nothing sent.
state locked l0
run_json locked @ERASE@ $LOCKED --method ata-security-erase-enhanced --confirm-serial DLTCMULOCK01 --certificate-dir /out/certs/locked
run_json locked_force @ERASE@ $LOCKED --force --method ata-security-erase-enhanced --confirm-serial DLTCMULOCK01 --certificate-dir /out/certs/locked
state locked l1
mark locked

# --- A device configuration overlay: refused even with --restore-native-max.
state dco d0
run_json dco @ERASE@ $DCO --method ata-security-erase --restore-native-max --confirm-serial DLTCMUDCO001 --certificate-dir /out/certs/dco
state dco d1
mark dco

# --- A host protected area: held, then restored and erased whole.
cat /sys/block/${HPA#/dev/}/size > hpa.size_before
state hpa h0
run_json hpa_held @ERASE@ $HPA --method ata-security-erase --confirm-serial DLTCMUHPA001 --certificate-dir /out/certs/hpa_held
state hpa h1
run_json hpa_restored @ERASE@ $HPA --method ata-security-erase --restore-native-max --confirm-serial DLTCMUHPA001 --certificate-dir /out/certs/hpa
state hpa h2
cat /sys/block/${HPA#/dev/}/size > hpa.size_after
md5 $HPA > hpa.md5_after
mark hpa
# Detach the disks while their emulators still answer (the kernel's
# shutdown would otherwise wait on commands nobody serves), then stop them.
for d in $SAS $SASFAIL $S520_SD $SATA $FROZEN $HPA $FAIL $LOCKED $DCO; do echo 1 > /sys/block/${d#/dev/}/device/delete; done
kill $EMUS
true
"#;

/// How long the kernel waits for a command the SAS emulator never answers
/// (its backstore's cmd_time_out), s.
const CMD_TIMEOUT_S: u64 = 3;

/// How long the SATA drive's short self-test runs, s.
const SELF_TEST_S: u64 = 3;

/// What the HPA drive shows before its native max is restored, MiB.
const HPA_MIB: u64 = 12;

const ERASE: &str = "drivelab erase --verify full --yes --output-format json";

fn script() -> String {
    SCRIPT
        .replace("@ERASE@", ERASE)
        .replace("@MIB@", &MIB.to_string())
        .replace("@HPA_MIB@", &HPA_MIB.to_string())
        .replace("@CMD_TIMEOUT_S@", &CMD_TIMEOUT_S.to_string())
        .replace("@SELF_TEST_S@", &SELF_TEST_S.to_string())
}

fn boot() -> GuestRun {
    let emu = static_package_binary("drivelab-tcmuemu", "drivelab-tcmuemu")
        .unwrap_or_else(|e| panic!("cannot build the emulator for the guest: {e}"));
    Vm::builder()
        .modules(&["target_core_user", "tcm_loop"])
        .binary("drivelab-tcmuemu", &emu)
        .host_tool(SMARTCTL)
        .with_drivelab()
        .guest_script(&script())
        .timeout(Duration::from_secs(600))
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"))
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
        text(run, "sas.max_kb") == "1024",
        || text(run, "sas.max_kb"),
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
    // drivelab's probe (by p2) asks the SAS drive for ATA IDENTIFY DEVICE
    // through ATA PASS-THROUGH, which the SAS personality lacks.
    let p2 = json(run, "p2.state.json");
    let pass_through = |v: &Value| {
        ["85", "a1"]
            .iter()
            .map(|o| v["counters"]["by_opcode"][o].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    c.check(
        "the emulator answered ATA PASS-THROUGH and the rest it lacks with CHECK CONDITION",
        pass_through(&p2) > pass_through(&p1)
            && counter(&p2, "check_conditions") - counter(&p1, "check_conditions")
                >= pass_through(&p2) - pass_through(&p1),
        || format!("{p1}\n{p2}"),
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
    let sc = out(run, "sas_smartctl");
    c.check(
        "SAS: temperature and trip point from LOG SENSE 0Dh, informational exceptions clear: drivelab = smartctl = 35 / 70 C",
        dev["scsi"]["temperature"]["current_c"] == 35
            && dev["scsi"]["temperature"]["reference_c"] == 70
            && sc["temperature"]["current"] == 35
            && sc["temperature"]["drive_trip"] == 70
            && dev["scsi"]["informational_exceptions"]["ok"] == true
            && sc["smart_status"]["passed"] == true,
        || format!("drivelab {}; smartctl {sc}", dev["scsi"]),
    );
    c.check(
        "SAS: serial: drivelab = smartctl = VPD 80h",
        sc["serial_number"] == "DLTCMUSAS001",
        || format!("smartctl {sc}"),
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

/// The ATA commands the emulator received between two states.
fn ata_sent(before: &Value, after: &Value) -> Vec<String> {
    let list = |v: &Value| -> Vec<String> {
        v["ata"]["commands"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (b, a) = (list(before), list(after));
    a.get(b.len()..).map(<[String]>::to_vec).unwrap_or_default()
}

/// The raw value of SMART attribute `id` in drivelab's health JSON.
fn ours_raw(h: &Value, id: u64) -> Option<u64> {
    h["ata"]["smart"]["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["id"].as_u64() == Some(id))?["raw"]
        .as_u64()
}

/// The raw value of SMART attribute `id` in smartctl's JSON.
fn theirs_raw(sc: &Value, id: u64) -> Option<u64> {
    sc["ata_smart_attributes"]["table"]
        .as_array()?
        .iter()
        .find(|a| a["id"].as_u64() == Some(id))?["raw"]["value"]
        .as_u64()
}

fn hang_checks(c: &mut Checks, run: &GuestRun) {
    let (p3, p4, p5) = (
        json(run, "p3.state.json"),
        json(run, "p4.state.json"),
        json(run, "p5.state.json"),
    );
    let hung = counter(&p4, "unanswered") - counter(&p3, "unanswered");
    let (s, _, _) = run.outcome("hang_health");
    c.check(
        "hang: LOG SENSE taken and never answered; the kernel's timer ended it and drivelab health returned",
        hung >= 1 && (s == 0 || s == 1),
        || format!("unanswered {hung}; {}", why(run, "hang_health")),
    );
    c.check(
        "hang: the drive still serves the commands that follow (1 MiB read, counted)",
        run.outcome("after_hang").0 == 0
            && counter(&p5, "blocks_read") - counter(&p4, "blocks_read") == 2048,
        || format!("{}; {p4}\n{p5}", why(run, "after_hang")),
    );
}

fn sata_health_checks(c: &mut Checks, run: &GuestRun) {
    let h = out(run, "sata_health")["devices"][0].clone();
    let sc = out(run, "sata_smartctl");
    let (s0, s1) = (json(run, "s0.state.json"), json(run, "s1.state.json"));
    let t = |v: &Value| v.as_str().map(|x| x.trim().to_string()).unwrap_or_default();
    c.check(
        "SATA: serial, model, firmware: drivelab = smartctl = the emulator's IDENTIFY",
        t(&h["serial"]) == "DLTCMUSATA01"
            && t(&sc["serial_number"]) == "DLTCMUSATA01"
            && t(&h["model"]) == "DRIVELAB TCMU SATA SSD"
            && t(&sc["model_name"]) == "DRIVELAB TCMU SATA SSD"
            && t(&h["firmware"]) == "1.0"
            && t(&sc["firmware_version"]) == "1.0",
        || format!("drivelab {h}; smartctl {sc}; {}", why(run, "sata_health")),
    );
    c.check(
        "SATA: capacity: drivelab = smartctl = the emulator's blocks",
        h["capacity"]["accessible_sectors"] == BLOCKS
            && sc["user_capacity"]["blocks"] == BLOCKS
            && s1["ata"]["max_blocks"] == BLOCKS,
        || {
            format!(
                "drivelab {}; smartctl {}",
                h["capacity"], sc["user_capacity"]
            )
        },
    );
    c.check(
        "SATA: SMART overall status passed (RETURN STATUS): drivelab = smartctl",
        h["ata"]["status"] == "passed" && sc["smart_status"]["passed"] == true,
        || {
            format!(
                "drivelab {}; smartctl {}",
                h["ata"]["status"], sc["smart_status"]
            )
        },
    );
    // 241 moved with the 1 MiB written; drivelab, smartctl and the
    // emulator agree (nothing was written between the two reads).
    let emu_w = s1["ata"]["smart"]["lbas_written"].as_u64();
    c.check(
        "SATA: attribute 241 (LBAs written) = 2048 after 1 MiB: drivelab = smartctl = emulator",
        ours_raw(&h, 241) == emu_w
            && theirs_raw(&sc, 241) == emu_w
            && emu_w.is_some_and(|w| w >= 2048)
            && s0["ata"]["smart"]["lbas_written"] == 2048,
        || {
            format!(
                "drivelab {:?}, smartctl {:?}, emulator {emu_w:?}",
                ours_raw(&h, 241),
                theirs_raw(&sc, 241)
            )
        },
    );
    let ids = |v: Option<&Vec<Value>>, key: &str| {
        v.map(|a| a.iter().filter_map(|x| x[key].as_u64()).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let ours = ids(h["ata"]["smart"]["attributes"].as_array(), "id");
    let theirs = ids(sc["ata_smart_attributes"]["table"].as_array(), "id");
    c.check(
        "SATA: the attribute ids: drivelab = smartctl = 5, 9, 12, 194, 241, 242",
        ours == theirs && ours == vec![5, 9, 12, 194, 241, 242],
        || format!("drivelab {ours:?}; smartctl {theirs:?}"),
    );
}

fn security_checks(c: &mut Checks, run: &GuestRun) {
    let r = row(run, "sec");
    c.check(
        "sec: drivelab erase --method ata-security-erase-enhanced exits 0, drive erased",
        run.outcome("sec").0 == 0
            && r["result"] == "erased"
            && r["method"] == "ata-security-erase-enhanced",
        || why(run, "sec"),
    );
    let cert = cert(run, &r);
    c.check(
        "sec: the certificate says ata-security-erase-enhanced, NIST Purge, the whole drive",
        cert["erase"]["method"] == "ata-security-erase-enhanced"
            && cert["erase"]["nist_category"] == "Purge"
            && cert["drive"]["capacity_bytes"] == MIB << 20,
        || format!("certificate {cert}"),
    );
    let (s2, s3) = (json(run, "s2.state.json"), json(run, "s3.state.json"));
    let sent = ata_sent(&s2, &s3);
    let security: Vec<&String> = sent.iter().filter(|x| x.starts_with("SECURITY")).collect();
    c.check(
        "sec: the emulator received SET PASSWORD, ERASE PREPARE, ERASE UNIT in that order, and no password is left",
        security == ["SECURITY SET PASSWORD", "SECURITY ERASE PREPARE", "SECURITY ERASE UNIT"]
            && s3["ata"]["security"]["enabled"] == false
            && s3["ata"]["security"]["locked"] == false
            && s3["ata"]["security"]["erases"] == serde_json::json!([{"enhanced": true, "master_password": false}]),
        || format!("sent {sent:?}; state {}", s3["ata"]["security"]),
    );
    let (before, after, pattern) = (
        text(run, "sec.md5_before"),
        text(run, "sec.md5_after"),
        text(run, "sec.md5_pattern"),
    );
    c.check(
        "sec: the drive reads back as the emulator's enhanced-erase pattern (6Ch), not the old data",
        !pattern.is_empty() && after == pattern && after != before,
        || format!("before {before}, after {after}, pattern {pattern}"),
    );
}

fn sanitize_checks(c: &mut Checks, run: &GuestRun) {
    let zero = text(run, "zero.md5");
    for (name, crypto) in [("ow", false), ("crypto", true)] {
        let r = row(run, name);
        let cert = cert(run, &r);
        c.check(
            &format!("{name}: drivelab erase --method ata-sanitize exits 0; certificate: ata-sanitize, NIST Purge"),
            run.outcome(name).0 == 0
                && r["result"] == "erased"
                && cert["erase"]["method"] == "ata-sanitize"
                && cert["erase"]["nist_category"] == "Purge",
            || format!("{}; certificate {cert}", why(run, name)),
        );
        let (before, after) = if crypto {
            (json(run, "s5.state.json"), json(run, "s6.state.json"))
        } else {
            (json(run, "s4.state.json"), json(run, "s5.state.json"))
        };
        let kind = if crypto {
            "crypto-scramble"
        } else {
            "overwrite"
        };
        let sent = ata_sent(&before, &after);
        let polls = after["ata"]["sanitize"]["status_polls_while_running"]
            .as_u64()
            .unwrap_or(0)
            - before["ata"]["sanitize"]["status_polls_while_running"]
                .as_u64()
                .unwrap_or(0);
        c.check(
            &format!("{name}: the emulator ran a {kind}, drivelab polled SANITIZE STATUS EXT while it ran and waited for its end"),
            after["ata"]["sanitize"]["done"].as_array().and_then(|d| d.last()) == Some(&serde_json::json!({"kind": kind, "ok": true}))
                && polls > 0
                && sent.iter().any(|x| x == if crypto { "CRYPTO SCRAMBLE EXT" } else { "OVERWRITE EXT" }),
            || format!("polls {polls}; sent {sent:?}; {}", after["ata"]["sanitize"]),
        );
    }
    let ow = text(run, "ow.md5_after");
    c.check(
        "ow: the drive reads back as zeroes (the pattern overwritten), verified by drivelab too",
        !zero.is_empty() && ow == zero && row(run, "ow")["verification"] == "full: passed",
        || format!("{ow} vs zeroes {zero}; row {}", row(run, "ow")),
    );
    let (cb, ca) = (
        text(run, "crypto.md5_before"),
        text(run, "crypto.md5_after"),
    );
    c.check(
        "crypto: the drive reads as neither the old data nor zeroes",
        !ca.is_empty() && ca != cb && ca != zero,
        || format!("before {cb}, after {ca}, zeroes {zero}"),
    );
    let (s, _, _) = run.outcome("sanfail");
    let x1 = json(run, "x1.state.json");
    c.check(
        "sanfail: a sanitize that fails half way: drivelab exits 1, no certificate, the emulator recorded the failure",
        s == 1
            && row(run, "sanfail")["certificate"].is_null()
            && x1["ata"]["sanitize"]["done"] == serde_json::json!([{"kind": "overwrite", "ok": false}]),
        || format!("{}; {}", why(run, "sanfail"), x1["ata"]["sanitize"]),
    );
    // Regression: drivelab called the aborted SANITIZE STATUS EXT of a
    // failed sanitize "likely not supported by this device".
    let e = run.outcome("sanfail").2;
    c.check(
        "sanfail: drivelab says the sanitize failed, not that the status command is unsupported",
        e.contains("the device reports the sanitize failed") && !e.contains("not supported"),
        || why(run, "sanfail"),
    );
    c.check(
        "sanfail: media access is refused after the failure",
        run.outcome("read_after_fail").0 != 0,
        || why(run, "read_after_fail"),
    );
}

/// SCSI SANITIZE through `drivelab erase --method scsi-sanitize` on the
/// SAS personality: block erase, cryptographic erase, a failure.
fn scsi_sanitize_checks(c: &mut Checks, run: &GuestRun) {
    let zero = text(run, "zero.md5");
    let states = [
        json(run, "q0.state.json"),
        json(run, "q1.state.json"),
        json(run, "q2.state.json"),
    ];
    for (i, (name, kind)) in [("ssblock", "block-erase"), ("sscrypto", "crypto-scramble")]
        .into_iter()
        .enumerate()
    {
        let r = row(run, name);
        let cert = cert(run, &r);
        c.check(
            &format!("{name}: drivelab erase --method scsi-sanitize exits 0; certificate: scsi-sanitize, NIST Purge"),
            run.outcome(name).0 == 0
                && r["result"] == "erased"
                && cert["erase"]["method"] == "scsi-sanitize"
                && cert["erase"]["nist_category"] == "Purge",
            || format!("{}; certificate {cert}", why(run, name)),
        );
        // q1 is taken after the block erase; the crypto erase runs between
        // q1 and q2 (a fill between them writes, but sends no SANITIZE).
        let (before, after) = (&states[i], &states[i + 1]);
        let sanitizes = |v: &Value| v["counters"]["by_opcode"]["48"].as_u64().unwrap_or(0);
        let polls = after["sanitize"]["status_polls_while_running"]
            .as_u64()
            .unwrap_or(0)
            - before["sanitize"]["status_polls_while_running"]
                .as_u64()
                .unwrap_or(0);
        c.check(
            &format!("{name}: the emulator ran one {kind}, drivelab polled REQUEST SENSE while it ran and waited for its end"),
            after["sanitize"]["done"].as_array().and_then(|d| d.last())
                == Some(&serde_json::json!({"kind": kind, "ok": true}))
                && after["sanitize"]["running"].is_null()
                && sanitizes(after) - sanitizes(before) == 1
                && polls > 0,
            || format!("polls {polls}; {before}\n{after}"),
        );
    }
    let (bb, ba) = (
        text(run, "ssblock.md5_before"),
        text(run, "ssblock.md5_after"),
    );
    c.check(
        "ssblock: the drive reads back as zeroes after the block erase, verified by drivelab too",
        !zero.is_empty()
            && ba == zero
            && bb != zero
            && row(run, "ssblock")["verification"] == "full: passed",
        || {
            format!(
                "before {bb}, after {ba}, zeroes {zero}; row {}",
                row(run, "ssblock")
            )
        },
    );
    let (cb, ca) = (
        text(run, "sscrypto.md5_before"),
        text(run, "sscrypto.md5_after"),
    );
    c.check(
        "sscrypto: the drive reads as neither the old data nor zeroes",
        !ca.is_empty() && ca != cb && ca != zero,
        || format!("before {cb}, after {ca}, zeroes {zero}"),
    );
    let (s, _, e) = run.outcome("sssanfail");
    let y1 = json(run, "y1.state.json");
    c.check(
        "sssanfail: a SCSI sanitize that fails half way: drivelab exits 1, no certificate, says the device reports the failure; the emulator recorded it",
        s == 1
            && row(run, "sssanfail")["certificate"].is_null()
            && e.contains("the device reports the sanitize failed")
            && y1["sanitize"]["done"] == serde_json::json!([{"kind": "block-erase", "ok": false}])
            && y1["sanitize"]["failed"] == true,
        || format!("{}; {}", why(run, "sssanfail"), y1["sanitize"]),
    );
}

/// The change of a counter between two states.
fn moved(before: &Value, after: &Value, name: &str) -> u64 {
    counter(after, name).saturating_sub(counter(before, name))
}

fn opcode_count(v: &Value, op: &str) -> u64 {
    v["counters"]["by_opcode"][op].as_u64().unwrap_or(0)
}

/// SCSI WRITE SAME and UNMAP on the SAS drive through drivelab erase.
fn write_same_checks(c: &mut Checks, run: &GuestRun) {
    let (w0, w1, w2) = (
        json(run, "w0.state.json"),
        json(run, "w1.state.json"),
        json(run, "w2.state.json"),
    );
    let r = row(run, "ws");
    let cert = cert(run, &r);
    c.check(
        "ws: drivelab erase --method write-same exits 0, verified; certificate: write-same, NIST Clear",
        run.outcome("ws").0 == 0
            && r["result"] == "erased"
            && r["verification"] == "full: passed"
            && cert["erase"]["method"] == "write-same"
            && cert["erase"]["nist_category"] == "Clear",
        || format!("{}; certificate {cert}", why(run, "ws")),
    );
    let (after, want) = (text(run, "ws.md5_after"), text(run, "ws.md5_pattern"));
    c.check(
        "ws: the drive reads back as the pattern (A5 5A 0F F0 repeated)",
        !want.is_empty() && after == want,
        || format!("after {after}, pattern {want}"),
    );
    c.check(
        "ws: the emulator wrote every block for WRITE SAME(16), 8192 blocks a command (VPD B0h), and no data was sent as WRITE",
        moved(&w0, &w1, "blocks_written_same") == BLOCKS
            && opcode_count(&w1, "93") - opcode_count(&w0, "93") == BLOCKS / 8192
            && moved(&w0, &w1, "blocks_written") == 0,
        || format!("{w0}\n{w1}"),
    );
    c.check(
        "ws: the certificate's write counter (LOG SENSE 02h, total bytes processed) corroborates the overwrite: 16 MiB counted for 16 MiB",
        cert["health"]["writes"]["verdict"] == "corroborated"
            && cert["health"]["writes"]["counted_bytes"] == MIB << 20,
        || format!("{}", cert["health"]),
    );
    let d = row(run, "sasdiscard");
    c.check(
        "sasdiscard: the kernel offers discard (LBPME, VPD B0h/B2h); drivelab erase --method discard exits 0, verified as zeroes",
        text(run, "sas.discard_max").parse::<u64>().unwrap_or(0) > 0
            && run.outcome("sasdiscard").0 == 0
            && d["result"] == "erased"
            && d["verification"] == "full: passed"
            && text(run, "sasdiscard.md5_after") == text(run, "zero.md5"),
        || format!("discard_max {}; {}", text(run, "sas.discard_max"), why(run, "sasdiscard")),
    );
    c.check(
        "sasdiscard: the kernel's UNMAPs reached the emulator and unmapped every block, nothing written",
        moved(&w1, &w2, "blocks_unmapped") == BLOCKS
            && opcode_count(&w2, "42") > opcode_count(&w1, "42")
            && moved(&w1, &w2, "blocks_written") == 0,
        || format!("{w1}\n{w2}"),
    );
}

/// SCT Write Same and TRIM on the SATA drive.
fn sct_trim_checks(c: &mut Checks, run: &GuestRun) {
    let (s1, t1, t2) = (
        json(run, "s1.state.json"),
        json(run, "t1.state.json"),
        json(run, "t2.state.json"),
    );
    let r = row(run, "sct");
    let cert = cert(run, &r);
    c.check(
        "sct: drivelab erase --method sct-write-same exits 0, verified; certificate: sct-write-same, NIST Clear",
        run.outcome("sct").0 == 0
            && r["result"] == "erased"
            && r["verification"] == "full: passed"
            && cert["erase"]["method"] == "sct-write-same"
            && cert["erase"]["nist_category"] == "Clear",
        || format!("{}; certificate {cert}", why(run, "sct")),
    );
    let (after, want) = (text(run, "sct.md5_after"), text(run, "sct.md5_pattern"));
    c.check(
        "sct: the drive reads back as the 32-bit pattern 12345678h, little-endian",
        !want.is_empty() && after == want,
        || format!("after {after}, pattern {want}"),
    );
    let lbas = |v: &Value| v["ata"]["smart"]["lbas_written"].as_u64().unwrap_or(0);
    let ws = t1["ata"]["sct"]["write_same"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let covered: u64 = ws.iter().filter_map(|w| w["blocks"].as_u64()).sum();
    c.check(
        "sct: the emulator ran SCT Write Same 0101h (foreground) over every block; SMART 241 moved by them, no WRITE sent",
        !ws.is_empty()
            && ws.iter().all(|w| w["function"] == 0x0101)
            && covered == BLOCKS
            && lbas(&t1) - lbas(&s1) == BLOCKS
            && moved(&s1, &t1, "blocks_written") == 0
            && ata_sent(&s1, &t1).iter().any(|x| x == "SMART WRITE LOG"),
        || format!("{}", t1["ata"]),
    );
    c.check(
        "sct: the certificate's write counter (SMART 241) corroborates the overwrite: 16 MiB counted for 16 MiB",
        cert["health"]["writes"]["verdict"] == "corroborated"
            && cert["health"]["writes"]["counted_bytes"] == MIB << 20,
        || format!("{}", cert["health"]),
    );
    let st = out(run, "sct_status")["sct_status"].clone();
    c.check(
        "sct: drivelab device sct-status reads the SCT status log: Write Same 0101h, completed, at the last LBA + 1",
        run.outcome("sct_status").0 == 0
            && st["action_code"] == 2
            && st["function_code"] == 0x0101
            && st["extended_status"] == 0
            && st["current_lba"] == BLOCKS,
        || why(run, "sct_status"),
    );
    let d = row(run, "satadiscard");
    let trimmed = |v: &Value| v["ata"]["trimmed_blocks"].as_u64().unwrap_or(0);
    c.check(
        "satadiscard: drivelab erase --method discard (TRIM with RZAT) exits 0, verified as zeroes",
        run.outcome("satadiscard").0 == 0
            && d["result"] == "erased"
            && d["verification"] == "full: passed"
            && text(run, "satadiscard.md5_after") == text(run, "zero.md5"),
        || why(run, "satadiscard"),
    );
    c.check(
        "satadiscard: the kernel's UNMAPs became TRIMs behind the SATL, over every block",
        trimmed(&t2) - trimmed(&t1) == BLOCKS
            && ata_sent(&t1, &t2)
                .iter()
                .any(|x| x == "DATA SET MANAGEMENT (SATL)"),
        || format!("{}", t2["ata"]),
    );
}

/// SMART self-tests: drivelab's and smartctl's, against the emulator's log.
fn self_test_checks(c: &mut Checks, run: &GuestRun) {
    let (t2, t3, t5) = (
        json(run, "t2.state.json"),
        json(run, "t3.state.json"),
        json(run, "t5.state.json"),
    );
    let d = out(run, "st_drivelab");
    let res = &d["self_test"][0]["result"];
    let sent = ata_sent(&t2, &t3);
    let polls = sent.iter().filter(|x| *x == "SMART READ DATA").count();
    c.check(
        "selftest: drivelab health --self-test short starts it, polls its progress and reads the log: short, completed without error",
        run.outcome("st_drivelab").0 == 0
            && res["code"] == 1
            && res["result"] == 0
            && d["self_test"][0]["aborted"] == false
            && sent.iter().any(|x| x == "SMART EXECUTE OFF-LINE IMMEDIATE")
            && sent.iter().any(|x| x == "SMART READ LOG")
            && polls >= 2,
        || format!("{}; sent {sent:?}", why(run, "st_drivelab")),
    );
    let running = out(run, "st_smartctl_running");
    let pct = running["ata_smart_data"]["self_test"]["status"]["remaining_percent"].as_u64();
    c.check(
        "selftest: smartctl -t short starts another; smartctl -c sees it in progress with the percent left",
        run.outcome("st_smartctl_start").0 == 0 && pct.is_some_and(|p| p > 0 && p <= 90),
        || format!("{}; {running}", why(run, "st_smartctl_start")),
    );
    let log = out(run, "st_smartctl_log");
    let table = log["ata_smart_self_test_log"]["standard"]["table"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let emu = t5["ata"]["self_test"]["log"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    c.check(
        "selftest: smartctl -l selftest = the emulator's log: two short tests, completed without error",
        table.len() == 2
            && emu.len() == 2
            && table.iter().all(|e| e["type"]["value"] == 1 && e["status"]["passed"] == true)
            && emu.iter().all(|e| e["code"] == 1 && e["status"] == 0),
        || format!("smartctl {log}; emulator {emu:?}"),
    );
}

/// smartctl's reading of the GPL side: the extended self-test log (READ
/// LOG EXT 07h) and both log directories.
fn gpl_log_checks(c: &mut Checks, run: &GuestRun) {
    let x = out(run, "st_smartctl_xlog");
    let ext = &x["ata_smart_self_test_log"]["extended"];
    let emu = json(run, "t5.state.json")["ata"]["self_test"]["log"].clone();
    c.check(
        "selftest: smartctl -l xselftest (READ LOG EXT 07h) = the emulator's log: two short tests, completed without error",
        run.outcome("st_smartctl_xlog").0 == 0
            && ext["count"] == 2
            && emu.as_array().is_some_and(|a| a.len() == 2)
            && ext["table"].as_array().is_some_and(|t| {
                t.iter().all(|e| e["type"]["value"] == 1 && e["status"]["passed"] == true)
            }),
        || format!("smartctl {x}; emulator {emu}"),
    );
    // (address, GPL pages, SMART pages): what the two directories list.
    let listed: Vec<(u64, u64, u64)> = x["ata_log_directory"]["table"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|e| {
                    let n = |k: &str| e[k].as_u64().unwrap_or(0);
                    (n("address"), n("gp_sectors"), n("smart_sectors"))
                })
                .collect()
        })
        .unwrap_or_default();
    c.check(
        "logs: smartctl -l directory reads both directories: 01h, 02h and 06h SMART only, 03h and 07h GPL only, 04h (two pages), E0h and E1h both",
        listed
            == [
                (0, 1, 1),
                (1, 0, 1),
                (2, 0, 1),
                (3, 1, 0),
                (4, 2, 2),
                (6, 0, 1),
                (7, 1, 0),
                (0xE0, 1, 1),
                (0xE1, 1, 1),
            ],
        || format!("{listed:?}; {}", x["ata_log_directory"]),
    );
}

/// The 520-byte drive reformatted to 512 with drivelab device format-unit.
fn reformat_checks(c: &mut Checks, run: &GuestRun) {
    let names = json(run, "s520.names.json");
    let before = out(run, "fmt_rc_before");
    c.check(
        "s520: the storage array's drive answers READ CAPACITY with 520-byte blocks",
        before["capacity"]["block_length"] == 520 && before["blocks"] == (MIB << 20) / 520,
        || {
            format!(
                "names {names}; {}; {}",
                why(run, "fmt_rc_before"),
                text(run, "s520.emu.err")
            )
        },
    );
    for (name, says) in [
        ("fmt_noyes", "--yes"),
        ("fmt_sg_noforce", "--force"),
        ("fmt_bad", "--block-size 513"),
    ] {
        let e = out(run, name)["error"].as_str().unwrap_or("").to_string();
        c.check(
            &format!("{name}: refused in one line naming {says}, exit 2"),
            run.outcome(name).0 == 2 && !e.is_empty() && !e.contains('\n') && e.contains(says),
            || why(run, name),
        );
    }
    let (r0, r1, r2) = (
        json(run, "s520.r0.state.json"),
        json(run, "s520.r1.state.json"),
        json(run, "s520.r2.state.json"),
    );
    c.check(
        "s520: the refusals sent nothing: no MODE SELECT, no FORMAT UNIT",
        opcode_count(&r1, "55") == opcode_count(&r0, "55")
            && opcode_count(&r1, "04") == opcode_count(&r0, "04")
            && r1["formats"] == serde_json::json!([]),
        || format!("{r0}\n{r1}"),
    );
    let f = out(run, "fmt");
    c.check(
        "fmt: drivelab device format-unit --block-size 512 through the claim: 520 -> 512, READ CAPACITY after says 512",
        run.outcome("fmt").0 == 0
            && f["before"]["block_length"] == 520
            && f["after"]["block_length"] == 512
            && f["after"]["blocks"] == BLOCKS
            && r2["formats"] == serde_json::json!([{"from": 520, "to": 512}])
            && opcode_count(&r2, "04") - opcode_count(&r1, "04") == 1,
        || format!("{}; {r2}", why(run, "fmt")),
    );
    c.check(
        "fmt: FORMAT UNIT went with IMMED, and drivelab asked REQUEST SENSE until the format (2 s of FORMAT IN PROGRESS) ended",
        f["duration_ms"].as_u64().unwrap_or(0) >= 2000
            && opcode_count(&r2, "03") - opcode_count(&r1, "03") >= 2,
        || format!("{f}; {r2}"),
    );
    let after = out(run, "fmt_rc_after");
    c.check(
        "fmt: READ CAPACITY afterwards and the kernel (rescanned) both see 512-byte blocks, the whole drive",
        after["capacity"]["block_length"] == 512
            && after["blocks"] == BLOCKS
            && f["rescanned"] == true
            && text(run, "s520.size_after") == BLOCKS.to_string(),
        || format!("{}; size {}", why(run, "fmt_rc_after"), text(run, "s520.size_after")),
    );
}

fn frozen_checks(c: &mut Checks, run: &GuestRun) {
    let e = out(run, "frozen")["error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    c.check(
        "frozen: drivelab erase refuses a frozen drive: exit 2, one line saying frozen",
        run.outcome("frozen").0 == 2 && !e.contains('\n') && e.contains("security is frozen"),
        || why(run, "frozen"),
    );
    let (f0, f1) = (json(run, "f0.state.json"), json(run, "f1.state.json"));
    let sent = ata_sent(&f0, &f1);
    c.check(
        "frozen: nothing but IDENTIFY and health reads reached the drive: no security command, no write",
        !sent.iter().any(|x| x.starts_with("SECURITY") || x.starts_with("SET MAX"))
            && counter(&f1, "blocks_written") == counter(&f0, "blocks_written")
            && text(run, "frozen.md5_before") == text(run, "frozen.md5_after"),
        || format!("sent {sent:?}; {f0} -> {f1}"),
    );
}

fn locked_checks(c: &mut Checks, run: &GuestRun) {
    // The claim's safety probe cannot read a locked drive (DATA PROTECT):
    // refused there, in one line; with --force past that, the method's
    // check names the lock.
    let e = out(run, "locked")["error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    c.check(
        "locked: drivelab erase refuses a drive locked by an unknown password: exit 2, one line (the drive cannot be read)",
        run.outcome("locked").0 == 2 && !e.contains('\n') && e.contains("could not be probed"),
        || why(run, "locked"),
    );
    let f = out(run, "locked_force")["error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    c.check(
        "locked: with --force, refused in one line that names the lock",
        run.outcome("locked_force").0 == 2
            && !f.contains('\n')
            && f.contains("locked by a user password"),
        || why(run, "locked_force"),
    );
    let (l0, l1) = (json(run, "l0.state.json"), json(run, "l1.state.json"));
    let sent = ata_sent(&l0, &l1);
    c.check(
        "locked: no security command reached the drive, nothing written, still locked with its password",
        !sent.iter().any(|x| x.starts_with("SECURITY"))
            && counter(&l1, "blocks_written") == counter(&l0, "blocks_written")
            && l1["ata"]["security"]["locked"] == true
            && l1["ata"]["security"]["enabled"] == true
            && l1["ata"]["security"]["attempts"] == 0,
        || format!("sent {sent:?}; {}", l1["ata"]["security"]),
    );
}

fn dco_checks(c: &mut Checks, run: &GuestRun) {
    let e = out(run, "dco")["error"].as_str().unwrap_or("").to_string();
    c.check(
        "dco: a device configuration overlay is found and the erase refused, even with --restore-native-max: exit 2, one line",
        run.outcome("dco").0 == 2 && !e.contains('\n') && e.contains("Device Configuration Overlay"),
        || why(run, "dco"),
    );
    let (d0, d1) = (json(run, "d0.state.json"), json(run, "d1.state.json"));
    let sent = ata_sent(&d0, &d1);
    c.check(
        "dco: drivelab asked DEVICE CONFIGURATION IDENTIFY and changed nothing (no SET, RESTORE, SET MAX, security command, write)",
        sent.iter().any(|x| x == "DEVICE CONFIGURATION IDENTIFY")
            && !sent.iter().any(|x| {
                x.starts_with("SECURITY")
                    || x.starts_with("SET MAX")
                    || x == "DEVICE CONFIGURATION SET"
                    || x == "DEVICE CONFIGURATION RESTORE"
            })
            && counter(&d1, "blocks_written") == counter(&d0, "blocks_written")
            && d1["ata"]["native_blocks"] == (HPA_MIB << 20) / 512
            && d1["ata"]["factory_blocks"] == BLOCKS,
        || format!("sent {sent:?}; {}", d1["ata"]),
    );
}

fn hpa_checks(c: &mut Checks, run: &GuestRun) {
    let hpa_blocks = (HPA_MIB << 20) / 512;
    c.check(
        "hpa: the kernel sees the accessible size, not the native one",
        text(run, "hpa.size_before") == hpa_blocks.to_string(),
        || text(run, "hpa.size_before"),
    );
    let s = run.outcome("hpa_held").0;
    let e = out(run, "hpa_held")["error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let (h0, h1, h2) = (
        json(run, "h0.state.json"),
        json(run, "h1.state.json"),
        json(run, "h2.state.json"),
    );
    let held = ata_sent(&h0, &h1);
    c.check(
        "hpa: without --restore-native-max the erase is refused (exit 2, naming the option), nothing set, nothing written",
        s == 2
            && e.contains("--restore-native-max")
            && !held.iter().any(|x| x.starts_with("SECURITY") || x.starts_with("SET MAX"))
            && counter(&h1, "blocks_written") == counter(&h0, "blocks_written")
            && h1["ata"]["max_blocks"] == hpa_blocks,
        || format!("{}; sent {held:?}", why(run, "hpa_held")),
    );
    let r = row(run, "hpa_restored");
    let cert = cert(run, &r);
    c.check(
        "hpa: with --restore-native-max: SET MAX ADDRESS EXT restores the native max, the erase succeeds",
        run.outcome("hpa_restored").0 == 0
            && r["result"] == "erased"
            && h2["ata"]["max_blocks"] == BLOCKS
            && h2["ata"]["max_volatile"] == true
            && text(run, "hpa.size_after") == BLOCKS.to_string(),
        || format!("{}; state {}", why(run, "hpa_restored"), h2["ata"]),
    );
    let restored = &cert["capacity_restored"];
    c.check(
        "hpa: the certificate shows the capacity before, after and the native max",
        restored["bytes_before"] == HPA_MIB << 20
            && restored["bytes_after"] == MIB << 20
            && restored["native_max_lba"] == BLOCKS - 1
            && cert["erase"]["method"] == "ata-security-erase"
            && cert["erase"]["nist_category"] == "Clear",
        || format!("certificate {cert}"),
    );
    c.check(
        "hpa: the whole native capacity reads back as zeroes, verified by drivelab too",
        text(run, "hpa.md5_after") == text(run, "zero.md5")
            && r["verification"] == "full: passed"
            && h2["ata"]["security"]["erases"]
                == serde_json::json!([{"enhanced": false, "master_password": false}]),
        || format!("row {r}; {}", h2["ata"]["security"]),
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
    for n in ["sata", "frozen", "hpa", "fail", "locked", "dco"] {
        c.check(
            &format!("{n}: the emulated SATA drive appeared as a SCSI disk"),
            names[n].as_str().is_some_and(|s| s.starts_with("/dev/sd")),
            || {
                format!(
                    "names {names}; emulator: {}",
                    text(&run, &format!("{n}.emu.err"))
                )
            },
        );
    }
    disk_checks(&mut c, &run);
    drivelab_checks(&mut c, &run);
    hang_checks(&mut c, &run);
    sata_health_checks(&mut c, &run);
    security_checks(&mut c, &run);
    sanitize_checks(&mut c, &run);
    scsi_sanitize_checks(&mut c, &run);
    write_same_checks(&mut c, &run);
    reformat_checks(&mut c, &run);
    sct_trim_checks(&mut c, &run);
    self_test_checks(&mut c, &run);
    gpl_log_checks(&mut c, &run);
    frozen_checks(&mut c, &run);
    locked_checks(&mut c, &run);
    dco_checks(&mut c, &run);
    hpa_checks(&mut c, &run);
    print_times(&run);
    c.finish(&ctx);
}
