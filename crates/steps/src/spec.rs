//! What a test step is, as the user states it: kind, access order, range,
//! transfer length, queue depth, FUA, pattern, seed, stop-on-error policy,
//! retries; and the TOML sequence file that lists several steps.
//!
//! Everything here is "low args": parsed and checked for what can be checked
//! without the device. Checks that need the device (block size, capacity)
//! happen in [`crate::plan`].

use std::fmt;
use std::str::FromStr;

use drivelab_patterns::Pattern;
use serde::Deserialize;

use crate::error::StepError;

/// What a step does to every block of its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// Write the pattern.
    Write,
    /// Read, without checking the data.
    Read,
    /// Read and compare against the pattern.
    Verify,
    /// A write pass over the whole range, then a read-compare pass over the
    /// whole range (as DMM does), so every block is read back after all
    /// writes of the step landed.
    WriteVerify,
    /// One block of the pattern sent with WRITE SAME (SCSI) or SCT Write
    /// Same (SATA), the drive writing it to every block of the range.
    WriteSame,
}

impl StepKind {
    /// Whether the step writes (and so needs the safety check).
    pub fn writes(self) -> bool {
        matches!(
            self,
            StepKind::Write | StepKind::WriteVerify | StepKind::WriteSame
        )
    }

    /// Whether the step compares data read against the pattern.
    pub fn compares(self) -> bool {
        matches!(self, StepKind::Verify | StepKind::WriteVerify)
    }

    /// Passes over the range: a write-verify writes it, then reads it.
    pub fn passes(self) -> u64 {
        if self == StepKind::WriteVerify {
            2
        } else {
            1
        }
    }

    /// The name used on the command line and in sequence files.
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Write => "write",
            StepKind::Read => "read",
            StepKind::Verify => "verify",
            StepKind::WriteVerify => "write-verify",
            StepKind::WriteSame => "write-same",
        }
    }

    /// The test type as a DMM log names it.
    pub fn dmm_name(self) -> &'static str {
        match self {
            StepKind::Write => "Write Test",
            StepKind::Read => "Read Test",
            StepKind::Verify => "Read-Compare Test",
            StepKind::WriteVerify => "Write-Read-Compare Test",
            StepKind::WriteSame => "Write Same Test",
        }
    }
}

impl FromStr for StepKind {
    type Err = StepError;
    fn from_str(s: &str) -> Result<StepKind, StepError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "write" => Ok(StepKind::Write),
            "read" => Ok(StepKind::Read),
            "verify" | "read-verify" | "compare" => Ok(StepKind::Verify),
            "write-verify" | "writeverify" | "write-read-compare" => Ok(StepKind::WriteVerify),
            "write-same" | "writesame" => Ok(StepKind::WriteSame),
            _ => Err(StepError::bad(
                "step",
                s,
                "write, read, verify, write-verify or write-same",
            )),
        }
    }
}

/// The order in which the step visits its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Ascending LBAs.
    Sequential,
    /// Every transfer of the range exactly once, in a random order keyed by
    /// the step's seed.
    Random,
    /// Alternating from both ends inward: first, last, second,
    /// second-last, …
    Butterfly,
}

impl Order {
    /// The name used on the command line and in sequence files.
    pub fn name(self) -> &'static str {
        match self {
            Order::Sequential => "sequential",
            Order::Random => "random",
            Order::Butterfly => "butterfly",
        }
    }

    /// As a DMM log names it.
    pub fn dmm_name(self) -> &'static str {
        match self {
            Order::Sequential => "Sequential",
            Order::Random => "Random",
            Order::Butterfly => "Butterfly",
        }
    }
}

impl FromStr for Order {
    type Err = StepError;
    fn from_str(s: &str) -> Result<Order, StepError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sequential" | "seq" => Ok(Order::Sequential),
            "random" | "rand" => Ok(Order::Random),
            "butterfly" => Ok(Order::Butterfly),
            _ => Err(StepError::bad(
                "order",
                s,
                "sequential, random or butterfly",
            )),
        }
    }
}

/// What a step does when a command fails (after its retries) or a block
/// miscompares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// End this step at the first error (it FAILS); later steps still run.
    StopTest,
    /// End this step at the first error and skip every later step.
    StopSequence,
    /// Carry on to the end of the range, reporting every error.
    Continue,
}

