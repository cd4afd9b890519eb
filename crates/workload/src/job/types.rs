//! The plain data a job's stages pass each other: regions, the planned
//! verify and zone settings, error counts, the live counters and the
//! generator's error. This file imports nothing else of the crate, so the
//! planner, the job loop, the engines and the run can all name these types
//! without importing each other.

use std::sync::atomic::AtomicU64;

use drivelab_device::zoned::Model;

use crate::SpecError;

/// A byte range `[start, end)` on one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// fio's `zonemode=strided`: I/O stays in one zone of `range` bytes until
/// `size` bytes have been transferred, then moves to the zone `range +
/// skip` bytes further on, wrapping to the region's start past its end.
/// Sequential I/O runs through the zone (again from its start when it
/// reaches the zone's end); random offsets fall in the zone, uniformly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strided {
    /// Bytes transferred in a zone before moving on (`zonesize`, > 0).
    pub size: u64,
    /// Length of a zone (`zonerange`; fio's default: `zonesize`).
    pub range: u64,
    /// Bytes skipped after a zone (`zoneskip`).
    pub skip: u64,
}

/// Why a generator could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GenError {
    /// A transfer does not fit in a region.
    #[error("a {size}-byte transfer does not fit in the {region}-byte region of target {target}; use a larger --size or a smaller --bs")]
    TooSmall {
        /// The transfer size.
        size: u64,
        /// The region length.
        region: u64,
        /// The target index.
        target: usize,
    },
    /// No access lines or no targets.
    #[error("nothing to generate: the job has no access lines or no targets")]
    Empty,
}

/// Errors a job counted (fio's `total_err` and `first_error`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCount {
    /// Errors met, passed or not.
    pub total: u64,
    /// errno of the first (0: none).
    pub first: i32,
    /// I/Os that failed, per direction (read, write, trim): fio counts
    /// them as issued.
    pub failed_ios: [u64; 3],
}

impl ErrorCount {
    /// Count one error.
    pub fn add(&mut self, errno: i32) {
        self.total += 1;
        if self.total == 1 {
            self.first = errno;
        }
    }

    /// Add another run's counts (a job's verify phase after its writes).
    pub fn merge(&mut self, o: &ErrorCount) {
        if self.total == 0 {
            self.first = o.first;
        }
        self.total += o.total;
        for (a, b) in self.failed_ios.iter_mut().zip(o.failed_ios) {
            *a += b;
        }
    }
}

/// A program that ended on its own with a failure: the job's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramFailure {
    /// The job's `error`: the exit status, or 128 + the signal.
    pub status: i32,
    /// In words, for the job's error detail.
    pub words: String,
}

/// A running job's counts per direction (read, write, trim) since
/// measuring started, stored where the loop already publishes its I/O count
/// (once per turn, relaxed): no clock read or lock is added to the loop. A
/// side thread reads them for the progress line.
#[derive(Debug, Default)]
pub struct LiveCounters {
    /// Completed I/Os per direction.
    pub ios: [AtomicU64; 3],
    /// Bytes moved per direction.
    pub bytes: [AtomicU64; 3],
}

/// What written blocks carry (`verify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyKind {
    /// Header with CRC-32C of the block.
    Crc32c,
    /// Header with (the first 8 bytes of) the block's MD5 digest.
    Md5,
    /// Header with the CRC-32 (IEEE 802.3) of the block.
    Crc32,
    /// Header with the CRC-64 (ECMA-182, as xz) of the block.
    Crc64,
    /// Header with (the first 8 bytes of) the block's SHA-256 digest.
    Sha256,
    /// Header with (the first 8 bytes of) the block's SHA-512 digest.
    Sha512,
    /// Header with the CRC-16 (ARC) of the block.
    Crc16,
    /// Header with the CRC-7 (MMC) of the block.
    Crc7,
    /// Header with (the first 8 bytes of) the block's SHA-1 digest.
    Sha1,
    /// Header with the XXH32 of the block.
    Xxhash,
    /// Header with (the first 8 bytes of) the block's SHA3 digest of
    /// this many bits (224, 256, 384 or 512).
    Sha3(u16),
    /// Header with the block's offset and length.
    Meta,
    /// `verify_pattern` repeated.
    Pattern,
}

