//! fio's CPU placement of a job's thread: `cpus_allowed` (a CPU list),
//! `cpumask` (the same as a bit mask) and `cpus_allowed_policy` (`shared`:
//! the thread may run on every CPU of the set; `split`: each job gets one
//! CPU of it, by its number in the run, as fio's `thread_number`). Set on
//! the job's thread before its engine and buffers, with the NUMA
//! placement ([`crate::job::numa`]).

use crate::job::numa::parse_list;
use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::SpecError;

/// The CPU placement family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuOpts {
    /// The CPUs the job may run on (`cpus_allowed`, `cpumask`); None: any.
    pub cpus: Option<Vec<usize>>,
    /// `cpus_allowed_policy=split`: one CPU of the set per job.
    pub split: bool,
}

/// The CPUs online (`/sys/devices/system/cpu/online`).
fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_list(s.trim()))
        .map(|l| l.into_iter().map(|c| c as usize).collect())
        .unwrap_or_else(|| vec![0])
}

impl CpuOpts {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "cpus_allowed",
            [],
            Text,
            "all",
            "run the job's thread only on these CPUs (0-3,6); every CPU must be online"
        ),
        opt!(
            "cpumask",
            [],
            Text,
            "all",
            "the same as a bit mask: bit N allows CPU N (decimal or 0x hex)"
        ),
        opt!(
            "cpus_allowed_policy",
            [],
            Text,
            "shared",
            "shared: the job may run on every CPU of the set; split: each job gets one CPU of it (the job's number in the run, modulo the set)"
        ),
    ];

    /// The CPUs of job number `number` (from 1) under the policy.
    pub fn cpus_of(&self, number: usize) -> Option<Vec<usize>> {
        let cpus = self.cpus.as_ref()?;
        if self.split && !cpus.is_empty() {
            return Some(vec![cpus[(number.max(1) - 1) % cpus.len()]]);
        }
        Some(cpus.clone())
    }

    /// Place the calling thread (job number `number`, from 1).
    pub fn apply(&self, number: usize) -> Result<(), String> {
        match self.cpus_of(number) {
            Some(cpus) => drivelab_engine::sched::set_thread_cpus(&cpus)
                .map_err(|e| format!("cpus_allowed: sched_setaffinity failed: {e}")),
            None => Ok(()),
        }
    }
}

/// A CPU set checked against the CPUs online.
fn checked(key: &str, v: &str, cpus: Vec<usize>) -> Result<Vec<usize>, SpecError> {
    let online = online_cpus();
    match cpus.iter().find(|c| !online.contains(c)) {
        Some(c) => Err(SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: format!("online CPUs only (CPU {c} is not; online: {online:?})"),
        }),
        None => Ok(cpus),
    }
}

impl OptionFamily for CpuOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let bad = |expect: &str| SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: expect.to_string(),
        };
        let t = v.trim();
        match key {
            "cpus_allowed" => {
                let l = parse_list(t).ok_or_else(|| bad("a CPU list such as 0-3,6"))?;
                let l = l.into_iter().map(|c| c as usize).collect();
                self.cpus = Some(checked(key, v, l)?);
            }
            "cpumask" => {
                let mask = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => t.parse::<u64>(),
                }
                .ok()
                .filter(|&m| m != 0)
                .ok_or_else(|| bad("a non-zero CPU bit mask, decimal or 0x hex"))?;
                let l = (0..64).filter(|b| mask & (1 << b) != 0).collect();
                self.cpus = Some(checked(key, v, l)?);
            }
            _ => {
                self.split = match t {
                    "shared" => false,
                    "split" => true,
                    _ => return Err(bad("shared or split")),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_sets_parse_and_split_by_job_number() {
        let mut c = CpuOpts::default();
        c.set("cpus_allowed", "0").unwrap();
        assert_eq!(c.cpus_of(3), Some(vec![0]));
        c.set("cpumask", "0x1").unwrap();
        assert_eq!(c.cpus, Some(vec![0]));
        assert!(c.set("cpus_allowed", "100000").is_err());
        assert!(c.set("cpumask", "0").is_err());
        assert!(c.set("cpus_allowed_policy", "spread").is_err());
        let set = CpuOpts {
            cpus: Some(vec![2, 5, 7]),
            split: true,
        };
        assert_eq!(set.cpus_of(1), Some(vec![2]));
        assert_eq!(set.cpus_of(4), Some(vec![2]));
        assert_eq!(set.cpus_of(3), Some(vec![7]));
    }

    #[test]
    fn the_thread_runs_only_on_the_allowed_cpu() {
        let c = CpuOpts {
            cpus: Some(vec![0]),
            split: false,
        };
        let got = std::thread::spawn(move || {
            c.apply(1).unwrap();
            drivelab_engine::sched::thread_cpus().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(got, vec![0]);
    }
}
