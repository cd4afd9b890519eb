//! The plain kinds a job spec is made of: the access pattern (`rw`), what
//! non-reads do, the offset distribution, the loop engine a job runs on,
//! and an access line. They import nothing else of the crate, so every
//! stage can name them without importing [`crate::spec::jobspec`].

use crate::spec::size::{parse_bytes, SizeSpec};
use crate::SpecError;

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
    /// Sequential trims, each followed by a write of the same block
    /// (fio's `trimwrite`).
    TrimWrite,
    /// Random trims, each followed by a write of the same block (fio's
    /// `randtrimwrite`).
    RandTrimWrite,
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
            "trimwrite" => RwMode::TrimWrite,
            "randtrimwrite" => RwMode::RandTrimWrite,
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
            RwMode::TrimWrite => "trimwrite",
            RwMode::RandTrimWrite => "randtrimwrite",
        }
    }

    /// Whether accesses are random (before `percentage_random`).
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandRw
                | RwMode::RandTrim
                | RwMode::RandTrimWrite
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
            RwMode::TrimWrite | RwMode::RandTrimWrite => WriteKind::TrimWrite,
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
    /// A discard of each block, then a write of the same block (fio's
    /// `trimwrite`: only the writes count toward the job's size).
    TrimWrite,
}

impl WriteKind {
    /// Whether the job issues discards.
    pub fn trims(self) -> bool {
        self != WriteKind::Write
    }
}

/// One zone of a `zoned`/`zoned_abs` distribution: this share of the
/// accesses goes to this much of the range (the zones follow each other
/// from the start of the range).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zone {
    /// Share of the accesses, percent.
    pub access_pct: f64,
    /// Length of the zone.
    pub len: SizeSpec,
}

/// How random offsets are distributed over the range (`random_distribution`).
#[derive(Debug, Clone, PartialEq)]
pub enum Distribution {
    /// Uniform.
    Random,
    /// Zipf with exponent θ (> 0, ≠ 1 not required).
    Zipf(f64),
    /// Pareto with shape h (0 < h < 1, as fio).
    Pareto(f64),
    /// Normal around the middle of the range, σ in percent of the range.
    Normal(f64),
    /// fio's `zoned:` (zone lengths in percent of the range) and
    /// `zoned_abs:` (zone lengths in bytes): uniform within a zone, zones
    /// drawn by their access share.
    Zoned(Vec<Zone>),
}

impl Distribution {
    pub(crate) fn parse(key: &str, s: &str) -> Result<Distribution, SpecError> {
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
            "zoned" | "zoned_abs" => {
                Distribution::Zoned(parse_zones(key, s, &arg.unwrap_or_default(), name == "zoned_abs")?)
            }
            "random" => Distribution::Random,
            // Bare, zipf and pareto take fio's defaults (FIO_DEF_ZIPF,
            // FIO_DEF_PARETO).
            "zipf" => {
                let v = match arg {
                    None => 1.1,
                    a => num(a, "zipf:THETA with THETA > 0, e.g. zipf:1.2")?,
                };
                if !(v > 0.0 && v.is_finite()) {
                    return Err(bad("zipf:THETA with THETA > 0, e.g. zipf:1.2"));
                }
                Distribution::Zipf(v)
            }
            "pareto" => {
                let v = match arg {
                    None => 0.2,
                    a => num(a, "pareto:H with 0 < H < 1, e.g. pareto:0.9")?,
                };
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
            _ => {
                return Err(bad(
                    "random, zipf:THETA, pareto:H, normal[:SIGMA%], zoned:ACCESS%/RANGE%:… or zoned_abs:ACCESS%/SIZE:…",
                ))
            }
        })
    }
}

/// Parse the zones of `zoned:` / `zoned_abs:`: `ACCESS/RANGE` pairs
/// separated by `:`; a last pair may leave RANGE empty for the rest of
/// the range (`zoned` only). The access shares must add up to 100, as must
/// the range percentages of `zoned`.
fn parse_zones(key: &str, whole: &str, arg: &str, abs: bool) -> Result<Vec<Zone>, SpecError> {
    let bad = |why: &str| SpecError::BadValue {
        key: key.to_string(),
        value: whole.to_string(),
        expect: format!(
            "{} ({why})",
            if abs {
                "zoned_abs:ACCESS%/SIZE:… e.g. zoned_abs:60/10m:40/50m"
            } else {
                "zoned:ACCESS%/RANGE%:… e.g. zoned:50/5:30/15:20/80"
            }
        ),
    };
    let mut zones = Vec::new();
    let parts: Vec<&str> = arg.split(':').filter(|p| !p.trim().is_empty()).collect();
    if parts.is_empty() {
        return Err(bad("no zones"));
    }
    let mut access = 0.0;
    let mut range = 0.0f64;
    for (i, part) in parts.iter().enumerate() {
        let (a, r) = part
            .split_once('/')
            .ok_or_else(|| bad("each zone is ACCESS/RANGE"))?;
        let a: f64 = a
            .trim()
            .parse()
            .map_err(|_| bad("access share not a number"))?;
        if !(0.0..=100.0).contains(&a) {
            return Err(bad("access share outside 0..100"));
        }
        access += a;
        let len = if abs {
            SizeSpec::Bytes(parse_bytes(key, r)?)
        } else if r.trim().is_empty() {
            if i + 1 != parts.len() {
                return Err(bad("only the last zone may leave its range empty"));
            }
            SizeSpec::Percent((100.0f64 - range).max(0.0))
        } else {
            let v: f64 = r
                .trim()
                .parse()
                .map_err(|_| bad("range share not a number"))?;
            SizeSpec::Percent(v)
        };
        if let SizeSpec::Percent(v) = len {
            range += v;
        }
        zones.push(Zone { access_pct: a, len });
    }
    if (access - 100.0).abs() > 1e-6 {
        return Err(bad("access shares must add up to 100"));
    }
    if !abs && (range - 100.0).abs() > 1e-6 {
        return Err(bad("range shares must add up to 100"));
    }
    Ok(zones)
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
    /// fio's `sg`: each I/O one SCSI command through SG_IO, one at a time
    /// ([`drivelab_engine::sg`]).
    Sg,
    /// fio's `io_uring_cmd` (`cmd_type=nvme`): each I/O one NVMe command
    /// through io_uring passthrough to /dev/ngXnY
    /// ([`drivelab_engine::ucmd`]).
    IoUringCmd,
    /// fio's `net`: reads and writes are a socket's receives and sends
    /// ([`crate::engines::noio::net`]).
    Net,
}

impl EngineKind {
    /// The name fio uses.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::Psync => "psync",
            EngineKind::Null => "null",
            EngineKind::Sg => "sg",
            EngineKind::IoUringCmd => "io_uring_cmd",
            EngineKind::Net => "net",
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
