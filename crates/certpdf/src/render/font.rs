//! The font objects of a PDF: DejaVu Sans, cut down to the glyphs the
//! document uses and embedded as a CID-keyed TrueType font (Identity-H:
//! two bytes per glyph id of the subset), with their widths and a
//! ToUnicode map so that text extracts and searches as the characters it
//! shows.

use std::collections::{BTreeMap, HashMap};

use lopdf::{dictionary, Document, Object, ObjectId, Stream};

use crate::layout::font::{Font, FONT_FILE};
use crate::PdfError;

/// The font's name in the PDF.
const BASE_FONT: &str = "DejaVuSans";

/// The glyphs a document uses, renumbered in the subset font.
pub struct Subset {
    /// Glyph id in DejaVu Sans to glyph id in the subset.
    map: HashMap<u16, u16>,
    /// Each subset glyph's character and advance (thousandths of an em).
    glyphs: BTreeMap<u16, (char, f32)>,
    /// The subset font program.
    program: Vec<u8>,
    /// The subset's name: a tag of six capitals from its glyphs, `+`,
    /// the font's name (as PDF names subsets).
    name: String,
}

impl Subset {
    /// The subset of `font` holding the glyphs in `used` (and .notdef).
    pub fn new(font: &Font, used: &BTreeMap<u16, char>) -> Result<Subset, PdfError> {
        let mut remapper = subsetter::GlyphRemapper::new();
        remapper.remap(0);
        let mut map = HashMap::new();
        let mut glyphs = BTreeMap::new();
        for (&g, &c) in used {
            let n = remapper.remap(g);
            map.insert(g, n);
            glyphs.insert(n, (c, font.advance(g)));
        }
        let program = subsetter::subset(FONT_FILE, 0, &remapper)
            .map_err(|e| PdfError::Build(format!("font subset: {e}")))?;
        let ids: Vec<u8> = used.keys().flat_map(|g| g.to_be_bytes()).collect();
        let tag: String = crate::sha256_hex(&ids)
            .bytes()
            .take(6)
            .map(|b| char::from(b'A' + b % 26))
            .collect();
        Ok(Subset {
            map,
            glyphs,
            program,
            name: format!("{tag}+{BASE_FONT}"),
        })
    }

    /// `text` as the hex string of its glyph ids in the subset.
    pub fn hex(&self, font: &Font, text: &str) -> String {
        text.chars()
            .map(|c| format!("{:04X}", self.map.get(&font.glyph(c)).copied().unwrap_or(0)))
            .collect()
    }
}

/// Add the subset font to `doc`; returns the Type0 font's id.
pub fn embed(doc: &mut Document, font: &Font, sub: &Subset) -> Result<ObjectId, PdfError> {
    let mut file = Stream::new(
        dictionary! { "Length1" => sub.program.len() as i64 },
        sub.program.clone(),
    );
    file.compress()?;
    let file_id = doc.add_object(file);
    let (ascent, descent) = font.metrics();
    let bbox = font.bbox();
    let descriptor = doc.add_object(dictionary! {
        "Type" => "FontDescriptor",
        "FontName" => Object::Name(sub.name.clone().into_bytes()),
        "Flags" => 32,
        "FontBBox" => bbox.iter().map(|v| Object::Integer(v.round() as i64)).collect::<Vec<_>>(),
        "ItalicAngle" => 0,
        "Ascent" => ascent.round() as i64,
        "Descent" => descent.round() as i64,
        "CapHeight" => 729,
        "StemV" => 80,
        "FontFile2" => file_id,
    });
    let widths: Vec<Object> = sub
        .glyphs
        .iter()
        .flat_map(|(&g, &(_, w))| {
            [
                Object::Integer(i64::from(g)),
                Object::Array(vec![Object::Integer(w.round() as i64)]),
            ]
        })
        .collect();
    let cid_font = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "CIDFontType2",
        "BaseFont" => Object::Name(sub.name.clone().into_bytes()),
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
    let to_unicode = doc.add_object(Stream::new(dictionary! {}, cmap(&sub.glyphs).into_bytes()));
    Ok(doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type0",
        "BaseFont" => Object::Name(sub.name.clone().into_bytes()),
        "Encoding" => "Identity-H",
        "DescendantFonts" => vec![Object::Reference(cid_font)],
        "ToUnicode" => to_unicode,
    }))
}

/// The ToUnicode CMap: each used glyph to its character (UTF-16BE).
fn cmap(glyphs: &BTreeMap<u16, (char, f32)>) -> String {
    let mut s = String::from(
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n",
    );
    let pairs: Vec<(&u16, &char)> = glyphs.iter().map(|(g, (c, _))| (g, c)).collect();
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
