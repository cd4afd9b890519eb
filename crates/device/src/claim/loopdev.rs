//! Loop devices as windows onto the bytes of a backing file.
//!
//! Two loop devices over the same file (or a loop device and the file
//! itself) are two names for the same bytes: writing one rewrites what the
//! other shows. The safety assessment must therefore compare what lies
//! *under* a target, not its name. This module describes each attached loop
//! device as an [`Extent`]: the identity of its backing file (device and
//! inode, or the block device behind it) and the byte range it exposes
//! (`offset` up to `offset + sizelimit`, or to the end of the file when no
//! limit is set), so that any two targets can be checked for overlap.
//!
//! The identity comes from the `LOOP_GET_STATUS64` ioctl (the kernel's own
//! `st_dev`/`st_ino` of the file it holds, right even when the file was
//! deleted or lives in another mount namespace), falling back to `stat` of
//! the sysfs `loop/backing_file` path; offset and limit come from sysfs
//! (`loop/offset`, `loop/sizelimit`).

use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::block::blockdev::{split_dev, BlockDevice};

/// `LOOP_GET_STATUS64` from <linux/loop.h>: `0x4C05`.
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// `struct loop_info64` from <linux/loop.h> (232 bytes).
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// What holds the bytes: a file (by filesystem device and inode) or a block
/// device (a partition is described as its whole disk, with the partition's
/// start added to the offsets, so a loop over `sdb1` and one over `sdb`
/// are compared in the same coordinates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Backing {
    /// A regular file.
    File {
        /// `st_dev` of the filesystem it lives on, as (major, minor).
        dev: (u32, u32),
        /// Its inode number.
        ino: u64,
    },
    /// A whole block device, as (major, minor).
    Block {
        /// Device numbers.
        dev: (u32, u32),
    },
}

/// A range of a backing's bytes: `start..end`, open-ended when `end` is
/// `None` (a loop device without a size limit follows its file's size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Extent {
    /// Whose bytes.
    pub backing: Backing,
    /// First byte.
    pub start: u64,
    /// One past the last byte; `None` = to the end, however far it grows.
    pub end: Option<u64>,
}

impl Extent {
    /// The bytes both extents cover, as `(start, end)`, or `None` when they
    /// have different backings or do not overlap.
    pub fn overlap(&self, other: &Extent) -> Option<(u64, Option<u64>)> {
        if self.backing != other.backing {
            return None;
        }
        let start = self.start.max(other.start);
        let end = match (self.end, other.end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match end {
            Some(e) if e <= start => None,
            _ => Some((start, end)),
        }
    }

    /// The whole of a regular file (whatever its size becomes).
    pub fn whole_file(md: &fs::Metadata) -> Extent {
        Extent {
            backing: Backing::File {
                dev: split_dev(md.dev()),
                ino: md.ino(),
            },
            start: 0,
            end: None,
        }
    }

    /// A sub-range of this extent: `len` bytes (or to its end) from `off`.
    fn window(&self, off: u64, len: Option<u64>) -> Extent {
        let start = self.start.saturating_add(off);
        let end = match (len.map(|l| start.saturating_add(l)), self.end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Extent {
            backing: self.backing,
            start,
            end,
        }
    }
}

/// Format `start..end` as "1048576..2097152", or "1048576.." open-ended.
pub fn range_text(start: u64, end: Option<u64>) -> String {
    match end {
        Some(e) => format!("{start}..{e}"),
        None => format!("{start}.."),
    }
}

/// One attached loop device and what it exposes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoopInfo {
    /// Kernel name, `loopN`.
    pub name: String,
    /// Major device number.
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
    /// The backing file as sysfs names it (may end in " (deleted)").
    pub backing_file: PathBuf,
    /// First byte of the backing file the device shows (`loop/offset`).
    pub offset: u64,
    /// Bytes shown at most (`loop/sizelimit`); 0 = up to the file's end.
    pub sizelimit: u64,
    /// The backing's identity; `None` when it could not be determined
    /// (then nothing can be compared).
    pub backing: Option<Backing>,
}

impl LoopInfo {
    /// Describe `/sys/block/NAME` if it is an attached loop device.
    pub fn read(name: &str) -> Option<LoopInfo> {
        let dir = Path::new("/sys/block").join(name);
        let backing_file = fs::read_to_string(dir.join("loop/backing_file")).ok()?;
        let backing_file = PathBuf::from(backing_file.trim_end_matches('\n'));
        let num =
            |f: &str| -> Option<u64> { fs::read_to_string(dir.join(f)).ok()?.trim().parse().ok() };
        let dev = fs::read_to_string(dir.join("dev")).ok()?;
        let (ma, mi) = dev.trim().split_once(':')?;
        let (major, minor) = (ma.parse().ok()?, mi.parse().ok()?);
        let status = loop_status(&PathBuf::from("/dev").join(name), (major, minor));
        let (offset, sizelimit) = match (num("loop/offset"), num("loop/sizelimit"), &status) {
            (Some(o), Some(s), _) => (o, s),
            (_, _, Some(st)) => (st.lo_offset, st.lo_sizelimit),
            _ => (0, 0),
        };
        let raw = match &status {
            Some(st) if st.lo_rdevice != 0 => Some(Backing::Block {
                dev: split_dev(st.lo_rdevice),
            }),
            Some(st) => Some(Backing::File {
                dev: split_dev(st.lo_device),
                ino: st.lo_inode,
            }),
            None => stat_backing(&backing_file),
        };
        Some(LoopInfo {
            name: name.to_string(),
            major,
            minor,
            backing_file,
            offset,
            sizelimit,
            backing: raw,
        })
    }

