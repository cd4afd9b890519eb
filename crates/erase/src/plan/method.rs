//! The erase methods, and how `--method auto` chooses one per drive.
//!
//! A method is only worth using if it leaves the requested pattern on every
//! block, and the fastest such method is the one that moves the fewest bytes
//! over the host bus: a command the drive executes itself (WRITE SAME,
//! Write Zeroes, SCT Write Same, an offloaded BLKZEROOUT) sends one block or
//! none per range, while `stream` sends every byte. [`choose`] turns a
//! drive's probed capabilities and the pattern into a method and a sentence
//! saying why; [`check_available`] turns an explicitly requested method the
//! drive lacks into a clear error instead of a silent no-op.

use std::fmt;
use std::str::FromStr;

use drivelab_device::ata_security::SecurityState;
use drivelab_device::caps::{Capabilities, Transport};
use drivelab_patterns::Pattern;
use serde::{Deserialize, Serialize};

use crate::EraseError;

/// One way of overwriting or sanitizing a whole drive. Serialised (reports,
/// certificates) by its command-line name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Choose per drive (see [`choose`]); what a stored outcome that names
    /// no method reads as.
    #[default]
    Auto,
    /// The `BLKZEROOUT` ioctl (the kernel's `blkdev_issue_zeroout`):
    /// offloaded as REQ_OP_WRITE_ZEROES when the queue's
    /// `write_zeroes_max_bytes` > 0, else the kernel writes zero pages.
    Zeroout,
    /// SCSI WRITE SAME(16) (or (10)) through SG_IO with one pattern block.
    WriteSame,
    /// ATA SCT Write Same (foreground, 32-bit pattern) through SAT.
    SctWriteSame,
    /// NVMe Write Zeroes.
    NvmeWriteZeroes,
    /// NVMe Format NVM with a secure-erase setting (user data, or crypto
    /// with `crypto`).
    NvmeFormat,
    /// NVMe Sanitize (block erase, or crypto erase with `crypto`).
    NvmeSanitize,
    /// ATA SANITIZE (overwrite with a 32-bit pattern, block erase, or crypto
    /// scramble with `crypto`).
    AtaSanitize,
    /// SCSI SANITIZE (SBC-4 5.30): BLOCK ERASE, OVERWRITE with a pattern of
    /// up to a block, or CRYPTOGRAPHIC ERASE with `crypto`.
    ScsiSanitize,
    /// ATA SECURITY ERASE UNIT, normal mode, through SAT (temporary user
    /// password, ERASE PREPARE, ERASE UNIT): the drive writes zeroes over
    /// every user-addressable sector.
    AtaSecurityErase,
    /// ATA SECURITY ERASE UNIT, enhanced mode: the drive's own pattern over
    /// all user data, reallocated sectors included.
    AtaSecurityEraseEnhanced,
    /// BLKDISCARD over the whole drive: only where the drive guarantees that
    /// discarded blocks read back as zeroes.
    Discard,
    /// io_uring O_DIRECT writes of the pattern, every byte sent by the host.
    Stream,
}

/// Every concrete method, in the order `--help` lists them.
pub const ALL: [Method; 13] = [
    Method::Auto,
    Method::Zeroout,
    Method::WriteSame,
    Method::SctWriteSame,
    Method::NvmeWriteZeroes,
    Method::NvmeFormat,
    Method::NvmeSanitize,
    Method::AtaSanitize,
    Method::ScsiSanitize,
    Method::AtaSecurityErase,
    Method::AtaSecurityEraseEnhanced,
    Method::Discard,
    Method::Stream,
];

impl Method {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Auto => "auto",
            Method::Zeroout => "zeroout",
            Method::WriteSame => "write-same",
            Method::SctWriteSame => "sct-write-same",
            Method::NvmeWriteZeroes => "nvme-write-zeroes",
            Method::NvmeFormat => "nvme-format",
            Method::NvmeSanitize => "nvme-sanitize",
            Method::AtaSanitize => "ata-sanitize",
            Method::ScsiSanitize => "scsi-sanitize",
            Method::AtaSecurityErase => "ata-security-erase",
            Method::AtaSecurityEraseEnhanced => "ata-security-erase-enhanced",
            Method::Discard => "discard",
            Method::Stream => "stream",
        }
    }

    /// Whether the method is one command for the whole drive (no ranges,
    /// nothing to resume part-way, no transfer length).
    pub fn whole_device(self) -> bool {
        matches!(
            self,
            Method::NvmeFormat
                | Method::NvmeSanitize
                | Method::AtaSanitize
                | Method::ScsiSanitize
                | Method::AtaSecurityErase
                | Method::AtaSecurityEraseEnhanced
        )
    }

    /// Whether the data the method leaves is the drive's choice, not the
    /// pattern (so a read-back has nothing to compare against).
    pub fn leaves_indeterminate_data(self, crypto: bool) -> bool {
        (crypto && self.whole_device()) || self == Method::AtaSecurityEraseEnhanced
    }

    /// NIST SP 800-88 category of the method ("Clear" for overwrites the
    /// host can address, "Purge" for device sanitize commands).
    ///
    /// ATA security erase: SP 800-88 Rev. 1 (glossary, "Secure Erase";
    /// Appendix A) describes the normal mode as covering only LBA 0 to the
    /// native max address — the sectors an overwrite reaches, so Clear —
    /// and the enhanced mode as overwriting all user data including
    /// reallocated sectors, listed as a Purge for ATA drives, with the
    /// caution that what it does is vendor- and model-specific (on flash,
    /// SANITIZE BLOCK ERASE / CRYPTO SCRAMBLE are the dependable purge).
    /// So: normal = Clear, enhanced = Purge.
    pub fn nist_category(self, crypto: bool) -> &'static str {
        match self {
            Method::NvmeSanitize | Method::AtaSanitize | Method::ScsiSanitize => "Purge",
            Method::NvmeFormat if crypto => "Purge",
            Method::AtaSecurityEraseEnhanced => "Purge",
            _ => "Clear",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = EraseError;
    fn from_str(s: &str) -> Result<Method, EraseError> {
        ALL.iter()
            .copied()
            .find(|m| m.name() == s)
            .ok_or_else(|| EraseError::UnknownMethod(s.to_string()))
    }
}

