//! Faults under `drivelab run` (issue 12 item 9), in one boot:
//!
//! - a scsi_debug medium error (reads of LBA `BAD_LBA`.. fail with
//!   ENODATA) under a sequential read job, on io_uring and on psync: the
//!   job's error names the failed read's LBA range, its errno, and the
//!   exact unreadable LBAs found by re-reading that range in pieces;
//! - a device-mapper table with an `error` segment in the middle of a
//!   `linear` device under a write job: the failed write's LBA range and
//!   EIO (writes are not narrowed: a run does not rewrite a drive);
//! - a device that disappears mid-run, two ways: the SCSI disk deleted
//!   through sysfs, and a device-mapper device removed with `dmsetup
//!   remove --force` (its table becomes one that fails every I/O): one
//!   clear error line on stderr and valid JSON with the partial results
//!   and the error, exit status 1.
//!
//! Needs root, QEMU, the cached kernel and dmsetup: `bash tests/vm/setup.sh`.

use std::time::{Duration, Instant};

use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};
use serde_json::Value;

/// scsi_debug: 8 MiB with BAD_BLOCKS unreadable blocks from BAD_LBA. Not
/// scsi_debug's default start (0x1234), whose sense data would name the
/// first bad LBA of a straddling read by itself: here only re-reading the
/// range in pieces finds it.
const SD_MB: u64 = 8;
const BAD_LBA: u64 = 5000;
const BAD_BLOCKS: u64 = 4;
/// The 64 KiB read containing BAD_LBA: LBAs 4992..=5119.
const READ_BS: u64 = 64 * 1024;
/// The disk under the device-mapper write-error table, and its error
/// segment (sectors).
const WERR: &str = "DLFRWERR01";
const WERR_MB: u64 = 4;
const WERR_LBA: u64 = 3000;
const WERR_BLOCKS: u64 = 8;
/// The disk deleted mid-run and the disk under the dm device removed.
const GONE: &str = "DLFRGONE01";
const DMGONE: &str = "DLFRDMGONE";
const GONE_MB: u64 = 8;

const CMD_MEDIUM_URING: &str =
    "drivelab run --name=medium --filename=$SD --rw=read --bs=64k --iodepth=4 --output-format=json";
const CMD_MEDIUM_PSYNC: &str = "drivelab run --name=medium --filename=$SD --rw=read --bs=64k --ioengine=psync --output-format=json";
const CMD_MEDIUM_TEXT: &str = "drivelab run --name=medium --filename=$SD --rw=read --bs=64k";
const CMD_WERR: &str =
    "drivelab run --name=werr --filename=/dev/mapper/fr_werr --rw=write --bs=64k --output-format=json";
const CMD_GONE: &str = "drivelab run --name=gone --filename=$GONE --rw=randread --bs=4k --iodepth=4 --runtime=20 --output-format=json";
const CMD_DMGONE: &str = "drivelab run --name=dmgone --filename=/dev/mapper/fr_gone --rw=randread --bs=4k --iodepth=4 --runtime=20 --output-format=json";

const SCRIPT: &str = r#"
export DM_DISABLE_UDEV=1
exec < /dev/null
dm() { dmsetup --noudevsync "$@"; }
# Reads completed on block device $1 (a /sys/block name).
reads() { read -r n _ < /sys/block/$1/stat; echo $n; }
# Waits (up to 30 s) until block device $1 has completed 50 more reads
# than $2: the run is under way before its device is taken away.
wait_reads() { for _ in $(seq 300); do [ $(reads $1) -ge $(($2 + 50)) ] && return; sleep 0.1; done; }
SD=/dev/$(disk_by_model scsi_debug)
W=$(disk_by_serial @WERR@)
GONE=/dev/$(disk_by_serial @GONE@)
DMG=$(disk_by_serial @DMGONE@)
printf '{"sd":"%s","werr":"/dev/%s","gone":"%s","dmgone":"/dev/%s"}\n' $SD $W $GONE $DMG > names.json

