//! Reports: `mpicast predict --html --chrome-trace` and `mpicast report` on real
//! predictions of examples/pi_dartboard.c and examples/jacobi2d.c, a hand-written sweep, two
//! machine tables side by side, hostile file names and sources, and bad input. The pages are
//! opened in headless Chromium (Debian's `chromium`, installed by scripts/setup.sh): the test
//! reads the DOM after the page's script ran (elements and attributes only the script creates),
//! the error hook's `data-errors` attribute and Chromium's log, and keeps a screenshot of each
//! page in target/test-artifacts/report/.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{mpicast_in, root, MACHINE};

const PLATFORM: &str = "platforms/cluster-gige.xml";

fn mpicast(args: &[&str]) -> Output {
    mpicast_in(&root(), args)
}

fn ok(o: &Output, what: &str) -> String {
    assert!(o.status.success(), "{what} failed ({}): {}", o.status, String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Where screenshots are kept: target/test-artifacts/report/.
fn artifacts() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.parent().unwrap_or(tmp).join("test-artifacts").join("report");
    std::fs::create_dir_all(&dir).expect("create target/test-artifacts/report");
    dir
}

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser"] {
        if let Some(p) = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
            .map(|d| d.join(name))
            .find(|p| p.is_file())
        {
            return p;
        }
    }
    panic!("chromium is not installed: the report tests open the pages in headless Chromium; run scripts/setup.sh (it installs Debian's chromium)");
}

/// What a headless Chromium run printed.
struct Run {
    stdout: String,
    stderr: String,
}

