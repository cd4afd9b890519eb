//! The figures, as typed families of samples: what `encode` writes. Every
//! family is made from one declaration of [`catalog`], so a metric's name,
//! type, unit and labels are written once.

pub mod catalog;
pub mod erase;
pub mod health;
pub mod info;
pub mod replay;
pub mod run;
pub mod season;
pub mod station;
pub mod steps;
pub mod temperature;

pub use catalog::{Kind, Metric};

/// One sample's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A counter's total (an exact integer).
    Counter(u64),
    /// A gauge.
    Gauge(f64),
    /// A histogram: cumulative counts per upper bound (increasing, `+Inf`
    /// not included: it is `count`), the number of samples and their sum.
    Histogram {
        /// `(le, cumulative count)`, bounds increasing.
        buckets: Vec<(f64, u64)>,
        /// Every sample (the `+Inf` bucket).
        count: u64,
        /// The sum of the samples, in the metric's unit.
        sum: f64,
    },
}

/// One labelled sample of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Label values, in the order of the family's declared labels.
    pub labels: Vec<String>,
    /// The value.
    pub value: Value,
}

/// A metric and its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Its declaration.
    pub metric: &'static Metric,
    /// Its samples (none: the family is left out of the output).
    pub samples: Vec<Sample>,
}

impl Family {
    /// A family of `metric` with no samples yet.
    pub fn of(metric: &'static Metric) -> Family {
        Family {
            metric,
            samples: Vec::new(),
        }
    }

    /// Add a sample; `labels` in the order the metric declares them.
    pub fn push(&mut self, labels: &[&str], value: Value) {
        debug_assert_eq!(
            labels.len(),
            self.metric.labels.len(),
            "{}",
            self.metric.name
        );
        self.samples.push(Sample {
            labels: labels.iter().map(|s| s.to_string()).collect(),
            value,
        });
    }

    /// The sample whose labels are `labels`, if any.
    pub fn get(&self, labels: &[&str]) -> Option<&Value> {
        self.samples
            .iter()
            .find(|s| {
                s.labels
                    .iter()
                    .map(String::as_str)
                    .eq(labels.iter().copied())
            })
            .map(|s| &s.value)
    }
}

/// The family of `metric` among `families`, if it has one.
pub fn find<'a>(families: &'a [Family], metric: &Metric) -> Option<&'a Family> {
    families.iter().find(|f| f.metric.name == metric.name)
}
