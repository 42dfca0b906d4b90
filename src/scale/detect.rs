//! Topology detection: from a trace's communication graph (who talks to whom) and statically from
//! the analysis (MPI_Cart_create and its dimensions and periods, peer formulas such as rank±1,
//! a master that receives from every worker).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::model::analysis::ProgramModel;
use crate::model::trace::{Peer, TraceAction};
use crate::mpi::cart::{cart_coords, cart_rank, dims_create};

use super::items::{walk, Item};

/// A logical topology of ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    /// One rank: nothing to learn about peers.
    Single,
    /// No point-to-point messages: collectives only; every rank but the roots alike.
    Independent,
    /// Workers talk to the master only (dPerf's master-worker, its formula (2)).
    MasterWorker { root: u32 },
    /// A Cartesian grid in MPI's row-major rank order (the last dimension varies fastest);
    /// one dimension is a chain (or a ring when periodic).
    Grid { dims: Vec<u32>, periodic: Vec<bool> },
    /// Ranks 2i and 2i + 1 talk to each other only (ping-pong benchmarks: the partner is
    /// rank ^ 1).
    Pairs,
}

impl std::fmt::Display for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Topology::Single => write!(f, "one rank"),
            Topology::Independent => write!(f, "no point-to-point messages (collectives only)"),
            Topology::MasterWorker { root } => write!(f, "master-worker (master rank {root})"),
            Topology::Pairs => write!(f, "pairs (rank 2i with 2i + 1)"),
            Topology::Grid { dims, periodic } => {
                let d: Vec<String> = dims.iter().map(u32::to_string).collect();
                let all = periodic.iter().all(|p| *p);
                let none = periodic.iter().all(|p| !*p);
                let kind = match (dims.len(), all, none) {
                    (1, true, _) => "ring".to_string(),
                    (1, _, _) => "1D chain".to_string(),
                    (n, true, _) => format!("{n}D torus"),
                    (n, _, true) => format!("{n}D mesh"),
                    (n, _, _) => {
                        let p: Vec<&str> = periodic.iter().map(|p| if *p { "periodic" } else { "open" }).collect();
                        format!("{n}D grid ({})", p.join(", "))
                    }
                };
                write!(f, "{kind} {}", d.join("x"))
            }
        }
    }
}

/// The parsed form of `--force-topology`: `master-worker[:ROOT]`, `independent`, `pairs`, `mesh:AxB[xC]`,
/// `torus:AxB[xC]`, `ring:N`, `chain:N` (dimensions of the traced run).
pub fn parse_topology(s: &str) -> Result<Topology, String> {
    let (kind, arg) = s.split_once(':').map(|(a, b)| (a, Some(b))).unwrap_or((s, None));
    let dims = |a: Option<&str>| -> Result<Vec<u32>, String> {
        let a = a.ok_or_else(|| format!("{s}: give the traced run's dimensions, e.g. {kind}:2x2"))?;
        a.split('x')
            .map(|d| d.parse::<u32>().ok().filter(|d| *d > 0).ok_or_else(|| format!("{s}: {d:?} is not a dimension")))
            .collect()
    };
    match kind {
        "master-worker" | "star" => {
            let root = match arg {
                Some(r) => r.parse().map_err(|_| format!("{s}: {r:?} is not a rank"))?,
                None => 0,
            };
            Ok(Topology::MasterWorker { root })
        }
        "independent" => Ok(Topology::Independent),
        "pairs" => Ok(Topology::Pairs),
        "mesh" | "chain" => {
            let d = dims(arg)?;
            Ok(Topology::Grid { periodic: vec![false; d.len()], dims: d })
        }
        "torus" | "ring" => {
            let d = dims(arg)?;
            Ok(Topology::Grid { periodic: vec![true; d.len()], dims: d })
        }
        _ => Err(format!("{s}: not a topology (master-worker[:ROOT], independent, pairs, mesh:AxB, torus:AxBxC, chain:N, ring:N)")),
    }
}

/// Who each rank talks to, in world ranks, with how many messages (loops multiplied).
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub ranks: u32,
    /// Per rank: peer -> (messages sent to it, messages received from it).
    pub peers: Vec<BTreeMap<u32, (u64, u64)>>,
    /// Per rank: receives from any source.
    pub any: Vec<u64>,
    /// Per rank: collective calls.
    pub collectives: Vec<u64>,
    /// Communicators other than the world, as declared (id -> world ranks), first declaration.
    pub comms: BTreeMap<u32, Vec<u32>>,
}

