//! NVMe passthrough: admin and I/O commands sent with NVME_IOCTL_ADMIN_CMD /
//! NVME_IOCTL_IO_CMD, the Identify data decoded, and completion status in
//! words.
//!
//! drivelab erases NVMe drives with Write Zeroes, Dataset Management
//! (deallocate), Format NVM and Sanitize; it has to know which the
//! controller supports (Identify Controller ONCS, FNA, SANICAP) and say
//! plainly why one was refused. `struct nvme_passthru_cmd` follows
//! `include/uapi/linux/nvme_ioctl.h` (72 bytes); command dwords follow the
//! NVMe Base / NVM Command Set specifications. Multi-byte fields in Identify
//! data are little-endian.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::units::{BlockCount, Lba};

pub mod id;

pub use id::{namespace_id, NVME_IOCTL_ID};

/// `_IOWR('N', 0x41, struct nvme_admin_cmd)` (72 bytes).
pub const NVME_IOCTL_ADMIN_CMD: libc::c_ulong = 0xC048_4E41;
/// `_IOWR('N', 0x43, struct nvme_passthru_cmd)` (72 bytes).
pub const NVME_IOCTL_IO_CMD: libc::c_ulong = 0xC048_4E43;

/// Default command timeout, ms (0 would mean the driver's default).
pub const DEFAULT_TIMEOUT_MS: u32 = 60_000;

/// `NVME_URING_CMD_IO` (`_IOWR('N', 0x80, struct nvme_uring_cmd)`): the
/// `cmd_op` of an io_uring passthrough command whose `addr`/`data_len`
/// are one buffer.
pub const NVME_URING_CMD_IO: u32 = 0xC048_4E80;
/// `NVME_URING_CMD_IO_VEC` (`_IOWR('N', 0x81, struct nvme_uring_cmd)`):
/// `addr` points at an iovec array and `data_len` counts its entries.
pub const NVME_URING_CMD_IO_VEC: u32 = 0xC048_4E81;

/// `struct nvme_passthru_cmd` (= `struct nvme_admin_cmd`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NvmePassthruCmd {
    /// CDW0 bits 7:0.
    pub opcode: u8,
    /// CDW0 bits 15:8 (fused operation / PSDT): leave 0.
    pub flags: u8,
    /// Reserved.
    pub rsvd1: u16,
    /// Namespace ID.
    pub nsid: u32,
    /// CDW2.
    pub cdw2: u32,
    /// CDW3.
    pub cdw3: u32,
    /// Metadata buffer address ([`NvmeDevice::execute`] always sends 0).
    pub metadata: u64,
    /// Data buffer address.
    pub addr: u64,
    /// Metadata length in bytes ([`NvmeDevice::execute`] always sends 0).
    pub metadata_len: u32,
    /// Data length in bytes.
    pub data_len: u32,
    /// CDW10.
    pub cdw10: u32,
    /// CDW11.
    pub cdw11: u32,
    /// CDW12.
    pub cdw12: u32,
    /// CDW13.
    pub cdw13: u32,
    /// CDW14.
    pub cdw14: u32,
    /// CDW15.
    pub cdw15: u32,
    /// Timeout in ms (0 = driver default).
    pub timeout_ms: u32,
    /// Completion DW0 (command specific result).
    pub result: u32,
}

/// Admin or I/O queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Queue {
    /// Admin submission queue.
    Admin,
    /// I/O submission queue.
    Io,
}

/// Admin opcodes used here.
pub mod admin {
    /// Get Log Page.
    pub const GET_LOG_PAGE: u8 = 0x02;
    /// Identify.
    pub const IDENTIFY: u8 = 0x06;
    /// Format NVM.
    pub const FORMAT_NVM: u8 = 0x80;
    /// Sanitize.
    pub const SANITIZE: u8 = 0x84;
}

/// NVM command set I/O opcodes used here.
pub mod io {
    /// Flush.
    pub const FLUSH: u8 = 0x00;
    /// Write.
    pub const WRITE: u8 = 0x01;
    /// Read.
    pub const READ: u8 = 0x02;
    /// Write Uncorrectable.
    pub const WRITE_UNCORRECTABLE: u8 = 0x04;
    /// Write Zeroes.
    pub const WRITE_ZEROES: u8 = 0x08;
    /// Dataset Management.
    pub const DATASET_MANAGEMENT: u8 = 0x09;
}

/// Whether the NVMe command `opcode` on `queue` changes the medium or the
/// controller's lasting state (NVMe Base 2.0 admin opcode table, NVM
/// Command Set and Zoned Namespace Command Set I/O opcode tables).
/// [`NvmeDevice::execute`] refuses these on a handle not claimed for
/// writing.
///
/// Admin: Namespace Management 0Dh, Firmware Commit 10h, Firmware Image
/// Download 11h, Device Self-test 14h, Namespace Attachment 15h, Capacity
/// Management 20h, Format NVM 80h, Security Send 81h, Sanitize 84h.
/// I/O: Write 01h, Write Uncorrectable 04h, Write Zeroes 08h, Dataset
/// Management 09h, Copy 19h, Zone Management Send 79h, Zone Append 7Dh.
pub fn modifies_medium(queue: Queue, opcode: u8) -> bool {
    match queue {
        Queue::Admin => matches!(
            opcode,
            0x0D | 0x10 | 0x11 | 0x14 | 0x15 | 0x20 | 0x80 | 0x81 | 0x84
        ),
        Queue::Io => matches!(opcode, 0x01 | 0x04 | 0x08 | 0x09 | 0x19 | 0x79 | 0x7D),
    }
}

/// Sanitize actions (SANACT, CDW10 bits 2:0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SanitizeAction {
    /// 001b: exit failure mode.
    ExitFailureMode,
    /// 010b: block erase.
    BlockErase,
    /// 011b: overwrite.
    Overwrite,
    /// 100b: crypto erase.
    CryptoErase,
}

impl SanitizeAction {
    /// SANACT value.
    pub fn code(self) -> u32 {
        match self {
            SanitizeAction::ExitFailureMode => 1,
            SanitizeAction::BlockErase => 2,
            SanitizeAction::Overwrite => 3,
            SanitizeAction::CryptoErase => 4,
        }
    }
}

/// One NVMe command: opcode, queue, namespace and command dwords, built
/// with `new` + setters, or by the per-command constructors below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvmeCommand {
    /// Which queue it goes to.
    pub queue: Queue,
    /// The command (addr/data_len are filled and metadata cleared at
    /// execution).
    pub cmd: NvmePassthruCmd,
    /// A name for messages.
    pub name: &'static str,
}

impl NvmeCommand {
    /// A command with `opcode` on `queue`, all dwords zero.
    pub fn new(queue: Queue, opcode: u8, name: &'static str) -> Self {
        NvmeCommand {
            queue,
            cmd: NvmePassthruCmd {
                opcode,
                timeout_ms: DEFAULT_TIMEOUT_MS,
                ..Default::default()
            },
            name,
        }
    }
    /// Namespace ID.
    pub fn nsid(mut self, nsid: u32) -> Self {
        self.cmd.nsid = nsid;
        self
    }
    /// CDW10.
    pub fn cdw10(mut self, v: u32) -> Self {
        self.cmd.cdw10 = v;
        self
    }
    /// CDW11.
    pub fn cdw11(mut self, v: u32) -> Self {
        self.cmd.cdw11 = v;
        self
    }
    /// CDW12.
    pub fn cdw12(mut self, v: u32) -> Self {
        self.cmd.cdw12 = v;
        self
    }
    /// CDW13.
    pub fn cdw13(mut self, v: u32) -> Self {
        self.cmd.cdw13 = v;
        self
    }
    /// Timeout in ms.
    pub fn timeout_ms(mut self, ms: u32) -> Self {
        self.cmd.timeout_ms = ms;
        self
    }

    /// Identify (admin 06h): CDW10 bits 7:0 CNS, bits 31:16 CNTID. CNS 0 =
    /// namespace (needs nsid), 1 = controller. 4096 bytes back.
    pub fn identify(cns: u8, nsid: u32) -> Self {
        Self::new(Queue::Admin, admin::IDENTIFY, "Identify")
            .nsid(nsid)
            .cdw10(u32::from(cns))
    }

    /// Get Log Page (admin 02h): CDW10 bits 7:0 LID, bits 31:16 NUMDL;
    /// CDW11 bits 15:0 NUMDU; `bytes` must be a multiple of 4.
    pub fn get_log_page(lid: u8, nsid: u32, bytes: u32) -> Self {
        let numd = (bytes / 4).saturating_sub(1);
        Self::new(Queue::Admin, admin::GET_LOG_PAGE, "Get Log Page")
            .nsid(nsid)
            .cdw10(u32::from(lid) | ((numd & 0xFFFF) << 16))
            .cdw11(numd >> 16)
    }

