//! SG_IO: sending one SCSI command to a block device (or /dev/sgN) and
//! getting back the SCSI status, transport status, residual and sense.
//!
//! This is the only place drivelab calls the SG_IO ioctl. With SG_IO there is
//! no page cache and no block-layer split: the caller owns the CDB, the
//! transfer length and the timeout, and gets the device's own answer. The
//! `sg_io_hdr` layout follows `include/scsi/sg.h` (interface 'S', version 3).
//!
//! A device that is not SCSI (loop, zram, an NVMe namespace) refuses SG_IO
//! with ENOTTY or EINVAL; that becomes [`SgError::NotScsi`], which callers
//! (the capability probe) treat as "this transport does not apply".

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::scsi::cdb::{command_name, command_with_opcode, modifies_medium};
use crate::scsi::sense::Sense;

/// The SG_IO ioctl request number (`include/scsi/sg.h`).
pub const SG_IO: libc::c_ulong = 0x2285;
/// SG_GET_VERSION_NUM: answered by every SCSI block device and sg node.
pub const SG_GET_VERSION_NUM: libc::c_ulong = 0x2282;

const SG_DXFER_NONE: libc::c_int = -1;
const SG_DXFER_TO_DEV: libc::c_int = -2;
const SG_DXFER_FROM_DEV: libc::c_int = -3;

/// Default command timeout: 60 s.
pub const DEFAULT_TIMEOUT_MS: u32 = 60_000;

/// Largest sense buffer we ask for (SPC allows 252 bytes).
const SENSE_LEN: usize = 96;

/// `struct sg_io_hdr` from `include/scsi/sg.h`. Field order and C types are
/// the kernel's; `repr(C)` gives the same padding (88 bytes on 64-bit).
#[repr(C)]
#[derive(Debug)]
struct SgIoHdr {
    interface_id: libc::c_int,
    dxfer_direction: libc::c_int,
    cmd_len: libc::c_uchar,
    mx_sb_len: libc::c_uchar,
    iovec_count: libc::c_ushort,
    dxfer_len: libc::c_uint,
    dxferp: *mut libc::c_void,
    cmdp: *const libc::c_uchar,
    sbp: *mut libc::c_uchar,
    timeout: libc::c_uint,
    flags: libc::c_uint,
    pack_id: libc::c_int,
    usr_ptr: *mut libc::c_void,
    status: libc::c_uchar,
    masked_status: libc::c_uchar,
    msg_status: libc::c_uchar,
    sb_len_wr: libc::c_uchar,
    host_status: libc::c_ushort,
    driver_status: libc::c_ushort,
    resid: libc::c_int,
    duration: libc::c_uint,
    info: libc::c_uint,
}

/// Which way data moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataDirection {
    /// No data phase.
    None,
    /// Host to device (WRITE, WRITE SAME, UNMAP parameter list).
    ToDevice,
    /// Device to host (READ, INQUIRY).
    FromDevice,
}

enum Data<'a> {
    None,
    In(&'a mut [u8]),
    Out(&'a [u8]),
}

/// One SCSI command to execute: the CDB, the data buffer and its direction,
/// and the timeout.
pub struct ScsiCommand<'a> {
    cdb: &'a [u8],
    data: Data<'a>,
    timeout_ms: Option<u32>,
}

impl<'a> ScsiCommand<'a> {
    /// A command with no data phase; the device's default timeout.
    pub fn new(cdb: &'a [u8]) -> Self {
        ScsiCommand {
            cdb,
            data: Data::None,
            timeout_ms: None,
        }
    }
    /// Data comes from the device into `buf` (its length is the transfer length).
    pub fn data_in(mut self, buf: &'a mut [u8]) -> Self {
        self.data = Data::In(buf);
        self
    }
    /// Data goes to the device from `buf`.
    pub fn data_out(mut self, buf: &'a [u8]) -> Self {
        self.data = Data::Out(buf);
        self
    }
    /// Timeout in milliseconds (default: the device's, 60 s unless changed).
    pub fn timeout_ms(mut self, ms: u32) -> Self {
        self.timeout_ms = Some(ms);
        self
    }
    /// The data direction.
    pub fn direction(&self) -> DataDirection {
        match self.data {
            Data::None => DataDirection::None,
            Data::In(_) => DataDirection::FromDevice,
            Data::Out(_) => DataDirection::ToDevice,
        }
    }

