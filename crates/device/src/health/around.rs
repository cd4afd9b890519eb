//! Health around destructive or long work (issue 16 item 4): a reading
//! before and after an erase, a test write step or a seasoning run, what
//! changed in between, whether the drive's own write counter corroborates
//! an overwrite, and the hidden-area check an erase makes first.
//!
//! Everything here only reads (no consent is needed), except
//! [`restore_native_max`], which sends SET MAX ADDRESS (EXT) on a claimed
//! handle. A drive that fails or times out a health command is recorded
//! with the decoded sense / status in [`Reading::error`]; nothing here
//! stops the work.
//!
//! The readings are kept as the `drivelab health` JSON ([`Reading::health`])
//! so results and signed certificates carry them verbatim and can be read
//! back (deserialised) by `show` and `verify-cert`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::delta::HealthDelta;
use super::hidden::{self, AtaCapacity, NvmeCapacity};
use super::{health, Health};
use crate::ata::{self, AtaData, AtaPassThrough, Protocol, Taskfile};
use crate::block::blockdev::Kind;
use crate::scsi::sg::SgDevice;

/// Whether a device of `kind` has health of its own to ask (NVMe, ATA and
/// SCSI disks); loop, zram, RAM, virtio, dm and md devices do not.
pub fn has_health(kind: Kind) -> bool {
    matches!(kind, Kind::Nvme | Kind::Ata | Kind::Scsi)
}

/// One health reading of one drive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// When it was taken (RFC 3339 UTC, or seconds since the epoch).
    pub taken: String,
    /// What `drivelab health --json` shows for the drive; `null` when the
    /// drive could not be asked.
    pub health: Option<serde_json::Value>,
    /// Why the drive could not be asked (decoded sense / status), one line.
    pub error: Option<String>,
}

impl Reading {
    /// Ask `dev` (reads only); a failure is recorded, never returned.
    pub fn take(dev: &Path, taken: String) -> (Reading, Option<Health>) {
        match health(dev, None) {
            Ok(h) => {
                let v = serde_json::to_value(&h).ok();
                (
                    Reading {
                        taken,
                        health: v,
                        error: None,
                    },
                    Some(h),
                )
            }
            Err(e) => (
                Reading {
                    taken,
                    health: None,
                    error: Some(format!("health of {}: {e}", dev.display())),
                },
                None,
            ),
        }
    }
}

/// Whether the drive's own write counter shows an overwrite reached the
/// media.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteVerdict {
    /// The counter grew by at least the bytes written (within its unit).
    Corroborated,
    /// The counter grew by less than the bytes written.
    NotCorroborated,
    /// The drive keeps no write counter, or does not count the commands
    /// used (offloaded write zeroes, format, sanitize).
    NotCounted,
}

/// The write corroboration: bytes the host wrote vs bytes the drive counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteCheck {
    /// Bytes the host wrote (or asked the drive to write).
    pub expected_bytes: u64,
    /// Bytes the drive counted as written in between, when it counts.
    pub counted_bytes: Option<u64>,
    /// The counter's unit, bytes (NVMe: 1000 x 512; ATA attribute 241: 512).
    pub unit_bytes: Option<u64>,
    /// The verdict.
    pub verdict: WriteVerdict,
    /// In words.
    pub detail: String,
}

