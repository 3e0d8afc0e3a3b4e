//! A picture upload: `blog::fuzzing::picture`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| blog::fuzzing::picture(data));
