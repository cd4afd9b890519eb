//! The checks that decide whether drivelab may write to a device.
//!
//! Writing destroys data, so before any write the target is assessed: is it
//! read-only, does it back the running system, is it (or anything stacked on
//! it) mounted, active swap or held by dm/md/bcache/loop, does another
//! process hold it open `O_EXCL`, does it share bytes with a loop device
//! that is in use (two loops over one file, or the file itself), does it
//! carry a partition table or a filesystem / RAID / LVM / swap / crypto
//! signature? Every finding is collected (not just the first), so the
//! refusal names all of them in one line with what to do.
//!
//! `--force` overrides only what is on the device itself and harms nobody
//! else: a partition table or signature, an attached loop device that is
//! itself unused. It never overrides a read-only device (the write would
//! fail anyway), one that backs the running system (`/`, `/boot`,
//! `/boot/efi`, `/usr`, followed down through partitions, dm/md slaves and
//! loop backing files), or one whose bytes are in use: the device, a
//! partition of it or anything stacked on it mounted, active swap (a
//! device or a swap file), held by dm/md/bcache or held open `O_EXCL` by
//! another process, and a target sharing bytes with a loop device so used.
//! Writing any of these corrupts a live filesystem or another program's
//! data, so the refusal never offers `--force` for them. [`Finding::overridable`]
//! is that rule, in one place.
//!
//! Writers do not call this module themselves: [`crate::claim::Claim::open`]
//! runs the assessment, checks consent and holds the device `O_EXCL`.
//!
//! The signature probe only reads (`O_RDONLY`, plain `pread`): the first
//! 256 KiB and the last 256 KiB of the device.

use std::fmt;
use std::fs;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::block::blockdev::{self, split_dev, BlockDevice, MountEntry};
use crate::claim::loopdev::{self, range_text, Extent};

/// How much of the start and of the end of a device the probe reads.
const PROBE_SPAN: u64 = 256 * 1024;

/// How a device held open `O_EXCL` by someone else is described, in the
/// refusal and in a claim's `Busy` error alike.
pub const HELD_EXCLUSIVELY: &str = "held exclusively by another process (mounted, in use by another program, or being written by another drivelab)";

/// Mount points whose devices make up the running system.
const SYSTEM_MOUNTS: [&str; 4] = ["/", "/boot", "/boot/efi", "/usr"];

/// One reason a device should not be written. The `Display` form is a
/// clause for a one-line message ("it is mounted at /mnt").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Finding {
    /// The kernel marks the device read-only (sysfs `ro` = 1). Not overridable.
    ReadOnly,
    /// The device, or one of its partitions, holds (directly or through a
    /// dm/md/loop chain) a filesystem of the running system. Not overridable.
    RunningSystem {
        /// The system mount point (`/`, `/boot`, `/usr`, ...).
        mount_point: PathBuf,
        /// Kernel name of this device's member of the chain.
        via: String,
    },
    /// The device, a partition of it, or a device stacked on it is mounted.
    /// Not overridable: the mount holds that device, and writing what lies
    /// under it corrupts the live filesystem.
    Mounted {
        /// Kernel name of the mounted device.
        device: String,
        /// Where it is mounted.
        mount_point: PathBuf,
    },
    /// The device, a partition of it, or a device stacked on it is active
    /// swap. Not overridable.
    Swap {
        /// Kernel name of the swap device.
        device: String,
    },
    /// The target is an active swap file, or a loop device showing bytes
    /// of one. Not overridable.
    SwapFile {
        /// The swap file as `/proc/swaps` names it.
        path: PathBuf,
    },
    /// Other block devices are stacked on it (`holders/`: dm, md, bcache)
    /// or a loop device is attached to it.
    InUse {
        /// Kernel names of the users.
        by: Vec<String>,
        /// Whether something stacked on it is held: a dm/md/bcache holder
        /// (each claims what it sits on exclusively), or a stacked loop
        /// device that is mounted, swap or held open `O_EXCL` by a process.
        /// Then `--force` cannot override this; an attached loop device
        /// that is itself unused can be overridden.
        #[serde(default)]
        exclusive: bool,
    },
    /// A partition table is present (on the media, or partitions the kernel
    /// already knows).
    PartitionTable {
        /// `MBR` or `GPT`.
        scheme: String,
        /// What was seen, e.g. "2 partition entries", "header at LBA 1".
        detail: String,
    },
    /// A filesystem, RAID, LVM, swap or crypto signature.
    Signature {
        /// Short name: `ext4`, `xfs`, `btrfs`, `LVM2`, `mdraid 1.2`, `swap`,
        /// `LUKS`, `NTFS`, `FAT`, `ZFS`, `ISO9660`, `squashfs`.
        name: String,
        /// Human description with its article ("an ext4 filesystem").
        description: String,
        /// Byte offset of the magic on the device.
        offset: u64,
    },
    /// Another process holds the device open exclusively (`O_EXCL`): a
    /// filesystem mounted in another namespace, a program such as mkfs, or
    /// another drivelab writing it. Not overridable.
    HeldExclusively {
        /// Processes that have it (or a partition of it) open, as
        /// "python3 (pid 4242)"; empty when none is visible (the holder is
        /// in the kernel or in another PID namespace).
        processes: Vec<String>,
    },
    /// A loop device over the same bytes (same backing file or device,
    /// overlapping offset..offset+sizelimit) is in use: writing this target
    /// rewrites what that device shows. Refused as that device would be:
    /// not overridable when it is held exclusively (mounted, swap, dm/md,
    /// another program), overridable otherwise.
    SharesBytes {
        /// Kernel name of the loop device that is in use (`loop6`).
        device: String,
        /// Its backing file as the kernel names it.
        backing: PathBuf,
        /// First shared byte, as an offset into the backing.
        start: u64,
        /// One past the last shared byte; absent = to the end of the backing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        end: Option<u64>,
        /// How that device is in use (a `mounted`, `swap`, `in_use` or
        /// `held_exclusively` finding about it).
        cause: Box<Finding>,
        /// Whether that device is held exclusively (it cannot be opened
        /// `O_EXCL`); then `--force` cannot override this.
        exclusive: bool,
    },
    /// The device could not be read, so nothing could be ruled out.
    ProbeFailed {
        /// The error.
        error: String,
    },
}

impl Finding {
    /// Whether `--force` overrides this finding: only for what concerns
    /// the device's own content (a partition table, a signature, a probe
    /// that could not read it) or an attached loop device nobody uses.
    /// Any finding that says another user has these bytes (mounted, swap,
    /// held, or a device over the same bytes that is) is refused whatever
    /// `--force` says, as the device that user has would be.
    pub fn overridable(&self) -> bool {
        match self {
            Finding::ReadOnly
            | Finding::RunningSystem { .. }
            | Finding::HeldExclusively { .. }
            | Finding::Mounted { .. }
            | Finding::Swap { .. }
            | Finding::SwapFile { .. } => false,
            Finding::InUse { exclusive, .. } => !exclusive,
            Finding::SharesBytes {
                exclusive, cause, ..
            } => !exclusive && cause.overridable(),
            Finding::PartitionTable { .. }
            | Finding::Signature { .. }
            | Finding::ProbeFailed { .. } => true,
        }
    }

