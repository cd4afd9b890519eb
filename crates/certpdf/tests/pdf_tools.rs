//! Certificate PDFs checked with the tools an auditor would use: qpdf
//! --check is clean; poppler's pdftotext finds every field of the signed
//! record, every word box inside its page and none overlapping another
//! (A4 and Letter, ordinary and very long values); zbarimg reads the QR
//! code back from the page pdftoppm renders and gets the record's
//! SHA-256, and the Code 128 barcode's model:serial; pdfdetach extracts
//! the attachment byte for byte; a PDF whose attachment or body was
//! changed fails verification.

use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_certpdf::layout::fields::leaves;
use drivelab_certpdf::{certificate_pdf, read, sha256_hex, Paper};
use drivelab_erase::cert::{
    sign, CertError, Certificate, Customer, MachineSection, PartiesSection, Trust,
};
use drivelab_testkit::TempDir;
use ed25519_dalek::SigningKey;

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

fn trust() -> Trust {
    let mut t = Trust::none();
    let pk: String = key()
        .verifying_key()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    t.add_public_key(&pk).unwrap();
    t
}

/// The certificate of a real erase of a 16 MiB loop device.
fn fixture() -> Certificate {
    let text = include_str!("fixtures/loop-erase.json");
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    serde_json::from_value(v["certificate"].clone()).unwrap()
}

/// A drive as people name them: vendor, model, serial, firmware, host DMI.
fn ordinary() -> Certificate {
    let mut c = fixture();
    c.drive.vendor = Some("ATA".into());
    c.drive.model = Some("Samsung SSD 870 EVO 1TB".into());
    c.drive.serial = Some("S6PUNX0T123456A".into());
    c.drive.firmware = Some("SVT02B6Q".into());
    c.tool.machine = Some(MachineSection {
        vendor: Some("Dell Inc.".into()),
        model: Some("PowerEdge R740".into()),
        serial: Some("7XK2Q33".into()),
        uuid: Some("4c4c4544-0058-4b10-8032-b7c04f513333".into()),
    });
    c.parties = Some(PartiesSection {
        organisation: Some("Example Recycling Ltd".into()),
        customer: Customer {
            name: Some("Globex Corporation".into()),
            address: Some("1 Main Street, Springfield".into()),
            contact: Some("J. Smith, +1 555 0100".into()),
        },
        technician: Some("A. Operator".into()),
        asset_tag: Some("AT-000123".into()),
    });
    c
}

/// Values that must wrap and pages that must break: a 40-character
/// serial, a long model, many long errors and exceptions.
fn long_values() -> Certificate {
    let mut c = ordinary();
    c.drive.serial = Some("WD-WX12A3456789B0123456789ABCDEFGHIJKLMN".into());
    c.drive.model = Some(
        "Western Digital Ultrastar DC HC550 WUH721818ALE6L4 18TB SATA 6Gb/s 512e Helium Enterprise"
            .into(),
    );
    assert_eq!(c.drive.serial.as_ref().unwrap().len(), 40);
    c.errors = (0..40)
        .map(|i| {
            format!(
                "write at LBA {} failed: Input/output error (os error 5); sense key MEDIUM ERROR, ASC/ASCQ 11/00 unrecovered read error, retried {i} times before the range was skipped",
                1_000_000 + i * 8
            )
        })
        .collect();
    c.verification.excepted_blocks = 320;
    let p = c.parties.as_mut().unwrap();
    p.organisation = Some(
        "Northern Hemisphere Secure IT Asset Disposition and Data Sanitisation Services Cooperative Ltd"
            .into(),
    );
    p.customer.address = Some(
        "Building 7, Floor 3, Suite 301, 1234 Long Industrial Estate Road, Greater Springfield Metropolitan Area, SP1 2AB, United Kingdom of Great Britain and Northern Ireland"
            .into(),
    );
    p.asset_tag = Some("ASSET-0000000000-1111111111-2222222222-3333333333".into());
    c
}

fn render(c: &Certificate, paper: Paper, dir: &TempDir, tag: &str) -> (PathBuf, String) {
    let text = sign(c, &key()).unwrap();
    let pdf = certificate_pdf(&text, "cert.json", paper).unwrap();
    let path = dir.join(&format!("{tag}-{paper}.pdf"));
    std::fs::write(&path, pdf).unwrap();
    (path, text)
}

