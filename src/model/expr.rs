//! Symbolic counts: exact polynomials with rational coefficients over named parameters, plus the
//! integer operations loop counts need (floor and ceiling division, min, max, conditionals,
//! summations and logarithmic counts).
//!
//! An [`Expr`] is written to JSON as its formula text (a number when it is constant) and read
//! back by [`Expr::parse`], so analysis files stay readable: `"expr": "(n^2 - n)/2"`.
//!
//! Text syntax: `+ - * ^` (non-negative integer powers of variables), `a/k` exact division by
//! a constant, `floor(a/b)`, `ceil(a/b)`, `mod(a, b)`, `min(a, b)`, `max(a, b)`,
//! `ifpos(c, a, b)` (a when c > 0, else b), `sum(v, lo, hi, body)` (v from lo to hi inclusive),
//! `logcount(start, bound, factor)` (how many of start, start*factor, ... are below bound).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

// ---- Rationals --------------------------------------------------------------------------------

/// An exact rational number, always normalised (gcd 1, positive denominator).
///
/// Arithmetic that would overflow i128 does not panic: the result is rounded to a rational with
/// denominator 2^40, and magnitudes saturate at 2^120 (about 1.3e36: no count of a real program
/// gets near it; hostile input, such as 10,000 nested loops, does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rat {
    num: i128,
    den: i128,
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    // Only gcd(i128::MIN, 0) does not fit; Rat never holds i128::MIN.
    i128::try_from(a).unwrap_or(i128::MAX)
}

/// Where overflowing arithmetic saturates.
const SATURATE: i128 = 1 << 120;

impl Rat {
    pub const ZERO: Rat = Rat { num: 0, den: 1 };
    pub const ONE: Rat = Rat { num: 1, den: 1 };

    /// `num / den`; a zero denominator gives the saturated value of num's sign (never a panic).
    pub fn new(num: i128, den: i128) -> Rat {
        Rat::checked(num, den).unwrap_or_else(|| {
            if den == 0 {
                Rat::approx(if num < 0 { f64::NEG_INFINITY } else { f64::INFINITY })
            } else {
                Rat::approx(num as f64 / den as f64)
            }
        })
    }
    fn checked(num: i128, den: i128) -> Option<Rat> {
        if den == 0 || num == i128::MIN || den == i128::MIN {
            return None;
        }
        let g = gcd(num, den).max(1);
        let s = if den < 0 { -1 } else { 1 };
        Some(Rat { num: s * num / g, den: s * den / g })
    }
    /// The nearest multiple of 2^-40, saturated at +-2^120 (NaN gives 0).
    fn approx(v: f64) -> Rat {
        const SCALE: i128 = 1 << 40;
        let limit = SATURATE as f64;
        if v.is_nan() {
            Rat::ZERO
        } else if v.abs() >= limit {
            Rat { num: if v > 0.0 { SATURATE } else { -SATURATE }, den: 1 }
        } else if v.abs() >= (1u64 << 60) as f64 {
            Rat { num: v.round() as i128, den: 1 }
        } else {
            Rat::checked((v * SCALE as f64).round() as i128, SCALE).unwrap_or(Rat::ZERO)
        }
    }
    pub fn int(n: i128) -> Rat {
        Rat { num: n.max(-i128::MAX), den: 1 }
    }
    pub fn num(self) -> i128 {
        self.num
    }
    pub fn den(self) -> i128 {
        self.den
    }
    pub fn is_zero(self) -> bool {
        self.num == 0
    }
    pub fn is_int(self) -> bool {
        self.den == 1
    }
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
    pub fn add(self, o: Rat) -> Rat {
        let g = gcd(self.den, o.den).max(1);
        let exact = || {
            let l = (self.den / g).checked_mul(o.den)?;
            let a = self.num.checked_mul(l / self.den)?;
            let b = o.num.checked_mul(l / o.den)?;
            Rat::checked(a.checked_add(b)?, l)
        };
        exact().unwrap_or_else(|| Rat::approx(self.to_f64() + o.to_f64()))
    }
    pub fn mul(self, o: Rat) -> Rat {
        let g1 = gcd(self.num, o.den).max(1);
        let g2 = gcd(o.num, self.den).max(1);
        let exact = || Rat::checked((self.num / g1).checked_mul(o.num / g2)?, (self.den / g2).checked_mul(o.den / g1)?);
        exact().unwrap_or_else(|| Rat::approx(self.to_f64() * o.to_f64()))
    }
    pub fn neg(self) -> Rat {
        Rat { num: -self.num, den: self.den }
    }
    pub fn recip(self) -> Rat {
        Rat::new(self.den, self.num)
    }
    pub fn floor(self) -> i128 {
        self.num.div_euclid(self.den)
    }
}

// ---- Polynomials ------------------------------------------------------------------------------

/// A monomial: variables with positive exponents, sorted by name.
pub type Mono = Vec<(String, u32)>;

/// A multivariate polynomial with rational coefficients.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Poly {
    terms: Terms,
}

/// A polynomial's terms: nonzero coefficients by monomial, a vector sorted by monomial. Most
/// polynomials have one to three terms, and an analysis holds millions of them (op counts of
/// every block): a BTreeMap node sized for eleven entries took about 600 bytes for each.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
struct Terms(Vec<(Mono, Rat)>);

impl Terms {
    fn single(m: Mono, c: Rat) -> Terms {
        Terms(if c.is_zero() { Vec::new() } else { vec![(m, c)] })
    }
    fn iter(&self) -> impl Iterator<Item = (&Mono, &Rat)> {
        self.0.iter().map(|(m, c)| (m, c))
    }
    fn keys(&self) -> impl Iterator<Item = &Mono> {
        self.0.iter().map(|(m, _)| m)
    }
    fn values(&self) -> impl Iterator<Item = &Rat> {
        self.0.iter().map(|(_, c)| c)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn get(&self, m: &Mono) -> Option<&Rat> {
        self.0.binary_search_by(|(k, _)| k.cmp(m)).ok().map(|i| &self.0[i].1)
    }
    /// Adds `c` to the coefficient of `m`, dropping it when the sum is zero.
    fn add_term(&mut self, m: &Mono, c: Rat) {
        match self.0.binary_search_by(|(k, _)| k.cmp(m)) {
            Ok(i) => {
                let sum = self.0[i].1.add(c);
                if sum.is_zero() {
                    self.0.remove(i);
                } else {
                    self.0[i].1 = sum;
                }
            }
            Err(i) if !c.is_zero() => self.0.insert(i, (m.clone(), c)),
            Err(_) => {}
        }
    }
    /// The same monomials, each coefficient mapped (zeros dropped).
    fn map_coefficients(&self, f: impl Fn(Rat) -> Rat) -> Terms {
        Terms(self.0.iter().map(|(m, c)| (m.clone(), f(*c))).filter(|(_, c)| !c.is_zero()).collect())
    }
}

impl FromIterator<(Mono, Rat)> for Terms {
    /// Sorted by monomial; coefficients of a repeated monomial are added, zeros dropped.
    fn from_iter<I: IntoIterator<Item = (Mono, Rat)>>(iter: I) -> Terms {
        let mut v: Vec<(Mono, Rat)> = iter.into_iter().collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Mono, Rat)> = Vec::with_capacity(v.len());
        for (m, c) in v {
            match out.last_mut() {
                Some(last) if last.0 == m => last.1 = last.1.add(c),
                _ => out.push((m, c)),
            }
        }
        out.retain(|(_, c)| !c.is_zero());
        Terms(out)
    }
}

/// The product of two monomials: a merge of their sorted variables.
fn mono_mul(a: &Mono, b: &Mono) -> Mono {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i].clone());
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j].clone());
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a[i].0.clone(), a[i].1.saturating_add(b[j].1)));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

