//! The replay's controls in the window (`simulacra replay NAME`): a bar at the bottom with
//! play/pause, a time slider over the whole recording and the speed; the arrows scrub (← → one
//! game minute, with Shift ten, Page Up/Down an hour, Home/End the ends). Space and +/- are
//! the game's own pause and speed keys. What is shown is set by `save::replay`.

use crate::save::replay::Replay;
use crate::sim::clock::{SimClock, SimPace};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};

/// Steps in a game minute at the clock's rate.
fn minute(clock: &SimClock) -> i64 {
    (60 / clock.sec_per_step.max(1)).max(1) as i64
}

/// The arrows, Page Up/Down, Home and End move the replay.
pub fn replay_keys(
    keys: Res<ButtonInput<KeyCode>>,
    clock: Res<SimClock>,
    replay: Option<ResMut<Replay>>,
) {
    let Some(mut replay) = replay else { return };
    let m = minute(&clock);
    let shift = keys.any_pressed([KeyCode::ShiftLeft, KeyCode::ShiftRight]);
    let step = replay.step() as i64;
    let by = |n: i64| step + n;
    let to = if keys.just_pressed(KeyCode::ArrowRight) {
        Some(by(if shift { 10 * m } else { m }))
    } else if keys.just_pressed(KeyCode::ArrowLeft) {
        Some(by(if shift { -10 * m } else { -m }))
    } else if keys.just_pressed(KeyCode::PageDown) {
        Some(by(60 * m))
    } else if keys.just_pressed(KeyCode::PageUp) {
        Some(by(-60 * m))
    } else if keys.just_pressed(KeyCode::Home) {
        Some(replay.first as i64)
    } else if keys.just_pressed(KeyCode::End) {
        Some(replay.last as i64)
    } else {
        None
    };
    if let Some(t) = to {
        replay.seek(t);
    }
}

/// The bar: what is replayed, play/pause, the slider with the time, the speed and the keys.
pub fn replay_ui(
    mut contexts: EguiContexts,
    clock: Res<SimClock>,
    mut pace: ResMut<SimPace>,
    replay: Option<ResMut<Replay>>,
) -> Result {
    let Some(mut replay) = replay else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let width = (ctx.content_rect().width() - 40.0).max(400.0);
    egui::Window::new("replay")
        .title_bar(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_BOTTOM, [0.0, -40.0])
        .fixed_size([width, 24.0])
        .show(ctx, |ui| {
            ui.horizontal(|ui| {
                ui.label(egui::RichText::new(format!("Replay of {}", replay.name)).strong());
                let label = if pace.paused { "▶ play" } else { "⏸ pause" };
                if ui.button(label).clicked() {
                    pace.paused = !pace.paused; // at the end, playing starts again from the start
                }
                let mut step = replay.step();
                let (first, last) = (replay.first, replay.last);
                let width = (ui.available_width() - 330.0).max(120.0);
                ui.spacing_mut().slider_width = width;
                let start = clock.start;
                let sec = clock.sec_per_step as i64;
                let slider = egui::Slider::new(&mut step, first..=last)
                    .show_value(false)
                    .custom_formatter(move |v, _| start.plus_secs(v as i64 * sec).clock_12h());
                if ui.add(slider).changed() {
                    replay.seek(step as i64);
                }
                ui.label(format!(
                    "{} {} · step {} · {}",
                    clock.now.date_string(),
                    clock.now.clock_12h(),
                    clock.step,
                    pace.speed.label()
                ));
            });
        });
    Ok(())
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        replay_keys
            .run_if(not(bevy_egui::input::egui_wants_any_keyboard_input))
            .in_set(crate::AppSystems::Input),
    )
    .add_systems(bevy_egui::EguiPrimaryContextPass, replay_ui);
}
