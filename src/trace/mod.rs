//! Per-rank trace files (traces/FORMAT.md): parsing one line, a lazy reader that streams a rank's
//! actions with loops unfolded (memory bounded by the largest loop body, not the trace length), a
//! writer per rank, directory discovery and validation, and the export to SimGrid's
//! time-independent format (`smpi`).

pub mod fold;
pub mod pack;
pub mod set;
pub mod smpi;

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::model::trace::{Compute, Counts, Peer, RankList, Tag, TraceAction, COMM_WORLD};

/// The first word of a trace file's header line.
pub const FORMAT_NAME: &str = "mpicast-trace";
/// The format version this mpicast reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// A problem at one line of one trace file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}: {msg}")]
pub struct TraceError {
    pub file: String,
    pub line: u64,
    pub msg: String,
}

/// The header line: `mpicast-trace 1 rank R size N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub rank: u32,
    pub size: u32,
}

/// The file holding rank `rank`'s trace in `dir`.
pub fn rank_file(dir: &Path, rank: u32) -> PathBuf {
    dir.join(format!("rank-{rank}.trace"))
}

/// Rank files opened for reading, per directory (see [`rank_file_reads`]).
static RANK_FILE_READS: std::sync::Mutex<std::collections::BTreeMap<PathBuf, usize>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Counts one opening of the rank file `path` for reading.
pub fn note_rank_file_read(path: &Path) {
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut m = RANK_FILE_READS.lock().unwrap_or_else(|e| e.into_inner());
    *m.entry(dir).or_insert(0) += 1;
}

/// How many times this process has opened a rank file of `dir` for reading (each
/// [`TraceReader`] and each whole-file read counts once): a test's measure of how often a
/// prediction or a sweep reads its traces.
pub fn rank_file_reads(dir: &Path) -> usize {
    let m = RANK_FILE_READS.lock().unwrap_or_else(|e| e.into_inner());
    m.get(dir).copied().unwrap_or(0)
}

/// One parsed line: an action, a loop start or end, or nothing (blank, comment).
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Action(TraceAction),
    Loop(u64),
    End,
}

// ---- parsing ----------------------------------------------------------------------------------

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.parse::<T>()
        .map_err(|_| format!("{what} {s:?} is not a valid number"))
}

fn seconds(s: &str, what: &str) -> Result<f64, String> {
    let v: f64 = num(s, what)?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{what} {s:?} must be a finite number >= 0"));
    }
    Ok(v)
}

fn peer(s: &str) -> Result<Peer, String> {
    if s == "any" {
        Ok(Peer::Any)
    } else {
        Ok(Peer::Rank(num(s, "peer rank")?))
    }
}

fn tag_sel(s: &str) -> Result<Tag, String> {
    if s == "any" {
        Ok(Tag::Any)
    } else {
        Ok(Tag::Value(num(s, "tag")?))
    }
}

/// Count and rank lists hold one entry per rank of a communicator: at most this many.
const MAX_LIST_LEN: usize = 1 << 24;

/// `1024x3,2048` -> [1024, 1024, 1024, 2048]
pub fn parse_counts(s: &str) -> Result<Counts, String> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('x') {
            Some((v, n)) => {
                let v: u64 = num(v, "count")?;
                let n: usize = num(n, "repetition")?;
                if n > MAX_LIST_LEN - out.len().min(MAX_LIST_LEN) {
                    return Err(format!("count list longer than {MAX_LIST_LEN} entries"));
                }
                out.extend(std::iter::repeat(v).take(n));
            }
            None => out.push(num(part, "count")?),
        }
        if out.len() > MAX_LIST_LEN {
            return Err(format!("count list longer than {MAX_LIST_LEN} entries"));
        }
    }
    Ok(out)
}

/// `0-3,8,10` -> [0, 1, 2, 3, 8, 10]
/// A rank list: ranks and runs `a-b` (counting down where b < a), kept as runs.
fn parse_ranks(s: &str) -> Result<RankList, String> {
    let mut out = RankList::default();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = num(a, "rank")?;
                let b: u32 = num(b, "rank")?;
                if a.abs_diff(b) as usize >= MAX_LIST_LEN - out.len().min(MAX_LIST_LEN) {
                    return Err(format!("bad rank range {part:?}"));
                }
                out.push_run(a, b);
            }
            None => out.push(num(part, "rank")?),
        }
        if out.len() > MAX_LIST_LEN {
            return Err(format!("rank list longer than {MAX_LIST_LEN} entries"));
        }
    }
    Ok(out)
}

/// Splits `key=value` options off the positional words.
struct Words<'a> {
    op: &'a str,
    pos: Vec<&'a str>,
    opts: Vec<(&'a str, &'a str)>,
}

impl<'a> Words<'a> {
    fn opt(&self, key: &str) -> Option<&'a str> {
        self.opts.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
    fn check(&self, min: usize, max: usize, keys: &[&str], usage: &str) -> Result<(), String> {
        if self.pos.len() < min || self.pos.len() > max {
            return Err(format!("{}: expected `{usage}`", self.op));
        }
        for (k, _) in &self.opts {
            if !keys.contains(k) {
                return Err(format!(
                    "{}: unknown option {k:?} (valid: {})",
                    self.op,
                    keys.join(", ")
                ));
            }
        }
        Ok(())
    }
    fn comm(&self) -> Result<u32, String> {
        self.opt("comm")
            .map(|c| num(c, "communicator"))
            .unwrap_or(Ok(COMM_WORLD))
    }
    fn root(&self) -> Result<u32, String> {
        self.opt("root").map(|c| num(c, "root")).unwrap_or(Ok(0))
    }
    fn tag(&self, key: &str) -> Result<i32, String> {
        self.opt(key).map(|c| num(c, "tag")).unwrap_or(Ok(0))
    }
    fn tag_sel(&self, key: &str) -> Result<Tag, String> {
        self.opt(key).map(tag_sel).unwrap_or(Ok(Tag::Value(0)))
    }
    fn counts(&self, key: &str) -> Result<Counts, String> {
        match self.opt(key) {
            Some(c) => parse_counts(c),
            None => Err(format!("{}: missing {key}=", self.op)),
        }
    }
}

