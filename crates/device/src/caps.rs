//! Which erase and write commands a device supports, found by asking it.
//!
//! `drivelab erase` picks the fastest method each drive supports; that needs
//! facts, not guesses from the device name. [`probe`] asks the device itself
//! (SCSI: INQUIRY, VPD B0h/B1h/B2h, READ CAPACITY(16), REPORT SUPPORTED
//! OPERATION CODES; ATA behind a SATL: IDENTIFY DEVICE over ATA
//! PASS-THROUGH; NVMe: Identify Controller and Namespace) and reads the
//! kernel's own limits from `/sys/block/X/queue` (write_zeroes_max_bytes,
//! discard_max_bytes). A device that answers no passthrough at all (loop,
//! zram, md) is transport `other` with only the sysfs facts; that is not an
//! error. Probing only reads: it never sends a command that writes.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::ata::{self, IdentifyDevice};
use crate::nvme::{self, IdentifyController, IdentifyNamespace, NvmeDevice, NvmeError};
use crate::scsi::sg::{SgDevice, SgError};
use crate::scsi::{
    self, BlockLimits, Capacity, LogicalBlockProvisioning, OpcodeSupport, StandardInquiry,
};

/// How commands reach the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// A SCSI device (SAS, virtio-scsi, USB mass storage without SAT, scsi_debug).
    Scsi,
    /// An ATA device behind a SCSI-to-ATA translation layer (libata, USB-SATA).
    AtaViaSat,
    /// An NVMe namespace or controller.
    Nvme,
    /// Neither answers passthrough (loop, zram, md, dm, virtio-blk).
    Other,
}

/// Who the device says it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// SCSI vendor (INQUIRY); "ATA" for SATA disks behind libata.
    pub vendor: Option<String>,
    /// Model / product.
    pub model: Option<String>,
    /// Serial number (VPD 80h, IDENTIFY words 10-19, or Identify Controller SN).
    pub serial: Option<String>,
    /// Firmware / product revision.
    pub firmware: Option<String>,
}

/// Limits the kernel publishes for the device, read from sysfs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SysfsFacts {
    /// Kernel name of the whole disk (sda, nvme0n1, loop3).
    pub disk: String,
    /// Kernel name of the partition, when the path is one.
    pub partition: Option<String>,
    /// queue/write_zeroes_max_bytes: > 0 when BLKZEROOUT is offloaded.
    pub write_zeroes_max_bytes: Option<u64>,
    /// queue/discard_max_bytes: > 0 when discard works.
    pub discard_max_bytes: Option<u64>,
    /// queue/discard_granularity, bytes.
    pub discard_granularity: Option<u64>,
    /// queue/logical_block_size, bytes.
    pub logical_block_size: Option<u32>,
    /// queue/physical_block_size, bytes.
    pub physical_block_size: Option<u32>,
    /// queue/rotational.
    pub rotational: Option<bool>,
    /// queue/max_hw_sectors_kb: largest single request, KiB.
    pub max_hw_sectors_kb: Option<u64>,
    /// queue/max_segments: most memory segments in one request.
    pub max_segments: Option<u64>,
    /// size (in 512-byte sectors) x 512.
    pub size_bytes: Option<u64>,
}

/// Sanitize operations an ATA device supports (IDENTIFY word 59).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AtaSanitizeCaps {
    /// OVERWRITE EXT.
    pub overwrite: bool,
    /// CRYPTO SCRAMBLE EXT.
    pub crypto: bool,
    /// BLOCK ERASE EXT.
    pub block: bool,
}

/// NVMe Format NVM support (OACS bit 1, FNA).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NvmeFormatCaps {
    /// Format NVM is supported.
    pub supported: bool,
    /// Cryptographic erase (SES 2) is supported.
    pub crypto_erase: bool,
    /// A format applies to all namespaces (FNA bit 0).
    pub all_namespaces: bool,
    /// A secure erase (SES 1 or 2) applies to all namespaces (FNA bit 1).
    pub secure_erase_all_namespaces: bool,
}

