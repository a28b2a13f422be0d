//! The original's layers and legends (`special_blocks/*.csv`), read from a matrix folder or
//! from a Tiled map's block layers: what [`build_town`](super::build::build_town) makes a town
//! of, and the reading of the CSV files both sources share.

use super::Terrain;
use crate::data_error::DataError;
use std::fmt;
use std::path::{Path, PathBuf};

/// The id the original's pathfinder treats as a wall (`collision_block_id` in its `utils.py`).
pub const COLLISION_ID: u32 = 32125;
/// Tiled keeps flip and rotation flags in a gid's top bits.
pub(crate) const GID_MASK: u32 = 0x1FFF_FFFF;

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

/// One CSV file split into trimmed cells, with 1-based line numbers; blank lines are skipped
/// and one trailing empty cell (a trailing comma) is dropped.
pub(super) fn read_rows(path: &Path) -> Result<Vec<(usize, Vec<String>)>, DataError> {
    let text = crate::data::read_bounded(path, crate::data::MAX_TEXT_BYTES)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the file: {e}")))?;
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

/// One legend row: its line, id and name (the last column; the middle ones are for people).
pub(super) struct LegendRow {
    pub(super) line: usize,
    pub(super) id: u32,
    pub(super) cols: Vec<String>,
}

impl LegendRow {
    pub(super) fn name(&self) -> &str {
        self.cols.last().map(String::as_str).unwrap_or("")
    }
}

/// A legend's file: `special_blocks/<name>_blocks.csv` in `dir`.
pub(super) fn legend_path(dir: &Path, name: &str) -> PathBuf {
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

/// One of the original's five per-tile layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layer {
    Collision,
    Sector,
    Arena,
    Object,
    Spawn,
}

impl Layer {
    /// Every layer, in the order of [`Layers::cells`].
    pub(super) const ALL: [Layer; 5] = [
        Layer::Collision,
        Layer::Sector,
        Layer::Arena,
        Layer::Object,
        Layer::Spawn,
    ];

    /// The name in the matrix folder (`maze/<name>_maze.csv`, `special_blocks/<name>_blocks.csv`).
    pub(super) fn matrix_name(self) -> &'static str {
        match self {
            Layer::Collision => "collision",
            Layer::Sector => "sector",
            Layer::Arena => "arena",
            Layer::Object => "game_object",
            Layer::Spawn => "spawning_location",
        }
    }

    /// The name of the Tiled layer it is exported from.
    pub(super) fn tiled_name(self) -> &'static str {
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
pub(super) enum Origin {
    /// `maze/<name>_maze.csv` in the matrix folder.
    Matrix,
    /// Tile layers of a Tiled map, with the line where each layer starts (0 if unknown).
    Tiled { file: PathBuf, lines: [usize; 5] },
}

/// The original's layers and legends, read from a matrix folder or a Tiled map: what
/// [`build_town`](super::build::build_town) turns into a town, with the checks both share.
pub(super) struct Layers {
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
    /// The file a layer was read from: its CSV file, or the Tiled map.
    pub(super) fn layer_file(&self, l: Layer) -> PathBuf {
        match &self.origin {
            Origin::Matrix => self
                .dir
                .join("maze")
                .join(format!("{}_maze.csv", l.matrix_name())),
            Origin::Tiled { file, .. } => file.clone(),
        }
    }

    /// The line where a layer starts in a Tiled map (0 in a matrix folder).
    pub(super) fn layer_line(&self, l: Layer) -> usize {
        match &self.origin {
            Origin::Matrix => 0,
            Origin::Tiled { lines, .. } => lines[l as usize],
        }
    }

    /// The layer as a person finds it: `sector_maze.csv` or `layer 'Sector Blocks'`.
    pub(super) fn layer_label(&self, l: Layer) -> String {
        match &self.origin {
            Origin::Matrix => format!("{}_maze.csv", l.matrix_name()),
            Origin::Tiled { .. } => format!("layer '{}'", l.tiled_name()),
        }
    }

    /// The field naming a cell: `cell 31 (x 1, y 1)`, with the layer for a Tiled map.
    pub(super) fn cell_field(&self, l: Layer, i: usize) -> String {
        let (x, y) = (i as i32 % self.width, i as i32 / self.width);
        match &self.origin {
            Origin::Matrix => format!("cell {i} (x {x}, y {y})"),
            Origin::Tiled { .. } => format!("layer '{}', cell {i} (x {x}, y {y})", l.tiled_name()),
        }
    }

    /// The source as the report names it: the matrix folder or the Tiled file.
    pub(super) fn source_label(&self) -> String {
        match &self.origin {
            Origin::Matrix => self.dir.display().to_string(),
            Origin::Tiled { file, .. } => file.display().to_string(),
        }
    }

    /// An id painted on a layer (at cell `i`) that its legend lacks.
    pub(super) fn unknown_id(&self, layer: Layer, i: usize, id: u32) -> DataError {
        DataError::new(
            &self.layer_file(layer),
            self.layer_line(layer),
            self.cell_field(layer, i),
            format!(
                "id {id} is not in special_blocks/{}_blocks.csv",
                layer.matrix_name()
            ),
        )
    }

    /// A legend row whose id is painted on no tile of its layer.
    pub(super) fn unpainted(&self, layer: Layer, r: &LegendRow) -> DataError {
        DataError::new(
            &legend_path(&self.dir, layer.matrix_name()),
            r.line,
            format!("id {}", r.id),
            format!(
                "'{}' is painted on no tile of {}",
                r.name(),
                match self.origin {
                    Origin::Matrix => format!("maze/{}_maze.csv", layer.matrix_name()),
                    Origin::Tiled { .. } => self.layer_label(layer),
                }
            ),
        )
    }
}

/// The world's name, as the original reads it: the last column of the first row of
/// `special_blocks/world_blocks.csv`; `fallback` (and a note) when that file is missing or empty.
pub(super) fn read_world(
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
pub(super) fn read_legends(dir: &Path, spawns: bool) -> Result<[Vec<LegendRow>; 4], DataError> {
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
