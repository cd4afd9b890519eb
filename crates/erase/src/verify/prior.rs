//! Verification of an erase whose data is the drive's choice (a crypto
//! erase, the enhanced ATA security erase): there is no pattern to compare
//! against, so the drive is checked for "not the old data" instead.
//!
//! Before the erase, [`take`] reads a fixed number of blocks spread over
//! the whole capacity (one at a seeded place in each of [`PRIOR_SAMPLES`]
//! equal slices, plus the first and the last block) through the claim and
//! keeps a SHA-256 digest of each, never the data. After the erase,
//! [`read_again`] reads the same blocks and [`judge_prior`] says what
//! changed. A block that was all zeroes or all 0xFF before is "blank": an
//! erase may leave exactly that, so it proves nothing either way and is
//! counted apart, neither as changed nor as failing. A block that still
//! holds its old content fails the verification. For a crypto erase, which
//! must leave indistinguishable-from-random data, blocks that read back as
//! zeroes are counted and reported, without failing. The sample is kept in
//! the erase's journal (digests only), so a resumed run checks against
//! what the drive held before the first run touched it.

use std::os::unix::fs::FileExt;

use drivelab_device::claim::Claim;

pub use super::content::Content;
use super::sample::splitmix;
use crate::aligned;
use crate::cert::model::PriorSample;

/// Slices of the capacity, one sampled block in each.
pub const PRIOR_SAMPLES: u64 = 1000;

/// The sample taken before the erase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prior {
    /// The seed that placed the blocks.
    pub seed: u64,
    /// Each sampled LBA with what it held.
    pub blocks: Vec<(u64, Content)>,
}

/// The LBAs sampled on a drive of `total_blocks`: one at a seeded place in
/// each of [`PRIOR_SAMPLES`] equal slices (fewer on a smaller drive: every
/// block), plus the first and the last; sorted, no repeats.
pub fn prior_lbas(total_blocks: u64, seed: u64) -> Vec<u64> {
    if total_blocks == 0 {
        return Vec::new();
    }
    let s = PRIOR_SAMPLES.min(total_blocks);
    let mut rng = seed ^ 0xC4A7_0E5E_0000_0001;
    let mut v: Vec<u64> = (0..s)
        .map(|i| {
            let start = total_blocks * i / s;
            let len = total_blocks * (i + 1) / s - start;
            start + splitmix(&mut rng) % len
        })
        .collect();
    v.push(0);
    v.push(total_blocks - 1);
    v.sort_unstable();
    v.dedup();
    v
}

fn read_blocks(claim: &Claim, lbs: u32, lbas: &[u64]) -> std::io::Result<Vec<Content>> {
    let f = claim.io_file(true)?;
    let mut buf = Vec::new();
    let block = aligned(&mut buf, lbs as usize);
    lbas.iter()
        .map(|&lba| {
            f.read_exact_at(block, lba * u64::from(lbs))?;
            Ok(Content::of(block))
        })
        .collect()
}

/// Read the sample before the erase (O_DIRECT, through the claim).
pub fn take(claim: &Claim, lbs: u32, total_blocks: u64, seed: u64) -> std::io::Result<Prior> {
    let lbas = prior_lbas(total_blocks, seed);
    let got = read_blocks(claim, lbs, &lbas)?;
    Ok(Prior {
        seed,
        blocks: lbas.into_iter().zip(got).collect(),
    })
}

/// Read the sampled blocks again after the erase.
pub fn read_again(claim: &Claim, lbs: u32, prior: &Prior) -> std::io::Result<Vec<Content>> {
    let lbas: Vec<u64> = prior.blocks.iter().map(|b| b.0).collect();
    read_blocks(claim, lbs, &lbas)
}

/// Most unchanged LBAs the certificate lists.
const LISTED: usize = 16;

/// Compare what the sampled blocks hold after the erase with before.
pub fn judge_prior(prior: &Prior, after: &[Content]) -> PriorSample {
    let mut p = PriorSample {
        seed: prior.seed,
        sampled: prior.blocks.len() as u64,
        ..PriorSample::default()
    };
    for (&(lba, before), &now) in prior.blocks.iter().zip(after) {
        if before.blank() {
            p.blank_before += 1;
        } else if before == now {
            p.unchanged += 1;
            if p.unchanged_lbas.len() < LISTED {
                p.unchanged_lbas.push(lba);
            }
        } else {
            p.changed += 1;
            if now == Content::Zero {
                p.zeroed += 1;
            }
        }
    }
    p
}

