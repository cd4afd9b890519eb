//! fio's filesystem engines: each "I/O" is one file operation, timed and
//! counted by the one I/O loop like a read or write.
//!
//! Two kinds, as in fio:
//!
//! - [`PathOps`] (fio's filecreate, filestat, filedelete and their
//!   directory twins dircreate, dirstat, dirdelete): the operation happens
//!   when fio would open the file — on the first I/O a job issues to it.
//!   fio then "transfers" the file's blocks without touching anything
//!   (these engines are fake-I/O engines), and so does this one: the later
//!   I/Os to the same file complete at once. When the I/Os of a pass (the
//!   bytes of all the job's files) are done, the next pass operates on each
//!   file again, as fio reopens its files each loop. A driver that records
//!   latency only for the first completion per file and pass records one
//!   sample per operation, as fio does. Paths come only from a device
//!   [`FileSet`] claim.
//! - [`FdOps`] (fio's ftruncate and falloc): a call on the claimed
//!   descriptor per I/O. ftruncate: a write truncates the file to the I/O's
//!   offset (the length is ignored, as fio says); reads and trims fail with
//!   EINVAL. falloc: a read is `fallocate(KEEP_SIZE)` of the I/O's range, a
//!   write `fallocate(0)` (the file may grow), a trim
//!   `fallocate(PUNCH_HOLE|KEEP_SIZE)`.
//!
//! Both complete each I/O with its full length on success and −errno on
//! failure, one at a time (depth 1, fio's sync engines): each is a
//! [`RunOne`] behind the [`OneShot`] adapter.

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use drivelab_device::claim::{FileSet, SetKind};

use crate::buf::Fill;
use crate::engines::oneshot::{OneShot, RunOne};
use crate::io::{IoDesc, Op};
use crate::target::Target;

/// What a [`PathOps`] engine does to each path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathOp {
    /// Create it (filecreate, dircreate).
    Create,
    /// Look it up (filestat, dirstat) with the given call.
    Stat(StatKind),
    /// Remove it (filedelete, dirdelete).
    Delete,
}

/// fio's `stat_type`: which system call filestat and dirstat time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StatKind {
    /// `stat(2)` (fio's default).
    #[default]
    Stat,
    /// `lstat(2)`.
    Lstat,
    /// `statx(2)` with every field asked for.
    Statx,
}

/// fio's path engines over a claimed [`FileSet`].
pub type PathOps = OneShot<PathWork>;

/// What a [`PathOps`] engine does per I/O.
pub struct PathWork {
    set: Arc<FileSet>,
    op: PathOp,
    /// Per path of the set: its operation was done in this pass.
    done: Vec<bool>,
    /// Per job target: its index in the set.
    index: Vec<usize>,
    /// Bytes of one pass over the job's files, and bytes issued in this one.
    pass: (u64, u64),
}

impl PathOps {
    /// An engine doing `op` to the paths `index` (the job's targets, as
    /// positions in `set`), whose I/Os of one pass add up to `pass_bytes`.
    /// Buffers exist only so callers behave the same.
    pub fn new(
        set: Arc<FileSet>,
        index: Vec<usize>,
        op: PathOp,
        max_len: usize,
        pass_bytes: u64,
    ) -> std::io::Result<PathOps> {
        if index.iter().any(|&i| i >= set.paths().len()) {
            return Err(std::io::Error::other(
                "a job target is not in the claimed file set",
            ));
        }
        let work = PathWork {
            done: vec![false; set.paths().len()],
            set,
            op,
            index,
            pass: (pass_bytes, 0),
        };
        OneShot::over(work, max_len, Fill::Zeroed)
    }
}

