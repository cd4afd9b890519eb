//! The emulated drive: a backing file as its medium, with the medium model
//! beside it ([`crate::media`]: the map of unmapped blocks, and the FTL
//! when chosen), its identity, and the SCSI command set of a plain disk
//! (the table in docs/emulators.md).
//! [`Disk::execute`] takes a CDB and the data-out buffer and returns what
//! goes back to the initiator; it never sees the ring.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::ata::sanitize::Sanitize;
use drivelab_ftlsim::media::{BlockMedia, MediaKind, Origin};
use drivelab_ftlsim::ConfigError;

use crate::ata::{Ata, MediumAction};
use crate::cdb::Cdb;
use crate::pages::{self, Geometry, Identity};
use crate::ring::Response;
use crate::sat::{self, PassThrough};
use crate::scsi_sanitize::{self, Request};
use crate::sense::{self, Sense};

/// What the drive has done, for the state file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Commands received, by operation code (two hex digits).
    pub by_opcode: BTreeMap<String, u64>,
    /// READ commands.
    pub read_commands: u64,
    /// WRITE commands.
    pub write_commands: u64,
    /// Logical blocks read.
    pub blocks_read: u64,
    /// Logical blocks written.
    pub blocks_written: u64,
    /// Blocks the drive wrote for WRITE SAME and SCT Write Same.
    pub blocks_written_same: u64,
    /// Blocks unmapped: UNMAP, WRITE SAME with UNMAP, TRIM.
    pub blocks_unmapped: u64,
    /// Commands answered with CHECK CONDITION.
    pub check_conditions: u64,
    /// Commands taken and never answered (a fault).
    pub unanswered: u64,
}

/// The drive.
#[derive(Debug)]
pub struct Disk {
    media: File,
    /// The medium model: which blocks are mapped, and the FTL.
    pub model: BlockMedia,
    /// Who it says it is.
    pub identity: Identity,
    /// Its shape.
    pub geometry: Geometry,
    /// What it has done.
    pub counters: Counters,
    /// The SATA personality's ATA device (ATA PASS-THROUGH is answered
    /// only when there is one).
    pub ata: Option<Ata>,
    /// The temperature the SAS personality reports (LOG SENSE 0Dh, 2Fh).
    pub temperature_c: u8,
    /// The SAS personality's SANITIZE state (the SATA one's is the ATA
    /// device's).
    pub scsi_sanitize: Sanitize,
    /// Whether the running or failed SCSI sanitize had AUSE set.
    ause: bool,
    /// The block length the last MODE SELECT named, for FORMAT UNIT.
    pending_block_size: Option<u32>,
    /// A format started with IMMED: when, and how long the drive stays NOT
    /// READY, FORMAT IN PROGRESS ([`crate::format::IMMED_FORMAT`]).
    formatting: Option<std::time::Instant>,
    /// FORMAT UNITs carried out: (block length before, after).
    pub formats: Vec<(u32, u32)>,
    /// The SAS personality's self-tests (SEND DIAGNOSTIC; the SATA one's
    /// are the ATA device's).
    pub scsi_selftest: crate::ata::selftest::SelfTest,
    /// When the drive powered on: the origin of its power-on hours.
    powered_on: std::time::Instant,
}

fn good(data_in: Vec<u8>) -> Response {
    Response {
        status: sense::GOOD,
        sense: Vec::new(),
        data_in,
    }
}

fn check(s: Sense) -> Response {
    Response {
        status: sense::CHECK_CONDITION,
        sense: s.fixed().to_vec(),
        data_in: Vec::new(),
    }
}

impl Disk {
    /// A drive over `media`, which must hold `geometry.blocks` blocks, on
    /// plain memory: the blocks of `media` that hold data are mapped.
    pub fn new(media: File, identity: Identity, geometry: Geometry) -> Disk {
        let blocks = media.metadata().map_or(geometry.blocks, |m| {
            m.len() / u64::from(geometry.block_size.max(1))
        });
        let mut model = BlockMedia::memory(blocks, u64::from(geometry.block_size));
        crate::media::scan(&media, &mut model, u64::from(geometry.block_size));
        Disk {
            media,
            model,
            identity,
            geometry,
            counters: Counters::default(),
            ata: None,
            temperature_c: 35,
            scsi_sanitize: Sanitize {
                duration: std::time::Duration::from_secs(4),
                ..Sanitize::default()
            },
            ause: false,
            pending_block_size: None,
            formatting: None,
            formats: Vec::new(),
            scsi_selftest: crate::ata::selftest::SelfTest {
                short: std::time::Duration::from_secs(5),
                extended: std::time::Duration::from_secs(20),
                blocks: geometry.blocks,
                ..Default::default()
            },
            powered_on: std::time::Instant::now(),
        }
    }

    /// The medium `kind` (`--media`): the FTL model refuses a drive too
    /// small for its erase blocks. The blocks the backing file holds data
    /// in are mapped, without counting as writes.
    pub fn with_media(mut self, kind: MediaKind) -> Result<Disk, ConfigError> {
        let bs = u64::from(self.geometry.block_size);
        let mut model = BlockMedia::new(kind, self.model.blocks(), bs)?;
        crate::media::scan(&self.media, &mut model, bs);
        self.model = model;
        self.sync_smart();
        Ok(self)
    }

    /// Copies the medium's NAND counts into the SATA personality's SMART
    /// attributes 247 and 248 (on the FTL medium only).
    fn sync_smart(&mut self) {
        let ftl = self.model.ftl().is_some();
        let s = self.model.stats();
        if let Some(a) = &mut self.ata {
            a.smart.nand = ftl.then_some(crate::ata::smart::Nand {
                host_pages: s.host_pages + s.drive_pages,
                background_pages: s.gc_copies,
            });
        }
    }

    /// The SATA personality: an ATA device behind a SATL. INQUIRY says
    /// vendor "ATA" with the model and firmware (as libata's SATL does),
    /// and the addressable blocks follow the ATA max address.
    pub fn with_ata(mut self, ata: Ata) -> Disk {
        self.identity.vendor = "ATA".into();
        self.identity.product = ata.model.clone();
        let fw = ata.firmware.clone();
        self.identity.revision = fw
            .chars()
            .rev()
            .take(4)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        self.geometry.blocks = ata.max_blocks;
        self.ata = Some(ata);
        self.sync_smart();
        self
    }

