//! Towns of any size, made from a seed (`simulacra generate town`): a grid of blocks between
//! streets, each block one building or a park, laid out in districts (shops, cafés and pubs
//! downtown, the colleges around them, homes outside, parks spread among the homes). Every
//! building has the arenas and objects of Smallville's kinds the planning prompts expect:
//! homes of nine bedrooms with a common room, a kitchen and a bathroom; cafés, markets, supply
//! stores, pubs; colleges with a classroom and a library. The same seed and size give the same
//! file, and the file passes the map checks ([`generate_town`] parses what it writes).

use super::file::{ArenaFile, LEGEND, MapFile, ObjectFile, SectorFile};
use super::{Rect, WorldMap};
use crate::data_error::DataError;
use std::collections::HashMap;
use std::path::Path;

/// A small deterministic random source (SplitMix64): the same seed gives the same town and cast
/// on every machine and every version of every crate.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A source from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::sim::hash::mix64(self.0)
    }
    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    /// `items` shuffled in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// Block (street cell) size in tiles: two rows and columns of street, a margin of grass, a
/// building of [`BUILDING_W`] × [`BUILDING_H`] and grass around it.
const BLOCK_W: i32 = 38;
const BLOCK_H: i32 = 19;
/// Every building's outer size (walls included).
pub const BUILDING_W: i32 = 31;
/// Every building's outer height.
pub const BUILDING_H: i32 = 13;
/// Bedrooms in one home building.
pub const BEDROOMS_PER_HOME: usize = 9;

/// What stands on a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockKind {
    /// Shops: a market (grocery and pharmacy) or a supply store, alternately.
    Store,
    /// A café.
    Cafe,
    /// A pub.
    Pub,
    /// A college: a classroom and a library.
    College,
    /// A park.
    Park,
    /// Nine bedrooms, a common room, a kitchen and a bathroom.
    Home,
}

/// How many blocks of each kind a town for `residents` people has: a bedroom for everyone and
/// enough places to work, study and spend free time.
pub fn district_counts(residents: usize) -> Vec<(BlockKind, usize)> {
    let n = residents.max(1);
    vec![
        (BlockKind::Store, n.div_ceil(60)),
        (BlockKind::Cafe, n.div_ceil(60)),
        (BlockKind::Pub, n.div_ceil(100)),
        (BlockKind::College, n.div_ceil(250)),
        (BlockKind::Park, n.div_ceil(80)),
        (BlockKind::Home, n.div_ceil(BEDROOMS_PER_HOME)),
    ]
}

const STREETS: &[&str] = &[
    "Maple", "Oak", "Elm", "Birch", "Cedar", "Willow", "Aspen", "Pine", "Juniper", "Laurel",
    "Hazel", "Alder", "Poplar", "Chestnut", "Magnolia", "Rowan", "Spruce", "Linden", "Holly",
    "Ivy", "Cypress", "Hawthorn", "Sycamore", "Beech", "Walnut", "Cherry", "Plum", "Lilac",
    "Violet", "Clover", "Meadow", "Brook", "River", "Lake", "Hill", "Ridge", "Orchard", "Mill",
    "Bridge", "Church",
];
const PUB_WORDS: (&[&str], &[&str]) = (
    &[
        "Red", "Golden", "Silver", "Black", "White", "Green", "Old", "Merry", "Sleepy", "Jolly",
    ],
    &[
        "Lion", "Fox", "Stag", "Swan", "Crown", "Anchor", "Plough", "Otter", "Hare", "Raven",
        "Bell", "Harp",
    ],
);

/// The most residents a generated town holds (its map at most 1024 tiles each way).
pub fn most_residents() -> usize {
    let fits = |n: usize| {
        let blocks: usize = district_counts(n).iter().map(|(_, k)| k).sum();
        let cols = ((blocks as f64 * 1.2).sqrt().ceil() as usize).max(2);
        cols * BLOCK_W as usize + 2 <= 1024 && blocks.div_ceil(cols) * BLOCK_H as usize + 2 <= 1024
    };
    // Fitting is monotone in the count: halve the range.
    let (mut lo, mut hi) = (1usize, 1usize << 20);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) { lo = mid } else { hi = mid - 1 }
    }
    lo
}

