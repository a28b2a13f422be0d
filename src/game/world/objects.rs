//! Object states drawn in the town: a small label over each object that is not idle ("stove:
//! heating a pan"), kept in step with the world's `ObjectStates`, and on the object itself what
//! an alarming state looks like (flames on a burning stove, drops on a leaking sink, a red cross
//! on a broken one, grime on a dirty one).

use crate::game::shared::tile_to_world;
use crate::game::world::art::Effect;
use crate::game::world::art::effect_index;
use crate::game::world::art::state_effect;
use crate::game::world::people::Art;
use crate::sim::map::WorldMap;
use crate::sim::objects_state::ObjectStates;
use bevy::prelude::*;

/// A label showing one object's state.
#[derive(Component)]
pub struct ObjectMarker(pub String);

/// An effect drawn on one tile of an object (its address and the effect).
#[derive(Component)]
pub struct ObjectEffect(pub String, pub Effect);

const OVERSAMPLE: f32 = 4.0;

/// Adds, updates and removes labels when object states change.
pub fn sync_object_markers(
    mut commands: Commands,
    states: Res<ObjectStates>,
    map: Res<WorldMap>,
    art: Res<Art>,
    time: Res<Time<Real>>,
    mut markers: Query<(Entity, &ObjectMarker, &mut Text2d)>,
    mut effects: Query<(Entity, &ObjectEffect, &mut Sprite)>,
) {
    // Flames flicker.
    let frame = (time.elapsed_secs() * 4.0) as usize;
    for (_, fx, mut sprite) in &mut effects {
        if fx.1 == Effect::Fire
            && let Some(a) = sprite.texture_atlas.as_mut()
            && a.index != effect_index(Effect::Fire, frame)
        {
            a.index = effect_index(Effect::Fire, frame);
        }
    }
    if !states.is_changed() {
        return;
    }
    let mut drawn: Vec<String> = Vec::new();
    for (e, fx, _) in &effects {
        let now = states.get(&fx.0).and_then(|s| state_effect(&s.state));
        if now == Some(fx.1) {
            drawn.push(fx.0.clone());
        } else {
            commands.entity(e).despawn();
        }
    }
    for (address, s) in &states.states {
        let Some(effect) = state_effect(&s.state) else {
            continue;
        };
        if drawn.contains(address) {
            continue;
        }
        for t in map.tiles_of(address) {
            let p = tile_to_world(&map, *t);
            commands.spawn((
                ObjectEffect(address.clone(), effect),
                Sprite::from_atlas_image(
                    art.icons.clone(),
                    TextureAtlas {
                        layout: art.icons_layout.clone(),
                        index: effect_index(effect, 0),
                    },
                ),
                Transform::from_xyz(p.x, p.y + 2.0, 9.3).with_scale(Vec3::splat(1.4)),
            ));
        }
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

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        sync_object_markers.in_set(crate::game::shared::Present::Objects),
    );
}
