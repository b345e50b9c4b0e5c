//! `lsmlab merge A.json B.json ... --out F`: the shards of one sweep (`run --shard K/N`) joined
//! into the result file the unsharded run would have written, cells and rows in grid order.
//!
//! Shards must be of the same run: experiment, scale, seed, config (its `derived` part aside),
//! grid size and repetitions; no cell may appear twice, and every cell of the grid must be present.
//! Notes are kept once each; `duration_s` is the sum of the shards' (machine time, not elapsed).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::cells::Shard;
use crate::config::DERIVED_KEY;
use crate::result::{CellLog, GitInfo, Provenance, ResultFile};

/// Refuses a `--out` that is one of the shards (the merge would overwrite its own input, and a
/// failed or partial merge would lose it) or a directory; checked before anything is read.
pub fn check_out(shards: &[PathBuf], out: &Path) -> anyhow::Result<()> {
    if let Some(shard) = shards.iter().find(|s| crate::report::same_file(s, out)) {
        bail!(
            "--out {} is one of the shard files being merged ({}); write the merged result to a new \
             file, e.g. {}",
            out.display(),
            shard.display(),
            merged_name(shard).display()
        );
    }
    if out.is_dir() {
        let name = shards
            .first()
            .map(|s| merged_name(s))
            .and_then(|m| m.file_name().map(|n| n.to_os_string()))
            .unwrap_or_else(|| "EXPERIMENT.json".into());
        bail!(
            "--out {} is a directory; give the merged result's file name, e.g. {}",
            out.display(),
            out.join(name).display()
        );
    }
    Ok(())
}

/// Refuses to replace an existing `out` that is not an earlier result of the merged run's
/// experiment and scale (another experiment's result, or a file that is no result at all).
pub fn check_replaces(merged: &ResultFile, out: &Path) -> anyhow::Result<()> {
    if !out.exists() {
        return Ok(());
    }
    match ResultFile::read(out) {
        Ok(old) if old.experiment == merged.experiment && old.scale == merged.scale => Ok(()),
        Ok(old) => bail!(
            "--out {} holds a result of `{}` at scale {}, and the shards are `{}` at scale {}; \
             nothing written: give the merged result its own file (e.g. {})",
            out.display(),
            old.experiment,
            old.scale,
            merged.experiment,
            merged.scale,
            out.with_file_name(format!("{}.json", merged.experiment))
                .display()
        ),
        Err(e) => bail!(
            "--out {} exists and is not a result file lsmlab can read ({e:#}); nothing written: give \
             a new file or remove it first",
            out.display()
        ),
    }
}

/// The unsharded result's name beside a shard: `x.shard-1-of-2.json` -> `x.json`.
fn merged_name(shard: &Path) -> PathBuf {
    let name = shard
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let merged = match name.find(".shard-") {
        Some(i) => format!("{}.json", &name[..i]),
        None => format!("merged-{name}"),
    };
    shard.with_file_name(merged)
}

/// The refusal of a merge whose files lack the grid's cells `missing` (0-based, sorted): which
/// cells, and, for the files of a `--shard K/N` split, which shards hold them and how to run them.
fn missing_cells(
    missing: &[usize],
    total: usize,
    split: Option<Shard>,
    experiment: &str,
    scale: &str,
) -> String {
    let list = |items: Vec<String>, most: usize| {
        let more = if items.len() > most { ", ..." } else { "" };
        format!("{}{more}", items[..items.len().min(most)].join(", "))
    };
    let cells = list(missing.iter().map(|i| i.to_string()).collect(), 10);
    let head = format!(
        "{} of the grid's {total} cells are in none of the files (cells {cells}, counted from 0)",
        missing.len()
    );
    let Some(split) = split else {
        return format!("{head}; merge every shard, and finish interrupted ones with `run --resume`");
    };
    let mut shards: Vec<usize> = missing.iter().map(|i| i % split.count + 1).collect();
    shards.sort_unstable();
    shards.dedup();
    let n = split.count;
    let command = format!("`lsmlab run {experiment} --scale {scale} --shard K/{n}`");
    match shards.as_slice() {
        [k] => format!(
            "{head}: shard {k} of {n} is missing; run it ({command} with K = {k} and the other \
             shards' options; `--resume` finishes an interrupted one), then merge again"
        ),
        _ => format!(
            "{head}: {} of the {n} shards are missing ({}); run each ({command} with the other \
             shards' options; `--resume` finishes an interrupted one), then merge again",
            shards.len(),
            list(shards.iter().map(|k| k.to_string()).collect(), 20)
        ),
    }
}

