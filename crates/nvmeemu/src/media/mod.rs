//! A namespace's medium, in memory: blocks stored encrypted under a media
//! key, with an allocation map, and (`--media ftl`) the FTL model of
//! `drivelab_ftlsim::media` that every write, deallocation and erase goes
//! through, so the NAND writes behind the host's are counted.
//!
//! The key is what makes a cryptographic erase real: every block is stored
//! as its data XOR a keystream drawn from the key and the byte's position,
//! and read back through the key in force. Replacing the key (Format NVM
//! SES 2, Sanitize crypto erase) leaves the stored bytes as they were, and
//! every written block then reads back as random-looking bytes that are
//! not the old data, as on a self-encrypting drive. A deallocated block
//! (never written, Dataset Management deallocate, Write Zeroes with DEAC, a
//! block erase) reads as zeroes (Identify Namespace DLFEAT = 1).
//!
//! A block erase or a format without cryptographic erase ([`Media::erase`])
//! returns the medium to fresh: nothing allocated and, with the FTL, every
//! flash block erased. An overwrite sanitize writes through the FTL as the
//! drive's own writes ([`Origin::Drive`]).

use drivelab_ftlsim::media::{BlockMedia, MediaKind, MediaStats, Origin};
use drivelab_ftlsim::ConfigError;

use std::hash::{BuildHasher, Hasher};

/// One 64-bit step of SplitMix64: the keystream word at `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A fresh media key from the operating system's randomness (std's
/// per-process random hasher keys).
pub fn fresh_key() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x6E76_6D65);
    h.finish()
}

/// A namespace's blocks.
#[derive(Debug)]
pub struct Media {
    block_size: usize,
    blocks: u64,
    stored: Vec<u8>,
    model: BlockMedia,
    key: u64,
    /// How many times the key was replaced.
    pub key_changes: u64,
}

impl Media {
    /// A plain-memory medium of `blocks` blocks of `block_size` bytes (a
    /// multiple of 8), every block deallocated.
    pub fn new(blocks: u64, block_size: usize) -> Media {
        Media::over(
            blocks,
            block_size,
            BlockMedia::memory(blocks, block_size as u64),
        )
    }

    /// A medium of `kind`; the FTL refuses a namespace too small for its
    /// erase blocks.
    pub fn with_kind(
        blocks: u64,
        block_size: usize,
        kind: MediaKind,
    ) -> Result<Media, ConfigError> {
        let model = BlockMedia::new(kind, blocks, block_size as u64)?;
        Ok(Media::over(blocks, block_size, model))
    }

    fn over(blocks: u64, block_size: usize, model: BlockMedia) -> Media {
        Media {
            block_size,
            blocks,
            stored: vec![0; blocks as usize * block_size],
            model,
            key: fresh_key(),
            key_changes: 0,
        }
    }

    /// The medium model (the map and the FTL).
    pub fn model(&self) -> &BlockMedia {
        &self.model
    }

    /// The medium's lifetime NAND counts (zero on plain memory).
    pub fn media_stats(&self) -> MediaStats {
        self.model.stats()
    }

    /// Blocks in the namespace.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Bytes per block.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Blocks currently allocated (Identify Namespace NUSE).
    pub fn mapped_blocks(&self) -> u64 {
        self.model.mapped_blocks()
    }

    /// Whether `lba..lba+n` lies inside the namespace.
    pub fn in_range(&self, lba: u64, n: u64) -> bool {
        lba.checked_add(n).is_some_and(|end| end <= self.blocks)
    }

    /// XORs the keystream of `self.key` over `buf`, which sits at byte
    /// `offset` of the namespace (both multiples of 8).
    fn crypt(key: u64, offset: usize, buf: &mut [u8]) {
        for (i, w) in buf.chunks_exact_mut(8).enumerate() {
            let k = mix(key ^ mix((offset / 8 + i) as u64)).to_le_bytes();
            for (b, kb) in w.iter_mut().zip(k) {
                *b ^= kb;
            }
        }
    }

    /// Reads `n` blocks from `lba` (the caller checked the range).
    pub fn read(&self, lba: u64, n: u64) -> Vec<u8> {
        let bs = self.block_size;
        let mut out = vec![0u8; n as usize * bs];
        for (i, chunk) in out.chunks_exact_mut(bs).enumerate() {
            let b = lba as usize + i;
            if self.model.is_mapped(b as u64) {
                chunk.copy_from_slice(&self.stored[b * bs..(b + 1) * bs]);
                Self::crypt(self.key, b * bs, chunk);
            }
        }
        out
    }

