//! fio's offset and size options place drivelab's I/Os as they place fio
//! 3.33's: the same job (psync reads of a 4 MiB file in a temp dir) runs
//! under both tools with `write_iolog`, and the offsets and sizes of the
//! two iologs are compared: the first offset of a percentage `offset`
//! under `offset_align`, the runs of `rw=randread:4` under each
//! `rw_sequencer`, the sizes of a `bsrange` with and without
//! `bs_unaligned`, the writes to zones emulated with a `zonecapacity`.
//! Needs fio (tests/run installs it).

mod fio_common;

use drivelab_testkit::TempDir;

/// The (offset, length) of each read of the job `opts` under `tool`, from
/// its `write_iolog`.
fn reads(tool: &str, dir: &TempDir, opts: &str) -> Vec<(u64, u64)> {
    ios(tool, dir, opts, "read")
}

/// The (offset, length) of each I/O `op` ("read", "write") of the job
/// `opts` under `tool`, from its `write_iolog`.
fn ios(tool: &str, dir: &TempDir, opts: &str, op: &str) -> Vec<(u64, u64)> {
    drivelab_testkit::isolate_store();
    let file = dir.join("data");
    if !file.exists() {
        std::fs::write(&file, vec![7u8; 4 << 20]).unwrap();
    }
    let log = dir.join(&format!("{tool}.iolog"));
    let _ = std::fs::remove_file(&log);
    let job = dir.join("job.fio");
    std::fs::write(
        &job,
        format!(
            "[job]\nioengine=psync\nfilename={}\ndirect=0\nwrite_iolog={}\n{opts}\n",
            file.display(),
            log.display()
        ),
    )
    .unwrap();
    let out = fio_common::tool(tool).arg(&job).output().unwrap();
    assert!(
        out.status.success(),
        "{tool} {opts:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // fio's iolog v3: "TIME FILE read OFFSET LENGTH" (v2 has no TIME).
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let at = f.iter().position(|w| *w == op)?;
            Some((f.get(at + 1)?.parse().ok()?, f.get(at + 2)?.parse().ok()?))
        })
        .collect()
}

/// offset=33% of the 4 MiB file is 1384120 bytes: fio rounds it up to the
/// 4 KiB block, or to offset_align.
#[test]
fn offset_align_rounds_a_percentage_offset_up_as_fio_does() {
    let dir = TempDir::new("fio-offset-align");
    for (align, first) in [
        ("", 1_384_448),
        ("offset_align=64k", 1_441_792),
        ("offset_align=1m", 2_097_152),
    ] {
        for tool in ["fio", "drivelab"] {
            let opts = format!("size=64k\noffset=33%\nbs=4k\nrw=read\n{align}");
            let r = reads(tool, &dir, &opts);
            assert_eq!(r.first().map(|x| x.0), Some(first), "{tool} {align:?}");
        }
    }
}

/// How the reads of `rw=randread:4` go in runs of four: each run's
/// offsets after its first, relative to it.
fn runs(r: &[(u64, u64)]) -> Vec<Vec<i64>> {
    r.chunks(4)
        .filter(|c| c.len() == 4)
        .map(|c| c[1..].iter().map(|x| x.0 as i64 - c[0].0 as i64).collect())
        .collect()
}

#[test]
fn rw_sequencer_follows_or_repeats_the_random_offset_as_fio_does() {
    let dir = TempDir::new("fio-rw-sequencer");
    for (seq, want) in [
        ("sequential", vec![4096, 8192, 12288]),
        ("identical", vec![0, 0, 0]),
    ] {
        for tool in ["fio", "drivelab"] {
            let opts = format!("size=1m\nbs=4k\nrw=randread:4\nrw_sequencer={seq}\nnumber_ios=40");
            let r = reads(tool, &dir, &opts);
            let got = runs(&r);
            assert_eq!(got.len(), 10, "{tool} {seq}: {r:?}");
            assert!(got.iter().all(|g| *g == want), "{tool} {seq}: {got:?}");
            // Each run starts at a new random offset.
            let starts: std::collections::BTreeSet<u64> = r.chunks(4).map(|c| c[0].0).collect();
            assert!(starts.len() > 5, "{tool} {seq}: {starts:?}");
        }
    }
}

#[test]
fn bs_unaligned_draws_any_size_of_the_range_as_fio_does() {
    let dir = TempDir::new("fio-bs-unaligned");
    for unaligned in [false, true] {
        for tool in ["fio", "drivelab"] {
            let opts = format!(
                "size=1m\nbsrange=1k-16k\nrw=randread\nnumber_ios=64\nbs_unaligned={}",
                u8::from(unaligned)
            );
            let r = reads(tool, &dir, &opts);
            assert_eq!(r.len(), 64, "{tool}");
            assert!(
                r.iter().all(|&(_, l)| (1024..=16384).contains(&l)),
                "{tool}: {r:?}"
            );
            let odd = r.iter().filter(|&&(_, l)| l % 1024 != 0).count();
            if unaligned {
                // Of 64 sizes drawn from 15361, all but a few are odd.
                assert!(odd > 32, "{tool}: {odd} of 64 not a multiple of 1k");
            } else {
                assert_eq!(odd, 0, "{tool}: {r:?}");
            }
        }
    }
}

/// Sequential writes to 1 MiB zones emulated on the file with 512 KiB of
/// capacity each: the first half of every zone is written, the job ending
/// at the file's end, under fio as under drivelab (the same offsets).
#[test]
fn zonecapacity_writes_the_capacity_of_each_emulated_zone_as_fio_does() {
    let dir = TempDir::new("fio-zonecapacity");
    let opts = "size=4m\nbs=64k\nrw=write\nzonemode=zbd\nzonesize=1m\nzonecapacity=512k";
    let want: Vec<(u64, u64)> = (0..4u64)
        .flat_map(|z| (0..8u64).map(move |k| (z * (1 << 20) + k * 65536, 65536)))
        .collect();
    for tool in ["fio", "drivelab"] {
        assert_eq!(ios(tool, &dir, opts, "write"), want, "{tool}");
    }
}
