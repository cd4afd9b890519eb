//! The font objects of a PDF: DejaVu Sans embedded whole as a CID-keyed
//! TrueType font (Identity-H: two bytes per glyph id), its widths for the
//! glyphs the document uses, and a ToUnicode map so that text extracts
//! and searches as the characters it shows.

use std::collections::BTreeMap;

use lopdf::{dictionary, Document, Object, ObjectId, Stream};

use crate::layout::font::{Font, FONT_FILE};
use crate::PdfError;

/// The font's name in the PDF.
const BASE_FONT: &str = "DejaVuSans";

/// Add the font to `doc`, with widths and Unicode for the glyphs in
/// `used`; returns the Type0 font's id.
pub fn embed(
    doc: &mut Document,
    font: &Font,
    used: &BTreeMap<u16, char>,
) -> Result<ObjectId, PdfError> {
    let mut file = Stream::new(
        dictionary! { "Length1" => FONT_FILE.len() as i64 },
        FONT_FILE.to_vec(),
    );
    file.compress()?;
    let file_id = doc.add_object(file);
    let (ascent, descent) = font.metrics();
    let bbox = font.bbox();
    let descriptor = doc.add_object(dictionary! {
        "Type" => "FontDescriptor",
        "FontName" => Object::Name(BASE_FONT.into()),
        "Flags" => 32,
        "FontBBox" => bbox.iter().map(|v| Object::Integer(v.round() as i64)).collect::<Vec<_>>(),
        "ItalicAngle" => 0,
        "Ascent" => ascent.round() as i64,
        "Descent" => descent.round() as i64,
        "CapHeight" => 729,
        "StemV" => 80,
        "FontFile2" => file_id,
    });
    let widths: Vec<Object> = used
        .keys()
        .flat_map(|&g| {
            [
                Object::Integer(i64::from(g)),
                Object::Array(vec![Object::Integer(font.advance(g).round() as i64)]),
            ]
        })
        .collect();
    let cid_font = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "CIDFontType2",
        "BaseFont" => Object::Name(BASE_FONT.into()),
        "CIDSystemInfo" => dictionary! {
            "Registry" => Object::string_literal("Adobe"),
            "Ordering" => Object::string_literal("Identity"),
            "Supplement" => 0,
        },
        "FontDescriptor" => descriptor,
        "DW" => 1000,
        "W" => widths,
        "CIDToGIDMap" => "Identity",
    });
    let to_unicode = doc.add_object(Stream::new(dictionary! {}, cmap(used).into_bytes()));
    Ok(doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type0",
        "BaseFont" => Object::Name(BASE_FONT.into()),
        "Encoding" => "Identity-H",
        "DescendantFonts" => vec![Object::Reference(cid_font)],
        "ToUnicode" => to_unicode,
    }))
}

/// The ToUnicode CMap: each used glyph to its character (UTF-16BE).
fn cmap(used: &BTreeMap<u16, char>) -> String {
    let mut s = String::from(
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n",
    );
    let pairs: Vec<(&u16, &char)> = used.iter().collect();
    for chunk in pairs.chunks(100) {
        s.push_str(&format!("{} beginbfchar\n", chunk.len()));
        for (g, c) in chunk {
            let mut buf = [0u16; 2];
            let hex: String = c
                .encode_utf16(&mut buf)
                .iter()
                .map(|u| format!("{u:04X}"))
                .collect();
            s.push_str(&format!("<{g:04X}> <{hex}>\n"));
        }
        s.push_str("endbfchar\n");
    }
    s.push_str("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
    s
}

/// `text` as the hex string of its glyph ids.
pub fn glyph_hex(font: &Font, text: &str) -> String {
    text.chars()
        .map(|c| format!("{:04X}", font.glyph(c)))
        .collect()
}
