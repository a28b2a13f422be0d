//! The residents' own society, with the scripted double: what is heard is what was said, what
//! is done is what was decided. One test per path by which the town once made an outcome
//! itself; each runs the town twice, with the aids off (the default: the resident does less) and
//! with the one aid that forces that path on (the outcome the rule makes), so each test shows it
//! can fail.

use crate::entity_of;
use crate::talk::{rule, talk, town_with, until_over};
use bevy::prelude::*;
use simulacra::agent::GridPos;
use simulacra::agent::commitments::Commitments;
use simulacra::agent::conversation::{ConversationLog, TopicKind};
use simulacra::cognition::config::Aids;
use simulacra::headless::run_console_line;
use simulacra::lab::facts::Carrier;
use simulacra::llm::config::ScriptRule;
use simulacra::memory::stream::MemoryStream;
use simulacra::run_steps;
use simulacra::sim::clock::SimClock;
use simulacra::sim::map::WorldMap;

const MAYOR: &str = "Sam Moore is running for mayor of Smallville";

/// A `converse` answer: topic 1 (the first offered: the invitation, or the news) and these
/// words.
fn line(words: &str) -> String {
    format!(r#"{{"end_conversation": false, "topic": 1, "utterance": "{words}"}}"#)
}

/// A rule for `converse` prompts that contain `contains`.
fn converse_if(contains: &str, words: &str) -> ScriptRule {
    ScriptRule {
        contains: Some(contains.into()),
        ..rule("converse", &line(words))
    }
}

/// Whether the memories of `who` carry the candidacy (the lab's measure: their words).
fn holds_mayor(app: &mut App, who: &str) -> bool {
    let e = entity_of(app, who);
    let facts = simulacra::lab::facts::of_town(app.world());
    let f = facts
        .iter()
        .find(|f| f.name == "mayor")
        .expect("the scenario's fact");
    let carrier = &Carrier::all(std::slice::from_ref(f), app.world())[0];
    let s = app.world().get::<MemoryStream>(e).unwrap();
    s.nodes().iter().any(|n| carrier.memory(n, who))
}

/// Klaus, whispered the candidacy, talks with Maria; `rules` are the model's answers.
fn klaus_tells_maria(rules: Vec<ScriptRule>, aids: Aids) -> App {
    let mut app = town_with(rules, "2023-02-13 10:00", |c| c.cognition.aids = aids);
    run_steps(&mut app, 2);
    run_console_line(&mut app, &format!("whisper Klaus {MAYOR}"));
    let c = talk(&mut app, "Klaus Mueller", "Maria Lopez");
    until_over(&mut app, c, 600);
    app
}

fn aid(name: &str) -> Aids {
    let mut a = Aids::default();
    a.set(name, true).unwrap();
    a
}

/// Heard = said: a speaker whose lines never carry the fact spreads nothing, however often its
/// topic is the news; with `heard_from_topic` the topic alone would have carried it.
#[test]
fn a_speaker_whose_lines_never_name_the_fact_spreads_nothing() {
    let weather = || {
        vec![rule(
            "converse",
            &line("What lovely weather we are having this week!"),
        )]
    };
    let mut app = klaus_tells_maria(weather(), Aids::default());
    let log = app.world().resource::<ConversationLog>();
    assert!(
        log.lines.iter().any(|l| l.speaker == "Klaus Mueller"
            && l.topic.as_ref().is_some_and(|t| t.kind == TopicKind::Fact)),
        "Klaus chose the news as his topic: {:#?}",
        log.lines
    );
    assert!(
        !holds_mayor(&mut app, "Maria Lopez"),
        "nothing was said of it"
    );
    let mut aided = klaus_tells_maria(weather(), aid("heard_from_topic"));
    assert!(
        holds_mayor(&mut aided, "Maria Lopez"),
        "the rule made her hear it"
    );
}

/// ...and one whose words carry it is heard, in its words, with where they came from.
#[test]
fn a_line_that_carries_the_fact_is_heard_in_its_own_words() {
    let rules = vec![
        converse_if(
            "tell Maria Lopez: Sam Moore",
            "Maria, did you hear that Sam is running for mayor?",
        ),
        rule("converse", &line("That is good to know, thank you.")),
    ];
    let mut app = klaus_tells_maria(rules, Aids::default());
    assert!(holds_mayor(&mut app, "Maria Lopez"));
    let maria = entity_of(&mut app, "Maria Lopez");
    let s = app.world().get::<MemoryStream>(maria).unwrap();
    let heard = s
        .nodes()
        .iter()
        .find(|n| n.predicate == "was told by")
        .expect("a memory of the line");
    assert_eq!(
        heard.description,
        "Klaus Mueller told me: \"Maria, did you hear that Sam is running for mayor?\""
    );
    assert_eq!(heard.told.as_ref().unwrap().speaker, "Klaus Mueller");
}

/// A failed line (the news chosen, but words that fail their checks twice: a name alone)
/// carries no fact: the speaker says a filler and ends the talk; with `template_lines` the
/// topic's template would have said the news.
#[test]
fn a_failed_line_carries_no_fact() {
    let broken = || vec![rule("converse", &line("Maria Lopez"))];
    let mut app = klaus_tells_maria(broken(), Aids::default());
    assert!(!holds_mayor(&mut app, "Maria Lopez"));
    let log = app.world().resource::<ConversationLog>();
    let klaus: Vec<_> = log
        .lines
        .iter()
        .filter(|l| l.speaker == "Klaus Mueller")
        .collect();
    assert!(!klaus.is_empty());
    for l in &klaus {
        assert_eq!(l.text, "Hmm.", "{l:?}");
        assert!(l.fallback.is_some());
        assert_eq!(l.topic.as_ref().map(|t| t.kind), Some(TopicKind::SmallTalk));
    }
    let mut aided = klaus_tells_maria(broken(), aid("template_lines"));
    assert!(
        holds_mayor(&mut aided, "Maria Lopez"),
        "the template said it"
    );
}

/// Isabella invites Maria at 16:00 on the party's day; `answer` is Maria's model's answer.
fn invited(answer: &str, aids: Aids) -> App {
    let rules = vec![
        converse_if(
            "invite Maria Lopez to",
            "Maria, I am holding a Valentine's Day party at Hobbs Cafe today, will you come?",
        ),
        rule("invite_answer", answer),
        rule("converse", &line("That sounds lovely, thank you.")),
    ];
    let mut app = town_with(rules, "2023-02-14 15:50", |c| c.cognition.aids = aids);
    run_steps(&mut app, 30);
    let c = talk(&mut app, "Isabella Rodriguez", "Maria Lopez");
    until_over(&mut app, c, 900);
    app
}

/// Whether Maria is at Hobbs Cafe at any moment of the party (17:00–19:00).
fn maria_at_the_party(app: &mut App) -> bool {
    let maria = entity_of(app, "Maria Lopez");
    let map = app.world().resource::<WorldMap>().clone();
    let mut seen = false;
    loop {
        let minute = app.world().resource::<SimClock>().now.minute_of_day();
        if minute >= 19 * 60 {
            return seen;
        }
        run_steps(app, 6);
        let t = app.world().get::<GridPos>(maria).unwrap().tile;
        seen |= minute >= 17 * 60 && map.address(t).sector == Some("Hobbs Cafe");
    }
}

/// The resident decides and does: Maria accepts, and her planning (the daily routine here,
/// which has no party) never puts the party into her day, so she does not go; with
/// `plan_gatherings` the rule would have put it there and sent her.
#[test]
fn a_resident_that_accepts_but_whose_planning_never_includes_the_party_does_not_go() {
    let yes = r#"{"will_attend": true, "in_the_way": "nothing", "reason": "I love parties"}"#;
    let mut app = invited(yes, Aids::default());
    let maria = entity_of(&mut app, "Maria Lopez");
    assert_eq!(
        app.world().get::<Commitments>(maria).unwrap().list.len(),
        1,
        "she accepted"
    );
    assert!(
        !maria_at_the_party(&mut app),
        "nothing in her day takes her there"
    );
    let mut aided = invited(yes, aid("plan_gatherings"));
    assert!(maria_at_the_party(&mut aided), "the rule sent her");
}

/// ...and what it said yes to is shown to its own planning: Maria, planning with the model,
/// accepts on the party's day, and the re-plan asked at once carries "Maria Lopez has said yes
/// to: …" (the scripted double answers that prompt, and only that one, with words that are no
/// schedule, so the re-plan is seen as a fail-safe). Nothing puts the party into her plan: her
/// hours stay what her planning said.
#[test]
fn what_a_resident_said_yes_to_is_shown_to_its_own_planning() {
    let rules = vec![
        converse_if(
            "invite Maria Lopez to",
            "Maria, I am holding a Valentine's Day party at Hobbs Cafe today, will you come?",
        ),
        rule(
            "invite_answer",
            r#"{"will_attend": true, "in_the_way": "nothing", "reason": "I love parties"}"#,
        ),
        ScriptRule {
            contains: Some("Maria Lopez has said yes to: ".into()),
            ..rule("replan", "seen")
        },
        rule("converse", &line("That sounds lovely, thank you.")),
    ];
    let mut app = town_with(rules, "2023-02-14 15:50", |c| {
        c.cognition.planning = simulacra::cognition::config::Planning::Model;
    });
    run_steps(&mut app, 30);
    let c = talk(&mut app, "Isabella Rodriguez", "Maria Lopez");
    until_over(&mut app, c, 900);
    run_steps(&mut app, 30);
    let maria = entity_of(&mut app, "Maria Lopez");
    assert_eq!(app.world().get::<Commitments>(maria).unwrap().list.len(), 1);
    let mut stats = app.world().resource::<simulacra::llm::Llm>().stats();
    let replan = stats.purpose("replan");
    assert!(replan.calls >= 1, "a re-plan was asked: {replan:?}");
    assert!(
        replan.fallbacks >= 1,
        "the re-plan's prompt showed what she said yes to: {replan:?}"
    );
    let plan = app.world().get::<simulacra::agent::DayPlan>(maria).unwrap();
    assert!(
        !plan.hourly.iter().any(|b| b.description.contains("party")),
        "no rule put the party into her plan: {:?}",
        plan.hourly
    );
}

/// A resident who refused is shown its refusal, and to whom, when asked again by another teller.
/// With `ask_until_yes` the question shows only what it remembers of the one who asks.
#[test]
fn a_resident_that_refused_is_shown_its_refusal_when_asked_again() {
    let run = |aids: Aids| {
        let rules = vec![
            converse_if(
                "invite Maria Lopez to",
                "Maria, there is a Valentine's Day party at Hobbs Cafe today, will you come?",
            ),
            converse_if(
                "invite Klaus Mueller to",
                "Klaus, I am holding a Valentine's Day party at Hobbs Cafe today, will you come?",
            ),
            ScriptRule {
                contains: Some("I declined Isabella Rodriguez's invitation".into()),
                ..rule(
                    "invite_answer",
                    r#"{"will_attend": false, "in_the_way": "nothing", "reason": "as I told Isabella, I must study"}"#,
                )
            },
            ScriptRule {
                contains: Some("Maria Lopez".into()),
                ..rule(
                    "invite_answer",
                    r#"{"will_attend": false, "in_the_way": "nothing", "reason": "I must study"}"#,
                )
            },
            rule(
                "invite_answer",
                r#"{"will_attend": true, "in_the_way": "nothing", "reason": "I love parties"}"#,
            ),
            rule("converse", &line("That sounds lovely, thank you.")),
        ];
        let mut app = town_with(rules, "2023-02-14 15:00", |c| c.cognition.aids = aids);
        run_steps(&mut app, 30);
        for (a, b) in [
            ("Isabella Rodriguez", "Maria Lopez"),
            ("Isabella Rodriguez", "Klaus Mueller"),
            ("Klaus Mueller", "Maria Lopez"),
            ("Klaus Mueller", "Maria Lopez"),
        ] {
            let c = talk(&mut app, a, b);
            until_over(&mut app, c, 900);
        }
        let maria = entity_of(&mut app, "Maria Lopez");
        let s = app.world().get::<MemoryStream>(maria).unwrap();
        s.nodes()
            .iter()
            .filter(|n| n.predicate == "declined")
            .map(|n| n.description.clone())
            .collect::<Vec<_>>()
    };
    let declined = run(Aids::default());
    assert_eq!(
        declined.len(),
        2,
        "Isabella's and Klaus's, once each: {declined:#?}"
    );
    assert!(declined[0].starts_with("I declined Isabella Rodriguez's invitation"));
    assert!(
        declined[1].starts_with("I declined Klaus Mueller's invitation")
            && declined[1].ends_with("as I told Isabella, I must study"),
        "asked again, she was shown her refusal: {declined:#?}"
    );
    let aided = run(aid("ask_until_yes"));
    assert!(
        aided
            .iter()
            .all(|d| !d.ends_with("as I told Isabella, I must study")),
        "not shown her refusal: {aided:#?}"
    );
}

/// An answer the model did not give at all (the fail-safe) is small talk: even with
/// `template_lines` on, its filler or template never picks the news.
#[test]
fn a_fail_safe_answer_never_picks_the_news() {
    for aids in [Aids::default(), aid("template_lines")] {
        let mut app = klaus_tells_maria(vec![rule("converse", "not an answer at all")], aids);
        assert!(!holds_mayor(&mut app, "Maria Lopez"));
        let log = app.world().resource::<ConversationLog>();
        assert!(!log.lines.is_empty());
        for l in &log.lines {
            assert!(l.fallback.is_some(), "{l:?}");
            assert_eq!(l.topic.as_ref().map(|t| t.kind), Some(TopicKind::SmallTalk));
        }
    }
}
