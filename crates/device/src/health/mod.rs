//! A drive's own view of its health, and capacity hidden from the host:
//! what `drivelab health DEV...` prints.
//!
//! Everything but [`selftest`] only reads, on handles that are not claimed (the
//! passthrough guard lets every command used here through, and refuses the
//! ones that would change the drive): no consent is needed.
//!
//! - [`ata_smart`]: SMART READ DATA / THRESHOLDS / RETURN STATUS (ATA disks
//!   behind a SATL).
//! - [`scsi_log`]: LOG SENSE pages (SCSI disks).
//! - [`nvme_health`]: the SMART / Health and Error Information logs.
//! - [`hidden`]: native vs accessible capacity (HPA, AMA, DCO; NVMe
//!   namespaces and unallocated capacity).
//! - [`delta`]: what changed between two snapshots (new reallocations,
//!   media errors, temperature peak, bytes the drive counts as written).
//! - [`selftest`]: the drive's own self-test, the one thing here that
//!   changes the drive's state: started through a claim, with consent.
//!
//! [`health`] asks one device everything that applies to it. A command the
//! drive refuses is recorded in [`Health::problems`] with its decoded
//! sense / registers / status, and the rest still runs; only a device that
//! cannot be asked at all is an error.

pub mod around;
pub mod ata_smart;
pub mod delta;
pub mod hidden;
pub mod nvme_health;
pub mod scsi_log;
pub mod selftest;
mod text;

use std::path::Path;

use serde::Serialize;

use crate::ata::{self, AtaError};
use crate::nvme::{self, NvmeDevice, NvmeError};
use crate::passthrough::{Failure, OpError, SHORT_TIMEOUT_MS};
use crate::scsi;
use crate::scsi::sg::SgDevice;

use ata_smart::{AtaSummary, OverallStatus, SmartData};
use hidden::{AtaCapacity, NvmeCapacity};
use nvme_health::{ErrorLogEntry, SmartHealthLog};
use scsi_log::{ErrorCounters, InformationalExceptions, SelfTestResult, StartStop, Temperature};

/// How the health commands reach the drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// NVMe admin commands.
    Nvme,
    /// ATA commands through the SCSI-to-ATA translation layer.
    AtaViaSat,
    /// SCSI commands.
    Scsi,
}

/// The drive's overall verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The drive reports no failure: ATA RETURN STATUS without a threshold
    /// exceeded, no pre-failure attribute at its threshold and its newest
    /// self-test not failed (a read, servo, electrical or unknown element
    /// failure is Failed, whatever RETURN STATUS says); SCSI
    /// informational exceptions ASC 0; NVMe critical warning 0 and the
    /// newest Device Self-test not failed.
    Passed,
    /// The drive predicts or reports a failure.
    Failed,
    /// The drive gave no verdict (the commands were refused).
    Unknown,
}

/// A command that failed while the others answered.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// The command, e.g. "SMART READ ATTRIBUTE THRESHOLDS", "LOG SENSE page 0x0E".
    pub command: String,
    /// One line: what happened.
    pub message: String,
    /// The decoded answer (sense, ATA registers, NVMe status).
    #[serde(flatten)]
    pub failure: Failure,
}

impl Problem {
    fn new(command: impl Into<String>, failure: Failure) -> Problem {
        Problem {
            command: command.into(),
            message: failure.line.clone(),
            failure,
        }
    }
}

/// ATA SMART.
#[derive(Debug, Clone, Serialize)]
pub struct AtaHealth {
    /// SMART RETURN STATUS (`unknown` when refused).
    pub status: OverallStatus,
    /// The attributes that matter, decoded.
    pub summary: AtaSummary,
    /// SMART READ DATA with the thresholds.
    pub smart: SmartData,
    /// The newest entry of the SMART self-test log (`null` when the log
    /// is empty, or the drive has no self-tests or refused the read).
    pub last_self_test: Option<selftest::LoggedResult>,
}

