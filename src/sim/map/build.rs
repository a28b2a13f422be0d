//! The town built from the original's layers and legends ([`Layers`], read from a matrix
//! folder or a Tiled map), in steps: the collision layer, the sectors, the arenas, the objects,
//! the ground, the spawn points and the places' rectangles; then the checks every town passes.

use super::NONE;
use super::layers::{COLLISION_ID, ImportReport, Layer, Layers, LegendRow, Origin, legend_path};
use super::objects::{OBJECT_KINDS, ObjectKind, added_kind};
use super::{Arena, CellTown, PlacedObject, Rect, Sector, SpawnPoint, Terrain, Tile, WorldMap};
use crate::data_error::DataError;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;

/// The layers and legends made into a town, with every check the original's format needs
/// (ids in their legends, legend ids painted somewhere, arenas inside sectors, a sector with
/// an arena) and then those every town passes. Shared by the matrix folder and Tiled maps.
pub(super) fn build_town(
    layers: Layers,
    mut report: ImportReport,
) -> Result<(WorldMap, ImportReport), DataError> {
    note_collision(&layers.cells[Layer::Collision as usize], &mut report);
    let sectors = read_sectors(&layers, &mut report)?;
    let arena_keys = read_arenas(&layers, &sectors, &mut report)?;
    let mut places = make_places(&layers, &sectors, arena_keys)?;
    let objects = read_objects(&layers, &places.cell_arena, &mut report)?;
    let terrain = make_terrain(&layers, &sectors, &places.cell_arena);
    let spawns = read_spawns(&layers, &terrain, &places.cell_arena, &objects, &mut report)?;
    set_rects(layers.width, &sectors.cell, &objects.cell, &mut places);

    let town = CellTown {
        world: layers.world.clone(),
        width: layers.width,
        height: layers.height,
        terrain,
        cell_sector: sectors.cell,
        cell_arena: places.cell_arena,
        cell_object: objects.cell,
        sectors: places.sectors,
        arenas: places.arenas,
        kinds: objects.kinds,
        spawns,
        objects_block: layers.objects_block,
    };
    report.read.push(summary(&layers, &town));
    let map = finish_town(&layers, town)?;
    Ok((map, report))
}

/// The tile (x, y) of cell `i` of a map `w` tiles wide.
fn cell_xy(w: i32, i: usize) -> (i32, i32) {
    (i as i32 % w, i as i32 / w)
}

/// Collision: any id but 0 is a wall, as the original's tiles read it. Values other than the
/// original's wall id are noted (its pathfinder blocks only that one).
fn note_collision(collision: &[u32], report: &mut ImportReport) {
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
}

/// The sectors as read: their names in legend order, the sector of each legend id, and the
/// sector of each tile ([`NONE`] outside every sector).
struct Sectors {
    names: Vec<String>,
    of_id: HashMap<u32, u16>,
    cell: Vec<u16>,
}

/// Sectors, in legend order; two ids with one name are one sector. Every id painted must be in
/// the legend, and every legend id painted.
fn read_sectors(layers: &Layers, report: &mut ImportReport) -> Result<Sectors, DataError> {
    let n = (layers.width * layers.height) as usize;
    let sector_ids = &layers.cells[Layer::Sector as usize];
    let sector_legend = &layers.sector_legend;
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
            .ok_or_else(|| layers.unknown_id(Layer::Sector, i, id))?;
        used.insert(id, true);
        cell_sector[i] = s;
    }
    if let Some(r) = sector_legend.iter().find(|r| !used.contains_key(&r.id)) {
        return Err(layers.unpainted(Layer::Sector, r));
    }
    Ok(Sectors {
        names: sector_names,
        of_id: sector_of_id,
        cell: cell_sector,
    })
}

/// The arenas found on the tiles: (sector, name) → (legend order, first row line).
type ArenaKeys = BTreeMap<(u16, String), (usize, usize)>;