    /// Answer one command: `cdb` its bytes, `data_out` what the initiator
    /// sent (empty for a command without data-out).
    pub fn execute(&mut self, cdb: &[u8], data_out: &[u8]) -> Response {
        if let Some(&op) = cdb.first() {
            *self
                .counters
                .by_opcode
                .entry(format!("{op:02x}"))
                .or_default() += 1;
        }
        if let Some(r) = self.advance_sanitize() {
            return r;
        }
        if self
            .formatting
            .is_some_and(|t| t.elapsed() >= crate::format::IMMED_FORMAT)
        {
            self.formatting = None;
        }
        let rsp = match Cdb::parse(cdb) {
            Ok(c) => self.dispatch(c, cdb, data_out),
            Err(s) => check(s),
        };
        if rsp.status != sense::GOOD {
            self.counters.check_conditions += 1;
        }
        self.sync_smart();
        rsp
    }

    fn dispatch(&mut self, c: Cdb, cdb: &[u8], data_out: &[u8]) -> Response {
        let g = self.geometry;
        match c {
            Cdb::TestUnitReady | Cdb::SynchronizeCache => {
                self.busy_refusal().unwrap_or_else(|| good(Vec::new()))
            }
            Cdb::Sanitize => self.scsi_sanitize(cdb, data_out),
            Cdb::ModeSelect { ten } => {
                match crate::format::mode_select_block_length(ten, data_out) {
                    Ok(l) => {
                        if l.is_some() {
                            self.pending_block_size = l;
                        }
                        good(Vec::new())
                    }
                    Err(s) => check(s),
                }
            }
            Cdb::FormatUnit => self.format_unit(cdb, data_out),
            Cdb::RequestSense { alloc, desc } => {
                // While a sanitize or a format runs: its progress (SBC-4
                // 4.11.3, 5.3).
                if self.sanitize().running.is_some() {
                    self.sanitize_mut().status_polls_running += 1;
                }
                if let Some(r) = self.busy_refusal() {
                    return good(pages::cut(r.sense, alloc));
                }
                if desc {
                    // Descriptor format, NO SENSE: 8 bytes of header.
                    good(pages::cut(vec![0x72, 0, 0, 0, 0, 0, 0, 0], alloc))
                } else {
                    good(pages::cut(Sense::NONE.fixed().to_vec(), alloc))
                }
            }
            Cdb::Inquiry { evpd, page, alloc } => {
                if !evpd {
                    return good(pages::cut(pages::standard_inquiry(&self.identity), alloc));
                }
                if page == 0x89 {
                    return match &self.ata {
                        Some(a) => good(pages::cut(sat::vpd89(a), alloc)),
                        None => check(Sense::INVALID_FIELD_IN_CDB),
                    };
                }
                match pages::vpd(page, &self.identity, &g) {
                    Some(d) => good(pages::cut(d, alloc)),
                    None => check(Sense::INVALID_FIELD_IN_CDB),
                }
            }
            Cdb::ModeSense {
                ten,
                dbd,
                pc,
                page,
                subpage,
                alloc,
            } => {
                if pc == 3 {
                    // Saved values are not supported (SPC-5 6.13).
                    return check(Sense::new(sense::key::ILLEGAL_REQUEST, 0x39, 0x00));
                }
                match pages::mode_sense(ten, dbd, pc, page, subpage, &g) {
                    Some(d) => good(pages::cut(d, alloc)),
                    None => check(Sense::INVALID_FIELD_IN_CDB),
                }
            }
            Cdb::ReadCapacity { alloc16: None } => good(pages::read_capacity_10(&g)),
            Cdb::ReadCapacity { alloc16: Some(a) } => {
                good(pages::cut(pages::read_capacity_16(&g), a))
            }
            Cdb::Read { lba, blocks } => self.read(lba, blocks),
            Cdb::Write { lba, blocks } => self.write(lba, blocks, data_out),
            Cdb::WriteSame {
                lba,
                blocks,
                unmap,
                ndob,
            } => self.write_same(lba, blocks, unmap, ndob, data_out),
            Cdb::Unmap { len } => self.unmap(len, data_out),
            Cdb::ReportLuns { alloc } => good(pages::cut(pages::report_luns(), alloc)),
            Cdb::AtaPassThrough => self.ata_pass_through(cdb, data_out),
            Cdb::ReportSupportedOpcode(r) => match crate::rsoc::answer(&r, self.ata.is_some()) {
                Ok(d) => good(pages::cut(d, r.alloc)),
                Err(s) => check(s),
            },
            Cdb::LogSense => {
                let hours = self.hours();
                self.scsi_selftest.advance(std::time::Instant::now(), hours);
                let c = &self.counters;
                // The SATL reports the ATA device's self-tests (SAT-4 10.3.5).
                let (temperature_c, tests) = match &self.ata {
                    Some(a) => (a.smart.temperature_c, &a.selftest),
                    None => (self.temperature_c, &self.scsi_selftest),
                };
                let now = crate::logpages::Now {
                    temperature_c,
                    bytes_written: (c.blocks_written + c.blocks_written_same)
                        * u64::from(self.geometry.block_size),
                    self_tests: crate::diagnostic::results(tests, hours),
                    nand: self.model.ftl().is_some().then(|| self.model.stats()),
                };
                match crate::logpages::log_sense(cdb, &now) {
                    Ok(d) => good(d),
                    Err(s) => check(s),
                }
            }
            Cdb::SendDiagnostic => self.send_diagnostic(cdb),
            Cdb::Unsupported(_) => check(Sense::INVALID_OPCODE),
        }
    }

    /// The power-on hours (the SATA personality's own count).
    fn hours(&self) -> u16 {
        match &self.ata {
            Some(a) => a.hours(),
            None => u16::try_from(self.powered_on.elapsed().as_secs() / 3600).unwrap_or(u16::MAX),
        }
    }

    /// SEND DIAGNOSTIC (SAS personality): a self-test started, aborted or
    /// run in the foreground ([`crate::diagnostic`]).
    fn send_diagnostic(&mut self, cdb: &[u8]) -> Response {
        if self.ata.is_some() {
            return check(Sense::INVALID_OPCODE);
        }
        let now = std::time::Instant::now();
        let hours = self.hours();
        self.scsi_selftest.advance(now, hours);
        let d = match crate::diagnostic::SendDiagnostic::parse(cdb) {
            Ok(d) => d,
            Err(s) => return check(s),
        };
        match crate::diagnostic::execute(d, &mut self.scsi_selftest, now, hours) {
            Ok(crate::diagnostic::Action::Done) => good(Vec::new()),
            Ok(crate::diagnostic::Action::Foreground(t)) => {
                // The command ends with the test.
                std::thread::sleep(t);
                self.scsi_selftest.advance(now + t, hours);
                good(Vec::new())
            }
            Err(s) => check(s),
        }
    }

