//! IR -> ProgramModel: blocks, op counts per block (NI_b), execution counts (NE_b) as numbers or
//! formulas, communication sites, parameters. ChronosMix's PIC, section 2.2 of seed 003.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::model::analysis::*;
use crate::model::expr::{self, Expr, Rat};
use crate::model::ops::OpClass;

use super::ir::*;
use super::mpi;

mod chains;
mod clocks;
mod memory;
use chains::Flow;
use memory::{NestLoop, PendingRef};

/// Options of an analysis.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Parameter bindings (-D NAME=VALUE), also used for macro overrides.
    pub bindings: BTreeMap<String, f64>,
    /// Count data-dependent branches as taken half the time (with a warning) instead of
    /// asking for a trace.
    pub assume_branches: bool,
}

type Ops = crate::model::ops::OpCounts;

fn add_op(ops: &mut Ops, c: OpClass, n: Expr) {
    let e = ops.remove(&c).unwrap_or(Expr::int(0)).add(n);
    if !e.is_zero() {
        ops.insert(c, e);
    }
}

/// Global symbols shared by every function of the program.
struct Globals {
    /// Known integer values of macros, consts and enumerators.
    consts: HashMap<String, Expr>,
    types: HashMap<String, CType>,
    typedefs: HashMap<String, CType>,
    structs: HashMap<String, HashMap<String, CType>>,
    /// Functions defined in the tree: name -> (return type, params, single return expression).
    functions: HashMap<String, (CType, Vec<VarDecl>, Option<CExpr>)>,
    /// Declared dimensions of global arrays.
    dims: HashMap<String, Vec<CExpr>>,
}

/// One enclosing loop, as seen from inside its body.
#[derive(Clone)]
struct LoopCtx {
    /// The induction variable with its inclusive range when the step is +-1.
    var: Option<(String, Expr, Expr)>,
    trip: Expr,
}

#[derive(Clone, Default)]
struct Ctx {
    loops: Vec<LoopCtx>,
    /// Every enclosing loop, for the memory model (`loops` holds those counted statically).
    nest: Vec<NestLoop>,
    /// 0/1 indicator factors from enclosing branches (may mention loop variables).
    conds: Vec<Expr>,
    /// Constant probability factors from MPICAST_PROBA or --assume-branches.
    proba: Rat1,
    needs_trace: Option<String>,
    /// Branches on data entered so far: an arm under one is not taken at a known rate, also
    /// where an enclosing loop already needs a trace.
    data_arms: usize,
}

#[derive(Clone, Copy)]
struct Rat1(f64);
impl Default for Rat1 {
    fn default() -> Self {
        Rat1(1.0)
    }
}

pub struct Analyzer<'a> {
    opts: &'a Options,
    globals: Globals,
    model: ProgramModel,
    // Per function state.
    file: String,
    func: String,
    locals: HashMap<String, CType>,
    /// Known integer values of locals (single assignment, value known).
    known: HashMap<String, Option<Expr>>,
    assigned: HashMap<String, Vec<CExpr>>,
    loop_vars: HashSet<String>,
    /// Declared dimensions of the function's local arrays.
    local_dims: HashMap<String, Vec<CExpr>>,
    /// Hashes of the block ids given so far (ids themselves would take tens of MB in a large
    /// program; a colliding hash only adds a `#k` suffix).
    seen_ids: HashSet<u64>,
    params_seen: HashSet<String>,
    /// Arrays filled by MPI_Dims_create (dims) and MPI_Cart_coords (coords): their elements are
    /// per-rank symbols cart_dims<k>, cart_coord<k> that skeleton execution computes.
    cart_arrays: HashMap<String, &'static str>,
    /// Integer locals declared with a value and not assigned again in the rest of their
    /// compound statement: that value there, in the loop variables of the nest (`size_t c =
    /// i * sx + j * sy + k;` before `u[c - sx]`), whatever other variables of the same name
    /// elsewhere in the function hold. Entries are undone when their compound ends.
    scoped: HashMap<String, Expr>,
    scoped_log: Vec<(String, Option<Expr>)>,
    /// The function being analysed may be inlined (`Function::local`).
    func_local: bool,
    /// The program's functions that return a clock reading (`clocks`), and where from.
    clock_fns: HashMap<String, String>,
}

impl<'a> Analyzer<'a> {
    pub fn new(opts: &'a Options) -> Analyzer<'a> {
        Analyzer {
            opts,
            globals: Globals {
                consts: HashMap::new(),
                types: HashMap::new(),
                typedefs: HashMap::new(),
                structs: HashMap::new(),
                functions: HashMap::new(),
                dims: HashMap::new(),
            },
            model: ProgramModel { bindings: opts.bindings.clone(), ..Default::default() },
            file: String::new(),
            func: String::new(),
            locals: HashMap::new(),
            known: HashMap::new(),
            assigned: HashMap::new(),
            loop_vars: HashSet::new(),
            local_dims: HashMap::new(),
            seen_ids: HashSet::new(),
            params_seen: HashSet::new(),
            cart_arrays: HashMap::new(),
            scoped: HashMap::new(),
            scoped_log: Vec::new(),
            func_local: false,
            clock_fns: HashMap::new(),
        }
    }

    fn diag(&mut self, line: u32, message: String) {
        self.model.diagnostics.push(Diagnostic { file: self.file.clone(), line, message });
    }

    /// First pass over every unit: global constants, types, function signatures.
    pub fn declare<'u>(&mut self, units: impl Iterator<Item = &'u Unit> + Clone) {
        for u in units.clone() {
            self.model.files.push(u.file.clone());
            for (name, ty) in &u.typedefs {
                self.globals.typedefs.insert(name.clone(), ty.clone());
            }
            for (name, fields) in &u.structs {
                self.globals.structs.insert(name.clone(), fields.iter().cloned().collect());
            }
            for g in &u.globals {
                self.globals.types.insert(g.name.clone(), g.ty.clone());
                if !g.dims.is_empty() {
                    self.globals.dims.insert(g.name.clone(), g.dims.clone());
                }
            }
            for f in &u.functions {
                let single_return = match &f.body {
                    Stmt::Compound(v, _) if v.len() == 1 => match &v[0] {
                        Stmt::Return(Some(e), _) => Some(e.clone()),
                        _ => None,
                    },
                    _ => None,
                };
                self.globals.functions.insert(f.name.clone(), (f.ret.clone(), f.params.clone(), single_return));
            }
        }
        // Bodies of files parsed in parts are not here: their functions are not looked at.
        self.clock_fns = clocks::clock_functions(units.clone().flat_map(|u| u.functions.iter().map(move |f| (u.file.as_str(), f))));
        // Constants: -D bindings win; then macros, enumerators and const globals, resolved
        // against each other (a few rounds settle chains of definitions).
        let mut pending: Vec<(String, CExpr, String, u32, &str)> = Vec::new();
        for u in units {
            for (name, e, line) in &u.defines {
                pending.push((name.clone(), e.clone(), u.file.clone(), *line, "define"));
            }
            for (name, e) in super::ir::enumerators(u) {
                pending.push((name, e, u.file.clone(), 0, "enum"));
            }
            for g in &u.globals {
                if g.ty.is_const && g.ty.indirection == 0 {
                    if let Some(init) = &g.init {
                        pending.push((g.name.clone(), init.clone(), u.file.clone(), g.span.line_start, "const"));
                    }
                }
            }
        }
        for (name, v) in &self.opts.bindings {
            self.globals.consts.insert(name.clone(), num_expr(*v));
        }
        for (name, v) in mpi::CONSTANTS {
            self.globals.consts.entry(name.to_string()).or_insert(Expr::int(*v));
        }
        for _ in 0..4 {
            for (name, e, _, _, _) in &pending {
                if self.globals.consts.contains_key(name) {
                    continue;
                }
                if let Some(x) = self.const_expr(e) {
                    self.globals.consts.insert(name.clone(), x);
                }
            }
        }
    }

    /// A global constant expression (no locals).
    fn const_expr(&self, e: &CExpr) -> Option<Expr> {
        let lookup = |n: &str| self.globals.consts.get(n).cloned();
        to_expr(e, &lookup, &|_| None, 0)
    }

    pub fn finish(mut self) -> ProgramModel {
        self.compose_functions();
        self.resolve_mem_params();
        self.model
    }

    // ---- Per function ---------------------------------------------------------------------

    pub fn function(&mut self, file: &str, f: &Function) {
        self.file = file.to_string();
        self.func = f.name.clone();
        self.func_local = f.local;
        let loops = clocks::clock_loops(f, file, &self.clock_fns);
        self.model.clock_loops.extend(loops);
        self.locals.clear();
        self.known.clear();
        self.assigned.clear();
        self.loop_vars.clear();
        self.local_dims.clear();
        for p in &f.params {
            self.locals.insert(p.name.clone(), p.ty.clone());
        }
        collect_assignments(&f.body, &mut self.assigned, &mut self.locals);
        self.cart_arrays = cart_arrays(&f.body);
        for p in &f.params {
            // A parameter never reassigned is a symbol of the function.
            if !self.assigned.contains_key(&p.name) && p.ty.indirection == 0 {
                self.known.insert(p.name.clone(), Some(Expr::var(&program_symbol(&p.name))));
            }
        }
        let fid = self.block_id(f.span, BlockKind::Function);
        self.model.functions.push(FunctionSummary {
            name: f.name.clone(),
            file: file.to_string(),
            line_start: f.span.line_start,
            line_end: f.span.line_end,
            block: fid.clone(),
            params: f.params.iter().map(|p| program_symbol(&p.name)).collect(),
            recursive: false,
            ops_per_call: None,
        });
        self.push_block(fid.clone(), None, BlockKind::Function, f.span, &Ctx::default(), None, Ops::new());
        let inner = f.body.span().place.inner;
        self.set_last_site(if inner != 0 {
            Site { at: inner, compound: true, ..Site::default() }
        } else {
            Site { blocked: Some("the function body is not a compound statement".into()), ..Site::default() }
        });
        let mut seg = Segment::default();
        self.stmts(std::slice::from_ref(&f.body), &fid, &Ctx::default(), &mut seg);
        self.flush(&mut seg, &fid, &Ctx::default());
    }

