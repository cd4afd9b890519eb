//! Block-device discovery from sysfs.
//!
//! Every other part of drivelab needs the same facts about a target before it
//! touches it: how big it is, its logical and physical sector sizes, what the
//! kernel will offload (write-zeroes, discard), who made it, and who else is
//! using it (partitions, holders, mounts, the file behind a loop device).
//! This module gathers them in one [`BlockDevice`] value, read from
//! `/sys/class/block/NAME` (via `/sys/dev/block/MAJ:MIN`), falling back to
//! the `BLKGETSIZE64` / `BLKSSZGET` / `BLKPBSZGET` ioctls only when sysfs
//! lacks a fact. It also parses `/proc/self/mountinfo`, which the safety
//! checks and the file-to-device lookup share.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::units::{Bytes, SectorSize};

/// Where the kernel publishes one directory per block device (disks and
/// partitions alike).
const SYS_CLASS_BLOCK: &str = "/sys/class/block";
/// Where the kernel publishes a `MAJ:MIN` link to each block device.
const SYS_DEV_BLOCK: &str = "/sys/dev/block";
/// Where the kernel publishes one directory per whole disk.
const SYS_BLOCK: &str = "/sys/block";

/// Errors from block-device discovery. Each message names the path and says
/// what to check next.
#[derive(Debug, thiserror::Error)]
pub enum BlockDevError {
    /// A file or sysfs attribute could not be read.
    #[error(
        "cannot read {path}: {source}; check that it exists{}",
        unless_root(" and that you have permission (run as root)")
    )]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The path exists but is not a block device node.
    #[error("{0} is not a block device; give a /dev node such as /dev/sdb (list them with 'drivelab devices')")]
    NotABlockDevice(PathBuf),
    /// The device number has no entry under /sys/dev/block.
    #[error("no sysfs entry for block device {major}:{minor}; is sysfs mounted on /sys?")]
    NoSysfsEntry {
        /// Major device number.
        major: u32,
        /// Minor device number.
        minor: u32,
    },
    /// No block device of that name exists under /sys/class/block.
    #[error("no block device named {0}; list them with 'drivelab devices'")]
    NoSuchDevice(String),
    /// A sysfs or procfs file held something that could not be parsed.
    #[error("cannot parse {path}: unexpected content {content:?}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it held (trimmed).
        content: String,
    },
}

/// Whether the process runs with effective user id 0.
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `hint` (such as " (run as root?)") when the process is not root, else
/// "": when the kernel refuses root, the cause is another, and telling root
/// to run as root misleads.
pub fn unless_root(hint: &str) -> &str {
    if running_as_root() {
        ""
    } else {
        hint
    }
}

fn io_err(path: &Path, source: io::Error) -> BlockDevError {
    BlockDevError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What kind of device this is, from its name and its sysfs `device/subsystem`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A loop device (`/dev/loopN`), backed by a file or another device.
    Loop,
    /// A compressed RAM disk (`/dev/zramN`).
    Zram,
    /// An NVMe namespace (`/dev/nvmeXnY`).
    Nvme,
    /// A SCSI disk that is an ATA/SATA drive behind libata (vendor "ATA").
    Ata,
    /// A SCSI disk (SAS, USB mass storage, virtio-scsi, scsi_debug, ...).
    Scsi,
    /// A virtio-blk disk (`/dev/vdX`).
    Virtio,
    /// A device-mapper device (`/dev/dm-N`: LVM, crypt, multipath).
    Dm,
    /// A Linux software RAID device (`/dev/mdN`).
    Md,
    /// An MMC / SD card.
    Mmc,
    /// A RAM disk (`/dev/ramN`, brd).
    Ram,
    /// Anything else.
    Other,
}

