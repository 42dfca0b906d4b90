//! Front end: one construct per fixture in tests/fixtures/c, each with the count it must
//! give for the block marked `/* MARK */`, plus a property test of nested affine loops against
//! brute-force enumeration.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{exe, root};

use mpicast::model::analysis::{Block, BlockKind, CountStatus, MemRef, ProgramModel};
use mpicast::model::parse_artifact;

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/c").join(name)
}

fn analyze(path: &Path, defs: &[&str]) -> ProgramModel {
    let mut cmd = Command::new(exe());
    cmd.arg("analyze").arg(path).arg("--json").arg("-");
    for d in defs {
        cmd.arg("-D").arg(d);
    }
    let out = cmd.output().expect("mpicast runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    parse_artifact(&String::from_utf8_lossy(&out.stdout), "stdout").expect("valid analysis")
}

/// The block that starts on the line holding `/* MARK */`.
fn marked(path: &Path, model: &ProgramModel) -> Block {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().position(|l| l.contains("/* MARK */")).expect("fixture has a MARK") as u32 + 1;
    model
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Straight && b.line_start <= line && line <= b.line_end)
        .last()
        .cloned()
        .unwrap_or_else(|| panic!("no straight block covers line {line}: {:#?}", model.blocks))
}

fn count_with(b: &Block, env: &[(&str, f64)]) -> f64 {
    let m: HashMap<String, f64> = env.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let e = b.count.expr.as_ref().unwrap_or_else(|| panic!("no count formula: {:?}", b.count));
    e.eval_map(&m).unwrap_or_else(|err| panic!("{e}: {err}"))
}

fn exact(name: &str, want: f64) {
    let p = fixture(name);
    let m = analyze(&p, &[]);
    let b = marked(&p, &m);
    assert_eq!(b.count.status, CountStatus::Exact, "{name}: {:?}", b.count);
    assert_eq!(b.count.value, Some(want), "{name}: {:?}", b.count);
}

#[test]
fn constant_loop() {
    exact("constant_loop.c", 100.0);
}
#[test]
fn le_bound() {
    exact("le_bound.c", 11.0);
}
#[test]
fn down_counting() {
    exact("down_counting.c", 10.0);
}
#[test]
fn step_three() {
    exact("step3.c", 34.0);
}
#[test]
fn doubling_is_logarithmic() {
    exact("doubling.c", 10.0);
}
#[test]
fn halving_is_logarithmic() {
    exact("halving.c", 7.0);
}
#[test]
fn macro_bound() {
    exact("macro_bound.c", 64.0);
}
#[test]
fn probability_annotation() {
    exact("proba.c", 10.0);
}

#[test]
fn argv_parameter_bound() {
    let p = fixture("argv_bound.c");
    let m = analyze(&p, &[]);
    let param = m.parameters.iter().find(|x| x.name == "n").expect("n is a parameter");
    assert_eq!(param.argv_index, Some(1));
    let b = marked(&p, &m);
    assert_eq!(b.count.status, CountStatus::Symbolic);
    assert_eq!(count_with(&b, &[("n", 37.0)]), 37.0);
    assert_eq!(count_with(&b, &[("n", -3.0)]), 0.0);
    // Bound on the command line: a value.
    let m = analyze(&p, &["n=1000"]);
    assert_eq!(marked(&p, &m).count.value, Some(1000.0));
}

#[test]
fn triangular_nest() {
    let p = fixture("triangular.c");
    let m = analyze(&p, &[]);
    let b = marked(&p, &m);
    assert_eq!(b.count.status, CountStatus::Symbolic);
    let e = b.count.expr.as_ref().unwrap();
    assert!(e.is_closed_form(), "closed form expected: {e}");
    assert!(e.to_string().contains("(n^2 - n)/2"), "{e}");
    for n in 0..30 {
        assert_eq!(count_with(&b, &[("n", n as f64)]), (n * (n - 1) / 2).max(0) as f64);
    }
}

#[test]
fn trapezoidal_nest() {
    let p = fixture("trapezoidal.c");
    let m = analyze(&p, &[]);
    let b = marked(&p, &m);
    assert!(b.count.expr.as_ref().unwrap().is_closed_form());
    for n in 0..12i64 {
        for mm in -5..12i64 {
            let want: i64 = (0..n).map(|i| (mm + i).max(0)).sum();
            assert_eq!(count_with(&b, &[("n", n as f64), ("m", mm as f64)]), want as f64, "n={n} m={mm}");
        }
    }
}

#[test]
fn min_bound_nest_is_piecewise() {
    let p = fixture("min_bound.c");
    let m = analyze(&p, &[]);
    let b = marked(&p, &m);
    for n in 0..12i64 {
        for mm in 0..12i64 {
            let want: i64 = (0..n).map(|i| i.min(mm)).sum();
            assert_eq!(count_with(&b, &[("n", n as f64), ("m", mm as f64)]), want as f64, "n={n} m={mm}");
        }
    }
}

