//! Issue 14's purges on QEMU's emulated controllers, in one boot:
//!
//! - the AHCI (SATA) disk: QEMU's IDE/AHCI model does not implement the
//!   ATA Security feature set. The guest's IDENTIFY DEVICE (through SAT)
//!   shows it — word 82 bit 1 and word 128 clear — and `drivelab erase
//!   --method ata-security-erase` (and `-enhanced`), and `drivelab season
//!   --purge ata-security-erase`, are refused in one line with exit status 2
//!   and nothing written (the whole disk reads back as it was filled);
//! - the NVMe disk: QEMU implements Format NVM but not Sanitize (SANICAP 0).
//!   `drivelab season` purges by Format NVM, reports it by name with
//!   `fresh: true`, and the disk reads back zero; `--purge nvme-sanitize`
//!   is refused in one line with exit status 2 and nothing written; a short
//!   full season (purge, fill, rounds) reports its rounds.
//!
//! The disks are 16 MiB, rounds 1 s: about a minute of VM time under TCG.
//! Needs root, QEMU and the cached kernel: `bash tests/vm/setup.sh`.

use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, Vm, MIB};
use serde_json::Value;

const NVME: &str = "DLNVME0001";
const SATA: &str = "DLSATA0001";
const DISK_MB: u64 = 16;
/// What the disks are filled with before each command (octal for `tr`).
const FILL_OCT: &str = "245"; // 0xA5

// The command lines ($DEV is the guest device, $SER its confirmed serial).
// Refusals are run with text output: the error must be one line.
const CMD_ERASE_SEC: &str = "drivelab erase $DEV --method ata-security-erase --verify none --yes --confirm-serial $SER --certificate-dir /tmp/certs";
const CMD_ERASE_SEC_ENH: &str = "drivelab erase $DEV --method ata-security-erase-enhanced --verify none --yes --confirm-serial $SER --certificate-dir /tmp/certs";
const CMD_SEASON_SEC: &str = "drivelab season $DEV --purge ata-security-erase --stages purge --yes --confirm-serial $SER --state-dir /tmp/s_sec";
const CMD_SEASON_SANITIZE: &str = "drivelab season $DEV --purge nvme-sanitize --stages purge --yes --confirm-serial $SER --state-dir /tmp/s_san";
const CMD_SEASON_PURGE: &str = "drivelab season $DEV --stages purge --yes --confirm-serial $SER --state-dir /tmp/s_purge --output-format json";
const CMD_SEASON_FULL: &str = "drivelab season $DEV --stages purge,fill,rounds --fill-passes 1 --round-time 1 --max-rounds 2 --yes --confirm-serial $SER --state-dir /tmp/s_full --output-format json";

