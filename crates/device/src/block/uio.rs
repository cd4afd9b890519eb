//! A UIO device's memory map, reached through safe, bounds-checked calls.
//!
//! The test harness's SCSI drive emulator (`crates/tcmuemu`) is a
//! target_core_user backstore: the kernel shares a command ring with it
//! through `/dev/uioN` (a mailbox, the ring and a data area in one mapping,
//! include/uapi/linux/target_core_user.h). Mapping that memory needs
//! `mmap`, and unsafe code stays in this crate, so the mapping lives here:
//! every access is checked against the mapping's length, the words the
//! kernel and the user hand each other (head and tail) are read and written
//! whole with acquire / release ordering, and byte ranges are copied in and
//! out (the kernel does not touch a command's data while user space owns
//! it). `wait` and `notify` are UIO's interrupt count read and write.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};

/// What went wrong with a UIO device.
#[derive(Debug, thiserror::Error)]
pub enum UioError {
    /// The device or its sysfs size could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The sysfs size is not a number.
    #[error("{path}: not a map size: {text:?}")]
    BadSize {
        /// The sysfs file.
        path: PathBuf,
        /// What it held.
        text: String,
    },
    /// An access beyond the mapping.
    #[error("UIO map access of {len} bytes at {offset} is outside the {size}-byte mapping")]
    OutOfRange {
        /// Start of the access.
        offset: usize,
        /// Its length.
        len: usize,
        /// The mapping's length.
        size: usize,
    },
    /// A 32-bit word access not on a 4-byte boundary.
    #[error("UIO map word access at {0} is not 4-byte aligned")]
    Unaligned(usize),
}

/// `/dev/uioN`'s map 0, shared read-write with the kernel.
#[derive(Debug)]
pub struct UioMap {
    file: File,
    path: PathBuf,
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; nothing in
// it is tied to the thread that mapped it.
unsafe impl Send for UioMap {}

impl UioMap {
    /// Open `/dev/uio{n}` and map its map 0 whole (its size from
    /// `/sys/class/uio/uio{n}/maps/map0/size`).
    pub fn open(n: u32) -> Result<UioMap, UioError> {
        let size_path = PathBuf::from(format!("/sys/class/uio/uio{n}/maps/map0/size"));
        let text = std::fs::read_to_string(&size_path).map_err(|source| UioError::Io {
            path: size_path.clone(),
            source,
        })?;
        let t = text.trim();
        let len = usize::from_str_radix(t.trim_start_matches("0x"), 16)
            .ok()
            .filter(|l| *l > 0)
            .ok_or_else(|| UioError::BadSize {
                path: size_path.clone(),
                text: t.to_string(),
            })?;
        let path = PathBuf::from(format!("/dev/uio{n}"));
        Self::map(&path, len)
    }

    /// Map `len` bytes of `path` (a UIO device) at offset 0 (map 0).
    pub fn map(path: &Path, len: usize) -> Result<UioMap, UioError> {
        let io = |source| UioError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        use std::os::fd::AsRawFd;
        // SAFETY: a shared mapping of an open file descriptor with no
        // address hint; the result is checked for MAP_FAILED before use and
        // the descriptor outlives the mapping (both are owned by the value).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io(std::io::Error::last_os_error()));
        }
        let base =
            NonNull::new(p.cast::<u8>()).ok_or_else(|| io(std::io::Error::last_os_error()))?;
        Ok(UioMap {
            file,
            path: path.to_path_buf(),
            base,
            len,
        })
    }

