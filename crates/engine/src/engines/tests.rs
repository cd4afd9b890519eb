//! The io_uring and psync engines side by side on scratch files.

use std::time::Duration;

use drivelab_device::claim::Claim;

use crate::buf::Fill;
use crate::engine::interface::Engine;
use crate::engines::psync::Psync;
use crate::engines::uring::{Uring, UringOptions};
use crate::io::{IoDesc, Op};
use crate::openset::Opener;
use crate::target::Target;

/// A 64 KiB scratch file (removed on drop) as a psync/io_uring target.
pub(crate) struct Scratch(pub(crate) std::path::PathBuf);

impl Scratch {
    pub(crate) fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("drivelab-engine-{tag}-{}", std::process::id()));
        std::fs::write(&p, vec![7u8; 65536]).unwrap();
        Scratch(p)
    }
    pub(crate) fn target(&self) -> Vec<Target> {
        use drivelab_device::claim::{ClaimOptions, Consent};
        let c = Claim::open(&self.0, &Consent::default(), &ClaimOptions::default()).unwrap();
        vec![Target::claimed(&c, false).unwrap()]
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub(crate) fn read(len: u32) -> IoDesc {
    IoDesc {
        target: 0,
        op: Op::Read,
        offset: 0,
        len,
    }
}

/// Queue `io` on slot 0, commit, and return its result.
pub(crate) fn one<E: Engine>(e: &mut E, io: IoDesc) -> i32 {
    e.queue(0, &io);
    e.commit(1, Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    e.reap(|c| got.push(c));
    assert_eq!(got.len(), 1, "one completion for one I/O");
    got[0].result
}

#[test]
fn transfers_longer_than_a_buffer_are_refused_not_issued() {
    let f = Scratch::new("long");
    let mut p = Psync::new(f.target(), 4096, false, Fill::Zeroed).unwrap();
    assert_eq!(one(&mut p, read(4096)), 4096);
    assert_eq!(p.buffer(0)[..4096], [7u8; 4096]);
    assert_eq!(one(&mut p, read(8192)), -libc::EINVAL);
    // The engine's target keeps the file claimed: let it go first.
    drop(p);
    let mut u = Uring::new(f.target(), 2, 4096, false, Fill::Zeroed).unwrap();
    assert_eq!(one(&mut u, read(4096)), 4096);
    assert_eq!(u.buffer(0)[..4096], [7u8; 4096]);
    assert_eq!(one(&mut u, read(8192)), -libc::EINVAL);
    // A trim's length is not a buffer's: a 32 KiB hole is punched.
    let trim = IoDesc {
        op: Op::Trim,
        len: 32768,
        ..read(0)
    };
    assert_eq!(one(&mut u, trim), 32768);
}

/// A set of `n` files of 8 KiB in a fresh directory, each file's bytes
/// its number; the opener over them, at most `limit` open.
fn file_set(tag: &str, n: usize, limit: u32) -> (drivelab_testkit::TempDir, Opener) {
    use drivelab_device::claim::{Consent, FileSet, SetKind};
    let dir = drivelab_testkit::TempDir::new(tag);
    let paths: Vec<_> = (0..n).map(|i| dir.path().join(format!("f{i}"))).collect();
    for (i, p) in paths.iter().enumerate() {
        std::fs::write(p, vec![i as u8; 8192]).unwrap();
    }
    let set = FileSet::claim(paths, SetKind::Files, &Consent::default()).unwrap();
    let opener = Opener::new(
        std::sync::Arc::new(set),
        (0..n).collect(),
        false,
        false,
        limit,
    );
    (dir, opener)
}

fn read_of(target: u32) -> IoDesc {
    IoDesc {
        target,
        ..read(4096)
    }
}

/// Files 0..4 through a table of 2: each read sees its own file's
/// bytes, a closed file's I/O fails with EBADF, a third open fails.
fn opens_and_closes_through_a_small_table<E: Engine>(e: &mut E) {
    assert_eq!(one(e, read_of(0)), -libc::EBADF);
    for pair in [[0u32, 1], [2, 3], [1, 2]] {
        for &t in &pair {
            e.open_file(t).unwrap();
        }
        for &t in &pair {
            assert_eq!(one(e, read_of(t)), 4096);
            assert_eq!(e.buffer(0)[..4096], [t as u8; 4096]);
        }
        for &t in &pair {
            e.close_file(t).unwrap();
            assert_eq!(one(e, read_of(t)), -libc::EBADF);
        }
    }
}

#[test]
fn engines_over_an_opener_open_and_close_files_when_told() {
    let (_d, opener) = file_set("engine-openset", 4, 2);
    let mut p = Psync::over_opener(opener.clone(), 4096, false, Fill::Zeroed).unwrap();
    opens_and_closes_through_a_small_table(&mut p);
    drop(p);
    let mut u = Uring::over_opener(
        opener,
        2,
        4096,
        false,
        Fill::Zeroed,
        UringOptions::default(),
    )
    .unwrap();
    opens_and_closes_through_a_small_table(&mut u);
    // The registered table has two entries: a third file has none.
    u.open_file(0).unwrap();
    u.open_file(1).unwrap();
    let e = u.open_file(2).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EMFILE));
    assert_eq!(one(&mut u, read_of(1)), 4096);
}

#[test]
fn a_completion_is_seen_ready_without_waiting_in_the_kernel() {
    // What a loop polling for a near deadline looks at: nothing before an
    // I/O is queued, then its completion once it has been submitted
    // (posted by the poll itself where the ring defers completions to the
    // thread), and nothing again once it is reaped.
    let f = Scratch::new("ready");
    let mut u = Uring::new(f.target(), 2, 4096, false, Fill::Zeroed).unwrap();
    assert!(!u.completion_ready());
    u.queue(0, &read(4096));
    u.commit(0, None).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !u.completion_ready() {
        assert!(
            std::time::Instant::now() < deadline,
            "a submitted read never showed as ready"
        );
        std::hint::spin_loop();
    }
    let mut got = Vec::new();
    u.reap(|c| got.push(c));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].result, 4096);
    assert!(!u.completion_ready());
}
