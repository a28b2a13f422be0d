//! Lines of a conversation as they arrive. The model's answer names a topic (one of those
//! offered) and the words. Words that do not hold up (empty, only a name or a number, the
//! prompt's own words, a repeat: [`flaws::flaw`]) are asked for again once, about the chosen
//! topic alone (unless `ask_lines_again` is off); a line about a fact or an invitation is then
//! checked against its topic with the embedder ([`Job::LineCheck`]) and asked again once when
//! off it. What still does not hold up is a short filler ([`FILLER`]) and the speaker ends the
//! talk (with the `template_lines` aid: the topic's template); a line off its topic on its last
//! asking is said in its own words. As a line about news is said, whether its words carry the
//! news is found ([`FactWords`]: heard = said); then ([`hear_lines`]) a line that does leaves the
//! listener a memory of the words said, with the conversation, the speaker and the speaker's own
//! memory it came from (a listener that held the fact already keeps no second hearing and says
//! next that it had heard it: `cognition.social.already_heard`); an invitation also asks the
//! listener whether it accepts ([`invite`](crate::cognition::talk::invite)), once per teller.

use crate::agent::avatar::Avatar;
use crate::agent::carry::FactWords;
use crate::agent::commitments::Commitments;
use crate::agent::conversation::{
    Conversation, ConversationLog, Line, PlayerChat, Topic, TopicKind, say_line,
};
use crate::agent::{DayPlan, GridPos, Identity, Outlook, Resident, TownNames, mentioned_names};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::flaws::{self, Fallbacks, Flaw};
use crate::cognition::ask::job::Job;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::{numbered, one_line};
use crate::cognition::resident::scratch::Scratch;
use crate::cognition::talk::line_request::{
    LINE_MAX_CHARS, LineAsk, line_request, partner_note, place_words, transcript,
};
use crate::cognition::talk::topics::{already_heard, template_line, topic_text};
use crate::llm::runtime::Reply;
use crate::llm::{LlmRequest, LlmValue};
use crate::memory::news::{Told, fact_of};
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use serde_json::Value;

/// The answer's topic (by number among those offered), words and wish to end. An answer the
/// model did not give (the fail-safe), or one without a topic on the list, is small talk (or
/// the last topic offered, when none is small talk: an owed answer): a fail-safe never picks news.
fn parse_line(reply: &Reply, topics: &[Topic], town: &TownNames) -> (Option<Topic>, String, bool) {
    let small_talk = || {
        topics
            .iter()
            .find(|t| t.kind == TopicKind::SmallTalk)
            .or(topics.last())
            .cloned()
    };
    let (LlmValue::Json(v), false) = (&reply.value, reply.is_fallback()) else {
        return (small_talk(), String::new(), false);
    };
    let topic = match v.get("topic").and_then(Value::as_u64) {
        Some(k) if (1..=topics.len() as u64).contains(&k) => topics.get(k as usize - 1).cloned(),
        _ => small_talk(),
    };
    let text = line_words(v.get("utterance"), town);
    let end = v
        .get("end_conversation")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    (topic, text, end)
}

/// A line's words as the model gave them (a JSON string), on one line, cleaned of stray
/// quotes and markers, at most [`LINE_MAX_CHARS`] characters; nothing for anything else.
pub fn line_words(v: Option<&Value>, town: &TownNames) -> String {
    v.and_then(Value::as_str)
        .map(|t| flaws::clean_line_with(&one_line(t), |p| town.is_name(p)))
        .unwrap_or_default()
        .chars()
        .take(LINE_MAX_CHARS)
        .collect()
}

/// What to do with a line that arrived.
enum Next {
    /// Say it (and whether the speaker wishes to end the conversation).
    Say(Line, bool),
    /// Ask again about this topic alone.
    Retry(Topic),
    /// Check it against its topic with the embedder (the words, the wish to end, whether it was
    /// the second asking).
    Check(Topic, String, bool, bool),
}

/// What a speaker says when the model's line for `t` did not hold up (`flaw`), counted as a
/// fallback: with the `template_lines` aid, the topic's template (which carries its fact);
/// without, a short filler about nothing ([`FILLER`], small talk), and the speaker ends the
/// conversation (the second of the pair is whether it does).
fn fallback_line(
    t: &Topic,
    conv: &Conversation,
    k: usize,
    flaw: Flaw,
    aids: &crate::cognition::config::Aids,
) -> (Line, bool) {
    if aids.template_lines {
        let line = Line {
            text: template_line(t, &conv.names[k], &conv.names[1 - k]),
            topic: Some(t.clone()),
            fallback: Some(flaw.label().to_string()),
            carried: None,
        };
        return (line, false);
    }
    let line = Line {
        text: FILLER.into(),
        topic: Some(Topic::new(
            TopicKind::SmallTalk,
            format!("small talk with {}", conv.names[1 - k]),
        )),
        fallback: Some(flaw.label().to_string()),
        carried: None,
    };
    (line, true)
}

