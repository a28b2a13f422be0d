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
//! - [`sets`]: the order of all these systems within a step;
//! - [`clocks`]: who runs ahead on a clock of its own while others wait (`sim.own_clocks`).
//!
//! Headless: no render types. To follow one decision from perception to the tile an agent
//! walks to, read `mind::perceive`, `react::people`, `day::plan`, `day::decompose`,
//! `act::place`, `act::details` and `act::follow` in that order (then `agent::plan_walks`).

pub mod act;
pub mod ask;
pub mod clocks;
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
    let first = !awaited.listed;
    let n = ask::pending::blocking_answers(world, step, awaited);
    // A measure for `bench day`, taken where a step is waited for (headless), not in frames.
    if first
        && n > 0
        && world
            .resource::<crate::sim::clock::SimPace>()
            .block_on_answers
    {
        count_apart(world, awaited);
    }
    n
}

/// How many residents the answers missing do not concern: none of theirs is missing, they
/// talk with nobody whose is, and they stand farther than sight and a step each way
/// (`vision_radius` + 2 tiles, the square) from everyone whose is. Only a measure for `bench
/// day`: nobody runs ahead.
fn count_apart(world: &mut World, awaited: &mut crate::sim::clock::Awaited) {
    use crate::agent::conversation::Talking;
    let reach = world.resource::<Cognition>().0.vision_radius as i32 + 2;
    let waiting: std::collections::HashSet<Entity> = awaited.keys.keys().map(|k| k.0).collect();
    let mut q = world.query_filtered::<(Entity, &crate::agent::GridPos, Option<&Talking>), With<crate::agent::Resident>>();
    let people: Vec<(Entity, (i32, i32), Option<Entity>)> = q
        .iter(world)
        .map(|(e, p, t)| (e, (p.tile.x, p.tile.y), t.map(|t| t.partner)))
        .collect();
    awaited.residents = people.len();
    awaited.apart = apart(&people, &waiting, reach);
}

/// Of `people` (each with its tile and whom it talks with), those not in `waiting`, not
/// talking with one who is, and farther than `reach` tiles (the square) from all who are.
fn apart(
    people: &[(Entity, (i32, i32), Option<Entity>)],
    waiting: &std::collections::HashSet<Entity>,
    reach: i32,
) -> usize {
    let held: Vec<(i32, i32)> = people
        .iter()
        .filter(|(e, ..)| waiting.contains(e))
        .map(|(_, t, _)| *t)
        .collect();
    people
        .iter()
        .filter(|(e, t, partner)| {
            !waiting.contains(e)
                && !partner.is_some_and(|p| waiting.contains(&p))
                && held
                    .iter()
                    .all(|h| (h.0 - t.0).abs().max((h.1 - t.1).abs()) > reach)
        })
        .count()
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
            plan: Some(clocks::plan_pass),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residents_apart_are_far_from_and_not_talking_with_anyone_waited_for() {
        let e = |i: u32| Entity::from_raw_u32(i).unwrap();
        let people = vec![
            (e(1), (10, 10), Some(e(2))), // waits (its line is missing)
            (e(2), (11, 10), Some(e(1))), // its partner: held with it
            (e(3), (20, 10), None),       // 10 tiles away: within sight and a step
            (e(4), (21, 10), None),       // 11 tiles: apart
            (e(5), (60, 60), None),       // far: apart
            (e(6), (61, 60), Some(e(1))), // far, but talking with one who waits
        ];
        let waiting = [e(1)].into_iter().collect();
        assert_eq!(apart(&people, &waiting, 10), 2);
        assert_eq!(apart(&people, &Default::default(), 10), 6);
    }
}
