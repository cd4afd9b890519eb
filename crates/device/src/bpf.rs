//! The bpf(2) system call, as far as a block recorder needs it: per-CPU
//! record rings in mmap'ed arrays ([`SlotRings`]), a per-CPU array of
//! counters, a raw-tracepoint program loaded from instructions built
//! elsewhere (the trace crate's encoder), and its attachment. It lives here
//! because the device crate is where drivelab's `unsafe` reaches the
//! kernel: every caller gets owned file descriptors and a safe ring reader.
//!
//! No libbpf: the attribute unions are laid out here as the kernel's UAPI
//! (`include/uapi/linux/bpf.h`) defines them, zero-filled beyond the fields
//! used, as the kernel requires.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// `BPF_MAP_TYPE_ARRAY`.
pub const MAP_ARRAY: u32 = 2;
/// `BPF_MAP_TYPE_PERCPU_ARRAY`.
pub const MAP_PERCPU_ARRAY: u32 = 6;
/// `BPF_F_MMAPABLE`: an array whose values user space may mmap.
pub const MAP_F_MMAPABLE: u32 = 1 << 10;
/// `BPF_PROG_TYPE_RAW_TRACEPOINT`.
pub const PROG_RAW_TRACEPOINT: u32 = 17;
/// `BPF_PROG_TYPE_TRACING` (with [`TRACE_RAW_TP`]: a BTF-typed raw
/// tracepoint, `tp_btf`).
pub const PROG_TRACING: u32 = 26;
/// `BPF_TRACE_RAW_TP`, the expected attach type of a `tp_btf` program.
pub const TRACE_RAW_TP: u32 = 23;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
#[cfg(test)]
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;

/// Bytes of `struct bpf_prog_info` read back: up to and including
/// `recursion_misses` (offset 208), the fields newer kernels add after it
/// left out (the kernel fills what the caller's length covers).
const PROG_INFO_LEN: usize = 216;
/// Offset of `recursion_misses` in `struct bpf_prog_info`.
const PROG_INFO_RECURSION_MISSES: usize = 208;

/// Size of the attribute buffer handed to the kernel: larger than any
/// command's part used here, zero beyond it.
const ATTR_LEN: usize = 128;

/// A bpf(2) failure: which step, and the kernel's answer (with the
/// verifier's log when a program was refused).
#[derive(Debug, thiserror::Error)]
#[error("bpf {what}: {source}{}", if log.is_empty() { String::new() } else { format!("\n{log}") })]
pub struct BpfError {
    /// The step that failed (`map create`, `prog load`, …).
    pub what: &'static str,
    /// The errno.
    pub source: std::io::Error,
    /// The verifier's log (program loads only).
    pub log: String,
}

fn err(what: &'static str) -> BpfError {
    BpfError {
        what,
        source: std::io::Error::last_os_error(),
        log: String::new(),
    }
}

/// Writes little-endian fields at byte offsets into an attribute buffer.
struct Attr([u8; ATTR_LEN]);

impl Attr {
    fn new() -> Attr {
        Attr([0; ATTR_LEN])
    }
    fn u32(mut self, at: usize, v: u32) -> Attr {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(mut self, at: usize, v: u64) -> Attr {
        self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }

    /// bpf(cmd, self): the returned value (a new fd for the creating
    /// commands), or the errno.
    fn call(&mut self, cmd: libc::c_long, what: &'static str) -> Result<i64, BpfError> {
        // SAFETY: the buffer is ATTR_LEN bytes, valid and writable for the
        // call; every pointer stored in it (names, instructions, logs,
        // keys, values) points at memory the caller keeps alive across
        // this call, as the callers below do.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd,
                self.0.as_mut_ptr(),
                ATTR_LEN as libc::c_uint,
            )
        };
        if r < 0 {
            return Err(err(what));
        }
        Ok(r)
    }

    fn fd(mut self, cmd: libc::c_long, what: &'static str) -> Result<OwnedFd, BpfError> {
        let fd = self.call(cmd, what)?;
        // SAFETY: a successful creating command returns a new descriptor
        // owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }
}

