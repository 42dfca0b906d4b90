//! Platform files as XML documents. roxmltree reads them (well-formedness, character
//! references, the byte range of every node and attribute); this module turns its errors into a
//! line and a sentence, finds the DOCTYPE (which roxmltree does not keep), and splices new
//! attribute values into the original text so that an edited platform differs from the file only
//! where it was edited.

use std::borrow::Cow;
use std::ops::Range;

use roxmltree::{Attribute, Document, Error, ParsingOptions, TextPos};

/// The 1-based line of a byte offset.
pub(super) struct Lines(Vec<usize>);

impl Lines {
    pub fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    pub fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&start| start <= offset)
    }

    /// The byte offset roxmltree's row and column (in characters) point at.
    fn offset(&self, text: &str, pos: TextPos) -> usize {
        let Some(&start) = self.0.get((pos.row as usize).saturating_sub(1)) else {
            return text.len();
        };
        text[start..]
            .char_indices()
            .nth((pos.col as usize).saturating_sub(1))
            .map_or(text.len(), |(i, _)| start + i)
    }
}

fn options<'a>() -> ParsingOptions<'a> {
    // A platform's DOCTYPE names SimGrid's DTD; it is never fetched, but entities declared in an
    // internal subset are expanded.
    ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    }
}

/// The text to parse: SimGrid's parser takes `--` inside comments, which XML does not, so the
/// dashes of such comments are blanked. The length stays: offsets, lines and everything outside
/// those comments are the file's.
pub(super) fn readable(text: &str) -> Cow<'_, str> {
    let mut fixed: Option<String> = None;
    loop {
        let t = fixed.as_deref().unwrap_or(text);
        let Err(Error::InvalidComment(p)) = Document::parse_with_options(t, options()) else {
            break;
        };
        let start = Lines::new(t).offset(t, p) + "<!--".len();
        let Some(len) = t.get(start..).and_then(|c| c.find("-->")) else {
            break;
        };
        let body = &t[start..start + len];
        // A comment that ends in `-` (`--->`) is refused by SimGrid too: left for parse to report.
        if body.ends_with('-') || !body.contains("--") {
            break;
        }
        let mut s = t.to_string();
        s.replace_range(start..start + len, &body.replace('-', " "));
        fixed = Some(s);
    }
    fixed.map_or(Cow::Borrowed(text), Cow::Owned)
}

/// Parses a platform file's text (after [`readable`]); an error is (line, what is wrong).
pub(super) fn parse(text: &str) -> Result<Document<'_>, (usize, String)> {
    Document::parse_with_options(text, options()).map_err(|e| describe(text, &e))
}

/// The document's `<!DOCTYPE ...>` declaration and its byte offset, if it has one: the prolog
/// before the root element, comments and processing instructions left out, holds only the XML
/// declaration and the DOCTYPE, which ends at the prolog's last `>`.
pub(super) fn doctype(doc: &Document) -> Option<(usize, String)> {
    let text = doc.input_text();
    let root = doc.root_element().range().start;
    let mut prolog = text[..root].to_string();
    for n in doc
        .root()
        .children()
        .filter(|n| n.is_comment() || n.is_pi())
    {
        let r = n.range();
        if r.end <= root {
            prolog.replace_range(r.clone(), &" ".repeat(r.len()));
        }
    }
    let start = prolog.find("<!DOCTYPE")?;
    let end = prolog.rfind('>')? + 1;
    (end > start).then(|| (start, text[start..end].to_string()))
}

/// The first 24 characters of the line from `offset` on, for messages.
fn excerpt(text: &str, offset: usize) -> String {
    let rest = text.get(offset..).unwrap_or("");
    let line = rest.lines().next().unwrap_or("").trim();
    let t: String = line.chars().take(24).collect();
    if line.chars().count() > 24 {
        format!("{t}...")
    } else {
        t
    }
}

