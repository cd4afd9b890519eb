//! fio's `zonemode=zbd`: I/O to zoned block devices under their write
//! rules, as fio 3.33 applies them (its zbd.c; the code here is drivelab's).
//!
//! - Zones come from the device's zone report (host-managed and host-aware
//!   devices), or, on a device or file that is not zoned, are made up from
//!   `zonesize` with every zone empty and sequential (as fio does, so a
//!   zoned workload can be tried anywhere). Without `zonesize` a target
//!   that is not zoned is refused.
//! - Writes go to a zone's write pointer. A write aimed at a zone that may
//!   not be opened (the `max_open_zones` / `job_max_open_zones` limits) is
//!   moved to an open zone picked from the I/O's offset; when every open
//!   zone is full, the next zone of the job's range is opened. A full zone
//!   is reset (its data discarded) before it is written again; so is the
//!   zone written when more than `zone_reset_threshold` of the range holds
//!   data, every 1/`zone_reset_frequency` writes.
//! - Reads stay below the write pointer unless `read_beyond_wp`: a read of
//!   a zone without data moves to the next zone that has some (sequential)
//!   or the nearest (random), and is cut at the write pointer; with no data
//!   left the job ends, as in fio.
//! - A trim is the reset of one whole zone (fio's zone-reset trims): its
//!   block size must be the zone size; a random trim of an empty zone
//!   moves to the nearest zone with data (none: the job ends), a
//!   sequential one stays. [`ZoneTrims`] does the reset when the trim is
//!   queued and completes it with the trim's length, without a discard.
//!   Trims count as trims (fio's `trim` counts) and, where the zone held
//!   data, as zone resets of the job.
//! - A zone with I/O in flight belongs to the job that issued it; other
//!   jobs wait for it (fio's zone lock). Before a reset the job's own I/O
//!   completes first.
//! - The write pointer moves when an I/O is issued, so several writes of
//!   one job can be in flight in one zone, in order; the kernel's
//!   mq-deadline scheduler keeps them in order on the device, as fio
//!   relies on.
//!
//! Sizes may be given in zones (`size=8z`, `offset=524z`, `io_size`,
//! `offset_increment`), which the plan turns into bytes with the zone size.

use crate::spec::decl::{opt, OptionDecl};
use std::sync::{Arc, Mutex};

use drivelab_device::zoned::{self, Model, ZoneCond, ZoneWriter};

use crate::job::types::Region;
pub use crate::job::types::ZbdJob;
use crate::{JobSpec, SpecError};
use drivelab_engine::io::{IoDesc, Op};

/// fio's limit on `max_open_zones` (ZBD_MAX_OPEN_ZONES).
pub const MAX_OPEN_ZONES: u32 = 4096;

/// The job options of `zonemode=zbd`, as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ZbdOptions {
    /// `zonemode=zbd`.
    pub on: bool,
    /// `max_open_zones` (0: the device's limit, or none).
    pub max_open_zones: u32,
    /// `job_max_open_zones` (0: none).
    pub job_max_open_zones: u32,
    /// `zone_reset_threshold`, a share of the range's bytes.
    pub reset_threshold: f64,
    /// `zone_reset_frequency`, a share of the writes (0: never).
    pub reset_frequency: f64,
    /// `read_beyond_wp`.
    pub read_beyond_wp: bool,
    /// `zonecapacity`: the writable bytes of each emulated zone (0: the
    /// zone size).
    pub zone_capacity: u64,
    /// `ignore_zone_limits`: the device's open-zone limit is not applied.
    pub ignore_limits: bool,
    /// Sizes given in zones: size, io_size, offset, offset_increment.
    pub in_zones: [Option<u64>; 4],
}

const ZONE_KEYS: [&str; 4] = ["size", "io_size", "offset", "offset_increment"];

fn bad(key: &str, v: &str, expect: &str) -> SpecError {
    SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: expect.to_string(),
    }
}

/// The zone options' keys (`zonemode=zbd` itself, and sizes counted in
/// zones, are set through the spec's `zonemode` and size keys:
/// [`ZbdOptions::size_in`]).
impl ZbdOptions {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "max_open_zones",
            [],
            Int,
            "device's",
            "zonemode=zbd: zones written at once on the device (0: the device's limit)",
            0,
            4096,
            "zones"
        ),
        opt!(
            "job_max_open_zones",
            [],
            Int,
            "0",
            "zonemode=zbd: zones this job writes at once (0: no own limit)",
            0,
            4096,
            "zones"
        ),
        opt!(
            "zone_reset_threshold",
            [],
            Text,
            "0",
            "zonemode=zbd: share of the range holding data (0..1) past which zone_reset_frequency resets zones"
        ),
        opt!(
            "zone_reset_frequency",
            [],
            Text,
            "0",
            "zonemode=zbd: past the threshold, reset the written zone every 1/F writes (0..1; 0: never)"
        ),
        opt!(
            "read_beyond_wp",
            [],
            Bool,
            "0",
            "zonemode=zbd: read sequential zones past their write pointers"
        ),
        opt!(
            "zonecapacity",
            [],
            Size,
            "0",
            "zonemode=zbd with zones emulated from zonesize: the bytes of each zone that take writes, from its start (0: all of it); a zoned device's zones have their own"
        ),
        opt!(
            "ignore_zone_limits",
            [],
            Bool,
            "0",
            "zonemode=zbd: leave the device's own open-zone limit out (max_open_zones, if given, still applies)"
        ),
    ];
}

impl crate::spec::family::OptionFamily for ZbdOptions {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let t = v.trim();
        let share = |key: &str| -> Result<f64, SpecError> {
            t.parse::<f64>()
                .ok()
                .filter(|f| (0.0..=1.0).contains(f))
                .ok_or_else(|| bad(key, v, "a number from 0 to 1, such as 0.7"))
        };
        match key {
            "max_open_zones" | "job_max_open_zones" => match t.parse::<u32>() {
                Ok(n) if n <= MAX_OPEN_ZONES => {
                    if key == "max_open_zones" {
                        self.max_open_zones = n;
                    } else {
                        self.job_max_open_zones = n;
                    }
                    Ok(())
                }
                _ => Err(bad(
                    key,
                    v,
                    &format!("a number of zones from 0 to {MAX_OPEN_ZONES}"),
                )),
            },
            "zone_reset_threshold" => share(key).map(|f| self.reset_threshold = f),
            "zone_reset_frequency" => share(key).map(|f| self.reset_frequency = f),
            "read_beyond_wp" => match t {
                "1" | "true" | "on" | "yes" => {
                    self.read_beyond_wp = true;
                    Ok(())
                }
                "0" | "false" | "off" | "no" => {
                    self.read_beyond_wp = false;
                    Ok(())
                }
                _ => Err(bad(key, v, "0 or 1")),
            },
            "zonecapacity" => {
                self.zone_capacity = crate::spec::size::parse_bytes(key, v)?;
                Ok(())
            }
            "ignore_zone_limits" => {
                self.ignore_limits = crate::spec::value::parse_flag(key, v)?;
                Ok(())
            }
            _ => Err(SpecError::Invalid(format!("{key} is not a zone option"))),
        }
    }
}

