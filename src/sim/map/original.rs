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

use super::file::{NONE, finish};
use super::objects::{OBJECT_KINDS, ObjectKind, added_kind};
use super::{Arena, CellTown, PlacedObject, Sector, SpawnPoint, Terrain, Tile, WorldMap};
use crate::data_error::DataError;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// The id the original's pathfinder treats as a wall (`collision_block_id` in its `utils.py`).
pub const COLLISION_ID: u32 = 32125;
const WORLD_ID: u32 = 32134;
const FIRST_ID: u32 = 32135;
/// Tiled keeps flip and rotation flags in a gid's top bits.
pub(crate) const GID_MASK: u32 = 0x1FFF_FFFF;
/// The file beside the layers that carries our own ground types (the original ignores it).
const TERRAIN_FILE: &str = "simulacra_terrain.csv";

/// What an import read, and what it had to default or skip.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// What was read: size, sectors, arenas, object kinds, spawn points.
    pub read: Vec<String>,
    /// What was defaulted, merged or skipped, one line each.
    pub notes: Vec<String>,
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in &self.read {
            writeln!(f, "  {l}")?;
        }
        if self.notes.is_empty() {
            writeln!(f, "  nothing defaulted or skipped")?;
        } else {
            writeln!(f, "  defaulted or skipped:")?;
            for l in &self.notes {
                writeln!(f, "    - {l}")?;
            }
        }
        Ok(())
    }
}

/// The matrix folder at `path`: the folder itself when it holds `maze_meta_info.json`, or its
/// `matrix/` subfolder (so the original's `the_ville/` folder may be given too).
pub fn matrix_dir(path: &Path) -> Option<PathBuf> {
    [path.to_path_buf(), path.join("matrix")]
        .into_iter()
        .find(|d| d.join("maze_meta_info.json").is_file())
}

/// One CSV file split into trimmed cells, with 1-based line numbers; blank lines are skipped
/// and one trailing empty cell (a trailing comma) is dropped.
fn read_rows(path: &Path) -> Result<Vec<(usize, Vec<String>)>, DataError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the file: {e}")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let mut cells: Vec<String> = l.split(',').map(|c| c.trim().to_string()).collect();
            if cells.len() > 1 && cells.last().is_some_and(String::is_empty) {
                cells.pop();
            }
            (i + 1, cells)
        })
        .collect())
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

/// One legend row: its line, id and name (the last column; the middle ones are for people).
pub(crate) struct LegendRow {
    line: usize,
    id: u32,
    cols: Vec<String>,
}

impl LegendRow {
    fn name(&self) -> &str {
        self.cols.last().map(String::as_str).unwrap_or("")
    }
}

pub(crate) fn legend_path(dir: &Path, name: &str) -> PathBuf {
    dir.join("special_blocks")
        .join(format!("{name}_blocks.csv"))
}

