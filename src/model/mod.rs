//! The versioned artifacts exchanged between stages. Only types in this module are serialised.
//!
//! Every JSON artifact starts with `{"schema": "mpicast/<name>", "version": N, ...}`;
//! [`read_artifact`] checks both before decoding the rest.

pub mod analysis;
pub mod expr;
pub mod machine;
pub mod network;
pub mod ops;
pub mod simjob;
pub mod trace;

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
    #[error("{path}: {schema} version {found}, this mpicast reads version {expected}")]
    WrongVersion { path: String, schema: &'static str, found: u64, expected: u32 },
    #[error("{path}: malformed {schema}: {source}")]
    Malformed { path: String, schema: &'static str, source: serde_json::Error },
}

/// Reads and checks an artifact file: right schema, right version, well-formed body.
pub fn read_artifact<T: Artifact>(path: &Path) -> Result<T, ArtifactError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ArtifactError::Io { path: p.clone(), source })?;
    parse_artifact(&text, &p)
}

/// Parses an artifact from text; `origin` names it in errors.
pub fn parse_artifact<T: Artifact>(text: &str, origin: &str) -> Result<T, ArtifactError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|source| ArtifactError::NotJson { path: origin.to_string(), source })?;
    let found = value.get("schema").and_then(|v| v.as_str()).unwrap_or("(no schema field)");
    if found != T::SCHEMA {
        return Err(ArtifactError::WrongKind { path: origin.to_string(), found: found.to_string(), expected: T::SCHEMA });
    }
    let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if version != u64::from(T::VERSION) {
        return Err(ArtifactError::WrongVersion {
            path: origin.to_string(),
            schema: T::SCHEMA,
            found: version,
            expected: T::VERSION,
        });
    }
    serde_json::from_value(value).map_err(|source| ArtifactError::Malformed {
        path: origin.to_string(),
        schema: T::SCHEMA,
        source,
    })
}

/// Writes an artifact atomically (temporary file in the same directory, then rename).
pub fn write_artifact<T: Artifact>(path: &Path, artifact: &T) -> anyhow::Result<()> {
    use anyhow::Context;
    let text = to_json(artifact);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&tmp, text).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(())
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
