//! Faults under `drivelab erase` (issue 12 item 9), in one boot:
//!
//! - eight drives erased at once (`--method stream --verify full
//!   --on-error abort`) where the eighth is a device-mapper device whose
//!   later region is an `error` segment: its writes there fail with EIO
//!   mid-erase. The other seven are erased, verified and certified (each
//!   certificate checked on the host with the guest's key); the failed one
//!   is reported with the exact LBAs of the error segment (the failed 1 MiB
//!   write narrowed down, under abort too) and the errno, without a
//!   certificate (its journal kept), and the exit status is 1;
//! - the same device alone under `--on-error retry-skip`: the failed
//!   writes are narrowed to the exact LBAs of the error segment: "erased
//!   with exceptions" listing exactly those LBAs, the read-back covering
//!   everything else;
//! - a drive that disappears mid-erase, two ways: a throttled SCSI disk
//!   deleted through sysfs, and a dm-flakey device that fails every I/O
//!   3 s after its creation (under the default retry-skip the drive fails
//!   once two whole commands fail block by block, rather than narrowing
//!   every block of it): one clear error line on stderr, valid JSON with
//!   the drive failed and the error, exit status 1.
//!
//! Needs root, QEMU, the cached kernel and dmsetup: `bash tests/vm/setup.sh`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use drivelab_vmtest::drivelab_bin::static_drivelab;
use drivelab_vmtest::results::verify_cert;
use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};
use serde_json::Value;

/// Seven good drives and the one under the error table, 4 MiB each.
const GOOD: [&str; 7] = [
    "DLFE01", "DLFE02", "DLFE03", "DLFE04", "DLFE05", "DLFE06", "DLFE07",
];
const BAD: &str = "DLFE08";
const DISK_MB: u64 = 4;
/// The error segment of the eighth drive's table: sectors, in its second
/// half (the drive fails mid-erase).
const ERR_LBA: u64 = 6000;
const ERR_BLOCKS: u64 = 8;
/// The drives that disappear mid-erase: 8 MiB each, written at 1 MiB/s,
/// so an erase takes about 8 s and is well under way when they go.
const GONE: &str = "DLFEGONE01";
const DMGONE: &str = "DLFEDMGONE";
const GONE_MB: u64 = 8;
const GONE_RATE: u64 = MIB;

const CMD_EIGHT: &str = "drivelab erase $ALL --method stream --verify full --on-error abort --retries 1 --yes $CONFIRM --certificate-dir /out/certs/eight --output-format json";
const CMD_SKIP: &str = "drivelab erase $BADDEV --method stream --verify full --on-error retry-skip --retries 1 --yes --confirm-serial $(ser $BADDEV) --certificate-dir /out/certs/skip --output-format json";
const CMD_GONE: &str = "drivelab erase $GONE --method stream --verify full --yes --confirm-serial @GONE@ --certificate-dir /out/certs/gone --output-format json";
const CMD_DMGONE: &str = "drivelab erase $DMGONE --method stream --transfer-length 64k --queue-depth 2 --verify full --yes --confirm-serial $DMGONE --certificate-dir /out/certs/dmgone --output-format json";

const SCRIPT: &str = r#"
export XDG_CONFIG_HOME=/tmp/cfg DM_DISABLE_UDEV=1
# No prompt may wait for an answer: the console is a terminal.
exec < /dev/null
dm() { dmsetup --noudevsync "$@"; }
# dmdev NAME: the kernel's name of a dm device (drivelab reports that
# path; a drive without a serial is confirmed by it).
dmdev() { echo /dev/dm-$(dm info -c --noheadings -o minor "$1"); }
# ser DEV: what drivelab asks to confirm (its dry-run plan's serial: a dm
# device over one disk has that disk's), else the path.
ser() {
  s=$(drivelab erase "$1" --method stream --dry-run --output-format json 2>/dev/null | sed -n 's/^ *"serial": "\(.*\)",*$/\1/p' | head -n1)
  [ -n "$s" ] && echo "$s" || echo "$1"
}
mkdir -p /out/certs
B=$(disk_by_serial @BAD@)
S=$(cat /sys/block/$B/size)
printf '0 %s linear /dev/%s 0\n%s %s error\n%s %s linear /dev/%s %s\n' \
  @ELBA@ $B @ELBA@ @EBLOCKS@ $((@ELBA@ + @EBLOCKS@)) $((S - @ELBA@ - @EBLOCKS@)) $B $((@ELBA@ + @EBLOCKS@)) | dm create fe_bad
