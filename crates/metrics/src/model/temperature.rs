//! A drive's temperature from the kernel's hwmon, as `sensors` shows it:
//! `drivetemp` for SATA and SCSI disks (`/sys/block/sda/device/hwmon/
//! hwmonN/temp1_input`), the nvme driver for NVMe controllers
//! (`/sys/block/nvme0n1/device/hwmonN/temp1_input`), in millidegrees
//! Celsius. Read only; a device without a sensor (a loop device, a disk
//! without drivetemp loaded) has none.

use std::path::{Path, PathBuf};

/// The temperature of block device `name` (kernel name), °C.
pub fn celsius(name: &str) -> Option<f64> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    celsius_under(&Path::new("/sys/block").join(name).join("device"))
}

/// The first hwmon sensor's `temp1_input` under a device directory.
pub fn celsius_under(device: &Path) -> Option<f64> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for base in [device.join("hwmon"), device.to_path_buf()] {
        let Ok(rd) = std::fs::read_dir(&base) else {
            continue;
        };
        let mut found: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.starts_with("hwmon") && n.len() > 5
            })
            .map(|e| e.path())
            .collect();
        found.sort();
        dirs.extend(found);
    }
    dirs.iter().find_map(|d| {
        let t = std::fs::read_to_string(d.join("temp1_input")).ok()?;
        let milli: f64 = t.trim().parse().ok()?;
        Some(milli / 1000.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drivetemp_and_nvme_layouts_are_read_and_a_loop_device_has_none() {
        let root = std::env::temp_dir().join(format!("drivelab-hwmon-{}", std::process::id()));
        let sata = root.join("sda/device");
        std::fs::create_dir_all(sata.join("hwmon/hwmon3")).unwrap();
        std::fs::write(sata.join("hwmon/hwmon3/temp1_input"), "41000\n").unwrap();
        let nvme = root.join("nvme0n1/device");
        std::fs::create_dir_all(nvme.join("hwmon1")).unwrap();
        std::fs::write(nvme.join("hwmon1/temp1_input"), "38850\n").unwrap();
        assert_eq!(celsius_under(&sata), Some(41.0));
        assert_eq!(celsius_under(&nvme), Some(38.85));
        assert_eq!(celsius_under(&root.join("loop0/device")), None);
        assert_eq!(celsius("loop0"), None);
        assert_eq!(celsius("../etc"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
