//! The memory side of a block: each array reference of its statements, with the distance in
//! bytes between its successive accesses (the stride along the innermost loop) and the bytes the
//! loop nest touches before it comes back to the same data (the reuse distance). The estimator
//! picks the cache level from the reuse distance and the cost per access from the stride
//! (src/predict/memory.rs).
//!
//! The reuse distance follows the loop nest: a reference whose index does not mention the
//! variable of an enclosing loop is used again on that loop's next iteration, after everything
//! the loops inside it touch (`x[j]` in `for i { for j { y[i] += a[i][j] * x[j]; } }`: a row of
//! `a` and all of `x`). A reference whose index mentions every enclosing loop comes back only
//! when the whole nest runs again (the next call or time step): its distance is the nest's
//! footprint. An index that depends on data (`h[key[i]]`) is irregular: it touches its whole
//! array at random, as large as the array's declaration or allocation says.

use super::*;

/// An enclosing loop as the memory model sees it: loops whose trip count is known only at run
/// time included (their variable still says which references move with them).
#[derive(Clone, Debug, Default)]
pub(super) struct NestLoop {
    /// The induction variable, when the loop has a recognised shape that the body does not
    /// modify, and its step per iteration.
    pub var: Option<(String, i128)>,
    /// Iterations per entry, when known before running.
    pub trip: Option<Expr>,
    /// The variable's largest value, to replace it in formulas of inner loops (triangular
    /// nests are sized by their largest inner trip).
    pub hi: Option<Expr>,
}

/// An array reference found in a statement, before its block is flushed.
pub(super) struct PendingRef {
    array: String,
    access: MemAccess,
    weight: Expr,
    elem: u32,
    /// The element index, linearised over declared dimensions, in loop variables.
    idx: Option<Expr>,
    /// Bytes of the array, from its declaration or allocation.
    size: Option<Expr>,
    /// Where the reference is written (byte offsets in the block's file).
    at: Option<(u32, u32)>,
}

/// Bytes in a cache line: a reference whose stride is at least this reads a line per access.
const LINE: i128 = 64;