    /// Whether this finding is about the device's own content (a partition
    /// table or signature) rather than someone using its bytes.
    fn is_content(&self) -> bool {
        matches!(
            self,
            Finding::PartitionTable { .. } | Finding::Signature { .. }
        )
    }

    /// What the user should do about it (without the `--force` part).
    pub fn advice(&self, dev: &Path) -> String {
        let d = dev.display();
        match self {
            Finding::ReadOnly => {
                format!(
                    "make it writable first (blockdev --setrw {d}, or the write-protect switch)"
                )
            }
            Finding::RunningSystem { .. } => "choose another device".to_string(),
            Finding::Mounted { device, .. } => format!("unmount /dev/{device} first"),
            Finding::Swap { device } => format!("run swapoff /dev/{device} first"),
            Finding::SwapFile { path } => format!("run swapoff {} first", path.display()),
            Finding::InUse { by, .. } => {
                let each: Vec<String> = by.iter().map(|u| release(u)).collect();
                format!("{} first", each.join(", "))
            }
            Finding::HeldExclusively { processes } if processes.is_empty() => {
                "wait until whatever holds it lets go (check 'drivelab devices')".to_string()
            }
            Finding::HeldExclusively { processes } => {
                format!("stop {} first", processes.join(", "))
            }
            Finding::SharesBytes { device, cause, .. } => {
                cause.advice(&Path::new("/dev").join(device))
            }
            Finding::PartitionTable { .. } | Finding::Signature { .. } => {
                format!("wipe it first (wipefs -a {d})")
            }
            Finding::ProbeFailed { .. } => "check that the device is readable".to_string(),
        }
    }

    /// A few words for a device listing's STATE column.
    pub fn short(&self) -> String {
        match self {
            Finding::ReadOnly => "read-only".into(),
            Finding::RunningSystem { mount_point, .. } => {
                format!("system ({})", mount_point.display())
            }
            Finding::Mounted {
                device,
                mount_point,
            } => format!("mounted at {} ({device})", mount_point.display()),
            Finding::Swap { device } => format!("swap ({device})"),
            Finding::SwapFile { path } => format!("swap file ({})", path.display()),
            Finding::InUse { by, .. } => format!("in use by {}", by.join(",")),
            Finding::HeldExclusively { processes } if processes.is_empty() => {
                "in use: held exclusively by another process".into()
            }
            Finding::HeldExclusively { processes } => {
                format!("in use: held exclusively by {}", processes.join(", "))
            }
            Finding::SharesBytes { device, cause, .. } => {
                format!("in use: shares bytes with {device}, {}", cause.short())
            }
            Finding::PartitionTable { scheme, .. } => format!("has partition table ({scheme})"),
            Finding::Signature { name, .. } => format!("has {name} signature"),
            Finding::ProbeFailed { .. } => "unknown (unreadable)".into(),
        }
    }
}

impl Finding {
    /// This finding about device `name` as the end of "…, which …"
    /// ("is mounted at /mnt", "has /dev/loop6p1 mounted at /mnt").
    fn as_state_of(&self, name: &str) -> String {
        match self {
            Finding::Mounted {
                device,
                mount_point,
            } if device == name => format!("is mounted at {}", mount_point.display()),
            Finding::Mounted {
                device,
                mount_point,
            } => format!("has /dev/{device} mounted at {}", mount_point.display()),
            Finding::Swap { device } if device == name => "is active swap".to_string(),
            Finding::Swap { device } => format!("has /dev/{device} as active swap"),
            Finding::InUse { by, .. } => format!("is in use by {}", by.join(", ")),
            Finding::HeldExclusively { processes } if processes.is_empty() => {
                format!("is {HELD_EXCLUSIVELY}")
            }
            Finding::HeldExclusively { processes } => {
                format!("is held exclusively by {}", processes.join(", "))
            }
            other => format!("is in use ({other})"),
        }
    }
}

/// How to stop device `name` from using what it sits on: detach a loop
/// device, remove a device-mapper one, stop an md array.
fn release(name: &str) -> String {
    if name.starts_with("loop") {
        format!("detach {name} (losetup -d /dev/{name})")
    } else if name.starts_with("dm-") {
        format!("remove {name} (dmsetup remove /dev/{name})")
    } else if name.starts_with("md") {
        format!("stop {name} (mdadm --stop /dev/{name})")
    } else {
        format!("stop {name}")
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::ReadOnly => write!(f, "it is read-only (sysfs ro=1)"),
            Finding::RunningSystem { mount_point, via } => write!(
                f,
                "it backs the running system ({via} holds {})",
                mount_point.display()
            ),
            Finding::Mounted {
                device,
                mount_point,
            } => write!(f, "/dev/{device} is mounted at {}", mount_point.display()),
            Finding::Swap { device } => write!(f, "/dev/{device} is active swap"),
            Finding::SwapFile { path } => write!(f, "{} is an active swap file", path.display()),
            Finding::InUse { by, .. } => write!(f, "it is in use by {}", by.join(", ")),
            Finding::HeldExclusively { processes } => {
                write!(f, "it is {HELD_EXCLUSIVELY}")?;
                match processes.len() {
                    0 => Ok(()),
                    1 => write!(f, ": {} has it open", processes[0]),
                    _ => write!(f, ": {} have it open", processes.join(", ")),
                }
            }
            Finding::SharesBytes {
                device,
                backing,
                start,
                end,
                cause,
                ..
            } => write!(
                f,
                "it shares bytes {} of {} with /dev/{device}, which {}",
                range_text(*start, *end),
                backing.display(),
                cause.as_state_of(device)
            ),
            Finding::PartitionTable { scheme, detail } => {
                write!(f, "it holds a {scheme} partition table ({detail})")
            }
            Finding::Signature {
                description,
                offset,
                ..
            } => write!(f, "it holds {description} signature at byte {offset}"),
            Finding::ProbeFailed { error } => write!(f, "it could not be probed ({error})"),
        }
    }
}

/// Everything found about one device, before `--force` is considered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assessment {
    /// The device node assessed.
    pub device: PathBuf,
    /// Every finding, most serious first; empty = free to write.
    pub findings: Vec<Finding>,
}

impl Assessment {
    /// True when nothing speaks against writing.
    pub fn is_free(&self) -> bool {
        self.findings.is_empty()
    }

    /// The refusal for a write with or without `--force`, or `None` when the
    /// write may go ahead.
    pub fn refusal(&self, force: bool) -> Option<Refusal> {
        let reasons: Vec<Finding> = self
            .findings
            .iter()
            .filter(|f| !force || !f.overridable())
            .cloned()
            .collect();
        if reasons.is_empty() {
            None
        } else {
            Some(Refusal {
                device: self.device.clone(),
                reasons,
                forced: force,
            })
        }
    }