/// A town for `residents` people, from `seed`: the map file's text (with a first comment line
/// saying how it was made) and the town it describes, checked as any map file is.
pub fn generate_town(
    residents: usize,
    seed: u64,
    path: &Path,
) -> Result<(String, WorldMap), DataError> {
    let mut rng = Rng::new(seed);
    let blocks: usize = district_counts(residents).iter().map(|(_, n)| n).sum();
    // A grid about 1.6 times as wide as tall in blocks (the screen's shape in tiles).
    let cols = ((blocks as f64 * 1.2).sqrt().ceil() as usize).max(2);
    let rows = blocks.div_ceil(cols);
    // Sized before anything is made: a map is at most 1024 tiles each way.
    let (w, h) = (cols * BLOCK_W as usize + 2, rows * BLOCK_H as usize + 2);
    if w > 1024 || h > 1024 {
        return Err(DataError::new(
            path,
            0,
            "residents",
            format!(
                "a town for {residents} residents would be {w}×{h} tiles; a town is at most 1024×1024, which holds about {} residents",
                most_residents()
            ),
        ));
    }
    let (w, h) = (w as i32, h as i32);
    let mut kinds: Vec<BlockKind> = Vec::new();
    for (kind, n) in district_counts(residents) {
        kinds.extend(std::iter::repeat_n(kind, n));
    }
    let cells = district_layout(&kinds, cols, rows, &mut rng);
    let mut town = Draft::new(w, h);
    let mut names = Names::default();
    let mut shops = 0;
    for (cell, kind) in cells.iter().enumerate() {
        let (cx, cy) = (
            (cell % cols) as i32 * BLOCK_W,
            (cell / cols) as i32 * BLOCK_H,
        );
        town.street(cx, cy);
        let Some(kind) = kind else {
            town.trees(cx + 3, cy + 3, BLOCK_W - 4, BLOCK_H - 4, &mut rng);
            continue;
        };
        let (bx, by) = (cx + 4, cy + 4);
        let sector = match kind {
            BlockKind::Home => town.home(bx, by, names.unique(home_name(&mut rng))),
            BlockKind::Cafe => {
                town.cafe(bx, by, names.unique(format!("{} Cafe", rng.pick(STREETS))))
            }
            BlockKind::Store => {
                shops += 1;
                if shops % 2 == 1 {
                    let name = format!("{} Market and Pharmacy", rng.pick(STREETS));
                    town.market(bx, by, names.unique(name))
                } else {
                    let name = format!("{} Supply Store", rng.pick(STREETS));
                    town.supply(bx, by, names.unique(name))
                }
            }
            BlockKind::Pub => {
                let name = format!("The {} {}", rng.pick(PUB_WORDS.0), rng.pick(PUB_WORDS.1));
                town.pub_(bx, by, names.unique(name))
            }
            BlockKind::College => town.college(
                bx,
                by,
                names.unique(format!("{} College", rng.pick(STREETS))),
            ),
            BlockKind::Park => {
                town.park(bx, by, names.unique(format!("{} Park", rng.pick(STREETS))))
            }
        };
        town.sectors.push(sector);
        if *kind == BlockKind::Home {
            // A few trees beside the houses, clear of the door on the west side.
            town.trees(bx + BUILDING_W + 1, by, 2, BUILDING_H, &mut rng);
        }
    }
    // The last street, east and south of every block.
    town.fill(
        Rect {
            x: w - 2,
            y: 0,
            w: 2,
            h,
        },
        '=',
    );
    town.fill(
        Rect {
            x: 0,
            y: h - 2,
            w,
            h: 2,
        },
        '=',
    );
    let file = MapFile {
        world: "Generated Town".into(),
        width: w,
        height: h,
        objects_block: true,
        new_kinds: Vec::new(),
        art: None,
        legend: LEGEND.iter().copied().collect(),
        terrain: town.rows(),
        sectors: town.sectors,
    };
    let comment = format!(
        "A town generated for {residents} residents from seed {seed} (`simulacra generate town --residents {residents} --seed {seed}`).\n{blocks} blocks on a {cols}×{rows} grid; format: maps/README.md."
    );
    let text = crate::data_error::ron_text(&file, 4, &comment);
    let map = super::parse_map(path, &text)?;
    Ok((text, map))
}

