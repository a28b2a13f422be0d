//! Memory with the scripted backend: residents start with their seed memories and known places,
//! perceive people, the avatar and object states, score and embed what they perceive, reflect
//! when the threshold is crossed (citing memories that exist), load the original project's
//! history files, honour the ablation switches, and do all of it the same way every run.

use bevy::prelude::*;
use simulacra::SimPlugin;
use simulacra::agent::avatar::Avatar;
use simulacra::agent::{GridPos, Identity, Resident};
use simulacra::cognition::config::Ablation;
use simulacra::cognition::resident::scratch::Scratch;
use simulacra::config::GameConfig;
use simulacra::llm::config::{LlmConfig, ScriptRule};
use simulacra::memory::SpatialMemory;
use simulacra::memory::stream::{MemoryStream, NodeKind};
use simulacra::sim::clock::SimClock;
use simulacra::sim::map::WorldMap;
use simulacra::sim::objects_state::ObjectStates;
use simulacra::{headless_app, run_steps};

const INSIGHTS: &str = r#"{"insights": [
 {"insight": "They start the day with the same morning routine", "statements": [1, 2]},
 {"insight": "Their friends matter a great deal to them", "statements": [2]},
 {"insight": "They care about the work they do every day", "statements": [1]},
 {"insight": "Mornings in the dorm are busy and shared", "statements": [2, 1]},
 {"insight": "They notice who is around them", "statements": [1]}]}"#;

fn sim(threshold: u32, importance: &str, ablation: Ablation) -> SimPlugin {
    sim_with(threshold, importance, ablation, INSIGHTS)
}

fn sim_with(threshold: u32, importance: &str, ablation: Ablation, insights: &str) -> SimPlugin {
    let rules = vec![
        ScriptRule { purpose: Some("importance".into()), contains: None, reply: importance.into(), ..Default::default() },
        ScriptRule { purpose: Some("reflect_questions".into()), contains: None, reply: "What does this person care about most?\nWho do they spend time with?\nWhat are they working on?".into(), ..Default::default() },
        ScriptRule { purpose: Some("reflect_insights".into()), contains: None, reply: insights.into(), ..Default::default() },
    ];
    let mut config = GameConfig {
        llm: LlmConfig::scripted(rules),
        ..Default::default()
    };
    config.cognition.reflection_threshold = threshold;
    config.cognition.ablation = ablation;
    config.cognition.planning = simulacra::cognition::config::Planning::Routine;
    SimPlugin::load("the_ville_n3", None, config).unwrap()
}

