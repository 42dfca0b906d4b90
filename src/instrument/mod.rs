//! Instrumented runs (`mpicast trace`): copy the program's sources into a work directory, put a
//! counter in every block the analysis could not count (`rewrite`), build the copy with the
//! trace runtime (instrument/mpicast_rt.c: counters, PMPI wrappers, loop folding) linked in,
//! run it under mpirun, and collect the per-rank traces (traces/FORMAT.md) with the analysis and
//! a `mpicast/tracemeta` artifact. The user's files are only ever read.

pub mod rewrite;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{bail, Context, Result};

use crate::frontend;
use crate::model::analysis::{BlockKind, CountStatus, ProgramModel};
use crate::model::trace::{Footprint, LoopExits, RankTrace, Sampling, TimedCall, TraceMeta, UncountedBlock};
use crate::model::write_artifact;
use crate::mpi::build::{self, ext_of, show, BuildFailure, BuildSpec, UNITS};
use crate::mpi::launch::LaunchSpec;
use crate::mpi::run::{self, Echo};

/// A build or a run that failed: a one-line message (what failed, where the work directory
/// is) and the last lines of the compiler's or mpirun's output.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct RunFailure {
    pub message: String,
    pub output_tail: String,
}

/// The C trace runtime, compiled into each work directory.
pub const RUNTIME_C: &str = include_str!("../../instrument/mpicast_rt.c");
pub const RUNTIME_H: &str = include_str!("../../instrument/mpicast_rt.h");
/// The P2PDC runtime (over MPI), linked into programs that call P2Pinit without defining it.
pub const P2PDC_C: &str = include_str!("../../instrument/p2pdc.c");
pub const P2PDC_H: &str = include_str!("../../instrument/p2pdc.h");

/// What to trace and how.
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    /// One source file, or a directory searched recursively.
    pub source: PathBuf,
    pub ranks: u32,
    /// Trace directory; default traces/<program>-n<N>.
    pub output: Option<PathBuf>,
    /// How the program is built (the instrumented copy and the plain one).
    pub build: BuildSpec,
    /// How it is launched.
    pub launch: LaunchSpec,
    /// The program's arguments.
    pub args: Vec<String>,
    pub all_blocks: bool,
    pub time_blocks: bool,
    pub sample_iterations: Option<u64>,
    /// -D bindings for the analysis (the program's arguments are bound too).
    pub bindings: BTreeMap<String, f64>,
    /// Keep the work directory after a successful run.
    pub keep_work: bool,
    /// Use this work directory (kept) instead of a temporary one.
    pub work_dir: Option<PathBuf>,
    /// Also build and run the program without instrumentation, for the slowdown.
    pub compare_plain: bool,
    /// Stop mpirun after this many seconds.
    pub timeout_s: Option<f64>,
    /// Where the program's output goes (predict sends it to stderr: its stdout is the result).
    pub echo: Echo,
}

/// A finished trace.
#[derive(Debug, Clone)]
pub struct TraceOutcome {
    pub dir: PathBuf,
    pub meta: TraceMeta,
    pub blocks: usize,
    /// Problems that did not stop the run (blocks left uncounted, validation).
    pub warnings: Vec<String>,
}

const SOURCE_EXTS: &[&str] = &[
    "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "C", "c++", "inc", "def",
];

/// The program's name: the file's stem, or the directory's name.
pub fn program_name(source: &Path) -> String {
    let p = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
    let name = if p.is_dir() {
        p.file_name()
    } else {
        p.file_stem()
    };
    name.map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "program".into())
}

/// Parameter bindings from the program's arguments: each parameter read from argv[i] gets
/// args[i-1] when it is a number, else the program's own default.
pub fn argv_bindings(model: &ProgramModel, args: &[String]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for p in model.parameters.iter().filter(|p| p.origin == "argv") {
        let Some(i) = p.argv_index else { continue };
        let v = args
            .get(i as usize - 1)
            .and_then(|a| a.trim().parse::<f64>().ok())
            .or(p.default);
        if let Some(v) = v {
            out.insert(p.name.clone(), v);
        }
    }
    out
}

/// The blocks that get a counter: those the analysis could not count, or all of them.
pub fn blocks_to_count(model: &ProgramModel, all: bool) -> Vec<u32> {
    (0..model.blocks.len() as u32)
        .filter(|&i| all || model.blocks[i as usize].count.status == CountStatus::NeedsTrace)
        .collect()
}

