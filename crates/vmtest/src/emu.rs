//! What the VM tests of the drive emulators (crates/tcmuemu, crates/nvmeemu)
//! share: a boot with both emulators in the guest and their kernel modules,
//! and reading back what a guest script kept: a file's text, a command's
//! stderr lines, the security commands a SATA emulator's state records.

use std::time::Duration;

use serde_json::Value;

use crate::drivelab_bin::static_package_binary;
use crate::vm::{GuestRun, Vm};

/// Boot with both emulators and drivelab in the guest (target_core_user,
/// tcm_loop and nvme_tcp loaded) and run `script`, for at most `timeout`.
pub fn boot(script: &str, timeout: Duration) -> GuestRun {
    boot_with_tools(script, timeout, &[])
}

/// [`boot`], with these host programs (peers such as smartctl and
/// nvme-cli) copied into the guest.
pub fn boot_with_tools(script: &str, timeout: Duration, tools: &[&str]) -> GuestRun {
    let tcmu = static_package_binary("drivelab-tcmuemu", "drivelab-tcmuemu")
        .unwrap_or_else(|e| panic!("cannot build the SATA emulator for the guest: {e}"));
    let nvme = static_package_binary("drivelab-nvmeemu", "drivelab-nvmeemu")
        .unwrap_or_else(|e| panic!("cannot build the NVMe emulator for the guest: {e}"));
    let mut vm = Vm::builder()
        .modules(&["target_core_user", "tcm_loop", "nvme_tcp"])
        .binary("drivelab-tcmuemu", &tcmu)
        .binary("drivelab-nvmeemu", &nvme);
    for t in tools {
        vm = vm.host_tool(t);
    }
    vm.with_drivelab()
        .guest_script(script)
        .timeout(timeout)
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"))
}

/// A result file's text, trimmed (empty when missing).
pub fn text(run: &GuestRun, name: &str) -> String {
    run.file(name).unwrap_or_default().trim().to_string()
}

/// A `run_json` (or `bg`) command's stderr lines, blank ones left out.
pub fn err_lines(run: &GuestRun, name: &str) -> Vec<String> {
    run.outcome(name)
        .2
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

/// The ATA commands a SATA emulator's state says it received, by name, in
/// order.
pub fn ata_sent(state: &Value) -> Vec<String> {
    state["ata"]["commands"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The security commands among them.
pub fn security(state: &Value) -> Vec<String> {
    ata_sent(state)
        .into_iter()
        .filter(|c| c.starts_with("SECURITY"))
        .collect()
}
