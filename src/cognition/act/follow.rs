//! Carrying out the plan: when the block due now is decided (its place, emoji and object state
//! known), it becomes the current action and the resident walks there; until then the step waits
//! for it (in real time, the resident carries on; under live pacing, it does its routine's
//! activity). On arrival the object takes the action's
//! state ("the stove is heating a pan"); when the action ends the state reverts, unless someone
//! else has set it since.

use crate::agent::{
    ActionSource, CurrentAction, DayPlan, GridPos, Identity, PlanSource, Resident, WalkPath,
};
use crate::sim::clock::SimClock;
use crate::sim::objects_state::ObjectStates;
use bevy::prelude::*;

/// The state an object takes while a block's action lasts (its own, or a plain one for the
/// routine's blocks): `None` when the action is not at an object.
pub fn object_state_of(address: &str, described: &str, description: &str) -> Option<String> {
    if address.split(':').count() < 4 {
        return None;
    }
    if !described.is_empty() {
        return Some(described.to_string());
    }
    Some(
        if address.ends_with(":bed") && crate::cognition::day::activity::is_sleep(description) {
            "being slept in".into()
        } else {
            "in use".into()
        },
    )
}

/// The event triple others perceive for an action, without a model call: (name, the action's
/// verb, what it acts on). "brewing coffee for customers (grinding the beans)" at a coffee machine
/// is (name, "brewing", "coffee for customers"); a one-word action takes the object of its
/// address ("sleeping" in bed: (name, "sleeping", "bed")), else "" (nothing further to say).
pub fn action_triple(name: &str, description: &str, address: &str) -> (String, String, String) {
    let main = description.split('(').next().unwrap_or("").trim();
    let mut words = main.split_whitespace();
    let verb = words.next().unwrap_or("is").to_lowercase();
    let rest = words.collect::<Vec<_>>().join(" ");
    let object = if !rest.is_empty() {
        rest
    } else if address.split(':').count() >= 4 {
        address.rsplit(':').next().unwrap_or("").to_string()
    } else {
        String::new()
    };
    (name.to_string(), verb, object)
}

/// Game minutes a block due now may stay undecided, with game time going on, before its resident
/// does its routine's activity instead (an answer that never came; under
/// [`Pacing::Wait`](crate::cognition::config::Pacing) time waits for the answers it expects).
pub const UNDECIDED_MINUTES: u32 = 15;

/// Switches each resident to the block due now, once it is decided. Under
/// [`Pacing::Live`](crate::cognition::config::Pacing), a block whose place is still being chosen leaves the
/// resident on its routine's activity for now (it switches when the answer is in).
pub fn follow_plans(
    clock: Res<SimClock>,
    cog: Res<crate::cognition::config::Cognition>,
    mut routines: Local<
        std::collections::HashMap<Entity, (i64, Vec<crate::agent::schedule::Block>)>,
    >,
    mut objects: ResMut<ObjectStates>,
    mut agents: Query<
        (
            Entity,
            &Identity,
            &Resident,
            &mut DayPlan,
            &mut CurrentAction,
        ),
        (Without<crate::agent::conversation::Talking>,),
    >,
) {
    let minute = clock.now.minute_of_day();
    let live = cog.0.pacing == crate::cognition::config::Pacing::Live;
    for (entity, id, resident, mut plan, mut action) in &mut agents {
        let Some(i) = plan.at(minute) else { continue };
        if plan.current == Some(i) {
            continue;
        }
        let own = plan.blocks[i].decided();
        let b = if own {
            plan.current = Some(i);
            plan.blocks[i].clone()
        } else if live || minute >= plan.blocks[i].start + UNDECIDED_MINUTES {
            // Its place is being chosen (live), or no answer came to choose it: the routine's
            // activity meanwhile (plan.current stays unset, so the block is taken up once it is
            // decided). Nobody sleeps through the day on a block that was never placed.
            // (The day's routine is laid out once per resident and day, not at every step.)
            let day = clock.now.day();
            let routine = routines.entry(entity).or_insert_with(|| (day, Vec::new()));
            if routine.0 != day || routine.1.is_empty() {
                *routine = (
                    day,
                    crate::agent::routine::daily_routine(&resident.persona, day),
                );
            }
            match routine
                .1
                .iter()
                .find(|r| r.start <= minute && minute < r.end)
            {
                Some(r) => r.clone(),
                None => continue,
            }
        } else {
            continue; // its place is being chosen (the answer is due now)
        };
        if action.description == b.description && action.address == b.address {
            continue; // the same activity carried over midnight
        }
        if !action.address.is_empty() {
            objects.clear_if_by(&action.address, &id.name);
        }
        let from_model = own && plan.source == PlanSource::Model;
        *action = CurrentAction {
            event: Some(action_triple(&id.name, &b.description, &b.address)),
            object_state: object_state_of(&b.address, &b.object_state, &b.description)
                .unwrap_or_default(),
            description: b.description,
            emoji: b.emoji,
            address: b.address,
            start: clock.now,
            duration_min: b.end - b.start,
            source: if from_model {
                ActionSource::Plan
            } else {
                ActionSource::Routine
            },
        };
    }
}

/// A resident who has just arrived at the object of its action (or starts an action where it
/// stands) gives the object its state, once: someone arriving later takes it over. Two arriving
/// at one object in the same step set it in their names' order (the last by name holds it), not
/// in the order the ECS keeps people in, which a load changes.
pub fn set_object_states(
    clock: Res<SimClock>,
    mut objects: ResMut<ObjectStates>,
    agents: Query<(&Identity, &CurrentAction, &WalkPath, &GridPos), With<Resident>>,
) {
    let mut arrived: Vec<(&str, &CurrentAction)> = agents
        .iter()
        .filter(|(_, action, walk, pos)| {
            !action.object_state.is_empty()
                && walk.tiles.is_empty()
                && walk.destination.as_deref() == Some(action.address.as_str())
                && (pos.prev != pos.tile || action.start == clock.now)
        })
        .map(|(id, action, ..)| (id.name.as_str(), action))
        .collect();
    arrived.sort_by(|a, b| a.0.cmp(b.0));
    for (name, action) in arrived {
        objects.set(
            &action.address,
            &action.object_state,
            Some(name.to_string()),
            clock.now,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_states_of_actions() {
        assert_eq!(
            object_state_of("w:s:a", "x", "y"),
            None,
            "an arena is not an object"
        );
        assert_eq!(
            object_state_of("w:s:a:stove", "heating a pan", "cooking"),
            Some("heating a pan".into())
        );
        assert_eq!(
            object_state_of("w:s:a:bed", "", "sleeping"),
            Some("being slept in".into())
        );
        assert_eq!(
            object_state_of("w:s:a:desk", "", "writing"),
            Some("in use".into())
        );
    }

    #[test]
    fn action_triples_without_a_model() {
        let t = |d: &str, a: &str| action_triple("Isabella Rodriguez", d, a);
        assert_eq!(
            t(
                "brewing coffee for customers (grinding the beans)",
                "w:Hobbs Cafe:cafe:behind the cafe counter"
            ),
            (
                "Isabella Rodriguez".into(),
                "brewing".into(),
                "coffee for customers".into()
            )
        );
        assert_eq!(
            t("sleeping", "w:s:a:bed"),
            ("Isabella Rodriguez".into(), "sleeping".into(), "bed".into())
        );
        assert_eq!(
            t("Reading", "w:s:a"),
            ("Isabella Rodriguez".into(), "reading".into(), String::new())
        );
        assert_eq!(
            t("", ""),
            ("Isabella Rodriguez".into(), "is".into(), String::new())
        );
    }
}
