//! Reading a few keys of azure.yaml and the GitHub workflow without a YAML parser among the
//! dependencies: both are written in block style (no flow collections, no anchors, no multi-line
//! keys), which these follow by indentation.
#![allow(dead_code)]

use std::collections::BTreeMap;

/// The lines of a YAML block mapping's value at `path` (each key one level deeper), or of a
/// literal block scalar (`key: |`), without blank and comment lines.
pub(crate) fn yaml_block(text: &str, path: &[&str]) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for key in path {
        let indent_of = |line: &str| line.len() - line.trim_start().len();
        let meaningful =
            |line: &String| !line.trim().is_empty() && !line.trim_start().starts_with('#');
        let base = lines
            .iter()
            .filter(|line| meaningful(line))
            .map(|line| indent_of(line))
            .min()
            .unwrap_or(0);
        let at = lines
            .iter()
            .position(|line| {
                meaningful(line)
                    && indent_of(line) == base
                    && [format!("{key}:"), format!("{key}: |")].contains(&line.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no key {key:?} in the YAML block {path:?}"));
        lines = lines[at + 1..]
            .iter()
            .take_while(|line| !meaningful(line) || indent_of(line) > base)
            .filter(|line| meaningful(line))
            .cloned()
            .collect();
    }
    lines
}

/// `KEY: value` lines of a block mapping, at its own indentation.
pub(crate) fn yaml_mapping(lines: &[String]) -> BTreeMap<String, String> {
    let base = lines.iter().map(|line| line.len() - line.trim_start().len()).min().unwrap_or(0);
    lines
        .iter()
        .filter(|line| line.len() - line.trim_start().len() == base)
        .filter_map(|line| {
            line.trim()
                .split_once(": ")
                .map(|(key, value)| (key.to_owned(), value.trim().to_owned()))
        })
        .collect()
}

/// The items of a block sequence (`- …` lines at one indentation), each as a block mapping: its
/// first line's `- ` made spaces, so that `yaml_block` and `yaml_mapping` read it.
pub(crate) fn yaml_items(lines: &[String]) -> Vec<Vec<String>> {
    let base = lines.iter().map(|line| line.len() - line.trim_start().len()).min().unwrap_or(0);
    let mut items: Vec<Vec<String>> = Vec::new();
    for line in lines {
        let indent = line.len() - line.trim_start().len();
        if indent == base && line.trim_start().starts_with("- ") {
            items.push(vec![format!("{}  {}", " ".repeat(base), &line.trim_start()[2..])]);
        } else if let Some(item) = items.last_mut() {
            item.push(line.clone());
        }
    }
    items
}
