//! MTC: `mpicast bench machine` on this host. Two real runs: a --quick table at the
//! default flags (-O2), and a small -O0 table of a few arithmetic classes to compare with it.

use std::path::Path;
use std::process::Command;

use crate::util::{exe, root};

use mpicast::machine::load_table;
use mpicast::model::machine::MachineTable;
use mpicast::model::ops::OpClass;

fn bench(dir: &Path, name: &str, extra: &[&str]) -> MachineTable {
    let out = dir.join(name);
    let o = Command::new(exe())
        .args(["bench", "machine", "--quick", "-o"])
        .arg(&out)
        .args(extra)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .expect("mpicast runs");
    assert!(
        o.status.success(),
        "mpicast bench machine {extra:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    mpicast::model::read_artifact(&out).expect("a valid mpicast/machine table")
}

#[test]
fn quick_table_is_valid_and_sane_and_o0_costs_more_than_o2() {
    let dir = tempfile::tempdir().unwrap();
    let o2 = bench(dir.path(), "o2.json", &[]);

    // Valid, complete, every class positive (load_table checks all of it).
    let checked = load_table(&dir.path().join("o2.json")).expect("load_table accepts the table");
    assert_eq!(checked, o2);
    for &c in OpClass::ALL {
        let v = &o2.classes[&c];
        assert!(
            v.throughput.ns_per_op > 0.0 && v.latency.ns_per_op > 0.0,
            "{c}: {v:?}"
        );
        // Of the 5 samples a --quick table takes, those whose probe ran in the table's regime,
        // with more taken where fewer than 3 did.
        assert!(
            v.throughput.samples >= 3 || o2.regime.as_ref().is_some_and(|r| r.kernels_short > 0),
            "{c}: {} samples",
            v.throughput.samples
        );
    }
    // The probe ran before every sample: the regime's centre lies within what it took, and
    // some of the samples lie in it.
    let r = o2.regime.as_ref().expect("a table measured with the probe records its regime");
    assert_eq!(r.probe_kernel, "cal_axpy");
    // With llvm-mca installed (scripts/setup.sh), the calibration kernels' loops are scheduled:
    // cal_axpy's body (two loads, a multiply-add and a store) is resource-bound, and takes more
    // than 1 cycle and less than 100 in llvm-mca's schedule.
    let c = o2.core_resources.as_ref().expect("llvm-mca schedules the calibration kernels");
    let axpy = c.kernels.iter().find(|k| k.name == "cal_axpy").expect("cal_axpy's loop is scheduled");
    assert!(axpy.resource_bound && axpy.cycles > 1.0 && axpy.cycles < 100.0, "{axpy:?}");
    assert!(c.factor > 0.0 && c.factor.is_finite(), "{c:?}");
    assert!(r.probe_min_ns <= r.probe_ns && r.probe_ns <= r.probe_max_ns && r.share > 0.0 && r.share <= 1.0, "{r:?}");
    // mpicc builds the kernels into an MPI process: a communicator made and freed is measured
    // too (about 2.3 us on the development VM).
    let cc = &o2.classes[&OpClass::CommCreate].throughput;
    assert!(cc.ns_per_op > 100.0 && cc.ns_per_op < 1e6, "comm_create: {cc:?}");
    // A split into no communicator (MPI_UNDEFINED) does less: 0.9-1.2 us against 2.8-3.4 us.
    let cn = &o2.classes[&OpClass::CommNull].throughput;
    assert!(cn.ns_per_op > 10.0 && cn.ns_per_op < cc.ns_per_op, "comm_null: {cn:?} against comm_create {cc:?}");
    let sets = mpicast::machine::sysinfo::working_sets(&o2.host.caches);
    let levels = sets.len();
    // The levels the cores share (past L2) again with every core streaming, on 2 cores or more.
    let shared = if o2.host.cores > 1 { sets.iter().filter(|(l, _)| ["L2+", "L3", "DRAM"].contains(l)).count() } else { 0 };
    // The 2 KiB column walk up to just past L2 (cache-set conflicts show there).
    let conflict = sets.iter().filter(|(l, _)| ["L1", "L2", "L2+"].contains(l)).count();
    assert_eq!(o2.memory.len(), 7 * levels + conflict + 2 * shared + 1, "{levels} working sets x (stream/random x load/store, stride load, overlap load/store), 2 KiB stride loads at {conflict}, shared streams, first touch");
    // The column walks are independent loads: in L1 (rows of 1536 bytes there: 16 rows of 4160
    // do not fit) no slower than a random load's chase through the same lines, for the lines'
    // latency does not add up.
    let l1 = sets[0].0;
    let walk = o2.memory_cost(l1, "stride", "load").unwrap().throughput.ns_per_op;
    let chase = o2.memory_cost(l1, "random", "load").unwrap().latency.as_ref().unwrap().ns_per_op;
    assert!(walk < chase, "L1: column walk {walk} ns, one chase {chase} ns");
    assert!(o2.memory_cost(l1, "stride2k", "load").is_some());
    // The overlap kernel (a multiply-add per streamed element) at L1 is the core's time for its
    // body: at least the stream's there, and a few cycles at most; further out it does more
    // (the same work, the stream from further away): never under half its L1 time, a bound
    // loose enough for the other tests sharing the machine; the model's exponent in [0, 1].
    let overlap = |level: &str| o2.memory_cost(level, "overlap", "load").unwrap_or_else(|| panic!("{level}: no overlap figure")).throughput.ns_per_op;
    let core = overlap(sets[0].0);
    let l1_stream = o2.memory_cost(sets[0].0, "stream", "load").unwrap().throughput.ns_per_op;
    assert!(core >= 0.8 * l1_stream && core < 10.0, "overlap at L1 {core} ns, stream load {l1_stream} ns");
    for (level, _) in &sets[1..] {
        assert!(overlap(level) > 0.5 * core, "{level}: overlap {} ns, at L1 {core} ns", overlap(level));
    }
    let model = mpicast::predict::memory::MemoryModel::from_table(&o2, |m| m.ns_per_op);
    assert!(model.levels.iter().all(|l| (0.0..=1.0).contains(&l.overlap)), "{:?}", model.levels);
    if o2.host.cores > 1 {
        let c = o2.co_run.as_ref().expect("calibration kernels with every core busy");
        assert!(c.kernels.len() >= 10 && c.factor >= 1.0 && c.cores == o2.host.cores, "{c:?}");
    }
    if shared > 0 {
        let alone = o2.memory_cost("DRAM", "stream", "load").unwrap().throughput.ns_per_op;
        let all = o2.memory_cost("DRAM", "stream_all_cores", "load").unwrap().throughput.ns_per_op;
        // Sharing the memory's bandwidth cannot make a core faster. The harness runs other
        // tests beside this one, so the single-core figure may itself have shared the memory
        // (a CI run measured 0.41 ns alone, 0.34 ns with every core; the development VM, on
        // 2026-12-02, 2.0 to 3.4 ns alone and 1.2 to 1.9 with every core in six quick tables,
        // before and after the 2 KiB column walk existed: its pure stream kernels are slow
        // inside the MTC's rounds at times): a sanity bound, and the model never lets the
        // shared figure undercut the single one (predict::memory).
        assert!(all > 0.3 * alone && all < 20.0 * alone, "DRAM stream load alone {alone} ns, with every core streaming {all} ns");
    }
    let fit = o2.fit.as_ref().expect("fit present in a full-class table");
    assert!(fit.kernels.len() >= 10);
    assert!(fit
        .kernels
        .iter()
        .all(|k| k.measured.ns_per_op > 0.0 && k.error_fit.is_finite()));
    assert!(["perf_event", "clock"].contains(&o2.timer.source.as_str()));

    // Sanity.
    let t = |c: OpClass| o2.classes[&c].throughput.ns_per_op;
    let l = |c: OpClass| o2.classes[&c].latency.ns_per_op;
    assert!(
        t(OpClass::DoubleDiv) > t(OpClass::DoubleAdd),
        "div {} <= add {}",
        t(OpClass::DoubleDiv),
        t(OpClass::DoubleAdd)
    );
    assert!(l(OpClass::DoubleDiv) > l(OpClass::DoubleAdd));
    let l1 = o2
        .memory_cost("L1", "stream", "load")
        .unwrap()
        .throughput
        .ns_per_op;
    let dram = o2.memory_cost("DRAM", "random", "load").unwrap();
    assert!(
        dram.latency.unwrap().ns_per_op > l1,
        "DRAM random {:?} vs L1 {l1}",
        dram.latency
    );
    assert!(dram.throughput.ns_per_op > l1);

    host_speed_is_checked_against_the_tables_own_kernels(dir.path(), &o2);

    // -O0 keeps every value in memory: simple arithmetic costs more per op than at -O2.
    let o0 = bench(
        dir.path(),
        "o0.json",
        &[
            "--cflags",
            "-O0",
            "--classes",
            "int_add,double_add,double_mul",
        ],
    );
    assert_eq!(o0.classes.len(), 3);
    assert!(
        load_table(&dir.path().join("o0.json")).is_err(),
        "a --classes table is partial"
    );
    for c in [OpClass::IntAdd, OpClass::DoubleAdd, OpClass::DoubleMul] {
        let (a, b) = (o0.classes[&c].throughput.ns_per_op, t(c));
        assert!(a > b, "{c}: -O0 {a} ns <= -O2 {b} ns");
    }

    // --compare prints the per-class ratio of two tables (the classes both have).
    let o = Command::new(exe())
        .args(["bench", "machine", "--compare"])
        .args([dir.path().join("o2.json"), dir.path().join("o0.json")])
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("double_add"))
        .expect("double_add row");
    let ratio: f64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert!(ratio > 1.0, "-O0 / -O2 ratio {ratio}: {line}");
    assert!(!text.contains("int_div"), "only classes both tables have");
}