impl Poly {
    pub fn constant(c: Rat) -> Poly {
        Poly { terms: Terms::single(Vec::new(), c) }
    }
    pub fn int(n: i128) -> Poly {
        Poly::constant(Rat::int(n))
    }
    pub fn var(name: &str) -> Poly {
        Poly { terms: Terms::single(vec![(name.to_string(), 1)], Rat::ONE) }
    }
    pub fn terms(&self) -> impl Iterator<Item = (&Mono, &Rat)> {
        self.terms.iter()
    }
    pub fn as_constant(&self) -> Option<Rat> {
        match self.terms.len() {
            0 => Some(Rat::ZERO),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }
    pub fn is_zero(&self) -> bool {
        self.terms.is_empty()
    }
    pub fn add(&self, o: &Poly) -> Poly {
        if o.terms.len() > 8 && self.terms.len() > 8 {
            // Two long polynomials: one merge instead of an insertion per term.
            return Poly { terms: self.terms.iter().chain(o.terms.iter()).map(|(m, c)| (m.clone(), *c)).collect() };
        }
        let (mut terms, other) = if self.terms.len() >= o.terms.len() { (self.terms.clone(), &o.terms) } else { (o.terms.clone(), &self.terms) };
        for (m, c) in other.iter() {
            terms.add_term(m, *c);
        }
        Poly { terms }
    }
    pub fn neg(&self) -> Poly {
        Poly { terms: self.terms.map_coefficients(Rat::neg) }
    }
    pub fn sub(&self, o: &Poly) -> Poly {
        self.add(&o.neg())
    }
    pub fn scale(&self, k: Rat) -> Poly {
        if k.is_zero() {
            return Poly::default();
        }
        Poly { terms: self.terms.map_coefficients(|c| c.mul(k)) }
    }
    pub fn mul(&self, o: &Poly) -> Poly {
        // One map, updated in place: linear in the number of term pairs.
        let mut terms: Vec<(Mono, Rat)> = Vec::with_capacity(self.terms.len() * o.terms.len());
        for (m1, c1) in self.terms.iter() {
            for (m2, c2) in o.terms.iter() {
                terms.push((mono_mul(m1, m2), c1.mul(*c2)));
            }
        }
        Poly { terms: terms.into_iter().collect() }
    }
    pub fn pow(&self, e: u32) -> Poly {
        let mut out = Poly::int(1);
        for _ in 0..e {
            out = out.mul(self);
        }
        out
    }
    pub fn vars(&self) -> BTreeSet<String> {
        self.terms.keys().flat_map(|m| m.iter().map(|(v, _)| v.clone())).collect()
    }
    pub fn degree_in(&self, var: &str) -> u32 {
        self.terms.keys().map(|m| m.iter().find(|(v, _)| v == var).map_or(0, |(_, e)| *e)).max().unwrap_or(0)
    }
    /// Coefficients of `var`^k, k = 0..=degree, each a polynomial in the other variables.
    pub fn coefficients_in(&self, var: &str) -> Vec<Poly> {
        let d = self.degree_in(var) as usize;
        let mut out = vec![Poly::default(); d + 1];
        for (m, c) in self.terms.iter() {
            let e = m.iter().find(|(v, _)| v == var).map_or(0, |(_, e)| *e) as usize;
            let rest: Mono = m.iter().filter(|(v, _)| v != var).cloned().collect();
            out[e].terms.add_term(&rest, *c);
        }
        out
    }
    /// Replaces `var` by `p`.
    pub fn subst(&self, var: &str, p: &Poly) -> Poly {
        let coeffs = self.coefficients_in(var);
        let mut out = Poly::default();
        let mut power = Poly::int(1);
        for c in coeffs {
            out = out.add(&c.mul(&power));
            power = power.mul(p);
        }
        out
    }
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<f64>) -> Result<f64, String> {
        // Sum integer numerators over a common denominator, divide once: exact for integer
        // arguments while the numbers stay below 2^53.
        let Some(d) = common_denominator(self.terms.values()) else {
            // Denominators too large for one common denominator: term by term.
            let mut total = 0.0;
            for (m, c) in self.terms.iter() {
                let mut t = c.to_f64();
                for (v, e) in m {
                    t *= env(v).ok_or_else(|| v.clone())?.powi((*e).min(i32::MAX as u32) as i32);
                }
                total += t;
            }
            return Ok(total);
        };
        let mut total = 0.0;
        for (m, c) in self.terms.iter() {
            // d is a multiple of every denominator: the numerator over d is num * (d / den).
            // (Integer coefficients, the common case, skip the 128-bit division.)
            let n = if d == 1 { Some(c.num()) } else { c.num().checked_mul(d / c.den()) };
            let mut t = match n {
                Some(n) => i64::try_from(n).map_or(n as f64, |n| n as f64),
                None => c.to_f64() * d as f64,
            };
            for (v, e) in m {
                let x = env(v).ok_or_else(|| v.clone())?;
                t *= x.powi((*e).min(i32::MAX as u32) as i32);
            }
            total += t;
        }
        Ok(if d == 1 { total } else { total / d as f64 })
    }
    /// True when every coefficient is an integer.
    pub fn has_integer_coefficients(&self) -> bool {
        self.terms.values().all(|c| c.is_int())
    }
}

/// The least common multiple of the denominators, when it fits in an i128.
fn common_denominator<'a>(coefficients: impl Iterator<Item = &'a Rat>) -> Option<i128> {
    let mut d: i128 = 1;
    for c in coefficients {
        if c.den() == 1 || (d % c.den() == 0) {
            continue;
        }
        d = (d / gcd(d, c.den()).max(1)).checked_mul(c.den())?;
    }
    Some(d)
}

/// Sum of i^k for i = 1..=x, as a polynomial in x (Faulhaber), for k <= 10.
fn faulhaber(k: u32, x: &Poly) -> Poly {
    // Coefficients of S_k(x) = sum_{i=1}^{x} i^k, from the Bernoulli-number formula,
    // computed exactly: S_k(x) = 1/(k+1) sum_{j=0}^{k} C(k+1, j) B_j x^{k+1-j}, with B_1 = +1/2.
    let bern = bernoulli_plus(k as usize);
    let mut out = Poly::default();
    let mut binom: i128 = 1; // C(k+1, j)
    for (j, b) in bern.iter().enumerate().take(k as usize + 1) {
        if j > 0 {
            binom = binom * (k as i128 + 2 - j as i128) / j as i128;
        }
        let coeff = Rat::new(binom, k as i128 + 1).mul(*b);
        out = out.add(&x.pow(k + 1 - j as u32).scale(coeff));
    }
    out
}

/// Bernoulli numbers B_0..=B_n with B_1 = +1/2.
fn bernoulli_plus(n: usize) -> Vec<Rat> {
    let mut b = vec![Rat::ZERO; n + 1];
    b[0] = Rat::ONE;
    for m in 1..=n {
        // sum_{j=0}^{m} C(m+1, j) B_j = 0 (with B_1 = -1/2), then flip B_1.
        let mut s = Rat::ZERO;
        let mut binom: i128 = 1;
        for (j, bj) in b.iter().enumerate().take(m) {
            if j > 0 {
                binom = binom * (m as i128 + 2 - j as i128) / j as i128;
            }
            s = s.add(Rat::int(binom).mul(*bj));
        }
        b[m] = s.neg().mul(Rat::new(1, m as i128 + 1));
    }
    if n >= 1 {
        b[1] = Rat::new(1, 2);
    }
    b
}

// ---- Expressions ------------------------------------------------------------------------------

/// A symbolic integer-valued count.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Poly(Poly),
    Add(Vec<Expr>),
    Mul(Vec<Expr>),
    FloorDiv(Arc<Expr>, Arc<Expr>),
    CeilDiv(Arc<Expr>, Arc<Expr>),
    Mod(Arc<Expr>, Arc<Expr>),
    Min(Arc<Expr>, Arc<Expr>),
    Max(Arc<Expr>, Arc<Expr>),
    /// `then` when `cond` > 0, else `otherwise`.
    IfPos { cond: Arc<Expr>, then: Arc<Expr>, otherwise: Arc<Expr> },
    /// sum of `body` for `var` from `lo` to `hi` inclusive (0 when hi < lo).
    Sum { var: String, lo: Arc<Expr>, hi: Arc<Expr>, body: Arc<Expr> },
    /// Number of terms start, start*factor, start*factor^2, ... that are < bound (factor >= 2).
    LogCount { start: Arc<Expr>, bound: Arc<Expr>, factor: i64 },
}

