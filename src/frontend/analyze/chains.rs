//! Loop-carried chains: a scalar that each iteration computes from its own previous value
//! (`s += a[i] * b[i]`, `x = x * m + c`). The ops on the path from the old value to the new one
//! wait for each other, iteration after iteration: the block takes at least their latencies.
//! Floating-point chains stay chains in compiled code (the compiler may not reassociate them
//! without -ffast-math); integer adds and logic are left out (one cycle, and a vectorised
//! reduction splits them), integer multiplies and divides kept.

use super::*;

impl Analyzer<'_> {
    /// The chain a statement adds to the block, if it updates a scalar from its own value.
    pub(super) fn collect_chain(&mut self, e: &CExpr, ctx: &Ctx, out: &mut Vec<Chain>) {
        if ctx.nest.is_empty() {
            return;
        }
        let (var, path) = match e {
            CExpr::Assign { op, left, right } => {
                let CExpr::Ident(v) = &**left else { return };
                let t = self.var_type(v);
                if t.indirection > 0 {
                    return;
                }
                if op == "=" {
                    match self.path_from(right, v) {
                        Some(p) => (v.clone(), p),
                        None => return,
                    }
                } else {
                    let class = match op.trim_end_matches('=') {
                        "+" | "-" => fp_class(&t, OpClass::IntAdd, OpClass::FloatAdd, OpClass::DoubleAdd),
                        "*" => fp_class(&t, OpClass::IntMul, OpClass::FloatMul, OpClass::DoubleMul),
                        "/" => fp_class(&t, OpClass::IntDiv, OpClass::FloatDiv, OpClass::DoubleDiv),
                        "%" => OpClass::IntDiv,
                        _ => OpClass::IntLogic,
                    };
                    // The right side is computed off the chain, unless it reads the variable too.
                    let mut p = self.path_from(right, v).unwrap_or_default();
                    p.push(class);
                    (v.clone(), p)
                }
            }
            _ => return,
        };
        let path: Vec<OpClass> = path.into_iter().filter(|c| on_chain(*c)).collect();
        if path.is_empty() {
            return;
        }
        match out.iter_mut().find(|c| c.var == var) {
            Some(c) => c.ops.extend(path),
            None => out.push(Chain { var, ops: path }),
        }
    }

    /// The ops between a read of `var` in `e` and `e`'s value, along the longest such path (by
    /// op count); None when `e` does not read `var`.
    fn path_from(&self, e: &CExpr, var: &str) -> Option<Vec<OpClass>> {
        match e {
            CExpr::Ident(n) if n == var => Some(Vec::new()),
            CExpr::Binary { op, left, right } => {
                let (l, r) = (self.path_from(left, var), self.path_from(right, var));
                let mut p = match (l, r) {
                    (Some(a), Some(b)) => if a.len() >= b.len() { a } else { b },
                    (Some(a), None) | (None, Some(a)) => a,
                    (None, None) => return None,
                };
                // The path computes the variable's next value: its type.
                let t = self.var_type(var);
                let class = match op.as_str() {
                    "+" | "-" => fp_class(&t, OpClass::IntAdd, OpClass::FloatAdd, OpClass::DoubleAdd),
                    "*" => fp_class(&t, OpClass::IntMul, OpClass::FloatMul, OpClass::DoubleMul),
                    "/" => fp_class(&t, OpClass::IntDiv, OpClass::FloatDiv, OpClass::DoubleDiv),
                    "%" => OpClass::IntDiv,
                    _ => OpClass::IntLogic,
                };
                p.push(class);
                Some(p)
            }
            CExpr::Unary { arg, .. } | CExpr::Cast { value: arg, .. } => self.path_from(arg, var),
            _ => None,
        }
    }
}

/// Whether an op class's latency holds a chain up (see the module's comment).
fn on_chain(c: OpClass) -> bool {
    matches!(
        c,
        OpClass::FloatAdd | OpClass::FloatMul | OpClass::FloatDiv | OpClass::DoubleAdd | OpClass::DoubleMul | OpClass::DoubleDiv | OpClass::IntMul | OpClass::IntDiv
    )
}
