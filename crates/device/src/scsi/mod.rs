//! SCSI commands for block devices: CDB builders, decoders for the data the
//! device returns (INQUIRY, VPD pages, READ CAPACITY), sense decoding, and
//! small helpers that issue one command through [`sg`].
//!
//! drivelab issues WRITE SAME, UNMAP and plain READ/WRITE itself (instead of
//! through the block layer) so that it owns transfer length, timeouts and the
//! decoded sense of every failure. Each CDB layout is written once, in a
//! builder (`new(required…)`, setters, `build()`), and checked by a unit test
//! against the SBC-4 / SPC-5 table. Multi-byte fields are big-endian.

//!
//! - [`sg`]: the SG_IO handle every SCSI (and SAT ATA) command goes through.
//! - [`cdb`]: the CDB table: operation codes, names, which CDBs change the
//!   medium.
//! - [`sense`]: sense data decoded.
//! - [`sanitize`]: SANITIZE support, sending it with IMMED, and its
//!   state through REQUEST SENSE.
//! - here: the CDB builders, the decoders of what a device returns, and
//!   the helpers that issue one command.

mod bytes;
pub mod cdb;
pub mod sanitize;
pub mod sense;
pub mod sg;

pub use cdb::*;
pub use sense::*;

use serde::Serialize;

use crate::scsi::bytes::{ascii_field, get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use crate::scsi::sg::{DataDirection, ScsiCommand, ScsiResult, SgDevice, SgError};
use crate::units::{BlockCount, Lba};

// ---------------------------------------------------------------------------
// CDB builders
// ---------------------------------------------------------------------------

/// TEST UNIT READY (SPC-5 6.47): 6 bytes, all zero but the opcode.
#[derive(Debug, Clone, Copy, Default)]
pub struct TestUnitReady;

impl TestUnitReady {
    /// A TEST UNIT READY CDB.
    pub fn new() -> Self {
        TestUnitReady
    }
    /// The 6-byte CDB.
    pub fn build(self) -> [u8; 6] {
        [opcode::TEST_UNIT_READY, 0, 0, 0, 0, 0]
    }
}

/// INQUIRY (SPC-5 6.7): standard data, or a VPD page when `evpd` is set.
#[derive(Debug, Clone, Copy)]
pub struct Inquiry {
    evpd: bool,
    page: u8,
    alloc_len: u16,
}

impl Inquiry {
    /// Standard INQUIRY data, allocation length `alloc_len` bytes
    /// (96 is enough for the fields drivelab decodes).
    pub fn new(alloc_len: u16) -> Self {
        Inquiry {
            evpd: false,
            page: 0,
            alloc_len,
        }
    }
    /// Ask for vital product data page `page` (sets EVPD).
    pub fn vpd_page(mut self, page: u8) -> Self {
        self.evpd = true;
        self.page = page;
        self
    }
    /// The 6-byte CDB: byte 1 bit 0 EVPD, byte 2 page code, bytes 3-4
    /// allocation length.
    pub fn build(self) -> [u8; 6] {
        let mut c = [0u8; 6];
        c[0] = opcode::INQUIRY;
        c[1] = u8::from(self.evpd);
        c[2] = self.page;
        put_u16(&mut c, 3, self.alloc_len);
        c
    }
}

/// READ CAPACITY(10) (SBC-4 5.20): 8 bytes of answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadCapacity10;

impl ReadCapacity10 {
    /// A READ CAPACITY(10) CDB.
    pub fn new() -> Self {
        ReadCapacity10
    }
    /// The 10-byte CDB.
    pub fn build(self) -> [u8; 10] {
        let mut c = [0u8; 10];
        c[0] = opcode::READ_CAPACITY_10;
        c
    }
}

/// READ CAPACITY(16) (SBC-4 5.21): SERVICE ACTION IN(16), service action 0x10.
#[derive(Debug, Clone, Copy)]
pub struct ReadCapacity16 {
    alloc_len: u32,
}

impl ReadCapacity16 {
    /// Allocation length in bytes (32 is the full parameter data).
    pub fn new(alloc_len: u32) -> Self {
        ReadCapacity16 { alloc_len }
    }
    /// The 16-byte CDB: bytes 10-13 allocation length.
    pub fn build(self) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[0] = opcode::SERVICE_ACTION_IN_16;
        c[1] = 0x10;
        put_u32(&mut c, 10, self.alloc_len);
        c
    }
}

/// The fields READ and WRITE share: their 10- and 16-byte layouts are the
/// same but for the opcode (SBC-4 5.13/5.15 and 5.40/5.42: byte 1 DPO bit 4,
/// FUA bit 3; (10): bytes 2-5 LBA, 7-8 transfer length; (16): bytes 2-9 LBA,
/// 10-13 transfer length).
#[derive(Debug, Clone, Copy)]
struct RwFields {
    lba: u64,
    blocks: u32,
    fua: bool,
    dpo: bool,
}

impl RwFields {
    fn new(lba: Lba, blocks: u32) -> Self {
        RwFields {
            lba: lba.0,
            blocks,
            fua: false,
            dpo: false,
        }
    }
    fn flags(&self) -> u8 {
        (u8::from(self.dpo) << 4) | (u8::from(self.fua) << 3)
    }
    fn build10(&self, op: u8) -> Option<[u8; 10]> {
        let lba = u32::try_from(self.lba).ok()?;
        let len = u16::try_from(self.blocks).ok()?;
        let mut c = [0u8; 10];
        c[0] = op;
        c[1] = self.flags();
        put_u32(&mut c, 2, lba);
        put_u16(&mut c, 7, len);
        Some(c)
    }
    fn build16(&self, op: u8) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[0] = op;
        c[1] = self.flags();
        put_u64(&mut c, 2, self.lba);
        put_u32(&mut c, 10, self.blocks);
        c
    }
}

/// Defines READ or WRITE over [`RwFields`] with its opcodes.
macro_rules! rw_cdb {
    ($(#[$doc:meta])* $name:ident, $op10:expr, $op16:expr, $new_doc:literal, $fua_doc:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name(RwFields);

        impl $name {
            #[doc = $new_doc]
            pub fn new(lba: Lba, blocks: u32) -> Self {
                $name(RwFields::new(lba, blocks))
            }
            #[doc = $fua_doc]
            pub fn fua(mut self, on: bool) -> Self {
                self.0.fua = on;
                self
            }
            /// Disable page out: do not keep the data in the cache.
            pub fn dpo(mut self, on: bool) -> Self {
                self.0.dpo = on;
                self
            }
            /// The 10-byte form; `None` when the LBA or the length does not fit.
            pub fn build10(self) -> Option<[u8; 10]> {
                self.0.build10($op10)
            }
            /// The 16-byte form.
            pub fn build16(self) -> [u8; 16] {
                self.0.build16($op16)
            }
        }
    };
}

rw_cdb!(
    /// READ(10) / READ(16) (SBC-4 5.13, 5.15).
    Read,
    opcode::READ_10,
    opcode::READ_16,
    "Read `blocks` logical blocks from `lba`.",
    "Force unit access: read from the medium, not the cache."
);

rw_cdb!(
    /// WRITE(10) / WRITE(16) (SBC-4 5.40, 5.42).
    Write,
    opcode::WRITE_10,
    opcode::WRITE_16,
    "Write `blocks` logical blocks at `lba`.",
    "Force unit access: complete only when the data is on the medium."
);

/// WRITE SAME(10) (0x41) and WRITE SAME(16) (0x93), SBC-4 5.48 / 5.49: one
/// logical block of data is written to `blocks` blocks from `lba`.
/// `blocks` = 0 means "to the end of the medium" in the standard; drivelab's
/// helpers never send 0.
#[derive(Debug, Clone, Copy)]
pub struct WriteSame {
    lba: u64,
    blocks: u32,
    unmap: bool,
    anchor: bool,
    ndob: bool,
}

impl WriteSame {
    /// Write the data-out block to `blocks` blocks starting at `lba`.
    pub fn new(lba: Lba, blocks: u32) -> Self {
        WriteSame {
            lba: lba.0,
            blocks,
            unmap: false,
            anchor: false,
            ndob: false,
        }
    }
    /// UNMAP bit: the device may deallocate the blocks instead of writing
    /// (the data block must then be zero, or NDOB set).
    pub fn unmap(mut self, on: bool) -> Self {
        self.unmap = on;
        self
    }
    /// ANCHOR bit: anchor instead of deallocate.
    pub fn anchor(mut self, on: bool) -> Self {
        self.anchor = on;
        self
    }
    /// NDOB (no data-out buffer, WRITE SAME(16) only): write zeroes without
    /// sending a block.
    pub fn ndob(mut self, on: bool) -> Self {
        self.ndob = on;
        self
    }
    /// WRITE SAME(10): byte 1 ANCHOR bit 4, UNMAP bit 3; bytes 2-5 LBA;
    /// bytes 7-8 number of blocks. `None` when LBA or count does not fit.
    pub fn build10(self) -> Option<[u8; 10]> {
        let lba = u32::try_from(self.lba).ok()?;
        let len = u16::try_from(self.blocks).ok()?;
        let mut c = [0u8; 10];
        c[0] = opcode::WRITE_SAME_10;
        c[1] = (u8::from(self.anchor) << 4) | (u8::from(self.unmap) << 3);
        put_u32(&mut c, 2, lba);
        put_u16(&mut c, 7, len);
        Some(c)
    }
    /// WRITE SAME(16): byte 1 ANCHOR bit 4, UNMAP bit 3, NDOB bit 0; bytes
    /// 2-9 LBA; bytes 10-13 number of blocks.
    pub fn build16(self) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[0] = opcode::WRITE_SAME_16;
        c[1] = (u8::from(self.anchor) << 4) | (u8::from(self.unmap) << 3) | u8::from(self.ndob);
        put_u64(&mut c, 2, self.lba);
        put_u32(&mut c, 10, self.blocks);
        c
    }
}

