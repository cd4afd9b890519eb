//! A certificate PDF taken apart for `drivelab erase verify-cert`: its
//! attached record (the one file of its EmbeddedFiles tree, which its /AF
//! names) and a check that its pages show that record. The pages are
//! rendered afresh from the attachment, on the PDF's paper, and compared
//! page by page: the drawing operators, the embedded font program, its
//! widths and Unicode map, and that no page carries annotations or other
//! resources that could draw over the body. A changed value on a page is
//! named by the first line that differs.

use std::collections::HashMap;

use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, Object, ObjectId};

use drivelab_erase::cert::{check_signature, CertError, Trust, Verified};

use crate::{Paper, PdfError};

/// What a certificate PDF holds.
pub struct Opened {
    /// The attached record, exactly as embedded.
    pub bytes: Vec<u8>,
    /// The attachment's file name.
    pub name: String,
    /// The paper of its first page.
    pub paper: Paper,
    doc: Document,
}

fn unreadable(s: impl Into<String>) -> PdfError {
    PdfError::Unreadable(s.into())
}

fn deref<'a>(doc: &'a Document, o: &'a Object) -> Result<&'a Object, PdfError> {
    doc.dereference(o)
        .map(|(_, o)| o)
        .map_err(|e| unreadable(format!("a broken object reference ({e})")))
}

fn dict<'a>(doc: &'a Document, d: &'a Dictionary, key: &str) -> Result<&'a Dictionary, PdfError> {
    let o = d
        .get(key.as_bytes())
        .map_err(|_| unreadable(format!("no /{key}")))?;
    deref(doc, o)?
        .as_dict()
        .map_err(|_| unreadable(format!("/{key} is not a dictionary")))
}

fn text(o: &Object) -> String {
    match o {
        Object::String(b, _) if b.starts_with(&[0xfe, 0xff]) => {
            let u: Vec<u16> = b[2..]
                .chunks(2)
                .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))
                .collect();
            String::from_utf16_lossy(&u)
        }
        Object::String(b, _) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    }
}

/// Parse a PDF and find its attached record.
pub fn open(pdf: &[u8]) -> Result<Opened, PdfError> {
    let doc =
        Document::load_mem(pdf).map_err(|e| unreadable(format!("not a readable PDF ({e})")))?;
    let catalog = doc
        .catalog()
        .map_err(|e| unreadable(format!("no document catalog ({e})")))?;
    let names = dict(&doc, catalog, "Names")
        .and_then(|n| dict(&doc, n, "EmbeddedFiles"))
        .map_err(|e| {
            unreadable(format!(
                "no attached certificate record ({e}): not a drivelab certificate PDF"
            ))
        })?;
    let list = names
        .get(b"Names")
        .ok()
        .and_then(|o| deref(&doc, o).ok())
        .and_then(|o| o.as_array().ok())
        .ok_or_else(|| unreadable("the EmbeddedFiles tree has no /Names array"))?;
    let [name, spec] = list.as_slice() else {
        return Err(unreadable(format!(
            "{} attachments where a certificate PDF has exactly one",
            list.len() / 2
        )));
    };
    let spec_id = spec.as_reference().ok();
    let af_ok = catalog
        .get(b"AF")
        .ok()
        .and_then(|o| deref(&doc, o).ok())
        .and_then(|o| o.as_array().ok())
        .is_some_and(|a| a.len() == 1 && a[0].as_reference().ok() == spec_id && spec_id.is_some());
    if !af_ok {
        return Err(unreadable(
            "the catalog's /AF does not name the attached record alone",
        ));
    }
    let spec = deref(&doc, spec)?
        .as_dict()
        .map_err(|_| unreadable("the attachment's file specification is not a dictionary"))?;
    let ef = dict(&doc, spec, "EF")?;
    let stream = ef
        .get(b"F")
        .ok()
        .and_then(|o| deref(&doc, o).ok())
        .and_then(|o| o.as_stream().ok())
        .ok_or_else(|| unreadable("the attachment has no embedded file stream"))?;
    let bytes = stream
        .get_plain_content()
        .map_err(|e| unreadable(format!("the attachment cannot be decoded ({e})")))?;
    let paper = first_paper(&doc)?;
    Ok(Opened {
        bytes,
        name: text(name),
        paper,
        doc,
    })
}

fn first_paper(doc: &Document) -> Result<Paper, PdfError> {
    let (_, id) = doc
        .get_pages()
        .into_iter()
        .next()
        .ok_or_else(|| unreadable("the PDF has no pages"))?;
    let page = doc
        .get_dictionary(id)
        .map_err(|_| unreadable("a page is not a dictionary"))?;
    let media = page
        .get(b"MediaBox")
        .ok()
        .and_then(|o| o.as_array().ok())
        .ok_or_else(|| unreadable("the first page has no /MediaBox"))?;
    let num = |i: usize| media.get(i).and_then(|o| o.as_float().ok()).unwrap_or(0.0);
    Paper::from_size(num(2) - num(0), num(3) - num(1))
        .ok_or_else(|| unreadable("the first page is neither A4 nor Letter"))
}