/// Which kind stands on each cell of the grid (None: trees): shops, cafés and pubs nearest the
/// middle, then the colleges, then homes with parks spread among them.
fn district_layout(
    kinds: &[BlockKind],
    cols: usize,
    rows: usize,
    rng: &mut Rng,
) -> Vec<Option<BlockKind>> {
    let (mx, my) = ((cols as f64 - 1.0) / 2.0, (rows as f64 - 1.0) / 2.0);
    let mut order: Vec<usize> = (0..cols * rows).collect();
    // Distance from the middle, ties broken by the seed.
    let jitter: Vec<u64> = order.iter().map(|_| rng.next_u64()).collect();
    order.sort_by(|&a, &b| {
        let d = |i: usize| {
            let (x, y) = ((i % cols) as f64 - mx, (i / cols) as f64 - my);
            ((x * x + y * y) * 100.0) as u64
        };
        d(a).cmp(&d(b)).then(jitter[a].cmp(&jitter[b]))
    });
    let mut downtown: Vec<BlockKind> = kinds
        .iter()
        .copied()
        .filter(|k| matches!(k, BlockKind::Store | BlockKind::Cafe | BlockKind::Pub))
        .collect();
    rng.shuffle(&mut downtown);
    let colleges = kinds.iter().filter(|k| **k == BlockKind::College).count();
    let parks = kinds.iter().filter(|k| **k == BlockKind::Park).count();
    let homes = kinds.iter().filter(|k| **k == BlockKind::Home).count();
    let mut outer: Vec<BlockKind> = Vec::new();
    // A park after every so many homes.
    let every = (homes / parks.max(1)).max(1);
    let mut parks_left = parks;
    for i in 0..homes {
        if i % every == every / 2 && parks_left > 0 {
            outer.push(BlockKind::Park);
            parks_left -= 1;
        }
        outer.push(BlockKind::Home);
    }
    outer.extend(std::iter::repeat_n(BlockKind::Park, parks_left));
    let placed = downtown
        .into_iter()
        .chain(std::iter::repeat_n(BlockKind::College, colleges))
        .chain(outer);
    let mut cells = vec![None; cols * rows];
    for (cell, kind) in order.into_iter().zip(placed) {
        cells[cell] = Some(kind);
    }
    cells
}

fn home_name(rng: &mut Rng) -> String {
    format!("{} {} Street", 1 + rng.below(98), rng.pick(STREETS))
}

/// Sector names made unique ("Oak Cafe", "Oak Cafe 2").
#[derive(Default)]
struct Names(HashMap<String, usize>);

impl Names {
    fn unique(&mut self, name: String) -> String {
        let n = self.0.entry(name.clone()).or_default();
        *n += 1;
        if *n == 1 { name } else { format!("{name} {n}") }
    }
}

/// The town as it is drawn: terrain characters and the sectors so far.
struct Draft {
    w: i32,
    grid: Vec<char>,
    sectors: Vec<SectorFile>,
}

fn rect(x: i32, y: i32, w: i32, h: i32) -> Rect {
    Rect { x, y, w, h }
}

fn object(kind: &str, rects: &[Rect]) -> ObjectFile {
    ObjectFile {
        kind: kind.into(),
        rect: rects[0],
        more: rects[1..].to_vec(),
    }
}

fn arena(name: &str, r: Rect, objects: Vec<ObjectFile>) -> ArenaFile {
    ArenaFile {
        name: name.into(),
        rect: r,
        more: Vec::new(),
        objects,
        spawns: Vec::new(),
    }
}

