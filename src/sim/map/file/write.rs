//! A town written as a map file of ours (`maps/*.ron`): each region as rectangles that cover
//! it exactly, and a town drawn in Tiled naming its Tiled file in `art:`.

use super::{ArenaFile, MapFile, ObjectFile, SectorFile};
use crate::sim::map::NONE;
use crate::sim::map::tiled::absolute;
use crate::sim::map::{Rect, Terrain, WorldMap};
use std::path::Path;

/// Rectangles that together cover exactly the tiles `inside` says, row runs merged downwards
/// (a region of any shape; a rectangle comes out as one).
fn cover(w: i32, h: i32, inside: impl Fn(usize) -> bool) -> Vec<Rect> {
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
pub(crate) const LEGEND: [(char, Terrain); 8] = [
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
    let catalogue = crate::sim::map::objects::OBJECT_KINDS.len();
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
