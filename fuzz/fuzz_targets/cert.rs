#![no_main]
//! cargo-fuzz target `cert`: see `drivelab_fuzzcheck::cert` for the input
//! and the invariants asserted.

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivelab_fuzzcheck::cert(data));