/// Runs headless Chromium on a page (`page` then `hash`, the URL's fragment) with `extra` flags,
/// killed after 90 s. Its output goes to
/// files: Chromium logs a lot, and a full pipe nobody reads would stall it.
fn headless(page: &Path, hash: &str, extra: &[String]) -> Run {
    let profile = tempfile::tempdir().expect("profile dir");
    let (out, err) = (profile.path().join("stdout"), profile.path().join("stderr"));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().join("profile").display()))
        .args(extra)
        .arg(format!("file://{}{hash}", page.canonicalize().expect("page exists").display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    while child.try_wait().expect("wait for chromium").is_none() {
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish with {} in 90 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    Run { stdout: read(&out), stderr: read(&err) }
}

/// Opens a page: returns the DOM after its scripts ran, after checking that they finished
/// (`data-ready`) without an error, and keeps a 1400x1000 screenshot as `shot`.
fn render(page: &Path, shot: &str) -> String {
    render_at(page, "", shot)
}

/// [`render`] with a URL fragment (`#view=...`).
fn render_at(page: &Path, hash: &str, shot: &str) -> String {
    let o = headless(page, hash, &["--dump-dom".to_string()]);
    let dom = o.stdout;
    let log = o.stderr;
    assert!(dom.contains("<html"), "no DOM dumped for {}: {log}", page.display());
    assert!(!dom.contains("data-errors="), "{}: the page recorded errors: {}", page.display(), attr(&dom, "data-errors").unwrap_or_default());
    assert!(!log.contains("Uncaught"), "{}: uncaught error in Chromium's log: {log}", page.display());
    assert_eq!(attr(&dom, "data-ready").as_deref(), Some("1"), "{}: the page's script did not finish", page.display());
    let png = artifacts().join(shot);
    let _ = std::fs::remove_file(&png);
    let o = headless(page, hash, &[format!("--screenshot={}", png.display()), "--window-size=1400,1000".into()]);
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "no screenshot of {} ({size} bytes): {}", page.display(), o.stderr);
    dom
}

/// The value of the first `name="..."` attribute in a dumped DOM.
fn attr(dom: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let i = dom.find(&key)? + key.len();
    let j = dom[i..].find('"')?;
    Some(dom[i..i + j].replace("&quot;", "\"").replace("&amp;", "&"))
}

/// The JSON a prediction page embeds for its script.
fn page_data(html: &str) -> Value {
    let start = html.find("id=\"mpicast-data\">").expect("embedded data") + "id=\"mpicast-data\">".len();
    let end = start + html[start..].find("</script>").expect("end of data");
    serde_json::from_str(&html[start..end]).expect("embedded data is JSON")
}

/// Predicts with --json, --html and --chrome-trace into `dir`; returns the three paths.
fn predict_all(dir: &Path, name: &str, src: &str, machine: &str, program_args: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let (json, html, trace) = (dir.join(format!("{name}.json")), dir.join(format!("{name}.html")), dir.join(format!("{name}.trace.json")));
    let mut args: Vec<String> = ["predict", src, "-n", "4", "--machine", machine, "--platform", PLATFORM].map(String::from).to_vec();
    for (flag, p) in [("--json", &json), ("--html", &html), ("--chrome-trace", &trace)] {
        args.push(flag.into());
        args.push(p.display().to_string());
    }
    args.push("--".into());
    args.extend(program_args.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&mpicast(&refs), &format!("mpicast {}", refs.join(" ")));
    (json, html, trace)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: not JSON: {e}", p.display()))
}

/// The Chrome trace is the Trace Event Format: metadata names one thread per rank on its host's
/// process, every complete event has the required fields, and each rank's events add up to its
/// compute + communication + waiting from the prediction.
fn check_chrome_trace(trace: &Path, prediction: &Value) {
    let t = read_json(trace);
    let events = t["traceEvents"].as_array().expect("traceEvents array");
    assert!(matches!(t["displayTimeUnit"].as_str(), Some("ms" | "ns")), "displayTimeUnit: {}", t["displayTimeUnit"]);
    let ranks = prediction["ranks_detail"].as_array().unwrap();
    let mut host_pid = std::collections::BTreeMap::new();
    let mut thread_names = std::collections::BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        match e["name"].as_str() {
            Some("process_name") => {
                host_pid.insert(e["args"]["name"].as_str().unwrap().to_string(), e["pid"].as_u64().unwrap());
            }
            Some("thread_name") => {
                let old = thread_names.insert(e["tid"].as_u64().unwrap(), (e["pid"].as_u64().unwrap(), e["args"]["name"].clone()));
                assert!(old.is_none(), "two thread_name events for tid {}", e["tid"]);
            }
            _ => {}
        }
    }
    assert_eq!(thread_names.len(), ranks.len(), "one named thread per rank");
    for r in ranks {
        let rank = r["rank"].as_u64().unwrap();
        let (pid, name) = &thread_names[&rank];
        assert_eq!(name, &Value::from(format!("rank {rank}")));
        assert_eq!(Some(pid), host_pid.get(r["host"].as_str().unwrap()), "rank {rank} is on its host's process");
    }
    let mut total = vec![0.0f64; ranks.len()];
    let mut compute = vec![0.0f64; ranks.len()];
    let mut n = 0;
    for e in events.iter().filter(|e| e["ph"] == "X") {
        for f in ["name", "ph", "ts", "dur", "pid", "tid"] {
            assert!(!e[f].is_null(), "X event without {f}: {e}");
        }
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 0.0 && dur >= 0.0, "{e}");
        let tid = e["tid"].as_u64().unwrap() as usize;
        assert!(tid < ranks.len(), "tid {tid} is not a rank");
        assert_eq!(e["pid"].as_u64().unwrap(), thread_names[&(tid as u64)].0, "{e}");
        total[tid] += dur * 1e-6;
        if e["name"] == "compute" {
            compute[tid] += dur * 1e-6;
        }
        n += 1;
    }
    assert_eq!(n, prediction["timeline"].as_array().unwrap().len(), "one X event per timeline event");
    for (i, r) in ranks.iter().enumerate() {
        let busy = r["compute_s"].as_f64().unwrap() + r["comm_s"].as_f64().unwrap() + r["wait_s"].as_f64().unwrap();
        assert!((total[i] - busy).abs() <= 1e-4 * busy + 1e-9, "rank {i}: events add up to {} s, the prediction says {busy} s", total[i]);
        let c = r["compute_s"].as_f64().unwrap();
        // Reductions' arithmetic counts as compute inside collective events.
        assert!((compute[i] - c).abs() <= 0.01 * c + 1e-9, "rank {i}: compute events {} s, compute_s {c} s", compute[i]);
    }
}

