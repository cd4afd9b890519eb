//! `drivelab-tcmuemu`: creates the emulated drive's backstore and loopback
//! LUN, then serves its commands until killed.
//!
//! ```text
//! drivelab-tcmuemu --backing FILE [--size-mib N] [--name NAME] [--hba H]
//!     [--serial S] [--vendor V] [--product P] [--revision R]
//!     [--max-transfer-kib K] [--state FILE]
//!     [--sanitize-seconds S] [--self-test-seconds S] [--fault LINE]... [--control FILE]
//!     [--command-timeout S] [--block-size 512|520|528|4096] [--media memory|ftl]
//!     [--bad-lba LBA]
//!     [--sata [--frozen] [--locked-password PW] [--hpa-mib N] [--dco-mib N]]
//! ```
//!
//! `--sata` makes it an ATA drive behind a SATL (ATA PASS-THROUGH
//! answered; INQUIRY vendor "ATA", product the model = `--product`,
//! revision the firmware = `--revision`); `--frozen` freezes its security
//! at power-on, `--locked-password` has someone else's user password set
//! and the drive locked, `--hpa-mib` hides all but the first N MiB behind
//! a host protected area, `--dco-mib` all but the first N MiB behind a
//! device configuration overlay (the native max lowered; `--hpa-mib` then
//! counts within it). `--bad-lba` gives either personality a sector it
//! cannot read: a READ of it gets MEDIUM ERROR (on SATA, an entry in the
//! SMART error logs), every self-test fails there with a read failure,
//! and a WRITE of it reallocates it. `--sanitize-seconds` is how long a sanitize
//! runs (default 4); `--fault` and the lines of the `--control` file are
//! faults on command (`drivelab_tcmuemu::faults`); `--command-timeout` is
//! how long the kernel waits for a command never answered (default: the
//! kernel's 30 s). `--block-size` is the SAS personality's logical block
//! length (520 and 528 as drives from storage arrays have; MODE SELECT and
//! FORMAT UNIT change it); the backstore itself is declared with 512-byte
//! blocks whatever it is. `--media ftl` puts the FTL model (crates/ftlsim)
//! behind the backing file: writes go through its mapping and garbage
//! collection, and the SATA personality's SMART attributes 247 and 248
//! report the NAND writes; `memory` (the default) is the file alone. Both
//! keep the map of unmapped blocks.
//!
//! The backing file is created (or cut) to the size. The state file is
//! written once the ring is mapped and before the LUN is linked, then after
//! every batch of commands; "ready" is printed on stdout once the LUN
//! exists.

use std::fs::OpenOptions;
use std::path::PathBuf;
use std::process::ExitCode;

use drivelab_device::block::uio::UioMap;
use drivelab_ftlsim::media::MediaKind;
use drivelab_tcmuemu::ata::Ata;
use drivelab_tcmuemu::configfs::{self, Names};
use drivelab_tcmuemu::disk::Disk;
use drivelab_tcmuemu::pages::{Geometry, Identity};
use drivelab_tcmuemu::ring::Ring;
use drivelab_tcmuemu::server::{self, FaultSource};

const USAGE: &str = "usage: drivelab-tcmuemu --backing FILE [--size-mib N] [--name NAME] [--hba H] [--serial S] [--vendor V] [--product P] [--revision R] [--max-transfer-kib K] [--state FILE] [--sanitize-seconds S] [--self-test-seconds S] [--fault LINE]... [--control FILE] [--command-timeout S] [--block-size N] [--media memory|ftl] [--sata [--frozen] [--locked-password PW] [--hpa-mib N] [--dco-mib N]] [--bad-lba LBA]";

const BLOCK: u32 = 512;

struct Args {
    backing: PathBuf,
    bytes: u64,
    name: String,
    hba: u32,
    identity: Identity,
    max_transfer_blocks: u32,
    state: Option<PathBuf>,
    sata: Option<Sata>,
    bad_lba: Option<u64>,
    sanitize_seconds: f64,
    self_test_seconds: f64,
    faults: FaultSource,
    command_timeout: Option<u32>,
    block_size: u32,
    media: MediaKind,
}

