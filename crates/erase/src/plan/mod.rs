//! The plan stage: what is asked for ([`Request`]), which drives may be
//! erased, and how each one will be.
//!
//! [`prepare`] checks the options, describes every named device, refuses
//! the ones that must not be written (not a whole drive, named twice, empty,
//! mounted, partitioned, holding a signature, in use or held by another
//! process), probes it and settles its method ([`method`]). [`confirm`]
//! checks the user's consent: `--yes` plus each drive's serial (its path
//! when it has none), given or typed. [`Plan::claim_all`] then takes each
//! drive's device [`Claim`] — the assessment again, the confirmed serial,
//! and an exclusive hold kept until every drive is certified — before any
//! journal or certificate file exists; a drive someone else took in the
//! meantime is refused there. The
//! strategy and the stream's starting transfer length and queue depth
//! ([`tune`]) are part of the plan too; [`estimate`] turns it into a dry run.
//! Everything that fails here is a refusal: nothing has been written.

pub mod estimate;
pub mod method;
pub mod parties;
pub mod tune;

use std::path::{Path, PathBuf};

use drivelab_device::ata;
use drivelab_device::blockdev::BlockDevice;
use drivelab_device::caps::{self, Capabilities};
use drivelab_device::claim::{Claim, ClaimError, ClaimOptions, Consent as ClaimConsent};
use drivelab_device::health::around::{self, HiddenArea, Remedy};
use drivelab_device::safety;
use drivelab_device::sg::SgDevice;
use drivelab_patterns::Pattern;
use serde::Serialize;

use crate::journal::DriveIdentity;
use crate::EraseError;
pub use method::{Choice, Method, Offers};
pub use parties::Parties;

/// How many drives run at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// All drives at once, one thread each (default).
    #[default]
    Parallel,
    /// One drive after another.
    Sequential,
    /// One command per drive in turn, one command in flight in all.
    RoundRobin,
}

impl Strategy {
    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Parallel => "parallel",
            Strategy::Sequential => "sequential",
            Strategy::RoundRobin => "round-robin",
        }
    }
}

/// How much is read back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyMode {
    /// Nothing.
    None,
    /// NIST SP 800-88 sample (default).
    #[default]
    Sample,
    /// Every block.
    Full,
}

impl VerifyMode {
    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            VerifyMode::None => "none",
            VerifyMode::Sample => "sample",
            VerifyMode::Full => "full",
        }
    }
}

/// What the user asked for, for every drive.
#[derive(Debug, Clone)]
pub struct Options {
    /// Method (`Auto` = choose per drive).
    pub method: Method,
    /// Pattern written (default allzeros).
    pub pattern: Pattern,
    /// Passes over the drive (default 1, at least 1).
    pub passes: u32,
    /// Verification.
    pub verify: VerifyMode,
    /// retry-skip (true) or abort (false).
    pub skip_errors: bool,
    /// Retries per failing command (default 3).
    pub retries: u32,
    /// Continue from the journal.
    pub resume: bool,
    /// Crypto erase for nvme-format / nvme-sanitize / ata-sanitize.
    pub crypto: bool,
    /// Discard the whole drive before overwriting it.
    pub discard_first: bool,
    /// Where certificates and journals go.
    pub certificate_dir: PathBuf,
    /// Where the signing key lives.
    pub key_dir: PathBuf,
    /// Fixed stream transfer length, bytes, 512 to 64 MiB (None = tuned).
    pub transfer: Option<u32>,
    /// Fixed stream queue depth, 1 to 64 (None = tuned).
    pub queue_depth: Option<u32>,
    /// Aggregate bytes per second over all drives (None = unlimited).
    pub bus_limit: Option<u64>,
    /// Strategy.
    pub strategy: Strategy,
    /// The command line, for the certificate.
    pub command_line: String,
    /// Tool version, for the certificate.
    pub version: String,
    /// Who the erase is done by and for, and the drives' asset tags (the
    /// certificate's, signed).
    pub parties: Parties,
    /// How long a polled sanitize's progress may stand still before the
    /// erase gives up on it.
    pub stall: StallLimit,
}

