//! The player's panels: the console (` or /), the chat box of the avatar's conversation (T talks
//! to the nearest resident), the people list (P) and the help overlay (H). Every action goes into
//! the simulation's [`ConsoleQueue`] (or, for chat lines, [`PlayerChat`]) exactly as headless runs
//! and tests send it; nothing here changes the simulation by another way.

use crate::agent::avatar::{Avatar, AvatarRoute};
use crate::agent::conversation::PlayerChat;
use crate::agent::conversation::{Conversation, Talking};
use crate::agent::{CurrentAction, GridPos, Identity, Resident};
use crate::cognition::config::Cognition;
use crate::game::panels::log::LogWindow;
use crate::game::shared::Panels;
use crate::game::shared::Selected;
use crate::play::command::{HELP, clean_text};
use crate::play::{ConsoleLog, ConsoleQueue, LineKind};
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};

/// States offered in the object menu with one click (the paper's examples and a few more); any
/// other state can be typed.
pub const OBJECT_STATES: [&str; 6] = [
    "burning",
    "leaking",
    "broken",
    "out of order",
    "dirty",
    "idle",
];

/// An error in the console (a talk that could not start, a bad command from a script) opens it,
/// so the player sees why nothing happened.
pub fn open_console_on_error(mut panels: ResMut<Panels>, log: Res<ConsoleLog>) {
    let n = log.lines.len();
    if n > panels.seen_lines
        && log.lines[panels.seen_lines.min(n)..]
            .iter()
            .any(|(k, _)| *k == LineKind::Error)
    {
        panels.console = true;
    }
    panels.seen_lines = n;
}

/// Keys that open panels and start a conversation (when no text field has the keyboard).
#[expect(clippy::too_many_arguments, reason = "keys reach several panels")]
pub fn panel_keys(
    keys: Res<ButtonInput<KeyCode>>,
    mut panels: ResMut<Panels>,
    mut queue: ResMut<ConsoleQueue>,
    mut log: ResMut<ConsoleLog>,
    mut route: ResMut<AvatarRoute>,
    cog: Res<Cognition>,
    avatar: Query<(&GridPos, Has<Talking>), With<Avatar>>,
    residents: Query<(&Identity, &GridPos), With<Resident>>,
) {
    if keys.any_just_pressed([KeyCode::Backquote, KeyCode::Slash]) {
        panels.console = !panels.console;
        panels.focus_console = panels.console;
    }
    if keys.just_pressed(KeyCode::KeyH) {
        panels.help = !panels.help;
    }
    if keys.just_pressed(KeyCode::KeyP) {
        panels.people = !panels.people;
    }
    if keys.any_pressed([
        KeyCode::KeyW,
        KeyCode::KeyA,
        KeyCode::KeyS,
        KeyCode::KeyD,
        KeyCode::ArrowUp,
        KeyCode::ArrowDown,
        KeyCode::ArrowLeft,
        KeyCode::ArrowRight,
    ]) {
        route.tiles.clear(); // walking by hand cancels a `goto`
    }
    if keys.just_pressed(KeyCode::KeyT) {
        let Ok((pos, talking)) = avatar.single() else {
            return;
        };
        if talking {
            return;
        }
        let nearest = residents
            .iter()
            .map(|(id, p)| (p.tile.manhattan(pos.tile), id.name.clone()))
            .filter(|(d, _)| *d <= cog.0.talk_max_tiles)
            .min();
        match nearest {
            Some((_, name)) => queue.push(format!("talk {name}")),
            None => {
                panels.console = true;
                log.err(format!(
                    "no one within {} tiles to talk to (`goto <name>` walks up to someone)",
                    cog.0.talk_max_tiles
                ));
            }
        }
    }
}

/// The console window: what was said, and a line to type (Enter runs it).
pub fn console_ui(
    mut contexts: EguiContexts,
    mut panels: ResMut<Panels>,
    mut queue: ResMut<ConsoleQueue>,
    log: Res<ConsoleLog>,
) -> Result {
    if !panels.console {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let mut open = true;
    let p = &mut *panels;
    egui::Window::new("Console")
        .id(egui::Id::new("console"))
        .open(&mut open)
        .pivot(egui::Align2::LEFT_BOTTOM)
        .default_pos([8.0, ctx.content_rect().bottom() - 40.0])
        .default_width(560.0)
        .default_height(260.0)
        .show(ctx, |ui| {
            egui::ScrollArea::vertical()
                .max_height(220.0)
                .stick_to_bottom(true)
                .show(ui, |ui| {
                    let from = log.lines.len().saturating_sub(300);
                    for (kind, text) in &log.lines[from..] {
                        let t = match kind {
                            LineKind::Input => egui::RichText::new(format!("> {text}")).strong(),
                            LineKind::Output => egui::RichText::new(text).monospace(),
                            LineKind::Error => egui::RichText::new(text)
                                .color(egui::Color32::from_rgb(255, 140, 120)),
                        };
                        ui.label(t);
                    }
                    // New answers scroll into view even when the player had scrolled up.
                    if log.lines.len() != p.console_shown {
                        ui.scroll_to_cursor(Some(egui::Align::BOTTOM));
                        p.console_shown = log.lines.len();
                    }
                });
            let edit = ui.add(
                egui::TextEdit::singleline(&mut p.console_input)
                    .desired_width(f32::INFINITY)
                    .hint_text("help, print schedule isabella, whisper …"),
            );
            if p.focus_console {
                edit.request_focus();
                p.focus_console = false;
            }
            if edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                let line = std::mem::take(&mut p.console_input);
                // One line is one command: line breaks pasted in are spaces.
                queue.push(clean_text(&line).0);
                edit.request_focus();
            }
        });
    if !open {
        panels.console = false;
    }
    Ok(())
}

