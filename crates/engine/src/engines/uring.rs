//! [`Uring`]: io_uring with registered files and buffers (`READ_FIXED` /
//! `WRITE_FIXED`), single-issuer + cooperative task-run rings where the
//! kernel has them, one `io_uring_enter` per loop turn that both submits and
//! waits. fio's io_uring options ([`UringOptions`]): polled completions
//! (`hipri`: IOPOLL), a kernel thread that submits (`sqthread_poll`:
//! SQPOLL, pinned with `sqthread_poll_cpu`), `nowait` (RWF_NOWAIT) and
//! `force_async` (IOSQE_ASYNC on every Nth SQE).

use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use io_uring::{opcode, squeue, types, IoUring};

use crate::buf::{BufferPool, Fill};
use crate::engine::interface::{drain, Caps, Completion, Engine, MAX_DEPTH};
use crate::engines::ring::{build_ring, submit_ring, ForceAsync, RingSetup};
use crate::io::{IoDesc, Op};
use crate::openset::Opener;
use crate::target::{trim_sync, Target};

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

    /// Every write also carries `flags` (RWF_SYNC or RWF_DSYNC: fio's
    /// `sync`, which the kernel turns into the same per-write flags).
    pub fn with_write_flags(mut self, flags: i32) -> Uring {
        self.write_flags |= flags;
        self
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
            Op::Fsync | Op::Fdatasync | Op::SyncRange(_) | Op::Trim => std::ptr::null_mut(),
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
            Op::Fdatasync => opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
            Op::SyncRange(flags) => opcode::SyncFileRange::new(fd, io.len)
                .offset(io.offset)
                .flags(flags)
                .build(),
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
        if self.punt[io.target as usize] && !io.op.is_sync() {
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

    /// A cooperative task-run ring posts a completion only when the thread
    /// next enters the kernel; the kernel raises `IORING_SQ_TASKRUN` in the
    /// shared ring flags while one waits to be posted, and only then is
    /// the kernel entered here (to post it, waiting for nothing).
    #[inline]
    fn completion_ready(&mut self) -> bool {
        if !self.immediate.is_empty() {
            return true;
        }
        if self.ring.submission().taskrun() {
            // A failed enter shows again at the loop's next wait.
            let _ = submit_ring(&mut self.ring, 0, None);
        }
        !self.ring.completion().is_empty()
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

#[cfg(test)]
mod tests {
    use std::fs::File;

    use super::*;
    use crate::engines::tests::{one, read, Scratch};

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
}