/// The SATA personality's power-on state.
#[derive(Default)]
struct Sata {
    frozen: bool,
    locked_password: Option<String>,
    hpa_bytes: Option<u64>,
    dco_bytes: Option<u64>,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut backing = None;
    let mut a = Args {
        backing: PathBuf::new(),
        bytes: 16 << 20,
        name: "emu0".into(),
        hba: 1,
        identity: Identity {
            vendor: "DRIVELAB".into(),
            product: "TCMU EMULATOR".into(),
            revision: "1.0".into(),
            serial: "DLTCMU0001".into(),
        },
        max_transfer_blocks: 2048,
        state: None,
        sata: None,
        bad_lba: None,
        sanitize_seconds: 4.0,
        self_test_seconds: 5.0,
        faults: FaultSource::default(),
        command_timeout: None,
        block_size: BLOCK,
        media: MediaKind::Memory,
    };
    let mut sata = Sata::default();
    let mut is_sata = false;
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value; {USAGE}"));
        let num = |v: String| {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(format!("{flag} {v:?}: give a positive whole number"))
        };
        match flag.as_str() {
            "--backing" => backing = Some(PathBuf::from(value()?)),
            "--media" => a.media = value()?.parse().map_err(|e| format!("{e}; {USAGE}"))?,
            "--size-mib" => {
                a.bytes = num(value()?)?
                    .checked_mul(1 << 20)
                    .ok_or(format!("{flag}: too large"))?
            }
            "--name" => a.name = value()?,
            "--hba" => {
                a.hba = u32::try_from(num(value()?)?).map_err(|_| format!("{flag}: too large"))?
            }
            "--serial" => a.identity.serial = value()?,
            "--vendor" => a.identity.vendor = value()?,
            "--product" => a.identity.product = value()?,
            "--revision" => a.identity.revision = value()?,
            "--max-transfer-kib" => {
                let k = num(value()?)?;
                a.max_transfer_blocks = u32::try_from(k * 1024 / u64::from(BLOCK))
                    .ok()
                    .filter(|b| *b > 0)
                    .ok_or(format!("{flag}: give 1 to 4194303"))?;
            }
            "--state" => a.state = Some(value()?.into()),
            "--sata" => is_sata = true,
            "--frozen" => sata.frozen = true,
            "--sanitize-seconds" => {
                let v = value()?;
                a.sanitize_seconds = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && (0.0..=3600.0).contains(s))
                    .ok_or(format!("--sanitize-seconds {v:?}: give 0 to 3600 seconds"))?;
            }
            "--self-test-seconds" => {
                let v = value()?;
                a.self_test_seconds = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && (0.0..=3600.0).contains(s))
                    .ok_or(format!("--self-test-seconds {v:?}: give 0 to 3600 seconds"))?;
            }
            "--fault" => a.faults.fixed.add(&value()?)?,
            "--control" => a.faults.control = Some(value()?.into()),
            "--block-size" => {
                let v = num(value()?)?;
                a.block_size = u32::try_from(v)
                    .ok()
                    .filter(|b| drivelab_tcmuemu::format::LENGTHS.contains(b))
                    .ok_or(format!("{flag} {v}: give 512, 520, 528 or 4096"))?;
            }
            "--command-timeout" => {
                a.command_timeout =
                    Some(u32::try_from(num(value()?)?).map_err(|_| format!("{flag}: too large"))?)
            }
            "--locked-password" => sata.locked_password = Some(value()?),
            "--bad-lba" => a.bad_lba = Some(num(value()?)?),
            "--dco-mib" => {
                sata.dco_bytes = Some(
                    num(value()?)?
                        .checked_mul(1 << 20)
                        .ok_or(format!("{flag}: too large"))?,
                )
            }
            "--hpa-mib" => {
                sata.hpa_bytes = Some(
                    num(value()?)?
                        .checked_mul(1 << 20)
                        .ok_or(format!("{flag}: too large"))?,
                )
            }
            other => return Err(format!("unknown option {other}; {USAGE}")),
        }
    }
    a.backing = backing.ok_or(format!("--backing FILE is required; {USAGE}"))?;
    if is_sata && a.block_size != BLOCK {
        return Err(
            "--block-size is for the SAS personality (an ATA drive here has 512-byte sectors)"
                .into(),
        );
    }
    let sata_only = sata.frozen
        || sata.locked_password.is_some()
        || sata.hpa_bytes.is_some()
        || sata.dco_bytes.is_some();
    if sata_only && !is_sata {
        return Err("--frozen, --locked-password, --hpa-mib and --dco-mib need --sata".into());
    }
    if a.bad_lba
        .is_some_and(|l| l >= a.bytes / u64::from(a.block_size))
    {
        return Err("--bad-lba must be an LBA of the drive (below --size-mib's blocks)".into());
    }
    let native = sata.dco_bytes.unwrap_or(a.bytes);
    if native > a.bytes || sata.hpa_bytes.is_some_and(|h| h >= native) {
        return Err(
            "--hpa-mib must be less than --dco-mib, and that no more than --size-mib".into(),
        );
    }
    if sata.locked_password.as_ref().is_some_and(|p| p.len() > 32) {
        return Err("--locked-password: at most 32 bytes".into());
    }
    a.sata = is_sata.then_some(sata);
    if !a
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        || a.name.is_empty()
    {
        return Err(format!("--name {:?}: letters, digits and _ only", a.name));
    }
    Ok(a)
}

