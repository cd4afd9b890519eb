//! The workload pipeline between the command line and the engine:
//! resolve specs into a [`plan::Plan`] (targets opened, sizes known, safety
//! checked, nothing written yet), run it ([`exec::execute`]: job threads,
//! the device sampler, progress), and assemble the one result struct
//! ([`drivelab_report::RunReport`]) including the device check
//! ([`check`]).

pub mod check;
pub mod exec;
pub mod plan;

pub use exec::{execute, Progress};
pub use plan::{plan, Plan, PlanError, PlanOptions};