/// The outermost time-step loop of main: the first loop of main not inside another loop that
/// communicates (an MPI call in it, or a call to a function that makes one) and whose trip
/// count the analysis knows. Returns (block index, trip count).
pub fn time_step_loop(model: &ProgramModel) -> Result<(u32, u64)> {
    let index: HashMap<&str, usize> = model
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| (b.id.as_str(), i))
        .collect();
    let parent = |i: usize| {
        model.blocks[i]
            .parent
            .as_deref()
            .and_then(|p| index.get(p).copied())
    };
    // Functions that communicate, through their calls too.
    let mut comm_fns: std::collections::HashSet<&str> = model
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Comm)
        .map(|b| b.function.as_str())
        .collect();
    loop {
        let before = comm_fns.len();
        for c in &model.calls {
            if comm_fns.contains(c.callee.as_str()) {
                comm_fns.insert(c.caller.as_str());
            }
        }
        if comm_fns.len() == before {
            break;
        }
    }
    let within = |i: usize, ancestor: usize| {
        let mut cur = Some(i);
        while let Some(c) = cur {
            if c == ancestor {
                return true;
            }
            cur = parent(c);
        }
        false
    };
    let mut candidates = Vec::new();
    for (i, b) in model.blocks.iter().enumerate() {
        if b.kind != BlockKind::Loop || b.function != "main" {
            continue;
        }
        let mut outer = true;
        let mut cur = parent(i);
        while let Some(c) = cur {
            if model.blocks[c].kind == BlockKind::Loop {
                outer = false;
            }
            cur = parent(c);
        }
        if !outer {
            continue;
        }
        let communicates = model
            .blocks
            .iter()
            .enumerate()
            .any(|(j, d)| d.kind == BlockKind::Comm && within(j, i))
            || model.calls.iter().any(|c| {
                comm_fns.contains(c.callee.as_str())
                    && index.get(c.block.as_str()).is_some_and(|&j| within(j, i))
            });
        if communicates {
            candidates.push(i);
        }
    }
    let Some(&first) = candidates.first() else {
        bail!("--sample-iterations: main has no outermost loop that communicates");
    };
    for &i in &candidates {
        let b = &model.blocks[i];
        if let Some(t) = &b.trip {
            if t.status != CountStatus::NeedsTrace {
                if let Some(v) = t.value.filter(|v| v.is_finite() && *v >= 0.0) {
                    return Ok((i as u32, v.round() as u64));
                }
            }
        }
    }
    let b = &model.blocks[first];
    bail!(
        "--sample-iterations: the time-step loop at {}:{} has no trip count known before the run{}",
        b.file,
        b.line_start,
        b.trip
            .as_ref()
            .and_then(|t| t.reason.as_ref())
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    )
}

/// Copies the sources into `dst`: a directory's whole tree (without .git and target), or a
/// file's C/C++ neighbours (not recursively).
pub fn copy_sources(source: &Path, is_dir: bool, dst: &Path) -> Result<()> {
    std::fs::create_dir_all(dst)
        .with_context(|| format!("{}: cannot create directory", dst.display()))?;
    if is_dir {
        // A work directory inside the source tree is not copied into itself.
        let skip = std::fs::canonicalize(dst.parent().unwrap_or(dst)).ok();
        return copy_tree(source, dst, skip.as_deref(), 0);
    }
    let parent = source
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for e in std::fs::read_dir(parent)
        .with_context(|| format!("{}: cannot read directory", parent.display()))?
    {
        let e = e?;
        let p = e.path();
        if p.is_file() && SOURCE_EXTS.contains(&ext_of(&p)) {
            std::fs::copy(&p, dst.join(e.file_name()))
                .with_context(|| format!("{}: cannot copy", p.display()))?;
        }
    }
    let name = source.file_name().context("source has no file name")?;
    std::fs::copy(source, dst.join(name))
        .with_context(|| format!("{}: cannot copy", source.display()))?;
    Ok(())
}

fn copy_tree(src: &Path, dst: &Path, skip: Option<&Path>, depth: usize) -> Result<()> {
    if depth > 32 {
        return Ok(());
    }
    for e in std::fs::read_dir(src)
        .with_context(|| format!("{}: cannot read directory", src.display()))?
    {
        let e = e?;
        let name = e.file_name();
        if name == ".git" || name == "target" {
            continue;
        }
        let p = e.path();
        let to = dst.join(&name);
        let Ok(meta) = std::fs::metadata(&p) else {
            continue;
        }; // dangling link
        if meta.is_dir() {
            if skip.is_some() && std::fs::canonicalize(&p).ok().as_deref() == skip {
                continue;
            }
            std::fs::create_dir_all(&to)
                .with_context(|| format!("{}: cannot create directory", to.display()))?;
            copy_tree(&p, &to, skip, depth + 1)?;
        } else if meta.is_file() {
            std::fs::copy(&p, &to).with_context(|| format!("{}: cannot copy", p.display()))?;
        }
    }
    Ok(())
}

/// The timed calls worth charging: the smallest, as long as together they take at most 1% of
/// the ranks' spans, are left out (a call made once, such as `strtol` on an argument, measures
/// a cold cache and the dynamic linker's first binding: microseconds that vary from run to
/// run, where its `call` op is steady).
fn significant_calls(mut calls: Vec<TimedCall>, spans_s: f64) -> Vec<TimedCall> {
    let total = |c: &TimedCall| c.ns * 1e-9 * c.calls as f64;
    calls.sort_by(|a, b| total(a).total_cmp(&total(b)));
    let mut small = 0.0;
    let cut = calls
        .iter()
        .take_while(|c| {
            small += total(c);
            small <= 0.01 * spans_s
        })
        .count();
    let mut kept = calls.split_off(cut);
    kept.sort_by_key(|c| (c.block, c.call));
    kept
}

