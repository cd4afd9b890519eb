//! The engine interface and its three implementations.
//!
//! An engine takes I/Os into numbered slots (`queue`), hands them to the
//! kernel in one batch (`commit`, which may also wait for completions) and
//! returns what finished (`reap`). Slot `i` always uses buffer `i` of the
//! engine's [`BufferPool`], so nothing is allocated per I/O. The job loop is
//! generic over the engine, so dispatch costs nothing per I/O.
//!
//! - [`Uring`]: io_uring with registered files and buffers (`READ_FIXED` /
//!   `WRITE_FIXED`), single-issuer + cooperative task-run rings where the
//!   kernel has them, one `io_uring_enter` per loop turn that both submits and waits.
//!   fio's io_uring options ([`UringOptions`]): polled completions
//!   (`hipri`: IOPOLL), a kernel thread that submits (`sqthread_poll`:
//!   SQPOLL, pinned with `sqthread_poll_cpu`), `nowait` (RWF_NOWAIT) and
//!   `force_async` (IOSQE_ASYNC on every Nth SQE).
//! - [`Psync`]: `pread`/`pwrite`, one I/O at a time, for comparison;
//!   `preadv2`/`pwritev2` with fio's pvsync2 flags ([`PsyncOptions`]).
//! - [`Null`]: completes every I/O at once without touching a target: the
//!   pipeline's own cost.
//!
//! Trims are synchronous `BLKDISCARD` ioctls on block devices and
//! `fallocate(PUNCH_HOLE)` on files, as fio does for its io_uring engine.

use std::collections::VecDeque;
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::time::Duration;

use io_uring::{opcode, squeue, types, IoUring};

use drivelab_device::claim::Claim;
use drivelab_device::zero::discard_range;

use crate::buf::{BufferPool, Fill};
use crate::io::{IoDesc, Op};
use crate::openset::Opener;

/// What finished: the slot and the kernel's result (bytes, or −errno).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The slot the I/O was queued in.
    pub slot: u32,
    /// Bytes transferred (≥ 0) or a negated errno.
    pub result: i32,
}

/// What an engine can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Several I/Os can be in flight at once.
    pub asynchronous: bool,
    /// The engine touches real targets.
    pub real_io: bool,
}

/// The small interface every engine implements.
pub trait Engine {
    /// fio's name for the engine.
    fn name(&self) -> &'static str;
    /// Capabilities.
    fn caps(&self) -> Caps;
    /// How many slots (and buffers) the engine has.
    fn depth(&self) -> u32;
    /// Put an I/O into a free slot (the caller owns slot bookkeeping).
    fn queue(&mut self, slot: u32, io: &IoDesc);
    /// Queue an I/O with its own I/O priority (the kernel's ioprio value:
    /// class << 13 | level). An engine that cannot carry a priority per
    /// I/O queues it as [`queue`](Engine::queue) does: it then runs at the
    /// thread's priority.
    fn queue_prio(&mut self, slot: u32, io: &IoDesc, _ioprio: u16) {
        self.queue(slot, io)
    }
    /// Submit what was queued; then wait until at least `wait` completions
    /// are ready or `timeout` passes.
    fn commit(&mut self, wait: u32, timeout: Option<Duration>) -> std::io::Result<()>;
    /// Hand every ready completion to `f`; returns how many.
    fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize;
    /// Hand at most `max` ready completions to `f` (fio's
    /// `iodepth_batch_complete_max`), leaving the rest for the next call;
    /// returns how many. An engine that cannot leave completions for later
    /// hands over all, as [`reap`](Engine::reap) does.
    #[inline]
    fn reap_max<F: FnMut(Completion)>(&mut self, _max: usize, f: F) -> usize {
        self.reap(f)
    }
    /// The buffer of a slot (to fill before a write or check after a read).
    fn buffer(&mut self, slot: u32) -> &mut [u8];
    /// Open target `target` (fio's `openfiles`: an engine made over an
    /// [`Opener`] opens its files when told). An engine whose targets are
    /// all open from the start has nothing to do.
    fn open_file(&mut self, _target: u32) -> std::io::Result<()> {
        Ok(())
    }
    /// Close target `target`, which has no I/O in flight (an engine whose
    /// targets stay open has nothing to do).
    fn close_file(&mut self, _target: u32) -> std::io::Result<()> {
        Ok(())
    }
}

/// The most slots an engine has: io_uring rings take at most 32768
/// submission entries, and every other engine is held to the same bound so
/// that one limit (the workload option table's `iodepth` maximum) is true
/// for all of them.
pub const MAX_DEPTH: u32 = 32768;

/// One file or block device an engine does I/O on. It can only be made
/// from a device [`Claim`] (reads and writes) or by a read-only open, so
/// no engine can write to anything that was not claimed.
#[derive(Debug)]
pub struct Target {
    file: File,
    is_block: bool,
}

impl Target {
    /// The claimed target, opened for reading and writing (`O_DIRECT` when
    /// `direct`). The claim stays in force while the target lives.
    pub fn claimed(claim: &Claim, direct: bool) -> std::io::Result<Target> {
        Ok(Target {
            file: claim.io_file(direct)?,
            is_block: claim.is_block(),
        })
    }

