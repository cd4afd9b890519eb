//! fio's multi-file jobs and filesystem engines, as a job sees them.
//!
//! A job with `nrfiles=N` and no `filename` works on N files of its own,
//! named by `filename_format` (fio's `$jobname.$jobnum.$filenum`) in
//! `directory`; each gets `filesize` bytes (a `lo-hi` range: a random size
//! per file, rounded down to the smallest block, as fio does) or an equal
//! share of `size`. `file_service_type` picks the file of each I/O, as fio
//! does: `roundrobin` (the default), `sequential` (finish one file, then the
//! next) or `random`, each switching after `:N` I/Os (default 1), or the
//! skewed `zipf:θ`, `pareto:h` and `normal:σ%`/`gauss`. A file whose bytes
//! of the pass are done is skipped until every file is done, so each gets
//! exactly its size. `fallocate` says how created files get their blocks,
//! `unlink` removes the job's files when it ends.
//!
//! The engines (`ioengine=filecreate|filestat|filedelete|dircreate|dirstat|
//! dirdelete|ftruncate|falloc`) are drivelab's
//! [`drivelab_engine::fileops`]. A job's choice of one and its options are
//! [`crate::engines::opts::files`], the engines' fronts
//! [`crate::engines::fronts::files`]; this module sizes the job's files,
//! picks the file of each I/O, and claims and prepares the files.

use drivelab_device::claim::{Claim, Consent, FileSet, Prealloc, SetKind};
use drivelab_engine::fileops::{PathOp, PathOps};
use drivelab_patterns::prng::{Rng, Zipf};

pub use crate::engines::opts::files::{
    parse_filesize, FileEngine, FileOptions, FileService, Service, MAX_FILES,
};
use crate::SpecError;

/// fio's random file size in `[lo, hi]`, rounded down to `min_bs`.
pub fn random_file_size(rng: &mut Rng, (lo, hi): (u64, u64), min_bs: u64) -> u64 {
    let span = hi - lo;
    let s = lo + ((span as f64) * rng.unit()) as u64;
    let s = s - s % min_bs.max(1);
    s.max(min_bs)
}

/// Picks the file of each I/O, as `file_service_type` says, skipping the
/// files whose bytes of the pass are done: for the skewed services
/// (zipf, pareto, normal), jobs that verify and zoned jobs; the others
/// pick by fio's open-set rule ([`crate::job::openfiles`], [`open_set_limit`]).
#[derive(Debug, Clone)]
pub struct FilePicker {
    service: FileService,
    zipf: Option<Zipf>,
    /// Bytes each file takes per pass, and bytes issued to it in this one.
    len: Vec<u64>,
    issued: Vec<u64>,
    current: usize,
    /// I/Os left before the next pick.
    left: u32,
    started: bool,
}

impl FilePicker {
    /// A picker over files of `len` bytes each (per pass).
    pub fn new(service: FileService, len: Vec<u64>) -> FilePicker {
        let n = len.len().max(1) as u64;
        FilePicker {
            zipf: match service.kind {
                Service::Zipf(th) => Some(Zipf::new(n, th)),
                _ => None,
            },
            service,
            issued: vec![0; len.len()],
            len,
            current: 0,
            left: 0,
            started: false,
        }
    }

    fn done(&self, i: usize) -> bool {
        self.issued[i] >= self.len[i]
    }

    /// The file of the next I/O of `size` bytes.
    pub fn pick(&mut self, rng: &mut Rng, size: u64) -> usize {
        let n = self.len.len();
        if n <= 1 {
            return 0;
        }
        if (0..n).all(|i| self.done(i)) {
            // A new pass starts again from the first file, as fio's loops do.
            self.issued.iter_mut().for_each(|b| *b = 0);
            self.current = 0;
            self.started = false;
        }
        let must_move = self.started && self.done(self.current);
        if self.left == 0 || must_move || !self.started {
            self.current = self.choose(rng);
            self.left = self.service.nr.max(1);
            self.started = true;
        }
        self.left -= 1;
        let i = self.current;
        self.issued[i] += size;
        i
    }

