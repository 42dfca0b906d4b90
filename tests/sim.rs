//! SimGrid through mpicast's own bindings, checked against analytic times on
//! platforms/two_hosts.xml: two 1 Gf hosts, one link of 125 MB/s bandwidth (B) and 50 us latency (L).
//! Each simulation runs in a child `mpicast simulate` process.

use mpicast::model::simjob::{ActorSpec, SimAction, SimJob, SimOutcome};

use crate::util::{children_run_this_mpicast, two_hosts};

fn simulate(job: &SimJob) -> SimOutcome {
    children_run_this_mpicast();
    mpicast::sim::child::simulate(job).expect("simulation runs")
}

fn job(cfg: &[&str], a: Vec<SimAction>, b: Vec<SimAction>) -> SimJob {
    SimJob {
        platform: two_hosts(),
        cfg: cfg.iter().map(|s| s.to_string()).collect(),
        actors: vec![
            ActorSpec { name: "a".into(), host: "h0".into(), actions: a },
            ActorSpec { name: "b".into(), host: "h1".into(), actions: b },
        ],
    }
}

const L: f64 = 50e-6;
const B: f64 = 125e6;
const MB: u64 = 1_000_000;

fn assert_close(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() <= 1e-9 * want.max(1.0), "{what}: simulated {got} s, expected {want} s");
}

#[test]
fn one_gigaflop_on_a_one_gf_host_takes_one_second() {
    let out = simulate(&job(&[], vec![SimAction::Compute { flops: 1e9 }], vec![]));
    assert_close(out.end_time_s, 1.0, "1e9 flops on 1 Gf");
    let h0 = out.hosts.iter().find(|h| h.name == "h0").unwrap();
    assert_close(h0.computed_flops, 1e9, "flops recorded by the host-load plugin");
}

#[test]
fn one_megabyte_with_unit_factors_takes_latency_plus_size_over_bandwidth() {
    // SMPI network model with its correction factors set to 1 and no reverse (ack) traffic:
    // T = L + S / B = 50 us + 1e6 B / 125e6 B/s = 8.05 ms.
    let cfg = ["smpi/bw-factor:0:1", "smpi/lat-factor:0:1", "network/crosstraffic:0"];
    let out = simulate(&job(&cfg, vec![SimAction::Send { to: "b".into(), bytes: MB }], vec![SimAction::Recv { from: "a".into() }]));
    assert_close(out.end_time_s, L + MB as f64 / B, "1 MB message, unit factors");
    let b = out.actors.iter().find(|x| x.name == "b").unwrap();
    assert_close(b.comm_s, L + MB as f64 / B, "receiver's communication time");
}

#[test]
fn one_megabyte_under_default_smpi_factors() {
    // SimGrid 3.32's default SMPI factors for messages of 65472 B and more: latency x 11.6436,
    // bandwidth x 0.940694; cross-traffic adds a reverse flow of 5% of the bytes on the shared link:
    // T = 11.6436 L + 1.05 S / (0.940694 B) = 9.5118 ms.
    let out = simulate(&job(&[], vec![SimAction::Send { to: "b".into(), bytes: MB }], vec![SimAction::Recv { from: "a".into() }]));
    let want = 11.6436 * L + 1.05 * MB as f64 / (0.940694 * B);
    assert!((out.end_time_s - want).abs() < 1e-7, "simulated {} s, expected {want} s", out.end_time_s);
}

#[test]
fn compute_then_message_adds_up() {
    let cfg = ["smpi/bw-factor:0:1", "smpi/lat-factor:0:1", "network/crosstraffic:0"];
    let out = simulate(&job(
        &cfg,
        vec![SimAction::Compute { flops: 5e8 }, SimAction::Send { to: "b".into(), bytes: MB }],
        vec![SimAction::Recv { from: "a".into() }, SimAction::Compute { flops: 2.5e8 }],
    ));
    assert_close(out.end_time_s, 0.5 + L + MB as f64 / B + 0.25, "compute, message, compute");
}

#[test]
fn a_receive_without_a_send_is_reported_as_a_deadlock() {
    let err = mpicast::sim::child::simulate(&{
        children_run_this_mpicast();
        job(&[], vec![], vec![SimAction::Recv { from: "a".into() }])
    })
    .unwrap_err();
    assert!(format!("{err:#}").contains("did not finish"), "{err:#}");
}
