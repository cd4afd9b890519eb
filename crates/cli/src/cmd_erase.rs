//! `drivelab erase`: write or erase whole drives, many at once, verified and
//! certified; `drivelab erase verify-cert FILE` (JSON or PDF), `render`
//! and `report` (in [`crate::cmd_erase_pdf`]).
//!
//! This module is the command line around `drivelab_erase`: it parses what
//! was typed into a [`Request`], calls [`drivelab_erase::erase`] (which
//! plans, refuses unsafe or busy drives, checks the confirmation, erases,
//! verifies and certifies), and prints: the plan for `--dry-run`, live
//! progress, and the per-drive table of the thesis (method, bytes, time,
//! MB/s) plus the complete time and the aggregate throughput. It asks for a
//! drive's serial on a terminal when `--confirm-serial` lacks it.
//! Exit status: 0 when every drive did everything asked without exceptions
//! ("erased", or "overwritten, not verified" under `--verify none`), 1 when
//! any drive failed, was stopped, or has exceptions, 2 for refusals (bad
//! input, unsafe or busy drives, no confirmation), before anything is
//! written. `verify-cert`: 0 valid, 1 not valid (changed, or signed by a key
//! that is not trusted), 2 bad input.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use drivelab_erase::cert::{self, TrustSources};
use drivelab_erase::plan::estimate::DryRun;
use drivelab_erase::sched::{Phase, Progress};
use drivelab_erase::{
    Consent, Drive, EraseError, Frontend, Method, Options, Report, Request, StallLimit, Strategy,
    Summary, VerifyMode,
};
use drivelab_patterns::Pattern;
use drivelab_report::text::bw_pair;

use crate::cmd_devices::human_size;
use crate::cmd_erase_pdf::{CertFormat, PaperArg, TrustArgs};
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

