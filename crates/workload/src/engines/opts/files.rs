//! The options of fio's multi-file jobs and filesystem engines
//! (`nrfiles`, `filesize`, `file_service_type`, `ioengine=filecreate`, …);
//! what they do is in [`crate::engines::files`].

use crate::spec::decl::{opt, OptionDecl};
use drivelab_device::claim::{Prealloc, SetKind};
use drivelab_engine::fileops::{FdOp, PathOp, StatKind};

use crate::spec::value::parse_flag;
use crate::SpecError;

/// Which file of a job the next I/O goes to (`file_service_type`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Service {
    /// In turn (fio's default).
    RoundRobin,
    /// One file to its end, then the next.
    Sequential,
    /// A uniformly random file.
    Random,
    /// Zipf-distributed over the files, with θ.
    Zipf(f64),
    /// Pareto-distributed, with h.
    Pareto(f64),
    /// Normal around the middle file, σ in percent of the files.
    Normal(f64),
}

/// `file_service_type`: the rule and the I/Os issued before switching.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileService {
    /// The rule.
    pub kind: Service,
    /// I/Os to a file before the next pick (`:N`, default 1).
    pub nr: u32,
}

impl Default for FileService {
    fn default() -> FileService {
        FileService {
            kind: Service::RoundRobin,
            nr: 1,
        }
    }
}

/// A filesystem engine a job asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileEngine {
    /// One operation per file (filecreate, filestat, filedelete, dir…).
    Path(PathOp, SetKind),
    /// One call per I/O on the file's descriptor (ftruncate, falloc).
    Fd(FdOp),
    /// Each write moves a donor's blocks into the file (e4defrag;
    /// [`crate::engines::e4defrag`]).
    Defrag,
}

impl FileEngine {
    /// fio's name.
    pub fn name(self) -> &'static str {
        use FileEngine::*;
        match self {
            Path(PathOp::Create, SetKind::Files) => "filecreate",
            Path(PathOp::Stat(_), SetKind::Files) => "filestat",
            Path(PathOp::Delete, SetKind::Files) => "filedelete",
            Path(PathOp::Create, SetKind::Dirs) => "dircreate",
            Path(PathOp::Stat(_), SetKind::Dirs) => "dirstat",
            Path(PathOp::Delete, SetKind::Dirs) => "dirdelete",
            Fd(FdOp::Ftruncate) => "ftruncate",
            Fd(FdOp::Falloc) => "falloc",
            Defrag => "e4defrag",
        }
    }

    /// The paths must exist (laid out before the run) for this engine.
    pub fn needs_existing(self) -> bool {
        matches!(self, FileEngine::Path(op, _) if op != PathOp::Create)
    }
}

/// The multi-file options of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct FileOptions {
    /// Files per job when fio names them (`nrfiles`, `nr_files`); default 1.
    pub nrfiles: u32,
    /// Files open at once (`openfiles`; default: all of the job's). Below
    /// the job's files, a psync or io_uring job opens and closes them as
    /// fio does ([`crate::job::openfiles`]).
    pub openfiles: Option<u32>,
    /// `file_service_type`.
    pub service: FileService,
    /// fio's `create_on_open`: files are created when first opened (during
    /// the run, not in the set-up); for filecreate/dircreate that is the
    /// measured operation.
    pub create_on_open: bool,
    /// fio's `write_iolog`: where the job logs its files' opens and
    /// closes and every I/O ([`crate::run::iolog`]).
    pub iolog: Option<String>,
    /// Remove the job's files when it ends (`unlink`).
    pub unlink: bool,
    /// Remove them after each loop (`unlink_each_loop`).
    pub unlink_each_loop: bool,
    /// How files get their blocks (`fallocate`); default native.
    pub fallocate: Prealloc,
    /// Which lookup filestat/dirstat time (`stat_type`).
    pub stat_type: StatKind,
    /// `filesize=lo-hi`: each file's size drawn in the range.
    pub filesize_range: Option<(u64, u64)>,
    /// A filesystem engine (`ioengine=filecreate` and the like).
    pub engine: Option<FileEngine>,
    /// Files may be created (`allow_file_create`); default on.
    pub allow_create: bool,
    /// A file's I/O starts at its end (`file_append`).
    pub append: bool,
}