/// Whether a chat box shown since `since` (real seconds) still holds its resident at `now`.
pub fn still_holds(since: f64, now: f64, limit_s: u32) -> bool {
    now - since < limit_s as f64
}

/// While the chat box shows the words of a resident who spoke to the avatar, unanswered, that
/// resident waits for the answer (or Leave), for at most `cognition.player_reply_seconds` real
/// seconds whatever the game's speed: a player reading and typing is not hurried by game time.
/// Not while steps run unwatched (`--skip-steps`, `run N`): nobody reads the box then, and the
/// resident goes on after its game minutes as it would without a window.
pub fn hold_chat(
    time: Res<Time<Real>>,
    pace: Res<crate::sim::clock::SimPace>,
    cog: Res<Cognition>,
    mut chat: ResMut<PlayerChat>,
    avatar: Query<Option<&Talking>, With<Avatar>>,
    mut shown: Local<Option<(Entity, f64)>>,
) {
    let open = avatar.single().ok().flatten().map(|t| t.conversation);
    let now = time.elapsed_secs_f64();
    let hold = match open {
        Some(c) if chat.conversation != Some(c) && pace.requested == 0 => {
            let since = match *shown {
                Some((e, t)) if e == c => t,
                _ => shown.insert((c, now)).1,
            };
            still_holds(since, now, cog.0.player_reply_seconds)
        }
        _ => {
            *shown = None;
            false
        }
    };
    if chat.hold != hold {
        chat.hold = hold;
    }
}

/// The chat box of the avatar's conversation: the lines so far, a line to say, and Leave.
pub fn chat_ui(
    mut contexts: EguiContexts,
    mut panels: ResMut<Panels>,
    mut chat: ResMut<PlayerChat>,
    mut queue: ResMut<ConsoleQueue>,
    avatar: Query<(&Identity, Option<&Talking>), With<Avatar>>,
    convs: Query<&Conversation>,
) -> Result {
    let Ok((me, talking)) = avatar.single() else {
        return Ok(());
    };
    let Some(conv_e) = chat.conversation.or(talking.map(|t| t.conversation)) else {
        return Ok(());
    };
    let Ok(conv) = convs.get(conv_e) else {
        return Ok(());
    };
    if !conv.active() {
        return Ok(());
    }
    let other = conv
        .names
        .iter()
        .find(|n| **n != me.name)
        .cloned()
        .unwrap_or_default();
    let ctx = contexts.ctx_mut()?;
    let joined = chat.conversation == Some(conv_e);
    egui::Window::new(format!("Talking with {other}"))
        .id(egui::Id::new("chat"))
        .pivot(egui::Align2::CENTER_BOTTOM)
        .default_pos([
            ctx.content_rect().center().x,
            ctx.content_rect().bottom() - 48.0,
        ])
        .default_width(520.0)
        .collapsible(false)
        .show(ctx, |ui| {
            egui::ScrollArea::vertical()
                .max_height(200.0)
                .stick_to_bottom(true)
                .show(ui, |ui| {
                    if conv.lines.is_empty() {
                        ui.label(egui::RichText::new(format!("{other} turns to you.")).italics());
                    }
                    for (who, line) in &conv.lines {
                        ui.horizontal_wrapped(|ui| {
                            ui.label(egui::RichText::new(format!("{who}:")).strong());
                            ui.label(line);
                        });
                    }
                    if chat.hold {
                        ui.label(
                            egui::RichText::new(format!(
                                "{other} waits for your answer (or Leave)."
                            ))
                            .italics(),
                        );
                    }
                    if !chat.outbox.is_empty() {
                        ui.label(egui::RichText::new("(you are about to speak …)").italics());
                    } else if conv.next < 2 && conv.names[conv.next] == other {
                        ui.label(egui::RichText::new(format!("{other} is thinking …")).italics());
                    }
                });
            ui.horizontal(|ui| {
                let edit = ui.add(
                    egui::TextEdit::singleline(&mut panels.chat_input)
                        .desired_width(400.0)
                        .hint_text(if joined {
                            "say something (Enter)"
                        } else {
                            "answer (Enter)"
                        }),
                );
                if edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
                    let (text, cut) = clean_text(&std::mem::take(&mut panels.chat_input));
                    if !text.is_empty() {
                        if cut {
                            chat.notice = Some("your line was cut to 300 characters".into());
                        }
                        chat.conversation = Some(conv_e);
                        chat.outbox.push_back(text);
                    }
                    edit.request_focus();
                }
                if ui.button("Leave").clicked() {
                    chat.conversation = Some(conv_e);
                    queue.push("bye");
                }
            });
            if let Some(n) = &chat.notice {
                ui.label(egui::RichText::new(n).color(egui::Color32::from_rgb(255, 140, 120)));
            }
        });
    Ok(())
}

