//! The certificate's page for people: one table, every value escaped. The
//! JSON file is the signed record; the page says how to check it.

use super::model::Certificate;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn opt(s: &Option<String>) -> String {
    esc(s.as_deref().unwrap_or("—"))
}

/// The rows of the page's table.
struct Rows(String);

impl Rows {
    fn row(&mut self, k: &str, v: String) {
        self.0
            .push_str(&format!("<tr><th>{}</th><td>{}</td></tr>\n", esc(k), v));
    }
}

/// The human-readable page.
pub fn html(c: &Certificate, json_file: &str, public_key: &str) -> String {
    let mut rows = Rows(String::new());
    drive_rows(&mut rows, c);
    parties_rows(&mut rows, c);
    erase_rows(&mut rows, c);
    check_rows(&mut rows, c);
    health_rows(&mut rows, c);
    tool_rows(&mut rows, c, json_file, public_key);
    let rows = rows.0;
    let d = &c.drive;
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Certificate of erasure: {}</title>\n<style>body{{font-family:sans-serif;margin:2em}}th{{text-align:left;padding-right:1em;vertical-align:top}}td,th{{border-bottom:1px solid #ddd;padding:4px}}</style></head>\n<body><h1>Certificate of erasure</h1>\n<table>\n{rows}</table>\n<p>This page is a rendering; the signed record is the JSON file.</p></body></html>\n",
        esc(d.serial.as_deref().unwrap_or(&d.path))
    )
}

/// Result and drive.
fn drive_rows(r: &mut Rows, c: &Certificate) {
    let mut row = |k: &str, v: String| r.row(k, v);
    let d = &c.drive;
    row(
        "Result",
        format!(
            "<b>{}</b>{}",
            esc(c.result.as_str()),
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
}

/// Asset tag, organisation, customer and technician, when the record
/// names them.
fn parties_rows(r: &mut Rows, c: &Certificate) {
    let Some(p) = &c.parties else { return };
    let cu = &p.customer;
    for (k, v) in [
        ("Asset tag", &p.asset_tag),
        ("Organisation", &p.organisation),
        ("Customer", &cu.name),
        ("Customer address", &cu.address),
        ("Customer contact", &cu.contact),
        ("Technician", &p.technician),
    ] {
        if v.is_some() {
            r.row(k, opt(v));
        }
    }
}

/// Method, pattern, commands.
fn erase_rows(r: &mut Rows, c: &Certificate) {
    let mut row = |k: &str, v: String| r.row(k, v);
    let e = &c.erase;
    row(
        "Method",
        format!("{} — {}", esc(e.method.name()), esc(&e.method_reason)),
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
}

/// Timing, verification, exceptions, errors.
/// The drive's health before and after, and a restored capacity.
fn health_rows(r: &mut Rows, c: &Certificate) {
    if let Some(x) = &c.capacity_restored {
        r.row(
            "Hidden area restored",
            esc(&format!(
                "{}: {} bytes reachable before, {} after (native max LBA {}, {})",
                x.hidden_areas(),
                x.bytes_before,
                x.bytes_after,
                x.native_max_lba,
                if x.volatile { "volatile" } else { "lasting" }
            )),
        );
    }
    if let Some(h) = &c.health {
        let lines = h.lines("drive");
        r.row(
            "Health",
            lines
                .iter()
                .map(|l| esc(l.trim_start_matches("drive: ")))
                .collect::<Vec<_>>()
                .join("<br>"),
        );
    }
}

fn check_rows(r: &mut Rows, c: &Certificate) {
    let mut row = |k: &str, v: String| r.row(k, v);
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
    if let Some(p) = &v.prior_sample {
        row(
            "Not the old data",
            format!(
                "{} (blocks sampled before the erase, seed {}; first unchanged LBAs: {})",
                opt(&v.detail),
                p.seed,
                if p.unchanged_lbas.is_empty() {
                    "none".to_string()
                } else {
                    p.unchanged_lbas
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        );
    } else if let Some(l) = v.mismatch_lba {
        row("Mismatch", format!("LBA {l}: {}", opt(&v.detail)));
    }
    let ex: Vec<String> = c.exceptions.iter().map(|x| esc(&x.describe())).collect();
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
}

/// Tool, command line, signature.
fn tool_rows(r: &mut Rows, c: &Certificate, json_file: &str, public_key: &str) {
    let mut row = |k: &str, v: String| r.row(k, v);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cert::tests::sample;

    #[test]
    fn html_escapes() {
        let h = html(&sample(), "c.json", "ab");
        assert!(h.contains("&lt;Model &amp; Co&gt;"));
        assert!(!h.contains("<Model"));
        assert!(!h.contains("Organisation"), "no parties, no rows");
    }

    #[test]
    fn html_shows_the_parties_escaped() {
        let mut c = sample();
        c.parties = Some(crate::cert::PartiesSection {
            organisation: Some("Wipe & Co".into()),
            customer: crate::cert::Customer {
                name: Some("Globex".into()),
                address: None,
                contact: Some("<ops@globex.example>".into()),
            },
            technician: Some("J. Doe".into()),
            asset_tag: Some("AT-7".into()),
        });
        let h = html(&c, "c.json", "ab");
        for want in [
            "<th>Organisation</th><td>Wipe &amp; Co</td>",
            "<th>Customer</th><td>Globex</td>",
            "<th>Customer contact</th><td>&lt;ops@globex.example&gt;</td>",
            "<th>Technician</th><td>J. Doe</td>",
            "<th>Asset tag</th><td>AT-7</td>",
        ] {
            assert!(h.contains(want), "{want}");
        }
        assert!(!h.contains("Customer address"), "an absent part has no row");
    }
}
