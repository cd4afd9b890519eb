//! Erase certificates: `drivelab erase verify-cert` (signature check, trust
//! decision) and the public-key parser behind `--public-key`.

use std::sync::OnceLock;

use drivelab_erase::cert::{
    check_signature, html, parse_public_key, sign, CertError, Certificate, Trust,
};
use ed25519_dalek::SigningKey;

/// Real certificates written by `drivelab erase` (on a loop device), the
/// seeds of this target's corpus: (signer's key in hex, certificate).
fn known() -> &'static [(String, Certificate)] {
    static KNOWN: OnceLock<Vec<(String, Certificate)>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        [
            include_str!("../../../fuzz/corpus/cert/erase-zeroout-verified.json"),
            include_str!("../../../fuzz/corpus/cert/erase-zeroout-not-verified.json"),
        ]
        .iter()
        .map(|text| {
            let s = check_signature(text).expect("a seed certificate verifies");
            (s.public_key, s.certificate)
        })
        .collect()
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A certificate file's text as `verify-cert` reads it, and the same bytes
/// as a `--public-key` argument.
///
/// Invariants: a certificate that verifies and names the key of the real
/// seed certificates is exactly one of them (nothing changed
/// after signing gets through); it is accepted by a verifier trusting its
/// key and refused as "not trusted" (not "invalid") by one trusting none;
/// signed again it verifies and reads back equal (sign → check round
/// trip); its HTML page renders; every refusal is one non-empty line; a
/// public key that parses prints as hex that parses back to it.
pub fn cert(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(k) = parse_public_key(text) {
        assert_eq!(parse_public_key(&hex(k.as_bytes())), Some(k));
    }
    let s = match check_signature(text) {
        Ok(s) => s,
        Err(msg) => {
            assert!(!msg.trim().is_empty() && !msg.contains('\n'), "{msg:?}");
            return;
        }
    };
    assert_eq!(s.public_key, hex(s.key.as_bytes()));
    let signed_by_seed_key: Vec<&Certificate> = known()
        .iter()
        .filter(|(key, _)| *key == s.public_key)
        .map(|(_, c)| c)
        .collect();
    if !signed_by_seed_key.is_empty() {
        assert!(
            signed_by_seed_key.contains(&&s.certificate),
            "a certificate changed after signing verified: {:?}",
            s.certificate
        );
    }
    let mut trust = Trust::none();
    trust
        .add_public_key(&s.public_key)
        .expect("the signer's own key parses");
    let v = trust
        .judge(s.clone())
        .expect("the trusted signer is accepted");
    assert_eq!(v.certificate, s.certificate);
    match Trust::none().judge(s.clone()) {
        Err(e @ CertError::Untrusted { .. }) => {
            let m = e.to_string();
            assert!(!m.contains('\n') && !e.is_bad_input(), "{m}");
        }
        other => panic!("a verifier trusting no key gave {other:?}"),
    }
    let key = SigningKey::from_bytes(&[0x5a; 32]);
    let again = sign(&s.certificate, &key).expect("a verified certificate signs");
    let back = check_signature(&again).expect("a freshly signed certificate verifies");
    assert_eq!(back.certificate, s.certificate, "sign → check changed it");
    let page = html(&s.certificate, "fuzz.json", &s.public_key);
    assert!(page.contains("</html>"));
}