fn guest_script() -> String {
    format!(
        r#"
export XDG_CONFIG_HOME=/tmp/cfg
mkdir -p /tmp/certs /tmp/s_sec /tmp/s_san /tmp/s_purge /tmp/s_full
NVME=/dev/$(disk_by_serial {NVME}); SATA=/dev/$(disk_by_serial {SATA})
size_of() {{ echo $(( $(cat /sys/block/${{1#/dev/}}/size) * 512 )); }}
# serial_of DEV: the serial drivelab wants confirmed (its own dry-run plan).
serial_of() {{
  s=$(drivelab erase "$1" --method stream --dry-run --output-format json 2>/dev/null | sed -n 's/^ *"serial": "\(.*\)",*$/\1/p' | head -n1)
  [ -n "$s" ] && echo "$s" || echo "$1"
}}
fill() {{ head -c $(size_of $1) /dev/zero | tr '\000' "\\$2" > /tmp/fill.bin; dd if=/tmp/fill.bin of=$1 bs=1M oflag=direct 2>/dev/null; rm -f /tmp/fill.bin; }}
# whole_is DEV OCTAL: every byte of the device (read O_DIRECT) is that byte.
whole_is() {{ dd if=$1 of=/tmp/rb.bin bs=1M iflag=direct 2>/dev/null; head -c $(size_of $1) /dev/zero | tr '\000' "\\$2" | cmp -s - /tmp/rb.bin; s=$?; rm -f /tmp/rb.bin; return $s; }}
# after NAME DEV OCTAL: NAME.readback holds 0 when DEV is still all OCTAL.
after() {{ whole_is $2 $3; echo $? > "$1.readback"; }}

# SATA: IDENTIFY in the guest says whether QEMU has the Security feature set.
DEV=$SATA; SER=$(serial_of $DEV)
run_json identify_sata drivelab device $DEV identify --output-format json
fill $DEV {FILL_OCT}
run_json erase_sec {CMD_ERASE_SEC}; after erase_sec $DEV {FILL_OCT}
run_json erase_sec_enh {CMD_ERASE_SEC_ENH}; after erase_sec_enh $DEV {FILL_OCT}
run_json season_sec {CMD_SEASON_SEC}; after season_sec $DEV {FILL_OCT}

# NVMe: Sanitize asked for (QEMU has none): refused, nothing written.
DEV=$NVME; SER=$(serial_of $DEV)
run_json probe_nvme drivelab device $DEV probe --output-format json
fill $DEV {FILL_OCT}
run_json season_sanitize {CMD_SEASON_SANITIZE}; after season_sanitize $DEV {FILL_OCT}
# The strongest purge QEMU offers: Format NVM; the disk reads back zero.
run_json season_purge {CMD_SEASON_PURGE}; after season_purge $DEV 000
# A short whole season.
fill $DEV {FILL_OCT}
run_json season_full {CMD_SEASON_FULL}
true
"#
    )
}

/// The first value under `key` anywhere in `v` (objects depth-first).
fn find_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m
            .get(key)
            .or_else(|| m.values().find_map(|x| find_key(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find_key(x, key)),
        _ => None,
    }
}

#[test]
fn season_and_erase_purges_on_qemu_sata_and_nvme() {
    let run = Vm::builder()
        .nvme(Disk::new(DISK_MB * MIB, NVME))
        .sata(Disk::new(DISK_MB * MIB, SATA))
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
    let status = |n: &str| {
        run.file(&format!("{n}.status"))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let text = |n: &str, ext: &str| run.file(&format!("{n}.{ext}")).unwrap_or_default();
    let json = |n: &str| serde_json::from_str::<Value>(&text(n, "out")).unwrap_or(Value::Null);
    let unchanged = |n: &str| text(n, "readback").trim() == "0";

    // What the guest's IDENTIFY DEVICE says about the Security feature set.
    let id = json("identify_sata");
    let idd = find_key(&id, "identify").cloned().unwrap_or(Value::Null);
    let security = idd["security"].clone();
    c.check(
        "IDENTIFY in the guest: QEMU's AHCI disk has no Security feature set (word 82 bit 1, word 128 clear)",
        status("identify_sata") == "0"
            && idd["security_supported"] == false
            && security["supported"] == false
            && security["enabled"] == false
            && security["frozen"] == false,
        || format!("{id}"),
    );

    // ATA security erase refused: one line, exit 2, nothing written.
    for n in [
        "erase_sec",
        "erase_sec_enh",
        "season_sec",
        "season_sanitize",
    ] {
        println!("{n}: exit {}: {}", status(n), text(n, "err").trim());
    }
    for n in ["erase_sec", "erase_sec_enh", "season_sec"] {
        let err = text(n, "err");
        c.check(&format!("{n}: exit 2"), status(n) == "2", || {
            format!(
                "status {} stderr {err} stdout {}",
                status(n),
                text(n, "out")
            )
        });
        c.check(
            &format!("{n}: one line saying the drive does not support it"),
            err.trim().lines().count() == 1 && err.contains("not supported by this drive"),
            || err.clone(),
        );
        c.check(
            &format!("{n}: nothing written (the disk reads back as filled)"),
            unchanged(n),
            || text(n, "readback"),
        );
    }

    // NVMe: QEMU offers Format NVM and no Sanitize (checked, not assumed).
    let probe = json("probe_nvme");
    c.check(
        "probe: QEMU's NVMe disk has Format NVM and no Sanitize",
        find_key(&probe, "nvme_format").map(|f| f["supported"] == true) == Some(true)
            && find_key(&probe, "nvme_sanitize")
                .map(|s| s["block"] == false && s["crypto"] == false)
                == Some(true),
        || probe.to_string(),
    );
    let err = text("season_sanitize", "err");
    c.check(
        "season --purge nvme-sanitize: exit 2, one line naming the missing Sanitize",
        status("season_sanitize") == "2"
            && err.trim().lines().count() == 1
            && err.contains("--purge nvme-sanitize")
            && err.contains("does not support NVMe Sanitize"),
        || format!("status {} stderr {err}", status("season_sanitize")),
    );
    c.check(
        "season --purge nvme-sanitize: nothing written",
        unchanged("season_sanitize"),
        || text("season_sanitize", "readback"),
    );

    // The purge QEMU implements: Format NVM, by name, fresh, zeroes.
    for n in ["season_purge", "season_full"] {
        let v = json(n);
        let drive = v["drives"][0].clone();
        c.check(
            &format!("{n}: exit 0, purged by nvme-format, fresh: true"),
            status(n) == "0"
                && drive["purge"]["method"] == "nvme-format"
                && drive["fresh"] == true
                && drive["purge"]["result"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("purged: NVMe Format NVM")),
            || format!("status {} stderr {} out {v}", status(n), text(n, "err")),
        );
        let methods = drive["purge"]["methods"].to_string();
        c.check(
            &format!("{n}: the method list says why Sanitize and security erase were not used"),
            methods.contains("does not support NVMe Sanitize")
                && methods.contains("ata-security-erase"),
            || methods.clone(),
        );
    }
    c.check(
        "season purge: the NVMe disk reads back zero after Format NVM",
        unchanged("season_purge"),
        || text("season_purge", "readback"),
    );
    for n in ["season_purge", "season_full"] {
        let v = json(n);
        println!(
            "{n}: purge {} in {} s, fresh {}",
            v["drives"][0]["purge"]["result"],
            v["drives"][0]["purge"]["seconds"],
            v["drives"][0]["fresh"]
        );
    }
    let full = json("season_full");
    let rounds = find_key(&full, "rounds")
        .and_then(|r| r.as_array().map(|a| a.len()))
        .unwrap_or(0);
    c.check(
        "season_full: 1 to 2 rounds recorded after the purge and fill",
        (1..=2).contains(&rounds),
        || full.to_string(),
    );
    c.finish(&ctx);
}
