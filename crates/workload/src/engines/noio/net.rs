//! fio's `ioengine=net`: a job's reads and writes are a socket's receives
//! and sends, to test a network path (or the host's own stack) with fio's
//! job files, and to feed or drain a fio on the other end.
//!
//! Options, as fio's (HOWTO "net"):
//!
//! - `protocol` (`proto`): `tcp` (default), `tcpv6`, `udp`, `udpv6` or
//!   `unix` (a stream socket at the path `hostname` names).
//! - `hostname`: the peer to connect or send to (a name or an address); for
//!   a udp reader only a multicast group (224.0.0.0–239.255.255.255), which
//!   it joins; for unix the socket's path. fio takes it as the job's file
//!   name, and so does drivelab's report.
//! - `port`: required for tcp and udp, refused for unix; each `numjobs`
//!   clone uses the next port (fio's `port + subjob`).
//! - `listen`: a tcp job accepts one connection instead of connecting.
//!   udp and unix jobs take no `listen`: their readers bind and wait, their
//!   writers connect or send (fio's rule).
//! - `pingpong`: each write waits for the reader to send the block back,
//!   and each read sends it back, so completion latency is a round trip.
//! - `ttl` (multicast, default 1), `interface` (the IPv4 address whose
//!   interface multicast leaves and is joined on), `nodelay`
//!   (TCP_NODELAY), `window_size` (SO_RCVBUF on the receiving side, SO_SNDBUF
//!   on the sending side, both with pingpong), `mss` (TCP_MAXSEG, tcp only).
//!
//! What an I/O is, as in fio: a write sends `bs` bytes (one datagram for
//! udp); a read receives up to `bs` bytes (one datagram for udp; for a
//! stream, until `bs` bytes have come or the peer closed, a shorter block
//! counted in `short_ios`). Offsets mean nothing; `size` is how many bytes
//! the job moves at most, and rw must be sequential.
//!
//! Wire compatible with fio 3.33, so either end can be fio:
//!
//! - A writer, when its job ends, sends fio's 8-byte close message (magic
//!   0x6c696e6b, command 0x89, little-endian) on every protocol; a reader
//!   that receives exactly it (one datagram, or the 8 bytes of a stream
//!   block) ends its job as finished, without counting an I/O. A stream
//!   closed by the peer ends it too.
//! - udp: a writer first sends fio's open message (the same magic, command
//!   0x98, big-endian), which a reader waits for before its clock starts
//!   (so a reader must be bound before the writer starts: `startdelay`).
//!   Each datagram of at least 24 bytes ends in fio's sequence record
//!   (magic 0x657375716e556563, number, length; little-endian); a reader
//!   counts the datagrams the numbers skip, which the run prints.
//!
//! Nothing here opens a device: no claim is involved.

use std::io::{ErrorKind, Read, Write};
use std::net::{
    IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket,
};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use drivelab_engine::buf::Fill;
use drivelab_engine::io::{IoDesc, Op};
use drivelab_engine::oneshot::{OneShot, RunOne};
use socket2::{Domain, SockAddr, Socket, Type};

pub use crate::engines::opts::net::{NetOpts, Protocol};
use crate::spec::kinds::RwMode;
use crate::{JobSpec, SpecError};

/// fio's link open/close magic ("link").
const LINK_MAGIC: u32 = 0x6c69_6e6b;
/// The close command (sent little-endian).
const LINK_CLOSE: u32 = 0x89;
/// The open command (sent big-endian).
const LINK_OPEN: u32 = 0x98;
/// The magic of the sequence record at the end of a udp datagram.
const SEQ_MAGIC: u64 = 0x6573_7571_6e55_6563;
/// The record's length: magic, number, datagram length.
const SEQ_LEN: usize = 24;
/// How often a blocked socket call looks at the stop flags.
const POLL: Duration = Duration::from_millis(100);

impl NetOpts {
    /// The job receives (binds and waits): tcp's `listen`, a udp or unix
    /// reader.
    fn receives(&self, spec: &JobSpec) -> bool {
        if self.protocol.is_tcp() {
            self.listen
        } else {
            reads(spec)
        }
    }
}

