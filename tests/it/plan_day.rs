//! A day of planning, acting, reacting and talking with the scripted backend: 25 residents wake,
//! follow plans that cover the day, reach the places they chose (all valid), talk (memories on
//! both sides), set object states that revert; and the same run twice is the same at every step.

use bevy::prelude::*;
use simulacra::SimPlugin;
use simulacra::agent::conversation::{Conversation, ConversationLog};
use simulacra::agent::schedule::covers_the_day;
use simulacra::agent::{
    CurrentAction, DayPlan, GridPos, Identity, PlanSource, Resident, STAY_HERE, WalkPath,
};
use simulacra::memory::stream::{MemoryStream, NodeKind};
use simulacra::sim::clock::SimClock;
use simulacra::sim::map::WorldMap;
use simulacra::sim::objects_state::ObjectStates;
use simulacra::{headless_app, run_steps};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

/// A scenario with the scripted backend planning (shape-valid answers chosen by the prompt's hash).
pub fn planning_sim(scenario: &str) -> SimPlugin {
    SimPlugin::load(scenario, None, crate::scripted_config()).expect("bundled scenario loads")
}

type Snapshot = Vec<(String, (i32, i32), String, String)>;

fn snapshot(app: &mut App) -> Snapshot {
    let world = app.world_mut();
    let mut q = world.query_filtered::<(&Identity, &GridPos, &CurrentAction), With<Resident>>();
    let mut v: Snapshot = q
        .iter(world)
        .map(|(i, p, a)| {
            (
                i.name.clone(),
                (p.tile.x, p.tile.y),
                a.description.clone(),
                a.address.clone(),
            )
        })
        .collect();
    v.sort();
    v
}

fn hash_of(s: &Snapshot) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

struct Walk {
    address: String,
    started: u64,
    walk_len: usize,
    arrived: bool,
}

