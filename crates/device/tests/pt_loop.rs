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
use drivelab_device::claim::{Claim, ClaimOptions, Consent};
use drivelab_device::nvme::{NvmeCommand, NvmeData, NvmeDevice, NvmeError, Queue};
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
    // ATA PASS-THROUGH goes over SG_IO too.
    let e = ata::identify_device(&dev).unwrap_err();
    assert!(e.is_not_supported(), "{e:?}");
    // A write through a claimed handle reaches SG_IO, which the loop driver
    // rejects before anything reaches the file.
    let claim = Claim::open(
        l.path(),
        &Consent {
            force: false,
            confirm: None,
        },
        &ClaimOptions::default(),
    )
    .expect("a fresh loop device can be claimed");
    let claimed = SgDevice::claimed(&claim).unwrap();
    assert!(claimed.is_claimed() && claimed.may_change_medium());
    let e = write_same_8(&claimed).unwrap_err();
    assert!(matches!(e, SgError::NotScsi { .. }), "{e:?}");
    // The image file is still all zeroes: nothing was written.
    let data = std::fs::read(l.dir.join("disk.img")).unwrap();
    assert!(data.iter().all(|&b| b == 0));
}

fn write_same_8(dev: &SgDevice) -> Result<drivelab_device::sg::ScsiResult, SgError> {
    let block = vec![0xA5u8; 512];
    scsi::write_same(
        dev,
        drivelab_device::units::Lba(0),
        drivelab_device::units::BlockCount(8),
        &block,
        true,
    )
}

#[test]
fn an_unclaimed_sg_handle_refuses_commands_that_change_the_medium_before_sg_io() {
    let l = Loop::new("guard", SIZE);
    for dev in [
        SgDevice::open(l.path()).unwrap(),
        SgDevice::open_rw(l.path()).unwrap(),
    ] {
        assert!(!dev.is_claimed() && !dev.may_change_medium());
        // The loop driver answers every SG_IO with NotScsi: a different
        // error proves the command never reached the ioctl.
        let e = write_same_8(&dev).unwrap_err();
        match &e {
            SgError::Unclaimed { path, command } => {
                assert_eq!(path, l.path());
                assert_eq!(command, "WRITE SAME(16) (opcode 93h)");
            }
            other => panic!("expected Unclaimed, got {other:?}"),
        }
        assert_eq!(
            e.to_string(),
            format!(
                "{}: WRITE SAME(16) (opcode 93h) changes the medium and needs the device claimed for writing (drivelab's safety checks); this is a bug in the caller",
                l.path().display()
            )
        );
        assert!(!e.is_not_supported());
        let e = scsi::unmap(
            &dev,
            &[(
                drivelab_device::units::Lba(0),
                drivelab_device::units::BlockCount(8),
            )],
        )
        .unwrap_err();
        assert!(matches!(e, SgError::Unclaimed { .. }), "{e:?}");
        // ATA SCT Write Same (SMART WRITE LOG through ATA PASS-THROUGH).
        let ws = ata::SctWriteSame::new(
            ata::SctWriteSameFunction::PatternForeground,
            drivelab_device::units::Lba(0),
            drivelab_device::units::BlockCount(8),
        );
        match ata::sct_write_same(&dev, &ws).unwrap_err() {
            ata::AtaError::Scsi(SgError::Unclaimed { command, .. }) => assert_eq!(
                command,
                "ATA PASS-THROUGH(16) (opcode 85h) carrying ATA command B0h feature D6h"
            ),
            other => panic!("expected Unclaimed, got {other:?}"),
        }
        // A read on the same handle still reaches SG_IO (and gets the loop
        // driver's answer).
        let e = scsi::inquiry(&dev).unwrap_err();
        assert!(matches!(e, SgError::NotScsi { .. }), "{e:?}");
        let e = ata::sct_status(&dev).unwrap_err();
        assert!(e.is_not_supported(), "{e:?}");
    }
    // A block device is written through its claim, never as a forced
    // character device.
    let e = SgDevice::open_forced_char(l.path()).unwrap_err();
    assert!(matches!(e, SgError::NotCharDevice { .. }), "{e:?}");
    let data = std::fs::read(l.dir.join("disk.img")).unwrap();
    assert!(data.iter().all(|&b| b == 0));
}

/// /dev/null is a character device that answers every ioctl with ENOTTY:
/// a command that reaches the ioctl comes back NotNvme / NotScsi, one that
/// is refused before it comes back Unclaimed.
#[test]
fn an_unclaimed_nvme_handle_refuses_commands_that_change_the_medium() {
    let null = Path::new("/dev/null");
    let dev = NvmeDevice::open(null).unwrap();
    assert!(!dev.is_claimed() && !dev.may_change_medium());
    let format = NvmeCommand::format_nvm(1, 0, 1);
    let e = dev.execute(&format, NvmeData::None).unwrap_err();
    match &e {
        NvmeError::Unclaimed {
            queue: Queue::Admin,
            opcode: 0x80,
            ..
        } => {}
        other => panic!("expected Unclaimed, got {other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "/dev/null: NVMe Format NVM (admin opcode 80h) changes the medium and needs the device claimed for writing (drivelab's safety checks); this is a bug in the caller"
    );
    let wz = NvmeCommand::write_zeroes(1, drivelab_device::units::Lba(0), 8);
    let e = dev.execute(&wz, NvmeData::None).unwrap_err();
    assert!(
        e.to_string()
            .contains("NVMe Write Zeroes (I/O opcode 08h) changes the medium"),
        "{e}"
    );
    // Identify is not refused: it reaches the ioctl.
    let mut buf = vec![0u8; 4096];
    let e = dev
        .execute(&NvmeCommand::identify(1, 0), NvmeData::In(&mut buf))
        .unwrap_err();
    assert!(matches!(e, NvmeError::NotNvme { .. }), "{e:?}");
    // A forced character device may send it (and /dev/null refuses it).
    let forced = NvmeDevice::open_forced_char(null).unwrap();
    assert!(!forced.is_claimed() && forced.may_change_medium());
    let e = forced.execute(&format, NvmeData::None).unwrap_err();
    assert!(matches!(e, NvmeError::NotNvme { .. }), "{e:?}");
    let sg = SgDevice::open_forced_char(null).unwrap();
    assert!(sg.may_change_medium());
    let e = write_same_8(&sg).unwrap_err();
    assert!(matches!(e, SgError::NotScsi { .. }), "{e:?}");
    // A regular file is neither.
    let f = std::env::temp_dir().join(format!("drivelab-pt-notchar-{}", std::process::id()));
    std::fs::write(&f, b"x").unwrap();
    let e = NvmeDevice::open_forced_char(&f).unwrap_err();
    let _ = std::fs::remove_file(&f);
    assert!(matches!(e, NvmeError::NotCharDevice { .. }), "{e:?}");
}

#[test]
fn nvme_open_on_loop_is_not_nvme() {
    let l = Loop::new("nvme", SIZE);
    let e = NvmeDevice::open(l.path()).unwrap_err();
    assert!(matches!(e, NvmeError::NotNvme { .. }), "{e:?}");
    assert!(e.to_string().contains("is not an NVMe device"));
}