/// Parses one line of a trace body. Blank lines and `#` comments give `None`.
pub fn parse_line(text: &str) -> Result<Option<Line>, String> {
    let text = text.split('#').next().unwrap_or("");
    let mut it = text.split_whitespace();
    let Some(op) = it.next() else { return Ok(None) };
    let mut w = Words {
        op,
        pos: Vec::new(),
        opts: Vec::new(),
    };
    for word in it {
        match word.split_once('=') {
            Some((k, v)) => w.opts.push((k, v)),
            None => w.pos.push(word),
        }
    }
    let p = &w.pos;
    const P2P: &[&str] = &["tag", "comm"];
    let a = match op {
        "compute" => {
            if p.first() == Some(&"blocks") {
                w.check(1, usize::MAX, &["time"], "compute blocks ID xCOUNT ... [time=S]")?;
                let mut blocks = Vec::new();
                for b in &p[1..] {
                    let (id, n) = b.split_once('x').ok_or_else(|| format!("compute blocks: {b:?} is not ID xCOUNT"))?;
                    blocks.push((num(id, "block id")?, num(n, "block count")?));
                }
                match w.opt("time") {
                    Some(t) => TraceAction::Compute {
                        compute: Compute::TimedBlocks { blocks, seconds: seconds(t, "time")? },
                    },
                    None if blocks.is_empty() => {
                        return Err("compute blocks: expected `compute blocks ID xCOUNT ... [time=S]`".into())
                    }
                    None => TraceAction::Compute { compute: Compute::Blocks(blocks) },
                }
            } else if let Some(f) = w.opt("flops") {
                w.check(0, 0, &["flops"], "compute flops=F")?;
                TraceAction::Compute { compute: Compute::Flops(seconds(f, "flops")?) }
            } else {
                w.check(1, 1, &[], "compute SECONDS")?;
                TraceAction::Compute { compute: Compute::Seconds(seconds(p[0], "seconds")?) }
            }
        }
        "comm" => {
            w.check(2, 2, &[], "comm ID RANKS")?;
            let id: u32 = num(p[0], "communicator")?;
            if id == COMM_WORLD {
                return Err("comm: communicator 0 is the world and cannot be redefined".into());
            }
            let ranks = parse_ranks(p[1])?;
            if ranks.is_empty() {
                return Err(format!("comm: {:?} names no rank (expected e.g. 0-3,8)", p[1]));
            }
            TraceAction::CommDef { id, ranks }
        }
        "send" => {
            w.check(2, 2, &["tag", "comm", "buffered"], "send TO BYTES [tag=T] [comm=C] [buffered=1]")?;
            let buffered = match w.opt("buffered") {
                None | Some("0") => false,
                Some("1") => true,
                Some(b) => return Err(format!("send: buffered={b:?} (expected 0 or 1)")),
            };
            TraceAction::Send { to: num(p[0], "destination")?, bytes: num(p[1], "bytes")?, tag: w.tag("tag")?, comm: w.comm()?, buffered }
        }
        "recv" => {
            w.check(1, 2, P2P, "recv FROM|any [BYTES] [tag=T|any] [comm=C]")?;
            TraceAction::Recv {
                from: peer(p[0])?,
                bytes: p.get(1).map(|b| num(b, "bytes")).transpose()?,
                tag: w.tag_sel("tag")?,
                comm: w.comm()?,
            }
        }
        "arecv" => {
            w.check(1, 2, P2P, "arecv FROM [BYTES] [tag=T|any] [comm=C]")?;
            TraceAction::Arecv {
                from: num(p[0], "source")?,
                bytes: p.get(1).map(|b| num(b, "bytes")).transpose()?,
                tag: w.tag_sel("tag")?,
                comm: w.comm()?,
            }
        }
        "isend" => {
            w.check(3, 3, P2P, "isend REQ TO BYTES [tag=T] [comm=C]")?;
            TraceAction::Isend {
                req: num(p[0], "request")?,
                to: num(p[1], "destination")?,
                bytes: num(p[2], "bytes")?,
                tag: w.tag("tag")?,
                comm: w.comm()?,
            }
        }
        "irecv" => {
            w.check(2, 3, P2P, "irecv REQ FROM|any [BYTES] [tag=T|any] [comm=C]")?;
            TraceAction::Irecv {
                req: num(p[0], "request")?,
                from: peer(p[1])?,
                bytes: p.get(2).map(|b| num(b, "bytes")).transpose()?,
                tag: w.tag_sel("tag")?,
                comm: w.comm()?,
            }
        }
        "wait" => {
            w.check(1, 1, &[], "wait REQ")?;
            TraceAction::Wait { req: num(p[0], "request")? }
        }
        "waitall" => {
            w.check(0, usize::MAX, &[], "waitall [REQ ...]")?;
            TraceAction::Waitall { reqs: p.iter().map(|r| num(r, "request")).collect::<Result<_, _>>()? }
        }
        "test" => {
            w.check(1, 1, &[], "test REQ")?;
            TraceAction::Test { req: num(p[0], "request")? }
        }
        "cancel" => {
            w.check(1, 1, &[], "cancel REQ")?;
            TraceAction::Cancel { req: num(p[0], "request")? }
        }
        "sendrecv" => {
            w.check(3, 4, &["stag", "rtag", "comm"], "sendrecv TO SBYTES FROM|any [RBYTES] [stag=T] [rtag=T|any] [comm=C]")?;
            TraceAction::Sendrecv {
                to: num(p[0], "destination")?,
                send_bytes: num(p[1], "bytes")?,
                send_tag: w.tag("stag")?,
                from: peer(p[2])?,
                recv_bytes: p.get(3).map(|b| num(b, "bytes")).transpose()?,
                recv_tag: w.tag_sel("rtag")?,
                comm: w.comm()?,
            }
        }
        "barrier" => {
            w.check(0, 0, &["comm"], "barrier [comm=C]")?;
            TraceAction::Barrier { comm: w.comm()? }
        }
        "bcast" | "reduce" | "gather" | "scatter" => {
            w.check(1, 1, &["root", "comm"], &format!("{op} BYTES [root=R] [comm=C]"))?;
            let (bytes, root, comm) = (num(p[0], "bytes")?, w.root()?, w.comm()?);
            match op {
                "bcast" => TraceAction::Bcast { bytes, root, comm },
                "reduce" => TraceAction::Reduce { bytes, root, comm },
                "gather" => TraceAction::Gather { bytes, root, comm },
                _ => TraceAction::Scatter { bytes, root, comm },
            }
        }
        "allreduce" | "allgather" | "alltoall" | "scan" => {
            w.check(1, 1, &["comm"], &format!("{op} BYTES [comm=C]"))?;
            let (bytes, comm) = (num(p[0], "bytes")?, w.comm()?);
            match op {
                "allreduce" => TraceAction::Allreduce { bytes, comm },
                "allgather" => TraceAction::Allgather { bytes, comm },
                "alltoall" => TraceAction::Alltoall { bytes, comm },
                _ => TraceAction::Scan { bytes, comm },
            }
        }
        "ctor" => {
            w.check(2, 2, &[], "ctor split|dup MEMBERS")?;
            let kind = crate::model::trace::CtorKind::parse(p[0])
                .ok_or_else(|| format!("ctor: {:?} is no constructor (expected split or dup)", p[0]))?;
            TraceAction::Ctor { kind, members: num(p[1], "members")? }
        }
        "gatherv" | "scatterv" => {
            w.check(0, 0, &["counts", "root", "comm"], &format!("{op} counts=B,B,... [root=R] [comm=C]"))?;
            let (counts, root, comm) = (w.counts("counts")?, w.root()?, w.comm()?);
            if op == "gatherv" {
                TraceAction::Gatherv { counts, root, comm }
            } else {
                TraceAction::Scatterv { counts, root, comm }
            }
        }
        "allgatherv" | "reduce_scatter" => {
            w.check(0, 0, &["counts", "comm"], &format!("{op} counts=B,B,... [comm=C]"))?;
            let (counts, comm) = (w.counts("counts")?, w.comm()?);
            if op == "allgatherv" {
                TraceAction::Allgatherv { counts, comm }
            } else {
                TraceAction::ReduceScatter { counts, comm }
            }
        }
        "alltoallv" => {
            w.check(0, 0, &["send", "recv", "comm"], "alltoallv send=B,B,... recv=B,B,... [comm=C]")?;
            TraceAction::Alltoallv { send: w.counts("send")?, recv: w.counts("recv")?, comm: w.comm()? }
        }
        "loop" => {
            w.check(1, 1, &[], "loop COUNT")?;
            return Ok(Some(Line::Loop(num(p[0], "loop count")?)));
        }
        "end" => {
            w.check(0, 0, &[], "end")?;
            return Ok(Some(Line::End));
        }
        _ => {
            return Err(format!(
                "unknown action {op:?} (valid: compute, comm, send, recv, isend, irecv, wait, waitall, test, sendrecv, \
                 barrier, bcast, reduce, allreduce, gather, gatherv, scatter, scatterv, allgather, allgatherv, \
                 alltoall, alltoallv, reduce_scatter, scan, loop, end)"
            ))
        }
    };
    Ok(Some(Line::Action(a)))
}

