//! I/O priorities, as fio 3.33 sets them: the job thread's own priority
//! (`prio`, `prioclass`, by `ioprio_set`) and a priority per I/O in its
//! io_uring submission entry (`cmdprio_percentage` with `cmdprio_class`
//! and `cmdprio`, or `cmdprio_bssplit`), per direction. An I/O not picked
//! for a command priority goes with the thread's. Latency is kept per
//! priority value, and reported as fio's `prios` array when a direction
//! saw two or more.

use crate::spec::decl::{opt, OptionDecl};
use drivelab_engine::sched::ioprio_value;
use drivelab_stats::{LatencyHistogram, Welford};

use crate::SpecError;

/// One `cmdprio_bssplit` entry: I/Os of `bs` bytes, `perc` percent of
/// them with the priority (class, level), or with `cmdprio_class` and
/// `cmdprio` when not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BsPrio {
    /// Block size, bytes.
    pub bs: u64,
    /// Percent of that size's I/Os.
    pub perc: u8,
    /// (class, level), None: the cmdprio_class/cmdprio of the direction.
    pub prio: Option<(u8, u8)>,
}

/// The priority options of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrioOpts {
    /// `prio`: the thread's level.
    pub prio: Option<u8>,
    /// `prioclass`: the thread's class.
    pub prioclass: Option<u8>,
    /// `cmdprio_percentage` per direction (read, write).
    pub cmd_pct: [u8; 2],
    /// `cmdprio_class` per direction; default 1 (realtime).
    pub cmd_class: [u8; 2],
    /// `cmdprio` per direction; default 0.
    pub cmd_level: [u8; 2],
    /// `cmdprio_bssplit` per direction.
    pub bssplit: Option<[Vec<BsPrio>; 2]>,
    /// `nice`: added to the thread's nice value (0: unchanged).
    pub nice: i32,
}

impl Default for PrioOpts {
    fn default() -> Self {
        PrioOpts {
            prio: None,
            prioclass: None,
            cmd_pct: [0, 0],
            cmd_class: [1, 1],
            cmd_level: [0, 0],
            bssplit: None,
            nice: 0,
        }
    }
}

fn bad(key: &str, v: &str, expect: &str) -> SpecError {
    SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: expect.to_string(),
    }
}

fn num(key: &str, v: &str, whole: &str, min: u8, max: u8, expect: &str) -> Result<u8, SpecError> {
    match v.trim().parse::<u8>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(bad(key, whole, expect)),
    }
}

impl PrioOpts {
    /// Set one of `cmdprio_percentage`, `cmdprio_class`, `cmdprio`,
    /// `cmdprio_bssplit` (READ,WRITE per direction).
    pub fn set_cmd(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        if key == "cmdprio_bssplit" {
            return self.set_bssplit(key, v);
        }
        let (min, max, expect) = match key {
            "cmdprio_percentage" => (0, 100, "a percentage 0-100 (READ,WRITE per direction)"),
            "cmdprio_class" => (
                1,
                3,
                "a class 1-3: 1 realtime, 2 best-effort, 3 idle (READ,WRITE)",
            ),
            _ => (0, 7, "a level 0-7 (READ,WRITE per direction)"),
        };
        let dirs = crate::spec::value::per_direction(v);
        for (k, d) in dirs.iter().take(2).enumerate() {
            let Some(d) = d else { continue };
            let n = num(key, d, v, min, max, expect)?;
            match key {
                "cmdprio_percentage" => self.cmd_pct[k] = n,
                "cmdprio_class" => self.cmd_class[k] = n,
                _ => self.cmd_level[k] = n,
            }
        }
        Ok(())
    }

