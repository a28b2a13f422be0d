//! Towns made for the original Generative Agents: its "matrix" folder (`maze_meta_info.json`,
//! five one-row CSV layers in `maze/` and their legends in `special_blocks/`, exported from a
//! Tiled map) read into a [`WorldMap`], and any town of ours written back in that form.
//! The format, as the original's code reads it, is described in
//! `docs/design/original-formats.md`.
//!
//! Reading follows the original where it is lenient and harmless (the `", "` separators, a
//! legend's middle columns, Tiled's flip bits) and refuses what would make a broken town
//! (a ragged layer, ids missing from a legend, a legend id painted nowhere, an arena outside
//! every sector, a sector with no arena), naming the file and the row or cell.
//!
//! The layers and legends are read with the helpers of `layers.rs`, which Tiled maps share,
//! and made into a town by the shared build of `build.rs`; this file reads the matrix folder's
//! own files (`maze_meta_info.json`, `maze/*.csv`, `simulacra_terrain.csv`) and writes a whole
//! folder back ([`export_matrix`]).

use super::NONE;
use super::build::build_town;
use super::layers::{COLLISION_ID, GID_MASK, ImportReport};
use super::layers::{Layers, Origin, legend_path, read_legends, read_rows, read_world};
use super::{Terrain, WorldMap};
use crate::data_error::DataError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const WORLD_ID: u32 = 32134;
const FIRST_ID: u32 = 32135;
/// The file beside the layers that carries our own ground types (the original ignores it).
const TERRAIN_FILE: &str = "simulacra_terrain.csv";

/// The matrix folder at `path`: the folder itself when it holds `maze_meta_info.json`, or its
/// `matrix/` subfolder (so the original's `the_ville/` folder may be given too).
pub fn matrix_dir(path: &Path) -> Option<PathBuf> {
    [path.to_path_buf(), path.join("matrix")]
        .into_iter()
        .find(|d| d.join("maze_meta_info.json").is_file())
}

/// A layer (`maze/<name>_maze.csv`): `w × h` tile ids, row-major. The original writes one row
/// of `w × h` cells; a file with one line per map row is accepted too.
fn read_layer(dir: &Path, name: &str, w: i32, h: i32) -> Result<Vec<u32>, DataError> {
    let path = dir.join("maze").join(format!("{name}_maze.csv"));
    if !path.is_file() {
        return Err(DataError::new(
            &path,
            0,
            "",
            format!(
                "the {name} layer is missing (a matrix folder has maze/collision_maze.csv, sector_maze.csv, arena_maze.csv, game_object_maze.csv and spawning_location_maze.csv)"
            ),
        ));
    }
    let rows = read_rows(&path)?;
    let n = (w * h) as usize;
    let one_row = rows.len() == 1 && rows[0].1.len() == n;
    let per_row = rows.len() == h as usize && rows.iter().all(|(_, c)| c.len() == w as usize);
    if !one_row && !per_row {
        let total: usize = rows.iter().map(|(_, c)| c.len()).sum();
        let (line, msg) = if rows.len() <= 1 {
            (
                rows.first().map(|r| r.0).unwrap_or(0),
                format!(
                    "has {total} cells but the map is {w}×{h} = {n} (maze_meta_info.json); the original writes one row of width × height cells"
                ),
            )
        } else {
            let bad = rows
                .iter()
                .find(|(_, c)| c.len() != w as usize)
                .map(|r| r.0)
                .unwrap_or(rows[0].0);
            (
                bad,
                format!(
                    "is ragged: {} rows of {} cells (this row has {}); expected one row of {n} cells or {h} rows of {w}",
                    rows.len(),
                    rows.iter()
                        .map(|(_, c)| c.len().to_string())
                        .collect::<Vec<_>>()
                        .join("/")
                        .chars()
                        .take(60)
                        .collect::<String>(),
                    rows.iter()
                        .find(|(l, _)| *l == bad)
                        .map(|(_, c)| c.len())
                        .unwrap_or(0)
                ),
            )
        };
        return Err(DataError::new(&path, line, "", msg));
    }
    let mut out = Vec::with_capacity(n);
    for (line, cells) in &rows {
        for c in cells {
            let i = out.len();
            let (x, y) = (i as i32 % w, i as i32 / w);
            let id: u32 = c.parse().map_err(|_| {
                DataError::new(
                    &path,
                    *line,
                    format!("cell {i} (x {x}, y {y})"),
                    format!("{c:?} is not a tile id (a whole number, 0 for none)"),
                )
            })?;
            out.push(id & GID_MASK);
        }
    }
    Ok(out)
}

