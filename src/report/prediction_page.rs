//! The prediction page. Static HTML carries everything a reader needs (header, source with the
//! hot blocks coloured, tables); `prediction.js` adds the block panel, the zoomable timeline and
//! the links between them, from the JSON embedded in the page.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde_json::{json, Value};

use super::html::{count, escape, page, percent, seconds, short_path};
use crate::model::ops::OpClass;
use crate::model::prediction::{BlockCost, Prediction};

/// At most this many timeline events go into the page (the earliest ones; the page says where it
/// stops). The Chrome trace export keeps all of them.
const MAX_EVENTS: usize = 250_000;
/// Source files larger than this are not shown.
const MAX_SOURCE_BYTES: u64 = 8 << 20;

/// A block as the page knows it: where it is, and its cost in each prediction that lists it.
struct Block<'a> {
    cost: &'a BlockCost,
    file: usize,
    per: Vec<Option<&'a BlockCost>>,
}

/// The colour of an op class (the same in the panel and the tables): hues a golden angle apart.
fn op_color(c: OpClass) -> String {
    let i = OpClass::ALL.iter().position(|x| *x == c).unwrap_or(0);
    format!("hsl({:.0},62%,52%)", (i as f64 * 137.508) % 360.0)
}

/// A label for each prediction's machine table; the first is the one the timeline shows.
fn machine_labels(preds: &[Prediction]) -> Vec<String> {
    let mut labels: Vec<String> = preds
        .iter()
        .map(|p| format!("{} ({})", short_path(&p.machine.path), p.machine.hostname))
        .collect();
    // Same table twice (other platforms, other ranks): number them.
    let dup: Vec<bool> = labels.iter().map(|l| labels.iter().filter(|m| *m == l).count() > 1).collect();
    for (k, l) in labels.iter_mut().enumerate() {
        if dup[k] {
            let _ = write!(l, " #{}", k + 1);
        }
    }
    labels
}

/// Reads a source file: as given, else under each of `dirs` when relative.
fn read_source(file: &str, dirs: &[PathBuf]) -> std::result::Result<String, String> {
    let given = Path::new(file);
    let mut candidates = vec![given.to_path_buf()];
    if given.is_relative() {
        candidates.extend(dirs.iter().map(|d| d.join(given)));
    }
    let mut first_err = None;
    for c in &candidates {
        match std::fs::metadata(c) {
            Ok(m) if m.len() > MAX_SOURCE_BYTES => {
                return Err(format!("{} bytes, more than this page shows ({} MiB)", m.len(), MAX_SOURCE_BYTES >> 20))
            }
            Ok(_) => match std::fs::read(c) {
                Ok(bytes) => return Ok(String::from_utf8_lossy(&bytes).into_owned()),
                Err(e) => first_err = first_err.or(Some(e.to_string())),
            },
            Err(e) => first_err = first_err.or(Some(e.to_string())),
        }
    }
    Err(format!("cannot read: {}", first_err.unwrap_or_default()))
}

/// Functions, loops and branches give way to what they contain when two blocks cover a line.
fn kind_priority(kind: &str) -> u8 {
    match kind {
        "function" => 0,
        "loop" | "branch" => 1,
        _ => 2,
    }
}

