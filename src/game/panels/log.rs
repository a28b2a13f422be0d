//! The town's conversation log (L): every line said, newest at the bottom, filterable by
//! person; each conversation under a heading with its two people and its time. Also the
//! inspector's Talks tab: one person's conversations and what it knows of each partner.

use crate::agent::conversation::{ConversationLog, LoggedLine};
use crate::cognition::resident::scratch::Scratch;
use crate::game::shared::short_time;
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

/// One conversation of a person, as the inspector lists it.
struct Talk<'a> {
    with: &'a str,
    lines: Vec<&'a LoggedLine>,
}

/// The conversations `name` took part in, in the order they began: lines grouped by conversation
/// (a conversation's entity may be reused later, so a new partner or an hour's gap starts a new
/// one).
fn talks_of<'a>(name: &str, log: &'a ConversationLog) -> Vec<Talk<'a>> {
    let mut talks: Vec<Talk> = Vec::new();
    let mut open: Vec<(Entity, usize)> = Vec::new();
    for l in &log.lines {
        let with = if l.speaker == name {
            &l.listener
        } else if l.listener == name {
            &l.speaker
        } else {
            continue;
        };
        let current = open
            .iter()
            .find(|(e, _)| *e == l.conversation)
            .map(|(_, i)| *i);
        let same = current.filter(|&i| {
            let t = &talks[i];
            t.with == with.as_str()
                && t.lines
                    .last()
                    .is_some_and(|last| l.at.0 - last.at.0 <= 3600)
        });
        match same {
            Some(i) => talks[i].lines.push(l),
            None => {
                open.retain(|(e, _)| *e != l.conversation);
                open.push((l.conversation, talks.len()));
                talks.push(Talk {
                    with,
                    lines: vec![l],
                });
            }
        }
    }
    talks
}

/// The inspector's Talks tab: what `name` knows of each partner, then its conversations.
pub(super) fn talks_tab(
    ui: &mut egui::Ui,
    name: &str,
    log: &ConversationLog,
    scratch: Option<&Scratch>,
) {
    let talks = talks_of(name, log);
    // What this resident knows of each person it talked with (the model's note of their last
    // talk, which their next talk reads).
    if let Some(s) = scratch.filter(|s| !s.acquaintances.is_empty()) {
        egui::CollapsingHeader::new(match s.acquaintances.len() {
            1 => "Knows of 1 person".to_string(),
            n => format!("Knows of {n} people"),
        })
        .id_salt("acquaintances")
        .show(ui, |ui| {
            for (who, note) in &s.acquaintances {
                ui.add(egui::Label::new(format!("{who}: {note}")).wrap());
            }
        });
    }
    if talks.is_empty() {
        ui.label("No conversations yet.");
        return;
    }
    ui.label(
        egui::RichText::new(match talks.len() {
            1 => "1 conversation".to_string(),
            n => format!("{n} conversations, newest first"),
        })
        .small(),
    );
    egui::ScrollArea::vertical()
        .id_salt("talks")
        .show(ui, |ui| {
            for (i, t) in talks.iter().enumerate().rev() {
                let first = t.lines[0].at;
                let n = t.lines.len();
                let head = format!(
                    "{} with {} ({n} line{})",
                    short_time(first),
                    t.with,
                    if n == 1 { "" } else { "s" }
                );
                egui::CollapsingHeader::new(head)
                    .id_salt(("talk", i))
                    .default_open(i + 1 == talks.len())
                    .show(ui, |ui| {
                        for l in &t.lines {
                            ui.label(format!("{} {}: {}", l.at.hh_mm(), l.speaker, l.text));
                        }
                    });
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::time::GameTime;

    fn line(conv: Entity, at: i64, speaker: &str, listener: &str) -> LoggedLine {
        LoggedLine {
            at: GameTime(at),
            conversation: conv,
            speaker: speaker.into(),
            listener: listener.into(),
            text: format!("{speaker} at {at}"),
            topic: None,
            fallback: None,
            carried: None,
        }
    }

    #[test]
    fn a_persons_talks_are_grouped_by_conversation_even_when_interleaved_or_reused() {
        let mut world = World::new();
        let (c1, c2) = (world.spawn_empty().id(), world.spawn_empty().id());
        let log = ConversationLog::new(
            vec![
                line(c1, 0, "Isabella", "Klaus"),
                line(c2, 5, "Maria", "Sam"),
                line(c1, 10, "Klaus", "Isabella"),
                line(c2, 20, "Isabella", "Maria"), // c2 reused for Isabella and Maria
                line(c1, 9000, "Isabella", "Klaus"), // c1 reused hours later
            ],
            0,
        );
        let talks = talks_of("Isabella", &log);
        let summary: Vec<(&str, usize)> = talks.iter().map(|t| (t.with, t.lines.len())).collect();
        assert_eq!(summary, vec![("Klaus", 2), ("Maria", 1), ("Klaus", 1)]);
        assert!(talks_of("Nobody", &log).is_empty());
    }
}