/// A product of factors in one canonical form: nested products flattened and every polynomial
/// factor multiplied into one, which leads (`-rank*floor(n/size)*-1` was printed for what reads
/// back as `rank*floor(n/size)`: printing was not a fixed point).
fn product(factors: Vec<Expr>) -> Expr {
    let mut poly = Poly::int(1);
    let mut rest = Vec::new();
    let mut stack = factors;
    stack.reverse();
    while let Some(f) = stack.pop() {
        match f {
            Expr::Poly(q) => poly = poly.mul(&q),
            Expr::Mul(v) => stack.extend(v.into_iter().rev()),
            other => rest.push(other),
        }
    }
    if poly.is_zero() {
        return Expr::int(0);
    }
    let lead = Expr::Poly(poly);
    if rest.is_empty() {
        return lead;
    }
    if lead.is_one() {
        return if rest.len() == 1 { rest.remove(0) } else { Expr::Mul(rest) };
    }
    // A constant times a conditional goes into it (summation still sees the condition).
    if lead.as_constant().is_some() && matches!(rest[0], Expr::IfPos { .. }) {
        let first = lead.mul(rest.remove(0));
        if rest.is_empty() {
            return first;
        }
        rest.insert(0, first);
        return Expr::Mul(rest);
    }
    rest.insert(0, lead);
    Expr::Mul(rest)
}

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("unbound parameter {0}")]
    Unbound(String),
    #[error("division by zero in {0}")]
    DivByZero(String),
    #[error("summation over {0} has too many terms to enumerate")]
    TooLarge(String),
}

const MAX_ENUMERATION: f64 = 5e7;
/// Terms enumerated for one outermost sum, nested sums included (seconds of work).
const MAX_NESTED_ENUMERATION: f64 = 5e7;

thread_local! {
    /// (depth of explicit sums being enumerated, terms left for the outermost one)
    static SUM_NEST: std::cell::Cell<(usize, f64)> = const { std::cell::Cell::new((0, 0.0)) };
}

/// Counts the terms an evaluation enumerates across nested sums (left on drop, errors included).
struct SumNest;

impl SumNest {
    fn enter() -> SumNest {
        SUM_NEST.with(|c| {
            let (depth, left) = c.get();
            c.set((depth + 1, if depth == 0 { MAX_NESTED_ENUMERATION } else { left }));
        });
        SumNest
    }
    /// Takes `n` terms from the budget; false when it is spent.
    fn spend(n: f64) -> bool {
        SUM_NEST.with(|c| {
            let (depth, left) = c.get();
            c.set((depth, left - n));
            left - n >= 0.0
        })
    }
}

impl Drop for SumNest {
    fn drop(&mut self) {
        SUM_NEST.with(|c| {
            let (depth, left) = c.get();
            c.set((depth.saturating_sub(1), left));
        });
    }
}

impl Expr {
    pub fn int(n: i128) -> Expr {
        Expr::Poly(Poly::int(n))
    }
    pub fn rat(r: Rat) -> Expr {
        Expr::Poly(Poly::constant(r))
    }
    pub fn var(name: &str) -> Expr {
        Expr::Poly(Poly::var(name))
    }
    pub fn as_poly(&self) -> Option<&Poly> {
        match self {
            Expr::Poly(p) => Some(p),
            _ => None,
        }
    }
    pub fn as_constant(&self) -> Option<Rat> {
        self.as_poly().and_then(|p| p.as_constant())
    }
    pub fn is_zero(&self) -> bool {
        self.as_constant() == Some(Rat::ZERO)
    }
    pub fn is_one(&self) -> bool {
        self.as_constant() == Some(Rat::ONE)
    }