/// One block device (a whole disk or a partition) as sysfs describes it.
///
/// Sizes are bytes; sector sizes are bytes per sector. Optional fields are
/// `None` when this kind of device does not publish that fact.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockDevice {
    /// Kernel name, e.g. `sda`, `nvme0n1p2`, `loop3`.
    pub name: String,
    /// The device node, `/dev/NAME`.
    pub path: PathBuf,
    /// Major device number.
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
    /// Capacity in bytes (sysfs `size` is always in 512-byte units).
    pub size: Bytes,
    /// Logical block size: the unit of addressing and the smallest direct I/O.
    pub logical_sector: SectorSize,
    /// Physical block size: the smallest write the media does without a
    /// read-modify-write.
    pub physical_sector: SectorSize,
    /// True for spinning media (sysfs `queue/rotational`).
    pub rotational: bool,
    /// Model string, trimmed (`device/model`).
    pub model: Option<String>,
    /// Serial number, trimmed: `device/serial`, then `serial`, then SCSI VPD
    /// page 0x80, then the `wwid` as a last resort.
    pub serial: Option<String>,
    /// World-wide identifier (`wwid` or `device/wwid`), when published.
    pub wwid: Option<String>,
    /// Vendor string, trimmed (`device/vendor`; "ATA" for SATA behind libata).
    pub vendor: Option<String>,
    /// Firmware revision (`device/rev` for SCSI, `device/firmware_rev` for NVMe).
    pub firmware: Option<String>,
    /// What kind of device this is.
    pub kind: Kind,
    /// Removable media (sysfs `removable`).
    pub removable: bool,
    /// The kernel refuses writes (sysfs `ro`).
    pub read_only: bool,
    /// True for a partition.
    pub partition: bool,
    /// For a partition, the kernel name of its disk.
    pub parent: Option<String>,
    /// For a partition, its first byte on the parent disk.
    pub start: Option<Bytes>,
    /// Largest single write-zeroes request the kernel will offload, in bytes;
    /// 0 = no offload (BLKZEROOUT writes zero pages instead).
    pub write_zeroes_max_bytes: Bytes,
    /// Largest single discard request, in bytes; 0 = discard unsupported.
    pub discard_max_bytes: Bytes,
    /// Discard granularity in bytes (0 when discard is unsupported).
    pub discard_granularity: Bytes,
    /// Largest request the block layer builds, in KiB (`queue/max_sectors_kb`).
    pub max_sectors_kb: Option<u32>,
    /// Largest request the hardware takes, in KiB (`queue/max_hw_sectors_kb`).
    pub max_hw_sectors_kb: Option<u32>,
    /// Most scatter-gather segments per request (`queue/max_segments`).
    pub max_segments: Option<u32>,
    /// Request queue depth (`queue/nr_requests`).
    pub nr_requests: Option<u32>,
    /// The active I/O scheduler (the bracketed entry of `queue/scheduler`).
    pub scheduler: Option<String>,
    /// For a loop device, the file (or device) behind it
    /// (`loop/backing_file`); `None` when unattached.
    pub loop_backing_file: Option<PathBuf>,
    /// Kernel names of devices stacked on this one (`holders/`: dm, md, bcache).
    pub holders: Vec<String>,
    /// Kernel names of devices this one is stacked on (`slaves/`: for dm/md).
    pub slaves: Vec<String>,
    /// The partitions of a whole disk, in kernel order; empty for a partition.
    pub partitions: Vec<BlockDevice>,
}

/// Read a sysfs attribute as trimmed text; `None` if absent or unreadable.
fn attr(dir: &Path, name: &str) -> Option<String> {
    let s = fs::read_to_string(dir.join(name)).ok()?;
    let t = s.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    if t.is_empty() {
        None
    } else {
        Some(t.to_string())
    }
}

/// Read a sysfs attribute as an integer; `None` if absent or not a number.
fn attr_u64(dir: &Path, name: &str) -> Option<u64> {
    attr(dir, name)?.parse().ok()
}

fn attr_u32(dir: &Path, name: &str) -> Option<u32> {
    attr(dir, name)?.parse().ok()
}

fn attr_bool(dir: &Path, name: &str) -> bool {
    attr_u64(dir, name).is_some_and(|v| v != 0)
}

/// Names of the entries of a sysfs directory (such as `holders/`), sorted.
fn dir_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort_by(|a, b| natural_cmp(a, b));
    v
}

