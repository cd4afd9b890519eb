//! The one shape of a job spec's option families: each family (the file
//! options, verify, exitall/exit_what, zbd's zone options, the latency
//! target, steady state, flow, priorities, NUMA placement, batching, the
//! error policy with verify's and dedupe's extras) declares its keys, how
//! a value is set and its own checks beside its own types;
//! [`crate::spec::jobspec::JobSpec`]'s `set_value` hands a key to the
//! family that declares it (an engine's option goes to its front,
//! [`crate::engines::front::EngineFront`]), and its `validate` runs every
//! family's check.

use crate::SpecError;

/// An option family: its keys, how one of them is set, and its checks.
pub trait OptionFamily {
    /// The keys it takes (canonical names: rows of `spec/options.rs`).
    fn keys(&self) -> &'static [&'static str];

    /// Set one of [`OptionFamily::keys`] to `v` (value as written).
    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError>;

    /// Checks between the family's own options, before the job is
    /// planned (no target needed).
    fn check(&self) -> Result<(), SpecError> {
        Ok(())
    }
}
