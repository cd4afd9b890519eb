//! Fixtures for drivelab's integration tests, in one place so every crate's
//! tests create and clean up real devices the same way.
//!
//! Every device a fixture creates is released by its own name when the
//! fixture drops, so a failing test still detaches only what it attached.
//! Nothing here touches a device it did not create.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The block device mounted at `/` (from /proc/self/mountinfo): the
/// running system's disk, for tests that show it is refused. Panics when
/// `/` is not on a block device, which such a test needs.
pub fn root_device() -> String {
    let dev = fs::read_to_string("/proc/self/mountinfo")
        .expect("read /proc/self/mountinfo")
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(4) == Some(&"/")).then(|| {
                let sep = f.iter().position(|x| *x == "-")?;
                f.get(sep + 2).map(|s| s.to_string())
            })?
        })
        .expect("a mount at /");
    assert!(
        dev.starts_with("/dev/"),
        "root is not on a block device here ({dev}); this test needs one"
    );
    dev
}

/// Fail (not skip) when not root: device tests need it.
pub fn require_root() {
    let uid = effective_uid();
    assert_eq!(
        uid, 0,
        "this test needs root (loop devices, zram, tracefs); run the tests as root"
    );
}

/// This process's effective user id, from the second field of the `Uid:`
/// line of /proc/self/status (real, effective, saved, filesystem), which
/// needs no `unsafe`.
pub fn effective_uid() -> u32 {
    let status = fs::read_to_string("/proc/self/status")
        .unwrap_or_else(|e| panic!("cannot read /proc/self/status: {e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|euid| euid.parse().ok())
        .unwrap_or_else(|| panic!("no effective uid in /proc/self/status:\n{status}"))
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
    /// A fresh, empty directory tagged with `tag`.
    pub fn new(tag: &str) -> TempDir {
        isolate_store();
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let p = std::env::temp_dir().join(format!("drivelab-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap_or_else(|e| panic!("cannot create {}: {e}", p.display()));
        TempDir(p)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A path inside it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Create a zero-filled (sparse) file of `size` bytes with `patches`
/// (offset, bytes) written into it.
pub fn make_image(path: &Path, size: u64, patches: &[(u64, &[u8])]) {
    isolate_store();
    let f =
        fs::File::create(path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    f.set_len(size).unwrap();
    for (off, b) in patches {
        f.write_all_at(b, *off).unwrap();
    }
    f.sync_all().unwrap();
}

/// A loop device attached by this test over a file; detached (by name) on drop.
pub struct LoopDev {
    /// `/dev/loopN`.
    pub path: PathBuf,
    /// `loopN`.
    pub name: String,
    /// The backing file.
    pub backing: PathBuf,
}

impl LoopDev {
    /// `losetup -f --show [extra…] FILE`.
    pub fn attach(file: &Path, extra: &[&str]) -> LoopDev {
        isolate_store();
        require_root();
        let mut args = vec!["-f", "--show"];
        args.extend_from_slice(extra);
        let f = file.to_str().expect("utf-8 path");
        args.push(f);
        let out = sh("losetup", &args);
        let path = PathBuf::from(out.trim());
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("loop name")
            .to_string();
        LoopDev {
            path,
            name,
            backing: file.to_path_buf(),
        }
    }

    /// A new sparse backing file of `size` bytes in `dir`, attached.
    pub fn new_in(dir: &TempDir, size: u64) -> LoopDev {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let img = dir.join(&format!("loop-{n}.img"));
        make_image(&img, size, &[]);
        LoopDev::attach(&img, &[])
    }

    /// The device node as a &str.
    pub fn dev(&self) -> &str {
        self.path.to_str().expect("utf-8 path")
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
    }
}

/// A tmpfs of `size` bytes mounted by this test on a directory of its own;
/// unmounted (by that path) on drop. For a full filesystem: [`Tmpfs::fill`].
pub struct Tmpfs {
    /// The mount point.
    pub path: PathBuf,
}

impl Tmpfs {
    /// `mount -t tmpfs -o size=SIZE tmpfs DIR/NAME`.
    pub fn mount_in(dir: &TempDir, name: &str, size: u64) -> Tmpfs {
        require_root();
        let path = dir.join(name);
        fs::create_dir_all(&path).unwrap();
        let opt = format!("size={size}");
        sh(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                &opt,
                "tmpfs",
                path.to_str().expect("utf-8 path"),
            ],
        );
        Tmpfs { path }
    }

    /// A path inside it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Fill it with a file named `filler` until a write fails (ENOSPC).
    pub fn fill(&self) {
        let mut f = fs::File::create(self.join("filler")).unwrap();
        let block = [0x5Au8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.flush();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

/// A filesystem this test mounted on a directory of its own; unmounted (by
/// that path) on drop.
pub struct Mounted {
    /// The mount point.
    pub path: PathBuf,
}

impl Mounted {
    /// `mount [-o OPTS] DEV DIR/NAME`, then `sync`.
    pub fn mount_in(dev: &str, dir: &TempDir, name: &str, opts: Option<&str>) -> Mounted {
        let path = dir.join(name);
        fs::create_dir_all(&path).unwrap();
        Mounted::at(dev, &path, opts)
    }

    /// `mount [-o OPTS] DEV PATH` on an existing directory, then `sync`.
    pub fn at(dev: &str, path: &Path, opts: Option<&str>) -> Mounted {
        require_root();
        let at = path.to_str().expect("utf-8 path");
        match opts {
            Some(o) => sh("mount", &["-o", o, dev, at]),
            None => sh("mount", &[dev, at]),
        };
        sh("sync", &[]);
        Mounted {
            path: path.to_path_buf(),
        }
    }
}

impl Drop for Mounted {
    // Lazily when something still holds it, so that the loop device under
    // it can still be detached.
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.path)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
    }
}

/// `mkfs.ext4` on a device or image without lazy initialisation, so that
/// the kernel writes nothing to it after it is mounted.
pub fn mkfs_ext4(target: &str) {
    sh(
        "mkfs.ext4",
        &[
            "-q",
            "-F",
            "-E",
            "lazy_itable_init=0,lazy_journal_init=0",
            target,
        ],
    );
}

/// Root, and every program in `tools` (absolute paths) installed.
pub fn require_tools(tools: &[&str]) {
    require_root();
    for t in tools {
        let name = t.rsplit('/').next().unwrap_or(t);
        assert!(
            Path::new(t).is_file(),
            "{t} is not installed; this test needs it (apt-get install {name})"
        );
    }
}

/// `{`, where a JSON object starts (as a code point, so that the braces
/// of this file's code stay balanced for tools that count them).
const JSON_OPEN: char = '\u{7b}';

/// The JSON `tool` printed on stdout, after any notes before it.
pub fn json_after_notes(tool: &str, stdout: &str) -> serde_json::Value {
    let start = stdout
        .find(JSON_OPEN)
        .unwrap_or_else(|| panic!("{tool}: no JSON in the output:\n{stdout}"));
    serde_json::from_str(&stdout[start..])
        .unwrap_or_else(|e| panic!("{tool}: bad JSON ({e}):\n{stdout}"))
}

/// A zram device created for this test through /sys/class/zram-control
/// (hot_add) and removed (hot_remove, by its own number) on drop.
pub struct Zram {
    /// `/dev/zramN`.
    pub path: PathBuf,
    /// N.
    pub id: u32,
}

impl Zram {
    /// Create a zram device of `size` bytes, or None when zram is not available.
    pub fn new(size: u64) -> Option<Zram> {
        require_root();
        let id: u32 = fs::read_to_string("/sys/class/zram-control/hot_add")
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let z = Zram {
            path: PathBuf::from(format!("/dev/zram{id}")),
            id,
        };
        fs::write(format!("/sys/block/zram{id}/disksize"), size.to_string()).ok()?;
        Some(z)
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        // udev may still hold the device open for a moment after our last
        // write (it probes changed devices): reset fails with EBUSY then, so
        // retry for a few seconds rather than leak the device.
        for _ in 0..50 {
            if fs::write(format!("/sys/block/zram{}/reset", self.id), "1").is_ok()
                && fs::write("/sys/class/zram-control/hot_remove", self.id.to_string()).is_ok()
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!("warning: could not remove zram{} (still busy)", self.id);
    }
}

/// The first file in `dir` whose extension is `ext` (an erase's or a
/// season's `.journal`, for example).
pub fn file_with_extension(dir: &Path, ext: &str) -> Option<std::path::PathBuf> {
    fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == ext))
}

/// The whole content of a file or device.
pub fn read_all(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    fs::File::open(path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()))
        .read_to_end(&mut v)
        .unwrap();
    v
}

/// A 64-bit FNV-1a digest of a file's bytes (to check "nothing changed").
pub fn digest(path: &Path) -> u64 {
    read_all(path)
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
        })
}

/// One device's line of /proc/diskstats as (reads, sectors read, writes,
/// sectors written, discards, sectors discarded), parsed here independently
/// of drivelab's own parser.
pub fn diskstats(name: &str) -> (u64, u64, u64, u64, u64, u64) {
    let text = fs::read_to_string("/proc/diskstats").expect("/proc/diskstats");
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 14 && f[2] == name {
            let n = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
            return (n(3), n(5), n(7), n(9), n(14), n(16));
        }
    }
    panic!("{name} not in /proc/diskstats");
}

/// Run a command and return (exit status, stdout, stderr).
pub fn run(bin: &str, args: &[&str]) -> (i32, String, String) {
    isolate_store();
    let out = Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One request as the block layer issued it to a device
/// (`block:block_rq_issue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The rwbs string: R, W, WS, D, FF, …
    pub rwbs: String,
    /// Start sector (512 B).
    pub sector: u64,
    /// Bytes.
    pub bytes: u64,
    /// The task that issued it (drivelab names its job threads `job-NAME`).
    pub comm: String,
}

/// A private tracefs instance recording `block_rq_issue` for one device,
/// removed on drop. Independent of drivelab's own recorder, so tests can
/// check drivelab against the kernel by a second route.
pub struct IssueTrace {
    dir: PathBuf,
}

impl IssueTrace {
    /// Start recording requests issued to the block device `dev_path`.
    pub fn start(dev_path: &Path) -> IssueTrace {
        use std::os::unix::fs::MetadataExt;
        require_root();
        let rdev = fs::metadata(dev_path).expect("device").rdev();
        let (maj, min) = (libc::major(rdev), libc::minor(rdev));
        let kdev = (u64::from(maj) << 20) | u64::from(min);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let root = Path::new("/sys/kernel/tracing");
        assert!(
            root.join("instances").is_dir(),
            "tracefs is not mounted at /sys/kernel/tracing"
        );
        let dir = root.join(format!(
            "instances/drivelab-test-{}-{n}",
            std::process::id()
        ));
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("cannot create tracefs instance: {e}"));
        let t = IssueTrace { dir };
        let w = |p: &str, v: &str| {
            fs::write(t.dir.join(p), v).unwrap_or_else(|e| panic!("tracefs {p}: {e}"))
        };
        w("buffer_size_kb", "65536");
        w(
            "events/block/block_rq_issue/filter",
            &format!("dev == {kdev}"),
        );
        w("events/block/block_rq_issue/enable", "1");
        w("tracing_on", "1");
        t
    }

    /// Stop and return every issued request, in order. Panics if the
    /// kernel reports lost events (the check would be incomplete).
    pub fn stop(self) -> Vec<Issued> {
        fs::write(self.dir.join("tracing_on"), "0").expect("tracing_on");
        let mut overrun = 0u64;
        if let Ok(rd) = fs::read_dir(self.dir.join("per_cpu")) {
            for e in rd.flatten() {
                let s = fs::read_to_string(e.path().join("stats")).unwrap_or_default();
                for l in s.lines() {
                    if let Some(v) = l.strip_prefix("overrun:") {
                        overrun += v.trim().parse::<u64>().unwrap_or(0);
                    }
                }
            }
        }
        assert_eq!(
            overrun, 0,
            "the trace buffer overran: {overrun} events lost"
        );
        let text = fs::read_to_string(self.dir.join("trace")).expect("trace");
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            // "... block_rq_issue: 7,3 R 4096 () 123456 + 8 none,0,0 [comm]"
            let Some(rest) = line.split("block_rq_issue: ").nth(1) else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            let plus = f
                .iter()
                .position(|x| *x == "+")
                .expect("'+' in block_rq_issue line");
            out.push(Issued {
                rwbs: f[1].to_string(),
                sector: f[plus - 1].parse().expect("sector"),
                bytes: f[2].parse().expect("bytes"),
                comm: f
                    .last()
                    .map(|c| c.trim_matches(|c| c == '[' || c == ']').to_string())
                    .unwrap_or_default(),
            });
        }
        out
    }
}

