//! Segmented regression: T(s) = L_k + s / B_k on consecutive size ranges, break points chosen
//! by dynamic programming, the number of segments by BIC. Errors are relative (weights 1/T^2)
//! because times span four orders of magnitude.

use crate::model::network::Segment;

/// Most segments a fit may use.
pub const MAX_SEGMENTS: usize = 6;
/// Fewest points per segment.
pub const MIN_POINTS: usize = 3;
/// Slopes are kept at or above this (s/B), so bandwidths stay finite (10 TB/s).
const MIN_SLOPE: f64 = 1e-13;

/// A segment's bandwidth at or above this (bytes/s) is the fit's floor on the slope: the time
/// does not grow with the size there (a flat segment).
pub const FLAT_BANDWIDTH: f64 = 1e12;

/// A fitted line a + b s over points [first, last] (indices into the sorted data).
#[derive(Debug, Clone, Copy)]
struct Line {
    a: f64,
    b: f64,
    sse: f64,
}

/// Weighted least squares of t = a + b s with a >= 0 and b >= MIN_SLOPE, weights 1/t^2.
fn fit_line(s: &[f64], t: &[f64]) -> Line {
    let w: Vec<f64> = t.iter().map(|&t| 1.0 / (t * t).max(1e-300)).collect();
    let sse = |a: f64, b: f64| -> f64 {
        s.iter()
            .zip(t)
            .zip(&w)
            .map(|((&s, &t), &w)| w * (t - a - b * s).powi(2))
            .sum()
    };
    let (sw, sws, swt) = (
        w.iter().sum::<f64>(),
        s.iter().zip(&w).map(|(s, w)| w * s).sum::<f64>(),
        t.iter().zip(&w).map(|(t, w)| w * t).sum::<f64>(),
    );
    let swss: f64 = s.iter().zip(&w).map(|(s, w)| w * s * s).sum();
    let swst: f64 = s.iter().zip(t).zip(&w).map(|((s, t), w)| w * s * t).sum();
    let det = sw * swss - sws * sws;
    let mut best: Option<Line> = None;
    let mut consider = |a: f64, b: f64| {
        if a >= 0.0 && b >= MIN_SLOPE && a.is_finite() && b.is_finite() {
            let e = sse(a, b);
            if best.is_none_or(|l| e < l.sse) {
                best = Some(Line { a, b, sse: e });
            }
        }
    };
    if det > 0.0 {
        let b = (sw * swst - sws * swt) / det;
        let a = (swt - b * sws) / sw;
        consider(a, b);
    }
    // Boundaries: a = 0 (line through the origin) and b = MIN_SLOPE (flat).
    if swss > 0.0 {
        consider(0.0, (swst / swss).max(MIN_SLOPE));
    }
    consider(((swt - MIN_SLOPE * sws) / sw).max(0.0), MIN_SLOPE);
    best.unwrap_or(Line {
        a: 0.0,
        b: MIN_SLOPE,
        sse: sse(0.0, MIN_SLOPE),
    })
}

/// The result of a fit: segments plus the error it leaves.
#[derive(Debug, Clone)]
pub struct Fit {
    pub segments: Vec<Segment>,
    /// Sum of squared relative errors.
    pub sse: f64,
}

/// Fits `k` segments exactly (dynamic programming over break positions); `None` when there are
/// too few points.
fn fit_k(
    s: &[f64],
    k: usize,
    cost: &[Vec<Option<Line>>],
) -> Option<(f64, Vec<(usize, usize, Line)>)> {
    let n = s.len();
    if n < k * MIN_POINTS {
        return None;
    }
    // best[j][e]: least cost of covering points 0..e (exclusive) with j segments.
    let inf = f64::INFINITY;
    let mut best = vec![vec![inf; n + 1]; k + 1];
    let mut from = vec![vec![0usize; n + 1]; k + 1];
    best[0][0] = 0.0;
    for j in 1..=k {
        for e in (j * MIN_POINTS)..=n {
            for b in ((j - 1) * MIN_POINTS)..=(e - MIN_POINTS) {
                if best[j - 1][b].is_finite() {
                    if let Some(l) = cost[b][e - 1] {
                        let c = best[j - 1][b] + l.sse;
                        if c < best[j][e] {
                            best[j][e] = c;
                            from[j][e] = b;
                        }
                    }
                }
            }
        }
    }
    if !best[k][n].is_finite() {
        return None;
    }
    let mut parts = Vec::with_capacity(k);
    let mut e = n;
    for j in (1..=k).rev() {
        let b = from[j][e];
        parts.push((
            b,
            e - 1,
            cost[b][e - 1].expect("chosen segments have a fit"),
        ));
        e = b;
    }
    parts.reverse();
    Some((best[k][n], parts))
}