/// Compare names so that `sda2` sorts before `sda10` and `loop2` before `loop10`.
pub(crate) fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn split(s: &str) -> (&str, Option<u64>) {
        let cut = s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (head, tail) = s.split_at(cut);
        (head, tail.parse().ok())
    }
    let (ha, na) = split(a);
    let (hb, nb) = split(b);
    ha.cmp(hb).then(na.cmp(&nb)).then(a.cmp(b))
}

/// The active scheduler: the bracketed word of `queue/scheduler`
/// (`none [mq-deadline] kyber` -> `mq-deadline`), or the only word.
fn parse_scheduler(s: &str) -> Option<String> {
    if let (Some(a), Some(b)) = (s.find('['), s.find(']')) {
        if a < b {
            return Some(s[a + 1..b].to_string());
        }
    }
    let mut words = s.split_whitespace();
    match (words.next(), words.next()) {
        (Some(w), None) => Some(w.to_string()),
        _ => None,
    }
}

/// The unit serial number from a raw SCSI VPD page 0x80 (as sysfs
/// `device/vpd_pg80` gives it): byte 1 is the page code 0x80, bytes 2..4 the
/// big-endian page length, the ASCII serial follows from byte 4 (SPC-4
/// 7.8.15). Leading/trailing spaces and NULs are trimmed.
pub fn parse_vpd_pg80(page: &[u8]) -> Option<String> {
    if page.len() < 4 || page[1] != 0x80 {
        return None;
    }
    let len = usize::from(u16::from_be_bytes([page[2], page[3]]));
    let end = (4 + len).min(page.len());
    let s = String::from_utf8_lossy(&page[4..end]);
    let t = s.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    if t.is_empty() {
        None
    } else {
        Some(t.to_string())
    }
}

/// Kernel name of the device a `/sys/class/block/NAME` directory describes.
fn name_of(dir: &Path) -> Option<String> {
    dir.file_name()?.to_str().map(str::to_string)
}

fn kind_of(name: &str, dev_dir: &Path, vendor: Option<&str>) -> Kind {
    let prefixed = |p: &str| {
        name.strip_prefix(p)
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    };
    if prefixed("loop") {
        return Kind::Loop;
    }
    if prefixed("zram") {
        return Kind::Zram;
    }
    if prefixed("dm-") {
        return Kind::Dm;
    }
    if prefixed("md") {
        return Kind::Md;
    }
    if prefixed("ram") {
        return Kind::Ram;
    }
    if prefixed("nvme") {
        return Kind::Nvme;
    }
    let subsystem = fs::read_link(dev_dir.join("device/subsystem"))
        .ok()
        .and_then(|p| p.file_name().and_then(|f| f.to_str()).map(str::to_string));
    match subsystem.as_deref() {
        Some("scsi") => {
            if vendor == Some("ATA") || dev_dir.join("device/vpd_pg89").exists() {
                Kind::Ata
            } else {
                Kind::Scsi
            }
        }
        Some("virtio") => Kind::Virtio,
        Some("nvme") => Kind::Nvme,
        Some("mmc") => Kind::Mmc,
        _ => Kind::Other,
    }
}

/// Size and sector sizes as the block-device ioctls report them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IoctlGeometry {
    /// `BLKGETSIZE64`: capacity in bytes.
    pub size: Bytes,
    /// `BLKSSZGET`: logical block size.
    pub logical_sector: SectorSize,
    /// `BLKPBSZGET`: physical block size.
    pub physical_sector: SectorSize,
}

// From <linux/fs.h>: BLKSSZGET = _IO(0x12,104), BLKPBSZGET = _IO(0x12,123),
// BLKGETSIZE64 = _IOR(0x12,114,size_t).
const BLKSSZGET: libc::c_ulong = 0x1268;
const BLKPBSZGET: libc::c_ulong = 0x127b;
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;

