//! What issue 4 expects of `drivelab device` against real (emulated)
//! controllers, checked by read-back in the guest: SCSI WRITE SAME(16)/(10)
//! of a non-zero pattern on the virtio-scsi disk and on scsi_debug, NVMe
//! Write Zeroes and Format NVM, ATA IDENTIFY over SAT on the AHCI disk,
//! NVMe Sanitize refused as unsupported, the exact failing LBA of a
//! scsi_debug medium error, and `drivelab devices` listing all four disks.
//!
//! The command lines are the `CMD_*` constants, in one place.
//!
//! Needs root, QEMU and the cached kernel: `bash tests/vm/setup.sh`.

use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, Vm, MIB};
use serde_json::Value;

const SCSI: &str = "DLSCSI0001";
const NVME: &str = "DLNVME0001";
const SATA: &str = "DLSATA0001";
const SD_MB: u64 = 32;
/// scsi_debug's own default (0x1234 = 4660), chosen on purpose: its sense
/// INFORMATION field reports max(command LBA, 0x1234), so only a bad range
/// starting at 0x1234 makes a read that straddles it report the first bad
/// LBA exactly (any other start reports the command's own LBA).
const MEDIUM_ERROR_START: u64 = 0x1234;
/// Range written by WRITE SAME / Write Zeroes: 512-byte blocks.
const LBA: u64 = 2048;
const BLOCKS: u64 = 256;
/// The WRITE SAME pattern byte (non-zero, so a no-op cannot pass).
const PATTERN: u8 = 0xA5;

// The command lines, as `drivelab device --help` gives them ($DEV is the
// guest device path). Writing ops get `--yes`, not `--force`: the emulated
// disks are blank, so the safety check must let them through by itself.
const CMD_PROBE: &str = "drivelab device $DEV probe --output-format json";
const CMD_WRITE_SAME: &str = "drivelab device $DEV write-same --cdb $CDB --lba $LBA --count $BLOCKS --pattern-byte $PAT --yes --output-format json";
const CMD_WRITE_ZEROES: &str =
    "drivelab device $DEV nvme-write-zeroes --lba $LBA --count $BLOCKS --yes --output-format json";
const CMD_FORMAT: &str = "drivelab device $DEV nvme-format --ses 0 --yes --output-format json";
const CMD_SANITIZE: &str =
    "drivelab device $DEV nvme-sanitize --action block --yes --output-format json";
const CMD_IDENTIFY: &str = "drivelab device $DEV identify --output-format json";
const CMD_READ: &str = "drivelab device $DEV read --lba $LBA --count $BLOCKS --output-format json";