    /// The `sg_io_hdr` of this command, for SG_IO and for the sg driver's
    /// write() alike: its CDB, data buffer and direction, its timeout (or
    /// `default_timeout_ms`), the sense buffer `sense` (which must hold
    /// [`SENSE_LEN`] bytes for as long as the kernel may write it) and the
    /// tag `pack_id`. Refuses a CDB shorter than 6 or longer than 255
    /// bytes and a transfer of 4 GiB or more.
    fn header(
        &mut self,
        default_timeout_ms: u32,
        sense: *mut u8,
        pack_id: libc::c_int,
    ) -> Result<SgIoHdr, SgError> {
        let cmd_len = u8::try_from(self.cdb.len())
            .ok()
            .filter(|&n| n >= 6)
            .ok_or_else(|| {
                SgError::InvalidRequest(format!("CDB length {} is not 6..=255", self.cdb.len()))
            })?;
        let (dir, ptr, len): (libc::c_int, *mut libc::c_void, usize) = match &mut self.data {
            Data::None => (SG_DXFER_NONE, std::ptr::null_mut(), 0),
            Data::In(b) => (SG_DXFER_FROM_DEV, b.as_mut_ptr().cast(), b.len()),
            // The kernel only reads a TO_DEV buffer; the pointer type is the
            // header's, not a promise to write.
            Data::Out(b) => (SG_DXFER_TO_DEV, b.as_ptr() as *mut libc::c_void, b.len()),
        };
        let dxfer_len = u32::try_from(len).map_err(|_| {
            SgError::InvalidRequest(format!("transfer of {len} bytes exceeds 4 GiB"))
        })?;
        Ok(SgIoHdr {
            interface_id: b'S' as libc::c_int,
            dxfer_direction: dir,
            cmd_len,
            mx_sb_len: SENSE_LEN as u8,
            iovec_count: 0,
            dxfer_len,
            dxferp: if len == 0 { std::ptr::null_mut() } else { ptr },
            cmdp: self.cdb.as_ptr(),
            sbp: sense,
            timeout: self.timeout_ms.unwrap_or(default_timeout_ms),
            flags: 0,
            pack_id,
            usr_ptr: std::ptr::null_mut(),
            status: 0,
            masked_status: 0,
            msg_status: 0,
            sb_len_wr: 0,
            host_status: 0,
            driver_status: 0,
            resid: 0,
            duration: 0,
            info: 0,
        })
    }
}

impl SgIoHdr {
    /// What the kernel wrote back into this header once the command
    /// completed, with the sense bytes it says it wrote into `sense` (the
    /// header's sense buffer; empty when there is none).
    fn result(&self, sense: &[u8]) -> ScsiResult {
        let n = usize::from(self.sb_len_wr).min(sense.len());
        ScsiResult {
            status: self.status,
            host_status: self.host_status,
            driver_status: self.driver_status,
            resid: self.resid,
            duration_ms: self.duration,
            sense: sense[..n].to_vec(),
        }
    }
}

/// SCSI status byte values (SAM-5).
pub mod status {
    /// GOOD.
    pub const GOOD: u8 = 0x00;
    /// CHECK CONDITION: sense data describes the failure.
    pub const CHECK_CONDITION: u8 = 0x02;
    /// CONDITION MET.
    pub const CONDITION_MET: u8 = 0x04;
    /// BUSY.
    pub const BUSY: u8 = 0x08;
    /// RESERVATION CONFLICT.
    pub const RESERVATION_CONFLICT: u8 = 0x18;
    /// TASK SET FULL.
    pub const TASK_SET_FULL: u8 = 0x28;
    /// ACA ACTIVE.
    pub const ACA_ACTIVE: u8 = 0x30;
    /// TASK ABORTED.
    pub const TASK_ABORTED: u8 = 0x40;
}

/// SCSI status in words.
pub fn status_name(s: u8) -> &'static str {
    match s {
        status::GOOD => "GOOD",
        status::CHECK_CONDITION => "CHECK CONDITION",
        status::CONDITION_MET => "CONDITION MET",
        status::BUSY => "BUSY",
        status::RESERVATION_CONFLICT => "RESERVATION CONFLICT",
        status::TASK_SET_FULL => "TASK SET FULL",
        status::ACA_ACTIVE => "ACA ACTIVE",
        status::TASK_ABORTED => "TASK ABORTED",
        _ => "unknown SCSI status",
    }
}

/// Linux host (adapter) status in words (`DID_*` in include/scsi/scsi_status.h).
pub fn host_status_name(h: u16) -> &'static str {
    match h {
        0x00 => "DID_OK",
        0x01 => "DID_NO_CONNECT (device gone)",
        0x02 => "DID_BUS_BUSY",
        0x03 => "DID_TIME_OUT (command timed out)",
        0x04 => "DID_BAD_TARGET",
        0x05 => "DID_ABORT (command aborted)",
        0x06 => "DID_PARITY",
        0x07 => "DID_ERROR (internal host adapter error)",
        0x08 => "DID_RESET (bus reset)",
        0x09 => "DID_BAD_INTR",
        0x0A => "DID_PASSTHROUGH",
        0x0B => "DID_SOFT_ERROR",
        0x0C => "DID_IMM_RETRY",
        0x0D => "DID_REQUEUE",
        0x0E => "DID_TRANSPORT_DISRUPTED",
        0x0F => "DID_TRANSPORT_FAILFAST",
        0x11 => "DID_TRANSPORT_MARGINAL",
        _ => "unknown host status",
    }
}