/// BYTCHK of VERIFY and WRITE AND VERIFY (SBC-4 5.34, table 103): what the
/// device compares the medium with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteCheck {
    /// 00b: a medium verification, no data is sent or compared.
    None,
    /// 01b: the data sent (one block per block verified) is compared.
    Each,
    /// 11b: one block is sent and compared with every block verified.
    Same,
}

impl ByteCheck {
    /// The two-bit field value.
    pub fn code(self) -> u8 {
        match self {
            ByteCheck::None => 0b00,
            ByteCheck::Each => 0b01,
            ByteCheck::Same => 0b11,
        }
    }
}

/// VERIFY(10) (0x2F) and VERIFY(16) (0x8F), SBC-4 5.33 / 5.35: check
/// `blocks` blocks from `lba` on the medium, comparing them with data sent
/// as [`ByteCheck`] says. Byte 1 bits 2:1 BYTCHK; (10): bytes 2-5 LBA,
/// 7-8 verification length; (16): bytes 2-9 LBA, 10-13 verification length.
#[derive(Debug, Clone, Copy)]
pub struct Verify {
    lba: u64,
    blocks: u32,
    bytchk: ByteCheck,
}

impl Verify {
    /// Verify `blocks` blocks from `lba` on the medium alone (BYTCHK 00b).
    pub fn new(lba: Lba, blocks: u32) -> Self {
        Verify {
            lba: lba.0,
            blocks,
            bytchk: ByteCheck::None,
        }
    }
    /// What to compare with.
    pub fn bytchk(mut self, b: ByteCheck) -> Self {
        self.bytchk = b;
        self
    }
    /// The 10-byte form; `None` when the LBA or the length does not fit.
    pub fn build10(self) -> Option<[u8; 10]> {
        let lba = u32::try_from(self.lba).ok()?;
        let len = u16::try_from(self.blocks).ok()?;
        let mut c = [0u8; 10];
        c[0] = opcode::VERIFY_10;
        c[1] = self.bytchk.code() << 1;
        put_u32(&mut c, 2, lba);
        put_u16(&mut c, 7, len);
        Some(c)
    }
    /// The 16-byte form.
    pub fn build16(self) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[0] = opcode::VERIFY_16;
        c[1] = self.bytchk.code() << 1;
        put_u64(&mut c, 2, self.lba);
        put_u32(&mut c, 10, self.blocks);
        c
    }
}

/// WRITE AND VERIFY(10) (0x2E) and (16) (0x8E), SBC-4 5.44 / 5.46: write
/// `blocks` blocks at `lba`, then verify them on the medium (BYTCHK 00b:
/// no second comparison of the data). The LBA and length fields sit where
/// WRITE's do.
#[derive(Debug, Clone, Copy)]
pub struct WriteAndVerify(RwFields);

impl WriteAndVerify {
    /// Write and verify `blocks` blocks at `lba`.
    pub fn new(lba: Lba, blocks: u32) -> Self {
        WriteAndVerify(RwFields::new(lba, blocks))
    }
    /// The 10-byte form; `None` when the LBA or the length does not fit.
    pub fn build10(self) -> Option<[u8; 10]> {
        self.0.build10(opcode::WRITE_AND_VERIFY_10)
    }
    /// The 16-byte form.
    pub fn build16(self) -> [u8; 16] {
        self.0.build16(opcode::WRITE_AND_VERIFY_16)
    }
}

/// WRITE STREAM(16) (0x9A, SBC-4 5.47): write `blocks` blocks at `lba`
/// into stream `stream_id`. Byte 1 FUA bit 3; bytes 2-9 LBA; bytes 10-11
/// STR_ID; bytes 12-13 transfer length (16 bits).
#[derive(Debug, Clone, Copy)]
pub struct WriteStream {
    lba: u64,
    blocks: u16,
    stream_id: u16,
    fua: bool,
}

impl WriteStream {
    /// Write `blocks` blocks at `lba` into stream `stream_id`.
    pub fn new(lba: Lba, blocks: u16, stream_id: u16) -> Self {
        WriteStream {
            lba: lba.0,
            blocks,
            stream_id,
            fua: false,
        }
    }
    /// Force unit access.
    pub fn fua(mut self, on: bool) -> Self {
        self.fua = on;
        self
    }
    /// The CDB.
    pub fn build(self) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[0] = opcode::WRITE_STREAM_16;
        c[1] = u8::from(self.fua) << 3;
        put_u64(&mut c, 2, self.lba);
        put_u16(&mut c, 10, self.stream_id);
        put_u16(&mut c, 12, self.blocks);
        c
    }
}

/// UNMAP (0x42, SBC-4 5.32). The parameter list comes from
/// [`UnmapParameterList`].
#[derive(Debug, Clone, Copy)]
pub struct Unmap {
    param_len: u16,
    anchor: bool,
}

impl Unmap {
    /// UNMAP with a parameter list of `param_len` bytes.
    pub fn new(param_len: u16) -> Self {
        Unmap {
            param_len,
            anchor: false,
        }
    }
    /// ANCHOR bit (byte 1 bit 0).
    pub fn anchor(mut self, on: bool) -> Self {
        self.anchor = on;
        self
    }
    /// The 10-byte CDB: bytes 7-8 parameter list length.
    pub fn build(self) -> [u8; 10] {
        let mut c = [0u8; 10];
        c[0] = opcode::UNMAP;
        c[1] = u8::from(self.anchor);
        put_u16(&mut c, 7, self.param_len);
        c
    }
}

/// The UNMAP parameter list (SBC-4 5.32.2): an 8-byte header and one
/// 16-byte block descriptor per range (LBA, 8 bytes; count, 4 bytes).
#[derive(Debug, Clone, Default)]
pub struct UnmapParameterList {
    ranges: Vec<(u64, u32)>,
}

impl UnmapParameterList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }
    /// Add the range of `blocks` blocks from `lba`.
    pub fn range(mut self, lba: Lba, blocks: u32) -> Self {
        self.ranges.push((lba.0, blocks));
        self
    }
    /// The list's bytes: bytes 0-1 UNMAP DATA LENGTH (total - 2), bytes 2-3
    /// BLOCK DESCRIPTOR DATA LENGTH (16 x ranges), then the descriptors.
    pub fn build(&self) -> Vec<u8> {
        let n = self.ranges.len();
        let mut b = vec![0u8; 8 + 16 * n];
        let total = b.len();
        put_u16(&mut b, 0, (total - 2) as u16);
        put_u16(&mut b, 2, (16 * n) as u16);
        for (i, (lba, blocks)) in self.ranges.iter().enumerate() {
            let at = 8 + 16 * i;
            put_u64(&mut b, at, *lba);
            put_u32(&mut b, at + 8, *blocks);
        }
        b
    }
}

/// SYNCHRONIZE CACHE(10) (0x35, SBC-4 5.24). LBA 0 and 0 blocks (the
/// defaults) mean the whole medium.
#[derive(Debug, Clone, Copy, Default)]
pub struct SynchronizeCache10 {
    lba: u32,
    blocks: u16,
    immed: bool,
}

impl SynchronizeCache10 {
    /// Synchronize the whole cache.
    pub fn new() -> Self {
        Self::default()
    }
    /// Restrict to `blocks` blocks from `lba`.
    pub fn range(mut self, lba: u32, blocks: u16) -> Self {
        self.lba = lba;
        self.blocks = blocks;
        self
    }
    /// IMMED bit (byte 1 bit 1): return before the flush completes.
    pub fn immed(mut self, on: bool) -> Self {
        self.immed = on;
        self
    }
    /// The 10-byte CDB.
    pub fn build(self) -> [u8; 10] {
        let mut c = [0u8; 10];
        c[0] = opcode::SYNCHRONIZE_CACHE_10;
        c[1] = u8::from(self.immed) << 1;
        put_u32(&mut c, 2, self.lba);
        put_u16(&mut c, 7, self.blocks);
        c
    }
}

/// SANITIZE service actions (SBC-4 5.30).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SanitizeAction {
    /// 0x01: overwrite with a pattern (needs a parameter list).
    Overwrite,
    /// 0x02: block erase.
    BlockErase,
    /// 0x03: cryptographic erase.
    CryptoErase,
    /// 0x1F: exit failure mode.
    ExitFailureMode,
}

impl SanitizeAction {
    /// The 5-bit service action code.
    pub fn code(self) -> u8 {
        match self {
            SanitizeAction::Overwrite => 0x01,
            SanitizeAction::BlockErase => 0x02,
            SanitizeAction::CryptoErase => 0x03,
            SanitizeAction::ExitFailureMode => 0x1F,
        }
    }
}

