//! The options of the engines that move no data, `ioengine=cpuio` and
//! `ioengine=exec` ([`crate::engines::noio`]): which of the two a job
//! runs, and each engine's keys.

use crate::spec::decl::parse_in;
use crate::spec::decl::{opt, OptionDecl};
use crate::spec::value::parse_flag;
use crate::SpecError;

/// Which of the two engines a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoIoEngine {
    /// `cpuio`: burn CPU.
    Cpu,
    /// `exec`: run a program.
    Exec,
}

impl NoIoEngine {
    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            NoIoEngine::Cpu => "cpuio",
            NoIoEngine::Exec => "exec",
        }
    }
}

/// A job's engine (when it is one of these) and both engines' options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NoIoOpts {
    /// The engine (None: the job does I/O).
    pub engine: Option<NoIoEngine>,
    /// `cpuload`, `cpuchunks`, `cpumode`, `exit_on_io_done`.
    pub cpu: CpuOpts,
    /// `program`, `arguments`, `grace_time`, `std_redirect`.
    pub exec: ExecOpts,
}

/// fio's default `cpuchunks`, µs.
pub const DEFAULT_CHUNK_US: u64 = 50_000;

/// How the CPU is kept busy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CpuMode {
    /// Spin on the clock for the chunk.
    #[default]
    Noop,
    /// Sort an array (more work per cycle, more power drawn).
    Qsort,
}

/// The cpuio engine's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuOpts {
    /// `cpuload`: percent of one CPU (None: not given).
    pub cpuload: Option<u32>,
    /// `cpuchunks`: length of each burn, µs.
    pub chunk_us: u64,
    /// `cpumode`.
    pub mode: CpuMode,
    /// `exit_on_io_done`.
    pub exit_on_io_done: bool,
}

impl Default for CpuOpts {
    fn default() -> Self {
        CpuOpts {
            cpuload: None,
            chunk_us: DEFAULT_CHUNK_US,
            mode: CpuMode::Noop,
            exit_on_io_done: false,
        }
    }
}

impl CpuOpts {
    /// The cpuio engine's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "cpuload",
            [],
            Int,
            "",
            "cpuio: the percentage of one CPU each job burns (required)",
            1,
            100,
            "%"
        ),
        opt!(
            "cpuchunks",
            [],
            Int,
            "50000",
            "cpuio: the length of each burn (noop); a sleep follows that makes the burns cpuload percent",
            1,
            60_000_000,
            "us"
        ),
        opt!(
            "cpumode",
            [],
            Text,
            "noop",
            "cpuio: noop spins on the clock, qsort sorts arrays (more power drawn)"
        ),
        opt!(
            "exit_on_io_done",
            [],
            Bool,
            "0",
            "cpuio: end the job when every job of the run that does I/O has finished"
        ),
    ];

    /// Set one of [`CpuOpts::OPTIONS`].
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        match key {
            "cpuload" => self.cpuload = Some(parse_in(Self::OPTIONS, key, v)? as u32),
            "cpuchunks" => self.chunk_us = parse_in(Self::OPTIONS, key, v)?,
            "cpumode" => {
                self.mode = match v.trim().to_ascii_lowercase().as_str() {
                    "noop" => CpuMode::Noop,
                    "qsort" => CpuMode::Qsort,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "noop (spin) or qsort (sort arrays)".to_string(),
                        })
                    }
                }
            }
            _ => self.exit_on_io_done = parse_flag(key, v)?,
        }
        Ok(())
    }
}

/// The exec engine's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOpts {
    /// `program`.
    pub program: Option<String>,
    /// `arguments`, as written (`%r`, `%n` not yet replaced).
    pub arguments: Option<String>,
    /// `grace_time`, seconds.
    pub grace_s: u64,
    /// `std_redirect`.
    pub std_redirect: bool,
}

impl Default for ExecOpts {
    fn default() -> Self {
        ExecOpts {
            program: None,
            arguments: None,
            grace_s: 1,
            std_redirect: true,
        }
    }
}

impl ExecOpts {
    /// The exec engine's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "program",
            [],
            Text,
            "",
            "exec: the program the job runs for its runtime (required; searched on PATH without a '/')"
        ),
        opt!(
            "arguments",
            [],
            Text,
            "",
            "exec: the program's arguments, split at spaces; %r is the runtime in seconds, %n the job name"
        ),
        opt!(
            "grace_time",
            [],
            Int,
            "1",
            "exec: time between SIGTERM at the job's end and SIGKILL",
            0,
            86_400,
            "s"
        ),
        opt!(
            "std_redirect",
            [],
            Bool,
            "1",
            "exec: the program's stdout and stderr go to <jobname>.stdout and <jobname>.stderr"
        ),
    ];

    /// Set `program`, `arguments`, `grace_time` or `std_redirect`.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        match key {
            "program" => {
                let t = v.trim();
                if t.is_empty() {
                    return Err(SpecError::MissingValue(key.to_string()));
                }
                self.program = Some(t.to_string());
            }
            "arguments" => self.arguments = Some(v.trim().to_string()),
            "grace_time" => self.grace_s = parse_in(Self::OPTIONS, key, v)?,
            _ => self.std_redirect = parse_flag(key, v)?,
        }
        Ok(())
    }
}