/// Joins `shards` (each with the path it was read from, for messages) into one result.
pub fn merge(shards: &[(&Path, ResultFile)]) -> anyhow::Result<ResultFile> {
    let Some((first_path, first)) = shards.first() else {
        bail!("nothing to merge: give the shard files");
    };
    let name = |p: &Path| p.display().to_string();
    let inputs = |r: &ResultFile| {
        let mut c = r.config.clone();
        c.remove(DERIVED_KEY);
        c
    };
    let log_of = |path: &Path, r: &ResultFile| -> anyhow::Result<CellLog> {
        r.cells.clone().with_context(|| {
            format!(
                "{} records no cells (written by an lsmlab without cells?); only results of `lsmlab run` with cells merge",
                name(path)
            )
        })
    };
    let first_log = log_of(first_path, first)?;
    let mut cells: Vec<(usize, std::ops::Range<usize>, usize)> = Vec::new(); // (cell, rows, shard)
    for (s, (path, shard)) in shards.iter().enumerate() {
        let differ = |what: &str, a: String, b: String| -> anyhow::Result<()> {
            if a != b {
                bail!(
                    "{} and {} are not shards of one run: their {what} differ ({a} vs {b})",
                    name(first_path),
                    name(path)
                );
            }
            Ok(())
        };
        differ("experiments", first.experiment.clone(), shard.experiment.clone())?;
        differ("scales", first.scale.to_string(), shard.scale.to_string())?;
        differ("seeds", first.seed.to_string(), shard.seed.to_string())?;
        if inputs(first) != inputs(shard) {
            let (a, b) = (inputs(first), inputs(shard));
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            let differing: Vec<String> = keys
                .into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .map(|k| format!("`{k}`"))
                .collect();
            bail!(
                "{} and {} are not shards of one run: their configs differ in {}",
                name(first_path),
                name(path),
                differing.join(", ")
            );
        }
        let log = log_of(path, shard)?;
        let split = |l: &CellLog| match l.shard {
            Some(s) => format!("shard {s}"),
            None => "no shard (a whole run)".to_string(),
        };
        if first_log.shard.map(|s| s.count) != log.shard.map(|s| s.count) {
            bail!(
                "{} and {} are not shards of one split: {} and {}; merge the files of one \
                 `--shard K/N` split, every K from 1 to N with the same N",
                name(first_path),
                name(path),
                split(&first_log),
                split(&log)
            );
        }
        differ("grid sizes", first_log.total.to_string(), log.total.to_string())?;
        differ(
            "repetitions",
            first_log.repeat.to_string(),
            log.repeat.to_string(),
        )?;
        let ranges = log.row_ranges(shard.rows.len()).with_context(|| name(path))?;
        for (done, range) in log.done.iter().zip(ranges) {
            if let Some((_, _, other)) = cells.iter().find(|(c, _, _)| *c == done.index) {
                bail!(
                    "cell {} ({}) is in both {} and {}: merge each shard once",
                    done.index,
                    done.label,
                    name(shards[*other].0),
                    name(path)
                );
            }
            cells.push((done.index, range, s));
        }
    }
    let missing: Vec<usize> = (0..first_log.total)
        .filter(|i| !cells.iter().any(|(c, _, _)| c == i))
        .collect();
    if !missing.is_empty() {
        bail!(
            "{}",
            missing_cells(
                &missing,
                first_log.total,
                first_log.shard,
                &first.experiment,
                &first.scale.to_string()
            )
        );
    }
    cells.sort_by_key(|(c, _, _)| *c);

    let mut merged = first.clone();
    merged.rows.clear();
    merged.notes.clear();
    merged.duration_s = 0.0;
    // Rows of the whole grid are made again from the merged cells' rows (`complete_grid`).
    let mut log = CellLog {
        shard: None,
        done: Vec::new(),
        grid_rows: 0,
        ..first_log
    };
    for (index, range, s) in &cells {
        let shard = &shards[*s].1;
        merged.rows.extend(shard.rows[range.clone()].iter().cloned());
        let record = shard
            .cells
            .as_ref()
            .and_then(|l| l.done.iter().find(|d| d.index == *index))
            .cloned()
            .with_context(|| format!("cell {index} is not in its shard's log"))?;
        log.done.push(record);
    }
    for (_, shard) in shards {
        merged.duration_s += shard.duration_s;
        for note in &shard.notes {
            if !merged.notes.contains(note) {
                merged.notes.push(note.clone());
            }
        }
        if let Some(serde_json::Value::Object(derived)) = shard.config.get(DERIVED_KEY) {
            let into = merged
                .config
                .entry(DERIVED_KEY.to_string())
                .or_insert_with(|| serde_json::Value::Object(Default::default()));
            if let serde_json::Value::Object(into) = into {
                for (k, v) in derived {
                    into.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        if let Some(note) = code_difference(&first.git, &shard.git) {
            if !merged.notes.contains(&note) {
                merged.notes.push(note);
            }
        }
    }
    merged.started_at = shards
        .iter()
        .map(|(_, r)| r.started_at.clone())
        .min()
        .unwrap_or_default();
    merged.cells = Some(log);
    let merged_by = Provenance::current().command_line.join(" ");
    merged.notes.push(format!(
        "Merged from {} shard files by `{merged_by}`; machine, git and provenance are the first shard's; \
         duration_s sums the shards'.",
        shards.len()
    ));
    merged.validate().context("the merged result")?;
    Ok(merged)
}

/// The note a merge leaves when two shards ran different code, naming each side's commit and
/// whether its binary was built with changes to it (two shards of one commit may differ only so).
fn code_difference(a: &GitInfo, b: &GitInfo) -> Option<String> {
    let name = |g: &GitInfo| {
        if g.dirty {
            format!("commit {} with local changes", g.commit)
        } else {
            format!("commit {}", g.commit)
        }
    };
    (a != b).then(|| format!("The shards ran different code: {} and {}.", name(a), name(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(commit: &str, dirty: bool) -> GitInfo {
        GitInfo {
            commit: commit.to_string(),
            dirty,
        }
    }

    #[test]
    fn missing_cells_name_the_shards_to_run() {
        let split = |count| Some(Shard { index: 1, count });
        let one = missing_cells(&[1, 3, 5], 6, split(2), "rum-update", "tiny");
        assert!(one.starts_with("3 of the grid's 6 cells are in none of the files (cells 1, 3, 5, counted from 0): shard 2 of 2 is missing"), "{one}");
        assert!(
            one.contains("`lsmlab run rum-update --scale tiny --shard K/2` with K = 2"),
            "{one}"
        );
        let many = missing_cells(&[8, 14, 15, 92], 168, split(84), "rum-mixed", "paper");
        assert!(
            many.contains("3 of the 84 shards are missing (9, 15, 16)"),
            "{many}"
        );
        assert!(many.contains("--shard K/84"), "{many}");
        let whole = missing_cells(&[0], 2, None, "rum-update", "tiny");
        assert!(
            whole.ends_with("finish interrupted ones with `run --resume`"),
            "{whole}"
        );
    }

    #[test]
    fn a_code_difference_names_what_differs() {
        assert_eq!(code_difference(&git("abc", false), &git("abc", false)), None);
        assert_eq!(
            code_difference(&git("abc", false), &git("def", false)).as_deref(),
            Some("The shards ran different code: commit abc and commit def.")
        );
        // The same commit, one binary built from a modified tree: the note says which.
        assert_eq!(
            code_difference(&git("abc", false), &git("abc", true)).as_deref(),
            Some("The shards ran different code: commit abc and commit abc with local changes.")
        );
    }
}
