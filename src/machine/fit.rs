//! The fitted table "in context": calibration kernels (microbench/mtc_calib.c) with op counts
//! declared on their `mtc-cal` lines, and a non-negative least-squares fit of per-class costs
//! so that formula (1), sum over classes of count * cost, reproduces their measured times.
//!
//! The fit is regularised towards the raw throughput costs: unknowns are the ratios
//! fitted / raw, each kernel contributes one row (relative error), and each class one row
//! sqrt(lambda) * (ratio - 1). With fewer kernels than classes the problem would otherwise be
//! underdetermined; with the pull, a class moves only as far as the kernels ask. A ratio stays
//! within [`FIT_RATIO`]: with 16 kernels for 29 classes the kernels' own noise could otherwise
//! drive a class to zero (loads and stores were fitted at 0 ns, an int add at 0.004 ns) and a
//! prediction would swing with the table's run.

use std::collections::BTreeMap;

use anyhow::{bail, Result};

use crate::model::ops::OpClass;

/// The range of fitted / raw cost: no class is fitted below half or above twice its measured cost.
pub const FIT_RATIO: (f64, f64) = (0.5, 2.0);

/// One calibration kernel's declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct CalDecl {
    pub name: String,
    /// Loop bodies per kernel iteration.
    pub bodies: f64,
    /// Ops of each class per body.
    pub counts: BTreeMap<OpClass, f64>,
}

/// Parses every `mtc-cal NAME bodies=N: class=count ...` line of `source`.
pub fn parse_declarations(source: &str) -> Result<Vec<CalDecl>> {
    let mut out = Vec::new();
    for (lineno, line) in source.lines().enumerate() {
        let Some(rest) = line.split("mtc-cal ").nth(1) else {
            continue;
        };
        let rest = rest.trim().trim_end_matches("*/").trim();
        let Some((head, counts)) = rest.split_once(':') else {
            bail!("mtc_calib.c:{}: mtc-cal line without ':'", lineno + 1)
        };
        let mut head = head.split_whitespace();
        let name = head.next().unwrap_or_default().to_string();
        let bodies = head
            .next()
            .and_then(|b| b.strip_prefix("bodies="))
            .and_then(|b| b.parse::<f64>().ok())
            .ok_or_else(|| anyhow::anyhow!("mtc_calib.c:{}: {name}: no bodies=N", lineno + 1))?;
        let mut map = BTreeMap::new();
        for item in counts.split_whitespace() {
            let Some((k, v)) = item.split_once('=') else {
                bail!(
                    "mtc_calib.c:{}: {name}: {item:?} is not class=count",
                    lineno + 1
                )
            };
            let Some(class) = OpClass::from_name(k) else {
                let valid: Vec<&str> = OpClass::ALL.iter().map(|c| c.name()).collect();
                bail!(
                    "mtc_calib.c:{}: {name}: unknown class {k:?} (valid: {})",
                    lineno + 1,
                    valid.join(", ")
                )
            };
            let Ok(v) = v.parse::<f64>() else {
                bail!("mtc_calib.c:{}: {name}: bad count {v:?}", lineno + 1)
            };
            map.insert(class, v);
        }
        out.push(CalDecl {
            name,
            bodies,
            counts: map,
        });
    }
    Ok(out)
}

/// Formula (1) for one body.
pub fn predict(counts: &BTreeMap<OpClass, f64>, cost: impl Fn(OpClass) -> f64) -> f64 {
    counts.iter().map(|(&c, &n)| n * cost(c)).sum()
}

/// Fits per-class costs. `measured_ns[k]` is kernel k's ns per body; `raw(c)` the raw cost.
/// Returns the fitted cost of every class the kernels use.
pub fn fit(
    decls: &[CalDecl],
    measured_ns: &[f64],
    raw: impl Fn(OpClass) -> f64,
    lambda: f64,
) -> BTreeMap<OpClass, f64> {
    let used: Vec<OpClass> = {
        let mut v: Vec<OpClass> = decls
            .iter()
            .flat_map(|d| d.counts.keys().copied())
            .collect();
        v.sort();
        v.dedup();
        v.into_iter().filter(|&c| raw(c) > 0.0).collect()
    };
    let n = used.len();
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut rhs = Vec::new();
    for (d, &t) in decls.iter().zip(measured_ns) {
        if t <= 0.0 {
            continue;
        }
        rows.push(
            used.iter()
                .map(|&c| d.counts.get(&c).copied().unwrap_or(0.0) * raw(c) / t)
                .collect(),
        );
        rhs.push(1.0);
    }
    let s = lambda.sqrt();
    for j in 0..n {
        let mut r = vec![0.0; n];
        r[j] = s;
        rows.push(r);
        rhs.push(s);
    }
    let ratio = bounded_least_squares(&rows, &rhs, FIT_RATIO.0, FIT_RATIO.1);
    used.iter()
        .zip(ratio)
        .map(|(&c, y)| (c, y * raw(c)))
        .collect()
}