/// What a drive offers, reduced to what the method choice needs. Built from
/// a [`Capabilities`] probe (or by hand in tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offers {
    /// Transport, for messages ("scsi", "ata-via-sat", "nvme", "other").
    pub transport: String,
    /// BLKZEROOUT is offloaded (write_zeroes_max_bytes > 0).
    pub zeroout_offload: bool,
    /// write_zeroes_max_bytes, bytes (0 = not offloaded).
    pub write_zeroes_max_bytes: u64,
    /// SCSI WRITE SAME(16) usable.
    pub write_same_16: bool,
    /// SCSI WRITE SAME(10) usable.
    pub write_same_10: bool,
    /// MAXIMUM WRITE SAME LENGTH, blocks.
    pub max_write_same_blocks: Option<u64>,
    /// ATA SCT Write Same.
    pub sct_write_same: bool,
    /// NVMe Write Zeroes.
    pub nvme_write_zeroes: bool,
    /// NVMe Format NVM (and crypto erase).
    pub nvme_format: bool,
    /// NVMe Format crypto erase.
    pub nvme_format_crypto: bool,
    /// NVMe Sanitize block erase / crypto erase / overwrite.
    pub nvme_sanitize: (bool, bool, bool),
    /// A Format NVM with a secure erase reaches every namespace of the
    /// controller (FNA bit 0 or 1).
    pub nvme_format_all_namespaces: bool,
    /// The controller's active namespaces other than the drive's (None:
    /// not NVMe, or the list could not be read).
    pub nvme_other_namespaces: Option<Vec<u32>>,
    /// ATA Sanitize overwrite / block erase / crypto scramble.
    pub ata_sanitize: (bool, bool, bool),
    /// SCSI SANITIZE overwrite / block erase / cryptographic erase, as
    /// REPORT SUPPORTED OPERATION CODES reported them.
    pub scsi_sanitize: (bool, bool, bool),
    /// The ATA Security feature set state (IDENTIFY words 82, 89, 90,
    /// 128); None when the drive is not ATA or IDENTIFY failed.
    pub ata_security: Option<SecurityState>,
    /// Discard works.
    pub discard: bool,
    /// Discarded blocks read back as zeroes.
    pub reads_zero_after_discard: bool,
}

impl Offers {
    /// Reduce a probe result.
    pub fn from_caps(c: &Capabilities) -> Offers {
        let transport = match c.transport {
            Transport::Scsi => "scsi",
            Transport::AtaViaSat => "ata-via-sat",
            Transport::Nvme => "nvme",
            Transport::Other => "other",
        };
        Offers {
            transport: transport.to_string(),
            zeroout_offload: c.blk_zeroout_offload,
            write_zeroes_max_bytes: c
                .sysfs
                .as_ref()
                .and_then(|s| s.write_zeroes_max_bytes)
                .unwrap_or(0),
            write_same_16: c.scsi_write_same_16,
            write_same_10: c.scsi_write_same_10,
            max_write_same_blocks: c.max_write_same_blocks,
            sct_write_same: c.ata_sct_write_same,
            nvme_write_zeroes: c.nvme_write_zeroes,
            nvme_format: c.nvme_format.supported,
            nvme_format_crypto: c.nvme_format.crypto_erase,
            nvme_format_all_namespaces: c.nvme_format.all_namespaces
                || c.nvme_format.secure_erase_all_namespaces,
            nvme_other_namespaces: c.nvme_other_namespaces.clone(),
            nvme_sanitize: (
                c.nvme_sanitize.block,
                c.nvme_sanitize.crypto,
                c.nvme_sanitize.overwrite,
            ),
            ata_sanitize: (
                c.ata_sanitize.overwrite,
                c.ata_sanitize.block,
                c.ata_sanitize.crypto,
            ),
            scsi_sanitize: (
                c.scsi_sanitize.overwrite,
                c.scsi_sanitize.block,
                c.scsi_sanitize.crypto,
            ),
            ata_security: c.ata_identify.as_ref().map(|i| i.security),
            discard: c.discard,
            reads_zero_after_discard: c.reads_zero_after_unmap,
        }
    }
}

/// A method chosen for one drive, with the reason in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The concrete method (never `Auto`).
    pub method: Method,
    /// Why (one sentence, for the plan and the certificate).
    pub reason: String,
}