/// Verify a certificate PDF: its attachment as `verify-cert` verifies a
/// JSON certificate (intact, signed by a key `trust` trusts), then its
/// body against the attachment. A PDF that is not a certificate PDF, a
/// changed attachment or a body that does not show it is
/// [`CertError::Invalid`].
pub fn verify(pdf: &[u8], trust: &Trust) -> Result<Verified, CertError> {
    let o = open(pdf).map_err(|e| CertError::Invalid(e.to_string()))?;
    let text = std::str::from_utf8(&o.bytes)
        .map_err(|_| CertError::Invalid("the attached record is not UTF-8 text".into()))?;
    let signed = check_signature(text)
        .map_err(|e| CertError::Invalid(format!("the attached record: {e}")))?;
    let v = trust.judge(signed)?;
    check_body(&o, text).map_err(|e| CertError::Invalid(e.to_string()))?;
    Ok(v)
}

/// Compare the pages of `o` with the pages its attachment renders to.
pub fn check_body(o: &Opened, text: &str) -> Result<(), PdfError> {
    let want_bytes = crate::certificate_pdf(text, &o.name, o.paper)?;
    let want = Document::load_mem(&want_bytes)?;
    same_keys(&o.doc, &want)?;
    let (have_pages, want_pages) = (o.doc.get_pages(), want.get_pages());
    if have_pages.len() != want_pages.len() {
        return Err(PdfError::BodyMismatch(format!(
            "it has {} pages where the record renders to {}",
            have_pages.len(),
            want_pages.len()
        )));
    }
    for ((n, have), (_, want_id)) in have_pages.iter().zip(&want_pages) {
        let page = |doc: &Document, id: ObjectId| -> Result<(Vec<u8>, Vec<Vec<u8>>), PdfError> {
            let content = doc
                .get_page_content(id)
                .map_err(|e| unreadable(format!("page {n}: unreadable content ({e})")))?;
            Ok((content, resources(doc, id, *n)?))
        };
        let (hc, hr) = page(&o.doc, *have)?;
        let (wc, wr) = page(&want, *want_id)?;
        if hr != wr {
            return Err(PdfError::BodyMismatch(format!(
                "page {n}: its boxes, font or resources differ from the ones the record renders with"
            )));
        }
        let (ho, wo) = (operations(&hc, *n)?, operations(&wc, *n)?);
        let key = |ops: &[Operation]| -> Vec<String> {
            ops.iter()
                .map(|o| format!("{} {:?}", o.operator, o.operands))
                .collect()
        };
        if key(&ho) != key(&wo) {
            let chars = glyph_chars(&want, *want_id).unwrap_or_default();
            return Err(PdfError::BodyMismatch(first_difference(
                *n, &ho, &wo, &chars,
            )));
        }
    }
    Ok(())
}

/// The catalog and the page tree's root hold exactly the keys drivelab
/// writes: an extra one (an open action, optional content, a page
/// attribute every page inherits) could change what is shown.
fn same_keys(have: &Document, want: &Document) -> Result<(), PdfError> {
    fn keys(doc: &Document) -> Result<[Vec<Vec<u8>>; 2], PdfError> {
        let cat = doc
            .catalog()
            .map_err(|e| unreadable(format!("no document catalog ({e})")))?;
        let pages = dict(doc, cat, "Pages")?;
        let k = |d: &Dictionary| d.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        Ok([k(cat), k(pages)])
    }
    let (h, w) = (keys(have)?, keys(want)?);
    for (what, h, w) in [("catalog", &h[0], &w[0]), ("page tree", &h[1], &w[1])] {
        if let Some(extra) = h.iter().find(|k| !w.contains(k)) {
            return Err(PdfError::BodyMismatch(format!(
                "the {what} carries /{}, which a certificate PDF never has",
                String::from_utf8_lossy(extra)
            )));
        }
    }
    Ok(())
}