pub fn render(preds: &[Prediction], source_dirs: &[PathBuf]) -> Result<String> {
    let Some(p) = preds.first() else {
        bail!("no prediction to report");
    };
    for (k, q) in preds.iter().enumerate().skip(1) {
        if q.program != p.program {
            bail!(
                "prediction {} is of {}, prediction 1 of {}: a report compares predictions of one program",
                k + 1,
                q.program.join(" "),
                p.program.join(" ")
            );
        }
    }
    let labels = machine_labels(preds);

    // Files: the program's, then any a block or function names that it does not.
    let mut files: Vec<String> = p.program.clone();
    for f in preds.iter().flat_map(|q| q.blocks.iter().map(|b| &b.file).chain(q.functions.iter().map(|f| &f.file))) {
        if !files.contains(f) {
            files.push(f.clone());
        }
    }
    // Blocks: the first prediction's, then those only later ones list.
    let mut blocks: Vec<Block> = Vec::new();
    let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, q) in preds.iter().enumerate() {
        for b in &q.blocks {
            let i = *by_id.entry(b.id.as_str()).or_insert_with(|| {
                blocks.push(Block {
                    cost: b,
                    file: files.iter().position(|f| *f == b.file).unwrap_or(0),
                    per: vec![None; preds.len()],
                });
                blocks.len() - 1
            });
            blocks[i].per[k] = Some(b);
        }
    }
    let max_share = blocks.iter().map(|b| b.cost.share).fold(0.0, f64::max);

    let mut body = String::new();
    header(&mut body, preds, &labels);

    // Source view and block panel.
    body.push_str("<div class=\"grid-main\">\n<section class=\"card\" id=\"source-card\"><h2>Source</h2>\n");
    let _ = writeln!(
        body,
        "<p class=\"hint\">Lines coloured by their block's share of the predicted compute time (the {} hottest blocks; \
         <code>mpicast predict --top N</code> lists more). Click a line or a row to see its block.</p>",
        blocks.len()
    );
    body.push_str("<div id=\"source\" class=\"source\">\n");
    for (fi, f) in files.iter().enumerate() {
        source_file(&mut body, fi, f, &blocks, max_share, source_dirs);
    }
    body.push_str("</div></section>\n");
    body.push_str(
        "<aside class=\"card\" id=\"block-panel\"><h2>Block</h2><div id=\"panel-body\">\
         <p class=\"hint\">Click a highlighted line of the source or a row of the block table.</p></div></aside>\n</div>\n",
    );

    timeline_card(&mut body, p);

    body.push_str(if preds.len() > 1 { "<div class=\"grid-1\">\n" } else { "<div class=\"grid-2\">\n" });
    blocks_table(&mut body, &blocks, &files, &labels);
    functions_table(&mut body, preds, &files, &labels);
    body.push_str("</div>\n");
    ranks_table(&mut body, p);
    body.push_str("<div class=\"grid-2\">\n");
    hosts_table(&mut body, p, &labels[0], preds.len() > 1);
    links_table(&mut body, p, &labels[0], preds.len() > 1);
    body.push_str("</div>\n");
    op_classes_table(&mut body, preds, &labels);
    let _ = writeln!(body, "<footer>mpicast {} · prediction report</footer>", env!("CARGO_PKG_VERSION"));

    let data = page_data(preds, &labels, &files, &blocks);
    let _ = writeln!(body, "<script type=\"application/json\" id=\"mpicast-data\">{}</script>", super::html::script_json(&data));
    let title = format!(
        "mpicast: {} on {} ranks",
        p.program.iter().map(|f| short_path(f)).collect::<Vec<_>>().join(" "),
        p.ranks
    );
    Ok(page(&title, &body, &[include_str!("prediction.js")]))
}

