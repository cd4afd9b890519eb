//! What the body says: the certificate's fields in sections an auditor
//! reads (drive, erase, timing, verification, health, host, signature),
//! then every leaf of the signed record by its JSON path, so that nothing
//! the record holds is missing from the page.

use drivelab_erase::cert::Certificate;
use serde_json::Value;

/// A titled list of (label, value) rows.
pub struct Section {
    /// The heading.
    pub title: String,
    /// The rows.
    pub rows: Vec<(String, String)>,
}

fn opt(s: &Option<String>) -> String {
    s.clone().unwrap_or_else(|| "not reported".into())
}

fn section(title: &str) -> Section {
    Section {
        title: title.into(),
        rows: Vec::new(),
    }
}

impl Section {
    fn row(&mut self, k: &str, v: impl Into<String>) {
        self.rows.push((k.into(), v.into()));
    }
}

/// The auditor's sections of `c`, signed by `public_key` (hex), whose
/// signed JSON has SHA-256 `digest` and is attached as `name`.
pub fn sections(c: &Certificate, public_key: &str, digest: &str, name: &str) -> Vec<Section> {
    vec![
        drive(c),
        erase(c),
        timing(c),
        verification(c),
        health(c),
        host(c),
        signature(public_key, digest, name),
    ]
}

fn drive(c: &Certificate) -> Section {
    let d = &c.drive;
    let mut s = section("Drive");
    s.row("Device", d.path.clone());
    s.row("Vendor", opt(&d.vendor));
    s.row("Model", opt(&d.model));
    s.row("Serial number", opt(&d.serial));
    s.row(
        "Asset tag",
        c.parties
            .as_ref()
            .and_then(|p| p.asset_tag.clone())
            .unwrap_or_else(|| "not given".into()),
    );
    s.row("Firmware", opt(&d.firmware));
    s.row("World-wide name", opt(&d.wwid));
    s.row(
        "Kind, transport, media",
        format!("{}, {}, {}", d.kind, d.transport, d.media),
    );
    s.row(
        "Apparent size",
        format!(
            "{} bytes ({:.2} GB)",
            d.capacity_bytes,
            d.capacity_bytes as f64 / 1e9
        ),
    );
    match &c.capacity_restored {
        Some(x) => {
            s.row("Native size", format!("{} bytes", x.bytes_after));
            s.row(
                "HPA / DCO / AMA",
                format!(
                    "{} restored before the erase ({} bytes reachable before; native max LBA {}, {})",
                    x.hidden_areas(),
                    x.bytes_before,
                    x.native_max_lba,
                    if x.volatile { "volatile" } else { "lasting" }
                ),
            );
        }
        None => {
            s.row("Native size", "not restored: the apparent size was erased");
            s.row(
                "HPA / DCO / AMA",
                "no hidden area restored (drivelab refuses a drive whose probe finds one unless --restore-native-max is given)",
            );
        }
    }
    s.row(
        "Sector size",
        format!(
            "{} bytes logical, {} bytes physical",
            d.logical_sector, d.physical_sector
        ),
    );
    s
}

fn erase(c: &Certificate) -> Section {
    let e = &c.erase;
    let mut s = section("Erase");
    s.row(
        "Method",
        format!("{} ({})", e.method.name(), e.method_reason),
    );
    s.row(
        "NIST SP 800-88 class",
        format!("{} ({})", e.nist_category, e.technique),
    );
    s.row("Passes", e.passes.to_string());
    s.row("Pattern", format!("{} (seed {})", e.pattern, e.seed));
    s.row(
        "Bytes erased",
        format!(
            "{} this run, {} in earlier runs",
            e.bytes_this_run, e.bytes_resumed
        ),
    );
    let cmds: Vec<String> = e
        .commands
        .iter()
        .map(|r| format!("{} × {} ({} bytes)", r.command, r.count, r.bytes))
        .collect();
    s.row(
        "Commands sent",
        if cmds.is_empty() {
            "none".into()
        } else {
            cmds.join("\n")
        },
    );
    if let Some(o) = e.offloaded {
        s.row(
            "Offloaded",
            if o { "yes (write-zeroes)" } else { "no" }.to_string(),
        );
    }
    if let Some((t, q)) = e.stream_tuning {
        s.row(
            "Stream tuning",
            format!("transfer length {t} bytes, queue depth {q}"),
        );
    }
    s.row(
        "Discard first",
        if e.discard_first { "yes" } else { "no" }.to_string(),
    );
    s
}