/// Arenas: the legend gives the name; the tile's own sector layer gives the sector. Every id
/// painted must be in the legend and inside a sector, and every legend id painted; arena tiles
/// in another sector than their legend row names are noted.
fn read_arenas(
    layers: &Layers,
    sectors: &Sectors,
    report: &mut ImportReport,
) -> Result<ArenaKeys, DataError> {
    let n = (layers.width * layers.height) as usize;
    let arena_ids = &layers.cells[Layer::Arena as usize];
    let arena_legend = &layers.arena_legend;
    let arena_row: HashMap<u32, &LegendRow> = arena_legend.iter().map(|r| (r.id, r)).collect();
    let arena_order: HashMap<u32, usize> = arena_legend
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id, i))
        .collect();
    let mut arena_keys: ArenaKeys = BTreeMap::new();
    let mut misfiled = 0usize;
    let mut used: HashMap<u32, bool> = HashMap::new();
    for (i, &id) in arena_ids[..n].iter().enumerate() {
        if id == 0 {
            continue;
        }
        let r = arena_row
            .get(&id)
            .ok_or_else(|| layers.unknown_id(Layer::Arena, i, id))?;
        used.insert(id, true);
        let s = sectors.cell[i];
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
        if r.cols.len() >= 4 && r.cols[2] != sectors.names[s as usize] {
            misfiled += 1;
        }
        let order = arena_order[&id];
        arena_keys
            .entry((s, r.name().to_string()))
            .and_modify(|e| e.0 = e.0.min(order))
            .or_insert((order, r.line));
    }
    if let Some(r) = arena_legend.iter().find(|r| !used.contains_key(&r.id)) {
        return Err(layers.unpainted(Layer::Arena, r));
    }
    if misfiled > 0 {
        report.notes.push(format!(
            "{misfiled} arena tile(s) lie in another sector than their arena_blocks.csv row names; they belong to the tile's sector, as in the original"
        ));
    }
    Ok(arena_keys)
}

/// The sectors and arenas of the town (their rectangles still empty), and the arena of each
/// tile ([`NONE`] outside every arena).
struct Places {
    sectors: Vec<Sector>,
    arenas: Vec<Arena>,
    cell_arena: Vec<u16>,
}

