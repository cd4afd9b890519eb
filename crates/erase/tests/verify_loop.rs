//! Read-back on a real loop device: a block that differs from the pattern
//! is found, by full and by sample verification (the last LBA is always
//! sampled), and named by its LBA; a clean device passes. The corruption is
//! written into the backing file here, not through drivelab.

use std::os::unix::fs::FileExt;

use drivelab_erase::verify::{self, ReadPolicy};
use drivelab_patterns::{Generator, Pattern};
use drivelab_testkit::{require_root, LoopDev, TempDir};

fn gen() -> Generator {
    let p: Pattern = "fixed:0xA5".parse().unwrap();
    Generator::builder(p, 512).seed(1).build().unwrap()
}

fn check(dev: &LoopDev, plan: &verify::SamplePlan) -> verify::VerifyResult {
    verify::read_back(
        &dev.path,
        512,
        plan,
        &gen(),
        ReadPolicy {
            retries: 1,
            skip: true,
        },
        |_| {},
        || false,
    )
    .unwrap()
}

#[test]
fn a_changed_block_is_found_and_named_by_its_lba() {
    require_root();
    let dir = TempDir::new("erase-verify");
    let size: u64 = 16 << 20;
    let dev = LoopDev::new_in(&dir, size);
    std::fs::write(&dev.backing, vec![0xA5u8; size as usize]).unwrap();
    let blocks = size / 512;
    let full = verify::full_plan(blocks);
    let ok = check(&dev, &full);
    assert_eq!(ok.mismatch, None);
    assert_eq!(ok.bytes_read, size);

    // Corrupt one byte of LBA 12345 and of the last LBA.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&dev.backing)
        .unwrap();
    f.write_all_at(&[0x00], 12345 * 512 + 100).unwrap();
    f.sync_all().unwrap();
    let r = check(&dev, &full);
    let (lba, what) = r.mismatch.expect("mismatch found");
    assert_eq!(lba, 12345, "{what}");

    f.write_all_at(&[0xA5], 12345 * 512 + 100).unwrap();
    f.write_all_at(&[0x5A], (blocks - 1) * 512 + 7).unwrap();
    f.sync_all().unwrap();
    let sample = verify::sample_plan(blocks, 99);
    let r = check(&dev, &sample);
    assert_eq!(r.mismatch.map(|m| m.0), Some(blocks - 1));
    // The sample read at least 10% of the device and not all of it.
    assert!(
        r.bytes_read * 10 >= size && r.bytes_read < size,
        "{}",
        r.bytes_read
    );
}