fn header(o: &mut String, preds: &[Prediction], labels: &[String]) {
    let p = &preds[0];
    let prog: Vec<&str> = p.program.iter().map(|f| short_path(f)).collect();
    let _ = writeln!(
        o,
        "<header class=\"card\" id=\"summary\"><h1>{} <span class=\"dim\">on {} rank{}</span></h1>",
        escape(&prog.join(" ")),
        p.ranks,
        if p.ranks == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "<div class=\"headline\"><span class=\"big\" id=\"predicted\">{}</span> predicted \
         <span class=\"dim\">(interval {} .. {})</span></div>",
        seconds(p.predicted_s),
        seconds(p.interval_s[0]),
        seconds(p.interval_s[1])
    );
    o.push_str("<dl class=\"meta\">\n");
    let mut item = |k: &str, v: String| {
        let _ = writeln!(o, "<div><dt>{}</dt><dd>{}</dd></div>", escape(k), v);
    };
    item("program", escape(&p.program.join(" ")));
    if !p.args.is_empty() {
        item("arguments", format!("<code>{}</code>", escape(&p.args.join(" "))));
    }
    if !p.bindings.is_empty() {
        let b: Vec<String> = p.bindings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        item("parameters", escape(&b.join(" ")));
    }
    item("path", escape(&format!("{} ({} costs)", p.mode, p.costs)));
    item("platform", format!("<span title=\"{}\">{}</span>", escape(&p.platform), escape(short_path(&p.platform))));
    if preds.len() == 1 {
        item(
            "machine",
            escape(&format!("{} — {}, {}, {}", p.machine.path, p.machine.hostname, p.machine.cpu_model, p.machine.compiler)),
        );
    }
    if !p.what_if.is_empty() {
        let b: Vec<String> = p.what_if.iter().map(|(k, v)| format!("{k}={v}")).collect();
        item("what-if", escape(&b.join(" ")));
    }
    if let Some(sc) = &p.scaling {
        item(
            "scaled",
            escape(&format!(
                "from a trace at {} ranks, {} scaling: {} → {} ({})",
                sc.from_ranks, sc.mode, sc.topology, sc.scaled_topology, sc.agreement
            )),
        );
    }
    item("simulated", escape(&format!("{} messages; prediction took {:.2} s", p.messages, p.wall_s)));
    o.push_str("</dl>\n");
    if preds.len() > 1 {
        o.push_str("<table class=\"machines\"><thead><tr><th>machine table</th><th>host</th><th>CPU</th><th>compiler</th>\
                    <th>platform</th><th class=\"r\">ranks</th><th class=\"r\">predicted</th><th class=\"r\">interval</th></tr></thead><tbody>\n");
        for (q, l) in preds.iter().zip(labels) {
            let _ = writeln!(
                o,
                "<tr><td title=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td title=\"{}\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{} .. {}</td></tr>",
                escape(&q.machine.path),
                escape(l),
                escape(&q.machine.hostname),
                escape(&q.machine.cpu_model),
                escape(&q.machine.compiler),
                escape(&q.platform),
                escape(short_path(&q.platform)),
                q.ranks,
                seconds(q.predicted_s),
                seconds(q.interval_s[0]),
                seconds(q.interval_s[1])
            );
        }
        o.push_str("</tbody></table>\n");
    }
    let warnings: Vec<String> = preds
        .iter()
        .zip(labels)
        .flat_map(|(q, l)| q.warnings.iter().map(move |w| if preds.len() > 1 { format!("{l}: {w}") } else { w.clone() }))
        .collect();
    if !warnings.is_empty() {
        o.push_str("<ul class=\"warnings\">\n");
        for w in &warnings {
            let _ = writeln!(o, "<li>warning: {}</li>", escape(w));
        }
        o.push_str("</ul>\n");
    }
    if !p.assumptions.is_empty() {
        let _ = writeln!(
            o,
            "<details class=\"assumptions\"{}><summary>{} assumption{}</summary><ul>",
            if p.assumptions.len() <= 3 { " open" } else { "" },
            p.assumptions.len(),
            if p.assumptions.len() == 1 { "" } else { "s" }
        );
        for a in &p.assumptions {
            let _ = writeln!(o, "<li>{}</li>", escape(a));
        }
        o.push_str("</ul></details>\n");
    }
    o.push_str("</header>\n");
}

