//! fio's `e4defrag` engine: each write is one `EXT4_IOC_MOVE_EXT` ioctl
//! that gives the I/O's range of the target file the blocks of a donor
//! file, as an online defragmenter does, so a job makes the filesystem
//! move extents under the target while other jobs do I/O on it.
//!
//! What the kernel does (ext4's `move_extent.c`): the blocks of the range
//! are swapped between the two files and the target's data is copied into
//! its new blocks, so the target keeps its contents and ends up on the
//! donor's former blocks, and the donor on the target's former ones. The
//! write's buffer is not used.
//!
//! As fio does it:
//!
//! - the donor is one file per job, claimed by the caller; with `inplace=0`
//!   the job's whole range of it is allocated once when the engine is
//!   made ([`Reserve`]); with `inplace=1` each write allocates the donor's
//!   range just before its ioctl and truncates the donor to nothing after;
//! - the ioctl names whole filesystem blocks (the donor's `st_blksize`):
//!   from the block the write starts in to the one it ends in, at the same
//!   block in both files;
//! - a write completes with the bytes the kernel says it moved, at most its
//!   length: all of them, fewer (a short write), or none (EINVAL: the range
//!   lies past the end of a file); a failed ioctl completes with its errno;
//! - reads, trims and syncs complete with EINVAL (fio's engine takes writes
//!   only: defragmenting is not meant to change data).
//!
//! One I/O at a time (depth 1, a sync engine in fio): a [`RunOne`] behind
//! the [`OneShot`] adapter.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use drivelab_device::claim::Claim;

use crate::buf::Fill;
use crate::engines::oneshot::{OneShot, RunOne};
use crate::io::{IoDesc, Op};
use crate::target::Target;

/// The argument of `EXT4_IOC_MOVE_EXT` (`struct move_extent` in the
/// kernel's `fs/ext4/ext4.h`): 40 bytes, in this order.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MoveExtent {
    /// Must be zero.
    pub reserved: u32,
    /// The donor file's descriptor.
    pub donor_fd: u32,
    /// First block of the range in the target (the file the ioctl is on).
    pub orig_start: u64,
    /// First block of the range in the donor.
    pub donor_start: u64,
    /// Blocks to move.
    pub len: u64,
    /// Blocks moved (filled in by the kernel).
    pub moved_len: u64,
}

impl MoveExtent {
    /// The request to move `blocks` blocks from block `start` of the donor
    /// `donor_fd` into the same blocks of the target.
    pub fn new(donor_fd: u32, start: u64, blocks: u64) -> MoveExtent {
        MoveExtent {
            reserved: 0,
            donor_fd,
            orig_start: start,
            donor_start: start,
            len: blocks,
            moved_len: 0,
        }
    }
}

/// `_IOWR('f', 15, struct move_extent)`: direction read|write (3) in bits
/// 30–31, the argument's size in bits 16–29, the type in 8–15, the number
/// in 0–7.
pub const EXT4_IOC_MOVE_EXT: u64 =
    (3 << 30) | ((std::mem::size_of::<MoveExtent>() as u64) << 16) | ((b'f' as u64) << 8) | 15;

/// `statfs`'s `f_type` of ext2, ext3 and ext4 (one driver, one magic).
pub const EXT4_SUPER_MAGIC: i64 = 0xEF53;

/// The `f_type` of the filesystem `path` is on (`statfs(2)`).
pub fn filesystem_of(path: &Path) -> io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `st` is a plain struct the kernel fills; `c` is a
    // NUL-terminated path that lives across the call.
    let (r, st) = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        (libc::statfs(c.as_ptr(), &mut st), st)
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // `f_type`'s C type differs between architectures (i64 here).
    #[allow(clippy::unnecessary_cast)]
    Ok(st.f_type as i64)
}

/// The common names of the filesystems a user is likely to point an
/// e4defrag job at by mistake, for error messages.
pub fn filesystem_name(magic: i64) -> &'static str {
    match magic {
        EXT4_SUPER_MAGIC => "ext2/3/4",
        0x0102_1994 => "tmpfs",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x794C_7630 => "overlayfs",
        0x6969 => "nfs",
        0x2FC1_2FC1 => "zfs",
        0x6573_5546 => "fuse",
        0xF2F5_2010 => "f2fs",
        0x4d44 => "vfat",
        _ => "a filesystem other than ext4",
    }
}

