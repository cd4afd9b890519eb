//! The drive's own self-test: started through a claim (it changes the
//! drive's state, so it needs the same consent as a writer), polled for
//! progress, aborted on request, and its result read from the drive's log.
//!
//! - ATA: SMART EXECUTE OFF-LINE IMMEDIATE (B0h/D4h; LBA 7:0 01h short,
//!   02h extended, 7Fh abort, all in off-line mode); progress in SMART
//!   READ DATA byte 363; results in the SMART self-test log (READ LOG 06h:
//!   21 descriptors of 24 bytes from byte 2, byte 508 the most recent).
//! - SCSI: SEND DIAGNOSTIC (1Dh) with SELF-TEST CODE 001b background short,
//!   010b background extended, 100b abort; progress and results in the
//!   self-test results log page (10h), entry 0001h.
//! - NVMe: Device Self-test (admin 14h; CDW10 STC 1h short, 2h extended,
//!   Fh abort); progress and results in the Device Self-test log (06h:
//!   byte 0 current operation, byte 1 percent done, 20 results of 28 bytes
//!   from byte 4).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ata_smart::{self, feature, SmartData, SIGNATURE};
use super::scsi_log;
use crate::ata::{self, execute, AtaData, AtaPassThrough, Protocol};
use crate::claim::{Claim, ClaimOptions, Consent};
use crate::nvme::{NvmeCommand, NvmeData, NvmeDevice, Queue};
use crate::passthrough::{Failure, OpError, WriteConsent};
use crate::scsi::sg::{ScsiCommand, SgDevice};

/// Which test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The short test (minutes).
    Short,
    /// The extended test (a full surface scan: hours on a large disk).
    Extended,
}

/// ATA SMART EXECUTE OFF-LINE IMMEDIATE with subcommand `sub` in LBA 7:0.
pub fn ata_execute(sub: u8) -> AtaPassThrough {
    AtaPassThrough::new(
        Protocol::NonData,
        ata_smart::smart_taskfile(feature::EXECUTE_OFFLINE_IMMEDIATE)
            .lba(SIGNATURE | u64::from(sub)),
    )
    .byt_blok(false)
}

/// ATA subcommands: short / extended off-line, abort.
pub fn ata_subcommand(k: Option<Kind>) -> u8 {
    match k {
        Some(Kind::Short) => 0x01,
        Some(Kind::Extended) => 0x02,
        None => 0x7F,
    }
}

/// SEND DIAGNOSTIC (SPC-5 6.42): byte 1 bits 7:5 SELF-TEST CODE, no
/// parameter list.
pub fn send_diagnostic(k: Option<Kind>) -> [u8; 6] {
    let code: u8 = match k {
        Some(Kind::Short) => 0b001,
        Some(Kind::Extended) => 0b010,
        None => 0b100,
    };
    [0x1D, code << 5, 0, 0, 0, 0]
}

/// NVMe Device Self-test for namespace `nsid` (FFFFFFFFh: the controller
/// and every namespace).
pub fn nvme_device_self_test(k: Option<Kind>, nsid: u32) -> NvmeCommand {
    let stc = match k {
        Some(Kind::Short) => 0x1,
        Some(Kind::Extended) => 0x2,
        None => 0xF,
    };
    NvmeCommand::new(Queue::Admin, 0x14, "Device Self-test")
        .nsid(nsid)
        .cdw10(stc)
}

/// One self-test result from a drive's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoggedResult {
    /// The test's code as the log gives it (ATA subcommand, SCSI
    /// SELF-TEST CODE, NVMe STC).
    pub code: u8,
    /// The result code (ATA execution status bits 7:4, SCSI SELF-TEST
    /// RESULTS, NVMe result; 0 = completed without error).
    pub result: u8,
    /// The result in words.
    pub result_name: &'static str,
    /// Power-on hours when it ran.
    pub power_on_hours: u64,
    /// The first failing LBA, when the drive gives one.
    pub failing_lba: Option<u64>,
}

impl LoggedResult {
    /// Whether the test found the drive failing: an ATA execution status
    /// or SCSI self-test result from 3 (a fatal error or an unknown test
    /// element failed) to 8 (handling damage: electrical, servo, read).
    /// Aborted or interrupted tests (1, 2) are not failures of the drive.
    pub fn failed(&self) -> bool {
        (3..=8).contains(&self.result)
    }

