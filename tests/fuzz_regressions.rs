//! The fuzz targets' cases on stable, in a plain `cargo test`: every seed (fuzz/corpus/<target>/)
//! and every input a fuzzer found failing (tests/fuzz_regressions/<target>/) through its
//! `blog::fuzzing` function, each in a child process of its own under the target's memory limit,
//! as cargo-fuzz runs them: so a case, once found, stays fixed without nightly or a fuzzer.
//!
//! A child is this test binary again, running one `child_*` test with the case named in its
//! environment. Its address space is capped (`RLIMIT_AS`), so an input that would take tens of
//! GB fails at once rather than take the machine with it, and the most memory it held
//! (`VmHWM`) is checked against the limit after the run; its CPU time is capped too, against a
//! case that never ends.
//!
//! `stable_mutation_loop` (ignored) is fuzz/run.sh's fallback where nightly is missing: random
//! mutations of the same cases, without coverage, under the same limits.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A fuzz target: its name (fuzz/fuzz_targets/<name>.rs), its function, and its memory limit in
/// MB, the same as fuzz/run.sh gives libFuzzer (`-rss_limit_mb`, `-malloc_limit_mb`), where the
/// reasons are.
struct Target {
    name: &'static str,
    run: fn(&[u8]),
    megabytes: u64,
}

const TARGETS: &[Target] = &[
    Target { name: "picture", run: blog::fuzzing::picture, megabytes: 1024 },
    Target { name: "multipart", run: blog::fuzzing::multipart, megabytes: 512 },
    Target { name: "markdown", run: blog::fuzzing::markdown, megabytes: 512 },
    Target { name: "import_line", run: blog::fuzzing::import_line, megabytes: 512 },
    Target { name: "change_log", run: blog::fuzzing::change_log, megabytes: 512 },
    Target { name: "search", run: blog::fuzzing::search, megabytes: 512 },
];

/// A child's case: `<target>:<path>`.
const CASE: &str = "BLOG_FUZZ_CASE";
/// A child's mutation loop: `<target>:<seconds>:<file it writes each input to before running it>`.
const LOOP: &str = "BLOG_FUZZ_LOOP";

/// Above the limit, the address space a child may map besides: the test binary's own threads,
/// stacks and allocator reservations, which are mapped but hardly resident. The limit itself
/// is checked on the resident peak.
const ADDRESS_SPACE_HEADROOM_MB: u64 = 1024;

/// The CPU time a child may use: a case takes milliseconds; a case that loops does not end.
const CPU_SECONDS: u64 = 120;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn target(name: &str) -> &'static Target {
    TARGETS.iter().find(|target| target.name == name).unwrap_or_else(|| panic!("no target {name}"))
}

/// A target's seeds, then the cases found, by name.
fn cases(target: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for folder in [
        root().join("fuzz/corpus").join(target),
        root().join("tests/fuzz_regressions").join(target),
    ] {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        let mut found: Vec<PathBuf> = entries
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                path.is_file() && !path.file_name().unwrap().to_string_lossy().starts_with('.')
            })
            .collect();
        found.sort();
        all.extend(found);
    }
    all
}

/// This test binary again, running the test `test` alone, with `variable` set to `value`.
fn child(test: &str, variable: &str, value: &str) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(variable, value)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

/// How a child ended, and the last lines it wrote (its panic, or the allocation it died of).
fn summary(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with("note:"))
        .collect();
    let tail = said[said.len().saturating_sub(4)..].join(" | ");
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&output.status) {
        let why = match signal {
            libc::SIGABRT => "aborted: an allocation past the address-space limit, or an abort",
            libc::SIGXCPU | libc::SIGKILL => "killed: past its CPU time",
            _ => "killed by a signal",
        };
        return format!("{why} (signal {signal}); {tail}");
    }
    format!("{}; {tail}", output.status)
}