fn streams(app: &mut App) -> Vec<(String, MemoryStream)> {
    let world = app.world_mut();
    let mut q = world.query_filtered::<(&Identity, &MemoryStream), With<Resident>>();
    let mut v: Vec<(String, MemoryStream)> = q
        .iter(world)
        .map(|(i, m)| (i.name.clone(), m.clone()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn residents_start_with_seed_memories_and_known_places() {
    let mut app = headless_app(sim(150, "3", Ablation::Full));
    run_steps(&mut app, 1);
    let world = app.world_mut();
    let mut q =
        world.query_filtered::<(&Resident, &MemoryStream, &SpatialMemory), With<Resident>>();
    for (r, stream, spatial) in q.iter(world) {
        let seeds = stream.ids_of(NodeKind::Thought);
        assert_eq!(
            seeds.len(),
            r.persona.memories.len(),
            "{}",
            r.persona.spec.name
        );
        assert!(
            stream
                .nodes()
                .iter()
                .any(|n| n.description == r.persona.memories[0])
        );
        let home = r.persona.home_sector.rsplit(':').next().unwrap();
        assert!(
            spatial.knows(home, None, None),
            "{} knows home",
            r.persona.spec.name
        );
        for h in &r.persona.haunts {
            let parts: Vec<&str> = h.split(':').collect();
            assert!(
                spatial.knows(parts[1], Some(parts[2]), None),
                "{} knows {h}",
                r.persona.spec.name
            );
        }
    }
    // Seeds are scored and embedded once the answers are due: memories gather for up to
    // `importance_gather_minutes` (10, i.e. 60 steps), and the answer is due 30 steps later.
    run_steps(&mut app, 100);
    for (name, s) in streams(&mut app) {
        for n in s.nodes() {
            assert!(n.scored, "{name}: {} not scored", n.description);
            assert_eq!(n.importance, 3, "{name}: the scripted score");
            assert!(
                n.embedding
                    .as_ref()
                    .is_some_and(|e| &*e.model == "scripted:scripted"),
                "{name}: {} not embedded",
                n.description
            );
        }
    }
}

#[test]
fn two_hours_from_six_accrue_memories_and_a_reflection_cites_real_memories() {
    let threshold = 25;
    let mut app = headless_app(sim(threshold, "9", Ablation::Full));
    run_steps(&mut app, 6 * 360);
    let before: Vec<usize> = streams(&mut app).iter().map(|(_, s)| s.len()).collect();
    run_steps(&mut app, 2 * 360);
    let after = streams(&mut app);
    let mut reflected = 0;
    for ((name, s), n0) in after.iter().zip(before) {
        assert!(
            s.len() > n0,
            "{name} formed no memories between 06:00 and 08:00"
        );
        let events: u32 = s
            .nodes()
            .iter()
            .filter(|n| n.kind == NodeKind::Event && n.scored)
            .map(|n| n.importance as u32)
            .sum();
        let reflections: Vec<_> = s.nodes().iter().filter(|n| n.is_reflection()).collect();
        if events < threshold {
            assert!(
                reflections.is_empty(),
                "{name} reflected before the threshold ({events} < {threshold})"
            );
        }
        for r in &reflections {
            reflected += 1;
            assert!(r.depth >= 1);
            for e in &r.evidence {
                assert!(
                    s.contains(*e),
                    "{name}: reflection {} cites {e}, which does not exist",
                    r.id
                );
                assert!(e.0 < r.id.0, "evidence is older than the reflection");
            }
            assert!(r.expiry.is_some(), "thoughts expire");
        }
        // Events are what the resident saw: their own actions and the people near them.
        assert!(
            s.nodes()
                .iter()
                .any(|n| n.kind == NodeKind::Event && n.subject == *name),
            "{name} never perceived their own action"
        );
    }
    assert!(
        reflected >= 5,
        "no reflection fired (importance 9 per event, threshold {threshold})"
    );
    // The trigger starts again after a reflection, and each one begun is counted (what `bench
    // day` and the lab report per resident per day): every resident with a reflection began one.
    let world = app.world_mut();
    let mut q = world.query::<(&Identity, &Scratch)>();
    assert!(q.iter(world).all(|(_, s)| s.reflection.remaining > -100));
    for (name, s) in &after {
        let begun = q
            .iter(world)
            .find(|(id, _)| id.name == *name)
            .map(|(_, s)| s.reflection.begun)
            .unwrap();
        if s.nodes().iter().any(|n| n.is_reflection()) {
            assert!(begun >= 1, "{name} reflected, none counted");
        }
    }
}

#[test]
fn insights_that_are_not_words_are_dropped_and_counted() {
    // What the small model wrote in places: numbers and brackets, a name alone.
    let junk = r#"{"insights": [
 {"insight": "1.1.1.1 }, {", "statements": [1]},
 {"insight": "Maria Lopez", "statements": [2]},
 {"insight": "They notice who is around them", "statements": [1]},
 {"insight": "2. 3. 4. 5. 6.", "statements": [2]},
 {"insight": "Mornings in the dorm are busy and shared", "statements": [2, 1]}]}"#;
    let mut app = headless_app(sim_with(25, "9", Ablation::Full, junk));
    run_steps(&mut app, 8 * 360);
    let said: Vec<String> = streams(&mut app)
        .iter()
        .flat_map(|(_, s)| {
            s.nodes()
                .iter()
                .filter(|n| n.is_reflection())
                .map(|n| n.description.clone())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        said.iter().any(|d| d == "They notice who is around them"),
        "{said:?}"
    );
    assert!(
        said.iter().all(|d| d == "They notice who is around them"
            || d == "Mornings in the dorm are busy and shared"),
        "an insight that is not words was kept: {said:?}"
    );
    let counted = app
        .world()
        .resource::<simulacra::cognition::ask::flaws::Fallbacks>();
    assert!(counted.of("insight") >= 3, "{:?}", counted.counts);
}

#[test]
fn the_same_run_twice_remembers_the_same_things() {
    let run = || {
        let mut app = headless_app(sim(30, "7", Ablation::Full));
        run_steps(&mut app, 10 * 360);
        streams(&mut app)
            .into_iter()
            .map(|(name, s)| {
                (
                    name,
                    s.nodes()
                        .iter()
                        .map(|n| {
                            (
                                n.id,
                                n.description.clone(),
                                n.importance,
                                n.created,
                                n.evidence.clone(),
                            )
                        })
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    let a = run();
    let b = run();
    assert_eq!(a, b);
    assert!(a.iter().all(|(_, nodes)| nodes.len() > 8), "{a:?}");
    assert!(
        a.iter()
            .any(|(_, nodes)| nodes.iter().any(|n| !n.4.is_empty())),
        "a reflection happened in both runs"
    );
}

#[test]
fn the_avatar_and_object_states_are_perceived() {
    let mut app = headless_app(sim(1000, "5", Ablation::Full));
    run_steps(&mut app, 9 * 360); // 09:00: Isabella works at the cafe counter
    let map = app.world().resource::<WorldMap>().clone();
    let (isa, isa_tile) = {
        let world = app.world_mut();
        let mut q = world.query_filtered::<(Entity, &Identity, &GridPos), With<Resident>>();
        q.iter(world)
            .find(|(_, i, _)| i.name == "Isabella Rodriguez")
            .map(|(e, _, p)| (e, p.tile))
            .unwrap()
    };
    assert_eq!(map.address(isa_tile).sector, Some("Hobbs Cafe"));
    // The avatar walks into the cafe next to her (placed directly for the test).
    let spot = map
        .walkable_tiles()
        .filter(|t| {
            map.arena_at(*t) == map.arena_at(isa_tile)
                && t.manhattan(isa_tile) <= 4
                && *t != isa_tile
        })
        .min_by_key(|t| t.manhattan(isa_tile))
        .unwrap();
    {
        let world = app.world_mut();
        let mut q = world.query_filtered::<&mut GridPos, With<Avatar>>();
        *q.single_mut(world).unwrap() = GridPos {
            tile: spot,
            prev: spot,
        };
    }
    // Something in the cafe within her sight starts smoking; something far away too.
    let near = map
        .walkable_tiles()
        .chain(map.tiles_of("the Ville:Hobbs Cafe:cafe").iter().copied())
        .find(|t| {
            map.object_at(*t).is_some()
                && map.arena_at(*t) == map.arena_at(isa_tile)
                && t.x.abs_diff(isa_tile.x) <= 8
                && t.y.abs_diff(isa_tile.y) <= 8
        })
        .unwrap();
    let near_addr = map.address(near).to_string();
    let far_addr = "the Ville:Oak Hill College:library:bookshelf";
    let now = app.world().resource::<SimClock>().now;
    app.world_mut()
        .resource_mut::<ObjectStates>()
        .set(&near_addr, "smoking", None, now);
    app.world_mut()
        .resource_mut::<ObjectStates>()
        .set(far_addr, "smoking", None, now);
    run_steps(&mut app, 2);
    let s = app.world().get::<MemoryStream>(isa).unwrap();
    assert!(
        s.nodes()
            .iter()
            .any(|n| n.description == "Riley Quinn is exploring the Ville"),
        "the avatar was not perceived"
    );
    let object = near_addr.rsplit(':').next().unwrap();
    assert!(
        s.nodes()
            .iter()
            .any(|n| n.description == format!("{object} is smoking") && n.subject == near_addr),
        "{near_addr} was not perceived"
    );
    assert!(
        !s.nodes().iter().any(|n| n.subject == far_addr),
        "an object across town was perceived"
    );
    // Seen once, not again while nothing changes (retention).
    let n = s.len();
    run_steps(&mut app, 20);
    let s = app.world().get::<MemoryStream>(isa).unwrap();
    let repeats = s.nodes()[n..]
        .iter()
        .filter(|x| x.description == "Riley Quinn is exploring the Ville")
        .count();
    assert_eq!(repeats, 0);
}

#[test]
fn history_files_add_thoughts_and_report_unknown_names() {
    let mut app = headless_app(sim(1000, "5", Ablation::Full));
    run_steps(&mut app, 1);
    let dir = crate::temp_dir("history");
    let file = dir.join("agent_history_init_n3.csv");
    std::fs::write(
        &file,
        "Name,Whisper\nMaria Lopez,\"This is very important -- you have a secret crush on Klaus Mueller; You and Klaus Mueller are close friends; \"\n  Klaus Mueler , you like libraries\nIsabella Rodriguez,You are excited to be planning a Potluck at *Hobbs Cafe on February 14th from 5pm*; you love your work at Hobbs Cafe.\n",
    )
    .unwrap();
    let report =
        simulacra::cognition::resident::history::load_history(app.world_mut(), &file).unwrap();
    assert_eq!(
        report.added,
        vec![
            ("Isabella Rodriguez".to_string(), 2),
            ("Maria Lopez".to_string(), 2)
        ]
    );
    assert_eq!(report.problems.len(), 1);
    assert_eq!(report.problems[0].line, 3);
    assert!(
        report.problems[0]
            .message
            .contains("nearest: 'Klaus Mueller'"),
        "{:?}",
        report.problems
    );
    let text = report.describe(&file);
    assert!(text.contains("agent_history_init_n3.csv:3:"), "{text}");
    let maria = streams(&mut app)
        .into_iter()
        .find(|(n, _)| n == "Maria Lopez")
        .unwrap()
        .1;
    assert!(maria.nodes().iter().any(|n| n.kind == NodeKind::Thought
        && n.description
            == "This is very important -- Maria Lopez has a secret crush on Klaus Mueller"));
    assert!(
        maria.ids_with_keyword("klaus mueller").len() >= 2,
        "the thoughts are indexed by the names they mention"
    );
    // The new thoughts are scored and embedded like any memory (gathered, then asked).
    run_steps(&mut app, 100);
    let maria = streams(&mut app)
        .into_iter()
        .find(|(n, _)| n == "Maria Lopez")
        .unwrap()
        .1;
    assert!(
        maria
            .nodes()
            .iter()
            .all(|n| n.scored && n.embedding.is_some())
    );
    // A file that cannot be read as CSV at all is an error naming it.
    std::fs::write(&file, "Name,Whisper\nMaria Lopez,\"never closed\n").unwrap();
    let e =
        simulacra::cognition::resident::history::load_history(app.world_mut(), &file).unwrap_err();
    assert!(e.to_string().contains("agent_history_init_n3.csv:2"), "{e}");
}

#[test]
fn a_long_history_is_scored_and_embedded_once_per_text() {
    let mut app = headless_app(sim(1000, "5", Ablation::Full));
    run_steps(&mut app, 1);
    let dir = crate::temp_dir("long-history");
    let file = dir.join("history.csv");
    // Three residents with 3,000 statements each, every text said twice: a history arrives at
    // once and each text is asked for once (its repeats share the answer).
    let mut csv = String::from("Name,Whisper\n");
    for name in ["Isabella Rodriguez", "Maria Lopez", "Klaus Mueller"] {
        let lines: Vec<String> = (0..3000)
            .map(|i| format!("you remember the {} walk by the river", i % 1500))
            .collect();
        csv.push_str(&format!("{name},\"{}\"\n", lines.join("; ")));
    }
    std::fs::write(&file, csv).unwrap();
    let report =
        simulacra::cognition::resident::history::load_history(app.world_mut(), &file).unwrap();
    assert_eq!(report.added.len(), 3);
    assert!(
        report.added.iter().all(|(_, n)| *n == 3000),
        "{:?}",
        report.added
    );
    run_steps(&mut app, 200);
    let mut texts = 0;
    for (name, s) in streams(&mut app) {
        assert!(
            s.nodes().iter().all(|n| n.scored && n.embedding.is_some()),
            "{name}: every memory of the history is scored and embedded"
        );
        texts += s
            .nodes()
            .iter()
            .map(|n| n.embedding_key.as_str())
            .collect::<std::collections::HashSet<_>>()
            .len();
    }
    let stats = app.world().resource::<simulacra::llm::Llm>().stats();
    let embeds = stats.by_purpose.get("embed").map_or(0, |p| p.calls);
    assert!(
        embeds > 0 && embeds <= texts as u64,
        "{embeds} embeddings asked for {texts} texts: none twice"
    );
}

#[test]
fn ablations_switch_memory_and_reflection_off() {
    let mut app = headless_app(sim(20, "9", Ablation::NoReflection));
    run_steps(&mut app, 8 * 360);
    for (name, s) in streams(&mut app) {
        assert!(s.len() > 5, "{name} still remembers");
        assert!(
            !s.nodes().iter().any(|n| n.is_reflection()),
            "{name} reflected although reflection is off"
        );
    }
    let mut app = headless_app(sim(20, "9", Ablation::NoMemory));
    run_steps(&mut app, 8 * 360);
    for (name, s) in streams(&mut app) {
        assert!(s.is_empty(), "{name} has memories although memory is off");
    }
}

#[test]
fn importance_by_likeness_scores_memories_from_the_scales_examples_without_asking() {
    use simulacra::cognition::config::ImportanceBy;
    use simulacra::llm::Embedding;
    use simulacra::llm::backend::scripted::bag_of_words_vector;
    use simulacra::memory::importance::ImportanceScale;
    let mut sim = sim(150, "3", Ablation::Full);
    sim.config.cognition.importance_by = ImportanceBy::Likeness;
    sim.config.cognition.reflection_threshold_likeness = 150;
    let mut app = headless_app(sim);
    // Seeds and the morning's events: scored as their vectors come (due 30 steps on).
    run_steps(&mut app, 8 * 360);
    let path = std::path::Path::new("config/prompts/importance_scale.txt");
    let scale = ImportanceScale::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap();
    let examples: Vec<Embedding> = scale
        .examples
        .iter()
        .map(|(_, t)| Embedding::unit("scripted:scripted", bag_of_words_vector(t)))
        .collect();
    let examples: Vec<&[f32]> = examples.iter().map(|e| &*e.vector).collect();
    let mut levels = std::collections::BTreeSet::new();
    let (mut scored, mut events) = (0, 0);
    for (name, s) in streams(&mut app) {
        for n in s.nodes() {
            let Some(e) = &n.embedding else { continue };
            assert!(
                n.scored,
                "{name}: '{}' embedded but not scored",
                n.description
            );
            assert_eq!(
                Some(n.importance),
                scale.score(&examples, &e.vector),
                "{name}: '{}' takes the levels of the examples it is most like",
                n.description
            );
            levels.insert(n.importance);
            scored += 1;
            events += (n.kind == NodeKind::Event) as usize;
        }
    }
    assert!(
        scored >= 15 && events >= 3,
        "{scored} memories scored, {events} events"
    );
    assert!(
        levels.len() >= 3,
        "the scores spread over the scale: {levels:?}"
    );
    let stats = app.world().resource::<simulacra::llm::Llm>().stats();
    assert!(
        stats
            .by_purpose
            .get("importance")
            .is_none_or(|p| p.calls == 0),
        "nothing asked of the model for importance"
    );
    // Events counted toward reflection with those scores.
    let world = app.world_mut();
    let mut q = world.query::<&Scratch>();
    assert!(
        q.iter(world).any(|s| s.reflection.remaining < 150),
        "events scored by likeness count toward reflection"
    );
}

#[test]
fn vectors_of_another_model_are_embedded_again() {
    let mut app = headless_app(sim(1000, "5", Ablation::Full));
    run_steps(&mut app, 40);
    // As if loaded from a save made with another embedder.
    {
        let world = app.world_mut();
        let mut q = world.query::<&mut MemoryStream>();
        for mut s in q.iter_mut(world) {
            let ids: Vec<_> = s.nodes().iter().map(|n| n.id).collect();
            for id in ids {
                s.set_embedding(
                    id,
                    simulacra::llm::Embedding {
                        model: "openai:text-embedding-ada-002".into(),
                        vector: vec![1.0; 8].into(),
                    },
                );
            }
        }
    }
    // Within the next game hour every memory is embedded again by the current embedder.
    run_steps(&mut app, 400);
    for (name, s) in streams(&mut app) {
        for n in s.nodes() {
            assert_eq!(
                n.embedding.as_ref().map(|e| &*e.model),
                Some("scripted:scripted"),
                "{name}: {}",
                n.description
            );
        }
    }
}
