//! Paths on the tile grid: A* over the 4-neighbour grid, where walls, water, trees and
//! furniture block. The goal tile itself may be furniture (a bed, a desk): a person may end a
//! walk on it but not walk through it.

use super::map::{Tile, WorldMap};
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The path from `from` to `to`, excluding `from` and including `to`; `None` when unreachable.
pub fn find_path(map: &WorldMap, from: Tile, to: Tile) -> Option<Vec<Tile>> {
    if from == to {
        return Some(Vec::new());
    }
    search(map, from, &[to])
}

/// The shortest path to any of the candidate goals. Like the original, only a few candidates
/// (the nearest by straight distance, preferring free ones) are searched, to bound the cost;
/// they are searched together, in one A* toward the nearest of them.
pub fn path_to_any(
    map: &WorldMap,
    from: Tile,
    goals: &[Tile],
    occupied: &dyn Fn(Tile) -> bool,
) -> Option<Vec<Tile>> {
    if goals.contains(&from) {
        return Some(Vec::new());
    }
    let mut cands: Vec<Tile> = goals.to_vec();
    cands.sort_by_key(|g| (occupied(*g), g.manhattan(from), *g));
    cands.truncate(4);
    search(map, from, &cands)
}

/// A* from `from` to the nearest of `goals` (which may be furniture: a walk may end on it but
/// not pass through it); the path excludes `from`.
fn search(map: &WorldMap, from: Tile, goals: &[Tile]) -> Option<Vec<Tile>> {
    let goals: Vec<Tile> = goals
        .iter()
        .copied()
        .filter(|g| map.in_bounds(*g))
        .collect();
    if goals.is_empty() || !map.in_bounds(from) {
        return None;
    }
    SCRATCH.with_borrow_mut(|sc| sc.astar(map, from, &goals))
}

