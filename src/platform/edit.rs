//! What-if edits of a SimGrid platform file: bandwidths and latencies scaled, hosts added from the
//! platform's template, cores per host changed. The user's file is never written: the edited
//! platform is a temporary copy.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::xml::{self, Lines};
use super::{quantity_attrs, read_quantity, xml_escape, Quantity};

/// The platform's share of a what-if (predict's `WhatIf::platform_edits`): links' bandwidths
/// and latencies scaled, hosts from the platform's template, cores per host.
#[derive(Debug, Clone, Copy, Default)]
pub struct Edits {
    pub bw_scale: Option<f64>,
    pub lat_scale: Option<f64>,
    pub hosts: Option<u32>,
    pub cores_per_host: Option<u32>,
}

/// The platform a simulation uses: the user's file, or an edited temporary copy.
pub enum Prepared {
    Original(PathBuf),
    Edited(tempfile::NamedTempFile),
}

impl Prepared {
    pub fn path(&self) -> &Path {
        match self {
            Prepared::Original(p) => p,
            Prepared::Edited(f) => f.path(),
        }
    }
}

pub fn prepare(platform: &Path, w: &Edits) -> Result<Prepared> {
    if w.bw_scale.is_none() && w.lat_scale.is_none() && w.hosts.is_none() && w.cores_per_host.is_none() {
        return Ok(Prepared::Original(platform.to_path_buf()));
    }
    let mut xml = match w.hosts {
        Some(h) => {
            let stem = platform.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            super::template(&stem, h as usize).with_context(|| {
                format!("{}: --hosts needs a platform made from a template (mpicast platform --list)", platform.display())
            })?
        }
        None => std::fs::read_to_string(platform).with_context(|| format!("{}: cannot read", platform.display()))?,
    };
    let at = |(line, msg): (usize, String)| anyhow!("{}:{line}: {msg}", platform.display());
    for (flag, scale, q) in [
        ("--bw-scale", w.bw_scale, Quantity::Bandwidth),
        ("--lat-scale", w.lat_scale, Quantity::Latency),
    ] {
        let Some(s) = scale else { continue };
        if !(s > 0.0 && s.is_finite()) {
            bail!("{flag} {s}: the scale must be a positive number");
        }
        xml = scale_quantities(&xml, q, s).map_err(at)?;
    }
    if let Some(c) = w.cores_per_host {
        xml = set_cores(&xml, c).map_err(at)?;
    }
    let mut f = tempfile::Builder::new()
        .prefix("mpicast-platform")
        .suffix(".xml")
        .tempfile()
        .context("cannot create a temporary platform file")?;
    std::io::Write::write_all(&mut f, xml.as_bytes())?;
    Ok(Prepared::Edited(f))
}

/// Multiplies every bandwidth (`q` Bandwidth) or latency (Latency) of the platform's network by
/// `scale`: links, backbones, clusters' and cabinets' links, peers' lines (disks are not the
/// network). Values are read as the checker reads them and rewritten in base units; the rest of
/// the file stays byte for byte. An error is (line, what is wrong).
pub fn scale_quantities(
    xml: &str,
    q: Quantity,
    scale: f64,
) -> std::result::Result<String, (usize, String)> {
    let readable = xml::readable(xml);
    let doc = xml::parse(&readable)?;
    let lines = Lines::new(xml);
    let mut edits = Vec::new();
    for e in doc.descendants().filter(|n| n.is_element() && !n.has_tag_name("disk")) {
        let elem = e.tag_name().name();
        for &(name, _) in quantity_attrs(elem).iter().filter(|(_, aq)| *aq == q) {
            let Some(a) = e.attributes().find(|a| a.name() == name) else {
                continue;
            };
            if a.value().trim().is_empty() {
                continue;
            }
            let line = lines.line(a.range().start);
            let parts = read_quantity(q, a.value(), elem, name).map_err(|m| (line, m))?;
            let mut value = String::new();
            let mut from = 0;
            for (r, base) in parts {
                value.push_str(&a.value()[from..r.start]);
                value.push_str(&format!("{:e}{}", base * scale, q.base_unit()));
                from = r.end;
            }
            value.push_str(&a.value()[from..]);
            edits.push((value_range(xml, &a, line, elem)?, xml_escape(&value)));
        }
    }
    Ok(xml::splice(xml, edits))
}

/// Sets every host's and cluster's `core` attribute to `cores`, adding it where absent (one core).
pub fn set_cores(xml: &str, cores: u32) -> std::result::Result<String, (usize, String)> {
    let readable = xml::readable(xml);
    let doc = xml::parse(&readable)?;
    let lines = Lines::new(xml);
    let mut edits = Vec::new();
    for e in doc.descendants().filter(|n| n.has_tag_name("host") || n.has_tag_name("cluster")) {
        let elem = e.tag_name().name();
        match e.attributes().find(|a| a.name() == "core") {
            Some(a) => {
                let line = lines.line(a.range().start);
                edits.push((value_range(xml, &a, line, elem)?, cores.to_string()));
            }
            None => {
                let end = e
                    .attributes()
                    .map(|a| a.range().end)
                    .max()
                    .unwrap_or(e.range().start + 1 + elem.len());
                edits.push((end..end, format!(" core=\"{cores}\"")));
            }
        }
    }
    Ok(xml::splice(xml, edits))
}

