//! Refusals of `drivelab erase` write nothing: a device holding a
//! filesystem, a mounted one, a partitioned one, a missing --yes or
//! --confirm-serial, a method the drive lacks, and --dry-run all leave the
//! device's bytes (digest of the backing file) and its write counter
//! (/proc/diskstats) unchanged.

mod erase_common;

use std::process::Command;

use drivelab_testkit::{
    digest, diskstats, make_image, require_root, sh, LoopDev, Mounted, TempDir,
};
use erase_common::*;

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
    // Read-only: a read-write ext4 mount starts the kernel's lazy inode
    // table zeroing, whose writes land in the write counter on their own (2
    // of them did, once in CI). A read-only mount is as mounted.
    let guard = Mounted::mount_in(dev, &dir, "mnt", Some("ro"));
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

/// The first line and the pass-0 watermark of the journal in `dir`, if any.
fn journal_state(dir: &std::path::Path) -> Option<(String, u64)> {
    let p = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "journal"))?;
    let text = std::fs::read_to_string(p).ok()?;
    let first = text.lines().next().unwrap_or("").to_string();
    let w = text
        .lines()
        .filter_map(|l| l.strip_prefix("D 0 "))
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    Some((first, w))
}

#[test]
fn a_device_held_open_exclusively_is_refused() {
    use std::os::unix::fs::OpenOptionsExt;
    require_root();
    let dir = TempDir::new("erase-held");
    let d = LoopDev::new_in(&dir, 8 << 20);
    fill_file(&d.backing, 0x66);
    // Another process's O_EXCL open (a mount, md, or another tool).
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&d.path)
        .unwrap();
    let certs = dir.join("certs");
    let dev = d.dev();
    refused(
        &dir,
        &d,
        &[
            dev,
            "--yes",
            "--confirm-serial",
            dev,
            "--certificate-dir",
            certs.to_str().unwrap(),
        ],
        "held exclusively by another process",
    );
    // --force does not override it: the kernel would refuse the writes.
    refused(
        &dir,
        &d,
        &[
            dev,
            "--force",
            "--yes",
            "--confirm-serial",
            dev,
            "--certificate-dir",
            certs.to_str().unwrap(),
        ],
        "held exclusively by another process",
    );
    assert!(
        !certs.exists(),
        "a refused erase created {}",
        certs.display()
    );
    drop(holder);
    let (code, out, err) = erase(
        &dir,
        &[
            dev,
            "--yes",
            "--confirm-serial",
            dev,
            "--certificate-dir",
            certs.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_second_erase_of_a_device_being_erased_is_refused_and_leaves_no_journal() {
    require_root();
    let dir = TempDir::new("erase-twice");
    let size: u64 = 64 << 20;
    let d = LoopDev::new_in(&dir, size);
    fill_file(&d.backing, 0x55);
    let dev = d.dev();
    let certs = dir.join("certs");
    let certs_s = certs.to_str().unwrap().to_string();
    // The first erase, slowed down (64 MiB at 16 MiB/s) so the second one
    // meets it part-way.
    let first = Command::new(BIN)
        .arg("erase")
        .args([
            dev,
            "--method",
            "stream",
            "--bus-limit",
            "16m",
            "--verify",
            "full",
            "--yes",
            "--confirm-serial",
            dev,
            "--certificate-dir",
            &certs_s,
            "--output-format",
            "json",
        ])
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while journal_state(&certs).is_none_or(|(_, w)| w == 0) {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "the first erase never started writing"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A second erase with its own certificate dir, and one sharing the
    // first's (where it would find, and replace, the first's journal).
    let other = dir.join("other-certs");
    for cdir in [other.to_str().unwrap(), certs_s.as_str()] {
        let (before, w0) = journal_state(&certs).unwrap();
        let (code, out, err) = erase(
            &dir,
            &[
                dev,
                "--method",
                "stream",
                "--yes",
                "--confirm-serial",
                dev,
                "--certificate-dir",
                cdir,
            ],
        );
        assert_eq!(
            code, 2,
            "second erase into {cdir}: stdout {out} stderr {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "one-line refusal: {err}");
        assert!(
            err.contains("held exclusively by another process") && err.contains("drivelab (pid"),
            "{err}"
        );
        // The first erase's journal is untouched and still moving on.
        let (after, w1) = journal_state(&certs).expect("the first erase's journal is kept");
        assert_eq!(after, before);
        assert!(w1 >= w0, "watermark went back from {w0} to {w1}");
    }
    assert!(
        !other.exists(),
        "the refused erase created {}",
        other.display()
    );
    // The same in JSON: one error object, exit status 2.
    let (code, out, _) = erase(
        &dir,
        &[
            dev,
            "--yes",
            "--confirm-serial",
            dev,
            "--certificate-dir",
            other.to_str().unwrap(),
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 2, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["exit_status"], 2);
    assert!(v["error"].as_str().unwrap().contains("exclusively"));

    // The first erase ends as if alone: erased, verified, certified, and
    // its journal gone.
    let out = first.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["drives"][0]["result"], "erased");
    assert_eq!(v["drives"][0]["bytes"].as_u64(), Some(size));
    assert_eq!(first_not(&drivelab_testkit::read_all(&d.backing), 0), None);
    assert_eq!(certificates(&certs).len(), 1);
    assert!(journal_state(&certs).is_none(), "journal left behind");
    assert!(!other.exists());
}
