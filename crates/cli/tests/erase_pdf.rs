//! PDF certificates from the command line: `drivelab erase
//! --certificate-format json,pdf` writes a PDF beside the JSON (and no
//! HTML page) that `verify-cert` accepts, and refuses once its attachment
//! or its body is changed; `erase render` makes the same PDF from the
//! JSON and refuses, in one line with exit status 2 and nothing written,
//! a certificate that does not verify; `erase report` lists 100 drives
//! over several pages, as PDF and CSV, each with its certificate's digest.

mod erase_common;

use std::path::{Path, PathBuf};

use drivelab_testkit::{require_tools, run, LoopDev, TempDir};
use erase_common::*;

const TOOLS: [&str; 4] = [
    "/usr/bin/qpdf",
    "/usr/bin/pdfinfo",
    "/usr/bin/pdftotext",
    "/usr/bin/pdfdetach",
];

/// Erase a loop device asking for `formats`; the printed JSON report.
fn erase_with(dir: &TempDir, d: &LoopDev, formats: &str) -> serde_json::Value {
    let certs = dir.join("certs");
    erase_ok(
        dir,
        d.dev(),
        certs.to_str().unwrap(),
        &["--certificate-format", formats],
    )
}

fn tool(bin: &str, args: &[&str]) -> String {
    let (code, out, err) = run(bin, args);
    assert_eq!(code, 0, "{bin} {args:?}: {out}{err}");
    out
}

/// Replace the first `from` in `file` by `to` (the same length, so every
/// offset in the PDF stays right).
fn patch(file: &Path, from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let mut b = std::fs::read(file).unwrap();
    let at = b
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| {
            panic!(
                "{} not in {}",
                String::from_utf8_lossy(from),
                file.display()
            )
        });
    b[at..at + to.len()].copy_from_slice(to);
    std::fs::write(file, b).unwrap();
}

/// `drivelab erase render JSON --pdf PDF EXTRA...`.
fn render(dir: &TempDir, json: &Path, pdf: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut a = vec![
        "render",
        json.to_str().unwrap(),
        "--pdf",
        pdf.to_str().unwrap(),
    ];
    a.extend(extra);
    erase(dir, &a)
}

fn verify(dir: &TempDir, file: &Path) -> (i32, String, String) {
    erase(dir, &["verify-cert", file.to_str().unwrap()])
}

