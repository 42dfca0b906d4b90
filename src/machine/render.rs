//! Tables a person reads: the machine table, two tables compared, two runs' repeatability.

use std::fmt::Write;

use crate::model::machine::{MachineTable, Measure};
use crate::model::ops::OpClass;

fn ns(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn flag(m: &Measure) -> &'static str {
    if m.clamped {
        " (floor)"
    } else {
        ""
    }
}

pub fn table(t: &MachineTable) -> String {
    let mut s = String::new();
    let caches: Vec<String> = t
        .host
        .caches
        .iter()
        .filter(|c| c.kind != "Instruction")
        .map(|c| format!("L{} {} KiB", c.level, c.size_bytes / 1024))
        .collect();
    let _ = writeln!(
        s,
        "host      {} ({}, {} cores; {})",
        t.host.hostname,
        t.host.cpu_model,
        t.host.cores,
        caches.join(", ")
    );
    let _ = writeln!(
        s,
        "compiler  {} {} ({})",
        t.compiler.cc,
        t.compiler.cflags.join(" "),
        t.compiler.version
    );
    let _ = writeln!(
        s,
        "timer     {} ({}), descheduled {:.1}% of the wall time (host load){}",
        if t.timer.source == "perf_event" {
            "perf_event counters + clock"
        } else {
            "clock only"
        },
        t.timer.clock,
        t.timer.descheduled_fraction * 100.0,
        t.timer
            .fallback_reason
            .as_deref()
            .map(|r| format!("; {r}"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        s,
        "samples   {} per kernel, >= {} ms each, median kept; empty loop {} ns/iter; took {:.1} s",
        t.settings.samples,
        t.settings.min_sample_ms,
        ns(t.settings.empty_loop_ns),
        t.duration_s
    );
    let _ = writeln!(s);
    let fitted = t.fit.as_ref();
    let _ = writeln!(
        s,
        "{:<12} {:>11} {:>8} {:>11} {:>8} {:>10}  ns per op",
        "class", "throughput", "spread", "latency", "spread", "fitted"
    );
    for (c, v) in &t.classes {
        let f = fitted
            .and_then(|f| f.ns_per_op.get(c))
            .map(|&x| ns(x))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            s,
            "{:<12} {:>11} {:>8} {:>11} {:>8} {:>10}  {}",
            c.name(),
            format!("{}{}", ns(v.throughput.ns_per_op), flag(&v.throughput)),
            pct(v.throughput.spread),
            format!(
                "{}{}",
                ns(v.latency.ns_per_op),
                if v.latency_is_chain { "" } else { "*" }
            ),
            pct(v.latency.spread),
            f,
            c.doc()
        );
    }
    let _ = writeln!(
        s,
        "(* no dependent chain for this class: latency is a single stream)"
    );
    if !t.memory.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:<6} {:>12} {:>13} {:>13} {:>13} {:>13} {:>13} {:>15}",
            "memory", "working set", "stream load", "stream store", "random load", "random store", "stride load", "all cores l/s"
        );
        let levels: Vec<&str> = {
            let mut v: Vec<&str> = Vec::new();
            for m in &t.memory {
                if !v.contains(&m.level.as_str()) {
                    v.push(&m.level);
                }
            }
            v
        };
        for l in levels {
            let get = |p: &str, a: &str| t.memory_cost(l, p, a);
            let ws = get("stream", "load").map_or(0, |m| m.working_set_bytes);
            let cell = |p: &str, a: &str| {
                get(p, a)
                    .map(|m| ns(m.throughput.ns_per_op))
                    .unwrap_or_else(|| "-".into())
            };
            let rl = get("random", "load")
                .map(|m| {
                    format!(
                        "{}/{}",
                        ns(m.throughput.ns_per_op),
                        m.latency.map(|x| ns(x.ns_per_op)).unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| "-".into());
            let all = match (get("stream_all_cores", "load"), get("stream_all_cores", "store")) {
                (Some(a), Some(b)) => format!("{}/{}", ns(a.throughput.ns_per_op), ns(b.throughput.ns_per_op)),
                _ => "-".into(),
            };
            let _ = writeln!(
                s,
                "{:<6} {:>9} KiB {:>13} {:>13} {:>13} {:>13} {:>13} {:>15}",
                l,
                ws / 1024,
                cell("stream", "load"),
                cell("stream", "store"),
                rl,
                cell("random", "store"),
                cell("stride", "load"),
                all
            );
        }
        let _ = writeln!(
            s,
            "(ns per 8-byte access; random load: independent / dependent chase; all cores: the streams with every core streaming)"
        );
    }
    if let Some(c) = &t.co_run {
        let ratios: Vec<f64> = c.kernels.iter().filter(|k| k.name.starts_with("cal_")).map(|k| k.all_cores_ns / k.alone_ns).collect();
        let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &r| (a.min(r), b.max(r)));
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "co-run    {} cores busy: loop bodies {:.2}x slower than alone (median of {} calibration kernels, {:.2}..{:.2}; wall clock); independent register ops {:.2}x, dependent chains {:.2}x",
            c.cores,
            c.factor,
            ratios.len(),
            lo,
            hi,
            c.throughput_factor,
            c.latency_factor
        );
    }
    if let Some(r) = &t.regime {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "regime    costs taken where the probe ({}) ran {} per iteration (+-{:.0}%): {:.0}% of the samples; the probe ranged {}..{}{}",
            r.probe_kernel,
            ns(r.probe_ns),
            (r.band - 1.0) * 100.0,
            r.share * 100.0,
            ns(r.probe_min_ns),
            ns(r.probe_max_ns),
            match (r.extra_samples, r.kernels_short) {
                (0, 0) => String::new(),
                (e, 0) => format!("; {e} more samples taken"),
                (e, k) => format!("; {e} more samples taken, {k} kernels still short of 3"),
            }
        );
    }
    if let Some(c) = &t.core_resources {
        let bound: Vec<String> = c.kernels.iter().filter(|k| k.resource_bound).map(|k| format!("{} {:.2}", k.name, k.measured_ns / k.scheduled_ns)).collect();
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "llvm-mca  resource-bound bodies took {:.2}x its schedule (median of {}: {})",
            c.factor,
            bound.len(),
            bound.join(", ")
        );
    }
    if let Some(f) = fitted {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:<18} {:>12} {:>12} {:>9} {:>12} {:>9}",
            "calibration", "measured", "raw model", "error", "fitted", "error"
        );
        for k in &f.kernels {
            let _ = writeln!(
                s,
                "{:<18} {:>12} {:>12} {:>9} {:>12} {:>9}",
                k.name,
                ns(k.measured.ns_per_op),
                ns(k.predicted_raw_ns),
                pct(k.error_raw),
                ns(k.predicted_fit_ns),
                pct(k.error_fit)
            );
        }
        let _ = writeln!(s, "(ns per loop body; formula (1) with declared counts and raw throughput or fitted costs)");
    }
    s
}