    fn set_bssplit(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        let expect = "BS/PERCENT[/CLASS/LEVEL[/HINT]] entries separated by ':', READ,WRITE per direction, e.g. 64k/40:1m/60/1/0,1m/100";
        let dirs = crate::spec::value::per_direction(v);
        let mut out: [Vec<BsPrio>; 2] = [Vec::new(), Vec::new()];
        for (k, d) in dirs.iter().take(2).enumerate() {
            let Some(d) = d else { continue };
            for e in d.split(':').map(str::trim).filter(|e| !e.is_empty()) {
                let f: Vec<&str> = e.split('/').collect();
                let (bs, perc, prio) = match f.as_slice() {
                    // fio 3.33: "bs/" is 0 percent.
                    [bs, ""] => (bs, &"0", None),
                    [bs, p] => (bs, p, None),
                    // A fifth field (a later fio's priority hint) is read
                    // past, as fio 3.33 does.
                    [bs, p, c, l] | [bs, p, c, l, _] => (
                        bs,
                        p,
                        Some((num(key, c, v, 0, 3, expect)?, num(key, l, v, 0, 7, expect)?)),
                    ),
                    _ => return Err(bad(key, v, expect)),
                };
                let bs =
                    crate::spec::size::parse_bytes(key, bs).map_err(|_| bad(key, v, expect))?;
                let perc = num(key, perc, v, 0, 100, expect)?;
                out[k].push(BsPrio { bs, perc, prio });
            }
            let mut sizes: Vec<u64> = out[k].iter().map(|e| e.bs).collect();
            sizes.dedup();
            for s in sizes {
                let tot: u32 = out[k]
                    .iter()
                    .filter(|e| e.bs == s)
                    .map(|e| u32::from(e.perc))
                    .sum();
                if tot > 100 {
                    return Err(bad(
                        key,
                        v,
                        &format!("percentages that add up to at most 100 for each size ({s} bytes adds up to {tot})"),
                    ));
                }
            }
        }
        self.bssplit = Some(out);
        Ok(())
    }

    /// The thread's ioprio value when `prio` or `prioclass` is set.
    pub fn thread_ioprio(&self) -> Option<u16> {
        if self.prio.is_none() && self.prioclass.is_none() {
            return None;
        }
        Some(ioprio_value(
            self.prioclass.unwrap_or(0),
            self.prio.unwrap_or(0),
        ))
    }

    /// Whether any I/O gets a command priority.
    pub fn has_cmdprio(&self) -> bool {
        self.bssplit.is_some() || self.cmd_pct != [0, 0]
    }
}

/// Set up the job's thread as fio does before its engine: NUMA placement
/// (`numa_cpu_nodes`, `numa_mem_policy`), the thread's nice value (`nice`),
/// then its I/O priority (`prio`, `prioclass`).
pub fn set_up_thread(spec: &crate::JobSpec) -> Result<(), String> {
    if spec.numa.is_set() {
        spec.numa.apply()?;
    }
    if spec.prio.nice != 0 {
        drivelab_engine::sched::add_thread_nice(spec.prio.nice)
            .map_err(|e| format!("nice: setpriority failed: {e}"))?;
    }
    if let Some(v) = spec.prio.thread_ioprio() {
        drivelab_engine::sched::set_thread_ioprio(v)
            .map_err(|e| format!("prio/prioclass: ioprio_set failed: {e}"))?;
    }
    Ok(())
}

/// One block size's priorities: (size, [(cumulative percent, ioprio)]).
type BsChoices = (u64, Vec<(u32, u16)>);

/// A job's per-I/O priority picker (fio's cmdprio), with its own random
/// numbers so the offsets stay those of the job's seed.
#[derive(Debug, Clone)]
pub struct CmdPrio {
    default: u16,
    /// Per direction: (percent, ioprio) when by percentage.
    perc: [(u8, u16); 2],
    /// Per direction: per block size, its (cumulative percent, ioprio).
    bs: Option<[Vec<BsChoices>; 2]>,
    rng: u64,
}

impl CmdPrio {
    /// The picker of a job with command priorities (None without).
    /// `default`: the thread's ioprio value (0 when not set).
    pub fn new(o: &PrioOpts, seed: u64) -> Option<CmdPrio> {
        if !o.has_cmdprio() {
            return None;
        }
        let default = o.thread_ioprio().unwrap_or(0);
        let dir_prio = |k: usize| ioprio_value(o.cmd_class[k], o.cmd_level[k]);
        let bs = o.bssplit.as_ref().map(|b| {
            std::array::from_fn(|k| {
                let mut by: Vec<BsChoices> = Vec::new();
                for e in b[k].iter().filter(|e| e.perc > 0) {
                    let p = e
                        .prio
                        .map_or_else(|| dir_prio(k), |(c, l)| ioprio_value(c, l));
                    match by.iter_mut().find(|(s, _)| *s == e.bs) {
                        Some((_, v)) => {
                            let cum = v.last().map_or(0, |x| x.0) + u32::from(e.perc);
                            v.push((cum, p));
                        }
                        None => by.push((e.bs, vec![(u32::from(e.perc), p)])),
                    }
                }
                by
            })
        });
        Some(CmdPrio {
            default,
            perc: std::array::from_fn(|k| (o.cmd_pct[k], dir_prio(k))),
            bs,
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
        })
    }

