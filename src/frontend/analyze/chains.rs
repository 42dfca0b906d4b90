//! Loop-carried chains: a value that each execution of a block computes from its own previous
//! value (`s += a[i] * b[i]`, `x = x * m + c`, or NAS's `randlc`: `*X` through a dozen
//! temporaries, conversions included). The ops on the path from the old value to the new one
//! wait for each other, execution after execution: the block takes at least their latencies.
//!
//! The block's statements are followed in order: each scalar the block assigns keeps, for every
//! value it was computed from as the block found it (a scalar, or the memory cell `*p` behind a
//! pointer), the longest op path from there. A chain is a value whose path leads back to itself.
//! Floating-point chains stay chains in compiled code (the compiler may not reassociate them
//! without -ffast-math); integer adds and logic are left out (one cycle, and a vectorised
//! reduction splits them), integer multiplies and divides kept, and conversions and the maths
//! library's functions too. A cell behind a pointer (not an array) goes through memory: its
//! store and the next load are on the path (a load's latency), unless the function is static or
//! inline (inlined, the caller's variable stays in a register). Outside a loop only what outlives a call can carry
//! a chain (a cell behind a pointer, a global): the function's caller loops over it.

use super::*;

/// For each value a block started from (a scalar's name, or `*p`), the longest op path to the
/// value at hand.
type Paths = Vec<(String, Vec<OpClass>)>;

/// What the block's statements so far computed each value from.
#[derive(Default)]
pub(super) struct Flow {
    defs: HashMap<String, Paths>,
    /// The values in the order first assigned (the chains keep it).
    order: Vec<String>,
    /// Outside a loop: only cells behind pointers and globals carry chains.
    in_function_scope: bool,
    /// Updates of a small table's element at an index the block computes (`collect_tally`).
    tallies: Vec<Chain>,
    /// In an arm of an `if`: the longest path to each value the arm starts from, as the
    /// statements before the `if` in the same execution computed it (a tally's index waits
    /// for them too).
    upstream: HashMap<String, Vec<OpClass>>,
}

/// An array element read: a value fresh at each execution, after a load.
const LOADED: &str = "[]";

impl Flow {
    /// The flow an arm of an `if` starts with, after this one's statements.
    pub(super) fn arm(&self) -> Flow {
        let mut upstream = HashMap::new();
        for (var, paths) in &self.defs {
            let longest = paths
                .iter()
                .map(|(src, p)| self.upstream.get(src).into_iter().flatten().chain(p).copied().collect::<Vec<_>>())
                .max_by_key(|p| path_weight(p));
            if let Some(p) = longest {
                upstream.insert(var.clone(), p);
            }
        }
        Flow { upstream, ..Flow::default() }
    }

    /// Another arm's start from the same statements (what `arm` gave).
    pub(super) fn arm_copy(&self) -> Flow {
        Flow { upstream: self.upstream.clone(), ..Flow::default() }
    }

    fn set(&mut self, key: String, p: Paths) {
        if !self.defs.contains_key(&key) {
            self.order.push(key.clone());
        }
        self.defs.insert(key, p);
    }
}

/// The block's chains: the values whose path leads back to themselves, with the ops on it that
/// hold a chain up.
pub(super) fn finish(flow: Flow) -> Vec<Chain> {
    let Flow { mut defs, order, tallies, .. } = flow;
    order
        .into_iter()
        .filter_map(|var| {
            let paths = defs.remove(&var)?;
            let (_, ops) = paths.into_iter().find(|(src, _)| *src == var)?;
            let ops: Vec<OpClass> = ops.into_iter().filter(|c| on_chain(*c)).collect();
            (!ops.is_empty()).then_some(Chain { var, ops, share: 1.0 })
        })
        .chain(tallies)
        .collect()
}

/// Tables of at most this many elements have their elements updated again from one execution to
/// the next often enough to hold each update behind the one before (`collect_tally`): NAS EP's
/// has 10. In a table of 256 bins, updates at uniform random bins meet an in-flight update of the
/// same bin about once in 60.
const TALLY_TABLE_ELEMENTS: f64 = 32.0;

