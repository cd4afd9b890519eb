//! The medium model the drive emulators (`drivelab-tcmuemu`,
//! `drivelab-nvmeemu`) keep beside their data (issue 28 item 3): which
//! logical blocks are mapped, and, when the FTL is chosen, the
//! flash-translation layer every write, unmap and erase goes through.
//!
//! The emulators keep the bytes (a backing file, an encrypted buffer); this
//! model keeps what a drive's controller knows about them:
//! - [`MediaKind::Memory`]: only the map of unmapped blocks (an unmapped
//!   block reads as zeroes, whatever the store holds there);
//! - [`MediaKind::Ftl`]: the map and a page-mapped [`Ftl`] of 4 KiB pages,
//!   so host writes cost flash programs plus garbage-collection copies,
//!   an unmap trims the pages it empties, and a block erase returns the
//!   flash to fresh. Its lifetime counters are what a drive's SMART
//!   NAND-write attributes report next to the host writes.
//!
//! Writes come from the host ([`Origin::Host`]) or from the drive itself
//! ([`Origin::Drive`]: an overwrite sanitize, an enhanced security erase);
//! both program flash, only the host's count as host writes.

use std::str::FromStr;

use crate::error::ConfigError;
use crate::ftl::{Ftl, FtlConfig, FtlStats};

/// Bytes per flash page of the FTL medium.
pub const PAGE_BYTES: u64 = 4096;
/// Pages per erase block of the FTL medium.
pub const PAGES_PER_BLOCK: u32 = 32;
/// Over-provisioning of the FTL medium (spare flash beyond the user
/// capacity): 12.5 %, as a consumer SSD's 7 % plus its reserve.
pub const OVER_PROVISIONING: f64 = 0.125;

/// Which medium an emulator serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MediaKind {
    /// Plain memory (or the backing file): a write is a write.
    #[default]
    Memory,
    /// The FTL model in front of the store.
    Ftl,
}

impl MediaKind {
    /// The option value that names it.
    pub fn name(self) -> &'static str {
        match self {
            MediaKind::Memory => "memory",
            MediaKind::Ftl => "ftl",
        }
    }
}

impl FromStr for MediaKind {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "memory" => Ok(MediaKind::Memory),
            "ftl" => Ok(MediaKind::Ftl),
            other => Err(ConfigError(format!("media {other:?}: give memory or ftl"))),
        }
    }
}

/// Who caused a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The host (WRITE, WRITE SAME, SCT Write Same, Write Zeroes).
    Host,
    /// The drive itself (an overwrite sanitize, a security erase pattern).
    Drive,
}

/// Lifetime counts of the medium (a block erase does not reset them, as
/// a drive's SMART counters survive a sanitize).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MediaStats {
    /// Flash pages the host's writes programmed.
    pub host_pages: u64,
    /// Flash pages the drive's own writes programmed.
    pub drive_pages: u64,
    /// Flash pages programmed in all: host, drive and garbage-collection
    /// copies (the NAND writes).
    pub nand_pages: u64,
    /// Valid pages garbage collection copied.
    pub gc_copies: u64,
    /// Flash blocks erased (by garbage collection and by block erases).
    pub block_erases: u64,
    /// Whole-medium block erases (the FTL reset to fresh).
    pub resets: u64,
}

impl MediaStats {
    /// NAND page programs per host or drive page (1.0 before any write).
    pub fn write_amplification(&self) -> f64 {
        let asked = self.host_pages + self.drive_pages;
        if asked == 0 {
            1.0
        } else {
            self.nand_pages as f64 / asked as f64
        }
    }
}

/// The medium as a drive emulator's state file reports it: its kind, the
/// blocks mapped, the lifetime NAND counts with the write amplification,
/// and (with the FTL) whether it is fresh and how much flash is mapped and
/// free.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MediaReport {
    /// "memory" or "ftl".
    pub kind: &'static str,
    /// Logical blocks that hold data.
    pub mapped_blocks: u64,
    /// Nothing mapped, the flash as it left the factory.
    pub fresh: bool,
    /// Bytes per flash page.
    pub page_bytes: u64,
    /// The lifetime counts.
    #[serde(flatten)]
    pub stats: MediaStats,
    /// NAND programs per page asked for.
    pub write_amplification: f64,
    /// Flash pages mapped (FTL only).
    pub flash_pages_mapped: Option<u64>,
    /// Flash blocks erased and unused (FTL only).
    pub flash_blocks_free: Option<usize>,
    /// Flash blocks in all (FTL only).
    pub flash_blocks: Option<usize>,
}

