//! SimGrid platform files: the scenario templates (`mpicast platform --template`) and the platform
//! written from a measured network table.
//!
//! Conventions the replay relies on: every host carries `<prop id="mpicast/order" value="k"/>`
//! (rank k goes to the host of order k, wrapping around when there are more ranks than hosts),
//! host names sort in that same order, and a host's `core` attribute is its core count. Star
//! topologies use SimGrid's `routing="Cluster"` zones (one private link per host, optional
//! backbone); a host-to-host route then crosses the sender's up link and the receiver's down link.

use std::fmt::Write as _;

use anyhow::{bail, Result};

use crate::model::network::{NetworkTable, Segment};
use crate::network::smpi::{segment_factors, FactorList};

/// Template names, in the order `--help` lists them.
pub const TEMPLATES: &[(&str, &str)] = &[
    (
        "localhost",
        "this kind of 2-core machine, shared memory, from a measured ping-pong",
    ),
    ("cluster-gige", "hosts on one 1 Gb/s Ethernet switch"),
    (
        "cluster-ib",
        "hosts on a 100 Gb/s class (InfiniBand EDR) switch",
    ),
    (
        "lan-100m",
        "switched Fast Ethernet (100 Mb/s), as in the ChronosMix case study",
    ),
    (
        "xdsl",
        "peers on asymmetric DSL lines, tens of ms apart (dPerf's xDSL scenario)",
    ),
    (
        "grid5000",
        "clusters at several Grid'5000 sites joined by a backbone (dPerf's Table I)",
    ),
];

/// A link: bandwidth in bytes/s, latency in seconds.
#[derive(Debug, Clone, Copy)]
struct Link {
    bw: f64,
    lat: f64,
}

#[derive(Debug, Clone)]
struct HostSpec {
    name: String,
    speed_flops: f64,
    cores: u32,
    order: usize,
    /// Host to switch and switch to host; equal links are written as one SPLITDUPLEX link.
    up: Link,
    down: Link,
}

/// `1.25GBps`-style bandwidth.
pub fn fmt_bw(bytes_per_s: f64) -> String {
    let (v, u) = if bytes_per_s >= 1e9 {
        (bytes_per_s / 1e9, "GBps")
    } else if bytes_per_s >= 1e6 {
        (bytes_per_s / 1e6, "MBps")
    } else if bytes_per_s >= 1e3 {
        (bytes_per_s / 1e3, "kBps")
    } else {
        (bytes_per_s, "Bps")
    };
    format!("{}{u}", num(v))
}

/// `50us`-style latency.
pub fn fmt_lat(s: f64) -> String {
    let (v, u) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "us")
    } else {
        (s * 1e9, "ns")
    };
    format!("{}{u}", num(v))
}

/// `2.4Gf`-style speed.
pub fn fmt_speed(flops: f64) -> String {
    if flops >= 1e9 {
        format!("{}Gf", num(flops / 1e9))
    } else {
        format!("{}Mf", num(flops / 1e6))
    }
}

