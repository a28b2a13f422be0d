//! Whole conversations in one request (`cognition.whole_dialogue`, the original's older
//! `agent_chat_v1`): when two residents stand together, the embedding of their meeting
//! retrieves what each remembers ([`Job::DialogueQuery`]); one request then shows both
//! speakers' memories and topics and asks for every line ([`Job::Dialogue`]); the lines are kept
//! as the conversation's script and said in turn as their time comes ([`say_scripted`]), heard as
//! any line is (heard = said). A line that does not hold up ends the script before it, and a
//! conversation whose request failed says nothing: the residents do less, never a made line.
//! Lines owed after the script (the answer to an invitation heard in it) are asked turn by turn.

use crate::agent::carry::FactWords;
use crate::agent::conversation::{Conversation, ConversationLog, Line, Topic, TopicKind, say_line};
use crate::agent::{DayPlan, GridPos, Identity, Outlook, Resident, TownNames};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::flaws::{self, Fallbacks, Flaw};
use crate::cognition::ask::job::{Job, take};
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::{Who, one_line};
use crate::cognition::resident::scratch::Scratch;
use crate::cognition::talk::converse::{line_slack, speaker_side};
use crate::cognition::talk::line_request::{LINE_MAX_CHARS, partner_note, place_words};
use crate::cognition::talk::utterance::line_words;
use crate::llm::{LlmValue, OutputShape, Sampling};
use crate::memory::stream::MemoryStream;
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use serde_json::{Value, json};

/// Tokens a line may take in the answer (a speaker's name, a topic number and at most
/// [`LINE_MAX_CHARS`] characters, with their JSON).
const TOKENS_PER_LINE: u32 = 64;

/// The schema of a whole conversation: turns, at least one and at most `max_turns`, each the
/// first speaker's words then the second's (keys are written in order, so the two take turns by
/// construction, and a name is never sampled).
pub fn dialogue_schema(names: &[String; 2], max_turns: usize) -> Value {
    let words = json!({"type": "string", "minLength": 1, "maxLength": LINE_MAX_CHARS});
    json!({
        "type": "object",
        "properties": {
            "turns": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_turns.max(1),
                "items": {
                    "type": "object",
                    "properties": {names[0].as_str(): words, names[1].as_str(): words},
                    "required": [names[0], names[1]],
                    "additionalProperties": false
                }
            }
        },
        "required": ["turns"],
        "additionalProperties": false
    })
}

/// A speaker's side of the prompt.
struct Side {
    /// Its memories, numbered.
    memories: String,
    /// Its topics.
    topics: Vec<Topic>,
}

/// Everything of a resident the request for a whole conversation reads.
type Person<'a> = (
    Entity,
    &'a Resident,
    &'a Identity,
    &'a Outlook,
    &'a GridPos,
    Option<&'a DayPlan>,
    Option<&'a Scratch>,
    &'a mut MemoryStream,
    &'a mut Pending,
);