impl PriorSample {
    /// The certificate's one-line result: "sampled N blocks: none holds its
    /// old data (...)", or what still does.
    pub fn result(&self, crypto: bool) -> String {
        let mut counts = format!(
            "{} changed, {} blank before the erase",
            self.changed, self.blank_before
        );
        if crypto {
            counts.push_str(&format!(", {} read back as zeroes", self.zeroed));
        }
        if self.unchanged > 0 {
            format!(
                "failed: sampled {} blocks: {} still hold their old data ({counts})",
                self.sampled, self.unchanged
            )
        } else if self.changed == 0 {
            format!(
                "inconclusive: sampled {} blocks: every one was blank before the erase",
                self.sampled
            )
        } else {
            format!(
                "passed: sampled {} blocks: none holds its old data ({counts})",
                self.sampled
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prior_lbas_spread_over_the_drive_with_first_and_last() {
        for &(total, seed) in &[(1_953_525_168u64, 7u64), (131_072, 1), (10_007, 3)] {
            let v = prior_lbas(total, seed);
            assert_eq!(v[0], 0);
            assert_eq!(*v.last().unwrap(), total - 1);
            assert!(v.windows(2).all(|w| w[0] < w[1]));
            // One in every slice.
            for i in 0..PRIOR_SAMPLES {
                let (a, b) = (total * i / PRIOR_SAMPLES, total * (i + 1) / PRIOR_SAMPLES);
                assert!(v.iter().any(|&l| l >= a && l < b), "slice {i} empty");
            }
            assert!(v.len() as u64 <= PRIOR_SAMPLES + 2);
            assert_eq!(v, prior_lbas(total, seed), "not reproducible");
            assert_ne!(v, prior_lbas(total, seed + 1), "the seed moves nothing");
        }
        // A drive smaller than the sample: every block.
        assert_eq!(prior_lbas(5, 1), vec![0, 1, 2, 3, 4]);
        assert!(prior_lbas(0, 1).is_empty());
    }

    #[test]
    fn content_round_trips_through_its_journal_word() {
        let mut b = [7u8; 512];
        b[3] = 9;
        for c in [Content::Zero, Content::Ones, Content::of(&b)] {
            assert_eq!(Content::from_token(&c.token()), Some(c), "{}", c.token());
        }
        assert_eq!(Content::of(&b).token().len(), 64);
        for bad in ["", "1", "f", "zz", &"g".repeat(64), &"a".repeat(63)] {
            assert_eq!(Content::from_token(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn content_classes() {
        assert_eq!(Content::of(&[0; 512]), Content::Zero);
        assert_eq!(Content::of(&[0xFF; 512]), Content::Ones);
        let mut b = [0u8; 512];
        b[511] = 1;
        let c = Content::of(&b);
        assert!(matches!(c, Content::Data(_)));
        b[0] = 1;
        assert_ne!(Content::of(&b), c);
    }

    fn data(n: u8) -> Content {
        Content::of(&[n, 1, 2, 3])
    }

    #[test]
    fn judging_not_the_old_data() {
        let prior = Prior {
            seed: 9,
            blocks: vec![
                (0, data(1)),
                (10, data(2)),
                (20, Content::Zero),
                (30, Content::Ones),
                (40, data(3)),
            ],
        };
        // Everything with data changed, one to zeroes; the blank ones count apart
        // whatever they read now.
        let after = [data(7), Content::Zero, data(8), Content::Ones, data(9)];
        let p = judge_prior(&prior, &after);
        assert_eq!(
            (p.sampled, p.changed, p.blank_before, p.zeroed, p.unchanged),
            (5, 3, 2, 1, 0)
        );
        assert_eq!(
            p.result(true),
            "passed: sampled 5 blocks: none holds its old data (3 changed, 2 blank before the erase, 1 read back as zeroes)"
        );
        assert!(!p.result(false).contains("zeroes"));

        // A crypto erase that changed nothing.
        let same: Vec<Content> = prior.blocks.iter().map(|b| b.1).collect();
        let p = judge_prior(&prior, &same);
        assert_eq!((p.unchanged, p.changed), (3, 0));
        assert_eq!(p.unchanged_lbas, vec![0, 10, 40]);
        assert!(p
            .result(true)
            .starts_with("failed: sampled 5 blocks: 3 still hold"));

        // Only blank blocks sampled: nothing shown either way.
        let blank = Prior {
            seed: 1,
            blocks: vec![(0, Content::Zero), (1, Content::Ones)],
        };
        let p = judge_prior(&blank, &[data(1), Content::Zero]);
        assert!(
            p.result(true).starts_with("inconclusive"),
            "{}",
            p.result(true)
        );
    }
}
