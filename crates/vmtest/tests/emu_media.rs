//! Issue 28 item 3: the FTL model (crates/ftlsim) as the emulated drives'
//! medium (`--media ftl`), seen through drivelab and the drives' own
//! counters in the guest:
//!
//! - NVMe/TCP (`drivelab-nvmeemu`): `drivelab season` (a Sanitize block
//!   erase as its purge, one sequential fill, rounds of 4 KiB random
//!   writes) leaves a drive whose media log (C0h, read by nvme-cli) counts
//!   more NAND writes than host writes (write amplification > 1), its host
//!   pages matching the SMART log's bytes written; then `drivelab erase
//!   --method nvme-sanitize` (block erase) leaves the medium fresh: no
//!   flash page mapped, the lifetime counts kept; and `drivelab erase
//!   --method nvme-sanitize --pattern fixed:0xa55a0ff0` is a Sanitize
//!   Overwrite: the pattern reads back, Purge, written by the drive.
//! - SATA behind the SATL (`drivelab-tcmuemu --sata`): the same season
//!   (its purge an ATA SANITIZE), then smartctl reads SMART attributes 247
//!   and 248 (host and background NAND page programs) as the emulator
//!   counts them, with background programs > 0; `drivelab erase --method
//!   ata-sanitize --pattern fixed:0xa55a0ff0` (SANITIZE OVERWRITE EXT)
//!   leaves the pattern, Purge, written by the drive through the FTL.
//! - SAS (`drivelab-tcmuemu`): `drivelab erase --method scsi-sanitize
//!   --pattern fixed:0xa55a0ff0` is a SCSI SANITIZE OVERWRITE: the pattern
//!   reads back, Purge; then the zero pattern is a BLOCK ERASE: zeroes,
//!   and the medium fresh.
//!
//! One boot; the emulators' state files are copied after each step. Needs
//! root, QEMU, the cached kernel (`bash tests/vm/setup.sh`) and the host
//! packages nvme-cli and smartmontools (tests/run installs them).

use std::time::Duration;

use drivelab_vmtest::results::{cert, json, num, out, print_times, row, status, why};
use drivelab_vmtest::{Checks, GuestRun};
use serde_json::Value;

const NVME_CLI: &str = "/usr/sbin/nvme";
const SMARTCTL: &str = "/usr/sbin/smartctl";
/// Every drive's size, MiB.
const MIB: u64 = 16;
/// Flash pages of a drive (4 KiB each).
const PAGES: u64 = (MIB << 20) / 4096;

const SEASON: &str = "drivelab season $DEV --stages purge,fill,rounds --fill-passes 1 --round-time 4 --max-rounds 3 --state-dir /tmp/st_$NAME --yes --confirm-serial $SER --output-format json";
const ERASE: &str = "drivelab erase $DEV --verify full --yes --confirm-serial $SER --certificate-dir /out/certs/$NAME --output-format json";