fn reads(spec: &JobSpec) -> bool {
    spec.rw.read_pct(spec.rwmixread) > 0
}

/// Whether `h` is an IPv4 multicast group (fio's test).
fn multicast(h: &str) -> Option<Ipv4Addr> {
    h.parse::<Ipv4Addr>().ok().filter(|a| a.is_multicast())
}

/// What a job file may not say to the net engine, each refused with the
/// key to change (fio refuses the same when the job starts).
pub fn check(spec: &JobSpec) -> Result<(), SpecError> {
    let o = &spec.engine.net;
    let refuse = |key: &str, why: String| {
        Err(SpecError::Invalid(format!(
            "job '{}': {key}: {why}",
            spec.name
        )))
    };
    let p = o.protocol.name();
    match spec.rw {
        RwMode::Read | RwMode::Write => {}
        RwMode::ReadWrite if o.protocol.is_tcp() => {}
        RwMode::ReadWrite => {
            return refuse(
                "rw",
                format!("a {p} connection carries data one way: give rw=read or rw=write"),
            )
        }
        _ => {
            return refuse(
                "rw",
                "a socket is a stream, read and written in order: give rw=read or rw=write (tcp: also rw=rw)".to_string(),
            )
        }
    }
    if spec.size.is_none() {
        return refuse(
            "size",
            "ioengine=net needs size= (the most bytes the job sends or receives)".to_string(),
        );
    }
    if spec.verify.kind.is_some() {
        return refuse(
            "verify",
            "drivelab does not check data sent over ioengine=net; drop verify".to_string(),
        );
    }
    match (o.protocol, o.port) {
        (Protocol::Unix, Some(_)) => {
            return refuse(
                "port",
                "a unix socket has no port; drop port, or use protocol=tcp or udp".to_string(),
            )
        }
        (Protocol::Unix, None) => {}
        (_, None) => return refuse("port", format!("protocol={p} needs port=N (1-65535)")),
        _ => {}
    }
    if o.listen && !o.protocol.is_tcp() {
        return refuse(
            "listen",
            format!(
                "only tcp listens; a {p} reader (rw=read) binds and waits by itself: drop listen"
            ),
        );
    }
    let host = host(spec);
    let host = host.as_deref();
    if o.protocol == Protocol::Unix {
        if host.is_none() {
            return refuse(
                "hostname",
                "protocol=unix needs hostname=PATH, the socket's path".to_string(),
            );
        }
        return Ok(());
    }
    let receives = o.receives(spec);
    match host {
        Some(h) if receives => {
            if !o.protocol.is_udp() {
                return refuse(
                    "hostname",
                    "a listening tcp job accepts on every address and takes no hostname: drop hostname (or listen)".to_string(),
                );
            }
            if multicast(h).is_none() {
                return refuse(
                    "hostname",
                    format!("a udp reader binds every address; '{h}' is not a multicast group (224.0.0.0-239.255.255.255): drop hostname"),
                );
            }
        }
        None if !receives => {
            return refuse(
                "hostname",
                format!(
                    "a {p} job that {} needs hostname=HOST, its peer{}",
                    if o.protocol.is_tcp() {
                        "connects"
                    } else {
                        "writes"
                    },
                    if o.protocol.is_tcp() {
                        " (or listen, to accept)"
                    } else {
                        ""
                    }
                ),
            )
        }
        _ => {}
    }
    if o.protocol.is_v6() && host.and_then(multicast).is_some() {
        return refuse(
            "hostname",
            "multicast is IPv4 only: use protocol=udp".to_string(),
        );
    }
    Ok(())
}

/// The peer, group or socket path: `hostname`, else a `filename` the job
/// gave (fio's hostname is its file name; HOWTO names `filename` for unix
/// sockets), not one named after the job (`filename_format`).
pub fn host(spec: &JobSpec) -> Option<String> {
    spec.engine.net.hostname.clone().or_else(|| {
        spec.filename_format
            .is_none()
            .then(|| spec.filenames.first().cloned())
            .flatten()
    })
}

