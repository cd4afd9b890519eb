//! ATA commands through a SCSI-to-ATA translation layer (SAT): ATA
//! PASS-THROUGH(16) (0x85) and (12) (0xA1) built from an ATA taskfile, the
//! returned ATA registers decoded from sense, IDENTIFY DEVICE, SCT Write Same
//! (SMART WRITE LOG to log 0xE0) and SANITIZE DEVICE.
//!
//! A SATA disk behind libata (or a USB bridge) is a SCSI device to Linux, and
//! libata refuses SCSI WRITE SAME with a pattern; the fast whole-drive write
//! for SATA is SCT Write Same, which exists only as an ATA command. Layouts
//! follow SAT-5 (CDB, sense descriptor 09h) and ACS-4 (IDENTIFY DEVICE words,
//! SCT command key sector, SANITIZE feature codes). ATA words are
//! little-endian; ATA strings store two characters per word, first character
//! in the high byte.

pub mod commands;
pub mod security;
pub mod security_state;

pub use commands::{command, modifies_medium};

use serde::Serialize;

use crate::scsi::sg::{ScsiCommand, SgDevice, SgError};
use crate::scsi::{sense_key, AtaStatusReturn, Sense};
use crate::units::{BlockCount, Lba};

/// SAT PROTOCOL field values (SAT-5 table "PROTOCOL field").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// 0: ATA hardware reset.
    HardReset,
    /// 1: software reset.
    SoftReset,
    /// 3: non-data.
    NonData,
    /// 4: PIO data-in.
    PioDataIn,
    /// 5: PIO data-out.
    PioDataOut,
    /// 6: DMA.
    Dma,
    /// 8: execute device diagnostic.
    DeviceDiagnostic,
    /// 9: device reset.
    DeviceReset,
    /// 10: UDMA data-in.
    UdmaDataIn,
    /// 11: UDMA data-out.
    UdmaDataOut,
    /// 12: NCQ (FPDMA).
    Fpdma,
    /// 15: return response information.
    ReturnResponse,
}

impl Protocol {
    /// The 4-bit code.
    pub fn code(self) -> u8 {
        match self {
            Protocol::HardReset => 0,
            Protocol::SoftReset => 1,
            Protocol::NonData => 3,
            Protocol::PioDataIn => 4,
            Protocol::PioDataOut => 5,
            Protocol::Dma => 6,
            Protocol::DeviceDiagnostic => 8,
            Protocol::DeviceReset => 9,
            Protocol::UdmaDataIn => 10,
            Protocol::UdmaDataOut => 11,
            Protocol::Fpdma => 12,
            Protocol::ReturnResponse => 15,
        }
    }
}

/// Where the SATL finds the transfer length (T_LENGTH, SAT-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TLength {
    /// 0: no data is transferred.
    NoData,
    /// 1: in the FEATURES field.
    Features,
    /// 2: in the COUNT field.
    Count,
    /// 3: in the TPSIU.
    Tpsiu,
}

/// The ATA registers of one command (the taskfile). LBA is 48 bits; for
/// 28-bit commands only bits 27:0 (the top four in DEVICE) matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Taskfile {
    /// FEATURE (15:0).
    pub feature: u16,
    /// COUNT (15:0).
    pub count: u16,
    /// LBA (47:0).
    pub lba: u64,
    /// DEVICE register (bit 6 = LBA mode).
    pub device: u8,
    /// COMMAND.
    pub command: u8,
}

impl Taskfile {
    /// A taskfile for `command`, other registers zero.
    pub fn new(command: u8) -> Self {
        Taskfile {
            command,
            ..Default::default()
        }
    }
    /// FEATURE.
    pub fn feature(mut self, v: u16) -> Self {
        self.feature = v;
        self
    }
    /// COUNT.
    pub fn count(mut self, v: u16) -> Self {
        self.count = v;
        self
    }
    /// LBA (47:0).
    pub fn lba(mut self, v: u64) -> Self {
        self.lba = v & 0xFFFF_FFFF_FFFF;
        self
    }
    /// DEVICE.
    pub fn device(mut self, v: u8) -> Self {
        self.device = v;
        self
    }
}

/// ATA PASS-THROUGH(16)/(12) CDB builder (SAT-5 12.2.2, 12.2.3).
#[derive(Debug, Clone, Copy)]
pub struct AtaPassThrough {
    tf: Taskfile,
    protocol: Protocol,
    extend: bool,
    multiple_count: u8,
    off_line: u8,
    ck_cond: bool,
    t_dir_in: bool,
    byt_blok: bool,
    t_length: TLength,
}

impl AtaPassThrough {
    /// A pass-through of `tf` with `protocol`. The transfer fields default
    /// from the protocol: data-in/out protocols set BYT_BLOK=1 (length in
    /// 512-byte blocks), T_LENGTH=COUNT and T_DIR accordingly; others no data.
    pub fn new(protocol: Protocol, tf: Taskfile) -> Self {
        let (t_dir_in, t_length) = match protocol {
            Protocol::PioDataIn | Protocol::UdmaDataIn => (true, TLength::Count),
            Protocol::PioDataOut | Protocol::UdmaDataOut => (false, TLength::Count),
            Protocol::Dma | Protocol::Fpdma => (true, TLength::Count),
            _ => (false, TLength::NoData),
        };
        AtaPassThrough {
            tf,
            protocol,
            extend: false,
            multiple_count: 0,
            off_line: 0,
            ck_cond: false,
            t_dir_in,
            byt_blok: true,
            t_length,
        }
    }
    /// EXTEND: a 48-bit command (upper register bytes valid).
    pub fn extend(mut self, on: bool) -> Self {
        self.extend = on;
        self
    }
    /// CK_COND: return the ATA registers as sense even on success.
    pub fn ck_cond(mut self, on: bool) -> Self {
        self.ck_cond = on;
        self
    }
    /// T_DIR: true = from the device.
    pub fn t_dir_in(mut self, on: bool) -> Self {
        self.t_dir_in = on;
        self
    }
    /// BYT_BLOK: true = transfer length in blocks, false = in bytes.
    pub fn byt_blok(mut self, on: bool) -> Self {
        self.byt_blok = on;
        self
    }
    /// T_LENGTH.
    pub fn t_length(mut self, t: TLength) -> Self {
        self.t_length = t;
        self
    }
    /// MULTIPLE_COUNT (log2 sectors per DRQ block, 3 bits).
    pub fn multiple_count(mut self, n: u8) -> Self {
        self.multiple_count = n & 0x07;
        self
    }
    /// OFF_LINE (2 bits): seconds the ATA bus may be busy, 2^n - 2.
    pub fn off_line(mut self, n: u8) -> Self {
        self.off_line = n & 0x03;
        self
    }
    /// The taskfile.
    pub fn taskfile(&self) -> &Taskfile {
        &self.tf
    }
    fn byte1(&self) -> u8 {
        (self.multiple_count << 5) | (self.protocol.code() << 1) | u8::from(self.extend)
    }
    fn byte2(&self) -> u8 {
        let tl = match self.t_length {
            TLength::NoData => 0,
            TLength::Features => 1,
            TLength::Count => 2,
            TLength::Tpsiu => 3,
        };
        (self.off_line << 6)
            | (u8::from(self.ck_cond) << 5)
            | (u8::from(self.t_dir_in) << 3)
            | (u8::from(self.byt_blok) << 2)
            | tl
    }
    /// ATA PASS-THROUGH(16): bytes 3-4 FEATURE 15:8, 7:0; 5-6 COUNT 15:8,
    /// 7:0; 7 LBA 31:24, 8 LBA 7:0, 9 LBA 39:32, 10 LBA 15:8, 11 LBA 47:40,
    /// 12 LBA 23:16; 13 DEVICE; 14 COMMAND.
    pub fn build16(&self) -> [u8; 16] {
        let t = &self.tf;
        let l = t.lba.to_le_bytes();
        let f = t.feature.to_be_bytes();
        let c = t.count.to_be_bytes();
        [
            0x85,
            self.byte1(),
            self.byte2(),
            f[0],
            f[1],
            c[0],
            c[1],
            l[3],
            l[0],
            l[4],
            l[1],
            l[5],
            l[2],
            t.device,
            t.command,
            0,
        ]
    }
    /// ATA PASS-THROUGH(12): 28-bit only (bytes 3 FEATURE, 4 COUNT, 5-7 LBA
    /// 7:0, 15:8, 23:16, 8 DEVICE, 9 COMMAND). `None` for a 48-bit command
    /// or when a register does not fit.
    pub fn build12(&self) -> Option<[u8; 12]> {
        let t = &self.tf;
        if self.extend || t.feature > 0xFF || t.count > 0xFF || t.lba > 0xFF_FFFF {
            return None;
        }
        let l = t.lba.to_le_bytes();
        Some([
            0xA1,
            self.byte1() & !1,
            self.byte2(),
            t.feature as u8,
            t.count as u8,
            l[0],
            l[1],
            l[2],
            t.device,
            t.command,
            0,
            0,
        ])
    }
}

