//! fio's `numa_cpu_nodes` and `numa_mem_policy`: the job's thread runs on
//! the CPUs of the given NUMA nodes (read from
//! `/sys/devices/system/node/nodeN/cpulist`) and allocates memory by the
//! given policy (`set_mempolicy`), set on the thread before its engine and
//! buffers are made. Node lists are checked against the machine when the
//! option is read, as fio does: a node that does not exist is an error.

use crate::spec::decl::{opt, OptionDecl};
use drivelab_engine::sched::{self, MemPolicy};

use crate::SpecError;

const NODES: &str = "/sys/devices/system/node";

/// The NUMA options of a job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumaOpts {
    /// `numa_cpu_nodes`: the nodes whose CPUs the thread runs on.
    pub cpu_nodes: Option<Vec<u32>>,
    /// `numa_mem_policy`: the policy and its nodes.
    pub mem: Option<(MemPolicy, Vec<u32>)>,
}

/// The machine's NUMA nodes (`/sys/devices/system/node/online`).
pub fn online_nodes() -> Vec<u32> {
    std::fs::read_to_string(format!("{NODES}/online"))
        .ok()
        .and_then(|s| parse_list(s.trim()))
        .unwrap_or_else(|| vec![0])
}

/// A kernel list such as `0-3,8,10-11`.
pub fn parse_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b - a > 4096 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A node list as fio takes it (`all`, `0`, `0-1`, `0,2`), every node
/// checked against `online`.
pub fn parse_nodes(key: &str, v: &str, online: &[u32]) -> Result<Vec<u32>, SpecError> {
    let t = v.trim();
    let nodes = if t == "all" {
        online.to_vec()
    } else {
        parse_list(t).ok_or_else(|| SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: "NUMA nodes such as 0, 0-1, 0,2 or all".to_string(),
        })?
    };
    if let Some(n) = nodes.iter().find(|n| !online.contains(n)) {
        return Err(SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: format!(
                "nodes this machine has (node {n} does not exist; online: {})",
                list_text(online)
            ),
        });
    }
    Ok(nodes)
}

fn list_text(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// fio's `numa_mem_policy`: `default`, `local`, `prefer:N`, `bind:NODES`,
/// `interleave:NODES`.
pub fn parse_mem_policy(
    key: &str,
    v: &str,
    online: &[u32],
) -> Result<(MemPolicy, Vec<u32>), SpecError> {
    let expect = || SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: "default, local, prefer:NODE, bind:NODES or interleave:NODES".to_string(),
    };
    let (mode, nodes) = match v.trim().split_once(':') {
        Some((m, n)) => (m.trim(), Some(n)),
        None => (v.trim(), None),
    };
    let policy = match mode {
        "default" => MemPolicy::Default,
        "local" => MemPolicy::Local,
        "prefer" => MemPolicy::Preferred,
        "bind" => MemPolicy::Bind,
        "interleave" => MemPolicy::Interleave,
        _ => return Err(expect()),
    };
    match (policy, nodes) {
        (MemPolicy::Default | MemPolicy::Local, None) => Ok((policy, Vec::new())),
        (MemPolicy::Default | MemPolicy::Local, Some(_)) => Err(expect()),
        (_, None) => Err(expect()),
        (MemPolicy::Preferred, Some(n)) => {
            let nodes = parse_nodes(key, n, online)?;
            if nodes.len() != 1 {
                return Err(expect());
            }
            Ok((policy, nodes))
        }
        (_, Some(n)) => Ok((policy, parse_nodes(key, n, online)?)),
    }
}

/// The CPUs of `nodes`.
pub fn node_cpus(nodes: &[u32]) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for n in nodes {
        let path = format!("{NODES}/node{n}/cpulist");
        let s = std::fs::read_to_string(&path)
            .map_err(|e| format!("numa_cpu_nodes: cannot read {path}: {e}"))?;
        // A node without CPUs (memory only) adds none.
        if let Some(l) = parse_list(s.trim()) {
            cpus.extend(l.into_iter().map(|c| c as usize));
        }
    }
    if cpus.is_empty() {
        return Err(format!(
            "numa_cpu_nodes: nodes {} have no CPUs",
            list_text(nodes)
        ));
    }
    Ok(cpus)
}

impl NumaOpts {
    /// Place the calling thread (the job's, before it sets up).
    pub fn apply(&self) -> Result<(), String> {
        if let Some(nodes) = &self.cpu_nodes {
            let cpus = node_cpus(nodes)?;
            sched::set_thread_cpus(&cpus)
                .map_err(|e| format!("numa_cpu_nodes: sched_setaffinity failed: {e}"))?;
        }
        if let Some((policy, nodes)) = &self.mem {
            sched::set_thread_mempolicy(*policy, nodes)
                .map_err(|e| format!("numa_mem_policy: set_mempolicy failed: {e}"))?;
        }
        Ok(())
    }

    /// Whether anything is set.
    pub fn is_set(&self) -> bool {
        self.cpu_nodes.is_some() || self.mem.is_some()
    }
}

impl NumaOpts {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "numa_cpu_nodes",
            [],
            Text,
            "",
            "run the job's thread on the CPUs of these NUMA nodes (0, 0-1, 0,2; all)"
        ),
        opt!(
            "numa_mem_policy",
            [],
            Text,
            "",
            "NUMA memory policy of the job's thread: default, prefer:NODE, bind:NODES, interleave:NODES, local"
        ),
    ];
}

impl crate::spec::family::OptionFamily for NumaOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let online = online_nodes();
        if key == "numa_cpu_nodes" {
            self.cpu_nodes = Some(parse_nodes(key, v, &online)?);
        } else {
            self.mem = Some(parse_mem_policy(key, v, &online)?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lists_parse_and_are_checked() {
        let online = [0, 1];
        assert_eq!(parse_nodes("k", "0-1", &online).unwrap(), vec![0, 1]);
        assert_eq!(parse_nodes("k", "all", &online).unwrap(), vec![0, 1]);
        let e = parse_nodes("numa_cpu_nodes", "0-2", &online)
            .unwrap_err()
            .to_string();
        assert!(e.contains("numa_cpu_nodes") && e.contains("node 2"), "{e}");
        assert!(parse_nodes("k", "x", &online).is_err());
        assert_eq!(
            parse_mem_policy("k", "interleave:0-1", &online).unwrap(),
            (MemPolicy::Interleave, vec![0, 1])
        );
        assert_eq!(
            parse_mem_policy("k", "local", &online).unwrap(),
            (MemPolicy::Local, vec![])
        );
        assert!(parse_mem_policy("k", "prefer:0-1", &online).is_err());
        assert!(parse_mem_policy("k", "bind", &online).is_err());
    }

    #[test]
    fn the_thread_runs_on_its_nodes_cpus() {
        let online = online_nodes();
        let o = NumaOpts {
            cpu_nodes: Some(vec![online[0]]),
            mem: Some((MemPolicy::Bind, vec![online[0]])),
        };
        let want = node_cpus(&[online[0]]).unwrap();
        let (cpus, pol) = std::thread::spawn(move || {
            o.apply().unwrap();
            (
                sched::thread_cpus().unwrap(),
                sched::thread_mempolicy().unwrap(),
            )
        })
        .join()
        .unwrap();
        assert_eq!(cpus, want);
        assert_eq!(pol, (2, vec![online[0]]));
    }
}
