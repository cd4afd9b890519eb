//! What the metrics tests share: free loopback ports, a plain HTTP GET,
//! a drivelab child serving metrics, and a real Prometheus server (Debian's
//! `prometheus`, which tests/run installs) started on loopback with a temp
//! config and storage, stopped on drop.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_testkit::{require_tools, TempDir};
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// How long a test waits for anything to appear (generous: CI is loaded).
pub const DEADLINE: Duration = Duration::from_secs(120);

/// A loopback port free now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// GET `path` from 127.0.0.1:`port`: (status line, content type, body);
/// None when nothing answers.
pub fn get(port: u16, path: &str, accept: Option<&str>) -> Option<(String, String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    let req =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{accept}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.lines().next()?.to_string();
    let ctype = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    // Prometheus answers in chunks: the JSON is between the chunk sizes.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, ctype, body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// The value of the sample `line_start` (the name with its labels, as
/// written) in the text format.
pub fn sample(text: &str, line_start: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(line_start)?.strip_prefix(' ')?.parse().ok())
}

/// drivelab serving metrics on `port` as a child, its output piped.
pub struct Drivelab(pub Option<Child>);

impl Drivelab {
    /// Start `drivelab ARGS`.
    pub fn start(args: &[&str]) -> Drivelab {
        drivelab_testkit::isolate_store();
        let child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("drivelab starts");
        Drivelab(Some(child))
    }

    /// Poll the endpoint until it serves the final figures
    /// (`drivelab_work_finished 1`); returns that text (text 0.0.4).
    pub fn final_figures(&mut self, port: u16) -> String {
        let t0 = Instant::now();
        loop {
            if let Some((_, _, body)) = get(port, "/metrics", None) {
                if sample(&body, "drivelab_work_finished") == Some(1.0) {
                    return body;
                }
            }
            if let Some(Ok(Some(st))) = self.0.as_mut().map(|c| c.try_wait()) {
                panic!("drivelab ended ({st}) before serving its final figures");
            }
            assert!(
                t0.elapsed() < DEADLINE,
                "no final figures within {DEADLINE:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Wait for the final figures, run `then` (e.g. wait for Prometheus
    /// to scrape them), end the linger, and return the final figures' text
    /// and the JSON result (asserting exit status 0).
    pub fn finish(mut self, port: u16, then: impl FnOnce()) -> (String, Value) {
        let text = self.final_figures(port);
        then();
        let (code, out, err) = self.stop();
        assert_eq!(code, 0, "{err}");
        let r = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        (text, r)
    }

    /// End the linger with SIGINT (as Ctrl-C would) and collect
    /// (exit status, stdout, stderr).
    pub fn stop(mut self) -> (i32, String, String) {
        let child = self.0.take().expect("running");
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let out = child.wait_with_output().expect("drivelab ends");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Drivelab {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A Prometheus server of the test's own, scraping drivelab every second.
pub struct Prometheus {
    child: Child,
    pub port: u16,
    _dir: TempDir,
}

impl Prometheus {
    /// Start one scraping 127.0.0.1:`target` every second; returns once its
    /// API answers.
    pub fn start(tag: &str, target: u16) -> Prometheus {
        require_tools(&["/usr/bin/prometheus", "/usr/bin/promtool"]);
        let dir = TempDir::new(&format!("prometheus-{tag}"));
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: drivelab\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new("/usr/bin/prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus {
            child,
            port,
            _dir: dir,
        };
        let t0 = Instant::now();
        while get(port, "/-/ready", None).is_none_or(|(s, _, _)| !s.contains(" 200")) {
            assert!(
                t0.elapsed() < DEADLINE,
                "prometheus not ready within {DEADLINE:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// The result vector of an instant query (at `time`, Unix seconds, or
    /// now).
    pub fn query(&self, q: &str, time: Option<f64>) -> Vec<Value> {
        let mut path = format!("/api/v1/query?query={}", encode(q));
        if let Some(t) = time {
            path.push_str(&format!("&time={t:.3}"));
        }
        let (status, _, body) = get(self.port, &path, None).expect("prometheus answers");
        let v: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{q}: {status}: not JSON ({e}): {body}"));
        assert_eq!(v["status"], "success", "{q}: {body}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The single value of `q` (at `time`), polled until it is there.
    pub fn value(&self, q: &str, time: Option<f64>) -> f64 {
        let t0 = Instant::now();
        loop {
            let r = self.query(q, time);
            if let Some(v) = r.first() {
                assert_eq!(r.len(), 1, "{q}: one series expected: {r:?}");
                let s = v["value"][1].as_str().expect("a value");
                return s.parse().unwrap_or(f64::NAN);
            }
            assert!(
                t0.elapsed() < DEADLINE,
                "{q}: no answer within {DEADLINE:?}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Wait until Prometheus has scraped drivelab's final figures.
    pub fn await_final(&self) {
        self.value("drivelab_work_finished == 1", None);
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `q` percent-encoded for a query string.
pub fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `promtool check metrics` on `text`: its complaints (empty when clean).
pub fn promtool_check(text: &str, dir: &Path) -> String {
    let f = dir.join("scrape.txt");
    std::fs::write(&f, text).unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "/usr/bin/promtool check metrics < '{}'",
            f.display()
        ))
        .output()
        .expect("promtool runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "promtool check metrics failed: {said}"
    );
    said
}
