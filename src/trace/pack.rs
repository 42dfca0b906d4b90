//! Packed trace sets: every rank's trace text in one file (`ranks.pack`), found through an index
//! (`ranks.index`), in place of one `rank-<R>.trace` file per rank. Predictions write the costed
//! traces of large simulations packed: a million rank files cost minutes of inode allocation on a
//! disk file system (and as long again to delete), or a page each in tmpfs, where one file is
//! written and read in sequence. The text of each rank is the same as its file's would be
//! (traces/FORMAT.md); `TraceDir` reads either layout.

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::{rank_file, TraceError, TraceReader};

/// The ranks' texts, one after the other.
pub const PACK_FILE: &str = "ranks.pack";
/// `mpicast-pack 1 ranks N`, then one line per rank: its text's offset in the pack and length.
pub const INDEX_FILE: &str = "ranks.index";
const INDEX_NAME: &str = "mpicast-pack";
const INDEX_VERSION: u32 = 1;

/// Predictions write their costed traces packed from this many ranks on (`MPICAST_PACK_RANKS`
/// sets another threshold: the tests pack small sets).
pub const PACK_MIN_RANKS: u32 = 16_384;

/// Whether a set of `ranks` ranks written for a simulation is packed.
pub fn packs(ranks: u32) -> bool {
    let min = std::env::var("MPICAST_PACK_RANKS").ok().and_then(|v| v.parse().ok()).unwrap_or(PACK_MIN_RANKS);
    ranks >= min
}

/// The ranks the pack of `dir` holds by its index's first line, None when it has no index.
pub fn listed_ranks(dir: &Path) -> Result<Option<u32>, TraceError> {
    let index = dir.join(INDEX_FILE);
    // Not there (or `dir` is no directory): the directory's own reader says what it is.
    if !index.exists() {
        return Ok(None);
    }
    let f = File::open(&index).map_err(|e| TraceError { file: index.display().to_string(), line: 0, msg: format!("cannot read: {e}") })?;
    let mut head = String::new();
    BufReader::new(f)
        .read_line(&mut head)
        .map_err(|e| TraceError { file: index.display().to_string(), line: 1, msg: format!("cannot read: {e}") })?;
    parse_head(&index, head.trim_end()).map(Some)
}

fn parse_head(index: &Path, head: &str) -> Result<u32, TraceError> {
    let bad = |msg: String| TraceError { file: index.display().to_string(), line: 1, msg };
    match head.split_whitespace().collect::<Vec<_>>().as_slice() {
        [name, v, "ranks", n] if *name == INDEX_NAME => {
            if v.parse::<u32>().ok() != Some(INDEX_VERSION) {
                return Err(bad(format!("index version {v}, this mpicast reads version {INDEX_VERSION}")));
            }
            n.parse().map_err(|_| bad(format!("`{n}` is not a rank count")))
        }
        _ => Err(bad(format!("expected `{INDEX_NAME} {INDEX_VERSION} ranks N`, found `{head}`"))),
    }
}

/// A packed set opened for reading.
pub struct Pack {
    file: File,
    /// Each rank's (offset, length) in the pack.
    spans: Vec<(u64, u64)>,
}

