//! The steady-state detector, shared with the workload's fio `steadystate`
//! option: it lives in `drivelab_stats::steady` because the workload crate
//! (which season depends on) needs it too.

pub use drivelab_stats::steady::*;
