//! Certificates of erasure: what was erased, how, when, how it was checked,
//! signed so that a changed byte is detected.
//!
//! The certificate follows NIST SP 800-88's "certificate of sanitization"
//! (REFERENCE.md): drive identity, method and technique, tool and version,
//! verification, who/when/where. It is written twice: JSON (the signed
//! record) and an HTML page for people. The signature is Ed25519 over the
//! canonical JSON of the `certificate` object (serde_json's compact form of
//! a `Value`, whose object keys are sorted), so it survives re-indenting but
//! not a changed value. The signing key is created once, on first use, in
//! `$XDG_CONFIG_HOME/drivelab` (else `~/.config/drivelab`), mode 0600.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::EraseError;

/// Format tag of the JSON file.
pub const FORMAT: &str = "drivelab-erase-certificate/1";
/// Name of the secret key file in the config dir.
pub const KEY_FILE: &str = "erase-signing.key";
/// Name of the public key file in the config dir.
pub const PUB_FILE: &str = "erase-signing.pub";

/// The drive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriveSection {
    /// Device node erased.
    pub path: String,
    /// Vendor, when reported.
    pub vendor: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Serial number.
    pub serial: Option<String>,
    /// Firmware revision.
    pub firmware: Option<String>,
    /// World-wide name.
    pub wwid: Option<String>,
    /// Kind (loop, nvme, ata, scsi, ...).
    pub kind: String,
    /// Transport of passthrough commands.
    pub transport: String,
    /// Media type (`rotating magnetic`, `solid state`, `virtual`).
    pub media: String,
    /// Capacity, bytes.
    pub capacity_bytes: u64,
    /// Logical sector size, bytes.
    pub logical_sector: u32,
    /// Physical sector size, bytes.
    pub physical_sector: u32,
}

/// One kind of command sent, with how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRecord {
    /// What was sent (name, opcode, how).
    pub command: String,
    /// How many times.
    pub count: u64,
    /// Bytes covered on the drive.
    pub bytes: u64,
}

/// How the drive was erased.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EraseSection {
    /// Method name.
    pub method: String,
    /// Why this method (auto's reasoning, or "requested").
    pub method_reason: String,
    /// NIST SP 800-88 category: Clear or Purge.
    pub nist_category: String,
    /// Technique in words (overwrite, block erase, cryptographic erase).
    pub technique: String,
    /// Pattern name.
    pub pattern: String,
    /// Seed of per-block patterns (random, stamped).
    pub seed: u64,
    /// Passes over the whole drive.
    pub passes: u32,
    /// Commands sent, in this run (earlier runs are in `runs`).
    pub commands: Vec<CommandRecord>,
    /// Bytes of the drive covered by this run (over all passes).
    pub bytes_this_run: u64,
    /// Bytes covered by earlier, interrupted runs (from the journal).
    pub bytes_resumed: u64,
    /// Whether BLKZEROOUT was offloaded to the device (zeroout only).
    pub offloaded: Option<bool>,
    /// Final stream transfer length in bytes and queue depth.
    pub stream_tuning: Option<(u64, u32)>,
    /// Whether the drive was discarded before the overwrite.
    pub discard_first: bool,
}

/// When.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingSection {
    /// Start of the first run (RFC 3339 UTC).
    pub start: String,
    /// End (RFC 3339 UTC).
    pub end: String,
    /// Seconds of this run's erase phase.
    pub erase_seconds: f64,
    /// Seconds of verification.
    pub verify_seconds: f64,
    /// Seconds from the first run's start to the end.
    pub duration_seconds: f64,
    /// Start times of every run (more than one after `--resume`).
    pub runs: Vec<String>,
}

/// How the result was checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifySection {
    /// none, sample or full.
    pub mode: String,
    /// passed, failed, not performed, not applicable.
    pub result: String,
    /// Bytes read back.
    pub bytes_read: u64,
    /// Share of the drive read, percent.
    pub coverage_percent: f64,
    /// Subsections (sample).
    pub subsections: u64,
    /// Regions read (sample: 2 per subsection plus first and last LBA).
    pub regions: u64,
    /// First mismatching LBA, if any.
    pub mismatch_lba: Option<u64>,
    /// What differed.
    pub detail: Option<String>,
    /// How reads were made.
    pub reads: String,
}

