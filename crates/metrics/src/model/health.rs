//! A drive's health counters as figures: the error counters a drive keeps
//! (reallocated and pending sectors, media errors, ...) and its wear, from
//! a health reading ([`drivelab_device::health::health`]), and when a
//! reading may be taken without disturbing the work: never while the drive
//! runs a long command of its own (a sanitize, a security erase, a format,
//! SCT Write Same in the foreground), where a reading queued behind it
//! would time out and the error handling that follows could abort it.

use drivelab_device::health::{delta, Health};
use drivelab_erase::plan::method::Method;
use drivelab_erase::sched::Phase;

use super::catalog::{DRIVE_HEALTH, DRIVE_USED};
use super::info::Held;
use super::{Family, Value};

/// Whether a drive being seasoned may be asked for its health in stage
/// `word`: not while it is purged (a sanitize or format the drive runs).
pub fn may_read_seasoning(word: &str) -> bool {
    word != "purge"
}

/// How often a drive's health is read while it may be.
pub const HEALTH_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// The figures of one health reading.
#[derive(Debug, Clone, PartialEq)]
pub struct DriveHealth {
    /// The drive's error counters, by name.
    pub counters: Vec<(&'static str, u128)>,
    /// NVMe Percentage Used, when the drive reports it.
    pub percentage_used: Option<u8>,
    /// The serial the drive gave.
    pub serial: String,
}

impl DriveHealth {
    /// The figures of reading `h`.
    pub fn of(h: &Health) -> DriveHealth {
        DriveHealth {
            counters: delta::counters(h),
            percentage_used: h.nvme.as_ref().map(|n| n.smart.percentage_used),
            serial: h.serial.clone().unwrap_or_default(),
        }
    }
}

/// Whether a drive erased with `method` may be asked for its health while
/// in `phase`: not while the drive itself runs the erase (one long command
/// for the whole drive, or SCT Write Same), nor just before it may start
/// one; always while the host writes or reads it back, and once it has
/// finished.
pub fn may_read(method: Method, phase: Phase) -> bool {
    let drive_runs_it = method.whole_device() || method == Method::SctWriteSame;
    match phase {
        Phase::Verifying | Phase::Done | Phase::Failed | Phase::Stopped => true,
        Phase::Waiting | Phase::Erasing => !drive_runs_it,
    }
}

/// The two families of health figures, empty.
pub fn empty() -> [Family; 2] {
    [Family::of(&DRIVE_HEALTH), Family::of(&DRIVE_USED)]
}

/// Add drive `held`'s reading `h` to `fams` (from [`empty`]).
pub fn push(fams: &mut [Family; 2], held: &Held, h: &DriveHealth) {
    push_as(fams, &held.device, &held.serial, h);
}

/// Add the reading `h` of drive `dev` (kernel name) with `serial` to
/// `fams`.
pub fn push_as(fams: &mut [Family; 2], dev: &str, serial: &str, h: &DriveHealth) {
    for (name, v) in &h.counters {
        fams[0].push(&[dev, serial, name], Value::Gauge(*v as f64));
    }
    if let Some(p) = h.percentage_used {
        fams[1].push(&[dev, serial], Value::Gauge(f64::from(p) / 100.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::find;

    #[test]
    fn a_drive_that_runs_its_own_erase_is_left_alone_until_it_ends() {
        for m in [
            Method::NvmeSanitize,
            Method::NvmeFormat,
            Method::AtaSanitize,
            Method::ScsiSanitize,
            Method::AtaSecurityErase,
            Method::AtaSecurityEraseEnhanced,
            Method::SctWriteSame,
        ] {
            assert!(!may_read(m, Phase::Erasing), "{m:?}");
            assert!(!may_read(m, Phase::Waiting), "{m:?}");
            assert!(may_read(m, Phase::Verifying), "{m:?}");
            assert!(may_read(m, Phase::Done), "{m:?}");
        }
        for m in [Method::Stream, Method::Zeroout, Method::NvmeWriteZeroes] {
            assert!(may_read(m, Phase::Erasing), "{m:?}");
        }
        assert!(!may_read_seasoning("purge"));
        for w in ["fill", "image", "rounds", "compare"] {
            assert!(may_read_seasoning(w), "{w}");
        }
    }

    #[test]
    fn counters_and_wear_are_labelled_by_drive_and_name() {
        let held = Held {
            path: "/dev/nvme0n1".into(),
            device: "nvme0n1".into(),
            serial: "S1".into(),
        };
        let h = DriveHealth {
            counters: vec![("media_errors", 3), ("error_log_entries", 12)],
            percentage_used: Some(104),
            serial: "S1".into(),
        };
        let mut f = empty();
        push(&mut f, &held, &h);
        let c = find(&f, &DRIVE_HEALTH).unwrap();
        assert_eq!(
            c.get(&["nvme0n1", "S1", "media_errors"]),
            Some(&Value::Gauge(3.0))
        );
        let u = find(&f, &DRIVE_USED).unwrap();
        assert_eq!(u.get(&["nvme0n1", "S1"]), Some(&Value::Gauge(1.04)));
    }
}
