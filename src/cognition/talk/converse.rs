//! Conversations, turn by turn. The one who chose to talk walks up to the other, who stops; once
//! they stand together, facing each other, each turn the speaker retrieves its memories about
//! the partner and the talk so far and says one line (a shaped answer: the words and whether the
//! conversation ends), shown as a speech bubble and in the town's conversation log. A
//! conversation ends when a speaker ends it (after the first exchange) or at the configured
//! number of lines. Afterwards each keeps a chat memory with the lines, a summary, a planning
//! thought and a memo; the cool-down starts; and the time spent talking is written into the plan
//! with the rest of the window shifted to still add up.

use crate::agent::conversation::{
    Conversation, ConversationLog, PlayerChat, Speech, Talking, Topic, say_line,
};
use crate::agent::schedule::{Block, insert_action};
use crate::agent::{
    CurrentAction, DayPlan, Facing, GridPos, Identity, Outlook, Resident, STAY_HERE,
};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::{numbered, one_line};
use crate::cognition::config::Cognition;
use crate::cognition::resident::scratch::{NOTE_MAX_CHARS, Scratch};
use crate::cognition::talk::line_request::{
    LineAsk, line_request, partner_note, place_words, transcript,
};
use crate::llm::{LlmRequest, LlmValue, OutputShape};
use crate::memory::retrieve::retrieve_and_touch;
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde_json::{Value, json};
use std::collections::HashSet;

/// Memories a conversation line's prompt lists in the original (capped by
/// `cognition.prompt_memories`).
const TALK_MEMORIES: usize = 15;

/// The schema of what a conversation leaves in memory.
pub fn chat_memory_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string", "minLength": 5, "maxLength": 150},
            "planning": {"type": "string", "minLength": 5, "maxLength": 200},
            "memo": {"type": "string", "minLength": 5, "maxLength": 200},
            "partner_note": {"type": "string", "minLength": 5, "maxLength": NOTE_MAX_CHARS}
        },
        "required": ["summary", "planning", "memo", "partner_note"],
        "additionalProperties": false
    })
}

