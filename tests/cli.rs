//! `handler` as a command-line tool, on the real binary: help and version on stdout (exit 0), a
//! usage error with the usage on stderr (exit 2), and a command's stdout holding its output
//! alone (`handler dead-letters | jq .`), its logs, progress and summary on stderr. docs/commands.md
//! shows `handler --help` as the binary prints it.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use blog::testing::changefeed::dead_letters;
use serde_json::Value;

/// `handler <args>` on the embedded store in `data` (a directory nothing else has open), run to
/// its end, with the account settings that would take it elsewhere removed, logging at `debug`
/// (the SDK's many lines: none of them may reach stdout).
fn handler(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_handler"))
        .args(args)
        .env("BLOG_DATA_DIR", data)
        .env("RUST_LOG", "debug")
        .env("NO_COLOR", "1")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .env_remove("BLOG_SMOKE_TOKEN")
        .output()
        .expect("the handler binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

#[test]
fn help_is_printed_on_stdout_for_every_command() {
    let data = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--help"][..],
            &[
                "Usage: handler [COMMAND]",
                "serve",
                "rebuild-copies",
                "dead-letters",
                "smoke",
                "--version",
            ][..],
        ),
        (&["help"][..], &["Usage: handler [COMMAND]"][..]),
        (
            &["dead-letters", "--help"][..],
            &["Usage: handler dead-letters [COMMAND]", "replay", "jq"][..],
        ),
        (&["dead-letters", "replay", "--help"][..], &["Usage: handler dead-letters replay"][..]),
        (&["rebuild-copies", "--help"][..], &["Usage: handler rebuild-copies"][..]),
        (&["serve", "--help"][..], &["Usage: handler serve"][..]),
        (
            &["smoke", "--help"][..],
            &[
                "Usage: handler smoke [OPTIONS] <BASE_URL>",
                "--token <ACCESS_TOKEN>",
                "BLOG_SMOKE_TOKEN",
                "--dev-user <ID>",
                "--wait <SECONDS>",
                "[default: 120]",
                "--settle <SECONDS>",
                "[default: 300]",
            ][..],
        ),
    ] {
        let output = handler(args, data.path());
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
        for said in says {
            assert!(
                stdout(&output).contains(said),
                "{args:?} does not say {said:?}:\n{}",
                stdout(&output)
            );
        }
        assert_eq!(stderr(&output), "", "{args:?}");
    }
    // Nothing was opened: help starts nothing.
    assert_eq!(std::fs::read_dir(data.path()).unwrap().count(), 0);
}

#[test]
fn the_version_is_the_crate_version_with_a_commit() {
    let data = tempfile::tempdir().unwrap();
    for flag in ["--version", "-V"] {
        let output = handler(&[flag], data.path());
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let version = stdout(&output);
        let expected = format!("handler {} (git ", env!("CARGO_PKG_VERSION"));
        assert!(version.starts_with(&expected) && version.ends_with(")\n"), "{version:?}");
        // A short commit hash where built in a git checkout, else "unknown".
        let commit = &version[expected.len()..version.len() - 2];
        assert!(
            commit == "unknown"
                || (commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
            "{commit:?}"
        );
    }
}

#[test]
fn a_usage_error_exits_2_with_the_usage_on_stderr() {
    let data = tempfile::tempdir().unwrap();
    for (args, says) in [
        (&["--frobnicate"][..], "unexpected argument '--frobnicate'"),
        (&["dead-leters"][..], "a similar subcommand exists: 'dead-letters'"),
        (&["dead-letters", "--json"][..], "unexpected argument '--json'"),
        (&["dead-letters", "replay", "now"][..], "unexpected argument 'now'"),
        (&["rebuild-copies", "--fast"][..], "unexpected argument '--fast'"),
        (&["smoke"][..], "<BASE_URL>"),
        (
            &["smoke", "http://127.0.0.1:9", "--token", "t", "--dev-user", "d"][..],
            "cannot be used with",
        ),
        (&["smoke", "http://127.0.0.1:9", "--wait", "soon"][..], "invalid value 'soon'"),
    ] {
        let output = handler(args, data.path());
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert_eq!(stdout(&output), "", "{args:?}");
        let said = stderr(&output);
        assert!(said.starts_with("error: ") && said.contains(says), "{args:?}:\n{said}");
        assert!(
            said.contains("Usage: handler") || said.contains("try '--help'"),
            "{args:?}:\n{said}"
        );
        // Clap's own message, not a log line with a timestamp and a level.
        assert!(!said.contains(" ERROR ") && !said.contains("Z  "), "{args:?}:\n{said}");
    }
    // A token from BLOG_SMOKE_TOKEN with --dev-user: the same kind of error, with the usage.
    let output = Command::new(env!("CARGO_BIN_EXE_handler"))
        .args(["smoke", "http://127.0.0.1:9", "--dev-user", "d"])
        .env("BLOG_SMOKE_TOKEN", "t0ken")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("not both") && stderr(&output).contains("Usage: handler smoke"),
        "{}",
        stderr(&output)
    );
    assert!(!stderr(&output).contains("t0ken"), "the token is never shown");
}

