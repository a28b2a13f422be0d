//! The saves folder's names: what a save may be called, the hidden folders a save leaves while
//! it is written (`.<name>.<kind>-<time>-<pid>`), whose writer is still at work, and putting back
//! a save cut off between its two renames. Used by reading ([`super::read`]) and writing
//! ([`super`]).

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

/// A save name: letters, digits, `-`, `_` and `.`, not starting with a dot.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "bad save name {name:?}: use letters, digits, '-', '_' and '.', not starting with '.'"
        ))
    }
}

/// A name a player gives a save: a good name, and not one the game uses itself (`latest`
/// always means the newest save; `auto-…` saves are removed as newer autosaves come).
pub fn check_user_name(name: &str) -> Result<(), String> {
    check_name(name)?;
    if name == "latest" || name.starts_with("auto-") {
        return Err(format!(
            "{name:?} is kept for the game's own use (`latest` names the newest save, `auto-` the autosaves): choose another name"
        ));
    }
    Ok(())
}

/// Makes the saves folder if it is missing and checks that a save can be written into it (a
/// file is made and removed), so a long run learns at its start that it could not save.
pub fn check_writable(root: &Path) -> Result<(), String> {
    fs::create_dir_all(root)
        .map_err(|e| format!("{}: the saves folder cannot be made: {e}", root.display()))?;
    let probe = root.join(format!(".write-check-{}", std::process::id()));
    File::create(&probe)
        .and_then(|mut f| f.write_all(b"ok"))
        .map_err(|e| format!("{}: a save cannot be written there: {e}", root.display()))?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

/// A name made safe for a folder or file: ASCII letters, digits, `-` and `_` kept, anything else
/// `_` ("run" when nothing is left).
pub fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "run".into() } else { s }
}

/// The hidden folders a save leaves while it is written: `.<name>.<kind>-<20-digit time>-<pid>`
/// (`tmp` being written, `old` the save it replaces, `del` being removed). Returns (name, kind,
/// time) for one of ours.
pub(super) fn hidden_part(file_name: &str) -> Option<(&str, &str, u128)> {
    let rest = file_name.strip_prefix('.')?;
    // The kind is at the last `.<kind>-` (a save's name may hold dots and dashes itself).
    let i = rest.rfind('.')?;
    let (save, tail) = (&rest[..i], &rest[i + 1..]);
    let (kind, tail) = tail.split_once('-')?;
    let (time, pid) = tail.split_once('-')?;
    let well_formed = matches!(kind, "tmp" | "old" | "del")
        && time.len() == 20
        && time.bytes().all(|b| b.is_ascii_digit())
        && !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit());
    well_formed.then(|| Some((save, kind, time.parse().ok()?)))?
}

pub(super) fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// The name of an autosave.
pub fn autosave_name(base: &str, step: u64) -> String {
    format!("auto-{base}-{step:09}")
}

pub(super) fn sync_dir(path: &Path) {
    // Directories cannot be opened for syncing everywhere; where they can, this makes the
    // renames durable.
    if let Ok(d) = File::open(path) {
        let _ = d.sync_all();
    }
}

/// Whether the process that wrote a hidden folder may still be at work on it: it is this
/// process, or a process of that id is alive (another writer on the same saves folder: a
/// window and a headless run, two runs).
pub(super) fn writer_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // Signal 0 checks that the process exists; EPERM: it does, as another user's.
        // SAFETY: kill with signal 0 sends nothing.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// [`hidden_part`] with the writer's process id.
pub(super) fn hidden_part_pid(file_name: &str) -> Option<(&str, &str, u128, u32)> {
    let (save, kind, time) = hidden_part(file_name)?;
    let pid = file_name.rsplit('-').next()?.parse().ok()?;
    Some((save, kind, time, pid))
}

/// A save replaced while the program was killed between moving the old one aside and putting
/// the new one in place: puts back the one set aside last.
pub(super) fn recover(dir: &Path) {
    if dir.exists() {
        return;
    }
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return;
    };
    let name = name.to_string_lossy().to_string();
    let Ok(rd) = fs::read_dir(parent) else { return };
    let newest = rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            match hidden_part(&n) {
                Some((save, "old", time)) if save == name => Some((time, e.path())),
                _ => None,
            }
        })
        .max_by_key(|(time, _)| *time);
    if let Some((_, path)) = newest {
        let _ = fs::rename(path, dir);
        sync_dir(parent);
    }
}

/// File name of an agent's part.
pub fn agent_file(i: usize, name: &str) -> String {
    format!("{i:02}-{}.ron", slug(name).to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_folders_are_told_apart_by_their_exact_form() {
        let t = "00000001700000000000";
        assert_eq!(
            hidden_part(&format!(".day.old-{t}-42")),
            Some(("day", "old", 1_700_000_000_000))
        );
        assert_eq!(
            hidden_part(&format!(".a.old-x.tmp-{t}-7")).map(|h| (h.0, h.1)),
            Some(("a.old-x", "tmp"))
        );
        assert_eq!(
            hidden_part(&format!(".a.b-c.del-{t}-7")).map(|h| h.0),
            Some("a.b-c")
        );
        for bad in [
            ".day.old-12-42",
            "day.old-00000001700000000000-42",
            ".day.new-00000001700000000000-1",
            ".day.old-00000001700000000000-",
        ] {
            assert_eq!(hidden_part(bad), None, "{bad}");
        }
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("my-day_1.2").is_ok());
        for bad in ["", ".hidden", "a/b", "a b", "..", "x\n"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_user_name("latest").is_err() && check_user_name("auto-x-000000001").is_err());
        assert!(check_user_name("my-day").is_ok());
        assert_eq!(slug("the Ville, 3 residents"), "the_Ville__3_residents");
    }
}
