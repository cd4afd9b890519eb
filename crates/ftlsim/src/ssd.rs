//! The simulated SSD's clock: turns the flash operations of each host page
//! ([`Work`]) into a completion time.
//!
//! The flash has `units` independent channels/dies. Each host page goes to
//! the unit that is free earliest and occupies it for its share of the work
//! it caused: one program (or one read) plus, for a write that triggered
//! cleaning, the copies (a read and a program each) and the erases. So the
//! sustained write rate is `units / (t_prog + (A − 1)(t_read + t_prog) +
//! (erases per host page) t_erase)` and a single write's latency is at
//! least one program time.
//!
//! The optional fast-write cache (SLC-like) takes host pages at its own
//! program time while it has room; each cached page's main-flash work
//! (program and cleaning, computed when the host wrote it, so the map and
//! the counts are always exact) is owed and paid by the units in their idle
//! time, page by page. A sustained write that leaves no idle time fills the
//! cache and then runs at the main-flash rate: the cliff at the cache size.

use std::collections::VecDeque;

use crate::error::ConfigError;
use crate::ftl::{Ftl, FtlConfig, FtlStats, Work};

/// Flash timing, in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Page read time.
    pub page_read_ns: u64,
    /// Page program time (main flash).
    pub page_program_ns: u64,
    /// Block erase time.
    pub block_erase_ns: u64,
    /// Independent channels × dies working in parallel (≥ 1).
    pub units: u32,
    /// Fast-write cache size in pages (0: none).
    pub cache_pages: u64,
    /// Program time of a cached page.
    pub cache_program_ns: u64,
}

impl Default for Timing {
    /// A TLC-like die: 60 µs read, 600 µs program, 3 ms erase, one unit,
    /// no cache.
    fn default() -> Self {
        Self {
            page_read_ns: 60_000,
            page_program_ns: 600_000,
            block_erase_ns: 3_000_000,
            units: 1,
            cache_pages: 0,
            cache_program_ns: 150_000,
        }
    }
}

impl Timing {
    /// Unit time the given work takes.
    pub fn cost_ns(&self, w: Work) -> u64 {
        w.reads * self.page_read_ns
            + w.programs * self.page_program_ns
            + w.erases * self.block_erase_ns
    }

    /// Predicted sustained random-write IOPS (pages per second) at write
    /// amplification `wa` with blocks of `pages_per_block` pages: each host
    /// page costs a program, `wa − 1` copies and `wa / pages_per_block`
    /// erases (every cleaned block yields its invalid pages, and
    /// `pages_per_block` flash writes fill one block).
    pub fn sustained_write_iops(&self, wa: f64, pages_per_block: u32) -> f64 {
        let per_page = self.page_program_ns as f64
            + (wa - 1.0) * (self.page_read_ns + self.page_program_ns) as f64
            + wa / f64::from(pages_per_block) * self.block_erase_ns as f64;
        f64::from(self.units) * 1e9 / per_page
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.units == 0 {
            return Err(ConfigError(
                "the simulated SSD needs at least one flash unit".into(),
            ));
        }
        if self.page_program_ns == 0 {
            return Err(ConfigError("the page program time must be positive".into()));
        }
        Ok(())
    }
}

/// Counts of the timed device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SsdStats {
    /// The FTL's counts (main flash).
    pub ftl: FtlStats,
    /// Host pages taken by the fast-write cache.
    pub cache_writes: u64,
    /// Host pages read.
    pub host_reads: u64,
}

/// A timed simulated SSD: the FTL, the units' clocks, the cache.
#[derive(Debug, Clone)]
pub struct Ssd {
    ftl: Ftl,
    timing: Timing,
    free_at: Vec<u64>,
    /// Main-flash work owed for cached pages, oldest first (ns each).
    owed: VecDeque<u64>,
    cache_writes: u64,
    host_reads: u64,
}

impl Ssd {
    /// A fresh simulated SSD.
    pub fn new(cfg: FtlConfig, timing: Timing) -> Result<Self, ConfigError> {
        timing.validate()?;
        Ok(Self {
            ftl: Ftl::new(cfg)?,
            free_at: vec![0; timing.units as usize],
            owed: VecDeque::new(),
            cache_writes: 0,
            host_reads: 0,
            timing,
        })
    }

    /// The FTL.
    pub fn ftl(&self) -> &Ftl {
        &self.ftl
    }

    /// The timing.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Counts.
    pub fn stats(&self) -> SsdStats {
        SsdStats {
            ftl: self.ftl.stats(),
            cache_writes: self.cache_writes,
            host_reads: self.host_reads,
        }
    }

    /// Pages in the fast-write cache not yet folded into main flash.
    pub fn cache_occupancy(&self) -> u64 {
        self.owed.len() as u64
    }

    /// Pays owed cache folds with the units' idle time up to `now_ns`.
    fn fold_until(&mut self, now_ns: u64) {
        if self.owed.is_empty() {
            return;
        }
        for u in 0..self.free_at.len() {
            while self.free_at[u] < now_ns {
                match self.owed.pop_front() {
                    Some(c) => self.free_at[u] += c,
                    None => return,
                }
            }
        }
    }

    /// Occupies the earliest-free unit for `cost` from `now_ns`; returns the
    /// completion time.
    fn occupy(&mut self, now_ns: u64, cost: u64) -> u64 {
        let (u, _) = self
            .free_at
            .iter()
            .enumerate()
            .min_by_key(|&(_, &t)| t)
            .unwrap_or((0, &0));
        let done = self.free_at[u].max(now_ns) + cost;
        self.free_at[u] = done;
        done
    }

