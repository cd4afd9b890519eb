//! An NBD server for the simulated SSD: the newstyle fixed handshake
//! (`NBD_OPT_EXPORT_NAME`, `NBD_OPT_GO`, `NBD_OPT_INFO`, `NBD_OPT_ABORT`;
//! anything else is answered "unsupported") and the transmission phase with
//! simple replies (`NBD_CMD_READ`, `WRITE`, `FLUSH`, `TRIM`, `DISC`), after
//! the NBD protocol document (github.com/NetworkBlockDevice/nbd,
//! doc/proto.md).
//!
//! The data lives in memory; the timing comes from [`Ssd`]: each command is
//! applied to the model when it arrives (the model clock is the time since
//! the server started), and its reply is held back until the model's
//! completion time, by a reply thread that keeps the pending replies in
//! deadline order. So the client sees the model's latencies, and at a queue
//! depth above one the model's parallel units overlap.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::path::Path;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::ssd::{Ssd, SsdStats};

/// "NBDMAGIC".
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// "IHAVEOPT".
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Option reply magic.
pub const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Request magic.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Simple reply magic.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flag: fixed newstyle.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
/// Handshake flag: no 124 zero bytes after `NBD_OPT_EXPORT_NAME`.
pub const FLAG_NO_ZEROES: u16 = 2;

/// `NBD_OPT_EXPORT_NAME`.
pub const OPT_EXPORT_NAME: u32 = 1;
/// `NBD_OPT_ABORT`.
pub const OPT_ABORT: u32 = 2;
/// `NBD_OPT_INFO`.
pub const OPT_INFO: u32 = 6;
/// `NBD_OPT_GO`.
pub const OPT_GO: u32 = 7;
/// `NBD_REP_ACK`.
pub const REP_ACK: u32 = 1;
/// `NBD_REP_INFO`.
pub const REP_INFO: u32 = 3;
/// `NBD_REP_ERR_UNSUP`.
pub const REP_ERR_UNSUP: u32 = (1 << 31) | 1;
/// `NBD_REP_ERR_INVALID`.
pub const REP_ERR_INVALID: u32 = (1 << 31) | 3;
/// `NBD_INFO_EXPORT`.
pub const INFO_EXPORT: u16 = 0;
/// `NBD_INFO_BLOCK_SIZE`.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// `NBD_CMD_READ`.
pub const CMD_READ: u16 = 0;
/// `NBD_CMD_WRITE`.
pub const CMD_WRITE: u16 = 1;
/// `NBD_CMD_DISC`.
pub const CMD_DISC: u16 = 2;
/// `NBD_CMD_FLUSH`.
pub const CMD_FLUSH: u16 = 3;
/// `NBD_CMD_TRIM`.
pub const CMD_TRIM: u16 = 4;

/// Transmission flags this server offers: has flags, flush, FUA (a no-op:
/// the model has no volatile cache), trim.
pub const TRANSMISSION_FLAGS: u16 = 1 | (1 << 2) | (1 << 3) | (1 << 5);

const EINVAL: u32 = 22;

/// A request larger than this is refused (EINVAL) instead of buffered.
pub const MAX_REQUEST_BYTES: u32 = 32 << 20;

#[cfg(test)]
fn read_u16(r: &mut impl Read) -> io::Result<u16> {
    let mut b = [0; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}
fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}
fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn protocol(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn option_reply(w: &mut impl Write, opt: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut m = Vec::with_capacity(20 + data.len());
    m.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&kind.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    w.write_all(&m)
}

/// How the handshake ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handshake {
    /// The client chose the export: transmission follows.
    Transmission {
        /// The export name the client asked for (any name is served).
        export: String,
    },
    /// The client sent `NBD_OPT_ABORT` or closed the connection.
    Aborted,
}

