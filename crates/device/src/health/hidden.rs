//! Capacity the host cannot see: an ATA Host Protected Area or an ACS-3
//! accessible-max-address limit (native max vs the current max in IDENTIFY
//! words 100-103), a Device Configuration Overlay (DEVICE CONFIGURATION
//! IDENTIFY's maximum LBA vs the native max), and on NVMe the capacity no
//! namespace holds (TNVMCAP vs UNVMCAP) and the other namespaces.
//!
//! Everything here only reads: READ NATIVE MAX ADDRESS (EXT) (F8h / 27h),
//! GET NATIVE MAX ADDRESS EXT (78h feature 0000h), DEVICE CONFIGURATION
//! IDENTIFY (B1h feature C2h), NVMe Identify CNS 00h / 01h / 02h. A drive
//! that aborts one of them is reported as "not supported by this drive" for
//! that method, and the others still run.

use serde::Serialize;

use crate::ata::{
    self, execute, AtaData, AtaError, AtaPassThrough, IdentifyDevice, Protocol, Taskfile,
};
pub use crate::nvme::parse_active_namespaces;
use crate::nvme::{self, NvmeCommand, NvmeData, NvmeDevice, NvmeError};
use crate::scsi::sg::SgDevice;

/// ATA command codes used here (ACS-2 / ACS-3).
pub mod command {
    /// READ NATIVE MAX ADDRESS (28-bit; HPA feature set).
    pub const READ_NATIVE_MAX: u8 = 0xF8;
    /// READ NATIVE MAX ADDRESS EXT (48-bit; HPA feature set).
    pub const READ_NATIVE_MAX_EXT: u8 = 0x27;
    /// ACCESSIBLE MAX ADDRESS CONFIGURATION (ACS-3); feature 0000h = GET
    /// NATIVE MAX ADDRESS EXT, 0001h SET ACCESSIBLE MAX (writes), 0002h
    /// FREEZE ACCESSIBLE MAX (changes state).
    pub const ACCESSIBLE_MAX_ADDRESS_CONFIGURATION: u8 = 0x78;
    /// DEVICE CONFIGURATION OVERLAY (ACS-2; obsolete in ACS-3); feature
    /// C2h = IDENTIFY.
    pub const DEVICE_CONFIGURATION: u8 = 0xB1;
    /// DEVICE CONFIGURATION IDENTIFY feature.
    pub const DCO_IDENTIFY: u16 = 0xC2;
}

/// READ NATIVE MAX ADDRESS EXT: 48-bit non-data, DEVICE bit 6 (LBA); the
/// registers come back with CK_COND.
pub fn read_native_max_ext() -> AtaPassThrough {
    AtaPassThrough::new(
        Protocol::NonData,
        Taskfile::new(command::READ_NATIVE_MAX_EXT).device(0x40),
    )
    .extend(true)
    .byt_blok(false)
    .ck_cond(true)
}

/// READ NATIVE MAX ADDRESS (28-bit): LBA 27:24 come back in DEVICE 3:0.
pub fn read_native_max() -> AtaPassThrough {
    AtaPassThrough::new(
        Protocol::NonData,
        Taskfile::new(command::READ_NATIVE_MAX).device(0x40),
    )
    .byt_blok(false)
    .ck_cond(true)
}

/// GET NATIVE MAX ADDRESS EXT (ACS-3 ACCESSIBLE MAX ADDRESS CONFIGURATION,
/// feature 0000h): 48-bit non-data.
pub fn get_native_max_ext() -> AtaPassThrough {
    AtaPassThrough::new(
        Protocol::NonData,
        Taskfile::new(command::ACCESSIBLE_MAX_ADDRESS_CONFIGURATION)
            .feature(0x0000)
            .device(0x40),
    )
    .extend(true)
    .byt_blok(false)
    .ck_cond(true)
}

