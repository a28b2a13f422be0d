//! People on screen: a sprite each, a name label, and a bubble with the current action's icon
//! and short text; drawn between tiles so motion is smooth at every speed.

use super::art::{TILE, icon_image, person_image};
use super::town::tile_to_world;
use crate::agent::avatar::Avatar;
use crate::agent::{CurrentAction, GridPos, Identity};
use crate::sim::clock::{SimPace, Speed};
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use std::collections::HashMap;

/// The on-screen parts of a person.
#[derive(Component)]
pub struct Bubble {
    name: Entity,
    text: Entity,
    icon: Entity,
}

/// Drawing progress of the avatar's own step (it moves in real time, not in sim steps).
#[derive(Resource, Default)]
pub struct AvatarStep {
    /// 0..1 through the current step.
    pub progress: f32,
}

/// Icon images by emoji.
#[derive(Resource, Default)]
pub struct Icons(HashMap<String, Handle<Image>>);

impl Icons {
    fn get(&mut self, emoji: &str, images: &mut Assets<Image>) -> Handle<Image> {
        self.0.entry(emoji.to_string()).or_insert_with(|| images.add(icon_image(emoji))).clone()
    }
}

/// Text is rasterised this many times larger than drawn, so it stays sharp when zoomed in.
const TEXT_OVERSAMPLE: f32 = 4.0;

fn label_font(px: f32) -> TextFont {
    TextFont { font_size: FontSize::Px(px * TEXT_OVERSAMPLE), ..default() }
}

/// The shortest form of an action for a bubble.
pub fn short_action(description: &str) -> String {
    let d: String = description.chars().take(28).collect();
    if description.chars().count() > 28 { format!("{}...", d.trim_end()) } else { d }
}

/// Gives every new person a sprite, a name and a bubble.
pub fn attach_sprites(
    mut commands: Commands,
    new: Query<(Entity, &Identity, &GridPos, Has<Avatar>), Added<Identity>>,
    map: Res<WorldMap>,
    mut images: ResMut<Assets<Image>>,
    mut icons: ResMut<Icons>,
    mut count: Local<usize>,
) {
    for (e, id, pos, is_avatar) in &new {
        let image = images.add(person_image(*count, is_avatar));
        *count += 1;
        let p = tile_to_world(&map, pos.tile);
        let icon_handle = icons.get("🚶", &mut images);
        let mut name = Entity::PLACEHOLDER;
        let mut text = Entity::PLACEHOLDER;
        let mut icon = Entity::PLACEHOLDER;
        commands.entity(e).insert((Sprite::from_image(image), Transform::from_xyz(p.x, p.y, 10.0 + if is_avatar { 1.0 } else { 0.0 }))).with_children(|c| {
            let name_color = if is_avatar { Color::srgb(1.0, 0.9, 0.3) } else { Color::WHITE };
            name = c.spawn((
                Text2d::new(id.name.clone()),
                label_font(5.0),
                TextColor(name_color),
                TextBackgroundColor(Color::BLACK.with_alpha(0.55)),
                Transform::from_xyz(0.0, -11.0, 2.0).with_scale(Vec3::splat(1.0 / TEXT_OVERSAMPLE)),
            ))
            .id();
            text = c
                .spawn((
                    Text2d::new(""),
                    label_font(4.5),
                    TextColor(Color::srgb(0.1, 0.1, 0.15)),
                    TextBackgroundColor(Color::srgba(1.0, 1.0, 0.92, 0.85)),
                    bevy::sprite::Anchor::CENTER_LEFT,
                    Transform::from_xyz(-1.0, 12.5, 2.0).with_scale(Vec3::splat(1.0 / TEXT_OVERSAMPLE)),
                ))
                .id();
            icon = c.spawn((Sprite::from_image(icon_handle), Transform::from_xyz(-5.5, 12.5, 2.5).with_scale(Vec3::splat(0.8)))).id();
        });
        commands.entity(e).insert(Bubble { name, text, icon });
    }
}

/// Updates a bubble when the action changes.
pub fn update_bubbles(
    people: Query<(&CurrentAction, &Bubble), Changed<CurrentAction>>,
    mut texts: Query<&mut Text2d>,
    mut sprites: Query<&mut Sprite>,
    mut images: ResMut<Assets<Image>>,
    mut icons: ResMut<Icons>,
) {
    for (action, bubble) in &people {
        if let Ok(mut t) = texts.get_mut(bubble.text) {
            t.0 = short_action(&action.description);
        }
        if let Ok(mut s) = sprites.get_mut(bubble.icon) {
            s.image = icons.get(&action.emoji, &mut images);
        }
    }
}

/// Places everyone between their previous and current tile.
pub fn place_people(map: Res<WorldMap>, pace: Res<SimPace>, avatar_step: Res<AvatarStep>, mut people: Query<(&GridPos, &mut Transform, Has<Avatar>)>) {
    let sim_progress = if pace.paused || pace.speed == Speed::Max { 1.0 } else { pace.progress };
    for (pos, mut tf, is_avatar) in &mut people {
        let f = if is_avatar { avatar_step.progress } else { sim_progress };
        let a = tile_to_world(&map, pos.prev);
        let b = tile_to_world(&map, pos.tile);
        let p = a.lerp(b, f.clamp(0.0, 1.0));
        // Nearer the bottom of the screen draws in front.
        let z = 10.0 + if is_avatar { 1.0 } else { 0.0 } - p.y / (map.height as f32 * TILE as f32 * 10.0);
        tf.translation = Vec3::new(p.x, p.y, z);
    }
}

/// In a crowd (a full cafe) labels would pile up unreadably: the texts of people standing right
/// next to someone whose texts already show are hidden; their sprites and action icons stay.
/// The avatar's always show.
pub fn declutter_labels(people: Query<(&Transform, &Bubble, Has<Avatar>)>, mut vis: Query<&mut Visibility>) {
    let mut order: Vec<(Vec2, &Bubble, bool)> = people.iter().map(|(t, b, a)| (t.translation.truncate(), b, a)).collect();
    order.sort_by(|a, b| b.2.cmp(&a.2).then(b.0.y.total_cmp(&a.0.y)).then(a.0.x.total_cmp(&b.0.x)));
    let mut shown: Vec<Vec2> = Vec::new();
    for (p, bubble, _) in order {
        let crowded = shown.iter().any(|q| (q.x - p.x).abs() < 2.6 * TILE as f32 && (q.y - p.y).abs() < 1.6 * TILE as f32);
        let v = if crowded { Visibility::Hidden } else { Visibility::Inherited };
        for e in [bubble.name, bubble.text] {
            if let Ok(mut current) = vis.get_mut(e)
                && *current != v
            {
                *current = v;
            }
        }
        if !crowded {
            shown.push(p);
        }
    }
}
