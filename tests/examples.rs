//! Runs every MPI program in examples/ under mpirun at 1, 2 and 4 ranks and checks its answer:
//! a value computed here independently, an invariant, and agreement across rank counts.
//!
//! Needs mpicc, mpirun and make (Debian: openmpi-bin libopenmpi-dev make). The programs are
//! built once per test process into examples/build/; the tests then run in parallel.

use std::process::Stdio;

use crate::util::{assert_close, built_example, mpirun, run_command, Run, SessionDir};

const RANK_COUNTS: [usize; 3] = [1, 2, 4];

/// Runs an example; panics with the command and its output unless it succeeds and prints a
/// positive `elapsed_s=`.
fn run(name: &str, ranks: usize, args: &[&str]) -> Run {
    let exe = built_example(name);
    let session = SessionDir::new();
    let mut cmd = mpirun(ranks, &session);
    cmd.arg(&exe).args(args);
    let run = run_command(cmd);
    assert!(run.success, "run failed ({})\n{}", run.status, run.context());
    let elapsed = run.f64("elapsed_s");
    assert!(
        elapsed > 0.0 && elapsed.is_finite(),
        "elapsed_s={elapsed} is not positive\n{}",
        run.context()
    );
    run
}

/// Runs an example at every rank count in RANK_COUNTS.
fn run_all(name: &str, args: &[&str]) -> Vec<(usize, Run)> {
    RANK_COUNTS
        .iter()
        .map(|&ranks| (ranks, run(name, ranks, args)))
        .collect()
}

/// Asserts that `key` agrees (to `rel`) at every rank count with its value at the first one,
/// which tells a decomposition bug apart from a wrong reference.
fn assert_same_across_ranks(runs: &[(usize, Run)], key: &str, rel: f64) {
    let (first_ranks, first) = &runs[0];
    let expected = first.f64(key);
    for (ranks, run) in &runs[1..] {
        let what = format!("{key} at {ranks} ranks against {first_ranks}");
        assert_close(run.f64(key), expected, rel, &what, run);
    }
}

#[test]
fn pi_dartboard_estimates_pi() {
    let (darts_per_round, rounds) = (200_000, 5);
    let args = [darts_per_round.to_string(), rounds.to_string()];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for (ranks, run) in run_all("pi_dartboard", &args) {
        assert_eq!(
            run.i64("darts"),
            darts_per_round * rounds * ranks as i64,
            "{}",
            run.context()
        );
        let pi = run.f64("pi");
        assert!(
            (pi - std::f64::consts::PI).abs() < 0.01,
            "pi={pi} is not within 0.01 of pi\n{}",
            run.context()
        );
    }
}

/// A[i][j] = (i + j) % 7 and B[i][j] = (i * j + 1) % 5, as in matmul_mw.c. The sum of row i
/// of C = A B is sum_k A[i][k] * (sum_j B[k][j]).
fn matmul_checksums(n: i64) -> (i64, i64) {
    let b_row_sums: Vec<i64> = (0..n)
        .map(|k| (0..n).map(|j| (k * j + 1) % 5).sum())
        .collect();
    let (mut checksum, mut weighted) = (0, 0);
    for i in 0..n {
        let row_sum: i64 = (0..n).map(|k| (i + k) % 7 * b_row_sums[k as usize]).sum();
        checksum += row_sum;
        weighted += (i + 1) * row_sum;
    }
    (checksum, weighted)
}

#[test]
fn matmul_mw_gives_the_exact_product() {
    // 97 rows do not divide evenly among 3 workers.
    let n = 97;
    let (checksum, weighted) = matmul_checksums(n);
    let runs = run_all("matmul_mw", &["97", "2"]);
    assert_same_across_ranks(&runs, "weighted", 0.0);
    for (_, run) in &runs {
        assert_eq!(run.i64("checksum"), checksum, "checksum\n{}", run.context());
        assert_eq!(
            run.i64("weighted"),
            weighted,
            "row-weighted checksum\n{}",
            run.context()
        );
    }
}