/// Fits piecewise segments to (size, time) points (any order; sizes must be distinct), choosing
/// the number of segments by BIC. Times must be positive.
pub fn fit_segments(points: &[(u64, f64)]) -> Fit {
    let mut pts: Vec<(u64, f64)> = points.iter().copied().filter(|p| p.1 > 0.0).collect();
    pts.sort_by_key(|p| p.0);
    let s: Vec<f64> = pts.iter().map(|p| p.0 as f64).collect();
    let t: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let n = s.len();
    if n == 0 {
        return Fit {
            segments: Vec::new(),
            sse: 0.0,
        };
    }
    let mut cost = vec![vec![None; n]; n];
    for i in 0..n {
        for j in i..n {
            if j + 1 - i >= MIN_POINTS.min(n) {
                cost[i][j] = Some(fit_line(&s[i..=j], &t[i..=j]));
            }
        }
    }
    let nf = n as f64;
    let mut chosen: Option<(f64, f64, Vec<(usize, usize, Line)>)> = None;
    for k in 1..=MAX_SEGMENTS {
        let Some((sse, parts)) = (if n < MIN_POINTS {
            cost[0][n - 1]
                .map(|l| (l.sse, vec![(0, n - 1, l)]))
                .or_else(|| Some((0.0, vec![(0, n - 1, fit_line(&s, &t))])))
        } else {
            fit_k(&s, k, &cost)
        }) else {
            break;
        };
        // BIC with three parameters per segment (latency, bandwidth, break position); a floor on
        // the residual keeps an exact fit from winning by log(0).
        let bic = nf * (sse / nf).max(1e-10).ln() + 3.0 * k as f64 * nf.ln();
        if chosen.as_ref().is_none_or(|c| bic < c.0) {
            chosen = Some((bic, sse, parts));
        }
        if n < MIN_POINTS {
            break;
        }
    }
    let (_, sse, parts) = chosen.expect("at least one segment fits");
    let segments = parts
        .into_iter()
        .map(|(i, j, l)| Segment {
            from_bytes: pts[i].0,
            to_bytes: pts[j].0,
            latency_s: l.a,
            bandwidth_bytes_per_s: 1.0 / l.b,
        })
        .collect();
    Fit { segments, sse }
}

/// Sizes whose time is physically implausible: more than 1.5x the fastest of every larger size,
/// or, for the largest size, more than 1.5x what the previous size's time scaled by the size
/// ratio allows. A one-way time does not fall as messages grow, so such a point was slowed by
/// something else: a rank descheduled on a busy host, for one size or for a whole run of small
/// sizes (a table once measured 6 ms for every size up to 256 B, and 0.8 us at 384 B).
pub fn spikes(points: &[(u64, f64)]) -> Vec<u64> {
    let mut pts: Vec<(u64, f64)> = points.to_vec();
    pts.sort_by_key(|p| p.0);
    let n = pts.len();
    let mut out = Vec::new();
    for i in 0..n {
        let next = pts[i + 1..]
            .iter()
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min);
        let spike = if next.is_finite() {
            pts[i].1 > 1.5 * next
        } else if i > 0 && pts[i - 1].0 > 0 {
            pts[i].1 > 1.5 * pts[i - 1].1 * (pts[i].0 as f64 / pts[i - 1].0 as f64)
        } else {
            false
        };
        if spike {
            out.push(pts[i].0);
        }
    }
    out
}

/// [`fit_segments`] on the points that are not [`spikes`]; returns the fit and the spikes.
pub fn fit_segments_robust(points: &[(u64, f64)]) -> (Fit, Vec<u64>) {
    let out = spikes(points);
    let kept: Vec<(u64, f64)> = points
        .iter()
        .copied()
        .filter(|p| !out.contains(&p.0))
        .collect();
    (fit_segments(&kept), out)
}

/// The segments' prediction for `size`: the last segment that starts at or below it (the first
/// segment below its start).
pub fn predict(segments: &[Segment], size: u64) -> f64 {
    let seg = segments
        .iter()
        .rev()
        .find(|g| g.from_bytes <= size)
        .or(segments.first());
    match seg {
        Some(g) => g.latency_s + size as f64 / g.bandwidth_bytes_per_s,
        None => f64::NAN,
    }
}

/// Held-out check: every third interior size is left out, the rest fitted, the left-out sizes
/// predicted. Returns the held-out sizes and their relative errors.
pub fn heldout_errors(points: &[(u64, f64)]) -> (Vec<u64>, Vec<f64>) {
    let mut pts: Vec<(u64, f64)> = points.to_vec();
    pts.sort_by_key(|p| p.0);
    let n = pts.len();
    let out: Vec<usize> = (1..n.saturating_sub(1)).filter(|i| i % 3 == 2).collect();
    let kept: Vec<(u64, f64)> = pts
        .iter()
        .enumerate()
        .filter(|(i, _)| !out.contains(i))
        .map(|(_, p)| *p)
        .collect();
    let (fit, _) = fit_segments_robust(&kept);
    let sizes = out.iter().map(|&i| pts[i].0).collect();
    let errs = out
        .iter()
        .map(|&i| ((predict(&fit.segments, pts[i].0) - pts[i].1) / pts[i].1).abs())
        .collect();
    (sizes, errs)
}