#[test]
fn every_fuzz_input_passes_within_its_memory_limit() {
    let mut failures = Vec::new();
    let mut count = 0;
    for Target { name, .. } in TARGETS {
        for path in cases(name) {
            count += 1;
            let output = child("child_runs_one_case", CASE, &format!("{name}:{}", path.display()));
            if !output.status.success() {
                let shown = path.strip_prefix(root()).unwrap_or(&path).display().to_string();
                failures.push(format!("{shown}: {}", summary(&output)));
            }
        }
    }
    assert!(count > 0, "no cases found under fuzz/corpus");
    assert!(
        failures.is_empty(),
        "{} of {count} fuzz cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// In a child only (`BLOG_FUZZ_CASE`): one case, under its target's limits. Nothing otherwise.
#[test]
fn child_runs_one_case() {
    let Ok(case) = std::env::var(CASE) else { return };
    let (name, path) = case.split_once(':').unwrap();
    let target = target(name);
    limit_this_process(target.megabytes);
    let data = std::fs::read(path).unwrap();
    (target.run)(&data);
    check_peak(target.megabytes);
}

/// Caps this process's address space and CPU time.
// The standard library has no call for resource limits; libc's is the system's own.
#[allow(unsafe_code)]
fn limit_this_process(megabytes: u64) {
    #[cfg(unix)]
    {
        let set = |resource, value: u64| {
            let limit =
                libc::rlimit { rlim_cur: value as libc::rlim_t, rlim_max: value as libc::rlim_t };
            // SAFETY: setrlimit reads the struct it is given, which lives for the call.
            let result = unsafe { libc::setrlimit(resource, &limit) };
            assert_eq!(result, 0, "setrlimit: {}", std::io::Error::last_os_error());
        };
        set(libc::RLIMIT_AS, (megabytes + ADDRESS_SPACE_HEADROOM_MB) * 1024 * 1024);
        set(libc::RLIMIT_CPU, CPU_SECONDS);
    }
    #[cfg(not(unix))]
    let _ = megabytes;
}

/// Panics where the most memory this process has held is past `megabytes`.
fn check_peak(megabytes: u64) {
    if let Some(peak) = peak_resident_mb() {
        assert!(
            peak <= megabytes,
            "peak resident memory {peak} MB, past the target's {megabytes} MB"
        );
    }
}

/// `VmHWM`: the most this process has had resident, in MB (Linux only).
fn peak_resident_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kilobytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kilobytes / 1024)
}

