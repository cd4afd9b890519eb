//! Who serves the figures: drivelab's version, the host, the command, and
//! the targets it holds for writing.

use super::catalog::{BUILD, CLAIM};
use super::{Family, Value};

/// This host's name (`/proc/sys/kernel/hostname`; empty when unreadable).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// `drivelab_build_info` for `command` (run, erase, ...).
pub fn build(command: &str) -> Family {
    let mut f = Family::of(&BUILD);
    f.push(
        &[env!("CARGO_PKG_VERSION"), &hostname(), command],
        Value::Gauge(1.0),
    );
    f
}

/// A target held for writing, as `drivelab_claim_info` labels it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The path as given.
    pub path: String,
    /// Kernel name of the block device (empty for a file).
    pub device: String,
    /// Its serial (empty when it has none).
    pub serial: String,
}

/// `drivelab_claim_info`, one sample per target held.
pub fn claims(held: &[Held]) -> Family {
    let mut f = Family::of(&CLAIM);
    for c in held {
        f.push(&[&c.path, &c.device, &c.serial], Value::Gauge(1.0));
    }
    f
}
