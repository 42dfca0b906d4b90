//! The CTC's tables as text: what `mpicast bench network` prints (OSU-style columns, `#`
//! comment lines).

use std::fmt::Write;

use crate::model::network::{NetworkTable, SelfCheck};

/// The ping-pong (OSU-style latency and bandwidth), the send and receive overheads, the
/// collectives, the fitted segments and the fit's error; then the exchange both ways, the
/// sharing policy and the intra-host fit.
pub fn network(t: &NetworkTable) -> String {
    let mut o = String::new();
    osu(&mut o, t);
    links(&mut o, t);
    o
}

/// The self-check on the platform written at `platform`: each size measured and simulated, and
/// whether the largest error is within the bound.
pub fn self_check(check: &SelfCheck, platform: &std::path::Path) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n# Self-check: ping-pong replayed through mpicast's simulator on {}",
        platform.display()
    );
    let _ = writeln!(
        o,
        "# {:>10} {:>14} {:>14} {:>9} {:>14}",
        "Size", "Measured (us)", "Simulated (us)", "Error", "Segments (us)"
    );
    for r in &check.rows {
        let _ = writeln!(
            o,
            "  {:>10} {:>14.3} {:>14.3} {:>8.2}% {:>14.3}",
            r.size_bytes,
            r.measured_s * 1e6,
            r.simulated_s * 1e6,
            r.rel_error * 100.0,
            r.fitted_s * 1e6
        );
    }
    let ok = check.max_rel_error <= check.tolerance;
    let _ = writeln!(
        o,
        "# self-check {}: largest error {:.2}% (bound {:.0}%)",
        if ok { "passed" } else { "FAILED" },
        check.max_rel_error * 100.0,
        check.tolerance * 100.0
    );
    o
}

