//! The policy's model: the keys of the TOML file as typed structs (each
//! section one struct, unknown keys refused), the error a policy gets, and
//! the small parsers and lookups the stages share. A leaf of `policy`.

use std::path::PathBuf;

use drivelab_certpdf::formats::CertFormat;
use drivelab_certpdf::Paper;
use serde::Deserialize;

use super::glob;

/// A policy that cannot be used, one line naming the key and what to do.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file cannot be read.
    #[error("policy {path}: {why}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What failed.
        why: String,
    },
    /// The TOML does not parse, or a key is unknown or of the wrong type.
    #[error("policy {path}: {why}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// Where, which key, what.
        why: String,
    },
    /// A key's value is out of its bounds or contradicts another.
    #[error("policy {path}: {key}: {why}")]
    Value {
        /// The file.
        path: PathBuf,
        /// The key (`erase.method`, `bays[2]`).
        key: String,
        /// What is wrong and what to write instead.
        why: String,
    },
}

/// The whole policy file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The slots this station owns: `/dev/disk/by-path` name patterns
    /// (with or without the `/dev/disk/by-path/` prefix).
    #[serde(default)]
    pub bays: Vec<String>,
    /// Let loop devices (not drives) be stations' drives: a bay then also
    /// matches a loop device's node (`/dev/loop3`) or its backing file.
    #[serde(default)]
    pub include_loop: bool,
    /// Who runs the station (kept with every result).
    #[serde(default)]
    pub operator: Option<String>,
    /// Where results go: an SQLite file or a postgres:// URL (default: the
    /// store `drivelab` uses everywhere).
    #[serde(default)]
    pub store: Option<String>,
    /// Which of the drives in the bays the station takes.
    #[serde(default)]
    pub filter: Filter,
    /// Health grading before the erase.
    #[serde(default)]
    pub triage: Triage,
    /// The erase.
    #[serde(default)]
    pub erase: Erase,
    /// What the certificate and the stored result say about the job.
    #[serde(default)]
    pub certificate: Certificate,
}

/// Optional filters over the drives in the bays; a drive that fails one
/// is shown as filtered and never touched.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// Transports taken: sata, sas, scsi, nvme, usb, virtio, mmc, loop
    /// (empty: all).
    #[serde(default)]
    pub transport: Vec<String>,
    /// Smallest drive taken (bytes, or with k/m/g/t, 1024-based).
    #[serde(default)]
    pub min_size: Option<String>,
    /// Largest drive taken.
    #[serde(default)]
    pub max_size: Option<String>,
    /// Model patterns (any one matches; empty: all).
    #[serde(default)]
    pub model: Vec<String>,
    /// Serial patterns (any one matches; empty: all).
    #[serde(default)]
    pub serial: Vec<String>,
}

/// Health thresholds: a drive over any of them gets a failing grade.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Triage {
    /// Most reallocated sectors (ATA attribute 5).
    pub max_reallocated_sectors: Option<u64>,
    /// Most sectors pending reallocation (ATA attribute 197).
    pub max_pending_sectors: Option<u64>,
    /// Most media errors (NVMe media and data integrity errors, ATA
    /// reported uncorrectable, SCSI uncorrected read/write errors).
    pub max_media_errors: Option<u64>,
    /// Highest percentage of rated life used (NVMe, ATA SSD wear).
    pub max_percentage_used: Option<u64>,
    /// Most power-on hours.
    pub max_power_on_hours: Option<u64>,
    /// What a failing grade does.
    #[serde(default)]
    pub failing: Failing,
}

/// What a drive with a failing grade gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failing {
    /// Erase it anyway; its row and result carry the failing grade.
    #[default]
    EraseAndMark,
    /// Hold it until the operator resumes it.
    Hold,
}

/// The erase method preference.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MethodPref {
    /// The fastest method that leaves the pattern (`drivelab erase --method auto`).
    #[default]
    Auto,
    /// A NIST SP 800-88 Clear: an overwrite of every addressable block.
    Clear,
    /// A NIST SP 800-88 Purge: the drive's own sanitize (NVMe Sanitize,
    /// ATA SANITIZE, enhanced security erase, crypto format); a drive
    /// without one is held.
    Purge,
}

/// Read-back after the erase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verify {
    /// None.
    None,
    /// The NIST SP 800-88 sample.
    #[default]
    Sample,
    /// Every block.
    Full,
}

/// What a drive holding data structures gets (a partition table, a
/// filesystem, RAID/LVM signatures; a hidden area).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnContent {
    /// Hold it until the operator confirms (default).
    #[default]
    Hold,
    /// Erase it.
    Erase,
}

/// What a drive with a hidden area (HPA, AMA, DCO) gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnHidden {
    /// Hold it until the operator confirms (then it is restored).
    #[default]
    Hold,
    /// Restore the full capacity (volatile SET MAX ADDRESS) and erase all of it.
    Restore,
}

