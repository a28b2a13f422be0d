//! The town as data: terrain, collision and the address tree world → sector → arena → object.
//! [`WorldMap`] answers tile → address, address → tiles, walkability and the words for a place.
//! Headless: no render types here (the render layer draws from this resource).

mod build;
mod file;
pub mod generate;
pub mod layers;
pub mod objects;
pub mod original;
pub mod tiled;

pub use file::{parse_map, write_ron, write_ron_beside};
pub use tiled::TiledArt;

/// Loads a town: a map file of ours (`maps/*.ron`), a Tiled map drawn for the original
/// Generative Agents (`.tmj`, `.json`, `.tmx`; see [`tiled`]), or its matrix folder (see
/// [`original`]). What an import read and defaulted comes with it ([`load_map_reporting`]).
pub fn load_map(path: &std::path::Path) -> Result<WorldMap, crate::data_error::DataError> {
    load_map_reporting(path).map(|(m, _)| m)
}

/// [`load_map`], with the import report of a town made for the original (empty for ours).
pub fn load_map_reporting(
    path: &std::path::Path,
) -> Result<(WorldMap, layers::ImportReport), crate::data_error::DataError> {
    let (map, report) = load_any(path)?;
    names_without_control_characters(&map)?;
    Ok((map, report))
}

/// A town's names (world, sectors, arenas, objects, spawn points) are printed, saved and put
/// into prompts: one with a control character (a terminal's escape) is refused, whatever the
/// format it came in, naming the map and the name (escaped).
fn names_without_control_characters(map: &WorldMap) -> Result<(), crate::data_error::DataError> {
    // (An arena knows its line in our format; the other names are said without one.)
    let names = std::iter::once(("world", map.world.as_str(), 0))
        .chain(map.sectors.iter().map(|s| ("sector", s.name.as_str(), 0)))
        .chain(
            map.arenas
                .iter()
                .map(|a| ("arena", a.name.as_str(), a.line)),
        )
        .chain(map.kinds.iter().map(|k| ("object", k.name, 0)))
        .chain(
            map.spawns
                .iter()
                .map(|s| ("spawn point", s.name.as_str(), 0)),
        );
    for (what, name, line) in names {
        if name.chars().any(char::is_control) {
            return Err(crate::data_error::DataError::new(
                &map.source,
                line,
                "name",
                format!("bad {what} name {name:?}: it holds a control character"),
            ));
        }
    }
    Ok(())
}

fn load_any(
    path: &std::path::Path,
) -> Result<(WorldMap, layers::ImportReport), crate::data_error::DataError> {
    if path.is_dir() {
        if original::matrix_dir(path).is_none()
            && let Some(file) = tiled_in_folder(path)?
        {
            return tiled::load_tiled(&file);
        }
        return original::load_matrix(path);
    }
    if tiled::is_tiled_file(path) {
        return tiled::load_tiled(path);
    }
    file::load_ron_map(path).map(|m| (m, layers::ImportReport::default()))
}

