//! Compiled-code costing: what the compiler emitted for each block, instead of what the source
//! says. The program is built with its own compiler and flags plus `-g`; every instruction of
//! its functions is decoded (iced-x86) and placed in the source by the DWARF line table
//! (addr2line): file, line and column, which give the innermost front-end block around it.
//! Machine loops are the address ranges closed by a backward branch; each is matched to the
//! source loop that holds most of its instructions, and its factor k (source iterations per
//! machine iteration: vector lanes times unrolling) is the ratio of the element operations its
//! body does (floating-point lanes, else memory elements) to what one source iteration does.
//!
//! Each instruction is then charged, as ops of its class per execution of a block:
//! - in a machine loop matched to source loop L, at 1/k per execution: to its own block when
//!   that block is in L's body at L's depth (and the loop is not vectorised: a vectorised body
//!   runs its branch arms as masks, every iteration), else to L itself (code hoisted out of an
//!   inner loop into L's, or a vectorised body); code of another function (inlined) stays
//!   with its own block;
//! - in no machine loop but written inside source loops: it ran once per entry of the
//!   outermost of them (hoisted out, or the loop fully unrolled): charged to that loop's parent;
//! - of the machine loops matched to one source loop, only the one with the largest k counts
//!   (the others are remainder and fallback versions).
//!
//! A machine loop's control (its conditional backward branch, the compare before it and the
//! update of the compared register) counts as one `loop_iter`, what the empty-loop kernel
//! measures, not as a data branch, a compare and an add.
//!
//! The instruction-level classes of a block's ops are replaced by these counts (the source's
//! `loop_iter` included); library classes (rand, exp, sqrt, memcpy bytes, ...) keep
//! the source's counts, and a call instruction is a `call` only beyond the block's library calls.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, OpAccess};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

use crate::model::analysis::{BlockKind, ProgramModel};
use crate::model::expr::{Expr, Rat};
use crate::model::ops::OpClass;

pub mod chain;
pub mod mca;

/// The classes compiled code replaces.
pub const INSTRUCTION_CLASSES: &[OpClass] = &[
    OpClass::IntAdd,
    OpClass::IntMul,
    OpClass::IntDiv,
    OpClass::IntCmp,
    OpClass::IntLogic,
    OpClass::FloatAdd,
    OpClass::FloatMul,
    OpClass::FloatDiv,
    OpClass::DoubleAdd,
    OpClass::DoubleMul,
    OpClass::DoubleDiv,
    OpClass::FpCmp,
    OpClass::IntToFp,
    OpClass::FpToInt,
    OpClass::Load,
    OpClass::Store,
    OpClass::PtrDeref,
    OpClass::Branch,
    OpClass::LoopIter,
    OpClass::Call,
    OpClass::Fabs,
    OpClass::CoreCycle,
];

/// Library classes counted once per call: a call to one of these is costed by its class, not
/// as a `call`.
const LIBRARY_CLASSES: &[OpClass] = &[
    OpClass::Sqrt,
    OpClass::Exp,
    OpClass::Log,
    OpClass::SinCos,
    OpClass::Pow,
    OpClass::Rand,
    OpClass::Alloc,
    OpClass::PrintCall,
];

/// One machine loop as matched to the source.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineLoop {
    /// The source loop's block id.
    pub block: String,
    /// Instructions in its body (nested loops' included).
    pub instructions: usize,
    /// Source iterations per machine iteration.
    pub k: f64,
    /// Whether its body has packed (vector) floating-point or memory instructions.
    pub vector: bool,
    /// Whether it is the one costed for its source loop.
    pub main: bool,
    /// Core cycles per machine iteration as llvm-mca schedules its body, where it did.
    pub cycles: Option<f64>,
}

/// Per block (by id): ops per execution of the instruction classes, from the object code.
#[derive(Debug, Clone, Default)]
pub struct CompiledOps {
    pub blocks: HashMap<String, BTreeMap<OpClass, f64>>,
    /// Per block costed in core cycles: the op classes of the same instructions, costed one by
    /// one (`apply` takes the cheaper: a CPU model of another generation than the host's can
    /// be slower than the host's own measured throughputs, as on a divide).
    pub classes_of_cycles: HashMap<String, BTreeMap<OpClass, f64>>,
    /// Per block costed in core cycles: the share of its cycles its resources alone bound
    /// (llvm-mca's block reciprocal throughput over its cycles): what an SMT sibling's work
    /// slows down (`apply`'s `throughput_factor`).
    pub throughput_share: HashMap<String, f64>,
    /// Per block costed in core cycles: the register dependencies of each machine loop body
    /// whose cycles it took, with the source iterations one machine iteration makes (k): the
    /// chains carried through registers, costed with this host's latencies in `apply`.
    pub register_chains: HashMap<String, Vec<(f64, chain::RegGraph)>>,
    pub loops: Vec<MachineLoop>,
    /// Instructions decoded, and those placed in a block of the model.
    pub instructions: usize,
    pub placed: usize,
    /// Why no loop was scheduled by llvm-mca, where none was (not installed, it failed).
    pub mca_note: Option<String>,
}

/// Block ids (`FILE:LINE:COL:KIND`) with FILE canonical, each file resolved once.
#[derive(Default)]
pub struct CanonicalIds {
    files: HashMap<String, String>,
}

impl CanonicalIds {
    pub fn id(&mut self, id: &str) -> String {
        let mut parts = id.rsplitn(4, ':');
        let (Some(kind), Some(col), Some(line), Some(file)) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return id.to_string();
        };
        let file = self
            .files
            .entry(file.to_string())
            .or_insert_with(|| std::fs::canonicalize(file).map_or_else(|_| file.to_string(), |p| p.display().to_string()));
        format!("{file}:{line}:{col}:{kind}")
    }
}