/// SANITIZE (0x48, SBC-4 5.30).
#[derive(Debug, Clone, Copy)]
pub struct Sanitize {
    action: SanitizeAction,
    immed: bool,
    ause: bool,
    param_len: u16,
}

impl Sanitize {
    /// A SANITIZE with service action `action`.
    pub fn new(action: SanitizeAction) -> Self {
        Sanitize {
            action,
            immed: false,
            ause: false,
            param_len: 0,
        }
    }
    /// IMMED (byte 1 bit 7): return at once; poll with REQUEST SENSE.
    pub fn immed(mut self, on: bool) -> Self {
        self.immed = on;
        self
    }
    /// AUSE (byte 1 bit 5): allow EXIT FAILURE MODE after a failure.
    pub fn ause(mut self, on: bool) -> Self {
        self.ause = on;
        self
    }
    /// Parameter list length in bytes (overwrite only; bytes 7-8).
    pub fn param_len(mut self, len: u16) -> Self {
        self.param_len = len;
        self
    }
    /// The 10-byte CDB.
    pub fn build(self) -> [u8; 10] {
        let mut c = [0u8; 10];
        c[0] = opcode::SANITIZE;
        c[1] = (u8::from(self.immed) << 7) | (u8::from(self.ause) << 5) | self.action.code();
        put_u16(&mut c, 7, self.param_len);
        c
    }
}

/// REPORT SUPPORTED OPERATION CODES (MAINTENANCE IN 0xA3 / 0x0C, SPC-5
/// 6.35) for one command: reporting option 1 (opcode only) or 2 (opcode and
/// service action).
#[derive(Debug, Clone, Copy)]
pub struct ReportSupportedOpcode {
    opcode: u8,
    service_action: Option<u16>,
    alloc_len: u32,
}

impl ReportSupportedOpcode {
    /// Ask whether `opcode` is supported.
    pub fn new(opcode: u8) -> Self {
        ReportSupportedOpcode {
            opcode,
            service_action: None,
            alloc_len: 64,
        }
    }
    /// Ask about `service_action` of the opcode (reporting option 2).
    pub fn service_action(mut self, sa: u16) -> Self {
        self.service_action = Some(sa);
        self
    }
    /// Allocation length in bytes (default 64).
    pub fn alloc_len(mut self, len: u32) -> Self {
        self.alloc_len = len;
        self
    }
    /// The 12-byte CDB: byte 2 reporting options, byte 3 requested opcode,
    /// bytes 4-5 requested service action, bytes 6-9 allocation length.
    pub fn build(self) -> [u8; 12] {
        let mut c = [0u8; 12];
        c[0] = opcode::MAINTENANCE_IN;
        c[1] = 0x0C;
        c[2] = if self.service_action.is_some() { 2 } else { 1 };
        c[3] = self.opcode;
        put_u16(&mut c, 4, self.service_action.unwrap_or(0));
        put_u32(&mut c, 6, self.alloc_len);
        c
    }
}

/// What REPORT SUPPORTED OPERATION CODES said about one command (the
/// SUPPORT field, byte 1 bits 2:0 of the one-command answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpcodeSupport {
    /// 000b: the device does not know.
    NotAvailable,
    /// 001b: not supported.
    NotSupported,
    /// 011b: supported as the standard says.
    Supported,
    /// 101b: supported in a vendor-specific way.
    SupportedVendor,
    /// Any other value.
    Reserved(u8),
}

impl OpcodeSupport {
    /// Decode the one-command parameter data.
    pub fn parse(data: &[u8]) -> Option<OpcodeSupport> {
        let b = *data.get(1)? & 0x07;
        Some(match b {
            0 => OpcodeSupport::NotAvailable,
            1 => OpcodeSupport::NotSupported,
            3 => OpcodeSupport::Supported,
            5 => OpcodeSupport::SupportedVendor,
            x => OpcodeSupport::Reserved(x),
        })
    }
    /// Whether the command may be used.
    pub fn is_supported(self) -> bool {
        matches!(
            self,
            OpcodeSupport::Supported | OpcodeSupport::SupportedVendor
        )
    }
}

// ---------------------------------------------------------------------------
// Decoders
// ---------------------------------------------------------------------------

/// Peripheral device type (byte 0 bits 4:0 of INQUIRY data) in words.
pub fn peripheral_type_name(t: u8) -> &'static str {
    match t {
        0x00 => "direct-access block device",
        0x01 => "sequential-access (tape)",
        0x05 => "CD/DVD",
        0x07 => "optical memory",
        0x08 => "medium changer",
        0x0C => "storage array controller",
        0x0D => "enclosure services",
        0x0E => "simplified direct-access",
        0x11 => "object-based storage",
        0x14 => "host-managed zoned block device",
        0x1E => "well-known logical unit",
        0x1F => "unknown or no device type",
        _ => "other device type",
    }
}

/// Standard INQUIRY data (SPC-5 6.7.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StandardInquiry {
    /// Peripheral qualifier (byte 0 bits 7:5); 0 = connected.
    pub peripheral_qualifier: u8,
    /// Peripheral device type (byte 0 bits 4:0); 0 = disk.
    pub peripheral_type: u8,
    /// The device type in words.
    pub peripheral_type_name: String,
    /// Removable medium (byte 1 bit 7).
    pub removable: bool,
    /// VERSION (byte 2): the SPC version claimed.
    pub version: u8,
    /// T10 vendor identification (bytes 8-15), trimmed. "ATA" for a disk
    /// behind the Linux SATL.
    pub vendor: String,
    /// Product identification (bytes 16-31), trimmed.
    pub product: String,
    /// Product revision level (bytes 32-35), trimmed.
    pub revision: String,
}

impl StandardInquiry {
    /// Decode; `None` when shorter than the 36 bytes holding the strings.
    pub fn parse(d: &[u8]) -> Option<StandardInquiry> {
        if d.len() < 36 {
            return None;
        }
        let t = d[0] & 0x1F;
        Some(StandardInquiry {
            peripheral_qualifier: d[0] >> 5,
            peripheral_type: t,
            peripheral_type_name: peripheral_type_name(t).to_string(),
            removable: d[1] & 0x80 != 0,
            version: d[2],
            vendor: ascii_field(&d[8..16]),
            product: ascii_field(&d[16..32]),
            revision: ascii_field(&d[32..36]),
        })
    }
}

/// The payload of a VPD page after its 4-byte header, bounded by PAGE
/// LENGTH (bytes 2-3) and by what was actually returned.
fn vpd_payload(d: &[u8], page: u8) -> Option<&[u8]> {
    if d.len() < 4 || d[1] != page {
        return None;
    }
    let len = usize::from(get_u16(d, 2));
    let end = (4 + len).min(d.len());
    Some(&d[4..end])
}

/// VPD page 0x00: the list of supported VPD pages.
pub fn parse_supported_vpd_pages(d: &[u8]) -> Option<Vec<u8>> {
    vpd_payload(d, 0x00).map(<[u8]>::to_vec)
}

/// VPD page 0x80: the unit serial number, trimmed.
pub fn parse_unit_serial(d: &[u8]) -> Option<String> {
    vpd_payload(d, 0x80).map(ascii_field)
}

/// One designation descriptor of VPD page 0x83 (SPC-5 7.7.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Designator {
    /// CODE SET (byte 0 bits 3:0): 1 binary, 2 ASCII, 3 UTF-8.
    pub code_set: u8,
    /// ASSOCIATION (byte 1 bits 5:4): 0 logical unit, 1 target port, 2 target device.
    pub association: u8,
    /// DESIGNATOR TYPE (byte 1 bits 3:0): 1 T10 vendor ID, 2 EUI-64, 3 NAA, 8 SCSI name, 0xA UUID.
    pub designator_type: u8,
    /// The type in words ("naa", "t10-vendor-id", ...).
    pub type_name: String,
    /// The designator: text for ASCII/UTF-8 code sets, lowercase hex otherwise
    /// (for NAA, the hex string that Linux shows in /dev/disk/by-id/wwn-0x…).
    pub value: String,
}

/// VPD page 0x83: the designation descriptors (device identification).
pub fn parse_device_identification(d: &[u8]) -> Option<Vec<Designator>> {
    let p = vpd_payload(d, 0x83)?;
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= p.len() {
        let code_set = p[at] & 0x0F;
        let association = (p[at + 1] >> 4) & 0x03;
        let designator_type = p[at + 1] & 0x0F;
        let len = usize::from(p[at + 3]);
        let end = (at + 4 + len).min(p.len());
        let raw = &p[at + 4..end];
        let value = if code_set == 2 || code_set == 3 {
            ascii_field(raw)
        } else {
            raw.iter().map(|b| format!("{b:02x}")).collect()
        };
        let type_name = match designator_type {
            0 => "vendor-specific",
            1 => "t10-vendor-id",
            2 => "eui-64",
            3 => "naa",
            4 => "relative-target-port",
            5 => "target-port-group",
            6 => "logical-unit-group",
            7 => "md5",
            8 => "scsi-name-string",
            9 => "protocol-specific-port",
            0xA => "uuid",
            _ => "reserved",
        };
        out.push(Designator {
            code_set,
            association,
            designator_type,
            type_name: type_name.to_string(),
            value,
        });
        at += 4 + len;
    }
    Some(out)
}