/// The 32-bit value a pattern repeats, when every block is that dword
/// repeated (what SCT Write Same and sanitize overwrite can write), as the
/// little-endian word whose bytes land first on the medium.
pub fn pattern_dword(p: &Pattern, block_size: usize) -> Option<u32> {
    if !p.is_periodic() {
        return None;
    }
    let b: Vec<u8> = (0..4).map(|i| p.periodic_byte(i)).collect::<Option<_>>()?;
    for i in 0..block_size {
        if p.periodic_byte(i) != Some(b[i % 4]) {
            return None;
        }
    }
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The SCSI SANITIZE service action an erase sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScsiSanitizeAction {
    /// CRYPTOGRAPHIC ERASE (`--crypto`).
    Crypto,
    /// BLOCK ERASE: the zero pattern on a drive that offers it.
    BlockErase,
    /// OVERWRITE with this 32-bit word (its little-endian bytes, the order
    /// they land on the medium, are the initialization pattern).
    Overwrite(u32),
}

/// Which SCSI SANITIZE service action leaves `pattern` on a drive offering
/// `o` (crypto: the cryptographic erase); Err(why) when none does. The
/// plan's check and the erase itself both ask here, so they agree.
///
/// The zero pattern is a BLOCK ERASE where the drive offers it, else an
/// OVERWRITE with zeroes; a pattern that is a repeated 32-bit word is an
/// OVERWRITE.
pub fn scsi_sanitize_action(
    o: &Offers,
    pattern: &Pattern,
    block_size: usize,
    crypto: bool,
) -> Result<ScsiSanitizeAction, String> {
    let (ow, block, cr) = o.scsi_sanitize;
    if crypto {
        return if cr {
            Ok(ScsiSanitizeAction::Crypto)
        } else {
            Err("the drive does not report SANITIZE CRYPTOGRAPHIC ERASE (REPORT SUPPORTED OPERATION CODES); drop --crypto".to_string())
        };
    }
    if !(ow || block) {
        return Err(format!(
            "the drive does not report SCSI SANITIZE BLOCK ERASE or OVERWRITE as supported (REPORT SUPPORTED OPERATION CODES, transport {})",
            o.transport
        ));
    }
    match pattern_dword(pattern, block_size) {
        Some(0) if block => Ok(ScsiSanitizeAction::BlockErase),
        Some(w) if ow => Ok(ScsiSanitizeAction::Overwrite(w)),
        _ => Err(format!(
            "the drive offers no SCSI SANITIZE action that leaves pattern {pattern} ({}); use write-same or stream",
            if ow {
                "OVERWRITE repeats a 32-bit word here"
            } else {
                "BLOCK ERASE leaves zeroes"
            }
        )),
    }
}

/// The NVMe Sanitize action an erase sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvmeSanitizeAction {
    /// Crypto Erase (`--crypto`).
    Crypto,
    /// Block Erase: the zero pattern on a drive that offers it.
    BlockErase,
    /// Overwrite, one pass, with this 32-bit word (CDW11; its
    /// little-endian bytes are the order they land on the medium).
    Overwrite(u32),
}

/// Which NVMe Sanitize action leaves `pattern` on a drive offering `o`
/// (SANICAP; crypto: the crypto erase); Err(why) when none does. The
/// plan's check and the erase itself both ask here, so they agree: the
/// zero pattern is a Block Erase where the drive offers it, else an
/// Overwrite with zeroes; a pattern that repeats a 32-bit word is an
/// Overwrite.
pub fn nvme_sanitize_action(
    o: &Offers,
    pattern: &Pattern,
    block_size: usize,
    crypto: bool,
) -> Result<NvmeSanitizeAction, String> {
    let (block, cr, ow) = o.nvme_sanitize;
    if crypto {
        return if cr {
            Ok(NvmeSanitizeAction::Crypto)
        } else {
            Err(
                "the drive does not support Sanitize crypto erase (SANICAP); drop --crypto"
                    .to_string(),
            )
        };
    }
    if !(block || ow) {
        return Err(format!(
            "the drive does not support Sanitize block erase or overwrite (SANICAP, transport {})",
            o.transport
        ));
    }
    match pattern_dword(pattern, block_size) {
        Some(0) if block => Ok(NvmeSanitizeAction::BlockErase),
        Some(w) if ow => Ok(NvmeSanitizeAction::Overwrite(w)),
        _ => Err(format!(
            "nvme-sanitize cannot leave pattern {pattern} ({}); use write-same or stream for other patterns",
            if ow {
                "its overwrite repeats a 32-bit word"
            } else {
                "the drive's block erase leaves zeroes and it offers no overwrite"
            }
        )),
    }
}

/// Whether the pattern is all zero bytes.
pub fn is_zero_pattern(p: &Pattern, block_size: usize) -> bool {
    pattern_dword(p, block_size) == Some(0)
}

