//! Interviews, as the original's interview command: the player questions a resident as a chosen
//! persona ("a news reporter"). Each question is embedded, the resident's memories about it are
//! retrieved (without marking them accessed) and the resident answers in character, a shaped
//! answer at interactive priority. Both requests go through the resident's
//! [`Pending`] like every other request of the simulation (due never: game time does not wait for
//! them) and are taken from it here every frame, paused or not. By default nothing is written to
//! the resident's memory
//! (`cognition.interview_in_world` makes the interview a conversation it remembers). The
//! transcript can be saved to a file.

use crate::agent::{Identity, Outlook, Resident};
use crate::cognition::ask::job::{Job, NEVER_DUE};
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Prompts;
use crate::cognition::ask::prompts::{Who, numbered_found, one_line};
use crate::cognition::config::Cognition;
use crate::llm::{Llm, LlmHandle, LlmRequest, LlmValue, OutputShape, Priority, Sampling};
use crate::memory::retrieve::retrieve_where;
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde_json::{Value, json};

/// Where a question is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Asking {
    /// Its embedding is being made.
    Embedding(LlmHandle),
    /// The answer is being made.
    Answering(LlmHandle),
}

/// One interview.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interview {
    /// The resident.
    #[serde(with = "crate::sim::entity_serde::entity_bits")]
    pub target: Entity,
    /// Its name.
    pub name: String,
    /// Who asks ("a news reporter").
    pub persona: String,
    /// When it began.
    pub started: GameTime,
    /// (question, answer) pairs.
    pub lines: Vec<(String, String)>,
    /// The question waiting for its answer.
    pub question: Option<(String, Asking)>,
}

impl Interview {
    /// The transcript as text.
    pub fn transcript(&self) -> String {
        let mut s = format!(
            "Interview with {} by {} ({})\n",
            self.name, self.persona, self.started
        );
        for (q, a) in &self.lines {
            s.push_str(&format!(
                "\nQ ({}): {q}\nA ({}): {a}\n",
                self.persona, self.name
            ));
        }
        s
    }
}

/// The open interview and the last one closed.
#[derive(Resource, Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interviews {
    /// The interview questions go to.
    pub open: Option<Interview>,
    /// The last one closed (for `transcript`).
    pub last: Option<Interview>,
}

impl Interviews {
    /// Whether a question is waiting for its answer.
    pub fn waiting(&self) -> bool {
        self.open.as_ref().is_some_and(|i| i.question.is_some())
    }
}

/// The schema of an answer.
pub fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": 300}},
        "required": ["answer"],
        "additionalProperties": false
    })
}

/// Asks the open interview a question.
pub fn ask(world: &mut World, question: &str) -> Result<(), String> {
    let (question, _) = super::command::clean_text(question);
    let interviews = world.resource::<Interviews>();
    let Some(open) = &interviews.open else {
        return Err("no interview is open: `interview <name> as <persona>` first".into());
    };
    if open.question.is_some() {
        return Err("still waiting for the answer to the last question".into());
    }
    let target = open.target;
    if world.get::<Pending>(target).is_none() {
        return Err(format!("{} is no longer in town", open.name));
    }
    let req =
        LlmRequest::embed("interview_query", question.clone()).priority(Priority::Interactive);
    let handle = world
        .resource_mut::<Llm>()
        .submit(req.clone().for_agent(target));
    if let Some(mut pending) = world.get_mut::<Pending>(target) {
        let job = Job::InterviewQuery {
            question: question.clone(),
        };
        pending.push(handle, req, job, NEVER_DUE);
    }
    if let Some(open) = world.resource_mut::<Interviews>().open.as_mut() {
        open.question = Some((question, Asking::Embedding(handle)));
    }
    Ok(())
}