/// `drivelab erase verify-cert`, `render` and `report`.
#[derive(Subcommand, Debug)]
pub enum EraseSub {
    /// Check a certificate, JSON or PDF: exit 0 when it is intact and
    /// signed by a trusted key (and a PDF's pages show its attached
    /// record), 1 when it was changed or its signer is not trusted.
    VerifyCert {
        /// The certificate (.json, or a .pdf drivelab made).
        file: PathBuf,
        #[command(flatten)]
        trust: TrustArgs,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Render a signed JSON certificate as PDF, the JSON attached; a
    /// certificate that does not verify is refused (exit 2).
    Render {
        /// The certificate (.json).
        file: PathBuf,
        /// The PDF to write.
        #[arg(long, value_name = "FILE")]
        pdf: PathBuf,
        /// Paper size.
        #[arg(long, value_enum, default_value_t = PaperArg::A4)]
        paper: PaperArg,
        #[command(flatten)]
        trust: TrustArgs,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// One report of many certificates: a line per drive with its
    /// certificate's SHA-256, and the hosts' DMI identity; as PDF and/or
    /// CSV. Every certificate must verify (else exit 2, nothing written).
    Report {
        /// The certificates (.json).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The PDF report to write.
        #[arg(long, value_name = "FILE")]
        pdf: Option<PathBuf>,
        /// The CSV report to write.
        #[arg(long, value_name = "FILE")]
        csv: Option<PathBuf>,
        /// Paper size of the PDF.
        #[arg(long, value_enum, default_value_t = PaperArg::A4)]
        paper: PaperArg,
        #[command(flatten)]
        trust: TrustArgs,
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
    /// nvme-sanitize, ata-sanitize, scsi-sanitize, ata-security-erase,
    /// ata-security-erase-enhanced, discard or stream.
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
    /// Cryptographic erase for nvme-format, nvme-sanitize, ata-sanitize and
    /// scsi-sanitize.
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
    /// Give up on a sanitize whose progress has not moved for this many
    /// seconds, or `never` (default: 4 x the drive's own estimate, at
    /// least 120 s; 30 minutes for a drive that gives none).
    #[arg(long = "stall-timeout", value_name = "SECONDS|never")]
    pub stall_timeout: Option<String>,
    /// Where certificates and journals go (default: the current directory).
    #[arg(long = "certificate-dir", value_name = "DIR", default_value = ".")]
    pub certificate_dir: PathBuf,
    /// Which certificate files to write, comma-separated: json (the signed
    /// record, always), html, pdf (the JSON attached).
    #[arg(
        long = "certificate-format",
        value_enum,
        value_delimiter = ',',
        default_value = "json,html"
    )]
    pub certificate_format: Vec<CertFormat>,
    /// Paper size of PDF certificates.
    #[arg(long, value_enum, default_value_t = PaperArg::A4)]
    pub paper: PaperArg,
    #[command(flatten)]
    pub parties: PartiesArgs,
    /// Write even to a drive that is partitioned or holds a signature
    /// (never to one whose bytes are in use: mounted, swap, held, under a
    /// mounted or held device, or the running system's).
    #[arg(long)]
    pub force: bool,
    /// Confirm that the data on the drives may be destroyed.
    #[arg(long)]
    pub yes: bool,
    /// The serial of a drive to erase (its path when it has no serial);
    /// once per drive.
    #[arg(long = "confirm-serial", value_name = "SERIAL")]
    pub confirm_serial: Vec<String>,
    /// Restore an ATA drive's full capacity first when a Host Protected
    /// Area or accessible max address limit hides part of it (SET MAX
    /// ADDRESS, volatile), then erase all of it; without it such a drive
    /// is refused.
    #[arg(long = "restore-native-max")]
    pub restore_native_max: bool,
    /// Print the plan (methods, estimated times) and touch nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Serve live figures for Prometheus at http://ADDR/metrics while the
    /// drives are erased (ADDR: PORT on loopback, or HOST:PORT); see
    /// docs/metrics.md.
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: keep serving the final figures for TIME
    /// (s when bare) after the erase ends.
    #[arg(long = "metrics-linger", value_name = "TIME")]
    pub metrics_linger: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Who the erase is done by and for: fields of every drive's signed
/// certificate (and of its PDF and HTML pages and of `erase report`).
#[derive(Args, Debug, Default)]
pub struct PartiesArgs {
    /// The organisation doing the erasure (in each certificate, signed).
    #[arg(long, value_name = "NAME", help_heading = "Certificate")]
    pub organisation: Option<String>,
    /// The customer whose drives these are.
    #[arg(long, value_name = "NAME", help_heading = "Certificate")]
    pub customer: Option<String>,
    /// The customer's postal address, on one line.
    #[arg(
        long = "customer-address",
        value_name = "TEXT",
        help_heading = "Certificate"
    )]
    pub customer_address: Option<String>,
    /// The customer's contact (person, telephone, e-mail).
    #[arg(
        long = "customer-contact",
        value_name = "TEXT",
        help_heading = "Certificate"
    )]
    pub customer_contact: Option<String>,
    /// The technician doing the erasure.
    #[arg(long, value_name = "NAME", help_heading = "Certificate")]
    pub technician: Option<String>,
    /// A drive's asset tag, once per drive: DEV=TAG or SERIAL=TAG (DEV as
    /// named here, or another name of its node, e.g. /dev/disk/by-id/...),
    /// or a bare TAG when one drive is erased. A drive given none has none;
    /// a tag naming no drive, a bare tag with several drives, or two tags
    /// for one drive is refused before anything is written.
    #[arg(
        long = "asset-tag",
        value_name = "[DRIVE=]TAG",
        help_heading = "Certificate"
    )]
    pub asset_tag: Vec<String>,
}

impl PartiesArgs {
    /// The erase library's parties.
    pub fn parties(&self) -> drivelab_erase::Parties {
        drivelab_erase::Parties {
            organisation: self.organisation.clone(),
            customer: drivelab_erase::cert::Customer {
                name: self.customer.clone(),
                address: self.customer_address.clone(),
                contact: self.customer_contact.clone(),
            },
            technician: self.technician.clone(),
            asset_tags: self.asset_tag.clone(),
        }
    }
}

/// Run the subcommand.
pub fn run(a: EraseArgs) -> anyhow::Result<u8> {
    match &a.sub {
        Some(EraseSub::VerifyCert { file, trust, out }) => {
            return verify_cert(file, &trust.sources(), out)
        }
        Some(EraseSub::Render {
            file,
            pdf,
            paper,
            trust,
            out,
        }) => return crate::cmd_erase_pdf::render(file, pdf, *paper, trust, out),
        Some(EraseSub::Report {
            files,
            pdf,
            csv,
            paper,
            trust,
            out,
        }) => {
            return crate::cmd_erase_pdf::report(
                files,
                pdf.as_deref(),
                csv.as_deref(),
                *paper,
                trust,
                out,
            )
        }
        None => {}
    }
    erase(a)
}