impl CompiledOps {
    /// The model with its blocks' instruction classes taken from the object code. With the
    /// costs (ns per op), a block costed in core cycles takes the longer of what its resources
    /// take and what its chain carried in registers does:
    /// - resources: llvm-mca's resource-bound part of the cycles (the block reciprocal
    ///   throughput), or the instructions' classes one by one where they cost less (the
    ///   measured throughputs bound a loop that overlaps nothing; where llvm-mca's model says
    ///   more, it is not this host's);
    /// - the chain: the longest register recurrence of the body with this host's `latency`
    ///   (ns per op class: `chain`), else llvm-mca's whole schedule.
    ///
    /// A block bound by its resources at the host's throughputs takes its classes; any other
    /// keeps core cycles, scaled to that time, with `Block::resource_share` saying how much of
    /// it the resources take (the loads beyond L1 overlap only that part). Without costs
    /// (`analyze --compiled`), the instructions' classes.
    ///
    /// `throughput_factor` is how much slower loop bodies bound by their resources run with
    /// every core of the host busy (the costs are already multiplied by it; a chain is not
    /// slowed by a sibling's work).
    ///
    /// `resource_factor` is how much longer than llvm-mca's schedule a resource-bound body
    /// takes on this host (the machine table's `core_resources`; 1 without one).
    pub fn apply(&self, model: &ProgramModel, costs: Option<&BTreeMap<OpClass, f64>>, latency: Option<&BTreeMap<OpClass, f64>>, throughput_factor: f64, resource_factor: f64) -> ProgramModel {
        let mut m = model.clone();
        // Blocks are matched by place, their file's path canonical: a trace's model names the
        // files as the trace was taken (`/abs/stage/is.c`), the build costed here as given
        // (`../stage/is.c`), and the same program must cost the same.
        let mut canon = CanonicalIds::default();
        let blocks: HashMap<String, &BTreeMap<OpClass, f64>> = self.blocks.iter().map(|(k, v)| (canon.id(k), v)).collect();
        let alts: HashMap<String, &BTreeMap<OpClass, f64>> = self.classes_of_cycles.iter().map(|(k, v)| (canon.id(k), v)).collect();
        let shares: HashMap<String, f64> = self.throughput_share.iter().map(|(k, v)| (canon.id(k), *v)).collect();
        let chains: HashMap<String, &Vec<(f64, chain::RegGraph)>> = self.register_chains.iter().map(|(k, v)| (canon.id(k), v)).collect();
        for b in &mut m.blocks {
            let library: f64 = LIBRARY_CLASSES.iter().filter_map(|c| b.ops.get(c)).filter_map(|e| e.eval_map(&HashMap::new()).ok()).sum();
            let key = canon.id(&b.id);
            let Some(ops) = blocks.get(&key) else { continue };
            b.ops.retain(|c, _| !INSTRUCTION_CLASSES.contains(c));
            let mut ops = (*ops).clone();
            let share = shares.get(&key).copied().unwrap_or(1.0).clamp(0.0, 1.0);
            let f = throughput_factor.max(1.0);
            b.resource_share = None;
            if let (Some(alt), Some(&cycles), Some(costs)) = (alts.get(&key), ops.get(&OpClass::CoreCycle), costs) {
                let ns = |c: &OpClass, n: f64| n * costs.get(c).copied().unwrap_or(0.0);
                let (alt_ns, cycle_ns) = (alt.iter().map(|(c, &n)| ns(c, n)).sum::<f64>(), ns(&OpClass::CoreCycle, cycles));
                // What the resources take: the CPU model's resource-bound cycles (slowed by
                // a sibling, as the costs are), or the host's own throughputs where less.
                let resources = (cycle_ns * share * resource_factor).min(alt_ns);
                // What the chain carried in registers takes: with the host's latencies where
                // the body's dependencies were read, else llvm-mca's whole schedule (a chain
                // is not slowed by a sibling).
                let host_chain = latency.and_then(|lat| {
                    let per: Vec<f64> = chains.get(&key)?.iter().map(|(k, g)| g.longest(lat).map(|ns| ns / k.max(1.0))).collect::<Option<_>>()?;
                    Some(per.iter().sum::<f64>())
                });
                let chain_ns = host_chain.unwrap_or(cycle_ns / f);
                let core_ns = resources.max(chain_ns);
                if std::env::var_os("MPICAST_OBJCODE_DEBUG").is_some() {
                    eprintln!("{key}: cycles {cycle_ns:.3} ns (resources {:.3}), classes {alt_ns:.3}, host chain {host_chain:?} -> {core_ns:.3}", cycle_ns * share);
                }
                if alt_ns <= cycle_ns * share * resource_factor && chain_ns <= alt_ns {
                    // Bound by its resources at the host's throughputs: its classes.
                    ops.remove(&OpClass::CoreCycle);
                    for (&c, &n) in alt.iter() {
                        *ops.entry(c).or_default() += n;
                    }
                } else if cycle_ns > 0.0 {
                    ops.insert(OpClass::CoreCycle, cycles * core_ns / cycle_ns);
                    b.resource_share = Some(resources / core_ns).filter(|&s| s < 1.0);
                }
            } else if costs.is_none() && alts.contains_key(&key) {
                ops.remove(&OpClass::CoreCycle);
                for (&c, &n) in alts[&key].iter() {
                    *ops.entry(c).or_default() += n;
                }
            }
            for (&c, &n) in &ops {
                let n = if c == OpClass::Call { (n - library).max(0.0) } else { n };
                if n > 0.0 {
                    b.ops.insert(c, Expr::rat(Rat::new((n * 4096.0).round() as i128, 4096)));
                }
            }
        }
        m
    }

    /// One line for a prediction's assumptions.
    pub fn summary(&self) -> String {
        let main: Vec<&MachineLoop> = self.loops.iter().filter(|l| l.main).collect();
        let vec = main.iter().filter(|l| l.vector).count();
        let ks: Vec<String> = main.iter().filter(|l| l.k > 1.0).map(|l| format!("{} x{}", l.block, l.k)).take(4).collect();
        let scheduled = main.iter().filter(|l| l.cycles.is_some()).count();
        let per_iteration: Vec<String> = main
            .iter()
            .filter_map(|l| l.cycles.map(|c| format!("{} {:.2}", l.block, c / l.k)))
            .take(4)
            .collect();
        format!(
            "compute costed from the compiled code: {} of {} instructions placed in blocks; {} source loops matched to machine loops, {} vectorised{}; {}",
            self.placed,
            self.instructions,
            main.len(),
            vec,
            if ks.is_empty() { String::new() } else { format!(" ({})", ks.join(", ")) },
            match &self.mca_note {
                Some(why) => format!("no loop scheduled by llvm-mca ({why}): op classes costed one by one"),
                None if scheduled == 0 => "none scheduled by llvm-mca: op classes costed one by one".to_string(),
                None => format!(
                    "{scheduled} scheduled by llvm-mca (core cycles per source iteration: {}), the others' op classes costed one by one",
                    per_iteration.join(", ")
                ),
            }
        )
    }
}

/// One decoded instruction.
struct Insn {
    addr: u64,
    end: u64,
    /// Owner block (index into the model), when its source location is in a block.
    block: Option<usize>,
    ops: Vec<(OpClass, f64)>,
    /// Backward branch target.
    back_to: Option<u64>,
    /// Element operations: floating-point lanes and memory elements; packed or not.
    fp_elems: f64,
    mem_elems: f64,
    store_elems: f64,
    packed: bool,
    /// Its first two operands' full registers, where they are registers.
    regs: [iced_x86::Register; 2],
    /// The decoded instruction (formatted for llvm-mca).
    ins: Instruction,
}

