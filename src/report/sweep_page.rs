//! The sweep page: the header, the [`super::svg::sweep`] figure inline, and the table of points.

use std::fmt::Write;

use anyhow::Result;

use super::html::{escape, page, seconds, short_path};
use crate::model::sweep::Sweep;

pub fn render(s: &Sweep) -> Result<String> {
    let prog: Vec<&str> = s.program.iter().map(|f| short_path(f)).collect();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<header class=\"card\" id=\"summary\"><h1>{} <span class=\"dim\">sweep over {} rank count{} and {} platform{}</span></h1>",
        escape(&prog.join(" ")),
        s.ranks.len(),
        if s.ranks.len() == 1 { "" } else { "s" },
        s.platforms.len(),
        if s.platforms.len() == 1 { "" } else { "s" }
    );
    o.push_str("<dl class=\"meta\">\n");
    let mut item = |k: &str, v: String| {
        let _ = writeln!(o, "<div><dt>{}</dt><dd>{}</dd></div>", escape(k), v);
    };
    item("program", escape(&s.program.join(" ")));
    if !s.args.is_empty() {
        item("arguments", format!("<code>{}</code>", escape(&s.args.join(" "))));
    }
    if !s.bindings.is_empty() {
        let b: Vec<String> = s.bindings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        item("parameters", escape(&b.join(" ")));
    }
    item("path", escape(&s.mode));
    let scaling = match s.trace_ranks {
        Some(k) => format!("{} (trace at {k} ranks)", s.scaling),
        None => s.scaling.clone(),
    };
    item("scaling", escape(&scaling));
    if let Some(t) = &s.topology {
        item("topology", escape(t));
    }
    let ranks: Vec<String> = s.ranks.iter().map(u32::to_string).collect();
    item("ranks", escape(&ranks.join(", ")));
    item("platforms", escape(&s.platforms.join(", ")));
    item("sweep took", escape(&format!("{:.2} s", s.wall_s)));
    o.push_str("</dl>\n");
    if !s.assumptions.is_empty() {
        let _ = writeln!(
            o,
            "<details class=\"assumptions\"{}><summary>{} assumption{}</summary><ul>",
            if s.assumptions.len() <= 3 { " open" } else { "" },
            s.assumptions.len(),
            if s.assumptions.len() == 1 { "" } else { "s" }
        );
        for a in &s.assumptions {
            let _ = writeln!(o, "<li>{}</li>", escape(a));
        }
        o.push_str("</ul></details>\n");
    }
    o.push_str("</header>\n");

    o.push_str("<section class=\"card\" id=\"plot-card\"><h2>Predicted time, speedup and efficiency against ranks</h2>\n");
    o.push_str("<p class=\"hint\">Speedup is T(base) × base / T(N), base the smallest rank count on each platform; efficiency is speedup / N. \
                Hover a point or a row to see both.</p>\n<div class=\"plot\" id=\"plot\">\n");
    o.push_str(&super::svg::sweep(s));
    o.push_str("</div></section>\n");

    o.push_str("<section class=\"card\" id=\"points\"><h2>Points</h2>\n<table class=\"rows\"><thead><tr><th>platform</th>\
                <th class=\"r\">ranks</th><th class=\"r\">predicted</th><th class=\"r\">interval</th><th class=\"r\">speedup</th>\
                <th class=\"r\">efficiency</th><th class=\"r\">compute</th><th class=\"r\">communication</th><th class=\"r\">waiting</th>\
                <th class=\"r\">messages</th><th class=\"r\">prediction took</th></tr></thead><tbody>\n");
    for p in &s.points {
        let k = s.platforms.iter().position(|x| *x == p.platform);
        let series = k.map(|k| k.to_string()).unwrap_or_default();
        let (color, _) = super::svg::style(k.unwrap_or(0));
        let _ = writeln!(
            o,
            "<tr data-series=\"{series}\" data-ranks=\"{}\"><td title=\"{}\"><i class=\"swatch\" style=\"background:{color}\"></i>{}</td>\
             <td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{} .. {}</td><td class=\"r\">{:.2}</td><td class=\"r\">{:.1}%</td>\
             <td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{:.2} s</td></tr>",
            p.ranks,
            escape(&p.platform),
            escape(short_path(&p.platform)),
            p.ranks,
            seconds(p.predicted_s),
            seconds(p.interval_s[0]),
            seconds(p.interval_s[1]),
            p.speedup,
            100.0 * p.efficiency,
            seconds(p.compute_s),
            seconds(p.comm_s),
            seconds(p.wait_s),
            p.messages,
            p.wall_s
        );
    }
    o.push_str("</tbody></table></section>\n");
    let _ = writeln!(o, "<footer>mpicast {} · sweep report</footer>", env!("CARGO_PKG_VERSION"));
    let title = format!("mpicast sweep: {}", prog.join(" "));
    Ok(page(&title, &o, &[include_str!("sweep.js")]))
}
