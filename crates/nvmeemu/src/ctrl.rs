//! The emulated controller: its configuration, its state (registers,
//! namespaces, counters, error log, sanitize status, faults) behind one
//! lock, and the one entry point every queue's commands go through.
//!
//! [`Drive::execute`] takes a command with its host data and gives back the
//! completion and any data for the host, or [`Outcome::Never`] when a fault
//! says the command is never answered. It routes to `fabrics` (Property
//! Get/Set; Connect is the connection's own), `admin` (queue 0) or `io`.
//! Every failed command leaves an Error Information log entry, as a drive's
//! does.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use crate::cmd::{Sqe, Status};
use crate::faults::Faults;
use crate::media::Media;
use drivelab_ftlsim::media::MediaKind;

/// What the controller is, fixed when it starts.
#[derive(Debug, Clone)]
pub struct Config {
    /// Serial number (Identify Controller SN, at most 20 characters).
    pub serial: String,
    /// Model number (MN, at most 40 characters).
    pub model: String,
    /// Firmware revision (FR, at most 8 characters).
    pub firmware: String,
    /// The subsystem NQN hosts connect to.
    pub subnqn: String,
    /// Each namespace's size in bytes (NSID 1, 2, ...).
    pub namespaces: Vec<u64>,
    /// Total NVM capacity in bytes (TNVMCAP); what the namespaces leave
    /// is reported unallocated (UNVMCAP).
    pub capacity: u64,
    /// Logical block size in bytes.
    pub block_size: usize,
    /// How long a sanitize operation runs, seconds.
    pub sanitize_seconds: f64,
    /// Faults from the command line.
    pub faults: Faults,
    /// A control file of faults, re-read when it changes.
    pub control: Option<PathBuf>,
}

impl Config {
    /// Checks the sizes; an error says what to change.
    pub fn check(&self) -> Result<(), String> {
        if self.namespaces.is_empty() {
            return Err("give at least one namespace (--namespace-mib)".into());
        }
        let bs = self.block_size as u64;
        if let Some(s) = self.namespaces.iter().find(|s| **s == 0 || **s % bs != 0) {
            return Err(format!(
                "namespace size {s} is not a positive multiple of {bs}"
            ));
        }
        let sum: u64 = self.namespaces.iter().sum();
        if self.capacity < sum {
            return Err(format!(
                "capacity {} B is less than the namespaces' {sum} B",
                self.capacity
            ));
        }
        if self.serial.len() > 20 || self.model.len() > 40 || self.firmware.len() > 8 {
            return Err("serial, model, firmware: at most 20, 40, 8 characters".into());
        }
        Ok(())
    }
}

/// What a command gets back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A completion: status, DW0, and data for the host (controller to
    /// host commands).
    Done {
        /// Completion status.
        status: Status,
        /// Completion DW0.
        dw0: u32,
        /// Completion DW1.
        dw1: u32,
        /// Data for the host.
        data: Vec<u8>,
    },
    /// The command is never answered (a fault).
    Never,
    /// The command was carried out; its completion goes to the host after
    /// this long (a fault).
    Late {
        /// How long the completion is held.
        after: std::time::Duration,
        /// The completion.
        out: Box<Outcome>,
    },
}

impl Outcome {
    /// A completion with `status` and nothing else.
    pub fn status(status: Status) -> Outcome {
        Outcome::Done {
            status,
            dw0: 0,
            dw1: 0,
            data: Vec::new(),
        }
    }
    /// A successful completion with data.
    pub fn data(data: Vec<u8>) -> Outcome {
        Outcome::Done {
            status: Status::SUCCESS,
            dw0: 0,
            dw1: 0,
            data,
        }
    }
    /// A successful completion with DW0.
    pub fn dw0(dw0: u32) -> Outcome {
        Outcome::Done {
            status: Status::SUCCESS,
            dw0,
            dw1: 0,
            data: Vec::new(),
        }
    }
}

/// The SMART / Health counters the I/O moves.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Bytes the host read with Read commands.
    pub bytes_read: u128,
    /// Bytes the host wrote with Write commands.
    pub bytes_written: u128,
    /// Read commands completed.
    pub read_commands: u128,
    /// Write commands completed.
    pub write_commands: u128,
    /// Nanoseconds spent executing I/O commands.
    pub busy_ns: u128,
    /// Media and data integrity errors.
    pub media_errors: u128,
}

/// One Error Information log entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorEntry {
    /// The error count when it happened (1 for the first).
    pub count: u64,
    /// Submission queue.
    pub sqid: u16,
    /// Command identifier.
    pub cid: u16,
    /// The completion status.
    pub status: Status,
    /// The command's first LBA, when it has one.
    pub lba: u64,
    /// Its namespace.
    pub nsid: u32,
}

/// Entries the Error Information log keeps (ELPE + 1).
pub const ERROR_LOG_ENTRIES: usize = 16;

