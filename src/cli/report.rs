//! `mpicast report FILE... -o OUT.html [--chrome-trace FILE]`: the HTML report of a prediction
//! (or of predictions of one program with different machine tables, side by side) or of a sweep,
//! and the Chrome/Perfetto trace of a prediction's timeline.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::report::files::{predictions_page, read_inputs, write, Inputs};

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

pub fn run(args: Args) -> Result<ExitCode> {
    if args.output.is_none() && args.chrome_trace.is_none() {
        bail!("nothing to write: give -o FILE.html, --chrome-trace FILE, or both");
    }
    let preds = match read_inputs(&args.inputs)? {
        Inputs::Sweep(sweep_path, sweep) => {
            if args.chrome_trace.is_some() {
                bail!("{}: --chrome-trace needs a prediction with a timeline, this is a sweep", sweep_path.display());
            }
            let out = args.output.as_ref().expect("checked above");
            write(out, &crate::report::html_sweep(&sweep)?)?;
            print!("{}", crate::report::sweep_table(&sweep));
            println!("wrote {}", out.display());
            return Ok(ExitCode::SUCCESS);
        }
        Inputs::Predictions(preds) => preds,
    };
    let (first_path, first) = &preds[0];
    // Both outputs are made before either is written: an error leaves no half of the pair.
    let page = args.output.as_ref().map(|_| predictions_page(&preds)).transpose()?;
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
