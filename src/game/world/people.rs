//! People on screen: a sprite each (turned the way they face), a name label, a bubble with the
//! current action's icon (our pixel icon when we have one, else the emoji itself in Noto Emoji)
//! and short text, a speech bubble while they talk, and a thought mark while the step waits on
//! their decision; drawn between tiles so motion is smooth at every speed.

use crate::agent::avatar::Avatar;
use crate::agent::conversation::Speech;
use crate::agent::{CurrentAction, Facing, GridPos, Identity};
use crate::cognition::ask::pending::Pending;
use crate::game::shared::TILE;
use crate::game::shared::tile_to_world;
use crate::game::world::art::has_pixel_icon;
use crate::game::world::art::icon_index;
use crate::game::world::sprites;
use crate::game::world::sprites::Heading;
use crate::game::world::sprites::Pose;
use crate::sim::clock::SimClock;
use crate::sim::clock::{SimPace, Speed};
use crate::sim::map::WorldMap;
use bevy::prelude::*;

/// The on-screen parts of a person.
#[derive(Component)]
pub struct Bubble {
    pub(crate) name: Entity,
    pub(crate) text: Entity,
    pub(crate) icon: Entity,
    pub(crate) glyph: Entity,
    pub(crate) speech: Entity,
    pub(crate) think: Entity,
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

/// The people sheet and the icon strip (from `assets/art/`), with their grids.
#[derive(Resource, Clone)]
pub struct Art {
    people: Handle<Image>,
    people_layout: Handle<TextureAtlasLayout>,
    pub(crate) icons: Handle<Image>,
    pub(crate) icons_layout: Handle<TextureAtlasLayout>,
}

impl FromWorld for Art {
    fn from_world(world: &mut World) -> Self {
        let (people, icons) = {
            let mut images = world.resource_mut::<Assets<Image>>();
            (
                images.add(sprites::load_atlas("people.png")),
                images.add(sprites::load_atlas("icons.png")),
            )
        };
        let mut layouts = world.resource_mut::<Assets<TextureAtlasLayout>>();
        Self {
            people,
            people_layout: layouts.add(sprites::people_layout()),
            icons,
            icons_layout: layouts.add(sprites::icons_layout()),
        }
    }
}

/// A person's row in the people sheet, and the pose drawn now.
#[derive(Component)]
pub struct Look {
    row: usize,
    /// The pose drawn now.
    pub pose: Pose,
}

/// Where a speech bubble's bottom sits above a person's feet (world units).
pub(crate) const SPEECH_Y: f32 = 26.0;

/// Text is rasterised this many times larger than drawn, so it stays sharp when zoomed in.
pub(crate) const TEXT_OVERSAMPLE: f32 = 4.0;

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
    art: Res<Art>,
    emoji: Res<EmojiFont>,
    mut count: Local<usize>,
) {
    for (e, id, pos, is_avatar) in &new {
        let row = sprites::look_row(*count, is_avatar);
        if !is_avatar {
            *count += 1;
        }
        let pose = Pose::Stand {
            heading: Heading::Down,
            step: 0,
        };
        let p = tile_to_world(&map, pos.tile);
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
                Sprite::from_atlas_image(
                    art.people.clone(),
                    TextureAtlas {
                        layout: art.people_layout.clone(),
                        index: sprites::sheet_index(row, pose),
                    },
                ),
                // The feet on the tile's lower edge; the head reaches into the tile above.
                bevy::sprite::Anchor(Vec2::new(0.0, -1.0 / 6.0)),
                Look { row, pose },
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
                        Transform::from_xyz(-1.0, 20.5, 2.0)
                            .with_scale(Vec3::splat(1.0 / TEXT_OVERSAMPLE)),
                    ))
                    .id();
                icon = c
                    .spawn((
                        Sprite::from_atlas_image(
                            art.icons.clone(),
                            TextureAtlas {
                                layout: art.icons_layout.clone(),
                                index: icon_index(""),
                            },
                        ),
                        Transform::from_xyz(-5.5, 20.5, 2.5).with_scale(Vec3::splat(0.8)),
                    ))
                    .id();
                glyph = c
                    .spawn((
                        Text2d::new(""),
                        glyph_font.clone(),
                        TextColor(Color::srgb(0.1, 0.1, 0.15)),
                        TextBackgroundColor(Color::WHITE),
                        Visibility::Hidden,
                        Transform::from_xyz(-5.5, 20.5, 2.6)
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
                        Transform::from_xyz(0.0, SPEECH_Y, 3.0)
                            .with_scale(Vec3::splat(1.0 / TEXT_OVERSAMPLE)),
                    ))
                    .id();
                think = c
                    .spawn((
                        Text2d::new("💭"),
                        glyph_font.clone(),
                        TextColor(Color::srgb(0.3, 0.3, 0.45)),
                        Visibility::Hidden,
                        Transform::from_xyz(8.0, 15.0, 2.7)
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
    emoji: Res<EmojiFont>,
) {
    for (action, bubble) in &people {
        if let Ok(mut t) = texts.get_mut(bubble.text) {
            t.0 = short_action(&action.description);
        }
        let as_glyph =
            !has_pixel_icon(&action.emoji) && emoji.0.is_some() && !action.emoji.is_empty();
        if let Ok(mut s) = sprites.get_mut(bubble.icon)
            && let Some(atlas) = s.texture_atlas.as_mut()
        {
            atlas.index = icon_index(&action.emoji);
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
/// is waiting for.
pub fn update_speech_and_thoughts(
    clock: Res<SimClock>,
    people: Query<(&Bubble, Option<&Speech>, Option<&Pending>)>,
    mut texts: Query<&mut Text2d, Without<Bubble>>,
    mut vis: Query<&mut Visibility, Without<Bubble>>,
) {
    for (bubble, speech, pending) in &people {
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
    }
}

/// Whether the window shows someone asleep: drawn lying in bed, windows dark, not the first up.
/// Wider than [`CurrentAction::is_asleep`] (what perception skips): a nap and the sleep emoji count.
pub fn looks_asleep(a: &CurrentAction) -> bool {
    let d = a.description.to_lowercase();
    a.emoji == "😴" || d.contains("sleep") || d.contains("nap")
}

/// Words in an object's name that people sit at.
const SEATS: [&str; 11] = [
    "chair", "seat", "desk", "table", "sofa", "couch", "bench", "computer", "piano", "stool", "bed",
];

/// The pose for a person: walking (heading from the step, a foot forward in each half of it),
/// asleep, sitting at a seat-like object of their action, or standing the way they last went
/// (or towards their partner in a conversation).
pub fn pose_for(
    pos: &GridPos,
    progress: f32,
    action: Option<&CurrentAction>,
    last: Heading,
) -> Pose {
    let (dx, dy) = (pos.tile.x - pos.prev.x, pos.tile.y - pos.prev.y);
    if (dx, dy) != (0, 0) && progress < 1.0 {
        let heading = if dx.abs() >= dy.abs() {
            if dx < 0 {
                Heading::Left
            } else {
                Heading::Right
            }
        } else if dy < 0 {
            Heading::Up
        } else {
            Heading::Down
        };
        let step = if progress < 0.5 {
            0
        } else if (pos.tile.x + pos.tile.y) % 2 == 0 {
            1
        } else {
            2
        };
        return Pose::Stand { heading, step };
    }
    if let Some(a) = action {
        if looks_asleep(a) {
            return Pose::Sleep;
        }
        let object = a.address.rsplit(':').next().unwrap_or("").to_lowercase();
        if a.address.matches(':').count() >= 3 && SEATS.iter().any(|w| object.contains(w)) {
            return Pose::Sit;
        }
    }
    Pose::Stand {
        heading: last,
        step: 0,
    }
}

/// Picks each person's picture from the sheet: where they go, what they do, whom they talk to.
pub fn animate_people(
    pace: Res<SimPace>,
    avatar_step: Res<AvatarStep>,
    mut people: Query<(
        &GridPos,
        Option<&CurrentAction>,
        Option<Ref<Facing>>,
        &mut Look,
        &mut Sprite,
        Has<Avatar>,
    )>,
) {
    let sim_progress = if pace.paused || pace.speed == Speed::Max {
        1.0
    } else {
        pace.progress
    };
    for (pos, action, facing, mut look, mut sprite, is_avatar) in &mut people {
        let mut last = match look.pose {
            Pose::Stand { heading, .. } => heading,
            _ => Heading::Down,
        };
        if let Some(facing) = facing
            && facing.is_changed()
            && !facing.is_added()
            && pos.prev == pos.tile
        {
            last = if facing.0 < 0 {
                Heading::Left
            } else {
                Heading::Right
            };
        }
        let progress = if is_avatar {
            avatar_step.progress
        } else {
            sim_progress
        };
        let action = if is_avatar { None } else { action };
        let pose = pose_for(pos, progress, action, last);
        if pose != look.pose {
            look.pose = pose;
        }
        let index = sprites::sheet_index(look.row, pose);
        if let Some(atlas) = sprite.texture_atlas.as_mut()
            && atlas.index != index
        {
            atlas.index = index;
        }
    }
}

/// Places everyone between their previous and current tile.
pub fn place_people(
    map: Res<WorldMap>,
    pace: Res<SimPace>,
    avatar_step: Res<AvatarStep>,
    mut people: Query<(
        &GridPos,
        &mut Transform,
        Has<Avatar>,
        Option<&Look>,
        Option<&CurrentAction>,
    )>,
) {
    let sim_progress = if pace.paused || pace.speed == Speed::Max {
        1.0
    } else {
        pace.progress
    };
    for (pos, mut tf, is_avatar, look, action) in &mut people {
        let f = if is_avatar {
            avatar_step.progress
        } else {
            sim_progress
        };
        let a = tile_to_world(&map, pos.prev);
        let b = tile_to_world(&map, pos.tile);
        let mut p = a.lerp(b, f.clamp(0.0, 1.0));
        // A sleeper stands beside a bed (beds block walking) but is drawn lying in it.
        if look.is_some_and(|l| l.pose == Pose::Sleep)
            && let Some(bed) = action.and_then(|a| {
                map.tiles_of(&a.address)
                    .iter()
                    .find(|t| t.manhattan(pos.tile) == 1)
            })
        {
            p = tile_to_world(&map, *bed);
        }
        // Nearer the bottom of the screen draws in front.
        let z = 10.0 + if is_avatar { 1.0 } else { 0.0 }
            - p.y / (map.height as f32 * TILE as f32 * 10.0);
        tf.translation = Vec3::new(p.x, p.y, z);
    }
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<EmojiFont>()
        .init_resource::<AvatarStep>()
        .init_resource::<Art>()
        .add_systems(Startup, load_emoji_font)
        .add_systems(
            Update,
            (
                attach_sprites,
                update_bubbles,
                update_speech_and_thoughts,
                animate_people,
            )
                .chain()
                .in_set(crate::game::shared::Present::Sprites),
        )
        .add_systems(
            Update,
            place_people.in_set(crate::game::shared::Present::Place),
        );
}