    fn choose(&mut self, rng: &mut Rng) -> usize {
        let n = self.len.len();
        let first = match self.service.kind {
            Service::RoundRobin if self.started => (self.current + 1) % n,
            Service::RoundRobin | Service::Sequential => self.current,
            Service::Random => rng.below(n as u64) as usize,
            Service::Zipf(_) => match &self.zipf {
                Some(z) => (z.sample(rng).saturating_sub(1) as usize).min(n - 1),
                None => 0,
            },
            Service::Pareto(h) => {
                let x = rng.unit().powf(1.0 / (1.0 - h));
                ((x * n as f64) as usize).min(n - 1)
            }
            Service::Normal(sigma) => {
                let x = n as f64 / 2.0 + rng.normal() * sigma / 100.0 * n as f64;
                x.clamp(0.0, (n - 1) as f64) as usize
            }
        };
        // The next file, in order, whose bytes are not done.
        (0..n)
            .map(|k| (first + k) % n)
            .find(|&i| !self.done(i))
            .unwrap_or(first)
    }
}

/// The path engine of a job (filecreate, filestat, filedelete, dir…), if
/// it has one.
pub fn path_engine(spec: &crate::JobSpec) -> Option<(PathOp, SetKind)> {
    match spec.files.engine {
        Some(FileEngine::Path(op, kind)) => Some((op, kind)),
        _ => None,
    }
}

/// A target of a path engine: only looked at (its directory must exist,
/// outside /dev); it is created, laid out or removed through the run's
/// file-set claim.
pub fn path_target(path: &str) -> Result<crate::plan::model::PlannedTarget, crate::PlanError> {
    let p = std::path::Path::new(path);
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let refuse = |why: &str| crate::PlanError::Target {
        path: path.to_string(),
        why: why.to_string(),
    };
    if !dir.is_dir() {
        return Err(refuse(
            "its directory does not exist; create it or set directory= to one that does",
        ));
    }
    if drivelab_device::blockdev::in_devtmpfs(dir) {
        return Err(refuse(
            "filesystem engines work on files in a filesystem, not on /dev",
        ));
    }
    Ok(crate::plan::model::PlannedTarget {
        path: p.to_path_buf(),
        is_block: false,
        size: 0,
        logical_block: 512,
        device: drivelab_device::blockdev::backing_device_of_file(dir)
            .ok()
            .flatten(),
        create: true,
        existing_size: 0,
        layout: false,
    })
}

/// The size of each of a clone's `n` files when `filesize` is given: the
/// size, or with a `lo-hi` range a random size per file (seeded by the
/// job's seed and the clone, so a run repeats).
pub fn file_sizes(spec: &crate::JobSpec, clone: u32, n: usize) -> impl Iterator<Item = u64> {
    let fixed = spec.filesize.unwrap_or(0);
    let range = spec.files.filesize_range;
    let min_bs = spec.min_bs();
    let mut rng =
        Rng::new(spec.randseed ^ 0x46_494c_4553 ^ u64::from(clone).wrapping_mul(0x9E37_79B9));
    (0..n).map(move |_| match range {
        Some(r) => random_file_size(&mut rng, r, min_bs),
        None => fixed,
    })
}

/// The paths of a run's path-engine jobs, claimed as file sets (one per
/// kind: files, directories), with each plan target's place in its set;
/// and the donors of its e4defrag jobs, claimed once the targets are.
#[derive(Debug, Default)]
pub struct RunSets {
    /// The e4defrag jobs' donor files ([`crate::engines::e4defrag::Donors`]).
    pub donors: crate::engines::e4defrag::Donors,
    sets: Vec<std::sync::Arc<FileSet>>,
    /// Per plan target: (set, position), for path-engine targets.
    at: std::collections::HashMap<usize, (usize, usize)>,
}

/// Why the file sets could not be made ready.
#[derive(Debug)]
pub enum SetError {
    /// The claim was refused.
    Claim(drivelab_device::claim::ClaimError),
    /// Laying out a path failed.
    Prepare(String, std::io::Error),
}