impl ZbdOptions {
    /// The value the spec holds for a size key (`size`, `io_size`,
    /// `offset`, `offset_increment`): a count of zones (`8z`) is kept here,
    /// with 0 bytes standing in until the plan knows the zone size; a size
    /// in bytes replaces an earlier count.
    pub fn size_in(&mut self, key: &'static str, v: &str) -> Result<crate::SizeSpec, SpecError> {
        let Some(i) = ZONE_KEYS.iter().position(|z| *z == key) else {
            return crate::spec::size::parse_size_spec(key, v);
        };
        let zones = v
            .trim()
            .strip_suffix(['z', 'Z'])
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let Some(n) = zones else {
            self.in_zones[i] = None;
            return crate::spec::size::parse_size_spec(key, v);
        };
        match n.parse::<u64>() {
            Ok(n) => {
                self.in_zones[i] = Some(n);
                Ok(crate::SizeSpec::Bytes(0))
            }
            Err(_) => Err(bad(key, v, "a number of zones, such as 8z")),
        }
    }
}

/// The zone size of a job's target as fio finds it: the device's (which
/// `zonesize` must match) on a zoned block device, else `zonesize`.
fn zone_size_of(spec: &JobSpec) -> Result<(u64, Model), SpecError> {
    use std::os::unix::fs::FileTypeExt;
    let file = spec.filenames.first().cloned().unwrap_or_default();
    // io_uring_cmd's /dev/ngXnY: its namespace's block device has the zones.
    let file = crate::engines::ucmd::block_path(spec, file);
    let invalid = |why: String| SpecError::Invalid(format!("job '{}': {why}", spec.name));
    let name = std::fs::metadata(&file)
        .ok()
        .filter(|m| m.file_type().is_block_device())
        .and_then(|_| {
            drivelab_device::blockdev::BlockDevice::from_path(std::path::Path::new(&file)).ok()
        })
        .map(|d| d.name);
    let info = name.as_deref().map(zoned::info);
    match info {
        Some(i) if i.model != Model::None => {
            if spec.zonesize != 0 && spec.zonesize != i.zone_size {
                return Err(invalid(format!(
                    "zonesize {} does not match the zone size of {file} ({} bytes); drop zonesize or give {}",
                    spec.zonesize, i.zone_size, i.zone_size
                )));
            }
            Ok((i.zone_size, i.model))
        }
        _ if spec.zonesize >= 512 => Ok((spec.zonesize, Model::None)),
        _ if spec.zonesize > 0 => Err(invalid("zonesize must be at least 512 bytes for zonemode=zbd".to_string())),
        _ => Err(invalid(format!(
            "zonemode=zbd: {file} is not a zoned block device; give zonesize= to emulate zones on it (as fio does) or drop zonemode"
        ))),
    }
}

/// The spec with sizes counted in zones turned into bytes (a copy, only
/// when there is anything to do). A zoned target's zone size is read here.
pub fn resolve_zone_counts(spec: &JobSpec) -> Result<Option<JobSpec>, SpecError> {
    let counted = spec.zbd.in_zones.iter().any(Option::is_some);
    if !counted && !spec.zbd.on {
        return Ok(None);
    }
    let zone = if spec.zbd.on {
        zone_size_of(spec)?.0
    } else if spec.zonesize > 0 {
        spec.zonesize
    } else {
        return Err(SpecError::Invalid(format!(
            "job '{}': sizes in zones (such as size=8z) need zonemode=zbd or zonesize",
            spec.name
        )));
    };
    let mut s = spec.clone();
    for (i, n) in spec.zbd.in_zones.iter().enumerate() {
        let Some(n) = n else { continue };
        let b = crate::SizeSpec::Bytes(n.saturating_mul(zone));
        match i {
            0 => s.size = Some(b),
            1 => s.io_size = Some(b),
            2 => s.offset = b,
            _ => s.offset_increment = b,
        }
    }
    Ok(Some(s))
}

/// fio's checks and adjustments of a zbd job at plan time: one target,
/// direct I/O for writes to host-managed devices, block sizes within a
/// zone, the region rounded to whole zones for jobs that write. Returns
/// the job's zone settings (None without `zonemode=zbd`).
pub fn plan_job(
    spec: &JobSpec,
    paths: &[&std::path::Path],
    regions: &mut [Region],
    direct: bool,
    writes: bool,
) -> Result<Option<ZbdJob>, SpecError> {
    if !spec.zbd.on {
        return Ok(None);
    }
    let invalid =
        |why: String| SpecError::Invalid(format!("job '{}': zonemode=zbd {why}", spec.name));
    if paths.len() != 1 {
        return Err(invalid(
            "works on one file per job here; give one filename".to_string(),
        ));
    }
    let (zone_size, model) = zone_size_of(spec)?;
    if spec.rw.write_kind() == crate::WriteKind::TrimWrite {
        return Err(invalid(format!(
            "with rw={} is not carried: drivelab's zone trims are zone resets, and a reset zone takes no write at the block just trimmed; use rw=write or rw=trim",
            spec.rw.name()
        )));
    }
    let trims = spec.rw.write_kind() == crate::WriteKind::Trim;
    if trims {
        check_trim_bs(spec, zone_size).map_err(&invalid)?;
    }
    if spec.verify.kind.is_some() {
        return Err(invalid(
            "with verify is not supported by drivelab yet; drop verify".to_string(),
        ));
    }
    if spec.zoneskip > 0 {
        return Err(invalid(
            "with zoneskip is not supported by drivelab yet; drop zoneskip".to_string(),
        ));
    }
    if model == Model::HostManaged && writes && !trims && !direct {
        return Err(invalid(
            "writes to a host-managed zoned device need direct I/O (as fio says); set direct=1"
                .to_string(),
        ));
    }
    if spec.max_bs() > zone_size {
        return Err(invalid(format!(
            "block size {} exceeds the zone size {zone_size}; use a smaller bs",
            spec.max_bs()
        )));
    }
    // ignore_zone_limits: as if the device set none.
    let dev_limit = if spec.zbd.ignore_limits {
        0
    } else {
        device_limit(paths[0], model)
    };
    if spec.zbd.zone_capacity > 0 && model != Model::None {
        return Err(invalid(
            "zonecapacity sets the capacity of emulated zones (zonesize on a target that is not zoned); a zoned device's zones have their own: drop zonecapacity".to_string(),
        ));
    }
    if spec.zbd.zone_capacity > zone_size {
        return Err(invalid(format!(
            "zonecapacity {} is larger than the zone size {zone_size}",
            spec.zbd.zone_capacity
        )));
    }
    if spec.zbd.job_max_open_zones > 0 && spec.zbd.max_open_zones == 0 && dev_limit == 0 {
        return Err(invalid(
            "job_max_open_zones needs a global open-zone limit (max_open_zones or the device's)"
                .to_string(),
        ));
    }
    let max_open = resolve_max_open(spec.zbd.max_open_zones, dev_limit).map_err(&invalid)?;
    for r in regions.iter_mut() {
        if !writes {
            continue;
        }
        // fio: a writing job's range starts and ends on zone boundaries.
        let start = r.start.div_ceil(zone_size) * zone_size;
        let end = r.end / zone_size * zone_size;
        if end <= start {
            return Err(invalid(format!(
                "needs a range of at least one whole zone ({zone_size} bytes) for writes; the job's is {}..{}",
                r.start, r.end
            )));
        }
        *r = Region { start, end };
    }
    Ok(Some(ZbdJob {
        zone_size,
        zone_capacity: match spec.zbd.zone_capacity {
            0 => zone_size,
            c => c,
        },
        model,
        max_open_zones: max_open,
        job_max_open_zones: spec.zbd.job_max_open_zones,
        reset_threshold: spec.zbd.reset_threshold,
        reset_frequency: spec.zbd.reset_frequency,
        read_beyond_wp: spec.zbd.read_beyond_wp,
        min_bs: spec.min_bs().max(512),
        random: spec.rw.is_random(),
        mixed: matches!(spec.rw, crate::RwMode::ReadWrite | crate::RwMode::RandRw),
        writes,
    }))
}

