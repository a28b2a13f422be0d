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
    let mut config = crate::scripted_config();
    // A line that holds up (the default answer is too short to be one), so talks go on.
    config.llm = simulacra::llm::config::LlmConfig::scripted(vec![crate::talk::rule(
        "converse",
        &crate::talk::line("It is good to see you here today."),
    )]);
    SimPlugin::load(scenario, None, config).expect("bundled scenario loads")
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

/// The state of one resident: (plan source, action source, action, asleep).
fn resident_state(
    app: &mut App,
    name: &str,
) -> (PlanSource, simulacra::agent::ActionSource, String, bool) {
    let e = crate::entity_of(app, name);
    let plan = app.world().get::<DayPlan>(e).expect("a plan");
    let action = app.world().get::<CurrentAction>(e).expect("an action");
    (
        plan.source,
        action.source,
        action.description.clone(),
        action.is_asleep(),
    )
}

/// The window's pacing: the day's plans never hold game time. A resident whose plan is slow to
/// come gets up and follows its routine meanwhile, as does one whose plan came but whose places
/// and objects are still being chosen; one whose plan is in and placed switches to it; and
/// nothing waits for the slow ones.
#[test]
fn under_live_pacing_the_town_lives_on_its_routine_while_the_model_plans() {
    use simulacra::cognition::ask::job::Job;
    use simulacra::cognition::ask::pending::Pending;
    use simulacra::cognition::config::Pacing;
    use simulacra::llm::config::{LlmConfig, ScriptRule};
    let mut config = crate::scripted_config();
    config.cognition.pacing = Pacing::Live;
    // Klaus's plan for the day and the objects of Maria's activities take ten minutes of real
    // time each; everything else comes at once.
    config.llm = LlmConfig::scripted(vec![
        ScriptRule {
            purpose: Some("plan_day".into()),
            contains: Some("what is Klaus Mueller's plan for today".into()),
            reply: r#"{"wake_up_hour": 7, "plan": ["wake up and complete the morning routine", "work on his research paper at the library", "have lunch", "go to bed"]}"#.into(),
            delay_ms: 600_000,
        },
        ScriptRule {
            purpose: Some("act_details".into()),
            contains: Some("Maria Lopez's next steps:".into()),
            reply: "{}".into(),
            delay_ms: 600_000,
        },
    ]);
    let mut app = headless_app(SimPlugin::load("the_ville_n3", None, config).expect("loads"));
    // To 10:00 (the routine has Klaus up by then), a game minute at a time.
    let mut isabella_switched_at = None;
    let (mut maria_on_routine_awake, mut maria_on_plan) = (0, 0);
    for _ in 0..600 {
        run_steps(&mut app, 6);
        let (_, action, _, asleep) = resident_state(&mut app, "Maria Lopez");
        match action {
            simulacra::agent::ActionSource::Routine if !asleep => maria_on_routine_awake += 1,
            simulacra::agent::ActionSource::Plan => maria_on_plan += 1,
            _ => {}
        }
        let (plan, action, _, _) = resident_state(&mut app, "Isabella Rodriguez");
        if isabella_switched_at.is_none()
            && plan == PlanSource::Model
            && action == simulacra::agent::ActionSource::Plan
        {
            isabella_switched_at = Some(app.world().resource::<SimClock>().now.clock_12h());
        }
    }
    let clock = app.world().resource::<SimClock>().clone();
    assert_eq!(clock.now.minute_of_day(), 10 * 60, "time never waited");
    let (plan, action, doing, asleep) = resident_state(&mut app, "Klaus Mueller");
    assert_eq!(plan, PlanSource::Routine, "Klaus's plan has not come");
    assert_eq!(action, simulacra::agent::ActionSource::Routine);
    assert!(!asleep, "Klaus is up on his routine at 10:00: {doing}");
    let klaus = crate::entity_of(&mut app, "Klaus Mueller");
    assert!(
        app.world()
            .get::<Pending>(klaus)
            .expect("pending")
            .any(|j| matches!(j, Job::PlanDay { .. })),
        "his plan is still being made"
    );
    let (plan, _, maria, asleep) = resident_state(&mut app, "Maria Lopez");
    assert_eq!(plan, PlanSource::Model, "Maria's plan came");
    assert_eq!(maria_on_plan, 0, "none of her activities is placed yet");
    assert!(
        !asleep && maria_on_routine_awake >= 60,
        "Maria is up on her routine (awake {maria_on_routine_awake} minutes on it; at 10:00: {maria})"
    );
    let at = isabella_switched_at.expect("Isabella took up her own plan once it came");
    println!(
        "at 10:00 Klaus {doing}, Maria {maria} ({maria_on_routine_awake} minutes awake on her routine); Isabella on her own plan from {at}"
    );
}