fn guest_script() -> String {
    format!(
        r#"
LBA={LBA}; BLOCKS={BLOCKS}; PAT=0x{PATTERN:02x}; PATOCT=$(printf '%03o' {PATTERN}); N={N}
SCSI=/dev/$(disk_by_serial {SCSI}); NVME=/dev/$(disk_by_serial {NVME}); SATA=/dev/$(disk_by_serial {SATA}); SD=/dev/$(disk_by_model scsi_debug)

# expect_bytes FILE COUNT OCTAL: FILE holds COUNT bytes all equal to OCTAL.
expect_bytes() {{ head -c "$2" /dev/zero | tr '\000' "\\$3" | cmp -s - "$1"; }}
# range_is DEV LBA BLOCKS OCTAL: those blocks hold only that byte.
range_is() {{ dd if="$1" bs=512 skip="$2" count="$3" iflag=direct 2>/dev/null > rb.bin; expect_bytes rb.bin $(($3 * 512)) "$4"; }}
# fill DEV LBA BLOCKS OCTAL: write that byte over the blocks.
fill() {{ head -c $(($3 * 512)) /dev/zero | tr '\000' "\\$4" | dd of="$1" bs=512 seek="$2" oflag=direct 2>/dev/null; }}
# verdict NAME: writes NAME.verify.json from the exit statuses given as
# key=status pairs.
verdict() {{ n=$1; shift; sep=''; printf '{{' > "$n.verify.json"; for kv in "$@"; do printf '%s"%s":%s' "$sep" "${{kv%%=*}}" "${{kv#*=}}" >> "$n.verify.json"; sep=','; done; printf '}}\n' >> "$n.verify.json"; }}

run_json devices drivelab devices --output-format json
for DEV in $SCSI $NVME $SATA $SD; do run_json "probe_${{DEV#/dev/}}" {CMD_PROBE}; done

# WRITE SAME (16) and (10) with a pattern on scsi-hd and scsi_debug: the
# range reads back as the pattern, the blocks either side stay zero.
for DEV in $SCSI $SD; do
  for CDB in 16 10; do
    tag="ws${{CDB}}_${{DEV#/dev/}}"
    fill $DEV $((LBA - 1)) $((BLOCKS + 2)) 000
    run_json "$tag" {CMD_WRITE_SAME}
    range_is $DEV $LBA $BLOCKS $PATOCT; inside=$?
    range_is $DEV $((LBA - 1)) 1 000; below=$?
    range_is $DEV $((LBA + BLOCKS)) 1 000; above=$?
    verdict "$tag" status=$(cat "$tag.status") inside=$inside below=$below above=$above
  done
done

# NVMe Write Zeroes: pre-filled with the pattern, the range reads back zero.
DEV=$NVME
fill $DEV $((LBA - 1)) $((BLOCKS + 2)) $PATOCT
run_json wz {CMD_WRITE_ZEROES}
range_is $DEV $LBA $BLOCKS 000; inside=$?
range_is $DEV $((LBA - 1)) 1 $PATOCT; below=$?
range_is $DEV $((LBA + BLOCKS)) 1 $PATOCT; above=$?
verdict wz status=$(cat wz.status) inside=$inside below=$below above=$above

# NVMe Format NVM (ses 0): everything written before reads back zero.
fill $DEV 0 64 $PATOCT
run_json format {CMD_FORMAT}
range_is $DEV 0 64 000; inside=$?
verdict format status=$(cat format.status) inside=$inside

# NVMe Sanitize: QEMU 7.2 has none; drivelab must say so.
run_json sanitize {CMD_SANITIZE}

# ATA IDENTIFY through SAT on the AHCI disk.
DEV=$SATA
run_json identify {CMD_IDENTIFY}

# scsi_debug medium error: a read straddling it names the exact LBA.
DEV=$SD; LBA=$((N - 8)); BLOCKS=16
run_json medium {CMD_READ}
LBA=$N; BLOCKS=1
run_json medium_at {CMD_READ}
true
"#,
        N = MEDIUM_ERROR_START,
    )
}

/// Bytes from a hex string ("f00003…"); stops at the first bad pair.
fn hex_bytes(h: &str) -> Vec<u8> {
    h.as_bytes()
        .chunks(2)
        .map_while(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|t| u8::from_str_radix(t, 16).ok())
        })
        .collect()
}

