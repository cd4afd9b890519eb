//! The job specification and its option setters.

use std::time::Duration;

use crate::options::{lookup, OptionKind};
use crate::size::{parse_bytes, parse_duration, parse_size_spec, SizeSpec};
use crate::SpecError;

/// Default interval of the per-interval series (`log_interval`): 1 s.
pub const DEFAULT_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// fio's `rw` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Sequential mixed reads and writes (`rw`, `readwrite`).
    ReadWrite,
    /// Random mixed reads and writes.
    RandRw,
    /// Sequential trims (discards).
    Trim,
    /// Random trims.
    RandTrim,
}

impl RwMode {
    /// Parse fio's names.
    pub fn parse(s: &str) -> Option<RwMode> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "rw" | "readwrite" => RwMode::ReadWrite,
            "randrw" => RwMode::RandRw,
            "trim" => RwMode::Trim,
            "randtrim" => RwMode::RandTrim,
            _ => return None,
        })
    }

    /// fio's canonical name.
    pub fn name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
            RwMode::Trim => "trim",
            RwMode::RandTrim => "randtrim",
        }
    }

    /// Whether accesses are random (before `percentage_random`).
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw | RwMode::RandTrim
        )
    }

    /// Share of reads in percent implied by the mode, given `rwmixread`.
    pub fn read_pct(self, rwmixread: u8) -> u8 {
        match self {
            RwMode::Read | RwMode::RandRead => 100,
            RwMode::ReadWrite | RwMode::RandRw => rwmixread,
            _ => 0,
        }
    }

    /// What the non-read direction is.
    pub fn write_kind(self) -> WriteKind {
        match self {
            RwMode::Trim | RwMode::RandTrim => WriteKind::Trim,
            _ => WriteKind::Write,
        }
    }
}

/// Whether the non-read share of a job writes or trims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Data writes.
    Write,
    /// Discards (TRIM / UNMAP / deallocate).
    Trim,
}

/// How random offsets are distributed over the range (`random_distribution`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Uniform.
    Random,
    /// Zipf with exponent θ (> 0, ≠ 1 not required).
    Zipf(f64),
    /// Pareto with shape h (0 < h < 1, as fio).
    Pareto(f64),
    /// Normal around the middle of the range, σ in percent of the range.
    Normal(f64),
}

impl Distribution {
    fn parse(key: &str, s: &str) -> Result<Distribution, SpecError> {
        let bad = |expect: &str| SpecError::BadValue {
            key: key.to_string(),
            value: s.to_string(),
            expect: expect.to_string(),
        };
        let t = s.trim().to_ascii_lowercase();
        let (name, arg) = match t.split_once(':') {
            Some((n, a)) => (n.to_string(), Some(a.to_string())),
            None => (t.clone(), None),
        };
        let num = |a: Option<String>, what: &str| -> Result<f64, SpecError> {
            a.ok_or_else(|| bad(what))?
                .parse::<f64>()
                .map_err(|_| bad(what))
        };
        Ok(match name.as_str() {
            "random" => Distribution::Random,
            "zipf" => {
                let v = num(arg, "zipf:THETA with THETA > 0, e.g. zipf:1.2")?;
                if !(v > 0.0 && v.is_finite()) {
                    return Err(bad("zipf:THETA with THETA > 0, e.g. zipf:1.2"));
                }
                Distribution::Zipf(v)
            }
            "pareto" => {
                let v = num(arg, "pareto:H with 0 < H < 1, e.g. pareto:0.9")?;
                if !(v > 0.0 && v < 1.0) {
                    return Err(bad("pareto:H with 0 < H < 1, e.g. pareto:0.9"));
                }
                Distribution::Pareto(v)
            }
            "normal" | "gauss" => {
                let v = match arg {
                    None => 10.0,
                    a => num(a, "normal:SIGMA_PERCENT, e.g. normal:10")?,
                };
                if !(v > 0.0 && v <= 100.0) {
                    return Err(bad("normal:SIGMA_PERCENT with 0 < SIGMA <= 100"));
                }
                Distribution::Normal(v)
            }
            _ => return Err(bad("random, zipf:THETA, pareto:H or normal[:SIGMA%]")),
        })
    }
}

