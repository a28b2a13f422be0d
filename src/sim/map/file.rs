//! The town file format (`maps/*.ron`, documented in `maps/README.md`) and its validation.
//! Every check names the file, the line and the field of the mistake.

use super::objects::{OBJECT_KINDS, added_kind, closest_kind};
use super::tiled_map::absolute;
use super::{
    Arena, CellTown, PlacedObject, Rect, Sector, SpawnPoint, Terrain, Tile, TiledArt, WorldMap,
};
use crate::data_error::{DataError, SourceLines};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::Arc;

/// The file as written.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct MapFile {
    world: String,
    width: i32,
    height: i32,
    /// Whether furniture blocks walking (default); `false` for towns whose walls and
    /// furniture are all in the terrain, as in towns drawn for the original.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    objects_block: bool,
    /// Object kinds this town adds to the catalogue (drawn with a generic picture; they never
    /// block). A kind neither here nor in the catalogue is an error, so typos are caught.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    new_kinds: Vec<String>,
    /// A Tiled map whose art layers draw this town (relative to this file, or absolute): what
    /// `simulacra import map` of a Tiled map writes, so the converted town keeps its pictures.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "plain_string"
    )]
    art: Option<String>,
    legend: BTreeMap<char, Terrain>,
    terrain: Vec<String>,
    sectors: Vec<SectorFile>,
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
struct SectorFile {
    name: String,
    rect: Rect,
    /// More rectangles of the same sector (a sector of any shape is a union of rectangles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    more: Vec<Rect>,
    arenas: Vec<ArenaFile>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ArenaFile {
    name: String,
    rect: Rect,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    more: Vec<Rect>,
    #[serde(default)]
    objects: Vec<ObjectFile>,
    /// Named spawn points in this arena, such as `("sp-A", (3, 2))`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    spawns: Vec<(String, (i32, i32))>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ObjectFile {
    kind: String,
    rect: Rect,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    more: Vec<Rect>,
}

pub(crate) const NONE: u16 = u16::MAX;

/// Loads and validates a town file.
pub(crate) fn load_ron_map(path: &Path) -> Result<WorldMap, DataError> {
    let src = std::fs::read_to_string(path)
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
    match super::tiled_map::load_art(&file) {
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

fn build(path: &Path, src: &str, file: MapFile) -> Result<WorldMap, DataError> {
    let lines = SourceLines::new(src);
    let err = |line: usize, field: String, msg: String| DataError::new(path, line, field, msg);
    let (w, h) = (file.width, file.height);
    if !(1..=1024).contains(&w) || !(1..=1024).contains(&h) {
        return Err(err(
            lines.line_near("width", 0),
            "width".into(),
            format!("size {w}×{h} must be 1..=1024 each"),
        ));
    }

    // Terrain rows: one string per row, in the order they appear in the file.
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

    // The kinds table: the catalogue, then the kinds this town adds.
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

    let idx = |t: Tile| (t.y * w + t.x) as usize;
    let in_bounds = |r: &Rect| {
        r.x >= 0
            && r.y >= 0
            && r.w > 0
            && r.h > 0
            && r.x < w
            && r.y < h
            && r.w <= w - r.x
            && r.h <= h - r.y
    };
    let mut cell_sector = vec![NONE; (w * h) as usize];
    let mut cell_arena = vec![NONE; (w * h) as usize];
    let mut cell_object = vec![NONE; (w * h) as usize];
    let mut sectors = Vec::new();
    let mut arenas: Vec<Arena> = Vec::new();
    let mut spawns = Vec::new();
    let mut cursor = lines
        .find_from("sectors", terrain_at)
        .map(|(_, o)| o)
        .unwrap_or(0);
    let mut sector_names = HashMap::new();

    for (si, s) in file.sectors.iter().enumerate() {
        let s_off = lines.offset_of_quoted(&s.name, cursor);
        cursor = s_off + 1;
        let s_line = lines.line_of_offset(s_off);
        let field = format!("sectors[{si}]");
        if s.name.trim().is_empty() || s.name.contains(':') {
            return Err(err(
                s_line,
                format!("{field}.name"),
                format!("bad sector name {:?} (empty or has ':')", s.name),
            ));
        }
        if let Some(prev) = sector_names.insert(s.name.clone(), si) {
            return Err(err(
                s_line,
                format!("{field}.name"),
                format!("sector '{}' is already defined as sectors[{prev}]", s.name),
            ));
        }
        for (ri, r) in std::iter::once(&s.rect).chain(&s.more).enumerate() {
            let rf = rect_field(&field, ri);
            if !in_bounds(r) {
                return Err(err(
                    s_line,
                    rf,
                    format!("rect {r} is outside the {w}×{h} map"),
                ));
            }
            for t in r.tiles() {
                let c = &mut cell_sector[idx(t)];
                if *c == si as u16 {
                    continue; // its own rectangles may overlap
                }
                if *c != NONE {
                    let other = &file.sectors[*c as usize].name;
                    return Err(err(
                        s_line,
                        rf,
                        format!("sector '{}' overlaps sector '{other}' at {t}", s.name),
                    ));
                }
                *c = si as u16;
            }
        }
        let mut sector = Sector {
            name: s.name.clone(),
            rect: bounding(std::iter::once(&s.rect).chain(&s.more)),
            arenas: Vec::new(),
        };
        let mut arena_names = HashMap::new();
        for (ai, a) in s.arenas.iter().enumerate() {
            let a_off = lines.offset_of_quoted(&a.name, cursor);
            cursor = a_off + 1;
            let a_line = lines.line_of_offset(a_off);
            let field = format!("sectors[{si}].arenas[{ai}]");
            if a.name.trim().is_empty() || a.name.contains(':') {
                return Err(err(
                    a_line,
                    format!("{field}.name"),
                    format!("bad arena name {:?}", a.name),
                ));
            }
            if arena_names.insert(a.name.clone(), ai).is_some() {
                return Err(err(
                    a_line,
                    format!("{field}.name"),
                    format!("arena '{}' appears twice in '{}'", a.name, s.name),
                ));
            }
            let arena_id = arenas.len();
            for (ri, r) in std::iter::once(&a.rect).chain(&a.more).enumerate() {
                let rf = rect_field(&field, ri);
                if !in_bounds(r) {
                    return Err(err(
                        a_line,
                        rf,
                        format!("rect {r} is empty or outside the {w}×{h} map"),
                    ));
                }
                if let Some(t) = r.tiles().find(|t| cell_sector[idx(*t)] != si as u16) {
                    return Err(err(
                        a_line,
                        rf,
                        format!(
                            "arena '{}' {r} is not inside its sector '{}' {} (tile {t})",
                            a.name, s.name, sector.rect
                        ),
                    ));
                }
                for t in r.tiles() {
                    let c = &mut cell_arena[idx(t)];
                    if *c == arena_id as u16 {
                        continue;
                    }
                    if *c != NONE {
                        let other = &arenas[*c as usize];
                        return Err(err(
                            a_line,
                            rf,
                            format!(
                                "arena '{}' overlaps arena '{}' of '{}' at {t}",
                                a.name,
                                other.name,
                                sectors_name(&sectors, &sector, other.sector)
                            ),
                        ));
                    }
                    *c = arena_id as u16;
                }
            }
            let mut objects = Vec::new();
            for (oi, o) in a.objects.iter().enumerate() {
                let o_off = lines.offset_of_quoted(&o.kind, cursor);
                cursor = o_off + 1;
                let o_line = lines.line_of_offset(o_off);
                let field = format!("{field}.objects[{oi}]");
                let Some(kind) = kinds.iter().position(|k| k.name == o.kind) else {
                    return Err(err(
                        o_line,
                        format!("{field}.kind"),
                        format!(
                            "unknown object kind '{}' (did you mean '{}'? A town may add kinds in `new_kinds`)",
                            o.kind,
                            closest_kind(&o.kind)
                        ),
                    ));
                };
                for (ri, r) in std::iter::once(&o.rect).chain(&o.more).enumerate() {
                    let rf = rect_field(&field, ri);
                    if !in_bounds(r) {
                        return Err(err(
                            o_line,
                            rf,
                            format!("rect {r} is empty or outside the {w}×{h} map"),
                        ));
                    }
                    if let Some(t) = r.tiles().find(|t| cell_arena[idx(*t)] != arena_id as u16) {
                        return Err(err(
                            o_line,
                            rf,
                            format!(
                                "object '{}' {r} is outside its arena '{}' (tile {t})",
                                o.kind, a.name
                            ),
                        ));
                    }
                    for t in r.tiles() {
                        if file.objects_block && !terrain[idx(t)].walkable() {
                            return Err(err(
                                o_line,
                                rf.clone(),
                                format!(
                                    "object '{}' stands on {:?} at {t}",
                                    o.kind,
                                    terrain[idx(t)]
                                ),
                            ));
                        }
                        cell_object[idx(t)] = kind as u16;
                    }
                    objects.push(PlacedObject { kind, rect: *r });
                }
            }
            let spawns_at = lines
                .find_from("spawns", a_off)
                .map(|(_, o)| o)
                .unwrap_or(a_off);
            let mut spawn_names = HashMap::new();
            for (pi, (name, (x, y))) in a.spawns.iter().enumerate() {
                let p_line = lines.line_of_quoted(name, spawns_at);
                let t = Tile::new(*x, *y);
                let pf = format!("{field}.spawns[{pi}]");
                if name.trim().is_empty() || name.contains(':') {
                    return Err(err(p_line, pf, format!("bad spawn name {name:?}")));
                }
                if spawn_names.insert(name.clone(), pi).is_some() {
                    return Err(err(
                        p_line,
                        pf,
                        format!("spawn '{name}' appears twice in '{}'", a.name),
                    ));
                }
                if !(0..w).contains(x)
                    || !(0..h).contains(y)
                    || cell_arena[idx(t)] != arena_id as u16
                {
                    return Err(err(
                        p_line,
                        pf,
                        format!("spawn '{name}' at {t} is not in its arena '{}'", a.name),
                    ));
                }
                if !terrain[idx(t)].walkable() {
                    return Err(err(
                        p_line,
                        pf,
                        format!("spawn '{name}' stands on {:?} at {t}", terrain[idx(t)]),
                    ));
                }
                spawns.push(SpawnPoint {
                    name: name.clone(),
                    arena: arena_id,
                    tile: t,
                });
            }
            sector.arenas.push(arena_id);
            arenas.push(Arena {
                name: a.name.clone(),
                sector: si,
                rect: bounding(std::iter::once(&a.rect).chain(&a.more)),
                objects,
                line: a_line,
            });
        }
        sectors.push(sector);
    }

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

/// `field.rect` for the first rectangle of a region, `field.more[i]` for the others.
fn rect_field(field: &str, i: usize) -> String {
    if i == 0 {
        format!("{field}.rect")
    } else {
        format!("{field}.more[{}]", i - 1)
    }
}

/// The bounding box of some rectangles.
pub(crate) fn bounding<'a>(rects: impl Iterator<Item = &'a Rect>) -> Rect {
    let mut b: Option<(i32, i32, i32, i32)> = None;
    for r in rects {
        let (x0, y0, x1, y1) = (r.x, r.y, r.x + r.w, r.y + r.h);
        b = Some(match b {
            None => (x0, y0, x1, y1),
            Some((a, b_, c, d)) => (a.min(x0), b_.min(y0), c.max(x1), d.max(y1)),
        });
    }
    let (x0, y0, x1, y1) = b.unwrap_or((0, 0, 0, 0));
    Rect {
        x: x0,
        y: y0,
        w: x1 - x0,
        h: y1 - y0,
    }
}

/// The checks every town passes, whatever it was read from, then the finished map: every
/// arena can be reached on foot from the streets. `arena_error` words an error about an arena
/// in terms of the source (a line of a map file, a cell of a layer).
pub(crate) fn finish(
    path: &Path,
    town: CellTown,
    arena_error: impl Fn(&CellTown, usize, String) -> DataError,
) -> Result<WorldMap, DataError> {
    let (w, h) = (town.width, town.height);
    let blocked: Vec<bool> = (0..(w * h) as usize)
        .map(|i| {
            !town.terrain[i].walkable()
                || (town.objects_block
                    && town.cell_object[i] != NONE
                    && town.kinds[town.cell_object[i] as usize].blocks)
        })
        .collect();

    // Reachability: "the street" is the connected walkable region that most arenas have a
    // walkable tile in (then the largest: a town may be drawn inside a larger empty margin).
    // Every arena must have a walkable tile on it, or agents sent there could never arrive; an
    // arena with no walkable tile at all (a building drawn as one solid block) must have a tile
    // beside it, as a walk may end on its goal. (Stricter than `WorldMap::reachable`: a room
    // with a floor is not reached through its walls.)
    let mut comp = vec![u32::MAX; (w * h) as usize];
    let mut sizes: Vec<(usize, usize)> = Vec::new(); // (arenas, tiles) per region
    for start in 0..(w * h) as usize {
        if blocked[start] || comp[start] != u32::MAX {
            continue;
        }
        let id = sizes.len() as u32;
        let mut places: HashSet<u16> = HashSet::new();
        let mut n = 0usize;
        let mut q = VecDeque::from([start]);
        comp[start] = id;
        while let Some(i) = q.pop_front() {
            n += 1;
            if town.cell_arena[i] != NONE {
                places.insert(town.cell_arena[i]);
            }
            let (x, y) = ((i as i32) % w, (i as i32) / w);
            for (dx, dy) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                let (nx, ny) = (x + dx, y + dy);
                if nx >= 0 && ny >= 0 && nx < w && ny < h {
                    let j = (ny * w + nx) as usize;
                    if !blocked[j] && comp[j] == u32::MAX {
                        comp[j] = id;
                        q.push_back(j);
                    }
                }
            }
        }
        sizes.push((places.len(), n));
    }
    let main = sizes
        .iter()
        .enumerate()
        .max_by_key(|(_, size)| **size)
        .map(|(i, _)| i as u32);
    let on_street = |x: i32, y: i32| {
        x >= 0 && y >= 0 && x < w && y < h && Some(comp[(y * w + x) as usize]) == main
    };
    let mut reachable = vec![false; town.arenas.len()];
    let mut solid = vec![true; town.arenas.len()];
    let mut beside = vec![false; town.arenas.len()];
    for (i, (&a, &b)) in town.cell_arena.iter().zip(&blocked).enumerate() {
        if a == NONE {
            continue;
        }
        let (x, y) = ((i as i32) % w, (i as i32) / w);
        solid[a as usize] &= b;
        reachable[a as usize] |= on_street(x, y);
        beside[a as usize] |= [(1, 0), (-1, 0), (0, 1), (0, -1)]
            .iter()
            .any(|(dx, dy)| on_street(x + dx, y + dy));
    }
    for a in 0..reachable.len() {
        reachable[a] |= solid[a] && beside[a];
    }
    if let Some(a) = reachable.iter().position(|r| !r) {
        let msg = format!(
            "arena '{}' of '{}' cannot be reached on foot from the streets (walls, water or furniture close it off; add a door)",
            town.arenas[a].name, town.sectors[town.arenas[a].sector].name
        );
        return Err(arena_error(&town, a, msg));
    }
    let street = comp.iter().map(|c| Some(*c) == main).collect();
    Ok(WorldMap::assemble(
        path.to_path_buf(),
        town,
        blocked,
        street,
    ))
}

fn sectors_name<'a>(done: &'a [Sector], current: &'a Sector, i: usize) -> &'a str {
    done.get(i)
        .map(|s| s.name.as_str())
        .unwrap_or(current.name.as_str())
}

/// Rectangles that together cover exactly the tiles `inside` says, row runs merged downwards
/// (a region of any shape; a rectangle comes out as one).
pub(crate) fn cover(w: i32, h: i32, inside: impl Fn(usize) -> bool) -> Vec<Rect> {
    let (wu, hu) = (w as usize, h as usize);
    let mut used = vec![false; wu * hu];
    let free = |used: &[bool], x: usize, y: usize| inside(y * wu + x) && !used[y * wu + x];
    let mut out = Vec::new();
    for y in 0..hu {
        for x in 0..wu {
            if !free(&used, x, y) {
                continue;
            }
            let mut x1 = x;
            while x1 + 1 < wu && free(&used, x1 + 1, y) {
                x1 += 1;
            }
            let mut y1 = y;
            while y1 + 1 < hu && (x..=x1).all(|xx| free(&used, xx, y1 + 1)) {
                y1 += 1;
            }
            for yy in y..=y1 {
                for xx in x..=x1 {
                    used[yy * wu + xx] = true;
                }
            }
            out.push(Rect {
                x: x as i32,
                y: y as i32,
                w: (x1 - x + 1) as i32,
                h: (y1 - y + 1) as i32,
            });
        }
    }
    out
}

/// The legend written by [`write_ron`].
const LEGEND: [(char, Terrain); 8] = [
    ('.', Terrain::Grass),
    ('=', Terrain::Path),
    ('~', Terrain::Water),
    ('T', Terrain::Tree),
    ('#', Terrain::Wall),
    ('+', Terrain::Door),
    ('_', Terrain::Floor),
    (':', Terrain::Tiles),
];

/// The town as a map file of ours (`maps/*.ron`). Loading the text gives back the same town,
/// tile for tile; a town drawn in Tiled names its Tiled file (by its absolute path) in `art:`.
pub fn write_ron(map: &WorldMap, comment: &str) -> String {
    write_ron_beside(map, comment, None)
}

/// [`write_ron`] for a file written into `dir`: the Tiled file in `art:` is named relative to
/// `dir` when it lies below it or beside it (so the pair can be moved together), what
/// `simulacra import map` writes.
pub fn write_ron_beside(map: &WorldMap, comment: &str, dir: Option<&Path>) -> String {
    let (w, h) = (map.width, map.height);
    let code = |t: Terrain| {
        LEGEND
            .iter()
            .find(|(_, k)| *k == t)
            .map(|(c, _)| *c)
            .unwrap_or('.')
    };
    let terrain: Vec<String> = (0..h)
        .map(|y| {
            (0..w)
                .map(|x| code(map.terrain[(y * w + x) as usize]))
                .collect()
        })
        .collect();
    let split = |mut rects: Vec<Rect>| {
        let first = if rects.is_empty() {
            Rect {
                x: 0,
                y: 0,
                w: 0,
                h: 0,
            }
        } else {
            rects.remove(0)
        };
        (first, rects)
    };
    let sectors = map
        .sectors
        .iter()
        .enumerate()
        .map(|(si, s)| {
            let (rect, more) = split(cover(w, h, |i| map.cell_sector[i] == si as u16));
            let arenas = s
                .arenas
                .iter()
                .map(|&ai| {
                    let a = &map.arenas[ai];
                    let (rect, more) = split(cover(w, h, |i| map.cell_arena[i] == ai as u16));
                    let mut kinds: Vec<u16> = Vec::new();
                    for i in 0..(w * h) as usize {
                        let k = map.cell_object[i];
                        if map.cell_arena[i] == ai as u16 && k != NONE && !kinds.contains(&k) {
                            kinds.push(k);
                        }
                    }
                    let objects = kinds
                        .iter()
                        .map(|&k| {
                            let (rect, more) = split(cover(w, h, |i| {
                                map.cell_arena[i] == ai as u16 && map.cell_object[i] == k
                            }));
                            ObjectFile {
                                kind: map.kinds[k as usize].name.to_string(),
                                rect,
                                more,
                            }
                        })
                        .collect();
                    ArenaFile {
                        name: a.name.clone(),
                        rect,
                        more,
                        objects,
                        spawns: map
                            .spawns
                            .iter()
                            .filter(|p| p.arena == ai)
                            .map(|p| (p.name.clone(), (p.tile.x, p.tile.y)))
                            .collect(),
                    }
                })
                .collect();
            SectorFile {
                name: s.name.clone(),
                rect,
                more,
                arenas,
            }
        })
        .collect();
    let catalogue = super::objects::OBJECT_KINDS.len();
    let file = MapFile {
        world: map.world.clone(),
        width: w,
        height: h,
        objects_block: map.objects_block,
        new_kinds: map.kinds[catalogue..]
            .iter()
            .map(|k| k.name.to_string())
            .collect(),
        art: map.art.as_ref().map(|a| art_reference(&a.source, dir)),
        legend: LEGEND.iter().copied().collect(),
        terrain,
        sectors,
    };
    crate::data_error::ron_text(&file, 4, comment)
}

/// How a map file in `dir` names the Tiled file `source`: relative when `dir` is an ancestor of
/// it or a sibling's ancestor (`../visuals/town.tmj`), otherwise absolute.
fn art_reference(source: &Path, dir: Option<&Path>) -> String {
    let source = absolute(source);
    if let Some(dir) = dir {
        let dir = absolute(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        });
        let mut up = String::new();
        for base in dir.ancestors().take(3) {
            if let Ok(rest) = source.strip_prefix(base) {
                return format!("{up}{}", rest.display());
            }
            up.push_str("../");
        }
    }
    source.display().to_string()
}
