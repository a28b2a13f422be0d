//! The LLM runtime as seen by cognition systems: submit a request (agent, purpose, messages,
//! output shape, sampling, priority, fail-safe) through the [`Llm`] resource and get a handle;
//! the answer arrives later as an [`LlmReply`] message. The frame never waits: the router and
//! the backends run on their own threads. Headless-safe.

pub mod backend;
pub mod config;
pub mod endpoint;
pub mod forced;
pub mod metrics;
pub mod model_files;
pub mod models;
pub mod probe;
pub mod runtime;
pub mod schema_grammar;
pub mod shape;
pub mod types;

use bevy::prelude::*;
use config::LlmConfig;
use runtime::{LlmRuntime, Reply, RuntimeStatus, Submission};
use std::collections::HashMap;
pub use types::{ChatMessage, Embedding, LlmValue, OutputShape, Priority, Sampling};

/// A request being built by a cognition system (saved with the job that waits on it, so a
/// loaded simulation asks it again; the agent is set again when it is).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LlmRequest {
    /// The agent it is for (its requests are cancelled when it is despawned).
    #[serde(skip)]
    pub agent: Option<Entity>,
    /// Purpose label ("importance", "plan", "converse", …) for routes and metrics.
    pub purpose: String,
    /// What to do (shared with the runtime's copy: a resident keeps its requests in flight for
    /// a save, and a prompt with its schema was copied for that at every request).
    pub kind: std::sync::Arc<backend::WorkKind>,
    /// Queue priority.
    pub priority: Priority,
    /// The fail-safe answer (default: a valid value of the shape).
    pub fallback: Option<LlmValue>,
}

impl LlmRequest {
    /// A chat request.
    pub fn chat(
        purpose: impl Into<String>,
        messages: Vec<ChatMessage>,
        shape: OutputShape,
    ) -> Self {
        Self {
            agent: None,
            purpose: purpose.into(),
            kind: std::sync::Arc::new(backend::WorkKind::Chat {
                messages,
                shape,
                sampling: Sampling::default(),
            }),
            priority: Priority::Normal,
            fallback: None,
        }
    }
    /// An embedding request.
    pub fn embed(purpose: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            agent: None,
            purpose: purpose.into(),
            kind: std::sync::Arc::new(backend::WorkKind::Embed { text: text.into() }),
            priority: Priority::Normal,
            fallback: None,
        }
    }
    /// For an agent.
    pub fn for_agent(mut self, e: Entity) -> Self {
        self.agent = Some(e);
        self
    }
    /// With sampling settings.
    pub fn sampling(mut self, s: Sampling) -> Self {
        if let backend::WorkKind::Chat { sampling, .. } = std::sync::Arc::make_mut(&mut self.kind) {
            *sampling = s;
        }
        self
    }
    /// With a priority.
    pub fn priority(mut self, p: Priority) -> Self {
        self.priority = p;
        self
    }
    /// With a fail-safe.
    pub fn fallback(mut self, v: LlmValue) -> Self {
        self.fallback = Some(v);
        self
    }
}

/// A request's handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LlmHandle(pub u64);

/// An answer, delivered as a message in the frame after it is ready.
#[derive(Message, Debug, Clone)]
pub struct LlmReply {
    /// The handle [`Llm::submit`] returned.
    pub handle: LlmHandle,
    /// The answer.
    pub reply: Reply,
}

/// The LLM client resource.
#[derive(Resource)]
pub struct Llm {
    runtime: LlmRuntime,
    pending: HashMap<u64, Option<Entity>>,
    /// Requests not yet sent to the runtime: sent together by [`Llm::flush`] (at the end of
    /// every step and frame, and before anything waits for or takes answers).
    outbox: Vec<Submission>,
    /// Whether the config asks for a recording (`llm.record`).
    records: bool,
}

impl Llm {
    /// Starts the runtime for a config.
    pub fn start(config: &LlmConfig) -> Self {
        Self {
            runtime: LlmRuntime::start(config),
            pending: HashMap::new(),
            outbox: Vec::new(),
            records: config.record.is_some(),
        }
    }

    /// Wraps a running runtime.
    pub fn from_runtime(runtime: LlmRuntime) -> Self {
        Self {
            runtime,
            pending: HashMap::new(),
            outbox: Vec::new(),
            records: false,
        }
    }

    /// Whether the run records its requests and answers (`llm.record`).
    pub fn records(&self) -> bool {
        self.records
    }

    /// Queues a request (sent with the others of its step or frame; see [`Llm::flush`]).
    pub fn submit(&mut self, req: LlmRequest) -> LlmHandle {
        let id = self.runtime.next_id();
        self.pending.insert(id, req.agent);
        self.outbox.push(Submission {
            id,
            agent: req.agent,
            purpose: req.purpose,
            kind: req.kind,
            priority: req.priority,
            fallback: req.fallback,
        });
        LlmHandle(id)
    }

