//! Towns drawn in Tiled for the original Generative Agents: a Tiled map (`.tmj`/`.json` or
//! `.tmx`) whose block layers (`Collisions`, `Sector Blocks`, `Arena Blocks`,
//! `Object Interaction Blocks`, `Spawning Blocks`) hold the ids of the `special_blocks`
//! legends beside it, read into a [`WorldMap`] with the same build and checks as the matrix
//! folder exported from it ([`original`](super::original)). The other tile layers are the
//! town's own art, kept as plain data ([`TiledArt`]) for the window to draw; nothing here
//! decodes an image.
//!
//! Readers: `.tmx` (and `.tsx` tilesets) with the `tiled` crate, after a pass of `quick-xml`
//! for what that crate keeps private or does not check (the map's size, before any layer is
//! unpacked; each tileset's `firstgid`; each layer's raw gids, so a short layer is an error
//! rather than a panic), in `tmx.rs`; `.tmj`/`.json` with serde structs for Tiled's documented
//! JSON format (no maintained crate reads it), in `tmj.rs`. Both give the document of
//! `doc.rs`; the art is in `art.rs`. See `docs/design/original-formats.md` §1.6.

mod art;
mod doc;
mod tmj;
mod tmx;

pub use art::{ArtLayer, ArtTileset, MAX_DRAWN_TILE, TiledArt};

use super::WorldMap;
use super::build::build_town;
use super::layers::{GID_MASK, ImportReport};
use super::layers::{Layer, Layers, Origin, legend_path, read_legends, read_world};
use crate::data_error::DataError;
use crate::data_error::SourceLines;
use art::art_of;
use doc::Doc;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tmj::read_tmj;
use tmx::read_tmx;

/// Whether a path names a Tiled map file (`.tmj`, `.json` or `.tmx`).
pub fn is_tiled_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["tmj", "json", "tmx"].contains(&e.to_ascii_lowercase().as_str()))
}

/// Layers of the convention that carry meaning, not pictures: never drawn.
const BLOCK_LAYERS: [&str; 7] = [
    "Collisions",
    "Sector Blocks",
    "Arena Blocks",
    "Object Interaction Blocks",
    "Spawning Blocks",
    "World Blocks",
    "Special Blocks Registry",
];

/// A Tiled layer name as the convention matches it: spaces at the ends do not count (the
/// original's own map has `"Interior Furniture L2 "`), nor does case.
fn same_name(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// Tiled's flip bits: horizontal, vertical, diagonal (an x/y swap, applied first).
pub const FLIP_H: u32 = 0x8000_0000;
/// See [`FLIP_H`].
pub const FLIP_V: u32 = 0x4000_0000;
/// See [`FLIP_H`].
pub const FLIP_D: u32 = 0x2000_0000;

/// Reads only the art of a Tiled map (for a map file of ours that names it in `art:`).
pub fn load_art(path: &Path) -> Result<TiledArt, DataError> {
    let doc = read_doc(path)?;
    art_of(&doc)
}

/// A path made absolute (against the working folder), or as it is when that fails.
pub(super) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The folder of a file, made absolute (so image paths stay right from any working folder).
fn absolute_dir(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    absolute(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })
}

// ------------------------------------------------------------------------------------------
// The convention: block layers and legends into a town; the rest is art.
// ------------------------------------------------------------------------------------------

/// Where the `special_blocks/` legends of a Tiled map are: beside it, in `matrix/` beside it,
/// in its parent folder, or in `../matrix/` (the original's `assets/<town>/visuals/` map with
/// `assets/<town>/matrix/special_blocks/`). Returns the folder holding `special_blocks/`.
pub fn legends_dir(map: &Path) -> Result<PathBuf, DataError> {
    let dir = absolute_dir(map);
    let mut tried = Vec::new();
    let mut candidates = vec![dir.clone(), dir.join("matrix")];
    if let Some(parent) = dir.parent() {
        candidates.push(parent.to_path_buf());
        candidates.push(parent.join("matrix"));
    }
    for c in candidates {
        let sb = c.join("special_blocks");
        if sb.is_dir() {
            return Ok(c);
        }
        tried.push(sb.display().to_string());
    }
    Err(DataError::new(
        map,
        0,
        "",
        format!(
            "no special_blocks/ folder with the legends (sector_blocks.csv, arena_blocks.csv, game_object_blocks.csv, spawning_location_blocks.csv) beside the map; looked in {}",
            tried.join(", ")
        ),
    ))
}

/// Reads a Tiled map that follows the original's layer convention into a town, with its art.
pub fn load_tiled(path: &Path) -> Result<(WorldMap, ImportReport), DataError> {
    let doc = read_doc(path)?;
    let mut report = ImportReport::default();
    let layers = town_layers(path, &doc, &mut report)?;
    let (mut map, mut report) = build_town(layers, report)?;

    let art = art_of(&doc)?;
    report.read.push(art_line(&art));
    report.notes.extend(doc.notes.iter().cloned());
    report.notes.extend(art.notes.iter().cloned());
    map.art = Some(Arc::new(art));
    Ok((map, report))
}

