//! Pages as positioned marks: text at a baseline, filled rectangles (the
//! QR code's modules, the barcode's bars) and rules, in PDF points from
//! the page's lower-left corner. [`Flow`] fills pages top to bottom,
//! wrapping text to its column and starting a new page where the next
//! line would run into the footer, so nothing is placed outside a page.

pub mod cert;
pub mod codes;
pub mod fields;
pub mod font;

use crate::Paper;
use font::{wrap, Font};

/// Margin on every side, points (15 mm).
pub const MARGIN: f32 = 42.5;
/// Height kept free at the bottom of each page for the footer, points.
const FOOTER: f32 = 20.0;

/// One mark on a page.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// Text whose baseline starts at (x, y).
    Text {
        /// Left edge.
        x: f32,
        /// Baseline.
        y: f32,
        /// Font size, points.
        size: f32,
        /// The text (one line).
        text: String,
    },
    /// A filled black rectangle with its lower-left corner at (x, y).
    Rect {
        /// Left.
        x: f32,
        /// Bottom.
        y: f32,
        /// Width.
        w: f32,
        /// Height.
        h: f32,
    },
    /// A horizontal rule from x1 to x2 at height y.
    Rule {
        /// Start.
        x1: f32,
        /// End.
        x2: f32,
        /// Height.
        y: f32,
    },
}

/// A laid-out document.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// Paper of every page.
    pub paper: Paper,
    /// The pages' marks.
    pub pages: Vec<Vec<Item>>,
}

/// Fills pages from the top: the current page, the pen's height, and the
/// font that measures.
pub struct Flow<'f> {
    /// The font.
    pub font: &'f Font,
    paper: Paper,
    pages: Vec<Vec<Item>>,
    /// Baseline of the next line's top, points from the bottom.
    pub y: f32,
}

/// Line height for a font size.
pub fn leading(size: f32) -> f32 {
    size * 1.3
}

impl<'f> Flow<'f> {
    /// A flow on one empty page.
    pub fn new(font: &'f Font, paper: Paper) -> Flow<'f> {
        Flow {
            font,
            paper,
            pages: vec![Vec::new()],
            y: paper.size().1 - MARGIN,
        }
    }

    /// Left edge of the text column.
    pub fn left(&self) -> f32 {
        MARGIN
    }

    /// Width of the text column.
    pub fn width(&self) -> f32 {
        self.paper.size().0 - 2.0 * MARGIN
    }

    /// Lowest height the body may reach.
    fn floor(&self) -> f32 {
        MARGIN + FOOTER
    }

    /// Start a new page when less than `h` points are left on this one.
    pub fn need(&mut self, h: f32) {
        if self.y - h < self.floor() {
            self.pages.push(Vec::new());
            self.y = self.paper.size().1 - MARGIN;
        }
    }

    /// Add a mark to the current page.
    pub fn push(&mut self, it: Item) {
        if let Some(p) = self.pages.last_mut() {
            p.push(it);
        }
    }

    /// Move the pen down by `h`.
    pub fn down(&mut self, h: f32) {
        self.y -= h;
    }

    /// One line of text at `x` on the pen's line (the pen does not move).
    pub fn text_at(&mut self, x: f32, size: f32, text: &str) {
        if !text.is_empty() {
            let y = self.y - size;
            self.push(Item::Text {
                x,
                y,
                size,
                text: text.to_string(),
            });
        }
    }

    /// A paragraph across `width` from `x`, wrapped, breaking pages.
    pub fn para(&mut self, x: f32, width: f32, size: f32, text: &str) {
        for line in wrap(self.font, text, size, width) {
            self.need(leading(size));
            self.text_at(x, size, &line);
            self.down(leading(size));
        }
    }

    /// The height [`Flow::para`] takes for `text` across `width`.
    pub fn para_height(&self, width: f32, size: f32, text: &str) -> f32 {
        wrap(self.font, text, size, width).len() as f32 * leading(size)
    }

    /// The height [`Flow::row`] takes for `cols`.
    pub fn row_height(&self, size: f32, cols: &[(f32, f32, &str)]) -> f32 {
        let n = cols
            .iter()
            .map(|(_, w, t)| wrap(self.font, t, size, *w).len())
            .max()
            .unwrap_or(0);
        n as f32 * leading(size)
    }

    /// A row of columns: each `(x, width, text)` wrapped in its column,
    /// line by line, pages breaking between lines.
    pub fn row(&mut self, size: f32, cols: &[(f32, f32, &str)]) {
        let wrapped: Vec<Vec<String>> = cols
            .iter()
            .map(|(_, w, t)| wrap(self.font, t, size, *w))
            .collect();
        let n = wrapped.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..n {
            self.need(leading(size));
            for (c, lines) in cols.iter().zip(&wrapped) {
                if let Some(l) = lines.get(i) {
                    self.text_at(c.0, size, l);
                }
            }
            self.down(leading(size));
        }
    }

    /// A section heading, kept with at least two lines after it.
    pub fn heading(&mut self, text: &str) {
        let size = 11.0;
        self.need(leading(size) + 3.0 * leading(9.0));
        self.down(4.0);
        let (x, w) = (self.left(), self.width());
        self.para(x, w, size, text);
        let y = self.y + 2.0;
        self.push(Item::Rule {
            x1: x,
            x2: x + w,
            y,
        });
        self.down(2.0);
    }

    /// The finished pages, each with its footer: `footer` on the left and
    /// "page i of n" on the right.
    pub fn finish(self, footer: &str) -> Doc {
        let n = self.pages.len();
        let size = 6.5;
        let right_edge = self.paper.size().0 - MARGIN;
        let footer_w = self.width() - 60.0;
        let pages = self
            .pages
            .into_iter()
            .enumerate()
            .map(|(i, mut p)| {
                let pageno = format!("page {} of {n}", i + 1);
                let w = self.font.width(&pageno, size);
                p.push(Item::Text {
                    x: right_edge - w,
                    y: MARGIN,
                    size,
                    text: pageno,
                });
                // The footer is one line; a longer one is cut to its column.
                if let Some(line) = wrap(self.font, footer, size, footer_w).first() {
                    p.push(Item::Text {
                        x: MARGIN,
                        y: MARGIN,
                        size,
                        text: line.clone(),
                    });
                }
                p
            })
            .collect();
        Doc {
            paper: self.paper,
            pages,
        }
    }
}
