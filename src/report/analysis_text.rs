//! The analysis as text: what `mpicast analyze` prints (the block tree, or the summary).

use std::fmt::Write;

use crate::model::analysis::{CountStatus, ProgramModel};

fn status_word(s: CountStatus) -> &'static str {
    match s {
        CountStatus::Exact => "exact",
        CountStatus::Symbolic => "symbolic",
        CountStatus::NeedsTrace => "trace",
    }
}

/// Per file: blocks, how many are counted exactly, symbolically or need a trace, the share
/// counted statically.
pub fn summary(m: &ProgramModel) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<40} {:>7} {:>7} {:>9} {:>7} {:>9}",
        "file", "blocks", "exact", "symbolic", "trace", "static"
    );
    let mut total = (0, 0, 0, 0);
    for f in &m.files {
        let bs: Vec<_> = m.blocks.iter().filter(|b| &b.file == f).collect();
        let c = |s: CountStatus| bs.iter().filter(|b| b.count.status == s).count();
        let (e, s, t) = (
            c(CountStatus::Exact),
            c(CountStatus::Symbolic),
            c(CountStatus::NeedsTrace),
        );
        let frac = if bs.is_empty() {
            1.0
        } else {
            (e + s) as f64 / bs.len() as f64
        };
        let _ = writeln!(
            o,
            "{:<40} {:>7} {:>7} {:>9} {:>7} {:>8.0}%",
            f,
            bs.len(),
            e,
            s,
            t,
            frac * 100.0
        );
        total = (total.0 + bs.len(), total.1 + e, total.2 + s, total.3 + t);
    }
    let _ = writeln!(
        o,
        "{:<40} {:>7} {:>7} {:>9} {:>7} {:>8.0}%",
        "total",
        total.0,
        total.1,
        total.2,
        total.3,
        m.static_fraction() * 100.0
    );
    o
}

/// Every block, indented by nesting: kind, lines, execution count and its status, first ops.
pub fn tree(m: &ProgramModel) -> String {
    let mut o = String::new();
    let depth_of = |id: &str| {
        let mut d = 0;
        let mut cur = m
            .blocks
            .iter()
            .find(|b| b.id == id)
            .and_then(|b| b.parent.clone());
        while let Some(p) = cur {
            d += 1;
            cur = m
                .blocks
                .iter()
                .find(|b| b.id == p)
                .and_then(|b| b.parent.clone());
        }
        d
    };
    let mut file = String::new();
    for b in &m.blocks {
        if b.file != file {
            file = b.file.clone();
            let _ = writeln!(o, "{file}");
        }
        let indent = "  ".repeat(depth_of(&b.id) + 1);
        let count = match (&b.count.status, &b.count.expr, b.count.value) {
            (CountStatus::NeedsTrace, _, _) => "trace".to_string(),
            (_, Some(e), Some(v)) if !e.vars().is_empty() => format!("{e} = {v}"),
            (_, Some(e), _) => e.to_string(),
            _ => "?".into(),
        };
        let mut ops: Vec<(String, String)> = b
            .ops
            .iter()
            .map(|(c, n)| (c.name().to_string(), n.to_string()))
            .collect();
        ops.truncate(4);
        let ops: Vec<String> = ops.into_iter().map(|(c, n)| format!("{c}:{n}")).collect();
        let what = match b.kind {
            crate::model::analysis::BlockKind::Function => format!("fn {}", b.function),
            crate::model::analysis::BlockKind::Comm => {
                let c = m.comm.iter().find(|c| c.block == b.id);
                c.map(|c| format!("comm {}", c.call))
                    .unwrap_or_else(|| "comm".into())
            }
            k => k.name().to_string(),
        };
        let _ = writeln!(
            o,
            "{indent}{what:<24} L{}-{}  x {} [{}]  {}",
            b.line_start,
            b.line_end,
            count,
            status_word(b.count.status),
            ops.join(" ")
        );
    }
    o
}
