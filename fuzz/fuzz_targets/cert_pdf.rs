#![no_main]
//! cargo-fuzz target `cert_pdf`: see `drivelab_fuzzcheck::cert_pdf` for the
//! input and the invariants asserted.

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivelab_fuzzcheck::cert_pdf(data));