    /// Whether an NVMe self-test found the drive failing: a fatal error
    /// (5), or a segment that failed (6, 7); the others are aborts.
    pub fn nvme_failed(&self) -> bool {
        (5..=7).contains(&self.result)
    }
}

/// The newest entry of an ATA drive's SMART self-test log (log 06h, read
/// with SMART READ LOG); `None` when the log is empty.
pub fn ata_latest(sg: &SgDevice) -> Result<Option<LoggedResult>, ata::AtaError> {
    let mut d = vec![0u8; 512];
    execute(
        sg,
        &AtaPassThrough::new(Protocol::PioDataIn, ata::smart_read_log(0x06, 1)),
        "SMART READ LOG 06h (self-test log)",
        AtaData::In(&mut d),
    )?;
    Ok(ata_log_latest(&d))
}

/// ATA self-test execution status (bits 7:4 of byte 363, or of a log
/// descriptor's byte 1), in words (ACS-3 table "Self-test execution status").
pub fn ata_status_name(s: u8) -> &'static str {
    match s {
        0 => "completed without error",
        1 => "aborted by the host",
        2 => "interrupted by a reset",
        3 => "fatal error, unable to complete",
        4 => "failed, element unknown",
        5 => "failed in the electrical element",
        6 => "failed in the servo element",
        7 => "failed in the read element",
        8 => "failed, suspected handling damage",
        15 => "in progress",
        _ => "reserved",
    }
}

/// The most recent entry of the ATA SMART self-test log (log 06h).
pub fn ata_log_latest(d: &[u8]) -> Option<LoggedResult> {
    if d.len() < 512 || d[508] == 0 || d[508] > 21 {
        return None;
    }
    let at = 2 + 24 * (usize::from(d[508]) - 1);
    let e = &d[at..at + 24];
    let lba = u64::from_le_bytes([e[5], e[6], e[7], e[8], 0, 0, 0, 0]);
    let result = e[1] >> 4;
    Some(LoggedResult {
        code: e[0],
        result,
        result_name: ata_status_name(result),
        power_on_hours: u64::from(u16::from_le_bytes([e[2], e[3]])),
        failing_lba: (result != 0 && result != 15 && lba != 0 && lba != 0x0FFF_FFFF).then_some(lba),
    })
}

/// NVMe Device Self-test log (06h): the current operation, its percent
/// done, and the newest result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NvmeSelfTestLog {
    /// Current operation (byte 0 bits 3:0): 0 none, 1 short, 2 extended.
    pub current: u8,
    /// Percent done of the current operation (byte 1 bits 6:0).
    pub percent: u8,
    /// The newest result (bytes 4-31), when its result is not Fh (unused).
    pub latest: Option<LoggedResult>,
}

/// NVMe self-test result codes (Base 2.0 "Self-test Result Data Structure").
pub fn nvme_result_name(r: u8) -> &'static str {
    match r {
        0 => "completed without error",
        1 => "aborted by a Device Self-test command",
        2 => "aborted by a Controller Level Reset",
        3 => "aborted by a namespace removal",
        4 => "aborted by a Format NVM command",
        5 => "fatal error or unknown test error",
        6 => "completed with a failed segment (unknown which)",
        7 => "completed with one or more failed segments",
        8 => "aborted for unknown reason",
        9 => "aborted by a sanitize operation",
        15 => "unused entry",
        _ => "reserved",
    }
}

impl NvmeSelfTestLog {
    /// Decode (at least 32 bytes).
    pub fn parse(d: &[u8]) -> Option<NvmeSelfTestLog> {
        if d.len() < 32 {
            return None;
        }
        let e = &d[4..32];
        let result = e[0] & 0x0F;
        let mut l = [0u8; 8];
        l.copy_from_slice(&e[16..24]);
        let mut h = [0u8; 8];
        h.copy_from_slice(&e[4..12]);
        Some(NvmeSelfTestLog {
            current: d[0] & 0x0F,
            percent: d[1] & 0x7F,
            latest: (result != 0x0F).then(|| LoggedResult {
                code: e[0] >> 4,
                result,
                result_name: nvme_result_name(result),
                power_on_hours: u64::from_le_bytes(h),
                // Valid Diagnostic Information bit 1: FLBA valid.
                failing_lba: (e[2] & 0x2 != 0).then(|| u64::from_le_bytes(l)),
            }),
        })
    }
}

