//! The estimator (`mpicast predict`): ChronosMix's formula (1) on block executions, then the
//! resulting per-rank actions replayed on a platform through SimGrid.
//!
//! T_burst = sum over blocks b of NE_b * sum over op classes i of t_m(S_i) * NI_b(S_i): NE_b, a
//! block's executions in the burst, comes from skeleton execution of the analysis (static path,
//! `skeleton`) or from an instrumented run's counts (trace path); NI_b from the front end; t_m
//! from the machine table.

pub mod calibration;
pub mod eval;
pub mod memory;
pub mod session;
pub mod skeleton;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::model::analysis::ProgramModel;
use crate::model::expr::{Expr, FormulaKey};
use crate::model::machine::{MachineTable, Variant};
use crate::model::ops::OpClass;
use crate::model::prediction::{BlockCost, ChainShare, FunctionCost, MachineRef, MemoryShare, Prediction};
use crate::model::trace::{Mapping, RankList, RankTrace, ReplayOptions, TraceAction};
use crate::platform;
use crate::trace::TraceWriter;
use skeleton::{Program, Sink, Unresolved};

/// Costs per op class, in ns: nominal and the table's spread.
#[derive(Debug, Clone)]
pub struct Costs {
    pub nominal: BTreeMap<OpClass, f64>,
    pub low: BTreeMap<OpClass, f64>,
    pub high: BTreeMap<OpClass, f64>,
    /// What a block's time is at least: its memory references, its loop-carried chains; and
    /// the same at the ends of the table's spread.
    pub bounds: Bounds,
    pub bounds_low: Bounds,
    pub bounds_high: Bounds,
    /// The table's co-run factors (independent ops, dependent chains) and the cores they were
    /// measured on (`MachineTable::co_run`).
    pub co_run: Option<(f64, f64, f64)>,
}

/// Lower bounds on a block's time besides formula (1): the roofline of its array references
/// (`memory`) and the latency of its loop-carried chains (ns per op, the table's latency
/// variant).
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    pub memory: memory::MemoryModel,
    pub latency: BTreeMap<OpClass, f64>,
    /// ns per 8 bytes of fresh pages written the first time (0: the table does not say).
    pub first_touch: f64,
}

/// Allocations from this size on come from fresh pages (glibc maps them; smaller ones reuse
/// the heap).
const FRESH_PAGES_FROM: f64 = 131072.0;

impl Bounds {
    /// The table's bounds with `pick` of each figure (the median, or the spread's ends).
    pub fn from_table(t: &MachineTable, pick: fn(&crate::model::machine::Measure) -> f64) -> Bounds {
        Bounds {
            memory: memory::MemoryModel::from_table(t, pick),
            latency: t.classes.iter().map(|(c, m)| (*c, pick(&m.latency))).collect(),
            first_touch: t.memory_cost("DRAM", "first_touch", "store").map_or(0.0, |m| pick(&m.throughput)),
        }
    }

    /// ns the block's large allocations cost when their pages are first written (charged to
    /// the allocation: the writes come later, the page faults with them).
    pub fn first_touch_ns(&self, b: &crate::model::analysis::Block, env: &HashMap<String, f64>) -> f64 {
        if self.first_touch == 0.0 {
            return 0.0;
        }
        b.allocs
            .iter()
            .filter_map(|a| a.eval_map(env).ok())
            .filter(|bytes| *bytes >= FRESH_PAGES_FROM)
            .map(|bytes| bytes / 8.0 * self.first_touch)
            .sum()
    }

    /// ns one execution of `b` takes, its ops costing `ops_ns` (formula (1)): the core's time
    /// (its ops, at least its longest loop-carried chain) overlaps the loads its references
    /// make beyond L1 (a roofline: the prefetchers fetch them while the core works), and the
    /// stores beyond L1 come on top: a store that misses holds its store-buffer entry until
    /// its line has been read (write-allocate), and once the buffer is full the core waits.
    /// How well the core's time and the loads overlap is the host's: their smooth maximum
    /// with the slowest level's exponent (`memory::combine`, `memory::overlap_exponent`, from
    /// the MTC's overlap kernel). Measured at one rank: on this project's 2-core AMD EPYC VM
    /// (9 runs, before the kernel existed) a row-major matrix multiply whose stores stay in L1
    /// ran at its core time however far its loads came from, as an exponent of 0 says; on its
    /// 2-core Intel Xeon (Sapphire Rapids) VM the same loop from a 2 MiB matrix ran 17% over
    /// its core time, and the overlap kernel gave exponents of 0.4 to 0.6 in L2 and just past.
    ///
    /// Only the core's resources compete with the loads: of a block costed in core cycles
    /// (`cycle_ns` of its `ops_ns`) whose schedule waits on a chain carried in registers
    /// (`Block::resource_share` under 1), the loads overlap the resource-bound part, and the
    /// block takes at least its whole core time. simgrid's gemm (a float multiply-add chain
    /// of 4 cycles per element, a line of b from L2 per access) ran 0.83 ns per element, its
    /// core time, here; the smooth maximum of core and loads said 1.5.
    pub fn block_ns(&self, b: &crate::model::analysis::Block, ops_ns: f64, cycle_ns: f64, env: &HashMap<String, f64>) -> f64 {
        let (loads, stores, q) = self.memory.block_time(&b.mem, env).map_or((0.0, 0.0, 0.0), |m| (m.ns - m.store_ns, m.store_ns, m.overlap));
        let waiting = cycle_ns.max(0.0) * (1.0 - b.resource_share.unwrap_or(1.0).clamp(0.0, 1.0));
        let busy = (ops_ns - waiting).max(self.chain_ns(b).map_or(0.0, |c| c.1));
        memory::combine(busy, loads, q).max(ops_ns) + stores
    }

    /// The block's longest loop-carried chain: its variable and ns per execution. A block
    /// costed in core cycles keeps only its chains through memory (`*p`): llvm-mca scheduled
    /// those it carries in registers, and takes loads and stores for independent.
    pub fn chain_ns<'b>(&self, b: &'b crate::model::analysis::Block) -> Option<(&'b str, f64)> {
        let scheduled = b.ops.contains_key(&OpClass::CoreCycle);
        b.chains
            .iter()
            .filter(|c| !scheduled || c.var.starts_with('*'))
            .map(|c| (c.var.as_str(), c.share * c.ops.iter().map(|o| self.latency.get(o).copied().unwrap_or(0.0)).sum::<f64>()))
            .max_by(|x, y| x.1.total_cmp(&y.1))
    }
}

/// Ranks that run at once on the busiest host of the prediction's platform (round-robin and
/// block mappings spread them evenly; a mapping file says), at most the machine table's cores:
/// how many streams share a host's memory bandwidth. 1 where the platform cannot be read.
pub fn ranks_per_host(opts: &Options) -> f64 {
    let hosts = opts.what_if.hosts.map(u64::from).or_else(|| platform::platform_hosts(&opts.platform).ok().map(|h| h.count())).filter(|&h| h > 0);
    let per = match (&opts.mapping, hosts) {
        (Mapping::Hosts { hosts }, _) => {
            let mut n: HashMap<&str, u32> = HashMap::new();
            for h in hosts {
                *n.entry(h.as_str()).or_default() += 1;
            }
            n.values().copied().max().unwrap_or(1) as f64
        }
        (_, Some(h)) => (u64::from(opts.ranks)).div_ceil(h) as f64,
        (_, None) => 1.0,
    };
    per.clamp(1.0, opts.machine.host.cores.max(1) as f64)
}

impl Costs {
    /// The costs for ranks that share their host with `ranks` running at once: shared memory
    /// levels (`memory::MemoryModel::with_sharers`), every op's throughput cost times the
    /// co-run slowdown of independent ops and the chains' latencies times that of dependent
    /// ones (`co_run_factors`).
    pub fn with_sharers(mut self, ranks: f64) -> Costs {
        let (tp, lat) = self.co_run_factors(ranks);
        for b in [&mut self.bounds, &mut self.bounds_low, &mut self.bounds_high] {
            b.memory = std::mem::take(&mut b.memory).with_sharers(ranks);
            for v in b.latency.values_mut() {
                *v *= lat;
            }
        }
        for t in [&mut self.nominal, &mut self.low, &mut self.high] {
            for v in t.values_mut() {
                *v *= tp;
            }
        }
        self
    }

    /// How much slower a core runs independent ops and dependent chains with `ranks` running
    /// at once on its host: 1 alone, the table's co-run factors with every core busy, linear
    /// in between (1 for a table without).
    pub fn co_run_factors(&self, ranks: f64) -> (f64, f64) {
        match self.co_run {
            Some((tp, lat, cores)) if cores > 1.0 && ranks > 1.0 => {
                let at = |f: f64| 1.0 + (f - 1.0).max(0.0) * (ranks.min(cores) - 1.0) / (cores - 1.0);
                (at(tp), at(lat))
            }
            _ => (1.0, 1.0),
        }
    }

