//! fio's own command-line flags (what `fio --help` lists, as against job
//! options): each one `drivelab run` carries out as fio 3.33 does, takes
//! knowing it changes nothing here (and says why in its help), or refuses
//! by a named rule in one line. [`FIO_FLAGS`] lists every flag fio lists
//! that is not among drivelab's own run flags; a test compares the two
//! lists with the installed fio's `--help`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use drivelab_workload::spec::options;

use crate::error::usage;

/// What drivelab does with one of fio's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// Carried out as fio does.
    Runs,
    /// Taken; what it sets in fio has no counterpart here (the help says
    /// why).
    NoEffect,
    /// Refused in one line with this reason (exit 2).
    Refused(&'static str),
}

/// One of fio's flags.
#[derive(Debug)]
pub struct FioFlag {
    /// Its name without the dashes.
    pub name: &'static str,
    /// Whether it takes a value: None bare, Some(true) always, Some(false)
    /// optionally (`--crctest[=TYPE]`).
    pub value: Option<bool>,
    /// What drivelab does with it.
    pub handling: Handling,
    /// One line of help.
    pub help: &'static str,
}

const CLIENT_SERVER: &str = "fio's client/server protocol runs jobs on remote fio servers; drivelab runs on many hosts as a fleet instead: see 'drivelab fleet --help'";

/// fio 3.33's flags beside those in `cmd_run::RUN_FLAGS`.
pub const FIO_FLAGS: &[FioFlag] = &[
    FioFlag { name: "section", value: Some(true), handling: Handling::Runs, help: "run only this section of the job file (may be given several times)" },
    FioFlag { name: "readonly", value: None, handling: Handling::Runs, help: "refuse any job that writes or trims, before anything runs" },
    FioFlag { name: "showcmd", value: None, handling: Handling::Runs, help: "print each job of the job file as one command line, run nothing" },
    FioFlag { name: "cmdhelp", value: Some(true), handling: Handling::Runs, help: "print the help of a job option, or of all (cmdhelp=all)" },
    FioFlag { name: "enghelp", value: Some(false), handling: Handling::Runs, help: "list the ioengines, or the options of one (enghelp=ENGINE)" },
    FioFlag { name: "version", value: None, handling: Handling::Runs, help: "print drivelab's name and version (drivelab-X.Y.Z), run nothing" },
    FioFlag { name: "crctest", value: Some(false), handling: Handling::Runs, help: "measure the speed of each verify checksum (or of those named, comma-separated), run nothing" },
    FioFlag { name: "terse-version", value: Some(true), handling: Handling::Runs, help: "the terse format's version: 3 (the only one drivelab writes)" },
    FioFlag { name: "warnings-fatal", value: None, handling: Handling::Runs, help: "a warning about the job file (e.g. time_based without a runtime) is an error: exit 2, nothing run" },
    FioFlag { name: "aux-path", value: Some(true), handling: Handling::Runs, help: "the directory of the verify state files (local-JOB-N-verify.state) instead of the current one" },
    FioFlag { name: "trigger-file", value: Some(true), handling: Handling::Runs, help: "when this file appears, remove it, stop the jobs (saving their verify state) and run the --trigger command" },
    FioFlag { name: "trigger-timeout", value: Some(true), handling: Handling::Runs, help: "at this time after the start (s when bare), stop the jobs (saving their verify state) and run the --trigger command" },
    FioFlag { name: "trigger", value: Some(true), handling: Handling::Runs, help: "the shell command a trigger runs (e.g. one that cuts a drive's power)" },
    FioFlag { name: "alloc-size", value: Some(true), handling: Handling::NoEffect, help: "no effect: fio sizes its shared-memory pool for job data with it; drivelab keeps its jobs in its own memory" },
    FioFlag { name: "max-jobs", value: Some(true), handling: Handling::NoEffect, help: "no effect: fio sizes its shared table of job threads with it; drivelab's has no fixed size" },
    FioFlag { name: "debug", value: Some(true), handling: Handling::Refused("fio's debug categories trace fio's own internals, which drivelab does not have; see what a job did with write_iolog, write_lat_log or --status-interval"), help: "" },
    FioFlag { name: "merge-blktrace-only", value: None, handling: Handling::Refused("merging blktrace files into one is not done by run; 'drivelab trace analyze' reads blkparse text and drivelab's own recordings"), help: "" },
    FioFlag { name: "bandwidth-log", value: None, handling: Handling::Refused("fio's aggregate bandwidth logs (agg-*_bw.log) are not written; give each job write_bw_log, whose logs sum to the aggregate"), help: "" },
    FioFlag { name: "cpuclock-test", value: None, handling: Handling::Refused("it checks fio's CPU clock (TSC) source; drivelab times with CLOCK_MONOTONIC, which needs no calibration"), help: "" },
    FioFlag { name: "idle-prof", value: Some(true), handling: Handling::Refused("fio's idleness profiling calibrates busy work per CPU; drivelab reports each job's own CPU time (cpu usr/sys) instead"), help: "" },
    FioFlag { name: "inflate-log", value: Some(true), handling: Handling::Refused("it inflates a log fio stored compressed; drivelab writes its logs plain (log_store_compressed takes only 0), so there is nothing to inflate"), help: "" },
    FioFlag { name: "server", value: Some(false), handling: Handling::Refused(CLIENT_SERVER), help: "" },
    FioFlag { name: "daemonize", value: Some(true), handling: Handling::Refused(CLIENT_SERVER), help: "" },
    FioFlag { name: "client", value: Some(true), handling: Handling::Refused(CLIENT_SERVER), help: "" },
    FioFlag { name: "remote-config", value: Some(true), handling: Handling::Refused(CLIENT_SERVER), help: "" },
    FioFlag { name: "trigger-remote", value: Some(true), handling: Handling::Refused(CLIENT_SERVER), help: "" },
];