    /// The byte range of `blocks` blocks at `lba`, or the sense for one
    /// beyond the medium or longer than a transfer may be.
    fn range(&self, lba: u64, blocks: u32) -> Result<(u64, usize), Sense> {
        let g = &self.geometry;
        let end = lba.checked_add(u64::from(blocks));
        if end.is_none_or(|e| e > g.blocks) {
            return Err(Sense::LBA_OUT_OF_RANGE);
        }
        if blocks > g.max_transfer_blocks {
            return Err(Sense::INVALID_FIELD_IN_CDB);
        }
        let bs = u64::from(g.block_size);
        Ok((lba * bs, blocks as usize * g.block_size as usize))
    }

    /// Carry out what a background sanitize left when its time came; a
    /// backing file that fails there is a MEDIUM ERROR for the command that
    /// found it.
    fn advance_sanitize(&mut self) -> Option<Response> {
        let native = self
            .ata
            .as_ref()
            .map_or(self.geometry.blocks, |a| a.native_blocks)
            * u64::from(self.geometry.block_size);
        let action = self.sanitize_mut().advance(std::time::Instant::now())?;
        self.apply(&action, native)
            .err()
            .map(|_| check(Sense::WRITE_ERROR))
    }

    /// The sanitize state of whichever personality this is.
    pub fn sanitize(&self) -> &Sanitize {
        self.ata
            .as_ref()
            .map_or(&self.scsi_sanitize, |a| &a.sanitize)
    }

    /// The sanitize state, mutably (a fault sets its next failure).
    pub fn sanitize_mut(&mut self) -> &mut Sanitize {
        match &mut self.ata {
            Some(a) => &mut a.sanitize,
            None => &mut self.scsi_sanitize,
        }
    }

    /// SCSI SANITIZE (SAS personality; a SATL would translate it, this one
    /// leaves that to ATA PASS-THROUGH).
    fn scsi_sanitize(&mut self, cdb: &[u8], data_out: &[u8]) -> Response {
        if self.ata.is_some() {
            return check(Sense::INVALID_OPCODE);
        }
        let req = match scsi_sanitize::parse(cdb, data_out) {
            Ok(r) => r,
            Err(s) => return check(s),
        };
        let now = std::time::Instant::now();
        let s = &mut self.scsi_sanitize;
        match req {
            Request::ExitFailureMode => {
                if !s.failed || !self.ause || s.running.is_some() {
                    return check(Sense::INVALID_FIELD_IN_CDB);
                }
                s.failed = false;
                good(Vec::new())
            }
            Request::Start { kind, immed, ause } => {
                if s.running.is_some() {
                    return check(scsi_sanitize::in_progress(s.progress(now)));
                }
                s.failed = false;
                s.start(kind, now);
                self.ause = ause;
                if immed {
                    return good(Vec::new());
                }
                // Without IMMED the command ends with the operation.
                std::thread::sleep(self.scsi_sanitize.duration);
                if let Some(r) = self.advance_sanitize() {
                    return r;
                }
                if self.scsi_sanitize.failed {
                    check(scsi_sanitize::FAILED)
                } else {
                    good(Vec::new())
                }
            }
        }
    }

    /// A locked ATA drive refuses media access (ACS-3 4.18.11): DATA
    /// PROTECT; a sanitize in progress: NOT READY, SANITIZE IN PROGRESS
    /// (04h/1Bh) with its progress; a failed one: MEDIUM ERROR, SANITIZE
    /// COMMAND FAILED (31h/03h) (SAT-4 / SBC-4 4.11).
    fn locked(&self) -> Option<Response> {
        if self.ata.as_ref().is_some_and(|a| a.security.locked) {
            return Some(check(Sense::new(sense::key::DATA_PROTECT, 0x27, 0x00)));
        }
        self.busy_refusal()
    }

    /// The sense for media access (and TEST UNIT READY) while a format
    /// started with IMMED or a sanitize runs, with its progress, or after a
    /// sanitize failed.
    fn busy_refusal(&self) -> Option<Response> {
        if let Some(t) = self.formatting {
            return Some(check(crate::format::in_progress(t.elapsed())));
        }
        let s = self.sanitize();
        if s.running.is_some() {
            let p = s.progress(std::time::Instant::now());
            return Some(check(scsi_sanitize::in_progress(p)));
        }
        s.failed.then(|| check(scsi_sanitize::FAILED))
    }

    fn read(&mut self, lba: u64, blocks: u32) -> Response {
        if let Some(r) = self.locked() {
            return r;
        }
        let (off, len) = match self.sata_range(false, lba, blocks) {
            Ok(r) => r,
            Err(s) => return check(s),
        };
        if let Some(bad) = self.bad_sector(lba, blocks) {
            // The SATL's READ ends at the sector the drive cannot read.
            self.ata_error(bad, crate::ata::regs::ERROR_UNC);
            return check(Sense::READ_ERROR);
        }
        let mut buf = vec![0u8; len];
        if self.media.read_exact_at(&mut buf, off).is_err() {
            return check(Sense::READ_ERROR);
        }
        let bs = self.geometry.block_size as usize;
        crate::media::zero_unmapped(&self.model, lba, &mut buf, bs);
        self.counters.read_commands += 1;
        self.counters.blocks_read += u64::from(blocks);
        if let Some(a) = &mut self.ata {
            a.smart.lbas_read += u64::from(blocks);
            a.smart.read_commands += 1;
        }
        good(buf)
    }

    fn write(&mut self, lba: u64, blocks: u32, data: &[u8]) -> Response {
        if let Some(r) = self.locked() {
            return r;
        }
        let (off, len) = match self.sata_range(true, lba, blocks) {
            Ok(r) => r,
            Err(s) => return check(s),
        };
        let Some(data) = data.get(..len) else {
            // The initiator's buffer is shorter than the blocks it names.
            return check(Sense::new(sense::key::ILLEGAL_REQUEST, 0x24, 0x00));
        };
        if self.media.write_all_at(data, off).is_err() {
            return check(Sense::WRITE_ERROR);
        }
        self.model.write(lba, u64::from(blocks), Origin::Host);
        self.counters.write_commands += 1;
        self.counters.blocks_written += u64::from(blocks);
        let bad = self.bad_sector(lba, blocks);
        if bad.is_some() {
            // Written over, the unreadable sector is reallocated.
            self.scsi_selftest.bad_lba = None;
        }
        if let Some(a) = &mut self.ata {
            a.smart.lbas_written += u64::from(blocks);
            a.smart.write_commands += 1;
            if bad.is_some() {
                a.selftest.bad_lba = None;
                a.smart.reallocated += 1;
            }
        }
        good(Vec::new())
    }