/// A BPF map (its descriptor; closed on drop).
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    value_size: u32,
}

impl Map {
    /// `BPF_MAP_CREATE` of `kind` with the given sizes.
    pub fn create(
        kind: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> Result<Map, BpfError> {
        Map::create_with_flags(kind, key_size, value_size, max_entries, 0)
    }

    /// `BPF_MAP_CREATE` with `map_flags` (such as [`MAP_F_MMAPABLE`]).
    pub fn create_with_flags(
        kind: u32,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        flags: u32,
    ) -> Result<Map, BpfError> {
        let fd = Attr::new()
            .u32(0, kind)
            .u32(4, key_size)
            .u32(8, value_size)
            .u32(12, max_entries)
            .u32(16, flags)
            .fd(BPF_MAP_CREATE, "map create")?;
        Ok(Map { fd, value_size })
    }

    /// The descriptor, for a program's `BPF_LD_MAP_FD` instruction.
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// The sum over every possible CPU of a per-CPU array's `u64` value at
    /// `key` (`BPF_MAP_LOOKUP_ELEM` gives one 8-byte-aligned value per
    /// possible CPU).
    pub fn percpu_sum(&self, key: u32) -> Result<u64, BpfError> {
        let cpus = possible_cpus().max(1);
        let slot = (self.value_size as usize).div_ceil(8) * 8;
        let mut values = vec![0u8; cpus * slot];
        let k = key.to_ne_bytes();
        Attr::new()
            .u32(0, self.raw_fd() as u32)
            .u64(8, k.as_ptr() as u64)
            .u64(16, values.as_mut_ptr() as u64)
            .call(BPF_MAP_LOOKUP_ELEM, "map lookup")?;
        Ok(values
            .chunks_exact(slot)
            .map(|c| {
                let mut v = [0u8; 8];
                v.copy_from_slice(&c[..8]);
                u64::from_ne_bytes(v)
            })
            .sum())
    }
}

/// The number of possible CPUs (`/sys/devices/system/cpu/possible`, e.g.
/// `0-3`), which sizes a per-CPU map's values; 1 if unreadable.
pub fn possible_cpus() -> usize {
    let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/possible") else {
        return 1;
    };
    s.trim()
        .split(',')
        .filter_map(|r| match r.split_once('-') {
            Some((a, b)) => Some(b.parse::<usize>().ok()? + 1 - a.parse::<usize>().ok()?),
            None => r.parse::<usize>().ok().map(|_| 1),
        })
        .sum::<usize>()
        .max(1)
}

/// CLOCK_MONOTONIC now, ns: the clock of `bpf_ktime_get_ns`.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always
    // exists, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A loaded program (closed on drop, which unloads it once detached).
#[derive(Debug)]
pub struct Prog {
    fd: OwnedFd,
}

impl Prog {
    /// `BPF_PROG_LOAD` of `insns` (8-byte BPF instructions) as `kind`,
    /// with `license` (the GPL-only helpers, such as
    /// `bpf_probe_read_kernel`, need a GPL-compatible one). A refusal is
    /// loaded once more with the verifier's log on, which the error
    /// carries (loading with the log on always could fail a good program
    /// whose log outgrows the buffer).
    /// `attach_btf_id` (with `expected_attach_type`) names the kernel
    /// type a `BPF_PROG_TYPE_TRACING` program attaches to; 0 otherwise.
    pub fn load(
        kind: u32,
        insns: &[u64],
        license: &str,
        expected_attach_type: u32,
        attach_btf_id: u32,
    ) -> Result<Prog, BpfError> {
        let lic = CString::new(license).map_err(|_| BpfError {
            what: "prog load",
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
            log: "license has a NUL byte".into(),
        })?;
        let attr = || {
            Attr::new()
                .u32(0, kind)
                .u32(4, insns.len() as u32)
                .u64(8, insns.as_ptr() as u64)
                .u64(16, lic.as_ptr() as u64)
                .u32(68, expected_attach_type)
                .u32(108, attach_btf_id)
        };
        let first = match attr().fd(BPF_PROG_LOAD, "prog load") {
            Ok(fd) => return Ok(Prog { fd }),
            Err(e) => e,
        };
        let mut log = vec![0u8; 1 << 20];
        let again = attr()
            .u32(24, 1)
            .u32(28, log.len() as u32)
            .u64(32, log.as_mut_ptr() as u64)
            .fd(BPF_PROG_LOAD, "prog load");
        if let Ok(fd) = again {
            return Ok(Prog { fd });
        }
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        Err(BpfError {
            log: String::from_utf8_lossy(&log[..end]).trim_end().to_string(),
            ..first
        })
    }

