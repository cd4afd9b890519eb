//! The one shape of a job spec's option families: each family (the file
//! options, verify, exitall/exit_what, zbd's zone options, the latency
//! target, steady state, flow, priorities, NUMA placement, batching, the
//! error policy with verify's and dedupe's extras) declares its options,
//! how a value is set and its own checks beside its own types;
//! [`crate::spec::jobspec::JobSpec`]'s `set_value` hands a key to the
//! family that declares it (an engine's option goes to its block,
//! [`crate::engines::opts::BLOCKS`]), and its `validate` runs every
//! family's check.

use crate::spec::decl::OptionDecl;
use crate::SpecError;

/// An option family: its keys, how one of them is set, and its checks.
pub trait OptionFamily {
    /// Its options, declared beside the family's types (and listed in
    /// [`crate::spec::options::FAMILIES`]).
    fn options(&self) -> &'static [OptionDecl];

    /// Set one of [`OptionFamily::options`] (its canonical name) to `v`
    /// (value as written).
    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError>;

    /// Checks between the family's own options, before the job is
    /// planned (no target needed).
    fn check(&self) -> Result<(), SpecError> {
        Ok(())
    }
}
