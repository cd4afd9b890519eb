//! A season's figures, per drive: its stage, the stage's units done and
//! planned and its time so far, the round and the most rounds. Read from
//! the drive's [`drivelab_season::Status`], as the progress line reads it.

use drivelab_season::StageFigures;

use super::catalog::{
    SEASON_DONE, SEASON_MAX_ROUNDS, SEASON_PLANNED, SEASON_ROUND, SEASON_STAGE,
    SEASON_STAGE_SECONDS,
};
use super::info;
use super::run::finished_family;
use super::{Family, Value};

/// Every figure of the drives `(kernel name, figures)`; `over`: the season
/// has ended.
pub fn families(drives: &[(String, StageFigures)], over: bool) -> Vec<Family> {
    let mut stage = Family::of(&SEASON_STAGE);
    let mut done = Family::of(&SEASON_DONE);
    let mut planned = Family::of(&SEASON_PLANNED);
    let mut round = Family::of(&SEASON_ROUND);
    let mut max = Family::of(&SEASON_MAX_ROUNDS);
    let mut secs = Family::of(&SEASON_STAGE_SECONDS);
    for (dev, f) in drives {
        // The stage's word: "fill 1/2" is the fill stage (its pass in
        // the progress line only), so a stage keeps one series.
        let word = f.stage.split_whitespace().next().unwrap_or("");
        let l = [dev.as_str(), word];
        stage.push(&l, Value::Gauge(1.0));
        done.push(&l, Value::Gauge(f.done as f64));
        if f.total > 0 {
            planned.push(&l, Value::Gauge(f.total as f64));
        }
        secs.push(&l, Value::Gauge(f.stage_seconds));
        if f.max_rounds > 0 {
            round.push(&[dev], Value::Gauge(f.round as f64));
            max.push(&[dev], Value::Gauge(f.max_rounds as f64));
        }
    }
    vec![
        info::build("season"),
        finished_family(over),
        stage,
        done,
        planned,
        round,
        max,
        secs,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::find;

    #[test]
    fn a_drive_in_its_rounds_shows_its_round_and_no_plan() {
        let fill = StageFigures {
            stage: "fill 1/2".into(),
            done: 1 << 20,
            total: 4 << 20,
            stage_seconds: 2.0,
            ..StageFigures::default()
        };
        let rounds = StageFigures {
            stage: "rounds".into(),
            done: 900,
            total: 0,
            round: 3,
            max_rounds: 25,
            stage_seconds: 0.5,
        };
        let f = families(&[("loop1".into(), fill), ("loop2".into(), rounds)], false);
        let stage = find(&f, &SEASON_STAGE).unwrap();
        assert_eq!(stage.get(&["loop1", "fill"]), Some(&Value::Gauge(1.0)));
        assert_eq!(stage.get(&["loop2", "rounds"]), Some(&Value::Gauge(1.0)));
        let planned = find(&f, &SEASON_PLANNED).unwrap();
        assert_eq!(
            planned.get(&["loop1", "fill"]),
            Some(&Value::Gauge(4194304.0))
        );
        assert_eq!(planned.get(&["loop2", "rounds"]), None);
        let round = find(&f, &SEASON_ROUND).unwrap();
        assert_eq!(round.samples.len(), 1);
        assert_eq!(round.get(&["loop2"]), Some(&Value::Gauge(3.0)));
    }
}