fn describe(text: &str, e: &Error) -> (usize, String) {
    let lines = Lines::new(text);
    let row = |p: &TextPos| p.row as usize;
    let last_line = lines.line(text.trim_end().len().saturating_sub(1));
    match e {
        Error::UnexpectedEndOfStream => (
            last_line,
            "a tag is not closed (the file ends inside markup: truncated?)".into(),
        ),
        Error::UnclosedRootNode => match open_elements(text).last() {
            Some((open, line)) => (
                last_line,
                format!("the file ends inside <{open}> (opened at line {line}): truncated, or a missing </{open}>"),
            ),
            None => (last_line, "the file ends inside the root element (truncated?)".into()),
        },
        Error::UnexpectedCloseTag(open, close, p) => {
            let opened = open_elements(&text[..lines.offset(text, *p)])
                .last()
                .map(|(_, line)| format!(" (opened at line {line})"))
                .unwrap_or_default();
            (row(p), format!("</{close}> closes <{open}>{opened}: tags are not balanced"))
        }
        Error::NoRootNode => (1, "no XML element: not a SimGrid platform file".into()),
        Error::UnknownToken(p) => {
            let at = lines.offset(text, *p);
            let what = excerpt(text, at);
            let msg = if !text[at..].starts_with('<') {
                format!("text outside the <platform> element: {what:?}")
            } else if Document::parse_with_options(&text[..at], options()).is_ok() {
                format!("{what:?} after the end of the root element (one <platform> element per file)")
            } else {
                format!("{what:?} is not XML markup")
            };
            (row(p), msg)
        }
        Error::InvalidChar(quote @ (b'"' | b'\''), b'<', p) => {
            // The value ran from its opening quote to this `<` without the closing quote.
            let at = lines.offset(text, *p);
            let line = text[..at].rfind(*quote as char).map_or(row(p), |q| lines.line(q));
            (line, "an attribute value contains `<` (an unclosed quote?)".into())
        }
        Error::InvalidAttributeValue(p) => (row(p), "an attribute value contains `<`".into()),
        Error::InvalidChar(b'=', _, p) => (
            row(p),
            format!("an attribute has no value (expected name=\"...\") at {:?}", excerpt(text, lines.offset(text, *p))),
        ),
        Error::InvalidChar2("a quote", _, p) => (
            row(p),
            format!("an attribute value is not quoted: {:?}", excerpt(text, lines.offset(text, *p))),
        ),
        Error::InvalidName(p) => (
            row(p),
            format!(
                "expected a name at {:?} (a `<` starts a tag: write &lt; for a literal one)",
                excerpt(text, lines.offset(text, *p))
            ),
        ),
        Error::DuplicatedAttribute(name, p) => (row(p), format!("attribute {name} given twice")),
        Error::UnknownEntityReference(name, p) => (
            row(p),
            format!("unknown entity &{name}; (XML's own are &amp; &lt; &gt; &quot; &apos;; SimGrid reads no others)"),
        ),
        Error::MalformedEntityReference(p) => (
            row(p),
            "a `&` that starts no entity reference (write &amp; for a literal one)".into(),
        ),
        Error::InvalidComment(p) => (
            row(p),
            "a comment ends with `--->`, which neither XML nor SimGrid reads (end it with ` -->`)".into(),
        ),
        Error::InvalidString(expected, p) if lines.offset(text, *p) >= text.len() => (
            last_line,
            format!("the file ends before `{expected}`: a comment, CDATA section or declaration is not closed (truncated?)"),
        ),
        Error::NonXmlChar(c, p) => (row(p), format!("character {c:?} is not allowed in XML")),
        other => (row(&other.pos()), format!("not well-formed XML: {other}")),
    }
}

/// The elements still open at the end of `prefix` (outermost first) and the lines of their
/// start tags: the prefix is closed one end tag at a time (the parser names the element each
/// probe `</_>` should have closed) and read again.
fn open_elements(prefix: &str) -> Vec<(String, usize)> {
    let mut closed = prefix.to_string();
    for _ in 0..256 {
        match Document::parse_with_options(&closed, options()) {
            Ok(doc) => {
                let lines = Lines::new(prefix);
                let mut open = Vec::new();
                let mut node = doc.root_element();
                loop {
                    open.push((
                        node.tag_name().name().to_string(),
                        lines.line(node.range().start),
                    ));
                    match node.children().rev().find(|c| c.is_element()) {
                        Some(child) if child.range().end > prefix.len() => node = child,
                        _ => return open,
                    }
                }
            }
            Err(Error::UnclosedRootNode) => {
                match Document::parse_with_options(&format!("{closed}</_>"), options()) {
                    Err(Error::UnexpectedCloseTag(open, _, _)) => {
                        closed.push_str(&format!("</{open}>"));
                    }
                    _ => return Vec::new(),
                }
            }
            Err(_) => return Vec::new(),
        }
    }
    Vec::new()
}

/// The byte range of an attribute's value in `text`, inside its quotes.
pub(super) fn value_range(text: &str, a: &Attribute) -> Option<Range<usize>> {
    let r = a.range_value();
    let quote = text.get(r.end..r.end + 1)?;
    (r.start >= 1 && text.get(r.start - 1..r.start)? == quote && (quote == "\"" || quote == "'"))
        .then_some(r)
}

