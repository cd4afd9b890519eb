//! The API server, reached as kubectl reaches it: a kubeconfig's current
//! context (its server, the CA to check it by, a client certificate or a
//! bearer token), or inside a pod its service account. One HTTPS request
//! per connection (rustls; HTTP/1.1 with `Connection: close`), JSON in and
//! out: the fleet sends a few requests, and a connection pool or an async
//! runtime would be most of the code.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Deserialize;
use serde_json::Value;

use crate::{FleetError, Result};

/// How long a connection and each read or write may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A client of one API server.
pub struct Client {
    host: String,
    port: u16,
    server: String,
    tls: Arc<rustls::ClientConfig>,
    token: Option<String>,
}

/// The parts of a kubeconfig the client uses (the file has more).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct KubeConfig {
    #[serde(default)]
    current_context: String,
    #[serde(default)]
    contexts: Vec<Named<Context>>,
    #[serde(default)]
    clusters: Vec<Named<Cluster>>,
    #[serde(default)]
    users: Vec<Named<User>>,
}

#[derive(Debug, Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "context", alias = "cluster", alias = "user")]
    value: T,
}

#[derive(Debug, Deserialize)]
struct Context {
    cluster: String,
    #[serde(default)]
    user: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct User {
    client_certificate: Option<PathBuf>,
    client_certificate_data: Option<String>,
    client_key: Option<PathBuf>,
    client_key_data: Option<String>,
    token: Option<String>,
    token_file: Option<PathBuf>,
}

/// The kubeconfig to read: `path`, else the first of `$KUBECONFIG`, else
/// `~/.kube/config`.
pub fn kubeconfig_path(path: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = path {
        return Some(p.to_path_buf());
    }
    if let Some(k) = std::env::var_os("KUBECONFIG").filter(|k| !k.is_empty()) {
        return std::env::split_paths(&k).next();
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".kube/config"))
}

/// How many times a request is sent to a busy API server (7.5 s of
/// pauses in all) before its answer stands.
const ATTEMPTS: u32 = 5;

impl Client {
    /// A client from the kubeconfig at `path` (its current context).
    pub fn from_kubeconfig(path: &Path) -> Result<Client> {
        let shown = path.display().to_string();
        let err = |why: String| FleetError::Kubeconfig {
            path: shown.clone(),
            why,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| err(format!("{e}; give --kubeconfig FILE or set $KUBECONFIG")))?;
        let kc: KubeConfig = serde_yaml::from_str(&text).map_err(|e| err(e.to_string()))?;
        let ctx = kc
            .contexts
            .iter()
            .find(|c| c.name == kc.current_context)
            .ok_or_else(|| {
                err(format!(
                    "no context '{}' (current-context)",
                    kc.current_context
                ))
            })?;
        let cluster = kc
            .clusters
            .iter()
            .find(|c| c.name == ctx.value.cluster)
            .ok_or_else(|| err(format!("no cluster '{}'", ctx.value.cluster)))?;
        let default_user = User::default();
        let user = kc
            .users
            .iter()
            .find(|u| u.name == ctx.value.user)
            .map(|u| &u.value)
            .unwrap_or(&default_user);
        let base = path.parent().unwrap_or(Path::new("."));
        let read = |data: &Option<String>, file: &Option<PathBuf>| -> Result<Option<Vec<u8>>> {
            if let Some(d) = data {
                return base64::engine::general_purpose::STANDARD
                    .decode(d.trim())
                    .map(Some)
                    .map_err(|e| err(format!("a *-data field is not base64: {e}")));
            }
            match file {
                Some(f) => std::fs::read(base.join(f))
                    .map(Some)
                    .map_err(|e| err(format!("{}: {e}", f.display()))),
                None => Ok(None),
            }
        };
        let ca = read(
            &cluster.value.certificate_authority_data,
            &cluster.value.certificate_authority,
        )?;
        let cert = read(&user.client_certificate_data, &user.client_certificate)?;
        let key = read(&user.client_key_data, &user.client_key)?;
        let token = match (&user.token, &user.token_file) {
            (Some(t), _) => Some(t.trim().to_string()),
            (None, Some(f)) => Some(
                std::fs::read_to_string(base.join(f))
                    .map_err(|e| err(format!("{}: {e}", f.display())))?
                    .trim()
                    .to_string(),
            ),
            (None, None) => None,
        };
        let identity = match (cert, key) {
            (Some(c), Some(k)) => Some((c, k)),
            _ => None,
        };
        Client::new(&cluster.value.server, ca.as_deref(), identity, token).map_err(err)
    }

