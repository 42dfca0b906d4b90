//! The front end (ChronosMix's program instruction characterizer): C/C++ sources -> blocks, op
//! counts, loop counts and communication sites. tree-sitter is used here and nowhere else, and
//! inside this module only lower.rs reads its nodes.

pub mod analyze;
pub mod ir;
mod kinds;
pub mod lower;
pub mod macros;
pub mod mpi;
pub mod preprocess;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::model::analysis::{Diagnostic, ProgramModel};
use crate::mpi::build::BuildSpec;

pub use analyze::Options;

const C_EXTENSIONS: &[&str] = &["c", "h"];
const CPP_EXTENSIONS: &[&str] = &["cc", "cpp", "cxx", "hpp", "hh", "hxx", "C"];

/// Source files bigger than this are not parsed (a diagnostic says so).
pub(crate) const MAX_FILE_BYTES: u64 = 64 << 20;

/// The C and C++ files named by `inputs` (files, or directories searched recursively), sorted.
pub fn collect_sources(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input).with_context(|| format!("{}: cannot read", input.display()))?;
        if meta.is_dir() {
            walk_dir(input, &mut out, 0)?;
        } else {
            out.push(input.clone());
        }
    }
    out.sort();
    out.dedup();
    if out.is_empty() {
        bail!("{}: no C or C++ source files found", inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    }
    Ok(out)
}

fn walk_dir(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<()> {
    if depth > 64 {
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot read directory", dir.display()))?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "build" || name == "target" {
            continue;
        }
        let ft = match e.file_type() {
            Ok(t) => t,
            Err(_) => continue,
        };
        if ft.is_dir() {
            walk_dir(&p, out, depth + 1)?;
        } else if ft.is_file() && lang_of(&p).is_some() {
            out.push(p);
        }
    }
    Ok(())
}

fn lang_of(p: &Path) -> Option<lower::Lang> {
    let ext = p.extension()?.to_str()?;
    if C_EXTENSIONS.contains(&ext) {
        Some(lower::Lang::C)
    } else if CPP_EXTENSIONS.contains(&ext) {
        Some(lower::Lang::Cpp)
    } else {
        None
    }
}

/// Analyses a set of source files into a ProgramModel. Unreadable or unparsable files become
/// diagnostics; only an empty input is an error.
pub fn analyze(files: &[PathBuf], opts: &Options) -> ProgramModel {
    analyze_selected(files, opts, &preprocess::Selected::default())
}

/// Analyses the sources as the build compiles them: conditional branches selected by the
/// program's own preprocessor with `spec`'s flags (see `preprocess`); a unit the preprocessor
/// refuses is analysed as written, with a diagnostic.
pub fn analyze_built(files: &[PathBuf], opts: &Options, spec: &BuildSpec) -> ProgramModel {
    let selected = preprocess::select(files, spec);
    analyze_selected(files, opts, &selected)
}

/// Analyses the sources with the texts `preprocess::select` chose.
pub fn analyze_selected(files: &[PathBuf], opts: &Options, selected: &preprocess::Selected) -> ProgramModel {
    lower::on_large_stack(|| analyze_here(files, opts, selected))
}