/// The job's name for its one "file": fio's, the hostname or "net".
pub fn target_name(spec: &JobSpec) -> String {
    host(spec).unwrap_or_else(|| "net".to_string())
}

/// A net job as the plan takes it, after [`check`]: one target named as
/// fio names it (the hostname, or "net"), buffered (nothing to align).
/// None for other engines.
pub fn planned(spec: &JobSpec) -> Result<Option<JobSpec>, crate::PlanError> {
    if spec.ioengine != crate::EngineKind::Net {
        return Ok(None);
    }
    check(spec)?;
    let mut s = spec.clone();
    s.engine.net.hostname = host(spec);
    s.filenames = vec![target_name(spec)];
    s.filename_format = None;
    s.direct = Some(false);
    Ok(Some(s))
}

/// A connected stream of either family.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn timeouts(&self) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_read_timeout(Some(POLL))?;
                s.set_write_timeout(Some(POLL))
            }
            Stream::Unix(s) => {
                s.set_read_timeout(Some(POLL))?;
                s.set_write_timeout(Some(POLL))
            }
        }
    }

    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(b),
            Stream::Unix(s) => s.read(b),
        }
    }

    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(b),
            Stream::Unix(s) => s.write(b),
        }
    }
}

/// Where the job's socket is.
enum Conn {
    /// A tcp listener, accepting in [`NetLink::open`].
    TcpListen(TcpListener),
    /// A unix listener, accepting in [`NetLink::open`].
    UnixListen(UnixListener),
    /// A tcp socket set up, connecting in [`NetLink::open`].
    TcpConnect(Socket, SocketAddr),
    /// A unix socket path to connect to in [`NetLink::open`].
    UnixConnect(PathBuf),
    /// A connected stream.
    Stream(Stream),
    /// A udp socket and its peer (the writer's destination; for a reader,
    /// where the last datagram came from).
    Udp(UdpSocket, Option<SocketAddr>),
    /// Gone.
    Closed,
}

/// The outcome of one socket transfer.
enum Xfer {
    /// Bytes moved.
    Bytes(usize),
    /// The peer ended the stream (closed, or sent the close message).
    End,
}

/// The net engine: one I/O at a time (fio's engine is synchronous), each a
/// send or receive on the job's socket ([`engine`] makes one).
pub type NetEngine<'a> = OneShot<NetLink<'a>>;

/// What the net engine does per I/O: the job's socket and what it counts.
pub struct NetLink<'a> {
    opts: NetOpts,
    receives: bool,
    conn: Conn,
    /// Set when the peer ended the stream: the job loop then ends the job.
    end: Arc<AtomicBool>,
    /// The run's stop (Ctrl-C) and the group's end: a blocked call gives up.
    stops: Stops<'a>,
    send_seq: u64,
    recv_seq: u64,
    seq_off: bool,
    /// udp datagrams the sequence numbers skipped (fio's drop_ios), per
    /// direction of the I/O that received: a reader's reads, a pingpong
    /// writer's writes (their replies).
    dropped: [u64; 3],
    /// The direction of the I/O in progress.
    dir: usize,
    job: String,
}

/// What a socket call blocked on the peer watches: the run's stop
/// (Ctrl-C) and the job's group's end.
struct Stops<'a> {
    stop: &'a AtomicBool,
    group_end: Option<Arc<AtomicBool>>,
}

impl Stops<'_> {
    /// The run was stopped (Ctrl-C) or the job's group ended.
    fn cancelled(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self
                .group_end
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// `call` again each time it times out (the sockets wait at most
    /// [`POLL`]) or would block, `pause` apart, until it does something
    /// else; ErrorKind::Interrupted once the run is stopped or the group
    /// ended.
    fn retry<T>(
        &self,
        pause: Duration,
        mut call: impl FnMut() -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        loop {
            match call() {
                Err(e) if would_block(&e) => {
                    if self.cancelled() {
                        return Err(ErrorKind::Interrupted.into());
                    }
                    if !pause.is_zero() {
                        std::thread::sleep(pause);
                    }
                }
                r => return r,
            }
        }
    }
}

