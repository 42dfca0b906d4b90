//! The op classes: the instruction set shared by the front end (which counts them per block) and
//! the machine table (which gives each a cost). docs/OPS.md lists the C constructs behind each.

use serde::{Deserialize, Serialize};

macro_rules! op_classes {
    ($($variant:ident => $name:literal : $doc:literal,)*) => {
        /// One class of operation whose cost the MTC measures.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum OpClass {
            $(#[doc = $doc] #[serde(rename = $name)] $variant,)*
        }

        impl OpClass {
            /// Every class, in table order.
            pub const ALL: &'static [OpClass] = &[$(OpClass::$variant,)*];

            /// The snake_case name used in JSON and on the command line.
            pub fn name(self) -> &'static str {
                match self { $(OpClass::$variant => $name,)* }
            }

            /// One-line description.
            pub fn doc(self) -> &'static str {
                match self { $(OpClass::$variant => $doc,)* }
            }

            pub fn from_name(s: &str) -> Option<OpClass> {
                match s { $($name => Some(OpClass::$variant),)* _ => None }
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
        for &c in OpClass::ALL {
            assert_eq!(OpClass::from_name(c.name()), Some(c));
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{}\"", c.name()));
        }
    }
}
