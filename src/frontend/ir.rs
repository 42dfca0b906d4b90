//! mpicast's own small C IR: what the analysis sees of a translation unit. Built by
//! [`super::lower`] from the tree-sitter tree; nothing here knows tree-sitter.

/// Where a construct sits in its file (1-based lines, 0-based column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub line_start: u32,
    pub line_end: u32,
    pub col: u32,
    /// Byte offsets in the file, end exclusive.
    pub byte_start: u32,
    pub byte_end: u32,
    /// Where a statement may be inserted around this one (statements only).
    pub place: Place,
}

/// Where text may be inserted before, inside and around a statement, as the syntax tree (and
/// the preprocessor lines tree-sitter does not parse) says. The instrumenter's counters and
/// braces go only at these offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Place {
    /// Before the statement: its start, or the start of the first line of the `#pragma` lines
    /// (and directive-only `#if` groups) attached to it, which must stay right before it.
    pub lead: u32,
    /// The 1-based line at `lead` when `lead` starts a preprocessor line (what is inserted there
    /// ends with a newline and `#line`), else 0.
    pub lead_line: u32,
    /// Inside: just after a compound statement's `{` or a case label's `:`; 0 for other
    /// statements.
    pub inner: u32,
    /// Where a closing brace goes when the statement is enclosed in braces: its end, or the end
    /// of the `#endif` line of a preprocessor conditional its lead opened.
    pub close: u32,
    /// The 1-based line after `close` when `close` ends a preprocessor line, else 0.
    pub close_line: u32,
    /// Braces cannot enclose it: the preprocessor arm it starts holds more statements.
    pub no_wrap: bool,
    /// It starts inside a statement macro's expansion: nothing can be inserted there.
    pub in_macro: bool,
}

impl Span {
    /// The span with its byte offsets passed through `f` (offset -> (offset, inside a macro's
    /// expansion)); a statement that starts inside an expansion is marked.
    pub fn map_offsets(&mut self, f: &impl Fn(u32) -> (u32, bool)) {
        self.byte_start = f(self.byte_start).0;
        self.byte_end = f(self.byte_end).0;
        let (lead, a) = f(self.place.lead);
        self.place.lead = lead;
        self.place.in_macro |= a;
        if self.place.inner != 0 {
            // A compound statement whose brace a macro wrote: enclosed whole, as a statement
            // without braces, when it starts where the macro's use does.
            let (inner, b) = f(self.place.inner);
            self.place.inner = if b { 0 } else { inner };
        }
        self.place.close = f(self.place.close).0;
    }
}

/// A C scalar base type, as far as op classes care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    Void,
    Int,
    Float,
    Double,
    Struct(String),
    Named(String),
    Unknown,
}

/// A type: base, pointer/array depth, const-ness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CType {
    pub base: Base,
    /// Pointers plus array dimensions: a subscript or dereference removes one level.
    pub indirection: u32,
    pub is_const: bool,
    /// Bytes of an integer base other than int (char 1, short 2, long 8); 0: the base's own.
    pub width: u8,
    /// An integer type written `unsigned` (typedefs such as uint64_t keep their name instead).
    pub unsigned: bool,
}

impl CType {
    pub fn new(base: Base) -> CType {
        CType { base, indirection: 0, is_const: false, width: 0, unsigned: false }
    }
    pub fn int() -> CType {
        CType::new(Base::Int)
    }
    pub fn double() -> CType {
        CType::new(Base::Double)
    }
    pub fn unknown() -> CType {
        CType::new(Base::Unknown)
    }
    pub fn deref(&self) -> CType {
        CType { base: self.base.clone(), indirection: self.indirection.saturating_sub(1), is_const: false, width: self.width, unsigned: self.unsigned }
    }
    pub fn is_scalar_fp(&self) -> bool {
        self.indirection == 0 && matches!(self.base, Base::Float | Base::Double)
    }
}

/// Where an array reference is written in its file (byte offsets, end exclusive), or nowhere
/// the user wrote it (inside a macro's expansion). Not part of the expression's value: any
/// two compare equal, so expressions compare as before.
#[derive(Debug, Clone, Copy, Default)]
pub struct At(pub Option<(u32, u32)>);

impl At {
    pub const NONE: At = At(None);
}

