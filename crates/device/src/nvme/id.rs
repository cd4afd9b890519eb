//! The namespace ID of an open NVMe node (`NVME_IOCTL_ID`): what a
//! [`NvmeDevice`](crate::nvme::NvmeDevice) learns when it opens, and what
//! the claim asks of a generic namespace node before it maps it to its
//! block device.

use std::fs::File;
use std::os::fd::AsRawFd;

/// `_IO('N', 0x40)`: the namespace ID of a namespace block device.
pub const NVME_IOCTL_ID: libc::c_ulong = 0x4E40;

/// The namespace ID of the NVMe node open as `file`: `Some` for a
/// namespace, `None` when the ioctl answers 0 (a controller), or the errno
/// when it fails (not an NVMe node).
pub fn namespace_id(file: &File) -> Result<Option<u32>, i32> {
    // SAFETY: NVME_IOCTL_ID takes no argument; it only returns a value.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), NVME_IOCTL_ID as _) };
    if rc > 0 {
        Ok(Some(rc as u32))
    } else if rc < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(None)
    }
}
