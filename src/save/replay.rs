//! Replaying a save without the model (`simulacra replay NAME`): the simulation is loaded as
//! saved but no step runs ([`Frozen`]); instead the movement log sets where each person stands,
//! what they do and say, and which objects are in use, at the replay's position. The position
//! moves with the game's own pace controls (pause, speed) and can be set anywhere (scrubbing).
//! Headless: the window adds keys and a time slider (`game::panels::replay_bar`).

use super::movement::{MovementLog, Scene};
use crate::agent::conversation::Speech;
use crate::agent::{CurrentAction, Facing, GridPos, Identity};
use crate::sim::clock::{Frozen, SimClock, SimPace, Speed};
use crate::sim::map::Tile;
use crate::sim::objects_state::{ObjectState, ObjectStates};
use crate::sim::time::GameTime;
use bevy::prelude::*;

/// A replay in progress.
#[derive(Resource, Debug, Clone)]
pub struct Replay {
    /// The save being replayed.
    pub name: String,
    /// Its movement log.
    pub log: MovementLog,
    /// The first and last recorded steps.
    pub first: u64,
    /// The last recorded step.
    pub last: u64,
    /// Where the replay is, in steps (the fraction draws motion between tiles).
    pub position: f64,
    /// The step whose scene is shown, and that scene.
    shown: Option<(u64, Scene)>,
}

impl Replay {
    /// A replay of a log up to `end` (the step the save was made at) from `from` (clamped to
    /// what was recorded); `None` when the log is empty (a save made before any step ran).
    /// Position `p` shows the town as it was when the clock read step `p`: after the steps
    /// before it.
    pub fn new(name: &str, log: MovementLog, from: u64, end: u64) -> Option<Self> {
        let (first, last) = log.span()?;
        let (first, last) = (first.saturating_add(1), end.max(last.saturating_add(1)));
        Some(Self {
            name: name.to_string(),
            log,
            first,
            last,
            position: from.clamp(first, last) as f64,
            shown: None,
        })
    }

    /// The step shown.
    pub fn step(&self) -> u64 {
        self.position.floor() as u64
    }

    /// Moves to a step (clamped to the recording).
    pub fn seek(&mut self, step: i64) {
        self.position = step.clamp(self.first as i64, self.last as i64) as f64;
    }

    /// The scene when the clock read `step` (the frames of the steps before it), folding
    /// forward from the one shown when that is earlier.
    fn scene_for(&self, step: u64) -> Scene {
        match &self.shown {
            Some((at, scene)) if *at <= step => {
                let mut scene = scene.clone();
                for f in self
                    .log
                    .frames
                    .iter()
                    .skip_while(|f| f.step < *at)
                    .take_while(|f| f.step < step)
                {
                    scene.apply(f);
                }
                scene
            }
            _ => self.log.scene_at(step.saturating_sub(1)),
        }
    }
}

/// Steps the replay's position with the pace (paused, 1×, 2×, …; max is 256×).
pub fn advance_replay(
    time: Res<Time<Real>>,
    mut replay: ResMut<Replay>,
    mut pace: ResMut<SimPace>,
) {
    if pace.paused {
        pace.progress = 1.0;
        return;
    }
    let times = match pace.speed {
        Speed::Times(n) => n as f64,
        Speed::Max => 256.0,
    };
    if replay.position >= replay.last as f64 {
        // Played again after it ended: from the start.
        replay.position = replay.first as f64;
    }
    let dt = time.delta_secs_f64().min(0.25);
    let next = replay.position + dt * pace.steps_per_second_at_1x as f64 * times;
    if next >= replay.last as f64 {
        replay.position = replay.last as f64;
        pace.paused = true; // the end: stop there
    } else {
        replay.position = next;
    }
    pace.progress = replay.position.fract() as f32;
}

/// Shows the scene of the replay's step: people's tiles, actions and lines, object states, the
/// clock. Runs only when the step changes.
pub fn show_replay_step(
    mut replay: ResMut<Replay>,
    mut clock: ResMut<SimClock>,
    mut objects: ResMut<ObjectStates>,
    mut people: Query<(
        Entity,
        &Identity,
        &mut GridPos,
        &mut CurrentAction,
        Option<&mut Facing>,
        Option<&Speech>,
    )>,
    mut commands: Commands,
) {
    let step = replay.step();
    let before = replay.shown.as_ref().map(|s| s.0);
    if before == Some(step) {
        return;
    }
    let scene = replay.scene_for(step);
    // One step forward walks; anything else (a seek) jumps.
    let walked = before.is_some_and(|b| b + 1 == step);
    clock.step = step;
    clock.now = clock
        .start
        .plus_secs((step as i64).saturating_mul(clock.sec_per_step as i64));
    for (e, id, mut pos, mut action, facing, speech) in &mut people {
        let Some(look) = scene.people.get(&id.name) else {
            continue;
        };
        let tile = Tile::new(look.tile.0, look.tile.1);
        if pos.tile != tile || !walked {
            let prev = if walked { pos.tile } else { tile };
            if let Some(mut f) = facing
                && tile.x != prev.x
            {
                f.0 = (tile.x - prev.x).signum();
            }
            *pos = GridPos { tile, prev };
        }
        if action.description != look.action
            || action.emoji != look.emoji
            || action.address != look.at
        {
            action.description.clone_from(&look.action);
            action.emoji.clone_from(&look.emoji);
            action.address.clone_from(&look.at);
        }
        match (look.say.is_empty(), speech) {
            (true, Some(_)) => {
                commands.entity(e).remove::<Speech>();
            }
            (false, s) if s.is_none_or(|s| s.text != look.say) => {
                commands.entity(e).insert(Speech {
                    text: look.say.clone(),
                    until: GameTime(i64::MAX),
                });
            }
            _ => {}
        }
    }
    objects.states = scene
        .objects
        .iter()
        .map(|(at, state)| {
            (
                at.clone(),
                ObjectState {
                    state: state.clone(),
                    by: Some("replay".into()),
                    since: clock.now,
                },
            )
        })
        .collect();
    replay.shown = Some((step, scene));
}

/// Starts a replay in an app whose simulation was loaded from the save (`SimPlugin::from_save`):
/// steps stop, the movement log drives what is shown.
pub fn start(app: &mut App, replay: Replay) {
    app.insert_resource(Frozen).insert_resource(replay);
    app.world_mut().resource_mut::<SimPace>().requested = 0;
}

/// The replay systems (they run only while a [`Replay`] is present).
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        Update,
        (advance_replay, show_replay_step)
            .chain()
            .in_set(crate::sim::AppSystems::Simulate)
            .run_if(resource_exists::<Replay>),
    );
}
