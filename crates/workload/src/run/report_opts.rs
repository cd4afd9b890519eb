//! fio's options of what a job's report shows: which latency percentiles
//! are computed and printed (`clat_percentiles`, `lat_percentiles`,
//! `slat_percentiles`, `percentile_list`) and which latencies are left
//! out (`disable_lat`, `disable_clat`, `disable_slat`; and
//! `disable_bw_measurement`, which changes no report of fio 3.33). One family ([`ReportOpts`]), read where a
//! job's result is built (`run::execute`).

use std::collections::BTreeMap;

use drivelab_report::{percentile_key, DirReport, LatReport};
use drivelab_stats::FIO_DEFAULT_PERCENTILES;

use crate::job::outcome::DirStats;

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::value::parse_flag;
use crate::SpecError;

/// The most percentiles `percentile_list` takes (fio's FIO_IO_U_LIST_MAX_LEN).
pub const MAX_PERCENTILES: usize = 20;

/// The report family.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOpts {
    /// Completion-latency percentiles (`clat_percentiles`); default on.
    pub clat_percentiles: bool,
    /// Total-latency percentiles (`lat_percentiles`); default off.
    pub lat_percentiles: bool,
    /// Submission-latency percentiles (`slat_percentiles`); default off.
    pub slat_percentiles: bool,
    /// The percentiles computed (`percentile_list`), in percent.
    pub percentile_list: Vec<f64>,
    /// Leave total latency out (`disable_lat`).
    pub disable_lat: bool,
    /// Leave completion latency out (`disable_clat`).
    pub disable_clat: bool,
    /// Leave submission latency out (`disable_slat`).
    pub disable_slat: bool,
    /// `disable_bw_measurement`: fio 3.33 still reports the bandwidth
    /// and IOPS samples with it (it only stops per-I/O entries of a
    /// `write_bw_log` with `log_avg_msec=0`), so the report is unchanged.
    pub disable_bw: bool,
}

impl Default for ReportOpts {
    fn default() -> Self {
        ReportOpts {
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            percentile_list: FIO_DEFAULT_PERCENTILES.to_vec(),
            disable_lat: false,
            disable_clat: false,
            disable_slat: false,
            disable_bw: false,
        }
    }
}

impl ReportOpts {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "clat_percentiles",
            [],
            Bool,
            "1",
            "report completion-latency percentiles"
        ),
        opt!(
            "lat_percentiles",
            [],
            Bool,
            "0",
            "report total-latency percentiles"
        ),
        opt!(
            "slat_percentiles",
            [],
            Bool,
            "0",
            "report submission-latency percentiles (drivelab's loop measures no separate submission latency: none are shown, as fio shows none for its sync engines)"
        ),
        opt!(
            "percentile_list",
            [],
            Text,
            "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99",
            "the latency percentiles reported, ':'-separated, at most 20, each from 0 to 100"
        ),
        opt!(
            "disable_lat",
            [],
            Bool,
            "0",
            "leave total latency out of the report"
        ),
        opt!(
            "disable_clat",
            [],
            Bool,
            "0",
            "leave completion latency out of the report"
        ),
        opt!(
            "disable_slat",
            [],
            Bool,
            "0",
            "leave submission latency out of the report"
        ),
        opt!(
            "disable_bw_measurement",
            ["disable_bw"],
            Bool,
            "0",
            "accepted: fio 3.33 reports the bandwidth and IOPS samples with it all the same (it only drops the per-I/O entries of write_bw_log with log_avg_msec=0, which drivelab still writes)"
        ),
    ];
}

impl ReportOpts {
    /// A direction's report as these options shape it: the percentiles
    /// of `percentile_list` on each latency that has them on, and the
    /// measurements disabled left out (zero).
    pub(crate) fn shape(&self, mut d: DirReport, stats: &DirStats) -> DirReport {
        let pcts = |on: bool| -> BTreeMap<String, u64> {
            if !on || stats.ios == 0 {
                return BTreeMap::new();
            }
            stats
                .lat
                .percentiles(&self.percentile_list)
                .into_iter()
                .map(|(p, v)| (percentile_key(p), v))
                .collect()
        };
        d.clat_ns.percentile = pcts(self.clat_percentiles);
        d.lat_ns.percentile = pcts(self.lat_percentiles);
        if self.disable_clat {
            d.clat_ns = LatReport::default();
        }
        if self.disable_lat {
            d.lat_ns = LatReport::default();
        }
        if self.disable_slat {
            d.slat_ns = LatReport::default();
        }
        d
    }
}

/// fio's `percentile_list`: `P[:P…]`, each 0..=100, at most
/// [`MAX_PERCENTILES`].
fn parse_list(key: &str, v: &str) -> Result<Vec<f64>, SpecError> {
    let bad = || SpecError::BadValue {
        key: key.to_string(),
        value: v.to_string(),
        expect: format!(
            "':'-separated percentiles from 0 to 100, at most {MAX_PERCENTILES} (e.g. 50:99:99.9)"
        ),
    };
    let list = v
        .split(':')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| (0.0..=100.0).contains(x))
        })
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(bad)?;
    if list.is_empty() || list.len() > MAX_PERCENTILES {
        return Err(bad());
    }
    Ok(list)
}

impl OptionFamily for ReportOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        match key {
            "percentile_list" => self.percentile_list = parse_list(key, v)?,
            _ => {
                let on = parse_flag(key, v)?;
                let field = match key {
                    "clat_percentiles" => &mut self.clat_percentiles,
                    "lat_percentiles" => &mut self.lat_percentiles,
                    "slat_percentiles" => &mut self.slat_percentiles,
                    "disable_lat" => &mut self.disable_lat,
                    "disable_clat" => &mut self.disable_clat,
                    "disable_slat" => &mut self.disable_slat,
                    _ => &mut self.disable_bw,
                };
                *field = on;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_lists_parse_as_fio_takes_them() {
        let mut r = ReportOpts::default();
        assert_eq!(r.percentile_list.len(), 17);
        r.set("percentile_list", "50:99:99.9").unwrap();
        assert_eq!(r.percentile_list, vec![50.0, 99.0, 99.9]);
        assert!(r.set("percentile_list", "50:101").is_err());
        assert!(r.set("percentile_list", "x").is_err());
        let many = vec!["1"; 21].join(":");
        assert!(r.set("percentile_list", &many).is_err());
        r.set("disable_bw_measurement", "1").unwrap();
        assert!(r.disable_bw);
    }
}