/// The flag named `name`, if fio has it and drivelab's run flags do not.
pub fn find(name: &str) -> Option<&'static FioFlag> {
    FIO_FLAGS.iter().find(|f| f.name == name)
}

/// What the fio flags given asked for.
#[derive(Debug, Default)]
pub struct Asked {
    /// `--section`: only these sections run.
    pub sections: Vec<String>,
    /// `--readonly`.
    pub readonly: bool,
    /// `--warnings-fatal`.
    pub warnings_fatal: bool,
    /// `--aux-path`.
    pub aux_path: Option<PathBuf>,
    /// Something to print instead of running.
    pub show: Option<Show>,
    /// `--trigger-file`, `--trigger-timeout`, `--trigger`.
    pub trigger: Trigger,
}

/// What to print instead of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Show {
    /// `--version`.
    Version,
    /// `--showcmd`.
    Cmd,
    /// `--cmdhelp=OPTION|all`.
    CmdHelp(String),
    /// `--enghelp[=ENGINE]`.
    EngHelp(Option<String>),
    /// `--crctest[=TYPES]`.
    CrcTest(Option<String>),
}

impl Asked {
    /// Take flag `f` with its value (`value` None when bare).
    pub fn take(&mut self, f: &FioFlag, value: Option<String>) -> anyhow::Result<()> {
        let need = |v: Option<String>| {
            v.ok_or_else(|| usage(format!("--{} needs a value: {}", f.name, f.help)))
        };
        if let Handling::Refused(why) = f.handling {
            return Err(usage(format!("--{}: {why}", f.name)));
        }
        match f.name {
            "section" => self.sections.push(need(value)?),
            "readonly" => self.readonly = true,
            "warnings-fatal" => self.warnings_fatal = true,
            "aux-path" => self.aux_path = Some(PathBuf::from(need(value)?)),
            "showcmd" => self.show = Some(Show::Cmd),
            "version" => self.show = Some(Show::Version),
            "cmdhelp" => self.show = Some(Show::CmdHelp(need(value)?)),
            "enghelp" => self.show = Some(Show::EngHelp(value)),
            "crctest" => self.show = Some(Show::CrcTest(value)),
            "terse-version" => {
                let v = need(value)?;
                if v.trim() != "3" {
                    return Err(usage(format!(
                        "--terse-version {v}: drivelab writes terse version 3 only; use --terse-version=3"
                    )));
                }
            }
            "trigger-file" => self.trigger.file = Some(PathBuf::from(need(value)?)),
            "trigger" => self.trigger.cmd = Some(need(value)?),
            "trigger-timeout" => {
                let v = need(value)?;
                self.trigger.timeout =
                    Some(crate::progress::parse_interval("--trigger-timeout", &v)?);
            }
            // No effect here, as its help says; its value must still be one.
            "alloc-size" | "max-jobs" => {
                let v = need(value)?;
                if v.trim().parse::<u64>().is_err() {
                    return Err(usage(format!("--{} {v}: give a whole number", f.name)));
                }
            }
            other => unreachable!("fio flag {other} has no handling"),
        }
        Ok(())
    }
}