/// Ask the kernel for a device's size and sector sizes by ioctl (opens the
/// node read-only). Used when sysfs lacks a fact; also a second route to
/// check the sysfs figures against.
pub fn ioctl_geometry(dev_node: &Path) -> Result<IoctlGeometry, BlockDevError> {
    use std::os::fd::AsRawFd;
    let f = fs::File::open(dev_node).map_err(|e| io_err(dev_node, e))?;
    let fd = f.as_raw_fd();
    let mut size: u64 = 0;
    let mut lss: libc::c_int = 0;
    let mut pss: libc::c_uint = 0;
    // SAFETY: `fd` is an open descriptor owned by `f` for the whole block;
    // BLKGETSIZE64 writes one u64 through the pointer, which points at a
    // live, properly aligned u64.
    let r1 = unsafe { libc::ioctl(fd, BLKGETSIZE64 as _, &mut size as *mut u64) };
    if r1 < 0 {
        return Err(io_err(dev_node, io::Error::last_os_error()));
    }
    // SAFETY: as above; BLKSSZGET writes one int through the pointer.
    let r2 = unsafe { libc::ioctl(fd, BLKSSZGET as _, &mut lss as *mut libc::c_int) };
    if r2 < 0 {
        return Err(io_err(dev_node, io::Error::last_os_error()));
    }
    // SAFETY: as above; BLKPBSZGET writes one unsigned int through the pointer.
    let r3 = unsafe { libc::ioctl(fd, BLKPBSZGET as _, &mut pss as *mut libc::c_uint) };
    if r3 < 0 {
        return Err(io_err(dev_node, io::Error::last_os_error()));
    }
    Ok(IoctlGeometry {
        size: Bytes(size),
        logical_sector: SectorSize(u32::try_from(lss).unwrap_or(512)),
        physical_sector: SectorSize(pss),
    })
}

fn parse_dev_numbers(path: &Path, s: &str) -> Result<(u32, u32), BlockDevError> {
    let bad = || BlockDevError::Parse {
        path: path.to_path_buf(),
        content: s.to_string(),
    };
    let (a, b) = s.trim().split_once(':').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}

/// Major and minor numbers of a `dev_t`.
pub fn split_dev(dev: u64) -> (u32, u32) {
    (
        libc::major(dev as libc::dev_t),
        libc::minor(dev as libc::dev_t),
    )
}

impl BlockDevice {
    /// Describe the device behind a `/dev` node (symlinks such as
    /// `/dev/disk/by-id/...` are followed). Partitions are accepted.
    pub fn from_path(path: &Path) -> Result<BlockDevice, BlockDevError> {
        let md = fs::metadata(path).map_err(|e| io_err(path, e))?;
        if !md.file_type().is_block_device() {
            return Err(BlockDevError::NotABlockDevice(path.to_path_buf()));
        }
        let (major, minor) = split_dev(md.rdev());
        BlockDevice::from_dev_numbers(major, minor)
    }

