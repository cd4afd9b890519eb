//! The BPF recorder: one small program per block tracepoint, attached as a
//! raw tracepoint, writes a 32-byte record per event into its CPU's ring
//! of slots ([`SlotRings`]), which the recorder reads through its mapping,
//! without a wakeup per event, and merges in time order.
//!
//! Why: a tracefs instance makes the kernel format every event into its
//! own ring buffer (reserve, timestamp, commit: 8–10 % of a zram run's CPU
//! at full speed), and a `BPF_PROG_TYPE_TRACEPOINT` program runs after the
//! same per-event formatting (perf's buffer). A raw tracepoint hands the
//! program the kernel's `struct bio *` / `struct request *` directly; the
//! program reads the few fields it needs (offsets from the kernel's BTF,
//! [`super::btf`]), drops other devices' events at once, and copies one
//! record into the ring.
//!
//! - Programs are encoded here ([`Asm`]), no compiler or libbpf: the same
//!   fields the tracepoints' own `TP_fast_assign` computes (device as
//!   `MKDEV(disk->major, disk->first_minor)`, sector, bytes, the op and
//!   flags word, a completion's status), the time from
//!   `bpf_ktime_get_ns` (CLOCK_MONOTONIC).
//! - Per-CPU rings, not one BPF ring buffer: a ring buffer's reserve
//!   takes a lock with interrupts off and moves the lock's and the
//!   producer position's cache lines between CPUs on every record (in a
//!   profile of a zram run at full speed on two CPUs, the reserve alone
//!   was 2 % of the CPU time per I/O, more than the programs); a program
//!   here takes its slot with one atomic add on a counter only its CPU
//!   writes.
//! - A record overwritten before the reader came, and an event a program
//!   could not place, are counted ([`Source::lost`]), so "no event lost" is
//!   checked, not assumed.
//! - The CPUs' records are merged in time order up to a watermark
//!   ([`super::merge`]), so an I/O's issue reaches the matcher before its
//!   completion, whichever CPUs they were written on.

use std::os::fd::OwnedFd;

use drivelab_device::bpf::{self, BpfError, Map, Prog, SlotRings};

use super::btf::Btf;
use super::event::{Event, Rwbs};
use super::merge::{self, Merge};
use super::spool::Spool;
use crate::error::BpfUnavailable;

/// Bytes of one record: time u64, sector u64, bytes u32, dev u32, op
/// word u32, kind u8, status u8, 2 bytes of padding.
pub(crate) const RECORD: usize = 32;

/// Bytes of ring one event takes: the record and its slot's sequence
/// word.
pub(crate) const BYTES_PER_EVENT: u64 = (RECORD + bpf::SLOT_SEQ) as u64;

const KIND_ISSUE: u8 = 0;
const KIND_COMPLETE: u8 = 1;
const KIND_REQUEUE: u8 = 2;
/// Where a record keeps its kind.
const KIND: usize = 28;

/// The time up to which a drain starting now may release events: every
/// event with a later time may still be on its way into a ring
/// ([`merge::WATERMARK_NS`]); all of them with `all` (the programs are
/// detached).
fn watermark(all: bool) -> u64 {
    if all {
        return u64::MAX;
    }
    // bpf_ktime_get_ns's clock, read before the rings: every event not
    // in them yet takes its slot, then its time, after this.
    bpf::monotonic_ns().saturating_sub(merge::WATERMARK_NS)
}

// Helper ids (include/uapi/linux/bpf.h, `___BPF_FUNC_MAPPER`).
const FN_MAP_LOOKUP_ELEM: i32 = 1;
const FN_KTIME_GET_NS: i32 = 5;
const FN_GET_SMP_PROCESSOR_ID: i32 = 8;
const FN_PROBE_READ_KERNEL: i32 = 113;

/// A BPF instruction stream under construction, with forward jumps
/// patched when their label is placed.
#[derive(Default)]
pub(crate) struct Asm {
    insns: Vec<u64>,
    /// (instruction index, label) of jumps waiting for their label.
    fixups: Vec<(usize, usize)>,
    labels: Vec<Option<usize>>,
}

/// Registers.
const R0: u8 = 0;
const R1: u8 = 1;
const R2: u8 = 2;
const R3: u8 = 3;
const R6: u8 = 6;
const R7: u8 = 7;
const R8: u8 = 8;
const R9: u8 = 9;
const FP: u8 = 10;

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    u64::from(code)
        | (u64::from(dst & 0xf) << 8)
        | (u64::from(src & 0xf) << 12)
        | (u64::from(off as u16) << 16)
        | (u64::from(imm as u32) << 32)
}

/// Memory access sizes (`BPF_W`, `BPF_H`, `BPF_B`, `BPF_DW`).
#[derive(Clone, Copy)]
enum Size {
    W = 0x00,
    B = 0x10,
    DW = 0x18,
}