/// How long a polled sanitize's progress may stand still
/// (`--stall-timeout`; [`crate::issue::stall`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StallLimit {
    /// Derived from the drive's own estimate of the operation.
    #[default]
    Derived,
    /// This many seconds.
    Seconds(u64),
    /// Never give up.
    Never,
}

/// The most passes over a drive: Gutmann's method, the longest erase in
/// use, has 35; burn-in loops of a refurbisher run to thousands. A pass
/// costs time, not memory, so the bound only stops a typo.
pub const MAX_PASSES: u32 = 10_000;
/// The most retries of one failed command.
pub const MAX_RETRIES: u32 = 100;

impl Options {
    /// Check the numeric options against their bounds.
    pub fn check(&self) -> Result<(), EraseError> {
        let bad = |s: &str| Err(EraseError::BadOption(s.to_string()));
        if !(1..=MAX_PASSES).contains(&self.passes) {
            return Err(EraseError::BadOption(format!(
                "--passes must be 1 to {MAX_PASSES}, not {}",
                self.passes
            )));
        }
        if self.retries > MAX_RETRIES {
            return Err(EraseError::BadOption(format!(
                "--retries must be 0 to {MAX_RETRIES}, not {}",
                self.retries
            )));
        }
        if self.bus_limit == Some(0) {
            return bad("--bus-limit must be more than 0 bytes/s");
        }
        if self
            .transfer
            .is_some_and(|t| !(512..=64 << 20).contains(&t))
        {
            return bad("--transfer-length must be 512 bytes to 64m");
        }
        if self.queue_depth.is_some_and(|q| !(1..=64).contains(&q)) {
            return bad("--queue-depth must be 1 to 64");
        }
        if self.stall == StallLimit::Seconds(0) {
            return bad("--stall-timeout must be more than 0 seconds (or never)");
        }
        self.parties.check()
    }
}

/// The user's consent to destroy the drives' data.
#[derive(Debug, Clone, Default)]
pub struct Consent {
    /// `--force`: write even to a drive that is mounted, partitioned, holds
    /// a signature or is in use (never to the running system's).
    pub force: bool,
    /// `--yes`.
    pub yes: bool,
    /// `--confirm-serial`: each drive's serial, or its path when it has none.
    pub confirm: Vec<String>,
    /// `--restore-native-max`: restore an ATA drive's full capacity (SET
    /// MAX ADDRESS, volatile) before erasing it, instead of refusing a
    /// drive with a Host Protected Area / accessible max address limit.
    pub restore_native_max: bool,
}

/// One `drivelab erase`: the drives, the options and the consent.
#[derive(Debug, Clone)]
pub struct Request {
    /// The whole drives, as named.
    pub devices: Vec<PathBuf>,
    /// What to do to each.
    pub options: Options,
    /// Consent.
    pub consent: Consent,
    /// Plan and estimate only; write nothing.
    pub dry_run: bool,
}

/// One drive, planned.
#[derive(Debug, Clone)]
pub struct Drive {
    /// The device.
    pub dev: BlockDevice,
    /// Probe result (None when probing failed; the note says why).
    pub caps: Option<Capabilities>,
    /// What it offers.
    pub offers: Offers,
    /// The method chosen and why.
    pub choice: Choice,
    /// Logical block size, bytes.
    pub lbs: u32,
    /// Size, bytes.
    pub size: u64,
    /// Probe problems.
    pub notes: Vec<String>,
    /// Hidden areas found before the erase (only ones `--restore-native-max`
    /// restores, or ones the method reaches anyway, are left here).
    pub hidden: Vec<HiddenArea>,
    /// The capacity restored before the erase, when it was.
    pub restored: Option<Restored>,
    /// The drive's asset tag (from [`Options::parties`]).
    pub asset_tag: Option<String>,
}

