//! Reacting to someone just seen: talk to them, wait for them, or carry on. The guards come
//! first, so most sightings cost nothing: not while either is asleep, talking or waiting, not at
//! 11 pm, not within the cool-down since they last talked, and not about the same person again
//! within the reaction cool-down. Otherwise the resident asks itself, with what it remembers of
//! the other person: first, as in the original, whether to talk (yes or no); only when they talked
//! lately, whether to wait for them or carry on (a choice). Waiting inserts a
//! wait into the plan, the rest of the window still adding up.

use crate::agent::avatar::Avatar;
use crate::agent::conversation::{Party, Talking, start_conversation};
use crate::agent::schedule::{Block, insert_action};
use crate::agent::{
    CurrentAction, DayPlan, GridPos, Identity, Outlook, Resident, STAY_HERE, WalkPath,
};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::take;
use crate::cognition::ask::job::{Job, Reaction};
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::{choice_tokens, numbered};
use crate::cognition::config::Cognition;
use crate::cognition::resident::scratch::Scratch;
use crate::llm::{LlmValue, OutputShape};
use crate::memory::stream::{MemoryStream, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use bevy::prelude::*;

/// Whether an action is a wait.
pub fn is_waiting(a: &CurrentAction) -> bool {
    a.description.starts_with("waiting")
}

/// The people seen in this step's new memories (other than oneself), nearest first.
pub fn newly_seen<'a>(
    stream: &'a MemoryStream,
    me: &str,
    now: crate::sim::time::GameTime,
    people: &std::collections::HashSet<&str>,
) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for n in stream.nodes().iter().rev().take_while(|n| n.created == now) {
        if n.kind == NodeKind::Event
            && n.subject != me
            && people.contains(n.subject.as_str())
            && !out.contains(&n.subject.as_str())
        {
            out.insert(0, &n.subject);
        }
    }
    out
}

