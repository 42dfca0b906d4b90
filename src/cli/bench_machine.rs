//! `mpicast bench machine`: the MTC. Wires arguments to src/machine.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::machine::{self, render, Options};
use crate::model::machine::MachineTable;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Compiler the kernels are built with: the one your program uses.
    #[arg(long, default_value = "mpicc")]
    cc: String,
    /// Compiler flags, one string (e.g. "-O3 -march=native").
    #[arg(long, default_value = "-O2", allow_hyphen_values = true)]
    cflags: String,
    /// Fewer samples (5 instead of 11): about 15 s instead of about 30 s on an idle host.
    #[arg(long)]
    quick: bool,
    /// Only these classes, comma separated (no memory section, no fit): for quick comparisons.
    #[arg(long, value_name = "LIST")]
    classes: Option<String>,
    /// Samples per kernel (default 5 with --quick, else 11).
    #[arg(long)]
    samples: Option<u32>,
    /// Write the table here (default: $XDG_CACHE_HOME/mpicast/machines/<host>_<cc>_<flags>.json).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the per-class ratio B/A of two machine tables; measures nothing.
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with_all = ["repeatability", "quick", "classes"])]
    compare: Option<Vec<PathBuf>>,
    /// Measure twice in a row and print how well the runs agree per class.
    #[arg(long)]
    repeatability: bool,
    /// Print the table as JSON on stdout instead of the readable table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(paths) = &args.compare {
        let a: MachineTable = crate::model::read_artifact(&paths[0])?;
        let b: MachineTable = crate::model::read_artifact(&paths[1])?;
        print!(
            "{}",
            render::compare(
                &a,
                &b,
                &paths[0].display().to_string(),
                &paths[1].display().to_string()
            )
        );
        return Ok(ExitCode::SUCCESS);
    }
    let opts = Options {
        cc: args.cc.clone(),
        cflags: args.cflags.split_whitespace().map(String::from).collect(),
        quick: args.quick,
        classes: match &args.classes {
            Some(s) => machine::parse_classes(s)?,
            None => Vec::new(),
        },
        samples: args.samples,
        min_sample_ms: None,
        progress: std::io::stderr().is_terminal(),
    };
    let first = machine::measure(&opts)?;
    let table = if args.repeatability {
        let second = machine::measure(&opts)?;
        let r = render::repeatability(&first, &second);
        print!("{}", r.text);
        second
    } else {
        first
    };
    let warning = table.load.as_ref().and_then(|l| l.warning("the machine table"));
    let path = match &args.output {
        Some(p) => p.clone(),
        // The host's default is never a table measured under load.
        None if warning.is_some() => crate::model::under_load_path(&machine::default_table_path(&table)),
        None => machine::default_table_path(&table),
    };
    crate::model::write_artifact(&path, &table)
        .with_context(|| format!("{}: cannot write the machine table", path.display()))?;
    if args.json {
        print!("{}", crate::model::to_json(&table));
    } else if !args.repeatability {
        print!("{}", render::table(&table));
    }
    eprintln!("mpicast: machine table written to {}", path.display());
    if let Some(w) = warning {
        eprintln!("mpicast: warning: {w} (the table says so: load.under_load)");
    }
    Ok(ExitCode::SUCCESS)
}