/// `text` with each range replaced by its string (ranges do not overlap; an empty range inserts).
pub(super) fn splice(text: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
    edits.sort_by_key(|(r, _)| (r.start, r.end));
    let mut out =
        String::with_capacity(text.len() + edits.iter().map(|(_, s)| s.len()).sum::<usize>());
    let mut at = 0;
    for (r, s) in edits {
        debug_assert!(r.start >= at, "overlapping edits");
        out.push_str(&text[at..r.start]);
        out.push_str(&s);
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";

    fn err(body: &str) -> (usize, String) {
        parse(&format!("{HEAD}{body}")).map(|_| ()).unwrap_err()
    }

    #[test]
    fn errors_name_the_line_and_the_construct() {
        let (line, msg) = err("<platform version=\"4.1\">\n  <zone id=\"w\" routing=\"Full\">\n    <host id=\"a\" speed=\"1Gf\"/>\n</platform>\n");
        assert_eq!(line, 6);
        assert_eq!(
            msg,
            "</platform> closes <zone> (opened at line 4): tags are not balanced"
        );
        let (line, msg) = err("<platform version=\"4.1\">\n  <zone id=\"w\" routing=\"Full\">\n    <host id=\"a\" speed=\"1Gf\"/>\n");
        assert_eq!(
            (line, msg.as_str()),
            (
                5,
                "the file ends inside <zone> (opened at line 4): truncated, or a missing </zone>"
            )
        );
        let (line, msg) = err("<platform version=\"4.1\">\n  <host id=\"a\" spe");
        assert_eq!(line, 4);
        assert!(msg.contains("tag is not closed"), "{msg}");
        let (line, msg) = err("<platform version=\"4.1\">\n  <host id=\"a\" speed=\"1Gf/>\n  <host id=\"b\" speed=\"1Gf\"/>\n</platform>\n");
        assert_eq!(
            (line, msg.as_str()),
            (4, "an attribute value contains `<` (an unclosed quote?)")
        );
        let (line, msg) = err("<platform version=\"4.1\"/>\n<platform/>\n");
        assert_eq!(line, 4);
        assert!(msg.contains("after the end of the root element"), "{msg}");
        let (line, msg) = err("<platform version=\"4.1\">\n<host id=\"a\" id=\"b\"/></platform>");
        assert_eq!((line, msg.as_str()), (4, "attribute id given twice"));
        let (line, msg) = err("<platform version=\"4.1\">\n<host id=\"a\" speed=1Gf/></platform>");
        assert_eq!(line, 4);
        assert!(msg.starts_with("an attribute value is not quoted"), "{msg}");
        let (line, msg) = err("<platform version=\"4.1\">\n<host id=\"a&x;\"/></platform>");
        assert_eq!(line, 4);
        assert!(msg.starts_with("unknown entity &x;"), "{msg}");
        let (line, msg) = parse("This is not a platform.\n").map(|_| ()).unwrap_err();
        assert_eq!(
            (line, msg.as_str()),
            (
                1,
                "text outside the <platform> element: \"This is not a platform.\""
            )
        );
        assert_eq!(parse("<!-- nothing -->\n").map(|_| ()).unwrap_err().0, 1);
    }

    #[test]
    fn double_dashes_in_comments_and_character_references_are_read() {
        let text = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
                    <!-- run it with --bw-scale 2 -->\n<platform version=\"4.1\"><link id=\"l\" bandwidth=\"&#49;25MBps\"/></platform>\n";
        assert!(parse(text).is_err(), "XML itself refuses `--` in a comment");
        let read = readable(text);
        assert_eq!(read.len(), text.len());
        let doc = parse(&read).unwrap();
        let link = doc.descendants().find(|n| n.has_tag_name("link")).unwrap();
        assert_eq!(link.attribute("bandwidth"), Some("125MBps"));
        assert_eq!(&read[link.range()], &text[link.range()]);
        let (at, decl) = doctype(&doc).unwrap();
        assert_eq!(
            (at, decl.as_str()),
            (
                22,
                "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">"
            )
        );
    }

    #[test]
    fn splices_keep_everything_else() {
        let text = "<a x='1'  y=\"2\"/>";
        let doc = Document::parse(text).unwrap();
        let a = doc.root_element();
        let x = value_range(text, &a.attributes().next().unwrap()).unwrap();
        let y = value_range(text, &a.attributes().nth(1).unwrap()).unwrap();
        let end = a.attributes().nth(1).unwrap().range().end;
        let out = splice(
            text,
            vec![
                (y, "20".into()),
                (end..end, " z=\"3\"".into()),
                (x, "10".into()),
            ],
        );
        assert_eq!(out, "<a x='10'  y=\"20\" z=\"3\"/>");
        assert_eq!(Lines::new("a\nb\n").line(2), 2);
        assert_eq!(Lines::new("a\nb\n").line(0), 1);
    }
}