/// The Sanitize Status log's fields and the failure mode.
#[derive(Debug, Clone, Default)]
pub struct SanitizeState {
    /// SSTAT bits 2:0: 0 never, 1 completed, 2 in progress, 3 failed.
    pub status: u8,
    /// SPROG: progress of the one in progress, of 65536.
    pub progress: u16,
    /// CDW10 of the last Sanitize started.
    pub cdw10: u32,
    /// SSTAT bit 8: no user data written since the last sanitize completed.
    pub global_erased: bool,
    /// Overwrite passes completed (SSTAT bits 7:3).
    pub passes: u8,
    /// The last sanitize failed: I/O is refused until it is exited.
    pub failure_mode: bool,
    /// The running sanitize stalled half way: in progress forever.
    pub stalled: bool,
    /// Sanitize operations started.
    pub started: u64,
    /// Blocks erased by sanitize operations (all namespaces).
    pub blocks_erased: u64,
    /// Blocks the current (or last) sanitize operation erased.
    pub op_blocks: u64,
    /// Sanitize Status log reads while an operation was in progress (the
    /// host polling it).
    pub polls_in_progress: u64,
}

/// One erase the controller carried out, for the state file.
#[derive(Debug, Clone)]
pub struct EraseEvent {
    /// "format" or "sanitize".
    pub command: &'static str,
    /// SES for a format, SANACT for a sanitize.
    pub action: u8,
    /// The namespaces it covered.
    pub nsids: Vec<u32>,
    /// Blocks it erased.
    pub blocks: u64,
    /// "completed" or "failed".
    pub result: &'static str,
}

/// Everything behind the lock.
#[derive(Debug)]
pub struct Ctrl {
    /// The configuration.
    pub cfg: Config,
    /// Faults in force (command line, then the control file's).
    pub faults: Faults,
    /// Namespaces, NSID 1 at index 0.
    pub namespaces: Vec<Media>,
    /// Controller ID given at the admin Connect.
    pub cntlid: u16,
    /// Controller Configuration register.
    pub cc: u32,
    /// Controller Status register.
    pub csts: u32,
    /// I/O queues granted (Set Features Number of Queues).
    pub io_queues: u16,
    /// Volatile write cache enabled (feature 06h).
    pub write_cache: bool,
    /// SMART counters.
    pub counters: Counters,
    /// Error log entries, newest first.
    pub errors: VecDeque<ErrorEntry>,
    /// Errors over the controller's life.
    pub error_count: u64,
    /// Sanitize state.
    pub sanitize: SanitizeState,
    /// Erases carried out.
    pub erases: Vec<EraseEvent>,
    /// Commands taken and never answered.
    pub unanswered: u64,
    /// Commands whose completion a fault held back.
    pub delayed: u64,
    /// When the controller started (power-on time).
    pub started: Instant,
    /// Device Self-test.
    pub self_test: crate::admin::selftest::SelfTest,
    /// The control file's modification time and length when last read.
    control_seen: Option<(SystemTime, u64)>,
}

/// The controller shared by its connections and its sanitize thread.
#[derive(Debug)]
pub struct Drive {
    inner: Mutex<Ctrl>,
    dirty: AtomicBool,
}

/// I/O queues the controller grants at most.
pub const MAX_IO_QUEUES: u16 = 8;

impl Drive {
    /// A controller from a checked [`Config`], every block deallocated,
    /// its media plain memory.
    pub fn new(cfg: Config) -> Arc<Drive> {
        let bs = cfg.block_size;
        let namespaces = cfg
            .namespaces
            .iter()
            .map(|b| Media::new(b / bs as u64, bs))
            .collect();
        Drive::over(cfg, namespaces)
    }

    /// A controller whose namespaces' media are `kind` (`--media`); the
    /// FTL model refuses a namespace too small for its erase blocks.
    pub fn with_media(cfg: Config, kind: MediaKind) -> Result<Arc<Drive>, String> {
        let bs = cfg.block_size;
        let namespaces = cfg
            .namespaces
            .iter()
            .map(|b| Media::with_kind(b / bs as u64, bs, kind))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("--media {}: {e}", kind.name()))?;
        Ok(Drive::over(cfg, namespaces))
    }

    fn over(cfg: Config, namespaces: Vec<Media>) -> Arc<Drive> {
        Arc::new(Drive {
            inner: Mutex::new(Ctrl {
                faults: cfg.faults.clone(),
                cfg,
                namespaces,
                cntlid: 1,
                cc: 0,
                csts: 0,
                io_queues: 1,
                write_cache: true,
                counters: Counters::default(),
                errors: VecDeque::new(),
                error_count: 0,
                sanitize: SanitizeState::default(),
                erases: Vec::new(),
                unanswered: 0,
                delayed: 0,
                started: Instant::now(),
                self_test: crate::admin::selftest::SelfTest::default(),
                control_seen: None,
            }),
            dirty: AtomicBool::new(true),
        })
    }

    /// The state, locked (a panicked holder's state is still used: the
    /// emulator keeps answering).
    pub fn lock(&self) -> MutexGuard<'_, Ctrl> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes that the state changed (the state file is rewritten).
    pub fn touch(&self) {
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// Whether the state changed since the last call.
    pub fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::Relaxed)
    }
}

