//! Issue 17 item 1 in a real kernel: fio's three sg engine examples
//! (`ioengine=sg` with `sg_write_mode` and `buffer_pattern`:
//! tests/data/fio-jobs/sg/, fio's files but for the disk's name) run with
//! fio 3.33 (the host's binary, copied into the guest) and with drivelab on
//! the same scsi_debug disk in one boot. Before each run the disk's first
//! 64 blocks are set to the same random bytes; after it they are read back.
//!
//! For every job of every file the test asserts that both tools completed
//! the same number of writes, moved the same bytes and ended with the same
//! error (EIO for the VERIFY commands that miscompare; fio counts the
//! failed command among the writes, and so does drivelab), that both fail
//! exactly when the example says a job fails (fio's exit status is the
//! number of failed jobs, drivelab's 1, its status for a failure while
//! running), and that the disk holds the same bytes afterwards:
//! the pattern (0x01) where the preconditioning wrote it, zeroes where WRITE
//! SAME(16) with NDOB wrote them, the random bytes elsewhere. A fourth file
//! of drivelab's own does the same for `sg_write_mode=write_same` (the
//! first block of `buffer_pattern=0xa5"ab"` over 32 blocks, checked by
//! VERIFY with BYTCHK 11b) and reads through the sg engine. drivelab's
//! failed command names the sense (MISCOMPARE) and the LBAs.
//!
//! A second boot runs `sg/sg-async.fio` (drivelab's own job: fio's
//! asynchronous sg mode, commands queued 8 at a time with write() on the
//! disk's /dev/sgN and collected with read()) with both tools, and asserts
//! the same reads, writes and bytes per job, queues that reached depth 8 in
//! both (`iodepth_level`), and the same bytes on the disk afterwards, as the
//! job writes them.
//!
//! Needs root, QEMU, the cached kernel (`bash tests/vm/setup.sh`) and fio
//! on the host (`tests/run` installs it).

use std::path::Path;
use std::time::Duration;

use drivelab_vmtest::{Checks, GuestRun, Vm};
use serde_json::Value;

/// The job files, by name.
const FILES: [(&str, &str); 4] = [
    (
        "sg_verify",
        include_str!("../../../tests/data/fio-jobs/sg/sg_verify.fio"),
    ),
    (
        "sg_verify-fail",
        include_str!("../../../tests/data/fio-jobs/sg/sg_verify-fail.fio"),
    ),
    (
        "sg_write_same_ndob",
        include_str!("../../../tests/data/fio-jobs/sg/sg_write_same_ndob.fio"),
    ),
    (
        "sg_write_same",
        include_str!("../../../tests/data/fio-jobs/sg/sg_write_same.fio"),
    ),
];

/// Blocks of 512 bytes seeded before and read after each run.
const BLOCKS: usize = 64;

fn guest_script() -> String {
    let mut s = String::from(
        r#"
exec < /dev/null
export DL_SG_DEV=/dev/$(disk_by_model scsi_debug)
echo $DL_SG_DEV > devname
head -c 32768 /dev/urandom > /tmp/seed.bin
od -An -tx1 -v /tmp/seed.bin > seed.txt
"#,
    );
    for (name, text) in FILES {
        s.push_str(&format!("cat > {name}.fio <<'EOF'\n{text}EOF\n"));
    }
    s.push_str(
        r#"
for j in sg_verify sg_verify-fail sg_write_same_ndob sg_write_same; do
  for t in fio dl; do
    dd if=/tmp/seed.bin of=$DL_SG_DEV bs=32768 count=1 oflag=direct conv=notrunc 2>/dev/null
    if [ $t = fio ]; then
      run_json ${t}_$j /usr/bin/fio --output-format=json $j.fio
    else
      run_json ${t}_$j drivelab run $j.fio --force --no-store --output-format=json
    fi
    dd if=$DL_SG_DEV bs=32768 count=1 iflag=direct 2>/dev/null | od -An -tx1 -v > med_${t}_$j.txt
  done
done
true
"#,
    );
    s
}

