//! The claim: the one way drivelab gets something it may write.
//!
//! Writing destroys data, and a check that each writer must remember to
//! call is a check some writer forgets. So the device crate hands out a
//! writable descriptor in exactly one place, [`Claim::open`], which does
//! the whole job in one step: it runs the safety assessment
//! ([`crate::claim::safety`]: mounted, partitions, signatures, swap, holders, the
//! system disk, another process's exclusive hold, loop devices over the
//! same bytes), checks the user's consent (`--force` overrides what it may;
//! a confirmation list must name the device's serial or path), and only
//! then opens the target `O_RDWR` and keeps that descriptor for as long as
//! the claim lives:
//!
//! - a block device is opened `O_EXCL`, so no other process (another
//!   drivelab, mkfs, a mount) can claim it while we write, and a holder
//!   that appeared after the assessment makes the open itself fail with
//!   `EBUSY` (the race-free form of the check); that refusal is never
//!   overridable by `--force`;
//! - a regular file is locked with `flock(LOCK_EX|LOCK_NB)` (created, or
//!   extended, to [`ClaimOptions::create_size`] when asked).
//!
//! While a claim lives it is watched ([`crate::claim::watch`]): a loop device
//! attached over the same bytes, or another process opening the backing
//! file for writing, is found within a second (at once on the backing
//! file's open) and stops the program's writers.
//!
//! Engines and other device-crate code take a [`Claim`] (and at most a
//! descriptor from [`Claim::io_file`]), never a path. What was assessed and
//! consented to is kept as a [`ClaimRecord`] for the result.

//!
//! Beside the claim, in this folder, is what guards every other path to a
//! write or a read of the user's:
//!
//! - [`safety`]: the checks that decide whether a device may be written.
//! - [`watch`]: every live claim watched for aliases that appear while it
//!   is written (a loop device attached over the same bytes).
//! - [`loopdev`]: loop devices as windows onto a backing file's bytes, so
//!   aliases of one another can be found.
//! - [`output`]: the only way to write a file of drivelab's own (results,
//!   logs, stores, certificates, journals): refuses devices, loop backing
//!   files, swap, locked files and the command's inputs, and replaces a
//!   file atomically.
//! - [`input`]: the only way a user's file is read: a regular file, read
//!   up to the bound of its kind (job file, certificate, trace, …).

pub mod input;
pub mod loopdev;
pub mod output;
pub mod safety;
pub mod scheduler;
pub mod watch;

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::block::blockdev::{self, split_dev, BlockDevError, BlockDevice};
use crate::claim::safety::{Assessment, Finding, Refusal};
use crate::claim::watch::{Baseline, Key, Subject, Watched};

/// What the user said about writing: `--force`, and for destructive
/// commands that confirm each drive, the serials (or paths) confirmed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consent {
    /// Override every finding that may be overridden (not: read-only, the
    /// running system, held exclusively by another process).
    pub force: bool,
    /// When `Some`, the list must confirm the target (see [`confirms`]):
    /// a drive by its serial (or a `/dev/disk/by-id/` link to it), a
    /// device without a serial or a file by its path, as given or by any
    /// name that resolves to the same node. `None`: no confirmation asked.
    pub confirm: Option<Vec<String>>,
}

/// How to open the claimed target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClaimOptions {
    /// Open the held descriptor `O_DIRECT`.
    pub direct: bool,
    /// Regular files only (ignored for a block device): create the file if
    /// it does not exist, and extend it to this many bytes if it is
    /// shorter. `None`: the file must exist and keeps its size.
    pub create_size: Option<u64>,
}

/// What was claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A block device (held `O_EXCL`).
    Block,
    /// A regular file (held with `flock`).
    File,
}

/// How the claim keeps other writers out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hold {
    /// An `O_EXCL` open of a block device: the kernel refuses every other
    /// exclusive open (mounts, mkfs, another drivelab).
    ExclusiveOpen,
    /// `flock(LOCK_EX)` on a regular file: other drivelabs' claims fail.
    Flock,
}

/// The consent a claim was made under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsentRecord {
    /// Whether `--force` was given.
    pub force: bool,
    /// The confirmation entry that matched (a serial or a path); absent
    /// when no confirmation was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_by: Option<String>,
}

/// The record of a claim's safety assessment, kept in results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// The target as given.
    pub path: PathBuf,
    /// The target with symlinks resolved (`/dev/disk/by-id/…` → `/dev/sdb`).
    pub canonical: PathBuf,
    /// Block device or regular file.
    pub kind: TargetKind,
    /// Kernel name of the block device (`sdb`, `loop3`); absent for a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The device's serial number, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// Size in bytes when claimed (a file's after creating or extending it).
    pub size: u64,
    /// Logical block size in bytes (a file's: that of the device under it,
    /// or 512).
    pub logical_block: u32,
    /// Every finding of the assessment; empty when nothing spoke against
    /// writing.
    pub findings: Vec<Finding>,
    /// The findings `--force` overrode (the whole of `findings` when the
    /// claim was forced; empty otherwise).
    pub overridden: Vec<Finding>,
    /// The consent given.
    pub consent: ConsentRecord,
    /// How others are kept out while the claim lives.
    pub hold: Hold,
    /// Whether the claim created the file.
    pub created: bool,
    /// Whether the held descriptor is `O_DIRECT`.
    pub direct: bool,
}

