//! The per-drive erase: plan, write (every method), verify, certify; and the
//! three strategies that run many drives.
//!
//! Every range method is a front-to-back loop of commands over the drive,
//! so one loop ([`chunked`]) serves zeroout, discard, WRITE SAME, SCT Write
//! Same and NVMe Write Zeroes: it takes the round-robin turn and the bus
//! budget before each command, retries a failing command, narrows a range
//! that keeps failing down to its bad blocks (retry-skip) or stops
//! (abort), and moves the journal's watermark. `stream` is the same loop
//! over io_uring with many commands in flight and a tuner. A drive that
//! fails returns its outcome; it never stops the others.

use std::collections::{BTreeMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use drivelab_device::blockdev::{BlockDevice, Kind};
use drivelab_device::caps::{self, Capabilities};
use drivelab_device::units::{BlockCount, Lba};
use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Completion, Engine, Target, Uring};
use drivelab_engine::io::{IoDesc, Op};
use drivelab_patterns::{Generator, Pattern};
use ed25519_dalek::SigningKey;

use crate::cert::{self, Certificate, CommandRecord, ExceptionRecord};
use crate::clock;
use crate::journal::{self, Journal, JournalHeader, JournalState, Skipped};
use crate::method::{self, Choice, Method, Offers};
use crate::sched::{BusLimiter, Phase, Progress, Turn};
use crate::tune::{self, Tuner};
use crate::verify::{self, ReadPolicy, Region, SamplePlan};
use crate::EraseError;

/// How many drives run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// All drives at once, one thread each (default).
    Parallel,
    /// One drive after another.
    Sequential,
    /// One command per drive in turn, one command in flight in all.
    RoundRobin,
}

impl Strategy {
    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Parallel => "parallel",
            Strategy::Sequential => "sequential",
            Strategy::RoundRobin => "round-robin",
        }
    }
}

/// How much is read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyMode {
    /// Nothing.
    None,
    /// NIST SP 800-88 sample (default).
    Sample,
    /// Every block.
    Full,
}

impl VerifyMode {
    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            VerifyMode::None => "none",
            VerifyMode::Sample => "sample",
            VerifyMode::Full => "full",
        }
    }
}

/// What the user asked for, for every drive.
#[derive(Debug, Clone)]
pub struct Options {
    /// Method (`Auto` = choose per drive).
    pub method: Method,
    /// Pattern written (default allzeros).
    pub pattern: Pattern,
    /// Passes over the drive (default 1).
    pub passes: u32,
    /// Verification.
    pub verify: VerifyMode,
    /// retry-skip (true) or abort (false).
    pub skip_errors: bool,
    /// Retries per failing command (default 3).
    pub retries: u32,
    /// Continue from the journal.
    pub resume: bool,
    /// Crypto erase for nvme-format / nvme-sanitize / ata-sanitize.
    pub crypto: bool,
    /// Discard the whole drive before overwriting it.
    pub discard_first: bool,
    /// Where certificates and journals go.
    pub certificate_dir: PathBuf,
    /// Where the signing key lives.
    pub key_dir: PathBuf,
    /// Fixed stream transfer length, bytes (None = tuned).
    pub transfer: Option<u32>,
    /// Fixed stream queue depth (None = tuned).
    pub queue_depth: Option<u32>,
    /// Aggregate bytes per second over all drives (None = unlimited).
    pub bus_limit: Option<u64>,
    /// Strategy.
    pub strategy: Strategy,
    /// The command line, for the certificate.
    pub command_line: String,
    /// Tool version, for the certificate.
    pub version: String,
}

/// One drive, planned.
#[derive(Debug, Clone)]
pub struct Drive {
    /// The device.
    pub dev: BlockDevice,
    /// Probe result (None when probing failed; the note says why).
    pub caps: Option<Capabilities>,
    /// What it offers.
    pub offers: Offers,
    /// The method chosen and why.
    pub choice: Choice,
    /// Logical block size, bytes.
    pub lbs: u32,
    /// Size, bytes.
    pub size: u64,
    /// Probe problems.
    pub notes: Vec<String>,
}

impl Drive {
    /// The serial, if the drive has a non-empty one.
    pub fn serial(&self) -> Option<&str> {
        self.dev
            .serial
            .as_deref()
            .or_else(|| {
                self.caps
                    .as_ref()
                    .and_then(|c| c.identity.serial.as_deref())
            })
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// Whether BLKZEROOUT is offloaded.
    pub fn zeroout_offloaded(&self) -> bool {
        self.offers.zeroout_offload
    }

    /// A rough rate for estimates, bytes/s, and what it assumes.
    fn assumed_rate(&self) -> (f64, &'static str) {
        match self.dev.kind {
            Kind::Loop | Kind::Ram | Kind::Zram => {
                (2e9, "memory-backed/virtual device, assumed 2 GB/s")
            }
            Kind::Nvme => (2e9, "NVMe, assumed 2 GB/s"),
            _ if self.dev.rotational => (180e6, "rotating disk, assumed 180 MB/s"),
            _ => (450e6, "SATA/SAS SSD, assumed 450 MB/s"),
        }
    }
}

/// Probe a drive and settle its method.
pub fn plan_drive(dev: BlockDevice, opts: &Options) -> Result<Drive, EraseError> {
    let mut notes = Vec::new();
    let caps = match caps::probe(&dev.path) {
        Ok(c) => Some(c),
        Err(e) => {
            notes.push(format!("probe failed: {e}"));
            None
        }
    };
    let offers = match &caps {
        Some(c) => Offers::from_caps(c),
        None => Offers {
            transport: "unknown".into(),
            zeroout_offload: dev.write_zeroes_max_bytes.0 > 0,
            write_zeroes_max_bytes: dev.write_zeroes_max_bytes.0,
            discard: dev.discard_max_bytes.0 > 0,
            ..Offers::default()
        },
    };
    let lbs = dev.logical_sector.0.max(512);
    let choice = method::check_available(
        opts.method,
        &offers,
        &opts.pattern,
        lbs as usize,
        opts.crypto,
        &dev.path.display().to_string(),
    )?;
    if opts.discard_first && !offers.discard {
        return Err(EraseError::MethodUnavailable {
            device: dev.path.display().to_string(),
            method: "discard (--discard-first)".into(),
            why: "the drive does not support discard; drop --discard-first".into(),
        });
    }
    let size = dev.size.0;
    Ok(Drive {
        dev,
        caps,
        offers,
        choice,
        lbs,
        size,
        notes,
    })
}

/// Estimated seconds for erasing (all passes) and verifying one drive when
/// `n` drives run under `opts`, with what the estimate assumes.
pub fn estimate(d: &Drive, opts: &Options, n: usize) -> (f64, f64, String) {
    let (rate, why) = d.assumed_rate();
    let bytes = d.size as f64 * f64::from(opts.passes.max(1));
    let m = d.choice.method;
    let sends_data = m == Method::Stream || (m == Method::Zeroout && !d.offers.zeroout_offload);
    let mut erase_rate = rate;
    let mut note = why.to_string();
    if sends_data {
        if let Some(b) = opts.bus_limit {
            let share = match opts.strategy {
                Strategy::Parallel | Strategy::RoundRobin => b as f64 / n.max(1) as f64,
                Strategy::Sequential => b as f64,
            };
            if share < erase_rate {
                erase_rate = share;
                note.push_str(&format!("; bus limit share {:.0} MB/s", share / 1e6));
            }
        }
    } else if matches!(d.dev.kind, Kind::Loop | Kind::Ram | Kind::Zram) {
        erase_rate = 20e9;
        note = "offloaded on a virtual device, assumed 20 GB/s".into();
    }
    let erase = match m {
        Method::NvmeFormat | Method::NvmeSanitize | Method::AtaSanitize if opts.crypto => 10.0,
        _ => bytes / erase_rate,
    };
    let verify_share = match opts.verify {
        VerifyMode::None => 0.0,
        VerifyMode::Sample => 0.101,
        VerifyMode::Full => 1.0,
    };
    (erase, d.size as f64 * verify_share / rate, note)
}

/// What happened to one drive.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Device node.
    pub device: String,
    /// Serial.
    pub serial: Option<String>,
    /// Method used.
    pub method: String,
    /// Why that method.
    pub reason: String,
    /// erased, erased with exceptions, failed, stopped.
    pub result: String,
    /// The error, when failed or stopped.
    pub error: Option<String>,
    /// Bytes covered by this run (all passes).
    pub bytes: u64,
    /// Bytes covered by earlier runs (journal).
    pub resumed_bytes: u64,
    /// Seconds of the erase phase.
    pub erase_seconds: f64,
    /// Seconds of verification.
    pub verify_seconds: f64,
    /// Verification result in words.
    pub verification: String,
    /// Whether BLKZEROOUT was offloaded (zeroout).
    pub offloaded: Option<bool>,
    /// Final stream transfer length and depth, and how many times tuning
    /// changed them.
    pub tuning: Option<(u64, u32, u32)>,
    /// Stream only: seconds from the first write submitted to the last
    /// completed (no ring or buffer setup, no final flush), as fio counts.
    pub stream_io_seconds: Option<f64>,
    /// Skipped ranges.
    pub exceptions: usize,
    /// The JSON certificate.
    pub certificate: Option<PathBuf>,
    /// The HTML page.
    pub html: Option<PathBuf>,
    /// The journal kept for `--resume`, when stopped or failed mid-erase.
    pub journal: Option<PathBuf>,
}

