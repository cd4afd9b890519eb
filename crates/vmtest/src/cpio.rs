//! A writer for the "newc" cpio archive the kernel unpacks as its initramfs.
//!
//! The harness builds the initramfs itself, in memory, so it needs no `cpio`
//! or `find` on the host and the archive's contents (file modes, symlinks,
//! directory order) are exactly what the code says. Format: each entry is a
//! 110-byte ASCII header (magic `070701`, then 13 fields of 8 hex digits:
//! ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor,
//! rdevmajor, rdevminor, namesize, check), the NUL-terminated name padded to
//! a multiple of 4 bytes, then the data padded to a multiple of 4; the
//! archive ends with an entry named `TRAILER!!!`.

/// File type bits for a directory (`S_IFDIR`).
const S_IFDIR: u32 = 0o040000;
/// File type bits for a regular file (`S_IFREG`).
const S_IFREG: u32 = 0o100000;
/// File type bits for a symbolic link (`S_IFLNK`).
const S_IFLNK: u32 = 0o120000;
/// File type bits for a character device (`S_IFCHR`).
const S_IFCHR: u32 = 0o020000;

/// An initramfs archive being assembled in memory.
#[derive(Debug, Default)]
pub struct CpioWriter {
    buf: Vec<u8>,
    next_ino: u32,
}

impl CpioWriter {
    /// An empty archive.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a directory `path` (no leading `/`) with permission bits `perm`
    /// (e.g. `0o755`). Parents must be added first.
    pub fn dir(&mut self, path: &str, perm: u32) -> &mut Self {
        self.entry(path, S_IFDIR | (perm & 0o7777), 2, &[]);
        self
    }

    /// Adds a regular file `path` with permission bits `perm` and contents
    /// `data`.
    pub fn file(&mut self, path: &str, perm: u32, data: &[u8]) -> &mut Self {
        self.entry(path, S_IFREG | (perm & 0o7777), 1, data);
        self
    }

    /// Adds a symbolic link `path` pointing at `target`.
    pub fn symlink(&mut self, path: &str, target: &str) -> &mut Self {
        self.entry(path, S_IFLNK | 0o777, 1, target.as_bytes());
        self
    }

    /// Adds a character device node `path` (e.g. `dev/console`, 5:1).
    pub fn char_device(&mut self, path: &str, perm: u32, major: u32, minor: u32) -> &mut Self {
        self.next_ino += 1;
        let ino = self.next_ino;
        self.entry_with_ino(path, ino, S_IFCHR | (perm & 0o7777), 1, &[], (major, minor));
        self
    }

    /// Ends the archive with the trailer entry and returns its bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.next_ino = 0;
        self.entry_with_ino("TRAILER!!!", 0, 0, 1, &[], (0, 0));
        self.buf
    }

    fn entry(&mut self, path: &str, mode: u32, nlink: u32, data: &[u8]) {
        self.next_ino += 1;
        let ino = self.next_ino;
        self.entry_with_ino(path, ino, mode, nlink, data, (0, 0));
    }

    fn entry_with_ino(
        &mut self,
        path: &str,
        ino: u32,
        mode: u32,
        nlink: u32,
        data: &[u8],
        rdev: (u32, u32),
    ) {
        let name = path.trim_start_matches('/');
        let namesize = name.len() + 1;
        let fields: [u64; 13] = [
            u64::from(ino),
            u64::from(mode),
            0, // uid: root
            0, // gid: root
            u64::from(nlink),
            0, // mtime
            data.len() as u64,
            0, // devmajor
            0, // devminor
            u64::from(rdev.0),
            u64::from(rdev.1),
            namesize as u64,
            0, // check: unused by newc
        ];
        self.buf.extend_from_slice(b"070701");
        for f in fields {
            self.buf.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        self.pad4();
        self.buf.extend_from_slice(data);
        self.pad4();
    }

    fn pad4(&mut self) {
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads one newc header field (index 0 = ino) back from its hex text.
    fn field(header: &[u8], index: usize) -> u32 {
        let start = 6 + index * 8;
        let text = std::str::from_utf8(&header[start..start + 8]).unwrap();
        u32::from_str_radix(text, 16).unwrap()
    }

    #[test]
    fn file_entry_matches_newc_layout() {
        let mut w = CpioWriter::new();
        w.file("init", 0o755, b"#!/bin/sh\n");
        let out = w.finish();
        // Header: 6-byte magic + 13 * 8 hex digits = 110 bytes.
        assert_eq!(&out[..6], b"070701");
        let h = &out[..110];
        assert_eq!(field(h, 1), 0o100755, "mode = S_IFREG | 0755");
        assert_eq!(field(h, 4), 1, "nlink");
        assert_eq!(field(h, 6), 10, "filesize = len(\"#!/bin/sh\\n\")");
        assert_eq!(field(h, 11), 5, "namesize = len(\"init\") + NUL");
        // Name at 110, "init\0" = 5 bytes -> 115, padded to 116.
        assert_eq!(&out[110..115], b"init\0");
        assert_eq!(out[115], 0);
        assert_eq!(&out[116..126], b"#!/bin/sh\n");
        // Data 10 bytes -> 126, padded to 128; trailer header follows.
        assert_eq!(&out[128..134], b"070701");
        let trailer_name = &out[128 + 110..128 + 110 + 11];
        assert_eq!(trailer_name, b"TRAILER!!!\0");
        assert_eq!(out.len() % 4, 0);
    }

    #[test]
    fn symlink_stores_target_as_data_and_dirs_get_nlink_2() {
        let mut w = CpioWriter::new();
        w.dir("bin", 0o755).symlink("bin/sh", "busybox");
        let out = w.finish();
        assert_eq!(field(&out[..110], 1), 0o040755);
        assert_eq!(field(&out[..110], 4), 2);
        // Header 110 + "bin\0" 4 = 114, padded to 116; no data.
        let second = 116;
        assert_eq!(&out[second..second + 6], b"070701");
        let h2 = &out[second..second + 110];
        assert_eq!(field(h2, 1), 0o120777);
        assert_eq!(field(h2, 6), 7, "filesize = len(\"busybox\")");
        assert_ne!(
            field(h2, 0),
            field(&out[..110], 0),
            "distinct inode numbers"
        );
    }

    #[test]
    fn char_device_carries_its_numbers_in_rdev_fields() {
        let mut w = CpioWriter::new();
        w.char_device("dev/console", 0o600, 5, 1);
        let out = w.finish();
        let h = &out[..110];
        assert_eq!(field(h, 1), 0o020600, "mode = S_IFCHR | 0600");
        assert_eq!(field(h, 9), 5, "rdevmajor");
        assert_eq!(field(h, 10), 1, "rdevminor");
        assert_eq!(field(h, 6), 0, "no data");
    }
}
