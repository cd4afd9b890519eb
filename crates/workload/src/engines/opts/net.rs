//! The net engine's options (`hostname`, `port`, `protocol`, `listen`, …);
//! the engine is [`crate::engines::noio::net`].

use crate::spec::decl::{opt, OptionDecl};
use std::net::Ipv4Addr;

use crate::spec::value::parse_flag;
use crate::SpecError;

/// The net engine's options (fio's names and units), set by
/// [`NetOpts::set`].
pub const OPTIONS: &[OptionDecl] = &[
    opt!(
        "hostname",
        [],
        Text,
        "",
        "net: the peer to connect or send to; a udp reader's multicast group; protocol=unix: the socket's path"
    ),
    opt!(
        "port",
        [],
        Int,
        "",
        "net: the tcp or udp port (numjobs clones use the next ones); none for unix",
        1,
        65535,
        ""
    ),
    opt!(
        "protocol",
        ["proto"],
        Text,
        "tcp",
        "net: tcp, tcpv6, udp, udpv6 or unix"
    ),
    opt!(
        "listen",
        [],
        Bool,
        "0",
        "net: a tcp job accepts one connection (takes no hostname) instead of connecting"
    ),
    opt!(
        "pingpong",
        [],
        Bool,
        "0",
        "net: each block sent comes back before the next (latency is a round trip)"
    ),
    opt!(
        "ttl",
        [],
        Int,
        "1",
        "net: time-to-live of outgoing udp multicast",
        0,
        255,
        ""
    ),
    opt!(
        "interface",
        [],
        Text,
        "",
        "net: the IPv4 address of the interface udp multicast is sent and joined on"
    ),
    opt!(
        "nodelay",
        [],
        Bool,
        "0",
        "net: set TCP_NODELAY on tcp connections"
    ),
    opt!(
        "window_size",
        [],
        Int,
        "0",
        "net: the socket buffer size (receive side SO_RCVBUF, send side SO_SNDBUF; 0: the system's)",
        0,
        2147483647,
        "bytes"
    ),
    opt!(
        "mss",
        [],
        Int,
        "0",
        "net: the TCP maximum segment size, TCP_MAXSEG (0: the system's)",
        0,
        65535,
        "bytes"
    ),
];

/// `protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// TCP over IPv4 (fio's default).
    #[default]
    Tcp,
    /// TCP over IPv6.
    TcpV6,
    /// UDP over IPv4.
    Udp,
    /// UDP over IPv6.
    UdpV6,
    /// A unix-domain stream socket.
    Unix,
}

impl Protocol {
    fn parse(v: &str) -> Option<Protocol> {
        Some(match v.trim().to_ascii_lowercase().as_str() {
            "tcp" => Protocol::Tcp,
            "tcpv6" => Protocol::TcpV6,
            "udp" => Protocol::Udp,
            "udpv6" => Protocol::UdpV6,
            "unix" => Protocol::Unix,
            _ => return None,
        })
    }

    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::TcpV6 => "tcpv6",
            Protocol::Udp => "udp",
            Protocol::UdpV6 => "udpv6",
            Protocol::Unix => "unix",
        }
    }

    pub(crate) fn is_tcp(self) -> bool {
        matches!(self, Protocol::Tcp | Protocol::TcpV6)
    }

    pub(crate) fn is_udp(self) -> bool {
        matches!(self, Protocol::Udp | Protocol::UdpV6)
    }

    pub(crate) fn is_v6(self) -> bool {
        matches!(self, Protocol::TcpV6 | Protocol::UdpV6)
    }
}

/// The net engine's options.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetOpts {
    /// `protocol`.
    pub protocol: Protocol,
    /// `hostname`: peer, multicast group or unix socket path.
    pub hostname: Option<String>,
    /// `port` (the first clone's).
    pub port: Option<u16>,
    /// `listen` (tcp).
    pub listen: bool,
    /// `pingpong`.
    pub pingpong: bool,
    /// `ttl` of outgoing multicast (None: fio's 1).
    pub ttl: Option<u32>,
    /// `interface`: the IPv4 address of the multicast interface.
    pub interface: Option<Ipv4Addr>,
    /// `nodelay`.
    pub nodelay: bool,
    /// `window_size` in bytes (0: the system's).
    pub window_size: u32,
    /// `mss` in bytes (0: the system's).
    pub mss: u32,
}

fn bad(key: &str, v: &str, expect: &str) -> SpecError {
    SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: expect.to_string(),
    }
}

fn uint(key: &str, v: &str, max: u64, expect: &str) -> Result<u64, SpecError> {
    let n: u64 = v.trim().parse().map_err(|_| bad(key, v, expect))?;
    if n > max {
        return Err(bad(key, v, expect));
    }
    Ok(n)
}

impl NetOpts {
    /// Set one of [`OPTIONS`] (value as written).
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        let t = v.trim();
        match key {
            "hostname" => {
                if t.is_empty() {
                    return Err(SpecError::MissingValue(key.to_string()));
                }
                self.hostname = Some(t.to_string());
            }
            "port" => {
                let p = uint(key, v, 65535, "a port number, 1-65535")?;
                if p == 0 {
                    return Err(bad(key, v, "a port number, 1-65535"));
                }
                self.port = Some(p as u16);
            }
            "protocol" => {
                self.protocol = Protocol::parse(t)
                    .ok_or_else(|| bad(key, v, "tcp, tcpv6, udp, udpv6 or unix"))?
            }
            "listen" => self.listen = parse_flag(key, v)?,
            "pingpong" => self.pingpong = parse_flag(key, v)?,
            "nodelay" => self.nodelay = parse_flag(key, v)?,
            "ttl" => self.ttl = Some(uint(key, v, 255, "a hop count, 0-255")? as u32),
            "interface" => {
                self.interface = Some(
                    t.parse()
                        .map_err(|_| bad(key, v, "the IPv4 address of a local interface"))?,
                )
            }
            "window_size" => {
                self.window_size = uint(key, v, i32::MAX as u64, "a buffer size in bytes")? as u32
            }
            "mss" => self.mss = uint(key, v, 65535, "a segment size in bytes")? as u32,
            _ => {
                return Err(SpecError::Invalid(format!(
                    "{key} is not a net engine option"
                )))
            }
        }
        Ok(())
    }
}
