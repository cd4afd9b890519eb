//! The names a bay pattern is matched against: a drive's
//! `/dev/disk/by-path` names. Those links are udev's; a station without
//! udev (a netboot image) has none, so the name is also built here from the
//! device's sysfs path the way udev's `path_id` builds it for the common
//! transports: the nearest PCI function, then `ata-N` (libata port),
//! `scsi-H:C:T:L`, `nvme-NSID`, `usb-…`; `virtio-pci-ADDR` for virtio-blk.
//! udev's own links (when `/dev/disk/by-path` exists) come first. A SCSI
//! disk of the kernel's pseudo bus (scsi_debug's adapters, to which udev
//! gives no by-path name) is `scsi-H:C:T:L`. With `include_loop`, a loop
//! device's node and backing file are names too.

use std::fs;
use std::path::Path;

use drivelab_device::blockdev::{BlockDevice, Kind};

/// Every name of `dev` a bay may match, most specific first.
pub fn names_of(dev: &BlockDevice, include_loop: bool) -> Vec<String> {
    let mut out = udev_links(&dev.name);
    if let Some(n) = built(&dev.name) {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    if include_loop && dev.kind == Kind::Loop {
        out.push(dev.path.display().to_string());
        if let Some(b) = &dev.loop_backing_file {
            out.push(b.display().to_string());
        }
    }
    out
}

/// The `/dev/disk/by-path` links that point at `name` (their file names).
fn udev_links(name: &str) -> Vec<String> {
    let Ok(rd) = fs::read_dir("/dev/disk/by-path") else {
        return Vec::new();
    };
    let mut out: Vec<String> = rd
        .flatten()
        .filter(|e| {
            fs::read_link(e.path())
                .ok()
                .and_then(|t| t.file_name().map(|f| f == name))
                .unwrap_or(false)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// The by-path name built from the sysfs path, as udev's `path_id` would.
pub fn built(name: &str) -> Option<String> {
    let real = fs::canonicalize(Path::new("/sys/class/block").join(name)).ok()?;
    let parts: Vec<String> = real
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    from_sysfs_parts(&parts, name)
}

/// [`built`] on the components of a canonical sysfs path.
pub fn from_sysfs_parts(parts: &[String], name: &str) -> Option<String> {
    let Some(pci) = parts.iter().rposition(|p| is_pci_address(p)) else {
        return pseudo_scsi(parts);
    };
    let addr = &parts[pci];
    let rest = &parts[pci + 1..];
    if rest.iter().any(|p| p.starts_with("virtio")) && !rest.iter().any(|p| is_hctl(p)) {
        return Some(format!("virtio-pci-{addr}"));
    }
    let mut s = format!("pci-{addr}");
    if let Some(usb) = rest
        .iter()
        .rev()
        .find(|p| p.contains(':') && p.contains('-') && !is_hctl(p))
    {
        // "1-1.2:1.0": the port path and interface, as udev's "usb-0:1.2:1.0".
        if let Some((_, port)) = usb.split_once('-') {
            s.push_str(&format!("-usb-0:{port}"));
        }
    }
    if let Some(ata) = rest.iter().find(|p| {
        p.strip_prefix("ata")
            .is_some_and(|n| n.parse::<u32>().is_ok())
    }) {
        s.push_str(&format!("-{ata}").replace("-ata", "-ata-"));
    } else if let Some(hctl) = rest.iter().rev().find(|p| is_hctl(p)) {
        s.push_str(&format!("-scsi-{hctl}"));
    } else if name.starts_with("nvme") {
        let nsid = fs::read_to_string(Path::new("/sys/class/block").join(name).join("nsid"))
            .ok()
            .map(|t| t.trim().to_string())
            .or_else(|| name.rsplit_once('n').map(|(_, n)| n.to_string()))?;
        s.push_str(&format!("-nvme-{nsid}"));
    }
    Some(s)
}

/// `scsi-H:C:T:L` for a disk under the pseudo bus (`/sys/devices/pseudo_0/
/// adapter0/host2/target2:0:0/2:0:0:0/block/sda`), which has no PCI
/// function to name it by.
fn pseudo_scsi(parts: &[String]) -> Option<String> {
    let bus = parts.iter().position(|p| p.starts_with("pseudo_"))?;
    let hctl = parts[bus..].iter().rev().find(|p| is_hctl(p))?;
    Some(format!("scsi-{hctl}"))
}

/// `0000:00:1f.2`.
fn is_pci_address(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && s.chars()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

/// `2:0:0:0`.
fn is_hctl(s: &str) -> bool {
    let f: Vec<&str> = s.split(':').collect();
    f.len() == 4 && f.iter().all(|x| !x.is_empty() && x.parse::<u64>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(p: &str) -> Vec<String> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    #[test]
    fn by_path_names_are_built_as_udev_builds_them() {
        let table = [
            ("/sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda", "vda", Some("virtio-pci-0000:00:02.0")),
            (
                "/sys/devices/pci0000:00/0000:00:1f.2/ata3/host2/target2:0:0/2:0:0:0/block/sdb",
                "sdb",
                Some("pci-0000:00:1f.2-ata-3"),
            ),
            (
                "/sys/devices/pci0000:00/0000:00:03.0/virtio0/host0/target0:0:1/0:0:1:0/block/sdc",
                "sdc",
                Some("pci-0000:00:03.0-scsi-0:0:1:0"),
            ),
            (
                "/sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdd",
                "sdd",
                Some("pci-0000:00:14.0-usb-0:1:1.0-scsi-6:0:0:0"),
            ),
            (
                "/sys/devices/pseudo_0/adapter3/host5/target5:0:0/5:0:0:0/block/sdd",
                "sdd",
                Some("scsi-5:0:0:0"),
            ),
            ("/sys/devices/platform/host9/target9:0:0/9:0:0:0/block/sde", "sde", None),
            ("/sys/devices/virtual/block/loop3", "loop3", None),
        ];
        for (path, name, want) in table {
            assert_eq!(
                from_sysfs_parts(&parts(path), name).as_deref(),
                want,
                "{path}"
            );
        }
    }
}