/// A range not erased (or not verified) after errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExceptionRecord {
    /// erase or verify.
    pub phase: String,
    /// First LBA.
    pub first_lba: u64,
    /// Blocks.
    pub blocks: u64,
    /// The error.
    pub error: String,
}

/// The tool and where it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSection {
    /// drivelab.
    pub name: String,
    /// Version.
    pub version: String,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// The command line.
    pub command_line: String,
}

/// The signed record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Certificate {
    /// [`FORMAT`].
    pub format: String,
    /// "erased", "erased with exceptions" or "failed".
    pub result: String,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// The drive.
    pub drive: DriveSection,
    /// The erase.
    pub erase: EraseSection,
    /// Timing.
    pub timing: TimingSection,
    /// Verification.
    pub verification: VerifySection,
    /// Ranges skipped after errors (make the result "erased with exceptions").
    pub exceptions: Vec<ExceptionRecord>,
    /// Errors met (including retried ones that later succeeded).
    pub errors: Vec<String>,
    /// Retries that succeeded.
    pub retried: u64,
    /// The tool.
    pub tool: ToolSection,
}

/// The config dir holding the signing key.
pub fn config_dir() -> Result<PathBuf, EraseError> {
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(x).join("drivelab"));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".config").join("drivelab")),
        None => Err(EraseError::Key {
            path: PathBuf::from("~/.config/drivelab"),
            why: "neither XDG_CONFIG_HOME nor HOME is set; set one of them".into(),
        }),
    }
}

