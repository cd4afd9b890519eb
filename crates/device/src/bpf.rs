//! The bpf(2) system call, as far as a block recorder needs it: a
//! `BPF_MAP_TYPE_RINGBUF` read through its mmap'ed pages, a per-CPU array
//! of counters, a raw-tracepoint program loaded from instructions built
//! elsewhere (the trace crate's encoder), and its attachment. It lives here
//! because the device crate is where drivelab's `unsafe` reaches the
//! kernel: every caller gets owned file descriptors and a safe ring reader.
//!
//! No libbpf: the attribute unions are laid out here as the kernel's UAPI
//! (`include/uapi/linux/bpf.h`) defines them, zero-filled beyond the fields
//! used, as the kernel requires.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// `BPF_MAP_TYPE_PERCPU_ARRAY`.
pub const MAP_PERCPU_ARRAY: u32 = 6;
/// `BPF_MAP_TYPE_RINGBUF`.
pub const MAP_RINGBUF: u32 = 27;
/// `BPF_PROG_TYPE_RAW_TRACEPOINT`.
pub const PROG_RAW_TRACEPOINT: u32 = 17;
/// `BPF_PROG_TYPE_TRACING` (with [`TRACE_RAW_TP`]: a BTF-typed raw
/// tracepoint, `tp_btf`).
pub const PROG_TRACING: u32 = 26;
/// `BPF_TRACE_RAW_TP`, the expected attach type of a `tp_btf` program.
pub const TRACE_RAW_TP: u32 = 23;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
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
        let fd = Attr::new()
            .u32(0, kind)
            .u32(4, key_size)
            .u32(8, value_size)
            .u32(12, max_entries)
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

/// The consumer's view of a `BPF_MAP_TYPE_RINGBUF`: its pages mapped, read
/// without a wakeup per record (the caller polls). Records are handed out
/// in the order their producers reserved them.
pub struct RingBuf {
    _map: Map,
    consumer: *mut u8,
    producer: *mut u8,
    page: usize,
    size: usize,
}

// SAFETY: the mappings belong to this value alone (nothing else in the
// process holds the pointers), so moving it to another thread is sound.
unsafe impl Send for RingBuf {}

/// `BPF_RINGBUF_BUSY_BIT`, `BPF_RINGBUF_DISCARD_BIT`, header length.
const RB_BUSY: u32 = 1 << 31;
const RB_DISCARD: u32 = 1 << 30;
const RB_HDR: usize = 8;

impl RingBuf {
    /// A new ring of `size` bytes (a power of two, a multiple of the page
    /// size) and its mappings: the consumer page read-write, the producer
    /// page and the data (mapped twice by the kernel, so a record that
    /// wraps reads contiguously) read-only.
    pub fn create(size: usize) -> Result<(RingBuf, i32), BpfError> {
        let map = Map::create(MAP_RINGBUF, 0, 0, size as u32)?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let fd = map.raw_fd();
        // SAFETY: mapping a ringbuf map's fd at offset 0 for one page
        // read-write is the kernel's consumer-position page; the result is
        // checked against MAP_FAILED.
        let consumer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if consumer == libc::MAP_FAILED {
            return Err(err("ringbuf mmap (consumer)"));
        }
        // SAFETY: at offset `page` the kernel maps the producer page and
        // the data twice, read-only; checked against MAP_FAILED.
        let producer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page + 2 * size,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                page as libc::off_t,
            )
        };
        if producer == libc::MAP_FAILED {
            let e = err("ringbuf mmap (producer)");
            // SAFETY: `consumer` is the page mapped above, unmapped once.
            unsafe { libc::munmap(consumer, page) };
            return Err(e);
        }
        Ok((
            RingBuf {
                _map: map,
                consumer: consumer.cast(),
                producer: producer.cast(),
                page,
                size,
            },
            fd,
        ))
    }

    fn consumer_pos(&self) -> &AtomicU64 {
        // SAFETY: the consumer page is mapped for the life of self, and
        // its first 8 bytes are the kernel's `consumer_pos` (page aligned,
        // so aligned for an AtomicU64), which only this process writes.
        unsafe { &*(self.consumer as *const AtomicU64) }
    }

    fn producer_pos(&self) -> &AtomicU64 {
        // SAFETY: the producer page is mapped for the life of self; its
        // first 8 bytes are `producer_pos`, written by the kernel with
        // release ordering, page aligned.
        unsafe { &*(self.producer as *const AtomicU64) }
    }

    /// Hand every committed record to `f` (its bytes, without the ring's
    /// header), skipping discarded ones, and release their space. Stops
    /// at a record still being written. Returns the records handed out.
    pub fn consume(&mut self, mut f: impl FnMut(&[u8])) -> usize {
        let mut cons = self.consumer_pos().load(Ordering::Acquire);
        let prod = self.producer_pos().load(Ordering::Acquire);
        let mask = self.size as u64 - 1;
        let mut n = 0;
        while cons < prod {
            let at = self.page + (cons & mask) as usize;
            // SAFETY: `at` is within the first copy of the data
            // (page..page+size), 8-byte aligned (records are), so the
            // header word is mapped and aligned; the kernel sets it with
            // release ordering when the record is committed.
            let len =
                unsafe { &*(self.producer.add(at) as *const AtomicU32) }.load(Ordering::Acquire);
            if len & RB_BUSY != 0 {
                break;
            }
            let body = (len & !(RB_BUSY | RB_DISCARD)) as usize;
            if len & RB_DISCARD == 0 && body <= self.size {
                // SAFETY: the body starts after the header and is at most
                // `size` bytes; the data is mapped twice in a row, so
                // `at + 8 + body` lies within page + 2*size; the producer
                // does not touch a committed record until consumer_pos
                // passes it.
                let rec =
                    unsafe { std::slice::from_raw_parts(self.producer.add(at + RB_HDR), body) };
                f(rec);
                n += 1;
            }
            cons += ((RB_HDR + body + 7) & !7) as u64;
        }
        // Released once for the whole batch: producers on every CPU read
        // this word on each reserve, so a store per record would pull its
        // cache line away from them once per record.
        self.consumer_pos().store(cons, Ordering::Release);
        n
    }
}

impl Drop for RingBuf {
    fn drop(&mut self) {
        // SAFETY: both regions were mapped in `create` with these lengths
        // and are unmapped once, here.
        unsafe {
            libc::munmap(self.consumer.cast(), self.page);
            libc::munmap(self.producer.cast(), self.page + 2 * self.size);
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

    /// An empty ring hands out nothing, and its counters read as zero.
    #[test]
    fn an_empty_ring_and_a_fresh_counter_read_as_nothing() {
        let (mut ring, fd) = RingBuf::create(4096).unwrap();
        assert!(fd >= 0);
        assert_eq!(ring.consume(|_| panic!("a record in an empty ring")), 0);
        let lost = Map::create(MAP_PERCPU_ARRAY, 4, 8, 1).unwrap();
        assert_eq!(lost.percpu_sum(0).unwrap(), 0);
    }
}
