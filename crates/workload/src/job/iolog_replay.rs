//! fio's `read_iolog`: a job whose I/Os are those of an fio iolog
//! (version 2 or 3, as fio's `write_iolog` writes them), read through
//! the trace crate's fio reader, on the files the log names (or the one
//! `replay_redirect` names), in the log's order, at the log's times
//! unless `replay_no_stall`. The family ([`ReplayOpts`]) holds the
//! options, [`load`] reads a job's log when it is planned (so every I/O
//! is checked against its target before anything is written), and
//! [`Replay`] hands the job loop its I/Os when the replay crate's pacer
//! (the one `trace replay --mode gaps` follows) says each is due.
//!
//! As fio 3.33 does (iolog.c, `read_iolog`, `delay_since_ttime`,
//! `ipo_bytes_align`): an offset is divided by `replay_scale`, then
//! aligned down to `replay_align`; the time between two I/Os is the
//! log's, times 100 / `replay_time_scale`; `sync` and `datasync` are
//! flushes of their file. `replay_skip` leaves out the kinds it names
//! (fio 3.33 applies it to blktrace replays only).

use std::sync::Arc;

use drivelab_engine::ioloop::Next;
use drivelab_replay::pace::{Pace, Pacer};

pub use crate::job::types::Loaded;
use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::value::parse_flag;
use crate::SpecError;
use drivelab_engine::io::{IoDesc, Op};

/// The replay family.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOpts {
    /// The iolog to replay (`read_iolog`).
    pub log: Option<String>,
    /// `read_iolog_chunked`: fio reads the log as it goes rather than
    /// whole before the job.
    pub chunked: bool,
    /// Issue as fast as the depth allows, ignoring the log's times
    /// (`replay_no_stall`).
    pub no_stall: bool,
    /// Every I/O goes to this file or device (`replay_redirect`).
    pub redirect: Option<String>,
    /// Speed in percent of the log's (`replay_time_scale`, default 100).
    pub time_scale: u64,
    /// Offsets aligned down to this power of two (`replay_align`; 0: not).
    pub align: u64,
    /// Offsets divided by this (`replay_scale`; 0 or 1: not).
    pub scale: u64,
    /// Kinds left out (`replay_skip`): read, write, trim, sync.
    pub skip: [bool; 4],
}

impl Default for ReplayOpts {
    fn default() -> Self {
        ReplayOpts {
            log: None,
            chunked: false,
            no_stall: false,
            redirect: None,
            time_scale: 100,
            align: 0,
            scale: 0,
            skip: [false; 4],
        }
    }
}

impl ReplayOpts {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "read_iolog",
            [],
            Text,
            "",
            "replay this fio iolog (version 2 or 3, as write_iolog writes it): its reads, writes, trims and syncs, in order, on the files it names"
        ),
        opt!(
            "read_iolog_chunked",
            [],
            Bool,
            "0",
            "with read_iolog: fio reads the log as it goes instead of whole before the job; drivelab reads it whole when the job is planned (every I/O is checked against its target before anything is written), so the I/O is the same"
        ),
        opt!(
            "replay_no_stall",
            [],
            Bool,
            "0",
            "with read_iolog: issue the log's I/Os as fast as the depth allows, in order, ignoring its times"
        ),
        opt!(
            "replay_redirect",
            [],
            Text,
            "",
            "with read_iolog: replay every I/O on this file or device instead of the ones the log names"
        ),
        opt!(
            "replay_time_scale",
            [],
            Int,
            "100",
            "with read_iolog: replay at this percentage of the log's speed (200: the gaps halved)",
            1,
            u32::MAX as u64,
            "%"
        ),
        opt!(
            "replay_align",
            [],
            Int,
            "0",
            "with read_iolog: align each offset down to this power of two (after replay_scale)"
        ),
        opt!(
            "replay_scale",
            [],
            Int,
            "0",
            "with read_iolog: divide each offset by this"
        ),
        opt!(
            "replay_skip",
            [],
            Text,
            "",
            "with read_iolog: leave out these kinds of I/O, comma-separated: read, write, trim, sync"
        ),
    ];
}