impl WriteCheck {
    /// Judge `delta` against `expected` bytes; `offloaded` when the drive
    /// did the writing itself (write zeroes, WRITE SAME, format, sanitize,
    /// discard), which drives need not count.
    pub fn judge(delta: &HealthDelta, expected: u64, offloaded: bool) -> WriteCheck {
        let counted = delta
            .written_bytes
            .map(|b| u64::try_from(b).unwrap_or(u64::MAX));
        let unit = delta
            .written_unit_bytes
            .map(|b| u64::try_from(b).unwrap_or(u64::MAX));
        let (verdict, detail) = match (counted, unit) {
            (Some(c), Some(u)) if c.saturating_add(u) >= expected => (
                WriteVerdict::Corroborated,
                format!(
                    "the drive counted {c} bytes written for {expected} written (unit {u} bytes)"
                ),
            ),
            (Some(c), Some(u)) if offloaded => (
                WriteVerdict::NotCounted,
                format!(
                    "not counted by the drive: it counted {c} bytes (unit {u} bytes) for {expected} bytes written by commands it executes itself"
                ),
            ),
            (Some(c), Some(u)) => (
                WriteVerdict::NotCorroborated,
                format!(
                    "the drive counted only {c} bytes written (unit {u} bytes) for {expected} written: the overwrite may not have reached the media"
                ),
            ),
            _ => (
                WriteVerdict::NotCounted,
                "not counted by the drive: it reports no write counter".to_string(),
            ),
        };
        WriteCheck {
            expected_bytes: expected,
            counted_bytes: counted,
            unit_bytes: unit,
            verdict,
            detail,
        }
    }
}

/// What changed, as kept with a result: [`HealthDelta`] in plain fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeltaRecord {
    /// Verdict before ("passed", "failed", "unknown").
    pub verdict_before: String,
    /// Verdict after.
    pub verdict_after: String,
    /// Counters both readings have: name, before, after.
    pub counters: Vec<(String, u64, u64)>,
    /// The hottest temperature either reading shows, °C.
    pub temperature_peak_c: Option<i32>,
    /// NVMe Percentage Used before and after, when the drive reports it.
    pub percentage_used: Option<(u8, u8)>,
    /// Bytes the drive counts as written in between.
    pub written_bytes: Option<u64>,
    /// The counter's unit, bytes.
    pub written_unit_bytes: Option<u64>,
    /// One line per change that matters ("3 new reallocated sectors").
    pub changes: Vec<String>,
}

fn verdict_word(v: super::Verdict) -> String {
    match v {
        super::Verdict::Passed => "passed",
        super::Verdict::Failed => "failed",
        super::Verdict::Unknown => "unknown",
    }
    .into()
}

impl DeltaRecord {
    /// From two readings of one drive.
    pub fn of(before: &Health, after: &Health) -> (DeltaRecord, HealthDelta) {
        let d = HealthDelta::between(before, after);
        let small = |x: u128| u64::try_from(x).unwrap_or(u64::MAX);
        let pu = |h: &Health| h.nvme.as_ref().map(|n| n.smart.percentage_used);
        let percentage_used = pu(before).zip(pu(after));
        let mut changes = d.changes.clone();
        if let Some((b, a)) = percentage_used.filter(|(b, a)| a > b) {
            changes.push(format!("percentage used {b}% -> {a}%"));
        }
        (
            DeltaRecord {
                verdict_before: verdict_word(d.verdict_before),
                verdict_after: verdict_word(d.verdict_after),
                counters: d
                    .counters
                    .iter()
                    .map(|(n, c)| (n.to_string(), small(c.before), small(c.after)))
                    .collect(),
                temperature_peak_c: d.temperature_peak_c,
                percentage_used,
                written_bytes: d.written_bytes.map(small),
                written_unit_bytes: d.written_unit_bytes.map(small),
                changes,
            },
            d,
        )
    }
}

/// Health before and after one drive's work, kept with the result (and,
/// for an erase, inside the signed certificate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AroundWork {
    /// Before the work.
    pub before: Reading,
    /// After it.
    pub after: Reading,
    /// What changed (`null` unless both readings answered).
    pub delta: Option<DeltaRecord>,
    /// The drive's write counter against the bytes written (overwrites;
    /// `null` when not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<WriteCheck>,
}

/// A reading taken before the work, kept until the one after it.
#[derive(Debug, Clone)]
pub struct Before {
    reading: Reading,
    health: Option<Health>,
}

impl Before {
    /// Take the reading before the work.
    pub fn take(dev: &Path, taken: String) -> Before {
        let (reading, health) = Reading::take(dev, taken);
        Before { reading, health }
    }

    /// Whether the drive answered.
    pub fn answered(&self) -> bool {
        self.health.is_some()
    }

