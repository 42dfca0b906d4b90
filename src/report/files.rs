//! What `mpicast report` reads and writes: prediction and sweep files told apart by their
//! schema, the combinations a report shows (one sweep, or predictions of one program), the
//! prediction page with its source lookup, and output files in directories made on the way.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::model::prediction::Prediction;
use crate::model::sweep::Sweep;
use crate::model::{read_artifact, Artifact};

/// What a report is made of.
pub enum Inputs {
    /// One sweep, with its file.
    Sweep(PathBuf, Box<Sweep>),
    /// Predictions of one program, with their files, at least one.
    Predictions(Vec<(PathBuf, Prediction)>),
}

/// Reads the files of a report: one sweep, or predictions of one program (one per machine
/// table); any other mix is refused, naming the files.
pub fn read_inputs(paths: &[PathBuf]) -> Result<Inputs> {
    let mut preds: Vec<(PathBuf, Prediction)> = Vec::new();
    let mut sweeps: Vec<(PathBuf, Sweep)> = Vec::new();
    for path in paths {
        match read_input(path)? {
            Input::Prediction(p) => preds.push((path.clone(), *p)),
            Input::Sweep(s) => sweeps.push((path.clone(), *s)),
        }
    }
    if let Some((sweep_path, _)) = sweeps.first() {
        if let Some((p, _)) = preds.first() {
            bail!(
                "{}: a prediction, {} a sweep: a report shows one sweep or predictions, not both",
                p.display(),
                sweep_path.display()
            );
        }
        if let Some((other, _)) = sweeps.get(1) {
            bail!(
                "{}: a second sweep: a report shows one sweep ({})",
                other.display(),
                sweep_path.display()
            );
        }
        let (path, sweep) = sweeps.remove(0);
        return Ok(Inputs::Sweep(path, Box::new(sweep)));
    }
    let (first_path, first) = &preds[0];
    for (path, p) in &preds[1..] {
        if p.program != first.program {
            bail!(
                "{}: predicts {}, {} predicts {}: a report compares predictions of one program",
                path.display(),
                p.program.join(" "),
                first_path.display(),
                first.program.join(" ")
            );
        }
    }
    Ok(Inputs::Predictions(preds))
}

/// The page of predictions read from files: relative source paths are as predict saw them,
/// from the current directory, else from the prediction files' directories.
pub fn predictions_page(preds: &[(PathBuf, Prediction)]) -> Result<String> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (path, _) in preds {
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dirs.contains(&d.to_path_buf()) {
                dirs.push(d.to_path_buf());
            }
        }
    }
    let list: Vec<Prediction> = preds.iter().map(|(_, p)| p.clone()).collect();
    super::html_predictions(&list, &dirs)
}

/// What an input file holds.
enum Input {
    Prediction(Box<Prediction>),
    Sweep(Box<Sweep>),
}

/// Reads a prediction or a sweep, by its "schema" field; other files get read_artifact's errors,
/// except that a file of another kind is told both kinds this command reads.
fn read_input(path: &Path) -> Result<Input> {
    let schema = std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|v| v.get("schema").and_then(|s| s.as_str()).map(str::to_string));
    match schema.as_deref() {
        Some(Sweep::SCHEMA) => Ok(Input::Sweep(Box::new(read_artifact::<Sweep>(path)?))),
        Some(s) if s != Prediction::SCHEMA => bail!(
            "{}: is a {s:?} file, expected {:?} or {:?}",
            path.display(),
            Prediction::SCHEMA,
            Sweep::SCHEMA
        ),
        // A prediction, or no schema to go by (not JSON, not an object...): the typed read says
        // what is wrong.
        _ => Ok(Input::Prediction(Box::new(read_artifact::<Prediction>(
            path,
        )?))),
    }
}

/// Writes an output file, making its directory first.
pub fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create directory", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
}
