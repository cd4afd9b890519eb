//! The few system calls drivelab makes outside the engines, each behind a
//! safe function, so that `unsafe` stays in the engine and device crates:
//! thread CPU usage, timer slack, the stop signals (Ctrl-C, SIGTERM), and
//! memory pinned for a run (fio's `lockmem`).
//! The monotonic clock and absolute sleeps are in [`crate::clock`].

use std::sync::atomic::{AtomicBool, Ordering};

/// CPU time and context switches of the calling thread so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    /// Time spent in user mode, nanoseconds (microsecond resolution).
    pub user_ns: u64,
    /// Time spent in the kernel, nanoseconds (microsecond resolution).
    pub system_ns: u64,
    /// Voluntary plus involuntary context switches.
    pub context_switches: u64,
}

/// The calling thread's [`ThreadUsage`] (`getrusage(RUSAGE_THREAD)`); all
/// zero in the (never seen) case that the kernel refuses.
pub fn thread_usage() -> ThreadUsage {
    // SAFETY: rusage is plain integers, for which all-zero bytes are a
    // valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a pointer to a local rusage that outlives
    // the call; the kernel writes only that struct.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if r != 0 {
        return ThreadUsage::default();
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    ThreadUsage {
        user_ns: tv(ru.ru_utime),
        system_ns: tv(ru.ru_stime),
        context_switches: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
    }
}

/// Set the calling thread's timer slack to `ns` nanoseconds (at least 1), so
/// timed sleeps wake close to their deadline instead of up to 50 µs late
/// (the default slack). Affects only this thread.
pub fn set_timer_slack(ns: u64) -> std::io::Result<()> {
    let ns = ns.max(1) as libc::c_ulong;
    // SAFETY: PR_SET_TIMERSLACK takes its argument by value and touches
    // no memory of ours; the unused arguments are zero as prctl(2) asks.
    let r = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0 as libc::c_ulong, 0, 0) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's timer slack in nanoseconds.
pub fn timer_slack() -> std::io::Result<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the value.
    let r = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0 as libc::c_ulong, 0, 0, 0) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(r as u64)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Set the flag [`stop_on_signals`] returns, as a signal would: every
/// writer polling it stops at its next turn. For a stop the program itself
/// decides (such as the device crate's alias watch), from any thread.
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

/// Install a handler for SIGINT and SIGTERM that sets the returned flag,
/// so long runs stop cleanly and still report what they did. The handler
/// resets itself after one signal (`SA_RESETHAND`): a second Ctrl-C kills
/// the process the usual way. Calling it again re-arms the handler.
pub fn stop_on_signals() -> std::io::Result<&'static AtomicBool> {
    // SAFETY: sigaction is plain data (integers, a mask and a handler
    // address), for which all-zero bytes are a valid value.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    sa.sa_flags = libc::SA_RESETHAND;
    // SAFETY: sigemptyset writes the mask inside our local `sa`.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `sa` is a valid, initialised sigaction that outlives the
        // call; the old action is not asked for (null). The handler only
        // stores to an atomic, which is async-signal-safe.
        let r = unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(&STOP)
}

/// Send SIGINT to process `pid`, as Ctrl-C in its terminal would (tests use
/// it to interrupt a child they spawned).
pub fn interrupt(pid: u32) -> std::io::Result<()> {
    send(pid, libc::SIGINT)
}

/// Send SIGTERM to process `pid`: ask it to end (the exec engine's end of a
/// job's program, before its grace time and SIGKILL). Give only the id of a
/// child not yet reaped (`Child::try_wait` said it runs), so that the id
/// cannot have been reused by another process.
pub fn terminate(pid: u32) -> std::io::Result<()> {
    send(pid, libc::SIGTERM)
}

