//! `--dry-run`: the plan with estimated times, nothing written.
//!
//! The estimates are rough on purpose: an assumed rate per kind of drive
//! (said in words beside each figure), the bus limit's share for methods
//! that send data, and a flat 10 s for a cryptographic erase.

use std::path::PathBuf;

use drivelab_device::blockdev::Kind;
use serde::Serialize;

use super::method::Method;
use super::{Drive, Options, Strategy, VerifyMode};

/// A rough rate for estimates, bytes/s, and what it assumes.
fn assumed_rate(d: &Drive) -> (f64, &'static str) {
    match d.dev.kind {
        Kind::Loop | Kind::Ram | Kind::Zram => (
            2e9,
            "memory-backed/virtual device, assumed 1.9 GiB/s (2 GB/s)",
        ),
        Kind::Nvme => (2e9, "NVMe, assumed 1.9 GiB/s (2 GB/s)"),
        _ if d.dev.rotational => (180e6, "rotating disk, assumed 172 MiB/s (180 MB/s)"),
        _ => (450e6, "SATA/SAS SSD, assumed 429 MiB/s (450 MB/s)"),
    }
}

/// Estimated seconds for erasing (all passes) and verifying one drive when
/// `n` drives run under `opts`, with what the estimate assumes.
pub fn estimate(d: &Drive, opts: &Options, n: usize) -> (f64, f64, String) {
    let (rate, why) = assumed_rate(d);
    let bytes = d.size as f64 * f64::from(opts.passes.max(1));
    let m = d.choice.method;
    let sends_data = m == Method::Stream || (m == Method::Zeroout && !d.offers.zeroout_offload);
    let mut erase_rate = rate;
    let mut note = why.to_string();
    if sends_data {
        if let Some(b) = opts.bus_limit {
            let share = match opts.strategy {
                Strategy::Parallel | Strategy::RoundRobin => b as f64 / n.max(1) as f64,
                Strategy::Sequential => b as f64,
            };
            if share < erase_rate {
                erase_rate = share;
                note.push_str(&format!(
                    "; bus limit share {:.0} MiB/s ({:.0} MB/s)",
                    share / 1048576.0,
                    share / 1e6
                ));
            }
        }
    } else if matches!(d.dev.kind, Kind::Loop | Kind::Ram | Kind::Zram) {
        erase_rate = 20e9;
        note = "offloaded on a virtual device, assumed 18.6 GiB/s (20 GB/s)".into();
    }
    let erase = match m {
        Method::NvmeFormat | Method::NvmeSanitize | Method::AtaSanitize | Method::ScsiSanitize
            if opts.crypto =>
        {
            10.0
        }
        Method::AtaSecurityErase | Method::AtaSecurityEraseEnhanced => {
            let enhanced = m == Method::AtaSecurityEraseEnhanced;
            match d
                .offers
                .ata_security
                .and_then(|s| s.erase_time(enhanced).minutes())
            {
                Some(min) => {
                    note = format!(
                        "the drive's own estimate (IDENTIFY word {})",
                        if enhanced { 90 } else { 89 }
                    );
                    f64::from(min) * 60.0
                }
                None => bytes / erase_rate,
            }
        }
        _ => bytes / erase_rate,
    };
    let verify_share = match opts.verify {
        VerifyMode::None => 0.0,
        VerifyMode::Sample => 0.101,
        VerifyMode::Full => 1.0,
    };
    (erase, d.size as f64 * verify_share / rate, note)
}

/// One drive of a dry run.
#[derive(Debug, Clone, Serialize)]
pub struct DryRunDrive {
    /// Device node.
    pub device: PathBuf,
    /// Model, when reported.
    pub model: Option<String>,
    /// Serial, when the drive has one.
    pub serial: Option<String>,
    /// Size, bytes.
    pub size: u64,
    /// Logical sector, bytes.
    pub logical_sector: u32,
    /// The method chosen.
    pub method: Method,
    /// Why.
    pub reason: String,
    /// NIST SP 800-88 category of the method ("Clear" or "Purge").
    pub nist_category: &'static str,
    /// Whether BLKZEROOUT is offloaded.
    pub zeroout_offloaded: bool,
    /// Estimated erase time (all passes), seconds.
    pub estimated_erase_seconds: f64,
    /// Estimated verification time, seconds.
    pub estimated_verify_seconds: f64,
    /// What the estimate assumes.
    pub estimate_assumes: String,
    /// Probe problems.
    pub notes: Vec<String>,
}

/// The plan of a dry run.
#[derive(Debug, Clone, Serialize)]
pub struct DryRun {
    /// Always true (marks the report as a dry run).
    pub dry_run: bool,
    /// Strategy.
    pub strategy: Strategy,
    /// Pattern name.
    pub pattern: String,
    /// Passes (text report only).
    #[serde(skip)]
    pub passes: u32,
    /// Verification mode.
    pub verify: VerifyMode,
    /// The drives.
    pub drives: Vec<DryRunDrive>,
    /// Estimated time until every drive is done, seconds.
    pub estimated_complete_seconds: f64,
}

/// The dry run of `drives` under `opts`.
pub fn dry_run(drives: &[Drive], opts: &Options) -> DryRun {
    let n = drives.len();
    let rows: Vec<DryRunDrive> = drives
        .iter()
        .map(|d| {
            let (erase, verify, assumes) = estimate(d, opts, n);
            DryRunDrive {
                device: d.dev.path.clone(),
                model: d.dev.model.clone(),
                serial: d.serial().map(String::from),
                size: d.size,
                logical_sector: d.lbs,
                method: d.choice.method,
                reason: d.choice.reason.clone(),
                nist_category: d.choice.method.nist_category(opts.crypto),
                zeroout_offloaded: d.zeroout_offloaded(),
                estimated_erase_seconds: erase,
                estimated_verify_seconds: verify,
                estimate_assumes: assumes,
                notes: d.notes.clone(),
            }
        })
        .collect();
    let per = rows
        .iter()
        .map(|r| r.estimated_erase_seconds + r.estimated_verify_seconds);
    let total = match opts.strategy {
        Strategy::Parallel => per.fold(0.0, f64::max),
        _ => per.sum(),
    };
    DryRun {
        dry_run: true,
        strategy: opts.strategy,
        pattern: opts.pattern.to_string(),
        passes: opts.passes,
        verify: opts.verify,
        drives: rows,
        estimated_complete_seconds: total,
    }
}
