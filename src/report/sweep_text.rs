//! The sweep as text: what `mpicast sweep` prints.

use crate::model::sweep::Sweep;

use super::table::{self, short_path};

fn fmt_s(s: f64) -> String {
    table::seconds_as(s, table::TEXT)
}

/// The sweep as a table, one block per platform.
pub fn sweep(s: &Sweep) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let prog: Vec<String> = s.program.iter().map(|f| short_path(f)).collect();
    let _ = writeln!(
        o,
        "{} {} ({}; {} scaling)",
        prog.join(" "),
        s.args.join(" "),
        s.mode,
        s.scaling
    );
    if let Some(t) = &s.topology {
        let _ = writeln!(o, "topology: {t}");
    }
    for platform in &s.platforms {
        let _ = writeln!(o, "\nplatform {}", short_path(platform));
        let _ = writeln!(
            o,
            "{:>7} {:>11} {:>23} {:>8} {:>10} {:>11} {:>11} {:>11} {:>10}",
            "ranks",
            "time",
            "interval",
            "speedup",
            "efficiency",
            "compute",
            "comm",
            "waiting",
            "messages"
        );
        for p in s.points.iter().filter(|p| &p.platform == platform) {
            let _ = writeln!(
                o,
                "{:>7} {:>11} {:>23} {:>8.2} {:>9.1}% {:>11} {:>11} {:>11} {:>10}",
                p.ranks,
                fmt_s(p.predicted_s),
                format!("{} .. {}", fmt_s(p.interval_s[0]), fmt_s(p.interval_s[1])),
                p.speedup,
                100.0 * p.efficiency,
                fmt_s(p.compute_s),
                fmt_s(p.comm_s),
                fmt_s(p.wait_s),
                p.messages
            );
        }
    }
    for a in &s.assumptions {
        let _ = writeln!(o, "assumption: {a}");
    }
    let _ = writeln!(
        o,
        "(speedup: time at {} ranks x {} / time; sweep took {:.1} s)",
        s.ranks.first().copied().unwrap_or(1),
        s.ranks.first().copied().unwrap_or(1),
        s.wall_s
    );
    o
}
