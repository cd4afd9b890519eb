//! The result store from the command line: where results go (`--store
//! PATH|postgres://…`, `$DRIVELAB_STORE`, the default file in the user's
//! data directory; `--no-store` for none), and the one hook every command
//! that produces a result calls after printing it.
//!
//! A store failure never costs the result: it has been printed already;
//! the failure is one warning line on stderr and the command's exit status
//! is unchanged (the work it reports did succeed or fail on its own). A
//! stored result is announced with its ID when stderr is a terminal.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Mutex;

use drivelab_device::blockdev::{backing_device_of_file, BlockDevice};
use drivelab_device::claim::ClaimRecord;
use drivelab_erase::outcome::Summary;
use drivelab_replay::session::{AuditReport, SessionReport};
use drivelab_season::result::SeasonReport;
use drivelab_steps::result::TestReport;
use drivelab_store::{Artifact, Drive, FleetTag, Kind, NewRecord, Printed, Store};
use serde_json::Value;

use crate::error::usage;

/// Where results go, from the global flags (or `run`'s own).
#[derive(Debug, Clone, Default)]
struct Choice {
    spec: Option<String>,
    disabled: bool,
}

/// Set while a full-screen interface owns the terminal: the "stored as"
/// notice is not printed over it.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Print no "stored as" notice from now on (the station's screen shows
/// what was stored itself).
pub fn quiet() {
    QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
}

static CHOICE: Mutex<Choice> = Mutex::new(Choice {
    spec: None,
    disabled: false,
});

/// Record `--store` / `--no-store` (called by `main`, and by `run`, whose
/// options are parsed by hand). A later call only adds what it names.
pub fn choose(spec: Option<String>, disabled: bool) {
    if let Ok(mut c) = CHOICE.lock() {
        if spec.is_some() {
            c.spec = spec;
        }
        c.disabled |= disabled;
    }
}

/// Check the chosen store's file before any work starts (unless
/// `--no-store`): a device, a loop device's backing file or a symlink to
/// one is bad input (exit status 2), nothing written.
pub fn check() -> anyhow::Result<()> {
    let c = choice();
    if c.disabled {
        return Ok(());
    }
    match drivelab_store::check(c.spec.as_deref()) {
        Err(e @ drivelab_store::StoreError::BadLocation { .. }) => Err(usage(e.to_string())),
        // A store unreachable now is a warning when the result is saved.
        _ => Ok(()),
    }
}

fn choice() -> Choice {
    CHOICE.lock().map(|c| c.clone()).unwrap_or_default()
}

/// Open the chosen store for reading (history, show, compare, export):
/// an unreachable or refused store is bad input (exit status 2).
pub fn open() -> anyhow::Result<Box<dyn Store>> {
    let c = choice();
    if c.disabled {
        return Err(usage(
            "--no-store: this command reads the store; drop --no-store",
        ));
    }
    drivelab_store::open(c.spec.as_deref()).map_err(store_error)
}