/// ATA ERROR register bits in words.
pub fn error_bits(e: u8) -> Vec<&'static str> {
    let mut v = Vec::new();
    for (bit, name) in [
        (7, "ICRC interface CRC error"),
        (6, "UNC uncorrectable data"),
        (4, "IDNF ID not found"),
        (2, "ABRT command aborted"),
        (1, "end of media / no media"),
        (0, "command-specific error bit 0"),
    ] {
        if e & (1 << bit) != 0 {
            v.push(name);
        }
    }
    v
}

/// The ATA result registers, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AtaRegisters {
    /// STATUS.
    pub status: u8,
    /// ERROR.
    pub error: u8,
    /// COUNT (15:0; only 7:0 when from fixed-format sense).
    pub count: u16,
    /// LBA (47:0; only 23:0 when from fixed-format sense).
    pub lba: u64,
    /// DEVICE.
    pub device: u8,
    /// Whether the upper bytes are missing (fixed-format sense).
    pub partial: bool,
}

impl AtaRegisters {
    /// From a decoded ATA Status Return.
    pub fn from_return(r: &AtaStatusReturn) -> Self {
        AtaRegisters {
            status: r.status,
            error: r.error,
            count: r.count,
            lba: r.lba,
            device: r.device,
            partial: r.from_fixed_format,
        }
    }
    /// ERR (bit 0) or DF (bit 5) set in STATUS.
    pub fn is_error(&self) -> bool {
        self.status & 0x21 != 0
    }
    /// "status 0x51 error 0x04 (ABRT command aborted)".
    pub fn describe(&self) -> String {
        let bits = error_bits(self.error);
        if bits.is_empty() {
            format!(
                "ATA status 0x{:02X} error 0x{:02X}",
                self.status, self.error
            )
        } else {
            format!(
                "ATA status 0x{:02X} error 0x{:02X} ({})",
                self.status,
                self.error,
                bits.join(", ")
            )
        }
    }
}