fn parse_header(text: &str) -> Result<Header, String> {
    let w: Vec<&str> = text
        .split('#')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let bad = || {
        format!(
            "expected the header `{FORMAT_NAME} {FORMAT_VERSION} rank R size N`, found {text:?}"
        )
    };
    if w.first() != Some(&FORMAT_NAME) {
        return Err(bad());
    }
    let version: u32 = w.get(1).and_then(|v| v.parse().ok()).ok_or_else(bad)?;
    if version != FORMAT_VERSION {
        return Err(format!(
            "{FORMAT_NAME} version {version}, this mpicast reads version {FORMAT_VERSION}"
        ));
    }
    if w.len() != 6 || w[2] != "rank" || w[4] != "size" {
        return Err(bad());
    }
    let rank: u32 = w[3].parse().map_err(|_| bad())?;
    let size: u32 = w[5].parse().map_err(|_| bad())?;
    if rank >= size {
        return Err(format!("rank {rank} is not below size {size}"));
    }
    Ok(Header { rank, size })
}

/// Formats an action as one trace line (the inverse of [`parse_line`]).
pub fn format_action(a: &TraceAction) -> String {
    fn comm(c: u32) -> String {
        if c == COMM_WORLD {
            String::new()
        } else {
            format!(" comm={c}")
        }
    }
    fn tag(key: &str, t: i32) -> String {
        if t == 0 {
            String::new()
        } else {
            format!(" {key}={t}")
        }
    }
    fn tsel(key: &str, t: Tag) -> String {
        match t {
            Tag::Value(v) => tag(key, v),
            Tag::Any => format!(" {key}=any"),
        }
    }
    fn peer(p: Peer) -> String {
        match p {
            Peer::Rank(r) => r.to_string(),
            Peer::Any => "any".into(),
        }
    }
    fn opt(b: Option<u64>) -> String {
        b.map(|b| format!(" {b}")).unwrap_or_default()
    }
    fn counts(c: &[u64]) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < c.len() {
            let mut j = i;
            while j < c.len() && c[j] == c[i] {
                j += 1;
            }
            parts.push(if j - i > 1 {
                format!("{}x{}", c[i], j - i)
            } else {
                c[i].to_string()
            });
            i = j;
        }
        parts.join(",")
    }
    fn root(r: u32) -> String {
        format!(" root={r}")
    }
    match a {
        TraceAction::Compute {
            compute: Compute::Seconds(s),
        } => format!("compute {s:e}"),
        TraceAction::Compute {
            compute: Compute::Flops(f),
        } => format!("compute flops={f:e}"),
        TraceAction::Compute {
            compute: Compute::Blocks(b),
        } => {
            let mut s = "compute blocks".to_string();
            for (id, n) in b {
                s.push_str(&format!(" {id}x{n}"));
            }
            s
        }
        TraceAction::Compute {
            compute: Compute::TimedBlocks { blocks, seconds },
        } => {
            let mut s = "compute blocks".to_string();
            for (id, n) in blocks {
                s.push_str(&format!(" {id}x{n}"));
            }
            s.push_str(&format!(" time={seconds:e}"));
            s
        }
        TraceAction::CommDef { id, ranks } => {
            // Runs of consecutive ranks as `a-b`: a communicator of every rank is one word.
            let parts: Vec<String> = ranks
                .runs()
                .iter()
                .map(|&(a, b)| if b != a { format!("{a}-{b}") } else { a.to_string() })
                .collect();
            format!("comm {id} {}", parts.join(","))
        }
        TraceAction::Send {
            to,
            bytes,
            tag: t,
            comm: c,
            buffered,
        } => format!("send {to} {bytes}{}{}{}", tag("tag", *t), comm(*c), if *buffered { " buffered=1" } else { "" }),
        TraceAction::Recv {
            from,
            bytes,
            tag: t,
            comm: c,
        } => {
            format!(
                "recv {}{}{}{}",
                peer(*from),
                opt(*bytes),
                tsel("tag", *t),
                comm(*c)
            )
        }
        TraceAction::Arecv { from, bytes, tag: t, comm: c } => {
            format!("arecv {from}{}{}{}", opt(*bytes), tsel("tag", *t), comm(*c))
        }
        TraceAction::Isend {
            req,
            to,
            bytes,
            tag: t,
            comm: c,
        } => {
            format!("isend {req} {to} {bytes}{}{}", tag("tag", *t), comm(*c))
        }
        TraceAction::Irecv {
            req,
            from,
            bytes,
            tag: t,
            comm: c,
        } => {
            format!(
                "irecv {req} {}{}{}{}",
                peer(*from),
                opt(*bytes),
                tsel("tag", *t),
                comm(*c)
            )
        }
        TraceAction::Wait { req } => format!("wait {req}"),
        TraceAction::Waitall { reqs } => {
            let mut s = "waitall".to_string();
            for r in reqs {
                s.push_str(&format!(" {r}"));
            }
            s
        }
        TraceAction::Test { req } => format!("test {req}"),
        TraceAction::Cancel { req } => format!("cancel {req}"),
        TraceAction::Sendrecv {
            to,
            send_bytes,
            send_tag,
            from,
            recv_bytes,
            recv_tag,
            comm: c,
        } => format!(
            "sendrecv {to} {send_bytes} {}{}{}{}{}",
            peer(*from),
            opt(*recv_bytes),
            tag("stag", *send_tag),
            tsel("rtag", *recv_tag),
            comm(*c)
        ),
        TraceAction::Barrier { comm: c } => format!("barrier{}", comm(*c)),
        TraceAction::Bcast {
            bytes,
            root: r,
            comm: c,
        } => format!("bcast {bytes}{}{}", root(*r), comm(*c)),
        TraceAction::Reduce {
            bytes,
            root: r,
            comm: c,
        } => format!("reduce {bytes}{}{}", root(*r), comm(*c)),
        TraceAction::Gather {
            bytes,
            root: r,
            comm: c,
        } => format!("gather {bytes}{}{}", root(*r), comm(*c)),
        TraceAction::Scatter {
            bytes,
            root: r,
            comm: c,
        } => format!("scatter {bytes}{}{}", root(*r), comm(*c)),
        TraceAction::Allreduce { bytes, comm: c } => format!("allreduce {bytes}{}", comm(*c)),
        TraceAction::Allgather { bytes, comm: c } => format!("allgather {bytes}{}", comm(*c)),
        TraceAction::Alltoall { bytes, comm: c } => format!("alltoall {bytes}{}", comm(*c)),
        TraceAction::Scan { bytes, comm: c } => format!("scan {bytes}{}", comm(*c)),
        TraceAction::Ctor { kind, members } => format!("ctor {} {members}", kind.as_str()),
        TraceAction::Gatherv {
            counts: n,
            root: r,
            comm: c,
        } => format!("gatherv counts={}{}{}", counts(n), root(*r), comm(*c)),
        TraceAction::Scatterv {
            counts: n,
            root: r,
            comm: c,
        } => {
            format!("scatterv counts={}{}{}", counts(n), root(*r), comm(*c))
        }
        TraceAction::Allgatherv { counts: n, comm: c } => {
            format!("allgatherv counts={}{}", counts(n), comm(*c))
        }
        TraceAction::ReduceScatter { counts: n, comm: c } => {
            format!("reduce_scatter counts={}{}", counts(n), comm(*c))
        }
        TraceAction::Alltoallv {
            send,
            recv,
            comm: c,
        } => {
            format!(
                "alltoallv send={} recv={}{}",
                counts(send),
                counts(recv),
                comm(*c)
            )
        }
    }
}