/// The block layers, by name: each one's index among the map's layers, and whether the map has
/// a `Spawning Blocks` layer (the only one it may lack). A layer missing or named twice is an
/// error.
fn find_block_layers(path: &Path, doc: &Doc) -> Result<([usize; 5], bool), DataError> {
    let find = |name: &str| -> Result<Option<usize>, DataError> {
        let hits: Vec<usize> = doc
            .layers
            .iter()
            .enumerate()
            .filter(|(_, l)| same_name(&l.name, name))
            .map(|(i, _)| i)
            .collect();
        if hits.len() > 1 {
            return Err(DataError::new(
                path,
                doc.layers[hits[1]].line,
                format!("layer '{}'", doc.layers[hits[1]].name),
                format!(
                    "there are {} layers named '{name}'; the town needs exactly one",
                    hits.len()
                ),
            ));
        }
        Ok(hits.first().copied())
    };
    let mut index = [0usize; 5];
    let mut has_spawns = true;
    for l in Layer::ALL {
        match find(l.tiled_name())? {
            Some(i) => index[l as usize] = i,
            None if l == Layer::Spawn => has_spawns = false,
            None => {
                return Err(DataError::new(
                    path,
                    0,
                    format!("layer '{}'", l.tiled_name()),
                    format!(
                        "the map has no '{}' tile layer; a town drawn for the original has Collisions, Sector Blocks, Arena Blocks, Object Interaction Blocks and Spawning Blocks (this map's tile layers: {})",
                        l.tiled_name(),
                        doc.layers
                            .iter()
                            .map(|l| format!("'{}'", l.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    Ok((index, has_spawns))
}

/// The block layers' cells and the legends beside the map, as [`build_town`] takes them; the
/// world is named by its legend, else by the map's `world` property, else after the file.
fn town_layers(path: &Path, doc: &Doc, report: &mut ImportReport) -> Result<Layers, DataError> {
    let (index, mut has_spawns) = find_block_layers(path, doc)?;
    let n = (doc.width * doc.height) as usize;
    let cells = Layer::ALL.map(|l| {
        if l == Layer::Spawn && !has_spawns {
            vec![0; n]
        } else {
            doc.layers[index[l as usize]]
                .gids
                .iter()
                .map(|g| g & GID_MASK)
                .collect()
        }
    });
    if !has_spawns {
        report
            .notes
            .push("no 'Spawning Blocks' layer: the town has no spawn points".into());
    }

    let dir = legends_dir(path)?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("the world")
        .to_string();
    let (fallback, why) = match &doc.world {
        Some(w) => (w.clone(), "from the map's `world` property"),
        None => (stem, "after the map file"),
    };
    let world = read_world(&dir, &fallback, why, report)?;
    let spawn_legend_there = legend_path(&dir, "spawning_location").is_file();
    if has_spawns && !spawn_legend_there && cells[Layer::Spawn as usize].iter().all(|c| *c == 0) {
        has_spawns = false; // an empty layer and no legend: nothing to read
    }
    let [sector_legend, arena_legend, object_legend, spawn_legend] =
        read_legends(&dir, has_spawns)?;
    report.read.push(format!(
        "legends from {}",
        dir.join("special_blocks").display()
    ));

    let mut lines = [0usize; 5];
    for l in Layer::ALL {
        if l != Layer::Spawn || has_spawns {
            lines[l as usize] = doc.layers[index[l as usize]].line;
        }
    }
    Ok(Layers {
        dir,
        origin: Origin::Tiled {
            file: path.to_path_buf(),
            lines,
        },
        world,
        width: doc.width,
        height: doc.height,
        cells,
        sector_legend,
        arena_legend,
        object_legend,
        spawn_legend,
        terrain: None,
        objects_block: false,
    })
}

/// The report's line on the art: the layers drawn (and how many above people), the tilesets
/// used, and the images missing.
fn art_line(art: &TiledArt) -> String {
    let missing = art.missing_images();
    format!(
        "art: {} layer(s) drawn ({} above people), {} tileset(s) used{}",
        art.layers.len(),
        art.layers.iter().filter(|l| l.above_people).count(),
        art.used_tilesets().len(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(
                "; {} image(s) missing, so the window draws our own art: {}",
                missing.len(),
                missing
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    )
}

/// Reads a Tiled map file (`.tmx`, or else Tiled's JSON) into a [`Doc`], each layer with the line
/// where it starts, every layer checked to hold the map's width × height cells.
fn read_doc(path: &Path) -> Result<Doc, DataError> {
    let src = crate::data::read_bounded(path, crate::data::MAX_TEXT_BYTES)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the file: {e}")))?;
    let is_tmx = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("tmx"));
    let mut doc = if is_tmx {
        read_tmx(path, &src)?
    } else {
        read_tmj(path, &src)?
    };
    // Where each layer starts, for errors found later.
    let lines = SourceLines::new(&src);
    let mut from = 0;
    for l in &mut doc.layers {
        let needle = if is_tmx {
            format!("name=\"{}\"", l.name)
        } else {
            serde_json::to_string(&l.name).unwrap_or_default()
        };
        if let Some((line, at)) = lines.find_from(&needle, from) {
            l.line = line;
            from = at + 1;
        }
    }
    let n = (doc.width * doc.height) as usize;
    for l in &doc.layers {
        if l.gids.len() != n {
            return Err(DataError::new(
                path,
                l.line,
                format!("layer '{}'", l.name),
                format!(
                    "has {} cells but the map is {}×{} = {n}",
                    l.gids.len(),
                    doc.width,
                    doc.height
                ),
            ));
        }
    }
    Ok(doc)
}
