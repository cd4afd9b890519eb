//! fio's verify family on drivelab's terms: what written blocks carry
//! (`verify`, `verify_pattern`, `verify_interval`) and the checks reads make
//! (`do_verify`).
//!
//! Data is laid out per *verify block* of `verify_interval` bytes (default:
//! the job's smallest transfer size) at its absolute offset, so a block's
//! content depends only on where it is: overwrites, overlapping sizes and
//! other jobs reading it later all agree on what it must hold.
//!
//! - `pattern`: the block is `verify_pattern` repeated from its first byte.
//! - `meta`: a 24-byte header (magic, block length, the block's own offset)
//!   then the payload (the pattern, or bytes keyed by the offset); a read
//!   checks header and payload, so a block written to the wrong place or
//!   never written is caught.
//! - `crc32c` (`crc32c-intel`): the same header plus the CRC-32C
//!   (Castagnoli) of the whole block with the CRC field zeroed.
//! - `md5`: the same header plus the first 8 bytes of the MD5 digest (RFC
//!   1321) of the whole block with that field zeroed.
//! - `crc32` (IEEE 802.3), `crc64` (CRC-64/XZ), `crc16` (ARC), `crc7`
//!   (MMC), `xxhash` (XXH32), `sha1`, `sha256`, `sha512` and `sha3-*`
//!   (the first 8 bytes of the digest): the same header, that check value in the same
//!   field. The header is drivelab's, not fio's: a block is
//!   checked by the tool that wrote it.
//!
//! A writing job with `do_verify=1` reads back every extent it wrote once it
//! is done ([`ReadBack`], replaying the job's generator), and those reads are
//! counted as the job's reads, as fio counts its verify phase. A reading job
//! checks each block as it comes in. A failed check ends the job with fio's
//! verify error (EILSEQ) and says where and what.

use crate::job::checksums;
use crate::spec::decl::{opt, OptionDecl};

use drivelab_engine::ioloop::{After, Done, Driver, Next};
use drivelab_patterns::prng::splitmix64;

use crate::job::gen::{GenConfig, Generator, IoDesc, Op};
use crate::job::outcome::DirStats;
pub use crate::job::types::{Content, VerifyExtras, VerifyKind};

const MAGIC: u32 = 0x4456_4c44; // "DLVD"
/// The verify family's options: what written blocks carry (`verify`,
/// `verify_pattern`, `verify_interval`, and `buffer_pattern` for writes
/// verify does not fill) and whether reads check them (`do_verify`).
/// When checks happen and what a failed one does are
/// [`VerifyExtras`], in the error policy's family.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyOpts {
    /// What written data carries and reads check (`verify`).
    pub kind: Option<VerifyKind>,
    /// Read back and check what a writing job wrote; check what a reading
    /// job reads (`do_verify`); default on.
    pub do_verify: bool,
    /// A writing job's writes are generated and counted but not issued,
    /// then what they would have written is read back and checked, as a
    /// check of an earlier run's data (`verify_only`).
    pub only: bool,
    /// Data pattern of written blocks (`verify_pattern`).
    pub pattern: Option<Vec<u8>>,
    /// What write buffers hold (`buffer_pattern`), repeated from each
    /// buffer's first byte; None: random data.
    pub buffer_pattern: Option<Vec<u8>>,
    /// Bytes covered by one verification header (`verify_interval`);
    /// default: the smallest block size.
    pub interval: Option<u64>,
    /// Where in each block the header goes (`verify_offset`, at least
    /// fio's minimum of 40); None: at the start.
    pub header_at: Option<u64>,
    /// The read-back replays the job's writes as it issued them, each as
    /// a read, instead of reading each written block once in offset order
    /// (`experimental_verify`); the job then keeps no verify log, so
    /// `verify_backlog` and `trim_percentage` do nothing, as in fio.
    pub experimental: bool,
    /// A writing job that ends early saves how far it got
    /// (`verify_state_save`, default on; [`crate::job::verify_state`]).
    pub state_save: bool,
    /// Check only what the saved state says was written
    /// (`verify_state_load`).
    pub state_load: bool,
}

impl Default for VerifyOpts {
    fn default() -> VerifyOpts {
        VerifyOpts {
            kind: None,
            do_verify: true,
            only: false,
            pattern: None,
            buffer_pattern: None,
            interval: None,
            header_at: None,
            experimental: false,
            state_save: true,
            state_load: false,
        }
    }
}

