//! Scaling traces to another number of ranks (dPerf section IV-D, beyond it): the logical
//! topology is detected from the trace's communication graph and from the source, then every
//! rank's trace is rewritten for the new size (`rewrite`), with compute and message sizes changed
//! as the program's own formulas say, or by the weak or strong scaling assumptions (`ratio`).

pub mod detect;
pub mod farm;
pub mod items;
pub mod ratio;
pub mod rewrite;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::model::analysis::ProgramModel;
use crate::model::prediction::{ScaledBlock, Scaling};
use crate::model::trace::{RankList, TraceMeta};
use crate::mpi::cart::dims_create;

pub use detect::Topology;
pub use ratio::Mode;

/// What to scale to, and how.
#[derive(Debug, Clone)]
pub struct Request {
    pub to_ranks: u32,
    pub mode: Mode,
    /// `--force-topology`: the topology of the traced run, as the user knows it.
    pub force: Option<Topology>,
    /// The static path's evaluation of the program at K and N' ranks, where it ran.
    pub evaluated: Evaluated,
}

/// What the static path's evaluation at K and at N' ranks says about block executions.
#[derive(Debug, Clone, Default)]
pub struct Evaluated {
    /// Loops the front end cannot count (block index): trips per entry at N' over K.
    pub trips: HashMap<usize, f64>,
    /// Executions per rank at N' over K of every block (averaged over the ranks).
    pub executions: HashMap<usize, f64>,
    /// Each rank's executions of every block, at K and at N' (empty where not kept).
    pub rank_execs: (Vec<Vec<f64>>, Vec<Vec<f64>>),
    /// Each rank's communicators (members, in the order the rank defines them), at K and at N'
    /// (empty where not kept).
    pub rank_comms: (Vec<Vec<RankList>>, Vec<Vec<RankList>>),
}

impl Evaluated {
    /// The members at N' of the communicator new rank `rank` defines where its origin rank
    /// `origin` defined one of `traced` members at K: the one at the same place in the new
    /// rank's own list, when the evaluation at K gave the origin the traced communicators and
    /// every place holding `traced` gives the new rank the same members.
    pub fn communicator(&self, origin: u32, rank: u32, traced: &RankList) -> Option<RankList> {
        let (at_k, at_n) = (self.rank_comms.0.get(origin as usize)?, self.rank_comms.1.get(rank as usize)?);
        if at_k.len() != at_n.len() {
            return None;
        }
        let mut found: Option<&RankList> = None;
        for (k, n) in at_k.iter().zip(at_n) {
            if k == traced {
                match found {
                    Some(f) if f != n => return None,
                    _ => found = Some(n),
                }
            }
        }
        found.filter(|m| m.contains(rank)).cloned()
    }
}