impl RunSets {
    /// Claim the path-engine targets of `plan`, then lay out those that a
    /// filestat, filedelete, dirstat or dirdelete job needs in place
    /// (files of the planned size, or directories).
    pub fn claim(plan: &crate::Plan) -> Result<RunSets, SetError> {
        let consent = Consent {
            force: plan.force,
            confirm: None,
        };
        let mut out = RunSets::default();
        for kind in [SetKind::Files, SetKind::Dirs] {
            let mut paths = Vec::new();
            let mut layout = Vec::new();
            for job in &plan.jobs {
                let prealloc = job.spec.files.fallocate;
                let prep: Box<dyn Fn(usize) -> Option<Prep>> = match path_engine(&job.spec) {
                    Some((op, k)) if k == kind => {
                        let size = |t: usize| plan.targets[t].size;
                        Box::new(move |t| {
                            (op != PathOp::Create).then_some(Prep::Size(size(t), prealloc))
                        })
                    }
                    None if kind == SetKind::Files && lazy(job) => {
                        // fio's set-up: files made (and filled when the job
                        // reads them) now, unless created when opened.
                        let create = !creates_on_open(&job.spec);
                        Box::new(move |t| {
                            let pt = &plan.targets[t];
                            match (create, pt.layout) {
                                (false, _) => None,
                                (true, true) => {
                                    Some(Prep::Data(pt.size, pt.existing_size, prealloc))
                                }
                                (true, false) => Some(Prep::Size(pt.size, prealloc)),
                            }
                        })
                    }
                    _ => continue,
                };
                for &t in &job.targets {
                    if out.at.contains_key(&t) {
                        continue;
                    }
                    out.at.insert(t, (out.sets.len(), paths.len()));
                    paths.push(plan.targets[t].path.clone());
                    layout.push(prep(t));
                }
            }
            if paths.is_empty() {
                continue;
            }
            let set = FileSet::claim(paths, kind, &consent).map_err(SetError::Claim)?;
            for (i, l) in layout.iter().enumerate() {
                let r = match *l {
                    Some(Prep::Size(size, mode)) => set.lay_out(i, size, mode),
                    Some(Prep::Data(size, from, mode)) => fill_file(&set, i, size, from, mode),
                    None => Ok(()),
                };
                r.map_err(|e| SetError::Prepare(set.paths()[i].display().to_string(), e))?;
            }
            out.sets.push(std::sync::Arc::new(set));
        }
        Ok(out)
    }

    /// The opener of a job whose files its open set opens and closes
    /// (fio's `openfiles`, `create_on_open`; see [`open_limit`]).
    pub fn opener(
        &self,
        job: &crate::plan::model::PlannedJob,
    ) -> std::io::Result<drivelab_engine::openset::Opener> {
        let missing = || std::io::Error::other("the job's files were not claimed");
        let limit = open_limit(&job.spec, job.targets.len()).ok_or_else(missing)?;
        let first = job.targets.first().ok_or_else(missing)?;
        let (set, _) = *self.at.get(first).ok_or_else(missing)?;
        let index = job
            .targets
            .iter()
            .map(|t| match self.at.get(t) {
                Some(&(s, i)) if s == set => Ok(i),
                _ => Err(missing()),
            })
            .collect::<std::io::Result<Vec<usize>>>()?;
        Ok(drivelab_engine::openset::Opener::new(
            self.sets[set].clone(),
            index,
            job.direct,
            creates_on_open(&job.spec),
            limit,
        ))
    }

    /// Whether plan target `t` belongs to a path engine's set.
    pub fn holds(&self, t: usize) -> bool {
        self.at.contains_key(&t)
    }

    /// The engine of a path-engine job.
    pub fn engine(
        &self,
        job: &crate::plan::model::PlannedJob,
        max_len: usize,
    ) -> std::io::Result<PathOps> {
        let missing = || std::io::Error::other("the job's paths were not claimed");
        let (op, _) = path_engine(&job.spec).ok_or_else(missing)?;
        let first = job.targets.first().ok_or_else(missing)?;
        let (set, _) = *self.at.get(first).ok_or_else(missing)?;
        let index = job
            .targets
            .iter()
            .map(|t| match self.at.get(t) {
                Some(&(s, i)) if s == set => Ok(i),
                _ => Err(missing()),
            })
            .collect::<std::io::Result<Vec<usize>>>()?;
        let pass = job.regions.iter().map(|r| r.end - r.start).sum();
        PathOps::new(self.sets[set].clone(), index, op, max_len, pass)
    }

