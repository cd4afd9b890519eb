//! A station's figures, per drive it sees: its state, the bytes of its
//! current phase done and planned, the share done, speed, time left and
//! temperature, each labelled with the drive's bay, plus how many drives
//! are in each state. The station's rows (what its screen and events show)
//! are the source, copied into [`StationDrive`]s by the command line, so
//! a scrape and an event of the same moment say the same.

use super::catalog::{
    STATION_DONE, STATION_DRIVES, STATION_ETA, STATION_PROGRESS, STATION_STATE,
    STATION_TEMPERATURE, STATION_THROUGHPUT, STATION_TOTAL,
};
use super::health::{self, DriveHealth};
use super::info;
use super::{Family, Value};

/// One drive as the station's row shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StationDrive {
    /// Kernel name (`sdb`, `loop3`).
    pub device: String,
    /// Serial (empty when it has none).
    pub serial: String,
    /// The bay (empty for a drive in no bay).
    pub bay: String,
    /// Its state's word.
    pub state: String,
    /// Bytes of the current phase done.
    pub done_bytes: u64,
    /// Bytes of the current phase in all.
    pub planned_bytes: u64,
    /// Share of the phase done, 0..1.
    pub progress: f64,
    /// Bytes per second.
    pub throughput: f64,
    /// Seconds left in the phase, when a speed is known.
    pub eta_s: Option<f64>,
    /// °C, when the drive reports one.
    pub temperature_c: Option<f64>,
    /// Its error counters and wear, as triage read them.
    pub health: Option<DriveHealth>,
}

/// Every figure of `drives`, whose machine has the states `states` (each
/// drive gets a 0/1 sample per state).
pub fn families(drives: &[StationDrive], states: &[&str]) -> Vec<Family> {
    let mut state = Family::of(&STATION_STATE);
    let mut count = Family::of(&STATION_DRIVES);
    let mut done = Family::of(&STATION_DONE);
    let mut total = Family::of(&STATION_TOTAL);
    let mut ratio = Family::of(&STATION_PROGRESS);
    let mut tput = Family::of(&STATION_THROUGHPUT);
    let mut eta = Family::of(&STATION_ETA);
    let mut temp = Family::of(&STATION_TEMPERATURE);
    let mut hf = health::empty();
    for s in states {
        let n = drives.iter().filter(|d| d.state == *s).count();
        count.push(&[s], Value::Gauge(n as f64));
    }
    for d in drives {
        let l = [d.device.as_str(), d.serial.as_str(), d.bay.as_str()];
        for s in states {
            let on = if d.state == *s { 1.0 } else { 0.0 };
            state.push(&[l[0], l[1], l[2], s], Value::Gauge(on));
        }
        done.push(&l, Value::Gauge(d.done_bytes as f64));
        total.push(&l, Value::Gauge(d.planned_bytes as f64));
        ratio.push(&l, Value::Gauge(d.progress.clamp(0.0, 1.0)));
        tput.push(&l, Value::Gauge(d.throughput));
        if let Some(e) = d.eta_s {
            eta.push(&l, Value::Gauge(e));
        }
        if let Some(t) = d.temperature_c {
            temp.push(&l, Value::Gauge(t));
        }
        if let Some(h) = &d.health {
            health::push_as(&mut hf, &d.device, &d.serial, h);
        }
    }
    vec![
        info::build("station"),
        state,
        count,
        done,
        total,
        ratio,
        tput,
        eta,
        temp,
    ]
    .into_iter()
    .chain(hf)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::find;

    fn drive(device: &str, bay: &str, state: &str) -> StationDrive {
        StationDrive {
            device: device.into(),
            serial: String::new(),
            bay: bay.into(),
            state: state.into(),
            done_bytes: 3 << 20,
            planned_bytes: 4 << 20,
            progress: 0.75,
            throughput: 1e6,
            eta_s: None,
            temperature_c: None,
            health: None,
        }
    }

    #[test]
    fn each_drive_has_one_state_and_the_counts_add_up() {
        let states = ["erasing", "certified", "outside"];
        let mut a = drive("loop1", "bay-a.img", "erasing");
        a.eta_s = Some(1.5);
        a.temperature_c = Some(41.0);
        let drives = vec![
            a,
            drive("loop2", "", "outside"),
            drive("loop3", "b", "erasing"),
        ];
        let f = families(&drives, &states);
        let state = find(&f, &STATION_STATE).unwrap();
        assert_eq!(state.samples.len(), 9);
        assert_eq!(
            state.get(&["loop1", "", "bay-a.img", "erasing"]),
            Some(&Value::Gauge(1.0))
        );
        assert_eq!(
            state.get(&["loop1", "", "bay-a.img", "certified"]),
            Some(&Value::Gauge(0.0))
        );
        let count = find(&f, &STATION_DRIVES).unwrap();
        assert_eq!(count.get(&["erasing"]), Some(&Value::Gauge(2.0)));
        assert_eq!(count.get(&["certified"]), Some(&Value::Gauge(0.0)));
        let l = ["loop1", "", "bay-a.img"];
        assert_eq!(
            find(&f, &STATION_PROGRESS).unwrap().get(&l),
            Some(&Value::Gauge(0.75))
        );
        // Absent, not zero, where nothing is known.
        assert_eq!(find(&f, &STATION_ETA).unwrap().samples.len(), 1);
        assert_eq!(
            find(&f, &STATION_TEMPERATURE).unwrap().get(&l),
            Some(&Value::Gauge(41.0))
        );
    }
}