/// Topology of a trace directory of `k` ranks: from its graph and from the analysis; the one
/// used, or an error that says what was found.
pub fn choose_topology(traces: &[Vec<items::Item>], model: &ProgramModel, bindings: &BTreeMap<String, f64>, force: Option<&Topology>) -> Result<(Topology, Scaling)> {
    let k = traces.len() as u32;
    let g = detect::Graph::from_traces(traces);
    let dynamic = detect::from_graph(&g);
    let stat = detect::from_analysis(model, bindings, k);
    let mut evidence: Vec<String> = dynamic.evidence.iter().map(|e| format!("trace: {e}")).collect();
    evidence.extend(stat.evidence.iter().map(|e| format!("source: {e}")));
    let (topology, agreement) = if let Some(f) = force {
        if !detect::static_fits(&g, f) {
            evidence.push(format!("forced: the trace's messages do not follow a {f}; peers outside it are mapped as well as they can be"));
        }
        (f.clone(), "forced".to_string())
    } else {
        match (&dynamic.topology, &stat.topology) {
            (Some(d), Some(s)) if d == s => (d.clone(), "agree".to_string()),
            // The source refines what a small trace cannot tell apart (periodic dimensions of
            // two ranks, dimensions of one).
            (Some(d), Some(s)) if detect::static_fits(&g, s) => (s.clone(), format!("agree (the trace alone also fits a {d})")),
            (Some(d), Some(s)) => (d.clone(), format!("disagree: the source says {s}, the trace shows {d}; the trace's is used")),
            // Two ranks that talk are a chain of two, or a master and its worker, whatever the
            // program does (a ring, pairs, rank 0 with the last rank, ranks 0 and 1 only, a
            // chain whose last rank sends its boundary to the first): without the source's
            // word it is a guess.
            (Some(d @ (Topology::Grid { .. } | Topology::MasterWorker { .. })), None) if k == 2 => bail!(
                "cannot scale: a 2-rank trace whose ranks talk fits a {d} whatever the program does, and the source's peers are not recognised ({}); trace with more ranks, or --force-topology says which it is",
                stat.evidence.join("; ")
            ),
            (Some(d), None) => (d.clone(), "trace only".to_string()),
            (None, Some(s)) if detect::static_fits(&g, s) => (s.clone(), "static only".to_string()),
            (None, s) => {
                let what = dynamic.evidence.join("; ");
                bail!(
                    "cannot scale: no known topology ({what}{}); scaling would be a guess: --force-topology says which it is (master-worker, independent, pairs, mesh:AxB, torus:AxBxC, chain:N, ring:N)",
                    match s {
                        Some(s) => format!("; the source says {s} but the trace does not follow it"),
                        None => String::new(),
                    }
                )
            }
        }
    };
    let info = Scaling {
        from_ranks: k,
        to_ranks: k,
        topology: topology.to_string(),
        scaled_topology: String::new(),
        trace_topology: dynamic.topology.as_ref().map(|t| t.to_string()),
        static_topology: stat.topology.as_ref().map(|t| t.to_string()),
        evidence,
        agreement,
        mode: String::new(),
        formula_share: 0.0,
        messages_by_formula: 0,
        messages_by_faces: 0,
        messages_kept: 0,
        notes: Vec::new(),
        blocks: Vec::new(),
    };
    Ok((topology, info))
}

/// The grid of `n` ranks a grid of `dims` becomes: MPI_Dims_create's balanced one (what a
/// program calling it gets).
pub fn scaled_dims(dims: &[u32], n: u32) -> Option<Vec<u32>> {
    dims_create(n as i64, &vec![0; dims.len()], dims.len()).map(|d| d.iter().map(|x| *x as u32).collect())
}

/// Rewrites the traces in `dir` (from `mpicast trace`: rank files, analysis.json, meta.json) for
/// `req.to_ranks` ranks into `out`. `cost` is seconds per execution of each block (to weigh
/// blocks in the report and to scale measured burst times).
pub fn scale_dir(dir: &Path, out: &Path, model: &ProgramModel, bindings: &BTreeMap<String, f64>, cost: Vec<f64>, req: &Request) -> Result<Scaling> {
    let k = crate::trace::discover(dir)?;
    let n = req.to_ranks;
    if n == 0 {
        bail!("cannot scale to 0 ranks");
    }
    let mut traces = Vec::with_capacity(k as usize);
    let from = crate::trace::pack::TraceDir::open(dir)?;
    for r in 0..k {
        traces.push(items::read_in(&from, r)?);
    }
    std::fs::create_dir_all(out).with_context(|| format!("{}: cannot create", out.display()))?;
    let info = scale_traces(&traces, model, bindings, cost, req, &mut |r, it| items::write(out, r, n, &it))?;
    // The analysis and the run's description go along, resized.
    std::fs::copy(dir.join("analysis.json"), out.join("analysis.json")).with_context(|| format!("{}: cannot copy analysis.json", out.display()))?;
    let meta_path = dir.join("meta.json");
    if meta_path.is_file() {
        let mut meta: TraceMeta = crate::model::read_artifact(&meta_path)?;
        let first = meta.rank_traces.first().cloned();
        meta.ranks = n;
        if let Some(t) = first {
            let old = meta.rank_traces.clone();
            meta.rank_traces = (0..n)
                .map(|r| {
                    let mut x = old.get((r % k) as usize).cloned().unwrap_or_else(|| t.clone());
                    x.rank = r;
                    x
                })
                .collect();
        }
        crate::model::write_artifact(&out.join("meta.json"), &meta)?;
    }
    Ok(info)
}