/// Runs the server side of the fixed newstyle handshake for one export of
/// `size` bytes with block size `block`.
pub fn handshake(s: &mut (impl Read + Write), size: u64, block: u32) -> io::Result<Handshake> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello)?;
    let client = read_u32(s)?;
    if client & u32::from(FLAG_FIXED_NEWSTYLE) == 0 {
        return Err(protocol(format!(
            "the client does not speak fixed newstyle (flags {client:#x})"
        )));
    }
    let no_zeroes = client & u32::from(FLAG_NO_ZEROES) != 0;
    loop {
        let magic = match read_u64(s) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Handshake::Aborted),
            Err(e) => return Err(e),
        };
        if magic != IHAVEOPT {
            return Err(protocol(format!(
                "option magic {magic:#x}, expected IHAVEOPT"
            )));
        }
        let opt = read_u32(s)?;
        let len = read_u32(s)?;
        if len > 64 * 1024 {
            return Err(protocol(format!("option {opt} of {len} bytes is too long")));
        }
        let mut data = vec![0; len as usize];
        s.read_exact(&mut data)?;
        match opt {
            OPT_EXPORT_NAME => {
                let mut m = Vec::with_capacity(134);
                m.extend_from_slice(&size.to_be_bytes());
                m.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                if !no_zeroes {
                    m.extend_from_slice(&[0; 124]);
                }
                s.write_all(&m)?;
                return Ok(Handshake::Transmission {
                    export: String::from_utf8_lossy(&data).into_owned(),
                });
            }
            OPT_INFO | OPT_GO => {
                let name_len = data
                    .get(..4)
                    .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize);
                let name = name_len
                    .and_then(|n| data.get(4..4 + n))
                    .map(|b| String::from_utf8_lossy(b).into_owned());
                let Some(name) = name else {
                    option_reply(s, opt, REP_ERR_INVALID, b"malformed option data")?;
                    continue;
                };
                let mut info = Vec::with_capacity(12);
                info.extend_from_slice(&INFO_EXPORT.to_be_bytes());
                info.extend_from_slice(&size.to_be_bytes());
                info.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                option_reply(s, opt, REP_INFO, &info)?;
                let mut bs = Vec::with_capacity(14);
                bs.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
                bs.extend_from_slice(&1u32.to_be_bytes());
                bs.extend_from_slice(&block.to_be_bytes());
                bs.extend_from_slice(&MAX_REQUEST_BYTES.to_be_bytes());
                option_reply(s, opt, REP_INFO, &bs)?;
                option_reply(s, opt, REP_ACK, &[])?;
                if opt == OPT_GO {
                    return Ok(Handshake::Transmission { export: name });
                }
            }
            OPT_ABORT => {
                let _ = option_reply(s, opt, REP_ACK, &[]);
                return Ok(Handshake::Aborted);
            }
            _ => option_reply(s, opt, REP_ERR_UNSUP, &[])?,
        }
    }
}

/// The simulated SSD with its data.
#[derive(Debug)]
pub struct Export {
    ssd: Ssd,
    data: Vec<u8>,
    page_bytes: u64,
}

impl Export {
    /// An export of `ssd`'s logical pages of `page_bytes` each, zero-filled.
    pub fn new(ssd: Ssd, page_bytes: u32) -> Self {
        let size = ssd.ftl().config().logical_pages * u64::from(page_bytes);
        Self {
            data: vec![0; size as usize],
            page_bytes: u64::from(page_bytes),
            ssd,
        }
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.data.len() as u64
    }

    /// The model.
    pub fn ssd(&self) -> &Ssd {
        &self.ssd
    }

    /// The pages `[offset, offset + len)` touches.
    fn pages(&self, offset: u64, len: u32) -> std::ops::Range<u64> {
        let first = offset / self.page_bytes;
        let end = (offset + u64::from(len)).div_ceil(self.page_bytes);
        first..end
    }
}

/// Counts as a one-line JSON object (for the stats file).
pub fn stats_json(s: &SsdStats) -> String {
    format!(
        "{{\"host_writes\":{},\"flash_writes\":{},\"gc_copies\":{},\"erases\":{},\"trimmed\":{},\"cache_writes\":{},\"host_reads\":{},\"write_amplification\":{:.4}}}\n",
        s.ftl.host_writes,
        s.ftl.flash_writes,
        s.ftl.gc_copies,
        s.ftl.erases,
        s.ftl.trimmed,
        s.cache_writes,
        s.host_reads,
        s.ftl.write_amplification()
    )
}

struct Pending {
    due: Instant,
    bytes: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        self.due == o.due
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.due.cmp(&o.due)
    }
}