fn boot() -> GuestRun {
    assert!(
        Path::new("/usr/bin/fio").is_file(),
        "fio is not installed on the host; this test compares drivelab with it (apt-get install fio)"
    );
    let vm = Vm::builder()
        .scsi_debug("dev_size_mb=8")
        .with_drivelab()
        .host_tool("/usr/bin/fio")
        .guest_script(&guest_script())
        .timeout(Duration::from_secs(240));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

/// The bytes `od -An -tx1 -v` printed.
fn od_bytes(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .filter_map(|h| u8::from_str_radix(h, 16).ok())
        .collect()
}

/// The JSON after any notes a tool printed before it.
fn json_of(run: &GuestRun, name: &str) -> (i64, Value, String) {
    let (status, out, err) = run.outcome(name);
    let start = out.find('{').unwrap_or(0);
    let v = serde_json::from_str(&out[start..]).unwrap_or(Value::Null);
    (status, v, err)
}

/// Per job: (name, write total_ios, write io_bytes, error, read total_ios,
/// read io_bytes).
type JobLine = (String, u64, u64, i64, u64, u64);

fn per_job(v: &Value) -> Vec<JobLine> {
    v["jobs"]
        .as_array()
        .map(|jobs| {
            jobs.iter()
                .map(|j| {
                    (
                        j["jobname"].as_str().unwrap_or("").to_string(),
                        j["write"]["total_ios"].as_u64().unwrap_or(u64::MAX),
                        j["write"]["io_bytes"].as_u64().unwrap_or(u64::MAX),
                        j["error"].as_i64().unwrap_or(-1),
                        j["read"]["total_ios"].as_u64().unwrap_or(u64::MAX),
                        j["read"]["io_bytes"].as_u64().unwrap_or(u64::MAX),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A named check whose name says what was compared (with the figures).
fn check(c: &mut Checks, ok: bool, what: String) {
    c.check(&what, ok, || "not so".to_string());
}

#[test]
fn fio_sg_examples_do_the_same_io_in_drivelab() {
    let run = boot();
    let mut c = Checks::new();
    check(
        &mut c,
        run.script_status == 0,
        format!("guest script exited 0 (status {})", run.script_status),
    );
    let seed = od_bytes(&run.file("seed.txt").unwrap_or_default());
    check(
        &mut c,
        seed.len() == BLOCKS * 512,
        format!("seed of {} bytes read back", seed.len()),
    );
    let block = |m: &[u8], b: usize| m.get(b * 512..(b + 1) * 512).map(<[u8]>::to_vec);
    for (name, _) in FILES {
        let (fs, fv, ferr) = json_of(&run, &format!("fio_{name}"));
        let (ds, dv, derr) = json_of(&run, &format!("dl_{name}"));
        let fj = per_job(&fv);
        let dj = per_job(&dv);
        println!("{name}: fio exit {fs}, drivelab exit {ds}");
        for (f, d) in fj.iter().zip(&dj) {
            println!(
                "  {:<18} fio {:>3} writes {:>6} B {} reads {:>5} B error {}   drivelab {:>3} writes {:>6} B {} reads {:>5} B error {}",
                f.0, f.1, f.2, f.4, f.5, f.3, d.1, d.2, d.4, d.5, d.3
            );
        }
        check(
            &mut c,
            !fj.is_empty() && fj.len() == dj.len(),
            format!(
                "{name}: both ran every job (fio {}, drivelab {}): {ferr} {derr}",
                fj.len(),
                dj.len()
            ),
        );
        check(
            &mut c,
            fj == dj,
            format!("{name}: the same jobs, writes, bytes and errors: fio {fj:?}, drivelab {dj:?}"),
        );
        check(
            &mut c,
            (fs == 0) == (ds == 0) && fs >= 0 && ds >= 0,
            format!("{name}: both succeed or both fail: fio {fs}, drivelab {ds}: {derr}"),
        );
        let fails = !matches!(name, "sg_verify" | "sg_write_same");
        check(
            &mut c,
            fails == fj.iter().any(|j| j.3 != 0),
            format!("{name}: fio's example fails a job exactly when it says so: {fj:?}"),
        );
        let fm = od_bytes(&run.file(&format!("med_fio_{name}.txt")).unwrap_or_default());
        let dm = od_bytes(&run.file(&format!("med_dl_{name}.txt")).unwrap_or_default());
        check(
            &mut c,
            fm.len() == BLOCKS * 512 && fm == dm,
            format!(
                "{name}: the disk holds the same {} bytes after fio and drivelab",
                fm.len()
            ),
        );
        // What the example writes: 20 blocks of the pattern; with NDOB 19 of
        // them zeroed; WRITE SAME of 0xa5"ab" 32 blocks; nothing else.
        let same: Vec<u8> = [0xa5u8, b'a', b'b']
            .iter()
            .copied()
            .cycle()
            .take(512)
            .collect();
        for b in 0..BLOCKS {
            let want = match (name, b) {
                ("sg_write_same", 0..=31) => same.clone(),
                ("sg_write_same", _) => seed[b * 512..(b + 1) * 512].to_vec(),
                ("sg_write_same_ndob", 0..=18) => vec![0u8; 512],
                (_, 0..=19) => vec![1u8; 512],
                _ => seed[b * 512..(b + 1) * 512].to_vec(),
            };
            if block(&dm, b) != Some(want) {
                check(
                    &mut c,
                    false,
                    format!("{name}: block {b} after drivelab is not as the example writes it"),
                );
                break;
            }
        }
        if fails {
            // The failed VERIFY in words: the sense and where.
            let errs: Vec<&Value> = dv["jobs"]
                .as_array()
                .map(|j| {
                    j.iter()
                        .filter(|j| j["error"].as_i64() != Some(0))
                        .collect()
                })
                .unwrap_or_default();
            for j in &errs {
                let e = &j["errors"][0];
                let text = e["error"].as_str().unwrap_or("");
                check(
                    &mut c,
                    text.contains("MISCOMPARE") && text.contains("VERIFY(10)"),
                    format!(
                        "{name}/{}: the failure names the command and the sense: {text}",
                        j["jobname"]
                    ),
                );
                check(
                    &mut c,
                    e["last_lba"].as_u64().is_some_and(|l| l >= 19),
                    format!(
                        "{name}/{}: the failed command's LBAs reach the block that differs: {e}",
                        j["jobname"]
                    ),
                );
            }
            check(
                &mut c,
                derr.contains("MISCOMPARE"),
                format!("{name}: drivelab's error line names the sense: {derr}"),
            );
        }
    }
    c.finish(&run.context());
}

/// drivelab's job for fio's asynchronous sg mode (tests/data/fio-jobs/sg).
const ASYNC_JOB: &str = include_str!("../../../tests/data/fio-jobs/sg/sg-async.fio");

/// Bytes seeded before and read back after each run of the async job.
const ASYNC_SPAN: usize = 512 << 10;

fn async_script() -> String {
    format!(
        r#"
exec < /dev/null
D=/dev/$(disk_by_model scsi_debug)
export DL_SG_NODE=/dev/$(ls /sys/block/${{D##*/}}/device/scsi_generic/)
echo $DL_SG_NODE > nodename
head -c {span} /dev/urandom > /tmp/seed.bin
od -An -tx1 -v /tmp/seed.bin > seed.txt
cat > sg-async.fio <<'EOF'
{ASYNC_JOB}EOF
for t in fio dl; do
  dd if=/tmp/seed.bin of=$D bs={span} count=1 oflag=direct conv=notrunc 2>/dev/null
  if [ $t = fio ]; then
    run_json ${{t}}_async /usr/bin/fio --output-format=json sg-async.fio
  else
    run_json ${{t}}_async drivelab run sg-async.fio --force --no-store --output-format=json
  fi
  dd if=$D bs={span} count=1 iflag=direct 2>/dev/null | od -An -tx1 -v > med_${{t}}_async.txt
done
true
"#,
        span = ASYNC_SPAN
    )
}

/// Per job: the share of I/O issued at depth 8 or more (fio's
/// `iodepth_level`, percent).
fn depth8(v: &Value) -> Vec<f64> {
    v["jobs"]
        .as_array()
        .map(|jobs| {
            jobs.iter()
                .map(|j| {
                    let l = &j["iodepth_level"];
                    ["8", "16", "32", ">=64"]
                        .iter()
                        .map(|k| l[*k].as_f64().unwrap_or(0.0))
                        .sum()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn fio_async_sg_mode_on_a_node_does_the_same_io_in_drivelab() {
    assert!(
        Path::new("/usr/bin/fio").is_file(),
        "fio is not installed on the host; this test compares drivelab with it (apt-get install fio)"
    );
    let vm = Vm::builder()
        .scsi_debug("dev_size_mb=8")
        .with_drivelab()
        .host_tool("/usr/bin/fio")
        .guest_script(&async_script())
        .timeout(Duration::from_secs(240));
    let run = match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    };
    let mut c = Checks::new();
    let node = run.file("nodename").unwrap_or_default();
    check(
        &mut c,
        node.trim().starts_with("/dev/sg"),
        format!("the disk's SCSI generic node is {}", node.trim()),
    );
    let seed = od_bytes(&run.file("seed.txt").unwrap_or_default());
    check(
        &mut c,
        seed.len() == ASYNC_SPAN,
        format!("seed of {} bytes read back", seed.len()),
    );
    let (fs, fv, ferr) = json_of(&run, "fio_async");
    let (ds, dv, derr) = json_of(&run, "dl_async");
    let (fj, dj) = (per_job(&fv), per_job(&dv));
    for (f, d) in fj.iter().zip(&dj) {
        println!("async {:<9} fio {f:?}   drivelab {d:?}", f.0);
    }
    check(
        &mut c,
        fs == 0 && ds == 0,
        format!("both succeed: fio {fs} {ferr}, drivelab {ds} {derr}"),
    );
    let want: Vec<JobLine> = vec![
        ("write".into(), 64, 256 << 10, 0, 0, 0),
        ("randread".into(), 0, 0, 0, 64, 256 << 10),
        ("bigwrite".into(), 4, 64 << 10, 0, 0, 0),
    ];
    check(
        &mut c,
        fj == want,
        format!("fio did what the job says: {fj:?}"),
    );
    check(
        &mut c,
        dj == fj,
        format!("drivelab's reads, writes, bytes and errors per job are fio's: fio {fj:?}, drivelab {dj:?}"),
    );
    let (fd, dd) = (depth8(&fv), depth8(&dv));
    println!("async: share of I/O at depth 8: fio {fd:?}, drivelab {dd:?}");
    check(
        &mut c,
        fd.len() == 3 && dd.len() == 3 && fd[..2].iter().chain(&dd[..2]).all(|&p| p > 0.0),
        format!("commands were queued 8 deep in both: fio {fd:?}, drivelab {dd:?}"),
    );
    let fm = od_bytes(&run.file("med_fio_async.txt").unwrap_or_default());
    let dm = od_bytes(&run.file("med_dl_async.txt").unwrap_or_default());
    check(
        &mut c,
        fm.len() == ASYNC_SPAN && fm == dm,
        format!(
            "the disk holds the same {} bytes after fio and drivelab",
            dm.len()
        ),
    );
    let expect: Vec<u8> = (0..ASYNC_SPAN)
        .map(|i| match i {
            _ if i < 256 << 10 => 0x5a,
            _ if (320 << 10..384 << 10).contains(&i) => 0xc3,
            _ => seed.get(i).copied().unwrap_or(0),
        })
        .collect();
    let first_bad = dm.iter().zip(&expect).position(|(a, b)| a != b);
    check(
        &mut c,
        dm.len() == ASYNC_SPAN && first_bad.is_none(),
        format!("the disk after drivelab is as the job writes it (first difference at byte {first_bad:?})"),
    );
    c.finish(&run.context());
}