fn read_legend(dir: &Path, name: &str, min_cols: usize) -> Result<Vec<LegendRow>, DataError> {
    let path = legend_path(dir, name);
    if !path.is_file() {
        return Err(DataError::new(
            &path,
            0,
            "",
            format!("the {name} legend is missing (special_blocks/{name}_blocks.csv)"),
        ));
    }
    let mut out: Vec<LegendRow> = Vec::new();
    for (line, cols) in read_rows(&path)? {
        if cols.len() < min_cols {
            return Err(DataError::new(
                &path,
                line,
                "",
                format!(
                    "has {} column(s); a {name} legend row is `id, world{}`",
                    cols.len(),
                    match name {
                        "sector" => ", sector",
                        "arena" => ", sector, arena",
                        "game_object" => ", <all>, object",
                        "spawning_location" => ", sector, arena, spawn",
                        _ => "",
                    }
                ),
            ));
        }
        let id: u32 = cols[0].parse::<u32>().map(|i| i & GID_MASK).map_err(|_| {
            DataError::new(
                &path,
                line,
                "id",
                format!("{:?} is not a tile id (a whole number)", cols[0]),
            )
        })?;
        let name_col = cols.last().map(String::as_str).unwrap_or("");
        if name_col.is_empty() || name_col.contains(':') {
            return Err(DataError::new(
                &path,
                line,
                "name",
                format!("bad name {name_col:?} (empty or has ':', which separates address parts)"),
            ));
        }
        if let Some(prev) = out.iter().find(|r| r.id == id) {
            return Err(DataError::new(
                &path,
                line,
                "id",
                format!("id {id} is already in this legend (line {})", prev.line),
            ));
        }
        out.push(LegendRow { line, id, cols });
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

/// One of the original's five per-tile layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layer {
    Collision,
    Sector,
    Arena,
    Object,
    Spawn,
}

impl Layer {
    /// Every layer, in the order of [`Layers::cells`].
    pub(crate) const ALL: [Layer; 5] = [
        Layer::Collision,
        Layer::Sector,
        Layer::Arena,
        Layer::Object,
        Layer::Spawn,
    ];

    /// The name in the matrix folder (`maze/<name>_maze.csv`, `special_blocks/<name>_blocks.csv`).
    pub(crate) fn matrix_name(self) -> &'static str {
        match self {
            Layer::Collision => "collision",
            Layer::Sector => "sector",
            Layer::Arena => "arena",
            Layer::Object => "game_object",
            Layer::Spawn => "spawning_location",
        }
    }

    /// The name of the Tiled layer it is exported from.
    pub(crate) fn tiled_name(self) -> &'static str {
        match self {
            Layer::Collision => "Collisions",
            Layer::Sector => "Sector Blocks",
            Layer::Arena => "Arena Blocks",
            Layer::Object => "Object Interaction Blocks",
            Layer::Spawn => "Spawning Blocks",
        }
    }
}

/// Where the layers were read from, so errors name the place in the source's own terms.
pub(crate) enum Origin {
    /// `maze/<name>_maze.csv` in the matrix folder.
    Matrix,
    /// Tile layers of a Tiled map, with the line where each layer starts (0 if unknown).
    Tiled { file: PathBuf, lines: [usize; 5] },
}

/// The original's layers and legends, read from a matrix folder or a Tiled map: what
/// [`build_town`] turns into a town, with the checks both share.
pub(crate) struct Layers {
    /// The folder holding `special_blocks/` (the matrix folder).
    pub dir: PathBuf,
    pub origin: Origin,
    pub world: String,
    pub width: i32,
    pub height: i32,
    /// Tile ids per layer, in the order of [`Layer::ALL`]; the spawn layer is all 0 when absent.
    pub cells: [Vec<u32>; 5],
    pub sector_legend: Vec<LegendRow>,
    pub arena_legend: Vec<LegendRow>,
    pub object_legend: Vec<LegendRow>,
    pub spawn_legend: Vec<LegendRow>,
    /// Our own ground types, when the source carries them (`simulacra_terrain.csv`).
    pub terrain: Option<Vec<Terrain>>,
    pub objects_block: bool,
}

impl Layers {
    fn layer_file(&self, l: Layer) -> PathBuf {
        match &self.origin {
            Origin::Matrix => self
                .dir
                .join("maze")
                .join(format!("{}_maze.csv", l.matrix_name())),
            Origin::Tiled { file, .. } => file.clone(),
        }
    }

    fn layer_line(&self, l: Layer) -> usize {
        match &self.origin {
            Origin::Matrix => 0,
            Origin::Tiled { lines, .. } => lines[l as usize],
        }
    }

    /// The layer as a person finds it: `sector_maze.csv` or `layer 'Sector Blocks'`.
    fn layer_label(&self, l: Layer) -> String {
        match &self.origin {
            Origin::Matrix => format!("{}_maze.csv", l.matrix_name()),
            Origin::Tiled { .. } => format!("layer '{}'", l.tiled_name()),
        }
    }

    /// The field naming a cell: `cell 31 (x 1, y 1)`, with the layer for a Tiled map.
    fn cell_field(&self, l: Layer, i: usize) -> String {
        let (x, y) = (i as i32 % self.width, i as i32 / self.width);
        match &self.origin {
            Origin::Matrix => format!("cell {i} (x {x}, y {y})"),
            Origin::Tiled { .. } => format!("layer '{}', cell {i} (x {x}, y {y})", l.tiled_name()),
        }
    }

    fn source_label(&self) -> String {
        match &self.origin {
            Origin::Matrix => self.dir.display().to_string(),
            Origin::Tiled { file, .. } => file.display().to_string(),
        }
    }
}

