//! The one way drivelab opens a file a user hands it to read: job files
//! and their includes, sequence files, certificates, result JSON, traces,
//! pattern files, public keys and trust lists, policies, images.
//!
//! A path can name something that never ends (`/dev/zero`,
//! `/dev/urandom`), never starts (a FIFO nobody writes), is no file at all
//! (a directory, a socket), or is far larger than any input of its kind;
//! reading such a path to the end fills memory or hangs. A check that each
//! reader must remember is a check some reader forgets, so every reader
//! calls [`read`], [`read_string`] or (for inputs streamed in constant
//! memory) [`open`]: the path must be a regular file, it is opened without
//! waiting (`O_NONBLOCK`, so a FIFO swapped in cannot block), checked again
//! on the open descriptor, and read up to the bound of its [`Kind`]. A
//! refusal is one line naming the file, what it is and what to give
//! instead.
//!
//! The module lives in the device crate because every crate that reads a
//! user's file (workload, trace, erase, season, steps, patterns, replay,
//! report, cli) already depends on it, and it is the crate that knows what
//! a device node is.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// What an input is, which sets its bound and names it in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A fio job file or a file it includes: at most 4 MiB each (fio's own
    /// examples are a few KiB).
    JobFile,
    /// A `drivelab test` sequence file (TOML): at most 1 MiB.
    Sequence,
    /// An erase certificate (signed JSON): at most 64 MiB (its bad-block
    /// list is the only part that grows).
    Certificate,
    /// A result JSON (`--output-format json` of any command): at most
    /// 256 MiB (a long run's per-second series).
    Result,
    /// An Ed25519 public key file: at most 64 KiB.
    PublicKey,
    /// drivelab's own Ed25519 signing key file: at most 64 KiB.
    SigningKey,
    /// A trust list (one key per line) or one `*.pub` file of a trusted-key
    /// directory: at most 1 MiB.
    TrustList,
    /// A data pattern file: at most 16 MiB (a pattern fills blocks).
    Pattern,
    /// A block of data for a device command (WRITE SAME's block): at most
    /// 1 MiB.
    DataBlock,
    /// A station policy or other configuration file: at most 1 MiB.
    Config,
    /// A journal drivelab wrote to resume an erase or season: at most
    /// 64 MiB.
    Journal,
    /// A block trace: streamed, so no size bound; a line longer than
    /// [`MAX_TRACE_LINE`] is refused by the trace readers.
    Trace,
    /// A disk image written onto a drive: streamed, bounded by the drive.
    Image,
}

/// The longest line a text trace may hold. Real trace lines are under 200
/// bytes; a line longer than this is not a trace (or `/dev/zero`'s
/// contents copied into a file).
pub const MAX_TRACE_LINE: usize = 1024 * 1024;

impl Kind {
    /// The input's name in messages ("job file").
    pub const fn what(self) -> &'static str {
        match self {
            Kind::JobFile => "job file",
            Kind::Sequence => "sequence file",
            Kind::Certificate => "certificate",
            Kind::Result => "result file",
            Kind::PublicKey => "public key file",
            Kind::SigningKey => "signing key file",
            Kind::TrustList => "trust list",
            Kind::Pattern => "pattern file",
            Kind::DataBlock => "data file",
            Kind::Config => "configuration file",
            Kind::Journal => "journal",
            Kind::Trace => "trace",
            Kind::Image => "image",
        }
    }

    /// The most bytes read from one input of this kind; `None` for inputs
    /// that are streamed in constant memory.
    pub const fn bound(self) -> Option<u64> {
        match self {
            Kind::JobFile => Some(4 * MIB),
            Kind::Sequence => Some(MIB),
            Kind::Certificate => Some(64 * MIB),
            Kind::Result => Some(256 * MIB),
            Kind::PublicKey | Kind::SigningKey => Some(64 * KIB),
            Kind::TrustList => Some(MIB),
            Kind::Pattern => Some(16 * MIB),
            Kind::DataBlock => Some(MIB),
            Kind::Config => Some(MIB),
            Kind::Journal => Some(64 * MIB),
            Kind::Trace | Kind::Image => None,
        }
    }
}