    /// A client of `server` (`https://HOST:PORT`), checking its certificate
    /// against the PEM CA bundle `ca`, authenticating with a PEM client
    /// certificate and key, or a bearer token.
    pub fn new(
        server: &str,
        ca: Option<&[u8]>,
        identity: Option<(Vec<u8>, Vec<u8>)>,
        token: Option<String>,
    ) -> std::result::Result<Client, String> {
        let rest = server
            .strip_prefix("https://")
            .ok_or_else(|| format!("server '{server}' is not an https:// URL"))?;
        let hostport = rest.trim_end_matches('/');
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h.trim_start_matches('[').trim_end_matches(']').to_string(),
                p.parse::<u16>()
                    .map_err(|_| format!("server '{server}': '{p}' is not a port"))?,
            ),
            _ => (hostport.to_string(), 443),
        };
        let mut roots = rustls::RootCertStore::empty();
        let ca = ca.ok_or("no certificate authority for the server (certificate-authority or its -data); the API server's certificate cannot be checked")?;
        for c in CertificateDer::pem_slice_iter(ca) {
            let c = c.map_err(|e| format!("certificate authority: {e}"))?;
            roots
                .add(c)
                .map_err(|e| format!("certificate authority: {e}"))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots);
        let tls = match identity {
            Some((cert, key)) => {
                let chain = CertificateDer::pem_slice_iter(&cert)
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| format!("client certificate: {e}"))?;
                let key =
                    PrivateKeyDer::from_pem_slice(&key).map_err(|e| format!("client key: {e}"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("client certificate: {e}"))?
            }
            None => builder.with_no_client_auth(),
        };
        Ok(Client {
            host,
            port,
            server: server.to_string(),
            tls: Arc::new(tls),
            token,
        })
    }

    /// The server's URL.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// One request: `body` as JSON with `content_type`; the answer's JSON
    /// (an API error is [`FleetError::Refused`] with the Status's message).
    pub fn request(&self, method: &str, path: &str, body: Option<(&str, &Value)>) -> Result<Value> {
        // A busy or starting API server answers 429 or 5xx, or drops the
        // connection; every request drivelab sends is idempotent (GET,
        // server-side apply, DELETE), so it is sent again after a pause.
        let mut pause = Duration::from_millis(500);
        let mut attempt = 1;
        let (status, text) = loop {
            let got = self.exchange(method, path, body);
            let busy = match &got {
                Ok((status, _)) => matches!(status, 429 | 500 | 502 | 503 | 504),
                Err(_) => true,
            };
            if !busy || attempt == ATTEMPTS {
                break got.map_err(|why| FleetError::Transport {
                    server: self.server.clone(),
                    why,
                })?;
            }
            std::thread::sleep(pause);
            pause *= 2;
            attempt += 1;
        };
        let v: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).map_err(|e| FleetError::Transport {
                server: self.server.clone(),
                why: format!("{method} {path}: the answer is not JSON ({e})"),
            })?
        };
        if !(200..300).contains(&status) {
            let message = v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or(text.trim())
                .to_string();
            return Err(FleetError::Refused {
                method: method.to_string(),
                path: path.to_string(),
                status,
                message,
            });
        }
        Ok(v)
    }

    /// GET `path`.
    pub fn get(&self, path: &str) -> Result<Value> {
        self.request("GET", path, None)
    }

    fn exchange(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &Value)>,
    ) -> std::result::Result<(u16, String), String> {
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("{}: {e}", self.host))?
            .next()
            .ok_or_else(|| format!("{}: no address", self.host))?;
        let tcp = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| format!("{addr}: {e}"))?;
        tcp.set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        tcp.set_write_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        let name = ServerName::try_from(self.host.clone()).map_err(|e| e.to_string())?;
        let conn =
            rustls::ClientConnection::new(self.tls.clone(), name).map_err(|e| e.to_string())?;
        let mut s = rustls::StreamOwned::new(conn, tcp);
        let payload = body.map(|(_, v)| v.to_string()).unwrap_or_default();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}:{}\r\nAccept: application/json\r\nUser-Agent: drivelab/{}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.host,
            self.port,
            env!("CARGO_PKG_VERSION"),
            payload.len()
        );
        if let Some((ct, _)) = body {
            head.push_str(&format!("Content-Type: {ct}\r\n"));
        }
        if let Some(t) = &self.token {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes())
            .and_then(|_| s.write_all(payload.as_bytes()))
            .and_then(|_| s.flush())
            .map_err(|e| format!("{method} {path}: {e}"))?;
        let mut raw = Vec::new();
        match s.read_to_end(&mut raw) {
            Ok(_) => {}
            // A server that closes without TLS's close_notify after a whole
            // answer: the answer is still whole when its length says so.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
            Err(e) => return Err(format!("{method} {path}: {e}")),
        }
        parse_response(&raw).map_err(|e| format!("{method} {path}: {e}"))
    }
}

