//! Claims against real loop devices this test attaches (and detaches on
//! drop): a device another process holds `O_EXCL`, two loop devices over
//! one file (one mounted), two claims of one device, and a free device.
//! Every refusal also checks that no byte of the target changed.

mod sys_common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use drivelab_device::blockdev::BlockDevice;
use drivelab_device::claim::{Claim, ClaimError, ClaimOptions, Consent, Hold, TargetKind};
use drivelab_device::safety::{self, Finding, HELD_EXCLUSIVELY};
use drivelab_testkit::digest;
use sys_common::*;

const MIB: u64 = 1 << 20;

fn consent(force: bool) -> Consent {
    Consent {
        force,
        confirm: None,
    }
}

/// A python3 process holding a device `O_RDONLY|O_EXCL`; killed on drop.
struct Holder(Child);

impl Holder {
    fn hold(dev: &Path) -> Holder {
        let script = format!(
            "import os,time\nfd=os.open({:?},os.O_RDONLY|os.O_EXCL)\nprint('held',flush=True)\ntime.sleep(60)",
            dev.to_str().unwrap()
        );
        let mut child = Command::new("python3")
            .args(["-c", &script])
            .stdout(Stdio::piped())
            .spawn()
            .expect("cannot run python3");
        let out = child.stdout.take().expect("piped stdout");
        // The guard first, so a failed check below still kills the child.
        let h = Holder(child);
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "held", "python3 did not take the device");
        h
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn refusal_of(e: &ClaimError) -> &[Finding] {
    match e {
        ClaimError::Refused(r) => &r.reasons,
        ClaimError::Busy { reasons, .. } => reasons,
        other => panic!("expected a refusal, got: {other}"),
    }
}

#[test]
fn a_device_held_exclusively_by_another_process_is_refused_even_with_force() {
    require_root();
    let dir = TempDir::new("cl-held");
    let img = dir.join("disk.img");
    make_image(&img, 8 * MIB, &[(4096, b"keep these bytes")]);
    let lo = LoopDev::attach(&img, &[]);
    let before = digest(&lo.path);
    let holder = Holder::hold(&lo.path);
    let pid = format!("(pid {})", holder.pid());

    for force in [false, true] {
        let e = Claim::open(&lo.path, &consent(force), &ClaimOptions::default()).unwrap_err();
        let line = e.to_string();
        assert!(
            refusal_of(&e)
                .iter()
                .any(|f| matches!(f, Finding::HeldExclusively { processes } if processes.iter().any(|p| p.contains(&pid)))),
            "{line}"
        );
        assert!(line.contains(&lo.path.display().to_string()), "{line}");
        assert!(line.contains(HELD_EXCLUSIVELY), "{line}");
        assert!(line.contains(&pid), "{line}");
        assert!(line.contains("--force cannot override"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }
    assert_eq!(
        digest(&lo.path),
        before,
        "a refused claim changed the device"
    );

    // The listing helper names the holder, and the state says in use.
    let d = BlockDevice::from_path(&lo.path).unwrap();
    let who = safety::exclusive_holder(&d).expect("held");
    assert!(
        who.iter().any(|p| p.contains(&pid) && p.contains("python")),
        "{who:?}"
    );
    let state = safety::assess(&d).state();
    assert!(
        state.starts_with("in use: held exclusively by python") && state.contains(&pid),
        "{state}"
    );

    drop(holder);
    assert_eq!(safety::exclusive_holder(&d), None);
    let c = Claim::open(&lo.path, &consent(false), &ClaimOptions::default()).unwrap();
    assert!(c.assessment().findings.is_empty(), "{:?}", c.assessment());
    drop(c);
    assert_eq!(digest(&lo.path), before);
}

#[test]
fn a_loop_over_the_bytes_of_a_mounted_loop_is_refused_naming_it() {
    require_root();
    let dir = TempDir::new("cl-alias");
    let img = dir.join("alias.img");
    make_image(&img, 64 * MIB, &[]);
    let img_canon = img.canonicalize().unwrap();
    // ext4 at 1 MiB into the file, mounted.
    let lo6 = LoopDev::attach(&img, &["-o", "1048576"]);
    mkfs_ext4(lo6.dev());
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mount = mount(&lo6.path, &mnt);
    sh("sync", &[]);
    // The same file again from byte 0 (overlaps from 1 MiB on), and its
    // first MiB only (ends where the mounted one starts: no overlap).
    let lo7 = LoopDev::attach(&img, &[]);
    let head = LoopDev::attach(&img, &["--sizelimit", "1048576"]);
    let before = digest(&img);

    let want = format!(
        "it shares bytes 1048576.. of {} with {}, which is mounted at {}",
        img_canon.display(),
        lo6.path.display(),
        mnt.display()
    );
    for force in [false, true] {
        let e = Claim::open(&lo7.path, &consent(force), &ClaimOptions::default()).unwrap_err();
        let line = e.to_string();
        assert!(matches!(e, ClaimError::Refused(_)), "{line}");
        assert!(
            refusal_of(&e).iter().any(|f| matches!(
                f,
                Finding::SharesBytes { device, start: 1048576, end: None, exclusive: true, cause, .. }
                    if *device == lo6.name
                        && matches!(&**cause, Finding::Mounted { mount_point, .. } if *mount_point == mnt)
            )),
            "{line}"
        );
        assert!(line.contains(&want), "{line}");
        assert!(
            line.contains(&format!("unmount {} first", lo6.path.display())),
            "{line}"
        );
        assert!(line.contains("--force cannot override"), "{line}");

        // The image file itself: the same refusal.
        let e = Claim::open(&img, &consent(force), &ClaimOptions::default()).unwrap_err();
        let line = e.to_string();
        assert!(
            line.starts_with(&format!("refusing to write to {}", img.display())),
            "{line}"
        );
        assert!(line.contains(&want), "{line}");
    }
    // A loop stacked on the mounted device shows its bytes too (from the
    // mounted device's offset on).
    let stacked = LoopDev::attach(&lo6.path, &[]);
    let e = Claim::open(&stacked.path, &consent(true), &ClaimOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "shares bytes 1048576.. of {} with {}, which is mounted at",
            img_canon.display(),
            lo6.path.display()
        )),
        "{e}"
    );
    drop(stacked);
    // A listing shows the alias as in use, by the mounted device.
    let state = safety::assess(&BlockDevice::from_path(&lo7.path).unwrap()).state();
    assert!(
        state.starts_with("in use: shares bytes with") && state.contains(&lo6.name),
        "{state}"
    );
    // The first MiB does not overlap: free to claim.
    let c = Claim::open(&head.path, &consent(false), &ClaimOptions::default()).unwrap();
    assert!(c.assessment().findings.is_empty(), "{:?}", c.assessment());
    drop(c);
    // The mounted device itself: refused as mounted whatever --force says
    // (the mount holds it, so the exclusive open would fail too), and
    // --force is never offered.
    for force in [false, true] {
        let e = Claim::open(&lo6.path, &consent(force), &ClaimOptions::default()).unwrap_err();
        let line = e.to_string();
        assert!(matches!(e, ClaimError::Refused(_)), "{line}");
        assert!(
            line.contains(&format!("is mounted at {}", mnt.display())),
            "{line}"
        );
        assert!(line.contains("--force cannot override"), "{line}");
        assert!(
            !line.contains("pass --force") && !line.contains("wipefs"),
            "{line}"
        );
    }
    assert_eq!(digest(&img), before, "a refused claim changed the image");

    // Unmounted (which writes the superblock), nothing holds those bytes.
    drop(mount);
    let before = digest(&img);
    let c = Claim::open(&lo7.path, &consent(false), &ClaimOptions::default()).unwrap();
    drop(c);
    let c = Claim::open(&img, &consent(false), &ClaimOptions::default()).unwrap();
    assert_eq!(c.assessment().kind, TargetKind::File);
    drop(c);
    assert_eq!(digest(&img), before);
    sh("e2fsck", &["-n", "-f", lo6.dev()]);
}

#[test]
fn a_second_claim_fails_while_the_first_lives() {
    require_root();
    let dir = TempDir::new("cl-twice");
    let lo = LoopDev::new_in(&dir, 8 * MIB);
    let first = Claim::open(&lo.path, &consent(false), &ClaimOptions::default()).unwrap();
    // In this process: the same device given twice, by any name.
    let link = dir.join("link");
    std::os::unix::fs::symlink(&lo.path, &link).unwrap();
    for (again, force) in [(&lo.path, false), (&link, false), (&link, true)] {
        let e = Claim::open(again, &consent(force), &ClaimOptions::default()).unwrap_err();
        let line = e.to_string();
        assert!(matches!(e, ClaimError::Duplicate { .. }), "{line}");
        assert!(
            line.contains(&format!("is the same device as {}, given twice", lo.dev())),
            "{line}"
        );
    }
    // Another process cannot take it either.
    let out = Command::new("python3")
        .args([
            "-c",
            &format!("import os\nos.open({:?},os.O_RDONLY|os.O_EXCL)", lo.dev()),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Device or resource busy"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(first);
    Claim::open(&lo.path, &consent(false), &ClaimOptions::default()).unwrap();
}

#[test]
fn a_free_loop_device_is_claimed_and_the_record_serialises() {
    require_root();
    let dir = TempDir::new("cl-free");
    let img = dir.join("disk.img");
    make_image(&img, 8 * MIB, &[]);
    let lo = LoopDev::attach(&img, &["-b", "4096"]);
    let opts = ClaimOptions {
        direct: true,
        create_size: None,
    };
    let c = Claim::open(&lo.path, &consent(false), &opts).unwrap();
    assert!(c.is_block());
    assert_eq!(c.path(), lo.path);
    assert_eq!(c.size(), 8 * MIB);
    assert_eq!(c.logical_block(), 4096);
    assert_eq!(c.device().unwrap().name, lo.name);
    assert!(
        safety::held_exclusively(&lo.path),
        "the claim must hold the device"
    );

    // I/O through a buffered descriptor reaches the claimed device.
    let f = c.io_file(false).unwrap();
    f.write_all_at(b"drivelab claim", 8192).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let mut buf = [0u8; 14];
    std::fs::File::open(&img)
        .unwrap()
        .read_exact_at(&mut buf, 8192)
        .unwrap();
    assert_eq!(&buf, b"drivelab claim");

    let v = serde_json::to_value(c.assessment()).unwrap();
    assert_eq!(v["path"], lo.dev());
    assert_eq!(v["canonical"], lo.dev());
    assert_eq!(v["kind"], "block");
    assert_eq!(v["device"], lo.name.as_str());
    assert_eq!(v["size"], 8 * MIB);
    assert_eq!(v["logical_block"], 4096);
    assert_eq!(v["findings"], serde_json::json!([]));
    assert_eq!(v["overridden"], serde_json::json!([]));
    assert_eq!(v["consent"], serde_json::json!({"force": false}));
    assert_eq!(v["hold"], "exclusive_open");
    assert_eq!(v["direct"], true);
    assert_eq!(c.assessment().hold, Hold::ExclusiveOpen);
    drop(c);
    assert!(
        !safety::held_exclusively(&lo.path),
        "dropping the claim lets go"
    );
}

#[test]
fn force_and_confirmation_are_recorded() {
    require_root();
    let dir = TempDir::new("cl-force");
    let img = dir.join("disk.img");
    // ext4 magic with the extents feature.
    make_image(&img, 8 * MIB, &[(1080, &[0x53, 0xEF]), (1120, &[0x40])]);
    let lo = LoopDev::attach(&img, &[]);
    let before = digest(&img);
    let e = Claim::open(&lo.path, &consent(false), &ClaimOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("ext4 filesystem signature at byte 1080"),
        "{e}"
    );
    // A loop device has no serial: its path confirms it.
    let wrong = Consent {
        force: true,
        confirm: Some(vec!["SOMETHING-ELSE".into()]),
    };
    let e = Claim::open(&lo.path, &wrong, &ClaimOptions::default()).unwrap_err();
    assert!(matches!(e, ClaimError::NotConfirmed { .. }), "{e}");
    assert!(
        e.to_string()
            .contains(&format!("--confirm-serial {}", lo.dev())),
        "{e}"
    );
    assert_eq!(digest(&img), before);

    let ok = Consent {
        force: true,
        confirm: Some(vec![lo.dev().to_string()]),
    };
    let c = Claim::open(&lo.path, &ok, &ClaimOptions::default()).unwrap();
    let r = c.assessment();
    assert!(
        matches!(r.overridden.as_slice(), [Finding::Signature { name, offset: 1080, .. }] if name == "ext4"),
        "{r:?}"
    );
    assert_eq!(r.findings, r.overridden);
    assert!(r.consent.force);
    assert_eq!(r.consent.confirmed_by.as_deref(), Some(lo.dev()));
    drop(c);
    assert_eq!(digest(&img), before);
}

#[test]
fn a_regular_file_backing_a_held_loop_is_refused() {
    require_root();
    let dir = TempDir::new("cl-backs");
    let lo = LoopDev::new_in(&dir, 8 * MIB);
    let holder = Holder::hold(&lo.path);
    let before = digest(&lo.backing);
    let e = Claim::open(&lo.backing, &consent(true), &ClaimOptions::default()).unwrap_err();
    let line = e.to_string();
    assert!(
        refusal_of(&e).iter().any(|f| matches!(
            f,
            Finding::SharesBytes { device, start: 0, exclusive: true, cause, .. }
                if *device == lo.name && matches!(&**cause, Finding::HeldExclusively { .. })
        )),
        "{line}"
    );
    assert!(line.contains(&format!("(pid {})", holder.pid())), "{line}");
    assert_eq!(digest(&lo.backing), before);
    drop(holder);
    let path: PathBuf = lo.backing.clone();
    Claim::open(&path, &consent(false), &ClaimOptions::default()).unwrap();
}

/// Data changed behind the page cache (here: in the loop device's backing
/// file, as a passthrough command changes the medium) is seen by a buffered
/// reader only after the claim drops the cached pages.
#[test]
fn drop_cached_makes_a_buffered_reader_see_the_medium() {
    require_root();
    let dir = TempDir::new("cl-dropcache");
    let lo = LoopDev::new_in(&dir, 8 * MIB);
    std::fs::write(&lo.backing, vec![0x11u8; 8 * MIB as usize]).unwrap();
    let claim = Claim::open(&lo.path, &consent(false), &ClaimOptions::default()).unwrap();
    let reader = std::fs::File::open(&lo.path).unwrap();
    let mut b = [0u8; 4096];
    claim.drop_cached().unwrap();
    reader.read_exact_at(&mut b, 0).unwrap();
    assert_eq!(b[0], 0x11);
    // Behind the loop device's page cache.
    let backing = std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.backing)
        .unwrap();
    backing.write_all_at(&[0x22u8; 4096], 0).unwrap();
    backing.sync_all().unwrap();
    reader.read_exact_at(&mut b, 0).unwrap();
    assert_eq!(
        b[0], 0x11,
        "the first read was not cached; the test shows nothing"
    );
    claim.drop_cached().unwrap();
    reader.read_exact_at(&mut b, 0).unwrap();
    assert_eq!(
        b[0], 0x22,
        "a buffered read after drop_cached still saw the old data"
    );
}

#[test]
fn a_size_zero_device_that_is_not_a_scsi_disk_is_refused_even_for_a_reformat() {
    // Only a SCSI disk may show size 0 to a reformat (its block length is
    // one the kernel's sd does not take); an empty loop device is refused
    // by either claim.
    require_root();
    let dir = TempDir::new("cl-empty");
    let img = dir.join("empty.img");
    std::fs::File::create(&img).unwrap();
    let lo = LoopDev::attach(&img, &[]);
    for e in [
        Claim::open(&lo.path, &consent(true), &ClaimOptions::default()).unwrap_err(),
        Claim::open_scsi_any_size(&lo.path, &consent(true)).unwrap_err(),
    ] {
        assert!(matches!(e, ClaimError::Empty { .. }), "{e}");
    }
    assert!(!safety::held_exclusively(&lo.path));
}