fn value_range(
    xml: &str,
    a: &roxmltree::Attribute,
    line: usize,
    elem: &str,
) -> std::result::Result<std::ops::Range<usize>, (usize, String)> {
    xml::value_range(xml, a)
        .ok_or_else(|| (line, format!("<{elem} {}>: the value's place in the file is not known", a.name())))
}

/// The eager limit a platform file declares (`smpi/send-is-detached-thresh`), if any.
pub fn eager_threshold(platform: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(platform).ok()?;
    let readable = xml::readable(&text);
    let doc = xml::parse(&readable).ok()?;
    let prop = doc.descendants().find(|n| {
        n.has_tag_name("prop")
            && n.parent_element().is_some_and(|c| c.has_tag_name("config"))
            && n.attribute("id") == Some("smpi/send-is-detached-thresh")
    })?;
    prop.attribute("value")?.trim().parse().ok()
}

/// SimGrid `--cfg` items a platform needs that cannot be set in its file.
pub fn cfg_items(_platform: &Path) -> Vec<String> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-link platform whose link has these attributes.
    fn one_link(link_attrs: &str) -> String {
        format!(
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\n<host id=\"a\" speed=\"1Gf\"/><host id=\"b\" speed=\"1Gf\"/>\n<link id=\"l\" {link_attrs}/>\n<route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route></zone></platform>\n"
        )
    }

    fn value(xml: &str, elem: &str, attr: &str) -> Vec<String> {
        let doc = xml::parse(xml).unwrap();
        doc.descendants()
            .filter(|n| n.has_tag_name(elem))
            .filter_map(|n| n.attribute(attr).map(str::to_string))
            .collect()
    }

    /// `xml` with every value of `attr` replaced by `*`, through the parser's ranges.
    fn masked(xml: &str, attr: &str) -> String {
        let doc = xml::parse(xml).unwrap();
        let edits = doc
            .descendants()
            .flat_map(|n| n.attributes())
            .filter(|a| a.name() == attr)
            .map(|a| (xml::value_range(xml, &a).unwrap(), "*".to_string()))
            .collect();
        xml::splice(xml, edits)
    }

    #[test]
    fn scales_units() {
        let x = one_link(r#"bandwidth="125MBps" latency="15us""#);
        let y = scale_quantities(&x, Quantity::Bandwidth, 2.0).unwrap();
        assert!(y.contains(r#"bandwidth="2.5e8Bps" latency="15us""#), "{y}");
        let z = scale_quantities(&one_link(r#"bandwidth="1Gbps" latency="1e-3""#), Quantity::Latency, 10.0).unwrap();
        assert!(z.contains(r#"bandwidth="1Gbps" latency="1e-2s""#), "{z}");
        let z = scale_quantities(&x, Quantity::Latency, 10.0).unwrap();
        assert!(z.contains(r#"latency="1.5e-4s""#), "{z}");
        let (line, msg) = scale_quantities(&one_link(r#"bandwidth="12furlongs""#), Quantity::Bandwidth, 2.0).unwrap_err();
        assert_eq!(line, 4);
        assert!(msg.contains("\"12furlongs\" is not a bandwidth"), "{msg}");
        // The checker's units: days and binary prefixes are read, an upper-case K is not.
        let d = scale_quantities(&one_link(r#"bandwidth="1GBps" latency="1d""#), Quantity::Latency, 1.0).unwrap();
        assert_eq!(value(&d, "link", "latency"), ["8.64e4s"]);
        let t = scale_quantities(&one_link(r#"bandwidth="1TiBps""#), Quantity::Bandwidth, 1.0).unwrap();
        assert_eq!(value(&t, "link", "bandwidth"), ["1.099511627776e12Bps"]);
        assert!(scale_quantities(&one_link(r#"bandwidth="1KBps""#), Quantity::Bandwidth, 1.0).is_err());
        // Lists keep their separators.
        let l = scale_quantities(&one_link(r#"bandwidth="1MBps;2MBps""#), Quantity::Bandwidth, 2.0).unwrap();
        assert_eq!(value(&l, "link", "bandwidth"), ["2e6Bps;4e6Bps"]);
    }

    /// `--bw-scale` and `--lat-scale` read exactly what the checker accepts.
    #[test]
    fn edits_accept_what_the_checker_accepts() {
        let bandwidths = [
            "125MBps", "1Gbps", "1TiBps", "1e9", "1.5e3kBps", "10 MBps", "1KBps", "12furlongs", "-1Bps",
            "0Bps", "1GBps;2GBps", "1MBps,", "Bps", "1gigabyte",
        ];
        let latencies = [
            "50us", "1d", "2w", "1h", "1e-3", "0s", "0", "1.5ms", "-1s", "1 s", "10furlongs", "us", "1S",
        ];
        for (q, values) in [(Quantity::Bandwidth, &bandwidths[..]), (Quantity::Latency, &latencies[..])] {
            for v in values {
                let x = match q {
                    Quantity::Latency => one_link(&format!("bandwidth=\"1GBps\" latency=\"{v}\"")),
                    _ => one_link(&format!("bandwidth=\"{v}\" latency=\"1us\"")),
                };
                let checked = super::super::check_platform_text(&x);
                let scaled = scale_quantities(&x, q, 3.0);
                assert_eq!(checked.is_ok(), scaled.is_ok(), "{q:?} {v:?}: checker {:?}, edit {:?}", checked.err(), scaled.err());
                if let Ok(s) = scaled {
                    super::super::check_platform_text(&s).unwrap_or_else(|e| panic!("{v:?} scaled: {e:?}\n{s}"));
                }
            }
        }
    }

    /// SimGrid reads the edited copy: only the edited values differ from the file, byte for byte
    /// (comments, `--` in them included, quotes, spacing, line ends and the DOCTYPE stay as written).
    #[test]
    fn edits_change_only_the_values() {
        let x = "<?xml version='1.0'?>\r\n<!DOCTYPE platform\r\n  SYSTEM 'https://simgrid.org/simgrid.dtd'>\r\n\
                 <!-- by hand -- <link bandwidth=\"1GBps\" latency=\"1ms\"/> and core=\"9\" stay as written -->\r\n\
                 <platform version=\"4.1\">\r\n  <zone  id='w'   routing=\"Full\" >\r\n\
                 \x20   <host id=\"a\" speed=\"1Gf\"/><host id=\"b\" speed=\"1Gf\" core = '2' />\r\n\
                 \x20   <link id=\"l\" latency=\"10ms\"\r\n          bandwidth = '&#49;25MBps' />\r\n\
                 \x20   <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\r\n  </zone>\r\n</platform>\r\n";
        super::super::check_platform_text(x).unwrap();
        let bw = scale_quantities(x, Quantity::Bandwidth, 2.0).unwrap();
        assert_eq!(bw, x.replace("'&#49;25MBps'", "'2.5e8Bps'"));
        let lat = scale_quantities(x, Quantity::Latency, 2.0).unwrap();
        assert_eq!(lat, x.replace("\"10ms\"\r", "\"2e-2s\"\r"));
        let cores = set_cores(x, 4).unwrap();
        assert_eq!(
            cores,
            x.replace("speed=\"1Gf\"/>", "speed=\"1Gf\" core=\"4\"/>").replace("core = '2'", "core = '4'")
        );
        for edited in [&bw, &lat, &cores] {
            super::super::check_platform_text(edited).unwrap();
        }
    }

    #[test]
    fn templates_scale_and_stay_valid() {
        for (name, _) in super::super::TEMPLATES {
            let x = super::super::template(name, 5).unwrap();
            for (q, attr) in [(Quantity::Bandwidth, "bandwidth"), (Quantity::Latency, "latency")] {
                let y = scale_quantities(&x, q, 0.5).unwrap();
                assert_ne!(x, y, "{name}");
                assert_eq!(masked(&x, attr), masked(&y, attr), "{name}: only {q:?} values change");
                super::super::check_platform_text(&y).unwrap_or_else(|e| panic!("{name} {q:?}: {e:?}"));
                assert_eq!(super::super::host_ids(&x), super::super::host_ids(&y));
            }
            let c = set_cores(&x, 3).unwrap();
            let hosts = value(&c, "host", "core");
            assert!(!hosts.is_empty() && hosts.iter().all(|c| c == "3"), "{name}: {hosts:?}");
            super::super::check_platform_text(&c).unwrap_or_else(|e| panic!("{name} cores: {e:?}"));
        }
    }

    #[test]
    fn cluster_links_scale_too() {
        let x = "<platform version=\"4.1\"><cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"125MBps\" lat=\"50us\" bb_bw=\"1GBps\" bb_lat=\"5us\"/>\
                 <zone id=\"z\" routing=\"None\"><disk read_bw=\"100MBps\" write_bw=\"80MBps\"/></zone></platform>";
        let y = scale_quantities(x, Quantity::Bandwidth, 2.0).unwrap();
        assert_eq!(value(&y, "cluster", "bw"), ["2.5e8Bps"]);
        assert_eq!(value(&y, "cluster", "bb_bw"), ["2e9Bps"]);
        assert_eq!(value(&y, "disk", "read_bw"), ["100MBps"], "disks are not the network");
        let c = set_cores(x, 8).unwrap();
        assert_eq!(value(&c, "cluster", "core"), ["8"]);
    }

    #[test]
    fn eager_threshold_from_config() {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), super::super::template("localhost", 2).unwrap()).unwrap();
        assert_eq!(eager_threshold(f.path()), Some(4096));
        std::fs::write(f.path(), super::super::template("cluster-gige", 2).unwrap()).unwrap();
        assert_eq!(eager_threshold(f.path()), None);
    }
}
