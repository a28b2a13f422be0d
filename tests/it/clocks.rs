//! Residents on clocks of their own (`sim.own_clocks`): while two residents talk, each line slow
//! to come, a resident far from them runs ahead instead of waiting, and the day is the very day
//! the town has in lock-step: the same memories, plans, actions, places and lines.

use crate::talk::{chain, talk, town_with};
use bevy::prelude::*;
use simulacra::agent::conversation::ConversationLog;
use simulacra::agent::{CurrentAction, DayPlan, GridPos, Identity, Resident};
use simulacra::llm::config::ScriptRule;
use simulacra::memory::stream::MemoryStream;
use simulacra::run_steps;
use simulacra::sim::clock::{SimClock, StepGate};
use simulacra::sim::objects_state::ObjectStates;

/// Everything a resident is and did, in name order, the town's lines and its objects.
type Day = (Vec<(String, Vec<String>)>, Vec<String>, String);

fn day_of(app: &mut App) -> Day {
    let world = app.world_mut();
    let mut q = world.query_filtered::<(
        &Identity,
        &GridPos,
        &CurrentAction,
        &DayPlan,
        &MemoryStream,
    ), With<Resident>>();
    let mut people: Vec<(String, Vec<String>)> = q
        .iter(world)
        .map(|(id, pos, act, plan, stream)| {
            let mut v = vec![
                format!("at {}", pos.tile),
                format!(
                    "doing {:?} at {:?} since {:?}",
                    act.description, act.address, act.start
                ),
            ];
            v.extend(
                plan.blocks
                    .iter()
                    .map(|b| format!("plan {}-{} {}", b.start, b.end, b.description)),
            );
            v.extend(stream.nodes().iter().map(|n| {
                format!(
                    "memory {:?} {} {:?} importance {} scored {} accessed {:?}",
                    n.kind, n.created, n.description, n.importance, n.scored, n.last_accessed
                )
            }));
            (id.name.clone(), v)
        })
        .collect();
    people.sort();
    let mut lines: Vec<String> = world
        .resource::<ConversationLog>()
        .lines
        .iter()
        .map(|l| format!("{} {}→{}: {}", l.at.hh_mm(), l.speaker, l.listener, l.text))
        .collect();
    lines.sort();
    let objects = format!("{:?}", world.resource::<ObjectStates>().states);
    (people, lines, objects)
}

/// The three-resident town from 09:00: Isabella and Maria talk (each line a while in coming,
/// everything else at once); an hour of the town, then what it holds.
fn talk_and_go_on(own_clocks: bool) -> (Day, u64, u64) {
    let slow: Vec<ScriptRule> = chain(&[
        "Good morning Maria, how are your studies going?",
        "Busy, Isabella, I have an exam on Friday.",
        "Then you deserve a good coffee before it.",
        "I will take a latte, thank you very much.",
        "Coming right up, and good luck with the exam.",
        "Thanks, I will tell you how it went.",
    ])
    .into_iter()
    .map(|r| ScriptRule { delay_ms: 40, ..r })
    .collect();
    let mut app = town_with(slow, "2023-02-13 09:00", |c| {
        c.sim.own_clocks = own_clocks;
    });
    run_steps(&mut app, 1);
    talk(&mut app, "Isabella Rodriguez", "Maria Lopez");
    run_steps(&mut app, 360);
    let gate = app.world().resource::<StepGate>();
    let (passes, ahead) = (gate.passes, gate.most_ahead);
    assert_eq!(
        app.world().resource::<SimClock>().now.hh_mm(),
        "10:00",
        "everyone at one step when the steps asked for are done"
    );
    (day_of(&mut app), passes, ahead)
}

#[test]
fn a_resident_far_from_a_slow_conversation_runs_ahead_and_the_day_is_the_lock_step_day() {
    let (lockstep, passes, _) = talk_and_go_on(false);
    assert_eq!(passes, 0, "lock-step runs no passes");
    assert!(lockstep.1.len() >= 6, "the two talked: {:?}", lockstep.1);
    let (own, passes, ahead) = talk_and_go_on(true);
    assert!(
        passes > 360 && ahead >= 3,
        "Klaus ran ahead while the two waited for their lines: {passes} passes, at most {ahead} steps ahead"
    );
    same_day(&own, &lockstep);
}

/// The 25-resident town planning with the scripted model from 07:00, its lines slow to come:
/// two game hours, then what it holds.
fn town_of_25(own_clocks: bool) -> (Day, u64, u64) {
    let mut config = crate::scripted_config();
    let lines = chain(&[
        "Good morning, did you sleep well?",
        "I did, thank you, and you?",
        "Not bad at all, the weather is lovely.",
        "It is, I might walk to the park later.",
    ]);
    config.llm = simulacra::llm::config::LlmConfig::scripted(
        lines
            .into_iter()
            .map(|r| ScriptRule { delay_ms: 15, ..r })
            .collect(),
    );
    config.sim.own_clocks = own_clocks;
    let mut sim = simulacra::SimPlugin::load("the_ville_n25", None, config).expect("loads");
    sim.scenario.start = simulacra::sim::time::GameTime::parse("2023-02-13 07:00").unwrap();
    let mut app = simulacra::headless_app(sim);
    for _ in 0..12 {
        run_steps(&mut app, 60);
    }
    let gate = app.world().resource::<StepGate>();
    let (passes, ahead) = (gate.passes, gate.most_ahead);
    (day_of(&mut app), passes, ahead)
}

#[test]
fn twenty_five_residents_on_their_own_clocks_have_the_lock_step_day() {
    let (lockstep, _, _) = town_of_25(false);
    let (own, passes, ahead) = town_of_25(true);
    eprintln!(
        "{passes} passes, at most {ahead} steps ahead, {} lines",
        own.1.len()
    );
    assert!(lockstep.1.len() >= 20, "they talked: {:?}", lockstep.1);
    assert!(passes > 720 && ahead >= 3, "{passes} passes, {ahead} ahead");
    same_day(&own, &lockstep);
}

fn same_day(own: &Day, lockstep: &Day) {
    assert_eq!(own.1, lockstep.1, "the same lines");
    assert_eq!(own.2, lockstep.2, "the same objects");
    for ((name, a), (_, b)) in own.0.iter().zip(&lockstep.0) {
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x, y, "{name}");
        }
        assert_eq!(a.len(), b.len(), "{name}");
    }
}
