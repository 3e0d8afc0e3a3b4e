//! docs/deploy.md's CI and restore sections, walked where a command can run here and held to
//! their sources where it cannot: no Azure, Entra ID or GitHub answers on this machine, so the
//! `az` and `azd` lines are not run; instead each one's command (`az cosmosdb restore`,
//! `azd pipeline config`, ...) must be listed under the section's "Sources of the commands" with
//! a repository path or a Microsoft Learn page. What can be checked against the repository is:
//! the values `azd env set` gives exist for the template and CI, the handler's commands exist,
//! and the CI setup's order is the workflow's.

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "common/yaml.rs"]
mod yaml;
use yaml::yaml_block;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use regex::Regex;
use serde_json::Value;

const CI_SECTION: &str = "Deploying without a local build: GitHub Actions";
const RESTORE_SECTION: &str = "Restoring from backup";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    fs::read_to_string(repo_root().join(relative))
        .unwrap_or_else(|error| panic!("cannot read {relative}: {error}"))
}

/// One section of a Markdown page: from its heading to the next heading of the same or a higher
/// level (its subsections are part of it).
struct Section {
    title: String,
    /// The ```sh blocks, each as its lines (a line ending in `\` joined to the next).
    shell_blocks: Vec<Vec<String>>,
    /// Everything outside code blocks.
    prose: String,
}

fn section(page: &str, title: &str) -> Section {
    let lines: Vec<&str> = page.lines().collect();
    let heading_level = |line: &str| -> Option<usize> {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        (hashes > 0 && line[hashes..].starts_with(' ')).then_some(hashes)
    };
    // Headings inside code blocks (a shell comment) are not headings.
    let mut in_code = false;
    let mut headings = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && let Some(level) = heading_level(line) {
            headings.push((at, level, line[level..].trim().to_owned()));
        }
    }
    let (start, level) = headings
        .iter()
        .find(|(_, _, text)| text == title)
        .map(|(at, level, _)| (*at, *level))
        .unwrap_or_else(|| panic!("docs/deploy.md has no section {title:?}"));
    let end = headings
        .iter()
        .find(|(at, other, _)| *at > start && *other <= level)
        .map_or(lines.len(), |(at, _, _)| *at);

    let mut shell_blocks = Vec::new();
    let mut prose = String::new();
    let mut block: Option<(bool, Vec<String>)> = None;
    for line in &lines[start + 1..end] {
        let trimmed = line.trim_start();
        match block.as_mut() {
            None if trimmed.starts_with("```") => {
                block = Some((trimmed.trim_start_matches('`').trim() == "sh", Vec::new()))
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
            Some(_) if trimmed.starts_with("```") => {
                let (is_shell, body) = block.take().unwrap();
                if is_shell {
                    shell_blocks.push(joined_lines(&body));
                }
            }
            Some((_, body)) => body.push((*line).to_owned()),
        }
    }
    assert!(block.is_none(), "section {title:?}: a code block is not closed");
    Section { title: title.to_owned(), shell_blocks, prose }
}

/// Shell lines with `\` continuations joined, comments and blank lines left out.
fn joined_lines(body: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in body {
        if let Some(head) = line.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
            continue;
        }
        current.push_str(line);
        let whole = std::mem::take(&mut current);
        let trimmed = whole.trim();
        if !trimmed.is_empty() && !trimmed.starts_with('#') {
            lines.push(trimmed.to_owned());
        }
    }
    lines
}

/// The page, read once per test.
fn deploy_page() -> String {
    read("docs/deploy.md")
}

/// Every `az …` / `azd …` call in a shell line, also inside `$(…)`, as its command: the tool and
/// the lowercase words that follow it, up to the first argument (`az cosmosdb restore`,
/// `azd env set`, `azd provision`).
fn commands_in(line: &str) -> Vec<String> {
    let start = Regex::new(r"(?:^|[\s(;|&])(azd|az)\s").unwrap();
    let word = Regex::new(r"^[a-z][a-z0-9-]*$").unwrap();
    let mut found = Vec::new();
    for capture in start.captures_iter(line) {
        let tool = capture.get(1).unwrap();
        let mut command = vec![tool.as_str().to_owned()];
        for token in line[tool.end()..].split_whitespace() {
            let token = token.trim_end_matches([')', ';', '"']);
            if !word.is_match(token) {
                break;
            }
            command.push(token.to_owned());
        }
        // Everything after the comment sign is a comment.
        if line[..tool.start()].contains(" #") {
            continue;
        }
        found.push(command.join(" "));
    }
    found
}

/// The shell's comment, if any, cut off (a `#` after a space, outside quotes is all this page
/// writes).
fn without_comment(line: &str) -> &str {
    line.find(" #").map_or(line, |at| &line[..at])
}