    /// `path` opened read-only (`O_DIRECT` when `direct`): writes to it
    /// fail with EBADF.
    pub fn read_only(path: &Path, direct: bool) -> std::io::Result<Target> {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let mut o = std::fs::OpenOptions::new();
        o.read(true);
        if direct {
            o.custom_flags(libc::O_DIRECT);
        }
        let file = o.open(path)?;
        let is_block = file.metadata()?.file_type().is_block_device();
        Ok(Target { file, is_block })
    }

    /// File `i` of a claimed file set, opened for reading and writing
    /// (`O_DIRECT` when `direct`; created first when `create`: fio's
    /// `create_on_open`). The set stays the claim while the target lives.
    pub fn from_set(
        set: &drivelab_device::claim::FileSet,
        i: usize,
        direct: bool,
        create: bool,
    ) -> std::io::Result<Target> {
        Ok(Target {
            file: set.open_io(i, direct, create)?,
            is_block: false,
        })
    }

    /// The open descriptor, for the engines of this crate.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Whether it is a block device.
    pub fn is_block(&self) -> bool {
        self.is_block
    }
}

fn trim_sync(t: &Target, offset: u64, len: u64) -> i32 {
    match discard_range(&t.file, t.is_block, offset, len) {
        Ok(()) => len.min(i32::MAX as u64) as i32,
        Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
    }
}

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
    since: u32,
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
            b.setup_coop_taskrun();
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

/// Hand every completion in `q` to `f`, oldest first; returns how many.
pub(crate) fn drain<F: FnMut(Completion)>(q: &mut VecDeque<Completion>, mut f: F) -> usize {
    let n = q.len();
    while let Some(c) = q.pop_front() {
        f(c);
    }
    n
}

// ---------------------------------------------------------------- io_uring

/// fio's options of its io_uring engine that change what drivelab's ring
/// does. Its other options are what the ring always does: `registerfiles`
/// (every target is a registered file), `fixedbufs` (the slot buffers are
/// registered: READ_FIXED / WRITE_FIXED) and `nonvectored` (no iovecs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UringOptions {
    /// `hipri`: completions are polled (IORING_SETUP_IOPOLL); the targets
    /// must be open O_DIRECT. Default off.
    pub hipri: bool,
    /// `sqthread_poll`: a kernel thread takes the submissions
    /// (IORING_SETUP_SQPOLL). Default off.
    pub sqthread_poll: bool,
    /// `sqthread_poll_cpu`: the CPU that thread is pinned to
    /// (IORING_SETUP_SQ_AFF). Default: unpinned.
    pub sqthread_poll_cpu: Option<u32>,
    /// `nowait`: reads and writes carry RWF_NOWAIT; one that would block
    /// completes with EAGAIN. Default off.
    pub nowait: bool,
    /// `force_async=N`: every Nth SQE carries IOSQE_ASYNC (0: none, the
    /// default).
    pub force_async: u32,
}

impl UringOptions {
    fn setup(&self) -> RingSetup {
        RingSetup {
            iopoll: self.hipri,
            sqpoll: self.sqthread_poll,
            sqpoll_cpu: self.sqthread_poll_cpu.filter(|_| self.sqthread_poll),
        }
    }
}

/// io_uring with registered files and buffers.
pub struct Uring {
    ring: IoUring,
    /// Per target: open (always, unless made over an [`Opener`]).
    targets: Vec<Option<Target>>,
    /// Per target: its entry in the registered file table.
    fixed: Vec<u32>,
    /// Made over an opener: it, and the table entries no file uses.
    opener: Option<(Opener, Vec<u32>)>,
    /// Dropped by hand in `Drop`, only once no I/O can still reach it.
    pool: ManuallyDrop<BufferPool>,
    /// Per slot: an SQE naming the slot's buffer is with the kernel.
    busy: Vec<bool>,
    /// How many slots are busy.
    in_flight: u32,
    depth: u32,
    fixed_bufs: bool,
    /// rw_flags of every read (RWF_NOWAIT with `nowait`).
    read_flags: i32,
    /// rw_flags of every write (RWF_DSYNC with FUA, RWF_NOWAIT with `nowait`).
    write_flags: i32,
    /// `force_async`: which SQEs go to io-wq.
    force_async: ForceAsync,
    opts: UringOptions,
    /// Per target: hand reads and writes to io-wq at once (IOSQE_ASYNC)
    /// because the device cannot take them non-blocking (bio-based drivers
    /// such as zram). Measured on zram, 4 KiB random read QD32: 400–416k
    /// IOPS with it against 323–354k without; on blk-mq devices it only
    /// adds a thread hop, so it is off there.
    punt: Vec<bool>,
    /// Completions produced without the ring (synchronous trims).
    immediate: VecDeque<Completion>,
}

/// First every I/O still with the kernel completes: until then the kernel
/// may write into the buffers (a dropped ring is torn down later, in a
/// kernel worker), so they are unmapped only after. If waiting fails the
/// buffers are leaked rather than unmapped under the kernel.
///
/// Dropping a ring tears it down in a kernel worker, after the process has
/// moved on (or exited): the registered files stay referenced until then,
/// so a device opened O_EXCL (an erase) would still be claimed, and the
/// next exclusive open of it (the next erase or verification, even in the
/// same process) would fail with EBUSY. Unregistering the files first
/// drops those references now; the caller's own descriptors close right
/// after, with `targets`.
impl Drop for Uring {
    fn drop(&mut self) {
        let settled = self.settle();
        let _ = self.ring.submitter().unregister_files();
        if settled {
            // SAFETY: no I/O is in flight, so nothing but the pool refers to
            // its memory, and `pool` is not used after this line.
            unsafe { ManuallyDrop::drop(&mut self.pool) };
        }
    }
}

