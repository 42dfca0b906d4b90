//! The sweep figure: three panels (predicted time on log-log axes, speedup on log-log axes with
//! the ideal line, efficiency on a log x axis), one curve per platform, ticks, labels, a legend.

use std::fmt::Write;

use super::html::{escape, short_path};
use crate::model::sweep::{Sweep, SweepPoint};

/// Curve colours, then dash patterns once they run out.
const PALETTE: &[&str] = &["#1f5fa6", "#d1495b", "#2a9d5c", "#e08a1e", "#7b4ea3", "#1b9aaa", "#8c564b", "#c44e9c", "#5d6d2e", "#444444"];
const DASHES: &[&str] = &["", "6 3", "2 3", "8 3 2 3"];

const PANEL_W: f64 = 400.0;
const PANEL_H: f64 = 330.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 48.0;
const LEGEND_ROW: f64 = 22.0;

/// An axis: domain, log or linear, and where it lands on the page.
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Axis {
    fn at(&self, v: f64) -> f64 {
        let (a, b, x) = if self.log { (self.lo.log10(), self.hi.log10(), v.log10()) } else { (self.lo, self.hi, v) };
        self.from + (x - a) / (b - a) * (self.to - self.from)
    }
}

/// The colour and dash of curve `k`.
pub fn style(k: usize) -> (&'static str, &'static str) {
    (PALETTE[k % PALETTE.len()], DASHES[(k / PALETTE.len()) % DASHES.len()])
}

/// Ticks 1-2-5 per decade within [lo, hi], thinned to at most 8; falls back to linear ticks when
/// the range holds fewer than two.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let inside = |mult: &[f64]| -> Vec<f64> {
        let mut v = Vec::new();
        for d in d0..=d1 {
            for m in mult {
                let t = m * 10f64.powi(d);
                if t >= lo * (1.0 - 1e-9) && t <= hi * (1.0 + 1e-9) {
                    v.push(t);
                }
            }
        }
        v
    };
    let mut t = inside(&[1.0, 2.0, 5.0]);
    if t.len() > 8 {
        t = inside(&[1.0]);
        let step = t.len().div_ceil(8);
        t = t.into_iter().step_by(step.max(1)).collect();
    }
    if t.len() < 2 {
        t = inside(&[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    }
    if t.len() < 2 {
        t = lin_ticks(lo, hi);
    }
    t
}

/// About five ticks at a 1-2-5 step within [lo, hi].
fn lin_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if span <= 0.0 || !span.is_finite() {
        return vec![lo];
    }
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| span / s <= 6.0).unwrap_or(10.0 * mag);
    let mut v = Vec::new();
    let mut k = (lo / step).ceil();
    while k * step <= hi + step * 1e-9 {
        v.push(k * step);
        k += 1.0;
    }
    v
}

/// Rank ticks: every rank count when there are at most ten, else powers of two, thinned.
fn rank_ticks(ranks: &[u32], lo: f64, hi: f64) -> Vec<f64> {
    if ranks.len() <= 10 {
        return ranks.iter().map(|&r| f64::from(r)).collect();
    }
    let mut v: Vec<f64> = (0..40).map(|k| 2f64.powi(k)).filter(|t| *t >= lo && *t <= hi).collect();
    let step = v.len().div_ceil(10).max(1);
    v = v.into_iter().step_by(step).collect();
    v
}

/// Seconds for a tick label: short, unit by magnitude.
fn tick_seconds(s: f64) -> String {
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "µs")
    } else {
        (s * 1e9, "ns")
    };
    format!("{} {unit}", tick_number(v))
}

