//! No module cycles: within every crate of the workspace, sibling modules (the children of one
//! module) depend on each other without a cycle, so each can be read, and moved, after the ones
//! it uses. A module's dependencies are the `crate::…`, `super::…` and `self::…` paths of its
//! files outside `#[cfg(test)]`; a dependency of `a::x` on `b::y` counts as `a` on `b` where
//! `a` and `b` are siblings. A child using its parent (or the parent its children) is no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type ModulePath = Vec<String>;

/// The source files of one crate, by module path (`lib.rs`/`main.rs` is the root, `[]`).
fn modules(src: &Path) -> BTreeMap<ModulePath, String> {
    fn walk(dir: &Path, prefix: &ModulePath, out: &mut BTreeMap<ModulePath, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries {
            let path = entry.expect("directory entry").path();
            let name = path.file_name().expect("name").to_string_lossy().into_owned();
            if path.is_dir() {
                let mut inner = prefix.clone();
                inner.push(name);
                walk(&path, &inner, out);
                continue;
            }
            let Some(stem) = name.strip_suffix(".rs") else { continue };
            let module = match stem {
                "mod" => prefix.clone(),
                "lib" | "main" if prefix.is_empty() => Vec::new(),
                // Other binaries' roots (`src/bin/*.rs`) are crates of their own.
                _ if prefix.first().is_some_and(|first| first == "bin") => continue,
                _ => {
                    let mut module = prefix.clone();
                    module.push(stem.to_owned());
                    module
                }
            };
            // Test modules may use anything.
            if module.iter().any(|part| part == "tests") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read a source");
            // Comments (doc links included) name modules without depending on them.
            let code: String = crate::docs::production(&text)
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .flat_map(|line| [line, "\n"])
                .collect();
            out.entry(module).or_default().push_str(&code);
        }
    }
    let mut out = BTreeMap::new();
    walk(src, &Vec::new(), &mut out);
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths a file names from its crate: each `crate::`, `super::` or `self::` path, with
/// `{a, b::c}` groups expanded (first segments only; enough to find the module meant).
fn named_paths(module: &ModulePath, code: &str) -> Vec<ModulePath> {
    let mut found = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let starts_word = index == 0 || !is_ident(chars[index - 1]) && chars[index - 1] != ':';
        let rest: String = chars[index..chars.len().min(index + 6)].iter().collect();
        if !starts_word || !(rest.starts_with("crate:") || rest.starts_with("super:") || rest.starts_with("self::")) {
            index += 1;
            continue;
        }
        // Resolve the leading `crate`/`super`/`self` segments.
        let mut base: ModulePath = module.clone();
        let mut cursor = index;
        loop {
            let word: String = chars[cursor..].iter().take_while(|c| is_ident(**c)).collect();
            let after = cursor + word.len();
            let separated = chars.get(after) == Some(&':') && chars.get(after + 1) == Some(&':');
            match word.as_str() {
                "crate" if cursor == index && separated => base.clear(),
                "super" if separated => {
                    base.pop();
                }
                "self" if separated => {}
                _ => break,
            }
            cursor = after + 2;
        }
        let mut tails = Vec::new();
        if chars.get(cursor) == Some(&'{') {
            // A group: each item up to the matching brace, split at top-level commas.
            let mut depth = 0;
            let mut item = String::new();
            for &c in &chars[cursor + 1..] {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        tails.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            tails.push(item);
        } else {
            tails.push(
                chars[cursor..]
                    .iter()
                    .take_while(|c| is_ident(**c) || **c == ':')
                    .collect(),
            );
        }
        for tail in tails {
            let mut path = base.clone();
            path.extend(
                tail.trim()
                    .split("::")
                    .map(|segment| segment.trim().chars().take_while(|c| is_ident(*c)).collect::<String>())
                    .take_while(|segment| !segment.is_empty() && segment != "self"),
            );
            found.push(path);
        }
        index = cursor.max(index + 1);
    }
    found
}

/// The longest prefix of `path` that is a module of the crate.
fn module_of(path: &ModulePath, known: &BTreeMap<ModulePath, String>) -> ModulePath {
    (0..=path.len())
        .rev()
        .map(|length| path[..length].to_vec())
        .find(|prefix| known.contains_key(prefix))
        .unwrap_or_default()
}

/// Sibling dependencies: parent → (child → the children it uses).
fn sibling_edges(known: &BTreeMap<ModulePath, String>) -> BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>> {
    let mut edges: BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (module, code) in known {
        for path in named_paths(module, code) {
            let target = module_of(&path, known);
            let common = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
            // An ancestor or a descendant: no sibling pair.
            if common == module.len() || common == target.len() {
                continue;
            }
            edges
                .entry(module[..common].to_vec())
                .or_default()
                .entry(module[common].clone())
                .or_default()
                .insert(target[common].clone());
        }
    }
    edges
}

/// The groups of modules that depend on each other in a cycle: each strongly connected set of
/// two or more (the graphs are small, so by reachability).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reachable = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut work = vec![from.to_owned()];
        while let Some(node) = work.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    work.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|node| (node, reachable(node))).collect();
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for (node, from) in &reach {
        if !from.contains(*node) || groups.iter().any(|group| group.contains(*node)) {
            continue;
        }
        let group: BTreeSet<String> = from
            .iter()
            .filter(|other| reach.get(other).is_some_and(|back| back.contains(*node)))
            .cloned()
            .collect();
        groups.push(group);
    }
    groups
}

fn crate_sources() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    let mut found = vec![("xtask".to_owned(), root.join("xtask/src"))];
    for parent in ["crates", "bins"] {
        for member in std::fs::read_dir(root.join(parent)).expect("members") {
            let member = member.expect("member").path();
            let name = member.file_name().expect("name").to_string_lossy().into_owned();
            found.push((format!("{parent}/{name}"), member.join("src")));
        }
    }
    found.sort();
    found
}

fn cycles_of(src: &Path) -> Vec<String> {
    let known = modules(src);
    sibling_edges(&known)
        .iter()
        .flat_map(|(parent, graph)| {
            let inside = if parent.is_empty() {
                "the crate root".to_owned()
            } else {
                parent.join("::")
            };
            cycles(graph).into_iter().map(move |group| {
                let names: Vec<String> = group.into_iter().collect();
                format!("{} (in {inside})", names.join(" ↔ "))
            })
        })
        .collect()
}

#[test]
fn no_crate_has_a_module_cycle() {
    let mut found = Vec::new();
    for (name, src) in crate_sources() {
        for cycle in cycles_of(&src) {
            found.push(format!("{name}: {cycle}"));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle_through_groups_and_super() {
    let dir = std::env::temp_dir().join(format!("steward-cycles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("handlers")).expect("create");
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write");
    write("lib.rs", "mod handlers;\nmod routes;\nmod openapi;\n");
    write("routes.rs", "use crate::{handlers::drafts, openapi::document};\n");
    write("openapi.rs", "fn paths() { crate::routes::all(); }\n");
    write("handlers/health.rs", "//! Served beside [`crate::routes`].\n");
    write("handlers/mod.rs", "pub mod drafts;\npub mod email;\npub mod health;\n");
    write("handlers/drafts.rs", "use super::email::Thread;\n");
    write(
        "handlers/email.rs",
        "use super::super::handlers::drafts;\n#[cfg(test)]\nmod tests {\n    use crate::routes;\n}\n",
    );
    let mut cycles = cycles_of(&dir);
    cycles.sort();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        cycles,
        ["drafts ↔ email (in handlers)", "openapi ↔ routes (in the crate root)"]
    );
}