    /// Format NVM (admin 80h): CDW10 bits 3:0 LBAF (low), 11:9 SES
    /// (0 none, 1 user data erase, 2 cryptographic erase), 13:12 LBAF upper.
    pub fn format_nvm(nsid: u32, lbaf: u8, ses: u8) -> Self {
        let lo = u32::from(lbaf & 0x0F);
        let hi = u32::from((lbaf >> 4) & 0x03);
        Self::new(Queue::Admin, admin::FORMAT_NVM, "Format NVM")
            .nsid(nsid)
            .cdw10(lo | (u32::from(ses & 0x07) << 9) | (hi << 12))
    }

    /// Sanitize (admin 84h): CDW10 bits 2:0 SANACT, bit 3 AUSE, bits 7:4
    /// OWPASS, bit 8 OIPBP, bit 9 NDAS; CDW11 overwrite pattern. Options via
    /// [`NvmeCommand::sanitize_with`].
    pub fn sanitize(action: SanitizeAction) -> Self {
        Self::sanitize_with(action, false, 1, false, false, 0)
    }

    /// Sanitize with all fields: `ause`, overwrite passes 1..=16 (16 encodes
    /// as 0), invert pattern between passes, no-deallocate after sanitize,
    /// and the 32-bit overwrite pattern.
    pub fn sanitize_with(
        action: SanitizeAction,
        ause: bool,
        passes: u8,
        oipbp: bool,
        ndas: bool,
        pattern: u32,
    ) -> Self {
        let owpass = u32::from(passes.clamp(1, 16) & 0x0F);
        Self::new(Queue::Admin, admin::SANITIZE, "Sanitize")
            .cdw10(
                action.code()
                    | (u32::from(ause) << 3)
                    | (owpass << 4)
                    | (u32::from(oipbp) << 8)
                    | (u32::from(ndas) << 9),
            )
            .cdw11(pattern)
    }

    /// Write Zeroes (I/O 08h): CDW10-11 SLBA, CDW12 bits 15:0 NLB (0-based),
    /// bit 25 DEAC, bit 30 FUA. `blocks` is 1..=65536.
    pub fn write_zeroes(nsid: u32, slba: Lba, blocks: u32) -> Self {
        Self::rw(io::WRITE_ZEROES, "Write Zeroes", nsid, slba, blocks)
    }

    /// DEAC bit (Write Zeroes CDW12 bit 25): deallocate the blocks if the
    /// controller can do so and still read back zeroes.
    pub fn deac(mut self, on: bool) -> Self {
        self.set_cdw12_bit(25, on);
        self
    }

    /// FUA bit (CDW12 bit 30) for Read, Write, Write Zeroes.
    pub fn fua(mut self, on: bool) -> Self {
        self.set_cdw12_bit(30, on);
        self
    }

    fn set_cdw12_bit(&mut self, bit: u32, on: bool) {
        if on {
            self.cmd.cdw12 |= 1 << bit;
        } else {
            self.cmd.cdw12 &= !(1 << bit);
        }
    }

    fn rw(op: u8, name: &'static str, nsid: u32, slba: Lba, blocks: u32) -> Self {
        let nlb = blocks.saturating_sub(1) & 0xFFFF;
        Self::new(Queue::Io, op, name)
            .nsid(nsid)
            .cdw10(slba.0 as u32)
            .cdw11((slba.0 >> 32) as u32)
            .cdw12(nlb)
    }

    /// Read (I/O 02h) of `blocks` (1..=65536) blocks.
    pub fn read(nsid: u32, slba: Lba, blocks: u32) -> Self {
        Self::rw(io::READ, "Read", nsid, slba, blocks)
    }

    /// Write (I/O 01h) of `blocks` (1..=65536) blocks.
    pub fn write(nsid: u32, slba: Lba, blocks: u32) -> Self {
        Self::rw(io::WRITE, "Write", nsid, slba, blocks)
    }

    /// Flush (I/O 00h).
    pub fn flush(nsid: u32) -> Self {
        Self::new(Queue::Io, io::FLUSH, "Flush").nsid(nsid)
    }

    /// Dataset Management (I/O 09h) with `ranges` ranges (1..=256): CDW10
    /// bits 7:0 NR (0-based), CDW11 bit 2 AD (deallocate). The range list
    /// comes from [`dsm_ranges`].
    pub fn dsm_deallocate(nsid: u32, ranges: u32) -> Self {
        Self::new(Queue::Io, io::DATASET_MANAGEMENT, "Dataset Management")
            .nsid(nsid)
            .cdw10(ranges.saturating_sub(1) & 0xFF)
            .cdw11(1 << 2)
    }
}

impl NvmeCommand {
    /// The command as `struct nvme_uring_cmd` (the first 72 bytes of the
    /// 80-byte command area of a 128-byte io_uring SQE; the same layout
    /// as `struct nvme_passthru_cmd` up to its timeout, then a reserved
    /// dword), with `addr`/`data_len` as given (a buffer and its length,
    /// or an iovec array and its count for [`NVME_URING_CMD_IO_VEC`]) and
    /// no metadata.
    pub fn uring_cmd(&self, addr: u64, data_len: u32) -> [u8; 80] {
        let c = &self.cmd;
        let mut b = [0u8; 80];
        b[0] = c.opcode;
        b[1] = c.flags;
        b[4..8].copy_from_slice(&c.nsid.to_le_bytes());
        b[8..12].copy_from_slice(&c.cdw2.to_le_bytes());
        b[12..16].copy_from_slice(&c.cdw3.to_le_bytes());
        // 16..24 metadata and 32..36 metadata_len stay 0.
        b[24..32].copy_from_slice(&addr.to_le_bytes());
        b[36..40].copy_from_slice(&data_len.to_le_bytes());
        for (i, d) in [c.cdw10, c.cdw11, c.cdw12, c.cdw13, c.cdw14, c.cdw15]
            .iter()
            .enumerate()
        {
            b[40 + 4 * i..44 + 4 * i].copy_from_slice(&d.to_le_bytes());
        }
        b[64..68].copy_from_slice(&c.timeout_ms.to_le_bytes());
        b
    }
}

/// The Dataset Management range list: 16 bytes per range, bytes 0-3 context
/// attributes, 4-7 length in blocks, 8-15 starting LBA (little-endian).
pub fn dsm_ranges(ranges: &[(Lba, u32)]) -> Vec<u8> {
    let mut b = vec![0u8; 16 * ranges.len()];
    for (i, (lba, n)) in ranges.iter().enumerate() {
        b[16 * i + 4..16 * i + 8].copy_from_slice(&n.to_le_bytes());
        b[16 * i + 8..16 * i + 16].copy_from_slice(&lba.0.to_le_bytes());
    }
    b
}

/// An NVMe completion status as the Linux ioctl returns it: bits 7:0 SC,
/// 10:8 SCT, 12:11 CRD, 13 More, 14 DNR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvmeStatus(pub u16);

