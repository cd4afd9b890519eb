//! One erase of one drive through `drivelab_erase::erase`, exactly as
//! `drivelab erase DEV` runs it (plan, claim, journal, issue, verify,
//! certificate), with the policy as the consent and a [`Frontend`] that
//! copies the erase's live counters into the drive's row and obeys the
//! drive's own stop flag. How it ended is mapped to the drive's state:
//! a drive pulled mid-erase is "removed at N %: not erased", never
//! certified.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use drivelab_device::blockdev::BlockDevice;
use drivelab_erase::cert::Customer;
use drivelab_erase::sched::{Phase, Progress};
use drivelab_erase::{
    Consent, Drive, EraseError, EraseResult, Frontend, Method, Options, Parties, Report, Request,
    Strategy, VerifyMode,
};

use super::handle::Worker;
use super::state::{Control, State};
use crate::msg::{DriveResult, Msg};
use crate::policy::{MethodPref, Verify};

/// How one erase ended.
pub enum Ended {
    /// In a final state (certified, failed, removed, aborted, or the
    /// station quit).
    Final,
    /// Held by the operator mid-erase (journal kept); the detail.
    Held(String),
    /// Refused before anything was written (the claim or the plan); why.
    Refused(String),
}

/// How often the row's temperature is read from hwmon while the drive is
/// erased (a read may be a command to the drive: drivetemp and nvme ask it
/// each time).
const TEMPERATURE_EVERY: Duration = Duration::from_secs(10);

/// The drive's row fed from the erase's counters; the drive's stop flag.
struct Front<'a> {
    w: &'a Worker,
}

