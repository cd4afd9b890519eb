//! One test VM: its disks, its guest script, the QEMU command line, and the
//! results read back after the guest powers off.
//!
//! A run makes a work dir under the temp dir holding sparse disk images, the
//! initramfs, the console log and `out/` (shared with the guest over 9p as
//! `/out`). The guest's init (tests/vm/init.sh) loads the modules, runs the
//! script with tests/vm/lib.sh sourced, copies dmesg to `/out/dmesg.txt`,
//! writes `/out/script_status` last, and powers off. A run that times out
//! is killed; one that stops without `script_status` is an error carrying
//! the console log's tail. The work dir is removed when the [`GuestRun`] is
//! dropped (kept when `DRIVELAB_VM_KEEP` is set, and always on error).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::cpio::CpioWriter;
pub use crate::disk::Disk;
use crate::drivelab_bin::static_drivelab;
use crate::error::VmError;
use crate::host::Host;
use crate::hotplug::{Driver, Hotplug, HotplugOutcome};
use crate::modules::{module_name, ModuleDeps, BASE_MODULES};

/// The guest's PID 1.
const INIT_SH: &str = include_str!("../../../tests/vm/init.sh");
/// Helpers sourced before each guest script.
const LIB_SH: &str = include_str!("../../../tests/vm/lib.sh");

/// The monitor's socket in the work dir (with a hot-plug plan).
const QMP_SOCKET: &str = "qmp.sock";

/// One MiB in bytes.
pub const MIB: u64 = 1024 * 1024;

/// A virtio-scsi disk behind QEMU's `blkdebug` driver that fails reads
/// touching one sector with EIO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlkdebugDisk {
    /// The disk (attached as a `scsi-hd`).
    pub disk: Disk,
    /// The 512-byte sector whose reads fail with EIO (every time).
    pub read_error_sector: u64,
    /// The rule fails writes touching the sector instead of reads
    /// ([`VmBuilder::blkdebug_writes`]).
    pub fail_writes: bool,
}

/// How the guest gets drivelab.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Drivelab {
    #[default]
    None,
    Static,
}

/// Everything one VM boot needs; built with [`Vm::builder`].
#[derive(Debug, Clone)]
pub struct Vm {
    scsi_hd: Vec<Disk>,
    nvme: Vec<Disk>,
    sata: Vec<Disk>,
    blkdebug: Vec<BlkdebugDisk>,
    scsi_debug: Option<String>,
    host_tools: Vec<PathBuf>,
    script: String,
    timeout: Duration,
    memory_mib: u32,
    disk_wait: Duration,
    drivelab: Drivelab,
    /// Extra kernel modules (name, parameters), loaded after the base ones.
    modules: Vec<(String, String)>,
    /// Extra static binaries: guest path under `/bin`, host file.
    binaries: Vec<(String, PathBuf)>,
    /// Disks the guest may plug and pull through the host's QMP.
    hotplug: Option<Hotplug>,
}

/// Builder for [`Vm`]. Defaults: no disks, empty script, 120 s timeout,
/// 512 MiB guest memory, 30 s wait for the disks to appear, no drivelab.
#[derive(Debug, Clone)]
pub struct VmBuilder {
    vm: Vm,
}

impl Vm {
    /// A builder with the defaults listed on [`VmBuilder`].
    pub fn builder() -> VmBuilder {
        VmBuilder {
            vm: Vm {
                scsi_hd: Vec::new(),
                nvme: Vec::new(),
                sata: Vec::new(),
                blkdebug: Vec::new(),
                scsi_debug: None,
                host_tools: Vec::new(),
                script: String::new(),
                timeout: Duration::from_secs(120),
                memory_mib: 512,
                disk_wait: Duration::from_secs(30),
                drivelab: Drivelab::None,
                modules: Vec::new(),
                binaries: Vec::new(),
                hotplug: None,
            },
        }
    }
}

impl VmBuilder {
    /// Adds a virtio-scsi `scsi-hd` disk.
    pub fn scsi_hd(mut self, disk: Disk) -> Self {
        self.vm.scsi_hd.push(disk);
        self
    }

    /// Adds an NVMe controller (`nvme`, serial = the disk's) with one
    /// namespace (`nvme-ns`, nsid 1) backed by the disk.
    pub fn nvme(mut self, disk: Disk) -> Self {
        self.vm.nvme.push(disk);
        self
    }

