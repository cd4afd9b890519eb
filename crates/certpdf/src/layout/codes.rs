//! The machine-readable marks: a QR code (the record's SHA-256 and the
//! command that verifies it) and a Code 128 barcode (model:serial), drawn
//! as filled rectangles, one per run of dark modules.

use qrcode::{Color, EcLevel, QrCode};

use super::Item;

/// QR modules of `data` as rectangles filling a `side`-point square whose
/// lower-left corner is (x, y), quiet zone included (4 modules).
pub fn qr(data: &str, x: f32, y: f32, side: f32) -> Option<Vec<Item>> {
    let code = QrCode::with_error_correction_level(data.as_bytes(), EcLevel::M).ok()?;
    let n = code.width();
    let colors = code.to_colors();
    let m = side / (n + 8) as f32;
    let mut out = Vec::new();
    for row in 0..n {
        let mut col = 0;
        while col < n {
            if colors[row * n + col] != Color::Dark {
                col += 1;
                continue;
            }
            let start = col;
            while col < n && colors[row * n + col] == Color::Dark {
                col += 1;
            }
            out.push(Item::Rect {
                x: x + (start + 4) as f32 * m,
                y: y + side - (row + 5) as f32 * m,
                w: (col - start) as f32 * m,
                h: m,
            });
        }
    }
    Some(out)
}

/// A Code 128 barcode of `data` (set B: printable ASCII) at most `width`
/// points wide (a module at most 1 point), bars `h` high from (x, y), with
/// its width; None when `data` is not printable ASCII.
pub fn code128(data: &str, x: f32, y: f32, width: f32, h: f32) -> Option<(Vec<Item>, f32)> {
    if data.is_empty() || !data.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
        return None;
    }
    let code = barcoders::sym::code128::Code128::new(format!("Ɓ{data}")).ok()?;
    let bars = code.encode();
    // Quiet zones of 10 modules on either side.
    let modules = bars.len() + 20;
    let m = (width / modules as f32).min(1.0);
    let mut out = Vec::new();
    let mut i = 0;
    while i < bars.len() {
        if bars[i] == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < bars.len() && bars[i] == 1 {
            i += 1;
        }
        out.push(Item::Rect {
            x: x + (start + 10) as f32 * m,
            y,
            w: (i - start) as f32 * m,
            h,
        });
    }
    Some((out, modules as f32 * m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_stay_in_their_boxes() {
        let items = qr(
            "SHA-256 00ff\ndrivelab erase verify-cert x.json",
            10.0,
            20.0,
            100.0,
        )
        .unwrap();
        assert!(!items.is_empty());
        let long = format!("{}:{}", "M".repeat(60), "S".repeat(40));
        let (bars, w) = code128(&long, 10.0, 20.0, 300.0, 30.0).unwrap();
        assert!(w <= 300.0 + 1e-3);
        for it in items.iter().chain(&bars) {
            let Item::Rect { x, y, w, h } = *it else {
                panic!("{it:?}")
            };
            assert!(x >= 10.0 && x + w <= 310.0 + 1e-3 && y >= 20.0 && y + h <= 120.0 + 1e-3);
        }
        assert!(code128("Modell Ü:1", 0.0, 0.0, 100.0, 10.0).is_none());
    }
}