#[test]
fn unknown_class_is_refused_with_the_valid_names() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(exe())
        .args(["bench", "machine", "--classes", "nonsense"])
        .env("XDG_CACHE_HOME", dir.path())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown op class") && err.contains("int_add"),
        "{err}"
    );
}

/// A table cached with the unbounded fit (loads and stores fitted at 0 ns, as NNLS left them) is
/// fitted again on load: every class within 0.5-2x its raw cost, from the table's own kernels.
#[test]
fn a_cached_fit_that_zeroed_a_class_is_refitted_within_bounds() {
    let path = root().join("tests/fuzz-corpus/json/machine_quick.json");
    let stored: MachineTable = mpicast::model::read_artifact(&path).unwrap();
    assert_eq!(stored.fit.as_ref().unwrap().ns_per_op[&OpClass::Load], 0.0, "the fixture keeps the old fit");
    let t = load_table(&path).unwrap();
    let fit = t.fit.as_ref().unwrap();
    for (c, &v) in &fit.ns_per_op {
        let raw = t.classes[c].throughput.ns_per_op;
        assert!(v >= 0.5 * raw * 0.999999 && v <= 2.0 * raw * 1.000001, "{c}: fitted {v}, raw {raw}");
    }
    assert_eq!(fit.kernels.len(), stored.fit.as_ref().unwrap().kernels.len());
}

