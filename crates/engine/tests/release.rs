//! A dropped io_uring engine lets go of its device at once. The kernel
//! tears a closed ring down in a worker, later; the files registered with
//! it stay referenced until then, so a block device opened O_EXCL stays
//! claimed and the next exclusive open (the next erase, or the verification
//! after an erase) fails with EBUSY. On a loop device, as root.

use drivelab_device::claim::{Claim, ClaimOptions, Consent};
use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Engine, Target, Uring};
use drivelab_engine::io::{IoDesc, Op};
use drivelab_testkit::{require_root, LoopDev, TempDir};

/// The claim: the device opened O_EXCL (and O_DIRECT) for writing.
fn claim(path: &str) -> Result<Claim, drivelab_device::claim::ClaimError> {
    let opts = ClaimOptions {
        direct: true,
        create_size: None,
    };
    Claim::open(path.as_ref(), &Consent::default(), &opts)
}

#[test]
fn an_exclusive_open_right_after_the_engine_is_dropped_succeeds() {
    require_root();
    let dir = TempDir::new("engine-release");
    let d = LoopDev::new_in(&dir, 64 << 20);
    for round in 0..20 {
        let claim = claim(d.dev()).unwrap_or_else(|e| panic!("round {round}: {e}"));
        // 64 MiB of registered buffers, the most an erase stream uses, so
        // the teardown has as much to undo as there.
        let mut eng = Uring::new(
            vec![Target::claimed(&claim, true).unwrap()],
            64,
            1 << 20,
            false,
            Fill::Zeroed,
        )
        .unwrap();
        eng.queue(
            0,
            &IoDesc {
                target: 0,
                op: Op::Write,
                offset: 0,
                len: 1 << 20,
            },
        );
        eng.commit(1, None).unwrap();
        let mut res = 0;
        eng.reap(|c| res = c.result);
        assert_eq!(res, 1 << 20, "round {round}: write result");
        drop(eng);
        drop(claim);
    }
    // The last one too.
    claim(d.dev()).expect("device still claimed after the last drop");
}