/// The one Tiled map in a folder that holds no matrix folder (so `--map FOLDER` may name the
/// folder holding a Tiled map and its `special_blocks/`); an error when there are several.
fn tiled_in_folder(dir: &std::path::Path) -> Result<Option<PathBuf>, crate::data_error::DataError> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_file() && tiled::is_tiled_file(p))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(crate::data_error::DataError::new(
            dir,
            0,
            "",
            format!(
                "holds several Tiled maps ({}); name the one to open",
                found
                    .iter()
                    .filter_map(|p| p.file_name().and_then(|n| n.to_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

use bevy::prelude::Resource;
use objects::ObjectKind;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

/// A tile coordinate: x to the right, y downwards (row 0 is the top row of the map file).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
pub struct Tile {
    /// Column.
    pub x: i32,
    /// Row, counted from the top.
    pub y: i32,
}

impl Tile {
    /// A tile.
    pub const fn new(x: i32, y: i32) -> Self {
        Self { x, y }
    }

    /// Manhattan distance.
    pub fn manhattan(self, o: Tile) -> u32 {
        self.x.abs_diff(o.x) + self.y.abs_diff(o.y)
    }

    /// The four neighbours.
    pub fn neighbours(self) -> [Tile; 4] {
        [
            Tile::new(self.x + 1, self.y),
            Tile::new(self.x - 1, self.y),
            Tile::new(self.x, self.y + 1),
            Tile::new(self.x, self.y - 1),
        ]
    }
}

impl fmt::Display for Tile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

/// An axis-aligned rectangle of tiles, written `(x, y, w, h)` in map files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "(i32, i32, i32, i32)", into = "(i32, i32, i32, i32)")]
pub struct Rect {
    /// Left column.
    pub x: i32,
    /// Top row.
    pub y: i32,
    /// Width in tiles.
    pub w: i32,
    /// Height in tiles.
    pub h: i32,
}

impl From<(i32, i32, i32, i32)> for Rect {
    fn from((x, y, w, h): (i32, i32, i32, i32)) -> Self {
        Self { x, y, w, h }
    }
}

impl From<Rect> for (i32, i32, i32, i32) {
    fn from(r: Rect) -> Self {
        (r.x, r.y, r.w, r.h)
    }
}

impl Rect {
    /// Whether the tile lies inside.
    pub fn contains(&self, t: Tile) -> bool {
        t.x >= self.x && t.y >= self.y && t.x < self.x + self.w && t.y < self.y + self.h
    }

    /// Whether `o` lies wholly inside.
    pub fn contains_rect(&self, o: &Rect) -> bool {
        o.w > 0
            && o.h > 0
            && o.x >= self.x
            && o.y >= self.y
            && o.x + o.w <= self.x + self.w
            && o.y + o.h <= self.y + self.h
    }

    /// Every tile, row by row.
    pub fn tiles(&self) -> impl Iterator<Item = Tile> + '_ {
        (self.y..self.y + self.h)
            .flat_map(move |y| (self.x..self.x + self.w).map(move |x| Tile::new(x, y)))
    }
}

impl fmt::Display for Rect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {}, {})", self.x, self.y, self.w, self.h)
    }
}

/// Ground types; the legend of a map file maps characters to these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Terrain {
    /// Open grass.
    Grass,
    /// Roads and footpaths.
    Path,
    /// Ponds and rivers (blocks).
    Water,
    /// A tree (blocks).
    Tree,
    /// A building wall (blocks).
    Wall,
    /// A doorway in a wall.
    Door,
    /// Wooden floor inside.
    Floor,
    /// Tiled floor (kitchens, bathrooms, halls).
    Tiles,
}

impl Terrain {
    /// Whether a person can stand here (before furniture is considered).
    pub fn walkable(self) -> bool {
        !matches!(self, Terrain::Water | Terrain::Tree | Terrain::Wall)
    }
}

/// A sector (a building or an outdoor area such as the park).
#[derive(Debug, Clone)]
pub struct Sector {
    /// Name, unique in the world.
    pub name: String,
    /// The bounding box of its tiles (a sector may be any shape).
    pub rect: Rect,
    /// Indices into [`WorldMap::arenas`].
    pub arenas: Vec<usize>,
}

/// An arena (a room or an outdoor part of a sector).
#[derive(Debug, Clone)]
pub struct Arena {
    /// Name, unique in its sector.
    pub name: String,
    /// Index of its sector.
    pub sector: usize,
    /// The bounding box of its tiles (an arena may be any shape).
    pub rect: Rect,
    /// Its objects.
    pub objects: Vec<PlacedObject>,
    /// Line in the map file, for error messages found later.
    pub line: usize,
}

/// One object placed in an arena.
#[derive(Debug, Clone)]
pub struct PlacedObject {
    /// Index into the map's [`WorldMap::kinds`].
    pub kind: usize,
    /// Its tiles (or their bounding box, for an object imported from per-tile layers).
    pub rect: Rect,
}

