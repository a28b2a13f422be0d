//! Spatial memory: the places an agent knows, as a tree world → sector → arena → objects
//! (the original's `MemoryTree`). Seeded from home, work and favourite places; grown by
//! perception. Planning offers only places from here, so no agent can choose a place it has
//! never heard of, and no invalid address can arise.

use crate::sim::map::WorldMap;
use bevy::prelude::Component;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Known places (equal when they know the same places; the seen-bits are a cache).
#[derive(Component, Debug, Clone, Default, Serialize, Deserialize)]
pub struct SpatialMemory {
    /// World name.
    pub world: String,
    /// Sector → arena → object kinds.
    pub tree: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    /// Arenas seen (index bits on the current map), so perception adds names only once.
    #[serde(skip)]
    seen_arena: Vec<bool>,
    /// (arena, object kind) pairs seen.
    #[serde(skip)]
    seen_object: Vec<bool>,
    /// Sectors seen.
    #[serde(skip)]
    seen_sector: Vec<bool>,
}

impl PartialEq for SpatialMemory {
    fn eq(&self, other: &Self) -> bool {
        self.world == other.world && self.tree == other.tree
    }
}

impl SpatialMemory {
    /// An empty memory of a world.
    pub fn new(world: &str) -> Self {
        Self {
            world: world.to_string(),
            ..Default::default()
        }
    }

    /// Adds a sector (and optionally an arena and an object). Returns whether anything was new.
    pub fn add(&mut self, sector: &str, arena: Option<&str>, object: Option<&str>) -> bool {
        let mut new = false;
        let arenas = match self.tree.get_mut(sector) {
            Some(a) => a,
            None => {
                new = true;
                self.tree.entry(sector.to_string()).or_default()
            }
        };
        let Some(arena) = arena else { return new };
        let objects = match arenas.get_mut(arena) {
            Some(o) => o,
            None => {
                new = true;
                arenas.entry(arena.to_string()).or_default()
            }
        };
        if let Some(o) = object
            && !objects.contains(o)
        {
            objects.insert(o.to_string());
            new = true;
        }
        new
    }

    /// Adds a whole arena of a map with all its objects.
    pub fn add_arena(&mut self, map: &WorldMap, arena: usize) {
        let a = &map.arenas[arena];
        let sector = map.sectors[a.sector].name.clone();
        self.add(&sector, Some(&a.name), None);
        for kind in map.arena_object_kinds(arena) {
            self.add(&sector, Some(&a.name), Some(kind));
        }
    }

    /// Adds the place an address names (`world:sector[:arena[:object]]`, the world optional):
    /// a sector alone adds the sector's public arenas; an arena adds all its objects.
    pub fn add_address(&mut self, map: &WorldMap, address: &str) {
        let canon = map.canonical(address);
        let parts: Vec<&str> = canon.split(':').collect();
        let Some(sector) = parts.get(1).and_then(|s| map.sector_by_name(s)) else {
            return;
        };
        match parts.get(2) {
            Some(arena) => {
                if let Some(a) = map.arena_by_name(parts[1], arena) {
                    self.add_arena(map, a);
                }
            }
            None => {
                for a in map.sectors[sector].arenas.clone() {
                    self.add_arena(map, a);
                }
            }
        }
    }

    /// Grows the memory with every sector, arena and object on the tiles of a square around
    /// `centre` (the original's vision square). Cheap when nothing is new.
    pub fn see_square(&mut self, map: &WorldMap, centre: crate::sim::map::Tile, radius: i32) {
        let kinds = crate::sim::map::objects::OBJECT_KINDS.len();
        if self.seen_arena.len() != map.arenas.len() || self.seen_sector.len() != map.sectors.len()
        {
            self.seen_arena = vec![false; map.arenas.len()];
            self.seen_object = vec![false; map.arenas.len() * kinds];
            self.seen_sector = vec![false; map.sectors.len()];
        }
        for y in centre.y - radius..=centre.y + radius {
            for x in centre.x - radius..=centre.x + radius {
                self.see_tile(map, crate::sim::map::Tile::new(x, y));
            }
        }
    }

    /// [`see_square`](Self::see_square) after a step from `prev` (whose square was seen) to
    /// `centre`: only the row and column that came into view are looked at (any longer move,
    /// or none known, looks at the whole square).
    pub fn see_step(
        &mut self,
        map: &WorldMap,
        prev: Option<crate::sim::map::Tile>,
        centre: crate::sim::map::Tile,
        radius: i32,
    ) {
        let Some(prev) = prev.filter(|p| {
            (p.x - centre.x).abs() <= 1
                && (p.y - centre.y).abs() <= 1
                && self.seen_arena.len() == map.arenas.len()
                && self.seen_sector.len() == map.sectors.len()
        }) else {
            self.see_square(map, centre, radius);
            return;
        };
        let (dx, dy) = (centre.x - prev.x, centre.y - prev.y);
        if dx != 0 {
            let x = centre.x + radius * dx.signum();
            for y in centre.y - radius..=centre.y + radius {
                self.see_tile(map, crate::sim::map::Tile::new(x, y));
            }
        }
        if dy != 0 {
            let y = centre.y + radius * dy.signum();
            for x in centre.x - radius..=centre.x + radius {
                self.see_tile(map, crate::sim::map::Tile::new(x, y));
            }
        }
    }