fn verify_cert(file: &Path, src: &TrustSources, out: &OutputArgs) -> anyhow::Result<u8> {
    let mut inputs = vec![file];
    inputs.extend(src.public_keys.iter().map(Path::new));
    inputs.extend(src.trusted_keys.iter().map(PathBuf::as_path));
    out.check_inputs(&inputs)?;
    let (v, pdf) = match crate::cmd_erase_pdf::verify_any(file, src) {
        Ok(v) => v,
        Err(e) if e.is_bad_input() => return Err(usage(e.to_string())),
        Err(e) => return Err(anyhow::anyhow!("{}: {e}", file.display())),
    };
    let c = &v.certificate;
    if out.json() {
        out.emit(&format!(
            "{}\n",
            json!({"valid": true, "file": file, "result": c.result,
                   "device": c.drive.path, "serial": c.drive.serial,
                   "public_key": v.public_key, "signed_by": v.signed_by,
                   "pdf_pages_match_record": pdf.then_some(true)})
        ))?;
    } else {
        out.emit(&format!(
            "{}: valid signature ({}){}; {} {} serial {}: {}, {} by {}, verification {}\n",
            file.display(),
            v.signed_by,
            if pdf {
                "; the PDF's pages show its attached record"
            } else {
                ""
            },
            c.drive.path,
            c.drive.model.as_deref().unwrap_or("-"),
            c.drive.serial.as_deref().unwrap_or("-"),
            c.result,
            c.timing.end,
            c.erase.method,
            match (&c.verification.prior_sample, &c.verification.detail) {
                (Some(_), Some(d)) => d,
                _ => &c.verification.result,
            }
        ))?;
    }
    Ok(0)
}

fn parse_bytes(what: &str, s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    drivelab_workload::parse_bytes(what, t).map_err(|e| usage(e.to_string()))
}

/// What was typed, as the erase library's request (bounds are its to check).
fn request(a: &EraseArgs) -> anyhow::Result<Request> {
    let method: Method = a
        .method
        .parse()
        .map_err(|e: EraseError| usage(e.to_string()))?;
    let pattern: Pattern = a
        .pattern
        .parse()
        .map_err(|e: drivelab_patterns::PatternError| usage(format!("--pattern: {e}")))?;
    let bus_limit = match &a.bus_limit {
        Some(s) => Some(parse_bytes("--bus-limit", s)?),
        None => None,
    };
    let transfer = match &a.transfer_length {
        // Out of u32's range is out of the library's bounds too.
        Some(s) => Some(u32::try_from(parse_bytes("--transfer-length", s)?).unwrap_or(u32::MAX)),
        None => None,
    };
    let stall = match a.stall_timeout.as_deref().map(str::trim) {
        None => StallLimit::Derived,
        Some("never") => StallLimit::Never,
        Some(t) => StallLimit::Seconds(t.parse().map_err(|_| {
            usage(format!(
                "--stall-timeout {t:?}: give whole seconds (e.g. 3600) or never"
            ))
        })?),
    };
    let key_dir = cert::config_dir().map_err(|e| usage(e.to_string()))?;
    let options = Options {
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
        parties: a.parties.parties(),
        stall,
    };
    Ok(Request {
        devices: a.devices.clone(),
        options,
        consent: Consent {
            force: a.force,
            yes: a.yes,
            confirm: a.confirm_serial.clone(),
            restore_native_max: a.restore_native_max,
        },
        dry_run: a.dry_run,
    })
}

fn erase(a: EraseArgs) -> anyhow::Result<u8> {
    // Where the certificates, the journal and the result go is checked
    // before any drive is touched.
    crate::output::check_dir(&a.certificate_dir, "--certificate-dir")?;
    if !a.certificate_format.contains(&CertFormat::Json) {
        return Err(usage(format!(
            "--certificate-format: {}",
            drivelab_certpdf::formats::NEEDS_JSON
        )));
    }
    a.out.check()?;
    let req = request(&a)?;
    let live = live_metrics(&a)?;
    let fe = Terminal {
        json: a.out.json(),
        tty: std::io::stderr().is_terminal() && !a.out.json(),
        live: live.as_ref(),
        opts: &req.options,
    };
    let report = drivelab_erase::erase(&req, &fe).map_err(|e| {
        if e.is_refusal() {
            usage(e.to_string())
        } else {
            anyhow::Error::new(e).context("erase")
        }
    })?;
    match report {
        Report::DryRun(plan) => {
            print_dry_run(&a.out, &plan)?;
            Ok(0)
        }
        Report::Erased(mut summary) => {
            if let Some(l) = &live {
                l.settle_erase(&summary.drives);
            }
            let pdfs_made =
                crate::cmd_erase_pdf::finish_formats(&mut summary, &a.certificate_format, a.paper);
            let printed = print_report(&a.out, &summary)?;
            // Each drive that failed: one line on stderr, in JSON mode
            // too (stdout holds only the report, which has the same error);
            // a stop for an alias of a drive is the alias's line alone.
            let alias = drivelab_device::watch::alias().is_some();
            for o in summary.drives.iter().filter(|_| !alias) {
                if let Some(e) = &o.error {
                    if e.starts_with(&o.device) {
                        eprintln!("drivelab: {e}");
                    } else {
                        eprintln!("drivelab: {}: {e}", o.device);
                    }
                }
            }
            let code = if summary.all_clean() && pdfs_made {
                0
            } else {
                1
            };
            store(&a, &summary, &printed, code)?;
            if let Some(l) = &live {
                l.linger(crate::signal::stop_flag());
            }
            Ok(code)
        }
    }
}

