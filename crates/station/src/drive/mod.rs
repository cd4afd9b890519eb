//! One drive: its states and what the operator asked ([`state`]), its
//! worker thread ([`worker`], sharing [`handle`] with the erase), triage ([`triage`]) and its erase through
//! the erase crate ([`erase`]).

pub mod erase;
pub mod handle;
pub mod state;
pub mod triage;
pub mod worker;