/// A store error for the user: bad input (exit 2) or a failure (exit 1).
pub fn store_error(e: drivelab_store::StoreError) -> anyhow::Error {
    if e.is_bad_input() {
        usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

/// What a command printed, for the store.
pub struct Outcome<'a> {
    /// The kind of command.
    pub kind: Kind,
    /// The result's JSON rendering: exactly what was printed in JSON mode.
    pub json: &'a str,
    /// The text printed, when text was printed (then `json` was not).
    pub text: Option<&'a str>,
    /// The exit status the command is about to return.
    pub exit_status: u8,
    /// The options that define the workload (equal options: a repeat).
    pub options: Value,
    /// Files to keep with the record (an erase's certificates).
    pub artifacts: Vec<Artifact>,
}

/// Store a printed result unless `--no-store`; its record ID when stored.
/// Never fails: a store that cannot be opened or written is a warning.
pub fn save(o: Outcome<'_>) -> Option<String> {
    let c = choice();
    if c.disabled {
        return None;
    }
    let rec = record(&o);
    let stored = drivelab_store::open(c.spec.as_deref()).and_then(|mut s| {
        let id = s.put(&rec)?;
        Ok((id, s.location()))
    });
    match stored {
        // On a terminal only: stderr of a script keeps to warnings and
        // errors (one line each); scripts find the ID with `history`.
        Ok((id, at)) => {
            if std::io::stderr().is_terminal() && !QUIET.load(std::sync::atomic::Ordering::Relaxed)
            {
                eprintln!(
                    "drivelab: stored as {} {id} in {at} (drivelab show {id})",
                    rec.kind
                );
            }
            Some(id.to_string())
        }
        Err(e) => {
            eprintln!(
                "drivelab: warning: the result was not stored: {}; it was printed above (--no-store skips the store)",
                e.to_string().replace('\n', " ")
            );
            None
        }
    }
}

/// Store a result that was printed as `printed`: in JSON mode that is the
/// JSON kept; after text, the report's JSON rendering (as JSON mode would
/// have printed it) is kept with the text beside it.
pub fn save_printed<R: serde::Serialize>(
    kind: Kind,
    printed: &str,
    json_mode: bool,
    report: &R,
    exit_status: u8,
    options: Value,
    artifacts: Vec<Artifact>,
) -> anyhow::Result<Option<String>> {
    let rendered;
    let (json, text) = if json_mode {
        (printed, None)
    } else {
        rendered = format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::to_value(report)?)?
        );
        (rendered.as_str(), Some(printed))
    };
    Ok(save(Outcome {
        kind,
        json,
        text,
        exit_status,
        options,
        artifacts,
    }))
}

/// The record for what was printed.
fn record(o: &Outcome<'_>) -> NewRecord {
    let v: Value = serde_json::from_str(o.json).unwrap_or(Value::Null);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let time_ms = v
        .get("timestamp_ms")
        .and_then(Value::as_i64)
        .filter(|t| *t > 0)
        .unwrap_or(now);
    let argv: Vec<String> = std::env::args().collect();
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    NewRecord {
        kind: o.kind,
        time_ms,
        host: proc_line("/proc/sys/kernel/hostname"),
        kernel: proc_line("/proc/sys/kernel/osrelease"),
        version: env!("CARGO_PKG_VERSION").to_string(),
        spec: serde_json::json!({"command_line": argv, "cwd": cwd, "options": o.options}),
        result_json: o.json.to_string(),
        result_text: o.text.map(str::to_string),
        printed: if o.text.is_some() {
            Printed::Text
        } else {
            Printed::Json
        },
        verdict: verdict(o.kind, &v, o.exit_status),
        exit_status: i32::from(o.exit_status),
        headline: crate::results::headline(o.kind, &v),
        drives: drives(o.kind, &v),
        series: drivelab_store::extract::series(&v),
        artifacts: o.artifacts.clone(),
        fleet: FleetTag::from_env(),
    }
}