impl Asm {
    fn op(&mut self, code: u8, dst: u8, src: u8, off: i16, imm: i32) -> &mut Self {
        self.insns.push(insn(code, dst, src, off, imm));
        self
    }
    fn mov_imm(&mut self, dst: u8, imm: i32) -> &mut Self {
        self.op(0xb7, dst, 0, 0, imm)
    }
    fn mov(&mut self, dst: u8, src: u8) -> &mut Self {
        self.op(0xbf, dst, src, 0, 0)
    }
    fn add_imm(&mut self, dst: u8, imm: i32) -> &mut Self {
        self.op(0x07, dst, 0, 0, imm)
    }
    fn lsh_imm(&mut self, dst: u8, imm: i32) -> &mut Self {
        self.op(0x67, dst, 0, 0, imm)
    }
    fn or(&mut self, dst: u8, src: u8) -> &mut Self {
        self.op(0x4f, dst, src, 0, 0)
    }
    /// `dst = *(size *)(src + off)`.
    fn ldx(&mut self, size: Size, dst: u8, src: u8, off: i16) -> &mut Self {
        self.op(0x61 | size as u8, dst, src, off, 0)
    }
    /// `*(size *)(dst + off) = src`.
    fn stx(&mut self, size: Size, dst: u8, off: i16, src: u8) -> &mut Self {
        self.op(0x63 | size as u8, dst, src, off, 0)
    }
    /// `*(size *)(dst + off) = imm`.
    fn st(&mut self, size: Size, dst: u8, off: i16, imm: i32) -> &mut Self {
        self.op(0x62 | size as u8, dst, 0, off, imm)
    }
    /// `lock *(u64 *)(dst + off) += src`.
    fn atomic_add(&mut self, dst: u8, off: i16, src: u8) -> &mut Self {
        self.op(0xdb, dst, src, off, 0)
    }
    /// `src = atomic_fetch_add((u64 *)(dst + off), src)` (`BPF_ADD |
    /// BPF_FETCH`: fully ordered).
    fn fetch_add(&mut self, dst: u8, off: i16, src: u8) -> &mut Self {
        self.op(0xdb, dst, src, off, 0x01)
    }
    /// `src = xchg((u64 *)(dst + off), src)` (`BPF_XCHG`: fully ordered).
    fn xchg(&mut self, dst: u8, off: i16, src: u8) -> &mut Self {
        self.op(0xdb, dst, src, off, 0xe1)
    }
    fn and_imm(&mut self, dst: u8, imm: i32) -> &mut Self {
        self.op(0x57, dst, 0, 0, imm)
    }
    fn call(&mut self, helper: i32) -> &mut Self {
        self.op(0x85, 0, 0, 0, helper)
    }
    fn exit(&mut self) -> &mut Self {
        self.op(0x95, 0, 0, 0, 0)
    }
    /// `dst = map` (`BPF_LD_IMM64` with `BPF_PSEUDO_MAP_FD`: two slots).
    fn ld_map(&mut self, dst: u8, fd: i32) -> &mut Self {
        self.op(0x18, dst, 1, 0, fd).op(0, 0, 0, 0, 0)
    }
    fn label(&mut self) -> usize {
        self.labels.push(None);
        self.labels.len() - 1
    }
    fn place(&mut self, label: usize) -> &mut Self {
        self.labels[label] = Some(self.insns.len());
        self
    }
    /// A conditional jump `code` (with an immediate) to `label`.
    fn jump(&mut self, code: u8, dst: u8, imm: i32, label: usize) -> &mut Self {
        self.fixups.push((self.insns.len(), label));
        self.op(code, dst, 0, 0, imm)
    }
    /// `if (u32)dst == imm goto label` (`BPF_JMP32 | BPF_JEQ | BPF_K`).
    fn jeq32(&mut self, dst: u8, imm: u32, label: usize) -> &mut Self {
        self.jump(0x16, dst, imm as i32, label)
    }
    /// `if dst == imm goto label`.
    fn jeq(&mut self, dst: u8, imm: i32, label: usize) -> &mut Self {
        self.jump(0x15, dst, imm, label)
    }
    /// `if dst != imm goto label` (`imm` sign-extended to 64 bits).
    fn jne(&mut self, dst: u8, imm: i32, label: usize) -> &mut Self {
        self.jump(0x55, dst, imm, label)
    }
    /// `r0 = bpf_map_lookup_elem(map, fp + key)`, to `miss` if there is
    /// no such entry.
    fn lookup(&mut self, map: i32, key: i16, miss: usize) -> &mut Self {
        self.ld_map(R1, map)
            .mov(R2, FP)
            .add_imm(R2, i32::from(key))
            .call(FN_MAP_LOOKUP_ELEM)
            .jeq(R0, 0, miss)
    }
    /// `bpf_probe_read_kernel(fp + to, size, src + off)`; on failure the
    /// kernel zeroes the destination.
    fn probe_read(&mut self, to: i16, size: i32, src: u8, off: usize) -> &mut Self {
        self.mov(R1, FP)
            .add_imm(R1, i32::from(to))
            .mov_imm(R2, size)
            .mov(R3, src)
            .add_imm(R3, off as i32)
            .call(FN_PROBE_READ_KERNEL)
    }

