//! Embeds the web client (`web/public`) for `api::web`, with content-hashed names.
//!
//! Every script and style sheet (`.js`, `.mjs`, `.css`, but `sw.js`, whose address must stay put)
//! is given the name `<stem>.<first 16 hex digits of its SHA-256>.<ext>`, after the relative
//! imports inside it have been rewritten to the hashed names of what they import (so a change
//! anywhere renames every module that leads to it). `index.html` and `sw.js` are rewritten to
//! name the hashed files; they keep their own names and are revalidated on every load, while a
//! hashed file can be cached for good. Type declarations (`.d.mts`) are for `tsc` only and are
//! left out. The result goes to `OUT_DIR/web`, which memory-serve embeds (brotli-compressed at
//! build time) in every profile, so tests serve exactly what ships and a binary never reads the
//! source tree. No Node is involved.
//!
//! This is the one step a bundler would do; it is done here so `cargo build` needs nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/public");
    println!("cargo::rerun-if-changed={}", source.display());
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("web");
    let files = read_tree(&source, &source);
    let built = hash_names(&files);
    write_tree(&out, &built);
    memory_serve::load_directory_with_embed(out, true);
}

/// Every file under `dir`, by its path from `root` with `/` separators.
fn read_tree(root: &Path, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in fs::read_dir(dir).unwrap_or_else(|error| panic!("read {}: {error}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            files.extend(read_tree(root, &path));
        } else {
            let name = path
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            if !name.ends_with(".d.mts") {
                files.insert(name, fs::read(&path).expect("read a web file"));
            }
        }
    }
    files
}

fn hashable(name: &str) -> bool {
    name != "sw.js" && (name.ends_with(".js") || name.ends_with(".mjs") || name.ends_with(".css"))
}

/// The relative module specifiers in `text` (`"./x.js"`, `"../vendor/y.mjs"`), with their byte
/// ranges (the quotes excluded).
fn specifiers(text: &str) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices(['"', '\'']) {
        let quote = bytes[at];
        let start = at + 1;
        let rest = &text[start..];
        if !(rest.starts_with("./") || rest.starts_with("../")) {
            continue;
        }
        let Some(length) = rest.bytes().position(|byte| byte == quote || byte == b'\n') else {
            continue;
        };
        let value = &rest[..length];
        if bytes.get(start + length) == Some(&quote) && (value.ends_with(".js") || value.ends_with(".mjs")) {
            found.push((start, start + length, value.to_owned()));
        }
    }
    found
}

/// `specifier` resolved against the file `from` (both relative to the root).
fn resolve(from: &str, specifier: &str) -> String {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in specifier.split('/') {
        match part {
            "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// The hashed name of `name` with `content`.
fn hashed(name: &str, content: &[u8]) -> String {
    let digest: String = Sha256::digest(content)
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let (stem, extension) = name.rsplit_once('.').expect("an extension");
    format!("{stem}.{digest}.{extension}")
}

/// The files as served: hashable ones renamed (imports rewritten first), the page and the
/// service worker pointing at the new names.
fn hash_names(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    let mut renamed: BTreeMap<String, (String, Vec<u8>)> = BTreeMap::new();
    let pending: BTreeSet<&String> = files.keys().filter(|name| hashable(name)).collect();
    let mut pending: Vec<&String> = pending.into_iter().collect();
    // Dependencies first: a module is renamed once everything it imports has been.
    while !pending.is_empty() {
        let before = pending.len();
        pending.retain(|name| {
            let text = String::from_utf8_lossy(&files[*name]).into_owned();
            let imports = specifiers(&text);
            let targets: Vec<String> = imports.iter().map(|(_, _, spec)| resolve(name, spec)).collect();
            if targets
                .iter()
                .any(|target| files.contains_key(target) && !renamed.contains_key(target))
            {
                return true;
            }
            let mut rewritten = text.clone();
            for ((start, end, spec), target) in imports.iter().zip(&targets).rev() {
                if let Some((new_name, _)) = renamed.get(target) {
                    let old_file = spec.rsplit('/').next().expect("a file name");
                    let new_file = new_name.rsplit('/').next().expect("a file name");
                    let replacement = format!("{}{new_file}", &spec[..spec.len() - old_file.len()]);
                    rewritten.replace_range(*start..*end, &replacement);
                }
            }
            let content = if imports.is_empty() {
                files[*name].clone()
            } else {
                rewritten.into_bytes()
            };
            renamed.insert((*name).clone(), (hashed(name, &content), content));
            false
        });
        assert!(
            pending.len() < before,
            "web/public has an import cycle among {pending:?}"
        );
    }
    let absolute = |text: String| {
        let mut text = text;
        for (old, (new, _)) in &renamed {
            text = text.replace(&format!("\"/{old}\""), &format!("\"/{new}\""));
        }
        text
    };
    let mut built = BTreeMap::new();
    for (name, content) in files {
        if let Some((new_name, content)) = renamed.get(name) {
            built.insert(new_name.clone(), content.clone());
        } else if name == "index.html" {
            built.insert(
                name.clone(),
                absolute(String::from_utf8_lossy(content).into_owned()).into_bytes(),
            );
        } else if name == "sw.js" {
            // A new build is a new shell: its cache gets a new name and the old one is dropped.
            let shell: String = renamed
                .values()
                .map(|(new, _)| new.as_str())
                .collect::<Vec<_>>()
                .join(",");
            let version = hashed("shell.v", shell.as_bytes());
            let text = absolute(String::from_utf8_lossy(content).into_owned()).replace(
                "steward-shell-v1",
                &format!("steward-{}", version.trim_end_matches(".v")),
            );
            built.insert(name.clone(), text.into_bytes());
        } else {
            built.insert(name.clone(), content.clone());
        }
    }
    built
}

/// Writes `files` under `out`, leaving a file whose content is unchanged untouched (so the next
/// build does not see it as new) and removing what is no longer built.
fn write_tree(out: &Path, files: &BTreeMap<String, Vec<u8>>) {
    let existing = if out.exists() {
        read_tree(out, out)
    } else {
        BTreeMap::new()
    };
    for name in existing.keys().filter(|name| !files.contains_key(*name)) {
        fs::remove_file(out.join(name)).expect("remove a stale web file");
    }
    for (name, content) in files {
        if existing.get(name) == Some(content) {
            continue;
        }
        let path = out.join(name);
        fs::create_dir_all(path.parent().expect("a parent")).expect("create a web directory");
        fs::write(&path, content).expect("write a web file");
    }
}
