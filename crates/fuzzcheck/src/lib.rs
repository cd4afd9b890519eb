//! The fuzz targets of every parser that takes outside input, written once
//! and run two ways:
//!
//! - by cargo-fuzz (nightly, libFuzzer), from the `fuzz/` package at the top
//!   of the repository: `fuzz/fuzz_targets/<name>.rs` calls
//!   `drivelab_fuzzcheck::<name>`;
//! - by `cargo test` on stable (this crate's `tests/`), which feeds the same
//!   functions every file of `fuzz/corpus/<name>/`, a fixed number of
//!   deterministic mutations of each ([`mutate`]) and proptest-generated
//!   structured inputs.
//!
//! Each target takes arbitrary bytes, must not panic, and asserts the
//! parser's invariants (named in each function's documentation): a failed
//! assertion is a finding, the same as a panic inside the parser.

pub mod mutate;

mod cert;
mod cert_pdf;
mod device;
mod jobs;
mod sequence;
mod trace;

pub use cert::cert;
pub use cert_pdf::cert_pdf;
pub use device::{device_data, sense};
pub use jobs::jobfile;
pub use sequence::sequence;
pub use trace::trace;

/// A fuzz target: takes any bytes, panics only on a finding.
pub type Target = fn(&[u8]);

/// Every target by its name (the name of its corpus directory and of its
/// cargo-fuzz binary).
pub const TARGETS: [(&str, Target); 7] = [
    ("jobfile", jobfile),
    ("sequence", sequence),
    ("trace", trace),
    ("cert", cert),
    ("cert_pdf", cert_pdf),
    ("sense", sense),
    ("device_data", device_data),
];

/// The corpus directory of `target` in this repository.
pub fn corpus_dir(target: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}
