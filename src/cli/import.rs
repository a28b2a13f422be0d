//! `import` and `export`: towns and casts in the formats of the original Generative Agents,
//! converted to ours (each written file is loaded back as a check) and our towns written in
//! theirs.

use super::{ExportCommand, ImportCommand, fail};
use crate::config::GameConfig;
use std::path::Path;

/// `import map` and `import scenario`.
pub(super) fn import(command: ImportCommand) -> i32 {
    match command {
        ImportCommand::Map { folder, out } => import_map(&folder, &out),
        ImportCommand::Scenario { folder, map, out } => import_scenario(&folder, &map, &out),
    }
}

/// `export map`.
pub(super) fn export(command: ExportCommand) -> i32 {
    match command {
        ExportCommand::Map { map, out } => export_map(&map, &out),
    }
}

/// `import map`: the original's matrix folder or Tiled map to a map file of ours.
fn import_map(folder: &Path, out: &Path) -> i32 {
    let source = if folder.is_dir() || crate::sim::map::tiled::is_tiled_file(folder) {
        crate::sim::map::load_map_reporting(folder)
    } else {
        Err(crate::data_error::DataError::new(
            folder,
            0,
            "",
            "not a matrix folder nor a Tiled map (.tmj, .json, .tmx)",
        ))
    };
    match source {
        Ok((map, report)) => {
            println!("read:");
            print!("{report}");
            let text = crate::sim::map::write_ron_beside(
                &map,
                &format!(
                    "Imported by `simulacra import map` from {}.\nFormat: maps/README.md.",
                    folder.display()
                ),
                Some(out.parent().unwrap_or(Path::new(""))),
            );
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = std::fs::create_dir_all(dir);
            }
            // The written file must load back as the same town.
            match std::fs::write(out, &text)
                .map_err(|e| format!("{}: {e}", out.display()))
                .and_then(|_| crate::sim::map::load_map(out).map_err(|e| e.to_string()))
            {
                Ok(_) => {
                    println!("wrote {}", out.display());
                    0
                }
                Err(e) => fail(e),
            }
        }
        Err(e) => fail(e.to_string()),
    }
}

/// `import scenario`: the original's base simulation folder to a scenario of ours on `map`.
fn import_scenario(folder: &Path, map: &str, out: &Path) -> i32 {
    let map_path = crate::data::resolve_data("maps", map);
    let result = crate::sim::map::load_map(&map_path)
        .map_err(|e| e.to_string())
        .and_then(|m| {
            // A bundled map keeps its name; a path becomes absolute, so the scenario
            // finds it from wherever the scenario is written.
            let bundled = map_path.starts_with(crate::data::data_root().join("maps"));
            let map_ref = match std::fs::canonicalize(&map_path) {
                Ok(p) if !bundled => p.display().to_string(),
                _ => map.to_string(),
            };
            crate::import::import_people(folder, &m, &map_ref).map_err(|e| e.to_string())
        });
    match result {
        Ok((scenario, report)) => {
            println!("read:");
            print!("{report}");
            let text = crate::import::scenario_text(
                &scenario,
                &format!(
                    "Imported by `simulacra import scenario` from {}.\nFormat: config/README.md (scenarios).",
                    folder.display()
                ),
            );
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = std::fs::create_dir_all(dir);
            }
            match std::fs::write(out, &text) {
                Ok(()) => {
                    // The written scenario must load with its map.
                    match crate::SimPlugin::load(
                        &out.display().to_string(),
                        None,
                        GameConfig::default(),
                    ) {
                        Ok(_) => {
                            println!("wrote {}", out.display());
                            0
                        }
                        Err(e) => fail(format!("the written scenario does not load: {e}")),
                    }
                }
                Err(e) => fail(format!("{}: {e}", out.display())),
            }
        }
        Err(e) => fail(e),
    }
}

/// `export map`: a map of ours to the original's matrix folder.
fn export_map(map: &str, out: &Path) -> i32 {
    let path = crate::data::resolve_data("maps", map);
    match crate::sim::map::load_map(&path)
        .map_err(|e| e.to_string())
        .and_then(|m| crate::sim::map::original::export_matrix(&m, out))
    {
        Ok(files) => {
            println!(
                "wrote the matrix folder {} ({} files); open it with the original by copying it over environment/frontend_server/static_dirs/assets/the_ville/matrix/",
                out.display(),
                files.len()
            );
            0
        }
        Err(e) => fail(e),
    }
}