impl Analyzer<'_> {
    /// The nest entry for a `for` loop: `range` is the induction range when the analysis
    /// recognised the loop (the step is then 1 or -1).
    pub(super) fn nest_for(&self, init: Option<&Stmt>, cond: Option<&CExpr>, update: Option<&CExpr>, body: &Stmt, trip: Option<Expr>, range: Option<(Expr, Expr)>) -> NestLoop {
        let Some(shape) = loop_shape(init, cond, update) else { return NestLoop::default() };
        let step = match shape.step {
            Step::Add(s) => i128::from(s),
            _ => return NestLoop { trip, ..NestLoop::default() },
        };
        if modified_vars(body).contains(&shape.var) {
            return NestLoop { trip, ..NestLoop::default() };
        }
        NestLoop { var: Some((program_symbol(&shape.var), step)), trip, hi: range.map(|(_, hi)| hi) }
    }

    /// Adds the array references of `e` (evaluated once per execution of the statement).
    pub(super) fn collect_refs(&mut self, e: &CExpr, ctx: &Ctx, out: &mut Vec<PendingRef>) {
        if ctx.nest.is_empty() {
            return;
        }
        self.refs_in(e, ctx, &Expr::int(1), out);
    }

    fn refs_in(&mut self, e: &CExpr, ctx: &Ctx, w: &Expr, out: &mut Vec<PendingRef>) {
        match e {
            CExpr::Assign { op, left, right } => {
                self.refs_in(right, ctx, w, out);
                if matches!(**left, CExpr::Index { .. }) {
                    if op != "=" {
                        self.push_ref(left, MemAccess::Load, ctx, w, out);
                    }
                    self.push_ref(left, MemAccess::Store, ctx, w, out);
                    self.subscript_refs(left, ctx, w, out);
                } else {
                    self.refs_in(left, ctx, w, out);
                }
            }
            CExpr::Update { arg, .. } if matches!(**arg, CExpr::Index { .. }) => {
                self.push_ref(arg, MemAccess::Load, ctx, w, out);
                self.push_ref(arg, MemAccess::Store, ctx, w, out);
                self.subscript_refs(arg, ctx, w, out);
            }
            CExpr::Index { .. } => {
                self.push_ref(e, MemAccess::Load, ctx, w, out);
                self.subscript_refs(e, ctx, w, out);
            }
            // An address is computed, nothing is read.
            CExpr::AddrOf(a) if matches!(**a, CExpr::Index { .. }) => self.subscript_refs(a, ctx, w, out),
            CExpr::Sizeof { .. } => {}
            CExpr::Cond { cond, then, otherwise } => {
                self.refs_in(cond, ctx, w, out);
                let half = w.clone().mul(Expr::rat(Rat::new(1, 2)));
                self.refs_in(then, ctx, &half, out);
                self.refs_in(otherwise, ctx, &half, out);
            }
            _ => {
                for c in children(e) {
                    self.refs_in(c, ctx, w, out);
                }
            }
        }
    }

    /// References inside the subscripts (and a base that is not a plain name) of an index chain.
    fn subscript_refs(&mut self, e: &CExpr, ctx: &Ctx, w: &Expr, out: &mut Vec<PendingRef>) {
        let (base, subs) = index_chain(e);
        for s in subs {
            self.refs_in(s, ctx, w, out);
        }
        if !matches!(base, CExpr::Ident(_)) {
            self.refs_in(base, ctx, w, out);
        }
    }

    /// One reference: an element of a declared array (`a[i][j]` with `double a[N][M]`: index
    /// i*M + j), or for pointers to pointers a row pointer and an element of its row.
    fn push_ref(&mut self, e: &CExpr, access: MemAccess, ctx: &Ctx, w: &Expr, out: &mut Vec<PendingRef>) {
        let (base, subs) = index_chain(e);
        let at = match e {
            CExpr::Index { at, .. } => at.0,
            _ => None,
        };
        let name = cexpr_text(base);
        let elem = type_size(&self.static_type(e)).clamp(1, 1 << 20) as u32;
        let dims = match base {
            CExpr::Ident(n) => self.local_dims.get(n).or_else(|| self.globals.dims.get(n)).cloned(),
            _ => None,
        };
        match dims {
            Some(d) if d.len() == subs.len() => {
                let mut lin = subs[0].clone();
                for (dim, s) in d.iter().zip(subs.iter()).skip(1) {
                    lin = binary("+", binary("*", lin, dim.clone()), (*s).clone());
                }
                let mut size = CExpr::Int(i128::from(elem));
                for dim in &d {
                    size = binary("*", size, dim.clone());
                }
                let size = self.value_expr(&size);
                let idx = self.index_value(&lin, ctx);
                out.push(PendingRef { array: name, access, weight: w.clone(), elem, idx, size, at });
            }
            // An array decays to a pointer (a row passed on): no access.
            Some(_) => {}
            None => {
                // Rows of a pointer-to-pointer: each level but the last loads a pointer. Where
                // an outer subscript moves with the innermost loop, each access is in another
                // row, somewhere the loaded pointer says: irregular.
                let inner = ctx.nest.last().and_then(|l| l.var.as_ref()).map(|v| v.0.clone());
                let mut moved = false;
                for (k, s) in subs.iter().enumerate() {
                    let last = k + 1 == subs.len();
                    let level = format!("{name}{}", "[]".repeat(k));
                    let size = if k == 0 { self.array_size(base) } else { None };
                    let idx = if moved { None } else { self.index_value(s, ctx) };
                    moved |= match (&idx, &inner) {
                        (Some(e), Some(v)) => e.mentions(v),
                        _ => true,
                    };
                    let (access, elem) = if last { (access, elem) } else { (MemAccess::Load, 8) };
                    out.push(PendingRef { array: level, access, weight: w.clone(), elem, idx, size, at: if last { at } else { None } });
                }
            }
        }
    }

    /// The value of an index in the loop variables of the nest, those of loops counted only at
    /// run time included.
    pub(super) fn index_value(&mut self, e: &CExpr, ctx: &Ctx) -> Option<Expr> {
        // loop_vars holds the program's names; the nest, formula symbols.
        let added: Vec<String> = ctx.nest.iter().filter_map(|l| l.var.as_ref().map(|v| program_name(&v.0).to_string())).filter(|v| self.loop_vars.insert(v.clone())).collect();
        if added.is_empty() {
            return self.value_expr(e);
        }
        // Values of locals found while these are symbols are not kept for later.
        let before: HashSet<String> = self.known.keys().cloned().collect();
        let v = self.value_expr(e);
        self.known.retain(|k, _| before.contains(k));
        for a in added {
            self.loop_vars.remove(&a);
        }
        v
    }

    /// Bytes of the array a pointer points to: its single allocation (`malloc(n)`,
    /// `calloc(n, s)`, `realloc(p, n)`, or a function of the program whose name says it
    /// allocates).
    pub(super) fn array_size(&mut self, base: &CExpr) -> Option<Expr> {
        let CExpr::Ident(n) = base else { return None };
        let assigns = self.assigned.get(n)?.clone();
        let mut sizes = assigns.iter().filter(|a| !is_null(a)).map(|a| self.alloc_bytes(a));
        let first = sizes.next()??;
        sizes.next().is_none().then_some(first)
    }

    /// The allocations a statement makes (bytes each). The C library's allocators inside a
    /// function of the program that is itself an allocator are counted at its calls instead.
    pub(super) fn collect_allocs(&mut self, e: &CExpr, out: &mut Vec<Expr>) {
        let in_wrapper = self.func.to_ascii_lowercase().contains("alloc");
        for c in cexpr_calls(e) {
            let CExpr::Call { func, .. } = &c else { continue };
            if in_wrapper && !self.globals.functions.contains_key(func) {
                continue;
            }
            if let Some(b) = self.alloc_bytes(&c) {
                out.push(b);
            }
        }
    }

    fn alloc_bytes(&mut self, e: &CExpr) -> Option<Expr> {
        let CExpr::Call { func, args, .. } = peel_cast(e) else { return None };
        let own = self.globals.functions.contains_key(func);
        let bytes = match (func.as_str(), args.len()) {
            ("malloc", 1) => args[0].clone(),
            ("calloc", 2) => binary("*", args[0].clone(), args[1].clone()),
            ("realloc" | "aligned_alloc", 2) => args[1].clone(),
            (f, 1) if own && f.to_ascii_lowercase().contains("alloc") => args[0].clone(),
            (f, 2) if own && f.to_ascii_lowercase().contains("alloc") => binary("*", args[0].clone(), args[1].clone()),
            _ => return None,
        };
        if own && matches!(func.as_str(), "malloc" | "calloc" | "realloc" | "aligned_alloc") {
            return None;
        }
        self.byte_count(&bytes)
    }

    /// The references of a block, from those of its statements.
    pub(super) fn mem_refs(&self, refs: Vec<PendingRef>, ctx: &Ctx) -> Vec<MemRef> {
        let nest = &ctx.nest;
        let n = nest.len();
        if n == 0 || refs.is_empty() || nest[n - 1].var.is_none() {
            return Vec::new();
        }
        // Elements per iteration of each loop of the nest, per reference (None: not linear).
        let coefs: Vec<Vec<Option<Expr>>> = refs.iter().map(|r| nest.iter().map(|l| coef(r.idx.as_ref(), l)).collect()).collect();
        let extent = |r: usize, from: usize| -> Option<Expr> {
            let p = &refs[r];
            if p.idx.is_none() {
                // Irregular: its array, or without a known size a line per access.
                return p.size.clone().or_else(|| nest[from..].iter().try_fold(Expr::int(LINE), |acc, l| l.trip.clone().map(|t| acc.mul(t))));
            }
            let mut range = Expr::int(1);
            let mut accesses = Expr::int(1);
            for l in from..n {
                let c = coefs[r][l].clone()?;
                if c.is_zero() {
                    continue;
                }
                let t = nest[l].trip.clone()?;
                range = range.add(Expr::max(c.clone(), c.neg()).mul(t.clone().sub(Expr::int(1))));
                accesses = accesses.mul(t);
            }
            Some(Expr::min(range.mul(Expr::int(i128::from(p.elem))), accesses.mul(Expr::int(LINE))))
        };
        let mut out: Vec<MemRef> = Vec::new();
        for (r, p) in refs.iter().enumerate() {
            let stride = match (&p.idx, &coefs[r][n - 1]) {
                (None, _) => None,
                (Some(_), None) => None,
                (Some(_), Some(c)) if c.is_zero() => continue, // the same element each iteration
                (Some(_), Some(c)) => Some(c.clone().mul(Expr::int(i128::from(p.elem)))),
            };
            let reuse = if p.idx.is_none() || stride.is_none() {
                extent(r, 0)
            } else {
                // The innermost loop that comes back to the same data, and what the loops
                // inside it touch meanwhile (the largest extent per array).
                let k = (0..n - 1).rev().find(|&l| coefs[r][l].as_ref().is_some_and(Expr::is_zero));
                let from = k.map_or(0, |k| k + 1);
                let mut per_array: Vec<(&str, Option<Expr>)> = Vec::new();
                for (q, pq) in refs.iter().enumerate() {
                    let e = extent(q, from);
                    match per_array.iter_mut().find(|(a, _)| *a == pq.array) {
                        Some((_, cur)) => {
                            *cur = match (cur.take(), e) {
                                (Some(a), Some(b)) => Some(Expr::max(a, b)),
                                _ => None,
                            }
                        }
                        None => per_array.push((pq.array.as_str(), e)),
                    }
                }
                per_array.into_iter().map(|(_, e)| e).try_fold(Expr::int(0), |acc, e| e.map(|e| acc.add(e)))
            };
            let stride = stride.and_then(|s| outer_bounds(s, nest));
            let reuse_bytes = reuse.and_then(|e| outer_bounds(e, nest));
            // Where an irregular reference is written: the trace measures the addresses it
            // touches there (the range its accesses spread over).
            let at = if stride.is_none() { p.at.into_iter().collect() } else { Vec::new() };
            let m = MemRef { array: p.array.clone(), access: p.access, count: p.weight.clone(), elem_bytes: p.elem, stride, reuse_bytes, at };
            // References to one array that move together (`a[i-1]`, `a[i]`, `a[i+1]`, or one
            // element read three times) are one stream of lines: the most frequent counts.
            // Irregular ones are separate accesses.
            match out.iter_mut().find(|o| o.array == m.array && o.access == m.access && o.stride == m.stride && o.reuse_bytes == m.reuse_bytes && o.elem_bytes == m.elem_bytes) {
                Some(o) if m.stride.is_some() => o.count = Expr::max(o.count.clone(), m.count),
                Some(o) => {
                    o.count = o.count.clone().add(m.count);
                    o.at.extend(m.at);
                }
                None => out.push(m),
            }
        }
        out
    }
}

