//! The certificate files an erase leaves for each drive: the signed JSON
//! always (the record the others are made from), its HTML page and a PDF
//! with the JSON attached when asked. `drivelab erase
//! --certificate-format` and the station's `certificate.formats` both
//! come here, so a drive's files are the same whichever made them.

use std::path::Path;

use drivelab_device::input::{self, Kind};
use drivelab_device::output::Output;
use drivelab_erase::Summary;

use crate::{certificate_pdf, Paper};

/// One kind of certificate file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CertFormat {
    /// The signed record (always written: the others are made from it).
    Json,
    /// A page for people.
    Html,
    /// PDF with the signed JSON attached (PDF/A-3).
    Pdf,
}

impl CertFormat {
    /// The name in a list of formats.
    pub fn name(self) -> &'static str {
        match self {
            CertFormat::Json => "json",
            CertFormat::Html => "html",
            CertFormat::Pdf => "pdf",
        }
    }
}

/// Why a list of formats cannot be used: json is left out.
pub const NEEDS_JSON: &str =
    "json is the signed record the html and pdf files are made from; keep it in the list (e.g. json,pdf)";

/// Whether `formats` can be used: json must be among them.
pub fn check(formats: &[CertFormat]) -> Result<(), &'static str> {
    if formats.contains(&CertFormat::Json) {
        Ok(())
    } else {
        Err(NEEDS_JSON)
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// After an erase: a PDF on `paper` beside each drive's JSON certificate
/// when `formats` holds pdf, and no HTML page when it does not hold html.
/// A PDF that cannot be made is the drive's error (the JSON certificate
/// stands); returns whether every PDF asked for was made.
pub fn finish(summary: &mut Summary, formats: &[CertFormat], paper: Paper) -> bool {
    let mut all = true;
    for o in &mut summary.drives {
        let Some(json) = o.certificate.clone() else {
            continue;
        };
        if !formats.contains(&CertFormat::Html) {
            if let Some(h) = o.html.take() {
                let _ = std::fs::remove_file(h);
            }
        }
        if !formats.contains(&CertFormat::Pdf) {
            continue;
        }
        let pdf = json.with_extension("pdf");
        let made = input::read_string(&json, Kind::Certificate)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                certificate_pdf(&text, &file_name(&json), paper).map_err(|e| e.to_string())
            })
            .and_then(|bytes| {
                Output::new(&pdf)
                    .option("certificate")
                    .write(&bytes)
                    .map_err(|e| e.to_string())
            });
        match made {
            Ok(()) => o.pdf = Some(pdf),
            Err(e) => {
                all = false;
                let why = format!("certificate PDF {}: {e}", pdf.display());
                o.error = Some(match o.error.take() {
                    Some(old) => format!("{old}; {why}"),
                    None => why,
                });
            }
        }
    }
    all
}
