//! The junk filter's checks: one mode in the api and the async worker, and an evidence packet
//! that the unit loads as its credential and that admits the mode.

use std::io::ErrorKind;

use nix::unistd::{AccessFlags, access};

use crate::{Environments, Host, JUNK_EVIDENCE, Report, flag_on, junk_mode};

/// The junk first pass: one mode in the api (which reports it) and the async worker (which
/// runs it), Email mode on; `filter` and `pilot` need the owner's evidence packet as the async
/// worker's credential `junk-evidence` (inspected as a credential above), and it must admit the
/// mode for the model judgments are made with. Reading it needs its owner's rights.
pub(crate) fn junk(host: &Host, environments: &Environments, report: &mut Report) {
    let Some(worker) = environments.get("async-worker") else {
        return;
    };
    let mode = junk_mode(worker);
    let mut failures = Vec::new();
    if let Some(api) = environments.get("api")
        && junk_mode(api) != mode
    {
        failures.push("AGENT_EMAIL_JUNK_FILTER_MODE differs between api and async-worker".to_owned());
    }
    if !matches!(mode, "off" | "shadow" | "filter" | "pilot") {
        failures.push(format!(
            "AGENT_EMAIL_JUNK_FILTER_MODE must be one of off, shadow, filter, pilot, got `{mode}`"
        ));
    } else if mode != "off" && !flag_on(worker, "AGENT_EMAIL_MODE_ENABLED") {
        failures.push("the junk filter needs AGENT_EMAIL_MODE_ENABLED=1".to_owned());
    }
    report.check(
        "junk filter mode is valid and set alike in api and async-worker",
        failures,
    );
    if !matches!(mode, "filter" | "pilot") {
        return;
    }
    let path = host.credentials_dir.join("async-worker").join(JUNK_EVIDENCE);
    // The unit must load the packet as its credential (the worker reads it there).
    let mut failures = Vec::new();
    if worker.contains_key("AGENT_EMAIL_JUNK_FILTER_EVIDENCE") {
        failures.push(
            "AGENT_EMAIL_JUNK_FILTER_EVIDENCE does not belong in async-worker.env: the packet is the credential junk-evidence"
                .to_owned(),
        );
    }
    let drop_ins = host.units_dir.join("steward-async-worker.service.d");
    let line = format!("LoadCredential={JUNK_EVIDENCE}:{}", path.display());
    let loaded = std::fs::read_dir(&drop_ins).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            entry.path().extension().is_some_and(|extension| extension == "conf")
                && std::fs::read_to_string(entry.path())
                    .is_ok_and(|text| text.lines().any(|candidate| candidate.trim() == line))
        })
    });
    if !loaded {
        failures.push(format!("no drop-in in {} has `{line}`", drop_ins.display()));
    }
    report.check(
        "steward-async-worker loads the junk filter evidence as its credential",
        failures,
    );
    let model = domain::junk::running_model(
        worker.get("EMAIL_CLASSIFIER").map(String::as_str),
        worker.get("EMAIL_CLASSIFIER_MODEL").map(String::as_str),
    );
    let failures = match std::fs::symlink_metadata(&path) {
        Err(error) if error.kind() == ErrorKind::NotFound => vec!["junk filter evidence is missing".to_owned()],
        _ if access(path.as_path(), AccessFlags::R_OK).is_err() => vec![
            "junk filter evidence is not readable by the deploy user; run preflight as the service user that owns it to check its validity"
                .to_owned(),
        ],
        _ => match std::fs::read(&path) {
            Err(error) => vec![format!("junk filter evidence cannot be read: {error}")],
            Ok(bytes) => admit(mode, &bytes, &model)
                .err()
                .map(|refused| vec![format!("junk filter evidence does not admit `{mode}`: {refused}")])
                .unwrap_or_default(),
        },
    };
    report.check(
        format!(
            "junk filter evidence {} admits `{mode}` for model `{model}`",
            path.display()
        ),
        failures,
    );
}

/// Whether the packet `bytes` admits `mode` (`filter`: the calibration packet; `pilot`: the
/// pilot packet, for the owner, now) with `model` judging.
fn admit(mode: &str, bytes: &[u8], model: &str) -> Result<(), domain::junk::PacketRefused> {
    if mode == "filter" {
        domain::junk::CalibrationPacket::parse(bytes, model).map(|_| ())
    } else {
        let packet = domain::junk::PilotPacket::parse(bytes, model)?;
        packet.admitted(
            &domain::ids::PrincipalId::owner(),
            &packet.account_id,
            jiff::Timestamp::now(),
        )
    }
}
