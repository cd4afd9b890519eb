//! Zoned block devices (SMR disks, NVMe ZNS, `scsi_debug zbc=`): the zoned
//! model and limits from sysfs, the zone report from the kernel's
//! `BLKREPORTZONE` ioctl, and the commands that change zones (reset,
//! open, close, finish).
//!
//! Reading is open to any read-only descriptor ([`report_zones`]); the
//! commands that change the medium are methods of [`ZoneWriter`], which is
//! only made from a [`Claim`] (a reset discards the zone's data).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::Path;

use crate::claim::Claim;

/// The zoned model the kernel reports (`/sys/block/X/queue/zoned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Not zoned (`none`).
    None,
    /// Host-aware: zones are advisory, any write is accepted.
    HostAware,
    /// Host-managed: sequential zones take writes only at their write pointer.
    HostManaged,
}

impl Model {
    /// Parse the sysfs word.
    pub fn parse(s: &str) -> Option<Model> {
        match s.trim() {
            "none" => Some(Model::None),
            "host-aware" => Some(Model::HostAware),
            "host-managed" => Some(Model::HostManaged),
            _ => None,
        }
    }
}

/// What sysfs says about a block device's zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZonedInfo {
    /// The zoned model.
    pub model: Model,
    /// Zone size in bytes (`queue/chunk_sectors` × 512); 0 when not zoned.
    pub zone_size: u64,
    /// Number of zones (`queue/nr_zones`).
    pub nr_zones: u32,
    /// Zones that may be open at once (`queue/max_open_zones`); 0: no limit.
    pub max_open_zones: u32,
    /// Zones that may be active (open or closed) at once; 0: no limit.
    pub max_active_zones: u32,
}

fn read_u64(dir: &Path, name: &str) -> u64 {
    std::fs::read_to_string(dir.join(name))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// The zoned model and limits of the whole disk `name` (e.g. `sdb`,
/// `nvme0n2`) from `/sys/block/NAME/queue`. A device without the `zoned`
/// attribute (an old kernel, a partition) is reported as not zoned.
pub fn info(name: &str) -> ZonedInfo {
    info_in(&Path::new("/sys/block").join(name).join("queue"))
}

/// [`info`] read from a `queue` directory (tests give their own).
pub fn info_in(queue: &Path) -> ZonedInfo {
    let model = std::fs::read_to_string(queue.join("zoned"))
        .ok()
        .and_then(|s| Model::parse(&s))
        .unwrap_or(Model::None);
    let zoned = model != Model::None;
    ZonedInfo {
        model,
        zone_size: if zoned {
            read_u64(queue, "chunk_sectors") * 512
        } else {
            0
        },
        nr_zones: read_u64(queue, "nr_zones") as u32,
        max_open_zones: read_u64(queue, "max_open_zones") as u32,
        max_active_zones: read_u64(queue, "max_active_zones") as u32,
    }
}

/// A zone's type (`BLK_ZONE_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneType {
    /// Written anywhere, no write pointer.
    Conventional,
    /// Sequential write required.
    SeqRequired,
    /// Sequential write preferred (host-aware).
    SeqPreferred,
    /// A value this code does not know.
    Other(u8),
}

/// A zone's condition (`BLK_ZONE_COND_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneCond {
    /// A conventional zone.
    NotWp,
    /// Write pointer at the start.
    Empty,
    /// Opened by a write.
    ImplicitOpen,
    /// Opened by an open command.
    ExplicitOpen,
    /// Written, then closed.
    Closed,
    /// Read only.
    ReadOnly,
    /// Write pointer at the capacity's end.
    Full,
    /// Unusable.
    Offline,
    /// A value this code does not know.
    Other(u8),
}

impl ZoneCond {
    fn from_raw(v: u8) -> ZoneCond {
        match v {
            0x0 => ZoneCond::NotWp,
            0x1 => ZoneCond::Empty,
            0x2 => ZoneCond::ImplicitOpen,
            0x3 => ZoneCond::ExplicitOpen,
            0x4 => ZoneCond::Closed,
            0xd => ZoneCond::ReadOnly,
            0xe => ZoneCond::Full,
            0xf => ZoneCond::Offline,
            o => ZoneCond::Other(o),
        }
    }

    /// Open, explicitly or implicitly.
    pub fn is_open(self) -> bool {
        matches!(self, ZoneCond::ImplicitOpen | ZoneCond::ExplicitOpen)
    }
}

/// One zone of a report, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    /// First byte.
    pub start: u64,
    /// Length, bytes.
    pub len: u64,
    /// Write pointer, bytes (meaningful for sequential zones).
    pub wp: u64,
    /// Writable bytes from the start (the length where the kernel reports
    /// no capacity).
    pub capacity: u64,
    /// Type.
    pub kind: ZoneType,
    /// Condition.
    pub cond: ZoneCond,
}