impl NvmeStatus {
    /// Status Code.
    pub fn sc(self) -> u8 {
        (self.0 & 0xFF) as u8
    }
    /// Status Code Type: 0 generic, 1 command specific, 2 media and data
    /// integrity, 3 path related, 7 vendor specific.
    pub fn sct(self) -> u8 {
        ((self.0 >> 8) & 0x7) as u8
    }
    /// Command Retry Delay index.
    pub fn crd(self) -> u8 {
        ((self.0 >> 11) & 0x3) as u8
    }
    /// More: more information in the Error Information log.
    pub fn more(self) -> bool {
        self.0 & (1 << 13) != 0
    }
    /// Do Not Retry.
    pub fn dnr(self) -> bool {
        self.0 & (1 << 14) != 0
    }
    /// Status code type in words.
    pub fn sct_name(self) -> &'static str {
        match self.sct() {
            0 => "generic command status",
            1 => "command specific status",
            2 => "media and data integrity error",
            3 => "path related status",
            7 => "vendor specific",
            _ => "reserved status code type",
        }
    }
    /// The status in words (NVMe Base spec status code tables).
    pub fn name(self) -> &'static str {
        match (self.sct(), self.sc()) {
            (0, 0x00) => "successful completion",
            (0, 0x01) => "invalid command opcode",
            (0, 0x02) => "invalid field in command",
            (0, 0x03) => "command ID conflict",
            (0, 0x04) => "data transfer error",
            (0, 0x05) => "commands aborted due to power loss notification",
            (0, 0x06) => "internal error",
            (0, 0x07) => "command abort requested",
            (0, 0x08) => "command aborted due to SQ deletion",
            (0, 0x0A) => "command aborted due to missing fused command",
            (0, 0x0B) => "invalid namespace or format",
            (0, 0x0C) => "command sequence error",
            (0, 0x0D) => "invalid SGL segment descriptor",
            (0, 0x0F) => "invalid SGL descriptor",
            (0, 0x10) => "data SGL length invalid",
            (0, 0x15) => "invalid use of controller memory buffer",
            (0, 0x1C) => "sanitize failed",
            (0, 0x1D) => "sanitize in progress",
            (0, 0x1E) => "SGL data block granularity invalid",
            (0, 0x20) => "namespace is write protected",
            (0, 0x21) => "command interrupted",
            (0, 0x23) => "sanitize prohibited while persistent memory region is enabled",
            (0, 0x80) => "LBA out of range",
            (0, 0x81) => "capacity exceeded",
            (0, 0x82) => "namespace not ready",
            (0, 0x83) => "reservation conflict",
            (0, 0x84) => "format in progress",
            (1, 0x00) => "completion queue invalid",
            (1, 0x01) => "invalid queue identifier",
            (1, 0x02) => "invalid queue size",
            (1, 0x06) => "invalid firmware slot",
            (1, 0x09) => "invalid log page",
            (1, 0x0A) => "invalid format",
            (1, 0x0B) => "firmware activation requires conventional reset",
            (1, 0x0F) => "feature not saveable",
            (1, 0x15) => "namespace insufficient capacity",
            (1, 0x80) => "conflicting attributes",
            (1, 0x81) => "invalid protection information",
            (1, 0x82) => "attempted write to read only range",
            (2, 0x80) => "write fault",
            (2, 0x81) => "unrecovered read error",
            (2, 0x82) => "end-to-end guard check error",
            (2, 0x83) => "end-to-end application tag check error",
            (2, 0x84) => "end-to-end reference tag check error",
            (2, 0x85) => "compare failure",
            (2, 0x86) => "access denied",
            (2, 0x87) => "deallocated or unwritten logical block",
            (3, 0x00) => "internal path error",
            (3, 0x60) => "controller pathing error",
            // Set by the host's own driver: Linux fails a command with 70h
            // while the controller is not connected (reset, reconnecting),
            // and 71h when it cancels one.
            (3, 0x70) => "host pathing error (the host has no connection to the controller)",
            (3, 0x71) => "command aborted by host",
            _ => "unknown status code",
        }
    }
    /// Whether the command is simply not supported (invalid opcode, or an
    /// invalid field in it, e.g. an unsupported SES or SANACT).
    pub fn is_unsupported(self) -> bool {
        self.sct() == 0 && matches!(self.sc(), 0x01 | 0x02)
    }
    /// "invalid command opcode (SCT 0 SC 0x01, DNR)".
    pub fn describe(self) -> String {
        let mut s = format!("{} (SCT {} SC 0x{:02X}", self.name(), self.sct(), self.sc());
        if self.dnr() {
            s.push_str(", DNR");
        }
        if self.more() {
            s.push_str(", More");
        }
        s.push(')');
        s
    }
}

impl Serialize for NvmeStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("NvmeStatus", 7)?;
        st.serialize_field("raw", &self.0)?;
        st.serialize_field("sct", &self.sct())?;
        st.serialize_field("sc", &self.sc())?;
        st.serialize_field("sct_name", self.sct_name())?;
        st.serialize_field("name", self.name())?;
        st.serialize_field("dnr", &self.dnr())?;
        st.serialize_field("more", &self.more())?;
        st.end()
    }
}

impl std::fmt::Display for NvmeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// What [`NvmeError::Cancelled`] says happened: no completion within the
/// timeout, or a cancel before it.
fn cancelled_why(waited_ms: u64, timeout_ms: u32) -> String {
    let s = |ms: u64| format!("{:.0} s", ms as f64 / 1000.0);
    if timeout_ms > 0 && waited_ms >= u64::from(timeout_ms) {
        format!(
            "no completion within its {} timeout; the kernel gave up on it and reset the controller (the drive may still carry the command out)",
            s(u64::from(timeout_ms))
        )
    } else {
        format!(
            "cancelled by the kernel after {} without a completion (its timeout expired, or the controller was reset or lost; the drive may still carry the command out)",
            s(waited_ms)
        )
    }
}

/// Errors from NVMe passthrough.
#[derive(Debug, thiserror::Error)]
pub enum NvmeError {
    /// The device cannot be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Not an NVMe device (the ioctl is unknown to its driver).
    #[error("{path} is not an NVMe device: NVMe passthrough is not supported by it ({errno}); use /dev/nvmeXnY or /dev/nvmeX")]
    NotNvme {
        /// The path.
        path: PathBuf,
        /// The errno name.
        errno: &'static str,
    },
    /// Passthrough was refused: privileges the process lacks, or (for root)
    /// the kernel or a security policy refuses it on this node.
    #[error("permission denied for NVMe passthrough on {path}{}", if crate::block::blockdev::running_as_root() { " (refused even to root: a partition, or a security policy such as lockdown)" } else { ": run as root (CAP_SYS_ADMIN)" })]
    Permission {
        /// The path.
        path: PathBuf,
    },
    /// An I/O command needs a namespace and none is known.
    #[error("{path} is the controller device: give the namespace (/dev/nvmeXnY) for I/O commands")]
    NoNamespace {
        /// The path.
        path: PathBuf,
    },
    /// The ioctl failed (not an NVMe status).
    #[error("NVMe {command} ioctl on {path} failed: {source}{hint}")]
    Ioctl {
        /// The command's name.
        command: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
        /// What to try.
        hint: &'static str,
    },
    /// The kernel ended the command without a completion from the
    /// controller: the passthrough ioctl returns EINTR for a command the
    /// NVMe host driver cancelled, when its timeout expired (the driver
    /// then resets the controller) or the controller was reset under it.
    #[error("NVMe {command} on {}: {}", .path.display(), cancelled_why(*.waited_ms, *.timeout_ms))]
    Cancelled {
        /// The command's name.
        command: &'static str,
        /// The path.
        path: PathBuf,
        /// How long the ioctl waited, ms.
        waited_ms: u64,
        /// The command's timeout, ms.
        timeout_ms: u32,
    },
    /// The controller does not support the command.
    #[error("NVMe {command} not supported by this device ({status})")]
    NotSupported {
        /// The command's name.
        command: &'static str,
        /// The completion status.
        status: NvmeStatus,
    },
    /// The command completed with an error status.
    #[error("NVMe {command} failed: {status}")]
    Status {
        /// The command's name.
        command: &'static str,
        /// The completion status.
        status: NvmeStatus,
    },
    /// A media or data integrity error in a read or write of a known
    /// range (NVMe completions carry no failing LBA; the range is the one
    /// command's).
    #[error("NVMe {command} failed: {status} in LBA {first_lba}..{}", first_lba + blocks)]
    Media {
        /// The command's name.
        command: &'static str,
        /// The completion status.
        status: NvmeStatus,
        /// First LBA of the failed command.
        first_lba: u64,
        /// Blocks in the failed command.
        blocks: u64,
    },
    /// The request cannot be expressed.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A command that changes the medium ([`modifies_medium`]) on a handle
    /// not built from a [`crate::claim::Claim`] (nor a forced controller
    /// device): refused before anything is sent.
    #[error("{}: NVMe {command} ({queue} opcode {opcode:02X}h) changes the medium and needs the device claimed for writing (drivelab's safety checks); this is a bug in the caller", .path.display(), queue = if *.queue == Queue::Admin { "admin" } else { "I/O" })]
    Unclaimed {
        /// The path.
        path: PathBuf,
        /// The command's name.
        command: &'static str,
        /// Its queue.
        queue: Queue,
        /// Its opcode.
        opcode: u8,
    },
    /// [`NvmeDevice::open_forced_char`] was given something that is not a
    /// character device.
    #[error("{} is not a character device (/dev/nvmeX); a namespace is written through its claim", .path.display())]
    NotCharDevice {
        /// The path.
        path: PathBuf,
    },
}

impl NvmeError {
    /// The completion status, when the controller answered.
    pub fn status(&self) -> Option<NvmeStatus> {
        match self {
            NvmeError::NotSupported { status, .. }
            | NvmeError::Status { status, .. }
            | NvmeError::Media { status, .. } => Some(*status),
            _ => None,
        }
    }
    /// Whether this means "not supported" (by the device or the transport).
    pub fn is_not_supported(&self) -> bool {
        matches!(
            self,
            NvmeError::NotSupported { .. } | NvmeError::NotNvme { .. }
        )
    }
}

