//! Which blocks the read-back covers: NIST SP 800-88 sampling, or
//! everything.
//!
//! Sampling (REFERENCE.md): the LBA space is split into at least 1,000
//! subsections; in each, two non-overlapping regions at pseudorandom places,
//! each covering at least 5% of the subsection, are read; so are the first
//! and the last LBA. The places come from a seeded generator, recorded in
//! the certificate, so the same regions can be read again.

/// Subsections of a sample.
pub const SUBSECTIONS: u64 = 1000;
/// Smallest share of a subsection each sampled region covers, percent.
pub const REGION_PERCENT: u64 = 5;

/// A run of blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Region {
    /// First LBA.
    pub first: u64,
    /// Blocks.
    pub blocks: u64,
}

/// What to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplePlan {
    /// Regions, sorted, not overlapping (merged).
    pub regions: Vec<Region>,
    /// Subsections used (0 for a full read).
    pub subsections: u64,
    /// Regions before merging (2 per subsection + first + last).
    pub region_count: u64,
}

/// SplitMix64: a small seeded generator for region places.
pub(crate) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn merge(mut v: Vec<Region>) -> Vec<Region> {
    v.sort();
    let mut out: Vec<Region> = Vec::with_capacity(v.len());
    for r in v {
        if let Some(last) = out.last_mut() {
            if r.first <= last.first + last.blocks {
                let end = (r.first + r.blocks).max(last.first + last.blocks);
                last.blocks = end - last.first;
                continue;
            }
        }
        out.push(r);
    }
    out
}

/// The whole drive.
pub fn full_plan(total_blocks: u64) -> SamplePlan {
    SamplePlan {
        regions: vec![Region {
            first: 0,
            blocks: total_blocks,
        }],
        subsections: 0,
        region_count: 1,
    }
}

/// The NIST sample of a drive of `total_blocks` blocks. A drive too small
/// for 1,000 subsections of at least 2 blocks is read in full.
pub fn sample_plan(total_blocks: u64, seed: u64) -> SamplePlan {
    let s = SUBSECTIONS;
    if total_blocks < s * 2 {
        return full_plan(total_blocks);
    }
    let mut rng = seed ^ 0x5A5A_0000_A5A5;
    let mut v = Vec::with_capacity(2 * s as usize + 2);
    for i in 0..s {
        let start = total_blocks * i / s;
        let end = total_blocks * (i + 1) / s;
        let len = end - start;
        let r = (len * REGION_PERCENT).div_ceil(100).max(1);
        let span = len - 2 * r + 1;
        let a = splitmix(&mut rng) % span;
        let b = splitmix(&mut rng) % span;
        let (lo, hi) = (a.min(b), a.max(b));
        v.push(Region {
            first: start + lo,
            blocks: r,
        });
        v.push(Region {
            first: start + hi + r,
            blocks: r,
        });
    }
    v.push(Region {
        first: 0,
        blocks: 1,
    });
    v.push(Region {
        first: total_blocks - 1,
        blocks: 1,
    });
    let region_count = v.len() as u64;
    SamplePlan {
        regions: merge(v),
        subsections: s,
        region_count,
    }
}

impl SamplePlan {
    /// Blocks the plan reads.
    pub fn blocks(&self) -> u64 {
        self.regions.iter().map(|r| r.blocks).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_meets_nist_rules() {
        for &(total, seed) in &[
            (131_072u64, 1u64),
            (2_000, 9),
            (1_953_525_168, 42),
            (10_007, 3),
        ] {
            let p = sample_plan(total, seed);
            assert_eq!(p.subsections, 1000);
            assert_eq!(p.region_count, 2002);
            // Regenerate the unmerged regions by the same rule but check
            // them against the subsection bounds computed here.
            let mut rng = seed ^ 0x5A5A_0000_A5A5;
            let mut covered = 0u64;
            for i in 0..1000u64 {
                let start = total * i / 1000;
                let end = total * (i + 1) / 1000;
                let len = end - start;
                let r = (len * 5).div_ceil(100);
                let span = len - 2 * r + 1;
                let a = splitmix(&mut rng) % span;
                let b = splitmix(&mut rng) % span;
                let r1 = (start + a.min(b), r);
                let r2 = (start + a.max(b) + r, r);
                // Inside the subsection, not overlapping, each >= 5%.
                assert!(r1.0 >= start && r2.0 + r2.1 <= end);
                assert!(r1.0 + r1.1 <= r2.0);
                assert!(r1.1 * 100 >= len * 5);
                // Both are in the merged plan.
                for (f, n) in [r1, r2] {
                    assert!(p
                        .regions
                        .iter()
                        .any(|g| g.first <= f && f + n <= g.first + g.blocks));
                }
                covered += 2 * r;
            }
            assert!(covered * 10 >= total, "coverage below 10%");
            assert_eq!(p.regions[0].first, 0);
            let last = p.regions.last().unwrap();
            assert_eq!(last.first + last.blocks, total);
            // Merged: sorted and disjoint.
            for w in p.regions.windows(2) {
                assert!(w[0].first + w[0].blocks < w[1].first);
            }
        }
    }

    #[test]
    fn tiny_drive_is_read_in_full() {
        let p = sample_plan(1999, 1);
        assert_eq!(
            p.regions,
            vec![Region {
                first: 0,
                blocks: 1999
            }]
        );
        assert_eq!(p.blocks(), 1999);
    }

    #[test]
    fn seeds_move_the_regions() {
        assert_ne!(
            sample_plan(1 << 20, 1).regions,
            sample_plan(1 << 20, 2).regions
        );
        assert_eq!(
            sample_plan(1 << 20, 5).regions,
            sample_plan(1 << 20, 5).regions
        );
    }
}
