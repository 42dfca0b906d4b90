//! Reports: a self-contained HTML page for a prediction or a sweep, the Chrome/Perfetto trace
//! export of a simulated timeline, and SVG plots.

use anyhow::{bail, Result};

use crate::model::prediction::Prediction;
use crate::model::sweep::Sweep;

/// One self-contained HTML page for a prediction (no network access needed to view it).
pub fn html_prediction(_p: &Prediction) -> Result<String> {
    bail!("the HTML report is not built yet")
}

/// One self-contained HTML page for a sweep.
pub fn html_sweep(_s: &Sweep) -> Result<String> {
    bail!("the HTML report is not built yet")
}

/// The simulated timeline in the Trace Event Format (JSON), for Perfetto and chrome://tracing.
pub fn chrome_trace(_p: &Prediction) -> Result<String> {
    bail!("the Chrome trace export is not built yet")
}

/// An SVG figure of a sweep: predicted time, speedup and efficiency against ranks, one curve per
/// platform.
pub fn sweep_svg(_s: &Sweep) -> String {
    String::new()
}
