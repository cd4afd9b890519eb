//! The commands that destroy data: SCSI WRITE SAME and UNMAP, ATA SCT Write
//! Same and SANITIZE, NVMe Write Zeroes, Dataset Management, Format NVM and
//! Sanitize. Each one checks its request, then the user's consent and the
//! safety check ([`WriteConsent`]), before the device is opened; the status
//! queries of SANITIZE need neither.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::common::{
    elapsed_ms, nvme_for_write, open_sg, sg_for_write, BlockRange, OpError, WriteConsent,
    LONG_TIMEOUT_MS, SHORT_TIMEOUT_MS,
};
use super::failure::Failure;
use super::readback::{block_length, sha256_hex};
use crate::ata::{
    self, AtaRegisters, AtaSanitize, AtaSanitizeOp, AtaSanitizeStatus, SctStatus,
    SctWriteSameFunction,
};
use crate::nvme::{self, NvmeCommand, NvmeData, NvmeDevice, SanitizeAction, SanitizeStatusLog};
use crate::scsi::{self, WriteSameOptions};
use crate::units::{BlockCount, Lba};

/// The block WRITE SAME repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternBlock {
    /// Every byte of the block is this one.
    Byte(u8),
    /// The first logical block of this file.
    File(PathBuf),
}

/// A SCSI WRITE SAME request.
#[derive(Debug, Clone)]
pub struct WriteSameRequest {
    /// Blocks to write.
    pub range: BlockRange,
    /// The block written over the range.
    pub block: PatternBlock,
    /// WRITE SAME(16) rather than (10).
    pub use16: bool,
    /// Set UNMAP: the device may deallocate instead of writing.
    pub unmap: bool,
    /// Set NDOB (16 only): no data block; the device writes zeroes.
    pub ndob: bool,
}

impl WriteSameRequest {
    /// Refuse what WRITE SAME cannot express: NDOB in (10), a range beyond
    /// (10)'s 32-bit LBA and 16-bit count, a count beyond (16)'s 32 bits.
    fn check(&self) -> Result<(), OpError> {
        self.range.check()?;
        let (lba, count) = (self.range.lba.0, self.range.count.0);
        if !self.use16 {
            if self.ndob {
                return Err(OpError::Invalid(
                    "--ndob needs --cdb 16 (WRITE SAME(10) has no NDOB bit)".into(),
                ));
            }
            if count > 0xFFFF || lba > 0xFFFF_FFFF {
                return Err(OpError::Invalid(format!(
                    "WRITE SAME(10) takes an LBA below 2^32 and at most 65535 blocks (got LBA {lba} count {count}); use --cdb 16"
                )));
            }
        } else if count > 0xFFFF_FFFF {
            return Err(OpError::Invalid(
                "WRITE SAME(16) takes at most 4294967295 blocks per command".into(),
            ));
        }
        Ok(())
    }
}

/// What WRITE SAME did.
#[derive(Debug, Clone, Serialize)]
pub struct WriteSame {
    /// First logical block.
    pub lba: Lba,
    /// Logical blocks written.
    pub count: BlockCount,
    /// CDB size: 10 or 16.
    pub cdb: u8,
    /// Whether UNMAP was set.
    pub unmap: bool,
    /// Whether NDOB was set.
    pub ndob: bool,
    /// Logical block length, bytes.
    pub block_length: usize,
    /// SHA-256 of the block sent.
    pub block_sha256: String,
    /// Command time as the kernel measured it, ms.
    pub duration_ms: u32,
}

