//! What predictions on this host have missed by, and the interval that follows from it.
//!
//! The machine table's spread (a few percent) says nothing of how far a run on this host lands
//! from its prediction: the host's speed drifts (a shared VM: 20-35% between passes minutes
//! apart) and the model has its own error. `mpicast validate` records, for each prediction it
//! compares on this host's own platform with this host's own table, the measured median over
//! the predicted time (cache: `calibration/<host>.json`). A later prediction of the same mode
//! takes as its interval the 5th to 95th percentile of those ratios, each over its own table's
//! median, times its predicted time and this table's median ratio (1 until the table has
//! MIN_RECORDS of its own), joined with the table's spread (`for_mode`). The spread of a
//! program's runs about its prediction (the host's drift within a pass, the model's error)
//! carries over from one table to the next; where a table put the host's speed does not: two
//! tables measured minutes apart on the Intel VM had their passes' runs at 1.2x and at 1.0x of
//! their predictions. Without them every table measured again began with intervals of a few
//! percent.

use std::path::PathBuf;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::model::prediction::Calibration;

/// Ratios a mode needs before they widen its interval.
pub const MIN_RECORDS: usize = Calibration::MIN_VALIDATIONS;
/// The newest records kept per host.
const KEEP: usize = 400;
/// The share of measured values the interval is meant to hold: the 5th to 95th percentile.
/// (With the 10th to 90th, a second `make accuracy` pass held 80 of 118 measured medians: the
/// host drifts between passes, so the next run lands outside a band of the last ones more
/// often than the band's nominal share says; the same records with this band held 95.)
const LOW_Q: f64 = 0.05;
const HIGH_Q: f64 = 0.95;

/// One validated prediction.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// The machine table's `created_unix_s`.
    pub table: u64,
    /// static, trace, measured or scaled (`mpicast validate`'s modes).
    pub mode: String,
    /// Measured median over predicted time.
    pub ratio: f64,
    pub program: String,
    pub ranks: u32,
    pub recorded_unix_s: u64,
}

/// The host's records (docs/FORMATS.md, mpicast/calibration).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Store {
    pub records: Vec<Record>,
}

impl crate::model::Artifact for Store {
    const SCHEMA: &'static str = "mpicast/calibration";
    const VERSION: u32 = 1;
}

fn dir() -> PathBuf {
    crate::machine::cache_root().join("calibration")
}

fn path(host: &str) -> PathBuf {
    dir().join(format!("{}.json", crate::model::file_name_part(host)))
}

/// The host's records (none when the file is missing or unreadable: it is a cache).
pub fn load(host: &str) -> Vec<Record> {
    crate::model::read_artifact::<Store>(&path(host)).map(|s| s.records).unwrap_or_default()
}

/// Appends records for `host`, keeping the newest KEEP.
pub fn record(host: &str, new: &[Record]) -> Result<()> {
    if new.is_empty() {
        return Ok(());
    }
    let _lock = crate::model::CacheLock::acquire(&dir(), "calibration")?;
    let mut records = load(host);
    records.extend(new.iter().cloned());
    let drop = records.len().saturating_sub(KEEP);
    records.drain(..drop);
    crate::model::write_artifact(&path(host), &Store { records })
}

/// The `q` quantile of sorted values (linear between neighbours).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let x = q * (sorted.len() - 1) as f64;
    let (i, f) = (x.floor() as usize, x - x.floor());
    match sorted.get(i + 1) {
        Some(next) => sorted[i] * (1.0 - f) + next * f,
        None => sorted[i],
    }
}

/// The newest records whose spread makes a band.
const POOL: usize = 100;

/// The calibration of a prediction of `mode` made with the table created at `table`.
///
/// A ratio mixes two things: where the table put the host's speed (one table measured in a
/// fast stretch had every prediction of the pass after it 15-30% under the runs, the next one
/// within a few percent) and how far one program's runs land from its prediction around that
/// (the model's own error and the runs' noise). Only the second carries from one table to the
/// next. So each table's ratios (where it has MIN_RECORDS of the mode) are taken over their
/// own median, the newest POOL of those from this table and the host's others make the
/// spread, and the band is that spread's 5th and 95th percentiles about this table's median
/// ratio where it has MIN_RECORDS, about 1 (the prediction) where it has fewer. Replayed over
/// the 148 records of two `make accuracy` passes on the Intel VM (2026-12-02), the second
/// table's 74 points: 65 inside, against 47 with the ratios of earlier tables taken as they
/// were (the first table's bias with them) and of the table's own first 5 to 8 (a narrow band).
pub fn for_mode(records: &[Record], table: u64, mode: &str) -> Calibration {
    let usable: Vec<&Record> = records.iter().filter(|x| x.mode == mode && x.ratio.is_finite() && x.ratio > 0.0).collect();
    let mut by_table: std::collections::BTreeMap<u64, Vec<f64>> = std::collections::BTreeMap::new();
    for x in &usable {
        by_table.entry(x.table).or_default().push(x.ratio);
    }
    // The median ratio of each table with MIN_RECORDS of the mode.
    let medians: std::collections::BTreeMap<u64, f64> = by_table.iter().filter(|(_, v)| v.len() >= MIN_RECORDS).map(|(&t, v)| (t, crate::machine::measure::median(v))).collect();
    let mut pooled: Vec<&Record> = usable.iter().copied().filter(|x| medians.contains_key(&x.table)).collect();
    pooled.sort_by_key(|x| std::cmp::Reverse(x.recorded_unix_s));
    pooled.truncate(POOL);
    let mut spread: Vec<f64> = pooled.iter().map(|x| x.ratio / medians[&x.table]).collect();
    spread.sort_by(f64::total_cmp);
    let own = by_table.get(&table).map_or(0, Vec::len);
    let earlier = pooled.iter().filter(|x| x.table != table).count() as u32;
    let centre = medians.get(&table).copied().unwrap_or(1.0);
    let ratio = (spread.len() >= MIN_RECORDS).then(|| [centre * quantile(&spread, LOW_Q), centre * quantile(&spread, HIGH_Q)]);
    Calibration {
        mode: mode.to_string(),
        table_created_unix_s: table,
        validations: own as u32,
        ratio,
        earlier_tables: (ratio.is_some() && earlier > 0).then_some(earlier),
    }
}