    pub fn from_table(t: &MachineTable, variant: Variant) -> Costs {
        let mut c = Costs {
            nominal: BTreeMap::new(),
            low: BTreeMap::new(),
            high: BTreeMap::new(),
            bounds: Bounds::from_table(t, |m| m.ns_per_op),
            bounds_low: Bounds::from_table(t, |m| m.min_ns.min(m.ns_per_op)),
            bounds_high: Bounds::from_table(t, |m| m.max_ns.max(m.ns_per_op)),
            co_run: t.co_run.as_ref().map(|c| (c.factors().0, c.factors().1, f64::from(c.cores))),
        };
        for class in OpClass::ALL.iter().chain(OpClass::MPI).chain(OpClass::DERIVED) {
            let Some(nom) = t.cost(*class, variant) else {
                continue;
            };
            let Some(m) = t.derived(*class).or_else(|| t.classes.get(class).map(|c| &c.throughput)) else {
                continue;
            };
            // The spread of the raw measure, carried over to the fitted figure.
            let (lo, hi) = if m.ns_per_op > 0.0 {
                (m.min_ns / m.ns_per_op, m.max_ns / m.ns_per_op)
            } else {
                (1.0, 1.0)
            };
            c.nominal.insert(*class, nom);
            c.low.insert(*class, nom * lo.min(1.0));
            c.high.insert(*class, nom * hi.max(1.0));
        }
        c
    }
}

/// What-if knobs (MMT's questions): a faster CPU, a faster network, a loaded host.
#[derive(Debug, Clone, Default)]
pub struct WhatIf {
    pub cpu_scale: Option<f64>,
    pub bw_scale: Option<f64>,
    pub lat_scale: Option<f64>,
    pub background_load: Option<f64>,
    pub hosts: Option<u32>,
    pub cores_per_host: Option<u32>,
}

impl WhatIf {
    /// Compute seconds on the target: divided by the CPU speed-up, stretched by the share of
    /// the core other work takes.
    pub fn compute_factor(&self) -> f64 {
        let mut f = 1.0;
        if let Some(s) = self.cpu_scale {
            f /= s;
        }
        if let Some(l) = self.background_load {
            f /= 1.0 - l;
        }
        f
    }

    /// The knobs that edit the platform file (the rest act on compute).
    pub fn platform_edits(&self) -> platform::edit::Edits {
        platform::edit::Edits {
            bw_scale: self.bw_scale,
            lat_scale: self.lat_scale,
            hosts: self.hosts,
            cores_per_host: self.cores_per_host,
        }
    }

    pub fn as_map(&self) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: Option<f64>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("cpu_scale", self.cpu_scale);
        put("bw_scale", self.bw_scale);
        put("lat_scale", self.lat_scale);
        put("background_load", self.background_load);
        put("hosts", self.hosts.map(f64::from));
        put("cores_per_host", self.cores_per_host.map(f64::from));
        m
    }
}

#[derive(Clone)]
pub struct Options {
    pub ranks: u32,
    /// Parameter values (program arguments, -D, defaults), rank and size excluded.
    pub bindings: BTreeMap<String, f64>,
    pub args: Vec<String>,
    pub machine: MachineTable,
    pub machine_path: PathBuf,
    pub variant: Variant,
    pub platform: PathBuf,
    pub cfg: Vec<String>,
    pub eager_threshold: Option<u64>,
    pub mapping: Mapping,
    pub what_if: WhatIf,
    pub timeline: bool,
    /// Simulate every iteration of the main loop (no steady-state folding).
    pub no_fold: bool,
    /// The replay timed by formula (`sim::analytic`) instead of by SimGrid.
    pub analytic: bool,
    pub top: usize,
    pub assumptions: Vec<String>,
    /// Keep the skeleton's per-rank traces (compute in seconds) in this directory.
    pub save_traces: Option<PathBuf>,
    /// `-D NAME=VALUE` and `-D NAME` as given: they bind program variables of that name in the
    /// static evaluation (values that are not numbers included: `-D comm=MPI_COMM_WORLD`).
    pub defines: Vec<String>,
    /// How the program is built: the static evaluation reads the sources as its preprocessor
    /// selects them, like the analysis.
    pub build: crate::mpi::build::BuildSpec,
    /// When values that long loops store over bulk data are needed (message counts, loop
    /// bounds), run those loops on a prefix of their iterations and scale what they accumulate
    /// (an estimate, noted in the report) instead of refusing.
    pub estimate_bulk: bool,
    /// Seconds the static evaluation may take (None: MPICAST_EVAL_BUDGET_S, else 60).
    pub eval_budget_s: Option<f64>,
    /// Ops from the compiled code (`crate::objcode`): replaces the instruction classes of the
    /// blocks it names.
    pub compiled: Option<std::sync::Arc<crate::objcode::CompiledOps>>,
    /// Rates of data-dependent branch arms fitted to a traced run (block id -> rate): the
    /// static path charges those arms at them (see `session::check_at_k`).
    pub arm_rates: Option<std::sync::Arc<BTreeMap<String, f64>>>,
    /// Iterations per entry of loops taken from a traced run (block id -> trips): a loop whose
    /// condition depends on data runs that many times (see `session::check_at_k`).
    pub loop_trips: Option<std::sync::Arc<BTreeMap<String, f64>>>,
}

/// `-D` items split into numbers and other values; `-D NAME` is 1.
pub fn split_defines(defs: &[String]) -> (BTreeMap<String, f64>, BTreeMap<String, String>) {
    let mut nums = BTreeMap::new();
    let mut texts = BTreeMap::new();
    for d in defs {
        let (name, value) = d.split_once('=').unwrap_or((d.as_str(), "1"));
        let (name, value) = (name.trim().to_string(), value.trim());
        match value.parse::<f64>() {
            Ok(v) => {
                nums.insert(name, v);
            }
            Err(_) => {
                texts.insert(name, value.to_string());
            }
        }
    }
    (nums, texts)
}

/// Seconds the static evaluation may take over all ranks (MPICAST_EVAL_BUDGET_S overrides).
fn eval_budget_s() -> f64 {
    std::env::var("MPICAST_EVAL_BUDGET_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v: &f64| *v > 0.0)
        .unwrap_or(60.0)
}

/// Parameter values for the static path: -D first, then program arguments for argv-derived
/// parameters, then the program's own defaults (reported as assumptions).
pub fn bind_parameters(
    model: &ProgramModel,
    defines: &BTreeMap<String, f64>,
    args: &[String],
) -> Result<(BTreeMap<String, f64>, Vec<String>)> {
    let mut out = defines.clone();
    let mut notes = Vec::new();
    // P2PDC's P2Pinit takes its own options (`--scheme=S`) out of argv before the program reads it.
    let p2pdc = model.external_calls.contains_key("P2Pinit")
        || model.calls.iter().any(|c| c.callee == "P2Pinit");
    let kept: Vec<String>;
    let args: &[String] = if p2pdc {
        kept = args
            .iter()
            .filter(|a| !a.starts_with("--scheme="))
            .cloned()
            .collect();
        &kept
    } else {
        args
    };
    // main's argc, as mpirun would pass it.
    out.entry("argc".into()).or_insert(args.len() as f64 + 1.0);
    for p in &model.parameters {
        if out.contains_key(&p.name) {
            continue;
        }
        let Some(k) = p.argv_index else { continue };
        match args.get(k as usize - 1) {
            Some(a) => {
                let v: f64 = a.trim().parse().map_err(|_| {
                    anyhow::anyhow!(
                        "program argument {k} ({a:?}) is not a number, but {} reads {} from it",
                        p.file,
                        p.name
                    )
                })?;
                out.insert(p.name.clone(), v);
            }
            None => {
                if let Some(d) = p.default {
                    out.insert(p.name.clone(), d);
                    notes.push(format!(
                        "{} = {d}: argument {k} not given, the program's default",
                        p.name
                    ));
                }
            }
        }
    }
    Ok((out, notes))
}

/// Seconds per execution of every block, for one rank's environment, with a cost table.
fn block_seconds(
    model: &ProgramModel,
    costs: &BTreeMap<OpClass, f64>,
    bounds: &Bounds,
    env: &HashMap<String, f64>,
) -> Vec<f64> {
    model
        .blocks
        .iter()
        .map(|b| {
            let ns = |c: &OpClass, e: &Expr| e.eval_map(env).unwrap_or(0.0) * costs.get(c).copied().unwrap_or(0.0);
            let ops: f64 = b.ops.iter().map(|(c, e)| ns(c, e)).sum();
            let cycles = b.ops.get(&OpClass::CoreCycle).map_or(0.0, |e| ns(&OpClass::CoreCycle, e));
            (bounds.block_ns(b, ops, cycles, env) + bounds.first_touch_ns(b, env) + b.timed_calls_ns()) * 1e-9
        })
        .collect()
}

/// `block_seconds` remembered by what the blocks' formulas read (op counts, array references,
/// allocations: [`FormulaKey`]), per table: ranks whose formulas see the same values (all but
/// the edges of a decomposition) are costed once. jacobi2d at 1,024 ranks costed every block
/// three times per rank and pass.
struct SecondsMemo {
    key: FormulaKey,
    seen: std::cell::RefCell<HashMap<(usize, Vec<u64>), std::rc::Rc<Vec<f64>>>>,
}

impl SecondsMemo {
    fn new(model: &ProgramModel) -> SecondsMemo {
        let mut exprs: Vec<&Expr> = Vec::new();
        for b in &model.blocks {
            exprs.extend(b.ops.iter().map(|(_, e)| e));
            for m in &b.mem {
                exprs.push(&m.count);
                exprs.extend(m.stride.iter().chain(&m.reuse_bytes));
            }
            exprs.extend(&b.allocs);
        }
        SecondsMemo { key: FormulaKey::new(exprs), seen: Default::default() }
    }

    /// The costs of `env`, whose key is `key` (one key serves the three tables).
    fn get_keyed(&self, key: Vec<u64>, model: &ProgramModel, table: &BTreeMap<OpClass, f64>, bounds: &Bounds, env: &HashMap<String, f64>) -> std::rc::Rc<Vec<f64>> {
        let key = (table as *const _ as usize, key);
        if let Some(s) = self.seen.borrow().get(&key) {
            return s.clone();
        }
        let s = std::rc::Rc::new(block_seconds(model, table, bounds, env));
        self.seen.borrow_mut().insert(key, s.clone());
        s
    }
}

/// Writes one rank's skeleton into a trace, in seconds, and keeps per-block totals.
struct TraceSink<'w> {
    writer: Option<&'w mut crate::trace::fold::FoldingWriter>,
    /// Seconds per execution of each block, costed again (`recost`) once the rank knows its
    /// place in a Cartesian grid: the formulas of a decomposed array's footprint (a block's
    /// memory bound) are in cart_dims<k> and cart_coord<k>.
    secs: Vec<f64>,
    recost: Recost<'w>,
    factor: f64,
    /// Per block: executions.
    execs: &'w mut [f64],
    compute_s: f64,
    /// Folded loops multiply what their body charges.
    mult: Vec<f64>,
    /// Compute seconds not yet written: consecutive bursts become one line.
    unwritten: f64,
    /// Members of each communicator the rank defines, in order.
    comms: Vec<RankList>,
}

