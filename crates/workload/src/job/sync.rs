//! fio's sync and page-cache options: when written data is made durable
//! (`fdatasync`, `sync_file_range`, `end_fsync`, `fsync_on_close`, `sync`),
//! what happens to the files before the I/O (`invalidate`, `pre_read`,
//! `overwrite`, `create_fsync`, `create_only`, `fadvise_hint`). One family
//! ([`SyncOpts`]), declared here; the loop's periodic syncs are these and
//! `fsync`'s ([`crate::spec::options`]),
//! the end-of-job syncs run through the job's own engine ([`EndSync`]), as
//! fio's `fio_io_sync` does.

use drivelab_engine::io::{IoDesc, Op};
use drivelab_engine::ioloop::{After, Done, Driver, Next};

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::value::{parse_flag, parse_in};
use crate::SpecError;

/// fio's `sync`: writes are synchronous, data and metadata (`sync`, `1`)
/// or data only (`dsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// `none`, `0`: the default.
    #[default]
    None,
    /// `sync`, `1`: O_SYNC in fio; RWF_SYNC on every write here.
    Sync,
    /// `dsync`: O_DSYNC in fio; RWF_DSYNC on every write here.
    Dsync,
}

impl SyncMode {
    /// The per-write flags (pwritev2 / io_uring `rw_flags`) that make a
    /// write as synchronous as fio's open flag does: the kernel turns
    /// O_SYNC/O_DSYNC into the same per-write flags.
    pub fn write_flags(self) -> i32 {
        match self {
            SyncMode::None => 0,
            SyncMode::Sync => libc::RWF_SYNC,
            SyncMode::Dsync => libc::RWF_DSYNC,
        }
    }
}

/// The sync and cache family.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncOpts {
    /// fdatasync after every N writes (`fdatasync`); 0 = never.
    pub fdatasync: u32,
    /// fsync every written file when the job's I/O is done (`end_fsync`).
    pub end_fsync: bool,
    /// fsync a written file when it is closed (`fsync_on_close`).
    pub fsync_on_close: bool,
    /// Synchronous writes (`sync`).
    pub sync: SyncMode,
    /// Drop the files' cached pages before the I/O (`invalidate`); default
    /// on, as in fio, and off under `pre_read`.
    pub invalidate: bool,
    /// Read the files into the page cache before the I/O (`pre_read`).
    pub pre_read: bool,
    /// Lay out a written file before the job (`overwrite`), so writes
    /// replace data rather than fill holes.
    pub overwrite: bool,
    /// fsync a file after laying it out (`create_fsync`); default on.
    pub create_fsync: bool,
    /// Lay out the files, then do no I/O (`create_only`).
    pub create_only: bool,
    /// The access advice given for each file at open (`fadvise_hint`).
    pub fadvise: Fadvise,
    /// sync_file_range(2) over the range written since the last sync,
    /// after every N writes (`sync_file_range`): (its flags, N).
    pub sync_range: Option<(u32, u32)>,
}

/// fio's `fadvise_hint`: the posix_fadvise advice given at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fadvise {
    /// `0`: none.
    None,
    /// `1`, the default: random for random jobs, sequential otherwise.
    #[default]
    ByType,
    /// `random`.
    Random,
    /// `sequential`.
    Sequential,
}

impl Fadvise {
    /// The POSIX_FADV_* advice for a job (random or not); None: none.
    pub fn advice(self, random: bool) -> Option<i32> {
        match self {
            Fadvise::None => None,
            Fadvise::ByType if random => Some(libc::POSIX_FADV_RANDOM),
            Fadvise::ByType | Fadvise::Sequential => Some(libc::POSIX_FADV_SEQUENTIAL),
            Fadvise::Random => Some(libc::POSIX_FADV_RANDOM),
        }
    }
}

impl Default for SyncOpts {
    fn default() -> Self {
        SyncOpts {
            fdatasync: 0,
            end_fsync: false,
            fsync_on_close: false,
            sync: SyncMode::None,
            invalidate: true,
            pre_read: false,
            overwrite: false,
            create_fsync: true,
            create_only: false,
            fadvise: Fadvise::ByType,
            sync_range: None,
        }
    }
}