    /// Take the reading after the work and compare; with `written` =
    /// Some((bytes, offloaded)), judge the drive's write counter too.
    pub fn after(self, dev: &Path, taken: String, written: Option<(u64, bool)>) -> AroundWork {
        let (reading, health) = Reading::take(dev, taken);
        let (delta, writes) = match (&self.health, &health) {
            (Some(b), Some(a)) => {
                let (rec, d) = DeltaRecord::of(b, a);
                let w = written.map(|(bytes, offl)| WriteCheck::judge(&d, bytes, offl));
                (Some(rec), w)
            }
            _ => (None, None),
        };
        AroundWork {
            before: self.reading,
            after: reading,
            delta,
            writes,
        }
    }
}

impl AroundWork {
    /// The lines a text report prints for `device`: what changed, the
    /// temperature peak, the write corroboration, a reading that failed.
    pub fn lines(&self, device: &str) -> Vec<String> {
        let mut v = Vec::new();
        for (when, r) in [("before", &self.before), ("after", &self.after)] {
            if let Some(e) = &r.error {
                v.push(format!("{device}: health {when}: {e}"));
            }
        }
        if let Some(d) = &self.delta {
            let mut s = format!("{device}: health: ");
            if d.changes.is_empty() {
                s.push_str("no new reallocations, pending sectors or media errors");
            } else {
                s.push_str(&d.changes.join(", "));
            }
            if let Some(t) = d.temperature_peak_c {
                s.push_str(&format!("; temperature peak {t} °C"));
            }
            if let Some((b, a)) = d.percentage_used {
                s.push_str(&format!("; percentage used {b}% -> {a}%"));
            }
            v.push(s);
        }
        if let Some(w) = &self.writes {
            let word = match w.verdict {
                WriteVerdict::Corroborated => "corroborated",
                WriteVerdict::NotCorroborated => "NOT corroborated",
                WriteVerdict::NotCounted => "not counted by the drive",
            };
            v.push(format!("{device}: writes {word}: {}", w.detail));
        }
        v
    }
}

/// What an erase may do about a hidden area.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Remedy {
    /// SET MAX ADDRESS (EXT) to the native max (`--restore-native-max`).
    SetMaxAddress,
    /// Nothing drivelab can do; the words say what the user can.
    Manual(String),
}

/// Capacity the host cannot reach, found before an erase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HiddenArea {
    /// What hides it: "HPA/AMA", "DCO", "unallocated NVM capacity".
    pub kind: String,
    /// Logical blocks hidden.
    pub lbas: u64,
    /// Bytes hidden.
    pub bytes: u128,
    /// Sectors the host reaches now.
    pub accessible_sectors: Option<u64>,
    /// Native max LBA (ATA), when known.
    pub native_max_lba: Option<u64>,
    /// What can be done.
    pub remedy: Remedy,
}

/// The hidden areas an ATA drive's capacity facts show.
pub fn ata_hidden(c: &AtaCapacity) -> Vec<HiddenArea> {
    let lbs = u64::from(c.logical_sector_size.max(1));
    let mut v = Vec::new();
    if let (Some(b), Some(native)) = (c.hpa_bytes.filter(|&b| b > 0), c.native_sectors) {
        v.push(HiddenArea {
            kind: "HPA/AMA".into(),
            lbas: b / lbs,
            bytes: u128::from(b),
            accessible_sectors: Some(c.accessible_sectors),
            native_max_lba: Some(native - 1),
            remedy: if c.support.hpa || c.support.ama || c.native_max_lba.value().is_some() {
                Remedy::SetMaxAddress
            } else {
                Remedy::Manual("the drive claims neither the HPA nor the AMA feature set".into())
            },
        });
    }
    if let Some(b) = c.dco_bytes.filter(|&b| b > 0) {
        v.push(HiddenArea {
            kind: "DCO".into(),
            lbas: b / lbs,
            bytes: u128::from(b),
            accessible_sectors: Some(c.accessible_sectors),
            native_max_lba: c.native_sectors.map(|n| n - 1),
            remedy: Remedy::Manual(
                "a Device Configuration Overlay reduces the native max; drivelab does not change a DCO (it is often frozen): restore it with DEVICE CONFIGURATION RESTORE (hdparm --dco-restore, after a power cycle if frozen), then erase again".into(),
            ),
        });
    }
    v
}