/// VPD page 0xB0, Block Limits (SBC-4 6.6.4). Lengths are in logical
/// blocks; 0 means "not reported / no limit".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BlockLimits {
    /// WSNZ (byte 4 bit 0): WRITE SAME with 0 blocks is refused.
    pub wsnz: bool,
    /// OPTIMAL TRANSFER LENGTH GRANULARITY (bytes 6-7), blocks.
    pub optimal_transfer_granularity: u16,
    /// MAXIMUM TRANSFER LENGTH (bytes 8-11), blocks.
    pub max_transfer_length: u32,
    /// OPTIMAL TRANSFER LENGTH (bytes 12-15), blocks.
    pub optimal_transfer_length: u32,
    /// MAXIMUM UNMAP LBA COUNT (bytes 20-23), blocks.
    pub max_unmap_lba_count: u32,
    /// MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT (bytes 24-27).
    pub max_unmap_descriptors: u32,
    /// OPTIMAL UNMAP GRANULARITY (bytes 28-31), blocks.
    pub unmap_granularity: u32,
    /// UNMAP GRANULARITY ALIGNMENT (bytes 32-35 bits 30:0), when UGAVALID.
    pub unmap_granularity_alignment: Option<u32>,
    /// MAXIMUM WRITE SAME LENGTH (bytes 36-43), blocks.
    pub max_write_same_length: u64,
}

impl BlockLimits {
    /// Decode; fields beyond the returned length read as 0.
    pub fn parse(d: &[u8]) -> Option<BlockLimits> {
        let p = vpd_payload(d, 0xB0)?;
        // Work in page offsets (payload index + 4), zero-extended to 64 bytes.
        let mut b = [0u8; 64];
        let n = p.len().min(60);
        b[4..4 + n].copy_from_slice(&p[..n]);
        let uga = get_u32(&b, 32);
        Some(BlockLimits {
            wsnz: b[4] & 1 != 0,
            optimal_transfer_granularity: get_u16(&b, 6),
            max_transfer_length: get_u32(&b, 8),
            optimal_transfer_length: get_u32(&b, 12),
            max_unmap_lba_count: get_u32(&b, 20),
            max_unmap_descriptors: get_u32(&b, 24),
            unmap_granularity: get_u32(&b, 28),
            unmap_granularity_alignment: (uga & 0x8000_0000 != 0).then_some(uga & 0x7FFF_FFFF),
            max_write_same_length: get_u64(&b, 36),
        })
    }
}

/// VPD page 0xB1, Block Device Characteristics (SBC-4 6.6.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockCharacteristics {
    /// MEDIUM ROTATION RATE (bytes 4-5): 0 not reported, 1 non-rotating
    /// (solid state), else revolutions per minute.
    pub rotation_rate: u16,
    /// NOMINAL FORM FACTOR (byte 7 bits 3:0): 1 5.25", 2 3.5", 3 2.5", 4 1.8", 5 < 1.8".
    pub form_factor: u8,
}

impl BlockCharacteristics {
    /// Decode.
    pub fn parse(d: &[u8]) -> Option<BlockCharacteristics> {
        let p = vpd_payload(d, 0xB1)?;
        if p.len() < 4 {
            return None;
        }
        Some(BlockCharacteristics {
            rotation_rate: u16::from_be_bytes([p[0], p[1]]),
            form_factor: p[3] & 0x0F,
        })
    }
}

/// VPD page 0xB2, Logical Block Provisioning (SBC-4 6.6.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogicalBlockProvisioning {
    /// THRESHOLD EXPONENT (byte 4).
    pub threshold_exponent: u8,
    /// LBPU (byte 5 bit 7): UNMAP is supported.
    pub lbpu: bool,
    /// LBPWS (byte 5 bit 6): WRITE SAME(16) with UNMAP is supported.
    pub lbpws: bool,
    /// LBPWS10 (byte 5 bit 5): WRITE SAME(10) with UNMAP is supported.
    pub lbpws10: bool,
    /// LBPRZ (byte 5 bits 4:2): unmapped blocks read as zero when nonzero
    /// (SBC-4 widened it from 1 bit to 3; bit 4 is the old bit 2's place
    /// only in SBC-4 — older devices set bit 2, which reads here as 1).
    pub lbprz: u8,
    /// ANC_SUP (byte 5 bit 1): ANCHOR supported.
    pub anc_sup: bool,
    /// DP (byte 5 bit 0): a provisioning group descriptor follows.
    pub dp: bool,
    /// PROVISIONING TYPE (byte 6 bits 2:0): 0 fully provisioned, 1 resource, 2 thin.
    pub provisioning_type: u8,
}

impl LogicalBlockProvisioning {
    /// Decode.
    pub fn parse(d: &[u8]) -> Option<LogicalBlockProvisioning> {
        let p = vpd_payload(d, 0xB2)?;
        if p.len() < 3 {
            return None;
        }
        Some(LogicalBlockProvisioning {
            threshold_exponent: p[0],
            lbpu: p[1] & 0x80 != 0,
            lbpws: p[1] & 0x40 != 0,
            lbpws10: p[1] & 0x20 != 0,
            lbprz: (p[1] >> 2) & 0x07,
            anc_sup: p[1] & 0x02 != 0,
            dp: p[1] & 0x01 != 0,
            provisioning_type: p[2] & 0x07,
        })
    }
}

/// The answer to READ CAPACITY(10) or (16) (SBC-4 5.20.2, 5.21.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capacity {
    /// RETURNED LOGICAL BLOCK ADDRESS: the last LBA (capacity - 1).
    pub last_lba: u64,
    /// LOGICAL BLOCK LENGTH IN BYTES.
    pub block_length: u32,
    /// LBPME (RC16 byte 14 bit 7): logical block provisioning management
    /// (thin provisioning / UNMAP) is enabled. `false` from RC10.
    pub lbpme: bool,
    /// LBPRZ (RC16 byte 14 bit 6): unmapped blocks read as zeroes.
    pub lbprz: bool,
    /// LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT (RC16 byte 13 bits 3:0).
    pub physical_exponent: u8,
    /// LOWEST ALIGNED LOGICAL BLOCK ADDRESS (RC16 bytes 14-15, 14 bits).
    pub lowest_aligned_lba: u16,
    /// PROT_EN (RC16 byte 12 bit 0): protection information enabled.
    pub protection: bool,
    /// Whether this came from READ CAPACITY(16).
    pub from_rc16: bool,
}

impl Capacity {
    /// Decode READ CAPACITY(10) parameter data (8 bytes).
    pub fn parse10(d: &[u8]) -> Option<Capacity> {
        if d.len() < 8 {
            return None;
        }
        Some(Capacity {
            last_lba: u64::from(get_u32(d, 0)),
            block_length: get_u32(d, 4),
            lbpme: false,
            lbprz: false,
            physical_exponent: 0,
            lowest_aligned_lba: 0,
            protection: false,
            from_rc16: false,
        })
    }
    /// Decode READ CAPACITY(16) parameter data (at least 16 bytes).
    pub fn parse16(d: &[u8]) -> Option<Capacity> {
        if d.len() < 16 {
            return None;
        }
        Some(Capacity {
            last_lba: get_u64(d, 0),
            block_length: get_u32(d, 8),
            lbpme: d[14] & 0x80 != 0,
            lbprz: d[14] & 0x40 != 0,
            physical_exponent: d[13] & 0x0F,
            lowest_aligned_lba: get_u16(d, 14) & 0x3FFF,
            protection: d[12] & 0x01 != 0,
            from_rc16: true,
        })
    }
    /// Number of logical blocks (last LBA + 1).
    pub fn blocks(&self) -> BlockCount {
        BlockCount(self.last_lba.saturating_add(1))
    }
    /// Physical block size in bytes (logical size << exponent).
    pub fn physical_block_length(&self) -> u64 {
        u64::from(self.block_length) << self.physical_exponent
    }
}

// ---------------------------------------------------------------------------
// Helpers that issue one command
// ---------------------------------------------------------------------------

/// Standard INQUIRY.
pub fn inquiry(dev: &SgDevice) -> Result<StandardInquiry, SgError> {
    let mut buf = [0u8; 96];
    let cdb = Inquiry::new(96).build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_in(&mut buf))?;
    r.check(&cdb)?;
    let got = r.transferred(buf.len());
    StandardInquiry::parse(&buf[..got]).ok_or_else(|| SgError::ShortData {
        command: command_name(&cdb),
        got,
    })
}

/// VPD page `page` as returned (4-byte header included), up to 4 KiB.
pub fn vpd(dev: &SgDevice, page: u8) -> Result<Vec<u8>, SgError> {
    let mut buf = vec![0u8; 4096];
    let cdb = Inquiry::new(4096).vpd_page(page).build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_in(&mut buf))?;
    r.check(&cdb)?;
    let got = r.transferred(buf.len());
    if got < 4 || buf[1] != page {
        return Err(SgError::ShortData {
            command: format!("INQUIRY VPD page 0x{page:02X}"),
            got,
        });
    }
    let len = (4 + usize::from(get_u16(&buf, 2))).min(got);
    buf.truncate(len);
    Ok(buf)
}