/// fio's rule for trims under zonemode=zbd: a trim is the reset of one
/// whole zone, so its block size is the zone size, one size only.
fn check_trim_bs(spec: &JobSpec, zone_size: u64) -> Result<(), String> {
    // The trim direction's size mix: its own (`bssplit=,,T`), none when it
    // has its own block size, else the one given for every direction.
    let split = match (&spec.bssplit_dir[1], spec.bs_dir[1]) {
        (Some(_), _) => true,
        (None, Some(_)) => false,
        (None, None) => !spec.bssplit.is_empty(),
    };
    if split || spec.min_bs() != spec.max_bs() {
        return Err(
            "takes one trim block size (bsrange and bssplit are not allowed for trims, as in fio); give bs equal to the zone size"
                .to_string(),
        );
    }
    let bs = spec.max_bs();
    if bs != zone_size {
        return Err(format!(
            "trims reset whole zones: the trim block size {bs} is not the zone size {zone_size}; give bs={zone_size}"
        ));
    }
    Ok(())
}

fn device_limit(path: &std::path::Path, model: Model) -> u32 {
    if model != Model::HostManaged {
        return 0;
    }
    drivelab_device::blockdev::BlockDevice::from_path(path)
        .map(|d| zoned::info(&d.name).max_open_zones)
        .unwrap_or(0)
}

/// fio's open-zone limit from the user's and the device's (0: none).
pub fn resolve_max_open(user: u32, device: u32) -> Result<u32, String> {
    match (user, device) {
        (u, 0) => Ok(u),
        (0, d) => Ok(d.min(MAX_OPEN_ZONES)),
        (u, d) if u <= d => Ok(u),
        (u, d) => Err(format!(
            "max_open_zones={u} is larger than the device's limit {d}; use at most {d}"
        )),
    }
}

/// One zone's state.
#[derive(Debug, Clone, PartialEq)]
pub struct ZoneState {
    /// First byte.
    pub start: u64,
    /// One past the last byte (the next zone's start).
    pub end: u64,
    /// Writable bytes from the start.
    pub capacity: u64,
    /// Write pointer.
    pub wp: u64,
    /// Sequential (has a write pointer).
    pub has_wp: bool,
    /// Offline: no I/O.
    pub offline: bool,
    /// In the open-zone list.
    pub open: bool,
    /// Marked for a reset by the threshold rule.
    pub reset_due: bool,
    /// The job with I/O in flight here, and how many.
    owner: Option<(u32, u32)>,
    /// The trim in flight here reset the zone (it held data): the owning
    /// job counts the reset when the trim completes.
    trim_reset: bool,
}

impl ZoneState {
    fn cap_end(&self) -> u64 {
        self.start + self.capacity
    }
}

/// The zones of one target, shared by the jobs on it.
#[derive(Debug)]
pub struct ZoneSet {
    /// Every zone of the target, in order.
    pub zones: Vec<ZoneState>,
    /// Zone size, bytes.
    pub zone_size: u64,
    /// Open zones (indexes), in the order opened.
    pub open: Vec<u32>,
    /// The open-zone limit (0: none, and open zones are not tracked).
    pub max_open: u32,
    /// Bytes below write pointers (fio's wp_sectors_with_data).
    pub with_data: u64,
    /// Writes left until the next threshold check resets a zone.
    pub write_cnt: u32,
    /// Zone resets done.
    pub resets: u64,
    /// I/Os in flight on the target, all jobs.
    pub inflight: u32,
    writer: Option<ZoneWriter>,
}

/// [`ZoneSet`] behind its lock.
pub type SharedZones = Arc<Mutex<ZoneSet>>;

impl ZoneSet {
    /// Zones from a device's report.
    pub fn from_report(
        report: &[zoned::Zone],
        max_open: u32,
        writer: Option<ZoneWriter>,
    ) -> ZoneSet {
        let zones: Vec<ZoneState> = report
            .iter()
            .map(|z| ZoneState {
                start: z.start,
                end: z.start + z.len,
                capacity: z.capacity,
                wp: match z.cond {
                    ZoneCond::NotWp | ZoneCond::Full => z.start + z.capacity,
                    _ => z.wp,
                },
                has_wp: z.has_wp(),
                offline: z.cond == ZoneCond::Offline,
                open: false,
                reset_due: false,
                owner: None,
                trim_reset: false,
            })
            .collect();
        let zone_size = report.first().map_or(0, |z| z.len);
        let mut s = ZoneSet {
            zones,
            zone_size,
            open: Vec::new(),
            max_open,
            with_data: 0,
            write_cnt: u32::MAX,
            resets: 0,
            inflight: 0,
            writer,
        };
        // Zones the device has open count against the limit; past it,
        // fio resets them.
        for (i, z) in report.iter().enumerate() {
            if z.cond.is_open() && s.zones[i].has_wp {
                if s.max_open == 0 || (s.open.len() as u32) < s.max_open {
                    if s.max_open > 0 {
                        s.open.push(i as u32);
                        s.zones[i].open = true;
                    }
                } else {
                    s.zones[i].reset_due = true;
                }
            }
        }
        s
    }

    /// Zones made up on a target that is not zoned: all sequential, empty,
    /// `(size, capacity)` each (`zonecapacity`).
    pub fn emulated(size: u64, (zone_size, capacity): (u64, u64), max_open: u32) -> ZoneSet {
        let n = size.div_ceil(zone_size);
        let report: Vec<zoned::Zone> = (0..n)
            .map(|i| zoned::Zone {
                start: i * zone_size,
                len: zone_size,
                wp: i * zone_size,
                capacity: capacity.min(zone_size),
                kind: zoned::ZoneType::SeqRequired,
                cond: ZoneCond::Empty,
            })
            .collect();
        ZoneSet::from_report(&report, max_open, None)
    }

    fn idx(&self, off: u64) -> usize {
        ((off / self.zone_size.max(1)) as usize).min(self.zones.len().saturating_sub(1))
    }

    /// Reset zone `zi` when it holds data; whether it did.
    fn reset_zone(&mut self, zi: usize) -> Result<bool, String> {
        let start = self.zones[zi].start;
        self.reset_zone_io(zi)
            .map_err(|e| format!("resetting the zone at byte {start} failed: {e}"))
    }

