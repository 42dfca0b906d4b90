//! Programs that time themselves: a loop whose condition reads a value computed from a clock
//! (NetPIPE repeats each message size `RUNTM / tlast` times, `tlast` the time the last size
//! took; a benchmark that runs "for 10 seconds"). How often such a loop runs depends on how
//! fast the run is: an instrumented run is slower and repeats less, and no analysis can say
//! without running. The front end lists these loops (`ProgramModel::clock_loops`); predictions
//! that run them say so.
//!
//! The analysis is a taint over each function's variables, flow-insensitive: a clock call
//! (MPI_Wtime, gettimeofday, clock_gettime, clock, time, omp_get_wtime) or a function of the
//! program that returns a value computed from one taints what it is assigned to, and so on
//! through assignments; an lvalue is a path (`bwdata[].t`, `args.tr`, `*p`), a path taints what
//! it leads to. A call to another function whose argument is tainted returns a tainted value.

use std::collections::HashMap;

use crate::frontend::ir::{CExpr, Function, Stmt};
use crate::model::analysis::ClockLoop;

/// The C library's and MPI's clocks whose value is the call's result.
const CLOCK_CALLS: &[&str] = &["MPI_Wtime", "PMPI_Wtime", "omp_get_wtime", "clock", "time"];

/// Clocks that write their reading through a pointer argument: name and argument position.
const CLOCK_OUT: &[(&str, usize)] = &[("gettimeofday", 0), ("clock_gettime", 1), ("time", 0), ("ftime", 0)];

/// The program's functions that return a clock reading (or a value computed from one), with
/// where the reading comes from; to a fixpoint (a function may call another).
pub fn clock_functions<'f>(functions: impl Iterator<Item = (&'f str, &'f Function)> + Clone) -> HashMap<String, String> {
    let mut found: HashMap<String, String> = HashMap::new();
    for _ in 0..8 {
        let before = found.len();
        for (file, f) in functions.clone() {
            if found.contains_key(&f.name) {
                continue;
            }
            let t = Taint::of(f, file, &found);
            let mut ret = None;
            stmt_exprs(&f.body, &mut |s| {
                if let Stmt::Return(Some(e), _) = s {
                    ret = ret.take().or_else(|| t.reads(e));
                }
            });
            if let Some(src) = ret {
                found.insert(f.name.clone(), src);
            }
        }
        if found.len() == before {
            break;
        }
    }
    found
}

/// The loops of `f` whose condition reads a clock.
pub fn clock_loops(f: &Function, file: &str, clock_fns: &HashMap<String, String>) -> Vec<ClockLoop> {
    let t = Taint::of(f, file, clock_fns);
    let mut out = Vec::new();
    stmt_exprs(&f.body, &mut |s| {
        let (cond, span) = match s {
            Stmt::For { cond: Some(c), span, .. } | Stmt::While { cond: c, span, .. } | Stmt::DoWhile { cond: c, span, .. } => (c, span),
            _ => return,
        };
        if let Some((path, clock)) = t.reads_which(cond) {
            out.push(ClockLoop { file: file.to_string(), line: span.line_start, reads: path, clock });
        }
    });
    out
}

struct Taint<'a> {
    file: &'a str,
    fns: &'a HashMap<String, String>,
    /// Tainted paths and the clock each comes from, by the variable at their root (`bwdata`
    /// for `bwdata[].t`): a path is looked up among its own variable's.
    paths: HashMap<String, Vec<(String, String)>>,
    count: usize,
}

/// The variable a path starts from.
fn root(p: &str) -> &str {
    let p = p.trim_start_matches('*');
    &p[..p.find(['.', '[']).unwrap_or(p.len())]
}

