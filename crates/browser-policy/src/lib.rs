//! The hosted browser's policy, with no I/O (the spec's "Hosted browser launch policy"): how
//! Chromium is launched ([`launch`]), the managed policy the deployment installs
//! ([`MANAGED_POLICY`], [`MANAGED_POLICY_DIRECTORIES`]) and what its egress proxy lets out
//! ([`egress`]). The browser role applies them; this crate only decides.
//!
//! A headed browser makes requests of its own to the browser vendor. Four features and the GCM
//! check-in address turn off the ones a switch can turn off; the managed policy stops the
//! dictionary download for `en-US`. What remains is one request at start to the vendor's
//! account-list host ([`egress::ACCOUNT_LIST_HOST`]), which has no switch and which the proxy
//! lets through.

pub mod egress;

/// The automation driver's own default switches, in its order: what `chromiumoxide` passes to
/// Chromium unless its defaults are replaced. A headed launch replaces them with this list
/// repeated (so that exactly one `--disable-features` switch is passed; Chromium keeps only
/// the last of several) and its features extended. The launch test (`tests/it/launch.rs`)
/// records the command line of the installed driver and fails when this copy differs from it.
pub const DRIVER_DEFAULTS: [(&str, &[&str]); 24] = [
    ("disable-background-networking", &[]),
    ("enable-features", &["NetworkService", "NetworkServiceInProcess"]),
    ("disable-background-timer-throttling", &[]),
    ("disable-backgrounding-occluded-windows", &[]),
    ("disable-breakpad", &[]),
    ("disable-client-side-phishing-detection", &[]),
    ("disable-component-extensions-with-background-pages", &[]),
    ("disable-default-apps", &[]),
    ("disable-dev-shm-usage", &[]),
    (DISABLE_FEATURES, &["TranslateUI"]),
    ("disable-hang-monitor", &[]),
    ("disable-ipc-flooding-protection", &[]),
    ("disable-popup-blocking", &[]),
    ("disable-prompt-on-repost", &[]),
    ("disable-renderer-backgrounding", &[]),
    ("disable-sync", &[]),
    ("force-color-profile", &["srgb"]),
    ("metrics-recording-only", &[]),
    ("no-first-run", &[]),
    ("enable-automation", &[]),
    ("password-store", &["basic"]),
    ("use-mock-keychain", &[]),
    ("enable-blink-features", &["IdleDetection"]),
    ("lang", &["en_US"]),
];

/// The switch whose list a headed launch extends.
pub const DISABLE_FEATURES: &str = "disable-features";

/// The features a headed launch turns off besides the driver's: the AI mode entry point, the
/// autofill server's crowdsourcing, the network time queries and the search preconnect.
pub const STEWARD_DISABLED_FEATURES: [&str; 4] = [
    "AimEnabled",
    "AutofillServerCommunication",
    "NetworkTimeServiceQuerying",
    "PreconnectToSearch",
];

/// The GCM check-in address of a headed launch: nowhere.
pub const GCM_CHECKIN: (&str, &str) = ("gcm-checkin-url", "about:blank");

/// How a browser is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Display {
    /// A real window (under Xvfb on a server): the hosted browser.
    Headed,
    /// No window.
    Headless,
}

/// One command-line switch: `--name` or `--name=v1,v2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    pub name: &'static str,
    pub values: Vec<&'static str>,
}

impl Switch {
    fn new(name: &'static str, values: &[&'static str]) -> Switch {
        Switch {
            name,
            values: values.to_vec(),
        }
    }

    /// As Chromium reads it.
    pub fn command_line(&self) -> String {
        if self.values.is_empty() {
            format!("--{}", self.name)
        } else {
            format!("--{}={}", self.name, self.values.join(","))
        }
    }
}

/// How to launch Chromium through the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Whether the driver's own defaults are replaced by [`Launch::switches`] (which then
    /// repeat every one of them); otherwise the switches are added to them.
    pub replaces_driver_defaults: bool,
    pub switches: Vec<Switch>,
}