    /// The finished instructions, jumps resolved.
    fn finish(mut self) -> Option<Vec<u64>> {
        for (at, label) in std::mem::take(&mut self.fixups) {
            let to = self.labels.get(label).copied().flatten()?;
            let off = i16::try_from(to as i64 - at as i64 - 1).ok()?;
            self.insns[at] = (self.insns[at] & !(0xffff << 16)) | (u64::from(off as u16) << 16);
        }
        Some(self.insns)
    }
}

/// Where the fields sit, from the kernel's BTF.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Offsets {
    bio_bdev: usize,
    bio_sector: usize,
    bio_size: usize,
    bio_opf: usize,
    bio_status: usize,
    bdev_disk: usize,
    rq_q: usize,
    rq_sector: usize,
    rq_len: usize,
    rq_flags: usize,
    q_disk: usize,
    disk_major: usize,
    disk_minor: usize,
    /// Bits of the op word that hold the operation (`REQ_OP_MASK`).
    op_mask: u32,
    op_read: u32,
    op_write: u32,
    op_flush: u32,
    op_discard: u32,
    op_secure_erase: u32,
    flag_preflush: u32,
    flag_fua: u32,
    flag_rahead: u32,
    flag_sync: u32,
    flag_meta: u32,
}

impl Offsets {
    /// Read from the kernel's BTF; `None` if any struct, member or
    /// enumerator is missing.
    pub(crate) fn from_btf(btf: &Btf) -> Option<Offsets> {
        let iter = btf.offset("bio", "bi_iter")?;
        let bit = |n: &str| -> Option<u32> { Some(1u32 << btf.enumerator(n)?) };
        let op = |n: &str| -> Option<u32> { u32::try_from(btf.enumerator(n)?).ok() };
        Some(Offsets {
            bio_bdev: btf.offset("bio", "bi_bdev")?,
            bio_sector: iter + btf.offset("bvec_iter", "bi_sector")?,
            bio_size: iter + btf.offset("bvec_iter", "bi_size")?,
            bio_opf: btf.offset("bio", "bi_opf")?,
            bio_status: btf.offset("bio", "bi_status")?,
            bdev_disk: btf.offset("block_device", "bd_disk")?,
            rq_q: btf.offset("request", "q")?,
            rq_sector: btf.offset("request", "__sector")?,
            rq_len: btf.offset("request", "__data_len")?,
            rq_flags: btf.offset("request", "cmd_flags")?,
            q_disk: btf.offset("request_queue", "disk")?,
            disk_major: btf.offset("gendisk", "major")?,
            disk_minor: btf.offset("gendisk", "first_minor")?,
            // The flag bits start right after the op bits.
            op_mask: bit("__REQ_FAILFAST_DEV")? - 1,
            op_read: op("REQ_OP_READ")?,
            op_write: op("REQ_OP_WRITE")?,
            op_flush: op("REQ_OP_FLUSH")?,
            op_discard: op("REQ_OP_DISCARD")?,
            op_secure_erase: op("REQ_OP_SECURE_ERASE")?,
            flag_preflush: bit("__REQ_PREFLUSH")?,
            flag_fua: bit("__REQ_FUA")?,
            flag_rahead: bit("__REQ_RAHEAD")?,
            flag_sync: bit("__REQ_SYNC")?,
            flag_meta: bit("__REQ_META")?,
        })
    }

    /// The `rwbs` text the kernel's `blk_fill_rwbs` makes of an op word:
    /// `[F preflush] op [F fua] [A] [S] [M]`.
    pub(crate) fn rwbs(&self, opf: u32) -> Rwbs {
        let mut b = [0u8; 6];
        let mut n = 0;
        let mut push = |c: u8| {
            b[n] = c;
            n += 1;
        };
        if opf & self.flag_preflush != 0 {
            push(b'F');
        }
        let op = opf & self.op_mask;
        if op == self.op_write {
            push(b'W');
        } else if op == self.op_discard {
            push(b'D');
        } else if op == self.op_secure_erase {
            push(b'D');
            push(b'E');
        } else if op == self.op_flush {
            push(b'F');
        } else if op == self.op_read {
            push(b'R');
        } else {
            push(b'N');
        }
        for (flag, c) in [
            (self.flag_fua, b'F'),
            (self.flag_rahead, b'A'),
            (self.flag_sync, b'S'),
            (self.flag_meta, b'M'),
        ] {
            if opf & flag != 0 {
                push(c);
            }
        }
        Rwbs::new(&b[..n])
    }
}