/// What a speaker says when its model gave no line that holds up (and no template is used):
/// nothing of substance.
pub const FILLER: &str = "Hmm.";

/// Lines (and their checks) that arrived: each is said, asked again, or checked.
#[expect(
    clippy::too_many_arguments,
    reason = "a line reads the speaker, changes the conversation and reaches the listener"
)]
pub fn apply_lines(
    mut ask: Asker,
    mut commands: Commands,
    map: Res<WorldMap>,
    town: Res<TownNames>,
    chat: Res<PlayerChat>,
    mut fallbacks: ResMut<Fallbacks>,
    mut log: ResMut<ConversationLog>,
    mut convs: Query<&mut Conversation>,
    avatars: Query<(), With<Avatar>>,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &GridPos,
        &mut MemoryStream,
        &mut Pending,
        Option<&Scratch>,
    )>,
) {
    let real_time = ask.cfg.real_time();
    let mut arrived: Vec<(String, Entity, Job, Reply)> = Vec::new();
    for (agent, _, id, _, _, _, mut pending, _) in &mut agents {
        for (job, reply) in pending.take_ready(ask.clock.step, real_time, |j| {
            matches!(j, Job::Utterance { .. } | Job::LineCheck { .. })
        }) {
            arrived.push((id.name.clone(), agent, job, reply));
        }
    }
    if arrived.is_empty() {
        return;
    }
    // Said in the speakers' name order, not the order the ECS keeps people in (a load changes
    // it), so the town's log reads the same in a loaded game.
    arrived.sort_by(|a, b| a.0.cmp(&b.0));
    let own_words = ask.prompts.get("converse").own_words();
    let min_sim = ask.cfg.0.topic_min_similarity;
    let again = ask.cfg.0.ask_lines_again;
    let aids = ask.cfg.0.aids.clone();
    let places: Vec<String> = map.sectors.iter().map(|s| s.name.clone()).collect();
    let now = ask.clock.now;
    for (_, agent, job, reply) in arrived {
        let (Job::Utterance { conversation, .. } | Job::LineCheck { conversation, .. }) = &job
        else {
            continue;
        };
        let ce = *conversation;
        let Ok(mut conv) = convs.get_mut(ce) else {
            continue;
        };
        if !conv.active() {
            continue;
        }
        let k = if conv.people[0] == agent { 0 } else { 1 };
        let next = match job {
            Job::Utterance { topics, retry, .. } => {
                // The last asking: the one asked again, or the first when none is.
                let last = retry || !again;
                let (topic, text, end) = parse_line(&reply, &topics, &town);
                let Some(topic) = topic else {
                    // A line asked before topics (an older save): said as it came.
                    let text = if text.trim().is_empty() {
                        "...".into()
                    } else {
                        text
                    };
                    say(
                        &mut commands,
                        &mut log,
                        now,
                        &chat,
                        ce,
                        &mut conv,
                        agent,
                        Line::from(text),
                        end,
                    );
                    continue;
                };
                let earlier: Vec<String> = conv.lines.iter().map(|(_, l)| l.clone()).collect();
                let ctx = flaws::Context {
                    names: &town.words,
                    own_words: &own_words,
                    earlier: &earlier,
                };
                let flaw = if reply.is_fallback() {
                    Some(Flaw::Failed)
                } else {
                    flaws::line_flaw(&text, &ctx, topic.kind.news())
                };
                let source_embedded = topic.source.is_some_and(|s| {
                    agents
                        .get(agent)
                        .ok()
                        .and_then(|a| a.5.get(s).map(|n| n.embedding.is_some()))
                        .unwrap_or(false)
                });
                match flaw {
                    Some(_) if !last => Next::Retry(topic),
                    Some(f) => {
                        let (line, close) = fallback_line(&topic, &conv, k, f, &aids);
                        Next::Say(line, end || close)
                    }
                    None if topic.kind.news() && source_embedded => {
                        Next::Check(topic, text, end, retry)
                    }
                    None => match topic_text(&topic) {
                        // Without a vector to compare, a line shares a word with its topic.
                        Some(about) if flaws::unrelated(&text, about, 0.0, 1.0, &town.words) => {
                            if last {
                                off_topic(&topic, text, &conv, k, end, &aids)
                            } else {
                                Next::Retry(topic)
                            }
                        }
                        _ => Next::Say(
                            Line {
                                text,
                                topic: Some(topic),
                                fallback: None,
                                carried: None,
                            },
                            end,
                        ),
                    },
                }
            }
            Job::LineCheck {
                topic,
                text,
                end,
                retry,
                ..
            } => {
                // The vectors are shared, not copied.
                let line_vec: std::sync::Arc<[f32]> = match &reply.value {
                    LlmValue::Embedding(e) => e.vector.clone(),
                    _ => std::sync::Arc::from([]),
                };
                let topic_vec: std::sync::Arc<[f32]> = topic
                    .source
                    .and_then(|s| agents.get(agent).ok()?.5.get(s)?.embedding.as_ref())
                    .map_or_else(|| std::sync::Arc::from([]), |e| e.vector.clone());
                let about = topic_text(&topic).unwrap_or(&topic.about).to_string();
                let cos = flaws::cosine(&line_vec, &topic_vec);
                // No vector (the embedder is down): the line is said unchecked.
                let off = !line_vec.is_empty()
                    && !topic_vec.is_empty()
                    && flaws::unrelated(&text, &about, cos, min_sim, &town.words);
                // The last asking, as for a line.
                let last = retry || !again;
                match (off, last) {
                    (false, _) => Next::Say(
                        Line {
                            text,
                            topic: Some(topic),
                            fallback: None,
                            carried: None,
                        },
                        end,
                    ),
                    (true, false) => Next::Retry(topic),
                    (true, true) => off_topic(&topic, text, &conv, k, end, &aids),
                }
            }
            _ => continue,
        };
        match next {
            Next::Say(mut line, end) => {
                // Whether its words carry its news, decided as it is said (heard = said).
                if let Some(t) = line.topic.as_ref().filter(|t| t.kind.news())
                    && let Some(fact) = &t.fact
                {
                    let place = t.gathering.as_ref().map(|g| g.place.as_str());
                    line.carried = Some(
                        aids.heard_from_topic
                            || FactWords::of(fact, &town, &places, place).carried_by(
                                &line.text,
                                &conv.names[k],
                                &town,
                            ),
                    );
                }
                if let Some(f) = &line.fallback
                    && let Some(flaw) = Flaw::ALL.iter().find(|x| x.label() == f)
                {
                    fallbacks.count("line", *flaw);
                }
                // A line on what the speaker owed settles it (whatever its words); a line asked
                // before the debt arose leaves it owed for the next turn.
                if conv.owed[k].is_some() && line.topic == conv.owed[k] {
                    conv.owed[k] = None;
                }
                // A speaker whose model gave nothing that holds up ends the talk with another
                // resident, whenever it comes (not one with the player, who answers in turn).
                let filler = line.fallback.is_some()
                    && line.text == FILLER
                    && avatars.get(conv.people[1 - k]).is_err();
                say(
                    &mut commands,
                    &mut log,
                    now,
                    &chat,
                    ce,
                    &mut conv,
                    agent,
                    line,
                    end,
                );
                if filler && chat.conversation != Some(ce) {
                    conv.closing = true;
                }
            }
            Next::Retry(topic) => {
                let partner = conv.people[1 - k];
                let with_player = avatars.get(partner).is_ok();
                let Ok((_, resident, id, outlook, pos, _, mut pending, scratch)) =
                    agents.get_mut(agent)
                else {
                    continue;
                };
                let memories = numbered(topic_text(&topic));
                let req = line_request(
                    &ask,
                    LineAsk {
                        who: &Who::of(resident, outlook, &id.name, now),
                        partner: &conv.names[1 - k],
                        partner_note: partner_note(scratch, &conv.names[1 - k]),
                        place: &place_words(&map, pos),
                        memories: &memories,
                        conversation: &transcript(&conv.lines),
                        topics: std::slice::from_ref(&topic),
                        with_player,
                        retry: true,
                    },
                );
                ask.ask(
                    agent,
                    &mut pending,
                    req,
                    Job::Utterance {
                        conversation: ce,
                        topics: vec![topic],
                        retry: true,
                    },
                    1,
                );
            }
            Next::Check(topic, text, end, retry) => {
                let Ok((.., mut pending, _)) = agents.get_mut(agent) else {
                    continue;
                };
                ask.ask(
                    agent,
                    &mut pending,
                    LlmRequest::embed("line_check", text.clone()),
                    Job::LineCheck {
                        conversation: ce,
                        topic,
                        text,
                        end,
                        retry,
                    },
                    1,
                );
            }
        }
    }
}

