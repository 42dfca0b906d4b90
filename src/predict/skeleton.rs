//! Skeleton execution of a ProgramModel (seed 003's static evaluation): for one rank, with rank,
//! size and the parameters bound, walk the blocks in program order, resolve rank-dependent
//! branches and peer expressions, and emit compute bursts and MPI actions. Subtrees without
//! communication are not walked: their block executions come from symbolic sums (the same
//! summation the front end uses for counts), evaluated once per burst.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use crate::model::analysis::{BlockKind, CommSite, ProgramModel};
use crate::model::expr::{self, Expr};
use crate::model::trace::{Compute, Peer, Tag, TraceAction, COMM_WORLD};
use crate::mpi::cart::{cart_coords, cart_neighbour, dims_create};

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
    /// Evaluated executions: (block, contrib or own, values of the variables it mentions).
    evaluated: std::cell::RefCell<HashMap<(usize, bool, Vec<u64>), Rc<Vec<(usize, f64)>>>>,
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
            evaluated: Default::default(),
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
    pub fn data_branches_under(&self, i: usize) -> BTreeSet<usize> {
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

/// "file:line: what" reasons from the front end, without their position (Unresolved adds it).
fn strip_pos(s: &str) -> String {
    let mut parts = s.splitn(3, ": ");
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), Some(b), Some(rest)) if a.contains(':') && b.is_empty() => rest.to_string(),
        _ => match s.split_once(": ") {
            Some((pos, rest)) if pos.rsplit(':').next().is_some_and(|l| l.parse::<u32>().is_ok()) => rest.to_string(),
            _ => s.to_string(),
        },
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

/// One rank's state while walking.
pub struct Rank<'p, 'a> {
    prog: &'p Program<'a>,
    pub env: HashMap<String, f64>,
    /// Values the skeleton computed for variables MPI routines write (MPI_Cart_shift's
    /// neighbours): normalised argument text -> value.
    outs: HashMap<String, f64>,
    /// Outstanding requests: normalised request text -> id.
    reqs: Vec<(String, u64)>,
    next_req: u64,
    /// Communicator variables that stand for the world (cartesian ones without reordering).
    world_comms: BTreeSet<String>,
    cart_dims: Vec<i64>,
    cart_periods: Vec<bool>,
    pending: Vec<(usize, f64)>,
}

impl<'p, 'a> Rank<'p, 'a> {
    pub fn new(prog: &'p Program<'a>, env: HashMap<String, f64>) -> Rank<'p, 'a> {
        Rank {
            prog,
            env,
            outs: HashMap::new(),
            reqs: Vec::new(),
            next_req: 0,
            world_comms: ["MPI_COMM_WORLD".to_string()].into_iter().collect(),
            cart_dims: Vec::new(),
            cart_periods: Vec::new(),
            pending: Vec::new(),
        }
    }

    fn rank(&self) -> i64 {
        self.env.get("rank").copied().unwrap_or(0.0) as i64
    }
    fn size(&self) -> i64 {
        self.env.get("size").copied().unwrap_or(1.0) as i64
    }

    fn eval(&self, e: &Expr, i: usize, what: &str) -> Result<f64, Unresolved> {
        let p = self.env.get(ASSUMED_P).copied();
        e.eval(&|v| self.env.get(v).copied().or_else(|| v.starts_with(ASSUMED_P).then_some(p).flatten()))
            .map_err(|err| self.prog.unresolved(i, format!("{what}: {err}")))
    }

    fn flush(&mut self, sink: &mut dyn Sink) -> Result<(), Unresolved> {
        if !self.pending.is_empty() {
            let p = std::mem::take(&mut self.pending);
            sink.compute(&p)?;
        }
        Ok(())
    }

    /// Queues the block executions of `execs` times `mult`.
    fn charge(&mut self, execs: &[(usize, Expr)], mult: f64, i: usize) -> Result<(), Unresolved> {
        for (j, e) in execs {
            let n = self.eval(e, i, "execution count")? * mult;
            if n != 0.0 {
                self.pending.push((*j, n));
            }
        }
        Ok(())
    }

