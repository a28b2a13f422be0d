//! Paths on the tile grid: A* (the `pathfinding` crate) over the 4-neighbour grid, where
//! walls, water, trees and furniture block. The goal tile itself may be furniture (a bed, a
//! desk): a person may end a walk on it but not walk through it.

use super::map::{Tile, WorldMap};
use pathfinding::prelude::astar;

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
    if goals.is_empty() {
        return None;
    }
    let g = goals.as_slice();
    let (path, _cost) = astar(
        &from,
        move |t: &Tile| {
            t.neighbours()
                .into_iter()
                .filter(move |n| g.contains(n) || map.walkable(*n))
                .map(|n| (n, 1u32))
        },
        |t| g.iter().map(|x| t.manhattan(*x)).min().unwrap_or(0),
        |t| g.contains(t),
    )?;
    Some(path.into_iter().skip(1).collect())
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
}