    fn rand100(&mut self) -> u32 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        ((x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) % 100) as u32
    }

    /// The ioprio value of an I/O of direction `dir` (0 read, 1 write,
    /// else none) and `len` bytes.
    #[inline]
    pub fn pick(&mut self, dir: usize, len: u32) -> u16 {
        if dir > 1 {
            return self.default;
        }
        if let Some(bs) = &self.bs {
            let Some(i) = bs[dir].iter().position(|(s, _)| *s == u64::from(len)) else {
                return self.default;
            };
            let total = bs[dir][i].1.last().map_or(0, |x| x.0);
            if total == 0 {
                return self.default;
            }
            let r = self.rand100();
            let v = match &self.bs {
                Some(b) => &b[dir][i].1,
                None => return self.default,
            };
            return v
                .iter()
                .find(|(cum, _)| r < *cum)
                .map_or(self.default, |x| x.1);
        }
        let (p, prio) = self.perc[dir];
        if p == 0 || self.rand100() >= u32::from(p) {
            return self.default;
        }
        prio
    }

    /// The thread's ioprio value, which unpicked I/Os carry.
    pub fn default_prio(&self) -> u16 {
        self.default
    }
}

/// Latency of one direction's I/Os of one priority.
#[derive(Debug, Clone)]
pub struct PrioStat {
    /// The ioprio value (class << 13 | level).
    pub ioprio: u16,
    /// Latency histogram, ns.
    pub lat: LatencyHistogram,
    /// Running moments, ns.
    pub moments: Welford,
}

/// Record `lat` under `ioprio` in `v`.
#[inline]
pub fn record(v: &mut Vec<PrioStat>, ioprio: u16, lat: u64) {
    let i = match v.iter().position(|p| p.ioprio == ioprio) {
        Some(i) => i,
        None => {
            v.push(PrioStat {
                ioprio,
                lat: LatencyHistogram::new(),
                moments: Welford::new(),
            });
            v.len() - 1
        }
    };
    v[i].lat.record(lat);
    v[i].moments.record(lat as f64);
}

/// Add `o`'s per-priority latency to `v`.
pub fn merge(v: &mut Vec<PrioStat>, o: &[PrioStat]) {
    for p in o {
        match v.iter_mut().find(|x| x.ioprio == p.ioprio) {
            Some(x) => {
                x.lat.merge(&p.lat);
                x.moments.merge(&p.moments);
            }
            None => v.push(p.clone()),
        }
    }
}

impl PrioOpts {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "nice",
            [],
            Int,
            "0",
            "add this to the job thread's nice value (-20 to 19, as nice(2); lowering it needs root)"
        ),
        opt!(
            "prio",
            [],
            Int,
            "",
            "I/O priority level of the job's thread (ioprio_set; 0 is highest); class best-effort unless prioclass says otherwise",
            0,
            7,
            ""
        ),
        opt!(
            "prioclass",
            [],
            Int,
            "",
            "I/O priority class of the job's thread (ioprio_set): 1 realtime, 2 best-effort, 3 idle (0: best-effort)",
            0,
            3,
            ""
        ),
        opt!(
            "cmdprio_percentage",
            [],
            Text,
            "0",
            "percent of I/Os (READ,WRITE per direction) issued with the priority cmdprio_class/cmdprio in their io_uring submission entry"
        ),
        opt!(
            "cmdprio_class",
            [],
            Text,
            "1",
            "priority class of cmdprio_percentage's I/Os (READ,WRITE): 1 realtime, 2 best-effort, 3 idle"
        ),
        opt!(
            "cmdprio",
            [],
            Text,
            "0",
            "priority level 0-7 of cmdprio_percentage's I/Os (READ,WRITE)"
        ),
        opt!(
            "cmdprio_bssplit",
            [],
            Text,
            "",
            "per block size, the percent of I/Os with a priority: BS/PCT[/CLASS/LEVEL]:… (READ,WRITE); without CLASS/LEVEL, cmdprio_class and cmdprio; a fifth field (a priority hint) is read past, as fio 3.33 does"
        ),
    ];
}

