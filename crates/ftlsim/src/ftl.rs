//! The flash-translation layer: page-mapped (every logical page maps to any
//! physical page), one write frontier, garbage collection when the free
//! blocks fall below a watermark, TRIM, secure erase.
//!
//! Memory is constant per page: the logical-to-physical map and its inverse
//! are `Vec<u32>`; per block, a valid count and the links of the greedy
//! victim index (one doubly linked list per valid count, so the block with
//! the fewest valid pages is found in at most `pages_per_block + 1` steps).
//! Nothing here knows about time; [`crate::Ssd`] turns the [`Work`] each
//! call returns into service times.

use std::collections::VecDeque;

use crate::error::ConfigError;

const NONE: u32 = u32::MAX;

/// How garbage collection picks its victim block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The closed block with the fewest valid pages (ties: any).
    Greedy,
    /// The block closed longest ago (least recently written, "LRW"/FIFO).
    Fifo,
}

/// The flash geometry and cleaning policy.
#[derive(Debug, Clone, PartialEq)]
pub struct FtlConfig {
    /// Logical pages the host sees (U).
    pub logical_pages: u64,
    /// Pages per erase block (N_p).
    pub pages_per_block: u32,
    /// Over-provisioning ρ = (T − U) / U, where T is the physical page count:
    /// T = U × (1 + ρ), rounded up to whole blocks. 0.1 means 10 % spare.
    pub over_provisioning: f64,
    /// Garbage collection runs while fewer than this many blocks are free
    /// (at least 2: one to open, one for the copies of the victim).
    pub gc_watermark_blocks: u32,
    /// Victim selection.
    pub policy: Policy,
}

impl FtlConfig {
    /// `logical_pages` with 64-page blocks, 10 % over-provisioning, greedy
    /// cleaning at a watermark of 2 free blocks.
    pub fn new(logical_pages: u64) -> Self {
        Self {
            logical_pages,
            pages_per_block: 64,
            over_provisioning: 0.1,
            gc_watermark_blocks: 2,
            policy: Policy::Greedy,
        }
    }

    /// Physical erase blocks: ⌈U × (1 + ρ) / N_p⌉.
    pub fn physical_blocks(&self) -> u64 {
        let pages = (self.logical_pages as f64 * (1.0 + self.over_provisioning)).ceil() as u64;
        pages.div_ceil(u64::from(self.pages_per_block.max(1)))
    }

    /// Checks the geometry: enough spare blocks that cleaning always frees
    /// space, and page numbers that fit the `u32` maps.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError(m));
        if self.logical_pages == 0 {
            return bad("the simulated SSD needs at least one logical page".into());
        }
        if self.pages_per_block < 2 {
            return bad("pages per block must be at least 2".into());
        }
        if !(self.over_provisioning.is_finite() && self.over_provisioning > 0.0) {
            return bad(format!(
                "over-provisioning must be a positive fraction (e.g. 0.1), not {}",
                self.over_provisioning
            ));
        }
        if self.gc_watermark_blocks < 2 {
            return bad("the garbage-collection watermark must be at least 2 free blocks".into());
        }
        let phys = self.physical_blocks();
        let phys_pages = phys * u64::from(self.pages_per_block);
        if phys_pages >= u64::from(NONE) {
            return bad(format!(
                "{phys_pages} physical pages do not fit the 32-bit page map: use fewer logical pages or larger pages"
            ));
        }
        let logical_blocks = self.logical_pages.div_ceil(u64::from(self.pages_per_block));
        let needed = logical_blocks + u64::from(self.gc_watermark_blocks) + 1;
        if phys < needed {
            return bad(format!(
                "{phys} physical blocks leave too little spare for cleaning ({needed} needed): raise the over-provisioning or the logical size"
            ));
        }
        Ok(())
    }
}

/// Flash operations one host command caused (in main flash).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Page reads (host reads of mapped pages, and garbage-collection copies).
    pub reads: u64,
    /// Page programs (the host's page and garbage-collection copies).
    pub programs: u64,
    /// Block erases.
    pub erases: u64,
}

impl Work {
    fn add(&mut self, o: Work) {
        self.reads += o.reads;
        self.programs += o.programs;
        self.erases += o.erases;
    }
}