#[test]
fn erase_writes_a_pdf_that_verifies_and_a_changed_one_does_not() {
    require_tools(&TOOLS);
    let dir = TempDir::new("erase-pdf");
    let d = LoopDev::new_in(&dir, 16 << 20);
    let v = erase_with(&dir, &d, "json,pdf");
    let json = PathBuf::from(v["drives"][0]["certificate"].as_str().unwrap());
    let pdf = PathBuf::from(v["drives"][0]["pdf"].as_str().unwrap());
    assert_eq!(pdf, json.with_extension("pdf"));
    // The host's DMI identity, read here from sysfs: in the certificate as
    // the firmware gives it, absent on a host without DMI tables.
    let dmi = |k: &str| {
        std::fs::read_to_string(format!("/sys/class/dmi/id/{k}"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let machine = &cert_body(&json)["tool"]["machine"];
    for (field, file) in [
        ("vendor", "sys_vendor"),
        ("model", "product_name"),
        ("serial", "product_serial"),
        ("uuid", "product_uuid"),
    ] {
        assert_eq!(
            machine[field].as_str().map(String::from),
            dmi(file),
            "{field}"
        );
    }
    assert!(v["drives"][0]["html"].is_null(), "{v}");
    assert!(
        !json.with_extension("html").exists(),
        "html was not asked for"
    );
    let p = pdf.to_str().unwrap();
    assert!(tool("qpdf", &["--check", p]).contains("No syntax or stream encoding errors"));
    let (code, out, err) = verify(&dir, &pdf);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("valid signature")
            && out.contains("the PDF's pages show its attached record")
            && out.contains(d.dev()),
        "{out}"
    );
    // The attachment is the JSON certificate, byte for byte.
    let detached = dir.join("detached.json");
    tool(
        "pdfdetach",
        &["-save", "1", "-o", detached.to_str().unwrap(), p],
    );
    assert_eq!(
        std::fs::read(&detached).unwrap(),
        std::fs::read(&json).unwrap()
    );

    // `render` makes the same PDF from the JSON.
    let rendered = dir.join("rendered.pdf");
    let (code, out, err) = render(&dir, &json, &rendered, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read(&rendered).unwrap(),
        std::fs::read(&pdf).unwrap()
    );
    let letter = dir.join("letter.pdf");
    let (code, _, err) = render(&dir, &json, &letter, &["--paper", "letter"]);
    assert_eq!(code, 0, "{err}");
    assert!(tool("pdfinfo", &[letter.to_str().unwrap()]).contains("612 x 792 pts (letter)"));
    assert_eq!(verify(&dir, &letter).0, 0);

    // The attachment changed (it is stored uncompressed): its signature fails.
    let changed = dir.join("changed-attachment.pdf");
    std::fs::copy(&pdf, &changed).unwrap();
    patch(
        &changed,
        b"\"capacity_bytes\": 16777216",
        b"\"capacity_bytes\": 16777217",
    );
    let (code, out, err) = verify(&dir, &changed);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("INVALID") && err.contains("changed after signing"),
        "{err}"
    );

    // The body changed: one glyph of the first text on page 1, in a copy
    // qpdf wrote with its content streams uncompressed.
    let qdf = dir.join("qdf.pdf");
    tool(
        "qpdf",
        &[
            "--qdf",
            "--object-streams=disable",
            p,
            qdf.to_str().unwrap(),
        ],
    );
    assert_eq!(verify(&dir, &qdf).0, 0, "a rewrite by qpdf still verifies");
    let text = std::fs::read(&qdf).unwrap();
    let tj = text.windows(4).position(|w| w == b"> Tj").unwrap();
    let glyph = text[tj - 4..tj].to_vec();
    let mut other = glyph.clone();
    other[3] = if other[3] == b'1' { b'2' } else { b'1' };
    let mut with = text[tj - 4..tj + 4].to_vec();
    let from = with.clone();
    with[..4].copy_from_slice(&other);
    patch(&qdf, &from, &with);
    let (code, out, err) = verify(&dir, &qdf);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("body does not match") && err.contains("page 1 shows"),
        "{err}"
    );
}

#[test]
fn render_refuses_a_certificate_that_does_not_verify() {
    drivelab_testkit::require_root();
    let dir = TempDir::new("erase-pdf-refuse");
    let d = LoopDev::new_in(&dir, 8 << 20);
    let v = erase_with(&dir, &d, "json");
    let json = PathBuf::from(v["drives"][0]["certificate"].as_str().unwrap());
    assert!(v["drives"][0]["pdf"].is_null(), "{v}");
    assert!(!json.with_extension("html").exists());
    let out_pdf = dir.join("out.pdf");
    let tampered = dir.join("tampered.json");
    std::fs::copy(&json, &tampered).unwrap();
    patch(
        &tampered,
        b"\"capacity_bytes\": 8388608",
        b"\"capacity_bytes\": 8388609",
    );
    // Another signer's key, trusted instead of this test's own.
    let other = dir.join("other");
    drivelab_erase::cert::load_or_create_key(&other).unwrap();
    let other_key = other.join(drivelab_erase::cert::PUB_FILE);
    let other_key = other_key.to_str().unwrap();
    let cases: [(&str, &Path, &[&str], &str); 2] = [
        ("changed", &tampered, &[], "changed after signing"),
        (
            "untrusted signer",
            &json,
            &["--public-key", other_key],
            "NOT TRUSTED",
        ),
    ];
    for (name, file, extra, want) in cases {
        let (code, out, err) = render(&dir, file, &out_pdf, extra);
        assert_eq!(code, 2, "{name}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(
            err.contains(want) && err.contains("nothing rendered"),
            "{name}: {err}"
        );
        assert!(!out_pdf.exists(), "{name}: a PDF was written");
    }
}