/// The prediction page rendered: highlighted source, the block panel the script fills, the
/// timeline canvas with every event drawn.
fn check_prediction_page(dom: &str, prediction: &Value) {
    assert!(dom.contains("class=\"ln b sel\""), "the hottest block is selected in the source view");
    assert!(dom.contains("id=\"per-machine\"") && dom.contains("id=\"op-split\""), "the block panel was filled");
    let drawn: usize = attr(dom, "data-drawn").expect("timeline canvas").parse().unwrap();
    assert_eq!(drawn, prediction["timeline"].as_array().unwrap().len(), "every event drawn at the whole-run view");
}

#[test]
fn pi_dartboard_report_and_chrome_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (json, html, trace) = predict_all(dir.path(), "pi", "examples/pi_dartboard.c", MACHINE, &["100000", "3"]);
    let p = read_json(&json);
    check_chrome_trace(&trace, &p);
    let page = std::fs::read_to_string(&html).unwrap();
    // Self-contained: nothing to fetch.
    for needle in ["<script src", "<link", "<img", "<iframe", "url(", "https://"] {
        assert!(!page.contains(needle), "the page refers outside: {needle}");
    }
    let data = page_data(&page);
    let hottest = &data["blocks"][0];
    assert_eq!(hottest["id"], p["blocks"][0]["id"]);
    assert_eq!(hottest["per"][0]["s"], p["blocks"][0]["seconds"]);
    let dom = render(&html, "pi_dartboard.png");
    check_prediction_page(&dom, &p);
    // The throw_darts loop body is the hottest block: its first line carries its share.
    let share = format!("{:.1}%", 100.0 * p["blocks"][0]["share"].as_f64().unwrap());
    let line = format!("id=\"f0l{}\"", p["blocks"][0]["line_start"]);
    let at = dom.find(&line).expect("hottest block's first line");
    assert!(dom[at..at + 400].contains(&share), "share {share} on line {line}");

    // `mpicast report` on the saved JSON writes the same page, and the trace again.
    let again = dir.path().join("again.html");
    let trace2 = dir.path().join("again.trace.json");
    let out = ok(
        &mpicast(&["report", json.to_str().unwrap(), "-o", again.to_str().unwrap(), "--chrome-trace", trace2.to_str().unwrap()]),
        "mpicast report",
    );
    let predicted = mpicast::report::table::seconds(p["predicted_s"].as_f64().unwrap());
    assert!(out.contains(&format!("  {predicted}  ")), "summary table shows {predicted}: {out}");
    // The same page and trace (up to the last bit of floats read back from JSON).
    let data2 = page_data(&std::fs::read_to_string(&again).unwrap());
    assert_eq!(data2["blocks"].as_array().unwrap().len(), data["blocks"].as_array().unwrap().len());
    assert_eq!(data2["timeline"]["ev"].as_array().unwrap().len(), data["timeline"]["ev"].as_array().unwrap().len());
    check_chrome_trace(&trace2, &p);
}

