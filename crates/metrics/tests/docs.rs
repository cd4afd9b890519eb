//! `docs/metrics.md` is the catalog's table: a metric added, renamed or
//! re-documented in `model/catalog.rs` fails here until the file is
//! regenerated (`UPDATE_DOCS=1 cargo test -p drivelab-metrics --test docs`).

use std::path::PathBuf;

#[test]
fn docs_metrics_md_is_the_catalogs_table() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics.md");
    let want = drivelab_metrics::model::catalog::table();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/metrics.md differs from the catalog; regenerate it with UPDATE_DOCS=1 cargo test -p drivelab-metrics --test docs"
    );
}