impl VerifyOpts {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "verify",
            [],
            Text,
            "0 (off)",
            "crc32c (alias crc32c-intel), crc32, crc64, crc16, crc7, md5, sha1, sha256, sha512, sha3-224, sha3-256, sha3-384, sha3-512, xxhash, meta or pattern: written blocks carry a header and checksum, offset or pattern that reads check"
        ),
        opt!(
            "do_verify",
            [],
            Bool,
            "1",
            "with verify: read back and check what a writing job wrote; check what a reading job reads"
        ),
        opt!(
            "verify_only",
            [],
            Bool,
            "0",
            "with verify: a writing job counts its writes without issuing them, then reads back and checks what they would have written (an earlier run's data)"
        ),
        opt!(
            "verify_pattern",
            [],
            Text,
            "",
            "data of written blocks: 0xHEX, a number or a \"string\"; alone it means verify=pattern"
        ),
        opt!(
            "buffer_pattern",
            [],
            Text,
            "",
            "what write buffers hold, repeated: 0xHEX, a number, a \"string\" or a 'file', joined in any order (fio's syntax; random data when unset)"
        ),
        opt!(
            "verify_interval",
            [],
            Size,
            "smallest block size",
            "bytes covered by one verify header (a multiple of 512)"
        ),
        opt!(
            "verify_offset",
            [],
            Int,
            "0",
            "with verify: the header of each verify block changes places with the bytes this far into the block before the write, and back before the check (at least 40, as fio; the header must fit in the block)",
            40,
            u32::MAX as u64,
            "bytes"
        ),
        opt!(
            "verify_state_save",
            [],
            Bool,
            "1",
            "with verify: a writing job that ends before it wrote all it was to write saves how far it got in local-JOB-N-verify.state (drivelab's own one-line file), for verify_state_load"
        ),
        opt!(
            "verify_state_load",
            [],
            Bool,
            "0",
            "with verify: check only the blocks the saved state (local-JOB-N-verify.state, see verify_state_save) says were written, e.g. with verify_only after a run that was cut short"
        ),
        opt!(
            "experimental_verify",
            [],
            Bool,
            "0",
            "with verify: the read-back replays the job's writes in the order issued, each as a read (a block written twice is read twice), instead of each written block once; verify_backlog and trim_percentage then do nothing, as in fio"
        ),
    ];
}

impl crate::spec::family::OptionFamily for VerifyOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), crate::SpecError> {
        match key {
            "verify" => self.kind = VerifyKind::parse(key, v)?,
            "do_verify" => self.do_verify = crate::spec::value::parse_flag(key, v)?,
            "verify_only" => self.only = crate::spec::value::parse_flag(key, v)?,
            "experimental_verify" => self.experimental = crate::spec::value::parse_flag(key, v)?,
            "verify_state_save" => self.state_save = crate::spec::value::parse_flag(key, v)?,
            "verify_state_load" => self.state_load = crate::spec::value::parse_flag(key, v)?,
            "verify_offset" => {
                self.header_at = Some(crate::spec::decl::parse_in(Self::OPTIONS, key, v)?)
            }
            "buffer_pattern" => {
                self.buffer_pattern = Some(crate::spec::fio_pattern::parse(key, v)?)
            }
            "verify_pattern" => {
                self.pattern = Some(crate::spec::fio_pattern::parse(key, v)?);
                if self.kind.is_none() {
                    // fio: a pattern alone means verify=pattern.
                    self.kind = Some(VerifyKind::Pattern);
                }
            }
            _ => {
                let b = crate::spec::size::parse_bytes(key, v)?;
                if b == 0 || b % 512 != 0 {
                    return Err(crate::SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "a multiple of 512 bytes".to_string(),
                    });
                }
                self.interval = Some(b);
            }
        }
        Ok(())
    }
}

/// Bytes of the header of `meta` and `crc32c` blocks.
pub const HEADER: usize = 24;
/// Seed of the payload of blocks without a pattern: fixed, so any job can
/// check what another wrote.
const PAYLOAD_SEED: u64 = 0x5645_5249_4659_0001;

/// The table of a reflected CRC of polynomial `poly` (reversed form).
fn crc_table(poly: u64) -> [u64; 256] {
    let mut t = [0u64; 256];
    for (i, e) in t.iter_mut().enumerate() {
        let mut c = i as u64;
        for _ in 0..8 {
            c = if c & 1 != 0 { poly ^ (c >> 1) } else { c >> 1 };
        }
        *e = c;
    }
    t
}

