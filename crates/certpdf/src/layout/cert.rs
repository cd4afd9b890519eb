//! The certificate's pages: a header (title, result, drive, the barcode
//! of model:serial, the QR code of the record's digest), the auditor's
//! sections, a hand-over block to sign on paper, and every field of the
//! signed record.

use drivelab_erase::cert::{Certificate, Signed};

use super::codes::{code128, qr};
use super::fields::{leaves, sections};
use super::font::Font;
use super::{leading, Doc, Flow, Item};
use crate::Paper;

/// Side of the QR code, points.
const QR_SIDE: f32 = 120.0;
/// Body font size, points.
const BODY: f32 = 9.0;

/// What the QR code holds: the digest of the signed JSON and the command
/// that checks the attached record.
pub fn qr_text(digest: &str, name: &str) -> String {
    format!("SHA-256 {digest}\ndrivelab erase verify-cert {name}")
}

/// The text of the barcode: model:serial.
pub fn barcode_text(s: &Signed) -> String {
    let d = &s.certificate.drive;
    format!(
        "{}:{}",
        d.model.as_deref().unwrap_or("-"),
        d.serial.as_deref().unwrap_or("-")
    )
}

/// Lay out the certificate `s`, whose signed JSON `text` is attached as
/// `name`.
pub fn layout(s: &Signed, text: &str, name: &str, paper: Paper) -> Doc {
    let font = Font::get();
    let digest = crate::sha256_hex(text.as_bytes());
    let mut f = Flow::new(&font, paper);
    header(&mut f, s, &digest, name);
    let label_w = 135.0;
    let (x0, w) = (f.left(), f.width());
    for sec in sections(&s.certificate, &s.public_key, &digest, name) {
        f.heading(&sec.title);
        for (k, v) in &sec.rows {
            f.row(
                BODY,
                &[(x0, label_w, k), (x0 + label_w + 8.0, w - label_w - 8.0, v)],
            );
        }
    }
    handover(&mut f, label_w, &s.certificate);
    f.heading("Every field of the signed record");
    let doc: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let size = 7.5;
    let path_w = 210.0;
    for (k, v) in leaves(&doc) {
        f.row(
            size,
            &[(x0, path_w, &k), (x0 + path_w + 8.0, w - path_w - 8.0, &v)],
        );
    }
    f.finish(&format!("SHA-256 of the attached record {digest}"))
}

/// Title, result and drive on the left, the barcode under them, the QR
/// code with its digest on the right.
fn header(f: &mut Flow<'_>, s: &Signed, digest: &str, name: &str) {
    let c = &s.certificate;
    let top = f.y;
    let (x0, w) = (f.left(), f.width());
    let qr_x = x0 + w - QR_SIDE;
    if let Some(items) = qr(&qr_text(digest, name), qr_x, top - QR_SIDE, QR_SIDE) {
        for it in items {
            f.push(it);
        }
    }
    // The digest under the code, in its column.
    f.y = top - QR_SIDE - 2.0;
    f.para(qr_x, QR_SIDE, 6.0, &format!("SHA-256 {digest}"));
    let qr_bottom = f.y;

    f.y = top;
    let lw = w - QR_SIDE - 14.0;
    f.para(x0, lw, 18.0, "Certificate of erasure");
    f.down(4.0);
    let result = match &c.failure {
        Some(why) => format!("Result: {} ({why})", c.result.as_str()),
        None => format!("Result: {}", c.result.as_str()),
    };
    f.para(x0, lw, 12.0, &result);
    f.down(2.0);
    let d = &c.drive;
    f.para(
        x0,
        lw,
        10.0,
        format!(
            "{} {}, serial {}",
            d.vendor.as_deref().unwrap_or(""),
            d.model.as_deref().unwrap_or("(model not reported)"),
            d.serial.as_deref().unwrap_or("(none)")
        )
        .trim_start(),
    );
    f.para(
        x0,
        lw,
        10.0,
        &format!(
            "{}, NIST SP 800-88 {}, verification {}: {}, ended {}",
            c.erase.method.name(),
            c.erase.nist_category,
            c.verification.mode,
            c.verification.result,
            c.timing.end
        ),
    );
    f.down(4.0);
    let code = barcode_text(s);
    let bar_h = 28.0;
    f.need(bar_h + leading(7.0));
    match code128(&code, x0, f.y - bar_h, lw, bar_h) {
        Some((bars, _)) => {
            for it in bars {
                f.push(it);
            }
            f.down(bar_h + 2.0);
            f.para(x0, lw, 7.0, &code);
        }
        None => f.para(
            x0,
            lw,
            7.0,
            &format!("{code} (no barcode: Code 128 set B holds printable ASCII only)"),
        ),
    }
    f.y = f.y.min(qr_bottom) - 4.0;
}

/// Who did the erase and for whom, as the signed record names them; a
/// field the record lacks, the technician's signature and the date are
/// lines to fill in by hand when the certificate changes hands.
fn handover(f: &mut Flow<'_>, label_w: f32, c: &Certificate) {
    f.heading("Organisation, customer and technician");
    let (x0, w) = (f.left(), f.width());
    for (k, v) in parties_rows(c) {
        if let Some(v) = v {
            f.row(
                BODY,
                &[
                    (x0, label_w, k),
                    (x0 + label_w + 8.0, w - label_w - 8.0, &v),
                ],
            );
            continue;
        }
        let h = 20.0;
        f.need(h);
        f.down(h - leading(BODY));
        f.text_at(x0, BODY, k);
        let y = f.y - BODY - 2.0;
        f.push(Item::Rule {
            x1: x0 + label_w + 8.0,
            x2: x0 + w,
            y,
        });
        f.down(leading(BODY));
    }
}

/// The hand-over block's rows: the record's value, or None for a line to
/// fill in by hand.
pub fn parties_rows(c: &Certificate) -> Vec<(&'static str, Option<String>)> {
    let p = c.parties.clone().unwrap_or_default();
    vec![
        ("Organisation", p.organisation),
        ("Customer: name", p.customer.name),
        ("Customer: address", p.customer.address),
        ("Customer: contact", p.customer.contact),
        ("Technician: name", p.technician),
        ("Technician: signature", None),
        ("Date", None),
    ]
}