/// An HTTP/1.1 answer: its status and its body (de-chunked).
fn parse_response(raw: &[u8]) -> std::result::Result<(u16, String), String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("an answer without its end of headers")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or("an answer without a status line")?;
    let mut chunked = false;
    let mut length: Option<usize> = None;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            } else if k == "content-length" {
                length = v.parse().ok();
            }
        }
    }
    let mut body = &raw[end + 4..];
    let bytes = if chunked {
        let mut out = Vec::new();
        loop {
            let nl = body
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or("a chunk without its size line")?;
            let size_text = String::from_utf8_lossy(&body[..nl]);
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| format!("a chunk size '{size_text}' that is not hexadecimal"))?;
            body = &body[nl + 2..];
            if size == 0 {
                break;
            }
            if body.len() < size {
                return Err("an answer cut short in a chunk".into());
            }
            out.extend_from_slice(&body[..size]);
            body = body.get(size + 2..).unwrap_or(&[]);
        }
        out
    } else {
        match length {
            Some(n) if body.len() < n => return Err("an answer cut short".into()),
            Some(n) => body[..n].to_vec(),
            None => body.to_vec(),
        }
    };
    String::from_utf8(bytes)
        .map(|b| (status, b))
        .map_err(|_| "an answer that is not UTF-8".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_whole_chunked_or_not() {
        // The answer, and its status and body when it reads whole.
        type Want = Option<(u16, &'static str)>;
        let cases: [(&[u8], Want); 5] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", Some((200, "{}"))),
            (
                b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n",
                Some((201, "{\"a\":1}")),
            ),
            (b"HTTP/1.1 404 Not Found\r\n\r\n{\"message\":\"x\"}", Some((404, "{\"message\":\"x\"}"))),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}", None),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", None),
        ];
        for (raw, want) in cases {
            let got = parse_response(raw);
            match want {
                Some((s, b)) => assert_eq!(got, Ok((s, b.to_string()))),
                None => assert!(got.is_err(), "{got:?}"),
            }
        }
    }

    #[test]
    fn a_kubeconfig_without_a_ca_or_context_is_refused_in_one_line() {
        let dir = drivelab_testkit::TempDir::new("fleet-kubeconfig");
        let cases = [
            ("current-context: x\ncontexts: []\n", "no context 'x'"),
            (
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: {server: 'https://127.0.0.1:6443'}\nusers: []\n",
                "no certificate authority",
            ),
            (
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\nclusters:\n- name: k\n  cluster: {server: 'http://127.0.0.1:8080', certificate-authority-data: eA==}\n",
                "not an https:// URL",
            ),
            ("{{", ""),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let p = dir.join(&format!("k{i}"));
            std::fs::write(&p, text).unwrap();
            let e = Client::from_kubeconfig(&p).err().expect("accepted");
            let msg = e.to_string();
            assert!(
                e.is_bad_input() && msg.contains(want) && !msg.contains('\n'),
                "{msg}"
            );
        }
    }
}