/// The hidden areas an NVMe controller's capacity facts show.
pub fn nvme_hidden(c: &NvmeCapacity) -> Vec<HiddenArea> {
    if c.unvmcap == 0 {
        return Vec::new();
    }
    let bs = u128::from(c.block_size.unwrap_or(512).max(1));
    vec![HiddenArea {
        kind: "unallocated NVM capacity".into(),
        lbas: u64::try_from(c.unvmcap / bs).unwrap_or(u64::MAX),
        bytes: c.unvmcap,
        accessible_sectors: c.nsze,
        native_max_lba: None,
        remedy: Remedy::Manual(
            "no namespace holds it, so no erase of a namespace reaches it: grow or create a namespace over it with NVMe namespace management (nvme create-ns / attach-ns), or erase with --method nvme-sanitize, which acts on the whole NVM subsystem".into(),
        ),
    }]
}

/// Ask `dev` for its hidden areas (reads only). Devices without commands
/// of their own (loop, zram, ...) have none; an error is the drive's answer
/// in one line.
pub fn hidden_areas(dev: &Path, kind: Kind) -> Result<Vec<HiddenArea>, String> {
    let say = |e: &dyn std::fmt::Display| format!("{}: hidden-area check: {e}", dev.display());
    match kind {
        Kind::Nvme => {
            let d = crate::nvme::NvmeDevice::open(dev).map_err(|e| say(&e))?;
            hidden::nvme_capacity(&d)
                .map(|c| nvme_hidden(&c))
                .map_err(|e| say(&e))
        }
        Kind::Ata => {
            let sg = SgDevice::open(dev).map_err(|e| say(&e))?;
            hidden::ata_capacity(&sg)
                .map(|c| ata_hidden(&c))
                .map_err(|e| say(&e))
        }
        _ => Ok(Vec::new()),
    }
}

/// The one-line refusal of an erase of `dev` with hidden areas, saying
/// what is hidden (LBAs and bytes) and what to do.
pub fn refusal(dev: &Path, areas: &[HiddenArea]) -> String {
    let what: Vec<String> = areas
        .iter()
        .map(|a| format!("{} hides {} LBAs ({} bytes)", a.kind, a.lbas, a.bytes))
        .collect();
    let manual: Vec<&str> = areas
        .iter()
        .filter_map(|a| match &a.remedy {
            Remedy::Manual(s) => Some(s.as_str()),
            Remedy::SetMaxAddress => None,
        })
        .collect();
    let todo = if manual.is_empty() {
        "add --restore-native-max to restore the full capacity first (volatile SET MAX ADDRESS where the drive allows) and erase all of it".to_string()
    } else {
        manual.join("; ")
    };
    format!(
        "refusing to erase {}: the host cannot reach all of it: {}; an erase would leave that area untouched: {todo}; nothing was written",
        dev.display(),
        what.join(", ")
    )
}

/// Restore an ATA drive's full capacity through `sg` (a claimed handle):
/// READ NATIVE MAX ADDRESS (EXT), then SET MAX ADDRESS (EXT) to it with
/// the volatile bit set (the drive returns to its old limit at power-off,
/// but the erase covers everything now). Returns the new max LBA.
pub fn restore_native_max(sg: &SgDevice, lba48: bool) -> Result<u64, ata::AtaError> {
    let (read, name) = if lba48 {
        (hidden::read_native_max_ext(), "READ NATIVE MAX ADDRESS EXT")
    } else {
        (hidden::read_native_max(), "READ NATIVE MAX ADDRESS")
    };
    let regs = ata::execute(sg, &read, name, AtaData::None)?.ok_or_else(|| {
        ata::AtaError::BadData(format!("{name}: the SATL returned no ATA registers"))
    })?;
    let native = if lba48 {
        regs.lba & 0xFFFF_FFFF_FFFF
    } else {
        (regs.lba & 0xFF_FFFF) | (u64::from(regs.device & 0x0F) << 24)
    };
    ata::execute(
        sg,
        &set_max_address(native, lba48),
        "SET MAX ADDRESS",
        AtaData::None,
    )?;
    Ok(native)
}

