//! The push provider stand-in the notifier is pointed at (`steward-bench apns`), and what the
//! soak reads back from it: each alert push by its collapse id.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The push provider stand-in (`steward-bench apns`) and what the notifier needs to reach it.
pub(super) struct Apns {
    pub(super) child: Child,
    pub(super) dir: PathBuf,
    pub(super) url: String,
    pub(super) key_file: PathBuf,
}

impl Apns {
    pub(super) fn start(bin: &Path, dir: &Path, log: &Path) -> anyhow::Result<Apns> {
        fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let key_file = dir.join("apns.p8");
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).context("generate the APNs key")?;
        crate::stand_in::write_private(&key_file, pair.serialize_pem()).context("write the APNs key")?;
        let log = fs::File::create(log)?;
        let mut child = Command::new(bin.join("steward-bench"))
            .arg("apns")
            .arg(dir)
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("start the APNs stand-in")?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let url = loop {
            if let Ok(url) = fs::read_to_string(dir.join("url")) {
                break url;
            }
            if child.try_wait()?.is_some() || Instant::now() > deadline {
                let _ = child.kill();
                bail!("the APNs stand-in did not start (target/soak/logs/apns.log)");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Ok(Apns {
            child,
            dir: dir.to_owned(),
            url,
            key_file,
        })
    }

    /// Alert pushes by notification id (the collapse id), and whether every push carried a
    /// provider token.
    pub(super) fn alerts(&self) -> anyhow::Result<(std::collections::HashMap<String, u32>, bool)> {
        let log = fs::read_to_string(self.dir.join("pushes.log")).unwrap_or_default();
        let mut alerts = std::collections::HashMap::new();
        let mut signed = true;
        for line in log.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            if let [kind, id, token] = fields.as_slice() {
                signed &= *token == "true";
                if *kind == "alert" {
                    *alerts.entry((*id).to_owned()).or_insert(0) += 1;
                }
            }
        }
        Ok((alerts, signed))
    }
}