impl Pack {
    /// The pack of `dir`, None when it holds no index.
    pub fn open(dir: &Path) -> Result<Option<Pack>, TraceError> {
        let index = dir.join(INDEX_FILE);
        let bad = |line: u64, msg: String| TraceError { file: index.display().to_string(), line, msg };
        if !index.exists() {
            return Ok(None);
        }
        let f = File::open(&index).map_err(|e| bad(0, format!("cannot read: {e}")))?;
        let mut lines = BufReader::new(f).lines();
        let head = lines.next().transpose().map_err(|e| bad(1, format!("cannot read: {e}")))?.unwrap_or_default();
        let ranks = parse_head(&index, &head)? as usize;
        let pack = dir.join(PACK_FILE);
        let file = File::open(&pack).map_err(|e| TraceError { file: pack.display().to_string(), line: 0, msg: format!("cannot read: {e}") })?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        // The header is not trusted with an allocation: the list grows as lines come.
        let mut spans = Vec::with_capacity(ranks.min(1 << 20));
        for (i, l) in lines.enumerate() {
            let no = i as u64 + 2;
            let l = l.map_err(|e| bad(no, format!("cannot read: {e}")))?;
            let mut it = l.split_whitespace().map(str::parse::<u64>);
            let (Some(Ok(at)), Some(Ok(n)), None) = (it.next(), it.next(), it.next()) else {
                return Err(bad(no, format!("expected `OFFSET LENGTH`, found `{l}`")));
            };
            if at.checked_add(n).is_none_or(|end| end > len) {
                return Err(bad(no, format!("rank {i}: bytes {at}+{n} lie past the pack's end ({len} bytes)")));
            }
            spans.push((at, n));
        }
        if spans.len() != ranks {
            return Err(bad(spans.len() as u64 + 2, format!("{} ranks listed, the header says {ranks}", spans.len())));
        }
        Ok(Some(Pack { file, spans }))
    }

    pub fn ranks(&self) -> u32 {
        self.spans.len() as u32
    }

    /// Reads rank `r`'s text from `offset` (within it) into `buf`: the bytes read, 0 at its end.
    pub fn read_at(&self, r: u32, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let (at, n) = self.spans[r as usize];
        let left = n.saturating_sub(offset) as usize;
        let want = left.min(buf.len());
        if want == 0 {
            return Ok(0);
        }
        self.file.read_exact_at(&mut buf[..want], at + offset)?;
        Ok(want)
    }