/// The first value under `key` anywhere in `v` (objects searched depth-first).
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
fn device_commands_do_what_issue_4_says_on_every_controller() {
    let run = Vm::builder()
        .scsi_hd(Disk::new(64 * MIB, SCSI))
        .nvme(Disk::new(64 * MIB, NVME))
        .sata(Disk::new(64 * MIB, SATA))
        .scsi_debug(&format!(
            "dev_size_mb={SD_MB} opts=2 medium_error_start={MEDIUM_ERROR_START} medium_error_count=8"
        ))
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
    let status = |name: &str| {
        run.file(&format!("{name}.status"))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let out = |name: &str| run.file(&format!("{name}.out")).unwrap_or_default();
    let verify = |name: &str| {
        run.json(&format!("{name}.verify.json"))
            .unwrap_or(Value::Null)
    };

    // Every output is JSON, errors included.
    for (name, v) in run.json_files().unwrap_or_default() {
        c.check(&format!("{name} is an object"), v.is_object(), || {
            v.to_string()
        });
    }
    for name in [
        "devices",
        "identify",
        "sanitize",
        "medium",
        "medium_at",
        "wz",
        "format",
    ] {
        let text = out(name);
        c.check(
            &format!("{name} output is JSON"),
            serde_json::from_str::<Value>(&text).is_ok(),
            || text.clone(),
        );
    }

    // devices lists all four disks.
    let devices = out("devices");
    c.check("devices exits 0", status("devices") == "0", || {
        devices.clone()
    });
    for serial in [SCSI, NVME, SATA] {
        c.check(
            &format!("devices shows {serial}"),
            devices.contains(serial),
            || devices.clone(),
        );
    }
    c.check(
        "devices shows scsi_debug",
        devices.contains("scsi_debug"),
        || devices.clone(),
    );

    // ... each with the commands it answered that it supports (issue 4:
    // discovered by asking the device, not guessed from names).
    let dev_json: Value = serde_json::from_str(&devices).unwrap_or(Value::Null);
    let rows = dev_json["devices"].as_array().cloned().unwrap_or_default();
    let caps_of = |pred: &dyn Fn(&Value) -> bool| -> Value {
        rows.iter()
            .find(|r| pred(r))
            .map(|r| r["capabilities"].clone())
            .unwrap_or(Value::Null)
    };
    let by_serial = |serial: &str| {
        let serial = serial.to_string();
        caps_of(&move |r: &Value| r["serial"].as_str() == Some(serial.as_str()))
    };
    let scsi = by_serial(SCSI);
    c.check(
        "devices: scsi-hd is SCSI with WRITE SAME(16)/(10) and UNMAP",
        scsi["transport"] == "scsi"
            && scsi["scsi_write_same_16"] == true
            && scsi["scsi_write_same_10"] == true
            && scsi["scsi_unmap"] == true,
        || scsi.to_string(),
    );
    let nvme = by_serial(NVME);
    c.check(
        "devices: NVMe has Write Zeroes, DSM and Format, no Sanitize",
        nvme["transport"] == "nvme"
            && nvme["nvme_write_zeroes"] == true
            && nvme["nvme_dsm"] == true
            && nvme["nvme_format"]["supported"] == true
            && nvme["nvme_sanitize"]["crypto"] == false
            && nvme["nvme_sanitize"]["block"] == false
            && nvme["nvme_sanitize"]["overwrite"] == false,
        || nvme.to_string(),
    );
    let sata = by_serial(SATA);
    c.check(
        "devices: SATA answers IDENTIFY over SAT, without SCT Write Same",
        sata["transport"] == "ata-via-sat"
            && sata["ata_sct_write_same"] == false
            && sata["identity"]["serial"]
                .as_str()
                .map(|s| s.contains(SATA))
                == Some(true),
        || sata.to_string(),
    );
    let sdebug = caps_of(&|r: &Value| {
        r["model"]
            .as_str()
            .is_some_and(|m| m.contains("scsi_debug"))
    });
    c.check(
        "devices: scsi_debug is SCSI with WRITE SAME",
        sdebug["transport"] == "scsi" && sdebug["scsi_write_same_16"] == true,
        || sdebug.to_string(),
    );

    // probe works on every controller.
    for f in std::fs::read_dir(run.out_dir()).unwrap().flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        if let Some(tag) = name
            .strip_suffix(".out")
            .filter(|t| t.starts_with("probe_"))
        {
            let text = out(tag);
            c.check(
                &format!("{tag} exits 0 with JSON"),
                status(tag) == "0" && serde_json::from_str::<Value>(&text).is_ok(),
                || format!("status {}: {text}", status(tag)),
            );
        }
    }

    // Read-back verdicts (WRITE SAME, Write Zeroes, Format): the command
    // exited 0, the range holds what it should, its neighbours are untouched.
    for f in std::fs::read_dir(run.out_dir()).unwrap().flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        let Some(tag) = name.strip_suffix(".verify.json") else {
            continue;
        };
        let v = verify(tag);
        for key in ["status", "inside", "below", "above"] {
            if v.get(key).is_some() {
                c.check(&format!("{tag}: {key} = 0"), v[key] == 0, || {
                    format!("{v}; output {}", out(tag))
                });
            }
        }
    }
    for tag in ["ws16_", "ws10_"] {
        let n = std::fs::read_dir(run.out_dir())
            .unwrap()
            .flatten()
            .filter(|f| {
                f.file_name().to_string_lossy().starts_with(tag)
                    && f.file_name().to_string_lossy().ends_with(".verify.json")
            })
            .count();
        c.check(
            &format!("{tag}* ran on scsi-hd and scsi_debug"),
            n == 2,
            || format!("{n} verdicts"),
        );
    }
    c.check("write zeroes verified", verify("wz") != Value::Null, || {
        "no wz.verify.json".into()
    });
    c.check("format verified", verify("format") != Value::Null, || {
        "no format.verify.json".into()
    });

    // IDENTIFY returns the serial QEMU was given, in its serial field.
    let id = out("identify");
    let idv: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
    let id_serial = find_key(&idv, "serial")
        .and_then(Value::as_str)
        .map(str::trim);
    c.check(
        "identify exits 0 with serial DLSATA0001",
        status("identify") == "0" && id_serial == Some(SATA),
        || id.clone(),
    );

    // Sanitize on QEMU's NVMe: refused as unsupported, not a crash.
    let san = out("sanitize");
    c.check(
        "sanitize says not supported",
        status("sanitize") != "0" && san.contains("not supported by this device"),
        || format!("status {}: {san}", status("sanitize")),
    );

    // Medium error: the exact failing LBA is reported, both for a read that
    // straddles the bad range and for one that starts on it, and it is the
    // INFORMATION field of the raw fixed-format sense (bytes 3..7), decoded
    // here independently.
    for tag in ["medium", "medium_at"] {
        let text = out(tag);
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        c.check(&format!("{tag}: read fails"), status(tag) != "0", || {
            text.clone()
        });
        let reported = find_key(&v, "failing_lba").and_then(Value::as_u64);
        c.check(
            &format!("{tag}: failing_lba is {MEDIUM_ERROR_START}"),
            reported == Some(MEDIUM_ERROR_START),
            || text.clone(),
        );
        let raw = find_key(&v, "raw_hex")
            .and_then(Value::as_str)
            .map(hex_bytes)
            .unwrap_or_default();
        let info = (raw.len() >= 7 && raw[0] & 0x7f == 0x70)
            .then(|| u64::from(u32::from_be_bytes([raw[3], raw[4], raw[5], raw[6]])));
        c.check(
            &format!("{tag}: failing_lba matches the raw sense"),
            info.is_some() && info == reported,
            || format!("raw sense {raw:02x?} -> {info:?}, reported {reported:?}"),
        );
    }

    c.finish(&ctx);
}

#[test]
fn find_key_searches_nested_objects_and_arrays() {
    let v: Value =
        serde_json::json!({"error": "x", "sense": [{"failing_lba": 20480}], "lba": 20472});
    assert_eq!(find_key(&v, "failing_lba"), Some(&serde_json::json!(20480)));
    assert_eq!(find_key(&v, "lba"), Some(&serde_json::json!(20472)));
    assert_eq!(find_key(&v, "missing"), None);
}

#[test]
fn hex_bytes_reads_pairs() {
    assert_eq!(
        hex_bytes("f0000300001234"),
        vec![0xf0, 0, 3, 0, 0, 0x12, 0x34]
    );
    assert_eq!(hex_bytes("0g"), Vec::<u8>::new());
}
