//! Laid-out pages to PDF bytes: one content stream per page drawn from
//! the page's marks, the embedded font, the document information and,
//! through [`crate::attach`], the attached record and XMP metadata. The
//! output depends only on its inputs (no clock, no random ID), so the same
//! input gives the same bytes.

pub mod font;
pub mod icc;

use std::fmt::Write as _;

use lopdf::{dictionary, Document, Object, Stream, StringFormat};

use crate::attach::{self, Attachment};
use crate::layout::font::Font;
use crate::layout::{Doc, Item};
use crate::PdfError;

/// What the document says about itself.
pub struct Meta<'a> {
    /// Title (document information and XMP).
    pub title: &'a str,
    /// Creation time, RFC 3339 UTC (the certificate's end, for a
    /// certificate: rendering again gives the same file).
    pub created: &'a str,
    /// Bytes that make the document's ID (the attached record, its paper).
    pub id_seed: &'a [u8],
}

/// The drawing operators of one page.
fn content(font: &Font, sub: &font::Subset, items: &[Item]) -> String {
    let mut s = String::new();
    for it in items {
        // Writing to a String cannot fail.
        let _ = match it {
            Item::Text { x, y, size, text } => writeln!(
                s,
                "BT /F1 {size:.2} Tf {x:.2} {y:.2} Td <{}> Tj ET",
                sub.hex(font, text)
            ),
            Item::Rect { x, y, w, h } => writeln!(s, "{x:.3} {y:.3} {w:.3} {h:.3} re f"),
            Item::Rule { x1, x2, y } => writeln!(s, "0.5 w {x1:.2} {y:.2} m {x2:.2} {y:.2} l S"),
        };
    }
    s
}

/// The PDF of `doc`, with `attachment` embedded when given.
pub fn pdf(
    doc: &Doc,
    meta: &Meta<'_>,
    attachment: Option<&Attachment<'_>>,
) -> Result<Vec<u8>, PdfError> {
    let font = Font::get();
    let mut pdf = Document::with_version("1.7");
    // A classic cross-reference table, which every reader takes.
    pdf.reference_table.cross_reference_type = lopdf::xref::XrefType::CrossReferenceTable;
    let texts = doc.pages.iter().flatten().filter_map(|it| match it {
        Item::Text { text, .. } => Some(text.as_str()),
        _ => None,
    });
    let used = font.used(texts);
    let sub = font::Subset::new(&font, &used)?;
    let font_id = font::embed(&mut pdf, &font, &sub)?;
    let pages_id = pdf.new_object_id();
    let (w, h) = doc.paper.size();
    let mut kids = Vec::new();
    for page in &doc.pages {
        let mut stream = Stream::new(dictionary! {}, content(&font, &sub, page).into_bytes());
        stream.compress()?;
        let content_id = pdf.add_object(stream);
        let page_id = pdf.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "MediaBox" => vec![0.into(), 0.into(), Object::Real(w), Object::Real(h)],
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font_id } },
            "Contents" => content_id,
        });
        kids.push(Object::Reference(page_id));
    }
    let count = kids.len() as i64;
    pdf.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }),
    );
    let date = attach::pdf_date(meta.created);
    let info = pdf.add_object(dictionary! {
        "Title" => Object::String(attach::text_string(meta.title), StringFormat::Literal),
        "Producer" => Object::string_literal(attach::PRODUCER),
        "CreationDate" => Object::string_literal(date.clone()),
        "ModDate" => Object::string_literal(date),
    });
    let metadata = pdf.add_object(Stream::new(
        dictionary! { "Type" => "Metadata", "Subtype" => "XML" },
        attach::xmp(meta.title, meta.created).into_bytes(),
    ));
    let mut profile = Stream::new(dictionary! { "N" => 1 }, icc::gray_profile());
    profile.compress()?;
    let profile = pdf.add_object(profile);
    let intent = dictionary! {
        "Type" => "OutputIntent",
        "S" => "GTS_PDFA1",
        "OutputConditionIdentifier" => Object::string_literal("Gray, gamma 2.2"),
        "Info" => Object::string_literal("drivelab gray, gamma 2.2, D50"),
        "DestOutputProfile" => profile,
    };
    let mut catalog = dictionary! {
        "Type" => "Catalog",
        "Pages" => pages_id,
        "Metadata" => metadata,
        "OutputIntents" => vec![Object::Dictionary(intent)],
    };
    if let Some(a) = attachment {
        attach::embed(&mut pdf, &mut catalog, a)?;
    }
    let catalog_id = pdf.add_object(catalog);
    pdf.trailer.set("Root", catalog_id);
    pdf.trailer.set("Info", info);
    let id = crate::sha256_hex(meta.id_seed);
    let id_bytes: Vec<u8> = (0..16)
        .filter_map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).ok())
        .collect();
    pdf.trailer.set(
        "ID",
        vec![
            Object::String(id_bytes.clone(), StringFormat::Hexadecimal),
            Object::String(id_bytes, StringFormat::Hexadecimal),
        ],
    );
    let mut out = Vec::new();
    pdf.save_to(&mut out)
        .map_err(|e| PdfError::Build(e.to_string()))?;
    Ok(out)
}
