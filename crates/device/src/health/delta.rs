//! What changed in a drive's health across a piece of work: the building
//! block for capturing health before and after an erase, a write step or a
//! seasoning run (issue 16 item 4).
//!
//! Two [`Health`] snapshots of one drive give a [`HealthDelta`]: new
//! reallocated / pending / uncorrectable sectors and CRC errors (ATA), new
//! media errors and error-log entries (NVMe), the verdicts, the hottest
//! temperature either snapshot shows, and the bytes the drive itself counts
//! as written in between (NVMe Data Units Written, ATA attribute 241), with
//! [`HealthDelta::corroborates`] to check that an overwrite of N bytes
//! really reached the media.

use serde::Serialize;

use super::{Health, Verdict};

/// One counter before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Before the work.
    pub before: u128,
    /// After it.
    pub after: u128,
}

impl Change {
    /// `after - before` (negative when the drive's counter went down).
    pub fn added(&self) -> i128 {
        self.after as i128 - self.before as i128
    }
}

/// What changed between two snapshots of one drive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthDelta {
    /// The device.
    pub device: String,
    /// Verdict before.
    pub verdict_before: Verdict,
    /// Verdict after.
    pub verdict_after: Verdict,
    /// Counters that changed or matter, by name ("reallocated_sectors",
    /// "pending_sectors", "offline_uncorrectable", "reported_uncorrectable",
    /// "crc_errors", "media_errors", "error_log_entries"), each present when
    /// both snapshots have it.
    pub counters: Vec<(&'static str, Change)>,
    /// The hottest temperature either snapshot shows, °C (SCSI: including
    /// the drive's maximum since power-on).
    pub temperature_peak_c: Option<i32>,
    /// Bytes the drive counts as written in between: NVMe Data Units
    /// Written x 512000 (so rounded to 512000), ATA attribute 241 x 512.
    pub written_bytes: Option<u128>,
    /// The granularity of `written_bytes`, bytes.
    pub written_unit_bytes: Option<u128>,
    /// One line per change that matters ("3 new reallocated sectors").
    pub changes: Vec<String>,
}

/// The error and wear counters of a snapshot that can only grow while a
/// drive wears or fails, by name ("reallocated_sectors", "pending_sectors",
/// "offline_uncorrectable", "reported_uncorrectable", "crc_errors" for
/// ATA; "media_errors", "error_log_entries" for NVMe; "read_uncorrected",
/// "write_uncorrected", "verify_uncorrected" for SCSI), those it reports.
pub fn counters(h: &Health) -> Vec<(&'static str, u128)> {
    let mut v = Vec::new();
    if let Some(a) = &h.ata {
        let s = &a.summary;
        for (name, val) in [
            ("reallocated_sectors", s.reallocated_sectors),
            ("pending_sectors", s.pending_sectors),
            ("offline_uncorrectable", s.offline_uncorrectable),
            ("reported_uncorrectable", s.reported_uncorrectable),
            ("crc_errors", s.crc_errors),
        ] {
            if let Some(x) = val {
                v.push((name, u128::from(x)));
            }
        }
    }
    if let Some(n) = &h.nvme {
        v.push(("media_errors", n.smart.media_errors.0));
        v.push(("error_log_entries", n.smart.error_log_entries.0));
    }
    if let Some(s) = &h.scsi {
        for (name, c) in [
            ("read_uncorrected", &s.read_errors),
            ("write_uncorrected", &s.write_errors),
            ("verify_uncorrected", &s.verify_errors),
        ] {
            if let Some(x) = c.as_ref().and_then(|c| c.total_uncorrected) {
                v.push((name, u128::from(x)));
            }
        }
    }
    v
}

fn temperatures(h: &Health) -> Vec<i32> {
    let mut t = Vec::new();
    if let Some(a) = &h.ata {
        t.extend(a.summary.temperature_c.map(i32::from));
    }
    if let Some(n) = &h.nvme {
        t.extend(n.smart.temperature_c);
    }
    if let Some(s) = &h.scsi {
        t.extend(
            s.temperature
                .as_ref()
                .and_then(|x| x.current_c)
                .map(i32::from),
        );
        if let Some(e) = s.environment.as_ref().and_then(|e| e.temperature.as_ref()) {
            t.extend(e.current.map(i32::from));
            t.extend(e.maximum_since_power_on.map(i32::from));
        }
    }
    t
}