/// The generated definition of the counters and the list of counted blocks.
fn blocks_c(nblocks: usize, counted: &[u32], loops: &[u32], probes: usize, calls: usize) -> String {
    let list = |v: &[u32]| if v.is_empty() { "0".to_string() } else { v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ") };
    let (ids, loop_ids) = (list(counted), list(loops));
    format!(
        "/* generated by mpicast trace: block counters (instrument/mpicast_rt.h) */\n\
         unsigned long long __mpicast_bc[{}];\n\
         const unsigned int __mpicast_ids[] = {{{ids}}};\n\
         const unsigned int __mpicast_nids = {};\n\
         unsigned long long __mpicast_hi[{probes_len}], __mpicast_nlo[{probes_len}], __mpicast_lines[64 * {probes_len}];\n\
         unsigned int __mpicast_seen[{probes_len}], __mpicast_reused[{probes_len}];\n\
         const unsigned int __mpicast_nprobes = {probes};\n\
         unsigned long long __mpicast_cn[{calls_len}], __mpicast_ctn[{calls_len}], __mpicast_cns[{calls_len}];\n\
         const unsigned int __mpicast_ncalls = {calls};\n\
         unsigned long long __mpicast_le[4 * {}];\n\
         const unsigned int __mpicast_loops[] = {{{loop_ids}}};\n\
         const unsigned int __mpicast_nloops = {};\n",
        nblocks.max(1),
        counted.len(),
        nblocks.max(1),
        loops.len(),
        probes_len = probes.max(1),
        // One more: the runtime times nothing on it to know what timing costs.
        calls_len = calls + 1,
    )
}

/// How the program is built: the commands (run in the source copy), and the executable.
struct Build {
    steps: Vec<Vec<String>>,
    text: String,
    exe: Option<PathBuf>,
}

/// The default build of `units` (copies of `originals`) into `exe`, with `extra` objects on
/// the link line.
fn default_build(
    units: &[PathBuf],
    originals: &[PathBuf],
    exe: &Path,
    spec: &BuildSpec,
    extra: &[PathBuf],
    objdir: &Path,
) -> Build {
    let steps = spec.default_steps(units, originals, exe, extra, objdir);
    let text = steps.iter().map(|c| show(c)).collect::<Vec<_>>().join(" && ");
    Build {
        steps,
        text,
        exe: Some(exe.to_path_buf()),
    }
}

fn custom_build(cmd: &str, root: &Path, exe: Option<&Path>) -> Build {
    Build {
        steps: vec![vec!["sh".into(), "-c".into(), cmd.to_string()]],
        text: cmd.to_string(),
        exe: exe.map(|e| root.join(e)),
    }
}

/// Runs a build in `cwd`; a failing step is a RunFailure with the compiler's last lines.
fn run_build(
    build: &Build,
    cwd: &Path,
    path_prefix: Option<&Path>,
    what: &str,
    work: &Path,
) -> Result<PathBuf> {
    let since = SystemTime::now() - std::time::Duration::from_secs(1);
    let note = format!("; work directory kept: {}", work.display());
    if let Err(e) = build::run_steps(&build.steps, cwd, path_prefix, what, &note) {
        return Err(match e.downcast::<BuildFailure>() {
            Ok(f) => RunFailure {
                message: f.message,
                output_tail: f.output_tail,
            }
            .into(),
            Err(e) => e,
        });
    }
    build::find_executable(cwd, since, build.exe.as_deref(), ".mpicast").map_err(|msg| {
        RunFailure {
            message: format!("{what}: {msg}{note}"),
            output_tail: String::new(),
        }
        .into()
    })
}

fn remove_old_traces(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let is_rank = name.starts_with("rank-")
            && (name.ends_with(".trace") || name.ends_with(".trace.part"));
        if is_rank || name == "meta.json" || name == "analysis.json" {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// `key=value` lines of a rank's statistics file.
fn read_stats(path: &Path) -> HashMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Instruments, builds, runs and collects. Build and run failures are [`RunFailure`]s (with the
/// tail of the compiler's or mpirun's output); a failed run still leaves its traces, the
/// incomplete ones flagged.
pub fn trace(opts: &TraceOptions) -> Result<TraceOutcome> {
    if opts.ranks == 0 {
        bail!("-n must be at least 1");
    }
    let source = &opts.source;
    let is_dir = std::fs::metadata(source)
        .with_context(|| format!("{}: cannot read", source.display()))?
        .is_dir();
    let program = program_name(source);
    let mut warnings = Vec::new();

    // The analysis, with the program's arguments bound.
    let files = frontend::collect_sources(std::slice::from_ref(source))?;
    let selected = frontend::preprocess::select(&files, &opts.build);
    let analyse = |b: &BTreeMap<String, f64>| {
        frontend::analyze_selected(
            &files,
            &frontend::Options {
                bindings: b.clone(),
                assume_branches: false,
            },
            &selected,
        )
    };
    let mut model = analyse(&opts.bindings);
    let from_args = argv_bindings(&model, &opts.args);
    if !from_args.is_empty() {
        let mut b = opts.bindings.clone();
        for (k, v) in from_args {
            b.entry(k).or_insert(v);
        }
        model = analyse(&b);
    }
    let want = blocks_to_count(&model, opts.all_blocks);
    let sample = match opts.sample_iterations {
        None => None,
        Some(k) => {
            let (block, trip) = time_step_loop(&model)?;
            if k >= trip {
                warnings.push(format!(
                    "--sample-iterations {k}: the time-step loop makes only {trip} iterations; running them all"
                ));
                None
            } else {
                Some((block, trip, k))
            }
        }
    };

    // The work directory and the instrumented copy.
    let work = match &opts.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .with_context(|| format!("{}: cannot create directory", d.display()))?;
            std::fs::canonicalize(d)?
        }
        None => tempfile::Builder::new()
            .prefix("mpicast-trace-")
            .tempdir()
            .context("cannot create a work directory")?
            .keep(),
    };
    let keep = opts.keep_work || opts.work_dir.is_some();
    let result = trace_in(
        opts,
        &work,
        is_dir,
        &program,
        &files,
        model,
        &want,
        sample,
        &mut warnings,
    );
    match result {
        Ok(mut outcome) => {
            if keep {
                outcome.meta.work_dir = Some(work.display().to_string());
                write_artifact(&outcome.dir.join("meta.json"), &outcome.meta)?;
            } else {
                let _ = std::fs::remove_dir_all(&work);
            }
            outcome.warnings = warnings;
            Ok(outcome)
        }
        Err(e) => {
            // Build and run failures keep the work directory (their message names it).
            if !keep && e.downcast_ref::<RunFailure>().is_none() {
                let _ = std::fs::remove_dir_all(&work);
            }
            Err(e)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn trace_in(
    opts: &TraceOptions,
    work: &Path,
    is_dir: bool,
    program: &str,
    files: &[PathBuf],
    model: ProgramModel,
    want: &[u32],
    sample: Option<(u32, u64, u64)>,
    warnings: &mut Vec<String>,
) -> Result<TraceOutcome> {
    let source = &opts.source;
    let root = work.join("src");
    copy_sources(source, is_dir, &root)?;
    let copy_of = |f: &Path| -> PathBuf {
        if is_dir {
            root.join(f.strip_prefix(source).unwrap_or(f))
        } else {
            root.join(f.file_name().unwrap_or_default())
        }
    };
    let mut texts: HashMap<String, Vec<u8>> = HashMap::new();
    for f in files {
        let bytes = std::fs::read(f).with_context(|| format!("{}: cannot read", f.display()))?;
        if std::str::from_utf8(&bytes).is_err() {
            warnings.push(format!(
                "{}: not valid UTF-8; its blocks are not counted",
                f.display()
            ));
            continue;
        }
        texts.insert(f.display().to_string(), bytes);
    }
    // Address probes measure what irregular references touch, for costing block counts; with
    // --time-blocks their own time would be in the bursts (the first 2^20 accesses of each
    // reference pay a few ns), and block benchmarking does not use them.
    let mut plan = rewrite::plan(&model, &texts, want, sample.map(|(b, _, k)| (b, k)), !opts.time_blocks, !opts.time_blocks);
    if let Some((b, _, _)) = sample {
        if let Some((_, why)) = plan.skipped.iter().find(|(i, _)| *i == b) {
            bail!(
                "--sample-iterations: cannot cut the loop at {}: {why}",
                model.blocks[b as usize].id
            );
        }
    }
    let write_copies = |plan: &rewrite::Plan| -> Result<()> {
        for f in files {
            let name = f.display().to_string();
            if let Some(text) = texts.get(&name) {
                if let Some(new) = rewrite::apply(plan, &name, text) {
                    let to = copy_of(f);
                    std::fs::write(&to, new)
                        .with_context(|| format!("{}: cannot write", to.display()))?;
                }
            }
        }
        Ok(())
    };
    write_copies(&plan)?;
    let uncounted: Vec<UncountedBlock> = plan
        .skipped
        .iter()
        .filter(|(i, _)| sample.is_none_or(|(b, _, _)| *i != b))
        .map(|(i, reason)| UncountedBlock {
            block: *i,
            id: model.blocks[*i as usize].id.clone(),
            reason: reason.clone(),
        })
        .collect();
    for u in &uncounted {
        warnings.push(format!(
            "block {} ({}) has no trace point: {}",
            u.block, u.id, u.reason
        ));
    }

    // The runtime.
    let rt = work.join(".mpicast");
    std::fs::create_dir_all(&rt)?;
    std::fs::write(rt.join("mpicast_rt.c"), RUNTIME_C)?;
    std::fs::write(rt.join("mpicast_rt.h"), RUNTIME_H)?;
    std::fs::write(
        rt.join("mpicast_blocks.c"),
        blocks_c(model.blocks.len(), &plan.counted, &plan.loops, plan.probes.len(), plan.calls.len()),
    )?;
    let mut objects = vec![rt.join("mpicast_rt.o"), rt.join("mpicast_blocks.o")];
    let mut rt_units = vec!["mpicast_rt", "mpicast_blocks"];
    // A P2PDC program (it calls P2Pinit and does not define it) gets the P2PDC runtime, and its
    // header on the include path.
    let p2pdc = model.external_calls.contains_key("P2Pinit")
        && !model.functions.iter().any(|f| f.name == "P2Pinit")
        && opts.build.command.is_none()
        && !opts.build.libs.iter().any(|l| l.contains("p2pdc"));
    let mut opts_p2pdc;
    let opts = if p2pdc {
        std::fs::write(rt.join("p2pdc.c"), P2PDC_C)?;
        std::fs::write(rt.join("p2pdc.h"), P2PDC_H)?;
        objects.push(rt.join("p2pdc.o"));
        rt_units.push("p2pdc");
        opts_p2pdc = opts.clone();
        opts_p2pdc.build.includes.push(rt.clone());
        &opts_p2pdc
    } else {
        opts
    };
    let rt_build = Build {
        steps: rt_units
            .iter()
            .map(|n| {
                vec![
                    "mpicc".into(),
                    "-O2".into(),
                    "-c".into(),
                    format!("{n}.c"),
                    "-o".into(),
                    format!("{n}.o"),
                ]
            })
            .collect(),
        text: String::new(),
        exe: Some(objects[0].clone()),
    };
    run_build(
        &rt_build,
        &rt,
        None,
        &format!("{program}: trace runtime"),
        work,
    )?;

    // The build.
    let originals: Vec<PathBuf> = files
        .iter()
        .filter(|f| UNITS.contains(&ext_of(f)))
        .cloned()
        .collect();
    let units: Vec<PathBuf> = originals.iter().map(|f| copy_of(f)).collect();
    let exe_name = program.to_string();
    let build = match &opts.build.command {
        None => {
            if units.is_empty() {
                bail!("{}: no C or C++ file to compile", source.display());
            }
            let out = work.join("build");
            std::fs::create_dir_all(&out)?;
            default_build(&units, &originals, &out.join(&exe_name), &opts.build, &objects, &out)
        }
        Some(cmd) => {
            build::write_wrappers(&rt.join("bin"), &opts.build, &objects)?;
            custom_build(cmd, &root, opts.build.exe.as_deref())
        }
    };
    let bin = rt.join("bin");
    let built = run_build(&build, &root, opts.build.command.as_ref().map(|_| bin.as_path()), program, work);
    let exe = match built {
        Ok(exe) => exe,
        // The probes are GNU C (a statement expression, __auto_type): a compiler that refuses
        // them, or a reference whose address cannot be taken, costs the probes, not the trace.
        Err(_) if !plan.probes.is_empty() => {
            plan = rewrite::plan(&model, &texts, want, sample.map(|(b, _, k)| (b, k)), false, !opts.time_blocks);
            write_copies(&plan)?;
            warnings.push(format!("{program}: the build failed with address probes; traced without them (irregular references keep the sizes the analysis gives)"));
            run_build(&build, &root, opts.build.command.as_ref().map(|_| bin.as_path()), program, work)?
        }
        Err(e) => return Err(e),
    };

    // The output directory.
    let out_dir = opts
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("traces").join(format!("{program}-n{}", opts.ranks)));
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("{}: cannot create the trace directory", out_dir.display()))?;
    let probe = out_dir.join(format!(".mpicast-write-test{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("{}: the trace directory is not writable", out_dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    remove_old_traces(&out_dir);

    // The plain run, for the slowdown; with --time-blocks always, its span (MPI_Init to
    // MPI_Finalize, from the preloaded span library) per rank against the instrumented run's
    // gives what the counters cost.
    let mut plain_spans: Option<crate::mpi::span::Spans> = None;
    let plain_wall_s = if opts.compare_plain || opts.time_blocks {
        let proot = work.join("plain");
        copy_sources(source, is_dir, &proot)?;
        // Sampled runs compare with the same iterations, uninstrumented.
        if sample.is_some() {
            let cut = rewrite::plan(&model, &texts, &[], sample.map(|(b, _, k)| (b, k)), false, false);
            for f in files {
                let name = f.display().to_string();
                if let Some(new) = texts
                    .get(&name)
                    .and_then(|t| rewrite::apply(&cut, &name, t))
                {
                    let to = proot.join(copy_of(f).strip_prefix(&root).unwrap_or(f));
                    std::fs::write(&to, new)
                        .with_context(|| format!("{}: cannot write", to.display()))?;
                }
            }
        }
        let pbuild = match &opts.build.command {
            None => {
                let out = work.join("plain-build");
                std::fs::create_dir_all(&out)?;
                let punits: Vec<PathBuf> = units
                    .iter()
                    .map(|u| proot.join(u.strip_prefix(&root).unwrap_or(u)))
                    .collect();
                default_build(&punits, &originals, &out.join(&exe_name), &opts.build, &[], &out)
            }
            Some(cmd) => {
                build::write_wrappers(&work.join("plain-bin"), &opts.build, &[])?;
                custom_build(cmd, &proot, opts.build.exe.as_deref())
            }
        };
        let pbin = work.join("plain-bin");
        let pexe = run_build(
            &pbuild,
            &proot,
            opts.build.command.as_ref().map(|_| pbin.as_path()),
            &format!("{program} (plain)"),
            work,
        )?;
        let spans = if opts.time_blocks {
            crate::mpi::span::shim("mpicc").and_then(|s| crate::mpi::span::SpanDir::new(&s)).ok()
        } else {
            None
        };
        let vars = spans.as_ref().map(crate::mpi::span::SpanDir::vars).unwrap_or_default();
        let (launch, env) = opts.launch.command_with_vars(opts.ranks, &pexe, &opts.args, &vars)?;
        let r = launch.run(&env, opts.echo, opts.timeout_s)?;
        plain_spans = spans.and_then(|d| d.take(opts.ranks));
        if !r.status.success() && !opts.compare_plain {
            // Only for the counters' cost: the trace goes on without it (a program that aborts
            // at this rank count, or exits non-zero after MPI_Finalize, is the trace's to judge).
            eprintln!(
                "mpicast: {program}: the plain run failed ({}): the counters' cost is not measured",
                run::describe(&r.status)
            );
            plain_spans = None;
            None
        } else if !r.status.success() {
            return Err(RunFailure {
                message: format!(
                    "{program}: the plain run failed ({}); work directory kept: {}",
                    run::describe(&r.status),
                    work.display()
                ),
                output_tail: r.tail,
            }
            .into());
        } else {
            Some(r.wall_s)
        }
    } else {
        None
    };

    // The instrumented run.
    let staging = work.join("traces");
    std::fs::create_dir_all(&staging)?;
    let launch = opts.launch.command(
        opts.ranks,
        &exe,
        &opts.args,
        &["MPICAST_TRACE_DIR", "MPICAST_TIME_BLOCKS"],
    )?;
    let env = [
        (
            "MPICAST_TRACE_DIR".to_string(),
            staging.display().to_string(),
        ),
        (
            "MPICAST_TIME_BLOCKS".to_string(),
            if opts.time_blocks { "1" } else { "0" }.to_string(),
        ),
    ];
    let r = launch.run(&env, opts.echo, opts.timeout_s)?;

    // Collect.
    let mut rank_traces = Vec::new();
    let mut probe_seen: Vec<Option<(u64, u64, u64)>> = vec![None; plan.probes.len()];
    // Per timed call: nanoseconds (the clock's cost off), timed calls, calls.
    let mut call_seen: Vec<(f64, u64, u64)> = vec![(0.0, 0, 0); plan.calls.len()];
    let mut loop_seen: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    let mut clocks: Vec<f64> = Vec::new();
    // The ranks' spans together (MPI_Init to MPI_Finalize), seconds.
    let mut spans_s = 0.0;
    for rank in 0..opts.ranks {
        let done = staging.join(format!("rank-{rank}.trace"));
        let part = staging.join(format!("rank-{rank}.trace.part"));
        let dst = crate::trace::rank_file(&out_dir, rank);
        let complete = done.is_file();
        let from = if complete {
            Some(done)
        } else if part.is_file() {
            Some(part)
        } else {
            None
        };
        match &from {
            Some(p) => {
                if std::fs::rename(p, &dst).is_err() {
                    std::fs::copy(p, &dst)
                        .with_context(|| format!("{}: cannot write", dst.display()))?;
                }
            }
            None => {
                let header = format!(
                    "{} {} rank {rank} size {}\n",
                    crate::trace::FORMAT_NAME,
                    crate::trace::FORMAT_VERSION,
                    opts.ranks
                );
                std::fs::write(&dst, header)
                    .with_context(|| format!("{}: cannot write", dst.display()))?;
            }
        }
        if !complete {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&dst)?;
            let why = if from.is_some() {
                "the rank did not reach MPI_Finalize; the trace stops at its last recorded event"
            } else {
                "the rank wrote no trace (it failed before MPI_Init returned, or could not create its file)"
            };
            writeln!(f, "# incomplete: {why}")?;
        }
        let stats = read_stats(&staging.join(format!("rank-{rank}.stats")));
        for (id, p) in plan.probes.iter().enumerate() {
            // `probe.K=RANGE SEEN REUSED`: the bytes between the lowest and the highest
            // address it saw, the accesses it saw, and those whose line it had just touched.
            let Some(v) = stats.get(&format!("probe.{id}")) else { continue };
            let f: Vec<u64> = v.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            let [range, seen, reused] = f[..] else { continue };
            let bytes = range.saturating_add(u64::from(p.elem_bytes));
            let slot = &mut probe_seen[id];
            *slot = Some(match *slot {
                None => (bytes, seen, reused),
                Some((b, s, r)) => (b.max(bytes), s + seen, r + reused),
            });
        }
        spans_s += stats.get("span_s").and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        let clock_ns: f64 = stats.get("call_clock_ns").and_then(|v| v.parse().ok()).unwrap_or(0.0);
        if stats.contains_key("call_clock_ns") {
            clocks.push(clock_ns);
        }
        for (id, slot) in call_seen.iter_mut().enumerate() {
            // `call.J=NS TIMED CALLS`.
            let Some(v) = stats.get(&format!("call.{id}")) else { continue };
            let f: Vec<u64> = v.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            let [ns, timed, calls] = f[..] else { continue };
            slot.0 += (ns as f64 - clock_ns * timed as f64).max(0.0);
            slot.1 += timed;
            slot.2 += calls;
        }
        for &k in &plan.loops {
            // `loop.K=ENTRIES MISSES`.
            let Some(v) = stats.get(&format!("loop.{k}")) else { continue };
            let f: Vec<u64> = v.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            let [entries, misses] = f[..] else { continue };
            let slot = loop_seen.entry(k).or_default();
            slot.0 += entries;
            slot.1 += misses.min(entries);
        }
        if stats.get("write_errors").is_some_and(|v| v != "0") {
            warnings.push(format!(
                "rank {rank}: some of its trace could not be written (disk full?)"
            ));
        }
        rank_traces.push(RankTrace {
            rank,
            complete,
            bytes: std::fs::metadata(&dst).map(|m| m.len()).unwrap_or(0),
            events: stats.get("events").and_then(|v| v.parse().ok()),
            timing_overhead_s: if opts.time_blocks {
                stats.get("timing_overhead_s").and_then(|v| v.parse().ok())
            } else {
                None
            },
            counter_ns: if opts.time_blocks { counter_ns(&stats, plain_spans.as_ref(), rank, opts.ranks) } else { None },
            increments: if opts.time_blocks { stats.get("increments").and_then(|v| v.parse().ok()) } else { None },
            polls: stats.get("polls").and_then(|v| v.parse().ok()).filter(|&n: &u64| n > 0),
            poll_s: stats.get("poll_s").and_then(|v| v.parse().ok()).filter(|&s: &f64| s > 0.0),
        });
    }
    let complete = rank_traces.iter().all(|t| t.complete);
    let mut footprints: Vec<Footprint> = Vec::new();
    for (p, seen) in plan.probes.iter().zip(&probe_seen) {
        let Some((bytes, accesses, reused)) = *seen else { continue };
        if accesses == 0 {
            continue;
        }
        let line_reuse = (reused as f64 / accesses as f64 * 1e4).round() / 1e4;
        for &(block, mem) in &p.refs {
            if !footprints.iter().any(|f| f.block == block && f.mem == mem) {
                footprints.push(Footprint { block, mem, bytes, accesses, line_reuse });
            }
        }
    }
    footprints.sort_by_key(|f| (f.block, f.mem));
    let clock_ns = (clocks.iter().sum::<f64>() / clocks.len().max(1) as f64 * 10.0).round() / 10.0;
    let calls: Vec<TimedCall> = plan
        .calls
        .iter()
        .zip(&call_seen)
        .filter(|(_, s)| s.1 > 0)
        .filter_map(|(p, &(ns, timed, calls))| {
            let (block, call) = p.call?;
            let func = model.blocks.get(block as usize)?.opaque.get(call as usize)?.func.clone();
            Some(TimedCall { block, call, func, calls, timed, ns: (ns / timed as f64 * 100.0).round() / 100.0, clock_ns })
        })
        .collect();
    let calls = significant_calls(calls, spans_s);
    let loop_exits = loop_seen.into_iter().map(|(block, (entries, misses))| LoopExits { block, entries, misses }).collect();
    let meta = TraceMeta {
        footprints,
        calls,
        loop_exits,
        program: program.to_string(),
        source: source.display().to_string(),
        args: opts.args.clone(),
        ranks: opts.ranks,
        build: build.text.clone(),
        launch: launch.shown(),
        all_blocks: opts.all_blocks,
        time_blocks: opts.time_blocks,
        counted_blocks: plan.counted.clone(),
        uncounted_blocks: uncounted,
        sampling: sample.map(|(b, trip, k)| Sampling {
            block: b,
            block_id: model.blocks[b as usize].id.clone(),
            trip_count: trip,
            sampled_iterations: k,
        }),
        complete,
        rank_traces,
        exit_status: r.status.code(),
        instrumented_wall_s: r.wall_s,
        plain_wall_s,
        work_dir: None,
    };
    write_artifact(&out_dir.join("analysis.json"), &model)?;
    write_artifact(&out_dir.join("meta.json"), &meta)?;

    // Every rank finished its trace (MPI_Finalize reached) and the program then exited with a
    // non-zero status (NAS DT's main returns 1): the run is whole; say so and keep it.
    let finished_then_exited =
        !r.status.success() && complete && r.status.code().is_some() && meta.rank_traces.iter().all(|t| t.events.is_some());
    if finished_then_exited {
        warnings.push(format!(
            "the program exited with status {} after every rank finished (MPI_Finalize reached): the traces are whole and kept",
            r.status.code().unwrap_or_default()
        ));
    }
    if (!r.status.success() && !finished_then_exited) || !complete {
        let bad: Vec<String> = meta
            .rank_traces
            .iter()
            .filter(|t| !t.complete)
            .map(|t| t.rank.to_string())
            .collect();
        let mut ranks = if bad.is_empty() {
            "every rank finished its trace".to_string()
        } else {
            format!(
                "incomplete traces of rank{} {}",
                if bad.len() > 1 { "s" } else { "" },
                bad.join(", ")
            )
        };
        // No rank reached MPI_Init although the run ended well: the build may have left MPI out.
        if r.status.success() && meta.rank_traces.iter().all(|t| t.events.is_none()) {
            let guards: Vec<String> = build::mpi_guard_macros(files)
                .into_iter()
                .filter(|g| !opts.build.defines.iter().any(|d| &d.name == g))
                .collect();
            ranks.push_str("; no rank called MPI_Init");
            if !guards.is_empty() {
                ranks.push_str(&format!(
                    " (the sources guard MPI code with {}: pass -D{} to build with MPI?)",
                    guards.join(", "),
                    guards[0]
                ));
            }
        }
        let mut meta = meta;
        meta.work_dir = Some(work.display().to_string());
        write_artifact(&out_dir.join("meta.json"), &meta)?;
        return Err(RunFailure {
            message: format!(
                "{program}: the run failed ({}): {ranks} in {}; work directory kept: {}",
                run::describe(&r.status),
                out_dir.display(),
                work.display()
            ),
            output_tail: r.tail,
        }
        .into());
    }
    if let Err(e) = crate::trace::validate_dir(&out_dir, opts.ranks) {
        warnings.push(format!("the traces do not validate: {e}"));
    }
    Ok(TraceOutcome {
        dir: out_dir,
        meta,
        blocks: model.blocks.len(),
        warnings: Vec::new(),
    })
}

/// What one counter increment cost rank `rank` of a `--time-blocks` run, ns: its span over the
/// plain run's span, less the runtime's own time (its clock reads and the work it does after
/// each MPI call, `timing_overhead_s` and `bookkeeping_s` in its statistics), per increment.
/// The spans on the thread's CPU time where both runs wrote them (a rank preempted by another
/// process, or waiting for a core, is not charged the wait); otherwise on the wall clock, where
/// an excess shared by more ranks than cores is that many times the CPU's. None without both
/// spans or without increments.
fn counter_ns(stats: &HashMap<String, String>, plain: Option<&crate::mpi::span::Spans>, rank: u32, ranks: u32) -> Option<f64> {
    let increments: f64 = stats.get("increments")?.parse().ok()?;
    let plain = plain?;
    let cpu_excess = || -> Option<f64> {
        let span: f64 = stats.get("cpu_span_s")?.parse().ok()?;
        Some(span - plain.cpu.iter().find(|r| r.0 == rank)?.1)
    };
    let wall_excess = || -> Option<f64> {
        let span: f64 = stats.get("span_s")?.parse().ok()?;
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
        let share = (cores / ranks as f64).min(1.0);
        Some((span - plain.ranks.iter().find(|r| r.0 == rank)?.1) * share)
    };
    let own = |key: &str| stats.get(key).and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite()).unwrap_or(0.0);
    let excess = cpu_excess().or_else(wall_excess)? - own("timing_overhead_s") - own("bookkeeping_s");
    (increments > 0.0).then(|| excess.max(0.0) / increments * 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtimes_own_time_is_not_the_counters() {
        // 0.30 s of CPU span against the plain run's 0.10 s: 0.05 s of clock reads and 0.12 s
        // after MPI calls are the runtime's, 0.03 s over a million increments the counters'.
        let stats: HashMap<String, String> = [
            ("increments", "1000000"),
            ("cpu_span_s", "0.30"),
            ("span_s", "0.31"),
            ("timing_overhead_s", "5e-2"),
            ("bookkeeping_s", "0.12"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let plain = crate::mpi::span::Spans { ranks: vec![(0, 0.11)], cpu: vec![(0, 0.10)] };
        let c = counter_ns(&stats, Some(&plain), 0, 1).unwrap();
        assert!((c - 30.0).abs() < 1e-6, "{c}");
        // Statistics written before the runtime timed itself: the whole excess.
        let mut old = stats.clone();
        old.remove("bookkeeping_s");
        old.remove("timing_overhead_s");
        assert!((counter_ns(&old, Some(&plain), 0, 1).unwrap() - 200.0).abs() < 1e-6);
        // A runtime that took more than the excess leaves the counters nothing, not less.
        let mut slow = stats;
        slow.insert("bookkeeping_s".into(), "0.5".into());
        assert_eq!(counter_ns(&slow, Some(&plain), 0, 1), Some(0.0));
    }
}
