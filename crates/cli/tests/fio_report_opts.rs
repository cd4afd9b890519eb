//! fio's report options shape drivelab's report as they shape fio 3.33's:
//! the same job (psync reads of a 1 MiB file in a temp dir) runs under both
//! tools with each option, and the part of the JSON and of the text the
//! option changes is compared: which latencies carry percentiles and which
//! percentiles, the latencies and samples left out, the percentile
//! headings printed. Needs fio (tests/run installs it).

mod fio_common;

use drivelab_testkit::TempDir;
use serde_json::Value;

struct Case {
    name: &'static str,
    /// Job lines after the common ones.
    opts: &'static str,
    /// What both tools must show.
    want: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "defaults",
        opts: "",
        want: "clat 17 pcts; lat 0 pcts; N>0 clat lat; samples>0; text: clat percentiles",
    },
    Case {
        name: "clat_percentiles=0",
        opts: "clat_percentiles=0",
        want: "clat 0 pcts; lat 0 pcts; N>0 clat lat; samples>0; text: none",
    },
    Case {
        name: "lat_percentiles=1",
        opts: "lat_percentiles=1",
        want: "clat 17 pcts; lat 17 pcts; N>0 clat lat; samples>0; text: clat percentiles, lat percentiles",
    },
    Case {
        name: "percentile_list=50:99:99.9",
        opts: "percentile_list=50:99:99.9",
        want: "clat 50.000000,99.000000,99.900000; lat 0 pcts; N>0 clat lat; samples>0; text: clat percentiles",
    },
    Case {
        name: "disable_clat=1",
        opts: "disable_clat=1",
        want: "clat 0 pcts; lat 0 pcts; N>0 lat; samples>0; text: none",
    },
    Case {
        name: "disable_lat=1, lat_percentiles=1",
        opts: "disable_lat=1\nlat_percentiles=1",
        want: "clat 17 pcts; lat 0 pcts; N>0 clat; samples>0; text: clat percentiles",
    },
    Case {
        // fio 3.33 still samples the bandwidth.
        name: "disable_bw_measurement=1",
        opts: "disable_bw_measurement=1",
        want: "clat 17 pcts; lat 0 pcts; N>0 clat lat; samples>0; text: clat percentiles",
    },
];

/// The JSON's and text's shape for the option (see `want`).
fn shape(json: &Value, text: &str) -> String {
    let r = &json["jobs"][0]["read"];
    let pcts = |k: &str| -> String {
        let Some(p) = r[k]["percentile"].as_object() else {
            return "0 pcts".to_string();
        };
        if p.len() == 17 {
            "17 pcts".to_string()
        } else {
            p.keys().cloned().collect::<Vec<_>>().join(",")
        }
    };
    let with_n: Vec<&str> = ["clat", "lat"]
        .into_iter()
        .filter(|k| r[format!("{k}_ns")]["N"].as_u64().unwrap_or(0) > 0)
        .collect();
    let samples = r["bw_samples"].as_u64().unwrap_or(0) + r["iops_samples"].as_u64().unwrap_or(0);
    let heads: Vec<&str> = ["clat percentiles", "    lat percentiles"]
        .into_iter()
        .filter(|h| text.contains(&format!("{h} (")))
        .map(str::trim)
        .collect();
    format!(
        "clat {}; lat {}; N>0 {}; samples{}; text: {}",
        pcts("clat_ns"),
        pcts("lat_ns"),
        with_n.join(" "),
        if samples > 0 { ">0" } else { "=0" },
        if heads.is_empty() {
            "none".to_string()
        } else {
            heads.join(", ")
        }
    )
}

/// Run `opts` under `tool` with JSON and text output; its shape.
fn run(tool: &str, dir: &TempDir, opts: &str) -> String {
    drivelab_testkit::isolate_store();
    let file = dir.join("data");
    if !file.exists() {
        std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    }
    let job = dir.join("job.fio");
    // A runtime long enough for bandwidth samples (500 ms windows).
    std::fs::write(
        &job,
        format!(
            "[job]\nioengine=psync\nfilename={}\nsize=1m\nbs=4k\nrw=randread\ndirect=0\ntime_based\nruntime=1200ms\n{opts}\n",
            file.display()
        ),
    )
    .unwrap();
    let (json, all) = fio_common::run_json_normal(tool, &job, &dir.join(&format!("{tool}.json")));
    shape(&json, &all)
}

#[test]
fn report_options_shape_the_report_as_in_fio() {
    let dir = TempDir::new("fio-report-opts");
    let mut failed = Vec::new();
    for case in CASES {
        for tool in ["fio", "drivelab"] {
            let got = run(tool, &dir, case.opts);
            eprintln!("{:<34} {tool:<8} {got}", case.name);
            if got != case.want {
                failed.push(format!(
                    "{} under {tool}: {got}\n  expected {}",
                    case.name, case.want
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
