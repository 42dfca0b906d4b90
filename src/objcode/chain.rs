//! Chains carried in registers from one iteration of a machine loop to the next, costed with
//! this host's measured latencies. llvm-mca's schedule has such chains too, but with its CPU
//! model's latencies, which need not be the host's: on this project's Intel VM a float add
//! chain is 2 cycles (the MTC's float_add latency kernel), where llvm-mca's model of the host
//! says 4 (simgrid's gemm: 4.07 cycles per element scheduled, 2.9 measured).
//!
//! The body is a straight sequence (what llvm-mca schedules): each instruction's result is
//! ready its latency after the last of the registers it reads; one reading memory adds a
//! load's latency on the path from its address registers (and from nothing else: the loaded
//! value does not wait on the register it replaces). A register's chain is how long after its
//! own value at the top of the body its new value at the bottom is ready. Flags and memory
//! (a store read back) carry no chain here.

use std::collections::{BTreeMap, HashMap};

use iced_x86::{Instruction, InstructionInfoFactory, OpAccess, Register};

use crate::model::ops::OpClass;

/// One instruction as the chains see it.
#[derive(Debug, Clone, PartialEq)]
struct Node {
    reads: Vec<Register>,
    /// The read registers that address memory it loads.
    addr: Vec<Register>,
    writes: Vec<Register>,
    /// Its compute classes (what its latency is: the longest of theirs).
    classes: Vec<OpClass>,
    loads: bool,
}

/// A machine loop body's register dependencies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegGraph {
    nodes: Vec<Node>,
}

/// Classes that are not a computation on a register's value.
fn compute(c: OpClass) -> bool {
    !matches!(c, OpClass::Load | OpClass::Store | OpClass::Branch | OpClass::Call | OpClass::LoopIter)
}

impl RegGraph {
    /// The graph of a body: its instructions in order, each with its op classes (as
    /// `classify` gives them).
    pub fn of<'i>(body: impl Iterator<Item = (&'i Instruction, &'i [(OpClass, f64)])>) -> RegGraph {
        let mut info = InstructionInfoFactory::new();
        let mut nodes = Vec::new();
        for (ins, ops) in body {
            let i = info.info(ins);
            let zeroing = zeroing_idiom(ins);
            let mut reads = Vec::new();
            let mut writes = Vec::new();
            for u in i.used_registers() {
                let r = u.register().full_register();
                if r == Register::None || r == Register::RIP {
                    continue;
                }
                let (rd, wr) = match u.access() {
                    OpAccess::Read | OpAccess::CondRead => (true, false),
                    OpAccess::Write | OpAccess::CondWrite => (false, true),
                    OpAccess::ReadWrite | OpAccess::ReadCondWrite => (true, true),
                    _ => (false, false),
                };
                if rd && !zeroing && !reads.contains(&r) {
                    reads.push(r);
                }
                if wr && !writes.contains(&r) {
                    writes.push(r);
                }
            }
            let mut addr = Vec::new();
            let mut loads = false;
            for m in i.used_memory() {
                if matches!(m.access(), OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite) {
                    loads = true;
                    for r in [m.base(), m.index()] {
                        let r = r.full_register();
                        if r != Register::None && r != Register::RIP && !addr.contains(&r) {
                            addr.push(r);
                        }
                    }
                }
            }
            let classes = ops.iter().map(|o| o.0).filter(|&c| compute(c)).collect();
            nodes.push(Node { reads, addr, writes, classes, loads });
        }
        RegGraph { nodes }
    }

    /// The longest chain carried through a register, in ns per iteration of the body, with
    /// `latency` ns per op class (None: no register is carried, or a class has no latency).
    pub fn longest(&self, latency: &BTreeMap<OpClass, f64>) -> Option<f64> {
        let lat = |c: &OpClass| latency.get(c).copied();
        let load = lat(&OpClass::Load)?;
        let mut per_node = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            let mut l: f64 = 0.0;
            for c in &n.classes {
                l = l.max(lat(c)?);
            }
            per_node.push(l);
        }
        let written: Vec<Register> = self.nodes.iter().flat_map(|n| n.writes.iter().copied()).collect();
        let mut candidates: Vec<Register> = self.nodes.iter().flat_map(|n| n.reads.iter().copied()).filter(|r| written.contains(r)).collect();
        candidates.sort_unstable_by_key(|r| *r as u32);
        candidates.dedup();
        let mut best: Option<f64> = None;
        for r in candidates {
            let mut ready: HashMap<Register, f64> = HashMap::from([(r, 0.0)]);
            for (n, &l) in self.nodes.iter().zip(&per_node) {
                let mut t: Option<f64> = None;
                for x in &n.reads {
                    let Some(&d) = ready.get(x) else { continue };
                    let via_load = n.loads && (n.addr.contains(x) || n.classes.is_empty());
                    let at = d + l + if via_load { load } else { 0.0 };
                    t = Some(t.map_or(at, |t: f64| t.max(at)));
                }
                for w in &n.writes {
                    match t {
                        Some(t) => {
                            ready.insert(*w, t);
                        }
                        None => {
                            ready.remove(w);
                        }
                    }
                }
            }
            if let Some(&d) = ready.get(&r).filter(|&&d| d > 0.0) {
                best = Some(best.map_or(d, |b| b.max(d)));
            }
        }
        best
    }
}

