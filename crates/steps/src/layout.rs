//! Which transfers a step issues, in which order: every block of the range
//! exactly once, in constant memory, whatever the order and length rule.
//!
//! Transfer lengths (in logical blocks) come from a [`Splitter`]: fixed, or
//! drawn uniformly from `lo..=hi` with a seeded generator. The splitter
//! never leaves a remainder shorter than `lo` when it can avoid it, so every
//! transfer is within the range except, when the region cannot be divided
//! that way, the last piece of a region (as with a fixed length that does
//! not divide the block count).
//!
//! Orders ([`Walker`]):
//! - sequential: ascending from the start block, one splitter over the range;
//! - butterfly: one transfer from the front, one from the back, alternating,
//!   meeting in the middle (first, last, second, second-last, …), each end
//!   with its own splitter over the gap still left;
//! - random: the range is cut into cells of the longest transfer; cells are
//!   visited in a keyed random permutation
//!   ([`drivelab_patterns::prng::Permutation`]) and each cell is split into
//!   transfers (with a fixed length, one cell is one transfer).

use drivelab_patterns::prng::{Permutation, Rng};

/// Transfer lengths in blocks: fixed when `lo == hi`, else uniform in
/// `lo..=hi`.
#[derive(Debug, Clone)]
pub struct Splitter {
    lo: u64,
    hi: u64,
    rng: Rng,
}

impl Splitter {
    /// Lengths from `lo` to `hi` blocks (both ≥ 1, `lo <= hi`), drawn with
    /// a generator seeded by `seed`.
    pub fn new(lo: u64, hi: u64, seed: u64) -> Splitter {
        let lo = lo.max(1);
        Splitter {
            lo,
            hi: hi.max(lo),
            rng: Rng::new(seed),
        }
    }

    /// The next transfer length for a region of `r` blocks (r ≥ 1) still to
    /// cover: at most `r`.
    #[inline]
    pub fn next(&mut self, r: u64) -> u64 {
        let (lo, hi) = (self.lo, self.hi);
        if lo == hi || r <= lo {
            return r.min(hi);
        }
        let top = hi.min(r);
        let mut l = lo + self.rng.below(top - lo + 1);
        let rem = r - l;
        if rem > 0 && rem < lo {
            if r <= hi {
                l = r;
            } else if r - lo >= lo {
                // rem < lo means r − lo < l ≤ hi: still in range, and it
                // leaves exactly lo.
                l = r - lo;
            }
        }
        l
    }
}

/// The access order of a step; yields `(first_lba, blocks)` transfers that
/// cover `start..start + count` exactly once.
#[derive(Debug, Clone)]
pub enum Walker {
    /// Ascending.
    Sequential {
        /// Next LBA.
        next: u64,
        /// End of the range (exclusive).
        end: u64,
        /// Lengths.
        split: Splitter,
    },
    /// Alternating from both ends inward.
    Butterfly {
        /// First block not yet covered from the front.
        front: u64,
        /// One past the last block not yet covered from the back.
        back: u64,
        /// Front lengths.
        split_front: Splitter,
        /// Back lengths.
        split_back: Splitter,
        /// Whether the next transfer comes from the back.
        from_back: bool,
    },
    /// Cells in a keyed random permutation.
    Random {
        /// First block of the range.
        start: u64,
        /// End of the range (exclusive).
        end: u64,
        /// Cell length, blocks.
        cell: u64,
        /// The cell order.
        perm: Permutation,
        /// Cells handed out so far.
        i: u64,
        /// Position and end inside the current cell.
        cur: (u64, u64),
        /// Lengths within a cell.
        split: Splitter,
    },
}

impl Walker {
    /// Sequential transfers of `lo..=hi` blocks over `start..start+count`.
    pub fn sequential(start: u64, count: u64, lo: u64, hi: u64, seed: u64) -> Walker {
        Walker::Sequential {
            next: start,
            end: start + count,
            split: Splitter::new(lo, hi, seed),
        }
    }

    /// Butterfly order over `start..start+count`.
    pub fn butterfly(start: u64, count: u64, lo: u64, hi: u64, seed: u64) -> Walker {
        Walker::Butterfly {
            front: start,
            back: start + count,
            split_front: Splitter::new(lo, hi, seed),
            split_back: Splitter::new(lo, hi, seed ^ 0xB077_E4F1_7E5E_ED00),
            from_back: false,
        }
    }

    /// Random order over `start..start+count`: cells of `hi` blocks.
    pub fn random(start: u64, count: u64, lo: u64, hi: u64, seed: u64) -> Walker {
        let cell = hi.max(1);
        let cells = count.div_ceil(cell).max(1);
        Walker::Random {
            start,
            end: start + count,
            cell,
            perm: Permutation::new(cells, seed ^ 0x5EED_0F0D_E500_0001),
            i: 0,
            cur: (0, 0),
            split: Splitter::new(lo, hi, seed),
        }
    }