    /// Queues the executions of block `i`'s subtree (as seen from its parent when `contrib`),
    /// evaluated once per distinct value of the variables the subtree mentions.
    fn charge_subtree(&mut self, i: usize, contrib: bool) -> Result<(), Unresolved> {
        let prog = self.prog;
        let mut key_vals: Vec<u64> = prog.vars[i].iter().map(|v| self.env.get(v).map_or(u64::MAX, |x| x.to_bits())).collect();
        key_vals.push(self.env.get(ASSUMED_P).map_or(u64::MAX, |x| x.to_bits()));
        let key = (i, contrib, key_vals);
        let cached = prog.evaluated.borrow().get(&key).cloned();
        let vals = match cached {
            Some(v) => v,
            None => {
                let ex = if contrib { prog.contrib_execs(i, 0)? } else { prog.own_execs(i)? };
                let mut out = Vec::with_capacity(ex.len());
                for (j, e) in ex.iter() {
                    let n = self.eval(e, i, "execution count")?;
                    if n != 0.0 {
                        out.push((*j, n));
                    }
                }
                let out = Rc::new(out);
                prog.evaluated.borrow_mut().insert(key, out.clone());
                out
            }
        };
        self.pending.extend(vals.iter().copied());
        Ok(())
    }

    /// Runs main.
    pub fn run(&mut self, sink: &mut dyn Sink) -> Result<(), Unresolved> {
        let Some(m) = self.prog.main else {
            return Err(Unresolved { file: self.prog.model.files.first().cloned().unwrap_or_default(), line: 0, what: "no main function".into() });
        };
        self.exec(m, sink)?;
        self.flush(sink)
    }

    /// One execution of block `i` (for a loop block: one iteration).
    fn exec(&mut self, i: usize, sink: &mut dyn Sink) -> Result<(), Unresolved> {
        let prog = self.prog;
        if !prog.has_comm[i] {
            return self.charge_subtree(i, false);
        }
        self.pending.push((i, 1.0));
        if let Some(site) = prog.comm.get(&i) {
            self.flush(sink)?;
            self.comm_site(i, site, sink)?;
        }
        if let Some(cs) = prog.calls.get(&i) {
            for (f, args, line) in cs.clone() {
                if !prog.has_comm[f] {
                    let inner = prog.own_execs(f)?;
                    let mut bound = Vec::with_capacity(inner.len());
                    for (j, e) in inner.iter() {
                        bound.push((*j, prog.bind_args(f, &args, e, i, line)?));
                    }
                    self.charge(&bound, 1.0, i)?;
                    continue;
                }
                // Walk the callee with its parameters bound to the argument values.
                let mut saved = Vec::new();
                for (k, p) in prog.func_params[&f].iter().enumerate() {
                    let v = match args.get(k).cloned().flatten() {
                        Some(a) => a.eval_map(&self.env).ok(),
                        None => None,
                    };
                    saved.push((p.clone(), self.env.remove(p)));
                    if let Some(v) = v {
                        self.env.insert(p.clone(), v);
                    }
                }
                let r = self.exec(f, sink);
                for (p, old) in saved {
                    match old {
                        Some(v) => self.env.insert(p, v),
                        None => self.env.remove(&p),
                    };
                }
                r?;
            }
        }
        for c in prog.children[i].clone() {
            self.child(c, sink)?;
        }
        Ok(())
    }

    fn child(&mut self, c: usize, sink: &mut dyn Sink) -> Result<(), Unresolved> {
        let prog = self.prog;
        if !prog.has_comm[c] {
            return self.charge_subtree(c, true);
        }
        let b = &prog.model.blocks[c];
        match b.kind {
            BlockKind::Branch => {
                let Some(cond) = &b.cond else {
                    return Err(prog.unresolved(c, "branch around communication depends on data".into()));
                };
                let p = self.eval(cond, c, "branch condition")?;
                if p == 1.0 {
                    self.exec(c, sink)
                } else if p == 0.0 {
                    Ok(())
                } else {
                    Err(prog.unresolved(c, format!("branch around communication taken with probability {p}")))
                }
            }
            BlockKind::Loop => {
                let Some(trip) = b.trip.as_ref().and_then(|t| t.expr.clone()) else {
                    let why = b.trip.as_ref().and_then(|t| t.reason.clone()).unwrap_or_default();
                    return Err(prog.unresolved(c, format!("loop around communication: {}", strip_pos(&why))));
                };
                let k = self.eval(&trip, c, "loop count")?;
                let k = k.max(0.0).round() as u64;
                match &b.induction {
                    Some(ind) if prog.vars[c].contains(&ind.var) => {
                        let lo = self.eval(&ind.lo, c, "loop start")? as i64;
                        let saved = self.env.remove(&ind.var);
                        for v in lo..lo + k as i64 {
                            self.env.insert(ind.var.clone(), v as f64);
                            self.exec(c, sink)?;
                        }
                        self.env.remove(&ind.var);
                        if let Some(s) = saved {
                            self.env.insert(ind.var.clone(), s);
                        }
                        Ok(())
                    }
                    _ => {
                        if k == 0 {
                            return Ok(());
                        }
                        // Every iteration does the same: one iteration inside `loop k`.
                        self.flush(sink)?;
                        sink.begin_loop(k)?;
                        self.exec(c, sink)?;
                        self.flush(sink)?;
                        sink.end_loop()
                    }
                }
            }
            _ => self.exec(c, sink),
        }
    }