fn source_file(o: &mut String, fi: usize, file: &str, blocks: &[Block], max_share: f64, dirs: &[PathBuf]) {
    let _ = writeln!(o, "<section class=\"file\" data-file=\"{fi}\"><h3 title=\"{}\">{}</h3>", escape(file), escape(file));
    let text = match read_source(file, dirs) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(
                o,
                "<p class=\"missing\">{}: {} — the source is not shown; the block and function tables still hold its predictions.</p></section>",
                escape(file),
                escape(&e)
            );
            return;
        }
    };
    let lines = super::source::highlight(&text);
    // The innermost block of each line: larger blocks first, so smaller ones overwrite them.
    let mut owner: Vec<Option<usize>> = vec![None; lines.len() + 1];
    let mut mine: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].file == fi).collect();
    let span = |i: usize| blocks[i].cost.line_end.saturating_sub(blocks[i].cost.line_start);
    mine.sort_by(|&a, &b| {
        span(b).cmp(&span(a)).then(kind_priority(&blocks[a].cost.kind).cmp(&kind_priority(&blocks[b].cost.kind)))
    });
    let mut starts: BTreeMap<usize, usize> = BTreeMap::new();
    for &i in &mine {
        let c = blocks[i].cost;
        let (a, b) = (c.line_start.max(1) as usize, (c.line_end as usize).min(lines.len()));
        for slot in owner.iter_mut().take(b + 1).skip(a) {
            *slot = Some(i);
        }
        if a <= lines.len() {
            starts.insert(a, i);
        }
    }
    o.push_str("<div class=\"code\">\n");
    for (n0, html) in lines.iter().enumerate() {
        let n = n0 + 1;
        match owner[n] {
            Some(i) => {
                let share = blocks[i].cost.share;
                let heat = if max_share > 0.0 { (share / max_share).clamp(0.0, 1.0).sqrt() } else { 0.0 };
                let gutter = if starts.get(&n) == Some(&i) { percent(share) } else { String::new() };
                let _ = writeln!(
                    o,
                    "<div class=\"ln b\" id=\"f{fi}l{n}\" data-b=\"{i}\" style=\"background:rgba(226,83,38,{:.3})\">\
                     <span class=\"no\">{n}</span><span class=\"sh\">{gutter}</span><span class=\"tx\">{html}</span></div>",
                    if share > 0.0 { 0.07 + 0.58 * heat } else { 0.03 }
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "<div class=\"ln\" id=\"f{fi}l{n}\"><span class=\"no\">{n}</span><span class=\"sh\"></span><span class=\"tx\">{html}</span></div>"
                );
            }
        }
    }
    o.push_str("</div></section>\n");
}

fn timeline_card(o: &mut String, p: &Prediction) {
    o.push_str("<section class=\"card\" id=\"timeline-card\"><h2>Timeline <span class=\"dim\">per rank, simulated</span></h2>\n");
    if p.timeline.is_empty() {
        o.push_str(
            "<p class=\"missing\" id=\"no-timeline\">This prediction holds no timeline: predict with <code>--timeline</code> \
             (or <code>--html</code>) to see one. The per-rank table below has the split.</p></section>\n",
        );
        return;
    }
    o.push_str(
        "<div class=\"tl-controls\"><button type=\"button\" data-zoom=\"in\">zoom in</button>\
         <button type=\"button\" data-zoom=\"out\">zoom out</button><button type=\"button\" data-zoom=\"reset\">whole run</button>\
         <span id=\"tl-range\" class=\"dim\"></span><span class=\"hint\">wheel: zoom · drag: pan · double-click: whole run · link to a window: <code>#view=START,END</code> (seconds)</span></div>\n\
         <div id=\"timeline\" class=\"timeline\"></div><div id=\"tl-legend\" class=\"legend\"></div>\n",
    );
    if p.timeline.len() > MAX_EVENTS {
        let _ = writeln!(
            o,
            "<p class=\"missing\">The timeline has {} events; this page shows the first {} (the Chrome trace export, \
             <code>--chrome-trace</code>, has all of them).</p>",
            p.timeline.len(),
            MAX_EVENTS
        );
    }
    o.push_str("</section>\n");
}