/// A loop's control as the empty-loop kernel measures it: the conditional backward branch
/// just pushed, the compare before it and the update of the compared register in the loop
/// (`add; cmp; jne`, or `sub; jne` with no compare) become one `loop_iter` instead of a data
/// branch, a compare and an add costed apart.
fn loop_control(insns: &mut [Insn]) {
    use iced_x86::Register;
    let n = insns.len();
    let Some(target) = insns[n - 1].back_to else { return };
    let has = |i: &Insn, c: OpClass| i.ops.iter().any(|o| o.0 == c);
    let take = |i: &mut Insn, c: OpClass| {
        if let Some(k) = i.ops.iter().position(|o| o.0 == c) {
            i.ops.remove(k);
        }
    };
    if let Some(b) = insns[n - 1].ops.iter_mut().find(|o| o.0 == OpClass::Branch) {
        b.0 = OpClass::LoopIter;
    }
    let Some(prev) = n.checked_sub(2) else { return };
    let updates = |i: &Insn, r: Register| r != Register::None && i.regs[0] == r && has(i, OpClass::IntAdd);
    let counter = if has(&insns[prev], OpClass::IntCmp) {
        let r = insns[prev].regs;
        take(&mut insns[prev], OpClass::IntCmp);
        r
    } else if has(&insns[prev], OpClass::IntAdd) {
        // The update sets the flags itself.
        take(&mut insns[prev], OpClass::IntAdd);
        return;
    } else {
        return;
    };
    // The counter's update: the last add to a compared register in the loop's body.
    if let Some(u) = insns[..prev].iter_mut().rev().take_while(|i| i.addr >= target).find(|i| counter.iter().any(|&r| updates(i, r))) {
        take(u, OpClass::IntAdd);
    }
}

/// The source's blocks, for placing a (file, line, column).
struct Blocks<'m> {
    model: &'m ProgramModel,
    /// Per canonical file: line start offsets, and the blocks of the file.
    files: HashMap<PathBuf, (Vec<u32>, Vec<usize>)>,
    parent: Vec<Option<usize>>,
    cache: HashMap<(PathBuf, u32, u32), Option<usize>>,
}

impl<'m> Blocks<'m> {
    fn new(model: &'m ProgramModel) -> Blocks<'m> {
        let index: HashMap<&str, usize> = model.blocks.iter().enumerate().map(|(i, b)| (b.id.as_str(), i)).collect();
        let parent = model.blocks.iter().map(|b| b.parent.as_deref().and_then(|p| index.get(p).copied())).collect();
        let mut files: HashMap<PathBuf, (Vec<u32>, Vec<usize>)> = HashMap::new();
        for (i, b) in model.blocks.iter().enumerate() {
            let Ok(canon) = std::fs::canonicalize(&b.file) else { continue };
            let entry = files.entry(canon.clone()).or_insert_with(|| {
                let text = std::fs::read(&canon).unwrap_or_default();
                let mut starts = vec![0u32];
                starts.extend(text.iter().enumerate().filter(|(_, &c)| c == b'\n').map(|(k, _)| k as u32 + 1));
                (starts, Vec::new())
            });
            entry.1.push(i);
        }
        Blocks { model, files, parent, cache: HashMap::new() }
    }

    /// The innermost block around (file, line, column).
    fn place(&mut self, file: &Path, line: u32, col: u32) -> Option<usize> {
        let key = (file.to_path_buf(), line, col);
        if let Some(&b) = self.cache.get(&key) {
            return b;
        }
        let found = (|| {
            let (starts, blocks) = self.files.get(file)?;
            let off = starts.get(line.checked_sub(1)? as usize)? + col.saturating_sub(1);
            blocks
                .iter()
                .filter_map(|&i| self.model.blocks[i].bytes.map(|r| (i, r)))
                .filter(|(_, r)| r[0] <= off && off < r[1])
                .min_by_key(|(_, r)| r[1] - r[0])
                .map(|(i, _)| i)
        })();
        self.cache.insert(key, found);
        found
    }

    fn ancestors(&self, b: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(Some(b), move |&x| self.parent[x])
    }

    fn is_loop(&self, b: usize) -> bool {
        self.model.blocks[b].kind == BlockKind::Loop
    }

    /// The innermost loop around `b` (itself included).
    fn loop_of(&self, b: usize) -> Option<usize> {
        self.ancestors(b).find(|&x| self.is_loop(x))
    }
}

/// Decodes the functions of `exe` and places their instructions.
fn decode(exe: &Path, blocks: &mut Blocks) -> Result<Vec<Vec<Insn>>> {
    let data = std::fs::read(exe).with_context(|| format!("{}: cannot read", exe.display()))?;
    let file = object::File::parse(&*data).with_context(|| format!("{}: not an object file", exe.display()))?;
    if file.architecture() != object::Architecture::X86_64 {
        bail!("{}: compiled costing reads x86-64 code only", exe.display());
    }
    let loader = addr2line::Loader::new(exe).map_err(|e| anyhow::anyhow!("{}: no debug information: {e}", exe.display()))?;
    let text = file.section_by_name(".text").context("no .text section")?;
    let (tlo, tdata) = (text.address(), text.data()?);
    let mut funcs: Vec<(u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.address() >= tlo && s.address() + s.size() <= tlo + tdata.len() as u64)
        .map(|s| (s.address(), s.size()))
        .collect();
    funcs.sort_unstable();
    funcs.dedup();
    let mut canon: HashMap<String, Option<PathBuf>> = HashMap::new();
    let mut info = InstructionInfoFactory::new();
    let mut out = Vec::new();
    for (lo, size) in funcs {
        // Source rows of the function, by address.
        let mut rows: Vec<(u64, u64, Option<PathBuf>, u32, u32)> = Vec::new();
        if let Ok(iter) = loader.find_location_range(lo, lo + size) {
            for (start, len, loc) in iter {
                let f = loc.file.map(|f| canon.entry(f.to_string()).or_insert_with(|| std::fs::canonicalize(f).ok()).clone()).unwrap_or(None);
                rows.push((start, start + len, f, loc.line.unwrap_or(0), loc.column.unwrap_or(0)));
            }
        }
        rows.sort_by_key(|r| r.0);
        let bytes = &tdata[(lo - tlo) as usize..(lo - tlo + size) as usize];
        let mut dec = Decoder::with_ip(64, bytes, lo, DecoderOptions::NONE);
        let mut insns = Vec::new();
        let mut ins = Instruction::default();
        while dec.can_decode() {
            dec.decode_out(&mut ins);
            if ins.is_invalid() {
                continue;
            }
            let addr = ins.ip();
            let k = rows.partition_point(|r| r.0 <= addr);
            let block = k.checked_sub(1).map(|k| &rows[k]).filter(|r| addr < r.1).and_then(|r| r.2.as_ref().and_then(|f| blocks.place(f, r.3, r.4)));
            let (ops, fp_elems, mem_elems, packed) = classify(&ins, &mut info);
            // What a stored element of the source is: not a call's return address, a push, or
            // a spill to a stack slot (a scalar the compiler keeps in memory, `sx` of NAS EP
            // whose address MPI_Allreduce takes, is none of the source's stores either).
            let stack_slot = ins.memory_index() == iced_x86::Register::None && matches!(ins.memory_base(), iced_x86::Register::RSP | iced_x86::Register::RBP);
            let spill = stack_slot || matches!(ins.flow_control(), FlowControl::Call | FlowControl::IndirectCall) || ins.mnemonic() == iced_x86::Mnemonic::Push;
            let store_elems = if ops.iter().any(|o| o.0 == OpClass::Store) && !spill { mem_elems } else { 0.0 };
            let back_to = match ins.flow_control() {
                FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch => {
                    let t = ins.near_branch_target();
                    (t <= addr && t >= lo).then_some(t)
                }
                _ => None,
            };
            let regs = [0, 1].map(|i| if i < ins.op_count() && ins.op_kind(i) == iced_x86::OpKind::Register { ins.op_register(i).full_register() } else { iced_x86::Register::None });
            insns.push(Insn { addr, end: ins.next_ip(), block, ops, back_to, fp_elems, mem_elems, store_elems, packed, regs, ins });
            if back_to.is_some() && ins.flow_control() == FlowControl::ConditionalBranch {
                loop_control(&mut insns);
            }
        }
        out.push(insns);
    }
    Ok(out)
}

/// A function's machine loops from its backward branches (target, address and end of the
/// branch, whether it is unconditional):
/// - a jump back from code laid out after a loop into its body is no loop: a cold path (the
///   `else` of a conditional expression, a library call's fallback) returning to where it left;
/// - two loops that overlap without one holding the other are one loop with two latches, as an
///   `if` without an `else` in a loop's body often compiles (NAS EP: the rejected sample jumps
///   back to a copy of the loop's increment laid out before its head, the accepted one to the
///   end), and become their union;
/// - nested and disjoint loops stay apart.
fn merged_loops(edges: Vec<(u64, u64, u64, bool)>) -> Vec<(u64, u64)> {
    let returns = |&(t, at, _, jump): &(u64, u64, u64, bool)| jump && edges.iter().any(|&(t2, _, e2, _)| t2 <= t && t < e2 && e2 <= at);
    let mut ranges: Vec<(u64, u64)> = edges.iter().filter(|e| !returns(e)).map(|&(t, _, end, _)| (t, end)).collect();
    loop {
        let mut merged = false;
        'pairs: for a in 0..ranges.len() {
            for b in 0..ranges.len() {
                let (x, y) = (ranges[a], ranges[b]);
                if x.0 < y.0 && y.0 < x.1 && x.1 < y.1 {
                    ranges[a] = (x.0, y.1);
                    ranges.swap_remove(b);
                    merged = true;
                    break 'pairs;
                }
            }
        }
        if !merged {
            break;
        }
    }
    ranges.sort_unstable();
    ranges.dedup();
    ranges
}