/// Why a target cannot be claimed. Each message is one line that names
/// the target and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The assessment found something against writing that the consent
    /// given does not override.
    #[error("{0}")]
    Refused(Refusal),
    /// The exclusive open (or lock) failed: another process holds the
    /// target. Never overridable.
    #[error("{}", busy_line(.path, .reasons))]
    Busy {
        /// The target.
        path: PathBuf,
        /// [`Finding::HeldExclusively`] (with the processes seen holding
        /// it), then any use `--force` had overridden that explains the
        /// hold (such as the device being mounted).
        reasons: Vec<Finding>,
    },
    /// This process already holds a claim of the same device or file,
    /// under another name (a symlink, `/dev/disk/by-id/…`, a relative path).
    #[error("{} is the same {what} as {}, given twice; give each target once (nothing was written)", .path.display(), .first.display())]
    Duplicate {
        /// The target as given the second time.
        path: PathBuf,
        /// The name it was claimed under first.
        first: PathBuf,
        /// "device" or "file".
        what: &'static str,
    },
    /// A confirmation list was given and does not name this target.
    #[error("{} is not confirmed: pass --confirm-serial {token} ({what}); nothing was written", .path.display())]
    NotConfirmed {
        /// The target.
        path: PathBuf,
        /// What confirms it: the serial, or the path when it has none.
        token: String,
        /// What the token is ("the drive's serial", ...).
        what: String,
    },
    /// Nothing at that path (and no size to create a file with).
    #[error("{} does not exist; give an existing block device (list them with 'drivelab devices') or file, or a size to create the file", .path.display())]
    NotFound {
        /// The target.
        path: PathBuf,
    },
    /// Neither a block device nor a regular file.
    #[error("{} is not a regular file or block device; give a file or a /dev node", .path.display())]
    NotATarget {
        /// The target.
        path: PathBuf,
    },
    /// A block device of size 0.
    #[error("{}: the device has size 0 (an unattached loop device?); attach it or pick another", .path.display())]
    Empty {
        /// The target.
        path: PathBuf,
    },
    /// What was opened is not what was assessed (the node or file was
    /// replaced in between).
    #[error("{} changed while it was being claimed (replaced by another device or file); check what else is using it and try again", .path.display())]
    Changed {
        /// The target.
        path: PathBuf,
    },
    /// The block device could not be described.
    #[error(transparent)]
    Device(#[from] BlockDevError),
    /// Not an NVMe namespace's generic character device (/dev/ngXnY), or
    /// one whose namespace has no block device to claim it through.
    #[error("{} {why}", .path.display())]
    NotNvmeGeneric {
        /// The path given.
        path: PathBuf,
        /// What it is instead and what to do, in words.
        why: String,
    },
    /// Not a SCSI generic character device (/dev/sgN) of a disk with a
    /// block device to claim it through.
    #[error("{} {why}", .path.display())]
    NotScsiGeneric {
        /// The path given.
        path: PathBuf,
        /// What it is instead and what to do, in words.
        why: String,
    },
    /// A system call failed.
    #[error("cannot {action} {}: {source}; {}", .path.display(), io_hint(.source))]
    Io {
        /// The target.
        path: PathBuf,
        /// What was being done ("open for writing", "lock", ...).
        action: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
}

/// The one-line `Busy` message: the same form as a refusal.
fn busy_line(path: &Path, reasons: &[Finding]) -> String {
    Refusal {
        device: path.to_path_buf(),
        reasons: reasons.to_vec(),
        forced: false,
    }
    .to_string()
}

/// What to do about a failed system call, by errno.
fn io_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => "run as root, or check its permissions",
        Some(libc::EINVAL) => {
            "the filesystem may not support direct I/O (O_DIRECT); run without direct I/O"
        }
        Some(libc::ENOENT) => "check that its directory exists",
        Some(libc::ENOSPC) | Some(libc::EFBIG) => "free some space or give a smaller size",
        Some(libc::EROFS) => "it is on a read-only filesystem; pick another target",
        Some(libc::ENXIO) | Some(libc::ENODEV) => "the device is gone or has no medium",
        _ => "check the target and try again",
    }
}

/// A device or file claimed for writing: assessed, consented to, and held
/// (`O_EXCL` / `flock`) by an `O_RDWR` descriptor until dropped.
#[derive(Debug)]
pub struct Claim {
    /// The target as given.
    path: PathBuf,
    /// The held descriptor.
    file: File,
    /// The device, for a block device.
    device: Option<BlockDevice>,
    /// Bytes.
    size: u64,
    /// Bytes.
    logical_block: u32,
    /// Whether `file` is `O_DIRECT`.
    direct: bool,
    /// What was assessed and consented to.
    record: ClaimRecord,
    /// The watch for aliases, ended when the claim drops.
    watch: Watched,
}