/// Runs conversations: meeting, turns, and the end.
#[expect(
    clippy::type_complexity,
    reason = "a conversation reads and changes both people"
)]
pub fn converse(
    mut ask: Asker,
    mut commands: Commands,
    mut chat: ResMut<PlayerChat>,
    mut log: ResMut<ConversationLog>,
    mut convs: Query<(Entity, &mut Conversation)>,
    mut people: Query<(
        &Identity,
        &GridPos,
        &CurrentAction,
        &mut Facing,
        Option<&mut Pending>,
        Option<&mut Scratch>,
        Option<&mut DayPlan>,
        Option<&Resident>,
        Option<&Outlook>,
    )>,
) {
    let now = ask.clock.now;
    let cd = ask.cfg.0.chat_cooldown_minutes as i64 * 60;
    for (ce, mut conv) in &mut convs {
        if !conv.active() {
            continue;
        }
        let [a, b] = conv.people;
        let Ok([pa, pb]) = people.get_many(conv.people) else {
            conv.ended = Some(now); // someone left the world
            continue;
        };
        let busy = [pa.4, pb.4].iter().any(|p| p.is_some_and(|p| p.any(|j| matches!(j, Job::ChatQuery { conversation } | Job::DialogueQuery { conversation } | Job::Dialogue { conversation, .. } | Job::Utterance { conversation, .. } | Job::LineCheck { conversation, .. } | Job::InviteAnswer { conversation, .. } if *conversation == ce))));
        // A line not yet heard (an invitation whose answer is still to be asked) holds the turn.
        let unheard = log.lines[log.heard.min(log.lines.len())..]
            .iter()
            .any(|l| l.conversation == ce);
        // Lines written ahead (a whole conversation) are said by `dialogue::say_scripted`.
        if busy || unheard || !conv.script.is_empty() {
            continue;
        }
        let (ta, tb) = (pa.1.tile, pb.1.tile);
        let both_residents = pa.7.is_some() && pb.7.is_some();
        // Talking with the player: answers come before background cognition.
        let priority = if pa.7.is_some() && pb.7.is_some() {
            crate::llm::Priority::Normal
        } else {
            crate::llm::Priority::Interactive
        };
        let meeting = conv.lines.is_empty() && ta.manhattan(tb) > 2;
        let give_up = meeting && now.0 - conv.started.0 > 20 * 60;
        if meeting && !give_up {
            continue;
        }
        // Face each other.
        if let Ok([mut fa, mut fb]) = people.get_many_mut([a, b]) {
            let d = (tb.x - ta.x).signum();
            if d != 0 {
                *fa.3 = Facing(d);
                *fb.3 = Facing(-d);
            }
        }
        // A line owed (an invitation's answer, news heard already) is said before a close.
        let owed = conv.owed[conv.next].is_some();
        if give_up || (conv.closing && !owed) || conv.lines.len() >= conv.max_lines {
            conv.ended = Some(now);
            if chat.conversation == Some(ce) {
                chat.conversation = None;
                chat.outbox.clear();
            }
            let names = conv.names.clone();
            let started = conv.started;
            for (k, e) in conv.people.into_iter().enumerate() {
                commands.entity(e).remove::<Talking>();
                let Ok(mut p) = people.get_mut(e) else {
                    continue;
                };
                if let Some(s) = p.5.as_mut() {
                    s.chat_cooldown
                        .insert(names[1 - k].clone(), now.plus_secs(cd));
                }
                if let Some(plan) = p.6.as_mut() {
                    write_chat_into_plan(plan, started, now, &names[1 - k]);
                }
                if !give_up
                    && !conv.lines.is_empty()
                    && let (Some(pending), Some(resident), Some(outlook)) = (p.4.as_mut(), p.7, p.8)
                {
                    let who = Who::of(resident, outlook, &names[k], now);
                    let text = transcript(&conv.lines);
                    let known = partner_note(p.5.as_deref(), &names[1 - k]);
                    let req = ask.chat(
                        "chat_memory",
                        &who,
                        &[
                            ("partner", &names[1 - k]),
                            ("known", known),
                            ("conversation", &text),
                        ],
                        OutputShape::Json(chat_memory_schema()),
                        220,
                    );
                    let slack = ask.memory_slack();
                    ask.ask(e, pending, req, Job::ChatMemory { conversation: ce }, slack);
                }
            }
            continue;
        }
        let speaker = conv.people[conv.next];
        let listener_name = conv.names[1 - conv.next].clone();
        let Ok(mut p) = people.get_mut(speaker) else {
            continue;
        };
        let Some(pending) = p.4.as_mut() else {
            // The player's turn: a line typed is said; in the player's own conversation the
            // resident waits for it; otherwise (a resident spoke to the avatar) it waits while a
            // window holds it, else a while, and then goes on. It remembers the talk either way.
            if chat.conversation == Some(ce) {
                if let Some(text) = chat.outbox.pop_front() {
                    say_line(&mut commands, &mut log, now, ce, &mut conv, speaker, text);
                }
                continue;
            }
            let waited = now.0 - conv.next_turn.0;
            if chat.hold || waited < ask.cfg.0.player_reply_minutes as i64 * 60 {
                continue;
            }
            conv.closing = true;
            continue;
        };

        // Two residents (not the player) with `whole_dialogue`: the whole conversation is
        // asked in one request, from what the embedding of their meeting retrieves.
        if ask.cfg.0.whole_dialogue && !conv.whole && conv.lines.is_empty() && both_residents {
            conv.whole = true;
            let query = format!(
                "{} and {}: starting a conversation",
                conv.names[0], conv.names[1]
            );
            ask.ask(
                speaker,
                pending,
                LlmRequest::embed("chat_query", query).priority(priority),
                Job::DialogueQuery { conversation: ce },
                1,
            );
            continue;
        }
        let topic = conv
            .lines
            .last()
            .map(|(_, l)| l.clone())
            .unwrap_or_else(|| "starting a conversation".into());
        let query = format!("{listener_name}: {topic}");
        // The embedding is quick: it is due at the next step, so the line itself (the long
        // part, decoded while the town goes on) has the rest of the time until it is due
        // (`line_slack`).
        ask.ask(
            speaker,
            pending,
            LlmRequest::embed("chat_query", query).priority(priority),
            Job::ChatQuery { conversation: ce },
            1,
        );
    }
}