impl PartialEq for At {
    fn eq(&self, _: &At) -> bool {
        true
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum CExpr {
    Ident(String),
    Int(i128),
    /// A floating literal; `single` when it has an f suffix.
    Float { value: f64, single: bool },
    /// A string literal's characters (escapes decoded as far as C's simple ones go).
    Str(String),
    Binary { op: String, left: Box<CExpr>, right: Box<CExpr> },
    Unary { op: String, arg: Box<CExpr> },
    /// ++ / --, prefix (`++i`) or postfix (`i++`).
    Update { op: String, arg: Box<CExpr>, prefix: bool },
    Assign { op: String, left: Box<CExpr>, right: Box<CExpr> },
    /// `at`: where the call is written (the callee's name to the closing parenthesis), as for
    /// `Index`.
    Call { func: String, args: Vec<CExpr>, line: u32, at: At },
    /// `at`: where the reference is in its file, for the trace's address probes.
    Index { array: Box<CExpr>, index: Box<CExpr>, at: At },
    Field { base: Box<CExpr>, field: String, arrow: bool },
    Deref(Box<CExpr>),
    AddrOf(Box<CExpr>),
    Cast { ty: CType, value: Box<CExpr> },
    Cond { cond: Box<CExpr>, then: Box<CExpr>, otherwise: Box<CExpr> },
    Sizeof { ty: Option<CType>, value: Option<Box<CExpr>> },
    Comma(Box<CExpr>, Box<CExpr>),
    InitList(Vec<CExpr>),
    /// Something the lowering did not model; the text is kept for messages.
    Unknown(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct VarDecl {
    pub name: String,
    pub ty: CType,
    pub init: Option<CExpr>,
    pub span: Span,
    /// Declared `static` (inside a function: one variable for every call, initialised once).
    pub is_static: bool,
    /// An array's dimensions as declared, outermost first (`double a[n][m]`: n, m); empty for
    /// a scalar, a pointer, an array of pointers or one whose size is left out.
    pub dims: Vec<CExpr>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    Compound(Vec<Stmt>, Span),
    Expr(CExpr, Span),
    Decl(Vec<VarDecl>, Span),
    If { cond: CExpr, then: Box<Stmt>, otherwise: Option<Box<Stmt>>, span: Span },
    For { init: Option<Box<Stmt>>, cond: Option<CExpr>, update: Option<CExpr>, body: Box<Stmt>, span: Span },
    While { cond: CExpr, body: Box<Stmt>, span: Span },
    DoWhile { body: Box<Stmt>, cond: CExpr, span: Span },
    Switch { cond: CExpr, body: Box<Stmt>, span: Span },
    Case { value: Option<CExpr>, body: Vec<Stmt>, span: Span },
    Return(Option<CExpr>, Span),
    Break(Span),
    Continue(Span),
    Goto(Span),
    Label(Box<Stmt>, Span),
    Empty(Span),
}

impl Stmt {
    /// Every span of the statement and of those inside it through `f` (see [`Span::map_offsets`]).
    pub fn map_offsets(&mut self, f: &impl Fn(u32) -> (u32, bool)) {
        match self {
            Stmt::Compound(body, s) => {
                s.map_offsets(f);
                body.iter_mut().for_each(|b| b.map_offsets(f));
            }
            Stmt::Expr(_, s) | Stmt::Return(_, s) | Stmt::Break(s) | Stmt::Continue(s) | Stmt::Goto(s) | Stmt::Empty(s) => s.map_offsets(f),
            Stmt::Decl(decls, s) => {
                s.map_offsets(f);
                decls.iter_mut().for_each(|d| d.span.map_offsets(f));
            }
            Stmt::Label(b, s) => {
                s.map_offsets(f);
                b.map_offsets(f);
            }
            Stmt::If { then, otherwise, span, .. } => {
                span.map_offsets(f);
                then.map_offsets(f);
                if let Some(o) = otherwise {
                    o.map_offsets(f);
                }
            }
            Stmt::For { init, body, span, .. } => {
                span.map_offsets(f);
                if let Some(i) = init {
                    i.map_offsets(f);
                }
                body.map_offsets(f);
            }
            Stmt::While { body, span, .. } | Stmt::DoWhile { body, span, .. } | Stmt::Switch { body, span, .. } => {
                span.map_offsets(f);
                body.map_offsets(f);
            }
            Stmt::Case { body, span, .. } => {
                span.map_offsets(f);
                body.iter_mut().for_each(|b| b.map_offsets(f));
            }
        }
    }

    pub fn span(&self) -> Span {
        match self {
            Stmt::Compound(_, s)
            | Stmt::Expr(_, s)
            | Stmt::Decl(_, s)
            | Stmt::Return(_, s)
            | Stmt::Break(s)
            | Stmt::Continue(s)
            | Stmt::Goto(s)
            | Stmt::Label(_, s)
            | Stmt::Empty(s) => *s,
            Stmt::If { span, .. }
            | Stmt::For { span, .. }
            | Stmt::While { span, .. }
            | Stmt::DoWhile { span, .. }
            | Stmt::Switch { span, .. }
            | Stmt::Case { span, .. } => *span,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    pub name: String,
    pub ret: CType,
    pub params: Vec<VarDecl>,
    pub body: Stmt,
    pub span: Span,
    /// Declared `static` or `inline`: the compiler may inline it into its callers, where what
    /// it does through pointers to their locals stays in registers.
    pub local: bool,
}

/// A diagnostic from lowering: a construct not understood, or a syntax error.
#[derive(Debug, Clone, PartialEq)]
pub struct LowerDiag {
    pub line: u32,
    pub message: String,
}

/// One translation unit in IR form.
#[derive(Debug, Clone, Default)]
pub struct Unit {
    pub file: String,
    pub functions: Vec<Function>,
    pub globals: Vec<VarDecl>,
    /// Object-like macros: name, replacement (as an expression), line.
    pub defines: Vec<(String, CExpr, u32)>,
    /// Enumerators with their explicit value, in order.
    pub enums: Vec<(String, Option<CExpr>)>,
    pub typedefs: Vec<(String, CType)>,
    /// Struct name -> fields.
    pub structs: Vec<(String, Vec<(String, CType)>)>,
    pub diags: Vec<LowerDiag>,
    pub lines: u32,
}

/// The unit's enumerators with their values in order: an explicit value, or the previous
/// enumerator's value plus one (plus k after k implicit ones).
pub fn enumerators(u: &Unit) -> Vec<(String, CExpr)> {
    let mut out = Vec::with_capacity(u.enums.len());
    let mut last: Option<CExpr> = None;
    let mut next = 0i128;
    for (name, v) in &u.enums {
        let e = match v {
            Some(e) => {
                last = Some(e.clone());
                next = 0;
                e.clone()
            }
            None => match &last {
                Some(l) => CExpr::Binary { op: "+".into(), left: Box::new(l.clone()), right: Box::new(CExpr::Int(next)) },
                None => CExpr::Int(next),
            },
        };
        next += 1;
        out.push((name.clone(), e));
    }
    out
}
