//! `BLKZEROOUT`: ask the kernel to zero a byte range of a block device.
//!
//! The ioctl runs `blkdev_issue_zeroout`: when the queue advertises
//! `write_zeroes_max_bytes` > 0 the kernel sends REQ_OP_WRITE_ZEROES (SCSI
//! WRITE SAME, NVMe Write Zeroes, a loop device's fallocate) and no data
//! crosses the bus; otherwise it writes zero pages itself. Either way the
//! range reads back as zeroes when the call returns. It lives here because
//! this crate is the only one that issues ioctls (and may use `unsafe`);
//! the erase crate's `zeroout` method calls it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// From <linux/fs.h>: `BLKZEROOUT = _IO(0x12,127)`; its argument is a
/// pointer to `uint64_t range[2]` = {start, length}, both in bytes.
const BLKZEROOUT: libc::c_ulong = 0x127f;

/// Zero `len` bytes of the block device open as `file` (opened for
/// writing), starting at byte `offset`, with the `BLKZEROOUT` ioctl.
///
/// `offset` and `len` must be multiples of 512 bytes (and of the logical
/// block size for the device to accept them) and lie within the device;
/// the kernel answers EINVAL otherwise, EBADF when `file` is not open for
/// writing, and ENOTTY when it is not a block device. The page cache over
/// the range is dropped by the kernel, so buffered reads see the zeroes.
/// Whether the kernel offloaded the zeroing is the queue's
/// `write_zeroes_max_bytes` (see [`crate::block::blockdev::BlockDevice`]); this
/// call cannot tell.
pub fn blkzeroout(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let range: [u64; 2] = [offset, len];
    // SAFETY: the descriptor is owned by `file`, which outlives the call;
    // BLKZEROOUT only reads two u64 values through the pointer, which
    // points at `range`, a live, aligned [u64; 2] on this stack frame.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), BLKZEROOUT as _, range.as_ptr()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `BLKDISCARD` = _IO(0x12, 119).
const BLKDISCARD: libc::c_ulong = 0x1277;

/// Discard `len` bytes at `offset`: the `BLKDISCARD` ioctl on a block
/// device, `fallocate(PUNCH_HOLE | KEEP_SIZE)` on a regular file (as fio's
/// trims do). Synchronous.
pub fn discard_range(file: &File, is_block: bool, offset: u64, len: u64) -> io::Result<()> {
    let fd = file.as_raw_fd();
    let r = if is_block {
        let range: [u64; 2] = [offset, len];
        // SAFETY: BLKDISCARD reads a [u64; 2] (start, length) through the
        // pointer; `range` lives across the call and `fd` is open.
        unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) }
    } else {
        // SAFETY: fallocate on an open descriptor with plain integer
        // arguments; no memory is passed.
        unsafe {
            libc::fallocate(
                fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                len as libc::off_t,
            )
        }
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};

    #[test]
    fn ioctl_number_matches_linux_fs_h() {
        // _IO(type, nr) = (type << 8) | nr, no direction or size bits.
        assert_eq!(BLKZEROOUT, (0x12 << 8) | 127);
    }

    #[test]
    fn a_regular_file_is_refused_with_enotty() {
        let dir = drivelab_testkit::TempDir::new("zero-file");
        let p = dir.join("plain");
        std::fs::write(&p, [0xA5u8; 4096]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let e = blkzeroout(&f, 0, 4096).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTTY), "{e}");
        // Nothing was zeroed.
        assert_eq!(std::fs::read(&p).unwrap(), vec![0xA5u8; 4096]);
    }

    #[test]
    fn zeroes_exactly_the_range_on_a_loop_device() {
        let dir = drivelab_testkit::TempDir::new("zero-loop");
        let img = dir.join("img");
        drivelab_testkit::make_image(&img, 1 << 20, &[(0, &[0x5Au8; 1 << 20])]);
        let lo = drivelab_testkit::LoopDev::attach(&img, &[]);
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&lo.path)
            .unwrap();
        // Misaligned ranges and ranges past the end are refused.
        for (o, l) in [(100u64, 512u64), (0, 100), (1 << 20, 512)] {
            let e = blkzeroout(&f, o, l).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{o}+{l}: {e}");
        }
        blkzeroout(&f, 8192, 65536).unwrap();
        f.flush().unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        let mut dev = Vec::new();
        f.read_to_end(&mut dev).unwrap();
        // Second route: the backing file itself, after the loop device's
        // writes are flushed.
        f.sync_all().unwrap();
        let back = std::fs::read(&img).unwrap();
        for bytes in [&dev, &back] {
            assert_eq!(bytes.len(), 1 << 20);
            assert!(bytes[..8192].iter().all(|&b| b == 0x5A));
            assert!(bytes[8192..8192 + 65536].iter().all(|&b| b == 0));
            assert!(bytes[8192 + 65536..].iter().all(|&b| b == 0x5A));
        }
    }
}