    fn block_id(&mut self, sp: Span, kind: BlockKind) -> String {
        let base = format!("{}:{}:{}:{}", self.file, sp.line_start, sp.col, kind.name());
        let mut id = base.clone();
        let mut k = 2;
        let hash = |id: &str| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            id.hash(&mut h);
            h.finish()
        };
        while !self.seen_ids.insert(hash(&id)) {
            id = format!("{base}#{k}");
            k += 1;
        }
        id
    }

    /// The execution count of a block under `ctx`.
    fn count(&self, ctx: &Ctx) -> Count {
        if let Some(r) = &ctx.needs_trace {
            return Count { status: CountStatus::NeedsTrace, expr: None, value: None, reason: Some(r.clone()) };
        }
        let mut e = ctx.conds.iter().cloned().fold(Expr::int(1), Expr::mul);
        for l in ctx.loops.iter().rev() {
            e = match &l.var {
                Some((v, lo, hi)) if e.mentions(v) => expr::sum(v, lo, hi, &e),
                _ => l.trip.clone().mul(e),
            };
        }
        if ctx.proba.0 != 1.0 {
            e = e.mul(num_expr(ctx.proba.0));
        }
        self.count_of(e)
    }

    fn count_of(&self, e: Expr) -> Count {
        let bound = e.bind(&self.opts.bindings.iter().map(|(k, v)| (k.clone(), num_expr(*v))).collect());
        let value = bound.value();
        let status = if e.vars().is_empty() { CountStatus::Exact } else { CountStatus::Symbolic };
        let e = if status == CountStatus::Exact { value.map(num_expr).unwrap_or(e) } else { e };
        Count { status, expr: Some(e), value, reason: None }
    }

    #[allow(clippy::too_many_arguments)]
    fn push_block(&mut self, id: String, parent: Option<&str>, kind: BlockKind, sp: Span, ctx: &Ctx, trip: Option<Count>, mut ops: Ops) {
        let count = self.count(ctx);
        ops.shrink_to_fit();
        // Straight code that starts inside a macro's expansion (`#define BODY { acc++; }` as a
        // loop body) takes the trace point of the body it opens, when it is that body's first
        // block: both run as often.
        let inherited = match self.model.blocks.last() {
            Some(p) if sp.place.in_macro && matches!(kind, BlockKind::Straight | BlockKind::Comm) && parent == Some(p.id.as_str()) && matches!(p.kind, BlockKind::Loop | BlockKind::Branch) => {
                p.site.clone().filter(|s| s.blocked.is_none())
            }
            _ => None,
        };
        self.model.blocks.push(Block {
            id,
            parent: parent.map(str::to_string),
            kind,
            function: self.func.clone(),
            file: self.file.clone(),
            line_start: sp.line_start,
            line_end: sp.line_end,
            count,
            trip: trip.map(Box::new),
            ops,
            bytes: Some([sp.byte_start, sp.byte_end]),
            body_bytes: None,
            induction: None,
            cond: None,
            mem: Vec::new(),
            chains: Vec::new(),
            allocs: Vec::new(),
            opaque: Vec::new(),
            resource_share: None,
            entry_site: None,
            exit_misses: None,
            site: match kind {
                _ if inherited.is_some() => inherited,
                BlockKind::Branch => Some(body_site(&sp)),
                BlockKind::Straight | BlockKind::Comm => Some(Site {
                    at: sp.place.lead,
                    at_line: nonzero(sp.place.lead_line),
                    blocked: sp.place.in_macro.then(|| IN_MACRO.to_string()),
                    ..Site::default()
                }),
                BlockKind::Function | BlockKind::Loop => None,
            },
        });
    }

    fn set_last_site(&mut self, site: Site) {
        if let Some(b) = self.model.blocks.last_mut() {
            b.site = Some(site);
        }
    }

    /// The indicator (or probability) a branch arm adds to its parent's context.
    fn arm_cond(parent: &Ctx, arm: &Ctx) -> Option<Expr> {
        if (arm.needs_trace.is_some() && parent.needs_trace.is_none()) || arm.data_arms > parent.data_arms {
            return None;
        }
        let mut c = if arm.conds.len() > parent.conds.len() { arm.conds.last().cloned()? } else { Expr::int(1) };
        if arm.proba.0 != parent.proba.0 && parent.proba.0 != 0.0 {
            c = c.mul(num_expr(arm.proba.0 / parent.proba.0));
        }
        Some(c)
    }

    fn set_last_cond(&mut self, parent: &Ctx, arm: &Ctx) {
        let c = Self::arm_cond(parent, arm);
        if let Some(b) = self.model.blocks.last_mut() {
            b.cond = c.map(Box::new);
        }
    }

    // ---- Statements -----------------------------------------------------------------------

    fn stmts(&mut self, list: &[Stmt], parent: &str, ctx: &Ctx, seg: &mut Segment) {
        let mark = self.scoped_log.len();
        for (k, s) in list.iter().enumerate() {
            self.stmt(s, parent, ctx, seg);
            if let Stmt::Decl(decls, _) = s {
                self.scope_values(decls, &list[k + 1..], ctx);
            }
        }
        while self.scoped_log.len() > mark {
            let (name, old) = self.scoped_log.pop().expect("above the mark");
            match old {
                Some(v) => self.scoped.insert(name, v),
                None => self.scoped.remove(&name),
            };
        }
    }

    /// Integer scalars of `decls` whose value `rest` (the statements after them in their
    /// compound) does not change: their value for the rest of the compound (see `scoped`).
    fn scope_values(&mut self, decls: &[VarDecl], rest: &[Stmt], ctx: &Ctx) {
        let mut later: Option<HashMap<String, Vec<CExpr>>> = None;
        for d in decls {
            let Some(init) = &d.init else { continue };
            let integer = d.ty.indirection == 0 && d.dims.is_empty() && !d.ty.is_scalar_fp() && !matches!(d.ty.base, Base::Struct(_) | Base::Void | Base::Unknown);
            if !integer || cexpr_idents(init).iter().any(|i| *i == d.name) {
                continue;
            }
            let later = later.get_or_insert_with(|| {
                let mut out = HashMap::new();
                let mut locals = HashMap::new();
                for r in rest {
                    collect_assignments(r, &mut out, &mut locals);
                }
                out
            });
            if later.contains_key(&d.name) {
                continue;
            }
            let Some(v) = self.index_value(init, ctx) else { continue };
            let old = self.scoped.insert(d.name.clone(), v);
            self.scoped_log.push((d.name.clone(), old));
        }
    }

    fn stmt(&mut self, s: &Stmt, parent: &str, ctx: &Ctx, seg: &mut Segment) {
        match s {
            Stmt::Compound(v, sp) => {
                if sp.place.lead_line != 0 && seg.span.is_none() {
                    // A preprocessor conditional first in its block: the block's trace point
                    // goes before the `#if`, so that it is counted whichever arm is compiled.
                    seg.extend(Span { line_end: sp.line_start, byte_end: sp.byte_start, ..*sp });
                }
                self.stmts(v, parent, ctx, seg)
            }
            Stmt::Label(inner, _) => self.stmt(inner, parent, ctx, seg),
            Stmt::Expr(e, sp) => {
                if let Some((name, args, line)) = comm_call(e) {
                    self.flush(seg, parent, ctx);
                    self.comm_block(&name, &args, line, *sp, parent, ctx);
                } else {
                    seg.extend(*sp);
                    let mut ops = std::mem::take(&mut seg.ops);
                    self.expr_ops(e, &mut ops, false);
                    seg.ops = ops;
                    self.collect_refs(e, ctx, &mut seg.refs);
                    self.collect_chain(e, ctx, &mut seg.chains);
                    self.collect_allocs(e, &mut seg.allocs);
                    self.note_calls(e, seg);
                    // Counts start when MPI_Init returns (the trace runtime's and the static
                    // path's): what follows it starts a block of its own, entered after it.
                    if is_mpi_init(e) {
                        self.flush(seg, parent, ctx);
                    }
                }
            }
            Stmt::Decl(decls, sp) => {
                seg.extend(*sp);
                for d in decls {
                    self.locals.insert(d.name.clone(), d.ty.clone());
                    if !d.dims.is_empty() {
                        self.local_dims.insert(d.name.clone(), d.dims.clone());
                    }
                    self.collect_decl_chain(d, ctx, &mut seg.chains);
                    if let Some(init) = &d.init {
                        let mut ops = std::mem::take(&mut seg.ops);
                        let t = self.expr_ops(init, &mut ops, false);
                        conversion_op(&t, &d.ty, &mut ops);
                        seg.ops = ops;
                        self.collect_refs(init, ctx, &mut seg.refs);
                        self.collect_allocs(init, &mut seg.allocs);
                        self.note_calls(init, seg);
                    }
                }
            }
            Stmt::Return(e, sp) => {
                seg.extend(*sp);
                if let Some(e) = e {
                    let mut ops = std::mem::take(&mut seg.ops);
                    self.expr_ops(e, &mut ops, false);
                    seg.ops = ops;
                    self.collect_refs(e, ctx, &mut seg.refs);
                    self.note_calls(e, seg);
                }
            }
            Stmt::Break(sp) | Stmt::Continue(sp) | Stmt::Goto(sp) | Stmt::Empty(sp) => seg.extend(*sp),
            Stmt::If { cond, then, otherwise, span } => {
                // The condition is evaluated where the if is reached: charge it to the segment.
                seg.extend(Span { line_end: span.line_start, byte_end: span.byte_start, ..*span });
                let mut ops = std::mem::take(&mut seg.ops);
                self.expr_ops(cond, &mut ops, false);
                add_op(&mut ops, OpClass::Branch, Expr::int(1));
                seg.ops = ops;
                self.collect_refs(cond, ctx, &mut seg.refs);
                let arm_flow = seg.chains.arm();
                self.flush(seg, parent, ctx);
                let (then_ctx, else_ctx) = self.branch_ctx(cond, span.line_start, ctx);
                let tid = self.block_id(then.span(), BlockKind::Branch);
                self.push_block(tid.clone(), Some(parent), BlockKind::Branch, then.span(), &then_ctx, None, Ops::new());
                self.set_last_cond(ctx, &then_ctx);
                let mut inner = Segment { chains: arm_flow.arm_copy(), ..Segment::default() };
                self.stmt(then, &tid, &then_ctx, &mut inner);
                self.flush(&mut inner, &tid, &then_ctx);
                if let Some(o) = otherwise {
                    let eid = self.block_id(o.span(), BlockKind::Branch);
                    self.push_block(eid.clone(), Some(parent), BlockKind::Branch, o.span(), &else_ctx, None, Ops::new());
                    self.set_last_cond(ctx, &else_ctx);
                    let mut inner = Segment { chains: arm_flow, ..Segment::default() };
                    self.stmt(o, &eid, &else_ctx, &mut inner);
                    self.flush(&mut inner, &eid, &else_ctx);
                }
            }
            Stmt::For { init, cond, update, body, span } => {
                if let Some(i) = init {
                    // The init clause runs where the loop is reached: its block's statement
                    // goes before the loop (and the lines attached to it).
                    let mut i = (**i).clone();
                    if let Stmt::Expr(_, sp) | Stmt::Decl(_, sp) = &mut i {
                        sp.place = Place { lead: span.place.lead, lead_line: span.place.lead_line, in_macro: span.place.in_macro, ..sp.place };
                    }
                    self.stmt(&i, parent, ctx, seg);
                }
                self.flush(seg, parent, ctx);
                let (loop_ctx, trip, mut inner_ctx) = self.for_loop(init.as_deref(), cond.as_ref(), update.as_ref(), body, *span, ctx);
                let counted = (inner_ctx.loops.len() > ctx.loops.len()).then(|| inner_ctx.loops.last().cloned()).flatten();
                let nest = self.nest_for(init.as_deref(), cond.as_ref(), update.as_ref(), body, counted.as_ref().map(|l| l.trip.clone()), counted.and_then(|l| l.var.map(|(_, lo, hi)| (lo, hi))));
                inner_ctx.nest.push(nest);
                let mut ops = Ops::new();
                add_op(&mut ops, OpClass::LoopIter, Expr::int(1));
                if let Some(c) = cond {
                    self.expr_ops(c, &mut ops, false);
                }
                if let Some(u) = update {
                    self.expr_ops(u, &mut ops, false);
                }
                let lid = self.block_id(*span, BlockKind::Loop);
                let exit_misses = static_exit_misses(&trip, ctx);
                self.push_block(lid.clone(), Some(parent), BlockKind::Loop, *span, &loop_ctx, Some(trip), ops);
                if let Some(b) = self.model.blocks.last_mut() {
                    let bs = body.span();
                    b.body_bytes = Some([bs.byte_start, bs.byte_end]);
                    b.site = Some(body_site(&bs));
                    b.entry_site = Some(entry_site(span));
                    b.exit_misses = exit_misses;
                    if inner_ctx.loops.len() > ctx.loops.len() {
                        if let Some((v, lo, hi)) = inner_ctx.loops.last().and_then(|l| l.var.clone()) {
                            b.induction = Some(Box::new(Induction { var: v, lo, hi }));
                        }
                    }
                }
                let mut inner = Segment::default();
                self.stmt(body, &lid, &inner_ctx, &mut inner);
                self.flush(&mut inner, &lid, &inner_ctx);
                // The induction variable is a symbol only inside its loop.
                if let Some(shape) = loop_shape(init.as_deref(), cond.as_ref(), update.as_ref()) {
                    self.loop_vars.remove(&shape.var);
                }
            }
            // `do { ... } while (0)` (a statement macro's wrapper) runs its body once: the
            // compiler drops the loop, and so does the analysis.
            // Its straight code starts at the macro's use, where a trace point can go.
            Stmt::DoWhile { body, cond: CExpr::Int(0), span } => {
                seg.extend(Span { line_end: span.line_start, byte_end: span.byte_start, ..*span });
                self.stmt(body, parent, ctx, seg)
            }
            Stmt::While { cond, body, span } | Stmt::DoWhile { body, cond, span } => {
                self.flush(seg, parent, ctx);
                let what = if matches!(s, Stmt::While { .. }) { "while" } else { "do-while" };
                let reason = format!("{}:{}: {what} loop: iteration count depends on data", self.file, span.line_start);
                let mut inner_ctx = ctx.clone();
                inner_ctx.needs_trace.get_or_insert(reason.clone());
                inner_ctx.nest.push(NestLoop::default());
                let trip = Count { status: CountStatus::NeedsTrace, expr: None, value: None, reason: Some(reason) };
                let mut ops = Ops::new();
                add_op(&mut ops, OpClass::LoopIter, Expr::int(1));
                self.expr_ops(cond, &mut ops, false);
                let lid = self.block_id(*span, BlockKind::Loop);
                self.push_block(lid.clone(), Some(parent), BlockKind::Loop, *span, &inner_ctx, Some(trip), ops);
                if let Some(b) = self.model.blocks.last_mut() {
                    let bs = body.span();
                    b.body_bytes = Some([bs.byte_start, bs.byte_end]);
                    b.site = Some(body_site(&bs));
                    b.entry_site = Some(entry_site(span));
                }
                let mut inner = Segment::default();
                self.stmt(body, &lid, &inner_ctx, &mut inner);
                self.flush(&mut inner, &lid, &inner_ctx);
            }
            Stmt::Switch { cond, body, span } => {
                seg.extend(Span { line_end: span.line_start, byte_end: span.byte_start, ..*span });
                let mut ops = std::mem::take(&mut seg.ops);
                self.expr_ops(cond, &mut ops, false);
                add_op(&mut ops, OpClass::Branch, Expr::int(1));
                seg.ops = ops;
                self.flush(seg, parent, ctx);
                let cases: Vec<&Stmt> = match &**body {
                    Stmt::Compound(v, _) => v.iter().collect(),
                    other => vec![other],
                };
                for c in cases {
                    let mut case_ctx = ctx.clone();
                    let ind = match (c, self.cond_indicator(cond)) {
                        (Stmt::Case { value: Some(v), .. }, Some(_)) => {
                            let eq = CExpr::Binary { op: "==".into(), left: Box::new(cond.clone()), right: Box::new(v.clone()) };
                            self.cond_indicator(&eq)
                        }
                        _ => None,
                    };
                    match ind {
                        Some(i) => case_ctx.conds.push(i),
                        None => self.unknown_branch(&mut case_ctx, span.line_start, "switch on a value known only at run time"),
                    }
                    let cid = self.block_id(c.span(), BlockKind::Branch);
                    self.push_block(cid.clone(), Some(parent), BlockKind::Branch, c.span(), &case_ctx, None, Ops::new());
                    if let Stmt::Case { span: cs, .. } = c {
                        // After the label's colon: reached by the jump and by fall-through.
                        // A switch body without braces is a slot no statement may enter.
                        let bs = body.span().place;
                        self.set_last_site(if bs.inner == 0 || !matches!(**body, Stmt::Compound(..)) {
                            Site {
                                at: bs.lead,
                                wrap_end: Some(bs.close),
                                blocked: Some("the switch body is not a compound statement".into()),
                                ..Site::default()
                            }
                        } else if cs.place.inner != 0 {
                            Site { at: cs.place.inner, ..Site::default() }
                        } else {
                            Site { blocked: Some("no `:` after the case label".into()), ..Site::default() }
                        });
                    }
                    self.set_last_cond(ctx, &case_ctx);
                    let mut inner = Segment::default();
                    match c {
                        Stmt::Case { body, .. } => self.stmts(body, &cid, &case_ctx, &mut inner),
                        other => self.stmt(other, &cid, &case_ctx, &mut inner),
                    }
                    self.flush(&mut inner, &cid, &case_ctx);
                }
            }
            Stmt::Case { body, .. } => self.stmts(body, parent, ctx, seg),
        }
    }

    fn unknown_branch(&mut self, ctx: &mut Ctx, line: u32, what: &str) {
        if self.opts.assume_branches {
            ctx.proba = Rat1(ctx.proba.0 * 0.5);
            self.diag(line, format!("{what}: assumed taken half the time (--assume-branches)"));
        } else {
            ctx.needs_trace.get_or_insert(format!("{}:{line}: {what}", self.file));
            ctx.data_arms += 1;
        }
    }

    /// Contexts of the then and else arms.
    fn branch_ctx(&mut self, cond: &CExpr, line: u32, ctx: &Ctx) -> (Ctx, Ctx) {
        let mut t = ctx.clone();
        let mut e = ctx.clone();
        // MPICAST_PROBA(cond, p): the programmer's probability (ChronosMix's PIC_proba).
        if let CExpr::Call { func, args, .. } = cond {
            if func == "MPICAST_PROBA" && args.len() == 2 {
                if let Some(p) = self.float_const(&args[1]).filter(|p| (0.0..=1.0).contains(p)) {
                    t.proba = Rat1(t.proba.0 * p);
                    e.proba = Rat1(e.proba.0 * (1.0 - p));
                    return (t, e);
                }
                self.diag(line, "MPICAST_PROBA's probability must be a constant between 0 and 1".into());
            }
        }
        match self.cond_indicator(cond) {
            Some(i) => {
                t.conds.push(i.clone());
                e.conds.push(Expr::int(1).sub(i));
            }
            None => {
                let text = cexpr_text(cond);
                self.unknown_branch(&mut t, line, &format!("branch on {text}"));
                self.unknown_branch(&mut e, line, &format!("branch on {text}"));
            }
        }
        (t, e)
    }

    fn float_const(&mut self, e: &CExpr) -> Option<f64> {
        match e {
            CExpr::Float { value, .. } => Some(*value),
            other => self.value_expr(other).and_then(|x| x.value()),
        }
    }

    // ---- Loops ----------------------------------------------------------------------------

    /// Returns (context of the loop block itself, trip count, context of its body).
    fn for_loop(&mut self, init: Option<&Stmt>, cond: Option<&CExpr>, update: Option<&CExpr>, body: &Stmt, sp: Span, ctx: &Ctx) -> (Ctx, Count, Ctx) {
        let fail = |this: &mut Self, why: String| {
            let reason = format!("{}:{}: {why}", this.file, sp.line_start);
            let mut c = ctx.clone();
            c.needs_trace.get_or_insert(reason.clone());
            let trip = Count { status: CountStatus::NeedsTrace, expr: None, value: None, reason: Some(reason) };
            (c.clone(), trip, c)
        };
        let Some(shape) = loop_shape(init, cond, update) else {
            let text = cond.map(cexpr_text).unwrap_or_else(|| "(none)".into());
            return fail(self, format!("loop shape not recognised (condition {text})"));
        };
        if let Some(why) = body_escapes(body) {
            return fail(self, why);
        }
        let modified = modified_vars(body);
        if modified.contains(&shape.var) {
            return fail(self, format!("loop variable {} is modified in the body", shape.var));
        }
        let Some(start) = self.value_expr(&shape.start) else {
            return fail(self, format!("loop start {} is not known before running", cexpr_text(&shape.start)));
        };
        let Some(bound) = self.value_expr(&shape.bound) else {
            return fail(self, format!("loop bound {} is not known before running", cexpr_text(&shape.bound)));
        };
        if let Some(v) = cexpr_idents(&shape.bound).into_iter().find(|v| modified.contains(v)) {
            return fail(self, format!("loop bound variable {v} is modified in the body"));
        }
        let one = || Expr::int(1);
        let (trip, range) = match shape.step {
            Step::Add(s) if s > 0 => {
                let (hi, span_e) = match shape.cmp.as_str() {
                    "<" => (bound.clone().sub(one()), bound.clone().sub(start.clone())),
                    "<=" => (bound.clone(), bound.clone().sub(start.clone()).add(one())),
                    "!=" if s == 1 => (bound.clone().sub(one()), bound.clone().sub(start.clone())),
                    _ => return fail(self, format!("loop counts up but tests {}", shape.cmp)),
                };
                let trip = Expr::clamp0(Expr::ceil_div(span_e, Expr::int(s as i128)));
                let range = if s == 1 { Some((start.clone(), hi)) } else { None };
                (trip, range)
            }
            Step::Add(s) if s < 0 => {
                let s = -s;
                let (lo, span_e) = match shape.cmp.as_str() {
                    ">" => (bound.clone().add(one()), start.clone().sub(bound.clone())),
                    ">=" => (bound.clone(), start.clone().sub(bound.clone()).add(one())),
                    "!=" if s == 1 => (bound.clone().add(one()), start.clone().sub(bound.clone())),
                    _ => return fail(self, format!("loop counts down but tests {}", shape.cmp)),
                };
                let trip = Expr::clamp0(Expr::ceil_div(span_e, Expr::int(s as i128)));
                let range = if s == 1 { Some((lo, start.clone())) } else { None };
                (trip, range)
            }
            Step::Mul(f) if f >= 2 && (shape.cmp == "<" || shape.cmp == "<=") => {
                let b = if shape.cmp == "<=" { bound.clone().add(one()) } else { bound.clone() };
                (Expr::LogCount { start: std::sync::Arc::new(start.clone()), bound: std::sync::Arc::new(b), factor: f }, None)
            }
            Step::Div(f) if f >= 2 && (shape.cmp == ">" || shape.cmp == ">=") => {
                // i = start; i > b; i /= f runs while (b+1) f^k <= start: logcount(b+1, start+1, f).
                let b1 = if shape.cmp == ">" { bound.clone().add(one()) } else { bound.clone() };
                (Expr::LogCount { start: std::sync::Arc::new(b1), bound: std::sync::Arc::new(start.clone().add(one())), factor: f }, None)
            }
            Step::AddBy(ref x) => {
                // A loop counting up by a value (`i += size`); its sign is taken as positive,
                // as a loop testing `<` needs.
                if let Some(v) = cexpr_idents(x).into_iter().find(|v| modified.contains(v)) {
                    return fail(self, format!("loop step variable {v} is modified in the body"));
                }
                let Some(s) = self.value_expr(x) else {
                    return fail(self, format!("loop step {} is not known before running", cexpr_text(x)));
                };
                let span_e = match shape.cmp.as_str() {
                    "<" => bound.clone().sub(start.clone()),
                    "<=" => bound.clone().sub(start.clone()).add(one()),
                    _ => return fail(self, format!("loop counts up by {} but tests {}", cexpr_text(x), shape.cmp)),
                };
                (Expr::clamp0(Expr::ceil_div(span_e, s)), None)
            }
            _ => return fail(self, "loop step not recognised".into()),
        };
        let mut body_ctx = ctx.clone();
        body_ctx.loops.push(LoopCtx { var: range.map(|(lo, hi)| (program_symbol(&shape.var), lo, hi)), trip: trip.clone() });
        self.loop_vars.insert(shape.var.clone());
        // The trip count relative to one entry of the loop (may depend on outer loop variables).
        let trip_count = self.count_of(trip);
        (body_ctx.clone(), trip_count, body_ctx)
    }

    // ---- Values ---------------------------------------------------------------------------

    /// The integer value of an expression in terms of parameters, rank, size and loop
    /// variables; None when it depends on data.
    fn value_expr(&mut self, e: &CExpr) -> Option<Expr> {
        let mut visiting = HashSet::new();
        self.value_expr_in(e, &mut visiting, 0)
    }

    fn value_expr_in(&mut self, e: &CExpr, visiting: &mut HashSet<String>, depth: usize) -> Option<Expr> {
        if depth > 32 {
            return None;
        }
        // Resolve identifiers first (needs &mut self), then convert.
        let mut env: HashMap<String, Expr> = HashMap::new();
        let mut calls: HashMap<String, Expr> = HashMap::new();
        for id in cexpr_idents(e) {
            if let Some(v) = self.ident_value(&id, visiting, depth) {
                env.insert(id, v);
            }
        }
        for (arr, idx) in cexpr_const_indexes(e) {
            if let Some(prefix) = self.cart_arrays.get(&arr) {
                env.insert(format!("{arr}[{idx}]"), Expr::var(&format!("{prefix}{idx}")));
            }
        }
        for (i, c) in cexpr_calls(e).into_iter().enumerate() {
            if let Some(v) = self.call_value(&c, visiting, depth) {
                calls.insert(format!("{i}"), v);
                calls.insert(cexpr_text(&c), v_clone(&calls, i));
            }
        }
        let lookup = |n: &str| env.get(n).cloned();
        let call_lookup = |c: &CExpr| calls.get(&cexpr_text(c)).cloned();
        to_expr(e, &lookup, &call_lookup, 0)
    }

    fn ident_value(&mut self, id: &str, visiting: &mut HashSet<String>, depth: usize) -> Option<Expr> {
        if self.loop_vars.contains(id) {
            // Inside its own loop (for_loop checked that the body does not write it).
            return Some(Expr::var(&program_symbol(id)));
        }
        if let Some(v) = self.scoped.get(id) {
            return Some(v.clone());
        }
        if let Some(v) = self.opts.bindings.get(id) {
            if !self.locals.contains_key(id) || self.is_param(id) {
                return Some(num_expr(*v));
            }
        }
        if let Some(k) = self.known.get(id) {
            return k.clone();
        }
        if self.locals.contains_key(id) {
            if visiting.contains(id) {
                return None;
            }
            let mut assigns = self.assigned.get(id).cloned().unwrap_or_default();
            // `n = 10000; MPI_Bcast(&n, ...)`: every rank gets the root's value, which is the
            // other assignments' where they do not depend on the rank.
            let is_bcast = |a: &CExpr| matches!(a, CExpr::Call { func, .. } if func == BCAST_OUT);
            let bcast = assigns.iter().any(is_bcast);
            assigns.retain(|a| !is_bcast(a));
            visiting.insert(id.to_string());
            let v = self.assigns_value(id, &assigns, visiting, depth).filter(|e| !bcast || !e.mentions("rank"));
            visiting.remove(id);
            self.known.insert(id.to_string(), v.clone());
            return v;
        }
        self.globals.consts.get(id).cloned()
    }

    /// A local's value from its assignments: one assignment's value, or a parameter where a
    /// constant is followed by a read of the command line.
    fn assigns_value(&mut self, id: &str, assigns: &[CExpr], visiting: &mut HashSet<String>, depth: usize) -> Option<Expr> {
        if let Some((index, default)) = argv_after_default(assigns) {
            // `int size = 0; sscanf(argv[1], "%d", &size);`, `n = 100; if (argc > 1) n =
            // atoi(argv[1]);`: a parameter with that default.
            self.add_parameter(&program_symbol(id), "argv", Some(index), Some(default));
            return Some(self.opts.bindings.get(id).map_or_else(|| Expr::var(&program_symbol(id)), |v| num_expr(*v)));
        }
        match assigns {
            [one] => self.assignment_value(id, one, visiting, depth + 1),
            _ => None,
        }
    }

    /// Whether a communicator argument is the world: MPI_COMM_WORLD, a local that only ever
    /// holds it, or a name the function never assigns (a parameter or a global: taken as the
    /// world); not a local that a split, a duplicate or a call wrote, nor `*comm`.
    fn comm_is_world(&self, arg: Option<&CExpr>) -> bool {
        let world = |e: &CExpr| matches!(strip_casts(e), CExpr::Ident(n) if n == "MPI_COMM_WORLD");
        match arg.map(strip_casts) {
            None => true,
            Some(CExpr::Ident(n)) if n == "MPI_COMM_WORLD" => true,
            Some(CExpr::Ident(n)) => self.assigned.get(n).is_none_or(|a| a.iter().all(world)),
            Some(_) => false,
        }
    }

    fn is_param(&self, id: &str) -> bool {
        self.params_seen.contains(&program_symbol(id))
    }

    /// The value a local receives from its single assignment: a parameter when it is read from
    /// the command line, rank/size from MPI, else the assigned expression's value.
    fn assignment_value(&mut self, var: &str, rhs: &CExpr, visiting: &mut HashSet<String>, depth: usize) -> Option<Expr> {
        match rhs {
            // The world's rank and size; on another communicator (a split, a duplicate, one a
            // test harness hands out) the program's own variable, which the static path
            // evaluates.
            CExpr::Call { func, args, .. } if func == "MPI_Comm_rank(out)" || func == "MPI_Comm_size(out)" => {
                let world = if func.starts_with("MPI_Comm_rank") { "rank" } else { "size" };
                return Some(Expr::var(&if self.comm_is_world(args.first()) { world.to_string() } else { program_symbol(var) }));
            }
            CExpr::Call { func, args, .. } if func == "P2Prank" && args.is_empty() => return Some(Expr::var("rank")),
            CExpr::Call { func, args, .. } if func == "P2Psize" && args.is_empty() => return Some(Expr::var("size")),
            _ => {}
        }
        if let Some((index, default)) = argv_read(rhs) {
            let default = default.and_then(|d| self.value_expr(&d)).and_then(|d| d.value());
            self.add_parameter(&program_symbol(var), "argv", Some(index), default);
            if let Some(v) = self.opts.bindings.get(var) {
                return Some(num_expr(*v));
            }
            return Some(Expr::var(&program_symbol(var)));
        }
        let stripped = strip_casts(rhs);
        self.value_expr_in(stripped, visiting, depth)
    }

    fn add_parameter(&mut self, name: &str, origin: &str, argv_index: Option<u32>, default: Option<f64>) {
        if self.params_seen.insert(name.to_string()) {
            let line = 0;
            self.model.parameters.push(Parameter {
                name: name.to_string(),
                origin: origin.to_string(),
                argv_index,
                default,
                file: self.file.clone(),
                line,
            });
        }
    }

    /// Value of a call to one of the program's own one-line functions (`return expr;`).
    fn call_value(&mut self, c: &CExpr, visiting: &mut HashSet<String>, depth: usize) -> Option<Expr> {
        let CExpr::Call { func, args, .. } = c else { return None };
        let (_, params, ret) = self.globals.functions.get(func)?.clone();
        let ret = ret?;
        if params.len() != args.len() || visiting.contains(func) {
            return None;
        }
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.value_expr_in(a, visiting, depth + 1)?);
        }
        // Convert the body with the parameters as fresh variables, then substitute.
        let names: Vec<String> = params.iter().map(|p| format!("mpicast_arg_{}", p.name)).collect();
        let lookup = |n: &str| {
            params.iter().position(|p| p.name == n).map(|i| Expr::var(&names[i])).or_else(|| self.globals.consts.get(n).cloned())
        };
        let body = to_expr(&ret, &lookup, &|_| None, 0)?;
        let mut out = body;
        for (n, v) in names.iter().zip(vals) {
            out = out.subst(n, &v);
        }
        Some(out)
    }

    /// A branch condition as a 0/1 indicator formula, when it does not depend on data.
    fn cond_indicator(&mut self, c: &CExpr) -> Option<Expr> {
        match c {
            CExpr::Binary { op, left, right } => match op.as_str() {
                "&&" => Some(self.cond_indicator(left)?.mul(self.cond_indicator(right)?)),
                "||" => {
                    let (a, b) = (self.cond_indicator(left)?, self.cond_indicator(right)?);
                    Some(a.clone().add(b.clone()).sub(a.mul(b)))
                }
                "<" | "<=" | ">" | ">=" | "==" | "!=" => {
                    let (a, b) = (self.value_expr(left)?, self.value_expr(right)?);
                    Some(compare(op, a, b))
                }
                _ => {
                    let v = self.value_expr(c)?;
                    Some(Expr::int(1).sub(compare("==", v, Expr::int(0))))
                }
            },
            CExpr::Unary { op, arg } if op == "!" => Some(Expr::int(1).sub(self.cond_indicator(arg)?)),
            other => {
                let v = self.value_expr(other)?;
                Some(Expr::int(1).sub(compare("==", v, Expr::int(0))))
            }
        }
    }

    // ---- Ops ------------------------------------------------------------------------------

    fn resolve(&self, t: &CType) -> CType {
        let mut t = t.clone();
        for _ in 0..8 {
            if let Base::Named(n) = &t.base {
                if let Some(td) = self.globals.typedefs.get(n) {
                    let ind = t.indirection;
                    t = CType { base: td.base.clone(), indirection: td.indirection + ind, is_const: t.is_const, width: td.width, unsigned: td.unsigned };
                    continue;
                }
                t.base = match n.as_str() {
                    "size_t" | "ssize_t" | "int64_t" | "uint64_t" | "int32_t" | "uint32_t" | "uint8_t" | "int8_t"
                    | "uint16_t" | "int16_t" | "MPI_Comm" | "MPI_Datatype" | "MPI_Request" | "bool" => Base::Int,
                    _ => Base::Named(n.clone()),
                };
            }
            break;
        }
        t
    }

    fn var_type(&self, name: &str) -> CType {
        let t = self.locals.get(name).or_else(|| self.globals.types.get(name)).cloned();
        match t {
            Some(t) => self.resolve(&t),
            None if self.globals.consts.contains_key(name) => CType::int(),
            None => CType::unknown(),
        }
    }

    /// Adds the ops of evaluating `e` and returns its type. `lvalue`: e is being written.
    fn expr_ops(&mut self, e: &CExpr, ops: &mut Ops, lvalue: bool) -> CType {
        match e {
            CExpr::Ident(n) => self.var_type(n),
            CExpr::Int(_) => CType::int(),
            CExpr::Float { single, .. } => CType::new(if *single { Base::Float } else { Base::Double }),
            CExpr::Str(_) => CType { base: Base::Int, indirection: 1, is_const: true, width: 1, unsigned: false },
            CExpr::Binary { op, left, right } => {
                let lt = self.expr_ops(left, ops, false);
                let rt = self.expr_ops(right, ops, false);
                if lt.indirection > 0 || rt.indirection > 0 {
                    if matches!(op.as_str(), "+" | "-") {
                        add_op(ops, OpClass::IntAdd, Expr::int(1));
                        return if lt.indirection > 0 { lt } else { rt };
                    }
                }
                let t = arith(&lt, &rt);
                if t.is_scalar_fp() && (lt.is_scalar_fp() != rt.is_scalar_fp()) {
                    add_op(ops, OpClass::IntToFp, Expr::int(1));
                }
                match op.as_str() {
                    "<" | "<=" | ">" | ">=" | "==" | "!=" => {
                        add_op(ops, if t.is_scalar_fp() { OpClass::FpCmp } else { OpClass::IntCmp }, Expr::int(1));
                        return CType::int();
                    }
                    "&&" | "||" => {
                        add_op(ops, OpClass::Branch, Expr::int(1));
                        return CType::int();
                    }
                    _ => {}
                }
                add_op(ops, arith_class(op, &t), Expr::int(1));
                t
            }
            CExpr::Unary { op, arg } => {
                let t = self.expr_ops(arg, ops, false);
                match op.as_str() {
                    "-" => add_op(ops, arith_class("-", &t), Expr::int(1)),
                    "!" | "~" => add_op(ops, OpClass::IntLogic, Expr::int(1)),
                    _ => {}
                }
                if op == "!" {
                    CType::int()
                } else {
                    t
                }
            }
            CExpr::Update { arg, .. } => {
                let t = self.expr_ops(arg, ops, false);
                self.lvalue_write(arg, ops);
                let class = if t.indirection > 0 { OpClass::IntAdd } else { fp_class(&t, OpClass::IntAdd, OpClass::FloatAdd, OpClass::DoubleAdd) };
                add_op(ops, class, Expr::int(1));
                t
            }
            CExpr::Assign { op, left, right } => {
                let rt = self.expr_ops(right, ops, false);
                let lt = if op == "=" { self.lvalue_type(left, ops) } else { self.expr_ops(left, ops, false) };
                self.lvalue_write(left, ops);
                if op != "=" {
                    add_op(ops, arith_class(op.trim_end_matches('='), &arith(&lt, &rt)), Expr::int(1));
                }
                conversion_op(&rt, &lt, ops);
                lt
            }
            CExpr::Call { func, args, .. } => self.call_ops(func, args, ops),
            CExpr::Index { array, index, .. } => {
                let at = self.expr_ops(array, ops, false);
                self.expr_ops(index, ops, false);
                if !lvalue {
                    add_op(ops, OpClass::Load, Expr::int(1));
                }
                at.deref()
            }
            CExpr::Field { base, field, arrow } => {
                let bt = self.expr_ops(base, ops, false);
                if *arrow && !lvalue {
                    add_op(ops, OpClass::PtrDeref, Expr::int(1));
                }
                match &bt.base {
                    Base::Struct(s) => self.globals.structs.get(s).and_then(|f| f.get(field)).map(|t| self.resolve(t)).unwrap_or(CType::unknown()),
                    _ => CType::unknown(),
                }
            }
            CExpr::Deref(a) => {
                let t = self.expr_ops(a, ops, false);
                if !lvalue {
                    add_op(ops, OpClass::PtrDeref, Expr::int(1));
                }
                t.deref()
            }
            CExpr::AddrOf(a) => {
                let mut t = self.lvalue_type(a, ops);
                t.indirection += 1;
                t
            }
            CExpr::Cast { ty, value } => {
                let vt = self.expr_ops(value, ops, false);
                let ty = self.resolve(ty);
                conversion_op(&vt, &ty, ops);
                ty
            }
            CExpr::Cond { cond, then, otherwise } => {
                self.expr_ops(cond, ops, false);
                add_op(ops, OpClass::Branch, Expr::int(1));
                // Both arms are counted at half weight: one of them runs.
                let mut a = Ops::new();
                let t = self.expr_ops(then, &mut a, false);
                self.expr_ops(otherwise, &mut a, false);
                for (c, n) in a {
                    add_op(ops, c, n.mul(Expr::rat(Rat::new(1, 2))));
                }
                t
            }
            CExpr::Sizeof { .. } => CType::int(),
            CExpr::Comma(a, b) => {
                self.expr_ops(a, ops, false);
                self.expr_ops(b, ops, false)
            }
            CExpr::InitList(v) => {
                for x in v {
                    self.expr_ops(x, ops, false);
                    add_op(ops, OpClass::Store, Expr::int(1));
                }
                CType::unknown()
            }
            CExpr::Unknown(_) => CType::unknown(),
        }
    }

    /// Ops of computing an lvalue's address (its subscripts), and its type.
    fn lvalue_type(&mut self, e: &CExpr, ops: &mut Ops) -> CType {
        self.expr_ops(e, ops, true)
    }

    fn lvalue_write(&mut self, e: &CExpr, ops: &mut Ops) {
        if matches!(e, CExpr::Index { .. } | CExpr::Deref(_) | CExpr::Field { arrow: true, .. }) {
            add_op(ops, OpClass::Store, Expr::int(1));
        }
    }

    fn call_ops(&mut self, func: &str, args: &[CExpr], ops: &mut Ops) -> CType {
        let mut arg_types = Vec::new();
        let skip_args = func == "MPICAST_PROBA";
        for a in args {
            if skip_args {
                break;
            }
            arg_types.push(self.expr_ops(a, ops, false));
        }
        if func == "MPICAST_PROBA" {
            if let Some(c) = args.first() {
                self.expr_ops(c, ops, false);
            }
            return CType::int();
        }
        let single = func.ends_with('f') && func.len() > 3;
        let fp = CType::new(if single { Base::Float } else { Base::Double });
        if let Some(c) = libm_class(func) {
            add_op(ops, c, Expr::int(1));
            return fp;
        }
        let user_defined = self.globals.functions.contains_key(func);
        if mpi::makes_comm(func) && !user_defined {
            let colour = args.get(1).map(cexpr_text);
            add_op(ops, mpi::ctor_op(func, colour.as_deref()), Expr::int(1));
            return CType::int();
        }
        match func {
            "abs" | "labs" => {
                add_op(ops, OpClass::Fabs, Expr::int(1));
                return CType::int();
            }
            "rand" | "random" | "rand_r" => {
                add_op(ops, OpClass::Rand, Expr::int(1));
                return CType::int();
            }
            // The C library's, unless the program defines a function of that name.
            "malloc" | "calloc" | "realloc" | "free" | "aligned_alloc" | "posix_memalign" if !user_defined => {
                add_op(ops, OpClass::Alloc, Expr::int(1));
                return match func {
                    "free" => CType::new(Base::Void),
                    "posix_memalign" => CType::int(),
                    _ => CType { indirection: 1, ..CType::new(Base::Void) },
                };
            }
            "printf" | "fprintf" | "sprintf" | "snprintf" | "dprintf" | "puts" | "fputs" if !user_defined => {
                add_op(ops, OpClass::PrintCall, Expr::int(1));
                let format_at = match func {
                    "printf" => Some(0),
                    "fprintf" | "sprintf" | "dprintf" => Some(1),
                    "snprintf" => Some(2),
                    _ => None,
                };
                if let Some(at) = format_at {
                    let (ints, fps) = match args.get(at) {
                        Some(CExpr::Str(format)) => format_conversions(format),
                        // A format not known before running: every argument after it is
                        // taken as one integer conversion.
                        _ => (args.len().saturating_sub(at + 1) as i128, 0),
                    };
                    if ints > 0 {
                        add_op(ops, OpClass::PrintInt, Expr::int(ints));
                    }
                    if fps > 0 {
                        add_op(ops, OpClass::PrintFp, Expr::int(fps));
                    }
                }
                return CType::int();
            }
            "fwrite" | "write" if !user_defined => {
                // fwrite(ptr, size, count, file); write(fd, buf, bytes).
                let n = if func == "fwrite" {
                    match (args.get(1).and_then(|a| self.byte_count(a)), args.get(2).and_then(|a| self.value_expr(a))) {
                        (Some(size), Some(count)) => Some(size.mul(count)),
                        _ => None,
                    }
                } else {
                    args.get(2).and_then(|a| self.byte_count(a))
                };
                let n = n.unwrap_or_else(|| {
                    self.diag(args.first().map_or(0, CExpr::line_hint), format!("{func} size not known before running; counted as one byte"));
                    Expr::int(1)
                });
                add_op(ops, OpClass::WriteByte, n);
                return CType::int();
            }
            "memcpy" | "memmove" | "memset" => {
                let class = if func == "memset" { OpClass::MemsetByte } else { OpClass::MemcpyByte };
                let n = args.get(2).and_then(|a| self.byte_count(a)).unwrap_or(Expr::int(1));
                if n.is_one() && args.len() == 3 {
                    self.diag(args[2].line_hint(), format!("{func} size {} not known before running; counted as one byte", cexpr_text(&args[2])));
                }
                add_op(ops, class, n);
                return CType { indirection: 1, ..CType::new(Base::Void) };
            }
            _ => {}
        }
        if let Some((ret, _, _)) = self.globals.functions.get(func) {
            add_op(ops, OpClass::Call, Expr::int(1));
            return self.resolve(&ret.clone());
        }
        if !mpi::is_mpi_bookkeeping(func) {
            *self.model.external_calls.entry(func.to_string()).or_insert(0) += 1;
            add_op(ops, OpClass::Call, Expr::int(1));
        }
        match func {
            "MPI_Wtime" | "atof" | "strtod" | "drand48" | "erand48" => CType::double(),
            "malloc" | "calloc" | "realloc" => CType { indirection: 1, ..CType::new(Base::Void) },
            _ => CType::int(),
        }
    }

    /// A byte count such as `n * sizeof(double)` as a formula.
    fn byte_count(&mut self, e: &CExpr) -> Option<Expr> {
        let sized = self.replace_sizeof(e);
        self.value_expr(&sized)
    }

    fn replace_sizeof(&self, e: &CExpr) -> CExpr {
        match e {
            CExpr::Sizeof { ty, value } => {
                let t = match (ty, value) {
                    (Some(t), _) => self.resolve(t),
                    (None, Some(v)) => self.static_type(v),
                    _ => CType::unknown(),
                };
                CExpr::Int(type_size(&t))
            }
            CExpr::Binary { op, left, right } => CExpr::Binary {
                op: op.clone(),
                left: Box::new(self.replace_sizeof(left)),
                right: Box::new(self.replace_sizeof(right)),
            },
            CExpr::Cast { value, .. } => self.replace_sizeof(value),
            other => other.clone(),
        }
    }

    /// Type of an expression without counting ops.
    fn static_type(&self, e: &CExpr) -> CType {
        match e {
            CExpr::Ident(n) => self.var_type(n),
            CExpr::Deref(a) => self.static_type(a).deref(),
            CExpr::Index { array, .. } => self.static_type(array).deref(),
            CExpr::Float { single: true, .. } => CType::new(Base::Float),
            CExpr::Float { .. } => CType::double(),
            _ => CType::int(),
        }
    }

    /// Records calls to the program's own functions made from the current segment, and the
    /// calls into code the analysis does not see that a traced run can time.
    fn note_calls(&mut self, e: &CExpr, seg: &mut Segment) {
        self.opaque_calls(e, false, &mut seg.opaque);
        for c in cexpr_calls(e) {
            if let CExpr::Call { func, line, args, .. } = c {
                if self.globals.functions.contains_key(&func) {
                    let vals = args.iter().map(|a| self.value_expr(a)).collect();
                    seg.calls.push((func, line, vals));
                }
            }
        }
    }

    /// The calls in `e` into code the analysis does not see, where written as a plain name
    /// (not inside a macro's expansion), that run every time `e` does (not an operand of `?:`,
    /// `&&` or `||`), and whose time is their own: none of their arguments is or calls a
    /// function of the program (a callback, `qsort(..., cmp)`, runs counted code). The calls
    /// the op classes cost (libm, rand, malloc, printf, memcpy, fwrite), MPI's, clocks, and
    /// those that need not return (exit, longjmp) or do not stay apart from their caller
    /// (setjmp, alloca, va_start) are not among them; nor are calls through a variable (a
    /// function pointer: `upfun = algo->upfun; upfun(...)` may run the program's code) and
    /// names in capitals (macros by convention; the lowering leaves known function-like
    /// macros without a place). The arguments of a call that is not timed are searched in its place.
    fn opaque_calls(&self, e: &CExpr, conditional: bool, out: &mut Vec<OpaqueCall>) {
        match e {
            CExpr::Call { func, args, at: At(Some((s, t))), .. } if !conditional && self.timeable(func, args) => {
                out.push(OpaqueCall { func: func.clone(), at: [*s, *t], ns: None });
            }
            CExpr::Cond { cond, then, otherwise } => {
                self.opaque_calls(cond, conditional, out);
                self.opaque_calls(then, true, out);
                self.opaque_calls(otherwise, true, out);
            }
            CExpr::Binary { op, left, right } if op == "&&" || op == "||" => {
                self.opaque_calls(left, conditional, out);
                self.opaque_calls(right, true, out);
            }
            other => {
                for c in children(other) {
                    self.opaque_calls(c, conditional, out);
                }
            }
        }
    }

    fn timeable(&self, func: &str, args: &[CExpr]) -> bool {
        const NOT_TIMED: &[&str] = &[
            "abs", "labs", "rand", "random", "rand_r", "malloc", "calloc", "realloc", "free", "aligned_alloc",
            "posix_memalign", "printf", "fprintf", "sprintf", "snprintf", "dprintf", "puts", "fputs", "fwrite",
            "write", "memcpy", "memmove", "memset", "exit", "_exit", "_Exit", "abort", "quick_exit", "longjmp",
            "siglongjmp", "_longjmp", "setjmp", "sigsetjmp", "_setjmp", "fork", "vfork", "pthread_exit", "alloca",
            "va_start", "va_end", "va_arg", "va_copy", "assert", "clock", "time", "gettimeofday", "clock_gettime",
            "omp_get_wtime", "MPICAST_PROBA",
            // A few instructions, often inlined: a call op is nearer than a timing.
            "fmin", "fmax", "fminf", "fmaxf", "copysign", "copysignf", "fma", "fmaf", "fdim", "isnan", "isinf",
            "isfinite", "signbit", "rint", "lrint", "nearbyint", "lround", "llround", "truncf", "ldexp", "frexp",
            "modf", "toupper", "tolower", "isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower",
            "isxdigit", "ispunct", "htonl", "htons", "ntohl", "ntohs",
        ];
        let name_ok = func.bytes().next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
            && func.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
            && func.bytes().any(|c| c.is_ascii_lowercase());
        if !name_ok
            || self.globals.functions.contains_key(func)
            || self.locals.contains_key(func)
            || self.globals.types.contains_key(func)
            || NOT_TIMED.contains(&func)
            || func.starts_with("__builtin")
            || func.starts_with("exec")
            || func.starts_with("P2P")
            || mpi::is_mpi_bookkeeping(func)
            || libm_class(func).is_some()
        {
            return false;
        }
        let mut runs_program = false;
        for a in args {
            visit(a, &mut |x| match x {
                CExpr::Ident(n) | CExpr::Call { func: n, .. } => runs_program |= self.globals.functions.contains_key(n),
                CExpr::Unknown(t) => runs_program |= t.trim_start().starts_with('['),
                _ => {}
            });
        }
        !runs_program
    }

    // ---- Blocks ---------------------------------------------------------------------------

    fn flush(&mut self, seg: &mut Segment, parent: &str, ctx: &Ctx) {
        let Some(sp) = seg.span else { return };
        let id = self.block_id(sp, BlockKind::Straight);
        let ops = std::mem::take(&mut seg.ops);
        self.push_block(id.clone(), Some(parent), BlockKind::Straight, sp, ctx, None, ops);
        let refs = self.mem_refs(std::mem::take(&mut seg.refs), ctx);
        if let Some(b) = self.model.blocks.last_mut() {
            b.mem = refs;
            b.chains = chains::finish(std::mem::take(&mut seg.chains));
            b.allocs = std::mem::take(&mut seg.allocs);
            b.opaque = std::mem::take(&mut seg.opaque);
        }
        for (callee, line, args) in seg.calls.drain(..) {
            self.model.calls.push(CallSite { block: id.clone(), caller: self.func.clone(), callee, file: self.file.clone(), line, args });
        }
        seg.span = None;
    }

    fn comm_block(&mut self, name: &str, args: &[CExpr], line: u32, sp: Span, parent: &str, ctx: &Ctx) {
        let id = self.block_id(sp, BlockKind::Comm);
        // A constructor's own work is an op of its block (MPI_Comm_split, MPI_Cart_create).
        let mut ops = Ops::new();
        if mpi::makes_comm(name) {
            let colour = args.get(1).map(cexpr_text);
            add_op(&mut ops, mpi::ctor_op(name, colour.as_deref()), Expr::int(1));
        }
        self.push_block(id.clone(), Some(parent), BlockKind::Comm, sp, ctx, None, ops);
        let sig = mpi::comm_signature(name);
        let text = |i: Option<usize>| i.and_then(|i| args.get(i)).map(cexpr_text);
        let (peer, peer_expr, bytes, size_text, tag, root, comm) = match sig {
            Some(s) => {
                let peer_expr = s.peer.and_then(|i| args.get(i)).and_then(|a| self.value_expr(a));
                let bytes = match (s.count.and_then(|i| args.get(i)), s.datatype.and_then(|i| args.get(i))) {
                    (Some(c), Some(dt)) if !name.starts_with("P2P") => match (self.value_expr(c), self.datatype_bytes(dt, 0)) {
                        (Some(n), Some(sz)) => Some(n.mul(sz)),
                        _ => None,
                    },
                    (Some(c), None) if name.starts_with("P2P") => self.byte_count(c),
                    _ => None,
                };
                let size_text = match (text(s.count), text(s.datatype)) {
                    (Some(c), Some(d)) => Some(format!("{c} x {d}")),
                    (Some(c), None) => Some(c),
                    _ => None,
                };
                (text(s.peer), peer_expr, bytes, size_text, text(s.tag), text(s.root), text(s.comm))
            }
            None => (None, None, None, None, None, None, None),
        };
        let arg_values = args.iter().map(|a| self.value_expr(a)).collect();
        let mut arg_lists = BTreeMap::new();
        for (i, a) in args.iter().enumerate() {
            let array = match a {
                CExpr::Ident(n) => Some(n),
                CExpr::Index { array, .. } => match &**array {
                    CExpr::Ident(n) => Some(n),
                    _ => None,
                },
                _ => None,
            };
            if let Some(n) = array {
                if let Some([CExpr::InitList(v)]) = self.assigned.get(n).map(|v| v.as_slice()) {
                    let v = v.clone();
                    arg_lists.insert(i as u32, v.iter().map(|x| self.value_expr(x)).collect());
                }
            }
        }
        self.model.comm.push(CommSite {
            block: id,
            arg_values,
            arg_lists,
            call: name.to_string(),
            file: self.file.clone(),
            line,
            peer,
            peer_expr,
            bytes,
            size_text,
            tag,
            root,
            comm,
            args: args.iter().map(cexpr_text).collect(),
        });
    }

    /// Bytes of one element of an MPI datatype: predefined ones, and locals built with
    /// MPI_Type_contiguous or MPI_Type_vector from types whose size is known.
    fn datatype_bytes(&mut self, dt: &CExpr, depth: usize) -> Option<Expr> {
        let CExpr::Ident(name) = dt else { return None };
        if let Some(sz) = mpi::datatype_size(name) {
            return Some(Expr::int(sz));
        }
        if depth > 8 {
            return None;
        }
        let def = match self.assigned.get(name).map(|v| v.as_slice()) {
            Some([CExpr::Call { func, args, .. }]) => (func.clone(), args.clone()),
            _ => return None,
        };
        match (def.0.as_str(), def.1.as_slice()) {
            ("MPI_Type_contiguous(out)", [count, old, ..]) => Some(self.value_expr(count)?.mul(self.datatype_bytes(old, depth + 1)?)),
            ("MPI_Type_vector(out)", [count, blocklen, _stride, old, ..]) => {
                let n = self.value_expr(count)?.mul(self.value_expr(blocklen)?);
                Some(n.mul(self.datatype_bytes(old, depth + 1)?))
            }
            _ => None,
        }
    }

    // ---- Interprocedural ------------------------------------------------------------------

    /// Ops per call of each function including its callees; flags recursion.
    fn compose_functions(&mut self) {
        let names: Vec<String> = self.model.functions.iter().map(|f| f.name.clone()).collect();
        let mut graph: HashMap<String, BTreeSet<String>> = HashMap::new();
        for c in &self.model.calls {
            graph.entry(c.caller.clone()).or_default().insert(c.callee.clone());
        }
        // A function is recursive when it can reach itself: it calls itself, or shares a
        // strongly connected component of the call graph with another function.
        let recursive = recursive_functions(&graph);
        let mut memo: HashMap<String, Option<Ops>> = HashMap::new();
        let index = CallIndex::new(&self.model);
        for n in &names {
            self.ops_per_call(n, &recursive, &index, &mut memo, 0);
        }
        for f in &mut self.model.functions {
            f.recursive = recursive.contains(&f.name);
            f.ops_per_call = memo.get(&f.name).cloned().flatten();
        }
        for n in &recursive {
            let f = self.model.functions.iter().find(|f| &f.name == n).cloned();
            if let Some(f) = f {
                self.model.diagnostics.push(Diagnostic {
                    file: f.file.clone(),
                    line: f.line_start,
                    message: format!("{n} is recursive: its cost per call needs a trace"),
                });
            }
        }
    }

    fn ops_per_call(&self, name: &str, recursive: &HashSet<String>, index: &CallIndex, memo: &mut HashMap<String, Option<Ops>>, depth: usize) -> Option<Ops> {
        if let Some(m) = memo.get(name) {
            return m.clone();
        }
        if recursive.contains(name) || depth > 64 {
            memo.insert(name.to_string(), None);
            return None;
        }
        let mut total = Ops::new();
        let mut ok = true;
        for b in index.blocks_of.get(name).into_iter().flatten().map(|&i| &self.model.blocks[i]) {
            let Some(n) = b.count.expr.clone().filter(|_| b.count.status != CountStatus::NeedsTrace) else {
                if !b.ops.is_empty() {
                    ok = false;
                }
                continue;
            };
            for (c, k) in &b.ops {
                add_op(&mut total, *c, k.clone().mul(n.clone()));
            }
        }
        for &k in index.calls_of.get(name).into_iter().flatten() {
            let s = &self.model.calls[k];
            let count = index.block_by_id.get(s.block.as_str()).and_then(|&i| self.model.blocks[i].count.expr.clone());
            let callee = self.ops_per_call(&s.callee, recursive, index, memo, depth + 1);
            match (count, callee) {
                (Some(n), Some(ops)) => {
                    for (c, k) in ops {
                        // Callee parameters stay symbolic (named after the callee's parameters).
                        add_op(&mut total, c, k.mul(n.clone()));
                    }
                }
                _ => ok = false,
            }
        }
        let r = if ok { Some(total) } else { None };
        memo.insert(name.to_string(), r.clone());
        r
    }
}