/// Rewrites the traces of `traces.len()` ranks (each rank's tree) for `req.to_ranks` ranks,
/// giving each new rank's tree to `emit` as it is made (one at a time: thousands of ranks are
/// never all in memory). `cost` as for [`scale_dir`].
pub fn scale_traces(
    traces: &[Vec<items::Item>],
    model: &ProgramModel,
    bindings: &BTreeMap<String, f64>,
    cost: Vec<f64>,
    req: &Request,
    emit: &mut dyn FnMut(u32, Vec<items::Item>) -> Result<()>,
) -> Result<Scaling> {
    let k = traces.len() as u32;
    let n = req.to_ranks;
    if n == 0 {
        bail!("cannot scale to 0 ranks");
    }
    let (topology, mut info) = choose_topology(traces, model, bindings, req.force.as_ref())?;
    let mut scaler = ratio::Scaler::new(model, req.mode, cost);
    scaler.evaluated = req.evaluated.clone();
    let base_env: HashMap<String, f64> = bindings.iter().map(|(a, b)| (a.clone(), *b)).collect();
    let ctx = rewrite::Ctx { k, n, scaler: &scaler, base_env };
    let mut written = 0u32;
    let mut emit = |r: u32, it: Vec<items::Item>| -> Result<()> {
        written += 1;
        emit(r, it)
    };
    let mut notes = Vec::new();
    let scaled = match &topology {
        Topology::Single | Topology::Independent => {
            rewrite::independent(&ctx, traces, &mut emit, &mut notes)?;
            if matches!(topology, Topology::Single) { Topology::Independent } else { topology.clone() }
        }
        Topology::MasterWorker { root } => {
            // A farm's tasks are the program's, dealt to the new workers; as many per worker
            // only where the user asked for weak scaling.
            match (req.mode != Mode::Weak).then(|| farm::Farm::detect(traces, *root)).flatten() {
                Some(f) => f.emit(&ctx, &mut emit, &mut notes)?,
                None => rewrite::master_worker(&ctx, *root, traces, &mut emit, &mut notes)?,
            }
            topology.clone()
        }
        Topology::Pairs => {
            if k % 2 != 0 || n % 2 != 0 {
                bail!("pairs of ranks scale between even numbers of ranks only ({k} -> {n})");
            }
            rewrite::pairs(&ctx, traces, &mut emit)?;
            Topology::Pairs
        }
        Topology::Grid { dims, periodic } => {
            if dims.iter().product::<u32>() != k {
                bail!("the topology {topology} does not have {k} ranks");
            }
            let new_dims = scaled_dims(dims, n).with_context(|| format!("no {}-dimensional grid of {n} ranks", dims.len()))?;
            let mut g = rewrite::Grid::new(&ctx, dims.clone(), periodic.clone(), new_dims.clone(), traces)?;
            g.emit_all(&mut emit)?;
            Topology::Grid { dims: new_dims, periodic: periodic.clone() }
        }
    };
    drop(emit);
    debug_assert_eq!(written, n);
    let st = scaler.stats.borrow().clone();
    info.to_ranks = n;
    info.scaled_topology = scaled.to_string();
    info.mode = req.mode.name().to_string();
    info.formula_share = if st.total_weight > 0.0 { st.formula_weight / st.total_weight } else { 0.0 };
    info.messages_by_formula = st.bytes_formula;
    info.messages_by_faces = st.bytes_faces;
    info.messages_kept = st.bytes_kept;
    info.notes = notes;
    if st.comms_evaluated > 0 {
        info.notes.push(format!(
            "{} communicator definition{} of some ranks (neither every rank nor a tiling of consecutive groups) given the members the program computes at {n} ranks (the static path's evaluation)",
            st.comms_evaluated,
            if st.comms_evaluated == 1 { "" } else { "s" }
        ));
    }
    info.blocks = st
        .blocks
        .iter()
        .filter_map(|(&b, &(traced, scaled, w, ok))| {
            let blk = model.blocks.get(b as usize)?;
            let by = match req.mode {
                Mode::Strong => "strong",
                Mode::Weak => "weak",
                Mode::Program if ok => "formula",
                Mode::Program => "kept",
            };
            Some(ScaledBlock { id: blk.id.clone(), by: by.to_string(), traced, scaled, share: if st.total_weight > 0.0 { w / st.total_weight } else { 0.0 } })
        })
        .collect();
    info.blocks.sort_by(|a, b| b.share.total_cmp(&a.share).then_with(|| a.id.cmp(&b.id)));
    Ok(info)
}
