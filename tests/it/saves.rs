//! Saves: a run split by a save and a load equals the straight run, field by field; saves
//! survive a SIGKILL at any moment; damaged saves are refused with the file and the problem.

use super::plan_day::planning_sim;
use super::temp_dir;
use bevy::prelude::*;
use simulacra::cognition::pending::Job;
use simulacra::save::{SaveData, capture, save_named};
use simulacra::sim::time::GameTime;
use simulacra::{SimPlugin, headless_app, run_steps};
use std::collections::HashMap;
use std::path::Path;

/// The scripted planning scenario from 07:00, saving into `dir`, autosave off.
fn sim_from_seven(scenario: &str, dir: &Path) -> SimPlugin {
    let mut sim = planning_sim(scenario);
    sim.scenario.start = GameTime::parse("2023-02-13 07:00").unwrap();
    sim.config.saves.dir = dir.display().to_string();
    sim.config.saves.autosave_minutes = 0;
    sim
}

/// Names for the entities of a save: people by name, conversations by their place in order.
fn labels(d: &SaveData) -> HashMap<u64, String> {
    let mut m: HashMap<u64, String> = d.agents.iter().map(|a| (a.entity, a.name.clone())).collect();
    for (i, c) in d.world.conversations.iter().enumerate() {
        m.insert(c.entity, format!("conversation {i}"));
    }
    m
}

fn label(m: &HashMap<u64, String>, e: Entity) -> String {
    m.get(&e.to_bits()).cloned().unwrap_or_else(|| "gone".into())
}

fn job_text(m: &HashMap<u64, String>, j: &Job) -> String {
    match j {
        Job::React { target, options } => format!("React({}, {options:?})", label(m, *target)),
        Job::ChatQuery { conversation } => format!("ChatQuery({})", label(m, *conversation)),
        Job::Utterance { conversation } => format!("Utterance({})", label(m, *conversation)),
        Job::ChatMemory { conversation } => format!("ChatMemory({})", label(m, *conversation)),
        other => format!("{other:?}"),
    }
}

/// Compares two whole simulations field by field (entities by what they stand for).
fn assert_same(a: &SaveData, b: &SaveData) {
    let (la, lb) = (labels(a), labels(b));
    assert_eq!(a.world.clock, b.world.clock, "clock");
    assert_eq!(a.world.objects, b.world.objects, "object states");
    assert_eq!(a.agents.len(), b.agents.len());
    for (x, y) in a.agents.iter().zip(&b.agents) {
        let n = &x.name;
        assert_eq!(x.name, y.name);
        assert_eq!(x.pos, y.pos, "{n}: position");
        assert_eq!(x.facing, y.facing, "{n}: facing");
        assert_eq!(x.action, y.action, "{n}: action");
        assert_eq!(x.walk, y.walk, "{n}: walk");
        assert_eq!(x.speech, y.speech, "{n}: speech");
        assert_eq!(
            x.talking.map(|t| (label(&la, t.conversation), label(&la, t.partner))),
            y.talking.map(|t| (label(&lb, t.conversation), label(&lb, t.partner))),
            "{n}: talking"
        );
        let (Some(p), Some(q)) = (&x.mind, &y.mind) else {
            assert_eq!(x.mind.is_some(), y.mind.is_some(), "{n}: mind");
            continue;
        };
        assert_eq!(p.outlook, q.outlook, "{n}: outlook");
        let mut sp = p.scratch.clone();
        let mut sq = q.scratch.clone();
        (sp.chatting_with, sq.chatting_with) = (None, None);
        assert_eq!(sp, sq, "{n}: scratch");
        assert_eq!(
            p.chatting_with.and_then(|e| la.get(&e)),
            q.chatting_with.and_then(|e| lb.get(&e)),
            "{n}: chatting with"
        );
        assert_eq!(p.plan, q.plan, "{n}: plan");
        assert_eq!(p.spatial, q.spatial, "{n}: spatial memory");
        assert_eq!(p.memory.len(), q.memory.len(), "{n}: number of memories");
        for (u, v) in p.memory.nodes().iter().zip(q.memory.nodes()) {
            assert_eq!(u, v, "{n}: memory {}", u.id);
        }
        assert_eq!(p.memory_work, q.memory_work, "{n}: memory work");
        assert_eq!(p.replan, q.replan, "{n}: replan");
        let jobs = |m: &HashMap<u64, String>, pd: &simulacra::cognition::pending::Pending| {
            pd.jobs()
                .iter()
                .map(|j| (job_text(m, &j.job), j.due, j.request.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(jobs(&la, &p.pending), jobs(&lb, &q.pending), "{n}: LLM work in flight");
    }
    assert_eq!(a.embeddings, b.embeddings, "memory vectors");
    let convs = |d: &SaveData, m: &HashMap<u64, String>| {
        d.world
            .conversations
            .iter()
            .map(|c| {
                let c = &c.conversation;
                (
                    c.names.clone(),
                    c.people.map(|e| label(m, e)),
                    c.lines.clone(),
                    c.next,
                    c.started,
                    c.ended,
                    c.closing,
                    c.max_lines,
                    c.next_turn,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(convs(a, &la), convs(b, &lb), "conversations");
    let log = |d: &SaveData, m: &HashMap<u64, String>| {
        d.world
            .log
            .iter()
            .map(|l| (l.at, label(m, l.conversation), l.speaker.clone(), l.listener.clone(), l.text.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(log(a, &la), log(b, &lb), "the town's conversation log");
    assert_eq!(a.movement.frames, b.movement.frames, "movement log");
}

#[test]
fn a_run_saved_and_loaded_halfway_equals_the_straight_run() {
    let dir = temp_dir("round-trip");
    let mut straight = headless_app(sim_from_seven("the_ville_n25", &dir));
    run_steps(&mut straight, 1000);
    let a = capture(straight.world_mut(), "straight").unwrap();

    let mut first = headless_app(sim_from_seven("the_ville_n25", &dir));
    run_steps(&mut first, 500);
    let saved = save_named(first.world_mut(), "half").unwrap();
    drop(first);
    let config = sim_from_seven("the_ville_n25", &dir).config;
    let mut second = headless_app(SimPlugin::from_save(&saved, config).unwrap());
    run_steps(&mut second, 500);
    let b = capture(second.world_mut(), "second").unwrap();

    let talks = a.world.log.len();
    let in_flight: usize = a
        .agents
        .iter()
        .filter_map(|x| x.mind.as_ref())
        .map(|m| m.pending.len())
        .sum();
    eprintln!(
        "step {}: {} lines said, {} memories, {} LLM jobs in flight at the end",
        a.world.clock.step,
        talks,
        a.agents.iter().filter_map(|x| x.mind.as_ref()).map(|m| m.memory.len()).sum::<usize>(),
        in_flight
    );
    assert_eq!(a.world.clock.step, 1000);
    assert!(talks > 0, "the comparison covers conversations");
    assert_same(&a, &b);
    let _ = std::fs::remove_dir_all(&dir);
}