    /// Runs the kernel skipped because this program was already running on
    /// the CPU (`bpf_prog_info.recursion_misses`): a tracepoint that fires
    /// in an interrupt while its own program runs in the task it
    /// interrupted. Each is an event the program never saw.
    pub fn recursion_misses(&self) -> Result<u64, BpfError> {
        let mut info = [0u8; PROG_INFO_LEN];
        Attr::new()
            .u32(0, self.fd.as_raw_fd() as u32)
            .u32(4, PROG_INFO_LEN as u32)
            .u64(8, info.as_mut_ptr() as u64)
            .call(BPF_OBJ_GET_INFO_BY_FD, "prog info")?;
        let at = PROG_INFO_RECURSION_MISSES;
        Ok(u64::from_ne_bytes(
            info[at..at + 8].try_into().expect("8 bytes"),
        ))
    }

    /// Attach to the raw tracepoint `name` (`BPF_RAW_TRACEPOINT_OPEN`;
    /// `None` for a `tp_btf` program, which names its tracepoint by its
    /// attach BTF id); the program runs until the returned link is
    /// dropped.
    pub fn attach_raw_tracepoint(&self, name: Option<&str>) -> Result<OwnedFd, BpfError> {
        let n = match name {
            Some(name) => Some(CString::new(name).map_err(|_| BpfError {
                what: "raw tracepoint open",
                source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
                log: format!("tracepoint name {name:?} has a NUL byte"),
            })?),
            None => None,
        };
        Attr::new()
            .u64(0, n.as_ref().map_or(0, |n| n.as_ptr() as u64))
            .u32(8, self.fd.as_raw_fd() as u32)
            .fd(BPF_RAW_TRACEPOINT_OPEN, "raw tracepoint open")
    }
}

/// Per-CPU record rings, written by BPF programs without a lock and read
/// here through mmap'ed pages, the caller polling.
///
/// Two `BPF_MAP_TYPE_ARRAY` maps made mmapable:
/// - `heads`: one entry of [`HEAD_STRIDE`] bytes per possible CPU (so no
///   two CPUs' counters share a cache line), its first `u64` the number of
///   slots that CPU's programs have taken;
/// - `slots`: `per_cpu` entries per CPU (CPU `c`'s at `c * per_cpu`), each
///   a `u64` sequence word and the record.
///
/// A program takes slot `i = heads[cpu]++` (an atomic fetch-and-add, so a
/// program interrupted on its CPU by another keeps its own slot; fully
/// ordered, so nothing it writes in the slot is seen before the count),
/// writes the record, then sets the slot's sequence word to `i + 1` by an
/// atomic exchange (so the record is seen before the word). The reader
/// takes a slot whose word is `i + 1`, and after copying it reads the
/// CPU's count again: if slot `i` has been taken again by then (a lap
/// later), the copy may be torn and is counted lost, as is a slot whose
/// word is already a lap ahead. Nothing is shared between CPUs on the
/// programs' path: no lock, no cache line another CPU's program writes.
pub struct SlotRings {
    _heads: Map,
    _slots: Map,
    heads: *mut u8,
    heads_len: usize,
    slots: *mut u8,
    slots_len: usize,
    cpus: usize,
    per_cpu: u64,
    slot: usize,
    /// Per CPU, the next slot to read.
    tails: Vec<u64>,
    /// Bytes of a record (a multiple of 8).
    record: usize,
    /// One pass's records of one CPU: (index, offset in `copies`).
    batch: Vec<(u64, usize)>,
    copies: Vec<u8>,
}

