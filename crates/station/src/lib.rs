//! `drivelab station`: a long-running erasure station. Drives arrive and
//! leave (the kernel's uevents, no udev needed); each one in a bay of the
//! policy is identified, triaged, erased, verified and certified on its
//! own worker thread, by the policy; one screen row per drive, or JSON
//! events without a terminal; each result goes to the store with the
//! host, bay and operator.
//!
//! The folders are the stages:
//!
//! - [`policy`]: the TOML policy, its checks (one line naming the key) and
//!   its bays' check against this machine (never the system disk or a
//!   mounted device).
//! - [`watch`]: the drives present at start, the kernel's events, the
//!   by-path names bays match, and whether a drive is still there.
//! - [`drive`]: one drive's state machine and its worker: triage, the
//!   content check, the erase through `drivelab_erase` (claim, journal,
//!   verification, certificate), hold / resume / confirm / abort.
//! - [`screen`]: the terminal UI (ratatui); [`events`]: the JSON lines and
//!   the store's sink.
//!
//! [`run`] is the main loop ([`station`]'s); [`describe`] prints what a
//! policy will do before it starts.

pub mod drive;
pub mod events;
pub mod msg;
pub mod policy;
pub mod screen;
mod station;
pub mod watch;

pub use drive::worker::Ctx;
pub use station::{run, Ui};

use policy::{Failing, MethodPref, OnContent, OnHidden, Policy, Verify};

/// The station's own failures (a drive's failure is its state).
#[derive(Debug, thiserror::Error)]
pub enum StationError {
    /// The kernel's uevent socket cannot be opened.
    #[error("cannot listen for drives arriving (kernel uevent socket): {0}; run as root")]
    Uevent(#[source] std::io::Error),
    /// The terminal cannot be taken for the screen.
    #[error("cannot draw the screen on this terminal: {0}; use --events json")]
    Terminal(#[source] std::io::Error),
}

/// What the station will do, in a few lines: printed before it starts.
pub fn describe(p: &Policy) -> String {
    let mut s =
        String::from("drivelab station: the policy's bays (only drives in them are touched):\n");
    for b in &p.bays {
        s.push_str(&format!("  {b}\n"));
    }
    if p.include_loop {
        s.push_str(
            "  (loop devices included: a bay also matches a loop device's node or backing file)\n",
        );
    }
    let f = &p.filter;
    if !f.transport.is_empty()
        || f.min_size.is_some()
        || f.max_size.is_some()
        || !f.model.is_empty()
        || !f.serial.is_empty()
    {
        s.push_str(&format!(
            "filter: transport {}, size {}..{}, model {}, serial {}\n",
            if f.transport.is_empty() {
                "any".into()
            } else {
                f.transport.join("/")
            },
            f.min_size.as_deref().unwrap_or("0"),
            f.max_size.as_deref().unwrap_or("any"),
            if f.model.is_empty() {
                "any".into()
            } else {
                f.model.join(" ")
            },
            if f.serial.is_empty() {
                "any".into()
            } else {
                f.serial.join(" ")
            },
        ));
    }
    let t = &p.triage;
    let limits: Vec<String> = [
        ("reallocated", t.max_reallocated_sectors),
        ("pending", t.max_pending_sectors),
        ("media errors", t.max_media_errors),
        ("% used", t.max_percentage_used),
        ("power-on h", t.max_power_on_hours),
    ]
    .iter()
    .filter_map(|(n, v)| v.map(|v| format!("{n} <= {v}")))
    .collect();
    s.push_str(&format!(
        "triage: {}; a failing drive is {}\n",
        if limits.is_empty() {
            "no thresholds".into()
        } else {
            limits.join(", ")
        },
        match t.failing {
            Failing::EraseAndMark => "erased and marked",
            Failing::Hold => "held",
        }
    ));
    let e = &p.erase;
    s.push_str(&format!(
        "erase: {} with pattern {}, {} pass(es), verify {}{}; certificates and journals in {}\n",
        match e.method {
            MethodPref::Auto => "a Purge when the drive has one, else the fastest Clear",
            MethodPref::Clear => "the fastest Clear (overwrite)",
            MethodPref::Purge =>
                "a Purge (sanitize, enhanced security erase, crypto format) or hold",
        },
        e.pattern,
        e.passes,
        match e.verify {
            Verify::None => "none",
            Verify::Sample => "sample (NIST SP 800-88)",
            Verify::Full => "full",
        },
        p.erase
            .rate_limit
            .as_deref()
            .map(|r| format!(", at most {r}/s a drive"))
            .unwrap_or_default(),
        e.certificate_dir.display()
    ));
    s.push_str(&format!(
        "a drive with partitions or a filesystem: {}; with a hidden area: {}; an interrupted erase that comes back: {}\n",
        match e.on_content {
            OnContent::Hold => "held until confirmed",
            OnContent::Erase => "erased",
        },
        match e.on_hidden {
            OnHidden::Hold => "held until confirmed",
            OnHidden::Restore => "restored and erased",
        },
        if e.resume { "resumed from its journal" } else { "started over" }
    ));
    let c = &p.certificate;
    let formats: Vec<&str> = c.formats.iter().map(|f| f.name()).collect();
    s.push_str(&format!(
        "certificates: {} ({}), signed with the organisation, customer, technician and asset tag the policy gives\n",
        formats.join(", "),
        c.paper
    ));
    s
}