    /// The next transfer as `(first_lba, blocks)`, or `None` when the range
    /// is covered.
    #[inline]
    pub fn next_transfer(&mut self) -> Option<(u64, u64)> {
        match self {
            Walker::Sequential { next, end, split } => {
                if *next >= *end {
                    return None;
                }
                let l = split.next(*end - *next);
                let at = *next;
                *next += l;
                Some((at, l))
            }
            Walker::Butterfly {
                front,
                back,
                split_front,
                split_back,
                from_back,
            } => {
                if *front >= *back {
                    return None;
                }
                let gap = *back - *front;
                let t = if *from_back {
                    let l = split_back.next(gap);
                    *back -= l;
                    (*back, l)
                } else {
                    let l = split_front.next(gap);
                    let at = *front;
                    *front += l;
                    (at, l)
                };
                *from_back = !*from_back;
                Some(t)
            }
            Walker::Random {
                start,
                end,
                cell,
                perm,
                i,
                cur,
                split,
            } => {
                if cur.0 >= cur.1 {
                    if *i >= perm.len() {
                        return None;
                    }
                    let c = perm.get(*i);
                    *i += 1;
                    let a = *start + c * *cell;
                    *cur = (a, (a + *cell).min(*end));
                }
                let l = split.next(cur.1 - cur.0);
                let at = cur.0;
                cur.0 += l;
                Some((at, l))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collect every transfer and check, with a bitmap, that each block of
    /// the range is covered exactly once and lengths stay in range.
    fn check_cover(mut w: Walker, start: u64, count: u64, lo: u64, hi: u64) -> Vec<(u64, u64)> {
        let mut seen = vec![0u8; count as usize];
        let mut out = Vec::new();
        while let Some((a, l)) = w.next_transfer() {
            assert!(l >= 1 && l <= hi, "length {l} outside 1..={hi}");
            for b in a..a + l {
                assert!(b >= start && b < start + count, "block {b} outside range");
                seen[(b - start) as usize] += 1;
            }
            out.push((a, l));
        }
        assert!(seen.iter().all(|&s| s == 1), "not every block exactly once");
        let short = out.iter().filter(|(_, l)| *l < lo).count();
        assert!(
            short <= 1 || lo == hi,
            "{short} transfers shorter than {lo}"
        );
        out
    }

    #[test]
    fn sequential_fixed_matches_hand_computed_list() {
        let t = check_cover(Walker::sequential(10, 10, 4, 4, 1), 10, 10, 4, 4);
        assert_eq!(t, vec![(10, 4), (14, 4), (18, 2)]);
    }

    #[test]
    fn butterfly_alternates_from_both_ends() {
        let t = check_cover(Walker::butterfly(0, 10, 1, 1, 1), 0, 10, 1, 1);
        let lbas: Vec<u64> = t.iter().map(|x| x.0).collect();
        assert_eq!(lbas, vec![0, 9, 1, 8, 2, 7, 3, 6, 4, 5]);
        let t = check_cover(Walker::butterfly(100, 9, 2, 2, 1), 100, 9, 2, 2);
        assert_eq!(t, vec![(100, 2), (107, 2), (102, 2), (105, 2), (104, 1)]);
    }

    #[test]
    fn random_visits_every_block_once_not_in_order() {
        let t = check_cover(Walker::random(5, 1000, 8, 8, 42), 5, 1000, 8, 8);
        assert_eq!(t.len(), 125);
        assert!(
            t.windows(2).any(|w| w[1].0 < w[0].0),
            "order is not shuffled"
        );
        // Same seed, same order; another seed, another order.
        let again = check_cover(Walker::random(5, 1000, 8, 8, 42), 5, 1000, 8, 8);
        assert_eq!(t, again);
        let other = check_cover(Walker::random(5, 1000, 8, 8, 43), 5, 1000, 8, 8);
        assert_ne!(t, other);
    }

    #[test]
    fn ranges_cover_exactly_with_lengths_in_range() {
        for seed in 0..20 {
            let (lo, hi) = (8, 256);
            let t = check_cover(
                Walker::sequential(0, 100_000, lo, hi, seed),
                0,
                100_000,
                lo,
                hi,
            );
            assert!(t.iter().all(|(_, l)| *l >= lo));
            let distinct: std::collections::HashSet<u64> = t.iter().map(|x| x.1).collect();
            assert!(distinct.len() > 50, "lengths are not varied");
            check_cover(
                Walker::butterfly(3, 77_777, lo, hi, seed),
                3,
                77_777,
                lo,
                hi,
            );
            check_cover(Walker::random(3, 77_777, lo, hi, seed), 3, 77_777, lo, hi);
        }
    }

    #[test]
    fn splitter_never_leaves_an_avoidable_short_remainder() {
        let mut s = Splitter::new(4, 6, 9);
        for r in 4..200u64 {
            for _ in 0..20 {
                let l = s.next(r);
                assert!((4..=6).contains(&l) && l <= r, "r {r} l {l}");
                let rem = r - l;
                assert!(rem == 0 || rem >= 4 || r == 7, "r {r} l {l}");
            }
        }
    }
}
