//! Where bundled data lives: the data folder (`maps/`, `config/`, `models/`) and how a name or a
//! path from a config or the command line becomes a file. The bottom layer with [`crate::data_error`]:
//! it uses nothing else of the crate.

use std::path::{Path, PathBuf};

/// The folders tried for the data folder, in order, each with why it is tried:
/// `$SIMULACRA_HOME`, the current folder, the folder of the executable and its parents (an
/// unpacked release or `target/debug`), and the source folder this binary was built from.
pub fn data_root_candidates() -> Vec<(PathBuf, &'static str)> {
    let mut out = Vec::new();
    if let Ok(p) = std::env::var("SIMULACRA_HOME") {
        out.push((PathBuf::from(p), "$SIMULACRA_HOME"));
        return out;
    }
    if let Ok(cwd) = std::env::current_dir() {
        out.push((cwd, "the current folder"));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        for d in dir.ancestors().take(4) {
            out.push((d.to_path_buf(), "the program's folder"));
        }
    }
    out.push((
        PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        "the folder it was built from",
    ));
    out
}

fn is_data_root(p: &Path) -> bool {
    p.join("maps").is_dir() && p.join("config").is_dir()
}

/// The data folder: the first of [`data_root_candidates`] holding `maps/` and `config/`
/// (`$SIMULACRA_HOME` is taken as it is). Errors list every folder looked in.
pub fn find_data_root() -> Result<PathBuf, String> {
    first_data_root(&data_root_candidates())
}

/// The first of `candidates` that is a data folder (`$SIMULACRA_HOME` taken as it is), or an
/// error listing every folder looked in.
fn first_data_root(candidates: &[(PathBuf, &'static str)]) -> Result<PathBuf, String> {
    if let Some((p, "$SIMULACRA_HOME")) = candidates.first() {
        return Ok(p.clone());
    }
    for (p, _) in candidates {
        if is_data_root(p) {
            return Ok(p.clone());
        }
    }
    Err(format!(
        "no data folder (one with maps/ and config/) found; looked in {} (set SIMULACRA_HOME to the folder holding them)",
        candidates
            .iter()
            .map(|(p, why)| format!("{} ({why})", p.display()))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The data folder ([`find_data_root`]), or the current folder when none is found (a file
/// asked for there is then reported missing, with [`data_root_hint`] saying where we looked).
pub fn data_root() -> PathBuf {
    find_data_root().unwrap_or_else(|_| std::env::current_dir().unwrap_or_default())
}

/// Empty when the data folder was found; else where it was looked for, to append to an error
/// about a missing bundled file.
pub fn data_root_hint() -> String {
    match find_data_root() {
        Ok(_) => String::new(),
        Err(e) => format!(" ({e})"),
    }
}

/// A path from a config: absolute, or relative to the current folder when it exists there,
/// else relative to the data folder.
pub fn resolve_path(p: &str) -> PathBuf {
    let path = Path::new(p);
    if path.is_absolute() || path.exists() {
        path.to_path_buf()
    } else {
        data_root().join(path)
    }
}

/// A bundled name ("smallville") or a path ("my/town.ron") → a file path.
pub fn resolve_data(kind_dir: &str, name_or_path: &str) -> PathBuf {
    let p = Path::new(name_or_path);
    if p.extension().is_some() || p.components().count() > 1 || p.exists() {
        return p.to_path_buf();
    }
    data_root()
        .join(kind_dir)
        .join(format!("{name_or_path}.ron"))
}

/// Writes a file whole or not at all: through a temporary beside it (`<name>.tmp-write`), synced
/// to disk, then renamed over the file, so a run killed while writing keeps the previous file.
/// The folder is made when missing. Errors name the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let tmp = path.with_extension("tmp-write");
    let mut f = std::fs::File::create(&tmp).map_err(fail)?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

/// The largest text file read whole: maps, scenarios, configs, prompts, history and command
/// files, a save's parts (a day of a thousand residents writes agent files of a few MB each).
pub const MAX_TEXT_BYTES: u64 = 256 * 1024 * 1024;

/// Reads a file that a user or another program made, whole, with a limit: only a regular file
/// (a device such as `/dev/zero` or a FIFO would never end or never come), no larger than
/// `limit` bytes (checked before reading and again while reading, in case it grows), valid
/// UTF-8, and a byte-order mark at its start dropped. Errors say which of these failed.
pub fn read_bounded(path: &Path, limit: u64) -> Result<String, String> {
    let bytes = read_bytes_bounded(path, limit)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (byte {} is not valid)",
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// The bytes of a regular file of at most `limit` bytes (see [`read_bounded`]).
pub fn read_bytes_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let (f, len) = open_bounded(path, limit)?;
    let mut bytes = Vec::with_capacity(len as usize);
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "grew past the {limit} bytes read from such a file while it was read"
        ));
    }
    Ok(bytes)
}

/// Opens a regular file of at most `limit` bytes, for a reader that streams it (checked
/// before it is opened: a FIFO would wait, a device never end); with its length.
pub fn open_bounded(path: &Path, limit: u64) -> Result<(std::fs::File, u64), String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(if meta.is_dir() {
            "is a folder, not a file".into()
        } else {
            "not a regular file (a device, a FIFO or a socket): refused".into()
        });
    }
    if meta.len() > limit {
        return Err(format!(
            "{} bytes: larger than the {limit} bytes read from such a file",
            meta.len()
        ));
    }
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    Ok((f, meta.len()))
}

/// [`read_bounded`] with [`MAX_TEXT_BYTES`], the error starting with the file's path.
pub fn read_text(path: &Path) -> Result<String, String> {
    read_bounded(path, MAX_TEXT_BYTES).map_err(|e| format!("{}: cannot read: {e}", path.display()))
}

/// [`read_text`] of a file that may not be there yet: `None` when it is not (nor anything else
/// by its name), else its text or the error naming it. For the files of a folder another run
/// or a person may have left (a lab's data, its lock and records): a FIFO or a device there is
/// refused, not waited on.
pub fn read_if_there(path: &Path) -> Result<Option<String>, String> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => read_text(path).map(Some),
    }
}