impl OptionFamily for ReplayOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let text = || Some(v.trim().to_string()).filter(|s| !s.is_empty());
        let bad = |expect: &str| SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: expect.to_string(),
        };
        match key {
            "read_iolog" => self.log = text(),
            "read_iolog_chunked" => self.chunked = parse_flag(key, v)?,
            "replay_no_stall" => self.no_stall = parse_flag(key, v)?,
            "replay_redirect" => self.redirect = text(),
            "replay_time_scale" => {
                self.time_scale = crate::spec::decl::parse_in(Self::OPTIONS, key, v)?
            }
            "replay_align" => {
                let a = crate::spec::value::parse_in(key, v, 0, 1 << 40)?;
                if a != 0 && !a.is_power_of_two() {
                    return Err(bad("a power of two"));
                }
                self.align = a;
            }
            "replay_scale" => self.scale = crate::spec::value::parse_in(key, v, 0, u64::MAX)?,
            _ => {
                let mut skip = [false; 4];
                for w in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                    let i = ["read", "write", "trim", "sync"]
                        .iter()
                        .position(|k| k.eq_ignore_ascii_case(w))
                        .ok_or_else(|| bad("a comma-separated list of read, write, trim, sync"))?;
                    skip[i] = true;
                }
                self.skip = skip;
            }
        }
        Ok(())
    }
}

fn log_error(path: &str, why: impl std::fmt::Display) -> SpecError {
    SpecError::Invalid(format!("read_iolog {path}: {why}"))
}

/// Read the job's `read_iolog`, if it has one.
pub fn load(o: &ReplayOpts) -> Result<Option<Arc<Loaded>>, SpecError> {
    let Some(path) = o.log.as_deref() else {
        return Ok(None);
    };
    // A blktrace binary file, as fio tells one: by its first event's magic.
    let mut head = [0u8; 4];
    let read = drivelab_device::input::open(
        std::path::Path::new(path),
        drivelab_device::input::Kind::Trace,
    )
    .and_then(|mut f| {
        std::io::Read::read(&mut f, &mut head).map_err(|e| drivelab_device::input::InputError::Io {
            what: "trace",
            path: path.into(),
            source: e,
        })
    })
    .map_err(|e| log_error(path, e))?;
    if crate::job::blktrace_replay::is_blktrace(&head[..read]) {
        let shape = crate::job::blktrace_replay::Shape {
            redirect: o.redirect.as_deref(),
            scale: o.scale,
            align: o.align,
            time_scale: o.time_scale,
            skip: o.skip,
        };
        return crate::job::blktrace_replay::load(path, &shape).map(|l| Some(Arc::new(l)));
    }
    let (_, mut reader) = drivelab_trace::open_file(
        std::path::Path::new(path),
        Some(drivelab_trace::Format::Fio),
        drivelab_trace::ReadOptions::default(),
    )
    .map_err(|e| log_error(path, e))?;
    let mut ios = Vec::new();
    let mut first = None;
    let (mut writes, mut trims) = (false, false);
    for r in reader.by_ref() {
        let r = r.map_err(|e| log_error(path, e))?;
        let (op, kind) = match r.op {
            drivelab_trace::Op::Read => (Op::Read, 0),
            drivelab_trace::Op::Write => (Op::Write, 1),
            drivelab_trace::Op::Trim => (Op::Trim, 2),
            drivelab_trace::Op::Flush => (Op::Fsync, 3),
        };
        if o.skip[kind] {
            continue;
        }
        let mut offset = if o.scale > 1 {
            r.offset / o.scale
        } else {
            r.offset
        };
        if o.align > 0 {
            offset &= !(o.align - 1);
        }
        let len = u32::try_from(r.len).map_err(|_| {
            log_error(
                path,
                format!(
                    "an I/O of {} bytes at offset {}: at most 4 GiB",
                    r.len, r.offset
                ),
            )
        })?;
        let t0 = *first.get_or_insert(r.issue_ns);
        let due = r.issue_ns.saturating_sub(t0) as u128 * 100 / u128::from(o.time_scale.max(1));
        writes |= matches!(op, Op::Write | Op::Trim);
        trims |= op == Op::Trim;
        let target = if o.redirect.is_some() { 0 } else { r.device };
        ios.push((
            IoDesc {
                target,
                op,
                offset,
                len,
            },
            u64::try_from(due).unwrap_or(u64::MAX),
        ));
    }
    let files = match &o.redirect {
        Some(r) => vec![r.clone()],
        None => reader.devices().into_iter().map(|d| d.name).collect(),
    };
    if ios.is_empty() || files.is_empty() {
        return Err(log_error(path, "no I/O to replay"));
    }
    Ok(Some(Arc::new(Loaded {
        path: path.to_string(),
        files,
        ios,
        writes,
        trims,
        depth: None,
    })))
}

