//! People on screen: a sprite each (turned the way they face), a name label, a bubble with the
//! current action's icon (our pixel icon when we have one, else the emoji itself in Noto Emoji)
//! and short text, a speech bubble while they talk, and a thought mark while the step waits on
//! their decision; drawn between tiles so motion is smooth at every speed.

use super::art::{TILE, has_pixel_icon, icon_image, person_image};
use super::town::tile_to_world;
use crate::agent::avatar::Avatar;
use crate::agent::conversation::Speech;
use crate::agent::{CurrentAction, Facing, GridPos, Identity};
use crate::cognition::pending::Pending;
use crate::sim::clock::SimClock;
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
    glyph: Entity,
    speech: Entity,
    think: Entity,
}

/// The emoji font (Noto Emoji, fetched by set-up into `assets/fonts/`), when present.
#[derive(Resource, Default, Clone)]
pub struct EmojiFont(pub Option<Handle<Font>>);

/// Where set-up puts the emoji font.
pub const EMOJI_FONT: &str = "assets/fonts/NotoEmoji-Regular.ttf";

/// Loads the emoji font from disk (no asset server needed); says once if it is missing.
pub fn load_emoji_font(mut fonts: ResMut<Assets<Font>>, mut font: ResMut<EmojiFont>) {
    let path = crate::data::data_root().join(EMOJI_FONT);
    match std::fs::read(&path) {
        Ok(bytes) => font.0 = Some(fonts.add(Font::from_bytes(bytes))),
        Err(e) => warn!(
            "no emoji font at {} ({e}): emoji without a pixel icon show as a generic icon; run ./scripts/setup.sh",
            path.display()
        ),
    }
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
        self.0
            .entry(emoji.to_string())
            .or_insert_with(|| images.add(icon_image(emoji)))
            .clone()
    }
}

/// Text is rasterised this many times larger than drawn, so it stays sharp when zoomed in.
const TEXT_OVERSAMPLE: f32 = 4.0;

fn label_font(px: f32) -> TextFont {
    TextFont {
        font_size: FontSize::Px(px * TEXT_OVERSAMPLE),
        ..default()
    }
}

/// The shortest form of an action for a bubble.
pub fn short_action(description: &str) -> String {
    let d: String = description.chars().take(28).collect();
    if description.chars().count() > 28 {
        format!("{}...", d.trim_end())
    } else {
        d
    }
}

/// Gives every new person a sprite, a name and a bubble.
pub fn attach_sprites(
    mut commands: Commands,
    new: Query<(Entity, &Identity, &GridPos, Has<Avatar>), Added<Identity>>,
    map: Res<WorldMap>,
    mut images: ResMut<Assets<Image>>,
    mut icons: ResMut<Icons>,
    emoji: Res<EmojiFont>,
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
        let mut glyph = Entity::PLACEHOLDER;
        let mut speech = Entity::PLACEHOLDER;
        let mut think = Entity::PLACEHOLDER;
        let glyph_font = TextFont {
            font: emoji.0.clone().map(Into::into).unwrap_or_default(),
            font_size: FontSize::Px(8.0 * TEXT_OVERSAMPLE),
            ..default()
        };
        commands
            .entity(e)
            .insert((
                Sprite::from_image(image),
                Transform::from_xyz(p.x, p.y, 10.0 + if is_avatar { 1.0 } else { 0.0 }),
            ))
            .with_children(|c| {
                let name_color = if is_avatar {
                    Color::srgb(1.0, 0.9, 0.3)
                } else {
                    Color::WHITE
                };
                name = c
                    .spawn((
                        Text2d::new(id.name.clone()),
                        label_font(5.0),
                        TextColor(name_color),
                        TextBackgroundColor(Color::BLACK.with_alpha(0.55)),
                        Transform::from_xyz(0.0, -11.0, 2.0)
                            .with_scale(Vec3::splat(1.0 / TEXT_OVERSAMPLE)),
                    ))
                    .id();
                text = c
                    .spawn((
                        Text2d::new(""),
                        label_font(4.5),
                        TextColor(Color::srgb(0.1, 0.1, 0.15)),
                        TextBackgroundColor(Color::srgba(1.0, 1.0, 0.92, 0.85)),
                        bevy::sprite::Anchor::CENTER_LEFT,
                        Transform::from_xyz(-1.0, 12.5, 2.0)
                            .with_scale(Vec3::splat(1.0 / TEXT_OVERSAMPLE)),
                    ))
                    .id();
                icon = c
                    .spawn((
                        Sprite::from_image(icon_handle),
                        Transform::from_xyz(-5.5, 12.5, 2.5).with_scale(Vec3::splat(0.8)),
                    ))
                    .id();
                glyph = c
                    .spawn((
                        Text2d::new(""),
                        glyph_font.clone(),
                        TextColor(Color::srgb(0.1, 0.1, 0.15)),
                        TextBackgroundColor(Color::WHITE),
                        Visibility::Hidden,
                        Transform::from_xyz(-5.5, 12.5, 2.6)
                            .with_scale(Vec3::splat(1.0 / TEXT_OVERSAMPLE)),
                    ))
                    .id();
                speech = c
                    .spawn((
                        Text2d::new(""),
                        label_font(4.5),
                        TextColor(Color::srgb(0.05, 0.05, 0.1)),
                        TextBackgroundColor(Color::WHITE),
                        bevy::text::TextBounds::new_horizontal(120.0 * TEXT_OVERSAMPLE),
                        bevy::sprite::Anchor::BOTTOM_CENTER,
                        Visibility::Hidden,
                        Transform::from_xyz(0.0, 18.0, 3.0)
                            .with_scale(Vec3::splat(1.0 / TEXT_OVERSAMPLE)),
                    ))
                    .id();
                think = c
                    .spawn((
                        Text2d::new("💭"),
                        glyph_font.clone(),
                        TextColor(Color::srgb(0.3, 0.3, 0.45)),
                        Visibility::Hidden,
                        Transform::from_xyz(7.0, 9.0, 2.7)
                            .with_scale(Vec3::splat(0.8 / TEXT_OVERSAMPLE)),
                    ))
                    .id();
            });
        commands.entity(e).insert(Bubble {
            name,
            text,
            icon,
            glyph,
            speech,
            think,
        });
    }
}