/// The embedding of a meeting arrived: retrieve what each of the two remembers, draw each one's
/// topics, and ask for the whole conversation.
pub fn ask_dialogues(
    mut ask: Asker,
    map: Res<WorldMap>,
    log: Res<ConversationLog>,
    convs: Query<&Conversation>,
    mut people: Query<Person>,
) {
    let real_time = ask.cfg.real_time();
    let mut arrived = Vec::new();
    for (agent, .., mut pending) in &mut people {
        for (conversation, reply) in take!(
            pending,
            ask.clock.step,
            real_time,
            DialogueQuery { conversation }
        ) {
            arrived.push((agent, conversation, reply));
        }
    }
    let now = ask.clock.now;
    for (agent, ce, reply) in arrived {
        let Ok(conv) = convs.get(ce) else { continue };
        if !conv.active() {
            continue;
        }
        let query = match &reply.value {
            LlmValue::Embedding(e) if !e.vector.is_empty() => Some(e.clone()),
            _ => None,
        };
        let Ok(mut both) = people.get_many_mut(conv.people) else {
            continue;
        };
        let mut sides = Vec::with_capacity(2);
        for (i, p) in both.iter_mut().enumerate() {
            let (topics, memories) =
                speaker_side(&ask, &log, conv, i, &mut p.7, query.as_ref(), p.5);
            sides.push(Side { memories, topics });
        }
        let topics: Vec<(usize, Topic)> = sides
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.topics.iter().map(move |t| (i, t.clone())))
            .collect();
        let listed_topics = topics
            .iter()
            .map(|(i, t)| format!("- {}: {}", conv.names[*i], one_line(&t.about)))
            .collect::<Vec<_>>()
            .join("\n");
        let [first, second] = &both;
        let who = Who::of(first.1, first.3, &conv.names[0], now);
        let about = format!(
            "{}, {}, {}; {}",
            conv.names[1],
            second.1.persona.spec.age,
            second.1.persona.spec.innate,
            one_line(&second.3.currently)
        );
        let lines = conv.max_lines.clamp(2, ask.cfg.0.max_utterances.max(2));
        let max_lines = lines.to_string();
        let turns = lines.div_ceil(2);
        let mut req = ask.chat(
            "converse_whole",
            &who,
            &[
                ("partner", &conv.names[1]),
                ("partner_about", &about),
                ("place", &place_words(&map, first.4)),
                ("note", partner_note(first.6, &conv.names[1])),
                ("partner_note", partner_note(second.6, &conv.names[0])),
                ("memories", &sides[0].memories),
                ("partner_memories", &sides[1].memories),
                ("topics", &listed_topics),
                ("max_lines", &max_lines),
            ],
            OutputShape::Json(dialogue_schema(&conv.names, turns)),
            TOKENS_PER_LINE * lines as u32 + 16,
        );
        // Towns that differ by their seed: the same request, sampled (as a line's).
        let c = &ask.cfg.0;
        if c.talk_temperature > 0.0 {
            let mut sampling = Sampling::greedy(TOKENS_PER_LINE * lines as u32 + 16);
            sampling.temperature = c.talk_temperature;
            sampling.seed = c.seed.wrapping_add(crate::sim::hash::fnv1a_32(
                format!("{}|{}|{}", conv.names[0], conv.names[1], conv.started.0).as_bytes(),
            ));
            req = req.sampling(sampling);
        }
        let req = req.fallback(LlmValue::Json(json!({"turns": []})));
        let slack = line_slack(
            conv.next_turn,
            now,
            ask.clock.sec_per_step,
            ask.cfg.0.decision_slack_steps,
        );
        let Ok(mut asker) = people.get_mut(agent) else {
            continue;
        };
        ask.ask(
            agent,
            &mut asker.8,
            req,
            Job::Dialogue {
                conversation: ce,
                topics,
            },
            slack,
        );
    }
}

/// The lines of a whole conversation's answer, as they will be said, in words cleaned as a
/// line's. A line is about the first of its own speaker's news topics whose fact its words
/// carry (`carries`: heard = said), and is a reply otherwise. The first line that does not hold
/// up ends them, with its flaw; a fail-safe is no line at all.
pub fn script_of(
    value: &LlmValue,
    failed: bool,
    names: &[String; 2],
    topics: &[(usize, Topic)],
    town: &TownNames,
    own_words: &[String],
    carries: impl Fn(&Topic, &str, &str) -> bool,
) -> (Vec<(usize, Line)>, Option<Flaw>) {
    let (LlmValue::Json(v), false) = (value, failed) else {
        return (Vec::new(), Some(Flaw::Failed));
    };
    let mut out: Vec<(usize, Line)> = Vec::new();
    let mut earlier: Vec<String> = Vec::new();
    let turns = v
        .get("turns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for (turn, k) in turns.flat_map(|t| [(t, 0), (t, 1)]) {
        let text = line_words(turn.get(names[k].as_str()), town);
        let told = topics
            .iter()
            .filter(|(owner, t)| *owner == k && t.kind.news() && t.fact.is_some())
            .find(|(_, t)| carries(t, &text, &names[k]));
        let ctx = flaws::Context {
            names: &town.words,
            own_words,
            earlier: &earlier,
        };
        if let Some(f) = flaws::line_flaw(&text, &ctx, told.is_some()) {
            return (out, Some(f));
        }
        earlier.push(text.clone());
        let (topic, carried) = match told {
            Some((_, t)) => (t.clone(), Some(true)),
            None => (Topic::new(TopicKind::Reply, ""), None),
        };
        out.push((
            k,
            Line {
                text,
                topic: Some(topic),
                fallback: None,
                carried,
            },
        ));
    }
    (out, None)
}

/// Whole conversations that arrived become their conversations' scripts; whether a line about
/// news carries it is found from its words (heard = said). A conversation with no line that
/// holds up closes without a word said.
pub fn apply_dialogues(
    ask: Asker,
    map: Res<WorldMap>,
    town: Res<TownNames>,
    mut fallbacks: ResMut<Fallbacks>,
    mut convs: Query<&mut Conversation>,
    mut agents: Query<&mut Pending>,
) {
    let real_time = ask.cfg.real_time();
    let own_words = ask.prompts.get("converse_whole").own_words();
    let places: Vec<String> = map.sectors.iter().map(|s| s.name.clone()).collect();
    for mut pending in &mut agents {
        for ((ce, topics), reply) in take!(
            pending,
            ask.clock.step,
            real_time,
            Dialogue {
                conversation,
                topics
            }
        ) {
            let Ok(mut conv) = convs.get_mut(ce) else {
                continue;
            };
            if !conv.active() {
                continue;
            }
            let carries = |t: &Topic, text: &str, speaker: &str| {
                let Some(fact) = &t.fact else { return false };
                let place = t.gathering.as_ref().map(|g| g.place.as_str());
                FactWords::of(fact, &town, &places, place).carried_by(text, speaker, &town)
            };
            let (lines, flaw) = script_of(
                &reply.value,
                reply.is_fallback(),
                &conv.names,
                &topics,
                &town,
                &own_words,
                carries,
            );
            if let Some(f) = flaw {
                fallbacks.count("dialogue", f);
            }
            if lines.is_empty() {
                conv.closing = true;
            }
            conv.script = lines.into();
        }
    }
}