/// Every string in a value read from a file made safe as [`clean_text`] makes one (through its
/// JSON form; a value that does not go there and back comes back as it was).
pub fn clean_strings<T: serde::Serialize + serde::de::DeserializeOwned>(value: T) -> T {
    fn walk(v: &mut serde_json::Value) -> bool {
        match v {
            serde_json::Value::String(s) => match clean_text(s) {
                std::borrow::Cow::Owned(c) => {
                    *s = c;
                    true
                }
                std::borrow::Cow::Borrowed(_) => false,
            },
            serde_json::Value::Array(a) => a.iter_mut().fold(false, |any, x| walk(x) | any),
            serde_json::Value::Object(o) => o.values_mut().fold(false, |any, x| walk(x) | any),
            _ => false,
        }
    }
    let Ok(mut json) = serde_json::to_value(&value) else {
        return value;
    };
    if !walk(&mut json) {
        return value;
    }
    serde_json::from_value(json).unwrap_or(value)
}

/// Text from outside (a model's answer, a history file, a scenario) made safe to keep, print
/// and write: control characters (the terminal's escape sequences among them) are dropped,
/// except new lines and tabs; carriage returns become nothing. Borrowed when nothing changes.
pub fn clean_text(s: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if s.chars().any(bad) {
        std::borrow::Cow::Owned(s.chars().filter(|c| !bad(*c)).collect())
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_folder_is_the_first_with_maps_and_config_else_the_error_says_where_we_looked() {
        let base = std::env::temp_dir().join(format!("simulacra-data-{}", std::process::id()));
        let (empty, data) = (base.join("empty"), base.join("data"));
        for d in [&empty, &data.join("maps"), &data.join("config")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let found = first_data_root(&[
            (empty.clone(), "the current folder"),
            (data.clone(), "the program's folder"),
        ]);
        assert_eq!(found, Ok(data.clone()));
        let moved = first_data_root(&[
            (empty.clone(), "the current folder"),
            (base.join("gone"), "the folder it was built from"),
        ])
        .unwrap_err();
        assert!(
            moved.contains(&format!("{} (the current folder)", empty.display())),
            "{moved}"
        );
        assert!(
            moved.contains("gone (the folder it was built from)"),
            "{moved}"
        );
        assert!(moved.contains("SIMULACRA_HOME"), "{moved}");
        let home = first_data_root(&[(empty.clone(), "$SIMULACRA_HOME")]);
        assert_eq!(home, Ok(empty), "$SIMULACRA_HOME is taken as it is");
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn files_are_read_with_a_limit_and_devices_are_refused() {
        let dir = std::env::temp_dir().join(format!("simulacra-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.ron");
        std::fs::write(&f, "\u{feff}(a: 1)").unwrap();
        assert_eq!(
            read_bounded(&f, 100).unwrap(),
            "(a: 1)",
            "the byte-order mark is dropped"
        );
        let e = read_bounded(&f, 4).unwrap_err();
        assert!(e.contains("larger than the 4 bytes"), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let e = read_bounded(&dir, 100).unwrap_err();
        assert!(e.contains("folder"), "{e}");
        std::fs::write(&f, [b'a', 0xff, b'b']).unwrap();
        assert!(read_bounded(&f, 100).unwrap_err().contains("UTF-8"));
        let e = read_text(&dir.join("none.ron")).unwrap_err();
        assert!(e.contains("none.ron: cannot read"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn control_characters_are_dropped_but_lines_and_tabs_kept() {
        assert_eq!(
            clean_text("a\u{1b}]0;owned\u{7}b\r\n\tc\u{9b}"),
            "a]0;ownedb\n\tc"
        );
        assert!(matches!(
            clean_text("plain text"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