/// One tracepoint's program: which argument is the object, what kind of
/// object, what the record says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe {
    /// The raw tracepoint's name (`block_bio_queue`, …).
    pub(crate) name: &'static str,
    /// Index of the `struct bio *` / `struct request *` argument.
    arg: i16,
    /// A `struct request` (else a `struct bio`).
    rq: bool,
    kind: u8,
}

/// The probes for request-based devices.
pub(crate) const RQ_PROBES: [Probe; 3] = [
    Probe {
        name: "block_rq_issue",
        arg: 0,
        rq: true,
        kind: KIND_ISSUE,
    },
    // block_rq_complete(rq, blk_status_t error, unsigned int nr_bytes)
    Probe {
        name: "block_rq_complete",
        arg: 0,
        rq: true,
        kind: KIND_COMPLETE,
    },
    Probe {
        name: "block_rq_requeue",
        arg: 0,
        rq: true,
        kind: KIND_REQUEUE,
    },
];

/// The probes for bio-based devices.
pub(crate) const BIO_PROBES: [Probe; 2] = [
    Probe {
        name: "block_bio_queue",
        arg: 0,
        rq: false,
        kind: KIND_ISSUE,
    },
    // block_bio_complete(struct request_queue *q, struct bio *bio)
    Probe {
        name: "block_bio_complete",
        arg: 1,
        rq: false,
        kind: KIND_COMPLETE,
    },
];

// The record on the program's stack, relative to the frame pointer.
const REC: i16 = -(RECORD as i16);
const REC_T: i16 = REC;
const REC_SECTOR: i16 = REC + 8;
const REC_BYTES: i16 = REC + 16;
const REC_DEV: i16 = REC + 20;
const REC_OPF: i16 = REC + 24;
const REC_KIND: i16 = REC + 28;
const REC_STATUS: i16 = REC + 29;
const SCRATCH: i16 = REC - 8;
const MAJOR: i16 = REC - 16;
const MINOR: i16 = REC - 12;
const KEY: i16 = REC - 24;
/// The CPU, then the slot's index in its ring.
const CPU: i16 = REC - 20;
const IDX: i16 = REC - 32;

/// The maps a program writes: the rings' `heads` and `slots` (see
/// [`SlotRings`], `per_cpu` slots each) and the per-CPU `lost` counter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Maps {
    pub(crate) heads: i32,
    pub(crate) slots: i32,
    pub(crate) lost: i32,
    pub(crate) per_cpu: u64,
}

/// How a program reads kernel memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// A `tp_btf` program: the verifier knows the arguments' BTF types,
    /// so fields are plain loads (faults read as zero).
    Direct,
    /// A plain raw tracepoint: every field through
    /// `bpf_probe_read_kernel` (kernels without `tp_btf`).
    ProbeRead,
}

impl Asm {
    /// `dst = *(u64 *)(src + off)`, a pointer field.
    fn load_ptr(&mut self, how: Access, dst: u8, src: u8, off: usize) -> &mut Self {
        match how {
            Access::Direct => self.ldx(Size::DW, dst, src, off as i16),
            Access::ProbeRead => {
                self.probe_read(SCRATCH, 8, src, off)
                    .ldx(Size::DW, dst, FP, SCRATCH)
            }
        }
    }

    /// The field at `src + off` into the record slot `to`.
    fn load_field(&mut self, how: Access, to: i16, size: Size, src: u8, off: usize) -> &mut Self {
        match how {
            Access::Direct => self.ldx(size, R1, src, off as i16).stx(size, FP, to, R1),
            Access::ProbeRead => {
                let n = match size {
                    Size::B => 1,
                    Size::W => 4,
                    Size::DW => 8,
                };
                self.probe_read(to, n, src, off)
            }
        }
    }
}

