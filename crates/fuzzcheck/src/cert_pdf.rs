//! Certificate PDFs: `drivelab erase verify-cert FILE.pdf` (the attached
//! record found, verified as a JSON certificate, the pages compared with
//! it).

use drivelab_certpdf::{certificate_pdf, read};
use drivelab_erase::cert::{CertError, Trust};
use ed25519_dalek::SigningKey;

/// The key that signed the seed PDFs' records (`[7; 32]`).
fn trust() -> Trust {
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let hex: String = key
        .verifying_key()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut t = Trust::none();
    t.add_public_key(&hex).expect("the seed key parses");
    t
}

/// A file's bytes as `verify-cert` reads a PDF.
///
/// Invariants: every refusal is one non-empty line and never "bad input"
/// (a file that is not a valid certificate PDF is an invalid
/// certificate); a PDF that verifies has an attachment that is an intact
/// record, and that record rendered again (on the PDF's paper, under its
/// attachment's name) verifies too.
pub fn cert_pdf(data: &[u8]) {
    let trust = trust();
    match read::verify(data, &trust) {
        Ok(v) => {
            let o = read::open(data).expect("a PDF that verifies opens");
            let text = std::str::from_utf8(&o.bytes).expect("its record is text");
            let again = certificate_pdf(text, &o.name, o.paper).expect("its record renders");
            let w = read::verify(&again, &trust).expect("the record rendered again verifies");
            assert_eq!(w.certificate, v.certificate);
        }
        Err(e) => {
            assert!(!matches!(e, CertError::BadInput(_)), "{e}");
            let m = e.to_string();
            assert!(!m.trim().is_empty() && !m.contains('\n'), "{m:?}");
        }
    }
}