/// `interval` joined with what the calibration's ratios give around `predicted`.
pub fn widen(interval: [f64; 2], predicted: f64, c: &Calibration) -> [f64; 2] {
    match c.ratio {
        Some([lo, hi]) => [interval[0].min(predicted * lo), interval[1].max(predicted * hi)],
        None => interval,
    }
}

/// The validate mode a prediction's mode string stands for.
pub fn mode_of(prediction_mode: &str, scaled: bool) -> &'static str {
    if scaled {
        "scaled"
    } else if prediction_mode.starts_with("static") {
        "static"
    } else if prediction_mode.contains("measured") {
        "measured"
    } else {
        "trace"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(table: u64, mode: &str, ratio: f64) -> Record {
        Record { table, mode: mode.into(), ratio, program: "p.c".into(), ranks: 2, recorded_unix_s: 0 }
    }

    #[test]
    fn the_interval_takes_the_ratios_percentiles_once_there_are_enough() {
        let mut rs: Vec<Record> = (0..4).map(|i| rec(7, "static", 1.0 + 0.1 * i as f64)).collect();
        assert_eq!(for_mode(&rs, 7, "static").ratio, None);
        rs.push(rec(7, "static", 1.4));
        // Another mode's ratios do not count, nor a table with fewer than 5.
        rs.push(rec(8, "static", 9.0));
        rs.push(rec(7, "trace", 0.1));
        let c = for_mode(&rs, 7, "static");
        assert_eq!((c.validations, c.earlier_tables), (5, None));
        let [lo, hi] = c.ratio.unwrap();
        // 1.0 1.1 1.2 1.3 1.4 about their median 1.2: the 5th percentile 1.02, the 95th 1.38.
        assert!((lo - 1.02).abs() < 1e-9 && (hi - 1.38).abs() < 1e-9, "{lo} {hi}");
        let w = widen([0.98, 1.02], 1.0, &c);
        assert!(w[0] == 0.98 && (w[1] - 1.38).abs() < 1e-12, "{w:?}");
    }

    #[test]
    fn earlier_tables_give_their_spread_about_their_own_median_not_their_bias() {
        // Table 7 was measured in a fast stretch: its runs took 1.2x to 1.3x of its predictions.
        let mut rs: Vec<Record> = [1.2, 1.22, 1.25, 1.28, 1.3, 1.25]
            .into_iter()
            .enumerate()
            .map(|(i, r)| Record { recorded_unix_s: i as u64, ..rec(7, "trace", r) })
            .collect();
        // Table 9 has 2 records: too few for its own median, so the band is about 1.
        rs.push(rec(9, "trace", 0.97));
        rs.push(rec(9, "trace", 1.01));
        let c = for_mode(&rs, 9, "trace");
        assert_eq!((c.validations, c.earlier_tables), (2, Some(6)));
        let [lo, hi] = c.ratio.unwrap();
        assert!((0.95..0.97).contains(&lo) && (1.03..1.05).contains(&hi), "{lo} {hi}");
        // Without 5 records of any table: the table's spread alone.
        assert_eq!(for_mode(&rs[..4], 9, "trace").ratio, None);
        // Once the table has 5 of its own, the band is about their median, the spread pooled.
        rs.extend([1.0, 0.99, 1.02].map(|r| Record { recorded_unix_s: 10, ..rec(9, "trace", r) }));
        let own = for_mode(&rs, 9, "trace");
        assert_eq!((own.validations, own.earlier_tables), (5, Some(6)));
        let [lo, hi] = own.ratio.unwrap();
        assert!(lo < 1.0 && lo > 0.9 && hi > 1.01 && hi < 1.1, "{lo} {hi}");
    }
}
