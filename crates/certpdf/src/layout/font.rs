//! The one font every page is set in, DejaVu Sans, compiled into the
//! binary, and its advance widths, which wrapping measures with.

use std::collections::BTreeMap;

/// DejaVu Sans (Bitstream Vera licence; `assets/DejaVuSans-LICENSE`).
pub const FONT_FILE: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// The parsed font: glyph ids and widths of the characters used.
pub struct Font {
    face: ttf_parser::Face<'static>,
    upem: f32,
}

impl Font {
    /// The embedded font.
    pub fn get() -> Font {
        // The file is part of the binary and tested to parse.
        let face = match ttf_parser::Face::parse(FONT_FILE, 0) {
            Ok(f) => f,
            Err(e) => panic!("the embedded font does not parse: {e}"),
        };
        let upem = f32::from(face.units_per_em());
        Font { face, upem }
    }

    /// The glyph of `c`, the replacement glyph (`?`) when the font has none.
    pub fn glyph(&self, c: char) -> u16 {
        self.face
            .glyph_index(c)
            .or_else(|| self.face.glyph_index('?'))
            .map(|g| g.0)
            .unwrap_or(0)
    }

    /// Advance of glyph `g` in thousandths of an em (PDF's glyph space).
    pub fn advance(&self, g: u16) -> f32 {
        let a = self
            .face
            .glyph_hor_advance(ttf_parser::GlyphId(g))
            .unwrap_or(0);
        f32::from(a) * 1000.0 / self.upem
    }

    /// Width of `s` at `size` points.
    pub fn width(&self, s: &str, size: f32) -> f32 {
        s.chars().map(|c| self.advance(self.glyph(c))).sum::<f32>() * size / 1000.0
    }

    /// Ascent and descent (negative) in thousandths of an em.
    pub fn metrics(&self) -> (f32, f32) {
        let k = 1000.0 / self.upem;
        (
            f32::from(self.face.ascender()) * k,
            f32::from(self.face.descender()) * k,
        )
    }

    /// Font bounding box in thousandths of an em.
    pub fn bbox(&self) -> [f32; 4] {
        let b = self.face.global_bounding_box();
        let k = 1000.0 / self.upem;
        [
            f32::from(b.x_min) * k,
            f32::from(b.y_min) * k,
            f32::from(b.x_max) * k,
            f32::from(b.y_max) * k,
        ]
    }

    /// The characters of every glyph used in `texts`, by glyph (for the
    /// widths array and the ToUnicode map).
    pub fn used<'a>(&self, texts: impl Iterator<Item = &'a str>) -> BTreeMap<u16, char> {
        let mut m = BTreeMap::new();
        for t in texts {
            for c in t.chars() {
                m.entry(self.glyph(c)).or_insert(c);
            }
        }
        m
    }
}

/// Split `s` into lines no wider than `width` at `size`: at spaces where
/// it can, inside a word where a word alone is too wide (a 40-character
/// serial, a hash), so that no line ever overflows. Explicit newlines are
/// kept.
pub fn wrap(font: &Font, s: &str, size: f32, width: f32) -> Vec<String> {
    let mut out = Vec::new();
    for para in s.split('\n') {
        let mut line = String::new();
        for word in para.split(' ') {
            let candidate = if line.is_empty() {
                word.to_string()
            } else {
                format!("{line} {word}")
            };
            if font.width(&candidate, size) <= width {
                line = candidate;
                continue;
            }
            if !line.is_empty() {
                out.push(std::mem::take(&mut line));
            }
            // The word alone: cut it where it no longer fits.
            for c in word.chars() {
                let mut next = line.clone();
                next.push(c);
                if font.width(&next, size) > width && !line.is_empty() {
                    out.push(std::mem::take(&mut line));
                    line.push(c);
                } else {
                    line = next;
                }
            }
        }
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_lines_never_exceed_the_width() {
        let f = Font::get();
        let long_serial = "WD-WX12A3456789B-0123456789ABCDEFGHIJKLMN";
        let model =
            "Western Digital Ultrastar DC HC550 WUH721818ALE6L4 with a very long marketing name";
        for (s, w) in [(long_serial, 60.0), (model, 120.0), ("a b c", 5.0)] {
            let lines = wrap(&f, s, 9.0, w);
            assert!(lines.len() > 1, "{s}");
            for l in &lines {
                // A single glyph wider than the column is the only excess.
                assert!(f.width(l, 9.0) <= w || l.chars().count() == 1, "{l}");
            }
            assert_eq!(lines.concat().replace(' ', ""), s.replace(' ', ""));
        }
        assert_eq!(wrap(&f, "", 9.0, 100.0), vec![String::new()]);
    }
}
