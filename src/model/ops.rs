//! The op classes: the instruction set shared by the front end (which counts them per block) and
//! the machine table (which gives each a cost). docs/OPS.md lists the C constructs behind each.

use serde::{Deserialize, Serialize};

macro_rules! op_classes {
    ($($variant:ident => $name:literal : $doc:literal,)* ; $($mvariant:ident => $mname:literal : $mdoc:literal,)* ; $($dvariant:ident => $dname:literal : $ddoc:literal,)*) => {
        /// One class of operation whose cost the machine table gives.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum OpClass {
            $(#[doc = $doc] #[serde(rename = $name)] $variant,)*
            $(#[doc = $mdoc] #[serde(rename = $mname)] $mvariant,)*
            $(#[doc = $ddoc] #[serde(rename = $dname)] $dvariant,)*
        }

        impl OpClass {
            /// Every class a kernel of the MTC measures, in table order.
            pub const ALL: &'static [OpClass] = &[$(OpClass::$variant,)*];

            /// Classes whose kernels call MPI: measured when the MTC runs inside an MPI
            /// process, absent from other tables (and from those written before them); a
            /// class a table lacks costs nothing.
            pub const MPI: &'static [OpClass] = &[$(OpClass::$mvariant,)*];

            /// Classes whose cost the machine table derives from another class's kernels
            /// (`MachineTable::cost`): no kernel of their own, not among a table's classes.
            pub const DERIVED: &'static [OpClass] = &[$(OpClass::$dvariant,)*];

            /// The snake_case name used in JSON and on the command line.
            pub fn name(self) -> &'static str {
                match self { $(OpClass::$variant => $name,)* $(OpClass::$mvariant => $mname,)* $(OpClass::$dvariant => $dname,)* }
            }

            /// One-line description.
            pub fn doc(self) -> &'static str {
                match self { $(OpClass::$variant => $doc,)* $(OpClass::$mvariant => $mdoc,)* $(OpClass::$dvariant => $ddoc,)* }
            }

            pub fn from_name(s: &str) -> Option<OpClass> {
                match s { $($name => Some(OpClass::$variant),)* $($mname => Some(OpClass::$mvariant),)* $($dname => Some(OpClass::$dvariant),)* _ => None }
            }
        }
    };
}

op_classes! {
    IntAdd => "int_add": "integer add, subtract, negate, increment, decrement",
    IntMul => "int_mul": "integer multiply",
    IntDiv => "int_div": "integer divide and modulo",
    IntCmp => "int_cmp": "integer comparison (==, !=, <, <=, >, >=)",
    IntLogic => "int_logic": "integer bitwise and shift (&, |, ^, ~, <<, >>) and logical not",
    FloatAdd => "float_add": "float add and subtract",
    FloatMul => "float_mul": "float multiply",
    FloatDiv => "float_div": "float divide",
    DoubleAdd => "double_add": "double add and subtract",
    DoubleMul => "double_mul": "double multiply",
    DoubleDiv => "double_div": "double divide",
    FpCmp => "fp_cmp": "floating-point comparison",
    IntToFp => "int_to_fp": "integer to floating-point conversion",
    FpToInt => "fp_to_int": "floating-point to integer conversion",
    Load => "load": "load of an array element (a[i] read)",
    Store => "store": "store to an array element (a[i] = ...)",
    PtrDeref => "ptr_deref": "pointer dereference read (*p, p->f)",
    Branch => "branch": "conditional branch (if, ?:, &&, ||)",
    BranchMiss => "branch_miss": "a loop exit the branch predictor misses (the pipeline refilled): a trip count unlike the previous entry's, or longer than the predictor's history",
    LoopIter => "loop_iter": "one loop iteration's overhead (test, increment, jump)",
    Call => "call": "function call and return",
    Sqrt => "sqrt": "sqrt, sqrtf",
    Exp => "exp": "exp, expf, exp2",
    Log => "log": "log, logf, log2, log10",
    SinCos => "sincos": "sin, cos, tan and their float forms",
    Pow => "pow": "pow, powf",
    Fabs => "fabs": "fabs, fabsf, abs",
    Rand => "rand": "rand() and random()",
    MemcpyByte => "memcpy_byte": "one byte of memcpy or memmove",
    MemsetByte => "memset_byte": "one byte of memset",
    Alloc => "alloc": "malloc, calloc, realloc or free (one call, small blocks)",
    PrintCall => "print_call": "one printf, fprintf, sprintf, snprintf, puts or fputs call (its conversions are counted apart)",
    PrintInt => "print_int": "one integer, character, string or pointer conversion of a printf-family call",
    PrintFp => "print_fp": "one floating-point conversion (%f, %e, %g, %a) of a printf-family call",
    WriteByte => "write_byte": "one byte written with fwrite or write (stdio buffering and the write to the file)",
    ;
    CommCreate => "comm_create": "one communicator made and freed (MPI_Comm_split, MPI_Comm_dup, MPI_Cart_create and the other constructors): the calling process's own work",
    CommNull => "comm_null": "one MPI_Comm_split or MPI_Comm_split_type whose colour is MPI_UNDEFINED (no communicator made): the calling process's own work",
    ;
    CoreCycle => "core_cycle": "one cycle of the core as llvm-mca schedules a machine loop's instructions (ports, dispatch, dependencies); costs the int_add latency kernel's figure",
}