/// Where a running test is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Still running.
    pub running: bool,
    /// Percent done, when the drive says.
    pub percent: Option<u8>,
}

enum Handle {
    Ata(SgDevice),
    Scsi(SgDevice),
    Nvme(NvmeDevice, u32),
}

/// A started self-test: poll it, abort it, read its result. Holds the
/// claim for as long as it lives.
pub struct Session {
    path: PathBuf,
    kind: Kind,
    handle: Handle,
    _claim: Option<Claim>,
}

/// The end of a self-test as the drive's log gives it.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The device.
    pub device: String,
    /// "ata-via-sat", "scsi" or "nvme".
    pub transport: &'static str,
    /// Which test.
    pub kind: Kind,
    /// Whether drivelab aborted it (Ctrl-C).
    pub aborted: bool,
    /// Whether it was left running (`--no-wait`).
    pub running: bool,
    /// The newest entry of the drive's self-test log (`null` when the
    /// drive keeps none).
    pub result: Option<LoggedResult>,
}

/// Open `dev` for a self-test: consent (`--yes`), the claim (the same
/// safety check as every writer; `--force` for a character device), and
/// which command set it speaks. Nothing is sent that changes the drive:
/// call [`Session::start`] once every drive is open.
pub fn open(dev: &Path, kind: Kind, consent: &WriteConsent) -> Result<Session, OpError> {
    use std::os::unix::fs::FileTypeExt;
    if !consent.yes {
        return Err(OpError::Invalid(format!(
            "'health {} --self-test' starts the drive's self-test (it changes the drive's state, not its data); add --yes to confirm",
            dev.display()
        )));
    }
    let md = std::fs::metadata(dev).map_err(|error| OpError::Missing {
        path: dev.to_path_buf(),
        error,
    })?;
    let claim = if md.file_type().is_block_device() {
        let c = Consent {
            force: consent.force,
            confirm: None,
        };
        Some(Claim::open(dev, &c, &ClaimOptions::default()).map_err(OpError::Unsafe)?)
    } else if md.file_type().is_char_device() {
        if !consent.force {
            return Err(OpError::CharacterDevice(dev.to_path_buf()));
        }
        None
    } else {
        return Err(OpError::NotADevice(dev.to_path_buf()));
    };
    let nvme = match &claim {
        Some(c) => NvmeDevice::claimed(c).ok().filter(|d| d.nsid().is_some()),
        None => NvmeDevice::open_forced_char(dev).ok().filter(|_| {
            dev.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("nvme"))
        }),
    };
    let handle = if let Some(d) = nvme {
        let nsid = d.nsid().unwrap_or(0xFFFF_FFFF);
        Handle::Nvme(d, nsid)
    } else {
        let sg = match &claim {
            Some(c) => SgDevice::claimed(c)?,
            None => SgDevice::open_forced_char(dev)?,
        };
        match ata::identify_device(&sg) {
            Ok(_) => Handle::Ata(sg),
            Err(e) if e.is_not_supported() && !matches!(e, ata::AtaError::Device { .. }) => {
                Handle::Scsi(sg)
            }
            Err(e) => return Err(e.into()),
        }
    };
    Ok(Session {
        path: dev.to_path_buf(),
        kind,
        handle,
        _claim: claim,
    })
}

impl Session {
    /// The device.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Start the test. A drive that refuses gives [`OpError::Failed`]
    /// ("… not supported by this device" with the decoded answer).
    pub fn start(&self) -> Result<(), OpError> {
        let kind = Some(self.kind);
        match &self.handle {
            Handle::Ata(sg) => {
                execute(
                    sg,
                    &ata_execute(ata_subcommand(kind)),
                    "SMART EXECUTE OFF-LINE IMMEDIATE",
                    AtaData::None,
                )?;
            }
            Handle::Scsi(sg) => {
                let cdb = send_diagnostic(kind);
                let r = sg.execute(&mut ScsiCommand::new(&cdb))?;
                r.check(&cdb)?;
            }
            Handle::Nvme(d, nsid) => {
                d.execute(&nvme_device_self_test(kind, *nsid), NvmeData::None)?;
            }
        }
        Ok(())
    }