    /// fio's `unlink`: remove the files of the jobs that ask for it once
    /// the run is over — path-engine paths through their set, the other
    /// files through their claims (`claims`, one per plan target).
    /// Returns the paths that could not be removed, with why.
    pub fn unlink_after(
        &self,
        plan: &crate::Plan,
        claims: Vec<Option<Claim>>,
    ) -> Vec<(String, std::io::Error)> {
        let mut failed = Vec::new();
        let wanted: std::collections::HashSet<usize> = plan
            .jobs
            .iter()
            .filter(|j| j.spec.files.unlink || j.spec.files.unlink_each_loop)
            .flat_map(|j| j.targets.iter().copied())
            .collect();
        for (t, claim) in claims.into_iter().enumerate() {
            if !wanted.contains(&t) {
                continue;
            }
            if let Some(&(s, i)) = self.at.get(&t) {
                match self.sets[s].remove(i) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        failed.push((plan.targets[t].path.display().to_string(), e))
                    }
                    _ => {}
                }
            } else if let Some(c) = claim {
                if !c.is_block() {
                    let path = c.path().display().to_string();
                    if let Err(e) = c.unlink() {
                        failed.push((path, e));
                    }
                }
            }
        }
        failed
    }
}

/// Whether a planned job's files are opened by its open set.
pub fn lazy(job: &crate::plan::model::PlannedJob) -> bool {
    open_limit(&job.spec, job.targets.len()).is_some()
}

/// How a file of a set is made ready before the run.
#[derive(Debug, Clone, Copy)]
enum Prep {
    /// Created with this size (path engines; data jobs that only write).
    Size(u64, Prealloc),
    /// Created with this size and real data from the second offset on
    /// (data jobs that read).
    Data(u64, u64, Prealloc),
}

/// Create file `i` of `set` with `size` bytes, data written from `from`
/// on (reads then hit data, not holes), as the run's other files are.
fn fill_file(set: &FileSet, i: usize, size: u64, from: u64, mode: Prealloc) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    set.lay_out(i, size, mode)?;
    let f = set.open_io(i, false, false)?;
    let chunk = 1usize << 20;
    let mut buf = vec![0u8; chunk];
    let mut s = 0x5eed_u64;
    for c in buf.chunks_exact_mut(8) {
        c.copy_from_slice(&drivelab_patterns::prng::splitmix64(&mut s).to_le_bytes());
    }
    let mut off = from;
    while off < size {
        let n = (size - off).min(chunk as u64) as usize;
        f.write_all_at(&buf[..n], off)?;
        off += n as u64;
    }
    f.sync_all()
}

/// fio's `fallocate` for a newly created or grown file of the plan: the
/// mode of the first job using target `t`.
pub fn prealloc_of(plan: &crate::Plan, t: usize) -> Prealloc {
    plan.jobs
        .iter()
        .find(|j| j.targets.contains(&t))
        .map_or(Prealloc::Native, |j| j.spec.files.fallocate)
}

/// The engine's name as fio reports it: the name of the front the job's
/// `ioengine` chose (drivelab's own for fio's aliases: `libaio` runs and
/// reports as io_uring).
pub fn engine_name(spec: &crate::JobSpec) -> &'static str {
    spec.front.name()
}

/// Whether a job reads (its files then need data before it starts).
fn reads(spec: &crate::JobSpec) -> bool {
    spec.access_lines().iter().any(|l| l.read_pct > 0)
}

/// Whether the job's files are created when first opened, during the run
/// (fio's `create_on_open`). A job that reads gets its files laid out in
/// the set-up, as data to read, and so does one that verifies (it reads
/// its files back with all of them open), either way.
pub fn creates_on_open(spec: &crate::JobSpec) -> bool {
    spec.files.create_on_open && !reads(spec) && spec.verify.kind.is_none()
}

/// Under fio's `openfiles` below the job's `files`, or `create_on_open`,
/// a psync or io_uring data job opens and closes its files as its open set
/// says ([`crate::job::openfiles`]): the most open at once. None: every file is
/// open from the start to the end (also for a job that verifies: it reads
/// its files back with all of them open).
pub fn open_limit(spec: &crate::JobSpec, files: usize) -> Option<u32> {
    use crate::spec::kinds::EngineKind;
    if spec.files.engine.is_some()
        || !matches!(spec.ioengine, EngineKind::Psync | EngineKind::IoUring)
        || spec.verify.kind.is_some()
        || files == 0
    {
        return None;
    }
    let n = u32::try_from(files).unwrap_or(u32::MAX);
    let limit = spec.files.openfiles.unwrap_or(n).clamp(1, n);
    (limit < n || creates_on_open(spec)).then_some(limit)
}