    /// One short state for a listing: "free", or the most serious finding's
    /// short form ("mounted at /mnt (loop3)", "has ext4 signature", ...).
    pub fn state(&self) -> String {
        // Prefer what a user acts on first: use before content, system last
        // (a system disk is also mounted, which says more).
        let rank = |f: &Finding| match f {
            Finding::Mounted { .. } => 0,
            Finding::Swap { .. } | Finding::SwapFile { .. } => 1,
            Finding::InUse { .. }
            | Finding::HeldExclusively { .. }
            | Finding::SharesBytes { .. } => 2,
            Finding::RunningSystem { .. } => 3,
            Finding::PartitionTable { .. } => 4,
            Finding::Signature { .. } => 5,
            Finding::ReadOnly => 6,
            Finding::ProbeFailed { .. } => 7,
        };
        self.findings
            .iter()
            .min_by_key(|f| rank(f))
            .map(Finding::short)
            .unwrap_or_else(|| "free".to_string())
    }
}

/// Why a write to a device is refused. `Display` is one line naming the
/// device, every reason, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The device node.
    pub device: PathBuf,
    /// The findings that block the write (with `--force`, only the ones it
    /// cannot override).
    pub reasons: Vec<Finding>,
    /// Whether `--force` was given.
    pub forced: bool,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refusing to write to {}: ", self.device.display())?;
        let clauses: Vec<String> = self.reasons.iter().map(|r| r.to_string()).collect();
        write!(f, "{}", clauses.join("; "))?;
        // Wiping the target's signature would wipe what another user of
        // the same bytes (a mounted or held device) relies on: content
        // advice only when nobody else uses them.
        let used = self.reasons.iter().any(|r| {
            !r.is_content() && !matches!(r, Finding::ProbeFailed { .. } | Finding::ReadOnly)
        });
        let mut advice: Vec<String> = Vec::new();
        for r in self.reasons.iter().filter(|r| !(used && r.is_content())) {
            let a = r.advice(&self.device);
            if !advice.contains(&a) {
                advice.push(a);
            }
        }
        let hard = self.reasons.iter().any(|r| !r.overridable());
        if hard {
            write!(
                f,
                "; {} (--force cannot override this)",
                advice.join(" and ")
            )
        } else {
            write!(
                f,
                "; {} or pass --force to write anyway",
                advice.join(" and ")
            )
        }
    }
}

impl std::error::Error for Refusal {}

/// Decide whether `dev` may be written. `force` overrides only the
/// findings [`Finding::overridable`] allows.
pub fn check_writable(dev: &BlockDevice, force: bool) -> Result<(), Refusal> {
    match assess(dev).refusal(force) {
        Some(r) => Err(r),
        None => Ok(()),
    }
}

/// Gather every finding about `dev` (reads only; never fails: a probe that
/// cannot read the device becomes a [`Finding::ProbeFailed`]).
///
/// Besides reading, it opens the device `O_RDONLY|O_EXCL` for an instant
/// (when nothing else already explains why it is busy) to learn whether
/// another process holds it exclusively; a device this process has claimed
/// counts as held too.
pub fn assess(dev: &BlockDevice) -> Assessment {
    let mut findings = Vec::new();
    if dev.read_only {
        findings.push(Finding::ReadOnly);
    }
    let (ctx, mounts) = match Context::read() {
        Ok(c) => c,
        Err(e) => {
            // Without the mount table nothing about use can be ruled out.
            findings.push(Finding::ProbeFailed {
                error: e.to_string(),
            });
            (Context::without_mounts(), Vec::new())
        }
    };

    // (f) the running system: the device or one of its partitions.
    let system = system_devices(&mounts);
    for (maj, min, name) in own_devices(dev) {
        if let Some((_, mp)) = system.iter().find(|(d, _)| *d == (maj, min)) {
            let f = Finding::RunningSystem {
                mount_point: mp.clone(),
                via: name,
            };
            if !findings.contains(&f) {
                findings.push(f);
            }
        }
    }

    // (a), (d), (e) mounted, swap, holders / attached loops.
    let (used, above) = usage(dev, &ctx, &[]);
    // (g) held open O_EXCL by someone else: only asked when nothing above
    // already says why (a mount, swap or dm/md holder holds it too).
    if used.is_empty() {
        if let Some(processes) = exclusive_holder(dev) {
            findings.push(Finding::HeldExclusively { processes });
        }
    }
    findings.extend(used);

    // (h) loop devices over the same bytes that are in use. Those stacked
    // on this device are already named above; a partition's own disk is
    // not an alias of it.
    if let Some(ext) = loopdev::device_extent(dev) {
        let mut skip: Vec<(u32, u32)> = above.iter().map(|a| (a.0, a.1)).collect();
        if let Ok(Some(p)) = dev.parent_disk() {
            skip.push((p.major, p.minor));
        }
        findings.extend(swap_files(&ext));
        findings.extend(aliases(&ext, &skip, &ctx));
    }

    // (b), (c) on-media content.
    if dev.size.0 > 0 {
        match probe_device(&dev.path, dev.size.0, dev.logical_sector.0) {
            Ok(found) => findings.extend(found),
            Err(e) => findings.push(Finding::ProbeFailed {
                error: e.to_string(),
            }),
        }
    }
    if !dev.partitions.is_empty()
        && !findings
            .iter()
            .any(|f| matches!(f, Finding::PartitionTable { .. }))
    {
        findings.push(Finding::PartitionTable {
            scheme: "kernel".into(),
            detail: format!("{} partitions known to the kernel", dev.partitions.len()),
        });
    }
    Assessment {
        device: dev.path.clone(),
        findings,
    }
}

/// Gather every finding about a regular file: whether it is an active swap
/// file, and whether it backs a loop device that is in use (mounted, swap,
/// held by a holder or another process), over any of its bytes. `md` is
/// the file's metadata.
pub fn assess_file(path: &Path, md: &fs::Metadata) -> Assessment {
    let mut findings = Vec::new();
    let ctx = match Context::read() {
        Ok((c, _)) => c,
        Err(e) => {
            findings.push(Finding::ProbeFailed {
                error: e.to_string(),
            });
            Context::without_mounts()
        }
    };
    let whole = Extent::whole_file(md);
    findings.extend(swap_files(&whole));
    findings.extend(aliases(&whole, &[], &ctx));
    Assessment {
        device: path.to_path_buf(),
        findings,
    }
}

/// Whether another process holds `dev` (or a partition of it) open
/// exclusively: `None` when an `O_RDONLY|O_EXCL` open succeeds (it is
/// closed at once) or fails for another reason than `EBUSY`; otherwise the
/// processes that have it open, as "python3 (pid 4242)" (empty when none is
/// visible: a mount in another namespace, or a kernel user).
pub fn exclusive_holder(dev: &BlockDevice) -> Option<Vec<String>> {
    if !held_exclusively(&dev.path) {
        return None;
    }
    let numbers: Vec<(u32, u32)> = own_devices(dev).into_iter().map(|o| (o.0, o.1)).collect();
    Some(processes_holding(&numbers))
}

