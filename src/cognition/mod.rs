//! Cognition: the systems that fill and read memory and decide what to do. Residents are
//! spawned from the scenario ([`spawn`]) with a short-term [`scratch`]. Each step an agent
//! perceives what is around it ([`perceive`]); new memories get an importance and an embedding
//! ([`remember`]); when enough has happened it reflects ([`reflect`]). Each day it plans
//! ([`plan`]) and refines the next hours into subtasks ([`decompose`]), chooses where each
//! activity happens ([`place`]) and what it looks like there ([`details`]), carries the plan out
//! ([`act`]), reacts to people it meets ([`react`]) and to objects in an unusual state
//! ([`react_object`]), talks with people ([`converse`]: each line about a topic from
//! [`topics`], checked by [`guard`] and heard by the listener in [`lines`]; invitations and
//! commitments in [`invite`]) and re-plans after a whisper ([`replan`]). Every LLM request is recorded on the agent ([`pending`]) and its answer applied
//! in a later step by the matching `apply_*` system; nothing here waits for a model. Prompts are
//! templates with helpers to fill them ([`prompts`]); settings are in [`config`]; a history file
//! is loaded by [`history`]. The order of all these systems within a step is in [`sets`].
//! Headless: no render types.
//!
//! To follow one decision from perception to the tile an agent walks to, read `perceive`,
//! `react`, `plan`, `decompose`, `place`, `details` and `act` in that order (then
//! `agent::plan_walks`).

pub mod act;
pub mod config;
pub mod converse;
pub mod decompose;
pub mod details;
pub mod guard;
pub mod history;
pub mod hours;
pub mod invite;
pub mod lines;
pub mod pending;
pub mod perceive;
pub mod place;
pub mod plan;
pub mod prompts;
pub mod quiet;
pub mod react;
pub mod react_object;
pub mod reflect;
pub mod remember;
pub mod replan;
pub mod scratch;
pub mod sets;
pub mod spawn;
pub mod talk_report;
pub mod topics;

use bevy::prelude::*;
use config::{CognitionConfig, Pacing};
pub use sets::DecideSystems;

/// The cognition settings in force.
#[derive(Resource, Debug, Clone, Default)]
pub struct Cognition(pub CognitionConfig);

impl Cognition {
    /// Whether answers apply at once (real-time pacing).
    pub fn real_time(&self) -> bool {
        self.0.pacing == Pacing::RealTime
    }
}

fn blocked_by(world: &mut World, step: u64, awaited: &mut crate::sim::clock::Awaited) -> usize {
    if world.resource::<Cognition>().real_time() {
        return 0;
    }
    pending::blocking_answers(world, step, awaited)
}

/// Adds cognition to the headless simulation.
pub(crate) fn plugin(
    app: &mut App,
    cfg: CognitionConfig,
    prompts: prompts::Prompts,
    rules: place::PlaceRules,
) {
    app.insert_resource(rules);
    app.insert_resource(Cognition(cfg))
        .insert_resource(prompts)
        .insert_resource(crate::sim::clock::StepGate {
            blocked_by: Some(blocked_by),
            pump: Some(pending::pump_noting),
            send: Some(|world| world.resource_mut::<crate::llm::Llm>().flush()),
            ..default()
        });
    app.add_systems(
        PreUpdate,
        pending::route_replies.after(crate::llm::deliver_llm_replies),
    );
    scratch::plugin(app);
    spawn::plugin(app);
    remember::plugin(app);
    invite::plugin(app);
    // Every system of the step, in order.
    sets::plugin(app);
}