impl Draft {
    fn new(w: i32, h: i32) -> Self {
        Self {
            w,
            grid: vec!['.'; (w * h) as usize],
            sectors: Vec::new(),
        }
    }

    fn set(&mut self, x: i32, y: i32, c: char) {
        self.grid[(y * self.w + x) as usize] = c;
    }

    fn fill(&mut self, r: Rect, c: char) {
        for y in r.y..r.y + r.h {
            for x in r.x..r.x + r.w {
                self.set(x, y, c);
            }
        }
    }

    fn rows(&self) -> Vec<String> {
        self.grid
            .chunks(self.w as usize)
            .map(|r| r.iter().collect())
            .collect()
    }

    /// The street along the north and west of a block.
    fn street(&mut self, cx: i32, cy: i32) {
        self.fill(rect(cx, cy, BLOCK_W, 2), '=');
        self.fill(rect(cx, cy, 2, BLOCK_H), '=');
    }

    /// A few trees on every other tile of a strip, by the seed.
    fn trees(&mut self, x: i32, y: i32, w: i32, h: i32, rng: &mut Rng) {
        for ty in (y..y + h).step_by(2) {
            for tx in (x..x + w).step_by(3) {
                if rng.below(3) == 0 {
                    self.set(tx, ty, 'T');
                }
            }
        }
    }

    /// Walls around a building with floor inside and the street door on its west wall.
    fn shell(&mut self, bx: i32, by: i32) {
        self.fill(rect(bx, by, BUILDING_W, BUILDING_H), '#');
        self.fill(rect(bx + 1, by + 1, BUILDING_W - 2, BUILDING_H - 2), '_');
        self.set(bx, by + 6, '+');
    }

    /// Nine bedrooms (five north of the hall, four south beside the bathroom), a common room
    /// and a kitchen along the hall.
    fn home(&mut self, bx: i32, by: i32, name: String) -> SectorFile {
        self.shell(bx, by);
        // Inner walls: north rooms, the hall, south rooms.
        self.fill(rect(bx + 1, by + 4, BUILDING_W - 2, 1), '#');
        self.fill(rect(bx + 1, by + 8, BUILDING_W - 2, 1), '#');
        self.set(bx + 18, by + 5, '#');
        self.set(bx + 18, by + 7, '#');
        self.set(bx + 18, by + 6, '+');
        let mut arenas = Vec::new();
        let mut room = 0;
        for (row, iy, door_y) in [(0, by + 1, by + 4), (1, by + 9, by + 8)] {
            for i in 0..5 {
                let ix = bx + 1 + 6 * i;
                if i > 0 {
                    self.fill(rect(ix - 1, iy, 1, 3), '#');
                }
                self.set(ix + 2, door_y, '+');
                if row == 1 && i == 4 {
                    arenas.push(arena(
                        "bathroom",
                        rect(ix, iy, 5, 3),
                        vec![
                            object("shower", &[rect(ix, iy + 2, 1, 1)]),
                            object("toilet", &[rect(ix + 2, iy + 2, 1, 1)]),
                            object("bathroom sink", &[rect(ix + 4, iy + 2, 1, 1)]),
                        ],
                    ));
                    continue;
                }
                room += 1;
                // The bed and the desk against the wall away from the door.
                let far = if row == 0 { iy } else { iy + 1 };
                let (desk_y, closet_y) = if row == 0 { (iy, iy + 2) } else { (iy + 2, iy) };
                let mut a = arena(
                    &format!("room {room}"),
                    rect(ix, iy, 5, 3),
                    vec![
                        object("bed", &[rect(ix, far, 1, 2)]),
                        object("desk", &[rect(ix + 4, desk_y, 1, 1)]),
                        object("closet", &[rect(ix + 4, closet_y, 1, 1)]),
                    ],
                );
                a.spawns.push(("bed side".into(), (ix + 2, iy + 1)));
                arenas.push(a);
            }
        }
        let (hx, hy) = (bx + 1, by + 5);
        arenas.push(arena(
            "common room",
            rect(hx, hy, 17, 3),
            vec![
                object("common room sofa", &[rect(hx + 4, hy, 2, 1)]),
                object("common room table", &[rect(hx + 10, hy + 2, 2, 1)]),
            ],
        ));
        let kx = bx + 19;
        arenas.push(arena(
            "kitchen",
            rect(kx, hy, 11, 3),
            vec![
                object("cooking area", &[rect(kx, hy, 2, 1)]),
                object("refrigerator", &[rect(kx + 4, hy, 1, 1)]),
                object("kitchen sink", &[rect(kx + 5, hy, 1, 1)]),
            ],
        ));
        SectorFile {
            name,
            rect: rect(bx, by, BUILDING_W, BUILDING_H),
            more: Vec::new(),
            arenas,
        }
    }