impl crate::spec::family::OptionFamily for PrioOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        match key {
            "nice" => {
                let bad = || SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect: "a whole number from -20 to 19".to_string(),
                };
                let n: i32 = v.trim().parse().map_err(|_| bad())?;
                if !(-20..=19).contains(&n) {
                    return Err(bad());
                }
                self.nice = n;
            }
            "prio" => self.prio = Some(crate::spec::decl::parse_in(Self::OPTIONS, key, v)? as u8),
            "prioclass" => {
                self.prioclass = Some(crate::spec::decl::parse_in(Self::OPTIONS, key, v)? as u8)
            }
            _ => self.set_cmd(key, v)?,
        }
        Ok(())
    }

    /// Checks between options (fio's): percentage and bssplit exclude
    /// each other.
    fn check(&self) -> Result<(), SpecError> {
        if self.bssplit.is_some() && self.cmd_pct != [0, 0] {
            return Err(SpecError::Invalid(
                "cmdprio_percentage and cmdprio_bssplit exclude each other: give one".to_string(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> PrioOpts {
        let mut o = PrioOpts::default();
        for (k, v) in kv {
            o.set_cmd(k, v).unwrap();
        }
        o
    }

    #[test]
    fn nice_adds_to_the_job_threads_nice_value() {
        let mut spec = crate::JobSpec::default();
        spec.set("nice", Some("5")).unwrap();
        assert!(spec.set("nice", Some("20")).is_err());
        let read = || drivelab_engine::sched::thread_nice().unwrap();
        let (before, after) = std::thread::spawn(move || {
            let before = read();
            set_up_thread(&spec).unwrap();
            (before, read())
        })
        .join()
        .unwrap();
        assert_eq!(after, (before + 5).min(19));
    }

    #[test]
    fn percentage_picks_about_that_share() {
        let o = opts(&[("cmdprio_percentage", "20"), ("cmdprio_class", "1")]);
        let mut c = CmdPrio::new(&o, 1).unwrap();
        let n = 10_000;
        let hi = (0..n).filter(|_| c.pick(0, 4096) == 1 << 13).count();
        assert!((1700..2300).contains(&hi), "{hi}");
        // Not picked: the thread's priority (none set: 0).
        assert_eq!(c.default_prio(), 0);
    }

    #[test]
    fn bssplit_picks_by_size_and_share() {
        let mut o = opts(&[("cmdprio_bssplit", "64k/25/1/1:64k/75/3/2:1m/0,1m/0")]);
        o.prio = Some(7);
        o.prioclass = Some(2);
        let mut c = CmdPrio::new(&o, 7).unwrap();
        let mut rt = 0;
        let mut idle = 0;
        for _ in 0..4000 {
            match c.pick(0, 65536) {
                p if p == (1 << 13) | 1 => rt += 1,
                p if p == (3 << 13) | 2 => idle += 1,
                p => panic!("{p}"),
            }
        }
        assert!((800..1200).contains(&rt), "{rt}");
        assert_eq!(rt + idle, 4000);
        // 1 MiB I/Os and writes: the thread's priority.
        assert_eq!(c.pick(0, 1 << 20), (2 << 13) | 7);
        assert_eq!(c.pick(1, 1 << 20), (2 << 13) | 7);
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut o = PrioOpts::default();
        for (k, v) in [
            ("cmdprio_percentage", "101"),
            ("cmdprio_class", "0"),
            ("cmdprio", "8"),
            ("cmdprio_bssplit", "64k/60:64k/50"),
            ("cmdprio_bssplit", "64k"),
        ] {
            let e = o.set_cmd(k, v).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
    }
}
