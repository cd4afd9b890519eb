//! Triage: read a drive's health (read-only, each command with a timeout,
//! so a drive that hangs fails its own triage and no one else's) and grade
//! it against the policy's thresholds.

use drivelab_device::blockdev::BlockDevice;
use drivelab_device::health::{self, around, Health};
use drivelab_metrics::model::health::DriveHealth;

use super::state::Grade;
use crate::policy::Triage;

/// How long one health command may take.
pub const HEALTH_TIMEOUT_MS: u32 = 30_000;

/// The figures triage grades, as the drive reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// Reallocated sectors.
    pub reallocated: Option<u64>,
    /// Pending sectors.
    pub pending: Option<u64>,
    /// Media errors (uncorrectable).
    pub media_errors: Option<u64>,
    /// Percentage of rated life used.
    pub percentage_used: Option<u64>,
    /// Power-on hours.
    pub power_on_hours: Option<u64>,
    /// Temperature, °C.
    pub temperature_c: Option<i64>,
}

impl Figures {
    /// The figures of a health reading.
    pub fn of(h: &Health) -> Figures {
        let mut f = Figures::default();
        if let Some(a) = &h.ata {
            let s = &a.summary;
            f.reallocated = s.reallocated_sectors;
            f.pending = s.pending_sectors;
            f.media_errors = s.reported_uncorrectable.or(s.offline_uncorrectable);
            f.percentage_used = s.percentage_used.map(u64::from);
            f.power_on_hours = s.power_on_hours;
            f.temperature_c = s.temperature_c.map(i64::from);
        }
        if let Some(n) = &h.nvme {
            let s = &n.smart;
            f.media_errors = u64::try_from(s.media_errors.0).ok();
            f.percentage_used = Some(u64::from(s.percentage_used));
            f.power_on_hours = u64::try_from(s.power_on_hours.0).ok();
            f.temperature_c = s.temperature_c.map(i64::from);
        }
        if let Some(s) = &h.scsi {
            let unc: Vec<u64> = [&s.read_errors, &s.write_errors, &s.verify_errors]
                .into_iter()
                .flatten()
                .filter_map(|c| c.total_uncorrected)
                .collect();
            if !unc.is_empty() {
                f.media_errors = Some(unc.iter().sum());
            }
            f.temperature_c = s
                .temperature
                .as_ref()
                .and_then(|t| t.current_c)
                .map(i64::from);
        }
        f
    }
}

/// Grade figures against the thresholds: each one exceeded is a reason.
pub fn grade_of(f: &Figures, t: &Triage) -> Grade {
    let checks = [
        (
            "reallocated sectors",
            f.reallocated,
            t.max_reallocated_sectors,
        ),
        ("pending sectors", f.pending, t.max_pending_sectors),
        ("media errors", f.media_errors, t.max_media_errors),
        ("percentage used", f.percentage_used, t.max_percentage_used),
        ("power-on hours", f.power_on_hours, t.max_power_on_hours),
    ];
    let reasons: Vec<String> = checks
        .iter()
        .filter_map(|(what, v, max)| match (v, max) {
            (Some(v), Some(max)) if v > max => Some(format!("{what} {v} > {max}")),
            _ => None,
        })
        .collect();
    Grade {
        grade: if reasons.is_empty() { "pass" } else { "fail" }.into(),
        reasons,
    }
}

/// What triage found: the grade, the temperature, and the drive's error
/// counters and wear as the metrics serve them.
pub struct Found {
    /// The grade.
    pub grade: Grade,
    /// °C, when the drive reports one.
    pub temperature_c: Option<i64>,
    /// The reading's counters, when the drive answered.
    pub health: Option<DriveHealth>,
}

/// Read `dev`'s health and grade it; a drive with no health of its own
/// (a loop device, virtio) is "n/a", one that does not answer "fail".
pub fn triage(dev: &BlockDevice, t: &Triage) -> Found {
    let without = |grade: &str, reason: String| Found {
        grade: Grade {
            grade: grade.into(),
            reasons: vec![reason],
        },
        temperature_c: None,
        health: None,
    };
    if !around::has_health(dev.kind) {
        return without(
            "n/a",
            format!("a {:?} device reports no health", dev.kind).to_lowercase(),
        );
    }
    match health::health(&dev.path, Some(HEALTH_TIMEOUT_MS)) {
        Ok(h) => {
            let f = Figures::of(&h);
            Found {
                grade: grade_of(&f, t),
                temperature_c: f.temperature_c,
                health: Some(DriveHealth::of(&h)),
            }
        }
        Err(e) => without("fail", format!("health could not be read: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threshold_exceeded_fails_the_grade_and_says_which() {
        let t = Triage {
            max_reallocated_sectors: Some(10),
            max_pending_sectors: Some(0),
            max_media_errors: None,
            max_percentage_used: Some(90),
            max_power_on_hours: Some(40_000),
            failing: Default::default(),
        };
        let table = [
            (Figures::default(), "pass", vec![]),
            (
                Figures {
                    reallocated: Some(10),
                    pending: Some(0),
                    ..Default::default()
                },
                "pass",
                vec![],
            ),
            (
                Figures {
                    reallocated: Some(11),
                    ..Default::default()
                },
                "fail",
                vec!["reallocated sectors 11 > 10"],
            ),
            (
                Figures {
                    pending: Some(1),
                    percentage_used: Some(91),
                    power_on_hours: Some(40_001),
                    media_errors: Some(1_000),
                    ..Default::default()
                },
                "fail",
                vec![
                    "pending sectors 1 > 0",
                    "percentage used 91 > 90",
                    "power-on hours 40001 > 40000",
                ],
            ),
        ];
        for (f, grade, reasons) in table {
            let g = grade_of(&f, &t);
            assert_eq!(g.grade, grade, "{f:?}");
            assert_eq!(g.reasons, reasons, "{f:?}");
        }
    }
}