// ---- Helpers --------------------------------------------------------------------------------

/// The model's blocks by function and by id, and its call sites by caller: the interprocedural
/// pass looks each up once per function instead of scanning the whole program.
struct CallIndex {
    blocks_of: HashMap<String, Vec<usize>>,
    calls_of: HashMap<String, Vec<usize>>,
    block_by_id: HashMap<String, usize>,
}

impl CallIndex {
    fn new(model: &ProgramModel) -> CallIndex {
        let mut blocks_of: HashMap<String, Vec<usize>> = HashMap::new();
        let mut block_by_id = HashMap::new();
        for (i, b) in model.blocks.iter().enumerate() {
            blocks_of.entry(b.function.clone()).or_default().push(i);
            block_by_id.insert(b.id.clone(), i);
        }
        let mut calls_of: HashMap<String, Vec<usize>> = HashMap::new();
        for (k, c) in model.calls.iter().enumerate() {
            calls_of.entry(c.caller.clone()).or_default().push(k);
        }
        CallIndex { blocks_of, calls_of, block_by_id }
    }
}

/// Functions that can reach themselves in the call graph (Tarjan's strongly connected
/// components, iteratively: linear in the graph, no recursion on deep call chains).
fn recursive_functions(graph: &HashMap<String, BTreeSet<String>>) -> HashSet<String> {
    let names: Vec<&String> = graph.keys().collect();
    let id: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let succ: Vec<Vec<usize>> = names
        .iter()
        .map(|n| graph[*n].iter().filter_map(|c| id.get(c.as_str()).copied()).collect())
        .collect();
    let n = names.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let mut stack: Vec<usize> = Vec::new();
    let mut next = 0;
    let mut out = HashSet::new();
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&mut (v, ref mut k)) = work.last_mut() {
            if *k == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = succ[v].get(*k) {
                *k += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 || succ[v].contains(&v) {
                    out.extend(comp.into_iter().map(|w| names[w].clone()));
                }
            }
        }
    }
    out
}