    /// [`ZoneSet::reset_zone`] with the device's error as it came.
    fn reset_zone_io(&mut self, zi: usize) -> std::io::Result<bool> {
        let z = &self.zones[zi];
        let data = z.wp - z.start;
        if data == 0 {
            return Ok(false);
        }
        if let Some(w) = &self.writer {
            w.reset(z.start, z.end - z.start)?;
        }
        self.with_data = self.with_data.saturating_sub(data);
        let z = &mut self.zones[zi];
        z.wp = z.start;
        self.resets += 1;
        Ok(true)
    }

    fn close(&mut self, zi: usize, job: &mut JobZones) {
        if !self.zones[zi].open {
            return;
        }
        if let Some(p) = self.open.iter().position(|&o| o as usize == zi) {
            self.open.remove(p);
            job.open = job.open.saturating_sub(1);
        }
        self.zones[zi].open = false;
    }
}

/// What to do with a generated I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adjust {
    /// Issue this (moved, maybe shortened) I/O.
    Issue(IoDesc),
    /// Not now: wait for I/O in flight (this job's or another's), then ask again.
    Wait,
    /// Nothing more to do for this job (fio's end of file).
    Eof,
    /// A zone command failed.
    Failed(String),
}

/// One job's view of its target's zones.
#[derive(Debug, Clone)]
pub struct JobZones {
    /// The shared zones.
    pub set: SharedZones,
    /// The job's settings.
    pub cfg: ZbdJob,
    /// The job's number (zone ownership).
    pub id: u32,
    /// First zone of the job's range.
    pub min_zone: usize,
    /// One past the last zone.
    pub max_zone: usize,
    /// The job's range.
    pub region: Region,
    /// Zones this job opened (fio's td->num_open_zones).
    pub open: u32,
    /// The job's reads changed to writes while nothing is written yet (a
    /// mixed job, as fio does).
    pub redirected: u64,
    /// Zone resets this job did (fio's nr_zone_resets).
    pub resets: u64,
}

fn lock(set: &SharedZones) -> std::sync::MutexGuard<'_, ZoneSet> {
    set.lock().unwrap_or_else(|e| e.into_inner())
}

impl JobZones {
    /// The job's view; sets what fio sets when a job starts on its file
    /// (bytes with data in the range, the reset countdown).
    pub fn new(set: SharedZones, cfg: ZbdJob, id: u32, region: Region) -> JobZones {
        let (min_zone, max_zone) = {
            let mut s = lock(&set);
            let zs = s.zone_size.max(1);
            let min = (region.start / zs) as usize;
            let max = (region.end.div_ceil(zs) as usize)
                .min(s.zones.len())
                .max(min + 1);
            if cfg.writes {
                s.with_data = s.zones[min..max]
                    .iter()
                    .filter(|z| z.has_wp)
                    .map(|z| z.wp - z.start)
                    .sum();
                s.write_cnt = countdown(cfg.reset_frequency);
            }
            (min, max)
        };
        JobZones {
            set,
            cfg,
            id,
            min_zone,
            max_zone,
            region,
            open: 0,
            redirected: 0,
            resets: 0,
        }
    }

    fn io_size(&self) -> u64 {
        self.region.end - self.region.start
    }

    /// fio's pick of an open zone from the I/O's offset.
    fn pick(&self, s: &ZoneSet, offset: u64) -> usize {
        let n = s.open.len() as u64;
        (((offset.saturating_sub(self.region.start)) as u128 * n as u128
            / self.io_size().max(1) as u128) as u64)
            .min(n.saturating_sub(1)) as usize
    }

    fn busy(&self, s: &ZoneSet, zi: usize) -> bool {
        s.zones[zi]
            .owner
            .is_some_and(|(j, n)| j != self.id && n > 0)
    }

    /// Open zone `zi` for writing if the limits allow (fio's zbd_open_zone).
    fn try_open(&mut self, s: &mut ZoneSet, zi: usize) -> bool {
        let z = &s.zones[zi];
        if z.offline {
            return false;
        }
        if s.max_open == 0 {
            return true;
        }
        if z.open {
            // A zone that writes in flight will fill counts as full.
            return z.wp < z.cap_end();
        }
        if self.cfg.job_max_open_zones > 0 && self.open >= self.cfg.job_max_open_zones {
            return false;
        }
        if s.open.len() as u32 >= s.max_open {
            return false;
        }
        s.open.push(zi as u32);
        s.zones[zi].open = true;
        self.open += 1;
        true
    }

    /// A zone of the job's range that may take a write of `min_bs`, for a
    /// write aimed at a zone that may not be opened (fio's
    /// zbd_convert_to_open_zone). Err(Wait/Eof) when there is none now.
    fn open_zone_for(
        &mut self,
        s: &mut ZoneSet,
        offset: u64,
        inflight: u32,
    ) -> Result<usize, Adjust> {
        let min_bs = self.cfg.min_bs;
        let limited = s.max_open > 0 || self.cfg.job_max_open_zones > 0;
        let mut zi = if limited {
            s.open.get(self.pick(s, offset)).map_or(0, |&z| z as usize)
        } else {
            s.idx(offset)
        };
        zi = zi.clamp(self.min_zone, self.max_zone - 1);
        let mut examine = false;
        loop {
            if s.zones[zi].has_wp && !limited && !s.zones[zi].offline {
                examine = true;
                break;
            }
            if s.open.is_empty() {
                break;
            }
            let start = self.pick(s, offset);
            let n = s.open.len();
            let cand = (0..n)
                .map(|i| s.open[(start + i) % n] as usize)
                .find(|&z| self.min_zone <= z && z < self.max_zone);
            let Some(c) = cand else {
                return Err(Adjust::Eof);
            };
            if c == zi {
                examine = true;
                break;
            }
            zi = c;
        }
        if examine {
            if self.busy(s, zi) {
                return Err(Adjust::Wait);
            }
            let z = &s.zones[zi];
            if z.wp + min_bs <= z.cap_end() {
                return Ok(zi);
            }
        }
        // All open: wait for a zone to close (fio quiesces first).
        let span = self.max_zone - self.min_zone;
        let at_limit = s.open.len() == span
            || (s.max_open > 0 && s.open.len() as u32 >= s.max_open)
            || (self.cfg.job_max_open_zones > 0 && self.open >= self.cfg.job_max_open_zones);
        if at_limit && inflight > 0 {
            return Err(Adjust::Wait);
        }
        let tries = (self.io_size() / s.zone_size.max(1)) as usize;
        for _ in 0..tries {
            zi += 1;
            if zi >= self.max_zone || s.zones[zi].start >= self.region.end {
                zi = self.min_zone;
            }
            let z = &s.zones[zi];
            if !z.has_wp || z.open {
                continue;
            }
            if self.busy(s, zi) {
                return Err(Adjust::Wait);
            }
            if self.try_open(s, zi) {
                return Ok(zi);
            }
        }
        // An open zone with room.
        for i in 0..s.open.len() {
            let z = s.open[i] as usize;
            if z < self.min_zone || z >= self.max_zone {
                continue;
            }
            if s.zones[z].wp + min_bs <= s.zones[z].cap_end() {
                if self.busy(s, z) {
                    return Err(Adjust::Wait);
                }
                return Ok(z);
            }
        }
        // Writes in flight (anywhere on the target) may close zones.
        if s.inflight > 0 {
            return Err(Adjust::Wait);
        }
        Err(Adjust::Eof)
    }