/// Where an activity may happen, the place it names comes first and is taken without asking: a
/// library's college, a cafe named, home for what is done at home, the workplace for work;
/// otherwise the current sector comes first and the model is asked, as before.
#[test]
fn the_place_an_activity_names_is_offered_first() {
    let mut app =
        headless_app(SimPlugin::load("the_ville_n25", None, crate::scripted_config()).unwrap());
    run_steps(&mut app, 1);
    let world = app.world_mut();
    let rules = world
        .resource::<simulacra::cognition::act::place::PlaceRules>()
        .clone();
    let map = world.resource::<WorldMap>().clone();
    let mut q = world.query::<(&Identity, &Resident, &simulacra::memory::SpatialMemory)>();
    let people: HashMap<String, (Resident, simulacra::memory::SpatialMemory)> = q
        .iter(world)
        .map(|(i, r, s)| (i.name.clone(), (r.clone(), s.clone())))
        .collect();
    let first = |who: &str, activity: &str| {
        let (r, s) = &people[who];
        let here = r
            .persona
            .home_sector
            .rsplit(':')
            .next()
            .unwrap()
            .to_string();
        simulacra::cognition::act::place::sector_options(
            &rules,
            &r.persona,
            s,
            &map.world,
            Some(&here),
            10 * 60,
            activity,
        )
        .0
        .first()
        .cloned()
        .unwrap_or_default()
    };
    let named = |who: &str, activity: &str| {
        let (r, s) = &people[who];
        simulacra::cognition::act::place::sector_options(
            &rules,
            &r.persona,
            s,
            &map.world,
            None,
            10 * 60,
            activity,
        )
        .1
    };
    assert_eq!(
        named("Carmen Ortiz", "running the Harvey Oak Supply Store"),
        1
    );
    assert_eq!(
        named("Klaus Mueller", "thinking about the day"),
        0,
        "no place named: the model is asked"
    );
    assert_eq!(
        first(
            "Klaus Mueller",
            "working on his research paper in the library"
        ),
        "Oak Hill College"
    );
    assert_eq!(
        first("Klaus Mueller", "having a coffee at Hobbs Cafe"),
        "Hobbs Cafe"
    );
    assert_eq!(
        first("Klaus Mueller", "relaxing at home"),
        "Dorm for Oak Hill College"
    );
    assert_eq!(
        first("Carmen Ortiz", "working"),
        "Harvey Oak Supply Store",
        "her workplace for her work"
    );
    assert_eq!(
        first("Isabella Rodriguez", "thinking about the day"),
        "Isabella Rodriguez's apartment",
        "nothing named: where she is"
    );
}

/// Steps `app` until the clock reads `minute` of the day (or `most` steps have run).
fn run_until_minute(app: &mut App, minute: u32, most: u64) {
    for _ in 0..most {
        if app.world().resource::<SimClock>().now.minute_of_day() >= minute {
            return;
        }
        run_steps(app, 1);
    }
}

