//! Keys and signatures of certificates.
//!
//! The signature is Ed25519 over the canonical JSON of the `certificate`
//! object (serde_json's compact form of a `Value`, whose object keys are
//! sorted), so it survives re-indenting but not a changed value. The
//! signing key is created once, on first use, in `$XDG_CONFIG_HOME/drivelab`
//! (else `~/.config/drivelab`), mode 0600, with its public half beside it.
//! [`check_signature`] only says whether a certificate is intact and which
//! key signed it; whether that key is trusted is [`crate::cert::trust`]'s
//! question.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use drivelab_device::input::{self, Kind};
use drivelab_device::output::Output;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

use super::model::{Certificate, FORMAT};
use crate::EraseError;

/// Name of the secret key file in the config dir.
pub const KEY_FILE: &str = "erase-signing.key";
/// Name of the public key file in the config dir.
pub const PUB_FILE: &str = "erase-signing.pub";

/// The config dir holding the signing key.
pub fn config_dir() -> Result<PathBuf, EraseError> {
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(x).join("drivelab"));
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".config").join("drivelab")),
        None => Err(EraseError::Key {
            path: PathBuf::from("~/.config/drivelab"),
            why: "neither XDG_CONFIG_HOME nor HOME is set; set one of them".into(),
        }),
    }
}

fn key_err(path: &Path, e: impl std::fmt::Display) -> EraseError {
    EraseError::Key {
        path: path.to_path_buf(),
        why: e.to_string(),
    }
}

/// Bytes as lower-case hex.
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Load the signing key from `dir`, creating it (0600, dir 0700) the first
/// time from the kernel's random source.
pub fn load_or_create_key(dir: &Path) -> Result<SigningKey, EraseError> {
    let path = dir.join(KEY_FILE);
    match input::read_string(&path, Kind::SigningKey) {
        Ok(text) => {
            let b = unhex(&text).filter(|b| b.len() == 32).ok_or_else(|| {
                key_err(&path, "not 64 hex digits; move it away to create a new key")
            })?;
            let mut a = [0u8; 32];
            a.copy_from_slice(&b);
            return Ok(SigningKey::from_bytes(&a));
        }
        Err(input::InputError::Missing { .. }) => {}
        Err(e) => return Err(key_err(&path, e)),
    }
    fs::create_dir_all(dir).map_err(|e| key_err(dir, e))?;
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    let mut seed = [0u8; 32];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut seed))
        .map_err(|e| key_err(Path::new("/dev/urandom"), e))?;
    let key = SigningKey::from_bytes(&seed);
    // Written whole or not at all, and never over a key another process
    // made meanwhile.
    Output::new(&path)
        .option("signing key")
        .mode(0o600)
        .no_replace()
        .write(format!("{}\n", hex(&seed)).as_bytes())
        .map_err(|e| key_err(&path, e))?;
    let pub_path = dir.join(PUB_FILE);
    Output::new(&pub_path)
        .option("public key")
        .write(format!("{}\n", hex(key.verifying_key().as_bytes())).as_bytes())
        .map_err(|e| key_err(&pub_path, e))?;
    Ok(key)
}

/// The public key in the config dir, if one exists.
pub fn local_public_key(dir: &Path) -> Option<VerifyingKey> {
    let text = input::read_string(&dir.join(PUB_FILE), Kind::PublicKey).ok()?;
    parse_public_key(&text)
}

/// A public key from 64 hex digits.
pub fn parse_public_key(s: &str) -> Option<VerifyingKey> {
    let b = unhex(s).filter(|b| b.len() == 32)?;
    let mut a = [0u8; 32];
    a.copy_from_slice(&b);
    VerifyingKey::from_bytes(&a).ok()
}

fn canonical(v: &serde_json::Value) -> Vec<u8> {
    // serde_json's Value keeps object keys sorted (BTreeMap), so this is
    // the same bytes whatever the file's layout.
    serde_json::to_vec(v).unwrap_or_default()
}

/// What the signature covers, as the file says it.
const SIGNED: &str = "canonical JSON of the certificate object (compact, keys sorted)";

/// The only keys of a certificate file, and of its `signature` object: any
/// other field would be one the signature does not cover.
const TOP_KEYS: [&str; 2] = ["certificate", "signature"];
const SIGNATURE_KEYS: [&str; 4] = ["algorithm", "signed", "public_key", "value"];