/// Decides whom to consider reacting to and asks.
#[expect(clippy::type_complexity, reason = "a reaction reads both people")]
pub fn consider_reactions(
    mut ask: Asker,
    people: Query<
        (Entity, &Identity, &CurrentAction, Has<Talking>, Has<Avatar>),
        Or<(With<Resident>, With<Avatar>)>,
    >,
    mut agents: Query<
        (
            Entity,
            &Resident,
            &Identity,
            &Outlook,
            &CurrentAction,
            &WalkPath,
            &MemoryStream,
            &mut Scratch,
            &mut Pending,
        ),
        Without<Talking>,
    >,
) {
    let now = ask.clock.now;
    if now.hms().0 == 23 {
        return;
    }
    // Everyone by name, once a step: who was seen is looked up, never searched for, so a
    // town of a thousand costs each viewer only what it saw.
    let everyone: Vec<_> = people.iter().collect();
    let by_name: std::collections::HashMap<&str, usize> = everyone
        .iter()
        .enumerate()
        .map(|(i, (_, id, _, _, _))| (id.name.as_str(), i))
        .collect();
    let names: std::collections::HashSet<&str> = by_name.keys().copied().collect();
    let slack = ask.cfg.0.decision_slack_steps;
    let react_cd = ask.cfg.0.react_cooldown_minutes as i64 * 60;
    for (agent, resident, id, outlook, action, walk, stream, mut scratch, mut pending) in
        &mut agents
    {
        if action.is_asleep()
            || is_waiting(action)
            || pending.any(|j| matches!(j, Job::React { .. }))
        {
            continue;
        }
        let seen = newly_seen(stream, &id.name, now, &names);
        let Some((target, tid, taction, is_player)) = seen.iter().find_map(|n| {
            let (e, tid, ta, talking, is_player) = *everyone.get(*by_name.get(n)?)?;
            let free = !talking && !ta.is_asleep() && !is_waiting(ta);
            let cooled = scratch.react_cooldown.get(*n).is_none_or(|t| *t <= now);
            (free && cooled).then_some((e, tid, ta, is_player))
        }) else {
            continue;
        };
        // As in the original: first whether to talk (fail-safe yes); only when talking is not an
        // option (they talked lately), whether to wait for them or carry on.
        let talk_ok = scratch
            .chat_cooldown
            .get(&tid.name)
            .is_none_or(|t| *t <= now);
        let wait_ok = !is_player
            && !walk.tiles.is_empty()
            && !action.address.is_empty()
            && action.address == taction.address;
        if !talk_ok && !wait_ok {
            continue;
        }
        scratch
            .react_cooldown
            .insert(tid.name.clone(), now.plus_secs(react_cd));
        let first = |n: &str| n.split_whitespace().next().unwrap_or(n).to_string();
        let (options, question, shape, fallback) = if talk_ok {
            let q = format!(
                "Does {} start a conversation with {} now? Answer yes or no.",
                id.name, tid.name
            );
            (
                vec![Reaction::Talk, Reaction::CarryOn],
                q,
                OutputShape::YesNo,
                LlmValue::Bool(true),
            )
        } else {
            let labels = vec![
                format!("wait for {} to finish", first(&tid.name)),
                format!("carry on {}", action.description),
            ];
            let q = format!(
                "What should {} do? Options: {}. Answer with one option.",
                id.name,
                labels.join(", ")
            );
            let fallback = LlmValue::Choice(1, labels[1].clone());
            (
                vec![Reaction::Wait, Reaction::CarryOn],
                q,
                OutputShape::Choice(labels.clone()),
                fallback,
            )
        };
        let tokens = match &shape {
            OutputShape::Choice(labels) => choice_tokens(labels),
            _ => 4,
        };
        let about: Vec<&str> = stream
            .ids_with_keyword(&tid.name)
            .iter()
            .rev()
            .filter_map(|i| stream.get(*i))
            .filter(|n| n.kind != NodeKind::Chat)
            .take(6)
            .map(|n| n.description.as_str())
            .collect();
        let memories = if about.is_empty() {
            format!(
                "{} knows nothing in particular about {}.",
                id.name, tid.name
            )
        } else {
            numbered(about)
        };
        let last_chat = stream
            .last_chat_with(&tid.name)
            .map(|c| {
                format!(
                    "{} last talked with {} on {} at {}: {}",
                    id.name,
                    tid.name,
                    c.created.date_string(),
                    c.created.clock_12h(),
                    c.description
                )
            })
            .unwrap_or_else(|| format!("{} has not talked with {} today.", id.name, tid.name));
        let who = Who::of(resident, outlook, &id.name, now);
        let (time, doing, target_doing) = (
            now.clock_12h(),
            action.description.clone(),
            taction.description.clone(),
        );
        let req = ask
            .chat(
                "react",
                &who,
                &[
                    ("target", &tid.name),
                    ("time", &time),
                    ("doing", &doing),
                    ("target_doing", &target_doing),
                    ("memories", &memories),
                    ("last_chat", &last_chat),
                    ("question", &question),
                ],
                shape,
                tokens,
            )
            .fallback(fallback);
        ask.ask(
            agent,
            &mut pending,
            req,
            Job::React { target, options },
            slack,
        );
    }
}