/// Data units (thousands of 512-byte units, rounded up) of `bytes`, as the
/// SMART / Health log counts them.
pub fn data_units(bytes: u128) -> u128 {
    bytes.div_ceil(512).div_ceil(1000)
}

impl Ctrl {
    /// Re-reads the control file when its modification time or length
    /// changed (a rewrite within one timestamp tick still changes the
    /// length of every fault line but one of equal length).
    pub(crate) fn reload_faults(&mut self) {
        let Some(path) = self.cfg.control.clone() else {
            return;
        };
        let Ok(m) = std::fs::metadata(&path).and_then(|m| Ok((m.modified()?, m.len()))) else {
            return;
        };
        if self.control_seen == Some(m) {
            return;
        }
        self.control_seen = Some(m);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        match Faults::parse(&text) {
            Ok(f) => self.faults = self.cfg.faults.with(&f),
            Err(e) => eprintln!(
                "drivelab-nvmeemu: {}: {e}; faults unchanged",
                path.display()
            ),
        }
    }

    /// Adds an Error Information log entry for a failed command.
    pub fn log_error(&mut self, sqid: u16, sqe: &Sqe, status: Status) {
        self.error_count += 1;
        let io_lba = sqid != 0 && matches!(sqe.opcode(), 0x01 | 0x02 | 0x08);
        self.errors.push_front(ErrorEntry {
            count: self.error_count,
            sqid,
            cid: sqe.cid(),
            status,
            lba: if io_lba {
                u64::from(sqe.cdw(10)) | (u64::from(sqe.cdw(11)) << 32)
            } else {
                0
            },
            nsid: sqe.nsid(),
        });
        self.errors.truncate(ERROR_LOG_ENTRIES);
    }

    /// The namespace `nsid` names, if it exists.
    pub fn namespace(&mut self, nsid: u32) -> Option<&mut Media> {
        let i = usize::try_from(nsid).ok()?.checked_sub(1)?;
        self.namespaces.get_mut(i)
    }

    /// Bytes the namespaces hold (their sizes together).
    pub fn allocated_bytes(&self) -> u64 {
        self.cfg.namespaces.iter().sum()
    }

    /// The state as JSON, for the state file and tests.
    pub fn state_json(&self) -> serde_json::Value {
        use serde_json::json;
        let s = &self.sanitize;
        let n = &self.counters;
        json!({
            "serial": self.cfg.serial,
            "subnqn": self.cfg.subnqn,
            "capacity_bytes": self.cfg.capacity,
            "unallocated_bytes": self.cfg.capacity.saturating_sub(self.allocated_bytes()),
            "namespaces": self.namespaces.iter().enumerate().map(|(i, m)| json!({
                "nsid": i + 1,
                "blocks": m.blocks(),
                "block_size": m.block_size(),
                "allocated_blocks": m.mapped_blocks(),
                "key_changes": m.key_changes,
                "media": serde_json::to_value(m.model().report()).unwrap_or(serde_json::Value::Null),
            })).collect::<Vec<_>>(),
            "counters": {
                "bytes_read": n.bytes_read as u64,
                "bytes_written": n.bytes_written as u64,
                "read_commands": n.read_commands as u64,
                "write_commands": n.write_commands as u64,
                "data_units_read": data_units(n.bytes_read) as u64,
                "data_units_written": data_units(n.bytes_written) as u64,
                "media_errors": n.media_errors as u64,
                "error_count": self.error_count,
                "unanswered_commands": self.unanswered,
                "delayed_commands": self.delayed,
            },
            "sanitize": {
                "status": s.status,
                "progress": s.progress,
                "cdw10": s.cdw10,
                "global_data_erased": s.global_erased,
                "failure_mode": s.failure_mode,
                "stalled": s.stalled,
                "started": s.started,
                "blocks_erased": s.blocks_erased,
                "polls_in_progress": s.polls_in_progress,
            },
            "erases": self.erases.iter().map(|e| json!({
                "command": e.command,
                "action": e.action,
                "nsids": e.nsids,
                "blocks": e.blocks,
                "result": e.result,
            })).collect::<Vec<_>>(),
            "self_test": {
                "running": self.self_test.running.map(|(code, nsid, _)| json!({"stc": code, "nsid": nsid})),
                "bad": self.self_test.bad.map(|(nsid, lba, _)| json!({"nsid": nsid, "lba": lba})),
                "log": self.self_test.log.iter().map(|r| json!({
                    "stc": r.stc,
                    "result": r.result,
                    "nsid": r.nsid,
                    "hours": r.hours,
                    "failing_lba": r.failing.map(|(_, l)| l),
                })).collect::<Vec<_>>(),
            },
            "registers": {"cc": self.cc, "csts": self.csts},
            "io_queues": self.io_queues,
        })
    }
}