/// Data for a command.
pub enum NvmeData<'a> {
    /// No data.
    None,
    /// From the controller into the buffer.
    In(&'a mut [u8]),
    /// From the buffer to the controller.
    Out(&'a [u8]),
}

/// An open NVMe namespace block device or controller character device.
///
/// Only a handle built by [`NvmeDevice::claimed`] (or, for a controller
/// device the safety checks cannot see into, [`NvmeDevice::open_forced_char`])
/// may send a command that changes the medium; any other handle refuses
/// one with [`NvmeError::Unclaimed`] before it reaches the kernel.
#[derive(Debug)]
pub struct NvmeDevice {
    file: File,
    path: PathBuf,
    nsid: Option<u32>,
    /// Built from a claim: shares its exclusive hold.
    claimed: bool,
    /// A character device opened for writing after the user's `--force`.
    forced_char: bool,
}

/// The passthrough struct for `c` with a data buffer of `len` bytes at
/// `addr`: the only pointers it carries are those two, whatever the caller
/// put in `c.cmd` (no metadata buffer is ever passed: a caller-set address
/// there would let the controller write anywhere in this process).
fn passthru_cmd(c: &NvmeCommand, addr: u64, len: usize) -> Result<NvmePassthruCmd, NvmeError> {
    let mut cmd = c.cmd;
    cmd.addr = addr;
    cmd.data_len = u32::try_from(len)
        .map_err(|_| NvmeError::InvalidRequest(format!("transfer of {len} bytes exceeds 4 GiB")))?;
    cmd.metadata = 0;
    cmd.metadata_len = 0;
    Ok(cmd)
}

impl NvmeDevice {
    /// Open `path` and learn its namespace ID (NVME_IOCTL_ID; none for the
    /// controller device /dev/nvmeX). Fails with [`NvmeError::NotNvme`] for
    /// a block device that is not an NVMe namespace. The handle is for
    /// commands that change nothing: one that changes the medium is refused
    /// (use [`NvmeDevice::claimed`]).
    pub fn open(path: impl AsRef<Path>) -> Result<NvmeDevice, NvmeError> {
        Self::open_path(path.as_ref())
    }

    /// Open the character device `path` (the controller /dev/nvmeX, or a
    /// generic namespace node /dev/ngXnY) for commands that change the
    /// medium. Such a node cannot be claimed, so only a caller holding the
    /// user's `--force` for it may use this. Anything but a character
    /// device is refused with [`NvmeError::NotCharDevice`].
    pub fn open_forced_char(path: impl AsRef<Path>) -> Result<NvmeDevice, NvmeError> {
        use std::os::unix::fs::FileTypeExt;
        let path = path.as_ref();
        let mut d = Self::open_path(path)?;
        // Checked on the open descriptor, so the node cannot be swapped
        // between the check and the open.
        let is_char = d
            .file
            .metadata()
            .map(|m| m.file_type().is_char_device())
            .map_err(|e| NvmeError::Open {
                path: path.to_path_buf(),
                source: e,
            })?;
        if !is_char {
            return Err(NvmeError::NotCharDevice {
                path: path.to_path_buf(),
            });
        }
        d.forced_char = true;
        Ok(d)
    }

    fn open_path(path: &Path) -> Result<NvmeDevice, NvmeError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => NvmeError::Permission {
                    path: path.to_path_buf(),
                },
                _ => NvmeError::Open {
                    path: path.to_path_buf(),
                    source: e,
                },
            })?;
        Self::from_open_file(file, path)
    }

    /// The namespace (or controller) the claim holds, for commands that
    /// write: Write Zeroes, Format, Sanitize. The handle shares the claim's
    /// exclusive hold.
    pub fn claimed(claim: &crate::claim::Claim) -> Result<NvmeDevice, NvmeError> {
        let path = claim.path();
        let file = claim.io_file(false).map_err(|e| NvmeError::Open {
            path: path.to_path_buf(),
            source: e,
        })?;
        let mut d = Self::from_open_file(file, path)?;
        d.claimed = true;
        Ok(d)
    }

    /// Whether the handle was built from a [`crate::claim::Claim`].
    pub fn is_claimed(&self) -> bool {
        self.claimed
    }

    /// Whether the handle may send commands that change the medium: built
    /// from a claim, or a character device opened with
    /// [`NvmeDevice::open_forced_char`].
    pub fn may_change_medium(&self) -> bool {
        self.claimed || self.forced_char
    }

    fn from_open_file(file: File, path: &Path) -> Result<NvmeDevice, NvmeError> {
        let is_block = {
            use std::os::unix::fs::FileTypeExt;
            file.metadata()
                .map(|m| m.file_type().is_block_device())
                .unwrap_or(false)
        };
        let nsid = match namespace_id(&file) {
            Ok(nsid) => nsid,
            Err(errno) if is_block => {
                return Err(NvmeError::NotNvme {
                    path: path.to_path_buf(),
                    errno: match errno {
                        libc::ENOTTY => "ENOTTY",
                        libc::EINVAL => "EINVAL",
                        _ => "ioctl error",
                    },
                });
            }
            Err(_) => None,
        };
        Ok(NvmeDevice {
            file,
            path: path.to_path_buf(),
            nsid,
            claimed: false,
            forced_char: false,
        })
    }

    /// The namespace ID of a namespace device.
    pub fn nsid(&self) -> Option<u32> {
        self.nsid
    }

    /// The namespace ID, or an error naming what to use instead.
    pub fn require_nsid(&self) -> Result<u32, NvmeError> {
        self.nsid.ok_or_else(|| NvmeError::NoNamespace {
            path: self.path.clone(),
        })
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Execute `c`; returns completion DW0 on success. A nonzero NVMe
    /// status becomes [`NvmeError::NotSupported`] (invalid opcode/field) or
    /// [`NvmeError::Status`]. A command that changes the medium
    /// ([`modifies_medium`]) on a handle that [may
    /// not](NvmeDevice::may_change_medium) is refused with
    /// [`NvmeError::Unclaimed`] before anything is sent.
    pub fn execute(&self, c: &NvmeCommand, data: NvmeData<'_>) -> Result<u32, NvmeError> {
        if !self.may_change_medium() && modifies_medium(c.queue, c.cmd.opcode) {
            return Err(NvmeError::Unclaimed {
                path: self.path.clone(),
                command: c.name,
                queue: c.queue,
                opcode: c.cmd.opcode,
            });
        }
        let (addr, len) = match data {
            NvmeData::None => (0u64, 0usize),
            NvmeData::In(b) => (b.as_mut_ptr() as u64, b.len()),
            NvmeData::Out(b) => (b.as_ptr() as u64, b.len()),
        };
        let mut cmd = passthru_cmd(c, addr, len)?;
        let req = match c.queue {
            Queue::Admin => NVME_IOCTL_ADMIN_CMD,
            Queue::Io => NVME_IOCTL_IO_CMD,
        };
        let t0 = std::time::Instant::now();
        // SAFETY: `cmd` is a correctly laid out nvme_passthru_cmd (see the
        // layout test). `passthru_cmd` set its pointers, whatever the caller
        // put there: no metadata, and `addr`/`data_len` describe a live
        // buffer borrowed for this call (mutable when the controller writes
        // it, since it came from `&mut [u8]`); the ioctl is synchronous, so
        // the buffer outlives the DMA.
        let rc = unsafe {
            libc::ioctl(
                self.file.as_raw_fd(),
                req as _,
                &mut cmd as *mut NvmePassthruCmd,
            )
        };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            return Err(match err.raw_os_error() {
                Some(libc::EINTR) => NvmeError::Cancelled {
                    command: c.name,
                    path: self.path.clone(),
                    waited_ms: u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX),
                    timeout_ms: c.cmd.timeout_ms,
                },
                Some(libc::ENOTTY) => NvmeError::NotNvme {
                    path: self.path.clone(),
                    errno: "ENOTTY",
                },
                Some(libc::EACCES) | Some(libc::EPERM) => NvmeError::Permission {
                    path: self.path.clone(),
                },
                Some(libc::EINVAL) if len > 0 => NvmeError::Ioctl {
                    command: c.name,
                    path: self.path.clone(),
                    source: err,
                    hint: " (the transfer may exceed the queue's max_hw_sectors_kb or max_segments; use a smaller count)",
                },
                _ => NvmeError::Ioctl {
                    command: c.name,
                    path: self.path.clone(),
                    source: err,
                    hint: "",
                },
            });
        }
        if rc > 0 {
            let status = NvmeStatus(rc as u16);
            // Command Aborted By Host: the host driver cancelled it (as
            // EINTR above, on kernels that report it as a status).
            if status.sct() == 3 && status.sc() == 0x71 {
                return Err(NvmeError::Cancelled {
                    command: c.name,
                    path: self.path.clone(),
                    waited_ms: u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX),
                    timeout_ms: c.cmd.timeout_ms,
                });
            }
            return Err(if status.is_unsupported() {
                NvmeError::NotSupported {
                    command: c.name,
                    status,
                }
            } else {
                NvmeError::Status {
                    command: c.name,
                    status,
                }
            });
        }
        Ok(cmd.result)
    }
}

