//! Keeping and sharing simulations. A simulation is a directory (`saves/<name>/`):
//!
//! - `meta.ron`: format version, the program that wrote it, scenario, map, start, current time
//!   and step, seconds per step, chat model and embedder, sampling seed, the people in order;
//! - `scenario.ron`, `map.ron`, `config.ron`: the town, the people and the settings the run used,
//!   so a save opens on another machine;
//! - `world.ron`: object states, conversations and the town's log, the player's chat, the open
//!   interview, the console and the avatar's route;
//! - `agents/NN-name.ron`: each person's whole state (position, walk, action, outlook, scratch,
//!   plan, spatial memory, memory stream without its vectors, LLM work in flight with the
//!   requests to ask again);
//! - `embeddings.bin`: the memory vectors, keyed by agent and node id, with a checksum;
//! - `movement.jsonl`: per step, what changed for each person (for `simulacra replay`).
//!
//! Text parts are RON a person can read and diff. Writing is atomic ([`disk`]); loading checks
//! the version and every part and names the file and what is wrong. Headless: no render types.

pub mod autosave;
pub mod capture;
pub mod disk;
pub mod entity_ref;
pub mod format;
pub mod movement;
pub mod replay;
pub mod restore;

use crate::config::{GameConfig, SaveSettings};
use crate::play::{SaveDesk, SaveRequest};
use crate::sim::clock::SimClock;
pub use autosave::{AutosaveWriter, autosave, finish_autosave};
use bevy::prelude::*;
pub use capture::capture;
pub use format::*;
use movement::MovementLog;
pub use restore::{LoadOnStart, check_people, check_positions, load_on_start, restore};
use std::path::PathBuf;

/// The settings in effect, the run's config and the name autosaves take.
#[derive(Resource, Debug, Clone)]
pub struct SaveContext {
    /// Settings.
    pub settings: SaveSettings,
    /// The config the run uses (written into saves).
    pub config: GameConfig,
    /// Autosaves are `auto-<base>-<step>`.
    pub base: String,
    /// The scenario file's text as the run read it (saves keep it; the file may since have
    /// changed or, for a loaded save, been removed).
    pub scenario_text: String,
    /// Step of the last autosave (or of the load).
    pub last_autosave: u64,
    /// The last autosave's problem, if it failed (reported once in the console).
    pub last_error: Option<String>,
}

impl SaveContext {
    /// The context of a run.
    pub fn new(config: GameConfig, base: String, scenario_text: String) -> Self {
        Self {
            settings: config.saves.clone(),
            config,
            base,
            scenario_text,
            last_autosave: 0,
            last_error: None,
        }
    }

    /// The saves folder.
    pub fn root(&self) -> PathBuf {
        PathBuf::from(&self.settings.dir)
    }
}

/// The console's save, load, fork and listing ([`crate::play::SaveRequest`], handed over
/// through [`crate::play::SaveDesk`]).
pub fn console_request(world: &mut World, req: SaveRequest) -> Result<String, String> {
    match req {
        SaveRequest::Save(name) => {
            let name = match name {
                Some(n) => {
                    disk::check_user_name(&n)?;
                    n
                }
                None => {
                    let base = world
                        .get_resource::<SaveContext>()
                        .map(|c| c.base.clone())
                        .unwrap_or_else(|| "run".into());
                    format!("{base}-{}", world.resource::<SimClock>().step)
                }
            };
            save_named(world, &name).map(|d| format!("saved {}", d.display()))
        }
        SaveRequest::Load(name) => load_named(world, &name),
        SaveRequest::Fork(from, to) => {
            let root = save_root(world)?;
            disk::fork(&root, &from, &to).map(|d| format!("forked {from} → {}", d.display()))
        }
        SaveRequest::List => Ok(disk::describe(&save_root(world)?)),
    }
}

/// Saves the world as `name` under the saves folder; returns where.
pub fn save_named(world: &mut World, name: &str) -> Result<PathBuf, String> {
    disk::check_name(name)?;
    let root = save_root(world)?;
    let data = capture(world, name)?;
    let dir = root.join(name);
    disk::write_save(&dir, &data)?;
    Ok(dir)
}

/// Loads a save into the running world (its people must be the scenario's).
pub fn load_named(world: &mut World, name: &str) -> Result<String, String> {
    let root = save_root(world)?;
    let scenario = &world.resource::<crate::agent::persona::ScenarioRes>().0;
    let named = disk::read_named(&root, name, Some(&scenario.name))?;
    let (dir, data, notes) = (named.dir.clone(), &named.data, named.notes());
    let scenario = &world.resource::<crate::agent::persona::ScenarioRes>().0;
    let elsewhere = |what: &str| {
        format!(
            "{} was made {what}: start it with `simulacra play --load {name}`",
            dir.display()
        )
    };
    if data.meta.scenario != scenario.name {
        return Err(elsewhere(&format!(
            "with the people of {}, and this game has those of {}",
            data.meta.scenario, scenario.name
        )));
    }
    let map = world.resource::<crate::sim::map::WorldMap>();
    if crate::sim::map::write_ron(map, "the town of this save") != data.map_text {
        return Err(elsewhere(&format!(
            "in another town than this game's ({})",
            map.world
        )));
    }
    let ours = &world.resource::<SaveContext>().config;
    let same = |a: &GameConfig| {
        (
            ron::to_string(&a.sim).ok(),
            ron::to_string(&a.cognition).ok(),
        )
    };
    if same(ours) != same(&data.config) {
        return Err(elsewhere(
            "with other settings (sim or cognition in its config.ron)",
        ));
    }
    restore(world, data, &dir)?;
    Ok(format!(
        "loaded {} ({}, step {}){notes}",
        dir.display(),
        data.meta.now,
        data.meta.step
    ))
}

/// The saves folder of the running game.
pub fn save_root(world: &World) -> Result<PathBuf, String> {
    Ok(world
        .get_resource::<SaveContext>()
        .ok_or("this app cannot save or load (no save settings)")?
        .root())
}

/// The save plugin: movement log, autosave, loading at start.
pub(crate) fn plugin(app: &mut App, context: SaveContext) {
    replay::plugin(app);
    app.init_resource::<MovementLog>()
        .init_resource::<AutosaveWriter>()
        .insert_resource(context)
        .insert_resource(SaveDesk(console_request))
        .add_systems(
            Startup,
            load_on_start.after(crate::cognition::resident::spawn::spawn_people),
        )
        .add_systems(
            crate::sim::SimStep,
            movement::record_movement
                .in_set(crate::sim::SimSystems::Clock)
                .before(crate::sim::clock::advance_clock),
        )
        // At the end of the step whose clock reaches the autosave time (not once per frame,
        // which may run many steps), so the cadence is the same at every speed.
        .add_systems(
            crate::sim::SimStep,
            autosave
                .in_set(crate::sim::SimSystems::Clock)
                .after(crate::sim::clock::advance_clock),
        );
}