/// Writes the stats file atomically (a temporary file renamed over it).
fn write_stats_file(path: &Path, s: &SsdStats) {
    let tmp = path.with_extension("tmp");
    if std::fs::write(&tmp, stats_json(s)).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// Counts the reader publishes after each command; `dirty` until written.
#[derive(Default)]
struct Shared {
    stats: SsdStats,
    dirty: bool,
}

/// How long the device must be idle before the stats file is rewritten.
const STATS_IDLE: Duration = Duration::from_millis(200);

/// Sends replies at their due times; when nothing is pending for
/// [`STATS_IDLE`], rewrites the stats file if the counts changed. Ends when
/// the sender side hangs up and every reply is out.
fn reply_loop(
    mut w: impl Write,
    rx: mpsc::Receiver<Pending>,
    shared: Arc<Mutex<Shared>>,
    stats_path: Option<PathBuf>,
) -> io::Result<()> {
    let mut heap: BinaryHeap<Reverse<Pending>> = BinaryHeap::new();
    let mut open = true;
    while open || !heap.is_empty() {
        let now = Instant::now();
        while heap.peek().is_some_and(|Reverse(p)| p.due <= now) {
            if let Some(Reverse(p)) = heap.pop() {
                w.write_all(&p.bytes)?;
            }
        }
        if !open {
            if let Some(Reverse(p)) = heap.peek() {
                thread::sleep(p.due.saturating_duration_since(Instant::now()));
            }
            continue;
        }
        let wait = heap
            .peek()
            .map(|Reverse(p)| p.due.saturating_duration_since(Instant::now()))
            .unwrap_or(STATS_IDLE);
        match rx.recv_timeout(wait) {
            Ok(p) => heap.push(Reverse(p)),
            Err(RecvTimeoutError::Timeout) => {
                if heap.is_empty() {
                    if let (Some(path), Ok(mut sh)) = (&stats_path, shared.lock()) {
                        if sh.dirty {
                            write_stats_file(path, &sh.stats);
                            sh.dirty = false;
                        }
                    }
                }
            }
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
    }
    w.flush()
}

/// Options of [`serve`].
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Rewrite this file with [`stats_json`] whenever the device has been
    /// idle for 200 ms after a command, on every FLUSH, and at the end.
    pub stats_path: Option<PathBuf>,
}

/// Serves the transmission phase until `NBD_CMD_DISC` or end of stream.
/// `reader` and `writer` are the two directions of one connection (e.g. a
/// stream and its `try_clone`). Returns the export (with its model) at the
/// end.
pub fn serve(
    mut reader: impl Read,
    writer: impl Write + Send + 'static,
    mut export: Export,
    opts: &ServeOptions,
) -> io::Result<Export> {
    let (tx, rx) = mpsc::channel::<Pending>();
    let shared = Arc::new(Mutex::new(Shared::default()));
    let replier = {
        let (shared, path) = (shared.clone(), opts.stats_path.clone());
        thread::spawn(move || reply_loop(writer, rx, shared, path))
    };
    let start = Instant::now();
    let write_stats = |e: &Export| {
        if let Some(p) = &opts.stats_path {
            write_stats_file(p, &e.ssd.stats());
        }
    };
    let result = (|| -> io::Result<()> {
        loop {
            let mut hdr = [0u8; 28];
            match reader.read_exact(&mut hdr) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            }
            let magic = u32::from_be_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
            if magic != REQUEST_MAGIC {
                return Err(protocol(format!("request magic {magic:#x}")));
            }
            let kind = u16::from_be_bytes([hdr[6], hdr[7]]);
            let mut handle = [0u8; 8];
            handle.copy_from_slice(&hdr[8..16]);
            let offset = u64::from_be_bytes(hdr[16..24].try_into().unwrap_or([0; 8]));
            let len = u32::from_be_bytes([hdr[24], hdr[25], hdr[26], hdr[27]]);
            let now_ns = start.elapsed().as_nanos() as u64;
            let in_range = offset
                .checked_add(u64::from(len))
                .is_some_and(|end| end <= export.size());
            let mut reply = Vec::with_capacity(16);
            reply.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
            let mut error = 0u32;
            let mut done_ns = now_ns;
            let mut payload: Vec<u8> = Vec::new();
            match kind {
                CMD_DISC => return Ok(()),
                CMD_WRITE => {
                    let mut buf = vec![0u8; len.min(MAX_REQUEST_BYTES) as usize];
                    if len > MAX_REQUEST_BYTES {
                        return Err(protocol(format!("write of {len} bytes is too large")));
                    }
                    reader.read_exact(&mut buf)?;
                    if in_range {
                        let o = offset as usize;
                        export.data[o..o + buf.len()].copy_from_slice(&buf);
                        for p in export.pages(offset, len) {
                            done_ns = done_ns.max(export.ssd.write(now_ns, p));
                        }
                    } else {
                        error = EINVAL;
                    }
                }
                CMD_READ => {
                    // Reads are bounded (the reply carries the data); a trim is
                    // not, and may cover the whole device.
                    if in_range && len <= MAX_REQUEST_BYTES {
                        let o = offset as usize;
                        payload = export.data[o..o + len as usize].to_vec();
                        for p in export.pages(offset, len) {
                            done_ns = done_ns.max(export.ssd.read(now_ns, p));
                        }
                    } else {
                        error = EINVAL;
                    }
                }
                CMD_TRIM => {
                    if in_range {
                        // Only whole pages are unmapped; their bytes read back as zeroes.
                        let first = offset.div_ceil(export.page_bytes);
                        let end = (offset + u64::from(len)) / export.page_bytes;
                        for p in first..end {
                            export.ssd.trim(p);
                            let o = (p * export.page_bytes) as usize;
                            export.data[o..o + export.page_bytes as usize].fill(0);
                        }
                    } else {
                        error = EINVAL;
                    }
                }
                CMD_FLUSH => write_stats(&export),
                _ => error = EINVAL,
            }
            reply.extend_from_slice(&error.to_be_bytes());
            reply.extend_from_slice(&handle);
            if error == 0 {
                reply.extend_from_slice(&payload);
            }
            if let Ok(mut sh) = shared.lock() {
                sh.stats = export.ssd.stats();
                sh.dirty = true;
            }
            let due = start + Duration::from_nanos(done_ns);
            if tx.send(Pending { due, bytes: reply }).is_err() {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the reply thread stopped",
                ));
            }
        }
    })();
    drop(tx);
    let replied = replier
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the reply thread panicked")));
    write_stats(&export);
    result?;
    match replied {
        Ok(()) => Ok(export),
        // The client may close before reading its last replies (after DISC).
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(export),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::FtlConfig;
    use crate::ssd::Timing;
    use std::os::unix::net::UnixStream;

    fn export() -> Export {
        let mut c = FtlConfig::new(256);
        c.pages_per_block = 16;
        c.over_provisioning = 0.25;
        let t = Timing {
            page_program_ns: 2_000_000,
            ..Timing::default()
        };
        Export::new(Ssd::new(c, t).unwrap(), 4096)
    }

    fn request(s: &mut UnixStream, kind: u16, handle: u64, offset: u64, len: u32, data: &[u8]) {
        let mut m = Vec::new();
        m.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
        m.extend_from_slice(&0u16.to_be_bytes());
        m.extend_from_slice(&kind.to_be_bytes());
        m.extend_from_slice(&handle.to_be_bytes());
        m.extend_from_slice(&offset.to_be_bytes());
        m.extend_from_slice(&len.to_be_bytes());
        m.extend_from_slice(data);
        s.write_all(&m).unwrap();
    }

    /// (error, handle) of the next simple reply.
    fn reply(s: &mut UnixStream) -> (u32, u64) {
        assert_eq!(read_u32(s).unwrap(), SIMPLE_REPLY_MAGIC);
        (read_u32(s).unwrap(), read_u64(s).unwrap())
    }

    fn option(s: &mut UnixStream, opt: u32, data: &[u8]) {
        let mut m = Vec::new();
        m.extend_from_slice(&IHAVEOPT.to_be_bytes());
        m.extend_from_slice(&opt.to_be_bytes());
        m.extend_from_slice(&(data.len() as u32).to_be_bytes());
        m.extend_from_slice(data);
        s.write_all(&m).unwrap();
    }

    /// (option, reply type, data) of the next option reply.
    fn opt_reply(s: &mut UnixStream) -> (u32, u32, Vec<u8>) {
        assert_eq!(read_u64(s).unwrap(), REPLY_MAGIC);
        let (o, t, n) = (
            read_u32(s).unwrap(),
            read_u32(s).unwrap(),
            read_u32(s).unwrap(),
        );
        let mut d = vec![0; n as usize];
        s.read_exact(&mut d).unwrap();
        (o, t, d)
    }

    #[test]
    fn go_handshake_then_write_read_trim_flush_disconnect() {
        let (mut client, server) = UnixStream::pair().unwrap();
        let dir = std::env::temp_dir().join(format!("ftlsim-nbd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stats = dir.join("stats.json");
        let opts = ServeOptions {
            stats_path: Some(stats.clone()),
        };
        let t = thread::spawn(move || {
            let mut s = server;
            let e = export();
            let h = handshake(&mut s, e.size(), 4096).unwrap();
            assert_eq!(
                h,
                Handshake::Transmission {
                    export: "ssd".into()
                }
            );
            let w = s.try_clone().unwrap();
            serve(s, w, e, &opts).unwrap()
        });
        // Hello: NBDMAGIC, IHAVEOPT, fixed newstyle + no zeroes.
        assert_eq!(read_u64(&mut client).unwrap(), NBDMAGIC);
        assert_eq!(read_u64(&mut client).unwrap(), IHAVEOPT);
        assert_eq!(read_u16(&mut client).unwrap(), 3);
        client.write_all(&3u32.to_be_bytes()).unwrap();
        // An unknown option (NBD_OPT_STRUCTURED_REPLY = 8) is unsupported.
        option(&mut client, 8, &[]);
        assert_eq!(opt_reply(&mut client), (8, REP_ERR_UNSUP, vec![]));
        let mut go = Vec::new();
        go.extend_from_slice(&3u32.to_be_bytes());
        go.extend_from_slice(b"ssd");
        go.extend_from_slice(&0u16.to_be_bytes());
        option(&mut client, OPT_GO, &go);
        let (o, t1, d) = opt_reply(&mut client);
        assert_eq!((o, t1, &d[..2]), (OPT_GO, REP_INFO, &[0u8, 0][..]));
        assert_eq!(u64::from_be_bytes(d[2..10].try_into().unwrap()), 256 * 4096);
        assert_eq!(u16::from_be_bytes([d[10], d[11]]), TRANSMISSION_FLAGS);
        let (_, t2, d) = opt_reply(&mut client);
        assert_eq!(
            (t2, u16::from_be_bytes([d[0], d[1]])),
            (REP_INFO, INFO_BLOCK_SIZE)
        );
        assert_eq!(opt_reply(&mut client), (OPT_GO, REP_ACK, vec![]));

        // Write two pages: the reply waits at least one program time (2 ms).
        let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        let sent = Instant::now();
        request(&mut client, CMD_WRITE, 7, 4096, 8192, &data);
        assert_eq!(reply(&mut client), (0, 7));
        assert!(sent.elapsed() >= Duration::from_millis(2));
        request(&mut client, CMD_READ, 8, 4096, 8192, &[]);
        assert_eq!(reply(&mut client), (0, 8));
        let mut back = vec![0; 8192];
        client.read_exact(&mut back).unwrap();
        assert_eq!(back, data);
        // Out of range: EINVAL, no data follows.
        request(&mut client, CMD_READ, 9, 256 * 4096, 4096, &[]);
        assert_eq!(reply(&mut client), (EINVAL, 9));
        request(&mut client, CMD_TRIM, 10, 4096, 4096, &[]);
        assert_eq!(reply(&mut client), (0, 10));
        request(&mut client, CMD_READ, 11, 4096, 4096, &[]);
        assert_eq!(reply(&mut client), (0, 11));
        client.read_exact(&mut back[..4096]).unwrap();
        assert!(back[..4096].iter().all(|&b| b == 0));
        request(&mut client, CMD_FLUSH, 12, 0, 0, &[]);
        assert_eq!(reply(&mut client), (0, 12));
        let text = std::fs::read_to_string(&stats).unwrap();
        assert!(text.contains("\"host_writes\":2,"), "{text}");
        assert!(text.contains("\"trimmed\":1,"), "{text}");
        request(&mut client, CMD_DISC, 13, 0, 0, &[]);
        let e = t.join().unwrap();
        assert_eq!(e.ssd().stats().ftl.host_writes, 2);
        assert!(!e.ssd().ftl().is_mapped(1) && e.ssd().ftl().is_mapped(2));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn abort_and_old_clients_end_the_handshake() {
        let (mut client, mut server) = UnixStream::pair().unwrap();
        let t = thread::spawn(move || handshake(&mut server, 4096, 512));
        let mut hello = [0u8; 18];
        client.read_exact(&mut hello).unwrap();
        client.write_all(&1u32.to_be_bytes()).unwrap();
        option(&mut client, OPT_ABORT, &[]);
        assert_eq!(t.join().unwrap().unwrap(), Handshake::Aborted);
        // A client without fixed newstyle is refused.
        let (mut client, mut server) = UnixStream::pair().unwrap();
        let t = thread::spawn(move || handshake(&mut server, 4096, 512));
        client.read_exact(&mut hello).unwrap();
        client.write_all(&0u32.to_be_bytes()).unwrap();
        assert!(t.join().unwrap().is_err());
    }
}
