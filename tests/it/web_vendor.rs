//! The web client's vendored libraries are exactly the files `web/update-vendor.sh` produced
//! from the npm tarballs it pins: every module is listed in `web/vendor.sha256` with its digest,
//! and nothing else is vendored.

use std::collections::BTreeSet;
use std::path::Path;

use sha2::{Digest, Sha256};

#[test]
fn every_vendored_module_matches_its_recorded_checksum() {
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
    let vendor = web.join("public/vendor");
    let sums = std::fs::read_to_string(web.join("vendor.sha256")).expect("read web/vendor.sha256");
    let mut listed = BTreeSet::new();
    for line in sums.lines().filter(|line| !line.trim().is_empty()) {
        let (digest, name) = line.split_once("  ").expect("`<sha256>  <file>` lines");
        let name = name.trim_start_matches("./");
        let bytes = std::fs::read(vendor.join(name)).unwrap_or_else(|error| panic!("read {name}: {error}"));
        let actual: String = Sha256::digest(&bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        assert_eq!(actual, digest, "{name} differs from what update-vendor.sh vendored");
        // The page has no import map: every import is a relative file.
        let text = String::from_utf8(bytes).expect("UTF-8");
        assert!(
            !text.contains("from\"preact") && !text.contains("from\"@preact"),
            "{name} keeps a bare import"
        );
        assert!(
            !text.contains("sourceMappingURL"),
            "{name} names a source map that is not vendored"
        );
        listed.insert(name.to_owned());
    }
    let present: BTreeSet<String> = std::fs::read_dir(&vendor)
        .expect("list web/vendor")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".mjs") || name.ends_with(".js"))
        .collect();
    assert_eq!(present, listed, "every vendored module is listed, and only those");
    assert_eq!(
        listed.into_iter().collect::<Vec<_>>(),
        ["hooks.mjs", "htm.mjs", "preact.mjs", "signals-core.mjs", "signals.mjs"]
    );
}

#[test]
fn the_type_declarations_come_from_the_vendored_releases() {
    // `tsc --checkJs` reads each vendored module's types from the npm package web/e2e installs
    // (vendor/<module>.d.mts re-exports it): the two must name the same release.
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
    let script = std::fs::read_to_string(web.join("update-vendor.sh")).expect("read web/update-vendor.sh");
    let package: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(web.join("e2e/package.json")).expect("read web/e2e/package.json"),
    )
    .expect("package.json is JSON");
    let mut pinned = 0;
    for line in script.lines().filter_map(|line| line.trim().strip_prefix("fetch ")) {
        let mut words = line.split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            continue;
        };
        assert_eq!(
            package["devDependencies"][name].as_str(),
            Some(version),
            "web/e2e/package.json must pin {name} {version}, the vendored release"
        );
        pinned += 1;
    }
    assert_eq!(pinned, 4, "preact, @preact/signals, @preact/signals-core and htm");
}
