//! `saves` (list the saves folder) and `fork` (copy a save under a new name).

use super::fail;
use crate::config::GameConfig;
use std::path::Path;

/// `fork`: copies the save `from` under the name `to` in the saves folder.
pub(super) fn fork(from: &str, to: &str, config: Option<&Path>) -> i32 {
    match GameConfig::load_or_default(config)
        .map_err(|e| e.to_string())
        .and_then(|c| crate::save::disk::fork(Path::new(&c.saves.dir), from, to))
    {
        Ok(dir) => {
            println!("forked {from} → {}", dir.display());
            0
        }
        Err(e) => fail(e),
    }
}

/// `saves`: the saves in the saves folder, newest last.
pub(super) fn list(config: Option<&Path>) -> i32 {
    match GameConfig::load_or_default(config) {
        Ok(c) => {
            println!("{}", crate::save::disk::describe(Path::new(&c.saves.dir)));
            0
        }
        Err(e) => fail(e.to_string()),
    }
}
