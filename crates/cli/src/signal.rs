//! Ctrl-C and SIGTERM as a stop flag: long runs stop cleanly and still
//! report what they did. A second Ctrl-C kills the process the usual way.

use std::sync::atomic::AtomicBool;

/// Install the handler for SIGINT and SIGTERM and return the flag it sets.
pub fn stop_flag() -> &'static AtomicBool {
    static NEVER: AtomicBool = AtomicBool::new(false);
    drivelab_engine::sys::stop_on_signals().unwrap_or_else(|e| {
        eprintln!(
            "drivelab: warning: cannot catch Ctrl-C ({e}); an interrupted run will not report"
        );
        &NEVER
    })
}