/// What a page draws with, decoded: its resource dictionary's keys, and
/// for its one font the font program, widths and Unicode map. A page with
/// annotations is refused: they draw over the body.
fn resources(doc: &Document, id: ObjectId, n: u32) -> Result<Vec<Vec<u8>>, PdfError> {
    let page = doc
        .get_dictionary(id)
        .map_err(|_| unreadable(format!("page {n} is not a dictionary")))?;
    if page.has(b"Annots") {
        return Err(PdfError::BodyMismatch(format!(
            "page {n} carries annotations, which a certificate page never has"
        )));
    }
    // The page's own keys and boxes: a crop box, a rotation or a
    // user unit changes what is shown as surely as the drawing does.
    let mut out: Vec<Vec<u8>> = page.iter().map(|(k, _)| k.clone()).collect();
    let res = dict(doc, page, "Resources")?;
    out.extend(res.iter().map(|(k, _)| k.clone()));
    // Key order is the writer's (a rewrite by qpdf sorts them).
    out.sort();
    let media: Vec<String> = page
        .get(b"MediaBox")
        .ok()
        .and_then(|o| deref(doc, o).ok())
        .and_then(|o| o.as_array().ok())
        .map(|a| {
            a.iter()
                .map(|v| format!("{:.2}", v.as_float().unwrap_or(f32::NAN)))
                .collect()
        })
        .unwrap_or_default();
    out.push(media.join(" ").into_bytes());
    let fonts = dict(doc, res, "Font")?;
    out.extend(fonts.iter().map(|(k, _)| k.clone()));
    let f1 = dict(doc, fonts, "F1")?;
    let stream_of = |d: &Dictionary, key: &str| -> Result<Vec<u8>, PdfError> {
        d.get(key.as_bytes())
            .ok()
            .and_then(|o| deref(doc, o).ok())
            .and_then(|o| o.as_stream().ok())
            .and_then(|s| s.get_plain_content().ok())
            .ok_or_else(|| unreadable(format!("page {n}: the font has no readable /{key}")))
    };
    out.push(stream_of(f1, "ToUnicode")?);
    let cid = f1
        .get(b"DescendantFonts")
        .ok()
        .and_then(|o| deref(doc, o).ok())
        .and_then(|o| o.as_array().ok())
        .and_then(|a| a.first())
        .and_then(|o| deref(doc, o).ok())
        .and_then(|o| o.as_dict().ok())
        .ok_or_else(|| unreadable(format!("page {n}: the font has no descendant font")))?;
    let w = cid
        .get(b"W")
        .ok()
        .and_then(|o| deref(doc, o).ok())
        .map(|o| format!("{o:?}").into_bytes())
        .unwrap_or_default();
    out.push(w);
    let desc = dict(doc, cid, "FontDescriptor")?;
    out.push(stream_of(desc, "FontFile2")?);
    Ok(out)
}

/// A page's drawing operators with their operands, whatever the layout
/// of the stream (a rewrite by qpdf changes spacing, not operations).
fn operations(content: &[u8], n: u32) -> Result<Vec<Operation>, PdfError> {
    Content::decode(content)
        .map(|c| c.operations)
        .map_err(|e| PdfError::BodyMismatch(format!("page {n}: its drawing cannot be read ({e})")))
}

/// The first text that differs between two pages' operations, in words.
fn first_difference(
    n: u32,
    have: &[Operation],
    want: &[Operation],
    chars: &HashMap<u16, char>,
) -> String {
    let texts = |ops: &[Operation]| -> Vec<String> {
        ops.iter()
            .filter(|o| o.operator == "Tj")
            .filter_map(|o| match o.operands.first() {
                Some(Object::String(b, _)) => Some(
                    b.chunks(2)
                        .map(|g| {
                            let g = u16::from_be_bytes([g[0], *g.get(1).unwrap_or(&0)]);
                            chars.get(&g).copied().unwrap_or('?')
                        })
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    };
    let (h, w) = (texts(have), texts(want));
    match h.iter().zip(&w).find(|(a, b)| a != b) {
        Some((a, b)) => format!("page {n} shows \"{a}\" where the record says \"{b}\""),
        None => format!("page {n}'s drawing differs from the page the record renders to"),
    }
}

/// The character of each glyph id of a page's font `F1`, from its
/// ToUnicode map.
fn glyph_chars(doc: &Document, page: ObjectId) -> Result<HashMap<u16, char>, PdfError> {
    let page = doc
        .get_dictionary(page)
        .map_err(|_| unreadable("a page is not a dictionary"))?;
    let res = dict(doc, page, "Resources")?;
    let f1 = dict(doc, dict(doc, res, "Font")?, "F1")?;
    let cmap = f1
        .get(b"ToUnicode")
        .ok()
        .and_then(|o| deref(doc, o).ok())
        .and_then(|o| o.as_stream().ok())
        .and_then(|s| s.get_plain_content().ok())
        .ok_or_else(|| unreadable("the font has no readable /ToUnicode"))?;
    let mut m = HashMap::new();
    for line in String::from_utf8_lossy(&cmap).lines() {
        let parts: Vec<&str> = line
            .split(['<', '>'])
            .filter(|p| !p.trim().is_empty())
            .collect();
        if let [g, u] = parts.as_slice() {
            let units: Vec<u16> = (0..u.len() / 4)
                .filter_map(|i| u16::from_str_radix(u.get(4 * i..4 * i + 4)?, 16).ok())
                .collect();
            if let (Ok(g), Some(c)) = (
                u16::from_str_radix(g, 16),
                char::decode_utf16(units).next().and_then(Result::ok),
            ) {
                m.insert(g, c);
            }
        }
    }
    Ok(m)
}

/// The characters of the glyph ids on the first page of a PDF, from its
/// font's ToUnicode map (for reading, and for tests that change a page).
pub fn first_page_glyphs(pdf: &[u8]) -> Result<HashMap<u16, char>, PdfError> {
    let doc = Document::load_mem(pdf)?;
    let (_, id) = doc
        .get_pages()
        .into_iter()
        .next()
        .ok_or_else(|| unreadable("the PDF has no pages"))?;
    glyph_chars(&doc, id)
}