impl<'a> Taint<'a> {
    /// The taint of `f`'s variables: its statements in order, each assignment's taint known to
    /// those after it, again until nothing changes (a loop's later statements feed its earlier
    /// ones), at most 16 times.
    fn of(f: &Function, file: &'a str, fns: &'a HashMap<String, String>) -> Taint<'a> {
        let mut t = Taint { file, fns, paths: HashMap::new(), count: 0 };
        let mut stmts: Vec<&Stmt> = Vec::new();
        stmt_exprs(&f.body, &mut |s| stmts.push(s));
        for _ in 0..16 {
            let before = t.count;
            for s in &stmts {
                let mut found: Vec<(String, String)> = Vec::new();
                match s {
                    Stmt::Expr(e, _) | Stmt::Return(Some(e), _) => t.assignments(e, &mut found),
                    Stmt::Decl(ds, _) => {
                        for d in ds {
                            if let Some(src) = d.init.as_ref().and_then(|e| t.reads(e)) {
                                found.push((d.name.clone(), src));
                            }
                            if let Some(e) = &d.init {
                                t.assignments(e, &mut found);
                            }
                        }
                    }
                    Stmt::If { cond, .. } | Stmt::While { cond, .. } | Stmt::DoWhile { cond, .. } | Stmt::Switch { cond, .. } => t.assignments(cond, &mut found),
                    Stmt::For { cond, update, .. } => {
                        for e in cond.iter().chain(update) {
                            t.assignments(e, &mut found);
                        }
                    }
                    _ => {}
                }
                for (p, src) in found {
                    t.taint(p, src);
                }
            }
            if t.count == before {
                break;
            }
        }
        t
    }

    fn taint(&mut self, p: String, src: String) {
        let v = self.paths.entry(root(&p).to_string()).or_default();
        if !v.iter().any(|(q, _)| *q == p) {
            v.push((p, src));
            self.count += 1;
        }
    }

    /// The paths `e` taints (assignments from tainted values, clocks' out-arguments).
    fn assignments(&self, e: &CExpr, out: &mut Vec<(String, String)>) {
        visit(e, &mut |x| match x {
            CExpr::Assign { op, left, right } => {
                let src = self.reads(right).or_else(|| if op == "=" { None } else { self.reads(left) });
                if let (Some(src), Some(p)) = (src, path(left)) {
                    out.push((p, src));
                }
            }
            CExpr::Call { func, args, line, .. } => {
                for (name, pos) in CLOCK_OUT {
                    if func == name {
                        if let Some(p) = args.get(*pos).and_then(|a| match a {
                            CExpr::AddrOf(x) => path(x),
                            x => path(x).map(|p| format!("*{p}")),
                        }) {
                            out.push((p, at(func, self.file, *line)));
                        }
                    }
                }
            }
            _ => {}
        });
    }

    /// Where `e`'s value comes from a clock: the clock, if it does.
    fn reads(&self, e: &CExpr) -> Option<String> {
        self.reads_which(e).map(|(_, c)| c)
    }

    /// The tainted path (or clock call) `e` reads, and the clock behind it.
    fn reads_which(&self, e: &CExpr) -> Option<(String, String)> {
        let mut hit = None;
        visit_reads(e, &mut |x| {
            if hit.is_some() {
                return false;
            }
            match x {
                CExpr::Call { func, line, .. } if CLOCK_CALLS.contains(&func.as_str()) => {
                    hit = Some((format!("{func}()"), at(func, self.file, *line)));
                    false
                }
                CExpr::Call { func, .. } if self.fns.contains_key(func) => {
                    hit = Some((format!("{func}()"), format!("{func}(): {}", self.fns[func])));
                    false
                }
                _ => match path(x) {
                    Some(p) => {
                        if let Some(src) = self.tainted(&p) {
                            hit = Some((p, src.to_string()));
                        } else {
                            // The path's subscripts are read too, not its base as a whole
                            // (`gd->n` does not read all of `gd`).
                            let mut cur = x;
                            loop {
                                match cur {
                                    CExpr::Index { array, index, .. } => {
                                        if let Some(h) = self.reads_which(index) {
                                            hit = Some(h);
                                            break;
                                        }
                                        cur = array;
                                    }
                                    CExpr::Field { base, .. } => cur = base,
                                    CExpr::Deref(inner) => cur = inner,
                                    _ => break,
                                }
                            }
                        }
                        false
                    }
                    None => true,
                },
            }
        });
        hit
    }

    /// The clock behind a path: the path itself tainted, one it leads into or one inside it.
    fn tainted(&self, p: &str) -> Option<&str> {
        let within = |outer: &str, inner: &str| inner.len() > outer.len() && inner.starts_with(outer) && matches!(inner.as_bytes()[outer.len()], b'.' | b'[');
        self.paths.get(root(p))?.iter().find(|(q, _)| q == p || within(q, p) || within(p, q)).map(|(_, s)| s.as_str())
    }
}