/// What costs a rank's blocks: the model, a cost table and its bounds, the rank's formula
/// environment.
struct Recost<'w> {
    model: &'w ProgramModel,
    table: &'w BTreeMap<OpClass, f64>,
    bounds: &'w Bounds,
    env: HashMap<String, f64>,
    memo: Option<&'w SecondsMemo>,
}

impl Recost<'_> {
    fn secs(&self) -> Vec<f64> {
        match self.memo {
            Some(m) => m.get_keyed(m.key.key(&self.env), self.model, self.table, self.bounds, &self.env).to_vec(),
            None => block_seconds(self.model, self.table, self.bounds, &self.env),
        }
    }
}

/// A rank's place in the program's Cartesian grid as its calls define it without running:
/// MPI_Dims_create's dimensions for the world's size (the given ones kept), else
/// MPI_Cart_create's constant ones; None when the program makes no grid or it is not known.
/// (The traced run does not record it; trace-mode costing needs it for the same formulas.)
fn grid_of(model: &ProgramModel, env: &HashMap<String, f64>, rank: u32) -> Option<(Vec<i64>, Vec<i64>)> {
    let value = |e: &Option<crate::model::expr::Expr>| e.as_ref().and_then(|e| e.eval_map(env).ok());
    let list = |site: &crate::model::analysis::CommSite, k: u32, n: usize| -> Option<Vec<i64>> {
        let v = site.arg_lists.get(&k)?;
        (v.len() == n).then(|| v.iter().map(|e| value(e).map(|x| x as i64)).collect()).flatten()
    };
    let dims = if let Some(site) = model.comm.iter().find(|c| c.call == "MPI_Dims_create") {
        let nnodes = value(site.arg_values.first()?)? as i64;
        let ndims = value(site.arg_values.get(1)?)? as usize;
        let given = list(site, 2, ndims).unwrap_or_else(|| vec![0; ndims]);
        crate::mpi::cart::dims_create(nnodes, &given, ndims)?
    } else {
        let site = model.comm.iter().find(|c| c.call == "MPI_Cart_create")?;
        let ndims = value(site.arg_values.get(1)?)? as usize;
        list(site, 2, ndims)?
    };
    let coords = crate::mpi::cart::cart_coords(rank as i64, &dims);
    Some((dims, coords))
}

/// `env` with a rank's place in a Cartesian grid.
fn grid_env(env: &mut HashMap<String, f64>, dims: &[i64], coords: &[i64]) {
    for (k, (d, c)) in dims.iter().zip(coords).enumerate() {
        env.insert(format!("cart_dims{k}"), *d as f64);
        env.insert(format!("cart_coord{k}"), *c as f64);
    }
}

impl TraceSink<'_> {
    fn write_compute(&mut self) -> Result<(), Unresolved> {
        let s = std::mem::take(&mut self.unwritten);
        if let Some(w) = self.writer.as_deref_mut() {
            if s > 0.0 {
                w.action(&skeleton::compute_action(s))
                    .map_err(io_unresolved)?;
            }
        }
        Ok(())
    }
}

impl Sink for TraceSink<'_> {
    fn discard_compute(&mut self) {
        self.compute_s = 0.0;
        self.unwritten = 0.0;
        self.execs.iter_mut().for_each(|x| *x = 0.0);
    }
    fn compute(&mut self, execs: &[(usize, f64)]) -> Result<(), Unresolved> {
        let m: f64 = self.mult.iter().product();
        let mut s = 0.0;
        for (b, n) in execs {
            s += self.secs[*b] * n;
            self.execs[*b] += n * m;
        }
        let s = s * self.factor;
        self.compute_s += s * m;
        self.unwritten += s;
        Ok(())
    }
    fn action(&mut self, a: TraceAction) -> Result<(), Unresolved> {
        self.write_compute()?;
        if let TraceAction::CommDef { ranks, .. } = &a {
            self.comms.push(ranks.clone());
        }
        if let Some(w) = self.writer.as_deref_mut() {
            w.action(&a).map_err(io_unresolved)?;
        }
        Ok(())
    }
    fn cartesian(&mut self, dims: &[i64], coords: &[i64]) {
        grid_env(&mut self.recost.env, dims, coords);
        self.secs = self.recost.secs();
    }
    fn begin_loop(&mut self, k: u64) -> Result<(), Unresolved> {
        self.write_compute()?;
        self.mult.push(k as f64);
        if let Some(w) = self.writer.as_deref_mut() {
            w.begin_loop(k).map_err(io_unresolved)?;
        }
        Ok(())
    }
    fn end_loop(&mut self) -> Result<(), Unresolved> {
        self.write_compute()?;
        self.mult.pop();
        if let Some(w) = self.writer.as_deref_mut() {
            w.end_loop().map_err(io_unresolved)?;
        }
        Ok(())
    }
}

fn io_unresolved(e: std::io::Error) -> Unresolved {
    Unresolved {
        file: "(trace)".into(),
        line: 0,
        what: format!("cannot write a trace: {e}"),
    }
}

/// The static path's result before simulation.
pub struct Skeletons {
    pub dir: tempfile::TempDir,
    /// Per block, executions over all ranks (nominal).
    pub execs: Vec<f64>,
    /// Per rank, per block executions: kept for evaluations of up to RANK_EXECS_MAX ranks (what
    /// scaling compares between two sizes), empty above.
    pub rank_execs: Vec<Vec<f64>>,
    /// Per rank, the members of each communicator it defines, in order (kept like rank_execs).
    pub rank_comms: Vec<Vec<RankList>>,
    /// Per rank compute seconds: nominal, low, high.
    pub compute: Vec<[f64; 3]>,
    pub assumptions: Vec<String>,
    /// What each rank prints, as the evaluation computed it.
    pub outputs: Vec<crate::model::prediction::RankOutput>,
    /// Data-dependent arms charged at the assumed rate (block -> rate).
    pub arm_rates: BTreeMap<usize, f64>,
}

/// Skeleton execution of every rank into a temporary trace directory (compute in seconds): the
/// interpreter (`eval`) runs each rank's scalar part; passes repeat while a rank needed a value
/// from a rank evaluated after it.
pub fn skeletons(
    model: &ProgramModel,
    opts: &Options,
    costs: &Costs,
) -> Result<Skeletons, Unresolved> {
    let prog = Program::new(model);
    let units = crate::frontend::lower_sources(&model.files, &opts.build);
    let enums = std::rc::Rc::new(eval::enum_values(&units));
    let (defines, text_defines) = split_defines(&opts.defines);
    // P2PDC's P2Pinit takes its own options (`--scheme=S`) out of argv before the program reads it.
    let p2pdc = model.external_calls.contains_key("P2Pinit")
        || model.calls.iter().any(|c| c.callee == "P2Pinit");
    let args: Vec<String> = opts
        .args
        .iter()
        .filter(|a| !(p2pdc && a.starts_with("--scheme=")))
        .cloned()
        .collect();
    // An evaluation that fails for want of what a long loop stored is repeated with those
    // loops run on a prefix of their iterations (at most PREFIX_ROUNDS times).
    let mut prefix = std::collections::BTreeSet::new();
    let mut round = 0;
    let started = std::time::Instant::now();
    loop {
        let mut sh = eval::Shared::new(
            &prog,
            &units,
            args.clone(),
            defines.clone(),
            text_defines.clone(),
            opts.eval_budget_s.unwrap_or_else(eval_budget_s),
        );
        sh.prefix_loops = prefix.clone();
        sh.traced_rates = by_block(model, opts.arm_rates.as_deref());
        sh.traced_trips = by_block(model, opts.loop_trips.as_deref());
        match evaluate(model, opts, costs, &sh, &enums) {
            Err(e)
                if opts.estimate_bulk
                    && round < PREFIX_ROUNDS
                    && started.elapsed().as_secs_f64() < PREFIX_ROUNDS_S
                    && !e.what.starts_with("evaluation stopped") =>
            {
                let wanted: Vec<usize> = sh
                    .prefix_wanted
                    .borrow()
                    .difference(&prefix)
                    .copied()
                    .collect();
                if wanted.is_empty() {
                    return Err(e);
                }
                if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
                    eprintln!(
                        "eval: {}:{}: {}; again with prefix runs of {} loops",
                        e.file,
                        e.line,
                        e.what,
                        wanted.len()
                    );
                }
                prefix.extend(wanted);
                round += 1;
            }
            Err(mut e)
                if !opts.estimate_bulk
                    && !sh.prefix_wanted.borrow().is_empty()
                    && !e.what.starts_with("evaluation stopped") =>
            {
                e.what.push_str("; if it comes from bulk data a long loop computes, --estimate-bulk estimates it from the loop's first iterations");
                return Err(e);
            }
            other => return other,
        }
    }
}

