//! Aliases that appear while a claim is held.
//!
//! The claim's assessment sees the loop devices over a target's bytes at
//! the moment it is taken, and its `O_EXCL` open keeps mounts and mkfs off
//! the claimed node itself. Neither stops someone from attaching a second
//! loop device over the same backing file (or over the claimed file, or
//! stacked on the claimed device) while drivelab writes, then formatting
//! and mounting it: a filesystem drivelab keeps overwriting. So every live
//! claim is registered here (by [`crate::claim::Claim::open`], removed when
//! the claim drops), and one watcher thread keeps looking:
//!
//! - an `inotify` `IN_OPEN` watch on the file holding the bytes (the
//!   claimed file, or a claimed loop device's backing file; the node of a
//!   claimed block device otherwise) wakes it on every open, the first step
//!   of `losetup`; it also re-checks once a second in any case;
//! - an alias is a loop device over any of the claimed bytes that was not
//!   attached when the claim was taken, or another process that keeps the
//!   backing file open for writing (`/proc/PID/fdinfo` flags) for
//!   250 ms without attaching a loop device. Readers, this process's own opens (the claim's
//!   `io_file`, the safety probe) and a listing are not aliases: they
//!   fire events, and the re-check finds nothing new.
//!
//! The first alias found is recorded ([`alias`]) and the hook the program
//! installed ([`on_alias`]: the binary sets its stop flag, which every
//! writer polls each turn) is called, so writing stops within a turn; the
//! program then reports the alias in one line. Nothing is added per I/O.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::block::blockdev::BlockDevice;
use crate::claim::loopdev::{self, Backing, Extent, LoopInfo};

/// How often the watcher looks without an event.
const PERIOD: Duration = Duration::from_secs(1);

/// How long a process must keep the file open for writing to count: a
/// `losetup` attaches its loop device within it (the loop is then named),
/// and another drivelab refused by the claim's lock opens it only for an
/// instant.
const GRACE: Duration = Duration::from_millis(250);

/// How often a suspected writer is looked at again within `GRACE`.
const STEP: Duration = Duration::from_millis(10);

/// A new user of a claimed target's bytes, found while it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    /// The claimed target, as given.
    pub target: PathBuf,
    /// The file holding the bytes, when they are a file's.
    pub backing: Option<PathBuf>,
    /// What appeared.
    pub by: AliasKind,
}

/// What kind of alias appeared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AliasKind {
    /// A loop device over the same bytes (`/dev/loop7`).
    Loop(PathBuf),
    /// A process with the backing file open for writing ("losetup (pid 42)").
    Process(String),
}

impl std::fmt::Display for Alias {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self.target.display();
        let over = match &self.backing {
            Some(b) if b != &self.target => format!("the same bytes ({})", b.display()),
            _ => "the same bytes".to_string(),
        };
        match &self.by {
            AliasKind::Loop(dev) => {
                let d = dev.display();
                write!(
                    f,
                    "stopped writing to {t}: {d} was attached over {over} while drivelab wrote \
                     them; the write is incomplete: detach {d} (losetup -d {d}) and run again \
                     to finish it"
                )
            }
            AliasKind::Process(p) => {
                let file = self.backing.as_deref().unwrap_or(&self.target).display();
                write!(
                    f,
                    "stopped writing to {t}: {p} opened {file} for writing while drivelab \
                     wrote it; the write is incomplete: stop {p} and run again to finish it"
                )
            }
        }
    }
}

/// The first alias found since the program started, if any.
pub fn alias() -> Option<Alias> {
    lock(&watcher().first).clone()
}

/// The alias found of every claim still held (one each), so that a
/// program holding many claims (the station) stops only the writer whose
/// bytes another device or process took.
pub fn aliases() -> Vec<Alias> {
    lock(&watcher().entries)
        .iter()
        .filter_map(|e| e.found.clone())
        .collect()
}

/// Install what to call when an alias is found (once; later calls are
/// ignored). The call comes from the watcher thread: it must only set a
/// flag.
pub fn on_alias(hook: fn()) {
    let _ = HOOK.set(hook);
}

static HOOK: OnceLock<fn()> = OnceLock::new();

/// The loop devices attached now and the processes with `file` open for
/// writing, taken before a claim's assessment: what the claim knew of.
#[derive(Debug, Clone, Default)]
pub(crate) struct Baseline {
    /// Each loop device by its numbers and the bytes it showed: a number
    /// detached and attached again over other bytes is a new loop.
    loops: Vec<((u32, u32), Option<Extent>)>,
    writers: Vec<u32>,
}

impl Baseline {
    /// What is there now, for a target whose bytes are those of the file
    /// `file` (dev, ino) when given.
    pub(crate) fn now(file: Option<(u64, u64)>) -> Baseline {
        Baseline {
            loops: loopdev::attached()
                .iter()
                .map(|l| ((l.major, l.minor), l.extent()))
                .collect(),
            writers: file.map(writers_of).unwrap_or_default(),
        }
    }
}