/// A table measured while other processes use more CPU than MPICAST_LOAD_LIMIT (here: any)
/// says so, the command warns, and without -o it is written beside the host's default
/// (`*.under-load.json`), never as the default.
#[test]
fn a_table_measured_under_load_is_marked_and_not_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let o = Command::new(exe())
        .args(["bench", "machine", "--quick", "--samples", "2", "--classes", "int_add"])
        .env("XDG_CACHE_HOME", &cache)
        .env("MPICAST_LOAD_LIMIT", "-1")
        .output()
        .expect("mpicast runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("measured under load") && stderr.contains("re-run"), "{stderr}");
    let written: Vec<_> = std::fs::read_dir(cache.join("mpicast/machines"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        written.len() == 1 && written[0].ends_with("_partial.under-load.json"),
        "{written:?}"
    );
    let t: MachineTable =
        mpicast::model::read_artifact(&cache.join("mpicast/machines").join(&written[0])).unwrap();
    let load = t.load.expect("the load is recorded");
    assert!(load.under_load && load.wall_s > 0.0 && load.cpus >= 1, "{load:?}");
}

/// `predict --host-speed`: this host's table's calibration kernels timed again. A copy of the
/// table whose kernels took a quarter of the time (the fit's measures) says the host now computes
/// about four times as slowly (a quarter, not a half: under `make test` the suite's load moved
/// two checks seconds apart by up to 1.8x, and a halved table's check came out only 1.13x the
/// other's):
/// warn reports the factor, rescale scales the costs by it, off does not check.
fn host_speed_is_checked_against_the_tables_own_kernels(dir: &Path, o2: &MachineTable) {
    let predict = |table: &Path, how: &str| -> mpicast::model::prediction::Prediction {
        let o = Command::new(exe())
            .args(["predict", "examples/pi_dartboard.c", "-n", "1", "--ops", "source", "--platform", "platforms/cluster-gige.xml", "--machine"])
            .arg(table)
            .args(["--host-speed", how, "--json", "-", "--", "200000", "2"])
            .current_dir(crate::util::root())
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .output()
            .expect("mpicast runs");
        assert!(o.status.success(), "predict --host-speed {how}: {}", String::from_utf8_lossy(&o.stderr));
        mpicast::model::parse_artifact(&String::from_utf8_lossy(&o.stdout), "predict --json -").expect("a prediction")
    };
    let own = dir.join("o2.json");
    let same = predict(&own, "warn").machine.speed.expect("this host's table is checked");
    let mut quartered = o2.clone();
    for k in &mut quartered.fit.as_mut().expect("a full table has a fit").kernels {
        k.measured.ns_per_op *= 0.25;
    }
    let path = dir.join("quartered.json");
    mpicast::model::write_artifact(&path, &quartered).unwrap();
    let warn = predict(&path, "warn");
    let s = warn.machine.speed.clone().expect("checked");
    // The check compares with the table's own figures: the quartered ones (the fit's median per
    // body times the bodies per iteration), and its factor is the median ratio.
    let cached = std::fs::read_dir(dir.join("cache/mpicast/machines/speed"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("quartered-"))
        .expect("the quartered table's check is cached");
    let check: mpicast::machine::speed::SpeedCheck = mpicast::model::read_artifact(&cached).unwrap();
    let decls = mpicast::machine::fit::parse_declarations(mpicast::machine::kernels::calib_source()).unwrap();
    assert_eq!(check.kernels.len(), decls.len());
    for k in &check.kernels {
        let fit = o2.fit.as_ref().unwrap().kernels.iter().find(|f| f.name == k.name).unwrap();
        let bodies = decls.iter().find(|d| d.name == k.name).unwrap().bodies;
        assert!((k.table_ns / (0.25 * fit.measured.ns_per_op * bodies) - 1.0).abs() < 1e-9, "{k:?}");
    }
    // Within a few units in the last place: serde_json's parser may read a written f64 one
    // ULP off, and the factor was computed before the kernels' figures were written.
    let ulps = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-12;
    assert!(ulps(check.factor, mpicast::machine::speed::factor_of(&check.kernels)), "{} against {:?}", check.factor, check.kernels);
    assert!(ulps(check.factor, s.factor), "{} against {}", check.factor, s.factor);
    // Two checks seconds apart, with the suite's other tests loading the host between them:
    // the quartered table's factor well above the other's, not exactly four times it (a halved
    // table's came out 1.34x and 1.13x).
    let r = s.factor / same.factor;
    assert!(r > 1.6 && r < 8.0, "kernels recorded at a quarter of their time: factor {} against {} for the table as measured", s.factor, same.factor);
    assert!(!s.applied && warn.assumptions.iter().any(|a| a.contains("slower than when its machine table was measured")), "{:?}", warn.assumptions);
    let re = predict(&path, "rescale");
    let applied = re.machine.speed.clone().expect("checked");
    assert!(applied.applied && ulps(applied.factor, s.factor), "the check is reused within its 15 minutes: {applied:?} {s:?}");
    // Scaled class by class, by the kernels that use each class: near the median factor, which
    // the suite's other tests running beside this one raise along with every kernel's.
    let g = re.predicted_s / warn.predicted_s;
    assert!(g > 0.5 * s.factor && g < 2.0 * s.factor && g > 1.2, "rescaled {} s against {} s as measured, factor {}", re.predicted_s, warn.predicted_s, s.factor);
    assert!(predict(&path, "off").machine.speed.is_none());
    // Another host's table is never checked.
    let mut other = o2.clone();
    other.host.hostname = format!("{}-elsewhere", other.host.hostname);
    let path = dir.join("other.json");
    mpicast::model::write_artifact(&path, &other).unwrap();
    assert!(predict(&path, "rescale").machine.speed.is_none());
    // Nor one of a machine with this host's name but other cores.
    let mut other = o2.clone();
    other.host.cores += 14;
    let path = dir.join("other-cores.json");
    mpicast::model::write_artifact(&path, &other).unwrap();
    assert!(predict(&path, "rescale").machine.speed.is_none());
}
