//! Finding your way: a minimap of the whole town (buildings, residents as dots, the view as a
//! frame; a click or drag jumps the view there) with a box to find a person by name (the camera
//! then follows them). M shows or hides it.

use crate::agent::avatar::Avatar;
use crate::agent::{GridPos, Identity};
use crate::game::shared::CameraMode;
use crate::game::shared::SelectByName;
use crate::game::shared::Selected;
use crate::game::shared::WorldCamera;
use crate::game::shared::tile_to_world;
use crate::sim::map::{Tile, WorldMap};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};

/// The minimap's state.
#[derive(Resource)]
pub struct Minimap {
    /// Shown.
    pub open: bool,
    /// The name typed in the find box.
    pub find: String,
    /// What the last search said (no one, several).
    pub note: String,
}

impl Default for Minimap {
    fn default() -> Self {
        Self {
            open: true,
            find: String::new(),
            note: String::new(),
        }
    }
}

/// Width of the map in points.
const MAP_W: f32 = 230.0;

/// M shows or hides the minimap (when no text field has the keyboard).
pub fn toggle_minimap(keys: Res<ButtonInput<KeyCode>>, mut map: ResMut<Minimap>) {
    if keys.just_pressed(KeyCode::KeyM) {
        map.open = !map.open;
    }
}

/// The tile at a fraction (0..1, 0..1 from the top left) of the town.
pub fn tile_at_fraction(map: &WorldMap, f: Vec2) -> Tile {
    Tile::new(
        ((f.x.clamp(0.0, 1.0) * map.width as f32) as i32).min(map.width - 1),
        ((f.y.clamp(0.0, 1.0) * map.height as f32) as i32).min(map.height - 1),
    )
}

/// The minimap window.
#[expect(
    clippy::too_many_arguments,
    reason = "the map shows the town, people and the view"
)]
pub fn minimap_ui(
    mut contexts: EguiContexts,
    mut state: ResMut<Minimap>,
    map: Res<WorldMap>,
    people: Query<(Entity, &Identity, &GridPos, Has<Avatar>)>,
    selected: Res<Selected>,
    mut mode: ResMut<CameraMode>,
    mut camera: Query<(&Camera, &Projection, &mut Transform), With<WorldCamera>>,
    mut commands: Commands,
) -> Result {
    if !state.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let mut jump: Option<Tile> = None;
    let mut find: Option<String> = None;
    let mut open = state.open;
    egui::Window::new("Map")
        .id(egui::Id::new("minimap"))
        .open(&mut open)
        .resizable(false)
        .max_width(MAP_W + 12.0)
        .collapsible(true)
        .anchor(egui::Align2::RIGHT_BOTTOM, egui::vec2(-8.0, -8.0))
        .show(ctx, |ui| {
            let h = MAP_W * map.height as f32 / map.width.max(1) as f32;
            let (response, painter) =
                ui.allocate_painter(egui::vec2(MAP_W, h), egui::Sense::click_and_drag());
            let r = response.rect;
            let to_screen = |t: Tile| {
                egui::pos2(
                    r.left() + (t.x as f32 + 0.5) / map.width as f32 * r.width(),
                    r.top() + (t.y as f32 + 0.5) / map.height as f32 * r.height(),
                )
            };
            painter.rect_filled(r, 2.0, egui::Color32::from_rgb(88, 140, 74));
            for s in &map.sectors {
                let a = to_screen(Tile::new(s.rect.x, s.rect.y));
                let b = to_screen(Tile::new(s.rect.x + s.rect.w - 1, s.rect.y + s.rect.h - 1));
                let cell =
                    egui::vec2(r.width() / map.width as f32, r.height() / map.height as f32) / 2.0;
                painter.rect_filled(
                    egui::Rect::from_min_max(a - cell, b + cell),
                    1.0,
                    egui::Color32::from_rgb(176, 140, 104),
                );
            }
            // The view's frame.
            if let Ok((cam, proj, tf)) = camera.single()
                && let (Some(size), Projection::Orthographic(o)) =
                    (cam.logical_viewport_size(), proj)
            {
                let half = size * o.scale / 2.0;
                let tile = crate::game::shared::TILE as f32;
                let px = |w: Vec2| {
                    egui::pos2(
                        r.left() + (w.x / tile + 0.5) / map.width as f32 * r.width(),
                        r.top()
                            + (map.height as f32 - 0.5 - w.y / tile) / map.height as f32
                                * r.height(),
                    )
                };
                let c = tf.translation.truncate();
                let frame = egui::Rect::from_two_pos(px(c - half), px(c + half)).intersect(r);
                painter.rect_stroke(
                    frame,
                    0.0,
                    egui::Stroke::new(1.5, egui::Color32::WHITE),
                    egui::StrokeKind::Inside,
                );
            }
            for (e, _, pos, avatar) in &people {
                let (radius, colour) = if avatar {
                    (3.5, egui::Color32::from_rgb(255, 220, 40))
                } else if selected.0 == Some(e) {
                    (3.5, egui::Color32::from_rgb(230, 60, 60))
                } else {
                    (2.2, egui::Color32::from_rgb(245, 245, 250))
                };
                painter.circle(
                    to_screen(pos.tile),
                    radius,
                    colour,
                    egui::Stroke::new(0.8, egui::Color32::from_black_alpha(160)),
                );
            }
            if (response.clicked() || response.dragged())
                && let Some(p) = response.interact_pointer_pos()
            {
                let f = (p - r.min) / r.size();
                jump = Some(tile_at_fraction(&map, Vec2::new(f.x, f.y)));
            }
            ui.horizontal(|ui| {
                ui.label("Find");
                let edit = ui.add(
                    egui::TextEdit::singleline(&mut state.find)
                        .hint_text("a name, Enter")
                        .desired_width(MAP_W - 60.0),
                );
                if edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                    find = Some(state.find.trim().to_string());
                }
            });
            if !state.note.is_empty() {
                ui.small(&state.note);
            }
        });
    state.open = open;
    if let Some(t) = jump
        && let Ok((_, _, mut tf)) = camera.single_mut()
    {
        let w = tile_to_world(&map, t);
        tf.translation.x = w.x;
        tf.translation.y = w.y;
        mode.follow = false;
    }
    if let Some(query) = find.filter(|q| !q.is_empty()) {
        let names: Vec<String> = people
            .iter()
            .filter(|p| !p.3)
            .map(|p| p.1.name.clone())
            .collect();
        match crate::play::command::resolve_name(&query, &names) {
            Ok(name) => {
                state.note = format!("Following {name} (F: back to you)");
                commands.insert_resource(SelectByName(name.to_string()));
                mode.follow = true;
            }
            Err(e) => state.note = e,
        }
    }
    Ok(())
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Minimap>()
        .add_systems(
            Update,
            toggle_minimap
                .run_if(not(bevy_egui::input::egui_wants_any_keyboard_input))
                .in_set(crate::AppSystems::Input),
        )
        .add_systems(bevy_egui::EguiPrimaryContextPass, minimap_ui);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fraction_of_the_map_is_a_tile_inside_it() {
        let map = crate::sim::map::load_map(std::path::Path::new("maps/smallville.ron"))
            .expect("the bundled town");
        assert_eq!(tile_at_fraction(&map, Vec2::ZERO), Tile::new(0, 0));
        assert_eq!(
            tile_at_fraction(&map, Vec2::ONE),
            Tile::new(map.width - 1, map.height - 1)
        );
        let mid = tile_at_fraction(&map, Vec2::splat(0.5));
        assert_eq!((mid.x, mid.y), (map.width / 2, map.height / 2));
    }
}