fn osu(o: &mut String, t: &NetworkTable) {
    let _ = writeln!(
        o,
        "# mpicast CTC ping-pong: {} ({} ranks, rank 0 on {})",
        t.launch.command.first().map(String::as_str).unwrap_or("?"),
        t.launch.ranks,
        t.launch.host0
    );
    let _ = writeln!(
        o,
        "# one-way time = round trip / 2; median of the repetitions; min and p90 beside it"
    );
    let _ = writeln!(
        o,
        "# {:<10} {:>12} {:>12} {:>12} {:>8} {:>7}",
        "Size", "Latency (us)", "Min (us)", "P90 (us)", "Reps", "SE"
    );
    for p in &t.pingpong {
        let _ = writeln!(
            o,
            "{:<12} {:>12.3} {:>12.3} {:>12.3} {:>8} {:>6.1}%",
            p.size_bytes,
            p.median_s * 1e6,
            p.min_s * 1e6,
            p.p90_s * 1e6,
            p.reps,
            p.rel_stderr * 100.0
        );
    }
    let _ = writeln!(o, "\n# {:<10} {:>16}", "Size", "Bandwidth (MB/s)");
    for p in t.pingpong.iter().filter(|p| p.size_bytes > 0) {
        let _ = writeln!(
            o,
            "{:<12} {:>16.2}",
            p.size_bytes,
            p.size_bytes as f64 / p.median_s / 1e6
        );
    }
    let _ = writeln!(
        o,
        "\n# {:<10} {:>14} {:>14}",
        "Size", "Isend post (us)", "Irecv post (us)"
    );
    for v in &t.overheads {
        let _ = writeln!(
            o,
            "{:<12} {:>14.3} {:>14.3}",
            v.size_bytes,
            v.send_s * 1e6,
            v.recv_s * 1e6
        );
    }
    if !t.collectives.is_empty() {
        let _ = writeln!(
            o,
            "\n# {:<10} {:>10} {:>14} {:>12}",
            "Collective", "Size", "Avg (us)", "Min (us)"
        );
        for c in &t.collectives {
            let _ = writeln!(
                o,
                "{:<12} {:>10} {:>14.3} {:>12.3}",
                c.name,
                c.size_bytes,
                c.mean_s * 1e6,
                c.min_s * 1e6
            );
        }
    }
    let _ = writeln!(o, "\n# Fitted segments: T(s) = L + s / B");
    segments(o, &t.segments);
    let _ = writeln!(
        o,
        "# break points: {}; eager/rendezvous switch: {}",
        if t.break_points_bytes.is_empty() {
            "none".to_string()
        } else {
            t.break_points_bytes
                .iter()
                .map(|b| format!("{b} B"))
                .collect::<Vec<_>>()
                .join(", ")
        },
        t.eager_threshold_bytes
            .map(|b| format!("{b} B"))
            .unwrap_or_else(|| "not seen".into())
    );
    if !t.fit.outlier_sizes_bytes.is_empty() {
        let _ = writeln!(
            o,
            "# left out of the fit as outliers (host busy?): {}",
            t.fit
                .outlier_sizes_bytes
                .iter()
                .map(|b| format!("{b} B"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = writeln!(o,
        "# fit error: held-out sizes ({} of {}, fit on the others) max {:.1}%, mean {:.1}%; sizes of the final fit max {:.1}%",
        t.fit.heldout_sizes_bytes.len(),
        t.pingpong.len(),
        t.fit.heldout_max_rel_error * 100.0,
        t.fit.heldout_mean_rel_error * 100.0,
        t.fit.fit_max_rel_error * 100.0
    );
}

/// The exchange both ways, the sharing policy it shows, and the intra-host fit.
fn links(o: &mut String, t: &NetworkTable) {
    if !t.exchange.is_empty() {
        let _ = writeln!(
            o,
            "\n# {:<10} {:>16} {:>16} {:>8}",
            "Size", "Exchange (us)", "One way (us)", "Ratio"
        );
        for x in &t.exchange {
            let one = t
                .pingpong
                .iter()
                .find(|p| p.size_bytes == x.size_bytes)
                .map(|p| p.median_s);
            let _ = writeln!(
                o,
                "{:<12} {:>16.3} {:>16} {:>8}",
                x.size_bytes,
                x.median_s * 1e6,
                one.map(|o| format!("{:.3}", o * 1e6))
                    .unwrap_or_else(|| "-".into()),
                one.map(|o| format!("{:.2}", x.median_s / o))
                    .unwrap_or_else(|| "-".into())
            );
        }
    }
    if let Some(d) = &t.duplex {
        let _ = writeln!(
            o,
            "# both directions at once: {:.2}x the one-way time at {} B: {} (sharing_policy {})",
            d.ratio,
            d.size_bytes,
            if d.sharing_policy == "SHARED" {
                "the directions share the link"
            } else {
                "each direction has its own bandwidth"
            },
            d.sharing_policy
        );
    }
    if let Some(i) = &t.intra_host {
        let _ = writeln!(o, "\n# Two ranks on {}: T(s) = L + s / B", i.host);
        segments(o, &i.segments);
    }
}

fn segments(o: &mut String, segments: &[crate::model::network::Segment]) {
    let _ = writeln!(
        o,
        "# {:>10} {:>10} {:>12} {:>14}",
        "From (B)", "To (B)", "L (us)", "B (MB/s)"
    );
    for g in segments {
        // A flat segment (the time does not grow with the size: a minimum frame, a copy too
        // short to see) says nothing of a bandwidth.
        let bw = if g.bandwidth_bytes_per_s >= crate::network::fit::FLAT_BANDWIDTH {
            "flat".to_string()
        } else {
            format!("{:.1}", g.bandwidth_bytes_per_s / 1e6)
        };
        let _ = writeln!(
            o,
            "  {:>10} {:>10} {:>12.3} {:>14}",
            g.from_bytes,
            g.to_bytes,
            g.latency_s * 1e6,
            bw
        );
    }
}