/// What came back from one SG_IO.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScsiResult {
    /// SCSI status byte (0 GOOD, 2 CHECK CONDITION, ...).
    pub status: u8,
    /// Host adapter status (`DID_*`; 0 = OK).
    pub host_status: u16,
    /// Driver status (`DRIVER_*`; 0x08 = sense is valid).
    pub driver_status: u16,
    /// Residual: bytes asked for but not transferred.
    pub resid: i32,
    /// Duration in milliseconds, as measured by the kernel.
    pub duration_ms: u32,
    /// Sense bytes written by the device (empty if none).
    pub sense: Vec<u8>,
}

impl ScsiResult {
    /// GOOD status, no transport error.
    pub fn is_good(&self) -> bool {
        self.status == status::GOOD
            && self.host_status == 0
            && (self.driver_status & 0x0F) & !0x08 == 0
    }

    /// Decoded sense data, if any was returned.
    pub fn sense_data(&self) -> Option<Sense> {
        Sense::parse(&self.sense)
    }

    /// Bytes actually transferred of a `requested`-byte buffer.
    pub fn transferred(&self, requested: usize) -> usize {
        let r = usize::try_from(self.resid.max(0)).unwrap_or(0);
        requested.saturating_sub(r)
    }

    /// Turn a failed status into a typed error for the command `cdb`
    /// (used for messages): unsupported command, check condition with
    /// decoded sense, transport error, or another SCSI status.
    pub fn check(&self, cdb: &[u8]) -> Result<(), SgError> {
        let command = command_name(cdb);
        if self.status == status::CHECK_CONDITION
            || (!self.sense.is_empty() && self.status != status::GOOD)
        {
            return Err(match self.sense_data() {
                Some(s) if s.is_unsupported_command() => SgError::NotSupported {
                    command,
                    sense: Box::new(s),
                },
                Some(s) => SgError::CheckCondition {
                    command,
                    sense: Box::new(s),
                },
                None => SgError::Status {
                    command,
                    status: self.status,
                    status_name: status_name(self.status),
                },
            });
        }
        if self.host_status != 0 {
            return Err(SgError::Transport {
                command,
                host_status: self.host_status,
                host_status_name: host_status_name(self.host_status),
                driver_status: self.driver_status,
            });
        }
        if self.status != status::GOOD && self.status != status::CONDITION_MET {
            return Err(SgError::Status {
                command,
                status: self.status,
                status_name: status_name(self.status),
            });
        }
        // DRIVER_TIMEOUT (0x06) without a host status.
        if self.driver_status & 0x0F == 0x06 {
            return Err(SgError::Transport {
                command,
                host_status: self.host_status,
                host_status_name: "driver timeout",
                driver_status: self.driver_status,
            });
        }
        Ok(())
    }
}