/// The program for `probe`: records the events of `devs` (kernel
/// `dev_t`s) into its CPU's ring of `maps`, counting an event it finds no
/// slot for (a CPU beyond the rings) in `lost` (a per-CPU array of one
/// `u64`). `None` if an offset does not fit an instruction or the ring's
/// size is not a power of two that fits one.
pub(crate) fn program(
    probe: &Probe,
    o: &Offsets,
    devs: &[u32],
    maps: Maps,
    how: Access,
) -> Option<Vec<u64>> {
    if !maps.per_cpu.is_power_of_two() || maps.per_cpu > 1 << 30 {
        return None;
    }
    let shift = maps.per_cpu.trailing_zeros() as i32;
    if [
        o.bio_bdev,
        o.bio_sector,
        o.bio_size,
        o.bio_opf,
        o.bio_status,
        o.bdev_disk,
    ]
    .into_iter()
    .chain([o.rq_q, o.rq_sector, o.rq_len, o.rq_flags, o.q_disk])
    .chain([o.disk_major, o.disk_minor])
    .any(|off| off > i16::MAX as usize)
    {
        return None;
    }
    let mut a = Asm::default();
    let (out, matched) = (a.label(), a.label());
    let (hop1, hop2) = if probe.rq {
        (o.rq_q, o.q_disk)
    } else {
        (o.bio_bdev, o.bdev_disk)
    };
    // r6 = ctx (the arguments), r7 = the bio or request.
    a.mov(R6, R1).ldx(Size::DW, R7, R6, probe.arg * 8);
    for off in (REC..0).step_by(8) {
        a.st(Size::DW, FP, off, 0);
    }
    // The device: object -> (queue | bdev) -> gendisk -> major, minor.
    a.load_ptr(how, R3, R7, hop1).load_ptr(how, R8, R3, hop2);
    match how {
        Access::Direct => {
            a.ldx(Size::W, R9, R8, o.disk_major as i16)
                .ldx(Size::W, R1, R8, o.disk_minor as i16)
        }
        Access::ProbeRead => a
            .st(Size::DW, FP, MAJOR, 0)
            .probe_read(MAJOR, 4, R8, o.disk_major)
            .probe_read(MINOR, 4, R8, o.disk_minor)
            .ldx(Size::W, R9, FP, MAJOR)
            .ldx(Size::W, R1, FP, MINOR),
    };
    a.lsh_imm(R9, 20).or(R9, R1);
    for &d in devs {
        a.jeq32(R9, d, matched);
    }
    a.jump(0x05, 0, 0, out); // another device's event

    // Take a slot in this CPU's ring, index = heads[cpu]++, before the
    // time is read: no event reads its time before taking its slot.
    let no_slot = a.label();
    a.place(matched)
        .call(FN_GET_SMP_PROCESSOR_ID)
        .stx(Size::W, FP, CPU, R0)
        .stx(Size::W, FP, KEY, R0)
        .lookup(maps.heads, KEY, no_slot)
        .mov_imm(R1, 1)
        .fetch_add(R0, 0, R1)
        .stx(Size::DW, FP, IDX, R1)
        .and_imm(R1, (maps.per_cpu - 1) as i32)
        .ldx(Size::W, R2, FP, CPU)
        .lsh_imm(R2, shift)
        .or(R1, R2)
        .stx(Size::W, FP, KEY, R1)
        .lookup(maps.slots, KEY, no_slot)
        // r8 = the slot (the disk is no longer needed).
        .mov(R8, R0)
        .call(FN_KTIME_GET_NS)
        .stx(Size::DW, FP, REC_T, R0)
        .stx(Size::W, FP, REC_DEV, R9)
        .st(Size::B, FP, REC_KIND, i32::from(probe.kind));
    if probe.rq {
        // A request with no position (the flush machinery's, `__sector`
        // left at -1) is at sector 0, as `blk_rq_trace_sector` reports it.
        let positioned = a.label();
        a.load_field(how, REC_SECTOR, Size::DW, R7, o.rq_sector)
            .ldx(Size::DW, R1, FP, REC_SECTOR)
            .jne(R1, -1, positioned)
            .st(Size::DW, FP, REC_SECTOR, 0)
            .place(positioned)
            .load_field(how, REC_OPF, Size::W, R7, o.rq_flags);
        if probe.kind == KIND_COMPLETE {
            // The status and the bytes completed are the arguments.
            a.ldx(Size::DW, R1, R6, 8)
                .stx(Size::B, FP, REC_STATUS, R1)
                .ldx(Size::DW, R1, R6, 16)
                .stx(Size::W, FP, REC_BYTES, R1);
        } else {
            a.load_field(how, REC_BYTES, Size::W, R7, o.rq_len);
        }
    } else {
        a.load_field(how, REC_SECTOR, Size::DW, R7, o.bio_sector)
            .load_field(how, REC_BYTES, Size::W, R7, o.bio_size)
            .load_field(how, REC_OPF, Size::W, R7, o.bio_opf);
        if probe.kind == KIND_COMPLETE {
            a.load_field(how, REC_STATUS, Size::B, R7, o.bio_status);
        }
    }
    // The record into the slot, then its sequence word: index + 1.
    for w in 0..(RECORD / 8) as i16 {
        a.ldx(Size::DW, R1, FP, REC + 8 * w)
            .stx(Size::DW, R8, bpf::SLOT_SEQ as i16 + 8 * w, R1);
    }
    a.ldx(Size::DW, R1, FP, IDX)
        .add_imm(R1, 1)
        .xchg(R8, 0, R1)
        .jump(0x05, 0, 0, out)
        // No slot: count the event in this CPU's entry of `lost`.
        .place(no_slot)
        .st(Size::W, FP, KEY, 0)
        .lookup(maps.lost, KEY, out)
        .mov_imm(R1, 1)
        .atomic_add(R0, 0, R1)
        .place(out)
        .mov_imm(R0, 0)
        .exit();
    a.finish()
}