/// The erase section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Erase {
    /// Method preference.
    #[serde(default)]
    pub method: MethodPref,
    /// Verification level.
    #[serde(default)]
    pub verify: Verify,
    /// Pattern left on every block (as `drivelab erase --pattern`).
    #[serde(default = "default_pattern")]
    pub pattern: String,
    /// Passes.
    #[serde(default = "one")]
    pub passes: u32,
    /// A drive with partitions or a filesystem.
    #[serde(default)]
    pub on_content: OnContent,
    /// A drive with a hidden area.
    #[serde(default)]
    pub on_hidden: OnHidden,
    /// A drive that comes back with an interrupted erase's journal:
    /// true continues it, false starts over.
    #[serde(default = "yes")]
    pub resume: bool,
    /// Bytes per second per drive for streamed writes (with k/m/g).
    #[serde(default)]
    pub rate_limit: Option<String>,
    /// Where certificates and journals go.
    #[serde(default = "default_cert_dir")]
    pub certificate_dir: PathBuf,
}

impl Default for Erase {
    fn default() -> Erase {
        Erase {
            method: MethodPref::default(),
            verify: Verify::default(),
            pattern: default_pattern(),
            passes: 1,
            on_content: OnContent::default(),
            on_hidden: OnHidden::default(),
            resume: true,
            rate_limit: None,
            certificate_dir: default_cert_dir(),
        }
    }
}

fn default_pattern() -> String {
    "allzeros".into()
}
fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn default_cert_dir() -> PathBuf {
    PathBuf::from(".")
}

/// Where a drive's asset tag comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AssetTag {
    /// No asset tag.
    #[default]
    None,
    /// The drive's serial number.
    Serial,
    /// The drive's world-wide name.
    Wwid,
    /// Typed by the operator (`tag DRIVE TEXT`).
    Operator,
}

/// The certificate section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Certificate {
    /// The organisation doing the erasure.
    pub organisation: Option<String>,
    /// The customer whose drives these are.
    pub customer: Option<String>,
    /// The customer's postal address, on one line.
    pub customer_address: Option<String>,
    /// The customer's contact (person, telephone, e-mail).
    pub customer_contact: Option<String>,
    /// The technician (default: the station's operator).
    pub technician: Option<String>,
    /// Where each drive's asset tag comes from.
    #[serde(default)]
    pub asset_tag: AssetTag,
    /// Which certificate files each drive gets (json, html, pdf; json
    /// must be among them: it is the signed record the others show).
    #[serde(default = "default_formats")]
    pub formats: Vec<CertFormat>,
    /// Paper size of PDF certificates (a4 or letter).
    #[serde(default)]
    pub paper: Paper,
}

impl Default for Certificate {
    fn default() -> Certificate {
        Certificate {
            organisation: None,
            customer: None,
            customer_address: None,
            customer_contact: None,
            technician: None,
            asset_tag: AssetTag::default(),
            formats: default_formats(),
            paper: Paper::default(),
        }
    }
}

/// `drivelab erase`'s default: the signed JSON and its HTML page.
fn default_formats() -> Vec<CertFormat> {
    vec![CertFormat::Json, CertFormat::Html]
}

/// Transports a filter may name.
pub const TRANSPORTS: [&str; 8] = [
    "sata", "sas", "scsi", "nvme", "usb", "virtio", "mmc", "loop",
];

/// Prefix a bay may carry.
pub const BY_PATH: &str = "/dev/disk/by-path/";

impl Policy {
    /// The bay pattern without the `/dev/disk/by-path/` prefix.
    pub fn bay_pattern(p: &str) -> &str {
        p.strip_prefix(BY_PATH).unwrap_or(p)
    }

    /// The first of `names` (a drive's by-path names, and for a loop
    /// device with `include_loop` its node and backing file) that a bay
    /// matches, as the bay shows it.
    pub fn bay_of(&self, names: &[String]) -> Option<String> {
        for n in names {
            for b in &self.bays {
                if glob::matches(Policy::bay_pattern(b), n) || glob::matches(b, n) {
                    return Some(n.clone());
                }
            }
        }
        None
    }

    /// The size bounds, in bytes.
    pub fn size_range(&self) -> (u64, u64) {
        let parse = |s: &Option<String>| s.as_deref().and_then(|t| parse_size(t).ok());
        (
            parse(&self.filter.min_size).unwrap_or(0),
            parse(&self.filter.max_size).unwrap_or(u64::MAX),
        )
    }

    /// The per-drive rate limit, bytes per second.
    pub fn rate_limit(&self) -> Option<u64> {
        self.erase
            .rate_limit
            .as_deref()
            .and_then(|s| parse_size(s.trim().trim_end_matches("/s")).ok())
    }

    /// The technician the certificate names.
    pub fn technician(&self) -> Option<&str> {
        self.certificate
            .technician
            .as_deref()
            .or(self.operator.as_deref())
    }
}

/// A size: digits with an optional k/m/g/t suffix (1024-based, an
/// optional trailing `b`/`ib`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (digits, shift) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 10),
        Some('m') => (&t[..t.len() - 1], 20),
        Some('g') => (&t[..t.len() - 1], 30),
        Some('t') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a size: write e.g. 500g, 4t or 1048576"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{s}' is too large"))
}
