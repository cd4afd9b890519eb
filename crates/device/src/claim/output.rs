//! The one way drivelab writes a file of its own: results, logs, iologs,
//! traces, stores, reports, certificates, keys, journals, exports.
//!
//! A device is written only through [`crate::claim`]; everything else
//! drivelab creates goes through [`Output`], for the same reason: a check
//! each writer must remember is a check some writer forgets, and a result
//! file named `/dev/sdb` (or a symlink to it, or the file behind a mounted
//! loop device) destroys a filesystem as surely as a workload would.
//!
//! [`Output::check`] refuses, before anything is opened for writing:
//! block and character devices (standard output is the caller's `-`, never
//! `/dev/stdout`, `/dev/null` or `/dev/full`), FIFOs and sockets, a
//! directory, a symlink to any of these (resolved), a regular file that
//! backs an attached loop device, that is active swap, or that another
//! process holds locked (a drivelab claim: `flock`), and a path that is one
//! of the command's own inputs (same device and inode, or same canonical
//! path). Each refusal is one line in the claim's words: "refusing to write
//! to X: why; what to do; nothing was written".
//!
//! [`Output::create`] then writes to a temporary file created exclusively
//! in the target's directory (never through a symlink; with the replaced
//! file's permission bits and owner), and [`OutputFile::commit`] flushes,
//! fsyncs and renames it into place: a failed command leaves no partial
//! file and never empties an existing one, and a full filesystem leaves the
//! old file whole. An [`OutputFile`] dropped without `commit` removes its
//! temporary file. Given a symlink, the file it names is the one replaced.
//!
//! [`Output::scratch`] is a file the command writes and reads back while it
//! runs (the trace recorder's spool): created the same way beside the
//! target, then unlinked at once, so it lives only as long as its
//! descriptor and is never put in place, even by a crash.
//!
//! Files that must exist under their final name while the command runs (a
//! journal appended for `--resume`; an SQLite database, which SQLite opens
//! itself) take the same checks through [`Output::open_in_place`] and
//! [`Output::check`], which returns the resolved path to open.

use std::fmt;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::block::blockdev::split_dev;
use crate::claim::loopdev::{self, Backing};
use crate::claim::safety;

/// Symlinks followed at most when resolving an output path (the kernel's
/// own limit is 40).
const MAX_LINKS: usize = 40;

/// Why an output path is refused: the clause after "refusing to write to
/// X: " and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsafe {
    /// A block device.
    BlockDevice,
    /// A character device (`/dev/null`, `/dev/full`, a tty, `/dev/sg0`).
    CharDevice,
    /// A FIFO or a socket.
    Special,
    /// A directory where a file was expected.
    Directory,
    /// A symlink, and what it resolves to is refused for `why`.
    Symlink {
        /// The file the symlink names, resolved.
        to: PathBuf,
        /// Why that is refused.
        why: Box<Unsafe>,
    },
    /// A regular file that backs attached loop devices.
    BacksLoop {
        /// Their kernel names (`loop3`).
        devices: Vec<String>,
    },
    /// A regular file that is active swap.
    Swap,
    /// A regular file another process holds locked (`flock`), as a
    /// drivelab writing it does.
    Locked {
        /// The processes that have it open, as "drivelab (pid 42)".
        processes: Vec<String>,
    },
    /// One of the command's own inputs.
    Input {
        /// The input as the command was given it.
        input: PathBuf,
    },
    /// The directory the file would go in does not exist.
    NoDirectory {
        /// That directory.
        dir: PathBuf,
    },
    /// What should be the directory is not one.
    NotADirectory {
        /// That path.
        dir: PathBuf,
    },
    /// A symlink loop, or a chain longer than 40 links.
    TooManyLinks,
}

