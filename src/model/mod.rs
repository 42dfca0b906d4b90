//! The versioned artifacts exchanged between stages. Only types in this module are serialised.
//!
//! Every JSON artifact starts with `{"schema": "mpicast/<name>", "version": N, ...}`;
//! [`read_artifact`] checks both before decoding the rest.

pub mod analysis;
pub mod expr;
pub mod hash;
pub mod load;
pub mod machine;
pub mod network;
pub mod ops;
pub mod prediction;
pub mod simjob;
pub mod startup;
pub mod sweep;
pub mod trace;
pub mod validation;

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Implemented by every top-level artifact.
pub trait Artifact: Serialize + DeserializeOwned {
    /// `mpicast/<name>`
    const SCHEMA: &'static str;
    const VERSION: u32;
}

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("{path}: cannot read: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: not JSON: {source}")]
    NotJson { path: String, source: serde_json::Error },
    #[error("{path}: is a {found:?} file, expected {expected:?}")]
    WrongKind { path: String, found: String, expected: &'static str },
    #[error("{path}: expected a {expected:?} file (a JSON object with \"schema\": {expected:?}), found {found}")]
    NotAnArtifact { path: String, found: String, expected: &'static str },
    #[error("{path}: {schema} version {found}, this mpicast reads version {expected}")]
    WrongVersion { path: String, schema: &'static str, found: String, expected: u32 },
    /// `source` carries the line and column where serde_json found the problem.
    #[error("{path}: malformed {schema}: {source}")]
    Malformed { path: String, schema: &'static str, source: serde_json::Error },
}

/// Reads and checks an artifact file: right schema, right version, well-formed body.
pub fn read_artifact<T: Artifact>(path: &Path) -> Result<T, ArtifactError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ArtifactError::Io { path: p.clone(), source })?;
    match std::str::from_utf8(&bytes) {
        Ok(text) => parse_artifact(text, &p),
        // serde_json says where the bad byte is (line and column).
        Err(_) => match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Err(source) => Err(ArtifactError::NotJson { path: p, source }),
            Ok(_) => parse_artifact(&String::from_utf8_lossy(&bytes), &p),
        },
    }
}

/// Parses an artifact from text; `origin` names it in errors.
pub fn parse_artifact<T: Artifact>(text: &str, origin: &str) -> Result<T, ArtifactError> {
    // The usual case, without building the whole document as JSON values first (a replay's
    // statistics at 1,024 ranks): its kind and version, then the artifact itself.
    #[derive(serde::Deserialize)]
    struct Header {
        schema: Option<serde_json::Value>,
        version: Option<serde_json::Value>,
    }
    if let Ok(h) = serde_json::from_str::<Header>(text) {
        let kind = matches!(&h.schema, Some(serde_json::Value::String(s)) if s == T::SCHEMA);
        if kind && h.version.and_then(|v| v.as_u64()) == Some(u64::from(T::VERSION)) {
            if let Ok(t) = serde_json::from_str::<T>(text) {
                return Ok(t);
            }
        }
    }
    // Otherwise what is wrong, said precisely.
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|source| ArtifactError::NotJson { path: origin.to_string(), source })?;
    let not_artifact = |found: &str| ArtifactError::NotAnArtifact {
        path: origin.to_string(),
        found: found.to_string(),
        expected: T::SCHEMA,
    };
    let Some(obj) = value.as_object() else {
        return Err(not_artifact(match &value {
            serde_json::Value::Array(_) => "a JSON array",
            serde_json::Value::String(_) => "a JSON string",
            serde_json::Value::Number(_) => "a JSON number",
            serde_json::Value::Bool(_) => "a JSON boolean",
            _ => "JSON null",
        }));
    };
    let found = match obj.get("schema") {
        None => return Err(not_artifact("an object without a \"schema\" field")),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    if found != T::SCHEMA {
        return Err(ArtifactError::WrongKind { path: origin.to_string(), found, expected: T::SCHEMA });
    }
    let version = obj.get("version");
    if version.and_then(|v| v.as_u64()) != Some(u64::from(T::VERSION)) {
        return Err(ArtifactError::WrongVersion {
            path: origin.to_string(),
            schema: T::SCHEMA,
            found: match version {
                None => "(no version field)".into(),
                Some(v) => v.to_string(),
            },
            expected: T::VERSION,
        });
    }
    match serde_json::from_value(value) {
        Ok(t) => Ok(t),
        // Decode the text again for an error with its line and column.
        Err(e) => Err(ArtifactError::Malformed {
            path: origin.to_string(),
            schema: T::SCHEMA,
            source: serde_json::from_str::<T>(text).err().unwrap_or(e),
        }),
    }
}