    pub fn add(self, o: Expr) -> Expr {
        match (self, o) {
            (Expr::Poly(a), Expr::Poly(b)) => Expr::Poly(a.add(&b)),
            (a, b) if a.is_zero() => b,
            (a, b) if b.is_zero() => a,
            (Expr::Add(mut v), Expr::Poly(b)) => {
                // Keep one polynomial term per sum so constants cancel.
                match v.iter_mut().find_map(|t| if let Expr::Poly(p) = t { Some(p) } else { None }) {
                    Some(p) => *p = p.add(&b),
                    None => v.push(Expr::Poly(b)),
                }
                v.retain(|t| !t.is_zero());
                match v.len() {
                    0 => Expr::int(0),
                    1 => v.pop().expect("one term"),
                    _ => Expr::Add(v),
                }
            }
            (Expr::Poly(a), Expr::Add(v)) => Expr::Add(v).add(Expr::Poly(a)),
            (Expr::Add(mut v), b) => {
                v.push(b);
                Expr::Add(v)
            }
            (a, b) => Expr::Add(vec![a, b]),
        }
    }
    pub fn sub(self, o: Expr) -> Expr {
        self.add(o.neg())
    }
    pub fn neg(self) -> Expr {
        self.mul(Expr::int(-1))
    }
    pub fn mul(self, o: Expr) -> Expr {
        match (self, o) {
            (Expr::Poly(a), Expr::Poly(b)) => Expr::Poly(a.mul(&b)),
            (a, _) if a.is_zero() => Expr::int(0),
            (_, b) if b.is_zero() => Expr::int(0),
            (a, b) if a.is_one() => b,
            (a, b) if b.is_one() => a,
            // Distribute a constant over a conditional so summation still sees the condition.
            (Expr::Poly(k), Expr::IfPos { cond, then, otherwise })
            | (Expr::IfPos { cond, then, otherwise }, Expr::Poly(k))
                if k.as_constant().is_some() =>
            {
                Expr::ifpos(Arc::unwrap_or_clone(cond), Expr::Poly(k.clone()).mul(Arc::unwrap_or_clone(then)), Expr::Poly(k).mul(Arc::unwrap_or_clone(otherwise)))
            }
            // A constant goes into a product's first factor, as reading the printed product
            // left to right puts it there: printing stays a fixed point.
            (Expr::Poly(k), Expr::Mul(mut v)) | (Expr::Mul(mut v), Expr::Poly(k)) if k.as_constant().is_some() && !v.is_empty() => {
                let first = v.remove(0);
                let mut out = Expr::Poly(k).mul(first);
                for x in v {
                    out = out.mul(x);
                }
                out
            }
            (a, b) => product(vec![a, b]),
        }
    }
    pub fn floor_div(a: Expr, b: Expr) -> Expr {
        if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
            if !y.is_zero() {
                return Expr::int(x.mul(y.recip()).floor());
            }
        }
        if b.is_one() {
            return a;
        }
        Expr::FloorDiv(Arc::new(a), Arc::new(b))
    }
    pub fn ceil_div(a: Expr, b: Expr) -> Expr {
        if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
            if !y.is_zero() {
                return Expr::int(-(x.neg().mul(y.recip()).floor()));
            }
        }
        if b.is_one() {
            return a;
        }
        Expr::CeilDiv(Arc::new(a), Arc::new(b))
    }
    pub fn modulo(a: Expr, b: Expr) -> Expr {
        if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
            if x.is_int() && y.is_int() && y.num() != 0 {
                return Expr::int(x.num() % y.num());
            }
        }
        Expr::Mod(Arc::new(a), Arc::new(b))
    }
    pub fn min(a: Expr, b: Expr) -> Expr {
        if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
            return Expr::rat(x.min(y));
        }
        if a == b {
            return a;
        }
        Expr::Min(Arc::new(a), Arc::new(b))
    }
    pub fn max(a: Expr, b: Expr) -> Expr {
        if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
            return Expr::rat(x.max(y));
        }
        if a == b {
            return a;
        }
        Expr::Max(Arc::new(a), Arc::new(b))
    }
    pub fn ifpos(cond: Expr, then: Expr, otherwise: Expr) -> Expr {
        if let Some(c) = cond.as_constant() {
            return if c > Rat::ZERO { then } else { otherwise };
        }
        if then == otherwise {
            return then;
        }
        // ifpos(ifpos(c, 1, 0), 1, 0) is ifpos(c, 1, 0): indicators of indicators collapse.
        if then.is_one() && otherwise.is_zero() {
            if let Expr::IfPos { then: t, otherwise: o, .. } = &cond {
                if t.is_one() && o.is_zero() {
                    return cond;
                }
            }
        }
        Expr::IfPos { cond: Arc::new(cond), then: Arc::new(then), otherwise: Arc::new(otherwise) }
    }
    /// max(0, e) written as a conditional so summation can split on it.
    pub fn clamp0(e: Expr) -> Expr {
        match e.as_constant() {
            Some(c) => Expr::rat(c.max(Rat::ZERO)),
            None => Expr::ifpos(e.clone(), e, Expr::int(0)),
        }
    }

    /// Free variables.
    pub fn vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect_vars(&mut out);
        out
    }
    fn collect_vars(&self, out: &mut BTreeSet<String>) {
        match self {
            Expr::Poly(p) => out.extend(p.vars()),
            Expr::Add(v) | Expr::Mul(v) => v.iter().for_each(|e| e.collect_vars(out)),
            Expr::FloorDiv(a, b) | Expr::CeilDiv(a, b) | Expr::Mod(a, b) | Expr::Min(a, b) | Expr::Max(a, b) => {
                a.collect_vars(out);
                b.collect_vars(out);
            }
            Expr::IfPos { cond, then, otherwise } => {
                cond.collect_vars(out);
                then.collect_vars(out);
                otherwise.collect_vars(out);
            }
            Expr::Sum { var, lo, hi, body } => {
                lo.collect_vars(out);
                hi.collect_vars(out);
                let mut inner = BTreeSet::new();
                body.collect_vars(&mut inner);
                inner.remove(var);
                out.extend(inner);
            }
            Expr::LogCount { start, bound, .. } => {
                start.collect_vars(out);
                bound.collect_vars(out);
            }
        }
    }
    pub fn mentions(&self, var: &str) -> bool {
        self.vars().contains(var)
    }

    /// The coefficient `c` of `var` when the formula is `c*var + r` with neither `c` nor `r`
    /// mentioning `var`; None when it is not linear in `var`. Subterms that are not
    /// polynomials (`floor(n/size)`, `min(..)`) are factors like any other as long as they do
    /// not mention `var`: `(i - 1)*(floor(n/p) + 2) + j` is linear in `j` with coefficient 1,
    /// which subtracting the formula at `j` from the one at `j + 1` does not show (the terms
    /// without `j` are not polynomials and do not cancel).
    pub fn linear_coefficient(&self, var: &str) -> Option<Expr> {
        if !self.mentions(var) {
            return Some(Expr::int(0));
        }
        match self {
            Expr::Poly(p) => {
                let cs = p.coefficients_in(var);
                (cs.len() == 2 && !cs[1].vars().contains(var)).then(|| Expr::Poly(cs[1].clone()))
            }
            Expr::Add(v) => v.iter().try_fold(Expr::int(0), |acc, t| Some(acc.add(t.linear_coefficient(var)?))),
            Expr::Mul(v) => {
                let mut with = v.iter().filter(|f| f.mentions(var));
                let (Some(f), None) = (with.next(), with.next()) else { return None };
                let rest = v.iter().filter(|g| !g.mentions(var)).fold(Expr::int(1), |acc, g| acc.mul(g.clone()));
                Some(rest.mul(f.linear_coefficient(var)?))
            }
            _ => None,
        }
    }

    /// Replaces variable `var` by `by`.
    pub fn subst(&self, var: &str, by: &Expr) -> Expr {
        let s = |e: &Expr| e.subst(var, by);
        match self {
            Expr::Poly(p) => {
                if !p.vars().contains(var) {
                    return self.clone();
                }
                if let Expr::Poly(q) = by {
                    return Expr::Poly(p.subst(var, q));
                }
                // Non-polynomial replacement: rebuild the polynomial term by term.
                let coeffs = p.coefficients_in(var);
                let mut out = Expr::int(0);
                let mut power = Expr::int(1);
                for c in coeffs {
                    out = out.add(Expr::Poly(c).mul(power.clone()));
                    power = power.mul(by.clone());
                }
                out
            }
            Expr::Add(v) => v.iter().map(s).fold(Expr::int(0), Expr::add),
            Expr::Mul(v) => v.iter().map(s).fold(Expr::int(1), Expr::mul),
            Expr::FloorDiv(a, b) => Expr::floor_div(s(a), s(b)),
            Expr::CeilDiv(a, b) => Expr::ceil_div(s(a), s(b)),
            Expr::Mod(a, b) => Expr::modulo(s(a), s(b)),
            Expr::Min(a, b) => Expr::min(s(a), s(b)),
            Expr::Max(a, b) => Expr::max(s(a), s(b)),
            Expr::IfPos { cond, then, otherwise } => Expr::ifpos(s(cond), s(then), s(otherwise)),
            Expr::Sum { var: v, lo, hi, body } => {
                let body = if v == var { (**body).clone() } else { body.subst(var, by) };
                Expr::Sum { var: v.clone(), lo: Arc::new(s(lo)), hi: Arc::new(s(hi)), body: Arc::new(body) }
            }
            Expr::LogCount { start, bound, factor } => {
                Expr::LogCount { start: Arc::new(s(start)), bound: Arc::new(s(bound)), factor: *factor }
            }
        }
    }

    /// Binds the variables that `env` knows; leaves the others symbolic.
    pub fn bind(&self, env: &HashMap<String, Expr>) -> Expr {
        let mut e = self.clone();
        for v in self.vars() {
            if let Some(x) = env.get(&v) {
                e = e.subst(&v, x);
            }
        }
        e
    }

    /// Numeric value with every variable bound by `env`.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<f64>) -> Result<f64, EvalError> {
        let ev = |e: &Expr| e.eval(env);
        Ok(match self {
            Expr::Poly(p) => p.eval(env).map_err(EvalError::Unbound)?,
            Expr::Add(v) => {
                let mut t = 0.0;
                for e in v {
                    t += ev(e)?;
                }
                t
            }
            Expr::Mul(v) => {
                let mut t = 1.0;
                for e in v {
                    t *= ev(e)?;
                }
                t
            }
            Expr::FloorDiv(a, b) | Expr::CeilDiv(a, b) | Expr::Mod(a, b) => {
                let (x, y) = (ev(a)?.round(), ev(b)?.round());
                if y == 0.0 {
                    return Err(EvalError::DivByZero(self.to_string()));
                }
                match self {
                    Expr::FloorDiv(..) => (x / y).floor(),
                    Expr::CeilDiv(..) => (x / y).ceil(),
                    _ => x % y, // C semantics: the sign follows the dividend
                }
            }
            Expr::Min(a, b) => ev(a)?.min(ev(b)?),
            Expr::Max(a, b) => ev(a)?.max(ev(b)?),
            Expr::IfPos { cond, then, otherwise } => {
                if ev(cond)? > 0.0 {
                    ev(then)?
                } else {
                    ev(otherwise)?
                }
            }
            Expr::Sum { var, lo, hi, body } => {
                let (lo, hi) = (ev(lo)?.round(), ev(hi)?.round());
                if hi < lo || lo.is_nan() || hi.is_nan() {
                    return Ok(0.0);
                }
                let n = hi - lo + 1.0;
                // Nested sums multiply: one budget of MAX_NESTED_ENUMERATION terms for the
                // outermost sum and everything inside it.
                let _nest = SumNest::enter();
                if n > MAX_ENUMERATION || !SumNest::spend(n) {
                    return Err(EvalError::TooLarge(var.clone()));
                }
                let mut total = 0.0;
                for k in 0..n as u64 {
                    let i = lo + k as f64;
                    let inner = |name: &str| if name == var { Some(i) } else { env(name) };
                    total += body.eval(&inner)?;
                }
                total
            }
            Expr::LogCount { start, bound, factor } => {
                let (mut x, b) = (ev(start)?, ev(bound)?);
                let mut n = 0.0;
                if x <= 0.0 || *factor < 2 || x.is_nan() {
                    return Err(EvalError::DivByZero(self.to_string()));
                }
                while x < b {
                    x *= *factor as f64;
                    n += 1.0;
                }
                n
            }
        })
    }

    /// Value when the expression has no free variables.
    pub fn value(&self) -> Option<f64> {
        self.eval(&|_| None).ok()
    }

    /// Evaluates with a map of bindings.
    pub fn eval_map(&self, env: &HashMap<String, f64>) -> Result<f64, EvalError> {
        self.eval(&|v| env.get(v).copied())
    }
}

// ---- Memo keys --------------------------------------------------------------------------------

/// Variables that take another value on every rank: the rank and its Cartesian coordinates.
pub fn per_rank_var(v: &str) -> bool {
    v == "rank" || v.starts_with("cart_coord")
}

/// A memo key for a set of formulas: two environments with equal keys give every formula of the
/// set the same value. The key holds the values of the variables that are the same on every
/// rank, and for the parts that read a [`per_rank_var`] only what the formula uses of them: the
/// side of a condition (`ifpos(n % d - cart_coord0, 1, 0)`, a decomposition's remainder) or the
/// value of the smallest term around them. Ranks of a decomposition that differ only by their
/// coordinates then share one key where raw coordinates gave each its own (65,536 ranks of
/// stencil3d_torus costed every block 65,536 times).
#[derive(Debug, Clone, Default)]
pub struct FormulaKey {
    shared: Vec<String>,
    probes: Vec<Probe>,
}

#[derive(Debug, Clone, PartialEq)]
enum Probe {
    /// Whether the expression is positive.
    Sign(Expr),
    /// The expression's value.
    Value(Expr),
}

