//! The town file format (`maps/*.ron`, documented in `maps/README.md`) and its validation.
//! Every check names the file, the line and the field of the mistake.

use super::objects::{OBJECT_KINDS, closest_kind, kind_index};
use super::{Arena, PlacedObject, Rect, Sector, Terrain, Tile, WorldMap};
use crate::data_error::{DataError, SourceLines, read_ron};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MapFile {
    world: String,
    width: i32,
    height: i32,
    legend: BTreeMap<char, Terrain>,
    terrain: Vec<String>,
    sectors: Vec<SectorFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SectorFile {
    name: String,
    rect: Rect,
    arenas: Vec<ArenaFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArenaFile {
    name: String,
    rect: Rect,
    #[serde(default)]
    objects: Vec<ObjectFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectFile {
    kind: String,
    rect: Rect,
}

const NONE: u16 = u16::MAX;

/// Loads and validates a town file.
pub fn load_map(path: &Path) -> Result<WorldMap, DataError> {
    let (file, src): (MapFile, String) = read_ron(path)?;
    build(path, &src, file)
}

/// Parses and validates town text (used by tests with in-memory files too).
pub fn parse_map(path: &Path, src: &str) -> Result<WorldMap, DataError> {
    let file: MapFile = crate::data_error::parse_ron(path, src)?;
    build(path, src, file)
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

    let idx = |t: Tile| (t.y * w + t.x) as usize;
    let in_bounds =
        |r: &Rect| r.x >= 0 && r.y >= 0 && r.w > 0 && r.h > 0 && r.x + r.w <= w && r.y + r.h <= h;
    let mut cell_sector = vec![NONE; (w * h) as usize];
    let mut cell_arena = vec![NONE; (w * h) as usize];
    let mut cell_object = vec![NONE; (w * h) as usize];
    let mut sectors = Vec::new();
    let mut arenas: Vec<Arena> = Vec::new();
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
        if !in_bounds(&s.rect) {
            return Err(err(
                s_line,
                format!("{field}.rect"),
                format!("rect {} is outside the {w}×{h} map", s.rect),
            ));
        }
        for t in s.rect.tiles() {
            let c = &mut cell_sector[idx(t)];
            if *c != NONE {
                let other = &file.sectors[*c as usize].name;
                return Err(err(
                    s_line,
                    format!("{field}.rect"),
                    format!("sector '{}' overlaps sector '{other}' at {t}", s.name),
                ));
            }
            *c = si as u16;
        }
        let mut sector = Sector {
            name: s.name.clone(),
            rect: s.rect,
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
            if !s.rect.contains_rect(&a.rect) {
                return Err(err(
                    a_line,
                    format!("{field}.rect"),
                    format!(
                        "arena '{}' {} is not inside its sector '{}' {}",
                        a.name, a.rect, s.name, s.rect
                    ),
                ));
            }
            let arena_id = arenas.len();
            for t in a.rect.tiles() {
                let c = &mut cell_arena[idx(t)];
                if *c != NONE {
                    let other = &arenas[*c as usize];
                    return Err(err(
                        a_line,
                        format!("{field}.rect"),
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
            let mut objects = Vec::new();
            for (oi, o) in a.objects.iter().enumerate() {
                let o_off = lines.offset_of_quoted(&o.kind, cursor);
                cursor = o_off + 1;
                let o_line = lines.line_of_offset(o_off);
                let field = format!("{field}.objects[{oi}]");
                let Some(kind) = kind_index(&o.kind) else {
                    return Err(err(
                        o_line,
                        format!("{field}.kind"),
                        format!(
                            "unknown object kind '{}' (did you mean '{}'?)",
                            o.kind,
                            closest_kind(&o.kind)
                        ),
                    ));
                };
                if !a.rect.contains_rect(&o.rect) {
                    return Err(err(
                        o_line,
                        format!("{field}.rect"),
                        format!(
                            "object '{}' {} is outside its arena '{}' {}",
                            o.kind, o.rect, a.name, a.rect
                        ),
                    ));
                }
                for t in o.rect.tiles() {
                    if !terrain[idx(t)].walkable() {
                        return Err(err(
                            o_line,
                            format!("{field}.rect"),
                            format!("object '{}' stands on {:?} at {t}", o.kind, terrain[idx(t)]),
                        ));
                    }
                    cell_object[idx(t)] = kind as u16;
                }
                objects.push(PlacedObject { kind, rect: o.rect });
            }
            sector.arenas.push(arena_id);
            arenas.push(Arena {
                name: a.name.clone(),
                sector: si,
                rect: a.rect,
                objects,
                line: a_line,
            });
        }
        sectors.push(sector);
    }

    let blocked: Vec<bool> = (0..(w * h) as usize)
        .map(|i| {
            !terrain[i].walkable()
                || (cell_object[i] != NONE && OBJECT_KINDS[cell_object[i] as usize].blocks)
        })
        .collect();

    // Reachability: the largest connected walkable region is "the street"; every arena must
    // have a walkable tile in it, or agents sent there could never arrive.
    let mut comp = vec![u32::MAX; (w * h) as usize];
    let mut sizes = Vec::new();
    for start in 0..(w * h) as usize {
        if blocked[start] || comp[start] != u32::MAX {
            continue;
        }
        let id = sizes.len() as u32;
        let mut n = 0usize;
        let mut q = VecDeque::from([start]);
        comp[start] = id;
        while let Some(i) = q.pop_front() {
            n += 1;
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
        sizes.push(n);
    }
    let main = sizes
        .iter()
        .enumerate()
        .max_by_key(|(_, n)| **n)
        .map(|(i, _)| i as u32);
    for a in &arenas {
        let reachable = a.rect.tiles().any(|t| Some(comp[idx(t)]) == main);
        if !reachable {
            return Err(err(
                a.line,
                format!(
                    "sectors[{}].arenas[{}]",
                    a.sector,
                    sectors[a.sector]
                        .arenas
                        .iter()
                        .position(|x| arenas[*x].name == a.name)
                        .unwrap_or(0)
                ),
                format!(
                    "arena '{}' of '{}' cannot be reached on foot from the streets (walls, water or furniture close it off; add a door)",
                    a.name, sectors[a.sector].name
                ),
            ));
        }
    }

    Ok(WorldMap::assemble(
        path.to_path_buf(),
        file.world,
        w,
        h,
        terrain,
        blocked,
        cell_sector,
        cell_arena,
        cell_object,
        sectors,
        arenas,
    ))
}

fn sectors_name<'a>(done: &'a [Sector], current: &'a Sector, i: usize) -> &'a str {
    done.get(i)
        .map(|s| s.name.as_str())
        .unwrap_or(current.name.as_str())
}