// SAFETY: the mappings belong to this value alone (nothing else in the
// process holds the pointers), so moving it to another thread is sound.
unsafe impl Send for SlotRings {}

/// Bytes of each CPU's entry in [`SlotRings`]'s `heads` map: a cache line.
pub const HEAD_STRIDE: u32 = 64;

/// Bytes before the record in a [`SlotRings`] slot: the sequence word.
pub const SLOT_SEQ: usize = 8;

/// What one [`SlotRings::consume`] found.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Consumed {
    /// Records handed out.
    pub records: usize,
    /// Records overwritten before they were read.
    pub lost: u64,
    /// The fullest CPU's unread slots when the pass began, as a fraction
    /// of its ring.
    pub fill: f64,
}

impl SlotRings {
    /// Rings of `per_cpu` slots (rounded up to a power of two) for each of
    /// `cpus` CPUs, each slot holding a `record`-byte record (a multiple
    /// of 8), mapped read-only. Returns the rings and the maps' fds
    /// (`heads`, `slots`) for the programs.
    pub fn create(
        cpus: usize,
        per_cpu: u64,
        record: usize,
    ) -> Result<(SlotRings, (i32, i32)), BpfError> {
        let too_big = || BpfError {
            what: "map create",
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
            log: format!("{cpus} CPUs x {per_cpu} slots of {record} bytes do not fit an array"),
        };
        let per_cpu = per_cpu.max(2).next_power_of_two();
        let slot = SLOT_SEQ + record.div_ceil(8) * 8;
        let entries = u32::try_from(per_cpu.saturating_mul(cpus as u64)).map_err(|_| too_big())?;
        let slot_u32 = u32::try_from(slot).map_err(|_| too_big())?;
        let heads = Map::create_with_flags(MAP_ARRAY, 4, HEAD_STRIDE, cpus as u32, MAP_F_MMAPABLE)?;
        let slots = Map::create_with_flags(MAP_ARRAY, 4, slot_u32, entries, MAP_F_MMAPABLE)?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let heads_len = (cpus * HEAD_STRIDE as usize).div_ceil(page) * page;
        let slots_len = (entries as usize * slot).div_ceil(page) * page;
        let heads_ptr = map_shared(&heads, heads_len, "array mmap (heads)")?;
        let slots_ptr = match map_shared(&slots, slots_len, "array mmap (slots)") {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: mapped just above with this length, unmapped once.
                unsafe { libc::munmap(heads_ptr.cast(), heads_len) };
                return Err(e);
            }
        };
        let fds = (heads.raw_fd(), slots.raw_fd());
        Ok((
            SlotRings {
                _heads: heads,
                _slots: slots,
                heads: heads_ptr,
                heads_len,
                slots: slots_ptr,
                slots_len,
                cpus,
                per_cpu,
                slot,
                tails: vec![0; cpus],
                record: record.div_ceil(8) * 8,
                batch: Vec::new(),
                copies: Vec::new(),
            },
            fds,
        ))
    }

    /// Slots per CPU (a power of two).
    pub fn per_cpu(&self) -> u64 {
        self.per_cpu
    }

    fn head(&self, cpu: usize) -> u64 {
        // SAFETY: `cpu < self.cpus`, so the entry lies within the mapped
        // `heads` (page aligned, entries 64 bytes apart: aligned for an
        // AtomicU64); programs update it with atomic instructions.
        unsafe { &*(self.heads.add(cpu * HEAD_STRIDE as usize) as *const AtomicU64) }
            .load(Ordering::Acquire)
    }

    fn seq(&self, at: usize) -> &AtomicU64 {
        // SAFETY: callers pass the offset of a slot within the mapped
        // `slots` (slots are a multiple of 8 bytes from a page-aligned
        // start, so the word is aligned); programs set it by atomic
        // exchange.
        unsafe { &*(self.slots.add(at) as *const AtomicU64) }
    }

    /// Hand every CPU's records written since the last call to `f(cpu,
    /// record)`, each CPU's in the order its programs took the slots.
    /// Stops on a CPU at a slot still being written (the next call starts
    /// there).
    pub fn consume(&mut self, mut f: impl FnMut(usize, &[u8])) -> Consumed {
        let mut out = Consumed::default();
        let words = self.record / 8;
        for cpu in 0..self.cpus {
            let head = self.head(cpu);
            let mut i = self.tails[cpu];
            out.fill = out
                .fill
                .max(head.saturating_sub(i) as f64 / self.per_cpu as f64);
            // Slots a lap or more behind the head have been taken again.
            if head.saturating_sub(i) > self.per_cpu {
                out.lost += head - self.per_cpu - i;
                i = head - self.per_cpu;
            }
            self.batch.clear();
            self.copies.clear();
            while i < head {
                let idx = cpu as u64 * self.per_cpu + (i & (self.per_cpu - 1));
                let at = idx as usize * self.slot;
                let seq = self.seq(at).load(Ordering::Acquire);
                if seq > i + 1 {
                    out.lost += 1;
                    i += 1;
                    continue;
                }
                if seq != i + 1 {
                    break;
                }
                self.batch.push((i, self.copies.len()));
                for w in 0..words {
                    // SAFETY: the record's words lie within this slot,
                    // inside the mapping, 8-byte aligned. A program may be
                    // taking the slot again (a lap later) and overwriting
                    // them: the count read after the copies tells.
                    let v = unsafe {
                        std::ptr::read_volatile(self.slots.add(at + SLOT_SEQ + 8 * w) as *const u64)
                    };
                    self.copies.extend_from_slice(&v.to_ne_bytes());
                }
                i += 1;
            }
            self.tails[cpu] = i;
            if self.batch.is_empty() {
                continue;
            }
            // The copies above are ordered before this read of the count:
            // a slot taken again after it was not written during them.
            std::sync::atomic::fence(Ordering::Acquire);
            let safe_from = self.head(cpu).saturating_sub(self.per_cpu);
            for &(i, at) in &self.batch {
                if i < safe_from {
                    out.lost += 1;
                    continue;
                }
                f(cpu, &self.copies[at..at + self.record]);
                out.records += 1;
            }
        }
        out
    }
}

