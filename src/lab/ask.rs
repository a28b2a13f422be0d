//! Questions put to many residents at once, as the paper's researchers did: each question is
//! embedded, the resident's memories about it retrieved (under an ablation condition, without
//! marking them accessed), and the resident answers in character with a shaped answer: a yes or
//! a no with what it would say (`probe`), or free words (`interview`). Every request goes to the
//! runtime together, so the model batches them across residents; the simulation does not move
//! while they are asked, and nothing is written to any memory.

use crate::agent::{Identity, Outlook, Resident};
use crate::cognition::ask::prompts::{Prompts, Who, numbered_found, one_line};
use crate::cognition::config::Ablation;
use crate::cognition::config::Cognition;
use crate::llm::{Llm, LlmReply, LlmRequest, LlmValue, OutputShape, Priority, Sampling};
use crate::memory::retrieve::retrieve_where;
use crate::memory::stream::MemoryStream;
use crate::sim::clock::SimClock;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The shape of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `{"answer": "yes"|"no", "says": "…"}` (the `probe` prompt).
    YesNo,
    /// `{"answer": "…"}` (the `interview` prompt).
    Open,
}

/// A question for a resident.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The resident.
    pub who: Entity,
    /// The question.
    pub question: String,
    /// Its shape.
    pub shape: Shape,
    /// What the resident may recall.
    pub ablation: Ablation,
}

/// A resident's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// Yes or no (a yes-or-no question; `None` for an open one or a failed answer).
    pub yes: Option<bool>,
    /// What the resident said.
    pub text: String,
    /// The model gave no valid answer (the fail-safe was used: a "no", or "I'm not sure").
    pub fallback: bool,
    /// The memories it was shown, best first.
    pub recalled: Vec<String>,
    /// A yes-or-no answer whose own words say the opposite ("yes" with "No, I haven't heard
    /// of it"): the model's choice and its sentence disagree ([`words_say`]).
    #[serde(default)]
    pub contradicts: bool,
}

/// Above this share of yes-or-no answers whose own words say the opposite, a round's answers
/// are not informative of what the residents know (the model's yes or no is a coin): they are
/// reported, marked so, and left out of the shares over rounds.
pub const CONTRADICTION_LIMIT: f64 = 0.2;

/// Whether `contradicting` of `answers` is at most [`CONTRADICTION_LIMIT`].
pub fn informative(contradicting: usize, answers: usize) -> bool {
    contradicting as f64 <= CONTRADICTION_LIMIT * answers as f64
}

/// What a resident's own sentence says to a yes-or-no question, where it says it plainly: it
/// opens with a yes or a no ("Yes, …", "No, …"), or admits not knowing ("I don't know", "I
/// haven't heard", "no idea"); `None` where the words do not say (most sentences).
pub fn words_say(says: &str) -> Option<bool> {
    let t = says
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
        .replace('\u{2019}', "'");
    let first: String = t.chars().take_while(|c| c.is_alphanumeric()).collect();
    let after = t[first.len()..].chars().next();
    let ends_word = after.is_none_or(|c| !c.is_alphanumeric() && c != '\'');
    // "No doubt …", "No one …", "Nope": only a no that stands alone is one.
    let standalone = after.is_none_or(|c| matches!(c, ',' | '.' | '!' | ';' | ':' | '-'));
    match first.as_str() {
        "yes" | "yeah" | "yep" | "sure" if ends_word => return Some(true),
        "no" | "nope" if standalone => return Some(false),
        _ => {}
    }
    const UNAWARE: [&str; 10] = [
        "i don't know",
        "i do not know",
        "i'm not aware",
        "i am not aware",
        "no idea",
        "haven't heard",
        "have not heard",
        "never heard",
        "don't recall",
        "do not recall",
    ];
    UNAWARE.iter().any(|p| t.contains(p)).then_some(false)
}

/// The schema of a yes-or-no answer (the yes or no first, so a cut-off answer still has it).
pub fn yes_no_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "enum": ["yes", "no"]},
            "says": {"type": "string", "minLength": 1, "maxLength": 200}
        },
        "required": ["answer", "says"],
        "additionalProperties": false
    })
}

enum Stage {
    Embedding(usize),
    Answering(usize),
}