impl OnError {
    /// The name used on the command line and in sequence files.
    pub fn name(self) -> &'static str {
        match self {
            OnError::StopTest => "stop-test",
            OnError::StopSequence => "stop-sequence",
            OnError::Continue => "continue",
        }
    }

    /// As a DMM log names it.
    pub fn dmm_name(self) -> &'static str {
        match self {
            OnError::StopTest => "Stop Current Test",
            OnError::StopSequence => "Stop Sequence",
            OnError::Continue => "Continue on Error",
        }
    }
}

impl FromStr for OnError {
    type Err = StepError;
    fn from_str(s: &str) -> Result<OnError, StepError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "stop-test" | "stop" => Ok(OnError::StopTest),
            "stop-sequence" => Ok(OnError::StopSequence),
            "continue" => Ok(OnError::Continue),
            _ => Err(StepError::bad(
                "on-error",
                s,
                "stop-test, stop-sequence or continue",
            )),
        }
    }
}

/// How many blocks a step covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// From the start block to the end of the device.
    All,
    /// This many logical blocks.
    Blocks(u64),
}

impl FromStr for Count {
    type Err = StepError;
    fn from_str(s: &str) -> Result<Count, StepError> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("all") {
            return Ok(Count::All);
        }
        match t.replace(['_', ','], "").parse::<u64>() {
            Ok(0) | Err(_) => Err(StepError::bad(
                "count",
                s,
                "a number of blocks (at least 1) or 'all'",
            )),
            Ok(n) => Ok(Count::Blocks(n)),
        }
    }
}

/// Transfer length per command, in bytes: fixed (`min == max`) or a range
/// from which each command draws a random whole number of blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// Shortest transfer, bytes.
    pub min: u64,
    /// Longest transfer, bytes.
    pub max: u64,
}

/// Longest transfer accepted, bytes (64 MiB).
pub const MAX_TRANSFER: u64 = 64 << 20;

impl Transfer {
    /// Whether every command moves the same length.
    pub fn is_fixed(&self) -> bool {
        self.min == self.max
    }
}

impl FromStr for Transfer {
    type Err = StepError;
    /// `64k` (fixed) or `4k-128k` (a range); `k` = 1024, a bare number is
    /// bytes, as in fio.
    fn from_str(s: &str) -> Result<Transfer, StepError> {
        let one = |v: &str| {
            drivelab_workload::spec::size::parse_bytes("bs", v).map_err(|_| {
                StepError::bad(
                    "bs",
                    s,
                    "a size such as 64k, or a range such as 4k-128k (k = 1024)",
                )
            })
        };
        let (min, max) = match s.split_once('-') {
            Some((a, b)) => (one(a)?, one(b)?),
            None => {
                let v = one(s)?;
                (v, v)
            }
        };
        if min == 0 || min > max {
            return Err(StepError::bad(
                "bs",
                s,
                "a non-zero size, or a range low-high with low <= high",
            ));
        }
        if max > MAX_TRANSFER {
            return Err(StepError::bad("bs", s, "at most 64m per command"));
        }
        Ok(Transfer { min, max })
    }
}

impl fmt::Display for Transfer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_fixed() {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}-{}", self.min, self.max)
        }
    }
}

/// Highest queue depth accepted.
pub const MAX_QD: u32 = 1024;
/// The most retries of one failed command.
pub const MAX_RETRIES: u32 = 100;

/// One test step as stated by the user.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSpec {
    /// What the step does.
    pub kind: StepKind,
    /// Visiting order (default sequential).
    pub order: Order,
    /// First LBA, in the device's logical blocks (default 0).
    pub start: u64,
    /// Blocks covered (default all, to the end of the device).
    pub count: Count,
    /// Transfer length per command (default 64 KiB).
    pub transfer: Transfer,
    /// Commands in flight (default 1, as DMM).
    pub qd: u32,
    /// Writes with FUA (RWF_DSYNC on direct I/O; default off).
    pub fua: bool,
    /// Data pattern (default `incrementing`).
    pub pattern: Pattern,
    /// Seed of the `random`/`stamped` data, the random order and random
    /// transfer lengths; `None`: the sequence's seed.
    pub seed: Option<u64>,
    /// Pass (sequence) number stamped into `stamped` blocks (default 1).
    pub pass: u64,
    /// Stop-on-error policy (default stop-test).
    pub on_error: OnError,
    /// Retries of a failed command before it counts as an error (default 0).
    pub retries: u32,
}

