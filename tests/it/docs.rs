//! The documents hold together: every relative link of the README, ARCHITECTURE.md,
//! CONTRIBUTING.md and `docs/` resolves (the file, and the heading a `#fragment` names), and the
//! configuration pages document exactly the environment variables the code reads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Every file under `dir` (recursively) whose name ends with `suffix`.
fn files(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            files(&path, suffix, out);
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
}

/// The Markdown the project keeps: the front door, the architecture, the habits, `docs/`, and
/// the READMEs beside the policies and units.
fn documents() -> Vec<PathBuf> {
    let root = workspace();
    let mut found: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
        "policies/README.md",
        "systemd/README.md",
    ]
    .iter()
    .map(|name| root.join(name))
    .collect();
    files(&root.join("docs"), ".md", &mut found);
    found
}

/// The text outside fenced code blocks and inline code spans, line by line.
fn prose(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop inline code: the text between pairs of backticks.
        let kept: String = line
            .split('`')
            .enumerate()
            .filter(|(index, _)| index % 2 == 0)
            .map(|(_, part)| part)
            .collect();
        lines.push(kept);
    }
    lines
}

/// The targets of the Markdown links `[label](target)` in `text`.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose(text) {
        let mut rest = line.as_str();
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            let Some(end) = rest.find(')') else { break };
            targets.push(rest[..end].trim().to_owned());
            rest = &rest[end..];
        }
    }
    targets
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut found = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.insert(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_relative_link_of_the_documents_resolves() {
    let root = workspace();
    let mut broken = Vec::new();
    let mut checked = 0;
    for document in documents() {
        let text =
            std::fs::read_to_string(&document).unwrap_or_else(|error| panic!("read {}: {error}", document.display()));
        let name = document
            .strip_prefix(&root)
            .expect("inside the workspace")
            .display()
            .to_string();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            checked += 1;
            let (path, fragment) = target.split_once('#').unwrap_or((target.as_str(), ""));
            let file = if path.is_empty() {
                document.clone()
            } else {
                document.parent().expect("a directory").join(path)
            };
            if !file.exists() {
                broken.push(format!("{name}: {target} (no such file)"));
                continue;
            }
            if !fragment.is_empty() {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                if !anchors(&text).contains(fragment) {
                    broken.push(format!("{name}: {target} (no such heading)"));
                }
            }
        }
    }
    assert!(checked > 40, "the links were found: {checked}");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Upper-case string literals of production code that are not environment variables.
const NOT_VARIABLES: &[(&str, &str)] = &[
    ("CARGO_MANIFEST_DIR", "set by cargo for build scripts"),
    ("CARGO_PKG_VERSION", "read at compile time by env!"),
    ("OUT_DIR", "set by cargo for build scripts"),
    ("LC_ALL", "set for PostgreSQL's own tools, never read"),
    ("PG_VERSION", "the name of a file in a PostgreSQL data directory"),
    ("SCREAMING_SNAKE_CASE", "serde's rename rule"),
    (
        "STEWARD_COMMIT",
        "set by the release crate's build script, read at compile time by env!",
    ),
];

fn is_variable_name(word: &str) -> bool {
    word.len() >= 4
        && word.contains('_')
        && !word.ends_with('_')
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// A source file's production code: what comes before its inline test module (a `mod tests;`
/// declaration is not one: its file is left out by its path).
pub(crate) fn production(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests {").map_or(text, |end| &text[..end])
}

/// The environment variables production code names: upper-case string literals of every crate
/// and binary (tests, the test kit and the bench tool left out).
fn variables_read() -> BTreeSet<String> {
    let root = workspace();
    let mut sources = Vec::new();
    for parent in ["crates", "bins"] {
        for member in std::fs::read_dir(root.join(parent)).expect("members") {
            let member = member.expect("member").path();
            let name = member.file_name().expect("name").to_string_lossy().into_owned();
            if name == "testkit" || name == "steward-bench" {
                continue;
            }
            files(&member.join("src"), ".rs", &mut sources);
            // A build script's variables are read when the binaries are built (the commit).
            if member.join("build.rs").is_file() {
                sources.push(member.join("build.rs"));
            }
        }
    }
    let mut found = BTreeSet::new();
    for source in sources
        .iter()
        .filter(|source| !source.components().any(|part| part.as_os_str() == "tests"))
    {
        let text = std::fs::read_to_string(source).expect("read a source");
        let code = production(&text);
        for (index, literal) in code.split('"').enumerate() {
            if index % 2 == 1 && is_variable_name(literal) {
                found.insert(literal.to_owned());
            }
        }
    }
    for (name, _) in NOT_VARIABLES {
        found.remove(*name);
    }
    found
}

/// The variables the configuration pages name (in backticks).
fn variables_documented() -> BTreeSet<String> {
    let mut pages = Vec::new();
    files(&workspace().join("docs/configuration"), ".md", &mut pages);
    assert!(pages.len() >= 7, "one page per role and an index: {pages:?}");
    let mut found = BTreeSet::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("read a page");
        for (index, span) in text.split('`').enumerate() {
            if index % 2 == 1 && is_variable_name(span) {
                found.insert(span.to_owned());
            }
        }
    }
    found
}

#[test]
fn the_configuration_pages_document_exactly_the_variables_the_code_reads() {
    let read = variables_read();
    let documented = variables_documented();
    assert!(
        read.contains("DATABASE_URL") && read.contains("API_WEB_ORIGIN"),
        "{read:?}"
    );
    let undocumented: Vec<&String> = read.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "read by the code but in no page of docs/configuration: {undocumented:?}"
    );
    let unread: Vec<&String> = documented.difference(&read).collect();
    assert!(
        unread.is_empty(),
        "documented in docs/configuration but read by no code: {unread:?}"
    );
}