/// Bitwise floating-point ops the compiler applies to a scalar with a 16-byte constant mask.
const SIGN_MASK_OPS: &[&str] = &["andpd", "andps", "andnpd", "andnps", "xorpd", "xorps", "orpd", "orps", "vandpd", "vandps", "vandnpd", "vandnps", "vxorpd", "vxorps", "vorpd", "vorps"];

/// An instruction's op classes, floating-point lanes, memory elements and whether it is packed.
fn classify(ins: &Instruction, info: &mut InstructionInfoFactory) -> (Vec<(OpClass, f64)>, f64, f64, bool) {
    use OpClass::*;
    let name = format!("{:?}", ins.mnemonic()).to_ascii_lowercase();
    let mut ops: Vec<(OpClass, f64)> = Vec::new();
    let mut mem_elems = 0.0;
    let mut packed = false;
    for m in info.info(ins).used_memory() {
        let sz = m.memory_size();
        let elems = (sz.size() / sz.element_size().max(1)).max(1) as f64;
        match m.access() {
            OpAccess::Read | OpAccess::CondRead => ops.push((Load, 1.0)),
            OpAccess::Write | OpAccess::CondWrite => ops.push((Store, 1.0)),
            OpAccess::ReadWrite | OpAccess::ReadCondWrite => {
                ops.push((Load, 1.0));
                ops.push((Store, 1.0));
            }
            _ => continue,
        }
        mem_elems += elems;
        // A sign mask (`andpd .LC0(%rip), %xmm0` for fabs, `xorpd` for a negation) is read
        // whole for one scalar lane: no vector.
        packed |= elems > 1.0 && sz.size() >= 16 && !SIGN_MASK_OPS.contains(&name.as_str());
    }
    match ins.flow_control() {
        FlowControl::ConditionalBranch => ops.push((Branch, 1.0)),
        FlowControl::Call | FlowControl::IndirectCall => ops.push((Call, 1.0)),
        FlowControl::Next => {}
        _ => return (ops, 0.0, mem_elems, packed),
    }
    // Floating point: scalar (sd/ss) or packed (pd/ps), AVX forms with a leading v.
    let base = name.strip_prefix('v').filter(|_| name.len() > 3 && (name.ends_with("sd") || name.ends_with("ss") || name.ends_with("pd") || name.ends_with("ps"))).unwrap_or(&name);
    let lanes = |double: bool| -> f64 {
        let bytes = (0..ins.op_count()).map(|i| ins.op_register(i).size()).max().unwrap_or(0).max(if double { 8 } else { 4 });
        if base.ends_with("sd") || base.ends_with("ss") {
            1.0
        } else {
            (bytes / if double { 8 } else { 4 }) as f64
        }
    };
    let fp = |stem: &str| -> Option<bool> {
        for (suffix, double) in [("sd", true), ("pd", true), ("ss", false), ("ps", false)] {
            if base == format!("{stem}{suffix}") {
                return Some(double);
            }
        }
        None
    };
    let fma = base.starts_with("fmadd") || base.starts_with("fmsub") || base.starts_with("fnmadd") || base.starts_with("fnmsub");
    let mut fp_elems = 0.0;
    let mut arith = |class_d: OpClass, class_f: OpClass, double: bool, weight: f64| {
        let l = lanes(double);
        ops.push((if double { class_d } else { class_f }, weight));
        fp_elems += l * weight;
        if l > 1.0 {
            packed = true;
        }
    };
    // max/min run on the adders (one uop, an add's latency and throughput on current x86
    // cores); the fp_cmp class is a compare whose flags become an integer (comisd, setcc),
    // about four times a maxsd's throughput cost: obstacle3d's loop, two maxsd and a comisd,
    // was costed +42% over its run at 1 rank with them as compares.
    if let Some(d) = fp("add").or(fp("sub")).or(fp("max")).or(fp("min")) {
        arith(DoubleAdd, FloatAdd, d, 1.0);
    } else if let Some(d) = fp("mul") {
        arith(DoubleMul, FloatMul, d, 1.0);
    } else if let Some(d) = fp("div") {
        arith(DoubleDiv, FloatDiv, d, 1.0);
    } else if fma {
        let d = base.ends_with("sd") || base.ends_with("pd");
        arith(DoubleMul, FloatMul, d, 1.0);
    } else if base.starts_with("ucomis") || base.starts_with("comis") || base.starts_with("cmp") && (base.ends_with("sd") || base.ends_with("pd") || base.ends_with("ss") || base.ends_with("ps")) {
        ops.push((FpCmp, 1.0));
    } else if base.starts_with("cvtsi2") || base.starts_with("cvtdq2") {
        ops.push((IntToFp, 1.0));
    } else if base.starts_with("cvtt") || base.starts_with("cvtsd2si") || base.starts_with("cvtss2si") {
        ops.push((FpToInt, 1.0));
    } else if base == "andpd" || base == "andps" {
        ops.push((Fabs, 1.0));
    } else {
        // Integer.
        let class = match name.as_str() {
            "add" | "sub" | "inc" | "dec" | "neg" | "lea" | "adc" | "sbb" | "paddd" | "paddq" | "psubd" | "psubq" => Some(IntAdd),
            "imul" | "mul" | "pmulld" | "pmuludq" => Some(IntMul),
            "div" | "idiv" => Some(IntDiv),
            "cmp" | "test" | "pcmpeqd" | "pcmpgtd" => Some(IntCmp),
            n if ["and", "or", "xor", "not", "shl", "shr", "sar", "rol", "ror", "sete", "setne", "setl", "setg", "setle", "setge", "setb", "seta", "setbe", "setae", "pand", "por", "pxor"].contains(&n) => Some(IntLogic),
            n if n.starts_with("cmov") => Some(IntLogic),
            _ => None,
        };
        // xor r, r zeroes a register: free.
        let zeroing = (name == "xor" || name == "pxor" || name == "xorps" || name == "xorpd") && ins.op_count() >= 2 && ins.op_register(0) == ins.op_register(1);
        if let Some(c) = class.filter(|_| !zeroing) {
            ops.push((c, 1.0));
        }
    }
    (ops, fp_elems, mem_elems, packed)
}