impl fmt::Display for Unsafe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsafe::BlockDevice => write!(
                f,
                "it is a block device; results and logs go to a file: give a file path"
            ),
            Unsafe::CharDevice => write!(
                f,
                "it is a character device; give - for standard output, or a file"
            ),
            Unsafe::Special => write!(
                f,
                "it is a FIFO or socket, not a regular file; give - for standard output, or a file"
            ),
            Unsafe::Directory => write!(f, "it is a directory; give a file name"),
            Unsafe::Symlink { to, why } => {
                write!(f, "it is a symlink to {}, and {why}", to.display())
            }
            Unsafe::BacksLoop { devices } => {
                let list: Vec<String> = devices.iter().map(|d| format!("/dev/{d}")).collect();
                write!(
                    f,
                    "it is the backing file of the loop device {}; writing it rewrites that device: give another file",
                    list.join(", ")
                )
            }
            Unsafe::Swap => write!(f, "it is active swap; give another file"),
            Unsafe::Locked { processes } if processes.is_empty() => write!(
                f,
                "it is locked by another process (another drivelab writing it); give another file or wait until it finishes"
            ),
            Unsafe::Locked { processes } => write!(
                f,
                "it is locked by {} (another drivelab writing it); give another file or wait until it finishes",
                processes.join(", ")
            ),
            Unsafe::Input { input } => write!(
                f,
                "it is also an input of this command ({}); give another file name",
                input.display()
            ),
            Unsafe::NoDirectory { dir } => write!(
                f,
                "the directory {} does not exist; create it or give another path",
                dir.display()
            ),
            Unsafe::NotADirectory { dir } => {
                write!(f, "{} is not a directory; give another path", dir.display())
            }
            Unsafe::TooManyLinks => {
                write!(f, "it is a symlink loop (or a chain of more than {MAX_LINKS}); give a file")
            }
        }
    }
}

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The path is not a safe place for a file (bad input: nothing was
    /// opened for writing).
    #[error("refusing to write to {}{}: {why}; nothing was written", .path.display(), option_text(.option))]
    Refused {
        /// The path as given.
        path: PathBuf,
        /// The option that gave it ("--output"), when known.
        option: Option<String>,
        /// Why.
        why: Unsafe,
    },
    /// A system call failed (permissions, a read-only or full filesystem).
    #[error("cannot {action} {}{}: {source}; {}", .path.display(), option_text(.option), io_hint(.source))]
    Io {
        /// The path as given.
        path: PathBuf,
        /// The option that gave it, when known.
        option: Option<String>,
        /// What was being done ("create", "write", "rename into place").
        action: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl OutputError {
    /// Whether the path itself was refused (bad input, exit status 2),
    /// rather than a write that failed.
    pub fn is_refusal(&self) -> bool {
        matches!(self, OutputError::Refused { .. })
    }

    /// The refusal's reason, when it is one.
    pub fn unsafe_reason(&self) -> Option<&Unsafe> {
        match self {
            OutputError::Refused { why, .. } => Some(why),
            OutputError::Io { .. } => None,
        }
    }
}

fn option_text(option: &Option<String>) -> String {
    option
        .as_deref()
        .map(|o| format!(" ({o})"))
        .unwrap_or_default()
}

/// What to do about a failed system call, by errno.
fn io_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => "check the permissions, or give another path",
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => {
            "free some space or give a path on another filesystem"
        }
        Some(libc::EROFS) => "the filesystem is read-only; give another path",
        _ => "check the path and try again",
    }
}

/// An output path and the rules it is checked against. Built with
/// [`Output::new`] and the setters, then [`Output::check`]ed,
/// [`Output::create`]d or [`Output::open_in_place`]d.
#[derive(Debug, Clone)]
pub struct Output {
    path: PathBuf,
    option: Option<String>,
    inputs: Vec<PathBuf>,
    mode: Option<u32>,
    no_replace: bool,
}

/// A path checked by [`Output::check`]: where the file goes and what is
/// there now.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The file to create or replace, with a symlink given as the path
    /// resolved (its directory is the given one's, or the symlink's
    /// target's).
    pub path: PathBuf,
    /// The regular file there now, if any.
    pub existing: Option<fs::Metadata>,
}

impl Output {
    /// An output at `path` (as the user gave it; never `-`, which the
    /// caller handles as standard output).
    pub fn new(path: impl Into<PathBuf>) -> Output {
        Output {
            path: path.into(),
            option: None,
            inputs: Vec::new(),
            mode: None,
            no_replace: false,
        }
    }