/// True when opening `path` `O_RDONLY|O_EXCL` fails with `EBUSY`, three
/// times 10 ms apart (so another program's own brief probe, such as a
/// `drivelab devices` listing, is not taken for a holder).
pub fn held_exclusively(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    for attempt in 0..3 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        match fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_EXCL)
            .open(path)
        {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => continue,
            _ => return false,
        }
    }
    true
}

/// The processes with an open descriptor on any of these block devices,
/// as "comm (pid N)", by pid. Only what `/proc` shows this process
/// (all of it for root).
fn processes_holding(numbers: &[(u32, u32)]) -> Vec<String> {
    processes_with_open(|md| {
        md.file_type().is_block_device() && numbers.contains(&split_dev(md.rdev()))
    })
}

/// The processes with the file `md` describes open, as "comm (pid N)".
pub fn processes_with_file_open(md: &fs::Metadata) -> Vec<String> {
    let (dev, ino) = (md.dev(), md.ino());
    processes_with_open(|m| m.is_file() && m.dev() == dev && m.ino() == ino)
}

/// The processes with a descriptor whose target matches `is_it`.
fn processes_with_open(is_it: impl Fn(&fs::Metadata) -> bool) -> Vec<String> {
    processes_with_fd(|_, md| is_it(md))
        .into_iter()
        .map(|(_, s)| s)
        .collect()
}

/// The processes with a descriptor for which `is_it` (given the
/// descriptor's `/proc/PID/fd/N` path and what it points at) holds, as
/// (pid, "comm (pid N)"), by pid. Only what `/proc` shows this process
/// (all of it for root).
pub(crate) fn processes_with_fd(
    is_it: impl Fn(&Path, &fs::Metadata) -> bool,
) -> Vec<(u32, String)> {
    let mut out: Vec<(u32, String)> = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    for e in rd.filter_map(|e| e.ok()) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = fs::read_dir(e.path().join("fd")) else {
            continue;
        };
        let holds = fds.filter_map(|f| f.ok()).any(|f| {
            let p = f.path();
            fs::metadata(&p).is_ok_and(|md| is_it(&p, &md))
        });
        if holds {
            let comm = fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            out.push((pid, format!("{} (pid {pid})", comm.trim())));
        }
    }
    out.sort();
    out
}

/// What the use checks share: mounted devices, attached loops, active swap.
struct Context {
    /// Block device numbers of each mount.
    mounts: Vec<((u32, u32), MountEntry)>,
    /// Loop devices over block devices: (major, minor, name, backing numbers).
    loops: Vec<(u32, u32, String, (u32, u32))>,
    /// Active swap devices.
    swaps: Vec<((u32, u32), PathBuf)>,
}

impl Context {
    /// Read the mount table, loops and swaps; also return the raw mounts.
    fn read() -> Result<(Context, Vec<MountEntry>), blockdev::BlockDevError> {
        let mounts = blockdev::mounts()?;
        let ctx = Context {
            mounts: mounts
                .iter()
                .filter_map(|m| mount_dev(m).map(|d| (d, m.clone())))
                .collect(),
            loops: loop_backings(),
            swaps: active_swaps(),
        };
        Ok((ctx, mounts))
    }

    /// Loops and swaps only, for when the mount table cannot be read.
    fn without_mounts() -> Context {
        Context {
            mounts: Vec::new(),
            loops: loop_backings(),
            swaps: active_swaps(),
        }
    }
}

/// A device and its partitions, as (major, minor, name): what a
/// whole-device write destroys.
fn own_devices(dev: &BlockDevice) -> Vec<(u32, u32, String)> {
    let mut own: Vec<(u32, u32, String)> = vec![(dev.major, dev.minor, dev.name.clone())];
    own.extend(
        dev.partitions
            .iter()
            .map(|p| (p.major, p.minor, p.name.clone())),
    );
    own
}

/// How `dev` (or a partition of it, or anything stacked on them) is in
/// use: [`Finding::Mounted`], [`Finding::Swap`] and [`Finding::InUse`], in
/// that order; also every device found above it (itself and its
/// partitions included), as (major, minor, name). Devices in `exclude`
/// (and what is stacked on them) are not followed.
fn usage(
    dev: &BlockDevice,
    ctx: &Context,
    exclude: &[(u32, u32)],
) -> (Vec<Finding>, Vec<(u32, u32, String)>) {
    let own = own_devices(dev);
    let mut findings = Vec::new();
    // Everything stacked above: holders (recursively) and loops attached.
    let mut above: Vec<(u32, u32, String)> = own.clone();
    let mut users: Vec<String> = Vec::new();
    // Whether anything above is held: a holder claims what it sits on
    // exclusively; a stacked loop may be held by a process.
    let mut held = false;
    let mut i = 0;
    while i < above.len() && above.len() < 256 {
        let (maj, min, name) = above[i].clone();
        // Each device above, and whether it is a holder (not a loop).
        let mut next: Vec<((u32, u32, String), bool)> = Vec::new();
        if let Ok(d) = BlockDevice::from_name(&name) {
            for h in d.holder_devices().unwrap_or_default() {
                next.push(((h.major, h.minor, h.name), true));
            }
        }
        for (lmaj, lmin, lname, backing) in &ctx.loops {
            if *backing == (maj, min) {
                next.push(((*lmaj, *lmin, lname.clone()), false));
            }
        }
        for (n, holder) in next {
            if !above.iter().any(|a| (a.0, a.1) == (n.0, n.1)) && !exclude.contains(&(n.0, n.1)) {
                held = held || holder || held_exclusively(&Path::new("/dev").join(&n.2));
                if i < own.len() {
                    users.push(n.2.clone());
                }
                above.push(n);
            }
        }
        i += 1;
    }

    // (a) mounted: one finding per device, naming its shortest mount point
    // (bind mounts of the same filesystem add nothing).
    for (maj, min, name) in &above {
        let first = ctx
            .mounts
            .iter()
            .filter(|(d, _)| *d == (*maj, *min))
            .map(|(_, m)| &m.mount_point)
            .min_by_key(|p| p.as_os_str().len());
        if let Some(mp) = first {
            findings.push(Finding::Mounted {
                device: name.clone(),
                mount_point: mp.clone(),
            });
        }
    }
    // (d) swap.
    for (d, _) in &ctx.swaps {
        if let Some((_, _, name)) = above.iter().find(|a| (a.0, a.1) == *d) {
            findings.push(Finding::Swap {
                device: name.clone(),
            });
        }
    }
    // (e) holders / attached loops.
    if !users.is_empty() {
        users.sort();
        users.dedup();
        findings.push(Finding::InUse {
            by: users,
            exclusive: held,
        });
    }
    (findings, above)
}