/// A named spawn point (the original's spawning blocks, such as `sp-A` in each home).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnPoint {
    /// Its name, unique within its arena (not across the town: every home has an `sp-A`).
    pub name: String,
    /// The arena it lies in.
    pub arena: usize,
    /// Its tile.
    pub tile: Tile,
}

/// A town as per-tile layers: what a map file and the original's matrix folder both come to
/// before the checks every town must pass.
#[derive(Debug, Clone)]
pub(crate) struct CellTown {
    pub world: String,
    pub width: i32,
    pub height: i32,
    pub terrain: Vec<Terrain>,
    pub cell_sector: Vec<u16>,
    pub cell_arena: Vec<u16>,
    pub cell_object: Vec<u16>,
    pub sectors: Vec<Sector>,
    pub arenas: Vec<Arena>,
    pub kinds: Vec<ObjectKind>,
    pub spawns: Vec<SpawnPoint>,
    pub objects_block: bool,
}

/// The address of a tile, as deep as the tile goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address<'a> {
    /// World name.
    pub world: &'a str,
    /// Sector, if the tile is in one.
    pub sector: Option<&'a str>,
    /// Arena, if any.
    pub arena: Option<&'a str>,
    /// Object kind, if any.
    pub object: Option<&'a str>,
}

impl fmt::Display for Address<'_> {
    /// `world:sector:arena:object`, stopping at the deepest known level.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.world)?;
        for part in [self.sector, self.arena, self.object]
            .into_iter()
            .map_while(|p| p)
        {
            write!(f, ":{part}")?;
        }
        Ok(())
    }
}

/// No sector, arena or object in a cell (the cell grids of a town being built and built).
pub(crate) const NONE: u16 = u16::MAX;

/// The loaded town.
#[derive(Resource, Debug, Clone)]
pub struct WorldMap {
    /// The file it came from.
    pub source: PathBuf,
    /// World name (the first part of every address).
    pub world: String,
    /// Width in tiles.
    pub width: i32,
    /// Height in tiles.
    pub height: i32,
    terrain: Vec<Terrain>,
    blocked: Vec<bool>,
    /// Walkable tiles of the street: the connected walkable region most places are in.
    street: Vec<bool>,
    cell_sector: Vec<u16>,
    cell_arena: Vec<u16>,
    cell_object: Vec<u16>,
    /// Every sector.
    pub sectors: Vec<Sector>,
    /// Every arena.
    pub arenas: Vec<Arena>,
    /// The object kinds this town may use: the catalogue, then any kinds the town adds.
    pub kinds: Vec<ObjectKind>,
    /// Named spawn points.
    pub spawns: Vec<SpawnPoint>,
    /// Whether furniture blocks walking (our own maps); `false` for towns drawn for the
    /// original, whose collision layer already holds the furniture that blocks.
    pub objects_block: bool,
    /// The town's own art, when it was drawn in Tiled (the window draws it when its images are
    /// there). Plain, serialisable data; a map file of ours names its Tiled file in `art:`.
    pub art: Option<std::sync::Arc<TiledArt>>,
    address_tiles: HashMap<String, Vec<Tile>>,
}

impl WorldMap {
    fn assemble(source: PathBuf, town: CellTown, blocked: Vec<bool>, street: Vec<bool>) -> Self {
        let CellTown {
            world,
            width,
            height,
            terrain,
            cell_sector,
            cell_arena,
            cell_object,
            sectors,
            arenas,
            kinds,
            spawns,
            objects_block,
        } = town;
        let mut map = Self {
            source,
            world,
            width,
            height,
            terrain,
            blocked,
            street,
            cell_sector,
            cell_arena,
            cell_object,
            sectors,
            arenas,
            kinds,
            spawns,
            objects_block,
            art: None,
            address_tiles: HashMap::new(),
        };
        let mut at: HashMap<String, Vec<Tile>> = HashMap::new();
        for y in 0..height {
            for x in 0..width {
                let t = Tile::new(x, y);
                let a = map.address(t);
                let mut key = a.world.to_string();
                at.entry(key.clone()).or_default().push(t);
                for part in [a.sector, a.arena, a.object].into_iter().map_while(|p| p) {
                    key.push(':');
                    key.push_str(part);
                    at.entry(key.clone()).or_default().push(t);
                }
            }
        }
        map.address_tiles = at;
        map
    }

