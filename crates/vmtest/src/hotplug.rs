//! Hot-plug driven by the guest: a plan of disks the host may plug into
//! the running VM ([`Hotplug`]), and the host side that carries out the
//! guest's requests through QEMU's monitor ([`crate::qmp`]).
//!
//! Why: a test of drives arriving and leaving (the station) needs them to
//! arrive and leave at moments the guest chooses (while another drive is
//! being erased, at 10 % of this one's erase). The guest asks by writing
//! an empty marker file `/out/plug-REQUEST` (9p); the host, polling
//! `out/` while the VM runs, performs each marked request that has no
//! answer yet and answers with `plug-REQUEST.done`, or
//! `plug-REQUEST.failed` holding the error (QMP's own, when QEMU
//! refused). tests/vm/lib.sh's `hotplug REQUEST` removes an old answer,
//! writes the marker, waits for the answer and removes the marker (so
//! the same request can be made again).
//!
//! Requests, for a disk declared with id ID:
//! - `add-ID`: a SCSI disk becomes a `scsi-hd` on the VM's virtio-scsi
//!   bus, an NVMe disk an `nvme` controller (namespace 1) in a PCIe root
//!   port of its own, each over its raw image file (`blockdev-add`, with a
//!   `throttle` node when the disk has a write limit);
//! - `del-ID`: `device_del` of that device, waiting for QEMU's
//!   `DEVICE_DELETED` (an NVMe controller leaves once the guest's pciehp
//!   has powered its slot off, about 5 s after the button press), then
//!   its block nodes are deleted. Only a device this run added is ever
//!   deleted, by its own id: a `del` of anything else fails.
//!
//! The image files are the test's: it makes them (and their contents)
//! before the boot and reads them after, e.g. to compare digests.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::VmError;
use crate::qmp::{Qmp, QmpError};

/// A disk the guest may have plugged in while it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotDisk {
    /// The raw image file (made by the test; a multiple of 512 bytes).
    pub image: PathBuf,
    /// The serial QEMU reports (1–20 characters of `A-Z a-z 0-9 _ -`).
    pub serial: String,
    /// The rate at which the disk's medium takes writes, bytes per second
    /// (a `throttle` node's `bps-write`), or unlimited.
    pub write_bytes_per_s: Option<u64>,
    /// SCSI disks only: the largest transfer and WRITE SAME, bytes
    /// (scsi-hd's `max_io_size`), so a write limit paces each command.
    pub max_io_bytes: Option<u64>,
    /// SCSI disks only: the target id on the bus (0–255), or the lowest
    /// free one.
    pub scsi_target: Option<u8>,
}

impl HotDisk {
    /// A disk over `image` with serial `serial`.
    pub fn new(image: &Path, serial: &str) -> Self {
        HotDisk {
            image: image.to_path_buf(),
            serial: serial.to_string(),
            write_bytes_per_s: None,
            max_io_bytes: None,
            scsi_target: None,
        }
    }

    /// Writes reach the medium at `bytes_per_s` (see
    /// [`crate::Disk::write_limit`]).
    pub fn write_limit(mut self, bytes_per_s: u64) -> Self {
        self.write_bytes_per_s = Some(bytes_per_s);
        self
    }

    /// A SCSI disk's maximum transfer and WRITE SAME length.
    pub fn max_io(mut self, bytes: u64) -> Self {
        self.max_io_bytes = Some(bytes);
        self
    }

    /// A SCSI disk's target id.
    pub fn scsi_target(mut self, target: u8) -> Self {
        self.scsi_target = Some(target);
        self
    }
}

/// Which controller a hot disk goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotBus {
    /// A `scsi-hd` on the virtio-scsi bus `scsi0.0`.
    Scsi,
    /// An `nvme` controller in the PCIe root port made for it.
    Nvme,
}

