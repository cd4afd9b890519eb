//! The kernel NBD client's ioctls (`linux/nbd.h`), so a user-space server
//! can back `/dev/nbdN` without a network: hand the kernel one end of a
//! connected socket (`NBD_SET_SOCK`), set the block size, the size and the
//! transmission flags, then `NBD_DO_IT` serves until the socket closes or
//! `NBD_DISCONNECT`. The kernel then speaks only the transmission phase of
//! the NBD protocol on that socket (the handshake is skipped).
//!
//! Configuring an NBD device writes nothing to any medium: the device is
//! opened read-only (the ioctls need `CAP_SYS_ADMIN`, not a writable
//! descriptor), and what is written to `/dev/nbdN` afterwards goes to the
//! server the caller runs. Writers of `/dev/nbdN` still go through
//! [`crate::claim::Claim`].

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};

/// `_IO(0xab, nr)`: NBD ioctls take their argument by value.
const fn nbd_io(nr: u64) -> u64 {
    (0xab << 8) | nr
}
/// `NBD_SET_SOCK`.
pub const NBD_SET_SOCK: u64 = nbd_io(0);
/// `NBD_SET_BLKSIZE`.
pub const NBD_SET_BLKSIZE: u64 = nbd_io(1);
/// `NBD_DO_IT`.
pub const NBD_DO_IT: u64 = nbd_io(3);
/// `NBD_CLEAR_SOCK`.
pub const NBD_CLEAR_SOCK: u64 = nbd_io(4);
/// `NBD_CLEAR_QUE`.
pub const NBD_CLEAR_QUE: u64 = nbd_io(5);
/// `NBD_SET_SIZE_BLOCKS`.
pub const NBD_SET_SIZE_BLOCKS: u64 = nbd_io(7);
/// `NBD_DISCONNECT`.
pub const NBD_DISCONNECT: u64 = nbd_io(8);
/// `NBD_SET_TIMEOUT` (seconds).
pub const NBD_SET_TIMEOUT: u64 = nbd_io(9);
/// `NBD_SET_FLAGS`.
pub const NBD_SET_FLAGS: u64 = nbd_io(10);

/// Transmission flags (the NBD protocol's, also given to `NBD_SET_FLAGS`).
pub mod flags {
    /// Always set when flags are given.
    pub const HAS_FLAGS: u16 = 1 << 0;
    /// The export is read-only.
    pub const READ_ONLY: u16 = 1 << 1;
    /// The server takes `NBD_CMD_FLUSH`.
    pub const SEND_FLUSH: u16 = 1 << 2;
    /// The server takes the FUA command flag.
    pub const SEND_FUA: u16 = 1 << 3;
    /// The server takes `NBD_CMD_TRIM`.
    pub const SEND_TRIM: u16 = 1 << 5;
}

/// An NBD ioctl failed.
#[derive(Debug, thiserror::Error)]
#[error("{op} on {path} failed: {source}; check that the nbd module is loaded (modprobe nbd), the device is not in use by another server, and you are root")]
pub struct NbdError {
    /// The ioctl or open.
    pub op: &'static str,
    /// The NBD device.
    pub path: PathBuf,
    /// The underlying error.
    #[source]
    pub source: io::Error,
}

/// An open `/dev/nbdN` (read-only descriptor) to configure.
#[derive(Debug)]
pub struct NbdDevice {
    file: File,
    path: PathBuf,
}

impl NbdDevice {
    /// Opens the NBD device node read-only.
    pub fn open(path: &Path) -> Result<Self, NbdError> {
        let file = File::open(path).map_err(|source| NbdError {
            op: "open",
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
        })
    }