impl Zone {
    /// Whether the zone has a write pointer (sequential required or preferred).
    pub fn has_wp(&self) -> bool {
        matches!(self.kind, ZoneType::SeqRequired | ZoneType::SeqPreferred)
    }
}

// The kernel's structures (include/uapi/linux/blkzoned.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct BlkZone {
    start: u64,
    len: u64,
    wp: u64,
    kind: u8,
    cond: u8,
    non_seq: u8,
    reset: u8,
    resv: [u8; 4],
    capacity: u64,
    reserved: [u8; 24],
}

#[repr(C)]
struct BlkZoneReportHeader {
    sector: u64,
    nr_zones: u32,
    flags: u32,
}

#[repr(C)]
struct BlkZoneRange {
    sector: u64,
    nr_sectors: u64,
}

/// `BLK_ZONE_REP_CAPACITY`: the report carries each zone's capacity.
const REP_CAPACITY: u32 = 1;

const fn ioc(dir: u64, nr: u64, size: u64) -> u64 {
    (dir << 30) | (size << 16) | (0x12 << 8) | nr
}
const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;
const HDR: u64 = std::mem::size_of::<BlkZoneReportHeader>() as u64;
const RANGE: u64 = std::mem::size_of::<BlkZoneRange>() as u64;
/// `BLKREPORTZONE`: _IOWR(0x12, 130, struct blk_zone_report).
const BLKREPORTZONE: u64 = ioc(IOC_READ | IOC_WRITE, 130, HDR);
/// `BLKRESETZONE`: _IOW(0x12, 131, struct blk_zone_range).
const BLKRESETZONE: u64 = ioc(IOC_WRITE, 131, RANGE);
/// `BLKOPENZONE`: _IOW(0x12, 134, struct blk_zone_range).
const BLKOPENZONE: u64 = ioc(IOC_WRITE, 134, RANGE);
/// `BLKCLOSEZONE`: _IOW(0x12, 135, struct blk_zone_range).
const BLKCLOSEZONE: u64 = ioc(IOC_WRITE, 135, RANGE);
/// `BLKFINISHZONE`: _IOW(0x12, 136, struct blk_zone_range).
const BLKFINISHZONE: u64 = ioc(IOC_WRITE, 136, RANGE);

/// Zones asked for per `BLKREPORTZONE` call.
const BATCH: usize = 4096;

fn decode(z: &BlkZone, with_capacity: bool) -> Zone {
    let kind = match z.kind {
        1 => ZoneType::Conventional,
        2 => ZoneType::SeqRequired,
        3 => ZoneType::SeqPreferred,
        o => ZoneType::Other(o),
    };
    Zone {
        start: z.start * 512,
        len: z.len * 512,
        wp: z.wp * 512,
        capacity: if with_capacity && z.capacity > 0 {
            z.capacity * 512
        } else {
            z.len * 512
        },
        kind,
        cond: ZoneCond::from_raw(z.cond),
    }
}

/// Every zone of the device open on `fd` from byte `from` on, at most
/// `max` zones (`BLKREPORTZONE`, in batches). Reads only.
pub fn report_zones(fd: BorrowedFd<'_>, from: u64, max: usize) -> io::Result<Vec<Zone>> {
    let zsz = std::mem::size_of::<BlkZone>();
    let mut out = Vec::new();
    let mut sector = from / 512;
    while out.len() < max {
        let want = BATCH.min(max - out.len());
        // One buffer of u64s: the header (16 bytes) then `want` zones, all
        // 8-byte aligned.
        let words = (HDR as usize + want * zsz) / 8;
        let mut buf = vec![0u64; words];
        buf[0] = sector;
        buf[1] = want as u64; // nr_zones (low half), flags 0 (high half)
                              // SAFETY: `buf` is a live, writable, 8-byte aligned buffer of
                              // 16 + want × 64 bytes laid out as struct blk_zone_report with room
                              // for `want` zones, which is what nr_zones tells the kernel; the
                              // kernel writes no more than that.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), BLKREPORTZONE as _, buf.as_mut_ptr()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let got = (buf[1] & 0xffff_ffff) as usize;
        let flags = (buf[1] >> 32) as u32;
        if got == 0 {
            break;
        }
        for i in 0..got.min(want) {
            let off = HDR as usize / 8 + i * zsz / 8;
            // SAFETY: word `off` starts zone i inside `buf` (checked by
            // got ≤ want); BlkZone is plain old data of 64 bytes with
            // alignment 8, and read_unaligned needs no alignment anyway.
            let z: BlkZone =
                unsafe { std::ptr::read_unaligned(buf.as_ptr().add(off) as *const BlkZone) };
            let d = decode(&z, flags & REP_CAPACITY != 0);
            sector = (d.start + d.len) / 512;
            out.push(d);
        }
    }
    Ok(out)
}