    /// Never replace an existing file: [`OutputFile::commit`] fails with
    /// `AlreadyExists` when one appeared meanwhile (it links the new file
    /// into place instead of renaming). For files that must stay once
    /// made, such as a signing key.
    pub fn no_replace(mut self) -> Output {
        self.no_replace = true;
        self
    }

    /// Name the option that gave the path ("--output"), for messages.
    pub fn option(mut self, option: impl Into<String>) -> Output {
        self.option = Some(option.into());
        self
    }

    /// Add one of the command's inputs: the output may not be it.
    pub fn input(mut self, input: impl Into<PathBuf>) -> Output {
        self.inputs.push(input.into());
        self
    }

    /// Add several of the command's inputs.
    pub fn inputs<P: Into<PathBuf>>(mut self, inputs: impl IntoIterator<Item = P>) -> Output {
        self.inputs.extend(inputs.into_iter().map(Into::into));
        self
    }

    /// Permission bits for a new file (default: 0666 less the umask, and a
    /// replaced file's own bits). Keys use 0600.
    pub fn mode(mut self, mode: u32) -> Output {
        self.mode = Some(mode);
        self
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn refused(&self, why: Unsafe) -> OutputError {
        OutputError::Refused {
            path: self.path.clone(),
            option: self.option.clone(),
            why,
        }
    }

    fn io(&self, action: &'static str) -> impl Fn(io::Error) -> OutputError + '_ {
        move |source| OutputError::Io {
            path: self.path.clone(),
            option: self.option.clone(),
            action,
            source,
        }
    }

    /// Apply every rule (see the module doc) without opening anything for
    /// writing, and return where the file goes.
    pub fn check(&self) -> Result<Checked, OutputError> {
        let (resolved, linked) = resolve(&self.path).map_err(|e| match e {
            Resolve::Loop => self.refused(Unsafe::TooManyLinks),
            Resolve::Io(source) => self.io("inspect")(source),
        })?;
        let wrap = |why: Unsafe| match &linked {
            Some(_) => self.refused(Unsafe::Symlink {
                to: resolved.clone(),
                why: Box::new(why),
            }),
            None => self.refused(why),
        };
        let existing = match fs::metadata(&resolved) {
            Ok(md) => Some(md),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                return Err(self.refused(Unsafe::NotADirectory {
                    dir: parent(&resolved).to_path_buf(),
                }))
            }
            Err(e) => return Err(self.io("inspect")(e)),
        };
        if let Some(md) = &existing {
            if let Some(why) = unsafe_file(&resolved, md) {
                return Err(wrap(why));
            }
        }
        let dir = parent(&resolved);
        match fs::metadata(dir) {
            Ok(md) if md.is_dir() => {}
            Ok(_) => {
                return Err(self.refused(Unsafe::NotADirectory {
                    dir: dir.to_path_buf(),
                }))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                return Err(self.refused(Unsafe::NoDirectory {
                    dir: dir.to_path_buf(),
                }))
            }
            Err(e) => return Err(self.io("inspect")(e)),
        }
        if let Some(input) = self.same_as_input(&resolved, existing.as_ref()) {
            return Err(wrap(Unsafe::Input { input }));
        }
        Ok(Checked {
            path: resolved,
            existing,
        })
    }

    /// The input the output would overwrite, if any.
    fn same_as_input(&self, resolved: &Path, md: Option<&fs::Metadata>) -> Option<PathBuf> {
        let canonical = canonical_of(resolved);
        self.inputs
            .iter()
            .find(|input| {
                let same_file = match (md, fs::metadata(input)) {
                    (Some(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
                    _ => false,
                };
                same_file || canonical_of(input) == canonical
            })
            .cloned()
    }

    /// Check, then open a temporary file beside the target for the new
    /// contents; [`OutputFile::commit`] puts it in place.
    pub fn create(&self) -> Result<OutputFile, OutputError> {
        let checked = self.check()?;
        if self.no_replace && checked.existing.is_some() {
            return Err(self.io("create")(io::Error::from(
                io::ErrorKind::AlreadyExists,
            )));
        }
        let dir = parent(&checked.path).to_path_buf();
        let name = checked
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let mode = match (&checked.existing, self.mode) {
            (_, Some(m)) => Some(m),
            (Some(md), None) => Some(md.mode() & 0o777),
            (None, None) => None,
        };
        let (file, tmp) = create_temp(&dir, &name, mode, false).map_err(self.io("create"))?;
        let out = OutputFile {
            output: self.clone(),
            target: checked.path,
            tmp,
            file: Some(io::BufWriter::new(file)),
        };
        if let Some(f) = out.file.as_ref().map(io::BufWriter::get_ref) {
            if let Some(m) = mode {
                // Exact bits, whatever the umask.
                f.set_permissions(Permissions::from_mode(m))
                    .map_err(self.io("set the permissions of"))?;
            }
            if let Some(md) = &checked.existing {
                // Keep the replaced file's owner where the caller may give
                // it away (root); otherwise the new file is the caller's.
                let _ = std::os::unix::fs::fchown(f, Some(md.uid()), Some(md.gid()));
            }
        }
        Ok(out)
    }

    /// Check, then create a scratch file beside the target, open for
    /// reading and writing and already unlinked: nothing is ever put in
    /// place, and the space is given back when the file is closed.
    pub fn scratch(&self) -> Result<File, OutputError> {
        let checked = self.check()?;
        let dir = parent(&checked.path);
        let name = checked
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scratch".into());
        let (file, tmp) = create_temp(dir, &name, Some(0o600), true).map_err(self.io("create"))?;
        fs::remove_file(&tmp).map_err(self.io("unlink"))?;
        Ok(file)
    }

    /// Check, then create (or replace) the file with `bytes`, atomically.
    pub fn write(&self, bytes: &[u8]) -> Result<(), OutputError> {
        let mut f = self.create()?;
        f.write_all(bytes).map_err(self.io("write"))?;
        f.commit()
    }

    /// Check, then open the file under its final name for writing in
    /// place: created if missing (exclusively when `append` is false, so
    /// nothing existing is overwritten), appended to when `append`. Never
    /// through a symlink's final component: a symlink given as the path is
    /// resolved by the check and its target opened.
    pub fn open_in_place(&self, append: bool) -> Result<File, OutputError> {
        let checked = self.check()?;
        let mut o = OpenOptions::new();
        if append {
            o.append(true).create(true);
        } else {
            o.write(true).create_new(true);
        }
        o.read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK);
        if let Some(m) = self.mode {
            o.mode(m);
        }
        let file = o.open(&checked.path).map_err(self.io("open"))?;
        let md = file.metadata().map_err(self.io("inspect"))?;
        let same = checked
            .existing
            .as_ref()
            .is_none_or(|e| (e.dev(), e.ino()) == (md.dev(), md.ino()));
        if !md.is_file() || !same {
            return Err(self.refused(Unsafe::Special));
        }
        Ok(file)
    }
}

/// A new file's contents on their way to the target: a temporary file in
/// the same directory until [`OutputFile::commit`]; removed when dropped
/// without it.
#[derive(Debug)]
pub struct OutputFile {
    output: Output,
    target: PathBuf,
    tmp: PathBuf,
    file: Option<io::BufWriter<File>>,
}

impl OutputFile {
    /// The file that commit replaces (the given path, or a symlink's
    /// target).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Another descriptor of the temporary file (flushed first), to hand
    /// to a child process as its standard output.
    pub fn try_clone_file(&mut self) -> io::Result<File> {
        match self.file.as_mut() {
            Some(f) => {
                f.flush()?;
                f.get_ref().try_clone()
            }
            None => Err(io::Error::other("output already committed")),
        }
    }

    /// Flush and fsync the temporary file (it stays temporary): a write
    /// the filesystem cannot hold fails here.
    pub fn sync(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => {
                f.flush()?;
                f.get_ref().sync_data()
            }
            None => Ok(()),
        }
    }

    /// Flush, fsync and rename the temporary file into place (then fsync
    /// the directory, so the rename survives a crash). On failure the
    /// temporary file is removed and the target is as it was.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let Some(buf) = self.file.take() else {
            return Ok(());
        };
        let file = buf
            .into_inner()
            .map_err(|e| self.output.io("write")(e.into_error()))?;
        file.sync_all().map_err(self.output.io("write"))?;
        drop(file);
        if self.output.no_replace {
            // A hard link fails when the name exists; the temporary name
            // is removed when dropped.
            fs::hard_link(&self.tmp, &self.target).map_err(self.output.io("put in place"))?;
        } else {
            fs::rename(&self.tmp, &self.target).map_err(self.output.io("rename into place"))?;
            self.tmp = PathBuf::new();
        }
        if let Ok(d) = File::open(parent(&self.target)) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.file.as_mut() {
            Some(f) => f.write(buf),
            None => Err(io::Error::other("output already committed")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        self.file = None;
        if !self.tmp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Create `DIR/.NAME.PID.N.tmp` exclusively (`O_EXCL`, which also never
/// follows a symlink), trying new numbers while the name is taken; open
/// for reading too with `read`.
fn create_temp(
    dir: &Path,
    name: &str,
    mode: Option<u32>,
    read: bool,
) -> io::Result<(File, PathBuf)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..100 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let mut o = OpenOptions::new();
        o.write(true)
            .read(read)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        if let Some(m) = mode {
            o.mode(m);
        }
        match o.open(&tmp) {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EEXIST)))
}

/// Why resolving failed.
enum Resolve {
    Loop,
    Io(io::Error),
}

/// Follow symlinks in the last component of `path` to the file they name
/// (which need not exist). Returns that path and, when a symlink was
/// followed, the first link's text.
fn resolve(path: &Path) -> Result<(PathBuf, Option<PathBuf>), Resolve> {
    let mut at = path.to_path_buf();
    let mut first = None;
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&at) {
            Ok(md) if md.file_type().is_symlink() => {
                let to = fs::read_link(&at).map_err(Resolve::Io)?;
                if first.is_none() {
                    first = Some(to.clone());
                }
                at = if to.is_absolute() {
                    to
                } else {
                    parent(&at).join(to)
                };
            }
            Ok(_) => return Ok((at, first)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok((at, first))
            }
            Err(e) => return Err(Resolve::Io(e)),
        }
    }
    Err(Resolve::Loop)
}

