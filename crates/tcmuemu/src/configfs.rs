//! Making the drive appear: a target_core_user backstore
//! (`/sys/kernel/config/target/core/user_H/NAME`) and a tcm_loop LUN over
//! it, so the guest's SCSI midlayer finds a disk (`/dev/sdX`, `/dev/sgN`)
//! whose every command comes to this process through `/dev/uioN`.

use std::path::{Path, PathBuf};

/// Where the target's configfs tree is.
pub const TARGET: &str = "/sys/kernel/config/target";

/// What went wrong setting the target up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A configfs or sysfs file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// No UIO device carries the backstore's name.
    #[error("no /sys/class/uio device named {0} (is target_core_user loaded?)")]
    NoUio(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SetupError + '_ {
    move |source| SetupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn put(path: &Path, text: &str) -> Result<(), SetupError> {
    std::fs::write(path, text).map_err(io(path))
}

fn mkdir(path: &Path) -> Result<(), SetupError> {
    std::fs::create_dir_all(path).map_err(io(path))
}

/// One emulated drive's names in the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The user backstore HBA index (`user_H`).
    pub hba: u32,
    /// The backstore's name.
    pub name: String,
    /// The loopback target's WWN (`naa.` and 16 hex digits).
    pub wwn: String,
    /// The initiator's WWN for the I_T nexus.
    pub initiator: String,
}

impl Names {
    /// Names for backstore `name` on HBA `hba`, the WWNs derived from both
    /// so several drives never collide.
    pub fn new(hba: u32, name: &str) -> Names {
        let mut h: u32 = 0x811c_9dc5;
        for b in name.bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        Names {
            hba,
            name: name.to_string(),
            wwn: format!("naa.5001405{:01x}{h:08x}", hba & 0xF),
            initiator: format!("naa.5001406{:01x}{h:08x}", hba & 0xF),
        }
    }

    /// The backstore's directory.
    pub fn backstore(&self) -> PathBuf {
        Path::new(TARGET).join(format!("core/user_{}/{}", self.hba, self.name))
    }

    /// The loopback target portal group's directory.
    pub fn tpg(&self) -> PathBuf {
        Path::new(TARGET).join(format!("loopback/{}/tpgt_1", self.wwn))
    }

    /// The UIO device name the kernel gives the backstore
    /// (`tcm-user/HBA/NAME/CONFIG`).
    pub fn uio_name(&self) -> String {
        format!("tcm-user/{}/{}/{}", self.hba, self.name, self.dev_config())
    }

    fn dev_config(&self) -> String {
        format!("drivelab/{}", self.name)
    }
}

/// Mount configfs at /sys/kernel/config unless the target tree is there.
pub fn ensure_configfs() -> Result<(), SetupError> {
    if Path::new(TARGET).exists() {
        return Ok(());
    }
    let st = std::process::Command::new("mount")
        .args(["-t", "configfs", "configfs", "/sys/kernel/config"])
        .status()
        .map_err(io(Path::new("/sys/kernel/config")))?;
    if !st.success() || !Path::new(TARGET).exists() {
        return Err(SetupError::Io {
            path: PathBuf::from(TARGET),
            source: std::io::Error::other("configfs has no target tree (target_core_mod loaded?)"),
        });
    }
    Ok(())
}

/// Create and enable the user backstore: `bytes` long, `block_size`-byte
/// blocks, at most `max_sectors` blocks a command. Returns the UIO device
/// number.
pub fn create_backstore(
    n: &Names,
    bytes: u64,
    block_size: u32,
    max_sectors: u32,
) -> Result<u32, SetupError> {
    let dir = n.backstore();
    mkdir(&dir)?;
    let control = dir.join("control");
    put(&control, &format!("dev_size={bytes}"))?;
    put(&control, &format!("dev_config={}", n.dev_config()))?;
    put(&control, &format!("hw_block_size={block_size}"))?;
    put(&control, &format!("hw_max_sectors={max_sectors}"))?;
    put(&dir.join("enable"), "1")?;
    find_uio(&n.uio_name())
}

/// How long the kernel waits for a command the backstore took before it
/// fails it (the backstore's `attrib/cmd_time_out`, seconds; the kernel's
/// default is 30).
pub fn set_command_timeout(n: &Names, seconds: u32) -> Result<(), SetupError> {
    put(
        &n.backstore().join("attrib/cmd_time_out"),
        &seconds.to_string(),
    )
}

/// The number of the UIO device whose name is `want`.
pub fn find_uio(want: &str) -> Result<u32, SetupError> {
    let class = Path::new("/sys/class/uio");
    let rd = std::fs::read_dir(class).map_err(io(class))?;
    for e in rd.flatten() {
        let file = e.file_name();
        let Some(num) = file.to_str().and_then(|s| s.strip_prefix("uio")) else {
            continue;
        };
        let Ok(num) = num.parse::<u32>() else {
            continue;
        };
        let name = std::fs::read_to_string(e.path().join("name")).unwrap_or_default();
        if name.trim() == want {
            return Ok(num);
        }
    }
    Err(SetupError::NoUio(want.to_string()))
}

/// The tcm_loop target, its I_T nexus and LUN 0 linked to the backstore:
/// the guest's SCSI layer scans the new LUN at once (so the backstore
/// must already be served).
pub fn create_loopback_lun(n: &Names) -> Result<(), SetupError> {
    let tpg = n.tpg();
    mkdir(&tpg)?;
    put(&tpg.join("nexus"), &n.initiator)?;
    let lun = tpg.join("lun/lun_0");
    mkdir(&lun)?;
    let link = lun.join(&n.name);
    std::os::unix::fs::symlink(n.backstore(), &link).map_err(io(&link))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_derived_and_distinct() {
        let a = Names::new(1, "sata0");
        let b = Names::new(1, "sas0");
        assert_ne!(a.wwn, b.wwn);
        assert_ne!(a.wwn, a.initiator);
        for w in [&a.wwn, &a.initiator] {
            let hex = w.strip_prefix("naa.").expect("naa");
            assert_eq!(hex.len(), 16);
            assert!(hex.chars().all(|c| c.is_ascii_hexdigit()));
        }
        assert_eq!(a.uio_name(), "tcm-user/1/sata0/drivelab/sata0");
        assert_eq!(
            a.backstore(),
            PathBuf::from("/sys/kernel/config/target/core/user_1/sata0")
        );
        assert_eq!(
            a.tpg(),
            PathBuf::from(format!(
                "/sys/kernel/config/target/loopback/{}/tpgt_1",
                a.wwn
            ))
        );
    }
}
