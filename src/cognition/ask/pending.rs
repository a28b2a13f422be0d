//! LLM work an agent is waiting on. A cognition system submits a request, records it here with
//! the [`Job`] to do with the answer and the step by which the answer is needed (`due`); the
//! answer is stored here when it arrives (in any frame) and applied by the matching `apply_*`
//! system in the first step at or after `due`. So the step at which an answer takes effect
//! depends only on when it was asked, never on how fast the model was: with
//! [`Pacing::Wait`](crate::cognition::config::Pacing) a step does not run while an answer due by then is
//! missing, and a run is the same on a slow and a fast machine.

use crate::cognition::ask::job::Job;
use crate::llm::runtime::Reply;
use crate::llm::{Llm, LlmHandle, LlmRequest};
use bevy::prelude::*;

/// One request in flight.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingJob {
    /// The runtime's handle.
    pub handle: LlmHandle,
    /// The request (a loaded simulation asks it again when its answer had not come).
    pub request: LlmRequest,
    /// What to do with the answer.
    pub job: Job,
    /// The step by which the answer must be applied.
    pub due: u64,
    /// The answer, once it has arrived.
    pub reply: Option<Reply>,
    /// Applied as soon as it arrives and never holding game time (the day's plan under
    /// [`Pacing::Live`](crate::cognition::config::Pacing)).
    #[serde(default)]
    pub live: bool,
}

/// An agent's requests in flight, oldest first.
#[derive(Component, Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pending {
    jobs: Vec<PendingJob>,
    /// The earliest step at which an answer held may be applied (`None`: no answer held; never
    /// later than the truth), so the many systems that look for their answers each step skip a
    /// resident with none ready (a resident of a large town has dozens of requests in flight,
    /// and answers wait for their due step).
    #[serde(skip)]
    answered: MaybeAnswered,
    /// Which set of jobs this is: a new number, unique in the process, each time a job is added
    /// or removed (two equal numbers: the same jobs), so a system can tell that nothing it asked
    /// or waits for changed since it last looked (see [`Pending::generation`]).
    #[serde(skip)]
    generation: Generation,
}

/// A number unique in the process for each change of a [`Pending`]'s jobs (and for each one
/// made or loaded; a copy keeps its original's, with the same jobs).
#[derive(Debug, Clone, Copy)]
struct Generation(u64);

impl Default for Generation {
    fn default() -> Self {
        Self::next()
    }
}