// ---- lazy reading -----------------------------------------------------------------------------

/// Reads a file's lines a chunk at a time, opening and closing the file for each chunk: thousands
/// of ranks can be read at once without holding a file descriptor each.
struct ChunkedLines {
    path: PathBuf,
    /// A packed set's rank (`pack`), read from there in place of `path`.
    packed: Option<(Rc<pack::Pack>, u32)>,
    offset: u64,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
}

const CHUNK_BYTES: usize = 4096;

impl ChunkedLines {
    fn next_line(&mut self) -> std::io::Result<Option<String>> {
        loop {
            if let Some(nl) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let line = String::from_utf8_lossy(&self.buf[self.pos..self.pos + nl]).into_owned();
                self.pos += nl + 1;
                self.release_read();
                return Ok(Some(line));
            }
            if self.eof {
                if self.pos < self.buf.len() {
                    let line = String::from_utf8_lossy(&self.buf[self.pos..]).into_owned();
                    self.pos = self.buf.len();
                    self.release_read();
                    return Ok(Some(line));
                }
                return Ok(None);
            }
            self.buf.drain(..self.pos);
            self.pos = 0;
            let old = self.buf.len();
            self.buf.resize(old + CHUNK_BYTES, 0);
            let mut got = 0;
            if let Some((p, r)) = &self.packed {
                got = p.read_at(*r, self.offset, &mut self.buf[old..])?;
            } else {
                let mut f = File::open(&self.path)?;
                f.seek(SeekFrom::Start(self.offset))?;
                while old + got < self.buf.len() {
                    match f.read(&mut self.buf[old + got..]) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            self.buf.truncate(old + got);
            self.offset += got as u64;
            if got < CHUNK_BYTES {
                // The file's end: what is left of it is all the buffer holds from now on (a
                // scaled rank's trace of 2 KB read whole keeps 2 KB, not a chunk, while a
                // million ranks wait).
                self.eof = true;
                self.buf.shrink_to_fit();
            } else if self.buf.capacity() > 4 * CHUNK_BYTES && self.buf.len() < CHUNK_BYTES {
                self.buf.shrink_to(2 * CHUNK_BYTES);
            }
        }
    }

    /// Past the file's end, gives back the lines read once they are half the buffer.
    fn release_read(&mut self) {
        if self.eof && self.pos >= 256 && 2 * self.pos >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.buf.shrink_to_fit();
            self.pos = 0;
        }
    }
}

#[derive(Debug)]
enum Node {
    Act(TraceAction, u64),
    Loop(u64, Rc<Vec<Node>>),
}

struct Frame {
    body: Rc<Vec<Node>>,
    pos: usize,
    left: u64,
    /// The top-level loop whose iterations are counted (`TraceReader::marks_passed`).
    marked: bool,
    /// In that loop's frame: where in its body the inner loop whose iterations are counted is.
    inner_at: Option<usize>,
    /// That inner loop (`TraceReader::inner_marks_passed`).
    inner: bool,
}

