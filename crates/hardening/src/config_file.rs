//! Non-secret configuration files that decide what a role may do (the mail accounts manifest)
//! are read only when nobody but their owner can change them.
//!
//! The file is opened with `O_NOFOLLOW` and checked through the opened descriptor: a regular
//! file, not group- or world-writable, of bounded size. Readers other than the owner are fine
//! (the roles read the service user's manifest through its group or a read-only ACL entry). A
//! POSIX ACL cannot grant write behind the mode's back: with named entries the group bits show
//! the mask, which caps every named entry, so "not group-writable" covers them too. Who the
//! owner must be (the service user) is the deployment's rule, checked by preflight; a role runs
//! as its own user and cannot tell the service user from another.

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::checked_read::{is_symlink, open_no_follow, read_at_most};

/// Configuration files are small; anything larger is refused rather than read into memory.
pub const CONFIG_FILE_MAX_BYTES: u64 = 1024 * 1024;

/// Why a configuration file was not read. The messages name no path: callers say which file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    #[error("does not exist")]
    Missing,
    #[error("is a symbolic link; point the variable at the file itself")]
    Symlink,
    #[error("is not a regular file")]
    NotRegular,
    #[error("must not be group- or world-writable (mode {0:04o})")]
    Writable(u32),
    #[error("is larger than {CONFIG_FILE_MAX_BYTES} bytes")]
    TooLarge,
    #[error("cannot be read: {0}")]
    Io(std::io::Error),
}

/// Opens `path` without following symlinks and reads it if it is a regular file that only its
/// owner can write.
pub fn read_protected(path: &Path) -> Result<Vec<u8>, ConfigFileError> {
    let mut file = open_no_follow(path).map_err(|error| match error {
        error if is_symlink(&error) => ConfigFileError::Symlink,
        error if error.kind() == ErrorKind::NotFound => ConfigFileError::Missing,
        error => ConfigFileError::Io(error),
    })?;
    let meta = file.metadata().map_err(ConfigFileError::Io)?;
    if !meta.file_type().is_file() {
        return Err(ConfigFileError::NotRegular);
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(ConfigFileError::Writable(mode));
    }
    if meta.len() > CONFIG_FILE_MAX_BYTES {
        return Err(ConfigFileError::TooLarge);
    }
    read_at_most(&mut file, CONFIG_FILE_MAX_BYTES, meta.len())
        .map_err(ConfigFileError::Io)?
        .ok_or(ConfigFileError::TooLarge)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    use super::*;

    fn write(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, b"{}").expect("write fixture");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod fixture");
        path
    }

    #[test]
    fn reads_a_file_only_its_owner_can_write_whoever_may_read_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        for mode in [0o600, 0o640, 0o644, 0o400] {
            let path = write(dir.path(), &format!("m{mode:o}"), mode);
            assert_eq!(read_protected(&path).expect("readable"), b"{}", "mode {mode:o}");
        }
    }

    #[test]
    fn refuses_writable_linked_missing_special_and_oversized_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        for mode in [0o660, 0o602, 0o666, 0o620] {
            let path = write(dir.path(), &format!("w{mode:o}"), mode);
            let error = read_protected(&path).expect_err("writable");
            assert!(
                matches!(error, ConfigFileError::Writable(found) if found == mode),
                "{error}"
            );
            assert!(error.to_string().contains("group- or world-writable"), "{error}");
        }
        let target = write(dir.path(), "target", 0o640);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(matches!(read_protected(&link), Err(ConfigFileError::Symlink)));
        assert!(matches!(
            read_protected(&dir.path().join("absent")),
            Err(ConfigFileError::Missing)
        ));
        assert!(matches!(read_protected(dir.path()), Err(ConfigFileError::NotRegular)));
        let large = dir.path().join("large");
        std::fs::write(&large, vec![b' '; CONFIG_FILE_MAX_BYTES as usize + 1]).expect("write");
        std::fs::set_permissions(&large, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        assert!(matches!(read_protected(&large), Err(ConfigFileError::TooLarge)));
    }
}
