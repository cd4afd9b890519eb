//! Which keys a verifier trusts, and `drivelab erase verify-cert`.
//!
//! Anyone can make a self-consistent signature: change a certificate, sign
//! it with a key of one's own and embed that key. So a certificate is valid
//! only when its signature is intact *and* made by a key the verifier
//! trusts. By default that is this user's own key (the public half of the
//! key this host's erases sign with, `erase-signing.pub` in the config
//! dir). `--public-key HEX|FILE` and `--trusted-keys FILE|DIR` (each may be
//! repeated) replace the default with exactly the keys they name. A trust
//! list holds one key per line, 64 hex digits, optionally followed by a
//! name; blank lines and lines starting with `#` are ignored. A directory
//! means every `*.pub` file in it, each read as a list (a `.pub` file
//! written by drivelab is one key). An intact signature by any other key is
//! "not trusted", a different answer from a changed certificate
//! ("invalid"), and says which key signed it and how to trust it.

use std::fmt;
use std::path::{Path, PathBuf};

use drivelab_device::input::{self, Kind};
use ed25519_dalek::VerifyingKey;

use super::model::Certificate;
use super::sign::{self, check_signature, hex, parse_public_key, Signed};

/// A key the verifier trusts, with where the trust came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    /// The key.
    pub key: VerifyingKey,
    /// In words: "this user's key", "the given key", "trusted key NAME
    /// from FILE".
    pub source: String,
}

/// The keys a verifier trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    keys: Vec<TrustedKey>,
    /// The config dir looked in for this user's key, when that was the
    /// default (for the message when it holds none).
    host_dir: Option<PathBuf>,
}

/// Where the trust comes from, as the command line gives it.
#[derive(Debug, Clone, Default)]
pub struct TrustSources {
    /// `--public-key`: 64 hex digits, or a file holding them.
    pub public_keys: Vec<String>,
    /// `--trusted-keys`: a trust list file or a directory of `*.pub` files.
    pub trusted_keys: Vec<PathBuf>,
    /// The config dir holding this user's key (the default trust).
    pub config_dir: Option<PathBuf>,
}

/// Why a certificate is not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertError {
    /// The file, a key or a trust list cannot be read or parsed: bad input
    /// (the command line's exit status 2).
    BadInput(String),
    /// Not an intact drivelab certificate: changed after signing, unsigned,
    /// or malformed.
    Invalid(String),
    /// Intact, but signed by a key that is not trusted.
    Untrusted {
        /// Hex of the key that signed it.
        signer: String,
        /// Why none of the trusted keys is it, in words.
        not_by: String,
    },
}

impl fmt::Display for CertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CertError::BadInput(s) => f.write_str(s),
            CertError::Invalid(s) => write!(f, "INVALID certificate: {s}"),
            CertError::Untrusted { signer, not_by } => write!(
                f,
                "NOT TRUSTED: the signature is intact, but it was made by key {}…, {not_by}; if you trust its signer, pass their public key with --public-key FILE or --trusted-keys FILE|DIR",
                short(signer)
            ),
        }
    }
}

impl std::error::Error for CertError {}

impl CertError {
    /// Whether the error is bad input (exit status 2) rather than a
    /// certificate that is not valid (1).
    pub fn is_bad_input(&self) -> bool {
        matches!(self, CertError::BadInput(_))
    }
}

/// A certificate that is intact and signed by a trusted key.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The certificate.
    pub certificate: Certificate,
    /// Hex of the key that signed it.
    pub public_key: String,
    /// Which trusted key that is, in words.
    pub signed_by: String,
}

fn short(hex: &str) -> &str {
    &hex[..16.min(hex.len())]
}

fn bad(s: String) -> CertError {
    CertError::BadInput(s)
}

impl Trust {
    /// Trust nothing yet (keys are added with [`Trust::add_public_key`]
    /// and [`Trust::add_list`]).
    pub fn none() -> Trust {
        Trust {
            keys: Vec::new(),
            host_dir: None,
        }
    }

    /// The default: this user's key from `config_dir`, if it has one.
    pub fn host(config_dir: Option<&Path>) -> Trust {
        let keys = config_dir
            .and_then(sign::local_public_key)
            .map(|key| TrustedKey {
                key,
                source: "this user's key".into(),
            })
            .into_iter()
            .collect();
        Trust {
            keys,
            host_dir: config_dir.map(Path::to_path_buf),
        }
    }

    /// The trust the command line asks for: exactly the given keys and
    /// lists, or, when none is given, this user's key.
    pub fn from_sources(src: &TrustSources) -> Result<Trust, CertError> {
        if src.public_keys.is_empty() && src.trusted_keys.is_empty() {
            return Ok(Trust::host(src.config_dir.as_deref()));
        }
        let mut t = Trust::none();
        for k in &src.public_keys {
            t.add_public_key(k)?;
        }
        for p in &src.trusted_keys {
            t.add_list(p)?;
        }
        Ok(t)
    }

    /// The trusted keys.
    pub fn keys(&self) -> &[TrustedKey] {
        &self.keys
    }

