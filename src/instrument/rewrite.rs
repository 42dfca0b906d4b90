//! Trace points on a copy of the sources. The analysis gives every block its byte range (and
//! loops their body's); this module decides where each counter goes and splices the text. It
//! reads no syntax tree: a small lexer (comments, strings, character literals, preprocessor
//! lines skipped) finds brackets, so that a counter is only ever placed where a statement may
//! start, and non-compound bodies that receive one are wrapped in braces.

use std::collections::{BTreeSet, HashMap};

use crate::model::analysis::{Block, BlockKind, ProgramModel};

/// Declares the counters at the top of an instrumented file (mpicast_rt.h says the same);
/// `#line 1` keeps the compiler's line numbers those of the user's file.
pub const PROLOGUE: &str = "#ifdef __cplusplus\nextern \"C\" {\n#endif\nextern unsigned long long __mpicast_bc[];\n#ifdef __cplusplus\n}\n#endif\n#line 1\n";

/// One insertion. At equal offsets: closing braces, then opening braces (outermost first),
/// then the sampling check, then counters (by block index).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edit {
    offset: usize,
    rank: u8,
    /// Tie-break within a rank: for opening braces the negated end (outer first), for counters
    /// the block index.
    key: i64,
    text: String,
}

const CLOSE: u8 = 0;
const OPEN: u8 = 1;
const SAMPLE: u8 = 2;
const COUNTER: u8 = 3;

/// A bracket, `;` or single `:` outside comments, strings and preprocessor lines.
#[derive(Debug, Clone, Copy)]
struct Tok {
    at: usize,
    ch: u8,
}

