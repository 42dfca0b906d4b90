//! The ProgramModel (`mpicast analyze --json`): blocks, op counts, execution counts, communication
//! sites, parameters and diagnostics of a source tree.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::expr::Expr;
use super::ops::{OpClass, OpCounts};
use super::Artifact;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ProgramModel {
    pub files: Vec<String>,
    /// Parameter values bound with -D (and program arguments), used for `value` fields.
    pub bindings: BTreeMap<String, f64>,
    pub parameters: Vec<Parameter>,
    pub functions: Vec<FunctionSummary>,
    pub blocks: Vec<Block>,
    pub comm: Vec<CommSite>,
    pub calls: Vec<CallSite>,
    /// Calls to functions defined nowhere in the tree (and not classed as an op): name -> sites.
    pub external_calls: BTreeMap<String, u32>,
    pub diagnostics: Vec<Diagnostic>,
    /// Loops whose condition reads a clock: the program times itself (absent in analyses
    /// written before they were looked for).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clock_loops: Vec<ClockLoop>,
}

/// A loop that runs until a clock reading says so, directly or through values computed from
/// one: how often it runs depends on the run's speed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClockLoop {
    pub file: String,
    /// The loop statement's first line (its block's `line_start`).
    pub line: u32,
    /// What the condition reads: a variable's path (`bwdata[].t`) or a call.
    pub reads: String,
    /// The clock it comes from (`When(): gettimeofday() at netpipe.c:1017`).
    pub clock: String,
}

impl Artifact for ProgramModel {
    const SCHEMA: &'static str = "mpicast/analysis";
    const VERSION: u32 = 1;
}

/// A named symbol counts may depend on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Parameter {
    pub name: String,
    /// argv | mpi | define | const | enum
    pub origin: String,
    /// The program argument it is read from (1 for argv[1]), when it comes from argv.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub argv_index: Option<u32>,
    /// The program's own fallback when the argument is absent, when it can be read.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub default: Option<f64>,
    pub file: String,
    pub line: u32,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    Function,
    Loop,
    Branch,
    Straight,
    Comm,
}

impl BlockKind {
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Function => "function",
            BlockKind::Loop => "loop",
            BlockKind::Branch => "branch",
            BlockKind::Straight => "straight",
            BlockKind::Comm => "comm",
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CountStatus {
    /// A number.
    Exact,
    /// A formula in parameters (exact once they are bound).
    Symbolic,
    /// Not known before running: the block gets a trace point.
    NeedsTrace,
}

/// How many times a block executes per call of its function (NE_b).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Count {
    pub status: CountStatus,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expr: Option<Expr>,
    /// The number, when every symbol of `expr` is bound.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Block {
    /// Stable id: `file:line:column:kind`.
    pub id: String,
    pub parent: Option<String>,
    pub kind: BlockKind,
    pub function: String,
    pub file: String,
    pub line_start: u32,
    pub line_end: u32,
    pub count: Count,
    /// For loops: iterations per entry of the loop.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub trip: Option<Box<Count>>,
    /// Ops per execution of the block, by class (NI_b).
    pub ops: OpCounts,
    /// Byte range of the block in its file (end exclusive).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bytes: Option<[u32; 2]>,
    /// For loops: byte range of the body statement (where a trace point counts iterations).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub body_bytes: Option<[u32; 2]>,
    /// For loops with a unit step: the induction variable and its inclusive range per entry
    /// (formulas that may mention enclosing loops' variables).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub induction: Option<Box<Induction>>,
    /// For branch arms: executions per execution of the parent, a 0/1 indicator in rank, size,
    /// parameters and loop variables, or a probability; absent when it depends on data.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cond: Option<Box<Expr>>,
    /// Where a trace point for the block may be inserted, from the syntax tree. Absent in
    /// analyses written before it existed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub site: Option<Site>,
    /// For loops: where a statement before the loop goes (before the `#pragma` lines attached
    /// to it), run once per entry: a trace point there sees each entry's trip.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub entry_site: Option<Site>,
    /// For loops: exits the branch predictor misses, per entry of the loop (a share from 0 to
    /// 1; `branch_miss` ops of the block the loop is in). Counted statically, an entry misses
    /// when its trip follows an enclosing loop's variable or exceeds [`PREDICTED_TRIP`]; a
    /// traced run measures it (`TraceMeta::loop_exits`). Absent: none counted.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub exit_misses: Option<Expr>,
    /// Array references of the block's own statements, for the memory model: which cache level
    /// their data comes from, and at what cost per access.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub mem: Vec<MemRef>,
    /// Scalars the block (inside a loop) computes from their own previous value: each
    /// execution waits for the previous one's result.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub chains: Vec<Chain>,
    /// Bytes each allocation of the block's statements asks for (malloc, calloc, realloc,
    /// aligned_alloc, or a function of the program whose name says it allocates): large ones
    /// are fresh pages, paid for when first written.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub allocs: Vec<Expr>,
    /// Calls of the block's own statements into code the analysis does not see (a library:
    /// `cblas_dgemm`, `fopen`), each once per execution of the block: a traced run times
    /// them, and the time measured replaces the one `call` op the analysis can give them.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub opaque: Vec<OpaqueCall>,
    /// For a block costed in core cycles (`core_cycle`, llvm-mca's schedule of its machine
    /// loop): the share of those cycles its resources alone bound (the block reciprocal
    /// throughput over its cycles); the rest waits on a chain carried in registers, and loads
    /// from beyond L1 go on meanwhile. Absent: 1 (resource-bound, or not costed in cycles).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub resource_share: Option<f64>,
}

