//! The drivelab binary that runs inside the guest: static (the initramfs has
//! no C library), built once per test process into its own target dir so it
//! never disturbs the normal build, or taken ready-made from
//! `DRIVELAB_VM_BINARY`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::error::VmError;

/// The Rust target the static binary is built for.
pub const STATIC_TARGET: &str = "x86_64-unknown-linux-gnu";

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where the static build goes: `DRIVELAB_VM_STATIC_TARGET`, else
/// `$CARGO_TARGET_DIR/vm-static`, else `<workspace>/target/vm-static`.
pub fn static_target_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DRIVELAB_VM_STATIC_TARGET") {
        return PathBuf::from(d);
    }
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d).join("vm-static"),
        None => workspace_root().join("target/vm-static"),
    }
}

/// Whether the ELF file `bytes` asks for a program interpreter (a dynamic
/// loader), i.e. has a `PT_INTERP` program header. `None` if not ELF64.
pub fn elf_needs_interpreter(bytes: &[u8]) -> Option<bool> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let mut phoff = [0u8; 8];
    phoff.copy_from_slice(&bytes[0x20..0x28]);
    let phoff = u64::from_le_bytes(phoff) as usize;
    let phentsize = u16_at(0x36);
    let phnum = u16_at(0x38);
    const PT_INTERP: u32 = 3;
    for i in 0..phnum {
        let o = phoff.checked_add(i.checked_mul(phentsize)?)?;
        let t = bytes.get(o..o + 4)?;
        if u32::from_le_bytes([t[0], t[1], t[2], t[3]]) == PT_INTERP {
            return Some(true);
        }
    }
    Some(false)
}

/// The cargo profile of the guest binary: `dev` by default (a cold build
/// takes about a third of a release build's time, and TCG makes the
/// guest's speed moot), `release` when `DRIVELAB_VM_PROFILE=release`.
fn profile() -> (&'static str, &'static str) {
    match std::env::var("DRIVELAB_VM_PROFILE").as_deref() {
        Ok("release") => ("release", "release"),
        _ => ("dev", "debug"),
    }
}

/// The static drivelab binary: `DRIVELAB_VM_BINARY` if set, else built with
/// `cargo build -p drivelab-cli` and `+crt-static` in the profile chosen by
/// `DRIVELAB_VM_PROFILE` (once per process; cargo makes it a no-op when
/// nothing changed).
pub fn static_drivelab() -> Result<PathBuf, VmError> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    if let Some(p) = std::env::var_os("DRIVELAB_VM_BINARY") {
        let p = PathBuf::from(p);
        return check_static(p);
    }
    let built = BUILT.get_or_init(|| build().map_err(|e| e.to_string()));
    match built {
        Ok(p) => check_static(p.clone()),
        Err(detail) => Err(VmError::Build {
            command: build_command_text(),
            detail: detail.clone(),
        }),
    }
}

fn check_static(p: PathBuf) -> Result<PathBuf, VmError> {
    let bytes = std::fs::read(&p).map_err(|source| VmError::Io {
        action: "read",
        path: p.clone(),
        source,
    })?;
    match elf_needs_interpreter(&bytes) {
        Some(false) => Ok(p),
        Some(true) => Err(VmError::Config(format!(
            "{} is dynamically linked; the guest has no C library: build it with {}",
            p.display(),
            build_command_text()
        ))),
        None => Err(VmError::Config(format!(
            "{} is not an x86-64 ELF file",
            p.display()
        ))),
    }
}

const RUSTFLAGS: &str = "-C target-feature=+crt-static -C strip=debuginfo";

fn build_command_text() -> String {
    format!(
        "RUSTFLAGS=\"{RUSTFLAGS}\" cargo build --profile {} -p drivelab-cli --target {STATIC_TARGET} --target-dir {}",
        profile().0,
        static_target_dir().display()
    )
}

fn build() -> Result<PathBuf, String> {
    build_package("drivelab-cli", "drivelab")
}

/// Another static executable of the workspace for the guest: binary `bin`
/// of package `package`, built like [`static_drivelab`] (same flags,
/// profile and target dir; cargo makes a rebuild a no-op).
pub fn static_package_binary(package: &str, bin: &str) -> Result<PathBuf, VmError> {
    let p = build_package(package, bin).map_err(|detail| VmError::Build {
        command: build_command_text().replace("drivelab-cli", package),
        detail,
    })?;
    check_static(p)
}

fn build_package(package: &str, bin: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = static_target_dir();
    let out = Command::new(&cargo)
        .current_dir(workspace_root())
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env("RUSTFLAGS", RUSTFLAGS)
        .args([
            "build",
            "--profile",
            profile().0,
            "-p",
            package,
            "--bin",
            bin,
        ])
        .args(["--target", STATIC_TARGET, "--target-dir"])
        .arg(&target_dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", Path::new(&cargo).display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("{}: {}", out.status, tail.join("\n")));
    }
    Ok(target_dir.join(STATIC_TARGET).join(profile().1).join(bin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_busybox_has_no_interpreter_and_this_test_binary_has_one() {
        // Second route: `file`-like facts known independently: Debian's
        // busybox-static is linked statically; a Rust test binary built for
        // the gnu target links glibc dynamically by default.
        let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(elf_needs_interpreter(&own), Some(true));
        let bb = std::fs::read("/bin/busybox")
            .expect("/bin/busybox missing: run `bash tests/vm/setup.sh` as root");
        assert_eq!(elf_needs_interpreter(&bb), Some(false));
        assert_eq!(elf_needs_interpreter(b"#!/bin/sh\necho not elf\n"), None);
    }
}