/// A reflected CRC over `data` with init and final xor all ones (of
/// `mask`'s width).
fn crc_reflected(t: &[u64; 256], mask: u64, data: &[u8]) -> u64 {
    let mut c = mask;
    for &b in data {
        c = t[((c ^ u64::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c & mask
}

fn crc32c_table() -> &'static [u64; 256] {
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| crc_table(0x82F6_3B78))
}

/// CRC-32 (IEEE 802.3, as zlib: reflected, init and final xor all ones).
pub fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| crc_table(0xEDB8_8320));
    crc_reflected(t, 0xffff_ffff, data) as u32
}

/// CRC-64/XZ (ECMA-182 polynomial, reflected, init and final xor all ones).
pub fn crc64(data: &[u8]) -> u64 {
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| crc_table(0xC96C_5795_D787_0F42));
    crc_reflected(t, u64::MAX, data)
}

/// The first 8 bytes of a digest, little-endian.
fn first_8(d: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

/// The check value a block of `kind` carries in its header (bytes 16..)
/// and its width in bytes; None for meta and pattern.
pub fn check_value(kind: VerifyKind, block: &[u8]) -> Option<(u64, usize)> {
    use sha2::{Digest, Sha256, Sha512};
    Some(match kind {
        VerifyKind::Crc32c => (u64::from(crc32c(block)), 4),
        VerifyKind::Crc32 => (u64::from(crc32(block)), 4),
        VerifyKind::Crc64 => (crc64(block), 8),
        VerifyKind::Md5 => (md5_64(block), 8),
        VerifyKind::Sha256 => (first_8(&Sha256::digest(block)), 8),
        VerifyKind::Sha512 => (first_8(&Sha512::digest(block)), 8),
        VerifyKind::Crc16 => (u64::from(checksums::crc16(block)), 4),
        VerifyKind::Crc7 => (u64::from(checksums::crc7(block)), 4),
        VerifyKind::Sha1 => (first_8(&checksums::sha1(block)), 8),
        VerifyKind::Xxhash => (u64::from(checksums::xxh32(block, 0)), 4),
        VerifyKind::Sha3(bits) => (first_8(&checksums::sha3(block, usize::from(bits))), 8),
        VerifyKind::Meta | VerifyKind::Pattern => return None,
    })
}

/// The first 8 bytes of the MD5 digest of `data` (RFC 1321).
pub fn md5_64(data: &[u8]) -> u64 {
    use md5::{Digest, Md5};
    first_8(&Md5::digest(data))
}

/// CRC-32C (Castagnoli, reflected, init and final xor all ones).
pub fn crc32c(data: &[u8]) -> u32 {
    crc_reflected(crc32c_table(), 0xffff_ffff, data) as u32
}

impl Content {
    fn payload(&self, block: &mut [u8], offset: u64) {
        match &self.pattern {
            Some(p) => {
                for (i, b) in block.iter_mut().enumerate() {
                    *b = p[i % p.len()];
                }
            }
            None => {
                let mut s = PAYLOAD_SEED ^ offset;
                for c in block.chunks_mut(8) {
                    let v = splitmix64(&mut s).to_le_bytes();
                    c.copy_from_slice(&v[..c.len()]);
                }
            }
        }
    }

    /// Fill `buf` (a multiple of the interval) for a write at `offset`.
    pub fn fill(&self, buf: &mut [u8], offset: u64) {
        let n = self.interval;
        for (i, block) in buf.chunks_mut(n).enumerate() {
            let off = offset + (i * n) as u64;
            self.fill_block(block, off);
        }
    }

    fn fill_block(&self, block: &mut [u8], off: u64) {
        self.payload(block, off);
        if self.kind == VerifyKind::Pattern || block.len() < HEADER {
            return;
        }
        block[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        let len = block.len() as u32;
        block[4..8].copy_from_slice(&len.to_le_bytes());
        block[8..16].copy_from_slice(&off.to_le_bytes());
        block[16..24].fill(0);
        if let Some((c, w)) = check_value(self.kind, block) {
            block[16..16 + w].copy_from_slice(&c.to_le_bytes()[..w]);
        }
        self.swap_header(block);
    }

    /// `verify_offset`: the header and the bytes at `header_at` change
    /// places (the same swap puts them back), as fio's `memswp`.
    fn swap_header(&self, block: &mut [u8]) {
        let at = self.header_at;
        if at == 0 || self.kind == VerifyKind::Pattern || block.len() < at + HEADER {
            return;
        }
        let (head, rest) = block.split_at_mut(at);
        head[..HEADER].swap_with_slice(&mut rest[..HEADER]);
    }

    /// Check what a read at `offset` brought in; the message says which
    /// block and what was wrong.
    pub fn check(&self, buf: &[u8], offset: u64) -> Result<(), String> {
        let n = self.interval;
        let mut want = vec![0u8; n];
        for (i, block) in buf.chunks(n).enumerate() {
            let off = offset + (i * n) as u64;
            let want = &mut want[..block.len()];
            self.fill_block(want, off);
            if block == &want[..] {
                continue;
            }
            let what = self.kind.name();
            // The header where fill_block wrote it, put back in front.
            let mut own = block.to_vec();
            self.swap_header(&mut own);
            let block = &own[..];
            if self.kind != VerifyKind::Pattern && block.len() >= HEADER {
                let word = |r: std::ops::Range<usize>| {
                    let mut b = [0u8; 8];
                    b[..r.len()].copy_from_slice(&block[r]);
                    u64::from_le_bytes(b)
                };
                if word(0..4) != u64::from(MAGIC) {
                    return Err(format!(
                        "verify ({what}) failed at offset {off}: bad header magic {:#x} (never written, or not by this rule)",
                        word(0..4)
                    ));
                }
                if word(8..16) != off {
                    return Err(format!(
                        "verify ({what}) failed at offset {off}: the block holds the header of offset {}",
                        word(8..16)
                    ));
                }
                let mut copy = block.to_vec();
                copy[16..24].fill(0);
                if let Some((got, w)) = check_value(self.kind, &copy) {
                    let stored = word(16..16 + w);
                    if stored != got {
                        let (what, digits) = (self.kind.name(), 2 + 2 * w);
                        let sum = if w == 4 { "checksum" } else { "digest" };
                        return Err(format!(
                            "verify ({what}) failed at offset {off}: {sum} {got:#0digits$x}, header says {stored:#0digits$x}"
                        ));
                    }
                }
            }
            let at = block
                .iter()
                .zip(want.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Err(format!(
                "verify ({what}) failed at offset {}: byte {:#04x}, expected {:#04x}",
                off + at as u64,
                block[at],
                want[at]
            ));
        }
        Ok(())
    }
}

/// Tag of a backlog verify read in the job loop.
pub const VERIFY_TAG: u64 = u64::MAX;

/// `verify_backlog`: the writes not yet checked, oldest first, and when to
/// check them, as fio decides it. A write joins when it is issued; when the
/// number waiting is a multiple of `verify_backlog` and the last completed
/// I/O was not a read, the next `verify_backlog_batch` I/Os are reads of
/// the oldest ones, each once its write has completed (until then the job
/// writes on). What is left is checked when the job is done.
#[derive(Debug, Clone)]
pub struct Backlog {
    /// Writes in issue order, each with its state: 0 in flight, 1 done,
    /// 2 failed (never checked, and not counted as waiting, as fio drops a
    /// failed write from its list).
    fifo: std::collections::VecDeque<(IoDesc, u8)>,
    failed: u64,
    head_seq: u64,
    every: u64,
    batch: u64,
    pending: u64,
}

impl Backlog {
    /// A backlog checking after every `every` writes, `batch` at a time.
    pub fn new(every: u64, batch: u64) -> Backlog {
        Backlog {
            fifo: std::collections::VecDeque::with_capacity(every.min(1 << 16) as usize * 2),
            failed: 0,
            head_seq: 0,
            every: every.max(1),
            batch,
            pending: 0,
        }
    }

    /// A write was issued; its tag (the sequence number to complete it with).
    pub fn written(&mut self, io: IoDesc) -> u64 {
        self.fifo.push_back((io, 0));
        self.head_seq + self.fifo.len() as u64 - 1
    }

    /// The write tagged `seq` completed (`ok`), or failed.
    pub fn completed(&mut self, seq: u64, ok: bool) {
        if let Some(i) = seq.checked_sub(self.head_seq) {
            if let Some(e) = self.fifo.get_mut(i as usize) {
                e.1 = if ok { 1 } else { 2 };
                self.failed += u64::from(!ok);
            }
        }
    }

    /// The next verify read, if one is due now.
    pub fn next(&mut self, last_was_read: bool) -> Option<IoDesc> {
        while self.fifo.front().is_some_and(|e| e.1 == 2) {
            self.fifo.pop_front();
            self.head_seq += 1;
            self.failed -= 1;
        }
        let n = self.fifo.len() as u64 - self.failed;
        if n == 0 {
            return None;
        }
        if self.pending == 0 {
            if n % self.every != 0 || last_was_read {
                return None;
            }
            self.pending = self.batch;
        }
        if self.pending == 0 || self.fifo.front().is_none_or(|e| e.1 != 1) {
            return None;
        }
        let (mut io, _) = self.fifo.pop_front()?;
        self.head_seq += 1;
        self.pending -= 1;
        io.op = Op::Read;
        Some(io)
    }

    /// The writes never checked, for the pass after the job.
    pub fn into_left(self) -> Vec<IoDesc> {
        self.fifo
            .into_iter()
            .filter(|e| e.1 != 2)
            .map(|(io, _)| io)
            .collect()
    }
}

impl Content {
    /// `verify_dump`: write the first bad verify block of a read at
    /// `offset` of target `name` as fio names them, `NAME.OFFSET.received`
    /// and `NAME.OFFSET.expected`, in the current directory; returns the
    /// file names written.
    pub fn dump(&self, buf: &[u8], offset: u64, name: &str) -> Vec<String> {
        let n = self.interval;
        let base = std::path::Path::new(name)
            .file_name()
            .map_or_else(|| name.to_string(), |b| b.to_string_lossy().into_owned());
        let mut want = vec![0u8; n];
        for (i, block) in buf.chunks(n).enumerate() {
            let off = offset + (i * n) as u64;
            let want = &mut want[..block.len()];
            self.fill_block(want, off);
            if block == &want[..] {
                continue;
            }
            let mut out = Vec::new();
            for (kind, data) in [("received", block), ("expected", &want[..])] {
                let f = format!("{base}.{off}.{kind}");
                let file = drivelab_device::output::Output::new(&f).option("verify_dump");
                if file.write(data).is_ok() {
                    out.push(f);
                }
            }
            return out;
        }
        Vec::new()
    }
}

/// What a failed check does to the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Counted, and the job goes on (`continue_on_error=verify`).
    Pass,
    /// Counted, and the job ends without failing: a verify error it may go
    /// past, under `verify_fatal` (fio ends the job, exit status 0).
    Stop,
    /// The job fails with it.
    Fail,
}

/// A failed check of a read at `offset` of target `name` (message `m`):
/// dump the blocks (`verify_dump`), count it, and say what it does to the
/// job.
pub fn verify_failed(
    x: &crate::job::error_policy::LoopExtras,
    count: &mut crate::job::types::ErrorCount,
    c: &Content,
    got: &[u8],
    offset: u64,
    name: &str,
    m: &str,
) -> Verdict {
    if x.verify.dump {
        for f in c.dump(got, offset, name) {
            eprintln!("drivelab: {m}; data dumped as {f}");
        }
    }
    count.add(libc::EILSEQ);
    let passed = x.policy.passes(Op::Read, libc::EILSEQ);
    if passed && x.policy.dump {
        eprintln!(
            "drivelab: {m} ({})",
            if x.verify.fatal {
                "the job ends: verify_fatal"
            } else {
                "continuing: continue_on_error"
            }
        );
    }
    match (passed, x.verify.fatal) {
        (true, false) => Verdict::Pass,
        (true, true) => Verdict::Stop,
        (false, _) => Verdict::Fail,
    }
}

/// The distinct extents a job wrote: its generator replayed for the `ios`
/// I/Os it issued (a job's generator is deterministic for its seed), in the
/// order fio 3.33 reads them back (`log_io_piece`): as written when
/// `in_write_order` (a random job with a random map, whose blocks are
/// written once a pass), else by target and offset.
pub fn written_extents(
    gen: &GenConfig,
    ios: u64,
    in_write_order: bool,
) -> Result<Vec<IoDesc>, crate::job::types::GenError> {
    let mut g = Generator::new(gen)?;
    let mut v: Vec<IoDesc> = (0..ios)
        .map(|_| g.next_io())
        .filter(|io| io.op == Op::Write)
        .collect();
    if in_write_order {
        // A block written again in a later pass is read back once, where
        // it was first written.
        let mut seen = std::collections::HashSet::with_capacity(v.len());
        v.retain(|io| seen.insert((io.target, io.offset, io.len)));
    } else {
        v.sort_by_key(|io| (io.target, io.offset, io.len));
        v.dedup();
    }
    Ok(v)
}

/// The extents a replayed iolog (`read_iolog`) wrote in its first `ios`
/// reads, writes and trims, in the order fio 3.33 reads them back: by
/// target and offset, a write left out when a later one overlaps it (its
/// blocks hold the later data), as fio's verify tree drops it.
pub fn replayed_extents(log: &[(IoDesc, u64)], ios: u64) -> Vec<IoDesc> {
    use std::collections::BTreeMap;
    let issued: Vec<IoDesc> = log
        .iter()
        .map(|&(io, _)| io)
        .filter(|io| !io.op.is_sync())
        .take(usize::try_from(ios).unwrap_or(usize::MAX))
        .filter(|io| io.op == Op::Write)
        .collect();
    // From the last write back: the ranges later writes cover, per target
    // (start -> end, disjoint).
    let mut later: BTreeMap<(u32, u64), u64> = BTreeMap::new();
    let mut kept = Vec::with_capacity(issued.len());
    for io in issued.iter().rev() {
        let (start, end) = (io.offset, io.offset + u64::from(io.len));
        let overlapped = later
            .range(..(io.target, end))
            .next_back()
            .is_some_and(|(&(t, _), &e)| t == io.target && e > start);
        if !overlapped {
            kept.push(*io);
        }
        // Merge [start, end) into the target's ranges.
        let (mut s, mut e) = (start, end);
        let touching: Vec<(u32, u64)> = later
            .range((io.target, 0)..=(io.target, end))
            .filter(|(_, &ee)| ee >= start)
            .map(|(&k, _)| k)
            .collect();
        for k in touching {
            if let Some(ee) = later.remove(&k) {
                s = s.min(k.1);
                e = e.max(ee);
            }
        }
        later.insert((io.target, s), e);
    }
    kept.sort_by_key(|io| (io.target, io.offset, io.len));
    kept
}

/// The writes of a job's `ios` issued I/Os as it issued them, a block
/// written twice listed twice (`experimental_verify`'s read-back).
pub fn issued_writes(
    gen: &GenConfig,
    ios: u64,
) -> Result<Vec<IoDesc>, crate::job::types::GenError> {
    let mut g = Generator::new(gen)?;
    Ok((0..ios)
        .map(|_| g.next_io())
        .filter(|io| io.op == Op::Write)
        .collect())
}

/// The read-back pass of a writing job: read each written extent and check it.
pub struct ReadBack<'a> {
    extents: &'a [IoDesc],
    next: usize,
    content: &'a Content,
    /// The reads, as the job's read statistics count them.
    pub stats: DirStats,
    /// I/Os and bytes read per target (by the I/Os' `target`), for the
    /// device check: the device counts these reads too.
    pub per_target: Vec<(u64, u64)>,
    /// The first failed check or read that ends the pass, in words.
    pub failure: Option<String>,
    /// The job's error policy and verify options (None: every failure ends
    /// the pass).
    pub extras: Option<&'a crate::job::error_policy::LoopExtras>,
    /// Failures met, passed or not.
    pub errors: crate::job::types::ErrorCount,
    /// Ended by `verify_fatal` on a failure it went past.
    pub stopped: bool,
    /// Blocks `trim_percentage` trimmed, which must read as zeroes
    /// (`trim_verify_zero`; None: no such blocks).
    pub trimmed: Option<&'a crate::job::trim::Trimmed>,
    /// The job's logs, which log the reads as the job's (None: not logged).
    pub logs: Option<&'a mut crate::job::open_logs::OpenLogs>,
}

impl<'a> ReadBack<'a> {
    /// A pass over `extents`.
    pub fn new(extents: &'a [IoDesc], content: &'a Content) -> ReadBack<'a> {
        ReadBack {
            extents,
            next: 0,
            content,
            stats: DirStats::new(false),
            per_target: Vec::new(),
            failure: None,
            extras: None,
            errors: crate::job::types::ErrorCount::default(),
            stopped: false,
            trimmed: None,
            logs: None,
        }
    }
}

