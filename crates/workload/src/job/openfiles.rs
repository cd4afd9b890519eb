//! fio's `openfiles`: at most N of a job's files open at once, and fio's
//! `create_on_open`: a file is created when it is first opened, during the
//! run.
//!
//! fio 3.33 opens a job's files lazily, when `file_service_type` first
//! picks them, and closes one when the pick comes back to it and its bytes
//! are done; `roundrobin` moves through the files in order, skipping those
//! that are done and, while N are open, those not open (the open set is
//! served in turn until one is done and closed); `sequential` stays on one
//! file until it is done; `random` draws a file, drawing again while the
//! file drawn is done or not open and N are open. A closed file whose I/O
//! is still in flight stays open (and counted) until that I/O completes,
//! so the engine never loses a descriptor under an I/O; roundrobin then
//! waits for that I/O and takes the file it came to (fio moves on to the
//! next, which shows only when its I/O completes later than its next
//! pick, so drivelab's order does not hang on timing). [`OpenSet`] is
//! that rule; the job loop hands its [`FileEvent`]s to the engine
//! ([`drivelab_engine::openset`]) and to the `write_iolog` log
//! ([`crate::run::iolog`]). A psync or io_uring job of several files without
//! `openfiles` picks its files by the same rule with every file allowed
//! open (its engine then keeps them all open; only its iolog shows the
//! opens and closes), so its iolog is fio's too. Everything is sized once
//! per job: no allocation per I/O.

use drivelab_patterns::prng::{Rng, Zipf};

use crate::engines::opts::files::{FileService, Service};

/// What the open set did, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileEvent {
    /// File `i` is opened (fio's iolog `open`).
    Open(u32),
    /// File `i` is closed (fio's iolog `close`); its descriptor goes when
    /// its I/O in flight has completed ([`FileEvent::Release`]).
    Close(u32),
    /// File `i`'s descriptor closes now: nothing of it is in flight.
    Release(u32),
}

/// Why no file could be picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoFile {
    /// N files are open (some closing, with I/O in flight): wait for a
    /// completion.
    Busy,
}

/// The open files of a job and fio's rule for the next one.
#[derive(Debug, Clone)]
pub struct OpenSet {
    service: FileService,
    zipf: Option<Zipf>,
    limit: u32,
    /// Per file: bytes per pass, bytes issued in this one.
    len: Vec<u64>,
    issued: Vec<u64>,
    open: Vec<bool>,
    closing: Vec<bool>,
    done: Vec<bool>,
    inflight: Vec<u32>,
    nr_open: u32,
    nr_done: usize,
    /// Where roundrobin/sequential look next.
    next_file: usize,
    /// The file of the last pick and the picks left on it (`:N`).
    current: Option<usize>,
    left: u32,
    events: Vec<FileEvent>,
}

impl OpenSet {
    /// The open set of files of `len` bytes each (per pass), at most
    /// `limit` open at once.
    pub fn new(service: FileService, len: Vec<u64>, limit: u32) -> OpenSet {
        let n = len.len().max(1);
        OpenSet {
            zipf: match service.kind {
                Service::Zipf(th) => Some(Zipf::new(n as u64, th)),
                _ => None,
            },
            service,
            limit: limit.max(1),
            issued: vec![0; n],
            open: vec![false; n],
            closing: vec![false; n],
            done: vec![false; n],
            inflight: vec![0; n],
            len,
            nr_open: 0,
            nr_done: 0,
            next_file: 0,
            current: None,
            left: 0,
            // Per pick at most: a close and a release per file, one open.
            events: Vec::with_capacity(3 * n + 4),
        }
    }

    fn n(&self) -> usize {
        self.len.len()
    }

    /// Files open now (closing ones with I/O in flight included).
    pub fn open_now(&self) -> u32 {
        self.nr_open
    }

    /// Whether file `i` is open (and not closing).
    pub fn is_open(&self, i: usize) -> bool {
        self.open.get(i).copied().unwrap_or(false) && !self.closing[i]
    }

    /// What happened since the last call, in order (the caller clears it).
    pub fn events(&mut self) -> &mut Vec<FileEvent> {
        &mut self.events
    }

    fn uniform(&self) -> bool {
        matches!(
            self.service.kind,
            Service::RoundRobin | Service::Sequential | Service::Random
        )
    }

    fn do_open(&mut self, f: usize) {
        self.open[f] = true;
        self.closing[f] = false;
        self.nr_open += 1;
        self.events.push(FileEvent::Open(f as u32));
    }

