//! A form with a picture (Content-Type line, then the body): `blog::fuzzing::multipart`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| blog::fuzzing::multipart(data));