/// SCSI WRITE SAME(10/16) of one block over a range.
pub fn write_same(
    dev: &Path,
    req: &WriteSameRequest,
    consent: &WriteConsent,
    timeout_ms: Option<u32>,
) -> Result<WriteSame, OpError> {
    req.check()?;
    // The block's file is read before the device is claimed: a file that
    // cannot be read is bad input, with nothing opened for writing.
    enum Block<'a> {
        File(&'a Path, Vec<u8>),
        Byte(u8),
    }
    let source = match &req.block {
        PatternBlock::File(p) => Block::File(
            p,
            crate::claim::input::read(p, crate::claim::input::Kind::DataBlock)
                .map_err(|e| OpError::Invalid(e.to_string()))?,
        ),
        PatternBlock::Byte(b) => Block::Byte(*b),
    };
    let held = consent.claim(dev, "write-same")?;
    let d = sg_for_write(dev, held.as_ref(), timeout_ms.unwrap_or(SHORT_TIMEOUT_MS))?;
    let bl = block_length(&d)? as usize;
    let block = match source {
        Block::File(p, data) => {
            if data.len() < bl {
                return Err(Failure::line(format!(
                    "{} holds {} bytes; WRITE SAME needs one whole {bl}-byte block",
                    p.display(),
                    data.len()
                ))
                .into());
            }
            data[..bl].to_vec()
        }
        Block::Byte(b) => vec![b; bl],
    };
    let r = scsi::write_same_with(
        &d,
        req.range.lba,
        req.range.count,
        &block,
        WriteSameOptions {
            use16: req.use16,
            unmap: req.unmap,
            ndob: req.ndob,
        },
    )?;
    Ok(WriteSame {
        lba: req.range.lba,
        count: req.range.count,
        cdb: if req.use16 { 16 } else { 10 },
        unmap: req.unmap,
        ndob: req.ndob,
        block_length: bl,
        block_sha256: sha256_hex(&block),
        duration_ms: r.duration_ms,
    })
}

/// What UNMAP did.
#[derive(Debug, Clone, Serialize)]
pub struct Unmap {
    /// First logical block.
    pub lba: Lba,
    /// Logical blocks unmapped.
    pub count: BlockCount,
    /// Command time as the kernel measured it, ms.
    pub duration_ms: u32,
}

/// SCSI UNMAP of a range.
pub fn unmap(
    dev: &Path,
    range: BlockRange,
    consent: &WriteConsent,
    timeout_ms: Option<u32>,
) -> Result<Unmap, OpError> {
    range.check()?;
    let held = consent.claim(dev, "unmap")?;
    let d = sg_for_write(dev, held.as_ref(), timeout_ms.unwrap_or(SHORT_TIMEOUT_MS))?;
    let r = scsi::unmap(&d, &[(range.lba, range.count)])?;
    Ok(Unmap {
        lba: range.lba,
        count: range.count,
        duration_ms: r.duration_ms,
    })
}

/// An ATA SCT Write Same request.
#[derive(Debug, Clone, Copy)]
pub struct SctWriteSameRequest {
    /// Blocks to write.
    pub range: BlockRange,
    /// The 32-bit pattern.
    pub pattern: u32,
    /// Foreground (0101h): the command returns when the write is done.
    /// Otherwise background (0001h), polled through the SCT status.
    pub foreground: bool,
    /// With background: return at once instead of polling until done.
    pub no_wait: bool,
}

/// What SCT Write Same did.
#[derive(Debug, Clone, Serialize)]
pub struct SctWriteSame {
    /// First logical block.
    pub lba: Lba,
    /// Logical blocks.
    pub count: BlockCount,
    /// The 32-bit pattern.
    pub pattern: u32,
    /// SCT function code (0001h background, 0101h foreground).
    pub function: u16,
    /// The registers the command returned.
    pub registers: Option<AtaRegisters>,
    /// The final SCT status (background, polled to the end).
    pub sct_status: Option<SctStatus>,
    /// Time until the command returned (or the polling ended), ms.
    pub duration_ms: u64,
    /// Started in the background and not waited for.
    #[serde(skip)]
    pub started_only: bool,
}