/// Loops whose trip count the front end cannot give (a bound from data or from a switch on the
/// class letter), per entry at `n` ranks over `k` ranks, from the static path's evaluation at
/// both sizes; empty where the static path does not resolve at either, or `n` is large
/// (STATIC_TRIPS_MAX ranks: the evaluation runs every rank). With them, every block's
/// executions per rank at `n` over `k`, and each rank's executions at both sizes. Evaluated
/// where some loop is uncounted, some function is called only through a pointer (a qsort
/// comparator, a callback) or the program makes communicators of some ranks: the formulas alone
/// cannot scale those.
fn static_trips(model: &ProgramModel, opts: &Options, costs: &Costs, k: u32, n: u32) -> crate::scale::Evaluated {
    let kept: Vec<usize> = model
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.kind == crate::model::analysis::BlockKind::Loop && b.trip.as_ref().is_none_or(|t| t.expr.is_none()))
        .map(|(i, _)| i)
        .collect();
    let called: std::collections::HashSet<&str> = model.calls.iter().map(|c| c.callee.as_str()).collect();
    let uncalled = model.functions.iter().any(|f| f.name != "main" && !called.contains(f.name.as_str()));
    // Communicators of some ranks (split, create): their members at N' are the program's.
    let subgroups = ["MPI_Comm_split", "MPI_Comm_split_type", "MPI_Comm_create", "MPI_Comm_create_group", "MPI_Cart_sub"]
        .iter()
        .any(|f| model.comm.iter().any(|c| c.call == *f));
    if (kept.is_empty() && !uncalled && !subgroups) || n > STATIC_TRIPS_MAX || k > STATIC_TRIPS_MAX {
        return Default::default();
    }
    let at = |ranks: u32| -> Option<Skeletons> {
        let o = Options { ranks, ..opts.clone() };
        skeletons(model, &o, costs).ok()
    };
    let (Some(sk), Some(sn)) = (at(k), at(n)) else { return Default::default() };
    let (ek, en) = (&sk.execs, &sn.execs);
    let index: HashMap<&str, usize> = model.blocks.iter().enumerate().map(|(i, b)| (b.id.as_str(), i)).collect();
    let mut trips = HashMap::new();
    for b in kept {
        let Some(p) = model.blocks[b].parent.as_deref().and_then(|p| index.get(p).copied()) else { continue };
        // A block open at MPI_Init (main's, around the call) is not charged: entered once per
        // rank.
        let (pk, pn) = if ek[p] == 0.0 && en[p] == 0.0 { (k as f64, n as f64) } else { (ek[p], en[p]) };
        let (tk, tn) = (ek[b] / pk, en[b] / pn);
        if pk > 0.0 && pn > 0.0 && tk > 0.0 && tn.is_finite() && (tn / tk - 1.0).abs() > 1e-9 {
            trips.insert(b, tn / tk);
        }
    }
    let executions = (0..model.blocks.len())
        .filter(|b| ek[*b] > 0.0 && en[*b].is_finite())
        .map(|b| (b, (en[b] / n as f64) / (ek[b] / k as f64)))
        .collect();
    crate::scale::Evaluated { trips, executions, rank_execs: (sk.rank_execs, sn.rank_execs), rank_comms: (sk.rank_comms, sn.rank_comms) }
}

/// Values a traced run gave by block id (arm rates, loop trips), by block index.
fn by_block(model: &ProgramModel, by_id: Option<&BTreeMap<String, f64>>) -> HashMap<usize, f64> {
    let Some(m) = by_id else { return HashMap::new() };
    model.blocks.iter().enumerate().filter_map(|(i, b)| m.get(&b.id).map(|v| (i, *v))).collect()
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Ranks beyond which scaling does not evaluate the program at both sizes for its uncounted
/// loops.
const STATIC_TRIPS_MAX: u32 = 256;
/// Ranks up to which an evaluation keeps every rank's block executions.
const RANK_EXECS_MAX: u32 = STATIC_TRIPS_MAX;

/// Evaluations at most before the static path gives up on values long loops store, and the
/// seconds after which no new one starts.
const PREFIX_ROUNDS: usize = 3;
const PREFIX_ROUNDS_S: f64 = 10.0;

/// One evaluation of every rank (passes until no rank misses a value another sends it).
fn evaluate(
    model: &ProgramModel,
    opts: &Options,
    costs: &Costs,
    sh: &eval::Shared,
    enums: &std::rc::Rc<HashMap<String, crate::frontend::ir::CExpr>>,
) -> Result<Skeletons, Unresolved> {
    let n = opts.ranks;
    let factor = opts.what_if.compute_factor();
    let mut result = None;
    let mut posted_before = 0;
    // One directory for every pass: a pass rewrites each rank's file in place.
    let dir = crate::trace::scratch_dir("mpicast-skeleton", opts.ranks).map_err(io_unresolved)?;
    let memo = SecondsMemo::new(model);
    for pass in 0..eval::MAX_PASSES {
        let last = pass + 1 == eval::MAX_PASSES;
        if pass > 0 {
            sh.forget_samples();
        }
        let mut execs = vec![0.0; model.blocks.len()];
        let mut rank_execs = Vec::new();
        let mut rank_comms = Vec::new();
        let mut compute = Vec::with_capacity(n as usize);
        let mut outputs = Vec::new();
        let mut assumptions = std::collections::BTreeSet::new();
        let mut missed = false;
        let mut missed_recvs: BTreeMap<(u32, u32, u32), Vec<i64>> = BTreeMap::new();
        let mut missed_colls = Vec::new();
        let mut arm_rates = BTreeMap::new();
        let unsettled: Option<usize>;
        let mut first_err: Option<Unresolved> = None;
        let mut scratch = vec![0.0; model.blocks.len()];
        // Ranks with data-dependent branches: their bounds are evaluated once the passes settle.
        let mut bounds_wanted = Vec::new();
        for r in 0..n {
            let mut env = rank_env(opts, r, n);
            let mut w = crate::trace::fold::FoldingWriter::new(TraceWriter::create(dir.path(), r, n).map_err(io_unresolved)?);
            scratch.iter_mut().for_each(|x| *x = 0.0);
            let mut row = [0.0; 3];
            let mut it = eval::Interp::new(sh, r, n, 0.5, enums.clone());
            let res = {
                let recost = Recost { model, table: &costs.nominal, bounds: &costs.bounds, env, memo: Some(&memo) };
                let mut sink = TraceSink {
                    writer: Some(&mut w),
                    secs: recost.secs(),
                    recost,
                    factor,
                    execs: &mut scratch,
                    compute_s: 0.0,
                    mult: vec![],
                    unwritten: 0.0,
                    comms: Vec::new(),
                };
                let res = ended(it.run(&mut sink));
                let res = res.and_then(|_| sink.write_compute());
                row[0] = sink.compute_s;
                env = std::mem::take(&mut sink.recost.env);
                if n <= RANK_EXECS_MAX {
                    rank_comms.push(std::mem::take(&mut sink.comms));
                }
                res
            };
            w.finish().map_err(io_unresolved)?;
            for (key, tags) in it.take_missed_recvs() {
                missed_recvs.entry(key).or_default().extend(tags);
            }
            missed_colls.append(&mut it.missed_colls);
            missed |= it.missed;
            if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
                eprintln!(
                    "eval: pass {pass} rank {r}: {} steps, missed {}",
                    it.steps(),
                    it.missed
                );
            }
            if let (Err(e), true) = (&res, std::env::var_os("MPICAST_EVAL_DEBUG").is_some()) {
                eprintln!(
                    "eval: rank {r}: {}:{}: {} (printed: {:?})",
                    e.file,
                    e.line,
                    e.what,
                    it.output.iter().rev().take(3).collect::<Vec<_>>()
                );
            }
            if let Err(e) = res {
                first_err.get_or_insert(e);
                continue;
            }
            outputs.push(crate::model::prediction::RankOutput {
                rank: r,
                lines: std::mem::take(&mut it.output),
            });
            arm_rates.append(&mut it.assumed_arms);
            for (t, x) in execs.iter_mut().zip(&scratch) {
                *t += x;
            }
            if n <= RANK_EXECS_MAX {
                rank_execs.push(scratch.clone());
            }
            // Arms weighted by a sampled rate keep it in the bounds; assumed ones do not.
            let data_branches = it.guessed;
            assumptions.extend(it.assumed.drain(..));
            // Bounds: the table's spread, and data-dependent branches never / always taken.
            // Without such branches the executions do not change: cost them at the table's
            // extremes.
            if !data_branches {
                let key = memo.key.key(&env);
                for (k, (table, bounds)) in [(&costs.low, &costs.bounds_low), (&costs.high, &costs.bounds_high)].into_iter().enumerate() {
                    let s = memo.get_keyed(key.clone(), model, table, bounds, &env);
                    row[k + 1] = scratch.iter().zip(s.iter()).map(|(n, t)| n * t).sum::<f64>() * factor;
                }
            } else {
                bounds_wanted.push((compute.len(), r));
            }
            compute.push(row);
        }
        // Another pass while a rank missed a value that this pass posted, or a value posted
        // differs from the previous pass's (a rank used it before it settled).
        // Receives of bulk data from ranks that ran later got what another pass would give
        // them (jacobi2d's halos): they alone call for none.
        let (posted, changed) = {
            let mut mail = sh.mail.borrow_mut();
            let soft = !missed_recvs.is_empty() || !missed_colls.is_empty();
            let (bulk, stand_ins) = (mail.bulk_only(&missed_recvs), mail.stand_ins_hold(&missed_colls));
            if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
                eprintln!("eval: pass {pass}: missed {missed}, receives from later ranks {} (bulk only: {bulk}), stand-ins {} (hold: {stand_ins})", missed_recvs.len(), missed_colls.len());
            }
            missed |= first_err.is_some() && soft || !bulk || !stand_ins;
            unsettled = (!stand_ins).then(|| missed_colls.len());
            (mail.posted(), std::mem::take(&mut mail.changed))
        };
        if !last && ((missed && posted > posted_before) || (changed && pass > 0)) {
            posted_before = posted;
            continue;
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        // The passes stop posting new values while some collectives still read a member's
        // contribution that never came (the member took another path): say so.
        if let Some(n) = unsettled {
            assumptions.insert(format!(
                "the static evaluation settled with {n} collective call{} whose contributions from ranks evaluated later were never posted: this rank's own stood in for them, and values computed from them may differ from the run's",
                if n == 1 { "" } else { "s" }
            ));
        }
        for (i, r) in bounds_wanted {
            for (k, (table, bounds, p)) in [(&costs.low, &costs.bounds_low, 0.0), (&costs.high, &costs.bounds_high, 1.0)]
                .into_iter()
                .enumerate()
            {
                let recost = Recost { model, table, bounds, env: rank_env(opts, r, n), memo: None };
                let mut bound = vec![0.0; model.blocks.len()];
                let mut sink = TraceSink {
                    writer: None,
                    secs: recost.secs(),
                    recost,
                    factor,
                    execs: &mut bound,
                    compute_s: 0.0,
                    mult: vec![],
                    unwritten: 0.0,
                    comms: Vec::new(),
                };
                let mut it = eval::Interp::new(sh, r, n, p, enums.clone());
                // A bound that cannot be evaluated (its arms lead where the values are not
                // known) leaves the interval at the estimate on that side, and says so.
                match ended(it.run(&mut sink)) {
                    Ok(()) => compute[i][k + 1] = sink.compute_s,
                    Err(e) => {
                        compute[i][k + 1] = compute[i][0];
                        assumptions.insert(format!(
                            "rank {r}: the interval does not cover its data-dependent branches all {} ({}:{}: {})",
                            if p == 0.0 { "untaken" } else { "taken" },
                            e.file,
                            e.line,
                            e.what
                        ));
                    }
                }
            }
        }
        result = Some(Skeletons {
            dir,
            execs,
            rank_execs,
            rank_comms,
            compute,
            assumptions: assumptions.into_iter().collect(),
            outputs,
            arm_rates,
        });
        break;
    }
    result.ok_or_else(|| Unresolved {
        file: String::new(),
        line: 0,
        what: "static evaluation did not settle".into(),
    })
}

