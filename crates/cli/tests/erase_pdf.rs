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

/// Organisation, customer, technician and each drive's asset tag, given
/// on the command line: fields of each signed certificate (a changed
/// organisation fails verification), filled in on the PDF and the HTML
/// page, and columns of the batch report.
#[test]
fn parties_given_to_erase_are_signed_shown_and_reported() {
    require_tools(&TOOLS);
    let dir = TempDir::new("erase-pdf-parties");
    let a = LoopDev::new_in(&dir, 8 << 20);
    let b = LoopDev::new_in(&dir, 8 << 20);
    let certs = dir.join("certs");
    let (tag_a, tag_b) = (
        format!("{}=AT-0001", a.dev()),
        format!("{}=AT-0002", b.dev()),
    );
    let (code, out, err) = erase(
        &dir,
        &[
            a.dev(),
            b.dev(),
            "--yes",
            "--confirm-serial",
            a.dev(),
            "--confirm-serial",
            b.dev(),
            "--certificate-dir",
            certs.to_str().unwrap(),
            "--certificate-format",
            "json,html,pdf",
            "--organisation",
            "Acme Wipe Ltd",
            "--customer",
            "Globex Corporation",
            "--customer-address",
            "1 Main Street, Springfield",
            "--customer-contact",
            "ops@globex.example",
            "--technician",
            "J. Doe",
            "--asset-tag",
            &tag_b,
            "--asset-tag",
            &tag_a,
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut jsons = Vec::new();
    for (i, (d, tag)) in [(&a, "AT-0001"), (&b, "AT-0002")].into_iter().enumerate() {
        let drive = &v["drives"][i];
        assert_eq!(drive["device"], d.dev(), "{v}");
        let json = PathBuf::from(drive["certificate"].as_str().unwrap());
        let p = &cert_body(&json)["parties"];
        assert_eq!(p["organisation"], "Acme Wipe Ltd", "{p}");
        assert_eq!(p["customer"]["name"], "Globex Corporation");
        assert_eq!(p["customer"]["address"], "1 Main Street, Springfield");
        assert_eq!(p["customer"]["contact"], "ops@globex.example");
        assert_eq!(p["technician"], "J. Doe");
        assert_eq!(p["asset_tag"], tag, "{}", d.dev());
        let html = std::fs::read_to_string(json.with_extension("html")).unwrap();
        assert!(
            html.contains("<th>Organisation</th><td>Acme Wipe Ltd</td>")
                && html.contains(&format!("<th>Asset tag</th><td>{tag}</td>")),
            "{html}"
        );
        let pdf = PathBuf::from(drive["pdf"].as_str().unwrap());
        assert_eq!(verify(&dir, &pdf).0, 0);
        let text: String = tool("pdftotext", &["-raw", pdf.to_str().unwrap(), "-"])
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        for want in [
            "OrganisationAcmeWipeLtd",
            "Customer:nameGlobexCorporation",
            "Customer:address1MainStreet,Springfield",
            "Customer:contactops@globex.example",
            "Technician:nameJ.Doe",
        ] {
            assert!(text.contains(want), "{want} not on the PDF");
        }
        assert!(text.contains(&format!("Assettag{tag}")));
        jsons.push(json);
    }

    // A changed organisation (same length): the signature fails, JSON and PDF.
    let changed = dir.join("changed.json");
    std::fs::copy(&jsons[0], &changed).unwrap();
    patch(&changed, b"\"Acme Wipe Ltd\"", b"\"Acme Wipe Inc\"");
    let (code, out, err) = verify(&dir, &changed);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("changed after signing"), "{err}");
    let changed_pdf = dir.join("changed.pdf");
    std::fs::copy(jsons[0].with_extension("pdf"), &changed_pdf).unwrap();
    patch(&changed_pdf, b"\"Acme Wipe Ltd\"", b"\"Acme Wipe Inc\"");
    assert_eq!(verify(&dir, &changed_pdf).0, 1);

    // The batch report: the parties in the PDF's lines and CSV columns.
    let (pdf, csv) = (dir.join("report.pdf"), dir.join("report.csv"));
    let (code, out, err) = report(&dir, &jsons, &pdf, &csv);
    assert_eq!(code, 0, "{out}{err}");
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv_text.lines().collect();
    let head: Vec<&str> = rows[0].split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    for (row, tag) in rows[1..].iter().zip(["AT-0001", "AT-0002"]) {
        // No field of these holds a comma but the address (quoted).
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f[col("asset_tag")], tag, "{row}");
        assert_eq!(f[col("organisation")], "Acme Wipe Ltd", "{row}");
        assert_eq!(f[col("customer_name")], "Globex Corporation", "{row}");
        assert!(row.contains(",\"1 Main Street, Springfield\",ops@globex.example,J. Doe"));
    }
    let text: String = tool("pdftotext", &["-raw", pdf.to_str().unwrap(), "-"])
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    for tag in ["AT-0001", "AT-0002"] {
        assert!(
            text.contains(&format!(
                "assettag{tag};organisationAcmeWipeLtd;customerGlobexCorporation,1MainStreet,Springfield,ops@globex.example;technicianJ.Doe"
            )),
            "{text}"
        );
    }
}

/// An asset tag that names no drive, a bare one with two drives, two tags
/// for one drive, or a field on two lines: one line, exit 2, nothing
/// written (the drives' bytes unchanged, no certificate or journal).
#[test]
fn a_misdirected_asset_tag_or_a_field_on_two_lines_is_refused_before_anything_is_written() {
    drivelab_testkit::require_root();
    let dir = TempDir::new("erase-parties-refused");
    let a = LoopDev::new_in(&dir, 8 << 20);
    let b = LoopDev::new_in(&dir, 8 << 20);
    fill_file(&a.backing, 0x5A);
    fill_file(&b.backing, 0x5A);
    let before = (
        drivelab_testkit::digest(&a.backing),
        drivelab_testkit::digest(&b.backing),
    );
    let certs = dir.join("certs");
    let a_twice = [format!("{}=X-1", a.dev()), format!("{}=X-2", a.dev())];
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "bare tag, two drives",
            vec!["--asset-tag", "AT-1"],
            "name the drive it belongs to",
        ),
        (
            "tag for a drive not named",
            vec!["--asset-tag", "/dev/loop999999=AT-1"],
            "name the drive it belongs to",
        ),
        (
            "two tags for one drive",
            vec!["--asset-tag", &a_twice[0], "--asset-tag", &a_twice[1]],
            "given two tags",
        ),
        (
            "organisation on two lines",
            vec!["--organisation", "Acme\nVERIFIED BY AUDITOR"],
            "--organisation holds a control character",
        ),
    ];
    for (name, extra, want) in cases {
        let mut args = vec![
            a.dev(),
            b.dev(),
            "--yes",
            "--confirm-serial",
            a.dev(),
            "--confirm-serial",
            b.dev(),
            "--certificate-dir",
            certs.to_str().unwrap(),
        ];
        args.extend(extra);
        let (code, out, err) = erase(&dir, &args);
        assert_eq!(code, 2, "{name}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        let files = std::fs::read_dir(&certs).map(|r| r.count()).unwrap_or(0);
        assert_eq!(files, 0, "{name}: a file was written");
    }
    assert_eq!(
        (
            drivelab_testkit::digest(&a.backing),
            drivelab_testkit::digest(&b.backing)
        ),
        before,
        "a refused erase wrote to a drive"
    );
}