/// Elements between the index at one iteration of `l` and the next; zero when the index does
/// not move with the loop, None when it is not linear in its variable (or the loop has none
/// while the index depends on data).
fn coef(idx: Option<&Expr>, l: &NestLoop) -> Option<Expr> {
    let f = idx?;
    let Some((v, step)) = &l.var else { return Some(Expr::int(0)) };
    if !f.mentions(v) {
        return Some(Expr::int(0));
    }
    Some(f.linear_coefficient(v)?.mul(Expr::int(*step)))
}

/// `e` with every loop variable of the nest replaced by its largest value (innermost first, as
/// inner bounds may mention outer variables); None when one is left.
fn outer_bounds(mut e: Expr, nest: &[NestLoop]) -> Option<Expr> {
    for l in nest.iter().rev() {
        if let Some((v, _)) = &l.var {
            if e.mentions(v) {
                e = e.subst(v, l.hi.as_ref()?);
            }
        }
    }
    let left = nest.iter().filter_map(|l| l.var.as_ref()).any(|(v, _)| e.mentions(v));
    (!left).then_some(e)
}

/// The base of an index chain and its subscripts, outermost first: `a[i][j]` is (a, [i, j]).
fn index_chain(e: &CExpr) -> (&CExpr, Vec<&CExpr>) {
    let mut subs = Vec::new();
    let mut cur = e;
    while let CExpr::Index { array, index, .. } = cur {
        subs.push(&**index);
        cur = array;
    }
    subs.reverse();
    (cur, subs)
}

