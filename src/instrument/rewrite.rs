//! Trace points on a copy of the sources. The analysis gives every block its site (from the
//! syntax tree: where a statement may be inserted, which bodies and arms lack braces, which
//! spots start preprocessor lines); this module chooses the counters and braces and splices
//! the text. It reads no syntax tree; a small lexer (comments, strings, character literals,
//! preprocessor lines skipped) only confirms that each spot is inside a function body and not
//! inside a token. Text inserted at the start of a preprocessor line ends with a newline and
//! `#line N`, and a closing brace after an `#endif` goes on a line of its own, so that the
//! compiler's line numbers stay the user's.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::model::analysis::{BlockKind, ProgramModel, Site};

/// Declares the counters and the address probes at the top of an instrumented file
/// (mpicast_rt.h says the same); `#line 1` keeps the compiler's line numbers those of the
/// user's file. `__MPICAST_AT(K, &(ref))` is the reference itself (an lvalue: its address
/// taken once, dereferenced); of its first 2^20 accesses (the range of a table indexed at
/// random shows in them, and the rest cost one compare) it keeps the largest
/// address, the complement of the smallest (both start at zero), and how many found their
/// cache line among the 64 it touched last (a direct-mapped table of line numbers plus one:
/// a few streams through a large array find it, accesses at random over it do not).
///
/// `__MPICAST_CB(K) call __MPICAST_CE` is the call itself, timed by the runtime
/// (`__mpicast_call_begin` counts it and, for the first 1,024 and one in 16 after, reads the
/// clock; `__mpicast_call_end` adds the time since): in C a statement expression whose timer
/// ends with its scope (a cleanup), in C++ a comma expression whose temporary timer ends with
/// the full expression (a reference the call returns stays one). The types are defined once
/// per translation unit (an instrumented file may include another).
///
/// `__MPICAST_LE(K)`, before counted loop K, runs once per entry: the loop's counter has
/// advanced by the previous entry's trip since the last one, and an entry whose trip differs
/// from the one before it (the first has none before it), or exceeds 32 (`PREDICTED_TRIP`),
/// counts a missed exit. Four words
/// per loop in `__mpicast_le`: entries, the counter at the last entry, the last trip, misses
/// (the runtime finishes the last entry when it writes the statistics).
pub const PROLOGUE: &str = "#ifdef __cplusplus\nextern \"C\" {\n#endif\nextern unsigned long long __mpicast_bc[];\n\
extern unsigned long long __mpicast_hi[], __mpicast_nlo[], __mpicast_lines[], __mpicast_le[];\nextern unsigned int __mpicast_seen[], __mpicast_reused[];\n\
#ifndef __MPICAST_CALLS\n#define __MPICAST_CALLS\nstruct __mpicast_ct { unsigned int k; unsigned long long t0; };\n\
extern unsigned long long __mpicast_call_begin(unsigned int);\nextern void __mpicast_call_end(struct __mpicast_ct *);\n\
#ifdef __cplusplus\n}\nstruct __mpicast_ctimer { struct __mpicast_ct t; __mpicast_ctimer(unsigned int k) { t.k = k; t.t0 = __mpicast_call_begin(k); } \
~__mpicast_ctimer() { __mpicast_call_end(&t); } };\nextern \"C\" {\n#endif\n#endif\n\
#ifdef __cplusplus\n}\n#define __MPICAST_AUTO auto\n#define __MPICAST_CB(k) (__mpicast_ctimer(k),\n#define __MPICAST_CE )\n\
#else\n#define __MPICAST_AUTO __auto_type\n\
#define __MPICAST_CB(k) __extension__({ struct __mpicast_ct __mpicast_t __attribute__((cleanup(__mpicast_call_end))) = { (k), __mpicast_call_begin(k) };\n\
#define __MPICAST_CE ; })\n#endif\n\
#define __MPICAST_AT(k, p) (*__extension__({ __MPICAST_AUTO __mpicast_p = (p); \\\n\
  if (__mpicast_seen[k] < 1048576u) { unsigned long long __mpicast_a = (unsigned long long)__mpicast_p; __mpicast_seen[k]++; \\\n\
    if (__mpicast_a > __mpicast_hi[k]) __mpicast_hi[k] = __mpicast_a; \\\n\
    if (~__mpicast_a > __mpicast_nlo[k]) __mpicast_nlo[k] = ~__mpicast_a; \\\n\
    unsigned long long *__mpicast_l = &__mpicast_lines[64ULL * (k) + ((__mpicast_a >> 6) & 63)]; \\\n\
    if (*__mpicast_l == (__mpicast_a >> 6) + 1) __mpicast_reused[k]++; else *__mpicast_l = (__mpicast_a >> 6) + 1; } \\\n\
  __mpicast_p; }))\n\
#define __MPICAST_LE(k) { unsigned long long *__mpicast_e = &__mpicast_le[4 * (k)]; if (__mpicast_e[0]) { \\\n\
  unsigned long long __mpicast_d = __mpicast_bc[k] - __mpicast_e[1]; __mpicast_e[3] += (__mpicast_e[0] > 1 && __mpicast_d != __mpicast_e[2]) || __mpicast_d > 32; \\\n\
  __mpicast_e[2] = __mpicast_d; } __mpicast_e[0]++; __mpicast_e[1] = __mpicast_bc[k]; }\n#line 1\n";

