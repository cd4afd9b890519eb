//! Questions that change nothing on the device: which commands it supports,
//! INQUIRY and its VPD pages, READ CAPACITY, IDENTIFY (ATA over SAT or
//! NVMe), the SCT status.

use std::path::Path;

use serde::Serialize;

use super::common::{open_sg, OpError, SHORT_TIMEOUT_MS};
use super::failure::Failure;
use crate::ata::{self, IdentifyDevice, SctStatus};
use crate::caps::{self, Capabilities};
use crate::nvme::{self, IdentifyController, IdentifyNamespace, NvmeDevice, NvmeError};
use crate::scsi::{self, Capacity, StandardInquiry};

/// What `probe` found: the commands the device says it supports.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// The capabilities, as answered by the device.
    pub capabilities: Capabilities,
}

/// Ask the device which erase/write commands it supports (reads only).
pub fn probe(dev: &Path) -> Result<Probe, OpError> {
    let capabilities = caps::probe(dev).map_err(|e| Failure::line(e.to_string()))?;
    Ok(Probe { capabilities })
}

/// An INQUIRY answer: the standard data, or one VPD page.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Inquiry {
    /// Standard INQUIRY data.
    Standard {
        /// The decoded data.
        inquiry: StandardInquiry,
    },
    /// A VPD page.
    Vpd(VpdPage),
}

/// One VPD page: raw bytes, and decoded when drivelab knows the page.
#[derive(Debug, Clone, Serialize)]
pub struct VpdPage {
    /// Page code.
    pub page: u8,
    /// The page as the device returned it, in hex.
    pub raw_hex: String,
    /// Length of the page, bytes.
    #[serde(skip)]
    pub raw_len: usize,
    /// The decoded page (`null` when the bytes do not parse).
    #[serde(flatten)]
    pub decoded: VpdDecoded,
}

/// The decoded pages; each serialises as one field named for its content.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum VpdDecoded {
    /// 00h Supported VPD Pages.
    SupportedPages {
        /// Page codes the device lists.
        supported_pages: Option<Vec<u8>>,
    },
    /// 80h Unit Serial Number.
    UnitSerial {
        /// The serial.
        serial: Option<String>,
    },
    /// 83h Device Identification.
    DeviceIdentification {
        /// The designators.
        designators: Option<Vec<scsi::Designator>>,
    },
    /// B0h Block Limits.
    BlockLimits {
        /// The limits.
        block_limits: Option<scsi::BlockLimits>,
    },
    /// B1h Block Device Characteristics.
    BlockCharacteristics {
        /// The characteristics.
        block_characteristics: Option<scsi::BlockCharacteristics>,
    },
    /// B2h Logical Block Provisioning.
    Provisioning {
        /// The provisioning data.
        provisioning: Option<scsi::LogicalBlockProvisioning>,
    },
    /// A page drivelab does not decode.
    Undecoded {},
}

impl VpdDecoded {
    fn parse(page: u8, raw: &[u8]) -> VpdDecoded {
        match page {
            0x00 => VpdDecoded::SupportedPages {
                supported_pages: scsi::parse_supported_vpd_pages(raw),
            },
            0x80 => VpdDecoded::UnitSerial {
                serial: scsi::parse_unit_serial(raw),
            },
            0x83 => VpdDecoded::DeviceIdentification {
                designators: scsi::parse_device_identification(raw),
            },
            0xB0 => VpdDecoded::BlockLimits {
                block_limits: scsi::BlockLimits::parse(raw),
            },
            0xB1 => VpdDecoded::BlockCharacteristics {
                block_characteristics: scsi::BlockCharacteristics::parse(raw),
            },
            0xB2 => VpdDecoded::Provisioning {
                provisioning: scsi::LogicalBlockProvisioning::parse(raw),
            },
            _ => VpdDecoded::Undecoded {},
        }
    }
}

/// SCSI INQUIRY: the standard data, or VPD page `page`.
pub fn inquiry(dev: &Path, page: Option<u8>, timeout_ms: Option<u32>) -> Result<Inquiry, OpError> {
    let d = open_sg(dev, timeout_ms.unwrap_or(SHORT_TIMEOUT_MS), false)?;
    match page {
        None => Ok(Inquiry::Standard {
            inquiry: scsi::inquiry(&d)?,
        }),
        Some(p) => {
            let raw = scsi::vpd(&d, p)?;
            Ok(Inquiry::Vpd(VpdPage {
                page: p,
                raw_hex: raw.iter().map(|b| format!("{b:02x}")).collect(),
                raw_len: raw.len(),
                decoded: VpdDecoded::parse(p, &raw),
            }))
        }
    }
}