/// The help overlay: keys and console commands.
pub fn help_ui(mut contexts: EguiContexts, mut panels: ResMut<Panels>) -> Result {
    if !panels.help {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let mut open = true;
    egui::Window::new("Help")
        .id(egui::Id::new("help"))
        .open(&mut open)
        .default_pos([300.0, 60.0])
        .default_width(620.0)
        .default_height(520.0)
        .vscroll(true)
        .show(ctx, |ui| {
            ui.heading("Getting started");
            for line in GETTING_STARTED {
                ui.label(format!("• {line}"));
            }
            ui.small("H shows this again; O opens the settings.");
            ui.separator();
            ui.heading("Keys");
            egui::Grid::new("keys").striped(true).show(ui, |ui| {
                for (k, what) in KEYS {
                    ui.label(egui::RichText::new(*k).strong());
                    ui.label(*what);
                    ui.end_row();
                }
            });
            ui.heading("Console commands");
            egui::Grid::new("commands").striped(true).show(ui, |ui| {
                for (c, what) in HELP {
                    ui.label(egui::RichText::new(*c).monospace());
                    ui.label(*what);
                    ui.end_row();
                }
            });
        });
    if !open {
        panels.help = false;
    }
    Ok(())
}

/// The first-start help's lines: what a player can do, in a sentence each.
pub const GETTING_STARTED: &[&str] = &[
    "You are Riley Quinn, a reporter (yellow, outlined). Walk with WASD or the arrows; the town lives on by itself.",
    "Talk: walk up to someone and press T, type a line, Enter. They answer from their memories; Leave ends it.",
    "Whisper an inner voice: open the console (`) and type  whisper isabella You want to run for mayor",
    "Interview: interview klaus as a reporter, then ask What are you working on?  (end to finish).",
    "Edit the world: click an object (a stove, a bed) and pick a state such as burning; people who see it react.",
    "Watch: click a person for their plan and memories; F follows them; the map (M) finds anyone by name.",
];

/// The keys, for the help overlay and the README.
pub const KEYS: &[(&str, &str)] = &[
    ("WASD / arrows", "walk"),
    (
        "T",
        "talk with the nearest resident (then type in the chat box; Leave ends it)",
    ),
    ("` or /", "console"),
    ("P", "people: everyone's action; click a name to inspect"),
    ("L", "the town's conversations, filterable by person"),
    ("H", "this help"),
    (
        "click a person",
        "inspector: plan, memories, places, talks (Esc closes)",
    ),
    (
        "click an object",
        "its state menu: burning, leaking, … or type one",
    ),
    ("Space", "pause"),
    ("+ / -", "speed"),
    (
        "wheel / right-drag",
        "zoom / pan (the view stays on the town)",
    ),
    (
        "F",
        "follow the person selected / back to the avatar / free camera",
    ),
    ("M", "the map: everyone as dots, click to jump, find a name"),
    ("O", "settings: speed, UI scale, labels, live pacing"),
    ("hover a person", "who it is and what they do"),
    ("N", "skip nights on or off"),
    ("F5 / F9", "save now / load the newest save of this game"),
    ("F2", "saves: save under a name, load, fork"),
    ("F12", "screenshot"),
];

/// The people list: each resident's emoji and action; a click selects (the inspector opens) and
/// "log" shows their conversations.
pub fn people_ui(
    mut contexts: EguiContexts,
    mut panels: ResMut<Panels>,
    mut selected: ResMut<Selected>,
    mut log: ResMut<LogWindow>,
    people: Query<(Entity, &Identity, &CurrentAction, Has<Talking>), With<Resident>>,
) -> Result {
    if !panels.people {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    let mut open = true;
    let mut rows: Vec<_> = people.iter().collect();
    rows.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    egui::Window::new(format!("People ({})", rows.len()))
        .id(egui::Id::new("people"))
        .open(&mut open)
        .default_pos([8.0, 110.0])
        .default_width(380.0)
        .default_height(420.0)
        .show(ctx, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| {
                for (e, id, action, talking) in rows {
                    ui.horizontal(|ui| {
                        let name = egui::RichText::new(&id.name).strong();
                        if ui.selectable_label(selected.0 == Some(e), name).clicked() {
                            selected.0 = Some(e);
                        }
                        if ui.small_button("log").clicked() {
                            log.open = true;
                            log.filter = id.name.clone();
                        }
                    });
                    let what = format!(
                        "{} {}{}",
                        action.emoji,
                        action.description,
                        if talking { " (talking)" } else { "" }
                    );
                    ui.label(egui::RichText::new(what).small());
                }
            });
        });
    if !open {
        panels.people = false;
    }
    Ok(())
}