/// Writes a finished conversation into a plan: `[start, now)` becomes "chatting with …" and what
/// was planned in that time follows it, the window still adding up.
pub fn write_chat_into_plan(plan: &mut DayPlan, start: GameTime, now: GameTime, partner: &str) {
    if start.day() != now.day() || plan.day != Some(now.day()) {
        return;
    }
    let (s, e) = (
        start.minute_of_day(),
        now.minute_of_day().max(start.minute_of_day() + 1),
    );
    let window_end = plan.at(s).map(|i| plan.blocks[i].end).unwrap_or(e).max(e);
    let nid = plan.new_id();
    let chat = Block {
        start: s,
        end: e,
        description: format!("chatting with {partner}"),
        emoji: "💬".into(),
        address: STAY_HERE.into(),
        id: nid,
        activity: nid,
        group: nid,
        subtask: true,
        object_state: String::new(),
    };
    plan.blocks = insert_action(std::mem::take(&mut plan.blocks), s, chat, window_end);
    plan.current = None;
}

/// The embedding for a line arrived: retrieve what the speaker remembers, draw the topics it may
/// talk about, and ask for the line.
#[expect(
    clippy::type_complexity,
    reason = "the line reads the speaker, the partner and the talk"
)]
pub fn apply_chat_queries(
    mut ask: Asker,
    map: Res<WorldMap>,
    log: Res<ConversationLog>,
    convs: Query<&Conversation>,
    others: Query<Has<crate::agent::avatar::Avatar>>,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &GridPos,
        Option<&DayPlan>,
        Option<&Scratch>,
        &mut MemoryStream,
        &mut Pending,
    )>,
) {
    let real_time = ask.cfg.real_time();
    let now = ask.clock.now;
    // The answers are taken in the agents' order; each line's request is then written in
    // parallel (retrieval reads and touches only the speaker's own stream; in a town of a
    // thousand it was a sixth of a step), and asked for in the same order as before.
    let mut items: Vec<ChatQueryItem> = Vec::new();
    for (agent, resident, id, outlook, pos, plan, scratch, stream, mut pending) in &mut agents {
        let ready: Vec<_> = take!(
            pending,
            ask.clock.step,
            real_time,
            ChatQuery { conversation }
        )
        .collect();
        if !ready.is_empty() {
            items.push((
                agent, resident, id, outlook, pos, plan, scratch, stream, pending, ready,
            ));
        }
    }
    let ask_ref = &ask;
    let write = |item: &mut ChatQueryItem| -> Vec<(LlmRequest, Job, u32)> {
        let (agent, resident, id, outlook, pos, plan, scratch, stream, _, ready) = item;
        let (agent, plan, scratch, ask) = (*agent, *plan, *scratch, ask_ref);
        let mut out = Vec::new();
        for (conversation, reply) in std::mem::take(ready) {
            let Ok(conv) = convs.get(conversation) else {
                continue;
            };
            if !conv.active() {
                continue;
            }
            let k = if conv.people[0] == agent { 1 } else { 0 };
            let partner = conv.names[k].clone();
            let with_player = others.get(conv.people[k]).unwrap_or(false);
            let query = match &reply.value {
                LlmValue::Embedding(e) if !e.vector.is_empty() => Some(e.clone()),
                _ => None,
            };
            let (topics, memories) =
                speaker_side(ask, &log, conv, 1 - k, stream, query.as_ref(), plan);
            let place = place_words(&map, pos);
            let who = Who::of(resident, outlook, &id.name, now);
            let req = line_request(
                ask,
                LineAsk {
                    who: &who,
                    partner: &partner,
                    partner_note: partner_note(scratch, &partner),
                    place: &place,
                    memories: &memories,
                    conversation: &transcript(&conv.lines),
                    topics: &topics,
                    with_player,
                    retry: false,
                },
            );
            let slack = line_slack(
                conv.next_turn,
                now,
                ask.clock.sec_per_step,
                ask.cfg.0.decision_slack_steps,
            );
            out.push((
                req,
                Job::Utterance {
                    conversation,
                    topics,
                    retry: false,
                },
                slack,
            ));
        }
        out
    };
    let asks = crate::sim::parallel::map_mut(&mut items, 8, write);
    for (item, reqs) in items.iter_mut().zip(asks) {
        for (req, job, slack) in reqs {
            ask.ask(item.0, &mut item.8, req, job, slack);
        }
    }
}

