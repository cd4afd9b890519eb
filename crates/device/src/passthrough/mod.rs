//! One device command per call, with the device's own answer decoded: what
//! `drivelab device DEV <op>` runs.
//!
//! Each public function is one operation. It checks the request before
//! anything is opened (a range a device can take; for the writing ones the
//! user's consent and the same safety check every writer passes), sends the
//! command (or the few commands the operation needs), and returns a typed
//! answer. Every answer serialises to the fields of the JSON document the
//! command line prints and displays (`{}`) as its human text (see
//! [`text`](self::text)).
//!
//! A device that refuses or fails a command gives [`OpError::Failed`] with a
//! [`Failure`]: one line ("… not supported by this device (decoded
//! sense/status)") plus the decoded sense, ATA registers or NVMe status.
//! A request refused before anything was sent is an input error
//! ([`OpError::is_input`]).
//!
//! - [`inspect`]: questions that change nothing (probe, INQUIRY, READ
//!   CAPACITY, IDENTIFY, SCT status).
//! - [`readback`]: READ / NVMe Read of a range, with a SHA-256 of the data.
//! - [`write`]: the writing commands (WRITE SAME, UNMAP, SCT Write Same,
//!   SANITIZE, NVMe Write Zeroes, Dataset Management, Format NVM, Sanitize).
//! - [`reformat`]: a SCSI drive's logical block length changed (MODE
//!   SELECT's block descriptor, FORMAT UNIT, READ CAPACITY).

mod common;
mod failure;
pub mod inspect;
pub mod readback;
pub mod reformat;
mod text;
pub mod write;

pub use common::{BlockRange, OpError, WriteConsent, LONG_TIMEOUT_MS, SHORT_TIMEOUT_MS};
pub use failure::Failure;
pub use inspect::{identify, inquiry, probe, read_capacity, sct_status};
pub use readback::read;
pub use reformat::format_unit;
pub use write::{
    ata_sanitize, nvme_dsm, nvme_format, nvme_sanitize, nvme_write_zeroes, sct_write_same, unmap,
    write_same,
};