/// Errors from SCSI passthrough.
#[derive(Debug, thiserror::Error)]
pub enum SgError {
    /// The device cannot be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Passthrough was refused: privileges the process lacks, or (for root)
    /// the kernel or a security policy refuses it on this node.
    #[error("permission denied for SCSI passthrough on {path}{}", if crate::block::blockdev::running_as_root() { " (refused even to root: a partition, or a security policy such as lockdown)" } else { ": run as root (CAP_SYS_RAWIO)" })]
    Permission {
        /// The path.
        path: PathBuf,
    },
    /// SG_IO is not supported: the device is not a SCSI device (loop, zram,
    /// NVMe, md, ...).
    #[error("{path} is not a SCSI device: SCSI passthrough (SG_IO) is not supported by it ({errno_name}); use a SCSI/SATA disk or /dev/sgN, or the NVMe commands for NVMe")]
    NotScsi {
        /// The path.
        path: PathBuf,
        /// The errno returned by SG_IO.
        errno: i32,
        /// Its name (ENOTTY, EINVAL).
        errno_name: &'static str,
    },
    /// The SG_IO ioctl itself failed (not a SCSI status).
    #[error("SG_IO on {path} failed: {source}{hint}")]
    Ioctl {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
        /// What to try.
        hint: &'static str,
    },
    /// The device refused the command as unsupported (ILLEGAL REQUEST,
    /// invalid opcode or invalid field in CDB).
    #[error("{command} not supported by this device ({sense})")]
    NotSupported {
        /// The command's name.
        command: String,
        /// The decoded sense.
        sense: Box<Sense>,
    },
    /// CHECK CONDITION with sense data (medium errors carry the failing LBA
    /// in `sense.information`).
    #[error("{command} failed: {sense}")]
    CheckCondition {
        /// The command's name.
        command: String,
        /// The decoded sense.
        sense: Box<Sense>,
    },
    /// The host adapter or driver reported a transport failure (timeout,
    /// reset, device gone).
    #[error("{command} failed in transport: host status 0x{host_status:02X} {host_status_name}, driver status 0x{driver_status:02X}; check the cable/controller or raise the timeout")]
    Transport {
        /// The command's name.
        command: String,
        /// `DID_*` host status.
        host_status: u16,
        /// Its name.
        host_status_name: &'static str,
        /// `DRIVER_*` driver status.
        driver_status: u16,
    },
    /// A SCSI status other than GOOD without sense (BUSY, RESERVATION CONFLICT…).
    #[error("{command} returned SCSI status 0x{status:02X} ({status_name}); retry later or release the reservation")]
    Status {
        /// The command's name.
        command: String,
        /// The status byte.
        status: u8,
        /// Its name.
        status_name: &'static str,
    },
    /// The device returned less data than the answer needs.
    #[error("{command} returned only {got} bytes, too short to decode")]
    ShortData {
        /// The command's name.
        command: String,
        /// Bytes received.
        got: usize,
    },
    /// The request cannot be expressed (count too large for the CDB, ...).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A command that changes the medium ([`crate::scsi::modifies_medium`])
    /// on a handle not built from a [`crate::claim::Claim`] (nor a forced
    /// character device): refused before anything is sent.
    #[error("{}: {command} changes the medium and needs the device claimed for writing (drivelab's safety checks); this is a bug in the caller", .path.display())]
    Unclaimed {
        /// The path.
        path: PathBuf,
        /// The command's name and opcode.
        command: String,
    },
    /// Queueing a command with write() on /dev/sgN, or collecting one with
    /// read(), failed.
    #[error("cannot {action} {}: {source}", .path.display())]
    Queue {
        /// The path.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// [`SgDevice::open_forced_char`] was given something that is not a
    /// character device.
    #[error("{} is not a character device (/dev/sgN); a block device is written through its claim", .path.display())]
    NotCharDevice {
        /// The path.
        path: PathBuf,
    },
}

impl SgError {
    /// The decoded sense, when the error carries one.
    pub fn sense(&self) -> Option<&Sense> {
        match self {
            SgError::NotSupported { sense, .. } | SgError::CheckCondition { sense, .. } => {
                Some(sense)
            }
            _ => None,
        }
    }
    /// Whether this means "the device does not do this command" (as opposed
    /// to the command failing).
    pub fn is_not_supported(&self) -> bool {
        matches!(self, SgError::NotSupported { .. } | SgError::NotScsi { .. })
    }
}

fn errno_name(e: i32) -> &'static str {
    match e {
        libc::ENOTTY => "ENOTTY",
        libc::EINVAL => "EINVAL",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        _ => "errno",
    }
}

/// An open device that SCSI commands can be sent to.
///
/// Only a handle built by [`SgDevice::claimed`] (or, for a character device
/// the safety checks cannot see into, [`SgDevice::open_forced_char`]) may
/// send a command that changes the medium; any other handle refuses one
/// with [`SgError::Unclaimed`] before it reaches the kernel (which, for
/// root, would allow it on a read-only descriptor).
#[derive(Debug)]
pub struct SgDevice {
    file: File,
    path: PathBuf,
    timeout_ms: u32,
    /// Built from a claim: shares its exclusive hold.
    claimed: bool,
    /// A character device opened for writing after the user's `--force`.
    forced_char: bool,
}

impl SgDevice {
    /// Open `path` read-only, for commands that change nothing (a command
    /// that changes the medium is refused: use [`SgDevice::claimed`]).
    pub fn open(path: impl AsRef<Path>) -> Result<SgDevice, SgError> {
        Self::open_mode(path.as_ref(), false)
    }

    /// Open `path` read-write. Like [`SgDevice::open`], the handle refuses
    /// commands that change the medium.
    pub fn open_rw(path: impl AsRef<Path>) -> Result<SgDevice, SgError> {
        Self::open_mode(path.as_ref(), true)
    }

    /// Open the character device `path` (/dev/sgN) read-write for commands
    /// that change the medium. Such a node cannot be claimed (the safety
    /// checks cannot see mounts or partitions through it), so only a caller
    /// holding the user's `--force` for it may use this. Anything but a
    /// character device is refused with [`SgError::NotCharDevice`].
    pub fn open_forced_char(path: impl AsRef<Path>) -> Result<SgDevice, SgError> {
        use std::os::unix::fs::FileTypeExt;
        let path = path.as_ref();
        let mut d = Self::open_mode(path, true)?;
        // Checked on the open descriptor, so the node cannot be swapped
        // between the check and the open.
        let is_char = d
            .file
            .metadata()
            .map(|m| m.file_type().is_char_device())
            .map_err(|e| SgError::Open {
                path: path.to_path_buf(),
                source: e,
            })?;
        if !is_char {
            return Err(SgError::NotCharDevice {
                path: path.to_path_buf(),
            });
        }
        d.forced_char = true;
        Ok(d)
    }

