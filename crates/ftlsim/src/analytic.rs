//! Analytic write amplification under uniformly random single-page writes,
//! to check the simulated FTL against the literature.
//!
//! Least-recently-written (FIFO) cleaning (Hu et al., "Write amplification
//! analysis in flash-based solid state drives", SYSTOR 2009; Desnoyers,
//! "Analytic modeling of SSD write performance", SYSTOR 2012): let U be the
//! logical pages and T the physical pages the log cycles through, α = T/U.
//! A page survives until the log wraps, i.e. T flash writes or T/A host
//! writes later, each of which overwrites it with probability 1/U, so the
//! fraction u of a cleaned block still valid satisfies u = e^{−α(1−u)}, or
//! (u − 1)/ln u = 1/α, and each host page costs A = 1/(1 − u) flash pages
//! (equivalently A = α / (α + W₀(−α e^{−α})) with Lambert's W).
//!
//! Greedy cleaning (the steady-state argument of Desnoyers 2012, with
//! N_p pages per block kept finite): a closed block with i valid pages
//! loses one at rate i/U per host write, so it spends U/i host writes at
//! each level i; greedy cleans blocks when they reach the level j it needs,
//! one cleaning per N_p − j host writes. Little's law over the T/N_p blocks
//! gives (U/(N_p − j))·(H(N_p) − H(j)) = T/N_p, i.e.
//! H(N_p) − H(j) = α(N_p − j)/N_p with H the harmonic numbers, and
//! A = N_p/(N_p − j). As N_p grows, H(N_p) − H(j) → ln(N_p/j) and this
//! becomes the FIFO equation above: greedy's advantage vanishes for large
//! blocks (Xiang and Kurkoski, arXiv 1110.4245, likewise report 2.36 for
//! greedy at ρ = 0.3, the FIFO value). j is found between integers by
//! linear interpolation.
//!
//! Over-provisioning here is ρ = (T − U)/U (so α = 1 + ρ); some papers
//! call (T − U)/T the spare factor instead: ρ = 0.1 is a spare factor of
//! 0.0909 in that sense.

use crate::ftl::FtlConfig;

/// The fraction u ∈ (0, 1) of a FIFO-cleaned block still valid, for
/// α = T/U > 1: the root of (u − 1)/ln u = 1/α, by bisection (the left
/// side rises monotonically from 0 to 1 over (0, 1)). `None` if α ≤ 1.
pub fn fifo_cleaned_utilization(alpha: f64) -> Option<f64> {
    if !(alpha.is_finite() && alpha > 1.0) {
        return None;
    }
    let target = 1.0 / alpha;
    let h = |u: f64| (u - 1.0) / u.ln();
    let (mut lo, mut hi) = (f64::MIN_POSITIVE, 1.0 - 1e-15);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if h(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

/// Write amplification of FIFO cleaning at α = T/U: 1/(1 − u).
pub fn fifo_write_amplification(alpha: f64) -> Option<f64> {
    fifo_cleaned_utilization(alpha).map(|u| 1.0 / (1.0 - u))
}

/// Write amplification of greedy cleaning at α = T/U with `pages_per_block`
/// pages per block (see the module doc). `None` if α ≤ 1 or N_p < 2.
pub fn greedy_write_amplification(alpha: f64, pages_per_block: u32) -> Option<f64> {
    if !(alpha.is_finite() && alpha > 1.0) || pages_per_block < 2 {
        return None;
    }
    let np = f64::from(pages_per_block);
    let n = pages_per_block as usize;
    // harmonic[i] = H(i).
    let mut harmonic = vec![0.0; n + 1];
    for i in 1..=n {
        harmonic[i] = harmonic[i - 1] + 1.0 / i as f64;
    }
    // f(j) = H(Np) − H(j) − α(Np − j)/Np: f(Np) = 0, negative just below
    // N_p (the slope there is 1/N_p − α/N_p < 0), +∞ at j = 0.
    let f = |j: usize| harmonic[n] - harmonic[j] - alpha * (np - j as f64) / np;
    let j = (0..n).rev().find(|&j| f(j) > 0.0)?;
    let (f0, f1) = (f(j), f(j + 1));
    let x = j as f64 + f0 / (f0 - f1);
    Some(np / (np - x))
}

/// The α = T/U a configuration cleans with: the physical pages outside the
/// free reserve that garbage collection keeps (the watermark's blocks are
/// erased and hold no data, so they do not lengthen the log), over the
/// logical pages.
pub fn effective_alpha(cfg: &FtlConfig) -> f64 {
    let blocks = cfg.physical_blocks() as f64 - f64::from(cfg.gc_watermark_blocks);
    blocks * f64::from(cfg.pages_per_block) / cfg.logical_pages as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_satisfies_the_fixed_point() {
        for alpha in [1.05, 1.1, 1.2, 1.3, 2.0, 5.0] {
            let u = fifo_cleaned_utilization(alpha).unwrap();
            assert!(u > 0.0 && u < 1.0);
            assert!(
                (u - (-alpha * (1.0 - u)).exp()).abs() < 1e-9,
                "α {alpha}: u {u}"
            );
        }
        assert_eq!(fifo_cleaned_utilization(1.0), None);
        assert_eq!(fifo_cleaned_utilization(0.5), None);
    }

    #[test]
    fn matches_the_published_lambert_w_value() {
        // Xiang & Kurkoski report 2.36 at over-provisioning 0.3.
        let a = fifo_write_amplification(1.3).unwrap();
        assert!((a - 2.36).abs() < 0.01, "{a}");
        // Lambert W check by a second route: w e^w = −α e^{−α}, A = α/(α + w).
        let alpha: f64 = 1.1;
        let a = fifo_write_amplification(alpha).unwrap();
        let w = alpha / a - alpha;
        assert!((w * w.exp() + alpha * (-alpha).exp()).abs() < 1e-9);
        // More spare, less amplification.
        assert!(fifo_write_amplification(1.2).unwrap() < a);
    }

    #[test]
    fn greedy_is_below_fifo_and_meets_it_as_blocks_grow() {
        for alpha in [1.07, 1.1, 1.2, 1.3, 1.5] {
            let fifo = fifo_write_amplification(alpha).unwrap();
            let g64 = greedy_write_amplification(alpha, 64).unwrap();
            let g_big = greedy_write_amplification(alpha, 1 << 16).unwrap();
            assert!(g64 < fifo, "α {alpha}: greedy {g64} fifo {fifo}");
            assert!(
                (g_big / fifo - 1.0).abs() < 0.002,
                "α {alpha}: {g_big} vs {fifo}"
            );
        }
        assert_eq!(greedy_write_amplification(1.0, 64), None);
        assert_eq!(greedy_write_amplification(1.2, 1), None);
    }
}