#[test]
fn jacobi2d_report_and_chrome_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (json, html, trace) = predict_all(dir.path(), "jacobi2d", "examples/jacobi2d.c", MACHINE, &["64", "20"]);
    let p = read_json(&json);
    check_chrome_trace(&trace, &p);
    let dom = render(&html, "jacobi2d.png");
    check_prediction_page(&dom, &p);
    // Per-host and per-link tables: the four hosts with ranks, and the links messages crossed.
    for r in p["ranks_detail"].as_array().unwrap() {
        assert!(dom.contains(&format!("<td>{}</td>", r["host"].as_str().unwrap())));
    }
    let busiest = p["links"].as_array().unwrap().iter().max_by(|a, b| a["bytes"].as_f64().partial_cmp(&b["bytes"].as_f64()).unwrap()).unwrap();
    assert!(dom.contains(&format!("<td>{}</td>", busiest["name"].as_str().unwrap())));
    // The allreduce shows as a collective in the timeline's legend.
    assert!(dom.contains("collective MPI"));
    // Zoomed on a window (a link's #view=START,END): only the events overlapping it are drawn.
    let events = p["timeline"].as_array().unwrap();
    let (a, b) = (1e-3, 2e-3);
    let inside = events
        .iter()
        .filter(|e| e["end_s"].as_f64().unwrap() >= a - 1e-12 && e["start_s"].as_f64().unwrap() <= b + 1e-12)
        .count();
    let dom = render_at(&html, &format!("#view={a},{b}"), "jacobi2d_zoomed.png");
    assert_eq!(attr(&dom, "data-view").as_deref(), Some("0.001 0.002"));
    let drawn: usize = attr(&dom, "data-drawn").unwrap().parse().unwrap();
    assert!(drawn > 0 && drawn < events.len(), "{drawn} of {} events drawn", events.len());
    assert!(drawn.abs_diff(inside) <= 4, "{drawn} drawn, {inside} overlap the window");
}

#[test]
fn two_machine_tables_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    // A second machine table: the fixture with double arithmetic three times slower.
    let mut m = read_json(&root().join(MACHINE));
    m["host"]["hostname"] = "slowfp".into();
    for class in ["double_mul", "double_add"] {
        for variant in ["throughput", "latency"] {
            for k in ["ns_per_op", "min_ns", "max_ns"] {
                let v = m["classes"][class][variant][k].as_f64().unwrap();
                m["classes"][class][variant][k] = (3.0 * v).into();
            }
        }
    }
    let slow = dir.path().join("slow.json");
    std::fs::write(&slow, serde_json::to_string(&m).unwrap()).unwrap();
    let (a, _, _) = predict_all(dir.path(), "fast", "examples/pi_dartboard.c", MACHINE, &["100000", "3"]);
    let (b, _, _) = predict_all(dir.path(), "slow", "examples/pi_dartboard.c", slow.to_str().unwrap(), &["100000", "3"]);
    let out_html = dir.path().join("both.html");
    let out = ok(&mpicast(&["report", a.to_str().unwrap(), b.to_str().unwrap(), "-o", out_html.to_str().unwrap()]), "report a b");
    assert!(out.contains("(fixture)") && out.contains("(slowfp)"), "{out}");
    let page = std::fs::read_to_string(&out_html).unwrap();
    let data = page_data(&page);
    assert_eq!(data["machines"], serde_json::json!(["fixed.json (fixture)", "slow.json (slowfp)"]));
    // The hottest block (x*x + y*y, all double arithmetic) costs about three times as much.
    let (pa, pb) = (read_json(&a), read_json(&b));
    let id = &pa["blocks"][0]["id"];
    let block = data["blocks"].as_array().unwrap().iter().find(|x| x["id"] == *id).unwrap();
    let find = |p: &Value| p["blocks"].as_array().unwrap().iter().find(|x| x["id"] == *id).unwrap()["seconds"].clone();
    assert_eq!(block["per"][0]["s"], find(&pa));
    assert_eq!(block["per"][1]["s"], find(&pb));
    let ratio = find(&pb).as_f64().unwrap() / find(&pa).as_f64().unwrap();
    assert!((2.5..=3.0).contains(&ratio), "slow/fast {ratio}");
    let dom = render(&out_html, "two_machines.png");
    let panel = &dom[dom.find("id=\"per-machine\"").unwrap()..];
    let panel = &panel[..panel.find("</table>").unwrap()];
    assert_eq!(panel.matches("<tr").count(), 3, "header and one row per machine table: {panel}");
    assert!(panel.contains("slow.json (slowfp)"));

    // Predictions of different programs do not mix.
    let (c, _, _) = predict_all(dir.path(), "jac", "examples/jacobi2d.c", MACHINE, &["64", "20"]);
    let o = mpicast(&["report", a.to_str().unwrap(), c.to_str().unwrap(), "-o", out_html.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains(c.to_str().unwrap()) && e.contains("one program"), "{e}");
}