/// Asks every question and waits for every answer (`progress` is told answers done / all).
/// Answers of other requests that arrive meanwhile go to their residents as usual.
pub fn ask_all(
    world: &mut World,
    asks: &[Ask],
    mut progress: impl FnMut(usize, usize),
) -> Vec<Answer> {
    let mut answers: Vec<Option<Answer>> = vec![None; asks.len()];
    let mut waiting: HashMap<u64, Stage> = HashMap::new();
    for (i, a) in asks.iter().enumerate() {
        let req = LlmRequest::embed("lab_query", a.question.clone()).priority(Priority::Normal);
        let h = world.resource_mut::<Llm>().submit(req.for_agent(a.who));
        waiting.insert(h.0, Stage::Embedding(i));
    }
    let mut done = 0;
    while let Some(msg) = next_reply(world, &waiting) {
        match waiting.remove(&msg.handle.0) {
            Some(Stage::Embedding(i)) => {
                let h = answer_request(world, &asks[i], &msg);
                match h {
                    Some((h, recalled)) => {
                        waiting.insert(h, Stage::Answering(i));
                        answers[i] = Some(Answer {
                            recalled,
                            ..Default::default()
                        });
                    }
                    None => {
                        answers[i] = Some(failed(asks[i].shape, Vec::new()));
                        done += 1;
                        progress(done, asks.len());
                    }
                }
            }
            Some(Stage::Answering(i)) => {
                let recalled = answers[i].take().map(|a| a.recalled).unwrap_or_default();
                answers[i] = Some(read_answer(asks[i].shape, &msg, recalled));
                done += 1;
                progress(done, asks.len());
            }
            None => {}
        }
    }
    answers
        .into_iter()
        .zip(asks)
        .map(|(a, ask)| match a {
            Some(a) if !a.text.is_empty() || a.yes.is_some() => a,
            Some(a) => failed(ask.shape, a.recalled),
            None => failed(ask.shape, Vec::new()),
        })
        .collect()
}

/// The fail-safe: no knowledge claimed.
fn failed(shape: Shape, recalled: Vec<String>) -> Answer {
    Answer {
        yes: (shape == Shape::YesNo).then_some(false),
        text: "I'm not sure.".into(),
        fallback: true,
        recalled,
        contradicts: false,
    }
}

/// Retrieves what the resident recalls about the question and submits the answer's request;
/// returns its handle and the memories shown.
fn answer_request(world: &mut World, a: &Ask, emb: &LlmReply) -> Option<(u64, Vec<String>)> {
    let query = match &emb.reply.value {
        LlmValue::Embedding(e) if !e.vector.is_empty() => Some(e.clone()),
        _ => None,
    };
    let now = world.resource::<SimClock>().now;
    let params = world.resource::<Cognition>().0.retrieval.clone();
    let (resident, outlook, id, stream) = world
        .query::<(&Resident, &Outlook, &Identity, &MemoryStream)>()
        .get(world, a.who)
        .ok()?;
    let found = retrieve_where(stream, query.as_ref(), now, &params, 15, |n| {
        a.ablation.keeps(n)
    });
    let recalled: Vec<String> = found
        .iter()
        .filter_map(|f| stream.get(f.id))
        .map(|n| n.description.clone())
        .collect();
    let memories = if found.is_empty() {
        format!("{} remembers nothing in particular about this.", id.name)
    } else {
        numbered_found(stream, &found)
    };
    let who = Who::of(resident, outlook, &id.name, now);
    let quoted = format!("\"{}\"", one_line(&a.question).replace('"', "'"));
    let prompts = world.resource::<Prompts>();
    let req = match a.shape {
        Shape::YesNo => LlmRequest::chat(
            "lab_probe",
            prompts.render_for(
                "probe",
                &who,
                &[("memories", &memories), ("question", &quoted)],
            ),
            OutputShape::Json(yes_no_schema()),
        )
        .sampling(Sampling::greedy(80))
        .fallback(LlmValue::Json(
            json!({"answer": "no", "says": "I'm not sure."}),
        )),
        Shape::Open => LlmRequest::chat(
            "lab_interview",
            prompts.render_for(
                "interview",
                &who,
                &[
                    ("persona", "an interviewer"),
                    ("memories", &memories),
                    ("conversation", "(this is the first question)"),
                    ("question", &quoted),
                ],
            ),
            OutputShape::Json(crate::play::interview::answer_schema()),
        )
        .sampling(Sampling::greedy(120))
        .fallback(LlmValue::Json(json!({"answer": "I'm not sure."}))),
    };
    let h = world
        .resource_mut::<Llm>()
        .submit(req.priority(Priority::Normal).for_agent(a.who));
    Some((h.0, recalled))
}