    fn index(&self, t: Tile) -> Option<usize> {
        self.in_bounds(t).then(|| (t.y * self.width + t.x) as usize)
    }

    /// Whether the tile is on the map.
    pub fn in_bounds(&self, t: Tile) -> bool {
        t.x >= 0 && t.y >= 0 && t.x < self.width && t.y < self.height
    }

    /// The ground at a tile.
    pub fn terrain(&self, t: Tile) -> Option<Terrain> {
        self.index(t).map(|i| self.terrain[i])
    }

    /// Whether a person may walk onto the tile (terrain and furniture).
    pub fn walkable(&self, t: Tile) -> bool {
        self.index(t).is_some_and(|i| !self.blocked[i])
    }

    /// Whether a walk from the street can end on the tile: it is on the street (the walkable
    /// region most places are in), or blocked and beside it (a bed, a building's solid edge).
    /// A stray walkable corner of a place cut off from the street is not.
    pub fn reachable(&self, t: Tile) -> bool {
        let on = |t: Tile| self.index(t).is_some_and(|i| self.street[i]);
        on(t) || (!self.walkable(t) && self.in_bounds(t) && t.neighbours().into_iter().any(on))
    }

    /// The object kind at a tile, if any.
    pub fn object_at(&self, t: Tile) -> Option<&ObjectKind> {
        self.index(t).and_then(|i| {
            (self.cell_object[i] != NONE).then(|| &self.kinds[self.cell_object[i] as usize])
        })
    }

    /// Index into [`WorldMap::kinds`] of the object at a tile inside an arena, if any.
    pub fn object_kind_index_at(&self, t: Tile) -> Option<usize> {
        self.index(t).and_then(|i| {
            (self.cell_object[i] != NONE && self.cell_arena[i] != NONE)
                .then_some(self.cell_object[i] as usize)
        })
    }

    /// Sector index at a tile.
    pub fn sector_at(&self, t: Tile) -> Option<usize> {
        self.index(t)
            .and_then(|i| (self.cell_sector[i] != NONE).then_some(self.cell_sector[i] as usize))
    }

    /// Arena index at a tile.
    pub fn arena_at(&self, t: Tile) -> Option<usize> {
        self.index(t)
            .and_then(|i| (self.cell_arena[i] != NONE).then_some(self.cell_arena[i] as usize))
    }