/// A plain number for a tick label, without trailing zeros.
fn tick_number(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if v.abs() >= 1e5 || v.abs() < 1e-3 {
        return format!("{v:.0e}");
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// [lo, hi] of positive finite values, widened a little (multiplicatively on log axes) and made
/// non-empty.
fn domain(values: impl Iterator<Item = f64>, log: bool) -> Option<(f64, f64)> {
    let vals: Vec<f64> = values.filter(|v| v.is_finite() && (!log || *v > 0.0)).collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    if log {
        let (a, b) = (lo.log10(), hi.log10());
        let pad = if b - a < 1e-9 { 0.3 } else { (b - a) * 0.06 };
        Some((10f64.powf(a - pad), 10f64.powf(b + pad)))
    } else {
        let pad = if hi - lo < 1e-12 { 0.5_f64.max(hi.abs() * 0.1) } else { (hi - lo) * 0.06 };
        Some((lo - pad, hi + pad))
    }
}

/// What one panel plots.
struct Panel<'a> {
    title: &'a str,
    y_label: &'a str,
    y_log: bool,
    /// Linear panels start at zero and reach at least this.
    y_floor_to: Option<f64>,
    value: fn(&SweepPoint) -> f64,
    label: fn(f64) -> String,
    /// Dashed reference line(s): (points as (ranks, value), label).
    reference: Option<(Vec<(f64, f64)>, &'a str)>,
}

/// The sweep figure as a standalone SVG document.
pub fn sweep(s: &Sweep) -> String {
    let platforms: Vec<&str> = if s.platforms.is_empty() {
        let mut v: Vec<&str> = Vec::new();
        for p in &s.points {
            if !v.contains(&p.platform.as_str()) {
                v.push(&p.platform);
            }
        }
        v
    } else {
        s.platforms.iter().map(String::as_str).collect()
    };
    let series: Vec<(&str, Vec<&SweepPoint>)> = platforms
        .iter()
        .map(|pl| {
            let mut pts: Vec<&SweepPoint> = s.points.iter().filter(|p| p.platform == *pl).collect();
            pts.sort_by_key(|p| p.ranks);
            (*pl, pts)
        })
        .collect();
    let mut ranks: Vec<u32> = s.points.iter().map(|p| p.ranks).chain(s.ranks.iter().copied()).filter(|r| *r > 0).collect();
    ranks.sort_unstable();
    ranks.dedup();

    let width = 3.0 * PANEL_W;
    // Legend entries flow in rows of four.
    let legend_rows = platforms.len().div_ceil(4).max(1) as f64;
    let height = PANEL_H + 10.0 + legend_rows * LEGEND_ROW;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"mpicast-sweep\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">"
    );
    let prog: Vec<&str> = s.program.iter().map(|p| short_path(p)).collect();
    let _ = writeln!(o, "<title>{}</title>", escape(&format!("mpicast sweep: {}", prog.join(" "))));
    let _ = writeln!(o, "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>");
    if ranks.is_empty() || s.points.is_empty() {
        let _ = writeln!(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">no points in this sweep</text>", width / 2.0, height / 2.0);
        o.push_str("</svg>\n");
        return o;
    }
    let (rlo, rhi) = (f64::from(ranks[0]), f64::from(*ranks.last().unwrap()));
    let ideal: Vec<(f64, f64)> = vec![(rlo, rlo), (rhi, rhi)];
    let panels = [
        Panel {
            title: "Predicted time",
            y_label: "predicted time",
            y_log: true,
            y_floor_to: None,
            value: |p| p.predicted_s,
            label: tick_seconds,
            reference: None,
        },
        Panel {
            title: "Speedup",
            y_label: "speedup",
            y_log: true,
            y_floor_to: None,
            value: |p| p.speedup,
            label: tick_number,
            reference: Some((ideal, "ideal")),
        },
        Panel {
            title: "Efficiency",
            y_label: "efficiency",
            y_log: false,
            y_floor_to: Some(1.0),
            value: |p| p.efficiency,
            label: tick_number,
            reference: Some((vec![(rlo, 1.0), (rhi, 1.0)], "ideal")),
        },
    ];
    for (k, panel) in panels.iter().enumerate() {
        draw_panel(&mut o, k as f64 * PANEL_W, panel, &series, &ranks);
    }
    // Legend.
    let y0 = PANEL_H + 10.0;
    for (k, (pl, _)) in series.iter().enumerate() {
        let (color, dash) = style(k);
        let x = 40.0 + (k % 4) as f64 * 290.0;
        let y = y0 + (k / 4) as f64 * LEGEND_ROW + 8.0;
        let _ = writeln!(
            o,
            "<g class=\"legend-entry\"><title>{}</title><line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"2.5\" stroke-dasharray=\"{dash}\"/>\
             <circle cx=\"{}\" cy=\"{y}\" r=\"3.5\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\">{}</text></g>",
            escape(pl),
            x + 28.0,
            x + 14.0,
            x + 36.0,
            y + 4.0,
            escape(short_path(pl))
        );
    }
    o.push_str("</svg>\n");
    o
}

fn draw_panel(o: &mut String, x0: f64, panel: &Panel, series: &[(&str, Vec<&SweepPoint>)], ranks: &[u32]) {
    let (plot_l, plot_r) = (x0 + LEFT, x0 + PANEL_W - RIGHT);
    let (plot_t, plot_b) = (TOP, PANEL_H - BOTTOM);
    let (rlo, rhi) = (f64::from(ranks[0]), f64::from(*ranks.last().unwrap()));
    let (xlo, xhi) = domain([rlo, rhi].into_iter(), true).unwrap_or((rlo, rhi));
    let x = Axis { lo: xlo, hi: xhi, log: true, from: plot_l, to: plot_r };
    let mut values: Vec<f64> = series.iter().flat_map(|(_, pts)| pts.iter().map(|p| (panel.value)(p))).collect();
    if let Some((pts, _)) = &panel.reference {
        values.extend(pts.iter().map(|p| p.1));
    }
    let (ylo, yhi) = match panel.y_floor_to {
        Some(floor_to) => {
            let hi = values.iter().copied().filter(|v| v.is_finite()).fold(floor_to, f64::max);
            (0.0, hi * 1.08)
        }
        None => domain(values.iter().copied(), panel.y_log).unwrap_or((0.1, 10.0)),
    };
    let y = Axis { lo: ylo, hi: yhi, log: panel.y_log, from: plot_b, to: plot_t };
    let _ = writeln!(o, "<g class=\"panel\" data-panel=\"{}\">", escape(panel.y_label));
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">{}</text>",
        (plot_l + plot_r) / 2.0,
        escape(panel.title)
    );
    // Grid, ticks and tick labels.
    let yt = if panel.y_log { log_ticks(ylo, yhi) } else { lin_ticks(ylo.max(0.0), yhi) };
    for t in yt {
        let py = y.at(t);
        if !(plot_t - 0.5..=plot_b + 0.5).contains(&py) {
            continue;
        }
        let _ = writeln!(
            o,
            "<line x1=\"{plot_l}\" y1=\"{py:.1}\" x2=\"{plot_r}\" y2=\"{py:.1}\" stroke=\"#e4e4e4\"/>\
             <line x1=\"{}\" y1=\"{py:.1}\" x2=\"{plot_l}\" y2=\"{py:.1}\" stroke=\"#333\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#333\">{}</text>",
            plot_l - 5.0,
            plot_l - 7.0,
            py + 4.0,
            escape(&(panel.label)(t))
        );
    }
    for t in rank_ticks(ranks, xlo, xhi) {
        let px = x.at(t);
        let _ = writeln!(
            o,
            "<line x1=\"{px:.1}\" y1=\"{plot_t}\" x2=\"{px:.1}\" y2=\"{plot_b}\" stroke=\"#eeeeee\"/>\
             <line x1=\"{px:.1}\" y1=\"{plot_b}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"#333\"/>\
             <text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
            plot_b + 5.0,
            plot_b + 18.0,
            tick_number(t)
        );
    }
    // Axes and their labels.
    let _ = writeln!(
        o,
        "<rect x=\"{plot_l}\" y=\"{plot_t}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">ranks (log scale)</text>\
         <text transform=\"translate({},{}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>",
        plot_r - plot_l,
        plot_b - plot_t,
        (plot_l + plot_r) / 2.0,
        PANEL_H - 12.0,
        x0 + 13.0,
        (plot_t + plot_b) / 2.0,
        escape(panel.y_label),
        if panel.y_log { " (log scale)" } else { "" }
    );
    // Curves, clipped to the plot area.
    let clip = format!("clip-{}", (x0 / PANEL_W) as usize);
    let _ = writeln!(
        o,
        "<clipPath id=\"{clip}\"><rect x=\"{plot_l}\" y=\"{plot_t}\" width=\"{}\" height=\"{}\"/></clipPath><g clip-path=\"url(#{clip})\">",
        plot_r - plot_l,
        plot_b - plot_t
    );
    if let Some((pts, label)) = &panel.reference {
        let (a, b) = (pts[0], pts[pts.len() - 1]);
        let _ = writeln!(
            o,
            "<line class=\"reference\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\" stroke-dasharray=\"5 4\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#777\">{}</text>",
            x.at(a.0),
            y.at(a.1),
            x.at(b.0),
            y.at(b.1),
            x.at(b.0) - 4.0,
            (y.at(b.1) - 6.0).max(plot_t + 12.0),
            escape(label)
        );
    }
    for (k, (pl, pts)) in series.iter().enumerate() {
        let (color, dash) = style(k);
        let good: Vec<(&SweepPoint, f64, f64)> = pts
            .iter()
            .map(|p| (*p, f64::from(p.ranks), (panel.value)(p)))
            .filter(|(_, _, v)| v.is_finite() && (!panel.y_log || *v > 0.0))
            .map(|(p, r, v)| (p, x.at(r), y.at(v)))
            .collect();
        let _ = writeln!(o, "<g class=\"series\" data-platform=\"{}\" data-series=\"{k}\">", escape(pl));
        if good.len() > 1 {
            let path: Vec<String> = good.iter().map(|(_, px, py)| format!("{px:.1},{py:.1}")).collect();
            let _ = writeln!(
                o,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" stroke-dasharray=\"{dash}\"/>",
                path.join(" ")
            );
        }
        for (p, px, py) in &good {
            let _ = writeln!(
                o,
                "<circle class=\"pt\" data-ranks=\"{}\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"3.5\" fill=\"{color}\"><title>{}</title></circle>",
                p.ranks,
                escape(&format!(
                    "{}, {} ranks: {} {}",
                    short_path(pl),
                    p.ranks,
                    panel.y_label,
                    if panel.y_log && panel.y_label == "predicted time" {
                        super::html::seconds((panel.value)(p))
                    } else {
                        format!("{:.3}", (panel.value)(p))
                    }
                ))
            );
        }
        o.push_str("</g>\n");
    }
    o.push_str("</g></g>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_are_one_two_five_in_range() {
        assert_eq!(log_ticks(0.8e-3, 30e-3), vec![1e-3, 2e-3, 5e-3, 1e-2, 2e-2]);
        // Many decades: powers of ten only, at most eight.
        let t = log_ticks(1e-9, 1e3);
        assert!(t.len() <= 8 && t.len() >= 4, "{t:?}");
        // A narrow range still gets two ticks.
        assert!(log_ticks(1.1, 1.9).len() >= 2);
    }

    #[test]
    fn lin_ticks_and_labels() {
        let t: Vec<String> = lin_ticks(0.0, 1.08).into_iter().map(tick_number).collect();
        assert_eq!(t, ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        assert_eq!(tick_seconds(2e-3), "2 ms");
        assert_eq!(tick_seconds(5e-7), "500 ns");
        assert_eq!(tick_number(0.25), "0.25");
        assert_eq!(tick_number(64.0), "64");
    }
}
