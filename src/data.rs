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
}
