//! tree-sitter tree -> IR. The only file that reads tree-sitter nodes (node kinds come from
//! kinds.rs). Never panics: constructs it does not model become `Unknown` with a diagnostic.

use tree_sitter::{Node, Parser};

use super::ir::*;
use super::kinds as k;
use super::macros::{Expanded, FnMacros, MAX_EXPANSION_DEPTH};

/// Which grammar to parse with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    C,
    Cpp,
}

/// Deeper nesting than this is not lowered (hostile input; the rest of the file still is): the
/// subtree becomes an empty statement or an unknown expression with a diagnostic, so that the
/// recursive walks here and in analyze stay within a thread's stack. Statements and expressions
/// count together. 128: analyze's walk of 256 levels needs about 2 MiB of stack in a debug
/// build (a test thread's whole stack); real code nests a few tens of levels.
const MAX_DEPTH: usize = 128;
/// Calls nested inside call arguments deeper than this keep their name but lose their
/// arguments (analyze's call evaluation costs twice as much per level of such nesting).
const MAX_CALL_NESTING: usize = 8;

fn too_deep() -> String {
    format!("nesting deeper than {MAX_DEPTH} levels: not analysed")
}

struct Lower<'a> {
    /// The text parsed: the file's, with the directive runs of `masks` blanked.
    src: &'a [u8],
    masks: Vec<Mask>,
    /// The end of the last `#define`'s logical line: tree-sitter ends a macro at a comment
    /// followed by a backslash, and parses the rest of its lines as code.
    macro_until: usize,
    /// The `#pragma` lines just seen among statements: (lead, its line, end of the last one).
    /// Tracked in order rather than looked up with prev_sibling, which is linear in the
    /// number of siblings.
    pragma_run: Option<(u32, u32, usize)>,
    unit: Unit,
    error_lines: Vec<u32>,
    /// Calls enclosing the expression being lowered.
    call_depth: usize,
    /// Function-like macros, analysed as their expansions, and how deep this lowering is
    /// inside expansions.
    macros: &'a FnMacros,
    expansion_depth: usize,
    /// The file's statement macros expanded (`src` is then the expansion): array references
    /// are placed in the user's text through it.
    expanded: Option<&'a Expanded>,
}

fn parser_for(lang: Lang) -> Option<Parser> {
    let mut p = Parser::new();
    let ok = match lang {
        Lang::C => p.set_language(&tree_sitter_c::LANGUAGE.into()),
        Lang::Cpp => p.set_language(&tree_sitter_cpp::LANGUAGE.into()),
    };
    ok.ok().map(|_| p)
}

/// Stack of the thread that lowers a file: the walk recurses once per nesting level (up to
/// MAX_DEPTH, statements and expressions together), and a debug build's frames are large.
const LOWER_STACK_BYTES: usize = 64 << 20;

/// Parses and lowers one file, on a thread with a large stack ([`on_large_stack`]): lowering
/// deep code never overflows the caller's stack.
pub fn lower_file(file: &str, text: &str, lang: Lang) -> Unit {
    lower_file_with(file, text, lang, &FnMacros::default())
}

/// [`lower_file`], with uses of the function-like `macros` lowered as their expansions.
pub fn lower_file_with(file: &str, text: &str, lang: Lang, macros: &FnMacros) -> Unit {
    let mut functions = Vec::new();
    let mut unit = lower_file_parts(file, text, lang, macros, &mut |fs| functions.extend(fs));
    unit.functions = functions;
    unit
}

/// [`lower_file_with`], handing the functions to `drain` a part of the file at a time (see
/// [`top_level_parts`]) instead of keeping them in the unit: a caller that analyses each
/// function and drops it never holds a large file's whole IR.
pub fn lower_file_parts(file: &str, text: &str, lang: Lang, macros: &FnMacros, drain: &mut (dyn FnMut(Vec<Function>) + Send)) -> Unit {
    on_large_stack(|| lower_file_here(file, text, lang, macros, drain))
}

/// Runs `f` on a thread with a stack of LOWER_STACK_BYTES (on the caller's thread when it is
/// one already, or when no thread can be started). One thread for a whole analysis also keeps
/// its allocations in one malloc arena: what the syntax trees and the IR free is reused by the
/// blocks (on a thread per file, glibc kept each file's freed memory in that thread's arena:
/// 10 MB of C peaked at 2.4 GB resident instead of 1.4).
pub fn on_large_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if std::thread::current().name() == Some(LARGE_STACK_THREAD) {
        return f();
    }
    let f = std::sync::Mutex::new(Some(f));
    let take = || f.lock().unwrap_or_else(|e| e.into_inner()).take().expect("run once");
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name(LARGE_STACK_THREAD.into())
            .stack_size(LOWER_STACK_BYTES)
            .spawn_scoped(scope, || take()());
        match spawned {
            Ok(h) => h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => take()(),
        }
    })
}

const LARGE_STACK_THREAD: &str = "mpicast-lower";

fn lower_file_here(file: &str, text: &str, lang: Lang, macros: &FnMacros, drain: &mut (dyn FnMut(Vec<Function>) + Send)) -> Unit {
    // Statement macros become their expansions (as the compiler sees them); offsets are mapped
    // back to the user's text before anything leaves.
    match macros.expand_statements(text) {
        Some(x) => {
            let f = |pos: u32| x.original(pos);
            let mut mapped = |mut fs: Vec<Function>| {
                for func in &mut fs {
                    func.span.map_offsets(&f);
                    func.params.iter_mut().for_each(|p| p.span.map_offsets(&f));
                    func.body.map_offsets(&f);
                }
                drain(fs)
            };
            let mut unit = lower_text(file, &x.text, lang, macros, Some(&x), &mut mapped);
            unit.globals.iter_mut().for_each(|g| g.span.map_offsets(&f));
            unit.lines = text.lines().count() as u32;
            unit
        }
        None => lower_text(file, text, lang, macros, None, drain),
    }
}

fn lower_text(file: &str, text: &str, lang: Lang, macros: &FnMacros, expanded: Option<&Expanded>, drain: &mut (dyn FnMut(Vec<Function>) + Send)) -> Unit {
    let mut unit = Unit {
        file: file.to_string(),
        lines: text.lines().count() as u32,
        ..Default::default()
    };
    let Some(mut parser) = parser_for(lang) else {
        unit.diags.push(LowerDiag {
            line: 0,
            message: "the C/C++ grammar could not be loaded".into(),
        });
        return unit;
    };
    // A large file is parsed a part at a time (parts end between top-level items), so that
    // only one part's syntax tree is in memory: tree-sitter's tree takes some 60 bytes per byte
    // of source, 640 MB for 10 MB of C.
    let mut error_lines = Vec::new();
    for (start, end) in top_level_parts(text.as_bytes(), PART_BYTES) {
        if !restrict(&mut parser, text.as_bytes(), start, end) {
            unit.diags.push(LowerDiag { line: 0, message: "the parser refused a part of this file: not analysed".into() });
            break;
        }
        let budget = parse_budget(end - start);
        let Some(tree) = parse_in_budget(&mut parser, text, budget) else {
            let message = format!(
                "the parser gave up on this file after {:.0} s (hostile or badly broken syntax): not analysed",
                budget.as_secs_f64()
            );
            unit.diags.push(LowerDiag { line: 0, message });
            return unit;
        };
        // Preprocessor lines between a control statement's header and its body leave the body
        // missing in tree-sitter's tree: blank them (offsets and lines stay) and parse again.
        let masks = directive_runs(&tree, text.as_bytes());
        let masked;
        let (tree, src) = if masks.is_empty() {
            (tree, text.as_bytes())
        } else {
            masked = blank(text.as_bytes(), &masks);
            match std::str::from_utf8(&masked)
                .ok()
                .and_then(|m| parse_in_budget(&mut parser, m, parse_budget(end - start)))
            {
                Some(t) => (t, masked.as_slice()),
                None => (tree, text.as_bytes()),
            }
        };
        let masks = if std::ptr::eq(src, text.as_bytes()) {
            Vec::new()
        } else {
            masks
        };
        let mut l = Lower {
            src,
            masks,
            macro_until: 0,
            pragma_run: None,
            unit: std::mem::take(&mut unit),
            error_lines: std::mem::take(&mut error_lines),
            call_depth: 0,
            macros,
            expansion_depth: 0,
            expanded,
        };
        let root = tree.root_node();
        l.top_items(root, 0);
        l.collect_errors(root);
        unit = l.unit;
        error_lines = l.error_lines;
        drain(std::mem::take(&mut unit.functions));
    }
    let mut err = error_lines;
    err.sort_unstable();
    err.dedup();
    for line in err.into_iter().take(20) {
        unit.diags.push(LowerDiag {
            line,
            message: "syntax error (the code around it may be miscounted)".into(),
        });
    }
    unit
}