fn blocks_table(o: &mut String, blocks: &[Block], files: &[String], labels: &[String]) {
    o.push_str("<section class=\"card\" id=\"blocks\"><h2>Hottest blocks <span class=\"dim\">compute, all ranks</span></h2>\n");
    if blocks.is_empty() {
        o.push_str("<p class=\"hint\">The prediction lists no blocks.</p></section>\n");
        return;
    }
    o.push_str("<table class=\"rows\"><thead><tr><th>block</th><th>function</th><th class=\"r\">executions</th>");
    for l in labels {
        let _ = write!(o, "<th class=\"r\">{}</th>", if labels.len() == 1 { "time".to_string() } else { escape(l) });
    }
    o.push_str("<th class=\"r\">share</th><th>op classes</th></tr></thead><tbody>\n");
    for (i, b) in blocks.iter().enumerate() {
        let c = b.cost;
        let _ = write!(
            o,
            "<tr data-b=\"{i}\"><td title=\"{}\">{}:{}-{} {}</td><td>{}</td><td class=\"r\">{}</td>",
            escape(&c.id),
            escape(short_path(&files[b.file])),
            c.line_start,
            c.line_end,
            escape(&c.kind),
            escape(&c.function),
            count(c.executions)
        );
        for q in &b.per {
            let _ = write!(o, "<td class=\"r\">{}</td>", q.map(|q| seconds(q.seconds)).unwrap_or_else(|| "—".into()));
        }
        let _ = writeln!(o, "<td class=\"r\">{}</td><td>{}</td></tr>", percent(c.share), op_bar(c));
    }
    o.push_str("</tbody></table></section>\n");
}

/// A stacked bar of a block's op classes, largest first.
fn op_bar(c: &BlockCost) -> String {
    let total: f64 = c.op_seconds.values().sum();
    if total <= 0.0 {
        return String::new();
    }
    let mut ops: Vec<(&OpClass, &f64)> = c.op_seconds.iter().collect();
    ops.sort_by(|a, b| b.1.total_cmp(a.1));
    let mut o = String::from("<span class=\"opbar\">");
    for (cls, s) in ops {
        let w = 100.0 * s / total;
        if w >= 0.5 {
            let _ = write!(
                o,
                "<i style=\"width:{w:.1}%;background:{}\" title=\"{} {:.0}%\"></i>",
                op_color(*cls),
                cls.name(),
                w
            );
        }
    }
    o.push_str("</span>");
    o
}

fn functions_table(o: &mut String, preds: &[Prediction], files: &[String], labels: &[String]) {
    let p = &preds[0];
    o.push_str("<section class=\"card\" id=\"functions\"><h2>Functions <span class=\"dim\">own blocks, all ranks</span></h2>\n");
    if p.functions.is_empty() {
        o.push_str("<p class=\"hint\">The prediction lists no functions.</p></section>\n");
        return;
    }
    o.push_str("<table class=\"rows\"><thead><tr><th>function</th><th>where</th>");
    for l in labels {
        let _ = write!(o, "<th class=\"r\">{}</th>", if labels.len() == 1 { "time".to_string() } else { escape(l) });
    }
    o.push_str("<th class=\"r\">share</th><th></th></tr></thead><tbody>\n");
    for f in &p.functions {
        let fi = files.iter().position(|x| *x == f.file).unwrap_or(0);
        let _ = write!(
            o,
            "<tr data-file=\"{fi}\" data-line=\"{}\"><td><a href=\"#f{fi}l{}\">{}</a></td><td>{}:{}</td>",
            f.line_start,
            f.line_start,
            escape(&f.name),
            escape(short_path(&f.file)),
            f.line_start
        );
        for q in preds {
            let v = q.functions.iter().find(|g| g.name == f.name && g.file == f.file);
            let _ = write!(o, "<td class=\"r\">{}</td>", v.map(|g| seconds(g.self_seconds)).unwrap_or_else(|| "—".into()));
        }
        let _ = writeln!(
            o,
            "<td class=\"r\">{}</td><td><span class=\"bar\"><i style=\"width:{:.1}%\"></i></span></td></tr>",
            percent(f.share),
            (100.0 * f.share).clamp(0.0, 100.0)
        );
    }
    o.push_str("</tbody></table></section>\n");
}

