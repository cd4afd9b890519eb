//! `drivelab erase`: write or erase whole drives, many at once, verified and
//! certified; and `drivelab erase verify-cert FILE`.
//!
//! This module is the command line around `drivelab_erase`: it validates
//! what was typed, refuses unsafe targets (exit 2, nothing written), asks
//! for the confirmation erasing needs (`--yes` plus each drive's serial, or
//! its path when it has none), prints the plan for `--dry-run`, shows live
//! progress, and ends with the per-drive table of the thesis (method,
//! bytes, time, MB/s) plus the complete time and the aggregate throughput.
//! Exit status: 0 when every drive was erased cleanly, 1 when any drive
//! failed, was stopped, or was erased with exceptions, 2 for refusals.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use drivelab_device::blockdev::BlockDevice;
use drivelab_device::safety;
use drivelab_erase::sched::{Phase, Progress};
use drivelab_erase::work::{self, Drive, Options, Outcome, Strategy, VerifyMode};
use drivelab_erase::{cert, Method};
use drivelab_patterns::Pattern;

use crate::cmd_devices::human_size;
use crate::error::usage;
use crate::output::OutputArgs;

/// `--strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// Every drive at once, one thread each.
    Parallel,
    /// One drive after another.
    Sequential,
    /// One command per drive in turn.
    RoundRobin,
}

/// `--verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerifyArg {
    /// No read-back.
    None,
    /// NIST SP 800-88 sample: >= 1000 subsections, 2 regions of >= 5% each, first and last LBA.
    Sample,
    /// Read every block.
    Full,
}

/// `--on-error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnErrorArg {
    /// Retry, then skip the failing blocks (listed in the certificate).
    RetrySkip,
    /// Retry, then fail the drive.
    Abort,
}

/// `drivelab erase verify-cert`.
#[derive(Subcommand, Debug)]
pub enum EraseSub {
    /// Check a certificate's signature: exit 0 when valid, 1 when not.
    VerifyCert {
        /// The certificate (.json).
        file: PathBuf,
        /// Trusted Ed25519 public key (64 hex digits, or a file holding
        /// them); default: this user's key, when there is one.
        #[arg(long = "public-key", value_name = "HEX|FILE")]
        public_key: Option<String>,
        #[command(flatten)]
        out: OutputArgs,
    },
}

/// Arguments of `drivelab erase`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EraseArgs {
    #[command(subcommand)]
    pub sub: Option<EraseSub>,
    /// Whole drives to erase (/dev/sdX, /dev/nvmeXnY, /dev/loopN ...).
    #[arg(value_name = "DEV")]
    pub devices: Vec<PathBuf>,
    /// auto (default: the fastest method that writes the pattern), zeroout,
    /// write-same, sct-write-same, nvme-write-zeroes, nvme-format,
    /// nvme-sanitize, ata-sanitize, discard or stream.
    #[arg(long, default_value = "auto")]
    pub method: String,
    /// Pattern to leave on every block (DMM names, fixed:0xHH.., file:PATH,
    /// random, stamped).
    #[arg(long, default_value = "allzeros")]
    pub pattern: String,
    /// Passes over each drive (the last pass's pattern is verified).
    #[arg(long, default_value_t = 1)]
    pub passes: u32,
    /// How the drives share the host.
    #[arg(long, value_enum, default_value_t = StrategyArg::Parallel)]
    pub strategy: StrategyArg,
    /// Read-back after the erase.
    #[arg(long, value_enum, default_value_t = VerifyArg::Sample)]
    pub verify: VerifyArg,
    /// What a range that keeps failing does.
    #[arg(long = "on-error", value_enum, default_value_t = OnErrorArg::RetrySkip)]
    pub on_error: OnErrorArg,
    /// Retries of a failing command before --on-error applies.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// Continue an interrupted erase from its journal (in the certificate dir).
    #[arg(long)]
    pub resume: bool,
    /// Cryptographic erase for nvme-format, nvme-sanitize and ata-sanitize.
    #[arg(long)]
    pub crypto: bool,
    /// Discard the whole drive before overwriting it.
    #[arg(long = "discard-first")]
    pub discard_first: bool,
    /// Aggregate bandwidth cap over all drives for data-carrying methods,
    /// bytes per second (k/m/g = 1024-based; e.g. 300m or 300m/s).
    #[arg(long = "bus-limit", value_name = "BYTES/s")]
    pub bus_limit: Option<String>,
    /// Fixed stream transfer length (default: tuned while running).
    #[arg(long = "transfer-length", value_name = "BYTES")]
    pub transfer_length: Option<String>,
    /// Fixed stream queue depth (default: tuned while running).
    #[arg(long = "queue-depth")]
    pub queue_depth: Option<u32>,
    /// Where certificates and journals go (default: the current directory).
    #[arg(long = "certificate-dir", value_name = "DIR", default_value = ".")]
    pub certificate_dir: PathBuf,
    /// Write even to a drive that is mounted, partitioned, holds a
    /// signature or is in use (never to the running system's).
    #[arg(long)]
    pub force: bool,
    /// Confirm that the data on the drives may be destroyed.
    #[arg(long)]
    pub yes: bool,
    /// The serial of a drive to erase (its path when it has no serial);
    /// once per drive.
    #[arg(long = "confirm-serial", value_name = "SERIAL")]
    pub confirm_serial: Vec<String>,
    /// Print the plan (methods, estimated times) and touch nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Run the subcommand.
