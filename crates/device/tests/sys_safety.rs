//! Safety checks against real loop devices (and, read-only, the root disk).
//! Every refusal test also checks that the check changed no byte.

mod sys_common;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use drivelab_device::blockdev::BlockDevice;
use drivelab_device::safety::{assess, check_writable, Finding};
use sys_common::*;

const MIB: u64 = 1 << 20;

/// Attach an image made from `patches`, check it, and check no byte changed.
/// Returns the checks without and with force.
fn check_image(
    tag: &str,
    patches: &[(u64, &[u8])],
) -> (
    Result<(), drivelab_device::safety::Refusal>,
    Result<(), drivelab_device::safety::Refusal>,
    String,
) {
    let dir = TempDir::new(tag);
    let img = dir.path().join("disk.img");
    make_image(&img, 16 * MIB, patches);
    let lo = LoopDev::attach(&img, &[]);
    let before = read_all(&lo.path);
    let d = BlockDevice::from_path(&lo.path).unwrap();
    let r = check_writable(&d, false);
    let rf = check_writable(&d, true);
    assert_eq!(read_all(&lo.path), before, "the check changed the device");
    assert_eq!(read_all(&img), before, "the check changed the image");
    (r, rf, lo.path.display().to_string())
}

#[test]
fn blank_loop_is_free() {
    require_root();
    let (r, rf, _) = check_image("sf-blank", &[]);
    assert!(r.is_ok(), "{:?}", r);
    assert!(rf.is_ok());
}

#[test]
fn ext4_magic_is_refused_naming_ext4_and_force_overrides() {
    require_root();
    // s_magic 0xEF53 at 1080 and the extents feature (incompat 0x40 at 1120).
    let (r, rf, dev) = check_image("sf-ext4", &[(1080, &[0x53, 0xEF]), (1120, &[0x40])]);
    let e = r.unwrap_err();
    let line = e.to_string();
    assert!(line.contains(&dev), "{line}");
    assert!(line.contains("ext4") && line.contains("1080"), "{line}");
    assert!(line.contains("--force"), "{line}");
    assert!(!line.contains('\n'));
    assert!(rf.is_ok(), "force overrides a signature");
}

#[test]
fn real_mkfs_ext4_is_named_ext4() {
    require_root();
    let dir = TempDir::new("sf-mkfs");
    let img = dir.path().join("disk.img");
    make_image(&img, 16 * MIB, &[]);
    sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
    let lo = LoopDev::attach(&img, &[]);
    let before = read_all(&lo.path);
    let a = assess(&BlockDevice::from_path(&lo.path).unwrap());
    assert_eq!(read_all(&lo.path), before);
    assert!(
        a.findings
            .iter()
            .any(|f| matches!(f, Finding::Signature { name, offset: 1080, .. } if name == "ext4")),
        "{:?}",
        a.findings
    );
}

#[test]
fn mbr_with_one_entry_is_refused() {
    require_root();
    let table = mbr(&[(0x83, 2048, 4096)]);
    let (r, rf, _) = check_image("sf-mbr", &[(0, &table)]);
    let e = r.unwrap_err();
    assert!(
        e.reasons
            .iter()
            .any(|f| matches!(f, Finding::PartitionTable { scheme, .. } if scheme == "MBR")),
        "{e}"
    );
    assert!(e.to_string().contains("MBR partition table"), "{e}");
    assert!(rf.is_ok());
}

#[test]
fn gpt_header_is_refused() {
    require_root();
    let (r, _, _) = check_image("sf-gpt", &[(512, b"EFI PART")]);
    let e = r.unwrap_err();
    assert!(e.to_string().contains("GPT partition table"), "{e}");
}

#[test]
fn swap_signature_is_refused() {
    require_root();
    let dir = TempDir::new("sf-swap");
    let img = dir.path().join("disk.img");
    make_image(&img, 16 * MIB, &[]);
    sh("mkswap", &[img.to_str().unwrap()]);
    let lo = LoopDev::attach(&img, &[]);
    let before = read_all(&lo.path);
    let e = check_writable(&BlockDevice::from_path(&lo.path).unwrap(), false).unwrap_err();
    assert_eq!(read_all(&lo.path), before);
    // mkswap puts the magic 10 bytes before the end of the first page.
    let page = 4096u64; // x86-64; the probe also accepts 8K/16K/64K pages
    assert!(e.to_string().contains("swap signature"), "{e}");
    assert!(
        e.to_string().contains(&format!("byte {}", page - 10)),
        "{e}"
    );
}