/// The canonical form of a path, or of its directory joined with its name
/// when the file does not exist (yet).
fn canonical_of(path: &Path) -> PathBuf {
    if let Ok(c) = fs::canonicalize(path) {
        return c;
    }
    match (fs::canonicalize(parent(path)), path.file_name()) {
        (Ok(d), Some(n)) => d.join(n),
        _ => path.to_path_buf(),
    }
}

/// The directory a path is in ("." for a bare name).
fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Why an existing file (already resolved: `md` follows symlinks) may not
/// be replaced, or `None` when it may.
fn unsafe_file(path: &Path, md: &fs::Metadata) -> Option<Unsafe> {
    let t = md.file_type();
    if t.is_block_device() {
        return Some(Unsafe::BlockDevice);
    }
    if t.is_char_device() {
        return Some(Unsafe::CharDevice);
    }
    if t.is_dir() {
        return Some(Unsafe::Directory);
    }
    if !t.is_file() {
        return Some(Unsafe::Special);
    }
    let me = Backing::File {
        dev: split_dev(md.dev()),
        ino: md.ino(),
    };
    let devices: Vec<String> = loopdev::attached()
        .into_iter()
        .filter(|l| l.backing == Some(me))
        .map(|l| l.name)
        .collect();
    if !devices.is_empty() {
        return Some(Unsafe::BacksLoop { devices });
    }
    if is_swap(md) {
        return Some(Unsafe::Swap);
    }
    if locked_by_another(path, md) {
        return Some(Unsafe::Locked {
            processes: safety::processes_with_file_open(md),
        });
    }
    None
}

