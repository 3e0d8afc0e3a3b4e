//! An import file, header line first: `blog::fuzzing::import_line`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| blog::fuzzing::import_line(data));
