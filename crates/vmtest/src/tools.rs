//! Host programs copied into the guest with the shared libraries they load.
//!
//! Some tools a test needs have no static build in Debian: `dmsetup` (in
//! package `dmsetup`) is linked against libdevmapper, libudev, libselinux
//! and the C library. The guest runs the host's distribution kernel, so the
//! host's user-space binaries run there unchanged once their dynamic loader
//! and libraries are at the paths they were linked for. The closure is
//! what `ldd` prints: every `=> /path` and the loader's own absolute path.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::VmError;

/// The absolute library paths in `ldd`'s output, each once, in order:
/// `libx.so => /lib/x/libx.so (0x…)` gives its target, a line that is only
/// an absolute path (the dynamic loader) gives that path; `linux-vdso`
/// (no file) and `not found` lines give nothing.
pub fn parse_ldd(text: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            let p = PathBuf::from(p);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// `program` and every shared library it loads (absolute host paths).
pub fn closure(program: &Path) -> Result<Vec<PathBuf>, VmError> {
    if !program.is_file() {
        return Err(VmError::Missing {
            what: "a host program the test copies into the guest",
            path: program.to_path_buf(),
        });
    }
    let o = Command::new("ldd")
        .arg(program)
        .output()
        .map_err(|source| VmError::Spawn {
            program: PathBuf::from("ldd"),
            source,
        })?;
    let text = String::from_utf8_lossy(&o.stdout);
    if text.contains("not found") {
        return Err(VmError::Config(format!(
            "{}: a library it needs is missing on the host:\n{text}",
            program.display()
        )));
    }
    // A static program: ldd says "not a dynamic executable" and exits 1.
    let mut files = vec![program.to_path_buf()];
    files.extend(parse_ldd(&text));
    Ok(files)
}

/// The directories (no leading `/`) that must exist for `path`, parents
/// first: `/lib/x86_64-linux-gnu/libc.so.6` -> `lib`, `lib/x86_64-linux-gnu`.
pub fn parent_dirs(path: &Path) -> Vec<String> {
    let rel = path.to_string_lossy().trim_start_matches('/').to_string();
    let parts: Vec<&str> = rel.split('/').collect();
    (1..parts.len()).map(|n| parts[..n].join("/")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_the_library_files_and_the_loader() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
            \tlibdevmapper.so.1.02.1 => /lib/x86_64-linux-gnu/libdevmapper.so.1.02.1 (0x00007f)\n\
            \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
            \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n\
            \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n";
        assert_eq!(
            parse_ldd(text),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libdevmapper.so.1.02.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
        assert!(parse_ldd("\tnot a dynamic executable\n").is_empty());
    }

    #[test]
    fn parents_come_before_children() {
        assert_eq!(
            parent_dirs(Path::new("/lib/x86_64-linux-gnu/libc.so.6")),
            vec!["lib".to_string(), "lib/x86_64-linux-gnu".to_string()]
        );
        assert!(parent_dirs(Path::new("/init")).is_empty());
    }

    #[test]
    fn a_host_binary_brings_its_loader() {
        // /bin/sh is dynamic on every Debian host this harness runs on.
        let files = closure(Path::new("/bin/sh")).unwrap();
        assert_eq!(files[0], PathBuf::from("/bin/sh"));
        assert!(
            files
                .iter()
                .any(|f| f.to_string_lossy().contains("ld-linux")),
            "{files:?}"
        );
        assert!(closure(Path::new("/nonexistent/tool")).is_err());
    }
}