/// Serial Jacobi as in jacobi2d.c: returns (residual, checksum).
fn jacobi_reference(n: usize, iters: usize) -> (f64, f64) {
    let w = n + 2;
    let h = 1.0 / (n + 1) as f64;
    let mut u = vec![0.0; w * w];
    for i in 0..w {
        for j in 0..w {
            if i == 0 || i == n + 1 || j == 0 || j == n + 1 {
                u[i * w + j] = (i as f64 * h) * (j as f64 * h);
            }
        }
    }
    let mut unew = u.clone();
    let mut sq = 0.0;
    for _ in 0..iters {
        sq = 0.0;
        for i in 1..=n {
            for j in 1..=n {
                let v = 0.25
                    * (u[(i - 1) * w + j]
                        + u[(i + 1) * w + j]
                        + u[i * w + j - 1]
                        + u[i * w + j + 1]);
                let d = v - u[i * w + j];
                sq += d * d;
                unew[i * w + j] = v;
            }
        }
        std::mem::swap(&mut u, &mut unew);
    }
    let checksum = (1..=n)
        .flat_map(|i| (1..=n).map(move |j| (i, j)))
        .map(|(i, j)| u[i * w + j])
        .sum();
    (sq.sqrt(), checksum)
}

#[test]
fn jacobi2d_matches_serial_reference_and_known_value() {
    // Default size (256, 500 iterations, k = 10): the known values.
    let runs = run_all("jacobi2d", &[]);
    assert_same_across_ranks(&runs, "checksum", 1e-9);
    for (_, run) in &runs {
        assert_close(
            run.f64("residual"),
            2.720915252572e-02,
            1e-9,
            "default residual",
            run,
        );
        assert_close(
            run.f64("checksum"),
            2.957092073222e+03,
            1e-9,
            "default checksum",
            run,
        );
    }
    // An odd size that splits unevenly, with k not dividing iters.
    let (residual, checksum) = jacobi_reference(37, 50);
    let runs = run_all("jacobi2d", &["37", "50", "7"]);
    assert_same_across_ranks(&runs, "residual", 1e-9);
    assert_same_across_ranks(&runs, "checksum", 1e-9);
    for (_, run) in &runs {
        assert_close(run.f64("residual"), residual, 1e-9, "residual", run);
        assert_close(run.f64("checksum"), checksum, 1e-9, "checksum", run);
    }
}

/// The initial value of stencil3d_torus.c at global point (i, j, k).
fn torus_initial(i: usize, j: usize, k: usize) -> f64 {
    ((i * 7 + j * 13 + k * 29) % 17) as f64
}

/// Serial periodic diffusion as in stencil3d_torus.c: returns (initial sum, sum of squares).
fn torus_reference(n: usize, iters: usize) -> (f64, f64) {
    let at = |i: usize, j: usize, k: usize| (i * n + j) * n + k;
    let mut u = vec![0.0; n * n * n];
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                u[at(i, j, k)] = torus_initial(i, j, k);
            }
        }
    }
    let initial_sum = u.iter().sum();
    let mut unew = u.clone();
    let (prev, next) = (|x: usize| (x + n - 1) % n, |x: usize| (x + 1) % n);
    for _ in 0..iters {
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let centre = u[at(i, j, k)];
                    let neighbours = u[at(prev(i), j, k)]
                        + u[at(next(i), j, k)]
                        + u[at(i, prev(j), k)]
                        + u[at(i, next(j), k)]
                        + u[at(i, j, prev(k))]
                        + u[at(i, j, next(k))];
                    unew[at(i, j, k)] = centre + 0.125 * (neighbours - 6.0 * centre);
                }
            }
        }
        std::mem::swap(&mut u, &mut unew);
    }
    (initial_sum, u.iter().map(|v| v * v).sum())
}

#[test]
fn stencil3d_torus_conserves_the_sum() {
    // 13 splits unevenly over 2 ranks per dimension.
    let (initial_sum, checksum) = torus_reference(13, 10);
    let runs = run_all("stencil3d_torus", &["13", "10"]);
    assert_same_across_ranks(&runs, "checksum", 1e-9);
    for (_, run) in &runs {
        assert_eq!(
            run.f64("initial_sum"),
            initial_sum,
            "initial sum\n{}",
            run.context()
        );
        assert_close(run.f64("sum"), initial_sum, 1e-12, "conserved sum", run);
        assert_close(run.f64("checksum"), checksum, 1e-9, "sum of squares", run);
    }
}

