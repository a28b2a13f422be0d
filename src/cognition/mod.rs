//! Cognition: the systems that fill and read memory and decide what to do. Each step an agent
//! perceives what is around it ([`perceive`]); new memories get an importance and an embedding
//! ([`remember`]); when enough has happened it reflects ([`reflect`]). Each day it plans
//! ([`plan`]), chooses where each activity happens ([`place`]), carries the plan out ([`act`]),
//! reacts to people it meets ([`react`]) and talks with them ([`converse`]). Every LLM request is
//! recorded on the agent ([`pending`]) and its answer applied in a later step by the matching
//! `apply_*` system; nothing here waits for a model. Headless: no render types.
//!
//! To follow one decision from perception to the tile an agent walks to, read `perceive`,
//! `react`, `plan`, `place` and `act` in that order (then `agent::plan_walks`).

pub mod act;
pub mod config;
pub mod converse;
pub mod history;
pub mod pending;
pub mod perceive;
pub mod place;
pub mod plan;
pub mod prompts;
pub mod react;
pub mod react_object;
pub mod reflect;
pub mod remember;
pub mod replan;

use bevy::prelude::*;
use config::{CognitionConfig, Pacing};

/// The cognition settings in force.
#[derive(Resource, Debug, Clone, Default)]
pub struct Cognition(pub CognitionConfig);

impl Cognition {
    /// Whether answers apply at once (real-time pacing).
    pub fn real_time(&self) -> bool {
        self.0.pacing == Pacing::RealTime
    }
}

fn blocked_by(world: &mut World, step: u64) -> usize {
    if world.resource::<Cognition>().real_time() {
        return 0;
    }
    pending::blocking_answers(world, step)
}

/// The parts of deciding, in order within [`SimSystems::Decide`](crate::sim::SimSystems).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecideSystems {
    /// New days and subtasks.
    Plan,
    /// Places and details of the next activities.
    Place,
    /// The current action from the plan.
    Follow,
    /// Reactions to people seen.
    React,
    /// Conversations.
    Converse,
}

/// Adds cognition to the headless simulation.
pub(crate) fn plugin(
    app: &mut App,
    cfg: CognitionConfig,
    prompts: prompts::Prompts,
    rules: place::PlaceRules,
) {
    app.configure_sets(
        crate::sim::SimStep,
        (
            DecideSystems::Plan,
            DecideSystems::Place,
            DecideSystems::Follow,
            DecideSystems::React,
            DecideSystems::Converse,
        )
            .chain()
            .in_set(crate::sim::SimSystems::Decide),
    );
    app.insert_resource(rules);
    app.insert_resource(Cognition(cfg))
        .insert_resource(prompts)
        .insert_resource(crate::sim::clock::StepGate {
            blocked_by: Some(blocked_by),
            pump: Some(pending::pump_replies),
            ..default()
        });
    app.add_systems(
        PreUpdate,
        pending::route_replies.after(crate::llm::deliver_llm_replies),
    );
    remember::plugin(app);
    perceive::plugin(app);
    reflect::plugin(app);
    plan::plugin(app);
    place::plugin(app);
    act::plugin(app);
    react::plugin(app);
    react_object::plugin(app);
    replan::plugin(app);
    converse::plugin(app);
}