/// How long a non-blocking accept waits between tries.
const ACCEPT_PAUSE: Duration = Duration::from_millis(5);

fn other(msg: String) -> std::io::Error {
    std::io::Error::other(msg)
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

fn close_msg() -> [u8; 8] {
    let mut m = [0u8; 8];
    m[..4].copy_from_slice(&LINK_MAGIC.to_le_bytes());
    m[4..].copy_from_slice(&LINK_CLOSE.to_le_bytes());
    m
}

fn open_msg() -> [u8; 8] {
    let mut m = [0u8; 8];
    m[..4].copy_from_slice(&LINK_MAGIC.to_be_bytes());
    m[4..].copy_from_slice(&LINK_OPEN.to_be_bytes());
    m
}

fn resolve(host: &str, port: u16, v6: bool) -> std::io::Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()?
        .find(|a| a.is_ipv6() == v6)
        .ok_or_else(|| {
            other(format!(
                "hostname '{host}' has no IPv{} address",
                if v6 { 6 } else { 4 }
            ))
        })
}

/// The net engine of a job's clone `clone`: its socket set up as
/// [`NetLink::new`] does, and one buffer of `max_bs` bytes of random data
/// from `seed` (what a writer sends).
pub fn engine<'a>(
    spec: &JobSpec,
    clone: u32,
    max_bs: usize,
    seed: u64,
    stop: &'a AtomicBool,
    group_end: Option<Arc<AtomicBool>>,
    end: Arc<AtomicBool>,
) -> std::io::Result<NetEngine<'a>> {
    let link = NetLink::new(spec, clone, stop, group_end, end)?;
    OneShot::over(link, max_bs, Fill::Random(seed))
}

