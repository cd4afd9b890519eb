//! The device (or file) under test: what it is, its logical block size and
//! capacity, the safety check before any writing step, and opening it for
//! the engine.
//!
//! Block devices are opened with `O_DIRECT`, so a verify reads the medium,
//! not the page cache. Regular files use `O_DIRECT` where their filesystem
//! supports it (tmpfs does not; there the page cache *is* the medium).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use drivelab_device::blockdev::BlockDevice;
use drivelab_device::safety::check_writable;
use drivelab_device::units::{BlockCount, SectorSize};

use crate::error::StepError;

/// The target of a test run.
#[derive(Debug)]
pub struct TestTarget {
    /// Path as given.
    pub path: PathBuf,
    /// Whether it is a block device.
    pub is_block: bool,
    /// Logical block size: the device's, or for a file the one asked for
    /// (default 512 bytes). LBAs and block counts are in this unit.
    pub block_size: SectorSize,
    /// Capacity in logical blocks (whole blocks only).
    pub blocks: BlockCount,
    /// Device identity (block devices only).
    pub device: Option<BlockDevice>,
    /// Whether the target is opened with `O_DIRECT`.
    pub direct: bool,
}

impl TestTarget {
    /// Inspect `path` (reads only). `file_block_size` is the logical block
    /// size for regular files (ignored for block devices; default 512).
    /// `writes`: some step writes, so run the safety check; `force`
    /// overrides what it may.
    pub fn inspect(
        path: &Path,
        file_block_size: Option<u32>,
        writes: bool,
        force: bool,
    ) -> Result<TestTarget, StepError> {
        let shown = path.display().to_string();
        let err = |msg: String| StepError::Target {
            path: shown.clone(),
            msg,
        };
        let md = std::fs::metadata(path).map_err(|e| {
            err(format!(
                "cannot inspect: {e}; give an existing block device or file"
            ))
        })?;
        if md.file_type().is_block_device() {
            let dev = BlockDevice::from_path(path).map_err(|e| err(e.to_string()))?;
            if dev.size.0 == 0 {
                return Err(err(
                    "the device has size 0 (an unattached loop device?); attach it or pick another"
                        .into(),
                ));
            }
            if writes {
                check_writable(&dev, force)?;
            }
            let bs = dev.logical_sector;
            Ok(TestTarget {
                path: path.to_path_buf(),
                is_block: true,
                block_size: bs,
                blocks: BlockCount(dev.size.0 / u64::from(bs.0.max(1))),
                device: Some(dev),
                direct: true,
            })
        } else if md.is_file() {
            let bs = file_block_size.unwrap_or(512);
            if bs < 512 || !bs.is_power_of_two() || bs > 65536 {
                return Err(StepError::bad(
                    "block-size",
                    &bs.to_string(),
                    "a power of two from 512 to 65536",
                ));
            }
            let blocks = md.len() / u64::from(bs);
            if blocks == 0 {
                return Err(err(format!(
                    "the file is smaller than one {bs}-byte block; give a larger file"
                )));
            }
            let direct = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(path)
                .is_ok();
            Ok(TestTarget {
                path: path.to_path_buf(),
                is_block: false,
                block_size: SectorSize(bs),
                blocks: BlockCount(blocks),
                device: None,
                direct,
            })
        } else {
            Err(err(
                "not a regular file or block device; give a file or a /dev node".into(),
            ))
        }
    }

    /// Open for a step: read-write when `write`, `O_DIRECT` where possible.
    pub fn open(&self, write: bool) -> Result<File, StepError> {
        let mut o = OpenOptions::new();
        o.read(true).write(write);
        if self.direct {
            o.custom_flags(libc::O_DIRECT);
        }
        o.open(&self.path).map_err(|e| StepError::Target {
            path: self.path.display().to_string(),
            msg: format!(
                "cannot open: {e}{}",
                drivelab_device::blockdev::unless_root(" (run as root?)")
            ),
        })
    }

    /// The sysfs name (`loop3`, `sdb`), or the file name.
    pub fn name(&self) -> String {
        match &self.device {
            Some(d) => d.name.clone(),
            None => self.path.display().to_string(),
        }
    }
}