/// READ CAPACITY(16), falling back to READ CAPACITY(10) when the device
/// refuses the 16-byte form.
pub fn read_capacity(dev: &SgDevice) -> Result<Capacity, SgError> {
    let mut buf = [0u8; 32];
    let cdb = ReadCapacity16::new(32).build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_in(&mut buf))?;
    match r.check(&cdb) {
        Ok(()) => {
            let got = r.transferred(buf.len());
            return Capacity::parse16(&buf[..got]).ok_or(SgError::ShortData {
                command: command_name(&cdb),
                got,
            });
        }
        Err(SgError::NotSupported { .. }) => {}
        Err(e) => return Err(e),
    }
    read_capacity10(dev)
}

/// READ CAPACITY(10) alone.
pub fn read_capacity10(dev: &SgDevice) -> Result<Capacity, SgError> {
    let mut buf = [0u8; 8];
    let cdb = ReadCapacity10::new().build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_in(&mut buf))?;
    r.check(&cdb)?;
    let got = r.transferred(buf.len());
    Capacity::parse10(&buf[..got]).ok_or(SgError::ShortData {
        command: command_name(&cdb),
        got,
    })
}

/// REPORT SUPPORTED OPERATION CODES for one opcode (and service action).
pub fn report_opcode(
    dev: &SgDevice,
    op: u8,
    service_action: Option<u16>,
) -> Result<OpcodeSupport, SgError> {
    let mut buf = [0u8; 64];
    let mut b = ReportSupportedOpcode::new(op).alloc_len(64);
    if let Some(sa) = service_action {
        b = b.service_action(sa);
    }
    let cdb = b.build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_in(&mut buf))?;
    r.check(&cdb)?;
    let got = r.transferred(buf.len());
    OpcodeSupport::parse(&buf[..got]).ok_or(SgError::ShortData {
        command: command_name(&cdb),
        got,
    })
}

/// Options for [`write_same_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteSameOptions {
    /// Use WRITE SAME(16) (else (10); default false = (10)).
    pub use16: bool,
    /// Set the UNMAP bit.
    pub unmap: bool,
    /// Set NDOB (16 only): no data block is sent; the device writes zeroes.
    pub ndob: bool,
}

/// WRITE SAME: write `pattern_block` (exactly one logical block) to
/// `blocks` blocks from `lba`, with WRITE SAME(16) when `use16` else (10).
/// `blocks` must be 1..=65535 for (10) and >= 1 for (16).
pub fn write_same(
    dev: &SgDevice,
    lba: Lba,
    blocks: BlockCount,
    pattern_block: &[u8],
    use16: bool,
) -> Result<ScsiResult, SgError> {
    write_same_with(
        dev,
        lba,
        blocks,
        pattern_block,
        WriteSameOptions {
            use16,
            ..Default::default()
        },
    )
}

/// WRITE SAME with all options; see [`write_same`].
pub fn write_same_with(
    dev: &SgDevice,
    lba: Lba,
    blocks: BlockCount,
    pattern_block: &[u8],
    o: WriteSameOptions,
) -> Result<ScsiResult, SgError> {
    let n = u32::try_from(blocks.0)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            SgError::InvalidRequest(format!(
                "WRITE SAME block count {} must be 1..=4294967295",
                blocks.0
            ))
        })?;
    let b = WriteSame::new(lba, n)
        .unmap(o.unmap)
        .ndob(o.ndob && o.use16);
    let cdb: Vec<u8> = if o.use16 {
        b.build16().to_vec()
    } else {
        b.build10()
            .ok_or_else(|| {
                SgError::InvalidRequest(format!(
                    "WRITE SAME(10) takes LBA < 2^32 and 1..=65535 blocks (got LBA {} count {}); use --cdb 16",
                    lba.0, blocks.0
                ))
            })?
            .to_vec()
    };
    let mut cmd = ScsiCommand::new(&cdb);
    if !(o.ndob && o.use16) {
        cmd = cmd.data_out(pattern_block);
    }
    let r = dev.execute(&mut cmd)?;
    r.check(&cdb)?;
    Ok(r)
}

/// UNMAP the given ranges (one descriptor each; counts up to 2^32-1 blocks).
pub fn unmap(dev: &SgDevice, ranges: &[(Lba, BlockCount)]) -> Result<ScsiResult, SgError> {
    let mut list = UnmapParameterList::new();
    for &(lba, n) in ranges {
        let n = u32::try_from(n.0).map_err(|_| {
            SgError::InvalidRequest(format!(
                "UNMAP range of {} blocks exceeds 2^32-1; split it",
                n.0
            ))
        })?;
        list = list.range(lba, n);
    }
    let params = list.build();
    let len = u16::try_from(params.len()).map_err(|_| {
        SgError::InvalidRequest("UNMAP parameter list longer than 65535 bytes".into())
    })?;
    let cdb = Unmap::new(len).build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_out(&params))?;
    r.check(&cdb)?;
    Ok(r)
}

/// READ `blocks` blocks from `lba` into `buf` (whose length must be
/// `blocks` x block size). READ(10) when it fits, else READ(16).
pub fn read(
    dev: &SgDevice,
    lba: Lba,
    blocks: BlockCount,
    buf: &mut [u8],
) -> Result<ScsiResult, SgError> {
    let n = u32::try_from(blocks.0).map_err(|_| {
        SgError::InvalidRequest(format!("READ of {} blocks exceeds 2^32-1", blocks.0))
    })?;
    let b = Read::new(lba, n);
    let cdb: Vec<u8> = match b.build10() {
        Some(c) => c.to_vec(),
        None => b.build16().to_vec(),
    };
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_in(buf))?;
    r.check(&cdb)?;
    Ok(r)
}

/// WRITE `data` (whole blocks) at `lba`, optionally with FUA.
pub fn write(
    dev: &SgDevice,
    lba: Lba,
    blocks: BlockCount,
    data: &[u8],
    fua: bool,
) -> Result<ScsiResult, SgError> {
    let n = u32::try_from(blocks.0).map_err(|_| {
        SgError::InvalidRequest(format!("WRITE of {} blocks exceeds 2^32-1", blocks.0))
    })?;
    let b = Write::new(lba, n).fua(fua);
    let cdb: Vec<u8> = match b.build10() {
        Some(c) => c.to_vec(),
        None => b.build16().to_vec(),
    };
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_out(data))?;
    r.check(&cdb)?;
    Ok(r)
}

/// SYNCHRONIZE CACHE(10) for the whole medium.
pub fn synchronize_cache(dev: &SgDevice) -> Result<ScsiResult, SgError> {
    let cdb = SynchronizeCache10::new().build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb))?;
    r.check(&cdb)?;
    Ok(r)
}

/// TEST UNIT READY.
pub fn test_unit_ready(dev: &SgDevice) -> Result<ScsiResult, SgError> {
    let cdb = TestUnitReady::new().build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb))?;
    r.check(&cdb)?;
    Ok(r)
}