#[test]
fn loop_over_n_divided_by_size() {
    let p = fixture("per_rank_share.c");
    let m = analyze(&p, &[]);
    let b = marked(&p, &m);
    assert!(b.count.expr.as_ref().unwrap().to_string().contains("floor(n/size)"), "{:?}", b.count);
    assert_eq!(count_with(&b, &[("n", 1000.0), ("size", 3.0)]), 333.0);
}

/// A cyclic distribution steps by the number of processes: rank r of `size` takes r + 1,
/// r + 1 + size, ... up to n.
#[test]
fn cyclic_share_steps_by_the_number_of_processes() {
    let p = fixture("cyclic_share.c");
    let b = marked(&p, &analyze(&p, &[]));
    assert_eq!(b.count.status, CountStatus::Symbolic, "{:?}", b.count);
    for (n, size, rank) in [(10000.0, 4.0, 0.0), (10000.0, 3.0, 2.0), (10.0, 4.0, 1.0), (2.0, 4.0, 3.0)] {
        let want = (1..=n as i64).filter(|i| (i - 1 - rank as i64) % size as i64 == 0 && *i > rank as i64).count();
        assert_eq!(count_with(&b, &[("n", n), ("size", size), ("rank", rank)]), want as f64, "n={n} size={size} rank={rank}");
    }
}

/// A scalar broadcast in place has the root's value on every rank: known where the root's
/// value does not depend on its rank.
#[test]
fn a_broadcast_scalar_keeps_the_roots_value() {
    let p = fixture("bcast_bound.c");
    let m = analyze(&p, &[]);
    let b = marked(&p, &m);
    assert_eq!(b.count.status, CountStatus::Exact, "{:?}", b.count);
    assert_eq!(b.count.value, Some(1000.0), "{:?}", b.count);
    let text = std::fs::read_to_string(&p).unwrap();
    let line = text.lines().position(|l| l.contains("/* SECOND */")).unwrap() as u32 + 1;
    let second = m.blocks.iter().filter(|b| b.kind == BlockKind::Straight && b.line_start <= line && line <= b.line_end).last().unwrap();
    assert_eq!(second.count.status, CountStatus::NeedsTrace, "{:?}", second.count);
}

#[test]
fn while_loop_needs_trace() {
    let p = fixture("while_loop.c");
    let b = marked(&p, &analyze(&p, &[]));
    assert_eq!(b.count.status, CountStatus::NeedsTrace);
    assert!(b.count.reason.as_deref().unwrap_or("").contains("while loop"), "{:?}", b.count);
}

#[test]
fn break_needs_trace() {
    let p = fixture("break_loop.c");
    let b = marked(&p, &analyze(&p, &[]));
    assert_eq!(b.count.status, CountStatus::NeedsTrace);
    assert!(b.count.reason.as_deref().unwrap_or("").contains("break"), "{:?}", b.count);
}

#[test]
fn rank_conditional_branch() {
    let p = fixture("rank_branch.c");
    let b = marked(&p, &analyze(&p, &[]));
    assert_eq!(b.count.status, CountStatus::Symbolic);
    assert_eq!(count_with(&b, &[("rank", 0.0)]), 1.0);
    assert_eq!(count_with(&b, &[("rank", 1.0)]), 0.0);
    assert_eq!(count_with(&b, &[("rank", 5.0)]), 0.0);
}

#[test]
fn function_called_in_a_loop() {
    let p = fixture("call_in_loop.c");
    let m = analyze(&p, &[]);
    assert_eq!(marked(&p, &m).count.value, Some(50.0));
    let f = m.functions.iter().find(|f| f.name == "f").unwrap();
    let ops = f.ops_per_call.as_ref().expect("f's cost per call is static");
    let adds = ops.get(&mpicast::model::ops::OpClass::DoubleAdd).and_then(|e| e.value()).unwrap();
    // kernel: 10 double adds per call; f: one more per iteration (t += ...).
    assert_eq!(adds, 50.0 * 10.0 + 50.0);
    assert!(m.calls.iter().any(|c| c.caller == "f" && c.callee == "kernel"));
}

#[test]
fn examples_analyse_clean() {
    let dir = root().join("examples");
    let out = Command::new(exe()).arg("analyze").arg(&dir).arg("--summary").output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("syntax error"), "{stderr}");
    let m = analyze(&dir, &[]);
    assert!(m.static_fraction() > 0.6, "static fraction {}", m.static_fraction());
    // Every MPI call of the examples is a comm site.
    assert!(m.comm.iter().any(|c| c.call == "MPI_Alltoallv"));
    let send = m.comm.iter().find(|c| c.call == "MPI_Send" && c.file.ends_with("pi_dartboard.c")).unwrap();
    assert_eq!(send.bytes.as_ref().and_then(|b| b.value()), Some(8.0));
}

