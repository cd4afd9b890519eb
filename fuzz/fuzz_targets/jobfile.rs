#![no_main]
//! cargo-fuzz target `jobfile`: see `drivelab_fuzzcheck::jobfile` for the input
//! and the invariants asserted.

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivelab_fuzzcheck::jobfile(data));