fn tool(bin: &str, args: &[&str]) -> String {
    let out = Command::new(bin).args(args).output().unwrap_or_else(|e| {
        panic!("{bin} is not installed ({e}); apt-get install qpdf poppler-utils zbar-tools")
    });
    assert!(
        out.status.success(),
        "{bin} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // poppler reports a damaged file on stderr and still exits 0.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("Syntax Error") && !err.contains("WARNING"),
        "{bin} {args:?}: {err}"
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A word of `pdftotext -bbox-layout`: its box and text.
#[derive(Debug)]
struct Word {
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
    text: String,
}

fn attr(tag: &str, name: &str) -> f32 {
    let k = format!("{name}=\"");
    let s = &tag[tag.find(&k).unwrap() + k.len()..];
    s[..s.find('"').unwrap()].parse().unwrap()
}

/// Pages (width, height, words) of a PDF, from pdftotext -bbox-layout.
fn pages(pdf: &Path) -> Vec<(f32, f32, Vec<Word>)> {
    let html = tool("pdftotext", &["-bbox-layout", pdf.to_str().unwrap(), "-"]);
    let mut out = Vec::new();
    for page in html.split("<page ").skip(1) {
        let head = &page[..page.find('>').unwrap()];
        let (w, h) = (attr(head, "width"), attr(head, "height"));
        let words = page
            .split("<word ")
            .skip(1)
            .map(|wd| {
                let tag = &wd[..wd.find('>').unwrap()];
                let text = &wd[wd.find('>').unwrap() + 1..wd.find("</word>").unwrap()];
                Word {
                    x0: attr(tag, "xMin"),
                    y0: attr(tag, "yMin"),
                    x1: attr(tag, "xMax"),
                    y1: attr(tag, "yMax"),
                    text: text
                        .replace("&amp;", "&")
                        .replace("&lt;", "<")
                        .replace("&gt;", ">")
                        .replace("&quot;", "\""),
                }
            })
            .collect();
        out.push((w, h, words));
    }
    out
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[test]
fn every_field_is_shown_inside_the_page_and_no_words_overlap() {
    let dir = TempDir::new("certpdf-layout");
    for (tag, c) in [("ordinary", ordinary()), ("long", long_values())] {
        for paper in [Paper::A4, Paper::Letter] {
            let (pdf, text) = render(&c, paper, &dir, tag);
            let pages = pages(&pdf);
            let (pw, ph) = paper.size();
            for (n, (w, h, words)) in pages.iter().enumerate() {
                assert!(
                    (w - pw).abs() < 0.5 && (h - ph).abs() < 0.5,
                    "{tag} {paper} page {n}"
                );
                for a in words {
                    assert!(
                        a.x0 >= 0.0 && a.y0 >= 0.0 && a.x1 <= *w && a.y1 <= *h,
                        "{tag} {paper} page {}: {a:?} outside the page",
                        n + 1
                    );
                }
                for (i, a) in words.iter().enumerate() {
                    for b in &words[i + 1..] {
                        let ox = a.x1.min(b.x1) - a.x0.max(b.x0);
                        let oy = a.y1.min(b.y1) - a.y0.max(b.y0);
                        assert!(
                            ox <= 0.5 || oy <= 0.5,
                            "{tag} {paper} page {}: {a:?} overlaps {b:?}",
                            n + 1
                        );
                    }
                }
            }
            // The first page: what the drive is and what was done to it.
            let first: String = pages[0].2.iter().map(|w| w.text.as_str()).collect();
            for want in [
                c.drive.model.clone().unwrap(),
                c.drive.serial.clone().unwrap(),
                c.drive.path.clone(),
                c.result.as_str().to_string(),
                c.erase.method.name().to_string(),
                c.erase.nist_category.clone(),
                c.verification.result.clone(),
                c.timing.end.clone(),
                sha256_hex(text.as_bytes()),
            ] {
                assert!(
                    first.contains(&squash(&want)),
                    "{tag} {paper}: page 1 lacks {want:?}"
                );
            }
            // Every leaf of the signed record, somewhere, in the order drawn.
            let all = squash(&tool("pdftotext", &["-raw", pdf.to_str().unwrap(), "-"]));
            let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            for (path, value) in leaves(&doc) {
                assert!(all.contains(&squash(&path)), "{tag} {paper}: no {path}");
                assert!(
                    all.contains(&squash(&value)),
                    "{tag} {paper}: no {path} = {value:?}"
                );
            }
            // The parties as filled fields: each label followed by its
            // value; the signature and date stay lines to fill by hand.
            let p = c.parties.clone().unwrap();
            for (label, value) in [
                ("Organisation", p.organisation),
                ("Customer: name", p.customer.name),
                ("Customer: address", p.customer.address),
                ("Customer: contact", p.customer.contact),
                ("Technician: name", p.technician),
                ("Asset tag", p.asset_tag),
            ] {
                let want = squash(&format!("{label}{}", value.unwrap()));
                assert!(all.contains(&want), "{tag} {paper}: {label} not filled");
            }
            assert!(all.contains(&squash("Technician: signature Date")));
            if tag == "long" {
                assert!(pages.len() > 3, "{tag} {paper}: {} pages", pages.len());
            }
        }
    }
}

/// A certificate made before the parties were fields: it verifies, and
/// its hand-over block is lines to fill in by hand.
#[test]
fn a_certificate_without_parties_renders_blank_lines_to_fill() {
    let dir = TempDir::new("certpdf-noparties");
    let c = fixture();
    assert!(c.parties.is_none());
    let (pdf, text) = render(&c, Paper::A4, &dir, "old");
    assert!(!text.contains("\"parties\""));
    let bytes = std::fs::read(&pdf).unwrap();
    read::verify(&bytes, &trust()).expect("verifies");
    let all = squash(&tool("pdftotext", &["-raw", pdf.to_str().unwrap(), "-"]));
    assert!(
        all.contains(&squash(
            "Organisation Customer: name Customer: address Customer: contact Technician: name Technician: signature Date"
        )),
        "{all}"
    );
    assert!(all.contains(&squash("Asset tag not given")));
}

#[test]
fn qpdf_check_is_clean_and_the_attachment_is_the_signed_json_byte_for_byte() {
    let dir = TempDir::new("certpdf-tools");
    for (tag, c) in [("ordinary", ordinary()), ("long", long_values())] {
        for paper in [Paper::A4, Paper::Letter] {
            let (pdf, text) = render(&c, paper, &dir, tag);
            let p = pdf.to_str().unwrap();
            let check = tool("qpdf", &["--check", p]);
            assert!(
                check.contains("No syntax or stream encoding errors found"),
                "{check}"
            );
            let listed = tool("pdfdetach", &["-list", p]);
            assert!(
                listed.contains("1 embedded files") && listed.contains("cert.json"),
                "{listed}"
            );
            let out = dir.join(&format!("{tag}-{paper}.json"));
            tool("pdfdetach", &["-save", "1", "-o", out.to_str().unwrap(), p]);
            assert_eq!(
                std::fs::read(&out).unwrap(),
                text.as_bytes(),
                "{tag} {paper}"
            );
            let info = tool("pdfinfo", &[p]);
            assert!(
                info.contains("Encrypted:       no") && info.contains("Metadata Stream: yes"),
                "{info}"
            );
        }
    }
}

#[test]
fn the_qr_code_read_from_the_rendered_page_holds_the_records_sha256() {
    let dir = TempDir::new("certpdf-qr");
    for paper in [Paper::A4, Paper::Letter] {
        let (pdf, text) = render(&ordinary(), paper, &dir, "qr");
        let prefix = dir.join(&format!("page-{paper}"));
        tool(
            "pdftoppm",
            &[
                "-r",
                "200",
                "-f",
                "1",
                "-l",
                "1",
                "-singlefile",
                "-png",
                pdf.to_str().unwrap(),
                prefix.to_str().unwrap(),
            ],
        );
        let png = format!("{}.png", prefix.display());
        let read = tool("zbarimg", &["-q", &png]);
        let digest = sha256_hex(text.as_bytes());
        assert!(
            read.contains(&format!(
                "QR-Code:SHA-256 {digest}\ndrivelab erase verify-cert cert.json"
            )),
            "{paper}: {read}"
        );
        assert!(
            read.contains("CODE-128:Samsung SSD 870 EVO 1TB:S6PUNX0T123456A"),
            "{paper}: {read}"
        );
    }
}

/// `pdf` with its objects changed by `edit`, saved again.
fn edited(pdf: &[u8], edit: impl FnOnce(&mut lopdf::Document)) -> Vec<u8> {
    let mut doc = lopdf::Document::load_mem(pdf).unwrap();
    edit(&mut doc);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// The id of the attached file's stream.
fn attachment_id(doc: &lopdf::Document) -> lopdf::ObjectId {
    doc.objects
        .iter()
        .find(|(_, o)| {
            o.as_stream().is_ok_and(|s| {
                s.dict.get(b"Type").and_then(|t| t.as_name()).ok()
                    == Some(b"EmbeddedFile".as_slice())
            })
        })
        .map(|(id, _)| *id)
        .unwrap()
}

#[test]
fn a_changed_attachment_or_body_fails_verification() {
    let c = ordinary();
    let text = sign(&c, &key()).unwrap();
    let pdf = certificate_pdf(&text, "cert.json", Paper::A4).unwrap();
    let v = read::verify(&pdf, &trust()).unwrap();
    assert_eq!(v.certificate, c);

    // The attachment's serial changed: its signature no longer holds.
    let forged_attachment = edited(&pdf, |doc| {
        let id = attachment_id(doc);
        let s = doc.get_object_mut(id).unwrap().as_stream_mut().unwrap();
        let t = String::from_utf8(s.content.clone())
            .unwrap()
            .replace("S6PUNX0T123456A", "S6PUNX0T999999A");
        s.set_content(t.into_bytes());
    });
    let e = read::verify(&forged_attachment, &trust()).unwrap_err();
    assert!(
        matches!(e, CertError::Invalid(_)) && e.to_string().contains("changed after signing"),
        "{e}"
    );

    // The attachment re-signed by a forger's own key: intact, not trusted.
    let mut forged = c.clone();
    forged.result = drivelab_erase::EraseResult::Erased;
    forged.drive.serial = Some("S6PUNX0T999999A".into());
    let ftext = sign(&forged, &SigningKey::from_bytes(&[9u8; 32])).unwrap();
    let fpdf = certificate_pdf(&ftext, "cert.json", Paper::A4).unwrap();
    let e = read::verify(&fpdf, &trust()).unwrap_err();
    assert!(matches!(e, CertError::Untrusted { .. }), "{e}");

    // The body's serial changed, the attachment left alone (with glyphs
    // the page's font has: its digits in another order).
    let by_char: std::collections::HashMap<char, u16> = read::first_page_glyphs(&pdf)
        .unwrap()
        .into_iter()
        .map(|(g, c)| (c, g))
        .collect();
    let hex = |s: &str| -> String { s.chars().map(|c| format!("{:04X}", by_char[&c])).collect() };
    let body = edited(&pdf, |doc| {
        let page = *doc.get_pages().get(&1).unwrap();
        let content = String::from_utf8(doc.get_page_content(page).unwrap()).unwrap();
        let changed = content.replace(&hex("S6PUNX0T123456A"), &hex("S6PUNX0T654321A"));
        assert_ne!(changed, content);
        doc.change_page_content(page, changed.into_bytes()).unwrap();
    });
    let e = read::verify(&body, &trust()).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, CertError::Invalid(_)), "{msg}");
    assert!(
        msg.contains("page 1 shows")
            && msg.contains("S6PUNX0T654321A\" where the record says")
            && msg.contains("S6PUNX0T123456A"),
        "{msg}"
    );
    assert_eq!(msg.lines().count(), 1);

    // A line drawn over the body (an extra content stream) is a change too.
    let overlay = edited(&pdf, |doc| {
        let page = *doc.get_pages().get(&1).unwrap();
        doc.add_page_contents(page, b"1 g 40 700 300 20 re f".to_vec())
            .unwrap();
    });
    let e = read::verify(&overlay, &trust()).unwrap_err();
    assert!(
        e.to_string()
            .contains("does not match its attached certificate"),
        "{e}"
    );

    // An annotation over the page.
    let annotated = edited(&pdf, |doc| {
        let page = *doc.get_pages().get(&1).unwrap();
        let d = doc.get_object_mut(page).unwrap().as_dict_mut().unwrap();
        d.set("Annots", lopdf::Object::Array(vec![]));
    });
    let e = read::verify(&annotated, &trust()).unwrap_err();
    assert!(e.to_string().contains("annotations"), "{e}");

    // A crop box that hides part of page 1, and an open action.
    let cropped = edited(&pdf, |doc| {
        let page = *doc.get_pages().get(&1).unwrap();
        let d = doc.get_object_mut(page).unwrap().as_dict_mut().unwrap();
        d.set("CropBox", vec![0.into(), 0.into(), 300.into(), 300.into()]);
    });
    let e = read::verify(&cropped, &trust()).unwrap_err();
    assert!(
        e.to_string()
            .contains("page 1: its boxes, font or resources differ"),
        "{e}"
    );
    let action = edited(&pdf, |doc| {
        let cat = doc.catalog_mut().unwrap();
        cat.set("OpenAction", lopdf::Object::Array(vec![]));
    });
    let e = read::verify(&action, &trust()).unwrap_err();
    assert!(
        e.to_string().contains("the catalog carries /OpenAction"),
        "{e}"
    );

    // Not a certificate PDF at all: no attachment.
    let bare = edited(&pdf, |doc| {
        let cat = doc.catalog_mut().unwrap();
        cat.remove(b"Names");
    });
    let e = read::verify(&bare, &trust()).unwrap_err();
    assert!(
        e.to_string().contains("no attached certificate record"),
        "{e}"
    );
}

#[test]
fn rendering_is_deterministic_and_survives_a_rewrite_by_qpdf() {
    let dir = TempDir::new("certpdf-qpdf");
    let c = ordinary();
    let text = sign(&c, &key()).unwrap();
    let a = certificate_pdf(&text, "cert.json", Paper::Letter).unwrap();
    let b = certificate_pdf(&text, "cert.json", Paper::Letter).unwrap();
    assert_eq!(a, b);
    let src = dir.join("a.pdf");
    std::fs::write(&src, &a).unwrap();
    let qdf = dir.join("a.qdf.pdf");
    tool(
        "qpdf",
        &[
            "--qdf",
            "--object-streams=disable",
            src.to_str().unwrap(),
            qdf.to_str().unwrap(),
        ],
    );
    let rewritten = std::fs::read(&qdf).unwrap();
    assert_ne!(rewritten, a);
    let v = read::verify(&rewritten, &trust()).unwrap();
    assert_eq!(v.certificate, c);
}

/// The PDF/A-3 parts a validator looks for first, checked on the objects
/// (no PDF/A validator installs here; this and qpdf --check stand in).
#[test]
fn the_pdfa_3_markers_are_in_place() {
    let text = sign(&ordinary(), &key()).unwrap();
    let pdf = certificate_pdf(&text, "cert.json", Paper::A4).unwrap();
    let doc = lopdf::Document::load_mem(&pdf).unwrap();
    assert!(doc.trailer.get(b"Encrypt").is_err());
    assert!(doc
        .trailer
        .get(b"ID")
        .and_then(|o| o.as_array())
        .is_ok_and(|a| a.len() == 2));
    let cat = doc.catalog().unwrap();
    let name = |d: &lopdf::Dictionary, k: &str| -> Vec<u8> {
        d.get(k.as_bytes())
            .and_then(|o| o.as_name())
            .unwrap()
            .to_vec()
    };
    let intents = cat
        .get(b"OutputIntents")
        .and_then(|o| o.as_array())
        .unwrap();
    let intent = intents[0].as_dict().unwrap();
    assert_eq!(name(intent, "S"), b"GTS_PDFA1");
    let icc = doc
        .get_object(
            intent
                .get(b"DestOutputProfile")
                .unwrap()
                .as_reference()
                .unwrap(),
        )
        .unwrap()
        .as_stream()
        .unwrap();
    assert_eq!(icc.dict.get(b"N").unwrap().as_i64().unwrap(), 1);
    assert_eq!(&icc.get_plain_content().unwrap()[36..40], b"acsp");
    let xmp = doc
        .get_object(cat.get(b"Metadata").unwrap().as_reference().unwrap())
        .unwrap()
        .as_stream()
        .unwrap();
    assert!(xmp.dict.get(b"Filter").is_err(), "XMP stays uncompressed");
    let xmp = String::from_utf8(xmp.content.clone()).unwrap();
    assert!(
        xmp.contains("<pdfaid:part>3</pdfaid:part>")
            && xmp.contains("<pdfaid:conformance>B</pdfaid:conformance>")
    );
    let end = &ordinary().timing.end[..19];
    assert!(
        xmp.contains(&format!("<xmp:CreateDate>{end}Z</xmp:CreateDate>")),
        "{xmp}"
    );
    let af = cat.get(b"AF").and_then(|o| o.as_array()).unwrap();
    let spec = doc.get_dictionary(af[0].as_reference().unwrap()).unwrap();
    assert_eq!(name(spec, "AFRelationship"), b"Source");
    let ef = spec.get(b"EF").and_then(|o| o.as_dict()).unwrap();
    let file = doc
        .get_object(ef.get(b"F").unwrap().as_reference().unwrap())
        .unwrap()
        .as_stream()
        .unwrap();
    assert_eq!(name(&file.dict, "Subtype"), b"application/json");
    // Every font's program is embedded.
    for (_, o) in doc.objects.iter() {
        if let Ok(d) = o.as_dict() {
            if d.get(b"Type").and_then(|t| t.as_name()).ok() == Some(b"FontDescriptor".as_slice()) {
                assert!(d.get(b"FontFile2").is_ok(), "{d:?}");
            }
        }
    }
}

/// `n` report entries of long values, drive i with serial `SERiiii` and a
/// model starting `MODELiiii`.
fn batch(n: usize) -> Vec<drivelab_certpdf::report::Entry> {
    (0..n)
        .map(|i| {
            let mut c = long_values();
            c.drive.serial = Some(format!("SER{i:04}"));
            let model = c.drive.model.take().unwrap();
            c.drive.model = Some(format!("MODEL{i:04} {model}"));
            drivelab_certpdf::report::Entry {
                file: format!("c{i}.json"),
                digest: sha256_hex(format!("{i}").as_bytes()),
                certificate: c,
                public_key: "00".repeat(32),
            }
        })
        .collect()
}

/// A batch report whose drives' lines wrap (a long model, organisation and
/// customer address on every drive): each drive's lines, from its row to
/// its digest, are on one page, on A4 and Letter.
#[test]
fn a_drives_wrapped_lines_in_a_batch_report_stay_on_one_page() {
    let dir = TempDir::new("certpdf-report-pages");
    let entries = batch(60);
    for paper in [Paper::A4, Paper::Letter] {
        let bytes =
            drivelab_certpdf::report::report_pdf(&entries, paper, "2026-11-27T07:00:00.000Z")
                .unwrap();
        let path = dir.join(&format!("report-{paper}.pdf"));
        std::fs::write(&path, bytes).unwrap();
        let pages = pages(&path);
        assert!(pages.len() > 2, "{paper}: {} pages", pages.len());
        let page_of = |token: &str| -> Vec<usize> {
            pages
                .iter()
                .enumerate()
                .filter(|(_, (_, _, words))| words.iter().any(|w| w.text.contains(token)))
                .map(|(n, _)| n)
                .collect()
        };
        for (i, e) in entries.iter().enumerate() {
            let (row, serial, digest) = (
                page_of(&format!("MODEL{i:04}")),
                page_of(&format!("SER{i:04}")),
                page_of(&e.digest),
            );
            assert!(
                row.len() == 1 && serial == row && digest == row,
                "{paper}: drive {i}'s row is on pages {row:?}, its serial on {serial:?}, its digest on {digest:?}"
            );
        }
    }
}

/// veraPDF's command line, as tests/run fetches it from Maven Central.
fn verapdf_jar() -> PathBuf {
    let jar = std::env::var_os("VERAPDF_JAR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".m2/repository/org/verapdf/apps/cli/1.30.2/cli-1.30.2.jar")
        });
    assert!(
        jar.is_file(),
        "{} is missing: tests/run fetches it (mvn dependency:get -Dartifact=org.verapdf.apps:cli:1.30.2)",
        jar.display()
    );
    jar
}

#[test]
fn verapdf_finds_certificates_and_reports_pdfa_3b_conformant() {
    let dir = TempDir::new("certpdf-verapdf");
    let mut files = Vec::new();
    for (tag, c) in [("ordinary", ordinary()), ("long", long_values())] {
        for paper in [Paper::A4, Paper::Letter] {
            files.push(render(&c, paper, &dir, tag).0);
        }
    }
    let entries = batch(30);
    let report = dir.join("report.pdf");
    let bytes =
        drivelab_certpdf::report::report_pdf(&entries, Paper::A4, "2026-11-27T07:00:00.000Z")
            .unwrap();
    std::fs::write(&report, bytes).unwrap();
    files.push(report);
    let jar = verapdf_jar();
    let mut args = vec![
        "-jar".to_string(),
        jar.display().to_string(),
        "--flavour".into(),
        "3b".into(),
        "--format".into(),
        "text".into(),
    ];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let out = Command::new("java")
        .args(&args)
        .output()
        .expect("run java (openjdk-17-jre-headless)");
    let text = String::from_utf8_lossy(&out.stdout);
    for f in &files {
        assert!(
            text.lines()
                .any(|l| l == format!("PASS {} 3b", f.display())),
            "{}: not PDF/A-3b by veraPDF:\n{text}{}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
