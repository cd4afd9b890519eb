//! The policy's checks: each key's value ([`values`]) and the bays against
//! this machine ([`against_machine`]): a bay that matches the disk holding
//! the running system or a mounted device is refused before the station
//! starts, so a pattern written too wide never reaches the claim.

use std::path::Path;

use drivelab_device::blockdev::{self, BlockDevice, Kind};
use drivelab_device::safety;

use super::glob;
use super::model::{parse_size, Policy, PolicyError, BY_PATH, TRANSPORTS};
use crate::watch::names;

/// Check every value (key, what is wrong) in the order the keys are
/// documented.
pub fn values(p: &Policy) -> Result<(), (String, String)> {
    if p.bays.is_empty() {
        return Err((
            "bays".into(),
            "the policy names no bays: add bays = [\"pci-0000:00:1f.2-ata-*\"] with the /dev/disk/by-path names of the slots this station may erase".into(),
        ));
    }
    for (i, b) in p.bays.iter().enumerate() {
        if Policy::bay_pattern(b).trim().is_empty() {
            return Err((
                format!("bays[{i}]"),
                "an empty pattern: name a slot's /dev/disk/by-path name (wildcards * ? [..] allowed)".into(),
            ));
        }
        if b.starts_with('/') && !b.starts_with(BY_PATH) && !p.include_loop {
            return Err((
                format!("bays[{i}]"),
                format!("'{b}' is not a /dev/disk/by-path name: bays are slots (pci-...-ata-1); loop devices and their files need include_loop = true"),
            ));
        }
    }
    for t in &p.filter.transport {
        if !TRANSPORTS.contains(&t.as_str()) {
            return Err((
                "filter.transport".into(),
                format!("'{t}' is not a transport: use {}", TRANSPORTS.join(", ")),
            ));
        }
    }
    for (key, v) in [
        ("filter.min_size", &p.filter.min_size),
        ("filter.max_size", &p.filter.max_size),
        ("erase.rate_limit", &p.erase.rate_limit),
    ] {
        if let Some(s) = v {
            let n = parse_size(s.trim().trim_end_matches("/s"))
                .map_err(|why| (key.to_string(), why))?;
            if key == "erase.rate_limit" && n == 0 {
                return Err((
                    key.into(),
                    "must be more than 0 bytes/s (leave it out for no limit)".into(),
                ));
            }
        }
    }
    let (lo, hi) = p.size_range();
    if lo > hi {
        return Err((
            "filter.min_size".into(),
            "is larger than filter.max_size: no drive could be taken".into(),
        ));
    }
    if p.triage.max_percentage_used.is_some_and(|v| v > 255) {
        return Err((
            "triage.max_percentage_used".into(),
            "must be 0 to 255 (NVMe reports up to 255 %)".into(),
        ));
    }
    if !(1..=drivelab_erase::plan::MAX_PASSES).contains(&p.erase.passes) {
        return Err((
            "erase.passes".into(),
            format!("must be 1 to {}", drivelab_erase::plan::MAX_PASSES),
        ));
    }
    if let Err(e) = p.erase.pattern.parse::<drivelab_patterns::Pattern>() {
        return Err(("erase.pattern".into(), e.to_string()));
    }
    if p.erase.certificate_dir.as_os_str().is_empty() {
        return Err((
            "erase.certificate_dir".into(),
            "is empty: name the directory certificates and journals go to".into(),
        ));
    }
    if let Err(why) = drivelab_certpdf::formats::check(&p.certificate.formats) {
        return Err(("certificate.formats".into(), why.into()));
    }
    for (key, v) in [
        ("operator", &p.operator),
        ("store", &p.store),
        ("certificate.organisation", &p.certificate.organisation),
        ("certificate.customer", &p.certificate.customer),
        (
            "certificate.customer_address",
            &p.certificate.customer_address,
        ),
        (
            "certificate.customer_contact",
            &p.certificate.customer_contact,
        ),
        ("certificate.technician", &p.certificate.technician),
    ] {
        if v.as_deref()
            .is_some_and(|s| s.trim().is_empty() || s.chars().any(char::is_control))
        {
            return Err((
                key.into(),
                "must be one non-empty line (or left out)".into(),
            ));
        }
    }
    Ok(())
}

/// Refuse bays that match a device holding the running system or one that
/// is mounted (the device, or a partition of it), whatever the claim would
/// say later: a policy is consent to erase what its bays match, so it must
/// not match what must never be erased.
pub fn against_machine(path: &Path, p: &Policy) -> Result<(), PolicyError> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| blockdev::parse_mountinfo(&t))
        .unwrap_or_default();
    let system = safety::system_devices(&mounts);
    let devices = BlockDevice::list_all().map_err(|e| PolicyError::Read {
        path: path.to_path_buf(),
        why: format!("cannot list the block devices: {e}"),
    })?;
    for dev in devices.iter().filter(|d| !d.partition) {
        if dev.kind == Kind::Loop && !p.include_loop {
            continue;
        }
        let names = names::names_of(dev, p.include_loop);
        let Some((i, bay)) = p.bays.iter().enumerate().find(|(_, b)| {
            names
                .iter()
                .any(|n| glob::matches(Policy::bay_pattern(b), n) || glob::matches(b, n))
        }) else {
            continue;
        };
        let mut own: Vec<&BlockDevice> = vec![dev];
        own.extend(dev.partitions.iter());
        let why = own.iter().find_map(|d| {
            if let Some((_, mp)) = system.iter().find(|(n, _)| *n == (d.major, d.minor)) {
                return Some(format!("holds {} (the running system)", mp.display()));
            }
            mounts
                .iter()
                .find(|m| (m.major, m.minor) == (d.major, d.minor))
                .map(|m| format!("/dev/{} is mounted at {}", d.name, m.mount_point.display()))
        });
        if let Some(why) = why {
            return Err(PolicyError::Value {
                path: path.to_path_buf(),
                key: format!("bays[{i}]"),
                why: format!(
                    "'{bay}' matches {} ({}), which {why}: narrow the pattern to the slots this station may erase",
                    dev.path.display(),
                    names.first().map(String::as_str).unwrap_or("no by-path name")
                ),
            });
        }
    }
    Ok(())
}