/// What the speaker at `me` (index in the conversation's `people`) may talk about next and the
/// memories its prompt lists: what `query` retrieves from its stream (touched), then its current
/// concerns (news held, gatherings), drawn as topics; the retrieved memories the topics do not
/// already offer, numbered.
pub fn speaker_side(
    ask: &Asker,
    log: &ConversationLog,
    conv: &Conversation,
    me: usize,
    stream: &mut MemoryStream,
    query: Option<&crate::llm::Embedding>,
    plan: Option<&DayPlan>,
) -> (Vec<Topic>, String) {
    let c = &ask.cfg.0;
    let (now, memory) = (ask.clock.now, c.ablation.memory());
    let (name, partner) = (&conv.names[me], &conv.names[1 - me]);
    let found = if memory {
        let listed = c.memories_listed(TALK_MEMORIES);
        retrieve_and_touch(stream, query, now, &c.retrieval, listed)
    } else {
        Vec::new()
    };
    let concerns = if memory {
        crate::cognition::talk::topics::concerns(
            stream,
            now,
            c.social.gatherings_first.then_some(name.as_str()),
        )
    } else {
        Vec::new()
    };
    let known = known_to_partner(log, name, partner);
    let mut nodes: Vec<&crate::memory::MemoryNode> =
        found.iter().filter_map(|f| stream.get(f.id)).collect();
    nodes.extend(concerns.iter().filter_map(|i| stream.get(*i)));
    let input = crate::cognition::talk::topics::TopicInput {
        speaker: name,
        partner,
        now,
        memories: nodes,
        known_to_partner: &known,
        said_here: &conv.topics,
        last_line: conv
            .lines
            .last()
            .filter(|(who, _)| who == partner)
            .map(|(_, l)| l.as_str()),
        plan_next: plan.and_then(|p| plan_next(p, now)),
        hearsay: c.social.hearsay_invites,
        own_news: c.social.own_news,
    };
    let topics = crate::cognition::talk::topics::candidates(&input, conv.owed[me].as_ref());
    let memories = listed_memories(stream, &found, &topics, name, partner);
    (topics, memories)
}

/// What writing a line's request reads and changes of a speaker, with the answers taken.
type ChatQueryItem<'a> = (
    Entity,
    &'a Resident,
    &'a Identity,
    &'a Outlook,
    &'a GridPos,
    Option<&'a DayPlan>,
    Option<&'a Scratch>,
    Mut<'a, MemoryStream>,
    Mut<'a, Pending>,
    Vec<(Entity, crate::llm::runtime::Reply)>,
);

/// What a line's prompt lists of the speaker's retrieved memories: those the topics do not
/// already offer in the same words (a fact to tell is listed once, as a topic) and not the
/// observation that the two are chatting (the prompt says so before). Read once, not twice.
pub fn listed_memories(
    stream: &MemoryStream,
    found: &[crate::memory::retrieve::Scored],
    topics: &[Topic],
    speaker: &str,
    partner: &str,
) -> String {
    if found.is_empty() {
        return format!("{speaker} does not remember anything in particular about {partner}.");
    }
    let offered: HashSet<_> = topics.iter().filter_map(|t| t.source).collect();
    let chatting = [
        format!("{speaker} is chatting with {partner}"),
        format!("{partner} is chatting with {speaker}"),
    ];
    let kept: Vec<&str> = found
        .iter()
        .filter(|f| !offered.contains(&f.id))
        .filter_map(|f| stream.get(f.id))
        .map(|n| n.description.as_str())
        .filter(|d| !chatting.iter().any(|c| c == d))
        .collect();
    if kept.is_empty() {
        return "(nothing more than the things listed below)".into();
    }
    numbered(kept)
}

/// Steps from now (the step after a turn's query was asked) by which its line is due: the
/// step after the last line has been said out (its speaking time), and never sooner than the
/// decision slack (at most two steps) after the query's own step. The cadence of lines in game
/// time comes from this alone, never from how fast the model answers; the line, the long part,
/// is decoded while the town goes on.
pub fn line_slack(
    next_turn: GameTime,
    now: GameTime,
    sec_per_step: u32,
    decision_slack: u32,
) -> u32 {
    let said_out = ((next_turn.0 - now.0).max(0) as u32).div_ceil(sec_per_step.max(1));
    (said_out + 1).max(decision_slack.min(2)).max(1)
}

/// The speaker's next plan item from now, in words ("serving customers until 8 PM").
pub fn plan_next(plan: &DayPlan, now: GameTime) -> Option<String> {
    let i = plan.at(now.minute_of_day())?;
    let b = plan
        .blocks
        .iter()
        .skip(i)
        .find(|b| !b.description.starts_with("chatting with"))?;
    Some(format!(
        "{} until {}",
        b.description,
        crate::sim::time::minute_words(b.end)
    ))
}