fn ranks_table(o: &mut String, p: &Prediction) {
    o.push_str("<section class=\"card\" id=\"ranks\"><h2>Ranks <span class=\"dim\">compute, communication and waiting</span></h2>\n");
    o.push_str(
        "<table class=\"rows\"><thead><tr><th class=\"r\">rank</th><th>host</th><th class=\"r\">finish</th><th class=\"r\">compute</th>\
         <th class=\"r\">communication</th><th class=\"r\">waiting</th><th class=\"r\">messages sent</th><th class=\"r\">bytes sent</th>\
         <th>split of the predicted time</th></tr></thead><tbody>\n",
    );
    let end = p.predicted_s.max(f64::MIN_POSITIVE);
    for r in &p.ranks_detail {
        let w = |s: f64| (100.0 * s / end).clamp(0.0, 100.0);
        let _ = writeln!(
            o,
            "<tr><td class=\"r\">{}</td><td>{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td>\
             <td class=\"r\">{}</td><td class=\"r\">{}</td><td><span class=\"split\"><i class=\"cp\" style=\"width:{:.2}%\"></i>\
             <i class=\"cm\" style=\"width:{:.2}%\"></i><i class=\"wt\" style=\"width:{:.2}%\"></i></span></td></tr>",
            r.rank,
            escape(&r.host),
            seconds(r.finish_s),
            seconds(r.compute_s),
            seconds(r.comm_s),
            seconds(r.wait_s),
            r.messages_sent,
            count(r.bytes_sent as f64),
            w(r.compute_s),
            w(r.comm_s),
            w(r.wait_s)
        );
    }
    o.push_str("</tbody></table>\n<div class=\"legend\"><span><i class=\"cp\"></i>compute</span><span><i class=\"cm\"></i>communication</span>\
                <span><i class=\"wt\"></i>waiting for a partner</span><span><i class=\"idle\"></i>finished</span></div></section>\n");
}

fn hosts_table(o: &mut String, p: &Prediction, label: &str, several: bool) {
    let _ = writeln!(
        o,
        "<section class=\"card\" id=\"hosts\"><h2>Hosts <span class=\"dim\">CPU use over the run{}</span></h2>",
        if several { format!(", {}", escape(label)) } else { String::new() }
    );
    o.push_str(
        "<table class=\"rows\"><thead><tr><th>host</th><th class=\"r\">ranks</th><th class=\"r\">cores</th><th class=\"r\">speed</th>\
         <th class=\"r\">computed</th><th class=\"r\">CPU use</th><th></th></tr></thead><tbody>\n",
    );
    let (busy, idle): (Vec<_>, Vec<_>) = p.hosts.iter().partition(|h| h.ranks > 0 || h.computed_flops > 0.0);
    for h in &busy {
        host_row(o, h);
    }
    o.push_str("</tbody></table>\n");
    if !idle.is_empty() {
        let _ = writeln!(
            o,
            "<details><summary>{} host{} without ranks</summary><table class=\"rows\"><tbody>",
            idle.len(),
            if idle.len() == 1 { "" } else { "s" }
        );
        for h in &idle {
            host_row(o, h);
        }
        o.push_str("</tbody></table></details>\n");
    }
    o.push_str("</section>\n");
}

fn host_row(o: &mut String, h: &crate::model::trace::HostStats) {
    let _ = writeln!(
        o,
        "<tr><td>{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td>\
         <td class=\"r\">{}</td><td><span class=\"bar\"><i style=\"width:{:.1}%\"></i></span></td></tr>",
        escape(&h.name),
        h.ranks,
        h.cores,
        si(h.speed_flops, "flop/s"),
        si(h.computed_flops, "flop"),
        percent(h.cpu_use),
        (100.0 * h.cpu_use).clamp(0.0, 100.0)
    );
}

