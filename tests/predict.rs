//! `mpicast predict`, static path: formula (1) on a hand-counted program, skeleton execution's
//! communication against the program's pattern, what-if knobs, errors that say what to do.
//! Runs the real binary with real SimGrid; the machine table is a fixture with hand-set costs.

use std::path::Path;
use std::process::{Command, Output};

use mpicast::model::trace::{Peer, TraceAction};
use crate::util::{exe, root, Scratch, LOCALHOST, MACHINE};

fn predict(args: &[&str]) -> Output {
    let r = root();
    Command::new(exe())
        .current_dir(&r)
        .arg("predict")
        .args(args)
        .output()
        .expect("run mpicast")
}

fn json(args: &[&str]) -> serde_json::Value {
    // Options go before `--`: what follows it is the program's.
    let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    let mut a = args[..split].to_vec();
    a.extend(["--machine", MACHINE, "--json", "-"]);
    a.extend(&args[split..]);
    let out = predict(&a);
    assert!(
        out.status.success(),
        "predict {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["schema"], "mpicast/prediction");
    assert_eq!(v["version"], 1);
    v
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// Per iteration, read off the C: s * 0.5 (double_mul, 2 ns), + 2.0 (double_add, 1 ns), the
/// loop's overhead (loop_iter, 0.5 ns), i < 1000 * (rank + 1) (int_cmp 0.25 ns, int_mul, int_add
/// 0.25 ns: the bound is evaluated every time), i++ (int_add 0.25 ns): 4.25 ns plus the int_mul
/// at 0.001 ns. Rank r runs 1000 (r + 1) iterations; every other class costs 0.001 ns.
#[test]
fn formula_one_by_hand() {
    let per_iter = 2.0 + 1.0 + 0.5 + 0.25 + 0.25 + 0.25 + 0.001;
    // Formula (1) on the source's operators, as written.
    let p = json(&[
        "tests/fixtures/predict/formula1.c",
        "-n",
        "2",
        "--ops",
        "source",
        "--platform",
        LOCALHOST,
    ]);
    let ranks = p["ranks_detail"].as_array().unwrap();
    for (r, rank) in ranks.iter().enumerate() {
        let want = 1000.0 * (r as f64 + 1.0) * per_iter * 1e-9;
        let got = rank["compute_s"].as_f64().unwrap();
        assert!(
            close(got, want, 2e-3),
            "rank {r}: compute {got} s, by hand {want} s"
        );
    }
    // Rank 0 waits for rank 1 at the barrier: the makespan is rank 1's compute plus a
    // barrier on shared memory (well under a microsecond).
    let t = p["predicted_s"].as_f64().unwrap();
    let slow = 2000.0 * per_iter * 1e-9;
    assert!(
        t >= slow && t < slow + 1e-6,
        "predicted {t} s, rank 1 computes {slow} s"
    );
    let lo = p["interval_s"][0].as_f64().unwrap();
    let hi = p["interval_s"][1].as_f64().unwrap();
    // The fixture's spread is -10% / +20% on every class.
    assert!(close(t - lo, 0.1 * slow, 0.02), "interval low {lo}");
    assert!(close(hi - t, 0.2 * slow, 0.02), "interval high {hi}");
    // The hottest block is the loop body: 3000 executions over both ranks, 3 ns each.
    let top = &p["blocks"][0];
    assert_eq!(top["line_start"], 12);
    assert!(close(top["executions"].as_f64().unwrap(), 3000.0, 1e-9));
    assert!(close(top["seconds"].as_f64().unwrap(), 3000.0 * 3e-9, 1e-6));
    assert!(close(
        top["op_seconds"]["double_mul"].as_f64().unwrap(),
        3000.0 * 2e-9,
        1e-6
    ));
}

#[test]
fn what_if_cpu_scale_and_background_load() {
    let base = json(&[
        "tests/fixtures/predict/formula1.c",
        "-n",
        "1",
        "--platform",
        LOCALHOST,
    ]);
    let fast = json(&[
        "tests/fixtures/predict/formula1.c",
        "-n",
        "1",
        "--platform",
        LOCALHOST,
        "--cpu-scale",
        "2",
    ]);
    let busy = json(&[
        "tests/fixtures/predict/formula1.c",
        "-n",
        "1",
        "--platform",
        LOCALHOST,
        "--background-load",
        "0.5",
    ]);
    let c = |v: &serde_json::Value| v["ranks_detail"][0]["compute_s"].as_f64().unwrap();
    assert!(close(c(&fast), c(&base) / 2.0, 1e-9));
    assert!(close(c(&busy), c(&base) * 2.0, 1e-9));
    assert_eq!(fast["what_if"]["cpu_scale"], 2.0);
}

/// Program arguments after `--` bind the argv-derived parameters as in a run; the skeleton's
/// messages follow pi_dartboard's pattern: every round, each worker sends one double to rank 0.
#[test]
fn pi_dartboard_pattern_from_program_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let p = json(&[
        "examples/pi_dartboard.c",
        "-n",
        "3",
        "--platform",
        LOCALHOST,
        "--save-traces",
        d,
        "--",
        "1000",
        "7",
    ]);
    assert_eq!(p["bindings"]["darts_arg"], 1000.0);
    assert_eq!(p["bindings"]["rounds_arg"], 7.0);
    let actions = |r: u32| -> Vec<TraceAction> {
        let mut rd =
            mpicast::trace::TraceReader::open(&mpicast::trace::rank_file(Path::new(d), r)).unwrap();
        let mut v = Vec::new();
        while let Some((a, _)) = rd.next_action().unwrap() {
            v.push(a);
        }
        v
    };
    let recvs: Vec<u32> = actions(0)
        .iter()
        .filter_map(|a| match a {
            TraceAction::Recv {
                from: Peer::Rank(f),
                bytes,
                ..
            } => {
                assert_eq!(*bytes, Some(8));
                Some(*f)
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        recvs,
        [1, 2].repeat(7),
        "rank 0 receives from 1 then 2, 7 rounds"
    );
    for r in 1..3 {
        let sends = actions(r)
            .iter()
            .filter(|a| {
                matches!(
                    a,
                    TraceAction::Send {
                        to: 0,
                        bytes: 8,
                        tag: 1,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(sends, 7, "rank {r} sends one estimate per round");
    }
    // 7 rounds x 1000 darts x 3 ranks through the dart loop's body.
    let body = p["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["line_start"] == 42)
        .expect("dart loop body");
    assert!(close(body["executions"].as_f64().unwrap(), 21000.0, 1e-9));
    let assumptions = p["assumptions"].as_array().unwrap();
    assert!(
        assumptions
            .iter()
            .any(|a| a.as_str().unwrap().contains("pi_dartboard.c:45")),
        "{assumptions:?}"
    );
}

/// A 2D grid from MPI_Dims_create / MPI_Cart_create / MPI_Cart_shift: on 4 ranks (2 x 2, not
/// periodic) every rank has one neighbour per dimension.
#[test]
fn jacobi2d_cartesian_neighbours() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    json(&[
        "examples/jacobi2d.c",
        "-n",
        "4",
        "--platform",
        LOCALHOST,
        "--save-traces",
        d,
        "--",
        "64",
        "3",
        "1",
    ]);
    for r in 0..4u32 {
        let mut rd =
            mpicast::trace::TraceReader::open(&mpicast::trace::rank_file(Path::new(d), r)).unwrap();
        let mut peers = std::collections::BTreeSet::new();
        let mut n = 0;
        while let Some((a, _)) = rd.next_action().unwrap() {
            match a {
                TraceAction::Sendrecv { to, .. } => {
                    peers.insert(to);
                    n += 1;
                }
                TraceAction::Send { to, .. } => {
                    peers.insert(to);
                    n += 1;
                }
                TraceAction::Recv {
                    from: Peer::Rank(f),
                    ..
                } => {
                    peers.insert(f);
                    n += 1;
                }
                _ => {}
            }
        }
        let (row, col) = (r / 2, r % 2);
        let want: std::collections::BTreeSet<u32> = [(1 - row) * 2 + col, row * 2 + (1 - col)]
            .into_iter()
            .collect();
        assert_eq!(peers, want, "rank {r}");
        assert_eq!(
            n,
            3 * 4,
            "rank {r}: 4 halo calls per iteration, 3 iterations (half to PROC_NULL)"
        );
    }
}

#[test]
fn unresolvable_communication_says_where_and_what_to_do() {
    let out = predict(&[
        "examples/isort.c",
        "-n",
        "2",
        "--static-only",
        "--platform",
        LOCALHOST,
        "--machine",
        MACHINE,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("examples/isort.c:151")
            && err.contains("MPI_Alltoallv")
            && err.contains("--trace-ranks"),
        "{err}"
    );
}

#[test]
fn bad_program_argument_and_missing_platform() {
    let out = predict(&[
        "examples/pi_dartboard.c",
        "-n",
        "2",
        "--platform",
        LOCALHOST,
        "--machine",
        MACHINE,
        "--",
        "lots",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("program argument 1") && err.contains("lots"),
        "{err}"
    );
    let out = predict(&[
        "examples/pi_dartboard.c",
        "-n",
        "2",
        "--platform",
        "nowhere.xml",
        "--machine",
        MACHINE,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nowhere.xml"));
}

#[test]
fn readable_report() {
    let out = predict(&[
        "examples/pi_dartboard.c",
        "-n",
        "2",
        "--platform",
        LOCALHOST,
        "--machine",
        MACHINE,
        "--",
        "1000",
        "2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "predicted time:",
        "hottest blocks",
        "throw_darts",
        "op classes:",
        "assumptions:",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

/// The trace path (an instrumented run's block counts, every block counted) and the static path
/// (skeleton execution) must agree where the static path resolves everything: jacobi2d's counts
/// are all static, so both give the same executions and the same messages.
#[test]
fn trace_path_agrees_with_static_path() {
    let args = ["--", "64", "6", "3"];
    let mut st = vec!["examples/jacobi2d.c", "-n", "2", "--platform", LOCALHOST];
    st.extend(args);
    let s = json(&st);
    let mut tr = vec![
        "examples/jacobi2d.c",
        "-n",
        "2",
        "--platform",
        LOCALHOST,
        "--trace-ranks",
        "2",
        "--top",
        "1000",
    ];
    tr.extend(args);
    let t = json(&tr);
    assert_eq!(s["mode"], "static");
    assert_eq!(t["mode"], "trace");
    let (ps, pt) = (
        s["predicted_s"].as_f64().unwrap(),
        t["predicted_s"].as_f64().unwrap(),
    );
    // A trace times the calls it cannot see (strtol here) where one takes longer than the
    // timing itself: on a loaded machine a cold first call can, and then the trace path is
    // longer by at most those calls' seconds (over all ranks). Nothing else may differ.
    let timed: f64 = t["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["timed_calls"]["seconds"].as_f64())
        .sum();
    assert!(
        pt >= ps * (1.0 - 1e-6) && pt <= ps * (1.0 + 1e-6) + timed,
        "trace path {pt} s, static path {ps} s, timed calls {timed} s; the trace's blocks {} and assumptions {}",
        t["blocks"],
        t["assumptions"]
    );
    assert_eq!(s["messages"], t["messages"]);
}

/// Every example that the static path refuses is predicted from a 2-rank trace.
#[test]
fn trace_ranks_for_what_static_cannot_resolve() {
    for ex in ["examples/obstacle3d.c", "examples/isort.c"] {
        let args: &[&str] = if ex.contains("obstacle") {
            &["--", "24", "30"]
        } else {
            &["--", "20000", "2"]
        };
        let mut a = vec![ex, "-n", "2", "--platform", LOCALHOST, "--trace-ranks", "2"];
        a.extend(args);
        let p = json(&a);
        assert_eq!(p["mode"], "trace", "{ex}");
        assert!(p["predicted_s"].as_f64().unwrap() > 0.0, "{ex}");
        assert!(p["messages"].as_u64().unwrap() > 0, "{ex}");
    }
}

/// Without --static-only, what the static path cannot resolve is predicted from a traced run at
/// the same ranks, and the prediction says where the static path stopped.
#[test]
fn static_path_falls_back_to_a_traced_run() {
    let p = json(&[
        "examples/isort.c",
        "-n",
        "2",
        "--platform",
        LOCALHOST,
        "--",
        "20000",
        "2",
    ]);
    assert_eq!(p["mode"], "trace");
    let f = &p["fallback"];
    assert_eq!(f["traced_ranks"], 2);
    let why = f["static_error"].as_str().unwrap();
    assert!(
        why.contains("isort.c:151") && why.contains("MPI_Alltoallv"),
        "{why}"
    );
    assert!(p["messages"].as_u64().unwrap() > 0);
    let launch: Vec<&str> = p["launch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        launch.contains(&"--bind-to") && launch.ends_with(&["20000", "2"]),
        "{launch:?}"
    );
}

/// A program whose first argument must equal its rank count is traced at 2 ranks with
/// --trace-args and predicted at 4 with its own arguments; the traced run's arguments are
/// recorded, and the predicted chain has 4 ranks sending n doubles 20 times each.
#[test]
fn trace_args_drive_the_traced_run() {
    let src = "tests/fixtures/build/chain_args.c";
    let p = json(&[
        src,
        "-n",
        "4",
        "--trace-ranks",
        "2",
        "--trace-args",
        "2 1000 20",
        "--platform",
        LOCALHOST,
        "--",
        "4",
        "1000",
        "20",
    ]);
    assert_eq!(p["ranks"], 4);
    // The static path reproduces the 2-rank trace run with "2 1000 20": it predicts at 4 ranks
    // with the program's own arguments.
    assert_eq!(p["mode"], "static", "{p}");
    assert_eq!(p["args"], serde_json::json!(["4", "1000", "20"]));
    assert_eq!(p["bindings"]["n"], 1000.0);
    assert_eq!(
        p["messages"],
        3 * 20,
        "3 links of the chain, 20 messages each"
    );
    // Without --trace-args the traced run gets "4 ..." on 2 ranks, and the program refuses.
    let out = predict(&[
        src,
        "-n",
        "4",
        "--trace-ranks",
        "2",
        "--platform",
        LOCALHOST,
        "--machine",
        MACHINE,
        "--",
        "4",
        "1000",
        "20",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("traced run at 2 ranks"));
}

/// Every MPI action of a rank's trace as text, loops unfolded; compute, request completion and
/// communicator definitions left out, communicators not named (their ids are local choices).
fn mpi_actions(dir: &Path, rank: u32) -> Vec<String> {
    let mut rd = mpicast::trace::TraceReader::open(&mpicast::trace::rank_file(dir, rank)).unwrap();
    let mut out = Vec::new();
    while let Some((a, _)) = rd.next_action().unwrap() {
        out.push(match a {
            TraceAction::Send { to, bytes, tag, buffered: true, .. } => {
                format!("buffered send to {to} {bytes} B tag {tag}")
            }
            TraceAction::Send { to, bytes, tag, .. }
            | TraceAction::Isend { to, bytes, tag, .. } => {
                format!("send to {to} {bytes} B tag {tag}")
            }
            TraceAction::Recv { from, .. } | TraceAction::Irecv { from, .. } => {
                format!("recv from {from:?}")
            }
            TraceAction::Sendrecv {
                to,
                send_bytes,
                from,
                ..
            } => format!("sendrecv to {to} {send_bytes} B from {from:?}"),
            TraceAction::Barrier { .. } => "barrier".into(),
            TraceAction::Bcast { bytes, root, .. } => format!("bcast {bytes} B root {root}"),
            TraceAction::Reduce { bytes, root, .. } => format!("reduce {bytes} B root {root}"),
            TraceAction::Allreduce { bytes, .. } => format!("allreduce {bytes} B"),
            TraceAction::Scatter { bytes, root, .. } => format!("scatter {bytes} B root {root}"),
            TraceAction::Gather { bytes, root, .. } => format!("gather {bytes} B root {root}"),
            TraceAction::Allgather { bytes, .. } => format!("allgather {bytes} B"),
            TraceAction::Alltoall { bytes, .. } => format!("alltoall {bytes} B"),
            TraceAction::Compute { .. }
            | TraceAction::CommDef { .. }
            | TraceAction::Wait { .. }
            | TraceAction::Waitall { .. } => continue,
            other => format!("{other:?}"),
        });
    }
    out
}

/// The lines starting with `rank ` that a real run prints (mpicc, mpirun), sorted.
fn real_run_lines(scratch: &Scratch, src: &str, ranks: u32, args: &[&str]) -> Vec<String> {
    real_run_lines_with(scratch, src, ranks, args, &[])
}

/// [`real_run_lines`] built with extra compiler flags (`-I` to a harness's headers).
fn real_run_lines_with(scratch: &Scratch, src: &str, ranks: u32, args: &[&str], cflags: &[&str]) -> Vec<String> {
    let exe = scratch.path().join("prog");
    let out = Command::new("mpicc")
        .args(["-O1", "-o", exe.to_str().unwrap()])
        .args(cflags)
        .args([src, "-lm"])
        .current_dir(root())
        .output()
        .expect("mpicc");
    assert!(
        out.status.success(),
        "mpicc {src}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut cmd = Command::new("mpirun");
    cmd.args(scratch.mpirun_args().split_whitespace())
        .args(["-n", &ranks.to_string(), exe.to_str().unwrap()])
        .args(args);
    let out = cmd.output().expect("mpirun");
    assert!(
        out.status.success(),
        "mpirun {src}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("rank "))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// Static evaluation of a fixture against the program itself: the values it prints (its resolved
/// parameters, decomposition and message sizes) as a real run prints them, and the static
/// path's messages as `mpicast trace` records them.
fn static_matches_run(src: &str, ranks: u32, defines: &[&str], args: &[&str]) {
    let scratch = Scratch::new("mpicast-eval");
    let saved = scratch.path().join("static");
    let n = ranks.to_string();
    let mut a = vec![
        src,
        "-n",
        &n,
        "--platform",
        LOCALHOST,
        "--save-traces",
        saved.to_str().unwrap(),
    ];
    for d in defines {
        a.extend(["-D", d]);
    }
    a.push("--");
    a.extend(args);
    let p = json(&a);
    assert_eq!(p["mode"], "static", "{src}");
    let mut got: Vec<String> = p["static_output"]
        .as_array()
        .expect("static_output")
        .iter()
        .flat_map(|r| {
            r["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap().to_string())
        })
        .filter(|l| l.starts_with("rank "))
        .collect();
    got.sort();
    // -D binds the program's variable: the real run gets the same value through its argument.
    let want = real_run_lines(&scratch, src, ranks, args);
    assert!(!want.is_empty(), "{src}: the run printed nothing");
    assert_eq!(
        got, want,
        "{src}: values the static evaluation computed vs what the run printed"
    );
    let traced = scratch.trace("traced", &root().join(src), ranks, args);
    for r in 0..ranks {
        assert_eq!(
            mpi_actions(&saved, r),
            mpi_actions(&traced, r),
            "{src}: rank {r}: static messages vs the trace's"
        );
    }
}

#[test]
fn eval_a_test_harness_hands_out_every_kind_of_communicator() {
    // MPI_COMM_SELF, an intercommunicator whose non-leaders pass -1 as the remote leader and
    // its merge, groups with MPI_Comm_create_group and MPI_Comm_create (MPICH's test suite).
    static_matches_run("tests/fixtures/eval/mtest_comms.c", 4, &[], &[]);
}

#[test]
fn eval_static_locals_keep_their_value_across_calls() {
    static_matches_run("tests/fixtures/eval/static_locals.c", 2, &[], &[]);
}

#[test]
fn eval_argv_ternary_and_renamed_main_parameters() {
    static_matches_run("tests/fixtures/eval/argv_ternary.c", 3, &[], &["50"]);
}

#[test]
fn eval_define_binds_a_program_variable() {
    // -D n=64 wins over the program argument: the run is given 64 itself.
    let scratch = Scratch::new("mpicast-eval-d");
    let d = scratch.path().to_str().unwrap();
    let p = json(&[
        "tests/fixtures/eval/argv_ternary.c",
        "-n",
        "2",
        "--platform",
        LOCALHOST,
        "-D",
        "n=64",
        "--save-traces",
        d,
        "--",
        "50",
    ]);
    let lines: Vec<&str> = p["static_output"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["lines"].as_array().unwrap())
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(lines, ["rank 0: n=64 count=64", "rank 1: n=64 count=128"]);
    // A value that is not a number is not refused: it binds the communicator variable.
    static_matches_run(
        "tests/fixtures/eval/comms.c",
        4,
        &["comm=MPI_COMM_WORLD"],
        &[],
    );
}

#[test]
fn eval_getopt_into_a_config_struct() {
    static_matches_run(
        "tests/fixtures/eval/getopt_config.c",
        3,
        &[],
        &["-n", "20", "-v", "-i", "3", "-a", "0.25"],
    );
}

#[test]
fn eval_getopt_long() {
    static_matches_run(
        "tests/fixtures/eval/getopt_long_opts.c",
        2,
        &[],
        &["--length", "12", "--quiet", "-m", "64"],
    );
}

#[test]
fn eval_hand_written_option_parser() {
    static_matches_run(
        "tests/fixtures/eval/hand_parser.c",
        3,
        &[],
        &["-n", "7", "--reps=2", "-t", "0.01"],
    );
}

#[test]
fn eval_decomposition_sent_by_the_master() {
    static_matches_run("tests/fixtures/eval/master_rows.c", 4, &[], &["10"]);
}

#[test]
fn eval_communicator_alias_dup_and_split() {
    static_matches_run("tests/fixtures/eval/comms.c", 4, &[], &[]);
}

#[test]
fn eval_small_arrays_math_and_unreached_input_file() {
    static_matches_run("tests/fixtures/eval/scalars_math.c", 4, &[], &["37"]);
}

/// A convergence loop over an array: run to its end where the array is small (calloc'd
/// doubles stay doubles; a short loop storing into it is not extrapolated), so the static path
/// takes the run's iterations; over a large array it needs a trace and says so in one line.
#[test]
fn eval_convergence_loop_runs_when_small_and_needs_a_trace_when_large() {
    static_matches_run("tests/fixtures/eval/convergence.c", 2, &[], &["64"]);
    let out = predict(&[
        "tests/fixtures/eval/convergence.c",
        "-n",
        "2",
        "--static-only",
        "--platform",
        LOCALHOST,
        "--machine",
        MACHINE,
        "--",
        "100000",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("convergence.c:18")
            && err.contains("depends on data")
            && err.contains("--trace-ranks"),
        "{err}"
    );
}

/// From the corpus (NAS's `logprocs = ilog2(nprocs)`): a call whose callee returns from inside
/// its loop, assigned to a variable, no longer stops the static path.
#[test]
fn corpus_call_returning_from_a_loop_resolves_statically() {
    let p = json(&[
        "tests/fixtures/corpus/return_in_loop.c",
        "-n",
        "2",
        "--static-only",
        "--platform",
        LOCALHOST,
        "--",
        "4",
    ]);
    assert_eq!(p["mode"], "static");
    assert_eq!(p["messages"], 1, "the broadcast after the checks");
}

/// From the corpus (the MPICH test harness): a header no unit includes is not analysed, getenv
/// reads the environment predict runs in, and MPI_COMM_SELF has one rank. Each program is
/// predicted statically, with the messages and time of the trace path.
#[test]
fn corpus_unused_headers_environment_and_comm_self_resolve_statically() {
    for src in [
        "tests/fixtures/corpus/unused_header",
        "tests/fixtures/corpus/env_and_self.c",
    ] {
        let s = json(&[src, "-n", "2", "--static-only", "--platform", LOCALHOST]);
        let t = json(&[
            src,
            "-n",
            "2",
            "--trace-ranks",
            "2",
            "--platform",
            LOCALHOST,
        ]);
        assert_eq!(s["mode"], "static", "{src}");
        assert_eq!(s["messages"], t["messages"], "{src}");
        let (ps, pt) = (
            s["predicted_s"].as_f64().unwrap(),
            t["predicted_s"].as_f64().unwrap(),
        );
        assert!(close(ps, pt, 0.02), "{src}: static {ps} s, trace {pt} s");
    }
}

/// Executions of the block of `kind` starting at `line` in a prediction's JSON.
fn executions(p: &serde_json::Value, line: u64, kind: &str) -> f64 {
    p["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["line_start"] == line && b["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} block at line {line}"))["executions"]
        .as_f64()
        .unwrap()
}

/// From the corpus (MPICH's test harness): the static path and a trace agree block by block on
/// a program that works before MPI_Init, calls it from a helper and frees duplicates through a
/// helper that compares them with the world. Neither counts what ran before MPI_Init (the
/// span starts there); the free runs three times per rank.
#[test]
fn static_and_trace_count_from_mpi_init_and_a_duplicate_is_not_the_world() {
    let src = "tests/fixtures/eval/before_init.c";
    let run = |mode: &[&str]| {
        let mut a = vec![src, "-n", "2", "--platform", LOCALHOST];
        a.extend(mode);
        json(&a)
    };
    let (s, t) = (run(&["--static-only"]), run(&["--trace-ranks", "2"]));
    let execs = |p: &serde_json::Value| -> std::collections::BTreeMap<String, f64> {
        p["blocks"].as_array().unwrap().iter().map(|b| (b["id"].as_str().unwrap().rsplit('/').next().unwrap().to_string(), b["executions"].as_f64().unwrap())).filter(|(_, e)| *e > 0.0).collect()
    };
    assert_eq!(execs(&s), execs(&t));
    assert!(!execs(&t).keys().any(|k| k.starts_with("before_init.c:11:")), "the setup loop ran before MPI_Init: {:?}", execs(&t));
    assert_eq!(executions(&s, 26, "branch"), 6.0);
    assert_eq!(executions(&s, 42, "straight"), 2000.0);
}

/// Statements after MPI_Init in the same straight run of code (Open MPI's hello_c, predicted at
/// 0 s by both paths when they were charged with the block the call sits in, before counts
/// start): a block of their own, entered after the call, counted once per rank by both.
#[test]
fn statements_after_mpi_init_are_counted() {
    let src = "tests/fixtures/eval/after_init.c";
    let run = |mode: &[&str]| {
        let mut a = vec![src, "-n", "2", "--platform", LOCALHOST];
        a.extend(mode);
        json(&a)
    };
    let (s, t) = (run(&["--static-only"]), run(&["--trace-ranks", "2"]));
    assert_eq!(executions(&s, 12, "straight"), 2.0);
    assert_eq!(executions(&t, 12, "straight"), 2.0);
    assert!(s["predicted_s"].as_f64().unwrap() > 0.0);
    assert_eq!(s["predicted_s"], t["predicted_s"]);
}

/// A trace taken with the sources named one way and predicted with them named another (an
/// absolute path, then relative to the current directory) costs the same compiled code: the
/// blocks are matched by place, not by the spelling of their file (NAS IS was 50.5 ms one way,
/// 22.6 ms the other).
#[test]
fn a_trace_costs_the_same_whatever_the_sources_path() {
    let s = Scratch::new("mpicast-path-spelling");
    let src = "examples/jacobi2d.c";
    let args = ["128", "40", "10"];
    let t = s.trace("j2", &root().join(src), 2, &args);
    let run = |path: &str| {
        let mut a = vec![path, "-n", "2", "--trace", t.to_str().unwrap(), "--platform", LOCALHOST, "--"];
        a.extend(args);
        json(&a)
    };
    let (rel, abs) = (run(src), run(root().join(src).to_str().unwrap()));
    assert!(rel["assumptions"].to_string().contains("compute costed from the compiled code"), "{}", rel["assumptions"]);
    assert_eq!(rel["predicted_s"], abs["predicted_s"]);
    assert_eq!(rel["op_classes"], abs["op_classes"]);
}

/// From the corpus (MPICH's collective tests): MPI_Comm_size on a communicator other than the
/// world writes that communicator's size, not the number of processes; through an alias of
/// the world it is the number of processes. Static and trace agree on the known counts.
#[test]
fn a_sub_communicators_size_is_the_programs_variable() {
    let src = "tests/fixtures/eval/subcomm_size.c";
    let model = mpicast::frontend::analyze(&[root().join(src)], &mpicast::frontend::Options::default());
    let count = |line: u32| {
        let b = model.blocks.iter().find(|b| b.line_start == line && b.kind == mpicast::model::analysis::BlockKind::Loop).unwrap();
        format!("{:?}", b.count)
    };
    assert!(count(19).contains("size'"), "the half's size is the program's variable: {}", count(19));
    assert!(count(26).contains("size") && !count(26).contains("size'"), "the world's size through an alias: {}", count(26));
    for mode in [&["--static-only"][..], &["--trace-ranks", "4"][..]] {
        let mut a = vec![src, "-n", "4", "--platform", LOCALHOST];
        a.extend(mode);
        let p = json(&a);
        // Four ranks, halves of 2: 2 x (1 + 2 + ... + 4096) stores each; the world's 1000 x 4.
        assert_eq!(executions(&p, 21, "straight"), 4.0 * 2.0 * 8191.0, "{mode:?}");
        assert_eq!(executions(&p, 27, "straight"), 4.0 * 4000.0, "{mode:?}");
    }
}

/// From the corpus (SimGrid's NAS EP and gemm): loops written through statement macros, one
/// defined beside the code and one in a header forced in with -include from outside the
/// sources, are analysed as the compiler expands them; a matrix dimension named `size` is the
/// program's variable, not the communicator size. Counts are the program's, static and trace
/// agree.
#[test]
fn corpus_statement_macro_loops_resolve_statically() {
    let s = json(&[
        "tests/fixtures/corpus/macro_loop.c",
        "-n",
        "2",
        "--static-only",
        "--platform",
        LOCALHOST,
        "--",
        "30000",
    ]);
    let t = json(&[
        "tests/fixtures/corpus/macro_loop.c",
        "-n",
        "2",
        "--trace-ranks",
        "2",
        "--platform",
        LOCALHOST,
        "--",
        "30000",
    ]);
    assert_eq!(s["mode"], "static");
    assert_eq!(
        executions(&s, 19, "straight"),
        60000.0,
        "the body, 30000 times on each of 2 ranks"
    );
    let (ps, pt) = (
        s["predicted_s"].as_f64().unwrap(),
        t["predicted_s"].as_f64().unwrap(),
    );
    assert!(close(ps, pt, 0.02), "static {ps} s, trace {pt} s");

    let dir = root().join("tests/fixtures/corpus/forced_header");
    let cflags = format!("-include {}", dir.join("shim/sample.h").display());
    let src = dir.join("src");
    let src = src.to_str().unwrap();
    let s = json(&[
        src,
        "-n",
        "2",
        "--static-only",
        "--platform",
        LOCALHOST,
        "--cflags",
        &cflags,
        "--",
        "64",
    ]);
    let t = json(&[
        src,
        "-n",
        "2",
        "--trace-ranks",
        "2",
        "--platform",
        LOCALHOST,
        "--cflags",
        &cflags,
        "--",
        "64",
    ]);
    assert_eq!(s["mode"], "static");
    assert_eq!(
        executions(&s, 14, "straight"),
        64.0 * 64.0 * 64.0,
        "32 rows x 64 x 64 on each rank"
    );
    assert_eq!(executions(&t, 14, "straight"), 64.0 * 64.0 * 64.0);
    let (ps, pt) = (
        s["predicted_s"].as_f64().unwrap(),
        t["predicted_s"].as_f64().unwrap(),
    );
    assert!(close(ps, pt, 0.02), "static {ps} s, trace {pt} s");
}

/// From the corpus (NAS EP): an array refilled by a loop charged by formula holds unknown
/// values afterwards (no stale constant decides the branch on its elements), and the branch is
/// charged at the rate a sample run of the outer loop measures on the program's own data: the
/// traced run's count within 2%, where the assumed half was 36% off.
#[test]
fn corpus_branch_on_refilled_array_is_charged_at_the_sampled_rate() {
    let s = json(&[
        "tests/fixtures/corpus/stale_array.c",
        "-n",
        "2",
        // Executions are compared: every block keeps its operators' cost and is listed.
        "--ops",
        "source",
        "--static-only",
        "--platform",
        LOCALHOST,
        "--",
        "64",
    ]);
    let t = json(&[
        "tests/fixtures/corpus/stale_array.c",
        "-n",
        "2",
        "--ops",
        "source",
        "--trace-ranks",
        "2",
        "--platform",
        LOCALHOST,
        "--",
        "64",
    ]);
    let body = executions(&s, 33, "straight");
    assert_eq!(body, 2.0 * 64.0 * 4096.0);
    assert_eq!(executions(&t, 33, "straight"), body);
    let (arm, run) = (
        executions(&s, 36, "straight"),
        executions(&t, 36, "straight"),
    );
    assert!(
        close(arm, run, 0.02),
        "static {arm} executions of the arm, the run {run}"
    );
    assert!(
        (run / body - 0.5).abs() > 0.1,
        "the run's rate {} is far from the assumed half",
        run / body
    );
    let notes = s["assumptions"].to_string();
    assert!(
        notes.contains("sample run of the loop at") && notes.contains("stale_array.c:30"),
        "{notes}"
    );
}

/// From the corpus (NAS EP at class S): the fill before the branch is too long for a sample
/// run's budget; the sample cuts it short and measures the branch on the numbers it made: the
/// arm charged at the traced run's rate within 2%, where the assumed half was 36% off.
#[test]
fn corpus_branch_after_a_long_fill_is_sampled_on_what_the_fill_made() {
    let run = |mode: &[&str]| {
        let mut args = vec!["tests/fixtures/corpus/long_fill.c", "-n", "2", "--ops", "source"];
        args.extend_from_slice(mode);
        args.extend_from_slice(&["--platform", LOCALHOST, "--", "4"]);
        json(&args)
    };
    let (s, t) = (run(&["--static-only"]), run(&["--trace-ranks", "2"]));
    let body = executions(&s, 28, "straight");
    assert_eq!(body, 2.0 * 4.0 * 131072.0);
    assert_eq!(executions(&t, 28, "straight"), body);
    let (arm, traced) = (executions(&s, 31, "straight"), executions(&t, 31, "straight"));
    assert!(close(arm, traced, 0.02), "static {arm} executions of the arm, the run {traced}");
    assert!((traced / body - 0.5).abs() > 0.1, "the run's rate {} is near the assumed half", traced / body);
    let notes = s["assumptions"].to_string();
    assert!(notes.contains("sample run of the loop at") && notes.contains("long_fill.c:30"), "{notes}");
}

/// From the corpus (MPICH's ctxsplit): rand() draws the split colours and a message length;
/// the static path follows the C library's sequence (and srand) as the run does.
#[test]
fn eval_rand_follows_the_c_library_sequence() {
    static_matches_run("tests/fixtures/corpus/rand_split.c", 2, &[], &[]);
}

/// From the corpus (NAS DT): a communication graph built on the heap (malloc'd structs linked
/// by pointers, calloc + memcpy growth, snprintf/strdup names, strstr, strncmp, pointer
/// comparisons); message sizes and peers come from walking it. Static values and messages are
/// the run's.
#[test]
fn eval_heap_graph_drives_the_messages() {
    static_matches_run("tests/fixtures/corpus/heap_graph.c", 2, &[], &["3"]);
    static_matches_run("tests/fixtures/corpus/heap_graph.c", 3, &[], &["5"]);
}

/// From the corpus (MPICH's redscat, SimGrid's coll2): collectives inside inline helpers of a
/// header outside the sources (found through -I), called in a loop, are evaluated as the
/// compiler sees them: the values they carry are the run's, and nothing is left unpredicted.
#[test]
fn corpus_helpers_of_a_header_outside_the_sources_are_evaluated() {
    let dir = root().join("tests/fixtures/corpus/outside_helper");
    let cflags = format!("-I{}", dir.join("inc").display());
    let src = dir.join("src");
    let p = json(&[
        src.to_str().unwrap(),
        "-n",
        "2",
        "--static-only",
        "--platform",
        LOCALHOST,
        "--cflags",
        &cflags,
    ]);
    let notes = p["assumptions"].to_string();
    assert!(!notes.contains("defined outside the analysed sources"), "{notes}");
    let mut got: Vec<String> = p["static_output"]
        .as_array()
        .expect("static_output")
        .iter()
        .flat_map(|r| r["lines"].as_array().unwrap().iter().map(|l| l.as_str().unwrap().to_string()))
        .collect();
    got.sort();
    let scratch = Scratch::new("mpicast-helper");
    let main = dir.join("src/main.c");
    let want = real_run_lines_with(&scratch, main.to_str().unwrap(), 2, &[], &[&cflags]);
    assert_eq!(want.len(), 6, "{want:?}");
    assert_eq!(got, want, "values computed through the helpers vs the run's");
}

/// From the corpus (MPICH's allgather2, alltoall1, redscat, scantst; SimGrid's gather2):
/// collectives in place (the send type MPI_DATATYPE_NULL) and reductions that give each rank a
/// part or a prefix: values and messages are the run's.
#[test]
fn eval_in_place_collectives_and_prefix_reductions() {
    static_matches_run("tests/fixtures/corpus/in_place_scans.c", 2, &[], &[]);
    static_matches_run("tests/fixtures/corpus/in_place_scans.c", 4, &[], &[]);
}

/// From the corpus (MPICH's bcasttest): a long broadcast carries its first values, so that the
/// receivers' element checks are evaluated (their error branch never taken) as in the run.
#[test]
fn eval_long_broadcast_carries_its_first_values() {
    static_matches_run("tests/fixtures/corpus/long_bcast_check.c", 2, &[], &[]);
}

/// From the corpus (the MPICH test harness, comm_group_half, commcreate1): communicators from
/// groups and from a merged intercommunicator; values and messages are the run's.
#[test]
fn eval_groups_and_merged_intercommunicators() {
    static_matches_run("tests/fixtures/corpus/groups_intercomm.c", 2, &[], &[]);
    static_matches_run("tests/fixtures/corpus/groups_intercomm.c", 4, &[], &[]);
}

/// From the corpus (SimGrid's vecblklen and opsum): derived datatypes, the complex types and
/// OpenMPI's pair-type sizes; sizes and message bytes are the run's.
#[test]
fn eval_derived_datatypes_and_pair_type_sizes() {
    static_matches_run("tests/fixtures/corpus/derived_types.c", 2, &[], &[]);
}

/// From the corpus (MPICH's transp_datatype): sizeof of arrays and of their rows (static, local,
/// variable-length) sizes messages; values and messages are the run's.
#[test]
fn eval_sizeof_of_declared_arrays() {
    static_matches_run("tests/fixtures/corpus/sizeof_arrays.c", 2, &[], &[]);
}

/// From the corpus (MPICH's bsendfrag): buffered sends larger than the eager threshold, received
/// after a barrier in another order. Both the static path and a prediction from the trace
/// complete (the sender goes on), with the run's messages.
#[test]
fn buffered_sends_do_not_wait_for_their_receives() {
    let src = "tests/fixtures/corpus/bsend_after_barrier.c";
    static_matches_run(src, 2, &[], &[]);
    let scratch = Scratch::new("mpicast-bsend");
    let traced = scratch.trace("traced", &root().join(src), 2, &[]);
    let p = json(&[src, "-n", "2", "--trace", traced.to_str().unwrap(), "--platform", LOCALHOST]);
    assert_eq!(p["mode"], "trace");
    assert!(p["predicted_s"].as_f64().unwrap() > 0.0);
}

/// From the corpus (MPICH's red3, gather2, cmsplit2, fetchandadd): reductions by the user's
/// own functions (one that does not commute, applied in rank order at the root; one that
/// commutes, in an MPI_Allreduce), a gather from a datatype with holes, a short checking nest
/// inside a loop, qsort with the program's comparator. Values and messages are the run's, and
/// every block runs as often as in the trace: the operations' and the comparator's calls, and
/// no error report (the gathered data is not taken for wrong values).
#[test]
fn eval_user_operations_and_derived_datatypes() {
    let src = "tests/fixtures/corpus/user_ops.c";
    static_matches_run(src, 4, &[], &[]);
    let scratch = Scratch::new("mpicast-userops");
    let traced = scratch.trace("traced", &root().join(src), 4, &[]);
    let execs = |p: &serde_json::Value| -> std::collections::BTreeMap<String, f64> {
        p["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (format!("{}:{}", b["function"].as_str().unwrap(), b["line_start"]), b["executions"].as_f64().unwrap()))
            .collect()
    };
    let stat = execs(&json(&[src, "-n", "4", "--static-only", "--top", "1000", "--platform", LOCALHOST]));
    let trace = execs(&json(&[src, "-n", "4", "--trace", traced.to_str().unwrap(), "--top", "1000", "--platform", LOCALHOST]));
    assert_eq!(stat, trace, "{src}: block executions, static path vs trace");
    // matmul: 3 calls at each of 4 roots; absmax: 2 steps of recursive doubling at each rank.
    assert_eq!(stat.get("matmul:12"), Some(&12.0), "{stat:?}");
    assert_eq!(stat.get("absmax:31"), Some(&8.0), "{stat:?}");
    // qsort: glibc's merge sort of 37, 36, 35 and 34 keys compares 147 + 145 + 136 + 133 times.
    assert_eq!(stat.get("bydigits:44"), Some(&561.0), "{stat:?}");
    // From 8 ranks OpenMPI reduces a small message by an operation that does not commute
    // along its in-order binary tree: 7 calls per root spread over ranks 1, 3, 6 and 7 (the
    // trace's per-rank compute differs from the root-does-all model, the totals do not).
    let traced8 = scratch.trace("traced8", &root().join(src), 8, &[]);
    let per_rank = |p: &serde_json::Value| -> Vec<f64> { p["ranks_detail"].as_array().unwrap().iter().map(|r| r["compute_s"].as_f64().unwrap()).collect() };
    let s8 = json(&[src, "-n", "8", "--static-only", "--platform", LOCALHOST]);
    let t8 = json(&[src, "-n", "8", "--trace", traced8.to_str().unwrap(), "--platform", LOCALHOST]);
    for (r, (a, b)) in per_rank(&s8).iter().zip(per_rank(&t8)).enumerate() {
        assert!((a - b).abs() <= 1e-4 * b, "{src}: rank {r} compute at 8 ranks: static {a} vs trace {b}");
    }
}

/// From the corpus (MPICH's cmsplit2): communicators split in a loop whose first iterations
/// are alike for the last ranks (they pass MPI_UNDEFINED) are not folded: every member's split
/// counts, and the orders of keys are the run's at 5 ranks.
#[test]
fn eval_splits_in_a_loop_are_not_folded_away() {
    static_matches_run("tests/fixtures/corpus/split_loop.c", 5, &[], &[]);
}

/// From the corpus (MPICH's accfence2): memory in an RMA window and what MPI_Get fetches are
/// unknown after a synchronisation, not the zeros they held: the checks report no error, as
/// the run does.
#[test]
fn eval_window_memory_is_not_taken_for_what_it_held() {
    static_matches_run("tests/fixtures/corpus/rma_window.c", 2, &[], &[]);
}

/// From the corpus (MPICH's distgraph1, graphcr): graph and distributed-graph communicators,
/// their neighbours and kinds; values and messages are the run's.
#[test]
fn eval_graph_topologies() {
    static_matches_run("tests/fixtures/corpus/graph_topologies.c", 2, &[], &[]);
    static_matches_run("tests/fixtures/corpus/graph_topologies.c", 4, &[], &[]);
}

/// From the corpus (MPICH's anyall): MPI_Waitany completes the first active request and says
/// which; MPI_Waitsome the rest; loops bounded by the index follow the run.
#[test]
fn eval_waitany_gives_the_first_active_request() {
    static_matches_run("tests/fixtures/corpus/waitany_order.c", 2, &[], &[]);
}

/// From the corpus (the MPICH test harness): communicators handed out through a pointer,
/// compared with MPI_COMM_NULL, agreed on with an MPI_LAND Allreduce: the run's rounds.
#[test]
fn eval_comm_null_comparison_and_logical_reduction() {
    static_matches_run("tests/fixtures/corpus/comm_null_rounds.c", 2, &[], &[]);
}

/// From the corpus (the MPICH test harness): a loop agrees through an Allreduce per round;
/// the static evaluation takes as many passes as it needs, and follows the run.
#[test]
fn eval_reduction_per_round_needs_more_passes() {
    static_matches_run("tests/fixtures/corpus/harness_reduce_loop.c", 2, &[], &[]);
}

/// From the corpus (NAS IS): a randlc-style generator truncating doubles into an int, key and
/// count arrays behind an anonymous typedef'd struct of pointers, a zero-initialised histogram
/// and malloc'd buffers summed by MPI_Allreduce: the static values and messages are the run's.
#[test]
fn eval_typed_keys_histogram_and_reduced_counts() {
    static_matches_run("tests/fixtures/corpus/typed_keys.c", 2, &[], &["200"]);
    static_matches_run("tests/fixtures/corpus/typed_keys.c", 3, &[], &["150"]);
}

/// From the corpus (NAS IS): a sum over a range of buckets whose first ones are empty (a
/// trend from the first iterations said it stays 0) sizes a loop and a message.
#[test]
fn eval_sums_over_array_elements_are_not_extrapolated() {
    static_matches_run("tests/fixtures/corpus/bucket_sums.c", 2, &[], &[]);
    static_matches_run("tests/fixtures/corpus/bucket_sums.c", 4, &[], &[]);
}

/// From the corpus (NAS IS): a message count from a histogram of 100,000 generated keys. The
/// static path refuses and names --estimate-bulk; with it, the key and histogram loops run on
/// their first iterations, the sums are scaled (noted) and the count is the run's within 2%.
#[test]
fn estimate_bulk_scales_a_prefix_of_a_long_histogram_loop() {
    let src = "tests/fixtures/corpus/bulk_histogram.c";
    let out = predict(&[src, "-n", "2", "--static-only", "--platform", LOCALHOST]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bulk_histogram.c:56") && err.contains("--estimate-bulk"),
        "{err}"
    );
    let s = json(&[
        src,
        "-n",
        "2",
        "--static-only",
        "--estimate-bulk",
        "--platform",
        LOCALHOST,
    ]);
    assert_eq!(s["mode"], "static");
    let count = |l: &str| -> f64 { l.rsplit(' ').next().unwrap().parse().unwrap() };
    let got = count(s["static_output"][0]["lines"][0].as_str().unwrap());
    let scratch = Scratch::new("mpicast-eval");
    let want = count(&real_run_lines(&scratch, src, 2, &[])[0]);
    assert!(
        close(got, want, 0.02),
        "estimated count {got}, the run's {want}"
    );
    let notes = s["assumptions"].to_string();
    assert!(
        notes.contains("sums over the first") && notes.contains("bulk_histogram.c:48"),
        "{notes}"
    );
}

/// The memory bound, from the fixture table's memory figures (measured at 24 KiB, 512 KiB,
/// 2 MiB and 128 MiB; the figures at a reuse distance's size) on tests/fixtures/memory/walks.c:
/// - a column walk of a 4096 x 4096 matrix of longs (128 MiB, DRAM) moves 32 KiB per access,
///   past a page: the strided-load figure, here the random-load one (23.167 ns; the fixture
///   table predates the strided kernel), and the block is bound by it;
/// - the row walk of the same matrix streams from DRAM (0.2713 ns per 8 bytes) under its ops;
/// - random increments into 64 Ki longs (512 KiB, L2): a random load (0.557 ns), the store
///   finding its line there;
/// - a polynomial over 1 Ki doubles (8 KiB, L1): no memory time, a loop-carried chain;
/// - random increments into 128 Ki longs (1 MiB, between the 512 KiB and 2 MiB working sets,
///   but as large as the table's L2, where the 512 KiB figures were measured): the 2 MiB
///   working set's random-load figure (between two working sets the figures are interpolated
///   only up to the capacity of the smaller one's cache).
#[test]
fn memory_bound_blocks_cost_what_their_level_does() {
    let hot = |args: &[&str], line: u64| -> serde_json::Value {
        let mut a = vec!["tests/fixtures/memory/walks.c", "-n", "1", "--ops", "source", "--platform", LOCALHOST, "--"];
        a.extend(args);
        block_on_line(&json(&a), line)
    };
    let cells = 4096.0 * 4096.0;
    let col = hot(&["1", "4096", "1"], 29);
    assert_eq!(col["memory"]["level"], "DRAM", "{col}");
    let want = cells * 23.167e-9;
    assert!(close(col["memory"]["seconds"].as_f64().unwrap(), want, 1e-3), "{col}");
    assert!(close(col["seconds"].as_f64().unwrap(), want, 1e-3), "the column walk is bound by memory: {col}");
    let row = hot(&["0", "4096", "1"], 20);
    assert_eq!(row["memory"]["level"], "DRAM", "{row}");
    assert!(close(row["memory"]["seconds"].as_f64().unwrap(), cells * 0.2713e-9, 1e-3), "{row}");
    let ops: f64 = row["op_seconds"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum();
    assert!(ops > cells * 0.2713e-9 && close(row["seconds"].as_f64().unwrap(), ops, 1e-9), "the row walk is bound by its ops: {row}");
    let hist = hot(&["2", "1000000", "65536"], 37);
    assert_eq!(hist["memory"]["level"], "L2", "{hist}");
    assert!(close(hist["memory"]["seconds"].as_f64().unwrap(), 1e6 * 0.557e-9, 1e-3), "{hist}");
    let mid = hot(&["2", "1000000", "131072"], 37);
    let want = 1e6 * 1e-9 * 1.9327329577709205;
    assert_eq!(mid["memory"]["level"], "L3", "{mid}");
    assert!(close(mid["memory"]["seconds"].as_f64().unwrap(), want, 1e-3), "{mid} want {want}");
    let poly = hot(&["3", "1024", "100"], 49);
    assert!(poly.get("memory").is_none(), "{poly}");
    // Its `s +=` waits for the previous iteration's add: a chain of one double_add latency
    // (1 ns in the fixture) per iteration, under the block's ops here.
    assert_eq!(poly["chain"]["var"], "s", "{poly}");
    assert!(close(poly["chain"]["seconds"].as_f64().unwrap(), 102400.0 * 1e-9, 1e-9), "{poly}");
    let ops: f64 = poly["op_seconds"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum();
    assert!(close(poly["seconds"].as_f64().unwrap(), ops.max(102400.0 * 1e-9), 1e-9), "{poly}");
}

/// A time loop that reads its variable only by its period and against bounds
/// (tests/fixtures/eval/periodic.c: a reduction every 7 steps, a barrier at step 50 of 101, an
/// exchange in the last): the static path folds the 7 whole periods before step 50 and gives
/// what the traced run gives, to the message.
#[test]
fn loops_that_read_their_variable_by_period_fold_and_agree_with_the_trace() {
    let args = ["--", "1000", "101", "7"];
    let mut st = vec!["tests/fixtures/eval/periodic.c", "-n", "2", "--platform", LOCALHOST];
    st.extend(args);
    let split = st.iter().position(|a| *a == "--").unwrap();
    let mut a = st[..split].to_vec();
    a.extend(["--machine", MACHINE, "--json", "-"]);
    a.extend(&st[split..]);
    let out = Command::new(exe())
        .current_dir(root())
        .arg("predict")
        .args(&a)
        .env("MPICAST_EVAL_DEBUG", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("periodic.c:21 folded by periods: 7 of 7 iterations"), "{err}");
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut tr = st.clone();
    tr.splice(split..split, ["--trace-ranks", "2"]);
    let t = json(&tr);
    assert_eq!((s["mode"].as_str(), t["mode"].as_str()), (Some("static"), Some("trace")));
    assert_eq!(s["messages"], t["messages"]);
    let (ps, pt) = (s["predicted_s"].as_f64().unwrap(), t["predicted_s"].as_f64().unwrap());
    assert!(close(pt, ps, 1e-6), "trace path {pt} s, static path {ps} s");
}

/// Ranks are evaluated one after another; what a rank receives from a later one is taken
/// from another pass. Halos of bulk data and reductions of values computed from it
/// (examples/jacobi2d.c) are not known before running in any pass: one pass is enough. Known
/// values exchanged (tests/fixtures/eval/periodic.c sends and reduces them) still take
/// another pass, and then agree with the traced run.
#[test]
fn bulk_data_from_ranks_evaluated_later_needs_no_second_pass() {
    let passes = |args: &[&str]| -> String {
        let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        let out = Command::new(exe())
            .current_dir(root())
            .arg("predict")
            .args(&args[..split])
            .args(["--machine", MACHINE, "--platform", LOCALHOST])
            .args(&args[split..])
            .env("MPICAST_EVAL_DEBUG", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.starts_with("eval: pass") && l.contains(": missed")).collect::<Vec<_>>().join("\n")
    };
    let jacobi = passes(&["examples/jacobi2d.c", "-n", "4", "--", "64", "40"]);
    assert!(jacobi.contains("eval: pass 0:") && !jacobi.contains("eval: pass 1:"), "{jacobi}");
    assert!(jacobi.contains("receives from later ranks 4 (bulk only: true)"), "{jacobi}");
    let periodic = passes(&["tests/fixtures/eval/periodic.c", "-n", "4", "--", "1000", "101", "7"]);
    assert!(periodic.contains("eval: pass 1:"), "{periodic}");
    let st = json(&["tests/fixtures/eval/periodic.c", "-n", "4", "--platform", LOCALHOST, "--", "1000", "101", "7"]);
    let tr = json(&["tests/fixtures/eval/periodic.c", "-n", "4", "--platform", LOCALHOST, "--trace-ranks", "4", "--", "1000", "101", "7"]);
    assert_eq!(st["mode"], "static");
    assert_eq!(st["messages"], tr["messages"]);
    let (ps, pt) = (st["predicted_s"].as_f64().unwrap(), tr["predicted_s"].as_f64().unwrap());
    assert!(close(pt, ps, 1e-6), "trace path {pt} s, static path {ps} s");
}

/// The hottest-blocks entry of a prediction for the block that starts on `line`.
fn block_on_line(p: &serde_json::Value, line: u64) -> serde_json::Value {
    p["blocks"].as_array().unwrap().iter().find(|b| b["line_start"] == line).cloned().unwrap_or_else(|| panic!("no block on line {line}: {p}"))
}

/// Loads beyond L1 overlap a block's ops, stores beyond L1 add to them
/// (tests/fixtures/memory/stores.c, two arrays of 2^24 doubles: 128 MiB each, past the fixture
/// table's DRAM working set): the copy's block costs its ops plus its store stream at the DRAM
/// store figure (0.27775 ns per 8 bytes), its load stream (0.2713 ns) hidden under its ops; the
/// sum over the same array, loads only, costs its ops (its chain at the fixture's 1 ns double_add
/// latency).
#[test]
fn stores_beyond_l1_add_to_a_blocks_time_and_loads_overlap_it() {
    let n = 16777216.0;
    let p = json(&["tests/fixtures/memory/stores.c", "-n", "1", "--ops", "source", "--platform", LOCALHOST, "--", "16777216", "1"]);
    let ops = |b: &serde_json::Value| -> f64 { b["op_seconds"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum() };
    let copy = block_on_line(&p, 14);
    assert_eq!(copy["memory"]["level"], "DRAM", "{copy}");
    let (load, store) = (n * 0.2713177804464932e-9, n * 0.27775174350401666e-9);
    assert!(close(copy["memory"]["seconds"].as_f64().unwrap(), load + store, 1e-6), "{copy}");
    assert!(ops(&copy) > load, "{copy}");
    assert!(close(copy["seconds"].as_f64().unwrap(), ops(&copy) + store, 1e-9), "ops plus the store stream: {copy}");
    let sum = block_on_line(&p, 21);
    assert!(close(sum["memory"]["seconds"].as_f64().unwrap(), load, 1e-6), "{sum}");
    let bound = ops(&sum).max(n * 1e-9);
    assert!(close(sum["seconds"].as_f64().unwrap(), bound, 1e-9), "its loads under its ops and chain: {sum}");
}

/// The same blocks on a host whose cores hide only part of a stream under their work: the
/// fixture table with overlap-kernel figures added (0.25 ns at L1, the core's time; at every
/// other working set sqrt(0.25^2 + m^2) for the level's stream load m: an exponent of one half).
/// The copy's block costs sqrt(ops^2 + loads^2) plus its store stream; the sum's, the same
/// of the larger of its ops and chain and its loads; a table without the figures (above)
/// keeps the larger alone.
#[test]
fn a_hosts_overlap_exponent_combines_core_and_loads() {
    const CORE: f64 = 0.25;
    let dir = tempfile::tempdir().unwrap();
    let mut t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root().join(MACHINE)).unwrap()).unwrap();
    let memory = t["memory"].as_array().unwrap().clone();
    let mut added = Vec::new();
    for (k, m) in memory.iter().filter(|m| m["pattern"] == "stream" && m["access"] == "load").enumerate() {
        let stream = m["throughput"]["ns_per_op"].as_f64().unwrap();
        // The core's time (the kernel at L1) a quarter of a ns: at DRAM (0.2713 ns streamed)
        // the kernel runs 36% past the larger part, beyond the kernels' noise (OVERLAP_NOISE).
        let ns = if k == 0 { CORE } else { (CORE * CORE + stream * stream).sqrt() };
        let mut o = m.clone();
        o["pattern"] = "overlap".into();
        for f in ["ns_per_op", "min_ns", "max_ns"] {
            o["throughput"][f] = ns.into();
        }
        added.push(o);
    }
    assert!(added.len() >= 4, "{added:?}");
    t["memory"].as_array_mut().unwrap().extend(added);
    let table = dir.path().join("overlap.json");
    std::fs::write(&table, t.to_string()).unwrap();
    let out = predict(&["tests/fixtures/memory/stores.c", "-n", "1", "--ops", "source", "--platform", LOCALHOST, "--machine", table.to_str().unwrap(), "--json", "-", "--", "16777216", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = 16777216.0;
    let ops = |b: &serde_json::Value| -> f64 { b["op_seconds"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum() };
    let (load, store) = (n * 0.2713177804464932e-9, n * 0.27775174350401666e-9);
    let copy = block_on_line(&p, 14);
    assert!(ops(&copy) > load, "{copy}");
    let pair = |a: f64, b: f64| (a * a + b * b).sqrt();
    assert!(close(copy["seconds"].as_f64().unwrap(), pair(ops(&copy), load) + store, 1e-6), "ops and loads combined, the stores: {copy}");
    let sum = block_on_line(&p, 21);
    let core = ops(&sum).max(n * 1e-9);
    assert!(close(sum["seconds"].as_f64().unwrap(), pair(core, load), 1e-6), "core and loads combined: {sum}");
}

/// A host whose cores run loop bodies slower when all of them are busy (a machine table whose
/// co-run factors on 2 cores are 1.5 for the calibration loop bodies, 1 for chains;
/// pi_dartboard's hot loops have no chain bound above their ops): its ranks each throw the same darts, so
/// alone its rank computes what each of 2 ranks does; at 2 ranks on the one 2-core host each
/// computes 1.5 times as long, and the assumptions say so; 2 ranks on 2 hosts run alone.
#[test]
fn ranks_sharing_a_host_compute_slower_by_its_co_run_factor() {
    let dir = tempfile::tempdir().unwrap();
    let mut t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root().join(MACHINE)).unwrap()).unwrap();
    t["co_run"] = serde_json::json!({"cores": 2, "factor": 1.5, "kernels": [], "throughput_factor": 1.0, "latency_factor": 1.0});
    let table = dir.path().join("co_run.json");
    std::fs::write(&table, t.to_string()).unwrap();
    let table = table.to_str().unwrap();
    let run = |n: &str, platform: &str| -> serde_json::Value {
        let out = predict(&["examples/pi_dartboard.c", "-n", n, "--platform", platform, "--machine", table, "--json", "-", "--", "100000", "2"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let compute = |p: &serde_json::Value| p["ranks_detail"][0]["compute_s"].as_f64().unwrap();
    let alone = run("1", LOCALHOST);
    let shared = run("2", LOCALHOST);
    assert!(close(compute(&shared), 1.5 * compute(&alone), 1e-4), "{} vs {}", compute(&shared), compute(&alone));
    let notes = shared["assumptions"].to_string();
    assert!(notes.contains("loop bodies 1.50x and dependent chains 1.00x slower than alone"), "{notes}");
    let apart = run("2", "platforms/cluster-gige.xml");
    assert!(close(compute(&apart), compute(&alone), 1e-4), "{} vs {}", compute(&apart), compute(&alone));
}

/// A memory bound whose footprint depends on the rank's place in a Cartesian grid
/// (tests/fixtures/memory/grid.c: a column walk of each rank's block of a 2048 x 2048 matrix
/// of longs, rows and columns n / dims[d]): the static path costs it once the rank's grid is
/// known, trace counts with the grid the program's MPI_Dims_create gives, and both agree. At 4
/// ranks each block is a quarter of the matrix (8 MiB, under the 128 MiB working set): each
/// access costs less than at 1 rank (32 MiB), still from DRAM.
#[test]
fn memory_bounds_are_costed_with_the_ranks_place_in_the_grid() {
    let walk = |p: &serde_json::Value| block_on_line(p, 34);
    let per_access = |b: &serde_json::Value| b["memory"]["seconds"].as_f64().unwrap_or_else(|| panic!("no memory bound: {b}")) / b["executions"].as_f64().unwrap();
    let run = |ranks: &str, trace: bool| {
        let mut a = vec!["tests/fixtures/memory/grid.c", "-n", ranks, "--ops", "source", "--platform", LOCALHOST];
        if trace {
            a.extend(["--trace-ranks", ranks]);
        }
        a.extend(["--", "2048", "1"]);
        json(&a)
    };
    let one = run("1", false);
    let four = run("4", false);
    let traced = run("4", true);
    let (b1, b4, bt) = (walk(&one), walk(&four), walk(&traced));
    for b in [&b1, &b4, &bt] {
        assert_eq!(b["memory"]["level"], "DRAM", "{b}");
        assert!(close(b["seconds"].as_f64().unwrap(), b["memory"]["seconds"].as_f64().unwrap(), 1e-9), "bound by memory: {b}");
    }
    assert!(per_access(&b4) < 0.9 * per_access(&b1), "8 MiB blocks cost less per access than 32 MiB: {b4} {b1}");
    assert!(close(per_access(&bt), per_access(&b4), 1e-9), "trace counts cost the same grid: {bt} {b4}");
    let (ps, pt) = (four["predicted_s"].as_f64().unwrap(), traced["predicted_s"].as_f64().unwrap());
    assert!(close(pt, ps, 1e-3), "trace counts {pt} s, static {ps} s");
}

/// gemm calls its matrix dimension `size` (tests/fixtures/memory/names.c does the same): the
/// column walk's footprint is the program's size (2048 x 1024 doubles a rank, from memory),
/// not the number of processes (which made it fit in L1 and left the walk unbounded), in the
/// static path and from the trace's counts alike.
#[test]
fn a_matrix_dimension_called_size_is_not_the_number_of_processes() {
    let walk = |p: &serde_json::Value| block_on_line(p, 16);
    let run = |trace: bool| {
        let mut a = vec!["tests/fixtures/memory/names.c", "-n", "2", "--ops", "source", "--platform", LOCALHOST];
        if trace {
            a.extend(["--trace-ranks", "2"]);
        }
        a.extend(["--", "2048"]);
        json(&a)
    };
    let (st, tr) = (run(false), run(true));
    for p in [&st, &tr] {
        let b = walk(p);
        assert_eq!(b["executions"].as_f64(), Some(2.0 * 2048.0 * 1024.0), "{b}");
        assert_eq!(b["memory"]["level"], "DRAM", "{b}");
        assert!(close(b["seconds"].as_f64().unwrap(), b["memory"]["seconds"].as_f64().unwrap(), 1e-9), "bound by memory: {b}");
    }
    let (ps, pt) = (st["predicted_s"].as_f64().unwrap(), tr["predicted_s"].as_f64().unwrap());
    assert!(close(pt, ps, 1e-3), "trace counts {pt} s, static {ps} s");
}

/// Fresh pages: a table that says what a page costs the first time it is written (here 2 ns
/// per 8 bytes, added to the fixture table) charges each allocation of 128 KiB or more at the
/// block that makes it: 16 MiB of doubles cost 2 Mi words x 2 ns. Smaller allocations come
/// from the heap and cost nothing. Without the figure (the fixture table as it is) nothing is
/// charged. What runs before MPI_Init is outside the prediction (walks.c allocates and fills
/// its arrays there: those blocks are not charged).
#[test]
fn large_allocations_pay_for_their_pages_and_work_before_mpi_init_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root().join(MACHINE)).unwrap()).unwrap();
    let mut ft = t["memory"][0].clone();
    ft["level"] = "DRAM".into();
    ft["pattern"] = "first_touch".into();
    ft["access"] = "store".into();
    ft["throughput"]["ns_per_op"] = 2.0.into();
    ft["throughput"]["min_ns"] = 2.0.into();
    ft["throughput"]["max_ns"] = 2.0.into();
    t["memory"].as_array_mut().unwrap().push(ft);
    let table = dir.path().join("first_touch.json");
    std::fs::write(&table, serde_json::to_string(&t).unwrap()).unwrap();
    let run = |machine: &str, args: &[&str]| -> serde_json::Value {
        let mut a = vec!["tests/fixtures/memory/first_touch.c", "-n", "1", "--ops", "source", "--platform", LOCALHOST, "--machine", machine, "--json", "-", "--"];
        a.extend(args);
        let out = predict(&a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let alloc_block = |p: &serde_json::Value| p["blocks"].as_array().unwrap().iter().find(|b| b["line_start"] == 15).cloned();
    let big = run(table.to_str().unwrap(), &["2097152", "1"]);
    let b = alloc_block(&big).expect("the allocating block is charged");
    let want = 2097152.0 * 2e-9;
    assert!(close(b["first_touch_s"].as_f64().unwrap(), want, 1e-9), "{b}");
    assert!(b["seconds"].as_f64().unwrap() >= want, "{b}");
    let small = run(table.to_str().unwrap(), &["8192", "1"]);
    assert!(alloc_block(&small).is_none_or(|b| b.get("first_touch_s").is_none()), "64 KiB comes from the heap: {small}");
    let without = run(MACHINE, &["2097152", "1"]);
    assert!(alloc_block(&without).is_none_or(|b| b.get("first_touch_s").is_none()), "{without}");
    // walks.c fills its matrix before MPI_Init (lines 64-65): not charged.
    let w = json(&["tests/fixtures/memory/walks.c", "-n", "1", "--ops", "source", "--platform", LOCALHOST, "--", "0", "512", "1"]);
    let lines: Vec<u64> = w["blocks"].as_array().unwrap().iter().map(|b| b["line_start"].as_u64().unwrap()).collect();
    assert!(!lines.contains(&65) && lines.contains(&20), "{lines:?}");
}

/// A checksum of a grid whose values the static path does not know, into a small array
/// (stencil3d_torus's final sums over 96^3 points), is charged by its formula, not walked
/// element by element: walked, it took a debug build a minute at 8 ranks, past a 15 s budget.
#[test]
fn a_checksum_of_unknown_data_is_not_walked() {
    let out = Command::new(exe())
        .current_dir(root())
        .env("MPICAST_EVAL_BUDGET_S", "15")
        .args(["predict", "examples/stencil3d_torus.c", "-n", "8", "--static-only", "--platform", "platforms/cluster-ib.xml"])
        .args(["--machine", MACHINE, "--top", "1000", "--json", "-"])
        .output()
        .expect("run mpicast");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(p["mode"], "static");
    // The innermost statements of the sums run once per grid point over all ranks.
    assert_eq!(block_on_line(&p, 234)["executions"].as_f64(), Some(96.0 * 96.0 * 96.0));
}

/// Steady-state folding: the main loop simulated for a few iterations and the rest added gives
/// what simulating every iteration gives, within 0.5%, on every example; the halo exchanges
/// (500 steps) are folded, and the report says how many iterations were simulated.
#[test]
fn folded_and_unfolded_simulations_agree() {
    let mut folded = Vec::new();
    for ex in ["pi_dartboard", "matmul_mw", "jacobi2d", "stencil3d_torus", "obstacle3d", "isort"] {
        let src = format!("examples/{ex}.c");
        let mut args = vec![src.as_str(), "-n", "8", "--platform", "platforms/cluster-ib.xml"];
        let with = json(&args);
        args.push("--no-fold");
        let without = json(&args);
        let (a, b) = (with["predicted_s"].as_f64().unwrap(), without["predicted_s"].as_f64().unwrap());
        assert!(close(a, b, 0.005), "{ex}: folded {a} s, unfolded {b} s");
        assert!(without.get("folded").is_none(), "{ex}: --no-fold folded");
        if let Some(f) = with.get("folded") {
            let (sim, all) = (f["simulated"].as_u64().unwrap(), f["iterations"].as_u64().unwrap());
            assert!(sim < all && f["period_s"].as_f64().unwrap() > 0.0, "{ex}: {f}");
            folded.push(ex);
        }
    }
    assert!(folded.contains(&"jacobi2d") && folded.contains(&"stencil3d_torus"), "folded: {folded:?}");
    let out = predict(&["examples/jacobi2d.c", "-n", "8", "--platform", "platforms/cluster-ib.xml", "--machine", MACHINE]);
    let text = String::from_utf8_lossy(&out.stdout);
    // 49 periods of 10 iterations and the last 10, which the skeleton's writer joins to the loop.
    assert!(text.contains("of the main loop's 50 iterations simulated"), "{text}");
}

/// The analytic replay (`--analytic`) predicts what SimGrid does on every example at 8 ranks
/// on the InfiniBand cluster (one rank per host: no two transfers share a link), within 1%, with
/// the same messages.
#[test]
fn analytic_predictions_follow_simgrid_on_every_example() {
    for ex in ["pi_dartboard", "matmul_mw", "jacobi2d", "stencil3d_torus", "obstacle3d", "isort"] {
        let src = format!("examples/{ex}.c");
        let mut args = vec![src.as_str(), "-n", "8", "--platform", "platforms/cluster-ib.xml"];
        let sg = json(&args);
        args.push("--analytic");
        let an = json(&args);
        let (a, b) = (an["predicted_s"].as_f64().unwrap(), sg["predicted_s"].as_f64().unwrap());
        assert!(close(a, b, 0.01), "{ex}: analytic {a} s, SimGrid {b} s");
        assert_eq!(an["messages"], sg["messages"], "{ex}");
    }
}

/// A check whose failure arm only reports an error (counts it, prints it) is assumed never
/// taken, and its other arm always (tests/fixtures/eval/error_checks.c): the static path gives
/// the check's arms the counts of a correct run, which the trace shows. Half-and-half put 50,000
/// printf calls on rank 1 (MPICH's sendrecv2 was predicted 74x its traced time).
#[test]
fn an_error_report_is_assumed_never_taken() {
    let src = "tests/fixtures/eval/error_checks.c";
    let base = [src, "-n", "2", "--ops", "source", "--platform", LOCALHOST];
    let mut a = base.to_vec();
    a.extend(["--", "100000"]);
    let stat = json(&a);
    let on = |line: u64| stat["blocks"].as_array().unwrap().iter().find(|b| b["line_start"] == line).cloned();
    assert!(on(26).is_none_or(|b| b["executions"].as_f64() == Some(0.0)), "{:?}", on(26));
    let ok = block_on_line(&stat, 30);
    assert_eq!(ok["executions"].as_f64(), Some(100000.0), "{ok}");
    let notes = stat["assumptions"].to_string();
    assert!(notes.contains("an error report, assumed never taken"), "{notes}");
    assert!(!stat["static_output"].to_string().contains("expected"), "{}", stat["static_output"]);
    let mut t = base.to_vec();
    t.extend(["--trace-ranks", "2", "--", "100000"]);
    let traced = json(&t);
    assert_eq!(block_on_line(&traced, 30)["executions"].as_f64(), Some(100000.0));
    assert!(close(stat["predicted_s"].as_f64().unwrap(), traced["predicted_s"].as_f64().unwrap(), 0.05), "static {} traced {}", stat["predicted_s"], traced["predicted_s"]);
}


/// The static path converts integers as C does: a 64-bit LCG in uint64_t read with `>>` (its
/// top bit set), casts to narrower types, sizes of <stdint.h> types. Rank 0's bytes are the sum
/// of the six values the program computes (an LCG's keys were 4294941582 instead of 39822).
#[test]
fn the_static_path_converts_integers_as_c_does() {
    let mut state: u64 = 314159265;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 48) as i64
    };
    let (a, b) = (next(), next());
    let mut x: u32 = 2463534242;
    for _ in 0..3 {
        x = x.wrapping_mul(1664525).wrapping_add(1013904223);
    }
    let sizes = [a, b, ((a + 1000) as u8) as i64, ((70000 + b % 100) as i16) as i64 + 70, 810, 4095, (x >> 20) as i64];
    let p = json(&["tests/fixtures/eval/unsigned_lcg.c", "-n", "2", "--static-only", "--platform", LOCALHOST]);
    assert_eq!(p["ranks_detail"][0]["bytes_sent"].as_i64(), Some(sizes.iter().sum::<i64>()), "{sizes:?}");
}

/// A counting sort whose keys the static path does not compute (a long loop makes them): the
/// histogram's entries are not known, its total is (zeroed, then one increment per key), so
/// the loop up to each entry runs n times in all per sort, and the assumptions say so.
#[test]
fn a_loop_up_to_a_histograms_entries_runs_its_total() {
    let p = json(&["tests/fixtures/eval/histogram.c", "-n", "2", "--static-only", "--platform", LOCALHOST, "--", "20000"]);
    let inner = p["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["kind"] == "straight" && b["line_start"] == 31)
        .expect("the body of the loop up to count[v] (its cycles are charged there)");
    // 2 ranks x 3 sorts x 20000 keys.
    assert_eq!(inner["executions"].as_f64(), Some(120_000.0), "{inner}");
    let notes: Vec<&str> = p["assumptions"].as_array().unwrap().iter().filter_map(|a| a.as_str()).collect();
    assert!(notes.iter().any(|a| a.contains("from the total of `count`") && a.contains("20000 over 500 entries")), "{notes:?}");
}

/// A chain through memory bounds a function's block from below at every call
/// (tests/fixtures/memory/carried.c's `next`, called n times with the same state): with the
/// fixture table's latencies (double_mul 2 ns, double_add 1 ns, conversions and loads 1 ps) the
/// chain is 4.003 ns a call.
#[test]
fn a_state_kept_behind_a_pointer_is_a_chain_across_calls() {
    let n = 100000.0;
    let p = json(&["tests/fixtures/memory/carried.c", "-n", "1", "--ops", "source", "--platform", LOCALHOST, "--", "100000"]);
    let next = block_on_line(&p, 11);
    assert_eq!(next["executions"].as_f64(), Some(n), "{next}");
    assert_eq!(next["chain"]["var"], "*x", "{next}");
    assert!(close(next["chain"]["seconds"].as_f64().unwrap(), n * 4.003e-9, 1e-9), "{next}");
}

/// A program that times itself (tests/fixtures/predict/self_timed.c: repetitions doubled until
/// they take 2 ms on the clock): the static path stops at the calibration loop and says why,
/// and a prediction from a traced run warns that its counts are that run's. The loop that only
/// has its time printed is not flagged.
#[test]
fn a_program_that_times_itself_is_named_as_such() {
    let src = "tests/fixtures/predict/self_timed.c";
    let out = predict(&[src, "-n", "1", "--static-only", "--platform", LOCALHOST, "--machine", MACHINE]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("self_timed.c:20: the program times itself") && err.contains("(t, from now(): gettimeofday() at self_timed.c:11)"), "{err}");
    let p = json(&[src, "-n", "1", "--platform", LOCALHOST]);
    assert_eq!(p["mode"], "trace");
    let w: Vec<&str> = p["warnings"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(w.iter().filter(|w| w.contains("times itself")).count(), 1, "{w:?}");
    assert!(w.iter().any(|w| w.contains("the loop at self_timed.c:20 runs") && w.contains("the traced run's")), "{w:?}");
}

/// Communicator constructors cost their process the comm_create op
/// (tests/fixtures/predict/comm_loop.c: n MPI_Comm_split in a loop and one MPI_Comm_dup; a
/// fixture table giving comm_create 2 us): the static path and a traced run's counts both
/// charge each rank (n + 1) x 2 us, the split's comm block n of them.
#[test]
fn communicator_constructors_cost_their_process_and_synchronise_their_parent() {
    let machine = "tests/fixtures/machine/fixed_mpi.json";
    let want = 1001.0 * 2e-6;
    for extra in [&[][..], &["--trace-ranks", "2"][..]] {
        let mut a = vec!["tests/fixtures/predict/comm_loop.c", "-n", "2", "--platform", LOCALHOST, "--machine", machine, "--json", "-"];
        a.extend(extra);
        a.extend(["--", "1000"]);
        let out = predict(&a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for r in p["ranks_detail"].as_array().unwrap() {
            let c = r["compute_s"].as_f64().unwrap();
            assert!(close(c, want, 2e-3), "{extra:?}: rank compute {c} s, want {want}");
        }
        let split = block_on_line(&p, 15);
        assert!(close(split["op_seconds"]["comm_create"].as_f64().unwrap(), 2.0 * 1000.0 * 2e-6, 1e-6), "{extra:?}: {split}");
        // The constructors' own collectives over the world: each split's allgather and three
        // allreduces, the duplicate's three allreduces (2 messages each at 2 ranks), and the
        // barrier's 2; the ranks spend time in them.
        assert_eq!(p["messages"].as_u64(), Some(1000 * 8 + 6 + 2), "{extra:?}");
        for r in p["ranks_detail"].as_array().unwrap() {
            assert!(r["comm_s"].as_f64().unwrap() > 1000.0 * 4.0 * 1e-8, "{extra:?}: {r}");
        }
    }
}

/// A split whose colour is the constant MPI_UNDEFINED makes no communicator: it costs its
/// process the comm_null op (tests/fixtures/predict/comm_undefined.c: n splits, every other one
/// with MPI_UNDEFINED; the fixture table gives comm_create 2 us and comm_null 0.5 us), in the
/// static path and from a traced run's counts alike. MPICH's ctxsplit was charged a
/// comm_create for each: +108% at 1 rank.
#[test]
fn a_split_into_no_communicator_costs_the_comm_null_op() {
    let machine = "tests/fixtures/machine/fixed_mpi.json";
    for extra in [&[][..], &["--trace-ranks", "1"][..]] {
        let mut a = vec!["tests/fixtures/predict/comm_undefined.c", "-n", "1", "--platform", LOCALHOST, "--machine", machine, "--json", "-"];
        a.extend(extra);
        a.extend(["--", "1000"]);
        let out = predict(&a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let made = block_on_line(&p, 15);
        let none = block_on_line(&p, 18);
        assert!(close(made["op_seconds"]["comm_create"].as_f64().unwrap(), 500.0 * 2e-6, 1e-6), "{extra:?}: {made}");
        assert!(made["op_seconds"].get("comm_null").is_none(), "{extra:?}: {made}");
        assert!(close(none["op_seconds"]["comm_null"].as_f64().unwrap(), 500.0 * 0.5e-6, 1e-6), "{extra:?}: {none}");
        assert!(none["op_seconds"].get("comm_create").is_none(), "{extra:?}: {none}");
        let c = p["ranks_detail"][0]["compute_s"].as_f64().unwrap();
        assert!(close(c, 500.0 * 2.5e-6, 2e-3), "{extra:?}: compute {c} s");
    }
}

/// `platform` with the constructors' own work `costs` (platform::CTOR_PROP) in its zone.
fn with_ctor_costs(scratch: &Scratch, platform: &str, costs: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join(platform)).unwrap();
    let at = text.find("<zone ").unwrap();
    let at = at + text[at..].find('\n').unwrap() + 1;
    let out = scratch.path().join("ctor.xml");
    let prop = format!("    <prop id=\"{}\" value=\"{costs}\"/>\n", mpicast::platform::CTOR_PROP);
    std::fs::write(&out, format!("{}{prop}{}", &text[..at], &text[at..])).unwrap();
    out
}

#[test]
fn communicator_constructors_cost_what_the_platform_says() {
    // 10 loops of: a split into the world (3 ms each), one that gives rank 0 a communicator
    // of one (2 ms; the other rank makes none, 1 ms) and a duplicate (4 ms). Rank 0 takes
    // 9 ms a loop and rank 1 waits for it at the next constructor's collectives: 90 ms more
    // than on the platform without the figures, in the static path and from a trace.
    let src = "tests/fixtures/predict/ctor_loop.c";
    static_matches_run(src, 2, &[], &[]);
    let scratch = Scratch::new("mpicast-ctor");
    let costly = with_ctor_costs(&scratch, LOCALHOST, "split:0:1e-3 split:1:2e-3 split:2:3e-3 dup:2:4e-3");
    let time = |platform: &str, extra: &[&str]| {
        let mut a = vec![src, "-n", "2", "--platform", platform];
        a.extend(extra);
        a.extend(["--", "10"]);
        let p = json(&a);
        p["predicted_s"].as_f64().unwrap()
    };
    let costly = costly.to_str().unwrap();
    for extra in [&[][..], &["--analytic"], &["--trace-ranks", "2"]] {
        let added = time(costly, extra) - time(LOCALHOST, extra);
        assert!(close(added, 0.090, 0.01), "{extra:?}: the constructors added {added} s, expected 0.090 s");
    }
}

/// A loop whose schedule waits on a chain carried in a register (tests/fixtures/objcode/
/// chains.c's dot product: the sum's double add, every iteration) costs that chain at the
/// host's measured latency, whatever the CPU model of llvm-mca says it is: with the fixture
/// table's double_add latency set to 6 ns and then 12 ns, the block takes 6 and 12 ns per
/// iteration (its resources, at the fixture's costs, take less); the products' loop, which
/// carries no value from one iteration to the next, does not move.
#[test]
fn a_register_chain_costs_the_hosts_latency() {
    let dir = tempfile::tempdir().unwrap();
    let run = |latency: f64| -> serde_json::Value {
        let mut t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root().join(MACHINE)).unwrap()).unwrap();
        for f in ["ns_per_op", "min_ns", "max_ns"] {
            t["classes"]["double_add"]["latency"][f] = latency.into();
        }
        let table = dir.path().join(format!("latency{latency}.json"));
        std::fs::write(&table, t.to_string()).unwrap();
        let out = predict(&["tests/fixtures/objcode/chains.c", "-n", "1", "--platform", LOCALHOST, "--machine", table.to_str().unwrap(), "--json", "-", "--", "1000"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (six, twelve) = (run(6.0), run(12.0));
    let notes = six["assumptions"].to_string();
    if !notes.contains("scheduled by llvm-mca (core cycles") {
        eprintln!("llvm-mca scheduled no loop here: {notes}");
        return;
    }
    let dot = |p: &serde_json::Value| block_on_line(p, 15)["seconds"].as_f64().unwrap();
    assert!(close(dot(&six), 1000.0 * 6e-9, 0.02), "{}", block_on_line(&six, 15));
    assert!(close(dot(&twelve), 1000.0 * 12e-9, 0.02), "{}", block_on_line(&twelve, 15));
    let products = |p: &serde_json::Value| block_on_line(p, 22)["seconds"].as_f64().unwrap();
    assert!(close(products(&six), products(&twelve), 1e-9), "{} / {}", block_on_line(&six, 22), block_on_line(&twelve, 22));
}
