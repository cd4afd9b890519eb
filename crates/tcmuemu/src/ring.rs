//! The target_core_user command ring (include/uapi/linux/target_core_user.h,
//! mailbox version 2): the kernel appends command entries and advances the
//! mailbox's `cmd_head`; user space answers each entry in place (status,
//! sense, read length) and advances `cmd_tail`, then pokes the UIO device.
//!
//! Layouts (little-endian; the entry is `__packed`, but its request
//! struct is not, so `cdb_off` sits on its 8-byte boundary):
//! - mailbox: version u16 @0, flags u16 @2, cmdr_off u32 @4, cmdr_size u32
//!   @8, cmd_head u32 @12, cmd_tail u32 @64 (its own cache line);
//! - entry header: len_op u32 @0 (low 3 bits the opcode: 0 PAD, 1 CMD,
//!   2 TMR), cmd_id u16 @4, kflags u8 @6, uflags u8 @7;
//! - request: iov_cnt u32 @8, iov_bidi_cnt u32 @12, iov_dif_cnt u32 @16,
//!   (4 bytes of padding), cdb_off u64 @24 (an offset into the mapping),
//!   two reserved u64, iovecs (base u64, len u64; base is an offset into
//!   the mapping) @48;
//! - response (over the request): scsi_status u8 @8, read_len u32 @12,
//!   sense_buffer [u8; 96] @16.
//!
//! Completions may come out of order (TCMU_MAILBOX_FLAG_CAP_OOOC, which the
//! kernel sets): the kernel reads each entry from its last cleaned one up
//! to `cmd_tail` and finds the command by the entry's `cmd_id`, so a
//! completion is written into the oldest entry not yet used for one, with
//! its own `cmd_id`. A command never answered (a fault) thus holds no
//! entry back: the next completion takes its place, and only the last
//! entry stays behind the tail.
//!
//! The memory is reached through [`Shared`], so the ring logic is tested
//! on a plain buffer and runs on [`drivelab_device::block::uio::UioMap`].

use drivelab_device::block::uio::{UioError, UioMap};

/// Mailbox field offsets.
pub mod mb {
    /// Mailbox version (2).
    pub const VERSION: usize = 0;
    /// Capability flags.
    pub const FLAGS: usize = 2;
    /// Offset of the command ring from the start of the mapping.
    pub const CMDR_OFF: usize = 4;
    /// Size of the command ring.
    pub const CMDR_SIZE: usize = 8;
    /// The kernel's head, an offset into the ring.
    pub const CMD_HEAD: usize = 12;
    /// User space's tail, an offset into the ring.
    pub const CMD_TAIL: usize = 64;
}

/// The mailbox flag: the kernel honours `read_len` when the entry's
/// uflags say so.
pub const CAP_READ_LEN: u16 = 1 << 1;
/// Entry opcode: padding to the ring's end.
pub const OP_PAD: u32 = 0;
/// Entry opcode: a SCSI command.
pub const OP_CMD: u32 = 1;
/// uflags: `read_len` is valid.
pub const UFLAG_READ_LEN: u8 = 0x2;
/// Size of the sense buffer in a response.
pub const SENSE_SIZE: usize = 96;
/// Offset of the CDB's offset in a request entry.
const CDB_OFF: usize = 24;
/// Offset of the first iovec in a request entry.
const IOV_OFF: usize = 48;
/// At most this many CDB bytes are read (the longest fixed CDB; variable
/// length CDBs are refused as unsupported).
const CDB_MAX: usize = 16;

/// Shared memory the ring lives in.
pub trait Shared {
    /// The 32-bit word at `off` (acquire).
    fn load_u32(&self, off: usize) -> Result<u32, UioError>;
    /// Write the 32-bit word at `off` (release).
    fn store_u32(&self, off: usize, v: u32) -> Result<(), UioError>;
    /// Copy bytes out.
    fn read(&self, off: usize, out: &mut [u8]) -> Result<(), UioError>;
    /// Copy bytes in.
    fn write(&self, off: usize, data: &[u8]) -> Result<(), UioError>;
}

impl Shared for UioMap {
    fn load_u32(&self, off: usize) -> Result<u32, UioError> {
        UioMap::load_u32(self, off)
    }
    fn store_u32(&self, off: usize, v: u32) -> Result<(), UioError> {
        UioMap::store_u32(self, off, v)
    }
    fn read(&self, off: usize, out: &mut [u8]) -> Result<(), UioError> {
        UioMap::read(self, off, out)
    }
    fn write(&self, off: usize, data: &[u8]) -> Result<(), UioError> {
        UioMap::write(self, off, data)
    }
}