    /// Adds a SATA disk (`ide-hd`) on q35's built-in AHCI controller
    /// (at most 6).
    pub fn sata(mut self, disk: Disk) -> Self {
        self.vm.sata.push(disk);
        self
    }

    /// Adds a virtio-scsi disk whose reads touching `read_error_sector`
    /// (512-byte units) fail with EIO, through QEMU's blkdebug driver.
    pub fn blkdebug(mut self, disk: Disk, read_error_sector: u64) -> Self {
        self.vm.blkdebug.push(BlkdebugDisk {
            disk,
            read_error_sector,
            fail_writes: false,
        });
        self
    }

    /// Adds a virtio-scsi disk whose writes touching `sector` (512-byte
    /// units) fail with EIO (reads work), through QEMU's blkdebug driver.
    pub fn blkdebug_writes(mut self, disk: Disk, sector: u64) -> Self {
        self.vm.blkdebug.push(BlkdebugDisk {
            disk,
            read_error_sector: sector,
            fail_writes: true,
        });
        self
    }

    /// Loads `scsi_debug` in the guest with these module parameters, e.g.
    /// `dev_size_mb=64 opts=2 medium_error_start=40960 medium_error_count=8`.
    /// The guest waits for one disk from it.
    pub fn scsi_debug(mut self, params: &str) -> Self {
        self.vm.scsi_debug = Some(params.to_string());
        self
    }

    /// Also loads these kernel modules (by name, with their dependencies),
    /// without parameters, after the base modules.
    pub fn modules(mut self, names: &[&str]) -> Self {
        self.vm
            .modules
            .extend(names.iter().map(|n| (n.to_string(), String::new())));
        self
    }

    /// Copies the host program `path` into the guest at the same path, with
    /// the shared libraries it loads (see [`crate::tools`]).
    pub fn host_tool(mut self, path: &str) -> Self {
        self.vm.host_tools.push(PathBuf::from(path));
        self
    }

    /// Device-mapper in the guest: the modules `dm_mod` (whose built-in
    /// targets include `linear` and `error`) and `dm_flakey`, and the
    /// host's `/sbin/dmsetup` (package `dmsetup`; `bash tests/vm/setup.sh`
    /// installs it). With no udev in the guest, scripts run it as
    /// `DM_DISABLE_UDEV=1 dmsetup --noudevsync ...`, so that it makes the
    /// `/dev/mapper` nodes itself.
    pub fn with_device_mapper(self) -> Self {
        self.modules(&["dm_mod", "dm_flakey"])
            .host_tool("/sbin/dmsetup")
    }

    /// The guest test script (busybox sh), run in `/out` with
    /// tests/vm/lib.sh sourced; its output lands in `/out/script.log`.
    pub fn guest_script(mut self, text: &str) -> Self {
        self.vm.script = text.to_string();
        self
    }

    /// How long the guest may run before it is killed (default 120 s).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.vm.timeout = d;
        self
    }

    /// Guest memory in MiB (default 512; scsi_debug's disk lives in it).
    pub fn memory_mib(mut self, mib: u32) -> Self {
        self.vm.memory_mib = mib;
        self
    }

    /// How long init waits for the expected disks (default 30 s).
    pub fn disk_wait(mut self, d: Duration) -> Self {
        self.vm.disk_wait = d;
        self
    }

    /// Puts a static drivelab binary at `/bin/drivelab` in the guest
    /// (built on first use, or `DRIVELAB_VM_BINARY`).
    pub fn with_drivelab(mut self) -> Self {
        self.vm.drivelab = Drivelab::Static;
        self
    }

    /// Loads the kernel module `name` (and what it needs) in the guest with
    /// these parameters, e.g. `module("nbd", "nbds_max=1")`.
    pub fn module(mut self, name: &str, params: &str) -> Self {
        self.vm.modules.push((name.to_string(), params.to_string()));
        self
    }

    /// Puts the static executable `host_path` at `/bin/NAME` in the guest
    /// (see [`crate::drivelab_bin::static_package_binary`]).
    pub fn binary(mut self, name: &str, host_path: &Path) -> Self {
        self.vm
            .binaries
            .push((name.to_string(), host_path.to_path_buf()));
        self
    }

    /// Starts QEMU with its monitor (QMP) on a unix socket in the work
    /// dir and carries out the guest's hot-plug requests from `plan`
    /// while the VM runs (see [`crate::hotplug`]; the guest's
    /// `hotplug add-ID` / `hotplug del-ID` in tests/vm/lib.sh).
    pub fn hotplug(mut self, plan: Hotplug) -> Self {
        self.vm.hotplug = Some(plan);
        self
    }

    /// The finished configuration.
    pub fn build(self) -> Vm {
        self.vm
    }

    /// Builds and boots: shorthand for `build().run()`.
    pub fn run(self) -> Result<GuestRun, VmError> {
        self.vm.run()
    }
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> VmError {
    let path = path.to_path_buf();
    move |source| VmError::Io {
        action,
        path,
        source,
    }
}

