//! A map file's places checked as they are painted on the per-tile layers, sector by sector in
//! the order of the file: each sector's, arena's and object's rectangles, and the spawn points.

use super::{ArenaFile, MapFile, NONE, SectorFile};
use crate::data_error::{DataError, SourceLines};
use crate::sim::map::objects::{ObjectKind, closest_kind};
use crate::sim::map::{Arena, PlacedObject, Rect, Sector, SpawnPoint, Terrain, Tile};
use std::collections::HashMap;
use std::path::Path;

/// A map's size in tiles, and where a tile or a rectangle falls in it.
#[derive(Clone, Copy)]
struct Grid {
    w: i32,
    h: i32,
}

impl Grid {
    /// The index of a tile in the per-tile layers (row-major).
    fn idx(self, t: Tile) -> usize {
        (t.y * self.w + t.x) as usize
    }

    /// Whether a rectangle is not empty and lies inside the map.
    fn in_bounds(self, r: &Rect) -> bool {
        let (w, h) = (self.w, self.h);
        r.x >= 0
            && r.y >= 0
            && r.w > 0
            && r.h > 0
            && r.x < w
            && r.y < h
            && r.w <= w - r.x
            && r.h <= h - r.y
    }
}

/// A town being painted from its map file, sector by sector, in the order of the file: each
/// tile's sector, arena and object, and the places made so far. `cursor` is where the search
/// for the next name in the text starts, so that each error names the line of its own place.
pub(super) struct Painter<'a> {
    path: &'a Path,
    lines: &'a SourceLines<'a>,
    file: &'a MapFile,
    grid: Grid,
    pub(super) terrain: Vec<Terrain>,
    pub(super) kinds: Vec<ObjectKind>,
    pub(super) cell_sector: Vec<u16>,
    pub(super) cell_arena: Vec<u16>,
    pub(super) cell_object: Vec<u16>,
    pub(super) sectors: Vec<Sector>,
    pub(super) arenas: Vec<Arena>,
    pub(super) spawns: Vec<SpawnPoint>,
    cursor: usize,
    sector_names: HashMap<String, usize>,
}

impl<'a> Painter<'a> {
    /// An empty town of the file's size; the search for the sectors starts after `terrain`.
    pub(super) fn new(
        path: &'a Path,
        lines: &'a SourceLines<'a>,
        file: &'a MapFile,
        terrain: Vec<Terrain>,
        kinds: Vec<ObjectKind>,
        terrain_at: usize,
    ) -> Self {
        let (w, h) = (file.width, file.height);
        Painter {
            path,
            lines,
            file,
            grid: Grid { w, h },
            terrain,
            kinds,
            cell_sector: vec![NONE; (w * h) as usize],
            cell_arena: vec![NONE; (w * h) as usize],
            cell_object: vec![NONE; (w * h) as usize],
            sectors: Vec::new(),
            arenas: Vec::new(),
            spawns: Vec::new(),
            cursor: lines
                .find_from("sectors", terrain_at)
                .map(|(_, o)| o)
                .unwrap_or(0),
            sector_names: HashMap::new(),
        }
    }

    /// An error at `line` of the map file.
    fn err(&self, line: usize, field: String, msg: String) -> DataError {
        DataError::new(self.path, line, field, msg)
    }

    /// Sector `si`: its name (not empty, no ':', not taken), its rectangles, then its arenas.
    pub(super) fn read_sector(&mut self, si: usize, s: &SectorFile) -> Result<(), DataError> {
        let s_off = self.lines.offset_of_quoted(&s.name, self.cursor);
        self.cursor = s_off + 1;
        let s_line = self.lines.line_of_offset(s_off);
        let field = format!("sectors[{si}]");
        if s.name.trim().is_empty() || s.name.contains(':') {
            return Err(self.err(
                s_line,
                format!("{field}.name"),
                format!("bad sector name {:?} (empty or has ':')", s.name),
            ));
        }
        if let Some(prev) = self.sector_names.insert(s.name.clone(), si) {
            return Err(self.err(
                s_line,
                format!("{field}.name"),
                format!("sector '{}' is already defined as sectors[{prev}]", s.name),
            ));
        }
        self.paint_sector(si, s, s_line, &field)?;
        let mut sector = Sector {
            name: s.name.clone(),
            rect: bounding(std::iter::once(&s.rect).chain(&s.more)),
            arenas: Vec::new(),
        };
        let mut arena_names = HashMap::new();
        for (ai, a) in s.arenas.iter().enumerate() {
            self.read_arena((si, s), &mut sector, (ai, a), &mut arena_names)?;
        }
        self.sectors.push(sector);
        Ok(())
    }