    /// [`Disk::range`] of a READ or WRITE; on the SATA personality the
    /// ATA device first receives the command the SATL makes of it (READ
    /// or WRITE DMA EXT), and an address past its max is its error (IDNF
    /// at the first LBA it cannot reach) in the SMART error logs.
    fn sata_range(&mut self, write: bool, lba: u64, blocks: u32) -> Result<(u64, usize), Sense> {
        let r = self.range(lba, blocks);
        if let Some(a) = &mut self.ata {
            a.received(crate::ata::regs::Regs {
                feature: 0,
                // COUNT 0 is 65536 blocks.
                count: blocks as u16,
                lba,
                device: 0x40,
                command: if write { 0x35 } else { 0x25 },
            });
        }
        if r == Err(Sense::LBA_OUT_OF_RANGE) {
            self.ata_error(lba.max(self.geometry.blocks), crate::ata::regs::ERROR_IDNF);
        }
        r
    }

    /// The personality's self-test state: the ATA device's, or SEND
    /// DIAGNOSTIC's.
    pub fn self_tests(&self) -> &crate::ata::selftest::SelfTest {
        self.ata
            .as_ref()
            .map_or(&self.scsi_selftest, |a| &a.selftest)
    }

    /// The sector the drive cannot read, when it lies in the
    /// `blocks` blocks at `lba`.
    fn bad_sector(&self, lba: u64, blocks: u32) -> Option<u64> {
        let bad = self.self_tests().bad_lba?;
        (bad >= lba && bad - lba < u64::from(blocks)).then_some(bad)
    }

    /// Log an error of the SATA personality's last command: ERROR `error`
    /// at `lba` (STATUS DRDY, ERR).
    fn ata_error(&mut self, lba: u64, error: u8) {
        if let Some(a) = &mut self.ata {
            let regs = crate::ata::regs::Regs {
                lba,
                device: 0x40,
                command: crate::ata::regs::STATUS_DRDY | crate::ata::regs::STATUS_ERR,
                ..Default::default()
            };
            let hours = a.hours();
            a.errors.error(regs, error, hours);
        }
    }

    /// ATA PASS-THROUGH (12/16) through the SATL: the taskfile to the ATA
    /// device, its data-in back, the registers in sense data when CK_COND
    /// is set or the command failed (SAT-4 12.2.2.5).
    fn ata_pass_through(&mut self, cdb: &[u8], data_out: &[u8]) -> Response {
        let pt = match PassThrough::parse(cdb) {
            Ok(p) => p,
            Err(s) => return check(s),
        };
        let Some(ata) = self.ata.as_mut() else {
            return check(Sense::INVALID_OPCODE);
        };
        let mut o = ata.execute(&pt.tf, pt.extend, data_out);
        if let Some(action) = o.medium.take() {
            let native = ata.native_blocks * u64::from(self.geometry.block_size);
            if self.apply(&action, native).is_err() {
                o = crate::ata::Outcome::abort();
            } else {
                self.count_medium(&action);
            }
        }
        let max = self.ata.as_ref().map(|a| a.max_blocks);
        if let Some(m) = max {
            self.geometry.blocks = m;
        }
        let desc = sat::status_descriptor(&o.regs, pt.extend, o.error);
        if o.failed() {
            return Response {
                status: sense::CHECK_CONDITION,
                sense: sat::sense(&desc, true),
                data_in: Vec::new(),
            };
        }
        Response {
            status: if pt.ck_cond {
                sense::CHECK_CONDITION
            } else {
                sense::GOOD
            },
            sense: if pt.ck_cond {
                sat::sense(&desc, false)
            } else {
                Vec::new()
            },
            data_in: o.data_in,
        }
    }

    /// FORMAT UNIT (SAS personality): the block length the last MODE
    /// SELECT named (else the current one) over the whole medium, which
    /// is zeroed; the number of blocks follows. With IMMED the drive then
    /// answers NOT READY, FORMAT IN PROGRESS for a while. Refused on the SATA
    /// personality (an ATA drive's sector size is not the SATL's to
    /// change) and while a sanitize runs or has failed.
    fn format_unit(&mut self, cdb: &[u8], list: &[u8]) -> Response {
        if self.ata.is_some() {
            return check(Sense::INVALID_OPCODE);
        }
        if let Some(r) = self.busy_refusal() {
            return r;
        }
        let immed = match crate::format::check_format_unit(cdb, list) {
            Ok(i) => i,
            Err(s) => return check(s),
        };
        let bytes = match self.media.metadata() {
            Ok(m) => m.len(),
            Err(_) => return check(Sense::WRITE_ERROR),
        };
        let new = self
            .pending_block_size
            .take()
            .unwrap_or(self.geometry.block_size);
        if self.apply(&MediumAction::Fill(0), bytes).is_err() {
            return check(Sense::WRITE_ERROR);
        }
        if self
            .model
            .reformat(bytes / u64::from(new), u64::from(new))
            .is_err()
        {
            return check(Sense::WRITE_ERROR);
        }
        self.formats.push((self.geometry.block_size, new));
        self.geometry.block_size = new;
        self.geometry.blocks = bytes / u64::from(new);
        // With IMMED the command ends now and the drive is busy a while,
        // as a real one formatting in the background.
        if immed {
            self.formatting = Some(std::time::Instant::now());
        }
        good(Vec::new())
    }

    /// Carry out `action`: a whole-medium one over the first `bytes` of
    /// the medium, a ranged one over its blocks.
    fn apply(&mut self, action: &MediumAction, bytes: u64) -> std::io::Result<()> {
        let bs = u64::from(self.geometry.block_size);
        match action {
            MediumAction::Half(a) => self.apply_at(a, 0, bytes / 2)?,
            MediumAction::Blocks { lba, blocks, with } => {
                self.apply_at(with, lba * bs, blocks * bs)?
            }
            MediumAction::Trim(ranges) => {
                for &(lba, n) in ranges {
                    self.apply_at(&MediumAction::Fill(0), lba * bs, n * bs)?;
                }
            }
            a => self.apply_at(a, 0, bytes)?,
        }
        crate::media::record(&mut self.model, action, bytes / bs);
        self.media.sync_data()
    }

    /// Fill `bytes` of the medium from `start` as `action` says (a fill,
    /// a pattern, a repeated block or noise).
    fn apply_at(&mut self, action: &MediumAction, start: u64, bytes: u64) -> std::io::Result<()> {
        const CHUNK: usize = 1 << 20;
        let mut chunk = vec![0u8; CHUNK];
        let mut done = 0u64;
        while done < bytes {
            let n = (bytes - done).min(CHUNK as u64) as usize;
            let off = start + done;
            match action {
                MediumAction::Fill(b) => chunk.fill(*b),
                MediumAction::Pattern(p) => {
                    for (i, b) in chunk.iter_mut().enumerate() {
                        *b = p.to_le_bytes()[i % 4];
                    }
                }
                MediumAction::Block(block) if !block.is_empty() => {
                    let at = (done % block.len() as u64) as usize;
                    for (i, b) in chunk.iter_mut().enumerate() {
                        *b = block[(at + i) % block.len()];
                    }
                }
                MediumAction::Noise(key) => noise(*key, off, &mut chunk),
                _ => return Err(std::io::Error::other("not a fill")),
            }
            self.media.write_all_at(&chunk[..n], off)?;
            done += n as u64;
        }
        Ok(())
    }

