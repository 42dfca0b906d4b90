//! How a rank's work and messages change from K to N' ranks: per block, the ratio of its
//! executions (the front end's count formulas evaluated at both sizes), per message its size
//! (the communication site's byte formula), with the weak or strong scaling assumptions where
//! no formula resolves.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::model::analysis::{BlockKind, ProgramModel};
use crate::model::expr::{Expr, FormulaKey, FormulaKeys, KeyTerms};
use crate::model::hash::FastMap;
use crate::model::trace::{Compute, TraceAction};

/// How compute and message sizes change with the number of ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// As the program itself decomposes its work: the front end's formulas evaluated with the new
    /// size where they resolve; what they do not cover keeps its size (data-dependent iteration
    /// counts) and halo messages follow the grid's faces.
    Program,
    /// Per-rank work and messages unchanged.
    Weak,
    /// The whole problem fixed: compute divided by N'/K (workers' by (N'-1)/(K-1)), halo
    /// messages shrunk with the faces of the decomposition (seed 001's g(p) = p^-((r-1)/r) for
    /// r-dimensional decompositions).
    Strong,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "program" => Some(Mode::Program),
            "weak" => Some(Mode::Weak),
            "strong" => Some(Mode::Strong),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Mode::Program => "program",
            Mode::Weak => "weak",
            Mode::Strong => "strong",
        }
    }
}

/// What the scaler resolved, for the report.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Block executions (weighted by their cost) whose ratio came from formulas, and in all.
    pub formula_weight: f64,
    pub total_weight: f64,
    /// Messages whose size came from a site's formula, from the decomposition's faces, or kept.
    pub bytes_formula: u64,
    pub bytes_faces: u64,
    pub bytes_kept: u64,
    /// Per block: traced executions, scaled executions, traced seconds, and whether every
    /// burst's ratio came from formulas.
    pub blocks: std::collections::BTreeMap<u32, (f64, f64, f64, bool)>,
    /// Communicator definitions whose members came from the static path's evaluation at N'.
    pub comms_evaluated: u64,
}

pub struct Scaler<'m> {
    model: &'m ProgramModel,
    pub mode: Mode,
    /// Seconds per execution of each block (nominal costs), to weigh blocks.
    cost: Vec<f64>,
    parent: Vec<Option<usize>>,
    /// Per function: its unique call site (index into model.calls) and the function's parameters.
    unique_call: HashMap<String, Option<usize>>,
    /// Per function: every call site.
    calls_of: HashMap<String, Vec<usize>>,
    params: HashMap<String, Vec<String>>,
    block_of_id: HashMap<String, usize>,
    /// Per block: the memo key of the formulas its ratio reads.
    keys: FormulaKeys,
    /// The rank last asked for ((rank, size, variables)), the terms of its keys computed so
    /// far and its key per block.
    rank_keys: RefCell<(Option<(u64, u64, usize)>, KeyTerms, Vec<Option<Vec<u64>>>)>,
    /// Per block, rank and the values its ratio reads: the ratio and whether formulas gave it,
    /// or None where it comes from the static path's executions of the rank at each size.
    memo: RefCell<FastMap<(usize, u32, Vec<u64>), Option<(f64, bool)>>>,
    pub stats: RefCell<Stats>,
    /// The static path's evaluation at both sizes (the program's own arithmetic): the trips of
    /// loops the front end cannot count, and the executions of blocks whose total the formulas
    /// only approximate (a call site under such a loop) or cannot give (a function called
    /// through a pointer).
    pub evaluated: crate::scale::Evaluated,
    /// Set when `total` took a call site's count from a block around it.
    approximated: std::cell::Cell<bool>,
    /// Set when `total` reached a function no call site names (called through a pointer).
    uncalled: std::cell::Cell<bool>,
    /// Per communication site of the model: its family, whether its peer is a constant, and
    /// the variable its peer is when it is a single one (`bytes_formula`, once per action).
    site_peers: Vec<SitePeer>,
    /// Per family of [`FAMILIES`]: the memo key of its sites' byte and peer formulas, and whether
    /// its sites read the old peer (a constant peer) or both peers (a peer variable).
    byte_keys: FormulaKeys,
    byte_peers: Vec<(bool, bool)>,
    /// Per environment (rank, size and number of variables): its terms and its key per family.
    env_keys: RefCell<FastMap<(u64, u64, usize), (KeyTerms, Vec<Option<Vec<u64>>>)>>,
    /// `bytes_formula`'s answers per family, traced size, peers read and the keys of both
    /// environments: ranks of a decomposition that differ only by their coordinates share them
    /// (65,536 ranks of jacobi2d evaluated every site's formula for each of their messages).
    byte_memo: RefCell<FastMap<ByteKey, Option<u64>>>,
    /// The ratios of the rank last asked for (its environment's rank, size and number of
    /// variables, and its origin), per block: a rank's bursts name the same blocks again.
    rank_ratios: RefCell<(Option<(u64, u64, usize, u32)>, Vec<Option<(f64, bool)>>)>,
}

