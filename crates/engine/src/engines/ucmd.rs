//! fio's `io_uring_cmd` engine with `cmd_type=nvme`: every read and write
//! is one NVMe Read or Write sent as an io_uring passthrough command
//! (`IORING_OP_URING_CMD`, `NVME_URING_CMD_IO[_VEC]`) to an NVMe
//! namespace's generic character device (/dev/ngXnY).
//!
//! The ring has 128-byte SQEs and 32-byte CQEs (`IORING_SETUP_SQE128 |
//! CQE32`), as the NVMe driver needs for a `struct nvme_uring_cmd` in the
//! SQE. The command comes from the device crate's builders
//! ([`NvmeCommand::read`] / [`NvmeCommand::write`]: SLBA in CDW10-11, NLB −
//! 1 in CDW12) with the namespace ID from `NVME_IOCTL_ID` and the LBA size
//! from Identify Namespace, as fio's engine does. fio's options for it:
//!
//! - `nonvectored`: the command's `addr` is the slot's buffer
//!   (`NVME_URING_CMD_IO`); otherwise it points at the slot's one iovec
//!   (`NVME_URING_CMD_IO_VEC`, `data_len` 1), fio's default;
//! - `fixedbufs`: the slot buffers are registered and each command names
//!   its buffer (`IORING_URING_CMD_FIXED`);
//! - `registerfiles`: the targets are registered files (`IOSQE_FIXED_FILE`);
//!   `sqthread_poll` implies it, as in fio;
//! - `sqthread_poll` / `sqthread_poll_cpu`: a kernel thread (pinned to that
//!   CPU) polls the submission queue (`IORING_SETUP_SQPOLL` / `SQ_AFF`);
//! - `hipri`: completions are polled (`IORING_SETUP_IOPOLL`);
//! - `force_async=N`: every Nth command goes to io-wq (`IOSQE_ASYNC`).
//!
//! A completion's `res` is 0 on success, an NVMe status (> 0) when the
//! controller failed the command, or −errno. A status completes the I/O
//! with EIO and is kept in words ([`NvmeStatus::describe`]) in
//! [`UringCmd::failures`]. Trims and flushes are not NVMe I/O for fio's
//! engine either: they complete at once with EOPNOTSUPP.
//!
//! A target can only write when built from a [`Claim`] of the namespace's
//! block device ([`Claim::nvme_generic_file`]); on a read-only target a
//! write completes with EBADF without being sent.

use std::collections::VecDeque;
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use drivelab_device::claim::{Claim, ClaimError};
use drivelab_device::nvme::{
    identify_namespace, NvmeCommand, NvmeDevice, NvmeError, NvmeStatus, NVME_URING_CMD_IO,
    NVME_URING_CMD_IO_VEC,
};
use drivelab_device::units::Lba;

use crate::buf::{BufferPool, Fill};
use crate::engine::interface::{Caps, Completion, Engine, MAX_DEPTH};
use crate::engines::ring::{ForceAsync, RingSetup};
use crate::io::{IoDesc, Op};

/// fio's options of the io_uring_cmd engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UcmdOptions {
    /// `hipri`: poll for completions (IOPOLL).
    pub hipri: bool,
    /// `fixedbufs`: registered buffers.
    pub fixedbufs: bool,
    /// `registerfiles`: registered files (forced on by `sqthread_poll`).
    pub registerfiles: bool,
    /// `sqthread_poll`: a kernel thread submits.
    pub sqthread_poll: bool,
    /// `sqthread_poll_cpu`: the CPU that thread is pinned to.
    pub sqthread_poll_cpu: Option<u32>,
    /// `nonvectored`: the command carries the buffer, not an iovec.
    pub nonvectored: bool,
    /// `force_async=N`: every Nth command carries IOSQE_ASYNC (0: none).
    pub force_async: u32,
}