/// `--metrics-listen`'s endpoint, bound before any drive is touched (none
/// for a dry run, which writes nothing to watch).
fn live_metrics(a: &EraseArgs) -> anyhow::Result<Option<crate::metrics::Live>> {
    if a.dry_run {
        return Ok(None);
    }
    crate::metrics::Live::from_args(
        a.metrics_listen.as_deref(),
        a.metrics_linger.as_deref(),
        "erase",
        !a.out.json(),
    )
}

/// Ask at the terminal for `d`'s serial (or path, when it has none) before
/// a destructive command: "{verb} /dev/sdb (model serial, size){warning}:
/// type its serial to confirm: ". None when stdin is not a terminal.
pub(crate) fn ask_to_confirm(
    verb: &str,
    warning: &str,
    d: &Drive,
) -> Option<std::io::Result<String>> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    eprint!(
        "{verb} {} ({} {}, {}){warning}: type its {} to confirm: ",
        d.dev.path.display(),
        d.dev.model.as_deref().unwrap_or("?"),
        d.serial().unwrap_or("no serial"),
        human_size(d.size),
        if d.serial().is_some() {
            "serial"
        } else {
            "path"
        }
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    Some(std::io::stdin().lock().read_line(&mut line).map(|_| line))
}

/// The user at a terminal (or not): confirmation prompts, the method of
/// each drive, live progress on stderr.
struct Terminal<'a> {
    json: bool,
    tty: bool,
    /// `--metrics-listen`'s endpoint.
    live: Option<&'a crate::metrics::Live>,
    /// The erase's options (the metrics' estimates).
    opts: &'a drivelab_erase::Options,
}

impl Frontend for Terminal<'_> {
    fn ask(&self, d: &Drive, _token: &str) -> Option<std::io::Result<String>> {
        ask_to_confirm("Erase", "", d)
    }

    fn starting(&self, drives: &[Drive]) -> &AtomicBool {
        if !self.json {
            for d in drives {
                eprintln!(
                    "{}: method {}: {}",
                    d.dev.path.display(),
                    d.choice.method,
                    d.choice.reason
                );
            }
        }
        // A second Ctrl-C while stopping kills the process the usual way.
        crate::signal::stop_flag()
    }

    fn watch(&self, drives: &[Drive], progress: &[Arc<Progress>], finished: &AtomicBool) {
        std::thread::scope(|s| {
            if let Some(l) = self.live {
                s.spawn(|| crate::metrics::watch_erase(l, drives, self.opts, progress, finished));
            }
            if !self.json {
                display(drives, progress, finished, self.tty);
            }
        });
    }
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
            "  {}  xfer {}  qd {}",
            bw_pair(done as f64 / el),
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

fn print_dry_run(out: &OutputArgs, plan: &DryRun) -> anyhow::Result<()> {
    if out.json() {
        let v = serde_json::to_value(plan)?;
        return out.emit(&format!("{}\n", serde_json::to_string_pretty(&v)?));
    }
    let mut s = format!(
        "dry run: nothing will be written. Plan ({} strategy, pattern {}, {} pass(es), verify {}):\n",
        plan.strategy.name(),
        plan.pattern,
        plan.passes,
        plan.verify.name()
    );
    for d in &plan.drives {
        s.push_str(&format!(
            "  {}  {} serial {}  {}, {} B sectors\n    method {} (NIST SP 800-88 {}): {}\n    estimate: erase {}, verify {} ({})\n",
            d.device.display(),
            d.model.as_deref().unwrap_or("-"),
            d.serial.as_deref().unwrap_or("(none: confirm by path)"),
            human_size(d.size),
            d.logical_sector,
            d.method,
            d.nist_category,
            d.reason,
            secs(d.estimated_erase_seconds),
            secs(d.estimated_verify_seconds),
            d.estimate_assumes
        ));
    }
    s.push_str(&format!(
        "estimated complete time: {}\n",
        secs(plan.estimated_complete_seconds)
    ));
    out.emit(&s)
}