/// A line off its topic on its last asking: with the `template_lines` aid the topic's template
/// says it; without, the model's own words are said as they are (they are words, only not
/// about the topic: whether they carry its news is for the listener's hearing to find).
fn off_topic(
    topic: &Topic,
    text: String,
    conv: &Conversation,
    k: usize,
    end: bool,
    aids: &crate::cognition::config::Aids,
) -> Next {
    if aids.template_lines {
        let (line, close) = fallback_line(topic, conv, k, Flaw::Unrelated, aids);
        return Next::Say(line, end || close);
    }
    Next::Say(
        Line {
            text,
            topic: Some(topic.clone()),
            fallback: None,
            carried: None,
        },
        end,
    )
}

/// Says a line; a speaker who wishes to end the talk after the first exchange closes it (not
/// with the player in the chat).
#[expect(
    clippy::too_many_arguments,
    reason = "saying a line touches all of these"
)]
fn say(
    commands: &mut Commands,
    log: &mut ConversationLog,
    now: crate::sim::time::GameTime,
    chat: &PlayerChat,
    ce: Entity,
    conv: &mut Conversation,
    speaker: Entity,
    line: Line,
    end: bool,
) {
    say_line(commands, log, now, ce, conv, speaker, line);
    if end && conv.lines.len() >= 2 && chat.conversation != Some(ce) {
        conv.closing = true;
    }
}

