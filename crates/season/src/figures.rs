//! A stored season result read back into [`SeasonReport`], and the
//! figures `drivelab compare` sets side by side and the one line `drivelab
//! history` shows of it. They are defined here, beside the struct they
//! read, so that a renamed field is a compile error rather than a figure
//! that silently drops out of comparisons.

use drivelab_report::metrics::{push, read_lenient, short, Metric};
use serde_json::Value;

use crate::result::{DriveSeason, SeasonReport};

impl SeasonReport {
    /// A season's result as stored (any version's JSON): each field
    /// missing takes its default; a result that cannot be read is an empty
    /// one.
    pub fn from_stored(v: &Value) -> SeasonReport {
        read_lenient(v).unwrap_or_default()
    }

    /// Bytes the season wrote: every drive's fill passes, image and rounds.
    pub fn bytes_written(&self) -> u64 {
        self.drives.iter().map(DriveSeason::bytes_written).sum()
    }
}

impl DriveSeason {
    /// Bytes written to this drive: its fill passes, image and rounds.
    pub fn bytes_written(&self) -> u64 {
        let fill: u64 = self
            .fill
            .iter()
            .flat_map(|f| &f.pass_results)
            .map(|p| p.bytes)
            .sum();
        let image = self.image.as_ref().map_or(0, |i| i.bytes);
        let rounds: u64 = self.rounds.iter().map(|r| r.bytes_written).sum();
        fill + image + rounds
    }

    /// The drive's name in figures: its device, "drive" when none is known.
    fn label(&self) -> &str {
        if self.identity.device.is_empty() {
            "drive"
        } else {
            &self.identity.device
        }
    }
}

/// A season's figures: each drive's fill pass rates and last round's
/// IOPS, then the whole season's time.
pub fn metrics(r: &SeasonReport) -> Vec<Metric> {
    let mut out = Vec::new();
    for d in &r.drives {
        let dev = d.label();
        for p in d.fill.iter().flat_map(|f| &f.pass_results) {
            let rate = Some(p.bw_bytes / 1e6);
            let name = format!("{dev} fill pass {} rate", p.pass);
            push(&mut out, name, "MB/s", rate, true);
        }
        let iops = d.rounds.last().map(|r| r.metrics.iops);
        push(
            &mut out,
            format!("{dev} last round IOPS"),
            "IOPS",
            iops,
            true,
        );
    }
    let secs = Some(r.complete_seconds);
    push(&mut out, "complete time".into(), "s", secs, false);
    out
}

/// Drives, bytes written, time and rate.
pub fn headline(r: &SeasonReport) -> String {
    let bytes = r.bytes_written() as f64;
    let secs = r.complete_seconds;
    let rate = if secs > 0.0 { bytes / secs / 1e6 } else { 0.0 };
    format!(
        "{} drive(s), {} B in {} s, {} MB/s",
        r.drives.len(),
        short(bytes),
        short(secs),
        short(rate)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{Fill, Identity, Image, Metrics, Pass, Round, State};

    fn round(n: usize, iops: f64, bytes: u64) -> Round {
        Round {
            round: n,
            metrics: Metrics {
                iops,
                bw_bytes: iops * 4096.0,
                lat_mean_ns: 80.0,
                lat_p99_ns: 300.0,
                seconds: 1.0,
            },
            bytes_written: bytes,
        }
    }

    fn pass(n: u32, bytes: u64, bw: f64) -> Pass {
        Pass {
            pass: n,
            start_offset: 4096,
            bytes,
            seconds: bytes as f64 / bw,
            bw_bytes: bw,
        }
    }

    #[test]
    fn every_season_metric_reads_its_field_of_the_struct() {
        let drive = DriveSeason {
            identity: Identity {
                device: "/dev/loop9".into(),
                capacity_bytes: 1 << 30,
                ..Identity::default()
            },
            state: State::Done,
            fill: Some(Fill {
                passes: 2,
                transfer_bytes: 1 << 17,
                queue_depth: 4,
                pass_results: vec![
                    pass(1, 1_000_000, 2_000_000.0),
                    pass(2, 2_000_000, 3_000_000.0),
                ],
            }),
            image: Some(Image {
                source: "/tmp/image".into(),
                kind: "file".into(),
                bytes: 500_000,
                seconds: 0.5,
                writes: 4,
            }),
            workload: Some("randwrite".into()),
            rounds: vec![round(1, 300.0, 250_000), round(2, 250.0, 750_000)],
            ..DriveSeason::default()
        };
        let r = SeasonReport {
            version: "0.1.0".into(),
            stages: vec!["fill".into(), "rounds".into()],
            drives: vec![drive],
            complete_seconds: 3.0,
        };
        let v = serde_json::to_value(&r).expect("serialise");
        let back = SeasonReport::from_stored(&v);
        // Read back, it writes the same JSON: nothing is lost on the way.
        assert_eq!(serde_json::to_value(&back).expect("serialise"), v);
        let got: Vec<(String, f64, bool)> = metrics(&back)
            .into_iter()
            .map(|m| (m.name, m.value, m.higher_is_better))
            .collect();
        let want = [
            ("/dev/loop9 fill pass 1 rate", 2.0, true),
            ("/dev/loop9 fill pass 2 rate", 3.0, true),
            ("/dev/loop9 last round IOPS", 250.0, true),
            ("complete time", 3.0, false),
        ];
        let want: Vec<(String, f64, bool)> = want
            .iter()
            .map(|(n, v, u)| (n.to_string(), *v, *u))
            .collect();
        assert_eq!(got, want);
        // 3 MB of fill, 0.5 MB of image, 1 MB of rounds.
        assert_eq!(back.bytes_written(), 4_500_000);
        assert_eq!(headline(&back), "1 drive(s), 4.50M B in 3.00 s, 1.50 MB/s");
    }

    #[test]
    fn a_season_stored_with_fields_missing_still_reads() {
        // What an older version may hold: passes without rates, rounds
        // without figures, an image without its source, no identity.
        let v = serde_json::json!({"complete_seconds": 2.0, "drives": [{
            "state": "done",
            "fill": {"pass_results": [{"pass": 1, "bytes": 1000000}]},
            "image": {"bytes": 500000.0}, "rounds": [{"bytes_written": 500000}]}]});
        let r = SeasonReport::from_stored(&v);
        assert_eq!(r.drives[0].state, State::Done);
        let got: Vec<(String, f64)> = metrics(&r).into_iter().map(|m| (m.name, m.value)).collect();
        assert_eq!(
            got,
            [
                ("drive fill pass 1 rate".to_string(), 0.0),
                ("drive last round IOPS".to_string(), 0.0),
                ("complete time".to_string(), 2.0),
            ]
        );
        assert_eq!(headline(&r), "1 drive(s), 2.00M B in 2.00 s, 1.00 MB/s");
    }

    #[test]
    fn each_state_word_is_the_one_the_json_holds() {
        for st in [State::Done, State::Stopped, State::Failed] {
            assert_eq!(serde_json::to_value(st).expect("serialise"), st.as_str());
        }
    }
}
