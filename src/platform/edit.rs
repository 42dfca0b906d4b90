//! What-if edits of a SimGrid platform file: bandwidths and latencies scaled, hosts added from the
//! platform's template, cores per host changed. The user's file is never written: the edited
//! platform is a temporary copy.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::{unit_factor, Quantity};

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
    if let Some(s) = w.bw_scale {
        xml = scale_attr(&xml, "bandwidth", s, Quantity::Bandwidth).with_context(|| platform.display().to_string())?;
    }
    if let Some(s) = w.lat_scale {
        xml = scale_attr(&xml, "latency", s, Quantity::Latency).with_context(|| platform.display().to_string())?;
    }
    if let Some(c) = w.cores_per_host {
        xml = set_attr(&xml, "core", &c.to_string());
    }
    let mut f = tempfile::Builder::new()
        .prefix("mpicast-platform")
        .suffix(".xml")
        .tempfile()
        .context("cannot create a temporary platform file")?;
    std::io::Write::write_all(&mut f, xml.as_bytes())?;
    Ok(Prepared::Edited(f))
}

/// Multiplies every `name="VALUE UNIT"` attribute by `scale` (a bandwidth scale multiplies
/// bandwidths; a latency scale multiplies latencies). Values are rewritten in base units.
pub fn scale_attr(xml: &str, name: &str, scale: f64, q: Quantity) -> Result<String> {
    if !(scale > 0.0 && scale.is_finite()) {
        bail!("scale {scale} must be positive");
    }
    let pat = format!(" {name}=\"");
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(pos) = rest.find(&pat) {
        let start = pos + pat.len();
        out.push_str(&rest[..start]);
        let end = rest[start..].find('"').map(|e| start + e).context("unterminated attribute")?;
        let value = &rest[start..end];
        let split = value.find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E').unwrap_or(value.len());
        let (num, unit) = value.split_at(split);
        let x: f64 = num.trim().parse().with_context(|| format!("{name}=\"{value}\" is not a number"))?;
        let f = unit_factor(q, unit.trim()).with_context(|| format!("{name}=\"{value}\": unknown unit {unit:?}"))?;
        out.push_str(&format!("{:e}{}", x * f * scale, q.base_unit()));
        rest = &rest[end..];
    }
    out.push_str(rest);
    Ok(out)
}

fn set_attr(xml: &str, name: &str, value: &str) -> String {
    let pat = format!(" {name}=\"");
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(pos) = rest.find(&pat) {
        let start = pos + pat.len();
        out.push_str(&rest[..start]);
        let end = rest[start..].find('"').map(|e| start + e).unwrap_or(rest.len());
        out.push_str(value);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The eager limit a platform file declares (`smpi/send-is-detached-thresh`), if any.
pub fn eager_threshold(platform: &Path) -> Option<u64> {
    let xml = std::fs::read_to_string(platform).ok()?;
    let at = xml.find("smpi/send-is-detached-thresh")?;
    let v = xml[at..].split("value=\"").nth(1)?.split('"').next()?;
    v.trim().parse().ok()
}

/// SimGrid `--cfg` items a platform needs that cannot be set in its file.
pub fn cfg_items(_platform: &Path) -> Vec<String> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_units() {
        let x = r#"<link id="a" bandwidth="125MBps" latency="15us"/><link id="b" bandwidth="1Gbps" latency="1e-3"/>"#;
        let y = scale_attr(x, "bandwidth", 2.0, Quantity::Bandwidth).unwrap();
        assert!(y.contains(r#"bandwidth="2.5e8Bps""#), "{y}");
        assert!(y.contains(r#"bandwidth="2.5e8Bps" latency="1e-3""#), "{y}");
        let z = scale_attr(x, "latency", 10.0, Quantity::Latency).unwrap();
        assert!(z.contains(r#"latency="1.5e-4s""#), "{z}");
        assert!(z.contains(r#"latency="1e-2s""#), "{z}");
        assert!(scale_attr(r#" bandwidth="12furlongs""#, "bandwidth", 2.0, Quantity::Bandwidth).is_err());
        // The checker's units: days and binary prefixes are read, an upper-case K is not.
        let d = scale_attr(r#" latency="1d""#, "latency", 1.0, Quantity::Latency).unwrap();
        assert!(d.contains(r#"latency="8.64e4s""#), "{d}");
        let t = scale_attr(r#" bandwidth="1TiBps""#, "bandwidth", 1.0, Quantity::Bandwidth).unwrap();
        assert!(t.contains(r#"bandwidth="1.099511627776e12Bps""#), "{t}");
        assert!(scale_attr(r#" bandwidth="1KBps""#, "bandwidth", 1.0, Quantity::Bandwidth).is_err());
    }
}