impl Outcome {
    /// MB/s (10^6) of this run's erase.
    pub fn mb_per_s(&self) -> f64 {
        if self.erase_seconds > 0.0 {
            self.bytes as f64 / self.erase_seconds / 1e6
        } else {
            0.0
        }
    }
}

/// Shared among drive threads.
struct Shared<'a> {
    bus: Option<BusLimiter>,
    turn: Option<Turn>,
    stop: &'a AtomicBool,
    drives: usize,
    key: SigningKey,
}

/// Erase every drive with the strategy in `opts`. Key problems fail before
/// anything is written; a drive's own failure is in its outcome.
pub fn run_all(
    drives: &[Drive],
    opts: &Options,
    stop: &AtomicBool,
    progress: &[Arc<Progress>],
) -> Result<Vec<Outcome>, EraseError> {
    let key = cert::load_or_create_key(&opts.key_dir)?;
    std::fs::create_dir_all(&opts.certificate_dir).map_err(|e| {
        EraseError::Certificate(format!(
            "cannot create {}: {e}",
            opts.certificate_dir.display()
        ))
    })?;
    let shared = Shared {
        bus: opts.bus_limit.map(BusLimiter::new),
        turn: (opts.strategy == Strategy::RoundRobin).then(|| Turn::new(drives.len())),
        stop,
        drives: match opts.strategy {
            Strategy::Sequential => 1,
            _ => drives.len(),
        },
        key,
    };
    let one = |i: usize| -> Outcome {
        let o = erase_one(i, &drives[i], opts, &shared, &progress[i]);
        if let Some(t) = &shared.turn {
            t.finish(i);
        }
        o
    };
    let outcomes = match opts.strategy {
        Strategy::Sequential => (0..drives.len()).map(one).collect(),
        _ => std::thread::scope(|s| {
            let hs: Vec<_> = (0..drives.len()).map(|i| s.spawn(move || one(i))).collect();
            hs.into_iter()
                .enumerate()
                .map(|(i, h)| {
                    h.join().unwrap_or_else(|_| Outcome {
                        device: drives[i].dev.path.display().to_string(),
                        serial: drives[i].serial().map(String::from),
                        method: drives[i].choice.method.name().into(),
                        reason: String::new(),
                        result: "failed".into(),
                        error: Some("internal error: the drive's worker panicked".into()),
                        bytes: 0,
                        resumed_bytes: 0,
                        erase_seconds: 0.0,
                        verify_seconds: 0.0,
                        verification: "not performed".into(),
                        offloaded: None,
                        tuning: None,
                        stream_io_seconds: None,
                        exceptions: 0,
                        certificate: None,
                        html: None,
                        journal: None,
                    })
                })
                .collect()
        }),
    };
    Ok(outcomes)
}

/// What one run did, for the certificate.
#[derive(Debug, Default)]
struct Record {
    commands: BTreeMap<String, (u64, u64)>,
    errors: Vec<String>,
    retried: u64,
    skipped: Vec<Skipped>,
    bytes: u64,
    tuning: Option<(u64, u32, u32)>,
    offloaded: Option<bool>,
    io_seconds: f64,
}

impl Record {
    fn command(&mut self, name: &str, count: u64, bytes: u64) {
        let e = self.commands.entry(name.to_string()).or_insert((0, 0));
        e.0 += count;
        e.1 += bytes;
    }
}

/// Whether the loop finished or was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Done,
    Stopped,
}

struct Ctx<'a> {
    index: usize,
    drive: &'a Drive,
    opts: &'a Options,
    shared: &'a Shared<'a>,
    progress: &'a Progress,
    journal: Journal,
    rec: Record,
    /// Bytes of earlier passes (for progress).
    base: u64,
}