impl Claim {
    /// Claim `path` for writing: assess it, check `consent`, then open it
    /// `O_RDWR` (plus `O_DIRECT` when `opts.direct`) and hold it — `O_EXCL`
    /// for a block device, `flock(LOCK_EX|LOCK_NB)` for a regular file
    /// (created or extended to `opts.create_size` when given).
    ///
    /// Nothing is opened for writing unless the assessment and consent
    /// pass; nothing is written at all (a file may be created or extended).
    pub fn open(path: &Path, consent: &Consent, opts: &ClaimOptions) -> Result<Claim, ClaimError> {
        match fs::metadata(path) {
            Ok(md) if md.file_type().is_block_device() => Claim::open_block(path, consent, opts),
            Ok(md) if md.is_file() => Claim::open_file(path, Some(md), consent, opts),
            Ok(_) => Err(ClaimError::NotATarget {
                path: path.to_path_buf(),
            }),
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && opts.create_size.is_some()
                    && !missing_device(path) =>
            {
                Claim::open_file(path, None, consent, opts)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(ClaimError::NotFound {
                path: path.to_path_buf(),
            }),
            Err(source) => Err(ClaimError::Io {
                path: path.to_path_buf(),
                action: "inspect",
                source,
            }),
        }
    }

    /// Claim a SCSI disk that may show size 0: the kernel's disk driver
    /// gives that size to a drive whose logical block length it does not
    /// support (a storage array's 520- or 528-byte drive), which a
    /// reformat (FORMAT UNIT) is for. Every other check of [`Claim::open`]
    /// applies; a block device that is not a SCSI disk of size 0 is still
    /// refused as [`ClaimError::Empty`].
    pub fn open_scsi_any_size(path: &Path, consent: &Consent) -> Result<Claim, ClaimError> {
        let scsi = BlockDevice::from_path(path).is_ok_and(|d| {
            Path::new("/sys/class/block")
                .join(&d.name)
                .join("device/scsi_disk")
                .exists()
        });
        if !scsi {
            return Claim::open(path, consent, &ClaimOptions::default());
        }
        Claim::open_block_sized(path, consent, &ClaimOptions::default(), true)
    }

    fn open_block(
        path: &Path,
        consent: &Consent,
        opts: &ClaimOptions,
    ) -> Result<Claim, ClaimError> {
        Claim::open_block_sized(path, consent, opts, false)
    }

    fn open_block_sized(
        path: &Path,
        consent: &Consent,
        opts: &ClaimOptions,
        size_zero_ok: bool,
    ) -> Result<Claim, ClaimError> {
        let dev = BlockDevice::from_path(path)?;
        if dev.size.0 == 0 && !size_zero_ok {
            return Err(ClaimError::Empty {
                path: path.to_path_buf(),
            });
        }
        if let Some(first) = watch::held_as(Key::Block(dev.major, dev.minor)) {
            return Err(ClaimError::Duplicate {
                path: path.to_path_buf(),
                first,
                what: "device",
            });
        }
        let subject = Subject::block(path, &dev);
        let base = Baseline::now(subject.file_id());
        let asm = safety::assess(&dev);
        if let Some(r) = asm.refusal(consent.force) {
            return Err(ClaimError::Refused(r));
        }
        let confirmed_by = confirmation(consent, path, dev.serial.as_deref())?;
        let mut flags = libc::O_EXCL;
        if opts.direct {
            flags |= libc::O_DIRECT;
        }
        let file = open_exclusive(path, flags).map_err(|source| {
            if source.raw_os_error() == Some(libc::EBUSY) {
                busy(path, &dev, &asm)
            } else {
                ClaimError::Io {
                    path: path.to_path_buf(),
                    action: "open for writing",
                    source,
                }
            }
        })?;
        let md = file.metadata().map_err(|source| ClaimError::Io {
            path: path.to_path_buf(),
            action: "stat",
            source,
        })?;
        if !md.file_type().is_block_device() || split_dev(md.rdev()) != (dev.major, dev.minor) {
            return Err(ClaimError::Changed {
                path: path.to_path_buf(),
            });
        }
        let record = ClaimRecord {
            path: path.to_path_buf(),
            canonical: fs::canonicalize(path).unwrap_or_else(|_| dev.path.clone()),
            kind: TargetKind::Block,
            device: Some(dev.name.clone()),
            serial: dev.serial.clone(),
            size: dev.size.0,
            logical_block: dev.logical_sector.0,
            overridden: overridden(&asm, consent),
            findings: asm.findings,
            consent: ConsentRecord {
                force: consent.force,
                confirmed_by,
            },
            hold: Hold::ExclusiveOpen,
            created: false,
            direct: opts.direct,
        };
        let watch = watch::register(subject, base).map_err(|source| ClaimError::Io {
            path: path.to_path_buf(),
            action: "watch",
            source,
        })?;
        Ok(Claim {
            path: path.to_path_buf(),
            file,
            size: dev.size.0,
            logical_block: dev.logical_sector.0,
            device: Some(dev),
            direct: opts.direct,
            record,
            watch,
        })
    }

    fn open_file(
        path: &Path,
        md: Option<fs::Metadata>,
        consent: &Consent,
        opts: &ClaimOptions,
    ) -> Result<Claim, ClaimError> {
        if let Some(first) = md
            .as_ref()
            .and_then(|m| watch::held_as(Key::File(m.dev(), m.ino())))
        {
            return Err(ClaimError::Duplicate {
                path: path.to_path_buf(),
                first,
                what: "file",
            });
        }
        let base = Baseline::now(md.as_ref().map(|m| (m.dev(), m.ino())));
        let asm = match &md {
            Some(md) => safety::assess_file(path, md),
            // A file about to be created backs nothing yet.
            None => Assessment {
                device: path.to_path_buf(),
                findings: Vec::new(),
            },
        };
        if let Some(r) = asm.refusal(consent.force) {
            return Err(ClaimError::Refused(r));
        }
        let confirmed_by = confirmation(consent, path, None)?;
        let io = |action: &'static str| {
            move |source: io::Error| ClaimError::Io {
                path: path.to_path_buf(),
                action,
                source,
            }
        };
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        if md.is_none() {
            // Only a file nobody made in the meantime: one that appeared
            // after the check was not assessed.
            o.create_new(true);
        }
        if opts.direct {
            o.custom_flags(libc::O_DIRECT);
        }
        let file = o.open(path).map_err(|source| {
            if source.kind() == io::ErrorKind::AlreadyExists {
                ClaimError::Changed {
                    path: path.to_path_buf(),
                }
            } else {
                io("open for writing")(source)
            }
        })?;
        let fmd = file.metadata().map_err(io("stat"))?;
        let same = md
            .as_ref()
            .is_none_or(|m| (m.dev(), m.ino()) == (fmd.dev(), fmd.ino()));
        if !fmd.is_file() || !same {
            return Err(ClaimError::Changed {
                path: path.to_path_buf(),
            });
        }
        if let Err(source) = lock_exclusive(&file) {
            if source.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(io("lock")(source));
            }
            // Let go first, so that this process is named only when it
            // really holds the file elsewhere (another claim of its own).
            drop(file);
            return Err(ClaimError::Busy {
                path: path.to_path_buf(),
                reasons: vec![Finding::HeldExclusively {
                    processes: safety::processes_with_file_open(&fmd),
                }],
            });
        }
        if let Some(n) = opts.create_size {
            if fmd.len() < n {
                file.set_len(n).map_err(io("extend"))?;
            }
        }
        let size = file.metadata().map_err(io("stat"))?.len();
        let logical_block = blockdev::backing_device_of_file(path)
            .ok()
            .flatten()
            .map(|d| d.logical_sector.0)
            .unwrap_or(512);
        let record = ClaimRecord {
            path: path.to_path_buf(),
            canonical: fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
            kind: TargetKind::File,
            device: None,
            serial: None,
            size,
            logical_block,
            overridden: overridden(&asm, consent),
            findings: asm.findings,
            consent: ConsentRecord {
                force: consent.force,
                confirmed_by,
            },
            hold: Hold::Flock,
            created: md.is_none(),
            direct: opts.direct,
        };
        let watch = watch::register(Subject::file(path, &fmd), base).map_err(io("watch"))?;
        Ok(Claim {
            path: path.to_path_buf(),
            file,
            device: None,
            size,
            logical_block,
            direct: opts.direct,
            record,
            watch,
        })
    }

    /// The target as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The block device; `None` for a regular file.
    pub fn device(&self) -> Option<&BlockDevice> {
        self.device.as_ref()
    }

    /// True for a block device.
    pub fn is_block(&self) -> bool {
        self.device.is_some()
    }

    /// Size in bytes when claimed.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Logical block size in bytes (the smallest direct I/O).
    pub fn logical_block(&self) -> u32 {
        self.logical_block
    }

    /// Whether the held descriptor is `O_DIRECT`.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// What was assessed and consented to, for the result.
    pub fn assessment(&self) -> &ClaimRecord {
        &self.record
    }

    /// The alias found over this claim's bytes while it was held (see
    /// [`crate::claim::watch`]), if any.
    pub fn alias(&self) -> Option<watch::Alias> {
        self.watch.alias()
    }

    /// A read-write descriptor on the claimed target for I/O, `O_DIRECT`
    /// when `direct`. With the held descriptor's own mode it is a duplicate
    /// of it; otherwise the same object reopened (through
    /// `/proc/self/fd`, so never another file that took its name) without
    /// `O_EXCL`, which the claim still holds. Only the engine and the
    /// device crate call this; dropping it leaves the claim in force.
    pub fn io_file(&self, direct: bool) -> io::Result<File> {
        if direct == self.direct {
            return self.file.try_clone();
        }
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        if direct {
            o.custom_flags(libc::O_DIRECT);
        }
        let f = o.open(format!("/proc/self/fd/{}", self.file.as_raw_fd()))?;
        let (a, b) = (f.metadata()?, self.file.metadata()?);
        if (a.dev(), a.ino(), a.rdev()) != (b.dev(), b.ino(), b.rdev()) {
            return Err(io::Error::other(
                "the reopened descriptor is not the claimed target",
            ));
        }
        Ok(f)
    }

    /// Write all of `buf` at byte `offset` of the claimed target (buffered
    /// unless the claim was opened direct), for small set-up writes such as
    /// laying out a file; bulk I/O goes through an engine.
    pub fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(buf, offset)
    }

    /// Zero `len` bytes at `offset` with the `BLKZEROOUT` ioctl on the
    /// claimed block device (see [`crate::block::zero::blkzeroout`]).
    pub fn zeroout(&self, offset: u64, len: u64) -> io::Result<()> {
        crate::block::zero::blkzeroout(&self.file, offset, len)
    }

    /// Discard `len` bytes at `offset` of the claimed target (see
    /// [`crate::block::zero::discard_range`]).
    pub fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        crate::block::zero::discard_range(&self.file, self.is_block(), offset, len)
    }

    /// Flush what was written through the claim to stable storage.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_all()
    }

    /// Drop the kernel's cached pages of the target. A command sent by
    /// passthrough (WRITE SAME, SCT Write Same, a sanitize) changes the
    /// medium behind the page cache, so a buffered reader would otherwise
    /// see the old data.
    pub fn drop_cached(&self) -> io::Result<()> {
        // SAFETY: posix_fadvise only reads its integer arguments; the
        // descriptor is open for the life of `self`.
        let rc =
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(rc))
        }
    }

    /// The held descriptor, for device-crate ioctls on the claimed device.
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// The sysfs directory of a character device (`/sys/dev/char/MAJ:MIN`,
/// resolved).
fn sys_char_dir(rdev: u64) -> io::Result<PathBuf> {
    let (major, minor) = split_dev(rdev);
    fs::canonicalize(format!("/sys/dev/char/{major}:{minor}"))
}

