#![no_main]
//! cargo-fuzz target `sense`: see `drivelab_fuzzcheck::sense` for the input
//! and the invariants asserted.

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivelab_fuzzcheck::sense(data));
