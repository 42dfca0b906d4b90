//! What the compiler sees: each translation unit is run through the program's own preprocessor
//! (`mpicc -E` / `mpicxx -E` with the build's -D, -I and compile_commands.json flags), and the
//! line markers of its output say which lines of each user file survived. A conditional group
//! (`#if`/`#ifdef`/`#ifndef` ... `#elif`/`#else` ... `#endif`) keeps the branches the build
//! selects; the others, and the group's directive lines, are blanked (every byte but newlines
//! made a space), so byte offsets and line numbers stay those of the user's file and the
//! instrumenter's edits still land where the analysis says.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::mpi::build::{is_cpp, is_unit, BuildSpec};
use crate::mpi::run::{run_captured, Echo};

/// The text each file has for the compiler, and what could not be preprocessed.
#[derive(Debug, Default)]
pub struct Selected {
    /// File (as given) -> its text with unselected branches blanked; files that no
    /// preprocessed unit includes are absent (read them as they are).
    pub texts: HashMap<PathBuf, String>,
    /// (file, message) for units the preprocessor refused: they are analysed as written.
    pub problems: Vec<(PathBuf, String)>,
    /// Headers among the files that no unit includes, when every unit was preprocessed: the
    /// compiler never sees them, and neither does the analysis.
    pub unused: std::collections::HashSet<PathBuf>,
    /// The function-like `#define` lines of headers outside the files and outside the system
    /// (a header given with `-include`, or found through `-I` elsewhere), in the order the
    /// preprocessor saw them: their uses are analysed as expansions too.
    pub macros: String,
    /// Headers outside the files and outside the system that the units include (a test
    /// harness's header found through `-I`), each with its text as the build selects it, in
    /// the order first seen: their functions are evaluated by the static path (they are not
    /// instrumented, and not costed: their compute is not counted, their communication is).
    pub outside: Vec<(PathBuf, String)>,
}

