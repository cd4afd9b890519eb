//! A namespace's medium, in memory: blocks stored encrypted under a media
//! key, with an allocation map.
//!
//! The key is what makes a cryptographic erase real: every block is stored
//! as its data XOR a keystream drawn from the key and the byte's position,
//! and read back through the key in force. Replacing the key (Format NVM
//! SES 2, Sanitize crypto erase) leaves the stored bytes as they were, and
//! every written block then reads back as random-looking bytes that are
//! not the old data, as on a self-encrypting drive. A deallocated block
//! (never written, Dataset Management deallocate, Write Zeroes with DEAC, a
//! block erase) reads as zeroes (Identify Namespace DLFEAT = 1).

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
    mapped: Vec<bool>,
    key: u64,
    /// How many times the key was replaced.
    pub key_changes: u64,
}

impl Media {
    /// A medium of `blocks` blocks of `block_size` bytes (a multiple of
    /// 8), every block deallocated.
    pub fn new(blocks: u64, block_size: usize) -> Media {
        Media {
            block_size,
            blocks,
            stored: vec![0; blocks as usize * block_size],
            mapped: vec![false; blocks as usize],
            key: fresh_key(),
            key_changes: 0,
        }
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
        self.mapped.iter().filter(|m| **m).count() as u64
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
            if self.mapped[b] {
                chunk.copy_from_slice(&self.stored[b * bs..(b + 1) * bs]);
                Self::crypt(self.key, b * bs, chunk);
            }
        }
        out
    }

    /// Writes whole blocks of `data` from `lba` (the caller checked the
    /// range and that `data` is whole blocks).
    pub fn write(&mut self, lba: u64, data: &[u8]) {
        let bs = self.block_size;
        for (i, chunk) in data.chunks_exact(bs).enumerate() {
            let b = lba as usize + i;
            let dst = &mut self.stored[b * bs..(b + 1) * bs];
            dst.copy_from_slice(chunk);
            Self::crypt(self.key, b * bs, dst);
            self.mapped[b] = true;
        }
    }

    /// Writes blocks whose every 4 bytes are `pattern` (little-endian),
    /// from `lba` for `n` blocks.
    pub fn fill(&mut self, lba: u64, n: u64, pattern: u32) {
        let block: Vec<u8> = pattern
            .to_le_bytes()
            .iter()
            .copied()
            .cycle()
            .take(self.block_size)
            .collect();
        for b in lba..lba + n {
            self.write(b, &block);
        }
    }

    /// Deallocates `n` blocks from `lba`: they read as zeroes.
    pub fn deallocate(&mut self, lba: u64, n: u64) {
        let bs = self.block_size;
        for b in lba as usize..(lba + n) as usize {
            self.mapped[b] = false;
            self.stored[b * bs..(b + 1) * bs].fill(0);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_blocks_read_back_and_unwritten_read_zero() {
        let mut m = Media::new(16, 512);
        assert_eq!(m.read(0, 16), vec![0; 16 * 512]);
        let data: Vec<u8> = (0..1024).map(|i| (i * 7 % 251) as u8).collect();
        m.write(3, &data);
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
        m.write(0, &data);
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

    #[test]
    fn fill_writes_the_pattern_little_endian() {
        let mut m = Media::new(2, 512);
        m.fill(1, 1, 0xA1B2_C3D4);
        let b = m.read(1, 1);
        assert_eq!(&b[0..8], &[0xD4, 0xC3, 0xB2, 0xA1, 0xD4, 0xC3, 0xB2, 0xA1]);
        assert_eq!(m.read(0, 1), vec![0; 512]);
    }
}