#[test]
fn an_activity_refined_before_is_refined_the_same_way_without_asking() {
    use simulacra::cognition::resident::scratch::Scratch;
    let mine = [
        ("setting out the things needed".to_string(), 10),
        ("doing the main part of it".to_string(), 15),
    ];
    let mut asked = Vec::new();
    for reuse in [true, false] {
        let mut config = crate::scripted_config();
        config.cognition.reuse_subtasks = reuse;
        let (mut app, horizon) = planned_by_ten(config);
        // Each resident "did before" the activities of the day not yet in view (the keys in
        // another case): they are given these subtasks.
        let world = app.world_mut();
        let mut q = world.query::<(&Identity, &DayPlan, &mut Scratch)>();
        let mut chosen: Vec<(String, u32, String)> = Vec::new();
        for (id, plan, mut scratch) in q.iter_mut(world) {
            for b in refinable_ahead(plan, horizon) {
                scratch.keep_subtasks(&b.description.to_uppercase(), mine.to_vec());
                chosen.push((id.name.clone(), b.activity, b.description.clone()));
            }
        }
        assert!(!chosen.is_empty(), "activities ahead to refine");
        let stats = |app: &App| {
            let mut s = app.world().resource::<simulacra::llm::Llm>().stats();
            let d = s.purpose("decompose").clone();
            (d.calls, d.reused)
        };
        let (calls_before, reused_before) = stats(&app);
        run_until_minute(&mut app, 16 * 60, 8640);
        let (calls, reused) = stats(&app);
        let mut refined = 0;
        for (name, activity, description) in &chosen {
            // (Not refined: the plan changed meanwhile, a reaction or a conversation.)
            if let Some(with_mine) = refined_into(&mut app, name, *activity, description, &mine) {
                assert_eq!(with_mine, reuse, "{name}: {description}");
                refined += 1;
            }
        }
        let world = app.world_mut();
        let mut q = world.query::<(&Identity, &DayPlan, &Scratch)>();
        assert!(refined > 0, "activities chosen were refined");
        if reuse {
            assert!(
                reused - reused_before >= refined as u64,
                "counted: {reused}"
            );
        } else {
            assert_eq!(reused, 0);
        }
        asked.push(calls - calls_before);
        // What the model gave is kept for the next time.
        assert!(q.iter(world).all(|(_, _, s)| !s.subtasks.is_empty()));
    }
    assert!(asked[0] < asked[1], "fewer asked with reuse: {asked:?}");
}

/// An activity a resident's model placed before (the same words) goes to that place again
/// without asking, where the place is still one it would be offered: fewer places asked with
/// reuse, the reuse counted, activities placed where they were kept; and what the model chose
/// is kept for the next time.
#[test]
fn an_activity_placed_before_goes_to_the_same_place_without_asking() {
    use simulacra::cognition::resident::scratch::Scratch;
    let mut asked = Vec::new();
    for reuse in [true, false] {
        let mut config = crate::scripted_config();
        config.cognition.reuse_places = reuse;
        let (mut app, horizon) = planned_by_ten(config);
        // The scripted day is one activity all day: each resident's hours from 13:00 to 16:00
        // become a new one (not placed yet, past the prefetch horizon), which it "placed
        // before" (in another case) in a room of its own home.
        assert!(horizon < 13 * 60);
        let world = app.world_mut();
        let mut q = world.query::<(&Identity, &Resident, &mut DayPlan, &mut Scratch)>();
        let mut chosen: Vec<(String, u32, String)> = Vec::new();
        // What the model chose in the morning was kept (with reuse on) for the next time.
        let kept: usize = q.iter(world).map(|(_, _, _, s)| s.places.len()).sum();
        assert_eq!(kept > 0, reuse, "places kept by 10:00: {kept}");
        const NEW_GROUP: u32 = 9_000;
        for (id, resident, mut plan, mut scratch) in q.iter_mut(world) {
            let mut changed = false;
            for b in plan.blocks.iter_mut().filter(|b| {
                b.start >= 13 * 60 && b.end <= 16 * 60 && !b.description.starts_with("chatting")
            }) {
                b.description = "tidying up the notes".into();
                b.group = NEW_GROUP;
                changed = true;
            }
            if changed {
                let home = resident.persona.home_arena.clone();
                scratch.places.clear();
                scratch.keep_place("TIDYING UP THE NOTES", &home);
                chosen.push((id.name.clone(), NEW_GROUP, home));
            }
        }
        assert!(!chosen.is_empty(), "activities ahead to place");
        let stats = |app: &App| {
            let mut s = app.world().resource::<simulacra::llm::Llm>().stats();
            let sector = s.purpose("choose_sector").clone();
            let arena = s.purpose("choose_arena").clone();
            (sector.calls + arena.calls, sector.reused + arena.reused)
        };
        let (calls_before, reused_before) = stats(&app);
        run_until_minute(&mut app, 16 * 60, 8640);
        let (calls, reused) = stats(&app);
        let world = app.world_mut();
        let mut q = world.query::<(&Identity, &DayPlan, &Scratch)>();
        let placed_as_kept = chosen
            .iter()
            .filter(|(name, group, home)| {
                q.iter(world)
                    .any(|(id, plan, _)| id.name == *name && plan.places.get(group) == Some(home))
            })
            .count();
        if reuse {
            assert!(reused > reused_before, "reuse counted");
            assert!(placed_as_kept > 0, "placed where kept");
        } else {
            assert_eq!(reused, reused_before);
        }
        asked.push(calls - calls_before);
    }
    assert!(
        asked[0] < asked[1],
        "fewer places asked with reuse: {asked:?}"
    );
}