/// Dead letters set aside in `data` as the change-feed functions set them aside: one whose
/// function no longer exists and one that cannot be read, so a replay keeps both (and logs why).
fn set_aside_two(data: &Path) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let state = blog::connect(&blog::test_support::embedded_config(data)).await.unwrap();
        dead_letters::set_aside(
            &state.store,
            "RetiredChangeFeed",
            "item",
            "a function since removed",
            r#"{"id":"p1"}"#,
        )
        .await
        .unwrap();
        dead_letters::set_aside(
            &state.store,
            "PostsChangeFeed",
            "invocation",
            "not an invocation",
            "{\"Data\": 42,\n\"x\": \"é\"}",
        )
        .await
        .unwrap();
    });
    // Every task that held the store ends with its runtime: the directory is free for the binary.
    drop(runtime);
}

#[test]
fn dead_letters_prints_only_json_lines_on_stdout() {
    let data = tempfile::tempdir().unwrap();
    set_aside_two(data.path());

    let output = handler(&["dead-letters"], data.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let listed: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("not a JSON line ({error}): {line:?}"))
        })
        .collect();
    assert_eq!(listed.len(), 2, "{}", stdout(&output));
    assert_eq!(listed[0]["function"], "RetiredChangeFeed");
    assert_eq!(listed[1]["payload"], "{\"Data\": 42,\n\"x\": \"é\"}");
    for letter in &listed {
        for field in ["id", "function", "what", "reason", "setAsideAt", "payload"] {
            assert!(letter[field].is_string(), "{field} in {letter}");
        }
    }

    let output = handler(&["dead-letters", "replay"], data.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "", "a replay writes nothing on stdout");
    let said = stderr(&output);
    // Its log lines (the one it could not read again), then its summary, on a line of its own.
    let warned = said
        .find("WARN blog::changefeed: still unreadable; kept")
        .unwrap_or_else(|| panic!("{said}"));
    let summary =
        said.find("\ndead-letters replay: 0 applied and removed, 2 refused again and kept, in ");
    assert!(summary.is_some_and(|summary| summary > warned), "{said}");

    // Both kept: listed again, and nothing but them on stdout.
    let output = handler(&["dead-letters"], data.path());
    assert_eq!(
        stdout(&output).lines().filter(|line| serde_json::from_str::<Value>(line).is_ok()).count(),
        2
    );
    assert_eq!(stdout(&output).lines().count(), 2);
}

#[test]
fn rebuild_copies_reports_on_stderr_only() {
    let data = tempfile::tempdir().unwrap();
    let output = handler(&["rebuild-copies"], data.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    let said = stderr(&output);
    let summary = "\nrebuild-copies: 0 users replayed (names carried and reserved), 0 posts delivered (copies rebuilt) in ";
    assert!(said.contains(summary), "{said}");
}

/// A command that fails says why on stderr, as one line starting with `error:`, and exits 1.
#[test]
fn a_failing_command_says_why_on_stderr() {
    let data = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_handler"))
        .arg("dead-letters")
        .env("BLOG_DATA_DIR", data.path())
        .env("BLOG_SCRIPTS", "server")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    assert!(
        stderr(&output).starts_with("error: BLOG_SCRIPTS=server needs a Cosmos DB account"),
        "{}",
        stderr(&output)
    );
}

/// docs/commands.md's block after `<!-- handler --help -->` is what `handler --help` prints.
#[test]
fn the_docs_show_the_help_the_binary_prints() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/commands.md"))
            .unwrap();
    let after = readme
        .split("<!-- handler --help -->")
        .nth(1)
        .expect("docs/commands.md has a <!-- handler --help --> marker");
    let block = after.split_once("```text\n").expect("a text block after the marker").1;
    let block = &block[..block.find("```").expect("the block ends")];
    let data = tempfile::tempdir().unwrap();
    let help = stdout(&handler(&["--help"], data.path()));
    assert_eq!(
        block,
        format!("$ handler --help\n{help}"),
        "docs/commands.md's `handler --help` block is out of date"
    );
}

