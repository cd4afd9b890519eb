//! fio's `write_iolog`: every I/O a job issues and every file it adds,
//! opens and closes, in fio's iolog version 3 (what `read_iolog` and
//! `drivelab trace` read):
//!
//! ```text
//! fio version 3 iolog
//! 38 rr.0.0 add
//! 195 rr.0.0 open
//! 202 rr.0.0 write 0 4096
//! 298 rr.0.0 close
//! ```
//!
//! Times are microseconds since the log was started (the job's set-up),
//! each I/O logged when it is issued, as fio does; the file is appended
//! to, as fio opens it. Lines go through a buffered writer and are
//! formatted without allocating.

use std::fs::File;
use std::io::{BufWriter, Write};

use drivelab_engine::io::{IoDesc, Op};

/// A job's iolog being written.
#[derive(Debug)]
pub struct IoLog {
    out: BufWriter<File>,
    /// Monotonic time the log started, ns.
    t0: u64,
    /// The job's files, by target index.
    names: Vec<String>,
    path: String,
    failed: Option<std::io::Error>,
    /// Files are logged as opened at their first I/O and closed together
    /// ([`IoLog::close_opened`]), as fio opens a job's files when it first
    /// uses them; off while an open set (`openfiles`) logs its own.
    lazy: bool,
    /// Files logged as open, by target (lazy mode).
    opened: Vec<bool>,
}

/// fio's action words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The job's file is known (all at the start).
    Add,
    /// Opened.
    Open,
    /// Closed.
    Close,
}

impl IoLog {
    /// Start the log at `path` (appended to) for files `names`, at
    /// monotonic time `t0` (ns); every file is added.
    pub fn create(path: &str, names: Vec<String>, t0: u64) -> Result<IoLog, String> {
        let f = drivelab_device::output::Output::new(path)
            .option("write_iolog")
            .open_in_place(true)
            .map_err(|e| e.to_string())?;
        let mut log = IoLog {
            out: BufWriter::with_capacity(64 << 10, f),
            t0,
            names,
            path: path.to_string(),
            failed: None,
            lazy: true,
            opened: Vec::new(),
        };
        log.put(|w| w.write_all(b"fio version 3 iolog\n"));
        for i in 0..log.names.len() {
            log.file(t0, i as u32, Action::Add);
        }
        Ok(log)
    }

    fn put(&mut self, f: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>) {
        if self.failed.is_none() {
            if let Err(e) = f(&mut self.out) {
                self.failed = Some(e);
            }
        }
    }

    fn us(&self, now: u64) -> u64 {
        now.saturating_sub(self.t0) / 1000
    }

    /// File `target` added, opened or closed at `now` (monotonic ns).
    pub fn file(&mut self, now: u64, target: u32, act: Action) {
        let t = self.us(now);
        let word = match act {
            Action::Add => "add",
            Action::Open => "open",
            Action::Close => "close",
        };
        let Some(name) = self.names.get(target as usize) else {
            return;
        };
        if self.failed.is_none() {
            if let Err(e) = writeln!(self.out, "{t} {name} {word}") {
                self.failed = Some(e);
            }
        }
    }

    /// Whether files are logged as opened at their first I/O (see
    /// [`IoLog::close_opened`]); off while an open set logs its own opens
    /// and closes.
    pub fn set_lazy(&mut self, lazy: bool) {
        self.lazy = lazy;
    }

    /// Log the closing of every file logged as opened at its first I/O, in
    /// target order, at `now`; a later I/O opens its file again.
    pub fn close_opened(&mut self, now: u64) {
        for t in 0..self.opened.len() {
            if std::mem::take(&mut self.opened[t]) {
                self.file(now, t as u32, Action::Close);
            }
        }
    }

    /// An I/O issued at `now`.
    #[inline]
    pub fn io(&mut self, now: u64, io: &IoDesc) {
        if self.lazy {
            let t = io.target as usize;
            if self.opened.len() <= t {
                self.opened.resize(t + 1, false);
            }
            if !self.opened[t] {
                self.opened[t] = true;
                self.file(now, io.target, Action::Open);
            }
        }
        let t = self.us(now);
        let word = match io.op {
            Op::Read => "read",
            Op::Write => "write",
            Op::Trim => "trim",
            Op::Fsync => "sync",
            Op::Fdatasync => "datasync",
            Op::SyncRange(_) => "sync_file_range",
        };
        let Some(name) = self.names.get(io.target as usize) else {
            return;
        };
        if self.failed.is_none() {
            if let Err(e) = writeln!(self.out, "{t} {name} {word} {} {}", io.offset, io.len) {
                self.failed = Some(e);
            }
        }
    }

    /// Flush the log; the first write error met, if any.
    pub fn finish(mut self) -> Result<(), String> {
        if let Some(e) = self.failed.take() {
            return Err(format!("write_iolog: writing {}: {e}", self.path));
        }
        self.out
            .flush()
            .map_err(|e| format!("write_iolog: writing {}: {e}", self.path))
    }
}