/// Why an input was refused. Every message is one line that names the file
/// and says what to give instead; nothing was read past the bound.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The path does not exist.
    #[error("{what} {}: no such file; give the path of an existing {what}", path.display())]
    Missing {
        /// The input's name.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// The path is not a regular file.
    #[error("{what} {} is {found}, not a regular file; give the {what} as a regular file", path.display())]
    NotRegular {
        /// The input's name.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// What it is ("a character device", "a FIFO", …).
        found: &'static str,
    },
    /// The input is larger than its kind's bound.
    #[error("{what} {} is {}, more than the {} a {what} may be; give a smaller {what}", path.display(), size_text(*size), human(*bound))]
    TooLarge {
        /// The input's name.
        what: &'static str,
        /// The path as given (`-` for standard input).
        path: PathBuf,
        /// Its size in bytes; `None` when it has no size (standard input),
        /// only that it went past the bound.
        size: Option<u64>,
        /// The bound in bytes.
        bound: u64,
    },
    /// Text was expected.
    #[error("{what} {} is not UTF-8 text; give a text file", path.display())]
    NotText {
        /// The input's name.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// The file could not be opened or read.
    #[error("cannot read {what} {}: {source}", path.display())]
    Io {
        /// The input's name.
        what: &'static str,
        /// The path as given.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl InputError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            InputError::Missing { path, .. }
            | InputError::NotRegular { path, .. }
            | InputError::TooLarge { path, .. }
            | InputError::NotText { path, .. }
            | InputError::Io { path, .. } => path,
        }
    }
}