impl Ctx<'_> {
    fn dev(&self) -> String {
        self.drive.dev.path.display().to_string()
    }

    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn io(&self, what: &str, e: std::io::Error) -> EraseError {
        EraseError::Io {
            device: self.dev(),
            what: what.to_string(),
            source: e,
        }
    }

    fn before_command(&self, bus_bytes: u64) {
        if let Some(t) = &self.shared.turn {
            t.acquire(self.index);
        }
        if bus_bytes > 0 {
            if let Some(b) = &self.shared.bus {
                b.take(bus_bytes);
            }
        }
    }

    fn after_command(&self) {
        if let Some(t) = &self.shared.turn {
            t.release(self.index);
        }
    }

    fn mark(&mut self, pass: u32, watermark: u64) -> Result<(), EraseError> {
        self.progress
            .done
            .store(self.base + watermark, Ordering::Relaxed);
        self.journal.done(pass, watermark)
    }

    /// A range failed after its retries: abort, or narrow it down to the
    /// bad blocks with `op` (one command per half) and record them.
    fn give_up(
        &mut self,
        pass: u32,
        off: u64,
        len: u64,
        attempts: u32,
        why: String,
        mut op: impl FnMut(u64, u64) -> Result<(), String>,
    ) -> Result<(), EraseError> {
        let lbs = u64::from(self.drive.lbs);
        if !self.opts.skip_errors {
            return Err(EraseError::Aborted {
                device: self.dev(),
                phase: "erase".into(),
                lba: off / lbs,
                blocks: len / lbs,
                attempts,
                why,
            });
        }
        let (good, bad) = narrow(off, len, lbs, why, &mut op);
        self.rec.bytes += good;
        for (o, l, e) in bad {
            let s = Skipped {
                pass,
                start: o,
                end: o + l,
                error: e,
            };
            self.journal.skipped(&s)?;
            self.rec.skipped.push(s);
        }
        Ok(())
    }

    /// Front-to-back commands of at most `chunk` bytes from `start`.
    fn chunked(
        &mut self,
        pass: u32,
        start: u64,
        chunk: u64,
        sends_data: bool,
        name: &str,
        mut op: impl FnMut(u64, u64) -> Result<u64, String>,
    ) -> Result<Flow, EraseError> {
        let size = self.drive.size;
        let lbs = u64::from(self.drive.lbs);
        let chunk = (chunk / lbs).max(1) * lbs;
        let mut pos = start;
        while pos < size {
            if self.stopped() {
                return Ok(Flow::Stopped);
            }
            let len = chunk.min(size - pos);
            let mut attempts = 0u32;
            loop {
                self.before_command(if sends_data { len } else { 0 });
                let r = op(pos, len);
                self.after_command();
                attempts += 1;
                match r {
                    Ok(n) => {
                        self.rec.command(name, n, len);
                        self.rec.bytes += len;
                        if attempts > 1 {
                            self.rec.retried += 1;
                        }
                        break;
                    }
                    Err(e) => {
                        let lba = pos / lbs;
                        self.rec
                            .errors
                            .push(format!("{name} at LBA {lba} +{}: {e}", len / lbs));
                        if attempts <= self.opts.retries {
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                        let mut sub = |o: u64, l: u64| op(o, l).map(|_| ());
                        self.give_up(pass, pos, len, attempts, e, &mut sub)?;
                        break;
                    }
                }
            }
            pos += len;
            self.mark(pass, pos)?;
        }
        Ok(Flow::Done)
    }
}

/// Narrow a range `[off, off + len)` whose command failed (with `why`)
/// down to the blocks that keep failing: halve it, retry each half with
/// `op`, recurse into failing halves down to single `lbs`-byte blocks.
/// Returns the bytes that succeeded and the failing ranges (byte offset,
/// length, error), adjacent blocks with the same error merged.
fn narrow(
    off: u64,
    len: u64,
    lbs: u64,
    why: String,
    op: &mut impl FnMut(u64, u64) -> Result<(), String>,
) -> (u64, Vec<(u64, u64, String)>) {
    let mut good = 0u64;
    let mut bad: Vec<(u64, u64, String)> = Vec::new();
    let push_bad =
        |bad: &mut Vec<(u64, u64, String)>, o: u64, l: u64, e: String| match bad.last_mut() {
            Some(b) if b.0 + b.1 == o && b.2 == e => b.1 += l,
            _ => bad.push((o, l, e)),
        };
    let mut stack = Vec::new();
    if len <= lbs {
        push_bad(&mut bad, off, len, why);
    } else {
        let h = (len / lbs / 2) * lbs;
        stack.push((off + h, len - h));
        stack.push((off, h));
    }
    while let Some((o, l)) = stack.pop() {
        match op(o, l) {
            Ok(()) => good += l,
            Err(e) if l <= lbs => push_bad(&mut bad, o, l, e),
            Err(_) => {
                let h = (l / lbs / 2) * lbs;
                stack.push((o + h, l - h));
                stack.push((o, h));
            }
        }
    }
    (good, bad)
}