    /// Count what a ranged action did: written blocks (SMART 241 counts
    /// them too), unmapped ones.
    fn count_medium(&mut self, action: &MediumAction) {
        match action {
            MediumAction::Blocks { blocks, .. } => {
                self.counters.blocks_written_same += blocks;
                if let Some(a) = &mut self.ata {
                    a.smart.lbas_written += blocks;
                }
            }
            MediumAction::Trim(ranges) => {
                let n: u64 = ranges.iter().map(|r| r.1).sum();
                self.counters.blocks_unmapped += n;
                if let Some(a) = &mut self.ata {
                    a.trimmed_blocks += n;
                }
            }
            _ => {}
        }
    }

    /// WRITE SAME (10/16): the block written to each, or the blocks
    /// unmapped (SBC-4 5.45, 5.46). Behind the SATL, as SAT-4 translates
    /// it: an unmap is a TRIM, a write an SCT Write Same of the block.
    fn write_same(
        &mut self,
        lba: u64,
        blocks: u32,
        unmap: bool,
        ndob: bool,
        data: &[u8],
    ) -> Response {
        if let Some(r) = self.locked() {
            return r;
        }
        let g = self.geometry;
        let action = match crate::provisioning::write_same(
            lba,
            blocks,
            unmap,
            ndob,
            data,
            g.blocks,
            g.block_size as usize,
        ) {
            Ok(crate::provisioning::SameAction::Write(block)) => MediumAction::Blocks {
                lba,
                blocks: u64::from(blocks),
                with: Box::new(MediumAction::Block(block)),
            },
            Ok(crate::provisioning::SameAction::Unmap) => {
                MediumAction::Trim(vec![(lba, u64::from(blocks))])
            }
            Err(s) => return check(s),
        };
        self.carry_out(action)
    }

    /// UNMAP (SBC-4 5.32): every range of its parameter list unmapped
    /// (behind the SATL: one TRIM).
    fn unmap(&mut self, len: usize, data: &[u8]) -> Response {
        if let Some(r) = self.locked() {
            return r;
        }
        match crate::provisioning::unmap_ranges(len, data, self.geometry.blocks) {
            Ok(r) if r.is_empty() => good(Vec::new()),
            Ok(r) => self.carry_out(MediumAction::Trim(r)),
            Err(s) => check(s),
        }
    }

    /// A ranged action from a SCSI command: applied, counted, and (behind
    /// the SATL) logged as the ATA command it became.
    fn carry_out(&mut self, action: MediumAction) -> Response {
        if self.apply(&action, 0).is_err() {
            return check(Sense::WRITE_ERROR);
        }
        self.count_medium(&action);
        if let Some(a) = &mut self.ata {
            a.log.push(
                match action {
                    MediumAction::Trim(_) => "DATA SET MANAGEMENT (SATL)",
                    _ => "SCT WRITE SAME (SATL)",
                }
                .to_string(),
            );
        }
        good(Vec::new())
    }

    /// Bytes `[off, off + len)` of the medium, for tests.
    pub fn peek(&self, off: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let mut b = vec![0u8; len];
        self.media.read_exact_at(&mut b, off)?;
        Ok(b)
    }
}

