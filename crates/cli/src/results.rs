//! A stored result read by its kind: the JSON is read into the kind's
//! result struct (its `from_stored`), then the figures `compare` and
//! `history --csv` show and the one-line headline a record keeps are those
//! the crate owning the struct defines (`drivelab_report::metrics` for
//! runs, each other kind's `figures` module). The compare and store
//! commands both read results through here.

use drivelab_erase::outcome::Summary;
use drivelab_replay::session::{AuditReport, SessionReport};
use drivelab_report::metrics::{self, headline, Metric};
use drivelab_report::RunReport;
use drivelab_season::result::SeasonReport;
use drivelab_steps::result::TestReport;
use drivelab_store::Kind;
use serde_json::Value;

/// The figures of a result, in a fixed order.
pub fn metrics(kind: Kind, v: &Value) -> Vec<Metric> {
    match kind {
        Kind::Run => metrics::run(&RunReport::from_stored(v)),
        Kind::Test => drivelab_steps::figures::metrics(&TestReport::from_stored(v)),
        Kind::Erase => drivelab_erase::figures::metrics(&Summary::from_stored(v)),
        Kind::Season => drivelab_season::figures::metrics(&SeasonReport::from_stored(v)),
        Kind::Replay => drivelab_replay::figures::metrics(&SessionReport::from_stored(v).replay),
        Kind::Audit => {
            drivelab_replay::figures::metrics(&AuditReport::from_stored(v).replay.replay)
        }
    }
}