/// DEVICE CONFIGURATION IDENTIFY: one 512-byte sector in.
pub fn dco_identify() -> AtaPassThrough {
    AtaPassThrough::new(
        Protocol::PioDataIn,
        Taskfile::new(command::DEVICE_CONFIGURATION)
            .feature(command::DCO_IDENTIFY)
            .count(1)
            .device(0x40),
    )
}

/// The DEVICE CONFIGURATION IDENTIFY data (ACS-2 table "Device
/// Configuration Overlay data structure").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DcoIdentify {
    /// Data structure revision (word 0; 0002h).
    pub revision: u16,
    /// Maximum LBA the overlay allows (words 3-6): the factory native max.
    pub max_lba: u64,
    /// Whether word 255 holds the A5h signature and the checksum is right.
    pub checksum_ok: Option<bool>,
}

impl DcoIdentify {
    /// Decode the 512-byte sector.
    pub fn parse(d: &[u8]) -> Option<DcoIdentify> {
        if d.len() < 512 {
            return None;
        }
        let w = |i: usize| u16::from_le_bytes([d[2 * i], d[2 * i + 1]]);
        let max_lba = (0..4).fold(0u64, |a, i| a | (u64::from(w(3 + i)) << (16 * i)));
        Some(DcoIdentify {
            revision: w(0),
            max_lba,
            checksum_ok: (d[510] == 0xA5)
                .then(|| d[..512].iter().fold(0u8, |a, &b| a.wrapping_add(b)) == 0),
        })
    }
}

/// The IDENTIFY DEVICE bits that say which methods a drive claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HiddenAreaSupport {
    /// Host Protected Area feature set supported (word 82 bit 10).
    pub hpa: bool,
    /// Device Configuration Overlay supported (word 83 bit 11).
    pub dco: bool,
    /// Accessible Max Address Configuration supported (word 119 bit 8).
    pub ama: bool,
}

impl HiddenAreaSupport {
    /// From the 512-byte IDENTIFY DEVICE data.
    pub fn from_identify(d: &[u8]) -> HiddenAreaSupport {
        let w = |i: usize| u16::from_le_bytes([d[2 * i], d[2 * i + 1]]);
        // Words 82/83 and 119 are valid when bits 15:14 are 01b.
        let v = |i: usize| w(i) & 0xC000 == 0x4000;
        HiddenAreaSupport {
            hpa: v(82) && w(82) & (1 << 10) != 0,
            dco: v(83) && w(83) & (1 << 11) != 0,
            ama: v(119) && w(119) & (1 << 8) != 0,
        }
    }
}

/// How one method answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Answer<T> {
    /// The drive answered.
    Answered {
        /// The value.
        value: T,
    },
    /// The drive aborted the command (or the transport refused it).
    NotSupported {
        /// "not supported by this drive (…decoded status…)".
        reason: String,
    },
    /// Another failure.
    Failed {
        /// The error, one line.
        error: String,
    },
}

impl<T> Answer<T> {
    fn from_ata(r: Result<T, AtaError>) -> Answer<T> {
        match r {
            Ok(value) => Answer::Answered { value },
            Err(e) if e.is_not_supported() => Answer::NotSupported {
                reason: not_supported_reason(&e),
            },
            Err(e) => Answer::Failed {
                error: e.to_string(),
            },
        }
    }
    /// The value, if the drive answered.
    pub fn value(&self) -> Option<&T> {
        match self {
            Answer::Answered { value } => Some(value),
            _ => None,
        }
    }
}

/// Why DCO was not asked: the drive does not claim the feature set.
pub const NO_DCO: &str =
    "not supported by this drive (IDENTIFY DEVICE word 83 bit 11 clear: no Device Configuration Overlay feature set)";

fn not_supported_reason(e: &AtaError) -> String {
    match e {
        AtaError::Device { regs, .. } => {
            format!("not supported by this drive ({})", regs.describe())
        }
        other => format!("not supported by this drive ({other})"),
    }
}