/// NVMe Sanitize support (SANICAP).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct NvmeSanitizeCaps {
    /// Crypto erase.
    pub crypto: bool,
    /// Block erase.
    pub block: bool,
    /// Overwrite.
    pub overwrite: bool,
}

/// What the device answered to SCSI probing (for JSON and the curious).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ScsiDetail {
    /// Standard INQUIRY.
    pub inquiry: Option<StandardInquiry>,
    /// Supported VPD pages (VPD 00h).
    pub vpd_pages: Vec<u8>,
    /// VPD B0h.
    pub block_limits: Option<BlockLimits>,
    /// VPD B2h.
    pub provisioning: Option<LogicalBlockProvisioning>,
    /// VPD B1h rotation rate (1 = solid state).
    pub rotation_rate: Option<u16>,
    /// READ CAPACITY answer.
    pub capacity: Option<Capacity>,
    /// REPORT SUPPORTED OPERATION CODES answers for WRITE SAME(16), (10), UNMAP.
    pub opcodes: Vec<(u8, OpcodeSupport)>,
}

/// Everything [`probe`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// The path probed.
    pub path: PathBuf,
    /// How commands reach it.
    pub transport: Transport,
    /// Identity from the device's answer.
    pub identity: Identity,
    /// Logical block size in bytes (device answer, else sysfs).
    pub logical_block_size: Option<u32>,
    /// Physical block size in bytes.
    pub physical_block_size: Option<u32>,
    /// Capacity in logical blocks (device answer, else sysfs).
    pub capacity_blocks: Option<u64>,

    /// SCSI WRITE SAME(16) with a data block is usable (see `scsi_write_same_basis`).
    pub scsi_write_same_16: bool,
    /// SCSI WRITE SAME(10) is usable.
    pub scsi_write_same_10: bool,
    /// How the WRITE SAME answers were reached: "report-supported-opcodes"
    /// (the device said so), "advertised" (VPD B0h/B2h or the kernel's
    /// write-zeroes limit; not proven until tried), or "none".
    pub scsi_write_same_basis: String,
    /// MAXIMUM WRITE SAME LENGTH (VPD B0h), blocks; `None` = not reported.
    pub max_write_same_blocks: Option<u64>,
    /// SCSI UNMAP is usable (LBPME and LBPU or REPORT SUPPORTED OPERATION CODES).
    pub scsi_unmap: bool,
    /// MAXIMUM UNMAP LBA COUNT (VPD B0h), blocks.
    pub max_unmap_blocks: Option<u64>,
    /// MAXIMUM TRANSFER LENGTH (VPD B0h), blocks.
    pub max_transfer_blocks: Option<u64>,
    /// Unmapped / deallocated / trimmed blocks read back as zeroes
    /// (SCSI LBPRZ, ATA RZAT, NVMe DLFEAT = zeroes).
    pub reads_zero_after_unmap: bool,

    /// ATA SCT Write Same is supported (IDENTIFY word 206 bits 0 and 2).
    pub ata_sct_write_same: bool,
    /// ATA SANITIZE subcommands supported.
    pub ata_sanitize: AtaSanitizeCaps,
    /// SCSI SANITIZE service actions the device reports supported (REPORT
    /// SUPPORTED OPERATION CODES); all false when it could not say.
    pub scsi_sanitize: scsi::sanitize::SanitizeSupport,
    /// ATA SECURITY ERASE UNIT is available (supported, not frozen, not locked).
    pub ata_security_erase: bool,
    /// ATA security is frozen (a BIOS froze it; erase needs a power cycle/hotplug).
    pub ata_security_frozen: bool,
    /// ATA DATA SET MANAGEMENT TRIM supported.
    pub ata_trim: bool,

    /// NVMe namespace ID of the device, when a namespace.
    pub nvme_nsid: Option<u32>,
    /// NVMe Write Zeroes supported (ONCS bit 3).
    pub nvme_write_zeroes: bool,
    /// Write Zeroes may deallocate (DLFEAT bit 3).
    pub nvme_write_zeroes_deac: bool,
    /// NVMe Dataset Management supported (ONCS bit 2).
    pub nvme_dsm: bool,
    /// NVMe Format NVM.
    pub nvme_format: NvmeFormatCaps,
    /// NVMe Sanitize.
    pub nvme_sanitize: NvmeSanitizeCaps,
    /// Largest NVMe transfer in bytes (from MDTS, assuming 4 KiB minimum
    /// page size); `None` = no limit reported.
    pub nvme_max_transfer_bytes: Option<u64>,

    /// BLKZEROOUT is offloaded to the device (write_zeroes_max_bytes > 0).
    pub blk_zeroout_offload: bool,
    /// Discard works (discard_max_bytes > 0).
    pub discard: bool,
    /// The sysfs facts.
    pub sysfs: Option<SysfsFacts>,

    /// SCSI answers, when SCSI was probed.
    pub scsi: Option<ScsiDetail>,
    /// ATA IDENTIFY DEVICE, when ATA.
    pub ata_identify: Option<IdentifyDevice>,
    /// NVMe Identify Controller, when NVMe.
    pub nvme_controller: Option<IdentifyController>,
    /// NVMe Identify Namespace, when an NVMe namespace.
    pub nvme_namespace: Option<IdentifyNamespace>,
    /// The controller's active namespaces other than this one (Identify
    /// CNS 02h), when NVMe and the list could be read: the block devices
    /// a Sanitize (and a Format where FNA says so) erases too.
    pub nvme_other_namespaces: Option<Vec<u32>>,
    /// What was tried and refused, one line each (e.g. "ATA PASS-THROUGH
    /// not supported by this device (...)").
    pub notes: Vec<String>,
}