fn open_rw(path: &Path, direct: bool) -> std::io::Result<File> {
    let mut flags = libc::O_EXCL;
    if direct {
        flags |= libc::O_DIRECT;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(flags)
        .open(path)
}

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn errno_str(neg: i32) -> String {
    std::io::Error::from_raw_os_error(-neg).to_string()
}

/// An aligned scratch slice inside `buf` (O_DIRECT without unsafe).
fn aligned(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    buf.resize(len + 4096, 0);
    let off = (4096 - (buf.as_ptr() as usize % 4096)) % 4096;
    &mut buf[off..off + len]
}

/// Streamed pattern writes over io_uring, tuned while running.
fn stream(ctx: &mut Ctx<'_>, pass: u32, start: u64, gen: &Generator) -> Result<Flow, EraseError> {
    let d = ctx.drive;
    let size = d.size;
    let lbs = u64::from(d.lbs);
    let rr = ctx.shared.turn.is_some();
    let mut st = tune::start(d.dev.max_sectors_kb, ctx.shared.drives, d.lbs);
    let mut fixed = rr;
    if let Some(t) = ctx.opts.transfer {
        st.len = ((u64::from(t) / lbs).max(1) * lbs) as u32;
        fixed = true;
    }
    if let Some(q) = ctx.opts.queue_depth {
        st.depth = q.max(1);
        fixed = true;
    } else if ctx.opts.transfer.is_some() {
        // Keep a user's long transfer length within 256 MiB of buffers.
        st.depth = st
            .depth
            .min(((256u64 << 20) / u64::from(st.len)).max(1) as u32);
    }
    if rr {
        st.depth = 1;
    }
    st.max_depth = if fixed {
        st.depth
    } else {
        st.max_depth.max(st.depth)
    };
    let mut tuner = Tuner::new(st, d.lbs, fixed);
    let max_len = tuner.max_len() as usize;
    let file =
        open_rw(&d.dev.path, true).map_err(|e| ctx.io("open O_DIRECT|O_EXCL for writing", e))?;
    let side = file
        .try_clone()
        .map_err(|e| ctx.io("duplicate the descriptor", e))?;
    let slots = st.max_depth;
    let mut eng = Uring::new(
        vec![Target {
            file,
            is_block: true,
        }],
        slots,
        max_len,
        false,
        // Every buffer gets the pattern below before it is written.
        Fill::Zeroed,
    )
    .map_err(|e| ctx.io("set up io_uring", e))?;
    let periodic = gen.pattern().is_periodic();
    // Every block is the same: fill each buffer once (zeroes are there
    // already: the pool is mapped zeroed).
    if periodic && *gen.pattern() != Pattern::AllZeros {
        for s in 0..slots {
            gen.fill(&mut eng.buffer(s)[..max_len], 0);
        }
    }
    ctx.progress
        .transfer
        .store(u64::from(tuner.transfer_len()), Ordering::Relaxed);
    ctx.progress
        .depth
        .store(u64::from(tuner.depth()), Ordering::Relaxed);

    #[derive(Clone, Copy)]
    struct Chunk {
        off: u64,
        len: u64,
        slot: u32,
        attempts: u32,
        done: bool,
    }
    let mut inflight: VecDeque<Chunk> = VecDeque::with_capacity(slots as usize);
    let mut free: Vec<u32> = (0..slots).rev().collect();
    let mut pending = 0u32;
    let mut pos = start;
    let mut comps: Vec<Completion> = Vec::with_capacity(slots as usize);
    let mut failure: Option<EraseError> = None;
    let mut scratch = Vec::new();
    let mut writes = 0u64;
    let mut wbytes = 0u64;
    let t_io = Instant::now();
    loop {
        while failure.is_none()
            && !ctx.stopped()
            && pos < size
            && pending < tuner.depth()
            && !free.is_empty()
        {
            let len = u64::from(tuner.transfer_len()).min(size - pos);
            ctx.before_command(len);
            let Some(slot) = free.pop() else { break };
            if !periodic {
                gen.fill(&mut eng.buffer(slot)[..len as usize], pos / lbs);
            }
            eng.queue(
                slot,
                &IoDesc {
                    target: 0,
                    op: Op::Write,
                    offset: pos,
                    len: len as u32,
                },
            );
            inflight.push_back(Chunk {
                off: pos,
                len,
                slot,
                attempts: 1,
                done: false,
            });
            pending += 1;
            pos += len;
            if rr {
                break;
            }
        }
        if pending == 0 {
            break;
        }
        if let Err(e) = eng.commit(1, Some(Duration::from_millis(200))) {
            // The ring itself failed: nothing more can be reaped.
            return Err(ctx.io("io_uring submit", e));
        }
        comps.clear();
        eng.reap(|c| comps.push(c));
        for c in comps.drain(..) {
            let Some(ix) = inflight.iter().position(|k| !k.done && k.slot == c.slot) else {
                continue;
            };
            let k = inflight[ix];
            if c.result >= 0 && c.result as u64 == k.len {
                writes += 1;
                wbytes += k.len;
                ctx.rec.bytes += k.len;
                if k.attempts > 1 {
                    ctx.rec.retried += 1;
                }
                inflight[ix].done = true;
                free.push(k.slot);
                pending -= 1;
                if rr {
                    ctx.after_command();
                }
                if tuner.observe(k.len) {
                    ctx.progress
                        .transfer
                        .store(u64::from(tuner.transfer_len()), Ordering::Relaxed);
                    ctx.progress
                        .depth
                        .store(u64::from(tuner.depth()), Ordering::Relaxed);
                }
                continue;
            }
            let why = if c.result < 0 {
                errno_str(c.result)
            } else {
                format!("short write: {} of {} bytes", c.result, k.len)
            };
            ctx.rec.errors.push(format!(
                "write at LBA {} +{}: {why}",
                k.off / lbs,
                k.len / lbs
            ));
            if k.attempts <= ctx.opts.retries && failure.is_none() {
                inflight[ix].attempts += 1;
                eng.queue(
                    k.slot,
                    &IoDesc {
                        target: 0,
                        op: Op::Write,
                        offset: k.off,
                        len: k.len as u32,
                    },
                );
                continue;
            }
            inflight[ix].done = true;
            free.push(k.slot);
            pending -= 1;
            if rr {
                ctx.after_command();
            }
            if failure.is_some() {
                continue;
            }
            // Synchronous narrowing with pattern-filled O_DIRECT writes.
            let mut op = |o: u64, l: u64| -> Result<(), String> {
                let buf = aligned(&mut scratch, l as usize);
                gen.fill(buf, o / lbs);
                match side.write_at(buf, o) {
                    Ok(n) if n as u64 == l => Ok(()),
                    Ok(n) => Err(format!("short write: {n} of {l} bytes")),
                    Err(e) => Err(e.to_string()),
                }
            };
            if let Err(e) = ctx.give_up(pass, k.off, k.len, k.attempts, why, &mut op) {
                failure = Some(e);
            }
        }
        // Advance the watermark over the finished front.
        let mut moved = None;
        while inflight.front().is_some_and(|k| k.done) {
            if let Some(k) = inflight.pop_front() {
                moved = Some(k.off + k.len);
            }
        }
        if let Some(w) = moved {
            if failure.is_none() {
                if let Err(e) = ctx.mark(pass, w) {
                    failure = Some(e);
                }
            }
        }
    }
    ctx.rec.command(
        &format!(
            "io_uring {} (O_DIRECT), pattern writes",
            if eng.fixed_buffers() {
                "WRITE_FIXED"
            } else {
                "WRITE"
            }
        ),
        writes,
        wbytes,
    );
    ctx.rec.io_seconds += t_io.elapsed().as_secs_f64();
    ctx.rec.tuning = Some((
        u64::from(tuner.transfer_len()),
        tuner.depth(),
        tuner.changes(),
    ));
    if let Some(e) = failure {
        return Err(e);
    }
    if pos < size {
        return Ok(Flow::Stopped);
    }
    Ok(Flow::Done)
}

fn zeroout(ctx: &mut Ctx<'_>, pass: u32, start: u64) -> Result<Flow, EraseError> {
    use drivelab_device::zero::blkzeroout;
    let file =
        open_rw(&ctx.drive.dev.path, false).map_err(|e| ctx.io("open O_EXCL for writing", e))?;
    let off = ctx.drive.offers.zeroout_offload;
    // Round-robin hands the turn on after each command: one device command
    // (the kernel's write-zeroes limit) per turn, as the thesis's strategy
    // sends one command per disk; otherwise 1 GiB per ioctl.
    let rr = ctx.shared.turn.is_some();
    let wz_max = ctx.drive.offers.write_zeroes_max_bytes;
    let offl_chunk = if rr && wz_max > 0 { wz_max } else { 1u64 << 30 };
    let (chunk, name) = if off {
        (
            offl_chunk,
            format!(
                "BLKZEROOUT ioctl (blkdev_issue_zeroout), offloaded as REQ_OP_WRITE_ZEROES (write_zeroes_max_bytes {})",
                ctx.drive.offers.write_zeroes_max_bytes
            ),
        )
    } else {
        (
            64u64 << 20,
            "BLKZEROOUT ioctl (blkdev_issue_zeroout), NOT offloaded: the kernel wrote zero pages"
                .to_string(),
        )
    };
    let first_chunk = start == 0 && pass == 0;
    let flow = ctx.chunked(pass, start, chunk, !off, &name, |o, l| {
        blkzeroout(&file, o, l)
            .map(|()| 1)
            .map_err(|e| e.to_string())
    })?;
    // A device can refuse REQ_OP_WRITE_ZEROES (a loop device over tmpfs
    // does: EOPNOTSUPP); the kernel then sets write_zeroes_max_bytes to 0
    // and writes zero pages instead. Look again rather than trust the plan.
    let now = BlockDevice::from_path(&ctx.drive.dev.path)
        .map(|d| d.write_zeroes_max_bytes.0)
        .unwrap_or(0);
    if off && now == 0 {
        ctx.rec.offloaded = Some(false);
        let moved = ctx.rec.commands.remove(&name).unwrap_or((0, 0));
        ctx.rec.command(
            "BLKZEROOUT ioctl (blkdev_issue_zeroout): the device refused REQ_OP_WRITE_ZEROES (EOPNOTSUPP), the kernel turned offload off (write_zeroes_max_bytes now 0) and wrote zero pages",
            moved.0,
            moved.1,
        );
        ctx.rec.errors.push(
            "write zeroes offload refused by the device; the kernel fell back to writing zero pages".into(),
        );
    } else if ctx.rec.offloaded.is_none() || first_chunk {
        ctx.rec.offloaded = Some(off && now > 0);
    }
    Ok(flow)
}

fn discard_range(ctx: &mut Ctx<'_>, pass: u32, start: u64) -> Result<Flow, EraseError> {
    let file =
        open_rw(&ctx.drive.dev.path, false).map_err(|e| ctx.io("open O_EXCL for writing", e))?;
    let mut eng = Uring::new(
        vec![Target {
            file,
            is_block: true,
        }],
        1,
        4096,
        false,
        // Trims carry no data.
        Fill::Zeroed,
    )
    .map_err(|e| ctx.io("set up io_uring", e))?;
    let gran = ctx
        .drive
        .dev
        .discard_granularity
        .0
        .max(u64::from(ctx.drive.lbs));
    let chunk = ((1u64 << 30) / gran).max(1) * gran;
    ctx.chunked(pass, start, chunk, false, "BLKDISCARD", |o, l| {
        eng.queue(
            0,
            &IoDesc {
                target: 0,
                op: Op::Trim,
                offset: o,
                len: l as u32,
            },
        );
        eng.commit(0, None).map_err(|e| e.to_string())?;
        let mut r = 0i32;
        eng.reap(|c| r = c.result);
        if r < 0 {
            Err(errno_str(r))
        } else {
            Ok(1)
        }
    })
}

fn write_same(
    ctx: &mut Ctx<'_>,
    pass: u32,
    start: u64,
    gen: &Generator,
) -> Result<Flow, EraseError> {
    use drivelab_device::{scsi, sg::SgDevice};
    let d = ctx.drive;
    let mut sg = SgDevice::open_rw(&d.dev.path).map_err(|e| EraseError::Command {
        device: ctx.dev(),
        what: "open for SCSI passthrough".into(),
        why: e.to_string(),
    })?;
    sg.set_timeout_ms(300_000);
    let use16 = d.offers.write_same_16;
    let lbs = u64::from(d.lbs);
    let cap = if use16 { 1u64 << 21 } else { 65_535 };
    let blocks = d
        .offers
        .max_write_same_blocks
        .filter(|&b| b > 0)
        .unwrap_or(cap)
        .min(cap);
    let mut block = vec![0u8; d.lbs as usize];
    gen.fill(&mut block, 0);
    let name = format!(
        "SCSI WRITE SAME({}) (opcode {}) via SG_IO, one {}-byte pattern block per command",
        if use16 { 16 } else { 10 },
        if use16 { "93h" } else { "41h" },
        d.lbs
    );
    ctx.chunked(pass, start, blocks * lbs, false, &name, |o, l| {
        scsi::write_same(&sg, Lba(o / lbs), BlockCount(l / lbs), &block, use16)
            .map(|_| 1)
            .map_err(|e| e.to_string())
    })
}

fn sct_write_same(ctx: &mut Ctx<'_>, pass: u32, start: u64) -> Result<Flow, EraseError> {
    use drivelab_device::ata::{self, SctWriteSame, SctWriteSameFunction};
    use drivelab_device::sg::SgDevice;
    let d = ctx.drive;
    let mut sg = SgDevice::open_rw(&d.dev.path).map_err(|e| EraseError::Command {
        device: ctx.dev(),
        what: "open for ATA PASS-THROUGH".into(),
        why: e.to_string(),
    })?;
    sg.set_timeout_ms(300_000);
    let word = method::pattern_dword(&ctx.opts.pattern, d.lbs as usize).unwrap_or(0);
    let lbs = u64::from(d.lbs);
    let name = format!(
        "ATA SCT Write Same, foreground, pattern {word:#010x} (SMART WRITE LOG E0h via ATA PASS-THROUGH(16) 85h)"
    );
    ctx.chunked(pass, start, 256 << 20, false, &name, |o, l| {
        let ws = SctWriteSame::new(
            SctWriteSameFunction::PatternForeground,
            Lba(o / lbs),
            BlockCount(l / lbs),
        )
        .pattern(word);
        ata::sct_write_same(&sg, &ws)
            .map(|_| 1)
            .map_err(|e| e.to_string())
    })
}

fn nvme_write_zeroes(ctx: &mut Ctx<'_>, pass: u32, start: u64) -> Result<Flow, EraseError> {
    use drivelab_device::nvme::{self, NvmeDevice};
    let d = ctx.drive;
    let dev = NvmeDevice::open(&d.dev.path).map_err(|e| EraseError::Command {
        device: ctx.dev(),
        what: "open for NVMe passthrough".into(),
        why: e.to_string(),
    })?;
    let lbs = u64::from(d.lbs);
    // One command per chunk (its NLB field holds at most 65,536 blocks), so
    // progress, the journal and the round-robin turn move per command.
    ctx.chunked(
        pass,
        start,
        65_536 * lbs,
        false,
        "NVMe Write Zeroes (I/O opcode 08h), up to 65536 blocks per command",
        |o, l| {
            nvme::write_zeroes(&dev, Lba(o / lbs), BlockCount(l / lbs), false)
                .map_err(|e| e.to_string())
        },
    )
}

/// The one-command methods: format and sanitize. Polls progress to the end.
fn whole_device(ctx: &mut Ctx<'_>, pass: u32) -> Result<Flow, EraseError> {
    use drivelab_device::ata::{self, AtaSanitize, AtaSanitizeOp, AtaSanitizeStatus};
    use drivelab_device::nvme::{self, NvmeCommand, NvmeData, NvmeDevice, SanitizeAction};
    use drivelab_device::sg::SgDevice;
    let d = ctx.drive;
    let dev_s = ctx.dev();
    let cmd_err = |what: &str, e: String| EraseError::Command {
        device: dev_s.clone(),
        what: what.to_string(),
        why: e,
    };
    let crypto = ctx.opts.crypto;
    ctx.before_command(0);
    let r: Result<String, EraseError> = (|| match d.choice.method {
        Method::NvmeFormat => {
            let dev = NvmeDevice::open(&d.dev.path).map_err(|e| cmd_err("open", e.to_string()))?;
            let nsid = dev
                .require_nsid()
                .map_err(|e| cmd_err("namespace", e.to_string()))?;
            let ns = nvme::identify_namespace(&dev, nsid)
                .map_err(|e| cmd_err("Identify Namespace", e.to_string()))?;
            let ses = if crypto { 2 } else { 1 };
            let c = NvmeCommand::format_nvm(nsid, ns.lbaf_in_use, ses).timeout_ms(3_600_000);
            dev.execute(&c, NvmeData::None)
                .map_err(|e| cmd_err("Format NVM", e.to_string()))?;
            Ok(format!(
                "NVMe Format NVM (admin 80h), SES {ses} ({}), LBA format {} kept",
                if crypto {
                    "cryptographic erase"
                } else {
                    "user data erase"
                },
                ns.lbaf_in_use
            ))
        }
        Method::NvmeSanitize => {
            let dev = NvmeDevice::open(&d.dev.path).map_err(|e| cmd_err("open", e.to_string()))?;
            let act = if crypto {
                SanitizeAction::CryptoErase
            } else {
                SanitizeAction::BlockErase
            };
            dev.execute(&NvmeCommand::sanitize(act), NvmeData::None)
                .map_err(|e| cmd_err("Sanitize", e.to_string()))?;
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let s = nvme::sanitize_status(&dev)
                    .map_err(|e| cmd_err("Sanitize Status log", e.to_string()))?;
                ctx.progress
                    .done
                    .store(d.size * u64::from(s.progress) / 65_536, Ordering::Relaxed);
                match s.status {
                    2 => continue,
                    1 | 4 => break,
                    _ => return Err(cmd_err("Sanitize", s.status_name)),
                }
            }
            Ok(format!(
                "NVMe Sanitize (admin 84h), {} ; Sanitize Status log 81h polled",
                if crypto {
                    "crypto erase"
                } else {
                    "block erase"
                }
            ))
        }
        Method::AtaSanitize => {
            let mut sg =
                SgDevice::open_rw(&d.dev.path).map_err(|e| cmd_err("open", e.to_string()))?;
            sg.set_timeout_ms(60_000);
            let word = method::pattern_dword(&ctx.opts.pattern, d.lbs as usize);
            let (op, what) = if crypto {
                (
                    AtaSanitize::new(AtaSanitizeOp::CryptoScramble),
                    "CRYPTO SCRAMBLE EXT".to_string(),
                )
            } else if d.offers.ata_sanitize.0 && word.is_some() {
                let w = word.unwrap_or(0);
                (
                    AtaSanitize::new(AtaSanitizeOp::Overwrite).pattern(w),
                    format!("OVERWRITE EXT, pattern {w:#010x}"),
                )
            } else {
                (
                    AtaSanitize::new(AtaSanitizeOp::BlockErase),
                    "BLOCK ERASE EXT".to_string(),
                )
            };
            ata::sanitize(&sg, &op).map_err(|e| cmd_err("SANITIZE", e.to_string()))?;
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let regs = ata::sanitize(&sg, &AtaSanitize::new(AtaSanitizeOp::Status))
                    .map_err(|e| cmd_err("SANITIZE STATUS EXT", e.to_string()))?;
                let Some(regs) = regs else { continue };
                let s = AtaSanitizeStatus::from_registers(&regs);
                ctx.progress
                    .done
                    .store(d.size * u64::from(s.progress) / 65_536, Ordering::Relaxed);
                if s.in_progress {
                    continue;
                }
                if !s.completed_ok {
                    return Err(cmd_err(
                        "SANITIZE",
                        "the device reports the sanitize failed".into(),
                    ));
                }
                break;
            }
            Ok(format!(
                "ATA SANITIZE {what} (B4h) via ATA PASS-THROUGH(16); SANITIZE STATUS EXT polled"
            ))
        }
        other => Err(cmd_err(other.name(), "not a whole-device method".into())),
    })();
    ctx.after_command();
    let name = r?;
    ctx.rec.command(&name, 1, d.size);
    ctx.rec.bytes += d.size;
    ctx.mark(pass, d.size)?;
    Ok(Flow::Done)
}