/// Running counts since creation or the last secure erase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FtlStats {
    /// Pages the host wrote.
    pub host_writes: u64,
    /// Pages programmed in flash (host pages plus garbage-collection copies).
    pub flash_writes: u64,
    /// Valid pages garbage collection copied.
    pub gc_copies: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Pages the host trimmed that were mapped.
    pub trimmed: u64,
}

impl FtlStats {
    /// Flash page writes per host page write (1.0 before any write).
    pub fn write_amplification(&self) -> f64 {
        if self.host_writes == 0 {
            1.0
        } else {
            self.flash_writes as f64 / self.host_writes as f64
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    Open,
    Closed,
}

/// The flash-translation layer.
#[derive(Debug, Clone)]
pub struct Ftl {
    cfg: FtlConfig,
    np: u32,
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    valid: Vec<u32>,
    state: Vec<State>,
    free: VecDeque<u32>,
    /// Closed blocks in the order they were closed (FIFO policy only).
    closed_order: VecDeque<u32>,
    /// Greedy index: head block per valid count, and per-block links.
    bucket_head: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    frontier: u32,
    frontier_used: u32,
    stats: FtlStats,
}

impl Ftl {
    /// A fresh (fully erased, nothing mapped) FTL.
    pub fn new(cfg: FtlConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let blocks = cfg.physical_blocks() as usize;
        let np = cfg.pages_per_block;
        let mut f = Self {
            l2p: vec![NONE; cfg.logical_pages as usize],
            p2l: vec![NONE; blocks * np as usize],
            valid: vec![0; blocks],
            state: vec![State::Free; blocks],
            free: VecDeque::with_capacity(blocks),
            closed_order: VecDeque::with_capacity(blocks),
            bucket_head: vec![NONE; np as usize + 1],
            next: vec![NONE; blocks],
            prev: vec![NONE; blocks],
            frontier: 0,
            frontier_used: 0,
            stats: FtlStats::default(),
            np,
            cfg,
        };
        f.secure_erase();
        Ok(f)
    }

    /// The configuration.
    pub fn config(&self) -> &FtlConfig {
        &self.cfg
    }

    /// Counts since creation or the last secure erase.
    pub fn stats(&self) -> FtlStats {
        self.stats
    }

    /// Zeroes the counts (the map is kept), to measure a steady state.
    pub fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
    }

    /// Physical erase blocks.
    pub fn physical_blocks(&self) -> usize {
        self.valid.len()
    }

    /// Blocks currently erased and unused.
    pub fn free_blocks(&self) -> usize {
        self.free.len()
    }

    /// Logical pages currently mapped.
    pub fn mapped_pages(&self) -> u64 {
        self.valid.iter().map(|&v| u64::from(v)).sum()
    }

    /// Whether logical page `lpn` holds data.
    pub fn is_mapped(&self, lpn: u64) -> bool {
        self.l2p.get(lpn as usize).is_some_and(|&p| p != NONE)
    }

    /// Resets everything to fresh: every block erased, nothing mapped,
    /// counts zeroed (the drive after a purge).
    pub fn secure_erase(&mut self) {
        self.l2p.fill(NONE);
        self.p2l.fill(NONE);
        self.valid.fill(0);
        self.state.fill(State::Free);
        self.bucket_head.fill(NONE);
        self.next.fill(NONE);
        self.prev.fill(NONE);
        self.closed_order.clear();
        self.free.clear();
        self.free.extend(0..self.valid.len() as u32);
        self.frontier = self.free.pop_front().unwrap_or(0);
        self.state[self.frontier as usize] = State::Open;
        self.frontier_used = 0;
        self.stats = FtlStats::default();
    }

    /// A host read of logical page `lpn`: one page read if it is mapped.
    pub fn read(&mut self, lpn: u64) -> Work {
        Work {
            reads: u64::from(self.is_mapped(lpn)),
            ..Work::default()
        }
    }

    /// TRIM of logical page `lpn`: its physical page becomes invalid.
    pub fn trim(&mut self, lpn: u64) {
        let Some(&ppn) = self.l2p.get(lpn as usize) else {
            return;
        };
        if ppn != NONE {
            self.invalidate(ppn);
            self.l2p[lpn as usize] = NONE;
            self.stats.trimmed += 1;
        }
    }

    /// A host write of logical page `lpn` (ignored past the end): cleans
    /// first if free blocks are below the watermark, then programs the page
    /// at the frontier.
    pub fn write(&mut self, lpn: u64) -> Work {
        let mut w = Work::default();
        if lpn >= self.cfg.logical_pages {
            return w;
        }
        while self.free.len() < self.cfg.gc_watermark_blocks as usize {
            match self.collect_one() {
                Some(gw) => w.add(gw),
                None => break,
            }
        }
        let old = self.l2p[lpn as usize];
        if old != NONE {
            self.invalidate(old);
        }
        self.place(lpn as u32);
        self.stats.host_writes += 1;
        self.stats.flash_writes += 1;
        w.programs += 1;
        w
    }

    fn block_of(&self, ppn: u32) -> u32 {
        ppn / self.np
    }

    fn invalidate(&mut self, ppn: u32) {
        let b = self.block_of(ppn);
        self.p2l[ppn as usize] = NONE;
        if self.state[b as usize] == State::Closed {
            self.unlink(b);
            self.valid[b as usize] -= 1;
            self.link(b);
        } else {
            self.valid[b as usize] -= 1;
        }
    }

    /// Programs `lpn` at the frontier, opening a new block when it is full.
    fn place(&mut self, lpn: u32) {
        if self.frontier_used == self.np {
            self.close_frontier();
        }
        let ppn = self.frontier * self.np + self.frontier_used;
        self.frontier_used += 1;
        self.p2l[ppn as usize] = lpn;
        self.l2p[lpn as usize] = ppn;
        self.valid[self.frontier as usize] += 1;
    }

    fn close_frontier(&mut self) {
        let b = self.frontier;
        self.state[b as usize] = State::Closed;
        if self.cfg.policy == Policy::Fifo {
            self.closed_order.push_back(b);
        }
        self.link(b);
        // validate() guarantees spare blocks, and cleaning keeps the free
        // list at the watermark (≥ 2) before every host page, so a free
        // block is there.
        self.frontier = self
            .free
            .pop_front()
            .expect("FtlConfig::validate keeps a free block for the frontier");
        self.state[self.frontier as usize] = State::Open;
        self.frontier_used = 0;
    }

    fn link(&mut self, b: u32) {
        let v = self.valid[b as usize] as usize;
        let h = self.bucket_head[v];
        self.next[b as usize] = h;
        self.prev[b as usize] = NONE;
        if h != NONE {
            self.prev[h as usize] = b;
        }
        self.bucket_head[v] = b;
    }

    fn unlink(&mut self, b: u32) {
        let (p, n) = (self.prev[b as usize], self.next[b as usize]);
        if p != NONE {
            self.next[p as usize] = n;
        } else {
            self.bucket_head[self.valid[b as usize] as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
        self.next[b as usize] = NONE;
        self.prev[b as usize] = NONE;
    }

    fn victim(&mut self) -> Option<u32> {
        match self.cfg.policy {
            Policy::Greedy => self.bucket_head.iter().copied().find(|&h| h != NONE),
            Policy::Fifo => self.closed_order.front().copied(),
        }
    }

    /// Cleans one victim block: copies its valid pages to the frontier and
    /// erases it. `None` when no block is closed.
    fn collect_one(&mut self) -> Option<Work> {
        let b = self.victim()?;
        self.unlink(b);
        if self.cfg.policy == Policy::Fifo {
            self.closed_order.pop_front();
        }
        // Out of the closed set while its pages move: invalidate() must not
        // relink it.
        self.state[b as usize] = State::Open;
        let mut w = Work::default();
        let start = b * self.np;
        for ppn in start..start + self.np {
            let lpn = self.p2l[ppn as usize];
            if lpn == NONE {
                continue;
            }
            self.p2l[ppn as usize] = NONE;
            self.valid[b as usize] -= 1;
            self.place(lpn);
            w.reads += 1;
            w.programs += 1;
            self.stats.gc_copies += 1;
            self.stats.flash_writes += 1;
        }
        debug_assert_eq!(self.valid[b as usize], 0);
        self.state[b as usize] = State::Free;
        self.free.push_back(b);
        w.erases += 1;
        self.stats.erases += 1;
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn small(policy: Policy) -> Ftl {
        let mut c = FtlConfig::new(64 * 32);
        c.pages_per_block = 32;
        c.over_provisioning = 0.25;
        c.policy = policy;
        Ftl::new(c).unwrap()
    }

    /// Independent check of the map: every mapped logical page points to a
    /// physical page that points back, and valid counts match.
    fn consistent(f: &Ftl) {
        let mut counts = vec![0u32; f.valid.len()];
        for (l, &p) in f.l2p.iter().enumerate() {
            if p != NONE {
                assert_eq!(f.p2l[p as usize], l as u32);
                counts[(p / f.np) as usize] += 1;
            }
        }
        assert_eq!(counts, f.valid);
        assert_eq!(
            f.p2l.iter().filter(|&&l| l != NONE).count() as u64,
            f.mapped_pages()
        );
    }

    #[test]
    fn sequential_fill_has_no_garbage_collection() {
        let mut f = small(Policy::Greedy);
        for l in 0..f.config().logical_pages {
            f.write(l);
        }
        let s = f.stats();
        assert_eq!((s.host_writes, s.flash_writes, s.erases), (2048, 2048, 0));
        // Rewriting sequentially invalidates whole blocks: cleaning copies nothing.
        for l in 0..2048 {
            f.write(l);
        }
        let s = f.stats();
        assert_eq!(s.gc_copies, 0);
        assert!(s.erases > 0);
        consistent(&f);
    }

    #[test]
    fn random_overwrites_keep_the_map_consistent_and_amplify() {
        for policy in [Policy::Greedy, Policy::Fifo] {
            let mut f = small(policy);
            let mut r = SplitMix64::new(7);
            for _ in 0..20_000 {
                f.write(r.below(2048));
            }
            consistent(&f);
            assert_eq!(f.mapped_pages(), 2048);
            let s = f.stats();
            assert!(s.gc_copies > 0 && s.write_amplification() > 1.5, "{s:?}");
            assert_eq!(s.flash_writes, s.host_writes + s.gc_copies);
        }
    }

    #[test]
    fn trim_frees_pages_and_cleaning_then_copies_less() {
        let mut a = small(Policy::Greedy);
        let mut b = small(Policy::Greedy);
        for l in 0..2048 {
            a.write(l);
            b.write(l);
        }
        // b trims half its space: those pages never need copying again.
        for l in 0..1024 {
            b.trim(l);
        }
        assert!(!b.is_mapped(3) && b.is_mapped(1500));
        assert_eq!(b.stats().trimmed, 1024);
        let (mut ra, mut rb) = (SplitMix64::new(1), SplitMix64::new(1));
        for _ in 0..10_000 {
            a.write(ra.below(2048));
            b.write(1024 + rb.below(1024));
        }
        consistent(&b);
        assert!(
            b.stats().gc_copies * 2 < a.stats().gc_copies,
            "{:?} vs {:?}",
            b.stats(),
            a.stats()
        );
    }

    #[test]
    fn secure_erase_resets_to_fresh() {
        let mut f = small(Policy::Fifo);
        let mut r = SplitMix64::new(3);
        for _ in 0..5000 {
            f.write(r.below(2048));
        }
        f.secure_erase();
        assert_eq!(f.mapped_pages(), 0);
        assert_eq!(f.free_blocks(), f.physical_blocks() - 1);
        assert_eq!(f.stats(), FtlStats::default());
        // Fresh again: a full sequential pass causes no cleaning.
        for l in 0..2048 {
            f.write(l);
        }
        assert_eq!(f.stats().erases, 0);
        consistent(&f);
    }

    #[test]
    fn too_little_spare_is_refused_with_advice() {
        let mut c = FtlConfig::new(64);
        c.pages_per_block = 64;
        c.over_provisioning = 0.01;
        let e = Ftl::new(c).unwrap_err();
        assert!(e.to_string().contains("raise the over-provisioning"), "{e}");
        let mut c = FtlConfig::new(1000);
        c.over_provisioning = -0.1;
        assert!(Ftl::new(c).is_err());
    }
}