/// Errors from ATA pass-through.
#[derive(Debug, thiserror::Error)]
pub enum AtaError {
    /// SG_IO failed or the SCSI layer reported a failure without ATA
    /// registers.
    #[error(transparent)]
    Scsi(#[from] SgError),
    /// The device does not accept ATA PASS-THROUGH: it is not an ATA device
    /// behind a SATL (a SCSI or virtio disk, for instance).
    #[error("ATA PASS-THROUGH not supported by this device ({sense}): it is not an ATA disk behind a SCSI-to-ATA translation layer")]
    PassThroughUnsupported {
        /// The decoded sense.
        sense: Box<Sense>,
    },
    /// The ATA device aborted the command or reported an error.
    #[error("ATA command {name} failed: {}{}", .regs.describe(), if .regs.error & 0x04 != 0 { " — the device aborted it; it is likely not supported by this device or not allowed in its current state (frozen, locked)" } else { "" })]
    Device {
        /// The command's name.
        name: String,
        /// The returned registers.
        regs: AtaRegisters,
        /// The decoded sense.
        sense: Box<Sense>,
    },
    /// The answer cannot be decoded.
    #[error("{0}")]
    BadData(String),
}

impl AtaError {
    /// Whether this means the command (or pass-through) is not supported.
    pub fn is_not_supported(&self) -> bool {
        match self {
            AtaError::Scsi(e) => e.is_not_supported(),
            AtaError::PassThroughUnsupported { .. } => true,
            AtaError::Device { regs, .. } => regs.error & 0x04 != 0,
            AtaError::BadData(_) => false,
        }
    }
}

/// Data for a pass-through command.
pub enum AtaData<'a> {
    /// No data.
    None,
    /// From the device into the buffer.
    In(&'a mut [u8]),
    /// From the buffer to the device.
    Out(&'a [u8]),
}

/// Send `pt` with ATA PASS-THROUGH(16). Returns the ATA registers when the
/// SATL returned them (CK_COND set, or a descriptor on success), `None` for
/// a plain GOOD status. An ATA error becomes [`AtaError::Device`].
pub fn execute(
    dev: &SgDevice,
    pt: &AtaPassThrough,
    name: &str,
    data: AtaData<'_>,
) -> Result<Option<AtaRegisters>, AtaError> {
    execute_with_timeout(dev, pt, name, data, None)
}

/// [`execute`] with this command's own timeout in ms (`None`: the
/// handle's default).
pub fn execute_with_timeout(
    dev: &SgDevice,
    pt: &AtaPassThrough,
    name: &str,
    data: AtaData<'_>,
    timeout_ms: Option<u32>,
) -> Result<Option<AtaRegisters>, AtaError> {
    let cdb = pt.build16();
    let cmd = ScsiCommand::new(&cdb);
    let cmd = match timeout_ms {
        Some(t) => cmd.timeout_ms(t),
        None => cmd,
    };
    let mut cmd = match data {
        AtaData::None => cmd,
        AtaData::In(b) => cmd.data_in(b),
        AtaData::Out(b) => cmd.data_out(b),
    };
    let r = dev.execute(&mut cmd)?;
    interpret(&r.sense, r.status, name, || r.check(&cdb))
}

/// What the answer to an ATA PASS-THROUGH command means, from its sense
/// bytes and SCSI status (the decoding half of [`execute`]): the ATA
/// registers on success with CK_COND, `None` for a plain GOOD, an ATA
/// error as [`AtaError::Device`]; `check` turns any other failure into a
/// SCSI error. Public so the fuzz targets reach it.
pub fn interpret(
    sense_bytes: &[u8],
    status: u8,
    name: &str,
    check: impl FnOnce() -> Result<(), SgError>,
) -> Result<Option<AtaRegisters>, AtaError> {
    let sense = Sense::parse(sense_bytes);
    if let Some(s) = &sense {
        if s.key == sense_key::ILLEGAL_REQUEST && s.asc == 0x20 && s.ascq == 0x00 {
            return Err(AtaError::PassThroughUnsupported {
                sense: Box::new(s.clone()),
            });
        }
        // Descriptor 09h, or (fixed format) the registers in INFORMATION.
        let ret = s.ata.or_else(|| {
            if s.descriptor_format {
                None
            } else {
                AtaStatusReturn::from_fixed_sense(sense_bytes)
            }
        });
        if let Some(a) = &ret {
            let regs = AtaRegisters::from_return(a);
            if regs.is_error() {
                return Err(AtaError::Device {
                    name: name.to_string(),
                    regs,
                    sense: Box::new(s.clone()),
                });
            }
            // CK_COND on success: RECOVERED ERROR, 00/1D, registers valid.
            if s.key == sense_key::RECOVERED_ERROR || s.key == sense_key::NO_SENSE {
                return Ok(Some(regs));
            }
        }
    }
    if status == 0 && sense.is_none() {
        return Ok(None);
    }
    check()?;
    Ok(sense.and_then(|s| s.ata.as_ref().map(AtaRegisters::from_return)))
}

/// Read an ATA string (two characters per word, high byte first), trimmed.
pub fn ata_string(words: &[u16]) -> String {
    let mut b = Vec::with_capacity(words.len() * 2);
    for w in words {
        b.push((w >> 8) as u8);
        b.push((w & 0xFF) as u8);
    }
    let s: String = b
        .iter()
        .map(|&c| {
            if (0x20..0x7F).contains(&c) {
                c as char
            } else {
                ' '
            }
        })
        .collect();
    s.trim().to_string()
}

/// Decoded IDENTIFY DEVICE data (ACS-4 7.13.6). Word numbers in the field
/// docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IdentifyDevice {
    /// Model number (words 27-46).
    pub model: String,
    /// Serial number (words 10-19).
    pub serial: String,
    /// Firmware revision (words 23-26).
    pub firmware: String,
    /// Addressable logical sectors: words 100-103 when 48-bit is supported,
    /// else words 60-61.
    pub capacity_sectors: u64,
    /// Logical sector size in bytes (words 117-118 when word 106 bit 12, else 512).
    pub logical_sector_size: u32,
    /// Physical sector size in bytes (logical << word 106 bits 3:0 when bit 13).
    pub physical_sector_size: u32,
    /// 48-bit address feature set supported (word 83 bit 10).
    pub lba48: bool,
    /// SCT Command Transport supported (word 206 bit 0).
    pub sct_supported: bool,
    /// SCT Write Same supported (word 206 bit 2).
    pub sct_write_same: bool,
    /// SCT Error Recovery Control supported (word 206 bit 3).
    pub sct_error_recovery: bool,
    /// Sanitize feature set supported (word 59 bit 12).
    pub sanitize: bool,
    /// CRYPTO SCRAMBLE EXT supported (word 59 bit 13).
    pub sanitize_crypto: bool,
    /// OVERWRITE EXT supported (word 59 bit 14).
    pub sanitize_overwrite: bool,
    /// BLOCK ERASE EXT supported (word 59 bit 15).
    pub sanitize_block_erase: bool,
    /// Security feature set supported (word 82 bit 1).
    pub security_supported: bool,
    /// Security enabled (word 128 bit 1).
    pub security_enabled: bool,
    /// Security locked (word 128 bit 2).
    pub security_locked: bool,
    /// Security frozen (word 128 bit 3): SECURITY ERASE is refused until a power cycle.
    pub security_frozen: bool,
    /// Enhanced security erase supported (word 128 bit 5).
    pub security_enhanced_erase: bool,
    /// Normal security erase time in minutes (word 89), when reported.
    pub security_erase_minutes: Option<u32>,
    /// Enhanced security erase time in minutes (word 90), when reported.
    pub enhanced_erase_minutes: Option<u32>,
    /// The whole Security feature set state (words 82, 89, 90, 128),
    /// including count expired and the "more than" erase times.
    pub security: crate::ata::security_state::SecurityState,
    /// DATA SET MANAGEMENT TRIM supported (word 169 bit 0).
    pub trim: bool,
    /// Deterministic read after TRIM (word 69 bit 14).
    pub trim_deterministic: bool,
    /// Read zeroes after TRIM (word 69 bit 5).
    pub trim_reads_zero: bool,
    /// SMART supported (word 82 bit 0).
    pub smart: bool,
    /// Nominal media rotation rate (word 217): 1 = solid state, else rpm, 0 = not reported.
    pub rotation_rate: u16,
    /// Major version number bits (word 80).
    pub major_version: u16,
    /// Whether the integrity word (255) is present and its checksum right.
    pub checksum_ok: Option<bool>,
}

/// Minutes from an IDENTIFY erase-time word (89/90): bit 15 selects the
/// extended format (bits 14:0) else bits 7:0; value x 2 minutes; 0 = not reported.
fn erase_minutes(w: u16) -> Option<u32> {
    let v = if w & 0x8000 != 0 {
        w & 0x7FFF
    } else {
        w & 0xFF
    };
    (v != 0).then_some(u32::from(v) * 2)
}

impl IdentifyDevice {
    /// Decode the 512-byte IDENTIFY DEVICE data.
    pub fn parse(d: &[u8]) -> Option<IdentifyDevice> {
        if d.len() < 512 {
            return None;
        }
        let w: Vec<u16> = d[..512]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        let lba48 = w[83] & (1 << 10) != 0;
        let cap48 = u64::from(w[100])
            | (u64::from(w[101]) << 16)
            | (u64::from(w[102]) << 32)
            | (u64::from(w[103]) << 48);
        let cap28 = u64::from(w[60]) | (u64::from(w[61]) << 16);
        let capacity_sectors = if lba48 && cap48 != 0 { cap48 } else { cap28 };
        let w106_valid = w[106] & 0xC000 == 0x4000;
        // Words 117-118 count 16-bit words; ACS-4 requires at least 256 (a
        // 512-byte sector). A smaller or overflowing value is not a size
        // (and a sector size of 0 would divide by zero later): 512.
        let logical_sector_size = if w106_valid && w[106] & (1 << 12) != 0 {
            (u32::from(w[117]) | (u32::from(w[118]) << 16))
                .checked_mul(2)
                .filter(|&b| b >= 512)
                .unwrap_or(512)
        } else {
            512
        };
        // 2^(bits 3:0) logical sectors per physical one; a product that
        // does not fit 32 bits is not a size either.
        let physical_sector_size = if w106_valid && w[106] & (1 << 13) != 0 {
            logical_sector_size
                .checked_mul(1 << (w[106] & 0x0F))
                .unwrap_or(logical_sector_size)
        } else {
            logical_sector_size
        };
        let checksum_ok = (w[255] & 0xFF == 0xA5)
            .then(|| d[..512].iter().fold(0u8, |a, &b| a.wrapping_add(b)) == 0);
        Some(IdentifyDevice {
            model: ata_string(&w[27..47]),
            serial: ata_string(&w[10..20]),
            firmware: ata_string(&w[23..27]),
            capacity_sectors,
            logical_sector_size,
            physical_sector_size,
            lba48,
            sct_supported: w[206] & 1 != 0,
            sct_write_same: w[206] & 1 != 0 && w[206] & (1 << 2) != 0,
            sct_error_recovery: w[206] & (1 << 3) != 0,
            sanitize: w[59] & (1 << 12) != 0,
            sanitize_crypto: w[59] & (1 << 13) != 0,
            sanitize_overwrite: w[59] & (1 << 14) != 0,
            sanitize_block_erase: w[59] & (1 << 15) != 0,
            security_supported: w[82] & (1 << 1) != 0,
            security_enabled: w[128] & (1 << 1) != 0,
            security_locked: w[128] & (1 << 2) != 0,
            security_frozen: w[128] & (1 << 3) != 0,
            security_enhanced_erase: w[128] & (1 << 5) != 0,
            security_erase_minutes: erase_minutes(w[89]),
            enhanced_erase_minutes: erase_minutes(w[90]),
            security: crate::ata::security_state::SecurityState::from_words(
                w[82], w[89], w[90], w[128],
            ),
            trim: w[169] & 1 != 0,
            trim_deterministic: w[69] & (1 << 14) != 0,
            trim_reads_zero: w[69] & (1 << 5) != 0,
            smart: w[82] & 1 != 0,
            rotation_rate: w[217],
            major_version: w[80],
            checksum_ok,
        })
    }
}

/// IDENTIFY DEVICE through ATA PASS-THROUGH(16) (PIO data-in, one block).
pub fn identify_device(dev: &SgDevice) -> Result<IdentifyDevice, AtaError> {
    let mut buf = vec![0u8; 512];
    let pt = AtaPassThrough::new(
        Protocol::PioDataIn,
        Taskfile::new(command::IDENTIFY_DEVICE).count(1),
    );
    execute(dev, &pt, "IDENTIFY DEVICE", AtaData::In(&mut buf))?;
    if buf.iter().all(|&b| b == 0) {
        return Err(AtaError::BadData(
            "IDENTIFY DEVICE returned all zeroes".into(),
        ));
    }
    IdentifyDevice::parse(&buf)
        .ok_or_else(|| AtaError::BadData("IDENTIFY DEVICE data too short".into()))
}

// ---------------------------------------------------------------------------
// SCT Write Same
// ---------------------------------------------------------------------------

/// SCT action code for Write Same.
pub const SCT_ACTION_WRITE_SAME: u16 = 0x0002;
/// The SCT command/status log address.
pub const SCT_COMMAND_LOG: u8 = 0xE0;
/// The SCT data transfer log address.
pub const SCT_DATA_LOG: u8 = 0xE1;

/// SCT Write Same function codes (ACS-4 "SCT Write Same command").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SctWriteSameFunction {
    /// 0x0001: repeat a 32-bit pattern, in the background.
    PatternBackground,
    /// 0x0002: repeat one logical sector (sent via log E1h), background.
    SectorBackground,
    /// 0x0003: repeat several logical sectors (sent via log E1h), background.
    MultiSectorBackground,
    /// 0x0101: repeat a 32-bit pattern, in the foreground (the command
    /// completes when the write is done).
    PatternForeground,
    /// 0x0102: repeat one logical sector, foreground.
    SectorForeground,
    /// 0x0103: repeat several logical sectors, foreground.
    MultiSectorForeground,
}

