//! The program's blocks as formulas for the static path (seed 003's static evaluation): per
//! block, the executions of its subtree per execution (loops summed over their range, callees'
//! formulas with their arguments bound), which the interpreter (`eval`) evaluates with its own
//! values to charge a loop without communication without walking it; the `Sink` a rank's
//! skeleton goes to; what the static path cannot resolve (`Unresolved`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use crate::model::analysis::{BlockKind, CommSite, ProgramModel};
use crate::model::expr::{self, Expr};
use crate::model::trace::{Compute, TraceAction};

/// The symbol standing for the probability of a branch that depends on data (0.5 unless the
/// caller asks for the bounds 0 and 1).
pub const ASSUMED_P: &str = "__assumed_p";

/// The probability variable of one data-dependent branch arm (block `b`): bound to a rate
/// sampled by running the program's own data, or to ASSUMED_P's value when none was.
pub fn branch_rate_var(b: usize) -> String {
    format!("{ASSUMED_P}@{b}")
}

/// The trips per entry of loop `b`, whose count the front end does not know: the interpreter
/// binds it where it can estimate it (a loop up to an entry of a histogram whose total it
/// knows); a formula that mentions it is otherwise not evaluated.
pub fn trip_var(b: usize) -> String {
    format!("trip@{b}")
}

/// The loop block of a variable made by `trip_var`.
pub fn trip_var_block(v: &str) -> Option<usize> {
    v.strip_prefix("trip@")?.parse().ok()
}

/// Something the skeleton cannot resolve without running the program.
#[derive(Debug, Clone, PartialEq)]
pub struct Unresolved {
    pub file: String,
    pub line: u32,
    pub what: String,
}

impl std::error::Error for Unresolved {}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.what)
    }
}

/// Block executions per execution of a subtree's root: (block index, count formula).
pub type Execs = Rc<Vec<(usize, Expr)>>;

/// The analysis, indexed for execution.
pub struct Program<'a> {
    pub model: &'a ProgramModel,
    children: Vec<Vec<usize>>,
    comm: HashMap<usize, &'a CommSite>,
    /// Straight blocks' calls: (callee function block, argument formulas, call line).
    calls: HashMap<usize, Vec<(usize, Vec<Option<Expr>>, u32)>>,
    func_params: HashMap<usize, Vec<String>>,
    /// Does the subtree (callees included) contain a communication site?
    has_comm: Vec<bool>,
    /// Identifiers any formula or argument text of the subtree mentions (callees included).
    vars: Vec<BTreeSet<String>>,
    /// Executions of each block's subtree per execution of the block, and as seen from its
    /// parent (loops summed over their range, branch arms weighted by their condition).
    own: std::cell::RefCell<HashMap<usize, Result<Execs, Unresolved>>>,
    contrib: std::cell::RefCell<HashMap<usize, Result<Execs, Unresolved>>>,
    /// `data_branches_under` by block (asked at every execution of a loop, on every rank).
    branches: std::cell::RefCell<HashMap<usize, std::rc::Rc<BTreeSet<usize>>>>,
    /// Data-dependent branches assumed taken with probability ASSUMED_P.
    pub assumed: std::cell::RefCell<BTreeSet<String>>,
    pub main: Option<usize>,
}

fn text_idents(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && !w.as_bytes()[0].is_ascii_digit())
        .map(str::to_string)
}

