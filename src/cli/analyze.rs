use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::frontend;
use crate::model::analysis::{CountStatus, ProgramModel};
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
    let bindings = args.build.bindings(&spec, &files);
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
        print_summary(&model);
    } else {
        print_tree(&model);
    }
    for d in &model.diagnostics {
        eprintln!("mpicast: {}:{}: {}", d.file, d.line, d.message);
    }
    Ok(ExitCode::SUCCESS)
}

fn status_word(s: CountStatus) -> &'static str {
    match s {
        CountStatus::Exact => "exact",
        CountStatus::Symbolic => "symbolic",
        CountStatus::NeedsTrace => "trace",
    }
}

fn print_summary(m: &ProgramModel) {
    println!("{:<40} {:>7} {:>7} {:>9} {:>7} {:>9}", "file", "blocks", "exact", "symbolic", "trace", "static");
    let mut total = (0, 0, 0, 0);
    for f in &m.files {
        let bs: Vec<_> = m.blocks.iter().filter(|b| &b.file == f).collect();
        let c = |s: CountStatus| bs.iter().filter(|b| b.count.status == s).count();
        let (e, s, t) = (c(CountStatus::Exact), c(CountStatus::Symbolic), c(CountStatus::NeedsTrace));
        let frac = if bs.is_empty() { 1.0 } else { (e + s) as f64 / bs.len() as f64 };
        println!("{:<40} {:>7} {:>7} {:>9} {:>7} {:>8.0}%", f, bs.len(), e, s, t, frac * 100.0);
        total = (total.0 + bs.len(), total.1 + e, total.2 + s, total.3 + t);
    }
    println!(
        "{:<40} {:>7} {:>7} {:>9} {:>7} {:>8.0}%",
        "total",
        total.0,
        total.1,
        total.2,
        total.3,
        m.static_fraction() * 100.0
    );
}

fn print_tree(m: &ProgramModel) {
    let depth_of = |id: &str| {
        let mut d = 0;
        let mut cur = m.blocks.iter().find(|b| b.id == id).and_then(|b| b.parent.clone());
        while let Some(p) = cur {
            d += 1;
            cur = m.blocks.iter().find(|b| b.id == p).and_then(|b| b.parent.clone());
        }
        d
    };
    let mut file = String::new();
    for b in &m.blocks {
        if b.file != file {
            file = b.file.clone();
            println!("{file}");
        }
        let indent = "  ".repeat(depth_of(&b.id) + 1);
        let count = match (&b.count.status, &b.count.expr, b.count.value) {
            (CountStatus::NeedsTrace, _, _) => "trace".to_string(),
            (_, Some(e), Some(v)) if !e.vars().is_empty() => format!("{e} = {v}"),
            (_, Some(e), _) => e.to_string(),
            _ => "?".into(),
        };
        let mut ops: Vec<(String, String)> = b.ops.iter().map(|(c, n)| (c.name().to_string(), n.to_string())).collect();
        ops.truncate(4);
        let ops: Vec<String> = ops.into_iter().map(|(c, n)| format!("{c}:{n}")).collect();
        let what = match b.kind {
            crate::model::analysis::BlockKind::Function => format!("fn {}", b.function),
            crate::model::analysis::BlockKind::Comm => {
                let c = m.comm.iter().find(|c| c.block == b.id);
                c.map(|c| format!("comm {}", c.call)).unwrap_or_else(|| "comm".into())
            }
            k => k.name().to_string(),
        };
        println!(
            "{indent}{what:<24} L{}-{}  x {} [{}]  {}",
            b.line_start,
            b.line_end,
            count,
            status_word(b.count.status),
            ops.join(" ")
        );
    }
}
