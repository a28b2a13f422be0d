//! Reacting to an object in an unusual state: the paper's burning stove and leaking shower. A
//! resident who has just perceived an object whose state the player set (the actions of residents
//! set ordinary states; those are not news) asks itself whether to deal with it and what it does
//! (a shaped answer: yes or no and a few words). Dealing with it is inserted into the plan at the
//! object, the rest of the window still adding up; while it lasts the object is being dealt with,
//! and when it ends the object is idle again. Once per object within the reaction cool-down; not
//! while asleep or talking; the fail-safe is to go and check on it.

use crate::agent::conversation::Talking;
use crate::agent::schedule::{Block, insert_action};
use crate::agent::{CurrentAction, DayPlan, Identity, Outlook, Resident};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::config::Cognition;
use crate::cognition::day::activity::clean_activity;
use crate::cognition::resident::scratch::Scratch;
use crate::llm::{LlmValue, OutputShape};
use crate::memory::stream::{MemoryStream, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::objects_state::ObjectStates;
use bevy::prelude::*;
use serde_json::{Value, json};

/// Game minutes a resident spends dealing with an object.
pub const DEAL_MINUTES: u32 = 15;

/// The schema of the answer.
pub fn react_object_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "react": {"type": "boolean"},
            "action": {"type": "string", "minLength": 3, "maxLength": 50}
        },
        "required": ["react", "action"],
        "additionalProperties": false
    })
}

/// The player-set object states among this step's new memories of a resident (addresses).
pub fn noticed_objects(
    stream: &MemoryStream,
    objects: &ObjectStates,
    now: crate::sim::time::GameTime,
) -> Vec<String> {
    let mut out = Vec::new();
    for n in stream.nodes().iter().rev().take_while(|n| n.created == now) {
        if n.kind == NodeKind::Event
            && objects.get(&n.subject).is_some_and(|s| s.by.is_none())
            && !out.contains(&n.subject)
        {
            out.push(n.subject.clone());
        }
    }
    out
}

/// Asks residents who just noticed an object in a state the player set what they do about it.
#[expect(clippy::type_complexity, reason = "the question reads the resident")]
pub fn consider_object_reactions(
    mut ask: Asker,
    objects: Res<ObjectStates>,
    mut agents: Query<
        (
            Entity,
            &Resident,
            &Identity,
            &Outlook,
            &CurrentAction,
            &MemoryStream,
            &mut Scratch,
            &mut Pending,
        ),
        Without<Talking>,
    >,
) {
    let now = ask.clock.now;
    let cd = ask.cfg.0.react_cooldown_minutes as i64 * 60;
    let slack = ask.cfg.0.decision_slack_steps;
    for (agent, resident, id, outlook, action, stream, mut scratch, mut pending) in &mut agents {
        if action.is_asleep() || pending.any(|j| matches!(j, Job::ReactObject { .. })) {
            continue;
        }
        let Some(address) = noticed_objects(stream, &objects, now)
            .into_iter()
            .find(|a| scratch.react_cooldown.get(a).is_none_or(|t| *t <= now))
        else {
            continue;
        };
        scratch
            .react_cooldown
            .insert(address.clone(), now.plus_secs(cd));
        let state = objects
            .get(&address)
            .map(|s| s.state.clone())
            .unwrap_or_default();
        let parts: Vec<&str> = address.split(':').collect();
        let object = parts.last().copied().unwrap_or("object").to_string();
        let place = parts[1..parts.len().saturating_sub(1)].join(", ");
        let who = Who::of(resident, outlook, &id.name, now);
        let (time, doing) = (now.clock_12h(), action.description.clone());
        let req = ask
            .chat(
                "react_object",
                &who,
                &[
                    ("time", &time),
                    ("doing", &doing),
                    ("object", &object),
                    ("state", &state),
                    ("place", &place),
                ],
                OutputShape::Json(react_object_schema()),
                40,
            )
            .fallback(LlmValue::Json(
                json!({"react": true, "action": format!("checking on the {object}")}),
            ));
        ask.ask(
            agent,
            &mut pending,
            req,
            Job::ReactObject { address },
            slack,
        );
    }
}

/// Applies the answers: dealing with the object goes into the plan now, at the object.
pub fn apply_object_reactions(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    objects: Res<ObjectStates>,
    mut agents: Query<(&Identity, &CurrentAction, &mut DayPlan, &mut Pending), With<Resident>>,
) {
    let now_min = clock.now.minute_of_day();
    for (id, action, mut plan, mut pending) in &mut agents {
        for (address, reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            ReactObject { address }
        ) {
            let LlmValue::Json(v) = &reply.value else {
                continue;
            };
            let object = address.rsplit(':').next().unwrap_or("object").to_string();
            let react = v.get("react").and_then(Value::as_bool).unwrap_or(true);
            // Someone else dealt with it already, or it is no longer unusual.
            if !react || objects.get(&address).is_none_or(|s| s.by.is_some()) || action.is_asleep()
            {
                continue;
            }
            let what = v
                .get("action")
                .and_then(Value::as_str)
                .map(|a| clean_activity(a, &id.name))
                .filter(|a| a.split_whitespace().count() >= 2)
                .unwrap_or_else(|| format!("checking on the {object}"));
            let end = (now_min + DEAL_MINUTES).min(1440);
            if end <= now_min {
                continue;
            }
            let window_end = plan
                .at(now_min)
                .map(|i| plan.blocks[i].end.max(end))
                .unwrap_or(end);
            let nid = plan.new_id();
            let deal = Block {
                start: now_min,
                end,
                description: what,
                emoji: "🛠".into(),
                address: address.clone(),
                id: nid,
                activity: nid,
                group: nid,
                subtask: true,
                object_state: format!("being dealt with by {}", id.first_name),
            };
            plan.blocks =
                insert_action(std::mem::take(&mut plan.blocks), now_min, deal, window_end);
            plan.current = None;
        }
    }
}
