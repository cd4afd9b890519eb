//! Errors of the trace crate. Each message names the line or byte offset
//! and what to do about it, so the CLI can print it as one line.

use std::path::PathBuf;

/// Everything that can go wrong reading, writing, analysing or recording a
/// trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A trace file given as input cannot be read: missing, a directory,
    /// not readable. Bad input, as opposed to [`TraceError::Io`].
    #[error("cannot read {}: {why}; give an existing, readable trace file", path.display())]
    Input {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A trace file given as input is not a regular file.
    #[error(transparent)]
    Refused(#[from] drivelab_device::input::InputError),
    /// A text line is longer than any trace line: the input is not a text
    /// trace (or is endless, such as `/dev/zero`'s bytes).
    #[error("line {line} is longer than {max} bytes: this is not a text trace; give a trace file, or its --format")]
    LineTooLong {
        /// 1-based line number.
        line: u64,
        /// The longest line read, bytes.
        max: usize,
    },
    /// Reading or writing the underlying stream failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A text line could not be parsed.
    #[error(
        "{format} line {line}: {msg} (fix the line, or pass --lenient to skip malformed lines)"
    )]
    Parse {
        /// Format name.
        format: &'static str,
        /// 1-based line number.
        line: u64,
        /// What was wrong.
        msg: String,
    },
    /// A binary record could not be decoded.
    #[error("{format} record at byte {offset}: {msg} (the file is truncated or not in this format; try --format)")]
    Binary {
        /// Format name.
        format: &'static str,
        /// Byte offset of the record.
        offset: u64,
        /// What was wrong.
        msg: String,
    },
    /// `--format auto` found no format that fits.
    #[error("cannot tell the trace format from its content: {0} (pass --format explicitly)")]
    UnknownFormat(String),
    /// A format name that does not exist or cannot be used for this purpose.
    #[error("{0}")]
    BadFormat(String),
    /// A request cannot be represented in the target format.
    #[error("cannot write request #{index} as {format}: {msg}")]
    Unrepresentable {
        /// Target format.
        format: &'static str,
        /// 0-based index of the request in the stream.
        index: u64,
        /// Why.
        msg: String,
    },
    /// The BPF recorder was asked for (`--recorder bpf`) and the kernel
    /// does not allow it.
    #[error("cannot record with BPF: {0}; record with --recorder tracefs")]
    Bpf(#[from] BpfUnavailable),
    /// The kernel dropped trace events while recording (ring-buffer
    /// overrun): the trace written is incomplete.
    #[error("the kernel lost {lost} trace events while recording ({requests} requests recorded): the trace is incomplete; record again with a larger --buffer-kb (was {buffer_kb} KiB per CPU) or on a less loaded machine")]
    LostEvents {
        /// Events lost, summed over CPUs.
        lost: u64,
        /// Requests recorded all the same.
        requests: u64,
        /// The per-CPU buffer used, KiB.
        buffer_kb: u64,
    },
    /// The devices counted more finished requests while recording than
    /// the recording saw complete, though no reader reported a loss: the
    /// trace written is incomplete.
    #[error("the device finished {finished} requests while recording but {missed} of their completions never reached the trace (the {reader} reader reported no loss): the trace is incomplete; record again{}", if reader == "bpf" { " with --recorder tracefs" } else { "" })]
    MissedCompletions {
        /// Completions the device counted and the trace lacks.
        missed: u64,
        /// Requests the device counted as finished while recording.
        finished: u64,
        /// The reader used (`bpf`, `raw`, `text`).
        reader: String,
    },
    /// Kernel tracing is unavailable or refused.
    #[error("tracefs: {what} {}: {source} ({})", path.display(), if drivelab_device::blockdev::running_as_root() { "is tracefs mounted at /sys/kernel/tracing?" } else { "run as root with tracefs mounted at /sys/kernel/tracing" })]
    Tracefs {
        /// What was being done.
        what: &'static str,
        /// The tracefs file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A device given to the recorder is not a block device.
    #[error("{}: {msg}", path.display())]
    Device {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
    /// The recorder's spool beside the output (see `record`'s module doc)
    /// could not be written or read back.
    #[error("cannot {what} the recording's spool beside {}: {source}; free space there or write the trace elsewhere (the spool takes 64-160 bytes a request until the recording stops)", path.display())]
    Spool {
        /// `write` or `read back`.
        what: &'static str,
        /// The output the spool is beside.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An output file (a recorded trace, a plot) is refused, or cannot be
    /// created or put in place.
    #[error(transparent)]
    Output(#[from] drivelab_device::output::OutputError),
}

impl TraceError {
    /// Whether the error is in what the user gave (the trace file, its
    /// content, a format or device name) rather than a failure of the
    /// machine: the CLI exits 2 for these, 1 for the others.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            TraceError::Input { .. }
                | TraceError::Refused(_)
                | TraceError::LineTooLong { .. }
                | TraceError::Parse { .. }
                | TraceError::Binary { .. }
                | TraceError::UnknownFormat(_)
                | TraceError::BadFormat(_)
                | TraceError::Unrepresentable { .. }
                | TraceError::Device { .. }
        ) || matches!(self, TraceError::Output(e) if e.is_refusal())
    }
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, TraceError>;

/// Why the BPF recorder cannot run here.
#[derive(Debug, thiserror::Error)]
pub enum BpfUnavailable {
    /// No `/sys/kernel/btf/vmlinux`, or a block struct not described.
    #[error("the kernel's BTF (/sys/kernel/btf/vmlinux) is missing or lacks the block structs")]
    Btf,
    /// A program could not be encoded (a jump too far).
    #[error("the BPF program could not be encoded")]
    Encode,
    /// The kernel refused a step.
    #[error(transparent)]
    Kernel(#[from] drivelab_device::bpf::BpfError),
}