/// Facts and gatherings a speaker already told a partner, or heard from them (from the town's
/// log).
pub fn known_to_partner(log: &ConversationLog, me: &str, partner: &str) -> HashSet<String> {
    log.news_between(me, partner)
        .filter_map(|l| l.topic.as_ref())
        .flat_map(|t| {
            t.fact
                .clone()
                .into_iter()
                .chain(t.gathering.as_ref().map(|g| g.describe()))
        })
        .collect()
}

/// What a finished conversation leaves in each participant's memory.
pub fn apply_chat_memories(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    prompts: Res<crate::cognition::ask::prompts::Prompts>,
    mut fallbacks: ResMut<crate::cognition::ask::flaws::Fallbacks>,
    town: Res<crate::agent::TownNames>,
    convs: Query<&Conversation>,
    mut agents: Query<(
        &Identity,
        &mut MemoryStream,
        &mut Pending,
        Option<&mut Scratch>,
    )>,
) {
    // Made at the first conversation to remember (most steps have none).
    let mut own_words: Option<Vec<String>> = None;
    let expiry = clock
        .now
        .plus_secs(cog.0.thought_expiry_days as i64 * 86_400);
    for (id, mut stream, mut pending, mut scratch) in &mut agents {
        for (conversation, reply) in take!(
            pending,
            clock.step,
            cog.real_time(),
            ChatMemory { conversation }
        ) {
            let Ok(conv) = convs.get(conversation) else {
                continue;
            };
            if !cog.0.ablation.memory() {
                continue;
            }
            let partner = if conv.names[0] == id.name {
                conv.names[1].clone()
            } else {
                conv.names[0].clone()
            };
            // A summary, takeaway or memo that does not hold up is not used (the summary is then
            // written from the conversation's topics); nor is a summary of a subject the lines
            // never touch.
            let said: Vec<&str> = conv.lines.iter().map(|(_, t)| t.as_str()).collect();
            let said = said.join("\n");
            let own_words =
                &*own_words.get_or_insert_with(|| prompts.get("chat_memory").own_words());
            let ctx = crate::cognition::ask::flaws::Context {
                names: &town.words,
                own_words,
                earlier: &[],
            };
            let mut get = |k: &str| {
                let t = match &reply.value {
                    LlmValue::Json(v) if !reply.is_fallback() => {
                        v.get(k).and_then(Value::as_str).map(one_line)
                    }
                    _ => None,
                }
                .unwrap_or_default();
                match crate::cognition::ask::flaws::flaw(&t, &ctx)
                    .or((t.split_whitespace().count() < 2)
                        .then_some(crate::cognition::ask::flaws::Flaw::Empty))
                    .or_else(|| {
                        (k == "summary"
                            && crate::cognition::ask::flaws::ungrounded(&t, &said, &town.words))
                        .then_some(crate::cognition::ask::flaws::Flaw::Unrelated)
                    }) {
                    Some(f) => {
                        fallbacks.count("chat memory", f);
                        None
                    }
                    None => Some(t),
                }
            };
            // No summary of the model's: with the `template_lines` aid one is written from the
            // topics; without, the memory says only that they talked (its lines are kept).
            let summary = get("summary").or_else(|| {
                cog.0
                    .aids
                    .template_lines
                    .then(|| topics_summary(&conv.topics))
            });
            let summary = match &summary {
                Some(s) => format!(": {s}"),
                None => String::new(),
            };
            let kw = vec![partner.clone(), id.name.clone()];
            let chat = stream.add(
                NodeKind::Chat,
                NewNode {
                    subject: id.name.clone(),
                    predicate: "chat with".into(),
                    object: partner.clone(),
                    description: format!("{} and {partner} talked{summary}", id.name),
                    keywords: kw.clone(),
                    chat: conv.lines.clone(),
                    ..default()
                },
                clock.now,
            );
            stream.add(
                NodeKind::Event,
                NewNode {
                    subject: id.name.clone(),
                    predicate: "chat with".into(),
                    object: partner.clone(),
                    description: format!("{} talked with {partner}{summary}", id.name),
                    keywords: kw.clone(),
                    evidence: vec![chat],
                    ..default()
                },
                clock.now,
            );
            // What this resident now knows of the partner, in the model's words, for their
            // next talk; without a note that holds up, what it knew before stays.
            if let Some(note) = get("partner_note")
                && let Some(scratch) = scratch.as_mut()
            {
                scratch.acquaintances.insert(partner.clone(), note);
            }
            for (text, predicate) in [
                (
                    get("planning").map(|p| format!("For {}'s planning: {p}", id.name)),
                    "plans",
                ),
                (get("memo"), "remembers"),
            ] {
                let Some(text) = text else { continue };
                stream.add(
                    NodeKind::Thought,
                    NewNode {
                        subject: id.name.clone(),
                        predicate: predicate.into(),
                        object: partner.clone(),
                        keywords: town
                            .mentioned(&text, &id.name)
                            .into_iter()
                            .chain([partner.clone()])
                            .collect(),
                        description: text,
                        evidence: vec![chat],
                        expiry: Some(expiry),
                        ..default()
                    },
                    clock.now,
                );
            }
        }
    }
}