/// Why a target cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum UcmdError {
    /// The claim does not lead to the generic device.
    #[error(transparent)]
    Claim(#[from] ClaimError),
    /// Passthrough to learn the namespace failed.
    #[error(transparent)]
    Nvme(#[from] NvmeError),
    /// The namespace's LBA format cannot be used.
    #[error("{}: {why}", .path.display())]
    Format {
        /// The device.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// One namespace the engine sends commands to: its generic character
/// device, namespace ID and LBA size.
#[derive(Debug)]
pub struct UcmdTarget {
    file: File,
    path: PathBuf,
    nsid: u32,
    lba_shift: u32,
    writable: bool,
}

impl UcmdTarget {
    /// The generic device `generic` of the namespace `claim` holds through
    /// its block device: reads and writes are sent.
    pub fn claimed(claim: &Claim, generic: &Path) -> Result<UcmdTarget, UcmdError> {
        let file = claim.nvme_generic_file(generic)?;
        UcmdTarget::new(file, generic, true)
    }

    /// `generic` opened read-only: writes complete with EBADF unsent.
    pub fn read_only(generic: &Path) -> Result<UcmdTarget, UcmdError> {
        // The block device it maps to is only looked up, for the same
        // refusal of what is not /dev/ngXnY as a writing job gets.
        drivelab_device::claim::nvme_generic_block(generic)?;
        let file = File::open(generic).map_err(|source| NvmeError::Open {
            path: generic.to_path_buf(),
            source,
        })?;
        UcmdTarget::new(file, generic, false)
    }

    fn new(file: File, path: &Path, writable: bool) -> Result<UcmdTarget, UcmdError> {
        let dev = NvmeDevice::open(path)?;
        let nsid = dev.require_nsid()?;
        let id = identify_namespace(&dev, nsid)?;
        let bs = id.block_size;
        if !bs.is_power_of_two() || bs < 512 {
            return Err(UcmdError::Format {
                path: path.to_path_buf(),
                why: format!("namespace {nsid} reports a logical block of {bs} bytes"),
            });
        }
        Ok(UcmdTarget {
            file,
            path: path.to_path_buf(),
            nsid,
            lba_shift: bs.trailing_zeros(),
            writable,
        })
    }

    /// The namespace ID.
    pub fn nsid(&self) -> u32 {
        self.nsid
    }

    /// The logical block size in bytes.
    pub fn block_size(&self) -> u32 {
        1 << self.lba_shift
    }

    /// The generic device's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A command that did not complete successfully.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UcmdFailure {
    /// The I/O it carried.
    pub io: IoDesc,
    /// What failed, in words.
    pub detail: String,
}

/// Failed commands kept.
const MAX_FAILURES: usize = 16;

/// The command for `io`: Err(errno) for what fio's engine does not send
/// (trims, flushes: EOPNOTSUPP) or cannot express (not whole blocks, more
/// than 65536 blocks: EINVAL).
fn command(io: &IoDesc, nsid: u32, lba_shift: u32) -> Result<NvmeCommand, i32> {
    if matches!(io.op, Op::Trim) || io.op.is_sync() {
        return Err(libc::EOPNOTSUPP);
    }
    let mask = (1u64 << lba_shift) - 1;
    if io.offset & mask != 0 || u64::from(io.len) & mask != 0 || io.len == 0 {
        return Err(libc::EINVAL);
    }
    let blocks = io.len >> lba_shift;
    if blocks > 65536 {
        return Err(libc::EINVAL);
    }
    let slba = Lba(io.offset >> lba_shift);
    let c = match io.op {
        Op::Read => NvmeCommand::read(nsid, slba, blocks),
        Op::Write => NvmeCommand::write(nsid, slba, blocks),
        Op::Trim | Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => return Err(libc::EOPNOTSUPP),
    };
    // fio leaves the timeout 0: the driver's own.
    Ok(c.timeout_ms(0))
}

/// io_uring passthrough of NVMe commands.
pub struct UringCmd {
    ring: IoUring<squeue::Entry128, cqueue::Entry32>,
    targets: Vec<UcmdTarget>,
    /// Dropped by hand in `Drop`, only once no I/O can still reach it.
    pool: ManuallyDrop<BufferPool>,
    /// Per slot: the iovec a vectored command points at (its buffer).
    iovecs: Vec<libc::iovec>,
    /// Per slot: the I/O with the kernel (for the completion's length and
    /// a failure's record).
    ios: Vec<IoDesc>,
    /// Per slot: a command naming the slot's buffer is with the kernel.
    busy: Vec<bool>,
    in_flight: u32,
    depth: u32,
    opts: UcmdOptions,
    force_async: ForceAsync,
    /// Completions made without the ring (refused commands).
    immediate: VecDeque<Completion>,
    failures: Vec<UcmdFailure>,
}

/// First every command still with the kernel completes (the kernel may
/// write into the buffers and read the iovecs until then), then the files
/// are unregistered (so the claim's device is let go now, not when the
/// ring's teardown runs later), then the buffers are unmapped. If waiting
/// fails the buffers are leaked rather than unmapped under the kernel.
impl Drop for UringCmd {
    fn drop(&mut self) {
        let settled = self.settle();
        if self.opts.registerfiles {
            let _ = self.ring.submitter().unregister_files();
        }
        if settled {
            // SAFETY: no command is in flight, so nothing but the pool
            // refers to its memory, and `pool` is not used after this line.
            unsafe { ManuallyDrop::drop(&mut self.pool) };
        } else {
            // The iovecs may still be read by the kernel: leak them too.
            std::mem::forget(std::mem::take(&mut self.iovecs));
        }
    }
}

impl UringCmd {
    /// A ring of `depth` slots over `targets`, each slot with a buffer of
    /// `max_len` bytes, set up as fio's engine sets it up for `opts`.
    pub fn new(
        targets: Vec<UcmdTarget>,
        depth: u32,
        max_len: usize,
        opts: UcmdOptions,
        fill: Fill,
    ) -> std::io::Result<UringCmd> {
        let mut opts = opts;
        // fio: "sqthread submission requires registered files".
        opts.registerfiles |= opts.sqthread_poll;
        let depth = depth.clamp(1, MAX_DEPTH);
        let entries = depth.next_power_of_two().max(2);
        let ring = Self::ring(entries, &opts)?;
        if opts.registerfiles {
            let fds: Vec<RawFd> = targets.iter().map(|t| t.file.as_raw_fd()).collect();
            ring.submitter().register_files(&fds)?;
        }
        let pool = BufferPool::new(depth as usize, max_len, fill)?;
        let iovecs = pool.iovecs();
        if opts.fixedbufs {
            // SAFETY: the iovecs describe the pool's mapping, which lives
            // as long as `self` and is unmapped only after every command
            // completed (`Drop`).
            unsafe { ring.submitter().register_buffers(&iovecs) }?;
        }
        Ok(UringCmd {
            ring,
            targets,
            pool: ManuallyDrop::new(pool),
            iovecs,
            ios: vec![
                IoDesc {
                    target: 0,
                    op: Op::Read,
                    offset: 0,
                    len: 0,
                };
                depth as usize
            ],
            busy: vec![false; depth as usize],
            in_flight: 0,
            depth,
            opts,
            force_async: ForceAsync::every(opts.force_async),
            immediate: VecDeque::with_capacity(depth as usize),
            failures: Vec::new(),
        })
    }

    /// The ring with fio's flags for this engine: SQE128 and CQE32 (the
    /// entry types), IOPOLL for `hipri`, SQPOLL (+ SQ_AFF) for
    /// `sqthread_poll`, a CQ of `entries`, and single-issuer with
    /// cooperative task-run where the kernel takes them, dropped where it
    /// does not ([`crate::engines::ring::build_ring`], the io_uring engine's
    /// too). fio also defers task-run; drivelab does
    /// not, as for its io_uring engine: deferred, completions would wait
    /// for the loop's next waiting enter, and the loop also reaps between
    /// submissions without waiting.
    fn ring(
        entries: u32,
        o: &UcmdOptions,
    ) -> std::io::Result<IoUring<squeue::Entry128, cqueue::Entry32>> {
        crate::engines::ring::build_ring(
            entries,
            entries,
            RingSetup {
                iopoll: o.hipri,
                sqpoll: o.sqthread_poll,
                sqpoll_cpu: o.sqthread_poll_cpu.filter(|_| o.sqthread_poll),
            },
        )
    }

    /// The commands that failed, in order (at most 16 kept).
    pub fn failures(&self) -> &[UcmdFailure] {
        &self.failures
    }

    /// The options in force (`registerfiles` on with `sqthread_poll`).
    pub fn options(&self) -> UcmdOptions {
        self.opts
    }

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

    fn refuse(&mut self, slot: u32, io: &IoDesc, errno: i32, why: String) {
        if self.failures.len() < MAX_FAILURES {
            self.failures.push(UcmdFailure {
                io: *io,
                detail: why,
            });
        }
        self.immediate.push_back(Completion {
            slot,
            result: -errno,
        });
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Trim => "trim",
        Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => "flush",
    }
}

impl Engine for UringCmd {
    fn name(&self) -> &'static str {
        "io_uring_cmd"
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
    fn queue(&mut self, slot: u32, io: &IoDesc) {
        assert!(
            !self.busy.get(slot as usize).copied().unwrap_or(false),
            "slot {slot} queued again before its completion was reaped"
        );
        let Some(t) = self.targets.get(io.target as usize) else {
            self.immediate.push_back(Completion {
                slot,
                result: -libc::EINVAL,
            });
            return;
        };
        if slot >= self.depth || io.len as usize > self.pool.stride() {
            self.immediate.push_back(Completion {
                slot,
                result: -libc::EINVAL,
            });
            return;
        }
        if io.op == Op::Write && !t.writable {
            let why = format!(
                "{} is open read-only (the job was planned as not writing); the write was not sent",
                t.path.display()
            );
            self.refuse(slot, io, libc::EBADF, why);
            return;
        }
        let (nsid, shift) = (t.nsid, t.lba_shift);
        let cmd = match command(io, nsid, shift) {
            Ok(c) => c,
            Err(e) => {
                let why = if e == libc::EOPNOTSUPP {
                    format!(
                        "a {} is not an NVMe read or write: ioengine=io_uring_cmd sends only those (as fio's)",
                        op_name(io.op)
                    )
                } else {
                    format!(
                        "{} of {} bytes at offset {} is not in whole {}-byte blocks of namespace {nsid} (or longer than 65536 blocks)",
                        op_name(io.op),
                        io.len,
                        io.offset,
                        1u32 << shift
                    )
                };
                self.refuse(slot, io, e, why);
                return;
            }
        };
        let s = slot as usize;
        let buf = self.pool.ptr(s);
        let (cmd_op, addr, data_len) = if self.opts.nonvectored {
            (NVME_URING_CMD_IO, buf as u64, io.len)
        } else {
            self.iovecs[s].iov_base = buf.cast();
            self.iovecs[s].iov_len = io.len as usize;
            (
                NVME_URING_CMD_IO_VEC,
                std::ptr::addr_of!(self.iovecs[s]) as u64,
                1,
            )
        };
        let bytes = cmd.uring_cmd(addr, data_len);
        let mut sqe = if self.opts.registerfiles {
            opcode::UringCmd80::new(types::Fixed(io.target), cmd_op)
        } else {
            opcode::UringCmd80::new(types::Fd(t.file.as_raw_fd()), cmd_op)
        }
        .cmd(bytes);
        if self.opts.fixedbufs {
            sqe = sqe.buf_index(Some(slot as u16));
        }
        let mut sqe = sqe.build().user_data(u64::from(slot));
        if self.force_async.next() {
            sqe = sqe.flags(squeue::Flags::ASYNC);
        }
        self.ios[s] = *io;
        // SAFETY: what the command names stays valid until its completion
        // is reaped: the slot's buffer (checked above to hold `io.len`
        // bytes) and its iovec belong to the engine, the slot is marked
        // busy below so neither is reused or lent out (`buffer` panics)
        // and neither is freed before then (`Drop` waits); the file is
        // registered or owned by `self.targets`, which outlives the ring's
        // use. The SQ has `entries >= depth` places and at most `depth`
        // commands are outstanding; if it were full, commit first.
        unsafe {
            if self.ring.submission().push(&sqe).is_err() {
                let _ = self.ring.submit();
                let _ = self.ring.submission().push(&sqe);
            }
        }
        self.busy[s] = true;
        self.in_flight += 1;
    }

    fn commit(&mut self, wait: u32, timeout: Option<Duration>) -> std::io::Result<()> {
        let wait = if self.immediate.is_empty() { wait } else { 0 };
        crate::engines::ring::submit_ring(&mut self.ring, wait, timeout)
    }

    fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize {
        self.reap_max(usize::MAX, f)
    }

    fn reap_max<F: FnMut(Completion)>(&mut self, max: usize, mut f: F) -> usize {
        let mut n = 0;
        while let Some(c) = self.immediate.pop_front() {
            f(c);
            n += 1;
        }
        let mut cq = self.ring.completion();
        while n < max {
            let Some(cqe) = cq.next() else { break };
            let slot = cqe.user_data() as u32;
            let s = slot as usize;
            if let Some(b) = self.busy.get_mut(s) {
                if std::mem::take(b) {
                    self.in_flight -= 1;
                }
            }
            let io = self.ios.get(s).copied();
            let res = cqe.result();
            let result = match (res, io) {
                (0, Some(io)) => io.len.min(i32::MAX as u32) as i32,
                (r, Some(io)) if r > 0 => {
                    // The controller's status: EIO, with the status in words.
                    if self.failures.len() < MAX_FAILURES {
                        let st = NvmeStatus(r as u16);
                        let t = self.targets.get(io.target as usize);
                        let shift = t.map_or(9, |t| t.lba_shift);
                        self.failures.push(UcmdFailure {
                            io,
                            detail: format!(
                                "NVMe {} of LBA {}+{} on namespace {} failed: {}",
                                if io.op == Op::Write { "Write" } else { "Read" },
                                io.offset >> shift,
                                io.len >> shift,
                                t.map_or(0, |t| t.nsid),
                                st.describe()
                            ),
                        });
                    }
                    -libc::EIO
                }
                (r, _) if r < 0 => r,
                // A completion of no slot the engine queued.
                _ => -libc::EIO,
            };
            f(Completion { slot, result });
            n += 1;
        }
        cq.sync();
        n
    }

    /// # Panics
    /// If the slot does not exist or its command is still with the kernel.
    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        assert!(
            !self.busy.get(slot as usize).copied().unwrap_or(false),
            "buffer of slot {slot} asked for while its command is in flight"
        );
        self.pool.slice(slot as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(op: Op, offset: u64, len: u32) -> IoDesc {
        IoDesc {
            target: 0,
            op,
            offset,
            len,
        }
    }

    #[test]
    fn reads_and_writes_become_fios_nvme_commands() {
        // 4 KiB at 1 MiB on 512-byte blocks: SLBA 2048, NLB 8 (0-based 7).
        let c = command(&io(Op::Write, 1 << 20, 4096), 1, 9).unwrap();
        assert_eq!(c.cmd.opcode, 0x01);
        assert_eq!(c.cmd.nsid, 1);
        assert_eq!((c.cmd.cdw10, c.cmd.cdw11, c.cmd.cdw12), (2048, 0, 7));
        assert_eq!(c.cmd.timeout_ms, 0);
        // 4 KiB blocks, past 2^32 blocks.
        let far = (5u64 << 32) << 12;
        let c = command(&io(Op::Read, far, 8192), 2, 12).unwrap();
        assert_eq!(c.cmd.opcode, 0x02);
        assert_eq!((c.cmd.cdw10, c.cmd.cdw11, c.cmd.cdw12), (0, 5, 1));
    }

    #[test]
    fn what_fio_does_not_send_is_refused() {
        assert_eq!(
            command(&io(Op::Trim, 0, 4096), 1, 9).err(),
            Some(libc::EOPNOTSUPP)
        );
        assert_eq!(
            command(&io(Op::Fsync, 0, 0), 1, 9).err(),
            Some(libc::EOPNOTSUPP)
        );
        assert_eq!(
            command(&io(Op::Read, 100, 512), 1, 9).err(),
            Some(libc::EINVAL)
        );
        assert_eq!(
            command(&io(Op::Read, 0, 4096), 1, 12).map(|c| c.cmd.cdw12),
            Ok(0)
        );
        assert_eq!(
            command(&io(Op::Read, 0, 2048), 1, 12).err(),
            Some(libc::EINVAL)
        );
    }

    /// A target on /dev/null: kernels since 6.0 complete every uring_cmd
    /// to it with 0 (success, for benchmarking the path), older ones with
    /// EOPNOTSUPP; either way the command went through the ring.
    fn null_target(writable: bool) -> UcmdTarget {
        UcmdTarget {
            file: File::open("/dev/null").unwrap(),
            path: PathBuf::from("/dev/null"),
            nsid: 1,
            lba_shift: 9,
            writable,
        }
    }

    fn run_all(e: &mut UringCmd, ios: &[IoDesc]) -> Vec<Completion> {
        for (slot, io) in ios.iter().enumerate() {
            e.queue(slot as u32, io);
        }
        let mut got = Vec::new();
        while got.len() < ios.len() {
            e.commit(1, Some(Duration::from_secs(5))).unwrap();
            e.reap(|c| got.push(c));
        }
        got.sort_by_key(|c| c.slot);
        got
    }

    #[test]
    fn commands_go_through_the_ring_with_each_options_set() {
        let sets = [
            UcmdOptions::default(),
            UcmdOptions {
                nonvectored: true,
                registerfiles: true,
                fixedbufs: true,
                ..UcmdOptions::default()
            },
            UcmdOptions {
                sqthread_poll: true,
                sqthread_poll_cpu: Some(0),
                nonvectored: true,
                force_async: 2,
                ..UcmdOptions::default()
            },
        ];
        for o in sets {
            let mut e = match UringCmd::new(vec![null_target(true)], 4, 4096, o, Fill::Zeroed) {
                Ok(e) => e,
                // A kernel without SQE128 rings (before 5.19) has no
                // passthrough to test.
                Err(err) if err.raw_os_error() == Some(libc::EINVAL) => return,
                Err(err) => panic!("{o:?}: {err}"),
            };
            // sqthread_poll registers the files, as fio.
            assert_eq!(
                e.options().registerfiles,
                o.registerfiles || o.sqthread_poll
            );
            for _ in 0..2 {
                let got = run_all(
                    &mut e,
                    &[
                        io(Op::Read, 0, 4096),
                        io(Op::Write, 4096, 512),
                        io(Op::Trim, 0, 512),
                        io(Op::Read, 3, 512),
                    ],
                );
                let r: Vec<i32> = got.iter().map(|c| c.result).collect();
                // Success is the whole length; a kernel without /dev/null's
                // uring_cmd answers EOPNOTSUPP, passed on unchanged; a trim
                // and an unaligned read are refused before the ring.
                let sent = if r[0] == 4096 {
                    [4096, 512]
                } else {
                    [-libc::EOPNOTSUPP; 2]
                };
                assert_eq!(
                    r,
                    [sent[0], sent[1], -libc::EOPNOTSUPP, -libc::EINVAL],
                    "{o:?}"
                );
            }
            assert_eq!(e.in_flight, 0);
            assert_eq!(e.failures().len(), 4, "the two refusals, twice");
            assert!(
                e.failures()[0].detail.contains("trim"),
                "{:?}",
                e.failures()
            );
        }
    }

    #[test]
    fn a_read_only_target_does_not_send_writes() {
        let Ok(mut e) = UringCmd::new(
            vec![null_target(false)],
            2,
            4096,
            UcmdOptions::default(),
            Fill::Zeroed,
        ) else {
            return;
        };
        let got = run_all(&mut e, &[io(Op::Write, 0, 512), io(Op::Read, 0, 512)]);
        assert_eq!(got[0].result, -libc::EBADF);
        assert!([512, -libc::EOPNOTSUPP].contains(&got[1].result), "{got:?}");
        assert!(e.failures()[0].detail.contains("read-only"));
    }

    #[test]
    fn a_file_or_block_device_is_not_a_generic_nvme_device() {
        let p = std::env::temp_dir().join(format!("drivelab-ucmd-file-{}", std::process::id()));
        std::fs::write(&p, vec![0u8; 4096]).unwrap();
        let e = UcmdTarget::read_only(&p).unwrap_err().to_string();
        std::fs::remove_file(&p).unwrap();
        assert!(
            e.contains("/dev/ngXnY") && e.contains("io_uring_cmd"),
            "{e}"
        );
        // A character device that is not NVMe's.
        let e = UcmdTarget::read_only(Path::new("/dev/null"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("generic character device"), "{e}");
    }
}