impl FormulaKey {
    pub fn new<'a>(exprs: impl IntoIterator<Item = &'a Expr>) -> FormulaKey {
        let mut shared = BTreeSet::new();
        let mut probes = Vec::new();
        for e in exprs {
            let vars = e.vars();
            shared.extend(vars.iter().filter(|v| !per_rank_var(v)).cloned());
            if vars.iter().any(|v| per_rank_var(v)) {
                collect_probes(e, &mut probes);
            }
        }
        FormulaKey { shared: shared.into_iter().collect(), probes }
    }

    /// The key of `env` (an unbound variable or a formula that fails is NaN).
    pub fn key(&self, env: &HashMap<String, f64>) -> Vec<u64> {
        let mut k: Vec<u64> = self.shared.iter().map(|v| env.get(v).copied().unwrap_or(f64::NAN).to_bits()).collect();
        k.extend(self.probes.iter().map(|p| p.value(env)));
        k
    }
}

/// Many [`FormulaKey`]s over one environment at a time (a key per block), their terms shared:
/// each variable and probe that several keys hold is looked up or evaluated once per
/// environment (`KeyTerms`).
#[derive(Debug, Clone, Default)]
pub struct FormulaKeys {
    vars: Vec<String>,
    probes: Vec<Probe>,
    /// Per key: indices into `vars`, then into `probes`.
    keys: Vec<(Vec<usize>, Vec<usize>)>,
}

/// The terms of [`FormulaKeys`] already computed in one environment.
#[derive(Debug, Clone, Default)]
pub struct KeyTerms {
    vars: Vec<Option<u64>>,
    probes: Vec<Option<u64>>,
}

impl FormulaKeys {
    pub fn new(keys: Vec<FormulaKey>) -> FormulaKeys {
        let mut out = FormulaKeys::default();
        for k in keys {
            let v = k.shared.into_iter().map(|x| index_of(&mut out.vars, x)).collect();
            let p = k.probes.into_iter().map(|x| index_of(&mut out.probes, x)).collect();
            out.keys.push((v, p));
        }
        out
    }

    /// Empty terms for a new environment.
    pub fn terms(&self) -> KeyTerms {
        KeyTerms { vars: vec![None; self.vars.len()], probes: vec![None; self.probes.len()] }
    }

    /// Key `i` in `env`, whose terms computed so far are in `terms` (the same as
    /// `FormulaKey::key` of the key given at `i`).
    pub fn key(&self, i: usize, env: &HashMap<String, f64>, terms: &mut KeyTerms) -> Vec<u64> {
        let (vs, ps) = &self.keys[i];
        let mut k = Vec::with_capacity(vs.len() + ps.len());
        for &v in vs {
            k.push(*terms.vars[v].get_or_insert_with(|| env.get(&self.vars[v]).copied().unwrap_or(f64::NAN).to_bits()));
        }
        for &p in ps {
            k.push(*terms.probes[p].get_or_insert_with(|| self.probes[p].value(env)));
        }
        k
    }
}

fn index_of<T: PartialEq>(v: &mut Vec<T>, x: T) -> usize {
    match v.iter().position(|y| *y == x) {
        Some(i) => i,
        None => {
            v.push(x);
            v.len() - 1
        }
    }
}

impl Probe {
    /// The probe's part of a key in `env` (a formula that fails is NaN).
    fn value(&self, env: &HashMap<String, f64>) -> u64 {
        match self {
            Probe::Sign(e) => e.eval_map(env).map(|x| if x > 0.0 { 1.0 } else { 0.0 }),
            Probe::Value(e) => e.eval_map(env),
        }
        .unwrap_or(f64::NAN)
        .to_bits()
    }
}

/// The probes of an expression that reads a per-rank variable: sums, products and the binary
/// functions (division, modulo, min, max) look into their operands, a condition keeps its side
/// and looks into both branches, anything else (a polynomial, a sum over a range) keeps its
/// value. (A decomposition's block size is a min of products whose only per-rank part is the
/// side of a remainder's condition: its value probed whole cost stencil3d_torus 35 us per rank
/// and key.)
fn collect_probes(e: &Expr, out: &mut Vec<Probe>) {
    let mut push = |p: Probe| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    let per_rank = |e: &Expr| e.vars().iter().any(|v| per_rank_var(v));
    match e {
        Expr::Add(v) | Expr::Mul(v) => {
            for c in v.iter().filter(|c| per_rank(c)) {
                collect_probes(c, out);
            }
        }
        Expr::FloorDiv(a, b) | Expr::CeilDiv(a, b) | Expr::Mod(a, b) | Expr::Min(a, b) | Expr::Max(a, b) => {
            for c in [a, b] {
                if per_rank(c) {
                    collect_probes(c, out);
                }
            }
        }
        Expr::IfPos { cond, then, otherwise } => {
            if per_rank(cond) {
                push(Probe::Sign((**cond).clone()));
            }
            for c in [then, otherwise] {
                if per_rank(c) {
                    collect_probes(c, out);
                }
            }
        }
        other => push(Probe::Value(other.clone())),
    }
}

// ---- Symbolic summation -----------------------------------------------------------------------

/// sum_{var = lo}^{hi} body, in closed form where the body is a polynomial in `var` or is split by
/// conditions affine in `var` with a unit coefficient; otherwise an explicit [`Expr::Sum`]
/// (still exact, evaluated by enumeration once parameters are bound).
pub fn sum(var: &str, lo: &Expr, hi: &Expr, body: &Expr) -> Expr {
    sum_depth(var, lo, hi, body, 0)
}

const MAX_SPLIT_DEPTH: usize = 6;

fn sum_depth(var: &str, lo: &Expr, hi: &Expr, body: &Expr, depth: usize) -> Expr {
    let count = || Expr::clamp0(hi.clone().sub(lo.clone()).add(Expr::int(1)));
    if !body.mentions(var) {
        return count().mul(body.clone());
    }
    if depth > MAX_SPLIT_DEPTH {
        return explicit_sum(var, lo, hi, body);
    }
    match body {
        Expr::Poly(p) => {
            // Piecewise bounds (min/max) are split first so Faulhaber sees polynomials.
            if let Some(e) = split_bound(var, lo, hi, body, depth) {
                return e;
            }
            let (Some(l), Some(h)) = (lo.as_poly(), hi.as_poly()) else {
                return explicit_sum(var, lo, hi, body);
            };
            if p.degree_in(var) > 10 {
                return explicit_sum(var, lo, hi, body);
            }
            // sum_{v=l}^{h} p(v) = F(h) - F(l-1), F(x) = sum_k c_k S_k(x) (+ c_0 x).
            let coeffs = p.coefficients_in(var);
            let f = |x: &Poly| {
                let mut out = Poly::default();
                for (k, c) in coeffs.iter().enumerate() {
                    out = out.add(&c.mul(&faulhaber(k as u32, x)));
                }
                out
            };
            let closed = f(h).sub(&f(&l.sub(&Poly::int(1))));
            Expr::ifpos(Expr::Poly(h.sub(l).add(&Poly::int(1))), Expr::Poly(closed), Expr::int(0))
        }
        Expr::IfPos { cond, then, otherwise } => {
            let Some(c) = cond.as_poly() else { return explicit_sum(var, lo, hi, body) };
            if c.degree_in(var) != 1 {
                return explicit_sum(var, lo, hi, body);
            }
            let co = c.coefficients_in(var);
            let (a, rest) = (&co[1], &co[0]);
            let Some(a) = a.as_constant() else { return explicit_sum(var, lo, hi, body) };
            // cond = a*v + rest > 0. With a = +-1 and integer coefficients the split point is exact.
            if !(a == Rat::ONE || a == Rat::int(-1)) || !rest.has_integer_coefficients() {
                return explicit_sum(var, lo, hi, body);
            }
            if a == Rat::ONE {
                // v + rest > 0  <=>  v >= 1 - rest
                let t = Expr::Poly(Poly::int(1).sub(rest));
                let pos = sum_depth(var, &Expr::max(lo.clone(), t.clone()), hi, then, depth + 1);
                let neg = sum_depth(var, lo, &Expr::min(hi.clone(), t.sub(Expr::int(1))), otherwise, depth + 1);
                pos.add(neg)
            } else {
                // -v + rest > 0  <=>  v <= rest - 1
                let t = Expr::Poly(rest.sub(&Poly::int(1)));
                let pos = sum_depth(var, lo, &Expr::min(hi.clone(), t.clone()), then, depth + 1);
                let neg = sum_depth(var, &Expr::max(lo.clone(), t.add(Expr::int(1))), hi, otherwise, depth + 1);
                pos.add(neg)
            }
        }
        Expr::Add(terms) => {
            terms.iter().map(|t| sum_depth(var, lo, hi, t, depth + 1)).fold(Expr::int(0), Expr::add)
        }
        Expr::Mul(factors) => {
            // Pull out factors that do not mention var; one conditional factor may be split on.
            let (outside, inside): (Vec<&Expr>, Vec<&Expr>) = factors.iter().partition(|f| !f.mentions(var));
            let k = outside.into_iter().cloned().fold(Expr::int(1), Expr::mul);
            if inside.len() == 1 {
                return k.mul(sum_depth(var, lo, hi, inside[0], depth + 1));
            }
            // Distribute over the first conditional factor.
            if let Some(pos) = inside.iter().position(|f| matches!(f, Expr::IfPos { .. })) {
                if let Expr::IfPos { cond, then, otherwise } = inside[pos] {
                    let others: Expr =
                        inside.iter().enumerate().filter(|(i, _)| *i != pos).map(|(_, f)| (*f).clone()).fold(Expr::int(1), Expr::mul);
                    let split = Expr::IfPos {
                        cond: cond.clone(),
                        then: Arc::new((**then).clone().mul(others.clone())),
                        otherwise: Arc::new((**otherwise).clone().mul(others)),
                    };
                    return k.mul(sum_depth(var, lo, hi, &split, depth + 1));
                }
            }
            k.mul(explicit_sum(var, lo, hi, &inside.into_iter().cloned().fold(Expr::int(1), Expr::mul)))
        }
        _ => explicit_sum(var, lo, hi, body),
    }
}