/// docs/costs.md's cost table (the block after `<!-- handler cost -->`) is what `handler cost`
/// prints for its three sizes of blog; and a share that is not one is a usage error.
#[test]
fn the_docs_show_the_costs_handler_cost_prints() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/costs.md"))
            .unwrap();
    let after = readme
        .split("<!-- handler cost -->")
        .nth(1)
        .expect("docs/costs.md has a <!-- handler cost --> marker");
    let block = after.split_once("```text\n").expect("a text block after the marker").1;
    let block = &block[..block.find("```").expect("the block ends")];
    let data = tempfile::tempdir().unwrap();
    let printed = handler(&["cost"], data.path());
    assert_eq!(printed.status.code(), Some(0), "{}", stderr(&printed));
    assert_eq!(
        block,
        format!("$ handler cost\n{}", stdout(&printed)),
        "docs/costs.md's `handler cost` block is out of date"
    );

    let mine = handler(
        &["cost", "--views-per-day", "2500", "--writes-per-day", "0", "--post-share", "1"],
        data.path(),
    );
    let table = stdout(&mine);
    assert!(
        table.lines().any(|line| line.starts_with("| 2,500 | 0 | 18,612 |")),
        "2,500 post pages at 17.64 RU, and the change log read before nearly each (one a second at most):\n{table}"
    );
    let refused = handler(&["cost", "--post-share", "2"], data.path());
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("not a share between 0 and 1"), "{}", stderr(&refused));
    assert_eq!(std::fs::read_dir(data.path()).unwrap().count(), 0, "no store opened");
}

/// `handler cost --measured FILE` prices views with a reader-load measurement of the operator's
/// own (`cargo bench --bench readers -- --json FILE`): a row at or above its rate takes its RU per
/// 1,000 views, a row below it is computed; a file without the bench's figures is a usage error.
#[test]
fn handler_cost_prices_views_with_the_measurement_given() {
    let data = tempfile::tempdir().unwrap();
    let measured = data.path().join("readers.json");
    std::fs::write(
        &measured,
        r#"{"load": {"views_per_day": 50000}, "per_1000_views": {"view_article_ru": 1234.0}}"#,
    )
    .unwrap();
    let measured = measured.to_str().unwrap();
    let output = handler(
        &["cost", "--measured", measured, "--views-per-day", "10000", "--views-per-day", "60000"],
        data.path(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let table = stdout(&output);
    let row = |views: &str| {
        table.lines().find(|line| line.starts_with(&format!("| {views} |"))).unwrap().to_owned()
    };
    assert!(row("60,000").contains("| 1,234 | a measurement at 50,000 a day |"), "{table}");
    assert!(row("10,000").contains("the caches' rules (a bound)"), "{table}");

    let wrong = data.path().join("wrong.json");
    std::fs::write(&wrong, "{}").unwrap();
    let refused = handler(&["cost", "--measured", wrong.to_str().unwrap()], data.path());
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("cargo bench --bench readers"), "{}", stderr(&refused));
}

/// The instance size is a lever of `handler cost`: the deployment's 512 MB by default, 2,048 MB
/// costing four times the function app's memory time; so are a CDN's hit rate and Front Door's
/// fees, and a dedicated plan; a size Flex Consumption does not offer, or a plan the template
/// does not, is a usage error naming those it does.
#[test]
fn handler_cost_prices_the_instance_size_asked_for() {
    let data = tempfile::tempdir().unwrap();
    let functions = |args: &[&str]| -> Vec<String> {
        let output = handler(args, data.path());
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output)
            .lines()
            .filter(|line| line.starts_with("| 1,000,000 "))
            .map(|line| line.split('|').nth(6).unwrap().trim().to_owned())
            .collect()
    };
    assert_eq!(
        functions(&["cost"]),
        functions(&["cost", "--instance-memory-mb", "512"]),
        "512 MB is the default"
    );
    assert_ne!(functions(&["cost"]), functions(&["cost", "--instance-memory-mb", "2048"]));
    let cdn = |args: &[&str]| -> String {
        let output = handler(args, data.path());
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output).lines().find(|line| line.starts_with("| 1,000,000 ")).unwrap().to_owned()
    };
    assert_ne!(
        cdn(&["cost"]),
        cdn(&["cost", "--cdn-hit-rate", "0.5"]),
        "a CDN takes executions off the function app"
    );
    let yours = cdn(&["cost", "--cdn-hit-rate", "0.5"]);
    let front_door = cdn(&["cost", "--cdn-hit-rate", "0.5", "--front-door"]);
    let by_the_gb = cdn(&["cost", "--cdn-hit-rate", "0.5", "--cdn-per-gb"]);
    let cdn_column = |row: &str| row.split('|').nth(9).unwrap().trim().to_owned();
    assert_eq!(cdn_column(&yours), "$0.00", "a CDN you have is not priced: {yours}");
    assert_ne!(cdn_column(&front_door), "$0.00", "Front Door's fees are counted: {front_door}");
    assert_ne!(cdn_column(&by_the_gb), "$0.00", "the CDN's bytes are counted: {by_the_gb}");
    let refused = handler(&["cost", "--instance-memory-mb", "1000"], data.path());
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("512, 2048 and 4096"), "{}", stderr(&refused));
    // A dedicated plan is its instance's price, whatever the load.
    assert_eq!(functions(&["cost", "--hosting-plan", "B1"]), ["$13.14"]);
    let refused = handler(&["cost", "--hosting-plan", "F1"], data.path());
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("flex, or one of B1, S1, P0v3, P1v3"),
        "{}",
        stderr(&refused)
    );
}