/// (written counter, bytes per unit) of a snapshot.
fn written(h: &Health) -> Option<(u128, u128)> {
    if let Some(n) = &h.nvme {
        return Some((
            n.smart.data_units_written.0,
            super::nvme_health::DATA_UNIT_BYTES,
        ));
    }
    if let Some(l) = h.ata.as_ref().and_then(|a| a.summary.lbas_written) {
        return Some((u128::from(l), 512));
    }
    // A SCSI drive's write error counter page: total bytes processed.
    h.scsi
        .as_ref()
        .and_then(|s| s.write_errors.as_ref()?.bytes_processed)
        .map(|b| (u128::from(b), 1))
}

fn name(c: &str) -> &str {
    match c {
        "reallocated_sectors" => "reallocated sectors",
        "pending_sectors" => "sectors pending reallocation",
        "offline_uncorrectable" => "off-line uncorrectable sectors",
        "reported_uncorrectable" => "reported uncorrectable errors",
        "crc_errors" => "interface CRC errors",
        "media_errors" => "media and data integrity errors",
        "error_log_entries" => "error log entries",
        "read_uncorrected" => "uncorrected read errors",
        "write_uncorrected" => "uncorrected write errors",
        "verify_uncorrected" => "uncorrected verify errors",
        other => other,
    }
}

impl HealthDelta {
    /// Compare two snapshots of the same drive.
    pub fn between(before: &Health, after: &Health) -> HealthDelta {
        let b = counters(before);
        let a = counters(after);
        let mut list = Vec::new();
        let mut changes = Vec::new();
        for (n, bv) in &b {
            if let Some((_, av)) = a.iter().find(|(m, _)| m == n) {
                let c = Change {
                    before: *bv,
                    after: *av,
                };
                if c.added() > 0 {
                    changes.push(format!("{} new {}", c.added(), name(n)));
                } else if c.added() < 0 {
                    changes.push(format!(
                        "{} {} fewer (counter went down)",
                        -c.added(),
                        name(n)
                    ));
                }
                list.push((*n, c));
            }
        }
        if before.verdict != after.verdict {
            changes.push(format!(
                "overall verdict {:?} -> {:?}",
                before.verdict, after.verdict
            ));
        }
        let temperature_peak_c = temperatures(before)
            .into_iter()
            .chain(temperatures(after))
            .max();
        let (written_bytes, written_unit_bytes) = match (written(before), written(after)) {
            (Some((wb, unit)), Some((wa, _))) => {
                (Some(wa.saturating_sub(wb).saturating_mul(unit)), Some(unit))
            }
            _ => (None, None),
        };
        HealthDelta {
            device: after.device.clone(),
            verdict_before: before.verdict,
            verdict_after: after.verdict,
            counters: list,
            temperature_peak_c,
            written_bytes,
            written_unit_bytes,
            changes,
        }
    }

    /// Whether the drive's own write counter confirms that at least
    /// `expected` bytes reached the media (within one counter unit);
    /// `None` when the drive counts no writes.
    pub fn corroborates(&self, expected: u128) -> Option<bool> {
        let (w, unit) = (self.written_bytes?, self.written_unit_bytes?);
        Some(w.saturating_add(unit) >= expected)
    }
}

#[cfg(test)]
mod tests {
    use super::super::ata_smart::{AtaSummary, OverallStatus, SmartData};
    use super::super::nvme_health::SmartHealthLog;
    use super::super::scsi_log::ErrorCounters;
    use super::super::{AtaHealth, NvmeHealth, Transport};
    use super::*;

    fn empty(dev: &str) -> Health {
        let mut h = super::super::empty(std::path::Path::new(dev), Transport::Nvme);
        h.verdict = Verdict::Passed;
        h
    }