    fn transport(&self) -> &'static str {
        match self.handle {
            Handle::Ata(_) => "ata-via-sat",
            Handle::Scsi(_) => "scsi",
            Handle::Nvme(..) => "nvme",
        }
    }

    /// Ask the drive how far the test is.
    pub fn poll(&self) -> Result<Progress, OpError> {
        match &self.handle {
            Handle::Ata(sg) => {
                let mut d = vec![0u8; 512];
                execute(
                    sg,
                    &ata_smart::read_data(),
                    "SMART READ DATA",
                    AtaData::In(&mut d),
                )?;
                let s = SmartData::parse(&d, None)
                    .ok_or_else(|| Failure::line("SMART data too short"))?;
                let running = s.self_test_status >> 4 == 15;
                Ok(Progress {
                    running,
                    percent: running.then(|| 100 - 10 * (s.self_test_status & 0x0F).min(10)),
                })
            }
            Handle::Scsi(sg) => {
                let latest = scsi_log::log_sense(sg, scsi_log::page::SELF_TEST)
                    .ok()
                    .and_then(|d| scsi_log::LogPage::parse(&d))
                    .map(|p| scsi_log::self_test_results(&p));
                let running = latest
                    .as_ref()
                    .and_then(|v| v.first())
                    .is_some_and(|r| r.result == 15);
                Ok(Progress {
                    running,
                    percent: None,
                })
            }
            Handle::Nvme(d, _) => {
                let l = nvme_log(d)?;
                Ok(Progress {
                    running: l.current != 0,
                    percent: (l.current != 0).then_some(l.percent),
                })
            }
        }
    }

    /// Abort the running test.
    pub fn abort(&self) -> Result<(), OpError> {
        match &self.handle {
            Handle::Ata(sg) => {
                execute(
                    sg,
                    &ata_execute(ata_subcommand(None)),
                    "SMART EXECUTE OFF-LINE IMMEDIATE (abort)",
                    AtaData::None,
                )?;
            }
            Handle::Scsi(sg) => {
                let cdb = send_diagnostic(None);
                let r = sg.execute(&mut ScsiCommand::new(&cdb))?;
                r.check(&cdb)?;
            }
            Handle::Nvme(d, nsid) => {
                d.execute(&nvme_device_self_test(None, *nsid), NvmeData::None)?;
            }
        }
        Ok(())
    }

    /// The newest entry of the drive's self-test log.
    pub fn outcome(&self, aborted: bool, running: bool) -> Result<Outcome, OpError> {
        let result = match &self.handle {
            Handle::Ata(sg) => ata_latest(sg)?,
            Handle::Scsi(sg) => scsi_log::log_sense(sg, scsi_log::page::SELF_TEST)
                .ok()
                .and_then(|d| scsi_log::LogPage::parse(&d))
                .and_then(|p| scsi_log::self_test_results(&p).into_iter().next())
                .map(|r| LoggedResult {
                    code: r.code,
                    result: r.result,
                    result_name: r.result_name,
                    power_on_hours: u64::from(r.power_on_hours),
                    failing_lba: r.first_failure_lba,
                }),
            Handle::Nvme(d, _) => nvme_log(d)?.latest,
        };
        Ok(Outcome {
            device: self.path.display().to_string(),
            transport: self.transport(),
            kind: self.kind,
            aborted,
            running,
            result,
        })
    }
}