/// Refuse a key of `obj` outside `allowed`: the signature does not cover it.
fn only_keys(obj: &serde_json::Value, allowed: &[&str], what: &str) -> Result<(), String> {
    let Some(map) = obj.as_object() else {
        return Err(format!("{what} is not a JSON object"));
    };
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "field {k:?} in {what} is not covered by the signature: the file was changed after signing"
        )),
        None => Ok(()),
    }
}

/// The signed file's content: `{certificate, signature}` as pretty JSON.
pub fn sign(cert: &Certificate, key: &SigningKey) -> Result<String, EraseError> {
    let body = serde_json::to_value(cert).map_err(|e| EraseError::Certificate(e.to_string()))?;
    let sig = key.sign(&canonical(&body));
    let doc = serde_json::json!({
        "certificate": body,
        "signature": {
            "algorithm": "ed25519",
            "signed": SIGNED,
            "public_key": hex(key.verifying_key().as_bytes()),
            "value": hex(&sig.to_bytes()),
        }
    });
    serde_json::to_string_pretty(&doc).map_err(|e| EraseError::Certificate(e.to_string()))
}

/// A certificate whose signature is intact, and the key that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Signed {
    /// The certificate.
    pub certificate: Certificate,
    /// The key embedded in the file, which made the signature.
    pub key: VerifyingKey,
    /// That key in hex.
    pub public_key: String,
}