impl StepSpec {
    /// A step of `kind` with every other parameter at its default.
    pub fn new(kind: StepKind) -> StepSpec {
        StepSpec {
            kind,
            order: Order::Sequential,
            start: 0,
            count: Count::All,
            transfer: Transfer {
                min: 64 << 10,
                max: 64 << 10,
            },
            qd: 1,
            fua: false,
            pattern: Pattern::Incrementing,
            seed: None,
            pass: 1,
            on_error: OnError::StopTest,
            retries: 0,
        }
    }

    /// Check what can be checked without the device.
    pub fn validate(&self) -> Result<(), StepError> {
        if self.qd == 0 || self.qd > MAX_QD {
            return Err(StepError::bad(
                "qd",
                &self.qd.to_string(),
                "a queue depth from 1 to 1024",
            ));
        }
        if self.retries > MAX_RETRIES {
            return Err(StepError::bad(
                "retries",
                &self.retries.to_string(),
                "0 to 100 retries per failed command",
            ));
        }
        Ok(())
    }
}

/// A `count` in a sequence file: a number or "all".
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawCount {
    N(u64),
    S(String),
}

/// One `[[step]]` table of a sequence file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    kind: String,
    pattern: Option<String>,
    bs: Option<String>,
    order: Option<String>,
    start: Option<u64>,
    count: Option<RawCount>,
    qd: Option<u32>,
    fua: Option<bool>,
    on_error: Option<String>,
    retries: Option<u32>,
    seed: Option<u64>,
    pass: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSequence {
    seed: Option<u64>,
    #[serde(default)]
    step: Vec<RawStep>,
}

/// A parsed sequence file: its steps, in order, and its seed if it set one.
#[derive(Debug, Clone, PartialEq)]
pub struct Sequence {
    /// Seed for every step that does not set its own.
    pub seed: Option<u64>,
    /// The steps, in order.
    pub steps: Vec<StepSpec>,
}

/// Parse a pattern name as the CLI and sequence files accept it.
pub fn parse_pattern(s: &str) -> Result<Pattern, StepError> {
    use drivelab_patterns::PatternError as P;
    s.parse::<Pattern>().map_err(|e| match e {
        P::FileRead { .. } | P::FileEmpty { .. } | P::FileTooLarge { .. } | P::FileRefused(_) => {
            StepError::PatternFile(e)
        }
        e => StepError::BadValue {
            key: "pattern".into(),
            value: s.into(),
            expect: e.to_string(),
        },
    })
}

/// Parse a sequence file (TOML; format in the crate documentation).
/// `name` is used in error messages.
pub fn parse_sequence(name: &str, text: &str) -> Result<Sequence, StepError> {
    let raw: RawSequence = toml::from_str(text).map_err(|e| StepError::Sequence {
        file: name.to_string(),
        msg: toml_message(text, &e),
    })?;
    if raw.step.is_empty() {
        return Err(StepError::Sequence {
            file: name.to_string(),
            msg: "no [[step]] tables; add at least one (see 'drivelab test --help')".into(),
        });
    }
    let mut steps = Vec::with_capacity(raw.step.len());
    for (i, r) in raw.step.into_iter().enumerate() {
        let in_step = |e: StepError| StepError::Sequence {
            file: name.to_string(),
            msg: format!("step {}: {e}", i + 1),
        };
        let mut s = StepSpec::new(r.kind.parse().map_err(in_step)?);
        if let Some(p) = r.pattern {
            s.pattern = parse_pattern(&p).map_err(in_step)?;
        }
        if let Some(b) = r.bs {
            s.transfer = b.parse().map_err(in_step)?;
        }
        if let Some(o) = r.order {
            s.order = o.parse().map_err(in_step)?;
        }
        if let Some(v) = r.start {
            s.start = v;
        }
        match r.count {
            Some(RawCount::N(n)) => s.count = Count::Blocks(n).validated().map_err(in_step)?,
            Some(RawCount::S(t)) => s.count = t.parse().map_err(in_step)?,
            None => {}
        }
        if let Some(v) = r.qd {
            s.qd = v;
        }
        if let Some(v) = r.fua {
            s.fua = v;
        }
        if let Some(v) = r.on_error {
            s.on_error = v.parse().map_err(in_step)?;
        }
        if let Some(v) = r.retries {
            s.retries = v;
        }
        s.seed = r.seed;
        if let Some(v) = r.pass {
            s.pass = v;
        }
        s.validate().map_err(in_step)?;
        steps.push(s);
    }
    Ok(Sequence {
        seed: raw.seed,
        steps,
    })
}

