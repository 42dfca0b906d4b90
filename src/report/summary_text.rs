//! The one-line-per-input tables `mpicast report` prints beside the pages it writes.

use std::path::PathBuf;

use crate::model::prediction::Prediction;
use crate::model::sweep::Sweep;

use super::table::{self, Align, Table};

/// One line per prediction: machine table, platform, ranks, predicted time and interval.
pub fn predictions(preds: &[(PathBuf, Prediction)]) -> String {
    let mut t = Table::new(&[
        ("prediction", Align::Left),
        ("machine table", Align::Left),
        ("platform", Align::Left),
        ("ranks", Align::Right),
        ("predicted", Align::Right),
        ("interval", Align::Right),
        ("timeline", Align::Right),
    ]);
    for (path, p) in preds {
        t.row(vec![
            path.display().to_string(),
            format!("{} ({})", p.machine.path, p.machine.hostname),
            p.platform.clone(),
            p.ranks.to_string(),
            table::seconds(p.predicted_s),
            format!(
                "{} .. {}",
                table::seconds(p.interval_s[0]),
                table::seconds(p.interval_s[1])
            ),
            format!("{} events", p.timeline.len()),
        ]);
    }
    t.render()
}

/// The sweep's points as a table: platform, ranks, predicted time, speedup, efficiency.
pub fn sweep_points(s: &Sweep) -> String {
    let mut t = Table::new(&[
        ("platform", Align::Left),
        ("ranks", Align::Right),
        ("predicted", Align::Right),
        ("speedup", Align::Right),
        ("efficiency", Align::Right),
    ]);
    for p in &s.points {
        t.row(vec![
            p.platform.clone(),
            p.ranks.to_string(),
            table::seconds(p.predicted_s),
            format!("{:.2}", p.speedup),
            format!("{:.1} %", 100.0 * p.efficiency),
        ]);
    }
    t.render()
}