/// A quantity with an SI prefix and up to four significant digits: `267.1 kflop`, `1 Gflop/s`.
fn si(v: f64, unit: &str) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v} {unit}");
    }
    let prefixes = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];
    let (scale, p) = prefixes.iter().find(|(s, _)| v.abs() >= *s).copied().unwrap_or((1.0, ""));
    format!("{} {p}{unit}", tidy(v / scale))
}

fn links_table(o: &mut String, p: &Prediction, label: &str, several: bool) {
    let _ = writeln!(
        o,
        "<section class=\"card\" id=\"links\"><h2>Links <span class=\"dim\">utilisation over the run{}</span></h2>",
        if several { format!(", {}", escape(label)) } else { String::new() }
    );
    let mut links: Vec<_> = p.links.iter().collect();
    links.sort_by(|a, b| b.utilisation.total_cmp(&a.utilisation).then(a.name.cmp(&b.name)));
    o.push_str(
        "<table class=\"rows\"><thead><tr><th>link</th><th class=\"r\">bandwidth</th><th class=\"r\">bytes</th>\
         <th class=\"r\">utilisation</th><th></th></tr></thead><tbody>\n",
    );
    let (used, unused): (Vec<_>, Vec<_>) = links.into_iter().partition(|l| l.bytes > 0.0);
    for l in &used {
        link_row(o, l);
    }
    o.push_str("</tbody></table>\n");
    if !unused.is_empty() {
        let _ = writeln!(
            o,
            "<details><summary>{} link{} no message crossed</summary><table class=\"rows\"><tbody>",
            unused.len(),
            if unused.len() == 1 { "" } else { "s" }
        );
        for l in &unused {
            link_row(o, l);
        }
        o.push_str("</tbody></table></details>\n");
    }
    o.push_str("</section>\n");
}

fn link_row(o: &mut String, l: &crate::model::trace::LinkStats) {
    let _ = writeln!(
        o,
        "<tr><td>{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td>\
         <td><span class=\"bar\"><i style=\"width:{:.1}%\"></i></span></td></tr>",
        escape(&l.name),
        si(l.bandwidth_bytes_per_s, "B/s"),
        si(l.bytes, "B"),
        if l.utilisation > 0.0 && l.utilisation < 1e-3 { format!("{:.4}%", 100.0 * l.utilisation) } else { percent(l.utilisation) },
        (100.0 * l.utilisation).clamp(0.0, 100.0)
    );
}

/// Up to four significant digits, no trailing zeros.
fn tidy(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn op_classes_table(o: &mut String, preds: &[Prediction], labels: &[String]) {
    let p = &preds[0];
    let total: f64 = p.op_classes.values().sum();
    if total <= 0.0 {
        return;
    }
    let _ = writeln!(
        o,
        "<section class=\"card\" id=\"op-classes\"><h2>Op classes <span class=\"dim\">compute time over all ranks{}</span></h2>",
        if preds.len() > 1 { format!(", {}", escape(&labels[0])) } else { String::new() }
    );
    let mut v: Vec<(&OpClass, &f64)> = p.op_classes.iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(a.1));
    o.push_str("<table class=\"rows\"><thead><tr><th>class</th><th class=\"r\">time</th><th class=\"r\">share</th><th></th><th>what it counts</th></tr></thead><tbody>\n");
    for (c, s) in v {
        let _ = writeln!(
            o,
            "<tr><td><i class=\"swatch\" style=\"background:{}\"></i>{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td>\
             <td><span class=\"bar\"><i style=\"width:{:.1}%;background:{}\"></i></span></td><td class=\"dim\">{}</td></tr>",
            op_color(*c),
            c.name(),
            seconds(*s),
            percent(s / total),
            100.0 * s / total,
            op_color(*c),
            escape(c.doc())
        );
    }
    o.push_str("</tbody></table></section>\n");
}

