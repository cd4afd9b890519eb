//! The io_uring plumbing the io_uring and io_uring_cmd engines share:
//! building a ring with the best flags the kernel takes, submitting and
//! waiting, and fio's `force_async`.

use std::time::Duration;

use io_uring::{squeue, types, IoUring};

/// How many times a ring with a submission thread checks its completion
/// queue before it waits in the kernel instead (see [`submit_ring`]): about
/// a millisecond of `pause` instructions on x86 (0.2–3 ms, by model), long enough for
/// any I/O that polling pays for, short enough not to burn a CPU on a slow
/// device.
const SQPOLL_SPINS: u32 = 1 << 16;

/// Submit what `ring` has queued and wait for `wait` completions, for at
/// most `timeout` when one is given (the io_uring and io_uring_cmd engines'
/// `commit`). A signal retries; a timeout, or a full completion queue
/// (EBUSY/EAGAIN: the loop reaps first, then commits again) is not an error.
///
/// With a submission thread (SQPOLL) this is fio's commit and getevents:
/// the thread takes the new entries by itself, so the kernel is entered
/// only to wake it once it sleeps (`IORING_SQ_NEED_WAKEUP`), and
/// completions are awaited by watching the completion queue, not in
/// `io_uring_enter`. Only a wait longer than [`SQPOLL_SPINS`] checks, or
/// one with a deadline, goes to the kernel.
pub(crate) fn submit_ring<S: squeue::EntryMarker, C: io_uring::cqueue::EntryMarker>(
    ring: &mut IoUring<S, C>,
    wait: u32,
    timeout: Option<Duration>,
) -> std::io::Result<()> {
    if ring.params().is_setup_sqpoll() && timeout.is_none() {
        // Enters only when the thread sleeps (or the CQ overflowed).
        retry_enter(|| ring.submit())?;
        let mut spins = 0;
        while (ring.completion().len() as u32) < wait {
            if spins == SQPOLL_SPINS {
                return retry_enter(|| ring.submit_and_wait(wait as usize));
            }
            spins += 1;
            std::hint::spin_loop();
        }
        return Ok(());
    }
    retry_enter(|| match timeout {
        Some(d) if wait > 0 => {
            let ts = types::Timespec::new()
                .sec(d.as_secs())
                .nsec(d.subsec_nanos());
            let args = types::SubmitArgs::new().timespec(&ts);
            ring.submitter().submit_with_args(wait as usize, &args)
        }
        _ => ring.submit_and_wait(wait as usize),
    })
}

/// Run one `io_uring_enter` until it is not interrupted by a signal; a
/// timeout, or a full completion queue (EBUSY/EAGAIN), is not an error.
fn retry_enter(mut enter: impl FnMut() -> std::io::Result<usize>) -> std::io::Result<()> {
    loop {
        match enter() {
            Ok(_) => return Ok(()),
            Err(e) => match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ETIME) | Some(libc::EBUSY) | Some(libc::EAGAIN) => return Ok(()),
                _ => return Err(e),
            },
        }
    }
}

/// fio's `force_async=N`: every Nth SQE is marked IOSQE_ASYNC (sent to
/// the kernel's io-wq workers at once instead of tried inline first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ForceAsync {
    /// N (0: never).
    every: u32,
    /// SQEs since the last one marked.
    pub(super) since: u32,
}

impl ForceAsync {
    /// Every `n`th SQE (0: none).
    pub fn every(n: u32) -> ForceAsync {
        ForceAsync { every: n, since: 0 }
    }

    /// Whether the SQE being built is marked (counts it).
    #[inline]
    pub fn next(&mut self) -> bool {
        if self.every == 0 {
            return false;
        }
        self.since += 1;
        if self.since == self.every {
            self.since = 0;
            return true;
        }
        false
    }
}

/// How a ring of fio's io_uring engines is set up: polled completions
/// (`hipri`) and a submission thread (`sqthread_poll`, pinned to
/// `sqthread_poll_cpu`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RingSetup {
    /// IORING_SETUP_IOPOLL.
    pub iopoll: bool,
    /// IORING_SETUP_SQPOLL.
    pub sqpoll: bool,
    /// IORING_SETUP_SQ_AFF with this CPU (with `sqpoll`).
    pub sqpoll_cpu: Option<u32>,
}

/// A ring of `entries` submission and `cq_entries` completion entries set
/// up as `setup` asks, single-issuer with cooperative task-run where the
/// kernel takes them, each dropped where it does not (older kernels; the
/// flags that `setup` asks for are never dropped). Single issuer +
/// cooperative task-run: completions are handled when the loop next enters
/// the kernel, without interrupting it. Measured against deferred task-run
/// here: equal or better on every device tried (4 KiB random read QD32,
/// medians of 3: zram 383k vs 360k IOPS, loop over tmpfs 336k vs 324k),
/// because work the kernel punts to io-wq (bio-based devices without
/// NOWAIT, such as zram) completes without waiting for the next enter.
pub(crate) fn build_ring<S: squeue::EntryMarker, C: io_uring::cqueue::EntryMarker>(
    entries: u32,
    cq_entries: u32,
    setup: RingSetup,
) -> std::io::Result<IoUring<S, C>> {
    let build = |coop: bool, single: bool| {
        let mut b = IoUring::<S, C>::builder();
        if setup.iopoll {
            b.setup_iopoll();
        }
        if setup.sqpoll {
            // Idle 0: the kernel's default (one second).
            b.setup_sqpoll(0);
            if let Some(cpu) = setup.sqpoll_cpu {
                b.setup_sqpoll_cpu(cpu);
            }
        }
        b.setup_cqsize(cq_entries);
        if coop {
            // The flag says when a completion waits to be posted, so a
            // loop polling the completion queue enters the kernel only
            // then ([`Engine::completion_ready`]).
            b.setup_coop_taskrun().setup_taskrun_flag();
        }
        if single {
            b.setup_single_issuer();
        }
        b.build(entries)
    };
    build(true, true)
        .or_else(|_| build(true, false))
        .or_else(|_| build(false, true))
        .or_else(|_| build(false, false))
}