fn verify_plan_minus(plan: SamplePlan, skipped: &[(u64, u64)]) -> SamplePlan {
    if skipped.is_empty() {
        return plan;
    }
    let mut out = Vec::new();
    for r in plan.regions {
        let mut pieces = vec![(r.first, r.first + r.blocks)];
        for &(s, e) in skipped {
            pieces = pieces
                .into_iter()
                .flat_map(|(a, b)| {
                    let mut v = Vec::new();
                    if e <= a || s >= b {
                        v.push((a, b));
                    } else {
                        if a < s {
                            v.push((a, s));
                        }
                        if e < b {
                            v.push((e, b));
                        }
                    }
                    v
                })
                .collect();
        }
        out.extend(pieces.into_iter().map(|(a, b)| Region {
            first: a,
            blocks: b - a,
        }));
    }
    SamplePlan {
        regions: out,
        ..plan
    }
}

fn media(d: &Drive) -> String {
    match d.dev.kind {
        Kind::Loop | Kind::Ram | Kind::Zram => "virtual".into(),
        _ if d.dev.rotational => "rotating magnetic".into(),
        _ => "solid state".into(),
    }
}

fn technique(m: Method, crypto: bool, pattern: &Pattern) -> String {
    match m {
        Method::NvmeFormat | Method::NvmeSanitize | Method::AtaSanitize if crypto => {
            "cryptographic erase".into()
        }
        Method::NvmeFormat => "user data erase (format)".into(),
        Method::NvmeSanitize => "block erase (sanitize)".into(),
        Method::AtaSanitize => "sanitize (overwrite or block erase)".into(),
        Method::Discard => "discard (drive guarantees zeroes)".into(),
        _ => format!("overwrite with {pattern}"),
    }
}