/// The longest constant trip whose exit a branch predictor foresees. On this project's Intel
/// VM (Sapphire Rapids) an inner loop of 24 trips (a store to a ring) ran without a missed
/// exit and one of 28 with one per entry, 8 ns; another loop body foresaw 32 and missed 48.
/// The trace runtime's loop hook (`__MPICAST_LE`, src/instrument/rewrite.rs) uses the same.
pub const PREDICTED_TRIP: u32 = 32;

impl Block {
    /// Nanoseconds per execution of the block in its calls into code the analysis does not
    /// see, as a trace timed them (0 where none was timed).
    pub fn timed_calls_ns(&self) -> f64 {
        self.opaque.iter().filter_map(|c| c.ns).sum()
    }
}

/// A call into code the analysis does not see.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpaqueCall {
    pub func: String,
    /// Byte range of the call in its file (the callee's name to the closing parenthesis).
    pub at: [u32; 2],
    /// Nanoseconds per call, as a traced run measured them (its mean, less the clock's own
    /// cost); absent until a trace measures it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ns: Option<f64>,
}

/// A loop-carried chain: the ops between a scalar's old value and its new one, in order
/// (floating-point ops, integer multiplies and divides).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Chain {
    pub var: String,
    pub ops: Vec<OpClass>,
    /// The share of executions that wait for the chain: 1 for a scalar; for updates of a
    /// table of E elements at indices the data chooses (`h[k]++`), 1/E (the other updates go
    /// to other elements and overlap).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub share: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

/// Whether a reference reads or writes memory.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum MemAccess {
    Load,
    Store,
}

impl MemAccess {
    pub fn name(self) -> &'static str {
        match self {
            MemAccess::Load => "load",
            MemAccess::Store => "store",
        }
    }
}

/// One array reference (`a[i][j]`, read or written) in a block inside a loop: how far apart its
/// successive accesses are and how much data the loop nest touches before it comes back to the
/// same element. Formulas in parameters, rank and size (outer loop variables are replaced by
/// their upper bound).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemRef {
    /// The array as written (`a`, `s->cells`).
    pub array: String,
    pub access: MemAccess,
    /// Accesses per execution of the block (1/2 in one arm of `?:`).
    pub count: Expr,
    /// Bytes of one element.
    pub elem_bytes: u32,
    /// Bytes between the accesses of two successive iterations of the innermost loop; absent
    /// when the index depends on data (an irregular, random-like reference).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stride: Option<Expr>,
    /// Bytes the loop nest touches between two uses of the same data (the reuse distance): the
    /// smallest cache that holds them serves the reference. Absent when unknown.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reuse_bytes: Option<Expr>,
    /// Where an irregular reference is written in the block's file (byte ranges, end
    /// exclusive; several where references were merged): the trace runtime measures the
    /// range of addresses it touches there (`TraceMeta::footprints`). Empty for strided
    /// references, and for those inside a macro's expansion.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub at: Vec<(u32, u32)>,
}