/// What a claim holds: a block device by its numbers, a file by its
/// filesystem and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    Block(u32, u32),
    File(u64, u64),
}

/// The target of the live claim of `key` in this process, if any: the
/// same device or file given again (through a symlink, or another name).
pub(crate) fn held_as(key: Key) -> Option<PathBuf> {
    lock(&watcher().entries)
        .iter()
        .find(|e| e.key == key)
        .map(|e| e.target.clone())
}

/// What a claim's bytes are, for the watcher.
pub(crate) struct Subject {
    /// The target as given.
    pub target: PathBuf,
    /// What is claimed.
    pub key: Key,
    /// The bytes; `None` when they cannot be described (no loop can then
    /// be compared).
    pub extent: Option<Extent>,
    /// The file whose openers are checked, with its path.
    pub file: Option<((u64, u64), PathBuf)>,
    /// The node watched when there is no file (a block device's).
    pub node: Option<PathBuf>,
}

impl Subject {
    /// A claimed regular file.
    pub(crate) fn file(target: &Path, md: &fs::Metadata) -> Subject {
        Subject {
            target: target.to_path_buf(),
            key: Key::File(md.dev(), md.ino()),
            extent: Some(Extent::whole_file(md)),
            file: Some((
                (md.dev(), md.ino()),
                fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf()),
            )),
            node: None,
        }
    }

    /// A claimed block device: a loop device's bytes are its backing
    /// file's (or device's); any other device's are its own.
    pub(crate) fn block(target: &Path, dev: &BlockDevice) -> Subject {
        let extent = loopdev::device_extent(dev);
        let file = LoopInfo::read(&dev.name).and_then(|l| match l.backing? {
            Backing::File { .. } => {
                let md = fs::metadata(&l.backing_file).ok()?;
                let same = matches!(extent, Some(Extent { backing: Backing::File { dev, ino }, .. })
                    if crate::block::blockdev::split_dev(md.dev()) == dev && md.ino() == ino);
                same.then(|| ((md.dev(), md.ino()), l.backing_file.clone()))
            }
            Backing::Block { .. } => None,
        });
        let node = match extent.map(|e| e.backing) {
            Some(Backing::Block { dev: (ma, mi) }) => {
                BlockDevice::from_dev_numbers(ma, mi).ok().map(|d| d.path)
            }
            _ => Some(dev.path.clone()),
        };
        Subject {
            target: target.to_path_buf(),
            key: Key::Block(dev.major, dev.minor),
            extent,
            file: file.clone(),
            node: if file.is_some() { None } else { node },
        }
    }

    /// The file whose openers are checked, as (dev, ino).
    pub(crate) fn file_id(&self) -> Option<(u64, u64)> {
        self.file.as_ref().map(|(id, _)| *id)
    }
}

/// A live registration; dropping it ends the watch.
#[derive(Debug)]
pub(crate) struct Watched {
    id: u64,
}

impl Watched {
    /// The alias found for this claim, if any.
    pub(crate) fn alias(&self) -> Option<Alias> {
        lock(&watcher().entries)
            .iter()
            .find(|e| e.id == self.id)
            .and_then(|e| e.found.clone())
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let w = watcher();
        let mut entries = lock(&w.entries);
        let Some(i) = entries.iter().position(|e| e.id == self.id) else {
            return;
        };
        let gone = entries.remove(i);
        if let (Some(wd), Some(fd)) = (gone.wd, &w.inotify) {
            if !entries.iter().any(|e| e.wd == Some(wd)) {
                // SAFETY: inotify_rm_watch takes two integers; the inotify
                // descriptor lives as long as the watcher (the program).
                unsafe { libc::inotify_rm_watch(fd.as_raw_fd(), wd) };
            }
        }
    }
}

/// Register a claim that was assessed after `base` was taken.
pub(crate) fn register(subject: Subject, base: Baseline) -> io::Result<Watched> {
    let w = watcher();
    start(w)?;
    let watch_path = subject
        .file
        .as_ref()
        .map(|(_, p)| p.clone())
        .or(subject.node.clone());
    let wd = match (&w.inotify, watch_path) {
        (Some(fd), Some(p)) => add_watch(fd, &p),
        _ => None,
    };
    let mut entries = lock(&w.entries);
    let id = entries.iter().map(|e| e.id).max().unwrap_or(0) + 1;
    entries.push(Entry {
        id,
        key: subject.key,
        backing: subject.file.as_ref().map(|(_, p)| p.clone()),
        file: subject.file_id(),
        target: subject.target,
        extent: subject.extent,
        base,
        wd,
        found: None,
    });
    Ok(Watched { id })
}

