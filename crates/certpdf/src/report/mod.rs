//! The batch report: every drive of a batch of certificates on one line
//! (model, serial, result, method, verification, end) with its
//! certificate's SHA-256, under the hosts that erased them (name and DMI
//! identity), as PDF pages and as CSV for asset systems. Each certificate
//! is verified by the caller before it is listed.

use std::collections::BTreeSet;

use drivelab_erase::cert::Certificate;

use crate::layout::font::Font;
use crate::layout::Flow;
use crate::render::{self, Meta};
use crate::{Paper, PdfError};

/// One verified certificate of the batch.
pub struct Entry {
    /// Its file name.
    pub file: String,
    /// SHA-256 of its signed JSON.
    pub digest: String,
    /// The certificate.
    pub certificate: Certificate,
    /// Hex of the key that signed it.
    pub public_key: String,
}

fn or_dash(s: &Option<String>) -> String {
    s.clone().unwrap_or_else(|| "-".into())
}

/// The hosts of the batch, one line each: name, kernel, DMI identity.
fn hosts(entries: &[Entry]) -> BTreeSet<String> {
    entries
        .iter()
        .map(|e| {
            let t = &e.certificate.tool;
            let dmi = match &t.machine {
                Some(m) => format!(
                    "system vendor {}, model {}, serial {}, UUID {}",
                    or_dash(&m.vendor),
                    or_dash(&m.model),
                    or_dash(&m.serial),
                    or_dash(&m.uuid)
                ),
                None => "DMI not recorded (the host has no DMI tables)".into(),
            };
            format!(
                "{} (Linux {}, {} {}): {dmi}",
                t.host, t.kernel, t.name, t.version
            )
        })
        .collect()
}

/// "; asset tag T; organisation O; customer N, ADDRESS, CONTACT; technician
/// T" with the parts the certificate gives (empty when it gives none).
fn parties_line(c: &Certificate) -> String {
    let Some(p) = &c.parties else {
        return String::new();
    };
    let customer: Vec<&str> = [&p.customer.name, &p.customer.address, &p.customer.contact]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let customer = (!customer.is_empty()).then(|| customer.join(", "));
    [
        ("asset tag", p.asset_tag.as_deref()),
        ("organisation", p.organisation.as_deref()),
        ("customer", customer.as_deref()),
        ("technician", p.technician.as_deref()),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| format!("; {k} {v}")))
    .collect()
}

/// The report as PDF pages on `paper`, dated `created` (RFC 3339 UTC).
pub fn report_pdf(entries: &[Entry], paper: Paper, created: &str) -> Result<Vec<u8>, PdfError> {
    let font = Font::get();
    let mut f = Flow::new(&font, paper);
    let (x0, w) = (f.left(), f.width());
    f.para(x0, w, 18.0, "Erase report");
    let erased = entries
        .iter()
        .filter(|e| e.certificate.result.as_str().starts_with("erased"))
        .count();
    f.para(
        x0,
        w,
        10.0,
        &format!(
            "{} drives, {erased} erased, {} not; made {created}; every certificate verified against a trusted key",
            entries.len(),
            entries.len() - erased
        ),
    );
    f.heading("Hosts");
    for h in hosts(entries) {
        f.para(x0, w, 8.5, &h);
    }
    f.heading("Drives");
    let cols = [
        (x0, 20.0),
        (x0 + 24.0, 180.0),
        (x0 + 210.0, 170.0),
        (x0 + 386.0, w - 386.0),
    ];
    let head = [
        "#",
        "Drive model; serial and certificate below",
        "Result, method, verification",
        "Ended",
    ];
    let head: Vec<(f32, f32, &str)> = cols
        .iter()
        .zip(head)
        .map(|(&(x, w), t)| (x, w, t))
        .collect();
    f.row(8.0, &head);
    for (i, e) in entries.iter().enumerate() {
        let c = &e.certificate;
        let n = (i + 1).to_string();
        let model = c.drive.model.as_deref().unwrap_or("(model not reported)");
        let what = format!(
            "{}\n{} ({}), verification {}: {}",
            c.result.as_str(),
            c.erase.method.name(),
            c.erase.nist_category,
            c.verification.mode,
            c.verification.result
        );
        // Serial and digest on lines of their own, so that each reads whole.
        let serial = format!(
            "serial {} ({}){}",
            c.drive.serial.as_deref().unwrap_or("(none)"),
            c.drive.path,
            parties_line(c)
        );
        let digest = format!("SHA-256 {} {}", e.digest, e.file);
        let row = [
            (cols[0].0, cols[0].1, n.as_str()),
            (cols[1].0, cols[1].1, model),
            (cols[2].0, cols[2].1, what.as_str()),
            (cols[3].0, cols[3].1, c.timing.end.as_str()),
        ];
        // A drive's lines stay together on one page, measured as wrapped.
        f.need(
            f.row_height(8.0, &row)
                + f.para_height(w - 24.0, 8.0, &serial)
                + f.para_height(w - 24.0, 6.5, &digest),
        );
        f.row(8.0, &row);
        f.para(x0 + 24.0, w - 24.0, 8.0, &serial);
        f.para(x0 + 24.0, w - 24.0, 6.5, &digest);
        f.down(2.0);
    }
    let doc = f.finish(&format!("drivelab erase report, {} drives", entries.len()));
    let seed: String = entries.iter().map(|e| e.digest.as_str()).collect();
    render::pdf(
        &doc,
        &Meta {
            title: &format!("Erase report, {} drives", entries.len()),
            created,
            id_seed: seed.as_bytes(),
        },
        None,
    )
}

/// A CSV field, quoted when it must be (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV header.
pub const CSV_HEADER: &str = "file,sha256,device,vendor,model,serial,asset_tag,firmware,capacity_bytes,result,method,nist_category,passes,pattern,verification_mode,verification_result,excepted_blocks,start,end,duration_seconds,host,system_vendor,system_model,system_serial,system_uuid,drivelab_version,public_key,organisation,customer_name,customer_address,customer_contact,technician";

/// The report as CSV: a header and one line per drive.
pub fn report_csv(entries: &[Entry]) -> String {
    let mut s = format!("{CSV_HEADER}\n");
    for e in entries {
        let c = &e.certificate;
        let m = c.tool.machine.clone().unwrap_or_default();
        let p = c.parties.clone().unwrap_or_default();
        let fields = [
            e.file.clone(),
            e.digest.clone(),
            c.drive.path.clone(),
            or_dash(&c.drive.vendor),
            or_dash(&c.drive.model),
            or_dash(&c.drive.serial),
            or_dash(&p.asset_tag),
            or_dash(&c.drive.firmware),
            c.drive.capacity_bytes.to_string(),
            c.result.as_str().to_string(),
            c.erase.method.name().to_string(),
            c.erase.nist_category.clone(),
            c.erase.passes.to_string(),
            c.erase.pattern.clone(),
            c.verification.mode.clone(),
            c.verification.result.clone(),
            c.verification.excepted_blocks.to_string(),
            c.timing.start.clone(),
            c.timing.end.clone(),
            format!("{:.3}", c.timing.duration_seconds),
            c.tool.host.clone(),
            or_dash(&m.vendor),
            or_dash(&m.model),
            or_dash(&m.serial),
            or_dash(&m.uuid),
            c.tool.version.clone(),
            e.public_key.clone(),
            or_dash(&p.organisation),
            or_dash(&p.customer.name),
            or_dash(&p.customer.address),
            or_dash(&p.customer.contact),
            or_dash(&p.technician),
        ];
        let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        s.push_str(&line.join(","));
        s.push('\n');
    }
    s
}