    fn open_mode(path: &Path, rw: bool) -> Result<SgDevice, SgError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(rw)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => SgError::Permission {
                    path: path.to_path_buf(),
                },
                _ => SgError::Open {
                    path: path.to_path_buf(),
                    source: e,
                },
            })?;
        Ok(SgDevice::from_file(file, path))
    }

    /// The device the claim holds, for commands that write (WRITE SAME,
    /// SANITIZE, ATA SCT Write Same through SAT): the handle shares the
    /// claim's exclusive hold.
    pub fn claimed(claim: &crate::claim::Claim) -> Result<SgDevice, SgError> {
        let path = claim.path();
        let file = claim.io_file(false).map_err(|e| SgError::Open {
            path: path.to_path_buf(),
            source: e,
        })?;
        let mut d = SgDevice::from_file(file, path);
        d.claimed = true;
        Ok(d)
    }

    /// Wrap an already open file. The handle is not claimed: it refuses
    /// commands that change the medium.
    pub fn from_file(file: File, path: impl Into<PathBuf>) -> SgDevice {
        SgDevice {
            file,
            path: path.into(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            claimed: false,
            forced_char: false,
        }
    }

    /// Whether the handle was built from a [`crate::claim::Claim`].
    pub fn is_claimed(&self) -> bool {
        self.claimed
    }

    /// Whether the handle may send commands that change the medium: built
    /// from a claim, or a character device opened with
    /// [`SgDevice::open_forced_char`].
    pub fn may_change_medium(&self) -> bool {
        self.claimed || self.forced_char
    }

    /// The path it was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file (for the other passthrough modules).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Default timeout for commands that do not set one, in ms.
    pub fn timeout_ms(&self) -> u32 {
        self.timeout_ms
    }

    /// Set the default timeout in ms (WRITE SAME over a large range or a
    /// SANITIZE needs far more than the 60 s default).
    pub fn set_timeout_ms(&mut self, ms: u32) {
        self.timeout_ms = ms;
    }

    /// Whether the device answers SG_GET_VERSION_NUM (every SCSI block
    /// device and sg node does; loop and NVMe do not).
    pub fn answers_sg(&self) -> bool {
        let mut v: libc::c_int = 0;
        // SAFETY: SG_GET_VERSION_NUM writes one c_int through the pointer,
        // which points at a live local of that type.
        let rc = unsafe {
            libc::ioctl(
                self.file.as_raw_fd(),
                SG_GET_VERSION_NUM as _,
                &mut v as *mut libc::c_int,
            )
        };
        rc == 0
    }

    /// Execute one command. Returns the result for any SCSI status (check it
    /// with [`ScsiResult::check`]); errors when SG_IO itself fails, and
    /// with [`SgError::Unclaimed`], before anything is sent, for a command
    /// that changes the medium ([`crate::scsi::modifies_medium`]) on a
    /// handle that [may not](SgDevice::may_change_medium).
    pub fn execute(&self, cmd: &mut ScsiCommand<'_>) -> Result<ScsiResult, SgError> {
        self.refuse_unclaimed(cmd.cdb)?;
        let mut sense = [0u8; SENSE_LEN];
        let mut hdr = cmd.header(self.timeout_ms, sense.as_mut_ptr(), 0)?;
        // SAFETY: `hdr` is a correctly laid out sg_io_hdr (see the layout
        // test). Its pointers refer to `cmd.cdb` (cmd_len bytes), `sense`
        // (mx_sb_len bytes) and the data buffer (dxfer_len bytes, writable
        // when the direction is FROM_DEV because it came from a `&mut [u8]`);
        // all outlive this synchronous call, which returns only when the
        // command is complete.
        let rc =
            unsafe { libc::ioctl(self.file.as_raw_fd(), SG_IO as _, &mut hdr as *mut SgIoHdr) };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            let errno = err.raw_os_error().unwrap_or(0);
            return Err(match errno {
                libc::ENOTTY => SgError::NotScsi {
                    path: self.path.clone(),
                    errno,
                    errno_name: errno_name(errno),
                },
                libc::EINVAL if !self.answers_sg() => SgError::NotScsi {
                    path: self.path.clone(),
                    errno,
                    errno_name: errno_name(errno),
                },
                libc::EACCES | libc::EPERM => SgError::Permission {
                    path: self.path.clone(),
                },
                libc::EINVAL => SgError::Ioctl {
                    path: self.path.clone(),
                    source: err,
                    hint: " (the transfer may exceed the device's max_sectors_kb or the CDB is malformed; use a smaller count)",
                },
                _ => SgError::Ioctl {
                    path: self.path.clone(),
                    source: err,
                    hint: "",
                },
            });
        }
        Ok(hdr.result(&sense))
    }

    /// [`SgError::Unclaimed`] for a command that changes the medium
    /// ([`crate::scsi::modifies_medium`]) on a handle that [may
    /// not](SgDevice::may_change_medium).
    fn refuse_unclaimed(&self, cdb: &[u8]) -> Result<(), SgError> {
        if !self.may_change_medium() && modifies_medium(cdb) {
            return Err(SgError::Unclaimed {
                path: self.path.clone(),
                command: command_with_opcode(cdb),
            });
        }
        Ok(())
    }
}