fn meta_int(meta: &serde_json::Value, path: &Path, key: &str) -> Result<i32, DataError> {
    meta.get(key)
        .and_then(serde_json::Value::as_i64)
        .filter(|v| (1..=1024).contains(v))
        .map(|v| v as i32)
        .ok_or_else(|| {
            DataError::new(
                path,
                0,
                key,
                format!(
                    "must be a whole number from 1 to 1024 (found {})",
                    meta.get(key)
                        .map(|v| v.to_string())
                        .unwrap_or_else(|| "nothing".into())
                ),
            )
        })
}

/// Reads the original's matrix folder (or a folder holding `matrix/`) into a town.
pub fn load_matrix(path: &Path) -> Result<(WorldMap, ImportReport), DataError> {
    let (layers, report) = read_matrix(path)?;
    build_town(layers, report)
}

/// The matrix folder's layers and legends, before the checks every town passes.
fn read_matrix(path: &Path) -> Result<(Layers, ImportReport), DataError> {
    let dir = matrix_dir(path).ok_or_else(|| {
        DataError::new(
            path,
            0,
            "",
            "not a matrix folder: no maze_meta_info.json here or in matrix/",
        )
    })?;
    let mut report = ImportReport::default();
    let meta_path = dir.join("maze_meta_info.json");
    let meta_text = crate::data::read_bounded(&meta_path, crate::data::MAX_TEXT_BYTES)
        .map_err(|e| DataError::new(&meta_path, 0, "", format!("cannot read the file: {e}")))?;
    let meta: serde_json::Value = serde_json::from_str(&meta_text)
        .map_err(|e| DataError::new(&meta_path, e.line(), "", format!("not valid JSON: {e}")))?;
    let w = meta_int(&meta, &meta_path, "maze_width")?;
    let h = meta_int(&meta, &meta_path, "maze_height")?;
    let n = (w * h) as usize;

    // The world's name comes from world_blocks.csv, as in the original.
    let meta_name = meta
        .get("world_name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("the world")
        .to_string();
    let world = read_world(&dir, &meta_name, "from maze_meta_info.json", &mut report)?;

    let collision = read_layer(&dir, "collision", w, h)?;
    let sector_ids = read_layer(&dir, "sector", w, h)?;
    let arena_ids = read_layer(&dir, "arena", w, h)?;
    let object_ids = read_layer(&dir, "game_object", w, h)?;
    let has_spawns = dir.join("maze/spawning_location_maze.csv").is_file()
        || legend_path(&dir, "spawning_location").is_file();
    let [sector_legend, arena_legend, object_legend, spawn_legend] =
        read_legends(&dir, has_spawns)?;
    let spawn_ids = if has_spawns {
        read_layer(&dir, "spawning_location", w, h)?
    } else {
        report
            .notes
            .push("no spawning_location layer: the town has no spawn points".into());
        vec![0; n]
    };

    let terrain = read_terrain(&dir, w, h, &mut report)?;
    let objects_block = meta
        .get("simulacra_objects_block")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    Ok((
        Layers {
            dir,
            origin: Origin::Matrix,
            world,
            width: w,
            height: h,
            cells: [collision, sector_ids, arena_ids, object_ids, spawn_ids],
            sector_legend,
            arena_legend,
            object_legend,
            spawn_legend,
            terrain,
            objects_block,
        },
        report,
    ))
}

/// Our ground types (`simulacra_terrain.csv`), when the matrix folder was written by us: one
/// code per tile of a `w`×`h` map.
fn read_terrain(
    dir: &Path,
    w: i32,
    h: i32,
    report: &mut ImportReport,
) -> Result<Option<Vec<Terrain>>, DataError> {
    let n = (w * h) as usize;
    let terrain_path = dir.join(TERRAIN_FILE);
    if !terrain_path.is_file() {
        return Ok(None);
    }
    let rows = read_rows(&terrain_path)?;
    let cells: Vec<&String> = rows.iter().flat_map(|(_, c)| c).collect();
    if cells.len() != n {
        return Err(DataError::new(
            &terrain_path,
            rows.first().map(|r| r.0).unwrap_or(0),
            "",
            format!("has {} cells but the map is {w}×{h} = {n}", cells.len()),
        ));
    }
    let mut out = Vec::with_capacity(n);
    for (i, c) in cells.iter().enumerate() {
        let (x, y) = (i as i32 % w, i as i32 / w);
        out.push(terrain_of_code(c).ok_or_else(|| {
            DataError::new(
                &terrain_path,
                rows[0].0,
                format!("cell {i} (x {x}, y {y})"),
                format!(
                    "{c:?} is not a ground code ({})",
                    TERRAIN_CODES
                        .iter()
                        .map(|(c, _)| *c)
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            )
        })?);
    }
    report.read.push(format!(
        "ground types from {TERRAIN_FILE} (written by simulacra export map)"
    ));
    Ok(Some(out))
}

/// Our ground types in `simulacra_terrain.csv`.
const TERRAIN_CODES: [(&str, Terrain); 8] = [
    ("grass", Terrain::Grass),
    ("path", Terrain::Path),
    ("water", Terrain::Water),
    ("tree", Terrain::Tree),
    ("wall", Terrain::Wall),
    ("door", Terrain::Door),
    ("floor", Terrain::Floor),
    ("tiles", Terrain::Tiles),
];

fn terrain_of_code(c: &str) -> Option<Terrain> {
    TERRAIN_CODES
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(c))
        .map(|(_, t)| *t)
}

fn code_of_terrain(t: Terrain) -> &'static str {
    TERRAIN_CODES
        .iter()
        .find(|(_, k)| *k == t)
        .map(|(c, _)| *c)
        .unwrap_or("grass")
}