pub fn run(a: EraseArgs) -> anyhow::Result<u8> {
    if let Some(EraseSub::VerifyCert {
        file,
        public_key,
        out,
    }) = &a.sub
    {
        return verify_cert(file, public_key.as_deref(), out);
    }
    erase(a)
}

fn verify_cert(file: &Path, public_key: Option<&str>, out: &OutputArgs) -> anyhow::Result<u8> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| usage(format!("cannot read {}: {e}", file.display())))?;
    let trusted = match public_key {
        Some(s) => {
            let hex = if Path::new(s).exists() {
                std::fs::read_to_string(s)
                    .map_err(|e| usage(format!("cannot read public key {s}: {e}")))?
            } else {
                s.to_string()
            };
            Some(cert::parse_public_key(&hex).ok_or_else(|| {
                usage(format!(
                    "--public-key {s}: not an Ed25519 public key (64 hex digits)"
                ))
            })?)
        }
        None => cert::config_dir()
            .ok()
            .and_then(|d| cert::local_public_key(&d)),
    };
    match cert::verify_text(&text, trusted.as_ref()) {
        Ok(v) => {
            let c = &v.certificate;
            let who = match (public_key, v.trusted_key) {
                (Some(_), _) => "the given key",
                (None, Some(true)) => "this user's key",
                _ => "the key embedded in it (no trusted key to compare with)",
            };
            if out.json() {
                out.emit(&format!(
                    "{}\n",
                    json!({"valid": true, "file": file, "result": c.result,
                           "device": c.drive.path, "serial": c.drive.serial,
                           "public_key": v.public_key, "signed_by": who})
                ))?;
            } else {
                out.emit(&format!(
                    "{}: valid signature ({}); {} {} serial {}: {}, {} by {}, verification {}\n",
                    file.display(),
                    who,
                    c.drive.path,
                    c.drive.model.as_deref().unwrap_or("-"),
                    c.drive.serial.as_deref().unwrap_or("-"),
                    c.result,
                    c.timing.end,
                    c.erase.method,
                    c.verification.result
                ))?;
            }
            Ok(0)
        }
        Err(why) => Err(anyhow::anyhow!(
            "{}: INVALID certificate: {why}",
            file.display()
        )),
    }
}

fn parse_bytes(what: &str, s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    drivelab_workload::parse_bytes(what, t).map_err(|e| usage(e.to_string()))
}