impl SgDevice {
    /// The SCSI generic node `sg` (`/dev/sgN`) of the disk `claim` holds,
    /// for commands that change the medium under the claim (see
    /// [`crate::claim::Claim::scsi_generic_file`]); opened non-blocking,
    /// for [`SgAsync`].
    pub fn claimed_generic(claim: &crate::claim::Claim, sg: &Path) -> Result<SgDevice, SgError> {
        let file = claim.scsi_generic_file(sg).map_err(|e| SgError::Open {
            path: sg.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let mut d = SgDevice::from_file(file, sg);
        d.claimed = true;
        Ok(d)
    }

    /// Whether the handle is a character device (/dev/sgN), where the sg
    /// driver's asynchronous interface ([`SgAsync`]) works.
    pub fn is_char(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.file
            .metadata()
            .is_ok_and(|m| m.file_type().is_char_device())
    }
}

/// The sg driver's asynchronous interface on a `/dev/sgN` node, as fio's
/// sg engine uses it with `iodepth` above 1: a command is queued by
/// `write()` of its `sg_io_hdr` and its completion collected, in whatever
/// order the device finishes, by `read()` of one (the node is opened
/// non-blocking; `poll()` waits for one). Each command carries a tag
/// (the header's `pack_id`) that comes back with its completion.
///
/// The kernel copies the header and the CDB when the command is queued but
/// uses the data buffer and the sense buffer until the completion is read:
/// the sense buffers are this value's own (one per tag, on the heap), the
/// data buffers the caller's ([`SgAsync::submit`] is `unsafe` for that).
/// Dropping it first collects every command still in flight.
#[derive(Debug)]
pub struct SgAsync {
    dev: SgDevice,
    sense: Box<[[u8; SENSE_LEN]]>,
    outstanding: u32,
}

impl SgAsync {
    /// `dev`, a character device, for tags `0..depth`.
    pub fn new(dev: SgDevice, depth: u32) -> Result<SgAsync, SgError> {
        if !dev.is_char() {
            return Err(SgError::NotCharDevice {
                path: dev.path.clone(),
            });
        }
        Ok(SgAsync {
            dev,
            sense: vec![[0u8; SENSE_LEN]; depth.max(1) as usize].into_boxed_slice(),
            outstanding: 0,
        })
    }

    /// The device.
    pub fn device(&self) -> &SgDevice {
        &self.dev
    }

    /// Commands queued and not yet collected.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    fn io_err(&self, action: &'static str, source: std::io::Error) -> SgError {
        SgError::Queue {
            path: self.dev.path.clone(),
            action,
            source,
        }
    }

    /// Queue `cmd` under `tag` (below the depth given to [`SgAsync::new`],
    /// not in flight). A command that changes the medium on a handle that
    /// [may not](SgDevice::may_change_medium) is refused before anything
    /// is sent.
    ///
    /// # Safety
    ///
    /// The memory of `cmd`'s data buffer must stay valid, and the caller
    /// must neither read nor write it, until [`SgAsync::receive`] has
    /// returned the completion of `tag` (the kernel may read it, or write
    /// into it, at any time until then), even if this value is dropped
    /// first (dropping it waits for every completion).
    pub unsafe fn submit(&mut self, tag: u32, cmd: &mut ScsiCommand<'_>) -> Result<(), SgError> {
        self.dev.refuse_unclaimed(cmd.cdb)?;
        let slot = tag as usize;
        if slot >= self.sense.len() {
            return Err(SgError::InvalidRequest(format!(
                "tag {tag} is beyond the queue's {} commands",
                self.sense.len()
            )));
        }
        let hdr = cmd.header(
            self.dev.timeout_ms,
            self.sense[slot].as_mut_ptr(),
            tag as libc::c_int,
        )?;
        let size = std::mem::size_of::<SgIoHdr>();
        loop {
            // SAFETY: `hdr` is a live, correctly laid out sg_io_hdr of
            // `size` bytes, which write() only reads. The kernel copies it
            // and the CDB it points to before returning; the sense buffer
            // it points to is this value's (heap, one per tag, kept until
            // the completion is read, see Drop); the data buffer is the
            // caller's, valid until then by this function's contract.
            let rc = unsafe {
                libc::write(
                    self.dev.file.as_raw_fd(),
                    (&hdr as *const SgIoHdr).cast(),
                    size,
                )
            };
            if rc == size as isize {
                self.outstanding += 1;
                return Ok(());
            }
            let err = std::io::Error::last_os_error();
            if rc < 0 && err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(self.io_err("queue a command on", err));
        }
    }

    /// One completed command, if one is ready: its tag and result (check
    /// it with [`ScsiResult::check`]).
    pub fn receive(&mut self) -> Result<Option<(u32, ScsiResult)>, SgError> {
        if self.outstanding == 0 {
            return Ok(None);
        }
        let size = std::mem::size_of::<SgIoHdr>();
        let mut hdr = std::mem::MaybeUninit::<SgIoHdr>::zeroed();
        loop {
            // SAFETY: read() writes at most `size` bytes into `hdr`, which
            // has that size; all-zero bytes are a valid SgIoHdr (null
            // pointers, zero integers), so it is initialised either way.
            let rc =
                unsafe { libc::read(self.dev.file.as_raw_fd(), hdr.as_mut_ptr().cast(), size) };
            if rc == size as isize {
                break;
            }
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) if rc < 0 => continue,
                Some(libc::EAGAIN) if rc < 0 => return Ok(None),
                _ => return Err(self.io_err("collect a command from", err)),
            }
        }
        // SAFETY: zero-initialised above and then filled by the kernel
        // with a whole header.
        let hdr = unsafe { hdr.assume_init() };
        self.outstanding -= 1;
        let tag = u32::try_from(hdr.pack_id).unwrap_or(u32::MAX);
        let sense = self.sense.get(tag as usize).map_or(&[][..], |s| &s[..]);
        Ok(Some((tag, hdr.result(sense))))
    }

    /// Wait until a completion is ready to [receive](SgAsync::receive), or
    /// `timeout` passes (None: no limit). Returns at once when nothing is
    /// in flight.
    pub fn wait(&self, timeout: Option<std::time::Duration>) -> Result<(), SgError> {
        if self.outstanding == 0 {
            return Ok(());
        }
        let ms = timeout.map_or(-1, |d| d.as_millis().min(i32::MAX as u128) as libc::c_int);
        let mut p = libc::pollfd {
            fd: self.dev.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: one live pollfd, which poll() reads and updates.
            let rc = unsafe { libc::poll(&mut p, 1, ms) };
            if rc >= 0 {
                return Ok(());
            }
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(self.io_err("wait for a command on", err));
            }
        }
    }
}