/// An lvalue's path with its subscripts left out: `bwdata[n].t` is `bwdata[].t`, `p->x` is
/// `p.x`, `*p` is `*p`.
fn path(e: &CExpr) -> Option<String> {
    match e {
        CExpr::Ident(n) => Some(n.clone()),
        CExpr::Index { array, .. } => path(array).map(|p| format!("{p}[]")),
        CExpr::Field { base, field, .. } => path(base).map(|p| format!("{p}.{field}")),
        CExpr::Deref(x) => path(x).map(|p| format!("*{p}")),
        _ => None,
    }
}

/// `func() at file:line`; a call from a macro's expansion has no line of its own.
fn at(func: &str, file: &str, line: u32) -> String {
    let name = file.rsplit('/').next().unwrap_or(file);
    if line > 1 {
        format!("{func}() at {name}:{line}")
    } else {
        format!("{func}() in {name}")
    }
}

/// Every sub-expression of `e`, `e` first.
fn visit(e: &CExpr, f: &mut dyn FnMut(&CExpr)) {
    visit_reads(e, &mut |x| {
        f(x);
        true
    });
}

/// Every sub-expression of `e`, `e` first, the children of those `f` returns true for;
/// sizeof's operand is not evaluated.
fn visit_reads(e: &CExpr, f: &mut dyn FnMut(&CExpr) -> bool) {
    if !f(e) {
        return;
    }
    match e {
        CExpr::Binary { left, right, .. } | CExpr::Assign { left, right, .. } => {
            visit_reads(left, f);
            visit_reads(right, f);
        }
        CExpr::Comma(a, b) => {
            visit_reads(a, f);
            visit_reads(b, f);
        }
        CExpr::Unary { arg, .. } | CExpr::Update { arg, .. } | CExpr::Deref(arg) | CExpr::AddrOf(arg) | CExpr::Cast { value: arg, .. } => visit_reads(arg, f),
        CExpr::Call { args, .. } | CExpr::InitList(args) => {
            for a in args {
                visit_reads(a, f);
            }
        }
        CExpr::Index { array, index, .. } => {
            visit_reads(array, f);
            visit_reads(index, f);
        }
        CExpr::Field { base, .. } => visit_reads(base, f),
        CExpr::Cond { cond, then, otherwise } => {
            visit_reads(cond, f);
            visit_reads(then, f);
            visit_reads(otherwise, f);
        }
        CExpr::Ident(_) | CExpr::Int(_) | CExpr::Float { .. } | CExpr::Str(_) | CExpr::Sizeof { .. } | CExpr::Unknown(_) => {}
    }
}

/// Every statement of `s`, `s` first.
fn stmt_exprs<'s>(s: &'s Stmt, f: &mut dyn FnMut(&'s Stmt)) {
    f(s);
    match s {
        Stmt::Compound(v, _) => v.iter().for_each(|x| stmt_exprs(x, f)),
        Stmt::Case { body, .. } => body.iter().for_each(|x| stmt_exprs(x, f)),
        Stmt::If { then, otherwise, .. } => {
            stmt_exprs(then, f);
            if let Some(o) = otherwise {
                stmt_exprs(o, f);
            }
        }
        Stmt::For { init, body, .. } => {
            if let Some(i) = init {
                stmt_exprs(i, f);
            }
            stmt_exprs(body, f);
        }
        Stmt::While { body, .. } | Stmt::DoWhile { body, .. } | Stmt::Switch { body, .. } | Stmt::Label(body, _) => stmt_exprs(body, f),
        _ => {}
    }
}