    /// Describe the device with these numbers (`/sys/dev/block/MAJ:MIN`).
    pub fn from_dev_numbers(major: u32, minor: u32) -> Result<BlockDevice, BlockDevError> {
        let link = Path::new(SYS_DEV_BLOCK).join(format!("{major}:{minor}"));
        let dir = fs::canonicalize(&link).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                BlockDevError::NoSysfsEntry { major, minor }
            } else {
                io_err(&link, e)
            }
        })?;
        BlockDevice::from_sysfs_dir(&dir)
    }

    /// Describe the device with this kernel name (`sda`, `loop0p1`).
    pub fn from_name(name: &str) -> Result<BlockDevice, BlockDevError> {
        if name.is_empty() || name.contains('/') {
            return Err(BlockDevError::NoSuchDevice(name.to_string()));
        }
        let link = Path::new(SYS_CLASS_BLOCK).join(name);
        let dir = fs::canonicalize(&link).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                BlockDevError::NoSuchDevice(name.to_string())
            } else {
                io_err(&link, e)
            }
        })?;
        BlockDevice::from_sysfs_dir(&dir)
    }

    /// Every whole disk under `/sys/block`, in natural name order, each with
    /// its partitions as children.
    pub fn list_all() -> Result<Vec<BlockDevice>, BlockDevError> {
        let root = Path::new(SYS_BLOCK);
        fs::read_dir(root).map_err(|e| io_err(root, e))?;
        let mut out = Vec::new();
        for name in dir_names(root) {
            match BlockDevice::from_name(&name) {
                Ok(d) => out.push(d),
                // A device removed between the listing and the read.
                Err(BlockDevError::NoSuchDevice(_)) | Err(BlockDevError::NoSysfsEntry { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Describe a device from its canonical sysfs directory
    /// (`/sys/devices/.../block/NAME` or `.../NAME/NAMEpN`).
    pub fn from_sysfs_dir(dir: &Path) -> Result<BlockDevice, BlockDevError> {
        let name =
            name_of(dir).ok_or_else(|| BlockDevError::NoSuchDevice(dir.display().to_string()))?;
        let dev_file = dir.join("dev");
        let dev_s = fs::read_to_string(&dev_file).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                BlockDevError::NoSuchDevice(name.clone())
            } else {
                io_err(&dev_file, e)
            }
        })?;
        let (major, minor) = parse_dev_numbers(&dev_file, &dev_s)?;
        let partition = dir.join("partition").exists();
        // A partition has no queue/ or device/ of its own: those facts are
        // the parent disk's.
        let disk_dir = if partition {
            dir.parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| dir.to_path_buf())
        } else {
            dir.to_path_buf()
        };
        let parent = if partition { name_of(&disk_dir) } else { None };
        let q = disk_dir.join("queue");
        let d = disk_dir.join("device");
        let path = PathBuf::from("/dev").join(&name);

        let sectors_512 = attr_u64(dir, "size");
        let mut logical = attr_u32(&q, "logical_block_size").map(SectorSize);
        let mut physical = attr_u32(&q, "physical_block_size").map(SectorSize);
        let mut size = sectors_512.map(|s| Bytes(s * 512));
        if size.is_none() || logical.is_none() || physical.is_none() {
            if let Ok(g) = ioctl_geometry(&path) {
                size = size.or(Some(g.size));
                logical = logical.or(Some(g.logical_sector));
                physical = physical.or(Some(g.physical_sector));
            }
        }

        let vendor = attr(&d, "vendor");
        let kind = kind_of(
            name_of(&disk_dir).as_deref().unwrap_or(&name),
            &disk_dir,
            vendor.as_deref(),
        );
        let wwid = attr(&disk_dir, "wwid").or_else(|| attr(&d, "wwid"));
        let serial = attr(&d, "serial")
            .or_else(|| attr(&disk_dir, "serial"))
            .or_else(|| {
                fs::read(d.join("vpd_pg80"))
                    .ok()
                    .and_then(|p| parse_vpd_pg80(&p))
            })
            .or_else(|| wwid.clone());
        let firmware = attr(&d, "firmware_rev").or_else(|| attr(&d, "rev"));

        let partitions = if partition {
            Vec::new()
        } else {
            let mut v = Vec::new();
            for child in dir_names(dir) {
                let cdir = dir.join(&child);
                if cdir.join("partition").exists() {
                    v.push(BlockDevice::from_sysfs_dir(&cdir)?);
                }
            }
            v
        };

        Ok(BlockDevice {
            name: name.clone(),
            path,
            major,
            minor,
            size: size.unwrap_or(Bytes(0)),
            logical_sector: logical.unwrap_or(SectorSize::S512),
            physical_sector: physical.unwrap_or(SectorSize::S512),
            rotational: attr_bool(&q, "rotational"),
            model: attr(&d, "model"),
            serial,
            wwid,
            vendor,
            firmware,
            kind,
            removable: attr_bool(&disk_dir, "removable"),
            // A partition of a read-only disk is read-only too.
            read_only: attr_bool(dir, "ro") || attr_bool(&disk_dir, "ro"),
            partition,
            parent,
            start: if partition {
                attr_u64(dir, "start").map(|s| Bytes(s * 512))
            } else {
                None
            },
            write_zeroes_max_bytes: Bytes(attr_u64(&q, "write_zeroes_max_bytes").unwrap_or(0)),
            discard_max_bytes: Bytes(attr_u64(&q, "discard_max_bytes").unwrap_or(0)),
            discard_granularity: Bytes(attr_u64(&q, "discard_granularity").unwrap_or(0)),
            max_sectors_kb: attr_u32(&q, "max_sectors_kb"),
            max_hw_sectors_kb: attr_u32(&q, "max_hw_sectors_kb"),
            max_segments: attr_u32(&q, "max_segments"),
            nr_requests: attr_u32(&q, "nr_requests"),
            scheduler: attr(&q, "scheduler").and_then(|s| parse_scheduler(&s)),
            loop_backing_file: attr(&dir.join("loop"), "backing_file").map(PathBuf::from),
            holders: dir_names(&dir.join("holders")),
            slaves: dir_names(&dir.join("slaves")),
            partitions,
        })
    }

    /// For a partition, its whole disk; `None` for a whole disk.
    pub fn parent_disk(&self) -> Result<Option<BlockDevice>, BlockDevError> {
        match &self.parent {
            Some(p) => BlockDevice::from_name(p).map(Some),
            None => Ok(None),
        }
    }

    /// The `MAJ:MIN` pair as one value, for comparing with `st_rdev`/mounts.
    pub fn dev_numbers(&self) -> (u32, u32) {
        (self.major, self.minor)
    }

    /// The devices this one is stacked on (`slaves/`), described in full.
    pub fn slave_devices(&self) -> Result<Vec<BlockDevice>, BlockDevError> {
        self.slaves
            .iter()
            .map(|s| BlockDevice::from_name(s))
            .collect()
    }

    /// The devices stacked on this one (`holders/`), described in full.
    pub fn holder_devices(&self) -> Result<Vec<BlockDevice>, BlockDevError> {
        self.holders
            .iter()
            .map(|s| BlockDevice::from_name(s))
            .collect()
    }

    /// True for a loop or zram device with nothing attached (size 0).
    pub fn is_unattached(&self) -> bool {
        matches!(self.kind, Kind::Loop | Kind::Zram) && self.size.0 == 0
    }
}