/// SET MAX ADDRESS EXT (37h) / SET MAX ADDRESS (F9h) to `max_lba`, COUNT
/// bit 0 (VV) set: the new maximum is volatile.
pub fn set_max_address(max_lba: u64, lba48: bool) -> AtaPassThrough {
    if lba48 {
        AtaPassThrough::new(
            Protocol::NonData,
            Taskfile::new(0x37).count(1).lba(max_lba).device(0x40),
        )
        .extend(true)
        .byt_blok(false)
    } else {
        AtaPassThrough::new(
            Protocol::NonData,
            Taskfile::new(0xF9)
                .count(1)
                .lba(max_lba & 0xFF_FFFF)
                .device(0x40 | ((max_lba >> 24) & 0x0F) as u8),
        )
        .byt_blok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::super::hidden::{Answer, DcoIdentify, HiddenAreaSupport};
    use super::*;

    /// IDENTIFY DEVICE data claiming HPA (word 82 bit 10), DCO (word 83
    /// bit 11) and 48-bit addressing, with `max` sectors in words 100-103.
    fn identify(max: u64) -> Vec<u8> {
        let mut d = vec![0u8; 512];
        let mut put = |w: usize, v: u16| d[2 * w..2 * w + 2].copy_from_slice(&v.to_le_bytes());
        put(82, 0x4000 | (1 << 10));
        put(83, 0x4000 | (1 << 11) | (1 << 10));
        put(119, 0x4000);
        for i in 0..4 {
            put(100 + i, (max >> (16 * i)) as u16);
        }
        d
    }

    fn capacity(accessible: u64, native_max: u64, dco_max: Option<u64>) -> AtaCapacity {
        let id = identify(accessible);
        let support = HiddenAreaSupport::from_identify(&id);
        assert!(support.hpa && support.dco && !support.ama);
        let dco = match dco_max {
            Some(m) => Answer::Answered {
                value: DcoIdentify {
                    revision: 2,
                    max_lba: m,
                    checksum_ok: Some(true),
                },
            },
            None => Answer::NotSupported {
                reason: "not supported by this drive".into(),
            },
        };
        AtaCapacity::assemble(
            512,
            accessible,
            support,
            "read-native-max-address-ext",
            Answer::Answered { value: native_max },
            dco,
        )
    }

    #[test]
    fn an_hpa_is_refused_with_lbas_bytes_and_the_flag() {
        // 1 000 000 sectors visible of 1 002 048 native: 2048 LBAs hidden.
        let c = capacity(1_000_000, 1_002_047, None);
        let areas = ata_hidden(&c);
        assert_eq!(areas.len(), 1);
        assert_eq!(areas[0].lbas, 2048);
        assert_eq!(areas[0].bytes, 2048 * 512);
        assert_eq!(areas[0].remedy, Remedy::SetMaxAddress);
        let line = refusal(Path::new("/dev/sdb"), &areas);
        assert_eq!(
            line,
            "refusing to erase /dev/sdb: the host cannot reach all of it: HPA/AMA hides 2048 LBAs (1048576 bytes); an erase would leave that area untouched: add --restore-native-max to restore the full capacity first (volatile SET MAX ADDRESS where the drive allows) and erase all of it; nothing was written"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn a_dco_is_refused_with_what_to_do_instead() {
        let c = capacity(1_000_000, 999_999, Some(1_499_999));
        let areas = ata_hidden(&c);
        assert_eq!(areas.len(), 1, "no HPA, a DCO");
        assert_eq!(areas[0].kind, "DCO");
        assert_eq!(areas[0].lbas, 500_000);
        let line = refusal(Path::new("/dev/sdc"), &areas);
        assert!(
            line.contains("DCO hides 500000 LBAs (256000000 bytes)"),
            "{line}"
        );
        assert!(line.contains("hdparm --dco-restore"), "{line}");
        assert!(!line.contains("--restore-native-max"), "{line}");
        // Nothing hidden: nothing to refuse.
        assert!(ata_hidden(&capacity(1_000_000, 999_999, Some(999_999))).is_empty());
    }

    #[test]
    fn set_max_address_is_volatile_and_medium_changing() {
        let pt = set_max_address(0x1_2345_6789, true);
        let cdb = pt.build16();
        assert_eq!(cdb[14], 0x37, "SET MAX ADDRESS EXT");
        assert_eq!(cdb[6] & 1, 1, "VV: the new max is volatile");
        assert!(ata::modifies_medium(0x37, 0) && ata::modifies_medium(0xF9, 0));
        let cdb28 = set_max_address(0x0FFF_FFFF, false).build16();
        assert_eq!(cdb28[14], 0xF9);
        assert_eq!(cdb28[13] & 0x0F, 0x0F, "LBA 27:24 in DEVICE");
    }

    fn delta(written: Option<u128>, unit: Option<u128>) -> HealthDelta {
        HealthDelta {
            device: "/dev/nvme0n1".into(),
            verdict_before: super::super::Verdict::Passed,
            verdict_after: super::super::Verdict::Passed,
            counters: vec![],
            temperature_peak_c: None,
            written_bytes: written,
            written_unit_bytes: unit,
            changes: vec![],
        }
    }

    #[test]
    fn write_counter_verdicts() {
        let gib = 1u64 << 30;
        // 1 GiB = 2097.152 units of 512000: a counter grown by 2097 units
        // (rounding) still covers it within one unit.
        let ok = WriteCheck::judge(&delta(Some(2097 * 512_000), Some(512_000)), gib, false);
        assert_eq!(ok.verdict, WriteVerdict::Corroborated);
        assert_eq!(ok.counted_bytes, Some(2097 * 512_000));
        // Half of it counted: an overwrite that did not reach the media.
        let short = WriteCheck::judge(&delta(Some(1000 * 512_000), Some(512_000)), gib, false);
        assert_eq!(short.verdict, WriteVerdict::NotCorroborated);
        assert!(short.detail.contains("may not have reached the media"));
        // The same counter after Write Zeroes / format: not counted.
        let offl = WriteCheck::judge(&delta(Some(0), Some(512_000)), gib, true);
        assert_eq!(offl.verdict, WriteVerdict::NotCounted);
        assert!(offl.detail.starts_with("not counted by the drive"));
        // No counter at all.
        let none = WriteCheck::judge(&delta(None, None), gib, false);
        assert_eq!(none.verdict, WriteVerdict::NotCounted);
        // Text lines name the verdict.
        let aw = AroundWork {
            before: Reading {
                taken: "a".into(),
                health: None,
                error: None,
            },
            after: Reading {
                taken: "b".into(),
                health: None,
                error: Some("health of /dev/sdb: SMART READ DATA: ABRT".into()),
            },
            delta: None,
            writes: Some(short),
        };
        let lines = aw.lines("/dev/sdb");
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("/dev/sdb: health after: "));
        assert!(lines[1].starts_with("/dev/sdb: writes NOT corroborated: "));
    }

    #[test]
    fn nvme_unallocated_capacity_is_refused_with_namespace_advice() {
        let c = NvmeCapacity {
            nsid: Some(1),
            block_size: Some(4096),
            nsze: Some(1000),
            ncap: Some(1000),
            nuse: Some(0),
            tnvmcap: 8_192_000,
            unvmcap: 4_096_000,
            active_namespaces: Answer::Answered { value: vec![1] },
            other_namespaces: vec![],
            unallocated_bytes: Some(4_096_000),
        };
        let a = nvme_hidden(&c);
        assert_eq!(a[0].lbas, 1000);
        let line = refusal(Path::new("/dev/nvme0n1"), &a);
        assert!(line.contains("unallocated NVM capacity hides 1000 LBAs (4096000 bytes)"));
        assert!(line.contains("nvme create-ns") && line.ends_with("nothing was written"));
    }
}