/// SCSI log pages (each `null` when the drive does not list or answer it).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScsiHealth {
    /// Page codes the drive lists (page 00h).
    pub supported_pages: Vec<u8>,
    /// Write error counters (02h).
    pub write_errors: Option<ErrorCounters>,
    /// Read error counters (03h).
    pub read_errors: Option<ErrorCounters>,
    /// Verify error counters (05h).
    pub verify_errors: Option<ErrorCounters>,
    /// Non-medium error count (06h, parameter 0000h).
    pub non_medium_errors: Option<u64>,
    /// Temperature (0Dh).
    pub temperature: Option<Temperature>,
    /// Environmental reports (0Dh subpage 01h), when the drive lists that
    /// subpage (page 00h subpage FFh).
    pub environment: Option<scsi_log::Environment>,
    /// Start-stop cycles (0Eh).
    pub start_stop: Option<StartStop>,
    /// Self-test results (10h), most recent first.
    pub self_tests: Option<Vec<SelfTestResult>>,
    /// Informational exceptions (2Fh).
    pub informational_exceptions: Option<InformationalExceptions>,
}

/// NVMe health.
#[derive(Debug, Clone, Serialize)]
pub struct NvmeHealth {
    /// SMART / Health Information (log 02h).
    pub smart: SmartHealthLog,
    /// Error Information log entries the controller keeps (ELPE + 1).
    pub error_log_capacity: u32,
    /// The non-empty Error Information entries (log 01h), newest first as
    /// the controller returns them.
    pub error_log: Vec<ErrorLogEntry>,
    /// The newest Device Self-test result (log 06h; `null` when the
    /// controller has no self-test (OACS bit 4), its log is empty, or it
    /// refused the read).
    pub last_self_test: Option<selftest::LoggedResult>,
}

/// Native vs accessible capacity.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Capacity {
    /// ATA: HPA / AMA / DCO.
    Ata(Box<AtaCapacity>),
    /// NVMe: namespace and controller capacity.
    Nvme(Box<NvmeCapacity>),
}

/// Everything `drivelab health` shows for one device.
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    /// The device path.
    pub device: String,
    /// How it was asked.
    pub transport: Transport,
    /// Model, as the drive reports it.
    pub model: Option<String>,
    /// Serial number.
    pub serial: Option<String>,
    /// Firmware revision.
    pub firmware: Option<String>,
    /// The overall verdict.
    pub verdict: Verdict,
    /// ATA SMART (ATA drives).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ata: Option<AtaHealth>,
    /// SCSI log pages (SCSI drives).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scsi: Option<ScsiHealth>,
    /// NVMe logs (NVMe drives).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvme: Option<NvmeHealth>,
    /// Native vs accessible capacity (`null` when it could not be read).
    pub capacity: Option<Capacity>,
    /// Bytes the host cannot reach: ATA HPA/AMA + DCO, NVMe unallocated
    /// capacity; 0 when the drive shows none; `null` when unknown.
    pub hidden_bytes: Option<u128>,
    /// What the hidden bytes are ("HPA/AMA", "DCO", "unallocated NVM
    /// capacity"), when there are any.
    pub hidden_kind: Vec<&'static str>,
    /// Commands that failed while the others answered.
    pub problems: Vec<Problem>,
}

/// `dev` opened as NVMe when it is a namespace or an NVMe controller's
/// character device; `None` for anything else.
fn nvme_device(dev: &Path) -> Result<Option<NvmeDevice>, OpError> {
    use std::os::unix::fs::FileTypeExt;
    match NvmeDevice::open(dev) {
        Ok(d) => {
            let char_nvme = std::fs::metadata(dev)
                .map(|m| m.file_type().is_char_device())
                .unwrap_or(false)
                && dev
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("nvme"));
            Ok((d.nsid().is_some() || char_nvme).then_some(d))
        }
        Err(e @ NvmeError::Permission { .. }) => Err(e.into()),
        Err(_) => Ok(None),
    }
}