/// Probe failures: only when the device cannot be asked at all.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The path cannot be opened or stat'ed.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Not a block or character device.
    #[error(
        "{path} is not a device node; give a block device (/dev/sdX, /dev/nvmeXnY) or /dev/sgN"
    )]
    NotADevice {
        /// The path.
        path: PathBuf,
    },
    /// Passthrough was refused: it needs root, or (for root) the kernel or a
    /// security policy refuses it on this node.
    #[error("permission denied probing {path}{}", if crate::block::blockdev::running_as_root() { " (refused even to root: a partition, or a security policy such as lockdown)" } else { ": run as root" })]
    Permission {
        /// The path.
        path: PathBuf,
    },
}

impl Capabilities {
    fn empty(path: &Path) -> Self {
        Capabilities {
            path: path.to_path_buf(),
            transport: Transport::Other,
            identity: Identity::default(),
            logical_block_size: None,
            physical_block_size: None,
            capacity_blocks: None,
            scsi_write_same_16: false,
            scsi_write_same_10: false,
            scsi_write_same_basis: "none".into(),
            max_write_same_blocks: None,
            scsi_unmap: false,
            max_unmap_blocks: None,
            max_transfer_blocks: None,
            reads_zero_after_unmap: false,
            ata_sct_write_same: false,
            ata_sanitize: AtaSanitizeCaps::default(),
            scsi_sanitize: scsi::sanitize::SanitizeSupport::default(),
            ata_security_erase: false,
            ata_security_frozen: false,
            ata_trim: false,
            nvme_nsid: None,
            nvme_write_zeroes: false,
            nvme_write_zeroes_deac: false,
            nvme_dsm: false,
            nvme_format: NvmeFormatCaps::default(),
            nvme_sanitize: NvmeSanitizeCaps::default(),
            nvme_max_transfer_bytes: None,
            blk_zeroout_offload: false,
            discard: false,
            sysfs: None,
            scsi: None,
            ata_identify: None,
            nvme_controller: None,
            nvme_namespace: None,
            nvme_other_namespaces: None,
            notes: Vec::new(),
        }
    }
}