/// The zone commands that change the medium or the zone state, on a
/// claimed zoned block device.
#[derive(Debug)]
pub struct ZoneWriter {
    file: File,
}

impl ZoneWriter {
    /// A handle for zone commands on the claimed device (its own
    /// descriptor; the claim stays the exclusive holder).
    pub fn from_claim(claim: &Claim) -> io::Result<ZoneWriter> {
        if !claim.is_block() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "zone commands need a block device",
            ));
        }
        Ok(ZoneWriter {
            file: claim.io_file(false)?,
        })
    }

    fn range(&self, req: u64, start: u64, len: u64) -> io::Result<()> {
        if start % 512 != 0 || len % 512 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "zone ranges are whole 512-byte sectors",
            ));
        }
        let r = BlkZoneRange {
            sector: start / 512,
            nr_sectors: len / 512,
        };
        // SAFETY: `r` is a live struct blk_zone_range the kernel only
        // reads; the descriptor is open for the life of `self`.
        let rc = unsafe { libc::ioctl(self.file.as_raw_fd(), req as _, &r as *const BlkZoneRange) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Reset the write pointers of the zones in `[start, start + len)`
    /// (`BLKRESETZONE`): their data is gone.
    pub fn reset(&self, start: u64, len: u64) -> io::Result<()> {
        self.range(BLKRESETZONE, start, len)
    }

    /// Open the zones explicitly (`BLKOPENZONE`).
    pub fn open(&self, start: u64, len: u64) -> io::Result<()> {
        self.range(BLKOPENZONE, start, len)
    }

    /// Close the zones (`BLKCLOSEZONE`).
    pub fn close(&self, start: u64, len: u64) -> io::Result<()> {
        self.range(BLKCLOSEZONE, start, len)
    }

    /// Finish the zones: write pointer to the end (`BLKFINISHZONE`).
    pub fn finish(&self, start: u64, len: u64) -> io::Result<()> {
        self.range(BLKFINISHZONE, start, len)
    }

    /// The zone report through this handle.
    pub fn report(&self, from: u64, max: usize) -> io::Result<Vec<Zone>> {
        report_zones(self.file.as_fd(), from, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_are_the_kernels() {
        // Values from <linux/blkzoned.h> on x86_64.
        assert_eq!(BLKREPORTZONE, 0xC010_1282);
        assert_eq!(BLKRESETZONE, 0x4010_1283);
        assert_eq!(BLKOPENZONE, 0x4010_1286);
        assert_eq!(BLKCLOSEZONE, 0x4010_1287);
        assert_eq!(BLKFINISHZONE, 0x4010_1288);
        assert_eq!(std::mem::size_of::<BlkZone>(), 64);
    }

    #[test]
    fn sysfs_attributes_give_the_model_and_limits() {
        let d = std::env::temp_dir().join(format!("dl-zoned-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("zoned"), "host-managed\n").unwrap();
        std::fs::write(d.join("chunk_sectors"), "8192\n").unwrap();
        std::fs::write(d.join("nr_zones"), "64\n").unwrap();
        std::fs::write(d.join("max_open_zones"), "8\n").unwrap();
        let i = info_in(&d);
        assert_eq!(i.model, Model::HostManaged);
        assert_eq!(i.zone_size, 4 << 20);
        assert_eq!(
            (i.nr_zones, i.max_open_zones, i.max_active_zones),
            (64, 8, 0)
        );
        std::fs::write(d.join("zoned"), "none\n").unwrap();
        let i = info_in(&d);
        assert_eq!((i.model, i.zone_size), (Model::None, 0));
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(info_in(Path::new("/nonexistent")).model, Model::None);
    }

    #[test]
    fn report_decodes_sectors_and_capacity() {
        let z = BlkZone {
            start: 8192,
            len: 8192,
            wp: 8200,
            kind: 2,
            cond: 2,
            capacity: 4096,
            ..BlkZone::default()
        };
        let d = decode(&z, true);
        assert_eq!((d.start, d.len, d.wp), (4 << 20, 4 << 20, (4 << 20) + 4096));
        assert_eq!(d.capacity, 2 << 20);
        assert!(d.has_wp() && d.cond.is_open());
        // Without the capacity flag the capacity is the length.
        assert_eq!(decode(&z, false).capacity, 4 << 20);
        let c = decode(&BlkZone { kind: 1, ..z }, true);
        assert!(!c.has_wp());
    }

    #[test]
    fn a_regular_file_has_no_zone_report() {
        let f = File::open("/proc/self/exe").unwrap();
        assert!(report_zones(f.as_fd(), 0, 4).is_err());
    }
}
