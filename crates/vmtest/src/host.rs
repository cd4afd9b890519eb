//! What the host must provide: QEMU, its qboot firmware, static busybox and
//! the kernel cached by `tests/vm/setup.sh`. Each is looked up once, and a
//! missing one is an error naming the setup command, never a silent skip.

use std::path::{Path, PathBuf};

use crate::error::VmError;

/// Default cache dir written by setup.sh (override: `DRIVELAB_VM_CACHE`).
pub const DEFAULT_CACHE: &str = "/var/cache/drivelab-vm";

/// Everything on the host a VM run needs, checked to exist.
#[derive(Debug, Clone)]
pub struct Host {
    /// The QEMU system emulator (`DRIVELAB_VM_QEMU`, default
    /// `qemu-system-x86_64` on PATH).
    pub qemu: PathBuf,
    /// qboot firmware, for the fast direct-ELF boot (`None` when absent or
    /// when `DRIVELAB_VM_FIRMWARE=seabios`).
    pub qboot: Option<PathBuf>,
    /// Static busybox copied into the initramfs.
    pub busybox: PathBuf,
    /// Kernel release, e.g. `6.1.0-56-amd64`.
    pub kernel_release: String,
    /// The uncompressed kernel ELF (booted with qboot).
    pub vmlinux: PathBuf,
    /// The compressed bzImage (booted with SeaBIOS when qboot is absent).
    pub bzimage: PathBuf,
    /// `lib/modules/<release>` of the unpacked kernel package.
    pub modules_dir: PathBuf,
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn must_exist(what: &'static str, path: PathBuf) -> Result<PathBuf, VmError> {
    if path.exists() {
        Ok(path)
    } else {
        Err(VmError::Missing { what, path })
    }
}

impl Host {
    /// Finds and checks everything, reading `$DRIVELAB_VM_CACHE/kernel.env`.
    pub fn discover() -> Result<Self, VmError> {
        let qemu = match std::env::var_os("DRIVELAB_VM_QEMU") {
            Some(p) => must_exist("qemu (DRIVELAB_VM_QEMU)", PathBuf::from(p))?,
            None => find_on_path("qemu-system-x86_64").ok_or(VmError::Missing {
                what: "qemu-system-x86_64",
                path: PathBuf::from("$PATH"),
            })?,
        };
        // DRIVELAB_VM_FIRMWARE=seabios forces the slower bzImage boot.
        let seabios = std::env::var("DRIVELAB_VM_FIRMWARE").is_ok_and(|f| f == "seabios");
        let qboot =
            Some(PathBuf::from("/usr/share/qemu/qboot.rom")).filter(|p| p.is_file() && !seabios);
        let busybox = must_exist(
            "static busybox (busybox-static)",
            PathBuf::from("/bin/busybox"),
        )?;
        let cache = std::env::var_os("DRIVELAB_VM_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CACHE));
        let env_file = cache.join("kernel.env");
        let text = std::fs::read_to_string(&env_file).map_err(|_| VmError::Missing {
            what: "kernel cache (kernel.env)",
            path: env_file.clone(),
        })?;
        let get = |key: &str| -> Result<String, VmError> {
            text.lines()
                .filter_map(|l| l.split_once('='))
                .find(|(k, _)| k.trim() == key)
                .map(|(_, v)| v.trim().to_string())
                .ok_or_else(|| VmError::KernelCache {
                    path: env_file.clone(),
                    detail: format!("no {key}"),
                })
        };
        let kernel_release = get("DRIVELAB_VM_KVER")?;
        let vmlinux = must_exist(
            "uncompressed kernel (vmlinux)",
            PathBuf::from(get("DRIVELAB_VM_VMLINUX")?),
        )?;
        let bzimage = must_exist("kernel bzImage", PathBuf::from(get("DRIVELAB_VM_BZIMAGE")?))?;
        let modules_dir = PathBuf::from(get("DRIVELAB_VM_MODULES")?);
        must_exist("modules.dep", modules_dir.join("modules.dep"))?;
        Ok(Self {
            qemu,
            qboot,
            busybox,
            kernel_release,
            vmlinux,
            bzimage,
            modules_dir,
        })
    }

    /// Reads a file of the host, mapping the error.
    pub fn read(path: &Path) -> Result<Vec<u8>, VmError> {
        std::fs::read(path).map_err(|source| VmError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        })
    }
}