impl Frontend for Front<'_> {
    fn ask(&self, _d: &Drive, _token: &str) -> Option<std::io::Result<String>> {
        // The policy is the consent (Consent::confirm names the drive).
        None
    }

    fn starting(&self, _drives: &[Drive]) -> &AtomicBool {
        &self.w.control.stop
    }

    fn watch(&self, _drives: &[Drive], progress: &[Arc<Progress>], finished: &AtomicBool) {
        let Some(p) = progress.first() else { return };
        let mut last_phase = Phase::Waiting;
        let mut tenth = 0u64;
        let mut window: Vec<(Instant, u64)> = Vec::new();
        let mut temp_read: Option<Instant> = None;
        loop {
            let done = finished.load(Ordering::Relaxed);
            let phase = p.phase();
            let (d, t) = (
                p.done.load(Ordering::Relaxed),
                p.total.load(Ordering::Relaxed),
            );
            let now = Instant::now();
            if phase != last_phase {
                window.clear();
                tenth = 0;
            }
            window.push((now, d));
            window.retain(|(at, _)| now.duration_since(*at) <= Duration::from_secs(5));
            let speed = match (window.first(), window.last()) {
                (Some((a, da)), Some((b, db))) if b > a => {
                    db.saturating_sub(*da) as f64 / b.duration_since(*a).as_secs_f64()
                }
                _ => 0.0,
            };
            let pct = if t > 0 {
                d as f64 * 100.0 / t as f64
            } else {
                0.0
            };
            // The row's temperature stays live while the drive works; a
            // drive without a hwmon sensor keeps triage's reading.
            let temp = if temp_read.is_none_or(|t| now.duration_since(t) >= TEMPERATURE_EVERY) {
                temp_read = Some(now);
                drivelab_metrics::model::temperature::celsius(&self.w.name)
            } else {
                None
            };
            // The row is changed in place; copied only for an event.
            let (state, detail) = self.w.with(|v| {
                if let Some(c) = temp {
                    v.temperature_c = Some(c.round() as i64);
                }
                v.bytes_done = d;
                v.bytes_total = t;
                v.progress_pct = pct.min(100.0);
                v.speed_bytes_per_s = speed;
                v.eta_s = (speed > 0.0).then(|| t.saturating_sub(d) as f64 / speed);
                (v.state, (phase != last_phase).then(|| v.detail.clone()))
            });
            let s = match phase {
                Phase::Erasing => Some(State::Erasing),
                Phase::Verifying => Some(State::Verifying),
                _ => None,
            };
            if let (Some(s), Some(detail)) = (s.filter(|s| *s != state), detail) {
                self.w.set(s, detail);
            } else if matches!(phase, Phase::Erasing | Phase::Verifying)
                && t > 0
                && d * 10 / t > tenth
            {
                tenth = d * 10 / t;
                let _ = self.w.tx.send(Msg::Changed {
                    view: Box::new(self.w.update(|_| {})),
                    progress: true,
                });
            }
            last_phase = phase;
            if done {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The erase options the policy gives, with `method`.
fn options(w: &Worker, method: Method, crypto: bool, resume: bool) -> Result<Options, EraseError> {
    let p = &w.ctx.policy;
    Ok(Options {
        method,
        pattern: p.erase.pattern.parse()?,
        passes: p.erase.passes,
        verify: match p.erase.verify {
            Verify::None => VerifyMode::None,
            Verify::Sample => VerifyMode::Sample,
            Verify::Full => VerifyMode::Full,
        },
        skip_errors: true,
        retries: 3,
        resume,
        crypto,
        discard_first: false,
        certificate_dir: p.erase.certificate_dir.clone(),
        key_dir: w.ctx.key_dir.clone(),
        transfer: None,
        queue_depth: None,
        bus_limit: p.rate_limit(),
        strategy: Strategy::Parallel,
        command_line: format!(
            "drivelab station --policy {} ({})",
            w.ctx.policy_path.display(),
            w.update(|_| {}).bay.unwrap_or_default()
        ),
        version: w.ctx.version.clone(),
        parties: parties(w),
        stall: drivelab_erase::StallLimit::Derived,
    })
}

/// The certificate's "who" from the policy (its certificate fields, the
/// technician defaulting to the operator) and the drive's asset tag as
/// its row has it when the erase begins (read from the drive, or typed by
/// the operator before then). The tag is keyed by the drive's node, so it
/// is taken whole whatever it holds.
fn parties(w: &Worker) -> Parties {
    let p = &w.ctx.policy;
    let v = w.update(|_| {});
    Parties {
        organisation: p.certificate.organisation.clone(),
        customer: Customer {
            name: p.certificate.customer.clone(),
            address: p.certificate.customer_address.clone(),
            contact: p.certificate.customer_contact.clone(),
        },
        technician: p.technician().map(String::from),
        asset_tags: v
            .asset_tag
            .iter()
            .map(|t| format!("{}={t}", v.device.display()))
            .collect(),
    }
}

/// The Purge methods, most preferred first (method, crypto).
const PURGES: [(Method, bool); 4] = [
    (Method::NvmeSanitize, false),
    (Method::AtaSanitize, false),
    (Method::AtaSecurityEraseEnhanced, false),
    (Method::NvmeFormat, true),
];

/// The method the policy's preference picks for `dev` (a dry run of each
/// candidate: nothing is written); Err(why) when a Purge is asked and the
/// drive has none.
fn pick(w: &Worker, req: &Request) -> Result<(Method, bool), String> {
    let pref = w.ctx.policy.erase.method;
    if pref == MethodPref::Clear {
        return Ok((Method::Auto, false));
    }
    let quiet = Front { w };
    for (m, crypto) in PURGES {
        let mut r = req.clone();
        r.dry_run = true;
        r.options.method = m;
        r.options.crypto = crypto;
        if drivelab_erase::erase(&r, &quiet).is_ok() {
            return Ok((m, crypto));
        }
    }
    match pref {
        MethodPref::Purge => Err(
            "the drive offers no Purge method (sanitize, enhanced security erase, crypto format)"
                .into(),
        ),
        _ => Ok((Method::Auto, false)),
    }
}

/// Erase `dev` once.
pub fn erase(
    w: &Worker,
    dev: &BlockDevice,
    force: bool,
    restore: bool,
    resume: bool,
    own_journal: bool,
) -> Ended {
    let c = &w.control;
    c.stop.store(false, Ordering::SeqCst);
    let token = dev
        .serial
        .clone()
        .unwrap_or_else(|| dev.path.display().to_string());
    // Resume only what a journal holds for this very drive: one that comes
    // back mid-erase, known by its serial. A journal of a drive without a
    // serial names only its device node, which the next drive plugged in
    // may get: resuming it would skip what that other drive had written.
    // Such a drive starts over (a held one resumes its own erase: the
    // station has held it since).
    let journal = drivelab_erase::journal::path_for(
        &w.ctx.policy.erase.certificate_dir,
        dev.serial.as_deref(),
        &dev.path,
        dev.size.0,
    );
    let resume = resume && journal.exists() && (dev.serial.is_some() || own_journal);
    let mut req = Request {
        devices: vec![dev.path.clone()],
        options: match options(w, Method::Auto, false, resume) {
            Ok(o) => o,
            Err(e) => {
                w.set(State::Failed, format!("erase options: {e}"));
                return Ended::Final;
            }
        },
        consent: Consent {
            force,
            yes: true,
            confirm: vec![token],
            restore_native_max: restore,
        },
        dry_run: false,
    };
    match pick(w, &req) {
        Ok((m, crypto)) => {
            req.options.method = m;
            req.options.crypto = crypto;
        }
        Err(why) => return Ended::Held(format!("{why}: resume to erase with the fastest Clear")),
    }
    w.set(
        State::Erasing,
        format!("method {}", req.options.method.name()),
    );
    let report = drivelab_erase::erase(&req, &Front { w });
    match report {
        Err(e) if e.is_refusal() => Ended::Refused(e.to_string()),
        Err(e) => {
            let (state, why) = if w.pulled() {
                (
                    State::Removed,
                    "removed before writing: not erased".to_string(),
                )
            } else {
                (State::Failed, e.to_string())
            };
            w.set(state, why.clone());
            let summary = unrun(&req, dev, e.to_string());
            send_result(w, state, why, summary);
            Ended::Final
        }
        Ok(Report::DryRun(_)) => Ended::Final,
        Ok(Report::Erased(summary)) => ended(w, summary),
    }
}

/// Map a finished erase to the drive's state; the result goes to the store.
fn ended(w: &Worker, mut summary: drivelab_erase::Summary) -> Ended {
    let c = &w.control;
    let cert = &w.ctx.policy.certificate;
    drivelab_certpdf::formats::finish(&mut summary, &cert.formats, cert.paper);
    let Some(o) = summary.drives.first() else {
        w.set(State::Failed, "the erase reported no drive");
        return Ended::Final;
    };
    let pct = w.update(|v| {
        v.journal = o.journal.clone();
        v.certificate = o.certificate.clone();
        v.pdf = o.pdf.clone();
    });
    let at = format!("{:.0} %", pct.progress_pct);
    let (state, detail, ended) = match o.result {
        _ if w.pulled() && o.result != EraseResult::Erased => (
            State::Removed,
            format!("removed at {at}: not erased"),
            Ended::Final,
        ),
        EraseResult::Stopped if Control::is(&c.abort) => (
            State::Aborted,
            format!("aborted at {at}: not erased (journal kept)"),
            Ended::Final,
        ),
        EraseResult::Stopped if Control::is(&c.hold) => {
            let d = format!("held at {at}: resume to continue (journal kept)");
            (State::Held, d.clone(), Ended::Held(d))
        }
        EraseResult::Stopped => (
            State::Aborted,
            format!("station stopped at {at}: not erased (journal kept)"),
            Ended::Final,
        ),
        EraseResult::Failed => (
            State::Failed,
            o.error.clone().unwrap_or_else(|| "failed".into()),
            Ended::Final,
        ),
        // A range that could not be written after its retries is skipped
        // and listed in the certificate: the drive is not erased, however
        // the rest of it reads back.
        r if o.exceptions > 0 || !r.is_clean() => (
            State::Failed,
            format!(
                "{r}: {} range(s) could not be written (listed in its certificate): not erased",
                o.exceptions
            ),
            Ended::Final,
        ),
        // A PDF that could not be made is said on the row; the signed
        // JSON certificate stands.
        r if o.certificate.is_some() => (
            State::Certified,
            match &o.error {
                Some(e) => format!("{}: {}; {e}", r, o.verification),
                None => format!("{}: {}", r, o.verification),
            },
            Ended::Final,
        ),
        r => (State::Failed, format!("{r}: no certificate"), Ended::Final),
    };
    if !matches!(ended, Ended::Held(_)) {
        w.set(state, detail.clone());
    }
    send_result(w, state, detail, summary);
    ended
}

/// Send the main loop a drive's result for the store, each outcome with
/// the model, serial and size the station saw where the erase has none.
fn send_result(w: &Worker, state: State, detail: String, mut summary: drivelab_erase::Summary) {
    let view = w.update(|_| {});
    for o in &mut summary.drives {
        o.model = o.model.take().or_else(|| view.model.clone());
        o.serial = o.serial.take().or_else(|| view.serial.clone());
        o.capacity_bytes = o.capacity_bytes.or((view.size > 0).then_some(view.size));
    }
    let _ = w.tx.send(Msg::Result(Box::new(DriveResult {
        view: crate::drive::state::View {
            state,
            detail,
            ..view
        },
        summary,
    })));
}

/// The result of an erase that failed before it had a drive's outcome
/// (the drive pulled as it was planned or claimed): one failed outcome,
/// so the store keeps what the station tried.
fn unrun(req: &Request, dev: &BlockDevice, error: String) -> drivelab_erase::Summary {
    let o = &req.options;
    drivelab_erase::Summary {
        strategy: o.strategy,
        pattern: o.pattern.to_string(),
        verify: o.verify,
        bus_limit_bytes_per_s: o.bus_limit,
        drives: vec![drivelab_erase::Outcome {
            device: dev.path.display().to_string(),
            serial: dev.serial.clone(),
            model: dev.model.clone(),
            capacity_bytes: Some(dev.size.0),
            method: o.method,
            result: EraseResult::Failed,
            error: Some(error),
            verification: "not performed".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}