/// Rough cycles of an op class on a current core: which of two paths is the longer.
fn weight(c: OpClass) -> u32 {
    use OpClass::*;
    match c {
        IntDiv | FloatDiv | DoubleDiv => 14,
        Sqrt | Exp | Log => 20,
        SinCos => 30,
        Pow => 45,
        Load | PtrDeref | IntToFp | FpToInt => 5,
        FloatAdd | FloatMul | DoubleAdd | DoubleMul | IntMul => 3,
        _ => 1,
    }
}

fn path_weight(p: &[OpClass]) -> u32 {
    p.iter().map(|c| weight(*c)).sum()
}

/// Both sets of paths, the longer path where a source is in both.
fn union(mut a: Paths, b: Paths) -> Paths {
    for (src, p) in b {
        match a.iter_mut().find(|(s, _)| *s == src) {
            Some((_, q)) => {
                if path_weight(&p) > path_weight(q) {
                    *q = p;
                }
            }
            None => a.push((src, p)),
        }
    }
    a
}

fn extend(mut a: Paths, c: OpClass) -> Paths {
    for (_, p) in &mut a {
        if p.len() < MAX_PATH_OPS {
            p.push(c);
        }
    }
    a
}

/// Ops kept on one path: a block whose chain is longer (hundreds of thousands of dependent
/// statements, generated code) keeps its first MAX_PATH_OPS, so that following it stays linear
/// in the block's length (each statement copies the paths it reads: 10 MB of `s = s * 3 + 1;`
/// took 42 s, most of it copying).
const MAX_PATH_OPS: usize = 512;

