//! The pieces every page shares: escaping, embedded JSON, the page skeleton with its error hook,
//! number formatting.

use std::fmt::Write;

/// Escapes text for HTML element content and quoted attribute values (also valid XML, for SVG).
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Control characters other than tab and newline are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// JSON to embed in `<script type="application/json">`: `<`, `>` and `&` occur in JSON only
/// inside strings, where their `\u` escapes mean the same, and without them no text from a file
/// can end the element (`</script>`) or open a comment.
pub fn script_json(v: &serde_json::Value) -> String {
    let s = serde_json::to_string(v).expect("JSON values serialise");
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("\\u003c"),
            '>' => o.push_str("\\u003e"),
            '&' => o.push_str("\\u0026"),
            c => o.push(c),
        }
    }
    o
}

/// Runs first in every page: records uncaught errors, rejected promises and console.error calls
/// in the `data-errors` attribute of `<html>` (the test reads it from the dumped DOM) and shows
/// them in a banner, so that a broken page says so.
const ERROR_HOOK: &str = r#"(function(){
var errs=[];
function note(m){errs.push(String(m));document.documentElement.setAttribute('data-errors',JSON.stringify(errs));
var b=document.getElementById('page-errors');if(b){b.hidden=false;b.textContent='This page hit an error: '+errs.join(' | ');}}
window.onerror=function(msg,src,line,col){note(msg+' (line '+line+':'+col+')');};
window.addEventListener('unhandledrejection',function(e){note('unhandled rejection: '+e.reason);});
var ce=console.error;console.error=function(){note(Array.prototype.join.call(arguments,' '));return ce.apply(console,arguments);};
})();"#;

/// A whole page: head with title, styles and the error hook, then `body` and `scripts`.
pub fn page(title: &str, body: &str, scripts: &[&str]) -> String {
    let mut o = String::with_capacity(body.len() + 32 * 1024);
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    // The page needs nothing from outside; say so to the browser too.
    o.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n");
    let _ = writeln!(o, "<title>{}</title>", escape(title));
    let _ = writeln!(o, "<script>{ERROR_HOOK}</script>");
    let _ = writeln!(o, "<style>\n{}</style>\n</head>\n<body>", include_str!("page.css"));
    o.push_str("<div id=\"page-errors\" class=\"errors\" hidden></div>\n");
    o.push_str(body);
    for s in scripts {
        let _ = writeln!(o, "<script>\n{s}</script>");
    }
    o.push_str("</body>\n</html>\n");
    o
}

/// Seconds with a unit chosen by magnitude: `2.53 ms`, `687.73 µs`, `4.0 ns`, `1.234 s`.
pub fn seconds(s: f64) -> String {
    super::table::seconds_as(s, super::table::PAGE)
}

/// A count: integers as such up to 10^9 (with thin separators), larger or fractional ones in
/// scientific notation.
pub fn count(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e9 {
        let digits = format!("{}", x.abs() as u64);
        let mut o = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                o.push('\u{2009}');
            }
            o.push(ch);
        }
        if x < 0.0 {
            o.insert(0, '-');
        }
        o
    } else if x.abs() >= 0.01 && x.abs() < 1e6 {
        format!("{x:.2}")
    } else {
        format!("{x:.3e}")
    }
}

/// A share as a percentage with one decimal.
pub fn percent(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}

/// The file name of a path, for headings and legends (the full path goes in a title).
pub fn short_path(p: &str) -> &str {
    p.rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
        assert_eq!(escape("a\u{1}b\tc"), "a\u{fffd}b\tc");
    }

    #[test]
    fn script_json_cannot_close_the_script() {
        let v = serde_json::json!({"s": "</script><!-- & -->"});
        let s = script_json(&v);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'), "{s}");
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn seconds_and_counts() {
        assert_eq!(seconds(0.0025282), "2.53 ms");
        assert_eq!(seconds(6.8773e-4), "687.73 µs");
        assert_eq!(seconds(4.026e-9), "4.0 ns");
        assert_eq!(seconds(12.5), "12.500 s");
        assert_eq!(count(1_200_000.0), "1\u{2009}200\u{2009}000");
        assert_eq!(count(12.0), "12");
        assert_eq!(count(0.5), "0.50");
        assert_eq!(count(3.2e12), "3.200e12");
        assert_eq!(short_path("examples/jacobi2d.c"), "jacobi2d.c");
    }
}
