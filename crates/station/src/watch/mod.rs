//! Which drives are there: the drives present when the station starts
//! ([`present`]), then the kernel's block-device events ([`listen`], a
//! thread on the uevent netlink socket; no udev daemon), and whether a
//! drive being worked on is still the drive it was ([`Identity::still`]).
//!
//! A loop device is not unplugged like a drive: `losetup -d` on a loop
//! device that is held open only marks it to be cleared when the last
//! holder closes it (the kernel's autoclear), and sends no event. Its
//! identity therefore includes the backing file and that flag, so a loop
//! detached while the station erases it reads as pulled, as a drive whose
//! remove event arrived does.

pub mod names;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use drivelab_device::blockdev::{BlockDevice, Kind};
use drivelab_device::uevent::UeventSocket;

/// A block-device event for a whole disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Added or changed (a loop device attached or detached is a change).
    Changed(String),
    /// Removed.
    Removed(String),
}

/// Whether the station shows a device of `kind` at all: drives, and loop
/// devices when the policy includes them; never RAM disks, zram, dm or md.
pub fn is_shown(kind: Kind, include_loop: bool) -> bool {
    match kind {
        Kind::Loop => include_loop,
        Kind::Zram | Kind::Ram | Kind::Dm | Kind::Md => false,
        _ => true,
    }
}

/// The whole disks present now that the station shows (name order).
pub fn present(include_loop: bool) -> Vec<BlockDevice> {
    let mut v: Vec<BlockDevice> = BlockDevice::list_all()
        .unwrap_or_default()
        .into_iter()
        .filter(|d| !d.partition && d.size.0 > 0 && is_shown(d.kind, include_loop))
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// Listen for whole-disk events on the kernel's uevent socket until
/// `stop` is set, handing each to `f` on the listener's own thread.
/// Fails (before the thread starts) when the socket cannot be opened.
pub fn listen(
    stop: Arc<AtomicBool>,
    f: impl Fn(Seen) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let sock = UeventSocket::open(Duration::from_millis(250))?;
    Ok(std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let ev = match sock.recv() {
                Ok(Some(ev)) => ev,
                Ok(None) => continue,
                // A receive buffer overrun (ENOBUFS) loses events, not the
                // socket: carry on.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            };
            if ev.subsystem != "block" || ev.devtype.as_deref() != Some("disk") {
                continue;
            }
            let name = ev
                .devname
                .clone()
                .unwrap_or_else(|| ev.devpath.rsplit('/').next().unwrap_or("").to_string());
            if name.is_empty() {
                continue;
            }
            f(match ev.action.as_str() {
                "remove" => Seen::Removed(name),
                _ => Seen::Changed(name),
            });
        }
    }))
}

/// What makes a drive the same drive: its device numbers, size, serial,
/// and for a loop device its backing file and autoclear flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Major, minor.
    pub dev: (u32, u32),
    /// Bytes.
    pub size: u64,
    /// Serial, when it has one.
    pub serial: Option<String>,
    /// A loop device's backing file.
    pub backing: Option<PathBuf>,
    /// A loop device's autoclear flag (set by `losetup -d` while held).
    pub autoclear: bool,
}

impl Identity {
    /// The identity of `dev` as sysfs shows it now.
    pub fn of(dev: &BlockDevice) -> Identity {
        Identity {
            dev: (dev.major, dev.minor),
            size: dev.size.0,
            serial: dev.serial.clone(),
            backing: dev.loop_backing_file.clone(),
            autoclear: autoclear(&dev.name),
        }
    }

    /// Whether `other` is this drive, wherever it is now: the same
    /// serial, or for a loop device the same backing file. Without either
    /// (a drive that reports no serial) nothing says so.
    pub fn same_drive(&self, other: &Identity) -> bool {
        fn both<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
            a.is_some() && a == b
        }
        both(&self.serial, &other.serial) || both(&self.backing, &other.backing)
    }

    /// Whether the node `name` still holds this drive, from the few sysfs
    /// files that change when a drive goes or another takes its node: its
    /// device numbers and size, and a loop device's backing file and
    /// autoclear flag (set by `losetup -d` while held). Reads only those,
    /// never the drive; a drive swapped at the same node is told by its
    /// remove and add events, or by [`Identity::still_whole`].
    pub fn still(&self, name: &str) -> bool {
        let dir = Path::new("/sys/class/block").join(name);
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        let numbers = read("dev").and_then(|d| {
            let (maj, min) = d.trim().split_once(':')?;
            Some((maj.parse::<u32>().ok()?, min.parse::<u32>().ok()?))
        });
        let size = read("size").and_then(|s| s.trim().parse::<u64>().ok());
        if numbers != Some(self.dev) || size.map(|s| s * 512) != Some(self.size) {
            return false;
        }
        match &self.backing {
            None => true,
            Some(b) => {
                read("loop/backing_file")
                    .map(|f| PathBuf::from(f.trim()))
                    .as_ref()
                    == Some(b)
                    && (self.autoclear || !autoclear(name))
            }
        }
    }

    /// [`Identity::still`], and the drive described again whole (its
    /// serial among the rest): a drive swapped at its node whose events
    /// were lost (a receive buffer overrun).
    pub fn still_whole(&self, name: &str) -> bool {
        self.still(name)
            && BlockDevice::from_name(name).is_ok_and(|d| {
                let now = Identity::of(&d);
                now.serial == self.serial && now.size == self.size
            })
    }
}

fn autoclear(name: &str) -> bool {
    std::fs::read_to_string(
        Path::new("/sys/class/block")
            .join(name)
            .join("loop/autoclear"),
    )
    .map(|s| s.trim() == "1")
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(dev: (u32, u32), serial: Option<&str>, backing: Option<&str>) -> Identity {
        Identity {
            dev,
            size: 1 << 20,
            serial: serial.map(String::from),
            backing: backing.map(PathBuf::from),
            autoclear: false,
        }
    }

    #[test]
    fn a_drive_is_the_same_by_its_serial_or_its_backing_file_wherever_it_is() {
        let table = [
            (
                id((8, 0), Some("S1"), None),
                id((8, 16), Some("S1"), None),
                true,
            ),
            (
                id((8, 0), Some("S1"), None),
                id((8, 0), Some("S2"), None),
                false,
            ),
            // No serial either side: nothing says it is the same drive.
            (id((8, 0), None, None), id((8, 0), None, None), false),
            (
                id((7, 1), None, Some("/t/a.img")),
                id((7, 2), None, Some("/t/a.img")),
                true,
            ),
            (
                id((7, 1), None, Some("/t/a.img")),
                id((7, 1), None, Some("/t/b.img")),
                false,
            ),
        ];
        for (a, b, same) in table {
            assert_eq!(a.same_drive(&b), same, "{a:?} {b:?}");
            assert_eq!(b.same_drive(&a), same, "{b:?} {a:?}");
        }
    }
}
