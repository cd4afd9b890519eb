//! Ctrl-C and SIGTERM as a stop flag: long runs stop cleanly and still
//! report what they did. A second Ctrl-C kills the process the usual way.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Install the handler for SIGINT and SIGTERM and return the flag it sets.
pub fn stop_flag() -> &'static AtomicBool {
    // SAFETY: sigaction with a handler that only stores to an atomic, which
    // is async-signal-safe; SA_RESETHAND restores the default after one use.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
    &STOP
}
