#![no_main]
//! cargo-fuzz target `sequence`: see `drivelab_fuzzcheck::sequence` for the input
//! and the invariants asserted.

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivelab_fuzzcheck::sequence(data));
