//! One boot of the test VM with every kind of emulated disk: the guest sees
//! each disk with the serial and size it was given, modules load, a
//! scsi_debug medium error fails exactly the reads it should and the kernel
//! log names the sector, and drivelab's `devices` / `device probe` outputs
//! are recorded (and checked where those subcommands exist).
//!
//! Needs root, QEMU and the cached kernel: `bash tests/vm/setup.sh`.

use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};
use serde_json::Value;

const SCSI: &str = "DLSCSI0001";
const NVME: &str = "DLNVME0001";
const SATA: &str = "DLSATA0001";
const BLKDEBUG: &str = "DLBDBG0001";
const SCSI_SIZE: u64 = 64 * MIB;
const NVME_SIZE: u64 = 48 * MIB;
const SATA_SIZE: u64 = 40 * MIB;
const BLKDEBUG_SIZE: u64 = 16 * MIB;
/// scsi_debug: 32 MiB, with a medium error on MEDIUM_ERROR_COUNT sectors.
const SD_MB: u64 = 32;
/// scsi_debug's own default (0x1234 = 4660), chosen on purpose: its sense
/// INFORMATION field reports max(command LBA, 0x1234), so only a bad range
/// starting at 0x1234 makes a read that straddles it report the first bad
/// LBA exactly (any other start reports the command's own LBA).
const MEDIUM_ERROR_START: u64 = 0x1234;
const MEDIUM_ERROR_COUNT: u64 = 8;
/// blkdebug: reads touching this sector fail with EIO.
const BLKDEBUG_BAD_SECTOR: u64 = 4096;

fn guest_script() -> String {
    format!(
        r#"
uname -r > kernel_release.txt
printf '{{"kernel":%s,"modules":%s,"disks":%s}}\n' "$(json_str "$(uname -r)")" "$(modules_json)" "$(disks_json)" > inventory.json
for n in $(disk_names | grep '^sd'); do
    cp "/sys/block/$n/device/vpd_pg80" "vpd_pg80_$n.bin" 2>/dev/null
done

# scsi_debug medium error: the 8 sectors just before the bad range read
# fine; one 16-sector direct read straddling its start fails.
N={N}
SD=$(disk_by_model scsi_debug)
dd if=/dev/$SD of=/dev/null bs=512 count=8 skip=$((N - 8)) iflag=direct 2> dd_before.err
before=$?
dd if=/dev/$SD of=/dev/null bs=8192 count=1 skip=$(((N - 8) * 512)) iflag=direct,skip_bytes 2> dd_across.err
across=$?
dd if=/dev/$SD of=/dev/null bs=512 count=1 skip=$N iflag=direct 2> dd_at.err
at=$?
printf '{{"device":%s,"before_status":%s,"before_stderr":%s,"across_status":%s,"across_stderr":%s,"at_status":%s}}\n' \
    "$(json_str "$SD")" "$before" "$(json_str "$(cat dd_before.err)")" "$across" "$(json_str "$(cat dd_across.err)")" "$at" > medium_error.json

# blkdebug: a read of sector B-1 works, one of sector B fails.
B={B}
BD=$(disk_by_serial {BLKDEBUG})
dd if=/dev/$BD of=/dev/null bs=512 count=1 skip=$((B - 1)) iflag=direct 2> bd_before.err
bbefore=$?
dd if=/dev/$BD of=/dev/null bs=512 count=1 skip=$B iflag=direct 2> bd_at.err
bat=$?
printf '{{"device":%s,"before_status":%s,"at_status":%s,"at_stderr":%s}}\n' \
    "$(json_str "$BD")" "$bbefore" "$bat" "$(json_str "$(cat bd_at.err)")" > blkdebug.json

# drivelab, as far as it goes today: outputs saved whatever they say.
run_json drivelab_devices drivelab devices --output-format json
for n in $(disk_names); do
    run_json "drivelab_probe_$n" drivelab device "/dev/$n" probe --output-format json
done
true
"#,
        N = MEDIUM_ERROR_START,
        B = BLKDEBUG_BAD_SECTOR,
        BLKDEBUG = BLKDEBUG,
    )
}

fn boot() -> GuestRun {
    let vm = Vm::builder()
        .scsi_hd(Disk::new(SCSI_SIZE, SCSI))
        .nvme(Disk::new(NVME_SIZE, NVME))
        .sata(Disk::new(SATA_SIZE, SATA))
        .blkdebug(Disk::new(BLKDEBUG_SIZE, BLKDEBUG), BLKDEBUG_BAD_SECTOR)
        .scsi_debug(&format!(
            "dev_size_mb={SD_MB} opts=2 medium_error_start={MEDIUM_ERROR_START} medium_error_count={MEDIUM_ERROR_COUNT}"
        ))
        .with_drivelab()
        .guest_script(&guest_script())
        .timeout(Duration::from_secs(180));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

/// The inventory entry whose serial is `serial`.
fn disk_with_serial<'a>(disks: &'a [Value], serial: &str) -> Option<&'a Value> {
    disks.iter().find(|d| d["serial"] == serial)
}

