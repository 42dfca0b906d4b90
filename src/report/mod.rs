//! Reports: a self-contained HTML page for a prediction or a sweep, the Chrome/Perfetto trace
//! export of a simulated timeline, SVG plots of a sweep, and aligned terminal tables.
//!
//! The pages carry their CSS, their JavaScript (small, vanilla, in `page.css`, `prediction.js`
//! and `sweep.js` next to this file) and their data inline: they open from disk with no network.
//! Text from files (sources, paths, names) is escaped on the way in (`html::escape`), and the
//! data the scripts read is JSON inside a `<script type="application/json">` with `<`, `>` and
//! `&` written as `\u003c`... so no file content can close the script element.
//! JSON here is built as `serde_json::Value` or written by hand: only `src/model` types derive
//! `Serialize`.

mod analysis_text;
mod chrome;
pub mod files;
mod html;
mod network_text;
mod prediction_page;
mod prediction_text;
mod replay_text;
mod source;
mod summary_text;
mod svg;
mod sweep_page;
mod sweep_text;
mod trace_text;
pub mod table;
mod validation_text;
#[cfg(test)]
mod snapshots;

use std::path::PathBuf;

use anyhow::Result;

use crate::model::analysis::ProgramModel;
use crate::model::network::{NetworkTable, SelfCheck};
use crate::model::prediction::Prediction;
use crate::model::sweep::Sweep;
use crate::model::trace::ReplayResult;
use crate::model::validation::Validation;

/// One self-contained HTML page for a prediction (no network access needed to view it): the
/// header, the source with blocks highlighted by predicted share of time, the block panel,
/// per-function times, the per-rank timeline, per-rank, per-host and per-link tables. Source
/// files are read from the paths in `p.program` (relative to the current directory); a file
/// that cannot be read is named in the page.
pub fn html_prediction(p: &Prediction) -> Result<String> {
    html_predictions(std::slice::from_ref(p), &[])
}

/// One page for predictions of the same program with different machine tables (ChronosMix's
/// per-machine view): the first prediction drives the timeline and the host and link tables;
/// the block panel and the function table show every prediction's time. Relative source paths
/// are looked up in the current directory, then in each of `source_dirs`.
pub fn html_predictions(preds: &[Prediction], source_dirs: &[PathBuf]) -> Result<String> {
    prediction_page::render(preds, source_dirs)
}

/// One self-contained HTML page for a sweep: the [`sweep_svg`] figure and the table of points.
pub fn html_sweep(s: &Sweep) -> Result<String> {
    sweep_page::render(s)
}

/// The simulated timeline in the Trace Event Format (JSON), for Perfetto and chrome://tracing:
/// complete events (`"ph": "X"`, `ts` and `dur` in microseconds) named by action kind, one
/// process per host, one thread per rank (`tid` = rank). Fails when the prediction holds no
/// timeline.
pub fn chrome_trace(p: &Prediction) -> Result<String> {
    chrome::trace(p)
}

/// An SVG figure of a sweep: predicted time (log-log), speedup (log-log, with the ideal line)
/// and efficiency against ranks, one curve per platform, with a legend.
pub fn sweep_svg(s: &Sweep) -> String {
    svg::sweep(s)
}

/// The prediction as text: header, predicted time and interval, per-rank split, hottest blocks
/// and functions, op classes, assumptions.
pub fn prediction_text(p: &Prediction) -> String {
    prediction_text::prediction(p)
}

/// The sweep as text: one table per platform (time, interval, speedup, efficiency, the slowest
/// rank's split).
pub fn sweep_text(s: &Sweep) -> String {
    sweep_text::sweep(s)
}

/// The validation as text: one line per rank count, the measured median (min), then per mode the
/// prediction and its error; n/a reasons as numbered notes, then `notes`.
pub fn validation_text(v: &Validation, name: &str, notes: &[String]) -> String {
    validation_text::validation(v, name, notes)
}

/// A replay's result as text: makespan, per-rank (or min/median/max) times, hosts and links.
pub fn replay_text(r: &ReplayResult) -> String {
    replay_text::replay(r)
}

/// A traced run's summary as text (`blocks`: the blocks of the analysis).
pub fn trace_text(meta: &crate::model::trace::TraceMeta, dir: &std::path::Path, blocks: usize) -> String {
    trace_text::trace(meta, dir, blocks)
}

/// The replay benchmark's result as text.
pub fn halo_bench_text(b: &crate::sim::bench::HaloBench) -> String {
    replay_text::halo_bench(b)
}

/// The CTC's measurements and fit as text.
pub fn network_text(t: &NetworkTable) -> String {
    network_text::network(t)
}

/// The CTC's self-check on the platform it wrote, as text.
pub fn self_check_text(check: &SelfCheck, platform: &std::path::Path) -> String {
    network_text::self_check(check, platform)
}

/// The analysis' blocks as an indented tree.
pub fn analysis_tree(m: &ProgramModel) -> String {
    analysis_text::tree(m)
}