/// Writes a town as the original's matrix folder: `out/maze_meta_info.json`, `out/maze/*.csv`,
/// `out/special_blocks/*.csv`, with the_ville's id scheme (collision 32125, so the original's
/// pathfinder runs unchanged), plus `simulacra_terrain.csv` (our ground types, which the
/// original ignores) so that importing the folder again gives the same town. Returns what it
/// wrote, one line each.
pub fn export_matrix(map: &WorldMap, out: &Path) -> Result<Vec<String>, String> {
    let kinds_used = painted_kinds(map);
    check_exportable(map, &kinds_used)?;
    let ids = ExportIds::new(map, kinds_used);
    let maze = export_cells(map, &ids);
    write_matrix(map, out, &ids, &maze)
}

/// A name the original's CSV legends can hold: no comma, line break or spaces at an end.
fn csv_safe(what: &str, name: &str) -> Result<(), String> {
    if name.contains([',', '\n', '\r']) || name.trim() != name {
        Err(format!(
            "{what} {name:?} has a comma, a line break or spaces at an end, which the original's CSV legends cannot hold"
        ))
    } else {
        Ok(())
    }
}

/// The object kinds painted on some tile, in catalogue order.
fn painted_kinds(map: &WorldMap) -> Vec<u16> {
    let mut kinds_used: Vec<u16> = map
        .cell_object
        .iter()
        .copied()
        .filter(|k| *k != NONE)
        .collect();
    kinds_used.sort_unstable();
    kinds_used.dedup();
    kinds_used
}

/// What the original's format cannot hold, refused before anything is written: names its CSV
/// cannot hold, a sector with no arena, two spawns on one tile.
fn check_exportable(map: &WorldMap, kinds_used: &[u16]) -> Result<(), String> {
    csv_safe("the world", &map.world)?;
    for s in &map.sectors {
        csv_safe("sector", &s.name)?;
        if s.arenas.is_empty() {
            return Err(format!(
                "sector '{}' has no arena; the original's format places people in arenas",
                s.name
            ));
        }
    }
    for a in &map.arenas {
        csv_safe("arena", &a.name)?;
    }
    for (i, p) in map.spawns.iter().enumerate() {
        csv_safe("spawn", &p.name)?;
        if let Some(q) = map.spawns[..i].iter().find(|q| q.tile == p.tile) {
            return Err(format!(
                "spawns '{}' and '{}' share the tile {}; the original's layer holds one per tile",
                q.name, p.name, p.tile
            ));
        }
    }
    for k in kinds_used {
        csv_safe("object kind", map.kinds[*k as usize].name)?;
    }
    Ok(())
}

/// The ids a town is written with, counted up from the_ville's first free id: each sector,
/// each arena, each object kind painted, each spawn point, in that order.
struct ExportIds {
    sector: Vec<u32>,
    arena: Vec<u32>,
    /// The object kinds painted (catalogue order), and the id of each.
    kinds_used: Vec<u16>,
    kind: HashMap<u16, u32>,
    spawn: Vec<u32>,
}

impl ExportIds {
    fn new(map: &WorldMap, kinds_used: Vec<u16>) -> Self {
        let mut next = FIRST_ID;
        let mut take = || {
            let id = next;
            next += 1;
            id
        };
        let sector_id: Vec<u32> = map.sectors.iter().map(|_| take()).collect();
        let arena_id: Vec<u32> = map.arenas.iter().map(|_| take()).collect();
        let kind_id: HashMap<u16, u32> = kinds_used.iter().map(|k| (*k, take())).collect();
        let spawn_id: Vec<u32> = map.spawns.iter().map(|_| take()).collect();
        ExportIds {
            sector: sector_id,
            arena: arena_id,
            kinds_used,
            kind: kind_id,
            spawn: spawn_id,
        }
    }
}