/// The I/O engine (`ioengine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// Linux io_uring with registered buffers and files (default).
    IoUring,
    /// pread/pwrite, one I/O at a time per job.
    Psync,
    /// No I/O at all: measures the pipeline.
    Null,
}

impl EngineKind {
    /// The name fio uses.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::Psync => "psync",
            EngineKind::Null => "null",
        }
    }
}

/// One line of an access specification (Iometer's model, which fio's
/// `bssplit` + `rwmixread` + `percentage_random` is a special case of).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccessLine {
    /// Transfer size in bytes.
    pub size: u64,
    /// Share of all accesses, in percent (the lines add up to 100).
    pub weight: u32,
    /// Share of this line's accesses that read, in percent.
    pub read_pct: u8,
    /// Share of this line's accesses at random offsets, in percent.
    pub random_pct: u8,
}

/// One job: what to do to which targets, for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Job name (`name`); default "drivelab".
    pub name: String,
    /// Targets (`filename`, repeatable or `:`-separated).
    pub filenames: Vec<String>,
    /// Access pattern (`rw`); default read.
    pub rw: RwMode,
    /// Block size in bytes (`bs`); default 4 KiB.
    pub bs: u64,
    /// Size mix (`bssplit`): (bytes, weight); overrides `bs` when set.
    pub bssplit: Vec<(u64, u32)>,
    /// Read share for mixed modes in percent (`rwmixread`); default 50.
    pub rwmixread: u8,
    /// Share of random accesses for random modes (`percentage_random`); default 100.
    pub percentage_random: u8,
    /// Access lines set by a preset; when set they replace rw/bs/bssplit/rwmixread.
    pub access: Option<Vec<AccessLine>>,
    /// Outstanding I/Os per job (`iodepth`); default 1.
    pub iodepth: u32,
    /// Number of clones of this job (`numjobs`); default 1, at most
    /// [`MAX_TOTAL_JOBS`] (which also bounds the sum over all jobs of a run).
    pub numjobs: u32,
    /// Run time limit (`runtime`).
    pub runtime: Option<Duration>,
    /// Keep running for `runtime` even when `size` is done (`time_based`).
    pub time_based: bool,
    /// Region size per job, split over the targets (`size`); default: the whole target.
    pub size: Option<SizeSpec>,
    /// Bytes of I/O to do (`io_size`); default: `size`.
    pub io_size: Option<SizeSpec>,
    /// Start of the region (`offset`); default 0.
    pub offset: SizeSpec,
    /// Time to run before measuring (`ramp_time`); default 0.
    pub ramp_time: Duration,
    /// O_DIRECT (`direct`); default: on for block devices and for files where the
    /// filesystem supports it.
    pub direct: Option<bool>,
    /// Engine (`ioengine`); default io_uring.
    pub ioengine: EngineKind,
    /// Rate cap in I/O per second per job (`rate_iops`).
    pub rate_iops: Option<u64>,
    /// Offset distribution for random accesses (`random_distribution`).
    pub random_distribution: Distribution,
    /// Touch every block once per pass in random order (`randommap`); default off,
    /// so sizes are exactly what was asked.
    pub randommap: bool,
    /// Issue an fsync after every N writes (`fsync`); 0 = never.
    pub fsync: u32,
    /// Write with FUA (`fua`, via RWF_DSYNC on direct I/O).
    pub fua: bool,
    /// Interval of the per-interval series (`log_interval`); default 1 s.
    pub log_interval: Duration,
    /// Seed for the offset generator (`randseed`); default fixed so runs repeat.
    pub randseed: u64,
    /// Block alignment of random offsets (`blockalign`); default: the smallest size.
    pub blockalign: Option<u64>,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            name: "drivelab".to_string(),
            filenames: Vec::new(),
            rw: RwMode::Read,
            bs: 4096,
            bssplit: Vec::new(),
            rwmixread: 50,
            percentage_random: 100,
            access: None,
            iodepth: 1,
            numjobs: 1,
            runtime: None,
            time_based: false,
            size: None,
            io_size: None,
            offset: SizeSpec::Bytes(0),
            ramp_time: Duration::ZERO,
            direct: None,
            ioengine: EngineKind::IoUring,
            rate_iops: None,
            random_distribution: Distribution::Random,
            randommap: false,
            fsync: 0,
            fua: false,
            log_interval: DEFAULT_LOG_INTERVAL,
            randseed: 0x6472_6976_656c_6162, // "drivelab"
            blockalign: None,
        }
    }
}

