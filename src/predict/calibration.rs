//! What predictions on this host have missed by, and the interval that follows from it.
//!
//! The machine table's spread (a few percent) says nothing of how far a run on this host lands
//! from its prediction: the host's speed drifts (a shared VM: 20-35% between passes minutes
//! apart) and the model has its own error. `mpicast validate` records, for each prediction it
//! compares on this host's own platform with this host's own table, the measured median over
//! the predicted time (cache: `calibration/<host>.json`). A later prediction under the same
//! conditions (the same table, the same mode) takes as its interval the 5th to 95th
//! percentile of those ratios times its predicted time, joined with the table's spread, once
//! there are MIN_RECORDS of them. A table measured again starts a new record, and until it has
//! MIN_RECORDS of its own the host's newest records of the mode with its earlier tables stand
//! in (the interval says so): most of the spread is the host's drift, not the table's (two
//! tables measured back to back predicted within 3% of each other, while runs moved 20-35%),
//! and without them every table measured again began with intervals of a few percent.

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

/// The newest records of earlier tables that stand in for a table with too few of its own.
const EARLIER: usize = 100;

/// The calibration of a prediction of `mode` made with the table created at `table`: the
/// ratios' 5th and 95th percentiles where there are MIN_RECORDS or more of this table, else
/// of the newest EARLIER records of the mode with the host's other tables, where there are
/// MIN_RECORDS of those.
pub fn for_mode(records: &[Record], table: u64, mode: &str) -> Calibration {
    let usable = |x: &&Record| x.mode == mode && x.ratio.is_finite() && x.ratio > 0.0;
    let sorted = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v
    };
    let own = sorted(records.iter().filter(usable).filter(|x| x.table == table).map(|x| x.ratio).collect());
    let band = |r: &[f64]| [quantile(r, LOW_Q), quantile(r, HIGH_Q)];
    if own.len() < MIN_RECORDS {
        let mut others: Vec<&Record> = records.iter().filter(usable).filter(|x| x.table != table).collect();
        others.sort_by_key(|x| std::cmp::Reverse(x.recorded_unix_s));
        let earlier = sorted(others.iter().take(EARLIER).map(|x| x.ratio).collect());
        if earlier.len() >= MIN_RECORDS {
            return Calibration { mode: mode.to_string(), table_created_unix_s: table, validations: own.len() as u32, ratio: Some(band(&earlier)), earlier_tables: Some(earlier.len() as u32) };
        }
    }
    let ratio = (own.len() >= MIN_RECORDS).then(|| band(&own));
    Calibration { mode: mode.to_string(), table_created_unix_s: table, validations: own.len() as u32, ratio, earlier_tables: None }
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
        // Another table's and another mode's ratios do not count.
        rs.push(rec(8, "static", 9.0));
        rs.push(rec(7, "trace", 0.1));
        let c = for_mode(&rs, 7, "static");
        assert_eq!((c.validations, c.earlier_tables), (5, None));
        let [lo, hi] = c.ratio.unwrap();
        // 1.0 1.1 1.2 1.3 1.4: the 5th percentile 1.02, the 95th 1.38.
        assert!((lo - 1.02).abs() < 1e-9 && (hi - 1.38).abs() < 1e-9, "{lo} {hi}");
        let w = widen([0.98, 1.02], 1.0, &c);
        assert!(w[0] == 0.98 && (w[1] - 1.38).abs() < 1e-12, "{w:?}");
    }

    #[test]
    fn a_table_without_enough_records_takes_the_newest_of_earlier_tables() {
        // Table 9 has 2 records; tables 7 and 8 have 6 between them, the oldest far off.
        let mut rs: Vec<Record> = [(7, 5.0, 1), (7, 1.1, 2), (8, 1.2, 3), (8, 1.3, 4), (8, 1.0, 5), (8, 1.4, 6)]
            .into_iter()
            .map(|(t, r, at)| Record { recorded_unix_s: at, ..rec(t, "trace", r) })
            .collect();
        rs.push(rec(9, "trace", 0.5));
        rs.push(rec(9, "trace", 0.6));
        let c = for_mode(&rs, 9, "trace");
        assert_eq!((c.validations, c.earlier_tables), (2, Some(6)));
        let [lo, hi] = c.ratio.unwrap();
        assert!(lo >= 1.0 && hi > 1.4 && hi < 5.0, "{lo} {hi}");
        // Below MIN_RECORDS of earlier tables too: the table's spread alone.
        assert_eq!(for_mode(&rs[4..], 9, "trace").ratio, None);
        // Once the table has its own, they take over.
        rs.extend((0..3).map(|_| rec(9, "trace", 0.55)));
        let own = for_mode(&rs, 9, "trace");
        assert_eq!((own.validations, own.earlier_tables), (5, None));
        assert!(own.ratio.unwrap()[1] < 0.61);
    }
}