/// The metadata and sysfs directory of character device `node`, which
/// `/sys/class/CLASS` must list; `not()` is the error for any other node.
fn char_node_in_class(
    node: &Path,
    class: &str,
    not: impl Fn() -> ClaimError,
) -> Result<(fs::Metadata, PathBuf), ClaimError> {
    let md = match fs::metadata(node) {
        Ok(md) => md,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ClaimError::NotFound {
                path: node.to_path_buf(),
            })
        }
        Err(source) => {
            return Err(ClaimError::Io {
                path: node.to_path_buf(),
                action: "inspect",
                source,
            })
        }
    };
    if !md.file_type().is_char_device() {
        return Err(not());
    }
    let sys = sys_char_dir(md.rdev()).map_err(|_| not())?;
    let listed = sys
        .file_name()
        .map(|n| Path::new("/sys/class").join(class).join(n))
        .and_then(|p| fs::canonicalize(p).ok());
    if listed.as_ref() != Some(&sys) {
        return Err(not());
    }
    Ok((md, sys))
}

impl Claim {
    /// Open `node`, a generic character device that `mapping` (its block
    /// device and its own device number) ties to a block device, read-write
    /// with `flags`, when that block device is the one this claim holds
    /// (else `elsewhere(block)`); the node opened is checked to be the one
    /// mapped.
    fn open_generic_node(
        &self,
        node: &Path,
        (block, want): (PathBuf, u64),
        flags: libc::c_int,
        elsewhere: impl FnOnce(&Path) -> ClaimError,
    ) -> Result<File, ClaimError> {
        let held = self.file.metadata().map_err(|source| ClaimError::Io {
            path: self.path.clone(),
            action: "stat",
            source,
        })?;
        let mapped = fs::metadata(&block).map_err(|source| ClaimError::Io {
            path: block.clone(),
            action: "inspect",
            source,
        })?;
        if self.device.is_none() || mapped.rdev() != held.rdev() {
            return Err(elsewhere(&block));
        }
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(flags)
            .open(node)
            .map_err(|source| ClaimError::Io {
                path: node.to_path_buf(),
                action: "open for writing",
                source,
            })?;
        let got = f
            .metadata()
            .map(|m| (m.file_type().is_char_device(), m.rdev()));
        match (want, got) {
            (w, Ok((true, g))) if w == g => Ok(f),
            _ => Err(ClaimError::Changed {
                path: node.to_path_buf(),
            }),
        }
    }
}

/// The block device through which an NVMe namespace's generic character
/// device (`/dev/ngXnY`, fio's target for `ioengine=io_uring_cmd`) is
/// claimed: the `/dev/nvme…n…` disk of the same controller (their sysfs
/// `device` links resolve to one place) with the same namespace ID. The
/// kernel usually numbers both alike (ng0n1 and nvme0n1); that name is
/// tried first. Nothing is opened for writing.
pub fn nvme_generic_block(generic: &Path) -> Result<PathBuf, ClaimError> {
    generic_block_of(generic).map(|(block, _)| block)
}

/// [`nvme_generic_block`], with the device number of the character device
/// the mapping was made for.
fn generic_block_of(generic: &Path) -> Result<(PathBuf, u64), ClaimError> {
    let not = |why: &str| ClaimError::NotNvmeGeneric {
        path: generic.to_path_buf(),
        why: why.to_string(),
    };
    const WHAT: &str = "is not an NVMe namespace's generic character device; ioengine=io_uring_cmd (cmd_type=nvme) takes /dev/ngXnY (list them with 'ls /dev/ng*'); use ioengine=io_uring for block devices and files";
    // The node's sysfs directory sits under its controller; the class
    // nvme-generic lists it.
    let (md, sys) = char_node_in_class(generic, "nvme-generic", || not(WHAT))?;
    let ctrl = fs::canonicalize(sys.join("device")).map_err(|_| not(WHAT))?;
    // Opened as an NVMe handle opens a node: read-only, for the ioctl.
    let nsid = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(generic)
        .ok()
        .and_then(|f| crate::nvme::id::namespace_id(&f).ok().flatten())
        .ok_or_else(|| not("answers no NVMe namespace ID (NVME_IOCTL_ID); run as root, or give /dev/ngXnY of a namespace"))?;
    let ng = sys
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_string();
    let alike = ng.strip_prefix("ng").map(|rest| format!("nvme{rest}"));
    let mut names: Vec<String> = fs::read_dir("/sys/block")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with("nvme"))
                .collect()
        })
        .unwrap_or_default();
    names.sort_by_key(|n| Some(n) != alike.as_ref());
    for name in names {
        let dir = Path::new("/sys/block").join(&name);
        let same_ctrl = fs::canonicalize(dir.join("device")).is_ok_and(|c| c == ctrl);
        let same_ns = fs::read_to_string(dir.join("nsid"))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            == Some(nsid);
        let dev = Path::new("/dev").join(&name);
        if same_ctrl && same_ns && dev.exists() {
            return Ok((dev, md.rdev()));
        }
    }
    Err(not(&format!(
        "holds namespace {nsid}, which has no block device (/dev/nvmeXnY) to claim it through (its format or command set is not one the kernel's block driver takes); drivelab writes a namespace only through its block device's claim"
    )))
}

impl Claim {
    /// The generic character device `generic` (`/dev/ngXnY`) of the NVMe
    /// namespace this claim holds through its block device, opened
    /// read-write for passthrough commands (`ioengine=io_uring_cmd`). It
    /// must map to the claimed device ([`nvme_generic_block`]); the node
    /// opened is checked to be the one mapped. The claim's `O_EXCL` hold on
    /// the block device stays the hold.
    pub fn nvme_generic_file(&self, generic: &Path) -> Result<File, ClaimError> {
        let mapping = generic_block_of(generic)?;
        self.open_generic_node(generic, mapping, libc::O_CLOEXEC, |block| {
            ClaimError::NotNvmeGeneric {
                path: generic.to_path_buf(),
                why: format!(
                    "is the namespace of {}, not of the claimed {}",
                    block.display(),
                    self.path.display()
                ),
            }
        })
    }
}

/// The block device through which a SCSI disk's generic character device
/// (`/dev/sgN`, fio's asynchronous target for `ioengine=sg`) is claimed:
/// the disk (`/dev/sdX`) sysfs lists under the node's SCSI device. Nothing
/// is opened for writing.
pub fn scsi_generic_block(sg: &Path) -> Result<PathBuf, ClaimError> {
    scsi_generic_block_of(sg).map(|(block, _)| block)
}