/// Streams one rank's actions, with loops unfolded, reading the file lazily.
pub struct TraceReader {
    file: String,
    lines: ChunkedLines,
    line_no: u64,
    stack: Vec<Frame>,
    pub header: Header,
    /// The top-level loop (by its place among them) whose iterations are counted.
    mark_loop: Option<usize>,
    top_loops: usize,
    marks_passed: u64,
    /// The loop (by its place among the loops directly in the marked one) whose iterations are
    /// counted as well, run after run.
    mark_inner: Option<usize>,
    inner_runs: u64,
    inner_passed: u64,
}

/// Loop bodies are held in memory while they repeat; this bounds one body.
const MAX_LOOP_BODY_LINES: usize = 1 << 20;
/// ... and the entries of the count lists it holds, and the runs of its rank lists.
const MAX_LOOP_BODY_ENTRIES: usize = 1 << 24;

/// What an action weighs in a loop body held in memory: its list entries.
fn list_entries(a: &TraceAction) -> usize {
    match a {
        TraceAction::CommDef { ranks, .. } => ranks.runs().len(),
        TraceAction::Waitall { reqs } => reqs.len(),
        TraceAction::Gatherv { counts, .. }
        | TraceAction::Scatterv { counts, .. }
        | TraceAction::Allgatherv { counts, .. }
        | TraceAction::ReduceScatter { counts, .. } => counts.len(),
        TraceAction::Alltoallv { send, recv, .. } => send.len() + recv.len(),
        TraceAction::Compute {
            compute: Compute::Blocks(b),
        } => b.len(),
        _ => 0,
    }
}
/// Loops nest at most this deep (the reader recurses once per level).
pub const MAX_LOOP_DEPTH: usize = 256;
/// A rank's trace unfolds to at most this many actions (loop counts multiply): more would take
/// the replay longer than anyone waits.
pub const MAX_UNFOLDED_ACTIONS: u64 = 1_000_000_000_000;

impl TraceReader {
    /// Opens a rank's file and reads its header line.
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        Self::open_from(path, None)
    }

    /// Opens rank `r` of a packed set (`pack::TraceDir::reader`); `path` names it in errors.
    fn open_packed(path: &Path, pack: Rc<pack::Pack>, r: u32) -> Result<TraceReader, TraceError> {
        Self::open_from(path, Some((pack, r)))
    }

    fn open_from(path: &Path, packed: Option<(Rc<pack::Pack>, u32)>) -> Result<TraceReader, TraceError> {
        note_rank_file_read(path);
        let file = path.display().to_string();
        let mut lines = ChunkedLines {
            path: if packed.is_some() { PathBuf::new() } else { path.to_path_buf() },
            packed,
            offset: 0,
            buf: Vec::new(),
            pos: 0,
            eof: false,
        };
        let mut line_no = 0;
        let header = loop {
            line_no += 1;
            match lines.next_line() {
                Err(e) => {
                    return Err(TraceError {
                        file,
                        line: 0,
                        msg: format!("cannot read: {e}"),
                    })
                }
                Ok(None) => {
                    return Err(TraceError {
                        file,
                        line: line_no,
                        msg: "empty file: no header line".into(),
                    })
                }
                Ok(Some(l)) if l.trim().is_empty() || l.trim_start().starts_with('#') => continue,
                Ok(Some(l)) => {
                    break parse_header(&l).map_err(|msg| TraceError {
                        file: file.clone(),
                        line: line_no,
                        msg,
                    })?
                }
            }
        };
        Ok(TraceReader {
            file,
            lines,
            line_no,
            stack: Vec::new(),
            header,
            mark_loop: None,
            top_loops: 0,
            marks_passed: 0,
            mark_inner: None,
            inner_runs: 0,
            inner_passed: 0,
        })
    }

    /// Counts the iterations of the top-level loop at place `index` (from 0) as they start.
    pub fn mark_loop(&mut self, index: usize) {
        self.mark_loop = Some(index);
    }

    /// Marks of the counted loop passed so far: j + 1 once iteration j (from 0) has started, the
    /// loop's count + 1 once it has ended.
    pub fn marks_passed(&self) -> u64 {
        self.marks_passed
    }

    /// Counts the iterations of the loop at place `index` (from 0) among those directly in the
    /// body of the loop `mark_loop` counts, each time it runs.
    pub fn mark_inner(&mut self, index: usize) {
        self.mark_inner = Some(index);
    }

    /// Runs of the inner counted loop started so far, and its marks passed in the last one (as
    /// `marks_passed` counts them).
    pub fn inner_marks_passed(&self) -> (u64, u64) {
        (self.inner_runs, self.inner_passed)
    }

    pub fn file(&self) -> &str {
        &self.file
    }

    fn err(&self, line: u64, msg: String) -> TraceError {
        TraceError {
            file: self.file.clone(),
            line,
            msg,
        }
    }

    fn raw_line(&mut self) -> Result<Option<(Line, u64)>, TraceError> {
        loop {
            let l = match self.lines.next_line() {
                Ok(l) => l,
                Err(e) => return Err(self.err(self.line_no, format!("cannot read: {e}"))),
            };
            let Some(l) = l else { return Ok(None) };
            self.line_no += 1;
            match parse_line(&l) {
                Ok(None) => continue,
                Ok(Some(x)) => return Ok(Some((x, self.line_no))),
                Err(msg) => return Err(self.err(self.line_no, msg)),
            }
        }
    }

    /// Reads a loop body up to its `end` (nested loops included).
    fn read_body(
        &mut self,
        start_line: u64,
        count: &mut (usize, usize),
        depth: usize,
    ) -> Result<Vec<Node>, TraceError> {
        if depth > MAX_LOOP_DEPTH {
            return Err(self.err(
                start_line,
                format!("loops nested deeper than {MAX_LOOP_DEPTH} levels"),
            ));
        }
        let mut body = Vec::new();
        loop {
            match self.raw_line()? {
                None => return Err(self.err(start_line, "loop without a matching `end`".into())),
                Some((Line::End, _)) => return Ok(body),
                Some((Line::Loop(n), l)) => {
                    let inner = self.read_body(l, count, depth + 1)?;
                    body.push(Node::Loop(n, Rc::new(inner)));
                }
                Some((Line::Action(a), l)) => {
                    count.0 += 1;
                    count.1 += list_entries(&a);
                    if count.0 > MAX_LOOP_BODY_LINES {
                        return Err(self.err(
                            start_line,
                            format!("loop body longer than {MAX_LOOP_BODY_LINES} lines"),
                        ));
                    }
                    if count.1 > MAX_LOOP_BODY_ENTRIES {
                        return Err(self.err(
                            start_line,
                            format!("loop body holds more than {MAX_LOOP_BODY_ENTRIES} rank and count list entries"),
                        ));
                    }
                    body.push(Node::Act(a, l));
                }
            }
            if body.len() > MAX_LOOP_BODY_LINES {
                return Err(self.err(
                    start_line,
                    format!("loop body longer than {MAX_LOOP_BODY_LINES} lines"),
                ));
            }
        }
    }

    /// The next action and the line it came from; `None` at the end of the trace.
    pub fn next_action(&mut self) -> Result<Option<(TraceAction, u64)>, TraceError> {
        loop {
            if let Some(top) = self.stack.last_mut() {
                if top.pos == top.body.len() {
                    top.left -= 1;
                    top.pos = 0;
                    if top.left == 0 || top.body.is_empty() {
                        let (marked, inner) = (top.marked, top.inner);
                        self.stack.pop();
                        self.marks_passed += u64::from(marked);
                        self.inner_passed += u64::from(inner);
                    }
                    continue;
                }
                if top.pos == 0 {
                    self.marks_passed += u64::from(top.marked);
                    self.inner_passed += u64::from(top.inner);
                }
                let body = Rc::clone(&top.body);
                let counted = top.inner_at == Some(top.pos);
                top.pos += 1;
                match &body[top.pos - 1] {
                    Node::Act(a, l) => return Ok(Some((a.clone(), *l))),
                    Node::Loop(n, inner) => {
                        if counted {
                            self.inner_runs += 1;
                            self.inner_passed = 0;
                        }
                        if *n > 0 {
                            self.stack.push(Frame {
                                body: Rc::clone(inner),
                                pos: 0,
                                left: *n,
                                marked: false,
                                inner_at: None,
                                inner: counted,
                            });
                        }
                        continue;
                    }
                }
            }
            match self.raw_line()? {
                None => return Ok(None),
                Some((Line::Action(a), l)) => return Ok(Some((a, l))),
                Some((Line::End, l)) => {
                    return Err(self.err(l, "`end` without a matching `loop`".into()))
                }
                Some((Line::Loop(n), l)) => {
                    let mut count = (0, 0);
                    let body = self.read_body(l, &mut count, 1)?;
                    let marked = self.mark_loop == Some(self.top_loops);
                    self.top_loops += 1;
                    let inner_at = match self.mark_inner {
                        Some(k) if marked => body
                            .iter()
                            .enumerate()
                            .filter(|(_, node)| matches!(node, Node::Loop(..)))
                            .nth(k)
                            .map(|(i, _)| i),
                        _ => None,
                    };
                    if n > 0 && !body.is_empty() {
                        self.stack.push(Frame {
                            body: Rc::new(body),
                            pos: 0,
                            left: n,
                            marked,
                            inner_at,
                            inner: false,
                        });
                    }
                }
            }
        }
    }
}