/// The five layers' cells (collision, sector, arena, object, spawn) of a town.
fn export_cells(map: &WorldMap, ids: &ExportIds) -> [Vec<u32>; 5] {
    let (w, h) = (map.width, map.height);
    let n = (w * h) as usize;
    let (sector_id, arena_id, kind_id, spawn_id) = (&ids.sector, &ids.arena, &ids.kind, &ids.spawn);
    let mut collision = vec![0u32; n];
    let mut sector = vec![0u32; n];
    let mut arena = vec![0u32; n];
    let mut object = vec![0u32; n];
    let mut spawn = vec![0u32; n];
    for i in 0..n {
        // Walls only: the original's agents walk onto the furniture they use.
        if !map.terrain[i].walkable() {
            collision[i] = COLLISION_ID;
        }
        if map.cell_sector[i] != NONE {
            sector[i] = sector_id[map.cell_sector[i] as usize];
        }
        if map.cell_arena[i] != NONE {
            arena[i] = arena_id[map.cell_arena[i] as usize];
            if map.cell_object[i] != NONE {
                object[i] = kind_id[&map.cell_object[i]];
            }
        }
    }
    for (p, id) in map.spawns.iter().zip(spawn_id) {
        spawn[(p.tile.y * w + p.tile.x) as usize] = *id;
    }
    [collision, sector, arena, object, spawn]
}

/// The matrix folder's files written into `out`: the meta file, the layers (`maze`, as
/// [`export_cells`] gives them), the legends and our ground types. Returns the files written.
fn write_matrix(
    map: &WorldMap,
    out: &Path,
    ids: &ExportIds,
    maze: &[Vec<u32>; 5],
) -> Result<Vec<String>, String> {
    let (w, h) = (map.width, map.height);
    let [collision, sector, arena, object, spawn] = maze;
    let (sector_id, arena_id, kinds_used, kind_id, spawn_id) = (
        &ids.sector,
        &ids.arena,
        &ids.kinds_used,
        &ids.kind,
        &ids.spawn,
    );
    let mk = |d: &Path| std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()));
    mk(&out.join("maze"))?;
    mk(&out.join("special_blocks"))?;
    let mut wrote = Vec::new();
    let mut put = |rel: &str, text: String| -> Result<(), String> {
        let p = out.join(rel);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        wrote.push(p.display().to_string());
        Ok(())
    };
    let one_row = |cells: &[u32]| {
        let mut s = cells
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        s.push('\n');
        s
    };
    let meta = serde_json::json!({
        "world_name": map.world,
        "maze_width": w,
        "maze_height": h,
        "sq_tile_size": 32,
        "special_constraint": "",
        "simulacra_objects_block": map.objects_block,
    });
    put(
        "maze_meta_info.json",
        serde_json::to_string_pretty(&meta).unwrap_or_default() + "\n",
    )?;
    put("maze/collision_maze.csv", one_row(collision))?;
    put("maze/sector_maze.csv", one_row(sector))?;
    put("maze/arena_maze.csv", one_row(arena))?;
    put("maze/game_object_maze.csv", one_row(object))?;
    put("maze/spawning_location_maze.csv", one_row(spawn))?;
    let world = &map.world;
    put(
        "special_blocks/world_blocks.csv",
        format!("{WORLD_ID}, {world}\n"),
    )?;
    put(
        "special_blocks/sector_blocks.csv",
        map.sectors
            .iter()
            .zip(sector_id)
            .map(|(s, id)| format!("{id}, {world}, {}\n", s.name))
            .collect(),
    )?;
    put(
        "special_blocks/arena_blocks.csv",
        map.arenas
            .iter()
            .zip(arena_id)
            .map(|(a, id)| {
                format!(
                    "{id}, {world}, {}, {}\n",
                    map.sectors[a.sector].name, a.name
                )
            })
            .collect(),
    )?;
    put(
        "special_blocks/game_object_blocks.csv",
        kinds_used
            .iter()
            .map(|k| {
                format!(
                    "{}, {world}, <all>, {}\n",
                    kind_id[k], map.kinds[*k as usize].name
                )
            })
            .collect(),
    )?;
    put(
        "special_blocks/spawning_location_blocks.csv",
        map.spawns
            .iter()
            .zip(spawn_id)
            .map(|(p, id)| {
                let a = &map.arenas[p.arena];
                format!(
                    "{id}, {world}, {}, {}, {}\n",
                    map.sectors[a.sector].name, a.name, p.name
                )
            })
            .collect(),
    )?;
    put(
        TERRAIN_FILE,
        map.terrain
            .iter()
            .map(|t| code_of_terrain(*t))
            .collect::<Vec<_>>()
            .join(", ")
            + "\n",
    )?;
    Ok(wrote)
}
