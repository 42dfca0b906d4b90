//! Issue 13: the P2PDC runtime (instrument/p2pdc.h over MPI) and examples/obstacle3d_p2p.
//!
//! obstacle3d_p2p runs in the sync, async and hybrid schemes at 1, 2 and 4 ranks (4 ranks are
//! oversubscribed on a 2-core machine) and is checked against a serial reference computed
//! here: the sync scheme exactly, the async and hybrid schemes through the fixed-point residual
//! of their final iterate and a bound on the distance that residual allows. A small C program
//! embedded below checks the runtime's semantics one by one. Each test prints what it measured
//! (`cargo test --test integration p2pdc:: -- --nocapture`).
//!
//! Needs mpicc, mpirun and make (Debian: openmpi-bin libopenmpi-dev make).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::util::{assert_close, build_once, built_example, example, fixed_machine, mpicast, mpirun, platform, root, run_command, Run, Scratch, SessionDir};

const RANK_COUNTS: [usize; 3] = [1, 2, 4];

/// Runs obstacle3d_p2p in `scheme` on `ranks` ranks; panics unless it succeeds, reports the
/// scheme it was given and a positive `elapsed_s=`.
fn run_obstacle(scheme: &str, ranks: usize, args: &[&str]) -> Run {
    let exe = built_example("obstacle3d_p2p");
    let session = SessionDir::new();
    let mut cmd = mpirun(ranks, &session);
    cmd.arg(&exe).arg(format!("--scheme={scheme}")).args(args);
    let run = run_command(cmd);
    assert!(run.success, "run failed\n{}", run.context());
    assert_eq!(run.text("scheme"), scheme, "scheme\n{}", run.context());
    assert_eq!(run.i64("ranks"), ranks as i64, "ranks\n{}", run.context());
    let elapsed = run.f64("elapsed_s");
    assert!(
        elapsed > 0.0 && elapsed.is_finite(),
        "elapsed_s={elapsed} is not positive\n{}",
        run.context()
    );
    run
}

/// The serial projected Richardson iteration of obstacle3d(_p2p).c.
struct Reference {
    iterations: i64,
    converged: bool,
    contact: i64,
    checksum: f64,
    /// max |P_K(u - delta (A u - f)) - u| of the final iterate
    residual: f64,
}

fn obstacle_reference(n: usize, max_iters: usize, tol: f64) -> Reference {
    let w = n + 2;
    let plane = w * w;
    let h = 1.0 / (n + 1) as f64;
    let (inv_h2, delta) = (1.0 / (h * h), h * h / 6.0);
    let mut phi = vec![0.0; w * plane];
    let mut u = vec![0.0; w * plane];
    for k in 0..w {
        for j in 0..w {
            for i in 0..w {
                let c = k * plane + j * w + i;
                let (x, y, z) = (i as f64 * h, j as f64 * h, k as f64 * h);
                phi[c] =
                    0.1 - ((x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5) + (z - 0.5) * (z - 0.5));
                let interior = (1..=n).contains(&i) && (1..=n).contains(&j) && (1..=n).contains(&k);
                u[c] = if interior && phi[c] > 0.0 {
                    phi[c]
                } else {
                    0.0
                };
            }
        }
    }
    let mut unew = u.clone();
    let relax = |u: &[f64], unew: &mut [f64]| {
        let mut max_update: f64 = 0.0;
        for k in 1..=n {
            for j in 1..=n {
                for i in 1..=n {
                    let c = k * plane + j * w + i;
                    let centre = u[c];
                    let neighbours =
                        u[c - plane] + u[c + plane] + u[c - w] + u[c + w] + u[c - 1] + u[c + 1];
                    let au = (6.0 * centre - neighbours) * inv_h2;
                    let v = (centre - delta * (au - -20.0)).max(phi[c]);
                    max_update = max_update.max((v - centre).abs());
                    unew[c] = v;
                }
            }
        }
        max_update
    };
    let (mut iterations, mut converged) = (0, false);
    for iter in 0..max_iters {
        let max_update = relax(&u, &mut unew);
        std::mem::swap(&mut u, &mut unew);
        iterations = iter as i64 + 1;
        if max_update < tol {
            converged = true;
            break;
        }
    }
    let residual = relax(&u, &mut unew);
    let (mut contact, mut checksum) = (0, 0.0);
    for k in 1..=n {
        for j in 1..=n {
            for i in 1..=n {
                let c = k * plane + j * w + i;
                checksum += u[c];
                contact += i64::from(u[c] == phi[c]);
            }
        }
    }
    Reference {
        iterations,
        converged,
        contact,
        checksum,
        residual,
    }
}