/// The direction a CDB moves data in, for callers that build raw CDBs.
pub fn direction_of(op: u8) -> DataDirection {
    match op {
        opcode::INQUIRY
        | opcode::REQUEST_SENSE
        | opcode::READ_CAPACITY_10
        | opcode::READ_10
        | opcode::READ_16
        | opcode::SERVICE_ACTION_IN_16
        | opcode::MAINTENANCE_IN => DataDirection::FromDevice,
        opcode::WRITE_10
        | opcode::WRITE_16
        | opcode::WRITE_SAME_10
        | opcode::WRITE_SAME_16
        | opcode::WRITE_AND_VERIFY_10
        | opcode::WRITE_AND_VERIFY_16
        | opcode::WRITE_STREAM_16
        | opcode::UNMAP => DataDirection::ToDevice,
        _ => DataDirection::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each test writes the expected bytes from the standard's table, field by
    // field, rather than from the builder.

    /// A 16-byte CDB with `op` in byte 0, the rest zero.
    fn cdb(op: u8) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[0] = op;
        c
    }

    #[test]
    fn verify_cdbs_match_sbc4_tables() {
        // VERIFY(10), SBC-4 5.33: byte 1 bits 2:1 BYTCHK, bytes 2-5 LBA,
        // bytes 7-8 verification length.
        let c = Verify::new(Lba(0x0102_0304), 20)
            .bytchk(ByteCheck::Each)
            .build10()
            .unwrap();
        assert_eq!(c, [0x2F, 0x02, 0x01, 0x02, 0x03, 0x04, 0, 0x00, 0x14, 0]);
        let c = Verify::new(Lba(7), 1).build10().unwrap();
        assert_eq!(c, [0x2F, 0, 0, 0, 0, 7, 0, 0, 1, 0]);
        let c = Verify::new(Lba(7), 4)
            .bytchk(ByteCheck::Same)
            .build10()
            .unwrap();
        assert_eq!(c[1], 0x06);
        // Too far or too long for (10).
        assert!(Verify::new(Lba(1 << 32), 1).build10().is_none());
        assert!(Verify::new(Lba(0), 65536).build10().is_none());
        // VERIFY(16), SBC-4 5.35: bytes 2-9 LBA, 10-13 verification length.
        let c = Verify::new(Lba(0x0102_0304_0506_0708), 0x0A0B_0C0D)
            .bytchk(ByteCheck::Same)
            .build16();
        let mut want = cdb(0x8F);
        want[1] = 0x06;
        want[2..10].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        want[10..14].copy_from_slice(&[0x0A, 0x0B, 0x0C, 0x0D]);
        assert_eq!(c, want);
        assert_eq!(command_name(&c), "VERIFY(16)");
        assert!(!modifies_medium(&c));
        assert!(!modifies_medium(&Verify::new(Lba(0), 1).build10().unwrap()));
    }

    #[test]
    fn write_and_verify_and_write_stream_cdbs_match_sbc4_tables() {
        let c = WriteAndVerify::new(Lba(0x10), 8).build10().unwrap();
        assert_eq!(c, [0x2E, 0, 0, 0, 0, 0x10, 0, 0, 8, 0]);
        assert!(modifies_medium(&c));
        assert_eq!(command_name(&c), "WRITE AND VERIFY(10)");
        let c = WriteAndVerify::new(Lba(1 << 40), 8).build16();
        let mut want = cdb(0x8E);
        want[2..10].copy_from_slice(&(1u64 << 40).to_be_bytes());
        want[13] = 8;
        assert_eq!(c, want);
        // WRITE STREAM(16), SBC-4 5.47: bytes 10-11 STR_ID, 12-13 length.
        let c = WriteStream::new(Lba(0x20), 0x0304, 0x0102)
            .fua(true)
            .build();
        let mut want = cdb(0x9A);
        want[1] = 0x08;
        want[9] = 0x20;
        want[10..14].copy_from_slice(&[0x01, 0x02, 0x03, 0x04]);
        assert_eq!(c, want);
        assert!(modifies_medium(&c));
        assert_eq!(direction_of(0x9A), DataDirection::ToDevice);
        assert_eq!(
            asc_ascq_name(0x1D, 0x00).as_deref(),
            Some("miscompare during verify operation")
        );
    }

    #[test]
    fn write_class_scsi_opcodes_match_sbc4_spc5_tables() {
        let writes: &[(u8, &str)] = &[
            (0x04, "FORMAT UNIT"),
            (0x07, "REASSIGN BLOCKS"),
            (0x0A, "WRITE(6)"),
            (0x2A, "WRITE(10)"),
            (0x2E, "WRITE AND VERIFY(10)"),
            (0x38, "FORMAT WITH PRESET"),
            (0x3B, "WRITE BUFFER"),
            (0x3F, "WRITE LONG(10)"),
            (0x41, "WRITE SAME(10)"),
            (0x42, "UNMAP"),
            (0x48, "SANITIZE"),
            (0x89, "COMPARE AND WRITE"),
            (0x8A, "WRITE(16)"),
            (0x8B, "ORWRITE(16)"),
            (0x8E, "WRITE AND VERIFY(16)"),
            (0x93, "WRITE SAME(16)"),
            (0x94, "ZBC OUT"),
            (0x9A, "WRITE STREAM(16)"),
            (0x9C, "WRITE ATOMIC(16)"),
            (0x9F, "SERVICE ACTION OUT(16)"),
            (0xAA, "WRITE(12)"),
            (0xAE, "WRITE AND VERIFY(12)"),
            (0xB5, "SECURITY PROTOCOL OUT"),
        ];
        for &(op, name) in writes {
            assert!(modifies_medium(&cdb(op)), "{name} ({op:02X}h)");
        }
        let reads: &[(u8, &str)] = &[
            (0x00, "TEST UNIT READY"),
            (0x03, "REQUEST SENSE"),
            (0x08, "READ(6)"),
            (0x12, "INQUIRY"),
            (0x1A, "MODE SENSE(6)"),
            (0x25, "READ CAPACITY(10)"),
            (0x28, "READ(10)"),
            (0x2F, "VERIFY(10)"),
            (0x35, "SYNCHRONIZE CACHE(10)"),
            (0x3C, "READ BUFFER"),
            (0x4D, "LOG SENSE"),
            (0x5A, "MODE SENSE(10)"),
            (0x88, "READ(16)"),
            (0x8F, "VERIFY(16)"),
            (0x91, "SYNCHRONIZE CACHE(16)"),
            (0x95, "ZBC IN"),
            (0x9E, "SERVICE ACTION IN(16)"),
            (0xA0, "REPORT LUNS"),
            (0xA2, "SECURITY PROTOCOL IN"),
            (0xA3, "MAINTENANCE IN"),
            (0xA8, "READ(12)"),
        ];
        for &(op, name) in reads {
            assert!(!modifies_medium(&cdb(op)), "{name} ({op:02X}h)");
        }
        assert!(!modifies_medium(&[]));
        // Variable length (7Fh): service action in bytes 8-9.
        let mut v = [0u8; 32];
        v[0] = 0x7F;
        for (sa, writes) in [(0x09, false), (0x0A, false), (0x0B, true), (0x0D, true)] {
            v[9] = sa;
            assert_eq!(modifies_medium(&v), writes, "7Fh service action {sa:02X}h");
        }
        // The CDBs this module builds classify as what they do.
        let ws = WriteSame::new(Lba(0), 8);
        assert!(modifies_medium(&ws.build16()));
        assert!(modifies_medium(&ws.build10().unwrap()));
        assert!(!modifies_medium(&Inquiry::new(96).build()));
    }

    #[test]
    fn ata_pass_through_is_classified_by_the_ata_command_it_carries() {
        use crate::ata::{smart_read_log, smart_write_log, AtaPassThrough, Protocol, Taskfile};
        // SCT Write Same goes as SMART WRITE LOG (B0h/D6h); SCT status as
        // SMART READ LOG (B0h/D5h): same ATA command, the feature decides.
        let w = AtaPassThrough::new(Protocol::PioDataOut, smart_write_log(0xE0, 1));
        let r = AtaPassThrough::new(Protocol::PioDataIn, smart_read_log(0xE0, 1));
        assert!(modifies_medium(&w.build16()));
        assert!(!modifies_medium(&r.build16()));
        assert!(modifies_medium(&w.build12().unwrap()));
        assert!(!modifies_medium(&r.build12().unwrap()));
        // Check the byte positions against SAT-5, not the builder: PT16
        // COMMAND byte 14, FEATURES 7:0 byte 4; PT12 COMMAND byte 9,
        // FEATURES byte 3.
        let mut p16 = cdb(0x85);
        p16[14] = 0x35; // WRITE DMA EXT
        assert!(modifies_medium(&p16));
        p16[14] = 0x25; // READ DMA EXT
        assert!(!modifies_medium(&p16));
        p16[14] = 0xB4; // SANITIZE DEVICE
        assert!(!modifies_medium(&p16)); // feature 0000h: SANITIZE STATUS EXT
        p16[4] = 0x14; // OVERWRITE EXT
        assert!(modifies_medium(&p16));
        let mut p12 = [0u8; 12];
        p12[0] = 0xA1;
        p12[9] = 0xB0;
        p12[3] = 0xD4; // SMART EXECUTE OFF-LINE IMMEDIATE
        assert!(modifies_medium(&p12));
        p12[3] = 0xD0; // SMART READ DATA
        assert!(!modifies_medium(&p12));
        p12[9] = 0xF4; // SECURITY ERASE UNIT
        assert!(modifies_medium(&p12));
        let identify = AtaPassThrough::new(Protocol::PioDataIn, Taskfile::new(0xEC));
        assert!(!modifies_medium(&identify.build16()));
        // Too short to show its ATA command: refused rather than guessed.
        assert!(modifies_medium(&p16[..10]));
        assert_eq!(
            command_with_opcode(&w.build16()),
            "ATA PASS-THROUGH(16) (opcode 85h) carrying ATA command B0h feature D6h"
        );
        assert_eq!(
            command_with_opcode(&ws_cdb()),
            "WRITE SAME(16) (opcode 93h)"
        );
    }

    fn ws_cdb() -> [u8; 16] {
        WriteSame::new(Lba(0), 1).build16()
    }

    #[test]
    fn inquiry_cdb_matches_spc5_table() {
        // SPC-5 Table 148: byte 0 opcode 12h, byte 1 bit 0 EVPD, byte 2 PAGE
        // CODE, bytes 3-4 ALLOCATION LENGTH (MSB first), byte 5 CONTROL.
        assert_eq!(Inquiry::new(0x0160).build(), [0x12, 0, 0, 0x01, 0x60, 0]);
        assert_eq!(
            Inquiry::new(252).vpd_page(0xB0).build(),
            [0x12, 1, 0xB0, 0, 252, 0]
        );
    }

    #[test]
    fn read_capacity_cdbs_match_sbc4() {
        assert_eq!(
            ReadCapacity10::new().build(),
            [0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        let c = ReadCapacity16::new(0x0102_0304).build();
        let mut want = [0u8; 16];
        want[0] = 0x9E;
        want[1] = 0x10; // SERVICE ACTION (4:0)
        want[10..14].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(c, want);
    }

    #[test]
    fn read_write_cdbs_carry_lba_length_and_fua() {
        let r10 = Read::new(Lba(0x1122_3344), 0x5566)
            .fua(true)
            .build10()
            .unwrap();
        assert_eq!(r10, [0x28, 0x08, 0x11, 0x22, 0x33, 0x44, 0, 0x55, 0x66, 0]);
        let r16 = Read::new(Lba(0x0102_0304_0506_0708), 0x0A0B_0C0D)
            .dpo(true)
            .build16();
        assert_eq!(
            r16,
            [0x88, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 0x0A, 0x0B, 0x0C, 0x0D, 0, 0]
        );
        assert!(Read::new(Lba(1 << 32), 1).build10().is_none());
        assert!(Read::new(Lba(0), 0x1_0000).build10().is_none());
        let w10 = Write::new(Lba(7), 8).fua(true).build10().unwrap();
        assert_eq!(w10, [0x2A, 0x08, 0, 0, 0, 7, 0, 0, 8, 0]);
        let w16 = Write::new(Lba(0x00FF_FFFF_FFFF), 256).build16();
        assert_eq!(
            w16,
            [0x8A, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 1, 0, 0, 0]
        );
    }

    #[test]
    fn write_same_cdbs_match_sbc4_tables() {
        // SBC-4 WRITE SAME(10): byte 1 bit 4 ANCHOR, bit 3 UNMAP; 2-5 LBA; 7-8 count.
        let c = WriteSame::new(Lba(0xA0B0C0D0), 0x1234)
            .unmap(true)
            .anchor(true)
            .build10()
            .unwrap();
        assert_eq!(c, [0x41, 0x18, 0xA0, 0xB0, 0xC0, 0xD0, 0, 0x12, 0x34, 0]);
        // WRITE SAME(16): byte 1 bit 3 UNMAP, bit 0 NDOB; 2-9 LBA; 10-13 count.
        let c = WriteSame::new(Lba(0x0000_0001_0000_0002), 0x0001_0000)
            .unmap(true)
            .ndob(true)
            .build16();
        assert_eq!(c, [0x93, 0x09, 0, 0, 0, 1, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0]);
        assert!(WriteSame::new(Lba(0), 70000).build10().is_none());
    }

    #[test]
    fn unmap_cdb_and_parameter_list_match_sbc4() {
        assert_eq!(Unmap::new(40).build(), [0x42, 0, 0, 0, 0, 0, 0, 0, 40, 0]);
        let p = UnmapParameterList::new()
            .range(Lba(0x10), 0x20)
            .range(Lba(0x0102_0304_0506_0708), 0xAABB_CCDD)
            .build();
        assert_eq!(p.len(), 8 + 32);
        assert_eq!(&p[0..2], &[0, 38]); // UNMAP DATA LENGTH = n - 2
        assert_eq!(&p[2..4], &[0, 32]); // BLOCK DESCRIPTOR DATA LENGTH
        assert_eq!(&p[4..8], &[0; 4]);
        assert_eq!(
            &p[8..24],
            &[0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 0]
        );
        assert_eq!(
            &p[24..40],
            &[1, 2, 3, 4, 5, 6, 7, 8, 0xAA, 0xBB, 0xCC, 0xDD, 0, 0, 0, 0]
        );
    }

    #[test]
    fn sync_tur_sanitize_rsoc_cdbs() {
        assert_eq!(
            SynchronizeCache10::new().immed(true).build(),
            [0x35, 0x02, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            SynchronizeCache10::new().range(0x01020304, 0x0506).build(),
            [0x35, 0, 1, 2, 3, 4, 0, 5, 6, 0]
        );
        assert_eq!(TestUnitReady::new().build(), [0; 6]);
        assert_eq!(
            Sanitize::new(SanitizeAction::Overwrite)
                .immed(true)
                .ause(true)
                .param_len(0x0204)
                .build(),
            [0x48, 0x80 | 0x20 | 0x01, 0, 0, 0, 0, 0, 0x02, 0x04, 0]
        );
        assert_eq!(Sanitize::new(SanitizeAction::CryptoErase).build()[1], 0x03);
        assert_eq!(Sanitize::new(SanitizeAction::BlockErase).build()[1], 0x02);
        assert_eq!(
            ReportSupportedOpcode::new(0x93).build(),
            [0xA3, 0x0C, 0x01, 0x93, 0, 0, 0, 0, 0, 64, 0, 0]
        );
        assert_eq!(
            ReportSupportedOpcode::new(0x9E)
                .service_action(0x10)
                .alloc_len(0x10000)
                .build(),
            [0xA3, 0x0C, 0x02, 0x9E, 0, 0x10, 0, 1, 0, 0, 0, 0]
        );
        assert_eq!(
            OpcodeSupport::parse(&[0, 0x03, 0, 16]),
            Some(OpcodeSupport::Supported)
        );
        assert_eq!(
            OpcodeSupport::parse(&[0, 0x81, 0, 16]),
            Some(OpcodeSupport::NotSupported)
        );
    }

    #[test]
    fn standard_inquiry_decodes_fields_at_spc_offsets() {
        let mut d = vec![0u8; 36];
        d[0] = 0x00; // qualifier 0, type 0 (disk)
        d[1] = 0x80; // RMB
        d[2] = 0x06;
        d[8..16].copy_from_slice(b"ATA     ");
        d[16..32].copy_from_slice(b"QEMU HARDDISK   ");
        d[32..36].copy_from_slice(b"2.5+");
        let q = StandardInquiry::parse(&d).unwrap();
        assert_eq!(q.vendor, "ATA");
        assert_eq!(q.product, "QEMU HARDDISK");
        assert_eq!(q.revision, "2.5+");
        assert!(q.removable);
        assert_eq!(q.version, 6);
        assert_eq!(q.peripheral_type, 0);
        d[0] = 0x25; // qualifier 1, type 5
        let q = StandardInquiry::parse(&d).unwrap();
        assert_eq!((q.peripheral_qualifier, q.peripheral_type), (1, 5));
        assert!(StandardInquiry::parse(&d[..35]).is_none());
    }

    #[test]
    fn vpd_00_80_83_decode() {
        assert_eq!(
            parse_supported_vpd_pages(&[0, 0x00, 0, 4, 0x00, 0x80, 0x83, 0xB0, 0xFF]).unwrap(),
            vec![0x00, 0x80, 0x83, 0xB0]
        );
        let mut s = vec![0, 0x80, 0, 10];
        s.extend_from_slice(b"  SN12345 ");
        assert_eq!(parse_unit_serial(&s).unwrap(), "SN12345");
        // Two descriptors: NAA (binary, 8 bytes) and T10 vendor ID (ASCII).
        let naa = [
            0x01, 0x03, 0x00, 0x08, 0x50, 0x00, 0xC5, 0x00, 0x12, 0x34, 0x56, 0x78,
        ];
        let mut t10 = vec![0x02, 0x01, 0x00, 0x0C];
        t10.extend_from_slice(b"LINUX   sdX ");
        let mut page = vec![0, 0x83, 0, (naa.len() + t10.len()) as u8];
        page.extend_from_slice(&naa);
        page.extend_from_slice(&t10);
        let ds = parse_device_identification(&page).unwrap();
        assert_eq!(ds.len(), 2);
        assert_eq!(ds[0].type_name, "naa");
        assert_eq!(ds[0].value, "5000c50012345678");
        assert_eq!(ds[0].association, 0);
        assert_eq!(ds[1].type_name, "t10-vendor-id");
        assert_eq!(ds[1].value, "LINUX   sdX");
        assert!(parse_device_identification(&[0, 0x80, 0, 0]).is_none());
    }

    #[test]
    fn block_limits_b0_decodes_sbc4_offsets() {
        let mut p = vec![0u8; 64];
        p[1] = 0xB0;
        p[3] = 0x3C;
        p[4] = 0x01; // WSNZ
        p[6..8].copy_from_slice(&8u16.to_be_bytes());
        p[8..12].copy_from_slice(&0x0000_4000u32.to_be_bytes());
        p[12..16].copy_from_slice(&0x0000_0800u32.to_be_bytes());
        p[20..24].copy_from_slice(&0x0040_0000u32.to_be_bytes());
        p[24..28].copy_from_slice(&255u32.to_be_bytes());
        p[28..32].copy_from_slice(&8u32.to_be_bytes());
        p[32..36].copy_from_slice(&(0x8000_0000u32 | 3).to_be_bytes());
        p[36..44].copy_from_slice(&0x0000_0000_0040_0000u64.to_be_bytes());
        let b = BlockLimits::parse(&p).unwrap();
        assert!(b.wsnz);
        assert_eq!(b.optimal_transfer_granularity, 8);
        assert_eq!(b.max_transfer_length, 0x4000);
        assert_eq!(b.optimal_transfer_length, 0x800);
        assert_eq!(b.max_unmap_lba_count, 0x40_0000);
        assert_eq!(b.max_unmap_descriptors, 255);
        assert_eq!(b.unmap_granularity, 8);
        assert_eq!(b.unmap_granularity_alignment, Some(3));
        assert_eq!(b.max_write_same_length, 0x40_0000);
        // A short (old, 0x0C-long) page leaves the later fields at 0.
        let short = [0, 0xB0, 0, 0x0C, 0, 0, 0, 8, 0, 0, 0x10, 0, 0, 0, 0, 0];
        let b = BlockLimits::parse(&short).unwrap();
        assert_eq!(b.max_transfer_length, 0x1000);
        assert_eq!(b.max_write_same_length, 0);
    }

    #[test]
    fn b1_and_b2_decode() {
        let b1 = [0, 0xB1, 0, 0x3C, 0x1C, 0x20, 0, 0x03];
        let c = BlockCharacteristics::parse(&b1).unwrap();
        assert_eq!(c.rotation_rate, 7200);
        assert_eq!(c.form_factor, 3);
        let b2 = [0, 0xB2, 0, 4, 0, 0b1110_0100, 0x02, 0];
        let p = LogicalBlockProvisioning::parse(&b2).unwrap();
        assert!(p.lbpu && p.lbpws && p.lbpws10);
        assert_eq!(p.lbprz, 1);
        assert!(!p.anc_sup && !p.dp);
        assert_eq!(p.provisioning_type, 2);
        let b2 = [0, 0xB2, 0, 4, 0, 0b0100_0000, 0, 0];
        let p = LogicalBlockProvisioning::parse(&b2).unwrap();
        assert!(!p.lbpu && p.lbpws && !p.lbpws10);
        assert_eq!(p.lbprz, 0);
    }

    #[test]
    fn read_capacity_data_decodes() {
        let d10 = [0x00, 0x3F, 0xFF, 0xFF, 0x00, 0x00, 0x02, 0x00];
        let c = Capacity::parse10(&d10).unwrap();
        assert_eq!(c.last_lba, 0x3F_FFFF);
        assert_eq!(c.block_length, 512);
        assert_eq!(c.blocks(), BlockCount(0x40_0000));
        let mut d16 = [0u8; 32];
        d16[0..8].copy_from_slice(&0x0000_0001_D1C0_BEAFu64.to_be_bytes());
        d16[8..12].copy_from_slice(&512u32.to_be_bytes());
        d16[13] = 0x03; // 8 logical per physical
        d16[14] = 0xC0 | 0x01; // LBPME, LBPRZ, lowest aligned high bits
        d16[15] = 0x02;
        let c = Capacity::parse16(&d16).unwrap();
        assert_eq!(c.last_lba, 0x1_D1C0_BEAF);
        assert!(c.lbpme && c.lbprz);
        assert_eq!(c.physical_exponent, 3);
        assert_eq!(c.physical_block_length(), 4096);
        assert_eq!(c.lowest_aligned_lba, 0x0102);
    }

    #[test]
    fn fixed_sense_medium_error_with_information() {
        // SPC-5 fixed format: byte 0 VALID|70h, byte 2 key, 3-6 INFORMATION,
        // 7 additional length, 12 ASC, 13 ASCQ.
        let mut s = [0u8; 18];
        s[0] = 0x80 | 0x70;
        s[2] = 0x03;
        s[3..7].copy_from_slice(&0x0012_D687u32.to_be_bytes());
        s[7] = 10;
        s[12] = 0x11;
        s[13] = 0x00;
        let d = Sense::parse(&s).unwrap();
        assert!(!d.descriptor_format);
        assert_eq!(d.key, 3);
        assert_eq!(d.key_name, "MEDIUM ERROR");
        assert_eq!(d.asc_name.as_deref(), Some("unrecovered read error"));
        assert_eq!(d.information, Some(1_234_567));
        assert!(d.is_medium_error());
        assert!(d.describe().contains("at LBA 1234567"), "{}", d.describe());
        // Without VALID the INFORMATION field must be ignored.
        s[0] = 0x70;
        assert_eq!(Sense::parse(&s).unwrap().information, None);
    }

    #[test]
    fn fixed_sense_illegal_request_is_unsupported() {
        let mut s = [0u8; 18];
        s[0] = 0x70;
        s[2] = 0x05;
        s[7] = 10;
        s[12] = 0x20;
        s[15] = 0x80 | 0x40; // SKSV, C/D
        s[17] = 0x00;
        let d = Sense::parse(&s).unwrap();
        assert!(d.is_unsupported_command());
        assert_eq!(
            d.asc_name.as_deref(),
            Some("invalid command operation code")
        );
        assert_eq!(d.sense_key_specific, Some([0xC0, 0, 0]));
        s[12] = 0x24;
        assert!(Sense::parse(&s).unwrap().is_unsupported_command());
        s[12] = 0x21;
        let d = Sense::parse(&s).unwrap();
        assert!(!d.is_unsupported_command());
        assert_eq!(
            d.asc_name.as_deref(),
            Some("logical block address out of range")
        );
    }

    #[test]
    fn asc_table_covers_required_codes() {
        for (asc, ascq, word) in [
            (0x20, 0x00, "invalid command operation code"),
            (0x24, 0x00, "invalid field in CDB"),
            (0x11, 0x00, "unrecovered read error"),
            (0x0C, 0x00, "write error"),
            (0x3A, 0x00, "medium not present"),
            (0x29, 0x00, "reset"),
            (0x04, 0x02, "not ready"),
            (0x04, 0x55, "not ready"),
            (0x21, 0x00, "out of range"),
            (0x26, 0x00, "invalid field in parameter list"),
            (0x27, 0x00, "write protected"),
        ] {
            let s = asc_ascq_name(asc, ascq).unwrap();
            assert!(s.contains(word), "{asc:02X}/{ascq:02X}: {s}");
        }
        assert_eq!(asc_ascq_name(0x7F, 0x7F), None);
        assert_eq!(sense_key_name(0x6), "UNIT ATTENTION");
        assert_eq!(sense_key_name(0xB), "ABORTED COMMAND");
    }

    #[test]
    fn descriptor_sense_with_information_and_ata_return() {
        // 72h, key 3, ASC 11/04; information descriptor (00h, len 0Ah, VALID)
        // with a 48-bit LBA; ATA status return descriptor (09h, len 0Ch).
        let lba: u64 = 0x0000_1234_5678_9ABC;
        let mut s = vec![0x72, 0x03, 0x11, 0x04, 0, 0, 0, 0];
        let mut info = vec![0x00, 0x0A, 0x80, 0x00];
        info.extend_from_slice(&lba.to_be_bytes());
        // ATA: EXTEND, ERROR 40h (UNC), COUNT 0x0001, LBA 47:0 = 0xA1A2A3A4A5A6,
        // DEVICE 40h, STATUS 51h.
        let ata = [
            0x09, 0x0C, 0x01, 0x40, 0x00, 0x01, // code, len, EXTEND, ERROR, COUNT 15:8, 7:0
            0xA3, 0xA6, // LBA 31:24, LBA 7:0
            0xA2, 0xA5, // LBA 39:32, LBA 15:8
            0xA1, 0xA4, // LBA 47:40, LBA 23:16
            0x40, 0x51,
        ];
        s.extend_from_slice(&info);
        s.extend_from_slice(&ata);
        s[7] = (info.len() + ata.len()) as u8;
        let d = Sense::parse(&s).unwrap();
        assert!(d.descriptor_format);
        assert_eq!(d.key, 3);
        assert_eq!((d.asc, d.ascq), (0x11, 0x04));
        assert_eq!(d.information, Some(lba));
        let a = d.ata.unwrap();
        assert!(a.extend);
        assert_eq!(a.error, 0x40);
        assert_eq!(a.count, 1);
        assert_eq!(a.lba, 0xA1A2_A3A4_A5A6);
        assert_eq!(a.device, 0x40);
        assert_eq!(a.status, 0x51);
        assert!(!a.from_fixed_format);
    }

    #[test]
    fn fixed_sense_ata_pass_through_information() {
        // SAT fixed format with 00/1Dh: INFORMATION holds ERROR, STATUS,
        // DEVICE, COUNT(7:0); CSI byte 8 bit 7 EXTEND, bytes 9-11 LBA 7:0, 15:8, 23:16.
        let mut s = [0u8; 18];
        s[0] = 0x70;
        s[2] = 0x01; // RECOVERED ERROR
        s[3] = 0x04; // ERROR: ABRT
        s[4] = 0x51; // STATUS
        s[5] = 0xE0; // DEVICE
        s[6] = 0x02; // COUNT
        s[7] = 10;
        s[8] = 0x80;
        s[9] = 0x11;
        s[10] = 0x22;
        s[11] = 0x33;
        s[12] = 0x00;
        s[13] = 0x1D;
        let d = Sense::parse(&s).unwrap();
        let a = d.ata.unwrap();
        assert_eq!(
            (a.error, a.status, a.device, a.count),
            (0x04, 0x51, 0xE0, 2)
        );
        assert_eq!(a.lba, 0x33_2211);
        assert!(a.extend && a.from_fixed_format);
        assert_eq!(d.information, None);
    }

    #[test]
    fn unknown_sense_is_none() {
        assert!(Sense::parse(&[]).is_none());
        assert!(Sense::parse(&[0x00, 0, 0]).is_none());
    }

    #[test]
    fn command_names() {
        assert_eq!(
            command_name(&WriteSame::new(Lba(0), 1).build16()),
            "WRITE SAME(16)"
        );
        assert_eq!(
            command_name(&ReadCapacity16::new(32).build()),
            "READ CAPACITY(16)"
        );
        assert_eq!(command_name(&[0xC0]), "SCSI opcode 0xC0");
    }
}