#[test]
fn root_device_is_refused_even_with_force() {
    require_root();
    let src = sh("findmnt", &["-n", "-o", "SOURCE", "/"]);
    let src = PathBuf::from(src.trim());
    assert!(
        src.exists(),
        "root source {} is not a device node here",
        src.display()
    );
    let d = BlockDevice::from_path(&src).unwrap();
    // Hash what the probe reads (first and last 256 KiB): the check only
    // reads. Some sandboxes deny even a read-only open of the root disk
    // (EPERM from the device cgroup); then there is nothing to compare and
    // the probe reports ProbeFailed, but the refusal must still hold.
    let span = 256 * 1024;
    let snap = |p: &Path| -> Option<(Vec<u8>, Vec<u8>)> {
        let f = std::fs::File::open(p).ok()?;
        let mut a = vec![0u8; span];
        let mut b = vec![0u8; span];
        f.read_exact_at(&mut a, 0).unwrap();
        f.read_exact_at(&mut b, d.size.0 - span as u64).unwrap();
        Some((a, b))
    };
    let before = snap(&src);
    let e = check_writable(&d, true).unwrap_err();
    assert_eq!(snap(&src), before);
    if before.is_none() {
        eprintln!(
            "note: {} is not readable here; compared nothing",
            src.display()
        );
    }
    assert!(
        e.reasons.iter().any(|f| matches!(f, Finding::RunningSystem { mount_point, .. } if mount_point == Path::new("/"))),
        "{e}"
    );
    assert!(e.to_string().contains("cannot override"), "{e}");
    let e = check_writable(&d, false).unwrap_err();
    assert!(
        e.reasons
            .iter()
            .any(|f| matches!(f, Finding::Mounted { .. })),
        "{e}"
    );
}

#[test]
fn mounted_loop_is_refused_as_mounted() {
    require_root();
    let dir = TempDir::new("sf-mnt");
    let img = dir.path().join("disk.img");
    make_image(&img, 16 * MIB, &[]);
    let lo = LoopDev::attach(&img, &[]);
    mkfs_ext4(lo.path.to_str().unwrap());
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _m = mount(&lo.path, &mnt);
    let before = read_all(&lo.path);
    let d = BlockDevice::from_path(&lo.path).unwrap();
    let e = check_writable(&d, false).unwrap_err();
    assert_eq!(read_all(&lo.path), before);
    assert!(
        e.reasons
            .iter()
            .any(|f| matches!(f, Finding::Mounted { mount_point, .. } if *mount_point == mnt)),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains(&format!("is mounted at {}", mnt.display())),
        "{e}"
    );
    assert_eq!(
        assess(&d).state(),
        format!("mounted at {} ({})", mnt.display(), lo.name)
    );
}

#[test]
fn mounted_partition_refuses_the_whole_disk() {
    require_root();
    let dir = TempDir::new("sf-pmnt");
    let img = dir.path().join("disk.img");
    let table = mbr(&[(0x83, 2048, 30720)]);
    make_image(&img, 16 * MIB, &[(0, &table)]);
    let (lo, parts) = attach_partitioned(&img, 1);
    let p1 = parts[0].clone();
    mkfs_ext4(p1.to_str().unwrap());
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _m = mount(&p1, &mnt);
    let d = BlockDevice::from_path(&lo.path).unwrap();
    let e = check_writable(&d, false).unwrap_err();
    let pname = format!("{}p1", lo.name);
    assert!(
        e.reasons
            .iter()
            .any(|f| matches!(f, Finding::Mounted { device, .. } if *device == pname)),
        "{e}"
    );
}

#[test]
fn loop_stacked_on_a_device_marks_it_in_use() {
    require_root();
    let dir = TempDir::new("sf-stack");
    let img = dir.path().join("disk.img");
    make_image(&img, 16 * MIB, &[]);
    let lower = LoopDev::attach(&img, &[]);
    let upper = LoopDev::attach(&lower.path, &[]);
    let before = read_all(&lower.path);
    let d = BlockDevice::from_path(&lower.path).unwrap();
    let e = check_writable(&d, false).unwrap_err();
    assert_eq!(read_all(&lower.path), before);
    assert!(
        e.reasons.iter().any(
            |f| matches!(f, Finding::InUse { by, exclusive: false } if by.contains(&upper.name))
        ),
        "{e}"
    );
    assert!(check_writable(&d, true).is_ok());
    // The upper device itself is free: nothing is stacked on it.
    assert!(check_writable(&BlockDevice::from_path(&upper.path).unwrap(), false).is_ok());
}

