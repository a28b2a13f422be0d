//! The town file format (`maps/*.ron`, documented in `maps/README.md`) and its validation.
//! Every check names the file, the line and the field of the mistake. The sectors, arenas,
//! objects and spawn points are checked as they are painted on the map in `paint.rs`; a town is
//! written back as a map file in `write.rs`. The checks every town passes, whatever it was read
//! from, are here too ([`finish`]).

mod paint;
mod write;

pub(crate) use write::LEGEND;
pub use write::{write_ron, write_ron_beside};

use super::NONE;
use super::build::finish;
use super::objects::{OBJECT_KINDS, ObjectKind, added_kind};
use super::tiled::absolute;
use super::{CellTown, Rect, Terrain, TiledArt, WorldMap};
use crate::data_error::{DataError, SourceLines};
use paint::Painter;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The file as written.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MapFile {
    pub(crate) world: String,
    pub(crate) width: i32,
    pub(crate) height: i32,
    /// Whether furniture blocks walking (default); `false` for towns whose walls and
    /// furniture are all in the terrain, as in towns drawn for the original.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub(crate) objects_block: bool,
    /// Object kinds this town adds to the catalogue (drawn with a generic picture; they never
    /// block). A kind neither here nor in the catalogue is an error, so typos are caught.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) new_kinds: Vec<String>,
    /// A Tiled map whose art layers draw this town (relative to this file, or absolute): what
    /// `simulacra import map` of a Tiled map writes, so the converted town keeps its pictures.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "plain_string"
    )]
    pub(crate) art: Option<String>,
    pub(crate) legend: BTreeMap<char, Terrain>,
    pub(crate) terrain: Vec<String>,
    pub(crate) sectors: Vec<SectorFile>,
}

/// `Some("x")` written as `"x"` (the reader takes a bare value for an option).
fn plain_string<S: serde::Serializer>(v: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v.as_deref().unwrap_or_default())
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SectorFile {
    pub(crate) name: String,
    pub(crate) rect: Rect,
    /// More rectangles of the same sector (a sector of any shape is a union of rectangles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) more: Vec<Rect>,
    pub(crate) arenas: Vec<ArenaFile>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArenaFile {
    pub(crate) name: String,
    pub(crate) rect: Rect,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) more: Vec<Rect>,
    #[serde(default)]
    pub(crate) objects: Vec<ObjectFile>,
    /// Named spawn points in this arena, such as `("sp-A", (3, 2))`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) spawns: Vec<(String, (i32, i32))>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ObjectFile {
    pub(crate) kind: String,
    pub(crate) rect: Rect,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) more: Vec<Rect>,
}

/// Loads and validates a town file.
pub(crate) fn load_ron_map(path: &Path) -> Result<WorldMap, DataError> {
    let src = crate::data::read_bounded(path, crate::data::MAX_TEXT_BYTES)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the file: {e}")))?;
    parse_map(path, &src)
}

/// The art a map file names. A Tiled file that is gone or does not fit the town is not an
/// error (a saved game must still open): the art then has no layers, our own art is drawn, and
/// its note says why.
fn art_named(path: &Path, art: &str, map: &WorldMap) -> TiledArt {
    let dir = path.parent().unwrap_or(Path::new(""));
    let file = dir.join(art);
    let empty = |why: String| TiledArt {
        source: absolute(&file),
        width: map.width,
        height: map.height,
        tile_width: 32,
        tile_height: 32,
        tilesets: Vec::new(),
        layers: Vec::new(),
        notes: vec![format!("{}: art {art:?}: {why}", path.display())],
    };
    match super::tiled::load_art(&file) {
        Ok(a) if (a.width, a.height) == (map.width, map.height) => a,
        Ok(a) => empty(format!(
            "the Tiled map is {}×{} tiles but the town is {}×{}; our own art is drawn",
            a.width, a.height, map.width, map.height
        )),
        Err(e) => empty(format!("{e}; our own art is drawn")),
    }
}

/// Parses and validates town text (used by tests with in-memory files too).
pub fn parse_map(path: &Path, src: &str) -> Result<WorldMap, DataError> {
    let file: MapFile = crate::data_error::parse_ron(path, src)?;
    let art = file.art.clone();
    let mut map = build(path, src, file)?;
    if let Some(art) = art {
        map.art = Some(Arc::new(art_named(path, &art, &map)));
    }
    Ok(map)
}

