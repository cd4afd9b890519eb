//! On a node, the drives a [`Selection`] names: every whole disk present
//! (as the station lists them: no RAM disks, zram, dm or md; loop devices
//! only when the selection includes them) whose serial or WWN is listed,
//! or one of whose by-path names (udev's links, or the name built from
//! sysfs as udev would; a loop device's backing file) matches a pattern.
//! Read-only: nothing is opened for writing here; the command run on the
//! drives claims them.

use std::path::PathBuf;

use drivelab_device::blockdev::BlockDevice;
use drivelab_station::policy::glob;
use drivelab_station::watch;

use crate::spec::Selection;

/// A drive the selection names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// Its device node (`/dev/sdb` on this node).
    pub path: PathBuf,
    /// Its serial, when it has one.
    pub serial: Option<String>,
    /// What named it: `serial S`, `wwn W`, `by-path P`.
    pub by: String,
}

impl Selected {
    /// What an erase's `--confirm-serial` takes for it: its serial, or its
    /// path when it has none.
    pub fn confirmation(&self) -> String {
        self.serial
            .clone()
            .unwrap_or_else(|| self.path.display().to_string())
    }
}

/// The drives present now that `sel` names, in kernel-name order.
pub fn select(sel: &Selection) -> Vec<Selected> {
    watch::present(sel.include_loop)
        .into_iter()
        .filter_map(|d| {
            let names = watch::names::names_of(&d, sel.include_loop);
            matches(sel, &d, &names).map(|by| Selected {
                path: d.path.clone(),
                serial: d.serial.clone(),
                by,
            })
        })
        .collect()
}

/// Why `sel` names `d` (whose by-path names are `names`), if it does.
fn matches(sel: &Selection, d: &BlockDevice, names: &[String]) -> Option<String> {
    if let Some(s) = d
        .serial
        .as_deref()
        .filter(|s| sel.serials.iter().any(|x| x == s))
    {
        return Some(format!("serial {s}"));
    }
    if let Some(w) = d.wwid.as_deref() {
        let bare = |x: &str| {
            x.split_once('.')
                .map(|(_, rest)| rest.to_string())
                .unwrap_or_else(|| x.to_string())
                .to_ascii_lowercase()
        };
        if sel.wwns.iter().any(|x| bare(x) == bare(w)) {
            return Some(format!("wwn {w}"));
        }
    }
    for p in &sel.by_path {
        let pat = p.strip_prefix("/dev/disk/by-path/").unwrap_or(p);
        if let Some(n) = names.iter().find(|n| glob::matches(pat, n)) {
            return Some(format!("by-path {n}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(serial: Option<&str>, wwid: Option<&str>) -> BlockDevice {
        let mut d = watch::present(false).into_iter().next().unwrap_or_else(|| {
            BlockDevice::list_all()
                .unwrap_or_default()
                .into_iter()
                .next()
                .expect("a block device on the test machine")
        });
        d.serial = serial.map(String::from);
        d.wwid = wwid.map(String::from);
        d
    }

    /// Serial and WWN exactly (a WWN with or without its `naa.` prefix,
    /// any case), by-path by pattern; anything else names nothing.
    #[test]
    fn a_drive_is_named_by_serial_wwn_or_by_path() {
        let d = disk(Some("ZL2K4ABC"), Some("naa.5000C500A1B2C3D4"));
        let names = vec!["pci-0000:03:00.0-sas-phy4-lun-0".to_string()];
        let sel = |serials: &[&str], wwns: &[&str], by_path: &[&str]| Selection {
            serials: serials.iter().map(|s| s.to_string()).collect(),
            wwns: wwns.iter().map(|s| s.to_string()).collect(),
            by_path: by_path.iter().map(|s| s.to_string()).collect(),
            include_loop: false,
        };
        let cases: [(Selection, Option<&str>); 7] = [
            (sel(&["ZL2K4ABC"], &[], &[]), Some("serial ZL2K4ABC")),
            (sel(&["ZL2K4AB"], &[], &[]), None),
            (
                sel(&[], &["5000c500a1b2c3d4"], &[]),
                Some("wwn naa.5000C500A1B2C3D4"),
            ),
            (sel(&[], &["naa.5000c500a1b2c3d5"], &[]), None),
            (
                sel(&[], &[], &["pci-0000:03:00.0-sas-*"]),
                Some("by-path pci-0000:03:00.0-sas-phy4-lun-0"),
            ),
            (
                sel(&[], &[], &["/dev/disk/by-path/pci-*-phy4-*"]),
                Some("by-path pci-0000:03:00.0-sas-phy4-lun-0"),
            ),
            (sel(&[], &[], &["pci-0000:04:*"]), None),
        ];
        for (s, want) in cases {
            assert_eq!(matches(&s, &d, &names).as_deref(), want, "{s:?}");
        }
    }
}