// ---- directories ------------------------------------------------------------------------------

/// A temporary directory for `ranks` trace files. Creating many files on a disk file system is
/// slow (ext4 spends most of a 65,536-rank prediction allocating inodes, a fifth of a 1,024-rank
/// one), so sets of 256 or more go to /dev/shm when its size limit leaves room for them;
/// `MPICAST_SCRATCH` names another place.
pub fn scratch_dir(prefix: &str, ranks: u32) -> std::io::Result<tempfile::TempDir> {
    let mut b = tempfile::Builder::new();
    b.prefix(prefix);
    if let Some(d) = std::env::var_os("MPICAST_SCRATCH") {
        return b.tempdir_in(d);
    }
    // tmpfs gives every file at least a page: count 16 KiB per rank, twice over.
    let need = ranks as u64 * 32 * 1024;
    if ranks >= 256 && shm_limit().is_some_and(|l| l > 4 * need) {
        if let Ok(t) = b.tempdir_in("/dev/shm") {
            return Ok(t);
        }
    }
    b.tempdir()
}

/// The size limit of /dev/shm in bytes, when it is a tmpfs (half the memory unless `size=`).
fn shm_limit() -> Option<u64> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    let line = mounts.lines().find(|l| l.split_whitespace().nth(1) == Some("/dev/shm"))?;
    let mut f = line.split_whitespace();
    if f.nth(2) != Some("tmpfs") {
        return None;
    }
    let opts = f.next().unwrap_or("");
    if let Some(sz) = opts.split(',').find_map(|o| o.strip_prefix("size=")) {
        let (num, mult) = match sz.chars().last() {
            Some('k') => (&sz[..sz.len() - 1], 1u64 << 10),
            Some('m') => (&sz[..sz.len() - 1], 1 << 20),
            Some('g') => (&sz[..sz.len() - 1], 1 << 30),
            _ => (sz, 1),
        };
        return num.parse::<u64>().ok().map(|n| n * mult);
    }
    let mem = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = mem.lines().find(|l| l.starts_with("MemTotal:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024 / 2)
}

/// Counts the ranks of a trace directory: files rank-0.trace .. rank-(N-1).trace, all present,
/// or the ranks its pack's index lists (`pack`).
pub fn discover(dir: &Path) -> anyhow::Result<u32> {
    use anyhow::{bail, Context};
    if let Some(n) = pack::listed_ranks(dir)? {
        return Ok(n);
    }
    let mut n = 0u32;
    let mut max = None::<u32>;
    for e in std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot read the trace directory", dir.display()))?
    {
        let e = e.with_context(|| format!("{}: cannot read the trace directory", dir.display()))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if let Some(r) = name
            .strip_prefix("rank-")
            .and_then(|s| s.strip_suffix(".trace"))
        {
            if let Ok(r) = r.parse::<u32>() {
                n += 1;
                max = Some(max.map_or(r, |m: u32| m.max(r)));
            }
        }
    }
    match max {
        None => bail!("{}: no rank-<R>.trace files", dir.display()),
        Some(m) if m + 1 != n => {
            let missing = (0..=m).find(|r| !rank_file(dir, *r).is_file()).unwrap_or(0);
            bail!(
                "{}: rank files are not 0..{}: {} is missing",
                dir.display(),
                m,
                rank_file(dir, missing).display()
            )
        }
        Some(_) => Ok(n),
    }
}

/// Reads every rank's trace once (streaming) and checks its syntax, header, peers, loops and
/// request ids. Returns the first problem as file:line: message.
pub fn validate_dir(dir: &Path, ranks: u32) -> Result<(), TraceError> {
    let dir = pack::TraceDir::open(dir)?;
    for r in 0..ranks {
        check_rank(&dir, r, ranks, None)?;
    }
    Ok(())
}

/// Reads rank `r`'s trace of a directory of `ranks` ranks into its tree (loops kept, as
/// written), checking it as [`validate_dir`] does, in the same pass.
pub fn read_rank_checked(dir: &pack::TraceDir, r: u32, ranks: u32) -> Result<Vec<fold::Item>, TraceError> {
    let mut tree = vec![(0, Vec::new())];
    check_rank(dir, r, ranks, Some(&mut tree))?;
    Ok(tree.pop().map(|f| f.1).unwrap_or_default())
}

/// Checks one rank's file; with `tree` (one frame: the top level), also builds its tree there.
fn check_rank(dir: &pack::TraceDir, r: u32, ranks: u32, mut tree: Option<&mut Vec<(u64, Vec<fold::Item>)>>) -> Result<(), TraceError> {
    let mut rd = dir.reader(r)?;
    if rd.header.rank != r {
        return Err(rd.err(
            1,
            format!(
                "header says rank {}, but this is rank-{r}.trace",
                rd.header.rank
            ),
        ));
    }
    if rd.header.size != ranks {
        return Err(rd.err(
            1,
            format!(
                "header says size {}, but the directory holds {ranks} rank files (rank-0.trace .. rank-{}.trace)",
                rd.header.size,
                ranks - 1
            ),
        ));
    }
    let mut comms: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    comms.insert(COMM_WORLD, ranks);
    // Each line is checked once, loops are not unfolded (a loop body's checks do not change
    // from one iteration to the next): time does not grow with the loop counts.
    // loops: (line of `loop`, actions per execution of the enclosing body so far); the
    // count of unfolded actions multiplies along the nesting.
    let mut loops: Vec<(u64, u64, u64)> = Vec::new(); // (line, count, actions in body)
    let mut top: u64 = 0;
    let mut in_outer = (0usize, 0usize);
    while let Some((l, line)) = rd.raw_line()? {
        match l {
            Line::Action(a) => {
                if let Err(msg) = check_action(&a, ranks, &mut comms, r) {
                    return Err(rd.err(line, msg));
                }
                match loops.last_mut() {
                    Some(f) => f.2 = f.2.saturating_add(1),
                    None => top = top.saturating_add(1),
                }
                if let Some(&(outer, _, _)) = loops.first() {
                    // The reader holds a whole outermost loop in memory.
                    in_outer.0 += 1;
                    in_outer.1 += list_entries(&a);
                    if in_outer.0 > MAX_LOOP_BODY_LINES {
                        return Err(rd.err(
                            outer,
                            format!("loop body longer than {MAX_LOOP_BODY_LINES} lines"),
                        ));
                    }
                    if in_outer.1 > MAX_LOOP_BODY_ENTRIES {
                        return Err(rd.err(
                            outer,
                            format!("loop body holds more than {MAX_LOOP_BODY_ENTRIES} rank and count list entries"),
                        ));
                    }
                }
                if let Some(t) = tree.as_deref_mut() {
                    t.last_mut().expect("top frame").1.push(fold::Item::Action(a));
                }
            }
            Line::Loop(n) => {
                if loops.is_empty() {
                    in_outer = (0, 0);
                }
                if loops.len() >= MAX_LOOP_DEPTH {
                    return Err(rd.err(
                        line,
                        format!("loops nested deeper than {MAX_LOOP_DEPTH} levels"),
                    ));
                }
                loops.push((line, n, 0));
                if let Some(t) = tree.as_deref_mut() {
                    t.push((n, Vec::new()));
                }
            }
            Line::End => {
                let Some((_, n, body)) = loops.pop() else {
                    return Err(rd.err(line, "`end` without a matching `loop`".into()));
                };
                if let Some(t) = tree.as_deref_mut() {
                    let (n, body) = t.pop().expect("loop frame");
                    t.last_mut().expect("top frame").1.push(fold::Item::Loop(n, body));
                }
                let unfolded = n.saturating_mul(body);
                match loops.last_mut() {
                    Some(f) => f.2 = f.2.saturating_add(unfolded),
                    None => top = top.saturating_add(unfolded),
                }
            }
        }
        if top > MAX_UNFOLDED_ACTIONS {
            return Err(rd.err(
                line,
                format!(
                    "the trace unfolds to more than {MAX_UNFOLDED_ACTIONS} actions (loop counts multiply): too long to replay"
                ),
            ));
        }
    }
    if let Some((line, _, _)) = loops.last() {
        return Err(rd.err(*line, "loop without a matching `end`".into()));
    }
    Ok(())
}

fn check_action(
    a: &TraceAction,
    ranks: u32,
    comms: &mut std::collections::HashMap<u32, u32>,
    me: u32,
) -> Result<(), String> {
    use TraceAction as A;
    let size = |c: u32, comms: &std::collections::HashMap<u32, u32>| {
        comms
            .get(&c)
            .copied()
            .ok_or_else(|| format!("communicator {c} used before its `comm {c} RANKS` line"))
    };
    let rank_ok = |r: u32, n: u32, what: &str| {
        if r < n {
            Ok(())
        } else {
            Err(format!(
                "{what} {r} is not a rank of a communicator of size {n}"
            ))
        }
    };
    let peer_ok = |p: Peer, n: u32| match p {
        Peer::Any => Ok(()),
        Peer::Rank(r) => rank_ok(r, n, "source"),
    };
    let counts_ok = |c: &Counts, n: u32| {
        if c.len() == n as usize {
            Ok(())
        } else {
            Err(format!("{} counts for a communicator of size {n}", c.len()))
        }
    };
    match a {
        A::CommDef { id, ranks: members } => {
            if members.is_empty() || members.max().is_some_and(|m| m >= ranks) {
                return Err(format!(
                    "comm {id}: members must be world ranks below {ranks}"
                ));
            }
            if !members.contains(me) {
                return Err(format!("comm {id}: this rank ({me}) is not a member"));
            }
            comms.insert(*id, members.len() as u32);
        }
        A::Compute { .. } | A::Wait { .. } | A::Waitall { .. } | A::Test { .. } | A::Cancel { .. } | A::Ctor { .. } => {}
        A::Send { to, comm, .. } | A::Isend { to, comm, .. } => {
            rank_ok(*to, size(*comm, comms)?, "destination")?
        }
        A::Recv { from, comm, .. } | A::Irecv { from, comm, .. } => {
            peer_ok(*from, size(*comm, comms)?)?
        }
        A::Arecv { from, comm, .. } => rank_ok(*from, size(*comm, comms)?, "source")?,
        A::Sendrecv { to, from, comm, .. } => {
            let n = size(*comm, comms)?;
            rank_ok(*to, n, "destination")?;
            peer_ok(*from, n)?;
        }
        A::Barrier { comm }
        | A::Allreduce { comm, .. }
        | A::Allgather { comm, .. }
        | A::Alltoall { comm, .. }
        | A::Scan { comm, .. } => {
            size(*comm, comms)?;
        }
        A::Bcast { root, comm, .. }
        | A::Reduce { root, comm, .. }
        | A::Gather { root, comm, .. }
        | A::Scatter { root, comm, .. } => rank_ok(*root, size(*comm, comms)?, "root")?,
        A::Gatherv { counts, root, comm } | A::Scatterv { counts, root, comm } => {
            let n = size(*comm, comms)?;
            rank_ok(*root, n, "root")?;
            counts_ok(counts, n)?;
        }
        A::Allgatherv { counts, comm } | A::ReduceScatter { counts, comm } => {
            counts_ok(counts, size(*comm, comms)?)?
        }
        A::Alltoallv { send, recv, comm } => {
            let n = size(*comm, comms)?;
            counts_ok(send, n)?;
            counts_ok(recv, n)?;
        }
    }
    Ok(())
}

// ---- writing ----------------------------------------------------------------------------------

/// Writes one rank's trace file, line by line. Loops nest: `begin_loop(n)` ... `end_loop()`.
pub struct TraceWriter {
    out: Out,
    path: PathBuf,
    depth: usize,
}

/// Where a rank's lines go: its file, or memory until `finish` adds them to a pack.
enum Out {
    File(BufWriter<File>),
    Packed { text: Vec<u8>, pack: pack::SharedPack, rank: u32 },
}

impl Write for Out {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::File(f) => f.write(b),
            Out::Packed { text, .. } => text.write(b),
        }
    }
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Out::File(f) => f.write_all(b),
            Out::Packed { text, .. } => text.write_all(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::File(f) => f.flush(),
            Out::Packed { .. } => Ok(()),
        }
    }
}