/// [`scsi_generic_block`], with the device number of the character device
/// the mapping was made for.
fn scsi_generic_block_of(sg: &Path) -> Result<(PathBuf, u64), ClaimError> {
    let not = |why: &str| ClaimError::NotScsiGeneric {
        path: sg.to_path_buf(),
        why: why.to_string(),
    };
    const WHAT: &str = "is not a SCSI generic device; ioengine=sg takes a SCSI disk's /dev/sdX or its /dev/sgN (list them with 'ls /sys/class/scsi_generic')";
    let (md, sys) = char_node_in_class(sg, "scsi_generic", || not(WHAT))?;
    // The SCSI device's disk, if it is one (a tape or enclosure has none).
    let disks: Vec<String> = fs::read_dir(sys.join("device/block"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    match disks.as_slice() {
        [name] if Path::new("/dev").join(name).exists() => Ok((Path::new("/dev").join(name), md.rdev())),
        _ => Err(not(
            "belongs to a SCSI device with no disk (/dev/sdX) to claim it through; drivelab writes through /dev/sgN only under its disk's claim",
        )),
    }
}

impl Claim {
    /// The SCSI generic device `sg` (`/dev/sgN`) of the disk this claim
    /// holds, opened read-write (and non-blocking, as the sg driver's
    /// asynchronous interface is used) for SCSI commands. It must map to
    /// the claimed device ([`scsi_generic_block`]); the node opened is
    /// checked to be the one mapped. The claim's `O_EXCL` hold on the disk
    /// stays the hold.
    pub fn scsi_generic_file(&self, sg: &Path) -> Result<File, ClaimError> {
        let mapping = scsi_generic_block_of(sg)?;
        self.open_generic_node(sg, mapping, libc::O_CLOEXEC | libc::O_NONBLOCK, |block| {
            ClaimError::NotScsiGeneric {
                path: sg.to_path_buf(),
                why: format!(
                    "is the generic device of {}, not of the claimed {}",
                    block.display(),
                    self.path.display()
                ),
            }
        })
    }
}

impl Claim {
    /// Give the claimed regular file its blocks the way fio's `fallocate`
    /// option says: `native`/`posix` allocate `len` bytes from 0 (the size
    /// grows to cover them), `keep` allocates without changing the size,
    /// `truncate` sets the size to `len` if it is shorter, `none` does
    /// nothing.
    /// On a filesystem without fallocate (EOPNOTSUPP) `native` only sets
    /// the size and `keep` does nothing. A block device is never touched.
    pub fn preallocate(&self, mode: Prealloc, len: u64) -> io::Result<()> {
        let flags = match mode {
            _ if self.is_block() || len == 0 => return Ok(()),
            Prealloc::None => return Ok(()),
            Prealloc::Truncate => {
                if self.file.metadata()?.len() < len {
                    self.file.set_len(len)?;
                }
                return Ok(());
            }
            Prealloc::Native => 0,
            Prealloc::Keep => libc::FALLOC_FL_KEEP_SIZE,
        };
        match fallocate(&self.file, flags, 0, len) {
            // No fallocate here: the size alone, as fio's posix_fallocate
            // emulation leaves it (nothing for keep).
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                if flags == 0 && self.file.metadata()?.len() < len {
                    self.file.set_len(len)?;
                }
                Ok(())
            }
            r => r,
        }
    }

    /// Remove the claimed regular file (fio's `unlink`), while the claim
    /// still holds it: only when the path still names the claimed file, so
    /// a file that took its name in the meantime is left alone. A block
    /// device is refused.
    pub fn unlink(self) -> io::Result<()> {
        if self.is_block() {
            return Err(io::Error::other("a block device is never unlinked"));
        }
        let (a, b) = (fs::symlink_metadata(&self.path)?, self.file.metadata()?);
        if (a.dev(), a.ino()) != (b.dev(), b.ino()) {
            return Err(io::Error::other(
                "the path no longer names the claimed file; it was left alone",
            ));
        }
        fs::remove_file(&self.path)
    }
}

/// fio's `fallocate` option: how a file is given its blocks when it is
/// created or extended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Prealloc {
    /// Only the size is set (`none`, `0`).
    None,
    /// `fallocate(2)` with mode 0 (`native`, `posix`, `1`; fio's default).
    #[default]
    Native,
    /// `fallocate(FALLOC_FL_KEEP_SIZE)` (`keep`).
    Keep,
    /// `ftruncate(2)` to the size (`truncate`).
    Truncate,
}

fn fallocate(f: &File, mode: i32, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: fallocate takes a descriptor and integers and touches no
    // memory of ours; `f` keeps the descriptor open for the whole call.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), mode, offset as i64, len as i64) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What a [`FileSet`] holds: regular files or directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKind {
    /// Regular files (fio's filecreate, filestat, filedelete).
    Files,
    /// Directories (fio's dircreate, dirstat, dirdelete).
    Dirs,
}

/// A set of paths that fio's file engines create, look at and delete one
/// at a time, each operation timed as an I/O: too many to hold each open
/// (fio's example creates 500,000 files), and most do not exist when the
/// run starts. The set is the claim of them all: each path that exists
/// was assessed like a claimed file (and must be of the set's kind), each
/// missing one must be in an existing directory outside /dev, and every
/// directory of the set is locked `flock(LOCK_EX|LOCK_NB)` for as long as
/// the set lives, so two runs never work on the same directory's set at
/// once. Creating, removing and laying out a path of the set goes only
/// through it, and only for the paths it was made with.
#[derive(Debug)]
pub struct FileSet {
    paths: Vec<PathBuf>,
    kind: SetKind,
    /// The locked directories.
    _dirs: Vec<File>,
}

impl FileSet {
    /// Claim `paths` (see [`FileSet`]). Nothing is created or written.
    pub fn claim(
        paths: Vec<PathBuf>,
        kind: SetKind,
        consent: &Consent,
    ) -> Result<FileSet, ClaimError> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for p in &paths {
            match fs::symlink_metadata(p) {
                Ok(md) => {
                    let right = match kind {
                        SetKind::Files => md.is_file(),
                        SetKind::Dirs => md.is_dir(),
                    };
                    if !right {
                        return Err(ClaimError::NotATarget { path: p.clone() });
                    }
                    if kind == SetKind::Files {
                        let asm = safety::assess_file(p, &md);
                        if let Some(r) = asm.refusal(consent.force) {
                            return Err(ClaimError::Refused(r));
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if missing_device(p) {
                        return Err(ClaimError::NotFound { path: p.clone() });
                    }
                }
                Err(source) => {
                    return Err(ClaimError::Io {
                        path: p.clone(),
                        action: "inspect",
                        source,
                    })
                }
            }
            confirmation(consent, p, None)?;
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        let mut held = Vec::with_capacity(dirs.len());
        for d in dirs {
            let f = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY)
                .open(&d)
                .map_err(|source| ClaimError::Io {
                    path: d.clone(),
                    action: "open the directory of",
                    source,
                })?;
            if let Err(source) = lock_exclusive(&f) {
                if source.raw_os_error() != Some(libc::EWOULDBLOCK) {
                    return Err(ClaimError::Io {
                        path: d,
                        action: "lock",
                        source,
                    });
                }
                let processes = f
                    .metadata()
                    .map(|m| safety::processes_with_file_open(&m))
                    .unwrap_or_default();
                return Err(ClaimError::Busy {
                    path: d,
                    reasons: vec![Finding::HeldExclusively { processes }],
                });
            }
            held.push(f);
        }
        Ok(FileSet {
            paths,
            kind,
            _dirs: held,
        })
    }

    /// The paths, in the order given.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Files or directories.
    pub fn kind(&self) -> SetKind {
        self.kind
    }

    fn path(&self, i: usize) -> io::Result<&Path> {
        self.paths
            .get(i)
            .map(PathBuf::as_path)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
    }

    /// Create path `i` as fio's filecreate does (`open(O_CREAT|O_RDWR,
    /// 0600)`, closed at once; an existing file is opened as it is), or as
    /// a directory (mode 0700; one that exists is fine).
    pub fn create(&self, i: usize) -> io::Result<()> {
        let p = self.path(i)?;
        match self.kind {
            SetKind::Files => {
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(p)?;
                if !f.metadata()?.is_file() {
                    return Err(io::Error::from_raw_os_error(libc::EISDIR));
                }
                Ok(())
            }
            SetKind::Dirs => match fs::DirBuilder::new().mode(0o700).create(p) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && p.is_dir() => Ok(()),
                r => r,
            },
        }
    }