impl SyncOpts {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "fdatasync",
            [],
            Int,
            "0",
            "fdatasync (data only) after every N writes; where fsync's count falls on the same write, fsync is issued",
            0,
            u32::MAX as u64,
            "writes"
        ),
        opt!(
            "end_fsync",
            [],
            Bool,
            "0",
            "fsync every file the job wrote when its I/O is done (not under openfiles)"
        ),
        opt!(
            "fsync_on_close",
            [],
            Bool,
            "0",
            "fsync a file the job wrote when it is closed (drivelab closes each at the end of the job; not under openfiles)"
        ),
        opt!(
            "sync",
            [],
            Text,
            "none",
            "synchronous writes: none/0, sync/1 (data and metadata, O_SYNC), dsync (data, O_DSYNC); issued as RWF_SYNC/RWF_DSYNC on each write"
        ),
        opt!(
            "invalidate",
            [],
            Bool,
            "1",
            "drop the files' pages from the page cache before the I/O (posix_fadvise DONTNEED); off under pre_read"
        ),
        opt!(
            "pre_read",
            [],
            Bool,
            "0",
            "read the job's region of each file into the page cache before the I/O (buffered jobs: a direct read caches nothing); turns invalidate off"
        ),
        opt!(
            "overwrite",
            [],
            Bool,
            "0",
            "lay out a file the job writes before it starts, so writes overwrite data"
        ),
        opt!(
            "create_fsync",
            [],
            Bool,
            "1",
            "fsync a file after laying it out"
        ),
        opt!(
            "create_only",
            [],
            Bool,
            "0",
            "create and lay out the files, then end the job without I/O"
        ),
        opt!(
            "fadvise_hint",
            [],
            Text,
            "1",
            "posix_fadvise advice for each file at open: 0 (none), 1 (random for random jobs, else sequential), random or sequential"
        ),
        opt!(
            "sync_file_range",
            [],
            Text,
            "",
            "sync_file_range(2) over the range written since the last sync, every N writes: FLAG[,FLAG...][:N] with FLAG wait_before, write or wait_after (N defaults to 1; fsync and fdatasync take precedence)"
        ),
    ];

    /// The periodic syncs of the job loop, (every N writes, the
    /// operation), in fio's order of precedence: `fsync`'s, `fdatasync`'s,
    /// `sync_file_range`'s; those set (N > 0) only.
    pub fn periodic(&self, fsync: u32) -> Vec<(u32, Op)> {
        let range = self.sync_range.map(|(flags, n)| (n, Op::SyncRange(flags)));
        [(fsync, Op::Fsync), (self.fdatasync, Op::Fdatasync)]
            .into_iter()
            .chain(range)
            .filter(|&(n, _)| n > 0)
            .collect()
    }

    /// Whether the files a job wrote are fsynced when its I/O is done.
    pub fn at_end(&self) -> bool {
        self.end_fsync || self.fsync_on_close
    }

    /// Whether the page cache of the job's files is dropped before it runs.
    pub fn drops_cache(&self) -> bool {
        self.invalidate && !self.pre_read
    }
}

/// `sync_file_range`'s value, `FLAG[,FLAG...][:N]`: the ORed
/// SYNC_FILE_RANGE_* flags and N (1 when left out), as fio reads it.
fn parse_sync_range(key: &str, v: &str) -> Result<(u32, u32), SpecError> {
    let bad = || SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: "wait_before, write or wait_after, joined by commas, then :N writes (N > 0)"
            .to_string(),
    };
    let (names, every) = match v.trim().split_once(':') {
        Some((names, n)) => (names, n.trim().parse::<u32>().map_err(|_| bad())?),
        None => (v.trim(), 1),
    };
    let mut flags = 0;
    for name in names.split(',') {
        flags |= match name.trim().to_ascii_lowercase().as_str() {
            "wait_before" => libc::SYNC_FILE_RANGE_WAIT_BEFORE,
            "write" => libc::SYNC_FILE_RANGE_WRITE,
            "wait_after" => libc::SYNC_FILE_RANGE_WAIT_AFTER,
            _ => return Err(bad()),
        };
    }
    if every == 0 {
        return Err(bad());
    }
    Ok((flags, every))
}

