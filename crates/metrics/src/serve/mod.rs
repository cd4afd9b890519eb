//! The HTTP endpoint: `GET /metrics` (and `/`) answered with the latest
//! figures in the format the scraper asks for. HTTP/1.1 on std's
//! `TcpListener`, one connection at a time on one thread, each closed
//! after its answer: a scraper asks once a second or so, and a connection
//! that sends nothing is dropped after [`READ_TIMEOUT`], so no client can
//! hold the endpoint. The figures are whatever was last [`Latest::set`];
//! a scrape never reaches the work itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::encode::{encode, Format};
use crate::model::Family;
use crate::MetricsError;

/// How long a connection may take to send its request.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How often the idle endpoint looks whether it is to stop.
const POLL: Duration = Duration::from_millis(50);

/// The longest request head read (request line and headers).
const MAX_HEAD: usize = 16 * 1024;

/// The figures served: replaced whole by the work, read whole by a scrape.
#[derive(Debug, Default)]
pub struct Latest {
    families: Mutex<Arc<Vec<Family>>>,
    scrapes: AtomicU64,
    generation: AtomicU64,
}

impl Latest {
    /// Serve `families` from now on.
    pub fn set(&self, families: Vec<Family>) {
        *self.lock() = Arc::new(families);
        self.generation.fetch_add(1, Ordering::Release);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Arc<Vec<Family>>> {
        self.families.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The figures as text in `format`.
    pub fn render(&self, format: Format) -> String {
        // The lock is held only to take the figures: the work publishing
        // new ones never waits on a scrape's encoding.
        let families = Arc::clone(&self.lock());
        encode(families, format)
    }

    /// Scrapes answered so far.
    pub fn scrapes(&self) -> u64 {
        self.scrapes.load(Ordering::Acquire)
    }
}

/// Where `--metrics-listen` listens: a bare port is on loopback
/// (127.0.0.1), anything else as given (`HOST:PORT`, `[::1]:PORT`,
/// `0.0.0.0:PORT` for every address).
pub fn parse_listen(given: &str) -> Result<SocketAddr, MetricsError> {
    let bad = || MetricsError::BadAddress {
        given: given.to_string(),
    };
    let g = given.trim();
    let port = g.strip_prefix(':').unwrap_or(g);
    if let Ok(p) = port.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], p)));
    }
    g.to_socket_addrs()
        .map_err(|_| bad())?
        .next()
        .ok_or_else(bad)
}

/// A bound endpoint serving a [`Latest`] on its own thread until dropped.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    latest: Arc<Latest>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Bind `given` (see [`parse_listen`]) and start serving.
    pub fn bind(given: &str) -> Result<Endpoint, MetricsError> {
        let addr = parse_listen(given)?;
        let listener = TcpListener::bind(addr).map_err(|source| MetricsError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        let addr = listener.local_addr().unwrap_or(addr);
        listener
            .set_nonblocking(true)
            .map_err(|source| MetricsError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        let latest = Arc::new(Latest::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (latest.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || accept_loop(&listener, &l, &s))
            .map_err(|source| MetricsError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        Ok(Endpoint {
            addr,
            latest,
            stop,
            thread: Some(thread),
        })
    }

    /// The address bound (with the port chosen when 0 was given).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The figures it serves.
    pub fn latest(&self) -> &Arc<Latest> {
        &self.latest
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, latest: &Latest, stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                // A client that misbehaves loses its own connection only.
                let _ = answer(stream, latest);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// The request's method, path and `Accept` header.
fn read_head(stream: &TcpStream) -> std::io::Result<(String, String, Option<String>)> {
    let mut r = BufReader::new(stream.take(MAX_HEAD as u64));
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut accept = None;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("accept") {
                accept = Some(v.trim().to_string());
            }
        }
    }
    Ok((method, path, accept))
}

fn answer(stream: TcpStream, latest: &Latest) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(READ_TIMEOUT))?;
    let (method, path, accept) = read_head(&stream)?;
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method.as_str(), path) {
        ("GET" | "HEAD", "/metrics" | "/") => {
            let f = Format::negotiate(accept.as_deref());
            let body = latest.render(f);
            latest.scrapes.fetch_add(1, Ordering::AcqRel);
            ("200 OK", f.content_type(), body)
        }
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "drivelab serves its figures at /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "GET /metrics\n".to_string(),
        ),
    };
    let mut w = &stream;
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    w.write_all(head.as_bytes())?;
    if method != "HEAD" {
        w.write_all(body.as_bytes())?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run::finished_family;

    fn get(addr: SocketAddr, req: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn a_bare_port_is_loopback_and_an_address_is_as_given() {
        assert_eq!(parse_listen("9400").unwrap().to_string(), "127.0.0.1:9400");
        assert_eq!(parse_listen(":9400").unwrap().to_string(), "127.0.0.1:9400");
        assert_eq!(parse_listen("0.0.0.0:9").unwrap().to_string(), "0.0.0.0:9");
        assert_eq!(parse_listen("[::1]:9").unwrap().to_string(), "[::1]:9");
        for bad in ["", "x", "70000", "1.2.3.4", "host:port"] {
            let e = parse_listen(bad).unwrap_err().to_string();
            assert!(e.starts_with("--metrics-listen"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_port_in_use_is_refused_by_name() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = held.local_addr().unwrap().port();
        let e = Endpoint::bind(&port.to_string()).unwrap_err().to_string();
        assert!(
            e.contains(&format!("127.0.0.1:{port}")) && e.contains("cannot listen"),
            "{e}"
        );
    }

    #[test]
    fn scrapes_get_the_latest_figures_in_the_asked_format() {
        let ep = Endpoint::bind("0").unwrap();
        ep.latest().set(vec![finished_family(false)]);
        let r = get(ep.addr(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
        assert!(r.ends_with("drivelab_work_finished 0.0\n"), "{r}");
        ep.latest().set(vec![finished_family(true)]);
        let r = get(
            ep.addr(),
            "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n",
        );
        assert!(r.contains("application/openmetrics-text; version=1.0.0"));
        assert!(r.ends_with("drivelab_work_finished 1.0\n# EOF\n"), "{r}");
        let r = get(ep.addr(), "GET /other HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 404"), "{r}");
        let r = get(ep.addr(), "POST /metrics HTTP/1.1\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 405"), "{r}");
        assert_eq!(ep.latest().scrapes(), 2);
    }
}
