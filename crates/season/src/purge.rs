//! The purge stage: the strongest purge a drive offers, by the erase
//! crate's methods and capability probe, reported by name.
//!
//! Order of preference (each only when the drive reports it):
//!
//! 1. NVMe Sanitize, block erase (crypto erase when only that is offered);
//! 2. NVMe Format NVM with secure-erase setting 1 (user data erase);
//! 3. ATA SANITIZE, block erase (crypto scramble when only that is
//!    offered; overwrite alone is not a purge for this purpose: it leaves
//!    every block written, the opposite of fresh);
//! 4. SCSI SANITIZE, block erase (cryptographic erase when only that is
//!    offered; overwrite alone is not a purge here, as for ATA), as the
//!    drive reports it in REPORT SUPPORTED OPERATION CODES;
//! 5. ATA SECURITY ERASE UNIT, enhanced mode when offered, else normal
//!    (a temporary password, never left set); a frozen, locked or
//!    password-protected drive is listed with the reason and how to fix it;
//! 6. a whole-device discard (BLKDISCARD through the claim): the drive
//!    learns that no LBA holds data, which is what a fresh drive is;
//! 7. nothing: "not purged: <why>", and the measurements after it are not
//!    called fresh.
//!
//! `--purge METHOD` asks for one of them by name; a drive that cannot run
//! it is refused before anything is written ([`choose_requested`]).
//! Sanitize, format and security erase run through
//! [`drivelab_erase::run::run_all`] (with no read-back), so they are the
//! erase command's own code and leave its signed certificate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use drivelab_erase::plan::{Choice, Drive, Offers};
use drivelab_erase::sched::Progress;
use drivelab_erase::{Method, Plan, Strategy, VerifyMode};
use drivelab_patterns::Pattern;

use crate::result::Purge;
use crate::SeasonError;

/// What the purge will do to a drive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeChoice {
    /// The method, or None (not purged).
    pub method: Option<Method>,
    /// Crypto variant (sanitize crypto erase / crypto scramble).
    pub crypto: bool,
    /// Use ATA block erase even when overwrite is offered.
    pub ata_block: bool,
    /// Why (the chosen method, or why none).
    pub reason: String,
    /// Every method considered: (name, "yes" or why not).
    pub methods: Vec<(String, String)>,
}

/// A purge the drive offers: method, crypto, ATA block erase, reason.
type Candidate = (Method, bool, bool, String);

