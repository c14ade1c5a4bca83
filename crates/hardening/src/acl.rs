//! POSIX access ACLs, read from the `system.posix_acl_access` extended attribute of the path
//! itself (symlinks are not followed and the file is never opened), so a secret can be inspected
//! by an identity that must not read it.
//!
//! A file whose ACL is just its mode has no such attribute, or one holding only the three base
//! entries (owner, owning group, other). Anything else (a named user or group, or a mask, even
//! one that masks every named entry away) is an extended entry, and secrets refuse them.

use std::io;
use std::path::Path;

const ATTRIBUTE: &str = "system.posix_acl_access";
const VERSION: u32 = 2;
const TAG_USER_OBJ: u16 = 0x01;
const TAG_USER: u16 = 0x02;
const TAG_GROUP_OBJ: u16 = 0x04;
const TAG_GROUP: u16 = 0x08;
const TAG_MASK: u16 = 0x10;
const TAG_OTHER: u16 = 0x20;

/// One entry beyond the base owner, group and other entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtendedEntry {
    User(u32),
    Group(u32),
    Mask,
}

impl std::fmt::Display for ExtendedEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtendedEntry::User(uid) => write!(f, "user:{uid}"),
            ExtendedEntry::Group(gid) => write!(f, "group:{gid}"),
            ExtendedEntry::Mask => f.write_str("mask"),
        }
    }
}

/// The extended entries of `path`'s access ACL; empty when it has only the base entries.
pub fn extended_entries(path: &Path) -> io::Result<Vec<ExtendedEntry>> {
    let mut buffer = vec![0u8; 1024];
    let length = loop {
        match rustix::fs::lgetxattr(path, ATTRIBUTE, &mut buffer[..]) {
            Ok(length) => break length,
            // No attribute, or a filesystem without ACLs: the mode is the whole story.
            Err(rustix::io::Errno::NODATA | rustix::io::Errno::NOTSUP) => return Ok(Vec::new()),
            Err(rustix::io::Errno::RANGE) if buffer.len() < 1 << 20 => buffer.resize(buffer.len() * 4, 0),
            Err(errno) => return Err(errno.into()),
        }
    };
    parse(&buffer[..length])
}

fn parse(bytes: &[u8]) -> io::Result<Vec<ExtendedEntry>> {
    let malformed = || io::Error::new(io::ErrorKind::InvalidData, "malformed POSIX ACL attribute");
    let (header, entries) = bytes.split_at_checked(4).ok_or_else(malformed)?;
    if u32::from_le_bytes(header.try_into().map_err(|_| malformed())?) != VERSION || entries.len() % 8 != 0 {
        return Err(malformed());
    }
    let mut extended = Vec::new();
    for entry in entries.chunks_exact(8) {
        let tag = u16::from_le_bytes([entry[0], entry[1]]);
        let id = u32::from_le_bytes([entry[4], entry[5], entry[6], entry[7]]);
        match tag {
            TAG_USER_OBJ | TAG_GROUP_OBJ | TAG_OTHER => {}
            TAG_USER => extended.push(ExtendedEntry::User(id)),
            TAG_GROUP => extended.push(ExtendedEntry::Group(id)),
            TAG_MASK => extended.push(ExtendedEntry::Mask),
            _ => return Err(malformed()),
        }
    }
    Ok(extended)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attribute(entries: &[(u16, u16, u32)]) -> Vec<u8> {
        let mut bytes = VERSION.to_le_bytes().to_vec();
        for (tag, perm, id) in entries {
            bytes.extend(tag.to_le_bytes());
            bytes.extend(perm.to_le_bytes());
            bytes.extend(id.to_le_bytes());
        }
        bytes
    }

    #[test]
    fn base_entries_are_not_extended() {
        let base = attribute(&[
            (TAG_USER_OBJ, 6, u32::MAX),
            (TAG_GROUP_OBJ, 0, u32::MAX),
            (TAG_OTHER, 0, u32::MAX),
        ]);
        assert_eq!(parse(&base).expect("parses"), []);
    }

    #[test]
    fn named_entries_and_masks_are_extended() {
        let acl = attribute(&[
            (TAG_USER_OBJ, 6, u32::MAX),
            (TAG_USER, 4, 1001),
            (TAG_GROUP_OBJ, 0, u32::MAX),
            (TAG_GROUP, 4, 27),
            (TAG_MASK, 0, u32::MAX),
            (TAG_OTHER, 0, u32::MAX),
        ]);
        assert_eq!(
            parse(&acl).expect("parses"),
            [ExtendedEntry::User(1001), ExtendedEntry::Group(27), ExtendedEntry::Mask]
        );
    }

    #[test]
    fn malformed_attributes_are_errors() {
        assert!(parse(&[2, 0]).is_err());
        assert!(parse(&[3, 0, 0, 0]).is_err());
        assert!(parse(&attribute(&[(0x40, 0, 0)])).is_err());
    }

    #[test]
    fn a_plain_file_has_no_extended_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("plain");
        std::fs::write(&path, b"x").expect("write");
        assert_eq!(extended_entries(&path).expect("readable"), []);
        assert!(extended_entries(&dir.path().join("absent")).is_err());
    }
}