/// Check that each I/O of `log` lies inside its target's region (`ends`:
/// the end of each file's region, in the order of its `files`).
/// How far each of the log's files must reach for its I/Os, as fio 3.33
/// replays them: `files` gives each file's size now and whether it is a
/// regular file (which the log's writes may extend, as fio's do: fio
/// creates a missing file and writes past its end) or a block device
/// (which ends where it ends). Taken in log order, a read or trim past
/// the file's end at that point of the log is refused, since fio fails
/// it (a short read, EIO), as is anything past a device's end.
pub fn file_ends(log: &Loaded, files: &[(u64, bool)]) -> Result<Vec<u64>, SpecError> {
    let mut ends: Vec<u64> = files.iter().map(|f| f.0).collect();
    for (n, (io, _)) in log.ios.iter().enumerate() {
        let t = io.target as usize;
        let (Some(end), Some(&(_, grows))) = (ends.get_mut(t), files.get(t)) else {
            continue;
        };
        let last = io.offset + u64::from(io.len);
        if last <= *end || io.op == Op::Fsync {
            continue;
        }
        let file = &log.files[t];
        if io.op == Op::Write && grows {
            *end = last;
            continue;
        }
        let what = match io.op {
            Op::Read => "reads",
            Op::Write => "writes",
            _ => "trims",
        };
        let why = if grows {
            "which fio fails (a short transfer); replay it where the file holds that much, or scale it with replay_scale"
        } else {
            "replay it on a larger device, or scale it with replay_scale"
        };
        return Err(log_error(
            &log.path,
            format!(
                "I/O {} {what} {} bytes at offset {}, past the end of {file} ({} bytes at that point of the log), {why}",
                n + 1,
                io.len,
                io.offset,
                *end
            ),
        ));
    }
    Ok(ends)
}

pub fn check_fits(log: &Loaded, ends: &[u64]) -> Result<(), SpecError> {
    for (n, (io, _)) in log.ios.iter().enumerate() {
        let end = ends.get(io.target as usize).copied().unwrap_or(0);
        if io.offset + u64::from(io.len) > end {
            return Err(log_error(
                    &log.path,
                    format!(
                        "I/O {} ({} bytes at offset {}) ends past the end of {} ({end} bytes); replay it on a larger target, or scale it with replay_scale",
                        n + 1,
                        io.len,
                        io.offset,
                        log.files[io.target as usize]
                    ),
                ));
        }
    }
    Ok(())
}

/// The job loop's side of a replay: the next I/O of the log, when due.
/// A log's I/Os handed to the job loop in order, each when the replay
/// crate's [`Pacer`] says it is due: fio's gap timing (each I/O at least
/// the log's gap, already scaled by `replay_time_scale`, after the last
/// one issued), or at once with `replay_no_stall`.
#[derive(Debug, Clone)]
pub struct Replay {
    log: Arc<Loaded>,
    next: usize,
    pacer: Pacer,
}

impl Replay {
    /// The replay of `log` from its first I/O.
    pub fn new(log: Arc<Loaded>, no_stall: bool) -> Replay {
        let pace = if no_stall {
            Pace::NoStall
        } else {
            Pace::Gaps { speed: 1.0 }
        };
        Replay {
            log,
            next: 0,
            pacer: Pacer::new(pace),
        }
    }

