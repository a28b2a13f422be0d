//! Cognition: the systems that fill and read memory. Each step an agent perceives what is
//! around it ([`perceive`]); new memories get an importance and an embedding from the LLM
//! ([`remember`]); when enough has happened it reflects ([`reflect`]). Every LLM request is
//! recorded on the agent ([`pending`]) and its answer applied in a later step by the matching
//! `apply_*` system; nothing here waits for a model. Headless: no render types.

pub mod config;
pub mod history;
pub mod pending;
pub mod perceive;
pub mod prompts;
pub mod reflect;
pub mod remember;

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

/// Adds cognition to the headless simulation.
pub(crate) fn plugin(app: &mut App, cfg: CognitionConfig, prompts: prompts::Prompts) {
    app.insert_resource(Cognition(cfg)).insert_resource(prompts).insert_resource(crate::sim::clock::StepGate {
        blocked_by: Some(blocked_by),
        pump: Some(pending::pump_replies),
        ..default()
    });
    app.add_systems(PreUpdate, pending::route_replies.after(crate::llm::deliver_llm_replies));
    remember::plugin(app);
    perceive::plugin(app);
    reflect::plugin(app);
}