/// Writes an artifact atomically (temporary file in the same directory, then rename): a reader,
/// or another mpicast writing the same file, sees the old file or the new one, never a mix.
pub fn write_artifact<T: Artifact>(path: &Path, artifact: &T) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let text = to_json(artifact);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
    // Unique per process and per call: threads of one process may write the same path too.
    let tmp = dir.join(format!(
        ".{}.tmp{}-{}",
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::write(&tmp, text)
        .with_context(|| format!("{}: cannot write", tmp.display()))
        .and_then(|()| std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display())));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// An exclusive lock on a cache directory: a `.NAME.lock` file in it, locked flock-style
/// ([`std::fs::File::lock`]), held from the check of a cache entry to its write so that two
/// mpicast processes do not both build or measure it. Released on drop, and by the kernel when
/// the process dies (no stale locks). On a file system without locks it locks nothing: writes
/// stay atomic, two processes may then both do the work.
pub struct CacheLock {
    _file: Option<std::fs::File>,
}

impl CacheLock {
    /// Locks `dir/.NAME.lock`, waiting (and saying so on stderr) while another process holds it.
    pub fn acquire(dir: &Path, name: &str) -> anyhow::Result<CacheLock> {
        use anyhow::Context;
        std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
        let path = dir.join(format!(".{name}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("{}: cannot open the lock file", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                eprintln!("mpicast: waiting for another mpicast process (lock {})", path.display());
                if file.lock().is_err() {
                    return Ok(CacheLock { _file: None });
                }
            }
            Err(std::fs::TryLockError::Error(_)) => return Ok(CacheLock { _file: None }),
        }
        Ok(CacheLock { _file: Some(file) })
    }
}

/// This host's name (/proc/sys/kernel/hostname), `fallback` when it cannot be read.
pub fn hostname_or(fallback: &str) -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| fallback.to_string())
}

/// `s` as part of a cache file name: characters other than ASCII letters, digits, '-' and '.'
/// become '_'.
pub fn file_name_part(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
        .collect()
}

/// Beside a cached table: `dir/NAME.under-load.EXT`, where a table measured under load goes
/// instead of the host's default.
pub fn under_load_path(path: &Path) -> std::path::PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.under-load.{}", ext.to_string_lossy()),
        None => format!("{stem}.under-load"),
    };
    path.with_file_name(name)
}

/// An error and its causes on one line: `outer: inner: root`, each piece once (contexts often
/// repeat their cause verbatim). How every error reaches the user.
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}

/// Serialises an artifact with its schema and version fields first.
pub fn to_json<T: Artifact>(artifact: &T) -> String {
    let mut body = serde_json::to_value(artifact).expect("artifacts serialise");
    let mut out = serde_json::Map::new();
    out.insert("schema".into(), T::SCHEMA.into());
    out.insert("version".into(), T::VERSION.into());
    if let serde_json::Value::Object(m) = &mut body {
        for (k, v) in std::mem::take(m) {
            if k != "schema" && k != "version" {
                out.insert(k, v);
            }
        }
    }
    let mut s = serde_json::to_string_pretty(&serde_json::Value::Object(out)).expect("JSON values serialise");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_read_back_from_json_are_the_ones_written() {
        // A cached figure (a host-speed factor, a fitted cost) read back must be the figure
        // computed: predictions from a cache and from a fresh measurement then agree to the
        // bit. serde_json reads some numbers one unit in the last place off without its
        // float_roundtrip feature (a factor of 2.2775114648136796 came back 2.27751146481368).
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut values = vec![2.2775114648136796, 0.1 + 0.2, 1e-9 / 3.0];
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            // Spread over 1e-12 .. 1e6, the range of seconds and ns figures.
            let mantissa = (x >> 11) as f64 / (1u64 << 53) as f64;
            values.push((1.0 + mantissa) * 10f64.powi((x % 19) as i32 - 12));
        }
        let text = serde_json::to_string(&values).unwrap();
        let back: Vec<f64> = serde_json::from_str(&text).unwrap();
        let off: Vec<(f64, f64)> = values.iter().zip(&back).filter(|(a, b)| a.to_bits() != b.to_bits()).map(|(a, b)| (*a, *b)).take(5).collect();
        assert!(off.is_empty(), "{off:?}");
    }
}