/// What went wrong with the ring.
#[derive(Debug, thiserror::Error)]
pub enum RingError {
    /// The shared memory.
    #[error(transparent)]
    Uio(#[from] UioError),
    /// The mailbox or an entry does not make sense.
    #[error("TCMU ring: {0}")]
    Bad(String),
}

/// One data buffer segment: an offset into the mapping and a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iov {
    /// Offset from the start of the mapping.
    pub off: usize,
    /// Bytes.
    pub len: usize,
}

/// A SCSI command taken from the ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The kernel's command id.
    pub cmd_id: u16,
    /// The CDB bytes (up to 16).
    pub cdb: Vec<u8>,
    /// The data buffer.
    pub iovs: Vec<Iov>,
}

impl Request {
    /// The data buffer's total length (the command's transfer length).
    pub fn data_len(&self) -> usize {
        self.iovs.iter().map(|v| v.len).sum()
    }
}

/// The answer to one command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Response {
    /// SCSI status.
    pub status: u8,
    /// Sense bytes (CHECK CONDITION), at most 96.
    pub sense: Vec<u8>,
    /// Data for the initiator (data-in), at most the buffer's length.
    pub data_in: Vec<u8>,
}

/// The ring over its shared memory, with user space's own tail.
#[derive(Debug)]
pub struct Ring<M: Shared> {
    mem: M,
    cmdr_off: usize,
    cmdr_size: usize,
    read_len: bool,
    /// `cmd_tail`: every entry before it holds a completion or padding.
    tail: u32,
    /// Where the next command is taken from.
    next: u32,
    /// The entries between `tail` and `next`, in ring order: offset in
    /// the mapping, length, and whether it may be passed (padding, or a
    /// completion written into it).
    slots: std::collections::VecDeque<(usize, usize, bool)>,
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

impl<M: Shared> Ring<M> {
    /// Read the mailbox (version 2, a non-empty ring) and start at its tail.
    pub fn new(mem: M) -> Result<Ring<M>, RingError> {
        let w0 = mem.load_u32(0)?;
        let version = (w0 & 0xFFFF) as u16;
        let flags = (w0 >> 16) as u16;
        if version != 2 {
            return Err(RingError::Bad(format!("mailbox version {version}, not 2")));
        }
        let cmdr_off = mem.load_u32(mb::CMDR_OFF)? as usize;
        let cmdr_size = mem.load_u32(mb::CMDR_SIZE)? as usize;
        if cmdr_size == 0 || cmdr_off < mb::CMD_TAIL + 4 {
            return Err(RingError::Bad(format!(
                "command ring of {cmdr_size} bytes at {cmdr_off}"
            )));
        }
        let tail = mem.load_u32(mb::CMD_TAIL)?;
        Ok(Ring {
            mem,
            cmdr_off,
            cmdr_size,
            read_len: flags & CAP_READ_LEN != 0,
            tail,
            next: tail,
            slots: std::collections::VecDeque::new(),
        })
    }

    /// The shared memory.
    pub fn mem(&self) -> &M {
        &self.mem
    }

    /// The shared memory, mutably (to wait on and notify the device).
    pub fn mem_mut(&mut self) -> &mut M {
        &mut self.mem
    }

    /// Whether the kernel has entries user space has not taken.
    pub fn pending(&self) -> Result<bool, RingError> {
        Ok(self.mem.load_u32(mb::CMD_HEAD)? != self.next)
    }