impl SctWriteSameFunction {
    /// The function code.
    pub fn code(self) -> u16 {
        match self {
            SctWriteSameFunction::PatternBackground => 0x0001,
            SctWriteSameFunction::SectorBackground => 0x0002,
            SctWriteSameFunction::MultiSectorBackground => 0x0003,
            SctWriteSameFunction::PatternForeground => 0x0101,
            SctWriteSameFunction::SectorForeground => 0x0102,
            SctWriteSameFunction::MultiSectorForeground => 0x0103,
        }
    }
    /// Whether the device keeps writing after the command returns.
    pub fn is_background(self) -> bool {
        self.code() < 0x0100
    }
}

/// The 512-byte SCT Write Same key sector (little-endian words): word 0
/// action code 0002h, word 1 function code, words 2-5 start LBA, words 6-9
/// count (0 = to the end of the device), words 10-11 pattern, words 12-15
/// pattern length in sectors (functions 0003h/0103h).
#[derive(Debug, Clone, Copy)]
pub struct SctWriteSame {
    function: SctWriteSameFunction,
    start: u64,
    count: u64,
    pattern: u32,
    pattern_sectors: u64,
}

impl SctWriteSame {
    /// Write `count` sectors from `start` with `function`.
    pub fn new(function: SctWriteSameFunction, start: Lba, count: BlockCount) -> Self {
        SctWriteSame {
            function,
            start: start.0,
            count: count.0,
            pattern: 0,
            pattern_sectors: 0,
        }
    }
    /// The 32-bit fill pattern (pattern functions; default 0).
    pub fn pattern(mut self, p: u32) -> Self {
        self.pattern = p;
        self
    }
    /// Pattern length in sectors (multi-sector functions).
    pub fn pattern_sectors(mut self, n: u64) -> Self {
        self.pattern_sectors = n;
        self
    }
    /// The function.
    pub fn function(&self) -> SctWriteSameFunction {
        self.function
    }
    /// The key sector.
    pub fn build(&self) -> [u8; 512] {
        let mut b = [0u8; 512];
        b[0..2].copy_from_slice(&SCT_ACTION_WRITE_SAME.to_le_bytes());
        b[2..4].copy_from_slice(&self.function.code().to_le_bytes());
        b[4..12].copy_from_slice(&self.start.to_le_bytes());
        b[12..20].copy_from_slice(&self.count.to_le_bytes());
        b[20..24].copy_from_slice(&self.pattern.to_le_bytes());
        b[24..32].copy_from_slice(&self.pattern_sectors.to_le_bytes());
        b
    }
}

/// SMART WRITE LOG (B0h/D6h) of `sectors` sectors to log `log`: the
/// taskfile (LBA 23:8 = C24Fh signature, LBA 7:0 = log address).
pub fn smart_write_log(log: u8, sectors: u8) -> Taskfile {
    Taskfile::new(command::SMART)
        .feature(0xD6)
        .count(u16::from(sectors))
        .lba(0x00C2_4F00 | u64::from(log))
}

/// SMART READ LOG (B0h/D5h) of `sectors` sectors from log `log`.
pub fn smart_read_log(log: u8, sectors: u8) -> Taskfile {
    Taskfile::new(command::SMART)
        .feature(0xD5)
        .count(u16::from(sectors))
        .lba(0x00C2_4F00 | u64::from(log))
}

/// Send an SCT Write Same command. For the pattern functions no further
/// data is sent; for the sector functions this sends only the command (use
/// [`sct_write_same_sector`], which also sends the data). Returns the registers the device returned.
pub fn sct_write_same(dev: &SgDevice, ws: &SctWriteSame) -> Result<Option<AtaRegisters>, AtaError> {
    let key = ws.build();
    let pt = AtaPassThrough::new(Protocol::PioDataOut, smart_write_log(SCT_COMMAND_LOG, 1))
        .ck_cond(true);
    execute(
        dev,
        &pt,
        "SCT Write Same (SMART WRITE LOG E0h)",
        AtaData::Out(&key),
    )
}

/// The SCT data transfer of a sector-pattern SCT Write Same: `sector`
/// (one logical sector, a whole number of 512-byte log pages, at most 255
/// of them) written to the SCT data log E1h with SMART WRITE LOG, the
/// pass-through built. `None` when the sector's length does not fit.
pub fn sct_data_out(sector_len: usize) -> Option<AtaPassThrough> {
    if sector_len == 0 || sector_len % 512 != 0 {
        return None;
    }
    let pages = u8::try_from(sector_len / 512).ok()?;
    Some(
        AtaPassThrough::new(Protocol::PioDataOut, smart_write_log(SCT_DATA_LOG, pages))
            .ck_cond(true),
    )
}

/// SCT Write Same repeating one whole logical sector (function 0102h in the
/// foreground, 0002h in the background): the key sector to log E0h, then
/// `sector` to the SCT data log E1h ([`sct_data_out`]), after which the
/// device writes it to every sector of the range. In the foreground the
/// data transfer completes when the range is written. Returns the
/// registers of the data transfer.
pub fn sct_write_same_sector(
    dev: &SgDevice,
    ws: &SctWriteSame,
    sector: &[u8],
) -> Result<Option<AtaRegisters>, AtaError> {
    let f = ws.function();
    if !matches!(
        f,
        SctWriteSameFunction::SectorForeground | SctWriteSameFunction::SectorBackground
    ) {
        return Err(AtaError::BadData(format!(
            "SCT Write Same function {:#06x} does not take one sector of data",
            f.code()
        )));
    }
    let data = sct_data_out(sector.len()).ok_or_else(|| {
        AtaError::BadData(format!(
            "an SCT Write Same sector of {} bytes is not 1 to 255 whole 512-byte log pages",
            sector.len()
        ))
    })?;
    sct_write_same(dev, ws)?;
    execute(
        dev,
        &data,
        "SCT Write Same data (SMART WRITE LOG E1h)",
        AtaData::Out(sector),
    )
}

/// The SCT status response (log E0h read), ACS-4 "SCT Status Response".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SctStatus {
    /// Format version (bytes 0-1).
    pub format_version: u16,
    /// Device state (byte 10): 0 active, 1 stand-by, 2 sleep, 3 DST in
    /// progress, 4 SMART off-line data collection, 5 SCT command in progress.
    pub device_state: u8,
    /// Extended status code of the last SCT command (bytes 14-15): 0 done
    /// without error, 0xFFFF still running.
    pub extended_status: u16,
    /// Action code of the last SCT command (bytes 16-17).
    pub action_code: u16,
    /// Function code of the last SCT command (bytes 18-19).
    pub function_code: u16,
    /// Current LBA of a background SCT command (bytes 40-47).
    pub current_lba: u64,
    /// Current temperature in °C (byte 200; `None` for 0x80 = invalid).
    pub temperature_c: Option<i8>,
}

impl SctStatus {
    /// Decode the 512-byte SCT status.
    pub fn parse(d: &[u8]) -> Option<SctStatus> {
        if d.len() < 512 {
            return None;
        }
        let u16_at = |i: usize| u16::from_le_bytes([d[i], d[i + 1]]);
        let mut l = [0u8; 8];
        l.copy_from_slice(&d[40..48]);
        let t = d[200] as i8;
        Some(SctStatus {
            format_version: u16_at(0),
            device_state: d[10],
            extended_status: u16_at(14),
            action_code: u16_at(16),
            function_code: u16_at(18),
            current_lba: u64::from_le_bytes(l),
            temperature_c: (d[200] != 0x80).then_some(t),
        })
    }
    /// The last SCT command is still running.
    pub fn in_progress(&self) -> bool {
        self.extended_status == 0xFFFF
    }
}

