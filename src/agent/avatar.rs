//! The player's avatar: a real person on the grid with a persona from the scenario (residents
//! can see it), moved one tile at a time by [`AvatarMove`] messages that the game's input writes
//! (and tests write directly). Walls, water, trees and furniture block it.

use super::{ActionSource, CurrentAction, GridPos, Identity};
use crate::agent::persona::PlayerSpec;
use crate::sim::map::{Tile, WorldMap};
use crate::sim::time::GameTime;
use bevy::prelude::*;

/// Marks the player's avatar.
#[derive(Component, Debug, Clone, Copy, Default)]
#[require(GridPos)]
pub struct Avatar;

/// A request to move the avatar one tile.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct AvatarMove {
    /// -1, 0 or 1.
    pub dx: i32,
    /// -1, 0 or 1 (positive is down the map).
    pub dy: i32,
}

/// The avatar's components.
pub fn avatar_bundle(spec: &PlayerSpec, now: GameTime, world: &str) -> impl Bundle {
    let tile = Tile::new(spec.spawn.0, spec.spawn.1);
    (
        Name::new(spec.name.clone()),
        Avatar,
        Identity {
            name: spec.name.clone(),
            first_name: spec
                .name
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string(),
            age: spec.age,
            description: spec.description.clone(),
        },
        GridPos::at(tile),
        super::Facing::default(),
        CurrentAction {
            description: format!("exploring {world}"),
            emoji: "🚶".into(),
            address: String::new(),
            start: now,
            duration_min: 0,
            source: ActionSource::Player,
            event: None,
            object_state: String::new(),
        },
    )
}

/// The tile a step leads to, or `None` when something blocks it.
pub fn step_target(map: &WorldMap, from: Tile, dx: i32, dy: i32) -> Option<Tile> {
    let to = Tile::new(from.x + dx.signum(), from.y + dy.signum());
    if to == from {
        return None;
    }
    // A diagonal step needs one of its two straight neighbours free (no squeezing past corners).
    if dx != 0
        && dy != 0
        && !map.walkable(Tile::new(from.x + dx.signum(), from.y))
        && !map.walkable(Tile::new(from.x, from.y + dy.signum()))
    {
        return None;
    }
    map.walkable(to).then_some(to)
}

/// Applies movement requests to the avatar.
pub fn move_avatar(
    map: Res<WorldMap>,
    mut moves: MessageReader<AvatarMove>,
    mut avatar: Query<(&mut GridPos, &mut CurrentAction), With<Avatar>>,
) {
    let Ok((mut pos, mut action)) = avatar.single_mut() else {
        moves.clear();
        return;
    };
    for m in moves.read() {
        if let Some(to) = step_target(&map, pos.tile, m.dx, m.dy) {
            *pos = GridPos {
                tile: to,
                prev: pos.tile,
            };
            let here = map.address(to).to_string();
            if action.address != here {
                action.address = here;
            }
        }
    }
}

/// A walk the avatar takes on its own (`goto <name>`): one tile every few frames, as if walked
/// with the keys. Any key walk cancels it (the game clears it).
#[derive(Resource, Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AvatarRoute {
    /// Tiles still to walk, in order.
    pub tiles: std::collections::VecDeque<Tile>,
    /// Frames since the last tile.
    pub frames: u32,
}

/// Frames between two tiles of an [`AvatarRoute`].
pub const ROUTE_FRAMES_PER_TILE: u32 = 6;

/// Walks the avatar along its route, one tile at a time.
pub fn follow_route(
    mut route: ResMut<AvatarRoute>,
    mut moves: MessageWriter<AvatarMove>,
    avatar: Query<&GridPos, With<Avatar>>,
) {
    let Ok(pos) = avatar.single() else {
        return;
    };
    let Some(next) = route.tiles.front().copied() else {
        return;
    };
    route.frames += 1;
    if route.frames < ROUTE_FRAMES_PER_TILE {
        return;
    }
    route.frames = 0;
    if next == pos.tile {
        route.tiles.pop_front();
        return;
    }
    if next.manhattan(pos.tile) > 2 {
        route.tiles.clear(); // pushed off the route
        return;
    }
    route.tiles.pop_front();
    moves.write(AvatarMove {
        dx: next.x - pos.tile.x,
        dy: next.y - pos.tile.y,
    });
}

pub(super) fn plugin(app: &mut App) {
    app.add_message::<AvatarMove>()
        .init_resource::<AvatarRoute>()
        .add_systems(
            Update,
            (follow_route, move_avatar)
                .chain()
                .in_set(crate::sim::AppSystems::Input),
        );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::map::parse_map;
    use std::path::Path;

    #[test]
    fn walls_block_the_avatar() {
        let src = r#"( world: "w", width: 3, height: 3, legend: { '.': Grass, '#': Wall },
            terrain: [ "...", ".#.", "..." ], sectors: [] )"#;
        let map = parse_map(Path::new("t.ron"), src).unwrap();
        assert_eq!(step_target(&map, Tile::new(0, 1), 1, 0), None);
        assert_eq!(
            step_target(&map, Tile::new(0, 1), 0, 1),
            Some(Tile::new(0, 2))
        );
        assert_eq!(
            step_target(&map, Tile::new(0, 0), -1, 0),
            None,
            "the edge of the map blocks"
        );
        assert_eq!(
            step_target(&map, Tile::new(0, 0), 1, 1),
            None,
            "diagonal into a wall"
        );
    }
}