    /// The next SCSI command, skipping padding (and task management
    /// entries, which this drive does not ask for); `None` when the ring is
    /// empty. A command stays the user's until [`Ring::complete`].
    pub fn take(&mut self) -> Result<Option<Request>, RingError> {
        loop {
            let head = self.mem.load_u32(mb::CMD_HEAD)?;
            if head == self.next {
                return Ok(None);
            }
            let entry = self.cmdr_off + self.next as usize;
            let mut hdr = [0u8; IOV_OFF];
            self.mem.read(entry, &mut hdr)?;
            let len_op = u32_at(&hdr, 0);
            let (op, len) = (len_op & 7, (len_op & !7) as usize);
            if len == 0 || len > self.cmdr_size {
                return Err(RingError::Bad(format!(
                    "entry of {len} bytes at {}",
                    self.next
                )));
            }
            self.next = ((self.next as usize + len) % self.cmdr_size) as u32;
            self.slots.push_back((entry, len, op != OP_CMD));
            if op != OP_CMD {
                self.pass()?;
                continue;
            }
            let iov_cnt = u32_at(&hdr, 8) as usize;
            let mut iovs = Vec::with_capacity(iov_cnt);
            for i in 0..iov_cnt {
                let mut v = [0u8; 16];
                self.mem.read(entry + IOV_OFF + 16 * i, &mut v)?;
                let off = usize::try_from(u64_at(&v, 0))
                    .map_err(|_| RingError::Bad("iovec base beyond the address space".into()))?;
                let len = usize::try_from(u64_at(&v, 8))
                    .map_err(|_| RingError::Bad("iovec length beyond the address space".into()))?;
                iovs.push(Iov { off, len });
            }
            let cdb_off = usize::try_from(u64_at(&hdr, CDB_OFF))
                .map_err(|_| RingError::Bad("CDB offset beyond the address space".into()))?;
            let mut first = [0u8; 1];
            self.mem.read(cdb_off, &mut first)?;
            let n = match crate::cdb::cdb_len(first[0]) {
                0 => CDB_MAX,
                n => n,
            };
            let mut cdb = vec![0u8; n];
            self.mem.read(cdb_off, &mut cdb)?;
            return Ok(Some(Request {
                cmd_id: u16::from_le_bytes([hdr[4], hdr[5]]),
                cdb,
                iovs,
            }));
        }
    }

    /// The command's data-out buffer, gathered from its iovecs.
    pub fn data_out(&self, req: &Request) -> Result<Vec<u8>, RingError> {
        let mut out = vec![0u8; req.data_len()];
        let mut at = 0;
        for v in &req.iovs {
            self.mem.read(v.off, &mut out[at..at + v.len])?;
            at += v.len;
        }
        Ok(out)
    }

    /// Answer `req`: data-in scattered over its iovecs (cut to their
    /// length), its `cmd_id`, status and sense written into the oldest
    /// entry not yet used for a completion (its own, unless one before it
    /// was never answered), the tail moved past every used entry. The
    /// caller notifies the kernel.
    pub fn complete(&mut self, req: &Request, rsp: &Response) -> Result<(), RingError> {
        let Some(slot) = self.slots.iter_mut().find(|s| !s.2) else {
            return Err(RingError::Bad(format!(
                "completion of command {} with no entry taken",
                req.cmd_id
            )));
        };
        slot.2 = true;
        let entry = slot.0;
        let mut at = 0;
        for v in &req.iovs {
            if at >= rsp.data_in.len() {
                break;
            }
            let n = v.len.min(rsp.data_in.len() - at);
            self.mem.write(v.off, &rsp.data_in[at..at + n])?;
            at += n;
        }
        let mut r = [0u8; 8 + SENSE_SIZE];
        r[0] = rsp.status;
        r[4..8].copy_from_slice(&(at as u32).to_le_bytes());
        let s = rsp.sense.len().min(SENSE_SIZE);
        r[8..8 + s].copy_from_slice(&rsp.sense[..s]);
        self.mem.write(entry + 8, &r)?;
        // READ_LEN: how much data-in there is, also on CHECK CONDITION (ATA
        // PASS-THROUGH with CK_COND returns data and sense together).
        let data_out = crate::cdb::is_data_out(&req.cdb);
        let uflags = if self.read_len && !data_out && (at > 0 || rsp.status == crate::sense::GOOD) {
            UFLAG_READ_LEN
        } else {
            0
        };
        let mut hdr = [0u8; 4];
        hdr[..2].copy_from_slice(&req.cmd_id.to_le_bytes());
        self.mem.read(entry + 6, &mut hdr[2..3])?;
        hdr[3] = uflags;
        self.mem.write(entry + 4, &hdr)?;
        self.pass()
    }

    /// Move the tail past every used entry at the front.
    fn pass(&mut self) -> Result<(), RingError> {
        let mut moved = false;
        while let Some(&(_, len, true)) = self.slots.front() {
            self.slots.pop_front();
            self.tail = ((self.tail as usize + len) % self.cmdr_size) as u32;
            moved = true;
        }
        if moved {
            self.mem.store_u32(mb::CMD_TAIL, self.tail)?;
        }
        Ok(())
    }

