//! The lab rules in `deploy/prometheus/` load (`promtool check rules`) and
//! do what they say on the series of `drivelab-rules.test.yml` (`promtool
//! test rules`): each alert fires when it should, not before and not on
//! the series that should not raise it.

use std::path::PathBuf;
use std::process::Command;

use drivelab_testkit::require_tools;

fn promtool(args: &[&str]) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus");
    let out = Command::new("/usr/bin/promtool")
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("promtool runs (tests/run installs prometheus)");
    assert!(
        out.status.success(),
        "promtool {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_lab_rules_load_and_pass_their_tests() {
    require_tools(&["/usr/bin/promtool"]);
    promtool(&["check", "rules", "drivelab-rules.yml"]);
    promtool(&["test", "rules", "drivelab-rules.test.yml"]);
}