impl<'a> Program<'a> {
    pub fn new(model: &'a ProgramModel) -> Program<'a> {
        let n = model.blocks.len();
        let index: HashMap<&str, usize> = model.blocks.iter().enumerate().map(|(i, b)| (b.id.as_str(), i)).collect();
        let mut children = vec![Vec::new(); n];
        for (i, b) in model.blocks.iter().enumerate() {
            if let Some(p) = b.parent.as_deref().and_then(|p| index.get(p)) {
                children[*p].push(i);
            }
        }
        let comm: HashMap<usize, &CommSite> =
            model.comm.iter().filter_map(|c| index.get(c.block.as_str()).map(|i| (*i, c))).collect();
        let func_block: HashMap<&str, usize> =
            model.functions.iter().filter_map(|f| index.get(f.block.as_str()).map(|i| (f.name.as_str(), *i))).collect();
        let func_params = model
            .functions
            .iter()
            .filter_map(|f| index.get(f.block.as_str()).map(|i| (*i, f.params.clone())))
            .collect();
        let mut calls: HashMap<usize, Vec<(usize, Vec<Option<Expr>>, u32)>> = HashMap::new();
        for c in &model.calls {
            if let (Some(b), Some(f)) = (index.get(c.block.as_str()), func_block.get(c.callee.as_str())) {
                calls.entry(*b).or_default().push((*f, c.args.clone(), c.line));
            }
        }
        let mut p = Program {
            model,
            children,
            comm,
            calls,
            func_params,
            has_comm: vec![false; n],
            vars: vec![BTreeSet::new(); n],
            own: Default::default(),
            contrib: Default::default(),
            branches: Default::default(),
            assumed: Default::default(),
            main: func_block.get("main").copied(),
        };
        // Local facts, then propagate to parents and callers until nothing changes (call
        // graphs may have cycles).
        for i in 0..n {
            let b = &model.blocks[i];
            let mut v = BTreeSet::new();
            let mut add = |e: &Expr| v.extend(e.vars());
            if let Some(e) = &b.count.expr {
                add(e);
            }
            if let Some(e) = b.trip.as_ref().and_then(|t| t.expr.as_ref()) {
                add(e);
            }
            if let Some(ind) = &b.induction {
                add(&ind.lo);
                add(&ind.hi);
            }
            if let Some(c) = &b.cond {
                add(c);
            }
            for e in b.ops.values() {
                add(e);
            }
            if b.kind == BlockKind::Loop && b.trip.as_ref().and_then(|t| t.expr.as_ref()).is_none() {
                v.insert(trip_var(i));
            }
            if let Some(site) = p.comm.get(&i) {
                p.has_comm[i] = true;
                for a in &site.args {
                    v.extend(text_idents(a));
                }
                for e in site.arg_values.iter().flatten().chain(site.bytes.iter()).chain(site.peer_expr.iter()) {
                    v.extend(e.vars());
                }
            }
            if let Some(cs) = p.calls.get(&i) {
                for (_, args, _) in cs {
                    for e in args.iter().flatten() {
                        v.extend(e.vars());
                    }
                }
            }
            p.vars[i] = v;
        }
        loop {
            let mut changed = false;
            for i in (0..n).rev() {
                let mut hc = p.has_comm[i];
                let mut vs = p.vars[i].clone();
                for &c in &p.children[i] {
                    hc |= p.has_comm[c];
                    vs.extend(p.vars[c].iter().cloned());
                }
                if let Some(cs) = p.calls.get(&i) {
                    for (f, _, _) in cs {
                        hc |= p.has_comm[*f];
                        // A callee's own variables are its parameters, bound at the call: only
                        // globals (rank, size, program parameters) leak through.
                        let params = &p.func_params[f];
                        vs.extend(p.vars[*f].iter().filter(|x| !params.contains(x)).cloned());
                    }
                }
                if hc != p.has_comm[i] || vs.len() != p.vars[i].len() {
                    p.has_comm[i] = hc;
                    p.vars[i] = vs;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        p
    }

    fn unresolved(&self, i: usize, what: String) -> Unresolved {
        let b = &self.model.blocks[i];
        Unresolved { file: b.file.clone(), line: b.line_start, what }
    }

    pub fn has_comm(&self, i: usize) -> bool {
        self.has_comm[i]
    }

    /// Executions of `i`'s subtree per execution of its parent (loops summed over their range).
    pub fn contrib_execs_pub(&self, i: usize) -> Result<Execs, Unresolved> {
        self.contrib_execs(i, 0)
    }

    /// The variables `i`'s formulas mention (callees' globals included).
    pub fn vars_of(&self, i: usize) -> &BTreeSet<String> {
        &self.vars[i]
    }

    /// The branch arms under block `i` (callees included) whose condition depends on data: the
    /// ones a sample run of `i` can measure.
    pub fn data_branches_under(&self, i: usize) -> std::rc::Rc<BTreeSet<usize>> {
        if let Some(r) = self.branches.borrow().get(&i) {
            return r.clone();
        }
        let r = std::rc::Rc::new(self.find_data_branches_under(i));
        self.branches.borrow_mut().insert(i, r.clone());
        r
    }

    fn find_data_branches_under(&self, i: usize) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        let mut seen = HashSet::new();
        let mut stack = vec![i];
        while let Some(b) = stack.pop() {
            if !seen.insert(b) {
                continue;
            }
            let blk = &self.model.blocks[b];
            if b != i && blk.kind == BlockKind::Branch && blk.cond.is_none() {
                out.insert(b);
            }
            stack.extend(self.children[b].iter().copied());
            if let Some(cs) = self.calls.get(&b) {
                stack.extend(cs.iter().map(|(f, _, _)| *f));
            }
        }
        out
    }

    /// Executions of every block of `i`'s subtree per execution of `i` (for a loop block: per
    /// iteration), callees included.
    pub fn own_execs(&self, i: usize) -> Result<Execs, Unresolved> {
        self.own_execs_depth(i, 0)
    }

    fn own_execs_depth(&self, i: usize, depth: usize) -> Result<Execs, Unresolved> {
        if let Some(r) = self.own.borrow().get(&i) {
            return r.clone();
        }
        if depth > 64 {
            return Err(self.unresolved(i, "calls nest deeper than 64 levels (recursion?)".into()));
        }
        let r = (|| {
            let mut out: HashMap<usize, Expr> = HashMap::new();
            let add = |out: &mut HashMap<usize, Expr>, j: usize, e: Expr| {
                let cur = out.remove(&j).unwrap_or(Expr::int(0));
                out.insert(j, cur.add(e));
            };
            add(&mut out, i, Expr::int(1));
            for &c in &self.children[i] {
                for (j, e) in self.contrib_execs(c, depth)?.iter() {
                    add(&mut out, *j, e.clone());
                }
            }
            if let Some(cs) = self.calls.get(&i) {
                for (f, args, line) in cs {
                    let fb = &self.model.blocks[*f];
                    if self.model.functions.iter().any(|x| x.block == fb.id && x.recursive) {
                        return Err(Unresolved {
                            file: self.model.blocks[i].file.clone(),
                            line: *line,
                            what: format!("call to {}, which is recursive: its cost needs a trace", fb.function),
                        });
                    }
                    let inner = self.own_execs_depth(*f, depth + 1)?;
                    for (j, e) in inner.iter() {
                        let e = self.bind_args(*f, args, e, i, *line)?;
                        add(&mut out, *j, e);
                    }
                }
            }
            let mut v: Vec<(usize, Expr)> = out.into_iter().collect();
            v.sort_by_key(|(j, _)| *j);
            Ok(Rc::new(v))
        })();
        self.own.borrow_mut().insert(i, r.clone());
        r
    }

    /// A callee's formula with its parameters replaced by the call's arguments.
    fn bind_args(&self, f: usize, args: &[Option<Expr>], e: &Expr, caller: usize, line: u32) -> Result<Expr, Unresolved> {
        let mut e = e.clone();
        for (k, p) in self.func_params[&f].iter().enumerate() {
            if !e.mentions(p) {
                continue;
            }
            match args.get(k).cloned().flatten() {
                Some(a) => e = e.subst(p, &a),
                None => {
                    return Err(Unresolved {
                        file: self.model.blocks[caller].file.clone(),
                        line,
                        what: format!(
                            "argument {} ({p}) of the call to {} depends on data",
                            k + 1,
                            self.model.blocks[f].function
                        ),
                    })
                }
            }
        }
        Ok(e)
    }

    /// Executions of `c`'s subtree per execution of its parent.
    fn contrib_execs(&self, c: usize, depth: usize) -> Result<Execs, Unresolved> {
        if let Some(r) = self.contrib.borrow().get(&c) {
            return r.clone();
        }
        let b = &self.model.blocks[c];
        let r = (|| {
            let own = self.own_execs_depth(c, depth)?;
            let out: Vec<(usize, Expr)> = match b.kind {
                BlockKind::Loop => {
                    let trip = b.trip.as_ref().and_then(|t| t.expr.clone()).unwrap_or_else(|| Expr::var(&trip_var(c)));
                    own.iter()
                        .map(|(j, e)| {
                            let e = match &b.induction {
                                Some(ind) if e.mentions(&ind.var) => expr::sum(&ind.var, &ind.lo, &ind.hi, e),
                                _ => trip.clone().mul(e.clone()),
                            };
                            (*j, e)
                        })
                        .collect()
                }
                BlockKind::Branch => {
                    let cond = match &b.cond {
                        Some(c) => (**c).clone(),
                        None => {
                            self.assumed.borrow_mut().insert(format!(
                                "{}:{}: branch depends on data: assumed taken half the time (range: never to always)",
                                b.file, b.line_start
                            ));
                            Expr::var(&branch_rate_var(c))
                        }
                    };
                    own.iter().map(|(j, e)| (*j, cond.clone().mul(e.clone()))).collect()
                }
                _ => own.iter().cloned().collect(),
            };
            Ok(Rc::new(out))
        })();
        self.contrib.borrow_mut().insert(c, r.clone());
        r
    }
}


/// Where a rank's skeleton goes.
pub trait Sink {
    fn compute(&mut self, execs: &[(usize, f64)]) -> Result<(), Unresolved>;
    /// MPI_Init returned: what was computed before it is outside the predicted span (the span
    /// validate measures starts there).
    fn discard_compute(&mut self) {}
    fn action(&mut self, a: TraceAction) -> Result<(), Unresolved>;
    fn begin_loop(&mut self, k: u64) -> Result<(), Unresolved>;
    fn end_loop(&mut self) -> Result<(), Unresolved>;
    /// MPI_Cart_create made this rank part of a grid: `dims` and its `coords` there, the
    /// per-rank symbols cart_dims<k> and cart_coord<k> of the analysis's formulas.
    fn cartesian(&mut self, _dims: &[i64], _coords: &[i64]) {}
}

/// Turns block executions into seconds: writes compute actions.
pub fn compute_action(seconds: f64) -> TraceAction {
    TraceAction::Compute { compute: Compute::Seconds(seconds) }
}
