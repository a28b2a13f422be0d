//! What reads over people in a crowd: labels by priority (hover shows anyone), speech bubbles
//! that lift clear of each other and fade, icons that keep their size when zoomed out, and the
//! ring under the person selected.

use crate::agent::avatar::Avatar;
use crate::agent::conversation::Speech;
use crate::agent::{CurrentAction, Identity};
use crate::game::shared::TILE;
use crate::game::world::people::Art;
use crate::game::world::people::Bubble;
use crate::game::world::people::SPEECH_Y;
use crate::game::world::people::TEXT_OVERSAMPLE;
use crate::sim::clock::SimClock;
use bevy::prelude::*;

/// In a crowd (a full cafe) labels would pile up unreadably: labels show by priority (the
/// avatar, the person selected, those talking, then from the front of the scene back) and a
/// label right next to one already shown hides; sprites and action icons stay, and hovering a
/// person shows who it is ([`hover_tooltip`]).
pub fn declutter_labels(
    selected: Res<crate::game::shared::Selected>,
    settings: Res<crate::game::panels::settings::Settings>,
    camera: Query<(&Projection, &GlobalTransform), With<crate::game::shared::WorldCamera>>,
    people: Query<(Entity, &Transform, &Bubble, Has<Avatar>, Has<Speech>)>,
    mut vis: Query<&mut Visibility>,
) {
    let view = in_view(&camera);
    let mut order: Vec<(u8, Vec2, &Bubble)> = people
        .iter()
        .map(|(e, t, b, avatar, talking)| {
            let rank = if avatar {
                0
            } else if selected.0 == Some(e) {
                1
            } else if talking {
                2
            } else {
                3
            };
            (rank, t.translation.truncate(), b)
        })
        .collect();
    order.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.y.total_cmp(&b.1.y))
            .then(a.1.x.total_cmp(&b.1.x))
    });
    let mut shown: Vec<Vec2> = Vec::new();
    use crate::game::panels::settings::Labels;
    let mode = settings.values.labels;
    // Zoomed far out, names are too small to read: none show; zoomed out at all, the grown icons
    // (`keep_icons_readable`) would cover the action texts, so only names show.
    let zoom = match camera.single() {
        Ok((Projection::Orthographic(o), _)) => o.scale / crate::game::shared::DEFAULT_SCALE,
        _ => 1.0,
    };
    let readable = zoom <= 2.5;
    for (rank, p, bubble) in order {
        // Off screen a label is hidden (a town of a thousand has a thousand of them) and crowds
        // nothing on screen.
        let on_screen = view.is_none_or(|v| v.contains(p));
        let near_one_shown = || {
            shown.iter().any(|q| {
                (q.x - p.x).abs() < 2.6 * TILE as f32 && (q.y - p.y).abs() < 1.6 * TILE as f32
            })
        };
        let crowded = !on_screen || (mode != Labels::All && near_one_shown());
        let show_name = readable && !crowded && (mode != Labels::Off || rank == 0);
        let show_text = show_name && mode != Labels::Names && zoom <= 1.05;
        for (e, show) in [(bubble.name, show_name), (bubble.text, show_text)] {
            let v = if show {
                Visibility::Inherited
            } else {
                Visibility::Hidden
            };
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

/// The part of the world the camera shows, with a margin of two tiles (a label or bubble of
/// someone just outside still reads at the edge); `None` before the camera has its size.
fn in_view(
    camera: &Query<(&Projection, &GlobalTransform), With<crate::game::shared::WorldCamera>>,
) -> Option<Rect> {
    let Ok((Projection::Orthographic(o), at)) = camera.single() else {
        return None;
    };
    if o.area.is_empty() {
        return None;
    }
    let centre = at.translation().truncate();
    let area = Rect::from_corners(o.area.min + centre, o.area.max + centre);
    Some(area.inflate(2.0 * TILE as f32))
}

/// When each speech bubble's words began (for fading).
#[derive(Component, Default)]
pub struct SpeechShown {
    text: String,
    since: crate::sim::time::GameTime,
}

/// Speech bubbles never cover each other: from the front of the scene back, each is lifted
/// above any bubble already placed that it would overlap; and a line fades as its time to be
/// shown runs out (to half strength), so the newest words read strongest.
pub fn arrange_speech(
    mut commands: Commands,
    clock: Res<SimClock>,
    camera: Query<(&Projection, &GlobalTransform), With<crate::game::shared::WorldCamera>>,
    people: Query<(
        Entity,
        &Transform,
        &Bubble,
        Option<&Speech>,
        Option<&SpeechShown>,
    )>,
    mut bubbles: Query<
        (
            &mut Transform,
            &bevy::text::TextLayoutInfo,
            &mut TextColor,
            &mut TextBackgroundColor,
        ),
        Without<Bubble>,
    >,
) {
    // A line said again later fades from its own start.
    for (e, _, _, speech, shown) in &people {
        if speech.is_none() && shown.is_some() {
            commands.entity(e).remove::<SpeechShown>();
        }
    }
    // Bubbles off screen are not arranged (nobody reads them; a crowd of a thousand would be
    // arranged against each other every frame); they are when they come into view.
    let view = in_view(&camera);
    let mut talking: Vec<(Entity, Vec2, &Bubble, &Speech, Option<&SpeechShown>)> = people
        .iter()
        .filter_map(|(e, t, b, s, shown)| s.map(|s| (e, t.translation.truncate(), b, s, shown)))
        .filter(|(_, p, ..)| view.is_none_or(|v| v.contains(*p)))
        .collect();
    talking.sort_by(|a, b| a.1.y.total_cmp(&b.1.y).then(a.1.x.total_cmp(&b.1.x)));
    let mut placed: Vec<Rect> = Vec::new();
    for (e, p, bubble, speech, shown) in talking {
        let since = match shown {
            Some(s) if s.text == speech.text => s.since,
            _ => {
                commands.entity(e).insert(SpeechShown {
                    text: speech.text.clone(),
                    since: clock.now,
                });
                clock.now
            }
        };
        let Ok((mut tf, layout, mut color, mut bg)) = bubbles.get_mut(bubble.speech) else {
            continue;
        };
        // The layout's size is in logical pixels of the text as rasterised (TEXT_OVERSAMPLE
        // times what it is drawn at).
        let size = layout.size / TEXT_OVERSAMPLE;
        let mut y = SPEECH_Y;
        let mut rect = Rect::from_corners(
            p + Vec2::new(-size.x / 2.0, y),
            p + Vec2::new(size.x / 2.0, y + size.y),
        );
        while let Some(over) = placed.iter().find(|r| !r.intersect(rect).is_empty()) {
            y += over.max.y - rect.min.y + 1.0;
            rect = Rect::from_corners(
                p + Vec2::new(-size.x / 2.0, y),
                p + Vec2::new(size.x / 2.0, y + size.y),
            );
        }
        placed.push(rect);
        if tf.translation.y != y {
            tf.translation.y = y;
        }
        let total = (speech.until.0 - since.0).max(1) as f32;
        let left = (speech.until.0 - clock.now.0).max(0) as f32;
        let strength = 0.5 + 0.5 * (left / total).clamp(0.0, 1.0).sqrt();
        let (text_alpha, bg_alpha) = (strength, 0.95 * strength);
        if (color.0.alpha() - text_alpha).abs() > 0.02 {
            color.0.set_alpha(text_alpha);
            bg.0.set_alpha(bg_alpha);
        }
    }
}

/// Zoomed out, the action icons and thought marks grow in the world so they stay about as big on
/// screen as at the default zoom (up to 3 times); the labels too small to read there are
/// [`declutter_labels`]' to hide. Only when the zoom changes or people appear.
pub fn keep_icons_readable(
    camera: Query<Ref<Projection>, With<crate::game::shared::WorldCamera>>,
    people: Query<&Bubble>,
    new: Query<(), Added<Bubble>>,
    mut tf: Query<&mut Transform, Without<Bubble>>,
) {
    let Ok(projection) = camera.single() else {
        return;
    };
    let Projection::Orthographic(o) = &*projection else {
        return;
    };
    if !projection.is_changed() && new.is_empty() {
        return;
    }
    let grow = (o.scale / crate::game::shared::DEFAULT_SCALE).clamp(1.0, 3.0);
    for b in &people {
        for (e, base) in [
            (b.icon, 0.8),
            (b.glyph, 1.0 / TEXT_OVERSAMPLE),
            (b.think, 0.8 / TEXT_OVERSAMPLE),
        ] {
            if let Ok(mut t) = tf.get_mut(e)
                && t.scale.x != base * grow
            {
                t.scale = Vec3::splat(base * grow);
            }
        }
    }
}

/// The selection ring under the person shown in the inspector.
#[derive(Component)]
pub struct SelectionRing;

/// Spawns the selection ring (hidden until someone is selected).
pub fn spawn_selection_ring(mut commands: Commands, art: Res<Art>) {
    commands.spawn((
        SelectionRing,
        Sprite::from_atlas_image(
            art.icons.clone(),
            TextureAtlas {
                layout: art.icons_layout.clone(),
                index: crate::game::world::art::RING_INDEX,
            },
        ),
        Transform::from_xyz(0.0, 0.0, 9.0).with_scale(Vec3::new(2.0, 1.0, 1.0)),
        Visibility::Hidden,
    ));
}

/// Keeps the ring under the selected person's feet.
pub fn place_selection_ring(
    selected: Res<crate::game::shared::Selected>,
    people: Query<&Transform, (With<Bubble>, Without<SelectionRing>)>,
    mut ring: Query<(&mut Transform, &mut Visibility), With<SelectionRing>>,
) {
    let Ok((mut tf, mut vis)) = ring.single_mut() else {
        return;
    };
    match selected.0.and_then(|e| people.get(e).ok()) {
        Some(p) => {
            tf.translation.x = p.translation.x;
            tf.translation.y = p.translation.y - 7.0;
            if *vis != Visibility::Inherited {
                *vis = Visibility::Inherited;
            }
        }
        None => {
            if *vis != Visibility::Hidden {
                *vis = Visibility::Hidden;
            }
        }
    }
}

/// Hovering a person shows who it is and what they do (their label may be hidden in a crowd).
pub fn hover_tooltip(
    mut contexts: bevy_egui::EguiContexts,
    window: Query<&Window, With<bevy::window::PrimaryWindow>>,
    camera: Query<(&Camera, &GlobalTransform), With<crate::game::shared::WorldCamera>>,
    people: Query<(
        &Transform,
        &Identity,
        Option<&CurrentAction>,
        Option<&Speech>,
    )>,
    shot: Option<Res<crate::game::ScreenshotRun>>,
) -> Result {
    if shot.is_some() {
        return Ok(()); // the virtual display's pointer rests mid-window, pointing at no one
    }
    let (Ok(window), Ok((cam, cam_tf))) = (window.single(), camera.single()) else {
        return Ok(());
    };
    let Some(cursor) = window.cursor_position() else {
        return Ok(());
    };
    let Some(world) = crate::game::shared::cursor_world(window, (cam, cam_tf)) else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    if ctx.is_pointer_over_egui() {
        return Ok(());
    }
    // The sprite spans half a tile each side and from the feet up a tile and a half.
    let hit = people
        .iter()
        .filter(|(t, ..)| {
            let d = world - t.translation.truncate();
            d.x.abs() <= 0.5 * TILE as f32 && (-0.5 * TILE as f32..=TILE as f32).contains(&d.y)
        })
        .max_by(|a, b| a.0.translation.z.total_cmp(&b.0.translation.z));
    if let Some((_, id, action, speech)) = hit {
        // egui's points are logical pixels over its zoom (the UI scale).
        let z = ctx.zoom_factor().max(0.1);
        let at = bevy_egui::egui::pos2((cursor.x + 14.0) / z, (cursor.y + 10.0) / z);
        bevy_egui::egui::Area::new(bevy_egui::egui::Id::new("person tooltip"))
            .fixed_pos(at)
            .order(bevy_egui::egui::Order::Tooltip)
            .interactable(false)
            .show(ctx, |ui| {
                bevy_egui::egui::Frame::popup(ui.style()).show(ui, |ui| {
                    ui.set_min_width(180.0);
                    ui.strong(&id.name);
                    if let Some(a) = action {
                        ui.label(format!("{} {}", a.emoji, a.description));
                    }
                    if let Some(s) = speech {
                        ui.label(format!("\u{201c}{}\u{201d}", s.text));
                    }
                });
            });
    }
    Ok(())
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_selection_ring)
        .add_systems(bevy_egui::EguiPrimaryContextPass, hover_tooltip)
        .add_systems(
            Update,
            (
                keep_icons_readable,
                declutter_labels,
                arrange_speech,
                place_selection_ring,
            )
                .chain()
                .in_set(crate::game::shared::Present::Labels),
        );
}