/// Ask `dev` everything about its health and capacity (reads only).
pub fn health(dev: &Path, timeout_ms: Option<u32>) -> Result<Health, OpError> {
    if let Some(d) = nvme_device(dev)? {
        return nvme_health_of(dev, &d);
    }
    let mut sg = SgDevice::open(dev)?;
    sg.set_timeout_ms(timeout_ms.unwrap_or(SHORT_TIMEOUT_MS));
    match ata::identify_device(&sg) {
        Ok(id) => Ok(ata_health_of(dev, &sg, id)),
        Err(e) if e.is_not_supported() && !matches!(e, AtaError::Device { .. }) => {
            scsi_health_of(dev, &sg)
        }
        Err(e) => Err(e.into()),
    }
}

fn empty(dev: &Path, transport: Transport) -> Health {
    Health {
        device: dev.display().to_string(),
        transport,
        model: None,
        serial: None,
        firmware: None,
        verdict: Verdict::Unknown,
        ata: None,
        scsi: None,
        nvme: None,
        capacity: None,
        hidden_bytes: None,
        hidden_kind: Vec::new(),
        problems: Vec::new(),
    }
}

/// The newest self-test of a drive whose SMART data says it has
/// self-tests (off-line capability bit 4); a refused read is a problem.
fn last_self_test(
    sg: &SgDevice,
    smart: &SmartData,
    problems: &mut Vec<Problem>,
) -> Option<selftest::LoggedResult> {
    if smart.offline_capability & 0x10 == 0 {
        return None;
    }
    match selftest::ata_latest(sg) {
        Ok(r) => r,
        Err(e) => {
            problems.push(Problem::new(
                "SMART READ LOG 06h (self-test log)",
                Failure::from(e),
            ));
            None
        }
    }
}

fn ata_health_of(dev: &Path, sg: &SgDevice, id: ata::IdentifyDevice) -> Health {
    let mut h = empty(dev, Transport::AtaViaSat);
    h.model = Some(id.model.clone());
    h.serial = Some(id.serial.clone());
    h.firmware = Some(id.firmware.clone());
    let status = match ata_smart::overall_status(sg) {
        Ok(s) => s,
        Err(e) => {
            h.problems
                .push(Problem::new("SMART RETURN STATUS", Failure::from(e)));
            OverallStatus::Unknown
        }
    };
    match ata_smart::read_smart(sg) {
        Ok((smart, thr_err)) => {
            if let Some(e) = thr_err {
                h.problems.push(Problem::new(
                    "SMART READ ATTRIBUTE THRESHOLDS",
                    Failure::from(e),
                ));
            }
            let prefail_now = smart
                .attributes
                .iter()
                .any(|a| a.prefailure && a.failing_now);
            let last_self_test = last_self_test(sg, &smart, &mut h.problems);
            let test_failed = last_self_test.as_ref().is_some_and(|t| t.failed());
            h.verdict = match status {
                OverallStatus::Failed => Verdict::Failed,
                _ if prefail_now || test_failed => Verdict::Failed,
                OverallStatus::Passed => Verdict::Passed,
                OverallStatus::Unknown => Verdict::Unknown,
            };
            h.ata = Some(AtaHealth {
                status,
                summary: AtaSummary::of(&smart),
                smart,
                last_self_test,
            });
        }
        Err(e) => {
            let mut f = Failure::from(e);
            if !id.smart {
                f.line = format!("SMART is not supported by this drive ({})", f.line);
            }
            h.problems.push(Problem::new("SMART READ DATA", f));
            h.verdict = match status {
                OverallStatus::Passed => Verdict::Passed,
                OverallStatus::Failed => Verdict::Failed,
                OverallStatus::Unknown => Verdict::Unknown,
            };
        }
    }
    match hidden::ata_capacity(sg) {
        Ok(c) => {
            if let Some(b) = c.hidden_bytes() {
                h.hidden_bytes = Some(u128::from(b));
                if c.hpa_bytes.is_some_and(|b| b > 0) {
                    h.hidden_kind.push("HPA/AMA");
                }
                if c.dco_bytes.is_some_and(|b| b > 0) {
                    h.hidden_kind.push("DCO");
                }
            }
            h.capacity = Some(Capacity::Ata(Box::new(c)));
        }
        Err(e) => h
            .problems
            .push(Problem::new("native max address", Failure::from(e))),
    }
    h
}

