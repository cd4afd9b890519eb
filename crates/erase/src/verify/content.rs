//! What a sampled block held, as far as a "not the old data" check needs
//! to know: blank (all 0x00 or all 0xFF) or the SHA-256 of its bytes, never
//! the bytes; and the word an erase journal keeps for it.

use sha2::{Digest, Sha256};

/// What a block held, as far as the verification needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// Every byte 0x00.
    Zero,
    /// Every byte 0xFF.
    Ones,
    /// Anything else: its SHA-256.
    Data([u8; 32]),
}

impl Content {
    /// Classify one block.
    pub fn of(block: &[u8]) -> Content {
        if block.iter().all(|&b| b == 0) {
            Content::Zero
        } else if block.iter().all(|&b| b == 0xFF) {
            Content::Ones
        } else {
            Content::Data(Sha256::digest(block).into())
        }
    }

    /// Blank: all zeroes or all 0xFF (what an erase may leave).
    pub(crate) fn blank(self) -> bool {
        matches!(self, Content::Zero | Content::Ones)
    }

    /// The word the journal keeps: `0` (zeroes), `F` (0xFF), else the
    /// SHA-256 in hex.
    pub fn token(self) -> String {
        match self {
            Content::Zero => "0".into(),
            Content::Ones => "F".into(),
            Content::Data(d) => d.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    /// A journal word back; None when it is not one [`Content::token`]
    /// writes.
    pub fn from_token(t: &str) -> Option<Content> {
        match t {
            "0" => Some(Content::Zero),
            "F" => Some(Content::Ones),
            _ if t.len() == 64 && t.is_ascii() => {
                let mut d = [0u8; 32];
                for (i, b) in d.iter_mut().enumerate() {
                    *b = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).ok()?;
                }
                Some(Content::Data(d))
            }
            _ => None,
        }
    }
}