    /// A zone of the range with at least `min` bytes written, after `zb`
    /// (and before it, for random I/O), as fio's zbd_find_zone.
    fn zone_with_data(&self, s: &ZoneSet, zb: usize, min: u64) -> Option<usize> {
        let mut up = zb + 1;
        let mut down = zb as isize - 1;
        while up < self.max_zone || down >= self.min_zone as isize {
            if up < self.max_zone {
                let z = &s.zones[up];
                if !z.offline && z.start + min <= z.wp {
                    return Some(up);
                }
            } else if !self.cfg.random {
                break;
            }
            if self.cfg.random && down >= self.min_zone as isize {
                let z = &s.zones[down as usize];
                if !z.offline && z.start + min <= z.wp {
                    return Some(down as usize);
                }
            }
            up += 1;
            down -= 1;
        }
        None
    }

    /// Adjust a generated I/O to the zone rules. `inflight`: this job's
    /// I/Os in flight.
    pub fn adjust(&mut self, mut io: IoDesc, inflight: u32) -> Adjust {
        let set = self.set.clone();
        let mut s = lock(&set);
        let min_bs = self.cfg.min_bs;
        // fio: a mixed job's first reads are writes until data exists.
        if io.op == Op::Read && self.cfg.mixed && s.with_data == 0 && !self.cfg.read_beyond_wp {
            io.op = Op::Write;
            self.redirected += 1;
        }
        let mut zi = s.idx(io.offset);
        let orig_start = s.zones[zi].start;
        if !s.zones[zi].has_wp {
            if io.op == Op::Write && zi + 1 < s.zones.len() && s.zones[zi + 1].has_wp {
                // A write to a conventional zone stays out of the next one.
                let next = s.zones[zi + 1].start;
                if io.offset + u64::from(io.len) > next {
                    let len = (next - io.offset) / min_bs * min_bs;
                    if len == 0 {
                        io.offset = next - min_bs;
                        io.len = min_bs as u32;
                    } else {
                        io.len = len as u32;
                    }
                }
            }
            return Adjust::Issue(io);
        }
        if io.op == Op::Read && self.cfg.read_beyond_wp && !s.zones[zi].offline {
            return self.own(&mut s, zi, io);
        }
        if self.busy(&s, zi) {
            return Adjust::Wait;
        }
        match io.op {
            Op::Read => {
                let z = &s.zones[zi];
                let mut range = if z.offline { 0 } else { z.wp - z.start };
                if range < min_bs || (!self.cfg.random && io.offset + min_bs > z.wp) {
                    let Some(n) = self.zone_with_data(&s, zi, min_bs) else {
                        return Adjust::Eof;
                    };
                    if self.busy(&s, n) {
                        return Adjust::Wait;
                    }
                    zi = n;
                    range = s.zones[zi].wp - s.zones[zi].start;
                    if !self.cfg.random {
                        io.offset = s.zones[zi].start;
                    }
                }
                let z = &s.zones[zi];
                let len = u64::from(io.len);
                if range <= len {
                    io.offset = z.start;
                } else if self.cfg.random {
                    io.offset =
                        z.start + ((io.offset - orig_start) % (range - len)) / min_bs * min_bs;
                }
                let cut = len.min(z.wp - io.offset) / min_bs * min_bs;
                io.len = cut as u32;
                self.own(&mut s, zi, io)
            }
            Op::Write => self.adjust_write(&mut s, zi, io, inflight),
            Op::Trim => {
                // fio: a random trim of an empty zone moves to a zone with
                // data (none left: the job ends); a sequential one stays.
                let z = &s.zones[zi];
                if self.cfg.random && z.wp == z.start {
                    let Some(n) = self.zone_with_data(&s, zi, 1) else {
                        return Adjust::Eof;
                    };
                    if self.busy(&s, n) {
                        return Adjust::Wait;
                    }
                    zi = n;
                    io.offset = s.zones[zi].start;
                }
                // The zone stays this job's until the trim (its reset, by
                // [`ZoneTrims`]) completes.
                self.own(&mut s, zi, io)
            }
            Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => Adjust::Issue(io),
        }
    }

    /// [`adjust`](Self::adjust) for a write to zone `zi` (one with a
    /// write pointer): at the write pointer of an open zone, the zone
    /// reset first when it is full or due, the write pointer moved.
    fn adjust_write(
        &mut self,
        s: &mut ZoneSet,
        mut zi: usize,
        mut io: IoDesc,
        inflight: u32,
    ) -> Adjust {
        let min_bs = self.cfg.min_bs;
        if u64::from(io.len) > s.zone_size {
            return Adjust::Failed(format!(
                "a {}-byte write is larger than the zone size {}",
                io.len, s.zone_size
            ));
        }
        // fio: a sequential write past a zone's capacity (an
        // emulated zone under zonecapacity) goes on at the next.
        let z = &s.zones[zi];
        if !self.cfg.random && z.cap_end() < z.end && io.offset >= z.cap_end() {
            if z.end >= self.region.end {
                return Adjust::Eof;
            }
            io.offset = z.end;
            zi = s.idx(io.offset);
            if self.busy(s, zi) {
                return Adjust::Wait;
            }
        }
        if !self.try_open(s, zi) {
            zi = match self.open_zone_for(s, io.offset, inflight) {
                Ok(z) => z,
                Err(a) => return a,
            };
        }
        if self.cfg.reset_frequency > 0.0
            && s.with_data as f64 >= self.io_size() as f64 * self.cfg.reset_threshold
        {
            s.write_cnt = s.write_cnt.saturating_sub(1);
            if s.write_cnt == 0 {
                s.write_cnt = countdown(self.cfg.reset_frequency);
                s.zones[zi].reset_due = true;
            }
        }
        let full = {
            let z = &s.zones[zi];
            z.wp + min_bs > z.cap_end()
        };
        if s.zones[zi].reset_due || full {
            // The job's writes complete before the reset.
            if inflight > 0 {
                return Adjust::Wait;
            }
            s.zones[zi].reset_due = false;
            match s.reset_zone(zi) {
                Ok(done) => self.resets += u64::from(done),
                Err(e) => return Adjust::Failed(e),
            }
            if s.zones[zi].capacity < min_bs {
                return Adjust::Failed(format!(
                    "zone capacity {} is smaller than the block size {min_bs}",
                    s.zones[zi].capacity
                ));
            }
        }
        let z = &s.zones[zi];
        io.offset = z.wp;
        if io.offset < self.region.start || io.offset >= self.region.end {
            return Adjust::Eof;
        }
        let len = u64::from(io.len).min(z.cap_end() - io.offset) / min_bs * min_bs;
        if len < min_bs {
            return Adjust::Failed(format!(
                "zone remainder {} is smaller than the block size {min_bs}",
                z.cap_end() - io.offset
            ));
        }
        io.len = len as u32;
        // The write pointer moves when the write is issued.
        let end = (io.offset + len).min(z.cap_end());
        s.with_data += end - s.zones[zi].wp;
        s.zones[zi].wp = end;
        self.own(s, zi, io)
    }

