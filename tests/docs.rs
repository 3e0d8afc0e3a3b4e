//! The documentation as a whole (issue 54: the README cut to what a newcomer needs, the reference
//! moved to `docs/` by reader and the layout to ARCHITECTURE.md):
//!
//! - every relative Markdown link in README.md, ARCHITECTURE.md, BENCHMARKS.md and docs/*.md
//!   leads somewhere: the file or folder exists, and a `#anchor` into a Markdown file names one of
//!   its headings by GitHub's rules (lowercase; spaces to `-`; punctuation other than `-` and `_` dropped; a
//!   repeated heading's anchor gets `-1`, `-2`, ...);
//! - no promise lost in the move: each `<!-- ... -->` marker a test or script reads a block after
//!   is in the file that reader opens, once in the whole set. Before the move README.md held 3
//!   markers (`<!-- ci: try-it -->`, `<!-- handler cost -->`, `<!-- handler --help -->`) and docs/
//!   none; the same 3, and no other, are in the set after it;
//! - README.md is at most 300 lines.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every marker a reader of the documentation relies on, the file it lives in, and who reads it.
const MARKERS: [(&str, &str, &str); 3] = [
    (
        "<!-- ci: try-it -->",
        "README.md",
        "tests/readme/run.sh runs the sh block after it (CI, .ci/run)",
    ),
    (
        "<!-- handler cost -->",
        "docs/costs.md",
        "tests/cli.rs: the block after it is what `handler cost` prints",
    ),
    (
        "<!-- handler --help -->",
        "docs/commands.md",
        "tests/cli.rs: the block after it is what `handler --help` prints",
    ),
];

/// How many markers README.md held before the reference left it (issue 54).
const MARKERS_BEFORE_THE_MOVE: usize = 3;

/// Phrases and headings other tests look for in a document, which a move must not lose either.
const PHRASES: [(&str, &str, &str); 3] = [
    (
        "a CSP of\n  its own (`",
        "docs/api.md",
        "tests/pictures/uploads.rs: the pictures' Content-Security-Policy, as served",
    ),
    (
        "\n## Deploying without a local build: GitHub Actions\n",
        "docs/deploy.md",
        "tests/deploy_docs.rs: CI_SECTION",
    ),
    ("\n### Restoring from backup\n", "docs/deploy.md", "tests/deploy_docs.rs: RESTORE_SECTION"),
];