impl Uring {
    /// A ring of `depth` slots over `targets`, each slot with a buffer of
    /// `max_len` bytes. `fua` makes writes RWF_DSYNC (FUA on direct I/O).
    pub fn new(
        targets: Vec<Target>,
        depth: u32,
        max_len: usize,
        fua: bool,
        fill: Fill,
    ) -> std::io::Result<Uring> {
        Uring::with_options(targets, depth, max_len, fua, fill, UringOptions::default())
    }

    /// As [`Uring::new`], set up as fio's io_uring engine is for `opts`.
    pub fn with_options(
        targets: Vec<Target>,
        depth: u32,
        max_len: usize,
        fua: bool,
        fill: Fill,
        opts: UringOptions,
    ) -> std::io::Result<Uring> {
        let ring = Uring::ring(depth, &opts)?;
        let fds: Vec<RawFd> = targets.iter().map(|t| t.file.as_raw_fd()).collect();
        ring.submitter().register_files(&fds)?;
        let fixed = (0..targets.len() as u32).collect();
        let targets = targets.into_iter().map(Some).collect();
        Uring::with_ring(ring, targets, fixed, None, depth, max_len, fua, fill, opts)
    }

    /// A ring over the files `opener` opens when told (fio's `openfiles`):
    /// none is open at first; a sparse registered table has an entry for
    /// each file that may be open at once; set up as fio's io_uring engine
    /// is for `opts`.
    pub fn over_opener(
        opener: Opener,
        depth: u32,
        max_len: usize,
        fua: bool,
        fill: Fill,
        opts: UringOptions,
    ) -> std::io::Result<Uring> {
        let ring = Uring::ring(depth, &opts)?;
        let limit = opener.limit();
        // A sparse table (5.19 on); before that, a table of empty (-1)
        // entries does the same.
        if ring.submitter().register_files_sparse(limit).is_err() {
            ring.submitter().register_files(&vec![-1; limit as usize])?;
        }
        let n = opener.targets();
        let free = (0..limit).rev().collect();
        Uring::with_ring(
            ring,
            (0..n).map(|_| None).collect(),
            vec![u32::MAX; n],
            Some((opener, free)),
            depth,
            max_len,
            fua,
            fill,
            opts,
        )
    }

    fn ring(depth: u32, opts: &UringOptions) -> std::io::Result<IoUring> {
        let depth = depth.clamp(1, MAX_DEPTH);
        let entries = depth.next_power_of_two().max(2);
        build_ring(entries, entries * 2, opts.setup())
    }

    #[allow(clippy::too_many_arguments)]
    fn with_ring(
        ring: IoUring,
        targets: Vec<Option<Target>>,
        fixed: Vec<u32>,
        opener: Option<(Opener, Vec<u32>)>,
        depth: u32,
        max_len: usize,
        fua: bool,
        fill: Fill,
        opts: UringOptions,
    ) -> std::io::Result<Uring> {
        let depth = depth.clamp(1, MAX_DEPTH);
        let punt = targets
            .iter()
            .map(|t| t.as_ref().is_some_and(punts))
            .collect();
        let pool = BufferPool::new(depth as usize, max_len, fill)?;
        let iovecs = pool.iovecs();
        // SAFETY: the iovecs describe the pool's mapping, which lives as
        // long as `self` and is unmapped only after the ring is dropped
        // (field order: `ring` drops before `pool`).
        let fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        let nowait = if opts.nowait { libc::RWF_NOWAIT } else { 0 };
        Ok(Uring {
            ring,
            targets,
            fixed,
            opener,
            pool: ManuallyDrop::new(pool),
            busy: vec![false; depth as usize],
            in_flight: 0,
            depth,
            fixed_bufs,
            read_flags: nowait,
            write_flags: nowait | if fua { libc::RWF_DSYNC } else { 0 },
            force_async: ForceAsync::every(opts.force_async),
            opts,
            punt,
            immediate: VecDeque::with_capacity(depth as usize),
        })
    }

    /// Wait for every I/O still with the kernel and drop its completion;
    /// false if the ring failed first.
    fn settle(&mut self) -> bool {
        while self.in_flight > 0 {
            if let Err(e) = self.ring.submit_and_wait(1) {
                if !matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN)
                ) {
                    return false;
                }
            }
            self.reap(|_| {});
        }
        true
    }

    /// Whether an I/O may be queued in `slot`: the slot exists, a read's or
    /// write's transfer fits its buffer (trims and flushes carry none) and
    /// the target exists. Anything else would
    /// hand the kernel memory or a file the engine does not own, so it
    /// completes at once with EINVAL instead.
    #[inline]
    fn fits(&self, slot: u32, io: &IoDesc) -> bool {
        let moves_data = matches!(io.op, Op::Read | Op::Write);
        slot < self.depth
            && (!moves_data || (io.len as usize) <= self.pool.stride())
            && self
                .targets
                .get(io.target as usize)
                .is_some_and(Option::is_some)
    }

    /// Whether the buffers are registered (READ_FIXED/WRITE_FIXED).
    pub fn fixed_buffers(&self) -> bool {
        self.fixed_bufs
    }

    /// The options the ring was set up with.
    pub fn options(&self) -> UringOptions {
        self.opts
    }
}