#[test]
fn sweep_page_and_figure() {
    use mpicast::model::sweep::{Sweep, SweepPoint};
    let platforms = ["platforms/cluster-gige.xml", "platforms/cluster-ib.xml"];
    let ranks = [1u32, 2, 4, 8, 16];
    let mut points = Vec::new();
    for (k, pl) in platforms.iter().enumerate() {
        // Amdahl-like: 1 s of work, a communication term that grows with the ranks.
        let comm = [0.004, 0.001][k];
        let t1 = 1.0;
        for &n in &ranks {
            let t = t1 / f64::from(n) + comm * f64::from(n).log2();
            points.push(SweepPoint {
                platform: pl.to_string(),
                ranks: n,
                predicted_s: t,
                interval_s: [0.95 * t, 1.05 * t],
                speedup: t1 / t,
                efficiency: t1 / t / f64::from(n),
                compute_s: t1 / f64::from(n),
                comm_s: comm * f64::from(n).log2(),
                wait_s: 0.0,
                messages: u64::from(n) * 10,
                wall_s: 0.05,
            });
        }
    }
    let sweep = Sweep {
        program: vec!["examples/jacobi2d.c".into()],
        args: vec!["256".into(), "100".into()],
        bindings: Default::default(),
        mode: "static".into(),
        scaling: "program".into(),
        trace_ranks: None,
        platforms: platforms.iter().map(|s| s.to_string()).collect(),
        ranks: ranks.to_vec(),
        points,
        topology: None,
        assumptions: vec!["a <hand-written> sweep & \"quotes\"".into()],
        wall_s: 0.5,
    };
    // The standalone figure: three panels, a curve and a legend entry per platform.
    let svg = mpicast::report::sweep_svg(&sweep);
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{}", &svg[..80]);
    assert_eq!(svg.matches("class=\"panel\"").count(), 3);
    assert_eq!(svg.matches("class=\"series\"").count(), 3 * platforms.len());
    assert_eq!(svg.matches("class=\"legend-entry\"").count(), platforms.len());
    assert_eq!(svg.matches("class=\"pt\"").count(), 3 * 10);
    assert!(svg.contains(">ideal</text>") && svg.contains(">ranks (log scale)</text>"));

    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("sweep.json");
    mpicast::model::write_artifact(&input, &sweep).unwrap();
    let html = dir.path().join("sweep.html");
    let out = ok(&mpicast(&["report", input.to_str().unwrap(), "-o", html.to_str().unwrap()]), "report sweep");
    // The terminal table: one line per point, units lined up.
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("platforms/")).collect();
    assert_eq!(rows.len(), 10, "{out}");
    let unit_col: Vec<usize> = rows.iter().map(|l| l.find(" ms").or(l.find("  s")).expect("a unit")).collect();
    assert!(unit_col.windows(2).all(|w| w[0] == w[1]), "units line up: {out}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("a &lt;hand-written&gt; sweep &amp; &quot;quotes&quot;"));
    let dom = render(&html, "sweep.png");
    assert_eq!(attr(&dom, "data-plot-points").as_deref(), Some("30"), "every point laid out");
    let width: f64 = attr(&dom, "data-plot-width").unwrap().parse().unwrap();
    assert!(width > 1000.0, "plot width {width}");
    assert!(dom.contains("class=\"mpicast-sweep\""));
}

