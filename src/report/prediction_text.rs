//! The prediction as text: what `mpicast predict` prints.

use std::collections::BTreeMap;

use crate::model::prediction::Prediction;

use super::table::{self, short_path};

fn fmt_s(s: f64) -> String {
    table::seconds_as(s, table::TEXT)
}

/// The readable report: prediction, per-rank split, hottest blocks and functions, op classes.
pub fn prediction(p: &Prediction) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let prog: Vec<String> = p.program.iter().map(|f| short_path(f)).collect();
    let _ = writeln!(
        o,
        "{} on {} rank{} ({}), platform {}, machine {} ({} costs)",
        prog.join(" "),
        p.ranks,
        if p.ranks == 1 { "" } else { "s" },
        if p.mode == "static" {
            "static path".to_string()
        } else {
            p.mode.clone()
        },
        short_path(&p.platform),
        p.machine.hostname,
        p.costs
    );
    if let Some(f) = &p.fallback {
        let _ = writeln!(
            o,
            "from a traced run at {} ranks: the static path stopped at {}",
            f.traced_ranks, f.static_error
        );
    }
    if !p.launch.is_empty() {
        let _ = writeln!(o, "traced run: {}", crate::mpi::build::show(&p.launch));
    }
    if !p.bindings.is_empty() {
        let b: Vec<String> = p.bindings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(o, "parameters: {}", b.join(" "));
    }
    if !p.what_if.is_empty() {
        let b: Vec<String> = p.what_if.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(o, "what-if: {}", b.join(" "));
    }
    if let Some(sc) = &p.scaling {
        let _ = writeln!(
            o,
            "scaled from {} ranks: {} -> {} ({}), {} scaling, {:.0}% of compute rescaled by the program's formulas",
            sc.from_ranks,
            sc.topology,
            sc.scaled_topology,
            sc.agreement,
            sc.mode,
            100.0 * sc.formula_share
        );
        let _ = writeln!(
            o,
            "  messages resized by site formulas {}, by the grid's faces {}, kept {}",
            sc.messages_by_formula, sc.messages_by_faces, sc.messages_kept
        );
        // The blocks that kept their traced counts (they depend on data), costliest first.
        let kept: Vec<_> = sc.blocks.iter().filter(|b| b.by == "kept" && b.share > 0.0).collect();
        if !kept.is_empty() {
            let share: f64 = kept.iter().map(|b| b.share).sum();
            let at: Vec<String> = kept.iter().take(5).map(|b| format!("{} ({:.1}%)", short_id(&b.id), 100.0 * b.share)).collect();
            let more = if kept.len() > 5 { format!(", {} more (all in --json)", kept.len() - 5) } else { String::new() };
            let _ = writeln!(o, "  kept at the traced counts ({} blocks, {:.1}% of compute): {}{more}", kept.len(), 100.0 * share, at.join(", "));
        }
        for e in &sc.evidence {
            let _ = writeln!(o, "  {e}");
        }
        for e in &sc.notes {
            let _ = writeln!(o, "  note: {e}");
        }
    }
    let _ = writeln!(
        o,
        "\npredicted time: {}   (interval {} .. {}; MPI_Init to MPI_Finalize)",
        fmt_s(p.predicted_s),
        fmt_s(p.interval_s[0]),
        fmt_s(p.interval_s[1])
    );
    if let Some(c) = &p.calibration {
        let _ = match c.ratio {
            Some([lo, hi]) => writeln!(
                o,
                "interval:        runs here measured {lo:.2}x to {hi:.2}x of {} predictions (5th to 95th percentile of the newest validated on this host{}, each over its table's median, about {}) and the table's spread",
                c.mode,
                match c.earlier_tables {
                    Some(n) => format!(", {n} of them with earlier machine tables"),
                    None => String::new(),
                },
                if c.validations as usize >= crate::model::prediction::Calibration::MIN_VALIDATIONS {
                    format!("this table's median of its {}", c.validations)
                } else {
                    format!("the prediction: {} of the {} of this table's own that set it", c.validations, crate::model::prediction::Calibration::MIN_VALIDATIONS)
                }
            ),
            None => writeln!(
                o,
                "interval:        the machine table's spread only: {} of the {} validations of {} predictions with this table that widen it to what runs here measured (mpicast validate)",
                c.validations,
                crate::model::prediction::Calibration::MIN_VALIDATIONS,
                c.mode
            ),
        };
    }
    if let (Some(s), Some(n)) = (p.startup_s, p.startup_ranks) {
        let _ = writeln!(
            o,
            "with start-up:  {}   (mpirun's start-up on this host, {} measured at {n} rank{})",
            fmt_s(p.predicted_s + s),
            fmt_s(s),
            if n == 1 { "" } else { "s" }
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:>5}  {:<12} {:>11} {:>11} {:>11} {:>11}",
        "rank", "host", "finish", "compute", "comm", "waiting"
    );
    let shown = if p.ranks_detail.len() > 16 {
        8
    } else {
        p.ranks_detail.len()
    };
    for r in p.ranks_detail.iter().take(shown) {
        let _ = writeln!(
            o,
            "{:>5}  {:<12} {:>11} {:>11} {:>11} {:>11}",
            r.rank,
            r.host,
            fmt_s(r.finish_s),
            fmt_s(r.compute_s),
            fmt_s(r.comm_s),
            fmt_s(r.wait_s)
        );
    }
    if shown < p.ranks_detail.len() {
        let _ = writeln!(
            o,
            "  ... {} more ranks (all in --json)",
            p.ranks_detail.len() - shown
        );
    }
    if !p.blocks.is_empty() {
        let _ = writeln!(o, "\nhottest blocks (compute, all ranks)");
        let _ = writeln!(
            o,
            "{:>6} {:>11} {:>12}  {:<28} {}",
            "share", "time", "executions", "block", "op classes"
        );
        for b in &p.blocks {
            let mut ops: Vec<(&crate::model::ops::OpClass, &f64)> = b.op_seconds.iter().collect();
            ops.sort_by(|a, b| b.1.total_cmp(a.1));
            let mut split: Vec<String> = Vec::new();
            // Bound by memory or by a loop-carried chain: the ops' shares are of the block's time.
            let ops_s: f64 = b.op_seconds.values().sum();
            if let Some(t) = b.timed_calls.as_ref().filter(|t| t.seconds > 0.0) {
                split.push(format!("timed calls {:.0}% ({})", 100.0 * t.seconds / b.seconds.max(1e-300), t.funcs.join(", ")));
            }
            if let Some(m) = b.memory.as_ref().filter(|m| {
                m.seconds > ops_s && m.seconds >= b.chain.as_ref().map_or(0.0, |c| c.seconds)
            }) {
                split.push(format!("memory-bound ({})", m.level));
            } else if let Some(c) = b.chain.as_ref().filter(|c| c.seconds > ops_s) {
                split.push(format!("chain-bound ({})", c.var));
            }
            split.extend(
                ops.iter().take(4).map(|(c, s)| {
                    format!("{} {:.0}%", c.name(), 100.0 * **s / b.seconds.max(1e-300))
                }),
            );
            let _ = writeln!(
                o,
                "{:>5.1}% {:>11} {:>12.4e}  {:<28} {}",
                100.0 * b.share,
                fmt_s(b.seconds),
                b.executions,
                format!(
                    "{}:{}-{} {}",
                    short_path(&b.file),
                    b.line_start,
                    b.line_end,
                    b.kind
                ),
                split.join(", ")
            );
        }
    }
    if !p.functions.is_empty() {
        let _ = writeln!(o, "\nfunctions (own blocks, all ranks)");
        for f in p.functions.iter().filter(|f| f.self_seconds > 0.0) {
            let _ = writeln!(
                o,
                "{:>5.1}% {:>11}  {} ({}:{})",
                100.0 * f.share,
                fmt_s(f.self_seconds),
                f.name,
                short_path(&f.file),
                f.line_start
            );
        }
    }
    let total: f64 = p.op_classes.values().sum();
    if total > 0.0 {
        let mut v: Vec<_> = p.op_classes.iter().collect();
        v.sort_by(|a, b| b.1.total_cmp(a.1));
        let parts: Vec<String> = v
            .iter()
            .take(8)
            .map(|(c, s)| format!("{} {:.0}%", c.name(), 100.0 * **s / total))
            .collect();
        let _ = writeln!(o, "\nop classes: {}", parts.join(", "));
    }
    let mut by_rank: BTreeMap<&str, ()> = BTreeMap::new();
    for a in &p.assumptions {
        by_rank.insert(a, ());
    }
    if !by_rank.is_empty() {
        let _ = writeln!(o, "\nassumptions:");
        for a in by_rank.keys() {
            let _ = writeln!(o, "  - {a}");
        }
    }
    for w in &p.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    let _ = writeln!(
        o,
        "\n({} messages simulated; prediction took {:.2} s)",
        p.messages, p.wall_s
    );
    if let Some(f) = &p.folded {
        let inner = f
            .inner
            .as_ref()
            .map(|i| format!(", and {} of the {} iterations of the loop in it", i.simulated, i.iterations))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "(steady state: {} of the main loop's {} iterations simulated{inner}, {} each; --no-fold simulates all)",
            f.simulated,
            f.iterations,
            table::seconds(f.period_s)
        );
    }
    o
}

/// A block id without its directories: `file.c:LINE:COL:kind`.
fn short_id(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}