/// Updates a bubble when the action changes: our pixel icon for the emoji when we have one,
/// else the emoji itself.
pub fn update_bubbles(
    people: Query<(&CurrentAction, &Bubble), Changed<CurrentAction>>,
    mut texts: Query<&mut Text2d>,
    mut sprites: Query<&mut Sprite>,
    mut vis: Query<&mut Visibility>,
    mut images: ResMut<Assets<Image>>,
    mut icons: ResMut<Icons>,
    emoji: Res<EmojiFont>,
) {
    for (action, bubble) in &people {
        if let Ok(mut t) = texts.get_mut(bubble.text) {
            t.0 = short_action(&action.description);
        }
        let as_glyph =
            !has_pixel_icon(&action.emoji) && emoji.0.is_some() && !action.emoji.is_empty();
        if let Ok(mut s) = sprites.get_mut(bubble.icon) {
            s.image = icons.get(&action.emoji, &mut images);
        }
        if let Ok(mut t) = texts.get_mut(bubble.glyph) {
            t.0 = action.emoji.clone();
        }
        for (e, show) in [(bubble.icon, !as_glyph), (bubble.glyph, as_glyph)] {
            if let Ok(mut v) = vis.get_mut(e) {
                *v = if show {
                    Visibility::Inherited
                } else {
                    Visibility::Hidden
                };
            }
        }
    }
}

/// Shows what people say over their heads, and a thought mark on those whose decision the step
/// is waiting for; turns sprites the way people face.
pub fn update_speech_and_thoughts(
    clock: Res<SimClock>,
    mut people: Query<(
        &Bubble,
        Option<&Speech>,
        Option<&Pending>,
        Option<&Facing>,
        &mut Sprite,
    )>,
    mut texts: Query<&mut Text2d, Without<Bubble>>,
    mut vis: Query<&mut Visibility, Without<Bubble>>,
) {
    for (bubble, speech, pending, facing, mut sprite) in &mut people {
        let words = speech
            .map(|s| format!("\u{201c}{}\u{201d}", s.text))
            .unwrap_or_default();
        if let Ok(mut t) = texts.get_mut(bubble.speech)
            && t.0 != words
        {
            t.0 = words.clone();
        }
        let thinking = pending.is_some_and(|p| p.blocking(clock.step + 1) > 0);
        for (e, show) in [(bubble.speech, !words.is_empty()), (bubble.think, thinking)] {
            if let Ok(mut v) = vis.get_mut(e) {
                let want = if show {
                    Visibility::Inherited
                } else {
                    Visibility::Hidden
                };
                if *v != want {
                    *v = want;
                }
            }
        }
        let left = facing.is_some_and(|f| f.0 < 0);
        if sprite.flip_x != left {
            sprite.flip_x = left;
        }
    }
}

/// Places everyone between their previous and current tile.
pub fn place_people(
    map: Res<WorldMap>,
    pace: Res<SimPace>,
    avatar_step: Res<AvatarStep>,
    mut people: Query<(&GridPos, &mut Transform, Has<Avatar>)>,
) {
    let sim_progress = if pace.paused || pace.speed == Speed::Max {
        1.0
    } else {
        pace.progress
    };
    for (pos, mut tf, is_avatar) in &mut people {
        let f = if is_avatar {
            avatar_step.progress
        } else {
            sim_progress
        };
        let a = tile_to_world(&map, pos.prev);
        let b = tile_to_world(&map, pos.tile);
        let p = a.lerp(b, f.clamp(0.0, 1.0));
        // Nearer the bottom of the screen draws in front.
        let z = 10.0 + if is_avatar { 1.0 } else { 0.0 }
            - p.y / (map.height as f32 * TILE as f32 * 10.0);
        tf.translation = Vec3::new(p.x, p.y, z);
    }
}

/// In a crowd (a full cafe) labels would pile up unreadably: the texts of people standing right
/// next to someone whose texts already show are hidden; their sprites and action icons stay.
/// The avatar's always show.
pub fn declutter_labels(
    people: Query<(&Transform, &Bubble, Has<Avatar>)>,
    mut vis: Query<&mut Visibility>,
) {
    let mut order: Vec<(Vec2, &Bubble, bool)> = people
        .iter()
        .map(|(t, b, a)| (t.translation.truncate(), b, a))
        .collect();
    order.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then(b.0.y.total_cmp(&a.0.y))
            .then(a.0.x.total_cmp(&b.0.x))
    });
    let mut shown: Vec<Vec2> = Vec::new();
    for (p, bubble, _) in order {
        let crowded = shown.iter().any(|q| {
            (q.x - p.x).abs() < 2.6 * TILE as f32 && (q.y - p.y).abs() < 1.6 * TILE as f32
        });
        let v = if crowded {
            Visibility::Hidden
        } else {
            Visibility::Inherited
        };
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
