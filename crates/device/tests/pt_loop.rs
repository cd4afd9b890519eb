//! Passthrough on a loop device: the kernel's loop driver answers no SCSI or
//! NVMe passthrough, so every command must come back as a clear, typed
//! "not supported" error, and the capability probe must report transport
//! `other` with the sysfs facts, without failing.
//!
//! Needs root (losetup). Each test attaches its own loop device to a file in
//! a fresh temp dir and detaches only that device when done.

use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_device::caps::{probe, Transport};
use drivelab_device::nvme::{NvmeDevice, NvmeError};
use drivelab_device::sg::{SgDevice, SgError};
use drivelab_device::{ata, scsi};

struct Loop {
    dev: PathBuf,
    dir: PathBuf,
}

impl Loop {
    fn new(tag: &str, bytes: u64) -> Loop {
        drivelab_testkit::require_root();
        let dir = std::env::temp_dir().join(format!("drivelab-pt-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("disk.img");
        let f = std::fs::File::create(&file).unwrap();
        f.set_len(bytes).unwrap();
        drop(f);
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&file)
            .output()
            .expect("losetup runs");
        assert!(
            out.status.success(),
            "losetup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        Loop { dev, dir }
    }
    fn path(&self) -> &Path {
        &self.dev
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const SIZE: u64 = 8 * 1024 * 1024;

#[test]
fn probe_of_loop_is_transport_other_with_sysfs_facts() {
    let l = Loop::new("probe", SIZE);
    let c = probe(l.path()).expect("probing a loop device is not an error");
    assert_eq!(c.transport, Transport::Other);
    let s = c.sysfs.as_ref().expect("sysfs facts for a block device");
    let name = l.path().file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(s.disk, name);
    assert_eq!(s.partition, None);
    // The file we attached is SIZE bytes; losetup's default sector is 512.
    assert_eq!(s.size_bytes, Some(SIZE));
    assert_eq!(c.logical_block_size, Some(512));
    assert_eq!(c.capacity_blocks, Some(SIZE / 512));
    // The flags follow the sysfs values they are defined by.
    assert_eq!(c.blk_zeroout_offload, s.write_zeroes_max_bytes.unwrap() > 0);
    assert_eq!(c.discard, s.discard_max_bytes.unwrap() > 0);
    // Nothing SCSI/ATA/NVMe is claimed.
    assert!(!c.scsi_write_same_16 && !c.scsi_write_same_10 && !c.scsi_unmap);
    assert!(!c.ata_sct_write_same && !c.ata_trim && !c.nvme_write_zeroes && !c.nvme_dsm);
    assert!(c.identity.model.is_none());
    assert!(
        c.notes.iter().any(|n| n.contains("is not a SCSI device")),
        "notes should say why: {:?}",
        c.notes
    );
}

#[test]
fn sg_io_on_loop_is_typed_not_a_scsi_device() {
    let l = Loop::new("sgio", SIZE);
    let dev = SgDevice::open(l.path()).unwrap();
    let e = scsi::inquiry(&dev).unwrap_err();
    match &e {
        SgError::NotScsi {
            errno, errno_name, ..
        } => {
            assert!(
                *errno == libc::ENOTTY || *errno == libc::EINVAL,
                "errno {errno}"
            );
            assert!(*errno_name == "ENOTTY" || *errno_name == "EINVAL");
        }
        other => panic!("expected NotScsi, got {other:?}"),
    }
    assert!(e.is_not_supported());
    let msg = e.to_string();
    assert!(
        msg.contains("is not a SCSI device") && msg.contains("SG_IO"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    // Every SCSI helper gives the same answer, including writes (which the
    // kernel rejects before anything reaches the file).
    let block = vec![0xA5u8; 512];
    let e = scsi::write_same(
        &dev,
        drivelab_device::units::Lba(0),
        drivelab_device::units::BlockCount(8),
        &block,
        true,
    )
    .unwrap_err();
    assert!(matches!(e, SgError::NotScsi { .. }), "{e:?}");
    // ATA PASS-THROUGH goes over SG_IO too.
    let e = ata::identify_device(&dev).unwrap_err();
    assert!(e.is_not_supported(), "{e:?}");
    // The image file is still all zeroes: nothing was written.
    let data = std::fs::read(l.dir.join("disk.img")).unwrap();
    assert!(data.iter().all(|&b| b == 0));
}

#[test]
fn nvme_open_on_loop_is_not_nvme() {
    let l = Loop::new("nvme", SIZE);
    let e = NvmeDevice::open(l.path()).unwrap_err();
    assert!(matches!(e, NvmeError::NotNvme { .. }), "{e:?}");
    assert!(e.to_string().contains("is not an NVMe device"));
}