/// Says the next line of each conversation's script once the last is said out, heard and
/// answered (an invitation's answer being asked holds it); after the last, the conversation
/// closes (a line still owed is said first, turn by turn).
pub fn say_scripted(
    mut commands: Commands,
    clock: Res<crate::sim::clock::SimClock>,
    mut log: ResMut<ConversationLog>,
    mut convs: Query<(Entity, &mut Conversation)>,
    pending: Query<&Pending>,
) {
    let now = clock.now;
    for (ce, mut conv) in &mut convs {
        if conv.script.is_empty() || !conv.active() || now < conv.next_turn {
            continue;
        }
        let busy = conv.people.iter().any(|p| {
            pending.get(*p).is_ok_and(|p| {
                p.any(
                    |j| matches!(j, Job::InviteAnswer { conversation, .. } if *conversation == ce),
                )
            })
        });
        let unheard = log.lines[log.heard.min(log.lines.len())..]
            .iter()
            .any(|l| l.conversation == ce);
        if busy || unheard {
            continue;
        }
        let Some((k, line)) = conv.script.pop_front() else {
            continue;
        };
        if conv.owed[k].is_some() && line.topic == conv.owed[k] {
            conv.owed[k] = None;
        }
        let speaker = conv.people[k];
        say_line(&mut commands, &mut log, now, ce, &mut conv, speaker, line);
        if conv.script.is_empty() {
            conv.closing = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> [String; 2] {
        ["Klaus Mueller".into(), "Maria Lopez".into()]
    }

    fn town() -> TownNames {
        TownNames::new(names().to_vec())
    }

    #[test]
    fn a_script_takes_turns_finds_news_by_its_words_and_stops_at_a_line_that_does_not_hold_up() {
        let fact = Topic {
            fact: Some("Sam Moore is running for mayor".into()),
            ..Topic::new(
                TopicKind::Fact,
                "tell Maria Lopez: Sam Moore is running for mayor",
            )
        };
        let topics = vec![(0, fact.clone())];
        let carries = |t: &Topic, text: &str, _: &str| {
            t.fact.as_deref() == Some("Sam Moore is running for mayor") && text.contains("mayor")
        };
        let v = LlmValue::Json(json!({"turns": [
            {"Klaus Mueller": "Maria, Sam Moore is running for mayor!", "Maria Lopez": "Really? I had no idea about the mayor."},
            {"Klaus Mueller": "Nice weather today.", "Maria Lopez": "Nice weather today."}
        ]}));
        let (lines, flaw) = script_of(&v, false, &names(), &topics, &town(), &[], carries);
        assert_eq!(flaw, Some(Flaw::Repeat), "{lines:?}");
        assert_eq!(lines.iter().map(|l| l.0).collect::<Vec<_>>(), [0, 1, 0]);
        assert_eq!(lines[0].1.topic.as_ref(), Some(&fact));
        assert_eq!(lines[0].1.carried, Some(true));
        // Maria's words name the mayor too, but the news is Klaus's: a reply.
        assert_eq!(lines[1].1.topic.as_ref().unwrap().kind, TopicKind::Reply);
        assert_eq!(lines[1].1.carried, None);
        assert_eq!(lines[2].1.topic.as_ref().unwrap().kind, TopicKind::Reply);
        let (none, flaw) = script_of(&v, true, &names(), &topics, &town(), &[], carries);
        assert!(none.is_empty());
        assert_eq!(flaw, Some(Flaw::Failed), "a fail-safe says nothing");
    }

    #[test]
    fn the_schema_has_the_two_take_turns_and_bounds_the_turns() {
        let s = dialogue_schema(&names(), 4);
        let g = crate::llm::schema_grammar::grammar(&s).unwrap();
        assert!(g.contains("Klaus Mueller"), "{g}");
        let two = json!({"turns": [{"Klaus Mueller": "Hello.", "Maria Lopez": "Hi."}]});
        crate::llm::shape::validate_schema(&s, &two, "").unwrap();
        let other = json!({"turns": [{"Sam Moore": "Hello.", "Maria Lopez": "Hi."}]});
        assert!(crate::llm::shape::validate_schema(&s, &other, "").is_err());
        assert_eq!(s["properties"]["turns"]["maxItems"], 4);
    }
}