    /// A sector's rectangles painted on the map: inside it, and over no other sector (its own
    /// rectangles may overlap).
    fn paint_sector(
        &mut self,
        si: usize,
        s: &SectorFile,
        s_line: usize,
        field: &str,
    ) -> Result<(), DataError> {
        let g = self.grid;
        let (w, h) = (g.w, g.h);
        for (ri, r) in std::iter::once(&s.rect).chain(&s.more).enumerate() {
            let rf = rect_field(field, ri);
            if !g.in_bounds(r) {
                return Err(self.err(s_line, rf, format!("rect {r} is outside the {w}×{h} map")));
            }
            for t in r.tiles() {
                let c = &mut self.cell_sector[g.idx(t)];
                if *c == si as u16 {
                    continue; // its own rectangles may overlap
                }
                if *c != NONE {
                    let other = &self.file.sectors[*c as usize].name;
                    return Err(self.err(
                        s_line,
                        rf,
                        format!("sector '{}' overlaps sector '{other}' at {t}", s.name),
                    ));
                }
                *c = si as u16;
            }
        }
        Ok(())
    }

    /// Arena `ai` of sector `si` (`sector`, being built): its name (not empty, no ':', once in
    /// the sector), its rectangles painted inside the sector and over no other arena, its
    /// objects and its spawn points.
    fn read_arena(
        &mut self,
        (si, s): (usize, &SectorFile),
        sector: &mut Sector,
        (ai, a): (usize, &ArenaFile),
        arena_names: &mut HashMap<String, usize>,
    ) -> Result<(), DataError> {
        let g = self.grid;
        let (w, h) = (g.w, g.h);
        let a_off = self.lines.offset_of_quoted(&a.name, self.cursor);
        self.cursor = a_off + 1;
        let a_line = self.lines.line_of_offset(a_off);
        let field = format!("sectors[{si}].arenas[{ai}]");
        if a.name.trim().is_empty() || a.name.contains(':') {
            return Err(self.err(
                a_line,
                format!("{field}.name"),
                format!("bad arena name {:?}", a.name),
            ));
        }
        if arena_names.insert(a.name.clone(), ai).is_some() {
            return Err(self.err(
                a_line,
                format!("{field}.name"),
                format!("arena '{}' appears twice in '{}'", a.name, s.name),
            ));
        }
        let arena_id = self.arenas.len();
        for (ri, r) in std::iter::once(&a.rect).chain(&a.more).enumerate() {
            let rf = rect_field(&field, ri);
            if !g.in_bounds(r) {
                return Err(self.err(
                    a_line,
                    rf,
                    format!("rect {r} is empty or outside the {w}×{h} map"),
                ));
            }
            if let Some(t) = r.tiles().find(|t| self.cell_sector[g.idx(*t)] != si as u16) {
                return Err(self.err(
                    a_line,
                    rf,
                    format!(
                        "arena '{}' {r} is not inside its sector '{}' {} (tile {t})",
                        a.name, s.name, sector.rect
                    ),
                ));
            }
            for t in r.tiles() {
                let c = &mut self.cell_arena[g.idx(t)];
                if *c == arena_id as u16 {
                    continue;
                }
                if *c != NONE {
                    let other = &self.arenas[*c as usize];
                    return Err(self.err(
                        a_line,
                        rf,
                        format!(
                            "arena '{}' overlaps arena '{}' of '{}' at {t}",
                            a.name,
                            other.name,
                            sectors_name(&self.sectors, sector, other.sector)
                        ),
                    ));
                }
                *c = arena_id as u16;
            }
        }
        let objects = self.read_objects(a, arena_id, &field)?;
        self.read_spawns(a, arena_id, a_off, &field)?;
        sector.arenas.push(arena_id);
        self.arenas.push(Arena {
            name: a.name.clone(),
            sector: si,
            rect: bounding(std::iter::once(&a.rect).chain(&a.more)),
            objects,
            line: a_line,
        });
        Ok(())
    }