fn nonzero(x: u32) -> Option<u32> {
    (x != 0).then_some(x)
}

const IN_MACRO: &str = "it starts inside a statement macro's expansion, where nothing can be inserted";

/// Where a statement before a loop goes: before the loop and the `#pragma` lines attached to
/// it, enclosed in braces with it where the loop is a body or arm without them.
fn entry_site(sp: &Span) -> Site {
    let p = &sp.place;
    Site {
        at: p.lead,
        at_line: nonzero(p.lead_line),
        blocked: p.in_macro.then(|| IN_MACRO.to_string()),
        ..Site::default()
    }
}

/// Exits a predictor misses per entry of a loop counted statically: every entry where the trip
/// follows an enclosing loop's variable (it changes from one entry to the next: counted as
/// one, as the variable is not bound where the enclosing block is costed), else the entries
/// whose trip is longer than the predictor foresees.
fn static_exit_misses(trip: &Count, ctx: &Ctx) -> Option<Expr> {
    let e = trip.expr.as_ref().filter(|_| trip.status != CountStatus::NeedsTrace)?;
    let varies = ctx.loops.iter().filter_map(|l| l.var.as_ref()).any(|(v, _, _)| e.mentions(v));
    Some(if varies {
        Expr::int(1)
    } else {
        Expr::ifpos(e.clone().sub(Expr::int(i128::from(crate::model::analysis::PREDICTED_TRIP))), Expr::int(1), Expr::int(0))
    })
}