/// Pick the fastest method that writes `pattern` on a drive with `offers`.
/// Device sanitize and format commands are never picked automatically: they
/// purge (and may leave indeterminate data), so they must be asked for.
///
/// Nor is ATA security erase, though its normal mode writes zeroes: it
/// must set a user password on the drive (a power loss mid-erase leaves
/// the drive locked with it), cannot be stopped once sent, gives no
/// progress, and on flash its effect is vendor-specific; an offloaded
/// zero-write (or SCT Write Same) reaches the same blocks without any of
/// that. It is there for the user who asks for it, and for `season`'s
/// purge when nothing stronger exists.
pub fn choose(o: &Offers, pattern: &Pattern, block_size: usize) -> Choice {
    let zero = is_zero_pattern(pattern, block_size);
    if zero && o.nvme_write_zeroes {
        return Choice {
            method: Method::NvmeWriteZeroes,
            reason: "the NVMe drive supports Write Zeroes (ONCS bit 3): the drive writes the zeroes, no data crosses the bus".into(),
        };
    }
    if zero && o.zeroout_offload {
        return Choice {
            method: Method::Zeroout,
            reason: format!(
                "BLKZEROOUT is offloaded (write_zeroes_max_bytes = {}): the kernel sends WRITE SAME / Write Zeroes, no data crosses the bus",
                o.write_zeroes_max_bytes
            ),
        };
    }
    if pattern.is_periodic() && (o.write_same_16 || o.write_same_10) {
        return Choice {
            method: Method::WriteSame,
            reason: format!(
                "the drive takes SCSI WRITE SAME({}): one pattern block per command crosses the bus",
                if o.write_same_16 { 16 } else { 10 }
            ),
        };
    }
    if o.sct_write_same && pattern_dword(pattern, block_size).is_some() {
        return Choice {
            method: Method::SctWriteSame,
            reason: "the ATA drive supports SCT Write Same and the pattern is a repeated 32-bit word: the drive writes it".into(),
        };
    }
    let why = if !pattern.is_periodic() {
        format!("pattern {pattern} differs per block, so only streamed writes produce it")
    } else if zero {
        "the drive offers no offloaded zeroing (write_zeroes_max_bytes = 0, no WRITE SAME / Write Zeroes / SCT Write Same)".to_string()
    } else {
        format!("the drive offers no command that repeats pattern {pattern} itself")
    };
    Choice {
        method: Method::Stream,
        reason: format!("{why}: io_uring streamed writes, tuned transfer length and queue depth"),
    }
}

/// Check that the drive can run `m` with `pattern`; the error says what to
/// use instead.
pub fn check_available(
    m: Method,
    o: &Offers,
    pattern: &Pattern,
    block_size: usize,
    crypto: bool,
    dev: &str,
) -> Result<Choice, EraseError> {
    let ask = Ask {
        o,
        pattern,
        block_size,
        crypto,
        zero: is_zero_pattern(pattern, block_size),
    };
    let unavailable = |m: Method, why: String| EraseError::MethodUnavailable {
        device: dev.to_string(),
        method: m.name().to_string(),
        why,
    };
    if crypto {
        match m {
            // The drive's cryptographic erase, whichever it offers.
            Method::Auto => {
                return CRYPTO_METHODS
                    .iter()
                    .find_map(|&c| check_available(c, o, pattern, block_size, true, dev).ok())
                    .ok_or_else(|| {
                        EraseError::BadOption(format!(
                            "{dev}: --crypto: the drive offers no cryptographic erase (nvme-format, nvme-sanitize, ata-sanitize or scsi-sanitize); drop --crypto to overwrite it"
                        ))
                    });
            }
            m if !CRYPTO_METHODS.contains(&m) && !m.whole_device() => {
                return Err(EraseError::BadOption(format!(
                    "{dev}: --crypto does not apply to --method {}, which writes the drive's blocks; drop --crypto, or use nvme-format, nvme-sanitize, ata-sanitize or scsi-sanitize",
                    m.name()
                )));
            }
            _ => {}
        }
    }
    let reason = match m {
        Method::Auto => return Ok(choose(o, pattern, block_size)),
        Method::Stream => Ok("requested: io_uring streamed writes".to_string()),
        Method::Zeroout => ask.zeroout(),
        Method::WriteSame => ask.write_same(),
        Method::SctWriteSame => ask.sct_write_same(),
        Method::NvmeWriteZeroes => ask.nvme_write_zeroes(),
        Method::NvmeFormat => ask.nvme_format(),
        Method::NvmeSanitize => ask.nvme_sanitize(),
        Method::AtaSanitize => ask.ata_sanitize(),
        Method::ScsiSanitize => ask.scsi_sanitize(),
        Method::AtaSecurityErase => ask.ata_security_erase(false),
        Method::AtaSecurityEraseEnhanced => ask.ata_security_erase(true),
        Method::Discard => ask.discard(),
    };
    reason
        .map(|reason| Choice { method: m, reason })
        .map_err(|why| unavailable(m, why))
}

/// The methods `--crypto` applies to, in the order `auto` picks them.
const CRYPTO_METHODS: [Method; 4] = [
    Method::NvmeSanitize,
    Method::NvmeFormat,
    Method::AtaSanitize,
    Method::ScsiSanitize,
];

/// One explicitly requested method checked against a drive: each check
/// returns the reason for the certificate, or why the drive cannot.
struct Ask<'a> {
    o: &'a Offers,
    pattern: &'a Pattern,
    block_size: usize,
    crypto: bool,
    zero: bool,
}

