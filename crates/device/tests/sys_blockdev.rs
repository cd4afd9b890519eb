//! Block-device discovery against real loop devices and the running system.

mod sys_common;

use std::path::Path;

use drivelab_device::blockdev::{self, backing_device_of_file, ioctl_geometry, BlockDevice, Kind};
use drivelab_device::units::{Bytes, SectorSize};
use sys_common::*;

const MIB: u64 = 1 << 20;

#[test]
fn loop_device_facts_match_file_ioctl_and_symlink() {
    require_root();
    let dir = TempDir::new("bd-loop");
    let img = dir.path().join("disk.img");
    make_image(&img, 24 * MIB, &[]);
    let lo = LoopDev::attach(&img, &[]);
    let d = BlockDevice::from_path(&lo.path).unwrap();
    assert_eq!(d.name, lo.name);
    assert_eq!(d.path, lo.path);
    assert_eq!(d.kind, Kind::Loop);
    assert_eq!(d.major, 7);
    assert_eq!(d.size, Bytes(24 * MIB));
    assert_eq!(d.logical_sector, SectorSize(512));
    assert!(!d.partition && d.parent.is_none() && d.partitions.is_empty());
    assert!(!d.read_only);
    assert_eq!(
        d.loop_backing_file.as_deref(),
        Some(img.canonicalize().unwrap().as_path())
    );
    assert!(d.holders.is_empty());
    assert!(d.max_sectors_kb.is_some() && d.nr_requests.is_some());
    assert!(d.scheduler.is_some());
    // Second route: the ioctls.
    let g = ioctl_geometry(&lo.path).unwrap();
    assert_eq!(g.size, d.size);
    assert_eq!(g.logical_sector, d.logical_sector);
    assert_eq!(g.physical_sector, d.physical_sector);
    // Through a symlink, as /dev/disk/by-* would be.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&lo.path, &link).unwrap();
    assert_eq!(BlockDevice::from_path(&link).unwrap(), d);
    // By name.
    assert_eq!(BlockDevice::from_name(&lo.name).unwrap(), d);
    // Serialises with exact bytes.
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["size"], serde_json::json!(24 * MIB));
    assert_eq!(v["kind"], "loop");
}

#[test]
fn loop_with_4k_sectors_reports_4096() {
    require_root();
    let dir = TempDir::new("bd-4k");
    let img = dir.path().join("disk.img");
    make_image(&img, 8 * MIB, &[]);
    let lo = LoopDev::attach(&img, &["-b", "4096"]);
    let d = BlockDevice::from_path(&lo.path).unwrap();
    assert_eq!(d.logical_sector, SectorSize(4096));
    assert_eq!(
        ioctl_geometry(&lo.path).unwrap().logical_sector,
        SectorSize(4096)
    );
    assert_eq!(d.size, Bytes(8 * MIB));
}

#[test]
fn partitions_are_children_and_resolve_to_their_parent() {
    require_root();
    let dir = TempDir::new("bd-part");
    let img = dir.path().join("disk.img");
    let table = mbr(&[(0x83, 2048, 4096), (0x83, 8192, 2048)]);
    make_image(&img, 16 * MIB, &[(0, &table)]);
    let (lo, parts) = attach_partitioned(&img, 2);
    let p2 = parts[1].clone();

    let disk = BlockDevice::from_path(&lo.path).unwrap();
    let names: Vec<&str> = disk.partitions.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, [format!("{}p1", lo.name), format!("{}p2", lo.name)]);

    let part = BlockDevice::from_path(&p2).unwrap();
    assert!(part.partition);
    assert_eq!(part.parent.as_deref(), Some(lo.name.as_str()));
    assert_eq!(part.start, Some(Bytes(8192 * 512)));
    assert_eq!(part.size, Bytes(2048 * 512));
    assert_eq!(part.kind, Kind::Loop);
    assert_eq!(part.logical_sector, disk.logical_sector);
    assert_eq!(part.parent_disk().unwrap().unwrap().name, lo.name);
    assert_eq!(disk.partitions[1], part);

    let all = BlockDevice::list_all().unwrap();
    let mine = all.iter().find(|d| d.name == lo.name).expect("listed");
    assert_eq!(mine.partitions.len(), 2);
    assert!(
        all.iter().all(|d| !d.partition),
        "list_all lists disks only"
    );
}

#[test]
fn list_all_agrees_with_lsblk() {
    require_root();
    let all = BlockDevice::list_all().unwrap();
    // lsblk -b -d: whole disks with exact byte sizes (a second route).
    let out = sh("lsblk", &["-b", "-d", "-n", "-o", "NAME,SIZE"]);
    let mut seen = 0;
    for line in out.lines() {
        let mut w = line.split_whitespace();
        let (Some(name), Some(size)) = (w.next(), w.next()) else {
            continue;
        };
        // Loop devices come and go while other tests run: compare the rest.
        if name.starts_with("loop") {
            continue;
        }
        let size: u64 = size.parse().unwrap();
        let d = all
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(d.size.0, size, "{name}");
        seen += 1;
    }
    assert!(seen > 0);
}