    fn do_close(&mut self, f: usize) {
        if !self.open[f] || self.closing[f] {
            return;
        }
        self.events.push(FileEvent::Close(f as u32));
        self.closing[f] = true;
        if self.inflight[f] == 0 {
            self.release(f);
        }
    }

    fn release(&mut self, f: usize) {
        self.open[f] = false;
        self.closing[f] = false;
        self.nr_open -= 1;
        self.events.push(FileEvent::Release(f as u32));
    }

    /// An I/O of file `f` completed.
    pub fn completed(&mut self, f: usize) {
        if let Some(c) = self.inflight.get_mut(f) {
            *c = c.saturating_sub(1);
            if *c == 0 && self.closing[f] {
                self.release(f);
            }
        }
    }

    /// Close every file still open (the job ends).
    pub fn close_all(&mut self) {
        for f in 0..self.n() {
            self.do_close(f);
        }
    }

    /// The file of the next I/O of `size` bytes; its I/O counts as in
    /// flight until [`completed`](OpenSet::completed).
    pub fn pick(&mut self, rng: &mut Rng, size: u64) -> Result<usize, NoFile> {
        let n = self.n();
        // Each round either issues, closes a done file, or moves on (the
        // roundrobin pointer, a new draw); past this many rounds with
        // nothing closing, a draw takes the first file it may use.
        let bound = 64 * n + 64;
        let mut round = 0;
        loop {
            round += 1;
            if self.nr_done >= n {
                // A new pass (loops, time_based): every file again.
                self.issued.iter_mut().for_each(|b| *b = 0);
                self.done.iter_mut().for_each(|d| *d = false);
                self.nr_done = 0;
                self.next_file = 0;
                self.current = None;
            }
            let found = if round > bound {
                self.first_usable()
            } else {
                self.next_file_of(rng)
            };
            let f = match found {
                Some(Ok(f)) => f,
                Some(Err(NoFile::Busy)) if self.closing.iter().any(|&c| c) => {
                    return Err(NoFile::Busy)
                }
                _ if round > bound + 2 * n => return Err(NoFile::Busy),
                _ => continue,
            };
            if self.issued[f] < self.len[f] {
                self.issued[f] += size;
                self.inflight[f] += 1;
                return Ok(f);
            }
            // fio: the file has no room for the I/O: close it; it is done
            // for the pass (the skewed services start it over).
            self.do_close(f);
            if self.current == Some(f) {
                self.current = None;
            }
            if self.uniform() {
                self.done[f] = true;
                self.nr_done += 1;
            } else {
                self.issued[f] = 0;
            }
        }
    }