/// fio's triggers: a file appearing or a time passing stops the run and
/// runs a command.
#[derive(Debug, Default, Clone)]
pub struct Trigger {
    /// Watched for; removed when seen.
    pub file: Option<PathBuf>,
    /// After the start.
    pub timeout: Option<Duration>,
    /// Run by `sh -c` once the trigger fires.
    pub cmd: Option<String>,
}

impl Trigger {
    /// Watch on a thread of its own until the run ends (`done`): when the
    /// file appears or the timeout passes, set `stop` (the jobs end as on
    /// Ctrl-C, saving their verify state) and run the command. Nothing to
    /// watch: no thread.
    pub fn watch(
        &self,
        stop: &'static AtomicBool,
        done: std::sync::Arc<AtomicBool>,
    ) -> Option<std::thread::JoinHandle<()>> {
        if self.file.is_none() && self.timeout.is_none() {
            return None;
        }
        let t = self.clone();
        let start = Instant::now();
        Some(std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let seen = t.file.as_ref().is_some_and(|f| {
                    f.exists() && {
                        if let Err(e) = std::fs::remove_file(f) {
                            eprintln!(
                                "drivelab: --trigger-file: cannot remove {}: {e}",
                                f.display()
                            );
                        }
                        true
                    }
                });
                if seen || t.timeout.is_some_and(|d| start.elapsed() >= d) {
                    stop.store(true, Ordering::SeqCst);
                    if let Some(cmd) = &t.cmd {
                        match std::process::Command::new("sh").arg("-c").arg(cmd).status() {
                            Ok(s) if !s.success() => {
                                eprintln!("drivelab: --trigger command '{cmd}' ended with {s}")
                            }
                            Err(e) => {
                                eprintln!("drivelab: cannot run --trigger command '{cmd}': {e}")
                            }
                            Ok(_) => {}
                        }
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }))
    }
}

/// `--showcmd`: each job as one `drivelab run` command line with the
/// options it was given (its `[global]` ones included).
pub fn show_cmd(jobs: &[drivelab_workload::JobSpec]) -> String {
    let mut out = String::new();
    for j in jobs {
        out.push_str("drivelab run --name=");
        out.push_str(&j.name);
        for (k, v) in &j.set_order {
            match v {
                _ if k == "name" => {}
                Some(v) => out.push_str(&format!(" --{k}={}", shell_word(v))),
                None => out.push_str(&format!(" --{k}")),
            }
        }
        out.push('\n');
    }
    out
}

/// `v` as one shell word: as it is when it holds nothing the shell reads
/// specially, else in single quotes.
fn shell_word(v: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.,:/=%+@^".contains(c);
    if !v.is_empty() && v.chars().all(plain) {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\'', "'\\''"))
    }
}