#[test]
fn backing_device_of_a_file_on_root_tmpfs_and_loop_fs() {
    require_root();
    // A file on the root filesystem: findmnt says which device (second route).
    let exe = std::env::current_exe().unwrap();
    let majmin = sh(
        "findmnt",
        &["-n", "-o", "MAJ:MIN", "--target", exe.to_str().unwrap()],
    );
    let (ma, mi) = majmin.trim().split_once(':').unwrap();
    let got = backing_device_of_file(&exe)
        .unwrap()
        .expect("a block device");
    assert_eq!(
        (got.major.to_string(), got.minor.to_string()),
        (ma.to_string(), mi.to_string())
    );

    // tmpfs has no block device.
    if Path::new("/dev/shm").is_dir() {
        let f = Path::new("/dev/shm").join(format!("drivelab-bd-{}", std::process::id()));
        std::fs::write(&f, b"x").unwrap();
        let r = backing_device_of_file(&f);
        let _ = std::fs::remove_file(&f);
        assert!(r.unwrap().is_none());
    }
    assert!(backing_device_of_file(Path::new("/proc/self/status"))
        .unwrap()
        .is_none());

    // A file on an ext4 filesystem on a partition of a loop device: the
    // partition, whose parent is the loop device.
    let dir = TempDir::new("bd-file");
    let img = dir.path().join("disk.img");
    let table = mbr(&[(0x83, 2048, 30720)]);
    make_image(&img, 16 * MIB, &[(0, &table)]);
    let (lo, parts) = attach_partitioned(&img, 1);
    let p1 = parts[0].clone();
    sh("mkfs.ext4", &["-q", "-F", p1.to_str().unwrap()]);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _m = mount(&p1, &mnt);
    let f = mnt.join("file");
    std::fs::write(&f, b"hello").unwrap();
    let d = backing_device_of_file(&f)
        .unwrap()
        .expect("on the loop partition");
    assert_eq!(d.name, format!("{}p1", lo.name));
    assert!(d.partition);
    assert_eq!(d.parent.as_deref(), Some(lo.name.as_str()));
    // And the mount table agrees.
    let ms = blockdev::mounts().unwrap();
    let m = blockdev::mount_of(&f, &ms).unwrap();
    assert_eq!((m.major, m.minor), (d.major, d.minor));
    assert_eq!(m.fs_type, "ext4");
}

#[test]
fn not_a_block_device_is_an_error_that_says_so() {
    let e = BlockDevice::from_path(Path::new("/proc/self/status")).unwrap_err();
    assert!(e.to_string().contains("is not a block device"), "{e}");
    let e = BlockDevice::from_name("no-such-dev0").unwrap_err();
    assert!(e.to_string().contains("no block device named"), "{e}");
}

#[test]
fn root_disk_identity_agrees_with_lsblk() {
    require_root();
    let src = sh("findmnt", &["-n", "-o", "SOURCE", "/"]);
    let src = Path::new(src.trim());
    if !src.starts_with("/dev/") {
        panic!(
            "root is not on a block device here ({}); this test needs one",
            src.display()
        );
    }
    let d = BlockDevice::from_path(src).unwrap();
    // lsblk reads udev/sysfs its own way: a second route for size, sectors,
    // rotational and serial.
    let out = sh(
        "lsblk",
        &[
            "-b",
            "-d",
            "-n",
            "-P",
            "-o",
            "SIZE,LOG-SEC,PHY-SEC,ROTA,SERIAL,RO",
            src.to_str().unwrap(),
        ],
    );
    let field = |k: &str| -> String {
        let pat = format!("{k}=\"");
        let i = out.find(&pat).unwrap() + pat.len();
        out[i..].split('"').next().unwrap().to_string()
    };
    assert_eq!(d.size.0.to_string(), field("SIZE"));
    assert_eq!(d.logical_sector.0.to_string(), field("LOG-SEC"));
    assert_eq!(d.physical_sector.0.to_string(), field("PHY-SEC"));
    assert_eq!(if d.rotational { "1" } else { "0" }, field("ROTA"));
    assert_eq!(if d.read_only { "1" } else { "0" }, field("RO"));
    let serial = field("SERIAL");
    if !serial.is_empty() {
        assert_eq!(d.serial.as_deref(), Some(serial.as_str()));
    }
}

#[test]
fn nowait_is_known_for_blk_mq_loop_and_not_for_bio_based_zram() {
    use drivelab_device::blockdev::takes_nowait;
    let dir = TempDir::new("nowait");
    let img = dir.path().join("n.img");
    make_image(&img, 8 << 20, &[]);
    let lo = LoopDev::attach(&img, &[]);
    let d = BlockDevice::from_path(&lo.path).unwrap();
    // loop is a blk-mq driver: sysfs has its mq directory.
    assert!(std::path::Path::new(&format!("/sys/block/{}/mq", d.name)).is_dir());
    assert!(takes_nowait(d.major, d.minor));
    let z = drivelab_testkit::Zram::new(8 << 20).expect("zram-control");
    let zd = BlockDevice::from_path(&z.path).unwrap();
    // zram is bio-based: no mq directory, so io_uring cannot submit inline.
    assert!(!std::path::Path::new(&format!("/sys/block/{}/mq", zd.name)).exists());
    assert!(!takes_nowait(zd.major, zd.minor));
}