/// One registered claim.
#[derive(Debug, Clone)]
struct Entry {
    id: u64,
    key: Key,
    target: PathBuf,
    backing: Option<PathBuf>,
    extent: Option<Extent>,
    file: Option<(u64, u64)>,
    base: Baseline,
    wd: Option<i32>,
    found: Option<Alias>,
}

struct Watcher {
    entries: Mutex<Vec<Entry>>,
    first: Mutex<Option<Alias>>,
    /// `None` when inotify is unavailable: the periodic look remains.
    inotify: Option<OwnedFd>,
    started: OnceLock<io::Result<()>>,
}

fn watcher() -> &'static Watcher {
    static W: OnceLock<Watcher> = OnceLock::new();
    W.get_or_init(|| Watcher {
        entries: Mutex::new(Vec::new()),
        first: Mutex::new(None),
        inotify: inotify(),
        started: OnceLock::new(),
    })
}

/// A poisoned lock still holds consistent data (a plain list).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Start the watcher thread once.
fn start(w: &'static Watcher) -> io::Result<()> {
    let r = w.started.get_or_init(|| {
        std::thread::Builder::new()
            .name("claim-watch".into())
            .spawn(move || run(w))
            .map(|_| ())
    });
    match r {
        Ok(()) => Ok(()),
        Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
    }
}

fn inotify() -> Option<OwnedFd> {
    // SAFETY: inotify_init1 takes flags only and returns a new descriptor
    // or -1.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just returned by inotify_init1 and is owned by
    // nothing else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn add_watch(fd: &OwnedFd, path: &Path) -> Option<i32> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call; the
    // descriptor is open.
    let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), libc::IN_OPEN) };
    (wd >= 0).then_some(wd)
}

/// Wait up to `PERIOD` for an event; true when one (or more) came. All
/// pending events are read.
fn wait(fd: Option<&OwnedFd>) -> bool {
    let Some(fd) = fd else {
        std::thread::sleep(PERIOD);
        return false;
    };
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, owned by this frame, for the whole call.
    let n = unsafe { libc::poll(&mut p, 1, PERIOD.as_millis() as libc::c_int) };
    if n <= 0 {
        return false;
    }
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: `buf` is writable for its length; the descriptor is
        // non-blocking, so the loop ends when nothing is left.
        let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if r <= 0 {
            return true;
        }
    }
}

/// The watcher thread: look on every event and every `PERIOD`.
fn run(w: &'static Watcher) {
    loop {
        let event = wait(w.inotify.as_ref());
        let entries: Vec<Entry> = lock(&w.entries)
            .iter()
            .filter(|e| e.found.is_none())
            .cloned()
            .collect();
        if entries.is_empty() {
            continue;
        }
        let writers = event || w.inotify.is_none();
        for (id, a) in look(&entries, writers) {
            record(w, id, a);
        }
    }
}

/// Look for aliases of each entry: new loops over its bytes; with
/// `writers`, processes keeping its file open for writing. A suspected
/// writer is watched for up to `GRACE`: the loop device it attaches is
/// named once it appears; one that lets go without any is no alias.
fn look(entries: &[Entry], writers: bool) -> Vec<(u64, Alias)> {
    let mut found = new_loops(entries);
    let mut suspects: Vec<(usize, Vec<u32>)> = if writers {
        entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !found.iter().any(|(id, _)| *id == e.id))
            .filter_map(|(i, e)| Some((i, new_writers(e, e.file?))))
            .filter(|(_, w)| !w.is_empty())
            .collect()
    } else {
        Vec::new()
    };
    let deadline = Instant::now() + GRACE;
    // Each suspect: the entry, and the writers still holding its file.
    let mut holding: Vec<(usize, Vec<(u32, String)>)> = Vec::new();
    while !suspects.is_empty() && Instant::now() < deadline {
        std::thread::sleep(STEP);
        found = new_loops(entries);
        holding = suspects
            .iter()
            .filter(|(i, _)| !found.iter().any(|(id, _)| *id == entries[*i].id))
            .map(|(i, before)| {
                let still = entries[*i]
                    .file
                    .map(writer_names)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(pid, _)| before.contains(pid))
                    .collect::<Vec<_>>();
                (*i, still)
            })
            .filter(|(_, still)| !still.is_empty())
            .collect();
        suspects = holding
            .iter()
            .map(|(i, still)| (*i, still.iter().map(|(p, _)| *p).collect()))
            .collect();
    }
    for (i, still) in holding {
        if let Some((_, name)) = still.into_iter().next() {
            let e = &entries[i];
            found.push((e.id, alias_of(e, AliasKind::Process(name))));
        }
    }
    found
}