/// The analysis' summary per file.
pub fn analysis_summary(m: &ProgramModel) -> String {
    analysis_text::summary(m)
}

/// One line per prediction file: machine table, platform, ranks, predicted time and interval.
pub fn predictions_table(preds: &[(PathBuf, Prediction)]) -> String {
    summary_text::predictions(preds)
}

/// A sweep's points: platform, ranks, predicted time, speedup, efficiency.
pub fn sweep_table(s: &Sweep) -> String {
    summary_text::sweep_points(s)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::trace::TimelineEvent;

    /// A small prediction, from JSON so that fields other stages add with defaults need no
    /// change here.
    fn prediction(program: &str) -> Prediction {
        let rank = |r: u32| {
            serde_json::json!({"rank": r, "host": format!("n{r}"), "finish_s": 2e-3, "compute_s": 1e-3, "comm_s": 1e-3,
                               "wait_s": 0.0, "messages_sent": 1, "bytes_sent": 8})
        };
        serde_json::from_value(serde_json::json!({
            "program": [program], "args": ["<10>"], "ranks": 2, "bindings": {}, "mode": "static",
            "platform": "p.xml", "machine": {"path": "m.json", "hostname": "h", "cpu_model": "c", "compiler": "cc"},
            "costs": "raw", "what_if": {}, "predicted_s": 2e-3, "interval_s": [1e-3, 3e-3],
            "ranks_detail": [rank(0), rank(1)], "hosts": [], "links": [],
            "blocks": [{"id": format!("{program}:3:1:loop"), "kind": "loop", "function": "main", "file": program,
                        "line_start": 3, "line_end": 5, "executions": 10.0, "seconds": 2e-3, "share": 1.0,
                        "op_seconds": {"double_add": 2e-3}}],
            "functions": [{"name": "main", "file": program, "line_start": 1, "self_seconds": 2e-3, "share": 1.0}],
            "op_classes": {}, "assumptions": ["a <b> & c"], "warnings": [], "messages": 2,
            "simulation_wall_s": 0.0, "wall_s": 0.0,
        }))
        .expect("a prediction")
    }

    #[test]
    fn a_missing_source_and_no_timeline_are_said() {
        let page = html_prediction(&prediction("/nonexistent/<x>.c")).unwrap();
        assert!(page.contains("<p class=\"missing\">/nonexistent/&lt;x&gt;.c: cannot read:"), "the missing file is named");
        assert!(page.contains("id=\"no-timeline\""));
        assert!(page.contains("<li>a &lt;b&gt; &amp; c</li>"));
        assert!(page.contains("<code>&lt;10&gt;</code>"));
        assert!(!page.contains("<x>") && !page.contains("<b>"));
    }

    #[test]
    fn chrome_trace_needs_a_timeline_and_names_ranks() {
        let mut p = prediction("x.c");
        let e = chrome_trace(&p).unwrap_err().to_string();
        assert!(e.contains("no timeline") && !e.contains('\n'), "{e}");
        p.timeline = vec![
            TimelineEvent { rank: 1, kind: "compute".into(), start_s: 0.0, end_s: 1e-3 },
            TimelineEvent { rank: 0, kind: "send".into(), start_s: 0.0, end_s: 2.5e-6 },
        ];
        let t: serde_json::Value = serde_json::from_str(&chrome_trace(&p).unwrap()).unwrap();
        let ev = t["traceEvents"].as_array().unwrap();
        let x: Vec<&serde_json::Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 2);
        assert_eq!(x[0]["name"], "send");
        assert_eq!(x[0]["cat"], "p2p");
        assert_eq!(x[0]["dur"], 2.5);
        assert_eq!(x[1]["tid"], 1);
        assert_eq!(x[1]["pid"], 2, "rank 1 on its host n1, the second process");
        assert_eq!(x[1]["dur"], 1000.0);
        let names: Vec<&str> = ev.iter().filter(|e| e["name"] == "thread_name").map(|e| e["args"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["rank 0", "rank 1"]);
        assert_eq!(t["displayTimeUnit"], "ms");
    }

    #[test]
    fn predictions_of_two_programs_do_not_mix() {
        let e = html_predictions(&[prediction("a.c"), prediction("b.c")], &[]).unwrap_err().to_string();
        assert!(e.contains("one program"), "{e}");
    }

    #[test]
    fn an_empty_sweep_still_makes_a_figure() {
        let s = Sweep {
            program: vec!["x.c".into()],
            args: Vec::new(),
            bindings: BTreeMap::new(),
            mode: "static".into(),
            scaling: "program".into(),
            trace_ranks: None,
            platforms: Vec::new(),
            ranks: Vec::new(),
            points: Vec::new(),
            topology: None,
            assumptions: Vec::new(),
            wall_s: 0.0,
        };
        let svg = sweep_svg(&s);
        assert!(svg.starts_with("<svg xmlns=") && svg.contains("no points in this sweep") && svg.ends_with("</svg>\n"));
        assert!(html_sweep(&s).unwrap().contains("no points in this sweep"));
    }
}