/// The keystream of `key` for the bytes at `off..off + out.len()`
/// (splitmix64 of key and word index): what a crypto scramble leaves.
fn noise(key: u32, off: u64, out: &mut [u8]) {
    for (i, w) in out.chunks_mut(8).enumerate() {
        let mut z = (u64::from(key) << 40) ^ (off / 8 + i as u64);
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let b = z.to_le_bytes();
        w.copy_from_slice(&b[..w.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(name: &str, blocks: u64) -> (Disk, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("tcmuemu-{name}-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("temp file");
        f.set_len(blocks * 512).expect("size");
        let d = Disk::new(
            f,
            Identity {
                vendor: "DRIVELAB".into(),
                product: "TCMU".into(),
                revision: "1".into(),
                serial: "S1".into(),
            },
            Geometry {
                blocks,
                block_size: 512,
                max_transfer_blocks: 64,
            },
        );
        (d, path)
    }

    #[test]
    fn write_then_read_round_trips_and_counts() {
        let (mut d, path) = disk("rw", 128);
        let data: Vec<u8> = (0..1024).map(|i| (i * 7 % 251) as u8).collect();
        let w = d.execute(&[0x2A, 0, 0, 0, 0, 10, 0, 0, 2, 0], &data);
        assert_eq!(w.status, sense::GOOD);
        assert_eq!(d.peek(10 * 512, 1024).unwrap(), data);
        let r = d.execute(&[0x88, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 2, 0, 0], &[]);
        assert_eq!(r.status, sense::GOOD);
        assert_eq!(r.data_in, data);
        assert_eq!(d.counters.blocks_written, 2);
        assert_eq!(d.counters.blocks_read, 2);
        assert_eq!(d.counters.by_opcode.get("2a"), Some(&1));
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn bad_commands_get_their_sense_and_touch_nothing() {
        let (mut d, path) = disk("bad", 128);
        let cases: &[(&[u8], usize, Sense)] = &[
            // Past the end.
            (
                &[0x28, 0, 0, 0, 0, 127, 0, 0, 2, 0],
                0,
                Sense::LBA_OUT_OF_RANGE,
            ),
            // Longer than the maximum transfer.
            (
                &[0x28, 0, 0, 0, 0, 0, 0, 0, 65, 0],
                0,
                Sense::INVALID_FIELD_IN_CDB,
            ),
            // A write whose buffer is short.
            (
                &[0x2A, 0, 0, 0, 0, 0, 0, 0, 2, 0],
                512,
                Sense::INVALID_FIELD_IN_CDB,
            ),
            // Not implemented: ATA PASS-THROUGH(16) on SAS, WRITE LONG.
            (&[0x85; 16], 0, Sense::INVALID_OPCODE),
            (&[0x3F, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0, Sense::INVALID_OPCODE),
            // WRITE SAME(16) past the end.
            (
                &[0x93, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 0, 2, 0, 0],
                512,
                Sense::LBA_OUT_OF_RANGE,
            ),
            // An unknown VPD page.
            (&[0x12, 1, 0x89, 0, 255, 0], 0, Sense::INVALID_FIELD_IN_CDB),
        ];
        for (cdb, out, want) in cases {
            let r = d.execute(cdb, &vec![0xEE; *out]);
            assert_eq!(r.status, sense::CHECK_CONDITION, "{cdb:02x?}");
            assert_eq!(r.sense, want.fixed().to_vec(), "{cdb:02x?}");
            assert!(r.data_in.is_empty());
        }
        assert_eq!(d.counters.blocks_written, 0);
        assert_eq!(d.peek(0, 1024).unwrap(), vec![0u8; 1024]);
        assert_eq!(d.counters.check_conditions, cases.len() as u64);
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn scsi_sanitize_runs_in_the_background_with_progress_then_erases() {
        use drivelab_device::scsi::{Sanitize as S, SanitizeAction};
        let (mut d, path) = disk("sanitize", 128);
        d.execute(&[0x2A, 0, 0, 0, 0, 0, 0, 0, 1, 0], &[0xA5; 512]);
        d.scsi_sanitize.duration = std::time::Duration::from_secs(3600);
        let r = d.execute(&S::new(SanitizeAction::BlockErase).immed(true).build(), &[]);
        assert_eq!(r.status, sense::GOOD);
        // Media access and TEST UNIT READY: NOT READY, in progress.
        for cdb in [
            &[0x28u8, 0, 0, 0, 0, 0, 0, 0, 1, 0][..],
            &[0x00, 0, 0, 0, 0, 0],
        ] {
            let r = d.execute(cdb, &[]);
            assert_eq!(
                (r.sense[2], r.sense[12], r.sense[13]),
                (0x02, 0x04, 0x1B),
                "{cdb:02x?}"
            );
            assert_eq!(r.sense[15], 0x80, "progress field valid");
        }
        // REQUEST SENSE: GOOD, the progress in its data.
        let r = d.execute(&[0x03, 0, 0, 0, 18, 0], &[]);
        assert_eq!(
            (r.status, r.data_in[12], r.data_in[13]),
            (sense::GOOD, 0x04, 0x1B)
        );
        // Its time up: the next command finds the medium erased.
        d.scsi_sanitize.duration = std::time::Duration::ZERO;
        let r = d.execute(&[0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0], &[]);
        assert_eq!(r.status, sense::GOOD);
        assert_eq!(r.data_in, vec![0u8; 512]);
        assert_eq!(
            d.scsi_sanitize.done,
            vec![(crate::ata::sanitize::Kind::Block, true)]
        );
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn a_failed_scsi_sanitize_holds_media_access_until_exit_failure_mode() {
        use drivelab_device::scsi::{Sanitize as S, SanitizeAction};
        let (mut d, path) = disk("sanfail", 128);
        d.scsi_sanitize.duration = std::time::Duration::ZERO;
        d.scsi_sanitize.fail_next = true;
        d.execute(
            &S::new(SanitizeAction::CryptoErase)
                .immed(true)
                .ause(true)
                .build(),
            &[],
        );
        let r = d.execute(&[0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0], &[]);
        assert_eq!(r.sense, scsi_sanitize::FAILED.fixed().to_vec());
        let r = d.execute(&S::new(SanitizeAction::ExitFailureMode).build(), &[]);
        assert_eq!(r.status, sense::GOOD);
        let r = d.execute(&[0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0], &[]);
        assert_eq!(r.status, sense::GOOD);
        std::fs::remove_file(path).ok();
    }

    /// WRITE(10) of `n` blocks of `byte` at `lba`.
    fn write10(d: &mut Disk, lba: u32, n: u16, byte: u8) -> Response {
        let mut cdb = [0x2A, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        cdb[2..6].copy_from_slice(&lba.to_be_bytes());
        cdb[7..9].copy_from_slice(&n.to_be_bytes());
        d.execute(&cdb, &vec![byte; usize::from(n) * 512])
    }

    fn read10(d: &mut Disk, lba: u32, n: u16) -> Vec<u8> {
        let mut cdb = [0x28, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        cdb[2..6].copy_from_slice(&lba.to_be_bytes());
        cdb[7..9].copy_from_slice(&n.to_be_bytes());
        d.execute(&cdb, &[]).data_in
    }

    #[test]
    fn on_the_ftl_medium_overwrites_amplify_unmapped_blocks_read_zero_and_sanitize_resets() {
        use drivelab_device::scsi::sanitize::OverwriteParameters;
        use drivelab_device::scsi::{Sanitize as S, SanitizeAction};
        // 8 MiB: 2048 flash pages.
        let (d, path) = disk("ftl", 16384);
        let mut d = d
            .with_media(MediaKind::Ftl)
            .expect("big enough for the FTL");
        d.scsi_sanitize.duration = std::time::Duration::ZERO;
        for lba in (0..16384).step_by(64) {
            assert_eq!(write10(&mut d, lba, 64, 0x11).status, sense::GOOD);
        }
        let mut x = 28u32;
        for _ in 0..4 * 2048 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            assert_eq!(
                write10(&mut d, (x >> 8) % 2048 * 8, 8, 0x22).status,
                sense::GOOD
            );
        }
        let s = d.model.stats();
        assert_eq!(s.host_pages, 5 * 2048);
        assert!(s.write_amplification() > 1.5, "{s:?}");
        let st = crate::state::to_json(&d);
        assert_eq!(st["media"]["kind"], "ftl");
        assert_eq!(st["media"]["nand_pages"], s.nand_pages);
        // UNMAP 8 blocks: they read as zeroes, the file still holds data.
        let list = drivelab_device::scsi::UnmapParameterList::new()
            .range(drivelab_device::units::Lba(800), 8)
            .build();
        let mut cdb = [0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        cdb[8] = list.len() as u8;
        assert_eq!(d.execute(&cdb, &list).status, sense::GOOD);
        assert_eq!(read10(&mut d, 800, 8), vec![0; 8 * 512]);
        assert_ne!(read10(&mut d, 808, 1), vec![0; 512]);
        assert_eq!(d.model.ftl().map(|f| f.mapped_pages()), Some(2047));
        // SANITIZE OVERWRITE: the pattern, as the drive's own writes.
        let params = OverwriteParameters::new(&[0xA5, 0x5A])
            .build()
            .expect("list");
        let r = d.execute(
            &S::new(SanitizeAction::Overwrite)
                .param_len(params.len() as u16)
                .build(),
            &params,
        );
        assert_eq!(r.status, sense::GOOD);
        assert_eq!(read10(&mut d, 800, 1), [0xA5, 0x5A].repeat(256));
        assert_eq!(d.model.stats().drive_pages, 2048);
        // Block erase: fresh, every block zero, the lifetime counts kept.
        let r = d.execute(&S::new(SanitizeAction::BlockErase).build(), &[]);
        assert_eq!(r.status, sense::GOOD);
        assert!(d.model.is_fresh());
        assert_eq!(read10(&mut d, 0, 64), vec![0; 64 * 512]);
        assert!(d.model.stats().nand_pages >= s.nand_pages + 2048);
        assert_eq!(crate::state::to_json(&d)["media"]["fresh"], true);
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn plain_memory_keeps_a_map_so_an_unmapped_block_is_not_a_written_zero_block() {
        let (mut d, path) = disk("map", 128);
        assert_eq!(write10(&mut d, 0, 8, 0).status, sense::GOOD);
        assert_eq!(d.model.mapped_blocks(), 8, "written zeroes are data");
        let list = drivelab_device::scsi::UnmapParameterList::new()
            .range(drivelab_device::units::Lba(4), 4)
            .build();
        let mut cdb = [0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        cdb[8] = list.len() as u8;
        assert_eq!(d.execute(&cdb, &list).status, sense::GOOD);
        assert_eq!(d.model.mapped_blocks(), 4);
        assert_eq!(d.model.stats(), drivelab_ftlsim::MediaStats::default());
        assert_eq!(crate::state::to_json(&d)["media"]["mapped_blocks"], 4);
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn a_520_byte_drive_is_reformatted_to_512_and_read_capacity_follows() {
        let (mut d, path) = disk("format", 128);
        // As a storage array's drive: 520-byte blocks over the same bytes.
        d.geometry.block_size = 520;
        d.geometry.blocks = 128 * 512 / 520;
        d.execute(&[0x2A, 0, 0, 0, 0, 0, 0, 0, 1, 0], &[0x5A; 520]);
        let rc = d.execute(&[0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[]);
        assert_eq!(&rc.data_in[4..], &520u32.to_be_bytes());
        // MODE SELECT(6) with a block descriptor of 512, then FORMAT UNIT.
        let list = [0, 0, 0, 8, 0, 0, 0, 0, 0, 0x00, 0x02, 0x00];
        let r = d.execute(&[0x15, 0x10, 0, 0, list.len() as u8, 0], &list);
        assert_eq!(r.status, sense::GOOD);
        let r = d.execute(&[0x04, 0, 0, 0, 0, 0], &[]);
        assert_eq!(r.status, sense::GOOD);
        let rc = d.execute(&[0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[]);
        assert_eq!(rc.data_in, vec![0, 0, 0, 127, 0, 0, 2, 0]);
        assert_eq!(d.formats, vec![(520, 512)]);
        assert_eq!(d.peek(0, 520).unwrap(), vec![0u8; 520], "formatted");
        // A protected format is refused, nothing changed.
        let r = d.execute(&[0x04, 0x80, 0, 0, 0, 0], &[]);
        assert_eq!(r.sense, Sense::INVALID_FIELD_IN_CDB.fixed().to_vec());
        assert_eq!(d.formats.len(), 1);
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn write_same_and_unmap_change_the_blocks_they_name_and_count() {
        use drivelab_device::scsi::{UnmapParameterList, WriteSame};
        use drivelab_device::units::Lba;
        let (mut d, path) = disk("ws", 128);
        d.execute(&[0x2A, 0, 0, 0, 0, 0, 0, 0, 64, 0], &[0x77; 64 * 512]);
        // WRITE SAME(16) of 0xA5 over blocks 8..24, WRITE SAME(10) over 24..32.
        let r = d.execute(&WriteSame::new(Lba(8), 16).build16(), &[0xA5; 512]);
        assert_eq!(r.status, sense::GOOD);
        let r = d.execute(&WriteSame::new(Lba(24), 8).build10().unwrap(), &[0x5A; 512]);
        assert_eq!(r.status, sense::GOOD);
        assert_eq!(d.peek(7 * 512, 512).unwrap(), vec![0x77; 512]);
        assert_eq!(d.peek(8 * 512, 16 * 512).unwrap(), vec![0xA5; 16 * 512]);
        assert_eq!(d.peek(24 * 512, 8 * 512).unwrap(), vec![0x5A; 8 * 512]);
        assert_eq!(d.peek(32 * 512, 512).unwrap(), vec![0x77; 512]);
        assert_eq!(d.counters.blocks_written_same, 24);
        // WRITE SAME with UNMAP and NDOB, and UNMAP: zeroes, counted apart.
        let r = d.execute(
            &WriteSame::new(Lba(0), 4).unmap(true).ndob(true).build16(),
            &[],
        );
        assert_eq!(r.status, sense::GOOD);
        let list = UnmapParameterList::new()
            .range(Lba(40), 8)
            .range(Lba(50), 2)
            .build();
        let mut cdb = [0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        cdb[8] = list.len() as u8;
        assert_eq!(d.execute(&cdb, &list).status, sense::GOOD);
        assert_eq!(d.peek(0, 4 * 512).unwrap(), vec![0; 4 * 512]);
        assert_eq!(d.peek(40 * 512, 8 * 512).unwrap(), vec![0; 8 * 512]);
        assert_eq!(d.peek(48 * 512, 2 * 512).unwrap(), vec![0x77; 2 * 512]);
        assert_eq!(d.peek(50 * 512, 2 * 512).unwrap(), vec![0; 2 * 512]);
        assert_eq!(d.counters.blocks_unmapped, 14);
        assert_eq!(d.counters.blocks_written_same, 24);
        assert_eq!(d.counters.blocks_written, 64, "host writes apart");
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn sata_read_errors_land_in_the_error_logs_and_a_write_reallocates_the_bad_sector() {
        use drivelab_device::ata::{smart_read_log, AtaPassThrough, Protocol, Taskfile};
        let (d, path) = disk("sataerr", 128);
        let mut a = Ata::new("M", "S", "F", 128);
        a.selftest.bad_lba = Some(100);
        let mut d = d.with_ata(a);
        let read10 = |lba: u8, n: u8| [0x28, 0, 0, 0, 0, lba, 0, 0, n, 0];
        // Past the end: ILLEGAL REQUEST; the drive's IDNF at its max.
        let r = d.execute(&read10(120, 16), &[]);
        assert_eq!(r.sense, Sense::LBA_OUT_OF_RANGE.fixed().to_vec());
        // Through the bad sector: MEDIUM ERROR; UNC at LBA 100.
        let r = d.execute(&read10(96, 8), &[]);
        assert_eq!(r.sense, Sense::READ_ERROR.fixed().to_vec());
        // An ATA command the drive does not implement: aborted.
        let pt = AtaPassThrough::new(Protocol::PioDataIn, Taskfile::new(0x20).count(1));
        assert_eq!(d.execute(&pt.build16(), &[]).sense[1], 0x0B);
        let log = |d: &mut Disk, t: Taskfile| {
            let pt = AtaPassThrough::new(Protocol::PioDataIn, t).extend(true);
            d.execute(&pt.build16(), &[]).data_in
        };
        let s = log(&mut d, smart_read_log(0x01, 1));
        assert_eq!((s[1], s[452]), (3, 3), "three errors, the newest in slot 3");
        // Slot 1 (the second error): the SATL's READ DMA EXT, UNC at 100.
        let e = &s[2 + 90..2 + 180];
        assert_eq!((e[48 + 7], e[61], e[63], e[67]), (0x25, 0x40, 100, 0x41));
        // Slot 0: IDNF at 128, the first block past the max.
        assert_eq!((s[2 + 61], s[2 + 63]), (0x10, 128));
        let x = log(&mut d, Taskfile::new(0x2F).count(1).lba(0x03));
        assert_eq!((x[2], x[500]), (3, 3));
        assert_eq!((x[4 + 124 + 91], x[4 + 124 + 94]), (0x40, 100));
        // Written over, the sector is reallocated: reads again, 5 counts it.
        let w = d.execute(&[0x2A, 0, 0, 0, 0, 96, 0, 0, 8, 0], &[0x5A; 8 * 512]);
        assert_eq!(w.status, sense::GOOD);
        assert_eq!(d.execute(&read10(96, 8), &[]).data_in, vec![0x5A; 8 * 512]);
        let a = d.ata.as_ref().unwrap();
        assert_eq!(
            (a.selftest.bad_lba, a.smart.reallocated, a.errors.count),
            (None, 1, 3)
        );
        // The Device Statistics count the commands that transferred data.
        let ds = log(&mut d, smart_read_log(0x04, 2));
        let q =
            |at: usize| u64::from_le_bytes(ds[at..at + 8].try_into().unwrap()) & 0xFFFF_FFFF_FFFF;
        assert_eq!(
            (q(512 + 0x18), q(512 + 0x20), q(512 + 0x28), q(512 + 0x30)),
            (8, 1, 8, 1)
        );
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn sas_send_diagnostic_runs_a_self_test_that_log_sense_reports() {
        use drivelab_device::health::scsi_log::{self, LogPage, LogSense};
        let (mut d, path) = disk("sasdiag", 128);
        d.scsi_selftest.short = std::time::Duration::from_millis(20);
        d.scsi_selftest.bad_lba = Some(64);
        // Foreground short (101b): the command returns when it ends.
        assert_eq!(
            d.execute(&[0x1D, 5 << 5, 0, 0, 0, 0], &[]).status,
            sense::GOOD
        );
        let page = d.execute(&LogSense::new(0x10, 4096).build(), &[]).data_in;
        let r = scsi_log::self_test_results(&LogPage::parse(&page).expect("page 10h"));
        assert_eq!(
            (r[0].code, r[0].result, r[0].first_failure_lba),
            (5, 7, Some(64))
        );
        std::fs::remove_file(path).ok();
        // The SATA personality's SATL does not take it.
        let (d, path) = disk("satadiag", 128);
        let mut d = d.with_ata(Ata::new("M", "S", "F", 128));
        let r = d.execute(&[0x1D, 1 << 5, 0, 0, 0, 0], &[]);
        assert_eq!(r.sense, Sense::INVALID_OPCODE.fixed().to_vec());
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn sata_trim_and_sct_write_same_reach_the_medium_and_the_smart_counters() {
        use drivelab_device::ata::{
            smart_write_log, AtaPassThrough, Protocol, SctWriteSame, SctWriteSameFunction, Taskfile,
        };
        use drivelab_device::units::{BlockCount, Lba};
        let (d, path) = disk("satatrim", 128);
        let mut d = d.with_ata(Ata::new("M", "S", "F", 128));
        d.execute(&[0x2A, 0, 0, 0, 0, 0, 0, 0, 64, 0], &[0x77; 64 * 512]);
        let key = SctWriteSame::new(
            SctWriteSameFunction::PatternForeground,
            Lba(4),
            BlockCount(8),
        )
        .pattern(0xDEAD_BEEF)
        .build();
        let pt = AtaPassThrough::new(Protocol::PioDataOut, smart_write_log(0xE0, 1)).ck_cond(true);
        let r = d.execute(&pt.build16(), &key);
        assert_eq!(r.sense[1], 0x01, "CK_COND: recovered error, no failure");
        let want: Vec<u8> = (0..8 * 512)
            .map(|i| 0xDEAD_BEEFu32.to_le_bytes()[i % 4])
            .collect();
        assert_eq!(d.peek(4 * 512, 8 * 512).unwrap(), want);
        // TRIM of blocks 20..30 (DMA data-out, one block of entries).
        let mut ranges = vec![0u8; 512];
        ranges[..8].copy_from_slice(&(20u64 | (10u64 << 48)).to_le_bytes());
        let trim = AtaPassThrough::new(Protocol::Dma, Taskfile::new(0x06).feature(1).count(1))
            .extend(true);
        let r = d.execute(&trim.build16(), &ranges);
        assert_eq!(r.status, sense::GOOD);
        assert_eq!(d.peek(20 * 512, 10 * 512).unwrap(), vec![0; 10 * 512]);
        assert_eq!(d.peek(30 * 512, 512).unwrap(), vec![0x77; 512]);
        // UNMAP through the SATL is a TRIM too.
        let list = drivelab_device::scsi::UnmapParameterList::new()
            .range(Lba(40), 2)
            .build();
        let r = d.execute(&[0x42, 0, 0, 0, 0, 0, 0, 0, list.len() as u8, 0], &list);
        assert_eq!(r.status, sense::GOOD);
        let a = d.ata.as_ref().unwrap();
        assert_eq!((a.smart.lbas_written, a.trimmed_blocks), (64 + 8, 12));
        assert_eq!(
            a.log,
            [
                "SMART WRITE LOG",
                "DATA SET MANAGEMENT",
                "DATA SET MANAGEMENT (SATL)"
            ]
        );
        assert_eq!(
            (d.counters.blocks_written_same, d.counters.blocks_unmapped),
            (8, 12)
        );
        std::fs::remove_file(path).ok();
    }

    #[test]
    fn allocation_lengths_cut_the_data() {
        let (mut d, path) = disk("alloc", 128);
        let r = d.execute(&[0x12, 0, 0, 0, 36, 0], &[]);
        assert_eq!(r.data_in.len(), 36);
        let r = d.execute(&[0x12, 1, 0x80, 0, 5, 0], &[]);
        assert_eq!(r.data_in, vec![0, 0x80, 0, 2, b'S']);
        let r = d.execute(&[0x03, 0, 0, 0, 252, 0], &[]);
        assert_eq!(r.data_in.len(), 18);
        assert_eq!(r.data_in[0], 0x70);
        let r = d.execute(&[0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[]);
        assert_eq!(r.data_in, vec![0, 0, 0, 127, 0, 0, 2, 0]);
        std::fs::remove_file(path).ok();
    }
}