/// One line of `/proc/self/mountinfo` (the fields drivelab needs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountEntry {
    /// Major number of the mounted filesystem's device (0 for tmpfs, proc,
    /// overlay and btrfs subvolumes' anonymous devices).
    pub major: u32,
    /// Minor number.
    pub minor: u32,
    /// Where it is mounted (octal escapes such as `\040` decoded).
    pub mount_point: PathBuf,
    /// Filesystem type (`ext4`, `tmpfs`, ...).
    pub fs_type: String,
    /// Mount source (`/dev/vda`, `tmpfs`, ...).
    pub source: String,
}

/// Undo the octal escapes (`\040` for space, `\011`, `\012`, `\134`) that
/// mountinfo uses in paths.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = oct
                    .iter()
                    .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                if let Ok(byte) = u8::try_from(v) {
                    out.push(byte);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse the text of a mountinfo file. Malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // id parent maj:min root mount_point options [optional...] - fstype source superopts
        let Some(sep) = f.iter().position(|w| *w == "-") else {
            continue;
        };
        if sep < 6 {
            continue;
        }
        let Some((ma, mi)) = f[2].split_once(':') else {
            continue;
        };
        let (Ok(major), Ok(minor)) = (ma.parse(), mi.parse()) else {
            continue;
        };
        out.push(MountEntry {
            major,
            minor,
            mount_point: PathBuf::from(unescape_mount(f[4])),
            fs_type: f.get(sep + 1).map(|s| s.to_string()).unwrap_or_default(),
            source: f
                .get(sep + 2)
                .map(|s| unescape_mount(s))
                .unwrap_or_default(),
        });
    }
    out
}

/// The mounts of this process's mount namespace (`/proc/self/mountinfo`).
pub fn mounts() -> Result<Vec<MountEntry>, BlockDevError> {
    let p = Path::new("/proc/self/mountinfo");
    let text = fs::read_to_string(p).map_err(|e| io_err(p, e))?;
    Ok(parse_mountinfo(&text))
}

