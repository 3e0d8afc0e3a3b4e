//! A search query, then a post's text: `blog::fuzzing::search`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| blog::fuzzing::search(data));
