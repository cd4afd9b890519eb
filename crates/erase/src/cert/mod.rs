//! The certificate stage: a signed record of what was erased, how, when
//! and how it was checked, and how a verifier decides to trust one.
//!
//! The certificate follows NIST SP 800-88's "certificate of sanitization"
//! (REFERENCE.md): drive identity, method and technique, tool and version,
//! verification, who/when/where. [`build`] assembles it from a drive's
//! erase; [`write`] signs it and writes it twice: JSON (the signed record)
//! and an HTML page for people ([`html`]). [`sign`] holds the Ed25519 key,
//! the signature and its check; [`trust`] decides whether the key that
//! signed a certificate is one the verifier trusts, and [`verify_file`] is
//! `drivelab erase verify-cert`. [`model`] is the certificate itself.

pub mod build;
pub mod html;
pub mod model;
pub mod sign;
pub mod strict;
pub mod trust;

pub use build::write;
pub use html::html;
pub use model::*;
pub use sign::{
    check_signature, config_dir, load_or_create_key, local_public_key, parse_public_key, sign,
    Signed, KEY_FILE, PUB_FILE,
};
pub use trust::{verify_file, verify_text, CertError, Trust, TrustSources, TrustedKey, Verified};

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::outcome::EraseResult;
    use crate::plan::Method;

    pub(crate) fn sample() -> Certificate {
        Certificate {
            format: FORMAT.into(),
            result: EraseResult::Erased,
            failure: None,
            drive: DriveSection {
                path: "/dev/loop3".into(),
                vendor: None,
                model: Some("<Model & Co>".into()),
                serial: Some("S123".into()),
                firmware: None,
                wwid: None,
                kind: "loop".into(),
                transport: "other".into(),
                media: "virtual".into(),
                capacity_bytes: 1 << 30,
                logical_sector: 512,
                physical_sector: 4096,
            },
            erase: EraseSection {
                method: Method::Stream,
                method_reason: "requested".into(),
                nist_category: "Clear".into(),
                technique: "overwrite".into(),
                pattern: "allzeros".into(),
                seed: 1,
                passes: 1,
                commands: vec![],
                bytes_this_run: 1 << 30,
                bytes_resumed: 0,
                offloaded: None,
                stream_tuning: Some((1 << 20, 8)),
                discard_first: false,
            },
            timing: TimingSection {
                start: "a".into(),
                end: "b".into(),
                erase_seconds: 1.5,
                verify_seconds: 0.25,
                duration_seconds: 1.75,
                runs: vec!["a".into()],
            },
            verification: VerifySection {
                mode: "sample".into(),
                result: "passed".into(),
                bytes_read: 10,
                coverage_percent: 10.1,
                subsections: 1000,
                regions: 2002,
                mismatch_lba: None,
                detail: None,
                excepted_blocks: 0,
                reads: "O_DIRECT".into(),
                prior_sample: None,
            },
            exceptions: vec![],
            errors: vec![],
            retried: 0,
            tool: ToolSection {
                name: "drivelab".into(),
                version: "0".into(),
                host: "h".into(),
                kernel: "k".into(),
                command_line: "x".into(),
                machine: None,
            },
            health: None,
            capacity_restored: None,
            parties: None,
        }
    }
}