impl SysfsFacts {
    /// The largest passthrough transfer (bytes) that the kernel can map from
    /// an ordinary (page-aligned or not) user buffer in one command: the
    /// smaller of max_hw_sectors_kb and (max_segments - 1) pages, the page
    /// taken as 4 KiB; `None` when sysfs gives neither.
    pub fn passthrough_transfer_limit(&self) -> Option<u64> {
        let a = self.max_hw_sectors_kb.map(|k| k * 1024);
        let b = self.max_segments.map(|n| n.saturating_sub(1).max(1) * 4096);
        match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}
fn read_u64(p: &Path) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

/// The sysfs facts for a block device node (by its device number, so
/// symlinks like /dev/disk/by-id work). `None` for character devices or
/// when sysfs lacks the device.
pub fn sysfs_facts(path: &Path) -> Option<SysfsFacts> {
    let md = std::fs::metadata(path).ok()?;
    if !md.file_type().is_block_device() {
        return None;
    }
    let rdev = md.rdev();
    let (maj, min) = (libc::major(rdev), libc::minor(rdev));
    let dir = std::fs::canonicalize(format!("/sys/dev/block/{maj}:{min}")).ok()?;
    let name = dir.file_name()?.to_string_lossy().into_owned();
    let (disk_dir, disk, partition) = if dir.join("partition").exists() {
        let parent = dir.parent()?.to_path_buf();
        let disk = parent.file_name()?.to_string_lossy().into_owned();
        (parent, disk, Some(name))
    } else {
        (dir.clone(), name, None)
    };
    let q = disk_dir.join("queue");
    Some(SysfsFacts {
        disk,
        partition,
        write_zeroes_max_bytes: read_u64(&q.join("write_zeroes_max_bytes")),
        discard_max_bytes: read_u64(&q.join("discard_max_bytes")),
        discard_granularity: read_u64(&q.join("discard_granularity")),
        logical_block_size: read_u64(&q.join("logical_block_size"))
            .and_then(|v| u32::try_from(v).ok()),
        physical_block_size: read_u64(&q.join("physical_block_size"))
            .and_then(|v| u32::try_from(v).ok()),
        rotational: read_u64(&q.join("rotational")).map(|v| v != 0),
        max_hw_sectors_kb: read_u64(&q.join("max_hw_sectors_kb")),
        max_segments: read_u64(&q.join("max_segments")),
        size_bytes: read_u64(&dir.join("size")).map(|s| s * 512),
    })
}

/// Ask the device at `path` what it supports. Only reads; never writes.
pub fn probe(path: impl AsRef<Path>) -> Result<Capabilities, ProbeError> {
    let path = path.as_ref();
    let md = std::fs::metadata(path).map_err(|e| ProbeError::Open {
        path: path.to_path_buf(),
        source: e,
    })?;
    let ft = md.file_type();
    if !ft.is_block_device() && !ft.is_char_device() {
        return Err(ProbeError::NotADevice {
            path: path.to_path_buf(),
        });
    }
    let mut c = Capabilities::empty(path);
    c.sysfs = sysfs_facts(path);
    if let Some(s) = &c.sysfs {
        c.blk_zeroout_offload = s.write_zeroes_max_bytes.unwrap_or(0) > 0;
        c.discard = s.discard_max_bytes.unwrap_or(0) > 0;
        c.logical_block_size = s.logical_block_size;
        c.physical_block_size = s.physical_block_size;
        if let (Some(sz), Some(lb)) = (s.size_bytes, s.logical_block_size) {
            if lb > 0 {
                c.capacity_blocks = Some(sz / u64::from(lb));
            }
        }
    }

    let name_is_nvme = path
        .file_name()
        .map(|n| n.to_string_lossy().starts_with("nvme"))
        .unwrap_or(false)
        || c.sysfs
            .as_ref()
            .map(|s| s.disk.starts_with("nvme"))
            .unwrap_or(false);
    if ft.is_block_device() || name_is_nvme {
        match NvmeDevice::open(path) {
            Ok(dev) if dev.nsid().is_some() || (ft.is_char_device() && name_is_nvme) => {
                probe_nvme(&dev, &mut c);
                return Ok(c);
            }
            Ok(_) => {}
            Err(NvmeError::Permission { .. }) => {
                return Err(ProbeError::Permission {
                    path: path.to_path_buf(),
                })
            }
            Err(NvmeError::Open { source, .. }) => {
                return Err(ProbeError::Open {
                    path: path.to_path_buf(),
                    source,
                })
            }
            Err(_) => {}
        }
    }

    let dev = match SgDevice::open(path) {
        Ok(d) => d,
        Err(SgError::Permission { .. }) => {
            return Err(ProbeError::Permission {
                path: path.to_path_buf(),
            })
        }
        Err(SgError::Open { source, .. }) => {
            return Err(ProbeError::Open {
                path: path.to_path_buf(),
                source,
            })
        }
        Err(e) => {
            c.notes.push(e.to_string());
            return Ok(c);
        }
    };
    let inq = match scsi::inquiry(&dev) {
        Ok(i) => i,
        Err(SgError::Permission { .. }) => {
            return Err(ProbeError::Permission {
                path: path.to_path_buf(),
            })
        }
        Err(e) => {
            c.notes.push(e.to_string());
            return Ok(c);
        }
    };
    c.identity = Identity {
        vendor: Some(inq.vendor.clone()),
        model: Some(inq.product.clone()),
        serial: None,
        firmware: Some(inq.revision.clone()),
    };
    let mut detail = ScsiDetail {
        inquiry: Some(inq),
        ..Default::default()
    };
    match scsi::read_capacity(&dev) {
        Ok(cap) => {
            c.capacity_blocks = Some(cap.blocks().0);
            c.logical_block_size = Some(cap.block_length);
            c.physical_block_size = u32::try_from(cap.physical_block_length()).ok();
            detail.capacity = Some(cap);
        }
        Err(e) => c.notes.push(e.to_string()),
    }

    match ata::identify_device(&dev) {
        Ok(id) => {
            c.transport = Transport::AtaViaSat;
            apply_ata(&id, &mut c);
            c.ata_identify = Some(id);
            c.notes.push(
                "ATA disk behind a SATL: SCSI WRITE SAME/UNMAP are translated (if at all) only as TRIM; whole-drive pattern writes use SCT Write Same"
                    .into(),
            );
            c.scsi = Some(detail);
            return Ok(c);
        }
        Err(e) => c.notes.push(e.to_string()),
    }

    c.transport = Transport::Scsi;
    probe_scsi(&dev, &mut c, &mut detail);
    c.scsi = Some(detail);
    Ok(c)
}

fn apply_ata(id: &IdentifyDevice, c: &mut Capabilities) {
    c.identity.model = Some(id.model.clone());
    c.identity.serial = Some(id.serial.clone());
    c.identity.firmware = Some(id.firmware.clone());
    if id.capacity_sectors > 0 {
        c.capacity_blocks = Some(id.capacity_sectors);
    }
    c.logical_block_size = Some(id.logical_sector_size);
    c.physical_block_size = Some(id.physical_sector_size);
    c.ata_sct_write_same = id.sct_write_same;
    c.ata_sanitize = AtaSanitizeCaps {
        overwrite: id.sanitize && id.sanitize_overwrite,
        crypto: id.sanitize && id.sanitize_crypto,
        block: id.sanitize && id.sanitize_block_erase,
    };
    c.ata_security_frozen = id.security_frozen;
    c.ata_security_erase = id.security_supported && !id.security_frozen && !id.security_locked;
    c.ata_trim = id.trim;
    c.reads_zero_after_unmap = id.trim && id.trim_deterministic && id.trim_reads_zero;
}

fn probe_scsi(dev: &SgDevice, c: &mut Capabilities, d: &mut ScsiDetail) {
    match scsi::vpd(dev, 0x00).map(|p| scsi::parse_supported_vpd_pages(&p)) {
        Ok(Some(pages)) => d.vpd_pages = pages,
        Ok(None) => {}
        Err(e) => c.notes.push(e.to_string()),
    }
    let has = |p: u8| d.vpd_pages.contains(&p);
    if has(0x80) {
        if let Ok(Some(s)) = scsi::vpd(dev, 0x80).map(|p| scsi::parse_unit_serial(&p)) {
            c.identity.serial = Some(s);
        }
    }
    if has(0xB0) {
        match scsi::vpd(dev, 0xB0) {
            Ok(p) => d.block_limits = BlockLimits::parse(&p),
            Err(e) => c.notes.push(e.to_string()),
        }
    }
    if has(0xB1) {
        if let Ok(p) = scsi::vpd(dev, 0xB1) {
            d.rotation_rate = scsi::BlockCharacteristics::parse(&p).map(|b| b.rotation_rate);
        }
    }
    if has(0xB2) {
        match scsi::vpd(dev, 0xB2) {
            Ok(p) => d.provisioning = LogicalBlockProvisioning::parse(&p),
            Err(e) => c.notes.push(e.to_string()),
        }
    }
    let mut rsoc_ok = true;
    for op in [
        scsi::opcode::WRITE_SAME_16,
        scsi::opcode::WRITE_SAME_10,
        scsi::opcode::UNMAP,
    ] {
        match scsi::report_opcode(dev, op, None) {
            Ok(s) => d.opcodes.push((op, s)),
            Err(e) => {
                c.notes.push(e.to_string());
                rsoc_ok = false;
                break;
            }
        }
    }
    if rsoc_ok {
        match scsi::sanitize::sanitize_support(dev) {
            Ok(s) => c.scsi_sanitize = s,
            Err(e) if e.is_not_supported() => {}
            Err(e) => c.notes.push(e.to_string()),
        }
    }
    let rsoc = |op: u8| {
        d.opcodes
            .iter()
            .find(|(o, _)| *o == op)
            .map(|(_, s)| *s)
            .filter(|s| *s != OpcodeSupport::NotAvailable)
    };
    let bl = d.block_limits.clone().unwrap_or_default();
    let lbp = d.provisioning.clone();
    let lbpme = d.capacity.as_ref().map(|k| k.lbpme).unwrap_or(false);
    if let Some(b) = &d.block_limits {
        c.max_write_same_blocks = (b.max_write_same_length > 0).then_some(b.max_write_same_length);
        c.max_unmap_blocks =
            (b.max_unmap_lba_count > 0).then_some(u64::from(b.max_unmap_lba_count));
        c.max_transfer_blocks =
            (b.max_transfer_length > 0).then_some(u64::from(b.max_transfer_length));
    }
    match (
        rsoc_ok,
        rsoc(scsi::opcode::WRITE_SAME_16),
        rsoc(scsi::opcode::WRITE_SAME_10),
    ) {
        (true, Some(s16), Some(s10)) => {
            c.scsi_write_same_16 = s16.is_supported();
            c.scsi_write_same_10 = s10.is_supported();
            c.scsi_write_same_basis = "report-supported-opcodes".into();
        }
        _ => {
            let advertised = bl.max_write_same_length > 0 || c.blk_zeroout_offload;
            c.scsi_write_same_16 = advertised || lbp.as_ref().map(|p| p.lbpws).unwrap_or(false);
            c.scsi_write_same_10 = advertised || lbp.as_ref().map(|p| p.lbpws10).unwrap_or(false);
            c.scsi_write_same_basis = if c.scsi_write_same_16 || c.scsi_write_same_10 {
                "advertised".into()
            } else {
                "none".into()
            };
        }
    }
    let unmap_said = match rsoc(scsi::opcode::UNMAP) {
        Some(s) => s.is_supported(),
        None => lbp.as_ref().map(|p| p.lbpu).unwrap_or(false),
    };
    c.scsi_unmap = lbpme && unmap_said;
    c.reads_zero_after_unmap = d.capacity.as_ref().map(|k| k.lbprz).unwrap_or(false)
        || lbp.as_ref().map(|p| p.lbprz != 0).unwrap_or(false);
}

fn probe_nvme(dev: &NvmeDevice, c: &mut Capabilities) {
    c.transport = Transport::Nvme;
    c.nvme_nsid = dev.nsid();
    match nvme::identify_controller(dev) {
        Ok(id) => {
            c.identity = Identity {
                vendor: Some(format!("0x{:04x}", id.vid)),
                model: Some(id.model.clone()),
                serial: Some(id.serial.clone()),
                firmware: Some(id.firmware.clone()),
            };
            c.nvme_write_zeroes = id.write_zeroes;
            c.nvme_dsm = id.dsm;
            c.nvme_format = NvmeFormatCaps {
                supported: id.format_supported,
                crypto_erase: id.format_supported && id.crypto_erase,
                all_namespaces: id.format_all_namespaces,
                secure_erase_all_namespaces: id.secure_erase_all_namespaces,
            };
            c.nvme_sanitize = NvmeSanitizeCaps {
                crypto: id.sanitize_crypto,
                block: id.sanitize_block,
                overwrite: id.sanitize_overwrite,
            };
            c.nvme_max_transfer_bytes = (id.mdts > 0 && id.mdts < 52).then(|| 4096u64 << id.mdts);
            c.nvme_controller = Some(id);
        }
        Err(e) => c.notes.push(e.to_string()),
    }
    match nvme::active_namespaces(dev) {
        Ok(list) => {
            c.nvme_other_namespaces = Some(
                list.into_iter()
                    .filter(|&n| Some(n) != dev.nsid())
                    .collect(),
            )
        }
        Err(e) => c.notes.push(format!("active namespace list: {e}")),
    }
    if let Some(nsid) = dev.nsid() {
        match nvme::identify_namespace(dev, nsid) {
            Ok(ns) => {
                c.capacity_blocks = Some(ns.nsze);
                if ns.block_size > 0 {
                    c.logical_block_size = Some(ns.block_size);
                }
                c.nvme_write_zeroes_deac = ns.write_zeroes_deac;
                c.reads_zero_after_unmap = ns.deallocate_reads == "zeroes";
                c.nvme_namespace = Some(ns);
            }
            Err(e) => c.notes.push(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_limit_is_the_tighter_of_size_and_segments() {
        let mut f = SysfsFacts {
            max_hw_sectors_kb: Some(512),
            max_segments: Some(128),
            ..Default::default()
        };
        // 512 KiB vs 127 pages (508 KiB).
        assert_eq!(f.passthrough_transfer_limit(), Some(127 * 4096));
        f.max_segments = Some(1024);
        assert_eq!(f.passthrough_transfer_limit(), Some(512 * 1024));
        f.max_hw_sectors_kb = None;
        assert_eq!(f.passthrough_transfer_limit(), Some(1023 * 4096));
        f.max_segments = None;
        assert_eq!(f.passthrough_transfer_limit(), None);
    }

    #[test]
    fn a_regular_file_is_not_a_device() {
        let p = std::env::temp_dir().join(format!("drivelab-caps-{}", std::process::id()));
        std::fs::write(&p, b"x").unwrap();
        let e = probe(&p).unwrap_err();
        assert!(matches!(e, ProbeError::NotADevice { .. }));
        std::fs::remove_file(&p).unwrap();
        assert!(matches!(
            probe("/nonexistent/dev").unwrap_err(),
            ProbeError::Open { .. }
        ));
    }

    #[test]
    fn ata_identity_maps_to_capabilities() {
        let mut d = vec![0u8; 512];
        // word 59: sanitize + block erase only; word 82: security; word 128: supported;
        // word 169: TRIM; word 206: SCT + Write Same.
        fn put_w(d: &mut [u8], w: usize, v: u16) {
            d[w * 2..w * 2 + 2].copy_from_slice(&v.to_le_bytes());
        }
        put_w(&mut d, 59, (1 << 12) | (1 << 15));
        put_w(&mut d, 82, 1 << 1);
        put_w(&mut d, 128, 1);
        put_w(&mut d, 169, 1);
        put_w(&mut d, 206, 0x5);
        put_w(&mut d, 60, 1000);
        let id = IdentifyDevice::parse(&d).unwrap();
        let mut c = Capabilities::empty(Path::new("/dev/null"));
        apply_ata(&id, &mut c);
        assert!(c.ata_sct_write_same && c.ata_trim && c.ata_security_erase);
        assert_eq!(
            c.ata_sanitize,
            AtaSanitizeCaps {
                overwrite: false,
                crypto: false,
                block: true
            }
        );
        assert_eq!(c.capacity_blocks, Some(1000));
        // Frozen security is not usable.
        put_w(&mut d, 128, 1 | 8);
        let id = IdentifyDevice::parse(&d).unwrap();
        apply_ata(&id, &mut c);
        assert!(!c.ata_security_erase && c.ata_security_frozen);
    }
}
