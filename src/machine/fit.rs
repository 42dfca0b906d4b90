//! The fitted table "in context": calibration kernels (microbench/mtc_calib.c) with op counts
//! declared on their `mtc-cal` lines, and a non-negative least-squares fit of per-class costs
//! so that formula (1), sum over classes of count * cost, reproduces their measured times.
//!
//! The fit is regularised towards the raw throughput costs: unknowns are the ratios
//! fitted / raw, each kernel contributes one row (relative error), and each class one row
//! sqrt(lambda) * (ratio - 1). With fewer kernels than classes the problem would otherwise be
//! underdetermined; with the pull, a class moves only as far as the kernels ask.

use std::collections::BTreeMap;

use anyhow::{bail, Result};

use crate::model::ops::OpClass;

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
    let ratio = nnls(&rows, &rhs);
    used.iter()
        .zip(ratio)
        .map(|(&c, y)| (c, y * raw(c)))
        .collect()
}

/// Non-negative least squares, Lawson and Hanson: min |A x - b| subject to x >= 0.
/// `a` is given by rows. Sizes here are tens, so plain normal equations are enough.
pub fn nnls(a: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let m = a.len();
    let n = a.first().map_or(0, Vec::len);
    let mut x = vec![0.0; n];
    let mut passive = vec![false; n];
    let tol = 1e-10;
    let gradient = |x: &[f64]| -> Vec<f64> {
        let r: Vec<f64> = (0..m)
            .map(|i| b[i] - (0..n).map(|j| a[i][j] * x[j]).sum::<f64>())
            .collect();
        (0..n)
            .map(|j| (0..m).map(|i| a[i][j] * r[i]).sum())
            .collect()
    };
    for _outer in 0..(3 * n + 10) {
        let w = gradient(&x);
        let next = (0..n)
            .filter(|&j| !passive[j] && w[j] > tol)
            .max_by(|&p, &q| w[p].total_cmp(&w[q]));
        let Some(j) = next else { break };
        passive[j] = true;
        for _inner in 0..(3 * n + 10) {
            let z = solve_passive(a, b, &passive);
            if (0..n).all(|j| !passive[j] || z[j] > tol) {
                x = z;
                break;
            }
            let mut alpha = f64::INFINITY;
            for j in 0..n {
                if passive[j] && z[j] <= tol {
                    let d = x[j] - z[j];
                    if d > 0.0 {
                        alpha = alpha.min(x[j] / d);
                    }
                }
            }
            if !alpha.is_finite() {
                alpha = 0.0;
            }
            for j in 0..n {
                x[j] += alpha * (z[j] - x[j]);
                if passive[j] && x[j] <= tol {
                    passive[j] = false;
                    x[j] = 0.0;
                }
            }
        }
    }
    x
}

/// Unconstrained least squares on the passive columns (others zero).
fn solve_passive(a: &[Vec<f64>], b: &[f64], passive: &[bool]) -> Vec<f64> {
    let cols: Vec<usize> = (0..passive.len()).filter(|&j| passive[j]).collect();
    let k = cols.len();
    let mut ata = vec![vec![0.0; k + 1]; k];
    for (p, &cp) in cols.iter().enumerate() {
        for (q, &cq) in cols.iter().enumerate() {
            ata[p][q] = a.iter().map(|r| r[cp] * r[cq]).sum();
        }
        ata[p][k] = a.iter().zip(b).map(|(r, bi)| r[cp] * bi).sum();
    }
    // Gaussian elimination with partial pivoting on the augmented matrix.
    for col in 0..k {
        let piv = (col..k)
            .max_by(|&p, &q| ata[p][col].abs().total_cmp(&ata[q][col].abs()))
            .unwrap_or(col);
        ata.swap(col, piv);
        let d = ata[col][col];
        if d.abs() < 1e-300 {
            continue;
        }
        for r in 0..k {
            if r != col {
                let f = ata[r][col] / d;
                if f != 0.0 {
                    let pivot_row = ata[col].clone();
                    for (x, p) in ata[r].iter_mut().zip(&pivot_row).skip(col) {
                        *x -= f * p;
                    }
                }
            }
        }
    }
    let mut z = vec![0.0; passive.len()];
    for (p, &cp) in cols.iter().enumerate() {
        let d = ata[p][p];
        z[cp] = if d.abs() < 1e-300 { 0.0 } else { ata[p][k] / d };
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nnls_solves_a_nonnegative_system_and_clips_a_negative_one() {
        // x = (1, 2) exactly.
        let a = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 1.0]];
        let x = nnls(&a, &[1.0, 2.0, 3.0]);
        assert!(
            (x[0] - 1.0).abs() < 1e-9 && (x[1] - 2.0).abs() < 1e-9,
            "{x:?}"
        );
        // Unconstrained answer has x1 < 0: NNLS returns x1 = 0.
        let x = nnls(&[vec![1.0, 1.0], vec![1.0, -1.0]], &[1.0, 3.0]);
        assert!(x.iter().all(|&v| v >= 0.0), "{x:?}");
        assert!((x[0] - 2.0).abs() < 1e-9 && x[1].abs() < 1e-12, "{x:?}");
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