/// Files larger than twice this are parsed in parts of about this size.
const PART_BYTES: usize = 1 << 19;

/// Whether `src` is parsed in more than one part.
pub fn parted(src: &[u8]) -> bool {
    src.len() >= 2 * PART_BYTES && top_level_parts(src, PART_BYTES).len() > 1
}

/// Byte ranges that cover `src` and end between top-level items: after a line whose last
/// character is `}` or `;` outside any brace, parenthesis, comment, literal or preprocessor
/// conditional, once a part holds `part` bytes. One range for a file under twice `part` (and
/// for one whose items never close, such as an `extern "C" {` around the whole file).
fn top_level_parts(src: &[u8], part: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    if src.len() < 2 * part {
        return vec![(0, src.len())];
    }
    let (mut start, mut depth, mut conds) = (0usize, 0i64, 0i64);
    let (mut i, mut last, mut line_start) = (0usize, b'\n', true);
    while i < src.len() {
        let c = src[i];
        match c {
            b'\n' => {
                if depth == 0 && conds == 0 && matches!(last, b'}' | b';') && i + 1 - start >= part && src.len() - (i + 1) >= part / 2 {
                    out.push((start, i + 1));
                    start = i + 1;
                }
                line_start = true;
                i += 1;
                continue;
            }
            b'#' if line_start => {
                // A directive: its logical line (backslash continuations) is skipped whole.
                let word: Vec<u8> = src[i + 1..].iter().skip_while(|b| **b == b' ' || **b == b'\t').take_while(|b| b.is_ascii_alphabetic()).copied().collect();
                match word.as_slice() {
                    b"if" | b"ifdef" | b"ifndef" => conds += 1,
                    b"endif" => conds -= 1,
                    _ => {}
                }
                while i < src.len() && !(src[i] == b'\n' && src[i - 1] != b'\\') {
                    i += 1;
                }
                continue;
            }
            b'/' if src.get(i + 1) == Some(&b'/') => {
                while i < src.len() && src[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if src.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < src.len() && !(src[i] == b'*' && src[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
                continue;
            }
            b'"' | b'\'' => {
                i += 1;
                while i < src.len() && src[i] != c && src[i] != b'\n' {
                    i += if src[i] == b'\\' { 2 } else { 1 };
                }
                last = c;
                line_start = false;
                i += 1;
                continue;
            }
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => depth -= 1,
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            last = c;
            line_start = false;
        }
        i += 1;
    }
    out.push((start, src.len()));
    out
}

/// Restricts `parser` to `src[start..end]` (positions in the tree stay the file's). False when
/// tree-sitter refuses the range.
fn restrict(parser: &mut Parser, src: &[u8], start: usize, end: usize) -> bool {
    let point = |at: usize| {
        let row = src[..at].iter().filter(|b| **b == b'\n').count();
        let column = at - src[..at].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        tree_sitter::Point { row, column }
    };
    if start == 0 && end == src.len() {
        return parser.set_included_ranges(&[]).is_ok();
    }
    let range = tree_sitter::Range { start_byte: start, end_byte: end, start_point: point(start), end_point: point(end) };
    parser.set_included_ranges(&[range]).is_ok()
}

/// Parses within `budget` (see [`parse_budget`]): tree-sitter's error recovery can take time quadratic in the
/// length of hostile input (tens of KB of `;;;;` in a for header take seconds). None when the
/// budget ran out.
fn parse_in_budget(
    parser: &mut Parser,
    text: &str,
    budget: std::time::Duration,
) -> Option<tree_sitter::Tree> {
    let started = std::time::Instant::now();
    let mut calls = 0u32;
    let mut out_of_time = |_: &tree_sitter::ParseState| {
        calls = calls.wrapping_add(1);
        calls % 64 == 0 && started.elapsed() > budget
    };
    let bytes = text.as_bytes();
    parser.parse_with_options(
        &mut |i, _| if i < bytes.len() { &bytes[i..] } else { &[] },
        None,
        Some(tree_sitter::ParseOptions::new().progress_callback(&mut out_of_time)),
    )
}

/// How long tree-sitter may take on a file of `len` bytes: 2 s, plus 1 s per MB (real code
/// parses at tens of MB/s); five times that in a debug build, whose C is not optimised.
fn parse_budget(len: usize) -> std::time::Duration {
    let s = 2.0 + len as f64 / 1e6;
    std::time::Duration::from_secs_f64(if cfg!(debug_assertions) { 5.0 * s } else { s })
}

/// Parses one C expression (a macro's replacement text) into the IR.
pub fn parse_expression(text: &str) -> Option<CExpr> {
    parse_expansion(text, &FnMacros::default(), 0)
}

/// Parses a macro's expansion, itself using `macros`, `depth` expansions deep.
fn parse_expansion(text: &str, macros: &FnMacros, depth: usize) -> Option<CExpr> {
    let wrapped = format!("long mpicast_macro_value = ({text});\n");
    let mut parser = parser_for(Lang::C)?;
    // A macro's text parses in microseconds; many slow ones must not add up to minutes.
    let tree = parse_in_budget(&mut parser, &wrapped, parse_budget(0) / 20)?;
    if tree.root_node().has_error() {
        return None;
    }
    let mut l = Lower {
        src: wrapped.as_bytes(),
        masks: Vec::new(),
        macro_until: 0,
        pragma_run: None,
        unit: Unit::default(),
        error_lines: Vec::new(),
        call_depth: 0,
        macros,
        expansion_depth: depth,
        expanded: None,
    };
    l.top_items(tree.root_node(), 0);
    l.unit.globals.into_iter().next().and_then(|g| g.init)
}

fn line(n: Node) -> u32 {
    n.start_position().row as u32 + 1
}

fn span(n: Node) -> Span {
    Span {
        line_start: line(n),
        line_end: n.end_position().row as u32 + 1,
        col: n.start_position().column as u32,
        byte_start: n.start_byte() as u32,
        byte_end: n.end_byte() as u32,
        place: Place {
            lead: n.start_byte() as u32,
            close: n.end_byte() as u32,
            ..Place::default()
        },
    }
}

/// A run of preprocessor lines right after a control statement's header (`if (c)`, `else`,
/// `for (...)`, `do`), where tree-sitter expects the body and leaves it missing.
#[derive(Debug, Clone)]
struct Mask {
    /// Start of the run's first line.
    start: usize,
    /// The first byte after the run that is not blank, a comment or a directive: the body.
    next: usize,
    /// The directive lines, each [start, end) without its newline.
    lines: Vec<(usize, usize)>,
    /// When the run opens a conditional that the body sits in: from its `#else`/`#elif` (or
    /// `#endif`) line to the end of its `#endif` line, blanked whole (the first arm is the one
    /// analysed, as everywhere else).
    tail: Option<(usize, usize)>,
}

/// The directive runs that follow a missing body (a MISSING node, or an ERROR node ending in
/// `else` or `do`).
fn directive_runs(tree: &tree_sitter::Tree, src: &[u8]) -> Vec<Mask> {
    let mut out: Vec<Mask> = Vec::new();
    let root = tree.root_node();
    if !root.has_error() {
        return out;
    }
    let mut cursor = root.walk();
    let mut stack = vec![root];
    let mut visited = 0usize;
    while let Some(n) = stack.pop() {
        visited += 1;
        if visited > 1_000_000 || out.len() > 10_000 {
            break;
        }
        let gap = if n.is_missing() {
            Some(n.start_byte())
        } else if n.is_error() {
            let last = n.child(n.child_count().saturating_sub(1));
            last.filter(|c| c.kind() == k::ELSE || c.kind() == k::DO)
                .map(|c| c.end_byte())
        } else {
            None
        };
        if let Some(g) = gap {
            if let Some(m) = directive_run(src, g) {
                if !out.iter().any(|o| o.start == m.start) {
                    out.push(m);
                }
            }
        }
        if n.has_error() && !n.is_missing() {
            for c in n.children(&mut cursor) {
                stack.push(c);
            }
        }
    }
    out.sort_by_key(|m| m.start);
    out
}

fn line_start_of(src: &[u8], at: usize) -> usize {
    src[..at.min(src.len())]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1)
}

/// 1-based line of a byte offset.
fn line_of(src: &[u8], at: usize) -> u32 {
    src[..at.min(src.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count() as u32
        + 1
}

/// The end of the logical line at `at` (backslash continuations joined): the offset of its
/// newline, or the end of the text.
fn logical_line_end(src: &[u8], at: usize) -> usize {
    let mut i = at;
    while i < src.len() {
        if src[i] == b'\n' && !(i > 0 && src[i - 1] == b'\\') {
            return i;
        }
        i += 1;
    }
    src.len()
}

/// The directive's name (`if`, `pragma`, ...) of the line whose `#` is at `hash`.
fn directive_word(src: &[u8], hash: usize) -> &[u8] {
    let mut i = hash + 1;
    while i < src.len() && (src[i] == b' ' || src[i] == b'\t') {
        i += 1;
    }
    let s = i;
    while i < src.len() && src[i].is_ascii_alphabetic() {
        i += 1;
    }
    &src[s..i]
}

/// Skips blanks and comments from `i`; returns the first other byte's offset.
fn skip_blank_and_comments(src: &[u8], mut i: usize) -> usize {
    while i < src.len() {
        match src[i] {
            b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\x0b' => i += 1,
            b'/' if src.get(i + 1) == Some(&b'/') => {
                while i < src.len() && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if src.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < src.len() && !(src[i] == b'*' && src.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(src.len());
            }
            _ => break,
        }
    }
    i
}

fn directive_run(src: &[u8], gap: usize) -> Option<Mask> {
    let first = skip_blank_and_comments(src, gap);
    let at_line_start = |i: usize| {
        src[line_start_of(src, i)..i]
            .iter()
            .all(|&c| c == b' ' || c == b'\t')
    };
    if first >= src.len() || src[first] != b'#' || !at_line_start(first) {
        return None;
    }
    let start = line_start_of(src, first);
    let mut lines = Vec::new();
    let mut depth = 0i32;
    let mut i = first;
    let next = loop {
        i = skip_blank_and_comments(src, i);
        if i >= src.len() {
            return None;
        }
        if src[i] != b'#' {
            break i;
        }
        if !at_line_start(i) {
            return None;
        }
        match directive_word(src, i) {
            b"if" | b"ifdef" | b"ifndef" => depth += 1,
            b"endif" if depth == 0 => return None,
            b"endif" => depth -= 1,
            b"else" | b"elif" | b"elifdef" | b"elifndef" if depth == 0 => return None,
            _ => {}
        }
        let end = logical_line_end(src, i);
        lines.push((line_start_of(src, i), end));
        i = end;
    };
    let tail = match depth {
        0 => None,
        1 => {
            // The group the body sits in: its #else/#elif (or #endif) line to its #endif line.
            let mut d = 0i32;
            let mut from = None;
            let mut j = next;
            loop {
                let le = logical_line_end(src, j);
                let f = skip_blank_and_comments(src, j).min(le);
                if f < src.len() && src[f] == b'#' && at_line_start(f) {
                    match directive_word(src, f) {
                        b"if" | b"ifdef" | b"ifndef" => d += 1,
                        b"endif" if d == 0 => {
                            break Some((
                                from.unwrap_or(line_start_of(src, f)),
                                logical_line_end(src, f),
                            ))
                        }
                        b"endif" => d -= 1,
                        b"else" | b"elif" | b"elifdef" | b"elifndef"
                            if d == 0 && from.is_none() =>
                        {
                            from = Some(line_start_of(src, f))
                        }
                        _ => {}
                    }
                }
                if le >= src.len() {
                    return None;
                }
                j = le + 1;
            }
        }
        _ => return None,
    };
    Some(Mask {
        start,
        next,
        lines,
        tail,
    })
}

/// The text with the masks' directive lines (and tails) blanked; newlines stay.
fn blank(src: &[u8], masks: &[Mask]) -> Vec<u8> {
    let mut out = src.to_vec();
    let mut wipe = |s: usize, e: usize| {
        for c in &mut out[s..e.min(src.len())] {
            if *c != b'\n' && *c != b'\r' {
                *c = b' ';
            }
        }
    };
    for m in masks {
        for &(s, e) in &m.lines {
            wipe(s, e);
        }
        if let Some((s, e)) = m.tail {
            wipe(s, e);
        }
    }
    out
}

impl<'a> Lower<'a> {
    fn text(&self, n: Node) -> String {
        String::from_utf8_lossy(&self.src[n.byte_range()]).into_owned()
    }

    /// Where `n` is written in the user's file: nowhere inside a macro's expansion.
    fn written_at(&self, n: Node) -> At {
        if self.expansion_depth > 0 {
            return At::NONE;
        }
        let (s, e) = (n.start_byte() as u32, n.end_byte() as u32);
        match self.expanded {
            None => At(Some((s, e))),
            Some(x) => {
                let ((a, inside_a), (b, inside_b)) = (x.original(s), x.original(e));
                At((!inside_a && !inside_b && a < b).then_some((a, b)))
            }
        }
    }

    /// A call of a function-like macro whose replacement is an expression, as its expansion.
    fn macro_use(&mut self, call: Node<'a>, func: &str) -> Option<CExpr> {
        // MPICAST_PROBA(cond, p) is an annotation the analysis reads, whatever its definition.
        if self.macros.is_empty()
            || self.expansion_depth >= MAX_EXPANSION_DEPTH
            || func == "MPICAST_PROBA"
        {
            return None;
        }
        let al = call.child_by_field_name(k::F_ARGUMENTS)?;
        let args: Vec<String> = self
            .named_children(al)
            .into_iter()
            .filter(|a| a.kind() != "comment")
            .map(|a| self.text(a))
            .collect();
        let text = self.macros.expand(func, &args)?;
        parse_expansion(&text, self.macros, self.expansion_depth + 1)
    }

    fn diag(&mut self, n: Node, message: String) {
        if self.unit.diags.len() < 200 {
            self.unit.diags.push(LowerDiag {
                line: line(n),
                message,
            });
        }
    }

    fn collect_errors(&mut self, root: Node) {
        let mut cursor = root.walk();
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            if !n.has_error() {
                continue;
            }
            if n.is_error() || n.is_missing() {
                self.error_lines.push(line(n));
                continue;
            }
            for c in n.children(&mut cursor) {
                stack.push(c);
            }
        }
    }

    fn named_children(&self, n: Node<'a>) -> Vec<Node<'a>> {
        let mut c = n.walk();
        n.named_children(&mut c).collect()
    }

    fn top_items(&mut self, n: Node<'a>, depth: usize) {
        if depth > MAX_DEPTH {
            self.diag(n, too_deep());
            return;
        }
        for c in self.named_children(n) {
            self.top_item(c, depth);
        }
    }

    /// The children of a preprocessor conditional, without its #else/#elif arm: both arms are
    /// visible to tree-sitter; the first is taken.
    fn top_items_no_alternative(&mut self, n: Node<'a>, depth: usize) {
        if depth > MAX_DEPTH {
            self.diag(n, too_deep());
            return;
        }
        let alt = n.child_by_field_name(k::F_ALTERNATIVE).map(|a| a.id());
        let mut cursor = n.walk();
        let kids: Vec<Node> = n
            .named_children(&mut cursor)
            .filter(|c| Some(c.id()) != alt)
            .collect();
        for c in kids {
            self.top_item(c, depth);
        }
    }

    /// Code tree-sitter saw inside a macro's continuation lines is skipped.
    fn in_macro(&mut self, c: Node<'a>) -> bool {
        if c.start_byte() < self.macro_until {
            return true;
        }
        if c.kind() == k::PREPROC_DEF || c.kind() == k::PREPROC_FUNCTION_DEF {
            self.macro_until = logical_line_end(self.src, c.start_byte());
        }
        false
    }

    fn top_item(&mut self, c: Node<'a>, depth: usize) {
        if self.in_macro(c) {
            return;
        }
        match c.kind() {
            k::FUNCTION_DEFINITION => {
                if let Some(f) = self.function(c) {
                    self.unit.functions.push(f);
                }
            }
            k::DECLARATION => {
                let decls = self.declaration(c, 0);
                self.unit.globals.extend(decls);
                self.type_specifier_side_effects(c);
            }
            k::TYPE_DEFINITION => self.typedef(c),
            k::PREPROC_DEF => self.define(c),
            k::PREPROC_IF | k::PREPROC_IFDEF => self.top_items_no_alternative(c, depth + 1),
            // The body once (a declaration list, or one declaration or function): visiting both
            // the node's children and its body doubled the work at every nesting level.
            k::LINKAGE_SPECIFICATION | k::NAMESPACE_DEFINITION => {
                match c.child_by_field_name(k::F_BODY) {
                    Some(b) if depth <= MAX_DEPTH => self.top_item(b, depth + 1),
                    Some(_) => self.diag(c, too_deep()),
                    None => self.top_items(c, depth + 1),
                }
            }
            k::DECLARATION_LIST => self.top_items(c, depth + 1),
            k::STRUCT_SPECIFIER | k::UNION_SPECIFIER | k::ENUM_SPECIFIER => self.type_spec_decl(c),
            _ => {}
        }
    }

    fn define(&mut self, n: Node<'a>) {
        let Some(name) = n.child_by_field_name(k::F_NAME) else {
            return;
        };
        let name = self.text(name);
        let Some(v) = n.child_by_field_name(k::F_VALUE) else {
            return;
        };
        let text = self.text(v);
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        if let Some(e) = parse_expression(text) {
            self.unit.defines.push((name, e, line(n)));
        }
    }

    fn typedef(&mut self, n: Node<'a>) {
        let Some(tnode) = n.child_by_field_name(k::F_TYPE) else {
            return;
        };
        let mut c = n.walk();
        let decls: Vec<Node> = n.children_by_field_name(k::F_DECLARATOR, &mut c).collect();
        // `typedef struct { ... } name;`: the struct is known by the typedef's name.
        let anonymous = matches!(tnode.kind(), k::STRUCT_SPECIFIER | k::UNION_SPECIFIER)
            && tnode.child_by_field_name(k::F_NAME).is_none()
            && tnode.child_by_field_name(k::F_BODY).is_some();
        let alias = decls
            .first()
            .and_then(|d| self.declarator(*d, CType::unknown()).0)
            .filter(|_| anonymous);
        let base = match alias {
            Some(name) => {
                self.struct_body(tnode, name.clone());
                Base::Struct(name)
            }
            None => {
                self.type_spec_decl(tnode);
                self.base_type(tnode)
            }
        };
        let width = self.type_of(tnode).width;
        for d in decls {
            let (name, ty) = self.declarator(d, CType { width, ..CType::new(base.clone()) });
            if let Some(name) = name {
                self.unit.typedefs.push((name, ty));
            }
        }
    }

    /// Struct bodies and enumerators declared inside a type specifier.
    fn type_specifier_side_effects(&mut self, decl: Node<'a>) {
        if let Some(t) = decl.child_by_field_name(k::F_TYPE) {
            self.type_spec_decl(t);
        }
    }

    fn type_spec_decl(&mut self, t: Node<'a>) {
        match t.kind() {
            k::STRUCT_SPECIFIER | k::UNION_SPECIFIER => {
                if let Some(name) = t.child_by_field_name(k::F_NAME) {
                    let name = self.text(name);
                    self.struct_body(t, name);
                }
            }
            k::ENUM_SPECIFIER => {
                let Some(body) = t.child_by_field_name(k::F_BODY) else {
                    return;
                };
                for e in self.named_children(body) {
                    if e.kind() != k::ENUMERATOR {
                        continue;
                    }
                    let Some(name) = e.child_by_field_name(k::F_NAME) else {
                        continue;
                    };
                    let value = e.child_by_field_name(k::F_VALUE).map(|v| self.expr(v, 0));
                    let name = self.text(name);
                    self.unit.enums.push((name, value));
                }
            }
            _ => {}
        }
    }

    /// A struct's or union's fields (when it has a body), recorded under `name`.
    fn struct_body(&mut self, t: Node<'a>, name: String) {
        let Some(body) = t.child_by_field_name(k::F_BODY) else {
            return;
        };
        let mut fields = Vec::new();
        for f in self.named_children(body) {
            if f.kind() != k::FIELD_DECLARATION {
                continue;
            }
            let Some(ft) = f.child_by_field_name(k::F_TYPE) else {
                continue;
            };
            let base = self.type_of(ft);
            let mut c = f.walk();
            let ds: Vec<Node> = f.children_by_field_name(k::F_DECLARATOR, &mut c).collect();
            for d in ds {
                let (fname, ty) = self.declarator(d, base.clone());
                if let Some(fname) = fname {
                    fields.push((fname, ty));
                }
            }
        }
        self.unit.structs.push((name, fields));
    }

    /// The type a type node names, before declarators: its base and, for char, short and long,
    /// its width.
    fn type_of(&self, t: Node<'a>) -> CType {
        let base = self.base_type(t);
        let mut ty = CType::new(base);
        if matches!(ty.base, Base::Int) && matches!(t.kind(), k::PRIMITIVE_TYPE | k::SIZED_TYPE_SPECIFIER) {
            let text = self.text(t);
            // The fixed-width and size types are primitive types to tree-sitter-c.
            if let Some((width, unsigned)) = fixed_width_int(&text) {
                ty.width = width;
                ty.unsigned = unsigned;
                return ty;
            }
            ty.width = if text.contains("char") {
                1
            } else if text.contains("short") {
                2
            } else if text.contains("long") {
                8
            } else {
                0
            };
            ty.unsigned = text.contains("unsigned");
        }
        ty
    }

    fn base_type(&self, t: Node<'a>) -> Base {
        let text = self.text(t);
        match t.kind() {
            k::PRIMITIVE_TYPE | k::SIZED_TYPE_SPECIFIER => {
                if text.contains("double") {
                    Base::Double
                } else if text.contains("float") {
                    Base::Float
                } else if text == "void" {
                    Base::Void
                } else {
                    Base::Int
                }
            }
            k::TYPE_IDENTIFIER => Base::Named(text),
            k::STRUCT_SPECIFIER | k::UNION_SPECIFIER => Base::Struct(
                t.child_by_field_name(k::F_NAME)
                    .map(|n| self.text(n))
                    .unwrap_or_default(),
            ),
            k::ENUM_SPECIFIER => Base::Int,
            _ => {
                // C++ qualified and template types, and anything else: keep the spelling.
                if text.contains("double") {
                    Base::Double
                } else if text.contains("float") {
                    Base::Float
                } else {
                    Base::Named(text)
                }
            }
        }
    }

    /// Walks a declarator: returns the declared name and the type with pointer/array levels added.
    fn declarator(&self, d: Node<'a>, mut ty: CType) -> (Option<String>, CType) {
        let mut cur = d;
        for _ in 0..64 {
            match cur.kind() {
                k::IDENTIFIER | k::FIELD_IDENTIFIER | k::TYPE_IDENTIFIER => {
                    return (Some(self.text(cur)), ty)
                }
                k::POINTER_DECLARATOR
                | k::ARRAY_DECLARATOR
                | k::ABSTRACT_POINTER_DECLARATOR
                | k::ABSTRACT_ARRAY_DECLARATOR => {
                    ty.indirection += 1;
                    match cur.child_by_field_name(k::F_DECLARATOR) {
                        Some(inner) => cur = inner,
                        None => return (None, ty),
                    }
                }
                k::FUNCTION_DECLARATOR | k::INIT_DECLARATOR => {
                    match cur.child_by_field_name(k::F_DECLARATOR) {
                        Some(inner) => cur = inner,
                        None => return (None, ty),
                    }
                }
                k::PARENTHESIZED_DECLARATOR
                | k::ATTRIBUTED_DECLARATOR
                | k::REFERENCE_DECLARATOR => match cur.named_child(0) {
                    Some(inner) => cur = inner,
                    None => return (None, ty),
                },
                k::QUALIFIED_IDENTIFIER => return (Some(self.text(cur)), ty),
                _ => return (None, ty),
            }
        }
        (None, ty)
    }

    /// The declared dimensions of an array of scalars or structs (outermost first); empty when a
    /// pointer is involved or a dimension is left out.
    fn array_dims(&mut self, d: Node<'a>, depth: usize) -> Vec<CExpr> {
        let mut dims = Vec::new();
        let mut cur = d;
        for _ in 0..64 {
            match cur.kind() {
                k::INIT_DECLARATOR => match cur.child_by_field_name(k::F_DECLARATOR) {
                    Some(inner) => cur = inner,
                    None => return Vec::new(),
                },
                k::ARRAY_DECLARATOR => {
                    let Some(size) = cur.child_by_field_name(k::F_SIZE) else { return Vec::new() };
                    dims.push(self.expr(size, depth + 1));
                    match cur.child_by_field_name(k::F_DECLARATOR) {
                        Some(inner) => cur = inner,
                        None => return Vec::new(),
                    }
                }
                k::IDENTIFIER | k::FIELD_IDENTIFIER => {
                    // The outermost declarator holds the last dimension.
                    dims.reverse();
                    return dims;
                }
                _ => return Vec::new(),
            }
        }
        Vec::new()
    }

    fn is_const(&self, decl: Node<'a>) -> bool {
        let mut c = decl.walk();
        let r = decl
            .children(&mut c)
            .any(|ch| ch.kind() == k::TYPE_QUALIFIER && self.text(ch) == "const");
        r
    }

    fn declaration(&mut self, n: Node<'a>, depth: usize) -> Vec<VarDecl> {
        let Some(t) = n.child_by_field_name(k::F_TYPE) else {
            return Vec::new();
        };
        let base_ty = self.type_of(t);
        let is_const = self.is_const(n);
        let mut c = n.walk();
        let is_static = n
            .children(&mut c)
            .any(|ch| ch.kind() == k::STORAGE_CLASS_SPECIFIER && self.text(ch) == "static");
        let mut c = n.walk();
        let ds: Vec<Node> = n.children_by_field_name(k::F_DECLARATOR, &mut c).collect();
        let mut out = Vec::new();
        for d in ds {
            if d.kind() == k::FUNCTION_DECLARATOR {
                continue; // a prototype
            }
            let (name, mut ty) = self.declarator(d, base_ty.clone());
            ty.is_const = is_const;
            let init = if d.kind() == k::INIT_DECLARATOR {
                d.child_by_field_name(k::F_VALUE)
                    .map(|v| self.expr(v, depth + 1))
            } else {
                None
            };
            if let Some(name) = name {
                let dims = self.array_dims(d, depth);
                out.push(VarDecl {
                    name,
                    ty,
                    init,
                    span: span(d),
                    is_static,
                    dims,
                });
            }
        }
        out
    }

    fn function(&mut self, n: Node<'a>) -> Option<Function> {
        let t = n.child_by_field_name(k::F_TYPE);
        let base = t.map(|t| self.type_of(t)).unwrap_or_else(CType::int);
        let d = n.child_by_field_name(k::F_DECLARATOR)?;
        let (name, ret) = self.declarator(d, base);
        let name = name?;
        // Find the function_declarator for the parameters.
        let mut fd = d;
        for _ in 0..16 {
            if fd.kind() == k::FUNCTION_DECLARATOR {
                break;
            }
            match fd.child_by_field_name(k::F_DECLARATOR) {
                Some(x) => fd = x,
                None => break,
            }
        }
        if fd.kind() != k::FUNCTION_DECLARATOR {
            // `MACRO struct s { ... };` parses as a function named s: a body that is no
            // function's must not be analysed (nor instrumented) as one.
            self.diag(
                n,
                format!(
                    "`{}` has no parameter list: not analysed as a function (a macro before it?)",
                    name
                ),
            );
            return None;
        }
        let mut params = Vec::new();
        if let Some(pl) = fd.child_by_field_name(k::F_PARAMETERS) {
            for p in self.named_children(pl) {
                if p.kind() != k::PARAMETER_DECLARATION {
                    continue;
                }
                let Some(pt) = p.child_by_field_name(k::F_TYPE) else {
                    continue;
                };
                let base = self.type_of(pt);
                if let Some(pd) = p.child_by_field_name(k::F_DECLARATOR) {
                    let (pname, ty) = self.declarator(pd, base);
                    if let Some(pname) = pname {
                        params.push(VarDecl {
                            name: pname,
                            ty,
                            init: None,
                            span: span(p),
                            is_static: false,
                            dims: Vec::new(),
                        });
                    }
                }
            }
        }
        let body = n.child_by_field_name(k::F_BODY)?;
        let body = self.stmt(body, 0);
        let mut c = n.walk();
        let local = n
            .children(&mut c)
            .any(|ch| ch.kind() == k::STORAGE_CLASS_SPECIFIER && matches!(self.text(ch).as_str(), "static" | "inline"));
        Some(Function {
            name,
            ret,
            params,
            body,
            span: span(n),
            local,
        })
    }

    /// A statement's span with its place: where text may go before, inside and around it.
    fn stmt_span(&self, n: Node<'a>) -> Span {
        let mut sp = span(n);
        let p = &mut sp.place;
        match n.kind() {
            k::COMPOUND_STATEMENT if self.src.get(n.start_byte()) == Some(&b'{') => {
                p.inner = n.start_byte() as u32 + 1
            }
            k::CASE_STATEMENT => {
                let mut c = n.walk();
                let colon = n
                    .children(&mut c)
                    .find(|c| c.kind() == k::COLON)
                    .map(|c| c.end_byte() as u32);
                p.inner = colon.unwrap_or(0);
            }
            _ => {}
        }
        let start = n.start_byte();
        if matches!(n.kind(), k::PREPROC_IF | k::PREPROC_IFDEF) {
            // A conditional among statements: what goes before it goes before its `#if` line.
            let ls = line_start_of(self.src, start);
            if self.src[ls..start].iter().all(|&c| c == b' ' || c == b'\t') {
                p.lead = ls as u32;
                p.lead_line = line(n);
            }
            return sp;
        }
        if let Some(m) = self.masks.iter().find(|m| m.next == start) {
            // The body after a blanked directive run: insertions go before the run.
            p.lead = m.start as u32;
            p.lead_line = line_of(self.src, m.start);
            if let Some((ts, te)) = m.tail {
                p.close = te as u32;
                p.close_line = line_of(self.src, te) + 1;
                let mut sib = n.next_sibling();
                while let Some(s) = sib {
                    if s.start_byte() >= ts {
                        break;
                    }
                    if s.is_named() && s.kind() != k::COMMENT {
                        p.no_wrap = true;
                        break;
                    }
                    sib = s.next_sibling();
                }
            }
            return sp;
        }
        // `#pragma` lines (or directive-only conditionals) right before it belong to it.
        if let Some((lead, lead_line, end)) = self.pragma_run {
            if skip_blank_and_comments(self.src, end) == start {
                p.lead = lead;
                p.lead_line = lead_line;
            }
        }
        sp
    }

    /// A `#pragma` line, or a conditional holding only such lines (and comments).
    fn pragma_group(&self, n: Node<'a>, depth: usize) -> bool {
        if depth > 16 {
            return false;
        }
        match n.kind() {
            k::PREPROC_CALL => n
                .child_by_field_name(k::F_DIRECTIVE)
                .is_some_and(|d| self.text(d).trim_start_matches('#').trim_start() == "pragma"),
            k::PREPROC_IF
            | k::PREPROC_IFDEF
            | k::PREPROC_ELSE
            | k::PREPROC_ELIF
            | k::PREPROC_ELIFDEF => {
                let skip: Vec<usize> = [k::F_NAME, k::F_CONDITION]
                    .iter()
                    .filter_map(|f| n.child_by_field_name(f).map(|c| c.id()))
                    .collect();
                let kids = self.named_children(n);
                kids.into_iter()
                    .filter(|c| !skip.contains(&c.id()))
                    .all(|c| c.kind() == k::COMMENT || self.pragma_group(c, depth + 1))
            }
            _ => false,
        }
    }

    fn stmt(&mut self, n: Node<'a>, depth: usize) -> Stmt {
        let sp = self.stmt_span(n);
        if depth > MAX_DEPTH {
            self.diag(n, too_deep());
            return Stmt::Empty(sp);
        }
        let d = depth + 1;
        match n.kind() {
            k::COMPOUND_STATEMENT => {
                let mut v = Vec::new();
                for c in self.named_children(n) {
                    self.stmt_into(c, d, &mut v);
                }
                Stmt::Compound(v, sp)
            }
            k::EXPRESSION_STATEMENT => match n.named_child(0) {
                Some(e) => Stmt::Expr(self.expr(e, d), sp),
                None => Stmt::Empty(sp),
            },
            k::DECLARATION => Stmt::Decl(self.declaration(n, d), sp),
            k::IF_STATEMENT => {
                let cond = n
                    .child_by_field_name(k::F_CONDITION)
                    .map(|c| self.cond_expr(c, d));
                let then = n
                    .child_by_field_name(k::F_CONSEQUENCE)
                    .map(|c| self.stmt(c, d));
                let otherwise = n.child_by_field_name(k::F_ALTERNATIVE).map(|a| {
                    // else_clause wraps the statement
                    // `else // comment` or `else /* c */ if`: the statement, not the comment.
                    let inner = if a.kind() == k::ELSE_CLAUSE {
                        let mut c = a.walk();
                        let st = a.named_children(&mut c).find(|c| c.kind() != k::COMMENT);
                        st.unwrap_or(a)
                    } else {
                        a
                    };
                    Box::new(self.stmt(inner, d))
                });
                Stmt::If {
                    cond: cond.unwrap_or(CExpr::Unknown("?".into())),
                    then: Box::new(then.unwrap_or(Stmt::Empty(sp))),
                    otherwise,
                    span: sp,
                }
            }
            k::FOR_STATEMENT => {
                let init = n.child_by_field_name(k::F_INITIALIZER).map(|i| {
                    Box::new(if i.kind() == k::DECLARATION {
                        Stmt::Decl(self.declaration(i, d), span(i))
                    } else {
                        Stmt::Expr(self.expr(i, d), span(i))
                    })
                });
                let cond = n
                    .child_by_field_name(k::F_CONDITION)
                    .map(|c| self.expr(c, d));
                let update = n.child_by_field_name(k::F_UPDATE).map(|c| self.expr(c, d));
                let body = n
                    .child_by_field_name(k::F_BODY)
                    .map(|b| self.stmt(b, d))
                    .unwrap_or(Stmt::Empty(sp));
                Stmt::For {
                    init,
                    cond,
                    update,
                    body: Box::new(body),
                    span: sp,
                }
            }
            k::WHILE_STATEMENT => {
                let cond = n
                    .child_by_field_name(k::F_CONDITION)
                    .map(|c| self.cond_expr(c, d));
                let body = n
                    .child_by_field_name(k::F_BODY)
                    .map(|b| self.stmt(b, d))
                    .unwrap_or(Stmt::Empty(sp));
                Stmt::While {
                    cond: cond.unwrap_or(CExpr::Unknown("?".into())),
                    body: Box::new(body),
                    span: sp,
                }
            }
            k::DO_STATEMENT => {
                let cond = n
                    .child_by_field_name(k::F_CONDITION)
                    .map(|c| self.cond_expr(c, d));
                let body = n
                    .child_by_field_name(k::F_BODY)
                    .map(|b| self.stmt(b, d))
                    .unwrap_or(Stmt::Empty(sp));
                Stmt::DoWhile {
                    body: Box::new(body),
                    cond: cond.unwrap_or(CExpr::Unknown("?".into())),
                    span: sp,
                }
            }
            k::SWITCH_STATEMENT => {
                let cond = n
                    .child_by_field_name(k::F_CONDITION)
                    .map(|c| self.cond_expr(c, d));
                let body = n
                    .child_by_field_name(k::F_BODY)
                    .map(|b| self.stmt(b, d))
                    .unwrap_or(Stmt::Empty(sp));
                Stmt::Switch {
                    cond: cond.unwrap_or(CExpr::Unknown("?".into())),
                    body: Box::new(body),
                    span: sp,
                }
            }
            k::CASE_STATEMENT => {
                let value = n.child_by_field_name(k::F_VALUE);
                let value_id = value.map(|v| v.id());
                let value = value.map(|v| self.expr(v, d));
                let mut body = Vec::new();
                for c in self.named_children(n) {
                    if Some(c.id()) != value_id {
                        self.stmt_into(c, d, &mut body);
                    }
                }
                Stmt::Case {
                    value,
                    body,
                    span: sp,
                }
            }
            k::RETURN_STATEMENT => Stmt::Return(n.named_child(0).map(|e| self.expr(e, d)), sp),
            k::BREAK_STATEMENT => Stmt::Break(sp),
            k::CONTINUE_STATEMENT => Stmt::Continue(sp),
            k::GOTO_STATEMENT => Stmt::Goto(sp),
            k::LABELED_STATEMENT => {
                let mut inner = Stmt::Empty(sp);
                for c in self.named_children(n) {
                    if c.kind() != "statement_identifier" {
                        inner = self.stmt(c, d);
                    }
                }
                Stmt::Label(Box::new(inner), sp)
            }
            k::PREPROC_IF | k::PREPROC_IFDEF => {
                let alt = n.child_by_field_name(k::F_ALTERNATIVE).map(|a| a.id());
                let cond = n.child_by_field_name(k::F_CONDITION).map(|a| a.id());
                let name = n.child_by_field_name(k::F_NAME).map(|a| a.id());
                let mut v = Vec::new();
                for c in self.named_children(n) {
                    if Some(c.id()) != alt && Some(c.id()) != cond && Some(c.id()) != name {
                        self.stmt_into(c, d, &mut v);
                    }
                }
                Stmt::Compound(v, sp)
            }
            k::PREPROC_DEF => {
                self.define(n);
                Stmt::Empty(sp)
            }
            k::TYPE_DEFINITION => {
                self.typedef(n);
                Stmt::Empty(sp)
            }
            k::COMMENT => Stmt::Empty(sp),
            k::ERROR => Stmt::Empty(sp),
            other => {
                if n.is_named() && !other.starts_with("preproc") {
                    self.diag(n, format!("statement kind {other} not modelled"));
                }
                Stmt::Empty(sp)
            }
        }
    }

    fn stmt_into(&mut self, c: Node<'a>, depth: usize, v: &mut Vec<Stmt>) {
        if c.kind() == k::COMMENT || self.in_macro(c) {
            return;
        }
        if self.pragma_group(c, 0) {
            let (start, end) = (c.start_byte(), c.end_byte());
            let continues = self
                .pragma_run
                .is_some_and(|r| skip_blank_and_comments(self.src, r.2) == start);
            if !continues {
                let ls = line_start_of(self.src, start);
                self.pragma_run = self.src[ls..start]
                    .iter()
                    .all(|&b| b == b' ' || b == b'\t')
                    .then(|| (ls as u32, line(c), end));
            } else if let Some(r) = &mut self.pragma_run {
                r.2 = end;
            }
            return;
        }
        let s = self.stmt(c, depth);
        if !matches!(s, Stmt::Empty(_)) {
            v.push(s);
        }
    }

    /// A condition: a parenthesized expression, or C++'s condition_clause.
    fn cond_expr(&mut self, n: Node<'a>, depth: usize) -> CExpr {
        match n.kind() {
            k::PARENTHESIZED_EXPRESSION | k::CONDITION_CLAUSE => match n.named_child(0) {
                Some(e) if e.kind() == k::DECLARATION => CExpr::Unknown(self.text(e)),
                Some(e) => self.expr(e, depth),
                None => CExpr::Unknown(self.text(n)),
            },
            _ => self.expr(n, depth),
        }
    }

    fn field_expr(&mut self, n: Node<'a>, f: &str, depth: usize) -> Box<CExpr> {
        Box::new(match n.child_by_field_name(f) {
            Some(c) => self.expr(c, depth),
            None => CExpr::Unknown(self.text(n)),
        })
    }

    fn op(&self, n: Node<'a>) -> String {
        n.child_by_field_name(k::F_OPERATOR)
            .map(|o| self.text(o))
            .unwrap_or_default()
    }

    /// `MPI::COMM_WORLD.Send(buf, n, MPI::INT, dest, tag)` (the MPI-2 C++ bindings, on the
    /// bindings' own communicator objects) as the C call it wraps: the communicator goes in at its
    /// C position and what the C++ call leaves out or returns (a status, a request) after it.
    /// Returns the C name, `args` rewritten; None (args untouched) for any other method call.
    fn cxx_comm_call(&mut self, method: Node<'a>, args: &mut Vec<CExpr>, depth: usize) -> Option<&'static str> {
        let object = method.child_by_field_name(k::F_ARGUMENT)?;
        if object.kind() != k::QUALIFIED_IDENTIFIER || !self.text(object).starts_with("MPI::") {
            return None;
        }
        let name = self.text(method.child_by_field_name(k::F_FIELD)?);
        let (c_name, before, after) = crate::frontend::mpi::cxx_comm_method(&name)?;
        let comm = self.expr(object, depth);
        let given_after = args.len().saturating_sub(before);
        let mut rest = args.split_off(args.len().min(before));
        rest.extend(after.iter().skip(given_after).map(|a| match *a {
            "MPI_STATUS_IGNORE" => CExpr::Ident((*a).into()),
            other => CExpr::Unknown(other.into()),
        }));
        args.push(comm);
        args.extend(rest);
        Some(c_name)
    }

    fn expr(&mut self, n: Node<'a>, depth: usize) -> CExpr {
        if depth > MAX_DEPTH {
            self.diag(n, too_deep());
            return CExpr::Unknown("(too deep)".into());
        }
        let d = depth + 1;
        match n.kind() {
            k::IDENTIFIER => CExpr::Ident(self.text(n)),
            k::QUALIFIED_IDENTIFIER => {
                let t = self.text(n);
                CExpr::Ident(crate::frontend::mpi::cxx_name(&t).unwrap_or(t))
            }
            k::NUMBER_LITERAL => number(&self.text(n)),
            k::STRING_LITERAL | k::CONCATENATED_STRING => CExpr::Str(string_value(&self.text(n))),
            k::CHAR_LITERAL => {
                let t = self.text(n);
                let b = t.as_bytes();
                CExpr::Int(if b.len() >= 3 && b[1] != b'\\' {
                    b[1] as i128
                } else {
                    0
                })
            }
            k::TRUE => CExpr::Int(1),
            k::FALSE | k::NULL | k::NULLPTR => CExpr::Int(0),
            k::PARENTHESIZED_EXPRESSION => match n.named_child(0) {
                Some(c) => self.expr(c, d),
                None => CExpr::Unknown(self.text(n)),
            },
            k::BINARY_EXPRESSION => CExpr::Binary {
                op: self.op(n),
                left: self.field_expr(n, k::F_LEFT, d),
                right: self.field_expr(n, k::F_RIGHT, d),
            },
            k::UNARY_EXPRESSION => CExpr::Unary {
                op: self.op(n),
                arg: self.field_expr(n, k::F_ARGUMENT, d),
            },
            k::UPDATE_EXPRESSION => {
                let prefix = match (
                    n.child_by_field_name(k::F_OPERATOR),
                    n.child_by_field_name(k::F_ARGUMENT),
                ) {
                    (Some(o), Some(a)) => o.start_byte() < a.start_byte(),
                    _ => false,
                };
                CExpr::Update {
                    op: self.op(n),
                    arg: self.field_expr(n, k::F_ARGUMENT, d),
                    prefix,
                }
            }
            k::ASSIGNMENT_EXPRESSION => CExpr::Assign {
                op: self.op(n),
                left: self.field_expr(n, k::F_LEFT, d),
                right: self.field_expr(n, k::F_RIGHT, d),
            },
            k::POINTER_EXPRESSION => {
                let arg = self.field_expr(n, k::F_ARGUMENT, d);
                if self.op(n) == "&" {
                    CExpr::AddrOf(arg)
                } else {
                    CExpr::Deref(arg)
                }
            }
            k::SUBSCRIPT_EXPRESSION => {
                let array = self.field_expr(n, k::F_ARGUMENT, d);
                let index = match n.child_by_field_name(k::F_INDEX) {
                    Some(i) => self.expr(i, d),
                    None => match n
                        .child_by_field_name(k::F_INDICES)
                        .and_then(|l| l.named_child(0))
                    {
                        Some(i) => self.expr(i, d),
                        None => CExpr::Unknown(self.text(n)),
                    },
                };
                CExpr::Index {
                    array,
                    index: Box::new(index),
                    at: self.written_at(n),
                }
            }
            k::FIELD_EXPRESSION => CExpr::Field {
                base: self.field_expr(n, k::F_ARGUMENT, d),
                field: n
                    .child_by_field_name(k::F_FIELD)
                    .map(|f| self.text(f))
                    .unwrap_or_default(),
                arrow: self.op(n) == "->",
            },
            k::CALL_EXPRESSION => {
                let fnode = n.child_by_field_name(k::F_FUNCTION);
                let func = fnode.map(|f| self.text(f)).unwrap_or_default();
                let func = crate::frontend::mpi::cxx_name(&func).unwrap_or(func);
                // The C library through C++'s headers (std::atoi, std::sqrt, ::exit) is the C library.
                let func = match func.strip_prefix("std::").or_else(|| func.strip_prefix("::")) {
                    Some(f) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => f.to_string(),
                    _ => func,
                };
                if let Some(e) = self.macro_use(n, &func) {
                    return e;
                }
                let mut args = Vec::new();
                if let Some(al) = n.child_by_field_name(k::F_ARGUMENTS) {
                    if self.call_depth >= MAX_CALL_NESTING {
                        self.diag(n, format!("calls nested deeper than {MAX_CALL_NESTING} levels: arguments not analysed"));
                        for a in self.named_children(al) {
                            if a.kind() != k::COMMENT {
                                args.push(CExpr::Unknown("(too deep)".into()));
                            }
                        }
                    } else {
                        self.call_depth += 1;
                        for a in self.named_children(al) {
                            if a.kind() != k::COMMENT {
                                args.push(self.expr(a, d));
                            }
                        }
                        self.call_depth -= 1;
                    }
                }
                if let Some(method) = fnode.filter(|f| f.kind() == k::FIELD_EXPRESSION) {
                    if let Some(c) = self.cxx_comm_call(method, &mut args, d) {
                        return CExpr::Call { func: c.into(), args, line: line(n), at: self.written_at(n) };
                    }
                }
                // A function-like macro's use is no call to time (`c_assgn(d, s)` may be two
                // statements).
                let at = if self.macros.is_function_like(&func) { At::NONE } else { self.written_at(n) };
                CExpr::Call { func, args, line: line(n), at }
            }
            k::CAST_EXPRESSION => {
                let ty = n
                    .child_by_field_name(k::F_TYPE)
                    .map(|t| self.type_descriptor(t))
                    .unwrap_or(CType::unknown());
                CExpr::Cast {
                    ty,
                    value: self.field_expr(n, k::F_VALUE, d),
                }
            }
            k::CONDITIONAL_EXPRESSION => CExpr::Cond {
                cond: self.field_expr(n, k::F_CONDITION, d),
                then: self.field_expr(n, k::F_CONSEQUENCE, d),
                otherwise: self.field_expr(n, k::F_ALTERNATIVE, d),
            },
            k::SIZEOF_EXPRESSION => {
                let ty = n
                    .child_by_field_name(k::F_TYPE)
                    .map(|t| self.type_descriptor(t));
                let value = n
                    .child_by_field_name(k::F_VALUE)
                    .map(|v| Box::new(self.expr(v, d)));
                CExpr::Sizeof { ty, value }
            }
            k::COMMA_EXPRESSION => CExpr::Comma(
                self.field_expr(n, k::F_LEFT, d),
                self.field_expr(n, k::F_RIGHT, d),
            ),
            k::INITIALIZER_LIST => {
                let kids = self.named_children(n);
                CExpr::InitList(kids.into_iter().map(|c| self.expr(c, d)).collect())
            }
            _ => CExpr::Unknown(self.text(n).chars().take(60).collect()),
        }
    }

    fn type_descriptor(&self, t: Node<'a>) -> CType {
        let ty = t
            .child_by_field_name(k::F_TYPE)
            .map(|b| self.type_of(b))
            .unwrap_or_else(CType::unknown);
        match t.child_by_field_name(k::F_DECLARATOR) {
            Some(d) => self.declarator(d, ty).1,
            None => ty,
        }
    }
}

/// A C number literal: integer (decimal, hex, octal, binary, with suffixes) or floating.
fn number(text: &str) -> CExpr {
    let t = text.replace('\'', "");
    let lower = t.to_ascii_lowercase();
    let is_hex = lower.starts_with("0x");
    let is_float =
        !is_hex && (lower.contains('.') || lower.contains('e')) || (is_hex && lower.contains('p'));
    if is_float {
        let single = lower.ends_with('f');
        let digits = lower.trim_end_matches(['f', 'l']);
        return match digits.parse::<f64>() {
            Ok(v) => CExpr::Float { value: v, single },
            Err(_) => CExpr::Unknown(text.to_string()),
        };
    }
    let digits = lower.trim_end_matches(['u', 'l']);
    let parsed = if let Some(h) = digits.strip_prefix("0x") {
        i128::from_str_radix(h, 16)
    } else if let Some(b) = digits.strip_prefix("0b") {
        i128::from_str_radix(b, 2)
    } else if digits.len() > 1 && digits.starts_with('0') {
        i128::from_str_radix(&digits[1..], 8)
    } else {
        digits.parse::<i128>()
    };
    match parsed {
        Ok(v) => CExpr::Int(v),
        Err(_) => CExpr::Unknown(text.to_string()),
    }
}

/// Width in bytes (0: int's own) and signedness of the integer types of <stdint.h> and
/// <stddef.h> that tree-sitter-c parses as primitive types.
fn fixed_width_int(name: &str) -> Option<(u8, bool)> {
    Some(match name {
        "int8_t" => (1, false),
        "uint8_t" => (1, true),
        "int16_t" => (2, false),
        "uint16_t" => (2, true),
        "int32_t" => (0, false),
        "uint32_t" => (0, true),
        "int64_t" | "ssize_t" | "intptr_t" | "ptrdiff_t" | "intmax_t" => (8, false),
        "uint64_t" | "size_t" | "uintptr_t" | "uintmax_t" => (8, true),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_files_split_between_top_level_items_only() {
        let item = "int f(int n) { return n; }\n";
        // A comment, a string, a #if group and a struct whose lines end in `}` or `;` at
        // depth 0 or inside: no part ends inside them.
        let traps = "/* x;\n}\n */\nconst char *s = \"a;\\\n}\";\n#if A\nint a;\n#endif\nstruct s {\n int a;\n}\n;\n";
        let mut src = String::new();
        while src.len() < 5000 {
            src.push_str(item);
            src.push_str(traps);
        }
        let parts = top_level_parts(src.as_bytes(), 1000);
        assert!(parts.len() >= 4, "{parts:?}");
        assert_eq!(parts[0].0, 0);
        assert_eq!(parts.last().unwrap().1, src.len());
        for w in parts.windows(2) {
            assert_eq!(w[0].1, w[1].0, "contiguous");
            // No part ends inside the comment, the string, the #if group or the struct.
            let head = &src[..w[0].1];
            let inside = ["/* x;\n", "/* x;\n}\n", "\"a;\\\n", "#if A\nint a;\n", "{\n int a;\n", " int a;\n}\n"];
            assert!(!inside.iter().any(|i| head.ends_with(i)), "{:?}", &src[w[0].1.saturating_sub(40)..w[0].1]);
        }
        // Small files are one part; a file that never closes its braces is one part.
        assert_eq!(top_level_parts(src.as_bytes(), src.len()), vec![(0, src.len())]);
        let open = format!("extern \"C\" {{\n{src}");
        assert_eq!(top_level_parts(open.as_bytes(), 1000), vec![(0, open.len())]);
    }

    #[test]
    fn numbers() {
        assert_eq!(number("42"), CExpr::Int(42));
        assert_eq!(number("0x1F"), CExpr::Int(31));
        assert_eq!(number("010"), CExpr::Int(8));
        assert_eq!(number("314159265ULL"), CExpr::Int(314159265));
        assert_eq!(
            number("1.5f"),
            CExpr::Float {
                value: 1.5,
                single: true
            }
        );
        assert_eq!(
            number("1e-6"),
            CExpr::Float {
                value: 1e-6,
                single: false
            }
        );
    }

    #[test]
    fn lowers_a_loop_and_a_define() {
        let u = lower_file(
            "t.c",
            "#define N 100\nint main(void){ int s=0; for(int i=0;i<N;i++) s+=i; return s; }\n",
            Lang::C,
        );
        assert_eq!(u.defines.len(), 1);
        assert_eq!(u.functions.len(), 1);
        assert!(u.diags.is_empty(), "{:?}", u.diags);
        let Stmt::Compound(v, _) = &u.functions[0].body else {
            panic!()
        };
        assert!(matches!(v[1], Stmt::For { .. }));
    }
}

/// The characters of a (possibly concatenated) string literal: what lies between its quotes,
/// with C's simple escapes decoded.
fn string_value(text: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (inside, c) {
            (false, '"') => inside = true,
            (true, '"') => inside = false,
            (true, '\\') => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('0') => out.push('\0'),
                Some(o) => out.push(o),
                None => {}
            },
            (true, c) => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod cxx_binding_tests {
    use crate::model::analysis::CommSite;

    fn sites() -> Vec<CommSite> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scale/cxx_bindings.cpp");
        crate::frontend::analyze(&[p], &crate::frontend::Options::default()).comm
    }

    #[test]
    fn the_cxx_bindings_are_the_c_routines_they_wrap() {
        let s = sites();
        let calls: Vec<&str> = s.iter().map(|c| c.call.as_str()).collect();
        assert_eq!(
            calls,
            ["MPI_Send", "MPI_Recv", "MPI_Recv", "MPI_Send", "MPI_Sendrecv", "MPI_Allreduce"],
            "{s:#?}"
        );
        for c in &s {
            assert_eq!(c.comm.as_deref(), Some("MPI_COMM_WORLD"), "{c:#?}");
        }
        // Peers from Get_rank()/Get_size(): rank and size, not data.
        let peer = |i: usize, rank: f64| {
            let env = move |v: &str| match v {
                "rank" => Some(rank),
                "size" => Some(4.0),
                _ => None,
            };
            s[i].peer_expr.as_ref().expect("a peer formula").eval(&env).unwrap()
        };
        assert_eq!(peer(0, 3.0), 0.0, "the last rank's next wraps to 0");
        assert_eq!(peer(1, 0.0), 3.0, "rank 0's previous is the last");
        // The datatype of the bindings' namespace has its size: n doubles.
        let bytes = s[0].bytes.as_ref().expect("a size").eval(&|v: &str| (v == "n").then_some(10.0));
        assert_eq!(bytes.ok(), Some(80.0), "{:?}", s[0].bytes);
        // The status the C++ call leaves out is the C call's MPI_STATUS_IGNORE; one given is kept.
        assert_eq!(s[1].args.last().map(String::as_str), Some("MPI_STATUS_IGNORE"));
        assert_eq!(s[2].args.last().map(String::as_str), Some("st"));
        assert_eq!(s[4].args.len(), 12, "Sendrecv: 10 arguments, the communicator, the status");
    }
}
