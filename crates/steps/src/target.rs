//! The device (or file) under test: what it is, its logical block size and
//! capacity, the claim that any writing step needs (the device crate's
//! safety assessment, the user's consent and an exclusive hold kept for the
//! whole sequence), and the engine target built from it.
//!
//! Block devices are opened with `O_DIRECT`, so a verify reads the medium,
//! not the page cache. Regular files use `O_DIRECT` where their filesystem
//! supports it (tmpfs does not; there the page cache *is* the medium).

use std::fs::OpenOptions;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use drivelab_device::blockdev::BlockDevice;
use drivelab_device::claim::{Claim, ClaimOptions, Consent};
use drivelab_device::units::{BlockCount, SectorSize};
use drivelab_engine::engine::Target;

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
    /// The write claim, held from inspection to the end of the run, when
    /// any step writes.
    pub claim: Option<Claim>,
}

impl TestTarget {
    /// Inspect `path` (reads only). `file_block_size` is the logical block
    /// size for regular files (ignored for block devices; default 512).
    /// `writes`: some step writes, so claim the target (the safety
    /// assessment; `force` overrides what it may).
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
            let claim = claim_if(path, writes, force, true)?;
            let bs = dev.logical_sector;
            Ok(TestTarget {
                path: path.to_path_buf(),
                is_block: true,
                block_size: bs,
                blocks: BlockCount(dev.size.0 / u64::from(bs.0.max(1))),
                device: Some(dev),
                direct: true,
                claim,
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
            let claim = claim_if(path, writes, force, direct)?;
            Ok(TestTarget {
                path: path.to_path_buf(),
                is_block: false,
                block_size: SectorSize(bs),
                blocks: BlockCount(blocks),
                device: None,
                direct,
                claim,
            })
        } else {
            Err(err(
                "not a regular file or block device; give a file or a /dev node".into(),
            ))
        }
    }

    /// The engine target for a step: through the claim when `write`,
    /// read-only otherwise; `O_DIRECT` where possible.
    pub fn engine_target(&self, write: bool) -> Result<Target, StepError> {
        let err = |e: std::io::Error| StepError::Target {
            path: self.path.display().to_string(),
            msg: format!(
                "cannot open: {e}{}",
                drivelab_device::blockdev::unless_root(" (run as root?)")
            ),
        };
        match (&self.claim, write) {
            (Some(c), true) => Target::claimed(c, self.direct).map_err(err),
            (None, true) => Err(StepError::Target {
                path: self.path.display().to_string(),
                msg: "a writing step needs the target claimed for writing; this is a bug".into(),
            }),
            _ => Target::read_only(&self.path, self.direct).map_err(err),
        }
    }

    /// The sysfs name (`loop3`, `sdb`), or the file name.
    pub fn name(&self) -> String {
        match &self.device {
            Some(d) => d.name.clone(),
            None => self.path.display().to_string(),
        }
    }
}

/// Claim `path` for writing when `writes`.
fn claim_if(
    path: &Path,
    writes: bool,
    force: bool,
    direct: bool,
) -> Result<Option<Claim>, StepError> {
    if !writes {
        return Ok(None);
    }
    let consent = Consent {
        force,
        confirm: None,
    };
    let opts = ClaimOptions {
        direct,
        create_size: None,
    };
    Ok(Some(Claim::open(path, &consent, &opts)?))
}
