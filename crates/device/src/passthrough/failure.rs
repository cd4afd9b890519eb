//! A failed device command as the user sees it: one line, and what the
//! device said, decoded, for the JSON document.

use serde::Serialize;

use crate::ata::{self, AtaError, AtaRegisters, SctStatus};
use crate::nvme::{IdentifyNamespace, NvmeError, NvmeStatus};
use crate::scsi::sg::SgError;
use crate::scsi::{Capacity, Sense};

/// A device command that failed. `Display` is the one line (it usually
/// names the device); the serialised fields are the decoded answer, each
/// present only when the failure has it.
#[derive(Debug, Clone, Default, Serialize, thiserror::Error)]
#[error("{line}")]
pub struct Failure {
    /// The one line.
    #[serde(skip)]
    pub line: String,
    /// Whether the device (or its transport) does not support the command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_supported: Option<bool>,
    /// The decoded SCSI sense.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sense: Option<Sense>,
    /// The first failing LBA of a medium error (from the sense INFORMATION).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_lba: Option<u64>,
    /// SG_IO host status of a transport failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_status: Option<u16>,
    /// SG_IO driver status of a transport failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_status: Option<u16>,
    /// The ATA registers the device returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ata: Option<AtaRegisters>,
    /// The names of the bits set in the ATA error register.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ata_error_bits: Option<Vec<&'static str>>,
    /// The NVMe completion status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvme_status: Option<NvmeStatus>,
    /// The LBA range `[first, end)` of a failed NVMe read or write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_lba_range: Option<[u64; 2]>,
    /// The capacity data, when it is what made the op impossible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
    /// The namespace data, when it is what made the op impossible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<IdentifyNamespace>,
    /// The SCT status of an SCT command that did not finish well.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sct_status: Option<SctStatus>,
}

impl Failure {
    /// A failure that is only a line (a file that cannot be read or written,
    /// an answer that cannot be used).
    pub fn line(line: impl Into<String>) -> Failure {
        Failure {
            line: line.into(),
            ..Failure::default()
        }
    }
}

impl From<SgError> for Failure {
    fn from(e: SgError) -> Self {
        let mut f = Failure::line(e.to_string());
        if let Some(s) = e.sense() {
            if s.is_medium_error() {
                f.failing_lba = s.information;
            }
            f.sense = Some(s.clone());
        }
        if let SgError::Transport {
            host_status,
            driver_status,
            ..
        } = &e
        {
            f.host_status = Some(*host_status);
            f.driver_status = Some(*driver_status);
        }
        f.not_supported = Some(e.is_not_supported());
        f
    }
}

impl From<AtaError> for Failure {
    fn from(e: AtaError) -> Self {
        let not_supported = e.is_not_supported();
        let line = match &e {
            // An ATA abort of an SCT/SANITIZE command is how a drive says "no".
            AtaError::Device { name, regs, .. } if regs.error & 0x04 != 0 => {
                format!(
                    "ATA {name} not supported by this device ({})",
                    regs.describe()
                )
            }
            _ => e.to_string(),
        };
        let mut f = match e {
            AtaError::Scsi(s) => Failure::from(s),
            AtaError::PassThroughUnsupported { sense } => Failure {
                sense: Some(*sense),
                ..Failure::default()
            },
            AtaError::Device { regs, sense, .. } => Failure {
                ata: Some(regs),
                ata_error_bits: Some(ata::error_bits(regs.error)),
                sense: Some(*sense),
                ..Failure::default()
            },
            AtaError::BadData(_) => Failure::default(),
        };
        f.line = line;
        f.not_supported = Some(not_supported);
        f
    }
}

impl From<NvmeError> for Failure {
    fn from(e: NvmeError) -> Self {
        let mut f = Failure::line(e.to_string());
        f.not_supported = Some(e.is_not_supported());
        f.nvme_status = e.status();
        if let NvmeError::Media {
            first_lba, blocks, ..
        } = &e
        {
            f.failing_lba_range = Some([*first_lba, first_lba + blocks]);
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn not_a_scsi_device_is_one_line_and_not_supported() {
        let f = Failure::from(SgError::NotScsi {
            path: PathBuf::from("/dev/loop9"),
            errno: libc::ENOTTY,
            errno_name: "ENOTTY",
        });
        assert!(f.to_string().starts_with("/dev/loop9 is not a SCSI device"));
        assert_eq!(
            serde_json::to_value(&f).unwrap(),
            serde_json::json!({ "not_supported": true })
        );
    }

    #[test]
    fn an_nvme_media_error_carries_its_range() {
        let f = Failure::from(NvmeError::Media {
            command: "Read",
            status: NvmeStatus(0x0281),
            first_lba: 100,
            blocks: 8,
        });
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["failing_lba_range"], serde_json::json!([100, 108]));
        assert_eq!(v["not_supported"], false);
        assert_eq!(v["nvme_status"]["raw"], 0x0281);
        assert!(f.to_string().contains("in LBA 100..108"), "{f}");
    }
}
