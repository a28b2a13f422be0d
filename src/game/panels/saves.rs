//! Saving and loading from the window: F5 saves at once, F9 loads the newest save of this game,
//! F2 opens the saves menu (save under a name, load, fork, the list with each save's time and
//! step). Every action is a console line (`save`, `load`, `fork`) in the simulation's
//! [`ConsoleQueue`], as headless runs send them; the answer shows in the console.

use crate::game::shared::Panels;
use crate::play::ConsoleQueue;
use crate::save::SaveContext;
use crate::save::disk::{SaveEntry, list};
use crate::save::replay::Replay;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};

/// The menu's state.
#[derive(Resource, Default)]
pub struct SavesMenu {
    /// Shown.
    pub open: bool,
    /// The saves, read when the menu opens or after an action.
    pub entries: Vec<SaveEntry>,
    /// The name typed for a new save.
    pub name: String,
    /// The save chosen for a fork, and the new name typed.
    pub fork: Option<(String, String)>,
    /// Re-read the list at the next frame.
    pub stale: bool,
}

/// F5, F9 and F2 (not in a replay, which cannot change).
pub fn save_keys(
    keys: Res<ButtonInput<KeyCode>>,
    replay: Option<Res<Replay>>,
    mut queue: ResMut<ConsoleQueue>,
    mut menu: ResMut<SavesMenu>,
) {
    if replay.is_some() {
        return;
    }
    if keys.just_pressed(KeyCode::F5) {
        queue.push("save");
        menu.stale = true;
    }
    if keys.just_pressed(KeyCode::F9) {
        queue.push("load latest");
    }
    if keys.just_pressed(KeyCode::F2) {
        menu.open = !menu.open;
        menu.stale = true;
    }
}

/// The saves menu.
pub fn saves_ui(
    mut contexts: EguiContexts,
    mut menu: ResMut<SavesMenu>,
    mut panels: ResMut<Panels>,
    mut queue: ResMut<ConsoleQueue>,
    ctx_save: Option<Res<SaveContext>>,
    scenario: Res<crate::agent::persona::ScenarioRes>,
) -> Result {
    if !menu.open {
        return Ok(());
    }
    let Some(save) = ctx_save else {
        return Ok(());
    };
    if menu.stale && queue.0.is_empty() {
        menu.entries = list(&save.root());
        menu.stale = false;
    }
    let ctx = contexts.ctx_mut()?;
    let mut open = true;
    let mut command: Option<String> = None;
    egui::Window::new("Saves")
        .id(egui::Id::new("saves"))
        .open(&mut open)
        .default_pos([300.0, 110.0])
        .default_width(520.0)
        .show(ctx, |ui| {
            ui.label(format!(
                "In {}; autosave every {} game minutes, the last {} kept.",
                save.root().display(),
                save.settings.autosave_minutes,
                save.settings.autosave_keep
            ));
            if let Some(e) = &save.last_error {
                ui.colored_label(
                    egui::Color32::LIGHT_RED,
                    format!("last autosave failed: {e}"),
                );
            }
            ui.horizontal(|ui| {
                ui.label("name");
                ui.add(
                    egui::TextEdit::singleline(&mut menu.name)
                        .hint_text("one word, e.g. before-party"),
                );
                let one_word = !menu.name.trim().contains(char::is_whitespace);
                if !one_word {
                    ui.colored_label(egui::Color32::LIGHT_RED, "one word, no spaces");
                }
                if ui
                    .add_enabled(one_word, egui::Button::new("Save"))
                    .clicked()
                {
                    let name = menu.name.trim().to_string();
                    command = Some(if name.is_empty() {
                        "save".into()
                    } else {
                        format!("save {name}")
                    });
                }
            });
            ui.separator();
            egui::ScrollArea::vertical()
                .max_height(320.0)
                .show(ui, |ui| {
                    if menu.entries.is_empty() {
                        ui.label("No saves yet.");
                    }
                    let mut fork = None;
                    for e in menu.entries.iter().rev() {
                        let name = e
                            .dir
                            .file_name()
                            .unwrap_or_default()
                            .to_string_lossy()
                            .to_string();
                        ui.horizontal(|ui| {
                            ui.label(egui::RichText::new(&name).strong());
                            ui.label(
                                egui::RichText::new(format!(
                                    "{} · {} · step {}",
                                    e.meta.scenario, e.meta.now, e.meta.step
                                ))
                                .small(),
                            );
                        });
                        ui.horizontal(|ui| {
                            let here = e.meta.scenario == scenario.0.name;
                            let load = ui
                                .add_enabled(here, egui::Button::new("load").small())
                                .on_disabled_hover_text(format!(
                                    "another town: start it with `simulacra play --load {name}`"
                                ));
                            if load.clicked() {
                                command = Some(format!("load {name}"));
                            }
                            if ui.small_button("fork…").clicked() {
                                fork = Some((name.clone(), format!("{name}-fork")));
                            }
                        });
                    }
                    if fork.is_some() {
                        menu.fork = fork;
                    }
                });
            let mut fork_cmd = None;
            let mut cancel = false;
            if let Some((from, to)) = &mut menu.fork {
                ui.separator();
                ui.horizontal(|ui| {
                    ui.label(format!("fork {from} as"));
                    ui.text_edit_singleline(to);
                    if ui.button("Fork").clicked() {
                        fork_cmd = Some(format!("fork {from} {}", to.trim()));
                    }
                    if ui.button("Cancel").clicked() {
                        cancel = true;
                    }
                });
            }
            if fork_cmd.is_some() || cancel {
                menu.fork = None;
            }
            if fork_cmd.is_some() {
                command = fork_cmd;
            }
        });
    if let Some(c) = command {
        queue.push(c);
        panels.console = true; // the answer (saved, loaded, or why not) shows there
        menu.stale = true;
    }
    if !open {
        menu.open = false;
    }
    Ok(())
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<SavesMenu>()
        // Function keys type no text: they work while a text field has the keyboard.
        .add_systems(Update, save_keys.in_set(crate::AppSystems::Input))
        .add_systems(bevy_egui::EguiPrimaryContextPass, saves_ui);
}
