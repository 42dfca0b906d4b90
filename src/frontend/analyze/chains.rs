//! Loop-carried chains: a scalar that each iteration computes from its own previous value
//! (`s += a[i] * b[i]`, `x = x * m + c`). The ops on the path from the old value to the new one
//! wait for each other, iteration after iteration: the block takes at least their latencies.
//! Floating-point chains stay chains in compiled code (the compiler may not reassociate them
//! without -ffast-math); integer adds and logic are left out (one cycle, and a vectorised
//! reduction splits them), integer multiplies and divides kept.

use super::*;

/// A scalar's updates in a block so far.
pub(super) struct PendingChain {
    var: String,
    ops: Vec<OpClass>,
    /// Also set from other values in the block: not carried from one execution to the next.
    killed: bool,
}

/// `var` is set afresh in the block (declared there, or assigned a value that does not read it).
pub(super) fn kill(out: &mut Vec<PendingChain>, var: &str) {
    match out.iter_mut().find(|c| c.var == var) {
        Some(c) => c.killed = true,
        None => out.push(PendingChain { var: var.to_string(), ops: Vec::new(), killed: true }),
    }
}

/// The block's chains: the scalars updated from their own value and never set afresh.
pub(super) fn finish(pending: Vec<PendingChain>) -> Vec<Chain> {
    pending.into_iter().filter(|c| !c.killed && !c.ops.is_empty()).map(|c| Chain { var: c.var, ops: c.ops }).collect()
}

impl Analyzer<'_> {
    /// The chain a statement adds to the block, if it updates a scalar from its own value. A
    /// scalar the block also sets from other values (`t = a[i]; t += 1.0;`) starts afresh each
    /// time: no chain (its entry keeps no ops and `killed`).
    pub(super) fn collect_chain(&mut self, e: &CExpr, ctx: &Ctx, out: &mut Vec<PendingChain>) {
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
                        None => {
                            kill(out, v);
                            return;
                        }
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
            None => out.push(PendingChain { var, ops: path, killed: false }),
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