/// `infra/main.parameters.json`: the environment variables its values name (`${NAME}`, or
/// `${NAME=default}`).
fn mapped_variables() -> BTreeSet<String> {
    let json: Value = serde_json::from_str(&read("infra/main.parameters.json")).unwrap();
    json["parameters"]
        .as_object()
        .expect("a parameters object")
        .values()
        .filter_map(|parameter| parameter["value"].as_str())
        .filter_map(|value| value.strip_prefix("${").and_then(|rest| rest.strip_suffix('}')))
        .map(|inner| inner.split_once('=').map_or(inner, |(name, _default)| name).to_owned())
        .collect()
}

/// The items of `azure.yaml`'s `pipeline:` `variables:` and `secrets:`.
fn pipeline_listed() -> BTreeSet<String> {
    let text = read("azure.yaml");
    let listed: BTreeSet<String> = ["variables", "secrets"]
        .iter()
        .flat_map(|key| yaml_block(&text, &["pipeline", key]))
        .filter_map(|line| line.trim().strip_prefix("- ").map(|item| item.trim().to_owned()))
        .collect();
    assert!(!listed.is_empty(), "azure.yaml's pipeline: lists the values CI needs");
    listed
}

fn walked_sections() -> Vec<Section> {
    let page = deploy_page();
    let sections = vec![section(&page, CI_SECTION), section(&page, RESTORE_SECTION)];
    for section in &sections {
        assert!(!section.shell_blocks.is_empty(), "{}: no ```sh block", section.title);
    }
    sections
}

