//! `drivelab health DEV...`: each drive's own view of its health (ATA SMART,
//! SCSI log pages, NVMe SMART / Health and error logs) and the capacity
//! hidden from the host (HPA, AMA, DCO; NVMe namespaces and unallocated
//! capacity). Reads only: no claim, no consent.
//!
//! The work is `drivelab_device::health::health`, one call per drive. A
//! drive that cannot be asked is reported (one line, and in JSON its
//! decoded sense / registers / status) and the others still are; the exit
//! status is then 1.
//!
//! With `--self-test short|extended` it starts the drives' own self-tests
//! instead (that changes the drives' state: `--yes`, and the same safety
//! check as every writer, `--force` to override), follows them to the end
//! (progress on stderr), aborts them on Ctrl-C, and prints the newest entry
//! of each drive's self-test log.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use drivelab_device::health;
use drivelab_device::health::selftest::{self, Kind};
use drivelab_device::passthrough::{OpError, WriteConsent};

use crate::error::usage;
use crate::output::OutputArgs;

/// Arguments of `drivelab health`.
#[derive(Args, Debug)]
pub struct HealthArgs {
    /// The drives: /dev/sdX, /dev/sgN, /dev/nvmeXnY or /dev/nvmeX.
    #[arg(value_name = "DEV", required = true)]
    pub devices: Vec<PathBuf>,
    /// Timeout of each command in milliseconds (default 60000).
    #[arg(long = "timeout-ms", value_name = "MS")]
    pub timeout_ms: Option<u32>,
    /// Start the drive's own self-test (short: minutes; extended: a full
    /// surface scan, hours) and follow it to the end; Ctrl-C aborts it.
    #[arg(long = "self-test", value_enum, value_name = "KIND")]
    pub self_test: Option<SelfTestKind>,
    /// Confirm starting a self-test (it changes the drive's state).
    #[arg(long, requires = "self_test")]
    pub yes: bool,
    /// Start it even if the drive is partitioned or holds a filesystem
    /// signature (a read-only or system drive, or one whose bytes are in
    /// use, is still refused).
    #[arg(long, requires = "self_test")]
    pub force: bool,
    /// Start the self-test and return at once.
    #[arg(long = "no-wait", requires = "self_test")]
    pub no_wait: bool,
    /// How often to ask for progress, milliseconds (default 5000).
    #[arg(long = "poll-ms", value_name = "MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(100..=600_000), requires = "self_test")]
    pub poll_ms: u64,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `--self-test` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SelfTestKind {
    /// The short test.
    Short,
    /// The extended test.
    Extended,
}

/// Run the subcommand.
pub fn run(a: HealthArgs) -> anyhow::Result<u8> {
    // Every path is checked before any drive is asked.
    for d in &a.devices {
        crate::error::device_node(d)?;
    }
    a.out.check()?;
    if let Some(k) = a.self_test {
        return self_test(&a, k);
    }
    let mut docs: Vec<Value> = Vec::new();
    let mut text = String::new();
    let mut failed = 0usize;
    for dev in &a.devices {
        match health::health(dev, a.timeout_ms) {
            Ok(h) => {
                if a.out.json() {
                    docs.push(serde_json::to_value(&h)?);
                } else {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&h.to_string());
                }
            }
            Err(OpError::Failed(f)) => {
                failed += 1;
                let (line, doc) = failure_doc(dev, &f)?;
                if a.out.json() {
                    docs.push(doc);
                } else {
                    eprintln!("drivelab: error: {}", line.replace('\n', " "));
                }
            }
            Err(e) if e.is_input() => return Err(usage(e.to_string())),
            Err(e) => return Err(anyhow::Error::new(e)),
        }
    }
    if a.out.json() {
        let doc = json!({ "devices": docs, "failed": failed });
        a.out
            .emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else if !text.is_empty() {
        a.out.emit(&text)?;
    }
    Ok(u8::from(failed > 0))
}

/// A device's failure as one line naming it, and its JSON document.
fn failure_doc(
    dev: &std::path::Path,
    f: &drivelab_device::passthrough::Failure,
) -> anyhow::Result<(String, Value)> {
    let name = dev.display().to_string();
    let line = if f.line.contains(&name) {
        f.line.clone()
    } else {
        format!("{name}: {}", f.line)
    };
    let mut doc = json!({ "device": name, "error": line });
    if let (Some(d), Value::Object(e)) = (doc.as_object_mut(), serde_json::to_value(f)?) {
        d.extend(e);
    }
    Ok((line, doc))
}

/// `--self-test`: open (claim) every drive first, so a refusal writes
/// nothing; then start, follow, and report each.
fn self_test(a: &HealthArgs, k: SelfTestKind) -> anyhow::Result<u8> {
    let kind = match k {
        SelfTestKind::Short => Kind::Short,
        SelfTestKind::Extended => Kind::Extended,
    };
    let consent = WriteConsent {
        yes: a.yes,
        force: a.force,
    };
    let mut sessions = Vec::new();
    for dev in &a.devices {
        match selftest::open(dev, kind, &consent) {
            Ok(s) => sessions.push(s),
            Err(OpError::Failed(f)) => return Err(anyhow::anyhow!(failure_doc(dev, &f)?.0)),
            Err(e) if e.is_input() => return Err(usage(e.to_string())),
            Err(e) => return Err(anyhow::Error::new(e)),
        }
    }
    let stop = crate::signal::stop_flag();
    let mut docs: Vec<Value> = Vec::new();
    let mut text = String::new();
    let mut failed = 0usize;
    let report_failure = |dev: &std::path::Path,
                          f: &drivelab_device::passthrough::Failure,
                          docs: &mut Vec<Value>|
     -> anyhow::Result<()> {
        let (line, doc) = failure_doc(dev, f)?;
        if a.out.json() {
            docs.push(doc);
        } else {
            eprintln!("drivelab: error: {}", line.replace('\n', " "));
        }
        Ok(())
    };
    // Start every test; a drive that refuses is reported, the others run.
    let mut running = Vec::new();
    for s in sessions {
        match s.start() {
            Ok(()) => running.push(s),
            Err(OpError::Failed(f)) => {
                failed += 1;
                report_failure(s.path(), &f, &mut docs)?;
            }
            Err(e) => return Err(anyhow::Error::new(e)),
        }
    }
    // Follow them until each is done, Ctrl-C, or at once with --no-wait.
    let mut state: Vec<(bool, bool, Option<u8>)> = vec![(!a.no_wait, false, None); running.len()];
    loop {
        let mut any = false;
        for (s, st) in running.iter().zip(state.iter_mut()) {
            if !st.0 {
                continue;
            }
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Err(e) = s.abort() {
                    eprintln!("drivelab: error: {}: abort failed: {e}", s.path().display());
                }
                *st = (false, true, st.2);
                continue;
            }
            match s.poll() {
                Ok(p) if p.running => {
                    any = true;
                    if p.percent.is_some() && p.percent != st.2 {
                        eprintln!(
                            "drivelab: {}: self-test {}% done",
                            s.path().display(),
                            p.percent.unwrap_or(0)
                        );
                        st.2 = p.percent;
                    }
                }
                Ok(_) => st.0 = false,
                Err(e) => {
                    eprintln!("drivelab: error: {}: progress: {e}", s.path().display());
                    st.0 = false;
                }
            }
        }
        if !any {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(a.poll_ms));
    }
    for (s, st) in running.iter().zip(&state) {
        match s.outcome(st.1, a.no_wait) {
            Ok(o) => {
                let bad = st.1 || (!a.no_wait && o.result.as_ref().is_some_and(|r| r.result != 0));
                failed += usize::from(bad);
                if a.out.json() {
                    docs.push(serde_json::to_value(&o)?);
                } else {
                    text.push_str(&o.to_string());
                }
            }
            Err(OpError::Failed(f)) => {
                failed += 1;
                report_failure(s.path(), &f, &mut docs)?;
            }
            Err(e) => return Err(anyhow::Error::new(e)),
        }
    }
    if a.out.json() {
        let doc = json!({ "self_test": docs, "failed": failed });
        a.out
            .emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else if !text.is_empty() {
        a.out.emit(&text)?;
    }
    Ok(u8::from(failed > 0))
}
