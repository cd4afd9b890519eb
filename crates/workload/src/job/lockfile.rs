//! fio's `lockfile`: jobs sharing a file serialise their I/O to it, one
//! at a time (`exclusive`), or readers together and a writer alone
//! (`readwrite`). As fio 3.33 (filesetup.c `lock_file`, ioengines.c
//! `td_io_prep` / `td_io_queue`), a job takes the file's lock when an I/O
//! is prepared and gives it up once the I/O is submitted: here, when the
//! job loop hands the I/O out ([`Held::take`]) and at the start of the
//! loop's next turn, after the engine's commit ([`Held::release`]). On a
//! synchronous engine (psync) the commit does the I/O, so the lock covers
//! it, as in fio; on io_uring the commit also waits for a completion, so
//! the lock is held until one is in.
//!
//! A job waits for a lock only while it holds none; a lock it cannot have
//! while holding others ends its turn instead, so two jobs never wait on
//! each other. The locks are the process's, one per file path, shared by
//! every job of the run ([`lock_for`]).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};

use drivelab_engine::io::Op;

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::SpecError;

/// How a job locks the files it does I/O to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockMode {
    /// No locking (fio's default).
    #[default]
    None,
    /// One job's I/O at a time.
    Exclusive,
    /// Reads together, a write alone.
    ReadWrite,
}

/// The lockfile family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LockOpts {
    /// `lockfile`.
    pub mode: LockMode,
}

impl LockOpts {
    /// The family's options (fio's names).
    pub const OPTIONS: &'static [OptionDecl] = &[opt!(
        "lockfile",
        [],
        Text,
        "none",
        "serialise I/O to a file the run's jobs share: none, exclusive (one I/O at a time) or readwrite (reads together, writes alone); the lock is held from an I/O's preparation until it is submitted"
    )];
}

impl OptionFamily for LockOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        self.mode = match v.trim().to_ascii_lowercase().as_str() {
            "none" => LockMode::None,
            "exclusive" => LockMode::Exclusive,
            "readwrite" => LockMode::ReadWrite,
            _ => {
                return Err(SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect: "none, exclusive or readwrite".to_string(),
                })
            }
        };
        Ok(())
    }
}

/// One file's lock: readers holding it, and whether a writer does.
#[derive(Debug, Default)]
pub struct FileLock {
    state: Mutex<(u32, bool)>,
    freed: Condvar,
}

impl FileLock {
    /// Take it (`write`: alone), waiting if `wait`; whether it was taken.
    fn acquire(&self, write: bool, wait: bool) -> bool {
        // The state stays consistent even if a holder panicked.
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let free = if write { s.0 == 0 && !s.1 } else { !s.1 };
            if free {
                if write {
                    s.1 = true;
                } else {
                    s.0 += 1;
                }
                return true;
            }
            if !wait {
                return false;
            }
            s = self.freed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn release(&self, write: bool) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if write {
            s.1 = false;
        } else {
            s.0 = s.0.saturating_sub(1);
        }
        drop(s);
        self.freed.notify_all();
    }
}

/// The lock of file `path`, shared by every job of the process that
/// names it.
pub fn lock_for(path: &str) -> Arc<FileLock> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Weak<FileLock>>>> = OnceLock::new();
    let mut m = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    m.retain(|_, w| w.strong_count() > 0);
    if let Some(l) = m.get(path).and_then(Weak::upgrade) {
        return l;
    }
    let l = Arc::new(FileLock::default());
    m.insert(path.to_string(), Arc::downgrade(&l));
    l
}

/// A job's locks: one per target, and those it holds this turn.
#[derive(Debug)]
pub struct Held {
    mode: LockMode,
    files: Vec<Arc<FileLock>>,
    held: Vec<(usize, bool)>,
}

impl Held {
    /// The locks of a job under `mode` on the targets named `paths`
    /// (None: no locking).
    pub fn new(mode: LockMode, paths: &[String]) -> Option<Held> {
        (mode != LockMode::None).then(|| Held {
            mode,
            files: paths.iter().map(|p| lock_for(p)).collect(),
            held: Vec::new(),
        })
    }

    /// Take the lock of `target` for an I/O `op`: waiting for it when the
    /// job holds none, else false if another job has it.
    pub fn take(&mut self, target: u32, op: Op) -> bool {
        let t = target as usize;
        let Some(lock) = self.files.get(t) else {
            return true;
        };
        let write = self.mode == LockMode::Exclusive || op != Op::Read;
        // Held this turn already, strongly enough: the job's own I/Os of
        // one turn go together (fio gives the lock up after each queued
        // one, so a job never waits for itself).
        if self.held.iter().any(|&(h, w)| h == t && (w || !write)) {
            return true;
        }
        if !lock.acquire(write, self.held.is_empty()) {
            return false;
        }
        self.held.push((t, write));
        true
    }

    /// Give up every lock taken since the last release.
    pub fn release(&mut self) {
        for (t, write) in self.held.drain(..) {
            self.files[t].release(write);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_admits_one_and_readwrite_many_readers() {
        let l = FileLock::default();
        assert!(l.acquire(true, false));
        assert!(!l.acquire(true, false) && !l.acquire(false, false));
        l.release(true);
        assert!(l.acquire(false, false) && l.acquire(false, false));
        assert!(!l.acquire(true, false));
        l.release(false);
        l.release(false);
        assert!(l.acquire(true, false));
        l.release(true);
    }

    #[test]
    fn a_job_holding_a_lock_does_not_wait_for_another() {
        let paths = vec![
            "/lockfile-test/a".to_string(),
            "/lockfile-test/b".to_string(),
        ];
        let mut one = Held::new(LockMode::Exclusive, &paths).unwrap();
        let mut two = Held::new(LockMode::Exclusive, &paths).unwrap();
        assert!(one.take(0, Op::Write));
        assert!(two.take(1, Op::Write));
        // Each holds one; neither waits for the other's.
        assert!(!one.take(1, Op::Read));
        assert!(!two.take(0, Op::Read));
        two.release();
        assert!(one.take(1, Op::Read));
        // A waiter holding nothing is woken by the release.
        let waiter = std::thread::spawn(move || {
            let ok = two.take(0, Op::Write);
            two.release();
            ok
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        one.release();
        assert!(waiter.join().unwrap());
        assert!(Held::new(LockMode::None, &paths).is_none());
    }
}