    fn own(&mut self, s: &mut ZoneSet, zi: usize, io: IoDesc) -> Adjust {
        let z = &mut s.zones[zi];
        z.owner = Some((self.id, z.owner.map_or(0, |o| o.1) + 1));
        s.inflight += 1;
        Adjust::Issue(io)
    }

    /// An I/O issued through [`JobZones::adjust`] completed: a write that
    /// reached the zone's capacity closes the zone; the zone is released.
    pub fn completed(&mut self, io: &IoDesc) {
        let set = self.set.clone();
        let mut s = lock(&set);
        let zi = s.idx(io.offset);
        if !s.zones[zi].has_wp {
            return;
        }
        let z = &mut s.zones[zi];
        let Some((j, n)) = z.owner else { return };
        if j != self.id {
            return;
        }
        z.owner = (n > 1).then_some((j, n - 1));
        if io.op == Op::Trim && std::mem::take(&mut z.trim_reset) {
            self.resets += 1;
        }
        s.inflight = s.inflight.saturating_sub(1);
        if io.op == Op::Write && io.offset + u64::from(io.len) >= s.zones[zi].cap_end() {
            s.close(zi, self);
        }
    }

    /// Zone resets done on the target so far.
    pub fn resets(&self) -> u64 {
        lock(&self.set).resets
    }
}

/// The engine of a `zonemode=zbd` job that trims. A trim of a zone with a
/// write pointer is that zone's reset, as in fio (its zbd_do_io_u_trim):
/// done here when the trim is queued, through the zones' claim-built
/// handle (nothing on a target with emulated zones), and completed with
/// the trim's length without reaching the inner engine. A trim that is not
/// at a zone's start fails with EINVAL, as fio's does. Everything else,
/// and a trim of a conventional zone (a discard), goes to the inner
/// engine.
pub struct ZoneTrims<'a, E> {
    inner: &'a mut E,
    set: SharedZones,
    done: std::collections::VecDeque<drivelab_engine::engine::Completion>,
}

impl<'a, E: drivelab_engine::engine::Engine> ZoneTrims<'a, E> {
    /// `inner` with the trims of `set`'s zones turned into resets.
    pub fn new(inner: &'a mut E, set: SharedZones) -> ZoneTrims<'a, E> {
        let depth = inner.depth() as usize;
        ZoneTrims {
            inner,
            set,
            done: std::collections::VecDeque::with_capacity(depth),
        }
    }

    /// The reset a trim stands for, when it is one: its completion result.
    fn reset(&mut self, io: &IoDesc) -> Option<i32> {
        if io.op != Op::Trim {
            return None;
        }
        let mut s = lock(&self.set);
        let zi = s.idx(io.offset);
        if !s.zones[zi].has_wp {
            return None;
        }
        if io.offset != s.zones[zi].start {
            return Some(-libc::EINVAL);
        }
        Some(match s.reset_zone_io(zi) {
            Ok(did) => {
                s.zones[zi].trim_reset = did;
                i32::try_from(io.len).unwrap_or(i32::MAX)
            }
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        })
    }
}

impl<E: drivelab_engine::engine::Engine> drivelab_engine::engine::Engine for ZoneTrims<'_, E> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn caps(&self) -> drivelab_engine::engine::Caps {
        self.inner.caps()
    }

    fn depth(&self) -> u32 {
        self.inner.depth()
    }

    fn queue(&mut self, slot: u32, io: &IoDesc) {
        match self.reset(io) {
            Some(result) => self
                .done
                .push_back(drivelab_engine::engine::Completion { slot, result }),
            None => self.inner.queue(slot, io),
        }
    }

    fn queue_prio(&mut self, slot: u32, io: &IoDesc, ioprio: u16) {
        match self.reset(io) {
            Some(result) => self
                .done
                .push_back(drivelab_engine::engine::Completion { slot, result }),
            None => self.inner.queue_prio(slot, io, ioprio),
        }
    }

    fn commit(&mut self, wait: u32, timeout: Option<std::time::Duration>) -> std::io::Result<()> {
        // With resets done, submit the rest without waiting for any.
        let wait = if self.done.is_empty() { wait } else { 0 };
        self.inner.commit(wait, timeout)
    }

    fn reap<F: FnMut(drivelab_engine::engine::Completion)>(&mut self, mut f: F) -> usize {
        let mut n = 0;
        while let Some(c) = self.done.pop_front() {
            f(c);
            n += 1;
        }
        n + self.inner.reap(f)
    }

    fn reap_max<F: FnMut(drivelab_engine::engine::Completion)>(
        &mut self,
        max: usize,
        mut f: F,
    ) -> usize {
        let mut n = 0;
        while n < max {
            let Some(c) = self.done.pop_front() else {
                break;
            };
            f(c);
            n += 1;
        }
        if n == max {
            return n;
        }
        n + self.inner.reap_max(max - n, f)
    }

    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.inner.buffer(slot)
    }
}

/// Whether a job's trims are zone resets ([`ZoneTrims`]): its zones, if so.
pub fn trims_reset(cfg: &Option<JobZones>, spec: &JobSpec) -> Option<SharedZones> {
    let z = cfg.as_ref()?;
    (spec.rw.write_kind() == crate::WriteKind::Trim).then(|| z.set.clone())
}

/// fio's write countdown between threshold resets: 1 / frequency writes.
fn countdown(freq: f64) -> u32 {
    if freq > 0.0 {
        (1.0 / freq).min(f64::from(u32::MAX)) as u32
    } else {
        u32::MAX
    }
}

/// The zones of a target at the start of a run: the device's report
/// (through the claim, which also resets zones) or zones emulated on a
/// target that is not zoned.
pub fn open_set(
    cfg: &ZbdJob,
    size: u64,
    claim: Option<&drivelab_device::claim::Claim>,
    path: &std::path::Path,
) -> std::io::Result<SharedZones> {
    let set = if cfg.model == Model::None {
        ZoneSet::emulated(size, (cfg.zone_size, cfg.zone_capacity), cfg.max_open_zones)
    } else {
        let writer = claim.map(ZoneWriter::from_claim).transpose()?;
        let n = size.div_ceil(cfg.zone_size) as usize;
        let report = match &writer {
            Some(w) => w.report(0, n)?,
            None => {
                let f = std::fs::File::open(path)?;
                zoned::report_zones(std::os::fd::AsFd::as_fd(&f), 0, n)?
            }
        };
        let mut s = ZoneSet::from_report(&report, cfg.max_open_zones, writer);
        // Open zones past the limit are reset, as fio does at start.
        for i in 0..s.zones.len() {
            if s.zones[i].reset_due && s.writer.is_some() {
                s.zones[i].reset_due = false;
                s.reset_zone(i).map_err(std::io::Error::other)?;
            }
        }
        s.resets = 0;
        s
    };
    Ok(Arc::new(Mutex::new(set)))
}