/// The most files open at once for a planned job's open set
/// ([`crate::job::openfiles`]): its [`open_limit`] under `openfiles` or
/// `create_on_open`; else, for a psync or io_uring job of several files
/// served roundrobin, sequentially or at random, all of them, so that it
/// picks its files and opens and closes them (in its `write_iolog`) by
/// fio's rule while its engine keeps every file open. None: the job's
/// files are picked by [`FilePicker`].
pub fn open_set_limit(job: &crate::plan::model::PlannedJob) -> Option<u32> {
    use crate::spec::kinds::EngineKind;
    let spec = &job.spec;
    let n = job.targets.len();
    if let Some(l) = open_limit(spec, n) {
        return Some(l);
    }
    let uniform = matches!(
        spec.files.service.kind,
        Service::RoundRobin | Service::Sequential | Service::Random
    );
    (n > 1
        && uniform
        && spec.files.engine.is_none()
        && spec.verify.kind.is_none()
        && job.zbd.is_none()
        && matches!(spec.ioengine, EngineKind::Psync | EngineKind::IoUring))
    .then(|| u32::try_from(n).unwrap_or(u32::MAX))
}

/// Checks of the multi-file options that need the whole job.
pub fn validate(spec: &crate::JobSpec) -> Result<(), SpecError> {
    let limited =
        spec.files.openfiles.is_some_and(|o| o < spec.files.nrfiles) && spec.files.engine.is_none();
    if limited && spec.verify.kind.is_some() {
        return Err(SpecError::Invalid(format!(
            "job '{}': openfiles={} below nrfiles={} with verify: drivelab reads a job's files back with all of them open; drop openfiles or verify",
            spec.name,
            spec.files.openfiles.unwrap_or(0),
            spec.files.nrfiles
        )));
    }
    if spec.files.unlink_each_loop && spec.loops > 1 {
        return Err(SpecError::Invalid(format!(
            "job '{}': unlink_each_loop with loops={}: drivelab does a job's loops as one run over its files and removes them at its end; use unlink=1",
            spec.name, spec.loops
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::opts::files::parse_service;
    use crate::spec::family::OptionFamily;

    fn picks(service: &str, lens: &[u64], n: usize) -> Vec<usize> {
        let s = parse_service("file_service_type", service).unwrap();
        let mut p = FilePicker::new(s, lens.to_vec());
        let mut rng = Rng::new(7);
        (0..n).map(|_| p.pick(&mut rng, 4096)).collect()
    }

    #[test]
    fn roundrobin_takes_files_in_turn_and_skips_finished_ones() {
        assert_eq!(picks("roundrobin", &[8192; 3], 6), [0, 1, 2, 0, 1, 2]);
        assert_eq!(picks("roundrobin:2", &[8192; 2], 4), [0, 0, 1, 1]);
        // The short file is done after one I/O; the others go on.
        assert_eq!(picks("roundrobin", &[4096, 8192, 8192], 5), [0, 1, 2, 1, 2]);
    }

    #[test]
    fn sequential_finishes_each_file_first() {
        assert_eq!(picks("sequential", &[8192, 12288], 5), [0, 0, 1, 1, 1]);
        // The next pass starts over.
        assert_eq!(picks("sequential", &[4096, 4096], 4), [0, 1, 0, 1]);
    }

    #[test]
    fn random_gives_every_file_exactly_its_blocks_per_pass() {
        let v = picks("random", &[4096 * 10; 4], 40);
        for f in 0..4 {
            assert_eq!(v.iter().filter(|&&x| x == f).count(), 10, "{v:?}");
        }
        let v = picks("zipf:1.2", &[4096 * 10; 4], 40);
        for f in 0..4 {
            assert_eq!(v.iter().filter(|&&x| x == f).count(), 10, "{v:?}");
        }
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut o = FileOptions::default();
        for (k, v) in [
            ("nrfiles", "0"),
            ("file_service_type", "sideways"),
            ("file_service_type", "random:0"),
            ("fallocate", "maybe"),
            ("stat_type", "fstat"),
            ("openfiles", "x"),
        ] {
            let e = o.set(k, v).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
        assert!(parse_filesize("filesize", "8k-4k").is_err());
        assert_eq!(
            parse_filesize("filesize", "4k-8k").unwrap(),
            (8192, Some((4096, 8192)))
        );
    }

    #[test]
    fn random_sizes_stay_in_range_on_block_boundaries() {
        let mut rng = Rng::new(1);
        for _ in 0..100 {
            let s = random_file_size(&mut rng, (4096, 65536), 4096);
            assert!((4096..=65536).contains(&s) && s % 4096 == 0, "{s}");
        }
    }
}
