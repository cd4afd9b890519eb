//! One drive's worker: a thread of its own that takes the drive through
//! its states (identify, the bay and filters, triage, the content check,
//! erase, verify, certificate) and reports each change to the main loop.
//! A drive that hangs blocks only its own worker; the main loop never
//! waits on one.

use std::time::Duration;

use drivelab_device::blockdev::{BlockDevice, Kind};
use drivelab_device::safety;

use super::erase::{self, Ended};
pub use super::handle::{Ctx, Worker};
use super::state::{Control, State};
use super::triage;
use crate::policy::{glob, AssetTag, Failing, OnContent, Policy};
use crate::watch::{names, Identity};

/// Run a drive from detection to a final state (or held when the station
/// quits).
pub fn run(w: &Worker) {
    let dev = match BlockDevice::from_name(&w.name) {
        Ok(d) => d,
        Err(e) => {
            w.set(
                State::Removed,
                format!("gone before it was identified: {e}"),
            );
            return;
        }
    };
    identify(w, &dev);
    let bay = w.update(|_| {}).bay;
    if bay.is_none() {
        w.set(
            State::Outside,
            "in no bay of the policy: shown, never touched",
        );
        return;
    }
    if let Some(why) = filtered(&w.ctx.policy, &dev) {
        w.set(
            State::Outside,
            format!("filtered out: {why}: never touched"),
        );
        return;
    }
    w.set(State::Triage, "reading health");
    let found = triage::triage(&dev, &w.ctx.policy.triage);
    let grade = found.grade;
    let failing = grade.grade == "fail";
    let why = grade.reasons.join("; ");
    w.update(|v| {
        v.grade = Some(grade);
        v.temperature_c = found.temperature_c;
        v.health = found.health;
    });
    if failing && w.ctx.policy.triage.failing == Failing::Hold {
        let detail = format!("failing grade ({why}): resume to erase anyway");
        if !hold(w, &detail) {
            return;
        }
    }
    let Some(force) = content_check(w, &dev) else {
        return;
    };
    erase_until_done(w, &dev, force);
}

/// Erase, and again after each hold the operator resumes, until a final
/// state.
fn erase_until_done(w: &Worker, dev: &BlockDevice, mut force: bool) {
    let mut resume = w.ctx.policy.erase.resume;
    // Whether the journal, if any, is of an erase this worker began.
    let mut own_journal = false;
    let mut restore = w.ctx.policy.erase.on_hidden == crate::policy::OnHidden::Restore;
    loop {
        if Control::is(&w.control.hold) && !hold(w, "held by the operator: resume to erase") {
            return;
        }
        match erase::erase(w, dev, force, restore, resume, own_journal) {
            Ended::Final => return,
            Ended::Held(detail) => {
                if !hold(w, &detail) {
                    return;
                }
                resume = true;
                own_journal = true;
            }
            Ended::Refused(detail) => {
                if !hold(w, &format!("{detail}: confirm to erase anyway")) {
                    return;
                }
                force = true;
                restore = true;
            }
        }
    }
}

/// Fill in what the drive is and which bay holds it.
fn identify(w: &Worker, dev: &BlockDevice) {
    let p = &w.ctx.policy;
    let names = names::names_of(dev, p.include_loop);
    let bay = if dev.kind == Kind::Loop && !p.include_loop {
        None
    } else {
        p.bay_of(&names)
    };
    if let Ok(mut g) = w.identity.lock() {
        *g = Some(Identity::of(dev));
    }
    let tag = match p.certificate.asset_tag {
        AssetTag::Serial => dev.serial.clone(),
        AssetTag::Wwid => dev.wwid.clone(),
        AssetTag::None | AssetTag::Operator => None,
    };
    w.update(|v| {
        v.model = dev.model.clone();
        v.serial = dev.serial.clone();
        v.size = dev.size.0;
        v.transport = transport(dev).into();
        v.bay = bay;
        if v.asset_tag.is_none() {
            v.asset_tag = tag;
        }
    });
    w.set(
        State::Identified,
        names.first().cloned().unwrap_or_default(),
    );
}

/// The transport a filter names.
pub fn transport(dev: &BlockDevice) -> &'static str {
    let usb = std::fs::canonicalize(format!("/sys/class/block/{}", dev.name))
        .map(|p| p.display().to_string().contains("/usb"))
        .unwrap_or(false);
    match dev.kind {
        _ if usb => "usb",
        Kind::Loop => "loop",
        Kind::Nvme => "nvme",
        Kind::Ata => "sata",
        Kind::Scsi => {
            if dev.wwid.as_deref().is_some_and(|w| w.starts_with("naa.5")) {
                "sas"
            } else {
                "scsi"
            }
        }
        Kind::Virtio => "virtio",
        Kind::Mmc => "mmc",
        _ => "other",
    }
}

/// Why the policy's filters leave `dev` alone, if they do.
fn filtered(p: &Policy, dev: &BlockDevice) -> Option<String> {
    let f = &p.filter;
    let t = transport(dev);
    if !f.transport.is_empty() && !f.transport.iter().any(|x| x == t) {
        return Some(format!("transport {t} is not in filter.transport"));
    }
    let (lo, hi) = p.size_range();
    if dev.size.0 < lo || dev.size.0 > hi {
        return Some(format!(
            "size {} B is outside filter.min_size..max_size",
            dev.size.0
        ));
    }
    let any = |pats: &[String], v: &Option<String>| {
        pats.is_empty()
            || v.as_deref()
                .is_some_and(|s| pats.iter().any(|p| glob::matches(p, s)))
    };
    if !any(&f.model, &dev.model) {
        return Some("model matches no filter.model pattern".into());
    }
    if !any(&f.serial, &dev.serial) {
        return Some("serial matches no filter.serial pattern".into());
    }
    None
}

/// Look at what is on the drive before writing it: refused outright when
/// someone uses its bytes (the claim would refuse it too), held until
/// confirmed when it holds a partition table or a filesystem and the
/// policy says hold. Some(force) to go on, None when the worker is done.
fn content_check(w: &Worker, dev: &BlockDevice) -> Option<bool> {
    let a = safety::assess(dev);
    if let Some(r) = a.refusal(true) {
        w.set(State::Failed, format!("never touched: {r}"));
        return None;
    }
    if a.refusal(false).is_none() {
        return Some(false);
    }
    if w.ctx.policy.erase.on_content == OnContent::Erase {
        return Some(true);
    }
    let detail = format!("{}: confirm to erase", a.state());
    hold(w, &detail).then_some(true)
}

/// Hold the drive until the operator lets it go on (true), or it is
/// pulled, aborted or the station quits (false, final state set).
pub fn hold(w: &Worker, detail: &str) -> bool {
    let c = &w.control;
    c.go.store(false, std::sync::atomic::Ordering::SeqCst);
    w.set(State::Held, detail);
    loop {
        if w.pulled() {
            w.set(State::Removed, "removed while held: not erased");
            return false;
        }
        if Control::is(&c.abort) {
            w.set(State::Aborted, "aborted while held: not erased");
            return false;
        }
        if Control::is(&c.quit) {
            return false;
        }
        if Control::is(&c.go) {
            c.go.store(false, std::sync::atomic::Ordering::SeqCst);
            c.hold.store(false, std::sync::atomic::Ordering::SeqCst);
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
