//! A series stored as one row (schema version 3, table `series_columns`):
//! its seconds packed as columns of little-endian `f64`s.
//!
//! Layout of `columns`: one byte, the format (1); two bytes (LE), a mask
//! of the metrics present (bit i for [`SERIES_METRICS`]\[i\]; a metric no
//! second has is left out); then `points` times `t_s`, then `points`
//! values of each metric present, in [`SERIES_METRICS`] order. A second
//! without the metric holds NaN: the store keeps only finite numbers (see
//! [`crate::finite`]), so NaN means unknown and reads back as `None`.

use crate::{finite, SeriesRow, Source, SERIES_METRICS};

/// The format byte this build writes and reads.
const FORMAT: u8 = 1;

/// One series packed: the rows of one (source, name), in their order.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    /// Engine or device.
    pub source: Source,
    /// The job's or the device's name.
    pub name: String,
    /// How many seconds (rows).
    pub points: usize,
    /// The packed columns.
    pub columns: Vec<u8>,
}

/// Pack `rows` as one [`Packed`] per (source, name), in the order each
/// first appears; the rows of each keep their order.
pub fn pack(rows: &[SeriesRow]) -> Vec<Packed> {
    let mut groups: Vec<(Source, &str, Vec<&SeriesRow>)> = Vec::new();
    for r in rows {
        match groups
            .iter_mut()
            .find(|(s, n, _)| *s == r.source && *n == r.name)
        {
            Some(g) => g.2.push(r),
            None => groups.push((r.source, &r.name, vec![r])),
        }
    }
    groups
        .into_iter()
        .map(|(source, name, rows)| {
            let metrics: Vec<[Option<f64>; 12]> =
                rows.iter().map(|r| r.metrics().map(finite)).collect();
            let mut mask = 0u16;
            for m in &metrics {
                for (i, v) in m.iter().enumerate() {
                    if v.is_some() {
                        mask |= 1 << i;
                    }
                }
            }
            let n = rows.len();
            let mut out = Vec::with_capacity(3 + 8 * n * (1 + mask.count_ones() as usize));
            out.push(FORMAT);
            out.extend_from_slice(&mask.to_le_bytes());
            for r in &rows {
                out.extend_from_slice(&r.t_s.to_le_bytes());
            }
            for i in (0..SERIES_METRICS.len()).filter(|i| mask & (1 << i) != 0) {
                for m in &metrics {
                    out.extend_from_slice(&m[i].unwrap_or(f64::NAN).to_le_bytes());
                }
            }
            Packed {
                source,
                name: name.to_string(),
                points: n,
                columns: out,
            }
        })
        .collect()
}

/// The rows of a packed series, or what is wrong with it.
pub fn unpack(
    source: Source,
    name: &str,
    points: usize,
    columns: &[u8],
) -> Result<Vec<SeriesRow>, String> {
    let bad = |why: &str| format!("series {} '{name}': {why}", source.as_str());
    let (&format, rest) = columns.split_first().ok_or_else(|| bad("empty"))?;
    if format != FORMAT {
        return Err(bad(&format!(
            "packed in format {format}, this drivelab reads {FORMAT}"
        )));
    }
    if rest.len() < 2 {
        return Err(bad("cut short"));
    }
    let mask = u16::from_le_bytes([rest[0], rest[1]]);
    if mask >> SERIES_METRICS.len() != 0 {
        return Err(bad("unknown metrics"));
    }
    let data = &rest[2..];
    let cols = 1 + mask.count_ones() as usize;
    if Some(data.len()) != points.checked_mul(8 * cols) {
        return Err(bad(&format!(
            "{} bytes for {points} seconds of {cols} columns",
            data.len()
        )));
    }
    let num = |col: usize, row: usize| {
        let at = (col * points + row) * 8;
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[at..at + 8]);
        f64::from_le_bytes(b)
    };
    let present: Vec<usize> = (0..SERIES_METRICS.len())
        .filter(|i| mask & (1 << i) != 0)
        .collect();
    Ok((0..points)
        .map(|row| {
            let mut m = [None; 12];
            for (c, &i) in present.iter().enumerate() {
                m[i] = finite(Some(num(1 + c, row)));
            }
            SeriesRow::from_metrics(source, name.to_string(), num(0, row), m)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(source: Source, name: &str, t: f64, iops: Option<f64>, util: Option<f64>) -> SeriesRow {
        SeriesRow {
            source,
            name: name.into(),
            t_s: t,
            iops,
            util_pct: util,
            ..SeriesRow::default()
        }
    }

    #[test]
    fn rows_come_back_by_series_in_order() {
        let rows = vec![
            row(Source::Engine, "job0", 0.0, Some(10.0), None),
            row(Source::Device, "sda", 0.0, None, Some(99.5)),
            row(Source::Engine, "job0", 1.0, None, None),
            row(Source::Device, "sda", 1.0, None, Some(-0.0)),
            row(Source::Engine, "job0", 2.5, Some(f64::MAX), None),
        ];
        let packed = pack(&rows);
        assert_eq!(packed.len(), 2);
        assert_eq!((packed[0].name.as_str(), packed[0].points), ("job0", 3));
        // t_s and iops only: 3 + 2 columns × 3 seconds × 8 bytes.
        assert_eq!(packed[0].columns.len(), 3 + 2 * 3 * 8);
        let mut back = Vec::new();
        for p in &packed {
            back.extend(unpack(p.source, &p.name, p.points, &p.columns).unwrap());
        }
        let want: Vec<SeriesRow> = [0, 2, 4, 1, 3].iter().map(|&i| rows[i].clone()).collect();
        assert_eq!(back, want);
        assert!(back[4].util_pct.unwrap().is_sign_negative(), "bits kept");
    }

    #[test]
    fn non_finite_numbers_are_unknown() {
        let p = pack(&[row(
            Source::Engine,
            "j",
            0.0,
            Some(f64::INFINITY),
            Some(1.0),
        )]);
        let back = unpack(Source::Engine, "j", 1, &p[0].columns).unwrap();
        assert_eq!((back[0].iops, back[0].util_pct), (None, Some(1.0)));
    }

    #[test]
    fn damaged_columns_are_refused() {
        let p = pack(&[row(Source::Engine, "j", 0.0, Some(1.0), None)]);
        let c = &p[0].columns;
        assert!(unpack(Source::Engine, "j", 2, c).is_err(), "wrong count");
        assert!(unpack(Source::Engine, "j", 1, &c[..c.len() - 1]).is_err());
        assert!(unpack(Source::Engine, "j", 1, &[]).is_err());
        let mut f = c.clone();
        f[0] = 9;
        assert!(unpack(Source::Engine, "j", 1, &f).is_err(), "format");
        let mut m = c.clone();
        m[2] = 0x80;
        assert!(unpack(Source::Engine, "j", 1, &m).is_err(), "mask");
        assert!(unpack(Source::Engine, "j", usize::MAX, c).is_err());
    }
}