    /// Trust one key: 64 hex digits, or a file holding them.
    pub fn add_public_key(&mut self, arg: &str) -> Result<(), CertError> {
        let text = if Path::new(arg).symlink_metadata().is_ok() {
            input::read_string(Path::new(arg), Kind::PublicKey).map_err(|e| bad(e.to_string()))?
        } else {
            arg.to_string()
        };
        let key = parse_public_key(&text).ok_or_else(|| {
            bad(format!(
                "--public-key {arg}: not an Ed25519 public key (64 hex digits)"
            ))
        })?;
        self.keys.push(TrustedKey {
            key,
            source: "the given key".into(),
        });
        Ok(())
    }

    /// Trust every key of a trust list file, or of every `*.pub` file in a
    /// directory. A list without keys is refused (most likely the wrong
    /// path).
    pub fn add_list(&mut self, path: &Path) -> Result<(), CertError> {
        let files = if path.is_dir() {
            pub_files(path)?
        } else {
            vec![path.to_path_buf()]
        };
        let before = self.keys.len();
        for f in &files {
            let text = input::read_string(f, Kind::TrustList).map_err(|e| bad(e.to_string()))?;
            self.keys.extend(parse_list(&text, f)?);
        }
        if self.keys.len() == before {
            return Err(bad(format!(
                "--trusted-keys {}: no public keys in it (one key of 64 hex digits per line; a directory: its *.pub files)",
                path.display()
            )));
        }
        Ok(())
    }

    /// Accept a certificate whose signature is intact when a trusted key
    /// made it.
    pub fn judge(&self, s: Signed) -> Result<Verified, CertError> {
        match self.keys.iter().find(|t| t.key == s.key) {
            Some(t) => Ok(Verified {
                certificate: s.certificate,
                public_key: s.public_key,
                signed_by: t.source.clone(),
            }),
            None => Err(CertError::Untrusted {
                not_by: self.not_by(),
                signer: s.public_key,
            }),
        }
    }

    /// Why a key is none of the trusted ones, in words.
    fn not_by(&self) -> String {
        match self.keys.as_slice() {
            [] => match &self.host_dir {
                Some(d) => format!(
                    "and no key is trusted here (this user has no signing key in {})",
                    d.display()
                ),
                None => "and no key is trusted here".to_string(),
            },
            [t] => format!(
                "not by the trusted key {}… ({})",
                short(&hex(t.key.as_bytes())),
                t.source
            ),
            many => format!("not by any of the {} trusted keys", many.len()),
        }
    }
}

/// The most `*.pub` files a trusted-key directory may hold.
const MAX_PUB_FILES: usize = 4096;

/// The `*.pub` entries of `dir`, sorted (each is read as a regular file,
/// so one that is not is refused rather than skipped).
fn pub_files(dir: &Path) -> Result<Vec<PathBuf>, CertError> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| bad(format!("cannot read trust list {}: {e}", dir.display())))?;
    let mut v: Vec<PathBuf> = Vec::new();
    for p in rd.filter_map(|e| e.ok().map(|e| e.path())) {
        if p.extension().is_some_and(|x| x == "pub") {
            if v.len() == MAX_PUB_FILES {
                return Err(bad(format!(
                    "--trusted-keys {}: more than {MAX_PUB_FILES} *.pub files; give a directory of the keys you trust",
                    dir.display()
                )));
            }
            v.push(p);
        }
    }
    v.sort();
    Ok(v)
}

/// The keys of a trust list (`file` for messages).
fn parse_list(text: &str, file: &Path) -> Result<Vec<TrustedKey>, CertError> {
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (hexkey, name) = match line.split_once(char::is_whitespace) {
            Some((k, n)) => (k, n.trim()),
            None => (line, ""),
        };
        let key = parse_public_key(hexkey).ok_or_else(|| {
            bad(format!(
                "{} line {}: not an Ed25519 public key (64 hex digits)",
                file.display(),
                i + 1
            ))
        })?;
        let source = if name.is_empty() {
            format!("trusted key from {}", file.display())
        } else {
            format!("trusted key {name} from {}", file.display())
        };
        keys.push(TrustedKey { key, source });
    }
    Ok(keys)
}

/// `drivelab erase verify-cert FILE`: read the certificate, load the trust
/// `src` asks for, check the signature, then the signer.
pub fn verify_file(file: &Path, src: &TrustSources) -> Result<Verified, CertError> {
    let text = input::read_string(file, Kind::Certificate).map_err(|e| bad(e.to_string()))?;
    verify_text(&text, src)
}