impl Drop for IssueTrace {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("tracing_on"), "0");
        let _ = fs::write(self.dir.join("events/block/block_rq_issue/enable"), "0");
        // The kernel refuses (EBUSY) while anything still references the
        // instance; retry briefly rather than leave it behind.
        for _ in 0..40 {
            if fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        eprintln!(
            "warning: could not remove tracefs instance {}",
            self.dir.display()
        );
    }
}

/// Keep the results of the drivelab processes a test starts out of the
/// user's store: point `DRIVELAB_STORE` (for this test process and every
/// child) at a store of this process's own under the temp dir, unless the
/// test set it already. The fixtures above call it, so a test that makes a
/// temp dir, an image or a loop device, or uses [`run`], is covered; stores
/// left by test processes that have exited are removed on the way.
pub fn isolate_store() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("DRIVELAB_STORE").is_some() {
            return;
        }
        let tmp = std::env::temp_dir();
        if let Ok(entries) = fs::read_dir(&tmp) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(pid) = name.strip_prefix("drivelab-test-store-") else {
                    continue;
                };
                if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = tmp.join(format!("drivelab-test-store-{}", std::process::id()));
        let _ = fs::create_dir_all(&dir);
        std::env::set_var("DRIVELAB_STORE", dir.join("results.db"));
    });
}

