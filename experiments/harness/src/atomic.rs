//! Output files written whole or not at all.
//!
//! Every file lsmlab writes (result files, the claims evaluation, figures, figure manifests,
//! REPORT.md) is first written to a temporary file beside its destination, synced, then renamed
//! over it, so an interrupted or failing command leaves either the old file or the new one, never
//! half of one. The temporary name is `.<file name>.<pid>.lsmlab-tmp.<extension>` (the extension
//! kept last because plotters picks the PNG encoder from it); [`remove_stale`] deletes the ones a
//! killed process left behind, and each command calls it on the directories it writes before it
//! starts.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Context;

/// The marker every temporary output file carries in its name.
pub const TEMP_MARK: &str = ".lsmlab-tmp";

/// A temporary file older than this whose writer cannot be identified is stale.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// The temporary path `path` is written through by this process.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tmp".into());
    parent_dir(path).join(format!(".{name}.{}{TEMP_MARK}.{ext}", std::process::id()))
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `bytes` to `path` atomically, creating its directory.
pub fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_with(path, |tmp| {
        let mut file = fs::File::create(tmp)?;
        file.write_all(bytes)?;
        Ok(())
    })
}

/// Lets `produce` write the temporary file of `path`, then syncs it and renames it over `path`
/// (and syncs the directory, where the platform allows). On any error the temporary file is
/// removed and `path` is untouched. Errors name `path`.
pub fn write_with(path: &Path, produce: impl FnOnce(&Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let dir = parent_dir(path);
    fs::create_dir_all(&dir).with_context(|| format!("creating directory {}", dir.display()))?;
    let tmp = temp_path(path);
    let done = produce(&tmp).and_then(|()| {
        fs::File::open(&tmp)?.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(&dir) {
            // Makes the rename durable; not every platform can open a directory, so best effort.
            let _ = d.sync_all();
        }
        Ok(())
    });
    if let Err(e) = done {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
}

/// Removes the temporary output files left in `dir` and its immediate subdirectories by processes
/// that are gone (or, where that cannot be told, that are over an hour old); returns how many.
/// A missing directory has none.
pub fn remove_stale(dir: &Path) -> usize {
    let mut removed = remove_stale_in(dir);
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                removed += remove_stale_in(&entry.path());
            }
        }
    }
    removed
}

fn remove_stale_in(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_writer(&name) else {
            continue;
        };
        if writer_is_alive(pid, &entry.path()) {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The pid in a temporary output file's name, `None` when `name` is not one.
fn temp_writer(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (head, _ext) = rest.rsplit_once(TEMP_MARK)?;
    let (_file, pid) = head.rsplit_once('.')?;
    pid.parse().ok()
}

fn writer_is_alive(pid: u32, path: &Path) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc_dir = Path::new("/proc");
    if proc_dir.is_dir() {
        return proc_dir.join(pid.to_string()).exists();
    }
    let age = fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok());
    age.is_none_or(|a| a < STALE_AFTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("REPORT.md");
        write(&path, b"one").unwrap();
        write(&path, b"two").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "only REPORT.md remains");
    }

    #[test]
    fn a_failing_writer_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fig.png");
        write(&path, b"old").unwrap();
        let err = write_with(&path, |tmp| {
            fs::write(tmp, b"half")?;
            anyhow::bail!("drawing failed")
        })
        .unwrap_err();
        assert!(format!("{err:#}").contains("fig.png"), "{err:#}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn the_temporary_keeps_the_extension_and_is_recognised() {
        let tmp = temp_path(Path::new("plots/small/a.b.png"));
        let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.ends_with(".png"), "{name}");
        assert_eq!(temp_writer(&name), Some(std::process::id()));
        assert_eq!(temp_writer("a.b.png"), None);
        assert_eq!(temp_writer(".hidden.json"), None);
        assert_eq!(temp_writer(".x.json.notapid.lsmlab-tmp.json"), None);
    }

    #[test]
    fn stale_temporaries_of_dead_writers_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("small");
        fs::create_dir(&sub).unwrap();
        // No process has pid u32::MAX - 1 on Linux (pid_max is at most 2^22).
        let dead = format!(".r.json.{}{TEMP_MARK}.json", u32::MAX - 1);
        fs::write(sub.join(&dead), "x").unwrap();
        fs::write(dir.path().join(&dead), "x").unwrap();
        let mine = temp_path(&sub.join("s.json"));
        fs::write(&mine, "x").unwrap();
        fs::write(sub.join("r.json"), "x").unwrap();
        if Path::new("/proc").is_dir() {
            assert_eq!(remove_stale(dir.path()), 2);
            assert!(!sub.join(&dead).exists());
        }
        assert!(mine.exists(), "this process's own temporary is live");
        assert!(sub.join("r.json").exists());
        assert_eq!(remove_stale(&dir.path().join("missing")), 0);
    }
}