/// Where a loop body's or a branch arm's statement takes a trace point.
fn body_site(sp: &Span) -> Site {
    let p = &sp.place;
    let stmt = Some([sp.byte_start, sp.byte_end]);
    if p.in_macro {
        return Site { at: p.lead, stmt, blocked: Some(IN_MACRO.into()), ..Site::default() };
    }
    if p.inner != 0 {
        return Site { at: p.inner, stmt, compound: true, ..Site::default() };
    }
    Site {
        at: p.lead,
        at_line: nonzero(p.lead_line),
        stmt,
        compound: false,
        wrap_end: Some(p.close),
        wrap_end_line: nonzero(p.close_line),
        blocked: p.no_wrap.then(|| "the statement starts a preprocessor arm that holds more statements: braces cannot enclose it".to_string()),
    }
}

#[derive(Default)]
struct Segment {
    span: Option<Span>,
    ops: Ops,
    refs: Vec<PendingRef>,
    chains: Flow,
    allocs: Vec<Expr>,
    calls: Vec<(String, u32, Vec<Option<Expr>>)>,
    opaque: Vec<OpaqueCall>,
}

impl Segment {
    fn extend(&mut self, sp: Span) {
        self.span = Some(match self.span {
            None => sp,
            Some(s) => Span {
                line_start: s.line_start.min(sp.line_start),
                line_end: s.line_end.max(sp.line_end),
                col: s.col,
                byte_start: s.byte_start.min(sp.byte_start),
                byte_end: s.byte_end.max(sp.byte_end),
                // Where the segment's first statement goes before.
                place: s.place,
            },
        });
    }
}