impl OptionFamily for SyncOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        match key {
            "fdatasync" => self.fdatasync = parse_in(key, v, 0, u64::from(u32::MAX))? as u32,
            "end_fsync" => self.end_fsync = parse_flag(key, v)?,
            "fsync_on_close" => self.fsync_on_close = parse_flag(key, v)?,
            "invalidate" => self.invalidate = parse_flag(key, v)?,
            "pre_read" => self.pre_read = parse_flag(key, v)?,
            "overwrite" => self.overwrite = parse_flag(key, v)?,
            "create_fsync" => self.create_fsync = parse_flag(key, v)?,
            "create_only" => self.create_only = parse_flag(key, v)?,
            "sync_file_range" => self.sync_range = Some(parse_sync_range(key, v)?),
            "fadvise_hint" => {
                self.fadvise = match v.trim().to_ascii_lowercase().as_str() {
                    "0" => Fadvise::None,
                    "1" | "" => Fadvise::ByType,
                    "random" => Fadvise::Random,
                    "sequential" => Fadvise::Sequential,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "0, 1, random or sequential".to_string(),
                        })
                    }
                }
            }
            _ => {
                self.sync = match v.trim().to_ascii_lowercase().as_str() {
                    "none" | "0" => SyncMode::None,
                    "sync" | "1" | "" => SyncMode::Sync,
                    "dsync" => SyncMode::Dsync,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "none, 0, sync, 1 or dsync".to_string(),
                        })
                    }
                }
            }
        }
        Ok(())
    }
}

/// fio's end-of-job sync (`end_fsync`, `fsync_on_close`): one fsync of
/// each target the job wrote, one at a time, through the job's engine.
pub struct EndSync {
    /// The targets still to sync, last first.
    left: Vec<u32>,
    /// Syncs done.
    pub done: u64,
    /// The first failure: (target, errno).
    pub failed: Option<(u32, i32)>,
}

impl EndSync {
    /// The syncs of `targets` (indices into the job's targets).
    pub fn new(mut targets: Vec<u32>) -> EndSync {
        targets.reverse();
        EndSync {
            left: targets,
            done: 0,
            failed: None,
        }
    }
}

impl Driver for EndSync {
    const BUFFERS: bool = false;

    fn next(&mut self, _now: u64, inflight: u32, _buf: &mut [u8]) -> Next {
        if inflight > 0 {
            return Next::Idle;
        }
        match self.left.pop() {
            Some(target) => Next::Io {
                io: IoDesc {
                    target,
                    op: Op::Fsync,
                    offset: 0,
                    len: 0,
                },
                due: None,
                tag: 0,
            },
            None => Next::Done,
        }
    }

    fn complete(&mut self, done: &Done, _buf: &[u8]) -> After {
        self.done += 1;
        if done.result < 0 && self.failed.is_none() {
            self.failed = Some((done.io.target, -done.result));
        }
        After::Release
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_modes_and_the_periodic_sync_follow_fio() {
        let mut s = SyncOpts::default();
        assert!(s.drops_cache(), "invalidate is on by default, as in fio");
        s.set("pre_read", "1").unwrap();
        assert!(!s.drops_cache(), "pre_read turns invalidate off");
        for (v, m) in [
            ("none", SyncMode::None),
            ("0", SyncMode::None),
            ("sync", SyncMode::Sync),
            ("1", SyncMode::Sync),
            ("dsync", SyncMode::Dsync),
        ] {
            s.set("sync", v).unwrap();
            assert_eq!(s.sync, m, "{v}");
        }
        assert!(s.set("sync", "fsync").is_err());
        assert_eq!(s.periodic(0), vec![]);
        s.set("fdatasync", "8").unwrap();
        assert_eq!(s.periodic(0), vec![(8, Op::Fdatasync)]);
        assert_eq!(s.periodic(4), vec![(4, Op::Fsync), (8, Op::Fdatasync)]);
        let mut r = SyncOpts::default();
        r.set("sync_file_range", "wait_before,write:4").unwrap();
        let both = libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE;
        assert_eq!(r.periodic(0), vec![(4, Op::SyncRange(both))]);
        r.set("sync_file_range", "wait_after").unwrap();
        let after = libc::SYNC_FILE_RANGE_WAIT_AFTER;
        assert_eq!(r.periodic(0), vec![(1, Op::SyncRange(after))]);
        let first = r.periodic(2)[0];
        assert_eq!(first, (2, Op::Fsync), "fsync takes precedence");
        for bad in ["", "flush:4", "write:0", "write:x"] {
            assert!(r.set("sync_file_range", bad).is_err(), "{bad}");
        }
    }
}