/// Hold the whole records in `bytes`, read from `cpu`'s ring.
fn push_records(merge: &mut Merge, o: &Offsets, cpu: usize, bytes: &[u8]) {
    for rec in bytes.chunks_exact(RECORD) {
        if let Some(ev) = decode(rec, o) {
            merge.push(cpu, ev)
        }
    }
}

/// Decode one record into the event the matcher takes.
pub(crate) fn decode(rec: &[u8], o: &Offsets) -> Option<Event> {
    let u64_at = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(rec.get(at..at + 8)?.try_into().ok()?))
    };
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(rec.get(at..at + 4)?.try_into().ok()?))
    };
    let t = u64_at(0)?;
    let sector = u64_at(8)?;
    let nr = u64::from(u32_at(16)?) >> 9;
    let dev = u32_at(20)?;
    let opf = u32_at(24)?;
    let status = *rec.get(29)?;
    Some(match *rec.get(KIND)? {
        KIND_ISSUE => Event::Issue {
            t,
            dev,
            sector,
            nr,
            rwbs: o.rwbs(opf),
        },
        KIND_COMPLETE => Event::Complete {
            t,
            dev,
            sector,
            nr,
            error: -i64::from(status),
        },
        KIND_REQUEUE => Event::Requeue { t, dev, sector },
        _ => return None,
    })
}

/// A running BPF recording: the rings, the lost-event counters, the
/// programs and their attachments (dropping it detaches them).
pub(crate) struct Source {
    rings: SlotRings,
    lost: Map,
    offsets: Offsets,
    links: Vec<OwnedFd>,
    progs: Vec<Prog>,
    /// How the programs read the kernel's structs.
    pub(crate) access: Access,
    merge: Merge,
    /// Records overwritten in their ring before the reader came.
    overwritten: u64,
    /// Records read by the last [`Source::read`].
    pub(crate) last: usize,
    /// The fullest CPU's ring at the last [`Source::read`], as a fraction.
    pub(crate) fill: f64,
}

/// Load and attach every probe `devs` need, as `tp_btf` programs when
/// `btf` is given, else as plain raw tracepoints.
fn attach(
    devs: &[(u32, bool)],
    offsets: &Offsets,
    maps: Maps,
    btf: Option<&Btf>,
) -> Result<(Vec<Prog>, Vec<OwnedFd>), BpfUnavailable> {
    let mut progs = Vec::new();
    let mut links = Vec::new();
    for (probes, bio) in [(&RQ_PROBES[..], false), (&BIO_PROBES[..], true)] {
        let ids: Vec<u32> = devs.iter().filter(|d| d.1 == bio).map(|d| d.0).collect();
        if ids.is_empty() {
            continue;
        }
        for p in probes {
            let how = if btf.is_some() {
                Access::Direct
            } else {
                Access::ProbeRead
            };
            let insns = program(p, offsets, &ids, maps, how).ok_or(BpfUnavailable::Encode)?;
            let prog = match btf {
                Some(btf) => {
                    let id = btf
                        .typedef(&format!("btf_trace_{}", p.name))
                        .ok_or(BpfUnavailable::Btf)?;
                    let prog = Prog::load(bpf::PROG_TRACING, &insns, "GPL", bpf::TRACE_RAW_TP, id)?;
                    links.push(prog.attach_raw_tracepoint(None)?);
                    prog
                }
                None => {
                    let prog = Prog::load(bpf::PROG_RAW_TRACEPOINT, &insns, "GPL", 0, 0)?;
                    links.push(prog.attach_raw_tracepoint(Some(p.name))?);
                    prog
                }
            };
            progs.push(prog);
        }
    }
    Ok((progs, links))
}

impl Access {
    /// The name the summary gives: `tp_btf` or `raw_tp`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Access::Direct => "tp_btf",
            Access::ProbeRead => "raw_tp",
        }
    }
}