    /// Rank `r`'s whole text.
    pub fn text(&self, r: u32) -> std::io::Result<String> {
        let mut buf = vec![0; self.spans[r as usize].1 as usize];
        self.read_at(r, 0, &mut buf)?;
        String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

/// Writes a packed set: ranks in any order, each once; `finish` writes the index.
pub struct PackWriter {
    dir: PathBuf,
    out: BufWriter<File>,
    at: u64,
    spans: Vec<Option<(u64, u64)>>,
}

impl PackWriter {
    pub fn create(dir: &Path, ranks: u32) -> std::io::Result<PackWriter> {
        std::fs::create_dir_all(dir)?;
        let out = BufWriter::with_capacity(1 << 20, File::create(dir.join(PACK_FILE))?);
        Ok(PackWriter { dir: dir.to_path_buf(), out, at: 0, spans: vec![None; ranks as usize] })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends rank `r`'s text.
    pub fn add(&mut self, r: u32, text: &[u8]) -> std::io::Result<()> {
        let n = self.spans.len();
        let slot = self.spans.get_mut(r as usize).ok_or_else(|| std::io::Error::other(format!("rank {r} is not in a pack of {n} ranks")))?;
        if slot.is_some() {
            return Err(std::io::Error::other(format!("rank {r} written twice into {}", self.dir.display())));
        }
        self.out.write_all(text)?;
        *slot = Some((self.at, text.len() as u64));
        self.at += text.len() as u64;
        Ok(())
    }

    /// Flushes the pack and writes its index; every rank must have been written.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()?;
        let path = self.dir.join(INDEX_FILE);
        let mut w = BufWriter::new(File::create(&path)?);
        writeln!(w, "{INDEX_NAME} {INDEX_VERSION} ranks {}", self.spans.len())?;
        for (r, s) in self.spans.iter().enumerate() {
            let (at, n) = s.ok_or_else(|| std::io::Error::other(format!("{}: rank {r} was never written", self.dir.display())))?;
            writeln!(w, "{at} {n}")?;
        }
        w.flush()
    }
}

/// A pack being written, shared by the writers of its ranks (`TraceWriter::create_packed`).
pub type SharedPack = Rc<RefCell<PackWriter>>;

/// A directory of traces, one file per rank or packed.
pub struct TraceDir {
    path: PathBuf,
    pack: Option<Rc<Pack>>,
}

impl TraceDir {
    pub fn open(path: &Path) -> Result<TraceDir, TraceError> {
        Ok(TraceDir { path: path.to_path_buf(), pack: Pack::open(path)?.map(Rc::new) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_packed(&self) -> bool {
        self.pack.is_some()
    }

    /// Opens rank `r`'s trace and reads its header line.
    pub fn reader(&self, r: u32) -> Result<TraceReader, TraceError> {
        match &self.pack {
            None => TraceReader::open(&rank_file(&self.path, r)),
            Some(p) if r < p.ranks() => TraceReader::open_packed(&rank_file(&self.path, r), Rc::clone(p), r),
            Some(p) => Err(TraceError {
                file: self.path.join(INDEX_FILE).display().to_string(),
                line: 0,
                msg: format!("no rank {r}: the pack holds {} ranks", p.ranks()),
            }),
        }
    }

    /// Rank `r`'s whole text.
    pub fn text(&self, r: u32) -> std::io::Result<String> {
        match &self.pack {
            None => {
                let path = rank_file(&self.path, r);
                super::note_rank_file_read(&path);
                std::fs::read_to_string(&path)
            }
            Some(p) if r < p.ranks() => p.text(r),
            Some(p) => Err(std::io::Error::other(format!("no rank {r}: the pack holds {} ranks", p.ranks()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pack_reads_back_every_rank_as_its_file_would() {
        let dir = tempfile::tempdir().unwrap();
        let text = |r: u32| format!("mpicast-trace 1 rank {r} size 3\nloop 2\n  send 1 8\n  compute 1e-6\nend\nbarrier\n");
        let mut w = PackWriter::create(dir.path(), 3).unwrap();
        for r in [2, 0, 1] {
            w.add(r, text(r).as_bytes()).unwrap();
        }
        assert!(w.add(1, b"again").is_err());
        w.finish().unwrap();
        let d = TraceDir::open(dir.path()).unwrap();
        assert!(d.is_packed());
        for r in 0..3 {
            assert_eq!(d.text(r).unwrap(), text(r));
            let mut rd = d.reader(r).unwrap();
            assert_eq!(rd.header.rank, r);
            let mut n = 0;
            while rd.next_action().unwrap().is_some() {
                n += 1;
            }
            assert_eq!(n, 5);
        }
        assert!(d.reader(3).is_err());
    }

    #[test]
    fn a_pack_with_a_rank_missing_is_not_finished() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = PackWriter::create(dir.path(), 2).unwrap();
        w.add(0, b"mpicast-trace 1 rank 0 size 2\n").unwrap();
        let e = w.finish().unwrap_err().to_string();
        assert!(e.contains("rank 1 was never written"), "{e}");
    }

    #[test]
    fn a_damaged_index_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(PACK_FILE), "mpicast-trace 1 rank 0 size 1\n").unwrap();
        std::fs::write(dir.path().join(INDEX_FILE), "mpicast-pack 1 ranks 1\n0 999\n").unwrap();
        let e = TraceDir::open(dir.path()).err().unwrap().to_string();
        assert!(e.ends_with("ranks.index:2: rank 0: bytes 0+999 lie past the pack's end (30 bytes)"), "{e}");
        std::fs::write(dir.path().join(INDEX_FILE), "mpicast-pack 2 ranks 1\n0 31\n").unwrap();
        let e = TraceDir::open(dir.path()).err().unwrap().to_string();
        assert!(e.contains("index version 2, this mpicast reads version 1"), "{e}");
        // A header that claims more ranks than the index lists allocates nothing for them.
        std::fs::write(dir.path().join(INDEX_FILE), "mpicast-pack 1 ranks 4000000000\n0 30\n").unwrap();
        let e = TraceDir::open(dir.path()).err().unwrap().to_string();
        assert!(e.ends_with("ranks.index:3: 1 ranks listed, the header says 4000000000"), "{e}");
        // No index: a directory of rank files.
        std::fs::remove_file(dir.path().join(INDEX_FILE)).unwrap();
        assert!(!TraceDir::open(dir.path()).unwrap().is_packed());
    }
}
