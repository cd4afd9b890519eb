//! What the passthrough commands share: timeouts, the block range and
//! write consent a caller gives, the one error type, and opening the
//! device (read-only, or through a claim for writing).

use std::path::{Path, PathBuf};

use crate::ata::AtaError;
use crate::block::blockdev::BlockDevError;
use crate::caps;
use crate::claim::{Claim, ClaimError, ClaimOptions, Consent};
use crate::nvme::{NvmeDevice, NvmeError};
use crate::passthrough::failure::Failure;
use crate::scsi::sg::{SgDevice, SgError};
use crate::units::{BlockCount, Lba};

/// Default command timeout, ms: one minute.
pub const SHORT_TIMEOUT_MS: u32 = 60_000;
/// Default timeout of the long commands (format, sanitize, foreground SCT
/// Write Same), ms: ten minutes.
pub const LONG_TIMEOUT_MS: u32 = 600_000;

/// A range of logical blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRange {
    /// First logical block.
    pub lba: Lba,
    /// Number of logical blocks (at least 1).
    pub count: BlockCount,
}

impl BlockRange {
    /// A range of `count` blocks from `lba`.
    pub fn new(lba: u64, count: u64) -> BlockRange {
        BlockRange {
            lba: Lba(lba),
            count: BlockCount(count),
        }
    }

    /// Refuse what no device could take: zero blocks (WRITE SAME with 0
    /// blocks means "to the end of the medium") and a range past 2^64.
    pub(super) fn check(&self) -> Result<(), OpError> {
        if self.count.0 == 0 {
            return Err(OpError::Invalid("--count must be at least 1".into()));
        }
        if self.lba.0.checked_add(self.count.0).is_none() {
            return Err(OpError::Invalid("--lba + --count overflows 64 bits".into()));
        }
        Ok(())
    }
}

/// The user's consent to a command that destroys data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteConsent {
    /// The user confirmed that the command may destroy data (`--yes`).
    pub yes: bool,
    /// Write even if the device is in use, partitioned or holds a
    /// filesystem (`--force`); a read-only or system device is still refused.
    pub force: bool,
}

/// Why an operation did not produce an answer.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// The request is one no device could take (checked before anything
    /// is opened).
    #[error("{0}")]
    Invalid(String),
    /// A writing op without the user's confirmation.
    #[error("'device {} {op}' destroys data on {}; add --yes to confirm", .path.display(), .path.display())]
    NotConfirmed {
        /// The device.
        path: PathBuf,
        /// The op's name (`write-same`, `nvme-format`, …).
        op: &'static str,
    },
    /// The device path cannot be stat'ed.
    #[error("cannot open {}: {error}", .path.display())]
    Missing {
        /// The device.
        path: PathBuf,
        /// What stat said.
        error: std::io::Error,
    },
    /// The device cannot be claimed for writing: refused by the safety
    /// assessment, or held by another process.
    #[error(transparent)]
    Unsafe(ClaimError),
    /// A character device (sg, NVMe controller) without `--force`: the
    /// safety checks cannot see into it.
    #[error("{} is a character device, which the safety checks cannot see into (mounts, partitions); use the block device, or pass --force", .0.display())]
    CharacterDevice(PathBuf),
    /// Neither a block nor a character device.
    #[error("{} is not a device node; give /dev/sdX, /dev/sgN, /dev/nvmeXnY or /dev/nvmeX", .0.display())]
    NotADevice(PathBuf),
    /// The block device's sysfs facts (needed by the safety check) cannot
    /// be read.
    #[error("cannot read the sysfs facts of {}", .path.display())]
    Sysfs {
        /// The device.
        path: PathBuf,
        /// Why.
        #[source]
        source: BlockDevError,
    },
    /// The device (or the host around it) failed the command.
    #[error(transparent)]
    Failed(Box<Failure>),
}

impl OpError {
    /// Whether the request was refused before anything was sent (a bad
    /// request, no consent, the safety check): the caller's input, not the
    /// device, is at fault.
    pub fn is_input(&self) -> bool {
        !matches!(self, OpError::Sysfs { .. } | OpError::Failed(_))
    }
}

impl From<Failure> for OpError {
    fn from(f: Failure) -> Self {
        OpError::Failed(Box::new(f))
    }
}

impl From<SgError> for OpError {
    fn from(e: SgError) -> Self {
        OpError::Failed(Box::new(e.into()))
    }
}

impl From<AtaError> for OpError {
    fn from(e: AtaError) -> Self {
        OpError::Failed(Box::new(e.into()))
    }
}

impl From<NvmeError> for OpError {
    fn from(e: NvmeError) -> Self {
        OpError::Failed(Box::new(e.into()))
    }
}

impl WriteConsent {
    /// The gate every writing op passes before the device is opened: the
    /// user's confirmation, then the device claim of a block device (the
    /// safety assessment, `--force`, an exclusive hold kept while the
    /// command runs). A character device (sg, an NVMe controller) cannot be
    /// assessed or claimed: it needs `force`, and then `None` is returned.
    pub(super) fn claim(&self, dev: &Path, op: &'static str) -> Result<Option<Claim>, OpError> {
        self.claim_with(dev, op, false)
    }