/// ATA SCT Write Same of a 32-bit pattern over a range; in the background
/// it polls the SCT status every 500 ms until done (or the timeout, default
/// ten minutes), unless `no_wait`.
pub fn sct_write_same(
    dev: &Path,
    req: &SctWriteSameRequest,
    consent: &WriteConsent,
    timeout_ms: Option<u32>,
) -> Result<SctWriteSame, OpError> {
    req.range.check()?;
    let held = consent.claim(dev, "sct-write-same")?;
    let f = if req.foreground {
        SctWriteSameFunction::PatternForeground
    } else {
        SctWriteSameFunction::PatternBackground
    };
    let cmd_timeout = if req.foreground {
        LONG_TIMEOUT_MS
    } else {
        SHORT_TIMEOUT_MS
    };
    let d = sg_for_write(dev, held.as_ref(), timeout_ms.unwrap_or(cmd_timeout))?;
    let ws = ata::SctWriteSame::new(f, req.range.lba, req.range.count).pattern(req.pattern);
    let t0 = Instant::now();
    let registers = ata::sct_write_same(&d, &ws)?;
    let mut sct_status = None;
    if f.is_background() && !req.no_wait {
        let deadline = Instant::now()
            + Duration::from_millis(u64::from(timeout_ms.unwrap_or(LONG_TIMEOUT_MS)));
        loop {
            let s = ata::sct_status(&d)?;
            if !s.in_progress() {
                if s.extended_status != 0 {
                    return Err(Failure {
                        line: format!(
                            "SCT Write Same ended with extended status 0x{:04x} at LBA {}",
                            s.extended_status, s.current_lba
                        ),
                        sct_status: Some(s),
                        ..Failure::default()
                    }
                    .into());
                }
                sct_status = Some(s);
                break;
            }
            if Instant::now() > deadline {
                return Err(Failure {
                    line: format!(
                        "SCT Write Same still running after the timeout (at LBA {}); poll with 'sct-status'",
                        s.current_lba
                    ),
                    sct_status: Some(s),
                    ..Failure::default()
                }
                .into());
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    Ok(SctWriteSame {
        lba: req.range.lba,
        count: req.range.count,
        pattern: req.pattern,
        function: f.code(),
        registers,
        sct_status,
        duration_ms: elapsed_ms(t0),
        started_only: f.is_background() && req.no_wait,
    })
}

/// An ATA SANITIZE request.
#[derive(Debug, Clone, Copy)]
pub struct AtaSanitizeRequest {
    /// What to do; `Status` reads the progress and needs no consent.
    pub op: AtaSanitizeOp,
    /// Overwrite pattern (32 bits).
    pub pattern: u32,
    /// Overwrite passes, 1-16.
    pub passes: u8,
}

/// What SANITIZE said.
#[derive(Debug, Clone, Serialize)]
pub struct AtaSanitizeAnswer {
    /// The action: overwrite, crypto, block or status.
    pub action: &'static str,
    /// The registers the device returned.
    pub registers: Option<AtaRegisters>,
    /// The sanitize state decoded from them.
    pub status: Option<AtaSanitizeStatus>,
    /// The sanitize operation sent.
    #[serde(skip)]
    pub op: AtaSanitizeOp,
}

/// The short name of a sanitize operation, as `drivelab device` spells it.
fn ata_action_name(op: AtaSanitizeOp) -> &'static str {
    match op {
        AtaSanitizeOp::Overwrite => "overwrite",
        AtaSanitizeOp::CryptoScramble => "crypto",
        AtaSanitizeOp::BlockErase => "block",
        AtaSanitizeOp::Status => "status",
        AtaSanitizeOp::FreezeLock => "freeze-lock",
    }
}

/// ATA SANITIZE DEVICE: start an overwrite, crypto scramble or block
/// erase, or read the sanitize status.
pub fn ata_sanitize(
    dev: &Path,
    req: &AtaSanitizeRequest,
    consent: &WriteConsent,
    timeout_ms: Option<u32>,
) -> Result<AtaSanitizeAnswer, OpError> {
    let writes = req.op != AtaSanitizeOp::Status;
    let held = if writes {
        consent.claim(dev, "ata-sanitize")?
    } else {
        None
    };
    let timeout = timeout_ms.unwrap_or(LONG_TIMEOUT_MS);
    let d = if writes {
        sg_for_write(dev, held.as_ref(), timeout)?
    } else {
        open_sg(dev, timeout, false)?
    };
    let s = AtaSanitize::new(req.op)
        .pattern(req.pattern)
        .passes(req.passes);
    let registers = ata::sanitize(&d, &s)?;
    Ok(AtaSanitizeAnswer {
        action: ata_action_name(req.op),
        status: registers.as_ref().map(AtaSanitizeStatus::from_registers),
        registers,
        op: req.op,
    })
}

/// What NVMe Write Zeroes did.
#[derive(Debug, Clone, Serialize)]
pub struct NvmeWriteZeroes {
    /// First logical block.
    pub lba: Lba,
    /// Logical blocks zeroed.
    pub count: BlockCount,
    /// Whether DEAC was set.
    pub deac: bool,
    /// Commands sent (one per 65536 blocks).
    pub commands: u64,
    /// Wall time, ms.
    pub duration_ms: u64,
}

/// NVMe Write Zeroes over a range (one command per 65536 blocks); with
/// `deac` the controller may deallocate the blocks.
pub fn nvme_write_zeroes(
    dev: &Path,
    range: BlockRange,
    deac: bool,
    consent: &WriteConsent,
    timeout_ms: Option<u32>,
) -> Result<NvmeWriteZeroes, OpError> {
    range.check()?;
    let held = consent.claim(dev, "nvme-write-zeroes")?;
    let d = nvme_for_write(dev, held.as_ref())?;
    let t0 = Instant::now();
    let commands = nvme::write_zeroes_with_timeout(
        &d,
        range.lba,
        range.count,
        deac,
        timeout_ms.unwrap_or(SHORT_TIMEOUT_MS),
    )?;
    Ok(NvmeWriteZeroes {
        lba: range.lba,
        count: range.count,
        deac,
        commands,
        duration_ms: elapsed_ms(t0),
    })
}

/// What Dataset Management did.
#[derive(Debug, Clone, Serialize)]
pub struct NvmeDsm {
    /// First logical block.
    pub lba: Lba,
    /// Logical blocks deallocated.
    pub count: BlockCount,
}

/// NVMe Dataset Management (deallocate) of a range.
pub fn nvme_dsm(dev: &Path, range: BlockRange, consent: &WriteConsent) -> Result<NvmeDsm, OpError> {
    range.check()?;
    let held = consent.claim(dev, "nvme-dsm")?;
    let d = nvme_for_write(dev, held.as_ref())?;
    nvme::dsm_deallocate(&d, &[(range.lba, range.count)])?;
    Ok(NvmeDsm {
        lba: range.lba,
        count: range.count,
    })
}

/// What Format NVM did.
#[derive(Debug, Clone, Serialize)]
pub struct NvmeFormat {
    /// Namespace formatted.
    pub nsid: u32,
    /// LBA format index used.
    pub lbaf: u8,
    /// Secure erase setting.
    pub ses: u8,
    /// Wall time, ms.
    pub duration_ms: u64,
}

/// NVMe Format NVM of the namespace with secure erase setting `ses` (0
/// none, 1 user data erase, 2 cryptographic erase) and LBA format `lbaf`
/// (default: the one in use, so the block size stays).
pub fn nvme_format(
    dev: &Path,
    ses: u8,
    lbaf: Option<u8>,
    consent: &WriteConsent,
    timeout_ms: Option<u32>,
) -> Result<NvmeFormat, OpError> {
    let held = consent.claim(dev, "nvme-format")?;
    let d = nvme_for_write(dev, held.as_ref())?;
    let nsid = d.require_nsid()?;
    let lbaf = match lbaf {
        Some(l) => l,
        None => nvme::identify_namespace(&d, nsid)?.lbaf_in_use,
    };
    let c =
        NvmeCommand::format_nvm(nsid, lbaf, ses).timeout_ms(timeout_ms.unwrap_or(LONG_TIMEOUT_MS));
    let t0 = Instant::now();
    d.execute(&c, NvmeData::None)?;
    Ok(NvmeFormat {
        nsid,
        lbaf,
        ses,
        duration_ms: elapsed_ms(t0),
    })
}

/// An NVMe Sanitize request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvmeSanitizeRequest {
    /// Read the Sanitize Status log (needs no consent).
    Status,
    /// Start a sanitize action.
    Start {
        /// The action.
        action: SanitizeAction,
        /// Overwrite pattern (32 bits).
        pattern: u32,
    },
}

/// What NVMe Sanitize said.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum NvmeSanitize {
    /// The Sanitize Status log.
    Status {
        /// The decoded log.
        sanitize_status: SanitizeStatusLog,
    },
    /// The action the controller accepted.
    Started {
        /// The action.
        action: SanitizeAction,
    },
}