impl CExpr {
    fn line_hint(&self) -> u32 {
        match self {
            CExpr::Call { line, .. } => *line,
            _ => 0,
        }
    }
}

fn v_clone(calls: &HashMap<String, Expr>, i: usize) -> Expr {
    calls.get(&format!("{i}")).cloned().unwrap_or(Expr::int(0))
}

fn num_expr(v: f64) -> Expr {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        Expr::int(v as i128)
    } else {
        // Probabilities and other fractions: an exact rational close to v.
        let den = 1_000_000i128;
        Expr::rat(Rat::new((v * den as f64).round() as i128, den))
    }
}

fn type_size(t: &CType) -> i128 {
    if t.indirection > 0 {
        return 8;
    }
    match &t.base {
        Base::Double => 8,
        Base::Float => 4,
        Base::Int if t.width > 0 => i128::from(t.width),
        Base::Int => 4,
        _ => 8,
    }
}

fn arith(a: &CType, b: &CType) -> CType {
    let rank = |t: &CType| match (t.indirection, &t.base) {
        (0, Base::Double) => 2,
        (0, Base::Float) => 1,
        _ => 0,
    };
    match rank(a).max(rank(b)) {
        2 => CType::double(),
        1 => CType::new(Base::Float),
        _ => CType::int(),
    }
}

/// The op class of a maths library function (its float form included), if it is one.
fn libm_class(func: &str) -> Option<OpClass> {
    Some(match func {
        "sqrt" | "sqrtf" => OpClass::Sqrt,
        "exp" | "expf" | "exp2" | "exp2f" => OpClass::Exp,
        "log" | "logf" | "log2" | "log2f" | "log10" | "log10f" => OpClass::Log,
        "sin" | "cos" | "tan" | "sinf" | "cosf" | "tanf" => OpClass::SinCos,
        "pow" | "powf" => OpClass::Pow,
        "fabs" | "fabsf" => OpClass::Fabs,
        "floor" | "ceil" | "round" | "floorf" | "ceilf" | "roundf" | "trunc" => OpClass::FpToInt,
        _ => return None,
    })
}

fn fp_class(t: &CType, int: OpClass, float: OpClass, double: OpClass) -> OpClass {
    match (t.indirection, &t.base) {
        (0, Base::Double) => double,
        (0, Base::Float) => float,
        _ => int,
    }
}

fn conversion_op(from: &CType, to: &CType, ops: &mut Ops) {
    if let Some(c) = conversion(from, to) {
        add_op(ops, c, Expr::int(1));
    }
}

/// The conversion a value of type `from` goes through to become a `to`, if any.
fn conversion(from: &CType, to: &CType) -> Option<OpClass> {
    let int = |t: &CType| t.indirection == 0 && t.base == Base::Int;
    if from.is_scalar_fp() && int(to) {
        Some(OpClass::FpToInt)
    } else if int(from) && to.is_scalar_fp() {
        Some(OpClass::IntToFp)
    } else {
        None
    }
}

/// The class of an arithmetic or bitwise operator (`+`, `*`, `%`, `<<`, ...; bare or of a
/// compound assignment) computing a value of type `t`.
fn arith_class(op: &str, t: &CType) -> OpClass {
    match op {
        "+" | "-" => fp_class(t, OpClass::IntAdd, OpClass::FloatAdd, OpClass::DoubleAdd),
        "*" => fp_class(t, OpClass::IntMul, OpClass::FloatMul, OpClass::DoubleMul),
        "/" => fp_class(t, OpClass::IntDiv, OpClass::FloatDiv, OpClass::DoubleDiv),
        "%" => OpClass::IntDiv,
        _ => OpClass::IntLogic,
    }
}

/// 0/1 indicator of an integer comparison.
fn compare(op: &str, a: Expr, b: Expr) -> Expr {
    let one = || Expr::int(1);
    let zero = || Expr::int(0);
    match op {
        "<" => Expr::ifpos(b.sub(a), one(), zero()),
        "<=" => Expr::ifpos(b.sub(a).add(one()), one(), zero()),
        ">" => Expr::ifpos(a.sub(b), one(), zero()),
        ">=" => Expr::ifpos(a.sub(b).add(one()), one(), zero()),
        "==" => {
            let d = a.sub(b);
            Expr::ifpos(d.clone().add(one()), Expr::ifpos(one().sub(d), one(), zero()), zero())
        }
        _ => one().sub(compare("==", a, b)),
    }
}