/// The disks the guest may plug and pull, by id (see the module doc).
#[derive(Debug, Clone)]
pub struct Hotplug {
    disks: Vec<(String, HotBus, HotDisk)>,
    /// How long a `del` waits for `DEVICE_DELETED`.
    unplug_timeout: Duration,
}

impl Default for Hotplug {
    fn default() -> Self {
        Hotplug {
            disks: Vec::new(),
            unplug_timeout: Duration::from_secs(60),
        }
    }
}

/// The id of the PCIe root port made for the `n`th NVMe hot disk.
fn root_port(n: usize) -> String {
    format!("hprp{n}")
}

impl Hotplug {
    /// An empty plan; a `del` waits 60 s for QEMU's `DEVICE_DELETED`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A SCSI disk the guest plugs with `add-ID`, pulls with `del-ID`.
    pub fn scsi(mut self, id: &str, disk: HotDisk) -> Self {
        self.disks.push((id.to_string(), HotBus::Scsi, disk));
        self
    }

    /// An NVMe drive the guest plugs with `add-ID`, pulls with `del-ID`.
    pub fn nvme(mut self, id: &str, disk: HotDisk) -> Self {
        self.disks.push((id.to_string(), HotBus::Nvme, disk));
        self
    }

    /// How long a `del` waits for QEMU's `DEVICE_DELETED`.
    pub fn unplug_timeout(mut self, d: Duration) -> Self {
        self.unplug_timeout = d;
        self
    }

    /// Whether a hot disk needs the virtio-scsi controller.
    pub(crate) fn needs_scsi(&self) -> bool {
        self.disks.iter().any(|(_, b, _)| *b == HotBus::Scsi)
    }

    /// Refuses a plan QEMU could not carry out: a bad id or serial, an
    /// id or serial used twice (`serials` holds the boot disks'), a
    /// missing image or one not a multiple of 512 bytes, SCSI options on
    /// an NVMe drive, a SCSI target used twice.
    pub(crate) fn check(&self, serials: &mut HashSet<String>) -> Result<(), VmError> {
        let mut ids = HashSet::new();
        let mut targets = HashSet::new();
        for (id, bus, d) in &self.disks {
            let ok = !id.is_empty()
                && id.len() <= 32
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return Err(VmError::Config(format!(
                    "hot-plug id {id:?}: use 1-32 characters of A-Z a-z 0-9 _ -"
                )));
            }
            if !ids.insert(id.clone()) {
                return Err(VmError::Config(format!("hot-plug id {id} used twice")));
            }
            let mut disk = crate::disk::Disk::new(512, &d.serial);
            disk.write_bytes_per_s = d.write_bytes_per_s;
            disk.check()?;
            if !serials.insert(d.serial.clone()) {
                return Err(VmError::Config(format!("serial {} used twice", d.serial)));
            }
            let len = std::fs::metadata(&d.image)
                .map_err(|source| VmError::Io {
                    action: "read",
                    path: d.image.clone(),
                    source,
                })?
                .len();
            if len == 0 || len % 512 != 0 {
                return Err(VmError::Config(format!(
                    "hot-plug disk {id}: image {} is {len} B, not a positive multiple of 512",
                    d.image.display()
                )));
            }
            if *bus == HotBus::Nvme && (d.max_io_bytes.is_some() || d.scsi_target.is_some()) {
                return Err(VmError::Config(format!(
                    "hot-plug disk {id}: a maximum I/O size and a target are for SCSI disks only"
                )));
            }
            if d.max_io_bytes.is_some_and(|m| m < 512 || m % 512 != 0) {
                return Err(VmError::Config(format!(
                    "hot-plug disk {id}: maximum I/O size must be a positive multiple of 512"
                )));
            }
            if let Some(t) = d.scsi_target {
                if !targets.insert(t) {
                    return Err(VmError::Config(format!(
                        "hot-plug disk {id}: SCSI target {t} used twice"
                    )));
                }
            }
        }
        Ok(())
    }

    /// QEMU's arguments for the plan: the monitor on `socket`, native PCIe
    /// hot-plug (the guest's pciehp, whatever the firmware's ACPI), and a
    /// root port per NVMe drive.
    pub(crate) fn qemu_args(&self, socket: &Path) -> Vec<String> {
        let mut a = vec![
            "-qmp".to_string(),
            format!("unix:{},server=on,wait=off", socket.display()),
            "-global".to_string(),
            "ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off".to_string(),
        ];
        let nvme = self.disks.iter().filter(|(_, b, _)| *b == HotBus::Nvme);
        for (n, _) in nvme.enumerate() {
            a.push("-device".into());
            a.push(format!(
                "pcie-root-port,id={},chassis={},slot=0",
                root_port(n),
                n + 1
            ));
        }
        a
    }
}