/// Counts a program's compiled instructions per block of `model`. `exe` must carry DWARF
/// line information (built with -g).
pub fn compiled_ops(model: &ProgramModel, exe: &Path) -> Result<CompiledOps> {
    let mut blocks = Blocks::new(model);
    let funcs = decode(exe, &mut blocks)?;
    let nb = model.blocks.len();
    let mut out = CompiledOps::default();
    let mut per_block: Vec<BTreeMap<OpClass, f64>> = vec![BTreeMap::new(); nb];
    // Machine loops over all functions: (function, lo, hi).
    struct ML {
        f: usize,
        lo: u64,
        hi: u64,
        src: Option<usize>,
        k: f64,
        vector: bool,
        n: usize,
    }
    let mut loops: Vec<ML> = Vec::new();
    for (f, insns) in funcs.iter().enumerate() {
        let edges = insns.iter().filter_map(|i| i.back_to.map(|t| (t, i.addr, i.end, i.ins.flow_control() == FlowControl::UnconditionalBranch))).collect();
        loops.extend(merged_loops(edges).into_iter().map(|(lo, hi)| ML { f, lo, hi, src: None, k: 1.0, vector: false, n: 0 }));
    }
    // The innermost machine loop of each instruction.
    let ranges: Vec<(usize, u64, u64)> = loops.iter().map(|l| (l.f, l.lo, l.hi)).collect();
    let innermost = |f: usize, a: u64| -> Option<usize> {
        ranges.iter().enumerate().filter(|(_, l)| l.0 == f && l.1 <= a && a < l.2).min_by_key(|(_, l)| l.2 - l.1).map(|(k, _)| k)
    };
    // Match each machine loop to a source loop, and find its k: innermost machine loops first,
    // each by the votes of its own instructions (not those of nested machine loops) for the
    // source loops around them, a loop a nested machine loop took excluded.
    let mut order: Vec<usize> = (0..loops.len()).collect();
    order.sort_by_key(|&li| loops[li].hi - loops[li].lo);
    for li in order {
        let (f, lo, hi) = (loops[li].f, loops[li].lo, loops[li].hi);
        let body: Vec<&Insn> = funcs[f].iter().filter(|i| lo <= i.addr && i.addr < hi).collect();
        let own: Vec<&&Insn> = body.iter().filter(|i| innermost(f, i.addr) == Some(li)).collect();
        let claimed: Vec<usize> = loops.iter().enumerate().filter(|(k, l)| *k != li && l.f == f && lo <= l.lo && l.hi <= hi && (l.lo, l.hi) != (lo, hi)).filter_map(|(_, l)| l.src).collect();
        let mut votes: HashMap<usize, usize> = HashMap::new();
        let placed = own.iter().filter(|i| i.block.is_some()).count();
        for i in &own {
            if let Some(b) = i.block {
                for a in blocks.ancestors(b).filter(|&a| blocks.is_loop(a) && !claimed.contains(&a)) {
                    *votes.entry(a).or_default() += 1;
                }
            }
        }
        // The deepest loop with a majority.
        let src = votes
            .iter()
            .filter(|(_, &v)| 2 * v >= placed.max(1))
            .max_by_key(|(&l, _)| blocks.ancestors(l).count())
            .map(|(&l, _)| l);
        // Element operations of its own instructions written in the source loop's function
        // (inlined code is not in the source loop's counts).
        let same_fn = |i: &Insn| match (i.block, src) {
            (Some(b), Some(s)) => model.blocks[b].function == model.blocks[s].function,
            _ => false,
        };
        let (mf, mm, ms) = own.iter().filter(|i| same_fn(i)).fold((0.0, 0.0, 0.0), |a, i| (a.0 + i.fp_elems, a.1 + i.mem_elems, a.2 + i.store_elems));
        let vector = own.iter().any(|i| i.packed);
        // Only an innermost machine loop is vectorised or unrolled: an outer one's own code
        // (the set-up of its inner loops, spills, calls) is no measure of its iterations.
        let innermost_loop = body.iter().all(|i| innermost(f, i.addr) == Some(li));
        let k = match src {
            Some(_) if !innermost_loop => 1.0,
            Some(l) => {
                // A vectorised loop by its floating-point lanes (else memory elements); a
                // scalar one by its stores (else memory accesses): unrolled or not, a scalar
                // loop keeps every store, while the source's floating-point counts of
                // conditional expressions are fractions.
                let (sf, sm, ss) = source_elems(model, &blocks, l);
                let ratio = |m: f64, s: f64| (m > 0.0 && s > 0.0).then(|| m / s);
                let r = if vector { ratio(mf, sf).or(ratio(mm, sm)) } else { ratio(ms, ss).or(ratio(mm, sm)) }.unwrap_or(1.0);
                // A power of two, 1 to 64; a ratio under 1.75 is 1 (code the source does not
                // show, such as an address computation in floating point, is not a lane).
                let p = (r.max(1.0).log2() + 0.2).floor().clamp(0.0, 6.0);
                2f64.powf(p)
            }
            None => 1.0,
        };
        let l = &mut loops[li];
        if std::env::var_os("MPICAST_OBJCODE_DEBUG").is_some() {
            eprintln!("machine loop {:x}..{:x}: source {:?}, k {k}, vector {vector}", l.lo, l.hi, src.map(|s| &model.blocks[s].id));
        }
        l.src = src;
        l.k = k;
        l.vector = vector;
        l.n = body.len();
    }
    // The main machine loop of each source loop: the largest k, then the most instructions.
    let mut main: HashMap<usize, usize> = HashMap::new();
    for (li, l) in loops.iter().enumerate() {
        if let Some(s) = l.src {
            let better = match main.get(&s) {
                Some(&m) => (l.k, l.n) > (loops[m].k, loops[m].n),
                None => true,
            };
            if better {
                main.insert(s, li);
            }
        }
    }
    // Where each instruction is charged: (target block, weight, its innermost machine loop
    // when that loop is costed).
    let func_of = |b: usize| model.blocks[b].function.as_str();
    let mut placements: Vec<Vec<Option<(usize, f64, Option<usize>)>>> = Vec::with_capacity(funcs.len());
    for (f, insns) in funcs.iter().enumerate() {
        let mut row = Vec::with_capacity(insns.len());
        for i in insns {
            out.instructions += 1;
            let Some(b) = i.block else {
                row.push(None);
                continue;
            };
            let mut costed = None;
            let (target, w) = match innermost(f, i.addr).map(|m| (m, &loops[m])) {
                Some((m, l)) if l.src.is_some() => {
                    let s = l.src.unwrap_or(b);
                    if main.get(&s) != Some(&m) {
                        // A remainder or fallback version of a costed loop: its main version
                        // stands for it.
                        row.push(None);
                        continue;
                    }
                    costed = Some(m);
                    // Inlined code stays with its own function's block; so does code at the loop's
                    // own depth in a loop that is not vectorised.
                    if func_of(b) != func_of(s) || (blocks.loop_of(b) == Some(s) && (!l.vector || b == s)) {
                        (b, 1.0 / l.k)
                    } else {
                        (s, 1.0 / l.k)
                    }
                }
                _ => {
                    // Outside every machine loop: once per entry of the outermost source loop
                    // around it.
                    let outer = blocks.ancestors(b).filter(|&a| blocks.is_loop(a)).last();
                    match outer {
                        Some(o) => match blocks.parent[o] {
                            Some(p) => (p, 1.0),
                            None => {
                                row.push(None);
                                continue;
                            }
                        },
                        None => (b, 1.0),
                    }
                }
            };
            out.placed += 1;
            row.push(Some((target, w, costed)));
        }
        placements.push(row);
    }
    // Machine loops whose body llvm-mca can schedule as one straight sequence: an innermost,
    // costed loop whose instructions all go to the source loop or to straight-line code
    // directly in its body (executed once per iteration: no branch arm, no other function's
    // inlined code) and that calls nothing (llvm-mca does not see a callee).
    let mut bodies: Vec<(usize, String)> = Vec::new();
    let mut graphs: HashMap<usize, chain::RegGraph> = HashMap::new();
    for (li, l) in loops.iter().enumerate() {
        let Some(s) = l.src.filter(|s| main.get(s) == Some(&li)) else { continue };
        let in_loop: Vec<(usize, &Insn)> = funcs[l.f].iter().enumerate().filter(|(_, i)| l.lo <= i.addr && i.addr < l.hi).collect();
        let straight = in_loop.iter().all(|&(k, i)| {
            innermost(l.f, i.addr) == Some(li)
                && !i.ops.iter().any(|o| o.0 == OpClass::Call)
                && placements[l.f][k].map_or(true, |(t, _, _)| t == s || (model.blocks[t].kind == BlockKind::Straight && blocks.parent[t] == Some(s) && func_of(t) == func_of(s)))
        });
        if straight && in_loop.iter().any(|&(k, _)| placements[l.f][k].is_some()) {
            bodies.push((li, gas_text(in_loop.iter().map(|(_, i)| &i.ins))));
            graphs.insert(li, chain::RegGraph::of(in_loop.iter().map(|(_, i)| (&i.ins, i.ops.as_slice()))));
        }
    }
    let schedules: HashMap<usize, mca::Schedule> = if bodies.is_empty() {
        HashMap::new()
    } else {
        match mca::cycles_per_iteration(&bodies.iter().map(|b| b.1.as_str()).collect::<Vec<_>>()) {
            Ok(c) => bodies.iter().zip(c).filter_map(|((li, _), c)| c.map(|c| (*li, c))).collect(),
            Err(e) => {
                out.mca_note = Some(format!("{e:#}"));
                HashMap::new()
            }
        }
    };
    let cycles: HashMap<usize, f64> = schedules.iter().map(|(&li, s)| (li, s.cycles)).collect();
    // A scheduled loop's cycles go to one block, executed once per iteration: the straight
    // block of its body that most of its instructions belong to, else the loop itself (so that
    // its memory references are weighed against the whole iteration).
    let mut placed_in: HashMap<usize, HashMap<usize, usize>> = HashMap::new();
    for row in &placements {
        for &(t, _, m) in row.iter().flatten() {
            if let Some(m) = m.filter(|m| cycles.contains_key(m)) {
                *placed_in.entry(m).or_default().entry(t).or_default() += 1;
            }
        }
    }
    let dest: HashMap<usize, (usize, f64)> = placed_in
        .iter()
        .map(|(&m, per)| {
            let s = loops[m].src.unwrap_or(0);
            let body = per.iter().filter(|(&t, _)| t != s).max_by_key(|(&t, &n)| (n, std::cmp::Reverse(t))).map(|(&t, _)| t).unwrap_or(s);
            (m, (body, per.values().sum::<usize>() as f64))
        })
        .collect();
    let mut alt: HashMap<usize, BTreeMap<OpClass, f64>> = HashMap::new();
    for (f, insns) in funcs.iter().enumerate() {
        for (i, p) in insns.iter().zip(&placements[f]) {
            let Some((target, w, m)) = *p else { continue };
            if std::env::var_os("MPICAST_OBJCODE_DEBUG").is_some() {
                eprintln!("{:x} -> {} w {} {:?} (its line's block {:?})", i.addr, model.blocks[target].id, w, i.ops, i.block.map(|b| &model.blocks[b].id));
            }
            match m.and_then(|m| cycles.get(&m).map(|c| (c, dest[&m]))) {
                Some((c, (body, n))) => {
                    *per_block[body].entry(OpClass::CoreCycle).or_default() += c / n * w;
                    let alt = alt.entry(body).or_default();
                    for &(c, n) in &i.ops {
                        *alt.entry(c).or_default() += n * w;
                    }
                }
                None => {
                    for &(c, n) in &i.ops {
                        *per_block[target].entry(c).or_default() += n * w;
                    }
                }
            }
        }
    }
    // Blocks of a file the binary has code of take the compiled counts (none: all its code
    // went elsewhere, or it was optimised away); a file without code in it (not compiled into
    // this program) keeps the source's.
    let compiled_files: std::collections::HashSet<&str> =
        funcs.iter().flatten().filter_map(|i| i.block).map(|b| model.blocks[b].file.as_str()).collect();
    for (b, ops) in per_block.into_iter().enumerate() {
        if compiled_files.contains(model.blocks[b].file.as_str()) {
            out.blocks.insert(model.blocks[b].id.clone(), ops);
        }
    }
    for (b, ops) in alt {
        out.classes_of_cycles.insert(model.blocks[b].id.clone(), ops);
    }
    for (m, (body, _)) in &dest {
        if let Some(s) = schedules.get(m).filter(|s| s.cycles > 0.0) {
            let e = out.throughput_share.entry(model.blocks[*body].id.clone()).or_insert(0.0);
            *e = e.max(s.throughput_cycles / s.cycles);
            if let Some(g) = graphs.remove(m) {
                out.register_chains.entry(model.blocks[*body].id.clone()).or_default().push((loops[*m].k, g));
            }
        }
    }
    out.loops = loops
        .iter()
        .enumerate()
        .filter_map(|(li, l)| {
            l.src.map(|s| MachineLoop { block: model.blocks[s].id.clone(), instructions: l.n, k: l.k, vector: l.vector, main: main.get(&s) == Some(&li), cycles: cycles.get(&li).copied() })
        })
        .collect();
    Ok(out)
}