    /// A building of one room (`interior` objects at offsets from the room's top-left corner).
    fn one_room(
        &mut self,
        bx: i32,
        by: i32,
        name: String,
        room: &str,
        objects: &[(&str, &[(i32, i32, i32, i32)])],
    ) -> SectorFile {
        self.shell(bx, by);
        let (ix, iy) = (bx + 1, by + 1);
        let objects = objects
            .iter()
            .map(|(kind, rs)| {
                let rects: Vec<Rect> = rs
                    .iter()
                    .map(|&(x, y, w, h)| rect(ix + x, iy + y, w, h))
                    .collect();
                object(kind, &rects)
            })
            .collect();
        SectorFile {
            name,
            rect: rect(bx, by, BUILDING_W, BUILDING_H),
            more: Vec::new(),
            arenas: vec![arena(
                room,
                rect(ix, iy, BUILDING_W - 2, BUILDING_H - 2),
                objects,
            )],
        }
    }

    fn cafe(&mut self, bx: i32, by: i32, name: String) -> SectorFile {
        self.one_room(
            bx,
            by,
            name,
            "cafe",
            &[
                ("behind the cafe counter", &[(19, 0, 8, 2)]),
                ("cooking area", &[(28, 0, 1, 2)]),
                (
                    "cafe customer seating",
                    &[
                        (3, 3, 3, 1),
                        (9, 3, 3, 1),
                        (15, 3, 3, 1),
                        (3, 7, 3, 1),
                        (9, 7, 3, 1),
                        (15, 7, 3, 1),
                        (21, 7, 3, 1),
                    ],
                ),
                ("piano", &[(27, 9, 1, 1)]),
            ],
        )
    }

    fn market(&mut self, bx: i32, by: i32, name: String) -> SectorFile {
        self.one_room(
            bx,
            by,
            name,
            "store",
            &[
                ("grocery store shelf", &[(3, 1, 10, 1), (3, 4, 10, 1)]),
                ("pharmacy store shelf", &[(3, 7, 10, 1)]),
                ("grocery store counter", &[(19, 3, 1, 3)]),
                ("behind the grocery counter", &[(20, 3, 2, 3)]),
                ("pharmacy store counter", &[(24, 7, 1, 3)]),
                ("behind the pharmacy counter", &[(25, 7, 2, 3)]),
            ],
        )
    }

    fn supply(&mut self, bx: i32, by: i32, name: String) -> SectorFile {
        self.one_room(
            bx,
            by,
            name,
            "store",
            &[
                (
                    "supply store product shelf",
                    &[(3, 1, 10, 1), (3, 4, 10, 1), (3, 7, 10, 1)],
                ),
                ("supply store counter", &[(19, 3, 1, 3)]),
                ("behind the supply store counter", &[(20, 3, 2, 3)]),
            ],
        )
    }

