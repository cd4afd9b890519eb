//! The signed record inside the PDF, the PDF/A-3 way: an embedded file in
//! the document's EmbeddedFiles name tree, named by the catalog's /AF
//! (associated files) with /AFRelationship /Source (the record the pages
//! are rendered from), MIME type application/json; and the XMP metadata
//! that declares PDF/A-3 (part 3, conformance B) with the title, producer
//! and dates the document information repeats.
//!
//! PDF/A-3b, as veraPDF (the reference validator, run by the tests)
//! judges it: every font embedded (whole, with widths and a ToUnicode
//! map), XMP metadata with pdfaid, document information consistent with
//! it, a document /ID, no encryption, no JavaScript, no transparency, a
//! classic cross-reference table, an output intent with an embedded gray
//! ICC profile (for the DeviceGray marks), the associated file with its
//! relationship, subtype and parameters. Not PDF/A-3a or -3u: the pages
//! are not tagged.

use lopdf::{dictionary, Dictionary, Document, Object, StringFormat};

use crate::PdfError;

/// The producer named in the document information and XMP.
pub const PRODUCER: &str = concat!("drivelab ", env!("CARGO_PKG_VERSION"));

/// A file to attach.
pub struct Attachment<'a> {
    /// Its name (the certificate's JSON file name).
    pub name: &'a str,
    /// Its bytes, exactly.
    pub bytes: &'a [u8],
    /// What it is, in words.
    pub description: &'a str,
    /// Its modification time, RFC 3339 UTC.
    pub modified: &'a str,
}

/// An RFC 3339 UTC time (`2026-11-22T04:55:01.123Z`) as a PDF date
/// (`D:20261122045501Z`); digits only, so any other text gives what
/// digits it has.
pub fn pdf_date(rfc3339: &str) -> String {
    let digits: String = rfc3339
        .split('.')
        .next()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect();
    format!("D:{digits:0<14}Z")
}

/// The time for XMP: RFC 3339 to the second, UTC.
fn xmp_date(rfc3339: &str) -> String {
    let d = pdf_date(rfc3339);
    let g = |a: usize, b: usize| d.get(a..b).unwrap_or("00").to_string();
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        g(2, 6),
        g(6, 8),
        g(8, 10),
        g(10, 12),
        g(12, 14),
        g(14, 16)
    )
}

/// A PDF text string: ASCII as it is, anything else as UTF-16BE with its
/// byte-order mark.
pub fn text_string(s: &str) -> Vec<u8> {
    if s.is_ascii() {
        return s.as_bytes().to_vec();
    }
    let mut v = vec![0xfe, 0xff];
    for u in s.encode_utf16() {
        v.extend_from_slice(&u.to_be_bytes());
    }
    v
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The XMP metadata packet: PDF/A-3B identification, title, producer,
/// creation and modification dates.
pub fn xmp(title: &str, created: &str) -> String {
    let date = xmp_date(created);
    format!(
        r#"<?xpacket begin="{bom}" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/">
<pdfaid:part>3</pdfaid:part>
<pdfaid:conformance>B</pdfaid:conformance>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:format>application/pdf</dc:format>
<dc:title><rdf:Alt><rdf:li xml:lang="x-default">{title}</rdf:li></rdf:Alt></dc:title>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:pdf="http://ns.adobe.com/pdf/1.3/">
<pdf:Producer>{producer}</pdf:Producer>
</rdf:Description>
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/">
<xmp:CreateDate>{date}</xmp:CreateDate>
<xmp:ModifyDate>{date}</xmp:ModifyDate>
<xmp:CreatorTool>{producer}</xmp:CreatorTool>
</rdf:Description>
</rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>"#,
        bom = '\u{feff}',
        title = xml_escape(title),
        producer = xml_escape(PRODUCER),
    )
}

/// Attach `a` to `doc`: the embedded file stream, its file specification
/// (/AFRelationship /Source), the catalog's EmbeddedFiles name tree and
/// /AF array.
pub fn embed(
    doc: &mut Document,
    catalog: &mut Dictionary,
    a: &Attachment<'_>,
) -> Result<(), PdfError> {
    let date = pdf_date(a.modified);
    let file = doc.add_object(lopdf::Stream::new(
        dictionary! {
            "Type" => "EmbeddedFile",
            "Subtype" => Object::Name(b"application/json".to_vec()),
            "Params" => dictionary! {
                "Size" => a.bytes.len() as i64,
                "ModDate" => Object::string_literal(date),
            },
        },
        a.bytes.to_vec(),
    ));
    let name = Object::String(text_string(a.name), StringFormat::Literal);
    let spec = doc.add_object(dictionary! {
        "Type" => "Filespec",
        "F" => name.clone(),
        "UF" => name.clone(),
        "Desc" => Object::String(text_string(a.description), StringFormat::Literal),
        "AFRelationship" => "Source",
        "EF" => dictionary! { "F" => file, "UF" => file },
    });
    catalog.set(
        "Names",
        dictionary! {
            "EmbeddedFiles" => dictionary! { "Names" => vec![name, Object::Reference(spec)] },
        },
    );
    catalog.set("AF", vec![Object::Reference(spec)]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_convert() {
        assert_eq!(pdf_date("2026-11-22T04:55:01.123Z"), "D:20261122045501Z");
        assert_eq!(xmp_date("2026-11-22T04:55:01.123Z"), "2026-11-22T04:55:01Z");
        assert_eq!(pdf_date("x"), "D:00000000000000Z");
    }
}