/// An activity whose words were never refined or placed, but whose embedding is like that of one
/// that was (`cognition.reuse_likeness`; the scripted embedder's vector is a bag of the words of
/// three letters or more, so "so, tidying up the notes" is like "tidying up the notes"), is
/// refined and placed as that one without asking: its words' embedding asked once, the kept
/// subtasks and place used and counted as reused, fewer decompositions and places asked than
/// with likeness off, where the same town asks them all.
#[test]
fn an_activity_like_one_done_before_is_refined_and_placed_as_it_was_without_asking() {
    use simulacra::cognition::resident::scratch::{PackedVector, Scratch};
    use simulacra::llm::backend::scripted::bag_of_words_vector;
    let mine = [
        ("sorting the papers".to_string(), 10),
        ("filing the notes".to_string(), 15),
    ];
    const NEW_GROUP: u32 = 9_000;
    const WORDS: &str = "tidying up the notes";
    const LIKE: &str = "so, tidying up the notes";
    let mut asked = Vec::new();
    for likeness in [0.95, 0.0] {
        let mut config = crate::scripted_config();
        config.cognition.reuse_likeness = likeness;
        let (mut app, horizon) = planned_by_ten(config);
        assert!(horizon < 13 * 60);
        // Each resident's hours from 13:00 to 16:00 become an activity it never did, like one
        // it refined and placed (in a room of its home) before.
        let world = app.world_mut();
        let mut q = world.query::<(&Identity, &Resident, &mut DayPlan, &mut Scratch)>();
        let mut chosen: Vec<(String, Vec<u32>, String)> = Vec::new();
        for (id, resident, mut plan, mut scratch) in q.iter_mut(world) {
            let mut activities = Vec::new();
            for b in plan.blocks.iter_mut().filter(|b| {
                b.start >= 13 * 60
                    && b.end <= 16 * 60
                    && !b.subtask
                    && !b.description.starts_with("chatting")
            }) {
                b.description = WORDS.into();
                b.group = NEW_GROUP;
                activities.push(b.activity);
            }
            if activities.is_empty() {
                continue;
            }
            let home = resident.persona.home_arena.clone();
            assert!(scratch.subtasks_of(WORDS).is_none() && scratch.place_of(WORDS).is_none());
            scratch.keep_subtasks(LIKE, mine.to_vec());
            scratch.keep_place(LIKE, &home);
            scratch.keep_vector(LIKE, PackedVector::pack(&bag_of_words_vector(LIKE)));
            chosen.push((id.name.clone(), activities, home));
        }
        assert!(!chosen.is_empty(), "activities ahead");
        let stats = |app: &App| {
            let mut s = app.world().resource::<simulacra::llm::Llm>().stats();
            let [d, sector, arena, vector] = [
                "decompose",
                "choose_sector",
                "choose_arena",
                "activity_embed",
            ]
            .map(|p| s.purpose(p).clone());
            (
                d.calls + sector.calls + arena.calls,
                d.reused + sector.reused + arena.reused,
                vector.calls,
            )
        };
        let (calls_before, reused_before, vectors_before) = stats(&app);
        run_until_minute(&mut app, 16 * 60, 8640);
        let (calls, reused, vectors) = stats(&app);
        let (mut refined_as_kept, mut placed_as_kept) = (0, 0);
        for (name, activities, home) in &chosen {
            for a in activities {
                if refined_into(&mut app, name, *a, WORDS, &mine) == Some(true) {
                    refined_as_kept += 1;
                }
            }
            let world = app.world_mut();
            let mut q = world.query::<(&Identity, &DayPlan)>();
            let (_, plan) = q.iter(world).find(|(i, _)| i.name == *name).unwrap();
            if plan.places.get(&NEW_GROUP) == Some(home) {
                placed_as_kept += 1;
            }
        }
        if likeness > 0.0 {
            assert!(refined_as_kept > 0, "refined as the like one was");
            assert!(placed_as_kept > 0, "placed where the like one was");
            assert!(reused - reused_before >= 2, "reuse counted");
            assert!(
                (1..=chosen.len() as u64).contains(&(vectors - vectors_before)),
                "the new words embedded once per resident: {}",
                vectors - vectors_before
            );
        } else {
            assert_eq!(
                refined_as_kept, 0,
                "not refined as the like one with likeness off"
            );
            assert_eq!(
                vectors, vectors_before,
                "no embedding asked with likeness off"
            );
        }
        asked.push(calls - calls_before);
    }
    assert!(
        asked[0] < asked[1],
        "fewer decompositions and places asked with likeness: {asked:?}"
    );
}