/// The sectors and their arenas, ordered by sector, then legend order. A sector with no arena
/// is an error.
fn make_places(
    layers: &Layers,
    sectors: &Sectors,
    arena_keys: ArenaKeys,
) -> Result<Places, DataError> {
    let n = (layers.width * layers.height) as usize;
    let arena_ids = &layers.cells[Layer::Arena as usize];
    let arena_row: HashMap<u32, &LegendRow> =
        layers.arena_legend.iter().map(|r| (r.id, r)).collect();
    // Arena order: by sector, then legend order.
    let mut keyed: Vec<((u16, String), (usize, usize))> = arena_keys.into_iter().collect();
    keyed.sort_by_key(|((s, _), (order, _))| (*s, *order));
    let mut town_sectors: Vec<Sector> = sectors
        .names
        .iter()
        .map(|name| Sector {
            name: name.clone(),
            rect: Rect {
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
        town_sectors[s as usize].arenas.push(arenas.len());
        arenas.push(Arena {
            name,
            sector: s as usize,
            rect: Rect {
                x: 0,
                y: 0,
                w: 0,
                h: 0,
            },
            objects: Vec::new(),
            line,
        });
    }
    if let Some((si, s)) = town_sectors
        .iter()
        .enumerate()
        .find(|(_, s)| s.arenas.is_empty())
    {
        let r = layers
            .sector_legend
            .iter()
            .find(|r| sectors.of_id.get(&r.id) == Some(&(si as u16)))
            .expect("every sector has a legend row");
        return Err(DataError::new(
            &legend_path(&layers.dir, "sector"),
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
            cell_arena[i] = arena_index[&(sectors.cell[i], name)];
        }
    }
    Ok(Places {
        sectors: town_sectors,
        arenas,
        cell_arena,
    })
}

/// The object kinds of the town (the catalogue, then the kinds its legend adds) and the kind
/// on each tile ([`NONE`] where there is none).
struct Objects {
    kinds: Vec<ObjectKind>,
    cell: Vec<u16>,
}

/// Objects: arena-agnostic names; a tile takes its arena from the arena layer. The object
/// legend is a vocabulary shared by every arena, and towns made by copying the original's
/// keep kinds they no longer paint: those are left out and said, not refused. (Two ids of
/// one name are one kind: it is painted when either is.)
fn read_objects(
    layers: &Layers,
    cell_arena: &[u16],
    report: &mut ImportReport,
) -> Result<Objects, DataError> {
    let n = (layers.width * layers.height) as usize;
    let object_ids = &layers.cells[Layer::Object as usize];
    let object_legend = &layers.object_legend;
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
            .ok_or_else(|| layers.unknown_id(Layer::Object, i, id))?;
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
    Ok(Objects {
        kinds,
        cell: cell_object,
    })
}

/// Terrain: ours, when the source carries it; otherwise from the collision layer.
fn make_terrain(layers: &Layers, sectors: &Sectors, cell_arena: &[u16]) -> Vec<Terrain> {
    if let Some(t) = layers.terrain.clone() {
        return t;
    }
    let (w, h) = (layers.width, layers.height);
    let n = (w * h) as usize;
    let collision = &layers.cells[Layer::Collision as usize];
    let cell_sector = &sectors.cell;
    // A sector whose edge is mostly collision is a building (walls, floors, doorways);
    // otherwise it is outdoors (grass, with trees where it is blocked), like the streets.
    let mut edge = vec![(0usize, 0usize); sectors.names.len()];
    for i in 0..n {
        let s = cell_sector[i];
        if s == NONE {
            continue;
        }
        let (x, y) = cell_xy(w, i);
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
}

/// Spawn points, named per arena (every home has its own sp-A). Every id painted must be in the
/// legend, and every legend id painted; spawn tiles outside every arena or on a wall are
/// skipped and noted.
fn read_spawns(
    layers: &Layers,
    terrain: &[Terrain],
    cell_arena: &[u16],
    objects: &Objects,
    report: &mut ImportReport,
) -> Result<Vec<SpawnPoint>, DataError> {
    let (w, n) = (layers.width, (layers.width * layers.height) as usize);
    let spawn_ids = &layers.cells[Layer::Spawn as usize];
    let spawn_legend = &layers.spawn_legend;
    let (objects_block, cell_object, kinds) = (layers.objects_block, &objects.cell, &objects.kinds);
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
            .ok_or_else(|| layers.unknown_id(Layer::Spawn, i, id))?;
        used.insert(id, true);
        let (x, y) = cell_xy(w, i);
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
        return Err(layers.unpainted(Layer::Spawn, r));
    }
    if !skipped.is_empty() {
        report.notes.push(format!(
            "{} spawn tile(s) outside every arena or on a wall were skipped: {}",
            skipped.len(),
            skipped.join(", ")
        ));
    }
    Ok(spawns)
}

/// Bounding boxes and each arena's objects (one entry per kind, in order of first tile),
/// all in one pass over the tiles of a map `w` tiles wide.
fn set_rects(w: i32, cell_sector: &[u16], cell_object: &[u16], places: &mut Places) {
    let Places {
        sectors,
        arenas,
        cell_arena,
    } = places;
    let n = cell_arena.len();
    let mut sector_box: Vec<Option<(i32, i32, i32, i32)>> = vec![None; sectors.len()];
    let mut arena_box: Vec<Option<(i32, i32, i32, i32)>> = vec![None; arenas.len()];
    let mut object_box: Vec<Vec<(u16, (i32, i32, i32, i32))>> = vec![Vec::new(); arenas.len()];
    let grow = |b: &mut (i32, i32, i32, i32), x: i32, y: i32| {
        *b = (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y));
    };
    for i in 0..n {
        let (x, y) = cell_xy(w, i);
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
    let rect = |b: (i32, i32, i32, i32)| Rect {
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
}

/// What the report says was read: the source, the world, its size and what it holds.
fn summary(layers: &Layers, town: &CellTown) -> String {
    let (w, h) = (town.width, town.height);
    let world = &town.world;
    let cell_object = &town.cell_object;
    let used_kinds = {
        let mut k: Vec<u16> = cell_object.iter().copied().filter(|k| *k != NONE).collect();
        k.sort_unstable();
        k.dedup();
        k.len()
    };
    format!(
        "{}: world '{world}', {w}×{h} tiles, {} sectors, {} arenas, {used_kinds} object kinds on {} tiles, {} spawn points, {} wall tiles",
        layers.source_label(),
        town.sectors.len(),
        town.arenas.len(),
        cell_object.iter().filter(|k| **k != NONE).count(),
        town.spawns.len(),
        layers.cells[Layer::Collision as usize]
            .iter()
            .filter(|c| **c != 0)
            .count(),
    )
}

/// The checks every town passes ([`finish`]), an arena's error naming its row of
/// `arena_blocks.csv`.
fn finish_town(layers: &Layers, town: CellTown) -> Result<WorldMap, DataError> {
    let dir = &layers.dir;
    let arena_file = legend_path(dir, "arena");
    let source = match &layers.origin {
        Origin::Matrix => dir.clone(),
        Origin::Tiled { file, .. } => file.clone(),
    };
    finish(&source, town, |town, a, msg| {
        DataError::new(
            &arena_file,
            town.arenas[a].line,
            format!("arena '{}'", town.arenas[a].name),
            msg,
        )
    })
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