/// One insertion. At equal offsets: the ends of address probes and timed calls (innermost
/// first), closing braces, then opening braces (outermost first), the sampling check,
/// counters (by block index), and the starts of address probes and timed calls (outermost
/// first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edit {
    offset: usize,
    rank: u8,
    /// Tie-break within a rank: for opening braces the negated end (outer first), for counters
    /// the block index.
    key: i64,
    /// The offset starts a preprocessor line (this line number): the text inserted there ends
    /// with a newline and `#line`.
    line: Option<u32>,
    text: String,
}

const PROBE_CLOSE: u8 = 0;
const CLOSE: u8 = 1;
const OPEN: u8 = 2;
const SAMPLE: u8 = 3;
const COUNTER: u8 = 4;
const PROBE_OPEN: u8 = 5;

/// A bracket, `;` or single `:` outside comments, strings and preprocessor lines.
#[derive(Debug, Clone, Copy)]
struct Tok {
    at: usize,
    ch: u8,
}

/// The significant punctuation of a C or C++ file, and the ranges of its comments, literals
/// and preprocessor lines.
fn lex(src: &[u8]) -> (Vec<Tok>, Vec<(usize, usize)>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let n = src.len();
    let mut i = 0;
    let mut line_start = true;
    while i < n {
        let c = src[i];
        match c {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' => {
                i += 1;
                continue;
            }
            b'#' if line_start => {
                // A preprocessor line, with its continuations.
                let from = i;
                while i < n && src[i] != b'\n' {
                    if src[i] == b'\\' && i + 1 < n && src[i + 1] == b'\n' {
                        i += 2;
                        continue;
                    }
                    if src[i] == b'/' && i + 1 < n && src[i + 1] == b'*' {
                        i = skip_block_comment(src, i);
                        continue;
                    }
                    i += 1;
                }
                skipped.push((from, i));
                continue;
            }
            _ => {}
        }
        line_start = false;
        let from = i;
        match c {
            b'/' if i + 1 < n && src[i + 1] == b'/' => {
                while i < n && src[i] != b'\n' {
                    i += 1;
                }
                skipped.push((from, i));
            }
            b'/' if i + 1 < n && src[i + 1] == b'*' => {
                i = skip_block_comment(src, i);
                skipped.push((from, i));
            }
            b'"' => {
                if raw_string_prefix(src, i) {
                    i = skip_raw_string(src, i);
                } else {
                    i = skip_quoted(src, i, b'"');
                }
                skipped.push((from, i));
            }
            b'\'' => {
                if digit_separator(src, i) {
                    i += 1;
                } else {
                    i = skip_quoted(src, i, b'\'');
                    skipped.push((from, i));
                }
            }
            b'{' | b'}' | b'(' | b')' | b'[' | b']' | b';' => {
                out.push(Tok { at: i, ch: c });
                i += 1;
            }
            b':' => {
                if i + 1 < n && src[i + 1] == b':' {
                    i += 2;
                } else {
                    out.push(Tok { at: i, ch: c });
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    (out, skipped)
}

fn skip_block_comment(src: &[u8], start: usize) -> usize {
    let mut i = start + 2;
    while i + 1 < src.len() {
        if src[i] == b'*' && src[i + 1] == b'/' {
            return i + 2;
        }
        i += 1;
    }
    src.len()
}

fn skip_quoted(src: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < src.len() {
        match src[i] {
            b'\\' => i += 2,
            b'\n' => return i, // unterminated: stop at the line's end
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    src.len()
}

/// `R"delim(` ... `)delim"` (C++), possibly with an encoding prefix.
fn raw_string_prefix(src: &[u8], quote: usize) -> bool {
    if quote == 0 || src[quote - 1] != b'R' {
        return false;
    }
    // The R must start a token, or follow u8 / u / U / L.
    let mut j = quote - 1;
    while j > 0 && (src[j - 1].is_ascii_alphanumeric() || src[j - 1] == b'_') {
        j -= 1;
    }
    matches!(&src[j..quote], b"R" | b"u8R" | b"uR" | b"UR" | b"LR")
}

fn skip_raw_string(src: &[u8], quote: usize) -> usize {
    let Some(open) = src[quote..]
        .iter()
        .position(|&c| c == b'(')
        .map(|p| quote + p)
    else {
        return src.len();
    };
    let mut close = Vec::with_capacity(open - quote + 1);
    close.push(b')');
    close.extend_from_slice(&src[quote + 1..open]);
    close.push(b'"');
    match src[open..]
        .windows(close.len())
        .position(|w| w == close.as_slice())
    {
        Some(p) => open + p + close.len(),
        None => src.len(),
    }
}

/// C++14 `1'000'000`: a quote inside a number.
fn digit_separator(src: &[u8], i: usize) -> bool {
    let mut j = i;
    while j > 0 && (src[j - 1].is_ascii_alphanumeric() || src[j - 1] == b'\'' || src[j - 1] == b'.')
    {
        j -= 1;
    }
    j < i && src[j].is_ascii_digit()
}

/// A file's tokens and the innermost open bracket after each one.
struct Lexed {
    toks: Vec<Tok>,
    top_after: Vec<Option<u8>>,
    /// Comments, literals and preprocessor lines, in order.
    skipped: Vec<(usize, usize)>,
}

impl Lexed {
    fn new(src: &[u8]) -> Lexed {
        let (toks, skipped) = lex(src);
        let mut stack: Vec<u8> = Vec::new();
        let mut top_after = Vec::with_capacity(toks.len());
        for t in &toks {
            match t.ch {
                b'{' | b'(' | b'[' => stack.push(t.ch),
                b'}' | b')' | b']' => {
                    stack.pop();
                }
                _ => {}
            }
            top_after.push(stack.last().copied());
        }
        Lexed {
            toks,
            top_after,
            skipped,
        }
    }

    /// `offset` is inside a comment, a literal or a preprocessor line.
    fn inside_token(&self, offset: usize) -> bool {
        let n = self.skipped.partition_point(|r| r.0 < offset);
        n > 0 && offset < self.skipped[n - 1].1
    }

    /// The innermost open bracket at `offset` (`{`, `(` or `[`), None at file level.
    fn context(&self, offset: usize) -> Option<u8> {
        let n = self.toks.partition_point(|t| t.at < offset);
        if n == 0 {
            None
        } else {
            self.top_after[n - 1]
        }
    }
}

/// A loop body or branch arm that is not a compound statement: braces go around it when
/// something is inserted in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Slot {
    start: usize,
    end: usize,
    start_line: Option<u32>,
    end_line: Option<u32>,
    blocked: Option<String>,
}

/// What to insert into the program's files.
#[derive(Debug, Default)]
pub struct Plan {
    edits: HashMap<String, Vec<Edit>>,
    /// Blocks that got a counter.
    pub counted: Vec<u32>,
    /// Blocks that should have had one: (index, reason).
    pub skipped: Vec<(u32, String)>,
    /// Counted loops that also got an entry hook (`__MPICAST_LE`): their exits are measured.
    pub loops: Vec<u32>,
    /// Address probes, by id: the irregular references (`h[key[i]]`) whose range of
    /// addresses the run measures.
    pub probes: Vec<Probe>,
    /// Timed calls, by id: the calls into code the analysis does not see (`OpaqueCall`).
    pub calls: Vec<Probe>,
}

/// One probed reference as written (one probe serves every reference of the analysis at the
/// same place: the load and the store of `h[k]++`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub file: String,
    pub start: usize,
    pub end: usize,
    /// (block index, index in its `mem`) of the references it measures.
    pub refs: Vec<(u32, u32)>,
    /// Bytes of the element (the range's last access adds them).
    pub elem_bytes: u32,
    /// A timed call instead: (block index, index in its `opaque`).
    pub call: Option<(u32, u32)>,
}

/// Places a counter in each block of `want` (indices into `model.blocks`) and, with `sample`
/// = (loop index, K), a check that leaves that loop after K iterations; with `probes`, an
/// address probe on each irregular reference of a counted block; with `loops`, an entry hook
/// before each counted loop (`__MPICAST_LE`). `texts` holds each
/// analysed file's bytes by the name the analysis uses. The offsets come from the analysis'
/// sites (the syntax tree); the lexer only confirms each one is inside a function body.
pub fn plan(
    model: &ProgramModel,
    texts: &HashMap<String, Vec<u8>>,
    want: &[u32],
    sample: Option<(u32, u64)>,
    probes: bool,
    loops: bool,
) -> Plan {
    let mut plan = Plan::default();
    let mut lexed: HashMap<&str, Lexed> = HashMap::new();
    let mut wraps: HashMap<String, BTreeSet<Slot>> = HashMap::new();
    let mut code: Vec<(String, Edit)> = Vec::new();

    // Each file's non-compound bodies and arms.
    let mut slots: HashMap<&str, Vec<Slot>> = HashMap::new();
    for b in &model.blocks {
        let Some(site) = &b.site else { continue };
        if let Some(end) = site.wrap_end {
            slots.entry(b.file.as_str()).or_default().push(Slot {
                start: site.at as usize,
                end: end as usize,
                start_line: site.at_line,
                end_line: site.wrap_end_line,
                blocked: site.blocked.clone(),
            });
        }
    }

    let mut targets: Vec<(u32, bool)> = want.iter().map(|&i| (i, false)).collect();
    if let Some((i, _)) = sample {
        targets.push((i, true));
    }
    for (index, is_sample) in targets {
        let Some(b) = model.blocks.get(index as usize) else {
            continue;
        };
        let Some(text) = texts.get(&b.file) else {
            plan.skipped
                .push((index, format!("{}: source not read", b.file)));
            continue;
        };
        let lx = lexed
            .entry(b.file.as_str())
            .or_insert_with(|| Lexed::new(text));
        let file_slots = slots.get(b.file.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        let (at, line, need) = match place(b.site.as_ref(), text, lx, file_slots) {
            Ok(p) => p,
            Err(reason) => {
                plan.skipped.push((index, reason));
                continue;
            }
        };
        wraps.entry(b.file.clone()).or_default().extend(need);
        let (rank, key, text) = if is_sample {
            let k = sample.map(|s| s.1).unwrap_or(0);
            (
                SAMPLE,
                0,
                format!(
                    "{{ static unsigned long long __mpicast_sampled = 0; if (__mpicast_sampled++ >= {k}ULL) break; }} "
                ),
            )
        } else {
            plan.counted.push(index);
            // A counted loop's entries: each one's trip is its counter's advance since the
            // previous entry (the hook before the loop).
            let entry = (loops && b.kind == BlockKind::Loop).then_some(b.entry_site.as_ref()).flatten();
            if let Some(Ok((at, line, need))) = entry.map(|site| place(Some(site), text, lx, file_slots)) {
                wraps.entry(b.file.clone()).or_default().extend(need);
                plan.loops.push(index);
                code.push((b.file.clone(), Edit { offset: at, rank: COUNTER, key: index as i64, line, text: format!("__MPICAST_LE({index}) ") }));
            }
            (COUNTER, index as i64, format!("__mpicast_bc[{index}]++; "))
        };
        code.push((
            b.file.clone(),
            Edit {
                offset: at,
                rank,
                key,
                line,
                text,
            },
        ));
    }
    if probes {
        plan_probes(&mut plan, model, texts, &mut lexed);
    }
    for (file, e) in code {
        plan.edits.entry(file).or_default().push(e);
    }
    for (file, set) in wraps {
        let e = plan.edits.entry(file).or_default();
        for s in set {
            e.push(Edit {
                offset: s.start,
                rank: OPEN,
                key: -(s.end as i64),
                line: s.start_line,
                text: "{ ".into(),
            });
            e.push(Edit {
                offset: s.end,
                rank: CLOSE,
                key: 0,
                line: None,
                // After an `#endif` line: a line of its own, then the numbering restored.
                text: match s.end_line {
                    Some(l) => format!("\n}}\n#line {l}"),
                    None => " }".into(),
                },
            });
        }
    }
    plan.counted.sort_unstable();
    plan.loops.sort_unstable();
    plan
}

/// The address probes of the irregular references and the timers of the calls into code the
/// analysis does not see (of every block: a block counted statically has them too): one per
/// place, none on a place that is not a whole reference or call inside a function body, and
/// none that overlaps another without nesting in it.
fn plan_probes<'m>(plan: &mut Plan, model: &'m ProgramModel, texts: &HashMap<String, Vec<u8>>, lexed: &mut HashMap<&'m str, Lexed>) {
    let mut by_place: BTreeMap<(String, usize, usize), Probe> = BTreeMap::new();
    for (b, block) in model.blocks.iter().enumerate() {
        let b = b as u32;
        if block.mem.iter().all(|m| m.at.is_empty()) && block.opaque.is_empty() {
            continue;
        }
        let Some(text) = texts.get(&block.file) else { continue };
        let lx = lexed.entry(block.file.as_str()).or_insert_with(|| Lexed::new(text));
        for (j, m) in block.mem.iter().enumerate() {
            for &(s, e) in &m.at {
                let (s, e) = (s as usize, e as usize);
                let whole = s < e && e <= text.len() && text[e - 1] == b']' && lx.context(s).is_some() && !lx.inside_token(s) && !lx.inside_token(e - 1);
                if !whole {
                    continue;
                }
                let p = by_place.entry((block.file.clone(), s, e)).or_insert_with(|| Probe { file: block.file.clone(), start: s, end: e, refs: Vec::new(), elem_bytes: m.elem_bytes, call: None });
                if !p.refs.contains(&(b, j as u32)) {
                    p.refs.push((b, j as u32));
                }
            }
        }
        // A call as written: its name first (not `std::sort` for `sort`, not a macro's
        // expansion), its parenthesis last.
        for (j, c) in block.opaque.iter().enumerate() {
            let (s, e) = (c.at[0] as usize, c.at[1] as usize);
            let whole = s < e
                && e <= text.len()
                && text[s..].starts_with(c.func.as_bytes())
                && text[s + c.func.len()..e].iter().find(|ch| !ch.is_ascii_whitespace()) == Some(&b'(')
                && text[e - 1] == b')'
                && (s == 0 || !(text[s - 1].is_ascii_alphanumeric() || text[s - 1] == b'_' || text[s - 1] == b':'))
                && lx.context(s).is_some()
                && !lx.inside_token(s)
                && !lx.inside_token(e - 1)
                && !constant_context(text, s);
            if whole {
                by_place.entry((block.file.clone(), s, e)).or_insert_with(|| Probe { file: block.file.clone(), start: s, end: e, refs: Vec::new(), elem_bytes: 0, call: Some((b, j as u32)) });
            }
        }
    }
    // Outermost first at each start: a probe that crosses one kept before it is left out.
    let mut kept: Vec<Probe> = Vec::new();
    let mut sorted: Vec<Probe> = by_place.into_values().collect();
    sorted.sort_by(|a, b| (&a.file, a.start, std::cmp::Reverse(a.end)).cmp(&(&b.file, b.start, std::cmp::Reverse(b.end))));
    // The kept probes that enclose the current start, innermost last.
    let mut open: Vec<(String, usize)> = Vec::new();
    for p in sorted {
        while open.last().is_some_and(|(f, end)| *f != p.file || *end <= p.start) {
            open.pop();
        }
        if open.last().is_none_or(|(_, end)| p.end <= *end) {
            open.push((p.file.clone(), p.end));
            kept.push(p);
        }
    }
    let (calls, addresses): (Vec<Probe>, Vec<Probe>) = kept.into_iter().partition(|p| p.call.is_some());
    for (id, p) in addresses.iter().enumerate() {
        let e = plan.edits.entry(p.file.clone()).or_default();
        e.push(Edit { offset: p.start, rank: PROBE_OPEN, key: -(p.end as i64), line: None, text: format!("__MPICAST_AT({id}, &(") });
        e.push(Edit { offset: p.end, rank: PROBE_CLOSE, key: -(p.start as i64), line: None, text: "))".into() });
    }
    for (id, p) in calls.iter().enumerate() {
        let e = plan.edits.entry(p.file.clone()).or_default();
        e.push(Edit { offset: p.start, rank: PROBE_OPEN, key: -(p.end as i64), line: None, text: format!("__MPICAST_CB({id}) ") });
        e.push(Edit { offset: p.end, rank: PROBE_CLOSE, key: -(p.start as i64), line: None, text: " __MPICAST_CE".into() });
    }
    plan.probes = addresses;
    plan.calls = calls;
}

/// Whether the statement around offset `at` (back to the last `;`, `{` or `}`) may need a
/// constant expression or a static initializer there (`constexpr int k = max(2, 5);`, a
/// `case`, a `static` local): a timed call would not be one.
fn constant_context(text: &[u8], at: usize) -> bool {
    let from = text[..at].iter().rposition(|c| matches!(c, b';' | b'{' | b'}')).map_or(0, |i| i + 1);
    text[from..at]
        .split(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .any(|w| matches!(w, b"constexpr" | b"consteval" | b"constinit" | b"static_assert" | b"_Static_assert" | b"case" | b"template" | b"static" | b"enum"))
}

/// Where a block's statement goes: the offset, the line to restore after it when the offset
/// starts a preprocessor line, and the bodies/arms to enclose in braces.
fn place(
    site: Option<&Site>,
    text: &[u8],
    lx: &Lexed,
    slots: &[Slot],
) -> Result<(usize, Option<u32>, Vec<Slot>), String> {
    let site = site.ok_or(
        "the analysis gives no insertion point for it (an analysis from an older mpicast)",
    )?;
    if let Some(why) = &site.blocked {
        return Err(why.clone());
    }
    let at = site.at as usize;
    if at > text.len() {
        return Err(format!(
            "byte {at} is outside the file ({} bytes)",
            text.len()
        ));
    }
    // The syntax tree's offset, confirmed: inside braces (a function body), not in a header,
    // an initializer or a comment.
    if lx.context(at) != Some(b'{') || lx.inside_token(at) {
        return Err(format!(
            "byte {at} (line {}) is not where a statement can start",
            1 + text[..at].iter().filter(|&&c| c == b'\n').count()
        ));
    }
    // Every body or arm without braces that holds the spot gets them (those it does not
    // start are enclosed needlessly but harmlessly: a label may sit between); nothing goes
    // into one that braces cannot enclose.
    let mut need = Vec::new();
    for s in slots.iter().filter(|s| s.start <= at && at < s.end) {
        match &s.blocked {
            Some(why) => return Err(why.clone()),
            None => need.push(s.clone()),
        }
    }
    Ok((at, site.at_line, need))
}

/// The file with its edits applied, or None when it has none.
pub fn apply(plan: &Plan, file: &str, text: &[u8]) -> Option<Vec<u8>> {
    let edits = plan.edits.get(file)?;
    let mut edits = edits.clone();
    edits.sort();
    let extra: usize = edits.iter().map(|e| e.text.len()).sum();
    let mut out = Vec::with_capacity(text.len() + extra + PROLOGUE.len() + 8);
    // Keep a UTF-8 byte order mark first.
    let bom = if text.starts_with(b"\xef\xbb\xbf") {
        3
    } else {
        0
    };
    out.extend_from_slice(&text[..bom]);
    out.extend_from_slice(PROLOGUE.as_bytes());
    // Splice from the start forward; offsets refer to the original text, so this is the same
    // as inserting from the end backwards.
    let mut pos = bom;
    let mut k = 0;
    while k < edits.len() {
        let at = edits[k].offset.clamp(pos, text.len());
        out.extend_from_slice(&text[pos..at]);
        pos = at;
        let mut line = None;
        while k < edits.len() && edits[k].offset.clamp(bom, text.len()) == at {
            out.extend_from_slice(edits[k].text.as_bytes());
            line = line.or(edits[k].line);
            k += 1;
        }
        if let Some(l) = line {
            out.extend_from_slice(format!("\n#line {l}\n").as_bytes());
        }
    }
    out.extend_from_slice(&text[pos..]);
    Some(out)
}

/// The files that have edits.
pub fn edited_files(plan: &Plan) -> Vec<String> {
    let mut v: Vec<String> = plan.edits.keys().cloned().collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop hook (the prologue's macro) and the runtime's finish of the last entry write
    /// the longest foreseen trip as a literal: it must be the analysis' `PREDICTED_TRIP`, or the
    /// static and traced counts of the same loop would disagree.
    #[test]
    fn the_loop_hook_and_the_runtime_use_the_predicted_trip() {
        let t = crate::model::analysis::PREDICTED_TRIP;
        assert!(PROLOGUE.contains(&format!("__mpicast_d > {t};")), "the prologue's __MPICAST_LE");
        let rt = include_str!("../../instrument/mpicast_rt.c");
        assert!(rt.contains(&format!("d > {t})")), "instrument/mpicast_rt.c's write_stats");
    }

    #[test]
    fn lexer_skips_comments_strings_and_preprocessor() {
        let src = b"#define X {\n/* { */ int a = '{'; // (\nchar *s = \"(}\"; int n = 1'000; f(a);";
        let t: String = lex(src).0.iter().map(|t| t.ch as char).collect();
        assert_eq!(t, ";;;();");
    }

    #[test]
    fn context_sees_for_headers() {
        let src = b"void f(void) { for (int i = 0; i < 3; i++) x(); }";
        let lx = Lexed::new(src);
        let init = src.windows(3).position(|w| w == b"int").unwrap();
        assert_eq!(lx.context(init), Some(b'('));
        let x = src.iter().position(|&c| c == b'x').unwrap();
        assert_eq!(lx.context(x), Some(b'{'));
        assert_eq!(lx.context(0), None);
    }
}