/// The most job threads one run may start, summed over its jobs' `numjobs`
/// (fio's limit too). Each job is a thread with its own buffers and engine;
/// far more than this exhausts the process's memory maps and the thread
/// start-up aborts.
pub const MAX_TOTAL_JOBS: u32 = 4096;

/// Check that the jobs of one run ask for at most [`MAX_TOTAL_JOBS`] job
/// threads in all (the sum of their `numjobs`).
pub fn check_total_jobs<'a>(jobs: impl IntoIterator<Item = &'a JobSpec>) -> Result<(), SpecError> {
    let mut total: u64 = 0;
    let mut sections = 0usize;
    let mut largest: Option<(&str, u32)> = None;
    for j in jobs {
        total += u64::from(j.numjobs);
        sections += 1;
        if largest.is_none_or(|(_, n)| j.numjobs > n) {
            largest = Some((&j.name, j.numjobs));
        }
    }
    if total <= u64::from(MAX_TOTAL_JOBS) {
        return Ok(());
    }
    let (name, n) = largest.unwrap_or(("", 0));
    Err(SpecError::Invalid(format!(
        "the run asks for {total} job threads in all (numjobs summed over {sections} jobs; '{name}' alone has {n}); at most {MAX_TOTAL_JOBS} may run: lower numjobs or use fewer job sections"
    )))
}

fn parse_bool(key: &str, v: &str) -> Result<bool, SpecError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: "1 or 0".to_string(),
        }),
    }
}

/// A whole number within the bounds the option table declares for `key`.
fn parse_declared(key: &str, v: &str) -> Result<u64, SpecError> {
    let (min, max) = crate::options::bounds(key);
    parse_uint(key, v, min, max)
}

fn parse_uint(key: &str, v: &str, min: u64, max: u64) -> Result<u64, SpecError> {
    let n: u64 = v.trim().parse().map_err(|_| SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: format!("a whole number from {min} to {max}"),
    })?;
    if n < min || n > max {
        return Err(SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: format!("a whole number from {min} to {max}"),
        });
    }
    Ok(n)
}

/// Parse fio's `bssplit`: `size/percent:size/percent…`. An entry without a
/// percentage shares what the others leave, as in fio.
pub(crate) fn parse_bssplit(key: &str, v: &str) -> Result<Vec<(u64, u32)>, SpecError> {
    let bad = |why: &str| SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: format!("size/percent pairs separated by ':', e.g. 512/10:4k/60:64k/30 ({why})"),
    };
    let mut out: Vec<(u64, Option<u32>)> = Vec::new();
    for part in v.split(':').filter(|p| !p.trim().is_empty()) {
        let (s, p) = match part.split_once('/') {
            Some((s, p)) => (s, Some(p)),
            None => (part, None),
        };
        let size = parse_bytes(key, s)?;
        if size == 0 {
            return Err(bad("a size of 0"));
        }
        let pct = match p {
            Some(p) if !p.trim().is_empty() => {
                let v = p
                    .trim()
                    .parse::<u32>()
                    .map_err(|_| bad("percent not a whole number"))?;
                if v > 100 {
                    return Err(bad("a percentage above 100"));
                }
                Some(v)
            }
            _ => None,
        };
        out.push((size, pct));
    }
    if out.is_empty() {
        return Err(bad("empty"));
    }
    // Each share is at most 100, so the sum fits easily; summed in u64 all
    // the same, as the count of entries is the user's.
    let given: u64 = out.iter().filter_map(|(_, p)| *p).map(u64::from).sum();
    if given > 100 {
        return Err(bad("percentages add up to more than 100"));
    }
    let open = out.iter().filter(|(_, p)| p.is_none()).count() as u32;
    let rest = 100 - given as u32;
    if open == 0 && given != 100 {
        return Err(bad("percentages must add up to 100"));
    }
    let mut res = Vec::with_capacity(out.len());
    let mut left = rest;
    let mut open_seen = 0;
    for (s, p) in out {
        let w = match p {
            Some(p) => p,
            None => {
                open_seen += 1;
                let share = if open_seen == open { left } else { rest / open };
                left -= share;
                share
            }
        };
        if w > 0 {
            res.push((s, w));
        }
    }
    Ok(res)
}