/// Up to six significant digits, no trailing zeros.
fn num(v: f64) -> String {
    let digits_before = v.abs().max(1.0).log10().floor() as usize + 1;
    let keep = 6usize.saturating_sub(digits_before);
    let s = format!("{:.*}", keep, v);
    let t = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if t.is_empty() || t == "-0" {
        "0".into()
    } else {
        t
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn header(out: &mut String, comment: &str, cfg: &[String]) {
    out.push_str(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n",
    );
    out.push_str("<!--");
    for line in comment.lines() {
        let _ = writeln!(out, "  {}", line.replace("--", "-"));
    }
    out.push_str("-->\n<platform version=\"4.1\">\n");
    if !cfg.is_empty() {
        out.push_str("  <config>\n");
        for item in cfg {
            let (k, v) = item.split_once(':').unwrap_or((item, ""));
            let _ = writeln!(
                out,
                "    <prop id=\"{}\" value=\"{}\"/>",
                xml_escape(k),
                xml_escape(v)
            );
        }
        out.push_str("  </config>\n");
    }
}

fn host_xml(out: &mut String, indent: &str, h: &HostSpec) {
    let core = if h.cores > 1 {
        format!(" core=\"{}\"", h.cores)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{indent}<host id=\"{}\" speed=\"{}\"{core}><prop id=\"mpicast/order\" value=\"{}\"/></host>",
        xml_escape(&h.name),
        fmt_speed(h.speed_flops),
        h.order
    );
}

/// A star zone: hosts, one link pair per host, an optional backbone and router (gateway).
fn star_zone(
    out: &mut String,
    id: &str,
    hosts: &[HostSpec],
    backbone: Option<Link>,
    router: Option<&str>,
    indent: &str,
) {
    let _ = writeln!(
        out,
        "{indent}<zone id=\"{}\" routing=\"Cluster\">",
        xml_escape(id)
    );
    let inner = format!("{indent}  ");
    for h in hosts {
        host_xml(out, &inner, h);
    }
    for h in hosts {
        let n = xml_escape(&h.name);
        if h.up.bw == h.down.bw && h.up.lat == h.down.lat {
            let _ = writeln!(
                out,
                "{inner}<link id=\"{n}_link\" bandwidth=\"{}\" latency=\"{}\" sharing_policy=\"SPLITDUPLEX\"/>",
                fmt_bw(h.up.bw),
                fmt_lat(h.up.lat)
            );
            let _ = writeln!(
                out,
                "{inner}<host_link id=\"{n}\" up=\"{n}_link_UP\" down=\"{n}_link_DOWN\"/>"
            );
        } else {
            let _ = writeln!(
                out,
                "{inner}<link id=\"{n}_up\" bandwidth=\"{}\" latency=\"{}\"/>",
                fmt_bw(h.up.bw),
                fmt_lat(h.up.lat)
            );
            let _ = writeln!(
                out,
                "{inner}<link id=\"{n}_down\" bandwidth=\"{}\" latency=\"{}\"/>",
                fmt_bw(h.down.bw),
                fmt_lat(h.down.lat)
            );
            let _ = writeln!(
                out,
                "{inner}<host_link id=\"{n}\" up=\"{n}_up\" down=\"{n}_down\"/>"
            );
        }
    }
    if let Some(r) = router {
        let _ = writeln!(out, "{inner}<router id=\"{}\"/>", xml_escape(r));
    }
    if let Some(b) = backbone {
        let _ = writeln!(
            out,
            "{inner}<backbone id=\"{}-backbone\" bandwidth=\"{}\" latency=\"{}\"/>",
            xml_escape(id),
            fmt_bw(b.bw),
            fmt_lat(b.lat)
        );
    }
    let _ = writeln!(out, "{indent}</zone>");
}

/// One host with `cores` cores and a loopback route (messages between its processes).
fn single_host(out: &mut String, name: &str, speed_flops: f64, cores: u32, loopback: Link) {
    out.push_str("  <zone id=\"world\" routing=\"Full\">\n");
    host_xml(
        out,
        "    ",
        &HostSpec {
            name: name.into(),
            speed_flops,
            cores,
            order: 0,
            up: loopback,
            down: loopback,
        },
    );
    let _ = writeln!(
        out,
        "    <link id=\"loopback\" bandwidth=\"{}\" latency=\"{}\" sharing_policy=\"FATPIPE\"/>",
        fmt_bw(loopback.bw),
        fmt_lat(loopback.lat)
    );
    let n = xml_escape(name);
    let _ = writeln!(
        out,
        "    <route src=\"{n}\" dst=\"{n}\"><link_ctn id=\"loopback\"/></route>"
    );
    out.push_str("  </zone>\n");
}

/// Zero-padded names so that sorting by name keeps rank order.
fn padded(prefix: &str, k: usize, total: usize, suffix: &str) -> String {
    let width = total.saturating_sub(1).max(1).to_string().len();
    format!("{prefix}{k:0width$}{suffix}")
}

/// Nominal host speed: compute times come from the machine table (MTC); the replay turns seconds
/// into flops at the host's speed, so only ratios between hosts matter.
const NOMINAL_SPEED: f64 = 1e9;

/// The localhost figures: shared-memory ping-pong between 2 ranks of this 2-core machine kind
/// (OpenMPI 4.1 vader BTL), fitted by `mpicast bench network` (see LOCALHOST_ORIGIN).
const LOCALHOST_SEGMENTS: &[(u64, f64, f64)] = &[
    // (first size in bytes, latency s, bandwidth B/s), rounded from the fit of
    // tests/fixtures/network/pingpong_shm.txt (medians 0.13-0.16 us up to 256 B, 0.38 us at
    // 3 KiB, 2.3 us at 4 KiB, 85.5 us at 1 MiB, 2.76 ms at 16 MiB).
    (0, 0.15e-6, 14.6e9),
    (4096, 2.0e-6, 15.0e9),
    (393216, 0.05e-6, 11.9e9),
    (2097152, 0.05e-6, 8.9e9),
    (6291456, 0.05e-6, 6.9e9),
];
const LOCALHOST_ORIGIN: &str = "ping-pong measured on this 2-core VM kind with mpicast's CTC (OpenMPI 4.1.4, vader\nshared memory, 2 ranks, median of adaptive repetitions), recorded in tests/fixtures/network/pingpong_shm.txt";

/// Generates template `name` for `hosts` hosts (for localhost: one host with `hosts` cores).
pub fn template(name: &str, hosts: usize) -> Result<String> {
    if hosts == 0 {
        bail!("--hosts must be at least 1");
    }
    let mut out = String::new();
    match name {
        "localhost" => {
            let segs: Vec<Segment> = LOCALHOST_SEGMENTS
                .iter()
                .map(|&(from, lat, bw)| Segment {
                    from_bytes: from,
                    to_bytes: from,
                    latency_s: lat,
                    bandwidth_bytes_per_s: bw,
                })
                .collect();
            let link = Link {
                lat: segs[0].latency_s,
                bw: segs
                    .iter()
                    .map(|g| g.bandwidth_bytes_per_s)
                    .fold(0.0, f64::max),
            };
            let (lat, bw) = segment_factors(&segs[1..], link.lat, link.bw);
            let bw = with_first(bw, segs[0].bandwidth_bytes_per_s / link.bw);
            let cfg = vec![
                format!("smpi/bw-factor:{}", bw.render()),
                format!("smpi/lat-factor:{}", lat.render()),
                "smpi/send-is-detached-thresh:4096".to_string(),
                "network/crosstraffic:0".to_string(),
                "network/TCP-gamma:0".to_string(),
            ];
            let seg_text: Vec<String> = segs
                .iter()
                .map(|g| {
                    format!(
                        "  from {:>7} B: {:.2} us + s / {:.1} GB/s",
                        g.from_bytes,
                        g.latency_s * 1e6,
                        g.bandwidth_bytes_per_s / 1e9
                    )
                })
                .collect();
            header(
                &mut out,
                &format!(
                    "localhost: one {hosts}-core host; MPI processes on it talk through shared memory.\n\
                     Origin: {LOCALHOST_ORIGIN}.\n\
                     One-way time T(s) = L + s / B per segment (the 4096 B break is OpenMPI's eager limit, the\nlater ones are caches running out):\n{}\n\
                     The loopback link carries the smallest-message latency and the best bandwidth (no TCP window); the\n\
                     smpi/*-factor lists below scale them per size range. Host speed is nominal: compute\n\
                     times come from the machine table (mpicast bench machine).\n\
                     Generated by mpicast platform, template localhost, {hosts} cores.",
                    seg_text.join("\n")
                ),
                &cfg,
            );
            single_host(&mut out, "localhost", NOMINAL_SPEED, hosts as u32, link);
        }
        "cluster-gige" | "cluster-ib" | "lan-100m" => {
            let (link, backbone, cores, cfg, text) = match name {
                "cluster-gige" => (
                    Link { bw: 125e6, lat: 15e-6 },
                    Link { bw: 1.25e9, lat: 1e-6 },
                    8,
                    vec![],
                    "cluster-gige: hosts on one Gigabit Ethernet switch (1 Gb/s = 125 MB/s per host link,\n\
                     10 Gb/s backplane). Host-to-host: 15 us + 1 us + 15 us = 31 us of wire latency, before\n\
                     SMPI's factors. No smpi/* factors are set: SimGrid's default SMPI factors were\n\
                     calibrated on a Gigabit Ethernet cluster (griffon, Grid'5000 Nancy), so they apply as is.\n\
                     Origin: nominal Gigabit Ethernet figures; MPI over TCP on GigE shows 25-50 us one-way and\n\
                     about 112 MB/s (OSU latency/bandwidth on commodity switches).",
                ),
                "cluster-ib" => (
                    Link { bw: 12.5e9, lat: 0.5e-6 },
                    Link { bw: 100e9, lat: 0.1e-6 },
                    32,
                    vec![
                        "smpi/bw-factor:0:0.92".to_string(),
                        "smpi/lat-factor:0:1".to_string(),
                        "smpi/send-is-detached-thresh:12288".to_string(),
                        "network/crosstraffic:0".to_string(),
                        "network/TCP-gamma:0".to_string(),
                    ],
                    "cluster-ib: hosts on a 100 Gb/s class switch (InfiniBand EDR: 12.5 GB/s per host link).\n\
                     Host-to-host: 0.5 + 0.1 + 0.5 us = 1.1 us; 92% of the link rate is reachable (about\n\
                     11.5 GB/s), eager messages up to 12 KiB (UCX's default rendezvous threshold order).\n\
                     Origin: nominal EDR figures, typical OSU results of 1-1.5 us and 11-12 GB/s.",
                ),
                _ => (
                    Link { bw: 12.5e6, lat: 40e-6 },
                    Link { bw: 125e6, lat: 5e-6 },
                    1,
                    vec![
                        "smpi/bw-factor:0:0.92".to_string(),
                        "smpi/lat-factor:0:1".to_string(),
                        "network/crosstraffic:1".to_string(),
                    ],
                    "lan-100m: workstations on switched Fast Ethernet (100 Mb/s = 12.5 MB/s per host link,\n\
                     1 Gb/s uplink between switch ports), the network of ChronosMix's case study.\n\
                     Host-to-host: 40 + 5 + 40 us = 85 us; 92% of the wire rate reaches MPI (TCP/IP headers),\n\
                     about 11.5 MB/s. Origin: nominal Fast Ethernet figures; ping-pongs on such LANs show\n\
                     70-120 us one-way and 11-11.7 MB/s.",
                ),
            };
            header(&mut out, &format!("{text}\nHost speed is nominal (compute times come from the machine table).\nGenerated by mpicast platform, template {name}, {hosts} hosts."), &cfg);
            let hs: Vec<HostSpec> = (0..hosts)
                .map(|k| HostSpec {
                    name: padded("node-", k, hosts, ""),
                    speed_flops: NOMINAL_SPEED,
                    cores,
                    order: k,
                    up: link,
                    down: link,
                })
                .collect();
            star_zone(&mut out, name, &hs, Some(backbone), None, "  ");
        }
        "xdsl" => {
            // (name, down B/s, up B/s, line latency s): ADSL, ADSL2+, VDSL2 profiles in turn.
            let profiles = [
                ("adsl", 1.0e6, 0.125e6, 20e-3),
                ("adsl2", 2.5e6, 0.125e6, 15e-3),
                ("vdsl", 6.25e6, 1.25e6, 8e-3),
            ];
            header(
                &mut out,
                &format!(
                    "xdsl: {hosts} peers at home on DSL lines, joined through the Internet (dPerf's \"daisy\n\
                     (xDSL)\" scenario, P2PDC-style peer computing). Lines are asymmetric and cycle through\n\
                     three profiles: ADSL 8 Mb/s down / 1 Mb/s up, 20 ms; ADSL2+ 20 / 1 Mb/s, 15 ms;\n\
                     VDSL2 50 / 10 Mb/s, 8 ms. The Internet core between lines: 10 Gb/s, 10 ms. Peer to\n\
                     peer: up line + core + down line, e.g. ADSL to ADSL 20 + 10 + 20 = 50 ms one-way,\n\
                     limited by the sender's upload. TCP's window (SimGrid's network/TCP-gamma, 4 MiB)\n\
                     bounds a flow to gamma / (2 latency) as on a real line.\n\
                     Origin: nominal consumer DSL figures (sync rates and typical access latencies).\n\
                     Host speed is nominal. Generated by mpicast platform, template xdsl, {hosts} hosts."
                ),
                &["smpi/bw-factor:0:0.9".to_string(), "smpi/lat-factor:0:1".to_string(), "network/crosstraffic:1".to_string()],
            );
            let hs: Vec<HostSpec> = (0..hosts)
                .map(|k| {
                    let (p, down, up, lat) = profiles[k % profiles.len()];
                    HostSpec {
                        name: padded("peer-", k, hosts, &format!(".{p}")),
                        speed_flops: NOMINAL_SPEED,
                        cores: 1,
                        order: k,
                        up: Link { bw: up, lat },
                        down: Link { bw: down, lat },
                    }
                })
                .collect();
            star_zone(
                &mut out,
                "internet",
                &hs,
                Some(Link {
                    bw: 1.25e9,
                    lat: 10e-3,
                }),
                None,
                "  ",
            );
        }
        "grid5000" => grid5000(&mut out, hosts),
        _ => bail!(
            "unknown template {name:?}; valid: {}",
            TEMPLATES.iter().map(|t| t.0).collect::<Vec<_>>().join(", ")
        ),
    }
    out.push_str("</platform>\n");
    Ok(out)
}

/// Adds an entry for sizes above 0 with this factor when the list has none there.
fn with_first(mut f: FactorList, first: f64) -> FactorList {
    if f.entries.first().map(|e| e.0) != Some(0) {
        f.entries.insert(0, (0, vec![first]));
    }
    f
}

/// dPerf Table I: site, cluster, processor, sequential time of the obstacle problem (s).
const G5K: &[(&str, &str, &str, f64)] = &[
    ("toulouse", "pastel", "AMD 2.6 GHz", 27843.0),
    ("lyon", "sagittaire", "AMD 2.4 GHz", 32166.0),
    ("nancy", "grelon", "Intel Xeon 1.6 GHz", 32476.0),
    ("orsay", "gdx", "AMD 2.0/2.4 GHz", 34636.0),
    ("lyon", "capricorne", "AMD 2.0 GHz", 33942.0),
    ("sophia", "helios", "AMD 2.2 GHz", 33178.0),
    ("sophia", "sol", "AMD 2.6 GHz", 29400.0),
];
/// One-way latency from each site to the RENATER core.
const G5K_SITE_LAT: &[(&str, f64)] = &[
    ("toulouse", 4e-3),
    ("lyon", 2e-3),
    ("nancy", 3e-3),
    ("orsay", 2e-3),
    ("sophia", 4.5e-3),
];

fn grid5000(out: &mut String, hosts: usize) {
    // Below 256 peers dPerf used the four clusters Pastel, Sagittaire, Grelon, Gdx; beyond, all.
    let clusters = if hosts < 256 { &G5K[..4] } else { G5K };
    let nc = clusters.len().min(hosts);
    let clusters = &clusters[..nc];
    let fastest = G5K.iter().map(|c| c.3).fold(f64::INFINITY, f64::min);
    let mut table = String::new();
    for c in clusters {
        let _ = writeln!(
            table,
            "  {:<10} {:<11} {:<19} {:>6.0} s  -> {}",
            c.0,
            c.1,
            c.2,
            c.3,
            fmt_speed(4e9 * fastest / c.3)
        );
    }
    header(
        out,
        &format!(
            "grid5000: {hosts} hosts spread evenly over {nc} clusters of Grid'5000 sites, as in dPerf's\n\
             peer-to-peer experiments (equal numbers of nodes per site, one core used per node).\n\
             Host speeds follow dPerf's Table I: speed = 4 Gf x (Pastel's sequential time / the\n\
             cluster's), so ratios between clusters match the measured sequential times\n\
             (dPerf: nodes range from 2.5 to 10 Gflops):\n\
             site       cluster     processor           seq. time  -> speed\n{table}\
             Inside a cluster: Gigabit Ethernet (125 MB/s, 15 us per host link, 10 Gb/s backbone).\n\
             Between sites: each site's router reaches the RENATER core over 10 Gb/s links of\n\
             2-4.5 ms (one-way Lyon-Nancy about 5 ms); a cross-site route is site link + core + site link.\n\
             Origin: dPerf Table I for speeds; nominal Grid'5000 / RENATER figures for the network.\n\
             Generated by mpicast platform, template grid5000, {hosts} hosts."
        ),
        &[],
    );
    out.push_str("  <zone id=\"grid5000\" routing=\"Full\">\n");
    let mut order = 0;
    let mut sites = Vec::new();
    for (i, c) in clusters.iter().enumerate() {
        let count = hosts / nc + usize::from(i < hosts % nc);
        let speed = 4e9 * fastest / c.3;
        let link = Link {
            bw: 125e6,
            lat: 15e-6,
        };
        let zone = format!("{}-{}", c.1, c.0);
        let hs: Vec<HostSpec> = (0..count)
            .map(|_| {
                let h = HostSpec {
                    name: format!(
                        "{}{}",
                        padded("g", order, hosts, "-"),
                        format_args!("{}.{}", c.1, c.0)
                    ),
                    speed_flops: speed,
                    cores: 1,
                    order,
                    up: link,
                    down: link,
                };
                order += 1;
                h
            })
            .collect();
        let router = format!("{zone}-router");
        star_zone(
            out,
            &zone,
            &hs,
            Some(Link {
                bw: 1.25e9,
                lat: 1e-6,
            }),
            Some(&router),
            "    ",
        );
        sites.push((zone, router, c.0));
    }
    for (zone, _, site) in &sites {
        let lat = G5K_SITE_LAT
            .iter()
            .find(|s| s.0 == *site)
            .map(|s| s.1)
            .unwrap_or(3e-3);
        let _ = writeln!(
            out,
            "    <link id=\"{zone}-wan\" bandwidth=\"1.25GBps\" latency=\"{}\"/>",
            fmt_lat(lat)
        );
    }
    for (i, (za, ra, _)) in sites.iter().enumerate() {
        for (zb, rb, _) in sites.iter().skip(i + 1) {
            let _ = writeln!(
                out,
                "    <zoneRoute src=\"{za}\" dst=\"{zb}\" gw_src=\"{ra}\" gw_dst=\"{rb}\"><link_ctn id=\"{za}-wan\"/><link_ctn id=\"{zb}-wan\"/></zoneRoute>"
            );
        }
    }
    out.push_str("  </zone>\n");
}

/// The platform for a measured network: one host with a loopback link when the ping-pong ran on
/// one host, else a star of the given hosts whose host-to-host route has the table's link latency
/// and bandwidth; the table's SMPI settings go into `<config>`.
pub fn measured(table: &NetworkTable, cores: u32) -> String {
    let mut out = String::new();
    let st = &table.smpi;
    let segs: Vec<String> = table
        .segments
        .iter()
        .map(|g| {
            format!(
                "  from {} B: {:.3} us + s / {:.1} MB/s",
                g.from_bytes,
                g.latency_s * 1e6,
                g.bandwidth_bytes_per_s / 1e6
            )
        })
        .collect();
    let comment = format!(
        "Measured network: {}\n\
         Ping-pong of {} sizes on {} ({} ranks), {:.1} s; fitted one-way time T(s) = L + s / B:\n{}\n\
         The route's link carries the size-0 latency and the largest messages' bandwidth; the smpi/* lists in\n\
         <config> give every measured size range its own factors so that SMPI's ping-pong follows\n\
         the measured medians (smpi/os, smpi/or: MPI_Isend/MPI_Irecv post costs). Host speed is\n\
         nominal: compute times come from the machine table.\n\
         Generated by mpicast bench network (double dashes in the command above are shown single:\n\
         XML comments cannot hold them).",
        table.launch.command.join(" "),
        table.pingpong.len(),
        table.launch.host0,
        table.launch.ranks,
        table.duration_s,
        segs.join("\n")
    );
    header(&mut out, &comment, &st.cfg);
    let link = Link {
        bw: st.link_bandwidth_bytes_per_s,
        lat: st.link_latency_s,
    };
    let hosts = distinct_hosts(&table.launch.hosts);
    if hosts.len() < 2 {
        single_host(&mut out, "localhost", NOMINAL_SPEED, cores, link);
    } else {
        let half = Link {
            bw: link.bw,
            lat: link.lat / 2.0,
        };
        let hs: Vec<HostSpec> = hosts
            .iter()
            .enumerate()
            .map(|(k, h)| HostSpec {
                name: h.clone(),
                speed_flops: NOMINAL_SPEED,
                cores,
                order: k,
                up: half,
                down: half,
            })
            .collect();
        star_zone(&mut out, "measured", &hs, None, None, "  ");
    }
    out.push_str("</platform>\n");
    out
}

/// Hosts in first-seen order without repeats.
pub fn distinct_hosts(hosts: &[String]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for h in hosts {
        if !v.contains(h) {
            v.push(h.clone());
        }
    }
    v
}

/// Host ids of a platform file in `mpicast/order` order (declaration order when absent): a
/// small scan of the XML, enough for files written by mpicast.
pub fn host_ids(xml: &str) -> Vec<String> {
    let mut hosts: Vec<(usize, String)> = Vec::new();
    for (i, part) in xml.split("<host ").skip(1).enumerate() {
        let id = part
            .split("id=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or("")
            .to_string();
        let tag_end = part.find("</host>").unwrap_or(part.len());
        let order = part[..tag_end]
            .split("id=\"mpicast/order\" value=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(i);
        hosts.push((order, id));
    }
    hosts.sort_by_key(|h| h.0);
    hosts.into_iter().map(|h| h.1).collect()
}