impl Analyzer<'_> {
    /// Follows an expression statement: the values it assigns, and what from.
    pub(super) fn collect_chain(&mut self, e: &CExpr, ctx: &Ctx, flow: &mut Flow) {
        flow.in_function_scope = ctx.nest.is_empty();
        match e {
            CExpr::Comma(a, b) => {
                self.collect_chain(a, ctx, flow);
                self.collect_chain(b, ctx, flow);
            }
            CExpr::Assign { op, left, right } => {
                let Some(key) = self.cell(left) else {
                    // `t[i] op= v`, or `t[i] = t[i] op v` (the update's op, an add if another).
                    let update = match (op.as_str(), &**right) {
                        ("=", CExpr::Binary { op: o, .. }) if super::cexpr_contains(right, left) && matches!(o.as_str(), "+" | "-" | "*" | "/") => Some(o.as_str()),
                        ("=", _) => super::cexpr_contains(right, left).then_some("+"),
                        (o, _) => Some(o.trim_end_matches('=')),
                    };
                    if let Some(o) = update {
                        self.collect_tally(left, o, flow);
                    }
                    return;
                };
                let to = self.expr_type(left);
                let (rt, rp) = self.flow_paths(right, flow);
                let mut p = if op == "=" {
                    rp
                } else {
                    let class = arith_class(op.trim_end_matches('='), &arith(&to, &rt));
                    let (_, lp) = self.flow_paths(left, flow);
                    extend(union(lp, rp), class)
                };
                if let Some(c) = conversion(&rt, &to) {
                    p = extend(p, c);
                }
                if key.starts_with('*') && !self.func_local {
                    // Stored, to be loaded again (in a function that may be inlined, the
                    // caller's cell stays in a register).
                    p = extend(p, OpClass::Load);
                }
                flow.set(key, p);
            }
            CExpr::Update { arg, .. } => {
                if let Some(key) = self.cell(arg) {
                    let (_, p) = self.flow_paths(arg, flow);
                    flow.set(key, extend(p, OpClass::IntAdd));
                } else {
                    self.collect_tally(arg, "+", flow);
                }
            }
            _ => {}
        }
    }

    /// An update of a table's element that reads it (`q[l] += 1.0`, `q[l] = q[l] + 1.0`,
    /// `h[k]++`) at an index the block computes through ops that wait for each other (NAS EP:
    /// `l` through log, a divide and sqrt). When the table is small (TALLY_TABLE_ELEMENTS) the
    /// next execution mostly updates an element this one does, and the core holds it behind this
    /// update's store, whose address is known only at the end of the index's path: each
    /// execution waits for that path, the load and the update. Measured on a copy of EP's loop
    /// here: 22.4-24.5 ns an iteration, 10-11 ns without the update, 10.8 ns with a constant
    /// index; the latencies on the path sum to about 23 ns. A table of elements seldom updated
    /// twice in a row (a large histogram) overlaps its updates and is left out.
    fn collect_tally(&mut self, target: &CExpr, op: &str, flow: &mut Flow) {
        let CExpr::Index { array, index, .. } = target else { return };
        let bytes = match &**array {
            CExpr::Ident(a) => match self.local_dims.get(a).or_else(|| (!self.locals.contains_key(a)).then(|| self.globals.dims.get(a)).flatten()) {
                Some(dims) => dims.iter().try_fold(type_size(&self.var_type(a).deref()) as f64, |n, d| match d {
                    CExpr::Int(k) => Some(n * *k as f64),
                    _ => None,
                }),
                None => self.array_size(array).and_then(|e| e.as_constant()).map(|r| r.to_f64()),
            },
            _ => None,
        };
        let elem_bytes = type_size(&self.expr_type(target)).max(1) as f64;
        if bytes.is_none_or(|b| b <= 0.0 || b > TALLY_TABLE_ELEMENTS * elem_bytes) {
            return;
        }
        let (_, paths) = self.flow_paths(index, flow);
        let full = |(src, p): (String, Vec<OpClass>)| -> Vec<OpClass> { flow.upstream.get(&src).into_iter().flatten().chain(&p).copied().collect() };
        let Some(longest) = paths.into_iter().map(full).max_by_key(|p| path_weight(p)) else { return };
        let mut ops: Vec<OpClass> = longest.into_iter().filter(|c| on_chain(*c)).collect();
        // An index loaded or counted (a histogram of keys) is known early.
        if !ops.iter().any(|c| !matches!(c, OpClass::Load | OpClass::IntMul)) {
            return;
        }
        let elem = self.expr_type(target);
        ops.push(OpClass::Load);
        ops.push(arith_class(op, &arith(&elem, &elem)));
        flow.tallies.push(Chain { var: cexpr_text(target), ops, share: 1.0 });
    }

    /// A declaration with a value: the variable starts from that value's sources.
    pub(super) fn collect_decl_chain(&mut self, d: &VarDecl, ctx: &Ctx, flow: &mut Flow) {
        flow.in_function_scope = ctx.nest.is_empty();
        let p = match &d.init {
            Some(init) if d.dims.is_empty() => {
                let (t, p) = self.flow_paths(init, flow);
                match conversion(&t, &self.resolve(&d.ty)) {
                    Some(c) => extend(p, c),
                    None => p,
                }
            }
            _ => Vec::new(),
        };
        flow.set(d.name.clone(), p);
    }

    /// The value an lvalue names, if a chain can run through it: a scalar (outside a loop, a
    /// global one), or the cell behind a pointer variable (`*p`, `p[0]`).
    fn cell(&self, e: &CExpr) -> Option<String> {
        let pointer = match e {
            CExpr::Ident(v) => return (self.var_type(v).indirection == 0).then(|| v.clone()),
            CExpr::Deref(p) => p,
            CExpr::Index { array, index, .. } if **index == CExpr::Int(0) => array,
            _ => return None,
        };
        // A pointer, not an array (a local array's elements stay in registers).
        let array = |v: &str| self.local_dims.contains_key(v) || (!self.locals.contains_key(v) && self.globals.dims.contains_key(v));
        match &**pointer {
            CExpr::Ident(v) if self.var_type(v).indirection == 1 && !array(v) => Some(format!("*{v}")),
            _ => None,
        }
    }

    /// `e`'s type and, for each value the block started from, the longest op path to `e`'s value.
    fn flow_paths(&self, e: &CExpr, flow: &Flow) -> (CType, Paths) {
        let source = |key: String| -> Paths {
            match flow.defs.get(&key) {
                Some(p) => p.clone(),
                None if !flow.in_function_scope || key.starts_with('*') || !self.locals.contains_key(&key) => vec![(key, Vec::new())],
                None => Vec::new(),
            }
        };
        match e {
            CExpr::Ident(_) | CExpr::Deref(_) | CExpr::Index { .. } if self.cell(e).is_some() => {
                let key = self.cell(e).unwrap_or_default();
                (self.expr_type(e), source(key))
            }
            CExpr::Binary { op, left, right } => {
                let (lt, lp) = self.flow_paths(left, flow);
                let (rt, rp) = self.flow_paths(right, flow);
                let t = arith(&lt, &rt);
                let mut p = union(lp, rp);
                if t.is_scalar_fp() && lt.is_scalar_fp() != rt.is_scalar_fp() {
                    p = extend(p, OpClass::IntToFp);
                }
                match op.as_str() {
                    "<" | "<=" | ">" | ">=" | "==" | "!=" => (CType::int(), extend(p, if t.is_scalar_fp() { OpClass::FpCmp } else { OpClass::IntCmp })),
                    "&&" | "||" => (CType::int(), p),
                    _ => {
                        let class = arith_class(op, &t);
                        (t, extend(p, class))
                    }
                }
            }
            CExpr::Unary { op, arg } => {
                let (t, p) = self.flow_paths(arg, flow);
                match op.as_str() {
                    "-" => (t.clone(), extend(p, arith_class("-", &t))),
                    "!" => (CType::int(), extend(p, OpClass::IntLogic)),
                    "~" => (t, extend(p, OpClass::IntLogic)),
                    _ => (t, p),
                }
            }
            CExpr::Cast { ty, value } => {
                let (vt, p) = self.flow_paths(value, flow);
                let ty = self.resolve(ty);
                match conversion(&vt, &ty) {
                    Some(c) => (ty, extend(p, c)),
                    None => (ty, p),
                }
            }
            CExpr::Cond { cond, then, otherwise } => {
                let (_, cp) = self.flow_paths(cond, flow);
                let (t, tp) = self.flow_paths(then, flow);
                let (_, op) = self.flow_paths(otherwise, flow);
                (t, union(union(cp, tp), op))
            }
            CExpr::Call { func, args, .. } => {
                let class = libm_class(func);
                match class {
                    Some(c) => {
                        let single = func.ends_with('f') && func.len() > 3;
                        let p = args.iter().fold(Vec::new(), |acc, a| union(acc, self.flow_paths(a, flow).1));
                        (CType::new(if single { Base::Float } else { Base::Double }), extend(p, c))
                    }
                    // What another function returns is not followed.
                    None => (self.expr_type(e), Vec::new()),
                }
            }
            CExpr::Comma(_, b) => self.flow_paths(b, flow),
            // An element read is a fresh value (its index is not followed: `j = next[j]` is
            // no chain here).
            CExpr::Index { .. } => (self.expr_type(e), vec![(LOADED.to_string(), vec![OpClass::Load])]),
            _ => (self.expr_type(e), Vec::new()),
        }
    }

    /// An expression's type as C gives it, without counting its ops.
    fn expr_type(&self, e: &CExpr) -> CType {
        match e {
            CExpr::Ident(n) => self.var_type(n),
            CExpr::Int(_) | CExpr::Sizeof { .. } => CType::int(),
            CExpr::Float { single, .. } => CType::new(if *single { Base::Float } else { Base::Double }),
            CExpr::Binary { op, left, right } => match op.as_str() {
                "<" | "<=" | ">" | ">=" | "==" | "!=" | "&&" | "||" => CType::int(),
                _ => {
                    let (lt, rt) = (self.expr_type(left), self.expr_type(right));
                    if lt.indirection > 0 || rt.indirection > 0 {
                        if lt.indirection > 0 { lt } else { rt }
                    } else {
                        arith(&lt, &rt)
                    }
                }
            },
            CExpr::Unary { op, arg } => if op == "!" { CType::int() } else { self.expr_type(arg) },
            CExpr::Update { arg, .. } => self.expr_type(arg),
            CExpr::Assign { left, .. } => self.expr_type(left),
            CExpr::Index { array, .. } => self.expr_type(array).deref(),
            CExpr::Deref(a) => self.expr_type(a).deref(),
            CExpr::Cast { ty, .. } => self.resolve(ty),
            CExpr::Cond { then, .. } => self.expr_type(then),
            CExpr::Comma(_, b) => self.expr_type(b),
            CExpr::Call { func, .. } => self.globals.functions.get(func).map(|f| self.resolve(&f.0)).unwrap_or_else(CType::unknown),
            _ => CType::unknown(),
        }
    }
}

/// Whether an op class's latency holds a chain up (see the module's comment).
fn on_chain(c: OpClass) -> bool {
    use OpClass::*;
    matches!(
        c,
        FloatAdd | FloatMul | FloatDiv | DoubleAdd | DoubleMul | DoubleDiv | IntMul | IntDiv | IntToFp | FpToInt | Load | Sqrt | Exp | Log | SinCos | Pow
    )
}
