//! Conversations that carry news, with the scripted backend: a fact told by A to B and by B to C
//! is held by C with the chain C ← B ← A; an accepted invitation puts the gathering into the
//! invitee's plan at its place and time and the invitee is there; a refused one keeps its
//! reason; a line that is only a name is replaced by its topic's template and counted; a line's
//! prompt lists no more memories than configured; a surprise is kept from the one it is for;
//! nobody is told back what they told; a party heard of second-hand is a choice to go; an
//! invitation for a day not planned yet is weighed against the usual day; a refusal names the
//! plan item in its way; news the listener heard already is said to be known, not heard twice;
//! what one knows of another is the note of their last talk, and their next talk reads it.

use crate::{entity_of, stand_beside};
use bevy::ecs::system::RunSystemOnce;
use bevy::prelude::*;
use simulacra::SimPlugin;
use simulacra::agent::commitments::Commitments;
use simulacra::agent::conversation::{
    Conversation, ConversationLog, Party, TopicKind, start_conversation,
};
use simulacra::agent::{CurrentAction, DayPlan, GridPos, Identity, WalkPath};
use simulacra::cognition::ask::flaws::{Fallbacks, Flaw};
use simulacra::cognition::resident::scratch::Scratch;
use simulacra::config::GameConfig;
use simulacra::headless::run_console_line;
use simulacra::llm::config::{LlmConfig, ScriptRule};
use simulacra::memory::news::{first_hand, trace};
use simulacra::memory::stream::MemoryStream;
use simulacra::sim::clock::SimClock;
use simulacra::sim::map::WorldMap;
use simulacra::sim::objects_state::ObjectStates;
use simulacra::sim::time::GameTime;
use simulacra::{headless_app, run_steps};
use std::collections::HashMap;

pub(crate) fn rule(purpose: &str, reply: &str) -> ScriptRule {
    ScriptRule {
        purpose: Some(purpose.into()),
        contains: None,
        reply: reply.into(),
        ..Default::default()
    }
}

/// The three-resident town on the daily routine, the scripted backend answering with `rules`,
/// from `start`.
pub(crate) fn town(rules: Vec<ScriptRule>, start: &str) -> App {
    town_with(rules, start, |_| {})
}

/// [`town`] with a change to its config.
pub(crate) fn town_with(
    rules: Vec<ScriptRule>,
    start: &str,
    change: impl FnOnce(&mut GameConfig),
) -> App {
    let mut config = GameConfig {
        llm: LlmConfig::scripted(rules),
        ..Default::default()
    };
    config.cognition.planning = simulacra::cognition::config::Planning::Routine;
    change(&mut config);
    let mut sim = SimPlugin::load("the_ville_n3", None, config).expect("bundled scenario loads");
    sim.scenario.start = GameTime::parse(start).unwrap();
    headless_app(sim)
}

/// Starts a conversation between two residents (the first speaks first), wherever they are,
/// after any they are in has ended. (Whether two residents stop to talk is the reaction step's
/// business, tested elsewhere.)
pub(crate) fn talk(app: &mut App, a: &str, b: &str) -> Entity {
    let (ea, eb) = (entity_of(app, a), entity_of(app, b));
    crate::wait_until_free(app, &[ea, eb], 5, 200);
    // Side by side, so the talk starts at once.
    stand_beside(app, eb, ea);
    app.world_mut()
        .run_system_once(
            move |mut commands: Commands,
                  map: Res<WorldMap>,
                  clock: Res<SimClock>,
                  mut objects: ResMut<ObjectStates>,
                  mut q: Query<(&Identity, &mut CurrentAction, &mut WalkPath, &GridPos)>| {
                let [mut x, mut y] = q.get_many_mut([ea, eb]).unwrap();
                let (nx, px) = (x.0.name.clone(), *x.3);
                let (ny, py) = (y.0.name.clone(), *y.3);
                start_conversation(
                    &mut commands,
                    &map,
                    &clock,
                    &mut objects,
                    Party { entity: ea, name: nx, action: &mut x.1, walk: &mut x.2, pos: px, walks: true },
                    Party { entity: eb, name: ny, action: &mut y.1, walk: &mut y.2, pos: py, walks: true },
                    12,
                )
            },
        )
        .unwrap()
}

/// Runs until a conversation has ended (at most `steps`).
pub(crate) fn until_over(app: &mut App, conv: Entity, steps: u32) {
    for _ in 0..steps / 5 {
        run_steps(app, 5);
        if app
            .world()
            .get::<Conversation>(conv)
            .is_some_and(|c| c.ended.is_some())
        {
            run_steps(app, 5);
            return;
        }
    }
    panic!(
        "the conversation did not end in {steps} steps: {:#?}",
        app.world().get::<Conversation>(conv)
    );
}