fn proc_line(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The verdict in a few words, read from the result's typed struct.
fn verdict(kind: Kind, v: &Value, code: u8) -> String {
    let mut words = Vec::new();
    if code == 130 {
        words.push("interrupted".to_string());
    }
    match kind {
        Kind::Run => {
            let r = drivelab_report::RunReport::from_stored(v);
            if let Some(e) = &r.error {
                words.push(format!("error: {e}"));
            }
            if r.device_check.is_empty() {
                words.push("no device check".into());
            } else {
                let bad: Vec<String> = r
                    .device_check
                    .iter()
                    .filter(|c| !c.agrees)
                    .map(|c| format!("{}: {}", c.device, c.verdict))
                    .collect();
                if bad.is_empty() {
                    words.push("device check agrees".into());
                } else {
                    words.extend(bad);
                }
            }
        }
        Kind::Replay => {
            let errors = SessionReport::from_stored(v).replay.errors;
            if errors > 0 {
                words.push(format!("{errors} I/O errors"));
            }
        }
        Kind::Test => words.push(
            if TestReport::from_stored(v).passed {
                "passed"
            } else {
                "failed"
            }
            .into(),
        ),
        Kind::Audit => {
            let a = AuditReport::from_stored(v);
            words.push(if a.pass { "pass" } else { "fail" }.into());
            if a.replay.replay.errors > 0 {
                words.push(format!("{} I/O errors", a.replay.replay.errors));
            }
        }
        // Each drive's state (season) or result (erase); one word when all
        // drives agree.
        Kind::Season => {
            let r = SeasonReport::from_stored(v);
            drive_words(r.drives.iter().map(|d| d.state.as_str()), &mut words)
        }
        Kind::Erase => {
            let r = Summary::from_stored(v);
            drive_words(r.drives.iter().map(|d| d.result.as_str()), &mut words)
        }
    }
    if words.is_empty() {
        words.push(if code == 0 { "ok" } else { "failed" }.into());
    }
    words.join("; ")
}

/// Each drive's word, once when every drive has the same.
fn drive_words<'a>(each: impl Iterator<Item = &'a str>, words: &mut Vec<String>) {
    let each: Vec<String> = each.map(String::from).collect();
    let mut uniq = each.clone();
    uniq.dedup();
    if uniq.len() == 1 {
        words.push(uniq.remove(0));
    } else {
        words.extend(each);
    }
}

/// The drives a result of `kind` names, read from its typed struct: a
/// run's device check and claims, a test's or replay's claim and target,
/// an erase's drives, a season's drives' identities, an audit's replay's
/// target. Each is described as the kernel has it now (a partition by its
/// disk's model and serial; a file by the device under it), once; an
/// erased drive whose node is gone or holds another drive now (pulled from
/// a station) by what the erase saw of it: its node, serial, model and
/// capacity.
fn drives(kind: Kind, v: &Value) -> Vec<Drive> {
    let mut refs: Vec<String> = Vec::new();
    // What an erase saw at each node: a drive pulled from a station leaves
    // its node to the next one plugged in (or, a loop device, to nothing),
    // which must not be recorded as the erased drive.
    let mut erased: Vec<Drive> = Vec::new();
    match kind {
        Kind::Run => {
            let r = drivelab_report::RunReport::from_stored(v);
            refs.extend(r.device_check.into_iter().map(|c| c.device));
            refs.extend(r.claims.iter().map(claimed));
        }
        Kind::Test => {
            let r = TestReport::from_stored(v);
            refs.extend(r.claim.as_ref().map(claimed));
            refs.push(r.target);
        }
        Kind::Erase => {
            let r = Summary::from_stored(v);
            for d in r.drives {
                refs.push(d.device.clone());
                erased.push(Drive {
                    path: d.device,
                    serial: d.serial,
                    model: d.model,
                    capacity_bytes: d.capacity_bytes,
                    ..Drive::default()
                });
            }
        }
        Kind::Season => {
            let r = SeasonReport::from_stored(v);
            refs.extend(r.drives.into_iter().map(|d| d.identity.device));
        }
        Kind::Replay => {
            let r = SessionReport::from_stored(v);
            refs.extend(r.claim.as_ref().map(claimed));
            refs.push(r.target);
        }
        Kind::Audit => refs.push(AuditReport::from_stored(v).replay.target),
    }
    refs.retain(|r| !r.is_empty());
    let mut out: Vec<Drive> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for r in refs {
        let saw = erased.iter().find(|d| d.path == r);
        // A node that now holds a drive with another serial or size than
        // the erase saw is not that drive: only what the erase saw is
        // kept. (A drive the kernel knows no serial or model of may be the
        // same one, its serial read by the erase's own commands: what the
        // erase saw is added.)
        let dev = resolve(&r)
            .map(|d| {
                let id = identity(&d);
                (d.name, id)
            })
            .filter(|(_, id)| saw.is_none_or(|s| same_drive(s, id)));
        let key = dev.as_ref().map(|d| d.0.clone()).unwrap_or(r.clone());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        out.push(match (dev, saw) {
            (Some((_, mut id)), saw) => {
                if let Some(s) = saw {
                    id.serial = id.serial.or_else(|| s.serial.clone());
                    id.model = id.model.or_else(|| s.model.clone());
                }
                id
            }
            (None, Some(s)) => s.clone(),
            (None, None) => Drive {
                path: r,
                ..Drive::default()
            },
        });
    }
    out
}

