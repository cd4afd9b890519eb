//! Shared helpers for the `sys_*` integration tests: temp dirs, loop devices
//! and mounts that clean up after themselves (Drop guards), so a failing test
//! still detaches only what it attached.
#![allow(dead_code)]

use std::fs;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Fail (not skip) when not root: these tests need loop devices.
pub fn require_root() {
    // /proc/self belongs to the effective user of the process.
    let uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    assert_eq!(
        uid, 0,
        "this test needs root (loop devices, mounts); run it as root"
    );
}

/// Run a command; panic with its stderr if it fails; return stdout.
pub fn sh(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("drivelab-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Create a zero-filled file of `size` bytes with `patches` (offset, bytes)
/// written into it.
pub fn make_image(path: &Path, size: u64, patches: &[(u64, &[u8])]) {
    let f = fs::File::create(path).unwrap();
    f.set_len(size).unwrap();
    for (off, b) in patches {
        f.write_all_at(b, *off).unwrap();
    }
    f.sync_all().unwrap();
}

/// A loop device attached by this test; detached (by name) on drop.
pub struct LoopDev {
    pub path: PathBuf,
    pub name: String,
}

impl LoopDev {
    /// `losetup -f --show [extra...] FILE`.
    pub fn attach(file: &Path, extra: &[&str]) -> LoopDev {
        require_root();
        let mut args = vec!["-f", "--show"];
        args.extend_from_slice(extra);
        let f = file.to_str().unwrap();
        args.push(f);
        let out = sh("losetup", &args);
        let path = PathBuf::from(out.trim());
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        LoopDev { path, name }
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
    }
}

impl LoopDev {
    /// Attach with partition scanning and make sure the kernel knows the
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
}

/// A mount made by this test; unmounted on drop.
pub struct Mount(pub PathBuf);

impl Mount {
    pub fn new(dev: &Path, dir: &Path) -> Mount {
        sh("mount", &[dev.to_str().unwrap(), dir.to_str().unwrap()]);
        Mount(dir.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Every byte of a (small) device or file.
pub fn read_all(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    fs::File::open(path).unwrap().read_to_end(&mut v).unwrap();
    v
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
