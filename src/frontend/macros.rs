//! Function-like macros (`#define IDX(i, j) ((i) * n + (j))`), collected from every file's text
//! (and from the preprocessor's view of headers outside the analysed files), so that a use is
//! analysed as its expansion (index arithmetic, not a call). A macro whose replacement is an
//! expression is expanded at the call: the statement around it keeps its place in the user's
//! file. A macro whose replacement is a statement head (`#define EACH(i, n) for (i = 0; i < n;
//! i++)`, `do { ... } while (0)`) is expanded in the text before parsing, as the compiler does;
//! [`Expanded`] maps offsets of the expanded text back to the user's file.

use std::collections::HashMap;

/// Function-like macros by name: parameters and replacement text.
#[derive(Debug, Default, Clone)]
pub struct FnMacros {
    defs: HashMap<String, (Vec<String>, String)>,
    /// Object-like macros whose replacement is a statement (`#define BODY { acc++; }`).
    statements: HashMap<String, String>,
}

/// Expansions nest at most this deep (a macro using a macro using ...).
pub const MAX_EXPANSION_DEPTH: usize = 8;

impl FnMacros {
    /// Adds the function-like macros defined in `text` (later definitions win; `#undef`
    /// removes).
    pub fn scan(&mut self, text: &str) {
        let mut logical = String::new();
        for raw in text.lines() {
            if let Some(cont) = raw.strip_suffix('\\') {
                logical.push_str(cont);
                logical.push(' ');
                continue;
            }
            logical.push_str(raw);
            let line = std::mem::take(&mut logical);
            let Some(rest) = line.trim_start().strip_prefix('#') else { continue };
            let rest = rest.trim_start();
            if let Some(name) = rest.strip_prefix("undef") {
                self.defs.remove(name.trim());
                self.statements.remove(name.trim());
                continue;
            }
            let Some(def) = rest.strip_prefix("define") else { continue };
            if !def.starts_with([' ', '\t']) {
                continue;
            }
            match parse_define(def.trim_start()) {
                Some((name, params, body)) => {
                    self.defs.insert(name, (params, body));
                }
                None => {
                    if let Some((name, body)) = parse_object_define(def.trim_start()) {
                        self.statements.insert(name, body);
                    }
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// Whether `name` is a function-like macro (whatever its replacement).
    pub fn is_function_like(&self, name: &str) -> bool {
        self.defs.contains_key(name)
    }

    /// Whether `name` is a function-like macro whose replacement is a statement (or a statement's
    /// head) rather than an expression: it begins with `for`, `while`, `if`, `switch`, `do` or
    /// `{`, its brackets balance, and it neither stringifies nor pastes.
    pub fn is_statement(&self, name: &str) -> bool {
        let Some((_, body)) = self.defs.get(name) else { return false };
        statement_shaped(body)
    }

    /// The text with every use of a statement macro (see [`FnMacros::is_statement`]) outside
    /// comments, literals and directive lines replaced by its expansion (arguments substituted
    /// as written, nested statement macros expanded too); None when there is no such use. The
    /// lines of a use spanning several lines follow its expansion as newlines, so every line
    /// keeps its number.
    pub fn expand_statements(&self, text: &str) -> Option<Expanded> {
        if self.statements.is_empty() && !self.defs.values().any(|(_, b)| statement_shaped(b)) {
            return None;
        }
        let uses = self.statement_uses(text);
        if uses.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len() + 64 * uses.len());
        let mut edits = Vec::with_capacity(uses.len());
        let mut last = 0;
        for (start, end, name, args) in uses {
            out.push_str(&text[last..start]);
            let new_start = out.len();
            let expansion = self.expand_verbatim(&name, &args, 0).unwrap_or_else(|| text[start..end].to_string());
            out.push_str(&expansion);
            let new_end = out.len();
            let newlines = text[start..end].matches('\n').count();
            out.extend(std::iter::repeat_n('\n', newlines));
            edits.push(Edit { new: (new_start as u32, new_end as u32), orig: (start as u32, end as u32), name, newlines: newlines as u32 });
            last = end;
        }
        out.push_str(&text[last..]);
        Some(Expanded { text: out, edits })
    }

    /// `name(args)` with the parameters replaced by the arguments as written (a `for` header's
    /// `int i = 0` must stay a declaration), statement macros in the result expanded too.
    fn expand_verbatim(&self, name: &str, args: &[String], depth: usize) -> Option<String> {
        if let Some(body) = self.statements.get(name) {
            return (depth <= MAX_EXPANSION_DEPTH).then(|| body.clone());
        }
        let (params, body) = self.defs.get(name)?;
        if depth > MAX_EXPANSION_DEPTH || (params.len() != args.len() && !(params.is_empty() && args.iter().all(|a| a.trim().is_empty()))) {
            return None;
        }
        let out = substitute(body, |w| params.iter().position(|p| p == w).map(|k| strip_comments_all(&args[k]).trim().replace('\n', " ")));
        let inner = self.statement_uses(&out);
        if inner.is_empty() {
            return Some(out);
        }
        let mut s = String::with_capacity(out.len() * 2);
        let mut last = 0;
        for (a, b, n, args) in inner {
            s.push_str(&out[last..a]);
            s.push_str(&self.expand_verbatim(&n, &args, depth + 1).unwrap_or_else(|| out[a..b].to_string()));
            last = b;
        }
        s.push_str(&out[last..]);
        Some(s)
    }

    /// Uses of statement macros in `text`: (start, end, name, arguments), in order; comments,
    /// string and character literals and preprocessor lines are skipped.
    fn statement_uses(&self, text: &str) -> Vec<(usize, usize, String, Vec<String>)> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        let mut line_start = true;
        while i < b.len() {
            let c = b[i];
            match c {
                b'\n' => {
                    line_start = true;
                    i += 1;
                    continue;
                }
                b' ' | b'\t' | b'\r' => {
                    i += 1;
                    continue;
                }
                b'#' if line_start => {
                    // A directive: to the end of its logical line.
                    while i < b.len() && b[i] != b'\n' {
                        if b[i] == b'\\' && i + 1 < b.len() {
                            i += 1;
                        }
                        i += 1;
                    }
                    continue;
                }
                _ => {}
            }
            line_start = false;
            if let Some(e) = skip_comment_or_literal(b, i) {
                i = e;
                continue;
            }
            if c.is_ascii_alphabetic() || c == b'_' {
                let s = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &text[s..i];
                if self.statements.contains_key(word) {
                    out.push((s, i, word.to_string(), Vec::new()));
                    continue;
                }
                if self.is_statement(word) {
                    let mut j = i;
                    while j < b.len() && b[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if b.get(j) == Some(&b'(') {
                        if let Some((end, args)) = call_arguments(text, j) {
                            out.push((s, end, word.to_string(), args));
                            i = end;
                        }
                    }
                }
                continue;
            }
            i += 1;
        }
        out
    }

    /// The replacement of `name(args)` with each parameter replaced by its argument in
    /// parentheses; None when `name` is no such macro, the argument count differs, or the
    /// replacement stringifies or pastes (`#`, `##`).
    pub fn expand(&self, name: &str, args: &[String]) -> Option<String> {
        let (params, body) = self.defs.get(name)?;
        let empty_call = params.is_empty() && args.len() <= 1 && args.iter().all(|a| a.trim().is_empty());
        if params.len() != args.len() && !empty_call {
            return None;
        }
        if body.contains('#') || body.trim().is_empty() {
            return None;
        }
        Some(substitute(body, |w| params.iter().position(|p| p == w).map(|k| format!("({})", args[k].trim()))))
    }
}

/// What [`FnMacros::expand_statements`] made of a file: the text to parse and where each
/// expansion came from.
#[derive(Debug, Clone)]
pub struct Expanded {
    pub text: String,
    /// In order of position.
    pub edits: Vec<Edit>,
}

/// One use of a statement macro: its expansion's byte range in the expanded text, the use's
/// range in the user's text, and the macro.
#[derive(Debug, Clone)]
pub struct Edit {
    pub new: (u32, u32),
    pub orig: (u32, u32),
    pub name: String,
    /// Newlines after the expansion, one for each line break inside the use.
    pub newlines: u32,
}

impl Expanded {
    /// The user's offset for an offset of the expanded text, and whether it lies strictly
    /// inside an expansion (then the offset is the use's start: nothing can be inserted there).
    pub fn original(&self, pos: u32) -> (u32, bool) {
        let k = self.edits.partition_point(|e| e.new.0 <= pos);
        if k == 0 {
            return (pos, false);
        }
        let e = &self.edits[k - 1];
        if pos < e.new.1 {
            return (e.orig.0, pos != e.new.0);
        }
        if pos == e.new.1 {
            return (e.orig.1, false);
        }
        // After the expansion: the newlines that stand for the use's lines, then the text.
        let after = pos - e.new.1;
        let newlines = e.newlines;
        if after <= newlines {
            return (e.orig.1, false);
        }
        (e.orig.1 + (after - newlines), false)
    }
}

/// Text with `body`'s identifiers replaced where `param` gives a replacement; literals copied.
fn substitute(body: &str, param: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(body.len() + 16);
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &body[s..i];
            match param(word) {
                Some(r) => out.push_str(&r),
                None => out.push_str(word),
            }
        } else if c == b'"' || c == b'\'' {
            // A literal: copied as is.
            let s = i;
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.push_str(&body[s..i]);
        } else {
            let ch = body[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The end of a comment or a string/character literal starting at `i`, if one does.
fn skip_comment_or_literal(b: &[u8], i: usize) -> Option<usize> {
    match (b[i], b.get(i + 1)) {
        (b'/', Some(b'/')) => Some(b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p)),
        (b'/', Some(b'*')) => Some(b[i + 2..].windows(2).position(|w| w == b"*/").map_or(b.len(), |p| i + 2 + p + 2)),
        (q @ (b'"' | b'\''), _) => {
            let mut j = i + 1;
            while j < b.len() && b[j] != q && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            Some((j + 1).min(b.len()))
        }
        _ => None,
    }
}

/// The bytes of `b` from `from` on that are code (outside comments and literals), with their
/// offsets.
fn code_bytes(b: &[u8], from: usize) -> impl Iterator<Item = (usize, u8)> + '_ {
    let mut i = from;
    std::iter::from_fn(move || {
        while i < b.len() {
            match skip_comment_or_literal(b, i) {
                Some(e) => i = e,
                None => {
                    i += 1;
                    return Some((i - 1, b[i - 1]));
                }
            }
        }
        None
    })
}

/// The arguments of a use whose `(` is at `open`: (the offset after its `)`, the arguments split
/// at top-level commas); None when the parentheses do not close.
fn call_arguments(text: &str, open: usize) -> Option<(usize, Vec<String>)> {
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut arg_start = open + 1;
    for (i, c) in code_bytes(text.as_bytes(), open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    args.push(text[arg_start..i].to_string());
                    return Some((i + 1, args));
                }
            }
            b',' if depth == 1 => {
                args.push(text[arg_start..i].to_string());
                arg_start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// A replacement that is a statement or a statement's head (see [`FnMacros::is_statement`]).
fn statement_shaped(body: &str) -> bool {
    let t = body.trim_start();
    let word: String = t.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let head = matches!(word.as_str(), "for" | "while" | "if" | "switch" | "do") || (word.is_empty() && t.starts_with('{'));
    if !head || body.contains('#') {
        return false;
    }
    let mut depth = 0i64;
    for (_, c) in code_bytes(body.as_bytes(), 0) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

/// `NAME(a, b) body` (no space before the parenthesis) -> (NAME, [a, b], body without
/// comments).
fn parse_define(def: &str) -> Option<(String, Vec<String>, String)> {
    let name_len = def.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    let (name, rest) = def.split_at(name_len);
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    let rest = rest.strip_prefix('(')?;
    let close = rest.find(')')?;
    let params: Vec<String> = rest[..close].split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
    if params.iter().any(|p| p == "..." || p.ends_with("...") || !p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')) {
        return None;
    }
    let body = strip_comments(&rest[close + 1..]);
    Some((name.to_string(), params, body.trim().to_string()))
}

/// `s` with every comment replaced by a space (literals kept).
/// `NAME body` of an object-like macro whose body is a statement (see [`statement_shaped`]).
fn parse_object_define(def: &str) -> Option<(String, String)> {
    let name_len = def.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(def.len());
    let (name, rest) = def.split_at(name_len);
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() || !rest.starts_with([' ', '\t']) {
        return None;
    }
    let body = strip_comments(rest).trim().to_string();
    statement_shaped(&body).then(|| (name.to_string(), body))
}

fn strip_comments_all(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        match skip_comment_or_literal(b, i) {
            Some(e) if b[i] == b'/' => {
                out.push_str(&s[last..i]);
                out.push(' ');
                i = e;
                last = e;
            }
            Some(e) => i = e,
            None => i += 1,
        }
    }
    out.push_str(&s[last..]);
    out
}

fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                return out;
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                match rest[b + 2..].find("*/") {
                    Some(e) => rest = &rest[b + 2 + e + 2..],
                    None => return out,
                }
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expression_macros_expand_with_parenthesised_arguments() {
        let mut m = FnMacros::default();
        m.scan("#define IDX(i, j) ((i) * n + (j)) /* row-major */\n#define SQ(x) \\\n  ((x)*(x))\n#define STR(x) #x\n#define N 10\n");
        assert_eq!(m.expand("IDX", &["a+1".into(), "b".into()]).unwrap(), "(((a+1)) * n + ((b)))");
        assert_eq!(m.expand("SQ", &["k".into()]).unwrap(), "(((k))*((k)))");
        assert_eq!(m.expand("STR", &["k".into()]), None);
        assert_eq!(m.expand("N", &[]), None);
        assert_eq!(m.expand("IDX", &["a".into()]), None);
        m.scan("#undef SQ\n");
        assert_eq!(m.expand("SQ", &["k".into()]), None);
    }

    #[test]
    fn statement_macros_expand_in_the_text_and_offsets_map_back() {
        let mut m = FnMacros::default();
        m.scan("#define EACH(init, cond, step) for (init; cond; step)\n#define BODY { n++; }\n#define IDX(i) ((i) * 2)\n");
        assert!(m.is_statement("EACH") && !m.is_statement("IDX"));
        let text = "int f(int n) {\n  EACH(int k = 0, // first\n       k < n, k++) { n += IDX(k); }\n  /* EACH(x) */ BODY\n  return n;\n}\n";
        let x = m.expand_statements(text).unwrap();
        assert_eq!(x.text.lines().count(), text.lines().count(), "lines keep their numbers");
        assert!(x.text.contains("for (int k = 0; k < n; k++)"), "{}", x.text);
        assert!(x.text.contains("/* EACH(x) */ { n++; }"), "comments are not expanded: {}", x.text);
        // The user's `{` after the use, and `return`, map back to where they are.
        let brace_new = x.text.find(") {").unwrap() + 2;
        let brace_old = text.find(") {").unwrap() + 2;
        assert_eq!(x.original(brace_new as u32), (brace_old as u32, false));
        let ret_new = x.text.find("return").unwrap() as u32;
        assert_eq!(x.original(ret_new), (text.find("return").unwrap() as u32, false));
        // Inside an expansion: the use's start, marked.
        let use_old = text.find("EACH").unwrap() as u32;
        assert_eq!(x.original(x.text.find("k < n").unwrap() as u32), (use_old, true));
        assert_eq!(x.original(x.text.find("for").unwrap() as u32), (use_old, false));
    }
}