/// Whether the drive at a node now (`now`) may be the one an erase saw
/// there (`saw`): no serial or capacity of the two differs.
fn same_drive(saw: &Drive, now: &Drive) -> bool {
    let serial = match (saw.serial.as_deref(), now.serial.as_deref()) {
        (Some(a), Some(b)) => a.trim() == b.trim(),
        _ => true,
    };
    let size = match (saw.capacity_bytes, now.capacity_bytes) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    serial && size
}

/// The device a claim names: its kernel name, or for a file its path with
/// symlinks resolved.
fn claimed(c: &ClaimRecord) -> String {
    match &c.device {
        Some(d) => d.clone(),
        None => c.canonical.display().to_string(),
    }
}

fn resolve(r: &str) -> Option<BlockDevice> {
    use std::os::unix::fs::FileTypeExt;
    if !r.starts_with('/') {
        return BlockDevice::from_name(r).ok();
    }
    let md = std::fs::metadata(r).ok()?;
    if md.file_type().is_block_device() {
        BlockDevice::from_path(Path::new(r)).ok()
    } else {
        backing_device_of_file(Path::new(r)).ok().flatten()
    }
}

/// A drive's identity; a partition's from its disk.
fn identity(d: &BlockDevice) -> Drive {
    let disk = if d.partition {
        d.parent_disk().ok().flatten()
    } else {
        None
    };
    let id = disk.as_ref().unwrap_or(d);
    Drive {
        path: d.path.display().to_string(),
        model: id.model.clone(),
        serial: id.serial.clone(),
        firmware: id.firmware.clone(),
        wwn: id.wwid.clone(),
        capacity_bytes: Some(id.size.0),
        logical_sector: Some(id.logical_sector.0),
        physical_sector: Some(id.physical_sector.0),
        transport: serde_json::to_value(id.kind)
            .ok()
            .and_then(|k| k.as_str().map(String::from)),
    }
}

#[cfg(test)]
mod tests {
    use super::{drives, verdict};
    use drivelab_store::Kind;
    use drivelab_testkit::{require_root, LoopDev, TempDir};
    use serde_json::json;