impl Graph {
    pub fn from_traces(traces: &[Vec<Item>]) -> Graph {
        let n = traces.len();
        let mut g = Graph {
            ranks: n as u32,
            peers: vec![BTreeMap::new(); n],
            any: vec![0; n],
            collectives: vec![0; n],
            comms: BTreeMap::new(),
        };
        for (r, items) in traces.iter().enumerate() {
            let mut comms: HashMap<u32, Vec<u32>> = HashMap::new();
            walk(items, 1, &mut |a, m| {
                let world = |comm: u32, p: u32| -> u32 {
                    if comm == 0 {
                        p
                    } else {
                        comms.get(&comm).and_then(|v| v.get(p as usize)).copied().unwrap_or(p)
                    }
                };
                let send = |to: u32, comm: u32, g: &mut Graph| g.peers[r].entry(world(comm, to)).or_default().0 += m;
                match a {
                    TraceAction::CommDef { id, ranks } => {
                        comms.insert(*id, ranks.to_vec());
                        g.comms.entry(*id).or_insert_with(|| ranks.to_vec());
                    }
                    TraceAction::Send { to, comm, .. } | TraceAction::Isend { to, comm, .. } => send(*to, *comm, &mut g),
                    TraceAction::Recv { from, comm, .. } | TraceAction::Irecv { from, comm, .. } => match from {
                        Peer::Rank(p) => g.peers[r].entry(world(*comm, *p)).or_default().1 += m,
                        Peer::Any => g.any[r] += m,
                    },
                    TraceAction::Arecv { from, comm, .. } => g.peers[r].entry(world(*comm, *from)).or_default().1 += m,
                    TraceAction::Sendrecv { to, from, comm, .. } => {
                        send(*to, *comm, &mut g);
                        match from {
                            Peer::Rank(p) => g.peers[r].entry(world(*comm, *p)).or_default().1 += m,
                            Peer::Any => g.any[r] += m,
                        }
                    }
                    TraceAction::Compute { .. }
                    | TraceAction::Wait { .. }
                    | TraceAction::Waitall { .. }
                    | TraceAction::Test { .. }
                    | TraceAction::Cancel { .. } => {}
                    _ => g.collectives[r] += m,
                }
            });
        }
        g
    }

    fn has_p2p(&self) -> bool {
        self.peers.iter().any(|p| !p.is_empty()) || self.any.iter().any(|a| *a > 0)
    }

    fn neighbours(&self, r: u32) -> BTreeSet<u32> {
        self.peers[r as usize].keys().copied().collect()
    }
}

/// What detection found, and why.
#[derive(Debug, Clone)]
pub struct Detected {
    pub topology: Option<Topology>,
    pub evidence: Vec<String>,
}

/// The expected neighbours of rank `r` in a grid (world ranks; the rank itself for a periodic
/// dimension of one).
pub fn grid_neighbours(r: u32, dims: &[u32], periodic: &[bool]) -> BTreeSet<u32> {
    let d64: Vec<i64> = dims.iter().map(|d| *d as i64).collect();
    let c = cart_coords(r as i64, &d64);
    let mut out = BTreeSet::new();
    for k in 0..dims.len() {
        for step in [-1i64, 1] {
            let mut cc = c.clone();
            cc[k] += step;
            if cc[k] < 0 || cc[k] >= d64[k] {
                if !periodic[k] {
                    continue;
                }
                cc[k] = cc[k].rem_euclid(d64[k]);
            }
            out.insert(cart_rank(&cc, &d64) as u32);
        }
    }
    out
}

/// Does the graph fit this grid: every rank talks exactly to its grid neighbours?
pub fn fits_grid(g: &Graph, dims: &[u32], periodic: &[bool]) -> bool {
    (0..g.ranks).all(|r| g.any[r as usize] == 0 && g.neighbours(r) == grid_neighbours(r, dims, periodic))
}

/// Ordered factorisations of n into `k` factors, each at least 1.
fn factorisations(n: u32, k: usize) -> Vec<Vec<u32>> {
    if k == 1 {
        return vec![vec![n]];
    }
    let mut out = Vec::new();
    for d in 1..=n {
        if n % d == 0 {
            for mut rest in factorisations(n / d, k - 1) {
                rest.insert(0, d);
                out.push(rest);
            }
        }
    }
    out
}