/// xor, pxor, xorps, xorpd or sub of a register with itself: a zero, whatever the register held.
fn zeroing_idiom(ins: &Instruction) -> bool {
    let name = format!("{:?}", ins.mnemonic()).to_ascii_lowercase();
    let name = name.strip_prefix('v').unwrap_or(&name);
    let same = match ins.op_count() {
        2 => ins.op_kind(0) == iced_x86::OpKind::Register && ins.op_kind(1) == iced_x86::OpKind::Register && ins.op_register(0) == ins.op_register(1),
        3 => (0..3).all(|i| ins.op_kind(i) == iced_x86::OpKind::Register) && ins.op_register(1) == ins.op_register(2),
        _ => false,
    };
    same && matches!(name, "xor" | "pxor" | "xorps" | "xorpd" | "sub" | "psubd" | "psubq")
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions};

    fn body(bytes: &[u8], classes: &[&[OpClass]]) -> RegGraph {
        let mut dec = Decoder::with_ip(64, bytes, 0x1000, DecoderOptions::NONE);
        let insns: Vec<Instruction> = dec.iter().collect();
        assert_eq!(insns.len(), classes.len(), "{insns:?}");
        let ops: Vec<Vec<(OpClass, f64)>> = classes.iter().map(|c| c.iter().map(|&c| (c, 1.0)).collect()).collect();
        RegGraph::of(insns.iter().zip(ops.iter().map(|v| v.as_slice())))
    }

    fn latencies() -> BTreeMap<OpClass, f64> {
        BTreeMap::from([(OpClass::Load, 5.0), (OpClass::FloatAdd, 2.0), (OpClass::FloatMul, 3.0), (OpClass::IntAdd, 1.0), (OpClass::IntCmp, 1.0)])
    }

    /// gemm's inner loop as gcc -O2 builds it: the sum in xmm0 is carried (one add, 2), the
    /// load of b and the multiply are not; the index (one add, 1) is shorter.
    #[test]
    fn a_sum_in_a_register_is_the_chain() {
        use OpClass::*;
        // movss (%rax),%xmm1; mulss (%rdx),%xmm1; add $4,%rdx; add %rcx,%rax; addss %xmm1,%xmm0;
        // cmp %rsi,%rdx; jne
        let code = [
            0xf3, 0x0f, 0x10, 0x08, // movss (%rax),%xmm1
            0xf3, 0x0f, 0x59, 0x0a, // mulss (%rdx),%xmm1
            0x48, 0x83, 0xc2, 0x04, // add $4,%rdx
            0x48, 0x01, 0xc8, // add %rcx,%rax
            0xf3, 0x0f, 0x58, 0xc1, // addss %xmm1,%xmm0
            0x48, 0x39, 0xf2, // cmp %rsi,%rdx
            0x75, 0xe9, // jne
        ];
        let g = body(&code, &[&[Load], &[Load, FloatMul], &[IntAdd], &[IntAdd], &[FloatAdd], &[IntCmp], &[Branch]]);
        assert_eq!(g.longest(&latencies()), Some(2.0));
    }

    /// A pointer chase (`p = p->next`) is a load's latency; a zeroed register carries nothing.
    #[test]
    fn a_pointer_chase_is_a_loads_latency_and_a_zero_carries_nothing() {
        use OpClass::*;
        // mov (%rax),%rax; xor %edx,%edx; add $1,%edx; jne
        let code = [0x48, 0x8b, 0x00, 0x31, 0xd2, 0x83, 0xc2, 0x01, 0x75, 0xf6];
        let g = body(&code, &[&[Load], &[IntLogic], &[IntAdd], &[Branch]]);
        let mut lat = latencies();
        lat.insert(IntLogic, 1.0);
        assert_eq!(g.longest(&lat), Some(5.0));
        // Without the chase only the zeroed edx is written and read: nothing carried.
        let g = body(&code[3..], &[&[IntLogic], &[IntAdd], &[Branch]]);
        assert_eq!(g.longest(&lat), None);
    }
}
