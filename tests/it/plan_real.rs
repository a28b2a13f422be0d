//! Planning, acting and talking with the real small model (SmolLM2-135M): the 3-person scenario
//! runs two game hours from 07:00 headless and produces day plans, subtasks that add up, valid
//! places and a conversation; what is heard in it is what was said (a line whose words carry a
//! fact leaves the listener a memory quoting them, one whose words do not leaves nothing);
//! whether the fact seeded in Klaus reaches Maria is the model's doing,
//! reported; the fail-safe answers are counted and reported; the run completes.

use bevy::prelude::*;
use simulacra::SimPlugin;
use simulacra::agent::conversation::{Conversation, ConversationLog};
use simulacra::agent::routine::daily_routine;
use simulacra::agent::schedule::covers_the_day;
use simulacra::agent::{CurrentAction, DayPlan, Identity, PlanSource, Resident, STAY_HERE};
use simulacra::cognition::day::hours::{fits_hour, hour_options};
use simulacra::config::GameConfig;
use simulacra::llm::Llm;
use simulacra::memory::news::{fact_of, trace};
use simulacra::memory::stream::{MemoryStream, NewNode, NodeKind};
use simulacra::sim::map::WorldMap;
use simulacra::{headless_app, run_steps};

#[test]
fn three_residents_plan_and_act_for_two_hours_with_the_real_model() {
    let _model = crate::real_model_lock();
    // The 3-person scenario from 07:00, with Maria and Klaus starting side by side in the dorm's
    // common room, so that they meet.
    let n3 = std::fs::read_to_string(
        simulacra::data::data_root().join("config/scenarios/the_ville_n3.ron"),
    )
    .unwrap();
    let text = n3
        .replace("start: \"2023-02-13 00:00\"", "start: \"2023-02-13 07:00\"")
        .replace("spawn: (114, 50)", "spawn: (110, 58)")
        .replace("spawn: (105, 50)", "spawn: (111, 58)");
    let dir = crate::temp_dir("plan-real");
    let file = dir.join("n3_0700.ron");
    std::fs::write(&file, text).unwrap();
    // The town, on a backend: loaded, one step run, and the fact given to Klaus.
    let start = |llm: simulacra::llm::config::LlmConfig| -> App {
        let sim = SimPlugin::load(
            file.to_str().unwrap(),
            Some("smallville"),
            GameConfig {
                llm,
                ..Default::default()
            },
        )
        .expect("the scenario loads");
        let mut app = headless_app(sim);
        run_steps(&mut app, 1);
        let world = app.world_mut();
        let mut q = world.query::<(&Identity, &mut MemoryStream)>();
        let (_, mut klaus) = q
            .iter_mut(world)
            .find(|(i, _)| i.name == "Klaus Mueller")
            .unwrap();
        klaus.add(
            NodeKind::Thought,
            NewNode {
                subject: "Klaus Mueller".into(),
                predicate: "knows".into(),
                object: FACT.into(),
                description: FACT.into(),
                importance: Some(8),
                ..Default::default()
            },
            simulacra::sim::time::GameTime::parse("2023-02-13 07:00").unwrap(),
        );
        app
    };
    // A fact only Klaus holds (a history statement: he is its first holder).
    const FACT: &str = "Sam Moore is running for mayor of Smallville";
    // Recorded, to be replayed at the end without the model.
    let recording = dir.join("recorded.jsonl");
    let mut llm = crate::memory_real::real_llm();
    llm.record = Some(recording.to_string_lossy().into());
    let mut app = start(llm);
    let map = app.world().resource::<WorldMap>().clone();
    let mut addresses = 0;
    for _ in 0..(2 * 360 / 30) {
        run_steps(&mut app, 30);
        let world = app.world_mut();
        let mut q = world.query_filtered::<(&Identity, &CurrentAction, &DayPlan), With<Resident>>();
        for (id, action, plan) in q.iter(world) {
            assert!(
                covers_the_day(&plan.blocks),
                "{}'s plan does not cover the day",
                id.name
            );
            if !action.address.is_empty() && action.address != STAY_HERE {
                assert!(
                    map.has_address(&action.address),
                    "{} chose {}",
                    id.name,
                    action.address
                );
                addresses += 1;
            }
        }
    }
    let world = app.world_mut();
    let mut q = world.query::<(&Identity, &DayPlan, &MemoryStream, &Resident)>();
    let mut refined = 0;
    for (id, plan, stream, resident) in q.iter(world) {
        println!(
            "{}: wakes {:02}:{:02}; {:?}",
            id.name,
            plan.wake_min / 60,
            plan.wake_min % 60,
            plan.broad
        );
        for b in plan
            .blocks
            .iter()
            .filter(|b| b.end > 7 * 60 && b.start < 10 * 60)
        {
            println!(
                "  {:02}:{:02}-{:02}:{:02} {} {} @ {}",
                b.start / 60,
                b.start % 60,
                b.end / 60,
                b.end % 60,
                b.emoji,
                b.description,
                b.address
            );
        }
        assert_eq!(
            plan.source,
            PlanSource::Model,
            "{} made no plan of its own",
            id.name
        );
        assert!(plan.blocks.len() > 4);
        // The hours were chosen from the plan and the usual activities, each at an hour it fits.
        let routine = daily_routine(&resident.persona, plan.day.unwrap());
        let options = hour_options(&plan.broad, &routine);
        let bed = resident.persona.sleep_min.min(1440);
        for b in plan
            .hourly
            .iter()
            .filter(|b| b.start >= plan.wake_min && b.start < bed)
        {
            let chosen = options
                .iter()
                .chain(routine.iter().map(|r| &r.description))
                .any(|o| b.description == *o || b.description.starts_with(&format!("{o} (")));
            assert!(
                chosen,
                "{}: {:?} is not on the list",
                id.name, b.description
            );
            if options
                .iter()
                .any(|o| b.description.starts_with(o.as_str()))
            {
                assert!(
                    fits_hour(&b.description, b.start / 60, plan.wake_min, bed),
                    "{}: {:?} at {}",
                    id.name,
                    b.description,
                    b.start / 60
                );
            }
        }
        refined += plan.blocks.iter().filter(|b| b.subtask).count();
        assert!(
            stream
                .nodes()
                .iter()
                .any(|n| n.kind == NodeKind::Thought && n.predicate == "plan"),
            "{}'s plan is not a memory",
            id.name
        );
    }
    assert!(refined > 0, "no activity was refined into subtasks");
    assert!(addresses > 0);
    let log = app.world().resource::<ConversationLog>().clone();
    for l in &log.lines {
        println!(
            "{} {} → {}: {} [{:?}{}]",
            l.at.clock_12h(),
            l.speaker,
            l.listener,
            l.text,
            l.topic.as_ref().map(|t| t.kind),
            l.fallback
                .as_ref()
                .map(|f| format!(", template for {f}"))
                .unwrap_or_default()
        );
    }
    // What the small model said is what was heard: a line about news that its words carried
    // left the listener a memory quoting them (unless it held the fact already, and said so);
    // one they did not carry left nothing of its fact from that speaker.
    let world = app.world_mut();
    let streams: std::collections::HashMap<String, MemoryStream> = world
        .query::<(&Identity, &MemoryStream)>()
        .iter(world)
        .map(|(i, s)| (i.name.clone(), s.clone()))
        .collect();
    let mut carried = 0;
    for l in &log.lines {
        let Some(fact) = l.topic.as_ref().and_then(|t| t.fact.as_deref()) else {
            continue;
        };
        let nodes = streams[&l.listener].nodes();
        let heard = nodes.iter().any(|n| {
            n.told
                .as_ref()
                .is_some_and(|t| t.speaker == l.speaker && t.fact == fact)
                && n.description.contains(&format!("\"{}\"", l.text))
        });
        let held_before = nodes
            .iter()
            .any(|n| n.created <= l.at && fact_of(n).as_deref() == Some(fact));
        match l.carried {
            Some(true) => {
                carried += 1;
                assert!(
                    heard || held_before,
                    "words that carried news were not heard: {l:?}"
                );
            }
            Some(false) => assert!(!heard, "words that did not carry news were heard: {l:?}"),
            None => {}
        }
    }
    print!(
        "{}",
        simulacra::cognition::talk::report::talk_report(app.world_mut()).text(3, 2.0)
    );
    // Whether the seeded fact reached Maria is the model's doing: said, not asserted (on the
    // 135M model it mostly does not: docs/society.md).
    match streams["Maria Lopez"]
        .nodes()
        .iter()
        .find(|n| n.told.as_ref().is_some_and(|t| t.fact == FACT))
    {
        Some(heard) => {
            let hops = trace(&|n: &str| streams.get(n), "Maria Lopez", heard.id);
            assert_eq!(
                hops.iter().map(|h| h.holder.as_str()).collect::<Vec<_>>(),
                ["Maria Lopez", "Klaus Mueller"]
            );
            println!(
                "the fact reached Maria in the model's words: {}",
                heard.description
            );
        }
        None => println!(
            "the fact did not reach Maria: {carried} line(s) carried news in the model's words"
        ),
    }
    let world = app.world_mut();
    let convs = world.query::<&Conversation>().iter(world).count();
    let stats = app.world().resource::<Llm>().stats();
    print!("{}", stats.table());
    let fallbacks = stats.total().fallbacks;
    println!(
        "fail-safe answers: {fallbacks} of {} requests",
        stats.total().calls
    );
    assert!(
        convs >= 1 && !log.lines.is_empty(),
        "Maria and Klaus, side by side, never talked"
    );
    // The answers still on their way at the end are waited for (no step runs), so the recording
    // holds an answer to everything the two hours asked, and the counts below are read once
    // every request of the last step has reached the runtime.
    let finish = |app: &mut App| {
        app.world_mut().resource_scope(|world, mut llm: Mut<Llm>| {
            while llm.pending() > 0 {
                let _ = llm.wait_reply(std::time::Duration::from_millis(200), world.entities());
            }
        });
    };
    finish(&mut app);
    let stats = app.world().resource::<Llm>().stats();
    // The recording replayed over the same two hours without a model.
    let mut replay = start(crate::replay_llm(&recording));
    for _ in 0..(2 * 360 / 30) {
        run_steps(&mut replay, 30);
    }
    finish(&mut replay);
    let again = replay.world().resource::<Llm>().stats();
    // Every request was in the recording (a request the recorded run gave up on is recorded
    // as that failure): no miss.
    // (The router publishes its status on its next turn, at most 200 ms on.)
    std::thread::sleep(std::time::Duration::from_millis(500));
    let status = replay.world().resource::<Llm>().status();
    let detail = &status.backends[0].detail;
    assert!(detail.ends_with(", 0 misses"), "replay: {detail}");
    let counts = |s: &simulacra::llm::metrics::LlmStats| -> Vec<(String, u64, u64)> {
        s.by_purpose
            .iter()
            .map(|(n, p)| (n.clone(), p.calls, p.fallbacks))
            .collect()
    };
    // The same requests, each answered from the recording (the fail-safes by purpose are the
    // recorded run's), and so the same town: what is asked follows the state of the
    // town alone, never the model's speed (answers apply at their due steps).
    assert_eq!(
        counts(&again),
        counts(&stats),
        "requests and fail-safes by purpose"
    );
    assert_eq!(
        town(&mut replay),
        town(&mut app),
        "the replayed town is the recorded one"
    );
    let said = |log: &ConversationLog| -> Vec<(String, String, String)> {
        log.lines
            .iter()
            .map(|l| (l.speaker.clone(), l.listener.clone(), l.text.clone()))
            .collect()
    };
    assert_eq!(
        said(replay.world().resource::<ConversationLog>()),
        said(&log),
        "the replay said the same lines"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each resident's memories (kind, what, when) and where it stands, by name.
fn town(app: &mut App) -> Vec<(String, (i32, i32), Vec<(String, String, i64)>)> {
    let world = app.world_mut();
    let mut q = world.query::<(&Identity, &simulacra::agent::GridPos, &MemoryStream)>();
    let mut v: Vec<_> = q
        .iter(world)
        .map(|(id, pos, s)| {
            let memories = s
                .nodes()
                .iter()
                .map(|n| (format!("{:?}", n.kind), n.description.clone(), n.created.0))
                .collect();
            (id.name.clone(), (pos.tile.x, pos.tile.y), memories)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}