/// Per-class ratio B / A.
pub fn compare(a: &MachineTable, b: &MachineTable, a_name: &str, b_name: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "A  {a_name}: {} {} {}",
        a.host.hostname,
        a.compiler.cc,
        a.compiler.cflags.join(" ")
    );
    let _ = writeln!(
        s,
        "B  {b_name}: {} {} {}",
        b.host.hostname,
        b.compiler.cc,
        b.compiler.cflags.join(" ")
    );
    let _ = writeln!(
        s,
        "{:<12} {:>11} {:>11} {:>8} {:>11} {:>11} {:>8}",
        "class", "A tp", "B tp", "B/A", "A lat", "B lat", "B/A"
    );
    for c in OpClass::ALL.iter().chain(OpClass::MPI) {
        let (Some(x), Some(y)) = (a.classes.get(c), b.classes.get(c)) else {
            continue;
        };
        let _ = writeln!(
            s,
            "{:<12} {:>11} {:>11} {:>8.2} {:>11} {:>11} {:>8.2}",
            c.name(),
            ns(x.throughput.ns_per_op),
            ns(y.throughput.ns_per_op),
            y.throughput.ns_per_op / x.throughput.ns_per_op,
            ns(x.latency.ns_per_op),
            ns(y.latency.ns_per_op),
            y.latency.ns_per_op / x.latency.ns_per_op
        );
    }
    for m in &a.memory {
        if let Some(n) = b.memory_cost(&m.level, &m.pattern, &m.access) {
            let _ = writeln!(
                s,
                "{:<12} {:>11} {:>11} {:>8.2}",
                format!("{} {} {}", m.level, m.pattern, m.access),
                ns(m.throughput.ns_per_op),
                ns(n.throughput.ns_per_op),
                n.throughput.ns_per_op / m.throughput.ns_per_op
            );
        }
    }
    s
}

/// Repeatability of two runs in a row: per class |B/A - 1| for throughput and latency.
pub struct Repeatability {
    pub text: String,
    /// Median over classes of the per-class difference (throughput).
    pub median_diff: f64,
    pub max_diff: f64,
    pub within_5pct: usize,
    pub classes: usize,
}

pub fn repeatability(a: &MachineTable, b: &MachineTable) -> Repeatability {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<12} {:>11} {:>11} {:>8} {:>11} {:>11} {:>8}",
        "class", "run 1 tp", "run 2 tp", "diff", "run 1 lat", "run 2 lat", "diff"
    );
    let mut diffs = Vec::new();
    for c in OpClass::ALL.iter().chain(OpClass::MPI) {
        let (Some(x), Some(y)) = (a.classes.get(c), b.classes.get(c)) else {
            continue;
        };
        let d = (y.throughput.ns_per_op / x.throughput.ns_per_op - 1.0).abs();
        let dl = (y.latency.ns_per_op / x.latency.ns_per_op - 1.0).abs();
        diffs.push(d);
        let _ = writeln!(
            s,
            "{:<12} {:>11} {:>11} {:>8} {:>11} {:>11} {:>8}{}",
            c.name(),
            ns(x.throughput.ns_per_op),
            ns(y.throughput.ns_per_op),
            pct(d),
            ns(x.latency.ns_per_op),
            ns(y.latency.ns_per_op),
            pct(dl),
            if d > 0.05 { "  > 5%" } else { "" }
        );
    }
    for m in &a.memory {
        if let Some(n) = b.memory_cost(&m.level, &m.pattern, &m.access) {
            let d = (n.throughput.ns_per_op / m.throughput.ns_per_op - 1.0).abs();
            let _ = writeln!(
                s,
                "{:<12} {:>11} {:>11} {:>8}",
                format!("{} {} {}", m.level, m.pattern, m.access),
                ns(m.throughput.ns_per_op),
                ns(n.throughput.ns_per_op),
                pct(d)
            );
        }
    }
    let median_diff = super::measure::median(&diffs);
    let max_diff = diffs.iter().copied().fold(0.0, f64::max);
    let within = diffs.iter().filter(|&&d| d <= 0.05).count();
    let _ = writeln!(
        s,
        "classes within 5% (throughput): {within}/{}; median difference {} (target 3%); largest {}",
        diffs.len(),
        pct(median_diff),
        pct(max_diff)
    );
    let _ = writeln!(
        s,
        "run 1 took {:.1} s, run 2 {:.1} s",
        a.duration_s, b.duration_s
    );
    Repeatability {
        text: s,
        median_diff,
        max_diff,
        within_5pct: within,
        classes: diffs.len(),
    }
}
