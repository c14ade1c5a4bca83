//! The junk filter's host checks: one mode in every file, Email mode on, and evidence the
//! filter admits (an expired pilot packet is refused).

use super::*;

/// A packet of `observations` calibration observations (the first 20 nominated junk, the
/// rest keep; 10 personal outreach and 10 transactional at the end), judged offline.
fn calibration(observations: usize) -> String {
    let rows: Vec<String> = (0..observations)
        .map(|index| {
            let (category, probability, label) = if index < 20 {
                ("spam", 0.995, "junk")
            } else {
                ("keep", 0.95, "keep")
            };
            let stratum = match index {
                80..90 => "personal_outreach",
                90.. => "transactional",
                _ => "random",
            };
            format!(
                r#"{{"fingerprint": "{index:064x}", "category": "{category}", "probability": {probability},
                    "owner_label": "{label}", "source": "owner_review", "stratum": "{stratum}"}}"#
            )
        })
        .collect();
    format!(
        r#"{{"policy": "steward-junk-1", "model": "steward-junk-rules-1", "observations": [{}]}}"#,
        rows.join(",")
    )
}

#[test]
fn the_junk_filter_needs_one_mode_email_mode_and_admitted_evidence() {
    let tree = Tree::new();
    let mode = |mode: &'static str| {
        move |text: String| {
            text.replace(
                "AGENT_EMAIL_JUNK_FILTER_MODE=off",
                &format!("AGENT_EMAIL_JUNK_FILTER_MODE={mode}"),
            )
        }
    };
    tree.edit_env("async-worker", mode("filter"));
    expect_fail(
        &tree,
        "AGENT_EMAIL_JUNK_FILTER_MODE differs between api and async-worker",
    );
    tree.edit_env("api", mode("filter"));
    expect_fail(&tree, "the junk filter needs AGENT_EMAIL_MODE_ENABLED=1");
    tree.edit_env("async-worker", |text| {
        text.replace("AGENT_EMAIL_MODE_ENABLED=0", "AGENT_EMAIL_MODE_ENABLED=1")
    });
    expect_fail(&tree, "junk filter evidence is missing");
    // The unit must load it as its credential, through a drop-in.
    expect_fail(
        &tree,
        "steward-async-worker.service.d has `LoadCredential=junk-evidence:",
    );
    load_junk_evidence(&tree);
    tree.edit_env("async-worker", |text| {
        format!("{text}AGENT_EMAIL_JUNK_FILTER_EVIDENCE=/tmp/packet.json\n")
    });
    expect_fail(
        &tree,
        "AGENT_EMAIL_JUNK_FILTER_EVIDENCE does not belong in async-worker.env",
    );
    tree.edit_env("async-worker", |text| {
        text.replace("AGENT_EMAIL_JUNK_FILTER_EVIDENCE=/tmp/packet.json\n", "")
    });

    let directory = tree.credentials().join("async-worker");
    std::fs::create_dir(&directory).expect("credential dir");
    set_mode(&directory, 0o711);
    let packet = directory.join("junk-evidence");
    let write = |text: &str| {
        std::fs::write(&packet, text).expect("packet");
        set_mode(&packet, 0o600);
        set_owner(&packet, SERVICE);
    };
    write(&calibration(100));
    let as_owner = || output(tree.command(&[]).uid(SERVICE.0).gid(SERVICE.1));
    let (passed, stdout) = as_owner();
    assert!(passed, "{stdout}");
    assert!(
        stdout.contains("admits `filter` for model `steward-junk-rules-1`"),
        "{stdout}"
    );
    // The deploy user cannot read the owner-only packet, and says how to check it.
    expect_fail(
        &tree,
        "junk filter evidence is not readable by the deploy user; run preflight as the service user",
    );
    // One observation short of the floor.
    write(&calibration(99));
    let (passed, stdout) = as_owner();
    assert!(!passed);
    assert!(
        stdout.contains(
            "junk filter evidence does not admit `filter`: the floor is not met: 99 unique reviewed observations, at least 100 needed"
        ),
        "{stdout}"
    );
    // Judged by another model than the one configured.
    write(&calibration(100));
    tree.edit_env("async-worker", |text| {
        text.replace(
            "EMAIL_CLASSIFIER=offline",
            "EMAIL_CLASSIFIER=model\nEMAIL_CLASSIFIER_MODEL=judge-2",
        )
    });
    let (passed, stdout) = as_owner();
    assert!(!passed);
    assert!(
        stdout.contains("names model `steward-junk-rules-1`; the running model is `judge-2`"),
        "{stdout}"
    );
    // Readable by the group: refused as any credential would be.
    set_mode(&packet, 0o640);
    let (passed, stdout) = as_owner();
    assert!(!passed);
    assert!(
        stdout.contains("junk-evidence is an owner-only regular file: mode 0640"),
        "{stdout}"
    );
}

/// The drop-in that loads the junk filter's packet as the async worker's credential.
fn load_junk_evidence(tree: &Tree) {
    let drop_ins = tree.root.join("units/steward-async-worker.service.d");
    std::fs::create_dir_all(&drop_ins).expect("drop-ins");
    std::fs::write(
        drop_ins.join("junk-filter.conf"),
        format!(
            "[Service]\nLoadCredential=junk-evidence:{}\n",
            tree.credential("async-worker", "junk-evidence").display()
        ),
    )
    .expect("drop-in");
}

#[test]
fn an_expired_pilot_packet_is_refused() {
    let tree = Tree::new();
    load_junk_evidence(&tree);
    for role in ["api", "async-worker"] {
        tree.edit_env(role, |text| {
            text.replace("AGENT_EMAIL_JUNK_FILTER_MODE=off", "AGENT_EMAIL_JUNK_FILTER_MODE=pilot")
                .replace("AGENT_EMAIL_MODE_ENABLED=0", "AGENT_EMAIL_MODE_ENABLED=1")
        });
    }
    let directory = tree.credentials().join("async-worker");
    std::fs::create_dir(&directory).expect("credential dir");
    set_mode(&directory, 0o711);
    let observations: Vec<String> = (0..43)
        .map(|index| {
            let (category, label) = if index < 20 { ("spam", "junk") } else { ("keep", "keep") };
            format!(
                r#"{{"fingerprint": "{index:064x}", "category": "{category}", "owner_label": "{label}", "source": "owner_review"}}"#
            )
        })
        .collect();
    let packet = directory.join("junk-evidence");
    std::fs::write(
        &packet,
        format!(
            r#"{{"policy": "steward-junk-pilot-1", "model": "steward-junk-rules-1", "tenant_id": "owner",
                "principal_id": "owner", "account_id": "work", "sample": "selected_live_inbox",
                "issued_at": "2020-01-01T09:00:00+01:00", "expires_at": "2020-01-05T09:00:00+01:00",
                "observations": [{}]}}"#,
            observations.join(",")
        ),
    )
    .expect("packet");
    set_mode(&packet, 0o600);
    set_owner(&packet, SERVICE);
    let (passed, stdout) = output(tree.command(&[]).uid(SERVICE.0).gid(SERVICE.1));
    assert!(!passed);
    assert!(
        stdout.contains("junk filter evidence does not admit `pilot`: the packet is not valid now: it has expired"),
        "{stdout}"
    );
}