    /// Commands taken and not answered.
    pub fn unanswered(&self) -> usize {
        self.slots.iter().filter(|s| !s.2).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A ring in a plain buffer, laid out as the kernel lays it out.
    struct Buf(RefCell<Vec<u8>>);

    impl Buf {
        fn range(&self, off: usize, len: usize) -> Result<(), UioError> {
            let size = self.0.borrow().len();
            if off + len > size {
                return Err(UioError::OutOfRange {
                    offset: off,
                    len,
                    size,
                });
            }
            Ok(())
        }
    }

    impl Shared for Buf {
        fn load_u32(&self, off: usize) -> Result<u32, UioError> {
            let mut b = [0u8; 4];
            self.read(off, &mut b)?;
            Ok(u32::from_le_bytes(b))
        }
        fn store_u32(&self, off: usize, v: u32) -> Result<(), UioError> {
            self.write(off, &v.to_le_bytes())
        }
        fn read(&self, off: usize, out: &mut [u8]) -> Result<(), UioError> {
            self.range(off, out.len())?;
            out.copy_from_slice(&self.0.borrow()[off..off + out.len()]);
            Ok(())
        }
        fn write(&self, off: usize, data: &[u8]) -> Result<(), UioError> {
            self.range(off, data.len())?;
            self.0.borrow_mut()[off..off + data.len()].copy_from_slice(data);
            Ok(())
        }
    }

    const CMDR_OFF: usize = 128;
    const CMDR_SIZE: usize = 256;
    const DATA_OFF: usize = CMDR_OFF + CMDR_SIZE;

    fn ring() -> Ring<Buf> {
        let mut m = vec![0u8; DATA_OFF + 4096];
        m[0..2].copy_from_slice(&2u16.to_le_bytes());
        m[2..4].copy_from_slice(&CAP_READ_LEN.to_le_bytes());
        m[4..8].copy_from_slice(&(CMDR_OFF as u32).to_le_bytes());
        m[8..12].copy_from_slice(&(CMDR_SIZE as u32).to_le_bytes());
        Ring::new(Buf(RefCell::new(m))).expect("mailbox")
    }

    /// Put a command at ring offset `at` as the kernel does: header,
    /// iovecs, the CDB after them; returns the entry's length.
    fn put_cmd(r: &Ring<Buf>, at: usize, id: u16, cdb: &[u8], iovs: &[(usize, usize)]) -> usize {
        let cdb_at = CMDR_OFF + at + IOV_OFF + 16 * iovs.len();
        // As the kernel sizes it: at least a whole entry (112 bytes).
        let len = ((IOV_OFF + 16 * iovs.len() + cdb.len()).div_ceil(8) * 8).max(112);
        let m = r.mem();
        m.store_u32(CMDR_OFF + at, len as u32 | OP_CMD).unwrap();
        m.write(CMDR_OFF + at + 4, &id.to_le_bytes()).unwrap();
        m.store_u32(CMDR_OFF + at + 8, iovs.len() as u32).unwrap();
        m.write(CMDR_OFF + at + CDB_OFF, &(cdb_at as u64).to_le_bytes())
            .unwrap();
        for (i, (off, l)) in iovs.iter().enumerate() {
            let e = CMDR_OFF + at + IOV_OFF + 16 * i;
            m.write(e, &(*off as u64).to_le_bytes()).unwrap();
            m.write(e + 8, &(*l as u64).to_le_bytes()).unwrap();
        }
        m.write(cdb_at, cdb).unwrap();
        len
    }

    #[test]
    fn a_command_is_taken_answered_and_the_tail_moves_past_it() {
        let mut r = ring();
        let len = put_cmd(
            &r,
            0,
            7,
            &[0x12, 0, 0, 0, 96, 0],
            &[(DATA_OFF, 64), (DATA_OFF + 512, 32)],
        );
        r.mem().store_u32(mb::CMD_HEAD, len as u32).unwrap();
        let req = r.take().unwrap().expect("a command");
        assert_eq!(req.cmd_id, 7);
        assert_eq!(req.cdb, vec![0x12, 0, 0, 0, 96, 0]);
        assert_eq!(req.data_len(), 96);
        let data: Vec<u8> = (0..70u8).collect();
        let rsp = Response {
            status: 0,
            sense: vec![],
            data_in: data.clone(),
        };
        r.complete(&req, &rsp).unwrap();
        // Data scattered over both segments, 64 + 6 bytes.
        let mut a = vec![0u8; 64];
        r.mem().read(DATA_OFF, &mut a).unwrap();
        assert_eq!(a, data[..64]);
        let mut b = vec![0u8; 6];
        r.mem().read(DATA_OFF + 512, &mut b).unwrap();
        assert_eq!(b, data[64..]);
        // Status, read_len (short: the flag set), tail.
        let e = CMDR_OFF;
        assert_eq!(r.mem().load_u32(e + 12).unwrap(), 70);
        let mut uflags = [0u8; 1];
        r.mem().read(e + 7, &mut uflags).unwrap();
        assert_eq!(uflags[0] & UFLAG_READ_LEN, UFLAG_READ_LEN);
        assert_eq!(r.mem().load_u32(mb::CMD_TAIL).unwrap(), len as u32);
        assert!(r.take().unwrap().is_none());
    }

    #[test]
    fn padding_at_the_ring_end_is_skipped_and_the_tail_wraps() {
        let mut r = ring();
        // Tail and head near the end: a PAD entry to the end, then a command at 0.
        let start = CMDR_SIZE - 64;
        r.tail = start as u32;
        r.next = start as u32;
        r.mem().store_u32(CMDR_OFF + start, 64 | OP_PAD).unwrap();
        let len = put_cmd(&r, 0, 9, &[0x00, 0, 0, 0, 0, 0], &[]);
        r.mem().store_u32(mb::CMD_HEAD, len as u32).unwrap();
        let req = r.take().unwrap().expect("the command after the padding");
        assert_eq!(req.cmd_id, 9);
        let sense = crate::sense::Sense::INVALID_OPCODE.fixed().to_vec();
        r.complete(
            &req,
            &Response {
                status: 2,
                sense: sense.clone(),
                data_in: vec![],
            },
        )
        .unwrap();
        let mut got = vec![0u8; 18];
        r.mem().read(CMDR_OFF + 16, &mut got).unwrap();
        assert_eq!(got, sense);
        let mut st = [0u8; 1];
        r.mem().read(CMDR_OFF + 8, &mut st).unwrap();
        assert_eq!(st[0], 2);
        assert_eq!(r.mem().load_u32(mb::CMD_TAIL).unwrap(), len as u32);
    }

    #[test]
    fn a_command_never_answered_lends_its_entry_to_the_next_completion() {
        let mut r = ring();
        let a = put_cmd(&r, 0, 1, &[0x00, 0, 0, 0, 0, 0], &[]);
        let b = put_cmd(&r, a, 2, &[0x00, 0, 0, 0, 0, 0], &[]);
        r.mem().store_u32(mb::CMD_HEAD, (a + b) as u32).unwrap();
        let first = r.take().unwrap().expect("1");
        let second = r.take().unwrap().expect("2");
        assert_eq!((first.cmd_id, second.cmd_id), (1, 2));
        // The first hangs; the second's completion goes into the first
        // entry, with the second's id; the tail passes one entry.
        r.complete(&second, &Response::default()).unwrap();
        let mut id = [0u8; 2];
        r.mem().read(CMDR_OFF + 4, &mut id).unwrap();
        assert_eq!(u16::from_le_bytes(id), 2);
        assert_eq!(r.mem().load_u32(mb::CMD_TAIL).unwrap(), a as u32);
        assert_eq!(r.unanswered(), 1);
        assert!(!r.pending().unwrap());
    }

    #[test]
    fn data_out_is_gathered_from_every_segment() {
        let mut r = ring();
        r.mem().write(DATA_OFF, &[1, 2, 3]).unwrap();
        r.mem().write(DATA_OFF + 1024, &[4, 5]).unwrap();
        let len = put_cmd(
            &r,
            0,
            1,
            &[0x2A, 0, 0, 0, 0, 0, 0, 0, 1, 0],
            &[(DATA_OFF, 3), (DATA_OFF + 1024, 2)],
        );
        r.mem().store_u32(mb::CMD_HEAD, len as u32).unwrap();
        let req = r.take().unwrap().expect("a command");
        assert_eq!(r.data_out(&req).unwrap(), vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_mailbox_of_another_version_is_refused() {
        let m = vec![0u8; 512];
        assert!(matches!(
            Ring::new(Buf(RefCell::new(m))),
            Err(RingError::Bad(_))
        ));
    }
}