const README_MOST_LINES: usize = 300;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, ARCHITECTURE.md, BENCHMARKS.md and every docs/*.md, as paths relative to the
/// repository's root.
fn documents() -> Vec<PathBuf> {
    let mut documents = vec![
        PathBuf::from("README.md"),
        PathBuf::from("ARCHITECTURE.md"),
        PathBuf::from("BENCHMARKS.md"),
    ];
    let mut in_docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
        .map(|path| path.strip_prefix(root()).unwrap().to_path_buf())
        .collect();
    in_docs.sort();
    documents.extend(in_docs);
    documents
}

fn read(document: &Path) -> String {
    fs::read_to_string(root().join(document))
        .unwrap_or_else(|error| panic!("{}: {error}", document.display()))
}

/// Whether a line opens or closes a fenced code block (``` or ~~~, indented up to three spaces,
/// as CommonMark allows; docs/local.md indents one in a list item).
fn is_fence(line: &str) -> bool {
    let trimmed = line.trim_start_matches(' ');
    line.len() - trimmed.len() <= 3 && (trimmed.starts_with("```") || trimmed.starts_with("~~~"))
}

/// The lines outside fenced code blocks, with their numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut inside = false;
    let mut lines = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if is_fence(line) {
            inside = !inside;
        } else if !inside {
            lines.push((number + 1, line));
        }
    }
    lines
}

/// GitHub's anchor for a heading's text: lowercase, inline markup's punctuation dropped with
/// every other character that is not a letter, a digit, `-`, `_` or a space, spaces to `-`.
fn slug(heading: &str) -> String {
    // A link in a heading counts by its text: `[text](target)` is `text`.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|at| open + at) else { break };
        let Some(end) = rest[close..].find(')').map(|at| close + at) else { break };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (ATX headings outside code blocks), repeated ones
/// numbered as GitHub numbers them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let heading = line[hashes..].trim().trim_end_matches('#').trim_end();
        let base = slug(heading);
        let count = seen.entry(base.clone()).or_insert(0);
        let anchor = if *count == 0 { base.clone() } else { format!("{base}-{count}") };
        *count += 1;
        anchors.insert(anchor);
    }
    anchors
}

/// The targets of the inline links (and images) on the prose lines, outside inline code.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    for (number, line) in prose_lines(text) {
        // Inline code spans are the odd pieces between backticks.
        for piece in line.split('`').step_by(2) {
            let mut rest = piece;
            while let Some(at) = rest.find("](") {
                let after = &rest[at + 2..];
                let end = after.find(')').unwrap_or(after.len());
                let target = after[..end].split_whitespace().next().unwrap_or("");
                links.push((number, target.to_owned()));
                rest = &after[end..];
            }
        }
    }
    links
}

/// Whether a link leaves the repository (a scheme) or is a site path (`/pictures/…`, an
/// example in the text, not a file).
fn is_outside(target: &str) -> bool {
    target.starts_with('/')
        || target.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
}

/// `a/b/../c` as `a/c`, without touching the disk; `None` when it climbs out of the repository.
fn normalized(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            std::path::Component::Normal(part) => parts.push(part),
            _ => {}
        }
    }
    Some(parts.iter().collect())
}

#[test]
fn every_relative_link_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for document in documents() {
        let text = read(&document);
        for (line, target) in links(&text) {
            if target.is_empty() || is_outside(&target) {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let here = format!("{}:{line}", document.display());
            let file = if path.is_empty() {
                document.clone()
            } else {
                match normalized(&document.parent().unwrap().join(path)) {
                    Some(file) => file,
                    None => {
                        problems.push(format!("{here}: {target} leaves the repository"));
                        continue;
                    }
                }
            };
            if !root().join(&file).exists() {
                problems.push(format!("{here}: {target}: there is no {}", file.display()));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if file.extension().is_none_or(|extension| extension != "md") {
                problems
                    .push(format!("{here}: {target}: an anchor into a file that is not Markdown"));
                continue;
            }
            if !anchors(&read(&file)).contains(anchor) {
                problems
                    .push(format!("{here}: {target}: {} has no heading #{anchor}", file.display()));
            }
        }
    }
    assert!(
        checked > 100,
        "the documents link to each other and to the code: {checked} links checked"
    );
    assert!(problems.is_empty(), "links that lead nowhere:\n{}", problems.join("\n"));
}

#[test]
fn no_marker_was_lost_in_the_move() {
    let documents = documents();
    let texts: Vec<(PathBuf, String)> =
        documents.iter().map(|document| (document.clone(), read(document))).collect();
    for (marker, home, reader) in MARKERS.iter().chain(PHRASES.iter()) {
        let found: Vec<(&PathBuf, usize)> = texts
            .iter()
            .map(|(document, text)| (document, text.matches(marker).count()))
            .filter(|(_, count)| *count > 0)
            .collect();
        assert_eq!(
            found,
            vec![(&PathBuf::from(home), 1)],
            "{marker:?} is in {home} once, where its reader looks ({reader})"
        );
    }
    // No marker beyond the list: a new one is listed here with its reader, so the next move keeps it.
    let mut present = BTreeSet::new();
    for (document, text) in &texts {
        for (at, _) in text.match_indices("<!--") {
            let end = text[at..].find("-->").map(|end| at + end + 3).expect("a comment is closed");
            present.insert((text[at..end].to_owned(), document.display().to_string()));
        }
    }
    let listed: BTreeSet<(String, String)> = MARKERS
        .iter()
        .map(|(marker, home, _)| ((*marker).to_owned(), (*home).to_owned()))
        .collect();
    assert_eq!(present, listed, "the markers in the documentation are the listed ones");
    assert_eq!(
        present.len(),
        MARKERS_BEFORE_THE_MOVE,
        "as many markers as README.md held before the move"
    );
}

#[test]
fn the_readme_is_at_most_300_lines() {
    let lines = read(Path::new("README.md")).lines().count();
    assert!(
        lines <= README_MOST_LINES,
        "README.md has {lines} lines; the reference goes in docs/ (at most {README_MOST_LINES})"
    );
}

#[test]
fn the_readme_links_every_document() {
    let readme = read(Path::new("README.md"));
    let linked: BTreeSet<String> = links(&readme)
        .into_iter()
        .map(|(_, target)| target.split('#').next().unwrap().to_owned())
        .collect();
    for document in documents().iter().skip(1) {
        let document = document.display().to_string();
        assert!(linked.contains(&document), "README.md's Read on links {document}");
    }
}

#[test]
fn slugs_follow_githubs_rules() {
    assert_eq!(slug("The model (the article's V3)"), "the-model-the-articles-v3");
    assert_eq!(
        slug("Sending a write again: `Idempotency-Key`"),
        "sending-a-write-again-idempotency-key"
    );
    assert_eq!(
        slug("Operating it: the workbook, the alerts, backups, moving data"),
        "operating-it-the-workbook-the-alerts-backups-moving-data"
    );
    assert_eq!(
        slug("A day of keyed writes (`cargo bench --bench keyed`, issue 41)"),
        "a-day-of-keyed-writes-cargo-bench---bench-keyed-issue-41"
    );
    assert_eq!(slug("snake_case and [a link](x.md)"), "snake_case-and-a-link");
    let repeated = anchors("# Notes\n\n## Notes\n\n```\n# not a heading\n```\n\n### Notes\n");
    assert_eq!(repeated, ["notes", "notes-1", "notes-2"].map(str::to_owned).into_iter().collect());
}