/// A TOML error as one line, with the line it is on: toml's messages may
/// span lines ("invalid table header\nexpected `.`, `]`"), and an error
/// drivelab prints is one line.
fn toml_message(text: &str, e: &toml::de::Error) -> String {
    let msg = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(": ");
    match e.span() {
        Some(span) => {
            let line = text
                .get(..span.start)
                .map_or(0, |head| head.matches('\n').count())
                + 1;
            format!("line {line}: {msg}")
        }
        None => msg,
    }
}

impl Count {
    fn validated(self) -> Result<Count, StepError> {
        match self {
            Count::Blocks(0) => Err(StepError::bad(
                "count",
                "0",
                "a number of blocks (at least 1) or 'all'",
            )),
            c => Ok(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_fixed_and_range_parse_in_1024_units() {
        assert_eq!(
            "64k".parse::<Transfer>().unwrap(),
            Transfer {
                min: 65536,
                max: 65536
            }
        );
        assert_eq!(
            "4k-128k".parse::<Transfer>().unwrap(),
            Transfer {
                min: 4096,
                max: 131072
            }
        );
        assert!("128k-4k".parse::<Transfer>().is_err());
        assert!("0".parse::<Transfer>().is_err());
        assert!("65m".parse::<Transfer>().is_err());
        assert!("x".parse::<Transfer>().is_err());
    }

    #[test]
    fn count_accepts_all_and_numbers_not_zero() {
        assert_eq!("all".parse::<Count>().unwrap(), Count::All);
        assert_eq!("1,000".parse::<Count>().unwrap(), Count::Blocks(1000));
        assert!("0".parse::<Count>().is_err());
        assert!("-3".parse::<Count>().is_err());
    }

    #[test]
    fn sequence_file_parses_every_key() {
        let text = r#"
seed = 7
[[step]]
kind = "write"
pattern = "random"
bs = "4k-64k"
order = "butterfly"
start = 10
count = 100
qd = 8
fua = true
on_error = "continue"
retries = 2
pass = 3

[[step]]
kind = "verify"
pattern = "stamped"
count = "all"
seed = 99
"#;
        let s = parse_sequence("t.toml", text).unwrap();
        assert_eq!(s.seed, Some(7));
        assert_eq!(s.steps.len(), 2);
        let a = &s.steps[0];
        assert_eq!(a.kind, StepKind::Write);
        assert_eq!(a.pattern, Pattern::Random);
        assert_eq!(
            a.transfer,
            Transfer {
                min: 4096,
                max: 65536
            }
        );
        assert_eq!(a.order, Order::Butterfly);
        assert_eq!(
            (a.start, a.count, a.qd, a.fua),
            (10, Count::Blocks(100), 8, true)
        );
        assert_eq!(
            (a.on_error, a.retries, a.pass, a.seed),
            (OnError::Continue, 2, 3, None)
        );
        let b = &s.steps[1];
        assert_eq!(
            (b.kind, b.count, b.seed),
            (StepKind::Verify, Count::All, Some(99))
        );
        assert_eq!(b.order, Order::Sequential);
    }

    #[test]
    fn sequence_file_errors_name_the_step() {
        let e = parse_sequence("t.toml", "[[step]]\nkind = \"erase\"\n").unwrap_err();
        assert!(e.to_string().contains("step 1"), "{e}");
        let e = parse_sequence("t.toml", "[[step]]\nkind = \"write\"\nbogus = 1\n").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        assert!(parse_sequence("t.toml", "seed = 1\n").is_err());
        assert!(parse_sequence("t.toml", "[[step]]\nkind = \"read\"\nqd = 0\n").is_err());
    }

    #[test]
    fn toml_syntax_errors_are_one_line_with_the_line_number() {
        // Found by the fuzz target `sequence` (a mutation of a corpus file):
        // toml's message was two lines, "invalid table header\nexpected
        // `.`, `]`", printed as is.
        let e = parse_sequence("t.toml", "[as[step=]\nkind = \"eras").unwrap_err();
        let m = e.to_string();
        assert!(!m.contains('\n'), "{m:?}");
        assert!(m.starts_with("sequence file t.toml: line 1: "), "{m}");
        assert!(m.contains("invalid table header"), "{m}");
        let e = parse_sequence("t.toml", "seed = 1\n\n[[step]]\nkind = \n").unwrap_err();
        assert!(e.to_string().contains("line 4: "), "{e}");
    }
}