/// Runs the preprocessor on every translation unit of `files` and selects their conditional
/// branches (and those of the headers they include) as the build does.
pub fn select(files: &[PathBuf], spec: &BuildSpec) -> Selected {
    let mut out = Selected::default();
    let canon: HashMap<PathBuf, &PathBuf> = files
        .iter()
        .map(|f| (std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()), f))
        .collect();
    // Lines that produced output, per file (canonical path), over every unit.
    let mut active: HashMap<PathBuf, BTreeSet<usize>> = HashMap::new();
    // The same for headers outside the files and the system, in the order first seen.
    let mut outside: Vec<(PathBuf, BTreeSet<usize>)> = Vec::new();
    // Units are preprocessed on every core (each is a compiler start-up and mpi.h: tens of ms).
    // Only conditional groups are selected: a unit need not be preprocessed when neither it nor
    // any analysed header has one.
    let has_groups = |f: &PathBuf| std::fs::read_to_string(f).is_ok_and(|t| t.lines().any(|l| directive(l) == Some(Cond::If)));
    let headers_have_groups = files.iter().filter(|f| !is_unit(f)).any(has_groups);
    // A header forced into every unit (`-include`) may define anything: every unit is read.
    let forced = spec.preprocessor_flags(None).iter().any(|a| a == "-include" || a.starts_with("-imacros"));
    // A unit that includes a header found elsewhere (`-I`) is read too: that header's
    // functions are evaluated.
    let names: std::collections::HashSet<&std::ffi::OsStr> = files.iter().filter_map(|f| f.file_name()).collect();
    let includes_outside = |f: &PathBuf| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().any(|l| {
                let Some(rest) = l.trim_start().strip_prefix('#') else { return false };
                let Some(q) = rest.trim_start().strip_prefix("include").map(str::trim_start) else { return false };
                let Some(q) = q.strip_prefix('"') else { return false };
                let name = q.split('"').next().unwrap_or("");
                Path::new(name).file_name().is_some_and(|n| !names.contains(n))
            })
        })
    };
    let units: Vec<&PathBuf> = files
        .iter()
        .filter(|f| is_unit(f) && (forced || headers_have_groups || has_groups(f) || includes_outside(f)))
        .collect();
    let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(units.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(usize, Result<String, String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(unit) = units.get(k) else { break };
                        mine.push((k, preprocess(unit, spec)));
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut results = results;
    results.sort_by_key(|r| r.0);
    let all_units = files.iter().filter(|f| is_unit(f)).count();
    let complete = !units.is_empty() && units.len() == all_units && results.iter().all(|r| r.1.is_ok());
    let mut seen: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut defines: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (k, r) in results {
        let unit = units[k];
        match r {
            Ok(text) => {
                let dir = unit.parent().unwrap_or(Path::new("."));
                mark_active(&text, dir, &canon, &mut active, &mut outside, &mut seen);
                outside_macros(&text, dir, &canon, &mut defines, &mut out.macros);
            }
            Err(e) => out.problems.push((unit.clone(), e)),
        }
    }
    if complete {
        for (c, f) in &canon {
            if !is_unit(f) && !seen.contains(c) {
                out.unused.insert((*f).clone());
            }
        }
    }
    for (c, lines) in &active {
        let Some(f) = canon.get(c) else { continue };
        let Ok(text) = std::fs::read_to_string(f) else { continue };
        if let Some(t) = blank_unselected(&text, lines) {
            out.texts.insert((*f).clone(), t);
        }
    }
    for (h, lines) in outside {
        let Ok(text) = std::fs::read_to_string(&h) else { continue };
        if text.len() as u64 > super::MAX_FILE_BYTES {
            continue;
        }
        let text = blank_unselected(&text, &lines).unwrap_or(text);
        out.outside.push((h, text));
    }
    out
}

/// `mpicc -E` (mpicxx for C++) of one unit, run in the unit's directory.
fn preprocess(unit: &Path, spec: &BuildSpec) -> Result<String, String> {
    let cc = if is_cpp(unit) { "mpicxx" } else { "mpicc" };
    let dir = unit.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = unit.file_name().map(PathBuf::from).unwrap_or_else(|| unit.to_path_buf());
    let mut c = Command::new(cc);
    // -dD keeps #define and #undef lines in the output, so a branch holding only macro
    // definitions is seen as selected too.
    c.args(["-E", "-dD"]).args(spec.preprocessor_flags(Some(unit))).arg(&name).current_dir(dir);
    let r = run_captured(&mut c, Echo::Keep, Some(60.0)).map_err(|e| format!("cannot run {cc} -E: {e}"))?;
    if r.timed_out {
        return Err(format!("{cc} -E took more than 60 s"));
    }
    if !r.status.success() {
        let first = r.tail.lines().find(|l| l.contains("error")).unwrap_or("").trim().to_string();
        return Err(format!("{cc} -E failed: {first}"));
    }
    Ok(r.stdout)
}

/// Where a line marker's file lies: among the analysed files, outside them and the system
/// (found through `-I` or `-include`), or the system's (a marker flagged 3, `<built-in>`, or a
/// path under /usr or /opt: the C library's and MPI's headers). Paths are canonical.
#[derive(Clone)]
enum Origin {
    User(PathBuf),
    Outside(PathBuf),
    System,
}

fn origin(marker: &str, file: &str, cwd: &Path, canon: &HashMap<PathBuf, &PathBuf>) -> Origin {
    if file.starts_with('<') {
        return Origin::System;
    }
    let p = Path::new(file);
    let p = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
    let c = std::fs::canonicalize(&p).unwrap_or(p);
    if canon.contains_key(&c) {
        return Origin::User(c);
    }
    let flagged = marker.rsplit('"').next().is_some_and(|flags| flags.split_whitespace().any(|f| f == "3"));
    if flagged || c.starts_with("/usr") || c.starts_with("/opt") {
        Origin::System
    } else {
        Origin::Outside(c)
    }
}

/// Records, from preprocessor output, which lines of the user's files produced text (and of
/// the headers outside them, in `outside`).
fn mark_active(
    text: &str,
    cwd: &Path,
    canon: &HashMap<PathBuf, &PathBuf>,
    active: &mut HashMap<PathBuf, BTreeSet<usize>>,
    outside: &mut Vec<(PathBuf, BTreeSet<usize>)>,
    seen: &mut std::collections::HashSet<PathBuf>,
) {
    let mut cache: HashMap<String, Origin> = HashMap::new();
    let mut cur = Origin::System;
    let mut line = 0usize;
    for l in text.lines() {
        if let Some((n, file)) = line_marker(l) {
            cur = cache.entry(file.to_string()).or_insert_with(|| origin(l, file, cwd, canon)).clone();
            match &cur {
                Origin::User(c) => {
                    seen.insert(c.clone());
                }
                Origin::Outside(c) if !outside.iter().any(|(h, _)| h == c) => outside.push((c.clone(), BTreeSet::new())),
                _ => {}
            }
            line = n;
            continue;
        }
        if !l.trim().is_empty() {
            match &cur {
                Origin::User(c) => {
                    active.entry(c.clone()).or_default().insert(line);
                }
                Origin::Outside(c) => {
                    if let Some((_, lines)) = outside.iter_mut().rev().find(|(h, _)| h == c) {
                        lines.insert(line);
                    }
                }
                Origin::System => {}
            }
        }
        line += 1;
    }
}

/// Appends to `out` the function-like `#define` lines (`-dD` output) that come from files
/// outside the analysed ones and the system's (see [`Origin`]), each once.
fn outside_macros(
    text: &str,
    cwd: &Path,
    canon: &HashMap<PathBuf, &PathBuf>,
    done: &mut std::collections::HashSet<String>,
    out: &mut String,
) {
    let mut keep = false;
    let mut cache: HashMap<String, bool> = HashMap::new();
    for l in text.lines() {
        if let Some((_, file)) = line_marker(l) {
            keep = *cache
                .entry(file.to_string())
                .or_insert_with(|| matches!(origin(l, file, cwd, canon), Origin::Outside(_)));
            continue;
        }
        if keep {
            if let Some(rest) = l.strip_prefix("#define ") {
                let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
                if rest[name_end..].starts_with('(') && done.insert(l.to_string()) {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
    }
}

/// `# 12 "file.c" 2` -> (12, "file.c").
fn line_marker(l: &str) -> Option<(usize, &str)> {
    let rest = l.strip_prefix("# ").or_else(|| l.strip_prefix("#line "))?;
    let (num, rest) = rest.split_once(' ')?;
    let n: usize = num.parse().ok()?;
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some((n, &rest[..end]))
}

/// A conditional directive's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cond {
    If,
    Elif,
    Else,
    Endif,
}

fn directive(line: &str) -> Option<Cond> {
    let t = line.trim_start().strip_prefix('#')?.trim_start();
    let word: String = t.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    match word.as_str() {
        "if" | "ifdef" | "ifndef" => Some(Cond::If),
        "elif" | "elifdef" | "elifndef" => Some(Cond::Elif),
        "else" => Some(Cond::Else),
        "endif" => Some(Cond::Endif),
        _ => None,
    }
}

/// A line that may hold code: not blank, not a directive, not obviously a comment.
fn is_code(line: &str) -> bool {
    let t = line.trim();
    !(t.is_empty() || t.starts_with('#') || t.starts_with("//") || t.starts_with("/*") || t.starts_with('*'))
}

/// One conditional group: its directive lines (1-based, each with its continuation lines) and
/// the lines between them.
struct Group {
    directives: Vec<(usize, usize)>,
}

/// The text with the unselected branches of every decided group blanked; None when nothing
/// changes. `active`: 1-based lines that produced preprocessor output.
fn blank_unselected(text: &str, active: &BTreeSet<usize>) -> Option<String> {
    // Physical lines with their byte spans.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            spans.push((start, i));
            start = i + 1;
        }
    }
    if start < text.len() {
        spans.push((start, text.len()));
    }
    let line = |k: usize| &text[spans[k].0..spans[k].1];
    // Groups, by a stack over directive lines (continuations joined).
    let mut groups: Vec<Group> = Vec::new();
    let mut stack: Vec<Group> = Vec::new();
    let mut k = 0;
    while k < spans.len() {
        let first = k;
        while line(k).trim_end().ends_with('\\') && k + 1 < spans.len() {
            k += 1;
        }
        let span = (first + 1, k + 1);
        match directive(line(first)) {
            Some(Cond::If) => stack.push(Group { directives: vec![span] }),
            Some(Cond::Elif | Cond::Else) => {
                if let Some(g) = stack.last_mut() {
                    g.directives.push(span);
                }
            }
            Some(Cond::Endif) => {
                if let Some(mut g) = stack.pop() {
                    g.directives.push(span);
                    groups.push(g);
                }
            }
            None => {}
        }
        k += 1;
    }
    // Code lines before each line (prefix sums), so that each branch is judged in O(1); blanked
    // ranges go into a difference array: deep nests stay linear.
    let mut code_before = vec![0usize; spans.len() + 2];
    for k in 0..spans.len() {
        code_before[k + 2] = code_before[k + 1] + usize::from(is_code(line(k)));
    }
    let has_code = |a: usize, b: usize| a < b && code_before[b] > code_before[a];
    let mut cover = vec![0i64; spans.len() + 2];
    let mut mark = |a: usize, b: usize| {
        // Lines a..b (1-based, b exclusive).
        if a < b {
            cover[a] += 1;
            cover[b] -= 1;
        }
    };
    let mut any = false;
    for g in &groups {
        // Branch b runs from the end of directive b to the start of directive b+1.
        let branches: Vec<(usize, usize)> = g.directives.windows(2).map(|w| (w[0].1 + 1, w[1].0)).collect();
        let live: Vec<bool> = branches.iter().map(|&(a, b)| a < b && active.range(a..b).next().is_some()).collect();
        // A branch is dead when it holds code and none of it reached the output (a branch of
        // comments alone, or empty, says nothing).
        let dead: Vec<bool> = branches.iter().zip(&live).map(|(&(a, b), &l)| !l && has_code(a, b)).collect();
        if !live.iter().any(|&l| l) && !dead.iter().any(|&d| d) {
            continue; // undecided
        }
        any = true;
        for &(a, b) in &g.directives {
            mark(a, b + 1);
        }
        for (&(a, b), &l) in branches.iter().zip(&live) {
            if !l {
                mark(a, b);
            }
        }
    }
    if !any {
        return None;
    }
    let mut blank: Vec<usize> = Vec::new();
    let mut depth = 0i64;
    for (l, c) in cover.iter().enumerate().skip(1) {
        depth += c;
        if depth > 0 && l <= spans.len() {
            blank.push(l);
        }
    }
    let mut out = text.as_bytes().to_vec();
    for l in blank {
        if let Some(&(s, e)) = spans.get(l - 1) {
            for b in &mut out[s..e] {
                if *b != b'\n' && *b != b'\r' {
                    *b = b' ';
                }
            }
        }
    }
    // Only ASCII bytes of whole lines were replaced: still UTF-8.
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unselected_branches_and_their_directives_are_blanked_in_place() {
        let text = "int a;\n#ifdef DOUBLE\ntypedef double real;\n#else\ntypedef float real;\n#endif\nint b;\n";
        // The preprocessor printed lines 1, 3 and 7.
        let active: BTreeSet<usize> = [1, 3, 7].into_iter().collect();
        let out = blank_unselected(text, &active).unwrap();
        assert_eq!(out.len(), text.len());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[2], "typedef double real;");
        assert!(lines[1].trim().is_empty() && lines[3].trim().is_empty() && lines[4].trim().is_empty() && lines[5].trim().is_empty());
        assert_eq!(lines[6], "int b;");
    }

    #[test]
    fn undecided_groups_are_left_alone_and_nesting_follows_the_outer_branch() {
        let text = "#if A\n#if B\n// x;\n#endif\n#endif\n#ifdef EMPTY\n#endif\n";
        assert!(blank_unselected(text, &BTreeSet::new()).is_none());
        // A branch with code that printed nothing is compiled out, #else or not.
        let text = "{\n#ifdef GPU\n} else if (k) {\n#endif\n}\n";
        let active: BTreeSet<usize> = [1, 5].into_iter().collect();
        let out = blank_unselected(text, &active).unwrap();
        assert_eq!(out.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>(), ["{", "}"]);
        let text = "#if A\nx;\n#if B\ny;\n#else\nz;\n#endif\n#endif\n";
        let active: BTreeSet<usize> = [2, 6].into_iter().collect();
        let out = blank_unselected(text, &active).unwrap();
        let kept: Vec<&str> = out.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        assert_eq!(kept, ["x;", "z;"]);
    }

    #[test]
    fn line_markers_parse() {
        assert_eq!(line_marker("# 12 \"a b.c\" 2"), Some((12, "a b.c")));
        assert_eq!(line_marker("# 1 \"<built-in>\""), Some((1, "<built-in>")));
        assert_eq!(line_marker("#pragma omp parallel"), None);
    }
}