impl Source {
    /// Load and attach the probes for `devs` (kernel `dev_t`, bio-based or
    /// not) with rings of `per_cpu` records for every possible CPU
    /// (rounded up to a power of two).
    pub(crate) fn start(devs: &[(u32, bool)], per_cpu: u64) -> Result<Source, BpfUnavailable> {
        let btf = Btf::vmlinux().ok_or(BpfUnavailable::Btf)?;
        let offsets = Offsets::from_btf(&btf).ok_or(BpfUnavailable::Btf)?;
        let (rings, (heads, slots)) = SlotRings::create(bpf::possible_cpus(), per_cpu, RECORD)?;
        let lost = Map::create(bpf::MAP_PERCPU_ARRAY, 4, 8, 1)?;
        let maps = Maps {
            heads,
            slots,
            lost: lost.raw_fd(),
            per_cpu: rings.per_cpu(),
        };
        // tp_btf first (plain loads); where the kernel refuses it, plain
        // raw tracepoints reading through bpf_probe_read_kernel.
        let (progs, links, access) = match attach(devs, &offsets, maps, Some(&btf)) {
            Ok((p, l)) => (p, l, Access::Direct),
            Err(_) => {
                let (p, l) = attach(devs, &offsets, maps, None)?;
                (p, l, Access::ProbeRead)
            }
        };
        Ok(Source {
            rings,
            lost,
            offsets,
            links,
            progs,
            access,
            merge: Merge::default(),
            overwritten: 0,
            last: 0,
            fill: 0.0,
        })
    }

    /// Read every CPU's new records, then hand `f` the events up to the
    /// merge's watermark (all of them with `all`: once detached), in time
    /// order.
    pub(crate) fn read(&mut self, all: bool, f: impl FnMut(Event)) {
        let mark = watermark(all);
        let o = self.offsets;
        let merge = &mut self.merge;
        let got = self
            .rings
            .consume(|cpu, rec| push_records(merge, &o, cpu, rec));
        self.count(&got);
        self.release(mark, f);
    }

    /// What [`Source::read`] does, but only as far as copying: every CPU's
    /// new records go into `spool` as they are, then the pass with the
    /// watermark `read` would release up to. Read back through
    /// [`Source::push_chunk`] and [`Source::release`], they give the same
    /// events in the same order.
    pub(crate) fn spool(&mut self, all: bool, spool: &mut Spool) -> crate::error::Result<()> {
        let mark = watermark(all);
        let got = self.rings.consume(|cpu, rec| spool.extend(cpu, rec));
        self.count(&got);
        spool.pass(mark)
    }

    /// Hold the records of a spooled chunk of `cpu`'s.
    pub(crate) fn push_chunk(&mut self, cpu: usize, bytes: &[u8]) {
        push_records(&mut self.merge, &self.offsets, cpu, bytes)
    }

    /// Hand `f` the held events up to `mark`, in time order.
    pub(crate) fn release(&mut self, mark: u64, f: impl FnMut(Event)) {
        self.merge.release_each(mark, f)
    }

    fn count(&mut self, got: &bpf::Consumed) {
        self.last = got.records;
        self.fill = got.fill;
        self.overwritten += got.lost;
    }

    /// Detach the programs: no event is recorded after this (closing a
    /// link waits for the programs running on it).
    pub(crate) fn detach(&mut self) {
        self.links.clear();
    }

    /// Events lost: records overwritten before they were read, events a
    /// program found no slot for (summed over CPUs), and runs the kernel
    /// skipped because a program was already running on that CPU
    /// ([`Prog::recursion_misses`]).
    pub(crate) fn lost(&self) -> Result<u64, BpfError> {
        let mut lost = self.overwritten + self.lost.percpu_sum(0)?;
        for p in &self.progs {
            lost += p.recursion_misses()?;
        }
        Ok(lost)
    }
}

#[cfg(test)]
mod tests {
    use super::super::spool::Item;
    use super::*;

    #[test]
    fn instructions_encode_as_the_uapi_lays_them_out() {
        // BPF_MOV64_IMM(R0, -1): code 0xb7, dst 0, imm 0xffffffff.
        assert_eq!(insn(0xb7, 0, 0, 0, -1), 0xffff_ffff_0000_00b7);
        // BPF_LDX_MEM(BPF_DW, R7, R6, 8): 0x79, dst 7, src 6, off 8.
        assert_eq!(insn(0x79, 7, 6, 8, 0), 0x0000_0000_0008_6779);
        let mut a = Asm::default();
        let l = a.label();
        a.jeq(R0, 0, l).mov_imm(R0, 1).place(l).exit();
        let insns = a.finish().unwrap();
        // The jump skips one instruction.
        assert_eq!((insns[0] >> 16) & 0xffff, 1);
        assert_eq!(insns.len(), 3);
    }