    /// The bytes this device exposes, in whole-disk coordinates for a
    /// block-device backing; `None` when the backing is unknown.
    pub fn extent(&self) -> Option<Extent> {
        let limit = (self.sizelimit != 0).then_some(self.sizelimit);
        match self.backing? {
            Backing::Block { dev } => Some(block_extent(dev)?.window(self.offset, limit)),
            b @ Backing::File { .. } => Some(Extent {
                backing: b,
                start: self.offset,
                end: limit.map(|l| self.offset.saturating_add(l)),
            }),
        }
    }
}

/// Every attached loop device (unattached ones have no `loop/backing_file`).
pub fn attached() -> Vec<LoopInfo> {
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out: Vec<LoopInfo> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("loop"))
        .filter_map(|n| LoopInfo::read(&n))
        .collect();
    out.sort_by(|a, b| crate::block::blockdev::natural_cmp(&a.name, &b.name));
    out
}

/// The bytes a block device covers, in whole-disk coordinates: a partition
/// is its disk from the partition's start for its size; a loop device (or a
/// partition of one) is the range of its backing file it shows. `None` for
/// an unattached loop or a device sysfs cannot describe.
pub fn device_extent(dev: &BlockDevice) -> Option<Extent> {
    if dev.partition {
        let parent = dev.parent_disk().ok()??;
        let whole = device_extent(&parent)?;
        return Some(whole.window(dev.start?.0, Some(dev.size.0)));
    }
    if let Some(l) = LoopInfo::read(&dev.name) {
        return l.extent();
    }
    Some(Extent {
        backing: Backing::Block {
            dev: (dev.major, dev.minor),
        },
        start: 0,
        end: Some(dev.size.0),
    })
}

/// A block device's extent from its numbers (for a loop's block backing).
fn block_extent(dev: (u32, u32)) -> Option<Extent> {
    match BlockDevice::from_dev_numbers(dev.0, dev.1) {
        Ok(d) => device_extent(&d),
        // Not in sysfs (should not happen for a live backing): compare by number.
        Err(_) => Some(Extent {
            backing: Backing::Block { dev },
            start: 0,
            end: None,
        }),
    }
}

