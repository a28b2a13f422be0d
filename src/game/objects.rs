//! Object states drawn in the town: a small label over each object that is not idle ("stove:
//! heating a pan"), kept in step with the world's `ObjectStates`.

use super::town::tile_to_world;
use crate::sim::map::WorldMap;
use crate::sim::objects_state::ObjectStates;
use bevy::prelude::*;

/// A label showing one object's state.
#[derive(Component)]
pub struct ObjectMarker(pub String);

const OVERSAMPLE: f32 = 4.0;

/// Adds, updates and removes labels when object states change.
pub fn sync_object_markers(
    mut commands: Commands,
    states: Res<ObjectStates>,
    map: Res<WorldMap>,
    mut markers: Query<(Entity, &ObjectMarker, &mut Text2d)>,
) {
    if !states.is_changed() {
        return;
    }
    let mut shown: Vec<String> = Vec::new();
    for (e, marker, mut text) in &mut markers {
        match states.get(&marker.0) {
            Some(s) => {
                let want = label(&marker.0, &s.state);
                if text.0 != want {
                    text.0 = want;
                }
                shown.push(marker.0.clone());
            }
            None => commands.entity(e).despawn(),
        }
    }
    for (address, s) in &states.states {
        if shown.contains(address) {
            continue;
        }
        let tiles = map.tiles_of(address);
        if tiles.is_empty() {
            continue;
        }
        let centre = tiles
            .iter()
            .map(|t| tile_to_world(&map, *t))
            .fold(Vec2::ZERO, |a, b| a + b)
            / tiles.len() as f32;
        commands.spawn((
            ObjectMarker(address.clone()),
            Text2d::new(label(address, &s.state)),
            TextFont {
                font_size: FontSize::Px(4.0 * OVERSAMPLE),
                ..default()
            },
            TextColor(Color::srgb(0.25, 0.15, 0.0)),
            TextBackgroundColor(Color::srgba(1.0, 0.85, 0.4, 0.9)),
            Transform::from_xyz(centre.x, centre.y + 7.0, 9.5)
                .with_scale(Vec3::splat(1.0 / OVERSAMPLE)),
        ));
    }
}

fn label(address: &str, state: &str) -> String {
    let object = address.rsplit(':').next().unwrap_or(address);
    let state: String = state.chars().take(30).collect();
    format!("{object}: {state}")
}