impl JobSpec {
    /// Set one option by its fio name. `value` is `None` for a bare flag
    /// (`--time_based`, `time_based` in a job file).
    pub fn set(&mut self, key: &str, value: Option<&str>) -> Result<(), SpecError> {
        let decl = lookup(key)?;
        let key = decl.name;
        let v = match (value, decl.kind) {
            (Some(v), _) => v,
            (None, OptionKind::Bool) => "1",
            (None, _) => return Err(SpecError::MissingValue(key.to_string())),
        };
        match key {
            "name" => {
                if v.trim().is_empty() {
                    return Err(SpecError::MissingValue(key.to_string()));
                }
                self.name = v.trim().to_string()
            }
            "filename" => {
                for f in v.split(':').filter(|f| !f.is_empty()) {
                    self.filenames.push(f.to_string());
                }
            }
            "rw" | "readwrite" => {
                self.rw = RwMode::parse(v).ok_or_else(|| SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect:
                        "read, write, randread, randwrite, rw, readwrite, randrw, trim or randtrim"
                            .to_string(),
                })?
            }
            "bs" | "blocksize" => {
                let b = parse_bytes(key, v)?;
                if b == 0 {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "a block size above 0".to_string(),
                    });
                }
                self.bs = b;
            }
            "bssplit" => self.bssplit = parse_bssplit(key, v)?,
            "rwmixread" => self.rwmixread = parse_declared(key, v)? as u8,
            "rwmixwrite" => self.rwmixread = 100 - parse_declared(key, v)? as u8,
            "percentage_random" => self.percentage_random = parse_declared(key, v)? as u8,
            "iodepth" => self.iodepth = parse_declared(key, v)? as u32,
            "numjobs" => self.numjobs = parse_uint(key, v, 1, u64::from(MAX_TOTAL_JOBS))? as u32,
            "runtime" => {
                let d = parse_duration(key, v)?;
                self.runtime = if d.is_zero() { None } else { Some(d) };
            }
            "time_based" => self.time_based = parse_bool(key, v)?,
            "size" => self.size = Some(parse_size_spec(key, v)?),
            "io_size" | "io_limit" => self.io_size = Some(parse_size_spec(key, v)?),
            "offset" => self.offset = parse_size_spec(key, v)?,
            "ramp_time" => self.ramp_time = parse_duration(key, v)?,
            "direct" => self.direct = Some(parse_bool(key, v)?),
            "buffered" => self.direct = Some(!parse_bool(key, v)?),
            "ioengine" => {
                self.ioengine = match v.trim().to_ascii_lowercase().as_str() {
                    "io_uring" => EngineKind::IoUring,
                    "psync" | "sync" | "pvsync" => EngineKind::Psync,
                    "null" => EngineKind::Null,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "io_uring, psync or null".to_string(),
                        })
                    }
                }
            }
            "rate_iops" => {
                let n = parse_declared(key, v)?;
                self.rate_iops = if n == 0 { None } else { Some(n) };
            }
            "random_distribution" => self.random_distribution = Distribution::parse(key, v)?,
            "norandommap" => self.randommap = !parse_bool(key, v)?,
            "randommap" => self.randommap = parse_bool(key, v)?,
            "fsync" => self.fsync = parse_declared(key, v)? as u32,
            "fua" => self.fua = parse_bool(key, v)?,
            "log_interval" => {
                // fio's log_avg_msec / log_interval is in ms when bare.
                let d = if v.trim().chars().all(|c| c.is_ascii_digit()) {
                    Duration::from_millis(parse_uint(key, v, 1, u64::MAX)?)
                } else {
                    parse_duration(key, v)?
                };
                if d < Duration::from_millis(1) {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "an interval of at least 1 ms (bare number = ms)".to_string(),
                    });
                }
                self.log_interval = d;
            }
            "randseed" => self.randseed = parse_declared(key, v)?,
            "blockalign" | "ba" => self.blockalign = Some(parse_bytes(key, v)?),
            other => {
                // Every declared option must be handled above.
                return Err(SpecError::Invalid(format!(
                    "option '{other}' is declared but not handled; please report this"
                )));
            }
        }
        Ok(())
    }

    /// The access lines this job issues: a preset's lines, or the lines
    /// implied by `rw`, `bs`/`bssplit`, `rwmixread` and `percentage_random`.
    pub fn access_lines(&self) -> Vec<AccessLine> {
        if let Some(a) = &self.access {
            return a.clone();
        }
        let read_pct = self.rw.read_pct(self.rwmixread);
        let random_pct = if self.rw.is_random() {
            self.percentage_random
        } else {
            0
        };
        let sizes: Vec<(u64, u32)> = if self.bssplit.is_empty() {
            vec![(self.bs, 100)]
        } else {
            self.bssplit.clone()
        };
        sizes
            .into_iter()
            .map(|(size, weight)| AccessLine {
                size,
                weight,
                read_pct,
                random_pct,
            })
            .collect()
    }

    /// Checks that need no target: the job can be planned.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.filenames.is_empty() {
            return Err(SpecError::Invalid(format!(
                "job '{}' has no target: give --filename=PATH (a file or block device)",
                self.name
            )));
        }
        let lines = self.access_lines();
        let total: u32 = lines.iter().map(|l| l.weight).sum();
        if total == 0 {
            return Err(SpecError::Invalid(format!(
                "job '{}' has an access mix whose weights add up to 0",
                self.name
            )));
        }
        if self.rw.write_kind() == WriteKind::Trim && self.fua {
            return Err(SpecError::Invalid(
                "fua applies to writes, not to trim".to_string(),
            ));
        }
        if self.fsync > 0 && self.rw.read_pct(self.rwmixread) == 100 {
            return Err(SpecError::Invalid(
                "fsync needs writes: use rw=write, randwrite, rw or randrw".to_string(),
            ));
        }
        Ok(())
    }

    /// The largest transfer size the job issues.
    pub fn max_bs(&self) -> u64 {
        self.access_lines()
            .iter()
            .map(|l| l.size)
            .max()
            .unwrap_or(self.bs)
    }

    /// The smallest transfer size the job issues.
    pub fn min_bs(&self) -> u64 {
        self.access_lines()
            .iter()
            .map(|l| l.size)
            .min()
            .unwrap_or(self.bs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bssplit_parses_fio_syntax() {
        let v = parse_bssplit("bssplit", "512/10:4k/60:64k/30").unwrap();
        assert_eq!(v, vec![(512, 10), (4096, 60), (65536, 30)]);
        // Entries without a share split the rest evenly, as fio does.
        let v = parse_bssplit("bssplit", "4k/50:8k:16k").unwrap();
        assert_eq!(v, vec![(4096, 50), (8192, 25), (16384, 25)]);
        assert!(parse_bssplit("bssplit", "4k/50:8k/60").is_err());
        assert!(parse_bssplit("bssplit", "4k/50:8k/40").is_err());
        assert!(parse_bssplit("bssplit", "").is_err());
    }

    #[test]
    fn bssplit_shares_that_overflow_are_refused_not_a_panic() {
        // Found by the fuzz target `jobfile`: the shares were summed in u32,
        // so 4294967295 + 1 overflowed (a panic in debug builds; in release
        // the sum wrapped to 0).
        for v in [
            "4k/4294967295:8k/1",
            "4k/101",
            "4k/4294967296",
            "4k/100:8k/4294967295",
        ] {
            let e = parse_bssplit("bssplit", v).unwrap_err().to_string();
            assert!(e.contains("bssplit"), "{v}: {e}");
        }
        let e = parse_bssplit("bssplit", "4k/4294967295:8k/1").unwrap_err();
        assert!(e.to_string().contains("above 100"), "{e}");
        let many = vec!["512/1"; 100].join(":");
        assert_eq!(parse_bssplit("bssplit", &many).unwrap().len(), 100);
    }

    #[test]
    fn set_accepts_fio_names_and_rejects_unknown_ones() {
        let mut j = JobSpec::default();
        j.set("rw", Some("randrw")).unwrap();
        j.set("rwmixread", Some("70")).unwrap();
        j.set("bs", Some("8k")).unwrap();
        j.set("iodepth", Some("32")).unwrap();
        j.set("time_based", None).unwrap();
        j.set("filename", Some("/dev/a:/dev/b")).unwrap();
        assert_eq!(j.rw, RwMode::RandRw);
        assert_eq!(j.rwmixread, 70);
        assert_eq!(j.bs, 8192);
        assert_eq!(j.iodepth, 32);
        assert!(j.time_based);
        assert_eq!(j.filenames, vec!["/dev/a", "/dev/b"]);
        let e = j.set("blocksz", Some("4k")).unwrap_err();
        assert!(matches!(e, SpecError::UnknownOption { .. }), "{e:?}");
        assert!(e.to_string().contains("blocksz"));
        assert!(j.set("iodepth", Some("0")).is_err());
        assert!(j.set("rw", Some("randomread")).is_err());
        assert!(j.set("bs", None).is_err());
    }

    #[test]
    fn access_lines_follow_rw_and_bssplit() {
        let mut j = JobSpec::default();
        j.set("rw", Some("randrw")).unwrap();
        j.set("rwmixread", Some("80")).unwrap();
        j.set("bssplit", Some("4k/60:64k/40")).unwrap();
        let l = j.access_lines();
        assert_eq!(l.len(), 2);
        assert!(l.iter().all(|l| l.read_pct == 80 && l.random_pct == 100));
        assert_eq!(j.max_bs(), 65536);
        assert_eq!(j.min_bs(), 4096);
        j.set("rw", Some("write")).unwrap();
        assert!(j
            .access_lines()
            .iter()
            .all(|l| l.read_pct == 0 && l.random_pct == 0));
    }

    #[test]
    fn distributions_parse() {
        let mut j = JobSpec::default();
        j.set("random_distribution", Some("zipf:1.2")).unwrap();
        assert_eq!(j.random_distribution, Distribution::Zipf(1.2));
        j.set("random_distribution", Some("pareto:0.9")).unwrap();
        assert_eq!(j.random_distribution, Distribution::Pareto(0.9));
        j.set("random_distribution", Some("normal")).unwrap();
        assert_eq!(j.random_distribution, Distribution::Normal(10.0));
        assert!(j.set("random_distribution", Some("zipf")).is_err());
        assert!(j.set("random_distribution", Some("pareto:2")).is_err());
    }

    #[test]
    fn numjobs_in_three_sections_over_the_total_is_an_error() {
        let mut jobs = Vec::new();
        for name in ["a", "b", "c"] {
            let mut j = JobSpec {
                name: name.to_string(),
                ..JobSpec::default()
            };
            j.set("numjobs", Some("4096")).unwrap();
            jobs.push(j);
        }
        let e = check_total_jobs(&jobs).unwrap_err().to_string();
        assert!(e.contains("12288 job threads"), "{e}");
        assert!(e.contains("at most 4096"), "{e}");
        assert!(check_total_jobs(&jobs[..1]).is_ok());
        jobs[1].set("numjobs", Some("4095")).unwrap();
        jobs[2].set("numjobs", Some("1")).unwrap();
        assert!(check_total_jobs(&jobs[1..]).is_ok());
        assert!(check_total_jobs(&jobs).is_err());
        assert!(JobSpec::default().set("numjobs", Some("4097")).is_err());
    }

    #[test]
    fn validate_requires_a_target() {
        let j = JobSpec::default();
        assert!(j.validate().unwrap_err().to_string().contains("--filename"));
    }
}