impl Driver for ReadBack<'_> {
    fn next(&mut self, now: u64, _inflight: u32, _buf: &mut [u8]) -> Next {
        if self.failure.is_some() || self.stopped || self.next == self.extents.len() {
            return Next::Done;
        }
        let mut io = self.extents[self.next];
        self.next += 1;
        io.op = Op::Read;
        if let Some(l) = self.logs.as_deref_mut() {
            l.read_issued(now, &io);
        }
        Next::Io {
            io,
            due: None,
            tag: 0,
        }
    }

    fn complete(&mut self, d: &Done, buf: &[u8]) -> After {
        if d.result < 0 {
            let errno = -d.result;
            self.errors.add(errno);
            if let Some(x) = self.extras {
                let passed = x.policy.passes(Op::Read, errno);
                x.report_io_error(&d.io, errno, passed);
                if passed {
                    return After::Release;
                }
            }
            self.failure.get_or_insert_with(|| {
                format!(
                    "verify read of {} bytes at offset {} failed: {}",
                    d.io.len,
                    d.io.offset,
                    std::io::Error::from_raw_os_error(-d.result)
                )
            });
            return After::Release;
        }
        let lat = d.latency();
        self.stats.ios += 1;
        self.stats.bytes += d.result as u64;
        let t = d.io.target as usize;
        if self.per_target.len() <= t {
            self.per_target.resize(t + 1, (0, 0));
        }
        self.per_target[t].0 += 1;
        self.per_target[t].1 += d.result as u64;
        self.stats.lat.record(lat);
        self.stats.moments.record(lat as f64);
        if let Some(l) = self.logs.as_deref_mut() {
            l.read_done(d.now, &d.io, d.result as u64, lat);
        }
        let got = &buf[..(d.result as usize).min(buf.len())];
        let checked = match self.trimmed.filter(|t| t.holds(&d.io)) {
            Some(_) => {
                let name = self.extras.map(|x| x.target_name(d.io.target));
                crate::job::trim::check_zero(got, d.io.offset, name.as_deref().unwrap_or("?"))
            }
            None => self.content.check(got, d.io.offset),
        };
        if let Err(e) = checked {
            let verdict = match self.extras {
                Some(x) => {
                    let name = x.target_name(d.io.target);
                    verify_failed(
                        x,
                        &mut self.errors,
                        self.content,
                        got,
                        d.io.offset,
                        &name,
                        &e,
                    )
                }
                None => {
                    self.errors.add(libc::EILSEQ);
                    Verdict::Fail
                }
            };
            match verdict {
                Verdict::Pass => {}
                Verdict::Stop => self.stopped = true,
                Verdict::Fail => {
                    self.failure.get_or_insert(e);
                }
            }
        }
        After::Release
    }

    fn inspects(&self, _io: &IoDesc, _tag: u64) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replayed_extents_leave_out_what_a_later_write_overlaps() {
        let io = |target, op, offset, len| IoDesc {
            target,
            op,
            offset,
            len,
        };
        let log: Vec<(IoDesc, u64)> = [
            io(0, Op::Write, 0, 8192),
            io(0, Op::Read, 0, 4096),
            io(0, Op::Fsync, 0, 0),
            io(0, Op::Write, 4096, 4096), // overlaps the first in part
            io(1, Op::Write, 0, 4096),    // another target: no overlap
            io(0, Op::Write, 16384, 4096),
            io(0, Op::Write, 12288, 8192), // overlaps the one before
            io(0, Op::Write, 65536, 4096),
        ]
        .into_iter()
        .map(|i| (i, 0))
        .collect();
        let all = replayed_extents(&log, u64::MAX);
        assert_eq!(
            all,
            [
                io(0, Op::Write, 4096, 4096),
                io(0, Op::Write, 12288, 8192),
                io(0, Op::Write, 65536, 4096),
                io(1, Op::Write, 0, 4096),
            ]
        );
        // Only the first 5 reads, writes and trims issued (the fsync not
        // counted): the write at 16384 was the last of them.
        let some = replayed_extents(&log, 5);
        assert_eq!(
            some,
            [
                io(0, Op::Write, 4096, 4096),
                io(0, Op::Write, 16384, 4096),
                io(1, Op::Write, 0, 4096),
            ]
        );
    }

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // RFC 3720 / iSCSI check value of "123456789".
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        // RFC 1321's test suite: MD5("abc") = 900150983cd24fb0…
        assert_eq!(
            md5_64(b"abc").to_le_bytes(),
            [0x90, 0x01, 0x50, 0x98, 0x3c, 0xd2, 0x4f, 0xb0]
        );
        // The catalogued check values of "123456789": CRC-32 (zlib) and
        // CRC-64/XZ.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc64(b"123456789"), 0x995D_C9BB_DF19_39FA);
        // FIPS 180-2's "abc": SHA-256 = ba7816bf8f01cfea…, SHA-512 =
        // ddaf35a193617aba….
        let sha = |k| check_value(k, b"abc").unwrap().0.to_le_bytes();
        assert_eq!(
            sha(VerifyKind::Sha256),
            [0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea]
        );
        assert_eq!(
            sha(VerifyKind::Sha512),
            [0xdd, 0xaf, 0x35, 0xa1, 0x93, 0x61, 0x7a, 0xba]
        );
    }

    fn content(kind: VerifyKind, pattern: Option<Vec<u8>>) -> Content {
        Content {
            kind,
            interval: 512,
            pattern,
            header_at: 0,
        }
    }

    #[test]
    fn every_kind_accepts_its_own_blocks_and_catches_a_flipped_byte() {
        for (kind, pat) in [
            (VerifyKind::Crc32c, None),
            (VerifyKind::Md5, None),
            (VerifyKind::Crc32, None),
            (VerifyKind::Crc64, None),
            (VerifyKind::Sha256, None),
            (VerifyKind::Sha512, None),
            (VerifyKind::Crc16, None),
            (VerifyKind::Crc7, None),
            (VerifyKind::Sha1, None),
            (VerifyKind::Xxhash, None),
            (VerifyKind::Sha3(224), None),
            (VerifyKind::Sha3(256), None),
            (VerifyKind::Sha3(384), None),
            (VerifyKind::Sha3(512), None),
            (VerifyKind::Meta, None),
            (VerifyKind::Meta, Some(vec![0xaa, 0x55, 0x5a, 0xa5])),
            (VerifyKind::Pattern, Some(vec![0xaa, 0x55, 0x5a, 0xa5])),
        ] {
            let c = content(kind, pat);
            let mut buf = vec![0u8; 4096];
            c.fill(&mut buf, 8192);
            assert_eq!(c.check(&buf, 8192), Ok(()), "{kind:?}");
            buf[1000] ^= 1;
            let e = c.check(&buf, 8192).unwrap_err();
            assert!(e.contains(kind.name()), "{e}");
            assert!(e.contains("8704") || e.contains("9192"), "{e}");
        }
    }

    #[test]
    fn verify_offset_swaps_the_header_in_and_back_out() {
        let mut c = content(VerifyKind::Crc32c, None);
        c.header_at = 100;
        let mut buf = vec![0u8; 512];
        c.fill(&mut buf, 4096);
        assert_eq!(&buf[100..104], &MAGIC.to_le_bytes());
        assert_ne!(&buf[0..4], &MAGIC.to_le_bytes());
        assert_eq!(c.check(&buf, 4096), Ok(()));
        // Read as if the header were at the start: not this rule's block.
        c.header_at = 0;
        let e = c.check(&buf, 4096).unwrap_err();
        assert!(e.contains("bad header magic"), "{e}");
        // A wrong offset in the moved header is named as such.
        c.header_at = 100;
        c.fill(&mut buf, 8192);
        let e = c.check(&buf, 4096).unwrap_err();
        assert!(e.contains("header of offset 8192"), "{e}");
    }

    #[test]
    fn a_block_read_from_the_wrong_place_names_its_offset() {
        let c = content(VerifyKind::Crc32c, None);
        let mut buf = vec![0u8; 512];
        c.fill(&mut buf, 4096);
        let e = c.check(&buf, 0).unwrap_err();
        assert!(e.contains("header of offset 4096"), "{e}");
        let e = c.check(&[0u8; 512], 0).unwrap_err();
        assert!(e.contains("bad header magic"), "{e}");
    }

    fn w(offset: u64) -> IoDesc {
        IoDesc {
            target: 0,
            op: Op::Write,
            offset,
            len: 4096,
        }
    }

    #[test]
    fn backlog_checks_a_batch_when_the_waiting_writes_reach_a_multiple() {
        // verify_backlog=3, verify_backlog_batch=2, as fio: 3 writes, 2
        // checks, then writes until 3 wait again.
        let mut b = Backlog::new(3, 2);
        let mut order = Vec::new();
        let mut off = 0;
        let mut last_read = false;
        while order.len() < 11 {
            if let Some(io) = b.next(last_read) {
                order.push(format!("r{}", io.offset / 4096));
                last_read = true;
                continue;
            }
            let seq = b.written(w(off));
            b.completed(seq, true);
            order.push(format!("w{}", off / 4096));
            off += 4096;
            last_read = false;
        }
        assert_eq!(order.join(" "), "w0 w1 w2 r0 r1 w3 w4 r2 r3 w5 w6");
        // A write still in flight is not read; a failed one never is.
        let mut b = Backlog::new(2, 2);
        let s0 = b.written(w(0));
        let s1 = b.written(w(4096));
        assert_eq!(b.next(false), None);
        b.completed(s1, true);
        b.completed(s0, false);
        // The batch begun while both were in flight goes on (fio keeps its
        // verify_batch), past the failed write to the written one.
        let mut r = w(4096);
        r.op = Op::Read;
        assert_eq!(b.next(false), Some(r));
        assert_eq!(b.next(false), None);
        assert!(b.into_left().is_empty());
        // A failed write is not left for the pass after the job either.
        let mut b = Backlog::new(8, 8);
        let s0 = b.written(w(0));
        b.written(w(4096));
        b.completed(s0, false);
        assert_eq!(b.into_left(), vec![w(4096)]);
    }

    #[test]
    fn an_unknown_checksum_is_refused_naming_the_supported_ones() {
        let e = VerifyKind::parse("verify", "crc99")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("verify")
                && e.contains("crc32c")
                && e.contains("pattern")
                && e.contains("md5"),
            "{e}"
        );
        assert_eq!(VerifyKind::parse("verify", "0"), Ok(None));
    }
}