fn read_answer(shape: Shape, msg: &LlmReply, recalled: Vec<String>) -> Answer {
    let v = match &msg.reply.value {
        LlmValue::Json(v) if !msg.reply.is_fallback() => v,
        _ => return failed(shape, recalled),
    };
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(one_line);
    match shape {
        Shape::YesNo => match field("answer").as_deref() {
            Some(yn @ ("yes" | "no")) => {
                let text = field("says").unwrap_or_default();
                Answer {
                    yes: Some(yn == "yes"),
                    contradicts: words_say(&text).is_some_and(|w| w != (yn == "yes")),
                    text,
                    fallback: false,
                    recalled,
                }
            }
            _ => failed(shape, recalled),
        },
        Shape::Open => match field("answer") {
            Some(t) if !t.trim().is_empty() => Answer {
                yes: None,
                text: t,
                fallback: false,
                recalled,
                contradicts: false,
            },
            _ => failed(shape, recalled),
        },
    }
}

/// Submits requests that belong to no resident (the judge's) and waits for every answer:
/// `None` where the model gave no valid answer (its fail-safe was used).
pub fn run_requests(
    world: &mut World,
    reqs: Vec<LlmRequest>,
    mut progress: impl FnMut(usize, usize),
) -> Vec<Option<Value>> {
    let n = reqs.len();
    let mut out: Vec<Option<Value>> = vec![None; n];
    let mut waiting: HashMap<u64, usize> = HashMap::new();
    for (i, r) in reqs.into_iter().enumerate() {
        let h = world.resource_mut::<Llm>().submit(r);
        waiting.insert(h.0, i);
    }
    let mut done = 0;
    while let Some(msg) = next_reply(world, &waiting) {
        // `next_reply` gives only answers to requests in `waiting`.
        if let Some(i) = waiting.remove(&msg.handle.0) {
            if let LlmValue::Json(v) = &msg.reply.value
                && !msg.reply.is_fallback()
            {
                out[i] = Some(v.clone());
            }
            done += 1;
            progress(done, n);
        }
    }
    out
}

/// The next answer to one of `ours` (answers to other requests that arrive meanwhile go to
/// their residents as usual); `None` when none is awaited, or nothing at all has come back for
/// 15 minutes (every request carries the runtime's own time-out and retries: this is the last
/// guard against one that never comes back).
fn next_reply<T>(world: &mut World, ours: &HashMap<u64, T>) -> Option<LlmReply> {
    let mut quiet = Instant::now();
    while !ours.is_empty() {
        let got = world.resource_scope(|world, mut llm: Mut<Llm>| {
            llm.wait_reply(Duration::from_millis(500), world.entities())
        });
        match got {
            Some(msg) if ours.contains_key(&msg.handle.0) => return Some(msg),
            Some(msg) => {
                quiet = Instant::now();
                crate::cognition::ask::pending::route_reply(world, msg);
            }
            None if quiet.elapsed() > Duration::from_secs(900) => return None,
            None => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::words_say;

    #[test]
    fn the_words_of_an_answer_say_yes_or_no_only_where_they_say_it_plainly() {
        assert_eq!(
            words_say("No, I haven't heard anything about it."),
            Some(false)
        );
        assert_eq!(
            words_say("\"Yes! Sam Moore is running for mayor.\""),
            Some(true)
        );
        assert_eq!(words_say("Yeah, Isabella told me"), Some(true));
        assert_eq!(words_say("no."), Some(false));
        assert_eq!(words_say("I don\u{2019}t know who that is"), Some(false));
        assert_eq!(words_say("Honestly I have never heard of him"), Some(false));
        // Not a plain yes or no.
        assert_eq!(words_say("No doubt Sam will win"), None);
        assert_eq!(words_say("Nobody told me, but I saw the poster"), None);
        assert_eq!(words_say("Yesterday Isabella mentioned a party"), None);
        assert_eq!(words_say("a scripted answer"), None);
        assert_eq!(words_say("I'm not sure."), None);
        assert_eq!(words_say(""), None);
    }
}