/// Little-endian fields of NVMe data structures (identify, log pages).
pub(crate) fn le16(d: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([d[at], d[at + 1]])
}
pub(crate) fn le32(d: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}
pub(crate) fn le64(d: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&d[at..at + 8]);
    u64::from_le_bytes(a)
}
fn ascii(d: &[u8]) -> String {
    d.iter()
        .map(|&c| {
            if (0x20..0x7F).contains(&c) {
                c as char
            } else {
                ' '
            }
        })
        .collect::<String>()
        .trim()
        .to_string()
}

/// Identify Controller data (CNS 01h), the fields drivelab uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IdentifyController {
    /// PCI vendor ID (bytes 0-1).
    pub vid: u16,
    /// Serial number (bytes 4-23).
    pub serial: String,
    /// Model number (bytes 24-63).
    pub model: String,
    /// Firmware revision (bytes 64-71).
    pub firmware: String,
    /// MDTS (byte 77): max transfer = 2^MDTS x minimum page size; 0 = no limit.
    pub mdts: u8,
    /// Controller ID (bytes 78-79).
    pub cntlid: u16,
    /// Version (bytes 80-83), e.g. 0x00010400 = 1.4.
    pub version: u32,
    /// OACS (bytes 256-257): bit 1 Format NVM supported.
    pub oacs: u16,
    /// Format NVM supported (OACS bit 1).
    pub format_supported: bool,
    /// SANICAP (bytes 328-331).
    pub sanicap: u32,
    /// Sanitize crypto erase supported (SANICAP bit 0).
    pub sanitize_crypto: bool,
    /// Sanitize block erase supported (SANICAP bit 1).
    pub sanitize_block: bool,
    /// Sanitize overwrite supported (SANICAP bit 2).
    pub sanitize_overwrite: bool,
    /// Number of namespaces (bytes 516-519).
    pub nn: u32,
    /// ONCS (bytes 520-521).
    pub oncs: u16,
    /// Compare supported (ONCS bit 0).
    pub compare: bool,
    /// Write Uncorrectable supported (ONCS bit 1).
    pub write_uncorrectable: bool,
    /// Dataset Management supported (ONCS bit 2).
    pub dsm: bool,
    /// Write Zeroes supported (ONCS bit 3).
    pub write_zeroes: bool,
    /// Verify supported (ONCS bit 7).
    pub verify: bool,
    /// FNA (byte 524).
    pub fna: u8,
    /// Format applies to all namespaces (FNA bit 0).
    pub format_all_namespaces: bool,
    /// Secure erase applies to all namespaces (FNA bit 1).
    pub secure_erase_all_namespaces: bool,
    /// Cryptographic erase supported as part of secure erase (FNA bit 2).
    pub crypto_erase: bool,
    /// Volatile write cache present (VWC byte 525 bit 0).
    pub volatile_write_cache: bool,
}

impl IdentifyController {
    /// Decode the 4096-byte data.
    pub fn parse(d: &[u8]) -> Option<IdentifyController> {
        if d.len() < 4096 {
            return None;
        }
        let oacs = le16(d, 256);
        let sanicap = le32(d, 328);
        let oncs = le16(d, 520);
        let fna = d[524];
        Some(IdentifyController {
            vid: le16(d, 0),
            serial: ascii(&d[4..24]),
            model: ascii(&d[24..64]),
            firmware: ascii(&d[64..72]),
            mdts: d[77],
            cntlid: le16(d, 78),
            version: le32(d, 80),
            oacs,
            format_supported: oacs & 0x2 != 0,
            sanicap,
            sanitize_crypto: sanicap & 0x1 != 0,
            sanitize_block: sanicap & 0x2 != 0,
            sanitize_overwrite: sanicap & 0x4 != 0,
            nn: le32(d, 516),
            oncs,
            compare: oncs & 0x1 != 0,
            write_uncorrectable: oncs & 0x2 != 0,
            dsm: oncs & 0x4 != 0,
            write_zeroes: oncs & 0x8 != 0,
            verify: oncs & 0x80 != 0,
            fna,
            format_all_namespaces: fna & 0x1 != 0,
            secure_erase_all_namespaces: fna & 0x2 != 0,
            crypto_erase: fna & 0x4 != 0,
            volatile_write_cache: d[525] & 0x1 != 0,
        })
    }
}

/// One LBA format (Identify Namespace bytes 128 + 4n).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LbaFormat {
    /// Metadata size in bytes (bits 15:0).
    pub ms: u16,
    /// LBA data size as a power of two (bits 23:16): 9 = 512, 12 = 4096.
    pub lbads: u8,
    /// Relative performance (bits 25:24): 0 best .. 3 degraded.
    pub rp: u8,
}

impl LbaFormat {
    /// Data size in bytes (0 when LBADS is 0, i.e. unused).
    pub fn data_size(&self) -> u32 {
        if self.lbads == 0 || self.lbads > 31 {
            0
        } else {
            1 << self.lbads
        }
    }
}

/// Identify Namespace data (CNS 00h), the fields drivelab uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IdentifyNamespace {
    /// Namespace size in logical blocks (bytes 0-7).
    pub nsze: u64,
    /// Namespace capacity in logical blocks (bytes 8-15).
    pub ncap: u64,
    /// Namespace utilization in logical blocks (bytes 16-23).
    pub nuse: u64,
    /// NSFEAT (byte 24); bit 0 thin provisioning, bit 2 DAE.
    pub nsfeat: u8,
    /// Number of LBA formats (byte 25 + 1).
    pub nlbaf: u8,
    /// FLBAS (byte 26).
    pub flbas: u8,
    /// Index of the LBA format in use (FLBAS bits 3:0, plus bits 6:5 as 5:4).
    pub lbaf_in_use: u8,
    /// DLFEAT (byte 33).
    pub dlfeat: u8,
    /// What a deallocated block reads as (DLFEAT bits 2:0): "not-reported",
    /// "zeroes", "ones".
    pub deallocate_reads: String,
    /// Write Zeroes DEAC supported (DLFEAT bit 3).
    pub write_zeroes_deac: bool,
    /// The LBA formats (bytes 128..).
    pub lba_formats: Vec<LbaFormat>,
    /// Logical block size in use, bytes.
    pub block_size: u32,
    /// Metadata bytes per block in use.
    pub metadata_size: u16,
}

impl IdentifyNamespace {
    /// Decode the 4096-byte data.
    pub fn parse(d: &[u8]) -> Option<IdentifyNamespace> {
        if d.len() < 4096 {
            return None;
        }
        let nlbaf = d[25].saturating_add(1).min(64);
        let flbas = d[26];
        let lbaf_in_use = (flbas & 0x0F) | (((flbas >> 5) & 0x03) << 4);
        let lba_formats: Vec<LbaFormat> = (0..usize::from(nlbaf))
            .map(|i| {
                let v = le32(d, 128 + 4 * i);
                LbaFormat {
                    ms: (v & 0xFFFF) as u16,
                    lbads: ((v >> 16) & 0xFF) as u8,
                    rp: ((v >> 24) & 0x3) as u8,
                }
            })
            .collect();
        let cur = lba_formats.get(usize::from(lbaf_in_use)).copied();
        let dlfeat = d[33];
        Some(IdentifyNamespace {
            nsze: le64(d, 0),
            ncap: le64(d, 8),
            nuse: le64(d, 16),
            nsfeat: d[24],
            nlbaf,
            flbas,
            lbaf_in_use,
            dlfeat,
            deallocate_reads: match dlfeat & 0x7 {
                1 => "zeroes",
                2 => "ones",
                _ => "not-reported",
            }
            .to_string(),
            write_zeroes_deac: dlfeat & 0x8 != 0,
            block_size: cur.map(|f| f.data_size()).unwrap_or(0),
            metadata_size: cur.map(|f| f.ms).unwrap_or(0),
            lba_formats,
        })
    }
}

