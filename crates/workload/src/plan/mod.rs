//! Planning: specs resolved against their targets (sizes known, bounds
//! checked, every target claimed for writing through the device crate),
//! nothing written yet.

pub mod model;
pub mod planner;

pub use model::{Plan, PlanError, PlanOptions, PlannedJob, PlannedTarget, NULL_DEFAULT_SIZE};