fn scsi_health_of(dev: &Path, sg: &SgDevice) -> Result<Health, OpError> {
    let mut h = empty(dev, Transport::Scsi);
    match scsi::inquiry(sg) {
        Ok(i) => {
            h.model = Some(format!("{} {}", i.vendor, i.product).trim().to_string());
            h.firmware = Some(i.revision.clone());
        }
        Err(e) => return Err(e.into()),
    }
    h.serial = scsi::vpd(sg, 0x80)
        .ok()
        .and_then(|p| scsi::parse_unit_serial(&p));
    let mut s = ScsiHealth::default();
    match scsi_log::log_sense(sg, scsi_log::page::SUPPORTED) {
        Ok(d) => s.supported_pages = scsi_log::supported_pages(&d).unwrap_or_default(),
        Err(e) => {
            // No LOG SENSE at all: the drive says nothing of its health.
            h.problems
                .push(Problem::new("LOG SENSE page 0x00", Failure::from(e)));
            h.scsi = Some(s);
            return Ok(h);
        }
    }
    let pages = s.supported_pages.clone();
    let mut read = |page: u8| -> Option<scsi_log::LogPage> {
        if !pages.contains(&page) {
            return None;
        }
        match scsi_log::log_sense(sg, page) {
            Ok(d) => scsi_log::LogPage::parse(&d),
            Err(e) => {
                h.problems.push(Problem::new(
                    format!("LOG SENSE page 0x{page:02X}"),
                    Failure::from(e),
                ));
                None
            }
        }
    };
    use scsi_log::page as p;
    s.write_errors = read(p::WRITE_ERRORS).map(|l| ErrorCounters::of(&l));
    s.read_errors = read(p::READ_ERRORS).map(|l| ErrorCounters::of(&l));
    s.verify_errors = read(p::VERIFY_ERRORS).map(|l| ErrorCounters::of(&l));
    s.non_medium_errors = read(p::NON_MEDIUM).and_then(|l| l.number(0));
    s.temperature = read(p::TEMPERATURE).map(|l| Temperature::of(&l));
    s.start_stop = read(p::START_STOP).map(|l| StartStop::of(&l));
    s.self_tests = read(p::SELF_TEST).map(|l| scsi_log::self_test_results(&l));
    s.informational_exceptions =
        read(p::INFORMATIONAL_EXCEPTIONS).and_then(|l| InformationalExceptions::of(&l));
    // Subpages are listed by page 00h subpage FFh; a drive without
    // subpages refuses that request, which is an answer, not a problem.
    let subpages = scsi_log::log_sense_sub(sg, 0x00, 0xFF)
        .ok()
        .and_then(|d| scsi_log::supported_subpages(&d))
        .unwrap_or_default();
    if subpages.contains(&(p::TEMPERATURE, 0x01)) {
        match scsi_log::log_sense_sub(sg, p::TEMPERATURE, 0x01) {
            Ok(d) => {
                s.environment = scsi_log::LogPage::parse(&d).map(|l| scsi_log::Environment::of(&l))
            }
            Err(e) => h.problems.push(Problem::new(
                "LOG SENSE page 0x0D subpage 0x01",
                Failure::from(e),
            )),
        }
    }
    h.verdict = match &s.informational_exceptions {
        Some(ie) if ie.ok => Verdict::Passed,
        Some(_) => Verdict::Failed,
        None => Verdict::Unknown,
    };
    h.scsi = Some(s);
    Ok(h)
}