/// A [`Finding::SharesBytes`] for every attached loop device (other than
/// those in `skip`) whose bytes overlap `target` and that is in use:
/// mounted, swap, held by a holder, or held `O_EXCL` by another process.
/// `skip` holds the target and what is stacked on it: a loop device the
/// target sits on is not "in use" because of the target itself.
fn aliases(target: &Extent, skip: &[(u32, u32)], ctx: &Context) -> Vec<Finding> {
    let mut out = Vec::new();
    for l in loopdev::attached() {
        if skip.contains(&(l.major, l.minor)) {
            continue;
        }
        let Some((start, end)) = l.extent().and_then(|e| target.overlap(&e)) else {
            continue;
        };
        let Ok(ld) = BlockDevice::from_dev_numbers(l.major, l.minor) else {
            continue;
        };
        let (used, _) = usage(&ld, ctx, skip);
        let exclusive = held_exclusively(&ld.path);
        let cause = match used.into_iter().next() {
            Some(f) => f,
            None if exclusive => {
                let numbers: Vec<(u32, u32)> =
                    own_devices(&ld).into_iter().map(|o| (o.0, o.1)).collect();
                Finding::HeldExclusively {
                    processes: processes_holding(&numbers),
                }
            }
            None => continue,
        };
        out.push(Finding::SharesBytes {
            device: l.name,
            backing: l.backing_file,
            start,
            end,
            cause: Box::new(cause),
            exclusive,
        });
    }
    out
}

/// The block device numbers of a mount: its `st_dev`, or for an anonymous
/// device (btrfs) the `st_rdev` of its source node.
fn mount_dev(m: &MountEntry) -> Option<(u32, u32)> {
    if m.major != 0 {
        return Some((m.major, m.minor));
    }
    let src = Path::new(&m.source);
    if !src.is_absolute() {
        return None;
    }
    let md = fs::metadata(src).ok()?;
    md.file_type()
        .is_block_device()
        .then(|| split_dev(md.rdev()))
}

/// Every attached loop device: (major, minor, name, numbers of the block
/// device its backing file is, or lives on).
fn loop_backings() -> Vec<(u32, u32, String, (u32, u32))> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return out;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(b) = fs::read_to_string(e.path().join("loop/backing_file")) else {
            continue;
        };
        let b = b.trim();
        let Ok(md) = fs::metadata(b) else { continue };
        if !md.file_type().is_block_device() {
            // A file on a filesystem: that filesystem's mount covers it.
            continue;
        }
        let Ok(dev) = fs::read_to_string(e.path().join("dev")) else {
            continue;
        };
        if let Some((a, c)) = dev.trim().split_once(':') {
            if let (Ok(a), Ok(c)) = (a.parse(), c.parse()) {
                out.push((a, c, name, split_dev(md.rdev())));
            }
        }
    }
    out
}

/// Block devices in `/proc/swaps`.
fn active_swaps() -> Vec<((u32, u32), PathBuf)> {
    let Ok(text) = fs::read_to_string("/proc/swaps") else {
        return Vec::new();
    };
    parse_swaps(&text)
        .into_iter()
        .filter_map(|p| {
            let md = fs::metadata(&p).ok()?;
            md.file_type()
                .is_block_device()
                .then(|| (split_dev(md.rdev()), p))
        })
        .collect()
}

/// A [`Finding::SwapFile`] for each active swap file (a regular file in
/// `/proc/swaps`) whose bytes `target` covers: the file itself, or a loop
/// device over it. The filesystem under a swap file is mounted, so a
/// device holding it is refused as mounted already.
fn swap_files(target: &Extent) -> Vec<Finding> {
    let Ok(text) = fs::read_to_string("/proc/swaps") else {
        return Vec::new();
    };
    parse_swaps(&text)
        .into_iter()
        .filter(|p| {
            fs::metadata(p)
                .is_ok_and(|md| md.is_file() && target.overlap(&Extent::whole_file(&md)).is_some())
        })
        .map(|path| Finding::SwapFile { path })
        .collect()
}

/// The file names in `/proc/swaps` text (header skipped, `\040` decoded).
pub fn parse_swaps(text: &str) -> Vec<PathBuf> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(|f| PathBuf::from(f.replace("\\040", " ")))
        .collect()
}

/// The block devices holding the running system, each with the system mount
/// point it serves: the mounts of `/`, `/boot`, `/boot/efi` and `/usr`, plus,
/// recursively, their parent disks, dm/md slaves and loop backing devices.
pub fn system_devices(mounts: &[MountEntry]) -> Vec<((u32, u32), PathBuf)> {
    let mut out: Vec<((u32, u32), PathBuf)> = Vec::new();
    for mp in SYSTEM_MOUNTS {
        let Some(m) = blockdev::mount_of(Path::new(mp), mounts) else {
            continue;
        };
        if m.mount_point != Path::new(mp) && mp != "/usr" {
            // /boot not separately mounted: it is part of / already.
            continue;
        }
        let Some(start) = mount_dev(&m) else { continue };
        let mut queue = vec![start];
        let mut seen: Vec<(u32, u32)> = Vec::new();
        while let Some(d) = queue.pop() {
            if seen.contains(&d) || seen.len() > 256 {
                continue;
            }
            seen.push(d);
            let Ok(bd) = BlockDevice::from_dev_numbers(d.0, d.1) else {
                continue;
            };
            if let Ok(Some(p)) = bd.parent_disk() {
                queue.push((p.major, p.minor));
            }
            for s in bd.slave_devices().unwrap_or_default() {
                queue.push((s.major, s.minor));
            }
            if let Some(b) = &bd.loop_backing_file {
                if let Ok(md) = fs::metadata(b) {
                    if md.file_type().is_block_device() {
                        queue.push(split_dev(md.rdev()));
                    } else if let Ok(Some(under)) = blockdev::backing_device_of_file(b) {
                        queue.push((under.major, under.minor));
                    }
                }
            }
        }
        for d in seen {
            if !out.iter().any(|(x, _)| *x == d) {
                out.push((d, m.mount_point.clone()));
            }
        }
    }
    out
}

/// Read the start and end of a device (read-only) and look for partition
/// tables and signatures.
pub fn probe_device(path: &Path, size: u64, logical_sector: u32) -> std::io::Result<Vec<Finding>> {
    let f = fs::File::open(path)?;
    let head_len = size.min(PROBE_SPAN);
    let mut head = vec![0u8; usize::try_from(head_len).unwrap_or(0)];
    f.read_exact_at(&mut head, 0)?;
    let tail_len = size.min(PROBE_SPAN);
    let tail_off = size - tail_len;
    let mut tail = vec![0u8; usize::try_from(tail_len).unwrap_or(0)];
    f.read_exact_at(&mut tail, tail_off)?;
    Ok(scan(&head, &tail, size, logical_sector))
}

/// The device's bytes at `off..off+len`, if the probe read them.
struct View<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    tail_off: u64,
}