fn run(a: Args) -> Result<(), String> {
    let media = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&a.backing)
        .map_err(|e| format!("{}: {e}", a.backing.display()))?;
    media
        .set_len(a.bytes)
        .map_err(|e| format!("{}: {e}", a.backing.display()))?;
    let geometry = Geometry {
        blocks: a.bytes / u64::from(a.block_size),
        block_size: a.block_size,
        max_transfer_blocks: a.max_transfer_blocks,
    };
    let disk = Disk::new(media, a.identity.clone(), geometry)
        .with_media(a.media)
        .map_err(|e| format!("--media {}: {e}", a.media.name()))?;
    let mut disk = match &a.sata {
        Some(s) => disk.with_ata(ata_device(&a, s)),
        None => disk,
    };
    disk.scsi_sanitize.duration = std::time::Duration::from_secs_f64(a.sanitize_seconds);
    // The SAS personality's self-tests: the same times as the SATA one's.
    let short = std::time::Duration::from_secs_f64(a.self_test_seconds);
    disk.scsi_selftest.short = short;
    disk.scsi_selftest.extended = short * 4;
    disk.scsi_selftest.bad_lba = a.bad_lba.filter(|_| a.sata.is_none());
    configfs::ensure_configfs().map_err(|e| e.to_string())?;
    let names = Names::new(a.hba, &a.name);
    let uio = configfs::create_backstore(&names, a.bytes, BLOCK, a.max_transfer_blocks)
        .map_err(|e| e.to_string())?;
    if let Some(t) = a.command_timeout {
        configfs::set_command_timeout(&names, t).map_err(|e| e.to_string())?;
    }
    let map = UioMap::open(uio).map_err(|e| e.to_string())?;
    let ring = Ring::new(map).map_err(|e| e.to_string())?;
    let state = a.state.clone();
    let faults = a.faults.clone();
    let server = std::thread::spawn(move || server::serve(ring, disk, state, faults));
    configfs::create_loopback_lun(&names).map_err(|e| e.to_string())?;
    println!("ready {} uio{uio} {}", names.name, names.wwn);
    match server.join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the serving thread panicked".into()),
    }
}

/// The ATA device of `--sata`, in its power-on state.
fn ata_device(a: &Args, s: &Sata) -> Ata {
    let blocks = a.bytes / u64::from(BLOCK);
    let mut ata = Ata::new(
        &a.identity.product,
        &a.identity.serial,
        &a.identity.revision,
        blocks,
    );
    ata.security.frozen = s.frozen;
    if let Some(p) = &s.locked_password {
        let mut pw = [0u8; 32];
        pw[..p.len()].copy_from_slice(p.as_bytes());
        ata.security.user = Some(pw);
        ata.security.locked = true;
    }
    if let Some(d) = s.dco_bytes {
        ata.native_blocks = d / u64::from(BLOCK);
        ata.max_blocks = ata.native_blocks;
    }
    if let Some(h) = s.hpa_bytes {
        ata.max_blocks = h / u64::from(BLOCK);
    }
    ata.sanitize.duration = std::time::Duration::from_secs_f64(a.sanitize_seconds);
    // The short self-test runs the given time, the extended one four times it.
    ata.selftest.short = std::time::Duration::from_secs_f64(a.self_test_seconds);
    ata.selftest.bad_lba = a.bad_lba;
    ata.selftest.extended = ata.selftest.short * 4;
    ata
}

fn main() -> ExitCode {
    let a = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("drivelab-tcmuemu: {e}");
            return ExitCode::from(2);
        }
    };
    match run(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("drivelab-tcmuemu: {e}");
            ExitCode::FAILURE
        }
    }
}