fn make_work_dir() -> Result<PathBuf, VmError> {
    static N: AtomicU32 = AtomicU32::new(0);
    let base = std::env::temp_dir();
    loop {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("drivelab-vm-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err("create", &dir)(e)),
        }
    }
}

fn sparse_image(path: &Path, size: u64) -> Result<(), VmError> {
    let f = File::create(path).map_err(io_err("create", path))?;
    f.set_len(size).map_err(io_err("size", path))
}

/// The last `n` lines of `text`.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Vm {
    /// How many disks the guest should see once everything is attached.
    pub fn expected_disks(&self) -> usize {
        self.scsi_hd.len()
            + self.nvme.len()
            + self.sata.len()
            + self.blkdebug.len()
            + usize::from(self.scsi_debug.is_some())
    }

    fn check(&self) -> Result<(), VmError> {
        let all = self
            .scsi_hd
            .iter()
            .chain(&self.nvme)
            .chain(&self.sata)
            .chain(self.blkdebug.iter().map(|b| &b.disk));
        let mut seen = std::collections::HashSet::new();
        for d in all {
            d.check()?;
            if !seen.insert(d.serial.clone()) {
                return Err(VmError::Config(format!("serial {} used twice", d.serial)));
            }
        }
        if let Some(h) = &self.hotplug {
            h.check(&mut seen)?;
        }
        if let Some(d) = self
            .nvme
            .iter()
            .chain(&self.sata)
            .chain(self.blkdebug.iter().map(|b| &b.disk))
            .find(|d| d.max_io_bytes.is_some())
        {
            return Err(VmError::Config(format!(
                "disk {}: a maximum I/O size is for virtio-scsi disks (scsi_hd) only",
                d.serial
            )));
        }
        if let Some(d) = self
            .scsi_hd
            .iter()
            .find(|d| d.max_io_bytes.is_some_and(|m| m < 512 || m % 512 != 0))
        {
            return Err(VmError::Config(format!(
                "disk {}: maximum I/O size must be a positive multiple of 512",
                d.serial
            )));
        }
        if self.sata.len() > 6 {
            return Err(VmError::Config(
                "q35's AHCI has 6 ports: at most 6 SATA disks".into(),
            ));
        }
        for b in &self.blkdebug {
            if b.read_error_sector >= b.disk.size_bytes / 512 {
                return Err(VmError::Config(format!(
                    "blkdebug sector {} is past the end of {}",
                    b.read_error_sector, b.disk.serial
                )));
            }
        }
        Ok(())
    }

    fn initramfs(&self, host: &Host, drivelab: Option<&Path>) -> Result<Vec<u8>, VmError> {
        let dep_path = host.modules_dir.join("modules.dep");
        let dep_text = String::from_utf8_lossy(&Host::read(&dep_path)?).into_owned();
        let deps = ModuleDeps::parse(&dep_text);
        let mut wanted: Vec<&str> = BASE_MODULES.to_vec();
        if self.scsi_debug.is_some() {
            wanted.push("scsi_debug");
        }
        wanted.extend(self.modules.iter().map(|(n, _)| n.as_str()));
        let order = deps.load_order(&wanted)?;

        let mut w = CpioWriter::new();
        for d in [
            "bin",
            "sbin",
            "dev",
            "proc",
            "sys",
            "tmp",
            "run",
            "out",
            "etc",
            "etc/vm",
            "lib",
            "lib/modules",
        ] {
            w.dir(d, 0o755);
        }
        w.char_device("dev/console", 0o600, 5, 1);
        w.char_device("dev/null", 0o666, 1, 3);
        w.file("bin/busybox", 0o755, &Host::read(&host.busybox)?);
        w.file("init", 0o755, INIT_SH.as_bytes());
        w.file("etc/vm/lib.sh", 0o644, LIB_SH.as_bytes());
        w.file("etc/vm/test.sh", 0o644, self.script.as_bytes());
        let config = format!(
            "EXPECT_DISKS={}\nDISK_WAIT_S={}\nKERNEL_RELEASE={}\n",
            self.expected_disks(),
            self.disk_wait.as_secs().max(1),
            host.kernel_release
        );
        w.file("etc/vm/config", 0o644, config.as_bytes());

        let mut list = String::new();
        for path in &order {
            let src = host.modules_dir.join(path);
            let file = path.rsplit('/').next().unwrap_or(path);
            if file.ends_with(".xz") || file.ends_with(".zst") || file.ends_with(".gz") {
                return Err(VmError::Config(format!(
                    "module {path} is compressed; busybox insmod needs plain .ko files (unpack it in setup.sh)"
                )));
            }
            w.file(&format!("lib/modules/{file}"), 0o644, &Host::read(&src)?);
            list.push_str(file);
            if module_name(path) == "scsi_debug" {
                if let Some(p) = &self.scsi_debug {
                    list.push(' ');
                    list.push_str(p);
                }
            }
            let extra = self
                .modules
                .iter()
                .find(|(n, _)| n.replace('-', "_") == module_name(path));
            if let Some((_, p)) = extra.filter(|(_, p)| !p.is_empty()) {
                list.push(' ');
                list.push_str(p);
            }
            list.push('\n');
        }
        w.file("etc/vm/modules", 0o644, list.as_bytes());

        if let Some(bin) = drivelab {
            w.file("bin/drivelab", 0o755, &Host::read(bin)?);
        }
        let mut dirs: Vec<String> = ["bin", "sbin", "lib"].map(String::from).to_vec();
        let mut files: Vec<PathBuf> = Vec::new();
        for tool in &self.host_tools {
            for f in crate::tools::closure(tool)? {
                if files.contains(&f) {
                    continue;
                }
                for d in crate::tools::parent_dirs(&f) {
                    if !dirs.contains(&d) {
                        w.dir(&d, 0o755);
                        dirs.push(d);
                    }
                }
                let rel = f.to_string_lossy().trim_start_matches('/').to_string();
                w.file(&rel, 0o755, &Host::read(&f)?);
                files.push(f);
            }
        }
        for (name, bin) in &self.binaries {
            w.file(&format!("bin/{name}"), 0o755, &Host::read(bin)?);
        }
        Ok(w.finish())
    }

    fn qemu_args(
        &self,
        host: &Host,
        dir: &Path,
        initrd: &Path,
        console: &Path,
    ) -> Result<Vec<String>, VmError> {
        let p = |x: &Path| x.display().to_string();
        let mut a: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
        push(&[
            "-machine",
            "q35,accel=tcg",
            "-cpu",
            "max",
            "-smp",
            "1",
            "-nodefaults",
            "-no-user-config",
        ]);
        push(&["-display", "none", "-monitor", "none", "-no-reboot"]);
        push(&["-m", &self.memory_mib.to_string()]);
        push(&["-serial", &format!("file:{}", p(console))]);
        match &host.qboot {
            Some(qboot) => push(&["-bios", &p(qboot), "-kernel", &p(&host.vmlinux)]),
            None => push(&["-kernel", &p(&host.bzimage)]),
        }
        push(&["-initrd", &p(initrd)]);
        push(&["-append", "console=ttyS0 quiet panic=-1 rdinit=/init"]);
        push(&[
            "-virtfs",
            &format!(
                "local,path={},mount_tag=out,security_model=none,id=out",
                p(&dir.join("out"))
            ),
        ]);
        let hot_scsi = self.hotplug.as_ref().is_some_and(Hotplug::needs_scsi);
        if !self.scsi_hd.is_empty() || !self.blkdebug.is_empty() || hot_scsi {
            push(&["-device", "virtio-scsi-pci,id=scsi0"]);
        }
        if let Some(h) = &self.hotplug {
            let args = h.qemu_args(&dir.join(QMP_SOCKET));
            push(&args.iter().map(String::as_str).collect::<Vec<_>>());
        }
        for (i, d) in self.scsi_hd.iter().enumerate() {
            let img = dir.join(format!("scsi{i}.img"));
            sparse_image(&img, d.size_bytes)?;
            push(&["-drive", &d.drive_opts(&format!("dscsi{i}"), &img)]);
            let mut dev = format!("scsi-hd,bus=scsi0.0,drive=dscsi{i},serial={}", d.serial);
            if let Some(m) = d.max_io_bytes {
                dev.push_str(&format!(",max_io_size={m}"));
            }
            push(&["-device", &dev]);
        }
        for (i, b) in self.blkdebug.iter().enumerate() {
            let img = dir.join(format!("blkdebug{i}.img"));
            sparse_image(&img, b.disk.size_bytes)?;
            // raw on top, so its read_aio event reaches blkdebug below it
            // (the event is what activates the injection rule).
            push(&[
                "-blockdev",
                &format!(
                    "driver=raw,node-name=bdbg{i},file.driver=blkdebug,\
                     file.inject-error.0.event={},file.inject-error.0.errno=5,\
                     file.inject-error.0.sector={},file.inject-error.0.once=off,\
                     file.image.driver=file,file.image.filename={}",
                    if b.fail_writes {
                        "write_aio"
                    } else {
                        "read_aio"
                    },
                    b.read_error_sector,
                    p(&img)
                ),
            ]);
            push(&[
                "-device",
                &format!("scsi-hd,bus=scsi0.0,drive=bdbg{i},serial={}", b.disk.serial),
            ]);
        }
        for (i, d) in self.nvme.iter().enumerate() {
            let img = dir.join(format!("nvme{i}.img"));
            sparse_image(&img, d.size_bytes)?;
            push(&["-drive", &d.drive_opts(&format!("dnvme{i}"), &img)]);
            push(&["-device", &format!("nvme,id=nvme{i},serial={}", d.serial)]);
            push(&[
                "-device",
                &format!(
                    "nvme-ns,drive=dnvme{i},bus=nvme{i},nsid=1{}",
                    d.zone_bytes
                        .map(|z| format!(",zoned=true,zoned.zone_size={z}"))
                        .unwrap_or_default()
                ),
            ]);
        }
        for (i, d) in self.sata.iter().enumerate() {
            let img = dir.join(format!("sata{i}.img"));
            sparse_image(&img, d.size_bytes)?;
            push(&["-drive", &d.drive_opts(&format!("dsata{i}"), &img)]);
            push(&[
                "-device",
                &format!("ide-hd,bus=ide.{i},drive=dsata{i},serial={}", d.serial),
            ]);
        }
        Ok(a)
    }

    /// Fills the work dir (out/, initramfs, disk images, qemu.cmdline,
    /// qemu.stderr) and returns QEMU's arguments and its stderr file.
    fn prepare(
        &self,
        host: &Host,
        dir: &Path,
        drivelab: Option<&Path>,
    ) -> Result<(Vec<String>, File), VmError> {
        let out = dir.join("out");
        std::fs::create_dir(&out).map_err(io_err("create", &out))?;
        let initrd = dir.join("initramfs.cpio");
        let image = self.initramfs(host, drivelab)?;
        std::fs::write(&initrd, image).map_err(io_err("write", &initrd))?;
        let console = dir.join("console.log");
        let args = self.qemu_args(host, dir, &initrd, &console)?;
        let cmdline_file = dir.join("qemu.cmdline");
        let mut cmdline = host.qemu.display().to_string();
        for x in &args {
            cmdline.push_str(" '");
            cmdline.push_str(x);
            cmdline.push('\'');
        }
        std::fs::write(&cmdline_file, cmdline + "\n").map_err(io_err("write", &cmdline_file))?;
        let stderr_path = dir.join("qemu.stderr");
        let stderr = File::create(&stderr_path).map_err(io_err("create", &stderr_path))?;
        Ok((args, stderr))
    }

    /// Boots the VM, runs the guest script, waits for power-off (or kills
    /// QEMU at the timeout) and returns the results.
    pub fn run(&self) -> Result<GuestRun, VmError> {
        self.check()?;
        let host = Host::discover()?;
        // Before the work dir exists, so a failed build leaves nothing behind.
        let drivelab = match self.drivelab {
            Drivelab::Static => Some(static_drivelab()?),
            Drivelab::None => None,
        };
        let dir = make_work_dir()?;
        let (args, stderr) = match self.prepare(&host, &dir, drivelab.as_deref()) {
            Ok(x) => x,
            Err(e) => {
                // Nothing ran: nothing in the work dir to look at.
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let out = dir.join("out");
        let console = dir.join("console.log");
        let stderr_path = dir.join("qemu.stderr");

        let started = Instant::now();
        let spawned = Command::new(&host.qemu)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(source) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(VmError::Spawn {
                    program: host.qemu.clone(),
                    source,
                });
            }
        };
        let mut hotplug = self
            .hotplug
            .clone()
            .map(|plan| Driver::new(plan, dir.join(QMP_SOCKET), out.clone()));
        let status = loop {
            if let Some(d) = hotplug.as_mut() {
                d.poll();
            }
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) => {}
                Err(e) => return Err(io_err("wait for qemu", &host.qemu)(e)),
            }
            if started.elapsed() > self.timeout {
                // Our own child, by its handle.
                let _ = child.kill();
                let _ = child.wait();
                return Err(VmError::Timeout {
                    timeout_s: self.timeout.as_secs(),
                    log: console.clone(),
                    tail: log_tail(&console, &stderr_path),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let elapsed = started.elapsed();
        if std::env::var_os("DRIVELAB_VM_KEEP").is_none() {
            // The bulky inputs are spent; the logs and out/ stay.
            remove_inputs(&dir);
        }
        let status_file = out.join("script_status");
        let script_status = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        let Some(script_status) = script_status else {
            return Err(VmError::NoResults {
                status: status.to_string(),
                log: console.clone(),
                tail: log_tail(&console, &stderr_path),
            });
        };
        let uptime = |name: &str| {
            std::fs::read_to_string(out.join(name))
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
        };
        Ok(GuestRun {
            hotplug: hotplug.map(|d| d.outcomes).unwrap_or_default(),
            boot_to_script_s: uptime("uptime_script_start"),
            script_end_s: uptime("uptime_script_end"),
            dir,
            out,
            console,
            script_status,
            elapsed,
        })
    }
}

fn remove_inputs(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".img") || name == "initramfs.cpio" {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn log_tail(console: &Path, stderr: &Path) -> String {
    let c = std::fs::read_to_string(console).unwrap_or_default();
    let e = std::fs::read_to_string(stderr).unwrap_or_default();
    let mut t = tail_lines(&c, 40);
    if !e.trim().is_empty() {
        t.push_str("\n--- qemu stderr ---\n");
        t.push_str(&tail_lines(&e, 10));
    }
    t
}

/// The outcome of one boot: the guest's files and timings.
#[derive(Debug)]
pub struct GuestRun {
    dir: PathBuf,
    out: PathBuf,
    console: PathBuf,
    /// Exit status of the guest script.
    pub script_status: i32,
    /// Guest uptime when the test script started (seconds), i.e. boot time.
    pub boot_to_script_s: Option<f64>,
    /// Guest uptime when the test script ended (seconds).
    pub script_end_s: Option<f64>,
    /// Host wall time from starting QEMU to its exit.
    pub elapsed: Duration,
    /// The guest's hot-plug requests and what became of each, in order.
    pub hotplug: Vec<HotplugOutcome>,
}

impl GuestRun {
    /// The results dir (the guest's `/out`).
    pub fn out_dir(&self) -> &Path {
        &self.out
    }

    /// The whole work dir (images, initramfs, console log, out/).
    pub fn work_dir(&self) -> &Path {
        &self.dir
    }

    /// The console (serial) log file.
    pub fn console_log_path(&self) -> &Path {
        &self.console
    }

    /// The console log's text.
    pub fn console(&self) -> String {
        std::fs::read_to_string(&self.console).unwrap_or_default()
    }

    /// A result file's text (`name` relative to `/out`).
    pub fn file(&self, name: &str) -> Result<String, VmError> {
        let p = self.out.join(name);
        std::fs::read_to_string(&p).map_err(io_err("read", &p))
    }

    /// What the guest's `run_json NAME COMMAND…` kept: the exit status
    /// (-1 when missing), stdout and stderr.
    pub fn outcome(&self, name: &str) -> (i64, String, String) {
        let status = self
            .file(&format!("{name}.status"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(-1);
        let out = self.file(&format!("{name}.out")).unwrap_or_default();
        let err = self.file(&format!("{name}.err")).unwrap_or_default();
        (status, out, err)
    }

    /// [`GuestRun::outcome`] with stdout parsed as JSON; an error says
    /// what is missing or not JSON, with stderr.
    pub fn outcome_json(&self, name: &str) -> Result<(i64, serde_json::Value), String> {
        let (status, out, err) = self.outcome(name);
        if status < 0 {
            return Err(format!("{name}: no exit status ({err})"));
        }
        let v = serde_json::from_str(&out)
            .map_err(|e| format!("{name}: not JSON ({e}): {out}{err}"))?;
        Ok((status, v))
    }

    /// A result file parsed as JSON.
    pub fn json(&self, name: &str) -> Result<serde_json::Value, VmError> {
        let text = self.file(name)?;
        serde_json::from_str(&text).map_err(|source| VmError::BadJson {
            path: self.out.join(name),
            source,
        })
    }

    /// Every `*.json` file in `/out`, parsed, by file name.
    pub fn json_files(&self) -> Result<Vec<(String, serde_json::Value)>, VmError> {
        let mut v = Vec::new();
        let rd = std::fs::read_dir(&self.out).map_err(io_err("read", &self.out))?;
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") {
                let j = self.json(&name)?;
                v.push((name, j));
            }
        }
        v.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(v)
    }

    /// A context block for assertion messages: the script log and the
    /// console log's tail.
    pub fn context(&self) -> String {
        format!(
            "work dir {}\n--- script.log ---\n{}\n--- console tail ---\n{}",
            self.dir.display(),
            tail_lines(&self.file("script.log").unwrap_or_default(), 40),
            tail_lines(&self.console(), 30)
        )
    }
}

impl Drop for GuestRun {
    fn drop(&mut self) {
        if std::env::var_os("DRIVELAB_VM_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_disks_counts_every_attachment() {
        let vm = Vm::builder()
            .scsi_hd(Disk::new(MIB, "A1"))
            .nvme(Disk::new(MIB, "B1"))
            .sata(Disk::new(MIB, "C1"))
            .sata(Disk::new(MIB, "C2"))
            .blkdebug(Disk::new(MIB, "D1"), 5)
            .scsi_debug("dev_size_mb=8")
            .build();
        assert_eq!(vm.expected_disks(), 1 + 1 + 2 + 1 + 1);
    }

    #[test]
    fn bad_serials_and_sizes_are_refused_before_boot() {
        for (disk, what) in [
            (Disk::new(MIB, "has,comma"), "serial"),
            (Disk::new(MIB, "ABCDEFGHIJKLMNOPQRSTU"), "serial"), // 21 chars
            (Disk::new(1000, "OK1"), "multiple of 512"),
        ] {
            let err = Vm::builder().scsi_hd(disk).build().check().unwrap_err();
            assert!(err.to_string().contains(what), "{err}");
        }
        let dup = Vm::builder()
            .scsi_hd(Disk::new(MIB, "X"))
            .nvme(Disk::new(MIB, "X"))
            .build();
        assert!(dup.check().unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn a_write_limit_becomes_qemu_throttling() {
        let img = Path::new("/tmp/x.img");
        let plain = Disk::new(MIB, "P1").drive_opts("d0", img);
        assert_eq!(
            plain,
            "if=none,id=d0,file=/tmp/x.img,format=raw,cache=unsafe"
        );
        let slow = Disk::new(MIB, "S1")
            .write_limit(64 * MIB)
            .drive_opts("d1", img);
        assert!(slow.ends_with(",throttling.bps-write=67108864"), "{slow}");
        let refusal = |b: VmBuilder| b.build().check().unwrap_err().to_string();
        let zero = refusal(Vm::builder().nvme(Disk::new(MIB, "Z1").write_limit(0)));
        assert!(zero.contains("never finish"), "{zero}");
        let nvme = refusal(Vm::builder().nvme(Disk::new(MIB, "N1").max_io(MIB)));
        assert!(nvme.contains("scsi"), "{nvme}");
        let odd = refusal(Vm::builder().scsi_hd(Disk::new(MIB, "O1").max_io(1000)));
        assert!(odd.contains("multiple of 512"), "{odd}");
        assert!(Vm::builder()
            .scsi_hd(Disk::new(MIB, "S2").max_io(MIB))
            .build()
            .check()
            .is_ok());
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail_lines("a", 5), "a");
    }
}