/// A step a resident did before in the same place (the same words) takes the object, emoji and
/// object state the model gave it then, without asking: fewer details asked with reuse, the reuse
/// counted, and every block decided from what was kept looks as kept.
#[test]
fn a_step_done_before_in_the_same_place_looks_as_it_did_without_asking() {
    use simulacra::cognition::resident::scratch::Scratch;
    let mut asked = Vec::new();
    for reuse in [true, false] {
        let mut config = crate::scripted_config();
        config.cognition.reuse_subtasks = reuse;
        let mut app = headless_app(SimPlugin::load("the_ville_n3", None, config).unwrap());
        run_until_minute(&mut app, 16 * 60, 8640);
        let d = app
            .world()
            .resource::<simulacra::llm::Llm>()
            .stats()
            .purpose("act_details")
            .clone();
        asked.push(d.calls);
        let world = app.world_mut();
        let mut q = world.query::<(&Identity, &DayPlan, &Scratch)>();
        let mut matched = 0;
        for (id, plan, scratch) in q.iter(world) {
            assert!(!scratch.details.is_empty(), "{}: details kept", id.name);
            for b in plan.blocks.iter().filter(|b| b.decided()) {
                let Some(arena) = plan.places.get(&b.group) else {
                    continue;
                };
                let Some(k) = scratch.details_of(arena, &b.description) else {
                    continue;
                };
                // Kept from this very block, or given to it from what was kept.
                assert_eq!(b.emoji, k.emoji, "{}: {}", id.name, b.description);
                let object = format!("{arena}:{}", k.object);
                assert!(
                    b.address == object || b.address == *arena,
                    "{}: {} at {}",
                    id.name,
                    b.description,
                    b.address
                );
                matched += 1;
            }
        }
        assert!(matched > 0, "blocks decided with kept details");
        if reuse {
            assert!(d.reused > 0, "reuse counted: {d:?}");
        } else {
            assert_eq!(d.reused, 0);
        }
    }
    assert!(
        asked[0] < asked[1],
        "fewer details asked with reuse: {asked:?}"
    );
}

/// The 3-resident town at 10:00, its day planned and what was asked for by then come, and the
/// minute of the day up to which subtasks are asked for ahead.
fn planned_by_ten(config: simulacra::config::GameConfig) -> (App, u32) {
    let mut app = headless_app(SimPlugin::load("the_ville_n3", None, config).unwrap());
    run_until_minute(&mut app, 10 * 60, 8640);
    let now = app.world().resource::<SimClock>().now.minute_of_day();
    let cognition = app
        .world()
        .resource::<simulacra::cognition::config::Cognition>();
    let horizon = now + cognition.0.prefetch_minutes;
    (app, horizon)
}

/// The activities of `plan` worth refining that start after `horizon` (not yet in view at
/// 10:00) and end by 16:00.
fn refinable_ahead(
    plan: &DayPlan,
    horizon: u32,
) -> impl Iterator<Item = &simulacra::agent::schedule::Block> {
    use simulacra::cognition::day::decompose::refinable;
    plan.blocks
        .iter()
        .filter(move |b| refinable(b) && b.start > horizon && b.end <= 16 * 60)
}