/// One line of figures for `history`.
pub fn headline(kind: Kind, v: &Value) -> String {
    match kind {
        Kind::Run => headline::run(&RunReport::from_stored(v)),
        Kind::Test => drivelab_steps::figures::headline(&TestReport::from_stored(v)),
        Kind::Erase => drivelab_erase::figures::headline(&Summary::from_stored(v)),
        Kind::Season => drivelab_season::figures::headline(&SeasonReport::from_stored(v)),
        Kind::Replay => drivelab_replay::figures::headline(&SessionReport::from_stored(v).replay),
        Kind::Audit => {
            drivelab_replay::figures::headline(&AuditReport::from_stored(v).replay.replay)
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each kind's figures read from a result serialised from the struct
    //! its command writes, with a value set in every field a figure reads:
    //! a field renamed in the struct drops its figure and fails here.

    use super::*;

    fn figures(kind: Kind, result: &impl serde::Serialize) -> Vec<(String, f64)> {
        let v = serde_json::to_value(result).expect("serialise");
        metrics(kind, &v)
            .into_iter()
            .map(|m| (m.name, m.value))
            .collect()
    }

    fn named(want: &[(&str, f64)]) -> Vec<(String, f64)> {
        want.iter().map(|(n, v)| (n.to_string(), *v)).collect()
    }

    #[test]
    fn test_figures_read_every_step_field_they_name() {
        use drivelab_steps::{Status, StepResult, TestReport};
        let step = StepResult {
            index: 1,
            of: 1,
            kind: "write".into(),
            test_type: "Sequential Write".into(),
            order: "sequential".into(),
            start_block: 0,
            block_count: 2048,
            block_size: 512,
            transfer_min_blocks: 8,
            transfer_max_blocks: 8,
            pattern: "zeros".into(),
            seed: 1,
            pass: 1,
            queue_depth: 1,
            fua: false,
            on_error: "stop-test".into(),
            retries: 0,
            started: String::new(),
            finished: String::new(),
            started_unix: 0,
            status: Status::Passed,
            runtime_ns: 2_500_000_000,
            bw_bytes: 4_000_000.0,
            mib_per_s: 3.8,
            iops: 976.0,
            blocks_transferred: 2048,
            clat_ns: drivelab_stats::Summary {
                min: 1.0,
                max: 9000.0,
                mean: 1500.0,
                stddev: 1.0,
                count: 256,
            },
            passes: Vec::new(),
            io_errors: 0,
            miscompares: 0,
            bad_blocks: 0,
            command: None,
            failures: Vec::new(),
            error: None,
            note: None,
            health: None,
        };
        let report = TestReport {
            target: "/dev/loop9".into(),
            block_size: 512,
            capacity_blocks: 2048,
            direct: true,
            steps: vec![step],
            passed: true,
            claim: None,
        };
        // The label is the stored index, 1-based as in the step log.
        assert_eq!(
            figures(Kind::Test, &report),
            named(&[
                ("step 1 write rate", 4.0),
                ("step 1 write IOPS", 976.0),
                ("step 1 write mean latency", 1.5),
                ("step 1 write duration", 2.5),
            ])
        );
    }

    #[test]
    fn erase_figures_read_every_outcome_field_they_name() {
        use drivelab_erase::{EraseResult, Method, Outcome, Strategy, Summary, VerifyMode};
        let drive = Outcome {
            device: "/dev/loop9".into(),
            serial: None,
            model: None,
            capacity_bytes: None,
            method: Method::Zeroout,
            reason: String::new(),
            result: EraseResult::Erased,
            error: None,
            bytes: 8_000_000,
            resumed_bytes: 0,
            erase_seconds: 2.0,
            verify_seconds: 0.5,
            verification: String::new(),
            offloaded: None,
            tuning: None,
            stream_io_seconds: None,
            exceptions: 0,
            certificate: None,
            html: None,
            pdf: None,
            journal: None,
            claim: None,
            timeline: Vec::new(),
            health: None,
            restored: None,
        };
        let summary = Summary {
            strategy: Strategy::Parallel,
            pattern: "zeros".into(),
            verify: VerifyMode::Full,
            bus_limit_bytes_per_s: None,
            drives: vec![drive],
            complete_seconds: 2.5,
            total_bytes: 8_000_000,
            aggregate_mb_per_s: 3.2,
        };
        assert_eq!(
            figures(Kind::Erase, &summary),
            named(&[
                ("/dev/loop9 erase time", 2.0),
                ("/dev/loop9 erase rate", 4.0),
                ("/dev/loop9 verify time", 0.5),
                ("complete time", 2.5),
                ("aggregate rate", 3.2),
            ])
        );
    }

    #[test]
    fn replay_figures_read_every_report_field_they_name() {
        use drivelab_replay::{Dist, ReplayReport, Score};
        let report = ReplayReport {
            duration_s: 1.5,
            score: Score {
                iops: 200.0,
                ..Score::default()
            },
            service_time_ns: Dist {
                mean: 1500.0,
                p50: 1000,
                p99: 9000,
                p999: 12000,
                ..Dist::default()
            },
            ..ReplayReport::default()
        };
        let want = named(&[
            ("IOPS", 200.0),
            ("duration", 1.5),
            ("mean service time", 1.5),
            ("p50 service time", 1.0),
            ("p99 service time", 9.0),
            ("p99.9 service time", 12.0),
        ]);
        assert_eq!(figures(Kind::Replay, &report), want);
        let audit = serde_json::json!({ "replay": report });
        assert_eq!(figures(Kind::Audit, &audit), want);
    }

    #[test]
    fn season_figures_read_every_drive_field_they_name() {
        use drivelab_season::result::{
            DriveSeason, Fill, Identity, Metrics, Pass, Round, SeasonReport, State,
        };
        let round = |n: usize, iops: f64| Round {
            round: n,
            metrics: Metrics {
                iops,
                bw_bytes: 1.0,
                lat_mean_ns: 1.0,
                lat_p99_ns: 1.0,
                seconds: 1.0,
            },
            bytes_written: 250_000,
        };
        let drive = DriveSeason {
            identity: Identity {
                device: "/dev/loop9".into(),
                ..Identity::default()
            },
            state: State::Done,
            error: None,
            fresh: true,
            resumed: false,
            purge: None,
            fill: Some(Fill {
                passes: 1,
                transfer_bytes: 1 << 20,
                queue_depth: 4,
                pass_results: vec![Pass {
                    pass: 1,
                    start_offset: 0,
                    bytes: 1_000_000,
                    seconds: 0.5,
                    bw_bytes: 2_000_000.0,
                }],
            }),
            write_series: None,
            image: None,
            workload: None,
            rounds: vec![round(1, 300.0), round(2, 250.0)],
            steady_state: None,
            compare: None,
            journal: None,
            plots: Vec::new(),
            claim: None,
            health: None,
        };
        let season = SeasonReport {
            version: String::new(),
            stages: Vec::new(),
            drives: vec![drive],
            complete_seconds: 3.0,
        };
        assert_eq!(
            figures(Kind::Season, &season),
            named(&[
                ("/dev/loop9 fill pass 1 rate", 2.0),
                ("/dev/loop9 last round IOPS", 250.0),
                ("complete time", 3.0),
            ])
        );
        let v = serde_json::to_value(&season).expect("serialise");
        assert_eq!(
            headline(Kind::Season, &v),
            "1 drive(s), 1.50M B in 3.00 s, 0.500 MB/s"
        );
    }
}