fn options(a: &EraseArgs) -> anyhow::Result<Options> {
    let method: Method = a
        .method
        .parse()
        .map_err(|e: drivelab_erase::EraseError| usage(e.to_string()))?;
    let pattern: Pattern = a
        .pattern
        .parse()
        .map_err(|e: drivelab_patterns::PatternError| usage(format!("--pattern: {e}")))?;
    if a.passes == 0 {
        return Err(usage("--passes must be at least 1"));
    }
    let bus_limit = match &a.bus_limit {
        Some(s) => {
            let b = parse_bytes("--bus-limit", s)?;
            if b == 0 {
                return Err(usage("--bus-limit must be more than 0 bytes/s"));
            }
            Some(b)
        }
        None => None,
    };
    let transfer = match &a.transfer_length {
        Some(s) => {
            let b = parse_bytes("--transfer-length", s)?;
            if !(512..=64 << 20).contains(&b) {
                return Err(usage("--transfer-length must be 512 bytes to 64m"));
            }
            Some(b as u32)
        }
        None => None,
    };
    if a.queue_depth == Some(0) || a.queue_depth.is_some_and(|q| q > 64) {
        return Err(usage("--queue-depth must be 1 to 64"));
    }
    let key_dir = cert::config_dir().map_err(|e| usage(e.to_string()))?;
    Ok(Options {
        method,
        pattern,
        passes: a.passes,
        verify: match a.verify {
            VerifyArg::None => VerifyMode::None,
            VerifyArg::Sample => VerifyMode::Sample,
            VerifyArg::Full => VerifyMode::Full,
        },
        skip_errors: a.on_error == OnErrorArg::RetrySkip,
        retries: a.retries,
        resume: a.resume,
        crypto: a.crypto,
        discard_first: a.discard_first,
        certificate_dir: a.certificate_dir.clone(),
        key_dir,
        transfer,
        queue_depth: a.queue_depth,
        bus_limit,
        strategy: match a.strategy {
            StrategyArg::Parallel => Strategy::Parallel,
            StrategyArg::Sequential => Strategy::Sequential,
            StrategyArg::RoundRobin => Strategy::RoundRobin,
        },
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// Open every device and refuse unsafe ones (exit 2, before anything).
fn devices(a: &EraseArgs) -> anyhow::Result<Vec<BlockDevice>> {
    if a.devices.is_empty() {
        return Err(usage(
            "no drives given: name the whole drives to erase, e.g. drivelab erase /dev/sdb --yes --confirm-serial SERIAL",
        ));
    }
    let mut devs: Vec<BlockDevice> = Vec::new();
    let mut refusals = Vec::new();
    for p in &a.devices {
        let d = BlockDevice::from_path(p).map_err(|e| usage(format!("{}: {e}", p.display())))?;
        if devs
            .iter()
            .any(|o| o.major == d.major && o.minor == d.minor)
        {
            return Err(usage(format!("{} is named twice", p.display())));
        }
        if d.size.0 == 0 {
            return Err(usage(format!(
                "{}: size 0 (an unattached loop device or empty slot?)",
                p.display()
            )));
        }
        if d.partition && !a.force {
            refusals.push(format!(
                "refusing to erase {}: it is a partition, not a whole drive; name the whole drive, or pass --force",
                p.display()
            ));
        }
        if let Some(r) = safety::assess(&d).refusal(a.force) {
            refusals.push(r.to_string());
        }
        devs.push(d);
    }
    if !refusals.is_empty() {
        return Err(usage(refusals.join("; ")));
    }
    Ok(devs)
}

/// `--yes` plus the serial (or path) of every drive, typed or given.
fn confirm(a: &EraseArgs, drives: &[Drive]) -> anyhow::Result<()> {
    let names: Vec<String> = drives
        .iter()
        .map(|d| d.dev.path.display().to_string())
        .collect();
    if !a.yes {
        return Err(usage(format!(
            "erasing destroys all data on {}: add --yes and confirm each drive with --confirm-serial SERIAL (its path when it has no serial)",
            names.join(", ")
        )));
    }
    let mut used = vec![false; a.confirm_serial.len()];
    let interactive = std::io::stdin().is_terminal();
    for d in drives {
        let path = d.dev.path.display().to_string();
        let token = d.serial().map(String::from).unwrap_or_else(|| path.clone());
        let hit = a.confirm_serial.iter().position(|s| {
            s.trim() == token || (d.serial().is_none() && Path::new(s.trim()) == d.dev.path)
        });
        match hit {
            Some(i) => used[i] = true,
            None if interactive => {
                eprint!(
                    "Erase {path} ({} {}, {}): type its {} to confirm: ",
                    d.dev.model.as_deref().unwrap_or("?"),
                    d.serial().unwrap_or("no serial"),
                    human_size(d.size),
                    if d.serial().is_some() { "serial" } else { "path" }
                );
                let _ = std::io::stderr().flush();
                let mut line = String::new();
                std::io::stdin().lock().read_line(&mut line)?;
                if line.trim() != token {
                    return Err(usage(format!(
                        "{path}: confirmation did not match ({:?}); nothing was written",
                        line.trim()
                    )));
                }
            }
            None => {
                return Err(usage(format!(
                    "{path} is not confirmed: pass --confirm-serial {token} (the drive's {}); nothing was written",
                    if d.serial().is_some() { "serial" } else { "path, as it has no serial" }
                )))
            }
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(usage(format!(
            "--confirm-serial {} matches none of the drives given; check for a typo; nothing was written",
            a.confirm_serial[i]
        )));
    }
    Ok(())
}

fn secs(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.0}h{:02.0}m", (s / 3600.0).floor(), (s % 3600.0) / 60.0)
    } else if s >= 60.0 {
        format!("{:.0}m{:02.0}s", (s / 60.0).floor(), s % 60.0)
    } else {
        format!("{s:.2}s")
    }
}

fn dry_run(a: &EraseArgs, drives: &[Drive], opts: &Options) -> anyhow::Result<u8> {
    let n = drives.len();
    let est: Vec<(f64, f64, String)> = drives.iter().map(|d| work::estimate(d, opts, n)).collect();
    let per: Vec<f64> = est.iter().map(|e| e.0 + e.1).collect();
    let total = match opts.strategy {
        Strategy::Parallel => per.iter().cloned().fold(0.0, f64::max),
        _ => per.iter().sum(),
    };
    if a.out.json() {
        let rows: Vec<_> = drives
            .iter()
            .zip(&est)
            .map(|(d, e)| {
                json!({"device": d.dev.path, "model": d.dev.model, "serial": d.serial(),
                       "size": d.size, "logical_sector": d.lbs, "method": d.choice.method.name(),
                       "reason": d.choice.reason, "zeroout_offloaded": d.zeroout_offloaded(),
                       "estimated_erase_seconds": e.0, "estimated_verify_seconds": e.1,
                       "estimate_assumes": e.2, "notes": d.notes})
            })
            .collect();
        a.out.emit(&format!(
            "{}\n",
            serde_json::to_string_pretty(
                &json!({"dry_run": true, "strategy": opts.strategy.name(),
                "pattern": opts.pattern.to_string(), "verify": opts.verify.name(),
                "drives": rows, "estimated_complete_seconds": total})
            )?
        ))?;
        return Ok(0);
    }
    let mut s = format!(
        "dry run: nothing will be written. Plan ({} strategy, pattern {}, {} pass(es), verify {}):\n",
        opts.strategy.name(),
        opts.pattern,
        opts.passes,
        opts.verify.name()
    );
    for (d, e) in drives.iter().zip(&est) {
        s.push_str(&format!(
            "  {}  {} serial {}  {}, {} B sectors\n    method {}: {}\n    estimate: erase {}, verify {} ({})\n",
            d.dev.path.display(),
            d.dev.model.as_deref().unwrap_or("-"),
            d.serial().unwrap_or("(none: confirm by path)"),
            human_size(d.size),
            d.lbs,
            d.choice.method,
            d.choice.reason,
            secs(e.0),
            secs(e.1),
            e.2
        ));
    }
    s.push_str(&format!("estimated complete time: {}\n", secs(total)));
    a.out.emit(&s)?;
    Ok(0)
}

fn bar(frac: f64) -> String {
    let w = 24usize;
    let k = ((frac.clamp(0.0, 1.0)) * w as f64) as usize;
    format!("[{}{}]", "#".repeat(k), ".".repeat(w - k))
}

fn progress_line(d: &Drive, p: &Progress, started: Instant) -> String {
    let done = p.done.load(Ordering::Relaxed);
    let total = p.total.load(Ordering::Relaxed).max(1);
    let frac = done as f64 / total as f64;
    let el = started.elapsed().as_secs_f64().max(1e-3);
    let mut s = format!(
        "{:<14} {:<17} {:<9} {} {:5.1}% {:>10}",
        d.dev.path.display(),
        d.choice.method.name(),
        p.phase().word(),
        bar(frac),
        frac * 100.0,
        human_size(done)
    );
    if p.phase() == Phase::Erasing && d.choice.method == Method::Stream {
        s.push_str(&format!(
            "  {:.0} MB/s  xfer {}  qd {}",
            done as f64 / el / 1e6,
            human_size(p.transfer.load(Ordering::Relaxed)),
            p.depth.load(Ordering::Relaxed)
        ));
    }
    s
}

/// Live progress until `done` is set: redrawn lines on a terminal, a plain
/// line per drive every 5 s otherwise.
fn display(drives: &[Drive], prog: &[Arc<Progress>], done: &AtomicBool, tty: bool) {
    let started = Instant::now();
    let mut drawn = 0usize;
    let mut last_plain = Instant::now();
    let mut last_phase: Vec<Phase> = prog.iter().map(|p| p.phase()).collect();
    let mut err = std::io::stderr();
    loop {
        let finished = done.load(Ordering::Relaxed);
        if tty {
            let mut s = String::new();
            if drawn > 0 {
                s.push_str(&format!("\x1b[{drawn}A"));
            }
            for (d, p) in drives.iter().zip(prog) {
                s.push_str("\x1b[2K");
                s.push_str(&progress_line(d, p, started));
                s.push('\n');
            }
            drawn = drives.len();
            let _ = err.write_all(s.as_bytes());
            let _ = err.flush();
        } else {
            let periodic = last_plain.elapsed() >= Duration::from_secs(5);
            for (i, (d, p)) in drives.iter().zip(prog).enumerate() {
                let ph = p.phase();
                if ph != last_phase[i]
                    || (periodic && matches!(ph, Phase::Erasing | Phase::Verifying))
                {
                    let _ = writeln!(err, "{}", progress_line(d, p, started));
                    last_phase[i] = ph;
                }
            }
            if periodic {
                last_plain = Instant::now();
            }
        }
        if finished {
            break;
        }
        std::thread::sleep(Duration::from_millis(if tty { 250 } else { 200 }));
    }
}

fn report(a: &EraseArgs, opts: &Options, outs: &[Outcome], complete: f64) -> anyhow::Result<()> {
    let total_bytes: u64 = outs.iter().map(|o| o.bytes).sum();
    let agg = if complete > 0.0 {
        total_bytes as f64 / complete / 1e6
    } else {
        0.0
    };
    if a.out.json() {
        let rows: Vec<_> = outs
            .iter()
            .map(|o| {
                json!({"device": o.device, "serial": o.serial, "method": o.method,
                       "method_reason": o.reason, "result": o.result, "error": o.error,
                       "bytes": o.bytes, "resumed_bytes": o.resumed_bytes,
                       "erase_seconds": o.erase_seconds, "verify_seconds": o.verify_seconds,
                       "mb_per_s": o.mb_per_s(), "verification": o.verification,
                       "offloaded": o.offloaded,
                       "stream_transfer_bytes": o.tuning.map(|t| t.0),
                       "stream_queue_depth": o.tuning.map(|t| t.1),
                       "stream_tuning_changes": o.tuning.map(|t| t.2),
                       "stream_io_seconds": o.stream_io_seconds,
                       "exceptions": o.exceptions, "certificate": o.certificate,
                       "html": o.html, "journal": o.journal})
            })
            .collect();
        a.out.emit(&format!(
            "{}\n",
            serde_json::to_string_pretty(&json!({"strategy": opts.strategy.name(),
                "pattern": opts.pattern.to_string(), "verify": opts.verify.name(),
                "bus_limit_bytes_per_s": opts.bus_limit, "drives": rows,
                "complete_seconds": complete, "total_bytes": total_bytes,
                "aggregate_mb_per_s": agg}))?
        ))?;
        return Ok(());
    }
    let mut s = format!(
        "\n{:<14} {:<16} {:<17} {:>12} {:>9} {:>9} {:<24} {}\n",
        "DEVICE", "SERIAL", "METHOD", "BYTES", "TIME", "MB/s", "VERIFY", "RESULT"
    );
    for o in outs {
        let mut method = o.method.clone();
        if o.offloaded == Some(true) {
            method.push_str(" (offl.)");
        } else if o.offloaded == Some(false) {
            method.push_str(" (no offl.)");
        }
        s.push_str(&format!(
            "{:<14} {:<16} {:<17} {:>12} {:>9} {:>9.1} {:<24} {}\n",
            o.device,
            o.serial.as_deref().unwrap_or("-"),
            method,
            o.bytes,
            secs(o.erase_seconds),
            o.mb_per_s(),
            o.verification,
            o.result
        ));
    }
    s.push_str(&format!(
        "complete time: {} ({} strategy); aggregate throughput: {:.1} MB/s ({} bytes)\n",
        secs(complete),
        opts.strategy.name(),
        agg,
        total_bytes
    ));
    for o in outs {
        if let Some((l, q, c)) = o.tuning {
            s.push_str(&format!(
                "{}: stream ended at transfer length {} and queue depth {} ({} tuning changes)\n",
                o.device,
                human_size(l),
                q,
                c
            ));
        }
        if let Some(e) = &o.error {
            s.push_str(&format!("{}: {e}\n", o.device));
        }
        if o.exceptions > 0 {
            s.push_str(&format!(
                "{}: {} range(s) not erased or not readable: see the certificate\n",
                o.device, o.exceptions
            ));
        }
        if let Some(c) = &o.certificate {
            s.push_str(&format!("{}: certificate {}\n", o.device, c.display()));
        }
    }
    a.out.emit(&s)
}

fn erase(a: EraseArgs) -> anyhow::Result<u8> {
    let opts = options(&a)?;
    let devs = devices(&a)?;
    let mut drives = Vec::with_capacity(devs.len());
    for d in devs {
        drives.push(work::plan_drive(d, &opts).map_err(|e| usage(e.to_string()))?);
    }
    if a.dry_run {
        return dry_run(&a, &drives, &opts);
    }
    confirm(&a, &drives)?;
    if !a.out.json() {
        for d in &drives {
            eprintln!(
                "{}: method {}: {}",
                d.dev.path.display(),
                d.choice.method,
                d.choice.reason
            );
        }
    }
    // A second Ctrl-C while stopping kills the process the usual way.
    let stop = crate::signal::stop_flag();
    let prog: Vec<Arc<Progress>> = drives
        .iter()
        .map(|_| Arc::new(Progress::default()))
        .collect();
    let finished = AtomicBool::new(false);
    let tty = std::io::stderr().is_terminal() && !a.out.json();
    let t0 = Instant::now();
    let outs = std::thread::scope(|s| {
        let show = s.spawn(|| {
            if !a.out.json() {
                display(&drives, &prog, &finished, tty)
            }
        });
        let r = work::run_all(&drives, &opts, stop, &prog);
        finished.store(true, Ordering::Relaxed);
        let _ = show.join();
        r
    })
    .context("erase")?;
    let complete = t0.elapsed().as_secs_f64();
    report(&a, &opts, &outs, complete)?;
    Ok(if outs.iter().all(|o| o.result == "erased") {
        0
    } else {
        1
    })
}