/// Random nests of two or three loops with affine bounds (in n and the outer indices), with
/// < or <=: the formula must equal enumeration.
#[test]
fn random_affine_nests_match_enumeration() {
    let mut seed = 0x2545F4914F6CDD1Du64;
    let mut rnd = |k: i64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % (k as u64)) as i64
    };
    let dir = tempfile::tempdir().unwrap();
    for case in 0..24 {
        let depth = 2 + rnd(2) as usize;
        let vars = ["i", "j", "k"];
        // bounds: lo = a*outer + c, hi = b*n + d*outer + e
        let mut spec = Vec::new();
        for d in 0..depth {
            let outer = if d > 0 { Some(vars[rnd(d as i64) as usize]) } else { None };
            let lo_c = rnd(3);
            let lo_a = if outer.is_some() { rnd(2) } else { 0 };
            let hi_b = 1;
            let hi_d = if outer.is_some() { rnd(3) - 1 } else { 0 };
            let hi_e = rnd(5) - 2;
            let le = rnd(2) == 1;
            spec.push((vars[d], outer, lo_a, lo_c, hi_b, hi_d, hi_e, le));
        }
        let mut src = String::from("void f(int n) { int s = 0;\n");
        for (v, outer, lo_a, lo_c, hi_b, hi_d, hi_e, le) in &spec {
            let o = outer.unwrap_or("0");
            src += &format!(
                "for (int {v} = {lo_a}*{o} + {lo_c}; {v} {} {hi_b}*n + {hi_d}*{o} + {hi_e}; {v}++)\n",
                if *le { "<=" } else { "<" }
            );
        }
        src += "{ s += 1; /* MARK */ }\n}\n";
        let path = dir.path().join(format!("nest{case}.c"));
        std::fs::write(&path, &src).unwrap();
        let m = analyze(&path, &[]);
        let b = marked(&path, &m);
        for n in 0..9i64 {
            // brute force
            fn rec(spec: &[(&str, Option<&str>, i64, i64, i64, i64, i64, bool)], d: usize, env: &mut HashMap<String, i64>, n: i64) -> i64 {
                if d == spec.len() {
                    return 1;
                }
                let (v, outer, lo_a, lo_c, hi_b, hi_d, hi_e, le) = spec[d];
                let o = outer.map(|o| env[o]).unwrap_or(0);
                let lo = lo_a * o + lo_c;
                let hi = hi_b * n + hi_d * o + hi_e;
                let mut total = 0;
                let mut x = lo;
                while if le { x <= hi } else { x < hi } {
                    env.insert(v.to_string(), x);
                    total += rec(spec, d + 1, env, n);
                    x += 1;
                }
                total
            }
            let want = rec(&spec, 0, &mut HashMap::new(), n);
            assert_eq!(count_with(&b, &[("n", n as f64)]), want as f64, "n={n}\n{src}\nformula {:?}", b.count.expr.as_ref().map(|e| e.to_string()));
        }
    }
}

/// The sources are analysed as the build preprocesses them: a typedef and a trip count chosen
/// by `#ifdef`/`#if defined()` follow -D (an unselected `#else` branch is not seen at all).
#[test]
fn conditional_compilation_follows_the_build() {
    use mpicast::model::ops::OpClass;
    let p = fixture("ifdef_type.c");
    let plain = analyze(&p, &[]);
    let b = marked(&p, &plain);
    assert_eq!(b.count.value, Some(100.0), "{:?}", b.count);
    assert!(b.ops.contains_key(&OpClass::FloatMul) && !b.ops.contains_key(&OpClass::DoubleMul), "{:?}", b.ops);
    let built = analyze(&p, &["DOUBLE", "BIG"]);
    let b = marked(&p, &built);
    assert_eq!(b.count.value, Some(1000.0), "{:?}", b.count);
    assert!(b.ops.contains_key(&OpClass::DoubleMul) && !b.ops.contains_key(&OpClass::FloatMul), "{:?}", b.ops);
    // Byte ranges stay those of the file as written.
    let text = std::fs::read_to_string(&p).unwrap();
    let [s, _] = b.bytes.unwrap();
    assert!(text[s as usize..].starts_with("s += a * x[i]"), "{}", &text[s as usize..s as usize + 20]);
}

/// A function-like macro is analysed as its expansion: IDX(i, j) costs a multiply and an add,
/// not a call.
#[test]
fn function_like_macros_are_costed_as_their_expansion() {
    use mpicast::model::ops::OpClass;
    let p = fixture("index_macro.c");
    let m = analyze(&p, &[]);
    let b = marked(&p, &m);
    let n = |c: OpClass| b.ops.get(&c).map(|e| e.eval_map(&HashMap::new()).unwrap()).unwrap_or(0.0);
    assert_eq!(n(OpClass::Call), 0.0, "{:?}", b.ops);
    assert_eq!(n(OpClass::IntMul), 5.0, "{:?}", b.ops);
    assert_eq!((n(OpClass::DoubleAdd), n(OpClass::DoubleMul)), (3.0, 1.0), "{:?}", b.ops);
}

// ---- compiled-code costing (`analyze --compiled`): the DWARF mapping on fixtures whose
// vectorisation, hoisting and inlining are known ----