    /// Sends the requests queued since the last time, in one message and in their order.
    pub fn flush(&mut self) {
        if !self.outbox.is_empty() {
            self.runtime.submit_many(std::mem::take(&mut self.outbox));
        }
    }

    /// Drops a request (a superseded plan): no reply will be delivered.
    pub fn cancel(&mut self, h: LlmHandle) {
        self.flush();
        if self.pending.remove(&h.0).is_some() {
            self.runtime.cancel(h.0);
        }
    }

    /// Requests submitted and not yet answered.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Metrics per purpose.
    pub fn stats(&self) -> metrics::LlmStats {
        self.runtime.stats.lock().unwrap().clone()
    }

    /// Counts an answer of `purpose` reused instead of asked for (not a request).
    pub fn count_reused(&self, purpose: &str) {
        self.runtime.stats.lock().unwrap().purpose(purpose).reused += 1;
    }

    /// Health and queues.
    pub fn status(&self) -> RuntimeStatus {
        self.runtime.status.lock().unwrap().clone()
    }

    /// The next finished answer, if one is ready (cancelled ones and those of despawned agents
    /// are dropped).
    pub fn poll_reply(&mut self, entities: &bevy::ecs::entity::Entities) -> Option<LlmReply> {
        self.flush();
        while let Some(reply) = self.runtime.try_recv() {
            if let Some(r) = self.accept(reply, entities) {
                return Some(r);
            }
        }
        None
    }

    /// Waits up to `d` for the next finished answer (headless runs; never in a frame that draws).
    pub fn wait_reply(
        &mut self,
        d: std::time::Duration,
        entities: &bevy::ecs::entity::Entities,
    ) -> Option<LlmReply> {
        self.flush();
        let deadline = std::time::Instant::now() + d;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return None;
            }
            let reply = self.runtime.recv_timeout(left)?;
            if let Some(r) = self.accept(reply, entities) {
                return Some(r);
            }
        }
    }

    fn accept(&mut self, reply: Reply, entities: &bevy::ecs::entity::Entities) -> Option<LlmReply> {
        self.pending.remove(&reply.id)?;
        if reply.agent.is_some_and(|a| !entities.contains(a)) {
            return None;
        }
        Some(LlmReply {
            handle: LlmHandle(reply.id),
            reply,
        })
    }

    /// Cancels the requests of agents that no longer exist.
    pub fn cancel_orphans(&mut self, entities: &bevy::ecs::entity::Entities) {
        let gone: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, a)| a.is_some_and(|a| !entities.contains(a)))
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.cancel(LlmHandle(id));
        }
    }

    /// Model identity of the embedder now in use (stored with vectors).
    pub fn embedding_model(&self) -> String {
        self.runtime.embedding_model.lock().unwrap().clone()
    }
}

/// A copy of the runtime's state for the HUD, refreshed every frame.
#[derive(Resource, Debug, Clone, Default)]
pub struct LlmStatusView {
    /// Health and queues.
    pub status: RuntimeStatus,
    /// Requests submitted and not yet answered.
    pub pending: usize,
    /// Totals over purposes.
    pub totals: metrics::PurposeStats,
}

/// Moves finished answers into `Messages<LlmReply>`; drops those whose agent is gone and
/// cancels requests of despawned agents.
pub fn deliver_llm_replies(
    mut llm: ResMut<Llm>,
    mut out: MessageWriter<LlmReply>,
    entities: &bevy::ecs::entity::Entities,
) {
    while let Some(reply) = llm.poll_reply(entities) {
        out.write(reply);
    }
    llm.cancel_orphans(entities);
}

/// Sends the requests made since the last send, at the end of a frame (a simulation step's
/// leave at the step's end: see `StepGate::send`).
pub fn flush_llm_requests(mut llm: ResMut<Llm>) {
    llm.flush();
}

/// Refreshes [`LlmStatusView`].
pub fn refresh_llm_status(llm: Res<Llm>, mut view: ResMut<LlmStatusView>) {
    view.status = llm.status();
    view.pending = llm.pending();
    view.totals = llm.runtime.stats.lock().unwrap().total();
}

/// Starts the runtime and wires it into the frame.
pub struct LlmPlugin {
    config: LlmConfig,
}

impl LlmPlugin {
    /// For a config.
    pub fn new(config: LlmConfig) -> Self {
        Self { config }
    }
}

impl Plugin for LlmPlugin {
    fn build(&self, app: &mut App) {
        if !app.world().contains_resource::<Llm>() {
            app.insert_resource(Llm::start(&self.config));
        }
        app.add_message::<LlmReply>()
            .init_resource::<LlmStatusView>()
            .add_systems(PreUpdate, (deliver_llm_replies, refresh_llm_status).chain())
            .add_systems(Last, flush_llm_requests);
    }
}