# 1. Medium error under a sequential read job.
run_json medium_uring @CMD_MEDIUM_URING@
run_json medium_psync @CMD_MEDIUM_PSYNC@
run_json medium_text @CMD_MEDIUM_TEXT@

# 2. An error segment in the middle of a linear device, under writes.
S=$(cat /sys/block/$W/size)
printf '0 %s linear /dev/%s 0\n%s %s error\n%s %s linear /dev/%s %s\n' \
  @WLBA@ $W @WLBA@ @WBLOCKS@ $((@WLBA@ + @WBLOCKS@)) $((S - @WLBA@ - @WBLOCKS@)) $W $((@WLBA@ + @WBLOCKS@)) | dm create fr_werr
dm table fr_werr > werr_table.txt
run_json werr @CMD_WERR@
dm remove fr_werr

# 3. The device disappears mid-run: deleted SCSI disk.
B=$(reads ${GONE#/dev/})
( run_json gone @CMD_GONE@ ) &
wait_reads ${GONE#/dev/} $B
sleep 1
echo 1 > /sys/block/${GONE#/dev/}/device/delete
wait
ls /sys/block > gone_after.txt

# 3b. The device-mapper device is removed (forced) mid-run.
echo "0 $(cat /sys/block/$DMG/size) linear /dev/$DMG 0" | dm create fr_gone
for d in /sys/block/dm-*; do [ "$(cat $d/dm/name)" = fr_gone ] && DMN=${d##*/}; done
B=$(reads $DMN)
( run_json dmgone @CMD_DMGONE@ ) &
wait_reads $DMN $B
sleep 1
dm remove --force fr_gone 2> dm_remove.err
echo $? > dm_remove.status
wait
dm table fr_gone > dmgone_table.txt 2>&1
true
"#;

fn guest_script() -> String {
    SCRIPT
        .replace("@WERR@", WERR)
        .replace("@GONE@", GONE)
        .replace("@DMGONE@", DMGONE)
        .replace("@WLBA@", &WERR_LBA.to_string())
        .replace("@WBLOCKS@", &WERR_BLOCKS.to_string())
        .replace("@CMD_MEDIUM_URING@", CMD_MEDIUM_URING)
        .replace("@CMD_MEDIUM_PSYNC@", CMD_MEDIUM_PSYNC)
        .replace("@CMD_MEDIUM_TEXT@", CMD_MEDIUM_TEXT)
        .replace("@CMD_WERR@", CMD_WERR)
        .replace("@CMD_GONE@", CMD_GONE)
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
    fn job(&self) -> Value {
        self.json()
            .map(|j| j["jobs"][0].clone())
            .unwrap_or(Value::Null)
    }
    /// One line: exit status, stderr, and the job's error, error list and
    /// read counts (the whole stdout when it is not JSON).
    fn why(&self) -> String {
        let out = match serde_json::from_str::<Value>(&self.file("out")) {
            Ok(j) => {
                let job = &j["jobs"][0];
                format!(
                    "error {} errors {} read io_bytes {} total_ios {}",
                    job["error"], job["errors"], job["read"]["io_bytes"], job["read"]["total_ios"]
                )
            }
            Err(_) => self.file("out"),
        };
        format!(
            "status {}; stderr {}; stdout {out}",
            self.status(),
            self.file("err").trim()
        )
    }
}

/// The job's first listed error.
fn first_error(job: &Value) -> Value {
    job["errors"][0].clone()
}

/// stderr is exactly one line, naming `what`.
fn one_line_naming(err: &str, what: &[&str]) -> bool {
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.len() == 1 && what.iter().all(|w| lines[0].contains(w))
}

#[test]
fn run_reports_medium_errors_write_errors_and_vanished_devices() {
    let t0 = Instant::now();
    let run = Vm::builder()
        .scsi_hd(Disk::new(WERR_MB * MIB, WERR))
        .scsi_hd(Disk::new(GONE_MB * MIB, GONE))
        .scsi_hd(Disk::new(GONE_MB * MIB, DMGONE))
        .scsi_debug(&format!(
            "dev_size_mb={SD_MB} opts=2 medium_error_start={BAD_LBA} medium_error_count={BAD_BLOCKS}"
        ))
        .with_device_mapper()
        .with_drivelab()
        .guest_script(&guest_script())
        .timeout(Duration::from_secs(240))
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
    let name = |k: &str| names[k].as_str().unwrap_or("?").to_string();
    let (sd, gone) = (name("sd"), name("gone"));

    // 1. Medium error: the read job stops at the first failed read, and
    // says which read failed (its LBA range), why (ENODATA), and which
    // LBAs in it cannot be read.
    let read_first = BAD_LBA / (READ_BS / 512) * (READ_BS / 512);
    let read_last = read_first + READ_BS / 512 - 1;
    for (step, engine) in [("medium_uring", "io_uring"), ("medium_psync", "psync")] {
        let s = Step {
            run: &run,
            name: step,
        };
        println!("{step}: {}", s.why());
        c.check(
            &format!("{step}: exit 1, valid JSON"),
            s.status() == "1" && s.json().is_ok(),
            || s.why(),
        );
        let job = s.job();
        // The read holding the bad blocks. psync has one read in flight:
        // it is the only error. io_uring has several: reads in flight with
        // it may fail with it (the block layer merges adjacent reads into
        // one SCSI command, which fails as a whole) and are listed too;
        // read again they read fine, so their unreadable lists are empty.
        let errors = job["errors"].as_array().cloned().unwrap_or_default();
        let e = errors
            .iter()
            .find(|e| e["first_lba"] == read_first)
            .cloned()
            .unwrap_or(Value::Null);
        c.check(
            &format!("{step}: every other failed read is listed as readable when read again"),
            (engine == "io_uring" || errors.len() == 1)
                && errors
                    .iter()
                    .filter(|x| x["first_lba"] != read_first)
                    .all(|x| x["unreadable"] == serde_json::json!([])),
            || format!("errors {}", job["errors"]),
        );
        c.check(
            &format!("{step} ({engine}): error names the read of LBAs {read_first}-{read_last} and ENODATA"),
            job["error"] == libc_enodata()
                && e["op"] == "read"
                && e["first_lba"] == read_first
                && e["last_lba"] == read_last
                && e["offset"] == read_first * 512
                && e["len"] == READ_BS
                && e["errno"] == libc_enodata()
                && e["device"] == sd,
            || format!("job error {} errors {}", job["error"], job["errors"]),
        );
        c.check(
            &format!("{step}: narrowed to the exact unreadable LBAs {BAD_LBA}-{}", BAD_LBA + BAD_BLOCKS - 1),
            e["unreadable"]
                == serde_json::json!([{"first_lba": BAD_LBA, "last_lba": BAD_LBA + BAD_BLOCKS - 1}]),
            || format!("errors {}", job["errors"]),
        );
        // psync: exactly the reads before the failed one; io_uring: also
        // some of the (up to 3) reads queued behind it, never the whole disk.
        let done = job["read"]["io_bytes"].as_u64().unwrap_or(0);
        c.check(
            &format!("{step}: the reads before the error are counted"),
            if engine == "psync" {
                done == read_first * 512
            } else {
                done >= read_first * 512 - 3 * READ_BS && done < SD_MB * MIB
            },
            || format!("read {}", job["read"]),
        );
        c.check(
            &format!("{step}: one error line on stderr naming the device and the LBAs"),
            one_line_naming(
                &s.file("err"),
                &[
                    &sd,
                    &format!("LBA {read_first}-{read_last}"),
                    &format!("{BAD_LBA}-{}", BAD_LBA + BAD_BLOCKS - 1),
                ],
            ),
            || s.why(),
        );
    }
    let s = Step {
        run: &run,
        name: "medium_text",
    };
    c.check(
        "medium_text: text output names the exact LBAs, exit 1",
        s.status() == "1"
            && s.file("out")
                .contains(&format!("{BAD_LBA}-{}", BAD_LBA + BAD_BLOCKS - 1)),
        || s.why(),
    );

    // 2. Write error on the dm error segment.
    let table = run.file("werr_table.txt").unwrap_or_default();
    c.check(
        "werr: the dm table has the error segment",
        table.contains(&format!("{WERR_LBA} {WERR_BLOCKS} error")),
        || table.clone(),
    );
    let s = Step {
        run: &run,
        name: "werr",
    };
    println!("werr: {}", s.why());
    let job = s.job();
    let e = first_error(&job);
    let w_first = WERR_LBA / (READ_BS / 512) * (READ_BS / 512);
    c.check(
        &format!(
            "werr: exit 1, error names the write of LBAs {w_first}-{} and EIO",
            w_first + READ_BS / 512 - 1
        ),
        s.status() == "1"
            && job["error"] == 5
            && e["op"] == "write"
            && e["errno"] == 5
            && e["first_lba"] == w_first
            && e["last_lba"] == w_first + READ_BS / 512 - 1
            && e["device"] == "/dev/mapper/fr_werr",
        || format!("errors {}; {}", job["errors"], s.why()),
    );
    c.check(
        "werr: the write is not narrowed (no unreadable list)",
        e.get("unreadable").is_none(),
        || format!("{e}"),
    );
    c.check(
        "werr: one error line on stderr",
        one_line_naming(&s.file("err"), &["/dev/mapper/fr_werr", "write"]),
        || s.why(),
    );

    // 3. Vanished devices: one error line, valid JSON with partial results.
    let after = run.file("gone_after.txt").unwrap_or_default();
    c.check(
        "gone: the deleted disk is gone from /sys/block",
        !after
            .split_whitespace()
            .any(|n| format!("/dev/{n}") == gone),
        || after.clone(),
    );
    for (step, dev) in [("gone", gone.as_str()), ("dmgone", "/dev/mapper/fr_gone")] {
        let s = Step {
            run: &run,
            name: step,
        };
        println!("{step}: {}", s.why());
        let job = s.job();
        let e = first_error(&job);
        c.check(
            &format!("{step}: exit 1 with valid JSON"),
            s.status() == "1" && s.json().is_ok(),
            || s.why(),
        );
        c.check(
            &format!("{step}: partial results: reads before the loss are counted"),
            job["read"]["total_ios"].as_u64().is_some_and(|n| n > 0),
            || format!("read {}", job["read"]),
        );
        c.check(
            &format!("{step}: the error is in the JSON with its device, LBA range and errno"),
            job["error"].as_i64().is_some_and(|x| x > 0)
                && e["errno"] == job["error"]
                && e["device"] == dev
                && e["first_lba"].is_u64()
                && e["last_lba"].as_u64() >= e["first_lba"].as_u64(),
            || format!("errors {}", job["errors"]),
        );
        c.check(
            &format!("{step}: one error line on stderr naming the device"),
            one_line_naming(&s.file("err"), &[dev]),
            || s.why(),
        );
    }
    let t = run.file("dmgone_table.txt").unwrap_or_default();
    println!(
        "dm remove --force: status {} stderr {}; table after: {t}",
        run.file("dm_remove.status").unwrap_or_default().trim(),
        run.file("dm_remove.err").unwrap_or_default().trim()
    );
    println!("faults_run: {:.1} s", t0.elapsed().as_secs_f64());
    c.finish(&ctx);
}

/// ENODATA on Linux (what a SCSI medium error becomes for a block read).
fn libc_enodata() -> i64 {
    61
}