/// Splits a sum whose bound is a min/max (or a conditional) into sums with simpler bounds.
fn split_bound(var: &str, lo: &Expr, hi: &Expr, body: &Expr, depth: usize) -> Option<Expr> {
    let as_if = |e: &Expr| -> Option<(Expr, Expr, Expr)> {
        match e {
            // min(a, b) = b when a - b > 0, else a
            Expr::Min(a, b) => Some(((**a).clone().sub((**b).clone()), (**b).clone(), (**a).clone())),
            Expr::Max(a, b) => Some(((**a).clone().sub((**b).clone()), (**a).clone(), (**b).clone())),
            Expr::IfPos { cond, then, otherwise } => Some(((**cond).clone(), (**then).clone(), (**otherwise).clone())),
            _ => None,
        }
    };
    if let Some((c, x, y)) = as_if(hi) {
        return Some(Expr::ifpos(c, sum_depth(var, lo, &x, body, depth + 1), sum_depth(var, lo, &y, body, depth + 1)));
    }
    if let Some((c, x, y)) = as_if(lo) {
        return Some(Expr::ifpos(c, sum_depth(var, &x, hi, body, depth + 1), sum_depth(var, &y, hi, body, depth + 1)));
    }
    None
}

fn explicit_sum(var: &str, lo: &Expr, hi: &Expr, body: &Expr) -> Expr {
    Expr::Sum { var: var.to_string(), lo: Arc::new(lo.clone()), hi: Arc::new(hi.clone()), body: Arc::new(body.clone()) }
}

impl Expr {
    /// True when no explicit summation or logarithmic count remains (a closed form).
    pub fn is_closed_form(&self) -> bool {
        match self {
            Expr::Poly(_) => true,
            Expr::Sum { .. } | Expr::LogCount { .. } => false,
            Expr::Add(v) | Expr::Mul(v) => v.iter().all(|e| e.is_closed_form()),
            Expr::FloorDiv(a, b) | Expr::CeilDiv(a, b) | Expr::Mod(a, b) | Expr::Min(a, b) | Expr::Max(a, b) => {
                a.is_closed_form() && b.is_closed_form()
            }
            Expr::IfPos { cond, then, otherwise } => {
                cond.is_closed_form() && then.is_closed_form() && otherwise.is_closed_form()
            }
        }
    }
}

// ---- Text form --------------------------------------------------------------------------------

fn fmt_poly(p: &Poly, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if p.is_zero() {
        return f.write_str("0");
    }
    // Common denominator: print (integer polynomial)/d.
    let Some(d) = common_denominator(p.terms().map(|(_, c)| c)) else {
        // No common denominator fits: each term as c/d*vars (read back the same way).
        f.write_str("(")?;
        for (i, (m, c)) in p.terms().enumerate() {
            let sign = if i == 0 { "" } else { " + " };
            let vars: String = m.iter().map(|(v, e)| if *e == 1 { format!("*{v}") } else { format!("*{v}^{e}") }).collect();
            if c.num() < 0 {
                write!(f, "{sign}-({}/{}){vars}", -c.num(), c.den())?;
            } else {
                write!(f, "{sign}({}/{}){vars}", c.num(), c.den())?;
            }
        }
        return f.write_str(")");
    };
    let mut terms: Vec<(&Mono, i128)> = p.terms().map(|(m, c)| (m, c.mul(Rat::int(d)).num())).collect();
    terms.sort_by_key(|(m, _)| std::cmp::Reverse(m.iter().map(|(_, e)| u64::from(*e)).sum::<u64>()));
    let mut s = String::new();
    for (i, (m, c)) in terms.iter().enumerate() {
        let (sign, mag) = if *c < 0 { ("-", -c) } else { ("+", *c) };
        if i == 0 {
            if sign == "-" {
                s.push('-');
            }
        } else {
            s.push_str(&format!(" {sign} "));
        }
        let vars: Vec<String> =
            m.iter().map(|(v, e)| if *e == 1 { v.clone() } else { format!("{v}^{e}") }).collect();
        if vars.is_empty() {
            s.push_str(&mag.to_string());
        } else if mag == 1 {
            s.push_str(&vars.join("*"));
        } else {
            s.push_str(&format!("{mag}*{}", vars.join("*")));
        }
    }
    if d != 1 {
        write!(f, "({s})/{d}")
    } else if terms.len() > 1 {
        write!(f, "({s})")
    } else {
        f.write_str(&s)
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Poly(p) => fmt_poly(p, f),
            Expr::Add(v) => {
                f.write_str("(")?;
                for (i, e) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" + ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(")")
            }
            Expr::Mul(v) => {
                for (i, e) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str("*")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
            Expr::FloorDiv(a, b) => write!(f, "floor({a}/{b})"),
            Expr::CeilDiv(a, b) => write!(f, "ceil({a}/{b})"),
            Expr::Mod(a, b) => write!(f, "mod({a}, {b})"),
            Expr::Min(a, b) => write!(f, "min({a}, {b})"),
            Expr::Max(a, b) => write!(f, "max({a}, {b})"),
            Expr::IfPos { cond, then, otherwise } => write!(f, "ifpos({cond}, {then}, {otherwise})"),
            Expr::Sum { var, lo, hi, body } => write!(f, "sum({var}, {lo}, {hi}, {body})"),
            Expr::LogCount { start, bound, factor } => write!(f, "logcount({start}, {bound}, {factor})"),
        }
    }
}

/// A parse error in formula text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot read formula {text:?} at character {pos}: {what}")]
pub struct ParseError {
    pub text: String,
    pub pos: usize,
    pub what: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i128),
    Ident(String),
    Sym(char),
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(usize, Tok)>,
    i: usize,
    /// Nesting of parentheses, calls and unary minus (the parser recurses once per level).
    depth: usize,
}

/// Deepest nesting a formula may have.
const MAX_PARSE_DEPTH: usize = 256;
/// Stack of the thread that parses a deeply nested formula.
const PARSE_STACK_BYTES: usize = 64 << 20;
/// Largest exponent a formula may write.
const MAX_EXPONENT: i128 = 1024;
/// Most terms a polynomial written as a product may expand to.
const MAX_EXPANDED_TERMS: usize = 10_000;

impl Expr {
    /// Reads the text form written by `Display`.
    pub fn parse(text: &str) -> Result<Expr, ParseError> {
        // The parser recurses once per nesting level, with large frames in a debug build: a
        // deeply nested formula is parsed on a thread with a stack of its own.
        let mut depth = 0usize;
        let mut deepest = 0usize;
        for b in text.bytes() {
            match b {
                b'(' | b'-' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b')' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if deepest > 32 {
            let parsed = std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .stack_size(PARSE_STACK_BYTES)
                    .spawn_scoped(scope, || Expr::parse_here(text))
                    .ok()
                    .map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            });
            if let Some(r) = parsed {
                return r;
            }
        }
        Expr::parse_here(text)
    }