/// A drive's full capacity, restored before its erase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Restored {
    /// What was hidden.
    pub hidden: Vec<HiddenArea>,
    /// Bytes the host reached before.
    pub bytes_before: u64,
    /// Bytes it reaches now (the erase covers them all).
    pub bytes_after: u64,
    /// The native max LBA set with SET MAX ADDRESS.
    pub native_max_lba: u64,
    /// Whether the drive returns to its old limit at power-off (the
    /// volatile bit was set).
    pub volatile: bool,
}

impl Restored {
    /// The hidden areas in words: "KIND N LBAs (B bytes)", comma-separated.
    pub fn hidden_areas(&self) -> String {
        self.hidden
            .iter()
            .map(|a| format!("{} {} LBAs ({} bytes)", a.kind, a.lbas, a.bytes))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Drive {
    /// The serial, if the drive has a non-empty one.
    pub fn serial(&self) -> Option<&str> {
        self.dev
            .serial
            .as_deref()
            .or_else(|| {
                self.caps
                    .as_ref()
                    .and_then(|c| c.identity.serial.as_deref())
            })
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// Whether BLKZEROOUT is offloaded.
    pub fn zeroout_offloaded(&self) -> bool {
        self.offers.zeroout_offload
    }

    /// What confirms this drive: its serial, else its path.
    pub fn confirm_token(&self) -> String {
        self.serial()
            .map(String::from)
            .unwrap_or_else(|| self.dev.path.display().to_string())
    }
}

/// The settled plan: every drive with its method and, once
/// [`Plan::claim_all`] has run, its claim (held until the plan is dropped).
#[derive(Debug)]
pub struct Plan {
    /// The drives, in the order named.
    pub drives: Vec<Drive>,
    claims: Vec<Claim>,
}

impl Plan {
    /// Claim every drive for writing, each with its confirmed serial (or
    /// path): the device crate assesses it again and holds it exclusively.
    /// Any drive that cannot be claimed is a refusal naming every such
    /// drive; nothing has been written.
    pub fn claim_all(&mut self, force: bool) -> Result<(), EraseError> {
        let mut claims = Vec::with_capacity(self.drives.len());
        let mut refused = Vec::new();
        // Assessing a drive reads it: every drive is claimed at once.
        let opened = at_once(&self.drives, |d| {
            let consent = ClaimConsent {
                force,
                confirm: Some(vec![d.confirm_token()]),
            };
            let opts = ClaimOptions {
                direct: true,
                create_size: None,
            };
            Claim::open(&d.dev.path, &consent, &opts)
        });
        for c in opened {
            match c {
                Ok(c) => claims.push(c),
                Err(ClaimError::Io {
                    path,
                    action,
                    source,
                }) => {
                    return Err(EraseError::Io {
                        device: path.display().to_string(),
                        what: action.to_string(),
                        source,
                    })
                }
                Err(e) => refused.push(e.to_string()),
            }
        }
        if !refused.is_empty() {
            return Err(EraseError::Refused(refused.join("; ")));
        }
        self.claims = claims;
        Ok(())
    }

    /// Restore the full capacity of every drive with a hidden area left
    /// by [`check_hidden`] (`--restore-native-max`), through its claim:
    /// SET MAX ADDRESS (EXT), volatile, to the native max; then the kernel
    /// re-reads the capacity and the drive's size is the new one.
    pub fn restore_hidden(&mut self) -> Result<(), EraseError> {
        for (d, c) in self.drives.iter_mut().zip(&self.claims) {
            if d.hidden.is_empty() {
                continue;
            }
            let path = d.dev.path.display().to_string();
            let fail = |what: &str, why: String| EraseError::Command {
                device: path.clone(),
                what: what.into(),
                why,
            };
            let sg = SgDevice::claimed(c)
                .map_err(|e| fail("open for SET MAX ADDRESS", e.to_string()))?;
            let id =
                ata::identify_device(&sg).map_err(|e| fail("IDENTIFY DEVICE", e.to_string()))?;
            let native = around::restore_native_max(&sg, id.lba48)
                .map_err(|e| fail("SET MAX ADDRESS (--restore-native-max)", e.to_string()))?;
            let before = d.size;
            d.size = reread_size(&d.dev)
                .map_err(|e| fail("re-reading the capacity after SET MAX ADDRESS", e))?;
            let want = (native + 1) * u64::from(d.lbs);
            if d.size != want {
                return Err(fail(
                    "re-reading the capacity after SET MAX ADDRESS",
                    format!("the kernel sees {} bytes, the native max is {want} bytes; nothing was written", d.size),
                ));
            }
            d.restored = Some(Restored {
                hidden: std::mem::take(&mut d.hidden),
                bytes_before: before,
                bytes_after: d.size,
                native_max_lba: native,
                volatile: true,
            });
        }
        Ok(())
    }

    /// Each drive with its claim (empty before [`Plan::claim_all`]).
    pub fn drives_claimed(&self) -> impl Iterator<Item = (&Drive, &Claim)> {
        self.drives.iter().zip(&self.claims)
    }
}

/// `f` of each item, every item on a thread of its own (each is commands
/// to its own drive, which wait on that drive), in the items' order; a
/// panic in one is raised again here.
fn at_once<T: Send, R: Send>(
    items: impl IntoIterator<Item = T>,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let f = &f;
    std::thread::scope(|s| {
        let hs: Vec<_> = items.into_iter().map(|t| s.spawn(move || f(t))).collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// Check the request, refuse what must not be written and settle every
/// drive's method. Every error is a refusal; nothing is written.
pub fn prepare(req: &Request) -> Result<Plan, EraseError> {
    req.options.check()?;
    let devs = describe(&req.devices, req.consent.force)?;
    // Each probe is a dozen commands to its own drive: every drive is asked
    // at once, so a hundred drives plan in about the time of one.
    let mut drives = at_once(devs, |d| plan_drive(d, &req.options))
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let named: Vec<(&Path, Option<&str>)> = drives
        .iter()
        .map(|d| (d.dev.path.as_path(), d.serial()))
        .collect();
    let tags = req.options.parties.tags_for(&named)?;
    for (d, tag) in drives.iter_mut().zip(tags) {
        d.asset_tag = tag;
    }
    if req.options.resume {
        for d in &drives {
            resumable(d, &req.options.certificate_dir)?;
        }
    }
    Ok(Plan {
        drives,
        claims: Vec::new(),
    })
}

/// `--resume` continues a journal: without one for `d` in `dir` there is
/// nothing to continue, and starting a new erase instead would not be what
/// was asked. The journal must be of this very drive: a journal is found
/// by serial, else by device node, and another drive may have taken the
/// node since (another disk in the slot, another image on the loop
/// device); continuing its journal would skip what that drive never had
/// written. A drive that differs from the journal's, or one without a
/// serial, WWN or backing file (nothing tells it from another), is refused.
fn resumable(d: &Drive, dir: &Path) -> Result<(), EraseError> {
    let path = crate::journal::path_for(dir, d.serial(), &d.dev.path, d.size);
    let node = d.dev.path.display();
    let Some(st) = crate::journal::load(&path)? else {
        return Err(EraseError::BadOption(format!(
            "--resume: no journal of an erase of {node} in {} (looked for {}); run without --resume to start a new erase, or give the --certificate-dir the journal is in",
            dir.display(),
            path.display()
        )));
    };
    let now = DriveIdentity::of(&d.dev, d.serial(), d.size);
    let start_over = format!(
        "run without --resume to erase {node} from the start (the journal {} is then replaced)",
        path.display()
    );
    match &st.header.identity {
        Some(was) => match was.differs(&now) {
            Some(diff) => Err(EraseError::Refused(format!(
                "--resume: {node} is not the drive the journal {} was written for: {diff}; put that drive back to resume its erase, or {start_over}",
                path.display()
            ))),
            None if !was.established() => Err(EraseError::Refused(format!(
                "--resume: {node} has no serial, WWN or backing file, so nothing shows it is the drive the journal was written for; {start_over}"
            ))),
            None => Ok(()),
        },
        // A journal from before identities were recorded: its file name
        // holds the serial, which is the identity; without one, none.
        None if d.serial().is_some() => Ok(()),
        None => Err(EraseError::Refused(format!(
            "--resume: the journal {} records no drive identity and {node} has no serial, so nothing shows it is the same drive; {start_over}",
            path.display()
        ))),
    }
}

/// Describe every named device and refuse unsafe ones (every reason of
/// every drive in one line).
fn describe(paths: &[PathBuf], force: bool) -> Result<Vec<BlockDevice>, EraseError> {
    if paths.is_empty() {
        return Err(EraseError::NoDrives);
    }
    let mut devs: Vec<BlockDevice> = Vec::new();
    // Per drive, in the order given: its refusals.
    let mut refusals: Vec<Vec<String>> = Vec::new();
    for p in paths {
        let d = BlockDevice::from_path(p)
            .map_err(|e| EraseError::Refused(format!("{}: {e}", p.display())))?;
        if let Some(j) = devs
            .iter()
            .position(|o| o.major == d.major && o.minor == d.minor)
        {
            return Err(EraseError::Refused(format!(
                "{} is the same device as {}, given twice; give each drive once (nothing was written)",
                p.display(),
                paths[j].display()
            )));
        }
        if d.size.0 == 0 {
            return Err(EraseError::Refused(format!(
                "{}: size 0 (an unattached loop device or empty slot?)",
                p.display()
            )));
        }
        let mut why = Vec::new();
        if d.partition && !force {
            why.push(format!(
                "refusing to erase {}: it is a partition, not a whole drive; name the whole drive, or pass --force",
                p.display()
            ));
        }
        refusals.push(why);
        devs.push(d);
    }
    // Assessing a drive reads it (its partition table, signatures): every
    // drive is read at once.
    let assessed = at_once(&devs, |d| {
        safety::assess(d).refusal(force).map(|r| r.to_string())
    });
    for (why, a) in refusals.iter_mut().zip(assessed) {
        why.extend(a);
    }
    let refusals: Vec<String> = refusals.into_iter().flatten().collect();
    if !refusals.is_empty() {
        return Err(EraseError::Refused(refusals.join("; ")));
    }
    Ok(devs)
}

/// Probe a drive and settle its method.
pub fn plan_drive(dev: BlockDevice, opts: &Options) -> Result<Drive, EraseError> {
    let mut notes = Vec::new();
    let caps = match caps::probe(&dev.path) {
        Ok(c) => Some(c),
        Err(e) => {
            notes.push(format!("probe failed: {e}"));
            None
        }
    };
    let offers = match &caps {
        Some(c) => Offers::from_caps(c),
        None => Offers {
            transport: "unknown".into(),
            zeroout_offload: dev.write_zeroes_max_bytes.0 > 0,
            write_zeroes_max_bytes: dev.write_zeroes_max_bytes.0,
            discard: dev.discard_max_bytes.0 > 0,
            ..Offers::default()
        },
    };
    let lbs = dev.logical_sector.0.max(512);
    let choice = method::check_available(
        opts.method,
        &offers,
        &opts.pattern,
        lbs as usize,
        opts.crypto,
        &dev.path.display().to_string(),
    )?;
    if opts.discard_first && !offers.discard {
        return Err(EraseError::MethodUnavailable {
            device: dev.path.display().to_string(),
            method: "discard (--discard-first)".into(),
            why: "the drive does not support discard; drop --discard-first".into(),
        });
    }
    let size = dev.size.0;
    Ok(Drive {
        dev,
        caps,
        offers,
        choice,
        lbs,
        size,
        notes,
        hidden: Vec::new(),
        restored: None,
        asset_tag: None,
    })
}

/// Look for capacity the host cannot reach on every drive (reads only):
/// a drive with one is refused, every reason in one line, unless
/// `--restore-native-max` can restore it (ATA HPA / AMA) or the method
/// reaches it anyway (NVMe sanitize and unallocated capacity). A drive
/// that cannot be asked gets a note and is not refused.
pub fn check_hidden(drives: &mut [Drive], consent: &Consent) -> Result<(), EraseError> {
    let mut refusals = Vec::new();
    for d in drives.iter_mut() {
        let areas = match around::hidden_areas(&d.dev.path, d.dev.kind) {
            Ok(a) => a,
            Err(e) => {
                d.notes.push(e);
                continue;
            }
        };
        match hidden_decision(
            &d.dev.path,
            areas,
            d.choice.method,
            consent.restore_native_max,
        ) {
            Ok(keep) => d.hidden = keep,
            Err(why) => refusals.push(why),
        }
    }
    if !refusals.is_empty() {
        return Err(EraseError::Refused(refusals.join("; ")));
    }
    Ok(())
}

/// What an erase by `method` does about `areas`: the ones to restore
/// first (`--restore-native-max` and all restorable), or the refusal.
/// Unallocated NVMe capacity is no obstacle to a sanitize, which acts on
/// the whole NVM subsystem.
fn hidden_decision(
    dev: &Path,
    areas: Vec<HiddenArea>,
    method: Method,
    restore: bool,
) -> Result<Vec<HiddenArea>, String> {
    let left: Vec<HiddenArea> = areas
        .into_iter()
        .filter(|a| !(method == Method::NvmeSanitize && a.kind == "unallocated NVM capacity"))
        .collect();
    let restorable = left.iter().all(|a| a.remedy == Remedy::SetMaxAddress);
    if left.is_empty() || (restorable && restore) {
        Ok(left)
    } else {
        Err(around::refusal(dev, &left))
    }
}

/// Have the kernel re-read `dev`'s capacity (SCSI rescan) and return it.
fn reread_size(dev: &BlockDevice) -> Result<u64, String> {
    let name = dev
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rescan = PathBuf::from(format!("/sys/block/{name}/device/rescan"));
    std::fs::write(&rescan, "1").map_err(|e| format!("{}: {e}", rescan.display()))?;
    let now = BlockDevice::from_path(&dev.path).map_err(|e| e.to_string())?;
    Ok(now.size.0)
}

/// Check the consent for every drive: `--yes`, then each drive's serial
/// (or path) among `--confirm-serial`, else typed in answer to `ask`
/// (`ask` returns None when nobody can be asked). Every `--confirm-serial`
/// must match a drive.
pub fn confirm(
    drives: &[Drive],
    consent: &Consent,
    mut ask: impl FnMut(&Drive, &str) -> Option<std::io::Result<String>>,
) -> Result<(), EraseError> {
    if !consent.yes {
        let names: Vec<String> = drives
            .iter()
            .map(|d| d.dev.path.display().to_string())
            .collect();
        return Err(EraseError::NotConfirmed(format!(
            "erasing destroys all data on {}: add --yes and confirm each drive with --confirm-serial SERIAL (its path when it has no serial)",
            names.join(", ")
        )));
    }
    let mut used = vec![false; consent.confirm.len()];
    for d in drives {
        let path = d.dev.path.display().to_string();
        let token = d.confirm_token();
        let hit = consent
            .confirm
            .iter()
            .position(|s| drivelab_device::claim::confirms(s, &d.dev.path, d.serial()));
        if let Some(i) = hit {
            used[i] = true;
            continue;
        }
        match ask(d, &token) {
            Some(answer) => {
                let line = answer.map_err(|e| EraseError::Io {
                    device: path.clone(),
                    what: "read the confirmation".into(),
                    source: e,
                })?;
                if line.trim() != token {
                    return Err(EraseError::NotConfirmed(format!(
                        "{path}: confirmation did not match ({:?}); nothing was written",
                        line.trim()
                    )));
                }
            }
            None => {
                return Err(EraseError::NotConfirmed(format!(
                    "{path} is not confirmed: pass --confirm-serial {token} (the drive's {}); nothing was written",
                    if d.serial().is_some() { "serial" } else { "path, as it has no serial" }
                )))
            }
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(EraseError::NotConfirmed(format!(
            "--confirm-serial {} matches none of the drives given; check for a typo; nothing was written",
            consent.confirm[i]
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options {
        Options {
            method: Method::Auto,
            pattern: Pattern::AllZeros,
            passes: 1,
            verify: VerifyMode::Sample,
            skip_errors: true,
            retries: 3,
            resume: false,
            crypto: false,
            discard_first: false,
            certificate_dir: PathBuf::from("."),
            key_dir: PathBuf::from("."),
            transfer: None,
            queue_depth: None,
            bus_limit: None,
            strategy: Strategy::Parallel,
            command_line: String::new(),
            version: String::new(),
            parties: Parties::default(),
            stall: StallLimit::Derived,
        }
    }

    fn area(kind: &str, remedy: Remedy) -> HiddenArea {
        HiddenArea {
            kind: kind.into(),
            lbas: 2048,
            bytes: 2048 * 512,
            accessible_sectors: Some(1_000_000),
            native_max_lba: Some(1_002_047),
            remedy,
        }
    }

    #[test]
    fn hidden_areas_refuse_unless_restorable_and_asked() {
        let dev = Path::new("/dev/sdb");
        let hpa = || area("HPA/AMA", Remedy::SetMaxAddress);
        let dco = || area("DCO", Remedy::Manual("use hdparm --dco-restore".into()));
        // An HPA without the flag: refused, the flag named.
        let e = hidden_decision(dev, vec![hpa()], Method::Stream, false).unwrap_err();
        assert!(e.contains("HPA/AMA hides 2048 LBAs (1048576 bytes)"), "{e}");
        assert!(e.contains("--restore-native-max") && e.ends_with("nothing was written"));
        // With it: kept for the restore.
        assert_eq!(
            hidden_decision(dev, vec![hpa()], Method::Stream, true).unwrap(),
            vec![hpa()]
        );
        // A DCO cannot be restored by the flag: refused either way.
        for flag in [false, true] {
            let e = hidden_decision(dev, vec![hpa(), dco()], Method::Auto, flag).unwrap_err();
            assert!(
                e.contains("DCO hides") && e.contains("hdparm --dco-restore"),
                "{e}"
            );
        }
        // Unallocated NVMe capacity: refused for an overwrite, reached by
        // a sanitize.
        let un = || {
            area(
                "unallocated NVM capacity",
                Remedy::Manual("nvme create-ns".into()),
            )
        };
        let nv = Path::new("/dev/nvme0n1");
        assert!(hidden_decision(nv, vec![un()], Method::Stream, true).is_err());
        assert!(hidden_decision(nv, vec![un()], Method::NvmeSanitize, false)
            .unwrap()
            .is_empty());
        assert!(hidden_decision(dev, vec![], Method::Stream, false)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn options_out_of_bounds_are_refused() {
        assert!(options().check().is_ok());
        type Set = fn(&mut Options);
        let cases: [(Set, &str); 5] = [
            (|o| o.passes = 0, "--passes"),
            (|o| o.bus_limit = Some(0), "--bus-limit"),
            (|o| o.transfer = Some(511), "--transfer-length"),
            (|o| o.queue_depth = Some(0), "--queue-depth"),
            (|o| o.queue_depth = Some(65), "--queue-depth"),
        ];
        for (set, flag) in cases {
            let mut o = options();
            set(&mut o);
            let e = o.check().unwrap_err();
            assert!(e.is_refusal() && e.to_string().contains(flag), "{e}");
        }
    }

    #[test]
    fn no_drives_is_a_refusal() {
        let req = Request {
            devices: vec![],
            options: options(),
            consent: Consent::default(),
            dry_run: true,
        };
        let e = prepare(&req).unwrap_err();
        assert!(e.is_refusal());
        assert!(e.to_string().starts_with("no drives given"), "{e}");
    }

    #[test]
    fn strategy_and_verify_serialise_by_their_names() {
        for s in [
            Strategy::Parallel,
            Strategy::Sequential,
            Strategy::RoundRobin,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
        for v in [VerifyMode::None, VerifyMode::Sample, VerifyMode::Full] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.name());
        }
    }
}