/// A byte count in binary units ("4 MiB", "1.5 GiB", "12 bytes").
fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < KIB {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / KIB as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn size_text(size: Option<u64>) -> String {
    match size {
        Some(n) => human(n),
        None => "longer".to_string(),
    }
}

/// What a non-regular file is, in words.
fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Check that `path` (symlinks followed) is a regular file, without opening
/// it. Used where a path is only looked at before it is opened elsewhere.
pub fn check_regular(path: &Path, kind: Kind) -> Result<std::fs::Metadata, InputError> {
    let what = kind.what();
    let md = std::fs::metadata(path).map_err(|e| io_error(path, kind, e))?;
    if !md.is_file() {
        return Err(InputError::NotRegular {
            what,
            path: path.to_path_buf(),
            found: kind_of(md.file_type()),
        });
    }
    Ok(md)
}

fn io_error(path: &Path, kind: Kind, e: std::io::Error) -> InputError {
    if e.kind() == std::io::ErrorKind::NotFound {
        InputError::Missing {
            what: kind.what(),
            path: path.to_path_buf(),
        }
    } else {
        InputError::Io {
            what: kind.what(),
            path: path.to_path_buf(),
            source: e,
        }
    }
}

/// Open an input for reading: a regular file (checked before the open and
/// again on the descriptor), no larger than its kind's bound. Streamed
/// kinds ([`Kind::Trace`], [`Kind::Image`]) are opened at any size.
pub fn open(path: &Path, kind: Kind) -> Result<File, InputError> {
    // Looked at first so a device node is never opened (opening some has
    // side effects, such as a tape's rewind on close).
    check_regular(path, kind)?;
    // O_NONBLOCK: a FIFO put in the file's place after the check above
    // does not block the open; the descriptor is checked again below.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| io_error(path, kind, e))?;
    let md = f.metadata().map_err(|e| io_error(path, kind, e))?;
    if !md.is_file() {
        return Err(InputError::NotRegular {
            what: kind.what(),
            path: path.to_path_buf(),
            found: kind_of(md.file_type()),
        });
    }
    if let Some(bound) = kind.bound() {
        if md.len() > bound {
            return Err(InputError::TooLarge {
                what: kind.what(),
                path: path.to_path_buf(),
                size: Some(md.len()),
                bound,
            });
        }
    }
    Ok(f)
}

/// Read at most `bound` bytes of `r`; more is [`InputError::TooLarge`].
fn read_bounded(
    r: impl Read,
    path: &Path,
    kind: Kind,
    size: Option<u64>,
) -> Result<Vec<u8>, InputError> {
    let bound = kind.bound().unwrap_or(u64::MAX);
    let mut data = Vec::new();
    // One byte past the bound tells a file that grew since it was looked at.
    r.take(bound.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|e| io_error(path, kind, e))?;
    if data.len() as u64 > bound {
        return Err(InputError::TooLarge {
            what: kind.what(),
            path: path.to_path_buf(),
            size,
            bound,
        });
    }
    Ok(data)
}

/// Read a whole input: [`open`], then at most its kind's bound.
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>, InputError> {
    let f = open(path, kind)?;
    let size = f.metadata().ok().map(|m| m.len());
    read_bounded(f, path, kind, size)
}

fn text(data: Vec<u8>, path: &Path, kind: Kind) -> Result<String, InputError> {
    String::from_utf8(data).map_err(|_| InputError::NotText {
        what: kind.what(),
        path: path.to_path_buf(),
    })
}

/// Read a whole text input ([`read`], then UTF-8).
pub fn read_string(path: &Path, kind: Kind) -> Result<String, InputError> {
    text(read(path, kind)?, path, kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dl-input-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn special_files_are_refused_by_what_they_are() {
        let d = tmp("special");
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (p, found) in [
            (Path::new("/dev/zero"), "a character device"),
            (Path::new("/dev/urandom"), "a character device"),
            (fifo.as_path(), "a FIFO"),
            (d.as_path(), "a directory"),
        ] {
            let e = read(p, Kind::JobFile).unwrap_err();
            let msg = e.to_string();
            assert!(
                matches!(e, InputError::NotRegular { found: f, .. } if f == found),
                "{msg}"
            );
            assert!(
                msg.contains("job file") && msg.contains("regular file"),
                "{msg}"
            );
            assert!(!msg.contains('\n'));
            assert!(open(p, Kind::Trace).is_err());
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_file_over_the_bound_names_its_size_and_the_bound() {
        let d = tmp("big");
        let p = d.join("key");
        std::fs::write(&p, vec![b'a'; 64 * 1024 + 1]).unwrap();
        let e = read(&p, Kind::PublicKey).unwrap_err().to_string();
        assert!(e.contains("64.0 KiB") && e.contains("64 KiB"), "{e}");
        std::fs::write(&p, vec![b'a'; 64 * 1024]).unwrap();
        assert_eq!(read(&p, Kind::PublicKey).unwrap().len(), 64 * 1024);
        // A streamed kind opens at any size.
        std::fs::write(&p, vec![b'a'; 2 * 1024 * 1024]).unwrap();
        assert!(open(&p, Kind::Trace).is_ok());
        assert!(read(&p, Kind::Sequence).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn missing_and_non_text_files_say_so() {
        let d = tmp("missing");
        let e = read_string(&d.join("nope"), Kind::Result).unwrap_err();
        assert!(matches!(e, InputError::Missing { .. }), "{e}");
        let p = d.join("bin");
        std::fs::write(&p, [0xff, 0xfe, 0x00]).unwrap();
        let e = read_string(&p, Kind::Config).unwrap_err();
        assert!(matches!(e, InputError::NotText { .. }), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human(12), "12 bytes");
        assert_eq!(human(4 * MIB), "4 MiB");
        assert_eq!(human(3 * MIB / 2), "1.5 MiB");
        assert_eq!(human(16 * 1024 * MIB), "16 GiB");
    }
}
