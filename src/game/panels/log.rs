//! The town's conversation log (L): every line said, newest at the bottom, filterable by
//! person; each conversation under a heading with its two people and its time.

use crate::agent::conversation::ConversationLog;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};

/// The log window's state.
#[derive(Resource, Default)]
pub struct LogWindow {
    /// Shown.
    pub open: bool,
    /// Only conversations with a person whose name contains this (case-insensitive).
    pub filter: String,
}

/// L opens and closes the log.
pub fn toggle_log(keys: Res<ButtonInput<KeyCode>>, mut w: ResMut<LogWindow>) {
    if keys.just_pressed(KeyCode::KeyL) {
        w.open = !w.open;
    }
}

/// Draws the log.
pub fn log_ui(
    mut contexts: EguiContexts,
    mut w: ResMut<LogWindow>,
    log: Res<ConversationLog>,
) -> Result {
    if !w.open {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let mut open = true;
    let w = &mut *w;
    egui::Window::new("Conversations")
        .id(egui::Id::new("conversation-log"))
        .open(&mut open)
        .default_pos([10.0, 110.0])
        .default_width(420.0)
        .default_height(380.0)
        .show(ctx, |ui| {
            ui.horizontal(|ui| {
                ui.label("person");
                ui.text_edit_singleline(&mut w.filter);
                if !w.filter.is_empty() && ui.button("✖").clicked() {
                    w.filter.clear();
                }
            });
            let needle = w.filter.trim().to_lowercase();
            let lines: Vec<_> = log
                .lines
                .iter()
                .filter(|l| {
                    needle.is_empty()
                        || l.speaker.to_lowercase().contains(&needle)
                        || l.listener.to_lowercase().contains(&needle)
                })
                .collect();
            ui.label(egui::RichText::new(format!("{} lines", lines.len())).small());
            egui::ScrollArea::vertical()
                .stick_to_bottom(true)
                .show(ui, |ui| {
                    let mut last = None;
                    for l in lines {
                        if last != Some(l.conversation) {
                            last = Some(l.conversation);
                            ui.separator();
                            ui.label(
                                egui::RichText::new(format!(
                                    "{} {} — {} and {}",
                                    l.at.date_string(),
                                    l.at.clock_12h(),
                                    l.speaker,
                                    l.listener
                                ))
                                .strong(),
                            );
                        }
                        ui.label(format!("{} {}: {}", l.at.hh_mm(), l.speaker, l.text));
                    }
                });
        });
    if !open {
        w.open = false;
    }
    Ok(())
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<LogWindow>()
        .add_systems(
            Update,
            toggle_log
                .run_if(not(bevy_egui::input::egui_wants_any_keyboard_input))
                .in_set(crate::AppSystems::Input),
        )
        .add_systems(bevy_egui::EguiPrimaryContextPass, log_ui);
}