/// Keep the erase in the store, with each drive's certificate (JSON and
/// HTML) as it was written.
fn store(a: &EraseArgs, r: &Summary, printed: &str, code: u8) -> anyhow::Result<()> {
    let artifacts = certificate_artifacts(r);
    crate::cmd_store::save_printed(
        drivelab_store::Kind::Erase,
        printed,
        a.out.json(),
        r,
        code,
        json!({
            "devices": a.devices, "method": a.method, "pattern": a.pattern, "passes": a.passes,
            "strategy": format!("{:?}", a.strategy), "verify": format!("{:?}", a.verify),
            "on_error": format!("{:?}", a.on_error), "retries": a.retries, "crypto": a.crypto,
            "discard_first": a.discard_first, "bus_limit": a.bus_limit,
            "restore_native_max": a.restore_native_max,
            "transfer_length": a.transfer_length, "queue_depth": a.queue_depth,
            "organisation": a.parties.organisation, "customer": a.parties.customer,
            "customer_address": a.parties.customer_address,
            "customer_contact": a.parties.customer_contact,
            "technician": a.parties.technician, "asset_tags": a.parties.asset_tag,
        }),
        artifacts,
    )?;
    Ok(())
}

/// Each drive's certificate (JSON and HTML) as it was written, to keep
/// with the stored result.
pub(crate) fn certificate_artifacts(r: &Summary) -> Vec<drivelab_store::Artifact> {
    let mut artifacts = Vec::new();
    for o in &r.drives {
        for p in [&o.certificate, &o.html].into_iter().flatten() {
            if let Ok(content) = std::fs::read_to_string(p) {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| p.display().to_string());
                artifacts.push(drivelab_store::Artifact { name, content });
            }
        }
    }
    artifacts
}

/// Print the per-drive table (or the JSON); returns what was printed.
fn print_report(out: &OutputArgs, r: &Summary) -> anyhow::Result<String> {
    if out.json() {
        // Through a Value, as every JSON report: keys in sorted order.
        let v = serde_json::to_value(r)?;
        let text = format!("{}\n", serde_json::to_string_pretty(&v)?);
        out.emit(&text)?;
        return Ok(text);
    }
    let mut s = format!(
        "\n{:<14} {:<16} {:<17} {:>12} {:>9} {:>26} {:<24} {}\n",
        "DEVICE", "SERIAL", "METHOD", "BYTES", "TIME", "RATE", "VERIFY", "RESULT"
    );
    for o in &r.drives {
        let mut method = o.method.name().to_string();
        if o.offloaded == Some(true) {
            method.push_str(" (offl.)");
        } else if o.offloaded == Some(false) {
            method.push_str(" (no offl.)");
        }
        s.push_str(&format!(
            "{:<14} {:<16} {:<17} {:>12} {:>9} {:>26} {:<24} {}\n",
            o.device,
            o.serial.as_deref().unwrap_or("-"),
            method,
            o.bytes,
            secs(o.erase_seconds),
            bw_pair(o.mb_per_s() * 1e6),
            o.verification,
            o.result
        ));
    }
    s.push_str(&format!(
        "complete time: {} ({} strategy); aggregate throughput: {} ({} bytes)\n",
        secs(r.complete_seconds),
        r.strategy.name(),
        bw_pair(r.aggregate_mb_per_s * 1e6),
        r.total_bytes
    ));
    for o in &r.drives {
        s.push_str(&drive_notes(o));
    }
    out.emit(&s)?;
    Ok(s)
}

/// The lines under the table about one drive: tuning, error, exceptions,
/// certificate.
fn drive_notes(o: &drivelab_erase::Outcome) -> String {
    let mut s = String::new();
    if let Some(t) = o.tuning {
        s.push_str(&format!(
            "{}: stream ended at transfer length {} and queue depth {} ({} tuning changes)\n",
            o.device,
            human_size(t.transfer),
            t.depth,
            t.changes
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
    if let Some(r) = &o.restored {
        s.push_str(&format!(
            "{}: hidden area restored before the erase: {} bytes reachable before, {} erased (native max LBA {}{})\n",
            o.device,
            r.bytes_before,
            r.bytes_after,
            r.native_max_lba,
            if r.volatile { ", volatile" } else { "" }
        ));
    }
    if let Some(h) = &o.health {
        for l in h.lines(&o.device) {
            s.push_str(&l);
            s.push('\n');
        }
    }
    if let Some(c) = &o.certificate {
        s.push_str(&format!("{}: certificate {}\n", o.device, c.display()));
    }
    if let Some(p) = &o.pdf {
        s.push_str(&format!("{}: certificate PDF {}\n", o.device, p.display()));
    }
    s
}