impl std::fmt::Display for OpClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_serde_agrees() {
        assert!(OpClass::ALL.len() >= 24);
        for &c in OpClass::ALL.iter().chain(OpClass::MPI).chain(OpClass::DERIVED) {
            assert_eq!(OpClass::from_name(c.name()), Some(c));
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{}\"", c.name()));
        }
    }
}

/// Op counts of a block by class: a vector sorted by class, read and written as a JSON object
/// like a map. Blocks hold one each and an analysis holds hundreds of thousands of blocks: a
/// BTreeMap's node, sized for eleven entries, took about 600 bytes for a block's two or three.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OpCounts(Vec<(OpClass, crate::model::expr::Expr)>);

impl OpCounts {
    pub fn new() -> OpCounts {
        OpCounts(Vec::new())
    }

    fn find(&self, c: &OpClass) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.cmp(c))
    }

    pub fn get(&self, c: &OpClass) -> Option<&crate::model::expr::Expr> {
        self.find(c).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, c: &OpClass) -> bool {
        self.find(c).is_ok()
    }

    /// Sets the count of `c`, returning the previous one.
    pub fn insert(&mut self, c: OpClass, e: crate::model::expr::Expr) -> Option<crate::model::expr::Expr> {
        match self.find(&c) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, e)),
            Err(i) => {
                self.0.insert(i, (c, e));
                None
            }
        }
    }

    pub fn remove(&mut self, c: &OpClass) -> Option<crate::model::expr::Expr> {
        self.find(c).ok().map(|i| self.0.remove(i).1)
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&OpClass, &mut crate::model::expr::Expr) -> bool) {
        self.0.retain_mut(|(c, e)| keep(c, e));
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// (class, count) in class order.
    pub fn iter(&self) -> impl Iterator<Item = (&OpClass, &crate::model::expr::Expr)> {
        self.0.iter().map(|(c, e)| (c, e))
    }

    pub fn values(&self) -> impl Iterator<Item = &crate::model::expr::Expr> {
        self.0.iter().map(|(_, e)| e)
    }

    /// Gives the vector's spare capacity back (a finished block's counts do not grow).
    pub fn shrink_to_fit(&mut self) {
        self.0.shrink_to_fit();
    }
}

impl<'a> IntoIterator for &'a OpCounts {
    type Item = (&'a OpClass, &'a crate::model::expr::Expr);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (OpClass, crate::model::expr::Expr)>, fn(&'a (OpClass, crate::model::expr::Expr)) -> (&'a OpClass, &'a crate::model::expr::Expr)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(c, e)| (c, e))
    }
}

impl IntoIterator for OpCounts {
    type Item = (OpClass, crate::model::expr::Expr);
    type IntoIter = std::vec::IntoIter<(OpClass, crate::model::expr::Expr)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl FromIterator<(OpClass, crate::model::expr::Expr)> for OpCounts {
    fn from_iter<I: IntoIterator<Item = (OpClass, crate::model::expr::Expr)>>(items: I) -> OpCounts {
        let mut m = OpCounts::new();
        for (c, e) in items {
            m.insert(c, e);
        }
        m
    }
}

impl Serialize for OpCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(c, e)| (c, e)))
    }
}

impl<'de> Deserialize<'de> for OpCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<OpCounts, D::Error> {
        let m = std::collections::BTreeMap::<OpClass, crate::model::expr::Expr>::deserialize(d)?;
        Ok(OpCounts(m.into_iter().collect()))
    }
}