/// Read the SCT status (SMART READ LOG of log E0h).
pub fn sct_status(dev: &SgDevice) -> Result<SctStatus, AtaError> {
    let mut buf = vec![0u8; 512];
    let pt = AtaPassThrough::new(Protocol::PioDataIn, smart_read_log(SCT_COMMAND_LOG, 1));
    execute(
        dev,
        &pt,
        "SCT status (SMART READ LOG E0h)",
        AtaData::In(&mut buf),
    )?;
    SctStatus::parse(&buf).ok_or_else(|| AtaError::BadData("SCT status too short".into()))
}

// ---------------------------------------------------------------------------
// SANITIZE DEVICE
// ---------------------------------------------------------------------------

/// SANITIZE DEVICE subcommands (FEATURE field) and their LBA signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AtaSanitizeOp {
    /// 0000h SANITIZE STATUS EXT.
    Status,
    /// 0011h CRYPTO SCRAMBLE EXT, LBA 31:0 = 43727970h ("Cryp").
    CryptoScramble,
    /// 0012h BLOCK ERASE EXT, LBA 31:0 = 426B4572h ("BkEr").
    BlockErase,
    /// 0014h OVERWRITE EXT, LBA 47:32 = 4F57h ("OW"), LBA 31:0 = pattern.
    Overwrite,
    /// 0020h SANITIZE FREEZE LOCK EXT, LBA 31:0 = 46724C6Bh ("FrLk").
    FreezeLock,
}

/// SANITIZE DEVICE (B4h) taskfile builder (ACS-4 7.30).
#[derive(Debug, Clone, Copy)]
pub struct AtaSanitize {
    op: AtaSanitizeOp,
    pattern: u32,
    passes: u8,
    invert: bool,
    failure_mode: bool,
    clear_failed: bool,
    zone_no_reset: bool,
}

impl AtaSanitize {
    /// A subcommand with default options (1 overwrite pass, no inversion,
    /// failure mode 0).
    pub fn new(op: AtaSanitizeOp) -> Self {
        AtaSanitize {
            op,
            pattern: 0,
            passes: 1,
            invert: false,
            failure_mode: false,
            clear_failed: false,
            zone_no_reset: false,
        }
    }
    /// Overwrite pattern (OVERWRITE EXT, LBA 31:0).
    pub fn pattern(mut self, p: u32) -> Self {
        self.pattern = p;
        self
    }
    /// Overwrite passes 1..=16 (COUNT 3:0; 16 encodes as 0).
    pub fn passes(mut self, n: u8) -> Self {
        self.passes = n.clamp(1, 16);
        self
    }
    /// Invert the pattern between passes (COUNT bit 7).
    pub fn invert(mut self, on: bool) -> Self {
        self.invert = on;
        self
    }
    /// FAILURE MODE (COUNT bit 4).
    pub fn failure_mode(mut self, on: bool) -> Self {
        self.failure_mode = on;
        self
    }
    /// CLEAR SANITIZE OPERATION FAILED (status only, COUNT bit 0).
    pub fn clear_failed(mut self, on: bool) -> Self {
        self.clear_failed = on;
        self
    }
    /// ZONED NO RESET (COUNT bit 15).
    pub fn zone_no_reset(mut self, on: bool) -> Self {
        self.zone_no_reset = on;
        self
    }
    /// The taskfile (a 48-bit non-data command).
    pub fn build(&self) -> Taskfile {
        let znr = if self.zone_no_reset { 0x8000 } else { 0 };
        let fm = if self.failure_mode { 0x10 } else { 0 };
        let (feature, count, lba): (u16, u16, u64) = match self.op {
            AtaSanitizeOp::Status => (0x0000, u16::from(self.clear_failed), 0),
            AtaSanitizeOp::CryptoScramble => (0x0011, znr | fm, 0x4372_7970),
            AtaSanitizeOp::BlockErase => (0x0012, znr | fm, 0x426B_4572),
            AtaSanitizeOp::Overwrite => (
                0x0014,
                znr | fm | (if self.invert { 0x80 } else { 0 }) | u16::from(self.passes & 0x0F),
                (0x4F57u64 << 32) | u64::from(self.pattern),
            ),
            AtaSanitizeOp::FreezeLock => (0x0020, 0, 0x4672_4C6B),
        };
        Taskfile::new(command::SANITIZE_DEVICE)
            .feature(feature)
            .count(count)
            .lba(lba)
            .device(0x40)
    }
    /// The ATA PASS-THROUGH for it (non-data, EXTEND, CK_COND so that the
    /// status registers come back).
    pub fn pass_through(&self) -> AtaPassThrough {
        AtaPassThrough::new(Protocol::NonData, self.build())
            .extend(true)
            .ck_cond(true)
    }
}

/// SANITIZE STATUS EXT output (COUNT and LBA registers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AtaSanitizeStatus {
    /// SANITIZE OPERATION COMPLETED WITHOUT ERROR (COUNT bit 15).
    pub completed_ok: bool,
    /// SANITIZE IN PROGRESS (COUNT bit 14).
    pub in_progress: bool,
    /// SANITIZE FROZEN (COUNT bit 13).
    pub frozen: bool,
    /// SANITIZE ANTIFREEZE (COUNT bit 12).
    pub antifreeze: bool,
    /// Progress 0..=65535 of 65536 (LBA 15:0), meaningful while in progress.
    pub progress: u16,
}

impl AtaSanitizeStatus {
    /// From the returned registers.
    pub fn from_registers(r: &AtaRegisters) -> Self {
        AtaSanitizeStatus {
            completed_ok: r.count & 0x8000 != 0,
            in_progress: r.count & 0x4000 != 0,
            frozen: r.count & 0x2000 != 0,
            antifreeze: r.count & 0x1000 != 0,
            progress: (r.lba & 0xFFFF) as u16,
        }
    }
    /// Progress as a percentage.
    pub fn percent(&self) -> f64 {
        f64::from(self.progress) * 100.0 / 65536.0
    }
}