impl<'a> NetLink<'a> {
    /// Set the job's socket up: a receiver binds (and listens), so that a
    /// peer started after it finds it; a sender resolves its peer. Nothing
    /// is connected yet ([`open`](Self::open) does that).
    pub fn new(
        spec: &JobSpec,
        clone: u32,
        stop: &'a AtomicBool,
        group_end: Option<Arc<AtomicBool>>,
        end: Arc<AtomicBool>,
    ) -> std::io::Result<NetLink<'a>> {
        let o = spec.engine.net.clone();
        let receives = o.receives(spec);
        let port = o
            .port
            .map(|p| p.checked_add(clone as u16).unwrap_or(p))
            .unwrap_or(0);
        let v6 = o.protocol.is_v6();
        let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
        let host = o.hostname.clone();
        // fio: the receive buffer for a receiver, the send buffer for a
        // sender, both with pingpong.
        let window = |s: &Socket| -> std::io::Result<()> {
            if o.window_size == 0 {
                return Ok(());
            }
            if receives || o.pingpong {
                s.set_recv_buffer_size(o.window_size as usize)?;
            }
            if !receives || o.pingpong {
                s.set_send_buffer_size(o.window_size as usize)?;
            }
            Ok(())
        };
        let any = if v6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        };
        let conn = match o.protocol {
            Protocol::Unix => {
                let path = PathBuf::from(host.unwrap_or_default());
                if receives {
                    // fio removes a stale socket file first.
                    let _ = std::fs::remove_file(&path);
                    Conn::UnixListen(UnixListener::bind(&path)?)
                } else {
                    Conn::UnixConnect(path)
                }
            }
            p if p.is_tcp() => {
                let s = Socket::new(domain, Type::STREAM, None)?;
                window(&s)?;
                if o.mss > 0 {
                    s.set_tcp_mss(o.mss)?;
                }
                if receives {
                    s.set_reuse_address(true)?;
                    s.set_reuse_port(true)?;
                    s.bind(&SockAddr::from(SocketAddr::new(any, port)))?;
                    s.listen(10)?;
                    let l: TcpListener = s.into();
                    l.set_nonblocking(true)?;
                    Conn::TcpListen(l)
                } else {
                    if o.nodelay {
                        s.set_tcp_nodelay(true)?;
                    }
                    let to = resolve(host.as_deref().unwrap_or_default(), port, v6)?;
                    Conn::TcpConnect(s, to)
                }
            }
            _ => {
                let s = Socket::new(domain, Type::DGRAM, None)?;
                window(&s)?;
                let group = host.as_deref().and_then(multicast);
                if receives {
                    s.set_reuse_address(true)?;
                    s.set_reuse_port(true)?;
                    let at = match group {
                        Some(g) => {
                            s.join_multicast_v4(&g, &o.interface.unwrap_or(Ipv4Addr::UNSPECIFIED))?;
                            IpAddr::V4(g)
                        }
                        None => any,
                    };
                    s.bind(&SockAddr::from(SocketAddr::new(at, port)))?;
                    let u: UdpSocket = s.into();
                    u.set_read_timeout(Some(POLL))?;
                    Conn::Udp(u, None)
                } else {
                    if group.is_some() {
                        if let Some(i) = o.interface {
                            s.set_multicast_if_v4(&i)?;
                        }
                        s.set_multicast_ttl_v4(o.ttl.unwrap_or(1))?;
                    }
                    let to = resolve(host.as_deref().unwrap_or_default(), port, v6)?;
                    let u: UdpSocket = s.into();
                    u.set_read_timeout(Some(POLL))?;
                    Conn::Udp(u, Some(to))
                }
            }
        };
        Ok(NetLink {
            opts: o,
            receives,
            conn,
            end,
            stops: Stops { stop, group_end },
            send_seq: 0,
            recv_seq: 0,
            seq_off: false,
            dropped: [0; 3],
            dir: 0,
            job: spec.name.clone(),
        })
    }

    /// udp datagrams lost on the way per direction (read, write, trim),
    /// counted from fio's sequence records.
    pub fn dropped(&self) -> [u64; 3] {
        self.dropped
    }

    /// Make the connection, when the job starts (after `startdelay`, as
    /// fio opens its socket then): a tcp or unix receiver accepts its one
    /// peer, a sender connects; a udp reader waits for the writer's open
    /// message, a udp writer sends it.
    pub fn open(&mut self) -> std::io::Result<()> {
        let conn = std::mem::replace(&mut self.conn, Conn::Closed);
        self.conn = match conn {
            Conn::TcpListen(l) => {
                eprintln!("drivelab: job '{}' waiting for a connection", self.job);
                let (s, _) = self.stops.retry(ACCEPT_PAUSE, || l.accept())?;
                s.set_nonblocking(false)?;
                if self.opts.nodelay {
                    s.set_nodelay(true)?;
                }
                Conn::Stream(Stream::Tcp(s))
            }
            Conn::UnixListen(l) => {
                eprintln!("drivelab: job '{}' waiting for a connection", self.job);
                l.set_nonblocking(true)?;
                let (s, _) = self.stops.retry(ACCEPT_PAUSE, || l.accept())?;
                s.set_nonblocking(false)?;
                Conn::Stream(Stream::Unix(s))
            }
            Conn::TcpConnect(s, to) => {
                s.connect(&SockAddr::from(to))
                    .map_err(|e| other(format!("connect to {to}: {e}")))?;
                Conn::Stream(Stream::Tcp(s.into()))
            }
            Conn::UnixConnect(p) => {
                let s = UnixStream::connect(&p)
                    .map_err(|e| other(format!("connect to {}: {e}", p.display())))?;
                Conn::Stream(Stream::Unix(s))
            }
            Conn::Udp(u, Some(to)) if !self.receives => {
                u.send_to(&open_msg(), to)?;
                Conn::Udp(u, Some(to))
            }
            Conn::Udp(u, _) => {
                let mut m = [0u8; 8];
                let (_, from) = self.stops.retry(Duration::ZERO, || u.recv_from(&mut m))?;
                if m != open_msg() {
                    return Err(other(format!(
                        "the first datagram from {from} is not fio's udp open message (bad magic {:02x?}); is the writer a net job?",
                        m
                    )));
                }
                Conn::Udp(u, Some(from))
            }
            c => c,
        };
        if let Conn::Stream(s) = &self.conn {
            s.timeouts()?;
        }
        Ok(())
    }

    /// Send `len` bytes of `buf`.
    fn send(&mut self, buf: &mut [u8], len: usize) -> std::io::Result<usize> {
        let len = len.min(buf.len());
        match &mut self.conn {
            Conn::Stream(s) => {
                let mut at = 0;
                while at < len {
                    match self
                        .stops
                        .retry(Duration::ZERO, || s.write(&buf[at..len]))?
                    {
                        0 => return Err(ErrorKind::WriteZero.into()),
                        n => at += n,
                    }
                }
                Ok(at)
            }
            Conn::Udp(u, Some(to)) => {
                if len >= SEQ_LEN {
                    let r = &mut buf[len - SEQ_LEN..len];
                    r[..8].copy_from_slice(&SEQ_MAGIC.to_le_bytes());
                    r[8..16].copy_from_slice(&self.send_seq.to_le_bytes());
                    r[16..].copy_from_slice(&(len as u64).to_le_bytes());
                    self.send_seq += 1;
                }
                u.send_to(&buf[..len], *to)
            }
            _ => Err(ErrorKind::NotConnected.into()),
        }
    }

    /// Receive up to `len` bytes into `buf`.
    fn recv(&mut self, buf: &mut [u8], len: usize) -> std::io::Result<Xfer> {
        let len = len.min(buf.len());
        match &mut self.conn {
            Conn::Stream(s) => {
                let mut at = 0;
                while at < len {
                    match self
                        .stops
                        .retry(Duration::ZERO, || s.read(&mut buf[at..len]))?
                    {
                        0 => {
                            // fio's close message glued to the end of a
                            // short last block, then the peer's close: the
                            // message is not data.
                            if at > 8 && buf[at - 8..at] == close_msg() {
                                at -= 8;
                            }
                            break;
                        }
                        n => {
                            at += n;
                            if at == 8 && buf[..8] == close_msg() {
                                return Ok(Xfer::End);
                            }
                        }
                    }
                }
                Ok(if at == 0 { Xfer::End } else { Xfer::Bytes(at) })
            }
            Conn::Udp(u, peer) => {
                let (n, from) = self
                    .stops
                    .retry(Duration::ZERO, || u.recv_from(&mut buf[..len]))?;
                if self.receives {
                    *peer = Some(from);
                }
                if n == 8 && buf[..8] == close_msg() {
                    return Ok(Xfer::End);
                }
                // fio's sequence check: datagrams skipped are drops.
                if n == len && len >= SEQ_LEN && !self.seq_off {
                    let r = &buf[len - SEQ_LEN..len];
                    let word =
                        |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().unwrap_or([0; 8]));
                    if word(0) == SEQ_MAGIC {
                        if word(16) != len as u64 {
                            self.seq_off = true;
                        } else {
                            let seq = word(8);
                            if seq > self.recv_seq {
                                self.dropped[self.dir] += seq - self.recv_seq;
                            }
                            self.recv_seq = seq + 1;
                        }
                    }
                }
                Ok(Xfer::Bytes(n))
            }
            _ => Err(ErrorKind::NotConnected.into()),
        }
    }
}