fn nvme_health_of(dev: &Path, d: &NvmeDevice) -> Result<Health, OpError> {
    let mut h = empty(dev, Transport::Nvme);
    let mut ctrl = vec![0u8; 4096];
    d.execute(
        &nvme::NvmeCommand::identify(1, 0),
        nvme::NvmeData::In(&mut ctrl),
    )?;
    let id = nvme::IdentifyController::parse(&ctrl)
        .ok_or_else(|| Failure::line("Identify Controller data too short"))?;
    h.model = Some(id.model);
    h.serial = Some(id.serial);
    h.firmware = Some(id.firmware);
    let elpe = u32::from(ctrl[262]) + 1;
    match nvme_health::smart_health(d) {
        Ok(smart) => {
            let last_self_test = if id.oacs & 0x10 != 0 {
                match selftest::nvme_log(d) {
                    Ok(l) => l.latest,
                    Err(e) => {
                        let f = match e {
                            OpError::Failed(f) => *f,
                            other => Failure::line(other.to_string()),
                        };
                        h.problems
                            .push(Problem::new("Get Log Page 06h (Device Self-test)", f));
                        None
                    }
                }
            } else {
                None
            };
            let test_failed = last_self_test.as_ref().is_some_and(|t| t.nvme_failed());
            h.verdict = if smart.critical_warning == 0 && !test_failed {
                Verdict::Passed
            } else {
                Verdict::Failed
            };
            let error_log = match nvme_health::error_log(d, elpe) {
                Ok(v) => v,
                Err(e) => {
                    h.problems.push(Problem::new(
                        "Get Log Page 01h (Error Information)",
                        Failure::from(e),
                    ));
                    Vec::new()
                }
            };
            h.nvme = Some(NvmeHealth {
                smart,
                error_log_capacity: elpe,
                error_log,
                last_self_test,
            });
        }
        Err(e) => h.problems.push(Problem::new(
            "Get Log Page 02h (SMART / Health Information)",
            Failure::from(e),
        )),
    }
    match hidden::nvme_capacity(d) {
        Ok(c) => {
            h.hidden_bytes = Some(c.unvmcap);
            if c.unvmcap > 0 {
                h.hidden_kind.push("unallocated NVM capacity");
            }
            h.capacity = Some(Capacity::Nvme(Box::new(c)));
        }
        Err(e) => h
            .problems
            .push(Problem::new("Identify (capacity)", Failure::from(e))),
    }
    Ok(h)
}

/// The hidden area of `dev` in one short phrase ("hidden area: 104857600
/// bytes (HPA/AMA)"), for `devices` and `device probe`; `None` when the
/// drive shows none or cannot be asked (reads only, errors ignored: the
/// listing must not fail on a drive that refuses these commands).
pub fn hidden_area_note(dev: &Path) -> Option<String> {
    let (bytes, kind): (u128, Vec<&str>) = if let Ok(Some(d)) = nvme_device(dev) {
        let c = hidden::nvme_capacity(&d).ok()?;
        (c.unvmcap, vec!["unallocated NVM capacity"])
    } else {
        let sg = SgDevice::open(dev).ok()?;
        if !sg.answers_sg() {
            return None;
        }
        let c = hidden::ata_capacity(&sg).ok()?;
        let mut kind = Vec::new();
        if c.hpa_bytes.is_some_and(|b| b > 0) {
            kind.push("HPA/AMA");
        }
        if c.dco_bytes.is_some_and(|b| b > 0) {
            kind.push("DCO");
        }
        (u128::from(c.hidden_bytes()?), kind)
    };
    (bytes > 0).then(|| format!("hidden area: {bytes} bytes ({})", kind.join(", ")))
}