/// The LBA (47:0) from the registers of a native-max command; `None` when
/// the SATL returned no registers, or only their low 24 bits for a 48-bit
/// command (fixed-format sense cannot carry LBA 47:24).
fn native_max_lba(
    dev: &SgDevice,
    pt: &AtaPassThrough,
    name: &str,
    lba48: bool,
) -> Result<u64, AtaError> {
    let regs = execute(dev, pt, name, AtaData::None)?
        .ok_or_else(|| AtaError::BadData(format!("{name}: the SATL returned no ATA registers")))?;
    if lba48 {
        if regs.partial {
            return Err(AtaError::BadData(format!(
                "{name}: the SATL returned fixed-format sense, which holds only LBA 23:0"
            )));
        }
        Ok(regs.lba & 0xFFFF_FFFF_FFFF)
    } else {
        Ok((regs.lba & 0xFF_FFFF) | (u64::from(regs.device & 0x0F) << 24))
    }
}

/// What an ATA drive says about its capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AtaCapacity {
    /// Logical sector size, bytes.
    pub logical_sector_size: u32,
    /// Sectors the host can address now (IDENTIFY words 100-103, or 60-61).
    pub accessible_sectors: u64,
    /// What IDENTIFY says the drive supports.
    pub support: HiddenAreaSupport,
    /// Which command asked for the native max: "get-native-max-address-ext"
    /// (ACS-3 AMA), "read-native-max-address-ext" (48-bit HPA) or
    /// "read-native-max-address" (28-bit).
    pub native_max_method: &'static str,
    /// Its answer: the native maximum LBA.
    pub native_max_lba: Answer<u64>,
    /// DEVICE CONFIGURATION IDENTIFY.
    pub dco: Answer<DcoIdentify>,
    /// Sectors the drive has natively (native max LBA + 1), when known.
    pub native_sectors: Option<u64>,
    /// Sectors the DCO allows (its max LBA + 1), when known.
    pub dco_sectors: Option<u64>,
    /// Bytes between the accessible and the native capacity (HPA / AMA).
    pub hpa_bytes: Option<u64>,
    /// Bytes between the native capacity and the DCO's maximum.
    pub dco_bytes: Option<u64>,
}

/// Read the ATA capacity facts: IDENTIFY, the native max by the method the
/// drive claims (AMA, else 48-bit, else 28-bit READ NATIVE MAX; one is
/// tried even when IDENTIFY claims none, as drives and emulators answer it
/// anyway), and DEVICE CONFIGURATION IDENTIFY.
pub fn ata_capacity(dev: &SgDevice) -> Result<AtaCapacity, AtaError> {
    let mut raw = vec![0u8; 512];
    let pt = AtaPassThrough::new(
        Protocol::PioDataIn,
        Taskfile::new(ata::command::IDENTIFY_DEVICE).count(1),
    );
    execute(dev, &pt, "IDENTIFY DEVICE", AtaData::In(&mut raw))?;
    let id = IdentifyDevice::parse(&raw)
        .ok_or_else(|| AtaError::BadData("IDENTIFY DEVICE data too short".into()))?;
    let support = HiddenAreaSupport::from_identify(&raw);
    let (method, pt, lba48) = if support.ama {
        ("get-native-max-address-ext", get_native_max_ext(), true)
    } else if id.lba48 {
        ("read-native-max-address-ext", read_native_max_ext(), true)
    } else {
        ("read-native-max-address", read_native_max(), false)
    };
    let native = Answer::from_ata(native_max_lba(dev, &pt, method, lba48));
    // DCO IDENTIFY only where IDENTIFY claims the feature set: an obsolete
    // command sent to every drive would be aborted by most, and some
    // controllers (QEMU's AHCI) then fail the next queued read.
    let dco = if support.dco {
        let mut dco_buf = vec![0u8; 512];
        Answer::from_ata(
            execute(
                dev,
                &dco_identify(),
                "DEVICE CONFIGURATION IDENTIFY",
                AtaData::In(&mut dco_buf),
            )
            .and_then(|_| {
                DcoIdentify::parse(&dco_buf)
                    .ok_or_else(|| AtaError::BadData("DCO IDENTIFY data too short".into()))
            }),
        )
    } else {
        Answer::NotSupported {
            reason: NO_DCO.to_string(),
        }
    };
    Ok(AtaCapacity::assemble(
        id.logical_sector_size,
        id.capacity_sectors,
        support,
        method,
        native,
        dco,
    ))
}