/// Erase one drive: write, verify, certify.
fn erase_one(
    index: usize,
    d: &Drive,
    opts: &Options,
    shared: &Shared<'_>,
    progress: &Progress,
) -> Outcome {
    let t0 = clock::unix_now();
    let mut out = Outcome {
        device: d.dev.path.display().to_string(),
        serial: d.serial().map(String::from),
        method: d.choice.method.name().into(),
        reason: d.choice.reason.clone(),
        result: "failed".into(),
        error: None,
        bytes: 0,
        resumed_bytes: 0,
        erase_seconds: 0.0,
        verify_seconds: 0.0,
        verification: "not performed".into(),
        offloaded: (d.choice.method == Method::Zeroout).then_some(d.offers.zeroout_offload),
        tuning: None,
        stream_io_seconds: None,
        exceptions: 0,
        certificate: None,
        html: None,
        journal: None,
    };
    match erase_inner(index, d, opts, shared, progress, t0, &mut out) {
        Ok(()) => {}
        Err(e) => {
            progress.set_phase(Phase::Failed);
            out.result = "failed".into();
            out.error = Some(e.to_string());
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn erase_inner(
    index: usize,
    d: &Drive,
    opts: &Options,
    shared: &Shared<'_>,
    progress: &Progress,
    t0: (u64, u32),
    out: &mut Outcome,
) -> Result<(), EraseError> {
    let dev_s = d.dev.path.display().to_string();
    let passes = opts.passes.max(1);
    let jpath = journal::path_for(&opts.certificate_dir, d.serial(), &d.dev.path, d.size);
    let key_str = format!(
        "{}|{}|{}",
        d.serial().unwrap_or(&dev_s),
        d.size,
        opts.pattern
    );
    let seed = fnv(&key_str);
    let header = JournalHeader {
        device: dev_s.clone(),
        serial: d.serial().map(String::from),
        size: d.size,
        method: d.choice.method.name().into(),
        pattern: opts.pattern.to_string(),
        passes,
        seed,
        started: clock::rfc3339(t0.0, t0.1),
    };
    let state: Option<JournalState> = if opts.resume {
        journal::load(&jpath)?
    } else {
        None
    };
    if let Some(st) = &state {
        let h = &st.header;
        let mut diff = Vec::new();
        if h.size != header.size {
            diff.push(format!("size {} (drive is {})", h.size, header.size));
        }
        if h.method != header.method {
            diff.push(format!("method {} (now {})", h.method, header.method));
        }
        if h.pattern != header.pattern {
            diff.push(format!("pattern {} (now {})", h.pattern, header.pattern));
        }
        if h.passes != header.passes {
            diff.push(format!("{} passes (now {})", h.passes, header.passes));
        }
        if !diff.is_empty() {
            return Err(EraseError::ResumeMismatch {
                device: dev_s,
                path: jpath,
                why: diff.join(", "),
            });
        }
    }
    let mut jr = match &state {
        Some(_) => Journal::append(&jpath)?,
        None => Journal::create(&jpath, &header)?,
    };
    jr.run_started(t0.0)?;
    out.journal = Some(jpath.clone());
    let resumed: u64 = state
        .as_ref()
        .map(|s| (0..passes).map(|p| s.watermark(p).min(d.size)).sum())
        .unwrap_or(0);
    out.resumed_bytes = resumed;
    let mut ctx = Ctx {
        index,
        drive: d,
        opts,
        shared,
        progress,
        journal: jr,
        rec: Record::default(),
        base: 0,
    };
    if let Some(st) = &state {
        ctx.rec.skipped = st.skipped.clone();
    }
    progress.enter(Phase::Erasing, resumed, d.size * u64::from(passes));
    let te = Instant::now();
    let mut flow = Flow::Done;
    let nothing_done = state.as_ref().is_none_or(|s| s.watermark(0) == 0);
    if opts.discard_first && nothing_done && d.choice.method != Method::Discard {
        // Not journalled as a pass: a resumed run skips it once pass 0 moved.
        let saved = ctx.rec.bytes;
        flow = discard_range(&mut ctx, u32::MAX, 0)?;
        ctx.rec.bytes = saved;
    }
    let gen_for = |pass: u32| {
        Generator::builder(opts.pattern.clone(), d.lbs as usize)
            .seed(seed)
            .run_id(seed)
            .sequence(u64::from(pass) + 1)
            .build()
    };
    for pass in 0..passes {
        if flow == Flow::Stopped {
            break;
        }
        ctx.base = d.size * u64::from(pass);
        let start = state.as_ref().map(|s| s.watermark(pass)).unwrap_or(0);
        if start >= d.size {
            continue;
        }
        let gen = gen_for(pass)?;
        flow = match d.choice.method {
            Method::Stream | Method::Auto => stream(&mut ctx, pass, start, &gen)?,
            Method::Zeroout => zeroout(&mut ctx, pass, start)?,
            Method::Discard => discard_range(&mut ctx, pass, start)?,
            Method::WriteSame => write_same(&mut ctx, pass, start, &gen)?,
            Method::SctWriteSame => sct_write_same(&mut ctx, pass, start)?,
            Method::NvmeWriteZeroes => nvme_write_zeroes(&mut ctx, pass, start)?,
            Method::NvmeFormat | Method::NvmeSanitize | Method::AtaSanitize => {
                whole_device(&mut ctx, pass)?
            }
        };
    }
    ctx.journal.sync()?;
    // Round-robin: this drive sends no more commands; verifying must not
    // hold up the others' turns.
    if let Some(t) = &shared.turn {
        t.finish(index);
    }
    out.bytes = ctx.rec.bytes;
    out.tuning = ctx.rec.tuning;
    if ctx.rec.offloaded.is_some() {
        out.offloaded = ctx.rec.offloaded;
    }
    if ctx.rec.tuning.is_some() {
        out.stream_io_seconds = Some(ctx.rec.io_seconds);
    }
    if flow == Flow::Stopped {
        out.erase_seconds = te.elapsed().as_secs_f64();
        progress.set_phase(Phase::Stopped);
        out.result = "stopped".into();
        out.error = Some(format!(
            "stopped; progress is in {}: rerun the same command with --resume to continue",
            jpath.display()
        ));
        return Ok(());
    }
    // Flush the drive's volatile cache.
    let fl = OpenOptions::new()
        .write(true)
        .open(&d.dev.path)
        .and_then(|f| f.sync_all());
    match fl {
        Ok(()) => ctx
            .rec
            .command("fsync (flush the drive's volatile write cache)", 1, 0),
        Err(e) => ctx.rec.errors.push(format!("fsync failed: {e}")),
    }
    out.erase_seconds = te.elapsed().as_secs_f64();

    // Verification.
    let lbs = u64::from(d.lbs);
    let total_blocks = d.size / lbs;
    let crypto_purge = opts.crypto && d.choice.method.whole_device();
    let skipped_lbas: Vec<(u64, u64)> = ctx
        .rec
        .skipped
        .iter()
        .filter(|s| s.pass == passes - 1 || s.pass == u32::MAX)
        .map(|s| (s.start / lbs, s.end.div_ceil(lbs)))
        .collect();
    let tv = Instant::now();
    let mut vsec = cert::VerifySection {
        mode: opts.verify.name().into(),
        result: "not performed".into(),
        bytes_read: 0,
        coverage_percent: 0.0,
        subsections: 0,
        regions: 0,
        mismatch_lba: None,
        detail: None,
        reads: "io_uring READ (O_DIRECT, bypassing the page cache), 1 MiB at most per read".into(),
    };
    let mut failure: Option<String> = None;
    let mut verify_exceptions: Vec<ExceptionRecord> = Vec::new();
    let mut verify_errors: Vec<String> = Vec::new();
    let mut verify_retried = 0;
    if opts.verify != VerifyMode::None && crypto_purge {
        vsec.result = "not applicable (cryptographic erase leaves indeterminate data)".into();
    } else if opts.verify != VerifyMode::None {
        let plan = match opts.verify {
            VerifyMode::Full => verify::full_plan(total_blocks),
            _ => verify::sample_plan(total_blocks, seed),
        };
        vsec.subsections = plan.subsections;
        vsec.regions = plan.region_count;
        let plan = verify_plan_minus(plan, &skipped_lbas);
        progress.enter(Phase::Verifying, 0, plan.blocks() * lbs);
        let gen = gen_for(passes - 1)?;
        let res = verify::verify(
            &d.dev.path,
            d.lbs,
            &plan,
            &gen,
            ReadPolicy {
                retries: opts.retries,
                skip: opts.skip_errors,
            },
            |b| {
                progress.done.fetch_add(b, Ordering::Relaxed);
            },
            || shared.stop.load(Ordering::Relaxed),
        )
        .map_err(|e| EraseError::Io {
            device: dev_s.clone(),
            what: "verify (O_DIRECT read)".into(),
            source: e,
        })?;
        ctx.rec.command(
            "io_uring READ (O_DIRECT), verification reads",
            res.reads,
            res.bytes_read,
        );
        vsec.bytes_read = res.bytes_read;
        vsec.coverage_percent = res.bytes_read as f64 * 100.0 / d.size.max(1) as f64;
        verify_errors = res.errors.clone();
        verify_retried = res.retried;
        for (f, n, e) in &res.unreadable {
            verify_exceptions.push(ExceptionRecord {
                phase: "verify".into(),
                first_lba: *f,
                blocks: *n,
                error: e.clone(),
            });
        }
        if let Some((lba, what)) = &res.mismatch {
            vsec.result = "failed".into();
            vsec.mismatch_lba = Some(*lba);
            vsec.detail = Some(what.clone());
            failure = Some(format!("verification failed at LBA {lba}: {what}"));
        } else if res.stopped && !opts.skip_errors && !res.unreadable.is_empty() {
            let (f, n, e) = &res.unreadable[0];
            vsec.result = "failed".into();
            failure = Some(format!(
                "verification read failed at LBA {f} (+{n} blocks): {e}; --on-error retry-skip would skip it"
            ));
        } else if res.stopped {
            out.verify_seconds = tv.elapsed().as_secs_f64();
            progress.set_phase(Phase::Stopped);
            out.result = "stopped".into();
            out.error = Some(format!(
                "stopped during verification; the erase is complete in {}: rerun with --resume to verify and certify",
                jpath.display()
            ));
            return Ok(());
        } else if res.unreadable.is_empty() {
            vsec.result = "passed".into();
        } else {
            vsec.result = "passed with unreadable ranges".into();
        }
    }
    out.verify_seconds = tv.elapsed().as_secs_f64();
    out.verification = match vsec.mismatch_lba {
        Some(l) => format!("{} failed at LBA {l}", opts.verify.name()),
        None => format!("{}: {}", opts.verify.name(), vsec.result),
    };

    // Result and certificate.
    let mut exceptions: Vec<ExceptionRecord> = ctx
        .rec
        .skipped
        .iter()
        .map(|s| ExceptionRecord {
            phase: if s.pass == u32::MAX {
                "discard".into()
            } else {
                format!("erase pass {}", s.pass + 1)
            },
            first_lba: s.start / lbs,
            blocks: (s.end - s.start).div_ceil(lbs),
            error: s.error.clone(),
        })
        .collect();
    exceptions.extend(verify_exceptions);
    let result = if failure.is_some() {
        "failed"
    } else if exceptions.is_empty() {
        "erased"
    } else {
        "erased with exceptions"
    };
    out.result = result.into();
    out.error = failure.clone();
    out.exceptions = exceptions.len();
    let t1 = clock::unix_now();
    let mut runs: Vec<String> = state
        .as_ref()
        .map(|s| s.runs.iter().map(|&r| clock::rfc3339(r, 0)).collect())
        .unwrap_or_default();
    runs.push(clock::rfc3339(t0.0, t0.1));
    let start_s = state
        .as_ref()
        .map(|s| s.header.started.clone())
        .unwrap_or_else(|| clock::rfc3339(t0.0, t0.1));
    let first_unix = state
        .as_ref()
        .and_then(|s| s.runs.first().copied())
        .unwrap_or(t0.0);
    let mut errors = ctx.rec.errors.clone();
    errors.extend(verify_errors);
    errors.extend(d.notes.iter().cloned());
    let idn = d
        .caps
        .as_ref()
        .map(|c| c.identity.clone())
        .unwrap_or_default();
    let certificate = Certificate {
        format: cert::FORMAT.into(),
        result: result.into(),
        failure,
        drive: cert::DriveSection {
            path: dev_s.clone(),
            vendor: d.dev.vendor.clone().or(idn.vendor),
            model: d.dev.model.clone().or(idn.model),
            serial: d.serial().map(String::from),
            firmware: d.dev.firmware.clone().or(idn.firmware),
            wwid: d.dev.wwid.clone(),
            kind: format!("{:?}", d.dev.kind).to_lowercase(),
            transport: d.offers.transport.clone(),
            media: media(d),
            capacity_bytes: d.size,
            logical_sector: d.lbs,
            physical_sector: d.dev.physical_sector.0,
        },
        erase: cert::EraseSection {
            method: d.choice.method.name().into(),
            method_reason: d.choice.reason.clone(),
            nist_category: d.choice.method.nist_category(opts.crypto).into(),
            technique: technique(d.choice.method, opts.crypto, &opts.pattern),
            pattern: opts.pattern.to_string(),
            seed,
            passes,
            commands: ctx
                .rec
                .commands
                .iter()
                .map(|(k, &(count, bytes))| CommandRecord {
                    command: k.clone(),
                    count,
                    bytes,
                })
                .collect(),
            bytes_this_run: ctx.rec.bytes,
            bytes_resumed: resumed,
            offloaded: out.offloaded,
            stream_tuning: ctx.rec.tuning.map(|(l, q, _)| (l, q)),
            discard_first: opts.discard_first,
        },
        timing: cert::TimingSection {
            start: start_s,
            end: clock::rfc3339(t1.0, t1.1),
            erase_seconds: out.erase_seconds,
            verify_seconds: out.verify_seconds,
            duration_seconds: (t1.0 as f64 + f64::from(t1.1) * 1e-9)
                - (first_unix as f64
                    + if state.is_some() {
                        0.0
                    } else {
                        f64::from(t0.1) * 1e-9
                    }),
            runs,
        },
        verification: vsec,
        exceptions,
        errors,
        retried: ctx.rec.retried + verify_retried,
        tool: cert::ToolSection {
            name: "drivelab".into(),
            version: opts.version.clone(),
            host: clock::hostname(),
            kernel: clock::kernel(),
            command_line: opts.command_line.clone(),
        },
    };
    // 20261122T045501.123Z: unique per drive even for quick reruns.
    let stamp = clock::rfc3339(t1.0, t1.1).replace([':', '-'], "");
    let base = format!(
        "erase-{}-{stamp}",
        journal::file_key(d.serial(), &d.dev.path)
    );
    let jfile = opts.certificate_dir.join(format!("{base}.json"));
    let hfile = opts.certificate_dir.join(format!("{base}.html"));
    let signed = cert::sign(&certificate, &shared.key)?;
    let wr = |p: &Path, s: &str| {
        std::fs::write(p, s)
            .map_err(|e| EraseError::Certificate(format!("cannot write {}: {e}", p.display())))
    };
    wr(&jfile, &signed)?;
    let pk: String = shared
        .key
        .verifying_key()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    wr(
        &hfile,
        &cert::html(
            &certificate,
            &jfile
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            &pk,
        ),
    )?;
    out.certificate = Some(jfile);
    out.html = Some(hfile);
    // The erase is complete and certified: the journal has done its job.
    drop(ctx);
    let _ = std::fs::remove_file(&jpath);
    out.journal = None;
    progress.set_phase(if out.result == "failed" {
        Phase::Failed
    } else {
        Phase::Done
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_finds_exactly_the_failing_blocks() {
        // A 64-block range (512-byte blocks) where blocks 5, 6 and 40 fail:
        // any command touching them fails.
        let lbs = 512u64;
        let bad_blocks = [5u64, 6, 40];
        let mut calls = 0;
        let mut op = |o: u64, l: u64| {
            calls += 1;
            let (first, n) = (o / lbs, l / lbs);
            if bad_blocks.iter().any(|b| (first..first + n).contains(b)) {
                Err("EIO".to_string())
            } else {
                Ok(())
            }
        };
        let (good, bad) = narrow(0, 64 * lbs, lbs, "EIO".into(), &mut op);
        assert_eq!(good, 61 * lbs);
        assert_eq!(
            bad,
            vec![
                (5 * lbs, 2 * lbs, "EIO".into()),
                (40 * lbs, lbs, "EIO".into())
            ]
        );
        // Far fewer commands than one per block.
        assert!(calls < 40, "{calls} commands");
        // A single failing block is not retried again.
        let mut never = |_: u64, _: u64| -> Result<(), String> { panic!("retried") };
        let (g, b) = narrow(7 * lbs, lbs, lbs, "EIO".into(), &mut never);
        assert_eq!((g, b.len()), (0, 1));
    }

    #[test]
    fn plan_minus_skipped_ranges() {
        let plan = SamplePlan {
            regions: vec![
                Region {
                    first: 0,
                    blocks: 10,
                },
                Region {
                    first: 20,
                    blocks: 10,
                },
            ],
            subsections: 0,
            region_count: 2,
        };
        let p = verify_plan_minus(plan, &[(5, 7), (18, 22), (29, 40)]);
        let got: Vec<(u64, u64)> = p.regions.iter().map(|r| (r.first, r.blocks)).collect();
        assert_eq!(got, vec![(0, 5), (7, 3), (22, 7)]);
    }
}