/// NVMe Sanitize (one overwrite pass, no-deallocate off), or its status log.
pub fn nvme_sanitize(
    dev: &Path,
    req: NvmeSanitizeRequest,
    consent: &WriteConsent,
    timeout_ms: Option<u32>,
) -> Result<NvmeSanitize, OpError> {
    let (action, pattern) = match req {
        NvmeSanitizeRequest::Status => {
            let d = NvmeDevice::open(dev)?;
            return Ok(NvmeSanitize::Status {
                sanitize_status: nvme::sanitize_status(&d)?,
            });
        }
        NvmeSanitizeRequest::Start { action, pattern } => (action, pattern),
    };
    let held = consent.claim(dev, "nvme-sanitize")?;
    let d = nvme_for_write(dev, held.as_ref())?;
    let c = NvmeCommand::sanitize_with(action, false, 1, false, false, pattern)
        .timeout_ms(timeout_ms.unwrap_or(LONG_TIMEOUT_MS));
    d.execute(&c, NvmeData::None)?;
    Ok(NvmeSanitize::Started { action })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(lba: u64, count: u64, use16: bool, ndob: bool) -> WriteSameRequest {
        WriteSameRequest {
            range: BlockRange::new(lba, count),
            block: PatternBlock::Byte(0),
            use16,
            unmap: false,
            ndob,
        }
    }

    #[test]
    fn write_same_requests_the_cdb_cannot_express_are_refused() {
        let e = ws(0, 8, false, true).check().unwrap_err();
        assert!(e.to_string().contains("--ndob needs --cdb 16"), "{e}");
        let e = ws(0, 65536, false, false).check().unwrap_err();
        assert!(e.to_string().ends_with("use --cdb 16"), "{e}");
        let e = ws(1 << 32, 1, false, false).check().unwrap_err();
        assert!(e.to_string().contains("got LBA 4294967296 count 1"), "{e}");
        let e = ws(0, 1 << 32, true, false).check().unwrap_err();
        assert!(e.to_string().contains("at most 4294967295"), "{e}");
        assert!(e.is_input());
        assert!(ws(0, 65535, false, false).check().is_ok());
        assert!(ws(0, 1 << 20, true, true).check().is_ok());
    }

    #[test]
    fn answers_serialise_to_the_documented_fields() {
        let w = WriteSame {
            lba: Lba(2048),
            count: BlockCount(256),
            cdb: 16,
            unmap: false,
            ndob: false,
            block_length: 512,
            block_sha256: sha256_hex(&[0xA5; 512]),
            duration_ms: 3,
        };
        assert_eq!(
            serde_json::to_value(&w).unwrap(),
            serde_json::json!({
                "lba": 2048, "count": 256, "cdb": 16, "unmap": false, "ndob": false,
                "block_length": 512, "block_sha256": sha256_hex(&[0xA5; 512]), "duration_ms": 3,
            })
        );
        let s = NvmeSanitize::Started {
            action: SanitizeAction::BlockErase,
        };
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({ "action": "block-erase" })
        );
    }

    #[test]
    fn a_writing_op_checks_its_request_before_consent() {
        let no = WriteConsent::default();
        let dev = Path::new("/nonexistent/dev");
        let e = unmap(dev, BlockRange::new(0, 0), &no, None).unwrap_err();
        assert_eq!(e.to_string(), "--count must be at least 1");
        let e = unmap(dev, BlockRange::new(0, 8), &no, None).unwrap_err();
        assert!(
            matches!(e, OpError::NotConfirmed { op: "unmap", .. }),
            "{e}"
        );
        let e = nvme_format(dev, 1, None, &no, None).unwrap_err();
        assert!(
            matches!(
                e,
                OpError::NotConfirmed {
                    op: "nvme-format",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn status_queries_need_no_consent() {
        // No consent, and the status query goes straight to the device
        // (which does not exist here): the error is the open, not --yes.
        let e = nvme_sanitize(
            Path::new("/nonexistent/dev"),
            NvmeSanitizeRequest::Status,
            &WriteConsent::default(),
            None,
        )
        .unwrap_err();
        assert!(matches!(e, OpError::Failed(_)), "{e}");
        let e = ata_sanitize(
            Path::new("/nonexistent/dev"),
            &AtaSanitizeRequest {
                op: AtaSanitizeOp::Status,
                pattern: 0,
                passes: 1,
            },
            &WriteConsent::default(),
            None,
        )
        .unwrap_err();
        assert!(matches!(e, OpError::Failed(_)), "{e}");
    }
}