/// The zones of every target a `zonemode=zbd` job uses, one set per
/// target shared by its jobs (None for the others). Jobs on one target
/// must agree on the open-zone limit, as in fio.
pub fn open_sets(
    plan: &crate::Plan,
    claims: &[Option<drivelab_device::claim::Claim>],
) -> Result<Vec<Option<SharedZones>>, (String, std::io::Error)> {
    let mut out: Vec<Option<SharedZones>> = vec![None; plan.targets.len()];
    let mut limits: Vec<Option<u32>> = vec![None; plan.targets.len()];
    for j in &plan.jobs {
        let (Some(z), Some(&ti)) = (&j.zbd, j.targets.first()) else {
            continue;
        };
        let t = &plan.targets[ti];
        let name = t.path.display().to_string();
        match limits[ti] {
            Some(m) if m != z.max_open_zones => {
                return Err((
                    name,
                    std::io::Error::other(format!(
                        "jobs on it give different max_open_zones ({m} and {}); give the same value to every job",
                        z.max_open_zones
                    )),
                ))
            }
            _ => limits[ti] = Some(z.max_open_zones),
        }
        if out[ti].is_none() {
            let set = open_set(z, t.size, claims.get(ti).and_then(Option::as_ref), &t.path)
                .map_err(|e| (name, e))?;
            out[ti] = Some(set);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const Z: u64 = 1 << 20;

    fn cfg(max_open: u32, random: bool) -> ZbdJob {
        ZbdJob {
            zone_size: Z,
            zone_capacity: Z,
            model: Model::None,
            max_open_zones: max_open,
            job_max_open_zones: 0,
            reset_threshold: 0.0,
            reset_frequency: 0.0,
            read_beyond_wp: false,
            min_bs: 64 << 10,
            random,
            mixed: false,
            writes: true,
        }
    }

    fn job(set: &SharedZones, c: ZbdJob, id: u32, zones: (u64, u64)) -> JobZones {
        JobZones::new(
            set.clone(),
            c,
            id,
            Region {
                start: zones.0 * Z,
                end: zones.1 * Z,
            },
        )
    }

    fn w(off: u64, len: u32) -> IoDesc {
        IoDesc {
            target: 0,
            op: Op::Write,
            offset: off,
            len,
        }
    }

    fn issue(j: &mut JobZones, io: IoDesc) -> IoDesc {
        match j.adjust(io, 0) {
            Adjust::Issue(a) => {
                j.completed(&a);
                a
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn writes_go_to_the_write_pointer_in_order() {
        let set = Arc::new(Mutex::new(ZoneSet::emulated(8 * Z, (Z, Z), 0)));
        let mut j = job(&set, cfg(0, true), 1, (0, 8));
        // Random offsets in zone 3: written at its write pointer, in order.
        let a = issue(&mut j, w(3 * Z + (512 << 10), 65536));
        let b = issue(&mut j, w(3 * Z + (128 << 10), 65536));
        assert_eq!((a.offset, b.offset), (3 * Z, 3 * Z + 65536));
        let s = lock(&set);
        assert_eq!(s.zones[3].wp, 3 * Z + 2 * 65536);
        assert_eq!(s.with_data, 2 * 65536);
    }

    #[test]
    fn max_open_zones_holds_and_full_zones_close() {
        let set = Arc::new(Mutex::new(ZoneSet::emulated(8 * Z, (Z, Z), 2)));
        let mut j = job(&set, cfg(2, true), 1, (0, 8));
        let mut zones = std::collections::BTreeSet::new();
        for k in 0..8u64 {
            let a = issue(&mut j, w(k * Z, 65536));
            zones.insert(a.offset / Z);
        }
        // Eight different zones asked for, two opened.
        assert_eq!(zones.len(), 2, "{zones:?}");
        assert!(lock(&set).open.len() <= 2);
        // Fill everything: zones close when full and others open; never
        // more than two open, and no byte written twice before a reset.
        for _ in 0..(8 * 16) {
            issue(&mut j, w(5 * Z, 65536));
            assert!(lock(&set).open.len() <= 2);
        }
        let s = lock(&set);
        let written: u64 = s.zones.iter().map(|z| z.wp - z.start).sum();
        assert_eq!(written + s.resets * Z, (8 + 8 * 16) * 65536);
    }

    #[test]
    fn a_full_zone_is_reset_before_it_is_written_again() {
        let set = Arc::new(Mutex::new(ZoneSet::emulated(Z, (Z, Z), 0)));
        let mut j = job(&set, cfg(0, false), 1, (0, 1));
        for k in 0..16u64 {
            assert_eq!(issue(&mut j, w(0, 65536)).offset, k * 65536);
        }
        assert_eq!(lock(&set).resets, 0);
        assert_eq!(issue(&mut j, w(0, 65536)).offset, 0);
        assert_eq!((lock(&set).resets, j.resets), (1, 1));
        // With a write of the job in flight, the reset waits for it.
        for _ in 0..15 {
            issue(&mut j, w(0, 65536));
        }
        assert_eq!(j.adjust(w(0, 65536), 1), Adjust::Wait);
    }

    #[test]
    fn the_threshold_resets_every_nth_write_past_it() {
        let set = Arc::new(Mutex::new(ZoneSet::emulated(4 * Z, (Z, Z), 0)));
        let mut c = cfg(0, true);
        c.reset_threshold = 0.25;
        c.reset_frequency = 0.25;
        let mut j = job(&set, c, 1, (0, 4));
        // 1 MiB of 4 written: then every 4th write resets its zone.
        for k in 0..16u64 {
            issue(&mut j, w((k % 2) * Z, 65536));
        }
        assert_eq!(lock(&set).resets, 0);
        for _ in 0..3 {
            issue(&mut j, w(Z, 65536));
        }
        assert_eq!(lock(&set).resets, 0);
        let a = issue(&mut j, w(Z, 65536));
        assert_eq!(a.offset, Z);
        assert_eq!(lock(&set).resets, 1);
        assert_eq!(lock(&set).zones[1].wp, Z + 65536);
    }

    #[test]
    fn reads_stay_below_the_write_pointer() {
        let set = Arc::new(Mutex::new(ZoneSet::emulated(4 * Z, (Z, Z), 0)));
        let mut wj = job(&set, cfg(0, false), 1, (0, 4));
        for _ in 0..3 {
            issue(&mut wj, w(2 * Z, 65536));
        }
        let mut c = cfg(0, false);
        c.writes = false;
        let mut r = job(&set, c.clone(), 2, (0, 4));
        let rd = |off: u64| IoDesc {
            target: 0,
            op: Op::Read,
            offset: off,
            len: 131072,
        };
        // Zone 0 is empty: the read moves on to zone 2, the first with data.
        let a = issue(&mut r, rd(0));
        assert_eq!((a.offset, a.len), (2 * Z, 131072));
        // Cut at the write pointer.
        let b = issue(&mut r, rd(2 * Z + 131072));
        assert_eq!((b.offset, b.len), (2 * Z + 131072, 65536));
        // Past the data: the job ends.
        assert_eq!(r.adjust(rd(2 * Z + 196608), 0), Adjust::Eof);
        // read_beyond_wp: as asked.
        c.read_beyond_wp = true;
        let mut rb = job(&set, c, 3, (0, 4));
        assert_eq!(issue(&mut rb, rd(Z)).offset, Z);
    }

    #[test]
    fn a_zone_with_another_jobs_io_in_flight_waits() {
        let set = Arc::new(Mutex::new(ZoneSet::emulated(Z, (Z, Z), 0)));
        let mut a = job(&set, cfg(0, false), 1, (0, 1));
        let mut b = job(&set, cfg(0, false), 2, (0, 1));
        let Adjust::Issue(x) = a.adjust(w(0, 65536), 0) else {
            panic!()
        };
        assert_eq!(b.adjust(w(0, 65536), 0), Adjust::Wait);
        // The same job may queue more in the zone, in order.
        let Adjust::Issue(y) = a.adjust(w(0, 65536), 1) else {
            panic!()
        };
        assert_eq!(y.offset, x.offset + 65536);
        a.completed(&x);
        a.completed(&y);
        assert_eq!(issue(&mut b, w(0, 65536)).offset, 2 * 65536);
    }

    fn t(off: u64) -> IoDesc {
        IoDesc {
            target: 0,
            op: Op::Trim,
            offset: off,
            len: Z as u32,
        }
    }

    #[test]
    fn a_random_trim_of_an_empty_zone_moves_to_one_with_data() {
        let set = Arc::new(Mutex::new(ZoneSet::emulated(4 * Z, (Z, Z), 0)));
        let mut c = cfg(0, true);
        c.min_bs = Z;
        let mut tj = job(&set, c.clone(), 2, (0, 4));
        // Nothing written: fio's end of data.
        assert_eq!(tj.adjust(t(Z), 0), Adjust::Eof);
        let mut wj = job(&set, cfg(0, true), 1, (0, 4));
        issue(&mut wj, w(2 * Z, 65536));
        // Zone 1 is empty: the trim goes to zone 2's start.
        let Adjust::Issue(a) = tj.adjust(t(Z), 0) else {
            panic!()
        };
        assert_eq!(a.offset, 2 * Z);
        // The zone is the trim job's until the trim completes.
        assert_eq!(wj.adjust(w(2 * Z, 65536), 0), Adjust::Wait);
        tj.completed(&a);
        // A sequential trim stays where it is, data or not.
        c.random = false;
        let mut sj = job(&set, c, 3, (0, 4));
        assert_eq!(issue(&mut sj, t(0)).offset, 0);
    }

    #[test]
    fn trims_are_zone_resets_completed_without_the_engine() {
        use drivelab_engine::engine::{Engine, Null};
        let set = Arc::new(Mutex::new(ZoneSet::emulated(4 * Z, (Z, Z), 0)));
        let mut wj = job(&set, cfg(0, false), 1, (0, 4));
        for _ in 0..3 {
            issue(&mut wj, w(Z, 65536));
        }
        let mut c = cfg(0, false);
        c.min_bs = Z;
        let mut tj = job(&set, c, 2, (0, 4));
        let mut null = Null::new(4, Z as usize, drivelab_engine::buf::Fill::Zeroed).unwrap();
        let mut e = ZoneTrims::new(&mut null, set.clone());
        let mut got = Vec::new();
        // Zone 0 (empty), zone 1 (3 blocks), then a trim off a zone start
        // and a read, which goes to the inner engine.
        let a = match tj.adjust(t(0), 0) {
            Adjust::Issue(a) => a,
            o => panic!("{o:?}"),
        };
        let b = match tj.adjust(t(Z), 1) {
            Adjust::Issue(b) => b,
            o => panic!("{o:?}"),
        };
        e.queue(0, &a);
        e.queue(1, &b);
        e.queue(2, &t(Z + 65536));
        let rd = IoDesc {
            target: 0,
            op: Op::Read,
            offset: 0,
            len: 4096,
        };
        e.queue(3, &rd);
        e.commit(4, None).unwrap();
        e.reap(|c| got.push((c.slot, c.result)));
        got.sort_unstable();
        assert_eq!(
            got,
            vec![(0, Z as i32), (1, Z as i32), (2, -libc::EINVAL), (3, 4096)]
        );
        tj.completed(&a);
        tj.completed(&b);
        // One zone held data: one reset, counted by the trim job.
        let s = lock(&set);
        assert_eq!((s.resets, tj.resets, wj.resets), (1, 1, 0));
        assert_eq!((s.zones[1].wp, s.with_data), (Z, 0));
        assert!(s.zones.iter().all(|z| z.owner.is_none()));
    }

    #[test]
    fn trims_need_the_zone_size_as_block_size() {
        let mut s = JobSpec::default();
        s.set("rw", Some("randtrim")).unwrap();
        s.set("bs", Some("64k")).unwrap();
        let e = check_trim_bs(&s, Z).unwrap_err();
        assert!(e.contains("65536") && e.contains("1048576"), "{e}");
        s.set("bs", Some("1m")).unwrap();
        assert_eq!(check_trim_bs(&s, Z), Ok(()));
        s.set("bsrange", Some("512k-1m")).unwrap();
        assert!(check_trim_bs(&s, Z).unwrap_err().contains("bsrange"));
        // Only the trim direction's size counts.
        let mut s = JobSpec::default();
        s.set("rw", Some("trim")).unwrap();
        s.set("bs", Some("4k,4k,1m")).unwrap();
        assert_eq!(check_trim_bs(&s, Z), Ok(()));
    }

    #[test]
    fn zone_counts_and_limits_parse() {
        let mut s = JobSpec::default();
        s.set("zonemode", Some("zbd")).unwrap();
        s.set("size", Some("8z")).unwrap();
        s.set("offset", Some("524z")).unwrap();
        assert!(s.zbd.on);
        assert_eq!(s.zbd.in_zones[0], Some(8));
        assert_eq!(s.zbd.in_zones[2], Some(524));
        s.set("size", Some("1m")).unwrap();
        assert_eq!(s.zbd.in_zones[0], None);
        s.set("offset_increment", Some("3z")).unwrap();
        assert_eq!(s.zbd.in_zones[3], Some(3));
        assert_eq!(s.offset_increment, crate::SizeSpec::Bytes(0));
        let e = s.set("io_size", Some("99999999999999999999z")).unwrap_err();
        assert!(e.to_string().contains("a number of zones"), "{e}");
        s.set("zonemode", Some("none")).unwrap();
        assert!(!s.zbd.on);
        assert_eq!(s.zonemode_strided, Some(false));
        let e = s
            .set("zone_reset_threshold", Some("1.5"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("zone_reset_threshold"), "{e}");
        let e = s
            .set("max_open_zones", Some("5000"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_open_zones"), "{e}");
        assert_eq!(resolve_max_open(0, 14), Ok(14));
        assert_eq!(resolve_max_open(8, 14), Ok(8));
        assert_eq!(resolve_max_open(8, 0), Ok(8));
        assert!(resolve_max_open(32, 14).unwrap_err().contains("14"));
    }
}