    fn parse_here(text: &str) -> Result<Expr, ParseError> {
        let mut toks = Vec::new();
        let b = text.as_bytes();
        let mut i = 0;
        let err = |pos: usize, what: &str| ParseError { text: text.to_string(), pos, what: what.to_string() };
        while i < b.len() {
            let c = b[i] as char;
            if c.is_ascii_whitespace() {
                i += 1;
            } else if c.is_ascii_digit() {
                let s = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let n = text[s..i].parse::<i128>().map_err(|_| err(s, "number too large"))?;
                toks.push((s, Tok::Num(n)));
            } else if c.is_ascii_alphabetic() || c == '_' {
                let s = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                    i += 1;
                }
                // A program variable named like one of the analysis's symbols ends in primes
                // (`size'`).
                while i < b.len() && b[i] == b'\'' {
                    i += 1;
                }
                toks.push((s, Tok::Ident(text[s..i].to_string())));
            } else if "+-*/^(),".contains(c) {
                toks.push((i, Tok::Sym(c)));
                i += 1;
            } else {
                return Err(err(i, &format!("unexpected character {c:?}")));
            }
        }
        let mut p = Parser { text, toks, i: 0, depth: 0 };
        let e = p.expr()?;
        if p.i != p.toks.len() {
            return Err(p.err("unexpected text after the formula"));
        }
        Ok(e.into_expr().map_err(|w| p.err(&w))?)
    }
}

/// Intermediate parse result: a division is kept until we know whether it sits inside floor/ceil.
enum PE {
    E(Expr),
    Div(Expr, Expr),
}

impl PE {
    fn into_expr(self) -> Result<Expr, String> {
        match self {
            PE::E(e) => Ok(e),
            PE::Div(a, b) => match b.as_constant() {
                Some(c) if !c.is_zero() => Ok(a.mul(Expr::rat(c.recip()))),
                _ => Err(format!("division by a non-constant ({b}) outside floor() or ceil()")),
            },
        }
    }
}

impl Parser<'_> {
    fn err(&self, what: &str) -> ParseError {
        let pos = self.toks.get(self.i).map_or(self.text.len(), |t| t.0);
        ParseError { text: self.text.to_string(), pos, what: what.to_string() }
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.1)
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Sym(c)) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: char) -> Result<(), ParseError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.err(&format!("expected {c:?}")))
        }
    }
    fn expr(&mut self) -> Result<PE, ParseError> {
        let mut acc = self.term()?;
        loop {
            if self.eat('+') {
                let r = self.term()?;
                acc = PE::E(self.fin(acc)?.add(self.fin(r)?));
            } else if self.eat('-') {
                let r = self.term()?;
                acc = PE::E(self.fin(acc)?.sub(self.fin(r)?));
            } else {
                return Ok(acc);
            }
        }
    }
    fn fin(&self, e: PE) -> Result<Expr, ParseError> {
        e.into_expr().map_err(|w| self.err(&w))
    }
    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_PARSE_DEPTH {
            return Err(self.err(&format!("formula nested deeper than {MAX_PARSE_DEPTH} levels")));
        }
        Ok(())
    }
    /// a * b, refused when the product of two polynomials would have too many terms.
    fn product(&self, a: Expr, b: Expr) -> Result<Expr, ParseError> {
        if let (Expr::Poly(x), Expr::Poly(y)) = (&a, &b) {
            if x.terms.len().saturating_mul(y.terms.len()) > MAX_EXPANDED_TERMS {
                return Err(self.err(&format!("the product expands to more than {MAX_EXPANDED_TERMS} terms")));
            }
        }
        Ok(a.mul(b))
    }
    fn term(&mut self) -> Result<PE, ParseError> {
        let mut acc = self.unary()?;
        loop {
            if self.eat('*') {
                let r = self.unary()?;
                acc = PE::E(self.product(self.fin(acc)?, self.fin(r)?)?);
            } else if self.eat('/') {
                let r = self.unary()?;
                acc = PE::Div(self.fin(acc)?, self.fin(r)?);
            } else {
                return Ok(acc);
            }
        }
    }
    fn unary(&mut self) -> Result<PE, ParseError> {
        if self.eat('-') {
            self.enter()?;
            let e = self.unary()?;
            self.depth -= 1;
            return Ok(PE::E(self.fin(e)?.neg()));
        }
        let base = self.atom()?;
        if self.eat('^') {
            let Some(Tok::Num(n)) = self.peek().cloned() else { return Err(self.err("expected an exponent")) };
            if n > MAX_EXPONENT {
                return Err(self.err(&format!("exponent {n} larger than {MAX_EXPONENT}")));
            }
            self.i += 1;
            let b = self.fin(base)?;
            let Expr::Poly(p) = b else { return Err(self.err("only polynomials take exponents")) };
            let mut out = Poly::int(1);
            for _ in 0..n {
                out = match self.product(Expr::Poly(out), Expr::Poly(p.clone()))? {
                    Expr::Poly(q) => q,
                    _ => return Err(self.err("only polynomials take exponents")),
                };
            }
            return Ok(PE::E(Expr::Poly(out)));
        }
        Ok(base)
    }
    fn args(&mut self) -> Result<Vec<PE>, ParseError> {
        self.expect('(')?;
        self.enter()?;
        let mut v = vec![self.expr()?];
        while self.eat(',') {
            v.push(self.expr()?);
        }
        self.expect(')')?;
        self.depth -= 1;
        Ok(v)
    }
    fn atom(&mut self) -> Result<PE, ParseError> {
        match self.peek().cloned() {
            Some(Tok::Num(n)) => {
                self.i += 1;
                Ok(PE::E(Expr::int(n)))
            }
            Some(Tok::Sym('(')) => {
                self.i += 1;
                self.enter()?;
                let e = self.expr()?;
                self.expect(')')?;
                self.depth -= 1;
                Ok(e)
            }
            Some(Tok::Ident(name)) => {
                self.i += 1;
                let is_call = self.peek() == Some(&Tok::Sym('('));
                if !is_call {
                    return Ok(PE::E(Expr::var(&name)));
                }
                let a = self.args()?;
                self.apply(&name, a)
            }
            _ => Err(self.err("expected a number, a name or '('")),
        }
    }

    /// A function applied to its arguments. Kept out of `atom`, which the parser recurses
    /// through: a small frame per nesting level (a debug build's frames are large).
    fn apply(&self, name: &str, mut a: Vec<PE>) -> Result<PE, ParseError> {
        let n = a.len();
        let want = |k: usize| if n == k { Ok(()) } else { Err(()) };
        let bad = |s: &Self| s.err(&format!("wrong number of arguments to {name}"));
        match name {
            "floor" | "ceil" => {
                want(1).map_err(|_| bad(self))?;
                let (x, y) = match a.pop().unwrap() {
                    PE::Div(x, y) => (x, y),
                    PE::E(e) => (e, Expr::int(1)),
                };
                Ok(PE::E(if name == "floor" { Expr::floor_div(x, y) } else { Expr::ceil_div(x, y) }))
            }
            "mod" | "min" | "max" => {
                want(2).map_err(|_| bad(self))?;
                let y = self.fin(a.pop().unwrap())?;
                let x = self.fin(a.pop().unwrap())?;
                Ok(PE::E(match name {
                    "mod" => Expr::modulo(x, y),
                    "min" => Expr::min(x, y),
                    _ => Expr::max(x, y),
                }))
            }
            "ifpos" => {
                want(3).map_err(|_| bad(self))?;
                let o = self.fin(a.pop().unwrap())?;
                let t = self.fin(a.pop().unwrap())?;
                let c = self.fin(a.pop().unwrap())?;
                Ok(PE::E(Expr::ifpos(c, t, o)))
            }
            "sum" => {
                want(4).map_err(|_| bad(self))?;
                let body = self.fin(a.pop().unwrap())?;
                let hi = self.fin(a.pop().unwrap())?;
                let lo = self.fin(a.pop().unwrap())?;
                let v = self.fin(a.pop().unwrap())?;
                let var = match v.as_poly().map(|p| p.vars()) {
                    Some(vs) if vs.len() == 1 => vs.into_iter().next().unwrap(),
                    _ => return Err(self.err("sum's first argument must be a variable")),
                };
                Ok(PE::E(explicit_sum(&var, &lo, &hi, &body)))
            }
            "logcount" => {
                want(3).map_err(|_| bad(self))?;
                let k = self.fin(a.pop().unwrap())?;
                let bound = self.fin(a.pop().unwrap())?;
                let start = self.fin(a.pop().unwrap())?;
                let factor = k
                    .as_constant()
                    .filter(|c| c.is_int() && c.num() >= 2)
                    .and_then(|c| i64::try_from(c.num()).ok())
                    .ok_or_else(|| self.err("logcount factor must be an integer from 2 to 2^63 - 1"))?;
                Ok(PE::E(Expr::LogCount { start: Arc::new(start), bound: Arc::new(bound), factor }))
            }
            _ => Err(self.err(&format!("unknown function {name}"))),
        }
    }
}

