//! What issue 5 expects of `drivelab erase` on drives that take device
//! commands, checked in one boot: WRITE SAME of a non-zero pattern on the
//! virtio-scsi disk and on scsi_debug, NVMe Write Zeroes and Format NVM,
//! `--method auto` on every controller, methods a drive lacks refused, a
//! scsi_debug medium error making the drive "erased with exceptions" (or
//! failed, under `--on-error abort`), and several drives at once where one
//! fails and the others do not.
//!
//! Every erase is judged three ways: drivelab's JSON report, its signed
//! certificate (copied out through /out and checked on the host with
//! `drivelab erase verify-cert` and the guest's public key), and a read-back
//! in the guest that does not use drivelab (`dd iflag=direct` compared with
//! `cmp` against bytes made by `tr`, and `od` of single blocks).
//!
//! scsi_debug's medium error (`opts=2`) applies to reads only (scsi_debug.c:
//! "a medium error is simulated at this sector on read commands"; only its
//! READ path checks `medium_error_start/count`). WRITE, WRITE SAME and the
//! kernel's zero-out succeed over the bad range, so the erase itself
//! succeeds and the error shows up in `--verify full`, which is what these
//! checks expect; the read-back after the retry-skip run, with the errors
//! switched off again, shows the pattern landed on the bad range too. The
//! option is switched at run time through
//! /sys/bus/pseudo/drivers/scsi_debug/opts, so the same disk also serves
//! the clean WRITE SAME check.
//!
//! The disks are 8 MiB: every erase reads everything back (`--verify full`)
//! and the guest reads it again, under TCG; the boot takes about 75 s.
//!
//! The command lines are the `CMD_*` constants. Needs root, QEMU and the
//! cached kernel: `bash tests/vm/setup.sh`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use drivelab_vmtest::drivelab_bin::static_drivelab;
use drivelab_vmtest::results::verify_cert;
use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};
use serde_json::Value;

const SCSI: &str = "DLSCSI0001";
const NVME: &str = "DLNVME0001";
const SATA: &str = "DLSATA0001";
const SCSI_MB: u64 = 8;
const NVME_MB: u64 = 8;
const SATA_MB: u64 = 8;
const SD_MB: u64 = 8;
/// scsi_debug reports max(command LBA, 0x1234) as the failing LBA in its
/// sense data, so the bad range starts at 0x1234 = 4660 to be exact.
const BAD_LBA: u64 = 0x1234;
const BAD_BLOCKS: u64 = 8;
/// The pattern written by WRITE SAME: non-zero, so a no-op cannot pass.
const PATTERN: &str = "fixed:0xA5A5A5A5";
const PATTERN_BYTE: u8 = 0xA5;
/// What the disks are filled with before an erase to zeroes.
const FILL_BYTE: u8 = 0x5A;

// Common options: JSON out, certificates per step under /out/certs/NAME.
const CMD_WRITE_SAME: &str = "drivelab erase $DEV --method write-same --pattern $PATTERN --verify full --yes --confirm-serial $(ser $DEV) --certificate-dir /out/certs/$NAME --output-format json";
const CMD_NVME_WZ: &str = "drivelab erase $DEV --method nvme-write-zeroes --verify full --yes --confirm-serial $(ser $DEV) --certificate-dir /out/certs/$NAME --output-format json";
const CMD_NVME_FORMAT: &str = "drivelab erase $DEV --method nvme-format --verify full --yes --confirm-serial $(ser $DEV) --certificate-dir /out/certs/$NAME --output-format json";
const CMD_AUTO_ALL: &str = "drivelab erase $SCSI $NVME $SATA $SD --method auto --verify full --yes --confirm-serial $(ser $SCSI) --confirm-serial $(ser $NVME) --confirm-serial $(ser $SATA) --confirm-serial $(ser $SD) --certificate-dir /out/certs/$NAME --output-format json";
// Plain text output: the error must be one line on stderr.
const CMD_LACKING: &str = "drivelab erase $DEV --method $METHOD --verify none --yes --confirm-serial $(ser $DEV) --certificate-dir /out/certs/$NAME";
const CMD_MEDIUM_SKIP: &str = "drivelab erase $SD --method write-same --pattern $PATTERN --verify full --on-error retry-skip --retries 1 --yes --confirm-serial $(ser $SD) --certificate-dir /out/certs/$NAME --output-format json";
const CMD_MULTI_ABORT: &str = "drivelab erase $SCSI $NVME $SD --strategy parallel --method auto --verify full --on-error abort --retries 1 --yes --confirm-serial $(ser $SCSI) --confirm-serial $(ser $NVME) --confirm-serial $(ser $SD) --certificate-dir /out/certs/$NAME --output-format json";