impl Drop for SgAsync {
    fn drop(&mut self) {
        // The kernel still holds pointers to the sense buffers (and the
        // caller's data buffers) of commands in flight: collect them all.
        while self.outstanding > 0 {
            if self.wait(None).is_err() {
                break;
            }
            match self.receive() {
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn sg_io_hdr_layout_matches_kernel_header() {
        // include/scsi/sg.h on LP64: offsets of each member.
        assert_eq!(offset_of!(SgIoHdr, interface_id), 0);
        assert_eq!(offset_of!(SgIoHdr, dxfer_direction), 4);
        assert_eq!(offset_of!(SgIoHdr, cmd_len), 8);
        assert_eq!(offset_of!(SgIoHdr, mx_sb_len), 9);
        assert_eq!(offset_of!(SgIoHdr, iovec_count), 10);
        assert_eq!(offset_of!(SgIoHdr, dxfer_len), 12);
        assert_eq!(offset_of!(SgIoHdr, dxferp), 16);
        assert_eq!(offset_of!(SgIoHdr, cmdp), 24);
        assert_eq!(offset_of!(SgIoHdr, sbp), 32);
        assert_eq!(offset_of!(SgIoHdr, timeout), 40);
        assert_eq!(offset_of!(SgIoHdr, flags), 44);
        assert_eq!(offset_of!(SgIoHdr, pack_id), 48);
        assert_eq!(offset_of!(SgIoHdr, usr_ptr), 56);
        assert_eq!(offset_of!(SgIoHdr, status), 64);
        assert_eq!(offset_of!(SgIoHdr, sb_len_wr), 67);
        assert_eq!(offset_of!(SgIoHdr, host_status), 68);
        assert_eq!(offset_of!(SgIoHdr, driver_status), 70);
        assert_eq!(offset_of!(SgIoHdr, resid), 72);
        assert_eq!(offset_of!(SgIoHdr, duration), 76);
        assert_eq!(offset_of!(SgIoHdr, info), 80);
        assert_eq!(size_of::<SgIoHdr>(), 88);
    }

    fn result(status: u8, host: u16, sense: Vec<u8>) -> ScsiResult {
        ScsiResult {
            status,
            host_status: host,
            driver_status: 0,
            resid: 0,
            duration_ms: 0,
            sense,
        }
    }

    #[test]
    fn check_maps_status_to_typed_errors() {
        let cdb = [0x93u8; 16];
        assert!(result(0, 0, vec![]).check(&cdb).is_ok());
        let mut s = vec![0u8; 18];
        s[0] = 0x70;
        s[2] = 0x05;
        s[7] = 10;
        s[12] = 0x20;
        let e = result(2, 0, s.clone()).check(&cdb).unwrap_err();
        assert!(matches!(e, SgError::NotSupported { .. }));
        let msg = e.to_string();
        assert!(
            msg.starts_with("WRITE SAME(16) not supported by this device (ILLEGAL REQUEST"),
            "{msg}"
        );
        s[2] = 0x03;
        s[12] = 0x11;
        let e = result(2, 0, s).check(&cdb).unwrap_err();
        assert!(matches!(e, SgError::CheckCondition { .. }));
        assert!(e.sense().unwrap().is_medium_error());
        let e = result(0, 3, vec![]).check(&cdb).unwrap_err();
        assert!(e.to_string().contains("DID_TIME_OUT"), "{e}");
        let e = result(0x18, 0, vec![]).check(&cdb).unwrap_err();
        assert!(e.to_string().contains("RESERVATION CONFLICT"), "{e}");
    }

    #[test]
    fn the_async_interface_takes_only_a_character_device() {
        let p = std::env::temp_dir().join(format!("drivelab-sgasync-{}", std::process::id()));
        std::fs::write(&p, [0u8; 512]).unwrap();
        let d = SgDevice::from_file(File::open(&p).unwrap(), &p);
        let e = SgAsync::new(d, 4).unwrap_err();
        std::fs::remove_file(&p).unwrap();
        assert!(matches!(e, SgError::NotCharDevice { .. }), "{e}");
        // /dev/null is a character device, but not a SCSI generic node.
        let e = crate::claim::scsi_generic_block(Path::new("/dev/null")).unwrap_err();
        assert!(e.to_string().contains("not a SCSI generic device"), "{e}");
    }

    /// SG_IO and the asynchronous write() build their header in one
    /// place, and decode what comes back in one.
    #[test]
    fn one_header_for_both_paths() {
        let cdb = [0x28u8, 0, 0, 0, 0, 8, 0, 0, 1, 0];
        let mut buf = [0u8; 512];
        let mut sense = [0u8; SENSE_LEN];
        let mut cmd = ScsiCommand::new(&cdb).data_in(&mut buf);
        let h = cmd.header(1234, sense.as_mut_ptr(), 7).unwrap();
        assert_eq!(
            (h.interface_id, h.cmd_len, h.mx_sb_len),
            (b'S' as i32, 10, 96)
        );
        assert_eq!((h.dxfer_direction, h.dxfer_len), (SG_DXFER_FROM_DEV, 512));
        assert_eq!((h.timeout, h.pack_id), (1234, 7));
        assert_eq!(h.sbp, sense.as_mut_ptr());
        let mut cmd = ScsiCommand::new(&cdb).timeout_ms(5);
        let h = cmd.header(1234, std::ptr::null_mut(), 0).unwrap();
        assert_eq!((h.dxfer_direction, h.dxfer_len), (SG_DXFER_NONE, 0));
        assert!(h.dxferp.is_null());
        assert_eq!(h.timeout, 5);
        let e = ScsiCommand::new(&cdb[..5])
            .header(0, std::ptr::null_mut(), 0)
            .unwrap_err();
        assert!(e.to_string().contains("CDB length 5"), "{e}");
        let mut h = ScsiCommand::new(&cdb)
            .header(0, std::ptr::null_mut(), 0)
            .unwrap();
        (h.status, h.sb_len_wr, h.resid) = (2, 18, 60);
        sense[0] = 0x70;
        let r = h.result(&sense);
        assert_eq!(
            (r.status, r.resid, r.sense.len(), r.sense[0]),
            (2, 60, 18, 0x70)
        );
        // No sense buffer (a tag the queue does not know): no sense.
        assert!(h.result(&[]).sense.is_empty());
    }

    #[test]
    fn transferred_subtracts_residual() {
        let mut r = result(0, 0, vec![]);
        r.resid = 60;
        assert_eq!(r.transferred(96), 36);
        r.resid = 200;
        assert_eq!(r.transferred(96), 0);
    }
}