impl Generation {
    fn next() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Self(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl PartialEq for Generation {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A hint kept beside the jobs; not part of what a `Pending` is (two are equal whatever it says).
#[derive(Debug, Clone, Copy)]
struct MaybeAnswered(Option<u64>);

impl Default for MaybeAnswered {
    fn default() -> Self {
        Self(Some(0))
    }
}

impl MaybeAnswered {
    /// Also an answer applicable from `step`.
    fn add(&mut self, step: u64) {
        self.0 = Some(self.0.map_or(step, |s| s.min(step)));
    }
}

impl PartialEq for MaybeAnswered {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl PendingJob {
    /// The first step its answer may be applied at (real time aside).
    fn ready_from(&self) -> u64 {
        if self.live { 0 } else { self.due }
    }
}

impl Pending {
    /// Drops the jobs matching `pred` and returns their handles (to cancel with the runtime).
    pub fn drop_where(&mut self, pred: impl Fn(&Job) -> bool) -> Vec<LlmHandle> {
        let mut gone = Vec::new();
        self.generation = Generation::next();
        self.jobs.retain(|j| {
            let drop = pred(&j.job);
            if drop {
                gone.push(j.handle);
            }
            !drop
        });
        gone
    }

    /// Records a request.
    pub fn push(&mut self, handle: LlmHandle, request: LlmRequest, job: Job, due: u64) {
        self.generation = Generation::next();
        self.jobs.push(PendingJob {
            handle,
            request,
            job,
            due,
            reply: None,
            live: false,
        });
    }

    /// Records a request applied as soon as its answer arrives, which game time never waits for.
    pub fn push_live(&mut self, handle: LlmHandle, request: LlmRequest, job: Job, due: u64) {
        self.push(handle, request, job, due);
        if let Some(j) = self.jobs.last_mut() {
            j.live = true;
        }
    }

    /// The jobs, to change (a load asks the unanswered ones again under new handles).
    pub fn jobs_mut(&mut self) -> &mut Vec<PendingJob> {
        self.answered = MaybeAnswered(Some(0));
        self.generation = Generation::next();
        &mut self.jobs
    }

    /// This set of jobs' number: equal numbers of one resident's `Pending` at two times mean
    /// no job was added or removed between them (answers may have arrived).
    pub fn generation(&self) -> u64 {
        self.generation.0
    }

    /// Whether a job waits for the answer with that handle.
    pub fn holds(&self, handle: LlmHandle) -> bool {
        self.jobs.iter().any(|j| j.handle == handle)
    }

    /// Stores an answer; false when no job has that handle.
    pub fn deliver(&mut self, handle: LlmHandle, reply: Reply) -> bool {
        match self.jobs.iter_mut().find(|j| j.handle == handle) {
            Some(j) => {
                j.reply = Some(reply);
                let from = j.ready_from();
                self.answered.add(from);
                true
            }
            None => false,
        }
    }

    /// Removes and returns, oldest first, the answered jobs matching `pred` that may be applied
    /// at `step` (due by then, or at once in real time or when live).
    pub fn take_ready(
        &mut self,
        step: u64,
        real_time: bool,
        pred: impl Fn(&Job) -> bool,
    ) -> Vec<(Job, Reply)> {
        let mut out = Vec::new();
        match self.answered.0 {
            None => return out,
            Some(from) if !real_time && step < from => return out,
            _ => {}
        }
        let mut left = MaybeAnswered(None);
        let mut i = 0;
        while i < self.jobs.len() {
            let j = &self.jobs[i];
            if j.reply.is_some() && (real_time || j.live || j.due <= step) && pred(&j.job) {
                let j = self.jobs.remove(i);
                self.generation = Generation::next();
                out.push((j.job, j.reply.expect("checked")));
            } else {
                if j.reply.is_some() {
                    left.add(j.ready_from());
                }
                i += 1;
            }
        }
        self.answered = left;
        out
    }

    /// Answers still missing that are due at or before `step` (what game time waits for).
    pub fn blocking(&self, step: u64) -> usize {
        self.blocking_handles(step).count()
    }

    /// The handles of the answers [`blocking`](Self::blocking) counts.
    pub fn blocking_handles(&self, step: u64) -> impl Iterator<Item = LlmHandle> + '_ {
        self.blocking_jobs(step).map(|j| j.handle)
    }

    /// The jobs whose answers [`blocking`](Self::blocking) counts.
    fn blocking_jobs(&self, step: u64) -> impl Iterator<Item = &PendingJob> + '_ {
        self.jobs
            .iter()
            .filter(move |j| j.reply.is_none() && !j.live && j.due <= step)
    }

    /// Whether any job matches.
    pub fn any(&self, pred: impl Fn(&Job) -> bool) -> bool {
        self.jobs.iter().any(|j| pred(&j.job))
    }

    /// Number of jobs in flight.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The jobs (for the inspector and tests).
    pub fn jobs(&self) -> &[PendingJob] {
        &self.jobs
    }
}

/// Stores every arrived answer addressed to an agent's job in that agent's [`Pending`]; other
/// answers go out as [`LlmReply`](crate::llm::LlmReply) messages. With `wait`, blocks up to that
/// long for the first answer (headless runs waiting on the model). Returns the answers taken.
pub fn pump_replies(world: &mut World, wait: Option<std::time::Duration>) -> usize {
    pump_noting(world, wait, &mut Default::default())
}

/// [`pump_replies`] for the step gate: the (agent, handle) keys of the answers taken are noted
/// in `awaited.arrived`.
pub fn pump_noting(
    world: &mut World,
    wait: Option<std::time::Duration>,
    awaited: &mut crate::sim::clock::Awaited,
) -> usize {
    let mut got = Vec::new();
    world.resource_scope(|world, mut llm: Mut<Llm>| {
        let entities = world.entities();
        if let Some(d) = wait
            && let Some(r) = llm.wait_reply(d, entities)
        {
            got.push(r);
        }
        while let Some(r) = llm.poll_reply(entities) {
            got.push(r);
        }
    });
    let n = got.len();
    for msg in got {
        if let Some(a) = msg.reply.agent {
            awaited.arrived.push((a, msg.handle.0));
        }
        route_reply(world, msg);
    }
    n
}

/// Stores an answer in its agent's [`Pending`], or sends it out as a message.
pub fn route_reply(world: &mut World, msg: crate::llm::LlmReply) {
    if let Some(mut p) = msg.reply.agent.and_then(|a| world.get_mut::<Pending>(a))
        && p.holds(msg.handle)
    {
        p.deliver(msg.handle, msg.reply);
        return;
    }
    world.write_message(msg);
}

/// Puts the frame's answers into the agents' [`Pending`] (in `PreUpdate`, after the runtime
/// delivered them as messages).
pub fn route_replies(
    mut replies: MessageReader<crate::llm::LlmReply>,
    mut agents: Query<&mut Pending>,
) {
    for m in replies.read() {
        if let Some(a) = m.reply.agent
            && let Ok(mut p) = agents.get_mut(a)
        {
            p.deliver(m.handle, m.reply.clone());
        }
    }
}

/// Answers game time waits for before step `step` (over all agents). The first round of a gate
/// check lists them in `awaited`; later rounds strike off the answers that arrived since.
pub fn blocking_answers(
    world: &mut World,
    step: u64,
    awaited: &mut crate::sim::clock::Awaited,
) -> usize {
    if !awaited.listed {
        awaited.listed = true;
        let mut q = world.query::<(Entity, &Pending)>();
        let mut keys = std::collections::HashMap::new();
        let (mut labels, mut missing): (Vec<String>, Vec<usize>) = (Vec::new(), Vec::new());
        for (e, p) in q.iter(world) {
            for j in p.blocking_jobs(step) {
                let purpose = j.request.purpose.as_str();
                let i = labels.iter().position(|l| l == purpose).unwrap_or_else(|| {
                    labels.push(purpose.to_string());
                    missing.push(0);
                    labels.len() - 1
                });
                missing[i] += 1;
                keys.insert((e, j.handle.0), i);
            }
        }
        awaited.keys = keys;
        awaited.labels = labels;
        awaited.missing = missing;
    }
    for k in awaited.arrived.drain(..) {
        if let Some(i) = awaited.keys.remove(&k) {
            awaited.missing[i] -= 1;
        }
    }
    awaited.keys.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::LlmValue;
    use crate::llm::runtime::ReplySource;
    use crate::memory::NodeId;

    fn reply(id: u64) -> Reply {
        Reply {
            id,
            agent: None,
            purpose: "t".into(),
            value: LlmValue::Integer(1),
            text: String::new(),
            source: ReplySource::Cache,
            latency: Default::default(),
        }
    }

    #[test]
    fn answers_apply_at_their_due_step() {
        let mut p = Pending::default();
        let r = LlmRequest::embed("t", "x");
        p.push(LlmHandle(1), r.clone(), Job::ReflectQuestions, 10);
        p.push(LlmHandle(2), r, Job::Embed(vec![NodeId(1)]), 5);
        assert_eq!(p.blocking(4), 0);
        assert_eq!(p.blocking(5), 1);
        assert_eq!(p.blocking(10), 2);
        assert!(p.deliver(LlmHandle(1), reply(1)));
        assert!(!p.deliver(LlmHandle(9), reply(9)));
        assert!(
            p.take_ready(9, false, |_| true).is_empty(),
            "answered early, applied at its due step"
        );
        assert_eq!(
            p.take_ready(10, false, |j| matches!(j, Job::Embed(_)))
                .len(),
            0
        );
        assert_eq!(p.take_ready(10, false, |_| true).len(), 1);
        assert!(p.deliver(LlmHandle(2), reply(2)));
        assert_eq!(
            p.take_ready(0, true, |_| true).len(),
            1,
            "real time applies at once"
        );
        assert!(p.is_empty());
    }

    /// An answer due earlier than the ones already held is still found at its step.
    #[test]
    fn an_earlier_answer_after_a_later_one_is_applied_on_time() {
        let mut p = Pending::default();
        let r = LlmRequest::embed("t", "x");
        p.push(LlmHandle(1), r.clone(), Job::ReflectQuestions, 10);
        p.push(LlmHandle(2), r, Job::Embed(vec![NodeId(1)]), 5);
        assert!(p.deliver(LlmHandle(1), reply(1)));
        assert!(p.take_ready(5, false, |_| true).is_empty());
        assert!(p.deliver(LlmHandle(2), reply(2)));
        assert_eq!(p.take_ready(5, false, |_| true).len(), 1);
        assert!(p.take_ready(9, false, |_| true).is_empty());
        assert_eq!(p.take_ready(10, false, |_| true).len(), 1);
        assert!(p.is_empty());
    }
}
