//! The headless simulation core: clock, town grid, paths, and the step schedule.
//! All plugins in this module work without rendering: no render, window, tilemap or UI types.

pub mod clock;
pub mod entity_serde;
pub mod hash;
pub mod map;
pub mod objects_state;
pub mod parallel;
pub mod path;
pub mod time;

use bevy::ecs::schedule::{ScheduleLabel, SingleThreadedExecutor};
use bevy::prelude::*;

/// Frame-level ordering in `Update`: input first, then the simulation steps, then what reads
/// their results (drawing, HUD). New sets go into this chain.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppSystems {
    /// Player input becomes messages.
    Input,
    /// LLM replies are delivered and simulation steps run.
    Simulate,
    /// Everything that shows the state.
    Present,
}

/// One simulation step (10 game seconds by default). Run by [`clock::drive_steps`] as many
/// times per frame as the pace asks for.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimStep;

/// The phases of a step, in order.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimSystems {
    /// Apply the LLM answers due at this step (importance, embeddings, reflections, plans).
    Apply,
    /// Take in what is around: new memories.
    Perceive,
    /// Score and embed new memories; reflect when enough has happened.
    Reflect,
    /// Choose what to do (routine now; planning and reacting later).
    Decide,
    /// Turn decisions into walks and object states.
    Act,
    /// Move one tile.
    Move,
    /// Advance the clock.
    Clock,
}

pub(crate) fn plugin(app: &mut App) {
    let mut step = Schedule::new(SimStep);
    // A step is a few microseconds of work: the multi-threaded executor's task spawning would
    // cost more than the systems themselves.
    step.set_executor(SingleThreadedExecutor::new());
    step.configure_sets(
        (
            SimSystems::Apply,
            SimSystems::Perceive,
            SimSystems::Reflect,
            SimSystems::Decide,
            SimSystems::Act,
            SimSystems::Move,
            SimSystems::Clock,
        )
            .chain(),
    );
    step.add_systems(clock::advance_clock.in_set(SimSystems::Clock));
    // Before any system builds its queries, so that they all leave out what is elsewhere.
    app.world_mut()
        .register_disabling_component::<clock::Elsewhere>();
    app.init_resource::<objects_state::ObjectStates>()
        .init_resource::<clock::StepGate>();
    app.add_schedule(step).add_systems(
        Update,
        clock::drive_steps.in_set(crate::sim::AppSystems::Simulate),
    );
}