impl AtaCapacity {
    /// Put the answers together and work out the hidden byte counts.
    pub fn assemble(
        logical_sector_size: u32,
        accessible_sectors: u64,
        support: HiddenAreaSupport,
        native_max_method: &'static str,
        native_max_lba: Answer<u64>,
        dco: Answer<DcoIdentify>,
    ) -> AtaCapacity {
        let native_sectors = native_max_lba.value().map(|l| l + 1);
        let dco_sectors = dco.value().map(|d| d.max_lba + 1).filter(|&s| s > 1);
        let bytes = |s: u64| s.saturating_mul(u64::from(logical_sector_size));
        AtaCapacity {
            logical_sector_size,
            accessible_sectors,
            support,
            native_max_method,
            hpa_bytes: native_sectors.map(|n| bytes(n.saturating_sub(accessible_sectors))),
            dco_bytes: match (dco_sectors, native_sectors) {
                (Some(d), Some(n)) => Some(bytes(d.saturating_sub(n))),
                _ => None,
            },
            native_sectors,
            dco_sectors,
            native_max_lba,
            dco,
        }
    }

    /// Bytes hidden from the host in total (HPA/AMA plus DCO), when known.
    pub fn hidden_bytes(&self) -> Option<u64> {
        match (self.hpa_bytes, self.dco_bytes) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        }
    }
}

/// What an NVMe controller and namespace say about capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NvmeCapacity {
    /// The namespace asked about (`null` on the controller device).
    pub nsid: Option<u32>,
    /// Its logical block size, bytes.
    pub block_size: Option<u32>,
    /// Namespace Size (NSZE), blocks.
    pub nsze: Option<u64>,
    /// Namespace Capacity (NCAP), blocks.
    pub ncap: Option<u64>,
    /// Namespace Utilization (NUSE), blocks.
    pub nuse: Option<u64>,
    /// Total NVM Capacity (TNVMCAP, Identify Controller bytes 280-295),
    /// bytes; 0 when the controller does not report it.
    pub tnvmcap: u128,
    /// Unallocated NVM Capacity (UNVMCAP, bytes 296-311), bytes: capacity
    /// in no namespace.
    pub unvmcap: u128,
    /// The active namespaces (Identify CNS 02h).
    pub active_namespaces: Answer<Vec<u32>>,
    /// The active namespaces other than `nsid`: capacity an erase of this
    /// namespace does not reach.
    pub other_namespaces: Vec<u32>,
    /// Bytes no namespace holds (UNVMCAP), when non-zero.
    pub unallocated_bytes: Option<u128>,
}

fn le128(d: &[u8], at: usize) -> u128 {
    let mut a = [0u8; 16];
    a.copy_from_slice(&d[at..at + 16]);
    u128::from_le_bytes(a)
}

/// TNVMCAP and UNVMCAP from Identify Controller data.
pub fn controller_capacity(d: &[u8]) -> Option<(u128, u128)> {
    (d.len() >= 312).then(|| (le128(d, 280), le128(d, 296)))
}