const SCRIPT: &str = r#"
export XDG_CONFIG_HOME=/tmp/cfg
SCSI=/dev/$(disk_by_serial @SCSI@); NVME=/dev/$(disk_by_serial @NVME@); SATA=/dev/$(disk_by_serial @SATA@); SD=/dev/$(disk_by_model scsi_debug)
PATTERN=@PATTERN@; PATOCT=@PATOCT@; FILLOCT=@FILLOCT@
SDOPTS=/sys/bus/pseudo/drivers/scsi_debug/opts
mkdir -p /out/certs
printf '{"scsi":"%s","nvme":"%s","sata":"%s","sd":"%s"}\n' $SCSI $NVME $SATA $SD > names.json
# The kernel's write-zeroes limit per disk, read here, not by drivelab.
wz() { cat /sys/block/${1#/dev/}/queue/write_zeroes_max_bytes; }
printf '{"%s":%s,"%s":%s,"%s":%s,"%s":%s}\n' $SCSI $(wz $SCSI) $NVME $(wz $NVME) $SATA $(wz $SATA) $SD $(wz $SD) > wzmax.json

# size_of DEV: bytes.
size_of() { echo $(( $(cat /sys/block/${1#/dev/}/size) * 512 )); }
# serial_of DEV: the serial drivelab wants confirmed (from its own dry-run
# plan), else the path (a drive without a serial is confirmed by path).
serial_of() {
  s=$(drivelab erase "$1" --method stream --dry-run --output-format json 2>/dev/null | sed -n 's/^ *"serial": "\(.*\)",*$/\1/p' | head -n1)
  [ -n "$s" ] && echo "$s" || echo "$1"
}
SER_SCSI=$(serial_of $SCSI); SER_NVME=$(serial_of $NVME); SER_SATA=$(serial_of $SATA); SER_SD=$(serial_of $SD)
printf '{"scsi":"%s","nvme":"%s","sata":"%s","sd":"%s","sd_vpd80":"%s"}\n' "$SER_SCSI" "$SER_NVME" "$SER_SATA" "$SER_SD" "$(vpd80_serial /sys/block/${SD#/dev/}/device/vpd_pg80)" > serials.json
# ser DEV: the serial found above (one dry-run per drive, not per erase).
ser() { case $1 in $SCSI) echo "$SER_SCSI";; $NVME) echo "$SER_NVME";; $SATA) echo "$SER_SATA";; $SD) echo "$SER_SD";; esac; }
# fill DEV OCTAL: write that byte over the whole device (O_DIRECT).
fill() { head -c $(size_of $1) /dev/zero | tr '\000' "\\$2" > /tmp/fill.bin; dd if=/tmp/fill.bin of=$1 bs=1M oflag=direct 2>/dev/null; s=$?; rm -f /tmp/fill.bin; return $s; }
# whole_is DEV OCTAL: every byte of the device (read O_DIRECT) is that byte.
whole_is() { dd if=$1 of=/tmp/rb.bin bs=1M iflag=direct 2>/dev/null; head -c $(size_of $1) /dev/zero | tr '\000' "\\$2" | cmp -s - /tmp/rb.bin; s=$?; rm -f /tmp/rb.bin; return $s; }
# bytes_at DEV LBA: the distinct byte values (hex) of that 512-byte block.
bytes_at() { dd if=$1 bs=512 skip=$2 count=1 iflag=direct 2>/dev/null | od -An -tx1 -v | tr -s ' ' '\n' | grep . | sort -u | tr '\n' ' '; }
# probe NAME DEV OCTAL: read-back verdicts into NAME.readback.json: the
# whole device, od of the first, middle and last block (all O_DIRECT), and
# od of a buffered read of the first 4 KiB: what a user reading the device
# sees. (Passthrough commands bypass the page cache, but the kernel drops a
# block device's cache when its last opener closes it, so once drivelab
# has exited nothing stale remains; a buffered read before the erase by a
# separate dd would not survive either. Checked in the VM.)
probe() {
  whole_is $2 $3; w=$?
  last=$(( $(size_of $2) / 512 - 1 ))
  buf=$(dd if=$2 bs=4096 count=1 2>/dev/null | od -An -tx1 -v | tr -s ' ' '\n' | grep . | sort -u | tr '\n' ' ')
  printf '{"whole":%s,"first":"%s","middle":"%s","last":"%s","buffered":"%s"}\n' $w "$(bytes_at $2 0)" "$(bytes_at $2 $((last / 2)))" "$(bytes_at $2 $last)" "$buf" > "$1.readback.json"
}

echo 0 > $SDOPTS

# 1. WRITE SAME with a non-zero pattern, whole drive, verify full.
for DEV in $SCSI $SD; do
  NAME=ws_${DEV#/dev/}
  fill $DEV $FILLOCT
  run_json $NAME @CMD_WRITE_SAME@
  probe $NAME $DEV $PATOCT
done

# 2. NVMe Write Zeroes and Format NVM (SES 1), each over a filled drive.
DEV=$NVME
NAME=nvme_wz; fill $DEV $PATOCT; run_json $NAME @CMD_NVME_WZ@; probe $NAME $DEV 000
NAME=nvme_format; fill $DEV $PATOCT; run_json $NAME @CMD_NVME_FORMAT@; probe $NAME $DEV 000

# 3. auto on every disk at once, to zeroes, over filled drives.
for DEV in $SCSI $NVME $SATA $SD; do fill $DEV $FILLOCT; done
NAME=auto; run_json $NAME @CMD_AUTO_ALL@
for DEV in $SCSI $NVME $SATA $SD; do probe auto_${DEV#/dev/} $DEV 000; done

# 4. Methods the drive lacks: refused, nothing written.
for pair in "$NVME nvme-sanitize" "$SATA sct-write-same" "$SATA write-same"; do
  set -- $pair; DEV=$1; METHOD=$2; NAME=lack_${DEV#/dev/}_$METHOD
  fill $DEV $FILLOCT
  run_json $NAME @CMD_LACKING@
  probe $NAME $DEV $FILLOCT
done

# 5. scsi_debug medium error (reads of LBA @BAD@.. fail) during a verified
# erase, retry-skip: erased with exceptions.
fill $SD 000
echo 2 > $SDOPTS
NAME=medium_skip; run_json $NAME @CMD_MEDIUM_SKIP@
echo 0 > $SDOPTS
probe $NAME $SD $PATOCT

# 6. Three drives in parallel, abort on error: scsi_debug fails on its
# medium error, the other two are erased.
for DEV in $SCSI $NVME $SD; do fill $DEV $FILLOCT; done
echo 2 > $SDOPTS
NAME=multi; run_json $NAME @CMD_MULTI_ABORT@
echo 0 > $SDOPTS
for DEV in $SCSI $NVME $SD; do probe multi_${DEV#/dev/} $DEV 000; done

cp $XDG_CONFIG_HOME/drivelab/erase-signing.pub /out/erase-signing.pub
true
"#;

fn octal(b: u8) -> String {
    format!("{b:03o}")
}

fn guest_script() -> String {
    SCRIPT
        .replace("@SCSI@", SCSI)
        .replace("@NVME@", NVME)
        .replace("@SATA@", SATA)
        .replace("@PATTERN@", PATTERN)
        .replace("@PATOCT@", &octal(PATTERN_BYTE))
        .replace("@FILLOCT@", &octal(FILL_BYTE))
        .replace("@BAD@", &BAD_LBA.to_string())
        .replace("@CMD_WRITE_SAME@", CMD_WRITE_SAME)
        .replace("@CMD_NVME_WZ@", CMD_NVME_WZ)
        .replace("@CMD_NVME_FORMAT@", CMD_NVME_FORMAT)
        .replace("@CMD_AUTO_ALL@", CMD_AUTO_ALL)
        .replace("@CMD_LACKING@", CMD_LACKING)
        .replace("@CMD_MEDIUM_SKIP@", CMD_MEDIUM_SKIP)
        .replace("@CMD_MULTI_ABORT@", CMD_MULTI_ABORT)
}

/// The guest's files for one step.
struct Step<'a> {
    run: &'a GuestRun,
    name: String,
}

impl Step<'_> {
    fn status(&self) -> String {
        self.run
            .file(&format!("{}.status", self.name))
            .unwrap_or_default()
            .trim()
            .to_string()
    }
    fn out(&self) -> String {
        self.run
            .file(&format!("{}.out", self.name))
            .unwrap_or_default()
    }
    fn err(&self) -> String {
        self.run
            .file(&format!("{}.err", self.name))
            .unwrap_or_default()
    }
    fn report(&self) -> Value {
        serde_json::from_str(&self.out()).unwrap_or(Value::Null)
    }
    /// The report's row for `dev`.
    fn drive(&self, dev: &str) -> Value {
        self.report()["drives"]
            .as_array()
            .and_then(|a| a.iter().find(|d| d["device"] == dev).cloned())
            .unwrap_or(Value::Null)
    }
    fn why(&self) -> String {
        format!(
            "status {}; stdout {}; stderr {}",
            self.status(),
            self.out(),
            self.err()
        )
    }
}

/// The signed certificate file named in a report row, on the host.
fn cert_path(run: &GuestRun, row: &Value) -> Option<PathBuf> {
    let p = row["certificate"].as_str()?;
    Some(run.out_dir().join(p.strip_prefix("/out/")?))
}

fn cert_of(run: &GuestRun, row: &Value) -> Value {
    cert_path(run, row)
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .map(|v| v["certificate"].clone())
        .unwrap_or(Value::Null)
}

/// Read-back verdicts: the whole device held `byte` and so did the three
/// single blocks `od` printed.
fn readback_ok(run: &GuestRun, name: &str, byte: u8) -> Result<(), String> {
    let v = run
        .json(&format!("{name}.readback.json"))
        .map_err(|e| e.to_string())?;
    let want = format!("{byte:02x}");
    let mut bad = Vec::new();
    if v["whole"] != 0 {
        bad.push("whole device differs (cmp)".to_string());
    }
    for k in ["first", "middle", "last", "buffered"] {
        if v[k].as_str().map(str::trim) != Some(want.as_str()) {
            bad.push(format!("{k} block holds bytes {}", v[k]));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("expected only {want}: {}", bad.join("; ")))
    }
}

/// Common checks of an erase that should have succeeded on `dev`:
/// report row, certificate and read-back.
#[allow(clippy::too_many_arguments)]
fn erased_ok(
    c: &mut Checks,
    run: &GuestRun,
    step: &Step<'_>,
    dev: &str,
    method: &str,
    size: u64,
    readback: &str,
    byte: u8,
) {
    let row = step.drive(dev);
    let tag = format!("{} {dev}", step.name);
    c.check(
        &format!("{tag}: erased by {method}"),
        row["result"] == "erased" && row["method"] == method,
        || format!("row {row}; {}", step.why()),
    );
    c.check(
        &format!("{tag}: full verification passed"),
        row["verification"] == "full: passed",
        || format!("row {row}"),
    );
    let cert = cert_of(run, &row);
    c.check(
        &format!("{tag}: certificate says erased by {method}, {size} B, full read"),
        cert["result"] == "erased"
            && cert["erase"]["method"] == method
            && cert["drive"]["capacity_bytes"] == size
            && cert["verification"]["result"] == "passed"
            && cert["verification"]["bytes_read"] == size,
        || format!("certificate {cert}"),
    );
    c.run(&format!("{tag}: read-back in the guest"), || {
        readback_ok(run, readback, byte)
    });
}

/// The commands listed in a certificate: (command, count, bytes).
fn commands(cert: &Value) -> Vec<(String, u64, u64)> {
    cert["erase"]["commands"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["command"].as_str().unwrap_or("").to_string(),
                        c["count"].as_u64().unwrap_or(0),
                        c["bytes"].as_u64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn erase_does_what_issue_5_says_on_every_controller() {
    let t0 = Instant::now();
    let run = Vm::builder()
        .scsi_hd(Disk::new(SCSI_MB * MIB, SCSI))
        .nvme(Disk::new(NVME_MB * MIB, NVME))
        .sata(Disk::new(SATA_MB * MIB, SATA))
        .scsi_debug(&format!(
            "dev_size_mb={SD_MB} opts=2 medium_error_start={BAD_LBA} medium_error_count={BAD_BLOCKS}"
        ))
        .with_drivelab()
                .guest_script(&guest_script())
        .timeout(Duration::from_secs(240))
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"));
    println!(
        "VM: boot to script {:?} s, script end {:?} s, wall {:.1} s (test {:.1} s)",
        run.boot_to_script_s,
        run.script_end_s,
        run.elapsed.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    let ctx = run.context();
    let mut c = Checks::new();
    let names = run.json("names.json").unwrap_or(Value::Null);
    let dev = |k: &str| names[k].as_str().unwrap_or("?").to_string();
    let (scsi, nvme, sata, sd) = (dev("scsi"), dev("nvme"), dev("sata"), dev("sd"));
    let short = |d: &str| d.trim_start_matches("/dev/").to_string();
    let step = |name: &str| Step {
        run: &run,
        name: name.to_string(),
    };

    // The serials drivelab asks to confirm: QEMU's, and for scsi_debug the
    // unit serial number of its VPD page 0x80 (read by the guest's shell).
    let serials = run.json("serials.json").unwrap_or(Value::Null);
    c.check(
        "confirmation serials are the disks' serials",
        serials["scsi"] == SCSI
            && serials["nvme"] == NVME
            && serials["sata"] == SATA
            && serials["sd"].as_str().is_some_and(|x| !x.is_empty())
            && serials["sd"] == serials["sd_vpd80"],
        || format!("{serials}"),
    );
    println!("serials: {serials}");

    // 1. WRITE SAME with the pattern on scsi-hd and scsi_debug.
    for (d, size) in [(&scsi, SCSI_MB * MIB), (&sd, SD_MB * MIB)] {
        let s = step(&format!("ws_{}", short(d)));
        c.check(&format!("{}: exit 0", s.name), s.status() == "0", || {
            s.why()
        });
        erased_ok(
            &mut c,
            &run,
            &s,
            d,
            "write-same",
            size,
            &s.name,
            PATTERN_BYTE,
        );
        let cert = cert_of(&run, &s.drive(d));
        let cmds = commands(&cert);
        let ws: Vec<_> = cmds
            .iter()
            .filter(|(n, _, _)| n.contains("WRITE SAME(16)"))
            .collect();
        c.check(
            &format!(
                "{}: certificate lists WRITE SAME(16) covering the drive",
                s.name
            ),
            ws.len() == 1 && ws[0].1 >= 1 && ws[0].2 == size,
            || format!("commands {cmds:?}"),
        );
        c.check(
            &format!("{}: certificate pattern {PATTERN}", s.name),
            cert["erase"]["pattern"] == PATTERN,
            || format!("{}", cert["erase"]),
        );
    }

    // 2. NVMe Write Zeroes and Format NVM (user data erase, SES 1).
    for (name, method, cmd) in [
        ("nvme_wz", "nvme-write-zeroes", "Write Zeroes"),
        ("nvme_format", "nvme-format", "SES 1"),
    ] {
        let s = step(name);
        c.check(&format!("{name}: exit 0"), s.status() == "0", || s.why());
        erased_ok(&mut c, &run, &s, &nvme, method, NVME_MB * MIB, name, 0);
        let cmds = commands(&cert_of(&run, &s.drive(&nvme)));
        c.check(
            &format!("{name}: certificate names the NVMe command ({cmd})"),
            cmds.iter().any(|(n, _, _)| n.contains(cmd)),
            || format!("commands {cmds:?}"),
        );
    }

    // 3. auto on all four: a method and a reason for each; SATA falls back
    // to zeroout or stream (no SCSI WRITE SAME through libata, no SCT Write
    // Same in QEMU's AHCI disk); every drive verifies and reads back zero.
    let s = step("auto");
    c.check("auto: exit 0", s.status() == "0", || s.why());
    for (d, size) in [
        (&scsi, SCSI_MB * MIB),
        (&nvme, NVME_MB * MIB),
        (&sata, SATA_MB * MIB),
        (&sd, SD_MB * MIB),
    ] {
        let row = s.drive(d);
        let method = row["method"].as_str().unwrap_or("").to_string();
        let reason = row["method_reason"].as_str().unwrap_or("");
        c.check(
            &format!("auto {d}: says which method ({method}) and why"),
            !method.is_empty() && method != "auto" && reason.len() > 20,
            || format!("row {row}"),
        );
        let readback = format!("auto_{}", short(d));
        erased_ok(&mut c, &run, &s, d, &method, size, &readback, 0);
        println!("auto {d}: {method}: {reason}");
    }
    let sata_row = s.drive(&sata);
    c.check(
        "auto SATA: falls back to zeroout or stream",
        sata_row["method"] == "zeroout" || sata_row["method"] == "stream",
        || format!("row {sata_row}"),
    );
    // The reasons quote the kernel's write-zeroes limit as sysfs gives it
    // (read by the guest's shell): zeroout only where it is above 0, and
    // on SATA (libata turns WRITE SAME off) it is 0.
    let wzmax = run.json("wzmax.json").unwrap_or(Value::Null);
    for d in [&scsi, &nvme, &sata, &sd] {
        let row = s.drive(d);
        let reason = row["method_reason"].as_str().unwrap_or("");
        let limit = wzmax[d.as_str()].as_u64();
        if row["method"] == "zeroout" {
            c.check(
                &format!(
                    "auto {d}: zeroout only with write_zeroes_max_bytes > 0, quoted, offloaded"
                ),
                limit.is_some_and(|l| l > 0)
                    && reason.contains(&format!("write_zeroes_max_bytes = {}", limit.unwrap_or(0)))
                    && row["offloaded"] == true,
                || format!("sysfs {limit:?}; row {row}"),
            );
        }
    }
    c.check(
        "auto SATA: write_zeroes_max_bytes is 0 and the reason says so",
        wzmax[sata.as_str()] == 0
            && sata_row["method_reason"]
                .as_str()
                .is_some_and(|r| r.contains("write_zeroes_max_bytes = 0")),
        || format!("sysfs {}; row {sata_row}", wzmax[sata.as_str()]),
    );
    c.check(
        "auto NVMe: picks nvme-write-zeroes (the drive writes the zeroes)",
        s.drive(&nvme)["method"] == "nvme-write-zeroes",
        || format!("row {}", s.drive(&nvme)),
    );

    // 4. A method the drive lacks: exit 2, one line naming it, nothing
    // written (the fill byte is still everywhere).
    for (d, method) in [
        (&nvme, "nvme-sanitize"),
        (&sata, "sct-write-same"),
        (&sata, "write-same"),
    ] {
        let s = step(&format!("lack_{}_{method}", short(d)));
        let err = s.err();
        c.check(
            &format!("{}: exit 2 with one line naming {method}", s.name),
            s.status() == "2"
                && err.trim().lines().count() == 1
                && err.contains(method)
                && err.contains(d.as_str()),
            || s.why(),
        );
        c.run(&format!("{}: nothing written", s.name), || {
            readback_ok(&run, &s.name, FILL_BYTE)
        });
    }

    // 5. Medium error, retry-skip: erased with exceptions, the bad range in
    // the certificate; the rest holds the pattern.
    let s = step("medium_skip");
    let row = s.drive(&sd);
    c.check(
        "medium_skip: exit 1, erased with exceptions",
        s.status() == "1" && row["result"] == "erased with exceptions",
        || s.why(),
    );
    let cert = cert_of(&run, &row);
    let ex = cert["exceptions"].as_array().cloned().unwrap_or_default();
    c.check(
        &format!("medium_skip: certificate lists LBA {BAD_LBA} +{BAD_BLOCKS} as skipped"),
        cert["result"] == "erased with exceptions"
            && ex.len() == 1
            && ex[0]["first_lba"] == BAD_LBA
            && ex[0]["blocks"] == BAD_BLOCKS,
        || format!("exceptions {ex:?}; result {}", cert["result"]),
    );
    c.run(
        "medium_skip: read-back (medium errors off) holds the pattern",
        || readback_ok(&run, "medium_skip", PATTERN_BYTE),
    );

    // 6. Three drives in parallel, abort: scsi_debug fails naming the LBA,
    // the others are erased and read back zero.
    let s = step("multi");
    c.check(
        "multi: exit 1 (one drive failed)",
        s.status() == "1",
        || s.why(),
    );
    let row = s.drive(&sd);
    let err = row["error"].as_str().unwrap_or("");
    c.check(
        &format!("multi: scsi_debug failed naming LBA {BAD_LBA}"),
        row["result"] == "failed" && err.contains(&format!("LBA {BAD_LBA}")),
        || format!("row {row}"),
    );
    for (d, size) in [(&scsi, SCSI_MB * MIB), (&nvme, NVME_MB * MIB)] {
        let method = s.drive(d)["method"].as_str().unwrap_or("").to_string();
        let readback = format!("multi_{}", short(d));
        erased_ok(&mut c, &run, &s, d, &method, size, &readback, 0);
    }

    // Certificates verify on the host with the guest's public key, and a
    // changed byte makes one fail.
    let key = run.out_dir().join("erase-signing.pub");
    let bin = static_drivelab().expect("the static drivelab");
    let mut certs = Vec::new();
    for (name, d) in [
        ("ws_", &scsi),
        ("ws_", &sd),
        ("nvme_format", &nvme),
        ("medium_skip", &sd),
        ("multi", &sd),
    ] {
        let name = if name == "ws_" {
            format!("ws_{}", short(d))
        } else {
            name.to_string()
        };
        if let Some(p) = cert_path(&run, &step(&name).drive(d)) {
            certs.push(p);
        }
    }
    c.check("five certificates found", certs.len() == 5, || {
        format!("{certs:?}")
    });
    for p in &certs {
        let (code, text) = verify_cert(&bin, p, &key);
        c.check(
            &format!("verify-cert {}: valid", p.display()),
            code == 0 && text.contains("valid signature"),
            || text.clone(),
        );
    }
    if let Some(p) = certs.first() {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        let tampered = text.replacen("\"erased\"", "\"erased \"", 1);
        let tp = run.out_dir().join("tampered.json");
        std::fs::write(&tp, &tampered).unwrap();
        let (code, out) = verify_cert(&bin, &tp, &key);
        c.check(
            "verify-cert of a changed certificate: invalid",
            tampered != text && code != 0 && out.contains("INVALID"),
            || out.clone(),
        );
    }
    println!("erase_devices: {:.1} s", t0.elapsed().as_secs_f64());
    c.finish(&ctx);
}
