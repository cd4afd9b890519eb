//! The one-command methods: NVMe Format NVM, NVMe Sanitize, ATA SANITIZE,
//! SCSI SANITIZE and ATA SECURITY ERASE UNIT. One command covers the whole drive; the
//! sanitize commands are polled to their end, their progress shown as they
//! go (security erase reports none: it returns when it is done). A
//! sanitize whose progress stands still past its bound ([`super::stall`])
//! is given up on, the journal saying where it stood. None of these
//! commands can be interrupted once sent: a stop (Ctrl-C) that comes while
//! one runs is seen when it has ended, and the drive then goes no further
//! (not verified, nothing certified), its journal saying the command is
//! done.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::stall::{StallWatch, Stalled};
use super::{Ctx, Flow};
use crate::method::{self, Method};
use crate::EraseError;

impl Ctx<'_> {
    /// Send the drive's whole-device command and wait for it to finish.
    pub(super) fn whole_device(&mut self, pass: u32) -> Result<Flow, EraseError> {
        let size = self.drive.size;
        if !self.before_command(0) {
            self.after_command();
            return Ok(Flow::Stopped);
        }
        let r = match self.drive.choice.method {
            Method::NvmeFormat => self.nvme_format().map(Some),
            Method::NvmeSanitize => self.nvme_sanitize().map(Some),
            Method::AtaSanitize => self.ata_sanitize().map(Some),
            Method::ScsiSanitize => self.scsi_sanitize().map(Some),
            Method::AtaSecurityErase => self.ata_security_erase(false),
            Method::AtaSecurityEraseEnhanced => self.ata_security_erase(true),
            other => Err(self.command_error(other.name(), "not a whole-device method".into())),
        };
        self.after_command();
        let Some(name) = r? else {
            return Ok(Flow::Stopped);
        };
        self.rec.command(&name, 1, size);
        self.rec.bytes += size;
        self.mark(pass, size)?;
        if self.stopped() {
            self.rec.stop_note = Some(format!(
                "after the drive's whole-device command had run to its end: it cannot be interrupted once sent, so drivelab waited for it ({name}); the erase is not verified and nothing is certified"
            ));
            return Ok(Flow::Stopped);
        }
        Ok(Flow::Done)
    }

    /// Give up on a stalled sanitize: the journal says where it stood, the
    /// error says so in one line.
    fn stalled(&mut self, what: &str, st: &Stalled, status: &str) -> EraseError {
        let note = format!(
            "{what} given up at {:.1} %: the drive reported it in progress with its progress unmoved for {} s",
            st.percent(),
            st.seconds
        );
        match self.journal.note(&note) {
            Ok(()) => self.command_error(what, st.message(status)),
            Err(e) => e,
        }
    }

    /// The device reports `progress` of 65,536 done.
    fn sanitize_progress(&self, progress: u16) {
        self.progress.done.store(
            self.drive.size * u64::from(progress) / 65_536,
            Ordering::Relaxed,
        );
    }

    /// NVMe Format NVM with user-data (SES 1) or cryptographic (SES 2)
    /// erase, keeping the LBA format in use.
    fn nvme_format(&self) -> Result<String, EraseError> {
        use drivelab_device::nvme::{self, NvmeCommand, NvmeData, NvmeDevice};
        let crypto = self.opts.crypto;
        let dev = NvmeDevice::claimed(self.claim)
            .map_err(|e| self.command_error("open", e.to_string()))?;
        let nsid = dev
            .require_nsid()
            .map_err(|e| self.command_error("namespace", e.to_string()))?;
        let ns = nvme::identify_namespace(&dev, nsid)
            .map_err(|e| self.command_error("Identify Namespace", e.to_string()))?;
        let ses = if crypto { 2 } else { 1 };
        let c = NvmeCommand::format_nvm(nsid, ns.lbaf_in_use, ses).timeout_ms(3_600_000);
        dev.execute(&c, NvmeData::None)
            .map_err(|e| self.command_error("Format NVM", e.to_string()))?;
        Ok(format!(
            "NVMe Format NVM (admin 80h), SES {ses} ({}), LBA format {} kept",
            if crypto {
                "cryptographic erase"
            } else {
                "user data erase"
            },
            ns.lbaf_in_use
        ))
    }

    /// NVMe Sanitize (block erase, overwrite or crypto erase, as
    /// [`method::nvme_sanitize_action`] picks for the drive and pattern),
    /// polled through the Sanitize Status log.
    fn nvme_sanitize(&mut self) -> Result<String, EraseError> {
        use drivelab_device::nvme::{self, NvmeCommand, NvmeData, NvmeDevice, SanitizeAction};
        use method::NvmeSanitizeAction as A;
        let d = self.drive;
        let act = method::nvme_sanitize_action(
            &d.offers,
            &self.opts.pattern,
            d.lbs as usize,
            self.opts.crypto,
        )
        .map_err(|why| self.command_error("Sanitize", why))?;
        let dev = NvmeDevice::claimed(self.claim)
            .map_err(|e| self.command_error("open", e.to_string()))?;
        let (cmd, what) = match act {
            A::Crypto => (
                NvmeCommand::sanitize(SanitizeAction::CryptoErase),
                "crypto erase".to_string(),
            ),
            A::BlockErase => (
                NvmeCommand::sanitize(SanitizeAction::BlockErase),
                "block erase".to_string(),
            ),
            A::Overwrite(w) => (
                NvmeCommand::sanitize_with(SanitizeAction::Overwrite, false, 1, false, false, w),
                format!("overwrite, pattern {:02x?}, one pass", w.to_le_bytes()),
            ),
        };
        dev.execute(&cmd, NvmeData::None)
            .map_err(|e| self.command_error("Sanitize", e.to_string()))?;
        // The Sanitize Status log's estimate for this action (bytes 8-19:
        // overwrite, block erase, crypto erase; FFFFFFFFh: none).
        let slot = match act {
            A::Overwrite(_) => 0,
            A::BlockErase => 1,
            A::Crypto => 2,
        };
        let mut watch = StallWatch::new(self.opts.stall, Instant::now());
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let s = nvme::sanitize_status(&dev)
                .map_err(|e| self.command_error("Sanitize Status log", e.to_string()))?;
            self.sanitize_progress(s.progress);
            match s.status {
                2 => {}
                1 | 4 => break,
                _ => return Err(self.command_error("Sanitize", s.status_name)),
            }
            let est = s.estimated_seconds[slot];
            watch.estimate((est != u32::MAX).then(|| Duration::from_secs(u64::from(est))));
            if let Some(st) = watch.see(Some(s.progress), Instant::now()) {
                let log = format!("Sanitize Status log: SSTAT {}", s.status_name);
                return Err(self.stalled("NVMe Sanitize", &st, &log));
            }
        }
        Ok(format!(
            "NVMe Sanitize (admin 84h), {what} ; Sanitize Status log 81h polled"
        ))
    }

    /// ATA SANITIZE: crypto scramble, overwrite with the pattern word, or
    /// block erase; polled with SANITIZE STATUS EXT.
    fn ata_sanitize(&mut self) -> Result<String, EraseError> {
        use drivelab_device::ata::{self, AtaSanitize, AtaSanitizeOp, AtaSanitizeStatus};
        use drivelab_device::sg::SgDevice;
        let d = self.drive;
        let mut sg =
            SgDevice::claimed(self.claim).map_err(|e| self.command_error("open", e.to_string()))?;
        sg.set_timeout_ms(60_000);
        let word = method::pattern_dword(&self.opts.pattern, d.lbs as usize);
        let (op, what) = match word {
            _ if self.opts.crypto => (
                AtaSanitize::new(AtaSanitizeOp::CryptoScramble),
                "CRYPTO SCRAMBLE EXT".to_string(),
            ),
            Some(w) if d.offers.ata_sanitize.0 => (
                AtaSanitize::new(AtaSanitizeOp::Overwrite).pattern(w),
                format!("OVERWRITE EXT, pattern {w:#010x}"),
            ),
            _ => (
                AtaSanitize::new(AtaSanitizeOp::BlockErase),
                "BLOCK ERASE EXT".to_string(),
            ),
        };
        ata::sanitize(&sg, &op).map_err(|e| self.command_error("SANITIZE", e.to_string()))?;
        // ATA reports no estimate of a sanitize's time.
        let mut watch = StallWatch::new(self.opts.stall, Instant::now());
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let regs = match ata::sanitize(&sg, &AtaSanitize::new(AtaSanitizeOp::Status)) {
                Ok(r) => r,
                // A drive whose sanitize failed answers SANITIZE STATUS EXT
                // with ABRT and the reason in LBA 7:0 (ACS-3 7.36.6); the
                // sanitize itself was accepted, so this is its failure.
                Err(ata::AtaError::Device { regs, .. }) => {
                    return Err(self.command_error(
                        "SANITIZE",
                        format!(
                            "the device reports the sanitize failed (SANITIZE STATUS EXT aborted, reason {:#04x} in LBA 7:0)",
                            regs.lba & 0xFF
                        ),
                    ))
                }
                Err(e) => return Err(self.command_error("SANITIZE STATUS EXT", e.to_string())),
            };
            let Some(regs) = regs else {
                if let Some(st) = watch.see(None, Instant::now()) {
                    let status = "SANITIZE STATUS EXT: no registers returned";
                    return Err(self.stalled("ATA SANITIZE", &st, status));
                }
                continue;
            };
            let s = AtaSanitizeStatus::from_registers(&regs);
            self.sanitize_progress(s.progress);
            if s.in_progress {
                if let Some(st) = watch.see(Some(s.progress), Instant::now()) {
                    let status = "SANITIZE STATUS EXT: SANITIZE OPERATION IN PROGRESS";
                    return Err(self.stalled("ATA SANITIZE", &st, status));
                }
                continue;
            }
            if !s.completed_ok {
                return Err(
                    self.command_error("SANITIZE", "the device reports the sanitize failed".into())
                );
            }
            break;
        }
        Ok(format!(
            "ATA SANITIZE {what} (B4h) via ATA PASS-THROUGH(16); SANITIZE STATUS EXT polled"
        ))
    }

    /// SCSI SANITIZE (block erase, overwrite or cryptographic erase, as
    /// [`method::scsi_sanitize_action`] picks for the drive and pattern),
    /// sent with IMMED and polled with REQUEST SENSE until the device no
    /// longer reports it in progress.
    fn scsi_sanitize(&mut self) -> Result<String, EraseError> {
        use drivelab_device::scsi::sanitize::{self, OverwriteParameters, SanitizeState};
        use drivelab_device::scsi::SanitizeAction;
        use drivelab_device::sg::SgDevice;
        use method::ScsiSanitizeAction as A;
        let d = self.drive;
        let mut sg =
            SgDevice::claimed(self.claim).map_err(|e| self.command_error("open", e.to_string()))?;
        sg.set_timeout_ms(60_000);
        let act = method::scsi_sanitize_action(
            &d.offers,
            &self.opts.pattern,
            d.lbs as usize,
            self.opts.crypto,
        )
        .map_err(|why| self.command_error("SANITIZE", why))?;
        let (action, params, what) = match act {
            A::Crypto => (
                SanitizeAction::CryptoErase,
                None,
                "CRYPTOGRAPHIC ERASE".to_string(),
            ),
            A::BlockErase => (SanitizeAction::BlockErase, None, "BLOCK ERASE".to_string()),
            A::Overwrite(w) => (
                SanitizeAction::Overwrite,
                Some(OverwriteParameters::new(&w.to_le_bytes())),
                format!("OVERWRITE, pattern {:02x?}, one pass", w.to_le_bytes()),
            ),
        };
        sanitize::sanitize_immed(&sg, action, params.as_ref())
            .map_err(|e| self.command_error("SANITIZE", e.to_string()))?;
        let mut polls = 0u64;
        // SCSI reports no estimate of a sanitize's time.
        let mut watch = StallWatch::new(self.opts.stall, Instant::now());
        loop {
            std::thread::sleep(Duration::from_secs(1));
            polls += 1;
            let state = sanitize::sanitize_state(&sg)
                .map_err(|e| self.command_error("REQUEST SENSE", e.to_string()))?;
            let seen = match state {
                SanitizeState::InProgress { progress } => {
                    self.sanitize_progress(progress);
                    Some(progress)
                }
                // A unit attention is reported once; the next REQUEST
                // SENSE shows the sanitize again.
                SanitizeState::Attention(_) => None,
                SanitizeState::Idle => break,
                SanitizeState::Failed => {
                    return Err(self.command_error(
                        "SANITIZE",
                        "the device reports the sanitize failed (REQUEST SENSE: MEDIUM ERROR, SANITIZE COMMAND FAILED, 31h/03h)".into(),
                    ))
                }
                SanitizeState::Other(s) => {
                    return Err(self.command_error(
                        "SANITIZE",
                        format!("REQUEST SENSE reports neither the sanitize running nor its end: {s}"),
                    ))
                }
            };
            if let Some(st) = watch.see(seen, Instant::now()) {
                let status = "REQUEST SENSE: NOT READY, SANITIZE IN PROGRESS, 04h/1Bh";
                return Err(self.stalled("SCSI SANITIZE", &st, status));
            }
        }
        Ok(format!(
            "SCSI SANITIZE {what} (48h, IMMED); REQUEST SENSE (03h) polled {polls} times until no sanitize was in progress"
        ))
    }

    /// ATA SECURITY ERASE UNIT (normal or enhanced) through the claimed
    /// SG_IO handle, with drivelab's temporary user password, removed
    /// again after any failure or a stop. `None` when stopped before the
    /// erase was sent (the password removed).
    fn ata_security_erase(&mut self, enhanced: bool) -> Result<Option<String>, EraseError> {
        use drivelab_device::ata_security::{self, SecurityEraseError};
        use drivelab_device::sg::SgDevice;
        let sg =
            SgDevice::claimed(self.claim).map_err(|e| self.command_error("open", e.to_string()))?;
        let what = if enhanced {
            "SECURITY ERASE UNIT (enhanced)"
        } else {
            "SECURITY ERASE UNIT"
        };
        match ata_security::security_erase(&sg, enhanced, self.shared.stop) {
            Ok(done) => Ok(Some(format!(
                "ATA {what} (F4h) via ATA PASS-THROUGH(16), after SECURITY SET PASSWORD (F1h, temporary user password) and SECURITY ERASE PREPARE (F3h); erase took {:.0} s (the drive estimated {}); security {} afterwards (IDENTIFY word 128)",
                done.erase_seconds,
                done.estimate,
                if done.after.enabled { "still enabled" } else { "disabled, no password" }
            ))),
            Err(SecurityEraseError::Stopped { cleanup, .. }) => {
                if matches!(cleanup, ata_security::Cleanup::StillSet { .. }) {
                    Err(self.command_error(what, format!("stopped; {cleanup}")))
                } else {
                    self.rec.stop_note =
                        Some(format!("before {what} was sent, nothing erased; {cleanup}"));
                    Ok(None)
                }
            }
            Err(e) => Err(self.command_error(what, e.to_string())),
        }
    }
}