    /// Both kinds of program for every probe pass this kernel's verifier
    /// (loaded, not attached): the fallback is not left untried because
    /// this kernel takes `tp_btf`.
    #[test]
    fn every_probe_loads_as_tp_btf_and_as_raw_tp() {
        let Some(btf) = Btf::vmlinux() else { return };
        let o = Offsets::from_btf(&btf).unwrap();
        let (rings, (heads, slots)) =
            SlotRings::create(bpf::possible_cpus(), 4096, RECORD).unwrap();
        let lost = Map::create(bpf::MAP_PERCPU_ARRAY, 4, 8, 1).unwrap();
        let maps = Maps {
            heads,
            slots,
            lost: lost.raw_fd(),
            per_cpu: rings.per_cpu(),
        };
        let devs = [(7 << 20) | 3, (252 << 20) | 1];
        for p in RQ_PROBES.iter().chain(&BIO_PROBES) {
            let insns = program(p, &o, &devs, maps, Access::ProbeRead).unwrap();
            if let Err(e) = Prog::load(bpf::PROG_RAW_TRACEPOINT, &insns, "GPL", 0, 0) {
                panic!("{} raw_tp: {e}", p.name);
            }
            let insns = program(p, &o, &devs, maps, Access::Direct).unwrap();
            let id = btf.typedef(&format!("btf_trace_{}", p.name)).unwrap();
            if let Err(e) = Prog::load(bpf::PROG_TRACING, &insns, "GPL", bpf::TRACE_RAW_TP, id) {
                panic!("{} tp_btf: {e}", p.name);
            }
        }
    }

    /// Records of two CPUs (one written out of time order) read in three
    /// passes: spooled and read back, they give the events the live merge
    /// gave, in the same order.
    #[test]
    fn a_spool_read_back_gives_what_the_live_reader_gave() {
        let Some(o) = Btf::vmlinux().as_ref().and_then(Offsets::from_btf) else {
            return;
        };
        let rec = |t: u64, kind: u8| {
            let mut r = [0u8; RECORD];
            r[..8].copy_from_slice(&t.to_le_bytes());
            r[8..16].copy_from_slice(&(t * 8).to_le_bytes());
            r[16..20].copy_from_slice(&4096u32.to_le_bytes());
            r[24..28].copy_from_slice(&o.op_read.to_le_bytes());
            r[KIND] = kind;
            r
        };
        // Each pass: (CPU, time, kind) of the records it read, its mark.
        type Pass<'a> = (&'a [(usize, u64, u8)], u64);
        let passes: [Pass; 3] = [
            (
                &[
                    (0, 10, KIND_ISSUE),
                    (1, 12, KIND_ISSUE),
                    (0, 30, KIND_COMPLETE),
                ],
                20,
            ),
            (
                &[
                    (1, 25, KIND_COMPLETE),
                    (1, 22, KIND_ISSUE),
                    (0, 40, KIND_ISSUE),
                ],
                35,
            ),
            (&[(1, 45, KIND_COMPLETE), (0, 41, KIND_REQUEUE)], u64::MAX),
        ];
        let dir = std::env::temp_dir().join(format!("drivelab-bpfspool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("t.dlt");
        let file = drivelab_device::output::Output::new(&out)
            .scratch()
            .unwrap();
        let mut spool = Spool::new(file, &out);
        let mut live = Merge::default();
        let mut want = Vec::new();
        for (recs, mark) in passes {
            for &(cpu, t, kind) in recs {
                push_records(&mut live, &o, cpu, &rec(t, kind));
                spool.extend(cpu, &rec(t, kind));
            }
            live.release(mark);
            want.append(&mut live.ready);
            spool.pass(mark).unwrap();
        }
        let mut back = Merge::default();
        let mut got = Vec::new();
        spool
            .read_back(|item| {
                match item {
                    Item::Chunk { cpu, bytes } => push_records(&mut back, &o, cpu, bytes),
                    Item::Pass { mark } => {
                        back.release(mark);
                        got.append(&mut back.ready);
                    }
                }
                Ok(())
            })
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(got, want);
        let times: Vec<u64> = want.iter().map(merge::event_time).collect();
        assert_eq!(times, [10, 12, 22, 25, 30, 40, 41, 45]);
    }

    #[test]
    fn the_running_kernels_rwbs_is_the_tracepoints() {
        let Some(o) = Btf::vmlinux().as_ref().and_then(Offsets::from_btf) else {
            return;
        };
        let w = o.op_write | o.flag_sync | o.flag_fua;
        assert_eq!(o.rwbs(w), Rwbs::new(b"WFS"));
        assert_eq!(o.rwbs(o.op_read | o.flag_rahead), Rwbs::new(b"RA"));
        assert_eq!(
            o.rwbs(o.op_write | o.flag_preflush | o.flag_meta),
            Rwbs::new(b"FWM")
        );
        assert_eq!(o.rwbs(o.op_flush), Rwbs::new(b"F"));
        assert_eq!(o.rwbs(o.op_discard), Rwbs::new(b"D"));
    }
}