/// A PostgreSQL server of the test's own: `initdb` into a temp dir (as the
/// `postgres` user, or `nobody`: the server refuses to run as root), a unix
/// socket in that dir and no TCP, trust authentication for the user
/// `drivelab`. Stopped and removed on drop. Panics when PostgreSQL is not
/// installed (tests/run installs the Debian package `postgresql`).
pub struct PgServer {
    dir: TempDir,
    child: std::process::Child,
    bin: PathBuf,
    /// The port (also the number in the socket's name).
    port: u16,
}

impl PgServer {
    /// The newest installed PostgreSQL's bin directory.
    fn bin_dir() -> PathBuf {
        let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| {
                        let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
                        let bin = e.path().join("bin");
                        bin.join("initdb").exists().then_some((v, bin))
                    })
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        found.pop().map(|(_, b)| b).unwrap_or_else(|| {
            panic!("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): install the Debian package postgresql (tests/run does)")
        })
    }

    /// Start a fresh server (its unix socket only).
    pub fn start() -> PgServer {
        Self::start_on(None)
    }

    /// Start a fresh server that also listens on 127.0.0.1:`port`, for
    /// clients that cannot reach its socket (a container on the host's
    /// network); [`PgServer::database_tcp`] gives their URL.
    pub fn start_tcp(port: u16) -> PgServer {
        Self::start_on(Some(port))
    }

    fn start_on(port: Option<u16>) -> PgServer {
        let bin = Self::bin_dir();
        let dir = TempDir::new("pg");
        let user = if sh_ok("id", &["-u", "postgres"]) {
            "postgres"
        } else {
            "nobody"
        };
        sh("chown", &[user, &dir.path().display().to_string()]);
        let data = dir.join("data");
        // setpriv execs the program itself: the child's pid is the server's,
        // so that the signal on drop reaches it.
        let group = sh("id", &["-gn", user]).trim().to_string();
        let as_user = |prog: &str, args: &[&str]| -> Command {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={user}"))
                .arg(format!("--regid={group}"))
                .arg("--clear-groups")
                .arg(bin.join(prog))
                .args(args)
                .current_dir(dir.path());
            c
        };
        let out = as_user(
            "initdb",
            &[
                "-D",
                &data.display().to_string(),
                "-A",
                "trust",
                "-U",
                "drivelab",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )
        .output()
        .unwrap_or_else(|e| panic!("cannot run initdb: {e}"));
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sock = dir.path().display().to_string();
        let listen = match port {
            Some(p) => vec![
                "listen_addresses=127.0.0.1".to_string(),
                format!("port={p}"),
            ],
            None => vec!["listen_addresses=".to_string()],
        };
        let mut args = vec![
            "-D".to_string(),
            data.display().to_string(),
            "-k".into(),
            sock.clone(),
        ];
        for kv in listen
            .into_iter()
            .chain(["fsync=off".into(), "max_connections=100".into()])
        {
            args.push("-c".into());
            args.push(kv);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let child = as_user("postgres", &args)
            .stdout(std::process::Stdio::null())
            .stderr(fs::File::create(dir.join("server.log")).expect("server log"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start postgres: {e}"));
        let server = PgServer {
            dir,
            child,
            bin,
            port: port.unwrap_or(5432),
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let ready = Command::new(server.bin.join("pg_isready"))
                .args(["-h", &sock, "-p", &server.port.to_string()])
                .args(["-U", "drivelab", "-d", "postgres", "-q"])
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ready {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "postgres did not start: {}",
                fs::read_to_string(server.dir.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        server
    }

    /// A new, empty database `name` on this server; returns its connection
    /// string (`postgresql:///NAME?host=DIR&user=drivelab`).
    pub fn database(&self, name: &str) -> String {
        let sock = self.dir.path().display().to_string();
        let out = Command::new(self.bin.join("createdb"))
            .args(["-h", &sock, "-p", &self.port.to_string()])
            .args(["-U", "drivelab", name])
            .output()
            .unwrap_or_else(|e| panic!("cannot run createdb: {e}"));
        assert!(
            out.status.success(),
            "createdb {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        format!("postgresql:///{name}?host={sock}&user=drivelab")
    }

    /// [`PgServer::database`], with the URL over TCP on 127.0.0.1 (a
    /// server from [`PgServer::start_tcp`]).
    pub fn database_tcp(&self, name: &str) -> String {
        self.database(name);
        format!("postgresql://drivelab@127.0.0.1:{}/{name}", self.port)
    }

    /// Run one SQL command on database `name` with psql; its output.
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let sock = self.dir.path().display().to_string();
        sh(
            &self.bin.join("psql").display().to_string(),
            &[
                "-h",
                &sock,
                "-p",
                &self.port.to_string(),
                "-U",
                "drivelab",
                "-d",
                name,
                "-tAc",
                sql,
            ],
        )
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        // SIGINT: PostgreSQL's fast shutdown (ends the sessions, no wait).
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Whether a command runs and succeeds.
fn sh_ok(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn effective_uid_owns_the_files_this_process_creates() {
        let dir = std::env::temp_dir().join(format!("drivelab-euid-{}", std::process::id()));
        fs::write(&dir, b"x").unwrap();
        let owner = fs::metadata(&dir).unwrap().uid();
        fs::remove_file(&dir).unwrap();
        assert_eq!(effective_uid(), owner);
    }
}