impl Default for FileOptions {
    fn default() -> FileOptions {
        FileOptions {
            nrfiles: 1,
            openfiles: None,
            service: FileService::default(),
            create_on_open: false,
            iolog: None,
            unlink: false,
            unlink_each_loop: false,
            fallocate: Prealloc::Native,
            stat_type: StatKind::Stat,
            filesize_range: None,
            engine: None,
            allow_create: true,
            append: false,
        }
    }
}

fn bad(key: &str, v: &str, expect: &str) -> SpecError {
    SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: expect.to_string(),
    }
}

fn count(key: &str, v: &str, max: u64) -> Result<u32, SpecError> {
    match v.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n as u32),
        _ => Err(bad(key, v, &format!("a whole number from 1 to {max}"))),
    }
}

/// The most files one job may name (`nrfiles`).
pub const MAX_FILES: u64 = 1 << 24;

impl FileOptions {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "allow_file_create",
            [],
            Bool,
            "1",
            "0: a file that does not exist is an error instead of being created"
        ),
        opt!(
            "file_append",
            [],
            Bool,
            "0",
            "start a file's I/O at its end (its size before the run), not at offset"
        ),
        opt!(
            "nrfiles",
            ["nr_files"],
            Int,
            "1",
            "files per job when fio names them ($jobname.$jobnum.$filenum in directory)",
            1,
            crate::engines::opts::files::MAX_FILES,
            "files"
        ),
        opt!(
            "openfiles",
            [],
            Int,
            "nrfiles",
            "files open at once: below nrfiles, psync/io_uring jobs open and close files as file_service_type moves (filesystem engines open none)",
            1,
            crate::engines::opts::files::MAX_FILES,
            "files"
        ),
        opt!(
            "file_service_type",
            [],
            Text,
            "roundrobin",
            "file of each I/O: roundrobin, sequential, random (each :N I/Os per pick), zipf:θ, pareto:h, normal:σ"
        ),
        opt!(
            "create_on_open",
            [],
            Bool,
            "0",
            "create files when first opened, during the run (filecreate/dircreate: the measured operation)"
        ),
        opt!(
            "write_iolog",
            [],
            Text,
            "",
            "log every file add/open/close and I/O to this file (fio's iolog v3)"
        ),
        opt!(
            "unlink",
            [],
            Bool,
            "0",
            "remove the job's files when it ends"
        ),
        opt!(
            "unlink_each_loop",
            [],
            Bool,
            "0",
            "remove the job's files after each loop (with loops=1: when it ends)"
        ),
        opt!(
            "fallocate",
            [],
            Text,
            "native",
            "how created files get their blocks: none, native, posix, keep, truncate, 0, 1"
        ),
        opt!(
            "stat_type",
            [],
            Text,
            "stat",
            "filestat/dirstat: the lookup timed: stat, lstat or statx"
        ),
    ];
}