/// A parsed map file made into a town, in steps: its size, its terrain rows, its kinds, its
/// places painted sector by sector ([`Painter`]), then the checks every town passes ([`finish`]).
fn build(path: &Path, src: &str, file: MapFile) -> Result<WorldMap, DataError> {
    let lines = SourceLines::new(src);
    // The world is the first part of every address (`world:sector:arena:object`): a ':' in it
    // would cut every address the scenario names, and the error would blame the scenario.
    if file.world.trim().is_empty() || file.world.contains(':') {
        return Err(DataError::new(
            path,
            lines.line_near("world", 0),
            "world",
            format!(
                "bad world name {:?} (empty or has ':'; it begins every address, world:sector:arena:object)",
                file.world
            ),
        ));
    }
    let (w, h) = (file.width, file.height);
    if !(1..=1024).contains(&w) || !(1..=1024).contains(&h) {
        return Err(DataError::new(
            path,
            lines.line_near("width", 0),
            "width",
            format!("size {w}×{h} must be 1..=1024 each"),
        ));
    }
    let (terrain, terrain_at) = read_terrain(path, &lines, &file)?;
    let kinds = read_kinds(path, &lines, &file)?;
    let mut painter = Painter::new(path, &lines, &file, terrain, kinds, terrain_at);
    for (si, s) in file.sectors.iter().enumerate() {
        painter.read_sector(si, s)?;
    }

    let Painter {
        terrain,
        kinds,
        cell_sector,
        cell_arena,
        cell_object,
        sectors,
        arenas,
        spawns,
        ..
    } = painter;
    let town = CellTown {
        world: file.world,
        width: w,
        height: h,
        terrain,
        cell_sector,
        cell_arena,
        cell_object,
        sectors,
        arenas,
        kinds,
        spawns,
        objects_block: file.objects_block,
    };
    finish(path, town, |town, a, msg| {
        let arena = &town.arenas[a];
        let ai = town.sectors[arena.sector]
            .arenas
            .iter()
            .position(|x| *x == a)
            .unwrap_or(0);
        DataError::new(
            path,
            arena.line,
            format!("sectors[{}].arenas[{ai}]", arena.sector),
            msg,
        )
    })
}

/// The terrain rows: one string per row, in the order they appear in the file, each tile a
/// code of the legend. Returns the tiles and where `terrain` starts in the text.
fn read_terrain(
    path: &Path,
    lines: &SourceLines,
    file: &MapFile,
) -> Result<(Vec<Terrain>, usize), DataError> {
    let err = |line: usize, field: String, msg: String| DataError::new(path, line, field, msg);
    let (w, h) = (file.width, file.height);
    let terrain_at = lines.find_from("terrain", 0).map(|(_, o)| o).unwrap_or(0);
    if file.terrain.len() != h as usize {
        return Err(err(
            lines.line_of_offset(terrain_at),
            "terrain".into(),
            format!("has {} rows but height is {h}", file.terrain.len()),
        ));
    }
    let mut terrain = Vec::with_capacity((w * h) as usize);
    let mut cursor = terrain_at;
    for (row, text) in file.terrain.iter().enumerate() {
        let off = lines.offset_of_quoted(text, cursor);
        cursor = off + 1;
        let line = lines.line_of_offset(off);
        let n = text.chars().count();
        if n != w as usize {
            return Err(err(
                line,
                format!("terrain[{row}]"),
                format!("row has {n} tiles but width is {w}"),
            ));
        }
        for (col, ch) in text.chars().enumerate() {
            match file.legend.get(&ch) {
                Some(t) => terrain.push(*t),
                None => {
                    return Err(err(
                        line,
                        format!("terrain[{row}]"),
                        format!(
                            "bad tile code '{ch}' at column {col} (x {col}, y {row}); the legend knows {}",
                            file.legend
                                .keys()
                                .map(|c| format!("'{c}'"))
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                    ));
                }
            }
        }
    }
    Ok((terrain, terrain_at))
}

/// The kinds table: the catalogue, then the kinds this town adds (named once, without ':').
fn read_kinds(
    path: &Path,
    lines: &SourceLines,
    file: &MapFile,
) -> Result<Vec<ObjectKind>, DataError> {
    let err = |line: usize, field: String, msg: String| DataError::new(path, line, field, msg);
    let mut kinds = OBJECT_KINDS.to_vec();
    let new_kinds_at = lines.find_from("new_kinds", 0).map(|(_, o)| o).unwrap_or(0);
    for (i, name) in file.new_kinds.iter().enumerate() {
        let line = lines.line_of_quoted(name, new_kinds_at);
        if name.trim().is_empty() || name.contains(':') {
            return Err(err(
                line,
                format!("new_kinds[{i}]"),
                format!("bad object kind {name:?} (empty or has ':')"),
            ));
        }
        if kinds.iter().any(|k| k.name == name) {
            return Err(err(
                line,
                format!("new_kinds[{i}]"),
                format!("object kind '{name}' is already known"),
            ));
        }
        kinds.push(added_kind(name));
    }
    Ok(kinds)
}
