//! Specification: what the user asked for, before any target is looked
//! at. A [`JobSpec`](jobspec::JobSpec) is built the same way from
//! command-line flags, fio job-file keys and Iometer presets; every option
//! is declared once, in [`options::OPTIONS`] or beside its engine's option
//! block (`engines/opts/`, collected by [`options::all`]), and set through
//! [`JobSpec::set`](jobspec::JobSpec::set).

pub mod accepted;
pub mod decl;
pub mod family;
pub mod fio_pattern;
pub mod jobfile;
pub mod jobspec;
pub mod kinds;
pub mod options;
pub mod presets;
pub mod refused;
pub mod size;
pub mod value;
pub mod value_refusal;