/// fuzz/run.sh's fallback where nightly is missing: each target's cases mutated at random for
/// `BLOG_FUZZ_SECONDS` (default 30), in a child under the target's limits. An input that fails
/// is kept in tests/fuzz_regressions/<target>/ and fails this test.
#[test]
#[ignore = "fuzz/run.sh runs it where nightly is missing"]
fn stable_mutation_loop() {
    let seconds: u64 = std::env::var("BLOG_FUZZ_SECONDS")
        .map_or(30, |text| text.parse().expect("BLOG_FUZZ_SECONDS: seconds"));
    let mut failures = Vec::new();
    for Target { name, .. } in TARGETS {
        let current = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-{name}-current"));
        let output = child(
            "child_runs_the_mutation_loop",
            LOOP,
            &format!("{name}:{seconds}:{}", current.display()),
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        if let Some(line) = stderr.lines().find(|line| line.starts_with("mutation loop:")) {
            eprintln!("{line}");
        }
        if output.status.success() {
            continue;
        }
        let input = std::fs::read(&current).unwrap();
        // A case that fails as it is (a seed, before a fix) is not kept twice.
        if let Some(known) = cases(name)
            .into_iter()
            .find(|path| std::fs::read(path).is_ok_and(|bytes| bytes == input))
        {
            failures.push(format!(
                "{name}: {} ({} as it is)",
                summary(&output),
                known.strip_prefix(root()).unwrap().display()
            ));
            continue;
        }
        let folder = root().join("tests/fuzz_regressions").join(name);
        std::fs::create_dir_all(&folder).unwrap();
        let kept = folder.join(format!("stable-{:016x}", fnv1a(&input)));
        std::fs::write(&kept, &input).unwrap();
        failures.push(format!(
            "{name}: {} (kept as {})",
            summary(&output),
            kept.strip_prefix(root()).unwrap().display()
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// In a child only (`BLOG_FUZZ_LOOP`): the mutation loop of one target.
#[test]
fn child_runs_the_mutation_loop() {
    let Ok(spec) = std::env::var(LOOP) else { return };
    let mut fields = spec.splitn(3, ':');
    let (name, seconds, current) =
        (fields.next().unwrap(), fields.next().unwrap(), fields.next().unwrap());
    let target = target(name);
    let corpus: Vec<Vec<u8>> =
        cases(name).iter().map(|path| std::fs::read(path).unwrap()).collect();
    assert!(!corpus.is_empty(), "no cases for {name}");
    limit_this_process(target.megabytes);
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
            as u64
            | 1;
    let mut random = Random(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds.parse().unwrap());
    let started = Instant::now();
    let mut runs = 0_u64;
    let mut kept = std::fs::File::create(current).unwrap();
    while Instant::now() < deadline {
        let input = mutate(&corpus, &mut random);
        // Written before it runs: an abort leaves it for the parent to keep. (In place, not
        // created anew: a file created per input took most of the loop's time.)
        std::io::Seek::rewind(&mut kept).unwrap();
        std::io::Write::write_all(&mut kept, &input).unwrap();
        kept.set_len(input.len() as u64).unwrap();
        (target.run)(&input);
        check_peak(target.megabytes);
        runs += 1;
    }
    let per_second = runs as f64 / started.elapsed().as_secs_f64();
    eprintln!(
        "mutation loop: {name}: {runs} inputs in {seconds} s ({per_second:.0}/s), seed {seed}, nothing found"
    );
}

/// xorshift64: enough randomness for mutations, with no dependency.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        if bound == 0 { 0 } else { (self.next() % bound as u64) as usize }
    }
}

/// A case of `corpus` with one to four of libFuzzer's simpler mutations.
fn mutate(corpus: &[Vec<u8>], random: &mut Random) -> Vec<u8> {
    const INTERESTING: [u32; 8] = [0, 1, 0x7f, 0xff, 0xffff, 6000, 0x7fff_ffff, 0xffff_ffff];
    let mut data = corpus[random.below(corpus.len())].clone();
    for _ in 0..1 + random.below(4) {
        let at = random.below(data.len() + 1);
        let last = data.len().saturating_sub(1);
        match random.below(8) {
            0 if !data.is_empty() => data[at.min(last)] ^= 1 << random.below(8),
            1 if !data.is_empty() => data[at.min(last)] = random.next() as u8,
            2 => {
                let inserted: Vec<u8> =
                    (0..1 + random.below(8)).map(|_| random.next() as u8).collect();
                data.splice(at..at, inserted);
            }
            3 => {
                let end = (at + 1 + random.below(16)).min(data.len());
                data.drain(at.min(end)..end);
            }
            4 if !data.is_empty() => {
                let from = random.below(data.len());
                let copied = data[from..(from + 1 + random.below(32)).min(data.len())].to_vec();
                data.splice(at..at, copied);
            }
            5 => {
                let other = &corpus[random.below(corpus.len())];
                data.truncate(at);
                data.extend_from_slice(&other[random.below(other.len() + 1)..]);
            }
            6 => data.truncate(at),
            _ if data.len() >= 4 => {
                let value = INTERESTING[random.below(INTERESTING.len())].to_be_bytes();
                let at = at.min(data.len() - 4);
                let width = [1, 2, 4][random.below(3)];
                data[at..at + width].copy_from_slice(&value[4 - width..]);
            }
            _ => {}
        }
    }
    data
}

/// A name for a kept input, from its bytes.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