thread_local! {
    /// The search's per-tile arrays, kept between searches (a town of a thousand has 130,000
    /// tiles; a walk is planned for someone nearly every step).
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Per-tile cost and parent of one search; a tile's entries count only when its stamp is the
/// current search's, so nothing is cleared between searches.
#[derive(Default)]
struct Scratch {
    search: u32,
    stamp: Vec<u32>,
    cost: Vec<u32>,
    parent: Vec<u32>,
}

impl Scratch {
    fn astar(&mut self, map: &WorldMap, from: Tile, goals: &[Tile]) -> Option<Vec<Tile>> {
        let w = map.width;
        let n = (map.width * map.height) as usize;
        if self.stamp.len() < n {
            self.stamp.resize(n, 0);
            self.cost.resize(n, 0);
            self.parent.resize(n, 0);
        }
        self.search = self.search.wrapping_add(1);
        if self.search == 0 {
            self.stamp.fill(0);
            self.search = 1;
        }
        let at = |t: Tile| (t.y * w + t.x) as u32;
        let tile = |i: u32| Tile::new(i as i32 % w, i as i32 / w);
        let h = |t: Tile| goals.iter().map(|g| t.manhattan(*g)).min().unwrap_or(0);
        // Lowest estimate first; among equal estimates the nearest to a goal, then the tile.
        let mut open: BinaryHeap<Reverse<(u32, u32, u32, u32)>> = BinaryHeap::new();
        let s = at(from);
        self.stamp[s as usize] = self.search;
        self.cost[s as usize] = 0;
        open.push(Reverse((h(from), h(from), 0, s)));
        while let Some(Reverse((_, _, g, i))) = open.pop() {
            if g > self.cost[i as usize] {
                continue;
            }
            let t = tile(i);
            if goals.contains(&t) {
                let mut path = Vec::new();
                let mut j = i;
                while j != s {
                    path.push(tile(j));
                    j = self.parent[j as usize];
                }
                path.reverse();
                return Some(path);
            }
            for nb in t.neighbours() {
                if !map.in_bounds(nb) || !(goals.contains(&nb) || map.walkable(nb)) {
                    continue;
                }
                let k = at(nb) as usize;
                if self.stamp[k] != self.search || g + 1 < self.cost[k] {
                    self.stamp[k] = self.search;
                    self.cost[k] = g + 1;
                    self.parent[k] = i;
                    let hn = h(nb);
                    open.push(Reverse((g + 1 + hn, hn, g + 1, k as u32)));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::map::parse_map;
    use std::path::Path;

    const ROOM: &str = r#"(
        world: "w", width: 7, height: 5,
        legend: { '.': Grass, '#': Wall, '+': Door, '_': Floor },
        terrain: [
            ".......",
            ".#####.",
            ".#__+_.",
            ".#####.",
            ".......",
        ],
        sectors: [ (name: "house", rect: (1, 1, 5, 3), arenas: [
            (name: "room", rect: (2, 2, 2, 1), objects: [ (kind: "bed", rect: (2, 2, 1, 1)) ]),
        ]) ],
    )"#;

    #[test]
    fn walks_around_walls_and_through_doors() {
        let map = parse_map(Path::new("room.ron"), ROOM).unwrap();
        let p = find_path(&map, Tile::new(0, 0), Tile::new(3, 2)).unwrap();
        // Around the building's right side and in through the door at (4, 2).
        assert_eq!(p.last(), Some(&Tile::new(3, 2)));
        assert!(p.contains(&Tile::new(4, 2)), "{p:?}");
        for w in p.windows(2) {
            assert_eq!(w[0].manhattan(w[1]), 1);
        }
        for t in &p {
            assert!(map.walkable(*t), "{t} is not walkable");
        }
        // The bed blocks walking but may be the goal itself.
        assert!(!map.walkable(Tile::new(2, 2)));
        let p = find_path(&map, Tile::new(0, 0), Tile::new(2, 2)).unwrap();
        assert_eq!(p.last(), Some(&Tile::new(2, 2)));
        assert_eq!(
            find_path(&map, Tile::new(0, 0), Tile::new(0, 0)),
            Some(vec![])
        );
    }

    #[test]
    fn picks_the_nearest_goal() {
        let map = parse_map(Path::new("room.ron"), ROOM).unwrap();
        let p = path_to_any(
            &map,
            Tile::new(0, 4),
            &[Tile::new(6, 0), Tile::new(1, 4)],
            &|_| false,
        )
        .unwrap();
        assert_eq!(p, vec![Tile::new(1, 4)]);
    }

    /// Steps from `from` to every tile by breadth-first search (the shortest walks, to check
    /// A* against).
    fn bfs(map: &WorldMap, from: Tile) -> std::collections::HashMap<Tile, usize> {
        let mut d = std::collections::HashMap::from([(from, 0)]);
        let mut q = std::collections::VecDeque::from([from]);
        while let Some(t) = q.pop_front() {
            for n in t.neighbours() {
                if map.in_bounds(n) && map.walkable(n) && !d.contains_key(&n) {
                    d.insert(n, d[&t] + 1);
                    q.push_back(n);
                }
            }
        }
        d
    }

    #[test]
    fn paths_in_a_generated_town_are_shortest_and_walkable() {
        let (_, map) =
            crate::sim::map::generate::generate_town(60, 5, Path::new("town.ron")).unwrap();
        let walkable: Vec<Tile> = (0..map.width * map.height)
            .map(|i| Tile::new(i % map.width, i / map.width))
            .filter(|t| map.walkable(*t) && map.reachable(*t))
            .collect();
        let mut seed = 5u64;
        let mut pick = || {
            seed = crate::sim::hash::mix64(seed);
            walkable[(seed % walkable.len() as u64) as usize]
        };
        for _ in 0..25 {
            let from = pick();
            let dist = bfs(&map, from);
            for _ in 0..8 {
                let goals = [pick(), pick(), pick()];
                let p = path_to_any(&map, from, &goals, &|_| false).unwrap();
                let best = goals.iter().map(|g| dist[g]).min().unwrap();
                assert_eq!(p.len(), best, "{from} to {goals:?}");
                assert!(goals.contains(p.last().unwrap_or(&from)));
                let mut at = from;
                for t in &p {
                    assert_eq!(at.manhattan(*t), 1, "{at} then {t}");
                    assert!(map.walkable(*t));
                    at = *t;
                }
            }
        }
    }
}
