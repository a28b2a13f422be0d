//! Play: what the player does in the town, as commands the simulation runs. The game's console,
//! chat box and panels, `simulacra run --commands` and the tests all go through the same
//! [`ConsoleQueue`] (or, for chat lines, [`talk::player_says`]), so there is one way in.
//! Headless: no render or UI types.
//!
//! - [`command`]: the console's language (parsing, name matching, cleaning player text).
//! - [`talk`]: the avatar's conversations with residents.
//! - [`interview`]: questions to a resident as a chosen persona, answered from its memories.
//! - [`exec`]: running a command against the world (prints, whispers, object edits, history).

pub mod command;
pub mod exec;
pub mod interview;
pub mod talk;

use bevy::prelude::*;
use std::collections::VecDeque;

/// Console lines waiting to run, oldest first.
#[derive(Resource, Debug, Default, Clone)]
pub struct ConsoleQueue(pub VecDeque<String>);

/// What the console asks of the save layer (`save`, `load`, `fork`, `saves`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaveRequest {
    /// Save under a name (none: the game's base name and the step).
    Save(Option<String>),
    /// Load a save by name or path.
    Load(String),
    /// Copy a save under a new name.
    Fork(String, String),
    /// List the saves.
    List,
}

/// Carries out the console's [`SaveRequest`]s: set by the save layer, which this layer does not
/// know; an app without it answers that it cannot save.
#[derive(Resource, Clone, Copy)]
pub struct SaveDesk(pub fn(&mut World, SaveRequest) -> Result<String, String>);

impl ConsoleQueue {
    /// Queues a line.
    pub fn push(&mut self, line: impl Into<String>) {
        self.0.push_back(line.into());
    }
}

/// What one console line was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LineKind {
    /// What was typed.
    Input,
    /// An answer.
    Output,
    /// An error (one line saying what was expected).
    Error,
}

/// Everything the console said, in order (the game shows it, headless runs print it).
#[derive(Resource, Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConsoleLog {
    /// (kind, text) pairs.
    pub lines: Vec<(LineKind, String)>,
}

impl ConsoleLog {
    /// Adds an answer (several lines become several entries).
    pub fn out(&mut self, text: impl AsRef<str>) {
        for l in text.as_ref().lines() {
            self.lines.push((LineKind::Output, l.to_string()));
        }
    }

    /// Adds an error.
    pub fn err(&mut self, text: impl Into<String>) {
        self.lines.push((LineKind::Error, text.into()));
    }
}

/// Runs the queued console lines (every frame, paused or not).
pub fn run_console(world: &mut World) {
    while let Some(line) = world.resource_mut::<ConsoleQueue>().0.pop_front() {
        exec::execute(world, &line);
    }
}

/// Adds play to the headless simulation.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ConsoleQueue>()
        .init_resource::<ConsoleLog>()
        .init_resource::<interview::Interviews>()
        .add_systems(
            Update,
            (
                run_console,
                talk::start_player_talks,
                interview::advance_interviews,
            )
                .chain()
                .after(crate::sim::AppSystems::Input)
                .before(crate::sim::AppSystems::Simulate),
        );
}
