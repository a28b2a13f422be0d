//! Cognition: the systems that fill and read memory and decide what to do, in folders by the
//! stages of the paper's loop, each using only those listed before it:
//!
//! - [`config`]: the settings and the [`Cognition`](config::Cognition) resource;
//! - [`ask`]: how a resident asks the model and keeps what it waits for (every request is
//!   recorded on the resident and its answer applied in a later step by the matching `apply_*`
//!   system; nothing here waits for a model);
//! - [`resident`]: a resident's spawn, scratch and history;
//! - [`mind`]: perceive, remember (importance and embeddings), reflect;
//! - [`day`]: the day's plan, its hours, subtasks and re-plans;
//! - [`act`]: where each activity happens, what it looks like there, the plan carried out;
//! - [`react`]: reactions to people and to objects;
//! - [`talk`]: conversations, their lines and topics, invitations, what they carried;
//! - [`sets`]: the order of all these systems within a step.
//!
//! Headless: no render types. To follow one decision from perception to the tile an agent
//! walks to, read `mind::perceive`, `react::people`, `day::plan`, `day::decompose`,
//! `act::place`, `act::details` and `act::follow` in that order (then `agent::plan_walks`).

pub mod act;
pub mod ask;
pub mod config;
pub mod day;
pub mod mind;
pub mod react;
pub mod resident;
pub mod sets;
pub mod talk;

use bevy::prelude::*;
use config::{Cognition, CognitionConfig};
pub use sets::DecideSystems;

fn blocked_by(world: &mut World, step: u64, awaited: &mut crate::sim::clock::Awaited) -> usize {
    if world.resource::<Cognition>().real_time() {
        return 0;
    }
    ask::pending::blocking_answers(world, step, awaited)
}

/// Adds cognition to the headless simulation.
pub(crate) fn plugin(
    app: &mut App,
    cfg: CognitionConfig,
    prompts: ask::prompts::Prompts,
    rules: act::place::PlaceRules,
) {
    app.insert_resource(rules);
    app.insert_resource(Cognition(cfg))
        .insert_resource(prompts)
        .insert_resource(crate::sim::clock::StepGate {
            blocked_by: Some(blocked_by),
            pump: Some(ask::pending::pump_noting),
            send: Some(|world| world.resource_mut::<crate::llm::Llm>().flush()),
            ..default()
        });
    app.add_systems(
        PreUpdate,
        ask::pending::route_replies.after(crate::llm::deliver_llm_replies),
    );
    resident::scratch::plugin(app);
    resident::spawn::plugin(app);
    mind::remember::plugin(app);
    talk::invite::plugin(app);
    // Every system of the step, in order.
    sets::plugin(app);
}