#[test]
fn guest_sees_every_disk_and_scsi_debug_errors_where_configured() {
    let run = boot();
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

    let inv = run
        .json("inventory.json")
        .unwrap_or_else(|e| panic!("{e}\n{ctx}"));
    let disks: Vec<Value> = inv["disks"].as_array().cloned().unwrap_or_default();
    let modules: Vec<String> = inv["modules"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();

    // The kernel the guest runs is the one setup.sh cached.
    let host = drivelab_vmtest::host::Host::discover().unwrap();
    c.check(
        "guest kernel is the cached one",
        inv["kernel"] == host.kernel_release,
        || format!("guest {} vs cache {}", inv["kernel"], host.kernel_release),
    );
    for m in [
        "virtio_scsi",
        "sd_mod",
        "sg",
        "ahci",
        "nvme",
        "scsi_debug",
        "9p",
        "9pnet_virtio",
    ] {
        c.check(
            &format!("module {m} loaded"),
            modules.iter().any(|x| x == m),
            || format!("/proc/modules has {modules:?}"),
        );
    }
    c.check(
        "init loaded every module",
        !run.file("init.log").unwrap_or_default().contains("FAILED"),
        || run.file("init.log").unwrap_or_default(),
    );

    // Each emulated disk: present, by the serial given, with the size given,
    // on the controller it was attached to (the sysfs path names it).
    for (serial, size, path_part) in [
        (SCSI, SCSI_SIZE, "/virtio"),
        (NVME, NVME_SIZE, "/nvme"),
        (SATA, SATA_SIZE, "/ata"),
        (BLKDEBUG, BLKDEBUG_SIZE, "/virtio"),
    ] {
        match disk_with_serial(&disks, serial) {
            None => c.check(&format!("disk {serial} present"), false, || {
                format!("disks: {disks:?}")
            }),
            Some(d) => {
                c.check(&format!("disk {serial} present"), true, String::new);
                c.check(
                    &format!("disk {serial} size"),
                    d["size_512"].as_u64() == Some(size / 512),
                    || format!("size_512 {} vs {}", d["size_512"], size / 512),
                );
                let devpath = d["devpath"].as_str().unwrap_or("");
                c.check(
                    &format!("disk {serial} on its controller"),
                    devpath.contains(path_part),
                    || format!("devpath {devpath} lacks {path_part}"),
                );
            }
        }
    }
    // The SCSI-side serials came from VPD page 0x80: read the raw page the
    // guest copied and decode it here (header: byte 3 = page length).
    for d in &disks {
        let name = d["name"].as_str().unwrap_or("");
        if d["serial_source"] == "vpd_pg80"
            && d["serial"].as_str().is_some_and(|s| s.starts_with("DL"))
        {
            let raw = std::fs::read(run.out_dir().join(format!("vpd_pg80_{name}.bin")))
                .unwrap_or_default();
            let decoded = if raw.len() >= 4 && raw[1] == 0x80 {
                let len = raw[3] as usize;
                String::from_utf8_lossy(&raw[4..(4 + len).min(raw.len())])
                    .trim()
                    .to_string()
            } else {
                String::new()
            };
            c.check(
                &format!("{name} VPD 0x80 decodes to its serial"),
                decoded == d["serial"],
                || format!("raw {raw:02x?} -> {decoded:?} vs {}", d["serial"]),
            );
        }
    }
    let sd = disks.iter().find(|d| d["model"] == "scsi_debug");
    c.check(
        "scsi_debug disk present with its size",
        sd.is_some_and(|d| d["size_512"].as_u64() == Some(SD_MB * MIB / 512)),
        || format!("disks: {disks:?}"),
    );

    // Medium error: before succeeds, across fails with ENODATA, and the
    // kernel log names the first bad sector on that disk.
    match run.json("medium_error.json") {
        Err(e) => c.check("medium_error.json", false, || e.to_string()),
        Ok(me) => {
            let dev = me["device"].as_str().unwrap_or("?").to_string();
            c.check(
                "read before the medium error succeeds",
                me["before_status"] == 0,
                || format!("{me}"),
            );
            c.check(
                "read across the medium error fails",
                me["across_status"].as_i64().is_some_and(|s| s != 0),
                || format!("{me}"),
            );
            c.check(
                "dd reports no data available",
                me["across_stderr"]
                    .as_str()
                    .is_some_and(|s| s.contains("No data available")),
                || format!("{me}"),
            );
            c.check(
                "read of the first bad sector fails",
                me["at_status"].as_i64().is_some_and(|s| s != 0),
                || format!("{me}"),
            );
            // The block layer names the failed request's first sector: the
            // straddling read starts 8 sectors early, the single-sector read
            // at the configured start.
            let dmesg = run.file("dmesg.txt").unwrap_or_default();
            for (what, sector) in [
                ("straddling read", MEDIUM_ERROR_START - 8),
                ("read at the bad sector", MEDIUM_ERROR_START),
            ] {
                let want = format!("critical medium error, dev {dev}, sector {sector} ");
                c.check(
                    &format!("kernel log names sector {sector} ({what})"),
                    dmesg.contains(&want),
                    || {
                        let related: Vec<&str> =
                            dmesg.lines().filter(|l| l.contains(&dev)).collect();
                        format!("no '{want}'; lines naming {dev}:\n{}", related.join("\n"))
                    },
                );
            }
        }
    }

    match run.json("blkdebug.json") {
        Err(e) => c.check("blkdebug.json", false, || e.to_string()),
        Ok(b) => {
            c.check(
                "blkdebug: read before the bad sector works",
                b["before_status"] == 0,
                || format!("{b}"),
            );
            c.check(
                "blkdebug: read of the bad sector fails with EIO",
                b["at_status"].as_i64().is_some_and(|s| s != 0)
                    && b["at_stderr"]
                        .as_str()
                        .is_some_and(|s| s.contains("Input/output error")),
                || format!("{b}"),
            );
            let dev = b["device"].as_str().unwrap_or("?");
            let want = format!("I/O error, dev {dev}, sector {BLKDEBUG_BAD_SECTOR} ");
            let dmesg = run.file("dmesg.txt").unwrap_or_default();
            c.check(
                "kernel log names the blkdebug sector",
                dmesg.contains(&want),
                || format!("no '{want}' in dmesg"),
            );
        }
    }

    // drivelab: its JSON output must parse in every case (errors included).
    // Where `devices` works, it must list all four emulated disks.
    let out = run.file("drivelab_devices.out").unwrap_or_default();
    let status = run.file("drivelab_devices.status").unwrap_or_default();
    match serde_json::from_str::<Value>(&out) {
        Err(e) => c.check("drivelab devices JSON parses", false, || {
            format!("{e}: {out:?}")
        }),
        Ok(v) => {
            c.check("drivelab devices JSON parses", true, String::new);
            if status.trim() == "0" {
                // Every disk the guest sees, by its kernel name, and the
                // emulated ones by the serial given to QEMU.
                for d in &disks {
                    let name = d["name"].as_str().unwrap_or("?");
                    let named = out.contains(&format!("\"{name}\""))
                        || out.contains(&format!("/dev/{name}\""));
                    c.check(&format!("drivelab devices lists {name}"), named, || {
                        out.clone()
                    });
                }
                for serial in [SCSI, NVME, SATA, BLKDEBUG] {
                    c.check(
                        &format!("drivelab devices shows serial {serial}"),
                        out.contains(serial),
                        || out.clone(),
                    );
                }
            } else {
                println!("drivelab devices (status {}): {v}", status.trim());
            }
        }
    }
    for d in &disks {
        let name = d["name"].as_str().unwrap_or("?");
        let out = run
            .file(&format!("drivelab_probe_{name}.out"))
            .unwrap_or_default();
        let parsed = serde_json::from_str::<Value>(&out);
        c.check(
            &format!("drivelab device /dev/{name} probe JSON parses"),
            parsed.is_ok(),
            || format!("{out:?}"),
        );
        let status = run
            .file(&format!("drivelab_probe_{name}.status"))
            .unwrap_or_default();
        if status.trim() == "0" {
            // Where `device probe` works, it must find the serial QEMU gave.
            if let Some(serial) = d["serial"].as_str().filter(|s| s.starts_with("DL")) {
                c.check(
                    &format!("drivelab device /dev/{name} probe shows {serial}"),
                    out.contains(serial),
                    || out.clone(),
                );
            }
        } else {
            // Recorded, not asserted: `drivelab device` is not in this build
            // yet (issue 4); tests/device_commands.rs holds its assertions.
            println!(
                "NOT AVAILABLE YET: drivelab device /dev/{name} probe exited {}: {}",
                status.trim(),
                out.trim()
            );
        }
    }
    c.finish(&ctx);
}
