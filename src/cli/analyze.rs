use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::frontend;
use crate::model::{to_json, write_artifact};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Source files or directories (searched recursively for .c .h .cc .cpp .cxx .hpp).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    build: super::flags::BuildArgs,
    /// Count data-dependent branches as taken half the time instead of asking for a trace.
    #[arg(long)]
    assume_branches: bool,
    /// Write the ProgramModel (mpicast/analysis JSON) to FILE, `-` for stdout.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Print only the summary: blocks, the fraction counted statically, per file.
    #[arg(long)]
    summary: bool,
    /// Ops from the compiled code: build the program with -g and count, per block, the
    /// instructions the compiler emitted (vectorised, hoisted, inlined) instead of the source's
    /// operators.
    #[arg(long)]
    compiled: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let spec = args.build.spec(&args.inputs)?;
    let files = frontend::collect_sources(&args.inputs)?;
    let bindings = crate::predict::session::bindings(&spec, &files);
    let opts = frontend::Options { bindings, assume_branches: args.assume_branches };
    let mut model = frontend::analyze_built(&files, &opts, &spec);
    if args.compiled {
        match crate::objcode::build_debug(&files, &spec)? {
            Some(exe) => {
                let c = crate::objcode::compiled_ops(&model, &exe)?;
                eprintln!("mpicast: {}", c.summary());
                model = c.apply(&model);
            }
            None => eprintln!("mpicast: --compiled: a --build command is not rebuilt with -g; ops from the source"),
        }
    }
    match &args.json {
        Some(p) if p.as_os_str() == "-" => print!("{}", to_json(&model)),
        Some(p) => write_artifact(p, &model)?,
        None => {}
    }
    if args.json.as_ref().is_some_and(|p| p.as_os_str() == "-") {
        return Ok(ExitCode::SUCCESS);
    }
    if args.summary {
        print!("{}", crate::report::analysis_summary(&model));
    } else {
        print!("{}", crate::report::analysis_tree(&model));
    }
    for d in &model.diagnostics {
        eprintln!("mpicast: {}:{}: {}", d.file, d.line, d.message);
    }
    Ok(ExitCode::SUCCESS)
}