/// Whether `name`'s `activity` was refined into exactly `tasks` (None: it has no subtasks).
fn refined_into(
    app: &mut App,
    name: &str,
    activity: u32,
    description: &str,
    tasks: &[(String, u32)],
) -> Option<bool> {
    let world = app.world_mut();
    let mut q = world.query::<(&Identity, &DayPlan)>();
    let (_, plan) = q.iter(world).find(|(i, _)| i.name == name).unwrap();
    let subs: Vec<&str> = plan
        .blocks
        .iter()
        .filter(|b| b.activity == activity && b.subtask)
        .map(|b| b.description.as_str())
        .collect();
    (!subs.is_empty()).then(|| {
        subs.iter().all(|d| {
            tasks
                .iter()
                .any(|(t, _)| *d == format!("{description} ({t})"))
        })
    })
}

#[test]
fn an_activity_someone_else_refined_before_is_refined_their_way_when_shared() {
    use simulacra::cognition::resident::scratch::Scratch;
    let theirs = [
        ("laying out what it needs".to_string(), 10),
        ("getting on with it".to_string(), 15),
    ];
    for share in [true, false] {
        let mut config = crate::scripted_config();
        config.cognition.share_subtasks = share;
        let (mut app, horizon) = planned_by_ten(config);
        // The first resident by name has not refined the activities ahead of it; the others
        // have (their keys in another case).
        let world = app.world_mut();
        let mut q = world.query::<(&Identity, &DayPlan, &mut Scratch)>();
        let mut people: Vec<(String, Vec<(u32, String)>)> = q
            .iter(world)
            .map(|(id, plan, _)| {
                let ahead =
                    refinable_ahead(plan, horizon).map(|b| (b.activity, b.description.clone()));
                (id.name.clone(), ahead.collect())
            })
            .collect();
        people.sort();
        let (me, ahead) = people[0].clone();
        assert!(!ahead.is_empty(), "activities ahead to refine");
        for (id, _, mut scratch) in q.iter_mut(world) {
            for (_, d) in &ahead {
                if id.name == me {
                    scratch.subtasks.retain(|(k, _)| !k.eq_ignore_ascii_case(d));
                } else {
                    scratch.keep_subtasks(&d.to_uppercase(), theirs.to_vec());
                }
            }
        }
        run_until_minute(&mut app, 16 * 60, 8640);
        let mut refined = 0;
        for (activity, description) in &ahead {
            if let Some(with_theirs) = refined_into(&mut app, &me, *activity, description, &theirs)
            {
                assert_eq!(with_theirs, share, "{me}: {description}");
                refined += 1;
            }
        }
        assert!(refined > 0, "activities chosen were refined");
    }
}

/// A decomposition the model answered with nothing usable (times where subtasks belong, as the
/// bundled model often does) leaves the activity one block and is kept as such: the resident,
/// and with `share_subtasks` the town, does not ask for the same words again.
#[test]
fn an_activity_answered_with_nothing_usable_is_not_asked_for_again() {
    use simulacra::cognition::resident::scratch::Scratch;
    let mut asked = Vec::new();
    for (reuse, share) in [(true, true), (true, false), (false, false)] {
        let mut config = crate::scripted_config();
        config.cognition.reuse_subtasks = reuse;
        config.cognition.share_subtasks = share;
        config.llm = simulacra::llm::config::LlmConfig::scripted(vec![crate::talk::rule(
            "decompose",
            r#"{"subtasks": ["07:00", "08:00"], "subtasks_minutes": [10, 15]}"#,
        )]);
        let mut app = headless_app(SimPlugin::load("the_ville_n3", None, config).unwrap());
        run_until_minute(&mut app, 20 * 60, 8640);
        let mut stats = app.world().resource::<simulacra::llm::Llm>().stats();
        let d = stats.purpose("decompose").clone();
        asked.push(d.calls);
        let world = app.world_mut();
        let mut q = world.query::<(&DayPlan, &Scratch)>();
        let mut kept_as_none = 0;
        for (plan, scratch) in q.iter(world) {
            // Each refined activity is one "continuing" block under its own words.
            assert!(plan.blocks.iter().all(|b| !b.description.contains("07:00")));
            kept_as_none += scratch
                .subtasks
                .iter()
                .filter(|(_, t)| t.is_empty())
                .count();
        }
        // (Kept whether or not reused; with sharing a resident may have asked nothing itself.)
        assert!(kept_as_none > 0, "kept as none");
        assert_eq!(d.reused > 0, reuse, "reused: {}", d.reused);
    }
    assert!(
        asked[0] < asked[1] && asked[1] < asked[2],
        "fewer asked with reuse, fewer still shared: {asked:?}"
    );
}