fn key_err(path: &Path, e: impl std::fmt::Display) -> EraseError {
    EraseError::Key {
        path: path.to_path_buf(),
        why: e.to_string(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Load the signing key from `dir`, creating it (0600, dir 0700) the first
/// time from the kernel's random source.
pub fn load_or_create_key(dir: &Path) -> Result<SigningKey, EraseError> {
    let path = dir.join(KEY_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => {
            let b = unhex(&text).filter(|b| b.len() == 32).ok_or_else(|| {
                key_err(&path, "not 64 hex digits; move it away to create a new key")
            })?;
            let mut a = [0u8; 32];
            a.copy_from_slice(&b);
            return Ok(SigningKey::from_bytes(&a));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(key_err(&path, e)),
    }
    fs::create_dir_all(dir).map_err(|e| key_err(dir, e))?;
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    let mut seed = [0u8; 32];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(|e| key_err(Path::new("/dev/urandom"), e))?;
    let key = SigningKey::from_bytes(&seed);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| key_err(&path, e))?;
    writeln!(f, "{}", hex(&seed)).map_err(|e| key_err(&path, e))?;
    f.sync_all().map_err(|e| key_err(&path, e))?;
    let pub_path = dir.join(PUB_FILE);
    fs::write(
        &pub_path,
        format!("{}\n", hex(key.verifying_key().as_bytes())),
    )
    .map_err(|e| key_err(&pub_path, e))?;
    Ok(key)
}

/// The public key in the config dir, if one exists.
pub fn local_public_key(dir: &Path) -> Option<VerifyingKey> {
    let text = fs::read_to_string(dir.join(PUB_FILE)).ok()?;
    parse_public_key(&text)
}

/// A public key from 64 hex digits.
pub fn parse_public_key(s: &str) -> Option<VerifyingKey> {
    let b = unhex(s).filter(|b| b.len() == 32)?;
    let mut a = [0u8; 32];
    a.copy_from_slice(&b);
    VerifyingKey::from_bytes(&a).ok()
}

fn canonical(v: &serde_json::Value) -> Vec<u8> {
    // serde_json's Value keeps object keys sorted (BTreeMap), so this is
    // the same bytes whatever the file's layout.
    serde_json::to_vec(v).unwrap_or_default()
}

/// The signed file's content: `{certificate, signature}` as pretty JSON.
pub fn sign(cert: &Certificate, key: &SigningKey) -> Result<String, EraseError> {
    let body = serde_json::to_value(cert).map_err(|e| EraseError::Certificate(e.to_string()))?;
    let sig = key.sign(&canonical(&body));
    let doc = serde_json::json!({
        "certificate": body,
        "signature": {
            "algorithm": "ed25519",
            "signed": "canonical JSON of the certificate object (compact, keys sorted)",
            "public_key": hex(key.verifying_key().as_bytes()),
            "value": hex(&sig.to_bytes()),
        }
    });
    serde_json::to_string_pretty(&doc).map_err(|e| EraseError::Certificate(e.to_string()))
}

/// Outcome of [`verify_text`].
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The certificate.
    pub certificate: Certificate,
    /// Hex public key that signed it.
    pub public_key: String,
    /// Whether that key is the trusted one (given, or this user's).
    pub trusted_key: Option<bool>,
}

/// Check a certificate file's text: the signature must match the embedded
/// key, and, when a trusted key is given, the embedded key must be it.
/// The error is one line saying what is wrong.
pub fn verify_text(text: &str, trusted: Option<&VerifyingKey>) -> Result<Verified, String> {
    let doc: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
    let body = doc
        .get("certificate")
        .ok_or("no \"certificate\" object: not a drivelab erase certificate")?;
    let sig = doc
        .get("signature")
        .ok_or("no \"signature\" object: the certificate is unsigned")?;
    let alg = sig.get("algorithm").and_then(|v| v.as_str()).unwrap_or("");
    if alg != "ed25519" {
        return Err(format!("unknown signature algorithm {alg:?}"));
    }
    let pk_hex = sig
        .get("public_key")
        .and_then(|v| v.as_str())
        .ok_or("signature has no public_key")?;
    let pk = parse_public_key(pk_hex).ok_or("signature public_key is not a valid Ed25519 key")?;
    let sv = sig
        .get("value")
        .and_then(|v| v.as_str())
        .and_then(unhex)
        .filter(|b| b.len() == 64)
        .ok_or("signature value is not 128 hex digits")?;
    let mut sa = [0u8; 64];
    sa.copy_from_slice(&sv);
    let signature = Signature::from_bytes(&sa);
    pk.verify(&canonical(body), &signature).map_err(|_| {
        "signature does not match the certificate: it was changed after signing".to_string()
    })?;
    let trusted_key = match trusted {
        Some(t) if t.as_bytes() != pk.as_bytes() => {
            return Err(format!(
                "signed by key {}…, not by the trusted key {}…",
                &pk_hex[..16.min(pk_hex.len())],
                &hex(t.as_bytes())[..16]
            ))
        }
        Some(_) => Some(true),
        None => None,
    };
    let format = body.get("format").and_then(|v| v.as_str()).unwrap_or("");
    if format != FORMAT {
        return Err(format!("unknown certificate format {format:?}"));
    }
    let certificate: Certificate = serde_json::from_value(body.clone())
        .map_err(|e| format!("certificate fields are malformed ({e})"))?;
    Ok(Verified {
        certificate,
        public_key: pk_hex.to_string(),
        trusted_key,
    })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn opt(s: &Option<String>) -> String {
    esc(s.as_deref().unwrap_or("—"))
}

/// The human-readable page.
pub fn html(c: &Certificate, json_file: &str, public_key: &str) -> String {
    let mut rows = String::new();
    let mut row = |k: &str, v: String| {
        rows.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>\n", esc(k), v));
    };
    let d = &c.drive;
    row(
        "Result",
        format!(
            "<b>{}</b>{}",
            esc(&c.result),
            c.failure
                .as_deref()
                .map(|f| format!(": {}", esc(f)))
                .unwrap_or_default()
        ),
    );
    row("Device", esc(&d.path));
    row(
        "Vendor / model",
        format!("{} / {}", opt(&d.vendor), opt(&d.model)),
    );
    row("Serial", opt(&d.serial));
    row("Firmware", opt(&d.firmware));
    row("WWN", opt(&d.wwid));
    row(
        "Media",
        format!(
            "{} ({}, transport {})",
            esc(&d.media),
            esc(&d.kind),
            esc(&d.transport)
        ),
    );
    row(
        "Capacity",
        format!(
            "{} bytes ({:.2} GB)",
            d.capacity_bytes,
            d.capacity_bytes as f64 / 1e9
        ),
    );
    row(
        "Sector size",
        format!(
            "{} logical / {} physical bytes",
            d.logical_sector, d.physical_sector
        ),
    );
    let e = &c.erase;
    row(
        "Method",
        format!("{} — {}", esc(&e.method), esc(&e.method_reason)),
    );
    row(
        "NIST SP 800-88",
        format!("{} ({})", esc(&e.nist_category), esc(&e.technique)),
    );
    row("Pattern", format!("{} (seed {})", esc(&e.pattern), e.seed));
    row("Passes", e.passes.to_string());
    if let Some(o) = e.offloaded {
        row(
            "Offloaded",
            if o {
                "yes (REQ_OP_WRITE_ZEROES)".into()
            } else {
                "no (kernel wrote zero pages)".into()
            },
        );
    }
    let cmds: Vec<String> = e
        .commands
        .iter()
        .map(|r| format!("{} × {} ({} bytes)", esc(&r.command), r.count, r.bytes))
        .collect();
    row("Commands sent", cmds.join("<br>"));
    row(
        "Bytes",
        format!(
            "{} this run, {} resumed from earlier runs",
            e.bytes_this_run, e.bytes_resumed
        ),
    );
    let t = &c.timing;
    row("Start", esc(&t.start));
    row("End", esc(&t.end));
    row(
        "Duration",
        format!(
            "{:.1} s (erase {:.1} s, verify {:.1} s this run)",
            t.duration_seconds, t.erase_seconds, t.verify_seconds
        ),
    );
    row("Runs", esc(&t.runs.join(", ")));
    let v = &c.verification;
    row(
        "Verification",
        format!(
            "{}: <b>{}</b>; {} bytes read ({:.2}% of the drive), {} subsections, {} regions; {}",
            esc(&v.mode),
            esc(&v.result),
            v.bytes_read,
            v.coverage_percent,
            v.subsections,
            v.regions,
            esc(&v.reads)
        ),
    );
    if let Some(l) = v.mismatch_lba {
        row("Mismatch", format!("LBA {l}: {}", opt(&v.detail)));
    }
    let ex: Vec<String> = c
        .exceptions
        .iter()
        .map(|x| {
            format!(
                "{}: LBA {} + {} blocks: {}",
                esc(&x.phase),
                x.first_lba,
                x.blocks,
                esc(&x.error)
            )
        })
        .collect();
    row(
        "Exceptions",
        if ex.is_empty() {
            "none".into()
        } else {
            ex.join("<br>")
        },
    );
    row(
        "Errors",
        if c.errors.is_empty() {
            "none".into()
        } else {
            c.errors
                .iter()
                .map(|s| esc(s))
                .collect::<Vec<_>>()
                .join("<br>")
        },
    );
    row("Retried", c.retried.to_string());
    let tl = &c.tool;
    row(
        "Tool",
        format!(
            "{} {} on {} (Linux {})",
            esc(&tl.name),
            esc(&tl.version),
            esc(&tl.host),
            esc(&tl.kernel)
        ),
    );
    row("Command", format!("<code>{}</code>", esc(&tl.command_line)));
    row("Signature", format!("Ed25519 over <code>{}</code>; public key <code>{}</code>; check with <code>drivelab erase verify-cert {}</code>", esc(json_file), esc(public_key), esc(json_file)));
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Certificate of erasure: {}</title>\n<style>body{{font-family:sans-serif;margin:2em}}th{{text-align:left;padding-right:1em;vertical-align:top}}td,th{{border-bottom:1px solid #ddd;padding:4px}}</style></head>\n<body><h1>Certificate of erasure</h1>\n<table>\n{rows}</table>\n<p>This page is a rendering; the signed record is the JSON file.</p></body></html>\n",
        esc(d.serial.as_deref().unwrap_or(&d.path))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Certificate {
        Certificate {
            format: FORMAT.into(),
            result: "erased".into(),
            failure: None,
            drive: DriveSection {
                path: "/dev/loop3".into(),
                vendor: None,
                model: Some("<Model & Co>".into()),
                serial: Some("S123".into()),
                firmware: None,
                wwid: None,
                kind: "loop".into(),
                transport: "other".into(),
                media: "virtual".into(),
                capacity_bytes: 1 << 30,
                logical_sector: 512,
                physical_sector: 4096,
            },
            erase: EraseSection {
                method: "stream".into(),
                method_reason: "requested".into(),
                nist_category: "Clear".into(),
                technique: "overwrite".into(),
                pattern: "allzeros".into(),
                seed: 1,
                passes: 1,
                commands: vec![],
                bytes_this_run: 1 << 30,
                bytes_resumed: 0,
                offloaded: None,
                stream_tuning: Some((1 << 20, 8)),
                discard_first: false,
            },
            timing: TimingSection {
                start: "a".into(),
                end: "b".into(),
                erase_seconds: 1.5,
                verify_seconds: 0.25,
                duration_seconds: 1.75,
                runs: vec!["a".into()],
            },
            verification: VerifySection {
                mode: "sample".into(),
                result: "passed".into(),
                bytes_read: 10,
                coverage_percent: 10.1,
                subsections: 1000,
                regions: 2002,
                mismatch_lba: None,
                detail: None,
                reads: "O_DIRECT".into(),
            },
            exceptions: vec![],
            errors: vec![],
            retried: 0,
            tool: ToolSection {
                name: "drivelab".into(),
                version: "0".into(),
                host: "h".into(),
                kernel: "k".into(),
                command_line: "x".into(),
            },
        }
    }

    #[test]
    fn signature_survives_layout_but_not_a_changed_value() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let text = sign(&sample(), &key).unwrap();
        let v = verify_text(&text, Some(&key.verifying_key())).unwrap();
        assert_eq!(v.certificate, sample());
        // Re-indented: still valid.
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(verify_text(&serde_json::to_string(&doc).unwrap(), None).is_ok());
        // One changed digit in the capacity.
        let cap = (1u64 << 30).to_string();
        let tampered = text.replacen(&cap, &(1u64 << 29).to_string(), 1);
        assert_ne!(tampered, text);
        let e = verify_text(&tampered, None).unwrap_err();
        assert!(e.contains("changed after signing"), "{e}");
        // Another key is refused when a trusted key is given.
        let other = SigningKey::from_bytes(&[8u8; 32]);
        let e = verify_text(&text, Some(&other.verifying_key())).unwrap_err();
        assert!(e.contains("not by the trusted key"), "{e}");
        assert!(verify_text("{", None)
            .unwrap_err()
            .contains("not valid JSON"));
    }

    #[test]
    fn signature_survives_floats_that_best_effort_parsing_would_round() {
        // Without serde_json's float_roundtrip, some of these came back one
        // ulp off after parsing and the signature failed (8-drive test).
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let mut x = 0.1f64;
        for i in 0..150 {
            let mut c = sample();
            c.timing.erase_seconds = x;
            c.timing.verify_seconds = 1.0 / (f64::from(i) + 3.0);
            c.timing.duration_seconds = x * 1e-7 + 1234.5678;
            c.verification.coverage_percent = (x * 7.0).sin() * 100.0;
            let text = sign(&c, &key).unwrap();
            let v = verify_text(&text, None).unwrap_or_else(|e| panic!("{x}: {e}"));
            assert_eq!(v.certificate.timing.erase_seconds.to_bits(), x.to_bits());
            x = x * 1.618_033_988_749_895 + 0.000_123_456_789;
            if x > 1e6 {
                x = x.fract() + 0.3;
            }
        }
    }

    #[test]
    fn key_is_created_once_with_mode_0600() {
        let dir = std::env::temp_dir().join(format!("dl-key-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let k1 = load_or_create_key(&dir).unwrap();
        let k2 = load_or_create_key(&dir).unwrap();
        assert_eq!(k1.to_bytes(), k2.to_bytes());
        let mode = fs::metadata(dir.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(local_public_key(&dir).unwrap(), k1.verifying_key());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn html_escapes() {
        let h = html(&sample(), "c.json", "ab");
        assert!(h.contains("&lt;Model &amp; Co&gt;"));
        assert!(!h.contains("<Model"));
    }
}