impl Engine for Uring {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn caps(&self) -> Caps {
        Caps {
            asynchronous: true,
            real_io: true,
        }
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    /// # Panics
    /// If `slot` is already queued and not yet reaped.
    #[inline]
    fn queue(&mut self, slot: u32, io: &IoDesc) {
        self.queue_prio(slot, io, 0)
    }

    fn queue_prio(&mut self, slot: u32, io: &IoDesc, ioprio: u16) {
        assert!(
            !self.busy.get(slot as usize).copied().unwrap_or(false),
            "slot {slot} queued again before its completion was reaped"
        );
        if !self.fits(slot, io) {
            // A file of the job that is not open (openfiles): EBADF, as
            // its descriptor would give; anything else EINVAL.
            let closed = matches!(self.targets.get(io.target as usize), Some(None));
            self.immediate.push_back(Completion {
                slot,
                result: if closed { -libc::EBADF } else { -libc::EINVAL },
            });
            return;
        }
        let fd = types::Fixed(self.fixed[io.target as usize]);
        let buf = match io.op {
            Op::Read | Op::Write => self.pool.ptr(slot as usize),
            Op::Fsync | Op::Trim => std::ptr::null_mut(),
        };
        let sqe: squeue::Entry = match io.op {
            Op::Read if self.fixed_bufs => opcode::ReadFixed::new(fd, buf, io.len, slot as u16)
                .offset(io.offset)
                .rw_flags(self.read_flags)
                .ioprio(ioprio)
                .build(),
            Op::Read => opcode::Read::new(fd, buf, io.len)
                .offset(io.offset)
                .rw_flags(self.read_flags)
                .ioprio(ioprio)
                .build(),
            Op::Write if self.fixed_bufs => opcode::WriteFixed::new(fd, buf, io.len, slot as u16)
                .offset(io.offset)
                .rw_flags(self.write_flags)
                .ioprio(ioprio)
                .build(),
            Op::Write => opcode::Write::new(fd, buf, io.len)
                .offset(io.offset)
                .rw_flags(self.write_flags)
                .ioprio(ioprio)
                .build(),
            Op::Fsync => opcode::Fsync::new(fd).build(),
            Op::Trim => {
                let result = match &self.targets[io.target as usize] {
                    Some(t) => trim_sync(t, io.offset, u64::from(io.len)),
                    None => -libc::EBADF,
                };
                self.immediate.push_back(Completion { slot, result });
                return;
            }
        };
        let mut sqe = sqe.user_data(u64::from(slot));
        if self.punt[io.target as usize] && io.op != Op::Fsync {
            sqe = sqe.flags(squeue::Flags::ASYNC);
        }
        if self.force_async.next() {
            sqe = sqe.flags(squeue::Flags::ASYNC);
        }
        // SAFETY: the buffer and the registered file referenced by the SQE
        // stay valid until the completion is reaped: `fits` checked the slot
        // and that the transfer fits its buffer; the slot is marked busy
        // below, so it is not queued again, its buffer is not lent out
        // (`buffer` panics) and the pool is not unmapped (`Drop` waits)
        // before then. The SQ has `entries >= depth` places and at most
        // `depth` I/Os are outstanding, so it cannot be full; if it were,
        // commit first.
        unsafe {
            if self.ring.submission().push(&sqe).is_err() {
                let _ = self.ring.submit();
                let _ = self.ring.submission().push(&sqe);
            }
        }
        self.busy[slot as usize] = true;
        self.in_flight += 1;
    }

    fn commit(&mut self, wait: u32, timeout: Option<Duration>) -> std::io::Result<()> {
        let wait = if self.immediate.is_empty() { wait } else { 0 };
        submit_ring(&mut self.ring, wait, timeout)
    }

    #[inline]
    fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize {
        self.reap_max(usize::MAX, f)
    }

    #[inline]
    fn reap_max<F: FnMut(Completion)>(&mut self, max: usize, mut f: F) -> usize {
        // Completions made without the kernel all go at once.
        let mut n = drain(&mut self.immediate, &mut f);
        // The queue's head moves past only the entries taken.
        for cqe in self.ring.completion().take(max.saturating_sub(n)) {
            let slot = cqe.user_data() as u32;
            if let Some(b) = self.busy.get_mut(slot as usize) {
                if std::mem::take(b) {
                    self.in_flight -= 1;
                }
            }
            f(Completion {
                slot,
                result: cqe.result(),
            });
            n += 1;
        }
        n
    }

    /// # Panics
    /// If the slot does not exist or its I/O is still with the kernel.
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        assert!(
            !self.busy.get(slot as usize).copied().unwrap_or(false),
            "buffer of slot {slot} asked for while its I/O is in flight"
        );
        self.pool.slice(slot as usize)
    }