dm table fe_bad > bad_table.txt
BADDEV=$(dmdev fe_bad)
ALL=""; CONFIRM=""; NAMES=""
for s in @GOOD@; do
  d=/dev/$(disk_by_serial $s)
  ALL="$ALL $d"; CONFIRM="$CONFIRM --confirm-serial $s"; NAMES="$NAMES,\"$s\":\"$d\""
  # Something to erase: a non-zero byte everywhere.
  head -c $(( $(cat /sys/block/${d#/dev/}/size) * 512 )) /dev/zero | tr '\000' '\132' | dd of=$d bs=1M oflag=direct 2>/dev/null
done
ALL="$ALL $BADDEV"; CONFIRM="$CONFIRM --confirm-serial $(ser $BADDEV)"
GONE=/dev/$(disk_by_serial @GONE@)
DMG=$(disk_by_serial @DMGONE@)
printf '{"gone":"%s","bad":"%s","dmgone_under":"/dev/%s"%s}\n' $GONE $BADDEV $DMG "$NAMES" > names.json

# 1. Eight drives, the eighth failing mid-erase.
run_json eight @CMD_EIGHT@
# Read-back without drivelab: every good drive is all zeroes now.
for s in @GOOD@; do
  d=/dev/$(disk_by_serial $s)
  dd if=$d of=/tmp/rb.bin bs=1M iflag=direct 2>/dev/null
  head -c $(( $(cat /sys/block/${d#/dev/}/size) * 512 )) /dev/zero | cmp -s - /tmp/rb.bin
  echo "$s $?" >> readback.txt
  rm -f /tmp/rb.bin
done

# 2. The same device alone, retry-skip.
run_json skip @CMD_SKIP@
dm remove fe_bad

# 3. A drive that disappears mid-erase: deleted SCSI disk.
( run_json gone @CMD_GONE@ ) &
sleep 3
cut -d' ' -f1 /proc/uptime > gone_t0.txt
echo 1 > /sys/block/${GONE#/dev/}/device/delete
cut -d' ' -f1 /proc/uptime > gone_t1.txt
wait

# 3b. A device-mapper device that stops answering mid-erase: dm-flakey,
# up for 3 s from its creation, then failing every I/O with EIO for a day
# (with error_writes, writes fail while it is down; reads then pass, so the
# read-back would not notice). The erase writes 64 KiB at a time, two in
# flight, so most of its writes are sent after the 3 s.
# (On one boot `dmsetup remove --force` mid-erase, which suspends the
# device to swap in an error table, had not returned when the guest was
# killed 4 minutes later; flakey needs no dmsetup call mid-run.)
# Two segments, not one: a dm device with one target passes SG_IO through
# to the disk, and whether drivelab then finds the disk's serial has varied
# from one boot to the next (reported in issue 12); with two it has none,
# and is confirmed by its path.
H=$(( $(cat /sys/block/$DMG/size) / 2 ))
printf '0 %s flakey /dev/%s 0 3 86400 1 error_writes\n%s %s flakey /dev/%s %s 3 86400 1 error_writes\n' $H $DMG $H $H $DMG $H | dm create fe_gone
dm table fe_gone > dmgone_table.txt
DMGONE=$(dmdev fe_gone); echo "\"$DMGONE\"" > dmgone_name.json
run_json dmgone @CMD_DMGONE@
cp $XDG_CONFIG_HOME/drivelab/erase-signing.pub /out/erase-signing.pub
true
"#;

fn guest_script() -> String {
    SCRIPT
        .replace("@BAD@", BAD)
        .replace("@GOOD@", &GOOD.join(" "))
        .replace("@GONE@", GONE)
        .replace("@DMGONE@", DMGONE)
        .replace("@ELBA@", &ERR_LBA.to_string())
        .replace("@EBLOCKS@", &ERR_BLOCKS.to_string())
        .replace("@CMD_EIGHT@", CMD_EIGHT)
        .replace("@CMD_SKIP@", CMD_SKIP)
        .replace("@CMD_GONE@", &CMD_GONE.replace("@GONE@", GONE))
        .replace("@CMD_DMGONE@", CMD_DMGONE)
}

/// The guest's files for one command.
struct Step<'a> {
    run: &'a GuestRun,
    name: &'a str,
}

impl Step<'_> {
    fn file(&self, ext: &str) -> String {
        self.run
            .file(&format!("{}.{ext}", self.name))
            .unwrap_or_default()
    }
    fn status(&self) -> String {
        self.file("status").trim().to_string()
    }
    fn json(&self) -> Result<Value, String> {
        serde_json::from_str(&self.file("out")).map_err(|e| format!("{e}: {}", self.why()))
    }
    fn drive(&self, dev: &str) -> Value {
        self.json()
            .ok()
            .and_then(|j| {
                j["drives"]
                    .as_array()
                    .and_then(|a| a.iter().find(|d| d["device"] == dev).cloned())
            })
            .unwrap_or(Value::Null)
    }
    fn why(&self) -> String {
        format!(
            "status {}; stdout {}; stderr {}",
            self.status(),
            self.file("out"),
            self.file("err")
        )
    }
}

/// stderr is exactly one line, naming each of `what`.
fn one_line_naming(err: &str, what: &[&str]) -> bool {
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.len() == 1 && what.iter().all(|w| lines[0].contains(w))
}

/// The certificate file named in a report row, on the host.
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

#[test]
fn erase_keeps_good_drives_and_reports_failing_and_vanished_ones() {
    let t0 = Instant::now();
    let mut vm = Vm::builder();
    for s in GOOD.iter().chain([&BAD]) {
        vm = vm.scsi_hd(Disk::new(DISK_MB * MIB, s));
    }
    let run = vm
        .scsi_hd(Disk::new(GONE_MB * MIB, GONE).write_limit(GONE_RATE))
        .scsi_hd(Disk::new(GONE_MB * MIB, DMGONE).write_limit(GONE_RATE))
        .with_device_mapper()
        .with_drivelab()
        .guest_script(&guest_script())
        .timeout(Duration::from_secs(300))
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"));
    println!(
        "VM: boot to script {:?} s, script end {:?} s, wall {:.1} s",
        run.boot_to_script_s,
        run.script_end_s,
        run.elapsed.as_secs_f64()
    );
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    let names = run.json("names.json").unwrap_or(Value::Null);
    let table = run.file("bad_table.txt").unwrap_or_default();
    c.check(
        "the eighth drive's table has its error segment",
        table.contains(&format!("{ERR_LBA} {ERR_BLOCKS} error")),
        || table.clone(),
    );
    let key = run.out_dir().join("erase-signing.pub");
    let bin = static_drivelab().expect("the static drivelab");
    let size = DISK_MB * MIB;

    // 1. Eight drives: seven erased, verified, certified; one failed.
    let s = Step {
        run: &run,
        name: "eight",
    };
    println!(
        "eight stdout: {}\neight stderr: {}",
        s.file("out"),
        s.file("err")
    );
    c.check(
        "eight: exit 1 with valid JSON",
        s.status() == "1" && s.json().is_ok(),
        || s.why(),
    );
    let readback = run.file("readback.txt").unwrap_or_default();
    for serial in GOOD {
        let dev = names[serial].as_str().unwrap_or("?");
        let row = s.drive(dev);
        c.check(
            &format!("eight {serial} ({dev}): erased, full verification passed"),
            row["result"] == "erased" && row["verification"] == "full: passed",
            || format!("row {row}"),
        );
        let cert = cert_of(&run, &row);
        c.check(
            &format!("eight {serial}: certificate says erased, {size} B read back"),
            cert["result"] == "erased"
                && cert["drive"]["capacity_bytes"] == size
                && cert["verification"]["bytes_read"] == size,
            || format!("certificate {cert}"),
        );
        match cert_path(&run, &row) {
            None => c.check(
                &format!("eight {serial}: certificate verifies"),
                false,
                || format!("row {row}"),
            ),
            Some(p) => {
                let (code, text) = verify_cert(&bin, &p, &key);
                c.check(
                    &format!("eight {serial}: certificate verifies"),
                    code == 0 && text.contains("valid signature"),
                    || text,
                );
            }
        }
        c.check(
            &format!("eight {serial}: the guest reads back zeroes"),
            readback.lines().any(|l| l == format!("{serial} 0")),
            || readback.clone(),
        );
    }
    let bad = names["bad"].as_str().unwrap_or("?").to_string();
    let row = s.drive(&bad);
    let err = row["error"].as_str().unwrap_or("");
    // The failed write (1 MiB, LBA 4096 +2048) narrowed to the segment.
    let lba_range = err.split("LBA ").nth(1).and_then(|r| {
        let mut it = r
            .split(|ch: char| !ch.is_ascii_digit())
            .filter(|x| !x.is_empty());
        Some((
            it.next()?.parse::<u64>().ok()?,
            it.next()?.parse::<u64>().ok()?,
        ))
    });
    c.check(
        &format!("eight fe_bad: failed, naming the exact LBAs {ERR_LBA} +{ERR_BLOCKS} and EIO"),
        row["result"] == "failed"
            && lba_range == Some((ERR_LBA, ERR_BLOCKS))
            && err.contains("Input/output error"),
        || format!("row {row}"),
    );
    c.check(
        "eight fe_bad: bytes written: none past the error segment",
        row["bytes"].as_u64().is_some_and(|b| b <= ERR_LBA * 512),
        || format!("row {row}"),
    );
    let cert = cert_of(&run, &row);
    c.check(
        "eight fe_bad: no certificate, or one that says failed",
        row["certificate"].is_null() || cert["result"] == "failed",
        || format!("row {row}; certificate {cert}"),
    );
    if let Some(p) = cert_path(&run, &row) {
        let (code, text) = verify_cert(&bin, &p, &key);
        println!(
            "fe_bad certificate: verify-cert exit {code}: {}",
            text.trim()
        );
    }
    c.check(
        "eight: stderr names the failed drive in one line",
        one_line_naming(&s.file("err"), &[&bad]),
        || s.why(),
    );

    // 2. retry-skip: the exact LBAs of the error segment.
    let s = Step {
        run: &run,
        name: "skip",
    };
    println!(
        "skip stdout: {}\nskip stderr: {}",
        s.file("out"),
        s.file("err")
    );
    let row = s.drive(&bad);
    let cert = cert_of(&run, &row);
    let ex = cert["exceptions"].as_array().cloned().unwrap_or_default();
    c.check(
        &format!("skip: erased with exceptions: exactly LBA {ERR_LBA} +{ERR_BLOCKS}"),
        s.status() == "1"
            && row["result"] == "erased with exceptions"
            && cert["result"] == "erased with exceptions"
            && ex.len() == 1
            && ex[0]["first_lba"] == ERR_LBA
            && ex[0]["blocks"] == ERR_BLOCKS,
        || format!("exceptions {ex:?}; {}", s.why()),
    );
    c.check(
        "skip: the read-back reads everything but the skipped LBAs, and passes",
        cert["verification"]["result"] == "passed"
            && cert["verification"]["bytes_read"] == size - ERR_BLOCKS * 512,
        || format!("verification {}", cert["verification"]),
    );

    // 3. Vanished drives.
    let gone = names["gone"].as_str().unwrap_or("?").to_string();
    let dmgone = run.json("dmgone_name.json").unwrap_or(Value::Null);
    let dmgone = dmgone.as_str().unwrap_or("?");
    for (step, dev) in [("gone", gone.as_str()), ("dmgone", dmgone)] {
        let s = Step {
            run: &run,
            name: step,
        };
        println!(
            "{step} stdout: {}\n{step} stderr: {}",
            s.file("out"),
            s.file("err")
        );
        let row = s.drive(dev);
        c.check(
            &format!("{step}: exit 1 with valid JSON"),
            s.status() == "1" && s.json().is_ok(),
            || s.why(),
        );
        // It goes while being written or read back: the error names the
        // failed command's LBA range, or the read-back's failure, or (under
        // retry-skip, where every write failed and was skipped) that
        // nothing was written.
        let err = row["error"].as_str().unwrap_or("");
        c.check(
            &format!("{step}: the drive failed, with the error that ended it"),
            row["result"] == "failed"
                && err.starts_with(dev)
                && (err.contains("LBA") || err.contains("verify") || err.contains("not erased")),
            || format!("row {row}"),
        );
        let cert = cert_of(&run, &row);
        c.check(
            &format!("{step}: no certificate (the journal is named), or one that says failed"),
            (row["certificate"].is_null() && row["journal"].is_string())
                || (cert["result"] == "failed" && cert["failure"] == row["error"]),
            || format!("row {row}; certificate {cert}"),
        );
        // The deleted disk's writes all complete before the delete does (it
        // waits for them) and its read-back fails; dm-flakey fails writes.
        let bytes = row["bytes"].as_u64().unwrap_or(0);
        c.check(
            &format!("{step}: the bytes written before it went are reported"),
            if step == "gone" {
                bytes <= GONE_MB * MIB
            } else {
                bytes > 0 && bytes < GONE_MB * MIB
            },
            || format!("row {row}"),
        );
        c.check(
            &format!("{step}: one error line on stderr naming the drive"),
            one_line_naming(&s.file("err"), &[dev]),
            || s.why(),
        );
    }
    println!(
        "sysfs delete from {} to {} s uptime",
        run.file("gone_t0.txt").unwrap_or_default().trim(),
        run.file("gone_t1.txt").unwrap_or_default().trim()
    );
    let t = run.file("dmgone_table.txt").unwrap_or_default();
    c.check(
        "dmgone: the dm table is dm-flakey (3 s up, then down)",
        t.contains("flakey") && t.contains(" 3 86400"),
        || t.clone(),
    );
    println!("faults_erase: {:.1} s", t0.elapsed().as_secs_f64());
    c.finish(&ctx);
}