/// Closes the open interview; with `interview_in_world` the resident remembers it.
pub fn end(world: &mut World) -> Result<String, String> {
    let Some(iv) = world.resource_mut::<Interviews>().open.take() else {
        return Err("no interview is open".into());
    };
    let unanswered = world
        .get_mut::<Pending>(iv.target)
        .map(|mut p| p.drop_where(is_interview))
        .unwrap_or_default();
    for h in unanswered {
        world.resource_mut::<Llm>().cancel(h);
    }
    let in_world = world.resource::<Cognition>().0.interview_in_world;
    if in_world && !iv.lines.is_empty() {
        let now = world.resource::<SimClock>().now;
        if let Some(mut stream) = world.get_mut::<MemoryStream>(iv.target) {
            let lines: Vec<(String, String)> = iv
                .lines
                .iter()
                .flat_map(|(q, a)| {
                    [
                        (iv.persona.clone(), q.clone()),
                        (iv.name.clone(), a.clone()),
                    ]
                })
                .collect();
            let first_q = iv.lines[0].0.clone();
            stream.add(
                NodeKind::Chat,
                NewNode {
                    subject: iv.name.clone(),
                    predicate: "was interviewed by".into(),
                    object: iv.persona.clone(),
                    description: format!(
                        "{} was interviewed by {}, who asked \"{}\"",
                        iv.name, iv.persona, first_q
                    ),
                    keywords: vec![iv.persona.clone(), "interview".into()],
                    chat: lines,
                    ..default()
                },
                now,
            );
        }
    }
    let n = iv.lines.len();
    let name = iv.name.clone();
    world.resource_mut::<Interviews>().last = Some(iv);
    Ok(format!(
        "interview with {name} closed ({n} answers){}",
        if in_world { "; it is remembered" } else { "" }
    ))
}

/// Whether a job is an interview's.
pub fn is_interview(j: &Job) -> bool {
    matches!(j, Job::InterviewQuery { .. } | Job::InterviewAnswer { .. })
}