/// Read the NVMe capacity facts.
pub fn nvme_capacity(dev: &NvmeDevice) -> Result<NvmeCapacity, NvmeError> {
    let mut ctrl = vec![0u8; 4096];
    dev.execute(&NvmeCommand::identify(1, 0), NvmeData::In(&mut ctrl))?;
    let (tnvmcap, unvmcap) = controller_capacity(&ctrl).unwrap_or((0, 0));
    let ns = match dev.nsid() {
        Some(n) => Some(nvme::identify_namespace(dev, n)?),
        None => None,
    };
    let mut list = vec![0u8; 4096];
    let active = match dev.execute(&NvmeCommand::identify(2, 0), NvmeData::In(&mut list)) {
        Ok(_) => Answer::Answered {
            value: parse_active_namespaces(&list),
        },
        Err(e) if e.is_not_supported() => Answer::NotSupported {
            reason: format!("not supported by this drive ({e})"),
        },
        Err(e) => Answer::Failed {
            error: e.to_string(),
        },
    };
    let other_namespaces = active
        .value()
        .map(|v| {
            v.iter()
                .copied()
                .filter(|&n| Some(n) != dev.nsid())
                .collect()
        })
        .unwrap_or_default();
    Ok(NvmeCapacity {
        nsid: dev.nsid(),
        block_size: ns.as_ref().map(|n| n.block_size),
        nsze: ns.as_ref().map(|n| n.nsze),
        ncap: ns.as_ref().map(|n| n.ncap),
        nuse: ns.as_ref().map(|n| n.nuse),
        tnvmcap,
        unvmcap,
        active_namespaces: active,
        other_namespaces,
        unallocated_bytes: (unvmcap > 0).then_some(unvmcap),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_max_and_dco_cdbs_match_acs() {
        // ATA PASS-THROUGH(16): byte 1 PROTOCOL 3 (non-data) << 1 | EXTEND;
        // byte 2 CK_COND; byte 13 DEVICE; byte 14 COMMAND.
        let c = read_native_max_ext().build16();
        assert_eq!((c[1], c[2], c[13], c[14]), ((3 << 1) | 1, 0x20, 0x40, 0x27));
        let c = read_native_max().build16();
        assert_eq!((c[1], c[2], c[13], c[14]), (3 << 1, 0x20, 0x40, 0xF8));
        let c = get_native_max_ext().build16();
        assert_eq!((c[1], c[3], c[4], c[14]), ((3 << 1) | 1, 0, 0, 0x78));
        let c = dco_identify().build16();
        assert_eq!((c[1], c[4], c[6], c[14]), (4 << 1, 0xC2, 1, 0xB1));
        // All four are reads: an unclaimed handle sends them.
        for pt in [
            read_native_max_ext(),
            read_native_max(),
            get_native_max_ext(),
            dco_identify(),
        ] {
            assert!(!crate::scsi::modifies_medium(&pt.build16()));
        }
        // The setting ones are refused there.
        for (cmd, feat) in [(0x78u8, 0x01u8), (0x78, 0x02), (0xB1, 0xC3), (0x37, 0)] {
            assert!(ata::modifies_medium(cmd, feat), "{cmd:#x}/{feat:#x}");
        }
    }

    #[test]
    fn dco_identify_decodes_words_3_to_6() {
        let mut d = vec![0u8; 512];
        d[0] = 2;
        let max: u64 = 0x0000_0001_2A19_7FFF;
        for i in 0..4 {
            let w = ((max >> (16 * i)) & 0xFFFF) as u16;
            d[6 + 2 * i..8 + 2 * i].copy_from_slice(&w.to_le_bytes());
        }
        d[510] = 0xA5;
        let s = d[..511].iter().fold(0u8, |a, &b| a.wrapping_add(b));
        d[511] = 0u8.wrapping_sub(s);
        let dco = DcoIdentify::parse(&d).unwrap();
        assert_eq!(
            (dco.revision, dco.max_lba, dco.checksum_ok),
            (2, max, Some(true))
        );
    }

    #[test]
    fn an_aborted_command_reads_not_supported_with_its_registers() {
        // Descriptor sense with an ATA Status Return descriptor (09h):
        // ERROR 04h (ABRT), STATUS 51h.
        let mut s = vec![0x72, 0x0B, 0x00, 0x00, 0, 0, 0, 14];
        s.extend_from_slice(&[0x09, 0x0C, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x51]);
        let sense = crate::scsi::Sense::parse(&s).unwrap();
        let regs = ata::AtaRegisters::from_return(sense.ata.as_ref().unwrap());
        let e = AtaError::Device {
            name: "DEVICE CONFIGURATION IDENTIFY".into(),
            regs,
            sense: Box::new(sense),
        };
        match Answer::<u64>::from_ata(Err(e)) {
            Answer::NotSupported { reason } => assert_eq!(
                reason,
                "not supported by this drive (ATA status 0x51 error 0x04 (ABRT command aborted))"
            ),
            other => panic!("{other:?}"),
        }
        let bad = Answer::<u64>::from_ata(Err(AtaError::BadData("short".into())));
        assert_eq!(
            bad,
            Answer::Failed {
                error: "short".into()
            }
        );
    }

    #[test]
    fn identify_words_say_which_methods_exist() {
        let mut d = vec![0u8; 512];
        let put = |d: &mut Vec<u8>, w: usize, v: u16| {
            d[2 * w..2 * w + 2].copy_from_slice(&v.to_le_bytes())
        };
        put(&mut d, 82, 0x4000 | (1 << 10));
        put(&mut d, 83, 0x4000 | (1 << 11));
        put(&mut d, 119, 0x4000 | (1 << 8));
        let s = HiddenAreaSupport::from_identify(&d);
        assert_eq!((s.hpa, s.dco, s.ama), (true, true, true));
        // Without the 01b validity pattern the bits mean nothing.
        put(&mut d, 119, 1 << 8);
        assert!(!HiddenAreaSupport::from_identify(&d).ama);
    }

    #[test]
    fn hidden_bytes_from_accessible_native_and_dco() {
        let support = HiddenAreaSupport {
            hpa: true,
            dco: true,
            ama: false,
        };
        let c = AtaCapacity::assemble(
            512,
            1000,
            support,
            "read-native-max-address-ext",
            Answer::Answered { value: 1199 },
            Answer::Answered {
                value: DcoIdentify {
                    revision: 2,
                    max_lba: 1499,
                    checksum_ok: Some(true),
                },
            },
        );
        assert_eq!((c.native_sectors, c.dco_sectors), (Some(1200), Some(1500)));
        assert_eq!(c.hpa_bytes, Some(200 * 512));
        assert_eq!(c.dco_bytes, Some(300 * 512));
        assert_eq!(c.hidden_bytes(), Some(500 * 512));
        // Same capacity everywhere, DCO refused: nothing hidden, DCO unknown.
        let c = AtaCapacity::assemble(
            4096,
            1000,
            support,
            "read-native-max-address-ext",
            Answer::Answered { value: 999 },
            Answer::NotSupported {
                reason: "not supported by this drive".into(),
            },
        );
        assert_eq!(
            (c.hpa_bytes, c.dco_bytes, c.hidden_bytes()),
            (Some(0), None, Some(0))
        );
    }

    #[test]
    fn nvme_capacity_fields_at_identify_offsets() {
        let mut d = vec![0u8; 4096];
        d[280..296].copy_from_slice(&(1u128 << 40).to_le_bytes());
        d[296..312].copy_from_slice(&(1u128 << 30).to_le_bytes());
        assert_eq!(controller_capacity(&d), Some((1 << 40, 1 << 30)));
        let mut l = vec![0u8; 4096];
        for (i, n) in [1u32, 2, 7].iter().enumerate() {
            l[4 * i..4 * i + 4].copy_from_slice(&n.to_le_bytes());
        }
        assert_eq!(parse_active_namespaces(&l), vec![1, 2, 7]);
        assert!(parse_active_namespaces(&[0; 16]).is_empty());
    }
}