/// A medium of `blocks` logical blocks of `block_size` bytes.
#[derive(Debug, Clone)]
pub struct BlockMedia {
    kind: MediaKind,
    block_size: u64,
    blocks: u64,
    /// One bit per logical block: set when it holds data.
    mapped: Vec<u64>,
    ftl: Option<Ftl>,
    /// The FTL's counts from before its last reset.
    before: FtlStats,
    host_pages: u64,
    drive_pages: u64,
    resets: u64,
}

impl BlockMedia {
    /// A fresh medium: nothing mapped, the FTL (if chosen) fully erased.
    pub fn new(kind: MediaKind, blocks: u64, block_size: u64) -> Result<Self, ConfigError> {
        if block_size == 0 {
            return Err(ConfigError("the block size must be positive".into()));
        }
        let mut m = Self::memory(blocks, block_size);
        if kind == MediaKind::Ftl {
            m.ftl = Some(Ftl::new(Self::ftl_config(blocks * block_size))?);
            m.kind = kind;
        }
        Ok(m)
    }

    /// A plain-memory medium (the map alone), which nothing can refuse; a
    /// block size of 0 is taken as 1.
    pub fn memory(blocks: u64, block_size: u64) -> Self {
        BlockMedia {
            kind: MediaKind::Memory,
            block_size: block_size.max(1),
            blocks,
            mapped: vec![0; blocks.div_ceil(64) as usize],
            ftl: None,
            before: FtlStats::default(),
            host_pages: 0,
            drive_pages: 0,
            resets: 0,
        }
    }

    fn ftl_config(bytes: u64) -> FtlConfig {
        let mut c = FtlConfig::new(bytes.div_ceil(PAGE_BYTES).max(1));
        c.pages_per_block = PAGES_PER_BLOCK;
        c.over_provisioning = OVER_PROVISIONING;
        c
    }

    /// Which medium this is.
    pub fn kind(&self) -> MediaKind {
        self.kind
    }

    /// Logical blocks.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// The FTL, when the medium has one.
    pub fn ftl(&self) -> Option<&Ftl> {
        self.ftl.as_ref()
    }

    /// Whether logical block `lba` holds data (an unmapped one reads as
    /// zeroes).
    pub fn is_mapped(&self, lba: u64) -> bool {
        lba < self.blocks && self.mapped[(lba / 64) as usize] & (1 << (lba % 64)) != 0
    }

