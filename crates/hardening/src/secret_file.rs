//! Secret files (tokens, keys) are checked before their bytes are trusted.
//!
//! The file is opened with `O_NOFOLLOW` and checked through the opened descriptor, so a symlink
//! swapped in between the check and the read cannot redirect it. A secret must be a regular file
//! owned by the running user with mode `0600` (or `0400`, as systemd's `LoadCredential=` copies
//! are) and no extended ACL entries: an ACL can grant another identity read access that the mode
//! bits do not show.

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::checked_read::{is_symlink, open_no_follow, read_at_most};

/// Secret files are small; anything larger is refused rather than read into memory.
pub const SECRET_FILE_MAX_BYTES: u64 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error("secret file {0} does not exist")]
    Missing(PathBuf),
    #[error("secret file {0} is a symbolic link; point the variable at the file itself")]
    Symlink(PathBuf),
    #[error("secret file {0} is not a regular file")]
    NotRegular(PathBuf),
    #[error("secret file {path} must be owner-only (mode 0600), found mode {mode:04o}")]
    NotOwnerOnly { path: PathBuf, mode: u32 },
    #[error(
        "secret file {path} has extended ACL entries ({entries}); only the owner, group and other entries are allowed"
    )]
    ExtendedAcl { path: PathBuf, entries: String },
    #[error("secret file {path} is owned by uid {owner}, not by the running user (uid {running})")]
    WrongOwner { path: PathBuf, owner: u32, running: u32 },
    #[error("secret file {0} is larger than {1} bytes")]
    TooLarge(PathBuf, u64),
    #[error("secret file {path} cannot be read: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("secret file {0} must hold a credential of at least 32 printable ASCII characters")]
    WeakCredential(PathBuf),
}

/// Opens `path` without following symlinks and checks it is a regular file, owned by the running
/// user, with mode 0600 or 0400 and only base ACL entries, before reading it.
pub fn read_owner_only(path: &Path) -> Result<Vec<u8>, SecretFileError> {
    read_owner_only_at_most(path, SECRET_FILE_MAX_BYTES)
}

/// A shared bearer credential (the browser control plane's): an owner-only file of at most 4 KiB
/// holding at least 32 printable ASCII characters, trailing whitespace (a final newline) ignored.
pub fn read_credential(path: &Path) -> Result<String, SecretFileError> {
    let mut credential = read_owner_only_at_most(path, 4096)?;
    while credential.last().is_some_and(u8::is_ascii_whitespace) {
        credential.pop();
    }
    String::from_utf8(credential)
        .ok()
        .filter(|credential| credential.len() >= 32 && credential.bytes().all(|byte| (0x21..=0x7e).contains(&byte)))
        .ok_or_else(|| SecretFileError::WeakCredential(path.to_owned()))
}

/// [`read_owner_only`] for a private file that may be larger than a secret (an evidence
/// packet): at most `max` bytes.
pub fn read_owner_only_at_most(path: &Path, max: u64) -> Result<Vec<u8>, SecretFileError> {
    let io = |source: std::io::Error| SecretFileError::Io {
        path: path.to_owned(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == ErrorKind::NotFound => return Err(SecretFileError::Missing(path.to_owned())),
        Err(error) => return Err(io(error)),
        Ok(meta) if meta.file_type().is_symlink() => return Err(SecretFileError::Symlink(path.to_owned())),
        Ok(_) => {}
    }
    let mut file = open_no_follow(path).map_err(|error| match error {
        error if is_symlink(&error) => SecretFileError::Symlink(path.to_owned()),
        error => io(error),
    })?;
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(SecretFileError::NotRegular(path.to_owned()));
    }
    let running = nix::unistd::geteuid().as_raw();
    if meta.uid() != running {
        return Err(SecretFileError::WrongOwner {
            path: path.to_owned(),
            owner: meta.uid(),
            running,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode != 0o600 && mode != 0o400 {
        return Err(SecretFileError::NotOwnerOnly {
            path: path.to_owned(),
            mode,
        });
    }
    let extended = crate::acl::extended_entries(path).map_err(io)?;
    if !extended.is_empty() {
        return Err(SecretFileError::ExtendedAcl {
            path: path.to_owned(),
            entries: extended.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        });
    }
    if meta.len() > max {
        return Err(SecretFileError::TooLarge(path.to_owned(), max));
    }
    read_at_most(&mut file, max, meta.len())
        .map_err(io)?
        .ok_or_else(|| SecretFileError::TooLarge(path.to_owned(), max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, b"secret").expect("write fixture");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod fixture");
        path
    }

    #[test]
    fn accepts_an_owner_only_regular_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "token", 0o600);
        assert_eq!(read_owner_only(&path).expect("readable"), b"secret");
        let credential = write(dir.path(), "credential", 0o400);
        assert_eq!(read_owner_only(&credential).expect("readable"), b"secret");
    }

    #[test]
    fn refuses_missing_symlinked_shared_and_special_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            read_owner_only(&dir.path().join("absent")),
            Err(SecretFileError::Missing(_))
        ));

        let shared = write(dir.path(), "shared", 0o640);
        let err = read_owner_only(&shared).expect_err("group-readable");
        assert!(matches!(err, SecretFileError::NotOwnerOnly { mode: 0o640, .. }));
        assert!(err.to_string().contains("must be owner-only"));

        let executable = write(dir.path(), "executable", 0o700);
        assert!(matches!(
            read_owner_only(&executable),
            Err(SecretFileError::NotOwnerOnly { mode: 0o700, .. })
        ));

        let target = write(dir.path(), "target", 0o600);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(matches!(read_owner_only(&link), Err(SecretFileError::Symlink(_))));

        assert!(matches!(
            read_owner_only(dir.path()),
            Err(SecretFileError::NotRegular(_))
        ));
    }

    #[test]
    fn refuses_extended_acl_entries_even_when_masked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "acl", 0o600);
        // A named user entry with an empty mask grants nothing today, and is still refused.
        let status = std::process::Command::new("setfacl")
            .args(["-m", "u:65534:r,m::---"])
            .arg(&path)
            .status()
            .expect("run setfacl (cargo xtask test installs the acl package)");
        assert!(status.success());
        let err = read_owner_only(&path).expect_err("extended ACL");
        assert!(matches!(err, SecretFileError::ExtendedAcl { .. }), "{err}");
        assert!(err.to_string().contains("user:65534"), "{err}");
    }
}