impl RunOne for NetLink<'_> {
    fn name(&self) -> &'static str {
        "net"
    }

    /// One I/O: its result as the loop takes it (bytes, 0 at the end of
    /// the stream, −errno).
    fn run_one(&mut self, io: &IoDesc, buf: &mut [u8]) -> i32 {
        let len = io.len as usize;
        self.dir = io.op.index().min(2);
        let r = match io.op {
            Op::Write => self.send(buf, len).and_then(|n| {
                if !self.opts.pingpong {
                    return Ok(Xfer::Bytes(n));
                }
                // The reader sends the block back.
                self.recv(buf, len)
            }),
            Op::Read => self.recv(buf, len).and_then(|x| match x {
                Xfer::Bytes(n) if self.opts.pingpong => self.send(buf, n).map(Xfer::Bytes),
                x => Ok(x),
            }),
            Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => Ok(Xfer::Bytes(0)),
            Op::Trim => Err(ErrorKind::Unsupported.into()),
        };
        match r {
            Ok(Xfer::Bytes(n)) => n as i32,
            Ok(Xfer::End) => {
                self.end.store(true, Ordering::Relaxed);
                0
            }
            // Stopped while waiting on the peer: the job ends there (the
            // run says it was interrupted), the wait is no I/O.
            Err(e) if e.kind() == ErrorKind::Interrupted => {
                self.end.store(true, Ordering::Relaxed);
                0
            }
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        }
    }
}

