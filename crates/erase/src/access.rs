//! Every descriptor an erase opens on a drive's block device: the exclusive
//! hold it keeps for the whole erase, and the descriptors its streamed
//! writes and its read-back use.
//!
//! The hold is taken while planning, before any journal or certificate file
//! exists, with `O_EXCL`: the kernel then refuses every other exclusive
//! opener (a mount, md/dm/LVM, another `drivelab erase`) until the erase
//! ends, and a drive someone else already holds is refused up front
//! ([`EraseError::Busy`], exit status 2) instead of failing half-way with a
//! stale journal. The erase's own ioctls (BLKZEROOUT, discard, the final
//! flush) go through the hold's descriptor ([`Hold::ioctl_file`]), so the
//! kernel sees the exclusive holder zero or discard and drops the range's
//! page cache directly. The O_DIRECT descriptors are opened without
//! `O_EXCL`: the kernel counts an exclusive claim per open file, so a
//! second exclusive open by this same process would be refused too. (The
//! device crate's `Claim` will replace this module; passthrough opens for
//! SG_IO and NVMe ioctls stay in the device crate.)

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::EraseError;

/// An exclusive (`O_EXCL`) descriptor on a drive, held while the drive is
/// planned, erased, verified and certified. Dropping it lets go.
#[derive(Debug)]
pub struct Hold {
    file: File,
    path: PathBuf,
}

impl Hold {
    /// The device held.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The held descriptor (a duplicate of it) for the erase's own ioctls:
    /// BLKZEROOUT, discard, fsync. Writable when the hold was taken for
    /// writing.
    pub fn ioctl_file(&self) -> std::io::Result<File> {
        self.file.try_clone()
    }
}

/// Take the exclusive hold on `path`, read-write when `write` (an erase),
/// read-only otherwise (a dry run). Someone else holding the device (EBUSY)
/// is a refusal; any other failure is an I/O error naming it.
pub fn hold(path: &Path, write: bool) -> Result<Hold, EraseError> {
    match OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_EXCL)
        .open(path)
    {
        Ok(f) => Ok(Hold {
            file: f,
            path: path.to_path_buf(),
        }),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Err(EraseError::Busy {
            device: path.display().to_string(),
        }),
        Err(e) => Err(EraseError::Io {
            device: path.display().to_string(),
            what: "open O_EXCL to hold the drive".into(),
            source: e,
        }),
    }
}

/// A read-write O_DIRECT descriptor for streamed writes. No O_EXCL: the
/// [`Hold`] has the drive.
pub fn open_for_direct_write(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}

/// A read-only O_DIRECT descriptor for the read-back.
pub fn open_for_read_direct(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
}
