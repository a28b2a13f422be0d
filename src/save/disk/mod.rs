//! Writing saves. Writing is atomic: every file goes into a hidden folder of this writer's own
//! beside the save and is synced, then the folder is swapped into place (or, where folders cannot
//! be swapped, the older save is moved aside and removed only once the new one stands). A kill at
//! any moment leaves either the old save or the new one, never a mix; a leftover hidden folder is
//! removed by the next writer once its own writer is gone. Forks and pruning of autosaves too.
//! The saves folder's names are in [`folder`], reading in [`read`], the vectors' file in
//! [`embeddings`]; this module is where the rest of the program finds them all.

pub mod embeddings;
pub mod folder;
pub mod read;

use super::SaveData;
use super::format::FORMAT;
use crate::data_error::ron_text;
pub use embeddings::{decode_embeddings, encode_embeddings};
pub use folder::{agent_file, autosave_name, check_name, check_user_name, check_writable, slug};
use folder::{hidden_part_pid, now_nanos, recover, sync_dir, writer_alive};
pub use read::{NamedSave, SaveEntry, damaged, describe, list, read_named, read_save, resolve};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Removes all but the `keep` autosaves of `base` written last. A folder to remove is first
/// renamed to a hidden one, so a kill in the middle never leaves half a save among the saves.
pub fn prune_autosaves(root: &Path, base: &str, keep: usize) -> Result<(), String> {
    let prefix = format!("auto-{base}-");
    let mut autos: Vec<SaveEntry> = list(root)
        .into_iter()
        .filter(|s| {
            s.dir
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .and_then(|n| n.strip_prefix(&prefix).map(str::to_string))
                .is_some_and(|rest| rest.len() == 9 && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    let drop = autos.len().saturating_sub(keep.max(1));
    for s in autos.drain(..drop) {
        let name = s
            .dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let gone = root.join(format!(
            ".{name}.del-{:020}-{}",
            now_nanos(),
            std::process::id()
        ));
        fs::rename(&s.dir, &gone)
            .map_err(|e| format!("{}: cannot remove: {e}", s.dir.display()))?;
        fs::remove_dir_all(&gone).map_err(|e| format!("{}: cannot remove: {e}", gone.display()))?;
    }
    Ok(())
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut f = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Hidden folders left by saves that were cut off, never another live writer's: temporary and
/// set-aside folders of writers that are gone (a set-aside one only once its save stands
/// again), folders being removed, and any temporary folder older than a day (no save takes
/// that long; the writer's id was taken by another process since).
fn clean_leftovers(parent: &Path, name: &str) {
    let Ok(rd) = fs::read_dir(parent) else { return };
    let stands = parent.join(name).exists();
    let now = now_nanos();
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().to_string();
        let Some((save, kind, time, pid)) = hidden_part_pid(&n) else {
            continue;
        };
        let gone = !writer_alive(pid);
        let stale = now.saturating_sub(time) > 86_400 * 1_000_000_000;
        let remove = match kind {
            "del" => true,
            "tmp" => (gone && pid != std::process::id()) || stale,
            _ => save == name && stands && (gone || pid == std::process::id()),
        };
        if remove {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Swaps two folders in one step (Linux's `renameat2` with `RENAME_EXCHANGE`): the save's name
/// never stands empty, and of two writers of one name the last swap wins whole. `Ok(false)`
/// where the system or file system cannot (the caller renames in two steps instead).
fn exchange(a: &Path, b: &Path) -> Result<bool, String> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).ok();
        let (Some(ca), Some(cb)) = (c(a), c(b)) else {
            return Ok(false);
        };
        // SAFETY: two NUL-terminated paths, relative to the current folder.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                ca.as_ptr(),
                libc::AT_FDCWD,
                cb.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if r == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => Ok(false),
            _ => Err(format!(
                "{}: cannot put the new save in place: {e}",
                b.display()
            )),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (a, b);
        Ok(false)
    }
}

/// Writes a save atomically into `dir`: into a hidden folder of this writer's own, synced, then
/// swapped into place (or, where folders cannot be swapped, the old save moved aside and the new
/// one renamed in). A write that fails removes what it wrote; a kill leaves the old save or the
/// new one whole, and its hidden folder is removed by the next writer once this one is gone.
pub fn write_save(dir: &Path, data: &SaveData) -> Result<(), String> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| format!("{}: not a folder name", dir.display()))?;
    let parent = dir.parent().unwrap_or(Path::new(".")).to_path_buf();
    fs::create_dir_all(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    recover(dir);
    clean_leftovers(&parent, &name);
    let hidden = |kind: &str| {
        parent.join(format!(
            ".{name}.{kind}-{:020}-{}",
            now_nanos(),
            std::process::id()
        ))
    };
    let tmp = hidden("tmp");
    if let Err(e) = write_parts(&tmp, data).and_then(|()| put_in_place(&tmp, dir, &hidden)) {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    sync_dir(&parent);
    clean_leftovers(&parent, &name);
    Ok(())
}

/// Every part of a save into the folder `tmp`, each file and the folders synced.
fn write_parts(tmp: &Path, data: &SaveData) -> Result<(), String> {
    fs::create_dir_all(tmp.join("agents")).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let header = format!("written by {} (save format {FORMAT})", data.meta.written_by);
    write_synced(
        &tmp.join("meta.ron"),
        ron_text(&data.meta, 2, &header).as_bytes(),
    )?;
    write_synced(&tmp.join("scenario.ron"), data.scenario_text.as_bytes())?;
    write_synced(&tmp.join("map.ron"), data.map_text.as_bytes())?;
    write_synced(
        &tmp.join("config.ron"),
        ron_text(&data.config, 4, "the settings of the run").as_bytes(),
    )?;
    write_synced(
        &tmp.join("world.ron"),
        ron_text(
            &data.world,
            4,
            "object states, conversations, the player's chat",
        )
        .as_bytes(),
    )?;
    for (i, a) in data.agents.iter().enumerate() {
        write_synced(
            &tmp.join("agents").join(agent_file(i, &a.name)),
            ron_text(a, 5, &a.name).as_bytes(),
        )?;
    }
    write_synced(
        &tmp.join("embeddings.bin"),
        &encode_embeddings(&data.embeddings),
    )?;
    write_synced(
        &tmp.join("movement.jsonl"),
        data.movement.to_jsonl().as_bytes(),
    )?;
    sync_dir(&tmp.join("agents"));
    sync_dir(tmp);
    Ok(())
}

/// The written folder `tmp` made the save `dir`. Where a save of that name stands, the two are
/// swapped in one step and the old one (now at `tmp`) removed; where the system cannot swap,
/// the old one is moved aside first and put back if the new one cannot take its place. Another
/// writer putting its own save in place at the same moment makes this one try again, at most
/// a few times, then fail saying so.
fn put_in_place(tmp: &Path, dir: &Path, hidden: &dyn Fn(&str) -> PathBuf) -> Result<(), String> {
    for _ in 0..5 {
        if !dir.exists() {
            match fs::rename(tmp, dir) {
                Ok(()) => return Ok(()),
                // Another writer's save took the name in between: swap with it instead.
                Err(_) if dir.exists() => continue,
                Err(e) => return Err(format!("{}: {e}", dir.display())),
            }
        }
        if exchange(tmp, dir)? {
            // `tmp` now holds the save replaced.
            let _ = fs::remove_dir_all(tmp);
            return Ok(());
        }
        // Two renames: the old save aside, the new one in. A kill between them leaves the old
        // one aside, and `recover` puts it back at the next read, list or write.
        let aside = hidden("old");
        match fs::rename(dir, &aside) {
            Ok(()) => {}
            Err(_) if !dir.exists() => continue,
            Err(e) => return Err(format!("{}: cannot move aside: {e}", dir.display())),
        }
        if let Err(e) = fs::rename(tmp, dir) {
            let _ = fs::rename(&aside, dir);
            return Err(format!("{}: {e}", dir.display()));
        }
        let _ = fs::remove_dir_all(&aside);
        return Ok(());
    }
    Err(format!(
        "{}: another program kept saving under this name at the same moment; this save was not written (save under another name)",
        dir.display()
    ))
}

/// Copies a save under a new name (the copy is written atomically like a save).
pub fn fork(root: &Path, from: &str, to: &str) -> Result<PathBuf, String> {
    check_user_name(to)?;
    let mut data = read_named(root, from, None)?.data;
    data.meta.name = to.to_string();
    let dir = root.join(to);
    if dir.exists() {
        return Err(format!("{}: a save of that name exists", dir.display()));
    }
    write_save(&dir, &data)?;
    Ok(dir)
}
