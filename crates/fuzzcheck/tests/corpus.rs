//! The fuzz targets on stable Rust, as `cargo test` runs them in CI: every
//! file of `fuzz/corpus/<target>/` as it is, then a fixed number of
//! deterministic mutations of each (seeded per target and file, so every
//! run tries the same inputs). A panic names the target and the input, in
//! hex, so it can be saved as a regression.

use std::path::Path;

use drivelab_fuzzcheck::mutate::{mutate, Rng};
use drivelab_fuzzcheck::{corpus_dir, Target, TARGETS};

/// Mutations tried per corpus file.
const MUTATIONS: usize = 48;
/// Longest mutated input, bytes (as `-max_len` in tests/fuzz).
const MAX_LEN: usize = 8192;

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (name(&p), std::fs::read(&p).unwrap()))
        .collect()
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Run `f` on `input`; on a panic, fail naming the input.
fn run_one(target: &str, what: &str, f: Target, input: &[u8]) {
    if std::panic::catch_unwind(|| f(input)).is_err() {
        panic!(
            "fuzz target {target} failed on {what} ({} bytes): {}",
            input.len(),
            hex(input)
        );
    }
}

fn seed_of(s: &str) -> u64 {
    // FNV-1a: stable across runs and platforms.
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn check_target(target: &str) {
    let f = TARGETS
        .iter()
        .find(|(n, _)| *n == target)
        .map(|(_, f)| *f)
        .unwrap();
    let files = corpus(target);
    assert!(files.len() >= 2, "{target}: corpus too small");
    for (i, (file, data)) in files.iter().enumerate() {
        run_one(target, file, f, data);
        let other = &files[(i + 1) % files.len()].1;
        let mut rng = Rng::new(seed_of(&format!("{target}/{file}")));
        for m in 0..MUTATIONS {
            let input = mutate(data, other, &mut rng, MAX_LEN);
            run_one(target, &format!("mutation {m} of {file}"), f, &input);
        }
    }
}

#[test]
fn every_target_has_a_corpus() {
    for (t, _) in TARGETS {
        assert!(corpus_dir(t).is_dir(), "no corpus for {t}");
    }
}

#[test]
fn jobfile_corpus_and_mutations() {
    check_target("jobfile");
}

#[test]
fn sequence_corpus_and_mutations() {
    check_target("sequence");
}

#[test]
fn trace_corpus_and_mutations() {
    check_target("trace");
}

#[test]
fn cert_corpus_and_mutations() {
    check_target("cert");
}

#[test]
fn cert_pdf_corpus_and_mutations() {
    check_target("cert_pdf");
}

#[test]
fn sense_corpus_and_mutations() {
    check_target("sense");
}

#[test]
fn device_data_corpus_and_mutations() {
    check_target("device_data");
}
