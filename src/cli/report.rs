//! `mpicast report FILE... -o OUT.html [--chrome-trace FILE]`: the HTML report of a prediction
//! (or of predictions of one program with different machine tables, side by side) or of a sweep,
//! and the Chrome/Perfetto trace of a prediction's timeline.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::model::prediction::Prediction;
use crate::model::sweep::Sweep;
use crate::model::{read_artifact, Artifact};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A sweep (mpicast/sweep JSON), or one or more predictions (mpicast/prediction JSON) of the
    /// same program, one per machine table: the report then shows each block's time per table.
    #[arg(required = true, value_name = "FILE")]
    inputs: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write the (first) prediction's timeline in the Trace Event Format (Perfetto,
    /// chrome://tracing).
    #[arg(long, value_name = "FILE")]
    chrome_trace: Option<PathBuf>,
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
        _ => Ok(Input::Prediction(Box::new(read_artifact::<Prediction>(path)?))),
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.output.is_none() && args.chrome_trace.is_none() {
        bail!("nothing to write: give -o FILE.html, --chrome-trace FILE, or both");
    }
    let mut preds: Vec<(PathBuf, Prediction)> = Vec::new();
    let mut sweeps: Vec<(PathBuf, Sweep)> = Vec::new();
    for path in &args.inputs {
        match read_input(path)? {
            Input::Prediction(p) => preds.push((path.clone(), *p)),
            Input::Sweep(s) => sweeps.push((path.clone(), *s)),
        }
    }
    if let Some((sweep_path, sweep)) = sweeps.first() {
        if let Some((p, _)) = preds.first() {
            bail!("{}: a prediction, {} a sweep: a report shows one sweep or predictions, not both", p.display(), sweep_path.display());
        }
        if let Some((other, _)) = sweeps.get(1) {
            bail!("{}: a second sweep: a report shows one sweep ({})", other.display(), sweep_path.display());
        }
        if args.chrome_trace.is_some() {
            bail!("{}: --chrome-trace needs a prediction with a timeline, this is a sweep", sweep_path.display());
        }
        let out = args.output.as_ref().expect("checked above");
        write(out, &crate::report::html_sweep(sweep)?)?;
        print!("{}", crate::report::sweep_table(sweep));
        println!("wrote {}", out.display());
        return Ok(ExitCode::SUCCESS);
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
    // Both outputs are made before either is written: an error leaves no half of the pair.
    let page = match &args.output {
        Some(_) => {
            // Relative source paths are as predict saw them: from the current directory, else
            // from the prediction file's directory.
            let mut dirs: Vec<PathBuf> = Vec::new();
            for (path, _) in &preds {
                if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    if !dirs.contains(&d.to_path_buf()) {
                        dirs.push(d.to_path_buf());
                    }
                }
            }
            let list: Vec<Prediction> = preds.iter().map(|(_, p)| p.clone()).collect();
            Some(crate::report::html_predictions(&list, &dirs)?)
        }
        None => None,
    };
    let trace = match &args.chrome_trace {
        Some(_) => Some(crate::report::chrome_trace(first).with_context(|| first_path.display().to_string())?),
        None => None,
    };
    if let (Some(out), Some(page)) = (&args.output, &page) {
        write(out, page)?;
    }
    if let (Some(t), Some(trace)) = (&args.chrome_trace, &trace) {
        write(t, trace)?;
    }
    print!("{}", crate::report::predictions_table(&preds));
    if let Some(out) = &args.output {
        println!("wrote {}", out.display());
    }
    if let Some(t) = &args.chrome_trace {
        println!("wrote {} ({} events, from {})", t.display(), first.timeline.len(), first_path.display());
    }
    Ok(ExitCode::SUCCESS)
}