    /// The address of a tile.
    pub fn address(&self, t: Tile) -> Address<'_> {
        let sector = self.sector_at(t);
        let arena = self.arena_at(t);
        let object = self.object_at(t);
        Address {
            world: &self.world,
            sector: sector.map(|s| self.sectors[s].name.as_str()),
            arena: arena.map(|a| self.arenas[a].name.as_str()),
            object: arena.and(object).map(|o| o.name),
        }
    }

    /// The tiles of an address (any prefix of `world:sector:arena:object`; the world part may be
    /// left out). Empty when the address names nothing.
    pub fn tiles_of(&self, address: &str) -> &[Tile] {
        if let Some(t) = self.address_tiles.get(address) {
            return t;
        }
        self.address_tiles
            .get(&format!("{}:{address}", self.world))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The canonical address of an object named by `query` (`world:sector:arena:object`, the
    /// world part optional, case ignored), or a one-line reason it names no object.
    pub fn find_object(&self, query: &str) -> Result<String, String> {
        let q = self.canonical(query.trim());
        let parts = q.split(':').count();
        let found = if self.address_tiles.contains_key(&q) {
            Some(q.clone())
        } else {
            let low = q.to_lowercase();
            self.address_tiles
                .keys()
                .find(|k| k.to_lowercase() == low)
                .cloned()
        };
        let shown: String = query.chars().take(80).collect();
        match found {
            Some(a) if parts == 4 => Ok(a),
            Some(a) => {
                let mut objects: Vec<&str> = self
                    .address_tiles
                    .keys()
                    .filter(|k| k.starts_with(&format!("{a}:")) && k.split(':').count() == 4)
                    .filter_map(|k| k.rsplit(':').next())
                    .collect();
                objects.sort();
                objects.dedup();
                objects.truncate(8);
                Err(format!(
                    "<{shown}> is a place, not an object; give world:sector:arena:object{}",
                    if objects.is_empty() {
                        String::new()
                    } else {
                        format!(" (objects there: {})", objects.join(", "))
                    }
                ))
            }
            None => Err(format!(
                "no object at <{shown}> on this map; `print tile X Y` shows a tile's address"
            )),
        }
    }

    /// Whether an address names something on this map.
    pub fn has_address(&self, address: &str) -> bool {
        !self.tiles_of(address).is_empty()
    }

    /// Canonical form of an address: with the world prefix.
    pub fn canonical(&self, address: &str) -> String {
        if address == self.world || address.starts_with(&format!("{}:", self.world)) {
            address.to_string()
        } else {
            format!("{}:{address}", self.world)
        }
    }

    /// Sector index by name.
    pub fn sector_by_name(&self, name: &str) -> Option<usize> {
        self.sectors.iter().position(|s| s.name == name)
    }

    /// Arena index by sector and arena name.
    pub fn arena_by_name(&self, sector: &str, arena: &str) -> Option<usize> {
        let s = self.sector_by_name(sector)?;
        self.sectors[s]
            .arenas
            .iter()
            .copied()
            .find(|a| self.arenas[*a].name == arena)
    }

    /// Distinct object kinds of an arena, in order of first appearance.
    pub fn arena_object_kinds(&self, arena: usize) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for o in &self.arenas[arena].objects {
            let n = self.kinds[o.kind].name;
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }

    /// The words for a place, e.g. "In the kitchen of Lin family's house there is a
    /// refrigerator, a cooking area, a kitchen sink and a toaster."
    pub fn describe_arena(&self, arena: usize) -> String {
        let a = &self.arenas[arena];
        let sector = &self.sectors[a.sector].name;
        let kinds = self.arena_object_kinds(arena);
        if kinds.is_empty() {
            return format!("The {} of {sector} is empty.", a.name);
        }
        let items: Vec<String> = kinds
            .iter()
            .map(|k| format!("{} {k}", article(k)))
            .collect();
        format!(
            "In the {} of {sector} there is {}.",
            a.name,
            join_and(&items)
        )
    }

    /// The words for a sector: its arenas.
    pub fn describe_sector(&self, sector: usize) -> String {
        let s = &self.sectors[sector];
        let names: Vec<String> = s
            .arenas
            .iter()
            .map(|a| format!("the {}", self.arenas[*a].name))
            .collect();
        format!("{} has {}.", s.name, join_and(&names))
    }

    /// A walkable tile to stand on for an address: the address's own walkable tiles, or (for
    /// furniture) tiles beside it within the same arena. Used as path goals.
    pub fn stand_tiles(&self, address: &str) -> Vec<Tile> {
        let tiles = self.tiles_of(address);
        let walk: Vec<Tile> = tiles
            .iter()
            .copied()
            .filter(|t| self.walkable(*t) && self.reachable(*t))
            .collect();
        if !walk.is_empty() {
            return walk;
        }
        let mut out = Vec::new();
        for t in tiles {
            for n in t.neighbours() {
                if self.walkable(n)
                    && self.reachable(n)
                    && self.arena_at(n) == self.arena_at(*t)
                    && !out.contains(&n)
                {
                    out.push(n);
                }
            }
        }
        out
    }

    /// Every walkable tile (for spawning and tests).
    pub fn walkable_tiles(&self) -> impl Iterator<Item = Tile> + '_ {
        (0..self.height)
            .flat_map(move |y| (0..self.width).map(move |x| Tile::new(x, y)))
            .filter(|t| self.walkable(*t))
    }
}

fn article(word: &str) -> &'static str {
    match word.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        _ => "a",
    }
}

/// "a, b and c".
pub fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