    /// Adds the sector, arena and object of one tile, if not known yet.
    fn see_tile(&mut self, map: &WorldMap, t: crate::sim::map::Tile) {
        let kinds = crate::sim::map::objects::OBJECT_KINDS.len();
        let Some(a) = map.arena_at(t) else {
            if let Some(s) = map.sector_at(t)
                && !self.seen_sector[s]
            {
                self.seen_sector[s] = true;
                let name = map.sectors[s].name.clone();
                self.add(&name, None, None);
            }
            return;
        };
        let object = map.object_kind_index_at(t);
        if self.seen_arena[a] && object.is_none_or(|k| self.seen_object[a * kinds + k]) {
            return;
        }
        let arena = &map.arenas[a];
        let sector = map.sectors[arena.sector].name.clone();
        let obj_name = object.map(|k| crate::sim::map::objects::OBJECT_KINDS[k].name);
        self.add(&sector, Some(&arena.name), obj_name);
        self.seen_arena[a] = true;
        if let Some(k) = object {
            self.seen_object[a * kinds + k] = true;
        }
    }

    /// Known sectors.
    pub fn sectors(&self) -> impl Iterator<Item = &str> {
        self.tree.keys().map(String::as_str)
    }

    /// Known arenas of a sector.
    pub fn arenas(&self, sector: &str) -> impl Iterator<Item = &str> {
        self.tree
            .get(sector)
            .into_iter()
            .flat_map(|a| a.keys().map(String::as_str))
    }

    /// Known objects of an arena.
    pub fn objects(&self, sector: &str, arena: &str) -> impl Iterator<Item = &str> {
        self.tree
            .get(sector)
            .and_then(|a| a.get(arena))
            .into_iter()
            .flat_map(|o| o.iter().map(String::as_str))
    }

    /// Whether a `sector[:arena[:object]]` path is known.
    pub fn knows(&self, sector: &str, arena: Option<&str>, object: Option<&str>) -> bool {
        let Some(arenas) = self.tree.get(sector) else {
            return false;
        };
        let Some(arena) = arena else { return true };
        let Some(objects) = arenas.get(arena) else {
            return false;
        };
        object.is_none_or(|o| objects.contains(o))
    }

    /// The tree as indented text (console and inspector).
    pub fn to_text(&self) -> String {
        let mut s = format!("{}\n", self.world);
        for (sector, arenas) in &self.tree {
            s.push_str(&format!("  {sector}\n"));
            for (arena, objects) in arenas {
                let list: Vec<&str> = objects.iter().map(String::as_str).collect();
                s.push_str(&format!("    {arena}: {}\n", list.join(", ")));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_reports_what_is_new() {
        let mut m = SpatialMemory::new("w");
        assert!(m.add("Hobbs Cafe", None, None));
        assert!(!m.add("Hobbs Cafe", None, None));
        assert!(m.add("Hobbs Cafe", Some("cafe"), Some("piano")));
        assert!(!m.add("Hobbs Cafe", Some("cafe"), Some("piano")));
        assert!(m.knows("Hobbs Cafe", Some("cafe"), Some("piano")));
        assert!(!m.knows("Hobbs Cafe", Some("kitchen"), None));
        assert_eq!(m.arenas("Hobbs Cafe").collect::<Vec<_>>(), vec!["cafe"]);
        let back: SpatialMemory = ron::from_str(&ron::to_string(&m).unwrap()).unwrap();
        assert_eq!(back.tree, m.tree);
    }

    /// Walking with [`SpatialMemory::see_step`] (only the row and column coming into view)
    /// learns exactly what looking at the whole square at every step learns, in a generated
    /// town, on random walks that step, stand, cross corners and sometimes jump.
    #[test]
    fn a_step_sees_what_the_whole_square_sees() {
        use crate::sim::map::Tile;
        let (_, map) =
            crate::sim::map::generate::generate_town(120, 3, std::path::Path::new("town.ron"))
                .unwrap();
        let mut seed = 7u64;
        let mut rand = |n: i32| {
            seed = crate::sim::hash::mix64(seed);
            (seed % n as u64) as i32
        };
        for radius in [1, 4, 8] {
            let (mut a, mut b) = (SpatialMemory::new("w"), SpatialMemory::new("w"));
            let mut at = Tile::new(rand(map.width), rand(map.height));
            let mut prev = None;
            for _ in 0..3000 {
                a.see_square(&map, at, radius);
                b.see_step(&map, prev, at, radius);
                prev = Some(at);
                at = if rand(50) == 0 {
                    Tile::new(rand(map.width), rand(map.height))
                } else {
                    Tile::new(
                        (at.x + rand(3) - 1).clamp(0, map.width - 1),
                        (at.y + rand(3) - 1).clamp(0, map.height - 1),
                    )
                };
            }
            assert_eq!(a.tree, b.tree, "radius {radius}");
            assert!(a.sectors().count() > 3);
        }
    }
}