/// A rank's environment for op-count formulas: the bindings, its rank and the size.
fn rank_env(opts: &Options, r: u32, n: u32) -> HashMap<String, f64> {
    let mut env: HashMap<String, f64> =
        opts.bindings.iter().map(|(k, v)| (k.clone(), *v)).collect();
    env.insert("rank".into(), r as f64);
    env.insert("size".into(), n as f64);
    env
}

/// exit() and MPI_Abort end a rank's evaluation like the end of main.
fn ended(r: Result<(), Unresolved>) -> Result<(), Unresolved> {
    match r {
        Err(e) if e.what.starts_with('\u{0}') => {
            if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
                eprintln!("mpicast: evaluation: exit at {}:{}", e.file, e.line);
            }
            Ok(())
        }
        other => other,
    }
}

/// The hottest blocks, functions and op classes from per-block execution totals.
pub fn attribute(
    model: &ProgramModel,
    execs: &[f64],
    costs: &BTreeMap<OpClass, f64>,
    bounds: &Bounds,
    bindings: &BTreeMap<String, f64>,
    factor: f64,
    top: usize,
) -> (Vec<BlockCost>, Vec<FunctionCost>, BTreeMap<OpClass, f64>) {
    let env: HashMap<String, f64> = bindings.iter().map(|(k, v)| (k.clone(), *v)).collect();
    let mut blocks = Vec::new();
    let mut classes: BTreeMap<OpClass, f64> = BTreeMap::new();
    let mut per_fn: BTreeMap<String, f64> = BTreeMap::new();
    let mut total = 0.0;
    for (i, b) in model.blocks.iter().enumerate() {
        let n = execs.get(i).copied().unwrap_or(0.0);
        if n == 0.0 {
            continue;
        }
        let mut op_seconds = BTreeMap::new();
        let mut s = 0.0;
        for (c, e) in &b.ops {
            let x = e.eval_map(&env).unwrap_or(0.0)
                * costs.get(c).copied().unwrap_or(0.0)
                * 1e-9
                * n
                * factor;
            if x > 0.0 {
                op_seconds.insert(*c, x);
                *classes.entry(*c).or_default() += x;
                s += x;
            }
        }
        // A block bound by its memory references (the time they take, where they come from)
        // or by a loop-carried chain.
        let memory = bounds.memory.block_time(&b.mem, &env).map(|m| MemoryShare { level: m.level, seconds: m.ns * 1e-9 * n * factor });
        let chain = bounds.chain_ns(b).map(|(v, ns)| ChainShare { var: v.to_string(), seconds: ns * 1e-9 * n * factor });
        let cycles = op_seconds.get(&OpClass::CoreCycle).copied().unwrap_or(0.0);
        s = bounds.block_ns(b, s / (1e-9 * n * factor), cycles / (1e-9 * n * factor), &env) * 1e-9 * n * factor;
        let first_touch_s = bounds.first_touch_ns(b, &env) * 1e-9 * n * factor;
        s += first_touch_s;
        let timed_calls = b.opaque.iter().any(|c| c.ns.is_some()).then(|| crate::model::prediction::TimedCallShare {
            funcs: b.opaque.iter().filter(|c| c.ns.is_some()).map(|c| c.func.clone()).collect(),
            seconds: b.timed_calls_ns() * 1e-9 * n * factor,
        });
        s += timed_calls.as_ref().map_or(0.0, |t| t.seconds);
        total += s;
        *per_fn.entry(b.function.clone()).or_default() += s;
        blocks.push(BlockCost {
            id: b.id.clone(),
            kind: b.kind.name().into(),
            function: b.function.clone(),
            file: b.file.clone(),
            line_start: b.line_start,
            line_end: b.line_end,
            executions: n,
            seconds: s,
            share: 0.0,
            op_seconds,
            memory,
            chain,
            first_touch_s: (first_touch_s > 0.0).then_some(first_touch_s),
            timed_calls,
        });
    }
    let share = |s: f64| if total > 0.0 { s / total } else { 0.0 };
    blocks.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    blocks.truncate(top);
    for b in &mut blocks {
        b.share = share(b.seconds);
    }
    let mut functions: Vec<FunctionCost> = model
        .functions
        .iter()
        .map(|f| {
            let s = per_fn.get(&f.name).copied().unwrap_or(0.0);
            FunctionCost {
                name: f.name.clone(),
                file: f.file.clone(),
                line_start: f.line_start,
                self_seconds: s,
                share: share(s),
            }
        })
        .collect();
    functions.sort_by(|a, b| b.self_seconds.total_cmp(&a.self_seconds));
    functions.truncate(top);
    (blocks, functions, classes)
}

/// The static path end to end: skeletons, replay, attribution.
/// The model with compiled-code ops when the options carry them, and the options with the
/// assumption that says so.
/// The range a table's `core_resources.factor` is taken in.
const RESOURCE_FACTOR: (f64, f64) = (0.5, 3.0);