    /// The log replayed.
    pub fn log(&self) -> &Loaded {
        &self.log
    }

    /// The next I/O if it is due at `now`; else when to ask again, or
    /// that the log is done.
    #[inline]
    pub fn next(&mut self, now: u64) -> Result<IoDesc, Next> {
        let Some(&(io, time)) = self.log.ios.get(self.next) else {
            return Err(Next::Done);
        };
        let due = self.pacer.due(time, now);
        if due > now {
            return Err(Next::At(due));
        }
        self.pacer.issued(time, now);
        self.next += 1;
        Ok(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(text: &str, set: &[(&'static str, &str)]) -> Result<Arc<Loaded>, String> {
        let dir = std::env::temp_dir().join(format!("dl-iolog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{}.log", set.len()));
        std::fs::write(&p, text).unwrap();
        let mut o = ReplayOpts::default();
        o.set("read_iolog", p.to_str().unwrap()).unwrap();
        for (k, v) in set {
            o.set(k, v).unwrap();
        }
        let r = load(&o).map(|l| l.unwrap()).map_err(|e| e.to_string());
        let _ = std::fs::remove_dir_all(&dir);
        r
    }

    const V3: &str = "fio version 3 iolog\n0 /a add\n0 /b add\n0 /a open\n0 /b open\n\
        10 /a write 8192 4096\n1010 /b read 12288 512\n2010 /a sync 0 0\n3010 /a trim 4096 4096\n";

    #[test]
    fn a_v3_log_gives_files_ios_and_times_as_fio_reads_it() {
        let l = loaded(V3, &[]).unwrap();
        assert_eq!(l.files, ["/a", "/b"]);
        let got: Vec<_> = l
            .ios
            .iter()
            .map(|(io, due)| (io.target, io.op, io.offset, io.len, *due))
            .collect();
        assert_eq!(
            got,
            [
                (0, Op::Write, 8192, 4096, 0),
                (1, Op::Read, 12288, 512, 1_000_000),
                (0, Op::Fsync, 0, 0, 2_000_000),
                (0, Op::Trim, 4096, 4096, 3_000_000),
            ]
        );
        assert!(l.writes && l.trims);
    }

    #[test]
    fn scale_align_time_scale_redirect_and_skip_change_what_fio_says() {
        let l = loaded(
            V3,
            &[
                ("replay_scale", "3"),
                ("replay_align", "1024"),
                ("replay_time_scale", "200"),
                ("replay_redirect", "/c"),
                ("replay_skip", "sync,trim"),
            ],
        )
        .unwrap();
        assert_eq!(l.files, ["/c"]);
        let got: Vec<_> = l
            .ios
            .iter()
            .map(|(io, due)| (io.target, io.op, io.offset, *due))
            .collect();
        // 8192/3 = 2730 -> 2048; 12288/3 = 4096.
        assert_eq!(got, [(0, Op::Write, 2048, 0), (0, Op::Read, 4096, 500_000)]);
        assert!(l.writes && !l.trims);
        assert!(loaded("fio version 2 iolog\n/a add\n", &[]).is_err());
        let mut o = ReplayOpts::default();
        assert!(o.set("replay_align", "3000").is_err());
        assert!(o.set("replay_skip", "reads").is_err());
    }

    #[test]
    fn the_replay_waits_for_each_io_unless_told_not_to() {
        let l = loaded(V3, &[]).unwrap();
        let mut r = Replay::new(l.clone(), false);
        assert!(r.next(100).is_ok());
        assert!(matches!(r.next(200), Err(Next::At(1_000_100))));
        // Handed out late: the next gap counts from then.
        assert!(r.next(1_000_300).is_ok());
        assert!(matches!(r.next(1_000_400), Err(Next::At(2_000_300))));
        let mut r = Replay::new(l, true);
        for _ in 0..4 {
            assert!(r.next(5).is_ok());
        }
        assert!(matches!(r.next(5), Err(Next::Done)));
    }
}
