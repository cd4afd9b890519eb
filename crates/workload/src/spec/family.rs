//! The one shape of a job spec's option families: each family (an
//! engine's block, the latency target, steady state, flow, priorities,
//! NUMA placement, batching, the error policy with verify's and dedupe's
//! extras) declares its keys and how a value is set beside its own types,
//! and [`crate::spec::jobspec::JobSpec`]'s `set_value` hands a key to the
//! family that declares it.

use crate::SpecError;

/// An option family: its keys and how one of them is set.
pub trait OptionFamily {
    /// The keys it takes (canonical names: rows of `spec/options.rs`).
    fn keys(&self) -> &'static [&'static str];

    /// Set one of [`OptionFamily::keys`] to `v` (value as written).
    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError>;
}