    fn ioctl(&self, op: &'static str, req: u64, arg: libc::c_ulong) -> Result<(), NbdError> {
        // SAFETY: the descriptor is open (owned by `self.file`) for the call;
        // every NBD ioctl issued here takes its argument by value (a number
        // or a descriptor), so no memory is read or written through it.
        let r = unsafe { libc::ioctl(self.file.as_raw_fd(), req as _, arg) };
        if r < 0 {
            return Err(NbdError {
                op,
                path: self.path.clone(),
                source: io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// Gives the kernel its end of a connected stream socket. The kernel
    /// takes its own reference: the caller may close its descriptor after
    /// `NBD_DO_IT` returns.
    pub fn set_sock(&self, sock: BorrowedFd<'_>) -> Result<(), NbdError> {
        self.ioctl(
            "NBD_SET_SOCK",
            NBD_SET_SOCK,
            sock.as_raw_fd() as libc::c_ulong,
        )
    }

    /// Sets the logical block size in bytes (512 to the page size, a power of two).
    pub fn set_block_size(&self, bytes: u32) -> Result<(), NbdError> {
        self.ioctl(
            "NBD_SET_BLKSIZE",
            NBD_SET_BLKSIZE,
            libc::c_ulong::from(bytes),
        )
    }

    /// Sets the size in blocks of the block size set before.
    pub fn set_size_blocks(&self, blocks: u64) -> Result<(), NbdError> {
        self.ioctl(
            "NBD_SET_SIZE_BLOCKS",
            NBD_SET_SIZE_BLOCKS,
            blocks as libc::c_ulong,
        )
    }

    /// Sets the transmission flags (see [`flags`]).
    pub fn set_flags(&self, f: u16) -> Result<(), NbdError> {
        self.ioctl("NBD_SET_FLAGS", NBD_SET_FLAGS, libc::c_ulong::from(f))
    }

    /// Sets the per-command timeout in seconds (0: none).
    pub fn set_timeout(&self, seconds: u32) -> Result<(), NbdError> {
        self.ioctl(
            "NBD_SET_TIMEOUT",
            NBD_SET_TIMEOUT,
            libc::c_ulong::from(seconds),
        )
    }

    /// Starts the device and blocks until the socket closes or
    /// [`NbdDevice::disconnect`]; the device is usable meanwhile. Returns the
    /// error the kernel ended with, if any, after clearing the queue and
    /// the socket so the device can be reused.
    pub fn do_it(&self) -> Result<(), NbdError> {
        let r = self.ioctl("NBD_DO_IT", NBD_DO_IT, 0);
        let _ = self.ioctl("NBD_CLEAR_QUE", NBD_CLEAR_QUE, 0);
        let _ = self.ioctl("NBD_CLEAR_SOCK", NBD_CLEAR_SOCK, 0);
        r
    }

    /// Asks the kernel to end the connection: it sends `NBD_CMD_DISC` to
    /// the server and `NBD_DO_IT` returns.
    pub fn disconnect(&self) -> Result<(), NbdError> {
        self.ioctl("NBD_DISCONNECT", NBD_DISCONNECT, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_linux_nbd_h() {
        // linux/nbd.h: #define NBD_SET_SOCK _IO(0xab, 0) ... NBD_SET_FLAGS _IO(0xab, 10);
        // _IO(type, nr) = type << 8 | nr on x86-64 (no size, no direction).
        assert_eq!(NBD_SET_SOCK, 0xab00);
        assert_eq!(NBD_SET_BLKSIZE, 0xab01);
        assert_eq!(NBD_DO_IT, 0xab03);
        assert_eq!(NBD_CLEAR_SOCK, 0xab04);
        assert_eq!(NBD_CLEAR_QUE, 0xab05);
        assert_eq!(NBD_SET_SIZE_BLOCKS, 0xab07);
        assert_eq!(NBD_DISCONNECT, 0xab08);
        assert_eq!(NBD_SET_TIMEOUT, 0xab09);
        assert_eq!(NBD_SET_FLAGS, 0xab0a);
        assert_eq!(flags::SEND_TRIM, 32);
    }

    #[test]
    fn a_missing_device_says_to_load_the_module() {
        let e = NbdDevice::open(Path::new("/dev/nbd-does-not-exist")).unwrap_err();
        assert!(e.to_string().contains("modprobe nbd"), "{e}");
    }
}
