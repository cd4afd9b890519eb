//! Which kernel modules go into the initramfs, and in what order to load them.
//!
//! The guest has no module tooling worth trusting with dependency order, so
//! the host reads `modules.dep` (made by `busybox depmod` in setup.sh) and
//! computes the closure of the modules the harness needs, dependencies
//! first; the guest's init then runs `insmod` down that list.

use std::collections::{HashMap, HashSet};

use crate::error::VmError;

/// Modules every guest loads, by name (as `modinfo` spells it; `-` and `_`
/// are interchangeable). `scsi_debug` is not here: it is loaded only when a
/// run asks for it, with that run's parameters.
pub const BASE_MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_scsi",
    "sd_mod",
    "sg",
    "ahci",
    "nvme",
    "9pnet_virtio",
    "9p",
];

/// `modules.dep`, parsed: module path (relative to the module dir) to the
/// paths of every module it needs.
#[derive(Debug, Clone)]
pub struct ModuleDeps {
    deps: HashMap<String, Vec<String>>,
    by_name: HashMap<String, String>,
}

/// A module's name from its path: `kernel/fs/9p/9p.ko` -> `9p`,
/// `kernel/drivers/nvme/host/nvme-core.ko.xz` -> `nvme_core`.
pub fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

impl ModuleDeps {
    /// Parses the text of `modules.dep` (`path: dep dep …` per line).
    pub fn parse(text: &str) -> Self {
        let mut deps = HashMap::new();
        let mut by_name = HashMap::new();
        for line in text.lines() {
            let Some((module, rest)) = line.split_once(':') else {
                continue;
            };
            let module = module.trim().to_string();
            let list: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
            by_name.insert(module_name(&module), module.clone());
            deps.insert(module, list);
        }
        Self { deps, by_name }
    }

    /// The paths of `wanted` (module names) and everything they need, each
    /// once, every module after all of its dependencies.
    pub fn load_order(&self, wanted: &[&str]) -> Result<Vec<String>, VmError> {
        let mut order = Vec::new();
        let mut done = HashSet::new();
        for name in wanted {
            let key = name.replace('-', "_");
            let path = self
                .by_name
                .get(&key)
                .ok_or_else(|| VmError::ModuleMissing((*name).to_string()))?;
            self.visit(path, &mut done, &mut Vec::new(), &mut order)?;
        }
        Ok(order)
    }

    fn visit(
        &self,
        path: &str,
        done: &mut HashSet<String>,
        stack: &mut Vec<String>,
        order: &mut Vec<String>,
    ) -> Result<(), VmError> {
        if done.contains(path) {
            return Ok(());
        }
        if stack.iter().any(|p| p == path) {
            return Err(VmError::ModuleCycle(path.to_string()));
        }
        let deps = self
            .deps
            .get(path)
            .ok_or_else(|| VmError::ModuleMissing(path.to_string()))?;
        stack.push(path.to_string());
        for d in deps {
            self.visit(d, done, stack, order)?;
        }
        stack.pop();
        done.insert(path.to_string());
        order.push(path.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as Debian 12's 6.1 kernel has them (busybox depmod output),
    // deliberately listing deps in an order that is not load order.
    const DEP: &str = "\
kernel/drivers/scsi/sd_mod.ko: kernel/drivers/scsi/scsi_mod.ko kernel/drivers/scsi/scsi_common.ko kernel/block/t10-pi.ko kernel/lib/crc-t10dif.ko kernel/crypto/crct10dif_common.ko
kernel/drivers/scsi/scsi_mod.ko: kernel/drivers/scsi/scsi_common.ko
kernel/drivers/scsi/scsi_common.ko:
kernel/block/t10-pi.ko: kernel/lib/crc-t10dif.ko kernel/crypto/crct10dif_common.ko
kernel/lib/crc-t10dif.ko: kernel/crypto/crct10dif_common.ko
kernel/crypto/crct10dif_common.ko:
kernel/drivers/nvme/host/nvme.ko: kernel/drivers/nvme/host/nvme-core.ko kernel/block/t10-pi.ko
kernel/drivers/nvme/host/nvme-core.ko: kernel/block/t10-pi.ko
";

    #[test]
    fn names_fold_dashes_and_drop_suffixes() {
        assert_eq!(
            module_name("kernel/drivers/nvme/host/nvme-core.ko"),
            "nvme_core"
        );
        assert_eq!(module_name("kernel/fs/9p/9p.ko.xz"), "9p");
    }

    #[test]
    fn every_module_comes_after_its_dependencies() {
        let deps = ModuleDeps::parse(DEP);
        let order = deps.load_order(&["sd_mod", "nvme"]).unwrap();
        let pos = |p: &str| order.iter().position(|o| o == p).unwrap();
        // Check against the dependency table itself, line by line.
        for line in DEP.lines() {
            let (m, rest) = line.split_once(':').unwrap();
            if !order.iter().any(|o| o == m) {
                continue;
            }
            for d in rest.split_whitespace() {
                assert!(pos(d) < pos(m), "{d} must load before {m}: {order:?}");
            }
        }
        // Closure: sd_mod(1) + its 5 deps + nvme + nvme-core = 8 distinct.
        assert_eq!(order.len(), 8);
        let unique: HashSet<_> = order.iter().collect();
        assert_eq!(unique.len(), order.len(), "no module listed twice");
    }

    #[test]
    fn unknown_module_is_an_error_naming_it() {
        let deps = ModuleDeps::parse(DEP);
        let err = deps.load_order(&["ahci"]).unwrap_err();
        assert!(err.to_string().contains("ahci"), "{err}");
    }
}