/// The mount that holds `path`: the entry with the longest mount point that
/// is a prefix of the canonical path (the last one mounted wins a tie).
pub fn mount_of(path: &Path, mounts: &[MountEntry]) -> Option<MountEntry> {
    let canon = fs::canonicalize(path).ok()?;
    let mut best: Option<&MountEntry> = None;
    for m in mounts {
        if canon.starts_with(&m.mount_point) {
            let better = match best {
                None => true,
                Some(b) => m.mount_point.as_os_str().len() >= b.mount_point.as_os_str().len(),
            };
            if better {
                best = Some(m);
            }
        }
    }
    best.cloned()
}

/// The block device that a file's filesystem lives on.
///
/// Uses `stat(path).st_dev` and `/sys/dev/block/MAJ:MIN`. For a file on a
/// partition this is the partition (its `parent` names the disk; see
/// [`BlockDevice::parent_disk`]). For a dm or loop device the top device is
/// returned and `slaves` / `loop_backing_file` say what is below. When
/// `st_dev` is anonymous (major 0: btrfs, overlay, tmpfs) the mount's source
/// is tried, so btrfs resolves to its device; tmpfs, overlay, proc and the
/// like give `Ok(None)`.
pub fn backing_device_of_file(path: &Path) -> Result<Option<BlockDevice>, BlockDevError> {
    let md = fs::metadata(path).map_err(|e| io_err(path, e))?;
    let (major, minor) = split_dev(md.dev());
    if major != 0 {
        return match BlockDevice::from_dev_numbers(major, minor) {
            Ok(d) => Ok(Some(d)),
            Err(BlockDevError::NoSysfsEntry { .. }) => Ok(None),
            Err(e) => Err(e),
        };
    }
    let ms = mounts()?;
    let Some(m) = mount_of(path, &ms) else {
        return Ok(None);
    };
    let src = Path::new(&m.source);
    if !src.is_absolute() {
        return Ok(None);
    }
    match fs::metadata(src) {
        Ok(smd) if smd.file_type().is_block_device() => BlockDevice::from_path(src).map(Some),
        _ => Ok(None),
    }
}

/// Whether a block device takes non-blocking submissions (REQ_NOWAIT), so
/// io_uring can issue to it inline: blk-mq devices (they have an `mq`
/// directory in sysfs) and dm / md devices do. Bio-based drivers such as
/// zram, brd and pmem do not: io_uring first tries each request
/// non-blocking, fails, and then hands it to a worker thread, so a caller
/// is better off asking for the worker at once (IOSQE_ASYNC). For a
/// partition the answer is its disk's. Unknown devices count as taking it.
pub fn takes_nowait(major: u32, minor: u32) -> bool {
    let mut dir = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !dir.exists() {
        return true;
    }
    if dir.join("partition").exists() {
        dir = dir.join("..");
    }
    dir.join("mq").exists() || dir.join("dm").exists() || dir.join("md").exists()
}

/// Whether a file at `path` (existing, or to be created there) can be
/// opened with O_DIRECT: its filesystem supports direct I/O (tmpfs does
/// not). A probe file is created and removed in the directory when the
/// file does not exist yet.
pub fn direct_supported(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = if path.exists() {
        path.to_path_buf()
    } else {
        path.parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."))
            .to_path_buf()
    };
    if probe.is_dir() {
        // A directory open with O_DIRECT does not prove file support;
        // try a temporary file instead.
        let tmp = probe.join(format!(".drivelab-direct-probe-{}", std::process::id()));
        let r = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_DIRECT)
            .open(&tmp)
            .is_ok();
        let _ = std::fs::remove_file(&tmp);
        return r;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok()
}

