#![no_main]
//! cargo-fuzz target `device_data`: see `drivelab_fuzzcheck::device_data` for the input
//! and the invariants asserted.

libfuzzer_sys::fuzz_target!(|data: &[u8]| drivelab_fuzzcheck::device_data(data));