/// (a) Each `azd env set NAME …` in the two sections gives a value the deployment reads: one
/// `infra/main.parameters.json` maps to a parameter, or one `azure.yaml`'s `pipeline:` carries to
/// CI. A name neither knows would be kept in the environment and read by nothing.
#[test]
fn every_azd_env_set_names_a_value_the_deployment_reads() {
    let (mapped, listed) = (mapped_variables(), pipeline_listed());
    let set = Regex::new(r"\bazd env set ([A-Za-z_][A-Za-z0-9_]*)").unwrap();
    let mut seen = BTreeMap::new();
    let mut problems = Vec::new();
    for section in walked_sections() {
        for line in section.shell_blocks.iter().flatten() {
            for capture in set.captures_iter(without_comment(line)) {
                let name = capture[1].to_owned();
                if !mapped.contains(&name) && !listed.contains(&name) {
                    problems.push(format!(
                        "{}: `azd env set {name}`: neither infra/main.parameters.json maps {name} nor azure.yaml's pipeline lists it",
                        section.title
                    ));
                }
                seen.entry(section.title.clone()).or_insert_with(Vec::new).push(name);
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The runbooks rely on these: the restored account's name, and the token key made anew.
    assert!(
        seen.get(RESTORE_SECTION)
            .is_some_and(|names| names.iter().any(|name| name == "BLOG_COSMOS_ACCOUNT_NAME")),
        "{seen:?}"
    );
    assert!(
        seen.get(CI_SECTION).is_some_and(|names| names.iter().any(|name| name == "BLOG_TOKEN_KEY")),
        "{seen:?}"
    );
}

/// (b) Each handler command the two sections run (`handler <command>`, `dist/app/handler
/// <command>` or `cargo run … -- <command>`) is one the built handler accepts: `<command> --help`
/// succeeds.
#[test]
fn every_handler_command_in_the_runbooks_exists() {
    let handler = Regex::new(r"(?:^|[\s/])handler\s+([a-z][a-z-]*)").unwrap();
    let cargo = Regex::new(r"\bcargo run\b.*?\s--\s+([a-z][a-z-]*)").unwrap();
    let mut commands = BTreeSet::new();
    for section in walked_sections() {
        for line in section.shell_blocks.iter().flatten() {
            let line = without_comment(line);
            for pattern in [&handler, &cargo] {
                for capture in pattern.captures_iter(line) {
                    commands.insert(capture[1].to_owned());
                }
            }
        }
    }
    assert!(
        commands.contains("rebuild-copies"),
        "the restore runbook rebuilds the copies: {commands:?}"
    );
    for command in &commands {
        let output = Command::new(env!("CARGO_BIN_EXE_handler"))
            .args([command.as_str(), "--help"])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "docs/deploy.md runs `handler {command}`, which the handler refuses: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The section's "Sources of the commands" list: `- `command`: citation` lines.
fn listed_sources(section: &Section) -> BTreeMap<String, String> {
    let entry = Regex::new(r"^- `((?:azd|az) [^`]+)`: (.+)$").unwrap();
    let start = section.prose.find("**Sources of the commands").unwrap_or_else(|| {
        panic!("{}: no \"Sources of the commands\" list after the commands", section.title)
    });
    section.prose[start..]
        .lines()
        .filter_map(|line| entry.captures(line.trim()))
        .map(|capture| (capture[1].to_owned(), capture[2].to_owned()))
        .collect()
}

/// A citation this page's way: a file in a named repository (a path with a file's extension), or
/// a Microsoft Learn page by its name in quotes.
fn is_citation(text: &str) -> bool {
    let path =
        Regex::new(r"`?[\w.-]+(?:/[\w.-]+)*\.(?:go|md|py|bicep|json|yml|ymlt|rs|sh|cs)`?").unwrap();
    let learn = Regex::new(r#"Microsoft Learn, "[^"]{4,}""#).unwrap();
    path.is_match(text) || learn.is_match(text)
}

/// (c) Every `az`/`azd` command the two sections give is named under the section's "Sources of
/// the commands", with a citation: a repository's file or a Microsoft Learn page. None of them
/// can run here; the list says where each one's behaviour, as the page describes it, was read.
/// Entries for commands the section no longer runs are reported too, so the list stays true.
#[test]
fn every_azure_cli_command_in_the_runbooks_cites_its_source() {
    let mut problems = Vec::new();
    for section in walked_sections() {
        let sources = listed_sources(&section);
        let used: BTreeSet<String> =
            section.shell_blocks.iter().flatten().flat_map(|line| commands_in(line)).collect();
        assert!(!used.is_empty(), "{}: no az or azd command found", section.title);
        for command in &used {
            match sources.get(command) {
                None => problems.push(format!("{}: `{command}` is run, and its Sources list does not name it", section.title)),
                Some(citation) if !is_citation(citation) => problems.push(format!(
                    "{}: `{command}`: {citation:?} cites neither a repository's file nor a Microsoft Learn page",
                    section.title
                )),
                Some(_) => {}
            }
        }
        for listed in sources.keys() {
            if !used.contains(listed) {
                problems.push(format!(
                    "{}: the Sources list names `{listed}`, which the section does not run",
                    section.title
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The commands of the workflow's header, in order: its indented `#   azd …` lines.
fn workflow_setup_order() -> Vec<String> {
    let text = read(".github/workflows/azure-dev.yml");
    let header = text.lines().take_while(|line| line.starts_with('#') || line.trim().is_empty());
    let setup = Regex::new(r"^#\s{2,}(azd .*)$").unwrap();
    header
        .filter_map(|line| setup.captures(line))
        .flat_map(|capture| commands_in(&capture[1]))
        .collect()
}

/// (d) The CI section's setup (its first block) is the workflow's: the same commands, in the
/// order the workflow's header gives (`azd pipeline config`, then `azd provision` by an owner of
/// the registration, then `azd pipeline config` again).
#[test]
fn the_ci_setup_is_in_the_order_the_workflow_gives() {
    let expected = workflow_setup_order();
    assert_eq!(
        expected,
        ["azd pipeline config", "azd provision", "azd pipeline config"],
        "the workflow's header: azd pipeline config, azd provision (by an owner), azd pipeline config"
    );
    let page = deploy_page();
    let ci = section(&page, CI_SECTION);
    let setup: Vec<String> = ci.shell_blocks[0].iter().flat_map(|line| commands_in(line)).collect();
    assert_eq!(
        setup, expected,
        "docs/deploy.md, {CI_SECTION:?}: the first block is the one-time setup, in the workflow's order"
    );
}

/// The helpers themselves, on lines like the page's.
#[test]
fn commands_are_read_as_the_page_writes_them() {
    assert_eq!(
        commands_in("azd env set BLOG_TOKEN_KEY \"$(openssl rand -hex 24)\""),
        ["azd env set"]
    );
    assert_eq!(
        commands_in("TARGET=$(az cosmosdb show -g \"$RG\" -n x --query location -o tsv)"),
        ["az cosmosdb show"]
    );
    assert_eq!(commands_in("eval \"$(azd env get-values)\""), ["azd env get-values"]);
    assert_eq!(commands_in("azd provision --preview"), ["azd provision"]);
    assert_eq!(
        commands_in("az ad app owner add --id \"$X\" --owner-object-id <id>"),
        ["az ad app owner add"]
    );
    assert_eq!(commands_in("cargo run -- rebuild-copies  # not az login"), Vec::<String>::new());
    let lines = joined_lines(&[
        "az cosmosdb restore -g x \\".into(),
        "  --disable-ttl True".into(),
        "# a comment".into(),
    ]);
    assert_eq!(lines, ["az cosmosdb restore -g x    --disable-ttl True"]);
    assert!(is_citation(
        "azure-dev `pkg/pipeline/pipeline.go` (`mergeProjectVariablesAndSecrets`)"
    ));
    assert!(is_citation(
        "Microsoft Learn, \"Work with Azure Developer CLI environment variables\"."
    ));
    assert!(!is_citation("see the docs"));
}
