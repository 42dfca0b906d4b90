//! The validation as text: what `mpicast validate` prints.

use crate::model::validation::{ModeSummary, Validation};

use super::table;

fn fmt_s(s: f64) -> String {
    table::seconds_as(s, table::BRIEF)
}

fn label(mode: &str) -> &'static str {
    match mode {
        "static" => "static",
        "trace" => "trace counts",
        "measured" => "block bench",
        _ => "scaled",
    }
}

/// The table a person reads: one line per rank count, measured median (min), then per mode the
/// prediction and its error; n/a reasons as numbered notes below.
pub fn validation(v: &Validation, name: &str, notes: &[String]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let args = if v.args.is_empty() {
        String::new()
    } else {
        format!(" {}", v.args.join(" "))
    };
    let _ = writeln!(
        o,
        "{name}{args}: {} run{} per rank count",
        v.runs,
        if v.runs == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "platform {}{}, machine {}",
        v.platform,
        v.cores_per_host
            .map(|c| format!(" ({c} cores per host)"))
            .unwrap_or_default(),
        v.machine
    );
    let _ = writeln!(
        o,
        "host {} ({}, {} cores), load {:.2} {:.2} {:.2} before, {:.2} {:.2} {:.2} after\n",
        v.host.hostname,
        v.host.cpu_model,
        v.host.cores,
        v.host.load_before[0],
        v.host.load_before[1],
        v.host.load_before[2],
        v.host.load_after[0],
        v.host.load_after[1],
        v.host.load_after[2]
    );
    let src = v
        .points
        .iter()
        .filter_map(|p| p.measured.as_ref())
        .map(|m| m.source.as_str())
        .next()
        .unwrap_or("elapsed_s");
    let _ = write!(o, "{:>5}  {:>21}", "ranks", format!("measured ({src})"));
    for m in &v.modes {
        let _ = write!(o, "  {:>18}", label(m));
    }
    let _ = writeln!(o);
    let _ = write!(o, "{:>5}  {:>21}", "", "median (min)");
    for _ in &v.modes {
        let _ = write!(o, "  {:>18}", "predicted   error");
    }
    let _ = writeln!(o);
    let mut reasons: Vec<String> = Vec::new();
    for p in &v.points {
        let meas = match &p.measured {
            Some(m) => format!("{} ({})", fmt_s(m.median_s), fmt_s(m.min_s)),
            None => "run failed".into(),
        };
        let _ = write!(o, "{:>5}  {:>21}", p.ranks, meas);
        for m in &v.modes {
            let cell = match p.predictions.iter().find(|r| &r.mode == m) {
                Some(r) => match (r.predicted_s, r.error_pct) {
                    (Some(t), Some(e)) if e.is_finite() => format!("{:>10} {:>+6.1}%", fmt_s(t), e),
                    (Some(t), _) => format!("{:>10}       -", fmt_s(t)),
                    _ => {
                        let why = r.reason.clone().unwrap_or_default();
                        let k = match reasons.iter().position(|x| *x == why) {
                            Some(k) => k,
                            None => {
                                reasons.push(why);
                                reasons.len() - 1
                            }
                        };
                        format!("n/a [{}]", k + 1)
                    }
                },
                None => "-".into(),
            };
            let _ = write!(o, "  {cell:>18}");
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(
        o,
        "\nerror = (predicted - measured median) / measured median"
    );
    let parts: Vec<String> = v
        .modes
        .iter()
        .map(|m| match v.summary.get(m) {
            Some(ModeSummary {
                mape_pct: Some(e),
                points,
                ..
            }) => {
                format!(
                    "{} {:.1}% ({} point{})",
                    label(m),
                    e,
                    points,
                    if *points == 1 { "" } else { "s" }
                )
            }
            _ => format!("{} n/a", label(m)),
        })
        .collect();
    let _ = writeln!(o, "mean absolute error: {}", parts.join(", "));
    for (k, r) in reasons.iter().enumerate() {
        let _ = writeln!(o, "[{}] {}", k + 1, r);
    }
    for n in notes {
        let _ = writeln!(o, "note: {n}");
    }
    for p in &v.points {
        if let Some(f) = &p.failure {
            let _ = writeln!(o, "n={}: {}", p.ranks, f);
        }
    }
    o
}