/// A `converse` answer about topic 1 (the first offered) in these words.
pub(crate) fn line(words: &str) -> String {
    format!(r#"{{"end_conversation": false, "topic": 1, "utterance": "{words}"}}"#)
}

/// A rule for `purpose` prompts that contain `contains`.
pub(crate) fn rule_if(purpose: &str, contains: &str, reply: &str) -> ScriptRule {
    ScriptRule {
        contains: Some(contains.into()),
        ..rule(purpose, reply)
    }
}

/// A conversation whose lines come in this order, each its own words: the rule for a line
/// matches a prompt holding the line before it (the first match wins, so the later lines come
/// first); the first line is any other `converse` prompt's.
pub(crate) fn chain(lines: &[&str]) -> Vec<ScriptRule> {
    let mut rules: Vec<ScriptRule> = (1..lines.len())
        .rev()
        .map(|i| {
            rule_if(
                "converse",
                &format!("\"{}\"", lines[i - 1]),
                &line(lines[i]),
            )
        })
        .collect();
    rules.push(rule("converse", &line(lines[0])));
    rules
}

/// What the model says in the news tests: each resident tells the candidacy and invites to
/// the party in words that carry them when they are the topic, says it had heard news already
/// and from whom when that is its topic, says yes to the candidacy's probe naming Sam, and
/// otherwise makes small talk.
pub(crate) fn candidacy_rules() -> Vec<ScriptRule> {
    vec![
        rule_if(
            "converse",
            "you had already heard from Klaus",
            &line("Yes, Klaus told me that already."),
        ),
        rule_if(
            "converse",
            "you had already heard",
            &line("Yes, I knew that already."),
        ),
        rule_if(
            "converse",
            "invite Maria Lopez to",
            &line(
                "Maria, I am holding a Valentine's Day party at Hobbs Cafe, would you like to come?",
            ),
        ),
        rule_if(
            "converse",
            "invite Klaus Mueller to",
            &line(
                "Klaus, I am holding a Valentine's Day party at Hobbs Cafe, would you like to come?",
            ),
        ),
        rule_if(
            "converse",
            "tell Klaus Mueller: Isabella Rodriguez is holding",
            &line("Klaus, Isabella is holding a Valentine's Day party at Hobbs Cafe today!"),
        ),
        rule_if(
            "converse",
            "tell Maria Lopez: Sam Moore",
            &line("Maria, did you hear that Sam Moore is running for mayor?"),
        ),
        rule_if(
            "converse",
            "tell Isabella Rodriguez: Sam Moore",
            &line("Isabella, Sam Moore is running for mayor of Smallville!"),
        ),
        rule_if(
            "converse",
            "tell Klaus Mueller: Sam Moore",
            &line("Klaus, Sam Moore is running for mayor, I heard."),
        ),
        rule_if(
            "lab_probe",
            "running for mayor",
            r#"{"answer": "yes", "says": "Yes, Sam Moore is running for mayor."}"#,
        ),
        rule("converse", &line("It is nice to see you today.")),
    ]
}

/// The three-resident town at 10:00 after Klaus, whispered that Sam Moore is running for mayor
/// of Smallville, talked with Maria (he speaks first), each saying what [`candidacy_rules`]
/// has them say.
pub(crate) fn klaus_told_maria() -> App {
    klaus_told_maria_with(candidacy_rules(), |_| {})
}

/// [`klaus_told_maria`] with these rules and a change to the config.
fn klaus_told_maria_with(rules: Vec<ScriptRule>, change: impl FnOnce(&mut GameConfig)) -> App {
    let mut app = town_with(rules, "2023-02-13 10:00", change);
    run_steps(&mut app, 2);
    run_console_line(
        &mut app,
        "whisper Klaus Sam Moore is running for mayor of Smallville",
    );
    let c = talk(&mut app, "Klaus Mueller", "Maria Lopez");
    until_over(&mut app, c, 600);
    app
}

fn streams(app: &mut App) -> HashMap<String, MemoryStream> {
    let w = app.world_mut();
    let mut q = w.query::<(&Identity, &MemoryStream)>();
    q.iter(w)
        .map(|(i, s)| (i.name.clone(), s.clone()))
        .collect()
}

#[test]
fn a_fact_told_from_a_to_b_to_c_is_held_by_c_with_its_chain_to_the_first_holder() {
    let mut app = klaus_told_maria();
    let c2 = talk(&mut app, "Maria Lopez", "Isabella Rodriguez");
    until_over(&mut app, c2, 600);
    let all = streams(&mut app);
    let look = |n: &str| all.get(n);
    // Maria heard the whisper from Klaus, with where it came from.
    let maria = &all["Maria Lopez"];
    let mayor = maria
        .nodes()
        .iter()
        .find(|n| {
            n.told
                .as_ref()
                .is_some_and(|t| t.fact.contains("running for mayor"))
        })
        .unwrap_or_else(|| {
            panic!(
                "Maria heard the news: {:#?}",
                app.world().resource::<ConversationLog>().lines
            )
        });
    // In the words Klaus said.
    assert_eq!(
        mayor.description,
        "Klaus Mueller told me: \"Maria, did you hear that Sam Moore is running for mayor?\""
    );
    let hops = trace(&look, "Maria Lopez", mayor.id);
    assert_eq!(
        hops.iter().map(|h| h.holder.as_str()).collect::<Vec<_>>(),
        ["Maria Lopez", "Klaus Mueller"]
    );
    let whisper = all["Klaus Mueller"].get(hops[1].node).unwrap();
    assert!(
        first_hand(whisper) && whisper.description.contains("inner voice"),
        "{whisper:?}"
    );
    assert!(
        hops[0]
            .conversation
            .as_deref()
            .unwrap()
            .starts_with("Klaus Mueller and Maria Lopez")
    );
    // Isabella holds something Maria had from Klaus: Isabella ← Maria ← Klaus.
    let isabella = &all["Isabella Rodriguez"];
    let chains: Vec<Vec<String>> = isabella
        .nodes()
        .iter()
        .filter(|n| n.told.is_some())
        .map(|n| {
            trace(&look, "Isabella Rodriguez", n.id)
                .into_iter()
                .map(|h| h.holder)
                .collect()
        })
        .collect();
    assert!(
        chains
            .iter()
            .any(|c| c == &["Isabella Rodriguez", "Maria Lopez", "Klaus Mueller"]),
        "a fact came to Isabella from Klaus through Maria: {chains:?}"
    );
    // What carried it were the model's words, found to carry it as they were said.
    let log = app.world().resource::<ConversationLog>();
    let carried: Vec<_> = log
        .lines
        .iter()
        .filter(|l| {
            l.carried == Some(true)
                && l.topic
                    .as_ref()
                    .and_then(|t| t.fact.as_deref())
                    .is_some_and(|f| f.contains("mayor"))
        })
        .collect();
    assert_eq!(
        carried.len(),
        2,
        "Klaus to Maria, Maria to Isabella: {:#?}",
        log.lines
    );
}

/// The invitation answer the scripted backend gives, and Maria after Isabella invites her at
/// 16:00 on the party's day.
pub(crate) fn invited(answer: &str) -> (App, Entity) {
    invited_with(answer, |_| {})
}

/// [`invited`] with a change to the town's config.
pub(crate) fn invited_with(answer: &str, change: impl FnOnce(&mut GameConfig)) -> (App, Entity) {
    let mut rules = vec![rule("invite_answer", answer)];
    rules.extend(candidacy_rules());
    let mut app = town_with(rules, "2023-02-14 15:50", change);
    run_steps(&mut app, 30); // memories embedded, plans made
    let c = talk(&mut app, "Isabella Rodriguez", "Maria Lopez");
    until_over(&mut app, c, 900);
    let log = app.world().resource::<ConversationLog>();
    assert!(
        log.lines.iter().any(|l| l.speaker == "Isabella Rodriguez"
            && l.topic
                .as_ref()
                .is_some_and(|t| t.kind == TopicKind::Invitation)
            && l.text.contains("Hobbs Cafe")),
        "Isabella invites Maria: {:#?}",
        log.lines
    );
    let maria = entity_of(&mut app, "Maria Lopez");
    (app, maria)
}

/// With the `plan_gatherings` aid, an accepted invitation is put into the plan by rule (at its
/// place and time) and the invitee is there. (Without it, the plan is the resident's own:
/// `society::a_resident_that_accepts_but_whose_planning_never_includes_the_party_does_not_go`.)
#[test]
fn with_the_plan_gatherings_aid_an_accepted_invitation_goes_into_the_plan() {
    let (mut app, maria) = invited_with(
        r#"{"will_attend": true, "in_the_way": "nothing", "reason": "I love parties"}"#,
        |c| c.cognition.aids.plan_gatherings = true,
    );
    let c = app.world().get::<Commitments>(maria).unwrap().clone();
    assert_eq!(c.list.len(), 1, "{c:?}");
    let g = &c.list[0].gathering;
    assert_eq!(
        (g.start, g.end, g.place.as_str()),
        (17 * 60, 19 * 60, "Hobbs Cafe")
    );
    let plan = app.world().get::<DayPlan>(maria).unwrap();
    let b = &plan.blocks[plan.at(17 * 60 + 30).unwrap()];
    assert_eq!(
        b.description,
        "attending Valentine's Day party at Hobbs Cafe"
    );
    assert!(b.address.starts_with("the Ville:Hobbs Cafe"), "{b:?}");
    let stream = app.world().get::<MemoryStream>(maria).unwrap();
    assert!(
        stream.nodes().iter().any(|n| n.predicate == "will attend"
            && n.description.contains("Isabella Rodriguez invited me"))
    );
    assert!(
        stream.nodes().iter().any(|n| n.predicate == "was invited by"
            && n.description
                == "Isabella Rodriguez invited me: \"Maria, I am holding a Valentine's Day party at Hobbs Cafe, would you like to come?\""),
        "she remembers the words said"
    );
    // Maria's answer is her next line.
    let log = app.world().resource::<ConversationLog>();
    assert!(log.lines.iter().any(|l| l.speaker == "Maria Lopez"
        && l.topic.as_ref().is_some_and(
            |t| t.kind == TopicKind::Answer && t.answer.as_ref().is_some_and(|a| a.0)
        )));
    // At the party, she is there.
    let map = app.world().resource::<WorldMap>().clone();
    let mut seen = false;
    while app.world().resource::<SimClock>().now.minute_of_day() < 18 * 60 + 30 {
        run_steps(&mut app, 30);
        let t = app.world().get::<GridPos>(maria).unwrap().tile;
        seen |= map.address(t).sector == Some("Hobbs Cafe");
    }
    assert!(seen, "Maria is at Hobbs Cafe during the party");
    assert!(
        app.world().get::<Commitments>(maria).unwrap().list[0].kept,
        "and it counts as kept"
    );
}

#[test]
fn a_refused_invitation_keeps_its_reason_and_leaves_the_plan_alone() {
    let (app, maria) = invited(
        r#"{"will_attend": false, "in_the_way": "nothing", "reason": "parties are too loud for me"}"#,
    );
    assert!(
        app.world()
            .get::<Commitments>(maria)
            .unwrap()
            .list
            .is_empty()
    );
    let plan = app.world().get::<DayPlan>(maria).unwrap();
    assert!(plan.blocks.iter().all(|b| !b.description.contains("party")));
    let stream = app.world().get::<MemoryStream>(maria).unwrap();
    let d = stream
        .nodes()
        .iter()
        .find(|n| n.predicate == "declined")
        .expect("the refusal is remembered");
    assert!(
        d.description
            .ends_with("not interested: parties are too loud for me"),
        "{}",
        d.description
    );
    // Her answer is her next line (in her model's words).
    let log = app.world().resource::<ConversationLog>();
    assert!(log.lines.iter().any(|l| {
        l.speaker == "Maria Lopez"
            && l.topic.as_ref().is_some_and(|t| {
                t.kind == TopicKind::Answer && t.about.contains("parties are too loud")
            })
    }));
}

/// A line that is only a name is found and asked for again once (or, with `ask_lines_again`
/// off, not), then replaced by a filler and counted.
#[test]
fn a_line_that_is_only_a_name_is_asked_again_then_replaced_and_counted() {
    for again in [true, false] {
        let mut app = town_with(
            vec![rule(
                "converse",
                r#"{"end_conversation": false, "topic": 1, "utterance": "Maria Lopez"}"#,
            )],
            "2023-02-13 10:00",
            |c| c.cognition.ask_lines_again = again,
        );
        run_steps(&mut app, 2);
        let c = talk(&mut app, "Klaus Mueller", "Maria Lopez");
        until_over(&mut app, c, 600);
        let log = app.world().resource::<ConversationLog>();
        assert!(!log.lines.is_empty());
        for l in &log.lines {
            assert_eq!(l.text, "Hmm.", "a name alone is never said");
            assert_eq!(l.fallback.as_deref(), Some("only a name"), "{l:?}");
            assert!(l.topic.is_some());
        }
        let n = app.world().resource::<Fallbacks>().counts[&("line".to_string(), Flaw::OnlyAName)];
        assert_eq!(n as usize, log.lines.len(), "each replacement counted");
        let lines = log.lines.len() as u64;
        let mut stats = app.world().resource::<simulacra::llm::Llm>().stats();
        let asked = stats.purpose("converse").calls;
        assert_eq!(
            asked,
            if again { 2 * lines } else { lines },
            "again: {again}"
        );
    }
}

/// A conversation line's prompt lists at most `cognition.prompt_memories` memories (and at most the
/// original's 15 when more are allowed): a prompt with an eleventh memory is answered with a line
/// that wishes to end the conversation, so a talk runs to its most lines only when no prompt had
/// one.
#[test]
fn a_conversation_lines_prompt_lists_at_most_the_configured_memories() {
    let lines_with = |prompt_memories: usize| {
        let rules = vec![ScriptRule {
            purpose: Some("converse".into()),
            contains: Some("\n11. ".into()),
            reply:
                r#"{"end_conversation": true, "topic": 1, "utterance": "I must go now, goodbye."}"#
                    .into(),
            ..Default::default()
        }]
        .into_iter()
        .chain(chain(&[
            "Good to see you this morning.",
            "Nice to see you too, Klaus.",
            "How is your studying going lately?",
            "It is going well, thank you for asking.",
            "I am glad to hear that, really.",
            "What are you working on this week?",
            "A long chemistry report for my class.",
            "That sounds like a lot of work.",
            "It is, but I enjoy it very much.",
            "Then I will let you get back to it.",
            "Thank you, see you around, Klaus.",
            "Goodbye for now, Maria, take care.",
        ]))
        .collect();
        // Each line as the model gives it (not asked again when off its topic), so that a
        // wish to end is the line's own.
        let mut app = town_with(rules, "2023-02-13 10:00", |c| {
            c.cognition.prompt_memories = prompt_memories;
            c.cognition.ask_lines_again = false;
        });
        run_steps(&mut app, 2);
        for thing in [
            "the library opens late on Tuesdays",
            "Hobbs Cafe has a new espresso machine",
            "the park's fountain is being repaired",
            "a bakery will open on the main street",
            "the college is hiring a chemistry teacher",
            "the pharmacy sells fresh flowers now",
            "the Rose and Crown Pub holds a quiz on Fridays",
            "the town hall repainted its doors",
        ] {
            run_console_line(&mut app, &format!("whisper Klaus {thing}"));
        }
        run_steps(&mut app, 10);
        let held = streams(&mut app)["Klaus Mueller"].len();
        assert!(held > 10, "Klaus holds {held} memories, too few to tell");
        let c = talk(&mut app, "Klaus Mueller", "Maria Lopez");
        until_over(&mut app, c, 600);
        app.world().resource::<ConversationLog>().lines.len()
    };
    let (ten, thirty) = (lines_with(10), lines_with(30));
    println!("lines: {ten} with 10 memories listed, {thirty} with 30 allowed");
    assert!(
        ten > 3,
        "with 10 memories listed no prompt has an eleventh: {ten} lines"
    );
    // A wish to end closes a talk (once the first exchange is over and the line held up).
    assert!(
        thirty < ten,
        "with 30 allowed, Klaus's prompts list more than 10 (15): {thirty} lines"
    );
}

/// A surprise for a resident is kept from them: the organiser does not invite them to it nor
/// tell them of it, and invites the others.
#[test]
fn a_surprise_party_for_a_resident_is_kept_from_them_and_offered_to_the_others() {
    // After the Valentine's Day party, so the surprise is the only gathering ahead.
    let mut app = town(candidacy_rules(), "2023-02-15 10:00");
    run_steps(&mut app, 2);
    run_console_line(
        &mut app,
        "whisper Isabella Isabella is throwing a surprise party for Klaus at Hobbs Cafe tomorrow from 5pm to 7pm",
    );
    let c1 = talk(&mut app, "Isabella Rodriguez", "Klaus Mueller");
    until_over(&mut app, c1, 600);
    let c2 = talk(&mut app, "Isabella Rodriguez", "Maria Lopez");
    until_over(&mut app, c2, 600);
    let log = app.world().resource::<ConversationLog>();
    let surprise = |t: &str| t.contains("surprise");
    for l in log.lines.iter().filter(|l| l.listener == "Klaus Mueller") {
        let topic = l.topic.as_ref().unwrap();
        assert!(
            !surprise(&l.text) && !topic.fact.as_deref().is_some_and(surprise),
            "Klaus heard of his surprise: {l:#?}"
        );
    }
    assert!(
        log.lines.iter().any(|l| l.listener == "Maria Lopez"
            && l.topic
                .as_ref()
                .is_some_and(|t| t.kind == TopicKind::Invitation
                    && t.gathering.as_ref().is_some_and(|g| surprise(&g.what)))),
        "Maria is invited to it: {:#?}",
        log.lines
    );
}

/// A party heard of second-hand leaves the listener the choice to go: Maria, who declined
/// Isabella's invitation, tells Klaus of the party; Klaus is asked, accepts, and has it in his
/// plan. With `cognition.social.hearsay_invites` off he only holds the fact.
#[test]
fn a_party_heard_of_second_hand_is_a_choice_to_go_unless_switched_off() {
    for hearsay in [true, false] {
        let rules = vec![
            ScriptRule {
                purpose: Some("invite_answer".into()),
                contains: Some("says to Maria Lopez".into()),
                reply: r#"{"will_attend": false, "in_the_way": "nothing", "reason": "I have to study"}"#
                    .into(),
                ..Default::default()
            },
            rule(
                "invite_answer",
                r#"{"will_attend": true, "in_the_way": "nothing", "reason": "I love parties"}"#,
            ),
        ]
        .into_iter()
        .chain(candidacy_rules())
        .collect();
        // The plan_gatherings aid: where the choice to go leads is the plan's (the rule's here).
        let mut app = town_with(rules, "2023-02-14 15:50", |c| {
            c.cognition.social.hearsay_invites = hearsay;
            c.cognition.aids.plan_gatherings = true;
        });
        run_steps(&mut app, 30); // memories embedded, plans made
        let c = talk(&mut app, "Isabella Rodriguez", "Maria Lopez");
        until_over(&mut app, c, 900);
        let maria = entity_of(&mut app, "Maria Lopez");
        assert!(
            app.world()
                .get::<Commitments>(maria)
                .unwrap()
                .list
                .is_empty(),
            "Maria declined"
        );
        let c = talk(&mut app, "Maria Lopez", "Klaus Mueller");
        until_over(&mut app, c, 900);
        let klaus = entity_of(&mut app, "Klaus Mueller");
        let stream = app.world().get::<MemoryStream>(klaus).unwrap();
        let heard = stream
            .nodes()
            .iter()
            .find(|n| {
                n.predicate == "was told by"
                    && n.told.as_ref().is_some_and(|t| {
                        t.speaker == "Maria Lopez" && t.fact.contains("Valentine's Day party")
                    })
            })
            .unwrap_or_else(|| {
                panic!("Klaus heard of the party from Maria: {:#?}", stream.nodes())
            });
        let commitments = app.world().get::<Commitments>(klaus).unwrap().list.len();
        let will_attend = stream.nodes().iter().any(|n| n.predicate == "will attend");
        if hearsay {
            assert!(heard.gathering.is_some(), "the news carries the gathering");
            assert_eq!(commitments, 1, "Klaus chose to go");
            assert!(will_attend);
            let plan = app.world().get::<DayPlan>(klaus).unwrap();
            let b = &plan.blocks[plan.at(17 * 60 + 30).unwrap()];
            assert!(b.address.starts_with("the Ville:Hobbs Cafe"), "{b:?}");
        } else {
            assert!(heard.gathering.is_none(), "only a fact");
            assert_eq!(commitments, 0);
            assert!(!will_attend);
        }
    }
}

/// An invitation for a day not yet planned is weighed against the invitee's usual day (its
/// routine then); switched off, the answer is asked with "no plan made yet".
#[test]
fn an_invitation_for_a_day_not_planned_yet_is_weighed_against_the_usual_day() {
    for usual_day in [true, false] {
        let rules = vec![
            ScriptRule {
                purpose: Some("invite_answer".into()),
                contains: Some("is not planned yet; on a usual day".into()),
                reply:
                    r#"{"will_attend": false, "in_the_way": "nothing", "reason": "I am busy then"}"#
                        .into(),
                ..Default::default()
            },
            rule(
                "invite_answer",
                r#"{"will_attend": true, "in_the_way": "nothing", "reason": "I love parties"}"#,
            ),
        ]
        .into_iter()
        .chain(candidacy_rules())
        .collect();
        // The day before the party: February 14 is not planned yet.
        let mut app = town_with(rules, "2023-02-13 10:00", |c| {
            c.cognition.social.usual_day = usual_day;
        });
        run_steps(&mut app, 30);
        let c = talk(&mut app, "Isabella Rodriguez", "Maria Lopez");
        until_over(&mut app, c, 900);
        let maria = entity_of(&mut app, "Maria Lopez");
        let stream = app.world().get::<MemoryStream>(maria).unwrap();
        let answer = stream
            .nodes()
            .iter()
            .find(|n| n.predicate == "declined" || n.predicate == "will attend")
            .unwrap_or_else(|| panic!("Maria answered: {:#?}", stream.nodes()));
        if usual_day {
            // Shown her usual day, she declined (words are only words: what is in the way is
            // what the answer named, here nothing).
            assert_eq!(answer.predicate, "declined");
            assert!(
                answer
                    .description
                    .ends_with(": not interested: I am busy then"),
                "{}",
                answer.description
            );
        } else {
            assert_eq!(answer.predicate, "will attend", "{}", answer.description);
        }
    }
}

/// A refusal names, from the plan's items shown to it, what is in its way: that item is its
/// reason, remembered and said, and words that give no reason ("The reason is not known") are
/// not kept but counted.
#[test]
fn a_refusal_names_the_plan_item_in_its_way_and_a_reason_that_gives_none_is_not_kept() {
    // The day before the party, so the answer is weighed against Maria's usual day: what it
    // holds while the party goes on is what she may name.
    let invite = |reply: &str| {
        // Maria's answer only: the count of reasons replaced is hers.
        let rules = [ScriptRule {
            purpose: Some("invite_answer".into()),
            contains: Some("says to Maria Lopez".into()),
            reply: reply.into(),
            ..Default::default()
        }]
        .into_iter()
        .chain(candidacy_rules())
        .collect();
        let mut app = town(rules, "2023-02-13 10:00");
        run_steps(&mut app, 30);
        let c = talk(&mut app, "Isabella Rodriguez", "Maria Lopez");
        until_over(&mut app, c, 900);
        let maria = entity_of(&mut app, "Maria Lopez");
        let stream = app.world().get::<MemoryStream>(maria).unwrap();
        let declined = stream
            .nodes()
            .iter()
            .find(|n| n.predicate == "declined")
            .unwrap_or_else(|| panic!("Maria declined: {:#?}", stream.nodes()))
            .clone();
        (app, maria, declined)
    };
    let (app, maria, declined) =
        invite(r#"{"will_attend": false, "in_the_way": "nothing", "reason": "I'm not sure"}"#);
    assert!(
        declined.description.ends_with(": not interested"),
        "no reason given, none kept: {}",
        declined.description
    );
    let resident = app
        .world()
        .get::<simulacra::agent::Resident>(maria)
        .unwrap();
    let items = simulacra::cognition::talk::invite::usual_overlapping(
        &resident.persona,
        declined
            .gathering
            .as_ref()
            .expect("the refusal holds the party"),
    );
    let item = items
        .first()
        .expect("Maria's usual day holds something then");
    let n = |app: &App| {
        app.world().resource::<Fallbacks>().counts
            [&("invitation reason".to_string(), Flaw::NoReason)]
    };
    assert_eq!(n(&app), 1);

    let (app, _, declined) = invite(
        &serde_json::json!({
            "will_attend": false, "in_the_way": item, "reason": "The reason is not known"
        })
        .to_string(),
    );
    assert!(
        declined
            .description
            .ends_with(&format!(": a conflicting plan: {item}")),
        "{}",
        declined.description
    );
    assert_eq!(n(&app), 1);
    // Her answer is owed as her next line, with what is in the way as its reason.
    let log = app.world().resource::<ConversationLog>();
    assert!(
        log.lines.iter().any(|l| l.speaker == "Maria Lopez"
            && l.topic
                .as_ref()
                .is_some_and(|t| t.kind == TopicKind::Answer && t.about.contains(item.as_str()))),
        "{:#?}",
        log.lines
    );
}

/// Nobody tells a person what that person told them.
#[test]
fn nobody_tells_back_what_the_listener_told_them() {
    let mut app = klaus_told_maria();
    // Maria speaks first, her newest news first.
    let c2 = talk(&mut app, "Maria Lopez", "Klaus Mueller");
    until_over(&mut app, c2, 600);
    let fact = "Sam Moore is running for mayor of Smallville";
    let log = app.world().resource::<ConversationLog>();
    let carries = |l: &&simulacra::agent::conversation::LoggedLine| {
        l.topic.as_ref().and_then(|t| t.fact.as_deref()) == Some(fact)
    };
    assert!(
        log.lines
            .iter()
            .filter(|l| l.speaker == "Klaus Mueller")
            .any(|l| carries(&l)),
        "Klaus told Maria: {:#?}",
        log.lines
    );
    assert!(
        !log.lines
            .iter()
            .filter(|l| l.speaker == "Maria Lopez")
            .any(|l| carries(&l)),
        "Maria told it back: {:#?}",
        log.lines
    );
    let klaus = &streams(&mut app)["Klaus Mueller"];
    assert!(
        !klaus
            .nodes()
            .iter()
            .any(|n| n.told.as_ref().is_some_and(|t| t.fact == fact)),
        "Klaus heard his own news back"
    );
}

/// A listener told news it holds already says so next, and from whom, and keeps no second
/// hearing; the one who told it knows then and does not tell it again. Switched off
/// (`cognition.social.already_heard`), the listener hears it twice.
#[test]
fn news_the_listener_heard_already_is_not_heard_twice_unless_switched_off() {
    let fact = "Sam Moore is running for mayor of Smallville";
    for on in [true, false] {
        // After the Valentine's Day party: no gathering ahead for Isabella to invite to first.
        let mut app = town_with(candidacy_rules(), "2023-02-15 10:00", |c| {
            c.cognition.social.already_heard = on;
        });
        run_steps(&mut app, 2);
        run_console_line(&mut app, &format!("whisper Klaus {fact}"));
        run_console_line(&mut app, &format!("whisper Isabella {fact}"));
        let c = talk(&mut app, "Klaus Mueller", "Maria Lopez");
        until_over(&mut app, c, 600);
        let c = talk(&mut app, "Isabella Rodriguez", "Maria Lopez");
        until_over(&mut app, c, 600);
        let maria = &streams(&mut app)["Maria Lopez"];
        let tellers: Vec<&str> = maria
            .nodes()
            .iter()
            .filter_map(|n| n.told.as_ref())
            .filter(|t| t.fact == fact)
            .map(|t| t.speaker.as_str())
            .collect();
        let log = app.world().resource::<ConversationLog>();
        let about = |l: &&simulacra::agent::conversation::LoggedLine, kind: TopicKind| {
            l.topic
                .as_ref()
                .is_some_and(|t| t.kind == kind && t.fact.as_deref() == Some(fact))
        };
        let told: Vec<_> = log
            .lines
            .iter()
            .filter(|l| l.speaker == "Isabella Rodriguez" && about(l, TopicKind::Fact))
            .collect();
        assert_eq!(told.len(), 1, "Isabella told Maria once: {:#?}", log.lines);
        let said: Vec<_> = log
            .lines
            .iter()
            .filter(|l| l.listener == "Isabella Rodriguez" && about(l, TopicKind::AlreadyHeard))
            .collect();
        if on {
            assert_eq!(tellers, ["Klaus Mueller"], "no second hearing");
            assert_eq!(
                said.len(),
                1,
                "Maria said she had heard it: {:#?}",
                log.lines
            );
            assert!(
                said[0].text.contains("Klaus"),
                "and from whom: {:?}",
                said[0].text
            );
            // Her next line, straight after Isabella's.
            let i = log
                .lines
                .iter()
                .position(|l| std::ptr::eq(l, told[0]))
                .unwrap();
            assert!(std::ptr::eq(&log.lines[i + 1], said[0]), "{:#?}", log.lines);
        } else {
            assert_eq!(tellers, ["Klaus Mueller", "Isabella Rodriguez"]);
            assert!(said.is_empty(), "{said:#?}");
        }
    }
}

/// What a resident knows of another is the note the model wrote when their last conversation
/// ended, and the lines of their next conversation read it: a line asked with the note in its
/// prompt is the one said. A note that does not hold up (a bare name) leaves the one before.
#[test]
fn what_one_knows_of_another_is_the_models_note_of_their_last_talk_and_their_next_talk_reads_it() {
    const NOTE: &str = "Maria is writing a long chemistry report this week.";
    const ASKED: &str = "How is that chemistry report coming along, Maria?";
    let rules = vec![
        // The first talk's memory, before anything was known of her: the note.
        rule_if(
            "chat_memory",
            "What Klaus Mueller knew of Maria Lopez before: nothing in particular yet",
            &format!(
                r#"{{"summary": "their studies", "planning": "ask Maria about her report", "memo": "Maria works hard", "partner_note": "{NOTE}"}}"#
            ),
        ),
        // The second's, with the note shown: a note that is only a name.
        rule_if(
            "chat_memory",
            &format!("What Klaus Mueller knew of Maria Lopez before: {NOTE}"),
            r#"{"summary": "her report again", "planning": "let Maria work", "memo": "Maria is busy", "partner_note": "Maria Lopez"}"#,
        ),
        // A line of Klaus's asked with the note: it asks after the report.
        rule_if(
            "converse",
            &format!("What Klaus Mueller knows of Maria Lopez: {NOTE}"),
            &line(ASKED),
        ),
    ]
    .into_iter()
    .chain(chain(&[
        "Good to see you this morning.",
        "Nice to see you too, Klaus.",
        "I should get back to my work now.",
        "Of course, see you around, Klaus.",
    ]))
    .collect();
    let mut app = town_with(rules, "2023-02-13 10:00", |c| {
        c.cognition.ask_lines_again = false;
    });
    run_steps(&mut app, 2);
    let note_of = |app: &mut App| {
        let w = app.world_mut();
        let mut q = w.query::<(&Identity, &Scratch)>();
        q.iter(w)
            .find(|(id, _)| id.name == "Klaus Mueller")
            .and_then(|(_, s)| s.note_of("Maria Lopez").map(str::to_string))
    };
    assert_eq!(note_of(&mut app), None, "nothing known before they talk");
    let c1 = talk(&mut app, "Klaus Mueller", "Maria Lopez");
    until_over(&mut app, c1, 600);
    // A chat memory is due `memory_slack_steps` (30) after the talk ends.
    run_steps(&mut app, 35);
    let klaus_said = |app: &App, c: Entity| {
        app.world()
            .resource::<ConversationLog>()
            .lines
            .iter()
            .filter(|l| l.conversation == c && l.speaker == "Klaus Mueller")
            .map(|l| l.text.clone())
            .collect::<Vec<_>>()
    };
    let first = klaus_said(&app, c1);
    assert!(
        !first.iter().any(|t| t == ASKED),
        "no note yet, so no line asked with one: {first:?}"
    );
    assert_eq!(
        note_of(&mut app).as_deref(),
        Some(NOTE),
        "the model's note is kept"
    );
    let c2 = talk(&mut app, "Klaus Mueller", "Maria Lopez");
    until_over(&mut app, c2, 600);
    run_steps(&mut app, 35);
    let second = klaus_said(&app, c2);
    assert!(
        second.iter().any(|t| t == ASKED),
        "a line asked with the note is said: {second:?}"
    );
    assert_eq!(
        note_of(&mut app).as_deref(),
        Some(NOTE),
        "a note that is only a name leaves the one before"
    );
}

/// With `whole_dialogue`, one request writes the conversation: its lines are said in turn in
/// the model's words, no line is asked of a speaker, the news its words carry is heard with its
/// chain, both remember the talk; a dialogue whose request failed says nothing.
#[test]
fn a_whole_conversation_asked_at_once_is_said_in_turn_and_its_news_heard() {
    let dialogue = r#"{"turns": [
        {"Klaus Mueller": "Maria, did you hear that Sam Moore is running for mayor?", "Maria Lopez": "No, I had not heard that at all."},
        {"Klaus Mueller": "It is nice to see you today.", "Maria Lopez": "It is nice to see you too, Klaus."}
    ]}"#;
    let mut rules = vec![
        rule_if("converse_whole", "tell Maria Lopez: Sam Moore", dialogue),
        rule("converse_whole", "{\"turns\": []}"),
    ];
    rules.extend(candidacy_rules());
    let mut app = klaus_told_maria_with(rules, |c| c.cognition.whole_dialogue = true);
    let w = app.world_mut();
    let c = w
        .query::<(Entity, &Conversation)>()
        .iter(w)
        .find(|(_, c)| c.names[0] == "Klaus Mueller")
        .map(|(e, _)| e)
        .expect("Klaus and Maria talked");
    let conv = app.world().get::<Conversation>(c).unwrap().clone();
    assert_eq!(
        conv.lines,
        [
            (
                "Klaus Mueller",
                "Maria, did you hear that Sam Moore is running for mayor?"
            ),
            ("Maria Lopez", "No, I had not heard that at all."),
            ("Klaus Mueller", "It is nice to see you today."),
            ("Maria Lopez", "It is nice to see you too, Klaus."),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let stats = app.world().resource::<simulacra::llm::Llm>().stats();
    assert_eq!(stats.by_purpose["converse_whole"].calls, 1);
    assert!(
        stats
            .by_purpose
            .get("converse")
            .is_none_or(|p| p.calls == 0),
        "no line was asked of a speaker"
    );
    let all = streams(&mut app);
    let mayor = all["Maria Lopez"]
        .nodes()
        .iter()
        .find(|n| {
            n.told
                .as_ref()
                .is_some_and(|t| t.fact.contains("running for mayor"))
        })
        .expect("Maria heard the news from Klaus's words");
    assert_eq!(
        mayor.description,
        "Klaus Mueller told me: \"Maria, did you hear that Sam Moore is running for mayor?\""
    );
    let look = |n: &str| all.get(n);
    let hops = trace(&look, "Maria Lopez", mayor.id);
    assert_eq!(
        hops.iter().map(|h| h.holder.as_str()).collect::<Vec<_>>(),
        ["Maria Lopez", "Klaus Mueller"]
    );
    // Both remember the talk (the chat memory asked of each at its end).
    run_steps(&mut app, 40);
    let all = streams(&mut app);
    for n in ["Klaus Mueller", "Maria Lopez"] {
        assert!(
            all[n]
                .nodes()
                .iter()
                .any(|m| m.kind == simulacra::memory::stream::NodeKind::Chat),
            "{n} remembers the conversation"
        );
    }
    // Another pair's dialogue fails (the fail-safe): they say nothing, and nothing is made up.
    let c2 = talk(&mut app, "Maria Lopez", "Isabella Rodriguez");
    until_over(&mut app, c2, 600);
    let conv = app.world().get::<Conversation>(c2).unwrap();
    assert!(conv.lines.is_empty(), "{:?}", conv.lines);
}