    fn open_file(&mut self, target: u32) -> std::io::Result<()> {
        let Some((opener, free)) = self.opener.as_mut() else {
            return Ok(());
        };
        let t = target as usize;
        if self.targets.get(t).is_none_or(Option::is_some) {
            return Ok(());
        }
        let f = opener.open(target)?;
        let Some(entry) = free.pop() else {
            return Err(std::io::Error::from_raw_os_error(libc::EMFILE));
        };
        if let Err(e) = self
            .ring
            .submitter()
            .register_files_update(entry, &[f.file.as_raw_fd()])
        {
            free.push(entry);
            return Err(e);
        }
        self.punt[t] = punts(&f);
        self.fixed[t] = entry;
        self.targets[t] = Some(f);
        Ok(())
    }

    fn close_file(&mut self, target: u32) -> std::io::Result<()> {
        let Some((_, free)) = self.opener.as_mut() else {
            return Ok(());
        };
        let t = target as usize;
        if self.targets.get(t).is_none_or(Option::is_none) {
            return Ok(());
        }
        let entry = std::mem::replace(&mut self.fixed[t], u32::MAX);
        // The entry lets go of the file (no I/O of it is in flight: the
        // caller closes only then), then the descriptor closes.
        let r = self.ring.submitter().register_files_update(entry, &[-1]);
        free.push(entry);
        self.targets[t] = None;
        r.map(|_| ())
    }
}

/// Whether reads and writes of `t` go to io-wq at once (see `Uring::punt`).
fn punts(t: &Target) -> bool {
    use std::os::unix::fs::MetadataExt;
    t.is_block
        && t.file.metadata().is_ok_and(|m| {
            let rdev = m.rdev();
            !drivelab_device::blockdev::takes_nowait(libc::major(rdev), libc::minor(rdev))
        })
}

// ---------------------------------------------------------------- psync

/// fio's pvsync2 options: flags of every `preadv2`/`pwritev2`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PsyncOptions {
    /// `hipri`: RWF_HIPRI (the kernel polls for the completion where the
    /// device has poll queues). Default off.
    pub hipri: bool,
    /// `nowait`: RWF_NOWAIT (an I/O that would block fails with EAGAIN).
    /// Default off.
    pub nowait: bool,
    /// `hipri_percentage`: with `hipri`, the share of I/Os (0-100) that
    /// carry RWF_HIPRI, each I/O drawn at random as fio does. None: every
    /// I/O (fio's default, 100).
    pub hipri_percentage: Option<u8>,
}

/// The seed of the `hipri_percentage` draws: any nonzero value.
const HIPRI_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// pread/pwrite, one I/O per commit.
pub struct Psync {
    /// Per target: open (always, unless made over an [`Opener`]).
    targets: Vec<Option<Target>>,
    opener: Option<Opener>,
    pool: BufferPool,
    pending: VecDeque<(u32, IoDesc)>,
    done: VecDeque<Completion>,
    /// preadv2 flags of every read; 0: plain pread.
    read_flags: i32,
    /// pwritev2 flags of every write (RWF_DSYNC with FUA); 0: plain pwrite.
    write_flags: i32,
    /// `hipri_percentage` below 100 with `hipri`: the share of I/Os that
    /// keep RWF_HIPRI, and the state of the generator that draws them.
    hipri_share: Option<(u8, u64)>,
}

impl Psync {
    /// A synchronous engine over `targets` (depth is always 1, as fio's psync).
    pub fn new(
        targets: Vec<Target>,
        max_len: usize,
        fua: bool,
        fill: Fill,
    ) -> std::io::Result<Psync> {
        Ok(Psync {
            targets: targets.into_iter().map(Some).collect(),
            opener: None,
            pool: BufferPool::new(1, max_len, fill)?,
            pending: VecDeque::with_capacity(1),
            done: VecDeque::with_capacity(1),
            read_flags: 0,
            write_flags: if fua { libc::RWF_DSYNC } else { 0 },
            hipri_share: None,
        })
    }

    /// Reads and writes become `preadv2`/`pwritev2` with `opts`' flags
    /// (fio's pvsync2).
    pub fn with_options(mut self, opts: PsyncOptions) -> Psync {
        let mut f = 0;
        if opts.hipri {
            f |= libc::RWF_HIPRI;
        }
        if opts.nowait {
            f |= libc::RWF_NOWAIT;
        }
        self.read_flags = f;
        self.write_flags |= f;
        self.hipri_share = match opts.hipri_percentage {
            Some(p) if opts.hipri && p < 100 => Some((p, HIPRI_SEED)),
            _ => None,
        };
        self
    }

    /// The flags of the next read and write: RWF_HIPRI kept on a draw of
    /// 1..=100 at most the `hipri_percentage` (fio's pvsync2), otherwise
    /// the flags as set.
    fn next_flags(&mut self) -> (i32, i32) {
        let Some((share, state)) = self.hipri_share.as_mut() else {
            return (self.read_flags, self.write_flags);
        };
        // xorshift64: a cheap, fixed-seed sequence (fio seeds its own the same way each run).
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let draw = (*state % 100) as u8 + 1;
        if draw <= *share {
            (self.read_flags, self.write_flags)
        } else {
            (
                self.read_flags & !libc::RWF_HIPRI,
                self.write_flags & !libc::RWF_HIPRI,
            )
        }
    }