/// Every purge method for a drive offering `o`, strongest first, each
/// with what it would do or why the drive cannot.
fn candidates(o: &Offers) -> Vec<(&'static str, Result<Candidate, String>)> {
    let mut v: Vec<(&'static str, Result<Candidate, String>)> = Vec::new();
    let (nb, nc, _) = o.nvme_sanitize;
    v.push((
        "nvme-sanitize",
        if nb {
            Ok((
                Method::NvmeSanitize,
                false,
                false,
                "NVMe Sanitize block erase (SANICAP)".into(),
            ))
        } else if nc {
            Ok((
                Method::NvmeSanitize,
                true,
                false,
                "NVMe Sanitize crypto erase (SANICAP)".into(),
            ))
        } else {
            Err(format!(
                "the drive does not support NVMe Sanitize (SANICAP, transport {})",
                o.transport
            ))
        },
    ));
    v.push((
        "nvme-format",
        if o.nvme_format {
            Ok((
                Method::NvmeFormat,
                false,
                false,
                "NVMe Format NVM, secure erase setting 1 (user data erase)".into(),
            ))
        } else {
            Err(format!(
                "the drive does not support NVMe Format NVM (transport {})",
                o.transport
            ))
        },
    ));
    let (ow, blk, cr) = o.ata_sanitize;
    v.push((
        "ata-sanitize",
        if blk {
            Ok((
                Method::AtaSanitize,
                false,
                true,
                "ATA SANITIZE BLOCK ERASE EXT".into(),
            ))
        } else if cr {
            Ok((
                Method::AtaSanitize,
                true,
                false,
                "ATA SANITIZE CRYPTO SCRAMBLE EXT".into(),
            ))
        } else if ow {
            Err("overwrite only: it leaves every block written, not fresh".into())
        } else {
            Err(format!(
                "the drive does not support ATA SANITIZE (transport {})",
                o.transport
            ))
        },
    ));
    let (sow, sblk, scr) = o.scsi_sanitize;
    v.push((
        "scsi-sanitize",
        if sblk {
            Ok((
                Method::ScsiSanitize,
                false,
                false,
                "SCSI SANITIZE BLOCK ERASE (REPORT SUPPORTED OPERATION CODES)".into(),
            ))
        } else if scr {
            Ok((
                Method::ScsiSanitize,
                true,
                false,
                "SCSI SANITIZE CRYPTOGRAPHIC ERASE (REPORT SUPPORTED OPERATION CODES)".into(),
            ))
        } else if sow {
            Err("overwrite only: it leaves every block written, not fresh".into())
        } else {
            Err(format!(
                "the drive does not report SCSI SANITIZE (REPORT SUPPORTED OPERATION CODES, transport {})",
                o.transport
            ))
        },
    ));
    // ATA security erase: below SANITIZE (whose block erase is the
    // dependable purge of flash), above a discard. Enhanced when offered
    // (it reaches reallocated sectors too), else normal.
    let sec = |enhanced: bool| -> Result<Candidate, String> {
        let Some(s) = o.ata_security else {
            return Err(format!(
                "ATA security erase is not supported by this drive (transport {}: no ATA IDENTIFY)",
                o.transport
            ));
        };
        if let Some(r) = s.refusal(enhanced) {
            return Err(r.to_string());
        }
        let (m, mode) = if enhanced {
            (Method::AtaSecurityEraseEnhanced, "enhanced")
        } else {
            (Method::AtaSecurityErase, "normal")
        };
        Ok((
            m,
            false,
            false,
            format!(
                "ATA SECURITY ERASE UNIT, {mode} mode (the drive estimates {})",
                s.erase_time(enhanced)
            ),
        ))
    };
    let enhanced = o.ata_security.is_some_and(|s| s.enhanced_erase_supported);
    v.push((
        "ata-security-erase-enhanced",
        if enhanced || o.ata_security.is_none() {
            sec(true)
        } else {
            Err(
                "the drive does not support enhanced security erase (IDENTIFY word 128 bit 5)"
                    .into(),
            )
        },
    ));
    v.push(("ata-security-erase", sec(false)));
    v.push((
        "discard",
        if o.discard {
            Ok((
                Method::Discard,
                false,
                false,
                "whole-device discard (BLKDISCARD): the drive is told no LBA holds data".into(),
            ))
        } else {
            Err("the drive does not support discard".into())
        },
    ));
    v
}

/// The `--purge` names: every method [`candidates`] knows.
pub const PURGE_METHODS: [&str; 7] = [
    "nvme-sanitize",
    "nvme-format",
    "ata-sanitize",
    "scsi-sanitize",
    "ata-security-erase-enhanced",
    "ata-security-erase",
    "discard",
];

/// Choose the purge for a drive offering `o`: the strongest it offers
/// (`requested` None), or exactly `requested` — an error saying why when
/// the drive cannot (a refusal: nothing is written).
pub fn choose_requested(o: &Offers, requested: Option<Method>) -> Result<PurgeChoice, String> {
    let all = candidates(o);
    if let Some(m) = requested {
        let name = m.name();
        let Some((_, c)) = all.iter().find(|(n, _)| *n == name) else {
            return Err(format!(
                "--purge {name} is not a purge method; use one of {}",
                PURGE_METHODS.join(", ")
            ));
        };
        return match c {
            Ok((m, crypto, ata_block, reason)) => Ok(PurgeChoice {
                method: Some(*m),
                crypto: *crypto,
                ata_block: *ata_block,
                reason: format!("requested: {reason}"),
                methods: vec![(name.to_string(), "yes (requested)".to_string())],
            }),
            Err(why) => Err(format!("--purge {name}: {why}")),
        };
    }
    Ok(choose(o))
}

/// Choose the strongest purge a drive offering `o` supports.
pub fn choose(o: &Offers) -> PurgeChoice {
    let mut methods = Vec::new();
    let mut pick: Option<Candidate> = None;
    for (name, c) in candidates(o) {
        match c {
            Ok(p) => {
                methods.push((
                    name.to_string(),
                    if pick.is_none() {
                        "yes".to_string()
                    } else {
                        "offered (a stronger method is used)".to_string()
                    },
                ));
                if pick.is_none() {
                    pick = Some(p);
                }
            }
            Err(why) => methods.push((name.to_string(), why)),
        }
    }
    match pick {
        Some((m, crypto, ata_block, reason)) => PurgeChoice {
            method: Some(m),
            crypto,
            ata_block,
            reason,
            methods,
        },
        None => PurgeChoice {
            method: None,
            crypto: false,
            ata_block: false,
            reason: "the drive offers no sanitize, secure format, security erase or discard"
                .to_string(),
            methods,
        },
    }
}

/// Erase options for a sanitize or format purge: no read-back, results
/// (certificate, erase journal) in `dir`.
fn erase_options(
    c: &PurgeChoice,
    dir: &std::path::Path,
    command_line: &str,
    version: &str,
) -> Result<drivelab_erase::Options, SeasonError> {
    Ok(drivelab_erase::Options {
        method: c.method.unwrap_or(Method::Auto),
        pattern: Pattern::AllZeros,
        passes: 1,
        verify: VerifyMode::None,
        skip_errors: false,
        retries: 3,
        resume: false,
        crypto: c.crypto,
        discard_first: false,
        certificate_dir: dir.to_path_buf(),
        key_dir: drivelab_erase::cert::config_dir()?,
        transfer: None,
        queue_depth: None,
        bus_limit: None,
        strategy: Strategy::Sequential,
        command_line: command_line.to_string(),
        version: version.to_string(),
        parties: drivelab_erase::Parties::default(),
        stall: drivelab_erase::StallLimit::Derived,
    })
}

/// Purge the one drive of `plan` (held by its claim) as `c` says.
/// Returns the stage's record; None when stopped.
pub fn purge(
    plan: &mut Plan,
    c: &PurgeChoice,
    dir: &std::path::Path,
    stop: &AtomicBool,
    command_line: &str,
    version: &str,
) -> Result<Option<Purge>, SeasonError> {
    let t0 = Instant::now();
    let mut rec = Purge {
        method: c.method.map(|m| m.name().to_string()),
        result: String::new(),
        reason: c.reason.clone(),
        methods: c.methods.clone(),
        seconds: 0.0,
        certificate: None,
    };
    match c.method {
        None => {
            rec.result = format!("not purged: {}", c.reason);
        }
        Some(Method::Discard) => {
            let (_, claim) = plan
                .drives_claimed()
                .next()
                .ok_or_else(|| SeasonError::BadOption("no drive claimed".into()))?;
            let size = claim.size();
            let dev = claim.path().display().to_string();
            let mut off = 0u64;
            while off < size {
                if stop.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                let len = (size - off).min(1 << 30);
                claim.discard(off, len).map_err(|e| SeasonError::Io {
                    device: dev.clone(),
                    what: format!("discard of {len} bytes at byte {off}"),
                    source: e,
                })?;
                off += len;
            }
            rec.result = format!("purged: whole-device discard of {size} bytes");
        }
        Some(m) => {
            let opts = erase_options(c, dir, command_line, version)?;
            if let Some(d) = plan.drives.first_mut() {
                if c.ata_block {
                    // Erase picks overwrite when offered; a fresh SSD wants block erase.
                    d.offers.ata_sanitize.0 = false;
                }
                d.choice = Choice {
                    method: m,
                    reason: format!("drivelab season purge: {}", c.reason),
                };
            }
            let prog = [Arc::new(Progress::default())];
            let out = drivelab_erase::run::run_all(plan, &opts, stop, &prog)?;
            let o = out
                .into_iter()
                .next()
                .ok_or_else(|| SeasonError::BadOption("no drive purged".into()))?;
            if o.result == drivelab_erase::EraseResult::Stopped {
                return Ok(None);
            }
            if let Some(e) = o.error {
                return Err(SeasonError::Command {
                    device: o.device,
                    what: format!("purge by {m}"),
                    why: e,
                });
            }
            rec.result = format!("purged: {} ({})", c.reason, o.result);
            rec.certificate = o.certificate;
        }
    }
    rec.seconds = t0.elapsed().as_secs_f64();
    Ok(Some(rec))
}

/// The identity of a planned drive.
pub fn identity(d: &Drive) -> crate::result::Identity {
    let caps_id = d.caps.as_ref().map(|c| &c.identity);
    crate::result::Identity {
        device: d.dev.path.display().to_string(),
        model: d
            .dev
            .model
            .clone()
            .or_else(|| caps_id.and_then(|i| i.model.clone())),
        serial: d.serial().map(String::from),
        firmware: d
            .dev
            .firmware
            .clone()
            .or_else(|| caps_id.and_then(|i| i.firmware.clone())),
        capacity_bytes: d.size,
        logical_block: d.lbs,
        transport: d.offers.transport.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::ata_security::SecurityState;

    #[test]
    fn a_sas_drive_is_purged_by_scsi_sanitize_as_it_reports() {
        // (overwrite, block, crypto) as REPORT SUPPORTED OPERATION CODES
        // said, the method and crypto chosen (None: discard, the next).
        let table: [((bool, bool, bool), Option<bool>); 5] = [
            ((true, true, true), Some(false)),
            ((false, true, false), Some(false)),
            ((false, false, true), Some(true)),
            ((true, false, false), None),
            ((false, false, false), None),
        ];
        for (offered, want) in table {
            let sas = Offers {
                transport: "scsi".into(),
                scsi_sanitize: offered,
                discard: true,
                ..Offers::default()
            };
            let c = choose(&sas);
            match want {
                Some(crypto) => {
                    assert_eq!((c.method, c.crypto), (Some(Method::ScsiSanitize), crypto));
                    assert!(c.reason.contains("SCSI SANITIZE"), "{}", c.reason);
                }
                None => assert_eq!(c.method, Some(Method::Discard), "{offered:?}"),
            }
            assert!(choose_requested(&sas, Some(Method::ScsiSanitize)).is_ok() == want.is_some());
        }
    }

    #[test]
    fn the_strongest_offered_method_wins() {
        let nvme = Offers {
            transport: "nvme".into(),
            nvme_format: true,
            nvme_sanitize: (false, true, false),
            discard: true,
            ..Offers::default()
        };
        let c = choose(&nvme);
        assert_eq!((c.method, c.crypto), (Some(Method::NvmeSanitize), true));
        assert!(c
            .methods
            .iter()
            .any(|(n, v)| n == "nvme-format" && v.contains("stronger")));
        let fmt = Offers {
            nvme_sanitize: (false, false, false),
            ..nvme.clone()
        };
        assert_eq!(choose(&fmt).method, Some(Method::NvmeFormat));
        let ata = Offers {
            transport: "ata-via-sat".into(),
            ata_sanitize: (true, true, false),
            ata_security: Some(SecurityState::from_words(2, 1, 1, 0x21)),
            discard: true,
            ..Offers::default()
        };
        let c = choose(&ata);
        assert_eq!(c.method, Some(Method::AtaSanitize));
        assert!(c.ata_block && !c.crypto);
        // Overwrite alone is no purge for seasoning: security erase is used,
        // enhanced when offered, reported by name.
        let ow = Offers {
            ata_sanitize: (true, false, false),
            ..ata.clone()
        };
        let c = choose(&ow);
        assert_eq!(c.method, Some(Method::AtaSecurityEraseEnhanced));
        assert!(
            c.reason.contains("ATA SECURITY ERASE UNIT, enhanced"),
            "{}",
            c.reason
        );
        let normal = Offers {
            ata_security: Some(SecurityState::from_words(2, 1, 1, 0x01)),
            ..ow.clone()
        };
        assert_eq!(choose(&normal).method, Some(Method::AtaSecurityErase));
        // Frozen: discard, and the list says how to unfreeze.
        let frozen = Offers {
            ata_security: Some(SecurityState::from_words(2, 1, 1, 0x09)),
            ..ow.clone()
        };
        let c = choose(&frozen);
        assert_eq!(c.method, Some(Method::Discard));
        let (_, why) = c
            .methods
            .iter()
            .find(|(n, _)| n == "ata-security-erase")
            .unwrap();
        assert!(why.contains("frozen") && why.contains("hot-plug"), "{why}");
    }

    #[test]
    fn nothing_offered_is_not_purged_and_says_why() {
        let none = Offers {
            transport: "ata-via-sat".into(),
            ata_security: Some(SecurityState::default()),
            ..Offers::default()
        };
        let c = choose(&none);
        assert_eq!(c.method, None);
        assert!(c.reason.contains("no sanitize"), "{}", c.reason);
        let (_, why) = c
            .methods
            .iter()
            .find(|(n, _)| n == "ata-security-erase")
            .unwrap();
        assert!(why.contains("not supported by this drive"), "{why}");
    }

    #[test]
    fn a_requested_purge_the_drive_lacks_is_refused_by_name() {
        // QEMU's NVMe disk: Format NVM, no Sanitize.
        let qemu_nvme = Offers {
            transport: "nvme".into(),
            nvme_format: true,
            discard: true,
            ..Offers::default()
        };
        let c = choose_requested(&qemu_nvme, Some(Method::NvmeFormat)).unwrap();
        assert_eq!(c.method, Some(Method::NvmeFormat));
        assert!(
            c.reason.starts_with("requested: NVMe Format NVM"),
            "{}",
            c.reason
        );
        let e = choose_requested(&qemu_nvme, Some(Method::NvmeSanitize)).unwrap_err();
        assert!(
            e.starts_with("--purge nvme-sanitize: the drive does not support NVMe Sanitize"),
            "{e}"
        );
        let e = choose_requested(&qemu_nvme, Some(Method::AtaSecurityErase)).unwrap_err();
        assert!(e.contains("not supported by this drive"), "{e}");
        let e = choose_requested(&qemu_nvme, Some(Method::Stream)).unwrap_err();
        assert!(e.contains("not a purge method"), "{e}");
        assert_eq!(
            choose_requested(&qemu_nvme, None).unwrap().method,
            Some(Method::NvmeFormat)
        );
        for n in PURGE_METHODS {
            assert!(n.parse::<Method>().is_ok(), "{n}");
        }
    }
}
