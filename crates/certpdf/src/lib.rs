//! PDF certificates of erasure: a page for people whose attachment is the
//! exact signed JSON record, so that the PDF verifies on its own.
//!
//! The folders are the flow. [`layout`] turns a verified certificate into
//! pages of positioned text and marks (every field of the record, a QR
//! code of the record's SHA-256 and the command that verifies it, a Code
//! 128 barcode of model:serial), wrapping long values and breaking pages.
//! [`render`] writes those pages as PDF with the font embedded (DejaVu
//! Sans, in `assets/` with its licence). [`attach`] adds the signed JSON
//! as a PDF/A-3 associated file and the XMP metadata that says so.
//! [`read`] takes a PDF apart again for `drivelab erase verify-cert`: the
//! attachment is verified as a JSON certificate is, and the body is
//! rendered afresh from it and compared, so a changed body or attachment
//! is caught. [`report`] is the batch report of many certificates, as PDF
//! and CSV. [`formats`] leaves each erased drive the certificate files
//! asked for (JSON, HTML, PDF), for `drivelab erase` and the station.
//!
//! Rendering is deterministic: the same record, file name and paper give
//! the same bytes, which is what lets [`read`] compare a body with the
//! attachment it came with.

pub mod attach;
pub mod formats;
pub mod layout;
pub mod read;
pub mod render;
pub mod report;

use std::fmt;

use sha2::{Digest, Sha256};

/// Paper sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Paper {
    /// ISO A4, 210 × 297 mm.
    #[default]
    A4,
    /// US Letter, 8.5 × 11 in.
    Letter,
}

impl Paper {
    /// Width and height in PostScript points.
    pub fn size(self) -> (f32, f32) {
        match self {
            Paper::A4 => (595.28, 841.89),
            Paper::Letter => (612.0, 792.0),
        }
    }

    /// The paper whose size is `w` × `h` points (to a point), if any.
    pub fn from_size(w: f32, h: f32) -> Option<Paper> {
        [Paper::A4, Paper::Letter].into_iter().find(|p| {
            let (pw, ph) = p.size();
            (pw - w).abs() < 1.0 && (ph - h).abs() < 1.0
        })
    }

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Paper::A4 => "a4",
            Paper::Letter => "letter",
        }
    }
}

impl fmt::Display for Paper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a PDF cannot be made or read.
#[derive(Debug, thiserror::Error)]
pub enum PdfError {
    /// The PDF library refused what was built (a bug, not the user's).
    #[error("PDF: {0}")]
    Build(String),
    /// A PDF that is not one drivelab made, or is damaged: no attachment,
    /// unreadable objects.
    #[error("{0}")]
    Unreadable(String),
    /// The PDF's body does not show what its attached record says.
    #[error("the PDF's body does not match its attached certificate: {0}")]
    BodyMismatch(String),
}

impl From<lopdf::Error> for PdfError {
    fn from(e: lopdf::Error) -> Self {
        PdfError::Build(e.to_string())
    }
}

/// The SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Render the signed certificate `text` (its exact bytes are attached,
/// named `name`) as a PDF on `paper`. The text must be an intact
/// certificate; whether its signer is trusted is the caller's to check
/// before rendering it.
pub fn certificate_pdf(text: &str, name: &str, paper: Paper) -> Result<Vec<u8>, PdfError> {
    let signed = drivelab_erase::cert::check_signature(text).map_err(PdfError::Unreadable)?;
    let doc = layout::cert::layout(&signed, text, name, paper);
    let c = &signed.certificate;
    let title = format!(
        "Certificate of erasure: {} {}",
        c.drive.model.as_deref().unwrap_or("drive"),
        c.drive.serial.as_deref().unwrap_or(&c.drive.path)
    );
    let seed = format!("{}\n{name}\n{paper}", sha256_hex(text.as_bytes()));
    render::pdf(
        &doc,
        &render::Meta {
            title: &title,
            created: &c.timing.end,
            id_seed: seed.as_bytes(),
        },
        Some(&attach::Attachment {
            name,
            bytes: text.as_bytes(),
            description:
                "The signed erase certificate (drivelab-erase-certificate/1) these pages show",
            modified: &c.timing.end,
        }),
    )
}