    /// Writes whole blocks of `data` from `lba` (the caller checked the
    /// range and that `data` is whole blocks), for `origin`.
    pub fn write(&mut self, lba: u64, data: &[u8], origin: Origin) {
        let bs = self.block_size;
        for (i, chunk) in data.chunks_exact(bs).enumerate() {
            let b = lba as usize + i;
            let dst = &mut self.stored[b * bs..(b + 1) * bs];
            dst.copy_from_slice(chunk);
            Self::crypt(self.key, b * bs, dst);
        }
        self.model.write(lba, (data.len() / bs) as u64, origin);
    }

    /// Writes blocks whose every 4 bytes are `pattern` (little-endian),
    /// from `lba` for `n` blocks, for `origin`, in runs of up to 256
    /// blocks (so the FTL programs each page once, as a drive would).
    pub fn fill(&mut self, lba: u64, n: u64, pattern: u32, origin: Origin) {
        const RUN: u64 = 256;
        let run: Vec<u8> = pattern
            .to_le_bytes()
            .iter()
            .copied()
            .cycle()
            .take(self.block_size * RUN.min(n) as usize)
            .collect();
        let mut at = lba;
        while at < lba + n {
            let k = RUN.min(lba + n - at) as usize;
            self.write(at, &run[..k * self.block_size], origin);
            at += k as u64;
        }
    }

    /// Deallocates `n` blocks from `lba`: they read as zeroes.
    pub fn deallocate(&mut self, lba: u64, n: u64) {
        let bs = self.block_size;
        for b in lba as usize..(lba + n) as usize {
            self.stored[b * bs..(b + 1) * bs].fill(0);
        }
        self.model.unmap(lba, n);
    }

    /// Erases the whole namespace as a block erase does: every block
    /// deallocated and the medium fresh (with the FTL, every flash block
    /// erased).
    pub fn erase(&mut self) {
        self.stored.fill(0);
        self.model.reset();
    }

    /// Replaces the media key: every allocated block now reads back as
    /// the old stored bytes decrypted with a key they were never
    /// encrypted with.
    pub fn change_key(&mut self) {
        let old = self.key;
        while self.key == old {
            self.key = fresh_key();
        }
        self.key_changes += 1;
    }
}

/// Log identifier of the media log (vendor specific, C0h).
pub const MEDIA_LOG: u8 = 0xC0;