const SCRIPT: &str = r#"
export PATH=$PATH:/usr/sbin XDG_CONFIG_HOME=/tmp/cfg
mount -t configfs configfs /sys/kernel/config 2>/dev/null
ip link set lo up
mkdir -p /out/certs
mark start
state() { sleep 0.5; cp /tmp/$1.json $2.state.json; }
head -c $((@MIB@ << 20)) /dev/zero | md5sum | cut -d' ' -f1 > zero.md5
# pat_md5 OCTAL: the MD5 of the drive's size of those bytes repeated.
pat_md5() {
  printf "$1" > /tmp/p.bin
  while [ $(stat -c %s /tmp/p.bin) -lt $((@MIB@ << 20)) ]; do cat /tmp/p.bin /tmp/p.bin > /tmp/p2.bin; mv /tmp/p2.bin /tmp/p.bin; done
  md5sum < /tmp/p.bin | cut -d' ' -f1; rm -f /tmp/p.bin
}
pat_md5 '\245\132\017\360' > pattern.md5
# fill DEV OCTAL: that byte over the whole drive.
fill() {
  head -c 1048576 /dev/zero | tr '\000' "\\$2" > /tmp/fill.bin
  i=0; while [ $i -lt @MIB@ ]; do cat /tmp/fill.bin; i=$((i + 1)); done | dd of=$1 bs=64k oflag=direct 2>/dev/null
  rm -f /tmp/fill.bin
}
# tcmu NAME HBA SERIAL ARGS...: an emulated SCSI drive on the FTL medium.
tcmu() {
  n=$1; h=$2; s=$3; shift 3
  drivelab-tcmuemu --backing /tmp/$n.img --size-mib @MIB@ --name $n --hba $h --serial $s \
      --media ftl --sanitize-seconds 2 --state /tmp/$n.json "$@" > $n.emu.out 2> $n.emu.err &
  EMUS="$EMUS $!"
  i=0; while [ -z "$(disk_of $s)" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
}
# c0 TAG: the NVMe media log (C0h), raw, as hex.
c0() { nvme get-log $CTRL --log-id=0xc0 --log-len=512 --raw-binary 2>$1.c0.err | od -An -tx1 -v | tr -d ' \n' > $1.c0.hex; }

# --- NVMe/TCP on the FTL medium: season, then a Sanitize block erase.
SER=DLEMUFTL0001; NQN=nqn.2026-01.io.drivelab:ftl
drivelab-nvmeemu --listen 127.0.0.1:4420 --nqn $NQN --serial $SER --namespace-mib @MIB@ \
    --media ftl --sanitize-seconds 2 --state /tmp/nvme.json > nvme.emu.out 2> nvme.emu.err &
EMUS="$EMUS $!"
i=0; while [ ! -s /tmp/nvme.json ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
echo "transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$NQN,hostnqn=$NQN:host" > /dev/nvme-fabrics
for c in /sys/class/nvme/nvme*; do [ "$(sysattr $c/serial)" = "$SER" ] && CTRL=/dev/${c##*/}; done
DEV=${CTRL}n1
i=0; while [ ! -b $DEV ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
printf '{"nvme":"%s"}\n' "$DEV" > names.json
mark nvme_connected
NAME=nvme_season; mkdir -p /tmp/st_$NAME; run_json $NAME @SEASON_CMD@ --purge nvme-sanitize
state nvme n1; c0 n1
run_json nvme_smart nvme smart-log $CTRL -o json
mark nvme_season
NAME=nvme_block; run_json $NAME @ERASE@ --method nvme-sanitize
state nvme n2; c0 n2; md5 $DEV > $NAME.md5_after
mark nvme_block
NAME=nvme_ow; run_json $NAME @ERASE@ --method nvme-sanitize --pattern fixed:0xa55a0ff0
state nvme n3; md5 $DEV > $NAME.md5_after
mark nvme_ow
echo 1 > /sys/class/nvme/${CTRL#/dev/}/delete_controller

# --- SATA on the FTL medium: season, SMART 247/248, SANITIZE OVERWRITE.
SER=DLTCMUFTLSATA
tcmu sata 1 $SER --sata --product "TCMU FTL SSD"
DEV=$(disk_of $SER); SATA=$DEV
NAME=sata_season; mkdir -p /tmp/st_$NAME; run_json $NAME @SEASON_CMD@ --purge ata-sanitize
state sata t1
run_json sata_smartctl smartctl -A -j $DEV
mark sata_season
NAME=sata_ow; run_json $NAME @ERASE@ --method ata-sanitize --pattern fixed:0xa55a0ff0
state sata t2; md5 $DEV > $NAME.md5_after
mark sata_ow

# --- SAS on the FTL medium: SCSI SANITIZE OVERWRITE, then BLOCK ERASE.
SER=DLTCMUFTLSAS1
tcmu sas 2 $SER --product "TCMU FTL SAS"
DEV=$(disk_of $SER)
fill $DEV 245
state sas u0
NAME=sas_ow; run_json $NAME @ERASE@ --method scsi-sanitize --pattern fixed:0xa55a0ff0
state sas u1; md5 $DEV > $NAME.md5_after
NAME=sas_block; run_json $NAME @ERASE@ --method scsi-sanitize
state sas u2; md5 $DEV > $NAME.md5_after
mark sas
# Detach the disks while their emulators still answer (the kernel's
# shutdown would otherwise wait on commands nobody serves), then stop them.
for d in $SATA $DEV; do echo 1 > /sys/block/${d#/dev/}/device/delete; done
kill $EMUS
true
"#;

fn script() -> String {
    SCRIPT
        .replace("@SEASON_CMD@", SEASON)
        .replace("@ERASE@", ERASE)
        .replace("@MIB@", &MIB.to_string())
}

fn boot() -> GuestRun {
    drivelab_vmtest::emu::boot_with_tools(
        &script(),
        Duration::from_secs(600),
        &[NVME_CLI, SMARTCTL],
    )
}

fn text(run: &GuestRun, name: &str) -> String {
    run.file(name).unwrap_or_default().trim().to_string()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The little-endian u64 at byte `at` of a media log dumped as hex.
fn log_u64(hex: &str, at: usize) -> Option<u64> {
    let s = hex.get(2 * at..2 * at + 16)?;
    let mut v = 0u64;
    for i in (0..8).rev() {
        v = (v << 8) | u64::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(v)
}

/// `drivelab season` NAME exited 0 and ran its rounds.
fn seasoned(c: &mut Checks, run: &GuestRun, name: &str) {
    let o = out(run, name);
    c.check(
        &format!("{name}: drivelab season exits 0 after its purge, fill and rounds"),
        status(run, name) == 0 && !o.is_null(),
        || why(run, name),
    );
}

/// A seasoned drive's medium: NAND writes above the host's (the FTL's
/// garbage collection), the map full.
fn amplified(c: &mut Checks, name: &str, media: &Value) {
    let (host, nand, gc) = (
        u(&media["host_pages"]) + u(&media["drive_pages"]),
        u(&media["nand_pages"]),
        u(&media["gc_copies"]),
    );
    println!(
        "{name}: {host} pages asked for, {nand} NAND pages programmed ({gc} GC copies): write amplification {:.2}",
        nand as f64 / host.max(1) as f64
    );
    c.check(
        &format!("{name}: the FTL medium's NAND writes exceed the host's (write amplification > 1.1, GC copies counted)"),
        media["kind"] == "ftl" && gc > 0 && nand == host + gc && nand * 10 > host * 11,
        || format!("media {media}"),
    );
}

fn nvme_checks(c: &mut Checks, run: &GuestRun) {
    seasoned(c, run, "nvme_season");
    let n1 = json(run, "n1.state.json");
    let m = &n1["namespaces"][0]["media"];
    amplified(c, "nvme_season", m);
    let hex = text(run, "n1.c0.hex");
    c.check(
        "nvme_season: nvme-cli's media log (C0h) = the emulator's NAND and host page counts",
        log_u64(&hex, 48) == Some(u(&m["nand_pages"]))
            && log_u64(&hex, 32) == Some(u(&m["host_pages"]))
            && log_u64(&hex, 56) == Some(u(&m["gc_copies"]))
            && log_u64(&hex, 0) == Some(u(&m["nand_pages"]) * 4096),
        || format!("log {hex}; media {m}; {}", text(run, "n1.c0.err")),
    );
    let smart = out(run, "nvme_smart");
    let written = n1["counters"]["bytes_written"].as_u64().unwrap_or(0);
    c.check(
        "nvme_season: the host pages through the FTL are the SMART log's Write data (4 KiB each), the data units written agree",
        written > 0
            && u(&m["host_pages"]) * 4096 == written
            && num(&smart["data_units_written"]) == Some(written.div_ceil(512).div_ceil(1000)),
        || format!("bytes written {written}; media {m}; smart {smart}"),
    );
    let r = row(run, "nvme_block");
    let cert = cert(run, &r);
    c.check(
        "nvme_block: drivelab erase --method nvme-sanitize exits 0, Purge, reads as zeroes",
        status(run, "nvme_block") == 0
            && r["result"] == "erased"
            && cert["erase"]["nist_category"] == "Purge"
            && text(run, "nvme_block.md5_after") == text(run, "zero.md5"),
        || why(run, "nvme_block"),
    );
    let n2 = json(run, "n2.state.json");
    let m2 = &n2["namespaces"][0]["media"];
    let hex2 = text(run, "n2.c0.hex");
    c.check(
        "nvme_block: a block erase leaves the FTL fresh (no flash page mapped, every block free but the open one), the lifetime NAND count kept",
        m2["fresh"] == true
            && m2["flash_pages_mapped"] == 0
            && u(&m2["flash_blocks_free"]) + 1 == u(&m2["flash_blocks"])
            && u(&m2["resets"]) == u(&m["resets"]) + 1
            && u(&m2["nand_pages"]) >= u(&m["nand_pages"])
            && log_u64(&hex2, 88) == Some(0)
            && log_u64(&hex2, 80) == Some(0),
        || format!("media {m2}; log {hex2}"),
    );
}

/// The NVMe Sanitize overwrite through drivelab: the pattern, Purge, the
/// drive's own writes through the FTL, the Sanitize the emulator ran an
/// overwrite (SANACT 3).
fn nvme_overwrite_checks(c: &mut Checks, run: &GuestRun) {
    pattern_erase(c, run, "nvme_ow", "nvme-sanitize");
    let (n2, n3) = (json(run, "n2.state.json"), json(run, "n3.state.json"));
    let (m2, m3) = (&n2["namespaces"][0]["media"], &n3["namespaces"][0]["media"]);
    let last = n3["erases"].as_array().and_then(|e| e.last()).cloned();
    c.check(
        "nvme_ow: the emulator ran a Sanitize Overwrite (SANACT 3), its pattern written by the drive through the FTL (every flash page)",
        last.as_ref().is_some_and(|e| {
            e["command"] == "sanitize" && e["action"] == 3 && e["result"] == "completed"
        }) && u(&m3["drive_pages"]) >= u(&m2["drive_pages"]) + PAGES
            && u(&m3["host_pages"]) == u(&m2["host_pages"]),
        || format!("last erase {last:?}; media before {m2} after {m3}"),
    );
}

/// A SMART attribute's raw value from `smartctl -A -j`.
fn attr(smart: &Value, id: u64) -> Option<u64> {
    smart["ata_smart_attributes"]["table"]
        .as_array()?
        .iter()
        .find(|a| a["id"] == id)
        .and_then(|a| a["raw"]["value"].as_u64())
}

/// A sanitize erase that left the pattern, Purge.
fn pattern_erase(c: &mut Checks, run: &GuestRun, name: &str, method: &str) {
    let r = row(run, name);
    let cert = cert(run, &r);
    c.check(
        &format!("{name}: drivelab erase --method {method} --pattern fixed:0xa55a0ff0 exits 0, certificate {method}, Purge, the pattern reads back"),
        status(run, name) == 0
            && r["result"] == "erased"
            && cert["erase"]["method"] == method
            && cert["erase"]["nist_category"] == "Purge"
            && text(run, &format!("{name}.md5_after")) == text(run, "pattern.md5"),
        || format!("{}; certificate {cert}", why(run, name)),
    );
}

fn sata_checks(c: &mut Checks, run: &GuestRun) {
    seasoned(c, run, "sata_season");
    let t1 = json(run, "t1.state.json");
    amplified(c, "sata_season", &t1["media"]);
    let smart = out(run, "sata_smartctl");
    let s = &t1["ata"]["smart"];
    c.check(
        "sata_season: smartctl reads attributes 247 and 248 (host and background NAND programs) as the emulator counts them, 248 > 0",
        attr(&smart, 247) == s["nand_host_pages"].as_u64()
            && attr(&smart, 248) == s["nand_background_pages"].as_u64()
            && attr(&smart, 248).is_some_and(|v| v > 0),
        || format!("smartctl {smart}; state {s}"),
    );
    pattern_erase(c, run, "sata_ow", "ata-sanitize");
    let (m1, m2) = (&t1["media"], &json(run, "t2.state.json")["media"]);
    let done = &json(run, "t2.state.json")["ata"]["sanitize"]["done"];
    c.check(
        "sata_ow: SANITIZE OVERWRITE EXT ran, its pattern written by the drive through the FTL (every flash page)",
        done.as_array()
            .and_then(|d| d.last())
            .is_some_and(|d| d["kind"] == "overwrite" && d["ok"] == true)
            && u(&m2["drive_pages"]) >= u(&m1["drive_pages"]) + PAGES,
        || format!("sanitize {done}; media before {m1} after {m2}"),
    );
}

fn sas_checks(c: &mut Checks, run: &GuestRun) {
    pattern_erase(c, run, "sas_ow", "scsi-sanitize");
    let (u0, u1, u2) = (
        json(run, "u0.state.json"),
        json(run, "u1.state.json"),
        json(run, "u2.state.json"),
    );
    c.check(
        "sas_ow: SCSI SANITIZE OVERWRITE ran, its pattern written by the drive through the FTL",
        u1["sanitize"]["done"]
            .as_array()
            .and_then(|d| d.last())
            .is_some_and(|d| d["kind"] == "overwrite" && d["ok"] == true)
            && u(&u1["media"]["drive_pages"]) == u(&u0["media"]["drive_pages"]) + PAGES,
        || format!("before {u0}; after {u1}"),
    );
    let r = row(run, "sas_block");
    c.check(
        "sas_block: the zero pattern is a SCSI SANITIZE BLOCK ERASE: zeroes, Purge, the FTL fresh",
        status(run, "sas_block") == 0
            && r["result"] == "erased"
            && text(run, "sas_block.md5_after") == text(run, "zero.md5")
            && u2["sanitize"]["done"]
                .as_array()
                .and_then(|d| d.last())
                .is_some_and(|d| d["kind"] == "block-erase" && d["ok"] == true)
            && u2["media"]["fresh"] == true
            && u2["media"]["flash_pages_mapped"] == 0,
        || format!("{}; state {}", why(run, "sas_block"), u2["media"]),
    );
}

#[test]
fn the_ftl_medium_behind_the_emulated_drives_through_drivelab() {
    let run = boot();
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    nvme_checks(&mut c, &run);
    nvme_overwrite_checks(&mut c, &run);
    sata_checks(&mut c, &run);
    sas_checks(&mut c, &run);
    print_times(&run);
    c.finish(&ctx);
}