/// Converts a C integer expression to a formula. `lookup` gives identifiers' values, `call`
/// gives values of calls.
fn to_expr(e: &CExpr, lookup: &dyn Fn(&str) -> Option<Expr>, call: &dyn Fn(&CExpr) -> Option<Expr>, depth: usize) -> Option<Expr> {
    if depth > 64 {
        return None;
    }
    let r = |x: &CExpr| to_expr(x, lookup, call, depth + 1);
    match e {
        CExpr::Int(n) => Some(Expr::int(*n)),
        CExpr::Ident(n) => lookup(n),
        CExpr::Cast { ty, value } => {
            if ty.is_scalar_fp() {
                None
            } else {
                r(value)
            }
        }
        CExpr::Unary { op, arg } => match op.as_str() {
            "-" => Some(r(arg)?.neg()),
            "+" => r(arg),
            "!" => Some(compare("==", r(arg)?, Expr::int(0))),
            _ => None,
        },
        CExpr::Binary { op, left, right } => {
            let (a, b) = (r(left)?, r(right)?);
            Some(match op.as_str() {
                "+" => a.add(b),
                "-" => a.sub(b),
                "*" => a.mul(b),
                // C truncates; for the non-negative sizes and counts of loop bounds that is floor.
                "/" => Expr::floor_div(a, b),
                "%" => Expr::modulo(a, b),
                "<<" => {
                    let k = b.as_constant().filter(|k| k.is_int() && (0..63).contains(&k.num()))?;
                    a.mul(Expr::int(1i128 << k.num()))
                }
                ">>" => {
                    let k = b.as_constant().filter(|k| k.is_int() && (0..63).contains(&k.num()))?;
                    Expr::floor_div(a, Expr::int(1i128 << k.num()))
                }
                "<" | "<=" | ">" | ">=" | "==" | "!=" => compare(op, a, b),
                "&&" => a.mul(b),
                // x & (2^k - 1) is x mod 2^k for the non-negative ranks and counts it masks.
                "&" if a.as_constant().is_none() && b.as_constant().is_some_and(|m| m.is_int() && m.num() > 0 && (m.num() + 1).count_ones() == 1) => {
                    Expr::modulo(a, b.add(Expr::int(1)))
                }
                _ => {
                    // Bitwise ops on constants only.
                    let (x, y) = (a.as_constant()?, b.as_constant()?);
                    if !x.is_int() || !y.is_int() {
                        return None;
                    }
                    let (x, y) = (x.num(), y.num());
                    Expr::int(match op.as_str() {
                        "&" => x & y,
                        "|" => x | y,
                        "^" => x ^ y,
                        _ => return None,
                    })
                }
            })
        }
        CExpr::Cond { cond, then, otherwise } => {
            let c = r(cond)?;
            Some(Expr::ifpos(c, r(then)?, r(otherwise)?))
        }
        CExpr::Call { .. } => call(e),
        CExpr::Index { array, index, .. } => match (&**array, &**index) {
            (CExpr::Ident(a), CExpr::Int(k)) => lookup(&format!("{a}[{k}]")),
            _ => None,
        },
        _ => None,
    }
}

/// `a[k]` reads with a constant k.
fn cexpr_const_indexes(e: &CExpr) -> Vec<(String, i128)> {
    let mut out = Vec::new();
    visit(e, &mut |x| {
        if let CExpr::Index { array, index, .. } = x {
            if let (CExpr::Ident(a), CExpr::Int(k)) = (&**array, &**index) {
                out.push((a.clone(), *k));
            }
        }
    });
    out
}

/// Arrays passed to MPI_Dims_create (3rd argument) and MPI_Cart_coords (4th).
fn cart_arrays(body: &Stmt) -> HashMap<String, &'static str> {
    let mut out = HashMap::new();
    fn stmt(s: &Stmt, out: &mut HashMap<String, &'static str>) {
        match s {
            Stmt::Compound(v, _) => v.iter().for_each(|x| stmt(x, out)),
            Stmt::Expr(e, _) => {
                for c in cexpr_calls(e) {
                    if let CExpr::Call { func, args, .. } = c {
                        let (pos, prefix) = match func.as_str() {
                            "MPI_Dims_create" => (2, "cart_dims"),
                            "MPI_Cart_coords" => (3, "cart_coord"),
                            _ => continue,
                        };
                        if let Some(CExpr::Ident(a)) = args.get(pos) {
                            out.insert(a.clone(), prefix);
                        }
                    }
                }
            }
            Stmt::If { then, otherwise, .. } => {
                stmt(then, out);
                if let Some(o) = otherwise {
                    stmt(o, out);
                }
            }
            Stmt::For { body, .. } | Stmt::While { body, .. } | Stmt::DoWhile { body, .. } | Stmt::Label(body, _) => stmt(body, out),
            _ => {}
        }
    }
    stmt(body, &mut out);
    out
}

fn strip_casts(e: &CExpr) -> &CExpr {
    match e {
        CExpr::Cast { value, .. } => strip_casts(value),
        other => other,
    }
}

/// `atoi(argv[k])`, `strtol(argv[k], ...)`, `helper(argc, argv, k, default)`: the argv index read,
/// and the program's fallback when it can be seen.
/// The formula symbol of a program variable: its name, with a prime where the name is one of
/// the analysis's own symbols (`rank` and `size` of the world, `cart_dims<k>`, `cart_coord<k>`,
/// the interpreter's `__`/`mpicast_` names). gemm's matrix `size` is `size'` in every formula,
/// and never the number of processes.
pub fn program_symbol(name: &str) -> String {
    if reserved_symbol(name) {
        format!("{name}'")
    } else {
        name.to_string()
    }
}

/// Whether a program variable `name` is spelt like one of the analysis's own symbols (and so
/// takes a prime in formulas).
pub fn reserved_symbol(name: &str) -> bool {
    matches!(name, "rank" | "size")
        || ["cart_dims", "cart_coord", "mpicast_", "__"].iter().any(|p| name.starts_with(p))
}

/// The program's name of a formula symbol (`program_symbol` undone).
pub fn program_name(symbol: &str) -> &str {
    symbol.strip_suffix('\'').unwrap_or(symbol)
}

/// Two assignments, an integer constant and then a read of the command line: the argument's
/// index and the constant (the value when the argument is not given).
fn argv_after_default(assigns: &[CExpr]) -> Option<(u32, f64)> {
    let [first, second] = assigns else { return None };
    let default = match strip_casts(first) {
        CExpr::Int(k) => *k as f64,
        CExpr::Unary { op, arg } if op == "-" => match strip_casts(arg) {
            CExpr::Int(k) => -(*k as f64),
            _ => return None,
        },
        _ => return None,
    };
    let (index, None) = argv_read(second)? else { return None };
    Some((index, default))
}

fn argv_read(e: &CExpr) -> Option<(u32, Option<CExpr>)> {
    // `argc > 1 ? atoi(argv[1]) : 4096`: the read, with the other arm as its default.
    if let CExpr::Cond { cond, then, otherwise } = strip_casts(e) {
        if cexpr_idents(cond).iter().any(|n| n == "argc") {
            if let Some((k, None)) = argv_read(then) {
                return Some((k, Some((**otherwise).clone())));
            }
        }
        return None;
    }
    let CExpr::Call { func, args, .. } = strip_casts(e) else { return None };
    let argv_index = |a: &CExpr| match a {
        CExpr::Index { array, index, .. } => match (&**array, &**index) {
            (CExpr::Ident(n), CExpr::Int(k)) if n == "argv" => Some(*k as u32),
            _ => None,
        },
        _ => None,
    };
    if matches!(func.as_str(), "atoi" | "atol" | "atoll" | "strtol" | "strtoul" | "strtoll" | "strtoull") {
        return args.first().and_then(argv_index).map(|k| (k, None));
    }
    // A helper taking argv and a literal index (parse_arg(argc, argv, 1, DEFAULT)).
    let pos = args.iter().position(|a| matches!(a, CExpr::Ident(n) if n == "argv"))?;
    let k = args.iter().skip(pos + 1).find_map(|a| match a {
        CExpr::Int(k) => Some(*k as u32),
        _ => None,
    })?;
    let default = args.last().filter(|_| args.len() > pos + 2).cloned();
    Some((k, default))
}

/// A statement that calls MPI_Init or MPI_Init_thread: `MPI_Init(...)`, `rc = MPI_Init(...)`.
fn is_mpi_init(e: &CExpr) -> bool {
    let call = match e {
        CExpr::Assign { right, .. } => &**right,
        other => other,
    };
    matches!(strip_casts(call), CExpr::Call { func, .. } if func == "MPI_Init" || func == "MPI_Init_thread")
}

/// A statement that is a communication call: `MPI_Send(...)`, `rc = MPI_Recv(...)`.
fn comm_call(e: &CExpr) -> Option<(String, Vec<CExpr>, u32)> {
    let call = match e {
        CExpr::Assign { right, .. } => &**right,
        other => other,
    };
    match strip_casts(call) {
        CExpr::Call { func, args, line, .. } if mpi::comm_signature(func).is_some() && is_communication(func) => {
            Some((func.clone(), args.clone(), *line))
        }
        _ => None,
    }
}

/// Topology routines are recorded as comm sites too, but MPI_Dims_create and the like carry no
/// message; everything in the signature table is kept as a comm block so the topology is visible.
fn is_communication(_func: &str) -> bool {
    true
}

/// An if/else chain each of whose arms is one plain assignment to the same variable (the last
/// arm an `else`): the variable and its value as a conditional expression.
fn if_chain_value(s: &Stmt) -> Option<(String, CExpr)> {
    fn arm(s: &Stmt) -> Option<(String, CExpr)> {
        match s {
            Stmt::Compound(v, _) if v.len() == 1 => arm(&v[0]),
            Stmt::Expr(CExpr::Assign { op, left, right }, _) if op == "=" => match &**left {
                CExpr::Ident(n) => Some((n.clone(), (**right).clone())),
                _ => None,
            },
            Stmt::If { .. } => if_chain_value(s),
            _ => None,
        }
    }
    let Stmt::If { cond, then, otherwise: Some(o), .. } = s else { return None };
    let (x, a) = arm(then)?;
    let (y, b) = arm(o)?;
    (x == y).then(|| (x, CExpr::Cond { cond: Box::new(cond.clone()), then: Box::new(a), otherwise: Box::new(b) }))
}

/// The pseudo-assignment of a scalar broadcast in place (`MPI_Bcast(&n, ...)`).
const BCAST_OUT: &str = "MPI_Bcast(out)";