    /// The first file not done that is open, or may be opened.
    fn first_usable(&mut self) -> Option<Result<usize, NoFile>> {
        let f = (0..self.n())
            .filter(|&f| !self.done[f] && !self.closing[f])
            .find(|&f| self.open[f])
            .or_else(|| (0..self.n()).find(|&f| !self.done[f] && !self.open[f]))?;
        match self.admit(f) {
            Ok(true) => {
                self.current = Some(f);
                self.left = self.service.nr.max(1) - 1;
                Some(Ok(f))
            }
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// fio's `__get_next_file`: the current file while its picks last,
    /// else the next by the service. None: nothing found this round.
    fn next_file_of(&mut self, rng: &mut Rng) -> Option<Result<usize, NoFile>> {
        if let Some(f) = self.current {
            if self.is_open(f) {
                if self.service.kind == Service::Sequential {
                    return Some(Ok(f));
                }
                if self.left > 0 {
                    self.left -= 1;
                    return Some(Ok(f));
                }
            }
        }
        let r = match self.service.kind {
            Service::RoundRobin | Service::Sequential => self.next_rr(),
            _ => self.next_drawn(rng),
        };
        if let Some(Ok(f)) = r {
            self.current = Some(f);
            self.left = self.service.nr.max(1) - 1;
        }
        r
    }

    /// Open `f` if it is not, when the limit allows.
    fn admit(&mut self, f: usize) -> Result<bool, NoFile> {
        if !self.open[f] {
            if self.nr_open >= self.limit {
                return Err(NoFile::Busy);
            }
            self.do_open(f);
        }
        Ok(!self.closing[f])
    }

    fn next_rr(&mut self) -> Option<Result<usize, NoFile>> {
        let n = self.n();
        let start = self.next_file;
        loop {
            let f = self.next_file;
            self.next_file = (f + 1) % n;
            if !self.done[f] {
                match self.admit(f) {
                    Ok(true) => return Some(Ok(f)),
                    Ok(false) => {}
                    Err(e) => {
                        if self.closing.iter().any(|&c| c) {
                            // Waiting for a closing file's I/O: this file
                            // comes next once it has completed, whenever
                            // that is (fio moves on here, which only shows
                            // when its I/O is slower than its picks).
                            self.next_file = f;
                        }
                        return Some(Err(e));
                    }
                }
            }
            if self.next_file == start {
                return None;
            }
        }
    }

    fn draw(&mut self, rng: &mut Rng) -> usize {
        let n = self.n();
        match self.service.kind {
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
            _ => rng.below(n as u64) as usize,
        }
    }

    fn next_drawn(&mut self, rng: &mut Rng) -> Option<Result<usize, NoFile>> {
        let f = self.draw(rng);
        if self.done[f] {
            return None;
        }
        match self.admit(f) {
            Ok(true) => Some(Ok(f)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::family::OptionFamily;

    fn service(s: &str) -> FileService {
        let mut o = crate::engines::opts::files::FileOptions::default();
        o.set("file_service_type", s).unwrap();
        o.service
    }

    /// Run `ios` 4 KiB picks, each completing at once; the events and
    /// picks as fio's iolog words ("o0", "w0", "c0").
    fn trace(s: &str, files: usize, len: u64, limit: u32, ios: usize) -> Vec<String> {
        let mut set = OpenSet::new(service(s), vec![len; files], limit);
        let mut rng = Rng::new(3);
        let mut out = Vec::new();
        let mut most = 0;
        for _ in 0..ios {
            let f = set.pick(&mut rng, 4096).unwrap();
            most = most.max(set.open_now());
            for e in set.events().drain(..) {
                match e {
                    FileEvent::Open(i) => out.push(format!("o{i}")),
                    FileEvent::Close(i) => out.push(format!("c{i}")),
                    FileEvent::Release(_) => {}
                }
            }
            out.push(format!("w{f}"));
            set.completed(f);
        }
        set.close_all();
        for e in set.events().drain(..) {
            if let FileEvent::Close(i) = e {
                out.push(format!("c{i}"));
            }
        }
        assert!(most <= limit, "{most} open");
        out
    }

    #[test]
    fn roundrobin_serves_the_open_pair_then_the_next_pair_as_fio() {
        // fio 3.33, nrfiles=4 openfiles=2 filesize=8k bs=4k rw=write.
        let t = trace("roundrobin", 4, 8192, 2, 8).join(" ");
        assert_eq!(t, "o0 w0 o1 w1 w0 w1 c0 c1 o2 w2 o3 w3 w2 w3 c2 c3");
    }

    #[test]
    fn sequential_opens_one_file_at_a_time() {
        let t = trace("sequential", 3, 8192, 2, 6).join(" ");
        assert_eq!(t, "o0 w0 w0 c0 o1 w1 w1 c1 o2 w2 w2 c2");
    }

    #[test]
    fn random_never_has_more_open_than_the_limit_and_fills_every_file() {
        let t = trace("random", 8, 16384, 2, 32);
        for f in 0..8 {
            let w = t.iter().filter(|x| **x == format!("w{f}")).count();
            assert_eq!(w, 4, "{t:?}");
            let o = t.iter().filter(|x| **x == format!("o{f}")).count();
            assert_eq!(o, 1, "{t:?}");
        }
    }

    #[test]
    fn a_closed_file_with_io_in_flight_keeps_its_place_until_it_completes() {
        let mut set = OpenSet::new(service("roundrobin"), vec![4096; 3], 1);
        let mut rng = Rng::new(1);
        assert_eq!(set.pick(&mut rng, 4096), Ok(0));
        // File 0 is done but its I/O is in flight: file 1 must wait.
        assert_eq!(set.pick(&mut rng, 4096), Err(NoFile::Busy));
        assert_eq!(
            set.events().drain(..).collect::<Vec<_>>(),
            [FileEvent::Open(0), FileEvent::Close(0)]
        );
        set.completed(0);
        assert_eq!(
            set.events().drain(..).collect::<Vec<_>>(),
            [FileEvent::Release(0)]
        );
        // The file roundrobin came to is next, once it may be opened.
        assert_eq!(set.pick(&mut rng, 4096), Ok(1));
        assert_eq!(
            set.events().drain(..).collect::<Vec<_>>(),
            [FileEvent::Open(1)]
        );
    }
}
