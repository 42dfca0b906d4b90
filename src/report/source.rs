//! C and C++ source as escaped HTML, one string per line, with comments, strings, numbers,
//! keywords, preprocessor lines and MPI names in spans (classes `c`, `s`, `n`, `k`, `p`, `m`).
//! A small lexer of its own: it only colours, so anything it does not know stays plain text.

use super::html::escape;

const KEYWORDS: &[&str] = &[
    "auto", "bool", "break", "case", "char", "class", "const", "constexpr", "continue", "default", "delete", "do",
    "double", "else", "enum", "extern", "false", "float", "for", "goto", "if", "inline", "int", "long", "namespace",
    "new", "nullptr", "private", "protected", "public", "register", "restrict", "return", "short", "signed", "sizeof",
    "static", "struct", "switch", "template", "this", "true", "typedef", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "while", "size_t", "NULL",
];

/// The lines of `text` as HTML (without their line ends). A block comment spanning lines is
/// coloured on each; a line continuation inside a preprocessor line is not followed.
pub fn highlight(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_comment = false;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        out.push(line_html(line, &mut in_comment));
    }
    // A final newline ends the last line; it does not start another.
    if text.ends_with('\n') {
        out.pop();
    }
    out
}

fn span(o: &mut String, class: &str, text: &str) {
    if text.is_empty() {
        return;
    }
    o.push_str("<span class=\"");
    o.push_str(class);
    o.push_str("\">");
    o.push_str(&escape(text));
    o.push_str("</span>");
}

fn line_html(line: &str, in_comment: &mut bool) -> String {
    let mut o = String::new();
    let b = line.as_bytes();
    let mut i = 0;
    if *in_comment {
        match line.find("*/") {
            Some(end) => {
                span(&mut o, "c", &line[..end + 2]);
                i = end + 2;
                *in_comment = false;
            }
            None => {
                span(&mut o, "c", line);
                return o;
            }
        }
    } else if line.trim_start().starts_with('#') {
        span(&mut o, "p", line);
        return o;
    }
    let mut plain_from = i;
    while i < b.len() {
        let c = b[i];
        let token_end;
        let class;
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            token_end = b.len();
            class = "c";
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            match line[i + 2..].find("*/") {
                Some(e) => token_end = i + 2 + e + 2,
                None => {
                    token_end = b.len();
                    *in_comment = true;
                }
            }
            class = "c";
        } else if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            while j < b.len() && b[j] != c {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            token_end = (j + 1).min(b.len());
            class = "s";
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'.' || b[j] == b'_') {
                j += 1;
            }
            token_end = j;
            class = "n";
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            let word = &line[i..j];
            if KEYWORDS.contains(&word) {
                class = "k";
            } else if word.starts_with("MPI_") || word.starts_with("P2P") {
                class = "m";
            } else {
                // A plain identifier: part of the plain run.
                i = j;
                continue;
            }
            token_end = j;
        } else {
            // Advance by a whole character: slicing must stay on UTF-8 boundaries.
            i += line[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        o.push_str(&escape(&line[plain_from..i]));
        // Escapes inside strings may step past the end; `min` above keeps it in range, and every
        // token ends on an ASCII byte or the end of the line, so the slice is on a boundary.
        span(&mut o, class, &line[i..token_end]);
        i = token_end;
        plain_from = i;
    }
    o.push_str(&escape(&line[plain_from..]));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_tokens_and_escapes_text() {
        let lines = highlight("#include <mpi.h>\nint x = a<b && 3; // \"<c>\"\n");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], "<span class=\"p\">#include &lt;mpi.h&gt;</span>");
        assert_eq!(
            lines[1],
            "<span class=\"k\">int</span> x = a&lt;b &amp;&amp; <span class=\"n\">3</span>; \
             <span class=\"c\">// &quot;&lt;c&gt;&quot;</span>"
        );
    }

    #[test]
    fn block_comments_span_lines_and_strings_keep_escapes() {
        let lines = highlight("a /* one\ntwo */ MPI_Send(\"x\\\"y\", 'é');\n/* open");
        assert_eq!(lines[0], "a <span class=\"c\">/* one</span>");
        assert_eq!(
            lines[1],
            "<span class=\"c\">two */</span> <span class=\"m\">MPI_Send</span>(<span class=\"s\">&quot;x\\&quot;y&quot;</span>, \
             <span class=\"s\">&#39;é&#39;</span>);"
        );
        assert_eq!(lines[2], "<span class=\"c\">/* open</span>");
    }

    #[test]
    fn unterminated_string_and_non_ascii_do_not_panic() {
        for s in ["\"abc\\", "'", "é\"ü", "x = \"\\", "/*/", "."] {
            let _ = highlight(s);
        }
    }
}
