//! The kernel's device events, read straight from its netlink socket
//! (`NETLINK_KOBJECT_UEVENT`, multicast group 1: the events as the kernel
//! sends them, before any udev daemon). A station learns of drives
//! arriving and leaving through it, so it also works in a minimal netboot
//! image that runs no udev.
//!
//! [`UeventSocket::open`] binds the socket; [`UeventSocket::recv`] waits up
//! to its timeout for one event and parses it ([`parse`]): the kernel's
//! message is `ACTION@DEVPATH` then `KEY=VALUE` fields, each NUL-terminated.
//! Only messages from the kernel itself (sender port 0) are taken; anything
//! a user process sends to the group is dropped.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// One kernel device event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uevent {
    /// `add`, `remove`, `change`, `bind`, `unbind`, `move`, `online`, ...
    pub action: String,
    /// The device's path under /sys (`/devices/virtual/block/loop3`).
    pub devpath: String,
    /// `SUBSYSTEM` (`block`, `scsi`, `nvme`, ...).
    pub subsystem: String,
    /// `DEVTYPE` (`disk`, `partition`), when sent.
    pub devtype: Option<String>,
    /// `DEVNAME` (`loop3`, `sdb`), when sent.
    pub devname: Option<String>,
}

/// A bound `NETLINK_KOBJECT_UEVENT` socket.
pub struct UeventSocket {
    fd: OwnedFd,
}

impl UeventSocket {
    /// Open and bind the socket to the kernel's event group; each
    /// [`recv`](Self::recv) waits at most `timeout`. Needs root (or
    /// CAP_NET_ADMIN in some containers); the error says what failed.
    pub fn open(timeout: Duration) -> io::Result<UeventSocket> {
        // SAFETY: socket(2) with constant arguments; the result is checked
        // before it is used as a descriptor.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_KOBJECT_UEVENT,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor socket(2) just returned and nothing
        // else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_nl is plain data; all-zero is a valid value.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        addr.nl_groups = 1;
        // SAFETY: `addr` is a valid sockaddr_nl and its size is passed.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                std::ptr::addr_of!(addr).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // A large receive buffer: a burst of hot-plug events (a shelf of
        // drives powered on at once) must not overflow it.
        let size: libc::c_int = 4 << 20;
        // SAFETY: SO_RCVBUF takes a c_int; its address and size are passed.
        // A failure only leaves the default size.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                std::ptr::addr_of!(size).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        // The field types are inferred: musl deprecates naming `time_t`.
        let tv = libc::timeval {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as _,
            tv_usec: timeout.subsec_micros() as _,
        };
        // SAFETY: SO_RCVTIMEO takes a timeval; its address and size are passed.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                std::ptr::addr_of!(tv).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(UeventSocket { fd })
    }

    /// The next kernel event, or None when the timeout passed first (or a
    /// message was not the kernel's, or not an event).
    pub fn recv(&self) -> io::Result<Option<Uevent>> {
        let mut buf = vec![0u8; 16 * 1024];
        // SAFETY: sockaddr_nl is plain data; all-zero is a valid value.
        let mut from: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        let mut from_len = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;
        // SAFETY: `buf` is writable for its length; `from` and `from_len`
        // are a valid address buffer and its size.
        let n = unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
                std::ptr::addr_of_mut!(from).cast(),
                &mut from_len,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock
                | io::ErrorKind::TimedOut
                | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        if from.nl_pid != 0 {
            return Ok(None);
        }
        let n = usize::try_from(n).unwrap_or(0).min(buf.len());
        Ok(parse(&buf[..n]))
    }
}

/// Parse one kernel uevent message (`ACTION@DEVPATH\0KEY=VALUE\0...`);
/// None when it is not one (a udev daemon's `libudev` message, garbage).
pub fn parse(msg: &[u8]) -> Option<Uevent> {
    let mut parts = msg.split(|b| *b == 0).filter(|p| !p.is_empty());
    let head = std::str::from_utf8(parts.next()?).ok()?;
    let (action, devpath) = head.split_once('@')?;
    let mut ev = Uevent {
        action: action.to_string(),
        devpath: devpath.to_string(),
        subsystem: String::new(),
        devtype: None,
        devname: None,
    };
    for p in parts {
        let Ok(s) = std::str::from_utf8(p) else {
            continue;
        };
        let Some((k, v)) = s.split_once('=') else {
            continue;
        };
        match k {
            "ACTION" => ev.action = v.to_string(),
            "DEVPATH" => ev.devpath = v.to_string(),
            "SUBSYSTEM" => ev.subsystem = v.to_string(),
            "DEVTYPE" => ev.devtype = Some(v.to_string()),
            "DEVNAME" => ev.devname = Some(v.rsplit('/').next().unwrap_or(v).to_string()),
            _ => {}
        }
    }
    Some(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_kernel_block_event_and_rejects_others() {
        let msg = b"change@/devices/virtual/block/loop3\0ACTION=change\0DEVPATH=/devices/virtual/block/loop3\0SUBSYSTEM=block\0MAJOR=7\0MINOR=3\0DEVNAME=loop3\0DEVTYPE=disk\0SEQNUM=4711\0";
        let ev = parse(msg).expect("an event");
        assert_eq!(ev.action, "change");
        assert_eq!(ev.devpath, "/devices/virtual/block/loop3");
        assert_eq!(ev.subsystem, "block");
        assert_eq!(ev.devtype.as_deref(), Some("disk"));
        assert_eq!(ev.devname.as_deref(), Some("loop3"));
        // udev's own messages start with "libudev" and no '@'.
        assert_eq!(parse(b"libudev\0\xfe\xed\xca\xfe"), None);
        assert_eq!(parse(b""), None);
    }

    #[test]
    fn a_loop_attach_arrives_as_a_kernel_event() {
        drivelab_testkit::require_root();
        let sock = UeventSocket::open(Duration::from_millis(200)).expect("uevent socket");
        let dir = drivelab_testkit::TempDir::new("uevent");
        let lo = drivelab_testkit::LoopDev::new_in(&dir, 1 << 20);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut seen = false;
        while std::time::Instant::now() < deadline && !seen {
            if let Some(ev) = sock.recv().expect("recv") {
                seen = ev.subsystem == "block" && ev.devname.as_deref() == Some(lo.name.as_str());
            }
        }
        assert!(seen, "no kernel event for {}", lo.name);
    }
}
