//! A post's or a comment's Markdown: `blog::fuzzing::markdown`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| blog::fuzzing::markdown(data));