type ByteKey = (usize, u64, Option<u32>, Option<u32>, Vec<u64>, Vec<u64>);

/// The families of actions that communication sites are matched with (`family`).
const FAMILIES: [&str; 11] = ["send", "recv", "sendrecv", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall", "scan"];

/// What `bytes_formula` reads of a communication site's peer.
struct SitePeer {
    family: Option<&'static str>,
    constant: bool,
    var: Option<String>,
}

fn local_factor(model: &ProgramModel, b: usize) -> Option<&Expr> {
    let blk = &model.blocks[b];
    match blk.kind {
        BlockKind::Loop => blk.trip.as_ref().and_then(|t| t.expr.as_ref()),
        BlockKind::Branch => blk.cond.as_deref(),
        _ => None,
    }
}

impl<'m> Scaler<'m> {
    pub fn new(model: &'m ProgramModel, mode: Mode, cost: Vec<f64>) -> Scaler<'m> {
        let block_of_id: HashMap<String, usize> = model.blocks.iter().enumerate().map(|(i, b)| (b.id.clone(), i)).collect();
        let parent = model.blocks.iter().map(|b| b.parent.as_ref().and_then(|p| block_of_id.get(p).copied())).collect();
        let mut calls: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, c) in model.calls.iter().enumerate() {
            calls.entry(c.callee.clone()).or_default().push(i);
        }
        let unique_call = model
            .functions
            .iter()
            .map(|f| {
                let sites = calls.get(&f.name).cloned().unwrap_or_default();
                (f.name.clone(), if sites.len() == 1 { Some(sites[0]) } else { None })
            })
            .collect();
        let params = model.functions.iter().map(|f| (f.name.clone(), f.params.clone())).collect();
        let calls_of = calls;
        let mut s = Scaler {
            calls_of,
            model,
            mode,
            cost,
            parent,
            unique_call,
            params,
            block_of_id,
            keys: FormulaKeys::default(),
            byte_keys: FormulaKeys::default(),
            byte_peers: Vec::new(),
            env_keys: RefCell::new(FastMap::default()),
            byte_memo: RefCell::new(FastMap::default()),
            rank_ratios: RefCell::new((None, Vec::new())),
            rank_keys: RefCell::new((None, KeyTerms::default(), Vec::new())),
            memo: RefCell::new(FastMap::default()),
            stats: RefCell::new(Stats::default()),
            evaluated: Default::default(),
            approximated: std::cell::Cell::new(false),
            uncalled: std::cell::Cell::new(false),
            site_peers: model
                .comm
                .iter()
                .map(|site| {
                    let vars = site.peer_expr.as_ref().map(|p| p.vars()).unwrap_or_default();
                    SitePeer {
                        family: site_family(&site.call),
                        constant: site.peer_expr.is_some() && vars.is_empty(),
                        var: site.peer_expr.as_ref().and_then(|p| {
                            let name = vars.iter().next()?.clone();
                            (vars.len() == 1 && p.to_string() == name).then_some(name)
                        }),
                    }
                })
                .collect(),
        };
        let sites_of = |f: &'static str| model.comm.iter().zip(&s.site_peers).filter(move |(_, sp)| sp.family == Some(f));
        let byte_keys = FormulaKeys::new(FAMILIES.iter().map(|f| FormulaKey::new(sites_of(f).flat_map(|(site, _)| site.bytes.iter().chain(site.peer_expr.iter())))).collect());
        let byte_peers = FAMILIES.iter().map(|f| (sites_of(f).any(|(_, sp)| sp.constant), sites_of(f).any(|(_, sp)| sp.var.is_some()))).collect();
        (s.byte_keys, s.byte_peers) = (byte_keys, byte_peers);
        s.keys = FormulaKeys::new(
            (0..model.blocks.len())
                .map(|b| {
                    let mut exprs = Vec::new();
                    s.block_exprs(b, 0, &mut exprs);
                    FormulaKey::new(exprs)
                })
                .collect(),
        );
        s
    }

    /// Block `b`'s key in the environment of a rank at the new size, computed once per rank
    /// (every burst of the rank asks again).
    fn rank_key(&self, b: usize, new: &HashMap<String, f64>) -> Vec<u64> {
        let id = env_id(new);
        let mut c = self.rank_keys.borrow_mut();
        if c.0 != Some(id) {
            *c = (Some(id), self.keys.terms(), vec![None; self.model.blocks.len()]);
        }
        let (_, terms, keys) = &mut *c;
        keys[b].get_or_insert_with(|| self.keys.key(b, new, terms)).clone()
    }

    /// Every formula a block's ratio may read (its count, the chain of loop trips and branch
    /// conditions above it, and the arguments of the call that reaches its function).
    fn block_exprs(&self, b: usize, depth: u32, out: &mut Vec<&'m Expr>) {
        if depth > 8 {
            return;
        }
        let model: &'m ProgramModel = self.model;
        let mut i = Some(b);
        let f = &model.blocks[b].function;
        let start = out.len();
        while let Some(x) = i {
            let blk = &model.blocks[x];
            if &blk.function != f {
                break;
            }
            out.extend(blk.count.expr.as_ref());
            out.extend(local_factor(model, x));
            i = self.parent[x];
        }
        // A call's arguments matter where the function's own formulas read its parameters: a
        // helper without loops (stencil3d's block_size(n, parts, cart_coord0)) runs once per
        // call whatever its arguments, and their values gave every rank its own key.
        let params = self.params.get(f).map(Vec::as_slice).unwrap_or_default();
        let reads_params = out[start..].iter().any(|e| e.vars().iter().any(|v| params.contains(v)));
        for &c in self.calls_of.get(f).map(Vec::as_slice).unwrap_or_default() {
            let call = &model.calls[c];
            if reads_params {
                out.extend(call.args.iter().flatten());
            }
            if let Some(cb) = self.block_of_id.get(&call.block) {
                self.block_exprs(*cb, depth + 1, out);
            }
        }
    }

    /// Executions of block `b` at the new size over those at the old, and whether formulas gave it.
    pub fn block_ratio(&self, b: usize, origin: u32, old: &HashMap<String, f64>, new: &HashMap<String, f64>) -> (f64, bool) {
        match self.mode {
            Mode::Weak => return (1.0, false),
            Mode::Strong => return (f64::NAN, false),
            Mode::Program => {}
        }
        let (rank, size, len) = env_id(new);
        let id = (rank, size, len, origin);
        {
            let mut c = self.rank_ratios.borrow_mut();
            if c.0 != Some(id) {
                *c = (Some(id), vec![None; self.model.blocks.len()]);
            }
            if let Some(r) = c.1.get(b).copied().flatten() {
                return r;
            }
        }
        let r = self.block_ratio_of_rank(b, origin, old, new);
        if let Some(x) = self.rank_ratios.borrow_mut().1.get_mut(b) {
            *x = Some(r);
        }
        r
    }

    fn block_ratio_of_rank(&self, b: usize, origin: u32, old: &HashMap<String, f64>, new: &HashMap<String, f64>) -> (f64, bool) {
        // Whether the static path evaluated the block at the new size for this rank decides
        // between its figure and the formulas' below: part of the key.
        let mut key = self.rank_key(b, new);
        key.push(u64::from(self.evaluated(b, origin, new).is_some()));
        let memo = self.memo.borrow().get(&(b, origin, key.clone())).copied();
        let r = match memo {
            Some(r) => r,
            None => {
                self.approximated.set(false);
                self.uncalled.set(false);
                let totals = (self.total(b, old, 0), self.total(b, new, 0));
                let evaluated = self.evaluated(b, origin, new).is_some();
                let r = match totals {
                    _ if (self.approximated.get() || self.uncalled.get()) && evaluated => None,
                    // Called only through a pointer, and not evaluated: kept.
                    _ if self.uncalled.get() => Some((1.0, false)),
                    (Some(o), Some(n)) if o > 0.0 && n.is_finite() => Some((n.max(0.0) / o, true)),
                    _ => Some(self.ratio_in(b, old, new, 0)),
                };
                self.memo.borrow_mut().insert((b, origin, key), r);
                r
            }
        };
        r.or_else(|| self.evaluated(b, origin, new).map(|x| (x, true))).unwrap_or((1.0, false))
    }

    /// Executions of block `b` at the new size over the old from the static path's evaluation
    /// at both: the new rank's over its origin's where both were kept and the origin ran it,
    /// else the average over the ranks.
    fn evaluated(&self, b: usize, origin: u32, new: &HashMap<String, f64>) -> Option<f64> {
        let (ek, en) = &self.evaluated.rank_execs;
        let rank = new.get("rank").map(|r| *r as usize);
        let per_rank = match (ek.get(origin as usize), rank.and_then(|r| en.get(r))) {
            (Some(o), Some(n)) => o.get(b).zip(n.get(b)).filter(|(o, _)| **o > 0.0).map(|(o, n)| n / o),
            _ => None,
        };
        per_rank.or_else(|| self.evaluated.executions.get(&b).copied())
    }

    /// Executions of block `b` in one run of main: its count per call of its function, summed
    /// over the function's call sites with the parameters bound to each call's arguments (a
    /// site under a branch on data as if the branch were taken).
    fn total(&self, b: usize, env: &HashMap<String, f64>, depth: u32) -> Option<f64> {
        if depth > 8 {
            return None;
        }
        let blk = &self.model.blocks[b];
        let per = |e: &HashMap<String, f64>| blk.count.expr.as_ref().and_then(|x| x.eval_map(e).ok());
        let sites = self.calls_of.get(&blk.function).cloned().unwrap_or_default();
        if blk.function == "main" {
            return per(env);
        }
        if sites.is_empty() {
            self.uncalled.set(true);
            return per(env);
        }
        let mut sum = 0.0;
        for c in sites {
            let site = &self.model.calls[c];
            let cb = *self.block_of_id.get(&site.block)?;
            // A call under a branch on data (gemm's `if (strcmp(argv[2], "sampling"))`) counts
            // as the nearest enclosing block whose count is known: the branch goes the same way
            // at both sizes.
            let mut at = Some(cb);
            let calls = loop {
                let x = at?;
                if let Some(t) = self.total(x, env, depth + 1) {
                    break t;
                }
                self.approximated.set(true);
                at = self.parent[x].filter(|p| self.model.blocks[*p].function == self.model.blocks[cb].function);
            };
            if calls == 0.0 {
                continue;
            }
            let mut e = env.clone();
            if let Some(ps) = self.params.get(&blk.function) {
                for (p, a) in ps.iter().zip(&site.args) {
                    if let Some(v) = a.as_ref().and_then(|a| a.eval_map(env).ok()) {
                        e.insert(p.clone(), v);
                    }
                }
            }
            sum += calls * per(&e)?;
        }
        Some(sum)
    }

    fn ratio_in(&self, b: usize, old: &HashMap<String, f64>, new: &HashMap<String, f64>, depth: u32) -> (f64, bool) {
        if depth > 8 {
            return (1.0, false);
        }
        let f = self.model.blocks[b].function.clone();
        // The function's parameters bound from its unique call, and how often that call runs.
        let (old_env, new_env, call) = match self.unique_call.get(&f) {
            Some(Some(c)) if f != "main" => {
                let site = &self.model.calls[*c];
                let mut o = old.clone();
                let mut n = new.clone();
                if let Some(ps) = self.params.get(&f) {
                    for (p, a) in ps.iter().zip(&site.args) {
                        if let Some(a) = a {
                            if let Ok(v) = a.eval_map(old) {
                                o.insert(p.clone(), v);
                            }
                            if let Ok(v) = a.eval_map(new) {
                                n.insert(p.clone(), v);
                            }
                        }
                    }
                }
                let call = self.block_of_id.get(&site.block).map(|cb| self.ratio_in(*cb, old, new, depth + 1)).unwrap_or((1.0, false));
                (o, n, call)
            }
            _ => (old.clone(), new.clone(), (1.0, f == "main")),
        };
        let (r, ok) = self.per_call(b, &f, &old_env, &new_env);
        (r * call.0, ok && call.1)
    }

    /// The block's executions per call at the new size over the old, and whether formulas gave
    /// it: every factor on the way up known, or some known factor rescaling it (obstacle3d's
    /// sweeps inside its convergence loop, whose count is kept). A chain of factors of 1 under
    /// a kept loop (NAS EP's pairs under `k <= np`, np from a switch on the class letter) is
    /// not "rescaled by the program's formulas".
    fn per_call(&self, b: usize, f: &str, old: &HashMap<String, f64>, new: &HashMap<String, f64>) -> (f64, bool) {
        let (r, known, changed) = self.factors(b, f, old, new);
        (r, known || changed)
    }

    /// (ratio, all factors known, some known factor other than 1).
    fn factors(&self, b: usize, f: &str, old: &HashMap<String, f64>, new: &HashMap<String, f64>) -> (f64, bool, bool) {
        let blk = &self.model.blocks[b];
        if let Some(e) = blk.count.expr.as_ref() {
            if let (Ok(o), Ok(n)) = (e.eval_map(old), e.eval_map(new)) {
                if o > 0.0 && n.is_finite() {
                    let r = n.max(0.0) / o;
                    return (r, true, r != 1.0);
                }
            }
        }
        // A loop or an arm whose own count the front end does not know (a bound or a condition
        // on data) is kept: its factor is 1, and not from a formula.
        let own = !matches!(blk.kind, BlockKind::Loop | BlockKind::Branch);
        let (lf, lok) = match local_factor(self.model, b) {
            None if blk.kind == BlockKind::Loop && self.evaluated.trips.contains_key(&b) => (self.evaluated.trips[&b], true),
            None => (1.0, own),
            Some(e) => match (e.eval_map(old), e.eval_map(new)) {
                (Ok(o), Ok(n)) if o > 0.0 && n.is_finite() => (n.max(0.0) / o, true),
                _ => (1.0, false),
            },
        };
        let lchanged = lok && lf != 1.0;
        match self.parent[b] {
            Some(p) if self.model.blocks[p].function == f => {
                let (up, uok, uchanged) = self.factors(p, f, old, new);
                (lf * up, lok && uok, lchanged || uchanged)
            }
            _ => (lf, lok, lchanged),
        }
    }

    /// A compute burst of rank `origin` at the old size, for a rank at the new size; `uniform` is
    /// the strong-scaling factor for this rank.
    pub fn compute(&self, c: &Compute, origin: u32, old: &HashMap<String, f64>, new: &HashMap<String, f64>, uniform: f64) -> Option<Compute> {
        let scale_list = |blocks: &[(u32, u64)]| -> (Vec<(u32, u64)>, f64, f64) {
            let mut out = Vec::with_capacity(blocks.len());
            let (mut before, mut after) = (0.0, 0.0);
            let mut st = self.stats.borrow_mut();
            for (b, n) in blocks {
                let (r, ok) = match self.mode {
                    Mode::Strong => (uniform, false),
                    _ => self.block_ratio(*b as usize, origin, old, new),
                };
                let w = self.cost.get(*b as usize).copied().unwrap_or(0.0) * *n as f64;
                before += w;
                after += w * r;
                st.total_weight += w;
                if ok {
                    st.formula_weight += w;
                }
                let m = (*n as f64 * r).round();
                let e = st.blocks.entry(*b).or_insert((0.0, 0.0, 0.0, true));
                e.0 += *n as f64;
                e.1 += m.max(0.0);
                e.2 += w;
                e.3 &= ok;
                if m >= 1.0 {
                    out.push((*b, m as u64));
                }
            }
            (out, before, after)
        };
        match c {
            Compute::Blocks(b) => {
                let (l, _, _) = scale_list(b);
                if l.is_empty() {
                    None
                } else {
                    Some(Compute::Blocks(l))
                }
            }
            Compute::TimedBlocks { blocks, seconds } => {
                let (l, before, after) = scale_list(blocks);
                let f = match self.mode {
                    Mode::Weak => 1.0,
                    Mode::Strong => uniform,
                    Mode::Program if before > 0.0 => after / before,
                    Mode::Program => 1.0,
                };
                Some(Compute::TimedBlocks { blocks: l, seconds: seconds * f })
            }
            Compute::Seconds(s) => Some(Compute::Seconds(if self.mode == Mode::Strong { s * uniform } else { *s })),
            Compute::Flops(x) => Some(Compute::Flops(if self.mode == Mode::Strong { x * uniform } else { *x })),
        }
    }

    /// The size of a message of an action at the new size from its sites' byte formulas, when
    /// they resolve to the traced size at the old one. `peers` are the old and new peer (for
    /// sites whose peer is a loop variable, e.g. a master's `w`).
    pub fn bytes_formula(&self, a: &TraceAction, bytes: u64, old: &HashMap<String, f64>, new: &HashMap<String, f64>, peers: (Option<u32>, Option<u32>)) -> Option<u64> {
        if self.mode != Mode::Program {
            return None;
        }
        let family = family(a)?;
        let f = FAMILIES.iter().position(|x| *x == family)?;
        let (constant, var) = self.byte_peers[f];
        let key = (f, bytes, peers.0.filter(|_| constant || var), peers.1.filter(|_| var), self.env_key(f, old), self.env_key(f, new));
        if let Some(r) = self.byte_memo.borrow().get(&key) {
            return *r;
        }
        let r = self.bytes_by_sites(family, bytes, old, new, peers);
        self.byte_memo.borrow_mut().insert(key, r);
        r
    }

    /// Family `f`'s key of the byte formulas in `env`, its terms kept per environment.
    fn env_key(&self, f: usize, env: &HashMap<String, f64>) -> Vec<u64> {
        let id = env_id(env);
        let mut c = self.env_keys.borrow_mut();
        if c.len() > 256 && !c.contains_key(&id) {
            c.clear();
        }
        let (terms, keys) = c.entry(id).or_insert_with(|| (self.byte_keys.terms(), vec![None; FAMILIES.len()]));
        keys[f].get_or_insert_with(|| self.byte_keys.key(f, env, terms)).clone()
    }

    fn bytes_by_sites(&self, family: &str, bytes: u64, old: &HashMap<String, f64>, new: &HashMap<String, f64>, peers: (Option<u32>, Option<u32>)) -> Option<u64> {
        // Sites whose peer is the action's peer as a constant come first; sites whose peer is a
        // variable (a master's loop over workers) are tried with it bound to the peer.
        for exact_peer in [true, false] {
            let mut found: Option<f64> = None;
            let mut conflict = false;
            for (site, sp) in self.model.comm.iter().zip(&self.site_peers) {
                let Some(e) = site.bytes.as_ref() else { continue };
                if sp.family != Some(family) {
                    continue;
                }
                let constant_peer = site.peer_expr.as_ref().filter(|_| sp.constant).and_then(|p| p.eval_map(old).ok());
                let var = sp.var.as_deref().filter(|name| !old.contains_key(*name));
                if exact_peer != constant_peer.is_some() {
                    continue;
                }
                if let (Some(c), Some(po)) = (constant_peer, peers.0) {
                    if c != po as f64 {
                        continue;
                    }
                }
                let (o, n) = match (var, peers) {
                    (Some(v), (Some(po), Some(pn))) => {
                        // The environments with the peer's variable bound to each peer.
                        let with = |env: &HashMap<String, f64>, p: u32| e.eval(&|x: &str| if x == v { Some(p as f64) } else { env.get(x).copied() }).ok();
                        (with(old, po), with(new, pn))
                    }
                    (Some(_), _) => (None, None),
                    (None, _) => (e.eval_map(old).ok(), e.eval_map(new).ok()),
                };
                if let (Some(o), Some(n)) = (o, n) {
                    if (o - bytes as f64).abs() < 0.5 && n.is_finite() && n >= 0.0 {
                        match found {
                            Some(f) if (f - n).abs() >= 0.5 => conflict = true,
                            _ => found = Some(n),
                        }
                    }
                }
            }
            if conflict {
                return None;
            }
            if found.is_some() {
                return found.map(|x| x.round() as u64);
            }
        }
        None
    }
}

/// What tells a rank's environment from another's in the per-rank caches: its rank, its size and
/// its number of variables.
fn env_id(env: &HashMap<String, f64>) -> (u64, u64, usize) {
    let bits = |v: &str| env.get(v).copied().unwrap_or(f64::NAN).to_bits();
    (bits("rank"), bits("size"), env.len())
}

/// Which kind of call an action is, to match it with communication sites.
fn family(a: &TraceAction) -> Option<&'static str> {
    Some(match a {
        TraceAction::Send { .. } | TraceAction::Isend { .. } => "send",
        TraceAction::Recv { .. } | TraceAction::Irecv { .. } | TraceAction::Arecv { .. } => "recv",
        TraceAction::Sendrecv { .. } => "sendrecv",
        TraceAction::Bcast { .. } => "bcast",
        TraceAction::Reduce { .. } => "reduce",
        TraceAction::Allreduce { .. } => "allreduce",
        TraceAction::Gather { .. } => "gather",
        TraceAction::Scatter { .. } => "scatter",
        TraceAction::Allgather { .. } => "allgather",
        TraceAction::Alltoall { .. } => "alltoall",
        TraceAction::Scan { .. } => "scan",
        _ => return None,
    })
}