/// A summary written from a conversation's topics ("Sam Moore is running for mayor; an
/// invitation to a party at Hobbs Cafe on February 14 from 5 PM to 7 PM; their day").
pub fn topics_summary(topics: &[Topic]) -> String {
    use crate::agent::conversation::TopicKind as K;
    let mut parts: Vec<String> = Vec::new();
    for t in topics {
        let p = match t.kind {
            K::Fact | K::AlreadyHeard => t.fact.clone().unwrap_or_default(),
            K::Invitation => t
                .gathering
                .as_ref()
                .map(|g| format!("an invitation to {}", g.describe()))
                .unwrap_or_default(),
            K::Answer => match &t.answer {
                Some((true, _)) => "an invitation accepted".into(),
                _ => "an invitation declined".into(),
            },
            K::Plan => "their plans for the day".into(),
            K::Question | K::Reply | K::SmallTalk => "how their day is going".into(),
        };
        if !p.is_empty() && !parts.contains(&p) {
            parts.push(p);
        }
    }
    if parts.is_empty() {
        "small talk".into()
    } else {
        parts.join("; ")
    }
}

/// Removes speech bubbles whose time has passed.
pub fn clear_speech(
    mut commands: Commands,
    clock: Res<SimClock>,
    speakers: Query<(Entity, &Speech)>,
) {
    for (e, s) in &speakers {
        if s.until <= clock.now {
            commands.entity(e).remove::<Speech>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{line_slack, listed_memories};
    use crate::agent::conversation::{Topic, TopicKind};
    use crate::memory::retrieve::Scored;
    use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
    use crate::sim::time::GameTime;

    #[test]
    fn a_lines_memories_leave_out_what_its_topics_and_its_first_words_already_say() {
        let mut s = MemoryStream::default();
        let mut add = |d: &str| {
            let id = s.add(
                NodeKind::Thought,
                NewNode {
                    description: d.into(),
                    ..Default::default()
                },
                GameTime(0),
            );
            Scored {
                id,
                breakdown: Default::default(),
            }
        };
        let found = vec![
            add("Mei Lin is chatting with John Lin"),
            add("John Lin is chatting with Mei Lin"),
            add("John wonders who will win the mayoral election"),
            add("John Lin is relaxing at home"),
            add("John works alongside Tom Moreno"),
        ];
        let tell = Topic {
            source: Some(found[2].id),
            ..Topic::new(TopicKind::Fact, "tell Mei Lin: John wonders who will win")
        };
        let topics = [
            tell,
            Topic::new(TopicKind::SmallTalk, "small talk with Mei Lin"),
        ];
        let listed = listed_memories(&s, &found, &topics, "John Lin", "Mei Lin");
        assert_eq!(
            listed,
            "1. John Lin is relaxing at home\n2. John works alongside Tom Moreno"
        );
        // Everything already said elsewhere: the prompt says so rather than listing nothing.
        let listed = listed_memories(&s, &found[..3], &topics, "John Lin", "Mei Lin");
        assert_eq!(listed, "(nothing more than the things listed below)");
        // Nothing retrieved.
        assert_eq!(
            listed_memories(&s, &[], &topics, "John Lin", "Mei Lin"),
            "John Lin does not remember anything in particular about Mei Lin."
        );
    }

    #[test]
    fn a_line_is_due_when_it_was_before_its_query_came_first() {
        // Before: the query was due when the last line was said out (at least two steps after
        // it was asked), the line one step after that. Now the query is due at the next step
        // and the line, asked then, by the same step as before.
        let sps = 10;
        for speak in [0i64, 10, 25, 30, 60] {
            let next_turn = GameTime(1000 + speak);
            let before = (speak as u32).div_ceil(sps).max(2) + 1;
            let now = GameTime(1000 + sps as i64);
            let after = 1 + line_slack(next_turn, now, sps, 6);
            assert_eq!(after, before, "a line said out in {speak} s");
        }
    }
}
