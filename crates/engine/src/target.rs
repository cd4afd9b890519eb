//! What an engine does I/O on: a [`Target`] can only be made from a device
//! claim, a claimed file set or a read-only open, so no engine can write to
//! anything that was not claimed.
//!
//! Trims are synchronous `BLKDISCARD` ioctls on block devices and
//! `fallocate(PUNCH_HOLE)` on files, as fio does for its io_uring engine.

use std::fs::File;
use std::path::Path;

use drivelab_device::claim::Claim;
use drivelab_device::zero::discard_range;

/// One file or block device an engine does I/O on. It can only be made
/// from a device [`Claim`] (reads and writes) or by a read-only open, so
/// no engine can write to anything that was not claimed.
#[derive(Debug)]
pub struct Target {
    pub(crate) file: File,
    pub(crate) is_block: bool,
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

    /// Drop the kernel's cached pages of `len` bytes at `offset` (0, 0:
    /// all of it): fio's `invalidate`, done with posix_fadvise
    /// (POSIX_FADV_DONTNEED) on files and block devices alike.
    pub fn drop_cache(&self, offset: u64, len: u64) -> std::io::Result<()> {
        self.advise(offset, len, libc::POSIX_FADV_DONTNEED)
    }

    /// Give the kernel a lifetime hint for the data written through this
    /// target (`RWH_WRITE_LIFE_*`, 1 none to 5 extreme), as fio's
    /// `write_hint` does: on the file's inode (`F_SET_RW_HINT`) for
    /// buffered I/O, on the open file (`F_SET_FILE_RW_HINT`) for direct
    /// I/O, which kernels since 5.17 refuse with EINVAL (as fio then fails).
    pub fn set_write_hint(&self, hint: u64, direct: bool) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        /// fcntl commands (linux/fcntl.h: F_LINUX_SPECIFIC_BASE + 12, + 14).
        const F_SET_RW_HINT: libc::c_int = 1036;
        const F_SET_FILE_RW_HINT: libc::c_int = 1038;
        let cmd = if direct {
            F_SET_FILE_RW_HINT
        } else {
            F_SET_RW_HINT
        };
        let value: u64 = hint;
        // SAFETY: the kernel reads one u64 through the pointer, which
        // points at `value`, alive for the call; the descriptor is open for
        // the life of `self`.
        let rc = unsafe { libc::fcntl(self.file.as_raw_fd(), cmd, &value as *const u64) };
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// posix_fadvise `advice` (a `POSIX_FADV_*`) for `len` bytes at
    /// `offset` (fio's `fadvise_hint`, `invalidate`).
    pub fn advise(&self, offset: u64, len: u64, advice: i32) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: posix_fadvise only reads its integer arguments; the
        // descriptor is open for the life of `self`.
        let rc = unsafe {
            libc::posix_fadvise(
                self.file.as_raw_fd(),
                offset as libc::off_t,
                len as libc::off_t,
                advice,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::from_raw_os_error(rc))
        }
    }

    /// Read `len` bytes at `offset` into the page cache and drop them
    /// (fio's `pre_read`); a short file ends the reading. Only for a
    /// target opened without `O_DIRECT`: a direct read would cache
    /// nothing.
    pub fn read_through(&self, offset: u64, len: u64) -> std::io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; 1 << 20];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(buf.len() as u64) as usize;
            let got = self.file.read_at(&mut buf[..n], offset + done)?;
            if got == 0 {
                break;
            }
            done += got as u64;
        }
        Ok(done)
    }

    /// Whether it is a block device.
    pub fn is_block(&self) -> bool {
        self.is_block
    }
}

/// Trim `len` bytes at `offset` of `t` now; the completion's result
/// (bytes, or −errno).
pub(crate) fn trim_sync(t: &Target, offset: u64, len: u64) -> i32 {
    match discard_range(&t.file, t.is_block, offset, len) {
        Ok(()) => len.min(i32::MAX as u64) as i32,
        Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
    }
}
