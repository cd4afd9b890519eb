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

    /// Whether the drive named `name` is still this one (sysfs reads only:
    /// never blocks on the drive).
    pub fn still(&self, name: &str) -> bool {
        match BlockDevice::from_name(name) {
            Ok(d) => {
                let now = Identity::of(&d);
                now.dev == self.dev
                    && now.size == self.size
                    && now.serial == self.serial
                    && now.backing == self.backing
                    && (now.autoclear == self.autoclear || !now.autoclear)
            }
            Err(_) => false,
        }
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
