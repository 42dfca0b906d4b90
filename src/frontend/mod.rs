//! The front end (ChronosMix's program instruction characterizer): C/C++ sources -> blocks, op
//! counts, loop counts and communication sites. tree-sitter is used here and nowhere else, and
//! inside this module only lower.rs reads its nodes.

pub mod analyze;
pub mod ir;
mod kinds;
pub mod lower;
pub mod mpi;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::model::analysis::{Diagnostic, ProgramModel};

pub use analyze::Options;

const C_EXTENSIONS: &[&str] = &["c", "h"];
const CPP_EXTENSIONS: &[&str] = &["cc", "cpp", "cxx", "hpp", "hh", "hxx", "C"];

/// Source files bigger than this are not parsed (a diagnostic says so).
const MAX_FILE_BYTES: u64 = 64 << 20;

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

/// `-D NAME=VALUE` macros from a compile_commands.json (numbers only; the rest are ignored).
pub fn compile_commands_defines(path: &Path) -> Result<BTreeMap<String, f64>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let Some(entries) = v.as_array() else { bail!("{}: expected a JSON array of compile commands", path.display()) };
    let mut out = BTreeMap::new();
    for e in entries {
        let args: Vec<String> = if let Some(a) = e.get("arguments").and_then(|a| a.as_array()) {
            a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()
        } else if let Some(c) = e.get("command").and_then(|c| c.as_str()) {
            c.split_whitespace().map(str::to_string).collect()
        } else {
            continue;
        };
        let mut it = args.iter().peekable();
        while let Some(a) = it.next() {
            let def = if a == "-D" { it.next().cloned() } else { a.strip_prefix("-D").map(str::to_string) };
            if let Some(d) = def {
                let (name, value) = d.split_once('=').unwrap_or((&d, "1"));
                if let Ok(v) = value.parse::<f64>() {
                    out.insert(name.to_string(), v);
                }
            }
        }
    }
    Ok(out)
}

/// The IR of the given source files (those that can be read; the analysis reports the others).
pub fn lower_sources(files: &[String]) -> Vec<ir::Unit> {
    let mut units = Vec::new();
    for name in files {
        let p = Path::new(name);
        if std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) > MAX_FILE_BYTES {
            continue;
        }
        let Ok(bytes) = std::fs::read(p) else { continue };
        let text = String::from_utf8_lossy(&bytes);
        units.push(lower::lower_file(name, &text, lang_of(p).unwrap_or(lower::Lang::C)));
    }
    units
}

/// Analyses a set of source files into a ProgramModel. Unreadable or unparsable files become
/// diagnostics; only an empty input is an error.
pub fn analyze(files: &[PathBuf], opts: &Options) -> ProgramModel {
    let mut units = Vec::new();
    let mut diags = Vec::new();
    for f in files {
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
        let text = String::from_utf8_lossy(&bytes);
        if matches!(text, std::borrow::Cow::Owned(_)) {
            diags.push(Diagnostic { file: name.clone(), line: 0, message: "not valid UTF-8; invalid bytes replaced".into() });
        }
        let lang = lang_of(f).unwrap_or(lower::Lang::C);
        let unit = lower::lower_file(&name, &text, lang);
        for d in &unit.diags {
            diags.push(Diagnostic { file: name.clone(), line: d.line, message: d.message.clone() });
        }
        units.push(unit);
    }
    let mut a = analyze::Analyzer::new(opts);
    a.declare(&units);
    for u in &units {
        for f in &u.functions {
            a.function(&u.file, f);
        }
    }
    let mut model = a.finish();
    diags.append(&mut model.diagnostics);
    model.diagnostics = diags;
    model
}
