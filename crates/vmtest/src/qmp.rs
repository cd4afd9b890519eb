//! A client for QEMU's machine protocol (QMP) over a unix socket: the
//! greeting and `qmp_capabilities` handshake, commands matched to their
//! replies by `id`, and asynchronous events (`DEVICE_DELETED`, ...) kept
//! until asked for.
//!
//! Why: hot-plug tests add and remove devices while the guest runs, which
//! only the monitor can do. QMP is line-delimited JSON; every read here
//! has a deadline, so a QEMU that stops answering fails the step with
//! [`QmpError::Timeout`] instead of hanging the test.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The longest unix socket path Linux takes (`sun_path` is 108 bytes with
/// its terminating NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// Why a QMP exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum QmpError {
    /// The socket path does not fit in a unix socket address.
    #[error("QMP socket path {path} is longer than {MAX_SOCKET_PATH} bytes: set TMPDIR to a shorter directory")]
    PathTooLong {
        /// The path.
        path: PathBuf,
    },
    /// The socket could not be reached before the deadline.
    #[error("cannot connect to QEMU's monitor at {path} within {secs} s: {source}")]
    Connect {
        /// The socket.
        path: PathBuf,
        /// Seconds waited.
        secs: u64,
        /// The last OS error.
        source: std::io::Error,
    },
    /// Reading or writing the socket failed (QEMU exited, most likely).
    #[error("QMP {action}: {source}")]
    Io {
        /// "read" or "write".
        action: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// QEMU closed the monitor.
    #[error("QEMU closed its monitor (it exited)")]
    Closed,
    /// QEMU sent something that is not the QMP it should be.
    #[error("QMP protocol: {0}")]
    Protocol(String),
    /// A command was refused: QMP's error class and description.
    #[error("QMP {command} failed: {class}: {desc}")]
    Command {
        /// The command.
        command: String,
        /// QMP's error class (e.g. `GenericError`, `DeviceNotFound`).
        class: String,
        /// QMP's description.
        desc: String,
    },
    /// No reply or event came before the deadline.
    #[error("no {what} from QEMU within {secs} s")]
    Timeout {
        /// What was awaited.
        what: String,
        /// Seconds waited.
        secs: u64,
    },
}

/// A connected monitor, after the capabilities handshake.
#[derive(Debug)]
pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    /// Bytes of a line not yet complete when a read timed out.
    partial: Vec<u8>,
    /// Events read while waiting for something else, oldest first.
    events: Vec<Value>,
    next_id: u64,
    /// How long one command's reply is awaited.
    reply_timeout: Duration,
}

/// How often a blocked read wakes to check its deadline.
const READ_SLICE: Duration = Duration::from_millis(200);

impl Qmp {
    /// Connects to the monitor socket at `path` (retrying until `wait` has
    /// passed: QEMU makes the socket as it starts), reads the greeting and
    /// enters command mode. Each later command's reply is awaited for
    /// `reply_timeout`.
    pub fn connect(path: &Path, wait: Duration, reply_timeout: Duration) -> Result<Qmp, QmpError> {
        if path.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(QmpError::PathTooLong {
                path: path.to_path_buf(),
            });
        }
        let start = Instant::now();
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(source) if start.elapsed() >= wait => {
                    return Err(QmpError::Connect {
                        path: path.to_path_buf(),
                        secs: wait.as_secs(),
                        source,
                    })
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        let io = |action| move |source| QmpError::Io { action, source };
        stream
            .set_read_timeout(Some(READ_SLICE))
            .map_err(io("read"))?;
        // A QEMU that stops reading fails the write instead of hanging it.
        stream
            .set_write_timeout(Some(reply_timeout.max(READ_SLICE)))
            .map_err(io("write"))?;
        let writer = stream.try_clone().map_err(io("write"))?;
        let mut q = Qmp {
            reader: BufReader::new(stream),
            writer,
            partial: Vec::new(),
            events: Vec::new(),
            next_id: 1,
            reply_timeout,
        };
        let greet_wait = wait.max(reply_timeout);
        let greeting = q.read_message(Instant::now() + greet_wait, "greeting", greet_wait)?;
        if greeting.get("QMP").is_none() {
            return Err(QmpError::Protocol(format!(
                "expected the QMP greeting, got {greeting}"
            )));
        }
        q.execute("qmp_capabilities", json!({}))?;
        Ok(q)
    }

