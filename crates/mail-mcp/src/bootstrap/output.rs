//! The output directory: absent, or empty and owner-only.

use super::*;

/// Refuses output that exists and a directory the documents must not go into; returns whether
/// the directory already exists (empty, ours, 0700).
pub(super) fn check_output(directory: &Path, running_uid: u32) -> Result<bool, BootstrapError> {
    let unusable = |reason: String| BootstrapError::OutputDirectory {
        path: directory.to_owned(),
        reason,
    };
    for scope in MailScope::ALL {
        let path = directory.join(scope.file_name());
        match std::fs::symlink_metadata(&path) {
            // Whatever it is (a dangling symlink too), it is not replaced.
            Ok(_) => return Err(BootstrapError::OutputExists(path.display().to_string())),
            Err(error) if matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {}
            Err(error) => return Err(unusable(format!("{}: {error}", path.display()))),
        }
    }
    let meta = match std::fs::symlink_metadata(directory) {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => {
            let parent = directory.parent().unwrap_or(Path::new("/"));
            return match std::fs::metadata(parent) {
                Ok(meta) if meta.is_dir() => Ok(false),
                _ => Err(unusable(format!(
                    "its parent {} is not an existing directory",
                    parent.display()
                ))),
            };
        }
        Err(error) => return Err(unusable(error.to_string())),
    };
    if meta.file_type().is_symlink() {
        return Err(unusable("it is a symbolic link; name the directory itself".into()));
    }
    if !meta.is_dir() {
        return Err(BootstrapError::OutputExists(format!(
            "{} exists and is not a directory",
            directory.display()
        )));
    }
    let mut entries = std::fs::read_dir(directory).map_err(|error| unusable(error.to_string()))?;
    if entries.next().is_some() {
        return Err(BootstrapError::OutputExists(format!(
            "{} is not empty",
            directory.display()
        )));
    }
    if meta.uid() != running_uid {
        return Err(unusable(format!(
            "it is owned by uid {}, not by the running user (uid {running_uid}); use a new empty directory",
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode != 0o700 {
        return Err(unusable(format!(
            "it has mode {mode:04o}; an existing directory must already be 0700 (or name a new one)"
        )));
    }
    let extended = hardening::acl::extended_entries(directory).map_err(|error| unusable(error.to_string()))?;
    if !extended.is_empty() {
        return Err(unusable(
            "it has extended ACL entries; use a new owner-only directory".into(),
        ));
    }
    Ok(true)
}

/// Binds every consent's port on 127.0.0.1, refusing when any is taken.
pub(super) async fn bind(ports: [u16; 3]) -> Result<Vec<(TcpListener, u16)>, BootstrapError> {
    let mut listeners = Vec::with_capacity(3);
    for port in ports {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .map_err(|error| {
                BootstrapError::Incomplete(format!(
                    "loopback port 127.0.0.1:{port} is not free ({}); free ports {}, {} and {} and run again",
                    error.kind(),
                    ports[0],
                    ports[1],
                    ports[2]
                ))
            })?;
        let bound = listener
            .local_addr()
            .map_err(|error| BootstrapError::Incomplete(format!("loopback port 127.0.0.1:{port}: {error}")))?;
        listeners.push((listener, bound.port()));
    }
    Ok(listeners)
}
