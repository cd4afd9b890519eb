//! What the station tells the world besides its screen: one JSON object
//! per line for each state change (`--events json`, or whenever stdout is
//! not a terminal), for logs and agents; and the results it hands the
//! store ([`Sink`]), each drive's erase with the host, bay and operator,
//! and every row a few times a second for live figures.
//!
//! Every line has `event` (`start`, `state`, `progress`, `queued`,
//! `stored`, `warning`, `stop`), `time` (RFC 3339 UTC) and `t_s` (seconds since the station
//! started); a drive's lines carry its whole row ([`View`]'s fields).

use std::io::Write;
use std::time::Instant;

use serde_json::{json, Value};

use crate::drive::state::View;
use crate::msg::DriveResult;
use crate::policy::Policy;

/// Where finished erases go (the command line's store).
pub trait Sink {
    /// Keep one drive's result; returns the record's ID, or why not.
    fn store(&mut self, result: &DriveResult, record: &StationRecord) -> Result<String, String>;

    /// Every drive's row, a few times a second (live figures); nothing by
    /// default.
    fn observe(&mut self, _rows: &[View]) {}

    /// Whether [`Sink::observe`] does anything with the rows (they are
    /// copied for it only then); yes by default.
    fn observes(&self) -> bool {
        true
    }
}

/// What the station adds to a drive's stored erase.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StationRecord {
    /// The bay.
    pub bay: Option<String>,
    /// The operator.
    pub operator: Option<String>,
    /// The drive's final state and its line.
    pub state: String,
    /// The line.
    pub detail: String,
    /// Triage's grade.
    pub grade: Option<crate::drive::state::Grade>,
    /// Organisation, customer, technician, asset tag (the policy's
    /// certificate section).
    pub organisation: Option<String>,
    /// Customer.
    pub customer: Option<String>,
    /// The customer's address.
    pub customer_address: Option<String>,
    /// The customer's contact.
    pub customer_contact: Option<String>,
    /// Technician.
    pub technician: Option<String>,
    /// Asset tag.
    pub asset_tag: Option<String>,
    /// The policy file.
    pub policy: String,
}

impl StationRecord {
    /// The record of `r` under `policy`.
    pub fn of(r: &DriveResult, policy: &Policy, policy_path: &str) -> StationRecord {
        StationRecord {
            bay: r.view.bay.clone(),
            operator: policy.operator.clone(),
            state: r.view.state.word().into(),
            detail: r.view.detail.clone(),
            grade: r.view.grade.clone(),
            organisation: policy.certificate.organisation.clone(),
            customer: policy.certificate.customer.clone(),
            customer_address: policy.certificate.customer_address.clone(),
            customer_contact: policy.certificate.customer_contact.clone(),
            technician: policy.technician().map(String::from),
            asset_tag: r.view.asset_tag.clone(),
            policy: policy_path.into(),
        }
    }
}

/// The JSON line writer.
pub struct Events {
    started: Instant,
    on: bool,
}

impl Events {
    /// Events on stdout when `on`.
    pub fn new(on: bool) -> Events {
        Events {
            started: Instant::now(),
            on,
        }
    }

    /// Whether lines are written.
    pub fn on(&self) -> bool {
        self.on
    }

    /// Write one event with `fields`.
    pub fn emit(&self, event: &str, fields: Value) {
        if !self.on {
            return;
        }
        let (s, n) = drivelab_erase::clock::unix_now();
        let mut v = json!({
            "event": event,
            "time": drivelab_erase::clock::rfc3339(s, n),
            "t_s": (self.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        });
        if let (Some(o), Value::Object(f)) = (v.as_object_mut(), fields) {
            o.extend(f);
        }
        let mut out = std::io::stdout().lock();
        // A closed stdout (the reader went away) must not stop the erases.
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    }

    /// A drive's row as an event.
    pub fn drive(&self, event: &str, view: &View) {
        self.emit(event, serde_json::to_value(view).unwrap_or(Value::Null));
    }
}