    /// Logical blocks that hold data.
    pub fn mapped_blocks(&self) -> u64 {
        self.mapped.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Whether the medium is as it left the factory: nothing mapped and,
    /// with the FTL, every flash page unmapped.
    pub fn is_fresh(&self) -> bool {
        self.mapped_blocks() == 0 && self.ftl.as_ref().is_none_or(|f| f.mapped_pages() == 0)
    }

    fn set(&mut self, lba: u64, on: bool) {
        let (w, bit) = ((lba / 64) as usize, 1u64 << (lba % 64));
        if on {
            self.mapped[w] |= bit;
        } else {
            self.mapped[w] &= !bit;
        }
    }

    /// The flash pages blocks `lba..lba + n` touch (clipped to the medium).
    fn pages(&self, lba: u64, n: u64) -> std::ops::Range<u64> {
        let end = lba.saturating_add(n).min(self.blocks);
        if end <= lba {
            return 0..0;
        }
        let first = lba * self.block_size / PAGE_BYTES;
        let last = (end * self.block_size).div_ceil(PAGE_BYTES);
        first..last
    }

    /// Blocks `lba..lba + n` written (clipped to the medium): mapped, and
    /// with the FTL every page they touch programmed (a partial page is
    /// read, merged and programmed whole).
    pub fn write(&mut self, lba: u64, n: u64, origin: Origin) {
        let end = lba.saturating_add(n).min(self.blocks);
        for b in lba..end {
            self.set(b, true);
        }
        let pages = self.pages(lba, n);
        let count = pages.end - pages.start;
        if let Some(f) = &mut self.ftl {
            for p in pages {
                f.write(p);
            }
            match origin {
                Origin::Host => self.host_pages += count,
                Origin::Drive => self.drive_pages += count,
            }
        }
    }

    /// Blocks `lba..lba + n` unmapped (clipped to the medium): they read
    /// as zeroes; with the FTL every page left without a mapped block is
    /// trimmed.
    pub fn unmap(&mut self, lba: u64, n: u64) {
        let end = lba.saturating_add(n).min(self.blocks);
        for b in lba..end {
            self.set(b, false);
        }
        let pages = self.pages(lba, n);
        let (bs, blocks, mapped) = (self.block_size, self.blocks, &self.mapped);
        let Some(f) = &mut self.ftl else { return };
        for p in pages {
            let first = p * PAGE_BYTES / bs;
            let last = ((p + 1) * PAGE_BYTES).div_ceil(bs).min(blocks);
            if (first..last).all(|b| mapped[(b / 64) as usize] & (1 << (b % 64)) == 0) {
                f.trim(p);
            }
        }
    }

    /// Blocks `lba..lba + n` mapped without a flash write (clipped to the
    /// medium): what a cryptographic erase that leaves noise in every block
    /// (the old data under a key no longer held) makes of the map.
    pub fn mark_mapped(&mut self, lba: u64, n: u64) {
        for b in lba..lba.saturating_add(n).min(self.blocks) {
            self.set(b, true);
        }
    }

    /// A block erase of the whole medium: nothing mapped, and the FTL back
    /// to fresh (every flash block erased; the lifetime counts go on).
    pub fn reset(&mut self) {
        self.mapped.fill(0);
        if let Some(f) = &mut self.ftl {
            let s = f.stats();
            self.before.host_writes += s.host_writes;
            self.before.flash_writes += s.flash_writes;
            self.before.gc_copies += s.gc_copies;
            self.before.erases += s.erases + f.physical_blocks() as u64;
            self.before.trimmed += s.trimmed;
            f.secure_erase();
        }
        self.resets += 1;
    }

    /// A new geometry (a FORMAT UNIT that changed the block length): the
    /// medium erased as [`BlockMedia::reset`] does, with `blocks` blocks
    /// of `block_size` bytes over the same flash.
    pub fn reformat(&mut self, blocks: u64, block_size: u64) -> Result<(), ConfigError> {
        if block_size == 0 {
            return Err(ConfigError("the block size must be positive".into()));
        }
        self.reset();
        self.blocks = blocks;
        self.block_size = block_size;
        self.mapped = vec![0; blocks.div_ceil(64) as usize];
        let pages = (blocks * block_size).div_ceil(PAGE_BYTES).max(1);
        if self
            .ftl
            .as_ref()
            .is_some_and(|f| f.config().logical_pages != pages)
        {
            self.ftl = Some(Ftl::new(Self::ftl_config(blocks * block_size))?);
        }
        Ok(())
    }

    /// Marks blocks `lba..lba + n` as holding data found in the store when
    /// the emulator started (programmed in the FTL, counted nowhere).
    pub fn preload(&mut self, lba: u64, n: u64) {
        let (host, drive) = (self.host_pages, self.drive_pages);
        self.write(lba, n, Origin::Drive);
        (self.host_pages, self.drive_pages) = (host, drive);
        if let Some(f) = &mut self.ftl {
            f.reset_stats();
        }
    }

    /// What a drive emulator's state file says of its medium.
    pub fn report(&self) -> MediaReport {
        let s = self.stats();
        let f = self.ftl.as_ref();
        MediaReport {
            kind: self.kind.name(),
            mapped_blocks: self.mapped_blocks(),
            fresh: self.is_fresh(),
            page_bytes: PAGE_BYTES,
            stats: s,
            write_amplification: s.write_amplification(),
            flash_pages_mapped: f.map(|f| f.mapped_pages()),
            flash_blocks_free: f.map(|f| f.free_blocks()),
            flash_blocks: f.map(|f| f.physical_blocks()),
        }
    }

    /// Lifetime counts (all zero on the plain-memory medium).
    pub fn stats(&self) -> MediaStats {
        let now = self.ftl.as_ref().map(|f| f.stats()).unwrap_or_default();
        MediaStats {
            host_pages: self.host_pages,
            drive_pages: self.drive_pages,
            nand_pages: self.before.flash_writes + now.flash_writes,
            gc_copies: self.before.gc_copies + now.gc_copies,
            block_erases: self.before.erases + now.erases,
            resets: self.resets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// 8 MiB of 512-byte blocks.
    const BLOCKS: u64 = 16384;

    #[test]
    fn the_option_names_the_medium() {
        assert_eq!("ftl".parse::<MediaKind>(), Ok(MediaKind::Ftl));
        assert_eq!("memory".parse::<MediaKind>(), Ok(MediaKind::Memory));
        let e = "flash".parse::<MediaKind>().unwrap_err();
        assert!(e.to_string().contains("give memory or ftl"), "{e}");
    }

    #[test]
    fn both_media_keep_the_map_of_unmapped_blocks() {
        for kind in [MediaKind::Memory, MediaKind::Ftl] {
            let mut m = BlockMedia::new(kind, BLOCKS, 512).unwrap();
            assert!(m.is_fresh());
            m.write(10, 20, Origin::Host);
            assert!(m.is_mapped(10) && m.is_mapped(29) && !m.is_mapped(30) && !m.is_mapped(9));
            assert_eq!(m.mapped_blocks(), 20);
            m.unmap(12, 4);
            assert!(!m.is_mapped(12) && !m.is_mapped(15) && m.is_mapped(16));
            assert_eq!(m.mapped_blocks(), 16);
            // Past the end: clipped, nothing panics.
            m.write(BLOCKS - 1, 8, Origin::Host);
            assert!(m.is_mapped(BLOCKS - 1) && !m.is_mapped(BLOCKS));
            m.reset();
            assert!(m.is_fresh(), "{kind:?}");
        }
        let m = BlockMedia::new(MediaKind::Memory, BLOCKS, 512).unwrap();
        assert_eq!(m.stats(), MediaStats::default());
        assert!(m.ftl().is_none());
    }

    #[test]
    fn an_unmap_trims_only_the_pages_it_empties() {
        let mut m = BlockMedia::new(MediaKind::Ftl, BLOCKS, 512).unwrap();
        m.write(0, 16, Origin::Host); // pages 0 and 1
        let f = |m: &BlockMedia| m.ftl().map(|f| f.mapped_pages());
        assert_eq!(f(&m), Some(2));
        m.unmap(0, 4); // half of page 0: still mapped
        assert_eq!(f(&m), Some(2));
        m.unmap(4, 4); // page 0 empty now
        assert_eq!(f(&m), Some(1));
        assert!(m.ftl().is_some_and(|f| !f.is_mapped(0) && f.is_mapped(1)));
    }

    #[test]
    fn random_overwrite_of_a_full_drive_amplifies_and_a_block_erase_makes_it_fresh() {
        let mut m = BlockMedia::new(MediaKind::Ftl, BLOCKS, 512).unwrap();
        m.write(0, BLOCKS, Origin::Host);
        let filled = m.stats();
        assert_eq!(filled.host_pages, BLOCKS * 512 / PAGE_BYTES);
        assert_eq!(
            filled.nand_pages, filled.host_pages,
            "a sequential fill copies nothing"
        );
        let mut r = SplitMix64::new(28);
        for _ in 0..4 * BLOCKS / 8 {
            m.write(r.below(BLOCKS / 8) * 8, 8, Origin::Host);
        }
        let s = m.stats();
        assert!(s.gc_copies > 0 && s.write_amplification() > 1.5, "{s:?}");
        assert_eq!(s.nand_pages, s.host_pages + s.gc_copies);
        m.reset();
        assert!(m.is_fresh());
        let after = m.stats();
        // Lifetime counts go on; the flash is fresh: a fill copies nothing.
        assert_eq!((after.nand_pages, after.resets), (s.nand_pages, 1));
        assert!(after.block_erases > s.block_erases);
        m.write(0, BLOCKS, Origin::Drive);
        let d = m.stats();
        assert_eq!(d.drive_pages, BLOCKS * 512 / PAGE_BYTES);
        assert_eq!(d.gc_copies, s.gc_copies);
        assert_eq!(d.host_pages, s.host_pages);
    }

    #[test]
    fn a_reformat_to_another_block_size_keeps_the_flash_and_its_counts() {
        let mut m = BlockMedia::new(MediaKind::Ftl, 32263, 520).unwrap();
        m.write(0, 100, Origin::Host);
        let before = m.stats();
        m.reformat(32768, 512).unwrap();
        assert_eq!(m.blocks(), 32768);
        assert!(m.is_fresh());
        assert_eq!(m.stats().host_pages, before.host_pages);
        m.write(32767, 1, Origin::Host);
        assert!(m.is_mapped(32767));
    }

    #[test]
    fn preloaded_blocks_are_mapped_and_counted_nowhere() {
        let mut m = BlockMedia::new(MediaKind::Ftl, BLOCKS, 512).unwrap();
        m.preload(0, 64);
        assert_eq!(m.mapped_blocks(), 64);
        assert_eq!(m.stats(), MediaStats::default());
        assert_eq!(m.ftl().map(|f| f.mapped_pages()), Some(8));
    }

    #[test]
    fn a_drive_too_small_for_the_ftl_is_refused_with_advice() {
        let e = BlockMedia::new(MediaKind::Ftl, 16, 512).unwrap_err();
        assert!(
            e.to_string()
                .contains("raise the over-provisioning or the logical size"),
            "{e}"
        );
    }
}
