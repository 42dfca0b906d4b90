//! Function-like macros (`#define IDX(i, j) ((i) * n + (j))`), collected from every file's text
//! so that a use is analysed as its expansion (index arithmetic, not a call). Only macros whose
//! replacement is an expression are expanded, at the call: the statement around it keeps its
//! place in the user's file.

use std::collections::HashMap;

/// Function-like macros by name: parameters and replacement text.
#[derive(Debug, Default, Clone)]
pub struct FnMacros {
    defs: HashMap<String, (Vec<String>, String)>,
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
                continue;
            }
            let Some(def) = rest.strip_prefix("define") else { continue };
            if !def.starts_with([' ', '\t']) {
                continue;
            }
            if let Some((name, params, body)) = parse_define(def.trim_start()) {
                self.defs.insert(name, (params, body));
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
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
                match params.iter().position(|p| p == word) {
                    Some(k) => {
                        out.push('(');
                        out.push_str(args[k].trim());
                        out.push(')');
                    }
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
        Some(out)
    }
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
}
