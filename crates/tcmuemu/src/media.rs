//! The drive's medium model beside its backing file (issue 28 item 3):
//! the map of unmapped blocks, kept with either medium, and with `--media
//! ftl` the FTL model of `drivelab_ftlsim::media` that every write, unmap
//! and erase goes through.
//!
//! The backing file keeps the bytes; the model keeps what a drive's
//! controller knows of them. An unmapped block reads as zeroes whatever the
//! file holds there (READ CAPACITY (16) LBPRZ, IDENTIFY word 69 RZAT). A
//! whole-medium fill with zeroes (a block erase, a normal security erase,
//! FORMAT UNIT) returns the medium to fresh; a pattern (an overwrite
//! sanitize, an enhanced security erase) is the drive's own writes through
//! the FTL; a cryptographic erase leaves every block mapped, holding noise
//! (data under a key no longer held), and programs no flash.

use std::fs::File;
use std::os::unix::fs::FileExt;

use drivelab_ftlsim::media::{BlockMedia, Origin};

use crate::ata::MediumAction;

/// Marks every block of `file` that holds a byte other than zero as mapped
/// (what a backing file kept from an earlier run holds); a file that cannot
/// be read is taken as mapped throughout, so its bytes stay visible.
pub fn scan(file: &File, model: &mut BlockMedia, block_size: u64) {
    const CHUNK_BLOCKS: u64 = 2048;
    let mut buf = vec![0u8; (CHUNK_BLOCKS * block_size) as usize];
    let mut lba = 0;
    while lba < model.blocks() {
        let n = CHUNK_BLOCKS.min(model.blocks() - lba);
        let chunk = &mut buf[..(n * block_size) as usize];
        if file.read_exact_at(chunk, lba * block_size).is_err() {
            model.preload(lba, model.blocks() - lba);
            return;
        }
        for (i, b) in chunk.chunks_exact(block_size as usize).enumerate() {
            if b.iter().any(|&x| x != 0) {
                model.preload(lba + i as u64, 1);
            }
        }
        lba += n;
    }
}

/// Zeroes the blocks of `buf` (read from `lba`) that are unmapped.
pub fn zero_unmapped(model: &BlockMedia, lba: u64, buf: &mut [u8], block_size: usize) {
    for (i, b) in buf.chunks_exact_mut(block_size).enumerate() {
        if !model.is_mapped(lba + i as u64) {
            b.fill(0);
        }
    }
}

/// Records in `model` what `action` did to the backing file: a whole-medium
/// action over its first `blocks` blocks, a ranged one over its own.
pub fn record(model: &mut BlockMedia, action: &MediumAction, blocks: u64) {
    match action {
        MediumAction::Half(a) => over(model, a, 0, blocks / 2, false),
        MediumAction::Blocks { lba, blocks, .. } => model.write(*lba, *blocks, Origin::Host),
        MediumAction::Trim(ranges) => {
            for &(lba, n) in ranges {
                model.unmap(lba, n);
            }
        }
        a => over(model, a, 0, blocks, blocks >= model.blocks()),
    }
}

/// A whole-medium kind of action over `lba..lba + n`; `whole` when that
/// is the entire medium (a zero fill then makes it fresh).
fn over(model: &mut BlockMedia, action: &MediumAction, lba: u64, n: u64, whole: bool) {
    match action {
        MediumAction::Fill(0) if whole => model.reset(),
        MediumAction::Fill(0) => model.unmap(lba, n),
        MediumAction::Noise(_) => model.mark_mapped(lba, n),
        _ => model.write(lba, n, Origin::Drive),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_ftlsim::media::MediaKind;

    #[test]
    fn each_medium_action_changes_the_map_as_a_drive_would() {
        let mut m = BlockMedia::new(MediaKind::Ftl, 8192, 512).unwrap();
        record(&mut m, &MediumAction::Pattern(0x6C6C_6C6C), 8192);
        assert_eq!((m.mapped_blocks(), m.stats().drive_pages), (8192, 1024));
        record(&mut m, &MediumAction::Trim(vec![(0, 16), (100, 4)]), 0);
        assert_eq!(m.mapped_blocks(), 8192 - 20);
        let blk = MediumAction::Blocks {
            lba: 0,
            blocks: 8,
            with: Box::new(MediumAction::Fill(0)),
        };
        record(&mut m, &blk, 0);
        assert_eq!((m.is_mapped(0), m.stats().host_pages), (true, 1));
        record(
            &mut m,
            &MediumAction::Half(Box::new(MediumAction::Fill(0))),
            8192,
        );
        assert_eq!((m.mapped_blocks(), m.is_fresh()), (4096, false));
        record(&mut m, &MediumAction::Fill(0), 8192);
        assert!(m.is_fresh());
        record(&mut m, &MediumAction::Noise(3), 8192);
        assert_eq!(m.mapped_blocks(), 8192);
        assert_eq!(
            m.stats().drive_pages,
            1024,
            "a crypto erase programs no flash"
        );
    }

    #[test]
    fn a_backing_file_s_written_blocks_are_found_mapped_and_unmapped_ones_read_zero() {
        let dir = std::env::temp_dir().join(format!("tcmuemu-media-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scan.img");
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.set_len(64 * 512).unwrap();
        f.write_all_at(&[7u8; 512], 5 * 512).unwrap();
        f.write_all_at(&[1u8], 63 * 512 + 511).unwrap();
        let mut m = BlockMedia::memory(64, 512);
        scan(&f, &mut m, 512);
        assert_eq!(m.mapped_blocks(), 2);
        assert!(m.is_mapped(5) && m.is_mapped(63) && !m.is_mapped(6));
        let mut buf = vec![9u8; 3 * 512];
        zero_unmapped(&m, 4, &mut buf, 512);
        assert_eq!(&buf[..512], &[0u8; 512][..]);
        assert_eq!(&buf[512..1024], &[9u8; 512][..]);
        assert_eq!(&buf[1024..], &[0u8; 512][..]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