impl RunOne for PathWork {
    fn name(&self) -> &'static str {
        match (self.op, self.set.kind()) {
            (PathOp::Create, SetKind::Files) => "filecreate",
            (PathOp::Stat(_), SetKind::Files) => "filestat",
            (PathOp::Delete, SetKind::Files) => "filedelete",
            (PathOp::Create, SetKind::Dirs) => "dircreate",
            (PathOp::Stat(_), SetKind::Dirs) => "dirstat",
            (PathOp::Delete, SetKind::Dirs) => "dirdelete",
        }
    }

    fn run_one(&mut self, io: &IoDesc, _buf: &mut [u8]) -> i32 {
        let Some(&i) = self.index.get(io.target as usize) else {
            return -libc::EINVAL;
        };
        let len = io.len.min(i32::MAX as u32) as i32;
        if io.op.is_sync() {
            return 0;
        }
        if self.pass.1 >= self.pass.0 {
            // A new pass: each file is operated on again.
            self.pass.1 = 0;
            self.done.iter_mut().for_each(|d| *d = false);
        }
        self.pass.1 += u64::from(io.len);
        if self.done[i] {
            return len;
        }
        self.done[i] = true;
        let r = match self.op {
            PathOp::Create => self.set.create(i),
            PathOp::Delete => self.set.remove(i),
            PathOp::Stat(k) => stat_path(&self.set.paths()[i], k, self.set.kind()),
        };
        match r {
            Ok(()) => len,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        }
    }
}

/// One timed lookup of `path`. A path of the wrong kind fails (ENOTDIR for
/// a directory set, EISDIR for a file set).
pub fn stat_path(path: &std::path::Path, kind: StatKind, set: SetKind) -> std::io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `st` and `stx` are plain structs the kernel fills; `c` is a
    // NUL-terminated path that lives across the call.
    let (r, mode) = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        match kind {
            StatKind::Stat => (libc::stat(c.as_ptr(), &mut st), st.st_mode),
            StatKind::Lstat => (libc::lstat(c.as_ptr(), &mut st), st.st_mode),
            StatKind::Statx => {
                let mut stx: libc::statx = std::mem::zeroed();
                let r = libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, libc::STATX_ALL, &mut stx);
                (r, libc::mode_t::from(stx.stx_mode))
            }
        }
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let is_dir = mode & libc::S_IFMT == libc::S_IFDIR;
    match (set, is_dir) {
        (SetKind::Files, true) => Err(std::io::Error::from_raw_os_error(libc::EISDIR)),
        (SetKind::Dirs, false) => Err(std::io::Error::from_raw_os_error(libc::ENOTDIR)),
        _ => Ok(()),
    }
}

/// What an [`FdOps`] engine does with each I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdOp {
    /// fio's ftruncate.
    Ftruncate,
    /// fio's falloc.
    Falloc,
}

/// fio's ftruncate and falloc engines over claimed targets.
pub type FdOps = OneShot<FdWork>;

/// What an [`FdOps`] engine does per I/O.
pub struct FdWork {
    targets: Vec<Target>,
    op: FdOp,
}

impl FdOps {
    /// An engine doing `op` on `targets`.
    pub fn new(targets: Vec<Target>, op: FdOp, max_len: usize) -> std::io::Result<FdOps> {
        OneShot::over(FdWork { targets, op }, max_len, Fill::Zeroed)
    }
}

impl RunOne for FdWork {
    fn name(&self) -> &'static str {
        match self.op {
            FdOp::Ftruncate => "ftruncate",
            FdOp::Falloc => "falloc",
        }
    }

    fn run_one(&mut self, io: &IoDesc, _buf: &mut [u8]) -> i32 {
        let Some(t) = self.targets.get(io.target as usize) else {
            return -libc::EINVAL;
        };
        let fd = t.file().as_raw_fd();
        let (off, len) = (io.offset as libc::off_t, libc::off_t::from(io.len));
        // SAFETY: the calls take a descriptor (open for the life of `t`)
        // and integers, and touch no memory of ours.
        let r = unsafe {
            match (self.op, io.op) {
                (_, Op::Fsync) => libc::fsync(fd),
                (_, Op::Fdatasync) => libc::fdatasync(fd),
                (_, Op::SyncRange(flags)) => libc::sync_file_range(fd, off, len, flags),
                (FdOp::Ftruncate, Op::Write) => libc::ftruncate(fd, off),
                (FdOp::Ftruncate, _) => return -libc::EINVAL,
                (FdOp::Falloc, Op::Read) => {
                    libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, off, len)
                }
                (FdOp::Falloc, Op::Write) => libc::fallocate(fd, 0, off, len),
                (FdOp::Falloc, Op::Trim) => libc::fallocate(
                    fd,
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    off,
                    len,
                ),
            }
        };
        if r != 0 {
            return -std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
        }
        if io.op.is_sync() {
            0
        } else {
            io.len.min(i32::MAX as u32) as i32
        }
    }
}
