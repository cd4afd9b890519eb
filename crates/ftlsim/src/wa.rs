//! Steady-state write amplification under uniform random single-page
//! writes, simulated and analytic, for the literature check.

use crate::analytic::{effective_alpha, fifo_write_amplification, greedy_write_amplification};
use crate::error::ConfigError;
use crate::ftl::{Ftl, FtlConfig, Policy};
use crate::rng::SplitMix64;

/// One row of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct WaRow {
    /// Over-provisioning ρ = (T − U)/U as configured.
    pub over_provisioning: f64,
    /// α = T/U the cleaner works with (see [`effective_alpha`]).
    pub alpha: f64,
    /// The analytic value for the configured policy.
    pub analytic: f64,
    /// The analytic FIFO value (for greedy, the upper bound it approaches
    /// as blocks grow).
    pub analytic_fifo: f64,
    /// The measured value: flash writes / host writes after warm-up.
    pub simulated: f64,
}

impl WaRow {
    /// Relative error of the simulated value against the analytic one, in %.
    pub fn error_pct(&self) -> f64 {
        (self.simulated / self.analytic - 1.0) * 100.0
    }
}

/// Fills `cfg`'s logical space sequentially, writes `warm_capacities` ×
/// U uniformly random pages to reach the steady state, zeroes the counts,
/// then measures over `measure_capacities` × U more random pages.
pub fn steady_state(
    cfg: &FtlConfig,
    warm_capacities: u64,
    measure_capacities: u64,
    seed: u64,
) -> Result<WaRow, ConfigError> {
    let mut f = Ftl::new(cfg.clone())?;
    let u = cfg.logical_pages;
    for l in 0..u {
        f.write(l);
    }
    let mut r = SplitMix64::new(seed);
    for _ in 0..warm_capacities * u {
        f.write(r.below(u));
    }
    f.reset_stats();
    for _ in 0..measure_capacities * u {
        f.write(r.below(u));
    }
    let alpha = effective_alpha(cfg);
    let no_spare = || {
        ConfigError(format!(
            "α = {alpha} leaves no spare space: raise the over-provisioning"
        ))
    };
    let analytic_fifo = fifo_write_amplification(alpha).ok_or_else(no_spare)?;
    let analytic = match cfg.policy {
        Policy::Fifo => analytic_fifo,
        Policy::Greedy => {
            greedy_write_amplification(alpha, cfg.pages_per_block).ok_or_else(no_spare)?
        }
    };
    Ok(WaRow {
        over_provisioning: cfg.over_provisioning,
        alpha,
        analytic,
        analytic_fifo,
        simulated: f.stats().write_amplification(),
    })
}