/// Sanitize Status log page (log 81h), the first 20 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SanitizeStatusLog {
    /// SPROG (bytes 0-1): progress numerator of 65536.
    pub progress: u16,
    /// SSTAT bits 2:0: 0 never sanitized, 1 completed, 2 in progress,
    /// 3 failed, 4 completed without deallocation.
    pub status: u8,
    /// The status in words.
    pub status_name: String,
    /// Overwrite passes completed (SSTAT bits 7:3).
    pub overwrite_passes: u8,
    /// Global data erased (SSTAT bit 8).
    pub global_data_erased: bool,
    /// CDW10 of the sanitize command (bytes 4-7).
    pub cdw10: u32,
    /// Estimated seconds for overwrite / block erase / crypto erase (bytes
    /// 8-19); 0xFFFFFFFF = not reported.
    pub estimated_seconds: [u32; 3],
}

impl SanitizeStatusLog {
    /// Decode.
    pub fn parse(d: &[u8]) -> Option<SanitizeStatusLog> {
        if d.len() < 20 {
            return None;
        }
        let sstat = le16(d, 2);
        let status = (sstat & 0x7) as u8;
        Some(SanitizeStatusLog {
            progress: le16(d, 0),
            status,
            status_name: match status {
                0 => "never sanitized",
                1 => "completed successfully",
                2 => "in progress",
                3 => "failed",
                4 => "completed successfully without deallocation",
                _ => "reserved",
            }
            .to_string(),
            overwrite_passes: ((sstat >> 3) & 0x1F) as u8,
            global_data_erased: sstat & 0x100 != 0,
            cdw10: le32(d, 4),
            estimated_seconds: [le32(d, 8), le32(d, 12), le32(d, 16)],
        })
    }
}

/// Identify Controller.
pub fn identify_controller(dev: &NvmeDevice) -> Result<IdentifyController, NvmeError> {
    let mut buf = vec![0u8; 4096];
    dev.execute(&NvmeCommand::identify(1, 0), NvmeData::In(&mut buf))?;
    IdentifyController::parse(&buf)
        .ok_or_else(|| NvmeError::InvalidRequest("Identify data too short".into()))
}

/// The active namespace list (Identify CNS 02h with NSID 0): up to 1024
/// IDs, increasing, ended by the first zero.
pub fn parse_active_namespaces(d: &[u8]) -> Vec<u32> {
    d.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .take_while(|&n| n != 0)
        .collect()
}

/// The controller's active namespaces (Identify CNS 02h).
pub fn active_namespaces(dev: &NvmeDevice) -> Result<Vec<u32>, NvmeError> {
    let mut list = vec![0u8; 4096];
    dev.execute(&NvmeCommand::identify(2, 0), NvmeData::In(&mut list))?;
    Ok(parse_active_namespaces(&list))
}

/// Identify Namespace for the device's own namespace (or `nsid`).
pub fn identify_namespace(dev: &NvmeDevice, nsid: u32) -> Result<IdentifyNamespace, NvmeError> {
    let mut buf = vec![0u8; 4096];
    dev.execute(&NvmeCommand::identify(0, nsid), NvmeData::In(&mut buf))?;
    IdentifyNamespace::parse(&buf)
        .ok_or_else(|| NvmeError::InvalidRequest("Identify data too short".into()))
}

/// Write Zeroes over `blocks` blocks from `slba`, split into commands of at
/// most 65536 blocks (the NLB field's limit), each with the default 60 s
/// timeout. Returns the number of commands sent.
pub fn write_zeroes(
    dev: &NvmeDevice,
    slba: Lba,
    blocks: BlockCount,
    deac: bool,
) -> Result<u64, NvmeError> {
    write_zeroes_with_timeout(dev, slba, blocks, deac, DEFAULT_TIMEOUT_MS)
}

/// [`write_zeroes`] with a per-command timeout in ms (0 = the driver's default).
pub fn write_zeroes_with_timeout(
    dev: &NvmeDevice,
    slba: Lba,
    blocks: BlockCount,
    deac: bool,
    timeout_ms: u32,
) -> Result<u64, NvmeError> {
    let nsid = dev.require_nsid()?;
    let mut done = 0u64;
    let mut n = 0u64;
    while done < blocks.0 {
        let chunk = (blocks.0 - done).min(65536) as u32;
        let c = NvmeCommand::write_zeroes(nsid, Lba(slba.0 + done), chunk)
            .deac(deac)
            .timeout_ms(timeout_ms);
        dev.execute(&c, NvmeData::None)?;
        done += u64::from(chunk);
        n += 1;
    }
    Ok(n)
}

/// Dataset Management deallocate of the given ranges (each up to 2^32-1
/// blocks, at most 256 ranges).
pub fn dsm_deallocate(dev: &NvmeDevice, ranges: &[(Lba, BlockCount)]) -> Result<(), NvmeError> {
    let nsid = dev.require_nsid()?;
    if ranges.is_empty() || ranges.len() > 256 {
        return Err(NvmeError::InvalidRequest(format!(
            "Dataset Management takes 1..=256 ranges, got {}",
            ranges.len()
        )));
    }
    let mut list = Vec::with_capacity(ranges.len());
    for &(l, n) in ranges {
        let n = u32::try_from(n.0).map_err(|_| {
            NvmeError::InvalidRequest(format!("range of {} blocks exceeds 2^32-1; split it", n.0))
        })?;
        list.push((l, n));
    }
    let data = dsm_ranges(&list);
    dev.execute(
        &NvmeCommand::dsm_deallocate(nsid, list.len() as u32),
        NvmeData::Out(&data),
    )?;
    Ok(())
}

/// Read `blocks` blocks of `block_size` bytes from `slba` into `buf`
/// (exactly `blocks` x `block_size` bytes), with NVMe Read commands of at
/// most `max_transfer` bytes each (pass the controller's MDTS limit, or
/// 128 KiB when unknown). Returns the number of commands sent.
pub fn read(
    dev: &NvmeDevice,
    slba: Lba,
    blocks: BlockCount,
    block_size: u32,
    max_transfer: u64,
    buf: &mut [u8],
) -> Result<u64, NvmeError> {
    let nsid = dev.require_nsid()?;
    let bs = u64::from(block_size);
    if bs == 0 || blocks.0.checked_mul(bs) != Some(buf.len() as u64) {
        return Err(NvmeError::InvalidRequest(format!(
            "read buffer of {} bytes does not hold {} blocks of {block_size} bytes",
            buf.len(),
            blocks.0
        )));
    }
    let per_cmd = (max_transfer / bs).clamp(1, 65536);
    let mut n = 0u64;
    for (i, chunk) in buf.chunks_mut((per_cmd * bs) as usize).enumerate() {
        let lba = slba.0 + i as u64 * per_cmd;
        let nlb = (chunk.len() as u64 / bs) as u32;
        dev.execute(&NvmeCommand::read(nsid, Lba(lba), nlb), NvmeData::In(chunk))
            .map_err(|e| match e {
                NvmeError::Status { command, status } if status.sct() == 2 => NvmeError::Media {
                    command,
                    status,
                    first_lba: lba,
                    blocks: u64::from(nlb),
                },
                other => other,
            })?;
        n += 1;
    }
    Ok(n)
}