    /// A station's drive pulled mid-erase leaves its node to the next
    /// drive plugged in, often before its result is stored: the VM
    /// hot-plug test (crates/vmtest/tests/station_hotplug.rs, which needs
    /// drives with serials) saw /dev/sdc's removed erase stored under the
    /// serial of the ext4 drive plugged in after it. Here: the serial the
    /// erase saw is kept when the node is gone, and added to a drive the
    /// kernel knows no serial of.
    #[test]
    fn an_erased_drive_keeps_the_serial_the_erase_saw() {
        require_root();
        let dir = TempDir::new("store-node-reused");
        let gone =
            json!({"drives": [{"device": "/dev/drivelab-no-such-node", "serial": "GONE-1"}]});
        let d = drives(Kind::Erase, &gone);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].path, "/dev/drivelab-no-such-node");
        assert_eq!(d[0].serial.as_deref(), Some("GONE-1"));
        let lo = LoopDev::new_in(&dir, 1 << 20);
        let seen = json!({"drives": [{"device": lo.dev(), "serial": "READ-BY-ERASE"}]});
        let d = drives(Kind::Erase, &seen);
        assert_eq!(d[0].serial.as_deref(), Some("READ-BY-ERASE"), "{d:?}");
        assert_eq!(d[0].capacity_bytes, Some(1 << 20), "{d:?}");
        let plain = json!({"drives": [{"device": lo.dev()}]});
        assert_eq!(drives(Kind::Erase, &plain)[0].serial, None);
    }

    /// A station's drive pulled mid-erase was stored with no model (the
    /// erase result did not carry it), and a pulled loop device, whose
    /// node is cleared or taken by another loop before the result is
    /// stored, with the size its node had then. The outcome's model and
    /// capacity are kept whenever the node no longer holds that drive.
    #[test]
    fn a_pulled_drive_is_stored_with_the_model_and_size_the_erase_saw() {
        require_root();
        let dir = TempDir::new("store-pulled-identity");
        let lo = LoopDev::new_in(&dir, 1 << 20);
        let m = Some("DL MODEL".to_string());
        // (what the erase saw, the path, model, serial and bytes stored)
        let table = [
            (
                json!({"device": "/dev/drivelab-no-such-node", "serial": "GONE-2",
                       "model": "DL MODEL", "capacity_bytes": 64 << 20}),
                "/dev/drivelab-no-such-node".to_string(),
                m.clone(),
                Some("GONE-2"),
                Some(64u64 << 20),
            ),
            // The node holds a drive of another size: not the one erased.
            (
                json!({"device": lo.dev(), "model": "DL MODEL", "capacity_bytes": 2 << 20}),
                lo.dev().to_string(),
                m.clone(),
                None,
                Some(2 << 20),
            ),
            // The same size, no serial either side: the node's drive, with
            // the model the erase saw where the kernel has none.
            (
                json!({"device": lo.dev(), "model": "DL MODEL", "capacity_bytes": 1 << 20}),
                lo.dev().to_string(),
                m.clone(),
                None,
                Some(1 << 20),
            ),
        ];
        for (outcome, path, model, serial, bytes) in table {
            let d = drives(Kind::Erase, &json!({ "drives": [outcome] }));
            assert_eq!(d.len(), 1, "{outcome}: {d:?}");
            assert_eq!(d[0].path, path, "{outcome}");
            assert_eq!(d[0].model, model, "{outcome}");
            assert_eq!(d[0].serial.as_deref(), serial, "{outcome}");
            assert_eq!(d[0].capacity_bytes, bytes, "{outcome}");
        }
    }

    #[test]
    fn verdicts_say_what_the_result_says() {
        let run =
            json!({"device_check": [{"device": "loop1", "agrees": true, "verdict": "agrees"}]});
        assert_eq!(verdict(Kind::Run, &run, 0), "device check agrees");
        let bad = json!({"device_check": [{"device": "loop1", "agrees": false, "verdict": "device moved 2x the bytes"}]});
        assert_eq!(
            verdict(Kind::Run, &bad, 0),
            "loop1: device moved 2x the bytes"
        );
        assert_eq!(
            verdict(Kind::Run, &json!({}), 130),
            "interrupted; no device check"
        );
        assert_eq!(verdict(Kind::Test, &json!({"passed": true}), 0), "passed");
        let erase = json!({"drives": [{"result": "erased"}, {"result": "erased"}]});
        assert_eq!(verdict(Kind::Erase, &erase, 0), "erased");
        let mixed = json!({"drives": [{"result": "erased"}, {"result": "failed"}]});
        assert_eq!(verdict(Kind::Erase, &mixed, 1), "erased; failed");
    }

    #[test]
    fn season_and_audit_records_have_their_verdict_bytes_and_drive() {
        let season = json!({"complete_seconds": 2.0, "drives": [{
            "identity": {"device": "/nonexistent/loop9"}, "state": "done",
            "fill": {"pass_results": [{"pass": 1, "bytes": 1000000}, {"pass": 2, "bytes": 1000000}]},
            "image": {"bytes": 500000}, "rounds": [{"bytes_written": 250000}, {"bytes_written": 250000}]}]});
        assert_eq!(verdict(Kind::Season, &season, 0), "done");
        assert_eq!(
            drivelab_season::result::SeasonReport::from_stored(&season).bytes_written() as f64,
            3e6
        );
        assert_eq!(
            crate::results::headline(Kind::Season, &season),
            "1 drive(s), 3.00M B in 2.00 s, 1.50 MB/s"
        );
        assert_eq!(
            super::drives(Kind::Season, &season)[0].path,
            "/nonexistent/loop9"
        );
        let audit = json!({"pass": false, "replay": {"target": "/nonexistent/loop8",
            "errors": 3, "bytes_read": 4096, "bytes_written": 8192,
            "duration_s": 1.5, "score": {"iops": 200.0}}});
        assert_eq!(verdict(Kind::Audit, &audit, 1), "fail; 3 I/O errors");
        assert_eq!(
            crate::results::headline(Kind::Audit, &audit),
            "200 IOPS, 12.3k B over 1.50 s, 3 errors"
        );
        assert_eq!(
            super::drives(Kind::Audit, &audit)[0].path,
            "/nonexistent/loop8"
        );
    }

    /// A claim of `device` (a kernel name) at `canonical`.
    fn claim(device: Option<&str>, canonical: &str) -> drivelab_device::claim::ClaimRecord {
        use drivelab_device::claim::{ClaimRecord, ConsentRecord, Hold, TargetKind};
        ClaimRecord {
            path: canonical.into(),
            canonical: canonical.into(),
            kind: TargetKind::Block,
            device: device.map(String::from),
            serial: None,
            size: 1 << 20,
            logical_block: 512,
            findings: Vec::new(),
            overridden: Vec::new(),
            consent: ConsentRecord {
                force: false,
                confirmed_by: None,
            },
            hold: Hold::ExclusiveOpen,
            created: false,
            direct: true,
        }
    }

    #[test]
    fn each_kind_names_its_drives_from_its_struct_in_order_once() {
        use drivelab_erase::outcome::{Outcome, Summary};
        use drivelab_replay::session::{AuditReport, SessionReport};
        use drivelab_report::{DeviceCheck, RunReport};
        use drivelab_steps::result::TestReport;
        fn check(device: &str) -> DeviceCheck {
            DeviceCheck {
                device: device.into(),
                ..DeviceCheck::default()
            }
        }
        fn erased(device: &str) -> Outcome {
            Outcome {
                device: device.into(),
                ..Outcome::default()
            }
        }
        fn json(r: &impl serde::Serialize) -> serde_json::Value {
            serde_json::to_value(r).expect("serialise")
        }
        let run = RunReport {
            device_check: vec![check("nonexistent-dl-a"), check("nonexistent-dl-a")],
            claims: vec![
                claim(Some("nonexistent-dl-b"), "/nonexistent/b"),
                claim(None, "/nonexistent/c"),
            ],
            ..RunReport::default()
        };
        let test = TestReport {
            target: "/nonexistent/t".into(),
            claim: Some(claim(Some("nonexistent-dl-t"), "/nonexistent/t")),
            ..TestReport::default()
        };
        let erase = Summary {
            drives: vec![
                erased("/nonexistent/e"),
                erased(""),
                erased("/nonexistent/e"),
                erased("/nonexistent/f"),
            ],
            ..Summary::default()
        };
        let replay = SessionReport {
            target: "/nonexistent/r".into(),
            claim: Some(claim(None, "/nonexistent/r")),
            ..SessionReport::default()
        };
        let audit = AuditReport {
            replay: SessionReport {
                target: "/nonexistent/a".into(),
                ..SessionReport::default()
            },
            ..AuditReport::default()
        };
        let cases: [(Kind, serde_json::Value, &[&str]); 5] = [
            (
                Kind::Run,
                json(&run),
                &["nonexistent-dl-a", "nonexistent-dl-b", "/nonexistent/c"],
            ),
            (
                Kind::Test,
                json(&test),
                &["nonexistent-dl-t", "/nonexistent/t"],
            ),
            (
                Kind::Erase,
                json(&erase),
                &["/nonexistent/e", "/nonexistent/f"],
            ),
            (Kind::Replay, json(&replay), &["/nonexistent/r"]),
            (Kind::Audit, json(&audit), &["/nonexistent/a"]),
        ];
        for (kind, v, want) in cases {
            let got: Vec<String> = super::drives(kind, &v)
                .into_iter()
                .map(|d| d.path)
                .collect();
            assert_eq!(got, want, "{kind}");
        }
    }
}