/// What became of one guest request.
#[derive(Debug, Clone, PartialEq)]
pub struct HotplugOutcome {
    /// The request (`add-ID`, `del-ID`).
    pub request: String,
    /// Seconds from QEMU's start to the answer.
    pub at_s: f64,
    /// Done, or why not.
    pub result: Result<(), String>,
}

/// A disk this run plugged in: the nodes and objects to delete after it.
#[derive(Debug)]
struct Plugged {
    /// The block node the device uses (and whose children go with it).
    top: String,
    /// The raw node under a throttle node, deleted after it.
    raw: Option<String>,
    /// The throttle group object, when the disk has a write limit.
    group: Option<String>,
}

/// The host side of a running VM's plan: polls `out/` for requests.
#[derive(Debug)]
pub(crate) struct Driver {
    plan: Hotplug,
    socket: PathBuf,
    out: PathBuf,
    started: Instant,
    qmp: Option<Qmp>,
    plugged: HashMap<String, Plugged>,
    /// Every request answered, in order.
    pub(crate) outcomes: Vec<HotplugOutcome>,
}

/// How long the monitor is waited for and each command's reply awaited.
const MONITOR_WAIT: Duration = Duration::from_secs(30);

impl Driver {
    /// The driver of `plan` for a VM whose monitor is at `socket` and
    /// whose `/out` is `out`.
    pub(crate) fn new(plan: Hotplug, socket: PathBuf, out: PathBuf) -> Driver {
        Driver {
            plan,
            socket,
            out,
            started: Instant::now(),
            qmp: None,
            plugged: HashMap::new(),
            outcomes: Vec::new(),
        }
    }

