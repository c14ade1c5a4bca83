//! `chromiumoxide` builds Chromium's command line and spawns the executable it is given; here
//! that executable is a script that writes its arguments to a file and exits, so the test sees
//! exactly what Chromium would have been passed.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use browser_policy::{DISABLE_FEATURES, DRIVER_DEFAULTS, Display, STEWARD_DISABLED_FEATURES, Switch, launch};
use chromiumoxide::BrowserConfig;

/// Writing an executable and spawning it, one test at a time: a fork in another thread while
/// the script is still open for writing would make its exec fail (`ETXTBSY`).
static SPAWNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The arguments the driver passes for `display`, with the policy applied or not.
async fn recorded(dir: &Path, display: Display, policy: bool) -> Vec<String> {
    let name = format!("{display:?}-{policy}");
    let executable = dir.join(format!("{name}.sh"));
    let output = dir.join(format!("{name}.args"));
    let spawning = SPAWNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    std::fs::write(
        &executable,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}.partial'\nmv '{0}.partial' '{0}'\n",
            output.display()
        ),
    )
    .expect("write the stand-in");
    std::fs::set_permissions(&executable, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let mut builder = BrowserConfig::builder()
        .chrome_executable(&executable)
        .user_data_dir(dir.join("profile"));
    if display == Display::Headed {
        builder = builder.with_head();
    }
    if policy {
        let launch = launch(display);
        if launch.replaces_driver_defaults {
            builder = builder.disable_default_args();
        }
        for switch in &launch.switches {
            builder = builder.arg((switch.name, switch.values.as_slice()));
        }
    }
    let config = builder.build().expect("a configuration");
    let mut child = config.launch().expect("spawn the stand-in");
    drop(spawning);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !output.exists() {
        assert!(Instant::now() < deadline, "the stand-in never wrote its arguments");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = child.wait().await;
    std::fs::read_to_string(&output)
        .expect("read the arguments")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn switches_named<'a>(arguments: &'a [String], name: &str) -> Vec<&'a String> {
    let prefix = format!("--{name}");
    arguments
        .iter()
        .filter(|argument| **argument == prefix || argument.starts_with(&format!("{prefix}=")))
        .collect()
}

fn values(switch: &str) -> Vec<&str> {
    switch
        .split_once('=')
        .map(|(_, values)| values.split(',').collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn headed_repeats_the_installed_drivers_defaults_in_one_disable_features_switch() {
    let dir = tempfile::tempdir().expect("a directory");
    let driver = recorded(dir.path(), Display::Headed, false).await;
    let ours = recorded(dir.path(), Display::Headed, true).await;

    // The driver's own defaults are the ones this crate repeats.
    let repeated: BTreeSet<String> = DRIVER_DEFAULTS
        .iter()
        .map(|(name, values)| {
            Switch {
                name,
                values: values.to_vec(),
            }
            .command_line()
        })
        .collect();
    let driver_set: BTreeSet<String> = driver.iter().cloned().collect();
    let missing: Vec<&String> = repeated.difference(&driver_set).collect();
    assert!(
        missing.is_empty(),
        "the driver no longer passes {missing:?}: {driver:?}"
    );
    let driver_features = switches_named(&driver, DISABLE_FEATURES);
    assert_eq!(driver_features.len(), 1, "{driver:?}");

    // One switch: the driver's list, then the four.
    let features = switches_named(&ours, DISABLE_FEATURES);
    assert_eq!(features.len(), 1, "exactly one --disable-features: {ours:?}");
    let mut expected = values(driver_features[0]);
    expected.extend(STEWARD_DISABLED_FEATURES);
    assert_eq!(values(features[0]), expected);
    assert_eq!(
        switches_named(&ours, "gcm-checkin-url"),
        ["--gcm-checkin-url=about:blank"]
    );

    // Nothing else differs: no default removed, no user agent set, no indicator masked.
    let ours_set: BTreeSet<String> = ours.iter().cloned().collect();
    let removed: Vec<&String> = driver_set
        .difference(&ours_set)
        .filter(|argument| !argument.starts_with("--disable-features="))
        .collect();
    assert!(removed.is_empty(), "removed from the driver's launch: {removed:?}");
    let added: Vec<&String> = ours_set
        .difference(&driver_set)
        .filter(|argument| !argument.starts_with("--disable-features="))
        .collect();
    assert_eq!(added, ["--gcm-checkin-url=about:blank"]);
    assert!(ours.contains(&"--enable-automation".to_owned()));
    assert_eq!(ours.len(), driver.len() + 1, "{ours:?}");
}

#[tokio::test]
async fn headless_is_the_drivers_launch_unchanged() {
    let dir = tempfile::tempdir().expect("a directory");
    let driver: BTreeSet<String> = recorded(dir.path(), Display::Headless, false)
        .await
        .into_iter()
        .collect();
    let ours: BTreeSet<String> = recorded(dir.path(), Display::Headless, true)
        .await
        .into_iter()
        .collect();
    assert_eq!(ours, driver);
    assert!(ours.contains("--headless"), "{ours:?}");
    assert!(!ours.iter().any(|argument| argument.starts_with("--gcm-checkin-url")));
    let features: Vec<&String> = ours
        .iter()
        .filter(|argument| argument.starts_with("--disable-features="))
        .collect();
    for feature in STEWARD_DISABLED_FEATURES {
        assert!(!features.iter().any(|switch| switch.contains(feature)), "{features:?}");
    }
}