impl VerifyKind {
    /// Parse fio's `verify=` value; `0`/`null`/`none` turn verification off.
    pub fn parse(key: &str, v: &str) -> Result<Option<VerifyKind>, SpecError> {
        Ok(Some(match v.trim().to_ascii_lowercase().as_str() {
            "0" | "null" | "none" => return Ok(None),
            "crc32c" | "crc32c-intel" => VerifyKind::Crc32c,
            "md5" => VerifyKind::Md5,
            "crc32" => VerifyKind::Crc32,
            "crc64" => VerifyKind::Crc64,
            "sha256" => VerifyKind::Sha256,
            "sha512" => VerifyKind::Sha512,
            "crc16" => VerifyKind::Crc16,
            "crc7" => VerifyKind::Crc7,
            "sha1" => VerifyKind::Sha1,
            "xxhash" => VerifyKind::Xxhash,
            "sha3-224" => VerifyKind::Sha3(224),
            "sha3-256" => VerifyKind::Sha3(256),
            "sha3-384" => VerifyKind::Sha3(384),
            "sha3-512" => VerifyKind::Sha3(512),
            "meta" => VerifyKind::Meta,
            "pattern" => VerifyKind::Pattern,
            _ => {
                return Err(SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect:
                        "crc32c, crc32c-intel, crc32, crc64, crc16, crc7, md5, sha1, sha256, sha512, sha3-224, sha3-256, sha3-384, sha3-512, xxhash, meta or pattern"
                            .to_string(),
                })
            }
        }))
    }

    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            VerifyKind::Crc32c => "crc32c",
            VerifyKind::Md5 => "md5",
            VerifyKind::Crc32 => "crc32",
            VerifyKind::Crc64 => "crc64",
            VerifyKind::Sha256 => "sha256",
            VerifyKind::Sha512 => "sha512",
            VerifyKind::Crc16 => "crc16",
            VerifyKind::Crc7 => "crc7",
            VerifyKind::Sha1 => "sha1",
            VerifyKind::Xxhash => "xxhash",
            VerifyKind::Sha3(224) => "sha3-224",
            VerifyKind::Sha3(256) => "sha3-256",
            VerifyKind::Sha3(384) => "sha3-384",
            VerifyKind::Sha3(_) => "sha3-512",
            VerifyKind::Meta => "meta",
            VerifyKind::Pattern => "pattern",
        }
    }
}

/// The verify options beyond what blocks carry: when checks happen and what
/// a failed one does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyExtras {
    /// Check written blocks every this many writes, during the job
    /// (`verify_backlog`; 0: once the job is done).
    pub backlog: u64,
    /// Blocks checked at each backlog point (`verify_backlog_batch`;
    /// None: `verify_backlog`).
    pub backlog_batch: Option<u64>,
    /// End the job at the first failed check even when
    /// `continue_on_error` passes verify errors (`verify_fatal`).
    pub fatal: bool,
    /// Write the block read and the block expected of a failed check to
    /// files (`verify_dump`).
    pub dump: bool,
    /// fio's verify threads (`verify_async`): accepted; drivelab checks on
    /// the job's thread, and says so.
    pub async_threads: u32,
}

impl VerifyExtras {
    /// Whether `key` is one of these options.
    pub fn handles(key: &str) -> bool {
        matches!(
            key,
            "verify_backlog"
                | "verify_backlog_batch"
                | "verify_fatal"
                | "verify_dump"
                | "verify_async"
        )
    }

    /// Set option `key` to `v`.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        use crate::spec::value::parse_flag;
        use crate::spec::value::parse_in;
        match key {
            "verify_backlog" => self.backlog = parse_in(key, v, 0, 1 << 32)?,
            "verify_backlog_batch" => {
                self.backlog_batch = Some(parse_in(key, v, 0, 1 << 32)?).filter(|&n| n > 0)
            }
            "verify_fatal" => self.fatal = parse_flag(key, v)?,
            "verify_dump" => self.dump = parse_flag(key, v)?,
            _ => self.async_threads = parse_in(key, v, 0, 1024)? as u32,
        }
        Ok(())
    }

    /// Blocks checked at each backlog point.
    pub fn batch(&self) -> u64 {
        self.backlog_batch.unwrap_or(self.backlog)
    }
}

/// The content rule of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// What blocks carry.
    pub kind: VerifyKind,
    /// Bytes per verify block.
    pub interval: usize,
    /// Payload pattern (none: bytes keyed by the offset).
    pub pattern: Option<Vec<u8>>,
    /// Where in each block the header is written (`verify_offset`): it
    /// changes places with the data there; 0: at the start.
    pub header_at: usize,
}

/// A planned job's zone settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ZbdJob {
    /// The target's zone size, bytes.
    pub zone_size: u64,
    /// The writable bytes of each emulated zone (`zonecapacity`; the zone
    /// size without it).
    pub zone_capacity: u64,
    /// The target's zoned model (None: zones emulated from `zonesize`).
    pub model: Model,
    /// The open-zone limit shared by every job on the target (0: none).
    pub max_open_zones: u32,
    /// This job's own limit (0: none).
    pub job_max_open_zones: u32,
    /// `zone_reset_threshold`.
    pub reset_threshold: f64,
    /// `zone_reset_frequency`.
    pub reset_frequency: f64,
    /// `read_beyond_wp`.
    pub read_beyond_wp: bool,
    /// Smallest block size (fio's min_bs).
    pub min_bs: u64,
    /// Random offsets.
    pub random: bool,
    /// Reads and writes mixed.
    pub mixed: bool,
    /// The job writes.
    pub writes: bool,
}

/// A job's fio iolog, read ([`crate::job::iolog_replay`]): the files its I/Os go to and the I/Os, each with
/// when it is due (ns after the first).
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The log, as named.
    pub path: String,
    /// The job's files: the log's, in order of first mention, or the
    /// redirect.
    pub files: Vec<String>,
    /// The I/Os (`target` indexes `files`) and their times.
    pub ios: Vec<(drivelab_engine::io::IoDesc, u64)>,
    /// Whether any I/O writes or trims (the targets are claimed for it).
    pub writes: bool,
    /// Whether any I/O trims (the targets must take discards).
    pub trims: bool,
    /// The depth a blktrace shows (the most requests of one direction
    /// queued before a completion, as fio probes it): the job's iodepth
    /// unless one is given. None for an iolog.
    pub depth: Option<u32>,
}