fn with_compiled(model: &ProgramModel, opts: &Options) -> (ProgramModel, Options) {
    let mut o = opts.clone();
    let ranks = ranks_per_host(opts);
    let costs = Costs::from_table(&opts.machine, opts.variant);
    let (tp, lat) = costs.co_run_factors(ranks);
    if tp > 1.0 || lat > 1.0 {
        o.assumptions.push(format!(
            "{ranks} ranks at once on a host: loop bodies {tp:.2}x and dependent chains {lat:.2}x slower than alone (bench machine's co-run kernels, every core busy)"
        ));
    }
    let mut m = match &opts.compiled {
        Some(c) => {
            o.assumptions.push(c.summary());
            // The chains' latencies as measured, slowed as co-running chains are.
            let latency: BTreeMap<OpClass, f64> = opts.machine.classes.iter().map(|(c, m)| (*c, m.latency.ns_per_op * lat.max(1.0))).collect();
            // Resource-bound bodies at what the calibration kernels' bodies took against
            // llvm-mca's schedule of them on this host.
            let r = opts.machine.core_resources.as_ref().map_or(1.0, |c| c.factor.clamp(RESOURCE_FACTOR.0, RESOURCE_FACTOR.1));
            if r != 1.0 {
                o.assumptions.push(format!("resource-bound loop bodies at {r:.2}x llvm-mca's schedule (the calibration kernels' measured times against it on this host)"));
            }
            c.apply(model, Some(&costs.nominal), Some(&latency), tp, r)
        }
        None => model.clone(),
    };
    exits_to_parents(&mut m);
    (m, o)
}

/// Each loop's missed exits (per entry) as `branch_miss` ops of the block it is in, which runs
/// once per entry: the arm, the enclosing loop's iteration, or the function.
fn exits_to_parents(model: &mut ProgramModel) {
    let index: HashMap<&str, usize> = model.blocks.iter().enumerate().map(|(i, b)| (b.id.as_str(), i)).collect();
    let adds: Vec<(usize, Expr)> = model
        .blocks
        .iter()
        .filter(|b| b.kind == crate::model::analysis::BlockKind::Loop)
        .filter_map(|b| Some((*index.get(b.parent.as_deref()?)?, b.exit_misses.clone().filter(|e| !e.is_zero())?)))
        .collect();
    for (p, e) in adds {
        let ops = &mut model.blocks[p].ops;
        let sum = match ops.get(&OpClass::BranchMiss) {
            Some(old) => old.clone().add(e),
            None => e,
        };
        ops.insert(OpClass::BranchMiss, sum);
    }
}

pub fn predict_static(model: &ProgramModel, opts: &Options) -> Result<Prediction> {
    let t0 = Instant::now();
    if opts.ranks == 0 {
        bail!("-n must be at least 1");
    }
    let costs = Costs::from_table(&opts.machine, opts.variant).with_sharers(ranks_per_host(opts));
    let (model, opts) = &with_compiled(model, opts);
    let sk = skeletons(model, opts, &costs).map_err(anyhow::Error::new)?;
    finish(model, opts, &costs, sk, "static", t0)
}

/// The trace path: an instrumented run's block counts (every block counted: `mpicast trace
/// --all-blocks`) costed by formula (1), or its measured burst times (`--time-blocks`) when
/// `measured` is set, then the same replay and attribution as the static path.
pub fn predict_trace(
    dir: &Path,
    opts: &Options,
    measured: bool,
    allow_incomplete: bool,
) -> Result<(ProgramModel, Prediction)> {
    predict_trace_scaled(dir, opts, measured, allow_incomplete, None)
}

/// The trace path for a number of ranks other than the trace's: the traces are rewritten for
/// `opts.ranks` (`crate::scale`) before they are costed.
pub fn predict_trace_scaled(
    dir: &Path,
    opts: &Options,
    measured: bool,
    allow_incomplete: bool,
    scale: Option<&crate::scale::Request>,
) -> Result<(ProgramModel, Prediction)> {
    let t0 = Instant::now();
    let set = crate::trace::set::TraceSet::open(dir)?;
    predict_set_from(&set, opts, measured, allow_incomplete, scale, t0)
}

/// [`predict_trace_scaled`] from a trace directory already open: every rank file is read once
/// per set, whatever the number of predictions made from it (a sweep's points).
pub fn predict_trace_set(
    set: &crate::trace::set::TraceSet,
    opts: &Options,
    measured: bool,
    allow_incomplete: bool,
    scale: Option<&crate::scale::Request>,
) -> Result<(ProgramModel, Prediction)> {
    predict_set_from(set, opts, measured, allow_incomplete, scale, Instant::now())
}

fn predict_set_from(
    set: &crate::trace::set::TraceSet,
    opts: &Options,
    measured: bool,
    allow_incomplete: bool,
    scale: Option<&crate::scale::Request>,
    t0: Instant,
) -> Result<(ProgramModel, Prediction)> {
    let dir = set.dir.as_path();
    let (model, compiled_opts) = with_compiled(&set.model, opts);
    let opts = &compiled_opts;
    let meta = &set.meta;
    let ranks = set.ranks;
    if ranks != opts.ranks && scale.is_none() {
        bail!(
            "{}: the traces are of {ranks} ranks, -n asks for {}: predicting other rank counts from a trace needs trace scaling",
            dir.display(),
            opts.ranks
        );
    }
    let mut assumptions = opts.assumptions.clone();
    if let Some(m) = meta {
        if !m.complete && !allow_incomplete {
            let bad: Vec<String> = m
                .rank_traces
                .iter()
                .filter(|r| !r.complete)
                .map(|r| r.rank.to_string())
                .collect();
            bail!(
                "{}: incomplete trace (rank {} did not reach MPI_Finalize); --allow-incomplete predicts from what was recorded",
                dir.display(),
                bad.join(", ")
            );
        }
        if !m.complete {
            assumptions.push("prediction from an incomplete trace".into());
        }
        let polls: u64 = m.rank_traces.iter().filter_map(|r| r.polls).sum();
        if polls > 0 {
            let s: f64 = m.rank_traces.iter().filter_map(|r| r.poll_s).sum();
            assumptions.push(format!(
                "{polls} polls that found nothing (MPI_Test and its kin), {:.3} s of the ranks' CPU time in the traced run, are charged as it measured them: their number is the traced run's (a loop that polls until a message arrives polls as long as that run waited)",
                s
            ));
        }
        if !m.all_blocks && !measured {
            bail!(
                "{}: only the blocks the analysis could not count have trace points; trace with --all-blocks (or --time-blocks and predict with --measured)",
                dir.display()
            );
        }
        if measured && !m.time_blocks {
            bail!(
                "{}: --measured needs a trace taken with --time-blocks",
                dir.display()
            );
        }
        if let Some(s) = &m.sampling {
            assumptions.push(format!(
                "{}: {} of {} iterations traced; compute and messages of the loop extrapolated",
                s.block_id, s.sampled_iterations, s.trip_count
            ));
        }
    }
    let traces = set.traces().map_err(|e| anyhow::anyhow!("{e}"))?;
    let costs = Costs::from_table(&opts.machine, opts.variant).with_sharers(ranks_per_host(opts));
    // What one counter increment cost the traced run (measured by its runtime), taken off each
    // measured burst, seconds.
    let counter_s = counter_seconds(meta.iter().flat_map(|m| m.rank_traces.iter()));
    let out_ranks = match scale {
        Some(_) => opts.ranks,
        None => ranks,
    };
    let out = crate::trace::scratch_dir("mpicast-costed", out_ranks)
        .context("cannot create a temporary directory")?;
    let pack = match crate::trace::pack::packs(out_ranks) {
        true => Some(std::rc::Rc::new(std::cell::RefCell::new(
            crate::trace::pack::PackWriter::create(out.path(), out_ranks).with_context(|| format!("{}: cannot write", out.path().display()))?,
        ))),
        false => None,
    };
    let mut costing = Costing {
        model: &model,
        costs: &costs,
        base_env: opts.bindings.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        out: out.path(),
        pack,
        ranks: out_ranks,
        formula_size: scale.filter(|req| req.mode == crate::scale::Mode::Weak && ranks != opts.ranks).map(|_| ranks),
        factor: opts.what_if.compute_factor(),
        counter_s,
        measured,
        analysis_dir: dir,
        execs: vec![0.0; model.blocks.len()],
        compute: vec![[0.0; 3]; out_ranks as usize],
        memo: SecondsMemo::new(&model),
    };
    let mut scaling = None;
    match scale {
        Some(req) if ranks != opts.ranks => {
            let env: HashMap<String, f64> = opts
                .bindings
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .chain([
                    ("rank".to_string(), 0.0),
                    ("size".to_string(), ranks as f64),
                ])
                .collect();
            let cost = block_seconds(&model, &costs.nominal, &costs.bounds, &env);
            let evaluated = match req.mode {
                crate::scale::Mode::Program => static_trips(&model, opts, &costs, ranks, opts.ranks),
                _ => Default::default(),
            };
            if !evaluated.trips.is_empty() {
                let mut at: Vec<String> = evaluated
                    .trips
                    .iter()
                    .map(|(b, r)| format!("{}:{} x{r:.3}", file_name(&model.blocks[*b].file), model.blocks[*b].line_start))
                    .collect();
                at.sort();
                assumptions.push(format!(
                    "loops the front end cannot count rescaled by the program's own arithmetic (the static path at {ranks} and {} ranks): {}",
                    opts.ranks,
                    at.join(", ")
                ));
            }
            let req = crate::scale::Request {
                to_ranks: opts.ranks,
                evaluated,
                ..req.clone()
            };
            // Each scaled rank is costed as it is made; a costing error is not a scaling one.
            let mut costing_error = None;
            let scaled = crate::scale::scale_traces(traces, &model, &opts.bindings, cost, &req, &mut |r, items| {
                let what = format!("rank {r} of the traces scaled to {} ranks", opts.ranks);
                costing.rank(r, &items, &what).map_err(|e| {
                    let msg = format!("{e:#}");
                    costing_error = Some(e);
                    anyhow::anyhow!(msg)
                })
            });
            if let Some(e) = costing_error {
                return Err(e);
            }
            let info = scaled.with_context(|| {
                format!(
                    "{}: scaling from {ranks} to {} ranks",
                    dir.display(),
                    opts.ranks
                )
            })?;
            assumptions.push(format!(
                "traces of {ranks} ranks scaled to {} ({} -> {}, {} scaling; {:.0}% of compute rescaled by the program's formulas)",
                opts.ranks,
                info.topology,
                info.scaled_topology,
                info.mode,
                100.0 * info.formula_share
            ));
            scaling = Some(info);
        }
        _ => {
            for (r, items) in traces.iter().enumerate() {
                let what = crate::trace::rank_file(dir, r as u32).display().to_string();
                costing.rank(r as u32, items, &what)?;
            }
        }
    }
    let ranks = out_ranks;
    let Costing { execs, compute, pack, .. } = costing;
    if let Some(p) = pack {
        let p = std::rc::Rc::into_inner(p).expect("the rank writers are done").into_inner();
        p.finish().with_context(|| format!("{}: cannot write", out.path().display()))?;
    }
    let sk = Skeletons {
        dir: out,
        execs,
        rank_execs: Vec::new(),
        rank_comms: Vec::new(),
        compute,
        assumptions: Vec::new(),
        outputs: Vec::new(),
        arm_rates: BTreeMap::new(),
    };
    let mut o = Options {
        assumptions,
        ..opts.clone()
    };
    o.ranks = ranks;
    let mode = match (&scaling, measured) {
        (Some(s), true) => format!("trace (measured bursts) scaled from {} ranks", s.from_ranks),
        (Some(s), false) => format!("trace scaled from {} ranks", s.from_ranks),
        (None, true) => "trace (measured bursts)".to_string(),
        (None, false) => "trace".to_string(),
    };
    let mut p = finish(&model, &o, &costs, sk, &mode, t0)?;
    if let Some(m) = meta {
        p.args = m.args.clone();
        p.launch = m.launch.clone();
    }
    p.scaling = scaling;
    Ok((model, p))
}