/// How far from the solution an iterate with fixed-point residual r may be, per unit of r, in
/// the max norm: the residual is delta (A u - f) where the obstacle is not active, and
/// ||(delta A)^-1||_inf <= (6 / h^2) * 1/8 (the discrete Laplacian's inverse is bounded by the
/// solution of -w'' = 1, x (1 - x) / 2 <= 1/8), so 3 (n + 1)^2 / 4.
fn error_amplification(n: usize) -> f64 {
    0.75 * ((n + 1) * (n + 1)) as f64
}

/// One line per run for the test's output: what the figures were.
fn report(scheme: &str, ranks: usize, run: &Run, reference: &Reference) {
    println!(
        "{scheme:>6} ranks={ranks}{} iterations={} (min {} max {}, serial {}) residual={:.3e} \
         checksum={:.12e} (relative difference {:.1e}) elapsed_s={}",
        if ranks > 2 { " (oversubscribed)" } else { "" },
        run.text("iterations"),
        run.text("iterations_min"),
        run.text("iterations_max"),
        reference.iterations,
        run.f64("residual"),
        run.f64("checksum"),
        ((run.f64("checksum") - reference.checksum) / reference.checksum).abs(),
        run.text("elapsed_s"),
    );
}

const N: usize = 15;
const MAX_ITERS: usize = 2000;
const TOL: f64 = 1e-6;

fn args(n: usize, max_iters: usize, tol: f64) -> [String; 3] {
    [n.to_string(), max_iters.to_string(), tol.to_string()]
}

/// Sync: the same iterates as the serial method at every rank count.
#[test]
fn sync_scheme_matches_the_serial_reference() {
    for (max_iters, converges) in [(MAX_ITERS, true), (20, false)] {
        let reference = obstacle_reference(N, max_iters, TOL);
        assert_eq!(
            reference.converged, converges,
            "reference at max_iters={max_iters}"
        );
        assert!(reference.contact > 0 && reference.contact < (N * N * N) as i64);
        let a = args(N, max_iters, TOL);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        for ranks in RANK_COUNTS {
            let run = run_obstacle("sync", ranks, &a);
            report("sync", ranks, &run, &reference);
            for key in ["iterations", "iterations_min", "iterations_max"] {
                assert_eq!(
                    run.i64(key),
                    reference.iterations,
                    "{key}\n{}",
                    run.context()
                );
            }
            assert_eq!(
                run.i64("converged"),
                i64::from(converges),
                "{}",
                run.context()
            );
            assert_eq!(
                run.i64("contact"),
                reference.contact,
                "contact\n{}",
                run.context()
            );
            assert_close(
                run.f64("checksum"),
                reference.checksum,
                1e-9,
                "checksum",
                &run,
            );
            assert_close(
                run.f64("residual"),
                reference.residual,
                1e-9,
                "residual",
                &run,
            );
        }
    }
}

/// Async and hybrid: every rank stops on the same epoch decision, the final iterate's residual
/// (computed after a synchronous exchange) is near the tolerance, and the solution is as close
/// to the serial one as both residuals allow. At 1 rank there is no one to be asynchronous
/// with, and each termination epoch completes in the call that posts it: the serial iterates.
fn check_asynchronous_scheme(scheme: &str) {
    let reference = obstacle_reference(N, MAX_ITERS, TOL);
    let a = args(N, MAX_ITERS, TOL);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    for ranks in RANK_COUNTS {
        let run = run_obstacle(scheme, ranks, &a);
        report(scheme, ranks, &run, &reference);
        assert_eq!(run.i64("converged"), 1, "converged\n{}", run.context());
        let (min, max) = (run.i64("iterations_min"), run.i64("iterations_max"));
        assert!(
            min <= run.i64("iterations") && run.i64("iterations") <= max && max < MAX_ITERS as i64,
            "iteration counts\n{}",
            run.context()
        );
        if ranks == 1 {
            assert_eq!(
                run.i64("iterations"),
                reference.iterations,
                "{}",
                run.context()
            );
            assert_close(
                run.f64("checksum"),
                reference.checksum,
                1e-9,
                "checksum",
                &run,
            );
            continue;
        }
        // Each rank reported sustained local convergence (updates below tol) in the deciding
        // epoch; halos a few iterations stale can leave the residual somewhat above tol.
        let residual = run.f64("residual");
        assert!(
            residual < 10.0 * TOL,
            "residual {residual} is not within 10 x tol of convergence\n{}",
            run.context()
        );
        let cells = (N * N * N) as f64;
        let bound = cells * (residual + reference.residual) * error_amplification(N);
        let difference = (run.f64("checksum") - reference.checksum).abs();
        assert!(
            difference <= bound,
            "checksum differs from the serial one by {difference}, more than the residuals \
             allow ({bound})\n{}",
            run.context()
        );
        let contact_difference = (run.i64("contact") - reference.contact).abs();
        assert!(
            contact_difference * 100 <= reference.contact,
            "contact set of {} points, serial {}\n{}",
            run.i64("contact"),
            reference.contact,
            run.context()
        );
    }
}