/// mmap `len` bytes of `map`'s values, read-only and shared.
fn map_shared(map: &Map, len: usize, what: &'static str) -> Result<*mut u8, BpfError> {
    // SAFETY: mapping an mmapable array's fd from offset 0 for at most its
    // values' (page-rounded) length, read-only; checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            map.raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(err(what));
    }
    Ok(p.cast())
}

impl Drop for SlotRings {
    fn drop(&mut self) {
        // SAFETY: both regions were mapped in `create` with these lengths
        // and are unmapped once, here.
        unsafe {
            libc::munmap(self.heads.cast(), self.heads_len);
            libc::munmap(self.slots.cast(), self.slots_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn possible_cpus_counts_ranges() {
        assert!(possible_cpus() >= 1);
    }

    /// A program that exits without setting R0 is refused, and the
    /// refusal says why (the verifier's log), not only EACCES.
    #[test]
    fn a_refused_program_carries_the_verifiers_log() {
        if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
            return;
        }
        let e = Prog::load(PROG_RAW_TRACEPOINT, &[0x95], "GPL", 0, 0).unwrap_err();
        assert!(e.log.contains("R0"), "{e}");
    }

    /// Empty rings hand out nothing, and a fresh counter reads as zero.
    #[test]
    fn empty_rings_and_a_fresh_counter_read_as_nothing() {
        let (mut rings, (heads, slots)) = SlotRings::create(possible_cpus(), 100, 32).unwrap();
        assert!(heads >= 0 && slots >= 0);
        assert_eq!(rings.per_cpu(), 128);
        let got = rings.consume(|_, _| panic!("a record in an empty ring"));
        assert_eq!(got.records, 0);
        assert_eq!(got.lost, 0);
        let lost = Map::create(MAP_PERCPU_ARRAY, 4, 8, 1).unwrap();
        assert_eq!(lost.percpu_sum(0).unwrap(), 0);
    }

    /// `BPF_MAP_UPDATE_ELEM` of an array entry: what a program's stores
    /// would leave there.
    fn put(map: &Map, key: u32, value: &[u8]) {
        let k = key.to_ne_bytes();
        Attr::new()
            .u32(0, map.raw_fd() as u32)
            .u64(8, k.as_ptr() as u64)
            .u64(16, value.as_ptr() as u64)
            .call(BPF_MAP_UPDATE_ELEM, "map update")
            .unwrap();
    }

    fn slot(seq: u64, tag: u64) -> Vec<u8> {
        let mut v = seq.to_ne_bytes().to_vec();
        v.extend_from_slice(&tag.to_ne_bytes());
        v
    }

    fn head(n: u64) -> Vec<u8> {
        let mut v = n.to_ne_bytes().to_vec();
        v.resize(HEAD_STRIDE as usize, 0);
        v
    }

    /// The reader hands out each CPU's sealed slots in order, waits at a
    /// slot still being written, and counts the slots taken again a lap
    /// later as lost, never handing one out twice.
    #[test]
    fn sealed_slots_are_read_once_and_overwritten_ones_counted() {
        let cpus = 2;
        let (mut rings, _) = SlotRings::create(cpus, 4, 8).unwrap();
        let read = |rings: &mut SlotRings| {
            let mut got = Vec::new();
            let c = rings
                .consume(|cpu, rec| got.push((cpu, u64::from_ne_bytes(rec.try_into().unwrap()))));
            (got, c.lost)
        };
        // CPU 1 took three slots; the third is still being written.
        put(&rings._slots, 4, &slot(1, 10));
        put(&rings._slots, 5, &slot(2, 11));
        put(&rings._slots, 6, &slot(0, 0));
        put(&rings._heads, 1, &head(3));
        assert_eq!(read(&mut rings), (vec![(1, 10), (1, 11)], 0));
        // Sealed now; CPU 0 wrote one.
        put(&rings._slots, 6, &slot(3, 12));
        put(&rings._slots, 0, &slot(1, 20));
        put(&rings._heads, 0, &head(1));
        assert_eq!(read(&mut rings), (vec![(0, 20), (1, 12)], 0));
        assert_eq!(read(&mut rings), (vec![], 0));
        // CPU 1 took indexes 3..8; index 7 reused index 3's slot before
        // the reader came, so index 3 is gone (its slot's word says 8).
        put(&rings._slots, 7, &slot(4, 13));
        put(&rings._slots, 4, &slot(5, 14));
        put(&rings._slots, 5, &slot(6, 15));
        put(&rings._slots, 6, &slot(7, 16));
        put(&rings._slots, 7, &slot(8, 17));
        put(&rings._heads, 1, &head(8));
        assert_eq!(
            read(&mut rings),
            (vec![(1, 14), (1, 15), (1, 16), (1, 17)], 1)
        );
        assert_eq!(read(&mut rings), (vec![], 0));
        put(&rings._heads, 1, &head(14));
        // Six more slots taken, more than a lap: the reader skips the two
        // that are gone for sure and finds the rest unsealed.
        let (got, lost) = read(&mut rings);
        assert!(got.is_empty());
        assert_eq!(lost, 2);
    }
}