/// A certificate's text checked as [`verify_file`] checks a file's.
pub fn verify_text(text: &str, src: &TrustSources) -> Result<Verified, CertError> {
    let trust = Trust::from_sources(src)?;
    let signed = check_signature(text).map_err(CertError::Invalid)?;
    trust.judge(signed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cert::sign;
    use crate::cert::tests::sample;
    use crate::outcome::EraseResult;
    use ed25519_dalek::SigningKey;

    fn key(b: u8) -> SigningKey {
        SigningKey::from_bytes(&[b; 32])
    }

    fn trusting(k: &SigningKey) -> Trust {
        let mut t = Trust::none();
        t.add_public_key(&hex(k.verifying_key().as_bytes()))
            .unwrap();
        t
    }

    #[test]
    fn a_certificate_re_signed_with_a_foreign_key_is_not_trusted() {
        let ours = key(7);
        let mut failed = sample();
        failed.result = EraseResult::Failed;
        let text = sign(&failed, &ours).unwrap();
        assert!(trusting(&ours)
            .judge(check_signature(&text).unwrap())
            .is_ok());
        // A forger turns the failed erase into a good one and signs it with
        // a key of their own: the signature is intact, but not ours.
        let mut forged = check_signature(&text).unwrap().certificate;
        forged.result = EraseResult::Erased;
        forged.drive.serial = Some("S999".into());
        let theirs = key(8);
        let ftext = sign(&forged, &theirs).unwrap();
        let signed = check_signature(&ftext).unwrap();
        let e = trusting(&ours).judge(signed.clone()).unwrap_err();
        assert!(matches!(e, CertError::Untrusted { .. }) && !e.is_bad_input());
        let msg = e.to_string();
        assert!(msg.starts_with("NOT TRUSTED"), "{msg}");
        assert!(msg.contains("not by the trusted key"), "{msg}");
        assert!(msg.contains(&hex(theirs.verifying_key().as_bytes())[..16]));
        assert_eq!(msg.lines().count(), 1);
        // With no key at all, nothing is trusted either.
        let e = Trust::host(None).judge(signed.clone()).unwrap_err();
        assert!(e.to_string().contains("no key is trusted here"), "{e}");
        // Trusting the forger's key explicitly accepts it, and says so.
        let v = trusting(&theirs).judge(signed).unwrap();
        assert_eq!(v.signed_by, "the given key");
        assert_eq!(v.certificate.drive.serial.as_deref(), Some("S999"));
    }

    #[test]
    fn trust_lists_name_their_keys_and_refuse_garbage() {
        let dir = std::env::temp_dir().join(format!("dl-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("keys")).unwrap();
        let a = key(1);
        let b = key(2);
        let list = dir.join("trusted.txt");
        std::fs::write(
            &list,
            format!(
                "# site keys\n\n{} lab-a\n{}\n",
                hex(a.verifying_key().as_bytes()),
                hex(b.verifying_key().as_bytes())
            ),
        )
        .unwrap();
        let mut t = Trust::none();
        t.add_list(&list).unwrap();
        assert_eq!(t.keys().len(), 2);
        let v = t
            .judge(check_signature(&sign(&sample(), &a).unwrap()).unwrap())
            .unwrap();
        assert!(
            v.signed_by.starts_with("trusted key lab-a from "),
            "{}",
            v.signed_by
        );
        // A directory: its *.pub files only.
        std::fs::write(
            dir.join("keys/b.pub"),
            format!("{}\n", hex(b.verifying_key().as_bytes())),
        )
        .unwrap();
        std::fs::write(dir.join("keys/notes.txt"), "not a key\n").unwrap();
        let mut t = Trust::none();
        t.add_list(&dir.join("keys")).unwrap();
        assert_eq!(t.keys().len(), 1);
        let e = t
            .judge(check_signature(&sign(&sample(), &a).unwrap()).unwrap())
            .unwrap_err();
        assert!(e.to_string().contains("not by the trusted key"), "{e}");
        // Garbage and empty lists are bad input.
        std::fs::write(dir.join("bad.txt"), "abc\n").unwrap();
        let e = Trust::none().add_list(&dir.join("bad.txt")).unwrap_err();
        assert!(e.is_bad_input() && e.to_string().contains("line 1"), "{e}");
        std::fs::write(dir.join("empty.txt"), "# nothing\n").unwrap();
        let e = Trust::none().add_list(&dir.join("empty.txt")).unwrap_err();
        assert!(
            e.is_bad_input() && e.to_string().contains("no public keys"),
            "{e}"
        );
        let e = Trust::none().add_public_key("xyz").unwrap_err();
        assert!(e.is_bad_input(), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_changed_certificate_is_invalid_whoever_is_trusted() {
        let k = key(7);
        let text = sign(&sample(), &k).unwrap();
        let tampered = text.replacen("S123", "S124", 1);
        assert_ne!(tampered, text);
        let dir = std::env::temp_dir().join(format!("dl-trust-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("c.json");
        std::fs::write(&f, &tampered).unwrap();
        let src = TrustSources {
            public_keys: vec![hex(k.verifying_key().as_bytes())],
            ..TrustSources::default()
        };
        let e = verify_file(&f, &src).unwrap_err();
        assert!(matches!(e, CertError::Invalid(_)), "{e}");
        assert!(e.to_string().contains("changed after signing"), "{e}");
        std::fs::write(&f, &text).unwrap();
        assert!(verify_file(&f, &src).is_ok());
        let e = verify_file(&dir.join("missing.json"), &src).unwrap_err();
        assert!(e.is_bad_input(), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