#[test]
fn async_scheme_converges_to_the_serial_solution() {
    check_asynchronous_scheme("async");
}

#[test]
fn hybrid_scheme_converges_to_the_serial_solution() {
    check_asynchronous_scheme("hybrid");
}

/// Processes that spin on every core while the asynchronous schemes run. A peer that had
/// converged on stale data used to spin through its iterations while the peers it waited for
/// were off the processor, and stopped unconverged at the iteration limit (about 1 run in 15
/// to 50 with two such jobs on two cores); an idle peer now sleeps until a message or an
/// epoch can change what it computes.
#[test]
fn asynchronous_schemes_converge_while_other_processes_take_the_cores() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let hogs: Vec<_> = (0..cores)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    let a = args(N, MAX_ITERS, TOL);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let mut failures = Vec::new();
    let runs = 8;
    for i in 0..runs {
        let (scheme, ranks) = if i % 2 == 0 { ("async", 2) } else { ("hybrid", 4) };
        let run = run_obstacle(scheme, ranks, &a);
        let converged = run.i64("converged") == 1
            && run.i64("iterations_max") < MAX_ITERS as i64
            && run.f64("residual") < 10.0 * TOL;
        eprintln!(
            "under load: {scheme} ranks={ranks} converged={} iterations {}..{} residual={:.3e}",
            run.i64("converged"),
            run.i64("iterations_min"),
            run.i64("iterations_max"),
            run.f64("residual")
        );
        if !converged {
            failures.push(run.context());
        }
    }
    stop.store(true, Ordering::Relaxed);
    for hog in hogs {
        hog.join().expect("hog thread");
    }
    assert!(
        failures.is_empty(),
        "{} of {runs} runs under load did not converge:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Runs stopped by max_iters: every rank does max_iters iterations and the runtime still
/// winds down although the ranks posted different numbers of termination epochs.
#[test]
fn asynchronous_runs_stop_at_the_iteration_limit() {
    let a = args(N, 20, TOL);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    for scheme in ["async", "hybrid"] {
        let run = run_obstacle(scheme, 4, &a);
        assert_eq!(run.i64("converged"), 0, "{}", run.context());
        assert_eq!(run.i64("iterations_min"), 20, "{}", run.context());
        assert_eq!(run.i64("iterations_max"), 20, "{}", run.context());
    }
}

#[test]
fn scheme_comes_from_the_environment_and_bad_ones_are_refused() {
    let exe = built_example("obstacle3d_p2p");
    let session = SessionDir::new();
    let mut cmd = mpirun(2, &session);
    cmd.env("P2PDC_SCHEME", "async")
        .args(["-x", "P2PDC_SCHEME"])
        .arg(&exe)
        .args(["8", "50"]);
    let run = run_command(cmd);
    assert!(run.success, "{}", run.context());
    assert_eq!(run.text("scheme"), "async", "{}", run.context());

    for (scheme, expected) in [
        ("--scheme=fast", "valid choices: sync, async, hybrid"),
        ("12x", "usage:"),
    ] {
        let session = SessionDir::new();
        let mut cmd = mpirun(1, &session);
        cmd.arg(&exe).arg(scheme);
        let run = run_command(cmd);
        assert!(
            !run.success && run.stderr.contains(expected) && run.stderr.contains("usage:"),
            "{scheme} should fail with `{expected}` and a usage message\n{}",
            run.context()
        );
    }
}

/// Checks of the runtime's semantics, run at 2 ranks (4 for the groups). Prints `ok <what>` per
/// check; a failed check prints `FAIL` and exits 1.
const SEMANTICS_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "p2pdc.h"

static int rank;
#define CHECK(cond, what)                                                          \
    do {                                                                           \
        if (!(cond)) {                                                             \
            printf("FAIL rank %d: %s (line %d)\n", rank, what, __LINE__);          \
            fflush(stdout);                                                        \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    CHECK(P2Pinit(&argc, &argv) == 0, "P2Pinit");
    rank = P2Prank();
    int size = P2Psize();
    const char *test = argc > 1 ? argv[1] : "";
    int other = 1 - rank;

    if (strcmp(test, "fifo") == 0) { /* sync: every message, in order */
        if (rank == 0)
            for (int v = 1; v <= 5; v++)
                P2Psend(1, &v, sizeof v);
        else
            for (int v = 1; v <= 5; v++) {
                int got = 0;
                CHECK(P2Preceive(0, &got, sizeof got) == 1, "sync receive returns 1");
                CHECK(got == v, "sync messages arrive in order");
            }
        P2Pwait();
    } else if (strcmp(test, "wait_first") == 0) { /* sync: both wait before receiving */
        size_t count = 1 << 18; /* 2 MiB: rendezvous, not eager */
        double *out = malloc(count * sizeof *out), *in = malloc(count * sizeof *in);
        for (size_t i = 0; i < count; i++)
            out[i] = rank * 1e6 + (double)i;
        P2Psend(other, out, count * sizeof *out);
        memset(out, 0, count * sizeof *out); /* the runtime copied it */
        P2Pwait();
        CHECK(P2Preceive(other, in, count * sizeof *in) == 1, "receive after wait");
        for (size_t i = 0; i < count; i++)
            CHECK(in[i] == other * 1e6 + (double)i, "the copy was sent, not the buffer");
        free(out);
        free(in);
    } else if (strcmp(test, "latest") == 0) { /* async: newest message, none before sending */
        CHECK(P2Pscheme() == P2P_ASYNC, "scheme");
        int got = -7;
        if (rank == 1)
            CHECK(P2Preceive(0, &got, sizeof got) == 0 && got == -7,
                  "nothing sent yet: returns 0, buffer untouched");
        P2Pbarrier();
        int last = 50;
        if (rank == 0) {
            for (int v = 1; v <= last; v++)
                P2Psend(1, &v, sizeof v);
            int ack = 0;
            while (P2Preceive(1, &ack, sizeof ack) == 0)
                P2Pwait(); /* never blocks in async; posts the staged message */
            CHECK(ack == last, "ack");
        } else {
            int previous = 0, received = 0;
            while (previous < last) {
                if (P2Preceive(0, &got, sizeof got)) {
                    CHECK(got > previous, "each receive brings a newer message");
                    previous = got;
                    received++;
                }
            }
            printf("received %d of %d messages\n", received, last);
            P2Psend(0, &last, sizeof last);
        }
    } else if (strcmp(test, "converged") == 0) { /* async: no decision before every peer agrees */
        int calls = 0, decided = 0;
        while (!decided) {
            calls++;
            /* rank 0 is not converged for its first 100 calls */
            decided = P2Pconverged(rank != 0 || calls > 100);
        }
        CHECK(rank != 0 || calls > 100, "rank 0 decided before it converged");
        CHECK(P2Pconverged(0) == 1, "the decision sticks");
        printf("rank %d decided after %d calls\n", rank, calls);
    } else if (strcmp(test, "groups") == 0) { /* hybrid: sync inside groups, async across */
        CHECK(P2Pscheme() == P2P_HYBRID && P2Pgroup_size() == 2, "hybrid, groups of 2");
        for (int q = 0; q < size; q++)
            if (q != rank)
                CHECK(P2Psynchronous_with(q) == (q / 2 == rank / 2), "synchronous_with");
        P2Pset_scheme(P2P_SYNC);
        CHECK(P2Pscheme() == P2P_SYNC && P2Psynchronous_with((rank + 2) % size), "switched");
    } else if (strcmp(test, "wrong_size") == 0) {
        char buf[16] = {0};
        if (rank == 0)
            P2Psend(1, buf, 8);
        else
            P2Preceive(0, buf, 16);
        P2Pwait();
    } else {
        CHECK(0, "unknown test");
    }
    printf("ok %s rank %d\n", test, rank);
    P2Pfinalize();
    return 0;
}
"#;

/// The semantics program, compiled with instrument/p2pdc.c on first use (warnings fail).
fn semantics_program() -> PathBuf {
    static BUILD: OnceLock<Result<(), String>> = OnceLock::new();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("p2pdc");
    let exe = dir.join("p2p_semantics");
    build_once(&BUILD, || {
        std::fs::create_dir_all(&dir).expect("target tmp dir");
        let source = dir.join("p2p_semantics.c");
        std::fs::write(&source, SEMANTICS_C).expect("write the semantics program");
        let instrument = root().join("instrument");
        let mut cmd = Command::new("mpicc");
        cmd.args(["-std=c99", "-Wpedantic", "-O2", "-Wall", "-Wextra"])
            .arg(format!("-I{}", instrument.display()))
            .arg("-o")
            .arg(&exe)
            .arg(&source)
            .arg(instrument.join("p2pdc.c"));
        cmd
    });
    exe
}

fn run_semantics(test: &str, scheme: &str, ranks: usize) -> Run {
    let session = SessionDir::new();
    let mut cmd = mpirun(ranks, &session);
    cmd.arg(semantics_program())
        .arg(format!("--scheme={scheme}"))
        .arg(test);
    run_command(cmd)
}

#[test]
fn runtime_semantics() {
    let cases = [
        ("fifo", "sync", 2),
        ("wait_first", "sync", 2),
        ("latest", "async", 2),
        ("converged", "async", 2),
        ("converged", "hybrid", 4),
        ("groups", "hybrid", 4),
    ];
    for (test, scheme, ranks) in cases {
        let run = run_semantics(test, scheme, ranks);
        assert!(run.success, "{test} ({scheme})\n{}", run.context());
        for rank in 0..ranks {
            assert!(
                run.stdout.contains(&format!("ok {test} rank {rank}\n")),
                "{test} ({scheme}): rank {rank} did not finish\n{}",
                run.context()
            );
        }
        for line in run.stdout.lines().filter(|l| !l.starts_with("ok ")) {
            println!("{test} ({scheme}, {ranks} ranks): {line}");
        }
    }
}

#[test]
fn a_message_of_the_wrong_size_aborts_with_a_message() {
    let run = run_semantics("wrong_size", "sync", 2);
    assert!(
        !run.success
            && run.stderr.contains(
                "p2pdc: rank 1: P2Preceive: the message from peer 0 does not have the 16 bytes"
            ),
        "{}",
        run.context()
    );
}

/// Traced, the asynchronous scheme's receives are `arecv` (taken without waiting in replay), the
/// synchronous scheme's plain `recv`; both predict, each with the iterations its trace recorded.
#[test]
fn asynchronous_receives_are_traced_and_replayed_as_such() {
    let s = Scratch::new("mpicast-p2pdc-arecv");
    let mut predicted = Vec::new();
    for scheme in ["sync", "async"] {
        let dir = s.path().join(scheme);
        let mpirun = s.mpirun_args();
        let sch = format!("--scheme={scheme}");
        let src = example("obstacle3d_p2p");
        let out = mpicast(&[
            // The P2PDC runtime is linked in by mpicast itself.
            "trace", src.to_str().unwrap(), "-n", "2", "-o", dir.to_str().unwrap(), "--all-blocks",
            "--mpirun-args", &mpirun, "--timeout", "120", "--", &sch, "16", "2000",
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text: String = (0..2).map(|r| std::fs::read_to_string(dir.join(format!("rank-{r}.trace"))).unwrap()).collect();
        let arecvs = text.lines().filter(|l| l.trim_start().starts_with("arecv ")).count();
        if scheme == "sync" {
            assert_eq!(arecvs, 0, "sync traces no asynchronous receive");
        } else {
            assert!(arecvs > 0, "async traces its receives as arecv");
        }
        let m = fixed_machine();
        let p = platform("cluster-gige");
        let json = s.path().join(format!("{scheme}.json"));
        let out = mpicast(&[
            "predict", src.to_str().unwrap(), "-n", "2", "--trace", dir.to_str().unwrap(), "--machine", m.to_str().unwrap(), "--platform", p.to_str().unwrap(),
            "--json", json.to_str().unwrap(), "--", &sch, "16", "2000",
        ]);
        assert!(out.status.success(), "{scheme}: {}", String::from_utf8_lossy(&out.stderr));
        let pred: mpicast::model::prediction::Prediction = mpicast::model::read_artifact(&json).unwrap();
        assert!(pred.warnings.iter().all(|w| !w.contains("never received")), "{:?}", pred.warnings);
        predicted.push(pred.predicted_s);
    }
    assert!(predicted.iter().all(|t| *t > 0.0), "{predicted:?}");
}