/// Sanitize Status log page.
pub fn sanitize_status(dev: &NvmeDevice) -> Result<SanitizeStatusLog, NvmeError> {
    let mut buf = vec![0u8; 512];
    let mut c = NvmeCommand::get_log_page(0x81, 0xFFFF_FFFF, 512);
    c.name = "Get Log Page (Sanitize Status, log 81h)";
    dev.execute(&c, NvmeData::In(&mut buf))?;
    SanitizeStatusLog::parse(&buf).ok_or_else(|| NvmeError::InvalidRequest("log too short".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn passthru_struct_matches_nvme_ioctl_h() {
        assert_eq!(size_of::<NvmePassthruCmd>(), 72);
        assert_eq!(offset_of!(NvmePassthruCmd, opcode), 0);
        assert_eq!(offset_of!(NvmePassthruCmd, flags), 1);
        assert_eq!(offset_of!(NvmePassthruCmd, nsid), 4);
        assert_eq!(offset_of!(NvmePassthruCmd, cdw2), 8);
        assert_eq!(offset_of!(NvmePassthruCmd, metadata), 16);
        assert_eq!(offset_of!(NvmePassthruCmd, addr), 24);
        assert_eq!(offset_of!(NvmePassthruCmd, metadata_len), 32);
        assert_eq!(offset_of!(NvmePassthruCmd, data_len), 36);
        assert_eq!(offset_of!(NvmePassthruCmd, cdw10), 40);
        assert_eq!(offset_of!(NvmePassthruCmd, cdw15), 60);
        assert_eq!(offset_of!(NvmePassthruCmd, timeout_ms), 64);
        assert_eq!(offset_of!(NvmePassthruCmd, result), 68);
        // _IOWR('N', nr, 72 bytes) = dir 3 << 30 | size << 16 | 'N' << 8 | nr.
        let iowr = |nr: libc::c_ulong| -> libc::c_ulong {
            (3 << 30) | (72 << 16) | (libc::c_ulong::from(b'N') << 8) | nr
        };
        assert_eq!(NVME_IOCTL_ADMIN_CMD, iowr(0x41));
        assert_eq!(NVME_IOCTL_IO_CMD, iowr(0x43));
        assert_eq!(NVME_IOCTL_ID, (libc::c_ulong::from(b'N') << 8) | 0x40);
    }

    #[test]
    fn uring_cmd_is_nvme_uring_cmd_of_nvme_ioctl_h() {
        // _IOWR('N', 0x80 / 0x81, struct nvme_uring_cmd of 72 bytes).
        assert_eq!(
            NVME_URING_CMD_IO,
            (3 << 30) | (72 << 16) | (0x4E << 8) | 0x80
        );
        assert_eq!(NVME_URING_CMD_IO_VEC, NVME_URING_CMD_IO + 1);
        // A read of 8 blocks at LBA 2^32 + 5 of namespace 3, as fio 3.33's
        // fio_nvme_uring_cmd_prep fills it (timeout 0: the driver's).
        let c = NvmeCommand::read(3, Lba((1 << 32) + 5), 8).timeout_ms(0);
        let b = c.uring_cmd(0x1122_3344_5566_7788, 4096);
        let le32 = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        assert_eq!(b[0], 0x02);
        assert_eq!(le32(4), 3);
        assert_eq!(&b[16..24], &[0; 8], "no metadata");
        assert_eq!(
            u64::from_le_bytes(b[24..32].try_into().unwrap()),
            0x1122_3344_5566_7788
        );
        assert_eq!(le32(32), 0);
        assert_eq!(le32(36), 4096);
        assert_eq!((le32(40), le32(44), le32(48)), (5, 1, 7));
        assert_eq!(le32(64), 0);
        assert_eq!(&b[68..], &[0; 12]);
        let w = NvmeCommand::write(1, Lba(9), 1).uring_cmd(0, 1);
        assert_eq!(w[0], 0x01);
        assert_eq!(&w[48..52], &[0; 4], "one block: NLB 0");
    }

    #[test]
    fn io_command_dwords_match_nvm_command_set() {
        let lba = 0x0000_0012_3456_789Au64;
        let c = NvmeCommand::write_zeroes(1, Lba(lba), 256)
            .deac(true)
            .fua(true);
        assert_eq!(c.cmd.opcode, 0x08);
        assert_eq!(c.queue, Queue::Io);
        assert_eq!(c.cmd.nsid, 1);
        assert_eq!(c.cmd.cdw10, 0x3456_789A);
        assert_eq!(c.cmd.cdw11, 0x12);
        assert_eq!(c.cmd.cdw12, 255 | (1 << 25) | (1 << 30));
        assert_eq!(
            NvmeCommand::write_zeroes(1, Lba(0), 256)
                .deac(true)
                .deac(false)
                .cmd
                .cdw12,
            255
        );
        let r = NvmeCommand::read(2, Lba(5), 65536);
        assert_eq!((r.cmd.opcode, r.cmd.cdw12), (0x02, 0xFFFF));
        assert_eq!(NvmeCommand::write(2, Lba(5), 1).cmd.opcode, 0x01);
        assert_eq!(NvmeCommand::flush(3).cmd.opcode, 0x00);
        let d = NvmeCommand::dsm_deallocate(1, 3);
        assert_eq!((d.cmd.opcode, d.cmd.cdw10, d.cmd.cdw11), (0x09, 2, 0x4));
    }

    #[test]
    fn passthru_carries_only_the_given_buffer_whatever_the_caller_set() {
        let mut c = NvmeCommand::identify(1, 0);
        c.cmd.metadata = 0xdead_beef;
        c.cmd.metadata_len = 4096;
        c.cmd.addr = 0x1234;
        c.cmd.data_len = 1 << 20;
        let p = passthru_cmd(&c, 0x5000, 4096).unwrap();
        assert_eq!((p.metadata, p.metadata_len), (0, 0));
        assert_eq!((p.addr, p.data_len), (0x5000, 4096));
        assert_eq!((p.opcode, p.cdw10), (c.cmd.opcode, 1));
        assert!(matches!(
            passthru_cmd(&c, 0x5000, 1 << 32),
            Err(NvmeError::InvalidRequest(_))
        ));
    }

    #[test]
    fn dsm_range_layout() {
        let b = dsm_ranges(&[(Lba(0x1122_3344_5566), 0x0A0B_0C0D), (Lba(7), 1)]);
        assert_eq!(b.len(), 32);
        assert_eq!(&b[0..4], &[0; 4]); // context attributes
        assert_eq!(&b[4..8], &[0x0D, 0x0C, 0x0B, 0x0A]); // length LE
        assert_eq!(&b[8..16], &[0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 0]); // SLBA LE
        assert_eq!(&b[20..24], &[1, 0, 0, 0]);
        assert_eq!(b[24], 7);
    }

    #[test]
    fn admin_command_dwords_match_base_spec() {
        let i = NvmeCommand::identify(1, 0);
        assert_eq!(
            (i.cmd.opcode, i.cmd.cdw10, i.queue),
            (0x06, 1, Queue::Admin)
        );
        let f = NvmeCommand::format_nvm(1, 0x13, 2);
        assert_eq!(f.cmd.opcode, 0x80);
        // LBAF low 3 in bits 3:0, SES 2 in bits 11:9, LBAF upper 1 in bits 13:12.
        assert_eq!(f.cmd.cdw10, 0x3 | (2 << 9) | (1 << 12));
        assert_eq!(NvmeCommand::format_nvm(1, 0, 1).cmd.cdw10, 1 << 9);
        let s = NvmeCommand::sanitize(SanitizeAction::CryptoErase);
        assert_eq!(s.cmd.opcode, 0x84);
        assert_eq!(s.cmd.cdw10, 4 | (1 << 4));
        let o = NvmeCommand::sanitize_with(
            SanitizeAction::Overwrite,
            true,
            16,
            true,
            true,
            0xCAFE_F00D,
        );
        assert_eq!(o.cmd.cdw10, 3 | (1 << 3) | (1 << 8) | (1 << 9));
        assert_eq!(o.cmd.cdw11, 0xCAFE_F00D);
        assert_eq!(
            NvmeCommand::sanitize(SanitizeAction::BlockErase).cmd.cdw10 & 7,
            2
        );
        assert_eq!(
            NvmeCommand::sanitize(SanitizeAction::ExitFailureMode)
                .cmd
                .cdw10
                & 7,
            1
        );
        let g = NvmeCommand::get_log_page(0x81, 0xFFFF_FFFF, 512);
        assert_eq!(g.cmd.cdw10, 0x81 | (127 << 16));
        assert_eq!(g.cmd.cdw11, 0);
    }

    #[test]
    fn write_class_opcodes_match_nvme_tables() {
        let admin_writes: &[(u8, &str)] = &[
            (0x0D, "Namespace Management"),
            (0x10, "Firmware Commit"),
            (0x11, "Firmware Image Download"),
            (0x14, "Device Self-test"),
            (0x15, "Namespace Attachment"),
            (0x20, "Capacity Management"),
            (0x80, "Format NVM"),
            (0x81, "Security Send"),
            (0x84, "Sanitize"),
        ];
        let admin_reads: &[(u8, &str)] = &[
            (0x02, "Get Log Page"),
            (0x06, "Identify"),
            (0x0A, "Get Features"),
            (0x0C, "Asynchronous Event Request"),
            (0x18, "Keep Alive"),
            (0x82, "Security Receive"),
        ];
        let io_writes: &[(u8, &str)] = &[
            (0x01, "Write"),
            (0x04, "Write Uncorrectable"),
            (0x08, "Write Zeroes"),
            (0x09, "Dataset Management"),
            (0x19, "Copy"),
            (0x79, "Zone Management Send"),
            (0x7D, "Zone Append"),
        ];
        let io_reads: &[(u8, &str)] = &[
            (0x00, "Flush"),
            (0x02, "Read"),
            (0x05, "Compare"),
            (0x0C, "Verify"),
            (0x7A, "Zone Management Receive"),
        ];
        for &(op, name) in admin_writes {
            assert!(modifies_medium(Queue::Admin, op), "admin {name} {op:02X}h");
        }
        for &(op, name) in admin_reads {
            assert!(!modifies_medium(Queue::Admin, op), "admin {name} {op:02X}h");
        }
        for &(op, name) in io_writes {
            assert!(modifies_medium(Queue::Io, op), "I/O {name} {op:02X}h");
        }
        for &(op, name) in io_reads {
            assert!(!modifies_medium(Queue::Io, op), "I/O {name} {op:02X}h");
        }
        // The queue matters: admin 09h is Set Features, not Dataset
        // Management; 84h on an I/O queue is not Sanitize.
        assert!(!modifies_medium(Queue::Admin, 0x09));
        assert!(!modifies_medium(Queue::Io, 0x84));
        // The commands this module builds classify as what they do.
        for c in [
            NvmeCommand::write(1, Lba(0), 1),
            NvmeCommand::write_zeroes(1, Lba(0), 1),
            NvmeCommand::dsm_deallocate(1, 1),
            NvmeCommand::format_nvm(1, 0, 1),
            NvmeCommand::sanitize(SanitizeAction::BlockErase),
        ] {
            assert!(modifies_medium(c.queue, c.cmd.opcode), "{}", c.name);
        }
        for c in [
            NvmeCommand::read(1, Lba(0), 1),
            NvmeCommand::flush(1),
            NvmeCommand::identify(1, 0),
            NvmeCommand::get_log_page(0x81, 0xFFFF_FFFF, 512),
        ] {
            assert!(!modifies_medium(c.queue, c.cmd.opcode), "{}", c.name);
        }
    }

    #[test]
    fn status_decoding() {
        // SC 01h, SCT 0, DNR: 0x4001 as the kernel returns it.
        let s = NvmeStatus(0x4001);
        assert_eq!((s.sct(), s.sc(), s.dnr(), s.more()), (0, 1, true, false));
        assert_eq!(s.name(), "invalid command opcode");
        assert!(s.is_unsupported());
        assert_eq!(s.describe(), "invalid command opcode (SCT 0 SC 0x01, DNR)");
        assert_eq!(NvmeStatus(0x0002).name(), "invalid field in command");
        assert_eq!(NvmeStatus(0x000B).name(), "invalid namespace or format");
        assert_eq!(NvmeStatus(0x0080).name(), "LBA out of range");
        let m = NvmeStatus((2 << 8) | 0x81 | (1 << 13));
        assert_eq!(m.name(), "unrecovered read error");
        assert!(m.more() && !m.dnr() && !m.is_unsupported());
        assert_eq!(m.sct_name(), "media and data integrity error");
        assert_eq!(NvmeStatus((1 << 8) | 0x0A).name(), "invalid format");
        assert_eq!(NvmeStatus(0x1800).crd(), 3);
    }

    #[test]
    fn identify_controller_decodes_offsets() {
        let mut d = vec![0u8; 4096];
        d[0..2].copy_from_slice(&0x1B36u16.to_le_bytes());
        d[4..24].copy_from_slice(b"deadbeef            ");
        d[24..64].copy_from_slice(format!("{:<40}", "QEMU NVMe Ctrl").as_bytes());
        d[64..72].copy_from_slice(b"7.2.0   ");
        d[77] = 7;
        d[80..84].copy_from_slice(&0x0001_0400u32.to_le_bytes());
        d[256..258].copy_from_slice(&0x000Au16.to_le_bytes());
        d[328..332].copy_from_slice(&0x0000_0005u32.to_le_bytes());
        d[516..520].copy_from_slice(&256u32.to_le_bytes());
        d[520..522].copy_from_slice(&0x000Eu16.to_le_bytes()); // WU, DSM, WZ
        d[524] = 0x05;
        d[525] = 0x01;
        let c = IdentifyController::parse(&d).unwrap();
        assert_eq!(c.vid, 0x1B36);
        assert_eq!(c.serial, "deadbeef");
        assert_eq!(c.model, "QEMU NVMe Ctrl");
        assert_eq!(c.firmware, "7.2.0");
        assert_eq!(c.mdts, 7);
        assert_eq!(c.version, 0x0001_0400);
        assert!(c.format_supported);
        assert!(c.sanitize_crypto && !c.sanitize_block && c.sanitize_overwrite);
        assert_eq!(c.nn, 256);
        assert!(c.write_uncorrectable && c.dsm && c.write_zeroes && !c.compare);
        assert!(c.format_all_namespaces && !c.secure_erase_all_namespaces && c.crypto_erase);
        assert!(c.volatile_write_cache);
        assert!(IdentifyController::parse(&d[..4000]).is_none());
    }

    #[test]
    fn identify_namespace_decodes_formats() {
        let mut d = vec![0u8; 4096];
        d[0..8].copy_from_slice(&2_097_152u64.to_le_bytes());
        d[8..16].copy_from_slice(&2_097_152u64.to_le_bytes());
        d[16..24].copy_from_slice(&1000u64.to_le_bytes());
        d[25] = 1; // two formats
        d[26] = 0x01; // format 1 in use
        d[33] = 0x09; // reads zeroes, DEAC supported
                      // LBAF0: 512 bytes, no metadata, RP 2; LBAF1: 4096 bytes, 8 bytes metadata, RP 0.
        d[128..132].copy_from_slice(&((2u32 << 24) | (9 << 16)).to_le_bytes());
        d[132..136].copy_from_slice(&((12u32 << 16) | 8).to_le_bytes());
        let n = IdentifyNamespace::parse(&d).unwrap();
        assert_eq!((n.nsze, n.ncap, n.nuse), (2_097_152, 2_097_152, 1000));
        assert_eq!(n.nlbaf, 2);
        assert_eq!(n.lbaf_in_use, 1);
        assert_eq!(n.block_size, 4096);
        assert_eq!(n.metadata_size, 8);
        assert_eq!(
            n.lba_formats[0],
            LbaFormat {
                ms: 0,
                lbads: 9,
                rp: 2
            }
        );
        assert_eq!(n.deallocate_reads, "zeroes");
        assert!(n.write_zeroes_deac);
        // FLBAS upper index bits 6:5 extend the index past 15.
        d[25] = 20;
        d[26] = 0x20 | 0x02; // index 0x12 = 18
        d[128 + 4 * 18..128 + 4 * 19].copy_from_slice(&(12u32 << 16).to_le_bytes());
        let n = IdentifyNamespace::parse(&d).unwrap();
        assert_eq!(n.lbaf_in_use, 18);
        assert_eq!(n.block_size, 4096);
    }

    #[test]
    fn a_cancelled_command_says_whether_its_timeout_expired() {
        let e = |waited_ms, timeout_ms| {
            NvmeError::Cancelled {
                command: "Sanitize",
                path: PathBuf::from("/dev/nvme1n1"),
                waited_ms,
                timeout_ms,
            }
            .to_string()
        };
        let late = e(60_004, 60_000);
        assert!(
            late.starts_with(
                "NVMe Sanitize on /dev/nvme1n1: no completion within its 60 s timeout"
            ) && late.contains("reset the controller")
                && !late.contains('\n'),
            "{late}"
        );
        for early in [e(12_000, 60_000), e(12_000, 0)] {
            assert!(
                early.contains("cancelled by the kernel after 12 s"),
                "{early}"
            );
        }
        // The host driver's own path statuses (Linux sets them itself).
        assert!(NvmeStatus(0x370)
            .describe()
            .starts_with("host pathing error"));
        assert!(NvmeStatus(0x371)
            .describe()
            .starts_with("command aborted by host"));
    }

    #[test]
    fn sanitize_status_log_decodes() {
        let mut d = vec![0u8; 512];
        d[0..2].copy_from_slice(&0x8000u16.to_le_bytes());
        d[2..4].copy_from_slice(&(2u16 | (3 << 3) | 0x100).to_le_bytes());
        d[4..8].copy_from_slice(&0x14u32.to_le_bytes());
        d[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        d[16..20].copy_from_slice(&30u32.to_le_bytes());
        let s = SanitizeStatusLog::parse(&d).unwrap();
        assert_eq!(s.progress, 0x8000);
        assert_eq!(s.status, 2);
        assert_eq!(s.status_name, "in progress");
        assert_eq!(s.overwrite_passes, 3);
        assert!(s.global_data_erased);
        assert_eq!(s.cdw10, 0x14);
        assert_eq!(s.estimated_seconds, [u32::MAX, 0, 30]);
    }
}