/// The significant punctuation of a C or C++ file.
fn lex(src: &[u8]) -> Vec<Tok> {
    let mut out = Vec::new();
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
                continue;
            }
            _ => {}
        }
        line_start = false;
        match c {
            b'/' if i + 1 < n && src[i + 1] == b'/' => {
                while i < n && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if i + 1 < n && src[i + 1] == b'*' => i = skip_block_comment(src, i),
            b'"' => {
                if raw_string_prefix(src, i) {
                    i = skip_raw_string(src, i);
                } else {
                    i = skip_quoted(src, i, b'"');
                }
            }
            b'\'' => {
                if digit_separator(src, i) {
                    i += 1;
                } else {
                    i = skip_quoted(src, i, b'\'');
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
    out
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
}

impl Lexed {
    fn new(src: &[u8]) -> Lexed {
        let toks = lex(src);
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
        Lexed { toks, top_after }
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

/// The `{` of a function definition spanning `[start, end)`: the bracket matching the last `}`.
fn function_body_open(toks: &[Tok], start: usize, end: usize) -> Option<usize> {
    let inside: Vec<&Tok> = toks
        .iter()
        .filter(|t| t.at >= start && t.at < end)
        .collect();
    let last = inside.iter().rposition(|t| t.ch == b'}')?;
    let mut depth = 0usize;
    for t in inside[..=last].iter().rev() {
        match t.ch {
            b'}' => depth += 1,
            b'{' => {
                depth -= 1;
                if depth == 0 {
                    return Some(t.at);
                }
            }
            _ => {}
        }
    }
    None
}

/// The colon ending a `case X:` / `default:` label that starts at `start`.
fn label_colon(toks: &[Tok], start: usize, end: usize) -> Option<usize> {
    let mut depth = 0i32;
    for t in toks.iter().filter(|t| t.at >= start && t.at < end) {
        match t.ch {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b':' if depth == 0 => return Some(t.at),
            _ => {}
        }
    }
    None
}

fn starts_with_word(text: &[u8], word: &str) -> bool {
    let w = word.as_bytes();
    text.starts_with(w)
        && text
            .get(w.len())
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
}

fn range(b: &Block) -> Option<(usize, usize)> {
    b.bytes.map(|[s, e]| (s as usize, e as usize))
}

fn body_range(b: &Block) -> Option<(usize, usize)> {
    b.body_bytes.map(|[s, e]| (s as usize, e as usize))
}

/// What to insert into the program's files.
#[derive(Debug, Default)]
pub struct Plan {
    edits: HashMap<String, Vec<Edit>>,
    /// Blocks that got a counter.
    pub counted: Vec<u32>,
    /// Blocks that should have had one: (index, reason).
    pub skipped: Vec<(u32, String)>,
}

/// Places a counter in each block of `want` (indices into `model.blocks`) and, with `sample`
/// = (loop index, K), a check that leaves that loop after K iterations. `texts` holds each
/// analysed file's bytes by the name the analysis uses.
pub fn plan(
    model: &ProgramModel,
    texts: &HashMap<String, Vec<u8>>,
    want: &[u32],
    sample: Option<(u32, u64)>,
) -> Plan {
    let mut plan = Plan::default();
    let mut lexed: HashMap<&str, Lexed> = HashMap::new();
    let mut wraps: HashMap<String, BTreeSet<(usize, usize)>> = HashMap::new();
    let mut code: Vec<(String, usize, u8, i64, String)> = Vec::new();

    // Each file's non-compound bodies: a statement placed at their start needs braces.
    let mut slots: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for b in &model.blocks {
        let Some(text) = texts.get(&b.file) else {
            continue;
        };
        let slot = match b.kind {
            BlockKind::Loop => body_range(b),
            BlockKind::Branch => range(b).filter(|&(s, _)| {
                let t = &text[s.min(text.len())..];
                !starts_with_word(t, "case") && !starts_with_word(t, "default")
            }),
            _ => None,
        };
        if let Some((s, e)) = slot {
            if s < e && e <= text.len() && text[s] != b'{' {
                slots.entry(b.file.as_str()).or_default().push((s, e));
            }
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
        let at = match place(b, model, text, lx) {
            Ok(p) => p,
            Err(reason) => {
                plan.skipped.push((index, reason));
                continue;
            }
        };
        let file_slots = slots.get(b.file.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        let w = wraps.entry(b.file.clone()).or_default();
        if let Some(own) = at.wrap {
            w.insert(own);
        }
        for &s in file_slots.iter().filter(|s| s.0 == at.offset) {
            w.insert(s);
        }
        if is_sample {
            let k = sample.map(|s| s.1).unwrap_or(0);
            code.push((
                b.file.clone(),
                at.offset,
                SAMPLE,
                0,
                format!(
                    "{{ static unsigned long long __mpicast_sampled = 0; if (__mpicast_sampled++ >= {k}ULL) break; }} "
                ),
            ));
        } else {
            code.push((
                b.file.clone(),
                at.offset,
                COUNTER,
                index as i64,
                format!("__mpicast_bc[{index}]++; "),
            ));
            plan.counted.push(index);
        }
    }
    for (file, offset, rank, key, text) in code {
        plan.edits.entry(file).or_default().push(Edit {
            offset,
            rank,
            key,
            text,
        });
    }
    for (file, set) in wraps {
        let e = plan.edits.entry(file).or_default();
        for (s, end) in set {
            e.push(Edit {
                offset: s,
                rank: OPEN,
                key: -(end as i64),
                text: "{ ".into(),
            });
            e.push(Edit {
                offset: end,
                rank: CLOSE,
                key: 0,
                text: " }".into(),
            });
        }
    }
    plan.counted.sort_unstable();
    plan
}

struct Placement {
    offset: usize,
    /// The block's own body, to wrap in braces.
    wrap: Option<(usize, usize)>,
}

/// Where a block's counter goes.
fn place(b: &Block, model: &ProgramModel, text: &[u8], lx: &Lexed) -> Result<Placement, String> {
    let toks = lx.toks.as_slice();
    let (s, e) = range(b).ok_or("the analysis gives no byte range")?;
    if s > e || e > text.len() {
        return Err(format!(
            "byte range {s}..{e} is outside the file ({} bytes)",
            text.len()
        ));
    }
    let statement = |offset: usize| -> Result<usize, String> {
        match lx.context(offset) {
            Some(b'{') => Ok(offset),
            _ => Err(format!("byte {offset} is not where a statement can start")),
        }
    };
    match b.kind {
        BlockKind::Function => {
            let open = function_body_open(toks, s, e).ok_or("no function body found")?;
            Ok(Placement {
                offset: open + 1,
                wrap: None,
            })
        }
        BlockKind::Loop => {
            let (bs, be) = body_range(b).ok_or("the analysis gives no loop body range")?;
            if bs >= be || be > text.len() {
                return Err(format!(
                    "loop body range {bs}..{be} is empty or outside the file"
                ));
            }
            if text[bs] == b'{' {
                Ok(Placement {
                    offset: bs + 1,
                    wrap: None,
                })
            } else {
                Ok(Placement {
                    offset: statement(bs)?,
                    wrap: Some((bs, be)),
                })
            }
        }
        BlockKind::Branch => {
            let arm = &text[s..];
            if starts_with_word(arm, "case") || starts_with_word(arm, "default") {
                let colon =
                    label_colon(toks, s, e.max(s + 1)).ok_or("no `:` after the case label")?;
                Ok(Placement {
                    offset: colon + 1,
                    wrap: None,
                })
            } else if arm.first() == Some(&b'{') {
                Ok(Placement {
                    offset: s + 1,
                    wrap: None,
                })
            } else if s < e {
                Ok(Placement {
                    offset: statement(s)?,
                    wrap: Some((s, e)),
                })
            } else {
                Err("empty branch arm".into())
            }
        }
        BlockKind::Straight | BlockKind::Comm => {
            // A `for` loop's init clause is a block of its own that runs once per entry of the
            // loop: its counter goes just before the loop.
            let mut at = s;
            for _ in 0..64 {
                if lx.context(at) != Some(b'(') {
                    break;
                }
                let header = model
                    .blocks
                    .iter()
                    .filter(|l| l.kind == BlockKind::Loop && l.file == b.file)
                    .filter_map(|l| Some((range(l)?.0, body_range(l)?.0)))
                    .filter(|&(ls, bs)| ls < at && at < bs)
                    .max_by_key(|&(ls, _)| ls);
                match header {
                    Some((ls, _)) => at = ls,
                    None => break,
                }
            }
            Ok(Placement {
                offset: statement(at)?,
                wrap: None,
            })
        }
    }
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
    for e in &edits {
        let at = e.offset.clamp(pos, text.len());
        out.extend_from_slice(&text[pos..at]);
        out.extend_from_slice(e.text.as_bytes());
        pos = at;
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

    #[test]
    fn lexer_skips_comments_strings_and_preprocessor() {
        let src = b"#define X {\n/* { */ int a = '{'; // (\nchar *s = \"(}\"; int n = 1'000; f(a);";
        let t: String = lex(src).iter().map(|t| t.ch as char).collect();
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
        assert_eq!(function_body_open(&lx.toks, 0, src.len()), Some(13));
    }
}