impl Ask<'_> {
    fn needs_zero(&self, name: &str) -> Result<(), String> {
        if self.zero || self.crypto {
            Ok(())
        } else {
            Err(format!(
                "{name} writes zeroes only, not pattern {}; use write-same or stream for other patterns",
                self.pattern
            ))
        }
    }

    fn dword(&self) -> Option<u32> {
        pattern_dword(self.pattern, self.block_size)
    }

    fn zeroout(&self) -> Result<String, String> {
        self.needs_zero("zeroout")?;
        Ok(if self.o.zeroout_offload {
            format!(
                "requested; offloaded (write_zeroes_max_bytes = {})",
                self.o.write_zeroes_max_bytes
            )
        } else {
            "requested; NOT offloaded (write_zeroes_max_bytes = 0): the kernel writes zero pages"
                .to_string()
        })
    }

    fn write_same(&self) -> Result<String, String> {
        if !self.pattern.is_periodic() {
            return Err(format!(
                "pattern {} differs per block; WRITE SAME repeats one block",
                self.pattern
            ));
        }
        if !(self.o.write_same_16 || self.o.write_same_10) {
            return Err(format!(
                "the drive does not take SCSI WRITE SAME (transport {})",
                self.o.transport
            ));
        }
        Ok("requested: SCSI WRITE SAME with one pattern block".to_string())
    }

    fn sct_write_same(&self) -> Result<String, String> {
        if !self.o.sct_write_same {
            return Err(format!(
                "the drive does not report SCT Write Same (transport {})",
                self.o.transport
            ));
        }
        if self.dword().is_none() {
            return Err(format!(
                "SCT Write Same repeats a 32-bit word; pattern {} is not one",
                self.pattern
            ));
        }
        Ok("requested: ATA SCT Write Same, foreground".to_string())
    }

    fn nvme_write_zeroes(&self) -> Result<String, String> {
        self.needs_zero("nvme-write-zeroes")?;
        if !self.o.nvme_write_zeroes {
            return Err(format!(
                "the drive does not support NVMe Write Zeroes (transport {})",
                self.o.transport
            ));
        }
        Ok("requested: NVMe Write Zeroes".to_string())
    }

    /// A command that `what` erases every namespace of the controller with
    /// may run only when the drive's namespace is the controller's only
    /// one: the others are block devices this erase did not claim. An
    /// unknown list is refused too (nothing proceeds on a guess).
    fn namespace_alone(&self, what: &str) -> Result<(), String> {
        match &self.o.nvme_other_namespaces {
            Some(others) if others.is_empty() => Ok(()),
            Some(others) => {
                let ids: Vec<String> = others.iter().map(u32::to_string).collect();
                Err(format!(
                    "the controller has other namespaces ({}), which {what} erases too; erase this namespace alone with another method (an overwrite, or nvme-write-zeroes), or delete the other namespaces first",
                    ids.join(", ")
                ))
            }
            None => Err(format!(
                "the controller's active namespace list could not be read, so what else {what} erases is unknown; use another method"
            )),
        }
    }

    fn nvme_format(&self) -> Result<String, String> {
        self.needs_zero("nvme-format")?;
        if !self.o.nvme_format {
            return Err(format!(
                "the drive does not support NVMe Format NVM (transport {})",
                self.o.transport
            ));
        }
        if self.crypto && !self.o.nvme_format_crypto {
            return Err("the drive does not support cryptographic erase in Format NVM (FNA bit 2); drop --crypto".to_string());
        }
        if self.o.nvme_format_all_namespaces {
            self.namespace_alone("its Format NVM with a secure erase (FNA)")?;
        }
        Ok(format!(
            "requested: NVMe Format NVM, {}",
            if self.crypto {
                "cryptographic erase (SES 2)"
            } else {
                "user data erase (SES 1)"
            }
        ))
    }

    fn nvme_sanitize(&self) -> Result<String, String> {
        let act = nvme_sanitize_action(self.o, self.pattern, self.block_size, self.crypto)?;
        self.namespace_alone("Sanitize")?;
        Ok(match act {
            NvmeSanitizeAction::Crypto => "requested: NVMe Sanitize crypto erase".to_string(),
            NvmeSanitizeAction::BlockErase => "requested: NVMe Sanitize block erase".to_string(),
            NvmeSanitizeAction::Overwrite(w) => format!(
                "requested: NVMe Sanitize overwrite, pattern {:02x?}, one pass",
                w.to_le_bytes()
            ),
        })
    }

    fn ata_sanitize(&self) -> Result<String, String> {
        let (ow, block, cr) = self.o.ata_sanitize;
        if self.crypto {
            if !cr {
                return Err(
                    "the drive does not support CRYPTO SCRAMBLE EXT; drop --crypto".to_string(),
                );
            }
            Ok("requested: ATA SANITIZE CRYPTO SCRAMBLE EXT".to_string())
        } else if ow && self.dword().is_some() {
            Ok("requested: ATA SANITIZE OVERWRITE EXT with the pattern word".to_string())
        } else if block && self.zero {
            Ok("requested: ATA SANITIZE BLOCK ERASE EXT".to_string())
        } else {
            Err(format!(
                "the drive offers no ATA SANITIZE operation that writes pattern {} (transport {})",
                self.pattern, self.o.transport
            ))
        }
    }

    fn scsi_sanitize(&self) -> Result<String, String> {
        match scsi_sanitize_action(self.o, self.pattern, self.block_size, self.crypto) {
            Ok(ScsiSanitizeAction::Crypto) => {
                Ok("requested: SCSI SANITIZE CRYPTOGRAPHIC ERASE".to_string())
            }
            Ok(ScsiSanitizeAction::BlockErase) => {
                Ok("requested: SCSI SANITIZE BLOCK ERASE".to_string())
            }
            Ok(ScsiSanitizeAction::Overwrite(w)) => Ok(format!(
                "requested: SCSI SANITIZE OVERWRITE, pattern {:02x?}, one pass",
                w.to_le_bytes()
            )),
            Err(why) => Err(why),
        }
    }

    fn ata_security_erase(&self, enhanced: bool) -> Result<String, String> {
        let name = if enhanced {
            "ata-security-erase-enhanced"
        } else {
            "ata-security-erase"
        };
        if self.crypto {
            return Err(format!(
                "--crypto does not apply to {name}; drop it (ata-sanitize --crypto is the ATA crypto scramble)"
            ));
        }
        if !self.zero {
            return Err(format!(
                "{name} leaves {} on the drive, not pattern {}; use --pattern allzeros",
                if enhanced {
                    "the drive's own pattern"
                } else {
                    "zeroes"
                },
                self.pattern
            ));
        }
        let Some(s) = self.o.ata_security else {
            return Err(format!(
                "ATA security erase is not supported by this drive (transport {}: no ATA IDENTIFY DEVICE through SAT)",
                self.o.transport
            ));
        };
        if let Some(r) = s.refusal(enhanced) {
            return Err(r.to_string());
        }
        Ok(format!(
            "requested: ATA SECURITY ERASE UNIT, {} mode, with a temporary user password (the drive estimates {})",
            if enhanced { "enhanced" } else { "normal" },
            s.erase_time(enhanced)
        ))
    }

    fn discard(&self) -> Result<String, String> {
        self.needs_zero("discard")?;
        if !self.o.discard {
            return Err("the drive does not support discard".to_string());
        }
        if !self.o.reads_zero_after_discard {
            return Err("the drive does not guarantee that discarded blocks read back as zeroes (no LBPRZ/RZAT/DLFEAT); use --discard-first with an overwrite method instead".to_string());
        }
        Ok("requested: discard; the drive guarantees zeroes after discard".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Pattern {
        s.parse().unwrap()
    }

    #[test]
    fn names_round_trip() {
        for m in ALL {
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
            // Reports and certificates carry the same name.
            let json = serde_json::to_value(m).unwrap();
            assert_eq!(json, serde_json::Value::from(m.name()));
            assert_eq!(serde_json::from_value::<Method>(json).unwrap(), m);
        }
        assert!("wipe".parse::<Method>().is_err());
    }

    #[test]
    fn dword_of_patterns() {
        assert_eq!(pattern_dword(&p("allzeros"), 512), Some(0));
        assert_eq!(pattern_dword(&p("allones"), 512), Some(0xFFFF_FFFF));
        assert_eq!(pattern_dword(&p("fixed:0xA5"), 512), Some(0xA5A5_A5A5));
        // Bytes 01 02 03 04 on the medium = little-endian word 0x04030201.
        assert_eq!(
            pattern_dword(&p("fixed:0x01020304"), 512),
            Some(0x0403_0201)
        );
        // Period 3 does not fit a dword; incrementing has period 256.
        assert_eq!(pattern_dword(&p("fixed:0x010203"), 512), None);
        assert_eq!(pattern_dword(&p("incrementing"), 512), None);
        assert_eq!(pattern_dword(&p("random"), 512), None);
    }

    #[test]
    fn auto_prefers_offload_and_falls_back_to_stream() {
        let loopish = Offers {
            transport: "other".into(),
            zeroout_offload: true,
            write_zeroes_max_bytes: 1 << 30,
            discard: true,
            ..Offers::default()
        };
        assert_eq!(
            choose(&loopish, &p("allzeros"), 512).method,
            Method::Zeroout
        );
        assert_eq!(
            choose(&loopish, &p("fixed:0xA5"), 512).method,
            Method::Stream
        );
        let scsi = Offers {
            transport: "scsi".into(),
            write_same_16: true,
            ..Offers::default()
        };
        assert_eq!(
            choose(&scsi, &p("fixed:0xA5"), 512).method,
            Method::WriteSame
        );
        assert_eq!(choose(&scsi, &p("random"), 512).method, Method::Stream);
        let nvme = Offers {
            transport: "nvme".into(),
            nvme_write_zeroes: true,
            zeroout_offload: true,
            ..Offers::default()
        };
        assert_eq!(
            choose(&nvme, &p("allzeros"), 4096).method,
            Method::NvmeWriteZeroes
        );
        let ata = Offers {
            transport: "ata-via-sat".into(),
            sct_write_same: true,
            ..Offers::default()
        };
        assert_eq!(
            choose(&ata, &p("allones"), 512).method,
            Method::SctWriteSame
        );
        assert_eq!(choose(&ata, &p("incrementing"), 512).method, Method::Stream);
        assert_eq!(
            choose(&Offers::default(), &p("allzeros"), 512).method,
            Method::Stream
        );
    }

    #[test]
    fn missing_methods_are_errors() {
        let loopish = Offers {
            transport: "other".into(),
            zeroout_offload: true,
            discard: true,
            ..Offers::default()
        };
        let z = p("allzeros");
        for m in [
            Method::WriteSame,
            Method::SctWriteSame,
            Method::NvmeWriteZeroes,
            Method::NvmeFormat,
            Method::NvmeSanitize,
            Method::AtaSanitize,
            Method::ScsiSanitize,
            Method::AtaSecurityErase,
            Method::AtaSecurityEraseEnhanced,
            Method::Discard,
        ] {
            let e = check_available(m, &loopish, &z, 512, false, "/dev/loop9").unwrap_err();
            assert!(e.to_string().contains(m.name()), "{e}");
        }
        assert!(
            check_available(Method::Zeroout, &loopish, &p("fixed:0xA5"), 512, false, "x").is_err()
        );
        assert!(check_available(Method::Zeroout, &loopish, &z, 512, false, "x").is_ok());
        assert!(check_available(Method::Stream, &loopish, &p("random"), 512, false, "x").is_ok());
    }

    #[test]
    fn a_controller_wide_erase_of_one_namespace_among_others_is_refused() {
        // Sanitize erases every namespace of the controller; a Format with
        // a secure erase does where FNA says so. The other namespaces are
        // block devices the erase did not claim.
        let z = p("allzeros");
        let nvme = |others: Option<Vec<u32>>, all: bool| Offers {
            transport: "nvme".into(),
            nvme_format: true,
            nvme_format_crypto: true,
            nvme_sanitize: (true, true, false),
            nvme_format_all_namespaces: all,
            nvme_other_namespaces: others,
            ..Offers::default()
        };
        let alone = nvme(Some(vec![]), true);
        let shared = nvme(Some(vec![2, 7]), true);
        for crypto in [false, true] {
            for m in [Method::NvmeSanitize, Method::NvmeFormat] {
                assert!(check_available(m, &alone, &z, 512, crypto, "d").is_ok());
                let e = check_available(m, &shared, &z, 512, crypto, "d")
                    .unwrap_err()
                    .to_string();
                assert!(e.contains("other namespaces (2, 7)"), "{e}");
                let e = check_available(m, &nvme(None, true), &z, 512, crypto, "d")
                    .unwrap_err()
                    .to_string();
                assert!(e.contains("namespace list could not be read"), "{e}");
            }
            // A Format that reaches this namespace alone may run beside others.
            let own = nvme(Some(vec![2]), false);
            assert!(check_available(Method::NvmeFormat, &own, &z, 512, crypto, "d").is_ok());
            assert!(check_available(Method::NvmeSanitize, &own, &z, 512, crypto, "d").is_err());
        }
    }

    #[test]
    fn nvme_sanitize_overwrites_a_pattern_word_and_block_erases_zeroes() {
        use NvmeSanitizeAction as A;
        // (offered (block, crypto, overwrite), pattern, crypto, the action or
        // the words the refusal holds)
        type Row = (
            (bool, bool, bool),
            &'static str,
            bool,
            Result<A, &'static str>,
        );
        let table: [Row; 8] = [
            ((true, false, false), "allzeros", false, Ok(A::BlockErase)),
            ((true, true, true), "allzeros", false, Ok(A::BlockErase)),
            ((false, false, true), "allzeros", false, Ok(A::Overwrite(0))),
            (
                (true, false, true),
                "fixed:0xa55a0ff0",
                false,
                Ok(A::Overwrite(0xf00f_5aa5)),
            ),
            (
                (true, false, false),
                "allones",
                false,
                Err("offers no overwrite"),
            ),
            (
                (true, false, true),
                "random",
                false,
                Err("repeats a 32-bit word"),
            ),
            ((true, false, true), "allzeros", true, Err("drop --crypto")),
            (
                (false, false, false),
                "allzeros",
                false,
                Err("block erase or overwrite"),
            ),
        ];
        for (offered, pat, crypto, want) in table {
            let o = Offers {
                transport: "nvme".into(),
                nvme_sanitize: offered,
                nvme_other_namespaces: Some(vec![]),
                ..Offers::default()
            };
            let got = nvme_sanitize_action(&o, &p(pat), 512, crypto);
            let planned = check_available(Method::NvmeSanitize, &o, &p(pat), 512, crypto, "d");
            match (want, got) {
                (Ok(w), Ok(g)) => {
                    assert_eq!(g, w, "{offered:?} {pat} {crypto}");
                    assert_eq!(planned.unwrap().method, Method::NvmeSanitize);
                }
                (Err(words), Err(why)) => {
                    assert!(why.contains(words), "{why}");
                    let e = planned.unwrap_err();
                    assert!(e.to_string().contains("nvme-sanitize"), "{e}");
                }
                (w, g) => panic!("{offered:?} {pat} {crypto}: want {w:?}, got {g:?}"),
            }
        }
    }

    #[test]
    fn scsi_sanitize_is_planned_only_for_what_the_drive_reports() {
        // (offered (overwrite, block, crypto), pattern, crypto, the action or
        // the words the refusal holds)
        type Row = (
            (bool, bool, bool),
            &'static str,
            bool,
            Result<ScsiSanitizeAction, &'static str>,
        );
        let table: [Row; 9] = [
            (
                (false, true, false),
                "allzeros",
                false,
                Ok(ScsiSanitizeAction::BlockErase),
            ),
            (
                (true, true, true),
                "allzeros",
                false,
                Ok(ScsiSanitizeAction::BlockErase),
            ),
            (
                (true, false, false),
                "allzeros",
                false,
                Ok(ScsiSanitizeAction::Overwrite(0)),
            ),
            (
                (true, true, false),
                "fixed:0x01020304",
                false,
                Ok(ScsiSanitizeAction::Overwrite(0x0403_0201)),
            ),
            (
                (false, true, false),
                "allones",
                false,
                Err("BLOCK ERASE leaves zeroes"),
            ),
            (
                (true, true, false),
                "random",
                false,
                Err("no SCSI SANITIZE action"),
            ),
            (
                (false, false, true),
                "allzeros",
                true,
                Ok(ScsiSanitizeAction::Crypto),
            ),
            (
                (true, true, false),
                "allzeros",
                true,
                Err("CRYPTOGRAPHIC ERASE"),
            ),
            (
                (false, false, false),
                "allzeros",
                false,
                Err("does not report SCSI SANITIZE"),
            ),
        ];
        for (offered, pat, crypto, want) in table {
            let o = Offers {
                transport: "scsi".into(),
                scsi_sanitize: offered,
                ..Offers::default()
            };
            let got = scsi_sanitize_action(&o, &p(pat), 512, crypto);
            let planned = check_available(Method::ScsiSanitize, &o, &p(pat), 512, crypto, "d");
            match (want, got) {
                (Ok(w), Ok(g)) => {
                    assert_eq!(g, w, "{offered:?} {pat} {crypto}");
                    assert_eq!(planned.unwrap().method, Method::ScsiSanitize);
                }
                (Err(words), Err(why)) => {
                    assert!(why.contains(words), "{why}");
                    let e = planned.unwrap_err();
                    assert!(e.to_string().contains("scsi-sanitize"), "{e}");
                }
                (w, g) => panic!("{offered:?} {pat} {crypto}: want {w:?}, got {g:?}"),
            }
        }
        // Purge, whole-device; --crypto with auto reaches it on a SAS drive.
        assert!(Method::ScsiSanitize.whole_device());
        assert_eq!(Method::ScsiSanitize.nist_category(false), "Purge");
        let sas = Offers {
            transport: "scsi".into(),
            scsi_sanitize: (false, false, true),
            ..Offers::default()
        };
        let c = check_available(Method::Auto, &sas, &p("allzeros"), 512, true, "d").unwrap();
        assert_eq!(c.method, Method::ScsiSanitize);
    }

    fn ata_with(w128: u16) -> Offers {
        Offers {
            transport: "ata-via-sat".into(),
            ata_security: Some(SecurityState::from_words(0, 0x0010, 0x0020, w128)),
            zeroout_offload: true,
            ..Offers::default()
        }
    }

    #[test]
    fn ata_security_erase_is_checked_against_the_identify_state() {
        let z = p("allzeros");
        // QEMU's AHCI disk: no Security feature set.
        let e = check_available(
            Method::AtaSecurityErase,
            &ata_with(0),
            &z,
            512,
            false,
            "/dev/sda",
        )
        .unwrap_err();
        assert!(e.is_refusal());
        assert!(e.to_string().contains("not supported by this drive"), "{e}");
        // Frozen: one line saying how to unfreeze.
        let e = check_available(
            Method::AtaSecurityErase,
            &ata_with(0x0009),
            &z,
            512,
            false,
            "d",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("frozen") && e.contains("suspend") && !e.contains('\n'),
            "{e}"
        );
        // Locked / enabled with a password drivelab does not know.
        for w in [0x0007, 0x0003] {
            let e = check_available(Method::AtaSecurityErase, &ata_with(w), &z, 512, false, "d")
                .unwrap_err()
                .to_string();
            assert!(e.contains("password drivelab does not know"), "{e}");
        }
        // Supported: normal yes; enhanced only with word 128 bit 5.
        let c =
            check_available(Method::AtaSecurityErase, &ata_with(1), &z, 512, false, "d").unwrap();
        assert!(
            c.reason.contains("normal mode") && c.reason.contains("about 32 min"),
            "{}",
            c.reason
        );
        assert!(check_available(
            Method::AtaSecurityEraseEnhanced,
            &ata_with(1),
            &z,
            512,
            false,
            "d"
        )
        .is_err());
        let c = check_available(
            Method::AtaSecurityEraseEnhanced,
            &ata_with(0x21),
            &z,
            512,
            false,
            "d",
        )
        .unwrap();
        assert!(
            c.reason.contains("enhanced mode") && c.reason.contains("about 64 min"),
            "{}",
            c.reason
        );
        // A pattern it cannot leave, or --crypto: refused.
        assert!(check_available(
            Method::AtaSecurityErase,
            &ata_with(1),
            &p("allones"),
            512,
            false,
            "d"
        )
        .is_err());
        assert!(
            check_available(Method::AtaSecurityErase, &ata_with(1), &z, 512, true, "d").is_err()
        );
        // --crypto with a method that writes blocks: refused, not ignored.
        for m in [
            Method::Zeroout,
            Method::Stream,
            Method::WriteSame,
            Method::Discard,
            Method::Auto,
        ] {
            let e = check_available(m, &ata_with(1), &z, 512, true, "d").unwrap_err();
            assert!(e.is_refusal() && e.to_string().contains("--crypto"), "{e}");
        }
        // Not ATA at all.
        let nvme = Offers {
            transport: "nvme".into(),
            ..Offers::default()
        };
        let e = check_available(Method::AtaSecurityErase, &nvme, &z, 512, false, "d").unwrap_err();
        assert!(e.to_string().contains("not supported by this drive"), "{e}");
    }

    #[test]
    fn ata_security_erase_classes_and_auto() {
        assert_eq!(Method::AtaSecurityErase.nist_category(false), "Clear");
        assert_eq!(
            Method::AtaSecurityEraseEnhanced.nist_category(false),
            "Purge"
        );
        assert!(Method::AtaSecurityErase.whole_device());
        assert!(!Method::AtaSecurityErase.leaves_indeterminate_data(false));
        assert!(Method::AtaSecurityEraseEnhanced.leaves_indeterminate_data(false));
        // auto never picks it, even on a drive with nothing else.
        let only = Offers {
            zeroout_offload: false,
            ..ata_with(0x21)
        };
        assert_eq!(choose(&only, &p("allzeros"), 512).method, Method::Stream);
        assert_eq!(
            choose(&ata_with(0x21), &p("allzeros"), 512).method,
            Method::Zeroout
        );
    }
}