/// The world's name, as the original reads it: the last column of the first row of
/// `special_blocks/world_blocks.csv`; `fallback` (and a note) when that file is missing or empty.
pub(crate) fn read_world(
    dir: &Path,
    fallback: &str,
    why: &str,
    report: &mut ImportReport,
) -> Result<String, DataError> {
    let world_path = legend_path(dir, "world");
    let first_row = if world_path.is_file() {
        read_rows(&world_path)?
            .into_iter()
            .next()
            .and_then(|(_, cols)| cols.last().cloned())
            .filter(|n| !n.is_empty() && !n.contains(':'))
    } else {
        None
    };
    Ok(match first_row {
        Some(name) => name,
        None => {
            report.notes.push(format!(
                "no usable special_blocks/world_blocks.csv: the world is named {fallback:?} {why}"
            ));
            fallback.to_string()
        }
    })
}

/// The four legends a town needs (sector, arena, object, spawn) from `dir/special_blocks/`;
/// the spawn legend only when `spawns` (an empty list otherwise).
pub(crate) fn read_legends(dir: &Path, spawns: bool) -> Result<[Vec<LegendRow>; 4], DataError> {
    Ok([
        read_legend(dir, "sector", 3)?,
        read_legend(dir, "arena", 4)?,
        read_legend(dir, "game_object", 3)?,
        if spawns {
            read_legend(dir, "spawning_location", 3)?
        } else {
            Vec::new()
        },
    ])
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
    let meta_text = std::fs::read_to_string(&meta_path)
        .map_err(|e| DataError::new(&meta_path, 0, "", format!("cannot read the file: {e}")))?;
    let meta_text = meta_text.strip_prefix('\u{feff}').unwrap_or(&meta_text);
    let meta: serde_json::Value = serde_json::from_str(meta_text)
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

    // Our ground types, when this folder was written by us.
    let terrain_path = dir.join(TERRAIN_FILE);
    let terrain = if terrain_path.is_file() {
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
        Some(out)
    } else {
        None
    };
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

/// The layers and legends made into a town, with every check the original's format needs
/// (ids in their legends, legend ids painted somewhere, arenas inside sectors, a sector with
/// an arena) and then those every town passes. Shared by the matrix folder and Tiled maps.
pub(crate) fn build_town(
    layers: Layers,
    mut report: ImportReport,
) -> Result<(WorldMap, ImportReport), DataError> {
    let (w, h) = (layers.width, layers.height);
    let n = (w * h) as usize;
    let dir = layers.dir.clone();
    let [collision, sector_ids, arena_ids, object_ids, spawn_ids] = &layers.cells;
    let (sector_legend, arena_legend, object_legend, spawn_legend) = (
        &layers.sector_legend,
        &layers.arena_legend,
        &layers.object_legend,
        &layers.spawn_legend,
    );
    let world = layers.world.clone();

    let cell_xy = |i: usize| (i as i32 % w, i as i32 / w);
    let unknown = |layer: Layer, i: usize, id: u32| {
        DataError::new(
            &layers.layer_file(layer),
            layers.layer_line(layer),
            layers.cell_field(layer, i),
            format!(
                "id {id} is not in special_blocks/{}_blocks.csv",
                layer.matrix_name()
            ),
        )
    };
    let unused = |layer: Layer, r: &LegendRow| {
        DataError::new(
            &legend_path(&dir, layer.matrix_name()),
            r.line,
            format!("id {}", r.id),
            format!(
                "'{}' is painted on no tile of {}",
                r.name(),
                match layers.origin {
                    Origin::Matrix => format!("maze/{}_maze.csv", layer.matrix_name()),
                    Origin::Tiled { .. } => layers.layer_label(layer),
                }
            ),
        )
    };
    // Collision: any id but 0 is a wall, as the original's tiles read it.
    let mut collision_values: BTreeMap<u32, usize> = BTreeMap::new();
    for c in collision {
        if *c != 0 {
            *collision_values.entry(*c).or_default() += 1;
        }
    }
    if collision_values.keys().any(|k| *k != COLLISION_ID) {
        report.notes.push(format!(
            "collision layer values {:?} (tiles each) all count as walls; the original's pathfinder blocks only {COLLISION_ID}",
            collision_values
        ));
    }

    // Sectors, in legend order; two ids with one name are one sector.
    let mut sector_names: Vec<String> = Vec::new();
    let mut sector_of_id: HashMap<u32, u16> = HashMap::new();
    for r in sector_legend {
        let s = match sector_names.iter().position(|x| x == r.name()) {
            Some(s) => {
                report.notes.push(format!(
                    "sector_blocks.csv line {}: id {} repeats the name '{}' and is merged with it",
                    r.line,
                    r.id,
                    r.name()
                ));
                s
            }
            None => {
                sector_names.push(r.name().to_string());
                sector_names.len() - 1
            }
        };
        sector_of_id.insert(r.id, s as u16);
    }
    let mut cell_sector = vec![NONE; n];
    let mut used: HashMap<u32, bool> = HashMap::new();
    for i in 0..n {
        let id = sector_ids[i];
        if id == 0 {
            continue;
        }
        let s = *sector_of_id
            .get(&id)
            .ok_or_else(|| unknown(Layer::Sector, i, id))?;
        used.insert(id, true);
        cell_sector[i] = s;
    }
    if let Some(r) = sector_legend.iter().find(|r| !used.contains_key(&r.id)) {
        return Err(unused(Layer::Sector, r));
    }

    // Arenas: the legend gives the name; the tile's own sector layer gives the sector.
    let arena_row: HashMap<u32, &LegendRow> = arena_legend.iter().map(|r| (r.id, r)).collect();
    let arena_order: HashMap<u32, usize> = arena_legend
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id, i))
        .collect();
    // (sector, name) → (legend order, first row line)
    let mut arena_keys: BTreeMap<(u16, String), (usize, usize)> = BTreeMap::new();
    let mut misfiled = 0usize;
    let mut used: HashMap<u32, bool> = HashMap::new();
    for i in 0..n {
        let id = arena_ids[i];
        if id == 0 {
            continue;
        }
        let r = arena_row
            .get(&id)
            .ok_or_else(|| unknown(Layer::Arena, i, id))?;
        used.insert(id, true);
        let s = cell_sector[i];
        if s == NONE {
            return Err(DataError::new(
                &layers.layer_file(Layer::Arena),
                layers.layer_line(Layer::Arena),
                layers.cell_field(Layer::Arena, i),
                format!(
                    "arena '{}' (id {id}) is painted outside every sector ({} has 0 there)",
                    r.name(),
                    layers.layer_label(Layer::Sector)
                ),
            ));
        }
        if r.cols.len() >= 4 && r.cols[2] != sector_names[s as usize] {
            misfiled += 1;
        }
        let order = arena_order[&id];
        arena_keys
            .entry((s, r.name().to_string()))
            .and_modify(|e| e.0 = e.0.min(order))
            .or_insert((order, r.line));
    }
    if let Some(r) = arena_legend.iter().find(|r| !used.contains_key(&r.id)) {
        return Err(unused(Layer::Arena, r));
    }
    if misfiled > 0 {
        report.notes.push(format!(
            "{misfiled} arena tile(s) lie in another sector than their arena_blocks.csv row names; they belong to the tile's sector, as in the original"
        ));
    }
    // Arena order: by sector, then legend order.
    let mut keyed: Vec<((u16, String), (usize, usize))> = arena_keys.into_iter().collect();
    keyed.sort_by_key(|((s, _), (order, _))| (*s, *order));
    let mut sectors: Vec<Sector> = sector_names
        .iter()
        .map(|name| Sector {
            name: name.clone(),
            rect: super::Rect {
                x: 0,
                y: 0,
                w: 0,
                h: 0,
            },
            arenas: Vec::new(),
        })
        .collect();
    let mut arenas: Vec<Arena> = Vec::new();
    let mut arena_index: HashMap<(u16, String), u16> = HashMap::new();
    for ((s, name), (_, line)) in keyed {
        arena_index.insert((s, name.clone()), arenas.len() as u16);
        sectors[s as usize].arenas.push(arenas.len());
        arenas.push(Arena {
            name,
            sector: s as usize,
            rect: super::Rect {
                x: 0,
                y: 0,
                w: 0,
                h: 0,
            },
            objects: Vec::new(),
            line,
        });
    }
    if let Some((si, s)) = sectors
        .iter()
        .enumerate()
        .find(|(_, s)| s.arenas.is_empty())
    {
        let r = sector_legend
            .iter()
            .find(|r| sector_of_id.get(&r.id) == Some(&(si as u16)))
            .expect("every sector has a legend row");
        return Err(DataError::new(
            &legend_path(&dir, "sector"),
            r.line,
            format!("id {}", r.id),
            format!(
                "sector '{}' has no arena (no tile of {} lies in it); agents could not go anywhere in it",
                s.name,
                layers.layer_label(Layer::Arena)
            ),
        ));
    }
    let mut cell_arena = vec![NONE; n];
    for i in 0..n {
        if arena_ids[i] != 0 {
            let name = arena_row[&arena_ids[i]].name().to_string();
            cell_arena[i] = arena_index[&(cell_sector[i], name)];
        }
    }

    // Objects: arena-agnostic names; a tile takes its arena from the arena layer. The object
    // legend is a vocabulary shared by every arena, and towns made by copying the original's
    // keep kinds they no longer paint: those are left out and said, not refused. (Two ids of
    // one name are one kind: it is painted when either is.)
    let painted_ids: HashSet<u32> = object_ids.iter().copied().filter(|id| *id != 0).collect();
    let painted: HashSet<&str> = object_legend
        .iter()
        .filter(|r| painted_ids.contains(&r.id))
        .map(|r| r.name())
        .collect();
    let mut unpainted: Vec<&str> = Vec::new();
    let mut kinds: Vec<ObjectKind> = OBJECT_KINDS.to_vec();
    let mut added: Vec<String> = Vec::new();
    let mut kind_of_id: HashMap<u32, u16> = HashMap::new();
    for r in object_legend {
        if !painted.contains(r.name()) {
            if !unpainted.contains(&r.name()) {
                unpainted.push(r.name());
            }
            continue;
        }
        let k = match kinds.iter().position(|k| k.name == r.name()) {
            Some(k) => k,
            None => {
                added.push(r.name().to_string());
                kinds.push(added_kind(r.name()));
                kinds.len() - 1
            }
        };
        kind_of_id.insert(r.id, k as u16);
    }
    let mut cell_object = vec![NONE; n];
    let mut outside = 0usize;
    for i in 0..n {
        let id = object_ids[i];
        if id == 0 {
            continue;
        }
        let k = *kind_of_id
            .get(&id)
            .ok_or_else(|| unknown(Layer::Object, i, id))?;
        if cell_arena[i] == NONE {
            outside += 1;
            continue;
        }
        cell_object[i] = k;
    }
    if !unpainted.is_empty() {
        report.notes.push(format!(
            "{} object kind(s) of special_blocks/game_object_blocks.csv painted on no tile were left out: {}",
            unpainted.len(),
            unpainted.join(", ")
        ));
    }
    if outside > 0 {
        report.notes.push(format!(
            "{outside} object tile(s) outside every arena were skipped (an object's address needs an arena)"
        ));
    }
    if !added.is_empty() {
        report.notes.push(format!(
            "{} object kind(s) not in our catalogue were added, drawn with the nearest picture: {}",
            added.len(),
            added.join(", ")
        ));
    }

    // Terrain: ours, when the source carries it; otherwise from the collision layer.
    let terrain: Vec<Terrain> = if let Some(t) = layers.terrain.clone() {
        t
    } else {
        // A sector whose edge is mostly collision is a building (walls, floors, doorways);
        // otherwise it is outdoors (grass, with trees where it is blocked), like the streets.
        let mut edge = vec![(0usize, 0usize); sector_names.len()];
        for i in 0..n {
            let s = cell_sector[i];
            if s == NONE {
                continue;
            }
            let (x, y) = cell_xy(i);
            let outside = [(1, 0), (-1, 0), (0, 1), (0, -1)].iter().any(|(dx, dy)| {
                let (nx, ny) = (x + dx, y + dy);
                nx < 0 || ny < 0 || nx >= w || ny >= h || cell_sector[(ny * w + nx) as usize] != s
            });
            if outside {
                edge[s as usize].0 += 1;
                edge[s as usize].1 += usize::from(collision[i] != 0);
            }
        }
        let indoor: Vec<bool> = edge
            .iter()
            .map(|(all, blocked)| *blocked * 2 >= *all && *all > 0)
            .collect();
        (0..n)
            .map(|i| {
                let s = cell_sector[i];
                let inside = s != NONE && indoor[s as usize];
                match (collision[i] != 0, inside) {
                    (true, true) => Terrain::Wall,
                    (true, false) => Terrain::Tree,
                    (false, true) if cell_arena[i] != NONE => Terrain::Floor,
                    (false, true) => Terrain::Door,
                    (false, false) => Terrain::Grass,
                }
            })
            .collect()
    };
    let objects_block = layers.objects_block;

    // Spawn points, named per arena (every home has its own sp-A).
    let spawn_name: HashMap<u32, &LegendRow> = spawn_legend.iter().map(|r| (r.id, r)).collect();
    let mut spawns: Vec<SpawnPoint> = Vec::new();
    let mut used: HashMap<u32, bool> = HashMap::new();
    let mut skipped = Vec::new();
    for i in 0..n {
        let id = spawn_ids[i];
        if id == 0 {
            continue;
        }
        let r = spawn_name
            .get(&id)
            .ok_or_else(|| unknown(Layer::Spawn, i, id))?;
        used.insert(id, true);
        let (x, y) = cell_xy(i);
        let tile = Tile::new(x, y);
        let walkable = terrain[i].walkable()
            && !(objects_block && cell_object[i] != NONE && kinds[cell_object[i] as usize].blocks);
        if cell_arena[i] == NONE || !walkable {
            skipped.push(format!("'{}' at {tile}", r.name()));
            continue;
        }
        let arena = cell_arena[i] as usize;
        if spawns
            .iter()
            .any(|p| p.arena == arena && p.name == r.name())
        {
            continue; // a spawn block may cover several tiles: its first tile counts
        }
        spawns.push(SpawnPoint {
            name: r.name().to_string(),
            arena,
            tile,
        });
    }
    if let Some(r) = spawn_legend.iter().find(|r| !used.contains_key(&r.id)) {
        return Err(unused(Layer::Spawn, r));
    }
    if !skipped.is_empty() {
        report.notes.push(format!(
            "{} spawn tile(s) outside every arena or on a wall were skipped: {}",
            skipped.len(),
            skipped.join(", ")
        ));
    }

    // Bounding boxes and each arena's objects (one entry per kind, in order of first tile),
    // all in one pass over the tiles.
    let mut sector_box: Vec<Option<(i32, i32, i32, i32)>> = vec![None; sectors.len()];
    let mut arena_box: Vec<Option<(i32, i32, i32, i32)>> = vec![None; arenas.len()];
    let mut object_box: Vec<Vec<(u16, (i32, i32, i32, i32))>> = vec![Vec::new(); arenas.len()];
    let grow = |b: &mut (i32, i32, i32, i32), x: i32, y: i32| {
        *b = (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y));
    };
    for i in 0..n {
        let (x, y) = cell_xy(i);
        if cell_sector[i] != NONE {
            grow(
                sector_box[cell_sector[i] as usize].get_or_insert((x, y, x, y)),
                x,
                y,
            );
        }
        let a = cell_arena[i];
        if a == NONE {
            continue;
        }
        grow(arena_box[a as usize].get_or_insert((x, y, x, y)), x, y);
        let k = cell_object[i];
        if k != NONE {
            let list = &mut object_box[a as usize];
            match list.iter_mut().find(|(kk, _)| *kk == k) {
                Some((_, b)) => grow(b, x, y),
                None => list.push((k, (x, y, x, y))),
            }
        }
    }
    let rect = |b: (i32, i32, i32, i32)| super::Rect {
        x: b.0,
        y: b.1,
        w: b.2 - b.0 + 1,
        h: b.3 - b.1 + 1,
    };
    for (s, b) in sectors.iter_mut().zip(&sector_box) {
        s.rect = rect(b.expect("every sector has tiles"));
    }
    for ((a, b), objects) in arenas.iter_mut().zip(&arena_box).zip(object_box) {
        a.rect = rect(b.expect("every arena has tiles"));
        a.objects = objects
            .into_iter()
            .map(|(k, b)| PlacedObject {
                kind: k as usize,
                rect: rect(b),
            })
            .collect();
    }

    let used_kinds = {
        let mut k: Vec<u16> = cell_object.iter().copied().filter(|k| *k != NONE).collect();
        k.sort_unstable();
        k.dedup();
        k.len()
    };
    report.read.push(format!(
        "{}: world '{world}', {w}×{h} tiles, {} sectors, {} arenas, {used_kinds} object kinds on {} tiles, {} spawn points, {} wall tiles",
        layers.source_label(),
        sectors.len(),
        arenas.len(),
        cell_object.iter().filter(|k| **k != NONE).count(),
        spawns.len(),
        collision.iter().filter(|c| **c != 0).count(),
    ));

    let town = CellTown {
        world,
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
        objects_block,
    };
    let arena_file = legend_path(&dir, "arena");
    let source = match &layers.origin {
        Origin::Matrix => dir.clone(),
        Origin::Tiled { file, .. } => file.clone(),
    };
    let map = finish(&source, town, |town, a, msg| {
        DataError::new(
            &arena_file,
            town.arenas[a].line,
            format!("arena '{}'", town.arenas[a].name),
            msg,
        )
    })?;
    Ok((map, report))
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
    let check = |what: &str, name: &str| {
        if name.contains([',', '\n', '\r']) || name.trim() != name {
            Err(format!(
                "{what} {name:?} has a comma, a line break or spaces at an end, which the original's CSV legends cannot hold"
            ))
        } else {
            Ok(())
        }
    };
    check("the world", &map.world)?;
    for s in &map.sectors {
        check("sector", &s.name)?;
        if s.arenas.is_empty() {
            return Err(format!(
                "sector '{}' has no arena; the original's format places people in arenas",
                s.name
            ));
        }
    }
    for a in &map.arenas {
        check("arena", &a.name)?;
    }
    for (i, p) in map.spawns.iter().enumerate() {
        check("spawn", &p.name)?;
        if let Some(q) = map.spawns[..i].iter().find(|q| q.tile == p.tile) {
            return Err(format!(
                "spawns '{}' and '{}' share the tile {}; the original's layer holds one per tile",
                q.name, p.name, p.tile
            ));
        }
    }
    let (w, h) = (map.width, map.height);
    let n = (w * h) as usize;
    let mut next = FIRST_ID;
    let mut take = || {
        let id = next;
        next += 1;
        id
    };
    let sector_id: Vec<u32> = map.sectors.iter().map(|_| take()).collect();
    let arena_id: Vec<u32> = map.arenas.iter().map(|_| take()).collect();
    let mut kinds_used: Vec<u16> = map
        .cell_object
        .iter()
        .copied()
        .filter(|k| *k != NONE)
        .collect();
    kinds_used.sort_unstable();
    kinds_used.dedup();
    for k in &kinds_used {
        check("object kind", map.kinds[*k as usize].name)?;
    }
    let kind_id: HashMap<u16, u32> = kinds_used.iter().map(|k| (*k, take())).collect();
    let spawn_id: Vec<u32> = map.spawns.iter().map(|_| take()).collect();

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
    for (p, id) in map.spawns.iter().zip(&spawn_id) {
        spawn[(p.tile.y * w + p.tile.x) as usize] = *id;
    }

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
    put("maze/collision_maze.csv", one_row(&collision))?;
    put("maze/sector_maze.csv", one_row(&sector))?;
    put("maze/arena_maze.csv", one_row(&arena))?;
    put("maze/game_object_maze.csv", one_row(&object))?;
    put("maze/spawning_location_maze.csv", one_row(&spawn))?;
    let world = &map.world;
    put(
        "special_blocks/world_blocks.csv",
        format!("{WORLD_ID}, {world}\n"),
    )?;
    put(
        "special_blocks/sector_blocks.csv",
        map.sectors
            .iter()
            .zip(&sector_id)
            .map(|(s, id)| format!("{id}, {world}, {}\n", s.name))
            .collect(),
    )?;
    put(
        "special_blocks/arena_blocks.csv",
        map.arenas
            .iter()
            .zip(&arena_id)
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
            .zip(&spawn_id)
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