    /// [`WriteConsent::claim`], taking a SCSI disk of size 0 too (one whose
    /// block length the kernel does not support; see
    /// [`Claim::open_scsi_any_size`]).
    pub(super) fn claim_any_size(
        &self,
        dev: &Path,
        op: &'static str,
    ) -> Result<Option<Claim>, OpError> {
        self.claim_with(dev, op, true)
    }

    fn claim_with(
        &self,
        dev: &Path,
        op: &'static str,
        any_size: bool,
    ) -> Result<Option<Claim>, OpError> {
        use std::os::unix::fs::FileTypeExt;
        if !self.yes {
            return Err(OpError::NotConfirmed {
                path: dev.to_path_buf(),
                op,
            });
        }
        let md = std::fs::metadata(dev).map_err(|error| OpError::Missing {
            path: dev.to_path_buf(),
            error,
        })?;
        if md.file_type().is_block_device() {
            let consent = Consent {
                force: self.force,
                confirm: None,
            };
            if any_size {
                Claim::open_scsi_any_size(dev, &consent)
            } else {
                Claim::open(dev, &consent, &ClaimOptions::default())
            }
            .map(Some)
            .map_err(OpError::Unsafe)
        } else if md.file_type().is_char_device() {
            if self.force {
                Ok(None)
            } else {
                Err(OpError::CharacterDevice(dev.to_path_buf()))
            }
        } else {
            Err(OpError::NotADevice(dev.to_path_buf()))
        }
    }
}

/// The SG_IO handle for a writing op: through the claim of a block device,
/// else (a character device the user forced, see [`WriteConsent::claim`])
/// opened read-write as one.
pub(super) fn sg_for_write(
    dev: &Path,
    claim: Option<&Claim>,
    timeout_ms: u32,
) -> Result<SgDevice, OpError> {
    let mut d = match claim {
        Some(c) => SgDevice::claimed(c)?,
        None => SgDevice::open_forced_char(dev)?,
    };
    d.set_timeout_ms(timeout_ms);
    Ok(d)
}

/// The NVMe handle for a writing op: through the claim of a namespace's
/// block device, else (a controller device the user forced, see
/// [`WriteConsent::claim`]) opened as one.
pub(super) fn nvme_for_write(dev: &Path, claim: Option<&Claim>) -> Result<NvmeDevice, OpError> {
    Ok(match claim {
        Some(c) => NvmeDevice::claimed(c)?,
        None => NvmeDevice::open_forced_char(dev)?,
    })
}

/// Open `dev` for SG_IO with the given timeout.
pub(super) fn open_sg(dev: &Path, timeout_ms: u32, rw: bool) -> Result<SgDevice, OpError> {
    let mut d = if rw {
        SgDevice::open_rw(dev)?
    } else {
        SgDevice::open(dev)?
    };
    d.set_timeout_ms(timeout_ms);
    Ok(d)
}

/// The NVMe namespace behind `dev`, if it is one.
pub(super) fn nvme_namespace(dev: &Path) -> Option<NvmeDevice> {
    NvmeDevice::open(dev).ok().filter(|d| d.nsid().is_some())
}

/// Bytes one passthrough command may move for `dev`: the kernel maps the
/// user buffer page by page, so stay within max_hw_sectors_kb and
/// max_segments (from sysfs); 128 KiB when sysfs says nothing (always safe).
pub(super) fn transfer_limit(dev: &Path) -> u64 {
    caps::sysfs_facts(dev)
        .and_then(|f| f.passthrough_transfer_limit())
        .unwrap_or(128 * 1024)
        .clamp(4096, 64 << 20)
}

/// Milliseconds since `t0`.
pub(super) fn elapsed_ms(t0: std::time::Instant) -> u64 {
    t0.elapsed().as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_zero_blocks_or_past_2_64_are_refused() {
        let e = BlockRange::new(0, 0).check().unwrap_err();
        assert!(e.is_input());
        assert_eq!(e.to_string(), "--count must be at least 1");
        let e = BlockRange::new(u64::MAX, 2).check().unwrap_err();
        assert_eq!(e.to_string(), "--lba + --count overflows 64 bits");
        assert!(BlockRange::new(u64::MAX - 2, 2).check().is_ok());
    }

    #[test]
    fn writing_without_consent_is_refused_before_the_device_is_looked_at() {
        let e = WriteConsent {
            yes: false,
            force: true,
        }
        .claim(Path::new("/nonexistent/dev"), "unmap")
        .unwrap_err();
        assert!(e.is_input());
        assert_eq!(
            e.to_string(),
            "'device /nonexistent/dev unmap' destroys data on /nonexistent/dev; add --yes to confirm"
        );
    }

    #[test]
    fn a_regular_file_is_not_a_device_node() {
        let f = std::env::temp_dir().join(format!("drivelab-pt-notdev-{}", std::process::id()));
        std::fs::write(&f, b"x").unwrap();
        let e = WriteConsent {
            yes: true,
            force: true,
        }
        .claim(&f, "unmap")
        .unwrap_err();
        let _ = std::fs::remove_file(&f);
        assert!(matches!(e, OpError::NotADevice(_)), "{e}");
        assert!(e.is_input());
    }
}