fn analyze_compiled(name: &str, cflags: &str) -> (ProgramModel, String) {
    let path = root().join("tests/fixtures/objcode").join(name);
    let out = Command::new(exe())
        .arg("analyze")
        .arg(&path)
        .arg("--compiled")
        .arg(format!("--cflags={cflags}"))
        .args(["--json", "-"])
        .output()
        .expect("mpicast runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (parse_artifact(&String::from_utf8_lossy(&out.stdout), "stdout").expect("valid analysis"), stderr)
}

fn op(b: &Block, c: &str) -> f64 {
    b.ops.iter().find(|(k, _)| k.name() == c).map_or(0.0, |(_, e)| e.eval_map(&HashMap::new()).unwrap())
}

fn block_at(m: &ProgramModel, kind: BlockKind, line: u32) -> Block {
    m.blocks.iter().find(|b| b.kind == kind && b.line_start == line).cloned().unwrap_or_else(|| panic!("no {kind:?} block at line {line}"))
}

/// At -O1 the loop stays scalar: one add, two loads and a store per iteration, in its body. At
/// -O3 it is vectorised (k >= 2): the loop is charged at most half an add per source iteration.
#[test]
fn compiled_costing_finds_the_vector_factor() {
    let (m, _) = analyze_compiled("vector_add.c", "-O1");
    let body = block_at(&m, BlockKind::Straight, 11);
    assert_eq!((op(&body, "double_add"), op(&body, "load"), op(&body, "store")), (1.0, 2.0, 1.0), "{body:?}");
    // The loop's control (add 1, compare, branch back) is one loop_iter per iteration, what the
    // empty-loop kernel measures, not a data branch, a compare and an add.
    let l = block_at(&m, BlockKind::Loop, 10);
    let both = |c: &str| op(&l, c) + op(&body, c);
    assert_eq!(both("loop_iter"), 1.0, "{l:?} {body:?}");
    assert_eq!((both("branch"), both("int_cmp"), both("int_add")), (0.0, 0.0, 0.0), "{l:?} {body:?}");
    let (m, note) = analyze_compiled("vector_add.c", "-O3");
    assert!(note.contains("1 vectorised"), "{note}");
    let l = block_at(&m, BlockKind::Loop, 10);
    let body = block_at(&m, BlockKind::Straight, 11);
    let add = op(&l, "double_add") + op(&body, "double_add");
    assert!(add > 0.0 && add <= 0.5, "double adds per source iteration at -O3: {add}");
    assert!(op(&l, "store") + op(&body, "store") <= 0.5, "{l:?} {body:?}");
    let control = op(&l, "loop_iter") + op(&body, "loop_iter");
    assert!(control > 0.0 && control <= 0.5, "one loop_iter per machine iteration, k >= 2: {control}");
}

/// s * t is hoisted out of the loop: no multiply of it per iteration, one in main; scale() is
/// inlined: its multiply is charged to its own block, and no call is left in the loop.
#[test]
fn compiled_costing_follows_hoisting_and_inlining() {
    let (m, _) = analyze_compiled("hoist_inline.c", "-O2");
    let body = block_at(&m, BlockKind::Straight, 18);
    assert_eq!(op(&body, "call"), 0.0, "{body:?}");
    assert_eq!(op(&body, "double_mul"), 0.0, "{body:?}");
    let scale = block_at(&m, BlockKind::Straight, 8);
    assert_eq!(op(&scale, "double_mul"), 1.0, "{scale:?}");
    let main = m.blocks.iter().find(|b| b.kind == BlockKind::Function && b.function == "main").unwrap();
    assert!(op(main, "double_mul") >= 1.0, "the hoisted s * t: {main:?}");
}

/// NAS EP's acceptance-rejection loop (tests/fixtures/objcode/accept_reject.c): two backward
/// branches close one loop, fabs's 16-byte sign mask is no vector and the sums kept on the
/// stack are no stores of the source. The accepted arm is charged its own log call, divide
/// and compares, once per source iteration; the sample's arithmetic goes to the statements
/// before the `if`, and the loop keeps only its control (compiled at -O2 with those
/// instructions all on the loop, the arm was costed twice: EP S +16-19% at 1 and 2 ranks).
#[test]
fn compiled_costing_places_an_if_arm_of_a_loop_with_two_latches() {
    let (m, note) = analyze_compiled("accept_reject.c", "-O2");
    assert!(note.contains("0 vectorised"), "{note}");
    let arm = block_at(&m, BlockKind::Straight, 26);
    assert_eq!(op(&arm, "double_div"), 1.0, "{arm:?}");
    assert_eq!((op(&arm, "log"), op(&arm, "sqrt")), (1.0, 1.0), "{arm:?}");
    assert!(op(&arm, "double_mul") >= 3.0, "t3, t4 and -2 * log: {arm:?}");
    let sample = block_at(&m, BlockKind::Straight, 23);
    assert!(op(&sample, "double_mul") >= 2.0 && op(&sample, "load") == 2.0, "x1 * x1 + x2 * x2 from two loads: {sample:?}");
    let l = block_at(&m, BlockKind::Loop, 22);
    for c in ["double_div", "double_mul", "double_add", "call", "load"] {
        assert_eq!(op(&l, c), 0.0, "{c} on the loop: {l:?}");
    }
    assert!(op(&l, "loop_iter") >= 1.0, "{l:?}");
}

/// llvm-mca schedules both loops of tests/fixtures/objcode/chains.c (core cycles per source
/// iteration, in the note): the dot product waits for its floating-point add every iteration
/// (at least 2.5 cycles), the products overlap (at most 2.5, and fewer than the dot product).
/// Without llvm-mca the note says so and the op classes stay.
#[test]
fn compiled_costing_schedules_loops_with_llvm_mca() {
    let (m, note) = analyze_compiled("chains.c", "-O2");
    let cycles = |line: u32| -> f64 {
        let key = format!("chains.c:{line}:");
        let at = note.find(&key).unwrap_or_else(|| panic!("no loop at line {line} scheduled: {note}"));
        note[at..].split_whitespace().nth(1).and_then(|v| v.trim_end_matches([',', ')']).parse().ok()).unwrap_or_else(|| panic!("{note}"))
    };
    let (dot, products) = (cycles(14), cycles(21));
    assert!(dot >= 2.5, "dot product: {dot} cycles per iteration ({note})");
    assert!(products <= 2.5 && products < dot, "products: {products}, dot: {dot} ({note})");
    // analyze shows the instructions' classes, not the cycles.
    let body = block_at(&m, BlockKind::Straight, 15);
    assert_eq!((op(&body, "double_mul"), op(&body, "core_cycle")), (1.0, 0.0), "{body:?}");
    let out = Command::new(exe())
        .env("MPICAST_LLVM_MCA", "/nonexistent/llvm-mca")
        .arg("analyze")
        .arg(root().join("tests/fixtures/objcode/chains.c"))
        .arg("--compiled")
        .output()
        .expect("mpicast runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains("no loop scheduled by llvm-mca (llvm-mca not found"), "{stderr}");
}

/// Library calls by class: allocation per call, printf per call and per conversion type,
/// fwrite per byte; a program function named like one stays a call.
#[test]
fn library_calls_are_costed_by_their_classes() {
    use mpicast::model::ops::OpClass;
    let p = fixture("library_calls.c");
    let m = analyze(&p, &[]);
    let b = marked(&p, &m);
    let op = |c: OpClass| b.ops.get(&c).map(|e| e.eval_map(&HashMap::new()).unwrap()).unwrap_or(0.0);
    assert_eq!(op(OpClass::Alloc), 2.0, "malloc and free: {:?}", b.ops);
    assert_eq!(op(OpClass::PrintCall), 1.0, "{:?}", b.ops);
    assert_eq!(op(OpClass::PrintInt), 2.0, "%d %5d: {:?}", b.ops);
    assert_eq!(op(OpClass::PrintFp), 3.0, "%.6e %g %10.3f (%% is none): {:?}", b.ops);
    assert_eq!(op(OpClass::WriteByte), 24.0, "3 doubles: {:?}", b.ops);
    assert_eq!(op(OpClass::Call), 1.0, "the program's own write(): {:?}", b.ops);
}

/// A program variable named like the analysis's own symbols keeps its meaning
/// (tests/fixtures/memory/names.c): the matrix dimension `size`, read by sscanf after a
/// default of 64, is the parameter `size'` (also as the kernel's parameter), while `size`
/// stays the number of processes; the master's loop variable `rank` is `rank'`, so the
/// receives it makes are summed over it (1 + 2 + 3 at 4 processes) and not tied to the
/// process's own rank.
#[test]
fn program_variables_named_like_the_analysis_symbols_keep_their_meaning() {
    let p = root().join("tests/fixtures/memory/names.c");
    let m = analyze(&p, &[]);
    let ps: Vec<(String, Option<u32>, Option<f64>)> = m.parameters.iter().map(|p| (p.name.clone(), p.argv_index, p.default)).collect();
    assert_eq!(ps, vec![("size'".to_string(), Some(1), Some(64.0))]);
    // The kernel's count is in its own terms (rows); its references, in main's.
    let env: HashMap<String, f64> = [("size'".to_string(), 2048.0), ("size".to_string(), 2.0), ("rank".to_string(), 0.0), ("rows".to_string(), 1024.0)].into();
    let walk = block_at(&m, BlockKind::Straight, 16);
    assert_eq!(walk.count.expr.as_ref().unwrap().eval_map(&env).unwrap(), 2048.0 * 1024.0);
    let load = walk.mem.first().expect("the column walk's load");
    assert_eq!(load.stride.as_ref().unwrap().eval_map(&env).unwrap(), 8.0 * 2048.0);
    assert_eq!(load.reuse_bytes.as_ref().unwrap().eval_map(&env).unwrap(), 8.0 * 2048.0 * 1024.0);
    let recv = block_at(&m, BlockKind::Comm, 40);
    assert_eq!(count_with(&recv, &[("size", 4.0), ("rank", 0.0)]), 6.0);
    assert_eq!(count_with(&recv, &[("size", 4.0), ("rank", 1.0)]), 0.0);
}

/// The memory model's view of a loop nest (tests/fixtures/memory/nest.c): strides along the
/// innermost loop, reuse distances through the nest, references that move together counted
/// once, rows of a pointer-to-pointer, an index that depends on data sized by its allocation
/// through the program's own allocator, sizes rewritten in the caller's terms (`n` is main's
/// argv[1], matvec's parameter), loop-carried chains and allocations.
#[test]
fn memory_references_have_strides_and_reuse_distances() {
    let p = root().join("tests/fixtures/memory/nest.c");
    let m = analyze(&p, &[]);
    let n = 100.0;
    let env: HashMap<String, f64> = [("n".to_string(), n), ("buckets".to_string(), 4096.0)].into();
    let refs = |line: u32| block_at(&m, BlockKind::Straight, line).mem;
    let get = |refs: &[mpicast::model::analysis::MemRef], array: &str, access: &str| {
        refs.iter()
            .find(|r| r.array == array && r.access.name() == access)
            .cloned()
            .unwrap_or_else(|| panic!("no {access} of {array}: {refs:#?}"))
    };
    let val = |e: &Option<mpicast::model::expr::Expr>| e.as_ref().map(|e| e.eval_map(&env).unwrap());
    // matvec: a comes back when the nest runs again (8n^2 + x + y); x on the next i, after a
    // row of a, all of x and one y (8n + 8n + 8). y[i] stays put along j: no reference.
    let mv = refs(19);
    assert_eq!(mv.len(), 2, "{mv:#?}");
    let a = get(&mv, "a", "load");
    assert_eq!((val(&a.stride), val(&a.reuse_bytes)), (Some(8.0), Some(8.0 * n * n + 16.0 * n)));
    let x = get(&mv, "x", "load");
    assert_eq!((val(&x.stride), val(&x.reuse_bytes)), (Some(8.0), Some(16.0 * n + 8.0)));
    // smooth: u[i-1], u[i], u[i+1] are one stream; w is stored; one loop: the footprint of both.
    let sm = refs(25);
    let u = get(&sm, "u", "load");
    assert_eq!(u.count.eval_map(&env).unwrap(), 1.0);
    assert_eq!((val(&u.stride), val(&u.reuse_bytes)), (Some(8.0), Some(2.0 * 8.0 * (n - 2.0))));
    assert_eq!(val(&get(&sm, "w", "store").stride), Some(8.0));
    // columns: rows[i] moves along i by 8 bytes; rows[i][j] is in another row at each i:
    // irregular, a line per access over the nest.
    let co = refs(33);
    assert_eq!(val(&get(&co, "rows", "load").stride), Some(8.0));
    let el = get(&co, "rows[]", "load");
    assert_eq!((el.stride.is_none(), val(&el.reuse_bytes)), (true, Some(64.0 * n * n)));
    // count: h[keys[k]]++ is irregular over h's 4 * buckets bytes (xalloc's argument), a load
    // and a store; keys streams at 4 bytes, its reuse unknown (the loop's bound is data).
    let ct = refs(43);
    let h = get(&ct, "h", "load");
    assert_eq!((h.stride.is_none(), val(&h.reuse_bytes)), (true, Some(4.0 * 4096.0)));
    assert_eq!(val(&get(&ct, "h", "store").reuse_bytes), Some(4.0 * 4096.0));
    let keys = get(&ct, "keys", "load");
    assert_eq!((val(&keys.stride), keys.reuse_bytes.is_none()), (Some(4.0), true));
    // Loop-carried chains: s += ... in columns and in chains; t (assigned) and u (declared)
    // start afresh in each iteration.
    let chains = |line: u32| -> Vec<(String, Vec<&'static str>)> {
        block_at(&m, BlockKind::Straight, line).chains.iter().map(|c| (c.var.clone(), c.ops.iter().map(|o| o.name()).collect())).collect()
    };
    // sweep: both rows of u move 8 bytes along j (one stream) and come back when the nest
    // runs again: its footprint, cols rows w apart (cols = floor(n/3) + 1 at coord 0, w =
    // cols + 2).
    let sw = refs(70);
    let u = get(&sw, "u", "load");
    let cols = (n / 3.0).floor() + 1.0;
    let w = cols + 2.0;
    assert_eq!(u.count.eval_map(&env).unwrap(), 1.0, "{sw:#?}");
    assert_eq!((val(&u.stride), val(&u.reuse_bytes)), (Some(8.0), Some(8.0 * (w * (cols - 1.0) + cols))), "{sw:#?}");
    // planes: c is the innermost body's own local (an earlier loop's c is another variable):
    // both references stream along j, one stream; the nest's footprint (rows n apart).
    let pl = refs(83);
    let u = get(&pl, "u", "load");
    assert_eq!(u.count.eval_map(&env).unwrap(), 1.0, "{pl:#?}");
    assert_eq!((val(&u.stride), val(&u.reuse_bytes)), (Some(8.0), Some(8.0 * (n * (n - 3.0) + n - 2.0))), "{pl:#?}");
    assert_eq!(chains(33), vec![("s".to_string(), vec!["double_add"])]);
    assert_eq!(chains(52), vec![("s".to_string(), vec!["double_add"])]);
    assert!(chains(19).is_empty(), "y[i] += is an array element, not a scalar chain");
    // Allocations: main's malloc and callocs (in the block after MPI_Init), and xalloc's argument at its call (the malloc
    // inside the program's own allocator is not counted again).
    let allocs = |line: u32| -> Vec<f64> { block_at(&m, BlockKind::Straight, line).allocs.iter().map(|a| a.eval_map(&env).unwrap()).collect() };
    assert_eq!(allocs(40), vec![4.0 * 4096.0]);
    assert_eq!(allocs(91), vec![8.0 * n * n, 8.0 * n, 8.0 * n, 8.0 * n, 4.0 * n]);
    assert!(m.blocks.iter().filter(|b| b.function == "xalloc").all(|b| b.allocs.is_empty()));
}

/// A file over 1 MB is parsed a part at a time and its functions lowered again, part by part,
/// once every declaration is known: a function late in the file that main calls, a constant and
/// a typedef from its first lines, and offsets and lines in the last part all come out as they
/// do for the same functions in a small file.
#[test]
fn a_large_file_is_analysed_a_part_at_a_time() {
    let head = "#define N 1000\ntypedef double real;\nreal table[N];\nint late_size(void);\nvoid late_work(int n);\n\nint main(int argc, char **argv)\n{\n    late_work(late_size());\n    return 0;\n}\n";
    let tail = "int late_size(void) { return 2 * N; }\n\nvoid late_work(int n)\n{\n    real s = 0;\n    for (int i = 0; i < n; i++) /* LOOP */\n        s += table[i % N] * 1.5;\n    for (int k = 0; k < N; k++)\n        table[k] = s;\n}\n";
    let mut large = head.to_string();
    let mut i = 0;
    while large.len() < 1200 << 10 {
        large.push_str(&format!("void filler{i}(void)\n{{\n    for (int k = 0; k < N; k++)\n        table[k] += {i};\n}}\n"));
        i += 1;
    }
    large.push_str(tail);
    assert!(mpicast::frontend::lower::parted(large.as_bytes()));
    let tmp = tempfile::tempdir().unwrap();
    let (pl, ps) = (tmp.path().join("large.c"), tmp.path().join("small.c"));
    std::fs::write(&pl, &large).unwrap();
    std::fs::write(&ps, format!("{head}{tail}")).unwrap();
    let (ml, ms) = (analyze(&pl, &[]), analyze(&ps, &[]));
    assert_eq!(ml.blocks.len(), ms.blocks.len() + 4 * i, "each filler: function, loop and its body");
    let lines_before_tail = large[..large.len() - tail.len()].lines().count() as u32 - head.lines().count() as u32;
    let bytes_before_tail = (large.len() - tail.len() - head.len()) as u32;
    let late = |m: &ProgramModel| -> Vec<Block> { m.blocks.iter().filter(|b| b.function == "late_work" || b.function == "late_size" || b.function == "main").cloned().collect() };
    let (bl, bs) = (late(&ml), late(&ms));
    assert_eq!(bl.len(), bs.len());
    for (l, s) in bl.iter().zip(&bs) {
        let shift = if s.function == "main" { (0, 0) } else { (lines_before_tail, bytes_before_tail) };
        assert_eq!((l.kind, l.line_start, l.line_end), (s.kind, s.line_start + shift.0, s.line_end + shift.0), "{} / {}", l.id, s.id);
        assert_eq!(l.bytes.map(|b| [b[0] - shift.1, b[1] - shift.1]), s.bytes, "{}", l.id);
        let moved: Vec<MemRef> = l.mem.iter().map(|m| MemRef { at: m.at.iter().map(|&(a, b)| (a - shift.1, b - shift.1)).collect(), ..m.clone() }).collect();
        assert_eq!((&l.count, &l.ops, &moved), (&s.count, &s.ops, &s.mem), "{}", l.id);
    }
    let loop_block = bl.iter().find(|b| b.kind == BlockKind::Loop && b.line_start == large.lines().position(|l| l.contains("/* LOOP */")).unwrap() as u32 + 1).expect("the loop");
    let b = loop_block.bytes.unwrap();
    assert!(large[b[0] as usize..].starts_with("for (int i = 0; i < n; i++)"), "{}", &large[b[0] as usize..b[1] as usize]);
    assert_eq!(count_with(loop_block, &[("n", 7.0)]), 7.0);
    let fill = ml.blocks.iter().find(|b| b.function == format!("filler{}", i - 1) && b.kind == BlockKind::Loop).expect("the last filler's loop");
    assert_eq!((fill.count.status, fill.count.value), (CountStatus::Exact, Some(1000.0)), "N from the first part");
    let ops = |m: &ProgramModel| m.functions.iter().find(|f| f.name == "main").and_then(|f| f.ops_per_call.clone());
    assert!(ops(&ml).is_some() && ops(&ml) == ops(&ms), "main's cost through late_work: {:?} / {:?}", ops(&ml), ops(&ms));
}

/// Chains through several statements (tests/fixtures/memory/carried.c): `next` keeps its state
/// behind a pointer, as NAS's randlc does; the state's new value comes from its old one through
/// a multiply, a conversion to an integer and back and two adds, then the store and the next
/// call's load. `twice` is static (the compiler inlines it, the state stays in a register): no
/// load. In main's third loop `y` goes through a temporary. The old analysis saw none of them
/// (its chains were single expressions over scalars in loops).
#[test]
fn chains_run_through_temporaries_and_cells_behind_pointers() {
    let m = analyze(&root().join("tests/fixtures/memory/carried.c"), &[]);
    let chains = |line: u32| -> Vec<(String, Vec<&'static str>)> {
        block_at(&m, BlockKind::Straight, line).chains.iter().map(|c| (c.var.clone(), c.ops.iter().map(|o| o.name()).collect())).collect()
    };
    assert_eq!(chains(11), vec![("*x".to_string(), vec!["double_mul", "fp_to_int", "int_to_fp", "double_add", "double_add", "load"])]);
    assert_eq!(chains(20), vec![("*x".to_string(), vec!["double_mul"])]);
    assert_eq!(chains(34), vec![("y".to_string(), vec!["double_mul", "double_add"])]);
    // main's `s += next(...)`: a chain of its own add (the call's value is not followed).
    assert_eq!(chains(30), vec![("s".to_string(), vec!["double_add"])]);
}

/// Loops whose condition reads a clock, through a function of the program and assignments
/// (tests/fixtures/predict/self_timed.c): only the calibration loop; the loop whose time is
/// printed, and the loops bound by the repetitions (doubled, not read from a clock), are not.
#[test]
fn loops_bound_by_a_clock_reading_are_listed() {
    let m = analyze(&root().join("tests/fixtures/predict/self_timed.c"), &[]);
    let found: Vec<(u32, &str, &str)> = m.clock_loops.iter().map(|c| (c.line, c.reads.as_str(), c.clock.as_str())).collect();
    assert_eq!(found, vec![(20, "t", "now(): gettimeofday() at self_timed.c:11")]);
}

/// A clock reading that reaches a loop's condition through 20,000 assignments in order (a
/// generated function): found in one pass over the statements, in well under the front end's
/// usual time for such a file (a taint applied only between passes stopped after 16 of them).
#[test]
fn a_clock_reading_is_followed_through_a_long_chain_of_assignments() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20000;
    let mut src = String::from("#include <mpi.h>\nint main(int argc, char **argv) {\nMPI_Init(&argc, &argv);\ndouble t0 = MPI_Wtime();\n");
    for i in 1..n {
        src.push_str(&format!("double t{i} = t{} + 1.0;\n", i - 1));
    }
    src.push_str(&format!("while (t{} < 5.0) t{} += 1.0;\nMPI_Finalize(); return 0; }}\n", n - 1, n - 1));
    let p = dir.path().join("chain.c");
    std::fs::write(&p, src).unwrap();
    let started = std::time::Instant::now();
    let m = analyze(&p, &[]);
    let found: Vec<(u32, &str)> = m.clock_loops.iter().map(|c| (c.line, c.reads.as_str())).collect();
    assert_eq!(found, vec![(n + 4, "t19999")]);
    assert!(started.elapsed().as_secs_f64() < 20.0, "{:?}", started.elapsed());
}

/// Tallies into a small table at an index the iteration computes (tests/fixtures/memory/tally.c,
/// NAS EP's `q[l] += 1` with l through a log, a divide and a square root): each update waits for
/// the index's whole path, from the loads before the `if` to the conversion, then the table's load
/// and the add (measured on a copy of EP's loop: 22-24 ns an iteration, 10-11 ns without the
/// update; the path's latencies sum to about 23 ns). A 65,536-entry table, 256 bins, a plain
/// store and a histogram of loaded keys wait for nothing.
#[test]
fn a_tally_into_a_small_table_waits_for_its_index() {
    let m = analyze(&root().join("tests/fixtures/memory/tally.c"), &[]);
    let chains = |line: u32| -> Vec<(String, Vec<&'static str>)> {
        block_at(&m, BlockKind::Straight, line).chains.iter().map(|c| (c.var.clone(), c.ops.iter().map(|o| o.name()).collect())).collect()
    };
    let index = ["load", "double_mul", "double_add", "double_mul", "double_add", "log", "double_mul", "double_div", "sqrt", "double_mul", "fp_to_int"];
    let tally = |var: &str| (var.to_string(), index.iter().copied().chain(["load", "double_add"]).collect::<Vec<_>>());
    assert_eq!(chains(32), vec![("sx".to_string(), vec!["double_add"]), tally("q[l]"), tally("local[l]")]);
    assert!(chains(44).is_empty(), "{:?}", chains(44));
}
