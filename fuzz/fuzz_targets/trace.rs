#![no_main]
//! cargo-fuzz target `trace`: see `drivelab_fuzzcheck::trace` for the input
//! and the invariants asserted.

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivelab_fuzzcheck::trace(data));