impl Drop for NetLink<'_> {
    /// fio's close: the peer learns the job ended (a udp reader has no
    /// other way to know).
    fn drop(&mut self) {
        let m = close_msg();
        match &mut self.conn {
            Conn::Stream(s) => {
                let _ = s.write(&m);
            }
            Conn::Udp(u, Some(to)) => {
                let _ = u.send_to(&m, *to);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_engine::engine::Engine;

    fn job(text: &str) -> Result<JobSpec, SpecError> {
        let mut j = JobSpec::default();
        for line in text.lines() {
            let (k, v) = match line.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (line, None),
            };
            j.set(k, v)?;
        }
        Ok(j)
    }

    #[test]
    fn fio_wire_messages() {
        assert_eq!(close_msg(), [0x6b, 0x6e, 0x69, 0x6c, 0x89, 0, 0, 0]);
        assert_eq!(open_msg(), [0x6c, 0x69, 0x6e, 0x6b, 0, 0, 0, 0x98]);
    }

    #[test]
    fn options_parse_and_refuse_with_their_key() {
        let j =
            job("ioengine=net\nproto=udp\nport=9000\nhostname=239.0.0.1\nttl=3\nrw=write\nsize=1m")
                .unwrap();
        assert_eq!(j.engine.net.protocol, Protocol::Udp);
        assert_eq!(j.engine.net.ttl, Some(3));
        check(&j).unwrap();
        let e = job("protocol=sctp").unwrap_err().to_string();
        assert!(e.contains("protocol"), "{e}");
        let e = job("port=70000").unwrap_err().to_string();
        assert!(e.contains("port"), "{e}");
        let j =
            job("ioengine=net\nport=9000\nlisten\nhostname=localhost\nrw=read\nsize=1m").unwrap();
        let e = check(&j).unwrap_err().to_string();
        assert!(e.contains("hostname"), "{e}");
        let j = job("ioengine=net\nhostname=localhost\nrw=write\nsize=1m").unwrap();
        let e = check(&j).unwrap_err().to_string();
        assert!(e.contains("port"), "{e}");
        let j =
            job("ioengine=net\nprotocol=unix\nport=1\nhostname=/tmp/s\nrw=write\nsize=1m").unwrap();
        let e = check(&j).unwrap_err().to_string();
        assert!(e.contains("port"), "{e}");
        let j = job("ioengine=net\nprotocol=unix\nfilename=/tmp/s\nrw=read\nsize=1m").unwrap();
        check(&j).unwrap();
        assert_eq!(target_name(&j), "/tmp/s");
        let j = job("ioengine=net\nprotocol=udp\nport=9\nlisten\nrw=read\nsize=1m").unwrap();
        assert!(check(&j).unwrap_err().to_string().contains("listen"));
        let j = job("ioengine=net\nport=9\nlisten\nrw=randread\nsize=1m").unwrap();
        assert!(check(&j).unwrap_err().to_string().contains("rw"));
    }

    /// A udp reader waits for fio's open message, counts the datagrams
    /// the sequence records skip as drops of its reads, and ends at the
    /// close message without counting it.
    #[test]
    fn udp_reader_counts_drops_and_ends_at_close() {
        let port = {
            let u = UdpSocket::bind("127.0.0.1:0").unwrap();
            u.local_addr().unwrap().port()
        };
        let j = job(&format!(
            "ioengine=net\nprotocol=udp\nport={port}\nrw=read\nbs=64\nsize=1m"
        ))
        .unwrap();
        check(&j).unwrap();
        let stop = AtomicBool::new(false);
        let end = Arc::new(AtomicBool::new(false));
        let mut e = engine(&j, 0, 64, 1, &stop, None, end.clone()).unwrap();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = ("127.0.0.1", port);
        peer.send_to(&open_msg(), to).unwrap();
        e.work_mut().open().unwrap();
        for seq in [0u64, 1, 3] {
            let mut d = vec![0u8; 64];
            d[40..48].copy_from_slice(&SEQ_MAGIC.to_le_bytes());
            d[48..56].copy_from_slice(&seq.to_le_bytes());
            d[56..].copy_from_slice(&64u64.to_le_bytes());
            peer.send_to(&d, to).unwrap();
        }
        peer.send_to(&close_msg(), to).unwrap();
        let read = IoDesc {
            target: 0,
            op: Op::Read,
            offset: 0,
            len: 64,
        };
        let mut results = Vec::new();
        for _ in 0..4 {
            e.queue(0, &read);
            e.commit(1, None).unwrap();
            e.reap(|c| results.push(c.result));
        }
        assert_eq!(results, [64, 64, 64, 0]);
        assert!(end.load(Ordering::Relaxed));
        assert_eq!(e.work().dropped(), [1, 0, 0]);
    }

    /// window_size, mss, nodelay, ttl and interface reach the sockets as
    /// fio sets them: the receive buffer on a receiver, the send buffer on
    /// a sender, TCP_MAXSEG before connect or listen, the multicast TTL
    /// and interface on a multicast writer.
    #[test]
    fn socket_options_are_set() {
        use socket2::SockRef;
        let stop = AtomicBool::new(false);
        let end = || Arc::new(AtomicBool::new(false));
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let j = job(&format!(
            "ioengine=net\nport={port}\nlisten\nrw=read\nsize=1m\nwindow_size=131072\nmss=1200"
        ))
        .unwrap();
        let e = engine(&j, 0, 4096, 1, &stop, None, end()).unwrap();
        let Conn::TcpListen(l) = &e.work().conn else {
            panic!("a tcp listener")
        };
        let r = SockRef::from(l);
        // The kernel doubles what it is given, for its bookkeeping.
        assert!(r.recv_buffer_size().unwrap() >= 131072);
        // A receiver without pingpong leaves its send buffer alone.
        assert_ne!(r.send_buffer_size().unwrap(), 2 * 131072);
        assert_eq!(r.tcp_mss().unwrap(), 1200);
        let j = job(&format!(
            "ioengine=net\nport={port}\nhostname=127.0.0.1\nrw=write\nsize=1m\nwindow_size=65536\nnodelay=1"
        ))
        .unwrap();
        let e = engine(&j, 0, 4096, 1, &stop, None, end()).unwrap();
        let Conn::TcpConnect(s, to) = &e.work().conn else {
            panic!("a tcp socket to connect")
        };
        assert_eq!(to.port(), port);
        assert_eq!(s.send_buffer_size().unwrap(), 2 * 65536);
        assert!(s.tcp_nodelay().unwrap());
        let j = job(&format!(
            "ioengine=net\nprotocol=udp\nport={port}\nhostname=239.1.2.3\nttl=7\ninterface=127.0.0.1\nrw=write\nsize=1m"
        ))
        .unwrap();
        let e = engine(&j, 1, 4096, 1, &stop, None, end()).unwrap();
        let Conn::Udp(u, Some(to)) = &e.work().conn else {
            panic!("a udp writer")
        };
        // numjobs clones use the next ports.
        assert_eq!(to.port(), port + 1);
        let r = SockRef::from(u);
        assert_eq!(r.multicast_ttl_v4().unwrap(), 7);
        assert_eq!(r.multicast_if_v4().unwrap(), Ipv4Addr::LOCALHOST);
    }
}