/// The JSON the page's script reads.
fn page_data(preds: &[Prediction], labels: &[String], files: &[String], blocks: &[Block]) -> Value {
    let p = &preds[0];
    let blocks_json: Vec<Value> = blocks
        .iter()
        .map(|b| {
            let per: Vec<Value> = b
                .per
                .iter()
                .map(|q| match q {
                    None => Value::Null,
                    Some(q) => {
                        let mut ops: Vec<(&OpClass, &f64)> = q.op_seconds.iter().collect();
                        ops.sort_by(|a, b| b.1.total_cmp(a.1));
                        json!({
                            "exec": q.executions,
                            "s": q.seconds,
                            "share": q.share,
                            "ops": ops.iter().map(|(c, s)| json!([c.name(), s])).collect::<Vec<_>>(),
                        })
                    }
                })
                .collect();
            json!({
                "id": b.cost.id,
                "kind": b.cost.kind,
                "fn": b.cost.function,
                "file": b.file,
                "ls": b.cost.line_start,
                "le": b.cost.line_end,
                "per": per,
            })
        })
        .collect();
    let ops: serde_json::Map<String, Value> =
        OpClass::ALL.iter().chain(OpClass::MPI).map(|c| (c.name().to_string(), json!([op_color(*c), c.doc()]))).collect();
    json!({
        "machines": labels,
        "files": files,
        "blocks": blocks_json,
        "ops": ops,
        "timeline": timeline_data(p),
    })
}

/// The timeline as integer ticks (picoseconds, or nanoseconds for runs over 2 hours, so the
/// numbers stay exact in a double): `ev` is flat, four numbers per event (rank, kind index,
/// start, end), the earliest [`MAX_EVENTS`] events.
fn timeline_data(p: &Prediction) -> Value {
    let end = p.ranks_detail.iter().map(|r| r.finish_s).fold(p.predicted_s, f64::max);
    let tick_s = if end < 7200.0 { 1e-12 } else { 1e-9 };
    let mut kinds: Vec<&str> = Vec::new();
    let mut events: Vec<&crate::model::trace::TimelineEvent> = p.timeline.iter().collect();
    events.sort_by(|a, b| a.start_s.total_cmp(&b.start_s).then(a.rank.cmp(&b.rank)));
    let cut = events.get(MAX_EVENTS).map(|e| e.start_s);
    events.truncate(MAX_EVENTS);
    let mut ev: Vec<Value> = Vec::with_capacity(events.len() * 4);
    for e in &events {
        let k = match kinds.iter().position(|k| *k == e.kind) {
            Some(k) => k,
            None => {
                kinds.push(&e.kind);
                kinds.len() - 1
            }
        };
        let t = |s: f64| json!((s / tick_s).round() as i64);
        ev.extend([json!(e.rank), json!(k), t(e.start_s), t(e.end_s.max(e.start_s))]);
    }
    json!({
        "tick_s": tick_s,
        "end_s": end,
        "kinds": kinds,
        "cats": kinds.iter().map(|k| super::chrome::category(k)).collect::<Vec<_>>(),
        "ranks": p.ranks_detail.iter().map(|r| json!({
            "rank": r.rank, "host": r.host, "finish": r.finish_s,
            "compute": r.compute_s, "comm": r.comm_s, "wait": r.wait_s,
        })).collect::<Vec<_>>(),
        "ev": ev,
        "total": p.timeline.len(),
        "cut_s": cut,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_keeps_four_digits() {
        assert_eq!(tidy(1.0), "1");
        assert_eq!(tidy(125.0), "125");
        assert_eq!(tidy(0.00184053), "0.001841");
        assert_eq!(tidy(1250.0), "1250");
        assert_eq!(si(267138.679, "flop"), "267.1 kflop");
        assert_eq!(si(1.25e8, "B/s"), "125 MB/s");
        assert_eq!(si(72.0, "B"), "72 B");
    }
}