    /// Create path `i` before the run with `size` bytes laid out as fio
    /// does for its filestat and filedelete jobs (a directory gets no size).
    pub fn lay_out(&self, i: usize, size: u64, mode: Prealloc) -> io::Result<()> {
        self.create(i)?;
        if self.kind == SetKind::Dirs {
            return Ok(());
        }
        let f = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.path(i)?)?;
        if mode != Prealloc::None && mode != Prealloc::Truncate {
            let flags = if mode == Prealloc::Keep {
                libc::FALLOC_FL_KEEP_SIZE
            } else {
                0
            };
            match fallocate(&f, flags, 0, size) {
                Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
                r => r?,
            }
        }
        if f.metadata()?.len() < size {
            f.set_len(size)?;
        }
        Ok(())
    }

    /// Open file `i` of the set for I/O, read-write (`O_DIRECT` when
    /// `direct`), as fio opens a job's file when its turn comes: created
    /// (mode 0600, as fio creates files; fio's `create_on_open`) when
    /// `create`, else it must exist. Never follows a symlink; a directory
    /// set has no I/O files.
    /// The descriptor belongs to the caller; the set stays the claim.
    pub fn open_io(&self, i: usize, direct: bool, create: bool) -> io::Result<File> {
        if self.kind != SetKind::Files {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        let mut flags = libc::O_NOFOLLOW;
        if direct {
            flags |= libc::O_DIRECT;
        }
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .mode(0o600)
            .custom_flags(flags)
            .open(self.path(i)?)?;
        if !f.metadata()?.is_file() {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        Ok(f)
    }

    /// Remove path `i` (`unlink`, or `rmdir` for a directory).
    pub fn remove(&self, i: usize) -> io::Result<()> {
        let p = self.path(i)?;
        match self.kind {
            SetKind::Files => {
                if fs::symlink_metadata(p)?.is_dir() {
                    return Err(io::Error::from_raw_os_error(libc::EISDIR));
                }
                fs::remove_file(p)
            }
            SetKind::Dirs => fs::remove_dir(p),
        }
    }
}

/// The findings `--force` overrode: all of them when forced (a finding it
/// cannot override would have refused the claim).
fn overridden(asm: &Assessment, consent: &Consent) -> Vec<Finding> {
    if consent.force {
        asm.findings
            .iter()
            .filter(|f| f.overridable())
            .cloned()
            .collect()
    } else {
        Vec::new()
    }
}

/// The `Busy` error for a device whose `O_EXCL` open failed: who holds
/// it, and any overridden use that explains why (a mount, swap, holder).
fn busy(path: &Path, dev: &BlockDevice, asm: &Assessment) -> ClaimError {
    let mut reasons = vec![Finding::HeldExclusively {
        processes: safety::exclusive_holder(dev).unwrap_or_default(),
    }];
    reasons.extend(
        asm.findings
            .iter()
            .filter(|f| {
                matches!(
                    f,
                    Finding::Mounted { .. }
                        | Finding::Swap { .. }
                        | Finding::InUse { .. }
                        | Finding::SharesBytes { .. }
                )
            })
            .cloned(),
    );
    ClaimError::Busy {
        path: path.to_path_buf(),
        reasons,
    }
}

/// Whether a missing `path` names a missing device rather than a file to
/// create: its directory is on /dev's own filesystem (devtmpfs), not a
/// tmpfs mounted under it such as /dev/shm.
fn missing_device(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    crate::block::blockdev::in_devtmpfs(dir)
}

/// Check the confirmation list, if one was given: it must hold the serial
/// (when there is one) or the path, as given or resolved. Returns the
/// entry that matched.
fn confirmation(
    consent: &Consent,
    path: &Path,
    serial: Option<&str>,
) -> Result<Option<String>, ClaimError> {
    let Some(list) = &consent.confirm else {
        return Ok(None);
    };
    let hit = list
        .iter()
        .map(|s| s.trim())
        .find(|s| confirms(s, path, serial));
    match (hit, serial) {
        (Some(s), _) => Ok(Some(s.to_string())),
        (None, Some(serial)) => Err(ClaimError::NotConfirmed {
            path: path.to_path_buf(),
            token: serial.to_string(),
            what: "the drive's serial".into(),
        }),
        (None, None) => Err(ClaimError::NotConfirmed {
            path: path.to_path_buf(),
            token: path.display().to_string(),
            what: "its path, as it has no serial".into(),
        }),
    }
}

/// Whether confirmation `entry` names the target at `path` (whose serial
/// is `serial`). A drive with a serial is confirmed by its serial, or by a
/// `/dev/disk/by-id/` link resolving to it (the link is named after the
/// serial), never by another path: `/dev/sdX` can name another drive after
/// a rescan. Without a serial, by its path as given or any path resolving
/// to the same node (a symlink to it, the node a symlink names).
pub fn confirms(entry: &str, path: &Path, serial: Option<&str>) -> bool {
    let entry = entry.trim();
    if entry.is_empty() {
        return false;
    }
    let same_node = || match (fs::canonicalize(entry), fs::canonicalize(path)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    match serial {
        Some(serial) => serial == entry || (entry.starts_with("/dev/disk/by-id/") && same_node()),
        None => Path::new(entry) == path || same_node(),
    }
}

/// Open a block device `O_RDWR|O_EXCL` (plus `extra` flags). `EBUSY` is
/// tried five times 20 ms apart: another program's instant `O_EXCL` probe
/// (a `drivelab devices` listing) must not refuse a claim, a real holder
/// stays.
fn open_exclusive(path: &Path, flags: i32) -> io::Result<File> {
    let mut attempt = 0;
    loop {
        match OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(flags)
            .open(path)
        {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < 4 => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// `flock(LOCK_EX | LOCK_NB)` on the file's open file description.
fn lock_exclusive(f: &File) -> io::Result<()> {
    // SAFETY: flock takes a descriptor and an integer and touches no
    // memory of ours; `f` keeps the descriptor open for the whole call.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::FileExt;

    /// A fresh directory for this test, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            let p = std::env::temp_dir()
                .join(format!("drivelab-claim-unit-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn consent(force: bool, confirm: Option<&[&str]>) -> Consent {
        Consent {
            force,
            confirm: confirm.map(|l| l.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn a_new_file_is_created_at_its_size_and_recorded() {
        let d = Dir::new("create");
        let p = d.0.join("t.img");
        let opts = ClaimOptions {
            direct: false,
            create_size: Some(1 << 20),
        };
        let c = Claim::open(&p, &Consent::default(), &opts).unwrap();
        assert!(!c.is_block());
        assert!(c.device().is_none());
        assert_eq!(c.size(), 1 << 20);
        assert_eq!(fs::metadata(&p).unwrap().len(), 1 << 20);
        let r = c.assessment();
        assert!(r.created);
        assert_eq!(r.kind, TargetKind::File);
        assert_eq!(r.hold, Hold::Flock);
        let v = serde_json::to_value(r).unwrap();
        assert_eq!(v["kind"], "file");
        assert_eq!(v["hold"], "flock");
        assert_eq!(v["size"], 1 << 20);
        assert_eq!(v["findings"], serde_json::json!([]));
        assert_eq!(v["consent"]["force"], false);
        assert!(v.get("device").is_none());
        let back: ClaimRecord = serde_json::from_value(v).unwrap();
        assert_eq!(&back, r);
    }

    #[test]
    fn an_existing_file_is_extended_not_truncated() {
        let d = Dir::new("extend");
        let p = d.0.join("t.img");
        fs::write(&p, vec![7u8; 8192]).unwrap();
        let grow = ClaimOptions {
            direct: false,
            create_size: Some(16384),
        };
        let c = Claim::open(&p, &Consent::default(), &grow).unwrap();
        assert_eq!(c.size(), 16384);
        assert!(!c.assessment().created);
        drop(c);
        let shrink = ClaimOptions {
            direct: false,
            create_size: Some(4096),
        };
        let c = Claim::open(&p, &Consent::default(), &shrink).unwrap();
        assert_eq!(c.size(), 16384, "a smaller create_size must not truncate");
        let mut first = [0u8; 8192];
        fs::File::open(&p).unwrap().read_exact(&mut first).unwrap();
        assert!(first.iter().all(|b| *b == 7), "existing bytes changed");
    }

    #[test]
    fn a_missing_file_without_a_size_is_not_found() {
        let d = Dir::new("missing");
        let p = d.0.join("nope.img");
        let e = Claim::open(&p, &Consent::default(), &ClaimOptions::default()).unwrap_err();
        assert!(matches!(e, ClaimError::NotFound { .. }), "{e}");
        assert!(!p.exists());
        let line = e.to_string();
        assert!(
            line.contains("does not exist") && !line.contains('\n'),
            "{line}"
        );
    }

    #[test]
    fn a_second_claim_of_a_file_is_busy_until_the_first_drops() {
        let d = Dir::new("twice");
        let p = d.0.join("t.img");
        fs::write(&p, vec![0u8; 4096]).unwrap();
        // Another process holds the lock: busy, whatever --force says.
        let mut other = std::process::Command::new("flock")
            .args([
                "--no-fork",
                "-x",
                p.to_str().unwrap(),
                "sh",
                "-c",
                "echo held; exec sleep 30",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("flock(1)");
        let mut held = String::new();
        io::BufRead::read_line(
            &mut io::BufReader::new(other.stdout.take().unwrap()),
            &mut held,
        )
        .unwrap();
        let busy: Vec<Result<Claim, ClaimError>> = [false, true]
            .iter()
            .map(|f| Claim::open(&p, &consent(*f, None), &ClaimOptions::default()))
            .collect();
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(held.trim(), "held");
        for e in busy {
            let line = e.unwrap_err().to_string();
            assert!(line.contains(safety::HELD_EXCLUSIVELY), "{line}");
            assert!(line.contains("--force cannot override"), "{line}");
        }
        let first = Claim::open(&p, &Consent::default(), &ClaimOptions::default()).unwrap();
        drop(first);
        Claim::open(&p, &Consent::default(), &ClaimOptions::default()).unwrap();
    }

    /// The same file given twice in one command (once through a symlink)
    /// was reported as held by drivelab itself.
    #[test]
    fn the_same_file_given_twice_is_named_as_such() {
        let d = Dir::new("dup");
        let p = d.0.join("t.img");
        fs::write(&p, vec![0u8; 4096]).unwrap();
        let link = d.0.join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let first = Claim::open(&p, &Consent::default(), &ClaimOptions::default()).unwrap();
        for (again, force) in [(&p, false), (&link, false), (&link, true)] {
            let e =
                Claim::open(again, &consent(force, None), &ClaimOptions::default()).unwrap_err();
            assert!(matches!(e, ClaimError::Duplicate { .. }), "{e}");
            assert_eq!(
                e.to_string(),
                format!(
                    "{} is the same file as {}, given twice; give each target once \
                     (nothing was written)",
                    again.display(),
                    p.display()
                )
            );
        }
        drop(first);
        Claim::open(&link, &Consent::default(), &ClaimOptions::default()).unwrap();
    }

    #[test]
    fn io_file_writes_the_claimed_file_and_outlives_nothing() {
        let d = Dir::new("io");
        let p = d.0.join("t.img");
        fs::write(&p, vec![0u8; 8192]).unwrap();
        let c = Claim::open(&p, &Consent::default(), &ClaimOptions::default()).unwrap();
        let f = c.io_file(false).unwrap();
        f.write_all_at(b"claimed", 4096).unwrap();
        drop(f);
        let mut buf = [0u8; 7];
        fs::File::open(&p)
            .unwrap()
            .read_exact_at(&mut buf, 4096)
            .unwrap();
        assert_eq!(&buf, b"claimed");
        // The claim still holds the file after the I/O descriptor is gone.
        let e = Claim::open(&p, &Consent::default(), &ClaimOptions::default()).unwrap_err();
        assert!(matches!(e, ClaimError::Duplicate { .. }), "{e}");
        assert!(safety::processes_with_file_open(&fs::metadata(&p).unwrap())
            .iter()
            .any(|s| s.contains(&format!("(pid {})", std::process::id()))));
        // A descriptor in the other mode is a reopen of the same file
        // (O_DIRECT may be refused by the temp filesystem, e.g. tmpfs).
        match c.io_file(true) {
            Ok(g) => {
                let (a, b) = (g.metadata().unwrap(), fs::metadata(&p).unwrap());
                assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()));
            }
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}"),
        }
        assert_eq!(c.as_fd().as_raw_fd(), c.file.as_raw_fd());
    }

    #[test]
    fn confirmation_takes_the_serial_or_else_the_path() {
        let p = Path::new("/dev/loop-test-nonexistent");
        let c = |l: &[&str]| consent(false, Some(l));
        assert_eq!(
            confirmation(&Consent::default(), p, Some("S1")).unwrap(),
            None
        );
        assert_eq!(
            confirmation(&c(&["x", " S1 "]), p, Some("S1")).unwrap(),
            Some("S1".into())
        );
        // A drive with a serial is not confirmed by its path.
        assert!(confirmation(&c(&[p.to_str().unwrap()]), p, Some("S1")).is_err());
        assert_eq!(
            confirmation(&c(&[p.to_str().unwrap()]), p, None).unwrap(),
            Some(p.display().to_string())
        );
        let e = confirmation(&c(&["S2", ""]), p, Some("S1")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/loop-test-nonexistent is not confirmed: pass --confirm-serial S1 \
             (the drive's serial); nothing was written"
        );
        let e = confirmation(&c(&[]), p, None).unwrap_err();
        assert!(
            e.to_string().contains(
                "pass --confirm-serial /dev/loop-test-nonexistent (its path, as it has no serial)"
            ),
            "{e}"
        );
    }

    /// Confirming a target by the symlink it was given as (or the node a
    /// symlink names) was refused although a path confirms.
    #[test]
    fn a_path_confirms_through_a_symlink_either_way() {
        let d = Dir::new("confirm-link");
        let p = d.0.join("t.img");
        fs::write(&p, b"x").unwrap();
        let link = d.0.join("by-name");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let other = d.0.join("other.img");
        fs::write(&other, b"y").unwrap();
        let (ps, ls) = (p.to_str().unwrap(), link.to_str().unwrap());
        assert!(confirms(ls, &link, None));
        assert!(confirms(ps, &link, None));
        assert!(confirms(ls, &p, None));
        assert!(confirms(&format!("  {ls} "), &p, None));
        assert!(!confirms(ls, &other, None));
        assert!(!confirms("", &p, None));
        // A drive with a serial: the serial, or a by-id link to it only.
        assert!(confirms("S1", &p, Some("S1")));
        assert!(!confirms(ls, &p, Some("S1")));
        assert!(!confirms("/dev/disk/by-id/no-such-link", &p, Some("S1")));
        let c = Claim::open(
            &link,
            &consent(false, Some(&[ps])),
            &ClaimOptions::default(),
        )
        .unwrap();
        assert_eq!(c.assessment().consent.confirmed_by.as_deref(), Some(ps));
    }

    #[test]
    fn a_file_claim_needs_its_path_confirmed_when_asked() {
        let d = Dir::new("confirm");
        let p = d.0.join("t.img");
        fs::write(&p, vec![0u8; 4096]).unwrap();
        let e = Claim::open(
            &p,
            &consent(false, Some(&["nope"])),
            &ClaimOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(e, ClaimError::NotConfirmed { .. }), "{e}");
        let given = p.to_str().unwrap();
        let c = Claim::open(
            &p,
            &consent(false, Some(&[given])),
            &ClaimOptions::default(),
        )
        .unwrap();
        assert_eq!(c.assessment().consent.confirmed_by.as_deref(), Some(given));
    }

    #[test]
    fn a_directory_is_not_a_target() {
        let d = Dir::new("dir");
        let e = Claim::open(&d.0, &Consent::default(), &ClaimOptions::default()).unwrap_err();
        assert!(matches!(e, ClaimError::NotATarget { .. }), "{e}");
    }

    #[test]
    fn busy_line_names_the_holder_and_what_to_do() {
        let e = ClaimError::Busy {
            path: PathBuf::from("/dev/loop6"),
            reasons: vec![
                Finding::HeldExclusively {
                    processes: vec!["python3 (pid 42)".into()],
                },
                Finding::Mounted {
                    device: "loop6".into(),
                    mount_point: "/mnt/x".into(),
                },
            ],
        };
        assert_eq!(
            e.to_string(),
            "refusing to write to /dev/loop6: it is held exclusively by another process \
             (mounted, in use by another program, or being written by another drivelab): \
             python3 (pid 42) has it open; /dev/loop6 is mounted at /mnt/x; \
             stop python3 (pid 42) first and unmount /dev/loop6 first (--force cannot override this)"
        );
    }

    #[test]
    fn a_shared_byte_range_refusal_names_the_other_device() {
        let mounted = Finding::SharesBytes {
            device: "loop6".into(),
            backing: "/tmp/alias.img".into(),
            start: 1 << 20,
            end: None,
            cause: Box::new(Finding::Mounted {
                device: "loop6".into(),
                mount_point: "/mnt/x".into(),
            }),
            exclusive: true,
        };
        let a = Assessment {
            device: PathBuf::from("/dev/loop7"),
            findings: vec![mounted.clone()],
        };
        assert_eq!(
            a.refusal(true).unwrap().to_string(),
            "refusing to write to /dev/loop7: it shares bytes 1048576.. of /tmp/alias.img \
             with /dev/loop6, which is mounted at /mnt/x; unmount /dev/loop6 first \
             (--force cannot override this)"
        );
        assert_eq!(
            a.state(),
            "in use: shares bytes with loop6, mounted at /mnt/x (loop6)"
        );
        // A loop that is only in use by a loop stacked on it (no exclusive
        // hold) is refused as that device would be: --force may override.
        let stacked = Finding::SharesBytes {
            device: "loop6".into(),
            backing: "/tmp/alias.img".into(),
            start: 0,
            end: Some(4096),
            cause: Box::new(Finding::InUse {
                by: vec!["loop9".into()],
                exclusive: false,
            }),
            exclusive: false,
        };
        assert!(stacked.overridable());
        assert!(!mounted.overridable());
        assert_eq!(
            stacked.to_string(),
            "it shares bytes 0..4096 of /tmp/alias.img with /dev/loop6, which is in use by loop9"
        );
        let v = serde_json::to_value(&mounted).unwrap();
        assert_eq!(v["reason"], "shares_bytes");
        assert_eq!(v["cause"]["reason"], "mounted");
        let back: Finding = serde_json::from_value(v).unwrap();
        assert_eq!(back, mounted);
    }

    #[test]
    fn overridden_lists_what_force_let_through() {
        let sig = Finding::Signature {
            name: "ext4".into(),
            description: "an ext4 filesystem".into(),
            offset: 1080,
        };
        let a = Assessment {
            device: PathBuf::from("/dev/loop9"),
            findings: vec![sig.clone()],
        };
        assert_eq!(overridden(&a, &consent(true, None)), [sig]);
        assert!(overridden(&a, &Consent::default()).is_empty());
    }

    #[test]
    fn a_file_set_locks_its_directory_and_works_only_on_its_paths() {
        let d = Dir::new("fileset");
        let paths: Vec<PathBuf> = (0..3).map(|i| d.0.join(format!("f.{i}"))).collect();
        let set = FileSet::claim(paths.clone(), SetKind::Files, &consent(false, None)).unwrap();
        // A second set in the same directory waits for the first.
        let again = FileSet::claim(paths.clone(), SetKind::Files, &consent(false, None));
        assert!(matches!(again, Err(ClaimError::Busy { .. })), "{again:?}");
        set.create(0).unwrap();
        set.lay_out(1, 8192, Prealloc::Native).unwrap();
        assert_eq!(fs::metadata(&paths[0]).unwrap().len(), 0);
        assert_eq!(fs::metadata(&paths[1]).unwrap().len(), 8192);
        set.remove(1).unwrap();
        assert!(!paths[1].exists());
        // Only the set's own paths.
        assert!(set.create(3).is_err());
        drop(set);
        // A directory where a file is claimed is refused, naming it.
        fs::create_dir(&paths[2]).unwrap();
        let e = FileSet::claim(paths.clone(), SetKind::Files, &consent(false, None)).unwrap_err();
        assert!(e.to_string().contains("f.2"), "{e}");
        // As a directory set it is fine, and removed with rmdir.
        let dirs =
            FileSet::claim(vec![paths[2].clone()], SetKind::Dirs, &consent(false, None)).unwrap();
        dirs.remove(0).unwrap();
        assert!(!paths[2].exists());
    }

    #[test]
    fn unlink_removes_only_the_claimed_file() {
        let d = Dir::new("unlink");
        let p = d.0.join("t");
        let opts = ClaimOptions {
            direct: false,
            create_size: Some(0),
        };
        let c = Claim::open(&p, &consent(false, None), &opts).unwrap();
        c.preallocate(Prealloc::Truncate, 4096).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().len(), 4096);
        c.unlink().unwrap();
        assert!(!p.exists());
        // A file that took the name after the claim is left alone.
        let c = Claim::open(&p, &consent(false, None), &opts).unwrap();
        fs::remove_file(&p).unwrap();
        fs::write(&p, b"other").unwrap();
        assert!(c.unlink().is_err());
        assert_eq!(fs::read(&p).unwrap(), b"other");
    }
}