/// Costs traced ranks into the files the simulation replays: block counts by formula (1) (or
/// measured bursts), each rank's compute summed between its MPI actions, loops unfolded as
/// `TraceReader` unfolds them and folded again by the writer (steady-state folding needs them).
struct Costing<'a> {
    model: &'a ProgramModel,
    costs: &'a Costs,
    base_env: HashMap<String, f64>,
    out: &'a Path,
    /// Where the costed traces go when they are packed (`trace::pack::packs`).
    pack: Option<crate::trace::pack::SharedPack>,
    /// Ranks of the costed traces.
    ranks: u32,
    /// Weak scaling from K traced ranks: every rank computes as a traced one did, so its
    /// blocks' formulas (a loop's trip, hence its missed exits; a reference's footprint) read
    /// size K and rank r mod K.
    formula_size: Option<u32>,
    /// The what-if compute factor.
    factor: f64,
    /// Seconds one counter increment cost the traced run.
    counter_s: f64,
    measured: bool,
    /// Where analysis.json is, for errors.
    analysis_dir: &'a Path,
    /// Executions of each block, all ranks.
    execs: Vec<f64>,
    /// Per rank: compute seconds at the nominal, low and high costs.
    compute: Vec<[f64; 3]>,
    memo: SecondsMemo,
}

impl Costing<'_> {
    /// Costs rank `r`'s tree (`what` names it in errors) and writes its costed trace.
    fn rank(&mut self, r: u32, items: &[crate::trace::fold::Item], what: &str) -> Result<()> {
        use crate::model::trace::Compute;
        let (model, ranks, factor, measured, counter_s) = (self.model, self.ranks, self.factor, self.measured, self.counter_s);
        let mut env = self.base_env.clone();
        let (fr, fs) = match self.formula_size {
            Some(k) if k > 0 => (r % k, k),
            _ => (r, ranks),
        };
        env.insert("rank".into(), fr as f64);
        env.insert("size".into(), fs as f64);
        if let Some((dims, coords)) = grid_of(model, &env, fr) {
            grid_env(&mut env, &dims, &coords);
        }
        let c = self.costs;
        let key = self.memo.key.key(&env);
        let secs = [(&c.nominal, &c.bounds), (&c.low, &c.bounds_low), (&c.high, &c.bounds_high)]
            .map(|(t, b)| self.memo.get_keyed(key.clone(), model, t, b, &env));
        let nb = model.blocks.len();
        let writer = match &self.pack {
            Some(p) => TraceWriter::create_packed(p, r, ranks),
            None => TraceWriter::create(self.out, r, ranks),
        };
        let mut w = crate::trace::fold::FoldingWriter::new(writer.with_context(|| format!("{}: cannot write", self.out.display()))?);
        let execs = &mut self.execs;
        let mut row = [0.0; 3];
        let mut pending = 0.0;
        let analysis_dir = self.analysis_dir;
        let cost = |blocks: &[(u32, u64)], execs: &mut [f64], row: &mut [f64; 3]| -> Result<f64> {
            let mut s = [0.0; 3];
            for (b, n) in blocks {
                let b = *b as usize;
                if b >= nb {
                    bail!(
                        "{what}: block {b} is not in {}/analysis.json ({nb} blocks)",
                        analysis_dir.display()
                    );
                }
                execs[b] += *n as f64;
                for k in 0..3 {
                    s[k] += secs[k][b] * *n as f64;
                }
            }
            for k in 0..3 {
                row[k] += s[k] * factor;
            }
            Ok(s[0] * factor)
        };
        each_action(items, &mut |a| {
            match a {
                TraceAction::Compute {
                    compute: Compute::Blocks(b),
                } => pending += cost(b, execs, &mut row)?,
                TraceAction::Compute {
                    compute: Compute::TimedBlocks { blocks, seconds },
                } => {
                    let modelled = cost(blocks, execs, &mut row)?;
                    if measured {
                        // Block benchmarking: the time measured on the traced host less what
                        // its counters cost (at most half of it), scaled by the what-if factor;
                        // the table's spread does not apply.
                        let increments: u64 = blocks.iter().map(|b| b.1).sum();
                        // An MPI call's own ops (a constructor's comm_create) are in no measured
                        // burst (the trace runtime leaves them out): costed from the table.
                        let calls: f64 = blocks
                            .iter()
                            .filter(|(b, _)| model.blocks.get(*b as usize).is_some_and(|x| x.kind == crate::model::analysis::BlockKind::Comm))
                            .map(|(b, n)| secs[0][*b as usize] * *n as f64)
                            .sum();
                        let m = (seconds - (counter_s * increments as f64).min(0.5 * seconds) + calls) * factor;
                        for x in row.iter_mut() {
                            *x += m - modelled;
                        }
                        pending += m;
                    } else {
                        pending += modelled;
                    }
                }
                TraceAction::Compute {
                    compute: Compute::Seconds(s),
                } => {
                    let s = s * factor;
                    row.iter_mut().for_each(|x| *x += s);
                    pending += s;
                }
                other => {
                    if pending > 0.0 {
                        w.action(&skeleton::compute_action(std::mem::take(&mut pending)))?;
                    }
                    w.action(other)?;
                }
            }
            Ok(())
        })?;
        if pending > 0.0 {
            w.action(&skeleton::compute_action(pending))?;
        }
        w.finish()?;
        self.compute[r as usize] = row;
        Ok(())
    }
}

/// Calls `f` on every action of `items` in order, loops unfolded (a loop of count 0 or with an
/// empty body gives nothing).
fn each_action(items: &[crate::trace::fold::Item], f: &mut dyn FnMut(&TraceAction) -> Result<()>) -> Result<()> {
    use crate::trace::fold::Item;
    for it in items {
        match it {
            Item::Action(a) => f(a)?,
            Item::Loop(k, body) => {
                if body.is_empty() {
                    continue;
                }
                for _ in 0..*k {
                    each_action(body, f)?;
                }
            }
        }
    }
    Ok(())
}