fn site_family(call: &str) -> Option<&'static str> {
    Some(match call {
        "MPI_Send" | "MPI_Ssend" | "MPI_Bsend" | "MPI_Rsend" | "MPI_Isend" | "MPI_Issend" | "MPI_Ibsend" | "MPI_Irsend" | "P2Psend" => "send",
        "MPI_Recv" | "MPI_Irecv" | "P2Preceive" => "recv",
        "MPI_Sendrecv" | "MPI_Sendrecv_replace" => "sendrecv",
        "MPI_Bcast" => "bcast",
        "MPI_Reduce" => "reduce",
        "MPI_Allreduce" => "allreduce",
        "MPI_Gather" => "gather",
        "MPI_Scatter" => "scatter",
        "MPI_Allgather" => "allgather",
        "MPI_Alltoall" => "alltoall",
        "MPI_Scan" | "MPI_Exscan" => "scan",
        _ => return None,
    })
}

/// Point-to-point routines (MPI and P2PDC).
pub fn is_p2p(call: &str) -> bool {
    matches!(
        call,
        "MPI_Send" | "MPI_Ssend" | "MPI_Bsend" | "MPI_Rsend" | "MPI_Isend" | "MPI_Issend" | "MPI_Ibsend" | "MPI_Irsend" | "MPI_Recv" | "MPI_Irecv" | "MPI_Sendrecv" | "MPI_Sendrecv_replace" | "P2Psend" | "P2Preceive"
    )
}
