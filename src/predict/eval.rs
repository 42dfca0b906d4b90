//! Concrete evaluation of a program's scalar part, one rank at a time: the static path's
//! interpreter. It runs main on the IR with the run's real arguments (argv, getopt, sscanf,
//! strtol...), globals, structs, small arrays, pointers to scalars, user functions, MPI_Comm_rank
//! and friends, communicators (aliases, MPI_Comm_dup, MPI_Comm_split) and the values small
//! messages carry (a master's row counts), and emits the rank's compute bursts (block executions)
//! and MPI actions. Loops without communication are charged from the front end's count formulas
//! (bound to the interpreter's values) when they resolve and are long; otherwise they are
//! interpreted, long regular ones extrapolated from their last iterations. Values computed from
//! bulk data (arrays filled by computation, wall-clock time, random numbers) are unknown; they
//! stop the evaluation only where communication or control around communication needs them.
//!
//! Ranks run one after another; a value a rank receives from a rank that has not run yet is
//! taken from the previous pass: passes repeat (at most MAX_PASSES) until no rank missed one.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::rc::Rc;
use std::time::Instant;

use crate::frontend::analyze::{loop_shape, program_name, reserved_symbol, Step};
use crate::frontend::ir::{Base, CExpr, CType, Function, Stmt, Unit, VarDecl};
use crate::model::analysis::BlockKind;
use crate::model::trace::{Counts, Peer, Tag, TraceAction, COMM_WORLD};
use crate::mpi::cart::{cart_coords, cart_rank, dims_create};

use super::skeleton::{Program, Sink, Unresolved, ASSUMED_P};

/// The error a sample run ends with when its budget is spent.
const SAMPLE_DONE: &str = "\u{1}sample budget spent";
/// Passes at most; passes stop earlier once one adds no value that the ranks exchange (a
/// harness that reduces a flag per communicator it tries needs a pass per reduction).
pub const MAX_PASSES: usize = 32;
/// Elements a lazily grown array keeps; beyond them it is bulk data.
const SMALL_ARRAY: i64 = 1 << 16;
/// Scalars a message may carry as values.
const SMALL_MESSAGE: i64 = 4096;
/// Ids of MPI groups (local to a rank) start here, above every communicator's;
/// MPI_GROUP_EMPTY is the first.
const GROUP_BASE: u32 = 1 << 30;
const GROUP_EMPTY: u32 = GROUP_BASE;
/// Marks the parent of communicators made by MPI_Comm_create_group in the keys that name
/// communicators: apart from the parent's own sequence.
const CREATE_GROUP_BIT: u32 = 1 << 29;
/// OpenMPI's MPI_UNDEFINED.
const MPI_UNDEFINED: i64 = -32766;
/// MPI_COMM_SELF's id: every rank's own communicator of one (each rank declares it, with itself
/// as the member, before the first call that communicates on it).
const COMM_SELF: u32 = u32::MAX;
/// A loop without communication whose formula gives more executions than this is charged by
/// the formula; shorter ones are interpreted (their scalars then stay exact).
const INTERPRET_BELOW: f64 = 256.0;

/// Elements up to which qsort sorts by the program's comparator (each comparison a call).
const SORT_MAX: i64 = 4096;
/// Iterations a loop that stores into small arrays or structs may have left to be run to its
/// end rather than extrapolated.
const EXACT_BELOW: u64 = 4096;
/// Calls nested deeper than this stop the evaluation (recursion).
const MAX_CALL_DEPTH: usize = 200;
/// Lines of program output kept per rank.
const MAX_OUTPUT_LINES: usize = 1000;
/// A sample run (the program's own data, to measure how often data-dependent branches are
/// taken) stops after this many statements, and all of a prediction's sample runs together
/// after SAMPLE_TOTAL_STEPS: counted in statements, so that a prediction does not depend on
/// how busy the machine was (cut at 2 s of wall time, MPICH's dtpack sampled 421,841 statements
/// in one run and other counts in others, its prediction moving in the sixth digit). About
/// 2.5 s on the development VM for a loop over real arrays (5 us a statement).
const SAMPLE_STEPS: u64 = 500_000;
const SAMPLE_TOTAL_STEPS: u64 = 1_500_000;
/// Wall-time backstops for statements far slower than that (the step counts decide first).
const SAMPLE_S: f64 = 20.0;
const SAMPLE_TOTAL_S: f64 = 60.0;
/// Elements an array may grow to in a sample run (its bulk data are real there).
const SAMPLE_ARRAY: i64 = 1 << 22;
/// Evaluations of a branch a sample must see before its rate replaces the assumption.
const SAMPLE_MIN: u64 = 64;
/// A loop under the sampled one that holds none of its arms (a producer: NAS EP's vranlc
/// fills 131,072 random numbers before the branches read them) is cut short at an iteration's
/// end once it ran this many statements, so that the arms meet the data it did produce: what
/// it would have written after stays unknown, and the sample measures the arms on the elements
/// it made (NAS EP S spent the whole budget in the fill, its branch assumed taken half the
/// time where the run takes it 78.5%).
const SAMPLE_PRODUCER_STEPS: u64 = SAMPLE_STEPS * 2 / 5;
/// A sample run stops once an arm was seen this often (its rate known to about 0.4%); arms
/// seen fewer than SAMPLE_MIN times by then keep the assumption.
const SAMPLE_ENOUGH: u64 = 16384;
/// Prefix runs (a loop whose stores are needed but that is too long to interpret): at most
/// PREFIX_CAP iterations, ended at an iteration's end after PREFIX_STEPS statements (so that
/// the estimate does not depend on the machine's speed), failed at twice that or after
/// PREFIX_S seconds; PREFIX_TOTAL_S for all of one rank's evaluation; fewer than PREFIX_MIN
/// iterations is no sample.
const PREFIX_CAP: u64 = 8192;
const PREFIX_STEPS: u64 = 6_000_000;
const PREFIX_S: f64 = 10.0;
const PREFIX_TOTAL_S: f64 = 20.0;
const PREFIX_MIN: u64 = 256;
const PREFIX_FAIL: &str = "\u{1}prefix run failed";

/// A value of the program's scalar part.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    I(i64),
    F(f64),
    /// A string (literal or argv element) and an offset into it.
    S(Rc<str>, usize),
    /// A pointer: a cell and an element offset (arrays).
    P(usize, i64),
    /// Not known before running: why.
    U(Rc<str>),
    Comm(u32),
    /// An MPI datatype: bytes per element.
    Dt(u64),
    /// A derived MPI datatype: bytes per element, the buffer elements one spans, and whether
    /// those are all moved (dense: a contiguous type, moved value by value; else a message
    /// typed with it arrives unknown).
    Dv(u64, i64, bool),
    /// An identifier the interpreter has no value for (MPI_SUM, stdout...).
    Name(Rc<str>),
}

/// Whether two values are the same (unknowns by their shared reason first: cheaper than
/// comparing the text).
fn same_val(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::U(x), Val::U(y)) => Rc::ptr_eq(x, y) || x == y,
        _ => a == b,
    }
}

impl Val {
    fn unknown(why: impl AsRef<str>) -> Val {
        Val::U(Rc::from(why.as_ref()))
    }
    pub fn num(&self) -> Option<f64> {
        match self {
            Val::I(i) => Some(*i as f64),
            Val::F(f) => Some(*f),
            _ => None,
        }
    }
    fn int(&self) -> Option<i64> {
        match self {
            Val::I(i) => Some(*i),
            Val::F(f) if f.is_finite() => Some(*f as i64),
            _ => None,
        }
    }
    fn is_unknown(&self) -> bool {
        matches!(self, Val::U(_))
    }
    fn why(&self) -> String {
        match self {
            Val::U(w) => w.to_string(),
            Val::Name(n) => format!("{n} has no value here"),
            _ => "not a number".into(),
        }
    }
    fn truth(&self) -> Option<bool> {
        match self {
            Val::I(i) => Some(*i != 0),
            Val::F(f) => Some(*f != 0.0),
            Val::S(..) | Val::Comm(_) | Val::Dt(_) | Val::Dv(..) => Some(true),
            Val::P(..) => Some(true),
            _ => None,
        }
    }
    fn text(&self) -> Option<String> {
        match self {
            Val::S(s, off) => Some(s.get(*off..).unwrap_or("").to_string()),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
enum Cell {
    V(Val),
    /// Struct: fields by name, in order of first use or declaration.
    St(Vec<(String, usize)>),
    /// Array: elements grown on demand; `bulk` when it came from malloc or is big.
    Ar(Vec<usize>, bool),
}

enum Flow {
    Normal,
    Break,
    Continue,
    Return(Val),
}

/// Values exchanged between ranks through messages and collectives.
#[derive(Default)]
pub struct Mail {
    /// (comm, from, to) -> messages in send order: (tag, values or None for bulk data).
    p2p: FastMap<(u32, u32, u32), Vec<(i64, Option<Vec<Val>>)>>,
    /// Collective contributions: key -> comm rank -> values.
    coll: FastMap<String, Contribs>,
    /// Communicator ids: (parent, sequence, members) -> id.
    comm_ids: FastMap<(u32, u32, Vec<u32>), u32>,
    /// Intercommunicator ids by the call that made them and both groups.
    named_ids: FastMap<String, u32>,
    next_comm: u32,
    /// A value posted in this pass differs from the previous pass's (or is new): values
    /// taken from the previous pass may be stale, another pass is due.
    pub changed: bool,
}

impl Mail {
    /// Whether every member's contribution is what stood in for the members that ran later:
    /// the same values, or unknown where the stand-in was unknown (why aside). (Members that
    /// had run are checked too: stricter, and no list of who was missing to keep.)
    pub fn stand_ins_hold(&self, missed: &[(String, usize, Vec<Val>)]) -> bool {
        missed.iter().all(|(key, members, stand_in)| {
            let Some(e) = self.coll.get(key) else { return false };
            e.len() == *members
                && e.values().all(|v| {
                    v.len() == stand_in.len()
                        && v.iter().zip(stand_in).all(|(a, b)| matches!((a, b), (Val::U(_), Val::U(_))) || a == b)
                })
        })
    }

    /// Whether the receives that found their queues empty would get bulk data (no values, or
    /// values not known before running) from what the queues hold now: matched in order by
    /// tag as `recv_mail` does. Then the receives had what another pass would give them.
    pub fn bulk_only(&self, missed: &BTreeMap<(u32, u32, u32), Vec<i64>>) -> bool {
        missed.iter().all(|(key, tags)| {
            let Some(q) = self.p2p.get(key) else { return false };
            let mut used = vec![false; q.len()];
            tags.iter().all(|&tag| {
                let Some(k) = (0..q.len()).find(|&k| !used[k] && (tag < 0 || q[k].0 == tag)) else { return false };
                used[k] = true;
                q[k].1.as_ref().is_none_or(|v| v.iter().all(|x| matches!(x, Val::U(_))))
            })
        })
    }

    /// Values posted so far (messages and collective contributions): passes that do not raise
    /// it learn nothing new.
    pub fn posted(&self) -> usize {
        self.p2p.values().map(Vec::len).sum::<usize>()
            + self.coll.values().map(Contribs::len).sum::<usize>()
    }
}

/// One collective call's contributions by member: a slot per rank (a map's lookups, at every
/// member of every collective of a thousand ranks, were 6% of jacobi2d's evaluation).
#[derive(Default)]
pub struct Contribs {
    slots: Vec<Option<Vec<Val>>>,
    len: usize,
}

impl Contribs {
    fn get(&self, r: &u32) -> Option<&Vec<Val>> {
        self.slots.get(*r as usize).and_then(Option::as_ref)
    }

    fn insert(&mut self, r: u32, v: Vec<Val>) {
        let i = r as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        if self.slots[i].replace(v).is_none() {
            self.len += 1;
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The contributions in member order.
    fn values(&self) -> impl Iterator<Item = &Vec<Val>> {
        self.slots.iter().flatten()
    }

    /// Whether members 0..n, and only they, have contributed.
    fn complete(&self, n: usize) -> bool {
        self.len == n && self.slots.len() == n
    }
}

/// What every rank shares: the program, its index, the mail.
pub struct Shared<'p, 'a> {
    prog: &'p Program<'a>,
    funcs: FastMap<&'p str, &'p Function>,
    files: FastMap<*const Function, &'p str>,
    /// Functions whose bodies communicate (MPI or P2PDC), directly or through calls: the
    /// analysis knows this of the program's own functions, not of those from headers outside
    /// it (a test harness's collective wrappers).
    comm_funcs: FastSet<&'p str>,
    /// The program's functions that make communicators (MPI_Comm_split and the like), to a
    /// fixed point over the calls between them.
    comm_makers: FastSet<&'p str>,
    /// Loops (by statement address) that call a function of `comm_funcs`.
    loop_calls_comm: std::cell::RefCell<FastMap<usize, bool>>,
    /// Per block: the assumed-rate variables (`ASSUMED_P@arm`) its contributions' formulas
    /// mention, with the arm (collected once: formula charging asks at every execution).
    assumed_vars: std::cell::RefCell<FastMap<usize, Rc<Vec<(String, usize)>>>>,
    /// Per loop charged by formula (statement address): the names it writes outside its error
    /// arms (collected once: the loop is charged at every execution).
    loop_writes: std::cell::RefCell<FastMap<usize, Rc<HashSet<String>>>>,
    /// The world's members (0..size), one list shared by every rank's interpreter: a copy
    /// each was quadratic in the ranks (65,536 ranks copied 17 GB).
    worlds: std::cell::RefCell<FastMap<u32, Rc<Vec<u32>>>>,
    /// Per block and the values its formulas read: the executions they give each block under
    /// it, and their total (a loop charged by formula at every iteration of an outer one, on
    /// every rank, evaluates the same formulas with the same values).
    charges: std::cell::RefCell<FastMap<(usize, Vec<u64>), Rc<(Vec<(usize, f64)>, f64)>>>,
    /// Blocks by file, then (line, column, kind name).
    blocks: FastMap<String, FastMap<(u32, u32, &'static str), usize>>,
    block_memo: std::cell::RefCell<FastMap<(usize, usize, u32, u32, usize), Option<usize>>>,
    /// Per statement (address): the places it stores into other than plain names, and
    /// whether it calls rand() (loops ask at every execution, on every rank).
    lvalue_memo: std::cell::RefCell<FastMap<usize, Rc<Vec<&'p CExpr>>>>,
    rand_memo: std::cell::RefCell<FastMap<usize, bool>>,
    consts: FastMap<&'p str, &'p CExpr>,
    structs: HashMap<&'p str, Vec<String>>,
    /// Struct name -> field -> declared type.
    field_types: HashMap<&'p str, HashMap<&'p str, &'p CType>>,
    typedefs: HashMap<&'p str, &'p CType>,
    globals: Vec<(&'p str, &'p VarDecl)>,
    pub args: Vec<String>,
    pub defines: BTreeMap<String, f64>,
    pub text_defines: BTreeMap<String, String>,
    pub mail: std::cell::RefCell<Mail>,
    pub deadline: Instant,
    pub budget_s: f64,
    /// Rates of data-dependent branch arms measured by sample runs: arm block -> rate.
    rates: std::cell::RefCell<HashMap<usize, SampledRate>>,
    /// Loops a sample run started from (each is sampled once, by the first rank to reach it).
    sampled: std::cell::RefCell<HashSet<usize>>,
    /// Seconds spent in sample runs so far, and statements.
    sample_spent: std::cell::Cell<f64>,
    sample_steps: std::cell::Cell<u64>,
    /// Loops (by block) to run on a prefix of their iterations instead of leaving what they
    /// store unknown: chosen after an evaluation that needed such values failed.
    pub prefix_loops: std::collections::BTreeSet<usize>,
    /// Loops whose stores into arrays were left unknown in this evaluation (charged by
    /// formula or extrapolated): candidates for prefix runs.
    pub prefix_wanted: std::cell::RefCell<std::collections::BTreeSet<usize>>,
    /// Prefix runs that failed (a value not known, the budget): not tried again.
    prefix_failed: std::cell::RefCell<HashSet<usize>>,
    /// Branch arms that only report an error (rate 0) and the other arm of such a branch
    /// (rate 1), by block: the rate of a data-dependent arm no sample run measured.
    error_arms: HashMap<usize, f64>,
    /// Rates of data-dependent arms fitted to a traced run at another rank count (block ->
    /// rate): they come before any other (see `predict::session::check_at_k`).
    pub traced_rates: HashMap<usize, f64>,
    /// Iterations per entry of loops from a traced run at another rank count (loop block ->
    /// trips): a loop whose condition depends on data runs that many times (a convergence
    /// loop's count, kept when the ranks change).
    pub traced_trips: HashMap<usize, f64>,
}

/// How often a branch arm was taken in a sample run.
#[derive(Clone, Debug)]
struct SampledRate {
    rate: f64,
    seen: u64,
    /// The loop the sample ran (file:line) and the rank that ran it.
    from: String,
}

/// A prefix run's state: the loop it runs (statement address, call depth), how many
/// iterations it may run, the arrays the loop stores into and when each cell was stored.
#[derive(Clone, Debug)]
struct Prefix {
    stmt: usize,
    depth: usize,
    cap: u64,
    /// Iterations run when the cap or the soft budget ended the loop (None: it ended itself).
    stopped: Option<u64>,
    /// Iterations finished so far.
    iter: u64,
    /// Cells stored into: the first iteration that stored, and how many stores.
    writes: CellMap<(u64, u64)>,
    soft_step: u64,
    until_step: u64,
    until: Instant,
}

/// How scalar `name` moved over the snapshots (oldest first): its last step and the constant
/// growth of its steps (0 for a constant step), or None when the steps follow no such rule.
fn scalar_trend(series: &[&[(String, Val)]], name: &str) -> Option<(f64, f64)> {
    let xs: Vec<f64> = series
        .iter()
        .map(|s| s.iter().find(|(m, _)| m == name).and_then(|(_, v)| v.num()))
        .collect::<Option<Vec<f64>>>()?;
    if xs.len() < 2 {
        return None;
    }
    let d: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
    let last = *d.last().expect("a step");
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()));
    if d.iter().all(|x| close(*x, last)) {
        return Some((last, 0.0));
    }
    let dd: Vec<f64> = d.windows(2).map(|w| w[1] - w[0]).collect();
    let g = *dd.last().expect("two steps");
    if dd.len() >= 2 && dd.iter().all(|x| close(*x, g)) {
        return Some((last, g));
    }
    None
}

/// The increments of integer elements (index, old, new) scaled by `scale` and rounded so that
/// their total is the rounded scaled total (largest remainders get the units left over).
fn scaled_counts(changed: &[(usize, usize, Val, Val)], scale: f64) -> HashMap<usize, i64> {
    let mut parts: Vec<(usize, i64, f64)> = changed
        .iter()
        .filter_map(|(i, _, a, b)| match (a, b) {
            (Val::I(a), Val::I(b)) => {
                let x = (b - a) as f64 * scale;
                Some((*i, x.floor() as i64, x - x.floor()))
            }
            _ => None,
        })
        .collect();
    let total: f64 = changed
        .iter()
        .filter_map(|(_, _, a, b)| match (a, b) {
            (Val::I(a), Val::I(b)) => Some((b - a) as f64),
            _ => None,
        })
        .sum::<f64>()
        * scale;
    let floors: i64 = parts.iter().map(|p| p.1).sum();
    let left = (total.round() as i64 - floors).max(0) as usize;
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&x, &y| parts[y].2.total_cmp(&parts[x].2).then(x.cmp(&y)));
    for &o in order.iter().take(left) {
        parts[o].1 += 1;
    }
    parts.into_iter().map(|(i, v, _)| (i, v)).collect()
}

/// Hashes heap indices with one multiplication per word (the standard library's SipHash
/// took a fifth of the evaluation's time on programs with large arrays).
/// Names to cells, blocks by place: hashed as cells are.
use crate::model::hash::{FastMap, FastSet};
type CellMap<V> = FastMap<usize, V>;
type CellSet = FastSet<usize>;

/// A map from cells that can log its changes and undo them (a prefix run's changes to the
/// cells' types; copying the maps of a program with large arrays cost more than the run).
#[derive(Clone, Debug)]
struct Undoable<V: Clone> {
    map: CellMap<V>,
    log: Option<Vec<(usize, Option<V>)>>,
}

impl<V: Clone> Default for Undoable<V> {
    fn default() -> Self {
        Undoable {
            map: CellMap::default(),
            log: None,
        }
    }
}

impl<V: Clone> std::ops::Deref for Undoable<V> {
    type Target = CellMap<V>;
    fn deref(&self) -> &CellMap<V> {
        &self.map
    }
}

impl<V: Clone> Undoable<V> {
    fn insert(&mut self, k: usize, v: V) {
        let old = self.map.insert(k, v);
        if let Some(l) = &mut self.log {
            l.push((k, old));
        }
    }
    /// Inserts unless the key is there.
    fn insert_absent(&mut self, k: usize, v: V) {
        if !self.map.contains_key(&k) {
            self.insert(k, v);
        }
    }
    fn remove(&mut self, k: &usize) {
        if let Some(old) = self.map.remove(k) {
            if let Some(l) = &mut self.log {
                l.push((*k, Some(old)));
            }
        }
    }
    fn begin(&mut self) {
        self.log = Some(Vec::new());
    }
    /// Undoes every change since `begin`.
    fn undo(&mut self) {
        for (k, old) in self.log.take().unwrap_or_default().into_iter().rev() {
            match old {
                Some(v) => self.map.insert(k, v),
                None => self.map.remove(&k),
            };
        }
    }
    /// Keeps the changes since `begin`.
    fn commit(&mut self) {
        self.log = None;
    }
}

type Memory<'p> = (
    Vec<Cell>,
    Undoable<()>,
    Undoable<Val>,
    Undoable<(f64, i64)>,
    Undoable<bool>,
    Undoable<&'p str>,
);

/// The undo log of a prefix run: the heap's length when it started and the first old content
/// of every cell below it that the run changed.
#[derive(Clone, Debug, Default)]
struct Journal {
    len: usize,
    old: CellMap<Cell>,
}

/// A sample run's state: its budget and what it saw (arm block -> (taken, evaluations)).
#[derive(Clone, Debug)]
struct Sample {
    until_step: u64,
    until: Instant,
    seen: CellMap<(u64, u64)>,
    /// The arms to measure (data-dependent ones under the loop).
    arms: std::collections::BTreeSet<usize>,
    enough: bool,
    /// Meetings with its arms on unknown data.
    unknown: u64,
    /// Whether a loop (by block) holds any of the arms, itself or in what it calls.
    holds_arms: CellMap<bool>,
    /// The outermost producer loop while it runs.
    producer: Option<Producer>,
}

/// A producer loop of a sample run (SAMPLE_PRODUCER_STEPS): the step it began at, whether it
/// was cut short, and the cells stored into since it began.
#[derive(Clone, Debug)]
struct Producer {
    from_step: u64,
    cut: bool,
    written: FastSet<usize>,
}

impl<'p, 'a> Shared<'p, 'a> {
    /// The members of a world of `size` ranks.
    fn world(&self, size: u32) -> Rc<Vec<u32>> {
        self.worlds.borrow_mut().entry(size).or_insert_with(|| Rc::new((0..size).collect())).clone()
    }

    pub fn new(
        prog: &'p Program<'a>,
        units: &'p [Unit],
        args: Vec<String>,
        defines: BTreeMap<String, f64>,
        text_defines: BTreeMap<String, String>,
        budget_s: f64,
    ) -> Shared<'p, 'a> {
        let mut s = Shared {
            prog,
            funcs: FastMap::default(),
            files: FastMap::default(),
            comm_funcs: FastSet::default(),
            comm_makers: FastSet::default(),
            loop_calls_comm: Default::default(),
            assumed_vars: Default::default(),
            loop_writes: Default::default(),
            worlds: Default::default(),
            charges: Default::default(),
            blocks: FastMap::default(),
            block_memo: Default::default(),
            lvalue_memo: Default::default(),
            rand_memo: Default::default(),
            consts: FastMap::default(),
            structs: HashMap::new(),
            field_types: HashMap::new(),
            typedefs: HashMap::new(),
            globals: Vec::new(),
            args,
            defines,
            text_defines,
            mail: Default::default(),
            deadline: Instant::now() + std::time::Duration::from_secs_f64(budget_s),
            budget_s,
            rates: Default::default(),
            sampled: Default::default(),
            sample_spent: Default::default(),
            sample_steps: Default::default(),
            prefix_loops: Default::default(),
            prefix_wanted: Default::default(),
            prefix_failed: Default::default(),
            error_arms: HashMap::new(),
            traced_rates: HashMap::new(),
            traced_trips: HashMap::new(),
        };
        s.mail.borrow_mut().next_comm = 1;
        for (i, b) in prog.model.blocks.iter().enumerate() {
            let key = b.id.split('#').next().unwrap_or(&b.id).to_string();
            let mut parts = key.rsplitn(4, ':');
            let (Some(_), Some(col), Some(line), Some(file)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let (Ok(line), Ok(col)) = (line.parse::<u32>(), col.parse::<u32>()) else {
                continue;
            };
            s.blocks
                .entry(file.to_string())
                .or_default()
                .entry((line, col, b.kind.name()))
                .or_insert(i);
        }
        for u in units {
            for f in &u.functions {
                s.funcs.insert(f.name.as_str(), f);
                s.files.insert(f as *const Function, u.file.as_str());
            }
            for (n, e, _) in &u.defines {
                s.consts.entry(n.as_str()).or_insert(e);
            }
            let mut next = 0i128;
            let _ = &mut next;
            for (n, ty) in &u.typedefs {
                s.typedefs.insert(n.as_str(), ty);
            }
            for (n, fields) in &u.structs {
                s.structs
                    .insert(n.as_str(), fields.iter().map(|(f, _)| f.clone()).collect());
                s.field_types.insert(
                    n.as_str(),
                    fields.iter().map(|(f, t)| (f.as_str(), t)).collect(),
                );
            }
            for g in &u.globals {
                s.globals.push((u.file.as_str(), g));
            }
        }
        // Functions that communicate, and that make communicators, through their calls.
        let callees: FastMap<&str, Vec<&str>> = s
            .funcs
            .iter()
            .map(|(n, f)| {
                let mut out = Vec::new();
                call_names(&f.body, &mut out);
                (*n, out)
            })
            .collect();
        s.comm_funcs = calling(&callees, emits_actions);
        s.comm_makers = calling(&callees, crate::frontend::mpi::makes_comm);
        s.structs.entry("option").or_insert_with(|| {
            ["name", "has_arg", "flag", "val"]
                .iter()
                .map(|x| x.to_string())
                .collect()
        });
        for u in units {
            for f in &u.functions {
                s.find_error_arms(&u.file, &f.body);
            }
        }
        s
    }

    /// Records the error-report arms of every `if` under `st` (see `error_arms`).
    fn find_error_arms(&mut self, file: &str, st: &Stmt) {
        if let Stmt::If { then, otherwise, .. } = st {
            let arm = |s: &Stmt| self.block(file, s.span().line_start, s.span().col, BlockKind::Branch);
            let (t, e) = (arm(then), otherwise.as_deref().and_then(arm));
            // An `else if` is a test of its own (its arms are seen below): always reached when
            // the first arm reports an error.
            let else_if = matches!(otherwise.as_deref(), Some(Stmt::If { .. }));
            let (te, ee) = (is_error_path(then), !else_if && otherwise.as_deref().is_some_and(is_error_path));
            if te != ee {
                for (b, err) in [(t, te), (e, ee)] {
                    if let Some(b) = b {
                        self.error_arms.insert(b, if err { 0.0 } else { 1.0 });
                    }
                }
            }
        }
        match st {
            Stmt::Compound(v, _) => v.iter().for_each(|c| self.find_error_arms(file, c)),
            Stmt::Case { body, .. } => body.iter().for_each(|c| self.find_error_arms(file, c)),
            Stmt::If { then, otherwise, .. } => {
                self.find_error_arms(file, then);
                if let Some(o) = otherwise {
                    self.find_error_arms(file, o);
                }
            }
            Stmt::For { body, .. } | Stmt::While { body, .. } | Stmt::DoWhile { body, .. } | Stmt::Switch { body, .. } => self.find_error_arms(file, body),
            _ => {}
        }
    }

    /// Forgets the branch rates sample runs measured: a pass that read values other ranks
    /// posted in the previous one (or stood in for them) sampled its loops on data a later
    /// pass corrects (MPICH's gather2 at 8 ranks: a gathered buffer filled with the root's own
    /// part took every check for a mismatch).
    pub fn forget_samples(&self) {
        self.rates.borrow_mut().clear();
        self.sampled.borrow_mut().clear();
        self.sample_spent.set(0.0);
        self.sample_steps.set(0);
    }

    /// Whether statement `s` makes a communicator, itself or through the program's functions:
    /// its iterations are never folded (a folded iteration contributes nothing to the
    /// members' splits, which then stand in for it: MPICH's cmsplit2 at 5 ranks put a rank that
    /// passed MPI_UNDEFINED into every communicator).
    fn makes_comms(&self, s: &Stmt) -> bool {
        let mut names = Vec::new();
        call_names(s, &mut names);
        names.iter().any(|n| crate::frontend::mpi::makes_comm(n) || self.comm_makers.contains(n))
    }

    /// Whether loop `s` calls a function that communicates (see `comm_funcs`).
    fn calls_comm(&self, s: &Stmt) -> bool {
        let key = s as *const Stmt as usize;
        if let Some(&b) = self.loop_calls_comm.borrow().get(&key) {
            return b;
        }
        let mut names = Vec::new();
        call_names(s, &mut names);
        let b = names.iter().any(|n| self.comm_funcs.contains(n) || emits_actions(n));
        self.loop_calls_comm.borrow_mut().insert(key, b);
        b
    }

    fn block(&self, file: &str, line: u32, col: u32, kind: BlockKind) -> Option<usize> {
        // Memoised by the file name's address (the program's, fixed for the evaluation).
        let key = (file.as_ptr() as usize, file.len(), line, col, kind.name().as_ptr() as usize);
        if let Some(b) = self.block_memo.borrow().get(&key) {
            return *b;
        }
        let b = self
            .blocks
            .get(file)
            .and_then(|m| m.get(&(line, col, kind.name())))
            .copied();
        self.block_memo.borrow_mut().insert(key, b);
        b
    }
}

/// Enumerator values of the units, in order (explicit values and the running count).
pub fn enum_values(units: &[Unit]) -> HashMap<String, CExpr> {
    let mut out = HashMap::new();
    for u in units {
        out.extend(crate::frontend::ir::enumerators(u));
    }
    out
}

/// Records what one iteration of a loop with communication emits, to fold alike iterations.
#[derive(Clone, PartialEq, Debug)]
enum Rec {
    Compute(Vec<(usize, f64)>),
    Action(TraceAction),
    Begin(u64),
    End,
}

struct Recorder {
    recs: Vec<Rec>,
}

impl Sink for Recorder {
    fn compute(&mut self, execs: &[(usize, f64)]) -> Result<(), Unresolved> {
        self.recs.push(Rec::Compute(execs.to_vec()));
        Ok(())
    }
    fn action(&mut self, a: TraceAction) -> Result<(), Unresolved> {
        self.recs.push(Rec::Action(a));
        Ok(())
    }
    fn begin_loop(&mut self, k: u64) -> Result<(), Unresolved> {
        self.recs.push(Rec::Begin(k));
        Ok(())
    }
    fn end_loop(&mut self) -> Result<(), Unresolved> {
        self.recs.push(Rec::End);
        Ok(())
    }
}

fn replay(recs: &[Rec], sink: &mut dyn Sink) -> Result<(), Unresolved> {
    for r in recs {
        match r {
            Rec::Compute(e) => sink.compute(e)?,
            Rec::Action(a) => sink.action(a.clone())?,
            Rec::Begin(k) => sink.begin_loop(*k)?,
            Rec::End => sink.end_loop()?,
        }
    }
    Ok(())
}

/// The local names of the current call: each name's declarations, innermost last, with the
/// block that made them, so that a lookup hashes the name once however deep the blocks nest.
#[derive(Clone, Default)]
struct Locals {
    names: FastMap<Rc<str>, Vec<(u64, usize)>>,
    /// Open blocks, innermost last: a serial number and what they declared (name, cell).
    blocks: Vec<(u64, Vec<(Rc<str>, usize)>)>,
    next: u64,
    /// The serial of the current call's first block: older declarations are its callers'.
    base: u64,
}

impl Locals {
    fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    fn push(&mut self) {
        self.blocks.push((self.next, Vec::new()));
        self.next += 1;
    }

    /// Closes the innermost block: what it declared.
    fn pop(&mut self) -> Option<Vec<(Rc<str>, usize)>> {
        let (_, decls) = self.blocks.pop()?;
        for (n, _) in decls.iter().rev() {
            if let Some(v) = self.names.get_mut(&**n) {
                v.pop();
            }
        }
        Some(decls)
    }

    fn get(&self, name: &str) -> Option<usize> {
        let (serial, c) = *self.names.get(name)?.last()?;
        (serial >= self.base).then_some(c)
    }

    /// Declares `name` in the innermost block (again in the same block: the new cell);
    /// false when no block is open.
    fn declare(&mut self, name: &str, c: usize) -> bool {
        let Some((serial, decls)) = self.blocks.last_mut() else { return false };
        let key = match self.names.get_key_value(name) {
            Some((k, v)) if v.last().is_some_and(|(s, _)| s == serial) => {
                let k = k.clone();
                if let Some(d) = decls.iter_mut().find(|(n, _)| **n == *name) {
                    d.1 = c;
                }
                if let Some(last) = self.names.get_mut(&*k).and_then(|v| v.last_mut()) {
                    last.1 = c;
                }
                return true;
            }
            Some((k, _)) => k.clone(),
            None => Rc::from(name),
        };
        decls.push((key.clone(), c));
        self.names.entry(key).or_default().push((*serial, c));
        true
    }

    /// A call begins: its blocks hide its callers'. What `leave` needs to restore them.
    fn enter(&mut self) -> (usize, u64) {
        let saved = (self.blocks.len(), self.base);
        self.push();
        self.base = self.next - 1;
        saved
    }

    /// The call ends: its blocks close (their cells are not reused).
    fn leave(&mut self, (len, base): (usize, u64)) {
        while self.blocks.len() > len {
            self.pop();
        }
        self.base = base;
    }
}

/// One rank's interpreter.
#[derive(Clone)]
pub struct Interp<'s, 'p, 'a> {
    sh: &'s Shared<'p, 'a>,
    rank: u32,
    size: u32,
    heap: Vec<Cell>,
    globals: FastMap<String, usize>,
    /// Local names (blocks of the current call and its callers).
    scopes: Locals,
    file: &'p str,
    line: u32,
    pending: Vec<(usize, f64)>,
    weight: f64,
    pub assumed_p: f64,
    pub assumed: Vec<String>,
    /// Lines the program prints (printf), as evaluated.
    pub output: Vec<String>,
    partial_line: String,
    steps: u64,
    /// A value from a rank that has not run yet in this pass was needed.
    pub missed: bool,
    /// 0 before MPI_Init, 1 after it, 2 after MPI_Finalize (MPI_Initialized, MPI_Finalized).
    mpi_state: u8,
    /// Loops being iterated around the statement evaluated.
    iterating: u32,
    /// Receives that found no message on their queue: (comm, from, to) -> their tags, in
    /// order. When the sender runs later in the pass and what it posts there is bulk data (no
    /// values), the receive had what another pass would give it (`Mail::bulk_only`).
    pub missed_recvs: BTreeMap<(u32, u32, u32), Vec<i64>>,
    /// Collectives where this rank's own contribution stood in for members that ran later:
    /// (key, members, the stand-in). Another pass changes nothing when every member's own is
    /// alike (`Mail::stand_ins_hold`).
    pub missed_colls: Vec<(String, usize, Vec<Val>)>,
    /// Communicators and groups: id -> members (world ranks, in their order). Groups are this
    /// rank's own (ids from GROUP_BASE); an intercommunicator's members are its local group.
    comms: FastMap<u32, Rc<Vec<u32>>>,
    /// Arrays declared with their dimensions: cell -> (dimensions, element bytes), for sizeof.
    decl_dims: CellMap<(Vec<i64>, i64)>,
    /// Scalar cells declared with an unsigned 64-bit type (uint64_t, unsigned long, size_t):
    /// `>>` on them shifts in zeros, as C does.
    unsigned64: CellMap<()>,
    /// Scalar cells declared with an integer type narrower than 64 bits (int, unsigned,
    /// int32_t, short, char): a store keeps the low bits, as C's conversion does
    /// (`unsigned x = x * 1664525u + ...` wraps at 2^32).
    narrow: CellMap<CType>,
    /// Graph topologies: communicator -> (MPI_GRAPH or MPI_DIST_GRAPH, this rank's in- and
    /// out-neighbours (ranks of the communicator), weighted); a graph's whole `index` and
    /// `edges` under MPI_GRAPH.
    topo: FastMap<u32, Topo>,
    /// Intercommunicators: id -> the remote group (world ranks).
    remote: FastMap<u32, Vec<u32>>,
    next_group: u32,
    comm_seq: FastMap<u32, u32>,
    /// The constructor being run over a parent of several ranks, whose `ctor` action goes
    /// before the communicator it makes (or on its own when it makes none).
    ctor_pending: Option<crate::model::trace::CtorKind>,
    coll_seq: FastMap<(String, u32), u32>,
    consumed: FastMap<(u32, u32, u32), Vec<bool>>,
    reqs: Vec<(usize, u64)>,
    cart_dims: Vec<i64>,
    cart_periods: Vec<bool>,
    /// The memory this rank exposes in RMA windows (arrays): other ranks write it, and the
    /// evaluation does not follow one-sided operations.
    windows: Vec<usize>,
    next_char: usize,
    depth: usize,
    enums: Rc<HashMap<String, CExpr>>,
    /// Inside a loop that repeats one recorded iteration: no value is carried.
    pub strict_comm: bool,
    debug: bool,
    maybe_array: Undoable<()>,
    /// Arrays whose elements not yet stored read as this value (zero: the rest of an
    /// initialiser list, objects of static storage).
    fill: Undoable<Val>,
    /// Arrays whose elements are not known but whose sum is: (the sum, the elements it is
    /// over). A histogram zeroed by a loop and incremented at places known only at run time
    /// (a counting sort's `count[key[i]]++`) keeps its total, and a loop up to one of its
    /// entries runs the mean (`trip@B`).
    totals: Undoable<(f64, i64)>,
    /// Cells declared with an arithmetic type (for arrays and pointers: of their elements):
    /// true for integers. A store converts to it, as C's assignment does.
    num_ty: Undoable<bool>,
    /// Arrays made wholly unknown by a store at an unknown place, not stored into since: a
    /// loop storing at unknown places poisons them once, not once per iteration.
    poisoned: CellSet,
    /// Cells declared as a struct, or as pointers to or arrays of one: the struct's name (its
    /// fields' types type the cells made for them).
    st_ty: Undoable<&'p str>,
    /// Static locals: (file, declaration offset) -> their one cell, kept across calls.
    statics: HashMap<(&'p str, u32), usize>,
    /// The calloc/memset being evaluated zeroes floating-point elements.
    zero_float: bool,
    static_cells: CellSet,
    free: Vec<usize>,
    /// The C library's rand()/random() state (seeded 1, as a process starts); None once a loop
    /// that calls it was charged without running it (the sequence is then not known).
    rng: Option<GlibcRandom>,
    /// Set in a sample run (a copy of the interpreter that runs a loop on real bulk data).
    sample: Option<Box<Sample>>,
    /// Set in a prefix run (a copy that runs the first iterations of one loop exactly).
    prefix: Option<Box<Prefix>>,
    /// Seconds this rank's evaluation spent in prefix runs.
    prefix_spent: f64,
    /// Open during a prefix run: the heap's old content, so that the run can be undone.
    journal: Option<Box<Journal>>,
    /// A data-dependent branch was weighted by the assumed probability (no sampled rate).
    pub guessed: bool,
    /// Data-dependent arms charged at the assumed rate, nothing having measured theirs
    /// (block -> rate).
    pub assumed_arms: BTreeMap<usize, f64>,
}

type R<T> = Result<T, Box<Unresolved>>;

/// glibc's random()/rand() (the additive feedback generator of TYPE_3: r[i] = r[i-31] +
/// r[i-3] over 32-bit words, seeded by a Lehmer generator, the first 310 outputs dropped):
/// the sequence a program sees on this machine's C library, so that branches and colours
/// drawn from it are known before running.
#[derive(Clone, Debug)]
pub struct GlibcRandom {
    r: [u32; 34],
    i: usize,
}

impl GlibcRandom {
    pub fn new(seed: u32) -> Self {
        let mut r = [0u32; 34];
        r[0] = if seed == 0 { 1 } else { seed };
        for i in 1..31 {
            // 16807 * r[i-1] % 2147483647 by Schrage's method, on the signed word.
            let w = r[i - 1] as i32 as i64;
            let (hi, lo) = (w / 127773, w % 127773);
            let mut word = 16807 * lo - 2836 * hi;
            if word < 0 {
                word += 2147483647;
            }
            r[i] = word as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        let mut g = GlibcRandom { r, i: 34 };
        for _ in 0..310 {
            g.next_word();
        }
        g
    }

    fn next_word(&mut self) -> u32 {
        let v = self.r[(self.i + 34 - 31) % 34].wrapping_add(self.r[(self.i + 34 - 3) % 34]);
        self.r[self.i % 34] = v;
        self.i += 1;
        v
    }

    /// The next value of rand(): 0 ..= RAND_MAX (2^31 - 1).
    pub fn next(&mut self) -> i64 {
        (self.next_word() >> 1) as i64
    }
}

impl<'s, 'p, 'a> Interp<'s, 'p, 'a> {
    pub fn new(
        sh: &'s Shared<'p, 'a>,
        rank: u32,
        size: u32,
        assumed_p: f64,
        enums: Rc<HashMap<String, CExpr>>,
    ) -> Self {
        let mut comms = FastMap::default();
        comms.insert(COMM_WORLD, sh.world(size));
        comms.insert(GROUP_EMPTY, Rc::new(Vec::new()));
        Interp {
            sh,
            rank,
            size,
            heap: Vec::new(),
            globals: FastMap::default(),
            scopes: Locals::default(),
            file: "",
            line: 0,
            pending: Vec::new(),
            weight: 1.0,
            assumed_p,
            assumed: Vec::new(),
            output: Vec::new(),
            partial_line: String::new(),
            steps: 0,
            missed: false,
            mpi_state: 0,
            comms,
            remote: FastMap::default(),
            topo: FastMap::default(),
            decl_dims: CellMap::default(),
            unsigned64: CellMap::default(),
            narrow: CellMap::default(),
            next_group: GROUP_BASE + 1,
            comm_seq: FastMap::default(),
            ctor_pending: None,
            coll_seq: FastMap::default(),
            consumed: FastMap::default(),
            missed_recvs: BTreeMap::new(),
            iterating: 0,
            missed_colls: Vec::new(),
            reqs: Vec::new(),
            cart_dims: Vec::new(),
            cart_periods: Vec::new(),
            windows: Vec::new(),
            next_char: 0,
            depth: 0,
            enums,
            strict_comm: false,
            debug: std::env::var_os("MPICAST_EVAL_DEBUG").is_some_and(|v| v != "sample"),
            maybe_array: Default::default(),
            fill: Default::default(),
            totals: Default::default(),
            num_ty: Default::default(),
            poisoned: CellSet::default(),
            st_ty: Default::default(),
            free: Vec::new(),
            rng: Some(GlibcRandom::new(1)),
            sample: None,
            prefix: None,
            prefix_spent: 0.0,
            journal: None,
            guessed: false,
            assumed_arms: BTreeMap::new(),
            statics: HashMap::new(),
            zero_float: false,
            static_cells: CellSet::default(),
        }
    }

    /// A loop that was charged or folded without running every iteration: when it calls
    /// rand(), the generator's state afterwards is not known.
    fn rng_skipped(&mut self, body: &'p Stmt) {
        let key = body as *const Stmt as usize;
        let known = self.sh.rand_memo.borrow().get(&key).copied();
        let calls = known.unwrap_or_else(|| {
            let mut calls = false;
            statement_exprs(body, &mut |e| calls |= calls_rand(e));
            self.sh.rand_memo.borrow_mut().insert(key, calls);
            calls
        });
        if calls {
            self.rng = None;
        }
    }

    fn err(&self, what: impl Into<String>) -> Box<Unresolved> {
        Box::new(Unresolved {
            file: self.file.to_string(),
            line: self.line,
            what: what.into(),
        })
    }

    /// Statements evaluated so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// In a sample or prefix run every loop is interpreted (no formula, no extrapolation) on
    /// arrays up to SAMPLE_ARRAY elements.
    fn exact(&self) -> bool {
        self.sample.is_some() || self.prefix.is_some()
    }

    fn tick(&mut self) -> R<()> {
        self.steps += 1;
        if let Some(sm) = &self.sample {
            if sm.enough
                || self.steps >= sm.until_step
                || (self.steps % 4096 == 0 && Instant::now() > sm.until)
            {
                return Err(self.err(SAMPLE_DONE));
            }
        }
        if let Some(px) = &self.prefix {
            if self.steps >= px.until_step || (self.steps % 4096 == 0 && Instant::now() > px.until)
            {
                return Err(self.err(PREFIX_FAIL));
            }
        }
        if self.steps % 4096 == 0 && Instant::now() > self.sh.deadline {
            return Err(self.err(format!(
                "evaluation stopped after {} s (the time budget) at rank {}: a loop the interpreter could neither count nor extrapolate",
                self.sh.budget_s, self.rank
            )));
        }
        Ok(())
    }

    // ---- Memory -------------------------------------------------------------------------

    /// The heap and the maps over its cells (a prefix run copies everything else and undoes
    /// its changes to these).
    fn take_memory(&mut self) -> Memory<'p> {
        (
            std::mem::take(&mut self.heap),
            std::mem::take(&mut self.maybe_array),
            std::mem::take(&mut self.fill),
            std::mem::take(&mut self.totals),
            std::mem::take(&mut self.num_ty),
            std::mem::take(&mut self.st_ty),
        )
    }

    fn give_memory(&mut self, m: Memory<'p>) {
        (
            self.heap,
            self.maybe_array,
            self.fill,
            self.totals,
            self.num_ty,
            self.st_ty,
        ) = m;
    }

    fn begin_undo(&mut self) {
        self.maybe_array.begin();
        self.fill.begin();
        self.totals.begin();
        self.num_ty.begin();
        self.st_ty.begin();
    }

    fn commit_undo(&mut self) {
        self.maybe_array.commit();
        self.fill.commit();
        self.totals.commit();
        self.num_ty.commit();
        self.st_ty.commit();
    }

    /// Undoes the changes to the maps over the cells since `begin_undo`.
    fn undo(&mut self) {
        self.maybe_array.undo();
        self.fill.undo();
        self.totals.undo();
        self.num_ty.undo();
        self.st_ty.undo();
    }

    /// Stores a cell, first keeping its old content when a journal is open.
    fn put(&mut self, c: usize, cell: Cell) {
        self.journal_cell(c);
        self.heap[c] = cell;
    }

    /// Keeps the content of cell `c` in the open journal (the first time it changes).
    fn journal_cell(&mut self, c: usize) {
        if let Some(j) = &mut self.journal {
            if c < j.len && !j.old.contains_key(&c) {
                j.old.insert(c, self.heap[c].clone());
            }
        }
    }

    fn alloc(&mut self, c: Cell) -> usize {
        if let Some(k) = self.free.pop() {
            self.put(k, c);
            if !self.fill.is_empty() {
                self.fill.remove(&k);
            }
            self.num_ty.remove(&k);
            self.st_ty.remove(&k);
            if !self.narrow.is_empty() {
                self.narrow.remove(&k);
            }
            self.touched(k);
            return k;
        }
        self.heap.push(c);
        self.heap.len() - 1
    }

    /// A block's scope ends: its variables' cells are reused (C forbids using them after).
    fn pop_scope(&mut self) {
        if let Some(sc) = self.scopes.pop() {
            for (_, c) in sc.into_iter().rev() {
                if !self.maybe_array.contains_key(&c) && !self.static_cells.contains(&c) {
                    self.free.push(c);
                }
            }
        }
    }

    fn new_cell_for(&mut self, ty: &CType) -> usize {
        if ty.indirection == 0 {
            if let Some(fields) = self.struct_fields(ty) {
                let sn = self.struct_name(ty);
                let mut fs = Vec::new();
                for f in fields {
                    let c = self.alloc(Cell::V(Val::unknown(format!("field {f} never set"))));
                    if let Some(sn) = sn {
                        self.type_field(c, sn, &f);
                    }
                    fs.push((f, c));
                }
                let c = self.alloc(Cell::St(fs));
                if let Some(sn) = sn {
                    self.st_ty.insert(c, sn);
                }
                return c;
            }
        }
        let c = self.alloc(Cell::V(Val::unknown("never set")));
        self.type_cell(c, ty);
        c
    }

    /// Records a cell's declared type: arithmetic (of its elements), or a struct's name.
    fn type_cell(&mut self, c: usize, ty: &CType) {
        if let Some(int) = self.arith(ty) {
            self.num_ty.insert(c, int);
        } else if let Some(sn) = self.struct_name(ty) {
            self.st_ty.insert(c, sn);
        }
    }

    /// Types a field's cell from its struct's declaration.
    fn type_field(&mut self, c: usize, sn: &str, field: &str) {
        if let Some(ty) = self
            .sh
            .field_types
            .get(sn)
            .and_then(|f| f.get(field))
            .copied()
        {
            self.type_cell(c, ty);
            // An array field (or a pointer): an array once indexed before it is set.
            if ty.indirection > 0 {
                self.maybe_array.insert(c, ());
            }
        }
    }

    /// The struct a type names (through typedefs), pointers and arrays included.
    fn struct_name(&self, ty: &CType) -> Option<&'p str> {
        let mut base = &ty.base;
        for _ in 0..8 {
            match base {
                Base::Struct(n) => {
                    return self
                        .sh
                        .field_types
                        .get_key_value(n.as_str())
                        .map(|(k, _)| *k)
                }
                Base::Named(n) => match self.sh.typedefs.get(n.as_str()) {
                    Some(t) => base = &t.base,
                    None => return None,
                },
                _ => return None,
            }
        }
        None
    }

    /// Is the type (pointers and arrays: their elements) an integer (true) or a floating (false)
    /// type? None for structs and what is not known.
    fn arith(&self, ty: &CType) -> Option<bool> {
        let mut base = ty.base.clone();
        for _ in 0..8 {
            match &base {
                Base::Int => return Some(true),
                Base::Float | Base::Double => return Some(false),
                Base::Named(n) => match self.sh.typedefs.get(n.as_str()) {
                    Some(t) => base = t.base.clone(),
                    None => {
                        return matches!(
                            n.as_str(),
                            "long"
                                | "size_t"
                                | "unsigned"
                                | "short"
                                | "char"
                                | "int64_t"
                                | "int32_t"
                                | "uint64_t"
                                | "uint32_t"
                                | "ssize_t"
                                | "ptrdiff_t"
                        )
                        .then_some(true)
                    }
                },
                _ => return None,
            }
        }
        None
    }

    /// A store by assignment or initialisation: the value converted to the cell's declared
    /// type; a pointer stored into a typed pointer gives fresh memory its element type.
    fn store(&mut self, c: usize, v: Val) -> Val {
        let v = match (self.num_ty.get(&c), v) {
            (Some(true), Val::F(f)) => Val::I(f as i64),
            (Some(false), Val::I(i)) => Val::F(i as f64),
            (Some(&int), Val::P(t, o)) => {
                if matches!(&self.heap[t], Cell::Ar(els, _) if els.is_empty()) {
                    self.num_ty.insert_absent(t, int);
                }
                Val::P(t, o)
            }
            (None, Val::P(t, o)) if self.st_ty.contains_key(&c) => {
                if matches!(&self.heap[t], Cell::Ar(els, _) if els.is_empty()) {
                    let sn = self.st_ty[&c];
                    self.st_ty.insert_absent(t, sn);
                }
                Val::P(t, o)
            }
            (None, Val::F(f)) if matches!(self.heap[c], Cell::V(Val::I(_))) => Val::I(f as i64),
            (_, v) => v,
        };
        let v = match (v, self.narrow.get(&c)) {
            (Val::I(x), Some(t)) => convert(Val::I(x), t),
            (v, _) => v,
        };
        self.set(c, v.clone());
        v
    }

    fn struct_fields(&self, ty: &CType) -> Option<Vec<String>> {
        let mut base = ty.base.clone();
        for _ in 0..8 {
            match &base {
                Base::Struct(n) => {
                    return self
                        .sh
                        .structs
                        .get(n.as_str())
                        .cloned()
                        .or(Some(Vec::new()))
                }
                Base::Named(n) => match self.sh.typedefs.get(n.as_str()) {
                    Some(t) if t.indirection == 0 => base = t.base.clone(),
                    _ => return None,
                },
                _ => return None,
            }
        }
        None
    }

    fn get(&self, c: usize) -> Val {
        match &self.heap[c] {
            Cell::V(v) => v.clone(),
            Cell::Ar(..) | Cell::St(..) => Val::P(c, 0),
        }
    }

    fn set(&mut self, c: usize, v: Val) {
        if let Some(pr) = self.sample.as_mut().and_then(|sm| sm.producer.as_mut()) {
            pr.written.insert(c);
        }
        if let Some(px) = &mut self.prefix {
            let k = px.iter;
            px.writes
                .entry(c)
                .and_modify(|w| w.1 += 1)
                .or_insert((k, 1));
        }
        if let Cell::St(fs) = &self.heap[c] {
            // Struct assignment: copy the fields of the source struct.
            if let Val::P(src, 0) = v {
                if let Cell::St(sf) = self.heap[src].clone() {
                    let fs = fs.clone();
                    for (name, sc) in sf {
                        let val = self.get(sc);
                        if let Some((_, dc)) = fs.iter().find(|(n, _)| *n == name) {
                            self.set(*dc, val);
                        }
                    }
                    return;
                }
            }
        }
        self.put(c, Cell::V(v));
    }

    /// The element `off` of the array (or scalar) cell `c`, grown on demand.
    fn elem(&mut self, c: usize, off: i64) -> Option<usize> {
        if off < 0 {
            return None;
        }
        match &self.heap[c] {
            Cell::Ar(v, bulk) => {
                if (off as usize) < v.len() {
                    return Some(v[off as usize]);
                }
                if off
                    >= if self.exact() {
                        SAMPLE_ARRAY
                    } else {
                        SMALL_ARRAY
                    }
                {
                    return None;
                }
                let bulk = *bulk;
                self.journal_cell(c);
                let Cell::Ar(mut v, _) =
                    std::mem::replace(&mut self.heap[c], Cell::Ar(Vec::new(), bulk))
                else {
                    return None;
                };
                let fill = self.fill.get(&c).cloned().unwrap_or_else(|| {
                    Val::unknown(if bulk {
                        "bulk data (allocated memory)"
                    } else {
                        "array element never set"
                    })
                });
                let ty = self.num_ty.get(&c).copied();
                let sn = self.st_ty.get(&c).copied();
                while v.len() <= off as usize {
                    let n = self.alloc(Cell::V(fill.clone()));
                    if let Some(int) = ty {
                        self.num_ty.insert(n, int);
                    }
                    if let Some(sn) = sn {
                        self.st_ty.insert(n, sn);
                    }
                    v.push(n);
                }
                let r = v[off as usize];
                self.put(c, Cell::Ar(v, bulk));
                Some(r)
            }
            _ if off == 0 => Some(c),
            _ => None,
        }
    }

    fn field(&mut self, c: usize, name: &str) -> usize {
        match &self.heap[c] {
            Cell::St(fs) => {
                if let Some((_, fc)) = fs.iter().find(|(n, _)| n == name) {
                    return *fc;
                }
            }
            Cell::Ar(v, _) if !v.is_empty() => {
                let first = v[0];
                return self.field(first, name);
            }
            Cell::V(Val::P(t, o)) => {
                let (t, o) = (*t, *o);
                if t != c {
                    if let Some(e) = self.elem(t, o) {
                        return self.field(e, name);
                    }
                }
            }
            _ => {}
        }
        let fc = self.alloc(Cell::V(Val::unknown(format!("field {name} never set"))));
        if let Some(sn) = self.st_ty.get(&c).copied() {
            self.type_field(fc, sn, name);
        }
        self.journal_cell(c);
        match &mut self.heap[c] {
            Cell::St(fs) => fs.push((name.to_string(), fc)),
            other => *other = Cell::St(vec![(name.to_string(), fc)]),
        }
        fc
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.scopes.get(name).or_else(|| self.globals.get(name).copied())
    }

    fn declare(&mut self, name: &str, c: usize) {
        if !self.scopes.declare(name, c) {
            self.globals.insert(name.to_string(), c);
        }
    }

    /// Initialises a declared cell from an initialiser (lists for arrays and structs).
    fn init_cell(&mut self, c: usize, ty: &CType, init: &CExpr) -> R<()> {
        if let CExpr::InitList(items) = init {
            if ty.indirection > 0 {
                let elem_ty = ty.deref();
                let mut cells = Vec::new();
                for it in items {
                    let e = self.new_cell_for(&elem_ty);
                    self.init_cell(e, &elem_ty, it)?;
                    cells.push(e);
                }
                self.put(c, Cell::Ar(cells, false));
                // Elements after the list's are zero.
                self.zero_fill(c, &elem_ty);
            } else if let Some(fields) = self.struct_fields(ty) {
                for (k, it) in items.iter().enumerate() {
                    let Some(f) = fields.get(k) else { break };
                    let fc = self.field(c, f);
                    let v = self.eval(it)?;
                    self.set(fc, v);
                }
            } else if let Some(first) = items.first() {
                let v = self.eval(first)?;
                self.set(c, v);
            }
            return Ok(());
        }
        let v = self.eval(init)?;
        let v = convert(v, ty);
        self.set(c, v);
        Ok(())
    }

    // ---- Running --------------------------------------------------------------------------

    /// Runs main with argv = program name + the program's arguments.
    pub fn run(&mut self, sink: &mut dyn Sink) -> Result<(), Unresolved> {
        self.run_main(sink).map_err(|e| *e)
    }

    fn run_main(&mut self, sink: &mut dyn Sink) -> R<()> {
        let Some(main) = self.sh.funcs.get("main").copied() else {
            return Err(Box::new(Unresolved {
                file: self
                    .sh
                    .prog
                    .model
                    .files
                    .first()
                    .cloned()
                    .unwrap_or_default(),
                line: 0,
                what: "no main function".into(),
            }));
        };
        // Globals, then main's parameters.
        for (file, g) in self.sh.globals.clone() {
            self.file = file;
            self.line = g.span.line_start;
            let c = self.new_cell_for(&g.ty);
            self.note_dims(c, g);
            self.globals.insert(g.name.clone(), c);
            match &g.init {
                Some(init) => self.init_cell(c, &g.ty, init)?,
                None => {
                    if g.ty.indirection > 0 {
                        // Static storage: an array of zeros (a pointer's indexing is null's).
                        self.maybe_array.insert(c, ());
                        self.zero_fill(c, &g.ty.deref());
                    } else if !matches!(self.heap[c], Cell::St(_)) {
                        self.set(c, Val::I(0));
                    }
                }
            }
        }
        let mut argv = vec![Rc::<str>::from("program")];
        argv.extend(self.sh.args.iter().map(|a| Rc::from(a.as_str())));
        let argc = argv.len() as i64;
        let mut cells: Vec<usize> = argv
            .into_iter()
            .map(|s| self.alloc(Cell::V(Val::S(s, 0))))
            .collect();
        cells.push(self.alloc(Cell::V(Val::I(0))));
        let argv_cell = self.alloc(Cell::Ar(cells, false));
        let mut args = Vec::new();
        if !main.params.is_empty() {
            args.push(Val::I(argc));
        }
        if main.params.len() > 1 {
            args.push(Val::P(argv_cell, 0));
        }
        let r = self.call_user(main, args, sink);
        self.flush(sink)?;
        if !self.partial_line.is_empty() {
            let l = std::mem::take(&mut self.partial_line);
            self.push_line(l);
        }
        r.map(|_| ())
    }

    fn push_line(&mut self, l: String) {
        // An arm assumed never taken (an error report) prints nothing.
        if self.output.len() < MAX_OUTPUT_LINES && self.weight > 0.0 {
            self.output.push(l);
        }
    }

    fn flush(&mut self, sink: &mut dyn Sink) -> R<()> {
        if !self.pending.is_empty() {
            let p = std::mem::take(&mut self.pending);
            sink.compute(&p)?;
        }
        Ok(())
    }

    fn charge(&mut self, b: Option<usize>) {
        // What runs after MPI_Finalize is outside the prediction (as in a traced run).
        if self.mpi_state == 2 {
            return;
        }
        if let Some(b) = b {
            if self.weight != 0.0 {
                self.pending.push((b, self.weight));
            }
        }
    }

    fn charge_kind(&mut self, sp: crate::frontend::ir::Span, kind: BlockKind) -> Option<usize> {
        let b = self.sh.block(self.file, sp.line_start, sp.col, kind);
        self.charge(b);
        b
    }

    fn call_user(&mut self, f: &'p Function, args: Vec<Val>, sink: &mut dyn Sink) -> R<Val> {
        if self.depth >= MAX_CALL_DEPTH {
            return Err(self.err(format!(
                "calls nest deeper than {MAX_CALL_DEPTH} levels (recursion in {})",
                f.name
            )));
        }
        let saved_file = self.file;
        let saved_line = self.line;
        self.file = self
            .sh
            .files
            .get(&(f as *const Function))
            .copied()
            .unwrap_or(saved_file);
        self.depth += 1;
        let outer = self.scopes.enter();
        self.charge_kind(f.span, BlockKind::Function);
        for (k, p) in f.params.iter().enumerate() {
            let c = self.alloc(Cell::V(Val::unknown("argument not passed")));
            if let Some(v) = args.get(k) {
                // A struct passed by value: a copy.
                if let (Val::P(src, 0), Cell::St(_)) = (
                    v,
                    &self
                        .heap
                        .get(match v {
                            Val::P(s, _) => *s,
                            _ => 0,
                        })
                        .cloned()
                        .unwrap_or(Cell::V(Val::I(0))),
                ) {
                    if p.ty.indirection == 0 {
                        let copy = self.copy_cell(*src);
                        self.declare(&p.name, copy);
                        continue;
                    }
                }
                self.put(c, Cell::V(convert(v.clone(), &p.ty)));
            }
            self.declare(&p.name, c);
        }
        let r = self.stmt(&f.body, sink);
        self.scopes.leave(outer);
        self.depth -= 1;
        self.file = saved_file;
        self.line = saved_line;
        match r? {
            Flow::Return(v) => Ok(convert(v, &f.ret)),
            _ => Ok(Val::I(0)),
        }
    }

    fn copy_cell(&mut self, c: usize) -> usize {
        match self.heap[c].clone() {
            Cell::V(v) => self.alloc(Cell::V(v)),
            Cell::St(fs) => {
                let mut out = Vec::new();
                for (n, fc) in fs {
                    let cc = self.copy_cell(fc);
                    out.push((n, cc));
                }
                self.alloc(Cell::St(out))
            }
            Cell::Ar(v, b) => {
                let mut out = Vec::new();
                for e in v {
                    let cc = self.copy_cell(e);
                    out.push(cc);
                }
                self.alloc(Cell::Ar(out, b))
            }
        }
    }

    fn stmts(&mut self, list: &'p [Stmt], sink: &mut dyn Sink) -> R<Flow> {
        for s in list {
            match self.stmt(s, sink)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn stmt(&mut self, s: &'p Stmt, sink: &mut dyn Sink) -> R<Flow> {
        self.tick()?;
        let sp = s.span();
        self.line = sp.line_start;
        if self.debug {
            eprintln!("eval rank {}: {}:{}", self.rank, self.file, sp.line_start);
        }
        match s {
            Stmt::Compound(v, _) => {
                self.scopes.push();
                let r = self.stmts(v, sink);
                self.pop_scope();
                r
            }
            Stmt::Label(inner, _) => self.stmt(inner, sink),
            Stmt::Expr(e, _) => {
                if let Some(b) = self
                    .sh
                    .block(self.file, sp.line_start, sp.col, BlockKind::Comm)
                {
                    self.charge(Some(b));
                    self.flush(sink)?;
                    if self.weight != 1.0 {
                        return Err(self
                            .err("communication under a branch that depends on data".to_string()));
                    }
                } else {
                    self.charge_kind(sp, BlockKind::Straight);
                }
                self.eval_sink(e, sink)?;
                Ok(Flow::Normal)
            }
            Stmt::Decl(ds, _) => {
                self.charge_kind(sp, BlockKind::Straight);
                for d in ds {
                    self.line = d.span.line_start;
                    // A static local: one cell for every call, initialised the first time.
                    if d.is_static && !self.scopes.is_empty() {
                        let key = (self.file, d.span.byte_start);
                        if let Some(c) = self.statics.get(&key).copied() {
                            self.declare(&d.name, c);
                            continue;
                        }
                        let c = self.new_cell_for(&d.ty);
                        self.note_dims(c, d);
                        self.statics.insert(key, c);
                        self.static_cells.insert(c);
                        match &d.init {
                            Some(init) => self.init_cell(c, &d.ty, init)?,
                            // Zero-initialised, as every object of static storage.
                            None if d.ty.indirection == 0
                                && self.struct_fields(&d.ty).is_none() =>
                            {
                                self.set(c, convert(Val::I(0), &d.ty));
                            }
                            None => {
                                self.maybe_array.insert(c, ());
                                self.zero_fill(c, &d.ty.deref());
                            }
                        }
                        self.declare(&d.name, c);
                        continue;
                    }
                    let c = self.new_cell_for(&d.ty);
                    self.note_dims(c, d);
                    if let Some(init) = &d.init {
                        // Initialisers may call MPI or user functions.
                        if let CExpr::InitList(_) = init {
                            self.init_cell(c, &d.ty, init)?;
                        } else {
                            let v = self.eval_sink(init, sink)?;
                            let v = convert(v, &d.ty);
                            self.store(c, v);
                        }
                    } else if d.ty.indirection > 0 {
                        // An array or a pointer (the IR does not say which): an array once it
                        // is read or indexed before anything is stored in it.
                        self.maybe_array.insert(c, ());
                    }
                    self.declare(&d.name, c);
                }
                Ok(Flow::Normal)
            }
            Stmt::Return(e, _) => {
                self.charge_kind(sp, BlockKind::Straight);
                let v = match e {
                    Some(e) => self.eval_sink(e, sink)?,
                    None => Val::I(0),
                };
                Ok(Flow::Return(v))
            }
            Stmt::Break(_) => {
                self.charge_kind(sp, BlockKind::Straight);
                Ok(Flow::Break)
            }
            Stmt::Continue(_) => {
                self.charge_kind(sp, BlockKind::Straight);
                Ok(Flow::Continue)
            }
            Stmt::Goto(_) => Err(self.err("goto is not followed by the static evaluation")),
            Stmt::Empty(_) => {
                self.charge_kind(sp, BlockKind::Straight);
                Ok(Flow::Normal)
            }
            Stmt::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                self.charge_kind(sp, BlockKind::Straight);
                let c = self.eval_sink(cond, sink)?;
                if self.sample.is_some() {
                    if let Some(t) = c.truth() {
                        self.observe(then, t);
                        if let Some(o) = otherwise {
                            self.observe(o, !t);
                        }
                    }
                }
                match c.truth() {
                    Some(true) => self.arm(then, sink),
                    Some(false) => match otherwise {
                        Some(o) => self.arm(o, sink),
                        None => Ok(Flow::Normal),
                    },
                    None => {
                        let why = c.why();
                        let mut arms = vec![&**then];
                        if let Some(o) = otherwise {
                            arms.push(&**o);
                        }
                        self.unknown_arms(&arms, sp.line_start, &why, sink)?;
                        Ok(Flow::Normal)
                    }
                }
            }
            Stmt::Switch { cond, body, .. } => {
                self.charge_kind(sp, BlockKind::Straight);
                let v = self.eval_sink(cond, sink)?;
                let cases: Vec<&'p Stmt> = match &**body {
                    Stmt::Compound(v, _) => v.iter().collect(),
                    other => vec![other],
                };
                if v.num().is_none() {
                    let why = v.why();
                    return self
                        .unknown_arms(&cases, sp.line_start, &why, sink)
                        .map(|_| Flow::Normal);
                }
                let x = v.num().unwrap_or(0.0);
                let mut start = None;
                for (k, c) in cases.iter().enumerate() {
                    if let Stmt::Case { value: Some(e), .. } = c {
                        let cv = self.eval(e)?;
                        if cv.num() == Some(x) {
                            start = Some(k);
                            break;
                        }
                    }
                }
                if start.is_none() {
                    start = cases
                        .iter()
                        .position(|c| matches!(c, Stmt::Case { value: None, .. }));
                }
                let Some(start) = start else {
                    return Ok(Flow::Normal);
                };
                for c in &cases[start..] {
                    let bsp = c.span();
                    self.charge_kind(bsp, BlockKind::Branch);
                    let r = match c {
                        Stmt::Case { body, .. } => self.stmts(body, sink)?,
                        other => self.stmt(other, sink)?,
                    };
                    match r {
                        Flow::Normal => {}
                        Flow::Break => return Ok(Flow::Normal),
                        other => return Ok(other),
                    }
                }
                Ok(Flow::Normal)
            }
            Stmt::Case { body, .. } => self.stmts(body, sink),
            Stmt::For { .. } | Stmt::While { .. } | Stmt::DoWhile { .. } => self.loop_stmt(s, sink),
        }
    }

    /// A sample run saw the arm `s` taken or not.
    fn observe(&mut self, s: &Stmt, taken: bool) {
        let Some(b) = self.sh.block(
            self.file,
            s.span().line_start,
            s.span().col,
            BlockKind::Branch,
        ) else {
            return;
        };
        if let Some(sm) = self.sample.as_mut().filter(|sm| sm.arms.contains(&b)) {
            let e = sm.seen.entry(b).or_insert((0, 0));
            e.0 += taken as u64;
            e.1 += 1;
            sm.enough |= e.1 >= SAMPLE_ENOUGH;
        }
    }

    /// The probability a data-dependent arm is weighted by: its sampled rate, else the
    /// assumption (noted).
    fn arm_rate(&mut self, b: Option<usize>) -> f64 {
        if let Some(r) = b.and_then(|b| self.known_rate(b)) {
            return r;
        }
        self.guessed = true;
        if let Some(b) = b {
            self.assumed_arms.insert(b, self.assumed_p);
        }
        self.assumed_p
    }

    /// A data-dependent arm's rate when something measured or decided it: fitted to a traced
    /// run, sampled on the program's own data, or an error report's (never) and its other arm's
    /// (always).
    fn known_rate(&self, b: usize) -> Option<f64> {
        self.sh
            .traced_rates
            .get(&b)
            .copied()
            .or_else(|| self.sh.rates.borrow().get(&b).map(|r| r.rate))
            .or_else(|| self.sh.error_arms.get(&b).copied())
    }

    /// Before a loop without communication whose body holds branches on data is charged or
    /// interpreted with assumed rates: a copy of the interpreter runs the loop on the program's
    /// own data (arrays real up to SAMPLE_ARRAY elements, every inner loop interpreted) for
    /// SAMPLE_STEPS statements, counting how often each such arm is taken. Arms seen at least
    /// SAMPLE_MIN times get that rate, for every rank. Nothing the copy does reaches the
    /// prediction; it is the static counterpart of a traced run's iteration sampling.
    fn sample_branches(&mut self, s: &'p Stmt, lb: usize) {
        let left = SAMPLE_TOTAL_S - self.sh.sample_spent.get();
        let left_steps = SAMPLE_TOTAL_STEPS.saturating_sub(self.sh.sample_steps.get());
        if self.exact()
            || self.weight != 1.0
            || left <= 0.0
            || left_steps == 0
            || self.sh.sampled.borrow().contains(&lb)
        {
            return;
        }
        let arms = self.sh.prog.data_branches_under(lb);
        if arms.is_empty() || arms.iter().all(|a| self.sh.rates.borrow().contains_key(a)) {
            return;
        }
        self.sh.sampled.borrow_mut().insert(lb);
        let mut copy = self.clone();
        let now = Instant::now();
        let until =
            (now + std::time::Duration::from_secs_f64(SAMPLE_S.min(left))).min(self.sh.deadline);
        copy.sample = Some(Box::new(Sample {
            until_step: self.steps + SAMPLE_STEPS.min(left_steps),
            until,
            seen: CellMap::default(),
            arms: (*arms).clone(),
            enough: false,
            unknown: 0,
            holds_arms: CellMap::default(),
            producer: None,
        }));
        copy.pending.clear();
        copy.weight = 1.0;
        let r = copy.iterate(s, Some(lb), false, &mut NullSink);
        // Budget spent, a value not known, the end of the loop: what was seen counts.
        let _ = r;
        self.sh
            .sample_spent
            .set(self.sh.sample_spent.get() + now.elapsed().as_secs_f64());
        self.sh.sample_steps.set(self.sh.sample_steps.get() + copy.steps.saturating_sub(self.steps));
        let Some(sm) = copy.sample.take() else { return };
        let from = format!("{}:{} (rank {})", self.file, s.span().line_start, self.rank);
        let mut rates = self.sh.rates.borrow_mut();
        for (b, (taken, seen)) in sm.seen {
            if arms.contains(&b) && seen >= SAMPLE_MIN {
                rates.entry(b).or_insert(SampledRate {
                    rate: taken as f64 / seen as f64,
                    seen,
                    from: from.clone(),
                });
            }
        }
        if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
            eprintln!(
                "eval: sample of the loop at {from}: {} steps, {:.3} s",
                copy.steps - self.steps,
                now.elapsed().as_secs_f64()
            );
        }
    }

    /// A branch arm taken for sure: its block, then its statements.
    fn arm(&mut self, s: &'p Stmt, sink: &mut dyn Sink) -> R<Flow> {
        self.charge_kind(s.span(), BlockKind::Branch);
        self.stmt(s, sink)
    }

    /// Arms of a branch whose condition depends on data: each interpreted with the assumed
    /// probability as weight; what they write is unknown afterwards.
    fn unknown_arms(
        &mut self,
        arms: &[&'p Stmt],
        line: u32,
        why: &str,
        sink: &mut dyn Sink,
    ) -> R<()> {
        for a in arms {
            if let Some(b) = self.sh.block(
                self.file,
                a.span().line_start,
                a.span().col,
                BlockKind::Branch,
            ) {
                if self.sh.prog.has_comm(b) {
                    return Err(self.err(format!(
                        "branch around communication depends on data ({why})"
                    )));
                }
            }
        }
        // A prefix run is exact or nothing.
        if self.prefix.is_some() {
            return Err(self.err(format!("{PREFIX_FAIL}: a branch depends on data ({why})")));
        }
        // A sample run that meets its arms on unknown data (bulk data from before the loop)
        // cannot measure them: it ends after SAMPLE_MIN such meetings.
        if let Some(sm) = &mut self.sample {
            let hit = arms.iter().any(|a| {
                self.sh
                    .block(
                        self.file,
                        a.span().line_start,
                        a.span().col,
                        BlockKind::Branch,
                    )
                    .is_some_and(|b| sm.arms.contains(&b))
            });
            if hit {
                sm.unknown += 1;
                if sm.unknown >= SAMPLE_MIN {
                    return Err(self.err(SAMPLE_DONE));
                }
            }
        }
        let w = self.weight;
        for a in arms {
            let b = self.sh.block(
                self.file,
                a.span().line_start,
                a.span().col,
                BlockKind::Branch,
            );
            let p = self.arm_rate(b);
            let msg = self.rate_note(b, &format!("{}:{}", self.file, a.span().line_start));
            if !self.assumed.contains(&msg) {
                self.assumed.push(msg);
            }
            // An error report assumed never taken changes nothing: the error count it would
            // raise stays as it is (MPICH's tests then print "No Errors", as they do).
            let never = p == 0.0
                && b.is_some_and(|b| self.sh.error_arms.contains_key(&b))
                && !b.is_some_and(|b| self.sh.rates.borrow().contains_key(&b) || self.sh.traced_rates.contains_key(&b));
            if never {
                continue;
            }
            let written = written_idents(a);
            self.weight = w * p;
            let r = self.arm(a, sink);
            self.weight = w;
            match r {
                Ok(Flow::Break) | Ok(Flow::Return(_)) => {
                    return Err(self.err(format!(
                        "control leaves early on a condition that depends on data ({why}): how often only a run can say"
                    )))
                }
                Ok(_) => {}
                // exit() on a path taken only sometimes: the rank is assumed to go on.
                Err(e) if e.what.starts_with('\u{0}') => {}
                Err(e) => return Err(e),
            }
            let why = format!(
                "set under the branch at {}:{line}, which depends on data",
                self.file
            );
            self.poison(&written, &why);
            self.poison_stores(a, &why);
        }
        Ok(())
    }

    /// What a statement stores through indexes, pointers and fields becomes unknown (whole
    /// arrays; fields of structs reached without side effects).
    fn poison_stores(&mut self, s: &'p Stmt, why: &str) {
        self.poison_arrays(s, why);
        let mut roots = Vec::new();
        lvalues(s, &mut roots);
        for e in roots {
            if let CExpr::Field { base, .. } = e {
                if matches!(&**base, CExpr::Ident(_) | CExpr::Field { .. }) {
                    if let Ok(Some(c)) = self.place(e, &mut NullSink) {
                        if matches!(self.heap[c], Cell::V(_)) {
                            self.put(c, Cell::V(Val::unknown(format!(
                                "{}: {why}",
                                crate::frontend::analyze::cexpr_text(e)
                            ))));
                        }
                    }
                }
            }
        }
    }

    /// The report's line for a data-dependent arm at `at`: its sampled rate or the assumption.
    fn rate_note(&self, b: Option<usize>, at: &str) -> String {
        if let Some(r) = b.and_then(|b| self.sh.traced_rates.get(&b)) {
            return format!("{at}: branch depends on data: taken {:.2}% of the times, as in the traced run", 100.0 * r);
        }
        match b.and_then(|b| self.sh.rates.borrow().get(&b).cloned()) {
            Some(r) => format!(
                "{at}: branch depends on data: taken {:.1}% of {} times in a sample run of the loop at {} on the program's own data",
                100.0 * r.rate,
                r.seen,
                r.from
            ),
            None => match b.and_then(|b| self.sh.error_arms.get(&b).copied()) {
                Some(r) if r == 0.0 => format!("{at}: branch depends on data: an error report, assumed never taken"),
                Some(_) => format!("{at}: branch depends on data: the other arm reports an error, assumed always taken"),
                None => format!("{at}: branch depends on data: assumed taken half the time (range: never to always)"),
            },
        }
    }

    fn poison(&mut self, names: &HashSet<String>, why: &str) {
        for n in names {
            if let Some(c) = self.lookup(n) {
                if matches!(self.heap[c], Cell::V(Val::I(_)) | Cell::V(Val::F(_))) {
                    self.put(c, Cell::V(Val::unknown(format!("{n}: {why}"))));
                }
            }
        }
    }

    // ---- Loops ----------------------------------------------------------------------------

    fn loop_stmt(&mut self, s: &'p Stmt, sink: &mut dyn Sink) -> R<Flow> {
        let sp = s.span();
        let lb = self
            .sh
            .block(self.file, sp.line_start, sp.col, BlockKind::Loop);
        let has_comm = lb.map(|b| self.sh.prog.has_comm(b)).unwrap_or(true) || self.sh.calls_comm(s);
        self.scopes.push();
        let r = (|| {
            if let Stmt::For {
                init: Some(init), ..
            } = s
            {
                self.charge_kind(init.span(), BlockKind::Straight);
                match &**init {
                    Stmt::Expr(e, _) => {
                        self.eval_sink(e, sink)?;
                    }
                    other => {
                        self.stmt(other, sink)?;
                    }
                }
            }
            if !has_comm {
                if let Some(b) = lb {
                    self.sample_branches(s, b);
                    if let Some(f) = self.prefix_run(s, b)? {
                        return Ok(f);
                    }
                    if !self.exact() && self.by_formula(b, s)? {
                        return Ok(Flow::Normal);
                    }
                }
            }
            self.iterating += 1;
            let r = self.iterate(s, lb, has_comm, sink);
            self.iterating -= 1;
            r
        })();
        self.pop_scope();
        r
    }

    /// Charges a loop without communication from the front end's formula when it resolves
    /// with the interpreter's values and is long; its written scalars become unknown.
    fn by_formula(&mut self, b: usize, s: &'p Stmt) -> R<bool> {
        let Some((out, arms, total, estimated)) = self.formula_charges(b, Some(s)) else {
            return Ok(false);
        };
        // A short nest inside a loop being iterated (a small rank's stencil sweep at each time
        // step) is charged too: interpreting it, time step after time step, ran the numerics
        // on bulk data (jacobi2d at 1,024 ranks: 8 x 8 blocks, 90 ms a rank).
        let nest_in_loop = self.iterating > 0 && matches!(s, Stmt::For { body, .. } | Stmt::While { body, .. } | Stmt::DoWhile { body, .. } if has_loop(body));
        // Unless an arm on data in it has no rate (neither sampled nor an error report):
        // interpreted, the data decide it (MPICH's checks of translated ranks).
        let guessed = arms.iter().any(|a| self.known_rate(*a).is_none());
        // A loop up to a histogram's entries cannot be interpreted (its bounds are not known).
        if !estimated
            && ((total <= INTERPRET_BELOW && (!nest_in_loop || guessed))
                || (self.writes_small_state(s) && !self.small_stores_unknown(s))
                || self.short_reduction(s, total))
        {
            return Ok(false);
        }
        self.note_arms(arms);
        let trips = out.iter().find(|(j, _)| *j == b).map(|(_, n)| n / self.weight.max(f64::MIN_POSITIVE));
        if self.weight != 0.0 {
            self.pending.extend(out);
        }
        self.want_prefix(Some(b), s);
        // An arm that only reports an error is assumed never taken: what it writes (an error
        // count) keeps its value.
        let written = {
            let key = s as *const Stmt as usize;
            let cached = self.sh.loop_writes.borrow().get(&key).cloned();
            cached.unwrap_or_else(|| {
                let w = Rc::new(written_idents(&without_error_arms(s)));
                self.sh.loop_writes.borrow_mut().insert(key, w.clone());
                w
            })
        };
        let why = format!(
            "computed by the loop at {}:{}",
            self.file,
            s.span().line_start
        );
        // (Read before the loop's scalars become unknown: the loop variable starts at 0.)
        let filled = trips.and_then(|n| self.fill_loop(s, n));
        let sums = trips.map(|n| self.increments(s, n)).unwrap_or_default();
        self.poison(&written, &why);
        self.poison_arrays(s, &why);
        if let Some((t, v, n)) = filled {
            // Every element is `v`: the array starts over (also those stored before).
            let bulk = matches!(self.heap[t], Cell::Ar(_, true));
            self.put(t, Cell::Ar(Vec::new(), bulk));
            self.fill.insert(t, v.clone());
            self.poisoned.remove(&t);
            if let Some(x) = v.num() {
                self.totals.insert(t, (x * n as f64, n));
            }
        }
        for (t, x) in sums {
            self.totals.insert(t, x);
        }
        self.rng_skipped(s);
        Ok(true)
    }

    /// A loop `for (v = 0; v < n; v++) a[v] = x;` (x known and the same every iteration) over
    /// at least the elements array `a` holds: (a, x, n).
    fn fill_loop(&mut self, s: &Stmt, trips: f64) -> Option<(usize, Val, i64)> {
        let Stmt::For { init, cond, update, body, .. } = s else { return None };
        let shape = loop_shape(init.as_deref(), cond.as_ref(), update.as_ref())?;
        if !matches!(shape.step, Step::Add(1)) {
            return None;
        }
        let c = self.lookup(&shape.var)?;
        if self.get(c).int() != Some(0) {
            return None;
        }
        let mut st: &Stmt = body;
        while let Stmt::Compound(v, _) = st {
            let [one] = v.as_slice() else { return None };
            st = one;
        }
        let Stmt::Expr(CExpr::Assign { op, left, right }, _) = st else { return None };
        let CExpr::Index { index, .. } = &**left else { return None };
        if op != "=" || !matches!(&**index, CExpr::Ident(n) if *n == shape.var) || mentions_any(right, &HashSet::from([shape.var.clone()])) {
            return None;
        }
        if !matches!(&**right, CExpr::Int(_) | CExpr::Float { .. } | CExpr::Ident(_) | CExpr::Unary { .. }) {
            return None;
        }
        let v = self.eval(right).ok().filter(|v| v.num().is_some())?;
        let (t, _) = self.store_target(left)?;
        let n = trips.round() as i64;
        match &self.heap[t] {
            Cell::Ar(els, _) if els.len() as i64 <= n && els.iter().all(|e| matches!(self.heap[*e], Cell::V(_))) => Some((t, v, n)),
            _ => None,
        }
    }

    /// Statements of a loop body run on every iteration that add a known amount to an element
    /// at a place known only at run time (`count[key[i]]++`) of an array whose sum is known:
    /// its sum after `trips` iterations, per array.
    fn increments(&mut self, s: &Stmt, trips: f64) -> Vec<(usize, (f64, i64))> {
        let body = match s {
            Stmt::For { body, .. } | Stmt::While { body, .. } => &**body,
            _ => return Vec::new(),
        };
        let stmts: Vec<&Stmt> = match body {
            Stmt::Compound(v, _) => v.iter().collect(),
            one => vec![one],
        };
        let mut out: Vec<(usize, (f64, i64))> = Vec::new();
        for st in stmts {
            let (left, d) = match st {
                Stmt::Expr(CExpr::Update { op, arg, .. }, _) => (&**arg, if op.contains("++") { 1.0 } else { -1.0 }),
                Stmt::Expr(CExpr::Assign { op, left, right }, _) if op == "+=" || op == "-=" => {
                    let Some(x) = (match &**right {
                        CExpr::Int(k) => Some(*k as f64),
                        _ => None,
                    }) else {
                        continue;
                    };
                    (&**left, if op == "+=" { x } else { -x })
                }
                _ => continue,
            };
            if !matches!(left, CExpr::Index { .. }) {
                continue;
            }
            let Some((t, _)) = self.store_target(left) else { continue };
            let cur = match out.iter().position(|(c, _)| *c == t) {
                Some(k) => Some(out.remove(k).1),
                None => self.total_of(t),
            };
            if let Some((sum, n)) = cur {
                out.push((t, (sum + d * trips, n)));
            }
        }
        out
    }

    /// A loop without loops inside that sums array elements into a scalar known now, short
    /// enough to run to its end: run, its sum stays exact (charged by formula, it is unknown).
    fn short_reduction(&self, s: &Stmt, total: f64) -> bool {
        let body = match s {
            Stmt::For { body, .. } | Stmt::While { body, .. } | Stmt::DoWhile { body, .. } => body,
            _ => return false,
        };
        if total > EXACT_BELOW as f64 || has_loop(body) {
            return false;
        }
        data_scalars(body).iter().any(|n| {
            self.lookup(n)
                .is_some_and(|c| matches!(&self.heap[c], Cell::V(v) if v.num().is_some()))
        })
    }

    /// Data-dependent arms charged at their sampled or assumed rate go into the report.
    fn note_arms(&mut self, arms: Vec<usize>) {
        for arm in arms {
            self.arm_rate(Some(arm));
            let b = &self.sh.prog.model.blocks[arm];
            let note = self.rate_note(Some(arm), &format!("{}:{}", b.file, b.line_start));
            if !self.assumed.contains(&note) {
                self.assumed.push(note);
            }
        }
    }

    /// A loop's block executions from the front end's formula with the interpreter's values
    /// (weighted), the data-dependent arms it charges and the total; None when it does not
    /// resolve.
    /// The value a formula's variable `v` has here: a program variable in scope means itself;
    /// one named like the analysis's own symbols (gemm's matrix `size`) has a prime (`size'`)
    /// and those symbols (rank, size, the Cartesian grid) mean the interpreter's.
    fn formula_var(&mut self, v: &str) -> Option<f64> {
        let name = program_name(v);
        if name != v || !reserved_symbol(v) {
            if let Some(x) = self.lookup(name).and_then(|c| self.get(c).num()) {
                return Some(x);
            }
        }
        match v {
            "rank" => Some(self.rank as f64),
            "size" => Some(self.size as f64),
            ASSUMED_P => Some(self.assumed_p),
            other => {
                if let Some(k) = other.strip_prefix("cart_dims").and_then(|k| k.parse::<usize>().ok()) {
                    self.cart_dims.get(k).map(|d| *d as f64)
                } else if let Some(k) = other.strip_prefix("cart_coord").and_then(|k| k.parse::<usize>().ok()) {
                    let c = cart_coords(self.rank as i64, &self.cart_dims);
                    c.get(k).map(|d| *d as f64)
                } else if let Some(d) = self.sh.defines.get(other) {
                    Some(*d)
                } else {
                    self.lookup(other).and_then(|c| self.get(c).num())
                }
            }
        }
    }

    fn formula_charges(&mut self, b: usize, s: Option<&'p Stmt>) -> Option<(Vec<(usize, f64)>, Vec<usize>, f64, bool)> {
        let prog = self.sh.prog;
        let Ok(execs) = prog.contrib_execs_pub(b) else {
            return None;
        };
        // The formulas' variables and their values here (few: searched in order; a map only
        // where the counts are not cached yet).
        let mut env: Vec<(&'p str, f64)> = Vec::new();
        fn set<'a>(env: &mut Vec<(&'a str, f64)>, v: &'a str, x: f64) {
            match env.iter_mut().find(|(n, _)| *n == v) {
                Some(e) => e.1 = x,
                None => env.push((v, x)),
            }
        }
        let value = |env: &[(&str, f64)], v: &str| env.iter().find(|(n, _)| *n == v).map(|e| e.1);
        for v in prog.vars_of(b) {
            if let Some(x) = self.formula_var(v) {
                set(&mut env, v, x);
            }
        }
        // Data-dependent arms: their sampled rates, else the assumed probability (noted, and
        // the guess flagged, only once the formula is used).
        let mut arms = Vec::new();
        let assumed = self.sh.assumed_vars.borrow().get(&b).cloned();
        let assumed = assumed.unwrap_or_else(|| {
            let mut found: Vec<(String, usize)> = Vec::new();
            for e in execs.iter().map(|(_, e)| e) {
                for v in e.vars() {
                    let arm = v.strip_prefix(ASSUMED_P).and_then(|r| r.strip_prefix('@')).and_then(|r| r.parse::<usize>().ok());
                    if let Some(arm) = arm.filter(|_| !found.iter().any(|(x, _)| *x == v)) {
                        found.push((v, arm));
                    }
                }
            }
            let found = Rc::new(found);
            self.sh.assumed_vars.borrow_mut().insert(b, found.clone());
            found
        });
        let mut assumed_env: Vec<(String, f64)> = Vec::new();
        for (v, arm) in assumed.iter() {
            if value(&env, v).is_none() && !assumed_env.iter().any(|(n, _)| n == v) {
                let rate = self.known_rate(*arm).unwrap_or_else(|| {
                    self.assumed_arms.insert(*arm, self.assumed_p);
                    self.assumed_p
                });
                assumed_env.push((v.clone(), rate));
                arms.push(*arm);
            }
        }
        // Loops whose count the front end does not know: a loop up to a histogram's entry
        // runs the histogram's mean (noted once the formula is used).
        let mut notes = Vec::new();
        for v in prog.vars_of(b) {
            if let Some(l) = super::skeleton::trip_var_block(v) {
                let (m, note) = self.histogram_trips(s?, l)?;
                set(&mut env, v, m);
                notes.push(note);
            }
        }
        let lookup = |v: &str| value(&env, v).or_else(|| assumed_env.iter().find(|(n, _)| n == v).map(|e| e.1));
        let key = (b, prog.vars_of(b).iter().chain(assumed.iter().map(|(v, _)| v)).map(|v| lookup(v).map_or(u64::MAX, |x| x.to_bits())).collect::<Vec<u64>>());
        let cached = self.sh.charges.borrow().get(&key).cloned();
        let counts = match cached {
            Some(c) => c,
            None => {
                let map: HashMap<String, f64> =
                    env.iter().map(|(v, x)| (v.to_string(), *x)).chain(assumed_env.iter().cloned()).collect();
                let mut counts = Vec::new();
                let mut total = 0.0;
                for (j, e) in execs.iter() {
                    let Ok(n) = e.eval_map(&map) else { return None };
                    if n != 0.0 {
                        total += n;
                        counts.push((*j, n));
                    }
                }
                let c = Rc::new((counts, total));
                self.sh.charges.borrow_mut().insert(key, c.clone());
                c
            }
        };
        let out: Vec<(usize, f64)> = counts.0.iter().map(|(j, n)| (*j, n * self.weight)).collect();
        let total = counts.1;
        let estimated = !notes.is_empty();
        for note in notes {
            if !self.assumed.contains(&note) {
                self.assumed.push(note);
            }
        }
        Some((out, arms, total, estimated))
    }

    /// The loop of block `l` in statement `s`, when it is `for (c = 0; c < a[i]; c++)` over
    /// an array whose elements are not known but whose sum is (a counting sort's histogram):
    /// its mean trips, the sum over the elements, and the note that says so. A loop over every
    /// entry of the histogram then runs its total exactly.
    fn histogram_trips(&mut self, s: &'p Stmt, l: usize) -> Option<(f64, String)> {
        let file = self.file;
        let sh = self.sh;
        let found = find_stmt(s, &|x| {
            matches!(x, Stmt::For { .. })
                && sh.block(file, x.span().line_start, x.span().col, BlockKind::Loop) == Some(l)
        })?;
        let Stmt::For { init, cond, update, body, .. } = found else { return None };
        let shape = loop_shape(init.as_deref(), cond.as_ref(), update.as_ref())?;
        if !matches!(shape.step, Step::Add(1)) || !matches!(shape.start, CExpr::Int(0)) || shape.cmp != "<" {
            return None;
        }
        let CExpr::Index { .. } = &shape.bound else { return None };
        let (t, name) = self.store_target(&shape.bound)?;
        let (sum, n) = *self.totals.get(&t)?;
        if !matches!(self.fill.get(&t), Some(Val::U(_))) || n <= 0 {
            return None;
        }
        // The body must not change the histogram, nor leave early.
        if self.store_targets(body).iter().any(|(c, _)| *c == t) || has_exit(body) {
            return None;
        }
        let m = (sum / n as f64).max(0.0);
        let note = format!(
            "{file}:{}: `{}` from the total of `{name}`, whose entries are known only at run time: {sum} over {n} entries, {m:.3} trips on average",
            found.span().line_start,
            crate::frontend::analyze::cexpr_text(cond.as_ref()?),
        );
        Some((m, note))
    }

    /// A loop that stored into arrays was charged without running all its iterations: should
    /// the evaluation fail for want of what it stored, the next one runs a prefix of it.
    fn want_prefix(&mut self, lb: Option<usize>, s: &'p Stmt) {
        let roots = self.lvalues_of(s);
        if let (Some(b), false) = (lb, roots.is_empty()) {
            self.sh.prefix_wanted.borrow_mut().insert(b);
        }
    }

    /// The arrays (cells) a loop stores into through an index or a pointer, with the text of
    /// the array expression; only array expressions without side effects are evaluated.
    fn store_targets(&mut self, s: &'p Stmt) -> Vec<(usize, String)> {
        let roots = self.lvalues_of(s);
        let mut out: Vec<(usize, String)> = Vec::new();
        for e in roots.iter().copied() {
            if let Some((t, name)) = self.store_target(e) {
                if !out.iter().any(|(c, _)| *c == t) {
                    out.push((t, name));
                }
            }
        }
        out
    }

    /// The array (cell) a store through an index or a pointer goes into: the outermost array
    /// of `a[i][j]`, the pointer's target of `*p` and `*(p + i)`.
    fn store_target(&mut self, e: &CExpr) -> Option<(usize, String)> {
        fn pure(e: &CExpr) -> bool {
            match e {
                CExpr::Ident(_) | CExpr::Int(_) => true,
                CExpr::Field { base, .. } => pure(base),
                CExpr::Index { array, index, .. } => pure(array) && pure(index),
                CExpr::Cast { value, .. } | CExpr::Deref(value) => pure(value),
                CExpr::Binary { left, right, .. } => pure(left) && pure(right),
                _ => false,
            }
        }
        let mut e: &CExpr = e;
        while let CExpr::Cast { value, .. } = e {
            e = value;
        }
        let mut arr = match e {
            CExpr::Index { array, .. } => &**array,
            CExpr::Deref(inner) => match &**inner {
                CExpr::Binary { left, .. } => &**left,
                other => other,
            },
            _ => return None,
        };
        while let CExpr::Index { array, .. } = arr {
            arr = array;
        }
        if !pure(arr) {
            return None;
        }
        let target = match self.eval(arr) {
            Ok(Val::P(c, _)) => Some(c),
            _ => match arr {
                CExpr::Ident(_) | CExpr::Field { .. } => {
                    self.place(arr, &mut NullSink).ok().flatten()
                }
                _ => None,
            },
        };
        target
            .filter(|t| matches!(self.heap[*t], Cell::Ar(..)))
            .map(|t| (t, crate::frontend::analyze::cexpr_text(arr)))
    }

    /// Array cell `c` may be stored into: it is no longer wholly unknown.
    fn touched(&mut self, c: usize) {
        if !self.poisoned.is_empty() {
            self.poisoned.remove(&c);
        }
        // A store at a known place changes the sum by what is not known.
        if !self.totals.is_empty() {
            self.totals.remove(&c);
        }
    }

    /// Every element of array cell `t` (and of arrays in it) becomes unknown, also those not
    /// yet read.
    fn poison_cells(&mut self, t: usize, why: &Rc<str>) {
        self.poison_cells_except(t, why, &FastSet::default());
    }

    /// A store whose place is not known (an index computed from data): the array it goes
    /// into is unknown from now on, or the prefix run that met it fails.
    fn lost_store(&mut self, left: &CExpr) -> R<()> {
        let what = crate::frontend::analyze::cexpr_text(left);
        if self.prefix.is_some() {
            return Err(self.err(format!("{PREFIX_FAIL}: {what} is not known")));
        }
        if let Some((t, _)) = self.store_target(left) {
            if self.poisoned.insert(t) {
                let why: Rc<str> = Rc::from(
                    format!(
                        "stored into by `{what}` at {}:{} (a place known only at run time)",
                        self.file, self.line
                    )
                    .as_str(),
                );
                self.poison_cells(t, &why);
            }
        }
        Ok(())
    }

    /// A store at a place not known (`lost_store`) that adds `d` to an element (None: any other
    /// store): an array whose sum was known, or whose elements all were, keeps its sum.
    fn lost_increment(&mut self, left: &CExpr, d: Option<f64>) -> R<()> {
        let before = match d {
            Some(_) if self.prefix.is_none() => self.store_target(left).and_then(|(t, _)| self.total_of(t).map(|x| (t, x))),
            _ => None,
        };
        self.lost_store(left)?;
        match (before, d) {
            (Some((t, (sum, n))), Some(d)) => self.totals.insert(t, (sum + d * self.weight, n)),
            _ => {
                if let Some((t, _)) = self.store_target(left) {
                    self.totals.remove(&t);
                }
            }
        }
        Ok(())
    }

    /// The sum of array cell `t`'s elements and their number: its recorded total, else the sum
    /// of its elements when every one is a known number (at most SMALL_ARRAY of them).
    fn total_of(&self, t: usize) -> Option<(f64, i64)> {
        if let Some(x) = self.totals.get(&t) {
            return Some(*x);
        }
        if self.poisoned.contains(&t) || matches!(self.fill.get(&t), Some(Val::U(_))) {
            return None;
        }
        let Cell::Ar(els, _) = &self.heap[t] else { return None };
        if els.is_empty() || els.len() as i64 > SMALL_ARRAY {
            return None;
        }
        let mut sum = 0.0;
        for e in els {
            match &self.heap[*e] {
                Cell::V(v) => sum += v.num()?,
                _ => return None,
            }
        }
        Some((sum, els.len() as i64))
    }

    /// In a prefix run, at the end of iteration `k` of its loop: stop at the cap or, past
    /// PREFIX_MIN iterations, at the soft budget.
    fn prefix_step(&mut self, k: u64) -> bool {
        let steps = self.steps;
        let px = self.prefix.as_mut().unwrap();
        px.iter = k;
        if k >= px.cap || (k >= PREFIX_MIN && steps >= px.soft_step) {
            px.stopped = Some(k);
            return true;
        }
        false
    }

    /// A loop without communication that an earlier evaluation needed the stores of: a copy
    /// of the interpreter runs its first iterations exactly. Run to its end, the loop's state
    /// is exact; stopped after k of n iterations, arrays it accumulates into (cells met again
    /// and again) get their sums scaled by n/k (an estimate, noted), arrays it fills keep the
    /// elements stored and the rest become unknown, everything else it changed is unknown.
    fn prefix_run(&mut self, s: &'p Stmt, lb: usize) -> R<Option<Flow>> {
        if self.exact()
            || self.weight != 1.0
            || !self.sh.prefix_loops.contains(&lb)
            || self.sh.prefix_failed.borrow().contains(&lb)
        {
            return Ok(None);
        }
        let left = PREFIX_TOTAL_S - self.prefix_spent;
        let shape = match s {
            Stmt::For {
                init, cond, update, ..
            } => loop_shape(init.as_deref(), cond.as_ref(), update.as_ref()),
            _ => None,
        };
        let Some(n) = self.remaining(shape.as_ref()) else {
            return Ok(None);
        };
        if left <= 0.0 || n == 0 {
            return Ok(None);
        }
        let targets = self.store_targets(s);
        if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
            eprintln!(
                "eval: prefix targets at {}:{} (rank {}): {:?}",
                self.file,
                s.span().line_start,
                self.rank,
                targets.iter().map(|t| &t.1).collect::<Vec<_>>()
            );
        }
        let now = Instant::now();
        let soft = PREFIX_S.min(left);
        // The run is made in place, undone afterwards from a journal of the heap's old
        // content and a copy of everything else (cloning the heap of a program with large
        // arrays cost more than the run itself).
        let memory = self.take_memory();
        let snap = self.clone();
        self.give_memory(memory);
        self.begin_undo();
        self.journal = Some(Box::new(Journal {
            len: self.heap.len(),
            old: CellMap::default(),
        }));
        self.prefix = Some(Box::new(Prefix {
            stmt: s as *const Stmt as usize,
            depth: self.depth,
            cap: PREFIX_CAP,
            stopped: None,
            iter: 0,
            writes: CellMap::default(),
            soft_step: self.steps + PREFIX_STEPS,
            until_step: self.steps + 2 * PREFIX_STEPS,
            until: (now + std::time::Duration::from_secs_f64(soft)).min(self.sh.deadline),
        }));
        let mut outer = std::mem::take(&mut self.pending);
        let r = self.iterate(s, Some(lb), false, &mut NullSink);
        let spent = snap.prefix_spent + now.elapsed().as_secs_f64();
        let line = s.span().line_start;
        let px = self.prefix.take().expect("prefix state");
        let journal = self.journal.take().expect("prefix journal");
        if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
            let how = match (&r, px.stopped) {
                (Err(e), _) => format!(
                    "failed ({}:{}: {})",
                    e.file,
                    e.line,
                    e.what.trim_start_matches('\u{1}')
                ),
                (Ok(_), None) => "ran to its end".to_string(),
                (Ok(_), Some(k)) => format!("stopped after {k} of {n} iterations"),
            };
            eprintln!(
                "eval: prefix run of the loop at {}:{line} (rank {}): {how}, {} steps, {} cells changed, {:.3} s",
                self.file,
                self.rank,
                self.steps - snap.steps,
                journal.old.len(),
                now.elapsed().as_secs_f64()
            );
        }
        if let (Ok(_), None) = (&r, px.stopped) {
            // The loop ran to its end: the state (and the charges) are the loop's.
            self.commit_undo();
            outer.append(&mut self.pending);
            self.pending = outer;
            self.prefix_spent = spent;
            return r.map(Some);
        }
        // What the run left, read before it is undone: the old content of a cell is the
        // journal's where it changed.
        let stale: Vec<usize> = journal
            .old
            .iter()
            .filter(|(c, o)| match (o, &self.heap[**c]) {
                (Cell::V(a), Cell::V(b)) => a != b && !(a.is_unknown() && b.is_unknown()),
                _ => false,
            })
            .map(|(c, _)| *c)
            .collect();
        // Per target: the cells now (new elements beyond the old heap included), their
        // values, and the old ones.
        // Per target: its cells now (new ones beyond the old heap included) and the values of
        // those the run may have changed (stored into, or new).
        type After = (usize, Vec<(usize, usize, Val)>);
        let after: Vec<Option<After>> = targets
            .iter()
            .map(|(t, _)| match &self.heap[*t] {
                Cell::Ar(els, _) => {
                    let cand = els
                        .iter()
                        .enumerate()
                        .filter(|(_, &e)| e >= journal.len || journal.old.contains_key(&e))
                        .map(|(i, &e)| (i, e, cell_val(&self.heap[e])))
                        .collect();
                    Some((els.len(), cand))
                }
                _ => None,
            })
            .collect();
        let mut pending = std::mem::take(&mut self.pending);
        // Undo.
        let mut old = journal.old;
        for (c, cell) in old.drain() {
            self.heap[c] = cell;
        }
        self.heap.truncate(journal.len);
        self.undo();
        let memory = self.take_memory();
        *self = snap;
        self.give_memory(memory);
        self.prefix_spent = spent;
        self.pending = outer;
        match r {
            Err(e) if e.what.starts_with('\u{0}') => return Err(e),
            Err(_) => {
                self.sh.prefix_failed.borrow_mut().insert(lb);
                return Ok(None);
            }
            Ok(_) => {}
        }
        let k = px.stopped.expect("stopped");
        // Charges: the formula, else the prefix's scaled.
        match self.formula_charges(lb, Some(s)) {
            Some((out, arms, _, _)) => {
                self.note_arms(arms);
                self.pending.extend(out);
            }
            None => {
                pending.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
                let scale = n as f64 / k as f64;
                self.pending
                    .extend(merge(pending).into_iter().map(|(b, x)| (b, x * scale)));
            }
        }
        let here = format!("{}:{line}", self.file);
        let var_start = shape
            .as_ref()
            .and_then(|sh| self.lookup(&sh.var))
            .and_then(|c| self.get(c).int().map(|v| (c, v)));
        // Elements of the target arrays the prefix changed (or that were allocated for them:
        // a free cell may be one the prefix changed).
        let mut written = CellSet::default();
        for ((t, name), after) in targets.iter().zip(after) {
            self.touched(*t);
            let (Some((new_len, cand)), Cell::Ar(..)) = (after, &self.heap[*t]) else {
                if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
                    eprintln!("eval: prefix of {here}: `{name}` is not an array here");
                }
                continue;
            };
            // (The element list is taken out while it is rewritten; no journal is open.)
            let Cell::Ar(mut els, bulk) =
                std::mem::replace(&mut self.heap[*t], Cell::Ar(Vec::new(), false))
            else {
                unreachable!()
            };
            let never = self
                .fill
                .get(t)
                .cloned()
                .unwrap_or_else(|| Val::unknown("never set"));
            // The elements changed: (index, cell in the run, old value, new value).
            let changed: Vec<(usize, usize, Val, Val)> = cand
                .into_iter()
                .map(|(i, e, cur)| {
                    let old = els
                        .get(i)
                        .map(|&o| cell_val(&self.heap[o]))
                        .unwrap_or_else(|| never.clone());
                    (i, e, old, cur)
                })
                .filter(|(_, _, old, cur)| old != cur && !(old.is_unknown() && cur.is_unknown()))
                .collect();
            // Accumulation: of the stores into the array, few went to cells first stored in
            // the second half of the prefix (a histogram meets its cells again and again; a
            // loop filling an array meets new ones), and every change is numeric.
            let (mut ch2, mut new2) = (0u64, 0u64);
            for (_, e, _, _) in &changed {
                match px.writes.get(e) {
                    Some(&(first, stores)) => {
                        ch2 += stores;
                        if first * 2 >= k {
                            new2 += stores;
                        }
                    }
                    None => {
                        ch2 += 1;
                        new2 += 1;
                    }
                }
            }
            let accumulates = ch2 > 0
                && new2 * 10 <= ch2
                && changed
                    .iter()
                    .all(|(_, _, old, cur)| cur.num().is_some() && old.num().is_some());
            if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
                eprintln!("eval: prefix of {here} (rank {}): `{name}` {} elements, {} changed ({ch2} stores, {new2} into cells first stored in the second half), {}", self.rank, new_len, changed.len(), if accumulates { "sums scaled" } else { "stores kept" });
            }
            let scale = n as f64 / k as f64;
            let why: Rc<str> = Rc::from(
                format!("{name}: stored by the loop at {here} after the {k} iterations run")
                    .as_str(),
            );
            // Unchanged elements: as they were (a sum) or unknown (the rest of a fill).
            let unchanged = if accumulates {
                never.clone()
            } else {
                Val::U(why.clone())
            };
            if !accumulates {
                for &e in &els {
                    if matches!(&self.heap[e], Cell::V(o) if !o.is_unknown()) {
                        self.put(e, Cell::V(Val::U(why.clone())));
                    }
                }
            }
            while els.len() < new_len {
                let e = self.alloc(Cell::V(unchanged.clone()));
                written.insert(e);
                els.push(e);
            }
            // Integer sums are scaled by largest remainders, so that their total scales
            // exactly (a histogram of the first k keys becomes one of n keys: code that walks
            // it until n are counted finds them all).
            let int_scaled = if accumulates {
                scaled_counts(&changed, scale)
            } else {
                HashMap::new()
            };
            for (i, _, old, cur) in changed {
                let v = if !accumulates {
                    cur
                } else {
                    match (&old, &cur) {
                        (Val::I(a), Val::I(_)) => Val::I(a + int_scaled[&i]),
                        (a, b) => {
                            let (a, b) = (a.num().unwrap_or(0.0), b.num().unwrap_or(0.0));
                            Val::F(a + (b - a) * scale)
                        }
                    }
                };
                if matches!(self.heap[els[i]], Cell::V(_)) {
                    written.insert(els[i]);
                    self.put(els[i], Cell::V(v));
                }
            }
            self.put(*t, Cell::Ar(els, bulk));
            if accumulates {
                let note = format!(
                    "`{name}`: sums over the first {k} of {n} iterations of the loop at {here}, scaled to all {n} (an estimate from the program's own data)"
                );
                if !self.assumed.contains(&note) {
                    self.assumed.push(note);
                }
            }
        }
        // Whatever else the prefix changed is unknown.
        let why: Rc<str> = Rc::from(
            format!("changed by the loop at {here}, run for {k} of {n} iterations").as_str(),
        );
        for c in stale.into_iter().filter(|c| !written.contains(c)) {
            self.heap[c] = Cell::V(Val::U(why.clone()));
        }
        // The loop variable ends at its bound.
        if let (Some((c, v)), Some(Step::Add(st))) = (var_start, shape.as_ref().map(|sh| &sh.step))
        {
            self.put(c, Cell::V(Val::I(v + st * n as i64)));
        }
        self.rng_skipped(s);
        Ok(Some(Flow::Normal))
    }

    /// Every element of the arrays the statement stores into (through an index or a pointer)
    /// becomes unknown: a loop charged by formula never ran, so what it stored is not known
    /// (and values stored there before are stale).
    fn poison_arrays(&mut self, s: &'p Stmt, why: &str) {
        let why: Rc<str> = Rc::from(why);
        for (t, _) in self.store_targets(s) {
            self.poison_cells(t, &why);
        }
    }

    /// Does the loop store into small arrays or struct fields (state the rest of the program
    /// may read)? Stores into allocated (bulk) memory and plain variables do not count.
    fn writes_small_state(&mut self, s: &'p Stmt) -> bool {
        let roots = self.lvalues_of(s);
        roots.iter().any(|e| self.small_state(e))
    }

    /// The places statement `s` stores into other than plain names (`lvalues`), collected
    /// once per statement.
    fn lvalues_of(&self, s: &'p Stmt) -> Rc<Vec<&'p CExpr>> {
        let key = s as *const Stmt as usize;
        if let Some(v) = self.sh.lvalue_memo.borrow().get(&key) {
            return v.clone();
        }
        let mut roots = Vec::new();
        lvalues(s, &mut roots);
        let roots = Rc::new(roots);
        self.sh.lvalue_memo.borrow_mut().insert(key, roots.clone());
        roots
    }

    /// Is the place a store goes into a small array or a struct field?
    fn small_state(&mut self, mut e: &CExpr) -> bool {
        loop {
            match e {
                CExpr::Index { array, .. } => e = array,
                CExpr::Cast { value, .. } => e = value,
                CExpr::Field { .. } => return true,
                CExpr::Ident(n) => {
                    let Some(c) = self.lookup(n) else {
                        return false;
                    };
                    let target = match &self.heap[c] {
                        Cell::V(Val::P(t, _)) => *t,
                        Cell::V(Val::U(_)) => return self.maybe_array.contains_key(&c),
                        _ => c,
                    };
                    return matches!(self.heap[target], Cell::Ar(_, false) | Cell::St(_));
                }
                _ => return false,
            }
        }
    }

    /// Does every store of the loop into small state store a value computed from bulk data that
    /// is not known (a checksum over a grid the loops before charged by formula)? Run, the loop
    /// would end with those values unknown anyway, after walking every element (stencil3d's
    /// final sums at 64 ranks: 56,000 interpreted steps a rank, 1.5 s of a 2 s prediction).
    fn small_stores_unknown(&mut self, s: &Stmt) -> bool {
        // Names whose every assignment in the loop reads unknown bulk elements or such names.
        let mut assigns: Vec<(&str, &CExpr)> = Vec::new();
        statement_exprs(s, &mut |e| name_assigns(e, &mut assigns));
        stmt_decls(s, &mut assigns);
        let mut unknown: HashSet<String> = assigns.iter().map(|(n, _)| n.to_string()).collect();
        loop {
            let before = unknown.len();
            for (n, rhs) in &assigns {
                if unknown.contains(*n) && !self.reads_unknown(rhs, &unknown) {
                    unknown.remove(*n);
                }
            }
            if unknown.len() == before {
                break;
            }
        }
        let mut stores: Vec<(&CExpr, Option<&CExpr>)> = Vec::new();
        statement_exprs(s, &mut |e| element_stores(e, &mut stores));
        let mut any = false;
        for (place, value) in stores {
            if !self.small_state(place) {
                continue;
            }
            match value {
                Some(v) if self.reads_unknown(v, &unknown) => any = true,
                _ => return false,
            }
        }
        any
    }

    /// Does the expression read an element of bulk memory none of whose elements is known, or
    /// one of `names`?
    fn reads_unknown(&mut self, e: &CExpr, names: &HashSet<String>) -> bool {
        let mut bases: Vec<&CExpr> = Vec::new();
        let mut named = false;
        expr_visit(e, &mut |x| match x {
            CExpr::Ident(n) if names.contains(n) => named = true,
            CExpr::Index { array, .. } => bases.push(array),
            CExpr::Deref(p) => bases.push(p),
            _ => {}
        });
        named || bases.into_iter().any(|b| self.unknown_bulk(b))
    }

    /// Is the expression (an array or a pointer into one, `u`, `u + i`) bulk memory whose
    /// elements are all unknown?
    fn unknown_bulk(&mut self, mut e: &CExpr) -> bool {
        let c = loop {
            match e {
                CExpr::Index { array, .. } => e = array,
                CExpr::Cast { value, .. } => e = value,
                CExpr::Binary { op, left, .. } if op == "+" || op == "-" => e = left,
                CExpr::Ident(n) => break self.lookup(n),
                _ => break None,
            }
        };
        let Some(c) = c else { return false };
        let t = match &self.heap[c] {
            Cell::V(Val::P(t, _)) => *t,
            // A pointer not known: what it reads is not known either.
            Cell::V(Val::U(_)) => return true,
            _ => c,
        };
        let Cell::Ar(els, true) = &self.heap[t] else {
            return false;
        };
        self.fill.get(&t).is_some_and(Val::is_unknown)
            && els.iter().all(|x| matches!(&self.heap[*x], Cell::V(v) if v.is_unknown()))
    }

    fn iterate(
        &mut self,
        s: &'p Stmt,
        lb: Option<usize>,
        has_comm: bool,
        sink: &mut dyn Sink,
    ) -> R<Flow> {
        // In a sample run, the outermost loop that holds none of the arms is a producer.
        let producer = !has_comm
            && lb.is_some_and(|b| self.sample.as_ref().is_some_and(|sm| sm.producer.is_none()) && !self.holds_arms(b));
        if producer {
            let steps = self.steps;
            if let Some(sm) = self.sample.as_mut() {
                sm.producer = Some(Producer {
                    from_step: steps,
                    cut: false,
                    written: FastSet::default(),
                });
            }
        }
        let r = self.iterate_loop(s, lb, has_comm, sink);
        if producer {
            if let Some(sm) = self.sample.as_mut() {
                sm.producer = None;
            }
        }
        r
    }

    /// Whether the loop `b` holds (itself or in what it calls) an arm the sample run measures.
    fn holds_arms(&mut self, b: usize) -> bool {
        let Some(sm) = self.sample.as_ref() else { return false };
        if let Some(h) = sm.holds_arms.get(&b) {
            return *h;
        }
        let h = self.sh.prog.data_branches_under(b).iter().any(|a| sm.arms.contains(a));
        if let Some(sm) = self.sample.as_mut() {
            sm.holds_arms.insert(b, h);
        }
        h
    }

    /// In a sample run, a loop under a producer (or the producer itself) at an iteration's
    /// end: cut short once the producer ran SAMPLE_PRODUCER_STEPS statements. What the loop
    /// stores into becomes unknown but for the cells the producer wrote, and so do the scalars
    /// it writes.
    fn cut_producer(&mut self, body: &'p Stmt, var: Option<&str>, line: u32) -> bool {
        let steps = self.steps;
        let Some(pr) = self.sample.as_mut().and_then(|sm| sm.producer.as_mut()) else {
            return false;
        };
        if !pr.cut && steps.saturating_sub(pr.from_step) < SAMPLE_PRODUCER_STEPS {
            return false;
        }
        pr.cut = true;
        let written = std::mem::take(&mut pr.written);
        let why: Rc<str> = Rc::from(format!(
            "left by a sample run's loop at {}:{line}, cut short",
            self.file
        ));
        for (t, _) in self.store_targets(body) {
            self.poison_cells_except(t, &why, &written);
        }
        let mut names = written_idents(body);
        if let Some(v) = var {
            names.insert(v.to_string());
        }
        self.poison(&names, &why);
        if let Some(pr) = self.sample.as_mut().and_then(|sm| sm.producer.as_mut()) {
            pr.written = written;
        }
        true
    }

    /// Every element of array cell `t` (and of arrays in it) becomes unknown but those in
    /// `keep`.
    fn poison_cells_except(&mut self, t: usize, why: &Rc<str>, keep: &FastSet<usize>) {
        let Cell::Ar(els, _) = &self.heap[t] else {
            return;
        };
        for i in 0..els.len() {
            let e = match &self.heap[t] {
                Cell::Ar(els, _) if i < els.len() => els[i],
                _ => break,
            };
            if keep.contains(&e) {
                continue;
            }
            match &self.heap[e] {
                // (One already unknown keeps its own reason.)
                Cell::V(v) if !v.is_unknown() => self.put(e, Cell::V(Val::U(why.clone()))),
                Cell::Ar(..) => self.poison_cells_except(e, why, keep),
                _ => {}
            }
        }
        self.fill.insert(t, Val::U(why.clone()));
        self.totals.remove(&t);
    }

    fn iterate_loop(
        &mut self,
        s: &'p Stmt,
        lb: Option<usize>,
        has_comm: bool,
        sink: &mut dyn Sink,
    ) -> R<Flow> {
        let (cond, update, body, do_while) = match s {
            Stmt::For {
                cond, update, body, ..
            } => (cond.as_ref(), update.as_ref(), &**body, false),
            Stmt::While { cond, body, .. } => (Some(cond), None, &**body, false),
            Stmt::DoWhile { body, cond, .. } => (Some(cond), None, &**body, true),
            _ => return Ok(Flow::Normal),
        };
        let shape = match s {
            Stmt::For {
                init, cond, update, ..
            } => loop_shape(init.as_deref(), cond.as_ref(), update.as_ref()),
            _ => None,
        };
        let line = s.span().line_start;
        let written = written_idents(body);
        let var_in_body = shape.as_ref().is_some_and(|sh| mentions(body, &sh.var));
        let mut history: VecDeque<Vec<(usize, f64)>> = VecDeque::new();
        let mut snaps: VecDeque<Vec<(String, Val)>> = VecDeque::new();
        let mut sums: VecDeque<Vec<(usize, f64)>> = VecDeque::new();
        let mut k: u64 = 0;
        let mut folded_once = false;
        let mut traced_noted = false;
        loop {
            if !(do_while && k == 0) {
                if let Some(c) = cond {
                    self.line = line;
                    let v = self.eval_sink(c, sink)?;
                    match v.truth() {
                        Some(true) => {}
                        Some(false) => break,
                        None => {
                            let why = v.why();
                            if let Some(c) = self.sh.prog.model.clock_loops.iter().find(|c| c.line == line && c.file == self.file.as_ref()) {
                                return Err(self.err(format!(
                                    "the program times itself: the loop runs while a value read from a clock allows ({}, from {}); how often depends on the run's speed, which only a run shows (a traced run, instrumented, is slower than a real one)",
                                    c.reads, c.clock
                                )));
                            }
                            let Some(t) = lb.and_then(|b| self.sh.traced_trips.get(&b)).copied() else {
                                return Err(self.err(format!("loop condition depends on data ({why})")));
                            };
                            if !traced_noted {
                                traced_noted = true;
                                let note = format!(
                                    "{}:{}: loop condition depends on data ({why}): run {t:.0} times per entry, as in the traced run",
                                    self.file, line
                                );
                                if !self.assumed.contains(&note) {
                                    self.assumed.push(note);
                                }
                            }
                            if k as f64 >= t.round() {
                                break;
                            }
                        }
                    }
                }
            }
            // A loop with communication whose iterations do not read the loop variable:
            // record two iterations; alike ones fold into `loop K`.
            if has_comm && !var_in_body && !folded_once && k == 0 && !self.strict_comm && !self.sh.makes_comms(body) {
                if let Some(rest) = self.remaining(shape.as_ref()) {
                    if rest >= 3 {
                        folded_once = true;
                        if let Some(f) =
                            self.try_fold(body, lb, update, shape.as_ref(), rest, &written, sink)?
                        {
                            return Ok(f);
                        }
                        // Not alike: the two iterations ran for real (recorded and replayed).
                        k = 2;
                        continue;
                    }
                }
            }
            // One whose iterations read the loop variable only through `var % m` and
            // comparisons with bounds the body does not change: iterations a period of the
            // moduli apart are alike until the first comparison changes; two periods are
            // recorded and, alike, the periods before that iteration fold into `loop K`.
            if has_comm && var_in_body && !folded_once && k == 0 && !self.strict_comm && !self.sh.makes_comms(body) {
                folded_once = true;
                if let Some(plan) = shape.as_ref().and_then(|sh| self.periodic_plan(body, sh, &written)) {
                    k = self.try_fold_periods(body, lb, update, shape.as_ref(), plan, &written, sink)?;
                    continue;
                }
            }
            let start = self.pending.len();
            let before: Vec<(String, Val)> = if has_comm {
                Vec::new()
            } else {
                self.snapshot(&written)
            };
            let sums_before = self.sums_snapshot();
            self.charge(lb);
            let f = self.stmt(body, sink)?;
            match f {
                Flow::Break => break,
                Flow::Return(_) => return Ok(f),
                _ => {}
            }
            if let Some(u) = update {
                self.line = line;
                self.eval_sink(u, sink)?;
            }
            k += 1;
            if self.sample.as_ref().is_some_and(|sm| sm.producer.is_some())
                && self.cut_producer(body, shape.as_ref().map(|sh| sh.var.as_str()), line)
            {
                break;
            }
            if !has_comm {
                let Some(it) = self.pending.get(start..) else {
                    // Compute was flushed: something in the body wrote a trace action.
                    return Err(self.err(
                        "a loop taken for one without communication communicated (a routine the analysis does not know as communication); predict from a trace (--trace-ranks K)".to_string(),
                    ));
                };
                let mut it: Vec<(usize, f64)> = it.to_vec();
                it.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
                let merged = merge(it);
                history.push_back(merged);
                snaps.push_back(before);
                sums.push_back(sums_before);
                if history.len() > 48 {
                    history.pop_front();
                    snaps.pop_front();
                    sums.pop_front();
                }
                if self.prefix.as_ref().is_some_and(|px| {
                    px.stmt == s as *const Stmt as usize && px.depth == self.depth
                }) && self.prefix_step(k)
                {
                    break;
                }
                if k >= 48 && k % 16 == 0 && !self.exact() {
                    // A loop that stores into small arrays or structs runs to its end when
                    // that is short (its stores stay exact); extrapolated, they are unknown.
                    let writes = self.writes_small_state(body);
                    let now = self.snapshot(&written);
                    let series: Vec<&[(String, Val)]> = snaps
                        .iter()
                        .skip(snaps.len().saturating_sub(16))
                        .map(|v| v.as_slice())
                        .chain(std::iter::once(now.as_slice()))
                        .collect();
                    // Scalars that follow no trend (a sum over array elements) stay exact
                    // when the loop is short enough to run to its end.
                    let data = data_scalars(body);
                    let irregular = shape.as_ref().is_some_and(|sh| {
                        !self.irregular_scalars(&series, &sh.var).is_empty()
                            || now
                                .iter()
                                .any(|(n, v)| data.contains(n) && v.num().is_some())
                    });
                    let rest = self
                        .remaining(shape.as_ref())
                        .filter(|r| !(writes || irregular) || *r > EXACT_BELOW);
                    if let Some(rest) = rest {
                        if self.extrapolate(&history, rest) {
                            self.want_prefix(lb, body);
                            if writes {
                                self.poison_arrays(
                                    body,
                                    &format!(
                                        "stored by the loop at {}:{line}, extrapolated",
                                        self.file
                                    ),
                                );
                            }
                            self.rng_skipped(body);
                            let sh = shape.as_ref().unwrap();
                            self.advance(&series, rest, &sh.var, line, &data);
                            let now = self.sums_snapshot();
                            let sums: Vec<&[(usize, f64)]> = sums
                                .iter()
                                .skip(sums.len().saturating_sub(16))
                                .map(|v| v.as_slice())
                                .chain(std::iter::once(now.as_slice()))
                                .collect();
                            self.advance_sums(&sums, rest);
                            return Ok(Flow::Normal);
                        }
                    }
                }
            }
        }
        let _ = lb;
        Ok(Flow::Normal)
    }

    /// Iterations left of a counted loop (shape recognised, step and bound known now).
    fn remaining(&mut self, shape: Option<&crate::frontend::analyze::LoopShape>) -> Option<u64> {
        let sh = shape?;
        let v = self.get(self.lookup(&sh.var)?).int()?;
        let b = self.eval(&sh.bound).ok()?.int()?;
        let by = match &sh.step {
            Step::AddBy(x) => Some(self.eval(x).ok()?.int()?).filter(|s| *s > 0),
            _ => None,
        };
        let n = match (by, &sh.step) {
            (Some(s), _) => match sh.cmp.as_str() {
                "<" => (b - v + s - 1).div_euclid(s),
                "<=" => (b - v + s).div_euclid(s),
                _ => return None,
            },
            (None, &Step::Add(s)) if s > 0 => match sh.cmp.as_str() {
                "<" | "!=" => (b - v + s - 1).div_euclid(s),
                "<=" => (b - v + s).div_euclid(s),
                _ => return None,
            },
            (None, &Step::Add(s)) if s < 0 => {
                let s = -s;
                match sh.cmp.as_str() {
                    ">" | "!=" => (v - b + s - 1).div_euclid(s),
                    ">=" => (v - b + s).div_euclid(s),
                    _ => return None,
                }
            }
            _ => return None,
        };
        Some(n.max(0) as u64)
    }

    fn snapshot(&self, names: &HashSet<String>) -> Vec<(String, Val)> {
        let mut v: Vec<(String, Val)> = names
            .iter()
            .filter_map(|n| self.lookup(n).map(|c| (n.clone(), self.get(c))))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// After `rest` more iterations charged analytically: the loop variable at its final value,
    /// scalars that moved regularly over the recorded iterations (`series`: snapshots, oldest
    /// first, the last taken now) continue their trend (by the same step, or by steps that
    /// grow by the same amount), the rest (and the scalars in `data`, computed from array
    /// elements) are unknown.
    fn advance(
        &mut self,
        series: &[&[(String, Val)]],
        rest: u64,
        var: &str,
        line: u32,
        data: &HashSet<String>,
    ) {
        let Some(now) = series.last() else { return };
        for (n, v) in now.iter() {
            if n == var {
                continue;
            }
            let Some(c) = self.lookup(n) else { continue };
            let trend = if data.contains(n) {
                None
            } else {
                scalar_trend(series, n)
            };
            let nv = match (v, trend) {
                (Val::I(i), Some((d, dd))) => {
                    let r = rest as f64;
                    let x = *i as f64 + d * r + dd * r * (r + 1.0) / 2.0;
                    if x.abs() < 9.0e15 {
                        Val::I(x.round() as i64)
                    } else {
                        Val::unknown(format!("{n}: out of range after the loop at {}:{line}", self.file))
                    }
                }
                (Val::F(f), Some((d, dd))) => {
                    let r = rest as f64;
                    Val::F(f + d * r + dd * r * (r + 1.0) / 2.0)
                }
                _ => Val::unknown(format!("{n}: computed by the loop at {}:{line}", self.file)),
            };
            if matches!(self.heap[c], Cell::V(_)) {
                self.put(c, Cell::V(nv));
            }
        }
    }

    /// The known sums of arrays (`totals`), by cell.
    fn sums_snapshot(&self) -> Vec<(usize, f64)> {
        if self.totals.is_empty() {
            return Vec::new();
        }
        let mut v: Vec<(usize, f64)> = self.totals.iter().map(|(c, (x, _))| (*c, *x)).collect();
        v.sort_by_key(|x| x.0);
        v
    }

    /// After `rest` more iterations charged analytically: an array's sum that grew by the same
    /// amount at every recorded iteration (`series`, oldest first, the last taken now) goes
    /// on growing so; one that changed otherwise is no longer known.
    fn advance_sums(&mut self, series: &[&[(usize, f64)]], rest: u64) {
        let Some(now) = series.last() else { return };
        for (c, x) in now.iter() {
            let at = |snap: &[(usize, f64)]| snap.iter().find(|(d, _)| d == c).map(|(_, x)| *x);
            let vals: Option<Vec<f64>> = series.iter().map(|s| at(s)).collect();
            let step = vals.as_ref().and_then(|v| {
                let d = v.get(1)? - v.first()?;
                v.windows(2).all(|w| ((w[1] - w[0]) - d).abs() <= 1e-9 * d.abs().max(1.0)).then_some(d)
            });
            match (step, self.totals.get(c).copied()) {
                (Some(d), Some((_, n))) if d != 0.0 => self.totals.insert(*c, (x + d * rest as f64, n)),
                (Some(_), _) => {}
                (None, _) => self.totals.remove(c),
            }
        }
    }

    /// Scalars written by a loop that did not move regularly over the recorded iterations.
    fn irregular_scalars(&self, series: &[&[(String, Val)]], var: &str) -> Vec<String> {
        let Some(now) = series.last() else {
            return Vec::new();
        };
        now.iter()
            .filter(|(n, v)| n != var && v.num().is_some() && scalar_trend(series, n).is_none())
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Charges `rest` more iterations when the last 48 are regular (alike, or growing by the
    /// same amount per 16). Sets the loop variable afterwards through the caller.
    fn extrapolate(&mut self, history: &VecDeque<Vec<(usize, f64)>>, rest: u64) -> bool {
        if history.len() < 48 {
            return false;
        }
        let window = |k: usize| -> BTreeMap<usize, f64> {
            let mut m = BTreeMap::new();
            for it in history.iter().skip(k * 16).take(16) {
                for (b, n) in it {
                    *m.entry(*b).or_insert(0.0) += n;
                }
            }
            m
        };
        let (w1, w2, w3) = (window(0), window(1), window(2));
        let keys: std::collections::BTreeSet<usize> = w1
            .keys()
            .chain(w2.keys())
            .chain(w3.keys())
            .copied()
            .collect();
        let g = |m: &BTreeMap<usize, f64>, k: &usize| m.get(k).copied().unwrap_or(0.0);
        let linear = keys.iter().all(|k| {
            let (a, b, c) = (g(&w1, k), g(&w2, k), g(&w3, k));
            ((c - b) - (b - a)).abs() <= 1e-9 * (1.0 + c.abs())
        });
        if !linear {
            return false;
        }
        let m = (rest / 16) as f64;
        let r = (rest % 16) as f64;
        for k in &keys {
            let (b, c) = (g(&w2, k), g(&w3, k));
            let d = c - b;
            let total = m * c + d * m * (m + 1.0) / 2.0 + r / 16.0 * (c + (m + 1.0) * d);
            if total != 0.0 {
                self.pending.push((*k, total));
            }
        }
        // The loop variable ends where the loop would have left it.
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn try_fold(
        &mut self,
        body: &'p Stmt,
        lb: Option<usize>,
        update: Option<&'p CExpr>,
        shape: Option<&crate::frontend::analyze::LoopShape>,
        rest: u64,
        written: &HashSet<String>,
        sink: &mut dyn Sink,
    ) -> R<Option<Flow>> {
        self.flush(sink)?;
        let s0 = self.snapshot(written);
        let mut recs: Vec<Vec<Rec>> = Vec::new();
        let mut snaps = vec![s0];
        for _ in 0..2 {
            let mut rec = Recorder { recs: Vec::new() };
            self.charge(lb);
            let f = self.stmt(body, &mut rec)?;
            self.flush(&mut rec)?;
            if !matches!(f, Flow::Normal | Flow::Continue) {
                for r in &recs {
                    replay(r, sink)?;
                }
                replay(&rec.recs, sink)?;
                return Ok(Some(match f {
                    Flow::Break => Flow::Normal,
                    other => other,
                }));
            }
            if let Some(u) = update {
                self.eval_sink(u, sink)?;
            }
            recs.push(rec.recs);
            snaps.push(self.snapshot(written));
        }
        // Alike iterations, and the body's scalars evolve regularly.
        let alike = recs[0] == recs[1];
        if !alike {
            for r in &recs {
                replay(r, sink)?;
            }
            return Ok(None);
        }
        sink.begin_loop(rest)?;
        replay(&recs[0], sink)?;
        sink.end_loop()?;
        self.rng_skipped(body);
        let line = self.line;
        if let Some(sh) = shape {
            let _ = written;
            self.advance(&[&snaps[1], &snaps[2]], rest - 2, &sh.var, line, &HashSet::new());
            // The loop variable: rest iterations after the start.
            if let Some(c) = self.lookup(&sh.var) {
                if let (Some(v), Step::Add(st)) = (self.get(c).int(), &sh.step) {
                    self.put(c, Cell::V(Val::I(v + st * (rest as i64 - 2))));
                }
            }
        }
        Ok(Some(Flow::Normal))
    }

    /// The period and stretch of a loop whose body reads its variable (stepping by 1) only as
    /// `var + c` (c a constant) inside `% m` or compared with a bound, m and the bounds not
    /// written by the body: (period, iterations from now before any comparison can change),
    /// None otherwise or when folding would not pay (fewer than three periods).
    fn periodic_plan(&mut self, body: &'p Stmt, sh: &crate::frontend::analyze::LoopShape, written: &HashSet<String>) -> Option<(u64, u64)> {
        if !matches!(sh.step, Step::Add(1)) || mentions_any(&sh.bound, written) {
            return None;
        }
        let uses = var_uses(body, &sh.var)?;
        let now = self.get(self.lookup(&sh.var)?).int()?;
        let invariant = |e: &CExpr| !mentions_any(e, written) && !expr_any(e, &|x| matches!(x, CExpr::Call { .. } | CExpr::Assign { .. } | CExpr::Update { .. }));
        let mut period: u64 = 1;
        let mut stretch = self.remaining(Some(sh))?;
        for u in uses {
            match u {
                VarUse::Modulo(m) => {
                    if !invariant(m) {
                        return None;
                    }
                    let m = u64::try_from(self.eval(m).ok()?.int()?).ok().filter(|m| *m >= 1)?;
                    period = lcm(period, m);
                    if period > 4096 {
                        return None;
                    }
                }
                VarUse::Compare(offset, bound) => {
                    if !invariant(bound) {
                        return None;
                    }
                    // var + offset against the bound: the truth may change where var reaches
                    // bound - offset (or the iteration after).
                    let flip = self.eval(bound).ok()?.int()? - offset;
                    if flip >= now {
                        stretch = stretch.min(u64::try_from(flip - now).ok()?);
                    }
                }
            }
        }
        (stretch >= 3 * period).then_some((period, stretch))
    }

    /// Records two periods of `plan.0` iterations; alike, the whole periods within the
    /// stretch fold into one `loop` of one period's records, the scalars advanced by their
    /// trend per period and the loop variable by the iterations folded. Returns the
    /// iterations done (the loop goes on from there: what is left of the stretch and
    /// beyond it runs as usual).
    #[allow(clippy::too_many_arguments)]
    fn try_fold_periods(
        &mut self,
        body: &'p Stmt,
        lb: Option<usize>,
        update: Option<&'p CExpr>,
        shape: Option<&crate::frontend::analyze::LoopShape>,
        (period, stretch): (u64, u64),
        written: &HashSet<String>,
        sink: &mut dyn Sink,
    ) -> R<u64> {
        let loop_line = self.line;
        self.flush(sink)?;
        let mut recs: Vec<Vec<Rec>> = Vec::new();
        let mut snaps = vec![self.snapshot(written)];
        for _ in 0..2 {
            let mut rec = Recorder { recs: Vec::new() };
            for _ in 0..period {
                self.charge(lb);
                let f = self.stmt(body, &mut rec)?;
                if !matches!(f, Flow::Normal | Flow::Continue) {
                    // var_uses refuses bodies that leave the loop: not reached.
                    return Err(self.err("a loop folded by periods left early"));
                }
                if let Some(u) = update {
                    self.eval_sink(u, &mut rec)?;
                }
            }
            self.flush(&mut rec)?;
            recs.push(rec.recs);
            snaps.push(self.snapshot(written));
        }
        let periods = stretch / period;
        if recs[0] != recs[1] {
            for r in &recs {
                replay(r, sink)?;
            }
            return Ok(2 * period);
        }
        if std::env::var_os("MPICAST_EVAL_DEBUG").is_some() {
            eprintln!("eval: rank {}: loop at {}:{loop_line} folded by periods: {periods} of {period} iterations", self.rank, self.file);
        }
        sink.begin_loop(periods)?;
        replay(&recs[0], sink)?;
        sink.end_loop()?;
        self.rng_skipped(body);
        if let Some(sh) = shape {
            let line = self.line;
            self.advance(&[&snaps[1], &snaps[2]], periods - 2, &sh.var, line, &HashSet::new());
            if let Some(c) = self.lookup(&sh.var) {
                if let Some(v) = self.get(c).int() {
                    self.put(c, Cell::V(Val::I(v + ((periods - 2) * period) as i64)));
                }
            }
        }
        Ok(periods * period)
    }

    // ---- Expressions ----------------------------------------------------------------------

    fn eval(&mut self, e: &CExpr) -> R<Val> {
        let mut null = NullSink;
        self.eval_sink(e, &mut null)
    }

    fn place(&mut self, e: &CExpr, sink: &mut dyn Sink) -> R<Option<usize>> {
        Ok(match e {
            CExpr::Ident(n) => match self.lookup(n) {
                Some(c) => Some(c),
                None => {
                    // optind, optarg and other library globals appear when first written.
                    let c = self.alloc(Cell::V(Val::unknown(format!("{n} never set"))));
                    self.globals.insert(n.clone(), c);
                    Some(c)
                }
            },
            CExpr::Index { array, index, .. } => {
                let i = self.eval_sink(index, sink)?.int();
                let base = self.array_base(array, sink)?;
                match (base, i) {
                    (Some((c, off)), Some(i)) => {
                        self.touched(c);
                        self.elem(c, off + i)
                    }
                    _ => None,
                }
            }
            CExpr::Field { base, field, arrow } => {
                if *arrow {
                    match self.eval_sink(base, sink)? {
                        Val::P(c, off) => {
                            let e = self.elem(c, off);
                            e.map(|e| self.field(e, field))
                        }
                        _ => None,
                    }
                } else {
                    let p = self.place(base, sink)?;
                    p.map(|c| self.field(c, field))
                }
            }
            CExpr::Deref(inner) => match self.eval_sink(inner, sink)? {
                Val::P(c, off) => {
                    self.touched(c);
                    self.elem(c, off)
                }
                _ => None,
            },
            CExpr::Cast { value, .. } => self.place(value, sink)?,
            _ => None,
        })
    }

    /// Elements of array cell `c` not yet stored read as zero of `elem_ty` (scalars only).
    fn zero_fill(&mut self, c: usize, elem_ty: &CType) {
        if elem_ty.indirection == 0
            && self.struct_fields(elem_ty).is_none()
            && !matches!(elem_ty.base, crate::frontend::ir::Base::Unknown)
        {
            let z = convert(Val::I(0), elem_ty);
            self.fill.insert(c, z);
        }
    }

    /// A declared array (or pointer) never set, used as one: an array from now on.
    fn as_array(&mut self, c: usize) {
        if self.maybe_array.contains_key(&c) && matches!(self.heap[c], Cell::V(Val::U(_))) {
            self.put(c, Cell::Ar(Vec::new(), false));
        }
    }

    /// The cell and offset an indexed expression starts from.
    fn array_base(&mut self, array: &CExpr, sink: &mut dyn Sink) -> R<Option<(usize, i64)>> {
        if let Some(c) = self.place(array, sink)? {
            self.as_array(c);
            // A row of an array of arrays (`r[0]` of `r[0][1]`) never set: an array from now on
            // (were it a pointer never set, indexing through it would be undefined).
            if matches!(array, CExpr::Index { .. }) && matches!(self.heap[c], Cell::V(Val::U(_))) {
                self.put(c, Cell::Ar(Vec::new(), false));
            }
            return Ok(Some(match &self.heap[c] {
                Cell::V(Val::P(t, o)) => (*t, *o),
                _ => (c, 0),
            }));
        }
        Ok(match self.eval_sink(array, sink)? {
            Val::P(c, o) => Some((c, o)),
            _ => None,
        })
    }

    fn read_ident(&mut self, n: &str) -> R<Val> {
        if let Some(v) = self.sh.defines.get(n) {
            return Ok(num_val(*v));
        }
        if let Some(t) = self.sh.text_defines.get(n) {
            return Ok(self.text_value(t));
        }
        if let Some(c) = self.lookup(n) {
            self.as_array(c);
            return Ok(self.get(c));
        }
        Ok(self.constant(n))
    }

    /// A -D value that is not a number: a name the interpreter knows (MPI_COMM_WORLD, a
    /// macro), else a string.
    fn text_value(&mut self, t: &str) -> Val {
        match self.constant(t) {
            Val::Name(_) => Val::S(Rc::from(t), 0),
            v => v,
        }
    }

    fn constant(&mut self, n: &str) -> Val {
        match n {
            "MPI_COMM_WORLD" => return Val::Comm(COMM_WORLD),
            "MPI_COMM_SELF" => return Val::Comm(COMM_SELF),
            "MPI_COMM_NULL" | "MPI_GROUP_NULL" => return Val::I(-1),
            "MPI_GROUP_EMPTY" => return Val::Comm(GROUP_EMPTY),
            // No data: comparisons with it are decided; a message typed with it is empty.
            "MPI_DATATYPE_NULL" => return Val::Dt(0),
            "optind" => {
                let c = self.alloc(Cell::V(Val::I(1)));
                self.globals.insert("optind".into(), c);
                return Val::I(1);
            }
            "no_argument" => return Val::I(0),
            "required_argument" => return Val::I(1),
            "optional_argument" => return Val::I(2),
            "EOF" => return Val::I(-1),
            "errno" => return Val::I(0),
            "stdout" | "stderr" => return Val::Name(Rc::from(n)),
            "NULL" => return Val::I(0),
            "MPI_SUCCESS" => return Val::I(0),
            "MPI_IN_PLACE" => return Val::Name(Rc::from("MPI_IN_PLACE")),
            "INT_MAX" => return Val::I(i32::MAX as i64),
            "INT_MIN" => return Val::I(i32::MIN as i64),
            "RAND_MAX" => return Val::I(i32::MAX as i64),
            "M_PI" => return Val::F(std::f64::consts::PI),
            _ => {}
        }
        if let Some(sz) = crate::frontend::mpi::datatype_size(n) {
            return Val::Dt(sz as u64);
        }
        if let Some((_, v)) = crate::frontend::mpi::CONSTANTS
            .iter()
            .find(|(k, _)| *k == n)
        {
            return Val::I(*v as i64);
        }
        if let Some(e) = self.sh.consts.get(n).copied() {
            if self.depth < MAX_CALL_DEPTH {
                self.depth += 1;
                let v = self.eval(e);
                self.depth -= 1;
                if let Ok(v) = v {
                    return v;
                }
            }
        }
        if let Some(e) = self.enums.clone().get(n) {
            let mut null = NullSink;
            let e = e.clone();
            // Enumerator expressions are small; evaluate a leaked-free copy.
            let v = self.eval_owned(&e, &mut null);
            return v;
        }
        Val::Name(Rc::from(n))
    }

    fn eval_owned(&mut self, e: &CExpr, _sink: &mut dyn Sink) -> Val {
        match e {
            CExpr::Int(i) => Val::I(*i as i64),
            CExpr::Ident(n) => {
                let n = n.clone();
                self.constant(&n)
            }
            CExpr::Binary { op, left, right } => {
                let (a, b) = (self.eval_owned(left, _sink), self.eval_owned(right, _sink));
                binary(op, a, b)
            }
            CExpr::Unary { op, arg } => unary(op, self.eval_owned(arg, _sink)),
            _ => Val::unknown("enumerator value"),
        }
    }

    fn eval_sink(&mut self, e: &CExpr, sink: &mut dyn Sink) -> R<Val> {
        Ok(match e {
            CExpr::Ident(n) => self.read_ident(n)?,
            CExpr::Int(i) => Val::I(*i as i64),
            CExpr::Float { value, .. } => Val::F(*value),
            CExpr::Str(s) => Val::S(Rc::from(s.as_str()), 0),
            CExpr::Binary { op, left, right } => match op.as_bytes() {
                [b'&', b'&'] => {
                    let a = self.eval_sink(left, sink)?;
                    match a.truth() {
                        Some(false) => Val::I(0),
                        Some(true) => bool_val(self.eval_sink(right, sink)?),
                        None => match self.eval_sink(right, sink)?.truth() {
                            Some(false) => Val::I(0),
                            _ => a,
                        },
                    }
                }
                [b'|', b'|'] => {
                    let a = self.eval_sink(left, sink)?;
                    match a.truth() {
                        Some(true) => Val::I(1),
                        Some(false) => bool_val(self.eval_sink(right, sink)?),
                        None => match self.eval_sink(right, sink)?.truth() {
                            Some(true) => Val::I(1),
                            _ => a,
                        },
                    }
                }
                [b'>', b'>'] if self.unsigned64_expr(left) => {
                    let a = self.eval_sink(left, sink)?;
                    let b = self.eval_sink(right, sink)?;
                    match (a, b) {
                        (Val::I(x), Val::I(y)) => Val::I((x as u64).wrapping_shr(y as u32) as i64),
                        (a, b) => binary(op, a, b),
                    }
                }
                _ => {
                    let a = self.eval_sink(left, sink)?;
                    let b = self.eval_sink(right, sink)?;
                    binary(op, a, b)
                }
            },
            CExpr::Unary { op, arg } => {
                let a = self.eval_sink(arg, sink)?;
                unary(op, a)
            }
            CExpr::Update { op, arg, prefix } => {
                let old = self.eval_sink(arg, sink)?;
                let new = binary(
                    if op.contains("++") { "+" } else { "-" },
                    old.clone(),
                    Val::I(1),
                );
                if let Some(c) = self.place(arg, sink)? {
                    self.set(c, new.clone());
                } else {
                    let d = if op.contains("++") { 1.0 } else { -1.0 };
                    self.lost_increment(arg, Some(d))?;
                }
                if *prefix {
                    new
                } else {
                    old
                }
            }
            CExpr::Assign { op, left, right } => {
                let v = self.eval_sink(right, sink)?;
                let v = if op == "=" {
                    v
                } else {
                    let old = self.eval_sink(left, sink)?;
                    binary(op.trim_end_matches('='), old, v)
                };
                if let Some(c) = self.place(left, sink)? {
                    return Ok(self.store(c, v));
                }
                if !matches!(&**left, CExpr::Ident(_)) {
                    let d = match (op.as_str(), v.num()) {
                        ("+=", Some(x)) => Some(x),
                        ("-=", Some(x)) => Some(-x),
                        _ => None,
                    };
                    self.lost_increment(left, d)?;
                }
                v
            }
            CExpr::Call { func, args, line, .. } => {
                self.line = *line;
                self.call(func, args, sink)?
            }
            CExpr::Index { array, index, .. } => {
                let i = self.eval_sink(index, sink)?;
                let base = self.eval_sink(array, sink)?;
                match (base, i.int()) {
                    (Val::S(s, off), Some(i)) => {
                        Val::I(s.as_bytes().get(off + i as usize).copied().unwrap_or(0) as i64)
                    }
                    (Val::P(c, off), Some(i)) => match self.elem(c, off + i) {
                        Some(e) => self.get(e),
                        None => Val::unknown(format!(
                            "{}: bulk data",
                            crate::frontend::analyze::cexpr_text(e)
                        )),
                    },
                    (b, None) if !b.is_unknown() => Val::unknown(format!(
                        "index {} depends on data",
                        crate::frontend::analyze::cexpr_text(index)
                    )),
                    (Val::U(w), _) => Val::U(w),
                    _ => Val::unknown(format!(
                        "{}: not known",
                        crate::frontend::analyze::cexpr_text(e)
                    )),
                }
            }
            CExpr::Deref(inner) if matches!(self.eval_sink(inner, sink)?, Val::S(..)) => {
                match self.eval_sink(inner, sink)? {
                    Val::S(s, o) => Val::I(s.as_bytes().get(o).copied().unwrap_or(0) as i64),
                    _ => Val::I(0),
                }
            }
            CExpr::Field { .. } | CExpr::Deref(_) => match self.place(e, sink)? {
                Some(c) => {
                    // An array field read before anything is stored in it decays to a pointer.
                    self.as_array(c);
                    self.get(c)
                }
                None => Val::unknown(format!(
                    "{}: not known before running",
                    crate::frontend::analyze::cexpr_text(e)
                )),
            },
            CExpr::AddrOf(inner) => match self.place(inner, sink)? {
                Some(c) => Val::P(c, 0),
                None => match &**inner {
                    CExpr::Index { array, index, .. } => {
                        let i = self.eval_sink(index, sink)?.int();
                        match (self.eval_sink(array, sink)?, i) {
                            (Val::P(c, o), Some(i)) => Val::P(c, o + i),
                            _ => Val::unknown("address of bulk data"),
                        }
                    }
                    _ => Val::unknown("address of bulk data"),
                },
            },
            CExpr::Cast { ty, value } => {
                let v = self.eval_sink(value, sink)?;
                convert(v, ty)
            }
            CExpr::Cond {
                cond,
                then,
                otherwise,
            } => {
                let c = self.eval_sink(cond, sink)?;
                match c.truth() {
                    Some(true) => self.eval_sink(then, sink)?,
                    Some(false) => self.eval_sink(otherwise, sink)?,
                    None => c,
                }
            }
            CExpr::Sizeof { ty, value } => {
                if let Some(b) = value.as_deref().and_then(|v| self.array_sizeof(v)) {
                    return Ok(Val::I(b));
                }
                let t = match (ty, value) {
                    (Some(t), _) => Some(t.clone()),
                    (None, Some(v)) => self.static_type(v),
                    _ => None,
                };
                match t {
                    Some(t) => Val::I(self.type_size(&t)),
                    None => Val::unknown("sizeof of an expression"),
                }
            }
            CExpr::Comma(a, b) => {
                self.eval_sink(a, sink)?;
                self.eval_sink(b, sink)?
            }
            CExpr::InitList(_) => Val::unknown("initialiser list"),
            CExpr::Unknown(t) => Val::unknown(format!("`{t}` is not modelled")),
        })
    }

    /// Records (or forgets, for a cell reused by another variable) an array's declared
    /// dimensions, evaluated now.
    fn note_dims(&mut self, c: usize, d: &VarDecl) {
        if self.is_unsigned64(&d.ty) {
            self.unsigned64.insert(c, ());
        } else if !self.unsigned64.is_empty() {
            self.unsigned64.remove(&c);
        }
        match self.narrow_int(&d.ty).filter(|_| d.dims.is_empty()) {
            Some(t) => {
                self.narrow.insert(c, t);
            }
            None if !self.narrow.is_empty() => {
                self.narrow.remove(&c);
            }
            None => {}
        }
        if d.dims.is_empty() {
            if !self.decl_dims.is_empty() {
                self.decl_dims.remove(&c);
            }
            return;
        }
        let mut dims = Vec::with_capacity(d.dims.len());
        for e in &d.dims {
            match self.eval(e).ok().and_then(|v| v.int()) {
                Some(n) if n >= 0 => dims.push(n),
                _ => {
                    self.decl_dims.remove(&c);
                    return;
                }
            }
        }
        let elem = CType { indirection: d.ty.indirection.saturating_sub(dims.len() as u32), ..d.ty.clone() };
        let b = self.type_size(&elem);
        self.decl_dims.insert(c, (dims, b));
    }

    /// `sizeof a` and `sizeof a[i]...` of an array declared with its dimensions.
    fn array_sizeof(&self, e: &CExpr) -> Option<i64> {
        let mut levels = 0;
        let mut cur = e;
        while let CExpr::Index { array, .. } = cur {
            levels += 1;
            cur = array;
        }
        let CExpr::Ident(n) = cur else { return None };
        let c = self.lookup(n)?;
        let (dims, b) = self.decl_dims.get(&c)?;
        (levels <= dims.len()).then(|| dims[levels..].iter().product::<i64>() * b)
    }

    /// An integer type of at most 32 bits, through typedefs: the type `convert` narrows to.
    fn narrow_int(&self, t: &CType) -> Option<CType> {
        let mut t = t;
        for _ in 0..16 {
            if t.indirection > 0 {
                return None;
            }
            match &t.base {
                Base::Int if t.width <= 4 => return Some(t.clone()),
                Base::Named(n) => match n.as_str() {
                    "int8_t" | "uint8_t" | "int16_t" | "uint16_t" | "int32_t" | "uint32_t" | "unsigned" => return Some(t.clone()),
                    _ => t = self.sh.typedefs.get(n.as_str())?,
                },
                _ => return None,
            }
        }
        None
    }

    /// An unsigned 64-bit integer type, through typedefs.
    fn is_unsigned64(&self, t: &CType) -> bool {
        let mut t = t;
        for _ in 0..16 {
            if t.indirection > 0 {
                return false;
            }
            match &t.base {
                Base::Int => return t.unsigned && t.width == 8,
                Base::Named(n) => match n.as_str() {
                    "uint64_t" | "size_t" | "uintptr_t" | "uintmax_t" | "u_int64_t" => return true,
                    _ => match self.sh.typedefs.get(n.as_str()) {
                        Some(td) => t = td,
                        None => return false,
                    },
                },
                _ => return false,
            }
        }
        false
    }

    /// Whether an integer expression has an unsigned 64-bit type: a variable declared so, what
    /// a pointer to one points at, a cast to one, or arithmetic on one.
    fn unsigned64_expr(&self, e: &CExpr) -> bool {
        match e {
            CExpr::Cast { ty, .. } => self.is_unsigned64(ty),
            CExpr::Ident(n) => self.lookup(n).is_some_and(|c| self.unsigned64.contains_key(&c)),
            CExpr::Deref(p) => match &**p {
                CExpr::Ident(n) => match self.lookup(n).map(|c| self.get(c)) {
                    Some(Val::P(c, 0)) => self.unsigned64.contains_key(&c),
                    _ => false,
                },
                _ => false,
            },
            CExpr::Binary { op, left, right } if matches!(op.as_str(), "+" | "-" | "*" | "&" | "|" | "^" | "/" | "%") => {
                self.unsigned64_expr(left) || self.unsigned64_expr(right)
            }
            CExpr::Binary { op, left, .. } if matches!(op.as_str(), "<<" | ">>") => self.unsigned64_expr(left),
            _ => false,
        }
    }

    fn static_type(&self, e: &CExpr) -> Option<CType> {
        match e {
            // `sizeof(name)` of a typedef (the parser cannot tell it from a variable).
            CExpr::Ident(n) if self.sh.typedefs.contains_key(n.as_str()) => {
                Some(CType::new(Base::Named(n.clone())))
            }
            CExpr::Ident(_) => None,
            CExpr::Cast { ty, .. } => Some(ty.clone()),
            _ => None,
        }
    }

    fn type_size(&self, t: &CType) -> i64 {
        self.layout(t, 0).0
    }

    /// Size and alignment of a type as the x86-64 ABI lays it out (a struct's fields in order,
    /// each at its alignment, the whole rounded up to the largest); array fields, whose lengths
    /// the analysis does not keep, count as pointers.
    fn layout(&self, t: &CType, depth: u32) -> (i64, i64) {
        if t.indirection > 0 {
            return (8, 8);
        }
        let scalar = |n: i64| (n, n);
        match &t.base {
            Base::Int if t.width > 0 => scalar(i64::from(t.width)),
            Base::Int | Base::Float => scalar(4),
            Base::Double => scalar(8),
            Base::Named(n) => match n.as_str() {
                "char" | "int8_t" | "uint8_t" | "bool" | "_Bool" => scalar(1),
                "short" | "int16_t" | "uint16_t" => scalar(2),
                "int32_t" | "uint32_t" | "unsigned" => scalar(4),
                "long" | "size_t" | "ssize_t" | "int64_t" | "uint64_t" | "MPI_Aint" | "MPI_Offset" => scalar(8),
                "long double" => (16, 16),
                _ => match self.sh.typedefs.get(n.as_str()) {
                    Some(t) if depth < 16 => self.layout(t, depth + 1),
                    _ => scalar(8),
                },
            },
            Base::Struct(n) => match self.sh.field_types.get(n.as_str()).zip(self.sh.structs.get(n.as_str())) {
                Some((types, order)) if depth < 16 && !order.is_empty() => {
                    let (mut size, mut align) = (0i64, 1i64);
                    for f in order {
                        let (fs, fa) = types.get(f.as_str()).map_or((8, 8), |ft| self.layout(ft, depth + 1));
                        size = (size + fa - 1) / fa * fa + fs;
                        align = align.max(fa);
                    }
                    ((size + align - 1) / align * align, align)
                }
                _ => scalar(8),
            },
            _ => scalar(8),
        }
    }

    // ---- Calls ----------------------------------------------------------------------------

    fn call(&mut self, func: &str, args: &[CExpr], sink: &mut dyn Sink) -> R<Val> {
        if let Some(f) = self.sh.funcs.get(func).copied() {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(self.eval_sink(a, sink)?);
            }
            return self.call_user(f, vals, sink);
        }
        if func.starts_with("MPI_") || func.starts_with("P2P") {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(self.eval_sink(a, sink)?);
            }
            return self.mpi(func, args, vals, sink);
        }
        let mut vals = Vec::with_capacity(args.len());
        for a in args {
            vals.push(self.eval_sink(a, sink)?);
        }
        // Zeroed memory holds zeros of its element type (sizeof's), so that a double stored
        // there later is not truncated as if into an int.
        if matches!(func, "calloc" | "memset") {
            let at = if func == "calloc" { 1 } else { 2 };
            self.zero_float = args
                .get(at)
                .and_then(sizeof_type)
                .is_some_and(|t| self.is_floating(&t));
        }
        if matches!(func, "memcpy" | "memmove") {
            let count = args.get(2).and_then(|n| self.elements_in(n));
            self.copy_elements(vals.first(), vals.get(1), count);
            return Ok(vals.first().cloned().unwrap_or(Val::I(0)));
        }
        if func == "qsort" {
            if let Some(cmp) = args.get(3).and_then(function_named).and_then(|f| self.sh.funcs.get(f).copied()) {
                self.qsort(cmp, &vals, sink)?;
                return Ok(Val::I(0));
            }
        }
        self.libc(func, vals)
    }

    /// `qsort(base, n, size, cmp)` with the program's comparator: glibc's merge sort, the
    /// comparator called (and charged) at every comparison it makes, the elements sorted. On
    /// elements not all known (or more than SORT_MAX), one call charged as many times as a
    /// merge sort of random data compares, and the array's order unknown.
    fn qsort(&mut self, cmp: &'p Function, vals: &[Val], sink: &mut dyn Sink) -> R<()> {
        let n = vals.get(1).and_then(|x| x.int()).unwrap_or(0);
        let base = vals.first().cloned();
        if n <= 1 {
            return Ok(());
        }
        let known = if n <= SORT_MAX { self.read_buf(base.as_ref(), n) } else { None };
        let known = known.filter(|v| v.len() as i64 == n && v.iter().all(|x| !x.is_unknown()));
        let (a, b) = (self.array_of(&[Val::I(0)]), self.array_of(&[Val::I(0)]));
        let Some(mut elems) = known else {
            let nf = n as f64;
            let calls = (nf * nf.log2() - 1.25 * nf).max(nf - 1.0);
            let note = format!(
                "{}:{}: qsort of {n} elements not known before running: its comparator called {calls:.0} times, as a merge sort of random data compares (sorted data: about {:.0})",
                self.file,
                self.line,
                (nf / 2.0 * nf.log2()).max(nf - 1.0)
            );
            if !self.assumed.contains(&note) {
                self.assumed.push(note);
            }
            let w = self.weight;
            self.weight = w * calls;
            let r = match base.as_ref() {
                Some(p @ Val::P(..)) => self.call_user(cmp, vec![p.clone(), offset(p, 1)], sink),
                _ => self.call_user(cmp, vec![Val::P(a, 0), Val::P(b, 0)], sink),
            };
            self.weight = w;
            r?;
            if let Some(Val::P(c, _)) = base {
                let why: Rc<str> = Rc::from(format!("sorted by qsort at {}:{}", self.file, self.line));
                self.poison_cells(c, &why);
            }
            return Ok(());
        };
        let mut tmp = elems.clone();
        let mut unsure = false;
        self.merge_sort(cmp, &mut elems, &mut tmp, (a, b), &mut unsure, sink)?;
        self.write_buf(base.as_ref(), &elems);
        if unsure {
            if let Some(Val::P(c, _)) = base {
                let why: Rc<str> = Rc::from(format!("sorted by qsort at {}:{} on values the comparator could not order", self.file, self.line));
                self.poison_cells(c, &why);
            }
        }
        Ok(())
    }

    /// glibc's msort_with_tmp: halves sorted, then merged, the first half's element taken while
    /// the comparator says it is not greater.
    fn merge_sort(&mut self, cmp: &'p Function, v: &mut [Val], tmp: &mut [Val], ab: (usize, usize), unsure: &mut bool, sink: &mut dyn Sink) -> R<()> {
        let n = v.len();
        if n <= 1 {
            return Ok(());
        }
        let n1 = n / 2;
        {
            let (l, r) = v.split_at_mut(n1);
            let (tl, tr) = tmp.split_at_mut(n1);
            self.merge_sort(cmp, l, tl, ab, unsure, sink)?;
            self.merge_sort(cmp, r, tr, ab, unsure, sink)?;
        }
        let (mut i, mut j, mut k) = (0, n1, 0);
        while i < n1 && j < n {
            self.put_elem(ab.0, v[i].clone());
            self.put_elem(ab.1, v[j].clone());
            let r = self.call_user(cmp, vec![Val::P(ab.0, 0), Val::P(ab.1, 0)], sink)?;
            let first = match r.int() {
                Some(x) => x <= 0,
                None => {
                    *unsure = true;
                    true
                }
            };
            if first {
                tmp[k] = v[i].clone();
                i += 1;
            } else {
                tmp[k] = v[j].clone();
                j += 1;
            }
            k += 1;
        }
        while i < n1 {
            tmp[k] = v[i].clone();
            i += 1;
            k += 1;
        }
        // (What is left of the second half is already in place.)
        v[..k].clone_from_slice(&tmp[..k]);
        Ok(())
    }

    /// Stores `x` as the only element of the array `arr` (see `array_of`).
    fn put_elem(&mut self, arr: usize, x: Val) {
        if let Cell::Ar(cells, _) = &self.heap[arr] {
            if let Some(&e) = cells.first() {
                self.put(e, Cell::V(x));
            }
        }
    }

    fn is_floating(&self, t: &CType) -> bool {
        if t.indirection > 0 {
            return false;
        }
        match &t.base {
            Base::Float | Base::Double => true,
            Base::Named(n) => self
                .sh
                .typedefs
                .get(n.as_str())
                .is_some_and(|t| self.is_floating(t)),
            _ => false,
        }
    }

    fn zero(&self) -> Val {
        if self.zero_float {
            Val::F(0.0)
        } else {
            Val::I(0)
        }
    }

    /// Elements a byte count `n * sizeof(T)` (or `sizeof(T) * n`) stands for: n.
    fn elements_in(&mut self, bytes: &CExpr) -> Option<i64> {
        match bytes {
            CExpr::Binary { op, left, right } if op == "*" => {
                let (n, _) = match (&**left, &**right) {
                    (n, CExpr::Sizeof { .. }) | (CExpr::Sizeof { .. }, n) => (n, ()),
                    _ => return None,
                };
                self.eval(n).ok()?.int()
            }
            CExpr::Sizeof { .. } => Some(1),
            _ => None,
        }
    }

    /// memcpy on the element model: `count` elements from `src` to `dst` (each element's cell
    /// copied, structs field by field); an unknown count leaves `dst`'s elements unknown.
    fn copy_elements(&mut self, dst: Option<&Val>, src: Option<&Val>, count: Option<i64>) {
        let Some(Val::P(dc, doff)) = dst.cloned() else {
            return;
        };
        self.touched(dc);
        match (src.cloned(), count) {
            (Some(Val::P(sc, soff)), Some(n)) if n >= 0 && n <= SMALL_ARRAY => {
                let vals: Vec<Option<Cell>> = (0..n)
                    .map(|k| self.elem(sc, soff + k).map(|e| self.heap[e].clone()))
                    .collect();
                for (k, v) in vals.into_iter().enumerate() {
                    let Some(e) = self.elem(dc, doff + k as i64) else {
                        break;
                    };
                    let cell = match v {
                        Some(Cell::V(v)) => Cell::V(v),
                        Some(Cell::St(_)) | Some(Cell::Ar(..)) => {
                            // An aggregate element: a copy of it.
                            let src = self.elem(sc, soff + k as i64).unwrap_or(e);
                            let c = self.copy_cell(src);
                            self.heap[c].clone()
                        }
                        None => Cell::V(Val::unknown("copied from bulk data")),
                    };
                    self.put(e, cell);
                }
            }
            _ => {
                if let Cell::Ar(els, _) = self.heap[dc].clone() {
                    for el in els.into_iter().skip(doff.max(0) as usize) {
                        if matches!(self.heap[el], Cell::V(_)) {
                            self.put(el, Cell::V(Val::unknown("written by memcpy")));
                        }
                    }
                }
            }
        }
    }

    /// Writes `text` and a terminating NUL into the char array at `p` (sprintf, strcpy).
    fn write_text(&mut self, p: Option<&Val>, text: &str) {
        let Some(Val::P(c, o)) = p.cloned() else {
            return;
        };
        self.touched(c);
        for (k, b) in text.bytes().chain(std::iter::once(0)).enumerate() {
            let Some(e) = self.elem(c, o + k as i64) else {
                return;
            };
            self.put(e, Cell::V(Val::I(b as i64)));
        }
    }

    /// printf-style formatting of `vals` (strings read from char arrays).
    fn format_vals(&self, fmt: &str, vals: &[Val]) -> String {
        let mut rest = Vec::new();
        for v in vals {
            rest.push(match v {
                Val::S(..) | Val::P(..) => match self.text_arg(Some(v)) {
                    Some(t) => Val::S(Rc::from(t.as_str()), 0),
                    None => v.clone(),
                },
                other => other.clone(),
            });
        }
        format_c(fmt, &rest)
    }

    fn text_arg(&self, v: Option<&Val>) -> Option<String> {
        match v? {
            Val::S(..) => v?.text(),
            Val::P(c, o) => {
                // A char array holding a string: its elements.
                let mut s = String::new();
                let mut k = *o;
                while let Cell::Ar(els, _) = &self.heap[*c] {
                    let Some(e) = els.get(k as usize) else { break };
                    match self.get(*e) {
                        Val::I(0) => break,
                        Val::I(x) => s.push(x as u8 as char),
                        Val::S(t, off) if k == *o => {
                            return Some(t.get(off..).unwrap_or("").to_string())
                        }
                        _ => return None,
                    }
                    k += 1;
                }
                Some(s)
            }
            _ => None,
        }
    }

    fn write_ptr(&mut self, p: Option<&Val>, v: Val) {
        if let Some(Val::P(c, o)) = p {
            if let Some(e) = self.elem(*c, *o) {
                self.set(e, v);
            }
        }
    }

    fn libc(&mut self, func: &str, vals: Vec<Val>) -> R<Val> {
        let num = |k: usize| vals.get(k).and_then(|v| v.num());
        let f1 = |g: fn(f64) -> f64| match num(0) {
            Some(x) => Val::F(g(x)),
            None => vals.first().cloned().unwrap_or(Val::unknown("no argument")),
        };
        Ok(match func {
            "atoi" | "atol" | "atoll" | "strtol" | "strtoll" | "strtoul" | "strtoull" => {
                match self.text_arg(vals.first()) {
                    Some(t) => {
                        let base = if func.starts_with("strto") {
                            num(2).unwrap_or(10.0) as u32
                        } else {
                            10
                        };
                        let (v, used) = parse_int(&t, base);
                        if func.starts_with("strto") {
                            if let (Some(Val::P(..)), Some(Val::S(s, off))) =
                                (vals.get(1), vals.first())
                            {
                                let p = vals.get(1).cloned();
                                self.write_ptr(p.as_ref(), Val::S(s.clone(), off + used));
                            }
                        }
                        Val::I(v)
                    }
                    None => vals
                        .first()
                        .filter(|v| v.is_unknown())
                        .cloned()
                        .unwrap_or(Val::unknown(format!("{func} of a string not known"))),
                }
            }
            "atof" | "strtod" | "strtof" => match self.text_arg(vals.first()) {
                Some(t) => {
                    let (v, used) = parse_float(&t);
                    if let (Some(Val::P(..)), Some(Val::S(s, off))) = (vals.get(1), vals.first()) {
                        let p = vals.get(1).cloned();
                        self.write_ptr(p.as_ref(), Val::S(s.clone(), off + used));
                    }
                    Val::F(v)
                }
                None => Val::unknown(format!("{func} of a string not known")),
            },
            "abs" | "labs" | "llabs" => match vals.first() {
                Some(Val::I(i)) => Val::I(i.abs()),
                Some(v) => v.clone(),
                None => Val::unknown("abs"),
            },
            "fabs" => f1(f64::abs),
            "floor" => f1(f64::floor),
            "ceil" => f1(f64::ceil),
            "sqrt" => f1(f64::sqrt),
            "cbrt" => f1(f64::cbrt),
            "log" => f1(f64::ln),
            "log2" => f1(f64::log2),
            "log10" => f1(f64::log10),
            "exp" => f1(f64::exp),
            "round" => f1(f64::round),
            "trunc" => f1(f64::trunc),
            "sin" => f1(f64::sin),
            "cos" => f1(f64::cos),
            "tan" => f1(f64::tan),
            "asin" => f1(f64::asin),
            "acos" => f1(f64::acos),
            "atan" => f1(f64::atan),
            "sinh" => f1(f64::sinh),
            "cosh" => f1(f64::cosh),
            "tanh" => f1(f64::tanh),
            "exp2" => f1(f64::exp2),
            "log1p" => f1(f64::ln_1p),
            "expm1" => f1(f64::exp_m1),
            "rint" | "nearbyint" => f1(|x| {
                // Round half to even (the default rounding mode).
                let r = x.round();
                if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
                    r - x.signum()
                } else {
                    r
                }
            }),
            "pow" | "fmod" | "atan2" | "hypot" | "copysign" | "ldexp" => match (num(0), num(1)) {
                (Some(a), Some(b)) => Val::F(match func {
                    "pow" => a.powf(b),
                    // C's fmod keeps the sign of the dividend, as Rust's % does.
                    "fmod" => a % b,
                    "atan2" => a.atan2(b),
                    "hypot" => a.hypot(b),
                    "copysign" => a.copysign(b),
                    _ => a * 2f64.powi(b as i32),
                }),
                _ => Val::unknown(format!("{func} of a value not known")),
            },
            "min" | "max" | "MIN" | "MAX" | "fmin" | "fmax" | "imin" | "imax" => {
                let (a, b) = (
                    vals.first().cloned().unwrap_or(Val::I(0)),
                    vals.get(1).cloned().unwrap_or(Val::I(0)),
                );
                let lt = binary("<", a.clone(), b.clone());
                match lt.truth() {
                    Some(t) => {
                        if t == func.to_lowercase().ends_with("min") {
                            a
                        } else {
                            b
                        }
                    }
                    None => lt,
                }
            }
            "strcmp" | "strncmp" | "strcasecmp" => {
                match (self.text_arg(vals.first()), self.text_arg(vals.get(1))) {
                    (Some(mut a), Some(mut b)) => {
                        if func == "strncmp" {
                            let n = num(2).unwrap_or(0.0) as usize;
                            a = a.chars().take(n).collect();
                            b = b.chars().take(n).collect();
                        }
                        if func == "strcasecmp" {
                            a = a.to_lowercase();
                            b = b.to_lowercase();
                        }
                        Val::I(match a.cmp(&b) {
                            std::cmp::Ordering::Less => -1,
                            std::cmp::Ordering::Equal => 0,
                            std::cmp::Ordering::Greater => 1,
                        })
                    }
                    _ => Val::unknown("strcmp of a string not known"),
                }
            }
            "strlen" => match self.text_arg(vals.first()) {
                Some(a) => Val::I(a.len() as i64),
                None => Val::unknown("strlen of a string not known"),
            },
            "sscanf" => {
                let (Some(text), Some(fmt)) =
                    (self.text_arg(vals.first()), self.text_arg(vals.get(1)))
                else {
                    return Ok(Val::unknown("sscanf of a string not known"));
                };
                let got = scan(&text, &fmt);
                let n = got.len();
                for (k, v) in got.into_iter().enumerate() {
                    let p = vals.get(2 + k).cloned();
                    self.write_ptr(p.as_ref(), v);
                }
                Val::I(n as i64)
            }
            "printf" | "fprintf" => {
                let skip = usize::from(func == "fprintf");
                if skip == 1 && !matches!(vals.first(), Some(Val::Name(n)) if &**n == "stdout") {
                    return Ok(Val::I(0));
                }
                if let Some(fmt) = self.text_arg(vals.get(skip)) {
                    let text = self.format_vals(&fmt, &vals[skip + 1..]);
                    self.partial_line.push_str(&text);
                    while let Some(k) = self.partial_line.find('\n') {
                        let line: String = self.partial_line.drain(..=k).collect();
                        self.push_line(line.trim_end_matches('\n').to_string());
                    }
                }
                Val::I(0)
            }
            "sprintf" | "snprintf" => {
                let at = if func == "snprintf" { 2 } else { 1 };
                match self.text_arg(vals.get(at)) {
                    Some(fmt) => {
                        let mut text = self.format_vals(&fmt, &vals[(at + 1).min(vals.len())..]);
                        let full = text.len() as i64;
                        // snprintf's bound (when known: `sizeof buf` may not be).
                        if let Some(cap) = num(1).filter(|_| func == "snprintf") {
                            let cap = cap.max(0.0) as usize;
                            text.truncate(cap.saturating_sub(1));
                        }
                        let p = vals.first().cloned();
                        self.write_text(p.as_ref(), &text);
                        Val::I(full)
                    }
                    None => {
                        let p = vals.first().cloned();
                        self.copy_elements(p.as_ref(), None, None);
                        Val::unknown(format!("{func} of a format not known"))
                    }
                }
            }
            "strcpy" | "strncpy" | "strcat" | "strncat" => {
                let p = vals.first().cloned();
                match self.text_arg(vals.get(1)) {
                    Some(mut t) => {
                        if func.starts_with("strn") {
                            t = t
                                .chars()
                                .take(num(2).unwrap_or(0.0).max(0.0) as usize)
                                .collect();
                        }
                        if func.ends_with("cat") {
                            t = self.text_arg(p.as_ref()).unwrap_or_default() + &t;
                        }
                        self.write_text(p.as_ref(), &t);
                    }
                    None => self.copy_elements(p.as_ref(), None, None),
                }
                p.unwrap_or(Val::I(0))
            }
            "strdup" | "strndup" => match self.text_arg(vals.first()) {
                Some(mut t) => {
                    if func == "strndup" {
                        t = t
                            .chars()
                            .take(num(1).unwrap_or(0.0).max(0.0) as usize)
                            .collect();
                    }
                    Val::S(Rc::from(t.as_str()), 0)
                }
                None => Val::unknown(format!("{func} of a string not known")),
            },
            "strstr" | "strchr" | "strrchr" => {
                let hay = self.text_arg(vals.first());
                let found = match (func, &hay) {
                    ("strstr", Some(h)) => self.text_arg(vals.get(1)).map(|n| h.find(n.as_str())),
                    (_, Some(h)) => vals.get(1).and_then(|v| v.int()).map(|c| {
                        let c = c as u8 as char;
                        if func == "strchr" {
                            h.find(c)
                        } else {
                            h.rfind(c)
                        }
                    }),
                    _ => None,
                };
                match (found, vals.first()) {
                    (Some(None), _) => Val::I(0),
                    (Some(Some(k)), Some(Val::S(s, o))) => Val::S(s.clone(), o + k),
                    (Some(Some(k)), Some(Val::P(c, o))) => Val::P(*c, o + k as i64),
                    _ => Val::unknown(format!("{func} of a string not known")),
                }
            }
            "puts" => {
                if let Some(t) = self.text_arg(vals.first()) {
                    self.push_line(t);
                }
                Val::I(0)
            }
            "getopt" | "getopt_long" | "getopt_long_only" => self.getopt(func, &vals),
            "malloc" | "realloc" => {
                let c = self.alloc(Cell::Ar(Vec::new(), true));
                Val::P(c, 0)
            }
            // calloc's memory is zeroed: elements read before a store are 0.
            "calloc" => {
                let n = num(0).unwrap_or(0.0).max(0.0) as i64;
                let mut els = Vec::new();
                if n <= SMALL_ARRAY {
                    let z = self.zero();
                    for _ in 0..n {
                        els.push(self.alloc(Cell::V(z.clone())));
                    }
                }
                let c = self.alloc(Cell::Ar(els, true));
                Val::P(c, 0)
            }
            // The environment the prediction runs in stands for the run's (a variable that is
            // not set is a null pointer).
            "getenv" => match self
                .text_arg(vals.first())
                .and_then(|name| std::env::var(name.as_str()).ok())
            {
                Some(v) => Val::S(Rc::from(v.as_str()), 0),
                None if self.text_arg(vals.first()).is_some() => Val::I(0),
                None => Val::unknown("getenv of a name not known"),
            },
            "exit" | "abort" => {
                return Err(Box::new(Unresolved {
                    file: self.file.to_string(),
                    line: self.line,
                    what: "\u{0}exit".into(),
                }))
            }
            // Under a branch on data the call may not happen: the sequence is lost from there.
            "rand" | "random" if self.weight == 1.0 && self.rng.is_some() => {
                Val::I(self.rng.as_mut().map_or(0, GlibcRandom::next))
            }
            "rand" | "random" => {
                self.rng = None;
                Val::unknown(format!(
                    "{func}() after a call whose place in the sequence is not known"
                ))
            }
            "srand" | "srandom" => {
                self.rng = match vals.first().and_then(|v| v.int()) {
                    Some(seed) if self.weight == 1.0 => Some(GlibcRandom::new(seed as u32)),
                    _ => None,
                };
                Val::I(0)
            }
            "drand48" | "clock" | "time" | "gettimeofday" | "omp_get_wtime" => {
                Val::unknown(format!("{func}() is known only at run time"))
            }
            "memset" => {
                // memset(p, 0, n): zeroes; another byte leaves the elements unknown.
                let p = vals.first().cloned();
                if let (Some(Val::P(c, o)), Some(0)) = (&p, vals.get(1).and_then(|v| v.int())) {
                    self.touched(*c);
                    let z = self.zero();
                    if let Cell::Ar(els, _) = self.heap[*c].clone() {
                        for el in els.into_iter().skip((*o).max(0) as usize) {
                            if matches!(self.heap[el], Cell::V(_)) {
                                self.put(el, Cell::V(z.clone()));
                            }
                        }
                    }
                } else {
                    self.copy_elements(p.as_ref(), None, None);
                }
                p.unwrap_or(Val::I(0))
            }
            "free" | "srand48" | "fflush" | "assert" | "fclose" => Val::I(0),
            _ => {
                // A routine without a body here, given a communicator: a helper defined outside
                // the analysed sources (a test harness's header) may communicate; say so.
                if vals.iter().any(|v| matches!(v, Val::Comm(_))) {
                    let note = format!(
                        "{}:{}: {func} takes a communicator but is defined outside the analysed sources: communication inside it is not predicted (put its header beside the sources to have it analysed)",
                        self.file, self.line
                    );
                    if !self.assumed.contains(&note) {
                        self.assumed.push(note);
                    }
                }
                // A library routine: what it writes through pointers is not known.
                for v in &vals {
                    if let Val::P(c, o) = v {
                        self.touched(*c);
                        if let Some(e) = self.elem(*c, *o) {
                            if matches!(self.heap[e], Cell::V(_)) {
                                self.put(e, Cell::V(Val::unknown(format!("written by {func}"))));
                            }
                        }
                    }
                }
                Val::unknown(format!("result of {func}"))
            }
        })
    }

    fn global_cell(&mut self, name: &str, init: Val) -> usize {
        match self.globals.get(name) {
            Some(c) => *c,
            None => {
                let c = self.alloc(Cell::V(init));
                self.globals.insert(name.to_string(), c);
                c
            }
        }
    }

    fn getopt(&mut self, func: &str, vals: &[Val]) -> Val {
        let argc = vals.first().and_then(|v| v.int()).unwrap_or(0);
        let argv = match vals.get(1) {
            Some(Val::P(c, o)) => (*c, *o),
            _ => return Val::unknown("getopt without argv"),
        };
        let opts = self.text_arg(vals.get(2)).unwrap_or_default();
        let optind_c = self.global_cell("optind", Val::I(1));
        let optarg_c = self.global_cell("optarg", Val::I(0));
        let mut optind = self.get(optind_c).int().unwrap_or(1);
        let arg = |me: &mut Self, k: i64| -> Option<String> {
            let e = me.elem(argv.0, argv.1 + k)?;
            me.get(e).text()
        };
        if optind >= argc {
            return Val::I(-1);
        }
        let Some(cur) = arg(self, optind) else {
            return Val::I(-1);
        };
        if self.next_char == 0 {
            if cur == "--" {
                self.set(optind_c, Val::I(optind + 1));
                return Val::I(-1);
            }
            if !cur.starts_with('-') || cur == "-" {
                return Val::I(-1);
            }
            let long = func != "getopt"
                && (cur.starts_with("--")
                    || (func == "getopt_long_only" && !cur.starts_with("--")));
            if long {
                let body = cur.trim_start_matches('-');
                let (name, value) = match body.split_once('=') {
                    Some((n, v)) => (n.to_string(), Some(v.to_string())),
                    None => (body.to_string(), None),
                };
                optind += 1;
                let Some(Val::P(lc, lo)) = vals.get(3).cloned() else {
                    return Val::I('?' as i64);
                };
                for k in 0..256 {
                    let Some(e) = self.elem(lc, lo + k) else {
                        break;
                    };
                    let nc = self.field(e, "name");
                    let Some(oname) = self.get(nc).text() else {
                        break;
                    };
                    if oname != name {
                        continue;
                    }
                    let ha = self.field(e, "has_arg");
                    let has_arg = self.get(ha).int().unwrap_or(0);
                    if has_arg >= 1 {
                        let v = match value {
                            Some(v) => Some(v),
                            None if has_arg == 1 => {
                                let v = arg(self, optind);
                                optind += 1;
                                v
                            }
                            None => None,
                        };
                        let ov = v
                            .map(|v| Val::S(Rc::from(v.as_str()), 0))
                            .unwrap_or(Val::I(0));
                        self.set(optarg_c, ov);
                    }
                    self.set(optind_c, Val::I(optind));
                    if let Some(p) = vals.get(4).cloned() {
                        self.write_ptr(Some(&p), Val::I(k));
                    }
                    let fc = self.field(e, "flag");
                    let vc = self.field(e, "val");
                    let val = self.get(vc);
                    return match self.get(fc) {
                        Val::P(c, o) => {
                            self.write_ptr(Some(&Val::P(c, o)), val);
                            Val::I(0)
                        }
                        _ => val,
                    };
                }
                self.set(optind_c, Val::I(optind));
                return Val::I('?' as i64);
            }
            self.next_char = 1;
        }
        let bytes = cur.as_bytes();
        let c = bytes.get(self.next_char).copied().unwrap_or(0) as char;
        self.next_char += 1;
        let at_end = self.next_char >= bytes.len();
        let pos = opts.find(c).filter(|_| c != ':');
        let Some(pos) = pos else {
            if at_end {
                self.next_char = 0;
                self.set(optind_c, Val::I(optind + 1));
            }
            return Val::I('?' as i64);
        };
        let takes = opts.as_bytes().get(pos + 1) == Some(&b':');
        if takes {
            let v = if !at_end {
                Some(cur[self.next_char..].to_string())
            } else {
                optind += 1;
                arg(self, optind)
            };
            self.next_char = 0;
            self.set(optind_c, Val::I(optind + 1));
            let ov = v
                .map(|v| Val::S(Rc::from(v.as_str()), 0))
                .unwrap_or(Val::I(0));
            self.set(optarg_c, ov);
        } else if at_end {
            self.next_char = 0;
            self.set(optind_c, Val::I(optind + 1));
        }
        Val::I(c as i64)
    }

    // ---- MPI ------------------------------------------------------------------------------

    fn comm_id(&self, v: Option<&Val>, what: &str) -> R<u32> {
        match v {
            Some(Val::Comm(id)) if self.comms.contains_key(id) => Ok(*id),
            None => Ok(COMM_WORLD),
            Some(other) => Err(self.err(format!(
                "{what}: communicator not known before running ({})",
                other.why()
            ))),
        }
    }

    fn my_rank(&self, comm: u32) -> u32 {
        if comm == COMM_WORLD {
            return self.rank;
        }
        self.comms
            .get(&comm)
            .and_then(|m| m.iter().position(|r| *r == self.rank))
            .unwrap_or(0) as u32
    }

    fn comm_size(&self, comm: u32) -> u32 {
        self.comms.get(&comm).map_or(self.size, |m| m.len() as u32)
    }

    fn need_int(&self, v: Option<&Val>, call: &str, what: &str, text: Option<&CExpr>) -> R<i64> {
        match v.and_then(|v| v.int()) {
            Some(x) => Ok(x),
            None => {
                let t = text
                    .map(crate::frontend::analyze::cexpr_text)
                    .unwrap_or_default();
                let why = v.map(|v| v.why()).unwrap_or_else(|| "missing".into());
                Err(self.err(format!(
                    "{call}: {what} `{t}` is not known before running ({why})"
                )))
            }
        }
    }

    fn dt_bytes(&self, v: Option<&Val>, call: &str, text: Option<&CExpr>) -> R<u64> {
        match v {
            Some(Val::Dt(b) | Val::Dv(b, ..)) => Ok(*b),
            Some(Val::I(b)) if *b > 0 => Ok(*b as u64),
            _ => {
                let t = text
                    .map(crate::frontend::analyze::cexpr_text)
                    .unwrap_or_default();
                Err(self.err(format!(
                    "{call}: datatype `{t}` is not known before running"
                )))
            }
        }
    }

    /// Values in a buffer: `count` scalars from a pointer, when few and all cells exist.
    fn read_buf(&mut self, v: Option<&Val>, count: i64) -> Option<Vec<Val>> {
        let Some(Val::P(c, o)) = v else { return None };
        if count > SMALL_MESSAGE || count < 0 {
            return None;
        }
        // Elements in memory order: an array of arrays (`int r[2][3]`) gives its rows' elements.
        let mut out = Vec::new();
        let mut k = 0;
        while (out.len() as i64) < count {
            let e = self.elem(*c, o + k)?;
            self.leaves(e, count as usize, &mut out)?;
            k += 1;
        }
        Some(out)
    }

    /// `n` integers from a buffer (none when `n` is 0, whatever the pointer); None when one is
    /// not known.
    fn read_ints(&mut self, v: Option<&Val>, n: i64) -> Option<Vec<i64>> {
        if n <= 0 {
            return Some(Vec::new());
        }
        self.read_buf(v, n).and_then(|l| l.iter().map(Val::int).collect())
    }

    /// Appends the values of cell `e` (an array's in order, nested ones flattened) to `out`
    /// until it holds `max`; None where a cell holds no value.
    fn leaves(&mut self, e: usize, max: usize, out: &mut Vec<Val>) -> Option<()> {
        match &self.heap[e] {
            Cell::V(v) => {
                out.push(v.clone());
                Some(())
            }
            Cell::Ar(els, _) => {
                let n = els.len();
                for j in 0..n {
                    if out.len() >= max {
                        break;
                    }
                    let x = self.elem(e, j as i64)?;
                    self.leaves(x, max, out)?;
                }
                Some(())
            }
            _ => None,
        }
    }

    fn write_buf(&mut self, v: Option<&Val>, vals: &[Val]) {
        self.write_buf_with(v, vals.len(), |k| &vals[k]);
    }

    /// Writes `n` values into the buffer `v` points to, the k-th `value(k)`. An element that
    /// already holds its value (a halo received every iteration) is left alone: nothing to
    /// journal.
    fn write_buf_with<'v>(&mut self, v: Option<&Val>, n: usize, value: impl Fn(usize) -> &'v Val) {
        let Some(Val::P(c, o)) = v else { return };
        self.touched(*c);
        // Elements not made yet are made at once, up to what an array keeps (one growth, not
        // one per element: a worker's received rows of a matrix).
        if let (Cell::Ar(ids, _), true) = (&self.heap[*c], *o >= 0 && n > 0) {
            let last = o + n as i64 - 1;
            let keeps = if self.exact() { SAMPLE_ARRAY } else { SMALL_ARRAY };
            if last >= ids.len() as i64 && ids.len() as i64 <= keeps - 1 {
                self.elem(*c, last.min(keeps - 1));
            }
        }
        // Elements that exist: compared where they are (one pass over the indices).
        let mut done = 0;
        if let Cell::Ar(ids, _) = &self.heap[*c] {
            if *o >= 0 && (*o as usize) < ids.len() {
                let o = *o as usize;
                done = n.min(ids.len() - o);
                let heap = &self.heap;
                let changed: Vec<(usize, usize)> = ids[o..o + done]
                    .iter()
                    .enumerate()
                    .filter(|(k, e)| matches!(&heap[**e], Cell::V(old) if !same_val(old, value(*k))))
                    .map(|(k, e)| (k, *e))
                    .collect();
                for (k, e) in changed {
                    self.put(e, Cell::V(value(k).clone()));
                }
            }
        }
        for k in done..n {
            let off = o + k as i64;
            match self.elem(*c, off) {
                Some(e) => {
                    let x = value(k);
                    if matches!(&self.heap[e], Cell::V(old) if !same_val(old, x)) {
                        self.put(e, Cell::V(x.clone()));
                    }
                }
                // Past the elements an array keeps (or past a scalar): so are the rest.
                None if off >= 0 => break,
                None => {}
            }
        }
    }

    /// A receive buffer's elements become unknown (a long message: its whole array).
    fn unknown_buf(&mut self, v: Option<&Val>, count: i64, why: &str) {
        if count > SMALL_MESSAGE {
            if let Some(Val::P(c, _)) = v {
                let why: Rc<str> = Rc::from(why);
                self.poison_cells(*c, &why);
            }
            return;
        }
        let x = Val::unknown(why);
        self.write_buf_with(v, count.clamp(0, SMALL_MESSAGE) as usize, |_| &x);
    }

    fn coll_key(&mut self, kind: &str, comm: u32) -> String {
        let seq = self.coll_seq.entry((kind.to_string(), comm)).or_insert(0);
        *seq += 1;
        format!("{kind}/{comm}/{seq}")
    }

    /// Contributions of every member of `comm` to collective `key`: this rank's given, the
    /// others' from this pass or the previous one.
    /// Every rank's contribution (`n` values from the send buffer, argument 0, or from the
    /// receive buffer, argument 1, under MPI_IN_PLACE) to a reduction `what` on `comm`, in
    /// rank order; None while a rank evaluated later has not contributed. A buffer whose
    /// values are not known contributes unknowns (`out` of them at most, when in place).
    fn reduced_parts(&mut self, what: &str, v: &[Val], comm: u32, n: i64, out: i64) -> Option<Vec<Vec<Val>>> {
        let send = if is_in_place(v.first()) { v.get(1) } else { v.first() };
        let mine = self
            .read_buf(send, n)
            .unwrap_or_else(|| vec![Val::unknown("reduction of bulk data"); n.max(out).clamp(0, SMALL_MESSAGE) as usize]);
        let key = self.coll_key(what, comm);
        self.contribute(&key, comm, Some(mine))
    }

    /// A reduction by the user's function `f` (`void f(void *in, void *inout, int *len,
    /// MPI_Datatype *type)`, `inout = in op inout`): this rank calls it `calls` times (charged);
    /// where it `wants` the result and every rank's part is known, that result is the parts
    /// combined in rank order (the calls beyond this rank's own are not charged).
    #[allow(clippy::too_many_arguments)]
    fn user_reduction(
        &mut self,
        f: &str,
        parts: Option<Vec<Vec<Val>>>,
        mine: &[Val],
        len: i64,
        dt: Val,
        calls: usize,
        wants: bool,
        sink: &mut dyn Sink,
    ) -> R<Option<Vec<Val>>> {
        let Some(func) = self.sh.funcs.get(f).copied() else { return Ok(None) };
        let w = self.weight;
        let len_cell = self.alloc(Cell::V(Val::I(len)));
        let dt_cell = self.alloc(Cell::V(dt));
        let mut call = |me: &mut Self, input: &[Val], inout: &[Val], charged: bool| -> R<Vec<Val>> {
            let a = me.array_of(input);
            let b = me.array_of(inout);
            me.weight = if charged { w } else { 0.0 };
            let r = me.call_user(func, vec![Val::P(a, 0), Val::P(b, 0), Val::P(len_cell, 0), Val::P(dt_cell, 0)], sink);
            me.weight = w;
            r?;
            Ok(me.read_buf(Some(&Val::P(b, 0)), inout.len() as i64).unwrap_or_else(|| vec![Val::unknown("reduced by the user's operation"); inout.len()]))
        };
        match parts.filter(|_| wants) {
            Some(parts) if !parts.is_empty() => {
                let mut acc = parts[parts.len() - 1].clone();
                for (k, p) in parts[..parts.len() - 1].iter().rev().enumerate() {
                    acc = call(self, p, &acc, k < calls)?;
                }
                for _ in parts.len().saturating_sub(1)..calls {
                    call(self, mine, mine, true)?;
                }
                Ok(Some(acc))
            }
            _ => {
                for _ in 0..calls {
                    call(self, mine, mine, true)?;
                }
                Ok(None)
            }
        }
    }

    /// A new array holding `vals` (an argument the evaluation passes to the user's function).
    fn array_of(&mut self, vals: &[Val]) -> usize {
        let cells: Vec<usize> = vals.iter().map(|x| self.alloc(Cell::V(x.clone()))).collect();
        self.alloc(Cell::Ar(cells, false))
    }

    fn contribute(
        &mut self,
        key: &str,
        comm: u32,
        mine: Option<Vec<Val>>,
    ) -> Option<Vec<Vec<Val>>> {
        self.contribute_with(key, comm, mine, |all| all.iter().map(|v| (*v).clone()).collect())
    }

    /// `contribute` handing the members' contributions to `f` in place: a reduction over 1,024
    /// ranks reads them rather than copying them for every rank (jacobi2d's residual, 49
    /// allreduces at 1,024 ranks, copied a million small vectors each).
    fn contribute_with<T>(
        &mut self,
        key: &str,
        comm: u32,
        mine: Option<Vec<Val>>,
        f: impl FnOnce(&[&Vec<Val>]) -> T,
    ) -> Option<T> {
        let me = self.my_rank(comm);
        let n = self.comm_size(comm);
        let mut mail = self.sh.mail.borrow_mut();
        let entry = mail.coll.entry(key.to_string()).or_default();
        let mut changed = false;
        if let Some(m) = &mine {
            changed = entry.get(&me) != Some(m);
            entry.insert(me, m.clone());
        }
        let mut all: Vec<&Vec<Val>> = Vec::with_capacity(n as usize);
        let mut stood_in = false;
        // Every member's there (keys 0..n in order): read them in one walk.
        let complete = entry.complete(n as usize);
        for r in 0..if complete { 0 } else { n } {
            match (entry.get(&r), &mine) {
                (Some(v), _) => all.push(v),
                // A member evaluated later that never got here in an earlier pass: this rank's
                // own contribution stands in for it (most collectives are symmetric), and
                // another pass replaces it with the member's own where they differ.
                (None, Some(m)) => {
                    stood_in = true;
                    all.push(m);
                }
                (None, None) => {
                    mail.changed |= changed;
                    drop(mail);
                    self.missed = true;
                    return None;
                }
            }
        }
        if complete {
            all.extend(entry.values());
        }
        let out = f(&all);
        mail.changed |= changed;
        drop(mail);
        if let (true, Some(m)) = (stood_in, mine) {
            self.missed_colls.push((key.to_string(), n as usize, m));
        }
        Some(out)
    }

    /// A new group of this rank's with `members` (world ranks, in order).
    fn new_group(&mut self, members: Vec<u32>) -> Val {
        if members.is_empty() {
            return Val::Comm(GROUP_EMPTY);
        }
        let id = self.next_group;
        self.next_group += 1;
        self.comms.insert(id, Rc::new(members));
        Val::Comm(id)
    }

    /// A group's members (world ranks, in order).
    fn group(&self, v: Option<&Val>, what: &str) -> R<Vec<u32>> {
        match v {
            Some(Val::Comm(id)) if *id >= GROUP_BASE && *id != u32::MAX => {
                Ok(self.comms.get(id).map(|m| m.to_vec()).unwrap_or_default())
            }
            Some(other) => Err(self.err(format!("{what}: group not known before running ({})", other.why()))),
            None => Err(self.err(format!("{what}: group missing"))),
        }
    }

    /// A v-collective's counts (bytes per member) as its root gives them: every member writes
    /// the list in its trace, as the traced run does. The root passes `counts`; another member
    /// gets the root's, or (the root evaluated later) `mine` for every member until a later
    /// pass has the root's.
    fn roots_counts(&mut self, comm: u32, root: u32, counts: Option<&Counts>, mine: u64) -> Counts {
        let key = self.coll_key("vcounts", comm);
        let size = self.comm_size(comm) as usize;
        let given = counts.map(|c| c.iter().map(|&b| Val::I(b as i64)).collect());
        let stand_in = vec![Val::I(mine as i64); size];
        let parts = self.contribute(&key, comm, Some(given.unwrap_or(stand_in)));
        let from_root = parts.and_then(|p| p.get(root as usize).cloned()).unwrap_or_default();
        let list: Option<Counts> = from_root.iter().map(|x| x.int().map(|b| b.max(0) as u64)).collect();
        match list {
            Some(l) if l.len() == size => l,
            _ => vec![mine; size],
        }
    }

    /// The constructor being run made no communicator here (MPI_COMM_NULL): its `ctor` action.
    fn ctor_made_none(&mut self, sink: &mut dyn Sink) -> R<()> {
        if let Some(kind) = self.ctor_pending.take() {
            self.flush(sink)?;
            sink.action(TraceAction::Ctor { kind, members: 0 })?;
        }
        Ok(())
    }

    /// A communicator a constructor returns: never equal to its parent, even with the same
    /// members (`if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm)` frees a duplicate).
    fn new_comm(&mut self, parent: u32, members: Vec<u32>, sink: &mut dyn Sink) -> R<Val> {
        self.make_comm(parent, members, true, sink)
    }

    /// A new communicator; `distinct`: its own id even with its parent's members (one that
    /// carries a topology of its own), else the parent stands for it.
    fn make_comm(&mut self, parent: u32, members: Vec<u32>, distinct: bool, sink: &mut dyn Sink) -> R<Val> {
        let seq = {
            let s = self.comm_seq.entry(parent).or_insert(0);
            *s += 1;
            *s
        };
        if !distinct && self.comms.get(&parent).is_some_and(|m| **m == members) {
            if let Some(kind) = self.ctor_pending.take() {
                self.flush(sink)?;
                sink.action(TraceAction::Ctor { kind, members: members.len() as u32 })?;
            }
            return Ok(Val::Comm(parent));
        }
        let id = {
            let mut mail = self.sh.mail.borrow_mut();
            let key = (parent, seq, members.clone());
            match mail.comm_ids.get(&key) {
                Some(id) => *id,
                None => {
                    let id = mail.next_comm;
                    mail.next_comm += 1;
                    mail.comm_ids.insert(key, id);
                    id
                }
            }
        };
        self.comms.insert(id, Rc::new(members.clone()));
        self.flush(sink)?;
        if let Some(kind) = self.ctor_pending.take() {
            sink.action(TraceAction::Ctor { kind, members: members.len() as u32 })?;
        }
        sink.action(TraceAction::CommDef { id, ranks: members.into() })?;
        Ok(Val::Comm(id))
    }

    fn peer(&self, v: i64, size: u32, call: &str, what: &str) -> R<Option<Peer>> {
        if v == -2 {
            return Ok(None);
        }
        if v < 0 {
            return Ok(Some(Peer::Any));
        }
        if v as u32 >= size {
            return Err(self.err(format!("{call}: {what} {v} is not a rank of {size}")));
        }
        Ok(Some(Peer::Rank(v as u32)))
    }

    fn send_mail(&mut self, comm: u32, to: u32, tag: i64, vals: Option<Vec<Val>>) {
        let me = self.my_rank(comm);
        let mut mail = self.sh.mail.borrow_mut();
        let q = mail.p2p.entry((comm, me, to)).or_default();
        // Several passes: the k-th send of this pass replaces the previous pass's k-th.
        let k = self.sent_count(comm, to);
        let changed = if k < q.len() {
            let same = q[k] == (tag, vals.clone());
            q[k] = (tag, vals);
            !same
        } else {
            q.push((tag, vals));
            true
        };
        mail.changed |= changed;
    }

    fn sent_count(&mut self, comm: u32, to: u32) -> usize {
        let key = (comm, u32::MAX - to, 0);
        let v = self.consumed.entry(key).or_default();
        v.push(true);
        v.len() - 1
    }

    fn recv_mail(&mut self, comm: u32, from: Option<Peer>, tag: i64) -> Option<Option<Vec<Val>>> {
        let Some(Peer::Rank(from)) = from else {
            return Some(None);
        };
        let me = self.my_rank(comm);
        // (The queue is read in place: copying it for every receive was quadratic in the
        // messages and their values.)
        let sh = self.sh;
        let mail = sh.mail.borrow();
        let empty = Vec::new();
        let q = mail.p2p.get(&(comm, from, me)).unwrap_or(&empty);
        let used = self.consumed.entry((comm, from, me)).or_default();
        for (k, (t, v)) in q.iter().enumerate() {
            if used.get(k).copied().unwrap_or(false) {
                continue;
            }
            if tag < 0 || *t == tag {
                if used.len() <= k {
                    used.resize(k + 1, false);
                }
                used[k] = true;
                return Some(v.clone());
            }
        }
        self.missed_recvs.entry((comm, from, me)).or_default().push(tag);
        None
    }

    /// Receives missed on queues where this rank took nothing (their sender ran later); a miss
    /// on a queue that did deliver (the message is not coming in this pass) becomes `missed`.
    pub fn take_missed_recvs(&mut self) -> BTreeMap<(u32, u32, u32), Vec<i64>> {
        let all = std::mem::take(&mut self.missed_recvs);
        let mut out = BTreeMap::new();
        for (key, tags) in all {
            if self.consumed.get(&key).is_some_and(|u| u.iter().any(|x| *x)) {
                self.missed = true;
            } else {
                out.insert(key, tags);
            }
        }
        out
    }

    fn mpi(&mut self, name: &str, args: &[CExpr], v: Vec<Val>, sink: &mut dyn Sink) -> R<Val> {
        let a = |k: usize| args.get(k);
        let call = name;
        if !self.comms.contains_key(&COMM_SELF)
            && !name.starts_with("MPI_Comm_rank")
            && !name.starts_with("MPI_Comm_size")
            && v.iter().any(|x| matches!(x, Val::Comm(COMM_SELF)))
        {
            self.comms.insert(COMM_SELF, Rc::new(vec![self.rank]));
            self.flush(sink)?;
            sink.action(TraceAction::CommDef { id: COMM_SELF, ranks: vec![self.rank].into() })?;
        }
        // A constructor's own collectives over its parent (as the trace runtime records them).
        self.ctor_pending = None;
        if let Some((gather, reduces)) = crate::frontend::mpi::constructor_collectives(name) {
            let parent = self.comm_id(v.first(), call).ok();
            if let Some(parent) = parent.filter(|p| self.comms[p].len() > 1) {
                // A split gathers colours first; the other constructors do not.
                use crate::model::trace::CtorKind;
                self.ctor_pending = Some(if gather.is_some() { CtorKind::Split } else { CtorKind::Dup });
                self.flush(sink)?;
                if let Some(bytes) = gather {
                    sink.action(TraceAction::Allgather { bytes, comm: parent })?;
                }
                for _ in 0..reduces {
                    sink.action(TraceAction::Allreduce { bytes: 4, comm: parent })?;
                }
            }
        }
        match name {
            "MPI_Init"
            | "MPI_Init_thread"
            | "MPI_Finalize"
            | "MPI_Type_commit"
            | "MPI_Type_free"
            | "MPI_Comm_free"
            | "MPI_Group_free"
            | "MPI_Get_processor_name"
            | "MPI_Comm_set_errhandler"
            | "MPI_Errhandler_set"
            | "MPI_Op_free"
            | "MPI_Get_count"
            | "MPI_Request_free" => {
                if name == "MPI_Init_thread" {
                    self.write_ptr(v.get(3), Val::I(3));
                }
                match name {
                    "MPI_Init" | "MPI_Init_thread" => self.mpi_state = 1,
                    "MPI_Finalize" => self.mpi_state = 2,
                    _ => {}
                }
                if matches!(name, "MPI_Init" | "MPI_Init_thread") && self.weight == 1.0 {
                    // A prediction covers MPI_Init to MPI_Finalize, and an instrumented run
                    // counts from MPI_Init on: what ran before it, the entries of the blocks
                    // around the call included, is not charged.
                    self.pending.clear();
                    sink.discard_compute();
                }
                return Ok(Val::I(0));
            }
            // One-sided communication is not followed: a window's memory is unknown after each
            // synchronisation (other ranks may have put or accumulated into it), and what a get
            // or fetch brings is unknown.
            "MPI_Win_create" | "MPI_Win_attach" => {
                let at = if name == "MPI_Win_create" { v.first() } else { v.get(1) };
                if let Some(Val::P(c, _)) = at {
                    self.windows.push(*c);
                }
            }
            "MPI_Win_fence" | "MPI_Win_unlock" | "MPI_Win_unlock_all" | "MPI_Win_complete" | "MPI_Win_wait"
            | "MPI_Win_test" | "MPI_Win_flush" | "MPI_Win_flush_all" | "MPI_Win_flush_local"
            | "MPI_Win_flush_local_all" | "MPI_Win_sync" | "MPI_Win_lock" | "MPI_Win_lock_all" | "MPI_Win_post"
            | "MPI_Win_start" => {
                let why: Rc<str> = Rc::from(format!("window memory after {name} at {}:{} (one-sided communication is not followed)", self.file, self.line));
                for c in self.windows.clone() {
                    self.touched(c);
                    self.poison_cells(c, &why);
                }
            }
            "MPI_Get" | "MPI_Rget" | "MPI_Get_accumulate" | "MPI_Rget_accumulate" | "MPI_Fetch_and_op"
            | "MPI_Compare_and_swap" => {
                let k = match name {
                    "MPI_Get" | "MPI_Rget" => 0,
                    "MPI_Fetch_and_op" => 1,
                    "MPI_Compare_and_swap" => 2,
                    _ => 3,
                };
                if let Some(Val::P(c, _)) = v.get(k) {
                    let why: Rc<str> = Rc::from(format!("fetched by {name} at {}:{} (one-sided communication is not followed)", self.file, self.line));
                    self.touched(*c);
                    self.poison_cells(*c, &why);
                }
            }
            // A user-defined reduction: the op is its function (and whether it commutes), which
            // the reductions call as the MPI library does.
            "MPI_Op_create" => {
                let f = args.first().and_then(function_named);
                let commute = v.get(1).and_then(|x| x.truth()).unwrap_or(true);
                let op = match f.filter(|f| self.sh.funcs.contains_key(*f)) {
                    Some(f) => Val::Name(Rc::from(format!("{USER_OP}{}:{f}", u8::from(commute)))),
                    None => Val::unknown("a user-defined operation whose function the evaluation does not have"),
                };
                self.write_ptr(v.get(2), op);
                return Ok(Val::I(0));
            }
            // A harness asks before it initialises (MPICH's MTest_Init: `MPI_Initialized(&flag);
            // if (!flag) MPI_Init_thread(...)`): the answer is the rank's own state.
            "MPI_Initialized" | "MPI_Finalized" => {
                let done = if name == "MPI_Initialized" { self.mpi_state >= 1 } else { self.mpi_state == 2 };
                self.write_ptr(v.first(), Val::I(i64::from(done)));
                return Ok(Val::I(0));
            }
            "MPI_Wtime" | "MPI_Wtick" => {
                return Ok(Val::unknown("MPI_Wtime() is known only at run time"))
            }
            "MPI_Abort" => {
                return Err(Box::new(Unresolved {
                    file: self.file.to_string(),
                    line: self.line,
                    what: "\u{0}exit".into(),
                }))
            }
            "P2Pinit" | "P2Pscheme" | "P2Pfinalize" => return Ok(Val::I(0)),
            "P2Prank" => return Ok(Val::I(self.rank as i64)),
            "P2Psize" => return Ok(Val::I(self.size as i64)),
            // MPI_COMM_SELF: rank 0 of 1.
            "MPI_Comm_rank" | "MPI_Comm_size" if matches!(v.first(), Some(Val::Comm(COMM_SELF))) => {
                self.write_ptr(v.get(1), Val::I(i64::from(call == "MPI_Comm_size")));
                return Ok(Val::I(0));
            }
            // The C++ bindings' Get_rank()/Get_size() on a communicator: the value returned.
            "MPI_Comm_rank(out)" | "MPI_Comm_size(out)" if matches!(v.first(), Some(Val::Comm(COMM_SELF))) => {
                return Ok(Val::I(i64::from(call == "MPI_Comm_size(out)")));
            }
            "MPI_Comm_rank(out)" => {
                let c = self.comm_id(v.first(), call)?;
                return Ok(Val::I(self.my_rank(c) as i64));
            }
            "MPI_Comm_size(out)" => {
                let c = self.comm_id(v.first(), call)?;
                return Ok(Val::I(self.comm_size(c) as i64));
            }
            "MPI_Comm_rank" => {
                let c = self.comm_id(v.first(), call)?;
                let r = self.my_rank(c);
                self.write_ptr(v.get(1), Val::I(r as i64));
                return Ok(Val::I(0));
            }
            "MPI_Comm_size" => {
                let c = self.comm_id(v.first(), call)?;
                let n = self.comm_size(c);
                self.write_ptr(v.get(1), Val::I(n as i64));
                return Ok(Val::I(0));
            }
            // A collective on an intercommunicator: the traced run does not record it either.
            _ if !matches!(name, "MPI_Cart_create" | "MPI_Cart_shift" | "MPI_Cart_coords" | "MPI_Cart_rank" | "MPI_Comm_split" | "MPI_Dims_create")
                && crate::frontend::mpi::comm_signature(name)
                .and_then(|sig| sig.comm)
                .and_then(|k| match v.get(k) {
                    Some(Val::Comm(c)) => Some(*c),
                    _ => None,
                })
                .is_some_and(|c| self.remote.contains_key(&c)) =>
            {
                let sig = crate::frontend::mpi::comm_signature(name);
                if sig.is_some_and(|s| s.peer.is_some()) {
                    return Err(self.err(format!(
                        "{call} on an intercommunicator is not modelled statically"
                    )));
                }
                for x in v.iter().skip(1) {
                    if let Val::P(c, _) = x {
                        let why: Rc<str> = Rc::from(format!("{call} on an intercommunicator"));
                        self.poison_cells(*c, &why);
                    }
                }
                return Ok(Val::I(0));
            }
            "MPI_Comm_group" | "MPI_Comm_remote_group" => {
                let c = self.comm_id(v.first(), call)?;
                let members = if name == "MPI_Comm_group" {
                    self.comms[&c].to_vec()
                } else {
                    self.remote.get(&c).cloned().unwrap_or_default()
                };
                let g = self.new_group(members);
                self.write_ptr(v.get(1), g);
                return Ok(Val::I(0));
            }
            "MPI_Comm_test_inter" => {
                let c = self.comm_id(v.first(), call)?;
                let inter = self.remote.contains_key(&c);
                self.write_ptr(v.get(1), Val::I(i64::from(inter)));
                return Ok(Val::I(0));
            }
            "MPI_Comm_remote_size" => {
                let c = self.comm_id(v.first(), call)?;
                let n = self.remote.get(&c).map_or(0, Vec::len);
                self.write_ptr(v.get(1), Val::I(n as i64));
                return Ok(Val::I(0));
            }
            "MPI_Group_size" | "MPI_Group_rank" => {
                let g = self.group(v.first(), call)?;
                let r = if name == "MPI_Group_size" {
                    g.len() as i64
                } else {
                    g.iter().position(|&r| r == self.rank).map_or(MPI_UNDEFINED, |p| p as i64)
                };
                self.write_ptr(v.get(1), Val::I(r));
                return Ok(Val::I(0));
            }
            "MPI_Group_incl" | "MPI_Group_excl" | "MPI_Group_range_incl" | "MPI_Group_range_excl" => {
                let g = self.group(v.first(), call)?;
                let n = self.need_int(v.get(1), call, "count", a(1))?;
                let ranged = name.contains("range");
                let list = self.read_ints(v.get(2), if ranged { 3 * n } else { n });
                let Some(list) = list else {
                    return Err(self.err(format!("{call}: ranks not known before running")));
                };
                // Positions in `g`, in the order given.
                let mut picked: Vec<i64> = Vec::new();
                if ranged {
                    for t in list.chunks(3) {
                        let (first, last, stride) = (t[0], t[1], t[2]);
                        if stride == 0 {
                            return Err(self.err(format!("{call}: a range with stride 0")));
                        }
                        let mut r = first;
                        while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
                            picked.push(r);
                            r += stride;
                        }
                    }
                } else {
                    picked = list;
                }
                if let Some(bad) = picked.iter().find(|&&r| r < 0 || r as usize >= g.len()) {
                    return Err(self.err(format!("{call}: rank {bad} is not in a group of {}", g.len())));
                }
                let members: Vec<u32> = if name.ends_with("incl") {
                    picked.iter().map(|&r| g[r as usize]).collect()
                } else {
                    g.iter().enumerate().filter(|(k, _)| !picked.contains(&(*k as i64))).map(|(_, &r)| r).collect()
                };
                let ng = self.new_group(members);
                self.write_ptr(v.get(3), ng);
                return Ok(Val::I(0));
            }
            "MPI_Group_union" | "MPI_Group_intersection" | "MPI_Group_difference" => {
                let g1 = self.group(v.first(), call)?;
                let g2 = self.group(v.get(1), call)?;
                let members: Vec<u32> = match name {
                    "MPI_Group_union" => g1.iter().copied().chain(g2.iter().copied().filter(|r| !g1.contains(r))).collect(),
                    "MPI_Group_intersection" => g1.iter().copied().filter(|r| g2.contains(r)).collect(),
                    _ => g1.iter().copied().filter(|r| !g2.contains(r)).collect(),
                };
                let ng = self.new_group(members);
                self.write_ptr(v.get(2), ng);
                return Ok(Val::I(0));
            }
            "MPI_Group_translate_ranks" => {
                let g1 = self.group(v.first(), call)?;
                let n = self.need_int(v.get(1), call, "count", a(1))?;
                let g2 = self.group(v.get(3), call)?;
                let ranks = self.read_ints(v.get(2), n);
                let Some(ranks) = ranks else {
                    return Err(self.err(format!("{call}: ranks not known before running")));
                };
                let out: Vec<Val> = ranks
                    .iter()
                    .map(|&r| {
                        let w = usize::try_from(r).ok().and_then(|r| g1.get(r));
                        Val::I(w.and_then(|w| g2.iter().position(|x| x == w)).map_or(MPI_UNDEFINED, |p| p as i64))
                    })
                    .collect();
                self.write_buf(v.get(4), &out);
                return Ok(Val::I(0));
            }
            "MPI_Comm_create" | "MPI_Comm_create_group" => {
                let c = self.comm_id(v.first(), call)?;
                let g = self.group(v.get(1), call)?;
                let out = if name == "MPI_Comm_create" { v.get(2) } else { v.get(3) };
                // MPI_Comm_create is collective over the parent (every member counts it, in the
                // group or not); only the group's members call MPI_Comm_create_group, whose ids
                // are kept apart from the parent's sequence (its members alone agree on it).
                let parent = if name == "MPI_Comm_create" { c } else { c | CREATE_GROUP_BIT };
                if g.contains(&self.rank) {
                    let nc = self.new_comm(parent, g, sink)?;
                    self.write_ptr(out, nc);
                } else {
                    *self.comm_seq.entry(parent).or_insert(0) += 1;
                    self.ctor_made_none(sink)?;
                    self.write_ptr(out, Val::I(-1));
                }
                return Ok(Val::I(0));
            }
            "MPI_Dist_graph_create_adjacent" => {
                let c = self.comm_id(v.first(), call)?;
                let ints = |me: &mut Self, k: usize, n: i64, what: &str| -> R<Vec<i64>> {
                    me.read_ints(v.get(k), n).ok_or_else(|| me.err(format!("{call}: {what} not known before running")))
                };
                let indeg = self.need_int(v.get(1), call, "in-degree", a(1))?;
                let outdeg = self.need_int(v.get(4), call, "out-degree", a(4))?;
                let sources = ints(self, 2, indeg, "sources")?;
                let dests = ints(self, 5, outdeg, "destinations")?;
                let weighted = !matches!(v.get(3), Some(Val::Name(n)) if &**n == "MPI_UNWEIGHTED");
                let members = self.comms[&c].to_vec();
                let nc = self.make_comm(c, members, true, sink)?;
                if let Val::Comm(id) = nc {
                    self.topo.insert(id, Topo { kind: MPI_DIST_GRAPH, sources, dests, weighted, index: Vec::new(), edges: Vec::new() });
                }
                self.write_ptr(v.get(9), nc);
                return Ok(Val::I(0));
            }
            "MPI_Dist_graph_create" => {
                let c = self.comm_id(v.first(), call)?;
                let n = self.need_int(v.get(1), call, "number of sources", a(1))?;
                let srcs = self.read_ints(v.get(2), n);
                let degs = self.read_ints(v.get(3), n);
                let (Some(srcs), Some(degs)) = (srcs, degs) else {
                    return Err(self.err(format!("{call}: sources or degrees not known before running")));
                };
                let total: i64 = degs.iter().sum();
                let dsts = self.read_ints(v.get(4), total);
                let Some(dsts) = dsts else {
                    return Err(self.err(format!("{call}: destinations not known before running")));
                };
                // Every rank gives some edges; each learns its own neighbours from all of them.
                let mut mine = Vec::new();
                let mut k = 0;
                for (s, d) in srcs.iter().zip(&degs) {
                    for _ in 0..*d {
                        mine.extend([Val::I(*s), Val::I(dsts[k])]);
                        k += 1;
                    }
                }
                let key = self.coll_key("dist_graph", c);
                let Some(all) = self.contribute(&key, c, Some(mine)) else {
                    self.write_ptr(v.get(8), Val::unknown("graph from ranks evaluated later"));
                    return Ok(Val::I(0));
                };
                let me = self.my_rank(c) as i64;
                let (mut sources, mut dests) = (Vec::new(), Vec::new());
                for part in &all {
                    for e in part.chunks(2) {
                        let (Some(s), Some(d)) = (e[0].int(), e.get(1).and_then(Val::int)) else { continue };
                        if d == me {
                            sources.push(s);
                        }
                        if s == me {
                            dests.push(d);
                        }
                    }
                }
                // (NULL weights too are weights to OpenMPI: only MPI_UNWEIGHTED is not.)
                let weighted = !matches!(v.get(5), Some(Val::Name(n)) if &**n == "MPI_UNWEIGHTED");
                let members = self.comms[&c].to_vec();
                let nc = self.make_comm(c, members, true, sink)?;
                if let Val::Comm(id) = nc {
                    self.topo.insert(id, Topo { kind: MPI_DIST_GRAPH, sources, dests, weighted, index: Vec::new(), edges: Vec::new() });
                }
                self.write_ptr(v.get(8), nc);
                return Ok(Val::I(0));
            }
            "MPI_Graph_create" => {
                let c = self.comm_id(v.first(), call)?;
                let nnodes = self.need_int(v.get(1), call, "number of nodes", a(1))?;
                let index = self.read_ints(v.get(2), nnodes);
                let Some(index) = index else {
                    return Err(self.err(format!("{call}: index not known before running")));
                };
                let nedges = index.last().copied().unwrap_or(0);
                let edges = self.read_ints(v.get(3), nedges);
                let Some(edges) = edges else {
                    return Err(self.err(format!("{call}: edges not known before running")));
                };
                let members: Vec<u32> = self.comms[&c].iter().take(nnodes.max(0) as usize).copied().collect();
                if members.contains(&self.rank) {
                    let nc = self.make_comm(c, members, true, sink)?;
                    if let Val::Comm(id) = nc {
                        self.topo.insert(id, Topo { kind: MPI_GRAPH, sources: Vec::new(), dests: Vec::new(), weighted: false, index, edges });
                    }
                    self.write_ptr(v.get(5), nc);
                } else {
                    *self.comm_seq.entry(c).or_insert(0) += 1;
                    self.write_ptr(v.get(5), Val::I(-1));
                }
                return Ok(Val::I(0));
            }
            "MPI_Topo_test" => {
                let c = self.comm_id(v.first(), call)?;
                let kind = self.topo.get(&c).map(|t| Val::I(t.kind));
                self.write_ptr(v.get(1), kind.unwrap_or_else(|| Val::unknown("topology of a communicator without a graph")));
                return Ok(Val::I(0));
            }
            "MPI_Dist_graph_neighbors_count" | "MPI_Dist_graph_neighbors" | "MPI_Graph_neighbors_count"
            | "MPI_Graph_neighbors" | "MPI_Graphdims_get" | "MPI_Graph_get" => {
                let c = self.comm_id(v.first(), call)?;
                let Some(t) = self.topo.get(&c).cloned() else {
                    return Err(self.err(format!("{call}: the communicator has no graph the evaluation knows")));
                };
                let list = |l: &[i64]| l.iter().map(|&x| Val::I(x)).collect::<Vec<Val>>();
                // A graph node's neighbours: edges[index[r-1]..index[r]].
                let of = |r: i64| -> Vec<i64> {
                    let lo = if r > 0 { t.index.get(r as usize - 1).copied().unwrap_or(0) } else { 0 };
                    let hi = t.index.get(r.max(0) as usize).copied().unwrap_or(lo);
                    t.edges.get(lo.max(0) as usize..hi.max(lo).max(0) as usize).map(<[i64]>::to_vec).unwrap_or_default()
                };
                match name {
                    "MPI_Dist_graph_neighbors_count" => {
                        self.write_ptr(v.get(1), Val::I(t.sources.len() as i64));
                        self.write_ptr(v.get(2), Val::I(t.dests.len() as i64));
                        self.write_ptr(v.get(3), Val::I(i64::from(t.weighted)));
                    }
                    "MPI_Dist_graph_neighbors" => {
                        self.write_buf(v.get(2), &list(&t.sources));
                        self.write_buf(v.get(5), &list(&t.dests));
                        // Weights are not followed.
                        for k in [3, 6] {
                            let n = if k == 3 { t.sources.len() } else { t.dests.len() };
                            self.unknown_buf(v.get(k), n as i64, "graph weights");
                        }
                    }
                    "MPI_Graph_neighbors_count" => {
                        let r = self.need_int(v.get(1), call, "rank", a(1))?;
                        self.write_ptr(v.get(2), Val::I(of(r).len() as i64));
                    }
                    "MPI_Graph_neighbors" => {
                        let r = self.need_int(v.get(1), call, "rank", a(1))?;
                        self.write_buf(v.get(3), &list(&of(r)));
                    }
                    "MPI_Graphdims_get" => {
                        self.write_ptr(v.get(1), Val::I(t.index.len() as i64));
                        self.write_ptr(v.get(2), Val::I(t.edges.len() as i64));
                    }
                    _ => {
                        self.write_buf(v.get(3), &list(&t.index));
                        self.write_buf(v.get(4), &list(&t.edges));
                    }
                }
                return Ok(Val::I(0));
            }
            // Packing moves no message: the position advances by the data's size (OpenMPI's
            // native packing adds nothing); the packed or unpacked bytes are not followed.
            "MPI_Pack_size" => {
                let n = self.need_int(v.first(), call, "count", a(0))?;
                let b = self.dt_bytes(v.get(1), call, a(1))?;
                self.write_ptr(v.get(3), Val::I(n.max(0) * b as i64));
                return Ok(Val::I(0));
            }
            "MPI_Pack" | "MPI_Unpack" => {
                let (nk, tk, pk, out) = if name == "MPI_Pack" { (1, 2, 5, 3) } else { (4, 5, 2, 3) };
                let n = self.need_int(v.get(nk), call, "count", a(nk))?;
                let b = self.dt_bytes(v.get(tk), call, a(tk))?;
                let pos = match v.get(pk) {
                    Some(Val::P(c, o)) => self.elem(*c, *o).map(|e| self.get(e)),
                    _ => None,
                };
                let next = match pos.as_ref().and_then(Val::int) {
                    Some(p) => Val::I(p + n.max(0) * b as i64),
                    None => Val::unknown(format!("{call} position")),
                };
                self.write_ptr(v.get(pk), next);
                if let Some(Val::P(c, _)) = v.get(out) {
                    let why: Rc<str> = Rc::from(format!("written by {call} at {}:{}", self.file, self.line));
                    self.touched(*c);
                    self.poison_cells(*c, &why);
                }
                return Ok(Val::I(0));
            }
            "MPI_Intercomm_create" => {
                let local = self.comm_id(v.first(), call)?;
                let peer = self.comm_id(v.get(2), call)?;
                let leader = self.need_int(v.get(3), call, "remote leader", a(3))?;
                let tag = self.need_int(v.get(4), call, "tag", a(4))?;
                let local_leader = self.need_int(v.get(1), call, "local leader", a(1))?;
                let members = self.comms[&local].to_vec();
                // Each member posts, under its peer rank, the remote leader it was given (MPI
                // reads it at the local leader only: the others may pass anything) and its
                // group; the remote group is the one the local leader's remote leader posted.
                let key = self.coll_key(&format!("intercomm{tag}"), peer);
                let me = self.my_rank(peer);
                let peers = self.comms[&peer].to_vec();
                let remote = {
                    let mut mail = self.sh.mail.borrow_mut();
                    let entry = mail.coll.entry(key.clone()).or_default();
                    let mine: Vec<Val> = std::iter::once(Val::I(leader)).chain(members.iter().map(|&r| Val::I(r as i64))).collect();
                    let changed = entry.get(&me) != Some(&mine);
                    entry.insert(me, mine);
                    let peer_rank = |world: u32| peers.iter().position(|&r| r == world).map(|p| p as u32);
                    let leader = usize::try_from(local_leader)
                        .ok()
                        .and_then(|l| members.get(l))
                        .and_then(|&w| peer_rank(w))
                        .and_then(|p| entry.get(&p))
                        .and_then(|x| x.first())
                        .and_then(Val::int);
                    let remote = leader
                        .and_then(|l| usize::try_from(l).ok())
                        .filter(|&l| l < peers.len())
                        .and_then(|l| entry.get(&(l as u32)))
                        .map(|x| x[1..].to_vec());
                    mail.changed |= changed;
                    remote
                };
                let Some(remote) = remote else {
                    self.missed = true;
                    self.write_ptr(v.get(5), Val::unknown("intercommunicator whose remote group has not run yet"));
                    return Ok(Val::I(0));
                };
                let remote: Vec<u32> = remote.iter().filter_map(|x| x.int()).map(|r| r as u32).collect();
                // Both sides name it alike: by the peer, the call and the union of the groups.
                let mut both: Vec<u32> = members.iter().chain(remote.iter()).copied().collect();
                both.sort_unstable();
                let id = {
                    let mut mail = self.sh.mail.borrow_mut();
                    let name = format!("{key}/{both:?}");
                    match mail.named_ids.get(&name) {
                        Some(id) => *id,
                        None => {
                            let id = mail.next_comm;
                            mail.next_comm += 1;
                            mail.named_ids.insert(name, id);
                            id
                        }
                    }
                };
                self.comms.insert(id, Rc::new(members));
                self.remote.insert(id, remote);
                self.write_ptr(v.get(5), Val::Comm(id));
                return Ok(Val::I(0));
            }
            "MPI_Intercomm_merge" => {
                let c = self.comm_id(v.first(), call)?;
                let Some(remote) = self.remote.get(&c).cloned() else {
                    return Err(self.err(format!("{call}: not an intercommunicator")));
                };
                let high = self.need_int(v.get(1), call, "high", a(1))? != 0;
                let local = self.comms[&c].to_vec();
                // Each member posts its `high` under its world rank; the remote side's is read
                // from its first member.
                let key = self.coll_key("merge", c);
                let theirs = {
                    let mut mail = self.sh.mail.borrow_mut();
                    let entry = mail.coll.entry(key).or_default();
                    let mine = vec![Val::I(i64::from(high))];
                    let changed = entry.get(&self.rank) != Some(&mine);
                    entry.insert(self.rank, mine);
                    let theirs = remote.first().and_then(|r| entry.get(r)).and_then(|x| x.first()).and_then(Val::int);
                    mail.changed |= changed;
                    theirs
                };
                let Some(theirs) = theirs else {
                    self.missed = true;
                    self.write_ptr(v.get(2), Val::unknown("merged with a group that has not run yet"));
                    return Ok(Val::I(0));
                };
                // The group that gave `high` false comes first; on a tie, the one holding the
                // lower world rank.
                let local_first = match (high, theirs != 0) {
                    (false, true) => true,
                    (true, false) => false,
                    _ => local.iter().min() < remote.iter().min(),
                };
                let members: Vec<u32> = if local_first {
                    local.iter().chain(remote.iter()).copied().collect()
                } else {
                    remote.iter().chain(local.iter()).copied().collect()
                };
                let nc = self.new_comm(c, members, sink)?;
                self.write_ptr(v.get(2), nc);
                return Ok(Val::I(0));
            }
            "MPI_Comm_dup" => {
                let c = self.comm_id(v.first(), call)?;
                let members = self.comms[&c].to_vec();
                let nc = self.new_comm(c, members, sink)?;
                // Same members in the same order, its own id (a `comm` line in the skeleton),
                // and the same topology.
                if let (Val::Comm(id), Some(t)) = (&nc, self.topo.get(&c).cloned()) {
                    self.topo.insert(*id, t);
                }
                self.write_ptr(v.get(1), nc);
                return Ok(Val::I(0));
            }
            "MPI_Comm_split" => {
                let c = self.comm_id(v.first(), call)?;
                let color = v.get(1).and_then(|x| x.int());
                let key = v.get(2).and_then(|x| x.int());
                let (Some(color), Some(key)) = (color, key) else {
                    return Err(self.err(format!("{call}: colour or key not known before running")));
                };
                let ck = self.coll_key("split", c);
                let Some(all) = self.contribute(&ck, c, Some(vec![Val::I(color), Val::I(key)]))
                else {
                    self.write_ptr(
                        v.get(3),
                        Val::unknown(
                            "communicator from a split whose other ranks have not run yet",
                        ),
                    );
                    return Ok(Val::I(0));
                };
                if color < 0 {
                    // Collective over the parent: its sequence counts the split here too, or
                    // the next communicator made on it gets another id here than at the members.
                    *self.comm_seq.entry(c).or_insert(0) += 1;
                    self.ctor_made_none(sink)?;
                    self.write_ptr(v.get(3), Val::I(-1));
                    return Ok(Val::I(0));
                }
                let parent = self.comms[&c].to_vec();
                let mut group: Vec<(i64, u32)> = all
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| x.first().and_then(|c| c.int()) == Some(color))
                    .map(|(r, x)| (x.get(1).and_then(|k| k.int()).unwrap_or(0), r as u32))
                    .collect();
                group.sort();
                let members: Vec<u32> = group.iter().map(|(_, r)| parent[*r as usize]).collect();
                let nc = self.new_comm(c, members, sink)?;
                self.write_ptr(v.get(3), nc);
                return Ok(Val::I(0));
            }
            "MPI_Type_contiguous" => {
                let n = self.need_int(v.first(), call, "count", a(0))?;
                let b = self.dt_bytes(v.get(1), call, a(1))?;
                let span = n.max(0).saturating_mul(dt_span(v.get(1)));
                self.write_ptr(v.get(2), Val::Dv(n.max(0) as u64 * b, span, dt_dense(v.get(1))));
                return Ok(Val::I(0));
            }
            "MPI_Type_vector" | "MPI_Type_create_hvector" | "MPI_Type_hvector" => {
                let n = self.need_int(v.first(), call, "count", a(0))?;
                let bl = self.need_int(v.get(1), call, "block length", a(1))?;
                let b = self.dt_bytes(v.get(3), call, a(3))?;
                // The stride in elements of the old type (bytes for the h- forms).
                let stride = v.get(2).and_then(|x| x.int()).unwrap_or(bl);
                let stride = if name == "MPI_Type_vector" { stride } else { stride / (b.max(1) as i64) };
                let span = if n > 0 { ((n - 1) * stride.abs() + bl).max(0) } else { 0 };
                let dense = (n <= 1 || stride == bl) && dt_dense(v.get(3));
                self.write_ptr(v.get(4), Val::Dv((n * bl).max(0) as u64 * b, span.saturating_mul(dt_span(v.get(3))), dense));
                return Ok(Val::I(0));
            }
            // A datatype is known by its size (the bytes of data it moves, as MPI_Type_size
            // says); a new lower bound or extent does not change it.
            "MPI_Type_create_resized" | "MPI_Type_dup" => {
                let b = self.dt_bytes(v.first(), call, a(0))?;
                let out = if name == "MPI_Type_dup" { v.get(1) } else { v.get(3) };
                let t = match v.first() {
                    Some(x @ (Val::Dt(_) | Val::Dv(..))) if name == "MPI_Type_dup" => x.clone(),
                    _ => Val::Dv(b, dt_span(v.first()), false),
                };
                self.write_ptr(out, t);
                return Ok(Val::I(0));
            }
            "MPI_Type_indexed" | "MPI_Type_create_hindexed" | "MPI_Type_hindexed" | "MPI_Type_create_indexed_block"
            | "MPI_Type_create_hindexed_block" => {
                let n = self.need_int(v.first(), call, "count", a(0))?;
                let b = self.dt_bytes(v.get(3), call, a(3))?;
                let elements: i64 = if name.ends_with("_block") {
                    n * self.need_int(v.get(1), call, "block length", a(1))?
                } else {
                    let lens = self.read_ints(v.get(1), n);
                    lens.ok_or_else(|| self.err(format!("{call}: block lengths not known before running")))?.iter().sum()
                };
                let span = elements.max(0).saturating_mul(dt_span(v.get(3)));
                self.write_ptr(v.get(4), Val::Dv(elements.max(0) as u64 * b, span, false));
                return Ok(Val::I(0));
            }
            "MPI_Type_create_struct" | "MPI_Type_struct" => {
                let n = self.need_int(v.first(), call, "count", a(0))?;
                let lens = self.read_ints(v.get(1), n);
                let types = self.read_buf(v.get(3), n);
                let (Some(lens), Some(types)) = (lens, types) else {
                    return Err(self.err(format!("{call}: block lengths or types not known before running")));
                };
                let (mut total, mut span) = (0u64, 0i64);
                for (l, t) in lens.iter().zip(&types) {
                    total += (*l).max(0) as u64 * self.dt_bytes(Some(t), call, a(3))?;
                    span = span.saturating_add((*l).max(0).saturating_mul(dt_span(Some(t))));
                }
                self.write_ptr(v.get(4), Val::Dv(total, span, false));
                return Ok(Val::I(0));
            }
            "MPI_Type_create_subarray" => {
                let n = self.need_int(v.first(), call, "number of dimensions", a(0))?;
                let sub = self.read_ints(v.get(2), n);
                let sub = sub.ok_or_else(|| self.err(format!("{call}: subsizes not known before running")))?;
                let b = self.dt_bytes(v.get(5), call, a(5))?;
                // It spans the whole array (the sizes), or at least its subarray.
                let whole = self.read_ints(v.get(1), n).unwrap_or_else(|| sub.clone());
                let span = whole.iter().product::<i64>().max(0).saturating_mul(dt_span(v.get(5)));
                let dense = whole == sub && dt_dense(v.get(5));
                self.write_ptr(v.get(6), Val::Dv(sub.iter().product::<i64>().max(0) as u64 * b, span, dense));
                return Ok(Val::I(0));
            }
            "MPI_Type_size" => {
                let b = self.dt_bytes(v.first(), call, a(0))?;
                self.write_ptr(v.get(1), Val::I(b as i64));
                return Ok(Val::I(0));
            }
            "MPI_Dims_create" => {
                let nnodes = self.need_int(v.first(), call, "number of processes", a(0))?;
                let ndims = self.need_int(v.get(1), call, "number of dimensions", a(1))? as usize;
                let given: Vec<i64> = self
                    .read_buf(v.get(2), ndims as i64)
                    .unwrap_or_default()
                    .iter()
                    .map(|x| x.int().unwrap_or(0))
                    .collect();
                let dims = dims_create(nnodes, &given, ndims).ok_or_else(|| {
                    self.err(format!(
                        "MPI_Dims_create: {nnodes} processes do not fit the given dimensions"
                    ))
                })?;
                let vals: Vec<Val> = dims.iter().map(|d| Val::I(*d)).collect();
                self.write_buf(v.get(2), &vals);
                self.cart_dims = dims;
                return Ok(Val::I(0));
            }
            "MPI_Cart_create" => {
                let c = self.comm_id(v.first(), call)?;
                let ndims = self.need_int(v.get(1), call, "number of dimensions", a(1))? as usize;
                let dims: Option<Vec<i64>> = self
                    .read_buf(v.get(2), ndims as i64)
                    .and_then(|d| d.iter().map(|x| x.int()).collect());
                let Some(dims) = dims else {
                    return Err(self.err("MPI_Cart_create: dimensions not known before running"));
                };
                let periods: Option<Vec<bool>> = self
                    .read_buf(v.get(3), ndims as i64)
                    .and_then(|d| d.iter().map(|x| x.truth()).collect());
                let Some(periods) = periods else {
                    return Err(self.err("MPI_Cart_create: periods not known before running"));
                };
                let total: i64 = dims.iter().product();
                if total != self.comm_size(c) as i64 {
                    return Err(self.err(format!(
                        "MPI_Cart_create: grid of {total} for {} ranks",
                        self.comm_size(c)
                    )));
                }
                sink.cartesian(&dims, &cart_coords(self.my_rank(c) as i64, &dims));
                self.cart_dims = dims;
                self.cart_periods = periods;
                // Without reordering (mpicast does not reorder) rank r keeps its place.
                self.write_ptr(v.get(5), Val::Comm(c));
                return Ok(Val::I(0));
            }
            "MPI_Cart_coords" => {
                let r = self.need_int(v.get(1), call, "rank", a(1))?;
                let vals: Vec<Val> = cart_coords(r, &self.cart_dims)
                    .into_iter()
                    .map(Val::I)
                    .collect();
                self.write_buf(v.get(3), &vals);
                return Ok(Val::I(0));
            }
            "MPI_Cart_rank" => {
                let n = self.cart_dims.len() as i64;
                let coords: Option<Vec<i64>> = self
                    .read_buf(v.get(1), n)
                    .and_then(|d| d.iter().map(|x| x.int()).collect());
                let Some(mut coords) = coords else {
                    return Err(self.err("MPI_Cart_rank: coordinates not known before running"));
                };
                for (k, c) in coords.iter_mut().enumerate() {
                    let d = self.cart_dims[k];
                    if self.cart_periods.get(k).copied().unwrap_or(false) {
                        *c = c.rem_euclid(d);
                    }
                }
                let r = cart_rank(&coords, &self.cart_dims);
                self.write_ptr(v.get(2), Val::I(r));
                return Ok(Val::I(0));
            }
            "MPI_Cart_get" => {
                let n = self.cart_dims.len();
                let dims: Vec<Val> = self.cart_dims.iter().map(|d| Val::I(*d)).collect();
                let per: Vec<Val> = self
                    .cart_periods
                    .iter()
                    .map(|p| Val::I(*p as i64))
                    .collect();
                let co: Vec<Val> = cart_coords(self.rank as i64, &self.cart_dims)
                    .into_iter()
                    .map(Val::I)
                    .collect();
                let _ = n;
                self.write_buf(v.get(2), &dims);
                self.write_buf(v.get(3), &per);
                self.write_buf(v.get(4), &co);
                return Ok(Val::I(0));
            }
            "MPI_Cart_shift" => {
                let dim = self.need_int(v.get(1), call, "direction", a(1))? as usize;
                let disp = self.need_int(v.get(2), call, "displacement", a(2))?;
                if dim >= self.cart_dims.len() {
                    return Err(
                        self.err(format!("MPI_Cart_shift: direction {dim} outside the grid"))
                    );
                }
                let shifted = |by: i64| -> i64 {
                    crate::mpi::cart::cart_neighbour(
                        self.rank as i64,
                        &self.cart_dims,
                        &self.cart_periods,
                        dim,
                        by,
                    )
                    .unwrap_or(-2)
                };
                let (src, dst) = (shifted(-disp), shifted(disp));
                self.write_ptr(v.get(3), Val::I(src));
                self.write_ptr(v.get(4), Val::I(dst));
                return Ok(Val::I(0));
            }
            _ => {}
        }
        if crate::frontend::mpi::comm_signature(name).is_none() && !name.starts_with("P2P") {
            return self.libc(name, v);
        }
        if self.weight != 1.0 {
            return Err(self.err(format!(
                "{call}: communication under a branch that depends on data"
            )));
        }
        self.flush(sink)?;
        let count = |me: &Self, k: usize| me.need_int(v.get(k), call, "count", a(k));
        let bytes = |me: &Self, ck: usize, dk: usize| -> R<u64> {
            let n = count(me, ck)?;
            let b = me.dt_bytes(v.get(dk), call, a(dk))?;
            Ok(n.max(0) as u64 * b)
        };
        let tag_of = |me: &Self, k: usize| -> Tag {
            match v.get(k).and_then(|x| x.int()) {
                Some(t) if t >= 0 => Tag::Value(t as i32),
                _ => {
                    let _ = me;
                    Tag::Any
                }
            }
        };
        match name {
            "MPI_Send" | "MPI_Ssend" | "MPI_Bsend" | "MPI_Rsend" | "MPI_Isend" | "MPI_Issend"
            | "MPI_Ibsend" | "MPI_Irsend" => {
                let comm = self.comm_id(v.get(5), call)?;
                let size = self.comm_size(comm);
                let to = self.need_int(v.get(3), call, "destination", a(3))?;
                let to = self.peer(to, size, call, "destination")?;
                let b = bytes(self, 1, 2)?;
                let tag = self.need_int(v.get(4), call, "tag", a(4)).unwrap_or(0);
                let n = count(self, 1)?;
                let blocking = !name.starts_with("MPI_I");
                let req = if blocking {
                    None
                } else {
                    Some(self.new_req(v.get(6)))
                };
                match to {
                    None => {
                        if let Some(r) = req {
                            self.reqs.retain(|(_, q)| *q != r);
                        }
                    }
                    Some(Peer::Any) => {
                        return Err(self.err(format!("{call}: negative destination")))
                    }
                    Some(Peer::Rank(to)) => {
                        let vals = match derived_cells(v.get(2), n) {
                            None => self.read_buf(v.first(), dt_elems(v.get(2), n)),
                            Some(_) => None,
                        };
                        self.send_mail(comm, to, tag, vals);
                        match req {
                            None => sink.action(TraceAction::Send {
                                to,
                                bytes: b,
                                tag: tag as i32,
                                comm,
                                buffered: name == "MPI_Bsend",
                            })?,
                            Some(req) => sink.action(TraceAction::Isend {
                                req,
                                to,
                                bytes: b,
                                tag: tag as i32,
                                comm,
                            })?,
                        }
                    }
                }
            }
            "MPI_Recv" | "MPI_Irecv" => {
                let comm = self.comm_id(v.get(5), call)?;
                let size = self.comm_size(comm);
                let from = self.need_int(v.get(3), call, "source", a(3))?;
                let from = self.peer(from, size, call, "source")?;
                let b = bytes(self, 1, 2).ok();
                let n = v.get(1).and_then(|x| x.int()).unwrap_or(0);
                let tag = v.get(4).and_then(|x| x.int()).unwrap_or(-1);
                let req = if name == "MPI_Irecv" {
                    Some(self.new_req(v.get(6)))
                } else {
                    None
                };
                let Some(from) = from else {
                    if let Some(r) = req {
                        self.reqs.retain(|(_, q)| *q != r);
                    }
                    return Ok(Val::I(0));
                };
                let cells = derived_cells(v.get(2), n);
                let n = cells.unwrap_or(dt_elems(v.get(2), n));
                match self.recv_mail(comm, Some(from), tag) {
                    Some(Some(vals)) if cells.is_none() => self.write_buf(v.first(), &vals),
                    Some(_) => self.unknown_buf(
                        v.first(),
                        n,
                        &format!(
                            "received at {}:{} (bulk data or any source)",
                            self.file, self.line
                        ),
                    ),
                    None => self.unknown_buf(
                        v.first(),
                        n,
                        &format!(
                            "received at {}:{} from a rank evaluated later",
                            self.file, self.line
                        ),
                    ),
                }
                match req {
                    None => sink.action(TraceAction::Recv {
                        from,
                        bytes: b,
                        tag: tag_of(self, 4),
                        comm,
                    })?,
                    Some(req) => sink.action(TraceAction::Irecv {
                        req,
                        from,
                        bytes: b,
                        tag: tag_of(self, 4),
                        comm,
                    })?,
                }
            }
            "MPI_Wait" => {
                let key = match v.first() {
                    Some(Val::P(c, o)) => self.elem(*c, *o),
                    _ => None,
                };
                if let Some(pos) = self.reqs.iter().position(|(k, _)| Some(*k) == key) {
                    let (_, req) = self.reqs.remove(pos);
                    sink.action(TraceAction::Wait { req })?;
                }
            }
            // Waitany: the first active request in array order (messages of one sender arrive
            // in order; which of several senders' comes first only a run can say, and the
            // statements that depend on it run as often either way); Waitsome: all active ones.
            "MPI_Waitany" | "MPI_Waitsome" => {
                let n = self.need_int(v.first(), call, "count", a(0))?;
                let Some(Val::P(c, o)) = v.get(1).cloned() else {
                    return Err(self.err(format!("{call}: requests not known before running")));
                };
                let mut active: Vec<(i64, usize, u64)> = Vec::new();
                for k in 0..n.max(0) {
                    let Some(e) = self.elem(c, o + k) else { continue };
                    if let Some(&(_, req)) = self.reqs.iter().find(|(key, _)| *key == e) {
                        active.push((k, e, req));
                    }
                }
                if name == "MPI_Waitany" {
                    active.truncate(1);
                }
                let done: Vec<u64> = active.iter().map(|x| x.2).collect();
                self.reqs.retain(|(_, r)| !done.contains(r));
                for (_, e, _) in &active {
                    self.put(*e, Cell::V(Val::Name(Rc::from("MPI_REQUEST_NULL"))));
                }
                if name == "MPI_Waitany" {
                    let idx = active.first().map_or(MPI_UNDEFINED, |x| x.0);
                    self.write_ptr(v.get(2), Val::I(idx));
                    if let Some(&req) = done.first() {
                        sink.action(TraceAction::Wait { req })?;
                    }
                } else {
                    let count = if active.is_empty() { MPI_UNDEFINED } else { active.len() as i64 };
                    self.write_ptr(v.get(2), Val::I(count));
                    let idx: Vec<Val> = active.iter().map(|x| Val::I(x.0)).collect();
                    self.write_buf(v.get(3), &idx);
                    if !done.is_empty() {
                        sink.action(TraceAction::Waitall { reqs: done })?;
                    }
                }
            }
            "MPI_Waitall" => {
                if !self.reqs.is_empty() {
                    self.reqs.clear();
                    sink.action(TraceAction::Waitall { reqs: Vec::new() })?;
                }
            }
            "MPI_Test" | "MPI_Testall" | "MPI_Testany" | "MPI_Testsome" | "MPI_Probe"
            | "MPI_Iprobe" => {
                return Err(self.err(format!(
                    "{call}: polling depends on timing; it is not modelled statically"
                )));
            }
            "MPI_Sendrecv" | "MPI_Sendrecv_replace" => {
                let (src_k, rtag_k, comm_k) = if name == "MPI_Sendrecv" {
                    (8, 9, 10)
                } else {
                    (5, 6, 7)
                };
                let comm = self.comm_id(v.get(comm_k), call)?;
                let size = self.comm_size(comm);
                let to = self.need_int(v.get(3), call, "destination", a(3))?;
                let to = self.peer(to, size, call, "destination")?;
                let from = self.need_int(v.get(src_k), call, "source", a(src_k))?;
                let from = self.peer(from, size, call, "source")?;
                let sb = bytes(self, 1, 2)?;
                let rb = if name == "MPI_Sendrecv" {
                    bytes(self, 6, 7).unwrap_or(sb)
                } else {
                    sb
                };
                let stag = v.get(4).and_then(|x| x.int()).unwrap_or(0);
                let rtag = tag_of(self, rtag_k);
                let n = count(self, 1)?;
                if let Some(Peer::Rank(t)) = to {
                    let vals = match derived_cells(v.get(2), n) {
                        None => self.read_buf(v.first(), dt_elems(v.get(2), n)),
                        Some(_) => None,
                    };
                    self.send_mail(comm, t, stag, vals);
                }
                let (rbuf, rn, rdt) = if name == "MPI_Sendrecv" {
                    (v.get(5), v.get(6).and_then(|x| x.int()).unwrap_or(0), v.get(7))
                } else {
                    (v.first(), n, v.get(2))
                };
                let cells = derived_cells(rdt, rn);
                let rn = cells.unwrap_or(dt_elems(rdt, rn));
                if from.is_some() {
                    let rt = v.get(rtag_k).and_then(|x| x.int()).unwrap_or(-1);
                    match self.recv_mail(comm, from, rt) {
                        Some(Some(vals)) if cells.is_none() => {
                            let rbuf = rbuf.cloned();
                            self.write_buf(rbuf.as_ref(), &vals)
                        }
                        _ => {
                            let rbuf = rbuf.cloned();
                            self.unknown_buf(rbuf.as_ref(), rn, "received")
                        }
                    }
                }
                match (to, from) {
                    (None, None) => {}
                    (Some(Peer::Rank(to)), None) => sink.action(TraceAction::Send {
                        to,
                        bytes: sb,
                        tag: stag as i32,
                        comm,
                        buffered: false,
                    })?,
                    (None, Some(from)) => sink.action(TraceAction::Recv {
                        from,
                        bytes: Some(rb),
                        tag: rtag,
                        comm,
                    })?,
                    (Some(Peer::Rank(to)), Some(from)) => sink.action(TraceAction::Sendrecv {
                        to,
                        send_bytes: sb,
                        send_tag: stag as i32,
                        from,
                        recv_bytes: Some(rb),
                        recv_tag: rtag,
                        comm,
                    })?,
                    (Some(Peer::Any), _) => {
                        return Err(self.err(format!("{call}: negative destination")))
                    }
                }
            }
            "MPI_Barrier" => {
                let comm = self.comm_id(v.first(), call)?;
                sink.action(TraceAction::Barrier { comm })?;
            }
            "MPI_Bcast" => {
                let comm = self.comm_id(v.get(4), call)?;
                let root = self.need_int(v.get(3), call, "root", a(3))?;
                let root = self.root(root, comm, call)?;
                let b = bytes(self, 1, 2)?;
                let n = count(self, 1)?;
                let cells = derived_cells(v.get(2), n);
                let n = dt_elems(v.get(2), n);
                let key = self.coll_key("bcast", comm);
                let me = self.my_rank(comm);
                if me == root {
                    // A long message carries its first SMALL_MESSAGE values (the rest is
                    // unknown where it lands); a derived datatype's, none.
                    let vals = match cells {
                        None => self.read_buf(v.first(), n.min(SMALL_MESSAGE)),
                        Some(_) => None,
                    };
                    self.sh
                        .mail
                        .borrow_mut()
                        .coll
                        .entry(key)
                        .or_default()
                        .insert(root, vals.unwrap_or_default());
                } else {
                    let got = self
                        .sh
                        .mail
                        .borrow()
                        .coll
                        .get(&key)
                        .and_then(|m| m.get(&root).cloned());
                    match got {
                        Some(_) if cells.is_some() => {
                            self.unknown_buf(v.first(), cells.unwrap_or(n), "broadcast through a derived datatype")
                        }
                        Some(vals) if vals.len() as i64 == n => self.write_buf(v.first(), &vals),
                        Some(vals) if n > SMALL_MESSAGE && vals.len() as i64 == SMALL_MESSAGE => {
                            self.unknown_buf(v.first(), n, "broadcast bulk data past its first values");
                            self.write_buf(v.first(), &vals);
                        }
                        Some(_) => self.unknown_buf(v.first(), n, "broadcast bulk data"),
                        None => {
                            self.missed = true;
                            self.unknown_buf(v.first(), cells.unwrap_or(n), "broadcast from a rank evaluated later")
                        }
                    }
                }
                sink.action(TraceAction::Bcast {
                    bytes: b,
                    root,
                    comm,
                })?;
            }
            "MPI_Scatter" => {
                let comm = self.comm_id(v.get(7), call)?;
                let root = self.need_int(v.get(6), call, "root", a(6))?;
                let root = self.root(root, comm, call)?;
                let me = self.my_rank(comm);
                let rn = count(self, 4)?;
                let b = bytes(self, 4, 5)?;
                let key = self.coll_key("scatter", comm);
                let cells = derived_cells(v.get(5), rn);
                let rn = dt_elems(v.get(5), rn);
                if me == root {
                    let sn = count(self, 1)?;
                    let (sn, holes) = (dt_elems(v.get(2), sn), derived_cells(v.get(2), sn));
                    let vals = match holes {
                        None => self.read_buf(v.first(), sn * self.comm_size(comm) as i64),
                        Some(_) => None,
                    };
                    self.sh
                        .mail
                        .borrow_mut()
                        .coll
                        .entry(key.clone())
                        .or_default()
                        .insert(root, vals.unwrap_or_default());
                }
                let got = self
                    .sh
                    .mail
                    .borrow()
                    .coll
                    .get(&key)
                    .and_then(|m| m.get(&root).cloned());
                match got {
                    Some(vals) if cells.is_none() && vals.len() as i64 >= rn * (me as i64 + 1) => {
                        let mine = vals[(rn * me as i64) as usize..(rn * (me as i64 + 1)) as usize]
                            .to_vec();
                        if !matches!(v.get(3), Some(Val::Name(_))) {
                            self.write_buf(v.get(3), &mine);
                        }
                    }
                    Some(_) => self.unknown_buf(v.get(3), cells.unwrap_or(rn), "scattered bulk data"),
                    None => {
                        self.missed = true;
                        self.unknown_buf(v.get(3), cells.unwrap_or(rn), "scattered from a rank evaluated later")
                    }
                }
                sink.action(TraceAction::Scatter {
                    bytes: b,
                    root,
                    comm,
                })?;
            }
            "MPI_Reduce" | "MPI_Allreduce" => {
                let all = name == "MPI_Allreduce";
                let comm = self.comm_id(v.get(if all { 5 } else { 6 }), call)?;
                let n = count(self, 2)?;
                let b = bytes(self, 2, 3)?;
                let root = if all {
                    None
                } else {
                    Some(self.root(self.need_int(v.get(5), call, "root", a(5))?, comm, call)?)
                };
                let op = op_name(v.get(4));
                let elems = dt_elems(v.get(3), n);
                let send = if is_in_place(v.first()) { v.get(1) } else { v.first() };
                let mine = self
                    .read_buf(send, elems)
                    .unwrap_or_else(|| vec![Val::unknown("reduction of bulk data"); elems.clamp(0, SMALL_MESSAGE) as usize]);
                let key = self.coll_key("reduce", comm);
                let me = self.my_rank(comm);
                let result = match op.strip_prefix(USER_OP) {
                    Some(user) => {
                        let commute = user.starts_with('1');
                        let f = user.get(2..).unwrap_or_default().to_string();
                        let parts = self.contribute(&key, comm, Some(mine.clone()));
                        let size = self.comm_size(comm);
                        let calls = user_op_calls(all, commute, me, root.unwrap_or(0), size, b);
                        let wants = all || root == Some(me);
                        let dt = v.get(3).cloned().unwrap_or(Val::I(0));
                        let r = self.user_reduction(&f, parts, &mine, n, dt, calls, wants, sink)?;
                        // The calls run inside the reduction: a traced run counts them in the
                        // burst its wrapper closes when the call returns, before the action.
                        self.flush(sink)?;
                        r
                    }
                    None => self.contribute_with(&key, comm, Some(mine), |parts| reduce_refs(&op, parts)),
                };
                let n = elems;
                if all || root == Some(me) {
                    match result {
                        Some(acc) => {
                            self.write_buf(v.get(1), &acc);
                        }
                        None => self.unknown_buf(v.get(1), n, "reduced over ranks evaluated later"),
                    }
                }
                sink.action(match root {
                    None => TraceAction::Allreduce { bytes: b, comm },
                    Some(root) => TraceAction::Reduce {
                        bytes: b,
                        root,
                        comm,
                    },
                })?;
            }
            "MPI_Gather" | "MPI_Allgather" => {
                let all = name == "MPI_Allgather";
                let comm = self.comm_id(v.get(if all { 6 } else { 7 }), call)?;
                // MPI_IN_PLACE: the send count and type are ignored; this rank's part is in
                // place in the receive buffer.
                let in_place = is_in_place(v.first());
                let (ck, dk) = if in_place { (4, 5) } else { (1, 2) };
                let n = count(self, ck)?;
                let b = bytes(self, ck, dk)?;
                let key = self.coll_key("gather", comm);
                let send = if in_place {
                    let me = self.my_rank(comm) as i64;
                    v.get(3).map(|p| offset(p, me * n))
                } else {
                    v.first().cloned()
                };
                // Sent through a derived datatype: no values (the root's part for it is unknown).
                let sent = match (in_place, derived_cells(v.get(2), n)) {
                    (false, Some(_)) => None,
                    _ => self.read_buf(send.as_ref(), dt_elems(v.get(dk), n)),
                };
                let mine = sent.unwrap_or_else(|| {
                    vec![Val::unknown("gathered bulk data"); n.clamp(0, SMALL_MESSAGE) as usize]
                });
                let result = self.contribute(&key, comm, Some(mine));
                let root = if all {
                    None
                } else {
                    Some(self.root(self.need_int(v.get(6), call, "root", a(6))?, comm, call)?)
                };
                let me = self.my_rank(comm);
                if all || root == Some(me) {
                    let rn = count(self, 4)?;
                    let cells = derived_cells(v.get(5), rn);
                    let rn = dt_elems(v.get(5), rn);
                    match result {
                        Some(_) if cells.is_some() => {
                            let total = cells.unwrap_or(rn) * self.comm_size(comm) as i64;
                            self.unknown_buf(v.get(3), total, "gathered through a derived datatype")
                        }
                        // Each rank's part at its place; a part of another length (sent with
                        // another type) is unknown there.
                        Some(parts) => {
                            for (r, part) in parts.iter().enumerate() {
                                let at = v.get(3).map(|p| offset(p, r as i64 * rn));
                                if part.len() as i64 == rn {
                                    self.write_buf(at.as_ref(), part);
                                } else {
                                    self.unknown_buf(at.as_ref(), rn, "gathered with another datatype");
                                }
                            }
                        }
                        None => {
                            let total = rn * self.comm_size(comm) as i64;
                            self.unknown_buf(v.get(3), total, "gathered from ranks evaluated later")
                        }
                    }
                }
                sink.action(match root {
                    None => TraceAction::Allgather { bytes: b, comm },
                    Some(root) => TraceAction::Gather {
                        bytes: b,
                        root,
                        comm,
                    },
                })?;
            }
            "MPI_Alltoall" => {
                let comm = self.comm_id(v.get(6), call)?;
                let in_place = is_in_place(v.first());
                let (ck, dk) = if in_place { (4, 5) } else { (1, 2) };
                let b = bytes(self, ck, dk)?;
                let n = count(self, ck)?;
                let size = self.comm_size(comm) as i64;
                let key = self.coll_key("alltoall", comm);
                let send = if in_place { v.get(3) } else { v.first() };
                let derived = derived_cells(v.get(if in_place { 5 } else { 2 }), n).is_some()
                    || derived_cells(v.get(5), n).is_some();
                let n = dt_elems(v.get(dk), n);
                let sent = if derived { None } else { self.read_buf(send, n * size) };
                let mine = sent.unwrap_or_else(|| {
                    vec![
                        Val::unknown("exchanged bulk data");
                        (n * size).clamp(0, SMALL_MESSAGE) as usize
                    ]
                });
                let me = self.my_rank(comm) as i64;
                match self.contribute(&key, comm, Some(mine)) {
                    // Through a derived datatype, here or at another rank: no values.
                    Some(parts) if derived || parts.iter().any(|p| p.len() as i64 != n * size) => {
                        let cells = derived_cells(v.get(5), n).unwrap_or(n);
                        self.unknown_buf(v.get(3), cells * size, "exchanged through a derived datatype")
                    }
                    Some(parts) => {
                        let mut out = Vec::new();
                        for p in &parts {
                            let lo = (me * n) as usize;
                            out.extend(
                                p.get(lo..lo + n as usize)
                                    .map(|s| s.to_vec())
                                    .unwrap_or_default(),
                            );
                        }
                        self.write_buf(v.get(3), &out);
                    }
                    None => {
                        self.unknown_buf(v.get(3), n * size, "exchanged with ranks evaluated later")
                    }
                }
                sink.action(TraceAction::Alltoall { bytes: b, comm })?;
            }
            "MPI_Scan" | "MPI_Exscan" => {
                let comm = self.comm_id(v.get(5), call)?;
                let b = bytes(self, 2, 3)?;
                let n = count(self, 2)?;
                // The prefix over lower ranks (this one included for Scan); Exscan leaves rank
                // 0's buffer as it was.
                let me = self.my_rank(comm) as usize;
                let upto = if name == "MPI_Scan" { me + 1 } else { me };
                match self.reduced_parts("scan", &v, comm, n, n) {
                    Some(parts) if upto > 0 => {
                        let acc = reduce_all(&op_name(v.get(4)), &parts[..upto.min(parts.len())]);
                        self.write_buf(v.get(1), &acc);
                    }
                    Some(_) => {}
                    None => self.unknown_buf(v.get(1), n, "scanned over ranks evaluated later"),
                }
                sink.action(TraceAction::Scan { bytes: b, comm })?;
            }
            "MPI_Reduce_scatter_block" => {
                let comm = self.comm_id(v.get(5), call)?;
                let b = bytes(self, 2, 3)?;
                let n = count(self, 2)?;
                let size = self.comm_size(comm) as i64;
                let me = self.my_rank(comm) as usize;
                match self.reduced_parts("reduce_scatter", &v, comm, n * size, n) {
                    Some(parts) => {
                        let acc = reduce_all(&op_name(v.get(4)), &parts);
                        let lo = (me as i64 * n).min(acc.len() as i64) as usize;
                        let hi = ((me as i64 + 1) * n).min(acc.len() as i64) as usize;
                        self.write_buf(v.get(1), &acc[lo..hi]);
                    }
                    None => self.unknown_buf(v.get(1), n, "reduced over ranks evaluated later"),
                }
                sink.action(TraceAction::ReduceScatter {
                    counts: vec![b; size as usize],
                    comm,
                })?;
            }
            "MPI_Gatherv" | "MPI_Scatterv" | "MPI_Allgatherv" | "MPI_Alltoallv" | "MPI_Reduce_scatter" => {
                return self.v_collective(name, args, &v, sink);
            }
            "P2Psend" => {
                let to = self.need_int(v.first(), call, "peer", a(0))?;
                if let Some(Peer::Rank(to)) = self.peer(to, self.size, call, "peer")? {
                    let req = self.fresh_req();
                    let b = self.need_int(v.get(2), call, "size", a(2)).unwrap_or(0);
                    sink.action(TraceAction::Isend {
                        req,
                        to,
                        bytes: b.max(0) as u64,
                        tag: 0,
                        comm: COMM_WORLD,
                    })?;
                    self.reqs.push((usize::MAX, req));
                }
            }
            "P2Preceive" => {
                let from = self.need_int(v.first(), call, "peer", a(0))?;
                if let Some(from) = self.peer(from, self.size, call, "peer")? {
                    let b = v.get(2).and_then(|x| x.int()).map(|x| x.max(0) as u64);
                    sink.action(TraceAction::Recv {
                        from,
                        bytes: b,
                        tag: Tag::Any,
                        comm: COMM_WORLD,
                    })?;
                }
            }
            "P2Pwait" => {
                if !self.reqs.is_empty() {
                    self.reqs.clear();
                    sink.action(TraceAction::Waitall { reqs: Vec::new() })?;
                }
            }
            "P2Pconverged" => {
                sink.action(TraceAction::Allreduce {
                    bytes: 4,
                    comm: COMM_WORLD,
                })?;
                return Ok(Val::unknown("convergence test: known only at run time"));
            }
            "P2Pallreduce" => sink.action(TraceAction::Allreduce {
                bytes: 8,
                comm: COMM_WORLD,
            })?,
            "P2Pbarrier" => sink.action(TraceAction::Barrier { comm: COMM_WORLD })?,
            "P2Pset_scheme" | "P2Pfinalize" => {}
            other if crate::frontend::mpi::comm_signature(other).is_some() => {
                return Err(self.err(format!("{other} is not modelled statically")))
            }
            other => return self.libc(other, v),
        }
        Ok(Val::I(0))
    }

    fn root(&self, r: i64, comm: u32, call: &str) -> R<u32> {
        let size = self.comm_size(comm);
        if r < 0 || r as u32 >= size {
            return Err(self.err(format!("{call}: root {r} is not a rank of {size}")));
        }
        Ok(r as u32)
    }

    /// The smallest request id not outstanding, as the trace runtime gives them: every
    /// iteration of a loop uses the same ids, and the rank's trace folds.
    fn fresh_req(&self) -> u64 {
        (0..).find(|id| !self.reqs.iter().any(|(_, r)| r == id)).unwrap_or(0)
    }

    fn new_req(&mut self, v: Option<&Val>) -> u64 {
        let id = self.fresh_req();
        let key = match v {
            Some(Val::P(c, o)) => self.elem(*c, *o).unwrap_or(usize::MAX),
            _ => usize::MAX,
        };
        self.reqs.push((key, id));
        id
    }

    /// v-collectives: their counts arrays must be known (small arrays of scalars).
    fn v_collective(
        &mut self,
        name: &str,
        args: &[CExpr],
        v: &[Val],
        sink: &mut dyn Sink,
    ) -> R<Val> {
        let call = name;
        let comm_k = match name {
            "MPI_Gatherv" | "MPI_Scatterv" => 8,
            "MPI_Allgatherv" => 7,
            "MPI_Reduce_scatter" => 5,
            _ => 8,
        };
        let comm = self.comm_id(v.get(comm_k), call)?;
        let size = self.comm_size(comm) as i64;
        let list = |me: &mut Self, k: usize, dk: usize| -> R<Counts> {
            let b = me.dt_bytes(v.get(dk), call, args.get(dk))?;
            let vals = me.read_buf(v.get(k), size);
            let why = vals
                .as_ref()
                .and_then(|x| x.iter().find(|c| c.int().is_none()))
                .map(|c| format!(": {}", c.why()))
                .unwrap_or_default();
            let counts: Option<Vec<u64>> = vals.and_then(|x| {
                x.iter()
                    .map(|c| c.int().map(|c| c.max(0) as u64 * b))
                    .collect()
            });
            counts.map(Counts::from).ok_or_else(|| {
                let t = args.get(k).map(crate::frontend::analyze::cexpr_text).unwrap_or_default();
                me.err(format!("{call}: counts `{t}` are not known before running (v-collectives need their counts{why})"))
            })
        };
        let count_bytes = |me: &mut Self, k: usize, dk: usize| -> R<u64> {
            let n = me.need_int(v.get(k), call, "count", args.get(k))?;
            Ok(n.max(0) as u64 * me.dt_bytes(v.get(dk), call, args.get(dk))?)
        };
        let a = match name {
            "MPI_Alltoallv" => {
                // In place: the receive counts and type stand for the send ones.
                let recv = list(self, 5, 7)?;
                let send = if is_in_place(v.first()) { recv.clone() } else { list(self, 1, 3)? };
                TraceAction::Alltoallv { send, recv, comm }
            }
            "MPI_Allgatherv" => TraceAction::Allgatherv {
                counts: list(self, 4, 6)?,
                comm,
            },
            "MPI_Reduce_scatter" => {
                let counts = list(self, 2, 3)?;
                // This rank's share of the reduction over all ranks' whole buffers.
                let each: Vec<i64> = self
                    .read_buf(v.get(2), size)
                    .map(|c| c.iter().map(|x| x.int().unwrap_or(0).max(0) as i64).collect())
                    .unwrap_or_default();
                let me = self.my_rank(comm) as usize;
                let lo: i64 = each.iter().take(me).sum();
                let mine = each.get(me).copied().unwrap_or(0);
                match self.reduced_parts("reduce_scatter", v, comm, each.iter().sum(), mine) {
                    Some(parts) => {
                        let acc = reduce_all(&op_name(v.get(4)), &parts);
                        let lo = (lo as usize).min(acc.len());
                        let hi = (lo + mine as usize).min(acc.len());
                        self.write_buf(v.get(1), &acc[lo..hi]);
                    }
                    None => self.unknown_buf(v.get(1), mine, "reduced over ranks evaluated later"),
                }
                TraceAction::ReduceScatter { counts, comm }
            }
            "MPI_Gatherv" => {
                let root = self.need_int(v.get(7), call, "root", args.get(7))?;
                let root = self.root(root, comm, call)?;
                let counts = if self.my_rank(comm) == root {
                    list(self, 4, 6)?
                } else {
                    let mine = count_bytes(self, 1, 2)?;
                    self.roots_counts(comm, root, None, mine)
                };
                if self.my_rank(comm) == root {
                    self.roots_counts(comm, root, Some(&counts), 0);
                }
                TraceAction::Gatherv { counts, root, comm }
            }
            _ => {
                let root = self.need_int(v.get(7), call, "root", args.get(7))?;
                let root = self.root(root, comm, call)?;
                let counts = if self.my_rank(comm) == root {
                    list(self, 1, 3)?
                } else {
                    let mine = count_bytes(self, 5, 6)?;
                    self.roots_counts(comm, root, None, mine)
                };
                if self.my_rank(comm) == root {
                    self.roots_counts(comm, root, Some(&counts), 0);
                }
                TraceAction::Scatterv { counts, root, comm }
            }
        };
        // What lands in the receive buffer is not computed here: its elements become unknown
        // (they must not keep what they held before).
        let recv = match name {
            "MPI_Alltoallv" | "MPI_Scatterv" => v.get(4),
            "MPI_Reduce_scatter" => None,
            _ => v.get(3),
        };
        if let Some(Val::P(c, _)) = recv {
            let receives = name != "MPI_Gatherv" || matches!(&a, TraceAction::Gatherv { root, .. } if *root == self.my_rank(comm));
            if receives {
                self.touched(*c);
                let why: Rc<str> = Rc::from(format!("received by {name} at {}:{}", self.file, self.line));
                self.poison_cells(*c, &why);
            }
        }
        sink.action(a)?;
        Ok(Val::I(0))
    }
}

struct NullSink;

impl Sink for NullSink {
    fn compute(&mut self, _: &[(usize, f64)]) -> Result<(), Unresolved> {
        Ok(())
    }
    fn action(&mut self, _: TraceAction) -> Result<(), Unresolved> {
        Ok(())
    }
    fn begin_loop(&mut self, _: u64) -> Result<(), Unresolved> {
        Ok(())
    }
    fn end_loop(&mut self) -> Result<(), Unresolved> {
        Ok(())
    }
}

/// A cell's value; arrays and structs read as unknown.
fn cell_val(c: &Cell) -> Val {
    match c {
        Cell::V(v) => v.clone(),
        _ => Val::unknown("not a scalar"),
    }
}

fn merge(v: Vec<(usize, f64)>) -> Vec<(usize, f64)> {
    let mut out: Vec<(usize, f64)> = Vec::with_capacity(v.len());
    for (b, n) in v {
        match out.last_mut() {
            Some((lb, ln)) if *lb == b => *ln += n,
            _ => out.push((b, n)),
        }
    }
    out
}

/// The type in a byte count `sizeof(T)`, `n * sizeof(T)` or `sizeof(T) * n`.
fn sizeof_type(e: &CExpr) -> Option<CType> {
    match e {
        CExpr::Sizeof { ty: Some(t), .. } => Some(t.clone()),
        CExpr::Binary { op, left, right } if op == "*" => {
            sizeof_type(left).or_else(|| sizeof_type(right))
        }
        CExpr::Cast { value, .. } => sizeof_type(value),
        _ => None,
    }
}

fn num_val(v: f64) -> Val {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        Val::I(v as i64)
    } else {
        Val::F(v)
    }
}

fn bool_val(v: Val) -> Val {
    match v.truth() {
        Some(t) => Val::I(t as i64),
        None => v,
    }
}

fn convert(v: Val, ty: &CType) -> Val {
    if ty.indirection > 0 {
        return v;
    }
    // An integer converted to a narrower integer type keeps its low bits (as gcc does).
    if let Val::I(x) = v {
        let named = |n: &str| match n {
            "int8_t" => Some((1, false)),
            "uint8_t" => Some((1, true)),
            "int16_t" => Some((2, false)),
            "uint16_t" => Some((2, true)),
            "int32_t" => Some((4, false)),
            "uint32_t" | "unsigned" => Some((4, true)),
            _ => None,
        };
        let narrow = match &ty.base {
            Base::Int => Some((if ty.width == 0 { 4 } else { ty.width }, ty.unsigned)),
            Base::Named(n) => named(n.as_str()),
            _ => None,
        };
        return Val::I(match narrow {
            Some((1, false)) => x as i8 as i64,
            Some((1, true)) => x as u8 as i64,
            Some((2, false)) => x as i16 as i64,
            Some((2, true)) => x as u16 as i64,
            Some((4, false)) => x as i32 as i64,
            Some((4, true)) => x as u32 as i64,
            _ => x,
        });
    }
    match (&ty.base, v) {
        (Base::Int, Val::F(f)) => Val::I(f as i64),
        (Base::Float | Base::Double, Val::I(i)) => Val::F(i as f64),
        (Base::Named(n), Val::F(f))
            if matches!(
                n.as_str(),
                "long" | "size_t" | "unsigned" | "short" | "char" | "int64_t"
            ) =>
        {
            Val::I(f as i64)
        }
        (_, v) => v,
    }
}

fn unary(op: &str, a: Val) -> Val {
    match (op, a) {
        ("-", Val::I(i)) => Val::I(i.wrapping_neg()),
        ("-", Val::F(f)) => Val::F(-f),
        ("+", v) => v,
        ("!", v) => match v.truth() {
            Some(t) => Val::I(!t as i64),
            None => v,
        },
        ("~", Val::I(i)) => Val::I(!i),
        (_, v @ Val::U(_)) => v,
        (op, v) => Val::unknown(format!("{op} of {v:?}")),
    }
}

fn binary(op: &str, a: Val, b: Val) -> Val {
    // Numbers first (most of what a program computes), the operator told by its bytes.
    match (&a, &b) {
        (Val::I(x), Val::I(y)) => {
            if let Some(v) = int_binary(op.as_bytes(), *x, *y) {
                return v;
            }
        }
        (Val::I(_) | Val::F(_), Val::I(_) | Val::F(_)) => {
            if let (Some(x), Some(y)) = (a.num(), b.num()) {
                if let Some(v) = float_binary(op.as_bytes(), x, y) {
                    return v;
                }
            }
        }
        _ => {}
    }
    if let Val::U(_) = a {
        return a;
    }
    if let Val::U(_) = b {
        return b;
    }
    match (op, &a, &b) {
        ("==", Val::Comm(x), Val::Comm(y)) => return Val::I((x == y) as i64),
        ("!=", Val::Comm(x), Val::Comm(y)) => return Val::I((x != y) as i64),
        // A communicator is never MPI_COMM_NULL (-1 here).
        // OpenMPI's sentinel pointers are not NULL: `MPI_UNWEIGHTED != NULL`.
        ("==" | "!=", Val::Name(n), Val::I(0)) | ("==" | "!=", Val::I(0), Val::Name(n))
            if matches!(&**n, "MPI_UNWEIGHTED" | "MPI_WEIGHTS_EMPTY" | "MPI_IN_PLACE") =>
        {
            return Val::I((op == "!=") as i64)
        }
        ("==" | "!=", Val::Comm(_), Val::I(-1)) | ("==" | "!=", Val::I(-1), Val::Comm(_)) => {
            return Val::I((op == "!=") as i64)
        }
        // Datatypes are known by their sizes: only MPI_DATATYPE_NULL (no data) tells apart.
        ("==" | "!=", Val::Dt(x) | Val::Dv(x, ..), Val::Dt(y) | Val::Dv(y, ..)) if *x == 0 || *y == 0 => {
            return Val::I(((x == y) == (op == "==")) as i64)
        }
        ("==" | "!=", Val::S(x, o1), Val::S(y, o2)) => {
            return Val::I(((Rc::ptr_eq(x, y) && o1 == o2) == (op == "==")) as i64)
        }
        ("-", Val::S(x, o1), Val::S(y, o2)) if Rc::ptr_eq(x, y) => {
            return Val::I(*o1 as i64 - *o2 as i64)
        }
        ("+", Val::S(s, o), Val::I(i)) => {
            return Val::S(s.clone(), (*o as i64 + i).max(0) as usize)
        }
        ("+", Val::P(c, o), Val::I(i)) => return Val::P(*c, o + i),
        ("-", Val::P(c, o), Val::I(i)) => return Val::P(*c, o - i),
        ("==" | "!=", Val::P(..), Val::I(0)) | ("==" | "!=", Val::S(..), Val::I(0)) => {
            return Val::I((op == "!=") as i64)
        }
        ("==" | "!=", Val::I(0), Val::P(..)) | ("==" | "!=", Val::I(0), Val::S(..)) => {
            return Val::I((op == "!=") as i64)
        }
        ("==" | "!=", Val::P(c1, o1), Val::P(c2, o2)) => {
            return Val::I(((c1 == c2 && o1 == o2) == (op == "==")) as i64)
        }
        ("-", Val::P(c1, o1), Val::P(c2, o2)) if c1 == c2 => return Val::I(o1 - o2),
        _ => {}
    }
    match (a, b) {
        (Val::I(x), Val::I(y)) => match op {
            "+" => Val::I(x.wrapping_add(y)),
            "-" => Val::I(x.wrapping_sub(y)),
            "*" => Val::I(x.wrapping_mul(y)),
            "/" if y != 0 => Val::I(x.wrapping_div(y)),
            "%" if y != 0 => Val::I(x.wrapping_rem(y)),
            "/" | "%" => Val::unknown("division by zero"),
            "<<" => Val::I(x.wrapping_shl(y as u32)),
            ">>" => Val::I(x.wrapping_shr(y as u32)),
            "&" => Val::I(x & y),
            "|" => Val::I(x | y),
            "^" => Val::I(x ^ y),
            "<" => Val::I((x < y) as i64),
            "<=" => Val::I((x <= y) as i64),
            ">" => Val::I((x > y) as i64),
            ">=" => Val::I((x >= y) as i64),
            "==" => Val::I((x == y) as i64),
            "!=" => Val::I((x != y) as i64),
            _ => Val::unknown(format!("operator {op}")),
        },
        (a, b) => match (a.num(), b.num()) {
            (Some(x), Some(y)) => match op {
                "+" => Val::F(x + y),
                "-" => Val::F(x - y),
                "*" => Val::F(x * y),
                "/" => Val::F(x / y),
                "<" => Val::I((x < y) as i64),
                "<=" => Val::I((x <= y) as i64),
                ">" => Val::I((x > y) as i64),
                ">=" => Val::I((x >= y) as i64),
                "==" => Val::I((x == y) as i64),
                "!=" => Val::I((x != y) as i64),
                _ => Val::unknown(format!("operator {op} on floating values")),
            },
            _ => match (&a, &b) {
                (Val::Name(n), _) | (_, Val::Name(n)) => {
                    Val::unknown(format!("{n} has no value the evaluation knows"))
                }
                _ => Val::unknown(format!("operator {op} on {a:?} and {b:?}")),
            },
        },
    }
}

/// `binary` on two integers, where the operator is one it knows.
fn int_binary(op: &[u8], x: i64, y: i64) -> Option<Val> {
    Some(Val::I(match op {
        [b'+'] => x.wrapping_add(y),
        [b'-'] => x.wrapping_sub(y),
        [b'*'] => x.wrapping_mul(y),
        [b'/'] if y != 0 => x.wrapping_div(y),
        [b'%'] if y != 0 => x.wrapping_rem(y),
        [b'<', b'<'] => x.wrapping_shl(y as u32),
        [b'>', b'>'] => x.wrapping_shr(y as u32),
        [b'&'] => x & y,
        [b'|'] => x | y,
        [b'^'] => x ^ y,
        [b'<'] => (x < y) as i64,
        [b'<', b'='] => (x <= y) as i64,
        [b'>'] => (x > y) as i64,
        [b'>', b'='] => (x >= y) as i64,
        [b'=', b'='] => (x == y) as i64,
        [b'!', b'='] => (x != y) as i64,
        _ => return None,
    }))
}

/// `binary` on two numbers, one of them floating, where the operator is one it knows.
fn float_binary(op: &[u8], x: f64, y: f64) -> Option<Val> {
    Some(match op {
        [b'+'] => Val::F(x + y),
        [b'-'] => Val::F(x - y),
        [b'*'] => Val::F(x * y),
        [b'/'] => Val::F(x / y),
        [b'<'] => Val::I((x < y) as i64),
        [b'<', b'='] => Val::I((x <= y) as i64),
        [b'>'] => Val::I((x > y) as i64),
        [b'>', b'='] => Val::I((x >= y) as i64),
        [b'=', b'='] => Val::I((x == y) as i64),
        [b'!', b'='] => Val::I((x != y) as i64),
        _ => return None,
    })
}

/// A communicator's graph topology (see `Interp::topo`).
#[derive(Clone, Debug)]
struct Topo {
    kind: i64,
    sources: Vec<i64>,
    dests: Vec<i64>,
    weighted: bool,
    index: Vec<i64>,
    edges: Vec<i64>,
}

/// OpenMPI's topology kinds (MPI_Topo_test).
const MPI_GRAPH: i64 = 2;
const MPI_DIST_GRAPH: i64 = 3;

/// Buffer elements one element of datatype `dt` spans: 1 for a basic type.
fn dt_span(dt: Option<&Val>) -> i64 {
    match dt {
        Some(Val::Dv(_, s, _)) => (*s).max(1),
        _ => 1,
    }
}

/// Whether datatype `dt` moves every buffer element it spans (a basic or contiguous type).
fn dt_dense(dt: Option<&Val>) -> bool {
    !matches!(dt, Some(Val::Dv(_, _, false)))
}

/// Buffer elements `n` elements of datatype `dt` move, value by value: `n` of a basic type,
/// all they span of a contiguous one.
fn dt_elems(dt: Option<&Val>, n: i64) -> i64 {
    match dt {
        Some(Val::Dv(_, s, true)) => n.max(0).saturating_mul((*s).max(1)),
        _ => n,
    }
}

/// Buffer elements `n` elements of datatype `dt` span where it has holes (their values are
/// not moved one by one: they arrive unknown); None for a basic or contiguous type.
fn derived_cells(dt: Option<&Val>, n: i64) -> Option<i64> {
    match dt {
        Some(Val::Dv(_, s, false)) => Some(n.max(0).saturating_mul((*s).max(1))),
        _ => None,
    }
}

/// Whether a buffer argument is MPI_IN_PLACE.
fn is_in_place(v: Option<&Val>) -> bool {
    matches!(v, Some(Val::Name(x)) if &**x == "MPI_IN_PLACE")
}

/// A pointer `k` elements further (other values as they are).
fn offset(p: &Val, k: i64) -> Val {
    match p {
        Val::P(c, o) => Val::P(*c, o + k),
        other => other.clone(),
    }
}

/// The function a call passes by name (`cmp` or `&cmp`).
fn function_named(e: &CExpr) -> Option<&str> {
    match e {
        CExpr::Ident(n) => Some(n.as_str()),
        CExpr::Unary { op, arg } if op == "&" => match &**arg {
            CExpr::Ident(n) => Some(n.as_str()),
            _ => None,
        },
        CExpr::Cast { value, .. } => function_named(value),
        _ => None,
    }
}

/// What a user-defined operation's name starts with (then `1:` or `0:`, whether it commutes,
/// and its function).
const USER_OP: &str = "\u{1}op:";

/// How many times rank `me` of `size` calls a user-defined operation in a reduction of `bytes`
/// (OpenMPI 4.1's choices, as measured here): an operation that does not commute is applied
/// in rank order at the root (at rank 0 for MPI_Allreduce, which then broadcasts), or, from 8
/// ranks on for messages under 2,048 bytes, once per child of the in-order binary tree; one
/// that commutes, once per child of a binomial tree rooted at the root, or at every step of
/// recursive doubling for MPI_Allreduce.
fn user_op_calls(all: bool, commute: bool, me: u32, root: u32, size: u32, bytes: u64) -> usize {
    let size = size.max(1);
    let root = if all { 0 } else { root };
    match commute {
        false if size >= 8 && bytes < 2048 => in_order_children(me, size),
        false => if me == root { size as usize - 1 } else { 0 },
        true => commuting_calls(all, me, root, size),
    }
}

/// The children of rank `me` in OpenMPI's in-order binary tree of `size` ranks (rooted at
/// size - 1: each subtree holds consecutive ranks, its root the last of them).
fn in_order_children(me: u32, size: u32) -> usize {
    let (mut me, mut size) = (i64::from(me), i64::from(size));
    let mut parent = size - 1;
    loop {
        let right = size >> 1;
        let left_child = if size > 1 { parent - 1 } else { -1 };
        let right_child = if left_child > 0 { right - 1 } else { -1 };
        if me == parent {
            return usize::from(left_child >= 0) + usize::from(right_child >= 0);
        }
        if me > right_child {
            size = size - right - 1;
            me -= right;
            parent = size - 1;
        } else {
            size = right;
            parent = right_child;
        }
    }
}

/// `user_op_calls` for an operation that commutes.
fn commuting_calls(all: bool, me: u32, root: u32, size: u32) -> usize {
    match all {
        true => (u32::BITS - (size - 1).leading_zeros()) as usize,
        false => {
            let vr = (me + size - root) % size;
            let mut children = 0;
            let mut k = 1u32;
            while vr + k < size && (vr == 0 || k < (vr & vr.wrapping_neg())) {
                children += 1;
                k <<= 1;
            }
            children
        }
    }
}

/// The operation's name (`MPI_SUM`), empty when not a name.
fn op_name(v: Option<&Val>) -> String {
    match v {
        Some(Val::Name(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// The element-wise reduction of `parts` (in rank order) by `op`.
fn reduce_refs(op: &str, parts: &[&Vec<Val>]) -> Vec<Val> {
    let mut acc: Vec<Val> = parts.first().map(|p| (*p).clone()).unwrap_or_default();
    // An unknown stays itself through a sum or a product (`binary`): an element that is
    // unknown already needs no more parts, and once every element is, nothing does (a residual
    // of bulk data summed over 1,024 ranks by each of them).
    let sticky = matches!(op, "MPI_SUM" | "MPI_PROD");
    for p in parts.iter().skip(1) {
        if sticky && acc.iter().all(Val::is_unknown) {
            break;
        }
        for (k, x) in p.iter().enumerate() {
            if let Some(a) = acc.get_mut(k) {
                if sticky && a.is_unknown() {
                    continue;
                }
                *a = reduce_op(op, std::mem::replace(a, Val::I(0)), x.clone());
            }
        }
    }
    acc
}

/// `reduce_refs` over owned contributions.
fn reduce_all(op: &str, parts: &[Vec<Val>]) -> Vec<Val> {
    reduce_refs(op, &parts.iter().collect::<Vec<_>>())
}

fn reduce_op(op: &str, a: Val, b: Val) -> Val {
    match op {
        "MPI_SUM" => binary("+", a, b),
        "MPI_PROD" => binary("*", a, b),
        "MPI_MAX" => match binary("<", a.clone(), b.clone()).truth() {
            Some(true) => b,
            Some(false) => a,
            None => Val::unknown("reduction of bulk data"),
        },
        "MPI_MIN" => match binary("<", a.clone(), b.clone()).truth() {
            Some(true) => a,
            Some(false) => b,
            None => Val::unknown("reduction of bulk data"),
        },
        // A known false (true) decides a logical and (or); otherwise an unknown stays unknown.
        "MPI_LAND" => match (a.truth(), b.truth()) {
            (Some(false), _) | (_, Some(false)) => Val::I(0),
            (Some(true), Some(true)) => Val::I(1),
            _ => {
                if a.is_unknown() {
                    a
                } else {
                    b
                }
            }
        },
        "MPI_LOR" => match (a.truth(), b.truth()) {
            (Some(true), _) | (_, Some(true)) => Val::I(1),
            (Some(false), Some(false)) => Val::I(0),
            _ => {
                if a.is_unknown() {
                    a
                } else {
                    b
                }
            }
        },
        _ => Val::unknown(format!("reduction {op}")),
    }
}

/// strtol-like: value and bytes used.
fn parse_int(t: &str, base: u32) -> (i64, usize) {
    let s = t.trim_start();
    let lead = t.len() - s.len();
    let (neg, s2) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut base = if base == 0 { 10 } else { base };
    let mut body = s2;
    if base == 16 && (s2.starts_with("0x") || s2.starts_with("0X")) {
        body = &s2[2..];
    }
    if base == 0 {
        base = 10;
    }
    let digits: String = body.chars().take_while(|c| c.is_digit(base)).collect();
    let v = i64::from_str_radix(&digits, base).unwrap_or(0);
    let used = if digits.is_empty() {
        0
    } else {
        lead + (s.len() - s2.len()) + (s2.len() - body.len()) + digits.len()
    };
    (if neg { -v } else { v }, used)
}

fn parse_float(t: &str) -> (f64, usize) {
    let s = t.trim_start();
    let lead = t.len() - s.len();
    let mut end = 0;
    let b = s.as_bytes();
    let mut seen_e = false;
    while end < b.len() {
        let c = b[end] as char;
        let ok = c.is_ascii_digit()
            || c == '.'
            || ((c == '-' || c == '+') && (end == 0 || matches!(b[end - 1], b'e' | b'E')))
            || ((c == 'e' || c == 'E') && !seen_e && end > 0);
        if !ok {
            break;
        }
        if c == 'e' || c == 'E' {
            seen_e = true;
        }
        end += 1;
    }
    while end > 0 && s[..end].parse::<f64>().is_err() {
        end -= 1;
    }
    (
        s[..end].parse().unwrap_or(0.0),
        if end == 0 { 0 } else { lead + end },
    )
}

/// sscanf: the values converted, in order, until the first failure.
fn scan(text: &str, fmt: &str) -> Vec<Val> {
    let mut out = Vec::new();
    let mut t = text;
    let mut f = fmt.chars().peekable();
    while let Some(c) = f.next() {
        if c == '%' {
            let mut conv = String::new();
            while let Some(&n) = f.peek() {
                f.next();
                if n.is_ascii_alphabetic() && !matches!(n, 'l' | 'h' | 'z' | 'j' | 'L') {
                    conv.push(n);
                    break;
                }
                conv.push(n);
            }
            let kind = conv.chars().last().unwrap_or('d');
            if kind != 'c' {
                t = t.trim_start();
            }
            match kind {
                'd' | 'i' | 'u' | 'x' => {
                    let (v, used) = parse_int(t, if kind == 'x' { 16 } else { 10 });
                    if used == 0 {
                        return out;
                    }
                    out.push(Val::I(v));
                    t = &t[used..];
                }
                'f' | 'g' | 'e' | 'a' => {
                    let (v, used) = parse_float(t);
                    if used == 0 {
                        return out;
                    }
                    out.push(Val::F(v));
                    t = &t[used..];
                }
                's' => {
                    let w: String = t.chars().take_while(|c| !c.is_whitespace()).collect();
                    if w.is_empty() {
                        return out;
                    }
                    t = &t[w.len()..];
                    out.push(Val::S(Rc::from(w.as_str()), 0));
                }
                'c' => match t.chars().next() {
                    Some(ch) => {
                        out.push(Val::I(ch as i64));
                        t = &t[ch.len_utf8()..];
                    }
                    None => return out,
                },
                _ => return out,
            }
        } else if c.is_whitespace() {
            t = t.trim_start();
        } else {
            match t.strip_prefix(c) {
                Some(r) => t = r,
                None => return out,
            }
        }
    }
    out
}

/// printf's formatting of the conversions programs use to print their parameters; a value not
/// known prints as `?`.
pub fn format_c(fmt: &str, args: &[Val]) -> String {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut k = 0;
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        let mut conv = '%';
        while let Some(&n) = it.peek() {
            it.next();
            if n.is_ascii_alphabetic() && !matches!(n, 'l' | 'h' | 'z' | 'j' | 'L' | 'q' | 't')
                || n == '%'
            {
                conv = n;
                break;
            }
            spec.push(n);
        }
        if conv == '%' {
            out.push('%');
            continue;
        }
        let arg = args.get(k).cloned().unwrap_or(Val::unknown("missing"));
        k += 1;
        let flags: String = spec
            .chars()
            .take_while(|c| matches!(c, '-' | '+' | ' ' | '0' | '#'))
            .collect();
        let rest = &spec[flags.len()..];
        let (w, p) = match rest.split_once('.') {
            Some((w, p)) => (w, Some(p)),
            None => (rest, None),
        };
        let width: usize = w
            .chars()
            .filter(|c| c.is_ascii_digit())
            .collect::<String>()
            .parse()
            .unwrap_or(0);
        let prec: Option<usize> = p.map(|p| {
            p.chars()
                .filter(|c| c.is_ascii_digit())
                .collect::<String>()
                .parse()
                .unwrap_or(0)
        });
        let body = match (conv, &arg) {
            (_, Val::U(_)) | (_, Val::Name(_)) => "?".to_string(),
            ('d' | 'i' | 'u', v) => v.int().map(|i| i.to_string()).unwrap_or("?".into()),
            ('x', v) => v.int().map(|i| format!("{i:x}")).unwrap_or("?".into()),
            ('c', v) => v
                .int()
                .map(|i| (i as u8 as char).to_string())
                .unwrap_or("?".into()),
            ('f' | 'F', v) => v
                .num()
                .map(|x| format!("{x:.*}", prec.unwrap_or(6)))
                .unwrap_or("?".into()),
            ('e' | 'E', v) => v
                .num()
                .map(|x| c_exp(x, prec.unwrap_or(6)))
                .unwrap_or("?".into()),
            ('g' | 'G', v) => v
                .num()
                .map(|x| c_g(x, prec.unwrap_or(6)))
                .unwrap_or("?".into()),
            ('s', Val::S(s, o)) => s.get(*o..).unwrap_or("").to_string(),
            ('p', _) => "0x0".into(),
            _ => "?".into(),
        };
        let pad = width.saturating_sub(body.chars().count());
        if flags.contains('-') {
            out.push_str(&body);
            out.push_str(&" ".repeat(pad));
        } else if flags.contains('0') && body != "?" && conv != 's' {
            let (sign, digits) = if let Some(d) = body.strip_prefix('-') {
                ("-", d.to_string())
            } else {
                ("", body.clone())
            };
            out.push_str(sign);
            out.push_str(&"0".repeat(pad));
            out.push_str(&digits);
        } else {
            out.push_str(&" ".repeat(pad));
            out.push_str(&body);
        }
    }
    out
}

fn c_exp(x: f64, prec: usize) -> String {
    let s = format!("{x:.prec$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

fn c_g(x: f64, prec: usize) -> String {
    let p = prec.max(1);
    if x == 0.0 {
        return "0".into();
    }
    let e = x.abs().log10().floor() as i32;
    if e < -4 || e >= p as i32 {
        let s = c_exp(x, p - 1);
        let (m, ex) = s.split_once('e').unwrap_or((&s, ""));
        let m = if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.')
        } else {
            m
        };
        format!("{m}e{ex}")
    } else {
        let d = (p as i32 - 1 - e).max(0) as usize;
        let s = format!("{x:.d$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// Plain variables a statement assigns (=, op=, ++/--, and through & in calls).
/// An arm that only reports an error: it counts one (`errs++`), prints to stderr, or stops the
/// program, and does nothing else but print. Checks of a result (`if (buf[i] != expected)
/// { errs++; printf(...); }`) are written not to be taken, as compilers predict such paths.
fn is_error_path(s: &Stmt) -> bool {
    fn errorish(name: &str) -> bool {
        let n = name.to_ascii_lowercase();
        n.contains("err") || n.contains("fail")
    }
    // (only reporting and stopping, at least one sign of an error)
    fn walk(s: &Stmt, sign: &mut bool) -> bool {
        match s {
            Stmt::Compound(v, _) => v.iter().all(|x| walk(x, sign)),
            Stmt::Empty(_) | Stmt::Break(_) | Stmt::Goto(_) => true,
            Stmt::Return(_, _) => true,
            Stmt::If { then, otherwise, .. } => walk(then, sign) && otherwise.as_ref().is_none_or(|o| walk(o, sign)),
            Stmt::Expr(e, _) => match e {
                // errs++, errs += 1, err = 1: a count or flag of errors (not `err = f(...)`).
                CExpr::Update { arg, .. } if matches!(&**arg, CExpr::Ident(n) if errorish(n)) => {
                    *sign = true;
                    true
                }
                CExpr::Assign { left, right, .. } if matches!(&**left, CExpr::Ident(n) if errorish(n)) && matches!(&**right, CExpr::Int(_)) => {
                    *sign = true;
                    true
                }
                CExpr::Call { func, args, .. } => match func.as_str() {
                    "abort" | "exit" | "_exit" | "MPI_Abort" | "perror" => {
                        *sign = true;
                        true
                    }
                    "fprintf" | "fputs" if args.iter().any(|a| matches!(a, CExpr::Ident(n) if n == "stderr")) => {
                        *sign = true;
                        true
                    }
                    "printf" | "puts" | "fprintf" | "fputs" | "fflush" => true,
                    f => {
                        if errorish(f) {
                            *sign = true;
                        }
                        errorish(f)
                    }
                },
                _ => false,
            },
            _ => false,
        }
    }
    let mut sign = false;
    walk(s, &mut sign) && sign
}

/// `s` with the arms that only report an error (the other arm does not) left out, as the
/// static path assumes them never taken (see `Shared::error_arms`).
fn without_error_arms(s: &Stmt) -> Stmt {
    let boxed = |b: &Stmt| Box::new(without_error_arms(b));
    match s {
        Stmt::If { cond, then, otherwise, span } => {
            let else_if = matches!(otherwise.as_deref(), Some(Stmt::If { .. }));
            let te = is_error_path(then);
            let ee = !else_if && otherwise.as_deref().is_some_and(is_error_path);
            let then = if te && !ee { Box::new(Stmt::Empty(then.span())) } else { boxed(then) };
            let otherwise = if ee && !te { None } else { otherwise.as_deref().map(boxed) };
            Stmt::If { cond: cond.clone(), then, otherwise, span: *span }
        }
        Stmt::Compound(v, span) => Stmt::Compound(v.iter().map(without_error_arms).collect(), *span),
        Stmt::For { init, cond, update, body, span } => {
            Stmt::For { init: init.clone(), cond: cond.clone(), update: update.clone(), body: boxed(body), span: *span }
        }
        Stmt::While { cond, body, span } => Stmt::While { cond: cond.clone(), body: boxed(body), span: *span },
        Stmt::DoWhile { body, cond, span } => Stmt::DoWhile { body: boxed(body), cond: cond.clone(), span: *span },
        Stmt::Switch { cond, body, span } => Stmt::Switch { cond: cond.clone(), body: boxed(body), span: *span },
        Stmt::Case { value, body, span } => {
            Stmt::Case { value: value.clone(), body: body.iter().map(without_error_arms).collect(), span: *span }
        }
        Stmt::Label(b, span) => Stmt::Label(boxed(b), *span),
        other => other.clone(),
    }
}

fn written_idents(s: &Stmt) -> HashSet<String> {
    let mut out = HashSet::new();
    fn ex(e: &CExpr, out: &mut HashSet<String>) {
        match e {
            CExpr::Assign { left, right, .. } => {
                if let CExpr::Ident(n) = &**left {
                    out.insert(n.clone());
                }
                ex(left, out);
                ex(right, out);
            }
            CExpr::Update { arg, .. } => {
                if let CExpr::Ident(n) = &**arg {
                    out.insert(n.clone());
                }
                ex(arg, out);
            }
            CExpr::AddrOf(inner) => {
                if let CExpr::Ident(n) = &**inner {
                    out.insert(n.clone());
                }
                ex(inner, out);
            }
            CExpr::Binary { left, right, .. } => {
                ex(left, out);
                ex(right, out);
            }
            CExpr::Unary { arg, .. } | CExpr::Deref(arg) | CExpr::Cast { value: arg, .. } => {
                ex(arg, out)
            }
            CExpr::Call { args, .. } => args.iter().for_each(|a| ex(a, out)),
            CExpr::Index { array, index, .. } => {
                ex(array, out);
                ex(index, out);
            }
            CExpr::Field { base, .. } => ex(base, out),
            CExpr::Cond {
                cond,
                then,
                otherwise,
            } => {
                ex(cond, out);
                ex(then, out);
                ex(otherwise, out);
            }
            CExpr::Comma(a, b) => {
                ex(a, out);
                ex(b, out);
            }
            _ => {}
        }
    }
    statement_exprs(s, &mut |e| ex(e, &mut out));
    out
}

/// Calls `f` on every expression a statement tree evaluates at its top level (conditions,
/// updates, initialisers, expression statements, returned values), nested statements included.
/// Does the expression call rand() or random()?
fn calls_rand(e: &CExpr) -> bool {
    expr_any(e, &|x| {
        matches!(x, CExpr::Call { func, .. } if func == "rand" || func == "random")
    })
}

/// Whether `f` holds for the expression or one inside it.
/// Calls `f` on the expression and on every expression inside it, in order (a call before its
/// arguments).
fn expr_visit<'e>(e: &'e CExpr, f: &mut dyn FnMut(&'e CExpr)) {
    f(e);
    match e {
        CExpr::Call { args, .. } | CExpr::InitList(args) => args.iter().for_each(|a| expr_visit(a, f)),
        CExpr::Assign { left, right, .. }
        | CExpr::Binary { left, right, .. }
        | CExpr::Comma(left, right)
        | CExpr::Index {
            array: left,
            index: right,
            ..
        } => {
            expr_visit(left, f);
            expr_visit(right, f);
        }
        CExpr::Update { arg, .. }
        | CExpr::Unary { arg, .. }
        | CExpr::Deref(arg)
        | CExpr::AddrOf(arg)
        | CExpr::Cast { value: arg, .. }
        | CExpr::Field { base: arg, .. } => expr_visit(arg, f),
        CExpr::Cond {
            cond,
            then,
            otherwise,
        } => {
            expr_visit(cond, f);
            expr_visit(then, f);
            expr_visit(otherwise, f);
        }
        // (sizeof's operand is not evaluated.)
        _ => {}
    }
}

/// Stores through an index, a pointer or a field in an expression: (place, stored value;
/// None for ++ and --).
fn element_stores<'e>(e: &'e CExpr, out: &mut Vec<(&'e CExpr, Option<&'e CExpr>)>) {
    expr_visit(e, &mut |x| match x {
        CExpr::Assign { left, right, .. } if !matches!(&**left, CExpr::Ident(_)) => out.push((left, Some(right))),
        CExpr::Update { arg, .. } if !matches!(&**arg, CExpr::Ident(_)) => out.push((arg, None)),
        _ => {}
    });
}

fn expr_any(e: &CExpr, f: &dyn Fn(&CExpr) -> bool) -> bool {
    if f(e) {
        return true;
    }
    match e {
        CExpr::Call { args, .. } => args.iter().any(|a| expr_any(a, f)),
        CExpr::Assign { left, right, .. }
        | CExpr::Binary { left, right, .. }
        | CExpr::Comma(left, right)
        | CExpr::Index {
            array: left,
            index: right,
            ..
        } => expr_any(left, f) || expr_any(right, f),
        CExpr::Update { arg, .. }
        | CExpr::Unary { arg, .. }
        | CExpr::Deref(arg)
        | CExpr::AddrOf(arg)
        | CExpr::Cast { value: arg, .. } => expr_any(arg, f),
        CExpr::Cond {
            cond,
            then,
            otherwise,
        } => expr_any(cond, f) || expr_any(then, f) || expr_any(otherwise, f),
        CExpr::Field { base, .. } => expr_any(base, f),
        CExpr::InitList(v) => v.iter().any(|a| expr_any(a, f)),
        _ => false,
    }
}

/// Whether a call to `name` may write trace actions: communication (MPI or P2PDC), and the
/// communicator constructors (a new communicator is declared in the trace).
/// The functions among `callees` (name -> the names it calls) that call a routine `direct`
/// holds, themselves or through one another (to a fixed point).
fn calling<'p>(callees: &FastMap<&'p str, Vec<&'p str>>, direct: fn(&str) -> bool) -> FastSet<&'p str> {
    let mut found = FastSet::default();
    loop {
        let before = found.len();
        for (n, cs) in callees {
            if !found.contains(n) && cs.iter().any(|c| direct(c) || found.contains(c)) {
                found.insert(*n);
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

fn emits_actions(name: &str) -> bool {
    crate::frontend::mpi::comm_signature(name).is_some()
        || name.starts_with("P2P")
        || matches!(
            name,
            "MPI_Comm_dup"
                | "MPI_Comm_create"
                | "MPI_Comm_create_group"
                | "MPI_Comm_split_type"
                | "MPI_Intercomm_merge"
                | "MPI_Cart_sub"
                | "MPI_Graph_create"
                | "MPI_Dist_graph_create"
                | "MPI_Dist_graph_create_adjacent"
        )
}

/// The names of the functions `s` calls, in order, repeats included.
fn call_names<'e>(s: &'e Stmt, out: &mut Vec<&'e str>) {
    statement_exprs(s, &mut |e| {
        expr_visit(e, &mut |x| {
            if let CExpr::Call { func, .. } = x {
                out.push(func.as_str());
            }
        })
    });
}

/// Whether the statement is or holds a loop.
/// The first statement in `s` (itself included, in program order) that `f` accepts.
fn find_stmt<'s>(s: &'s Stmt, f: &dyn Fn(&Stmt) -> bool) -> Option<&'s Stmt> {
    if f(s) {
        return Some(s);
    }
    match s {
        Stmt::Compound(v, _) => v.iter().find_map(|x| find_stmt(x, f)),
        Stmt::Case { body, .. } => body.iter().find_map(|x| find_stmt(x, f)),
        Stmt::If { then, otherwise, .. } => find_stmt(then, f).or_else(|| otherwise.as_deref().and_then(|o| find_stmt(o, f))),
        Stmt::For { body, .. } | Stmt::While { body, .. } | Stmt::DoWhile { body, .. } | Stmt::Switch { body, .. } | Stmt::Label(body, _) => find_stmt(body, f),
        _ => None,
    }
}

/// Whether `s` holds a break, return or goto (anywhere: a break of an inner loop counts too).
fn has_exit(s: &Stmt) -> bool {
    find_stmt(s, &|x| matches!(x, Stmt::Break(_) | Stmt::Return(..) | Stmt::Goto(_))).is_some()
}

fn has_loop(s: &Stmt) -> bool {
    match s {
        Stmt::For { .. } | Stmt::While { .. } | Stmt::DoWhile { .. } => true,
        Stmt::Compound(v, _) => v.iter().any(has_loop),
        Stmt::If {
            then, otherwise, ..
        } => has_loop(then) || otherwise.as_deref().is_some_and(has_loop),
        Stmt::Switch { body, .. } | Stmt::Label(body, _) => has_loop(body),
        Stmt::Case { body, .. } => body.iter().any(has_loop),
        _ => false,
    }
}

/// Whether the expression reads an array element or a pointer's target.
fn reads_elements(e: &CExpr) -> bool {
    expr_any(e, &|x| matches!(x, CExpr::Index { .. } | CExpr::Deref(_)))
}

/// Whether the expression names one of `names`.
fn mentions_any(e: &CExpr, names: &HashSet<String>) -> bool {
    expr_any(e, &|x| matches!(x, CExpr::Ident(n) if names.contains(n)))
}

/// Assignments to plain names in an expression: (name, assigned expression).
fn name_assigns<'e>(e: &'e CExpr, out: &mut Vec<(&'e str, &'e CExpr)>) {
    match e {
        CExpr::Assign { left, right, .. } => {
            if let CExpr::Ident(n) = &**left {
                out.push((n, right));
            }
            name_assigns(right, out);
        }
        CExpr::Comma(a, b) | CExpr::Binary { left: a, right: b, .. } => {
            name_assigns(a, out);
            name_assigns(b, out);
        }
        CExpr::Cond {
            cond,
            then,
            otherwise,
        } => {
            name_assigns(cond, out);
            name_assigns(then, out);
            name_assigns(otherwise, out);
        }
        CExpr::Cast { value, .. } => name_assigns(value, out),
        CExpr::Call { args, .. } => args.iter().for_each(|a| name_assigns(a, out)),
        _ => {}
    }
}

/// Declarations with initialisers in a statement and those inside it.
fn stmt_decls<'e>(s: &'e Stmt, out: &mut Vec<(&'e str, &'e CExpr)>) {
    match s {
        Stmt::Compound(v, _) => v.iter().for_each(|x| stmt_decls(x, out)),
        Stmt::Decl(ds, _) => {
            for d in ds {
                if let Some(i) = &d.init {
                    out.push((&d.name, i));
                }
            }
        }
        Stmt::If {
            then, otherwise, ..
        } => {
            stmt_decls(then, out);
            if let Some(o) = otherwise {
                stmt_decls(o, out);
            }
        }
        Stmt::For { init, body, .. } => {
            if let Some(i) = init {
                stmt_decls(i, out);
            }
            stmt_decls(body, out);
        }
        Stmt::While { body, .. } | Stmt::DoWhile { body, .. } | Stmt::Switch { body, .. } => {
            stmt_decls(body, out)
        }
        Stmt::Case { body, .. } => body.iter().for_each(|x| stmt_decls(x, out)),
        Stmt::Label(b, _) => stmt_decls(b, out),
        _ => {}
    }
}

/// Scalars a loop body assigns from array elements or pointers' targets, directly or through
/// other such scalars (`s += a[i]`, `x = *p; t += x`): their values follow the data, so no
/// trend over some iterations tells where they end.
fn data_scalars(body: &Stmt) -> HashSet<String> {
    let mut assigns: Vec<(&str, &CExpr)> = Vec::new();
    statement_exprs(body, &mut |e| name_assigns(e, &mut assigns));
    stmt_decls(body, &mut assigns);
    let mut data: HashSet<String> = HashSet::new();
    loop {
        let before = data.len();
        for (n, rhs) in &assigns {
            if !data.contains(*n) && (reads_elements(rhs) || mentions_any(rhs, &data)) {
                data.insert(n.to_string());
            }
        }
        if data.len() == before {
            return data;
        }
    }
}

fn statement_exprs<'e>(s: &'e Stmt, f: &mut dyn FnMut(&'e CExpr)) {
    match s {
        Stmt::Compound(v, _) => v.iter().for_each(|x| statement_exprs(x, f)),
        Stmt::Expr(e, _) | Stmt::Return(Some(e), _) => f(e),
        Stmt::Decl(ds, _) => ds.iter().filter_map(|d| d.init.as_ref()).for_each(|e| f(e)),
        Stmt::If {
            cond,
            then,
            otherwise,
            ..
        } => {
            f(cond);
            statement_exprs(then, f);
            if let Some(o) = otherwise {
                statement_exprs(o, f);
            }
        }
        Stmt::For {
            init,
            cond,
            update,
            body,
            ..
        } => {
            if let Some(i) = init {
                statement_exprs(i, f);
            }
            if let Some(c) = cond {
                f(c);
            }
            if let Some(u) = update {
                f(u);
            }
            statement_exprs(body, f);
        }
        Stmt::While { cond, body, .. }
        | Stmt::DoWhile { body, cond, .. }
        | Stmt::Switch { cond, body, .. } => {
            f(cond);
            statement_exprs(body, f);
        }
        Stmt::Case { body, .. } => body.iter().for_each(|x| statement_exprs(x, f)),
        Stmt::Label(x, _) => statement_exprs(x, f),
        _ => {}
    }
}

/// The stored-to expressions (left of assignments, ++/--) that are not plain variables.
fn lvalues<'e>(s: &'e Stmt, out: &mut Vec<&'e CExpr>) {
    fn ex<'e>(e: &'e CExpr, out: &mut Vec<&'e CExpr>) {
        match e {
            CExpr::Assign { left, right, .. } => {
                if !matches!(&**left, CExpr::Ident(_)) {
                    out.push(left);
                }
                ex(right, out);
            }
            CExpr::Update { arg, .. } => {
                if !matches!(&**arg, CExpr::Ident(_)) {
                    out.push(arg);
                }
            }
            CExpr::Binary { left, right, .. } | CExpr::Comma(left, right) => {
                ex(left, out);
                ex(right, out);
            }
            CExpr::Call { args, .. } => args.iter().for_each(|a| ex(a, out)),
            CExpr::Cond {
                cond,
                then,
                otherwise,
            } => {
                ex(cond, out);
                ex(then, out);
                ex(otherwise, out);
            }
            CExpr::Unary { arg, .. } | CExpr::Cast { value: arg, .. } => ex(arg, out),
            _ => {}
        }
    }
    statement_exprs(s, &mut |e| ex(e, out));
}

/// Does the statement mention identifier `v`?
/// How a loop body reads its variable `v`: `(v + c) % m` (the modulus) or `v + c` compared
/// with a bound (c, the bound).
enum VarUse<'e> {
    Modulo(&'e CExpr),
    Compare(i64, &'e CExpr),
}

/// Every read of `v` in `s` when each is one of `VarUse`'s forms (casts allowed); None when
/// `v` is read, or written, any other way, or when `s` may leave the loop (a break outside an
/// inner loop or switch, a return, a goto).
fn var_uses<'e>(s: &'e Stmt, v: &str) -> Option<Vec<VarUse<'e>>> {
    /// `v`, `v + c`, `v - c`, `c + v` (through casts): c.
    fn shifted(e: &CExpr, v: &str) -> Option<i64> {
        match e {
            CExpr::Ident(n) if n == v => Some(0),
            CExpr::Cast { value, .. } => shifted(value, v),
            CExpr::Binary { op, left, right } if op == "+" || op == "-" => {
                let constant = |x: &CExpr| match x {
                    CExpr::Int(k) => i64::try_from(*k).ok(),
                    _ => None,
                };
                match (shifted(left, v), constant(right), constant(left), shifted(right, v)) {
                    (Some(a), Some(k), _, _) => Some(if op == "+" { a + k } else { a - k }),
                    (_, _, Some(k), Some(a)) if op == "+" => Some(a + k),
                    _ => None,
                }
            }
            _ => None,
        }
    }
    fn ex<'e>(e: &'e CExpr, v: &str, out: &mut Vec<VarUse<'e>>) -> bool {
        if let CExpr::Binary { op, left, right } = e {
            if op == "%" && shifted(left, v).is_some() && !expr_any(right, &|x| matches!(x, CExpr::Ident(n) if n == v)) {
                out.push(VarUse::Modulo(right));
                return true;
            }
            if matches!(op.as_str(), "==" | "!=" | "<" | "<=" | ">" | ">=") {
                let mine = |x: &CExpr| expr_any(x, &|y| matches!(y, CExpr::Ident(n) if n == v));
                if let (Some(c), false) = (shifted(left, v), mine(right)) {
                    out.push(VarUse::Compare(c, right));
                    return true;
                }
                if let (Some(c), false) = (shifted(right, v), mine(left)) {
                    out.push(VarUse::Compare(c, left));
                    return true;
                }
            }
        }
        match e {
            CExpr::Ident(n) => n != v,
            CExpr::Assign { left, right, .. } | CExpr::Binary { left, right, .. } | CExpr::Comma(left, right) => ex(left, v, out) && ex(right, v, out),
            CExpr::Index { array, index, .. } => ex(array, v, out) && ex(index, v, out),
            CExpr::Update { arg, .. } | CExpr::Unary { arg, .. } | CExpr::Deref(arg) | CExpr::AddrOf(arg) | CExpr::Cast { value: arg, .. } => ex(arg, v, out),
            CExpr::Call { args, .. } | CExpr::InitList(args) => args.iter().all(|a| ex(a, v, out)),
            CExpr::Field { base, .. } => ex(base, v, out),
            CExpr::Cond { cond, then, otherwise } => ex(cond, v, out) && ex(then, v, out) && ex(otherwise, v, out),
            CExpr::Sizeof { value: Some(x), .. } => ex(x, v, out),
            _ => true,
        }
    }
    fn st<'e>(s: &'e Stmt, v: &str, inner: bool, out: &mut Vec<VarUse<'e>>) -> bool {
        match s {
            Stmt::Compound(xs, _) => xs.iter().all(|x| st(x, v, inner, out)),
            Stmt::Expr(e, _) => ex(e, v, out),
            Stmt::Decl(ds, _) => ds.iter().all(|d| d.name != v && d.init.as_ref().is_none_or(|e| ex(e, v, out))),
            Stmt::If { cond, then, otherwise, .. } => ex(cond, v, out) && st(then, v, inner, out) && otherwise.as_ref().is_none_or(|o| st(o, v, inner, out)),
            Stmt::For { init, cond, update, body, .. } => {
                init.as_ref().is_none_or(|i| st(i, v, true, out)) && cond.as_ref().is_none_or(|c| ex(c, v, out)) && update.as_ref().is_none_or(|u| ex(u, v, out)) && st(body, v, true, out)
            }
            Stmt::While { cond, body, .. } | Stmt::DoWhile { body, cond, .. } | Stmt::Switch { cond, body, .. } => ex(cond, v, out) && st(body, v, true, out),
            Stmt::Case { value, body, .. } => value.as_ref().is_none_or(|x| ex(x, v, out)) && body.iter().all(|x| st(x, v, inner, out)),
            Stmt::Label(x, _) => st(x, v, inner, out),
            Stmt::Break(_) => inner,
            Stmt::Return(..) | Stmt::Goto(_) => false,
            _ => true,
        }
    }
    let mut out = Vec::new();
    st(s, v, false, &mut out).then_some(out)
}

fn lcm(a: u64, b: u64) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    a / gcd(a, b) * b
}

fn mentions(s: &Stmt, v: &str) -> bool {
    fn ex(e: &CExpr, v: &str) -> bool {
        match e {
            CExpr::Ident(n) => n == v,
            CExpr::Assign { left, right, .. } | CExpr::Binary { left, right, .. } => {
                ex(left, v) || ex(right, v)
            }
            CExpr::Update { arg, .. }
            | CExpr::Unary { arg, .. }
            | CExpr::Deref(arg)
            | CExpr::AddrOf(arg)
            | CExpr::Cast { value: arg, .. } => ex(arg, v),
            CExpr::Call { args, .. } | CExpr::InitList(args) => args.iter().any(|a| ex(a, v)),
            CExpr::Index { array, index, .. } => ex(array, v) || ex(index, v),
            CExpr::Field { base, .. } => ex(base, v),
            CExpr::Cond {
                cond,
                then,
                otherwise,
            } => ex(cond, v) || ex(then, v) || ex(otherwise, v),
            CExpr::Comma(a, b) => ex(a, v) || ex(b, v),
            CExpr::Sizeof { value: Some(x), .. } => ex(x, v),
            _ => false,
        }
    }
    fn st(s: &Stmt, v: &str) -> bool {
        match s {
            Stmt::Compound(xs, _) => xs.iter().any(|x| st(x, v)),
            Stmt::Expr(e, _) => ex(e, v),
            Stmt::Decl(ds, _) => ds.iter().filter_map(|d| d.init.as_ref()).any(|e| ex(e, v)),
            Stmt::If {
                cond,
                then,
                otherwise,
                ..
            } => ex(cond, v) || st(then, v) || otherwise.as_ref().is_some_and(|o| st(o, v)),
            Stmt::For {
                init,
                cond,
                update,
                body,
                ..
            } => {
                init.as_ref().is_some_and(|i| st(i, v))
                    || cond.as_ref().is_some_and(|c| ex(c, v))
                    || update.as_ref().is_some_and(|u| ex(u, v))
                    || st(body, v)
            }
            Stmt::While { cond, body, .. }
            | Stmt::DoWhile { body, cond, .. }
            | Stmt::Switch { cond, body, .. } => ex(cond, v) || st(body, v),
            Stmt::Case { value, body, .. } => {
                value.as_ref().is_some_and(|x| ex(x, v)) || body.iter().any(|x| st(x, v))
            }
            Stmt::Return(Some(e), _) => ex(e, v),
            Stmt::Label(x, _) => st(x, v),
            _ => false,
        }
    }
    st(s, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_follow_blocks_and_calls() {
        let mut l = Locals::default();
        assert!(!l.declare("x", 1), "no block open: a global");
        l.push();
        assert!(l.declare("x", 1));
        l.push();
        assert_eq!(l.get("x"), Some(1), "an outer block's name is seen");
        l.declare("x", 2);
        assert_eq!(l.get("x"), Some(2), "the inner declaration shadows it");
        // Declared again in the same block (a goto back over it): the new cell, one entry.
        l.declare("x", 3);
        assert_eq!(l.get("x"), Some(3));
        assert_eq!(l.pop(), Some(vec![(Rc::from("x"), 3)]));
        assert_eq!(l.get("x"), Some(1), "the block's end uncovers the outer one");
        // A call hides its caller's locals, and its own leave with it.
        let saved = l.enter();
        assert_eq!(l.get("x"), None);
        l.declare("y", 4);
        l.push();
        l.declare("x", 5);
        assert_eq!(l.get("x"), Some(5));
        l.leave(saved);
        assert_eq!(l.get("x"), Some(1));
        assert_eq!(l.get("y"), None);
        assert_eq!(l.pop().map(|d| d.len()), Some(1));
        assert!(l.is_empty());
        assert_eq!(l.get("x"), None);
    }

    #[test]
    fn arithmetic_on_numbers_is_c_arithmetic() {
        let ops = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", "<=", ">", ">=", "==", "!="];
        let want = [10, 4, 21, 2, 1, 56, 0, 3, 7, 4, 0, 0, 1, 1, 0, 1];
        for (op, w) in ops.iter().zip(want) {
            assert_eq!(binary(op, Val::I(7), Val::I(3)), Val::I(w), "7 {op} 3");
        }
        assert_eq!(binary("+", Val::I(1 << 62), Val::I(1 << 62)), Val::I((1i64 << 62).wrapping_mul(2)));
        assert_eq!(binary("/", Val::I(7), Val::I(2)), Val::I(3));
        assert_eq!(binary("%", Val::I(-7), Val::I(2)), Val::I(-1));
        assert!(matches!(binary("/", Val::I(7), Val::I(0)), Val::U(_)), "division by zero is not known");
        assert_eq!(binary("/", Val::F(7.0), Val::I(2)), Val::F(3.5));
        assert_eq!(binary("<", Val::I(2), Val::F(2.5)), Val::I(1));
        assert!(matches!(binary("%", Val::F(7.0), Val::I(2)), Val::U(_)), "% on a double is not C");
        assert_eq!(binary("+", Val::P(9, 2), Val::I(3)), Val::P(9, 5), "pointers keep their own rules");
    }

    #[test]
    fn glibc_random_matches_the_c_library() {
        // rand() after srand(1) (and without srand) on glibc, and after srand(42).
        let mut g = GlibcRandom::new(1);
        let first: Vec<i64> = (0..3).map(|_| g.next()).collect();
        assert_eq!(first, [1804289383, 846930886, 1681692777]);
        let mut g = GlibcRandom::new(42);
        assert_eq!(g.next(), 71876166);
    }

    #[test]
    fn printf_like_c() {
        assert_eq!(
            format_c(
                "n=%d rows=%5d x=%.3f s=%s %%",
                &[
                    Val::I(7),
                    Val::I(42),
                    Val::F(1.5),
                    Val::S(Rc::from("ab"), 0)
                ]
            ),
            "n=7 rows=   42 x=1.500 s=ab %"
        );
        assert_eq!(
            format_c("%g %g %e", &[Val::F(0.5), Val::F(1e-7), Val::F(1234.5)]),
            "0.5 1e-07 1.234500e+03"
        );
        assert_eq!(format_c("%d", &[Val::unknown("x")]), "?");
    }

    #[test]
    fn scanf_and_strtol() {
        assert_eq!(
            scan("12 3.5 ab", "%d %lf %s"),
            vec![Val::I(12), Val::F(3.5), Val::S(Rc::from("ab"), 0)]
        );
        assert_eq!(scan("n=64", "n=%d"), vec![Val::I(64)]);
        assert_eq!(parse_int("  -42xyz", 10), (-42, 5));
        assert_eq!(parse_float("1e3,"), (1000.0, 3));
    }
}
