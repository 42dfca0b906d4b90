//! A rank's trace as a tree (actions and loops, as written), for rewriting without unfolding.

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};

use crate::model::trace::TraceAction;
use crate::trace::{parse_line, Line, TraceWriter};

pub use crate::trace::fold::Item;

/// Reads one rank's trace file into its tree (the file has been validated).
pub fn read(path: &Path) -> Result<Vec<Item>> {
    crate::trace::note_rank_file_read(path);
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    parse(&text, path)
}

/// Reads rank `r` of a directory of rank files or a packed one into its tree.
pub fn read_in(dir: &crate::trace::pack::TraceDir, r: u32) -> Result<Vec<Item>> {
    let path = crate::trace::rank_file(dir.path(), r);
    let text = dir.text(r).with_context(|| format!("{}: cannot read", path.display()))?;
    parse(&text, &path)
}

/// A rank's text as its tree; `path` names it in errors.
fn parse(text: &str, path: &Path) -> Result<Vec<Item>> {
    let mut stack: Vec<(u64, Vec<Item>)> = vec![(1, Vec::new())];
    let mut header = false;
    for (no, line) in text.lines().enumerate() {
        if !header {
            let t = line.split('#').next().unwrap_or("").trim();
            if t.is_empty() {
                continue;
            }
            if !t.starts_with("mpicast-trace") {
                bail!("{}:{}: expected the header `mpicast-trace 1 rank R size N`", path.display(), no + 1);
            }
            header = true;
            continue;
        }
        match parse_line(line).map_err(|e| anyhow!("{}:{}: {e}", path.display(), no + 1))? {
            None => {}
            Some(Line::Action(a)) => stack.last_mut().expect("root frame").1.push(Item::Action(a)),
            Some(Line::Loop(k)) => stack.push((k, Vec::new())),
            Some(Line::End) => {
                if stack.len() < 2 {
                    bail!("{}:{}: `end` without `loop`", path.display(), no + 1);
                }
                let (k, body) = stack.pop().expect("loop frame");
                stack.last_mut().expect("root frame").1.push(Item::Loop(k, body));
            }
        }
    }
    while stack.len() > 1 {
        // An incomplete trace may end inside a loop: close it.
        let (k, body) = stack.pop().expect("loop frame");
        stack.last_mut().expect("root frame").1.push(Item::Loop(k, body));
    }
    Ok(stack.pop().map(|f| f.1).unwrap_or_default())
}

/// Writes a tree as rank `rank`'s trace of `size` ranks in `dir`.
pub fn write(dir: &Path, rank: u32, size: u32, items: &[Item]) -> Result<()> {
    let mut w = TraceWriter::create(dir, rank, size).with_context(|| format!("{}: cannot write", dir.display()))?;
    crate::trace::fold::write_items(&mut w, items).with_context(|| format!("{}: cannot write", w.path().display()))?;
    w.finish().with_context(|| format!("{}: cannot write", dir.display()))?;
    Ok(())
}

/// Calls `f` on every action with the number of times it runs (loop counts multiplied).
pub fn walk(items: &[Item], mult: u64, f: &mut dyn FnMut(&TraceAction, u64)) {
    for it in items {
        match it {
            Item::Action(a) => f(a, mult),
            Item::Loop(k, body) => walk(body, mult.saturating_mul(*k), f),
        }
    }
}

/// Applies `f` to every action in place (loops kept); `f` returns the actions replacing it.
pub fn map_actions(items: &[Item], f: &mut dyn FnMut(&TraceAction) -> Vec<TraceAction>) -> Vec<Item> {
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Item::Action(a) => out.extend(f(a).into_iter().map(Item::Action)),
            Item::Loop(k, body) => {
                let b = map_actions(body, f);
                if !b.is_empty() {
                    out.push(Item::Loop(*k, b));
                }
            }
        }
    }
    out
}