/// Topology from the communication graph of a trace.
pub fn from_graph(g: &Graph) -> Detected {
    let n = g.ranks;
    let mut ev = Vec::new();
    if n == 1 {
        return Detected { topology: Some(Topology::Single), evidence: vec!["the trace has one rank".into()] };
    }
    if !g.has_p2p() {
        ev.push(format!("no point-to-point message in {n} ranks; {} collective calls", g.collectives.iter().sum::<u64>()));
        return Detected { topology: Some(Topology::Independent), evidence: ev };
    }
    // Master-worker: every other rank talks to one rank only, and it to them (or from any).
    for root in 0..n {
        let workers_ok = (0..n).filter(|r| *r != root).all(|r| {
            let nb = g.neighbours(r);
            g.any[r as usize] == 0 && nb.len() == 1 && nb.contains(&root)
        });
        let root_nb = g.neighbours(root);
        let root_ok = root_nb.iter().all(|p| *p != root) && (root_nb.len() as u32 == n - 1 || g.any[root as usize] > 0);
        // With two ranks a symmetric exchange is a chain, not a master and its worker.
        let asymmetric = n > 2 || {
            let w = 1 - root;
            let (s, rv) = g.peers[w as usize].get(&root).copied().unwrap_or((0, 0));
            let (rs, rr) = g.peers[root as usize].get(&w).copied().unwrap_or((0, 0));
            s == 0 || rv == 0 || g.any[root as usize] > 0 || (rs, rr) != (rv, s) || g.collectives[root as usize] != g.collectives[w as usize]
        };
        if workers_ok && root_ok && asymmetric {
            ev.push(format!(
                "ranks other than {root} talk only to rank {root}; rank {root} talks to {} of them{}",
                root_nb.len(),
                if g.any[root as usize] > 0 { format!(" and receives {} messages from any source", g.any[root as usize]) } else { String::new() }
            ));
            return Detected { topology: Some(Topology::MasterWorker { root }), evidence: ev };
        }
    }
    // Pairs: from 4 ranks on (two ranks are also a chain of two; the source tells them apart).
    if n >= 4 && static_fits(g, &Topology::Pairs) && (0..n).all(|r| !g.neighbours(r).is_empty()) {
        ev.push("every rank 2i talks only to rank 2i + 1 and back".into());
        return Detected { topology: Some(Topology::Pairs), evidence: ev };
    }
    // Grids: 1 to 3 dimensions, every factorisation, open or periodic per dimension.
    let mut fits: Vec<(Vec<u32>, Vec<bool>)> = Vec::new();
    for k in 1..=3usize {
        for dims in factorisations(n, k) {
            if k > 1 && dims.iter().filter(|d| **d == 1).count() > 0 && dims.last() != Some(&1) {
                // MPI_Dims_create puts ones last; other orders are the same grid renamed.
                continue;
            }
            for mask in 0..(1u32 << k) {
                let periodic: Vec<bool> = (0..k).map(|i| mask & (1 << i) != 0).collect();
                // A dimension of one that is not periodic adds nothing: only its lower-dimensional
                // form is kept.
                if dims.iter().zip(&periodic).any(|(d, p)| *d == 1 && !p) {
                    continue;
                }
                if fits_grid(g, &dims, &periodic) {
                    fits.push((dims.clone(), periodic));
                }
            }
        }
    }
    if fits.is_empty() {
        let deg: Vec<String> = (0..n).take(8).map(|r| format!("{r}->{:?}", g.neighbours(r))).collect();
        ev.push(format!(
            "not a master-worker star, and no 1D, 2D or 3D grid (open or periodic) of {n} ranks has these neighbours: {}{}",
            deg.join(" "),
            if n > 8 { " ..." } else { "" }
        ));
        return Detected { topology: None, evidence: ev };
    }
    // Prefer the balanced factorisation MPI_Dims_create would give, fewer dimensions, then open
    // dimensions (a periodic dimension of two has the same neighbours as an open one).
    fits.sort_by_key(|(d, p)| {
        let balanced = dims_create(n as i64, &vec![0; d.len()], d.len()).map(|b| b.iter().map(|x| *x as u32).collect::<Vec<_>>() == *d).unwrap_or(false);
        (!balanced, d.len(), p.iter().filter(|x| **x).count())
    });
    let (dims, periodic) = fits[0].clone();
    let t = Topology::Grid { dims, periodic };
    ev.push(format!("every rank talks exactly to its neighbours in a {t}"));
    if fits.len() > 1 {
        let others: Vec<String> = fits[1..].iter().take(4).map(|(d, p)| Topology::Grid { dims: d.clone(), periodic: p.clone() }.to_string()).collect();
        ev.push(format!("also consistent with: {} (the trace cannot tell them apart)", others.join(", ")));
    }
    Detected { topology: Some(t), evidence: ev }
}