#[test]
fn hostile_names_and_missing_sources_are_shown_as_text() {
    let dir = tempfile::tempdir().unwrap();
    // A file name and a source line that would be markup if they were not escaped.
    let name = "pi<b>&'x\".c";
    let mut src = std::fs::read_to_string(root().join("examples/pi_dartboard.c")).unwrap();
    src.push_str("/* </script><script>document.documentElement.setAttribute('data-pwned','1')</script> <img src=x onerror=alert(1)> */\n");
    std::fs::write(dir.path().join(name), &src).unwrap();
    let (machine, platform) = (root().join(MACHINE), root().join(PLATFORM));
    let o = mpicast_in(
        dir.path(),
        &["predict", name, "-n", "2", "--machine", machine.to_str().unwrap(), "--platform", platform.to_str().unwrap(), "--json", "p.json", "--html", "p.html", "--", "1000", "2"],
    );
    ok(&o, "predict on a hostile file name");
    let html = dir.path().join("p.html");
    let dom = render(&html, "hostile.png");
    assert!(!dom.contains("data-pwned="), "source text ran as script");
    assert!(!dom.contains("<img src=\"x\""), "source text became an element");
    assert!(dom.contains("&lt;/script&gt;&lt;script&gt;"), "the source line shows as text");
    assert!(dom.contains("pi&lt;b&gt;&amp;'x\"") || dom.contains("pi&lt;b&gt;&amp;&#39;x&quot;"), "the file name shows as text");

    // The source gone: the page says so and still renders.
    std::fs::remove_file(dir.path().join(name)).unwrap();
    let o = mpicast_in(dir.path(), &["report", "p.json", "-o", "q.html"]);
    ok(&o, "report without the source");
    let dom = render(&dir.path().join("q.html"), "missing_source.png");
    assert!(dom.contains("class=\"missing\"") && dom.contains("cannot read"), "the missing source is named");
}

#[test]
fn bad_input_is_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let out = out.to_str().unwrap();
    let err = |args: &[&str]| -> String {
        let o = mpicast(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(!Path::new(out).exists(), "{args:?} wrote a report");
        e
    };
    // Not JSON: a C source and a trace file.
    let e = err(&["report", "examples/pi_dartboard.c", "-o", out]);
    assert!(e.starts_with("mpicast: examples/pi_dartboard.c: not JSON"), "{e}");
    let e = err(&["report", "traces/golden/halo_2x2/rank-0.trace", "-o", out]);
    assert!(e.starts_with("mpicast: traces/golden/halo_2x2/rank-0.trace: not JSON"), "{e}");
    // Another artifact.
    let e = err(&["report", MACHINE, "-o", out]);
    assert!(e.contains(&format!("{MACHINE}: is a \"mpicast/machine\" file, expected \"mpicast/prediction\" or \"mpicast/sweep\"")), "{e}");
    // A missing file.
    let e = err(&["report", "/nonexistent/p.json", "-o", out]);
    assert!(e.starts_with("mpicast: /nonexistent/p.json: cannot read"), "{e}");
    // A prediction without a timeline has no Chrome trace.
    let json = dir.path().join("p.json");
    ok(
        &mpicast(&["predict", "examples/pi_dartboard.c", "-n", "2", "--machine", MACHINE, "--platform", PLATFORM, "--json", json.to_str().unwrap(), "--", "1000", "2"]),
        "predict without a timeline",
    );
    let trace = dir.path().join("t.json");
    let e = err(&["report", json.to_str().unwrap(), "--chrome-trace", trace.to_str().unwrap()]);
    assert!(e.contains(json.to_str().unwrap()) && e.contains("no timeline"), "{e}");
    // Nothing asked for.
    let e = err(&["report", json.to_str().unwrap()]);
    assert!(e.contains("nothing to write"), "{e}");
    // Without a timeline the page still renders, and says how to get one.
    let page = dir.path().join("ok.html");
    ok(&mpicast(&["report", json.to_str().unwrap(), "-o", page.to_str().unwrap()]), "report without a timeline");
    assert!(std::fs::read_to_string(&page).unwrap().contains("id=\"no-timeline\""));
}