    fn pub_(&mut self, bx: i32, by: i32, name: String) -> SectorFile {
        self.one_room(
            bx,
            by,
            name,
            "pub",
            &[
                ("behind the bar counter", &[(19, 0, 8, 2)]),
                (
                    "bar customer seating",
                    &[(19, 3, 8, 1), (3, 3, 3, 1), (9, 3, 3, 1)],
                ),
                ("pool table", &[(4, 7, 2, 2)]),
                ("microphone", &[(27, 9, 1, 1)]),
                ("guitar", &[(25, 9, 1, 1)]),
            ],
        )
    }

    /// A classroom west and a library east, a door between them.
    fn college(&mut self, bx: i32, by: i32, name: String) -> SectorFile {
        self.shell(bx, by);
        self.fill(rect(bx + 15, by + 1, 1, BUILDING_H - 2), '#');
        self.set(bx + 15, by + 6, '+');
        let (cx, cy) = (bx + 1, by + 1);
        let classroom = arena(
            "classroom",
            rect(cx, cy, 14, 11),
            vec![
                object("blackboard", &[rect(cx + 3, cy, 8, 1)]),
                object("classroom podium", &[rect(cx + 7, cy + 2, 1, 1)]),
                object(
                    "classroom student seating",
                    &[
                        rect(cx + 2, cy + 4, 11, 1),
                        rect(cx + 2, cy + 6, 11, 1),
                        rect(cx + 2, cy + 8, 11, 1),
                    ],
                ),
            ],
        );
        let lx = bx + 16;
        let library = arena(
            "library",
            rect(lx, cy, 14, 11),
            vec![
                object("bookshelf", &[rect(lx, cy, 14, 1)]),
                object(
                    "library table",
                    &[rect(lx + 3, cy + 3, 4, 2), rect(lx + 3, cy + 7, 4, 2)],
                ),
                object("library sofa", &[rect(lx + 10, cy + 9, 3, 1)]),
            ],
        );
        SectorFile {
            name,
            rect: rect(bx, by, BUILDING_W, BUILDING_H),
            more: Vec::new(),
            arenas: vec![classroom, library],
        }
    }

    /// Grass with gardens and chairs, trees at the corners; no walls.
    fn park(&mut self, bx: i32, by: i32, name: String) -> SectorFile {
        for (x, y) in [
            (bx, by),
            (bx + BUILDING_W - 1, by),
            (bx, by + BUILDING_H - 1),
            (bx + BUILDING_W - 1, by + BUILDING_H - 1),
        ] {
            self.set(x, y, 'T');
        }
        let r = rect(bx + 1, by + 1, BUILDING_W - 2, BUILDING_H - 2);
        let (x, y) = (r.x, r.y);
        let park = arena(
            "park",
            r,
            vec![
                object(
                    "park garden",
                    &[rect(x + 3, y + 2, 6, 3), rect(x + 18, y + 6, 6, 3)],
                ),
                object(
                    "garden chair",
                    &[rect(x + 12, y + 4, 1, 1), rect(x + 14, y + 4, 1, 1)],
                ),
            ],
        );
        SectorFile {
            name,
            rect: rect(bx, by, BUILDING_W, BUILDING_H),
            more: Vec::new(),
            arenas: vec![park],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_town_passes_the_map_checks_and_the_same_seed_gives_the_same_file() {
        let path = Path::new("generated.ron");
        for residents in [1, 25, 120] {
            let (a, map) = generate_town(residents, 7, path).unwrap_or_else(|e| panic!("{e}"));
            let (b, _) = generate_town(residents, 7, path).unwrap();
            assert_eq!(a, b, "same seed, same file");
            let bedrooms = map
                .arenas
                .iter()
                .filter(|a| a.name.starts_with("room "))
                .count();
            assert!(bedrooms >= residents, "{bedrooms} bedrooms for {residents}");
            for kind in ["cafe", "store", "pub", "classroom", "library", "park"] {
                assert!(
                    map.arenas.iter().any(|a| a.name == kind),
                    "{residents} residents: no {kind}"
                );
            }
        }
        let (other, _) = generate_town(120, 8, path).unwrap();
        assert_ne!(other, generate_town(120, 7, path).unwrap().0);
    }
}