/// Floating-point, memory and store element operations written in one iteration of source loop `l`:
/// its straight-line blocks at its own depth, branch arms included (the machine loop's body
/// holds their code too, taken or not).
fn source_elems(model: &ProgramModel, blocks: &Blocks, l: usize) -> (f64, f64, f64) {
    use OpClass::*;
    let env = HashMap::new();
    let mut fp = 0.0;
    let mut mem = 0.0;
    let mut stores = 0.0;
    for (b, blk) in model.blocks.iter().enumerate() {
        if blk.kind != BlockKind::Straight || blocks.loop_of(b) != Some(l) {
            continue;
        }
        let get = |c: OpClass| blk.ops.get(&c).and_then(|e| e.eval_map(&env).ok()).unwrap_or(0.0);
        fp += [DoubleAdd, DoubleMul, DoubleDiv, FloatAdd, FloatMul, FloatDiv].iter().map(|&c| get(c)).sum::<f64>();
        mem += get(Load) + get(Store) + get(PtrDeref);
        stores += get(Store);
    }
    (fp, mem, stores)
}

/// The innermost machine loop of a named function, as llvm-mca schedules it.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionLoop {
    pub function: String,
    pub schedule: mca::Schedule,
    /// Instructions in the loop.
    pub instructions: usize,
    /// Some of them work on packed lanes (a vectorised body).
    pub vector: bool,
}

