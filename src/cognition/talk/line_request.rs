//! A line of conversation asked of the model: its shape (a line and the topic it is about), the
//! transcript and place words it shows, and the request itself, used to ask for a line
//! (`converse`) and to ask again when a line does not hold up (`utterance`).

use crate::agent::GridPos;
use crate::agent::conversation::Topic;
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::{numbered, one_line};
use crate::cognition::resident::scratch::Scratch;
use crate::llm::{LlmRequest, LlmValue, OutputShape, Sampling};
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use serde_json::{Value, json};

/// The longest line, in characters (the length budget of a turn).
pub const LINE_MAX_CHARS: usize = 160;

/// The schema of a line: which of `topics` topics it is about (by number), the words, and
/// whether the conversation ends. (Keys are written in order, so the topic comes before the
/// words.)
pub fn line_schema(topics: usize) -> Value {
    json!({
        "type": "object",
        "properties": {
            "end_conversation": {"type": "boolean"},
            "topic": {"type": "integer", "minimum": 1, "maximum": topics.max(1)},
            "utterance": {"type": "string", "minLength": 1, "maxLength": LINE_MAX_CHARS}
        },
        "required": ["end_conversation", "topic", "utterance"],
        "additionalProperties": false
    })
}

/// The conversation so far, one "Name: line" per line.
pub fn transcript(lines: &[(String, String)]) -> String {
    if lines.is_empty() {
        return "(nothing has been said yet)".into();
    }
    lines
        .iter()
        .map(|(s, l)| format!("{s}: \"{}\"", one_line(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where someone stands, in words ("Hobbs Cafe, cafe").
pub fn place_words(map: &WorldMap, pos: &GridPos) -> String {
    map.address(pos.tile)
        .to_string()
        .split(':')
        .skip(1)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a speaker knows of `partner`, as its line's prompt says it: the note the model wrote at
/// the end of their last conversation, or that there is none yet.
pub fn partner_note<'a>(scratch: Option<&'a Scratch>, partner: &str) -> &'a str {
    scratch
        .and_then(|s| s.note_of(partner))
        .unwrap_or("nothing in particular yet")
}

/// What a line is asked with.
pub struct LineAsk<'a> {
    /// The speaker.
    pub who: &'a Who<'a>,
    /// The partner.
    pub partner: &'a str,
    /// What the speaker knows of the partner ([`partner_note`]).
    pub partner_note: &'a str,
    /// Where they stand, in words.
    pub place: &'a str,
    /// What the speaker remembers, numbered.
    pub memories: &'a str,
    /// The lines so far.
    pub conversation: &'a str,
    /// The topics offered.
    pub topics: &'a [Topic],
    /// Whether the partner is the player (answers come first).
    pub with_player: bool,
    /// Whether it is the second asking (sampled, so a cached answer is not given back).
    pub retry: bool,
}

/// The request for a line about one of `topics`.
pub fn line_request(ask: &Asker, a: LineAsk) -> LlmRequest {
    let topics = numbered(a.topics.iter().map(|t| t.about.as_str()));
    let req = ask.chat(
        "converse",
        a.who,
        &[
            ("partner", a.partner),
            ("partner_note", a.partner_note),
            ("memories", a.memories),
            ("place", a.place),
            ("conversation", a.conversation),
            ("topics", &topics),
        ],
        OutputShape::Json(line_schema(a.topics.len())),
        110,
    );
    // A retry, or towns that differ by their seed: the same request, sampled. Each line its own
    // draw, the same for the same seed and conversation.
    let c = &ask.cfg.0;
    let req = if a.retry || c.talk_temperature > 0.0 {
        let mut sampling = Sampling::greedy(110);
        sampling.temperature = if a.retry {
            c.talk_temperature.max(0.7)
        } else {
            c.talk_temperature
        };
        sampling.seed = c.seed.wrapping_add(crate::sim::hash::fnv1a_32(
            format!("{}|{}", a.who.name, a.conversation).as_bytes(),
        ));
        req.sampling(sampling)
    } else {
        req
    };
    req.priority(if a.with_player {
        crate::llm::Priority::Interactive
    } else {
        crate::llm::Priority::Normal
    })
    .fallback(LlmValue::Json(
        json!({"end_conversation": false, "topic": 0, "utterance": ""}),
    ))
}
