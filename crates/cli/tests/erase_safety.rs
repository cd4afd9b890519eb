//! Refusals of `drivelab erase` write nothing: a device holding a
//! filesystem, a mounted one, a partitioned one, a missing --yes or
//! --confirm-serial, a method the drive lacks, and --dry-run all leave the
//! device's bytes (digest of the backing file) and its write counter
//! (/proc/diskstats) unchanged.

mod erase_common;

use std::process::Command;

use drivelab_testkit::{digest, diskstats, make_image, require_root, sh, LoopDev, TempDir};
use erase_common::*;

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Assert a refusal: exit 2, the message contains `needle`, nothing written.
fn refused(dir: &TempDir, d: &LoopDev, args: &[&str], needle: &str) {
    let before = digest(&d.backing);
    let writes = diskstats(&d.name).2;
    let (code, out, err) = erase(dir, args);
    assert_eq!(code, 2, "args {args:?}: stdout {out} stderr {err}");
    assert!(
        err.contains(needle),
        "args {args:?}: expected {needle:?} in {err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one-line error: {err}");
    assert_eq!(digest(&d.backing), before, "bytes changed by {args:?}");
    assert_eq!(diskstats(&d.name).2, writes, "writes issued by {args:?}");
}

#[test]
fn confirmation_is_required_and_checked() {
    require_root();
    let dir = TempDir::new("erase-confirm");
    let d = LoopDev::new_in(&dir, 8 << 20);
    fill_file(&d.backing, 0x77);
    let dev = d.dev();
    refused(&dir, &d, &[dev], "--yes");
    refused(&dir, &d, &[dev, "--confirm-serial", dev], "--yes");
    refused(&dir, &d, &[dev, "--yes"], "--confirm-serial");
    refused(
        &dir,
        &d,
        &[dev, "--yes", "--confirm-serial", "/dev/loop999"],
        "--confirm-serial",
    );
    refused(
        &dir,
        &d,
        &[
            dev,
            "--yes",
            "--confirm-serial",
            dev,
            "--confirm-serial",
            "TYPO",
        ],
        "matches none",
    );
    refused(
        &dir,
        &d,
        &[
            dev,
            "--yes",
            "--confirm-serial",
            dev,
            "--method",
            "write-same",
        ],
        "not available",
    );
    refused(
        &dir,
        &d,
        &[
            dev,
            "--yes",
            "--confirm-serial",
            dev,
            "--method",
            "nvme-format",
        ],
        "not available",
    );
    refused(
        &dir,
        &d,
        &[dev, "--yes", "--confirm-serial", dev, "--method", "wipe"],
        "unknown method",
    );
    refused(
        &dir,
        &d,
        &[
            dev,
            "--yes",
            "--confirm-serial",
            dev,
            "--method",
            "zeroout",
            "--pattern",
            "fixed:0xA5",
        ],
        "zeroes only",
    );
    refused(&dir, &d, &[], "no drives");
}

#[test]
fn dry_run_touches_nothing() {
    require_root();
    let dir = TempDir::new("erase-dry");
    let d = LoopDev::new_in(&dir, 8 << 20);
    fill_file(&d.backing, 0x42);
    let before = digest(&d.backing);
    let writes = diskstats(&d.name).2;
    let certs = dir.join("certs");
    for extra in [&[][..], &["--yes", "--confirm-serial", d.dev()][..]] {
        let mut a = vec![
            d.dev(),
            "--dry-run",
            "--method",
            "stream",
            "--certificate-dir",
            certs.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        let (code, out, err) = erase(&dir, &a);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("dry run") && out.contains("method stream"),
            "{out}"
        );
        assert!(out.contains("estimated complete time"), "{out}");
    }
    assert_eq!(digest(&d.backing), before);
    assert_eq!(diskstats(&d.name).2, writes);
    assert!(!certs.exists(), "dry run created {}", certs.display());
}

#[test]
fn filesystem_mount_and_partition_table_are_refused() {
    require_root();
    let dir = TempDir::new("erase-refuse");
    // A filesystem.
    let fs = LoopDev::new_in(&dir, 32 << 20);
    sh("mkfs.ext4", &["-q", "-F", fs.dev()]);
    let dev = fs.dev();
    refused(&dir, &fs, &[dev, "--yes", "--confirm-serial", dev], "ext4");
    // Mounted: refused (and the message says so) even with the signature
    // overridden... by --force it becomes writable, so check without.
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    sh("mount", &[dev, mnt.to_str().unwrap()]);
    let guard = Mount(mnt.clone());
    refused(
        &dir,
        &fs,
        &[dev, "--yes", "--confirm-serial", dev],
        "mounted",
    );
    drop(guard);
    // A partition table (MBR: one Linux partition from LBA 2048).
    let img = dir.join("mbr.img");
    let mut entry = [0u8; 16];
    entry[4] = 0x83;
    entry[8..12].copy_from_slice(&2048u32.to_le_bytes());
    entry[12..16].copy_from_slice(&8192u32.to_le_bytes());
    make_image(&img, 16 << 20, &[(446, &entry), (510, &[0x55, 0xAA])]);
    let pt = LoopDev::attach(&img, &[]);
    let pdev = pt.dev();
    refused(
        &dir,
        &pt,
        &[pdev, "--yes", "--confirm-serial", pdev],
        "partition",
    );
    // --force overrides a signature (not mounted any more): now it erases.
    let certs = dir.join("certs");
    let (code, out, err) = erase(
        &dir,
        &[
            dev,
            "--force",
            "--yes",
            "--confirm-serial",
            dev,
            "--certificate-dir",
            certs.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(first_not(&drivelab_testkit::read_all(&fs.backing), 0), None);
}