    /// The mapping's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never, once mapped).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), UioError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(UioError::OutOfRange {
                offset,
                len,
                size: self.len,
            }),
        }
    }

    fn word(&self, offset: usize) -> Result<*mut u32, UioError> {
        self.check(offset, 4)?;
        if offset % 4 != 0 {
            return Err(UioError::Unaligned(offset));
        }
        // SAFETY: offset + 4 <= len (checked above), so the pointer stays
        // inside the mapping; the mapping is page aligned, so base + offset
        // is 4-byte aligned.
        Ok(unsafe { self.base.as_ptr().add(offset) }.cast::<u32>())
    }

    /// The little-endian 32-bit word at `offset`, read whole, with acquire
    /// ordering: what the kernel wrote before it is visible after.
    pub fn load_u32(&self, offset: usize) -> Result<u32, UioError> {
        let p = self.word(offset)?;
        // SAFETY: `p` is in bounds and aligned (`word`); a volatile read of
        // shared memory the kernel may write concurrently reads one whole
        // aligned word.
        let v = unsafe { p.read_volatile() };
        fence(Ordering::Acquire);
        Ok(u32::from_le(v))
    }

    /// Write the 32-bit word at `offset` whole (little-endian), with release
    /// ordering: everything written before it is visible first.
    pub fn store_u32(&self, offset: usize, v: u32) -> Result<(), UioError> {
        let p = self.word(offset)?;
        fence(Ordering::Release);
        // SAFETY: `p` is in bounds and aligned (`word`).
        unsafe { p.write_volatile(v.to_le()) };
        Ok(())
    }

    /// Copy `out.len()` bytes from `offset` into `out`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), UioError> {
        self.check(offset, out.len())?;
        // SAFETY: the source range is inside the mapping (checked), the
        // destination is a distinct Rust slice of the same length.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.as_ptr().add(offset),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }

    /// Copy `data` into the mapping at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), UioError> {
        self.check(offset, data.len())?;
        // SAFETY: the destination range is inside the mapping (checked),
        // the source is a distinct Rust slice of the same length.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.as_ptr().add(offset), data.len())
        };
        Ok(())
    }

    /// Block until the device's interrupt fires (the kernel put work in the
    /// ring); returns the interrupt count.
    pub fn wait(&mut self) -> Result<u32, UioError> {
        let mut b = [0u8; 4];
        self.file
            .read_exact(&mut b)
            .map_err(|source| UioError::Io {
                path: self.path.clone(),
                source,
            })?;
        Ok(u32::from_ne_bytes(b))
    }

    /// Tell the kernel the ring moved (UIO's write: for target_core_user,
    /// "completions are ready").
    pub fn notify(&mut self) -> Result<(), UioError> {
        self.file
            .write_all(&1u32.to_ne_bytes())
            .map_err(|source| UioError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

impl Drop for UioMap {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly what mmap returned, and no reference
        // into the mapping outlives `self` (every access copies).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A regular file maps like a UIO region: the bounds and alignment
    /// checks, whole-word access and byte copies are the same code.
    #[test]
    fn accesses_are_checked_against_the_mapping() {
        let path = std::env::temp_dir().join(format!("uio-map-test-{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 8192]).expect("temp file");
        let m = UioMap::map(&path, 8192).expect("map");
        assert_eq!(m.len(), 8192);
        m.store_u32(64, 0xA1B2_C3D4).expect("store");
        assert_eq!(m.load_u32(64).expect("load"), 0xA1B2_C3D4);
        let mut b = [0u8; 4];
        m.read(64, &mut b).expect("read");
        assert_eq!(b, [0xD4, 0xC3, 0xB2, 0xA1], "little-endian");
        m.write(8190, &[7, 8]).expect("the last two bytes");
        assert!(matches!(
            m.write(8191, &[1, 2]),
            Err(UioError::OutOfRange { .. })
        ));
        assert!(matches!(
            m.read(usize::MAX, &mut b),
            Err(UioError::OutOfRange { .. })
        ));
        assert!(matches!(m.load_u32(8190), Err(UioError::OutOfRange { .. })));
        assert!(matches!(m.load_u32(66), Err(UioError::Unaligned(66))));
        drop(m);
        // The writes went to the file (a shared mapping).
        let back = std::fs::read(&path).expect("read back");
        assert_eq!(&back[64..68], &[0xD4, 0xC3, 0xB2, 0xA1]);
        assert_eq!(&back[8190..], &[7, 8]);
        std::fs::remove_file(&path).ok();
    }
}