impl Serialize for Expr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.as_constant() {
            Some(c) if c.is_int() && c.num().unsigned_abs() < (1u128 << 53) => s.serialize_i64(c.num() as i64),
            _ => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Expr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Expr, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            I(i64),
            F(f64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::I(n) => Ok(Expr::int(n as i128)),
            Raw::F(x) if x.fract() == 0.0 && x.abs() < 9e15 => Ok(Expr::int(x as i128)),
            Raw::F(x) => Err(serde::de::Error::custom(format!("count {x} is not an integer"))),
            Raw::S(s) => Expr::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(e: &Expr, env: &[(&str, f64)]) -> f64 {
        let m: HashMap<String, f64> = env.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        e.eval_map(&m).unwrap()
    }

    #[test]
    fn faulhaber_matches_brute_force() {
        for k in 0..6u32 {
            for x in 0..12i128 {
                let p = faulhaber(k, &Poly::int(x));
                let want: i128 = (1..=x).map(|i| i.pow(k)).sum();
                assert_eq!(p.as_constant(), Some(Rat::int(want)), "k={k} x={x}");
            }
        }
    }

    #[test]
    fn triangular_sum_is_n_n_minus_1_over_2() {
        // sum_{i=0}^{n-1} i
        let e = sum("i", &Expr::int(0), &Expr::var("n").sub(Expr::int(1)), &Expr::var("i"));
        for n in 0..10 {
            assert_eq!(ev(&e, &[("n", n as f64)]), (n * (n - 1) / 2).max(0) as f64);
        }
        assert!(e.is_closed_form());
        assert!(e.to_string().contains("(n^2 - n)/2"), "{e}");
    }

    #[test]
    fn text_round_trips() {
        let cases = [
            "(n^2 - n)/2",
            "floor(n/size)",
            "ceil((n - 3)/4)",
            "ifpos(n - 1, 3*n, 0)",
            "min(n, 10)",
            "sum(i, 0, n, floor(i/3))",
            "logcount(1, n, 2)",
            "mod(rank, 2)",
            "floor(size'/size)*rank",
        ];
        for c in cases {
            let e = Expr::parse(c).unwrap();
            let again = Expr::parse(&e.to_string()).unwrap();
            assert_eq!(e, again, "{c} -> {e}");
            for n in 1..20 {
                let env = [("n", n as f64), ("size", 3.0), ("rank", 1.0), ("size'", 2.0 * n as f64)];
                assert_eq!(ev(&e, &env), ev(&again, &env));
            }
        }
        assert!(Expr::parse("n/size").is_err());
        assert!(Expr::parse("floor(").is_err());
    }

    #[test]
    fn a_formula_key_keeps_what_a_formula_uses_of_the_rank() {
        let f = |t: &str| Expr::parse(t).unwrap();
        // A block decomposition's local size times an inner trip count, a branch for rank 0 and
        // an offset that reads the rank itself.
        let size = f("(floor(n/cart_dims0) + ifpos(mod(n, cart_dims0) - cart_coord0, 1, 0))*m");
        let root = f("ifpos(1 - rank, 5, 1)");
        let offset = f("rank*floor(n/size)");
        let env = |n: f64, rank: f64, coord: f64| -> HashMap<String, f64> {
            [("n", n), ("m", 7.0), ("size", 8.0), ("cart_dims0", 4.0), ("cart_coord0", coord), ("rank", rank)]
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect()
        };
        // A block's footprint bounded by a cache: a min whose per-rank part is a condition's side.
        let bounded = f("min(8*(1 + floor(n/cart_dims0) + ifpos(mod(n, cart_dims0) - cart_coord0, 1, 0)), 520)");
        let key = FormulaKey::new([&size, &root, &bounded]);
        // 256 over 4: every coordinate gets 64; ranks past 0 share one key, rank 0 has its own.
        assert_eq!(key.key(&env(256.0, 1.0, 1.0)), key.key(&env(256.0, 6.0, 3.0)));
        assert_ne!(key.key(&env(256.0, 0.0, 0.0)), key.key(&env(256.0, 4.0, 0.0)));
        // 258 over 4: coordinates 0 and 1 get 65, 2 and 3 get 64.
        assert_ne!(key.key(&env(258.0, 1.0, 1.0)), key.key(&env(258.0, 2.0, 2.0)));
        assert_eq!(key.key(&env(258.0, 2.0, 2.0)), key.key(&env(258.0, 3.0, 3.0)));
        // A shared variable is in the key, and equal keys mean equal values.
        assert_ne!(key.key(&env(256.0, 1.0, 1.0)), key.key(&env(260.0, 1.0, 1.0)));
        for (a, b) in [(env(258.0, 2.0, 2.0), env(258.0, 3.0, 3.0)), (env(256.0, 1.0, 1.0), env(256.0, 7.0, 2.0))] {
            assert_eq!(key.key(&a), key.key(&b));
            for e in [&size, &root, &bounded] {
                assert_eq!(e.eval_map(&a), e.eval_map(&b), "{e}");
            }
        }
        // The rank itself in a term: every rank has its own key.
        let k2 = FormulaKey::new([&offset]);
        assert_ne!(k2.key(&env(256.0, 1.0, 1.0)), k2.key(&env(256.0, 2.0, 1.0)));
        // Keys that share terms give what each gives alone.
        // The min is known from the condition's side: no probe of its own.
        assert_eq!(key.key(&env(256.0, 1.0, 1.0)).len(), FormulaKey::new([&size, &root]).key(&env(256.0, 1.0, 1.0)).len());
        let keys = FormulaKeys::new(vec![key.clone(), k2.clone(), FormulaKey::new([&size, &offset])]);
        for e in [env(258.0, 2.0, 2.0), env(256.0, 0.0, 0.0)] {
            let mut t = keys.terms();
            assert_eq!(keys.key(0, &e, &mut t), key.key(&e));
            assert_eq!(keys.key(1, &e, &mut t), k2.key(&e));
            assert_eq!(keys.key(2, &e, &mut t), FormulaKey::new([&size, &offset]).key(&e));
        }
    }

    #[test]
    fn linear_coefficients_see_through_terms_that_are_not_polynomials() {
        let coef = |text: &str, var: &str| Expr::parse(text).unwrap().linear_coefficient(var).map(|c| c.to_string());
        let w = "(floor(n/p) + ifpos(mod(n, p) - c, 1, 0) + 2)";
        assert_eq!(coef(&format!("(i - 1)*{w} + j"), "j").as_deref(), Some("1"));
        let along_i = Expr::parse(&format!("(i - 1)*{w} + j")).unwrap().linear_coefficient("i").unwrap();
        let env = [("n", 100.0), ("p", 3.0), ("c", 0.0)];
        assert_eq!(ev(&along_i, &env), 36.0, "{along_i}");
        assert_eq!(coef("3*j*k + floor(n/2)", "j").as_deref(), Some("3*k"));
        assert_eq!(coef("floor(n/2)", "j").as_deref(), Some("0"));
        // Not linear: a square, a product of two factors with j, j inside a floor.
        assert_eq!(coef("j^2 + 1", "j"), None);
        assert_eq!(coef("(j + 1)*floor(j/2)", "j"), None);
        assert_eq!(coef("floor(j/2)", "j"), None);
    }

    #[test]
    fn conditional_split_sums_exactly() {
        // sum_{i=0}^{n-1} max(0, m - i)
        let body = Expr::clamp0(Expr::var("m").sub(Expr::var("i")));
        let e = sum("i", &Expr::int(0), &Expr::var("n").sub(Expr::int(1)), &body);
        assert!(e.is_closed_form(), "{e}");
        for n in 0..8 {
            for m in -3..8 {
                let want: i64 = (0..n).map(|i: i64| (m - i).max(0)).sum();
                assert_eq!(ev(&e, &[("n", n as f64), ("m", m as f64)]), want as f64, "n={n} m={m}: {e}");
            }
        }
    }
}