/// Assignments per variable in a function body (declaration initialisers included), and the
/// locals' types. `&v` passed to a call counts as an assignment, except the MPI routines that
/// set rank and size, which become pseudo-calls the value resolver recognises.
fn collect_assignments(s: &Stmt, out: &mut HashMap<String, Vec<CExpr>>, locals: &mut HashMap<String, CType>) {
    fn expr(e: &CExpr, out: &mut HashMap<String, Vec<CExpr>>) {
        match e {
            CExpr::Assign { op, left, right } => {
                if let CExpr::Ident(n) = &**left {
                    let v = if op == "=" { (**right).clone() } else { CExpr::Unknown(format!("{n} {op} ...")) };
                    out.entry(n.clone()).or_default().push(v);
                }
                expr(left, out);
                expr(right, out);
            }
            CExpr::Update { arg, .. } => {
                if let CExpr::Ident(n) = &**arg {
                    out.entry(n.clone()).or_default().push(CExpr::Unknown(format!("{n}++")));
                }
                expr(arg, out);
            }
            CExpr::Call { func, args, line, .. } => {
                for (i, a) in args.iter().enumerate() {
                    // Committing or freeing a datatype does not change what it describes; MPI_Init leaves
                    // argc as the program got it.
                    if matches!(func.as_str(), "MPI_Type_commit" | "MPI_Type_free" | "MPI_Init" | "MPI_Init_thread") {
                        continue;
                    }
                    if let CExpr::AddrOf(inner) = a {
                        if let CExpr::Ident(n) = &**inner {
                            let v = match (func.as_str(), i) {
                                ("MPI_Comm_rank", 1) | ("MPI_Comm_size", 1) => {
                                    CExpr::Call { func: format!("{func}(out)"), args: args.first().cloned().into_iter().collect(), line: *line, at: At::NONE }
                                }
                                ("MPI_Bcast", 0) => CExpr::Call { func: BCAST_OUT.into(), args: vec![], line: *line, at: At::NONE },
                                ("MPI_Type_contiguous", 2) | ("MPI_Type_vector", 4) => {
                                    CExpr::Call { func: format!("{func}(out)"), args: args.clone(), line: *line, at: At::NONE }
                                }
                                ("sscanf", _) if matches!(args.first(), Some(CExpr::Index { .. })) => match &args[0] {
                                    CExpr::Index { array, index, .. } => CExpr::Call {
                                        func: "atoi".into(),
                                        args: vec![CExpr::Index { array: array.clone(), index: index.clone(), at: At::NONE }],
                                        line: *line,
                                        at: At::NONE,
                                    },
                                    _ => CExpr::Unknown(String::new()),
                                },
                                _ => CExpr::Unknown(format!("&{n} passed to {func}")),
                            };
                            out.entry(n.clone()).or_default().push(v);
                        }
                    }
                    expr(a, out);
                }
            }
            CExpr::Binary { left, right, .. } | CExpr::Comma(left, right) => {
                expr(left, out);
                expr(right, out);
            }
            CExpr::Unary { arg, .. } | CExpr::Deref(arg) | CExpr::AddrOf(arg) => expr(arg, out),
            CExpr::Cast { value, .. } => expr(value, out),
            CExpr::Index { array, index, .. } => {
                expr(array, out);
                expr(index, out);
            }
            CExpr::Field { base, .. } => expr(base, out),
            CExpr::Cond { cond, then, otherwise } => {
                expr(cond, out);
                expr(then, out);
                expr(otherwise, out);
            }
            CExpr::InitList(v) => v.iter().for_each(|x| expr(x, out)),
            _ => {}
        }
    }
    match s {
        Stmt::Compound(v, _) => v.iter().for_each(|x| collect_assignments(x, out, locals)),
        Stmt::Expr(e, _) | Stmt::Return(Some(e), _) => expr(e, out),
        Stmt::Decl(ds, _) => {
            for d in ds {
                locals.insert(d.name.clone(), d.ty.clone());
                if let Some(i) = &d.init {
                    expr(i, out);
                    out.entry(d.name.clone()).or_default().push(i.clone());
                }
            }
        }
        Stmt::If { cond, .. } if if_chain_value(s).is_some() => {
            // `if (c) x = a; else if (d) x = b; else x = e;`: one conditional assignment.
            expr(cond, out);
            let (x, v) = if_chain_value(s).expect("checked");
            out.entry(x).or_default().push(v);
        }
        Stmt::If { cond, then, otherwise, .. } => {
            expr(cond, out);
            collect_assignments(then, out, locals);
            if let Some(o) = otherwise {
                collect_assignments(o, out, locals);
            }
        }
        Stmt::For { init, cond, update, body, .. } => {
            if let Some(i) = init {
                collect_assignments(i, out, locals);
            }
            if let Some(c) = cond {
                expr(c, out);
            }
            if let Some(u) = update {
                expr(u, out);
            }
            collect_assignments(body, out, locals);
        }
        Stmt::While { cond, body, .. } | Stmt::DoWhile { body, cond, .. } | Stmt::Switch { cond, body, .. } => {
            expr(cond, out);
            collect_assignments(body, out, locals);
        }
        Stmt::Case { body, .. } => body.iter().for_each(|x| collect_assignments(x, out, locals)),
        Stmt::Label(x, _) => collect_assignments(x, out, locals),
        _ => {}
    }
}

/// Variables written anywhere in a statement.
fn modified_vars(s: &Stmt) -> HashSet<String> {
    let mut m = HashMap::new();
    let mut l = HashMap::new();
    collect_assignments(s, &mut m, &mut l);
    // A declaration with an initialiser inside the body is a fresh variable per iteration, not a
    // modification of an outer one; those are in `l`.
    m.into_iter().filter(|(k, v)| !(l.contains_key(k) && v.len() <= 1)).map(|(k, _)| k).collect()
}

/// A reason when control can leave the loop body other than by finishing the iteration.
fn body_escapes(s: &Stmt) -> Option<String> {
    fn walk(s: &Stmt, in_inner_loop_or_switch: bool) -> Option<String> {
        match s {
            Stmt::Break(sp) if !in_inner_loop_or_switch => Some(format!("break at line {} leaves the loop early", sp.line_start)),
            Stmt::Goto(sp) => Some(format!("goto at line {} may leave the loop", sp.line_start)),
            Stmt::Return(_, sp) => Some(format!("return at line {} leaves the loop", sp.line_start)),
            Stmt::Compound(v, _) => v.iter().find_map(|x| walk(x, in_inner_loop_or_switch)),
            Stmt::If { then, otherwise, .. } => {
                walk(then, in_inner_loop_or_switch).or_else(|| otherwise.as_ref().and_then(|o| walk(o, in_inner_loop_or_switch)))
            }
            Stmt::For { body, .. } | Stmt::While { body, .. } | Stmt::DoWhile { body, .. } => walk(body, true),
            Stmt::Switch { body, .. } => walk(body, true),
            Stmt::Case { body, .. } => body.iter().find_map(|x| walk(x, in_inner_loop_or_switch)),
            Stmt::Label(x, _) => walk(x, in_inner_loop_or_switch),
            Stmt::Expr(CExpr::Call { func, .. }, sp) if func == "exit" || func == "MPI_Abort" || func == "abort" => {
                let _ = sp;
                None
            }
            _ => None,
        }
    }
    walk(s, false)
}

pub(crate) enum Step {
    Add(i64),
    /// Adds a value that is not a constant (`i += size`: a cyclic distribution); counts up.
    AddBy(CExpr),
    Mul(i64),
    Div(i64),
}

pub(crate) struct LoopShape {
    pub(crate) var: String,
    pub(crate) start: CExpr,
    pub(crate) cmp: String,
    pub(crate) bound: CExpr,
    pub(crate) step: Step,
}

pub(crate) fn loop_shape(init: Option<&Stmt>, cond: Option<&CExpr>, update: Option<&CExpr>) -> Option<LoopShape> {
    let (var, start) = match init? {
        Stmt::Decl(ds, _) if ds.len() == 1 => (ds[0].name.clone(), ds[0].init.clone()?),
        Stmt::Expr(CExpr::Assign { op, left, right }, _) if op == "=" => match &**left {
            CExpr::Ident(n) => (n.clone(), (**right).clone()),
            _ => return None,
        },
        _ => return None,
    };
    let (cmp, bound) = match cond? {
        CExpr::Binary { op, left, right } if matches!(op.as_str(), "<" | "<=" | ">" | ">=" | "!=") => {
            match (&**left, &**right) {
                (CExpr::Ident(n), b) if *n == var => (op.clone(), b.clone()),
                (b, CExpr::Ident(n)) if *n == var => {
                    let flipped = match op.as_str() {
                        "<" => ">",
                        "<=" => ">=",
                        ">" => "<",
                        ">=" => "<=",
                        o => o,
                    };
                    (flipped.to_string(), b.clone())
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    let is_var = |e: &CExpr| matches!(e, CExpr::Ident(n) if *n == var);
    let int_of = |e: &CExpr| match e {
        CExpr::Int(k) => Some(*k as i64),
        CExpr::Unary { op, arg } if op == "-" => match &**arg {
            CExpr::Int(k) => Some(-(*k as i64)),
            _ => None,
        },
        _ => None,
    };
    let mentions_var = |e: &CExpr| cexpr_idents(e).contains(&var);
    // A step that is not a constant: an expression without the variable.
    let add_by = |e: &CExpr| match int_of(e) {
        Some(k) => Some(Step::Add(k)),
        None if !mentions_var(e) => Some(Step::AddBy(e.clone())),
        None => None,
    };
    let step = match update? {
        CExpr::Update { op, arg, .. } if is_var(arg) => Step::Add(if op == "++" { 1 } else { -1 }),
        CExpr::Assign { op, left, right } if is_var(left) => match op.as_str() {
            "+=" => add_by(right)?,
            "-=" => Step::Add(-int_of(right)?),
            "*=" => Step::Mul(int_of(right)?),
            "<<=" => Step::Mul(1i64 << int_of(right)?.clamp(0, 62)),
            "/=" => Step::Div(int_of(right)?),
            ">>=" => Step::Div(1i64 << int_of(right)?.clamp(0, 62)),
            "=" => match &**right {
                CExpr::Binary { op, left: l, right: r } => match (op.as_str(), is_var(l), is_var(r)) {
                    ("+", true, false) => add_by(r)?,
                    ("+", false, true) => add_by(l)?,
                    ("-", true, false) => Step::Add(-int_of(r)?),
                    ("*", true, false) => Step::Mul(int_of(r)?),
                    ("*", false, true) => Step::Mul(int_of(l)?),
                    ("/", true, false) => Step::Div(int_of(r)?),
                    _ => return None,
                },
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    if matches!(step, Step::Add(0)) {
        return None;
    }
    Some(LoopShape { var, start, cmp, bound, step })
}

/// Identifiers read by an expression (not inside calls' names).
fn cexpr_idents(e: &CExpr) -> Vec<String> {
    let mut out = Vec::new();
    visit(e, &mut |x| {
        if let CExpr::Ident(n) = x {
            out.push(n.clone());
        }
    });
    out.sort();
    out.dedup();
    out
}

/// The direct subexpressions of `e`.
fn children(e: &CExpr) -> Vec<&CExpr> {
    match e {
        CExpr::Binary { left, right, .. } | CExpr::Assign { left, right, .. } | CExpr::Comma(left, right) => {
            vec![left, right]
        }
        CExpr::Unary { arg, .. } | CExpr::Update { arg, .. } | CExpr::Deref(arg) | CExpr::AddrOf(arg) => vec![arg],
        CExpr::Cast { value, .. } => vec![value],
        CExpr::Call { args, .. } | CExpr::InitList(args) => args.iter().collect(),
        CExpr::Index { array, index, .. } => vec![array, index],
        CExpr::Field { base, .. } => vec![base],
        CExpr::Cond { cond, then, otherwise } => vec![cond, then, otherwise],
        _ => Vec::new(),
    }
}

/// Calls `f` on `e` and every subexpression, outermost first.
fn visit<'e>(e: &'e CExpr, f: &mut dyn FnMut(&'e CExpr)) {
    f(e);
    for c in children(e) {
        visit(c, f);
    }
}

/// Whether `part` is `e` or one of its subexpressions.
fn cexpr_contains(e: &CExpr, part: &CExpr) -> bool {
    let mut found = false;
    visit(e, &mut |x| found |= x == part);
    found
}

/// Calls inside an expression, outermost first.
fn cexpr_calls(e: &CExpr) -> Vec<CExpr> {
    let mut out = Vec::new();
    visit(e, &mut |x| {
        if matches!(x, CExpr::Call { .. }) {
            out.push(x.clone());
        }
    });
    out
}

/// C-like text of an expression, for messages and comm-site fields.
pub fn cexpr_text(e: &CExpr) -> String {
    match e {
        CExpr::Ident(n) => n.clone(),
        CExpr::Int(n) => n.to_string(),
        CExpr::Float { value, single } => format!("{value}{}", if *single { "f" } else { "" }),
        CExpr::Str(_) => "\"...\"".into(),
        CExpr::Binary { op, left, right } => format!("{} {op} {}", paren(left), paren(right)),
        CExpr::Unary { op, arg } => format!("{op}{}", paren(arg)),
        CExpr::Update { op, arg, .. } => format!("{}{op}", cexpr_text(arg)),
        CExpr::Assign { op, left, right } => format!("{} {op} {}", cexpr_text(left), cexpr_text(right)),
        CExpr::Call { func, args, .. } => format!("{func}({})", args.iter().map(cexpr_text).collect::<Vec<_>>().join(", ")),
        CExpr::Index { array, index, .. } => format!("{}[{}]", cexpr_text(array), cexpr_text(index)),
        CExpr::Field { base, field, arrow } => format!("{}{}{field}", cexpr_text(base), if *arrow { "->" } else { "." }),
        CExpr::Deref(a) => format!("*{}", paren(a)),
        CExpr::AddrOf(a) => format!("&{}", paren(a)),
        CExpr::Cast { value, .. } => format!("(cast){}", paren(value)),
        CExpr::Cond { cond, then, otherwise } => format!("{} ? {} : {}", paren(cond), paren(then), paren(otherwise)),
        CExpr::Sizeof { .. } => "sizeof(...)".into(),
        CExpr::Comma(a, b) => format!("{}, {}", cexpr_text(a), cexpr_text(b)),
        CExpr::InitList(_) => "{...}".into(),
        CExpr::Unknown(t) => t.clone(),
    }
}

fn paren(e: &CExpr) -> String {
    match e {
        CExpr::Binary { .. } | CExpr::Cond { .. } | CExpr::Assign { .. } => format!("({})", cexpr_text(e)),
        _ => cexpr_text(e),
    }
}

/// The conversions of a printf format: (integer-like, floating-point). `%%` is none; a `*`
/// width or precision takes an argument without a conversion of its own.
fn format_conversions(format: &str) -> (i128, i128) {
    let (mut ints, mut fps) = (0, 0);
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        // flags, width, precision, length modifiers, then the conversion character
        while let Some(&d) = chars.peek() {
            if "-+ #0123456789.*'hlLqjzt".contains(d) {
                chars.next();
            } else {
                break;
            }
        }
        match chars.next() {
            Some('f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'a' | 'A') => fps += 1,
            Some('d' | 'i' | 'u' | 'o' | 'x' | 'X' | 'c' | 's' | 'p') => ints += 1,
            _ => {}
        }
    }
    (ints, fps)
}

