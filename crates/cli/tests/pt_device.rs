//! `drivelab device` run as the real binary against a loop device this test
//! attaches (and detaches on drop): a loop device answers no passthrough, so
//! the probe reports transport `other` with sysfs facts, SCSI commands fail
//! with a one-line "not a SCSI device" error (exit 1), and writing ops are
//! refused without --yes (exit 2) before anything is sent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn require_root() {
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    assert_eq!(
        uid, 0,
        "this test needs root (loop devices); run it as root"
    );
}

/// A file in a fresh temp dir attached as a loop device; detached (by its
/// own name) and removed on drop.
struct LoopDisk {
    dev: PathBuf,
    dir: PathBuf,
}

impl LoopDisk {
    fn new(tag: &str, bytes: u64) -> LoopDisk {
        require_root();
        let dir = std::env::temp_dir().join(format!("drivelab-ptcli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("disk.img");
        std::fs::File::create(&file)
            .unwrap()
            .set_len(bytes)
            .unwrap();
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        LoopDisk { dev, dir }
    }
    fn image(&self) -> PathBuf {
        self.dir.join("disk.img")
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(dev: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("device")
        .arg(dev)
        .args(args)
        .output()
        .unwrap()
}

fn stderr_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn write_ops_without_yes_exit_2_and_write_nothing() {
    let d = LoopDisk::new("noyes", 4 << 20);
    // Put a marker in the image so a write would be visible.
    std::fs::write(d.image(), vec![0x5Au8; 4 << 20]).unwrap();
    for args in [
        &["write-same", "--lba", "0", "--count", "8"][..],
        &[
            "write-same",
            "--lba",
            "0",
            "--count",
            "8",
            "--pattern-byte",
            "0xff",
            "--cdb",
            "10",
        ][..],
        &["unmap", "--lba", "0", "--count", "8"][..],
        &[
            "sct-write-same",
            "--lba",
            "0",
            "--count",
            "8",
            "--pattern",
            "0x0",
        ][..],
        &["ata-sanitize", "--action", "crypto"][..],
        &["format-unit", "--block-size", "512"][..],
        &["nvme-write-zeroes", "--lba", "0", "--count", "8"][..],
        &["nvme-dsm", "--lba", "0", "--count", "8"][..],
        &["nvme-format", "--ses", "1"][..],
        &["nvme-sanitize", "--action", "block"][..],
    ] {
        let o = run(&d.dev, args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let lines = stderr_lines(&o);
        assert_eq!(lines.len(), 1, "{args:?}: one line expected, got {lines:?}");
        assert!(lines[0].contains("--yes"), "{}", lines[0]);
    }
    // JSON: the error is a JSON document with the exit status.
    let o = run(
        &d.dev,
        &[
            "write-same",
            "--lba",
            "0",
            "--count",
            "8",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["exit_status"], 2);
    assert!(v["error"].as_str().unwrap().contains("--yes"));
    let data = std::fs::read(d.image()).unwrap();
    assert!(data.iter().all(|&b| b == 0x5A), "the image changed");
}

#[test]
fn probe_json_reports_transport_other_with_sysfs_facts() {
    let d = LoopDisk::new("probe", 4 << 20);
    let o = run(&d.dev, &["probe", "--output-format", "json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &v["capabilities"];
    assert_eq!(c["transport"], "other");
    assert_eq!(c["sysfs"]["size_bytes"], 4 << 20);
    assert_eq!(c["capacity_blocks"], (4 << 20) / 512);
    let name = d.dev.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(c["sysfs"]["disk"], name.as_str());
    // The flags follow the kernel's own numbers, read here independently.
    let q = format!("/sys/block/{name}/queue");
    let wz: u64 = std::fs::read_to_string(format!("{q}/write_zeroes_max_bytes"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let dm: u64 = std::fs::read_to_string(format!("{q}/discard_max_bytes"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(c["blk_zeroout_offload"], wz > 0);
    assert_eq!(c["discard"], dm > 0);
    assert_eq!(c["scsi_write_same_16"], false);
    assert_eq!(c["nvme_write_zeroes"], false);
    // Human output is a table with the transport on the first line.
    let o = run(&d.dev, &["probe"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.lines().next().unwrap().ends_with("other"), "{text}");
}

#[test]
fn scsi_and_nvme_ops_on_loop_fail_with_one_line_not_supported() {
    let d = LoopDisk::new("refuse", 4 << 20);
    for (args, want) in [
        (&["inquiry"][..], "is not a SCSI device"),
        (&["inquiry", "--page", "0xb0"][..], "is not a SCSI device"),
        (&["read-capacity"][..], "is not a SCSI device"),
        (
            &["read", "--lba", "0", "--count", "1"][..],
            "is not a SCSI device",
        ),
        (&["identify"][..], "is not a SCSI device"),
        (&["sct-status"][..], "is not a SCSI device"),
        (
            &["write-same", "--lba", "0", "--count", "8", "--yes"][..],
            "is not a SCSI device",
        ),
        (
            &["format-unit", "--block-size", "512", "--yes"][..],
            "is not a SCSI device",
        ),
        (
            &["nvme-write-zeroes", "--lba", "0", "--count", "8", "--yes"][..],
            "is not an NVMe device",
        ),
        (
            &["nvme-sanitize", "--action", "status"][..],
            "is not an NVMe device",
        ),
    ] {
        let o = run(&d.dev, args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let lines = stderr_lines(&o);
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert!(lines[0].starts_with("drivelab: error: "), "{}", lines[0]);
        assert!(lines[0].contains(want), "{args:?}: {}", lines[0]);
        // The device is named exactly once.
        assert_eq!(
            lines[0].matches(d.dev.to_str().unwrap()).count(),
            1,
            "{}",
            lines[0]
        );
    }
    let o = run(&d.dev, &["inquiry", "--output-format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["exit_status"], 1);
    assert_eq!(v["not_supported"], true);
    assert_eq!(v["op"], "inquiry");
    assert!(v["error"].as_str().unwrap().contains("not a SCSI device"));
}

#[test]
fn impossible_requests_exit_2_before_the_device_is_touched() {
    let d = LoopDisk::new("badargs", 1 << 20);
    for (args, want) in [
        (
            &["write-same", "--lba", "0", "--count", "0", "--yes"][..],
            "--count must be at least 1",
        ),
        (
            &["unmap", "--lba", "0", "--count", "0", "--yes"][..],
            "--count must be at least 1",
        ),
        (
            &["format-unit", "--block-size", "513", "--yes"][..],
            "--block-size 513: give one of 512, 520",
        ),
        (
            &["read", "--lba", "0", "--count", "0"][..],
            "--count must be at least 1",
        ),
        (
            &[
                "write-same",
                "--lba",
                "0",
                "--count",
                "8",
                "--cdb",
                "10",
                "--ndob",
                "--yes",
            ][..],
            "--ndob needs --cdb 16",
        ),
        (
            &[
                "write-same",
                "--lba",
                "0",
                "--count",
                "65536",
                "--cdb",
                "10",
                "--yes",
            ][..],
            "use --cdb 16",
        ),
        (
            &[
                "write-same",
                "--lba",
                "0x100000000",
                "--count",
                "1",
                "--cdb",
                "10",
                "--yes",
            ][..],
            "use --cdb 16",
        ),
        (
            &["read", "--lba", "0xffffffffffffffff", "--count", "2"][..],
            "overflows",
        ),
        (
            &["read", "--lba", "ten", "--count", "2"][..],
            "not a number",
        ),
    ] {
        let o = run(&d.dev, args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let lines = stderr_lines(&o);
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert!(lines[0].contains(want), "{args:?}: {}", lines[0]);
    }
}