/// A click on an object (no person there) opens its state menu ([`object_ui`]).
pub fn edit_object_on_click(
    buttons: Res<ButtonInput<MouseButton>>,
    map: Res<WorldMap>,
    window: Query<&Window, With<bevy::window::PrimaryWindow>>,
    camera: Query<(&Camera, &GlobalTransform), With<crate::game::shared::WorldCamera>>,
    people: Query<&GridPos, With<Identity>>,
    mut panels: ResMut<Panels>,
) {
    if !buttons.just_pressed(MouseButton::Left) {
        return;
    }
    let (Ok(w), Ok(cam)) = (window.single(), camera.single()) else {
        return;
    };
    let Some(t) = crate::game::shared::cursor_tile(w, cam, &map) else {
        return;
    };
    if map.object_at(t).is_none() || people.iter().any(|p| p.tile.manhattan(t) <= 1) {
        return;
    }
    let address = map.address(t).to_string();
    if address.split(':').count() == 4 {
        panels.object = Some(address);
        panels.object_input.clear();
    }
}

/// The menu of a clicked object: its state now, states to pick with a click, a state to type.
/// Choosing one sends `set <address> <state>` to the console, as typing it would.
pub fn object_ui(
    mut contexts: EguiContexts,
    mut panels: ResMut<Panels>,
    mut queue: ResMut<ConsoleQueue>,
    states: Res<crate::sim::objects_state::ObjectStates>,
) -> Result {
    let Some(address) = panels.object.clone() else {
        return Ok(());
    };
    let ctx = contexts.ctx_mut()?;
    let mut open = true;
    let mut chosen: Option<String> = None;
    let p = &mut *panels;
    let object = address.rsplit(':').next().unwrap_or(&address).to_string();
    egui::Window::new(format!("The {object}"))
        .id(egui::Id::new("object-menu"))
        .open(&mut open)
        .default_pos([ctx.content_rect().center().x - 150.0, 60.0])
        .default_width(300.0)
        .collapsible(false)
        .show(ctx, |ui| {
            ui.label(egui::RichText::new(&address).small());
            match states.get(&address) {
                Some(s) => ui.label(format!(
                    "is {} (set by {})",
                    s.state,
                    s.by.as_deref().unwrap_or("you")
                )),
                None => ui.label("is idle"),
            };
            ui.separator();
            ui.horizontal_wrapped(|ui| {
                for s in OBJECT_STATES {
                    if ui.button(s).clicked() {
                        chosen = Some(s.to_string());
                    }
                }
            });
            ui.horizontal(|ui| {
                let edit = ui.add(
                    egui::TextEdit::singleline(&mut p.object_input)
                        .desired_width(200.0)
                        .hint_text("another state…"),
                );
                let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                if (ui.button("Set").clicked() || enter) && !p.object_input.trim().is_empty() {
                    chosen = Some(std::mem::take(&mut p.object_input));
                }
            });
        });
    if let Some(state) = chosen {
        queue.push(format!("set <{address}> {}", clean_text(&state).0));
        p.console = true; // the answer (or the error) shows there
        open = false;
    }
    if !open {
        p.object = None;
    }
    Ok(())
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        (
            panel_keys.run_if(not(bevy_egui::input::egui_wants_any_keyboard_input)),
            edit_object_on_click.run_if(not(bevy_egui::input::egui_wants_any_pointer_input)),
            open_console_on_error,
            hold_chat,
        )
            .in_set(crate::AppSystems::Input),
    )
    .add_systems(
        bevy_egui::EguiPrimaryContextPass,
        (console_ui, chat_ui, help_ui, people_ui, object_ui),
    );
}

#[cfg(test)]
mod tests {
    use super::still_holds;

    #[test]
    fn a_chat_box_holds_its_resident_for_the_configured_real_seconds() {
        assert!(still_holds(10.0, 10.0, 180));
        assert!(still_holds(10.0, 189.9, 180));
        assert!(!still_holds(10.0, 190.0, 180));
        assert!(!still_holds(0.0, 0.0, 0), "0 holds nobody");
    }
}