/// Moves questions along as their embeddings and answers arrive in the resident's [`Pending`].
pub fn advance_interviews(
    mut interviews: ResMut<Interviews>,
    mut llm: ResMut<Llm>,
    mut log: ResMut<super::ConsoleLog>,
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    prompts: Res<Prompts>,
    mut fallbacks: ResMut<crate::cognition::ask::flaws::Fallbacks>,
    mut residents: Query<(&Resident, &Outlook, &Identity, &MemoryStream, &mut Pending)>,
) {
    let Some(iv) = interviews.open.as_mut() else {
        return;
    };
    let Ok((resident, outlook, id, stream, mut pending)) = residents.get_mut(iv.target) else {
        if iv.question.is_some() {
            log.err(format!("{} is no longer in town", iv.name));
            iv.question = None;
        }
        return;
    };
    for (job, reply) in pending.take_ready(clock.step, true, is_interview) {
        let Some((question, _)) = iv.question.clone() else {
            continue;
        };
        match job {
            Job::InterviewQuery { .. } => {
                let query = match &reply.value {
                    LlmValue::Embedding(e) if !e.vector.is_empty() => Some(e.clone()),
                    _ => None,
                };
                let ablation = cog.0.ablation;
                let found = retrieve_where(
                    stream,
                    query.as_ref(),
                    clock.now,
                    &cog.0.retrieval,
                    15,
                    |n| ablation.keeps(n),
                );
                let memories = if found.is_empty() {
                    format!("{} remembers nothing in particular about this.", id.name)
                } else {
                    numbered_found(stream, &found)
                };
                let conversation = if iv.lines.is_empty() {
                    "(this is the first question)".to_string()
                } else {
                    iv.lines
                        .iter()
                        .map(|(q, a)| {
                            format!(
                                "{}: \"{}\"\n{}: \"{}\"",
                                iv.persona,
                                one_line(q),
                                id.name,
                                one_line(a)
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                let who = Who::of(resident, outlook, &id.name, clock.now);
                let quoted = format!("\"{}\"", one_line(&question).replace('"', "'"));
                let messages = prompts.render_for(
                    "interview",
                    &who,
                    &[
                        ("persona", &iv.persona),
                        ("memories", &memories),
                        ("conversation", &conversation),
                        ("question", &quoted),
                    ],
                );
                let req =
                    LlmRequest::chat("interview", messages, OutputShape::Json(answer_schema()))
                        .sampling(Sampling::greedy(120))
                        .priority(Priority::Interactive)
                        .fallback(LlmValue::Json(json!({"answer": "I would rather not say."})));
                let h = llm.submit(req.clone().for_agent(iv.target));
                let said: Vec<String> = found
                    .iter()
                    .filter_map(|f| stream.get(f.id))
                    .map(|n| n.description.clone())
                    .take(5)
                    .collect();
                pending.push(
                    h,
                    req,
                    Job::InterviewAnswer {
                        question: question.clone(),
                        best: said.first().cloned().unwrap_or_default(),
                        others: said.iter().skip(1).cloned().collect(),
                    },
                    NEVER_DUE,
                );
                iv.question = Some((question, Asking::Answering(h)));
            }
            Job::InterviewAnswer { best, others, .. } => {
                let answer = match &reply.value {
                    LlmValue::Json(v) if !reply.is_fallback() => {
                        v.get("answer").and_then(Value::as_str).map(one_line)
                    }
                    _ => None,
                }
                .unwrap_or_default();
                // An answer that does not hold up (empty, a name, the prompt's words, the same
                // as an earlier answer) gives way to the memory that bears most on the question.
                let names = crate::cognition::ask::flaws::NameWords::of(&[
                    id.name.clone(),
                    iv.persona.clone(),
                ]);
                let own_words = prompts.get("interview").own_words();
                let earlier: Vec<String> = iv.lines.iter().map(|(_, a)| a.clone()).collect();
                let ctx = crate::cognition::ask::flaws::Context {
                    names: &names,
                    own_words: &own_words,
                    earlier: &earlier,
                };
                let flaw = if reply.is_fallback() {
                    Some(crate::cognition::ask::flaws::Flaw::Failed)
                } else {
                    crate::cognition::ask::flaws::flaw(&answer, &ctx)
                };
                let answer = match flaw {
                    None => answer,
                    Some(f) => {
                        fallbacks.count("interview answer", f);
                        let memories: Vec<String> = std::iter::once(best).chain(others).collect();
                        fallback_answer(&memories, &earlier, &question)
                    }
                };
                log.out(format!("{}: {answer}", iv.name));
                iv.lines.push((question, answer));
                iv.question = None;
            }
            _ => {}
        }
    }
}

/// What a resident says when its answer does not hold up: the memory that bears most on the
/// question that it has not said yet in this interview (two questions never get the same words),
/// else that it has nothing to add about this question.
pub fn fallback_answer(memories: &[String], earlier: &[String], question: &str) -> String {
    let unsaid = memories
        .iter()
        .filter(|m| !m.is_empty())
        .find(|m| !earlier.iter().any(|a| a.contains(m.as_str())));
    match unsaid {
        Some(m) => format!("What I can tell you is this: {m}"),
        None if memories.iter().all(String::is_empty) => {
            format!("I'm not sure what to say about \"{}\".", one_line(question))
        }
        None => format!(
            "I have nothing to add about \"{}\" to what I said.",
            one_line(question)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fallback_answer_never_repeats_an_earlier_one() {
        let mems = vec![
            "Isabella runs Hobbs Cafe".to_string(),
            "Isabella is planning a party".to_string(),
        ];
        let first = fallback_answer(&mems, &[], "What do you do?");
        assert_eq!(
            first,
            "What I can tell you is this: Isabella runs Hobbs Cafe"
        );
        let second = fallback_answer(&mems, std::slice::from_ref(&first), "Any plans?");
        assert_eq!(
            second,
            "What I can tell you is this: Isabella is planning a party"
        );
        let third = fallback_answer(&mems, &[first, second], "Who are you?");
        assert_eq!(
            third,
            "I have nothing to add about \"Who are you?\" to what I said."
        );
        assert_eq!(
            fallback_answer(&[String::new()], &[], "Why?"),
            "I'm not sure what to say about \"Why?\"."
        );
    }
}