/// Where a statement that runs once per execution of a block can be inserted into its file,
/// as the front end found it in the syntax tree (byte offsets in the file, lines 1-based).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Site {
    /// The offset: after the `{` of a function body or a compound body/arm, after a case
    /// label's `:`, before a non-compound body/arm or before a straight-line block's first
    /// statement (before the `#pragma` lines attached to it, and before the `for` whose
    /// init clause starts the block).
    pub at: u32,
    /// The line at `at` when `at` starts a preprocessor line: what is inserted there must end
    /// with a newline and `#line <at_line>`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub at_line: Option<u32>,
    /// Loop bodies and branch arms: the statement node's byte range (without the comments and
    /// directive lines before it).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stmt: Option<[u32; 2]>,
    /// The body or arm is a compound statement (`at` is just inside its brace).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compound: bool,
    /// A body or arm that is not compound: what is inserted at `at` needs braces around
    /// [at, wrap_end).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub wrap_end: Option<u32>,
    /// When `wrap_end` ends a preprocessor line (an `#endif`): the line after it; the closing
    /// brace goes on a line of its own, followed by `#line <wrap_end_line>`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub wrap_end_line: Option<u32>,
    /// Why nothing may be inserted for this block.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub blocked: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Induction {
    pub var: String,
    pub lo: Expr,
    pub hi: Expr,
}

/// A call to an MPI (or P2PDC) communication or topology routine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CommSite {
    pub block: String,
    pub call: String,
    pub file: String,
    pub line: u32,
    /// Peer (dest or source) as written in the source.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peer: Option<String>,
    /// Peer as a formula in rank, size and parameters, when it resolves.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peer_expr: Option<Expr>,
    /// Message size in bytes as a formula, when the datatype's size is known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bytes: Option<Expr>,
    /// count x datatype as written.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub size_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub root: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub comm: Option<String>,
    /// Every argument as written.
    pub args: Vec<String>,
    /// Every argument's value as a formula, null where it depends on data (or is a buffer).
    #[serde(default)]
    pub arg_values: Vec<Option<Expr>>,
    /// Arguments that name a local array with a constant initializer (e.g. periods of
    /// MPI_Cart_create): argument position -> element values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arg_lists: BTreeMap<u32, Vec<Option<Expr>>>,
}

/// A call from one of the program's functions to another.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CallSite {
    pub block: String,
    pub caller: String,
    pub callee: String,
    pub file: String,
    pub line: u32,
    /// Argument values as formulas, null where an argument depends on data.
    #[serde(default)]
    pub args: Vec<Option<Expr>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionSummary {
    pub name: String,
    pub file: String,
    pub line_start: u32,
    pub line_end: u32,
    pub block: String,
    /// Parameter names, in order.
    #[serde(default)]
    pub params: Vec<String>,
    /// Part of a call cycle: its cost per call cannot be summed statically.
    pub recursive: bool,
    /// Ops per call including its callees (counts scaled by call-site counts), when every count
    /// involved is known statically.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ops_per_call: Option<OpCounts>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Diagnostic {
    pub file: String,
    pub line: u32,
    pub message: String,
}

impl ProgramModel {
    /// Blocks whose count is known without running (exact or symbolic).
    pub fn static_fraction(&self) -> f64 {
        if self.blocks.is_empty() {
            return 1.0;
        }
        let s = self.blocks.iter().filter(|b| b.count.status != CountStatus::NeedsTrace).count();
        s as f64 / self.blocks.len() as f64
    }
}