    /// Runs `command` with `arguments` (a JSON object) and returns its
    /// `return` value; QMP's refusal is [`QmpError::Command`]. Events that
    /// arrive meanwhile are kept for [`Qmp::wait_event`].
    pub fn execute(&mut self, command: &str, arguments: Value) -> Result<Value, QmpError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = json!({"execute": command, "arguments": arguments, "id": id}).to_string();
        line.push('\n');
        self.writer
            .write_all(line.as_bytes())
            .map_err(|source| QmpError::Io {
                action: "write",
                source,
            })?;
        let deadline = Instant::now() + self.reply_timeout;
        loop {
            let what = format!("reply to {command}");
            let m = self.read_message(deadline, &what, self.reply_timeout)?;
            if m.get("event").is_some() {
                self.events.push(m);
                continue;
            }
            if m.get("id").and_then(Value::as_u64) != Some(id) {
                // A reply to no command of ours: ignore it.
                continue;
            }
            if let Some(r) = m.get("return") {
                return Ok(r.clone());
            }
            if let Some(e) = m.get("error") {
                let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                return Err(QmpError::Command {
                    command: command.to_string(),
                    class: s("class"),
                    desc: s("desc"),
                });
            }
            return Err(QmpError::Protocol(format!(
                "reply to {command} has neither return nor error: {m}"
            )));
        }
    }

    /// Waits up to `timeout` for an event named `name` whose `data`
    /// satisfies `matches` (events kept from earlier reads count), and
    /// returns it. Other events stay kept.
    pub fn wait_event(
        &mut self,
        name: &str,
        matches: impl Fn(&Value) -> bool,
        timeout: Duration,
    ) -> Result<Value, QmpError> {
        let hit = |m: &Value| {
            m.get("event").and_then(Value::as_str) == Some(name)
                && matches(m.get("data").unwrap_or(&Value::Null))
        };
        if let Some(i) = self.events.iter().position(hit) {
            return Ok(self.events.remove(i));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let m = self.read_message(deadline, &format!("event {name}"), timeout)?;
            if hit(&m) {
                return Ok(m);
            }
            if m.get("event").is_some() {
                self.events.push(m);
            }
        }
    }

    /// The events read so far and not yet taken by [`Qmp::wait_event`].
    pub fn pending_events(&self) -> &[Value] {
        &self.events
    }

    /// Reads one JSON message, waiting until `deadline` (`timeout` after
    /// the wait began, for the error).
    fn read_message(
        &mut self,
        deadline: Instant,
        what: &str,
        timeout: Duration,
    ) -> Result<Value, QmpError> {
        loop {
            match self.reader.read_until(b'\n', &mut self.partial) {
                Ok(0) => return Err(QmpError::Closed),
                Ok(_) if self.partial.last() == Some(&b'\n') => {
                    let line = std::mem::take(&mut self.partial);
                    let text = String::from_utf8_lossy(&line);
                    if text.trim().is_empty() {
                        continue;
                    }
                    return serde_json::from_str(text.trim()).map_err(|e| {
                        QmpError::Protocol(format!("not JSON ({e}): {}", text.trim()))
                    });
                }
                // End of stream in the middle of a line.
                Ok(_) => return Err(QmpError::Closed),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if Instant::now() >= deadline {
                        return Err(QmpError::Timeout {
                            what: what.to_string(),
                            secs: timeout.as_secs(),
                        });
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(QmpError::Io {
                        action: "read",
                        source,
                    })
                }
            }
        }
    }
}