    /// An argument's value: its formula, else what an earlier MPI routine wrote there.
    fn arg(&self, site: &CommSite, k: usize) -> Option<f64> {
        if let Some(Some(e)) = site.arg_values.get(k) {
            if let Ok(v) = e.eval_map(&self.env) {
                return Some(v);
            }
        }
        let key = self.normalise(site.args.get(k)?)?;
        self.outs.get(&key).copied()
    }

    /// `&lo[d]` -> `lo[2]` with d bound; None when an index cannot be evaluated.
    fn normalise(&self, text: &str) -> Option<String> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let t = t.trim_start_matches('&').trim_start_matches('(').trim_end_matches(')').to_string();
        match t.split_once('[') {
            Some((name, rest)) => {
                let idx = rest.strip_suffix(']')?;
                let v = Expr::parse(idx).ok()?.eval_map(&self.env).ok()?;
                Some(format!("{name}[{}]", v as i64))
            }
            None => Some(t),
        }
    }

    fn need(&self, site: &CommSite, i: usize, k: usize, what: &str) -> Result<f64, Unresolved> {
        self.arg(site, k).ok_or_else(|| {
            let text = site.args.get(k).cloned().unwrap_or_default();
            let hint = match site.arg_values.get(k) {
                Some(Some(e)) => match e.eval_map(&self.env) {
                    Err(err) => format!(" ({err})"),
                    Ok(_) => String::new(),
                },
                _ => String::new(),
            };
            self.prog.unresolved(i, format!("{}: {what} `{text}` is not known before running{hint}", site.call))
        })
    }

    fn bytes(&self, site: &CommSite, i: usize) -> Result<u64, Unresolved> {
        if site.bytes.is_none() {
            if let Some(b) = self.bytes_from_list(site) {
                return Ok(b);
            }
        }
        match &site.bytes {
            Some(e) => Ok(self.eval(e, i, &format!("{}: message size", site.call))?.max(0.0).round() as u64),
            None => Err(self.prog.unresolved(
                i,
                format!("{}: message size `{}` is not known before running", site.call, site.size_text.clone().unwrap_or_default()),
            )),
        }
    }

    /// A count read from a constant-initialised array (`face[d]` with `int face[3] = {...}`)
    /// times a predefined datatype's size.
    fn bytes_from_list(&self, site: &CommSite) -> Option<u64> {
        let sig = crate::frontend::mpi::comm_signature(&site.call)?;
        let (ck, dk) = (sig.count?, sig.datatype?);
        let list = site.arg_lists.get(&(ck as u32))?;
        let key = self.normalise(site.args.get(ck)?)?;
        let idx: usize = key.split_once('[')?.1.strip_suffix(']')?.parse().ok()?;
        let count = list.get(idx)?.as_ref()?.eval_map(&self.env).ok()?;
        let size = crate::frontend::mpi::datatype_size(site.args.get(dk)?.trim())?;
        Some((count * size as f64).max(0.0).round() as u64)
    }

    fn comm_of(&self, site: &CommSite, i: usize, k: Option<usize>) -> Result<u32, Unresolved> {
        let Some(k) = k else { return Ok(COMM_WORLD) };
        let text = site.args.get(k).map(|s| s.trim().to_string()).unwrap_or_default();
        if self.world_comms.contains(&text) {
            Ok(COMM_WORLD)
        } else {
            Err(self.prog.unresolved(i, format!("{}: communicator `{text}` is not modelled statically", site.call)))
        }
    }

    fn tag(&self, site: &CommSite, k: usize) -> Tag {
        match self.arg(site, k) {
            Some(v) if v >= 0.0 => Tag::Value(v as i32),
            _ => Tag::Any,
        }
    }

    fn new_req(&mut self, site: &CommSite, k: usize) -> u64 {
        let id = self.next_req;
        self.next_req += 1;
        let key = site.args.get(k).and_then(|t| self.normalise(t)).unwrap_or_default();
        self.reqs.push((key, id));
        id
    }

    fn comm_site(&mut self, i: usize, site: &CommSite, sink: &mut dyn Sink) -> Result<(), Unresolved> {
        let name = site.call.as_str();
        let size = self.size() as u32;
        let peer = |v: f64| -> Option<Peer> {
            if v == -2.0 {
                None
            } else if v < 0.0 {
                Some(Peer::Any)
            } else {
                Some(Peer::Rank(v as u32))
            }
        };
        let check = |p: Option<Peer>, what: &str| -> Result<Option<Peer>, Unresolved> {
            if let Some(Peer::Rank(r)) = p {
                if r >= size {
                    return Err(self.prog.unresolved(i, format!("{name}: {what} {r} is not a rank of {size}")));
                }
            }
            Ok(p)
        };
        match name {
            "MPI_Send" | "MPI_Ssend" | "MPI_Bsend" | "MPI_Rsend" => {
                let to = check(peer(self.need(site, i, 3, "destination")?), "destination")?;
                if let Some(Peer::Rank(to)) = to {
                    let bytes = self.bytes(site, i)?;
                    let tag = self.arg(site, 4).unwrap_or(0.0) as i32;
                    sink.action(TraceAction::Send {
                        to,
                        bytes,
                        tag,
                        comm: self.comm_of(site, i, Some(5))?,
                        buffered: site.call == "MPI_Bsend",
                    })?;
                }
            }
            "MPI_Recv" => {
                let from = check(peer(self.need(site, i, 3, "source")?), "source")?;
                if let Some(from) = from {
                    let bytes = self.bytes(site, i).ok();
                    sink.action(TraceAction::Recv { from, bytes, tag: self.tag(site, 4), comm: self.comm_of(site, i, Some(5))? })?;
                }
            }
            "MPI_Isend" | "MPI_Issend" | "MPI_Ibsend" | "MPI_Irsend" | "MPI_Irecv" => {
                let send = name != "MPI_Irecv";
                let p = check(peer(self.need(site, i, 3, if send { "destination" } else { "source" })?), "peer")?;
                let req = self.new_req(site, 6);
                let comm = self.comm_of(site, i, Some(5))?;
                match (p, send) {
                    // MPI_PROC_NULL: the request completes at once; waits on it return at once.
                    (None, _) => self.reqs.retain(|(_, r)| *r != req),
                    (Some(Peer::Rank(to)), true) => {
                        let bytes = self.bytes(site, i)?;
                        let tag = self.arg(site, 4).unwrap_or(0.0) as i32;
                        sink.action(TraceAction::Isend { req, to, bytes, tag, comm })?;
                    }
                    (Some(Peer::Any), true) => return Err(self.prog.unresolved(i, format!("{name}: negative destination"))),
                    (Some(from), false) => {
                        let bytes = self.bytes(site, i).ok();
                        sink.action(TraceAction::Irecv { req, from, bytes, tag: self.tag(site, 4), comm })?;
                    }
                }
            }
            "MPI_Wait" => {
                let key = site.args.first().and_then(|t| self.normalise(t)).unwrap_or_default();
                if let Some(pos) = self.reqs.iter().position(|(k, _)| *k == key) {
                    let (_, req) = self.reqs.remove(pos);
                    sink.action(TraceAction::Wait { req })?;
                }
            }
            "MPI_Waitall" | "MPI_Waitsome" | "MPI_Waitany" => {
                if !self.reqs.is_empty() {
                    self.reqs.clear();
                    sink.action(TraceAction::Waitall { reqs: Vec::new() })?;
                }
            }
            "MPI_Test" | "MPI_Testall" | "MPI_Testany" | "MPI_Testsome" | "MPI_Probe" | "MPI_Iprobe" => {}
            "MPI_Sendrecv" | "MPI_Sendrecv_replace" => {
                let (src_k, rtag_k, comm_k) = if name == "MPI_Sendrecv" { (8, 9, 10) } else { (5, 6, 7) };
                let to = check(peer(self.need(site, i, 3, "destination")?), "destination")?;
                let from = check(peer(self.need(site, i, src_k, "source")?), "source")?;
                let comm = self.comm_of(site, i, Some(comm_k))?;
                let stag = self.arg(site, 4).unwrap_or(0.0) as i32;
                let rtag = self.tag(site, rtag_k);
                match (to, from) {
                    (None, None) => {}
                    (Some(Peer::Rank(to)), None) => {
                        sink.action(TraceAction::Send { to, bytes: self.bytes(site, i)?, tag: stag, comm, buffered: false })?
                    }
                    (None, Some(from)) => {
                        sink.action(TraceAction::Recv { from, bytes: self.bytes(site, i).ok(), tag: rtag, comm })?
                    }
                    (Some(Peer::Rank(to)), Some(from)) => {
                        let b = self.bytes(site, i)?;
                        sink.action(TraceAction::Sendrecv { to, send_bytes: b, send_tag: stag, from, recv_bytes: Some(b), recv_tag: rtag, comm })?
                    }
                    (Some(Peer::Any), _) => return Err(self.prog.unresolved(i, format!("{name}: negative destination"))),
                }
            }
            "MPI_Barrier" => sink.action(TraceAction::Barrier { comm: self.comm_of(site, i, Some(0))? })?,
            "MPI_Bcast" | "MPI_Reduce" | "MPI_Gather" | "MPI_Scatter" => {
                let (root_k, comm_k) = match name {
                    "MPI_Bcast" => (3, 4),
                    "MPI_Reduce" => (5, 6),
                    _ => (6, 7),
                };
                let root = self.need(site, i, root_k, "root")?;
                let root = check(peer(root), "root")?;
                let Some(Peer::Rank(root)) = root else {
                    return Err(self.prog.unresolved(i, format!("{name}: root is not a rank")));
                };
                let bytes = self.bytes(site, i)?;
                let comm = self.comm_of(site, i, Some(comm_k))?;
                sink.action(match name {
                    "MPI_Bcast" => TraceAction::Bcast { bytes, root, comm },
                    "MPI_Reduce" => TraceAction::Reduce { bytes, root, comm },
                    "MPI_Gather" => TraceAction::Gather { bytes, root, comm },
                    _ => TraceAction::Scatter { bytes, root, comm },
                })?;
            }
            "MPI_Allreduce" | "MPI_Scan" | "MPI_Exscan" | "MPI_Allgather" | "MPI_Alltoall" | "MPI_Reduce_scatter_block" => {
                let bytes = self.bytes(site, i)?;
                let comm = self.comm_of(site, i, Some(if matches!(name, "MPI_Allgather" | "MPI_Alltoall") { 6 } else { 5 }))?;
                sink.action(match name {
                    "MPI_Allreduce" => TraceAction::Allreduce { bytes, comm },
                    "MPI_Allgather" => TraceAction::Allgather { bytes, comm },
                    "MPI_Alltoall" => TraceAction::Alltoall { bytes, comm },
                    "MPI_Reduce_scatter_block" => TraceAction::ReduceScatter { counts: vec![bytes; size as usize], comm },
                    _ => TraceAction::Scan { bytes, comm },
                })?;
            }
            "MPI_Dims_create" => {
                let nnodes = self.need(site, i, 0, "number of processes")? as i64;
                let ndims = self.need(site, i, 1, "number of dimensions")? as usize;
                let given: Vec<i64> = site
                    .arg_lists
                    .get(&2)
                    .map(|v| v.iter().map(|e| e.as_ref().and_then(|e| e.eval_map(&self.env).ok()).unwrap_or(0.0) as i64).collect())
                    .unwrap_or_else(|| vec![0; ndims]);
                let dims = dims_create(nnodes, &given, ndims)
                    .ok_or_else(|| self.prog.unresolved(i, format!("MPI_Dims_create: {nnodes} processes do not fit the given dimensions")))?;
                for (k, d) in dims.iter().enumerate() {
                    self.env.insert(format!("cart_dims{k}"), *d as f64);
                }
                self.cart_dims = dims;
            }
            "MPI_Cart_create" => {
                let ndims = self.need(site, i, 1, "number of dimensions")? as usize;
                if self.cart_dims.len() != ndims {
                    let dims: Option<Vec<i64>> = site
                        .arg_lists
                        .get(&2)
                        .and_then(|v| v.iter().map(|e| e.as_ref().and_then(|e| e.eval_map(&self.env).ok()).map(|x| x as i64)).collect());
                    self.cart_dims = dims.ok_or_else(|| self.prog.unresolved(i, "MPI_Cart_create: dimensions not known".into()))?;
                }
                self.cart_periods = match site.arg_lists.get(&3) {
                    Some(v) => v.iter().map(|e| e.as_ref().and_then(|e| e.eval_map(&self.env).ok()).unwrap_or(0.0) != 0.0).collect(),
                    None => return Err(self.prog.unresolved(i, "MPI_Cart_create: periods not known before running".into())),
                };
                let total: i64 = self.cart_dims.iter().product();
                if total != self.size() {
                    return Err(self.prog.unresolved(i, format!("MPI_Cart_create: grid of {total} for {} ranks", self.size())));
                }
                if let Some(out) = site.args.get(5).and_then(|t| self.normalise(t)) {
                    // Without reordering (and mpicast does not reorder) rank r keeps its place.
                    self.world_comms.insert(out);
                }
                let coords = cart_coords(self.rank(), &self.cart_dims);
                for (k, c) in coords.iter().enumerate() {
                    self.env.insert(format!("cart_dims{k}"), self.cart_dims[k] as f64);
                    self.env.insert(format!("cart_coord{k}"), *c as f64);
                }
            }
            "MPI_Cart_coords" => {
                let r = self.need(site, i, 1, "rank")? as i64;
                for (k, c) in cart_coords(r, &self.cart_dims).iter().enumerate() {
                    self.env.insert(format!("cart_coord{k}"), *c as f64);
                }
            }
            "MPI_Cart_shift" => {
                let dim = self.need(site, i, 1, "direction")? as usize;
                let disp = self.need(site, i, 2, "displacement")? as i64;
                if dim >= self.cart_dims.len() {
                    return Err(self.prog.unresolved(i, format!("MPI_Cart_shift: direction {dim} outside the grid")));
                }
                let shifted = |by: i64| -> f64 {
                    cart_neighbour(self.rank(), &self.cart_dims, &self.cart_periods, dim, by).map_or(-2.0, |r| r as f64)
                };
                let (src, dst) = (shifted(-disp), shifted(disp));
                for (k, v) in [(3, src), (4, dst)] {
                    if let Some(key) = site.args.get(k).and_then(|t| self.normalise(t)) {
                        self.outs.insert(key, v);
                    }
                }
            }
            "P2Psend" => {
                if let Some(Peer::Rank(to)) = check(peer(self.need(site, i, 0, "peer")?), "peer")? {
                    let req = self.next_req;
                    self.next_req += 1;
                    self.reqs.push((String::new(), req));
                    sink.action(TraceAction::Isend { req, to, bytes: self.bytes(site, i)?, tag: 0, comm: COMM_WORLD })?;
                }
            }
            "P2Preceive" => {
                if let Some(from) = check(peer(self.need(site, i, 0, "peer")?), "peer")? {
                    sink.action(TraceAction::Recv { from, bytes: self.bytes(site, i).ok(), tag: Tag::Any, comm: COMM_WORLD })?;
                }
            }
            "P2Pwait" => {
                if !self.reqs.is_empty() {
                    self.reqs.clear();
                    sink.action(TraceAction::Waitall { reqs: Vec::new() })?;
                }
            }
            // A converged flag (int) or a double reduced over every peer; the synchronous
            // scheme's blocking form (the asynchronous schemes' epochs are not modelled statically).
            "P2Pconverged" => sink.action(TraceAction::Allreduce { bytes: 4, comm: COMM_WORLD })?,
            "P2Pallreduce" => sink.action(TraceAction::Allreduce { bytes: 8, comm: COMM_WORLD })?,
            "P2Pbarrier" => sink.action(TraceAction::Barrier { comm: COMM_WORLD })?,
            "P2Pset_scheme" => {}
            "MPI_Cart_rank" | "MPI_Comm_split" => {
                return Err(self.prog.unresolved(i, format!("{name} is not modelled statically")));
            }
            other => return Err(self.prog.unresolved(i, format!("{other} is not modelled statically (v-collectives need their counts)"))),
        }
        Ok(())
    }
}

/// Turns block executions into seconds: writes compute actions.
pub fn compute_action(seconds: f64) -> TraceAction {
    TraceAction::Compute { compute: Compute::Seconds(seconds) }
}