/// The media log (vendor specific, Get Log Page C0h, 512 bytes, every
/// namespace's medium together): where a drive reports its NAND writes
/// beside the host writes of the SMART / Health log. Its first field is
/// laid out as the OCP SMART / Health Information Extended log's (C0h)
/// Physical Media Units Written, in bytes; the rest is drivelab's own:
///
/// | bytes | field |
/// |---|---|
/// | 15:0 | NAND bytes written (host, drive and garbage-collection pages) |
/// | 31:16 | NAND bytes read (not counted: 0) |
/// | 39:32 | flash pages the host's writes programmed |
/// | 47:40 | flash pages the drive's own writes programmed (overwrite sanitize) |
/// | 55:48 | flash pages programmed in all |
/// | 63:56 | garbage-collection copies |
/// | 71:64 | flash blocks erased |
/// | 79:72 | whole-medium block erases (back to fresh) |
/// | 87:80 | logical blocks allocated |
/// | 95:88 | flash pages mapped |
/// | 99:96 | flash page size, bytes |
/// | 100 | medium: 0 plain memory, 1 FTL model |
pub fn media_log(namespaces: &[Media]) -> Vec<u8> {
    let mut t = MediaStats::default();
    let (mut allocated, mut pages, mut ftl) = (0u64, 0u64, false);
    for m in namespaces {
        let s = m.media_stats();
        t.host_pages += s.host_pages;
        t.drive_pages += s.drive_pages;
        t.nand_pages += s.nand_pages;
        t.gc_copies += s.gc_copies;
        t.block_erases += s.block_erases;
        t.resets += s.resets;
        allocated += m.mapped_blocks();
        pages += m.model.ftl().map_or(0, |f| f.mapped_pages());
        ftl |= m.model.kind() == MediaKind::Ftl;
    }
    let mut d = vec![0u8; 512];
    let page = drivelab_ftlsim::media::PAGE_BYTES;
    let nand_bytes = u128::from(t.nand_pages) * u128::from(page);
    d[0..16].copy_from_slice(&nand_bytes.to_le_bytes());
    let words = [
        t.host_pages,
        t.drive_pages,
        t.nand_pages,
        t.gc_copies,
        t.block_erases,
        t.resets,
        allocated,
        pages,
    ];
    for (i, w) in words.iter().enumerate() {
        d[32 + 8 * i..40 + 8 * i].copy_from_slice(&w.to_le_bytes());
    }
    d[96..100].copy_from_slice(&(page as u32).to_le_bytes());
    d[100] = u8::from(ftl);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_blocks_read_back_and_unwritten_read_zero() {
        let mut m = Media::new(16, 512);
        assert_eq!(m.read(0, 16), vec![0; 16 * 512]);
        let data: Vec<u8> = (0..1024).map(|i| (i * 7 % 251) as u8).collect();
        m.write(3, &data, Origin::Host);
        assert_eq!(m.read(3, 2), data);
        assert_eq!(m.mapped_blocks(), 2);
        // Stored encrypted: the raw bytes are not the data.
        assert_ne!(&m.stored[3 * 512..5 * 512], &data[..]);
        m.deallocate(4, 1);
        assert_eq!(m.read(4, 1), vec![0; 512]);
        assert_eq!(m.read(3, 1), data[..512].to_vec());
        assert!(m.in_range(15, 1) && !m.in_range(15, 2) && !m.in_range(u64::MAX, 2));
    }

    #[test]
    fn a_new_key_turns_old_data_into_noise_that_is_not_zeroes() {
        let mut m = Media::new(8, 512);
        let data = vec![0x5Au8; 8 * 512];
        m.write(0, &data, Origin::Host);
        m.change_key();
        let after = m.read(0, 8);
        assert_ne!(after, data);
        assert!(after.iter().filter(|&&b| b == 0x5A).count() < after.len() / 64);
        assert!(after.iter().filter(|&&b| b == 0).count() < after.len() / 64);
        // Every block differs from every other: not one repeated pattern.
        let blocks: std::collections::HashSet<&[u8]> = after.chunks(512).collect();
        assert_eq!(blocks.len(), 8);
        assert_eq!(m.key_changes, 1);
    }

    fn u64_at(d: &[u8], at: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&d[at..at + 8]);
        u64::from_le_bytes(b)
    }

    #[test]
    fn on_the_ftl_random_overwrites_amplify_and_a_block_erase_makes_it_fresh() {
        // 8 MiB: 2048 flash pages of 4 KiB.
        let mut m = Media::with_kind(16384, 512, MediaKind::Ftl).unwrap();
        let page = vec![0xC3u8; 4096];
        for p in 0..2048u64 {
            m.write(p * 8, &page, Origin::Host);
        }
        let mut x = 28u64;
        for _ in 0..4 * 2048 {
            x = mix(x);
            m.write((x % 2048) * 8, &page, Origin::Host);
        }
        let log = media_log(std::slice::from_ref(&m));
        let (host, nand, gc) = (u64_at(&log, 32), u64_at(&log, 48), u64_at(&log, 56));
        assert_eq!(host, 5 * 2048);
        assert!(gc > 0 && nand == host + gc, "{host} {nand} {gc}");
        assert!(nand as f64 / host as f64 > 1.5);
        assert_eq!(
            u128::from_le_bytes(log[0..16].try_into().unwrap()),
            u128::from(nand) * 4096
        );
        assert_eq!(
            (u64_at(&log, 80), u64_at(&log, 88), log[100]),
            (16384, 2048, 1)
        );
        m.erase();
        assert!(m.model().is_fresh());
        assert_eq!(m.read(0, 16384), vec![0; 16384 * 512]);
        let log = media_log(std::slice::from_ref(&m));
        assert_eq!((u64_at(&log, 48), u64_at(&log, 72)), (nand, 1));
        assert_eq!((u64_at(&log, 80), u64_at(&log, 88)), (0, 0));
        // An overwrite sanitize's pattern: the drive's writes, not the host's.
        m.fill(0, 16384, 0x5A5A_5A5A, Origin::Drive);
        let log = media_log(std::slice::from_ref(&m));
        assert_eq!((u64_at(&log, 32), u64_at(&log, 40)), (host, 2048));
        assert_eq!(m.read(100, 1), vec![0x5A; 512]);
    }

    #[test]
    fn plain_memory_keeps_the_map_and_counts_no_nand() {
        let mut m = Media::new(64, 512);
        m.write(0, &[1u8; 512 * 64], Origin::Host);
        m.deallocate(8, 8);
        assert_eq!(m.mapped_blocks(), 56);
        let log = media_log(std::slice::from_ref(&m));
        assert_eq!((u64_at(&log, 48), u64_at(&log, 80), log[100]), (0, 56, 0));
        assert!(Media::with_kind(16, 512, MediaKind::Ftl).is_err());
    }

    #[test]
    fn fill_writes_the_pattern_little_endian() {
        let mut m = Media::new(2, 512);
        m.fill(1, 1, 0xA1B2_C3D4, Origin::Drive);
        let b = m.read(1, 1);
        assert_eq!(&b[0..8], &[0xD4, 0xC3, 0xB2, 0xA1, 0xD4, 0xC3, 0xB2, 0xA1]);
        assert_eq!(m.read(0, 1), vec![0; 512]);
    }
}
