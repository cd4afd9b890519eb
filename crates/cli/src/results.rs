//! A stored result read by its kind: the figures `compare` and `history
//! --csv` show and the one-line headline a record keeps, each defined by
//! `drivelab_report::metrics`. The compare and store commands both read
//! results through here.

use drivelab_report::metrics::{self, headline, paths, Metric};
use drivelab_report::RunReport;
use drivelab_store::Kind;
use serde_json::Value;

/// An audit's replay (its `replay` field).
fn audit_replay(v: &Value) -> &Value {
    v.get("replay").unwrap_or(&Value::Null)
}

/// The figures of a result, in a fixed order.
pub fn metrics(kind: Kind, v: &Value) -> Vec<Metric> {
    match kind {
        Kind::Run => metrics::run(&RunReport::from_stored(v)),
        Kind::Test => paths::test(v),
        Kind::Erase => paths::erase(v),
        Kind::Season => paths::season(v),
        Kind::Replay => paths::replay(v),
        Kind::Audit => paths::replay(audit_replay(v)),
    }
}

/// One line of figures for `history`.
pub fn headline(kind: Kind, v: &Value) -> String {
    match kind {
        Kind::Run => headline::run(&RunReport::from_stored(v)),
        Kind::Test => headline::test(v),
        Kind::Erase => headline::erase(v),
        Kind::Season => headline::season(v),
        Kind::Replay => headline::replay(v),
        Kind::Audit => headline::replay(audit_replay(v)),
    }
}
