//! fio's `json+`: the JSON output plus each latency histogram as `bins`,
//! in fio's own buckets so that fio's tools (`fio_jsonplus_clat2csv`,
//! fio-plot) read them.
//!
//! fio's buckets (stat.h, `FIO_IO_U_PLAT_BITS` = 6, `FIO_IO_U_PLAT_VAL` =
//! 64, 29 groups): values below 128 ns have a bucket each; above, every
//! power of two `[2^m, 2^(m+1))` is cut into 64 equal buckets. fio keys a
//! bucket by `plat_idx_to_val`: the value itself below 128 ns, else the
//! bucket's midpoint rounded down. Values past the last group share the
//! last bucket (index 1855).
//!
//! The conversion from drivelab's histogram is exact, not an
//! approximation: drivelab's buckets (values below 256 ns exact, 128 per
//! power of two above) are at least as fine as fio's everywhere and lie on
//! the same power-of-two grid, so every drivelab bucket falls inside one
//! fio bucket. Each fio bin's count is the sum of the drivelab buckets in
//! it, so it is exactly the count fio would have made of the same
//! latencies.

use drivelab_stats::LatencyHistogram;

use crate::model::{LatReport, OrderedMap, RunReport};

/// fio's `FIO_IO_U_PLAT_BITS`.
const PLAT_BITS: u32 = 6;
/// fio's `FIO_IO_U_PLAT_VAL`.
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's `FIO_IO_U_PLAT_NR`: 29 groups of 64.
const PLAT_NR: u64 = 29 * PLAT_VAL;

/// fio's bucket index of a latency, ns (`plat_val_to_idx`).
pub fn plat_val_to_idx(v: u64) -> u64 {
    let msb = if v == 0 { 0 } else { 63 - v.leading_zeros() };
    if msb <= PLAT_BITS {
        return v;
    }
    let error_bits = msb - PLAT_BITS;
    let base = u64::from(error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (v >> error_bits);
    (base + offset).min(PLAT_NR - 1)
}

/// The value fio reports for bucket `idx`, ns (`plat_idx_to_val`).
pub fn plat_idx_to_val(idx: u64) -> u64 {
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    let k = idx % PLAT_VAL;
    // fio: base + (k + 0.5) * 2^error_bits, truncated to an integer.
    base + ((2 * k + 1) << error_bits) / 2
}

/// A histogram as fio's `bins`: fio's bucket values in increasing order,
/// each with its count; empty buckets left out, as fio does.
pub fn fio_bins(h: &LatencyHistogram) -> OrderedMap<u64> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for b in h.buckets() {
        let idx = plat_val_to_idx(b.low_ns);
        match out.last_mut() {
            Some((i, c)) if *i == idx => *c += b.count,
            _ => out.push((idx, b.count)),
        }
    }
    OrderedMap(
        out.into_iter()
            .map(|(i, c)| (plat_idx_to_val(i).to_string(), c))
            .collect(),
    )
}

fn strip_lat(l: &mut LatReport) {
    l.bins = OrderedMap::default();
}

/// The report without any `bins` (plain `json`).
pub fn without_bins(r: &RunReport) -> RunReport {
    let mut r = r.clone();
    for j in &mut r.jobs {
        for d in [&mut j.read, &mut j.write, &mut j.trim] {
            strip_lat(&mut d.slat_ns);
            strip_lat(&mut d.clat_ns);
            strip_lat(&mut d.lat_ns);
            for p in &mut d.prios {
                strip_lat(&mut p.clat_ns);
            }
        }
        strip_lat(&mut j.sync.lat_ns);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_bucket_index_and_value_match_fios_tables() {
        // Below 128 ns every value is its own bucket.
        assert_eq!(plat_val_to_idx(0), 0);
        assert_eq!(plat_val_to_idx(127), 127);
        assert_eq!(plat_idx_to_val(127), 127);
        // [128, 256): width 2; idx 128 covers 128..=129, value 129 (128 + 1).
        assert_eq!(plat_val_to_idx(128), 128);
        assert_eq!(plat_val_to_idx(129), 128);
        assert_eq!(plat_val_to_idx(130), 129);
        assert_eq!(plat_idx_to_val(128), 129);
        // [2^15, 2^16): width 2^9 = 512; 35_584 is a value fio printed as a
        // percentile (35_328 + 256).
        let i = plat_val_to_idx(35_500);
        assert_eq!(plat_idx_to_val(i), 35_584);
        // Every value maps to a bucket whose value lies within the bucket.
        for v in [200u64, 1_000, 65_535, 65_536, 1 << 30, (1 << 33) + 5] {
            let val = plat_idx_to_val(plat_val_to_idx(v));
            let width = if v < 128 {
                1
            } else {
                1u64 << (63 - v.leading_zeros() - PLAT_BITS)
            };
            assert!(val.abs_diff(v) < width, "{v} -> {val}");
        }
        // Past the last group: the last bucket.
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn bins_sum_drivelab_buckets_into_fio_buckets_exactly() {
        let mut h = LatencyHistogram::new();
        // 300 and 301 ns: two drivelab buckets, one fio bucket (width 4
        // from 256: 300..=303).
        h.record(300);
        h.record(301);
        h.record(1_000_000);
        h.record(50);
        let b = fio_bins(&h);
        assert_eq!(
            b.0,
            vec![
                ("50".to_string(), 1),
                (plat_idx_to_val(plat_val_to_idx(300)).to_string(), 2),
                (plat_idx_to_val(plat_val_to_idx(1_000_000)).to_string(), 1),
            ]
        );
        assert_eq!(b.0[1].0, "302");
        assert_eq!(b.0.iter().map(|x| x.1).sum::<u64>(), h.count());
    }
}