/// An NVMe controller's Device Self-test log (06h, all of it).
pub fn nvme_log(d: &NvmeDevice) -> Result<NvmeSelfTestLog, OpError> {
    let mut buf = vec![0u8; 564];
    // The whole log: 4 bytes of header and 20 results of 28 bytes.
    d.execute(
        &NvmeCommand::get_log_page(0x06, 0xFFFF_FFFF, 564),
        NvmeData::In(&mut buf),
    )?;
    NvmeSelfTestLog::parse(&buf)
        .ok_or_else(|| Failure::line("Device Self-test log too short").into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_results_are_failures_of_the_drive() {
        let r = |result| LoggedResult {
            code: 1,
            result,
            result_name: "",
            power_on_hours: 0,
            failing_lba: None,
        };
        // (result, ATA / SCSI failure, NVMe failure)
        let cases = [
            (0, false, false),
            (1, false, false),
            (2, false, false),
            (3, true, false),
            (4, true, false),
            (5, true, true),
            (6, true, true),
            (7, true, true),
            (8, true, false),
            (9, false, false),
            (15, false, false),
        ];
        for (result, ata, nvme) in cases {
            assert_eq!(
                (r(result).failed(), r(result).nvme_failed()),
                (ata, nvme),
                "{result}"
            );
        }
    }

    #[test]
    fn start_and_abort_commands_match_the_standards() {
        let c = ata_execute(ata_subcommand(Some(Kind::Short))).build16();
        // FEATURE D4h, LBA 7:0 01h, mid/high 4Fh/C2h, COMMAND B0h.
        assert_eq!(
            (c[4], c[8], c[10], c[12], c[14]),
            (0xD4, 0x01, 0x4F, 0xC2, 0xB0)
        );
        assert_eq!(
            ata_execute(ata_subcommand(Some(Kind::Extended))).build16()[8],
            0x02
        );
        assert_eq!(ata_execute(ata_subcommand(None)).build16()[8], 0x7F);
        assert_eq!(send_diagnostic(Some(Kind::Short)), [0x1D, 0x20, 0, 0, 0, 0]);
        assert_eq!(send_diagnostic(Some(Kind::Extended))[1], 0x40);
        assert_eq!(send_diagnostic(None)[1], 0x80);
        let n = nvme_device_self_test(Some(Kind::Extended), 1);
        assert_eq!((n.cmd.opcode, n.cmd.nsid, n.cmd.cdw10), (0x14, 1, 2));
        assert_eq!(nvme_device_self_test(None, 1).cmd.cdw10, 0xF);
        // Every start is refused on an unclaimed handle.
        assert!(crate::scsi::modifies_medium(&ata_execute(1).build16()));
        assert!(crate::scsi::modifies_medium(&send_diagnostic(Some(
            Kind::Short
        ))));
        assert!(crate::nvme::modifies_medium(Queue::Admin, n.cmd.opcode));
    }

    #[test]
    fn ata_self_test_log_latest_descriptor() {
        let mut d = vec![0u8; 512];
        // Descriptor 2 (the most recent, byte 508 = 2): extended, failed in
        // the read element (7), at 0x1234 hours, LBA 0x00ABCDEF.
        let at = 2 + 24;
        d[at] = 0x02;
        d[at + 1] = 0x70 | 0x02;
        d[at + 2..at + 4].copy_from_slice(&0x1234u16.to_le_bytes());
        d[at + 5..at + 9].copy_from_slice(&0x00AB_CDEFu32.to_le_bytes());
        d[508] = 2;
        let r = ata_log_latest(&d).unwrap();
        assert_eq!((r.code, r.result, r.power_on_hours), (2, 7, 0x1234));
        assert_eq!(r.failing_lba, Some(0x00AB_CDEF));
        assert_eq!(r.result_name, "failed in the read element");
        d[508] = 0;
        assert!(ata_log_latest(&d).is_none(), "an empty log");
    }

    #[test]
    fn nvme_self_test_log_decodes() {
        let mut d = vec![0u8; 564];
        d[0] = 2;
        d[1] = 37;
        d[4] = (1 << 4) | 7;
        d[6] = 0x2;
        d[8..16].copy_from_slice(&500u64.to_le_bytes());
        d[20..28].copy_from_slice(&99u64.to_le_bytes());
        let l = NvmeSelfTestLog::parse(&d).unwrap();
        assert_eq!((l.current, l.percent), (2, 37));
        let r = l.latest.unwrap();
        assert_eq!(
            (r.code, r.result, r.power_on_hours, r.failing_lba),
            (1, 7, 500, Some(99))
        );
        d[4] = 0x0F;
        assert!(NvmeSelfTestLog::parse(&d).unwrap().latest.is_none());
    }
}