impl TraceWriter {
    /// Creates `dir/rank-<rank>.trace` and writes its header.
    pub fn create(dir: &Path, rank: u32, size: u32) -> std::io::Result<TraceWriter> {
        std::fs::create_dir_all(dir)?;
        let path = rank_file(dir, rank);
        let mut out = Out::File(BufWriter::new(File::create(&path)?));
        writeln!(
            out,
            "{FORMAT_NAME} {FORMAT_VERSION} rank {rank} size {size}"
        )?;
        Ok(TraceWriter {
            out,
            path,
            depth: 0,
        })
    }

    /// Writes rank `rank`'s trace into a pack (added to it at `finish`).
    pub fn create_packed(pack: &pack::SharedPack, rank: u32, size: u32) -> std::io::Result<TraceWriter> {
        let path = rank_file(pack.borrow().dir(), rank);
        let mut out = Out::Packed { text: Vec::with_capacity(2048), pack: Rc::clone(pack), rank };
        writeln!(out, "{FORMAT_NAME} {FORMAT_VERSION} rank {rank} size {size}")?;
        Ok(TraceWriter { out, path, depth: 0 })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn action(&mut self, a: &TraceAction) -> std::io::Result<()> {
        writeln!(
            self.out,
            "{:indent$}{}",
            "",
            format_action(a),
            indent = 2 * self.depth
        )
    }

    pub fn comment(&mut self, text: &str) -> std::io::Result<()> {
        writeln!(
            self.out,
            "{:indent$}# {}",
            "",
            text.replace('\n', " "),
            indent = 2 * self.depth
        )
    }

    pub fn begin_loop(&mut self, count: u64) -> std::io::Result<()> {
        writeln!(
            self.out,
            "{:indent$}loop {count}",
            "",
            indent = 2 * self.depth
        )?;
        self.depth += 1;
        Ok(())
    }

    pub fn end_loop(&mut self) -> std::io::Result<()> {
        if self.depth == 0 {
            return Err(std::io::Error::other("end_loop without begin_loop"));
        }
        self.depth -= 1;
        writeln!(self.out, "{:indent$}end", "", indent = 2 * self.depth)
    }

    /// Flushes the file; loops left open are an error.
    pub fn finish(self) -> std::io::Result<()> {
        if self.depth != 0 {
            return Err(std::io::Error::other(format!(
                "{}: {} loop(s) left open",
                self.path.display(),
                self.depth
            )));
        }
        match self.out {
            Out::File(mut f) => f.flush(),
            Out::Packed { text, pack, rank } => pack.borrow_mut().add(rank, &text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_loop_counts_its_iterations_as_they_start_and_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let text = "mpicast-trace 1 rank 0 size 1\nloop 2\n  barrier\nend\ncompute 1e-3\nloop 3\n  loop 2\n    barrier\n  end\n  compute 1e-4\nend\nbarrier\n";
        std::fs::write(rank_file(dir.path(), 0), text).unwrap();
        let mut r = TraceReader::open(&rank_file(dir.path(), 0)).unwrap();
        r.mark_loop(1);
        let mut seen = Vec::new();
        while r.next_action().unwrap().is_some() {
            seen.push(r.marks_passed());
        }
        seen.push(r.marks_passed());
        // 2 barriers and a compute before the loop; then 3 iterations of 3 actions; the end
        // passes once the final barrier is read.
        assert_eq!(seen, vec![0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4]);
    }

    #[test]
    fn a_constructor_line_reads_back_as_written() {
        use crate::model::trace::CtorKind;
        for (kind, members) in [(CtorKind::Split, 0), (CtorKind::Split, 2), (CtorKind::Dup, 16)] {
            let a = TraceAction::Ctor { kind, members };
            let text = format_action(&a);
            assert_eq!(parse_line(&text).unwrap(), Some(Line::Action(a)), "{text}");
        }
        for (bad, says) in [("ctor create 2", "no constructor"), ("ctor split", "ctor split|dup MEMBERS"), ("ctor dup -1", "members")] {
            let e = parse_line(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
