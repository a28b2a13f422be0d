//! Paths on the tile grid: A* (the `pathfinding` crate's) over the 4-neighbour grid, where
//! walls, water, trees and furniture block. The goal tile itself may be furniture (a bed, a
//! desk): a person may end a walk on it but not walk through it.

use super::map::{Tile, WorldMap};

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
    // Each candidate's key once (a place may offer hundreds of tiles), then the four least.
    let mut keyed: Vec<(bool, u32, Tile)> = goals
        .iter()
        .map(|g| (occupied(*g), g.manhattan(from), *g))
        .collect();
    if keyed.len() > 4 {
        keyed.select_nth_unstable(3);
        keyed.truncate(4);
    }
    keyed.sort_unstable();
    let cands: Vec<Tile> = keyed.into_iter().map(|(_, _, t)| t).collect();
    search(map, from, &cands)
}

/// A* from `from` to the nearest of `goals` (which may be furniture: a walk may end on it but
/// not pass through it); the path excludes `from`. Each step costs 1 and the estimate is the
/// straight (Manhattan) distance to the nearest goal, which never overestimates a walk of
/// 4-neighbour steps, so the path found is a shortest one.
fn search(map: &WorldMap, from: Tile, goals: &[Tile]) -> Option<Vec<Tile>> {
    let goals: Vec<Tile> = goals
        .iter()
        .copied()
        .filter(|g| map.in_bounds(*g))
        .collect();
    if goals.is_empty() || !map.in_bounds(from) {
        return None;
    }
    // Tiles by their index in the map (a node hashes as one number).
    let w = map.width;
    let at = |t: Tile| (t.y * w + t.x) as u32;
    let tile = |i: u32| Tile::new(i as i32 % w, i as i32 / w);
    let goal_at: Vec<u32> = goals.iter().map(|g| at(*g)).collect();
    let steps = |i: &u32| {
        tile(*i)
            .neighbours()
            .into_iter()
            .filter(|nb| map.in_bounds(*nb) && (goals.contains(nb) || map.walkable(*nb)))
            .map(|nb| (at(nb), 1u32))
    };
    let estimate = |i: &u32| {
        let t = tile(*i);
        goals.iter().map(|g| t.manhattan(*g)).min().unwrap_or(0)
    };
    let (path, _) =
        pathfinding::directed::astar::astar(&at(from), steps, estimate, |i| goal_at.contains(i))?;
    let path: Vec<Tile> = path.into_iter().skip(1).map(tile).collect();
    Some(path)
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

    /// The tiles one can walk on and reach, in `map`.
    fn walkable_tiles(map: &WorldMap) -> Vec<Tile> {
        (0..map.width * map.height)
            .map(|i| Tile::new(i % map.width, i / map.width))
            .filter(|t| map.walkable(*t) && map.reachable(*t))
            .collect()
    }

    #[test]
    fn paths_on_smallville_are_as_short_as_a_breadth_first_search_finds() {
        // A few thousand random pairs of the town's own map: each path is a walk of
        // 4-neighbour steps on walkable tiles, as long as the shortest walk there (the
        // hand-written A* this replaced was held to the same measure by the test below).
        let map = crate::sim::map::load_map(Path::new("maps/smallville.ron")).unwrap();
        let walkable = walkable_tiles(&map);
        let mut seed = 11u64;
        let mut pick = || {
            seed = crate::sim::hash::mix64(seed);
            walkable[(seed % walkable.len() as u64) as usize]
        };
        for _ in 0..60 {
            let from = pick();
            let dist = bfs(&map, from);
            for _ in 0..50 {
                let to = pick();
                let p = find_path(&map, from, to).unwrap();
                assert_eq!(p.len(), dist[&to], "{from} to {to}");
                let mut at = from;
                for t in &p {
                    assert_eq!(at.manhattan(*t), 1, "{at} then {t}");
                    assert!(map.walkable(*t));
                    at = *t;
                }
                assert_eq!(at, to);
            }
        }
    }

    #[test]
    fn paths_in_a_generated_town_are_shortest_and_walkable() {
        let (_, map) =
            crate::sim::map::generate::generate_town(60, 5, Path::new("town.ron")).unwrap();
        let walkable = walkable_tiles(&map);
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