/// `erase --certificate-format` without json is refused before anything
/// is written.
#[test]
fn certificate_format_without_json_is_refused() {
    drivelab_testkit::require_root();
    let dir = TempDir::new("erase-pdf-format");
    let d = LoopDev::new_in(&dir, 8 << 20);
    let (code, out, err) = erase(
        &dir,
        &[
            d.dev(),
            "--yes",
            "--confirm-serial",
            d.dev(),
            "--certificate-dir",
            dir.join("c").to_str().unwrap(),
            "--certificate-format",
            "pdf",
        ],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("keep it in the list"), "{err}");
    assert!(certificates(&dir.join("c")).is_empty());
}

/// `drivelab erase report FILES... --pdf PDF --csv CSV`.
fn report(dir: &TempDir, files: &[PathBuf], pdf: &Path, csv: &Path) -> (i32, String, String) {
    let mut args = vec!["report"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend([
        "--pdf",
        pdf.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    erase(dir, &args)
}

#[test]
fn a_batch_report_of_100_drives_paginates_with_every_serial_and_digest() {
    require_tools(&TOOLS);
    let dir = TempDir::new("erase-pdf-report");
    let d = LoopDev::new_in(&dir, 8 << 20);
    let v = erase_with(&dir, &d, "json");
    let json = PathBuf::from(v["drives"][0]["certificate"].as_str().unwrap());
    // 100 drives signed with this test's key (the one the erase made).
    let key =
        drivelab_erase::cert::load_or_create_key(&dir.join("config").join("drivelab")).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let base: drivelab_erase::cert::Certificate =
        serde_json::from_value(doc["certificate"].clone()).unwrap();
    let batch = dir.join("batch");
    std::fs::create_dir_all(&batch).unwrap();
    let mut files = Vec::new();
    let mut serials = Vec::new();
    for i in 0..100 {
        let mut c = base.clone();
        let serial = format!("ZX{i:03}-{}", "K".repeat(i % 33));
        c.drive.serial = Some(serial.clone());
        c.drive.model = Some(format!("Batch Drive Model {i}"));
        let f = batch.join(format!("drive-{i:03}.json"));
        std::fs::write(&f, drivelab_erase::cert::sign(&c, &key).unwrap()).unwrap();
        files.push(f);
        serials.push(serial);
    }
    let (pdf, csv) = (dir.join("report.pdf"), dir.join("report.csv"));
    let (code, out, err) = report(&dir, &files, &pdf, &csv);
    assert_eq!(code, 0, "{out}{err}");
    let p = pdf.to_str().unwrap();
    assert!(tool("qpdf", &["--check", p]).contains("No syntax or stream encoding errors"));
    let info = tool("pdfinfo", &[p]);
    let pages: u32 = info
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pages > 1, "{info}");
    let text: String = tool("pdftotext", &["-raw", p, "-"])
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv_text.lines().collect();
    assert_eq!(lines.len(), 101, "{csv_text}");
    for (i, (f, s)) in files.iter().zip(&serials).enumerate() {
        let sum = tool("sha256sum", &[f.to_str().unwrap()]);
        let digest = sum.split_whitespace().next().unwrap();
        assert!(text.contains(s.as_str()), "serial {s} missing from the PDF");
        assert!(
            text.contains(digest),
            "digest of {} missing from the PDF",
            f.display()
        );
        let row = lines[i + 1];
        assert!(
            row.starts_with(&format!("drive-{i:03}.json,{digest},")),
            "{row}"
        );
        assert!(row.contains(&format!(",{s},")), "{row}");
    }
    // One certificate that does not verify: no report at all.
    patch(
        &files[50],
        b"\"capacity_bytes\": 8388608",
        b"\"capacity_bytes\": 8388600",
    );
    let (pdf2, csv2) = (dir.join("r2.pdf"), dir.join("r2.csv"));
    let (code, out, err) = report(&dir, &files, &pdf2, &csv2);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("drive-050.json") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert!(!pdf2.exists() && !csv2.exists());
}
