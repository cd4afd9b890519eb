//! Diskstats against a real loop device: what the test writes with O_DIRECT
//! is exactly what the kernel counts.

mod sys_common;

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::Duration;

use drivelab_device::diskstats::{DiskStats, Sampler};
use sys_common::*;

const MIB: u64 = 1 << 20;

/// A 4096-aligned buffer of `len` bytes (O_DIRECT needs aligned memory),
/// carved out of a larger Vec so no unsafe allocation is needed.
fn aligned(len: usize, fill: u8) -> (Vec<u8>, usize) {
    let v = vec![fill; len + 4096];
    let off = (4096 - (v.as_ptr() as usize % 4096)) % 4096;
    (v, off)
}

#[test]
fn o_direct_writes_are_counted_exactly() {
    require_root();
    let dir = TempDir::new("ds");
    let img = dir.path().join("disk.img");
    make_image(&img, 32 * MIB, &[]);
    let lo = LoopDev::attach(&img, &[]);

    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&lo.path)
        .unwrap();
    // Sizes from a table, all at most max_sectors_kb (1280 KiB here) so the
    // block layer does not split them, at non-adjacent offsets.
    let sizes: [usize; 6] = [4096, 8192, 65536, 512 * 1024, 4096, 131072];
    let want_bytes: u64 = sizes.iter().map(|s| *s as u64).sum();

    let mut sampler = Sampler::new([lo.name.clone()]).unwrap();
    let before = DiskStats::read(&lo.name).unwrap();
    let mut off = 0u64;
    for s in sizes {
        let (buf, a) = aligned(s, 0x5A);
        f.write_all_at(&buf[a..a + s], off).unwrap();
        off += s as u64 + MIB;
    }
    let after = DiskStats::read(&lo.name).unwrap();
    let d = &sampler.sample().unwrap()[0];
    assert_eq!(d.name, lo.name);
    assert_eq!(d.write_ios, sizes.len() as u64);
    assert_eq!(d.bytes_written, want_bytes);
    assert!(d.util() >= 0.0 && d.util() <= 1.0);

    let d2 = after.delta_since(&before, Duration::from_secs(1));
    assert_eq!(d2.write_ios, sizes.len() as u64);
    assert_eq!(d2.bytes_written, want_bytes);

    // Reads: 3 direct reads of 64 KiB.
    let mut sampler = Sampler::new([lo.name.clone()]).unwrap();
    for i in 0..3u64 {
        let (mut buf, a) = aligned(65536, 0);
        f.read_exact_at(&mut buf[a..a + 65536], i * 2 * MIB)
            .unwrap();
        if i == 0 {
            // The first write put 4096 bytes of 0x5A at offset 0.
            assert!(buf[a..a + 4096].iter().all(|b| *b == 0x5A));
            assert_eq!(buf[a + 4096], 0);
        }
    }
    // Nothing of ours is in flight: the device settles at once.
    assert!(sampler.wait_idle(Duration::from_secs(1)));
    let d = &sampler.sample().unwrap()[0];
    assert_eq!(d.read_ios, 3);
    assert_eq!(d.bytes_read, 3 * 65536);
    assert_eq!(d.write_ios, 0);
    let tot = &sampler.since_start()[0];
    assert_eq!(tot.read_ios, 3);
}

#[test]
fn read_all_has_the_same_devices_as_sys_block() {
    let all = DiskStats::read_all().unwrap();
    for e in std::fs::read_dir("/sys/block").unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let s = all.iter().find(|s| s.name == name);
        assert!(s.is_some(), "{name} missing from /proc/diskstats");
        // Cross-check the counters against /sys/block/NAME/stat (same
        // numbers, other file) for a device nobody is writing to right now:
        // only the device numbers are stable enough to compare.
        let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).unwrap();
        let s = s.unwrap();
        assert_eq!(dev.trim(), format!("{}:{}", s.major, s.minor));
    }
    assert!(matches!(
        DiskStats::read("no-such-dev"),
        Err(drivelab_device::diskstats::DiskStatsError::NoSuchDevice(_))
    ));
    assert!(Sampler::new(["no-such-dev"]).is_err());
}