    fn nvme(units_written: u128, media: u128, temp_k: u16, warn: u8) -> Health {
        let mut d = vec![0u8; 512];
        d[0] = warn;
        d[1..3].copy_from_slice(&temp_k.to_le_bytes());
        d[48..64].copy_from_slice(&units_written.to_le_bytes());
        d[160..176].copy_from_slice(&media.to_le_bytes());
        let mut h = empty("/dev/nvme0n1");
        h.verdict = if warn == 0 {
            Verdict::Passed
        } else {
            Verdict::Failed
        };
        h.nvme = Some(NvmeHealth {
            smart: SmartHealthLog::parse(&d).unwrap(),
            error_log_capacity: 1,
            error_log: Vec::new(),
            last_self_test: None,
        });
        h
    }

    #[test]
    fn a_scsi_drives_bytes_processed_by_writes_count_what_it_wrote() {
        let scsi = |bytes: u64| {
            let mut h = empty("/dev/sdb");
            h.scsi = Some(super::super::ScsiHealth {
                write_errors: Some(ErrorCounters {
                    bytes_processed: Some(bytes),
                    ..ErrorCounters::default()
                }),
                ..super::super::ScsiHealth::default()
            });
            h
        };
        let d = HealthDelta::between(&scsi(4096), &scsi(4096 + (16 << 20)));
        assert_eq!(d.written_bytes, Some(16 << 20));
        assert_eq!(d.corroborates(16 << 20), Some(true));
        assert_eq!(d.corroborates(32 << 20), Some(false));
        // Without the page: nothing to corroborate with.
        let none = HealthDelta::between(&empty("/dev/sdb"), &empty("/dev/sdb"));
        assert_eq!(none.corroborates(16 << 20), None);
    }

    #[test]
    fn nvme_media_errors_temperature_and_written_bytes() {
        let b = nvme(10, 0, 300, 0);
        let a = nvme(2108, 3, 330, 4);
        let d = HealthDelta::between(&b, &a);
        assert_eq!(d.written_bytes, Some(2098 * 512_000));
        assert_eq!(d.temperature_peak_c, Some(57));
        let media = d
            .counters
            .iter()
            .find(|(n, _)| *n == "media_errors")
            .unwrap()
            .1;
        assert_eq!(media.added(), 3);
        assert!(d
            .changes
            .contains(&"3 new media and data integrity errors".to_string()));
        assert!(d
            .changes
            .iter()
            .any(|c| c.starts_with("overall verdict Passed -> Failed")));
        // 1 GiB written by the host is 2097.152 thousand 512-byte units,
        // which the drive rounds up to 2098: the counter covers it.
        assert_eq!(d.corroborates(1 << 30), Some(true));
        // 2 GiB would not be.
        assert_eq!(d.corroborates(2 << 30), Some(false));
    }

    #[test]
    fn ata_new_reallocations_and_no_write_counter() {
        let mut s = vec![0u8; 512];
        let put = |s: &mut Vec<u8>, slot: usize, id: u8, raw: u64| {
            let at = 2 + 12 * slot;
            s[at] = id;
            s[at + 3] = 100;
            s[at + 4] = 100;
            s[at + 5..at + 11].copy_from_slice(&raw.to_le_bytes()[..6]);
        };
        put(&mut s, 0, 5, 1);
        put(&mut s, 1, 194, 35);
        let mut after = s.clone();
        put(&mut after, 0, 5, 9);
        put(&mut after, 1, 194, 41);
        let snap = |d: &[u8]| {
            let smart = SmartData::parse(d, None).unwrap();
            let mut h = empty("/dev/sdb");
            h.ata = Some(AtaHealth {
                status: OverallStatus::Passed,
                summary: AtaSummary::of(&smart),
                smart,
                last_self_test: None,
            });
            h
        };
        let d = HealthDelta::between(&snap(&s), &snap(&after));
        assert_eq!(d.changes, vec!["8 new reallocated sectors".to_string()]);
        assert_eq!(d.temperature_peak_c, Some(41));
        assert_eq!(d.written_bytes, None, "no attribute 241");
        assert_eq!(d.corroborates(1), None);
    }
}