    /// A host page write arriving at `now_ns`; returns its completion time.
    pub fn write(&mut self, now_ns: u64, lpn: u64) -> u64 {
        self.fold_until(now_ns);
        let main = self.timing.cost_ns(self.ftl.write(lpn));
        if (self.owed.len() as u64) < self.timing.cache_pages {
            self.owed.push_back(main);
            self.cache_writes += 1;
            self.occupy(now_ns, self.timing.cache_program_ns)
        } else {
            self.occupy(now_ns, main)
        }
    }

    /// A host page read arriving at `now_ns`; returns its completion time
    /// (an unmapped page costs no flash read and completes at once).
    pub fn read(&mut self, now_ns: u64, lpn: u64) -> u64 {
        self.fold_until(now_ns);
        self.host_reads += 1;
        let cost = self.timing.cost_ns(self.ftl.read(lpn));
        if cost == 0 {
            return now_ns;
        }
        self.occupy(now_ns, cost)
    }

    /// TRIM of a host page (a map update: no flash time).
    pub fn trim(&mut self, lpn: u64) {
        self.ftl.trim(lpn);
    }

    /// Secure erase: every block erased, nothing mapped, cache empty, counts
    /// zeroed; the units are busy until `now_ns` plus one erase per block
    /// spread over the units. Returns that completion time.
    pub fn secure_erase(&mut self, now_ns: u64) -> u64 {
        self.ftl.secure_erase();
        self.owed.clear();
        self.cache_writes = 0;
        self.host_reads = 0;
        let per_unit = (self.ftl.physical_blocks() as u64).div_ceil(self.free_at.len() as u64)
            * self.timing.block_erase_ns;
        let start = self.free_at.iter().copied().max().unwrap_or(0).max(now_ns);
        self.free_at.fill(start + per_unit);
        start + per_unit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn cfg() -> FtlConfig {
        let mut c = FtlConfig::new(64 * 64);
        c.over_provisioning = 0.2;
        c
    }

    /// Closed loop at a queue depth of `units`: the next page arrives when
    /// the earliest outstanding one completes. Returns pages per second.
    fn saturated_rate(ssd: &mut Ssd, lpns: impl Iterator<Item = u64>) -> f64 {
        let mut now = 0u64;
        let mut n = 0u64;
        let start = ssd.free_at.iter().copied().max().unwrap_or(0);
        now = now.max(start);
        let t0 = now;
        for l in lpns {
            let done = ssd.write(now, l);
            now = now.max(*ssd.free_at.iter().min().unwrap_or(&done));
            n += 1;
        }
        let end = ssd.free_at.iter().copied().max().unwrap_or(now);
        n as f64 * 1e9 / (end - t0) as f64
    }

    #[test]
    fn fresh_rate_is_the_program_time_and_used_rate_follows_the_write_amplification() {
        let timing = Timing {
            units: 4,
            ..Timing::default()
        };
        let mut ssd = Ssd::new(cfg(), timing.clone()).unwrap();
        let mut r = SplitMix64::new(11);
        let fresh = saturated_rate(&mut ssd, (0..1000).map(|_| r.below(4096)));
        let expect_fresh = 4.0 * 1e9 / 600_000.0;
        assert!(
            (fresh / expect_fresh - 1.0).abs() < 0.01,
            "{fresh} vs {expect_fresh}"
        );
        // Season: 10 capacities of random writes.
        let _ = saturated_rate(&mut ssd, (0..40_960).map(|_| r.below(4096)));
        let before = ssd.stats().ftl;
        let used = saturated_rate(&mut ssd, (0..20_000).map(|_| r.below(4096)));
        let after = ssd.stats().ftl;
        let wa = (after.flash_writes - before.flash_writes) as f64
            / (after.host_writes - before.host_writes) as f64;
        let predicted = timing.sustained_write_iops(wa, 64);
        assert!(wa > 2.0, "{wa}");
        assert!(used < fresh / 2.0);
        assert!(
            (used / predicted - 1.0).abs() < 0.05,
            "used {used} predicted {predicted} (WA {wa})"
        );
    }

    #[test]
    fn sustained_writes_fall_off_a_cliff_at_the_cache_size() {
        let timing = Timing {
            cache_pages: 1000,
            ..Timing::default()
        };
        let mut ssd = Ssd::new(cfg(), timing).unwrap();
        let mut now = 0;
        let mut lat = Vec::new();
        for l in 0..3000u64 {
            let done = ssd.write(now, l % 4096);
            lat.push(done - now);
            now = done;
        }
        // Cached pages take the cache program time, the rest the main one.
        assert!(
            lat[..1000].iter().all(|&l| l == 150_000),
            "{:?}",
            &lat[990..1010]
        );
        assert!(lat[1000..].iter().all(|&l| l >= 600_000));
        assert_eq!(ssd.stats().cache_writes, 1000);
        assert_eq!(ssd.cache_occupancy(), 1000);
        // Idle time folds the cache: after a long pause it takes writes fast again.
        let later = now + 2_000_000_000;
        let done = ssd.write(later, 5);
        assert_eq!(done - later, 150_000);
        assert!(ssd.cache_occupancy() < 10);
    }

    #[test]
    fn secure_erase_takes_erase_time_and_restores_the_fresh_rate() {
        let mut ssd = Ssd::new(cfg(), Timing::default()).unwrap();
        let mut r = SplitMix64::new(5);
        let mut now = 0;
        for _ in 0..20_000 {
            now = ssd.write(now, r.below(4096));
        }
        let blocks = ssd.ftl().physical_blocks() as u64;
        let done = ssd.secure_erase(now);
        assert_eq!(done - now, blocks * 3_000_000);
        assert_eq!(ssd.write(done, 1) - done, 600_000);
        assert_eq!(ssd.read(done, 2), done, "unmapped page: no flash read");
    }
}