/// Whether `dir` is on the filesystem of /dev (devtmpfs), where a missing
/// name is a missing device. /dev/shm and other mounts under /dev hold
/// ordinary files, which a run may create.
pub fn in_devtmpfs(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(dir), std::fs::metadata("/dev")) {
        (Ok(d), Ok(dev)) => d.dev() == dev.dev(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_never_told_to_run_as_root() {
        // The effective uid, read independently from /proc/self/status.
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let euid: u32 = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap();
        let root = euid == 0;
        assert_eq!(running_as_root(), root);
        let path = PathBuf::from("/nonexistent-drivelab-node");
        let messages = [
            BlockDevice::from_path(&path).unwrap_err().to_string(),
            crate::scsi::sg::SgError::Permission { path: path.clone() }.to_string(),
            crate::nvme::NvmeError::Permission { path: path.clone() }.to_string(),
            crate::caps::ProbeError::Permission { path }.to_string(),
        ];
        for m in messages {
            assert_eq!(m.contains("run as root"), !root, "{m}");
        }
    }

    #[test]
    fn scheduler_takes_the_bracketed_entry() {
        assert_eq!(
            parse_scheduler("none [mq-deadline] kyber bfq"),
            Some("mq-deadline".into())
        );
        assert_eq!(parse_scheduler("[none] mq-deadline"), Some("none".into()));
        assert_eq!(parse_scheduler("none"), Some("none".into()));
        assert_eq!(parse_scheduler("a b"), None);
    }

    #[test]
    fn vpd_pg80_serial_is_length_bounded_and_trimmed() {
        // Page: qualifier 0, code 0x80, length 10, "  ZA1B2C3 " then junk
        // past the length that must not be taken.
        let mut page = vec![0x00, 0x80, 0x00, 10];
        page.extend_from_slice(b"  ZA1B2C3 ");
        page.extend_from_slice(b"XXXX");
        assert_eq!(parse_vpd_pg80(&page), Some("ZA1B2C3".into()));
        // Wrong page code.
        page[1] = 0x83;
        assert_eq!(parse_vpd_pg80(&page), None);
        // Truncated.
        assert_eq!(parse_vpd_pg80(&[0, 0x80]), None);
    }

    #[test]
    fn kind_from_kernel_name() {
        let nowhere = Path::new("/nonexistent/sysfs/dir");
        let k = |n: &str| kind_of(n, nowhere, None);
        assert_eq!(k("loop0"), Kind::Loop);
        assert_eq!(k("zram1"), Kind::Zram);
        assert_eq!(k("dm-3"), Kind::Dm);
        assert_eq!(k("md127"), Kind::Md);
        assert_eq!(k("nvme0n1"), Kind::Nvme);
        assert_eq!(k("ram0"), Kind::Ram);
        // A prefix alone is not enough: "loopy" and "mdx" are something else.
        assert_eq!(k("loopy"), Kind::Other);
        assert_eq!(k("mdx"), Kind::Other);
        assert_eq!(k("sda"), Kind::Other);
    }

    #[test]
    fn natural_order_puts_2_before_10() {
        let mut v = vec!["loop10", "loop2", "sda", "loop1", "nvme0n1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["loop1", "loop2", "loop10", "nvme0n1", "sda"]);
    }

    #[test]
    fn mountinfo_lines_parse_with_optional_fields_and_escapes() {
        let text = "\
27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
28 27 0:25 / /mnt/with\\040space ro,nosuid - tmpfs tmpfs ro,size=4k
29 27 8:17 /sub /srv/data rw master:3 shared:7 - xfs /dev/sdb1 rw
garbage line
";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].major, m[0].minor), (254, 0));
        assert_eq!(m[0].mount_point, PathBuf::from("/"));
        assert_eq!(m[0].fs_type, "ext4");
        assert_eq!(m[0].source, "/dev/vda");
        assert_eq!(m[1].mount_point, PathBuf::from("/mnt/with space"));
        assert_eq!((m[2].major, m[2].minor), (8, 17));
        assert_eq!(m[2].fs_type, "xfs");
        assert_eq!(m[2].source, "/dev/sdb1");
    }

    #[test]
    fn ioctl_numbers_match_linux_fs_h() {
        // _IO(type, nr) = (type << 8) | nr; _IOR adds dir=2 at bit 30 and the
        // argument size (8 for size_t on 64-bit) at bit 16.
        assert_eq!(BLKSSZGET, (0x12 << 8) | 104);
        assert_eq!(BLKPBSZGET, (0x12 << 8) | 123);
        assert_eq!(BLKGETSIZE64, (2 << 30) | (8 << 16) | (0x12 << 8) | 114);
    }
}