/// For each function of `exe` named in `names` (its symbol), the innermost loop closed by a
/// backward branch that calls nothing, scheduled by llvm-mca; functions without one, or that
/// llvm-mca could not read, are left out. Needs no debug information: the MTC's own
/// calibration kernels (bench machine) are read this way.
pub fn function_loops(exe: &Path, names: &[&str]) -> Result<Vec<FunctionLoop>> {
    let data = std::fs::read(exe).with_context(|| format!("{}: cannot read", exe.display()))?;
    let file = object::File::parse(&*data).with_context(|| format!("{}: not an object file", exe.display()))?;
    if file.architecture() != object::Architecture::X86_64 {
        bail!("{}: compiled costing reads x86-64 code only", exe.display());
    }
    let text = file.section_by_name(".text").context("no .text section")?;
    let (tlo, tdata) = (text.address(), text.data()?);
    let mut info = InstructionInfoFactory::new();
    let mut found: Vec<(String, String, usize, bool)> = Vec::new();
    for sym in file.symbols().filter(|s| s.kind() == SymbolKind::Text && s.size() > 0) {
        let Ok(name) = sym.name() else { continue };
        if !names.contains(&name) || sym.address() < tlo || sym.address() + sym.size() > tlo + tdata.len() as u64 {
            continue;
        }
        let (lo, size) = (sym.address(), sym.size());
        let bytes = &tdata[(lo - tlo) as usize..(lo - tlo + size) as usize];
        let mut dec = Decoder::with_ip(64, bytes, lo, DecoderOptions::NONE);
        let mut insns: Vec<Instruction> = Vec::new();
        let mut ins = Instruction::default();
        while dec.can_decode() {
            dec.decode_out(&mut ins);
            if !ins.is_invalid() {
                insns.push(ins);
            }
        }
        // Backward branches: loops [target, end of the branch).
        let loops: Vec<(u64, u64)> = insns
            .iter()
            .filter(|i| matches!(i.flow_control(), FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch))
            .filter_map(|i| {
                let t = i.near_branch_target();
                (t <= i.ip() && t >= lo).then_some((t, i.next_ip()))
            })
            .collect();
        let body = |l: &(u64, u64)| insns.iter().filter(|i| l.0 <= i.ip() && i.ip() < l.1).collect::<Vec<_>>();
        let innermost = loops
            .iter()
            .filter(|l| !loops.iter().any(|o| o != *l && l.0 <= o.0 && o.1 <= l.1))
            .filter(|l| body(l).iter().all(|i| i.flow_control() != FlowControl::Call && i.flow_control() != FlowControl::IndirectCall))
            .min_by_key(|l| l.1 - l.0);
        let Some(l) = innermost else { continue };
        let b = body(l);
        let vector = b.iter().any(|i| classify(i, &mut info).3);
        found.push((name.to_string(), gas_text(b.iter().copied()), b.len(), vector));
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let schedules = mca::cycles_per_iteration(&found.iter().map(|f| f.1.as_str()).collect::<Vec<_>>())?;
    Ok(found
        .into_iter()
        .zip(schedules)
        .filter_map(|((function, _, instructions, vector), s)| s.map(|schedule| FunctionLoop { function, schedule, instructions, vector }))
        .collect())
}

/// A loop body as AT&T assembly, one instruction a line (what llvm-mca reads).
fn gas_text<'i>(body: impl Iterator<Item = &'i Instruction>) -> String {
    use iced_x86::{Formatter, GasFormatter};
    let mut fmt = GasFormatter::new();
    fmt.options_mut().set_uppercase_hex(false);
    let mut text = String::new();
    for ins in body {
        let mut line = String::new();
        fmt.format(ins, &mut line);
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// Builds the program with its own compiler and flags plus `-g` (the default build: mpicc or
/// mpicxx -O2 with the user's flags) into `tool_cache()/objcode/<hash of the sources and
/// flags>`, unless it is there; locked. A `--build` command is not rebuilt: None.
pub fn build_debug(files: &[PathBuf], spec: &crate::mpi::build::BuildSpec) -> Result<Option<PathBuf>> {
    use crate::mpi::build::{is_unit, run_steps, tool_cache};
    use std::hash::{Hash, Hasher};
    if spec.command.is_some() {
        return Ok(None);
    }
    let units: Vec<PathBuf> = files.iter().filter(|f| is_unit(f)).filter_map(|f| std::fs::canonicalize(f).ok()).collect();
    if units.is_empty() {
        return Ok(None);
    }
    let mut spec = spec.clone();
    spec.cflags.push("-g".into());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in files {
        std::fs::canonicalize(f).ok().hash(&mut h);
        std::fs::read(f).unwrap_or_default().hash(&mut h);
    }
    let probe = spec.default_steps(&units, &units, Path::new("exe"), &[], Path::new("obj"));
    probe.hash(&mut h);
    let dir = tool_cache().join("objcode").join(format!("{:016x}", h.finish()));
    let exe = dir.join("program");
    if exe.is_file() {
        return Ok(Some(exe));
    }
    let _lock = crate::model::CacheLock::acquire(&dir, "build")?;
    if exe.is_file() {
        return Ok(Some(exe));
    }
    let tmp = dir.join(format!("program.tmp{}", std::process::id()));
    let steps = spec.default_steps(&units, &units, &tmp, &[], &dir);
    run_steps(&steps, Path::new("."), None, "compiled costing", "")?;
    std::fs::rename(&tmp, &exe).with_context(|| format!("{}: cannot write", exe.display()))?;
    Ok(Some(exe))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes(bytes: &[u8]) -> Vec<(OpClass, f64)> {
        let ins = Decoder::with_ip(64, bytes, 0, DecoderOptions::NONE).decode();
        classify(&ins, &mut InstructionInfoFactory::new()).0
    }

    /// max and min are adds (one uop on the adders); a compare into flags is a compare; packed
    /// max of four floats is one float add (its lanes counted apart).
    #[test]
    fn max_and_min_cost_an_add_and_compares_a_compare() {
        assert_eq!(classes(&[0xF2, 0x0F, 0x5F, 0xC1]), [(OpClass::DoubleAdd, 1.0)], "maxsd xmm0, xmm1");
        assert_eq!(classes(&[0xF3, 0x0F, 0x5D, 0xC1]), [(OpClass::FloatAdd, 1.0)], "minss xmm0, xmm1");
        assert_eq!(classes(&[0x0F, 0x5F, 0xC1]), [(OpClass::FloatAdd, 1.0)], "maxps xmm0, xmm1");
        assert_eq!(classes(&[0x66, 0x0F, 0x2F, 0xC1]), [(OpClass::FpCmp, 1.0)], "comisd xmm0, xmm1");
        assert_eq!(classes(&[0xF2, 0x0F, 0x58, 0xC1]), [(OpClass::DoubleAdd, 1.0)], "addsd xmm0, xmm1");
    }

    /// EP's loop: latches at 0x11df (to 0x11a0) and 0x1297 (to 0x11ad) are one loop; the cold
    /// `else` at 0x1330 jumping back to 0x1266, and a fallback at 0x13c5 to 0x1240, are none; an
    /// inner loop and a loop after it stay apart.
    #[test]
    fn machine_loops_merge_latches_and_drop_cold_returns() {
        let edges = vec![
            (0x11a0, 0x11df, 0x11e1, false),
            (0x1200, 0x1220, 0x1222, false),
            (0x11ad, 0x1297, 0x129d, false),
            (0x1266, 0x1334, 0x1339, true),
            (0x1240, 0x13c5, 0x13ca, true),
            (0x1400, 0x1440, 0x1442, false),
        ];
        assert_eq!(merged_loops(edges), [(0x11a0, 0x129d), (0x1200, 0x1222), (0x1400, 0x1442)]);
    }

    /// One loop body of 10 cycles (0.35 ns each: 3.5 ns) whose instructions are 4 double adds
    /// at 1 ns: what `apply` charges it for a resource share and a resource factor.
    fn applied(share: f64, resource_factor: f64) -> (BTreeMap<OpClass, f64>, Option<f64>) {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("body.c");
        std::fs::write(&src, "void f(double *a, int n) {\n  for (int i = 0; i < n; i++)\n    a[i] += 1.0;\n}\n").unwrap();
        let model = crate::frontend::analyze(&[src], &crate::frontend::Options::default());
        let id = model.blocks.iter().find(|b| b.kind == crate::model::analysis::BlockKind::Loop).expect("the loop's block").id.clone();
        let mut c = CompiledOps::default();
        c.blocks.insert(id.clone(), BTreeMap::from([(OpClass::CoreCycle, 10.0)]));
        c.classes_of_cycles.insert(id.clone(), BTreeMap::from([(OpClass::DoubleAdd, 4.0)]));
        c.throughput_share.insert(id.clone(), share);
        let costs = BTreeMap::from([(OpClass::CoreCycle, 0.35), (OpClass::DoubleAdd, 1.0)]);
        let out = c.apply(&model, Some(&costs), None, 1.0, resource_factor);
        let b = out.blocks.iter().find(|b| b.id == id).unwrap();
        let none = HashMap::new();
        let ops = b.ops.iter().filter(|(c, _)| INSTRUCTION_CLASSES.contains(c)).map(|(c, e)| (*c, e.eval_map(&none).unwrap())).collect();
        (ops, b.resource_share)
    }

    /// The resource factor stretches llvm-mca's resource-bound cycles: past the classes' own
    /// 4 ns the body is bound by its resources at the host's throughputs and takes its classes;
    /// short of them it keeps its cycles, the resources taking their stretched share.
    #[test]
    fn the_resource_factor_stretches_the_resource_bound_cycles() {
        let near = |a: f64, b: f64| (a - b).abs() < 1e-3;
        // Factor 1: resources 3.5 ns (under the classes' 4), chain 3.5: the cycles stay.
        let (ops, share) = applied(1.0, 1.0);
        assert!(near(ops[&OpClass::CoreCycle], 10.0) && !ops.contains_key(&OpClass::DoubleAdd), "{ops:?}");
        assert_eq!(share, None, "resources take the whole 3.5 ns");
        // Factor 2: 7 ns of resources, more than the classes: the classes (4 ns).
        let (ops, _) = applied(1.0, 2.0);
        assert!(near(ops[&OpClass::DoubleAdd], 4.0) && !ops.contains_key(&OpClass::CoreCycle), "{ops:?}");
        // Half the cycles resource-bound, factor 1.5: 2.625 ns of resources under the 3.5 ns
        // chain: 10 cycles, 0.75 of them the resources'.
        let (ops, share) = applied(0.5, 1.5);
        assert!(near(ops[&OpClass::CoreCycle], 10.0), "{ops:?}");
        assert!(share.is_some_and(|s| near(s, 0.75)), "{share:?}");
        // Factor 3 on that half: 5.25 ns of resources, the classes' 4 ns bound it.
        let (ops, _) = applied(0.5, 3.0);
        assert!(near(ops[&OpClass::DoubleAdd], 4.0), "{ops:?}");
    }
}