/// `handler rebuild-copies` run on a terminal (util-linux `script` gives it one), as an operator
/// runs it: the progress line is drawn at once and the command ends with its summary. (It hung
/// on its first progress line before: the line asked for the time under the lock it was drawn
/// with.)
#[tokio::test]
async fn rebuild_copies_on_a_terminal_draws_its_progress() {
    let app = common::TestApp::start().await;
    let alice = app.user("alice").await;
    let post = app.post_by(&alice, "first").await;
    app.eventually("/api/feed", |feed| feed["items"][0]["id"] == post.as_str()).await;
    let data = app.stop().await.unwrap();

    let (status, shown) = on_a_terminal(data.path(), "rebuild-copies");
    assert!(status.success(), "{status}: {shown}");
    assert!(
        shown.contains("\r\x1b[Krebuild-copies: 1 users replayed ("),
        "the progress line, drawn in place: {shown:?}"
    );
    assert!(
        shown.contains(
            "rebuild-copies: 1 users replayed (names carried and reserved), 1 posts delivered"
        ),
        "{shown:?}"
    );
}

/// `handler <command>` on a terminal (util-linux `script` gives it one), on the embedded store in
/// `data`: its exit status, and what the terminal showed.
fn on_a_terminal(data: &Path, command: &str) -> (std::process::ExitStatus, String) {
    let mut child = Command::new("script")
        .args(["-qefc", &format!("exec \"$HANDLER\" {command}"), "/dev/null"])
        .env("HANDLER", env!("CARGO_BIN_EXE_handler"))
        .env("BLOG_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .env_remove("CosmosDB")
        .env_remove("CosmosDB__accountEndpoint")
        .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs (apt install bsdutils)");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("handler {command} on a terminal did not end within 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut shown = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut shown).unwrap();
    (status, shown)
}

/// `handler export` and `import` on a terminal draw a bar once they know how much there is to
/// do: the posts for an export, the file's items for an import.
#[tokio::test]
async fn transfers_on_a_terminal_draw_a_bar() {
    let app = common::TestApp::start().await;
    let alice = app.user("alice").await;
    for n in 0..3 {
        app.post_by(&alice, &format!("post {n}")).await;
    }
    let data = app.stop().await.unwrap();
    let file = data.path().join("blog.jsonl");
    let (status, shown) =
        on_a_terminal(data.path(), &format!("export --output {}", file.display()));
    assert!(status.success(), "{status}: {shown}");
    assert!(shown.contains("\r\x1b[Kexport: ["), "the bar, drawn in place: {shown:?}");
    assert!(
        shown.contains("export: 1 users, 3 posts, 0 comments, 0 likes, 0 pictures written to"),
        "{shown:?}"
    );

    let empty = tempfile::tempdir().unwrap();
    let (status, shown) = on_a_terminal(empty.path(), &format!("import {}", file.display()));
    assert!(status.success(), "{status}: {shown}");
    assert!(shown.contains("import: [") && shown.contains(" %"), "the bar: {shown:?}");
    assert!(
        shown.contains(
            "import: 1 users, 3 posts, 0 comments, 0 likes, 0 pictures written, copies made"
        ),
        "{shown:?}"
    );
}

/// A setting past what the handler can hold refuses the start (exit 1, naming the setting and
/// its range), where it used to panic: `BLOG_MAX_IN_FLIGHT` past what a semaphore counts at
/// start, `BLOG_REQUEST_TIMEOUT` past what a deadline can be computed from at every request.
#[test]
fn a_setting_out_of_its_range_refuses_the_start_naming_the_range() {
    for (name, range) in [
        ("BLOG_MAX_IN_FLIGHT", "from 1 to 1048576"),
        ("BLOG_REQUEST_TIMEOUT", "from 1 to 3600"),
        ("BLOG_HEADER_TIMEOUT", "from 1 to 3600"),
    ] {
        let data = tempfile::tempdir().unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_handler"))
            .env("BLOG_DATA_DIR", data.path())
            .env("BLOG_LISTEN", "127.0.0.1:0")
            .env("NO_COLOR", "1")
            .env(name, u64::MAX.to_string())
            .env_remove("CosmosDB")
            .env_remove("CosmosDB__accountEndpoint")
            .env_remove("FUNCTIONS_CUSTOMHANDLER_PORT")
            .output()
            .expect("the handler binary runs");
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{name}: {said}");
        assert!(
            said.contains(name) && said.contains(range) && !said.contains("panicked"),
            "{name}: {said}"
        );
    }
}