/// Loops attached after each entry's baseline whose bytes overlap it.
fn new_loops(entries: &[Entry]) -> Vec<(u64, Alias)> {
    let loops = loopdev::attached();
    let mut out = Vec::new();
    for e in entries {
        let Some(ext) = e.extent else { continue };
        let hit = loops.iter().find(|l| {
            let now = l.extent();
            !e.base.loops.contains(&((l.major, l.minor), now))
                && now.is_some_and(|x| x.overlap(&ext).is_some())
        });
        if let Some(l) = hit {
            let dev = Path::new("/dev").join(&l.name);
            out.push((e.id, alias_of(e, AliasKind::Loop(dev))));
        }
    }
    out
}

fn alias_of(e: &Entry, by: AliasKind) -> Alias {
    Alias {
        target: e.target.clone(),
        backing: e.backing.clone(),
        by,
    }
}

/// Processes other than this one with `file` open for writing now that
/// were not at the entry's baseline.
fn new_writers(e: &Entry, file: (u64, u64)) -> Vec<u32> {
    writers_of(file)
        .into_iter()
        .filter(|p| !e.base.writers.contains(p))
        .collect()
}

/// Processes other than this one with the file (dev, ino) open for writing.
fn writers_of(file: (u64, u64)) -> Vec<u32> {
    writer_names(file).into_iter().map(|(p, _)| p).collect()
}

fn writer_names(file: (u64, u64)) -> Vec<(u32, String)> {
    let me = std::process::id();
    crate::claim::safety::processes_with_fd(|fd, md| {
        md.is_file() && (md.dev(), md.ino()) == file && opened_for_writing(fd)
    })
    .into_iter()
    .filter(|(pid, _)| *pid != me)
    .collect()
}

/// Whether `/proc/PID/fd/N`'s descriptor was opened for writing, from the
/// `flags:` line (octal) of `/proc/PID/fdinfo/N`.
fn opened_for_writing(fd: &Path) -> bool {
    let info = fd
        .to_str()
        .map(|s| s.replacen("/fd/", "/fdinfo/", 1))
        .and_then(|p| fs::read_to_string(p).ok());
    info.as_deref().and_then(fdinfo_flags).is_some_and(|f| {
        let mode = f & libc::O_ACCMODE as u32;
        mode == libc::O_WRONLY as u32 || mode == libc::O_RDWR as u32
    })
}

/// The `flags:` value of fdinfo text.
fn fdinfo_flags(text: &str) -> Option<u32> {
    text.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
}

fn record(w: &Watcher, id: u64, a: Alias) {
    if let Some(e) = lock(&w.entries).iter_mut().find(|e| e.id == id) {
        e.found = Some(a.clone());
    }
    {
        let mut first = lock(&w.first);
        if first.is_none() {
            *first = Some(a);
        }
    }
    if let Some(hook) = HOOK.get() {
        hook();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdinfo_flags_are_octal() {
        let t = "pos:\t0\nflags:\t0100002\nmnt_id:\t30\nino:\t12\n";
        assert_eq!(fdinfo_flags(t), Some(0o100002));
        assert_eq!(fdinfo_flags("pos:\t0\n"), None);
    }

    #[test]
    fn an_alias_line_names_what_appeared() {
        let a = Alias {
            target: "/dev/loop3".into(),
            backing: Some("/tmp/f.img".into()),
            by: AliasKind::Loop("/dev/loop7".into()),
        };
        assert_eq!(
            a.to_string(),
            "stopped writing to /dev/loop3: /dev/loop7 was attached over the same bytes \
             (/tmp/f.img) while drivelab wrote them; the write is incomplete: detach \
             /dev/loop7 (losetup -d /dev/loop7) and run again to finish it"
        );
        let b = Alias {
            target: "/tmp/f.img".into(),
            backing: Some("/tmp/f.img".into()),
            by: AliasKind::Process("losetup (pid 42)".into()),
        };
        assert_eq!(
            b.to_string(),
            "stopped writing to /tmp/f.img: losetup (pid 42) opened /tmp/f.img for writing \
             while drivelab wrote it; the write is incomplete: stop losetup (pid 42) and run \
             again to finish it"
        );
    }

    #[test]
    fn this_process_is_never_a_writer() {
        let d = std::env::temp_dir().join(format!("drivelab-watch-{}", std::process::id()));
        fs::write(&d, b"x").unwrap();
        let f = fs::OpenOptions::new().write(true).open(&d).unwrap();
        let md = f.metadata().unwrap();
        assert!(writers_of((md.dev(), md.ino())).is_empty());
        // Our own descriptor is seen as a writer by the flag check.
        let link = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
        assert!(opened_for_writing(&link));
        let r = fs::File::open(&d).unwrap();
        let link = PathBuf::from(format!("/proc/self/fd/{}", r.as_raw_fd()));
        assert!(!opened_for_writing(&link));
        drop((f, r));
        let _ = fs::remove_file(&d);
    }
}
