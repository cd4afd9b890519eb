//! drivelab's QEMU test harness: boots a real Linux kernel with emulated
//! disks (virtio-scsi, NVMe, AHCI SATA, scsi_debug, blkdebug) and runs a
//! guest shell script, usually driving a static drivelab binary, inside it.
//!
//! Why: drivelab's device layer speaks SG_IO, ATA pass-through and NVMe
//! passthrough to real controllers; loop devices cannot answer those
//! commands. QEMU's emulated controllers and the kernel's scsi_debug can,
//! with serials, sizes and injected errors the test chooses. Results come
//! back through a 9p share as files (JSON written by the guest script),
//! which integration tests parse and assert on. Disks can also come and go
//! while the guest runs: the guest asks, the host plugs or pulls them
//! through QEMU's monitor ([`hotplug`], [`qmp`]).
//!
//! Setup (once per machine, as root): `bash tests/vm/setup.sh`.

pub mod checks;
pub mod cpio;
pub mod disk;
pub mod drivelab_bin;
pub mod emu;
pub mod error;
pub mod host;
pub mod hotplug;
pub mod modules;
pub mod qmp;
pub mod results;
pub mod scale;
pub mod tools;
pub mod vm;

pub use checks::Checks;
pub use error::VmError;
pub use hotplug::{HotDisk, Hotplug, HotplugOutcome};
pub use vm::{tail_lines, BlkdebugDisk, Disk, GuestRun, Vm, VmBuilder, MIB};