    /// A synchronous engine over the files `opener` opens when told
    /// (fio's `openfiles`); none is open at first.
    pub fn over_opener(
        opener: Opener,
        max_len: usize,
        fua: bool,
        fill: Fill,
    ) -> std::io::Result<Psync> {
        let mut p = Psync::new(Vec::new(), max_len, fua, fill)?;
        p.targets = (0..opener.targets()).map(|_| None).collect();
        p.opener = Some(opener);
        Ok(p)
    }

    fn run_one(&mut self, slot: u32, io: &IoDesc) -> i32 {
        let (read_flags, write_flags) = self.next_flags();
        let Some(Some(t)) = self.targets.get(io.target as usize) else {
            return -libc::EBADF;
        };
        let fd = t.file.as_raw_fd();
        let len = io.len as usize;
        let buf = match io.op {
            Op::Read | Op::Write => match self.pool.io_ptr(slot as usize, len) {
                Some(p) => p,
                None => return -libc::EINVAL,
            },
            Op::Fsync | Op::Trim => std::ptr::null_mut(),
        };
        let off = io.offset as libc::off_t;
        let iov = libc::iovec {
            iov_base: buf.cast(),
            iov_len: len,
        };
        // SAFETY: for reads and writes `buf` (and `iov`, which describes
        // it) points at slot buffer `slot`, which `io_ptr` checked holds
        // `len` bytes; the fd is open.
        let r: isize = unsafe {
            match io.op {
                Op::Read if read_flags != 0 => libc::preadv2(fd, &iov, 1, off, read_flags),
                Op::Read => libc::pread(fd, buf.cast(), len, off),
                Op::Write if write_flags != 0 => libc::pwritev2(fd, &iov, 1, off, write_flags),
                Op::Write => libc::pwrite(fd, buf.cast(), len, off),
                Op::Fsync => libc::fsync(fd) as isize,
                Op::Trim => return trim_sync(t, io.offset, u64::from(io.len)),
            }
        };
        if r < 0 {
            -std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        } else {
            r.min(i32::MAX as isize) as i32
        }
    }
}