/// A loop B with a loop T stacked on it and T mounted (or held open
/// O_EXCL by a process) was written with --force, which its refusal
/// offered: T's filesystem broke. B is refused as T is.
#[test]
fn a_device_under_a_mounted_or_held_stacked_loop_is_refused_even_with_force() {
    require_root();
    let dir = TempDir::new("sf-stack-used");
    let img = dir.path().join("disk.img");
    make_image(&img, 32 * MIB, &[]);
    let lower = LoopDev::attach(&img, &[]);
    let upper = LoopDev::attach(&lower.path, &[]);
    sh("mkfs.ext4", &["-q", "-F", upper.dev()]);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let d = BlockDevice::from_path(&lower.path).unwrap();
    {
        let _m = mount(&upper.path, &mnt);
        let e = check_writable(&d, true).unwrap_err();
        let line = e.to_string();
        assert!(
            e.reasons
                .iter()
                .any(|f| matches!(f, Finding::Mounted { device, .. } if *device == upper.name)),
            "{line}"
        );
        assert!(!line.contains("pass --force"), "{line}");
        assert!(!line.contains("wipefs"), "{line}");
        assert!(line.contains("--force cannot override"), "{line}");
        let plain = check_writable(&d, false).unwrap_err().to_string();
        assert!(
            plain.contains("ext4") && !plain.contains("wipefs"),
            "{plain}"
        );
        assert!(!plain.contains("pass --force"), "{plain}");
    }
    // Held open O_EXCL by another process instead of mounted.
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import os,sys,time;os.open(sys.argv[1],os.O_RDONLY|os.O_EXCL);print('held',flush=True);time.sleep(60)",
            upper.dev(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let held = check_writable(&d, true);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(line.trim(), "held");
    let e = held.unwrap_err();
    assert!(
        e.reasons.iter().any(
            |f| matches!(f, Finding::InUse { by, exclusive: true } if by.contains(&upper.name))
        ),
        "{e}"
    );
    assert!(!e.to_string().contains("pass --force"), "{e}");
    // Let go of, the stacked loop is an unused one again: --force may.
    assert!(check_writable(&d, true).is_ok());
}

#[test]
fn active_swap_is_refused_as_swap() {
    require_root();
    let dir = TempDir::new("sf-swapon");
    let img = dir.path().join("disk.img");
    make_image(&img, 16 * MIB, &[]);
    let lo = LoopDev::attach(&img, &[]);
    sh("mkswap", &[lo.path.to_str().unwrap()]);
    struct SwapOff(PathBuf);
    impl Drop for SwapOff {
        fn drop(&mut self) {
            let _ = std::process::Command::new("swapoff").arg(&self.0).status();
        }
    }
    sh("swapon", &[lo.path.to_str().unwrap()]);
    let _off = SwapOff(lo.path.clone());
    let e = check_writable(&BlockDevice::from_path(&lo.path).unwrap(), false).unwrap_err();
    assert!(
        e.reasons
            .iter()
            .any(|f| matches!(f, Finding::Swap { device } if *device == lo.name)),
        "{e}"
    );
    assert!(e.to_string().contains("swapoff"), "{e}");
}

#[test]
fn read_only_loop_is_refused_even_with_force() {
    require_root();
    let dir = TempDir::new("sf-ro");
    let img = dir.path().join("disk.img");
    make_image(&img, 8 * MIB, &[]);
    let lo = LoopDev::attach(&img, &["-r"]);
    let d = BlockDevice::from_path(&lo.path).unwrap();
    assert!(d.read_only);
    let e = check_writable(&d, true).unwrap_err();
    assert_eq!(e.reasons, [Finding::ReadOnly]);
}

#[test]
fn system_chain_follows_partitions_and_loop_backing_files() {
    require_root();
    use drivelab_device::blockdev::MountEntry;
    use drivelab_device::safety::system_devices;
    // Pretend / is mounted from the first partition of a loop device whose
    // image lives on the real root filesystem: the chain must reach the
    // partition, its loop disk, and the disk holding the image.
    let dir = TempDir::new("sf-chain");
    let img = dir.path().join("disk.img");
    let table = mbr(&[(0x83, 2048, 4096)]);
    make_image(&img, 16 * MIB, &[(0, &table)]);
    let (lo, parts) = attach_partitioned(&img, 1);
    let p1 = BlockDevice::from_path(&parts[0]).unwrap();
    let disk = BlockDevice::from_path(&lo.path).unwrap();
    let fake = vec![MountEntry {
        major: p1.major,
        minor: p1.minor,
        mount_point: PathBuf::from("/"),
        fs_type: "ext4".into(),
        source: parts[0].display().to_string(),
    }];
    let set: Vec<(u32, u32)> = system_devices(&fake).into_iter().map(|(d, _)| d).collect();
    // The disk under the image, by a second route (findmnt).
    let majmin = sh(
        "findmnt",
        &["-n", "-o", "MAJ:MIN", "--target", img.to_str().unwrap()],
    );
    let (ma, mi) = majmin.trim().split_once(':').unwrap();
    let under = (ma.parse::<u32>().unwrap(), mi.parse::<u32>().unwrap());
    assert!(set.contains(&(p1.major, p1.minor)), "{set:?}");
    assert!(set.contains(&(disk.major, disk.minor)), "{set:?}");
    assert!(set.contains(&under), "{set:?} lacks {under:?}");
}
