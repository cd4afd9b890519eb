//! Shared helpers for the `sys_*` integration tests: temp dirs, loop devices
//! and mounts that clean up after themselves (Drop guards), so a failing test
//! still detaches only what it attached.
#![allow(dead_code, unused_imports)]

use std::path::{Path, PathBuf};

pub use drivelab_testkit::{
    make_image, mkfs_ext4, read_all, require_root, sh, LoopDev, Mounted, TempDir,
};

/// Attach `file` with partition scanning and make sure the kernel knows the
/// partitions: kernels built without the MBR/GPT parsers
/// (CONFIG_MSDOS_PARTITION unset, as here) need `partx -a`, which reads
/// the table in user space and adds them with BLKPG. Returns the nodes
/// of the first `n` partitions.
pub fn attach_partitioned(file: &Path, n: usize) -> (LoopDev, Vec<PathBuf>) {
    let lo = LoopDev::attach(file, &["-P"]);
    let parts: Vec<PathBuf> = (1..=n)
        .map(|i| PathBuf::from(format!("{}p{i}", lo.path.display())))
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(100));
    if !parts.iter().all(|p| p.exists()) {
        sh("partx", &["-a", lo.path.to_str().unwrap()]);
    }
    for p in &parts {
        wait_for(p);
    }
    (lo, parts)
}

/// Mount `dev` (a path) on `dir` for this test; unmounted on drop.
pub fn mount(dev: &Path, dir: &Path) -> Mounted {
    Mounted::at(dev.to_str().unwrap(), dir, None)
}

/// Wait up to 5 s for a path to appear (partition nodes after `losetup -P`).
pub fn wait_for(path: &Path) {
    for _ in 0..100 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} did not appear", path.display());
}

/// An MBR sector: boot signature plus the given (type, first LBA, sectors)
/// entries, laid out as the MBR table says (entry i at 446 + 16 i: status,
/// CHS, type at +4, CHS, LBA start at +8, count at +12, little-endian).
pub fn mbr(entries: &[(u8, u32, u32)]) -> Vec<u8> {
    let mut s = vec![0u8; 512];
    for (i, (ty, start, count)) in entries.iter().enumerate() {
        let e = 446 + 16 * i;
        s[e] = 0x00;
        s[e + 4] = *ty;
        s[e + 8..e + 12].copy_from_slice(&start.to_le_bytes());
        s[e + 12..e + 16].copy_from_slice(&count.to_le_bytes());
    }
    s[510] = 0x55;
    s[511] = 0xAA;
    s
}