    /// An arena's objects: of a known kind, inside the arena, and on walkable ground when
    /// furniture blocks walking.
    fn read_objects(
        &mut self,
        a: &ArenaFile,
        arena_id: usize,
        field: &str,
    ) -> Result<Vec<PlacedObject>, DataError> {
        let g = self.grid;
        let (w, h) = (g.w, g.h);
        let mut objects = Vec::new();
        for (oi, o) in a.objects.iter().enumerate() {
            let o_off = self.lines.offset_of_quoted(&o.kind, self.cursor);
            self.cursor = o_off + 1;
            let o_line = self.lines.line_of_offset(o_off);
            let field = format!("{field}.objects[{oi}]");
            let Some(kind) = self.kinds.iter().position(|k| k.name == o.kind) else {
                return Err(self.err(
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
                if !g.in_bounds(r) {
                    return Err(self.err(
                        o_line,
                        rf,
                        format!("rect {r} is empty or outside the {w}×{h} map"),
                    ));
                }
                if let Some(t) = r
                    .tiles()
                    .find(|t| self.cell_arena[g.idx(*t)] != arena_id as u16)
                {
                    return Err(self.err(
                        o_line,
                        rf,
                        format!(
                            "object '{}' {r} is outside its arena '{}' (tile {t})",
                            o.kind, a.name
                        ),
                    ));
                }
                for t in r.tiles() {
                    if self.file.objects_block && !self.terrain[g.idx(t)].walkable() {
                        return Err(self.err(
                            o_line,
                            rf.clone(),
                            format!(
                                "object '{}' stands on {:?} at {t}",
                                o.kind,
                                self.terrain[g.idx(t)]
                            ),
                        ));
                    }
                    self.cell_object[g.idx(t)] = kind as u16;
                }
                objects.push(PlacedObject { kind, rect: *r });
            }
        }
        Ok(objects)
    }

    /// An arena's spawn points: named once in the arena (not empty, no ':'), on a walkable
    /// tile of it.
    fn read_spawns(
        &mut self,
        a: &ArenaFile,
        arena_id: usize,
        a_off: usize,
        field: &str,
    ) -> Result<(), DataError> {
        let g = self.grid;
        let (w, h) = (g.w, g.h);
        let spawns_at = self
            .lines
            .find_from("spawns", a_off)
            .map(|(_, o)| o)
            .unwrap_or(a_off);
        let mut spawn_names = HashMap::new();
        for (pi, (name, (x, y))) in a.spawns.iter().enumerate() {
            let p_line = self.lines.line_of_quoted(name, spawns_at);
            let t = Tile::new(*x, *y);
            let pf = format!("{field}.spawns[{pi}]");
            if name.trim().is_empty() || name.contains(':') {
                return Err(self.err(p_line, pf, format!("bad spawn name {name:?}")));
            }
            if spawn_names.insert(name.clone(), pi).is_some() {
                return Err(self.err(
                    p_line,
                    pf,
                    format!("spawn '{name}' appears twice in '{}'", a.name),
                ));
            }
            if !(0..w).contains(x)
                || !(0..h).contains(y)
                || self.cell_arena[g.idx(t)] != arena_id as u16
            {
                return Err(self.err(
                    p_line,
                    pf,
                    format!("spawn '{name}' at {t} is not in its arena '{}'", a.name),
                ));
            }
            if !self.terrain[g.idx(t)].walkable() {
                return Err(self.err(
                    p_line,
                    pf,
                    format!(
                        "spawn '{name}' stands on {:?} at {t}",
                        self.terrain[g.idx(t)]
                    ),
                ));
            }
            self.spawns.push(SpawnPoint {
                name: name.clone(),
                arena: arena_id,
                tile: t,
            });
        }
        Ok(())
    }
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
fn bounding<'a>(rects: impl Iterator<Item = &'a Rect>) -> Rect {
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

fn sectors_name<'a>(done: &'a [Sector], current: &'a Sector, i: usize) -> &'a str {
    done.get(i)
        .map(|s| s.name.as_str())
        .unwrap_or(current.name.as_str())
}