#[test]
fn twenty_five_residents_plan_act_and_talk_for_a_day_the_same_way_twice() {
    let mut app = headless_app(planning_sim("the_ville_n25"));
    let map = app.world().resource::<WorldMap>().clone();
    let mut hashes = Vec::new();
    let mut woke: HashSet<String> = HashSet::new();
    let mut walks: HashMap<String, Walk> = HashMap::new();
    let mut not_reached: Vec<String> = Vec::new();
    let mut reached = 0;
    let mut states_set = 0;
    let mut states_reverted = 0;
    let mut last_states: ObjectStates = ObjectStates::default();
    let mut model_plans = 0;
    let (mut subtasks, mut subtasks_5_15) = (0u32, 0u32);
    let mut still: HashMap<String, u32> = HashMap::new();
    for step in 0..8640u64 {
        run_steps(&mut app, 1);
        let snap = snapshot(&mut app);
        hashes.push(hash_of(&snap));
        let states = app.world().resource::<ObjectStates>().clone();
        states_set += states
            .states
            .keys()
            .filter(|k| last_states.get(k).is_none_or(|s| Some(s) != states.get(k)))
            .count();
        states_reverted += last_states
            .states
            .keys()
            .filter(|k| states.get(k).is_none())
            .count();
        last_states = states;
        let world = app.world_mut();
        let mut q = world.query_filtered::<(&Identity, &GridPos, &CurrentAction, &WalkPath, &DayPlan), With<Resident>>();
        for (id, pos, action, walk, plan) in q.iter(world) {
            if !action.is_asleep() && !action.description.is_empty() {
                woke.insert(id.name.clone());
            }
            if step % 360 == 0 {
                assert!(
                    covers_the_day(&plan.blocks),
                    "{}'s plan at step {step} does not cover the day: {:?}",
                    id.name,
                    plan.blocks
                );
                if plan.source == PlanSource::Model {
                    model_plans += 1;
                }
                // The subtasks of each refined activity lie together, one after another, so
                // they add up to the piece of the day they refine; only an inserted action (a
                // wait, a chat: a block of its own) may stand between them.
                let inserted =
                    |b: &simulacra::agent::schedule::Block| b.subtask && b.activity == b.id;
                let mut last_of: HashMap<u32, usize> = HashMap::new();
                for (i, b) in plan
                    .blocks
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.subtask && b.activity != b.id)
                {
                    if let Some(j) = last_of.insert(b.activity, i) {
                        assert!(
                            plan.blocks[j + 1..i].iter().all(inserted),
                            "{}'s subtasks of activity {} are split apart by other activities: {:?}",
                            id.name,
                            b.activity,
                            plan.blocks
                        );
                    }
                }
                for b in plan
                    .blocks
                    .iter()
                    .filter(|b| b.subtask && b.activity != b.id)
                {
                    subtasks += 1;
                    if (5..=15).contains(&b.minutes()) {
                        subtasks_5_15 += 1;
                    }
                }
            }
            let addr = action.address.clone();
            if !addr.is_empty() && addr != STAY_HERE {
                assert!(
                    map.has_address(&addr),
                    "{} chose an address that is not on the map: {addr}",
                    id.name
                );
            }
            // Someone with somewhere to go moves.
            let s = still.entry(id.name.clone()).or_default();
            *s = if !walk.tiles.is_empty() && pos.prev == pos.tile {
                *s + 1
            } else {
                0
            };
            assert!(*s < 3, "{} is stuck at {} with a path", id.name, pos.tile);
            // Arrival: an action that lasts longer than its walk must reach its place.
            let w = walks.entry(id.name.clone()).or_insert(Walk {
                address: String::new(),
                started: step,
                walk_len: 0,
                arrived: true,
            });
            if w.address != addr {
                if !w.arrived && step - w.started > w.walk_len as u64 + 2 {
                    not_reached.push(format!(
                        "{} never reached {} ({} steps, walk {})",
                        id.name,
                        w.address,
                        step - w.started,
                        w.walk_len
                    ));
                } else if w.arrived {
                    reached += 1;
                }
                *w = Walk {
                    address: addr.clone(),
                    started: step,
                    walk_len: walk.tiles.len(),
                    arrived: addr.is_empty() || addr == STAY_HERE,
                };
            }
            if !w.arrived && map.tiles_of(&addr).contains(&pos.tile) {
                w.arrived = true;
            }
        }
    }
    assert_eq!(woke.len(), 25, "not everyone woke: {woke:?}");
    assert!(
        model_plans > 25 * 10,
        "residents planned their days with the model ({model_plans} plan checks)"
    );
    assert!(
        subtasks > 1000 && subtasks_5_15 * 10 >= subtasks * 9,
        "{subtasks_5_15} of {subtasks} subtasks last 5–15 minutes"
    );
    assert!(
        not_reached.is_empty(),
        "{} of {} places not reached: {:?}",
        not_reached.len(),
        reached + not_reached.len(),
        &not_reached[..not_reached.len().min(10)]
    );
    assert!(reached > 50, "only {reached} places reached");
    assert!(
        states_set > 20 && states_reverted > 20,
        "object states changed {states_set} times and reverted {states_reverted} times"
    );
    // Conversations happened and both sides remember them.
    let log = app.world().resource::<ConversationLog>().clone();
    assert!(!log.lines.is_empty(), "nobody talked all day");
    let world = app.world_mut();
    let convs: Vec<Conversation> = world
        .query::<&Conversation>()
        .iter(world)
        .filter(|c| c.ended.is_some() && c.lines.len() >= 2)
        .cloned()
        .collect();
    assert!(!convs.is_empty());
    let mut remembered_both = 0;
    let mut q = world.query::<(&Identity, &MemoryStream)>();
    let streams: HashMap<String, MemoryStream> = q
        .iter(world)
        .map(|(i, m)| (i.name.clone(), m.clone()))
        .collect();
    for c in &convs {
        let both = (0..2).all(|k| {
            let nodes = streams[&c.names[k]].nodes();
            let Some(chat) = nodes.iter().find(|n| {
                n.kind == NodeKind::Chat && n.object == c.names[1 - k] && n.chat == c.lines
            }) else {
                return false;
            };
            // A summary in the chat memory, a planning thought and a memo resting on it.
            let on_it = |p: &str| {
                nodes.iter().any(|n| {
                    n.kind == NodeKind::Thought && n.predicate == p && n.evidence.contains(&chat.id)
                })
            };
            !chat.description.is_empty() && on_it("plans") && on_it("remembers")
        });
        if both {
            remembered_both += 1;
        }
    }
    assert!(
        remembered_both >= 1,
        "no conversation is remembered on both sides ({} conversations)",
        convs.len()
    );
    println!(
        "{} conversations ({} remembered on both sides), {} lines; {reached} places reached; object states set {states_set} times, reverted {states_reverted}",
        convs.len(),
        remembered_both,
        log.lines.len()
    );
    assert_eq!(app.world().resource::<SimClock>().step, 8640);

    // The same run again: identical positions and actions at every step.
    let mut again = headless_app(planning_sim("the_ville_n25"));
    for (step, h) in hashes.iter().enumerate() {
        run_steps(&mut again, 1);
        let snap = snapshot(&mut again);
        assert_eq!(
            hash_of(&snap),
            *h,
            "the runs differ at step {step}: {snap:?}"
        );
    }
}