fn binary(op: &str, l: CExpr, r: CExpr) -> CExpr {
    CExpr::Binary { op: op.into(), left: Box::new(l), right: Box::new(r) }
}

fn peel_cast(e: &CExpr) -> &CExpr {
    match e {
        CExpr::Cast { value, .. } => peel_cast(value),
        other => other,
    }
}

fn is_null(e: &CExpr) -> bool {
    matches!(peel_cast(e), CExpr::Int(0)) || matches!(peel_cast(e), CExpr::Ident(n) if n == "NULL")
}

/// How many callers up a function's parameter is followed to a value.
const MAX_CALL_DEPTH: usize = 4;

impl Analyzer<'_> {
    /// Memory formulas that mention a function's parameters, rewritten in its callers' terms
    /// (down to the program's parameters) where every call passes the same value: the
    /// estimator knows the program's parameters, not each call's arguments.
    pub(super) fn resolve_mem_params(&mut self) {
        let mut sites: HashMap<&str, Vec<(&str, &[Option<Expr>])>> = HashMap::new();
        for c in &self.model.calls {
            sites.entry(c.callee.as_str()).or_default().push((c.caller.as_str(), &c.args));
        }
        let params: HashMap<&str, Vec<String>> = self.globals.functions.iter().map(|(f, (_, ps, _))| (f.as_str(), ps.iter().map(|p| program_symbol(&p.name)).collect())).collect();
        let resolve = |e: &Expr, func: &str| resolve_in(e, func, &sites, &params, 0);
        let mut updates: Vec<(usize, Vec<MemRef>)> = Vec::new();
        for (i, b) in self.model.blocks.iter().enumerate() {
            if b.mem.is_empty() {
                continue;
            }
            let mem = b
                .mem
                .iter()
                .map(|m| MemRef {
                    count: resolve(&m.count, &b.function).unwrap_or_else(|| m.count.clone()),
                    stride: m.stride.as_ref().map(|s| resolve(s, &b.function).unwrap_or_else(|| s.clone())),
                    reuse_bytes: m.reuse_bytes.as_ref().map(|s| resolve(s, &b.function).unwrap_or_else(|| s.clone())),
                    ..m.clone()
                })
                .collect();
            updates.push((i, mem));
        }
        for (i, mem) in updates {
            self.model.blocks[i].mem = mem;
        }
        for b in &mut self.model.blocks {
            for a in &mut b.allocs {
                if let Some(r) = resolve(a, &b.function) {
                    *a = r;
                }
            }
        }
    }
}

/// `e` (in `func`'s terms) with `func`'s parameters replaced by what its callers pass, when
/// they all pass the same; None when some parameter cannot be replaced.
fn resolve_in(e: &Expr, func: &str, sites: &HashMap<&str, Vec<(&str, &[Option<Expr>])>>, params: &HashMap<&str, Vec<String>>, depth: usize) -> Option<Expr> {
    let ps = params.get(func)?;
    if !e.vars().iter().any(|v| ps.contains(v)) {
        return Some(e.clone());
    }
    if depth >= MAX_CALL_DEPTH {
        return None;
    }
    let calls = sites.get(func)?;
    let mut result: Option<Expr> = None;
    for (caller, args) in calls {
        let mut x = e.clone();
        for (k, p) in ps.iter().enumerate() {
            if x.mentions(p) {
                x = x.subst(p, args.get(k)?.as_ref()?);
            }
        }
        let x = resolve_in(&x, caller, sites, params, depth + 1)?;
        match &result {
            Some(r) if *r != x => return None,
            _ => result = Some(x),
        }
    }
    result
}
