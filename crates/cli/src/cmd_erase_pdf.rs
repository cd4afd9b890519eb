//! The PDF side of erase certificates: `drivelab erase render` (a signed
//! JSON certificate to a PDF with the JSON attached), `drivelab erase
//! report` (many certificates to one PDF and CSV), `verify-cert` of a PDF,
//! and the PDFs `--certificate-format pdf` makes after an erase.
//!
//! A certificate is rendered or listed only when it verifies against the
//! trust given (`--public-key`, `--trusted-keys`, else this user's key),
//! as `verify-cert` would: otherwise one line, exit status 2, nothing
//! written.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use drivelab_certpdf::report::{report_csv, report_pdf, Entry};
use drivelab_certpdf::{certificate_pdf, formats, sha256_hex, Paper};
use drivelab_device::input::{self, Kind};
use drivelab_erase::cert::{self, CertError, Trust, TrustSources, Verified};
use drivelab_erase::Summary;

use crate::error::usage;
use crate::output::{check_file_inputs, write_file, OutputArgs};

/// `--paper`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum PaperArg {
    /// ISO A4.
    #[default]
    A4,
    /// US Letter.
    Letter,
}

impl From<PaperArg> for Paper {
    fn from(p: PaperArg) -> Paper {
        match p {
            PaperArg::A4 => Paper::A4,
            PaperArg::Letter => Paper::Letter,
        }
    }
}

/// One of `--certificate-format`'s formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CertFormat {
    /// The signed record (always written: the others are made from it).
    Json,
    /// A page for people.
    Html,
    /// PDF with the signed JSON attached (PDF/A-3 style).
    Pdf,
}

impl From<CertFormat> for formats::CertFormat {
    fn from(f: CertFormat) -> formats::CertFormat {
        match f {
            CertFormat::Json => formats::CertFormat::Json,
            CertFormat::Html => formats::CertFormat::Html,
            CertFormat::Pdf => formats::CertFormat::Pdf,
        }
    }
}

/// Which keys to trust, as `verify-cert` takes them.
#[derive(Args, Debug, Clone, Default)]
pub struct TrustArgs {
    /// Trust this Ed25519 public key (64 hex digits, or a file holding
    /// them; repeatable). With --public-key or --trusted-keys only the
    /// keys they name are trusted; without, this user's own key.
    #[arg(long = "public-key", value_name = "HEX|FILE")]
    pub public_key: Vec<String>,
    /// Trust every key in a list (one key of 64 hex digits per line,
    /// optionally followed by a name; '#' comments) or in every *.pub
    /// file of a directory (repeatable).
    #[arg(long = "trusted-keys", value_name = "FILE|DIR")]
    pub trusted_keys: Vec<PathBuf>,
}

impl TrustArgs {
    /// The trust sources, with this user's config dir as the default.
    pub fn sources(&self) -> TrustSources {
        TrustSources {
            public_keys: self.public_key.clone(),
            trusted_keys: self.trusted_keys.clone(),
            config_dir: cert::config_dir().ok(),
        }
    }

    /// The files the trust is read from (outputs must not be one of them).
    pub fn inputs(&self) -> Vec<&Path> {
        let mut v: Vec<&Path> = self.public_key.iter().map(Path::new).collect();
        v.extend(self.trusted_keys.iter().map(PathBuf::as_path));
        v
    }
}

/// Verify a certificate file, JSON or PDF (told apart by the PDF's
/// `%PDF-` header): a PDF's attachment as a JSON certificate, then its
/// body against the attachment. Also says whether it was a PDF.
pub fn verify_any(file: &Path, src: &TrustSources) -> Result<(Verified, bool), CertError> {
    let bytes =
        input::read(file, Kind::Certificate).map_err(|e| CertError::BadInput(e.to_string()))?;
    if bytes.starts_with(b"%PDF-") {
        let trust = Trust::from_sources(src)?;
        return drivelab_certpdf::read::verify(&bytes, &trust).map(|v| (v, true));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| CertError::Invalid("not UTF-8 text: not a certificate".into()))?;
    cert::verify_text(&text, src).map(|v| (v, false))
}