/// Send `sig` to the single process `pid` (never a group: 0 and negative
/// ids are refused).
fn send(pid: u32, sig: libc::c_int) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{pid} is not a process id"),
        )
    })?;
    if pid <= 0 {
        // kill(0) and kill(-1) signal whole process groups; refuse them.
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{pid} is not a single process"),
        ));
    }
    // SAFETY: kill takes plain integers and touches no memory of ours; a
    // positive pid names exactly one process.
    let r = unsafe { libc::kill(pid, sig) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminate_sends_sigterm_to_one_process_only() {
        use std::os::unix::process::ExitStatusExt;
        let mut c = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        terminate(c.id()).unwrap();
        assert_eq!(c.wait().unwrap().signal(), Some(libc::SIGTERM));
        assert!(terminate(0).is_err(), "a process group is refused");
    }

    /// Spin until this thread has used `ns` more CPU; false if that took
    /// over 20 s of wall time (it takes ~`ns` on an idle machine).
    fn burn_cpu(ns: u64) -> bool {
        let cpu = |u: ThreadUsage| u.user_ns + u.system_ns;
        let (start, t0) = (cpu(thread_usage()), crate::clock::now_ns());
        let mut x = 0u64;
        while cpu(thread_usage()) - start < ns {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
            if crate::clock::now_ns() - t0 > 20_000_000_000 {
                return false;
            }
        }
        true
    }

    #[test]
    fn thread_usage_counts_this_thread_and_no_other() {
        let cpu = |u: ThreadUsage| u.user_ns + u.system_ns;
        let before = thread_usage();
        assert!(burn_cpu(20_000_000), "20 ms of CPU never showed up");
        let mid = thread_usage();
        assert!(cpu(mid) - cpu(before) >= 20_000_000);
        // Another thread's 200 ms of CPU is not counted here (this thread
        // only waits for it).
        let other = std::thread::spawn(|| burn_cpu(200_000_000));
        assert!(other.join().unwrap(), "the other thread never got 200 ms");
        let after = thread_usage();
        assert!(
            cpu(after) - cpu(mid) < 100_000_000,
            "{} ns counted while another thread worked",
            cpu(after) - cpu(mid)
        );
        assert!(after.context_switches >= before.context_switches);
    }

    #[test]
    fn timer_slack_is_set_for_this_thread_only() {
        set_timer_slack(50_000).unwrap();
        std::thread::spawn(|| {
            assert_eq!(timer_slack().unwrap(), 50_000, "inherited at spawn");
            set_timer_slack(1).unwrap();
            assert_eq!(timer_slack().unwrap(), 1);
            set_timer_slack(0).unwrap();
            assert_eq!(timer_slack().unwrap(), 1, "0 would mean the default");
        })
        .join()
        .unwrap();
        assert_eq!(
            timer_slack().unwrap(),
            50_000,
            "another thread's slack leaked into this one"
        );
    }

    #[test]
    fn interrupt_refuses_process_groups() {
        assert_eq!(
            interrupt(0).unwrap_err().kind(),
            std::io::ErrorKind::InvalidInput
        );
        assert_eq!(
            interrupt(u32::MAX).unwrap_err().kind(),
            std::io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn interrupt_stops_a_child() {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        // A suite started from a background job inherits SIGINT ignored,
        // and an ignored disposition survives exec: give the child the
        // default action, as an interactive shell's child has.
        // SAFETY: the closure runs in the forked child before exec and
        // calls only signal(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap();
        interrupt(child.id()).unwrap();
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGINT));
    }
}

/// Anonymous memory locked into RAM (`mlock`) until dropped: fio's
/// `lockmem`, which takes that much memory away from the rest of the
/// system (the page cache shrinks) for a job's run. The memory is one
/// [`crate::buf::BufferPool`] buffer; unmapping it unlocks it.
#[derive(Debug)]
pub struct PinnedMemory {
    pool: crate::buf::BufferPool,
}

impl PinnedMemory {
    /// Map `len` bytes (rounded up to whole pages) and lock them into RAM.
    pub fn lock(len: usize) -> std::io::Result<PinnedMemory> {
        let pool = crate::buf::BufferPool::new(1, len, crate::buf::Fill::Zeroed)?;
        // SAFETY: the pointer and length are the pool's one buffer, mapped
        // for the pool's life; mlock only changes how the pages are kept.
        if unsafe { libc::mlock(pool.ptr(0).cast(), pool.stride()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(PinnedMemory { pool })
    }

    /// Bytes locked.
    pub fn len(&self) -> usize {
        self.pool.stride()
    }

    /// Whether nothing is locked (never: at least one page is).
    pub fn is_empty(&self) -> bool {
        self.pool.stride() == 0
    }
}