impl Engine for Psync {
    fn name(&self) -> &'static str {
        "psync"
    }

    fn caps(&self) -> Caps {
        Caps {
            asynchronous: false,
            real_io: true,
        }
    }

    fn depth(&self) -> u32 {
        1
    }

    fn queue(&mut self, slot: u32, io: &IoDesc) {
        self.pending.push_back((slot, *io));
    }

    fn commit(&mut self, _wait: u32, _timeout: Option<Duration>) -> std::io::Result<()> {
        while let Some((slot, io)) = self.pending.pop_front() {
            let result = self.run_one(slot, &io);
            self.done.push_back(Completion { slot, result });
        }
        Ok(())
    }

    fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize {
        drain(&mut self.done, f)
    }

    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slice(slot as usize)
    }

    fn open_file(&mut self, target: u32) -> std::io::Result<()> {
        let Some(opener) = &self.opener else {
            return Ok(());
        };
        match self.targets.get_mut(target as usize) {
            Some(t @ None) => {
                *t = Some(opener.open(target)?);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn close_file(&mut self, target: u32) -> std::io::Result<()> {
        if self.opener.is_some() {
            if let Some(t) = self.targets.get_mut(target as usize) {
                *t = None;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- null

/// Completes every I/O immediately with its full length; touches nothing.
pub struct Null {
    depth: u32,
    pool: BufferPool,
    done: VecDeque<Completion>,
}

impl Null {
    /// A null engine of `depth` slots (buffers of `max_len` bytes exist so
    /// callers that fill or check buffers behave the same).
    pub fn new(depth: u32, max_len: usize, fill: Fill) -> std::io::Result<Null> {
        let depth = depth.clamp(1, MAX_DEPTH);
        Ok(Null {
            depth,
            pool: BufferPool::new(depth as usize, max_len, fill)?,
            done: VecDeque::with_capacity(depth as usize),
        })
    }
}

impl Engine for Null {
    fn name(&self) -> &'static str {
        "null"
    }

    fn caps(&self) -> Caps {
        Caps {
            asynchronous: true,
            real_io: false,
        }
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    #[inline]
    fn queue(&mut self, slot: u32, io: &IoDesc) {
        let result = if io.op == Op::Fsync { 0 } else { io.len as i32 };
        self.done.push_back(Completion { slot, result });
    }

    fn commit(&mut self, _wait: u32, _timeout: Option<Duration>) -> std::io::Result<()> {
        Ok(())
    }

    #[inline]
    fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize {
        drain(&mut self.done, f)
    }

    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slice(slot as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64 KiB scratch file (removed on drop) as a psync/io_uring target.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let p =
                std::env::temp_dir().join(format!("drivelab-engine-{tag}-{}", std::process::id()));
            std::fs::write(&p, vec![7u8; 65536]).unwrap();
            Scratch(p)
        }
        fn target(&self) -> Vec<Target> {
            use drivelab_device::claim::{ClaimOptions, Consent};
            let c = Claim::open(&self.0, &Consent::default(), &ClaimOptions::default()).unwrap();
            vec![Target::claimed(&c, false).unwrap()]
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn read(len: u32) -> IoDesc {
        IoDesc {
            target: 0,
            op: Op::Read,
            offset: 0,
            len,
        }
    }

    /// Queue `io` on slot 0, commit, and return its result.
    fn one<E: Engine>(e: &mut E, io: IoDesc) -> i32 {
        e.queue(0, &io);
        e.commit(1, Some(Duration::from_secs(5))).unwrap();
        let mut got = Vec::new();
        e.reap(|c| got.push(c));
        assert_eq!(got.len(), 1, "one completion for one I/O");
        got[0].result
    }

    #[test]
    fn transfers_longer_than_a_buffer_are_refused_not_issued() {
        let f = Scratch::new("long");
        let mut p = Psync::new(f.target(), 4096, false, Fill::Zeroed).unwrap();
        assert_eq!(one(&mut p, read(4096)), 4096);
        assert_eq!(p.buffer(0)[..4096], [7u8; 4096]);
        assert_eq!(one(&mut p, read(8192)), -libc::EINVAL);
        // The engine's target keeps the file claimed: let it go first.
        drop(p);
        let mut u = Uring::new(f.target(), 2, 4096, false, Fill::Zeroed).unwrap();
        assert_eq!(one(&mut u, read(4096)), 4096);
        assert_eq!(u.buffer(0)[..4096], [7u8; 4096]);
        assert_eq!(one(&mut u, read(8192)), -libc::EINVAL);
        // A trim's length is not a buffer's: a 32 KiB hole is punched.
        let trim = IoDesc {
            op: Op::Trim,
            len: 32768,
            ..read(0)
        };
        assert_eq!(one(&mut u, trim), 32768);
    }

    #[test]
    #[should_panic(expected = "slot 0 queued again before its completion was reaped")]
    fn uring_refuses_a_slot_still_in_flight() {
        let f = Scratch::new("twice");
        let mut u = Uring::new(f.target(), 2, 4096, false, Fill::Zeroed).unwrap();
        u.queue(0, &read(4096));
        u.queue(0, &read(4096));
    }

    #[test]
    #[should_panic(expected = "buffer of slot 1 asked for while its I/O is in flight")]
    fn uring_does_not_lend_a_buffer_the_kernel_may_write() {
        let f = Scratch::new("lend");
        let mut u = Uring::new(f.target(), 2, 4096, false, Fill::Zeroed).unwrap();
        u.queue(1, &read(4096));
        u.commit(0, None).unwrap();
        let _ = u.buffer(1);
    }

    #[test]
    fn uring_reuses_a_slot_once_reaped_and_drops_with_io_in_flight() {
        let f = Scratch::new("reuse");
        let mut u = Uring::new(f.target(), 2, 4096, false, Fill::Zeroed).unwrap();
        for _ in 0..3 {
            assert_eq!(one(&mut u, read(4096)), 4096);
        }
        u.queue(0, &read(4096));
        u.queue(1, &read(4096));
        u.commit(0, None).unwrap();
        assert_eq!(u.in_flight, 2);
        // Drop waits for both before unmapping their buffers.
        assert!(u.settle());
        assert_eq!(u.in_flight, 0);
        assert!(!u.busy.iter().any(|&b| b));
    }

    #[test]
    fn uring_options_set_up_the_ring_and_every_sqe() {
        let f = Scratch::new("opts");
        let o = UringOptions {
            sqthread_poll: true,
            sqthread_poll_cpu: Some(0),
            nowait: true,
            force_async: 3,
            ..UringOptions::default()
        };
        let mut u = Uring::with_options(f.target(), 4, 4096, false, Fill::Zeroed, o).unwrap();
        assert!(u.ring.params().is_setup_sqpoll());
        assert!(!u.ring.params().is_setup_iopoll());
        assert_eq!(
            (u.read_flags, u.write_flags),
            (libc::RWF_NOWAIT, libc::RWF_NOWAIT)
        );
        // The file's pages are cached (just written): RWF_NOWAIT reads
        // do not block, and every one completes through the thread.
        for i in 1..=7u32 {
            assert_eq!(one(&mut u, read(4096)), 4096);
            assert_eq!(u.buffer(0)[..4096], [7u8; 4096]);
            assert_eq!(u.force_async.since, i % 3, "force_async counts SQEs");
        }
        drop(u);
        // The same ring without options: no thread, no flags.
        let u = Uring::new(f.target(), 4, 4096, true, Fill::Zeroed).unwrap();
        assert!(!u.ring.params().is_setup_sqpoll());
        assert_eq!((u.read_flags, u.write_flags), (0, libc::RWF_DSYNC));
    }

    #[test]
    fn nowait_reads_of_uncached_pages_fail_with_eagain_as_in_fio() {
        let f = Scratch::new("nowait");
        let evict = || {
            let file = File::open(&f.0).unwrap();
            file.sync_all().unwrap();
            // SAFETY: a plain advice call on an open descriptor.
            let r =
                unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            assert_eq!(r, 0);
        };
        let nowait = UringOptions {
            nowait: true,
            ..UringOptions::default()
        };
        evict();
        let mut u = Uring::with_options(f.target(), 2, 4096, false, Fill::Zeroed, nowait).unwrap();
        // Not in the page cache: the read would block, so it fails (fio
        // counts it as an error too).
        assert_eq!(one(&mut u, read(4096)), -libc::EAGAIN);
        drop(u);
        evict();
        let mut u = Uring::new(f.target(), 2, 4096, false, Fill::Zeroed).unwrap();
        assert_eq!(one(&mut u, read(4096)), 4096);
    }

    #[test]
    fn hipri_on_buffered_io_fails_as_the_kernel_fails_it() {
        // Why the spec refuses io_uring's hipri without direct=1: an
        // IOPOLL ring fails buffered reads with EOPNOTSUPP.
        let f = Scratch::new("iopoll");
        let o = UringOptions {
            hipri: true,
            ..UringOptions::default()
        };
        let mut u = Uring::with_options(f.target(), 2, 4096, false, Fill::Zeroed, o).unwrap();
        assert!(u.ring.params().is_setup_iopoll());
        assert_eq!(one(&mut u, read(4096)), -libc::EOPNOTSUPP);
    }

    #[test]
    fn hipri_percentage_keeps_rwf_hipri_on_its_share_of_ios() {
        // (hipri, hipri_percentage, least and most I/Os of 1000 with RWF_HIPRI)
        let table: [(bool, Option<u8>, u32, u32); 5] = [
            (true, None, 1000, 1000),
            (true, Some(100), 1000, 1000),
            (true, Some(0), 0, 0),
            (true, Some(25), 200, 300),
            (false, Some(50), 0, 0),
        ];
        for (hipri, pct, lo, hi) in table {
            let f = Scratch::new("hipri-pct");
            let o = PsyncOptions {
                hipri,
                hipri_percentage: pct,
                ..PsyncOptions::default()
            };
            let mut p = Psync::new(f.target(), 4096, false, Fill::Zeroed)
                .unwrap()
                .with_options(o);
            let n = (0..1000)
                .filter(|_| {
                    let (r, w) = p.next_flags();
                    assert_eq!(r & libc::RWF_HIPRI, w & libc::RWF_HIPRI);
                    r & libc::RWF_HIPRI != 0
                })
                .count() as u32;
            assert!((lo..=hi).contains(&n), "{hipri} {pct:?}: {n}");
        }
    }

    #[test]
    fn pvsync2_flags_go_to_preadv2_and_pwritev2() {
        let f = Scratch::new("pv2");
        let o = PsyncOptions {
            hipri: true,
            nowait: true,
            ..PsyncOptions::default()
        };
        let mut p = Psync::new(f.target(), 4096, true, Fill::Zeroed)
            .unwrap()
            .with_options(o);
        let f2 = libc::RWF_HIPRI | libc::RWF_NOWAIT;
        assert_eq!((p.read_flags, p.write_flags), (f2, f2 | libc::RWF_DSYNC));
        // Buffered and cached: RWF_HIPRI is no error, RWF_NOWAIT does not block.
        assert_eq!(one(&mut p, read(4096)), 4096);
        assert_eq!(p.buffer(0)[..4096], [7u8; 4096]);
    }

    /// A set of `n` files of 8 KiB in a fresh directory, each file's bytes
    /// its number; the opener over them, at most `limit` open.
    fn file_set(tag: &str, n: usize, limit: u32) -> (drivelab_testkit::TempDir, Opener) {
        use drivelab_device::claim::{Consent, FileSet, SetKind};
        let dir = drivelab_testkit::TempDir::new(tag);
        let paths: Vec<_> = (0..n).map(|i| dir.path().join(format!("f{i}"))).collect();
        for (i, p) in paths.iter().enumerate() {
            std::fs::write(p, vec![i as u8; 8192]).unwrap();
        }
        let set = FileSet::claim(paths, SetKind::Files, &Consent::default()).unwrap();
        let opener = Opener::new(
            std::sync::Arc::new(set),
            (0..n).collect(),
            false,
            false,
            limit,
        );
        (dir, opener)
    }

    fn read_of(target: u32) -> IoDesc {
        IoDesc {
            target,
            ..read(4096)
        }
    }

    /// Files 0..4 through a table of 2: each read sees its own file's
    /// bytes, a closed file's I/O fails with EBADF, a third open fails.
    fn opens_and_closes_through_a_small_table<E: Engine>(e: &mut E) {
        assert_eq!(one(e, read_of(0)), -libc::EBADF);
        for pair in [[0u32, 1], [2, 3], [1, 2]] {
            for &t in &pair {
                e.open_file(t).unwrap();
            }
            for &t in &pair {
                assert_eq!(one(e, read_of(t)), 4096);
                assert_eq!(e.buffer(0)[..4096], [t as u8; 4096]);
            }
            for &t in &pair {
                e.close_file(t).unwrap();
                assert_eq!(one(e, read_of(t)), -libc::EBADF);
            }
        }
    }

    #[test]
    fn engines_over_an_opener_open_and_close_files_when_told() {
        let (_d, opener) = file_set("engine-openset", 4, 2);
        let mut p = Psync::over_opener(opener.clone(), 4096, false, Fill::Zeroed).unwrap();
        opens_and_closes_through_a_small_table(&mut p);
        drop(p);
        let mut u = Uring::over_opener(
            opener,
            2,
            4096,
            false,
            Fill::Zeroed,
            UringOptions::default(),
        )
        .unwrap();
        opens_and_closes_through_a_small_table(&mut u);
        // The registered table has two entries: a third file has none.
        u.open_file(0).unwrap();
        u.open_file(1).unwrap();
        let e = u.open_file(2).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EMFILE));
        assert_eq!(one(&mut u, read_of(1)), 4096);
    }
}