    /// Carries out every request waiting in `out/` and answers each.
    pub(crate) fn poll(&mut self) {
        let Ok(rd) = std::fs::read_dir(&self.out) else {
            return;
        };
        let mut requests: Vec<String> = rd
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let req = name.strip_prefix("plug-")?;
                (!req.is_empty() && !req.contains('.')).then(|| req.to_string())
            })
            .collect();
        requests.sort();
        for req in requests {
            // The marker stays until the guest has read the answer and
            // removes both (deleting it here could fail the guest's own
            // creation of it, still under way over 9p).
            let answered = ["done", "failed"]
                .iter()
                .any(|s| self.out.join(format!("plug-{req}.{s}")).exists());
            if answered {
                continue;
            }
            let result = self.perform(&req).map_err(|e| e.to_string());
            let (suffix, text) = match &result {
                Ok(()) => ("done", String::new()),
                Err(e) => ("failed", format!("{e}\n")),
            };
            let tmp = self.out.join(format!("plug-{req}.{suffix}.tmp"));
            let answer = self.out.join(format!("plug-{req}.{suffix}"));
            // The answer appears whole (rename), so the guest never reads
            // half of an error.
            if std::fs::write(&tmp, text).is_ok() {
                let _ = std::fs::rename(&tmp, &answer);
            }
            self.outcomes.push(HotplugOutcome {
                request: req,
                at_s: self.started.elapsed().as_secs_f64(),
                result,
            });
        }
    }

    fn qmp(&mut self) -> Result<&mut Qmp, HotplugError> {
        if self.qmp.is_none() {
            self.qmp = Some(Qmp::connect(&self.socket, MONITOR_WAIT, MONITOR_WAIT)?);
        }
        self.qmp.as_mut().ok_or(HotplugError::Qmp(QmpError::Closed))
    }

    fn perform(&mut self, req: &str) -> Result<(), HotplugError> {
        let (verb, id) = req
            .split_once('-')
            .ok_or_else(|| HotplugError::Unknown(req.to_string()))?;
        let found = self
            .plan
            .disks
            .iter()
            .position(|(i, _, _)| i == id)
            .ok_or_else(|| HotplugError::Unknown(req.to_string()))?;
        match verb {
            "add" => self.add(found),
            "del" => self.del(id),
            _ => Err(HotplugError::Unknown(req.to_string())),
        }
    }

    /// Plugs the plan's `n`th disk.
    fn add(&mut self, n: usize) -> Result<(), HotplugError> {
        let (id, bus, disk) = self.plan.disks[n].clone();
        if self.plugged.contains_key(&id) {
            return Err(HotplugError::State(format!("{id} is plugged in already")));
        }
        let nvme_index = self.plan.disks[..n]
            .iter()
            .filter(|(_, b, _)| *b == HotBus::Nvme)
            .count();
        let q = self.qmp()?;
        let raw = format!("hp-raw-{id}");
        q.execute(
            "blockdev-add",
            json!({"node-name": raw, "driver": "raw",
                   "cache": {"direct": false, "no-flush": true},
                   "file": {"driver": "file", "filename": disk.image.display().to_string()}}),
        )?;
        let mut plugged = Plugged {
            top: raw.clone(),
            raw: None,
            group: None,
        };
        if let Some(bps) = disk.write_bytes_per_s {
            let group = format!("hp-tg-{id}");
            let top = format!("hp-thr-{id}");
            let made = q
                .execute(
                    "object-add",
                    json!({"qom-type": "throttle-group", "id": group,
                           "limits": {"bps-write": bps}}),
                )
                .and_then(|_| {
                    q.execute(
                        "blockdev-add",
                        json!({"node-name": top, "driver": "throttle",
                               "throttle-group": group, "file": raw}),
                    )
                });
            plugged = Plugged {
                top,
                raw: Some(raw),
                group: Some(group),
            };
            if let Err(e) = made {
                cleanup(q, &plugged);
                return Err(e.into());
            }
        }
        let mut dev = match bus {
            HotBus::Scsi => json!({"driver": "scsi-hd", "bus": "scsi0.0"}),
            HotBus::Nvme => json!({"driver": "nvme", "bus": root_port(nvme_index)}),
        };
        if let Some(o) = dev.as_object_mut() {
            o.insert("id".into(), json!(id));
            o.insert("drive".into(), json!(plugged.top));
            o.insert("serial".into(), json!(disk.serial));
            if let Some(t) = disk.scsi_target {
                o.insert("scsi-id".into(), json!(t));
            }
            if let Some(m) = disk.max_io_bytes {
                o.insert("max_io_size".into(), json!(m));
            }
        }
        if let Err(e) = q.execute("device_add", dev) {
            cleanup(q, &plugged);
            return Err(e.into());
        }
        self.plugged.insert(id, plugged);
        Ok(())
    }

    /// Pulls `id`, a device this run plugged in.
    fn del(&mut self, id: &str) -> Result<(), HotplugError> {
        if !self.plugged.contains_key(id) {
            return Err(HotplugError::State(format!(
                "{id} is not plugged in by this run: only devices the test added are deleted"
            )));
        }
        let timeout = self.plan.unplug_timeout;
        let q = self.qmp()?;
        q.execute("device_del", json!({"id": id}))?;
        q.wait_event(
            "DEVICE_DELETED",
            |d| d.get("device").and_then(Value::as_str) == Some(id),
            timeout,
        )?;
        if let Some(p) = self.plugged.remove(id) {
            let q = self.qmp()?;
            cleanup(q, &p);
        }
        Ok(())
    }
}