/// `EXT4_IOC_MOVE_EXT` on `orig` with `req`: the kernel's return (0 or
/// its errno) and the blocks it moved, which it reports even when it fails
/// part way.
pub fn move_extent(orig: &File, req: &mut MoveExtent) -> io::Result<u64> {
    // SAFETY: `req` is a live, exclusively borrowed `struct move_extent`
    // of the kernel's layout (repr(C), 40 bytes) that the kernel reads and
    // writes only during the call; the descriptors are open for the call.
    let r = unsafe {
        libc::ioctl(
            orig.as_raw_fd(),
            EXT4_IOC_MOVE_EXT as libc::Ioctl,
            req as *mut MoveExtent,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(req.moved_len)
    }
}

fn fallocate(f: &File, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: fallocate takes a descriptor and integers and touches no
    // memory of ours; `f` keeps the descriptor open for the call.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), 0, offset as i64, len as i64) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The donor's range allocated once when the engine is made (fio's
/// `inplace=0`): from `offset`, `len` bytes (fio: from the job's start
/// offset to the end of its largest file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserve {
    /// Bytes.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// fio's e4defrag engine over claimed targets and a claimed donor.
pub type E4Defrag = OneShot<MoveWork>;

/// What an [`E4Defrag`] engine does per I/O: the donor, its block, and
/// whether each write allocates and frees its range of it.
pub struct MoveWork {
    targets: Vec<Target>,
    donor: File,
    /// The donor's `st_blksize`: the unit of the ioctl.
    block: u64,
    inplace: bool,
}

impl E4Defrag {
    /// An engine moving the blocks of the claimed `donor` into `targets`.
    /// `reserve`: allocate that range of the donor now (fio's `inplace=0`);
    /// None: allocate each write's range of it and free it after (fio's
    /// `inplace=1`).
    pub fn new(
        targets: Vec<Target>,
        donor: &Claim,
        reserve: Option<Reserve>,
        max_len: usize,
    ) -> io::Result<E4Defrag> {
        if donor.is_block() {
            return Err(io::Error::other(
                "the donor must be a regular file on the target's ext4 filesystem",
            ));
        }
        let donor = donor.io_file(false)?;
        if let Some(r) = reserve {
            fallocate(&donor, r.offset, r.len)?;
        }
        use std::os::unix::fs::MetadataExt;
        let block = donor.metadata()?.blksize().max(1);
        let work = MoveWork {
            targets,
            donor,
            block,
            inplace: reserve.is_none(),
        };
        OneShot::over(work, max_len, Fill::Zeroed)
    }

    /// The filesystem block the ioctl counts in, bytes.
    pub fn block_size(&self) -> u64 {
        self.work().block
    }
}

impl RunOne for MoveWork {
    fn name(&self) -> &'static str {
        "e4defrag"
    }

    fn run_one(&mut self, io: &IoDesc, _buf: &mut [u8]) -> i32 {
        let errno = |e: io::Error| -e.raw_os_error().unwrap_or(libc::EIO);
        let Some(t) = self.targets.get(io.target as usize) else {
            return -libc::EINVAL;
        };
        if io.op != Op::Write {
            return -libc::EINVAL;
        }
        let len = u64::from(io.len);
        if self.inplace {
            if let Err(e) = fallocate(&self.donor, io.offset, len) {
                return errno(e);
            }
        }
        let (first, end) = blocks(io.offset, len, self.block);
        let mut req = MoveExtent::new(self.donor.as_raw_fd() as u32, first, end - first);
        let mut result = match move_extent(t.file(), &mut req) {
            Err(e) => errno(e),
            Ok(moved) => match moved.saturating_mul(self.block).min(len) {
                // Nothing moved: the range is past a file's end.
                0 => -libc::EINVAL,
                n => n as i32,
            },
        };
        if self.inplace {
            // SAFETY: ftruncate takes a descriptor and an integer; the
            // donor stays open for the call.
            if unsafe { libc::ftruncate(self.donor.as_raw_fd(), 0) } != 0 && result >= 0 {
                result = errno(io::Error::last_os_error());
            }
        }
        result
    }
}

/// The blocks of `block` bytes a byte range touches: first, and one past
/// the last.
pub fn blocks(offset: u64, len: u64, block: u64) -> (u64, u64) {
    let block = block.max(1);
    (offset / block, (offset + len).div_ceil(block))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_has_the_kernels_layout_and_number() {
        assert_eq!(std::mem::size_of::<MoveExtent>(), 40);
        let m = MoveExtent::new(7, 3, 5);
        // Field offsets, as in struct move_extent.
        let base = &m as *const MoveExtent as usize;
        assert_eq!(&m.donor_fd as *const u32 as usize - base, 4);
        assert_eq!(&m.orig_start as *const u64 as usize - base, 8);
        assert_eq!(&m.donor_start as *const u64 as usize - base, 16);
        assert_eq!(&m.len as *const u64 as usize - base, 24);
        assert_eq!(&m.moved_len as *const u64 as usize - base, 32);
        assert_eq!((m.orig_start, m.donor_start, m.len), (3, 3, 5));
        // _IOWR('f', 15, 40) as the C headers compute it.
        assert_eq!(EXT4_IOC_MOVE_EXT, 0xC028_660F);
    }

    #[test]
    fn ranges_cover_every_block_they_touch() {
        assert_eq!(blocks(0, 32768, 4096), (0, 8));
        assert_eq!(blocks(4096, 4096, 1024), (4, 8));
        // Unaligned: from the block it starts in to the one it ends in.
        assert_eq!(blocks(1000, 200, 1024), (0, 2));
        assert_eq!(blocks(1500, 100, 1024), (1, 2));
    }

    #[test]
    fn a_file_outside_ext4_is_named() {
        let magic = filesystem_of(Path::new("/proc")).unwrap();
        assert_ne!(magic, EXT4_SUPER_MAGIC);
        assert_eq!(filesystem_name(0x0102_1994), "tmpfs");
        assert!(filesystem_of(Path::new("/nonexistent-e4defrag")).is_err());
    }
}