/// Box-constrained least squares: min |A x - b| subject to lo <= x <= hi, by projected
/// coordinate descent on the normal equations (exact for each coordinate; converges because
/// the problem is convex). `a` is given by rows; sizes here are tens of unknowns.
pub fn bounded_least_squares(a: &[Vec<f64>], b: &[f64], lo: f64, hi: f64) -> Vec<f64> {
    let n = a.first().map_or(0, Vec::len);
    let ata: Vec<Vec<f64>> = (0..n)
        .map(|p| (0..n).map(|q| a.iter().map(|r| r[p] * r[q]).sum()).collect())
        .collect();
    let atb: Vec<f64> = (0..n).map(|p| a.iter().zip(b).map(|(r, bi)| r[p] * bi).sum()).collect();
    let mut x = vec![1.0_f64.clamp(lo, hi); n];
    for _sweep in 0..100_000 {
        let mut moved = 0.0_f64;
        for j in 0..n {
            if ata[j][j] <= 0.0 {
                continue;
            }
            let rest: f64 = (0..n).filter(|&k| k != j).map(|k| ata[j][k] * x[k]).sum();
            let v = ((atb[j] - rest) / ata[j][j]).clamp(lo, hi);
            moved = moved.max((v - x[j]).abs());
            x[j] = v;
        }
        if moved < 1e-13 {
            break;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_least_squares_solves_an_inner_system_and_clips_at_the_bounds() {
        // x = (1, 2) exactly, inside the bounds.
        let a = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 1.0]];
        let x = bounded_least_squares(&a, &[1.0, 2.0, 3.0], 0.0, 10.0);
        assert!((x[0] - 1.0).abs() < 1e-9 && (x[1] - 2.0).abs() < 1e-9, "{x:?}");
        // Unconstrained answer (2, -1): x1 is held at the lower bound 0.5, x0 then solves the
        // rest: min (x0 + 0.5 - 1)^2 + (x0 - 0.5 - 3)^2 -> x0 = 2.
        let x = bounded_least_squares(&[vec![1.0, 1.0], vec![1.0, -1.0]], &[1.0, 3.0], 0.5, 2.0);
        assert!((x[1] - 0.5).abs() < 1e-12 && (x[0] - 2.0).abs() < 1e-9, "{x:?}");
        // And at the upper bound: x = 5 asked, 2 given.
        let x = bounded_least_squares(&[vec![1.0]], &[5.0], 0.5, 2.0);
        assert_eq!(x, vec![2.0]);
    }

    #[test]
    fn declarations_in_the_calibration_source_parse() {
        let decls = parse_declarations(super::super::kernels::calib_source()).unwrap();
        assert!(decls.len() >= 10, "{} kernels", decls.len());
        for d in &decls {
            assert!(d.bodies > 0.0 && !d.counts.is_empty(), "{d:?}");
        }
    }

    #[test]
    fn fit_recovers_costs_the_kernels_imply() {
        // Truth: a = 1, b = 3; raw guesses 2 and 2. Three kernels determine both.
        let decl = |name: &str, na: f64, nb: f64| CalDecl {
            name: name.into(),
            bodies: 1.0,
            counts: [(OpClass::IntAdd, na), (OpClass::IntMul, nb)]
                .into_iter()
                .filter(|p| p.1 > 0.0)
                .collect(),
        };
        let decls = vec![
            decl("a", 1.0, 0.0),
            decl("b", 0.0, 1.0),
            decl("ab", 2.0, 1.0),
        ];
        let got = fit(&decls, &[1.0, 3.0, 5.0], |_| 2.0, 1e-6);
        assert!((got[&OpClass::IntAdd] - 1.0).abs() < 1e-3, "{got:?}");
        assert!((got[&OpClass::IntMul] - 3.0).abs() < 1e-3, "{got:?}");
    }
}