/// The identity of a backing path by `stat`, unless the kernel marks it
/// deleted (then the name may now belong to another file).
fn stat_backing(path: &Path) -> Option<Backing> {
    if path.as_os_str().to_string_lossy().ends_with(" (deleted)") {
        return None;
    }
    let md = fs::metadata(path).ok()?;
    if md.file_type().is_block_device() {
        Some(Backing::Block {
            dev: split_dev(md.rdev()),
        })
    } else {
        Some(Backing::File {
            dev: split_dev(md.dev()),
            ino: md.ino(),
        })
    }
}

/// `LOOP_GET_STATUS64` on the loop node, after checking that the node is
/// the device with these numbers. `None` when it cannot be asked.
fn loop_status(node: &Path, numbers: (u32, u32)) -> Option<LoopInfo64> {
    let f = fs::File::open(node).ok()?;
    let md = f.metadata().ok()?;
    if !md.file_type().is_block_device() || split_dev(md.rdev()) != numbers {
        return None;
    }
    let mut info = LoopInfo64 {
        lo_device: 0,
        lo_inode: 0,
        lo_rdevice: 0,
        lo_offset: 0,
        lo_sizelimit: 0,
        lo_number: 0,
        lo_encrypt_type: 0,
        lo_encrypt_key_size: 0,
        lo_flags: 0,
        lo_file_name: [0; 64],
        lo_crypt_name: [0; 64],
        lo_encrypt_key: [0; 32],
        lo_init: [0; 2],
    };
    // SAFETY: `f` is an open descriptor for the whole call; the node was
    // just checked to be the loop device, whose LOOP_GET_STATUS64 writes
    // one `struct loop_info64` (232 bytes, the layout above) through the
    // pointer, which points at a live, writable, properly aligned value.
    let r = unsafe {
        libc::ioctl(
            f.as_raw_fd(),
            LOOP_GET_STATUS64 as _,
            &mut info as *mut LoopInfo64,
        )
    };
    (r == 0).then_some(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(start: u64, end: Option<u64>) -> Extent {
        Extent {
            backing: Backing::File {
                dev: (254, 0),
                ino: 12,
            },
            start,
            end,
        }
    }

    #[test]
    fn loop_info64_has_the_kernel_size() {
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
        // _IO('L', 0x05)
        assert_eq!(
            LOOP_GET_STATUS64,
            (u64::from(b'L') << 8 | 0x05) as libc::c_ulong
        );
    }

    #[test]
    fn open_ended_ranges_overlap_from_the_later_start() {
        let a = file(0, None);
        let b = file(1 << 20, None);
        assert_eq!(a.overlap(&b), Some((1 << 20, None)));
        assert_eq!(b.overlap(&a), Some((1 << 20, None)));
    }

    #[test]
    fn adjacent_ranges_do_not_overlap() {
        let a = file(0, Some(1 << 20));
        let b = file(1 << 20, None);
        assert_eq!(a.overlap(&b), None);
        let c = file(4096, Some(8192));
        assert_eq!(c.overlap(&file(0, Some(4096))), None);
        assert_eq!(c.overlap(&file(8191, Some(9000))), Some((8191, Some(8192))));
    }

    #[test]
    fn different_backings_never_overlap() {
        let a = file(0, None);
        let mut b = file(0, None);
        b.backing = Backing::File {
            dev: (254, 0),
            ino: 13,
        };
        assert_eq!(a.overlap(&b), None);
        b.backing = Backing::Block { dev: (254, 0) };
        assert_eq!(a.overlap(&b), None);
    }

    #[test]
    fn window_is_clipped_to_its_parent() {
        let disk = file(1 << 20, Some(3 << 20));
        let part = disk.window(512, Some(10 << 20));
        assert_eq!((part.start, part.end), ((1 << 20) + 512, Some(3 << 20)));
        let open = file(100, None).window(10, None);
        assert_eq!((open.start, open.end), (110, None));
    }

    #[test]
    fn range_text_marks_open_ends() {
        assert_eq!(range_text(1048576, None), "1048576..");
        assert_eq!(range_text(0, Some(4096)), "0..4096");
    }
}