/// Whether the regular file `md` describes is listed in `/proc/swaps`.
fn is_swap(md: &fs::Metadata) -> bool {
    let Ok(text) = fs::read_to_string("/proc/swaps") else {
        return false;
    };
    safety::parse_swaps(&text).iter().any(|p| {
        fs::metadata(p).is_ok_and(|s| s.is_file() && (s.dev(), s.ino()) == (md.dev(), md.ino()))
    })
}

/// Whether another open file description holds an exclusive `flock` on the
/// file: a shared lock taken for an instant (read-only open) fails.
fn locked_by_another(path: &Path, md: &fs::Metadata) -> bool {
    let Ok(f) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
    else {
        return false;
    };
    let same = f
        .metadata()
        .is_ok_and(|m| (m.dev(), m.ino()) == (md.dev(), md.ino()));
    // SAFETY: `f` is an open descriptor for the whole call; flock takes no
    // pointers. The shared lock, if granted, is released when `f` closes.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    let busy = r != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK);
    same && busy
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("drivelab-out-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commit_replaces_the_file_atomically_and_leaves_no_temp() {
        let d = scratch("atomic");
        let p = d.join("r.json");
        fs::write(&p, b"old contents").unwrap();
        let mut f = Output::new(&p).create().unwrap();
        f.write_all(b"new").unwrap();
        // Until commit the old file is whole.
        assert_eq!(fs::read(&p).unwrap(), b"old contents");
        assert_eq!(names(&d).len(), 2);
        f.commit().unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(names(&d), ["r.json"]);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn dropped_without_commit_the_temp_is_removed_and_the_old_file_kept() {
        let d = scratch("drop");
        let p = d.join("r.json");
        fs::write(&p, b"kept").unwrap();
        {
            let mut f = Output::new(&p).create().unwrap();
            f.write_all(b"partial").unwrap();
        }
        assert_eq!(fs::read(&p).unwrap(), b"kept");
        assert_eq!(names(&d), ["r.json"]);
        let q = d.join("new.json");
        drop(Output::new(&q).create().unwrap());
        assert_eq!(names(&d), ["r.json"]);
        let _ = fs::remove_dir_all(&d);
    }

    /// A scratch file reads back what was written, leaves no name in the
    /// directory, and takes the same refusals as an output.
    #[test]
    fn a_scratch_file_is_unlinked_at_once_and_reads_back() {
        use std::io::{Read, Seek};
        let d = scratch("scratch");
        let mut f = Output::new(d.join("t.spool")).scratch().unwrap();
        assert!(names(&d).is_empty());
        f.write_all(b"spooled").unwrap();
        f.rewind().unwrap();
        let mut back = String::new();
        f.read_to_string(&mut back).unwrap();
        assert_eq!(back, "spooled");
        let input = d.join("in");
        fs::write(&input, b"x").unwrap();
        let err = Output::new(&input).input(&input).scratch().unwrap_err();
        assert!(err.is_refusal(), "{err}");
        assert_eq!(names(&d), ["in"]);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_replaced_file_keeps_its_permissions_and_a_new_one_takes_the_mode() {
        let d = scratch("perm");
        let p = d.join("r.json");
        fs::write(&p, b"x").unwrap();
        fs::set_permissions(&p, Permissions::from_mode(0o640)).unwrap();
        Output::new(&p).write(b"y").unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o640);
        let k = d.join("key");
        Output::new(&k).mode(0o600).write(b"secret").unwrap();
        assert_eq!(fs::metadata(&k).unwrap().mode() & 0o777, 0o600);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_symlink_given_as_the_path_has_its_target_replaced() {
        let d = scratch("link");
        fs::create_dir_all(d.join("real")).unwrap();
        let t = d.join("real/r.json");
        fs::write(&t, b"old").unwrap();
        let l = d.join("link.json");
        symlink("real/r.json", &l).unwrap();
        Output::new(&l).write(b"new").unwrap();
        assert!(fs::symlink_metadata(&l).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(&t).unwrap(), b"new");
        // A dangling symlink: the file it names is created.
        let dangling = d.join("dangling.json");
        symlink("real/made.json", &dangling).unwrap();
        Output::new(&dangling).write(b"made").unwrap();
        assert_eq!(fs::read(d.join("real/made.json")).unwrap(), b"made");
        assert_eq!(names(&d.join("real")), ["made.json", "r.json"]);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn devices_directories_inputs_and_locked_files_are_refused() {
        let d = scratch("refuse");
        let input = d.join("in.trace");
        fs::write(&input, b"input").unwrap();
        let locked = d.join("locked.bin");
        fs::write(&locked, b"held").unwrap();
        let holder = File::open(&locked).unwrap();
        // SAFETY: `holder` is open for the whole call; no pointers.
        assert_eq!(unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX) }, 0);
        symlink("/dev/null", d.join("null-link")).unwrap();
        symlink("loop-a", d.join("loop-b")).unwrap();
        symlink("loop-b", d.join("loop-a")).unwrap();
        symlink("in.trace", d.join("in-link")).unwrap();
        type Want = fn(&Unsafe) -> bool;
        let cases: Vec<(PathBuf, Want)> = vec![
            ("/dev/null".into(), |u| *u == Unsafe::CharDevice),
            ("/dev/full".into(), |u| *u == Unsafe::CharDevice),
            (d.clone(), |u| *u == Unsafe::Directory),
            (
                d.join("null-link"),
                |u| matches!(u, Unsafe::Symlink { why, .. } if **why == Unsafe::CharDevice),
            ),
            (d.join("loop-a"), |u| *u == Unsafe::TooManyLinks),
            (input.clone(), |u| matches!(u, Unsafe::Input { .. })),
            (d.join(".").join("in.trace"), |u| {
                matches!(u, Unsafe::Input { .. })
            }),
            (
                d.join("in-link"),
                |u| matches!(u, Unsafe::Symlink { why, .. } if matches!(**why, Unsafe::Input { .. })),
            ),
            (locked.clone(), |u| matches!(u, Unsafe::Locked { .. })),
            (d.join("missing/x.json"), |u| {
                matches!(u, Unsafe::NoDirectory { .. })
            }),
            (input.join("x.json"), |u| {
                matches!(u, Unsafe::NotADirectory { .. })
            }),
        ];
        for (p, want) in cases {
            let e = Output::new(&p)
                .option("--output")
                .input(&input)
                .create()
                .expect_err(&format!("{} was accepted", p.display()));
            let why = e.unsafe_reason().unwrap_or_else(|| panic!("{e}"));
            assert!(want(why), "{}: {e}", p.display());
            let line = e.to_string();
            assert!(line.starts_with("refusing to write to "), "{line}");
            assert!(line.ends_with("; nothing was written"), "{line}");
            assert!(!line.contains('\n'));
        }
        assert_eq!(fs::read(&input).unwrap(), b"input");
        assert_eq!(fs::read(&locked).unwrap(), b"held");
        assert_eq!(
            names(&d),
            [
                "in-link",
                "in.trace",
                "locked.bin",
                "loop-a",
                "loop-b",
                "null-link"
            ]
        );
        drop(holder);
        Output::new(&locked).write(b"free").unwrap();
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn no_replace_keeps_a_file_that_exists() {
        let d = scratch("noreplace");
        let k = d.join("key");
        Output::new(&k)
            .mode(0o600)
            .no_replace()
            .write(b"first")
            .unwrap();
        assert!(Output::new(&k).no_replace().write(b"second").is_err());
        let f = Output::new(&k).no_replace();
        let mut a = f.create().unwrap_err();
        assert!(!a.is_refusal());
        fs::remove_file(&k).unwrap();
        let mut late = f.create().unwrap();
        late.write_all(b"late").unwrap();
        fs::write(&k, b"raced").unwrap();
        assert!(late.commit().is_err());
        assert_eq!(fs::read(&k).unwrap(), b"raced");
        assert_eq!(names(&d), ["key"]);
        a = Output::new(&k).no_replace().create().unwrap_err();
        assert!(a.to_string().contains("cannot create"), "{a}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn in_place_appends_and_never_overwrites_when_not_appending() {
        let d = scratch("inplace");
        let p = d.join("journal");
        let mut f = Output::new(&p).open_in_place(false).unwrap();
        f.write_all(b"a\n").unwrap();
        drop(f);
        assert!(Output::new(&p).open_in_place(false).is_err());
        let mut f = Output::new(&p).open_in_place(true).unwrap();
        f.write_all(b"b\n").unwrap();
        drop(f);
        assert_eq!(fs::read(&p).unwrap(), b"a\nb\n");
        assert!(Output::new("/dev/null").open_in_place(true).is_err());
        let _ = fs::remove_dir_all(&d);
    }
}
