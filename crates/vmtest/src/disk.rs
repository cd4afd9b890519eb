//! A disk the test VM gets at boot or by hot-plug: its size, serial and
//! the limits QEMU puts on it, checked before QEMU starts.

use std::path::Path;

use crate::error::VmError;

/// An emulated disk: size in bytes (a multiple of 512) and the serial QEMU
/// reports for it (1–20 characters of `A-Z a-z 0-9 _ -`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Serial number as QEMU gives it to the guest.
    pub serial: String,
    /// The rate at which the disk's medium takes writes, bytes per second
    /// (QEMU's `throttling.bps-write` on its drive), or unlimited.
    pub write_bytes_per_s: Option<u64>,
    /// The largest transfer and WRITE SAME the disk accepts, bytes
    /// (scsi-hd's `max_io_size`, reported in its Block Limits VPD page);
    /// virtio-scsi disks only. None: QEMU's default.
    pub max_io_bytes: Option<u64>,
    /// Requests per second the disk serves, reads and writes together
    /// (QEMU's `throttling.iops-total`), or unlimited.
    pub iops_total: Option<u64>,
    /// NVMe disks only: a zoned namespace (ZNS) with zones of this many
    /// bytes (QEMU's `nvme-ns` `zoned=true`, `zoned.zone_size`), or not zoned.
    pub zone_bytes: Option<u64>,
}

impl Disk {
    /// A disk of `size_bytes` bytes with serial `serial`.
    pub fn new(size_bytes: u64, serial: &str) -> Self {
        Self {
            size_bytes,
            serial: serial.to_string(),
            write_bytes_per_s: None,
            max_io_bytes: None,
            iops_total: None,
            zone_bytes: None,
        }
    }

    /// Makes an NVMe disk's namespace zoned (ZNS), every zone `bytes` long
    /// and sequential-write-required (a power of two, as Linux needs).
    pub fn zoned(mut self, bytes: u64) -> Self {
        self.zone_bytes = Some(bytes);
        self
    }

    /// Makes a virtio-scsi disk report `bytes` as its maximum transfer
    /// length and maximum WRITE SAME length.
    pub fn max_io(mut self, bytes: u64) -> Self {
        self.max_io_bytes = Some(bytes);
        self
    }

    /// Makes the disk's medium take writes at `bytes_per_s`, like a drive
    /// with that sustained write rate: QEMU's block layer throttles every
    /// write that reaches the image, including the zero-writes that WRITE
    /// SAME and NVMe Write Zeroes turn into, and waits on a timer, so a
    /// command's time is spent in the "drive", not on the host's CPUs.
    pub fn write_limit(mut self, bytes_per_s: u64) -> Self {
        self.write_bytes_per_s = Some(bytes_per_s);
        self
    }

    /// Makes the disk serve `per_s` requests a second, reads and writes
    /// together, whatever their size (a seek-bound drive: the seed's
    /// did about 80), waiting on a timer as [`Disk::write_limit`] does.
    pub fn iops_limit(mut self, per_s: u64) -> Self {
        self.iops_total = Some(per_s);
        self
    }

    /// QEMU's `-drive` option value for this disk over `image`.
    pub(crate) fn drive_opts(&self, id: &str, image: &Path) -> String {
        let mut o = format!(
            "if=none,id={id},file={},format=raw,cache=unsafe",
            image.display()
        );
        if let Some(bps) = self.write_bytes_per_s {
            o.push_str(&format!(",throttling.bps-write={bps}"));
        }
        if let Some(n) = self.iops_total {
            o.push_str(&format!(",throttling.iops-total={n}"));
        }
        o
    }

    pub(crate) fn check(&self) -> Result<(), VmError> {
        let ok_chars = self
            .serial
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if self.serial.is_empty() || self.serial.len() > 20 || !ok_chars {
            return Err(VmError::Config(format!(
                "serial {:?}: use 1-20 characters of A-Z a-z 0-9 _ -",
                self.serial
            )));
        }
        if self.iops_total == Some(0) {
            return Err(VmError::Config(format!(
                "disk {}: an I/O limit of 0 per second would never finish",
                self.serial
            )));
        }
        if self.write_bytes_per_s == Some(0) {
            return Err(VmError::Config(format!(
                "disk {}: a write limit of 0 B/s would never finish",
                self.serial
            )));
        }
        if self.size_bytes == 0 || self.size_bytes % 512 != 0 {
            return Err(VmError::Config(format!(
                "disk {}: size {} B is not a positive multiple of 512",
                self.serial, self.size_bytes
            )));
        }
        Ok(())
    }
}