/// The launch for `display`. Headed: the driver's defaults repeated, with its one
/// `--disable-features` switch extended by [`STEWARD_DISABLED_FEATURES`], and
/// `--gcm-checkin-url=about:blank`. Headless: the driver's launch, unchanged. Neither sets a
/// user agent, removes a default switch or masks an automation indicator.
pub fn launch(display: Display) -> Launch {
    match display {
        Display::Headless => Launch {
            replaces_driver_defaults: false,
            switches: Vec::new(),
        },
        Display::Headed => {
            let mut switches: Vec<Switch> = DRIVER_DEFAULTS
                .iter()
                .map(|(name, values)| {
                    let mut switch = Switch::new(name, values);
                    if *name == DISABLE_FEATURES {
                        switch.values.extend(STEWARD_DISABLED_FEATURES);
                    }
                    switch
                })
                .collect();
            switches.push(Switch::new(GCM_CHECKIN.0, &[GCM_CHECKIN.1]));
            Launch {
                replaces_driver_defaults: true,
                switches,
            }
        }
    }
}

/// The managed policy the deployment installs for every browser build, as
/// `policies/browser/steward.json`: no spelling dictionary is downloaded for `en-US`.
pub const MANAGED_POLICY: &str = include_str!("../../../policies/browser/steward.json");

/// The file name the managed policy is installed under, in each directory.
pub const MANAGED_POLICY_FILE: &str = "steward.json";

/// Where each browser build reads managed policies: (the build, its directory). Debian's
/// Chromium (x86_64 and arm64 alike) and Google Chrome (x86_64 only); the deployment installs
/// the policy in both, so whichever build a host runs has it.
pub const MANAGED_POLICY_DIRECTORIES: [(&str, &str); 2] = [
    ("Chromium (Debian; x86_64 and arm64)", "/etc/chromium/policies/managed"),
    ("Google Chrome (x86_64)", "/etc/opt/chrome/policies/managed"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn disable_features(launch: &Launch) -> Vec<&Switch> {
        launch
            .switches
            .iter()
            .filter(|switch| switch.name == DISABLE_FEATURES)
            .collect()
    }

    #[test]
    fn headed_passes_one_disable_features_switch_with_the_drivers_list_and_the_four() {
        let launch = launch(Display::Headed);
        assert!(launch.replaces_driver_defaults);
        let switches = disable_features(&launch);
        assert_eq!(switches.len(), 1, "a second switch would replace the first");
        assert_eq!(
            switches[0].command_line(),
            "--disable-features=TranslateUI,AimEnabled,AutofillServerCommunication,NetworkTimeServiceQuerying,PreconnectToSearch"
        );
        let lines: Vec<String> = launch.switches.iter().map(Switch::command_line).collect();
        assert!(lines.contains(&"--gcm-checkin-url=about:blank".to_owned()), "{lines:?}");
    }

    #[test]
    fn headed_repeats_every_driver_default_and_adds_only_the_check_in_address() {
        let launch = launch(Display::Headed);
        for (name, values) in DRIVER_DEFAULTS {
            let switch = launch
                .switches
                .iter()
                .find(|switch| switch.name == name)
                .unwrap_or_else(|| panic!("--{name} is repeated"));
            assert!(switch.values.starts_with(values), "--{name} keeps its values");
        }
        assert_eq!(launch.switches.len(), DRIVER_DEFAULTS.len() + 1);
        let names: Vec<&str> = launch.switches.iter().map(|switch| switch.name).collect();
        assert!(
            names.contains(&"enable-automation"),
            "no automation indicator is masked"
        );
        for masked in ["user-agent", "disable-blink-features", "headless"] {
            assert!(!names.contains(&masked), "--{masked} is not passed");
        }
    }

    #[test]
    fn headless_adds_nothing_and_keeps_the_drivers_defaults() {
        let launch = launch(Display::Headless);
        assert!(!launch.replaces_driver_defaults);
        assert!(launch.switches.is_empty());
    }

    #[test]
    fn the_managed_policy_blocks_only_the_en_us_dictionary() {
        let policy: serde_json::Value = serde_json::from_str(MANAGED_POLICY).expect("the policy is JSON");
        assert_eq!(policy, serde_json::json!({ "SpellcheckLanguageBlocklist": ["en-US"] }));
        assert_eq!(MANAGED_POLICY_DIRECTORIES.len(), 2);
        for (_, directory) in MANAGED_POLICY_DIRECTORIES {
            assert!(directory.starts_with("/etc/") && directory.ends_with("/policies/managed"));
        }
    }
}
