//! An emulated SCSI drive for the test harness (issue 28 item 1): a
//! target_core_user backstore behind a tcm_loop LUN, so the guest kernel's
//! own SCSI disk and sg drivers, and drivelab's SG_IO commands through
//! them, reach this process exactly as they would reach a drive. QEMU's
//! disks lack the commands drivelab's most dangerous code sends; this one
//! implements them from the standards, over a backing file.
//!
//! - [`ring`]: the target_core_user command ring (mailbox, entries, data
//!   area), over shared memory mapped by `drivelab_device::block::uio`.
//! - [`cdb`]: CDBs decoded; [`sense`]: status and sense data.
//! - [`pages`]: INQUIRY, VPD, READ CAPACITY, mode pages; [`logpages`]:
//!   LOG SENSE; [`diagnostic`]: SEND DIAGNOSTIC's self-tests;
//!   [`scsi_sanitize`]: SCSI SANITIZE; [`format`]: MODE
//!   SELECT's block length and FORMAT UNIT; [`provisioning`]: WRITE
//!   SAME and UNMAP.
//! - [`disk`]: the drive: its medium, identity, counters and commands;
//!   [`media`]: the medium model beside the backing file (the map of
//!   unmapped blocks, and the FTL with `--media ftl`).
//! - [`sat`]: ATA PASS-THROUGH decoded and answered as a SATL does;
//!   [`ata`]: the SATA personality's ATA device (IDENTIFY, SMART, the
//!   Security feature set, the host protected area, TRIM, SCT Write
//!   Same, SMART self-tests, the error, statistics and SCT logs).
//! - [`configfs`]: the backstore and the loopback LUN that make it appear.
//! - [`server`]: the serving loop; [`state`]: the state file;
//!   [`faults`]: faults on command.
//!
//! The command table with each command's section is in docs/emulators.md.

pub mod ata;
pub mod cdb;
pub mod configfs;
pub mod diagnostic;
pub mod disk;
pub mod faults;
pub mod format;
pub mod logpages;
pub mod media;
pub mod pages;
pub mod provisioning;
pub mod ring;
pub mod rsoc;
pub mod sat;
pub mod scsi_sanitize;
pub mod sense;
pub mod server;
pub mod state;