/// The program times itself (`ProgramModel::clock_loops`): what a prediction that ran such
/// loops must say.
fn clock_warning(model: &ProgramModel, execs: &[f64], mode: &str) -> Option<String> {
    let mut run: Vec<&crate::model::analysis::ClockLoop> = model
        .clock_loops
        .iter()
        .filter(|c| {
            model.blocks.iter().zip(execs).any(|(b, n)| b.kind == crate::model::analysis::BlockKind::Loop && b.file == c.file && b.line_start == c.line && *n > 0.0)
        })
        .collect();
    run.dedup_by(|a, b| a.file == b.file && a.line == b.line);
    let first = run.first()?;
    let lines: Vec<String> = run.iter().map(|c| c.line.to_string()).collect();
    let whose = if mode.starts_with("static") {
        "the iterations counted are the ones the static path assumed"
    } else {
        "the iterations counted are the traced run's (instrumented, slower than a real run)"
    };
    Some(format!(
        "the program times itself: the loop{} at {}:{} run{} while a value read from a clock allows ({}, from {}); how often depends on the run's speed: {whose}",
        if run.len() > 1 { "s" } else { "" },
        file_name(&first.file),
        lines.join(", "),
        if run.len() > 1 { "" } else { "s" },
        first.reads,
        first.clock
    ))
}

/// What one block-counter increment cost the traced run, seconds, from its ranks' estimates
/// (`RankTrace::counter_ns`: each rank's span over a plain run's, per increment): the lower
/// median over the ranks that made at least half as many increments as the busiest. A rank that
/// counts little, a master that waits while its workers compute, divides the difference
/// between two runs' waits by a few increments: at 2 ranks the upper median was the master's,
/// and took half of every burst off the worker (matmul_mw 512 4 predicted at -52.7% on a 16-core
/// machine). The estimate is a difference of two single runs: the lower median is the less
/// inflated by the noise of the instrumented one. Traces without increments take every rank.
pub fn counter_seconds<'a>(ranks: impl Iterator<Item = &'a RankTrace>) -> f64 {
    let ranks: Vec<&RankTrace> = ranks.filter(|t| t.counter_ns.is_some()).collect();
    let busiest = ranks.iter().filter_map(|t| t.increments).max().unwrap_or(0);
    let mut v: Vec<f64> = ranks
        .iter()
        .filter(|t| t.increments.is_none_or(|n| 2 * n >= busiest))
        .filter_map(|t| t.counter_ns)
        .collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0.0) * 1e-9
}

/// The calls into code the analysis does not see that ran without a time measured for them
/// (the static path's, a trace's whose run did not time them): each costs one `call` op. The
/// most executed first.
fn untimed_calls(model: &ProgramModel, execs: &[f64]) -> Option<String> {
    let mut by_func: BTreeMap<&str, f64> = BTreeMap::new();
    for (b, n) in model.blocks.iter().zip(execs) {
        for c in b.opaque.iter().filter(|c| c.ns.is_none() && *n > 0.0) {
            *by_func.entry(c.func.as_str()).or_default() += n;
        }
    }
    let mut v: Vec<(&str, f64)> = by_func.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    let calls: f64 = v.iter().map(|x| x.1).sum();
    v.first()?;
    let names: Vec<String> = v.iter().take(4).map(|(f, n)| format!("{f} x{n:.0}")).collect();
    Some(format!(
        "{calls:.0} calls into code the analysis does not see ({}{}) cost one call op each (not timed: a prediction from a trace times them where they take longer than the timing itself)",
        names.join(", "),
        if v.len() > 4 { ", ..." } else { "" },
    ))
}

/// Replay of costed per-rank traces, then the prediction with its attribution.
fn finish(
    model: &ProgramModel,
    opts: &Options,
    costs: &Costs,
    sk: Skeletons,
    mode: &str,
    t0: Instant,
) -> Result<Prediction> {
    if let Some(d) = &opts.save_traces {
        std::fs::create_dir_all(d).with_context(|| format!("{}: cannot create", d.display()))?;
        let from = crate::trace::pack::TraceDir::open(sk.dir.path())?;
        for r in 0..opts.ranks {
            let to = crate::trace::rank_file(d, r);
            let text = from.text(r).with_context(|| format!("{}: cannot read", crate::trace::rank_file(sk.dir.path(), r).display()))?;
            std::fs::write(&to, text).with_context(|| format!("{}: cannot write", to.display()))?;
        }
    }
    let platform = platform::edit::prepare(&opts.platform, &opts.what_if.platform_edits())?;
    let eager = opts
        .eager_threshold
        .or_else(|| platform::edit::eager_threshold(&opts.platform))
        .unwrap_or(65536);
    let options = ReplayOptions {
        eager_threshold_bytes: eager,
        copy_ns_per_byte: costs.bounds.memory.copy_steps(),
        timeline: opts.timeline,
        no_fold: opts.no_fold,
        analytic: opts.analytic,
        ..Default::default()
    };
    let result = crate::sim::replay(
        &crate::sim::TraceSource::Written(sk.dir.path().to_path_buf()),
        platform.path(),
        opts.mapping.clone(),
        opts.cfg.clone(),
        options,
    )
    .context("simulation")?;
    let mut result = result;
    result.warnings.extend(clock_warning(model, &sk.execs, mode));
    let makespan = result.makespan_s;
    // The interval: the critical rank's compute moved to its bounds.
    let (mut down, mut up) = (0.0f64, 0.0f64);
    for row in &sk.compute {
        down = down.max(row[0] - row[1]);
        up = up.max(row[2] - row[0]);
    }
    let factor = opts.what_if.compute_factor();
    // The block table costs all ranks' executions in one environment: rank 0's, with its
    // place in the grid (a block's memory bound may depend on it).
    let mut report_env: HashMap<String, f64> = rank_env(opts, 0, opts.ranks);
    if let Some((dims, coords)) = grid_of(model, &report_env, 0) {
        grid_env(&mut report_env, &dims, &coords);
    }
    let (blocks, functions, op_classes) = attribute(
        model,
        &sk.execs,
        &costs.nominal,
        &costs.bounds,
        &report_env.into_iter().collect(),
        factor,
        opts.top,
    );
    let mut assumptions = opts.assumptions.clone();
    assumptions.extend(sk.assumptions);
    assumptions.extend(untimed_calls(model, &sk.execs));
    Ok(Prediction {
        program: model.files.clone(),
        args: opts.args.clone(),
        ranks: opts.ranks,
        bindings: opts.bindings.clone(),
        mode: mode.into(),
        platform: opts.platform.display().to_string(),
        machine: machine_ref(&opts.machine, &opts.machine_path),
        costs: if opts.variant == Variant::Fitted && opts.machine.fit.is_some() {
            "fitted".into()
        } else {
            "raw".into()
        },
        what_if: opts.what_if.as_map(),
        predicted_s: makespan,
        interval_s: [(makespan - down).max(0.0), makespan + up],
        ranks_detail: result.ranks,
        hosts: result.hosts,
        links: result.links,
        blocks,
        functions,
        op_classes,
        assumptions,
        warnings: result.warnings,
        messages: result.messages,
        simulation_wall_s: result.wall_s,
        wall_s: t0.elapsed().as_secs_f64(),
        folded: result.folded,
        timeline: result.timeline,
        scaling: None,
        fallback: None,
        startup_s: None,
        startup_ranks: None,
        calibration: None,
        launch: Vec::new(),
        static_output: sk.outputs,
        arm_rates: sk.arm_rates.iter().filter_map(|(b, r)| Some((model.blocks.get(*b)?.id.clone(), *r))).collect(),
    })
}

pub fn machine_ref(t: &MachineTable, path: &Path) -> MachineRef {
    MachineRef {
        path: path.display().to_string(),
        hostname: t.host.hostname.clone(),
        cpu_model: t.host.cpu_model.clone(),
        compiler: format!("{} {}", t.compiler.cc, t.compiler.cflags.join(" ")),
        speed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(rank: u32, counter_ns: f64, increments: Option<u64>) -> RankTrace {
        RankTrace {
            rank,
            complete: true,
            bytes: 0,
            events: None,
            timing_overhead_s: None,
            counter_ns: Some(counter_ns),
            increments,
            polls: None,
            poll_s: None,
        }
    }

    #[test]
    fn a_rank_that_counts_little_does_not_set_the_counters_cost() {
        // A master that waited 0.2 s longer over 1,000 increments, a worker 10 ms longer over
        // 100 million: the worker's 0.1 ns, not the master's 200,000 ns.
        let mw = [rank(0, 2e5, Some(1_000)), rank(1, 0.1, Some(100_000_000))];
        assert!((counter_seconds(mw.iter()) - 0.1e-9).abs() < 1e-18);
        // Ranks that count alike: the lower median (the instrumented run's noise inflates).
        let spmd = [rank(0, 0.3, Some(1_000)), rank(1, 0.1, Some(1_000)), rank(2, 0.2, Some(900)), rank(3, 0.9, Some(1_000))];
        assert!((counter_seconds(spmd.iter()) - 0.2e-9).abs() < 1e-18);
        // Traces written before increments were: every rank, lower median.
        let old = [rank(0, 2e5, None), rank(1, 0.1, None)];
        assert!((counter_seconds(old.iter()) - 0.1e-9).abs() < 1e-18);
        assert_eq!(counter_seconds([].iter()), 0.0);
    }
}
