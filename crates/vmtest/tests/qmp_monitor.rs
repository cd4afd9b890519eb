//! The QMP client (crates/vmtest/src/qmp.rs) against a real QEMU, started
//! paused (`-S`, no guest: a second or so): the handshake, a command's
//! return, QMP's refusal as a typed error with its class, a device
//! deleted and its `DEVICE_DELETED` event awaited, an event that never
//! comes timing out, and a monitor that is not there. Needs QEMU:
//! `bash tests/vm/setup.sh`.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use drivelab_testkit::TempDir;
use drivelab_vmtest::host::Host;
use drivelab_vmtest::qmp::{Qmp, QmpError};
use serde_json::{json, Value};

/// A paused QEMU with a virtio-scsi controller and its monitor at `sock`;
/// killed (by its handle) on drop.
struct Paused(Child);

impl Paused {
    fn start(sock: &std::path::Path) -> Paused {
        let host = Host::discover().expect("QEMU and the kernel cache (bash tests/vm/setup.sh)");
        let child = Command::new(&host.qemu)
            .args([
                "-machine",
                "q35,accel=tcg",
                "-nodefaults",
                "-no-user-config",
            ])
            .args(["-display", "none", "-S"])
            .args(["-device", "virtio-scsi-pci,id=scsi0"])
            .arg("-qmp")
            .arg(format!("unix:{},server=on,wait=off", sock.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start QEMU");
        Paused(child)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn the_monitor_adds_refuses_and_deletes_as_qemu_says() {
    let dir = TempDir::new("qmp");
    let sock = dir.join("qmp.sock");
    let img = dir.join("d.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(1 << 20))
        .expect("make an image");
    let _qemu = Paused::start(&sock);
    let mut q = Qmp::connect(&sock, WAIT, WAIT).expect("connect and handshake");

    let status = q.execute("query-status", json!({})).expect("query-status");
    assert_eq!(status["status"], "prelaunch", "{status}");

    // QEMU's refusal is typed, with QMP's class and description.
    match q.execute(
        "device_add",
        json!({"driver": "nvme", "id": "n0", "bus": "pcie.0", "serial": "N0"}),
    ) {
        Err(QmpError::Command {
            command,
            class,
            desc,
        }) => {
            assert_eq!(command, "device_add");
            assert_eq!(class, "GenericError");
            assert!(desc.contains("hotplug"), "{desc}");
        }
        other => panic!("a hot-plug on the root bus must be refused: {other:?}"),
    }
    match q.execute("device_del", json!({"id": "nothing-here"})) {
        Err(QmpError::Command { class, .. }) => assert_eq!(class, "DeviceNotFound"),
        other => panic!("deleting a device that is not there: {other:?}"),
    }

    // A disk added and deleted: DEVICE_DELETED names it.
    q.execute(
        "blockdev-add",
        json!({"node-name": "r0", "driver": "raw",
               "file": {"driver": "file", "filename": img.display().to_string()}}),
    )
    .expect("blockdev-add");
    q.execute(
        "device_add",
        json!({"driver": "scsi-hd", "id": "hd0", "bus": "scsi0.0", "drive": "r0", "serial": "S0"}),
    )
    .expect("device_add scsi-hd");
    let devices = q
        .execute("qom-list", json!({"path": "/machine/peripheral"}))
        .expect("qom-list");
    let names: Vec<&str> = devices
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(names.contains(&"hd0"), "{devices}");
    q.execute("device_del", json!({"id": "hd0"}))
        .expect("device_del");
    let ev = q
        .wait_event(
            "DEVICE_DELETED",
            |d| d["device"] == "hd0",
            Duration::from_secs(60),
        )
        .expect("DEVICE_DELETED for hd0");
    assert_eq!(ev["data"]["device"], "hd0", "{ev}");
    q.execute("blockdev-del", json!({"node-name": "r0"}))
        .expect("blockdev-del after the device went");

    // An event that never comes is a timeout, not a hang.
    match q.wait_event(
        "DEVICE_DELETED",
        |d| d["device"] == "never",
        Duration::from_secs(1),
    ) {
        Err(QmpError::Timeout { what, secs }) => {
            assert!(what.contains("DEVICE_DELETED"), "{what}");
            assert_eq!(secs, 1);
        }
        other => panic!("{other:?}"),
    }

    // QEMU gone: the monitor says so.
    let _ = q.execute("quit", json!({}));
    let after: Result<Value, QmpError> = q.execute("query-status", json!({}));
    assert!(
        matches!(after, Err(QmpError::Closed | QmpError::Io { .. })),
        "{after:?}"
    );
}

#[test]
fn a_monitor_that_is_not_there_is_an_error_naming_the_socket() {
    let dir = TempDir::new("qmp-none");
    let sock = dir.join("no.sock");
    match Qmp::connect(&sock, Duration::from_millis(300), WAIT) {
        Err(e @ QmpError::Connect { .. }) => {
            assert!(e.to_string().contains("no.sock"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let long = dir.join(&"x".repeat(120));
    assert!(matches!(
        Qmp::connect(&long, WAIT, WAIT),
        Err(QmpError::PathTooLong { .. })
    ));
}
