//! "Not the old data" on a real loop device: the blocks sampled before a
//! stand-in crypto erase are read again through the claim, and a block the
//! erase left unchanged is found and named by its LBA; blank blocks are
//! counted apart and blocks now zero are counted. The "erase" is written
//! into the backing file here, not through drivelab; the sampling reads
//! write nothing (the device's write counter).

use std::os::unix::fs::FileExt;

use drivelab_device::claim::{Claim, ClaimOptions, Consent};
use drivelab_erase::verify::prior::{self, Content};
use drivelab_testkit::{diskstats, require_root, LoopDev, TempDir};

const LBS: u64 = 512;

/// Block `lba`'s content in generation `g`: no two blocks or generations
/// alike, never blank.
fn block(lba: u64, g: u8) -> Vec<u8> {
    let mut b = vec![g; LBS as usize];
    b[..8].copy_from_slice(&lba.to_le_bytes());
    b
}

#[test]
fn a_block_the_crypto_erase_left_is_found_and_blank_ones_counted_apart() {
    require_root();
    let dir = TempDir::new("erase-prior");
    let size: u64 = 8 << 20;
    let blocks = size / LBS;
    let dev = LoopDev::new_in(&dir, size);
    // Old data: every block distinct, except a zero run and a 0xFF run.
    let (zero_run, ones_run) = (100..400u64, 9000..9300u64);
    let mut old = Vec::with_capacity(size as usize);
    for lba in 0..blocks {
        if zero_run.contains(&lba) {
            old.extend(std::iter::repeat_n(0u8, LBS as usize));
        } else if ones_run.contains(&lba) {
            old.extend(std::iter::repeat_n(0xFFu8, LBS as usize));
        } else {
            old.extend(block(lba, 1));
        }
    }
    std::fs::write(&dev.backing, &old).unwrap();
    let claim = Claim::open(
        &dev.path,
        &Consent {
            force: false,
            confirm: None,
        },
        &ClaimOptions::default(),
    )
    .expect("a fresh loop device can be claimed");

    let writes0 = diskstats(&dev.name).2;
    let before = prior::take(&claim, LBS as u32, blocks, 77).unwrap();
    let lbas: Vec<u64> = before.blocks.iter().map(|b| b.0).collect();
    assert_eq!(lbas, prior::prior_lbas(blocks, 77));
    let blank = lbas
        .iter()
        .filter(|l| zero_run.contains(l) || ones_run.contains(l))
        .count() as u64;
    assert!(blank > 0, "the sample missed both blank runs");
    for &(lba, c) in &before.blocks {
        let want = if zero_run.contains(&lba) {
            Content::Zero
        } else if ones_run.contains(&lba) {
            Content::Ones
        } else {
            Content::of(&block(lba, 1))
        };
        assert_eq!(c, want, "LBA {lba}");
    }

    // The stand-in erase: every block new, but three sampled data blocks
    // left as they were and one turned to zeroes.
    let data: Vec<u64> = lbas
        .iter()
        .copied()
        .filter(|l| !zero_run.contains(l) && !ones_run.contains(l))
        .collect();
    let kept = [data[0], data[data.len() / 2], *data.last().unwrap()];
    let zeroed = data[1];
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&dev.backing)
        .unwrap();
    for lba in 0..blocks {
        if kept.contains(&lba) {
            continue;
        }
        let b = if lba == zeroed {
            vec![0u8; LBS as usize]
        } else {
            block(lba, 2)
        };
        f.write_all_at(&b, lba * LBS).unwrap();
    }
    f.sync_all().unwrap();

    let after = prior::read_again(&claim, LBS as u32, &before).unwrap();
    let p = prior::judge_prior(&before, &after);
    assert_eq!(p.sampled, lbas.len() as u64);
    assert_eq!(p.blank_before, blank);
    assert_eq!(p.unchanged, 3);
    assert_eq!(p.unchanged_lbas, kept.to_vec());
    assert_eq!(p.changed, p.sampled - blank - 3);
    assert_eq!(p.zeroed, 1);
    assert!(p.result(true).starts_with(&format!(
        "failed: sampled {} blocks: 3 still hold their old data",
        p.sampled
    )));

    // The kept blocks changed too: the erase is verified.
    for lba in kept {
        f.write_all_at(&block(lba, 3), lba * LBS).unwrap();
    }
    f.sync_all().unwrap();
    let after = prior::read_again(&claim, LBS as u32, &before).unwrap();
    let p = prior::judge_prior(&before, &after);
    assert_eq!((p.unchanged, p.changed), (0, p.sampled - blank));
    assert!(p.result(true).starts_with("passed: "), "{}", p.result(true));
    // Sampling read; it wrote nothing to the device.
    assert_eq!(diskstats(&dev.name).2, writes0);
}
