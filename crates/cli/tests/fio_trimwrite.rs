//! `rw=trimwrite` and `rw=randtrimwrite` do what fio 3.33 does: each block
//! is trimmed, then the same block is written, and only the writes count
//! toward `size`. The same job runs under both tools on a loop device
//! (trims are discards there) whose blocks all hold 0x5a first; their
//! `write_iolog`s give the order of trims and writes, their JSON the
//! counts, /proc/diskstats the sectors discarded and written, and the
//! backing file which blocks were rewritten. Needs fio (tests/run
//! installs it).

mod fio_common;

use drivelab_testkit::{diskstats, LoopDev, TempDir};

const BS: u64 = 4096;
const BLOCKS: u64 = 32;
/// The device: twice the job's size, so half of it must stay untouched.
const DEV: u64 = 2 * BLOCKS * BS;

/// One run: its trims and writes in order (op, block), its JSON, and the
/// sectors the device saw discarded and written.
struct Run {
    order: Vec<(String, u64)>,
    json: serde_json::Value,
    discarded: u64,
    written: u64,
}

fn run(tool: &str, dir: &TempDir, rw: &str) -> Run {
    let img = dir.join(&format!("{tool}-{rw}.img"));
    let fill = vec![0x5a; DEV as usize];
    drivelab_testkit::make_image(&img, DEV, &[(0, &fill)]);
    let lo = LoopDev::attach(&img, &[]);
    let log = dir.join(&format!("{tool}-{rw}.iolog"));
    let job = dir.join("job.fio");
    std::fs::write(
        &job,
        format!(
            "[job]\nfilename={}\nioengine=psync\ndirect=1\nrw={rw}\nbs={BS}\nsize={}\nwrite_iolog={}\n",
            lo.dev(),
            BLOCKS * BS,
            log.display()
        ),
    )
    .unwrap();
    let before = diskstats(&lo.name);
    let (json, _) = fio_common::run_json_normal(tool, &job, &dir.join("out"));
    let after = diskstats(&lo.name);
    let order = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let at = f.iter().position(|w| *w == "write" || *w == "trim")?;
            let off: u64 = f.get(at + 1)?.parse().ok()?;
            Some((f[at].to_string(), off / BS))
        })
        .collect();
    drop(lo);
    // The job's blocks were rewritten (neither the fill nor a trim's
    // zeroes), the rest of the device is untouched.
    let data = std::fs::read(&img).unwrap();
    for (b, blk) in data.chunks(BS as usize).enumerate() {
        let fill = blk.iter().all(|&x| x == 0x5a);
        let zero = blk.iter().all(|&x| x == 0);
        if (b as u64) < BLOCKS {
            assert!(!fill && !zero, "{tool} {rw}: block {b} was not written");
        } else {
            assert!(fill, "{tool} {rw}: block {b} past the job's size changed");
        }
    }
    std::fs::remove_file(&img).unwrap();
    Run {
        order,
        json,
        discarded: after.5 - before.5,
        written: after.3 - before.3,
    }
}

fn ios(j: &serde_json::Value, dir: &str) -> (u64, u64) {
    let d = &j["jobs"][0][dir];
    (
        d["total_ios"].as_u64().unwrap(),
        d["io_bytes"].as_u64().unwrap(),
    )
}

/// Each I/O of the log is a trim followed by the write of the same block,
/// and the blocks, once each, are the job's.
fn pairs(tool: &str, rw: &str, order: &[(String, u64)]) -> Vec<u64> {
    assert_eq!(order.len() as u64, 2 * BLOCKS, "{tool} {rw}: {order:?}");
    let blocks: Vec<u64> = order
        .chunks(2)
        .map(|p| {
            assert_eq!(
                (p[0].0.as_str(), p[1].0.as_str(), p[0].1),
                ("trim", "write", p[1].1),
                "{tool} {rw}: {order:?}"
            );
            p[0].1
        })
        .collect();
    let mut sorted = blocks.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..BLOCKS).collect::<Vec<_>>(), "{tool} {rw}");
    blocks
}

#[test]
fn trimwrite_trims_each_block_then_writes_it_as_fio_3_33_does() {
    let dir = TempDir::new("fio-trimwrite");
    for (rw, random) in [("trimwrite", false), ("randtrimwrite", true)] {
        let fio = run("fio", &dir, rw);
        let dl = run("drivelab", &dir, rw);
        let fio_blocks = pairs("fio", rw, &fio.order);
        let dl_blocks = pairs("drivelab", rw, &dl.order);
        if random {
            assert_ne!(dl_blocks, (0..BLOCKS).collect::<Vec<_>>(), "{rw}: in order");
        } else {
            assert_eq!(dl_blocks, fio_blocks, "{rw}");
        }
        for dir in ["read", "write", "trim"] {
            assert_eq!(ios(&dl.json, dir), ios(&fio.json, dir), "{rw} {dir}");
        }
        assert_eq!(ios(&dl.json, "trim"), (BLOCKS, BLOCKS * BS), "{rw}");
        assert_eq!(dl.json["jobs"][0]["error"], 0);
        // The device saw every block discarded and written once.
        let sectors = BLOCKS * BS / 512;
        assert_eq!((fio.discarded, fio.written), (sectors, sectors), "fio {rw}");
        assert_eq!((dl.discarded, dl.written), (sectors, sectors), "{rw}");
    }
}