impl crate::spec::family::OptionFamily for FileOptions {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let t = v.trim();
        match key {
            "nrfiles" => self.nrfiles = count(key, t, MAX_FILES)?,
            "openfiles" => self.openfiles = Some(count(key, t, MAX_FILES)?),
            "create_on_open" => self.create_on_open = parse_flag(key, t)?,
            "allow_file_create" => self.allow_create = parse_flag(key, t)?,
            "file_append" => self.append = parse_flag(key, t)?,
            "write_iolog" => {
                if t.is_empty() {
                    return Err(bad(key, v, "a file name"));
                }
                self.iolog = Some(t.to_string());
            }
            "unlink" => self.unlink = parse_flag(key, t)?,
            "unlink_each_loop" => self.unlink_each_loop = parse_flag(key, t)?,
            "file_service_type" => self.service = parse_service(key, t)?,
            "fallocate" => {
                self.fallocate = match t.to_ascii_lowercase().as_str() {
                    "none" | "0" => Prealloc::None,
                    "native" | "posix" | "1" => Prealloc::Native,
                    "keep" => Prealloc::Keep,
                    "truncate" => Prealloc::Truncate,
                    _ => return Err(bad(key, v, "none, native, posix, keep, truncate, 0 or 1")),
                }
            }
            "stat_type" => {
                self.stat_type = match t.to_ascii_lowercase().as_str() {
                    "stat" => StatKind::Stat,
                    "lstat" => StatKind::Lstat,
                    "statx" => StatKind::Statx,
                    _ => return Err(bad(key, v, "stat, lstat or statx")),
                };
                self.apply_stat_type();
            }
            _ => return Err(SpecError::Invalid(format!("{key} is not a file option"))),
        }
        Ok(())
    }
}

impl FileOptions {
    /// Set the filesystem engine fio's `name` stands for.
    pub fn set_engine(&mut self, e: FileEngine) {
        self.engine = Some(e);
        self.apply_stat_type();
    }

    fn apply_stat_type(&mut self) {
        if let Some(FileEngine::Path(PathOp::Stat(k), _)) = &mut self.engine {
            *k = self.stat_type;
        }
    }
}

pub(crate) fn parse_service(key: &str, v: &str) -> Result<FileService, SpecError> {
    let expect = "random, roundrobin or sequential (each with an optional :N, I/Os per pick), zipf:θ, pareto:h, normal:σ or gauss:σ";
    let (name, arg) = match v.split_once(':') {
        Some((n, a)) => (n.trim().to_ascii_lowercase(), Some(a.trim())),
        None => (v.trim().to_ascii_lowercase(), None),
    };
    let nr = |a: Option<&str>| match a {
        None => Ok(1),
        Some(a) => count(key, a, u64::from(u32::MAX)),
    };
    let real = |a: Option<&str>, default: f64, ok: fn(f64) -> bool| match a {
        None => Ok(default),
        Some(a) => a
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && ok(*x))
            .ok_or_else(|| bad(key, v, expect)),
    };
    let kind = match name.as_str() {
        "roundrobin" => Service::RoundRobin,
        "sequential" => Service::Sequential,
        "random" => Service::Random,
        // fio's defaults: zipf 1.1, pareto 0.2, normal 0 (taken as 10%).
        "zipf" => Service::Zipf(real(arg, 1.1, |x| x > 0.0 && x != 1.0)?),
        "pareto" => Service::Pareto(real(arg, 0.2, |x| x > 0.0 && x < 1.0)?),
        "normal" | "gauss" => Service::Normal(real(arg, 10.0, |x| (0.0..=100.0).contains(&x))?),
        _ => return Err(bad(key, v, expect)),
    };
    let nr = match kind {
        Service::RoundRobin | Service::Sequential | Service::Random => nr(arg)?,
        _ => 1,
    };
    Ok(FileService { kind, nr })
}

/// Parse fio's `filesize`: a size, or a `lo-hi` range.
pub fn parse_filesize(key: &str, v: &str) -> Result<(u64, Option<(u64, u64)>), SpecError> {
    let expect = "a size above 0 (e.g. 4k) or a range lo-hi (e.g. 4k-64k)";
    let size = |s: &str| {
        crate::parse_bytes(key, s.trim())
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| bad(key, v, expect))
    };
    match v.split_once('-') {
        None => Ok((size(v)?, None)),
        Some((lo, hi)) => {
            let (lo, hi) = (size(lo)?, size(hi)?);
            if lo > hi {
                return Err(bad(key, v, expect));
            }
            Ok((hi, (lo < hi).then_some((lo, hi))))
        }
    }
}