fn analyze_here(files: &[PathBuf], opts: &Options, selected: &preprocess::Selected) -> ProgramModel {
    let mut units = Vec::new();
    let mut diags = Vec::new();
    for (f, why) in &selected.problems {
        diags.push(Diagnostic { file: f.display().to_string(), line: 0, message: format!("analysed as written: {why}") });
    }
    // Function-like macros of every file (headers included), so that a use in any file is
    // analysed as its expansion.
    let mut macros = macros::FnMacros::default();
    macros.scan(&selected.macros);
    for f in files.iter().filter(|f| !selected.unused.contains(*f)) {
        if std::fs::metadata(f).is_ok_and(|m| m.len() <= MAX_FILE_BYTES) {
            match selected.texts.get(f) {
                Some(t) => macros.scan(t),
                None => {
                    if let Ok(b) = std::fs::read(f) {
                        macros.scan(&String::from_utf8_lossy(&b));
                    }
                }
            }
        }
    }
    for f in files.iter().filter(|f| !selected.unused.contains(*f)) {
        let name = f.display().to_string();
        let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        if size > MAX_FILE_BYTES {
            diags.push(Diagnostic { file: name, line: 0, message: format!("{size} bytes: too large to analyse, skipped") });
            continue;
        }
        let bytes = match std::fs::read(f) {
            Ok(b) => b,
            Err(e) => {
                diags.push(Diagnostic { file: name, line: 0, message: format!("cannot read: {e}") });
                continue;
            }
        };
        if bytes.iter().take(8192).filter(|&&b| b == 0).count() > 0 {
            diags.push(Diagnostic { file: name, line: 0, message: "binary file (NUL bytes), skipped".into() });
            continue;
        }
        let text = match selected.texts.get(f) {
            Some(t) => std::borrow::Cow::Borrowed(t.as_str()),
            None => String::from_utf8_lossy(&bytes),
        };
        if matches!(text, std::borrow::Cow::Owned(_)) {
            diags.push(Diagnostic { file: name.clone(), line: 0, message: "not valid UTF-8; invalid bytes replaced".into() });
        }
        let lang = lang_of(f).unwrap_or(lower::Lang::C);
        // A file large enough to be parsed in parts keeps only its declarations now and is
        // lowered again, a part at a time, when its functions are analysed: its whole IR
        // (some 70 bytes per byte of source) is never in memory.
        let large = lower::parted(text.as_bytes());
        let mut functions = Vec::new();
        let mut unit = lower::lower_file_parts(&name, &text, lang, &macros, &mut |fs| {
            functions.extend(fs.into_iter().map(|f| if large { declaration_only(f) } else { f }))
        });
        unit.functions = functions;
        for d in &unit.diags {
            diags.push(Diagnostic { file: name.clone(), line: d.line, message: d.message.clone() });
        }
        units.push((unit, large.then(|| (text.into_owned(), lang))));
    }
    let mut a = analyze::Analyzer::new(opts);
    a.declare(units.iter().map(|(u, _)| u));
    // Each function's IR is dropped once analysed (the declarations keep what calls need): the
    // IR and the blocks are never all in memory at once.
    for (mut u, again) in units {
        match again {
            None => {
                for f in std::mem::take(&mut u.functions) {
                    a.function(&u.file, &f);
                }
            }
            Some((text, lang)) => {
                lower::lower_file_parts(&u.file, &text, lang, &macros, &mut |fs| {
                    for f in fs {
                        a.function(&u.file, &f);
                    }
                });
            }
        }
    }
    let mut model = a.finish();
    diags.append(&mut model.diagnostics);
    model.diagnostics = diags;
    model
}

/// What the declarations of a function need (its name, return type and parameters, and a body
/// that is a single return statement, which calls evaluate): a longer body becomes empty.
fn declaration_only(mut f: ir::Function) -> ir::Function {
    let single_return = matches!(&f.body, ir::Stmt::Compound(v, _) if v.len() == 1 && matches!(v[0], ir::Stmt::Return(Some(_), _)));
    if !single_return {
        f.body = ir::Stmt::Compound(Vec::new(), f.body.span());
    }
    f
}

/// The IR of the given source files as the analysis saw them (conditional branches selected
/// by `spec`'s preprocessor, function-like macros expanded); unreadable files are left out
/// (the analysis reports them).
pub fn lower_sources(files: &[String], spec: &BuildSpec) -> Vec<ir::Unit> {
    let paths: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
    let selected = preprocess::select(&paths, spec);
    let mut macros = macros::FnMacros::default();
    macros.scan(&selected.macros);
    let mut texts: Vec<(String, PathBuf, String)> = Vec::new();
    for (name, p) in files.iter().zip(&paths) {
        if selected.unused.contains(p) || std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) > MAX_FILE_BYTES {
            continue;
        }
        let text = match selected.texts.get(p) {
            Some(t) => t.clone(),
            None => match std::fs::read(p) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(_) => continue,
            },
        };
        macros.scan(&text);
        texts.push((name.clone(), p.clone(), text));
    }
    // Headers found elsewhere (a test harness's `-I` directory) come first, so that a
    // definition in the program's own files wins: their functions are evaluated where the
    // program calls them.
    let outside = selected.outside.iter().map(|(p, text)| (p.display().to_string(), p.clone(), text.clone()));
    outside.chain(texts).map(|(name, p, text)| lower::lower_file_with(&name, &text, lang_of(&p).unwrap_or(lower::Lang::C), &macros)).collect()
}

