//! A replay's result as text: what `mpicast replay` prints.

use crate::model::trace::ReplayResult;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

/// The terminal report.
pub fn replay(r: &ReplayResult) -> String {
    let mut s = String::new();
    s.push_str(&format!("makespan        {:.6} s\n", r.makespan_s));
    s.push_str(&format!(
        "messages        {} ({:.3e} B), simulated in {:.2} s of wall time\n",
        r.messages, r.bytes, r.wall_s
    ));
    if r.ranks.len() <= 16 {
        s.push_str("\nrank  host              finish_s     compute_s    comm_s       wait_s\n");
        for k in &r.ranks {
            s.push_str(&format!(
                "{:<5} {:<17} {:<12.6} {:<12.6} {:<12.6} {:.6}\n",
                k.rank, k.host, k.finish_s, k.compute_s, k.comm_s, k.wait_s
            ));
        }
    } else {
        s.push_str(&format!(
            "\n{} ranks      min          median       max\n",
            r.ranks.len()
        ));
        type Getter = fn(&crate::model::trace::RankStats) -> f64;
        let cols: [(&str, Getter); 4] = [
            ("finish_s", |k| k.finish_s),
            ("compute_s", |k| k.compute_s),
            ("comm_s", |k| k.comm_s),
            ("wait_s", |k| k.wait_s),
        ];
        for (name, f) in cols {
            let mut v: Vec<f64> = r.ranks.iter().map(f).collect();
            let med = median(&mut v);
            s.push_str(&format!(
                "{:<15} {:<12.6} {:<12.6} {:.6}\n",
                name,
                v[0],
                med,
                v[v.len() - 1]
            ));
        }
    }
    let mut hosts: Vec<_> = r.hosts.iter().filter(|h| h.ranks > 0).collect();
    hosts.sort_by(|a, b| b.cpu_use.total_cmp(&a.cpu_use));
    s.push_str("\nhost              ranks cores cpu_use\n");
    for h in hosts.iter().take(8) {
        s.push_str(&format!(
            "{:<17} {:<5} {:<5} {:.1}%\n",
            h.name,
            h.ranks,
            h.cores,
            100.0 * h.cpu_use
        ));
    }
    if hosts.len() > 8 {
        s.push_str(&format!(
            "... {} more hosts (--json has them all)\n",
            hosts.len() - 8
        ));
    }
    let mut links: Vec<_> = r.links.iter().filter(|l| l.bytes > 0.0).collect();
    links.sort_by(|a, b| b.utilisation.total_cmp(&a.utilisation));
    if !links.is_empty() {
        s.push_str("\nlink                        bytes        utilisation\n");
        for l in links.iter().take(8) {
            s.push_str(&format!(
                "{:<27} {:<12.4e} {:.1}%\n",
                l.name,
                l.bytes,
                100.0 * l.utilisation
            ));
        }
        if links.len() > 8 {
            s.push_str(&format!(
                "... {} more links (--json has them all)\n",
                links.len() - 8
            ));
        }
    }
    for w in &r.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

/// The replay benchmark's two lines: what was replayed, and how fast.
pub fn halo_bench(b: &crate::sim::bench::HaloBench) -> String {
    format!(
        "bench halo2d {} ranks x {} iterations on {} hosts x {} cores: {} messages, \
         simulated makespan {:.4} s\n\
         wall: {:.2} s total (child simulation {:.2} s, trace generation {:.2} s) -> {:.0} messages/s of wall time \
         ({:.0} in the simulation alone)\n",
        b.ranks,
        b.iters,
        b.hosts,
        b.cores,
        b.messages,
        b.makespan_s,
        b.total_s,
        b.simulation_s,
        b.generation_s,
        b.messages as f64 / b.total_s,
        b.messages as f64 / b.simulation_s
    )
}