/// Read and verify a JSON certificate for rendering: its text when it
/// verifies, else the one-line refusal (exit status 2).
fn verified_text(file: &Path, src: &TrustSources) -> anyhow::Result<(String, Verified)> {
    let text = input::read_string(file, Kind::Certificate).map_err(|e| usage(e.to_string()))?;
    match cert::verify_text(&text, src) {
        Ok(v) => Ok((text, v)),
        Err(e) => Err(usage(format!("{}: {e}; nothing rendered", file.display()))),
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// `drivelab erase render CERT.json --pdf FILE`.
pub fn render(
    file: &Path,
    pdf: &Path,
    paper: PaperArg,
    trust: &TrustArgs,
    out: &OutputArgs,
) -> anyhow::Result<u8> {
    let mut inputs = vec![file];
    inputs.extend(trust.inputs());
    check_file_inputs(pdf, "--pdf", &inputs)?;
    out.check_inputs(&inputs)?;
    let (text, v) = verified_text(file, &trust.sources())?;
    let bytes = certificate_pdf(&text, &file_name(file), paper.into())
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    write_file(pdf, "--pdf", &bytes)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", pdf.display()))?;
    out.emit(&format!(
        "{}: certificate of {} {} serial {} ({}, signed by {}), {} bytes, {}\n",
        pdf.display(),
        v.certificate.drive.path,
        v.certificate.drive.model.as_deref().unwrap_or("-"),
        v.certificate.drive.serial.as_deref().unwrap_or("-"),
        v.certificate.result,
        v.signed_by,
        bytes.len(),
        Paper::from(paper)
    ))?;
    Ok(0)
}

/// `drivelab erase report CERT.json... --pdf FILE --csv FILE`.
pub fn report(
    files: &[PathBuf],
    pdf: Option<&Path>,
    csv: Option<&Path>,
    paper: PaperArg,
    trust: &TrustArgs,
    out: &OutputArgs,
) -> anyhow::Result<u8> {
    if pdf.is_none() && csv.is_none() {
        return Err(usage(
            "erase report: give --pdf FILE, --csv FILE or both to say where the report goes",
        ));
    }
    let mut inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    inputs.extend(trust.inputs());
    for (p, what) in [(pdf, "--pdf"), (csv, "--csv")] {
        if let Some(p) = p {
            check_file_inputs(p, what, &inputs)?;
        }
    }
    out.check_inputs(&inputs)?;
    let src = trust.sources();
    let mut entries = Vec::with_capacity(files.len());
    for f in files {
        let (text, v) = verified_text(f, &src)?;
        entries.push(Entry {
            file: file_name(f),
            digest: sha256_hex(text.as_bytes()),
            certificate: v.certificate,
            public_key: v.public_key,
        });
    }
    let (s, n) = drivelab_erase::clock::unix_now();
    let created = drivelab_erase::clock::rfc3339(s, n);
    let mut said = String::new();
    if let Some(p) = pdf {
        let bytes = report_pdf(&entries, paper.into(), &created)
            .map_err(|e| anyhow::anyhow!("report: {e}"))?;
        write_file(p, "--pdf", &bytes)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
        said.push_str(&format!(
            "{}: PDF report of {} drives\n",
            p.display(),
            entries.len()
        ));
    }
    if let Some(p) = csv {
        write_file(p, "--csv", report_csv(&entries).as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
        said.push_str(&format!(
            "{}: CSV report of {} drives\n",
            p.display(),
            entries.len()
        ));
    }
    out.emit(&said)?;
    Ok(0)
}

/// After an erase: the certificate files `formats` asks for, on `paper`
/// (`drivelab_certpdf::formats::finish`); returns whether every PDF asked
/// for was made.
pub fn finish_formats(summary: &mut Summary, formats: &[CertFormat], paper: PaperArg) -> bool {
    let formats: Vec<formats::CertFormat> = formats.iter().map(|&f| f.into()).collect();
    formats::finish(summary, &formats, paper.into())
}
