//! How every checked read opens and reads a file: the final path component is never followed
//! (a symlink fails with `ELOOP`, told apart by [`is_symlink`]), the checks run on the opened
//! descriptor, and no more than a bound is read, even from a file that grew after the check.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::fcntl::OFlag;

/// Opens `path` for reading without following a final symlink (non-blocking, so a FIFO cannot
/// hang the caller before its type is checked).
pub(crate) fn open_no_follow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).bits())
        .open(path)
}

/// Whether opening failed because the path is a symbolic link.
pub(crate) fn is_symlink(error: &io::Error) -> bool {
    error.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32)
}

/// The file's bytes, or `None` when it holds more than `max`.
pub(crate) fn read_at_most(file: &mut File, max: u64, expected: u64) -> io::Result<Option<Vec<u8>>> {
    let mut contents = Vec::with_capacity(expected.min(max) as usize);
    // One byte past the bound tells a file that grew after it was checked.
    file.take(max + 1).read_to_end(&mut contents)?;
    Ok((contents.len() as u64 <= max).then_some(contents))
}