/// Check a certificate file's text: a drivelab certificate whose signature
/// matches the key embedded in it. Whether that key is trusted is not
/// asked here. A key held twice at any depth, or a field outside the
/// signed `certificate` object (other than the signature's own four), makes
/// it invalid: other readers would see what the signature does not cover.
/// The error is one line saying what is wrong.
pub fn check_signature(text: &str) -> Result<Signed, String> {
    let doc = super::strict::parse(text).map_err(|e| format!("not valid JSON ({e})"))?;
    let body = doc
        .get("certificate")
        .ok_or("no \"certificate\" object: not a drivelab erase certificate")?;
    let sig = doc
        .get("signature")
        .ok_or("no \"signature\" object: the certificate is unsigned")?;
    only_keys(&doc, &TOP_KEYS, "the file")?;
    only_keys(sig, &SIGNATURE_KEYS, "the signature")?;
    if sig.get("signed").and_then(|v| v.as_str()) != Some(SIGNED) {
        return Err(format!(
            "signature \"signed\" is not {SIGNED:?}: the file was changed after signing"
        ));
    }
    let alg = sig.get("algorithm").and_then(|v| v.as_str()).unwrap_or("");
    if alg != "ed25519" {
        return Err(format!("unknown signature algorithm {alg:?}"));
    }
    let pk_hex = sig
        .get("public_key")
        .and_then(|v| v.as_str())
        .ok_or("signature has no public_key")?;
    let pk = parse_public_key(pk_hex).ok_or("signature public_key is not a valid Ed25519 key")?;
    let sv = sig
        .get("value")
        .and_then(|v| v.as_str())
        .and_then(unhex)
        .filter(|b| b.len() == 64)
        .ok_or("signature value is not 128 hex digits")?;
    let mut sa = [0u8; 64];
    sa.copy_from_slice(&sv);
    let signature = Signature::from_bytes(&sa);
    pk.verify(&canonical(body), &signature).map_err(|_| {
        "signature does not match the certificate: it was changed after signing".to_string()
    })?;
    let format = body.get("format").and_then(|v| v.as_str()).unwrap_or("");
    if format != FORMAT {
        return Err(format!("unknown certificate format {format:?}"));
    }
    let certificate: Certificate = serde_json::from_value(body.clone())
        .map_err(|e| format!("certificate fields are malformed ({e})"))?;
    Ok(Signed {
        certificate,
        key: pk,
        public_key: hex(pk.as_bytes()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cert::tests::sample;

    #[test]
    fn signature_survives_layout_but_not_a_changed_value() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let text = sign(&sample(), &key).unwrap();
        let v = check_signature(&text).unwrap();
        assert_eq!(v.certificate, sample());
        assert_eq!(v.key, key.verifying_key());
        // Re-indented: still valid.
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(check_signature(&serde_json::to_string(&doc).unwrap()).is_ok());
        // One changed digit in the capacity.
        let cap = (1u64 << 30).to_string();
        let tampered = text.replacen(&cap, &(1u64 << 29).to_string(), 1);
        assert_ne!(tampered, text);
        let e = check_signature(&tampered).unwrap_err();
        assert!(e.contains("changed after signing"), "{e}");
        // Another key is refused when a trusted key is given.
        let other = SigningKey::from_bytes(&[8u8; 32]);
        let mut trust = crate::cert::Trust::none();
        trust
            .add_public_key(&hex(other.verifying_key().as_bytes()))
            .unwrap();
        let e = trust.judge(v).unwrap_err().to_string();
        assert!(e.contains("not by the trusted key"), "{e}");
        assert!(check_signature("{").unwrap_err().contains("not valid JSON"));
    }

    #[test]
    fn signature_survives_floats_that_best_effort_parsing_would_round() {
        // Without serde_json's float_roundtrip, some of these came back one
        // ulp off after parsing and the signature failed (8-drive test).
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let mut x = 0.1f64;
        for i in 0..150 {
            let mut c = sample();
            c.timing.erase_seconds = x;
            c.timing.verify_seconds = 1.0 / (f64::from(i) + 3.0);
            c.timing.duration_seconds = x * 1e-7 + 1234.5678;
            c.verification.coverage_percent = (x * 7.0).sin() * 100.0;
            let text = sign(&c, &key).unwrap();
            let v = check_signature(&text).unwrap_or_else(|e| panic!("{x}: {e}"));
            assert_eq!(v.certificate.timing.erase_seconds.to_bits(), x.to_bits());
            x = x * 1.618_033_988_749_895 + 0.000_123_456_789;
            if x > 1e6 {
                x = x.fract() + 0.3;
            }
        }
    }

    /// A certificate with health before and after: an NVMe drive whose
    /// Data Units Written grew by 2098 (1 GiB written), 45 -> 51 °C.
    fn with_health() -> Certificate {
        use drivelab_device::health::around::{
            AroundWork, DeltaRecord, Reading, WriteCheck, WriteVerdict,
        };
        let reading = |units: u64, kelvin: u64| Reading {
            taken: "t".into(),
            health: Some(serde_json::json!({
                "device": "/dev/nvme0n1",
                "nvme": {"smart": {"data_units_written": units, "temperature_k": kelvin, "media_errors": 0}},
            })),
            error: None,
        };
        let mut c = sample();
        c.health = Some(AroundWork {
            before: reading(10, 318),
            after: reading(2108, 324),
            delta: Some(DeltaRecord {
                verdict_before: "passed".into(),
                verdict_after: "passed".into(),
                counters: vec![("media_errors".into(), 0, 0)],
                temperature_peak_c: Some(51),
                percentage_used: Some((3, 3)),
                written_bytes: Some(2098 * 512_000),
                written_unit_bytes: Some(512_000),
                changes: vec![],
            }),
            writes: Some(WriteCheck {
                expected_bytes: 1 << 30,
                counted_bytes: Some(2098 * 512_000),
                unit_bytes: Some(512_000),
                verdict: WriteVerdict::Corroborated,
                detail: "x".into(),
            }),
        });
        c
    }

    #[test]
    fn health_is_signed_and_a_changed_health_field_is_caught() {
        let key = SigningKey::from_bytes(&[5u8; 32]);
        let c = with_health();
        let text = sign(&c, &key).unwrap();
        let v = check_signature(&text).unwrap();
        assert_eq!(v.certificate, c, "health read back as signed");
        assert!(text.contains("\"temperature_peak_c\": 51"));
        for (from, to) in [
            // The peak temperature lowered.
            ("\"temperature_peak_c\": 51", "\"temperature_peak_c\": 41"),
            // The write counter's verdict turned.
            (
                "\"verdict\": \"corroborated\"",
                "\"verdict\": \"not-counted\"",
            ),
            // A raw counter in the reading after the erase.
            (
                "\"data_units_written\": 2108",
                "\"data_units_written\": 2109",
            ),
        ] {
            assert!(text.contains(from), "{from}");
            let tampered = text.replacen(from, to, 1);
            let e = check_signature(&tampered).unwrap_err();
            assert!(e.contains("changed after signing"), "{from}: {e}");
        }
        // Health removed altogether: also a change.
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        doc["certificate"].as_object_mut().unwrap().remove("health");
        let e = check_signature(&doc.to_string()).unwrap_err();
        assert!(e.contains("changed after signing"), "{e}");
        // A certificate made before health existed still verifies.
        let old = sign(&sample(), &key).unwrap();
        assert!(!old.contains("\"health\""));
        assert_eq!(check_signature(&old).unwrap().certificate.health, None);
    }

    #[test]
    fn parties_are_signed_and_a_changed_organisation_is_caught() {
        let key = SigningKey::from_bytes(&[6u8; 32]);
        let mut c = sample();
        c.parties = Some(crate::cert::PartiesSection {
            organisation: Some("Acme Wipe Ltd".into()),
            customer: crate::cert::Customer {
                name: Some("Globex".into()),
                address: Some("1 Main St".into()),
                contact: None,
            },
            technician: Some("J. Doe".into()),
            asset_tag: Some("AT-0001".into()),
        });
        let text = sign(&c, &key).unwrap();
        assert_eq!(check_signature(&text).unwrap().certificate, c);
        assert!(
            !text.contains("\"contact\""),
            "an absent part is not written"
        );
        for (from, to) in [
            ("\"Acme Wipe Ltd\"", "\"Acme Wipe Inc\""),
            ("\"AT-0001\"", "\"AT-0002\""),
            ("\"J. Doe\"", "\"R. Roe\""),
        ] {
            let e = check_signature(&text.replacen(from, to, 1)).unwrap_err();
            assert!(e.contains("changed after signing"), "{from}: {e}");
        }
        // Added to a certificate signed without them: also a change.
        let old = sign(&sample(), &key).unwrap();
        assert!(!old.contains("\"parties\""));
        let mut doc: serde_json::Value = serde_json::from_str(&old).unwrap();
        doc["certificate"]["parties"] = serde_json::json!({"organisation": "Forged"});
        let e = check_signature(&doc.to_string()).unwrap_err();
        assert!(e.contains("changed after signing"), "{e}");
        assert_eq!(check_signature(&old).unwrap().certificate.parties, None);
    }

    #[test]
    fn duplicate_key_or_unsigned_field_is_invalid() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let text = sign(&sample(), &key).unwrap();
        let signed_result = format!(
            "\"result\": {}",
            serde_json::to_string(&sample().result).unwrap()
        );
        assert!(text.contains(&signed_result), "{text}");
        let cases: Vec<(&str, String, &str)> = vec![
            (
                "forged result first, signed one second",
                text.replacen(
                    &signed_result,
                    &format!("\"result\": \"forged\",\n    {signed_result}"),
                    1,
                ),
                "\"result\" appears twice in $.certificate",
            ),
            (
                "duplicate inside the drive section",
                text.replacen("\"kind\": ", "\"kind\": \"nvme\", \"kind\": ", 1),
                "appears twice in $.certificate.drive",
            ),
            (
                "duplicate signature object",
                text.replacen("\"signature\": {", "\"signature\": {}, \"signature\": {", 1),
                "\"signature\" appears twice in $",
            ),
            (
                "top-level note outside the signed body",
                text.replacen("{", "{\n  \"note\": \"VERIFIED BY ACME\",", 1),
                "field \"note\" in the file is not covered",
            ),
            (
                "field added to the signature object",
                text.replacen("\"algorithm\"", "\"verdict\": \"valid\", \"algorithm\"", 1),
                "field \"verdict\" in the signature is not covered",
            ),
            (
                "signature's description changed",
                text.replacen(SIGNED, "VERIFIED BY ACME", 1),
                "the file was changed after signing",
            ),
        ];
        for (name, tampered, want) in cases {
            assert_ne!(tampered, text, "{name}");
            let e = check_signature(&tampered).unwrap_err();
            assert!(e.contains(want), "{name}: {e}");
        }
        assert!(check_signature(&text).is_ok());
    }

    #[test]
    fn key_is_created_once_with_mode_0600() {
        let dir = std::env::temp_dir().join(format!("dl-key-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let k1 = load_or_create_key(&dir).unwrap();
        let k2 = load_or_create_key(&dir).unwrap();
        assert_eq!(k1.to_bytes(), k2.to_bytes());
        let mode = fs::metadata(dir.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(local_public_key(&dir).unwrap(), k1.verifying_key());
        fs::remove_dir_all(&dir).unwrap();
    }
}