/// Applies reactions: a conversation begins, a wait is inserted, or nothing.
#[expect(clippy::type_complexity, reason = "a reaction changes both people")]
pub fn apply_reactions(
    mut commands: Commands,
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    map: Res<WorldMap>,
    mut objects: ResMut<crate::sim::objects_state::ObjectStates>,
    mut agents: Query<
        (
            Entity,
            &Identity,
            &mut Pending,
            &mut DayPlan,
            &mut CurrentAction,
            &mut WalkPath,
            &GridPos,
            Has<Talking>,
        ),
        With<Resident>,
    >,
    avatar: Query<
        (Entity, &Identity, &CurrentAction, &GridPos, Has<Talking>),
        (With<Avatar>, Without<Resident>),
    >,
) {
    let mut talks: Vec<(Entity, Entity)> = Vec::new();
    let now_min = clock.now.minute_of_day();
    for (agent, _, mut pending, mut plan, action, _, _, talking) in &mut agents {
        for ((target, options), reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            React { target, options }
        ) {
            let chosen = match reply.value {
                LlmValue::Choice(i, _) => options.get(i).copied(),
                LlmValue::Bool(yes) => options.get(if yes { 0 } else { 1 }).copied(),
                _ => None,
            };
            match chosen.unwrap_or(Reaction::CarryOn) {
                Reaction::Talk if !talking && !action.is_asleep() => talks.push((agent, target)),
                Reaction::Wait => {
                    let minutes = 10u32;
                    let window_end = plan
                        .at(now_min)
                        .map(|i| plan.blocks[i].end.max(now_min + minutes))
                        .unwrap_or(now_min + minutes);
                    let nid = plan.new_id();
                    let wait = Block {
                        start: now_min,
                        end: now_min + minutes,
                        description: format!("waiting to start {}", action.description),
                        emoji: "⌛".into(),
                        address: STAY_HERE.into(),
                        id: nid,
                        activity: nid,
                        group: nid,
                        subtask: true,
                        object_state: String::new(),
                    };
                    plan.blocks =
                        insert_action(std::mem::take(&mut plan.blocks), now_min, wait, window_end);
                    plan.current = None;
                }
                _ => {}
            }
        }
    }
    // Who asks first is settled by name, not by the order the ECS keeps people in (a load
    // changes it), so a loaded game goes on as the saved one would have.
    talks.sort_by_cached_key(|(a, _)| agents.get(*a).map(|x| x.1.name.clone()).unwrap_or_default());
    // (Talking is inserted by commands at the end of the step: track who is taken meanwhile.)
    let mut taken: Vec<Entity> = Vec::new();
    for (a, b) in talks {
        if taken.contains(&a) || taken.contains(&b) {
            continue;
        }
        let talk = |one: Party,
                    two: Party,
                    commands: &mut Commands,
                    objects: &mut crate::sim::objects_state::ObjectStates| {
            start_conversation(
                commands,
                &map,
                &clock,
                objects,
                one,
                two,
                cog.0.max_utterances,
            )
        };
        if let Ok((_, pid, paction, ppos, ptalking)) = avatar.get(b) {
            // The player: the resident walks up and speaks; the player's own action and walk
            // stay the player's (their turns come from the game, or the talk ends).
            let Ok(mut pa) = agents.get_mut(a) else {
                continue;
            };
            if pa.7 || ptalking {
                continue;
            }
            let (mut action, mut walk) = (paction.clone(), WalkPath::default());
            let two = Party {
                entity: b,
                name: pid.name.clone(),
                action: &mut action,
                walk: &mut walk,
                pos: *ppos,
                walks: false,
            };
            talk(resident_party(&mut pa), two, &mut commands, &mut objects);
        } else {
            let Ok([mut pa, mut pb]) = agents.get_many_mut([a, b]) else {
                continue;
            };
            if pa.7 || pb.7 || pb.4.is_asleep() {
                continue; // the other is busy by now
            }
            talk(
                resident_party(&mut pa),
                resident_party(&mut pb),
                &mut commands,
                &mut objects,
            );
        }
        taken.extend([a, b]);
    }
}

/// A resident's part in a conversation being started (they walk to meet the other).
fn resident_party<'a>(p: &'a mut TalkerItem<'_>) -> Party<'a> {
    Party {
        entity: p.0,
        name: p.1.name.clone(),
        action: &mut p.4,
        walk: &mut p.5,
        pos: *p.6,
        walks: true,
    }
}

/// What [`apply_reactions`] reads and changes of a resident.
type TalkerItem<'w> = (
    Entity,
    &'w Identity,
    Mut<'w, Pending>,
    Mut<'w, DayPlan>,
    Mut<'w, CurrentAction>,
    Mut<'w, WalkPath>,
    &'w GridPos,
    bool,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::stream::NewNode;
    use crate::sim::time::GameTime;

    #[test]
    fn only_this_steps_sightings_of_others_count() {
        let t0 = GameTime::parse("2023-02-13 08:00").unwrap();
        let t1 = t0.plus_secs(10);
        let mut s = MemoryStream::default();
        let ev = |who: &str| NewNode {
            subject: who.into(),
            predicate: "is".into(),
            object: "x".into(),
            description: format!("{who} is x"),
            ..Default::default()
        };
        s.add(NodeKind::Event, ev("Maria Lopez"), t0);
        s.add(NodeKind::Event, ev("Klaus Mueller"), t1);
        s.add(NodeKind::Event, ev("the Ville:Hobbs Cafe:cafe:piano"), t1);
        s.add(NodeKind::Event, ev("Isabella Rodriguez"), t1);
        s.add(NodeKind::Event, ev("Tom Moreno"), t1);
        let people: std::collections::HashSet<&str> = [
            "Maria Lopez",
            "Klaus Mueller",
            "Isabella Rodriguez",
            "Tom Moreno",
        ]
        .into_iter()
        .collect();
        assert_eq!(
            newly_seen(&s, "Isabella Rodriguez", t1, &people),
            vec!["Klaus Mueller", "Tom Moreno"]
        );
    }
}
