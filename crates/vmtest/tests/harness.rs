//! The harness's own failure paths, on a real boot: a guest that never
//! finishes is killed at the timeout and the error carries the console
//! log's tail; a guest script's exit status comes back as it was.
//!
//! Needs QEMU and the cached kernel: `bash tests/vm/setup.sh`.

use std::time::{Duration, Instant};

use drivelab_vmtest::{Disk, Vm, VmError, MIB};

#[test]
fn hung_guest_is_killed_at_the_timeout_with_the_console_tail() {
    let started = Instant::now();
    let err = Vm::builder()
        .scsi_hd(Disk::new(8 * MIB, "DLHANG0001"))
        .guest_script("sleep 100000\n")
        .timeout(Duration::from_secs(25))
        .run()
        .expect_err("a guest that sleeps forever must not finish");
    let took = started.elapsed();
    match &err {
        VmError::Timeout {
            timeout_s,
            tail,
            log,
        } => {
            assert_eq!(*timeout_s, 25);
            // init printed this on the console just before the script ran.
            assert!(tail.contains("test script starts"), "tail:\n{tail}");
            assert!(log.exists(), "console log {} kept", log.display());
            let _ = std::fs::remove_dir_all(log.parent().unwrap());
        }
        other => panic!("expected a timeout, got: {other}"),
    }
    assert!(
        took >= Duration::from_secs(25) && took < Duration::from_secs(40),
        "killed after {took:?}"
    );
    assert!(
        err.to_string().contains("did not power off within 25 s"),
        "{err}"
    );
}

#[test]
fn guest_script_exit_status_comes_back() {
    let run = Vm::builder()
        .guest_script("echo to-the-log; exit 3\n")
        .timeout(Duration::from_secs(120))
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"));
    assert_eq!(run.script_status, 3, "{}", run.context());
    assert_eq!(run.file("script.log").unwrap().trim(), "to-the-log");
    // The kernel log came back too and is this boot's (names the console).
    let dmesg = run.file("dmesg.txt").unwrap();
    assert!(dmesg.contains("Command line:"), "dmesg: {dmesg}");
    assert!(run.boot_to_script_s.is_some_and(|s| s > 0.0 && s < 60.0));
}