/// `--cmdhelp=OPTION` (or `all`): the option's name, aliases, kind,
/// default, range, unit and help, as the one option table declares them.
pub fn cmd_help(which: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let one = |d: &drivelab_workload::spec::decl::OptionDecl| {
        let mut s = format!("{:>20}: {}\n", d.name, d.help);
        if !d.aliases.is_empty() {
            s.push_str(&format!("{:>20}: {}\n", "alias", d.aliases.join(", ")));
        }
        s.push_str(&format!("{:>20}: {:?}\n", "type", d.kind));
        if !d.default.is_empty() {
            s.push_str(&format!("{:>20}: {}\n", "default", d.default));
        }
        if let Some((lo, hi)) = d.bounds {
            s.push_str(&format!("{:>20}: min={lo}, max={hi}\n", "range"));
        }
        let unit = d.unit_text();
        if !unit.is_empty() {
            s.push_str(&format!("{:>20}: {unit}\n", "unit"));
        }
        s
    };
    if which.trim() == "all" {
        for d in options::all() {
            out.push_str(&one(d));
        }
    } else {
        let d = options::lookup(which).map_err(|e| usage(e.to_string()))?;
        out.push_str(&one(d));
    }
    Ok(out)
}

/// `--enghelp`: the engines drivelab runs; `--enghelp=ENGINE`: that
/// engine's own options.
pub fn eng_help(engine: Option<&str>) -> anyhow::Result<String> {
    use drivelab_workload::engines::registry;
    let Some(name) = engine.map(|e| e.split(',').next().unwrap_or(e).trim()) else {
        let mut out = String::from("Available IO engines:\n");
        for f in registry::ENGINES {
            for n in f.names() {
                out.push_str(&format!("\t{n}\n"));
            }
        }
        return Ok(out);
    };
    if registry::lookup(name).is_none() {
        return Err(usage(format!(
            "--enghelp={name}: drivelab runs no engine of that name; --enghelp lists those it runs"
        )));
    }
    let mut out = String::new();
    for b in drivelab_workload::engines::opts::BLOCKS {
        if b.engines.split(", ").any(|e| e.trim() == name) {
            for d in b.options {
                out.push_str(&format!("{:<24}: {}\n", d.name, d.help));
            }
        }
    }
    if out.is_empty() {
        out = format!("{name} has no options of its own\n");
    }
    Ok(out)
}

/// `--crctest[=TYPES]`: each verify checksum's speed over 1 MiB blocks, in
/// MiB/s, as fio prints it.
pub fn crc_test(which: Option<&str>) -> anyhow::Result<String> {
    use drivelab_workload::job::types::VerifyKind;
    const ALL: &[&str] = &[
        "md5", "crc64", "crc32", "crc32c", "crc16", "crc7", "sha1", "sha256", "sha512", "xxhash",
        "sha3-224", "sha3-256", "sha3-384", "sha3-512",
    ];
    let names: Vec<&str> = match which {
        Some(w) => w
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect(),
        None => ALL.to_vec(),
    };
    let mut kinds = Vec::new();
    for n in &names {
        if !ALL.contains(n) {
            return Err(usage(format!(
                "--crctest={n}: not a checksum drivelab verifies with; use one of {}",
                ALL.join(", ")
            )));
        }
        if let Some(k) = VerifyKind::parse("crctest", n).map_err(|e| usage(e.to_string()))? {
            kinds.push((*n, k));
        }
    }
    // Random bytes (the engine's buffer fill), so no checksum meets an
    // easy input.
    let mut block = vec![0u8; 1 << 20];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for chunk in block.chunks_exact_mut(8) {
        chunk.copy_from_slice(&drivelab_patterns::prng::splitmix64(&mut seed).to_le_bytes());
    }
    let mut out = String::new();
    for (n, k) in kinds {
        // At least a quarter second of work per checksum.
        let t = Instant::now();
        let mut bytes = 0u64;
        let mut sink = 0u64;
        while t.elapsed() < Duration::from_millis(250) {
            sink ^= drivelab_workload::job::verify::check_value(k, &block).map_or(0, |v| v.0);
            bytes += block.len() as u64;
        }
        std::hint::black_box(sink);
        let mib_s = bytes as f64 / (1u64 << 20) as f64 / t.elapsed().as_secs_f64();
        out.push_str(&format!("{n}:\t{mib_s:>10.2} MiB/sec\n"));
    }
    Ok(out)
}