fn timing(c: &Certificate) -> Section {
    let t = &c.timing;
    let mut s = section("Time");
    s.row("Start", t.start.clone());
    s.row("End", t.end.clone());
    s.row(
        "Duration",
        format!(
            "{:.3} s (erase {:.3} s, verification {:.3} s this run)",
            t.duration_seconds, t.erase_seconds, t.verify_seconds
        ),
    );
    let mbps = if t.erase_seconds > 0.0 {
        c.erase.bytes_this_run as f64 / t.erase_seconds / 1e6
    } else {
        0.0
    };
    s.row("Throughput", format!("{mbps:.1} MB/s (erase, this run)"));
    s.row("Runs", t.runs.join(", "));
    s
}

fn verification(c: &Certificate) -> Section {
    let v = &c.verification;
    let mut s = section("Result and verification");
    let result = match &c.failure {
        Some(f) => format!("{}: {f}", c.result.as_str()),
        None => c.result.as_str().to_string(),
    };
    s.row("Result", result);
    s.row("Verification", format!("{}: {}", v.mode, v.result));
    s.row(
        "Read back",
        format!(
            "{} bytes ({:.2} % of the drive), {} subsections, {} regions; {}",
            v.bytes_read, v.coverage_percent, v.subsections, v.regions, v.reads
        ),
    );
    s.row("Excepted blocks", v.excepted_blocks.to_string());
    if let Some(l) = v.mismatch_lba {
        s.row("First mismatch", format!("LBA {l}"));
    }
    if let Some(d) = &v.detail {
        s.row("Detail", d.clone());
    }
    let ex: Vec<String> = c.exceptions.iter().map(|x| x.describe()).collect();
    s.row(
        "Exceptions",
        if ex.is_empty() {
            "none".into()
        } else {
            ex.join("\n")
        },
    );
    s.row(
        "Errors",
        if c.errors.is_empty() {
            "none".into()
        } else {
            c.errors.join("\n")
        },
    );
    s.row("Retries that succeeded", c.retried.to_string());
    s
}

fn health(c: &Certificate) -> Section {
    let mut s = section("Health before and after");
    match &c.health {
        Some(h) => {
            let lines: Vec<String> = h
                .lines("drive")
                .iter()
                .map(|l| l.trim_start_matches("drive: ").to_string())
                .collect();
            s.row("Health", lines.join("\n"));
        }
        None => s.row(
            "Health",
            "not read: the device has no health data of its own (SMART, log pages, NVMe health)",
        ),
    }
    s
}

fn host(c: &Certificate) -> Section {
    let t = &c.tool;
    let mut s = section("Host and tool");
    s.row("Host name", t.host.clone());
    match &t.machine {
        Some(m) => {
            s.row("System vendor", opt(&m.vendor));
            s.row("System model", opt(&m.model));
            s.row("System serial", opt(&m.serial));
            s.row("System UUID", opt(&m.uuid));
        }
        None => s.row("System (DMI)", "not recorded: the host has no DMI tables"),
    }
    s.row("Kernel", t.kernel.clone());
    s.row("Tool", format!("{} {}", t.name, t.version));
    s.row("Command line", t.command_line.clone());
    s
}

fn signature(public_key: &str, digest: &str, name: &str) -> Section {
    let mut s = section("Signature");
    s.row(
        "Algorithm",
        "Ed25519 over the canonical JSON of the certificate",
    );
    s.row("Signing key", public_key.to_string());
    s.row("Key fingerprint", key_fingerprint(public_key));
    s.row("SHA-256 of the record", digest.to_string());
    s.row("Attached record", name.to_string());
    s.row(
        "How to check",
        format!(
            "drivelab erase verify-cert on this PDF, or on the attached {name} (pdfdetach -saveall extracts it); valid only for a key the checker trusts"
        ),
    );
    s
}

/// SHA-256 of the public key's bytes, in groups of four hex digits (the
/// first 32), as people compare fingerprints.
pub fn key_fingerprint(public_key: &str) -> String {
    let bytes: Vec<u8> = (0..public_key.len() / 2)
        .filter_map(|i| u8::from_str_radix(public_key.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    let h = crate::sha256_hex(&bytes);
    h.as_bytes()[..32]
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every leaf of `v` as (JSON path, value): strings as they are, numbers
/// and booleans as JSON writes them, `null`, and `[]` / `{}` for empty
/// containers.
pub fn leaves(v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk(v, String::new(), &mut out);
    out
}

fn walk(v: &Value, path: String, out: &mut Vec<(String, String)>) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                walk(x, join(k), out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                walk(x, format!("{path}[{i}]"), out);
            }
        }
        Value::String(s) => out.push((path, s.clone())),
        other => out.push((path, other.to_string())),
    }
}