/// Lines said since the last look. A line about news whose words carry its fact
/// ([`FactWords`]: heard = said) leaves the listener (a resident) a memory of the words said,
/// with where they came from, unless it held the fact already (then it owes the next line to
/// saying so); a line whose words do not carry it leaves nothing but its place in the
/// conversation (the chat memory keeps every line). An invitation, or news of a gathering that
/// leaves the choice to go, also asks the listener whether it accepts, once per teller (news
/// heard second-hand at most once a day). A line of the player's that states something (four
/// words or more, not a question) is a fact the player is the first holder of. With the
/// `heard_from_topic` aid a line about news leaves the topic's fact whatever its words; with
/// `ask_until_yes` every teller asks.
#[expect(clippy::type_complexity, reason = "the listener's memory and requests")]
pub fn hear_lines(
    mut ask: Asker,
    town: Res<TownNames>,
    map: Res<WorldMap>,
    mut log: ResMut<ConversationLog>,
    mut convs: Query<&mut Conversation>,
    avatars: Query<(), With<Avatar>>,
    mut agents: Query<(
        &Resident,
        &Outlook,
        Option<&DayPlan>,
        Option<&Commitments>,
        &mut MemoryStream,
        &mut Pending,
    )>,
) {
    if log.heard >= log.lines.len() {
        log.heard = log.lines.len();
        return;
    }
    let new: Vec<crate::agent::conversation::LoggedLine> = log.lines[log.heard..].to_vec();
    log.heard = log.lines.len();
    if !ask.cfg.0.ablation.memory() {
        return;
    }
    let now = ask.clock.now;
    let say_heard = ask.cfg.0.social.already_heard;
    let aids = ask.cfg.0.aids.clone();
    let places: Vec<String> = map.sectors.iter().map(|s| s.name.clone()).collect();
    for l in new {
        let Ok(mut conv) = convs.get_mut(l.conversation) else {
            continue;
        };
        let Some(k) = conv.names.iter().position(|n| *n == l.speaker) else {
            continue;
        };
        let from_player = avatars.get(conv.people[k]).is_ok();
        let topic = match &l.topic {
            Some(t) => t.clone(),
            None if from_player && states(&l.text) => Topic {
                fact: Some(l.text.clone()),
                ..Topic::new(TopicKind::Fact, l.text.clone())
            },
            None => continue,
        };
        let (Some(fact), true) = (&topic.fact, topic.kind.news()) else {
            continue;
        };
        let (speaker, listener) = (conv.names[k].clone(), conv.names[1 - k].clone());
        let Ok((resident, outlook, plan, commitments, mut stream, mut pending)) =
            agents.get_mut(conv.people[1 - k])
        else {
            continue; // the player hears for themselves
        };
        // Heard = said: the words must carry the fact, as found when the line was said (a
        // player's statement is its own fact; a line from an older save is looked at now).
        let carried = l.topic.is_none()
            || l.carried.unwrap_or_else(|| {
                aids.heard_from_topic
                    || FactWords::of(
                        fact,
                        &town,
                        &places,
                        topic.gathering.as_ref().map(|g| g.place.as_str()),
                    )
                    .carried_by(&l.text, &speaker, &town)
            });
        if !carried {
            continue;
        }
        // News the listener holds already (not a gathering, which is its own choice to go):
        // no second hearing; it says next that it had heard it, and from whom.
        if say_heard
            && topic.kind == TopicKind::Fact
            && topic.gathering.is_none()
            && conv.owed[1 - k].is_none()
            && let Some(held) = stream
                .ids_of(NodeKind::Thought)
                .iter()
                .filter_map(|i| stream.get(*i))
                .find(|n| {
                    n.alive(now)
                        && match &n.told {
                            Some(t) => t.fact == *fact,
                            None => fact_of(n).as_deref() == Some(fact.as_str()),
                        }
                })
        {
            conv.owed[1 - k] = Some(already_heard(&speaker, fact, held));
            continue;
        }
        let (speaker, listener) = (&speaker, &listener);
        let said = one_line(&l.text);
        let description = match (&topic.gathering, topic.kind, aids.heard_from_topic) {
            (Some(g), TopicKind::Invitation, true) => {
                format!("{speaker} invited me to {}", g.describe())
            }
            (_, _, true) => format!("{speaker} told me that {fact}"),
            (Some(_), TopicKind::Invitation, false) => format!("{speaker} invited me: \"{said}\""),
            (_, _, false) => format!("{speaker} told me: \"{said}\""),
        };
        let names: Vec<String> = conv.names.to_vec();
        stream.add(
            NodeKind::Thought,
            NewNode {
                subject: listener.clone(),
                predicate: if topic.kind == TopicKind::Invitation {
                    "was invited by".into()
                } else {
                    "was told by".into()
                },
                object: speaker.clone(),
                keywords: mentioned_names(fact, listener, &names)
                    .into_iter()
                    .chain([speaker.clone()])
                    .collect(),
                description,
                told: Some(Told {
                    speaker: speaker.clone(),
                    source: topic.source,
                    conversation: conv.label(),
                    fact: fact.clone(),
                }),
                gathering: topic.gathering.clone(),
                ..default()
            },
            now,
        );
        // An invitation, or news of a gathering that leaves the choice to go (hearsay).
        let Some(g) = &topic.gathering else { continue };
        let hearsay = topic.kind == TopicKind::Fact;
        if !matches!(topic.kind, TopicKind::Invitation | TopicKind::Fact)
            || g.organiser == *listener
            || commitments.is_some_and(|c| c.has(g))
        {
            continue;
        }
        // Asked once per teller (and second-hand at most once a day), and never while an
        // answer to this gathering is still to come.
        let in_flight = pending.any(|j| {
            matches!(j, Job::InviteAnswer { topic: t, .. }
                if t.gathering.as_ref().is_some_and(|x| x.same(g)))
        });
        if !aids.ask_until_yes
            && (in_flight
                || !crate::cognition::talk::invite::to_be_asked(
                    &stream,
                    g,
                    speaker,
                    hearsay,
                    now.day(),
                ))
        {
            continue;
        }
        let req = crate::cognition::talk::invite::answer_request(
            &ask,
            crate::cognition::talk::invite::InviteAsk {
                who: &Who::of(resident, outlook, listener, now),
                asker: speaker,
                invitation: &l.text,
                gathering: g,
                plan,
                usual: ask.cfg.0.social.usual_day.then(|| {
                    crate::cognition::talk::invite::usual_overlapping(&resident.persona, g)
                }),
                stream: &stream,
                committed: crate::cognition::talk::invite::committed_during(commitments, g),
                earlier: !aids.ask_until_yes,
            },
        );
        let slack = ask.cfg.0.decision_slack_steps.max(1);
        ask.ask(
            conv.people[1 - k],
            &mut pending,
            req,
            Job::InviteAnswer {
                conversation: l.conversation,
                topic: topic.clone(),
                asker: speaker.clone(),
            },
            slack,
        );
    }
}

/// Whether a line of the player's states something (four words or more, not a question).
pub fn states(text: &str) -> bool {
    text.split_whitespace().count() >= 4 && !text.trim_end().ends_with('?')
}
