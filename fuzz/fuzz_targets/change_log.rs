//! The change log as stored, then names appended to it: `blog::fuzzing::change_log`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| blog::fuzzing::change_log(data));