/// Serial projected Richardson as in obstacle3d.c: returns (iterations, converged, contact,
/// checksum).
fn obstacle_reference(n: usize, max_iters: usize, tol: f64) -> (i64, bool, i64, f64) {
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
    let (mut iterations, mut converged) = (0, false);
    for iter in 0..max_iters {
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
        std::mem::swap(&mut u, &mut unew);
        iterations = iter as i64 + 1;
        if max_update < tol {
            converged = true;
            break;
        }
    }
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
    (iterations, converged, contact, checksum)
}

#[test]
fn obstacle3d_matches_serial_reference() {
    let n = 15;
    for (max_iters, tol) in [(2000, 1e-6), (20, 1e-6)] {
        let (iterations, converged, contact, checksum) = obstacle_reference(n, max_iters, tol);
        assert!(
            contact > 0 && contact < (n * n * n) as i64,
            "contact set of {contact} points is trivial"
        );
        let args = [n.to_string(), max_iters.to_string(), tol.to_string()];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let runs = run_all("obstacle3d", &args);
        assert_same_across_ranks(&runs, "iterations", 0.0);
        assert_same_across_ranks(&runs, "checksum", 1e-9);
        for (_, run) in &runs {
            assert_eq!(
                run.i64("iterations"),
                iterations,
                "iterations\n{}",
                run.context()
            );
            assert_eq!(
                run.i64("converged"),
                i64::from(converged),
                "converged\n{}",
                run.context()
            );
            assert_eq!(
                run.i64("contact"),
                contact,
                "contact points\n{}",
                run.context()
            );
            assert_close(run.f64("checksum"), checksum, 1e-9, "checksum", run);
        }
        // The first case converges well before its limit, the second stops at its limit.
        assert_eq!(
            converged,
            max_iters == 2000,
            "reference convergence for max_iters={max_iters}"
        );
    }
}

/// The keys isort.c generates on `rank`: each the mean of four draws from the top 16 bits
/// of Knuth's MMIX LCG, seeded 314159265 + rank.
fn isort_keys(rank: u64, count: usize) -> Vec<i64> {
    let mut state = 314_159_265u64 + rank;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 48) as i64
    };
    (0..count)
        .map(|_| (next() + next() + next() + next()) / 4)
        .collect()
}

#[test]
fn isort_sorts_every_key() {
    let keys_per_rank = 10_000; // not a power of two
    for (ranks, run) in run_all("isort", &["10000", "3"]) {
        let expected: i64 = (0..ranks as u64)
            .flat_map(|r| isort_keys(r, keys_per_rank))
            .sum();
        assert_eq!(run.i64("verified"), 1, "verification\n{}", run.context());
        assert_eq!(
            run.i64("keys"),
            (keys_per_rank * ranks) as i64,
            "key count\n{}",
            run.context()
        );
        assert_eq!(
            run.i64("checksum"),
            expected,
            "sum of the sorted keys\n{}",
            run.context()
        );
    }
}

#[test]
fn bad_arguments_print_usage() {
    // mpirun takes about two seconds to wind down a job that exits non-zero, so the six
    // runs go in parallel.
    let names = [
        "pi_dartboard",
        "matmul_mw",
        "jacobi2d",
        "stencil3d_torus",
        "obstacle3d",
        "isort",
    ];
    let children: Vec<_> = names
        .iter()
        .map(|name| {
            let session = SessionDir::new();
            let mut cmd = mpirun(1, &session);
            cmd.arg(built_example(name))
                .arg("12x")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let command = format!("{cmd:?}");
            let child = cmd
                .spawn()
                .unwrap_or_else(|e| panic!("could not start {command}: {e}"));
            (command, child, session)
        })
        .collect();
    for (command, child, _session) in children {
        let out = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("{command}: {e}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("usage:"),
            "{command} should fail with a usage message ({})\n--- stdout ---\n{}--- stderr ---\n{stderr}",
            out.status,
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
