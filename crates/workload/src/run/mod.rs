//! A whole run, from a plan to one [`RunReport`](drivelab_report::RunReport):
//! the job threads and their stonewall groups, status snapshots, the device
//! check, fio's log files and iolog, and the report builder.

pub mod device_check;
pub mod error;
pub mod exec_hooks;
pub mod execute;
pub mod fio_logs;
pub mod iolog;
pub mod output_opts;
pub mod report_opts;
pub mod start;
pub mod status;

pub use error::RunError;