/// Deletes what [`Driver::add`] made for a disk, top first (best effort:
/// QEMU exits at the end of the run anyway).
fn cleanup(q: &mut Qmp, p: &Plugged) {
    let _ = q.execute("blockdev-del", json!({"node-name": p.top}));
    if let Some(raw) = &p.raw {
        let _ = q.execute("blockdev-del", json!({"node-name": raw}));
    }
    if let Some(g) = &p.group {
        let _ = q.execute("object-del", json!({"id": g}));
    }
}

/// Why a guest's request was not carried out (the text of its
/// `plug-REQUEST.failed`).
#[derive(Debug, thiserror::Error)]
pub enum HotplugError {
    /// The request names no disk of the plan, or no verb.
    #[error("unknown request {0:?}: use add-ID or del-ID with an id of the VM's hot-plug plan")]
    Unknown(String),
    /// The disk is not in a state for the request.
    #[error("{0}")]
    State(String),
    /// QEMU's monitor refused or failed.
    #[error(transparent)]
    Qmp(#[from] QmpError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(dir: &Path, name: &str, len: u64) -> PathBuf {
        let p = dir.join(name);
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(len).unwrap();
        p
    }

    #[test]
    fn plans_qemu_cannot_carry_out_are_refused_before_boot() {
        let dir = std::env::temp_dir().join(format!("drivelab-hp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = image(&dir, "ok.img", 1 << 20);
        let odd = image(&dir, "odd.img", 1000);
        let cases: Vec<(Hotplug, &str)> = vec![
            (
                Hotplug::new().scsi("a b", HotDisk::new(&ok, "S1")),
                "hot-plug id",
            ),
            (
                Hotplug::new()
                    .scsi("a", HotDisk::new(&ok, "S1"))
                    .nvme("a", HotDisk::new(&ok, "S2")),
                "used twice",
            ),
            (
                Hotplug::new().scsi("a", HotDisk::new(&ok, "BOOT1")),
                "serial BOOT1 used twice",
            ),
            (
                Hotplug::new().scsi("a", HotDisk::new(&odd, "S1")),
                "multiple of 512",
            ),
            (
                Hotplug::new().scsi("a", HotDisk::new(&dir.join("none.img"), "S1")),
                "none.img",
            ),
            (
                Hotplug::new().nvme("a", HotDisk::new(&ok, "S1").max_io(4096)),
                "SCSI disks only",
            ),
            (
                Hotplug::new()
                    .scsi("a", HotDisk::new(&ok, "S1").scsi_target(3))
                    .scsi("b", HotDisk::new(&ok, "S2").scsi_target(3)),
                "target 3 used twice",
            ),
            (
                Hotplug::new().scsi("a", HotDisk::new(&ok, "S1").write_limit(0)),
                "never finish",
            ),
        ];
        for (plan, want) in cases {
            let mut serials = HashSet::from(["BOOT1".to_string()]);
            let err = plan.check(&mut serials).unwrap_err().to_string();
            assert!(err.contains(want), "want {want:?} in: {err}");
        }
        let mut serials = HashSet::new();
        let good = Hotplug::new()
            .scsi(
                "a",
                HotDisk::new(&ok, "S1").max_io(1 << 20).write_limit(1 << 20),
            )
            .nvme("n", HotDisk::new(&ok, "N1"))
            .nvme("m", HotDisk::new(&ok, "N2"));
        good.check(&mut serials).unwrap();
        let args = good.qemu_args(Path::new("/tmp/w/qmp.sock")).join(" ");
        assert!(
            args.contains("unix:/tmp/w/qmp.sock,server=on,wait=off"),
            "{args}"
        );
        assert!(args.contains("pcie-root-port,id=hprp0,chassis=1"), "{args}");
        assert!(args.contains("pcie-root-port,id=hprp1,chassis=2"), "{args}");
        assert!(
            !args.contains("hprp2"),
            "one root port per NVMe drive: {args}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