/// Every grid (of `n` ranks) consistent with the graph: used to check a static hypothesis.
pub fn static_fits(g: &Graph, t: &Topology) -> bool {
    match t {
        Topology::Grid { dims, periodic } => dims.iter().product::<u32>() == g.ranks && fits_grid(g, dims, periodic),
        Topology::MasterWorker { root } => {
            *root < g.ranks && (0..g.ranks).filter(|r| r != root).all(|r| g.neighbours(r).iter().all(|p| p == root) && g.any[r as usize] == 0)
        }
        Topology::Independent => !g.has_p2p(),
        Topology::Single => g.ranks == 1,
        Topology::Pairs => g.ranks % 2 == 0 && (0..g.ranks).all(|r| g.any[r as usize] == 0 && g.neighbours(r).iter().all(|p| *p == r ^ 1)),
    }
}

/// Topology from the analysis, for `n` ranks with these parameter bindings.
pub fn from_analysis(model: &ProgramModel, bindings: &BTreeMap<String, f64>, n: u32) -> Detected {
    let mut ev = Vec::new();
    let env: HashMap<String, f64> = bindings.iter().map(|(k, v)| (k.clone(), *v)).chain([("size".to_string(), n as f64)]).collect();
    let at = |c: &crate::model::analysis::CommSite| format!("{}:{}", short(&c.file), c.line);
    if let Some(c) = model.comm.iter().find(|c| c.call == "MPI_Cart_create") {
        let ndims = c.arg_values.get(1).and_then(|e| e.as_ref()).and_then(|e| e.eval_map(&env).ok()).map(|x| x as usize);
        let Some(ndims) = ndims.filter(|k| (1..=3).contains(k)) else {
            ev.push(format!("{}: MPI_Cart_create with a number of dimensions that is not known or not 1 to 3", at(c)));
            return Detected { topology: None, evidence: ev };
        };
        let periods: Vec<bool> = match c.arg_lists.get(&3) {
            Some(list) if list.len() >= ndims => list.iter().take(ndims).map(|v| v.as_ref().and_then(|e| e.eval_map(&env).ok()).map(|x| x != 0.0)).collect::<Option<Vec<bool>>>().unwrap_or_default(),
            _ => Vec::new(),
        };
        if periods.len() != ndims {
            ev.push(format!("{}: MPI_Cart_create's periods are not constants", at(c)));
            return Detected { topology: None, evidence: ev };
        }
        let given: Vec<i64> = match c.arg_lists.get(&2) {
            Some(list) if list.len() >= ndims => list.iter().take(ndims).map(|v| v.as_ref().and_then(|e| e.eval_map(&env).ok()).map(|x| x as i64).unwrap_or(0)).collect(),
            _ => vec![0; ndims],
        };
        let Some(dims) = dims_create(n as i64, &given, ndims) else {
            ev.push(format!("{}: no {ndims}-dimensional grid of {n} ranks with the given dimensions", at(c)));
            return Detected { topology: None, evidence: ev };
        };
        let dims: Vec<u32> = dims.iter().map(|d| *d as u32).collect();
        let dc = model.comm.iter().find(|c| c.call == "MPI_Dims_create").map(|c| format!(", dimensions from MPI_Dims_create at {}", at(c))).unwrap_or_default();
        ev.push(format!("{}: MPI_Cart_create, {ndims} dimensions, periods {:?}{dc}", at(c), periods.iter().map(|p| *p as u8).collect::<Vec<_>>()));
        return Detected { topology: Some(Topology::Grid { dims, periodic: periods }), evidence: ev };
    }
    let p2p: Vec<&crate::model::analysis::CommSite> = model.comm.iter().filter(|c| super::ratio::is_p2p(&c.call)).collect();
    if p2p.is_empty() {
        ev.push("no point-to-point call in the source".into());
        return Detected { topology: Some(Topology::Independent), evidence: ev };
    }
    // Peer formulas: a constant 0 on one side and a loop variable or any source on the other is
    // a master and its workers; rank±1 is a chain (a ring when taken modulo size).
    let peer_text = |c: &crate::model::analysis::CommSite| c.peer_expr.as_ref().map(|e| e.to_string()).unwrap_or_else(|| c.peer.clone().unwrap_or_default());
    let to_zero = p2p.iter().filter(|c| c.peer_expr.as_ref().map(|e| e.to_string() == "0").unwrap_or(false)).count();
    let loopy = p2p.iter().filter(|c| {
        let t = peer_text(c);
        t.contains("MPI_ANY_SOURCE") || t == "-1" || c.peer_expr.as_ref().map(|e| e.vars().iter().all(|v| v != "rank" && v != "size") && !e.vars().is_empty()).unwrap_or(false)
    });
    let loopy: Vec<_> = loopy.collect();
    if to_zero > 0 && !loopy.is_empty() {
        ev.push(format!(
            "{} sends or receives with rank 0; {} talks to every worker in turn ({})",
            p2p.iter().filter(|c| c.peer_expr.as_ref().map(|e| e.to_string() == "0").unwrap_or(false)).map(|c| at(c)).collect::<Vec<_>>().join(", "),
            loopy.iter().map(|c| at(c)).collect::<Vec<_>>().join(", "),
            loopy.iter().map(|c| peer_text(c)).collect::<Vec<_>>().join(", ")
        ));
        return Detected { topology: Some(Topology::MasterWorker { root: 0 }), evidence: ev };
    }
    // Every peer formula, evaluated for each rank of a few ranks more than the trace's, names
    // rank - 1 or rank + 1: a chain, and a ring where some wraps around (`(rank + size - 1) %
    // size`). A peer outside the ranks is MPI_PROC_NULL (an open end).
    let m = n.max(6);
    let peer_at = |e: &crate::model::expr::Expr, r: u32| -> Option<f64> {
        let mut env = env.clone();
        env.insert("size".into(), m as f64);
        env.insert("rank".into(), r as f64);
        e.eval_map(&env).ok()
    };
    let paired = p2p.iter().all(|c| {
        let Some(e) = c.peer_expr.as_ref().filter(|e| e.mentions("rank")) else { return false };
        (0..m).all(|r| peer_at(e, r).is_some_and(|v| v == f64::from(r ^ 1) || v < 0.0 || v >= m as f64))
    });
    if paired {
        ev.push(format!("peers rank ^ 1 (pairs) at {}", p2p.iter().map(|c| at(c)).collect::<Vec<_>>().join(", ")));
        return Detected { topology: Some(Topology::Pairs), evidence: ev };
    }
    let mut wraps = false;
    let neighbourly = p2p.iter().all(|c| {
        let Some(e) = c.peer_expr.as_ref().filter(|e| e.mentions("rank")) else { return false };
        (0..m).all(|r| {
            let Some(v) = peer_at(e, r) else { return false };
            let (r, m) = (r as f64, m as f64);
            if (v - r).abs() == 1.0 || v < 0.0 || v >= m {
                return true;
            }
            let wrap = (r == m - 1.0 && v == 0.0) || (r == 0.0 && v == m - 1.0);
            wraps |= wrap;
            wrap
        })
    });
    if neighbourly {
        let ring = wraps;
        ev.push(format!("peers rank-1 and rank+1{} at {}", if ring { " modulo size" } else { "" }, p2p.iter().map(|c| at(c)).collect::<Vec<_>>().join(", ")));
        return Detected { topology: Some(Topology::Grid { dims: vec![n], periodic: vec![ring] }), evidence: ev };
    }
    ev.push(format!(
        "peers not recognised: {}",
        p2p.iter().take(6).map(|c| format!("{} {} {}", at(c), c.call, peer_text(c))).collect::<Vec<_>>().join("; ")
    ));
    Detected { topology: None, evidence: ev }
}

fn short(p: &str) -> String {
    std::path::Path::new(p).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| p.to_string())
}