/// A READ CAPACITY answer.
#[derive(Debug, Clone, Serialize)]
pub struct ReadCapacity {
    /// The decoded data.
    pub capacity: Capacity,
    /// Logical blocks (last LBA + 1).
    pub blocks: u64,
}

/// SCSI READ CAPACITY(16), falling back to (10).
pub fn read_capacity(dev: &Path, timeout_ms: Option<u32>) -> Result<ReadCapacity, OpError> {
    let d = open_sg(dev, timeout_ms.unwrap_or(SHORT_TIMEOUT_MS), false)?;
    let capacity = scsi::read_capacity(&d)?;
    Ok(ReadCapacity {
        blocks: capacity.blocks().0,
        capacity,
    })
}

/// An IDENTIFY answer; `transport` says which command answered.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "transport")]
pub enum Identify {
    /// NVMe Identify Controller, and Namespace when `dev` is a namespace.
    #[serde(rename = "nvme")]
    Nvme {
        /// Identify Controller.
        controller: Box<IdentifyController>,
        /// Identify Namespace (`null` on the controller device).
        namespace: Option<Box<IdentifyNamespace>>,
    },
    /// ATA IDENTIFY DEVICE through the SCSI-to-ATA translation layer.
    #[serde(rename = "ata-via-sat")]
    Ata {
        /// The decoded data.
        identify: Box<IdentifyDevice>,
    },
}

/// NVMe Identify Controller (+ Namespace) on an NVMe device, else ATA
/// IDENTIFY DEVICE over SAT.
pub fn identify(dev: &Path, timeout_ms: Option<u32>) -> Result<Identify, OpError> {
    if let Some(d) = nvme_device(dev)? {
        let controller = Box::new(nvme::identify_controller(&d)?);
        let namespace = match d.nsid() {
            Some(n) => Some(Box::new(nvme::identify_namespace(&d, n)?)),
            None => None,
        };
        return Ok(Identify::Nvme {
            controller,
            namespace,
        });
    }
    let d = open_sg(dev, timeout_ms.unwrap_or(SHORT_TIMEOUT_MS), false)?;
    Ok(Identify::Ata {
        identify: Box::new(ata::identify_device(&d)?),
    })
}

/// `dev` opened as NVMe when it is a namespace or an NVMe controller's
/// character device; `None` when it is something else. A permission error
/// is the answer: the device is NVMe but the process may not ask it.
fn nvme_device(dev: &Path) -> Result<Option<NvmeDevice>, OpError> {
    use std::os::unix::fs::FileTypeExt;
    match NvmeDevice::open(dev) {
        Ok(d) => {
            let char_nvme = std::fs::metadata(dev)
                .map(|m| m.file_type().is_char_device())
                .unwrap_or(false)
                && dev
                    .file_name()
                    .map(|n| n.to_string_lossy().starts_with("nvme"))
                    .unwrap_or(false);
            Ok((d.nsid().is_some() || char_nvme).then_some(d))
        }
        Err(e @ NvmeError::Permission { .. }) => Err(e.into()),
        Err(_) => Ok(None),
    }
}

/// The ATA SCT status.
#[derive(Debug, Clone, Serialize)]
pub struct SctStatusAnswer {
    /// The decoded SCT status (SMART READ LOG E0h).
    pub sct_status: SctStatus,
}

/// ATA SCT status (SMART READ LOG E0h).
pub fn sct_status(dev: &Path, timeout_ms: Option<u32>) -> Result<SctStatusAnswer, OpError> {
    let d = open_sg(dev, timeout_ms.unwrap_or(SHORT_TIMEOUT_MS), false)?;
    Ok(SctStatusAnswer {
        sct_status: ata::sct_status(&d)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn vpd_pages_serialise_as_one_named_field_beside_page_and_raw() {
        let raw = [0x00, 0x80, 0x00, 0x04, b'S', b'N', b'0', b'1'];
        let v = serde_json::to_value(VpdPage {
            page: 0x80,
            raw_hex: "0080000453 4e3031".into(),
            raw_len: raw.len(),
            decoded: VpdDecoded::parse(0x80, &raw),
        })
        .unwrap();
        assert_eq!(
            v,
            json!({ "page": 0x80, "raw_hex": "0080000453 4e3031", "serial": "SN01" })
        );
        let v = serde_json::to_value(VpdPage {
            page: 0xC0,
            raw_hex: String::new(),
            raw_len: 0,
            decoded: VpdDecoded::parse(0xC0, &[]),
        })
        .unwrap();
        assert_eq!(v, json!({ "page": 0xC0, "raw_hex": "" }));
        // A known page that does not parse is null, not missing.
        let v = serde_json::to_value(VpdDecoded::parse(0xB0, &[])).unwrap();
        assert_eq!(v, json!({ "block_limits": null }));
    }
}