/// Send a SANITIZE DEVICE subcommand; returns the registers (decode the
/// status subcommand's with [`AtaSanitizeStatus::from_registers`]).
pub fn sanitize(dev: &SgDevice, s: &AtaSanitize) -> Result<Option<AtaRegisters>, AtaError> {
    let pt = s.pass_through();
    let name = match s.op {
        AtaSanitizeOp::Status => "SANITIZE STATUS EXT",
        AtaSanitizeOp::CryptoScramble => "CRYPTO SCRAMBLE EXT",
        AtaSanitizeOp::BlockErase => "BLOCK ERASE EXT",
        AtaSanitizeOp::Overwrite => "OVERWRITE EXT",
        AtaSanitizeOp::FreezeLock => "SANITIZE FREEZE LOCK EXT",
    };
    execute(dev, &pt, name, AtaData::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_class_ata_commands_match_acs_tables() {
        // (command, feature) pairs that change the medium or the drive.
        let writes: &[(u8, u8, &str)] = &[
            (0x06, 0x00, "DATA SET MANAGEMENT"),
            (0x30, 0x00, "WRITE SECTOR(S)"),
            (0x31, 0x00, "WRITE SECTOR(S) without retry"),
            (0x34, 0x00, "WRITE SECTOR(S) EXT"),
            (0x35, 0x00, "WRITE DMA EXT"),
            (0x37, 0x00, "SET MAX ADDRESS EXT"),
            (0x39, 0x00, "WRITE MULTIPLE EXT"),
            (0x3D, 0x00, "WRITE DMA FUA EXT"),
            (0x3F, 0x00, "WRITE LOG EXT"),
            (0x45, 0x00, "WRITE UNCORRECTABLE EXT"),
            (0x57, 0x00, "WRITE LOG DMA EXT"),
            (0x61, 0x00, "WRITE FPDMA QUEUED"),
            (0x64, 0x00, "SEND FPDMA QUEUED"),
            (0x92, 0x00, "DOWNLOAD MICROCODE"),
            (0x93, 0x00, "DOWNLOAD MICROCODE DMA"),
            (0xB0, 0xD4, "SMART EXECUTE OFF-LINE IMMEDIATE"),
            (0xB0, 0xD6, "SMART WRITE LOG"),
            (0xB1, 0xC0, "DEVICE CONFIGURATION RESTORE"),
            (0xB1, 0xC3, "DEVICE CONFIGURATION SET"),
            (0xB4, 0x11, "SANITIZE CRYPTO SCRAMBLE EXT"),
            (0xB4, 0x12, "SANITIZE BLOCK ERASE EXT"),
            (0xB4, 0x14, "SANITIZE OVERWRITE EXT"),
            (0xB4, 0x20, "SANITIZE FREEZE LOCK EXT"),
            (0xC5, 0x00, "WRITE MULTIPLE"),
            (0xCA, 0x00, "WRITE DMA"),
            (0xCE, 0x00, "WRITE MULTIPLE FUA EXT"),
            (0xF1, 0x00, "SECURITY SET PASSWORD"),
            (0xF3, 0x00, "SECURITY ERASE PREPARE"),
            (0xF4, 0x00, "SECURITY ERASE UNIT"),
            (0xF2, 0x00, "SECURITY UNLOCK"),
            (0xF5, 0x00, "SECURITY FREEZE LOCK"),
            (0xF6, 0x00, "SECURITY DISABLE PASSWORD"),
            (0xF9, 0x00, "SET MAX ADDRESS"),
        ];
        for &(c, f, name) in writes {
            assert!(modifies_medium(c, f), "{name} ({c:02X}h/{f:02X}h)");
        }
        let reads: &[(u8, u8, &str)] = &[
            (0x20, 0x00, "READ SECTOR(S)"),
            (0x24, 0x00, "READ SECTOR(S) EXT"),
            (0x25, 0x00, "READ DMA EXT"),
            (0x2F, 0x00, "READ LOG EXT"),
            (0x40, 0x00, "READ VERIFY SECTOR(S)"),
            (0x47, 0x00, "READ LOG DMA EXT"),
            (0x60, 0x00, "READ FPDMA QUEUED"),
            (0xB0, 0xD0, "SMART READ DATA"),
            (0xB0, 0xD5, "SMART READ LOG"),
            (0xB0, 0xDA, "SMART RETURN STATUS"),
            (0xB1, 0xC2, "DEVICE CONFIGURATION IDENTIFY"),
            (0xB4, 0x00, "SANITIZE STATUS EXT"),
            (0xC8, 0x00, "READ DMA"),
            (0xE5, 0x00, "CHECK POWER MODE"),
            (0xE7, 0x00, "FLUSH CACHE"),
            (0xEA, 0x00, "FLUSH CACHE EXT"),
            (0xEC, 0x00, "IDENTIFY DEVICE"),
            (0xF8, 0x00, "READ NATIVE MAX ADDRESS"),
            (0x27, 0x00, "READ NATIVE MAX ADDRESS EXT"),
        ];
        for &(c, f, name) in reads {
            assert!(!modifies_medium(c, f), "{name} ({c:02X}h/{f:02X}h)");
        }
        // The taskfiles this module builds classify as what they do.
        assert!(modifies_medium(
            command::SMART,
            smart_write_log(0xE0, 1).feature as u8
        ));
        assert!(!modifies_medium(
            command::SMART,
            smart_read_log(0xE0, 1).feature as u8
        ));
    }

    #[test]
    fn pass_through_16_layout_matches_sat5() {
        // READ SECTOR(S) EXT-like taskfile with every register distinct.
        let tf = Taskfile::new(0x24)
            .feature(0xF1F2)
            .count(0xC1C2)
            .lba(0x0000_A6A5_A4A3_A2A1)
            .device(0xE0);
        let c = AtaPassThrough::new(Protocol::PioDataIn, tf)
            .extend(true)
            .ck_cond(true)
            .build16();
        // byte 1: MULTIPLE_COUNT 0, PROTOCOL 4 (<<1), EXTEND 1 => 0x09.
        // byte 2: OFF_LINE 0, CK_COND 1 (bit 5), T_DIR 1 (bit 3), BYT_BLOK 1
        // (bit 2), T_LENGTH 2 => 0x2E.
        assert_eq!(
            c,
            [
                0x85, 0x09, 0x2E, 0xF1, 0xF2, 0xC1, 0xC2, // opcode .. COUNT 7:0
                0xA4, 0xA1, // LBA 31:24, LBA 7:0
                0xA5, 0xA2, // LBA 39:32, LBA 15:8
                0xA6, 0xA3, // LBA 47:40, LBA 23:16
                0xE0, 0x24, 0x00
            ]
        );
        let nd = AtaPassThrough::new(Protocol::NonData, Taskfile::new(0xE7)).build16();
        assert_eq!(nd[1], 3 << 1);
        assert_eq!(nd[2], 0x04); // BYT_BLOK default, T_LENGTH 0, T_DIR 0
        let out = AtaPassThrough::new(Protocol::PioDataOut, Taskfile::new(0xB0)).build16();
        assert_eq!(out[1], 5 << 1);
        assert_eq!(out[2], 0x06); // T_DIR 0, BYT_BLOK 1, T_LENGTH 2
        let dma = AtaPassThrough::new(Protocol::Dma, Taskfile::new(0xC8))
            .multiple_count(3)
            .off_line(2)
            .build16();
        assert_eq!(dma[1], (3 << 5) | (6 << 1));
        assert_eq!(dma[2], 0x80 | 0x0E);
    }

    #[test]
    fn pass_through_12_layout_matches_sat5() {
        let tf = Taskfile::new(0xEC)
            .count(1)
            .lba(0x0033_2211)
            .device(0xA0)
            .feature(0x05);
        let c = AtaPassThrough::new(Protocol::PioDataIn, tf)
            .build12()
            .unwrap();
        assert_eq!(
            c,
            [0xA1, 0x08, 0x0E, 0x05, 0x01, 0x11, 0x22, 0x33, 0xA0, 0xEC, 0, 0]
        );
        assert!(AtaPassThrough::new(Protocol::PioDataIn, tf)
            .extend(true)
            .build12()
            .is_none());
        assert!(AtaPassThrough::new(Protocol::PioDataIn, tf.count(0x100))
            .build12()
            .is_none());
    }

    /// Put an ATA string into IDENTIFY words: first character in the high byte.
    fn put_str(buf: &mut [u8], word: usize, s: &str, words: usize) {
        let mut b = s.as_bytes().to_vec();
        b.resize(words * 2, b' ');
        for i in 0..words {
            buf[(word + i) * 2] = b[2 * i + 1];
            buf[(word + i) * 2 + 1] = b[2 * i];
        }
    }
    fn put_word(buf: &mut [u8], word: usize, v: u16) {
        buf[word * 2..word * 2 + 2].copy_from_slice(&v.to_le_bytes());
    }

    #[test]
    fn identify_device_decodes_acs_words() {
        let mut d = vec![0u8; 512];
        put_str(&mut d, 27, "Samsung SSD 870 EVO 1TB", 20);
        put_str(&mut d, 10, "S6PTNZ0R123456A", 10);
        put_str(&mut d, 23, "SVT02B6Q", 4);
        put_word(&mut d, 59, 0xF000 | 0x0110); // sanitize + crypto + overwrite + block
        put_word(&mut d, 60, 0xFFFF);
        put_word(&mut d, 61, 0x0FFF); // 28-bit capacity 0x0FFFFFFF
        put_word(&mut d, 69, (1 << 14) | (1 << 5));
        put_word(&mut d, 80, 0x07F0);
        put_word(&mut d, 82, 0x0003); // SMART, security
        put_word(&mut d, 83, 1 << 10); // 48-bit
        put_word(&mut d, 89, 0x0002); // 4 minutes
        put_word(&mut d, 90, 0x8000 | 0x0100); // extended format: 512 minutes
                                               // 1,953,525,168 sectors in words 100-103.
        let cap: u64 = 1_953_525_168;
        for i in 0..4 {
            put_word(&mut d, 100 + i, (cap >> (16 * i)) as u16);
        }
        put_word(&mut d, 106, 0x4000 | (1 << 13) | 3); // 8 logical per physical
        put_word(&mut d, 128, 0x0001 | 0x0008 | 0x0020); // supported, frozen, enhanced
        put_word(&mut d, 169, 1);
        put_word(&mut d, 206, 0x0001 | 0x0004 | 0x0008 | 0x0010 | 0x0020);
        put_word(&mut d, 217, 1);
        put_word(&mut d, 255, 0x00A5);
        let sum = d.iter().fold(0u8, |a, &b| a.wrapping_add(b));
        d[511] = 0u8.wrapping_sub(sum);
        let id = IdentifyDevice::parse(&d).unwrap();
        assert_eq!(id.model, "Samsung SSD 870 EVO 1TB");
        assert_eq!(id.serial, "S6PTNZ0R123456A");
        assert_eq!(id.firmware, "SVT02B6Q");
        assert_eq!(id.capacity_sectors, cap);
        assert_eq!(id.logical_sector_size, 512);
        assert_eq!(id.physical_sector_size, 4096);
        assert!(id.lba48 && id.sct_supported && id.sct_write_same && id.sct_error_recovery);
        assert!(
            id.sanitize && id.sanitize_crypto && id.sanitize_overwrite && id.sanitize_block_erase
        );
        assert!(id.security_supported && id.security_frozen && id.security_enhanced_erase);
        assert!(!id.security_enabled && !id.security_locked);
        assert_eq!(id.security_erase_minutes, Some(4));
        assert_eq!(id.enhanced_erase_minutes, Some(512));
        assert!(id.trim && id.trim_deterministic && id.trim_reads_zero);
        assert!(id.smart);
        assert_eq!(id.rotation_rate, 1);
        assert_eq!(id.checksum_ok, Some(true));
        // Corrupt one byte: the checksum fails.
        d[100] ^= 1;
        assert_eq!(IdentifyDevice::parse(&d).unwrap().checksum_ok, Some(false));
    }

    #[test]
    fn identify_device_28bit_and_large_logical_sector() {
        let mut d = vec![0u8; 512];
        put_word(&mut d, 60, 0x5678);
        put_word(&mut d, 61, 0x0012);
        put_word(&mut d, 106, 0x4000 | (1 << 12));
        // 4096-byte logical sectors = 2048 words.
        put_word(&mut d, 117, 2048);
        put_word(&mut d, 118, 0);
        put_word(&mut d, 206, 0x0004); // Write Same bit without SCT: not usable
        let id = IdentifyDevice::parse(&d).unwrap();
        assert_eq!(id.capacity_sectors, 0x0012_5678);
        assert!(!id.lba48);
        assert_eq!(id.logical_sector_size, 4096);
        assert_eq!(id.physical_sector_size, 4096);
        assert!(!id.sct_write_same);
        assert_eq!(id.checksum_ok, None);
        assert!(IdentifyDevice::parse(&d[..500]).is_none());
    }

    #[test]
    fn identify_device_sector_sizes_that_are_not_sizes() {
        // Found by the fuzz target `device_data`: words 117-118 of 0 gave a
        // logical sector of 0 bytes; 0x8000_0000 words overflowed (a panic
        // in debug builds, 0 bytes in release); a large exponent shifted
        // the physical size past 32 bits, below the logical size.
        let mut d = vec![0u8; 512];
        put_word(&mut d, 106, 0x4000 | (1 << 13) | (1 << 12) | 3);
        for (w117, w118, logical, physical) in [
            (0u16, 0u16, 512, 4096),
            (0x0000, 0x8000, 512, 4096),
            (0xFFFF, 0xFFFF, 512, 4096),
            (100, 0, 512, 4096),
            (0x0000, 0x1000, 0x2000_0000, 0x2000_0000),
        ] {
            put_word(&mut d, 117, w117);
            put_word(&mut d, 118, w118);
            let id = IdentifyDevice::parse(&d).unwrap();
            assert_eq!(
                (id.logical_sector_size, id.physical_sector_size),
                (logical, physical),
                "words {w117:#x} {w118:#x}"
            );
        }
    }

    #[test]
    fn sct_write_same_key_sector_layout() {
        let b = SctWriteSame::new(
            SctWriteSameFunction::PatternForeground,
            Lba(0x0000_1122_3344_5566),
            BlockCount(0x0102_0304),
        )
        .pattern(0xDEAD_BEEF)
        .build();
        // word 0 action 0002h, word 1 function 0101h (little-endian words).
        assert_eq!(&b[0..4], &[0x02, 0x00, 0x01, 0x01]);
        // words 2-5 start LBA.
        assert_eq!(&b[4..12], &[0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 0]);
        // words 6-9 count.
        assert_eq!(&b[12..20], &[0x04, 0x03, 0x02, 0x01, 0, 0, 0, 0]);
        // words 10-11 pattern.
        assert_eq!(&b[20..24], &[0xEF, 0xBE, 0xAD, 0xDE]);
        assert!(b[24..].iter().all(|&x| x == 0));
        let m = SctWriteSame::new(
            SctWriteSameFunction::MultiSectorBackground,
            Lba(0),
            BlockCount(0),
        )
        .pattern_sectors(8)
        .build();
        assert_eq!(&m[2..4], &[0x03, 0x00]);
        assert_eq!(&m[24..32], &[8, 0, 0, 0, 0, 0, 0, 0]);
        for (f, code) in [
            (SctWriteSameFunction::PatternBackground, 0x0001),
            (SctWriteSameFunction::SectorBackground, 0x0002),
            (SctWriteSameFunction::MultiSectorBackground, 0x0003),
            (SctWriteSameFunction::PatternForeground, 0x0101),
            (SctWriteSameFunction::SectorForeground, 0x0102),
            (SctWriteSameFunction::MultiSectorForeground, 0x0103),
        ] {
            assert_eq!(f.code(), code);
            assert_eq!(f.is_background(), code < 0x100);
        }
    }

    #[test]
    fn smart_log_taskfiles_and_sct_cdb() {
        let tf = smart_write_log(0xE0, 1);
        assert_eq!(
            (tf.command, tf.feature, tf.count, tf.lba),
            (0xB0, 0xD6, 1, 0xC2_4FE0)
        );
        let c = AtaPassThrough::new(Protocol::PioDataOut, tf)
            .ck_cond(true)
            .build16();
        // LBA 7:0 at byte 8 = E0h (log), 15:8 at byte 10 = 4Fh, 23:16 at byte 12 = C2h.
        assert_eq!((c[8], c[10], c[12]), (0xE0, 0x4F, 0xC2));
        assert_eq!((c[4], c[6], c[14]), (0xD6, 0x01, 0xB0));
        assert_eq!(c[2], 0x26); // CK_COND, T_DIR out, BYT_BLOK, T_LENGTH count
        let r = smart_read_log(0xE0, 1);
        assert_eq!(r.feature, 0xD5);
    }

    #[test]
    fn sct_write_same_of_one_sector_key_and_data_transfer() {
        // ACS-4 SCT Write Same: function 0102h = repeat the one logical
        // sector sent through the SCT data transfer, foreground; the
        // pattern and pattern-length words stay zero.
        let k = SctWriteSame::new(
            SctWriteSameFunction::SectorForeground,
            Lba(80_000),
            BlockCount(2_048),
        )
        .build();
        assert_eq!(&k[0..4], &[0x02, 0x00, 0x02, 0x01]);
        assert_eq!(&k[4..12], &[0x80, 0x38, 0x01, 0, 0, 0, 0, 0]);
        assert_eq!(&k[12..20], &[0x00, 0x08, 0, 0, 0, 0, 0, 0]);
        assert!(k[20..].iter().all(|&x| x == 0));
        // The data: SMART WRITE LOG (B0h/D6h) to log E1h, one 512-byte
        // page per 512 bytes of the sector, PIO data-out, CK_COND.
        let c = sct_data_out(512).unwrap().build16();
        assert_eq!(c[0], 0x85);
        assert_eq!(c[1] >> 1 & 0x0F, 5, "PIO data-out");
        assert_eq!(c[2], 0x26);
        assert_eq!((c[4], c[6], c[14]), (0xD6, 0x01, 0xB0));
        assert_eq!((c[8], c[10], c[12]), (0xE1, 0x4F, 0xC2));
        // A 4096-byte sector is eight pages; no page, or a part, is refused.
        assert_eq!(sct_data_out(4096).unwrap().build16()[6], 8);
        assert!(sct_data_out(0).is_none());
        assert!(sct_data_out(520).is_none());
        assert!(sct_data_out(256 * 512).is_none());
    }

    #[test]
    fn sct_status_decodes() {
        let mut d = vec![0u8; 512];
        d[0..2].copy_from_slice(&3u16.to_le_bytes());
        d[10] = 5;
        d[14..16].copy_from_slice(&0xFFFFu16.to_le_bytes());
        d[16..18].copy_from_slice(&2u16.to_le_bytes());
        d[18..20].copy_from_slice(&1u16.to_le_bytes());
        d[40..48].copy_from_slice(&123_456_789u64.to_le_bytes());
        d[200] = 41;
        let s = SctStatus::parse(&d).unwrap();
        assert_eq!(s.format_version, 3);
        assert_eq!(s.device_state, 5);
        assert!(s.in_progress());
        assert_eq!((s.action_code, s.function_code), (2, 1));
        assert_eq!(s.current_lba, 123_456_789);
        assert_eq!(s.temperature_c, Some(41));
        d[200] = 0x80;
        assert_eq!(SctStatus::parse(&d).unwrap().temperature_c, None);
    }

    #[test]
    fn sanitize_taskfiles_match_acs() {
        let s = AtaSanitize::new(AtaSanitizeOp::CryptoScramble).build();
        assert_eq!((s.command, s.feature, s.lba), (0xB4, 0x0011, 0x4372_7970));
        // The signature spells "Cryp" in ASCII.
        assert_eq!(&(s.lba as u32).to_be_bytes(), b"Cryp");
        let b = AtaSanitize::new(AtaSanitizeOp::BlockErase)
            .failure_mode(true)
            .build();
        assert_eq!(&(b.lba as u32).to_be_bytes(), b"BkEr");
        assert_eq!((b.feature, b.count), (0x0012, 0x0010));
        let o = AtaSanitize::new(AtaSanitizeOp::Overwrite)
            .pattern(0xAABB_CCDD)
            .passes(3)
            .invert(true)
            .build();
        assert_eq!(o.feature, 0x0014);
        assert_eq!(o.count, 0x0083);
        assert_eq!(o.lba >> 32, 0x4F57);
        assert_eq!(&((o.lba >> 32) as u16).to_be_bytes(), b"OW");
        assert_eq!(o.lba & 0xFFFF_FFFF, 0xAABB_CCDD);
        assert_eq!(
            AtaSanitize::new(AtaSanitizeOp::Overwrite)
                .passes(16)
                .build()
                .count
                & 0x0F,
            0
        );
        let st = AtaSanitize::new(AtaSanitizeOp::Status)
            .clear_failed(true)
            .build();
        assert_eq!((st.feature, st.count, st.lba), (0, 1, 0));
        let f = AtaSanitize::new(AtaSanitizeOp::FreezeLock).build();
        assert_eq!(&(f.lba as u32).to_be_bytes(), b"FrLk");
        let cdb = AtaSanitize::new(AtaSanitizeOp::BlockErase)
            .pass_through()
            .build16();
        assert_eq!(cdb[1], (3 << 1) | 1); // non-data, EXTEND
        assert_eq!(cdb[2] & 0x20, 0x20); // CK_COND
        assert_eq!(cdb[14], 0xB4);
        assert_eq!((cdb[3], cdb[4]), (0x00, 0x12));
    }

    #[test]
    fn sanitize_status_from_registers() {
        let r = AtaRegisters {
            status: 0x50,
            error: 0,
            count: 0x4000,
            lba: 0x8000,
            device: 0,
            partial: false,
        };
        let s = AtaSanitizeStatus::from_registers(&r);
        assert!(s.in_progress && !s.completed_ok && !s.frozen);
        assert!((s.percent() - 50.0).abs() < 1e-9);
        let r2 = AtaRegisters {
            count: 0x8000 | 0x2000,
            ..r
        };
        let s2 = AtaSanitizeStatus::from_registers(&r2);
        assert!(s2.completed_ok && s2.frozen && !s2.in_progress);
    }

    fn descriptor_sense(key: u8, asc: u8, ascq: u8, status: u8, error: u8, count: u16) -> Vec<u8> {
        let c = count.to_be_bytes();
        let mut s = vec![0x72, key, asc, ascq, 0, 0, 0, 14];
        s.extend_from_slice(&[
            0x09, 0x0C, 0x00, error, c[0], c[1], 0, 0x11, 0, 0x22, 0, 0x33, 0x40, status,
        ]);
        s
    }

    #[test]
    fn interpret_maps_sense_to_outcomes() {
        let ok = || Ok(());
        // CK_COND success: RECOVERED ERROR 00/1D with registers.
        let s = descriptor_sense(0x01, 0x00, 0x1D, 0x50, 0x00, 0x4000);
        let r = interpret(&s, 2, "X", ok).unwrap().unwrap();
        assert_eq!((r.status, r.count, r.lba), (0x50, 0x4000, 0x33_2211));
        // ATA error: ABORTED COMMAND with ERR and ABRT.
        let s = descriptor_sense(0x0B, 0x00, 0x00, 0x51, 0x04, 0);
        let e = interpret(&s, 2, "SCT Write Same", ok).unwrap_err();
        assert!(e.is_not_supported());
        assert!(e.to_string().contains("ABRT"), "{e}");
        // Invalid opcode: not an ATA device.
        let mut f = vec![0u8; 18];
        f[0] = 0x70;
        f[2] = 0x05;
        f[7] = 10;
        f[12] = 0x20;
        let e = interpret(&f, 2, "IDENTIFY DEVICE", ok).unwrap_err();
        assert!(matches!(e, AtaError::PassThroughUnsupported { .. }));
        assert!(e
            .to_string()
            .starts_with("ATA PASS-THROUGH not supported by this device"));
        // libata with fixed-format sense (its default): an aborted command is
        // ABORTED COMMAND 00/00, the registers in INFORMATION (SAT-5
        // 12.2.2.6): ERROR 04h, STATUS 51h, DEVICE 40h, COUNT 01h.
        let mut fx = vec![0u8; 18];
        fx[0] = 0x70;
        fx[2] = 0x0B;
        fx[3..7].copy_from_slice(&[0x04, 0x51, 0x40, 0x01]);
        fx[7] = 10;
        fx[9..12].copy_from_slice(&[0xE0, 0x4F, 0xC2]);
        match interpret(&fx, 2, "SCT status", ok).unwrap_err() {
            AtaError::Device { regs, .. } => {
                assert_eq!(
                    (regs.error, regs.status, regs.device, regs.count),
                    (0x04, 0x51, 0x40, 1)
                );
                assert_eq!(regs.lba, 0xC2_4FE0);
                assert!(regs.partial);
            }
            other => panic!("expected an ATA device error, got {other:?}"),
        }
        // Fixed format, CK_COND success (RECOVERED ERROR 00/1Dh), no error bits.
        fx[2] = 0x01;
        fx[3..7].copy_from_slice(&[0x00, 0x50, 0x40, 0x00]);
        fx[12] = 0x00;
        fx[13] = 0x1D;
        let r = interpret(&fx, 2, "X", ok).unwrap().unwrap();
        assert_eq!(r.status, 0x50);
        // ILLEGAL REQUEST 24/00 (a SATL refusing a field) stays a SCSI error.
        let mut ir = vec![0u8; 18];
        ir[0] = 0x70;
        ir[2] = 0x05;
        ir[7] = 10;
        ir[12] = 0x24;
        let e = interpret(&ir, 2, "X", || {
            Err(SgError::InvalidRequest("checked".into()))
        })
        .unwrap_err();
        assert!(
            matches!(e, AtaError::Scsi(SgError::InvalidRequest(_))),
            "{e:?}"
        );
        // What Linux 6.1 libata returned in a QEMU guest for SMART READ LOG
        // E0h that the (QEMU AHCI) disk aborted: ERROR 04h, STATUS 41h,
        // DEVICE 00h, COUNT 01h at bytes 8-11, LBA 7:0 = E0h at byte 17.
        let seen: Vec<u8> = (0..18)
            .map(|i| {
                u8::from_str_radix(
                    &"70000b000000000a044100010000000000e0"[2 * i..2 * i + 2],
                    16,
                )
                .unwrap()
            })
            .collect();
        match interpret(&seen, 2, "SCT status", ok).unwrap_err() {
            AtaError::Device { regs, .. } => {
                assert_eq!(
                    (regs.error, regs.status, regs.device, regs.count),
                    (0x04, 0x41, 0x00, 1)
                );
                assert_eq!(regs.lba & 0xFF, 0xE0);
            }
            other => panic!("expected an ATA device error, got {other:?}"),
        }
        // Plain GOOD.
        assert_eq!(interpret(&[], 0, "X", ok).unwrap(), None);
    }
}