impl View<'_> {
    fn at(&self, off: u64, len: usize) -> Option<&[u8]> {
        let end = off.checked_add(len as u64)?;
        if end <= self.head.len() as u64 {
            let o = usize::try_from(off).ok()?;
            return Some(&self.head[o..o + len]);
        }
        if off >= self.tail_off && end <= self.tail_off + self.tail.len() as u64 {
            let o = usize::try_from(off - self.tail_off).ok()?;
            return Some(&self.tail[o..o + len]);
        }
        None
    }

    fn is(&self, off: u64, magic: &[u8]) -> bool {
        self.at(off, magic.len()) == Some(magic)
    }

    fn le32(&self, off: u64) -> Option<u32> {
        let b = self.at(off, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

const MD_MAGIC: u32 = 0xa92b_4efc;
const ZFS_UB_MAGIC: u64 = 0x00ba_b10c;

/// Look for partition tables and signatures in the first bytes (`head`,
/// from offset 0) and last bytes (`tail`, ending at `size`) of a device.
///
/// Magics and offsets: ext2/3/4 0xEF53 at 1080 (variant from the feature
/// flags), XFS "XFSB" at 0, btrfs "_BHRfS_M" at 65600, LVM2 "LABELONE" at
/// the start of sectors 0-3, mdraid 0xa92b4efc at 0 (1.1), 4096 (1.2) and
/// near the end (1.0, 0.90), swap "SWAPSPACE2"/"SWAP-SPACE" 10 bytes before
/// the end of the first page (4, 8, 16 or 64 KiB pages), LUKS "LUKS\xba\xbe"
/// at 0, NTFS "NTFS    " at 3, FAT "FAT" at 54 or 82 (only with the 0x55AA
/// boot signature, to keep random data from matching), ZFS uberblock magic
/// 0x00bab10c in labels 0 to 3, ISO9660 "CD001" at 32769, squashfs "hsqs"
/// at 0; GPT "EFI PART" at LBA 1 or in the last LBA; MBR 0x55AA at 510 with
/// a non-empty entry.
pub fn scan(head: &[u8], tail: &[u8], size: u64, logical_sector: u32) -> Vec<Finding> {
    let v = View {
        head,
        tail,
        tail_off: size.saturating_sub(tail.len() as u64),
    };
    let mut out = Vec::new();
    let mut sig = |name: &str, description: &str, offset: u64| {
        out.push(Finding::Signature {
            name: name.to_string(),
            description: description.to_string(),
            offset,
        })
    };

    // ext2/3/4: s_magic 0xEF53 (LE) at 1024 + 0x38; the variant from the
    // feature flags at 1024 + 0x5C (compat), 0x60 (incompat), 0x64 (ro_compat).
    if v.is(1080, &[0x53, 0xEF]) {
        let compat = v.le32(1024 + 0x5C).unwrap_or(0);
        let incompat = v.le32(1024 + 0x60).unwrap_or(0);
        let ro_compat = v.le32(1024 + 0x64).unwrap_or(0);
        // extents | 64bit | flex_bg ; huge_file | gdt_csum | dir_nlink | extra_isize | metadata_csum
        let ext4 = incompat & (0x40 | 0x80 | 0x200) != 0
            || ro_compat & (0x08 | 0x10 | 0x20 | 0x40 | 0x400) != 0;
        if ext4 {
            sig("ext4", "an ext4 filesystem", 1080);
        } else if compat & 0x04 != 0 {
            sig("ext3", "an ext3 filesystem", 1080);
        } else {
            sig("ext2", "an ext2 filesystem", 1080);
        }
    }
    if v.is(0, b"XFSB") {
        sig("xfs", "an XFS filesystem", 0);
    }
    if v.is(65536 + 64, b"_BHRfS_M") {
        sig("btrfs", "a btrfs filesystem", 65536 + 64);
    }
    for s in 0..4u64 {
        if v.is(s * 512, b"LABELONE") {
            sig("LVM2", "an LVM2 physical volume", s * 512);
            break;
        }
    }
    // mdraid: 1.1 at 0, 1.2 at 4 KiB, 1.0 at 8 KiB before the end (rounded
    // down to 4 KiB), 0.90 at the last 64 KiB-aligned 64 KiB block.
    if v.le32(0) == Some(MD_MAGIC) {
        sig("mdraid 1.1", "an mdraid 1.1 RAID member", 0);
    }
    if v.le32(4096) == Some(MD_MAGIC) {
        sig("mdraid 1.2", "an mdraid 1.2 RAID member", 4096);
    }
    if size >= 8192 {
        let off = (((size / 512) - 16) & !7) * 512;
        if v.le32(off) == Some(MD_MAGIC) {
            sig("mdraid 1.0", "an mdraid 1.0 RAID member", off);
        }
    }
    if size >= 0x20000 {
        let off = (size & !0xFFFF) - 0x10000;
        if v.le32(off) == Some(MD_MAGIC) || v.le32(off) == Some(MD_MAGIC.swap_bytes()) {
            sig("mdraid 0.90", "an mdraid 0.90 RAID member", off);
        }
    }
    for ps in [4096u64, 8192, 16384, 65536] {
        if v.is(ps - 10, b"SWAPSPACE2") || v.is(ps - 10, b"SWAP-SPACE") {
            sig("swap", "a Linux swap", ps - 10);
            break;
        }
    }
    if v.is(0, b"LUKS\xba\xbe") {
        sig("LUKS", "a LUKS encryption", 0);
    }
    if v.is(3, b"NTFS    ") {
        sig("NTFS", "an NTFS filesystem", 3);
    }
    if v.is(510, &[0x55, 0xAA]) {
        if v.is(54, b"FAT") {
            sig("FAT", "a FAT filesystem", 54);
        } else if v.is(82, b"FAT") {
            sig("FAT", "a FAT32 filesystem", 82);
        }
    }
    // ZFS: uberblocks (magic 0x00bab10c, either byte order) fill the second
    // 128 KiB of each 256 KiB label; labels 0 and 1 start the device, 2 and 3
    // end its 256 KiB-aligned size.
    let aligned = size & !(PROBE_SPAN - 1);
    let labels = [
        0u64,
        256 * 1024,
        aligned.saturating_sub(512 * 1024),
        aligned.saturating_sub(256 * 1024),
    ];
    'zfs: for l in labels {
        for k in 0..128u64 {
            let off = l + 128 * 1024 + k * 1024;
            if let Some(b) = v.at(off, 8) {
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                if u64::from_le_bytes(a) == ZFS_UB_MAGIC || u64::from_be_bytes(a) == ZFS_UB_MAGIC {
                    sig("ZFS", "a ZFS pool member", off);
                    break 'zfs;
                }
            }
        }
    }
    if v.is(32769, b"CD001") {
        sig("ISO9660", "an ISO9660 filesystem", 32769);
    }
    if v.is(0, b"hsqs") {
        sig("squashfs", "a squashfs filesystem", 0);
    }

    // Partition tables. GPT: "EFI PART" at LBA 1 (for 512 and 4096-byte
    // sectors alike, so a table written for another sector size is seen),
    // or the backup header in the last LBA.
    if let Some(detail) = gpt_header(&v, size, logical_sector) {
        out.push(Finding::PartitionTable {
            scheme: "GPT".into(),
            detail,
        });
    }
    if let Some(n) = mbr_entries(&v) {
        if n > 0
            && !out
                .iter()
                .any(|f| matches!(f, Finding::PartitionTable { .. }))
        {
            out.push(Finding::PartitionTable {
                scheme: "MBR".into(),
                detail: format!("{n} partition entr{}", if n == 1 { "y" } else { "ies" }),
            });
        }
    }
    out
}

/// Where a GPT header is: "EFI PART" at LBA 1 for the device's, 512- or
/// 4096-byte sectors, else the backup header in the last LBA; `None`
/// without either.
fn gpt_header(v: &View<'_>, size: u64, logical_sector: u32) -> Option<String> {
    for ls in [u64::from(logical_sector.max(512)), 512, 4096] {
        if v.is(ls, b"EFI PART") {
            return Some(format!("header at byte {ls}"));
        }
    }
    for ls in [u64::from(logical_sector.max(512)), 512, 4096] {
        if size >= ls && v.is(size - ls, b"EFI PART") {
            return Some(format!("backup header at byte {}", size - ls));
        }
    }
    None
}

/// With an MBR boot signature (0x55 0xAA at 510), the number of non-empty
/// primary entries (16 bytes each from 446: status 0x00/0x80, type at +4
/// non-zero, sector count at +12 non-zero). `None` without the signature.
fn mbr_entries(v: &View<'_>) -> Option<usize> {
    if !v.is(510, &[0x55, 0xAA]) {
        return None;
    }
    let mut n = 0;
    for i in 0..4u64 {
        let e = v.at(446 + 16 * i, 16)?;
        let status_ok = e[0] == 0x00 || e[0] == 0x80;
        let count = u32::from_le_bytes([e[12], e[13], e[14], e[15]]);
        if status_ok && e[4] != 0 && count != 0 {
            n += 1;
        }
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: u64 = 1 << 20;

    fn blank() -> (Vec<u8>, Vec<u8>) {
        (
            vec![0u8; PROBE_SPAN as usize],
            vec![0u8; PROBE_SPAN as usize],
        )
    }

    fn names(f: &[Finding]) -> Vec<String> {
        f.iter()
            .map(|x| match x {
                Finding::Signature { name, offset, .. } => format!("{name}@{offset}"),
                Finding::PartitionTable { scheme, .. } => format!("table:{scheme}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn blank_device_has_no_findings() {
        let (h, t) = blank();
        assert!(scan(&h, &t, SIZE, 512).is_empty());
    }

    #[test]
    fn ext_variants_follow_feature_flags() {
        let (mut h, t) = blank();
        h[1080] = 0x53;
        h[1081] = 0xEF;
        assert_eq!(names(&scan(&h, &t, SIZE, 512)), ["ext2@1080"]);
        h[1024 + 0x5C] = 0x04; // has_journal
        assert_eq!(names(&scan(&h, &t, SIZE, 512)), ["ext3@1080"]);
        h[1024 + 0x60] = 0x40; // extents
        assert_eq!(names(&scan(&h, &t, SIZE, 512)), ["ext4@1080"]);
    }

    #[test]
    fn each_signature_at_its_offset() {
        let cases: &[(u64, &[u8], &str)] = &[
            (0, b"XFSB", "xfs@0"),
            (65600, b"_BHRfS_M", "btrfs@65600"),
            (512, b"LABELONE", "LVM2@512"),
            (4096, &MD_MAGIC.to_le_bytes(), "mdraid 1.2@4096"),
            (0, &MD_MAGIC.to_le_bytes(), "mdraid 1.1@0"),
            (4086, b"SWAPSPACE2", "swap@4086"),
            (65526, b"SWAP-SPACE", "swap@65526"),
            (0, b"LUKS\xba\xbe\x00\x02", "LUKS@0"),
            (3, b"NTFS    ", "NTFS@3"),
            (32769, b"CD001", "ISO9660@32769"),
            (0, b"hsqs", "squashfs@0"),
            (128 * 1024 + 3072, &ZFS_UB_MAGIC.to_le_bytes(), "ZFS@134144"),
        ];
        for (off, magic, want) in cases {
            let (mut h, t) = blank();
            let o = *off as usize;
            h[o..o + magic.len()].copy_from_slice(magic);
            assert_eq!(names(&scan(&h, &t, SIZE, 512)), [*want], "case {want}");
        }
    }

    #[test]
    fn end_of_device_signatures() {
        // md 1.0: ((1 MiB / 512 - 16) & !7) * 512 = 1 MiB - 8 KiB.
        let (h, mut t) = blank();
        let off10 = SIZE - 8192;
        let toff = SIZE - PROBE_SPAN;
        let o = (off10 - toff) as usize;
        t[o..o + 4].copy_from_slice(&MD_MAGIC.to_le_bytes());
        assert_eq!(
            names(&scan(&h, &t, SIZE, 512)),
            [format!("mdraid 1.0@{off10}")]
        );
        // md 0.90: 1 MiB & !64 KiB - 64 KiB = 960 KiB, big-endian host.
        let (h, mut t) = blank();
        let off09 = SIZE - 65536;
        let o = (off09 - toff) as usize;
        t[o..o + 4].copy_from_slice(&MD_MAGIC.to_be_bytes());
        assert_eq!(
            names(&scan(&h, &t, SIZE, 512)),
            [format!("mdraid 0.90@{off09}")]
        );
        // GPT backup header in the last 512-byte LBA.
        let (h, mut t) = blank();
        let o = t.len() - 512;
        t[o..o + 8].copy_from_slice(b"EFI PART");
        assert_eq!(names(&scan(&h, &t, SIZE, 512)), ["table:GPT"]);
    }

    #[test]
    fn fat_needs_boot_signature() {
        let (mut h, t) = blank();
        h[82..85].copy_from_slice(b"FAT");
        assert!(scan(&h, &t, SIZE, 512).is_empty());
        h[510] = 0x55;
        h[511] = 0xAA;
        assert_eq!(names(&scan(&h, &t, SIZE, 512)), ["FAT@82"]);
    }

    #[test]
    fn mbr_needs_a_non_empty_entry() {
        let (mut h, t) = blank();
        h[510] = 0x55;
        h[511] = 0xAA;
        // Signature alone, all entries empty: not a partition table.
        assert!(scan(&h, &t, SIZE, 512).is_empty());
        // Entry 2: status 0, type 0x83, LBA start 2048, 100 sectors.
        let e = 446 + 16;
        h[e + 4] = 0x83;
        h[e + 8..e + 12].copy_from_slice(&2048u32.to_le_bytes());
        h[e + 12..e + 16].copy_from_slice(&100u32.to_le_bytes());
        let f = scan(&h, &t, SIZE, 512);
        assert_eq!(
            f,
            [Finding::PartitionTable {
                scheme: "MBR".into(),
                detail: "1 partition entry".into()
            }]
        );
        // A bad status byte makes the entry invalid.
        h[e] = 0x12;
        assert!(scan(&h, &t, SIZE, 512).is_empty());
    }

    #[test]
    fn gpt_primary_at_lba1_for_4k_sectors() {
        let (mut h, t) = blank();
        h[4096..4104].copy_from_slice(b"EFI PART");
        assert_eq!(names(&scan(&h, &t, SIZE, 4096)), ["table:GPT"]);
    }

    #[test]
    fn refusal_line_names_device_reason_and_remedy() {
        let a = Assessment {
            device: PathBuf::from("/dev/loop9"),
            findings: vec![Finding::Signature {
                name: "ext4".into(),
                description: "an ext4 filesystem".into(),
                offset: 1080,
            }],
        };
        let r = a.refusal(false).unwrap();
        assert_eq!(
            r.to_string(),
            "refusing to write to /dev/loop9: it holds an ext4 filesystem signature at byte 1080; \
             wipe it first (wipefs -a /dev/loop9) or pass --force to write anyway"
        );
        assert!(a.refusal(true).is_none());
        assert_eq!(a.state(), "has ext4 signature");
    }

    #[test]
    fn force_never_overrides_system_or_read_only() {
        let a = Assessment {
            device: PathBuf::from("/dev/vda"),
            findings: vec![
                Finding::RunningSystem {
                    mount_point: "/".into(),
                    via: "vda".into(),
                },
                Finding::Mounted {
                    device: "vda".into(),
                    mount_point: "/".into(),
                },
                Finding::ReadOnly,
            ],
        };
        let r = a.refusal(true).unwrap();
        assert_eq!(r.reasons.len(), 3);
        assert!(!r.to_string().contains("pass --force"));
        assert!(r.to_string().contains("--force cannot override"));
        assert_eq!(a.refusal(false).unwrap().reasons.len(), 3);
        assert_eq!(a.state(), "mounted at / (vda)");
    }

    fn mounted(device: &str) -> Finding {
        Finding::Mounted {
            device: device.into(),
            mount_point: "/mnt/t".into(),
        }
    }

    fn ext4() -> Finding {
        Finding::Signature {
            name: "ext4".into(),
            description: "an ext4 filesystem".into(),
            offset: 1080,
        }
    }

    /// The rule: --force overrides what is on the device itself and an
    /// unused loop on it, never another user's hold on the same bytes.
    #[test]
    fn force_overrides_content_never_a_use_of_the_bytes() {
        let shares = |cause: Finding, exclusive: bool| Finding::SharesBytes {
            device: "loop6".into(),
            backing: "/tmp/x.img".into(),
            start: 0,
            end: None,
            cause: Box::new(cause),
            exclusive,
        };
        let in_use = |exclusive| Finding::InUse {
            by: vec!["loop1".into()],
            exclusive,
        };
        let cases: Vec<(&str, Finding, bool)> = vec![
            ("signature", ext4(), true),
            (
                "partition table",
                Finding::PartitionTable {
                    scheme: "MBR".into(),
                    detail: "1 partition entry".into(),
                },
                true,
            ),
            ("an unused loop stacked on it", in_use(false), true),
            ("a stacked device that is held", in_use(true), false),
            ("mounted itself", mounted("loop0"), false),
            ("a stacked loop mounted", mounted("loop1"), false),
            ("a partition mounted", mounted("loop0p1"), false),
            (
                "swap",
                Finding::Swap {
                    device: "loop1".into(),
                },
                false,
            ),
            (
                "swap file",
                Finding::SwapFile {
                    path: "/swapfile".into(),
                },
                false,
            ),
            ("alias mounted", shares(mounted("loop6"), true), false),
            (
                "alias with a mounted loop stacked on it",
                shares(mounted("loop9"), false),
                false,
            ),
            (
                "alias in use by an unused loop",
                shares(in_use(false), false),
                true,
            ),
        ];
        for (what, f, overridable) in cases {
            assert_eq!(f.overridable(), overridable, "{what}");
            let a = Assessment {
                device: PathBuf::from("/dev/loop0"),
                findings: vec![f, ext4()],
            };
            let line = a.refusal(false).unwrap().to_string();
            assert_eq!(line.contains("pass --force"), overridable, "{what}: {line}");
            assert_eq!(
                line.contains("--force cannot override"),
                !overridable,
                "{what}: {line}"
            );
            match a.refusal(true) {
                None => assert!(overridable, "{what}: forced through"),
                Some(r) => {
                    assert!(!overridable, "{what}: {r}");
                    assert!(!r.to_string().contains("pass --force"), "{what}: {r}");
                }
            }
        }
    }

    #[test]
    fn no_wipefs_advice_when_the_bytes_are_shared_with_a_used_device() {
        let alias = Finding::SharesBytes {
            device: "loop6".into(),
            backing: "/tmp/x.img".into(),
            start: 0,
            end: None,
            cause: Box::new(mounted("loop6")),
            exclusive: true,
        };
        for used in [alias, mounted("loop1")] {
            let a = Assessment {
                device: PathBuf::from("/dev/loop0"),
                findings: vec![used, ext4()],
            };
            let line = a.refusal(false).unwrap().to_string();
            assert!(line.contains("ext4 filesystem signature"), "{line}");
            assert!(!line.contains("wipefs"), "{line}");
            assert!(line.ends_with("(--force cannot override this)"), "{line}");
        }
        // The stacked user is named with how to let go of it.
        let a = Assessment {
            device: PathBuf::from("/dev/loop0"),
            findings: vec![Finding::InUse {
                by: vec!["loop1".into(), "dm-0".into()],
                exclusive: true,
            }],
        };
        assert_eq!(
            a.refusal(true).unwrap().to_string(),
            "refusing to write to /dev/loop0: it is in use by loop1, dm-0; detach loop1 \
             (losetup -d /dev/loop1), remove dm-0 (dmsetup remove /dev/dm-0) first \
             (--force cannot override this)"
        );
    }

    #[test]
    fn a_swap_file_is_named_with_its_swapoff() {
        let a = Assessment {
            device: PathBuf::from("/tmp/s.img"),
            findings: vec![Finding::SwapFile {
                path: "/tmp/s.img".into(),
            }],
        };
        assert_eq!(
            a.refusal(true).unwrap().to_string(),
            "refusing to write to /tmp/s.img: /tmp/s.img is an active swap file; \
             run swapoff /tmp/s.img first (--force cannot override this)"
        );
        assert_eq!(a.state(), "swap file (/tmp/s.img)");
        let v = serde_json::to_value(&a.findings[0]).unwrap();
        assert_eq!(v["reason"], "swap_file");
        // A record stored before `exclusive` existed still reads.
        let old: Finding = serde_json::from_str(r#"{"reason":"in_use","by":["loop1"]}"#).unwrap();
        assert_eq!(
            old,
            Finding::InUse {
                by: vec!["loop1".into()],
                exclusive: false
            }
        );
    }

    #[test]
    fn swaps_file_parses() {
        let t = "Filename\tType\tSize\tUsed\tPriority\n/dev/sdb2 partition 100 0 -2\n/swap\\040file file 10 0 -3\n";
        assert_eq!(
            parse_swaps(t),
            [PathBuf::from("/dev/sdb2"), PathBuf::from("/swap file")]
        );
    }
}
