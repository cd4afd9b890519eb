//! The option blocks of the engines: each engine's keys, parsed into the
//! block a job spec holds. They import nothing of the crate beyond the
//! shared value parsers, so [`crate::spec::jobspec`] can hold them while the
//! engines' own code, which reads whole job specs and plans, sits above it.

pub mod e4defrag;
pub mod files;
pub mod net;
pub mod noio;
pub mod sg;
