//! Backends behind one trait: each takes work without blocking and reports results on a
//! channel to the runtime's router thread.

pub mod bert;
pub mod bert_gguf;
pub mod dialect;
pub mod llama;
pub mod openai;
pub mod recording;
pub mod scripted;

use super::types::{ChatMessage, OutputShape, Sampling};
use crossbeam_channel::Sender;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Work handed to a backend.
#[derive(Debug, Clone)]
pub struct Work {
    /// Request id.
    pub id: u64,
    /// Purpose label (for scripted rules and logs).
    pub purpose: String,
    /// What to do.
    pub kind: WorkKind,
    /// Abandon the work after this instant.
    pub deadline: Instant,
    /// Set when the caller no longer wants the answer.
    pub cancelled: Arc<AtomicBool>,
    /// Whose request it is (a resident's stable key), so a pool can keep a resident's requests
    /// on one endpoint, where the server's prefix cache holds that resident's identity block.
    pub affinity: Option<u64>,
}

/// One endpoint of a pool as the HUD and the benches see it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointStatus {
    /// Its base URL.
    pub url: String,
    /// Whether it takes requests (not resting after failures).
    pub up: bool,
    /// Requests in flight on it now.
    pub in_flight: usize,
    /// Most requests it is given at once now: the configured concurrency, less while it is
    /// much slower than the others (it sheds its share) or resting.
    pub limit: usize,
    /// Requests it answered (or failed) so far.
    pub done: u64,
    /// Requests of a resident sent to that resident's own endpoint.
    pub affinity_hits: u64,
    /// Requests of a resident whose own endpoint was full or down, sent elsewhere.
    pub affinity_misses: u64,
    /// Recent seconds per request (a moving average; 0 before the first answer).
    pub latency_s: f32,
}

/// Chat completion or embedding.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum WorkKind {
    /// A chat completion with an output shape.
    Chat {
        /// The conversation.
        messages: Vec<ChatMessage>,
        /// Required shape.
        shape: OutputShape,
        /// Sampling.
        sampling: Sampling,
    },
    /// An embedding of one text.
    Embed {
        /// The text.
        text: String,
    },
}

/// What a backend reports back.
#[derive(Debug, Clone)]
pub enum WorkOutcome {
    /// Generated text (not yet validated against the shape).
    Text {
        /// The text.
        text: String,
        /// Prompt tokens processed (0 when unknown).
        prompt_tokens: u32,
        /// Prompt tokens served from a cached prefix.
        cached_tokens: u32,
        /// Tokens generated.
        gen_tokens: u32,
        /// Generation was stopped because the answer went round in a loop (what the loop was;
        /// see `llama::loops`): the text is cut off, and the request is retried.
        looped: Option<String>,
    },
    /// An embedding vector (unit length) and the model that made it.
    Vector {
        /// The vector.
        vector: Vec<f32>,
        /// Model identity.
        model: String,
        /// Prompt tokens processed.
        prompt_tokens: u32,
    },
    /// A failure.
    Failed(BackendError),
}

/// A failure of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendError {
    /// What kind.
    pub kind: ErrorKind,
    /// In words.
    pub message: String,
}

/// Failure kinds; all but `Fatal` are worth a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Past the deadline.
    Timeout,
    /// HTTP status error or a refused connection.
    Http,
    /// An answer that could not be read.
    Malformed,
    /// Every endpoint is resting after failures.
    Down,
    /// Will fail again however often it is tried (missing model, bad request, prompt too long).
    Fatal,
    /// The backend cannot do this kind of work at all (a server without embeddings); another
    /// backend may.
    Unsupported,
}

impl BackendError {
    /// A new error. Its words often carry a server's text (an error body, a model id): control
    /// characters are taken out here, so no message reaches a terminal, a save or a report
    /// with an escape sequence in it.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            kind,
            message: match crate::data::clean_text(&message) {
                std::borrow::Cow::Borrowed(_) => message,
                std::borrow::Cow::Owned(clean) => clean,
            },
        }
    }
    /// Worth retrying?
    pub fn retryable(&self) -> bool {
        !matches!(self.kind, ErrorKind::Fatal | ErrorKind::Unsupported)
    }
}

/// A result with its request id.
#[derive(Debug, Clone)]
pub struct WorkDone {
    /// Request id.
    pub id: u64,
    /// Index of the backend that did it.
    pub backend: usize,
    /// Which endpoint (for HTTP backends).
    pub endpoint: Option<usize>,
    /// The result.
    pub outcome: WorkOutcome,
}

/// Health shown to the player.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Health {
    /// Answering normally.
    #[default]
    Ok,
    /// Answering, but slowly.
    Slow,
    /// Not answering; requests fall back.
    Down,
    /// Still loading (a model file).
    Starting,
}

/// One line for an endpoint of a pool: requests, in flight and limit, latency, affinity.
pub fn endpoint_line(e: &EndpointStatus) -> String {
    let asked = e.affinity_hits + e.affinity_misses;
    format!(
        "{}: {}; {} requests; {} in flight of {}; {:.2} s per request lately{}",
        e.url,
        if e.up { "up" } else { "resting" },
        e.done,
        e.in_flight,
        e.limit,
        e.latency_s,
        if asked > 0 {
            format!(
                "; {:.0} % of residents' requests on their own endpoint",
                100.0 * e.affinity_hits as f64 / asked as f64
            )
        } else {
            String::new()
        }
    )
}

/// A backend: accepts work without blocking and reports on `done`.
pub trait Backend: Send {
    /// Name from the config.
    fn name(&self) -> &str;
    /// Identity of the model (part of cache keys and embedding records).
    fn model_id(&self) -> String;
    /// Identity recorded with its embeddings (a server's may change once it is known how the
    /// server pools them).
    fn embedding_model_id(&self) -> String {
        self.model_id()
    }
    /// Most requests it takes at once.
    fn capacity(&self) -> usize;
    /// Starts work; the result comes on `done` later (or at once).
    fn start(&mut self, work: Work, done: Sender<WorkDone>);
    /// Current health and a detail line.
    fn health(&self) -> (Health, String);
    /// A word or two for the HUD beside the name (a server's dialect).
    fn note(&self) -> Option<String> {
        None
    }
    /// Whether it could take work now (an endpoint is up or due for a probe).
    fn available(&self) -> bool {
        !matches!(self.health().0, Health::Down)
    }
    /// Told about a result of its own (HTTP backends track endpoint health here).
    fn observe(&mut self, _done: &WorkDone) {}
    /// Whether it times out its own work (by progress rather than from the start), so the
    /// router need not.
    fn keeps_own_deadlines(&self) -> bool {
        false
    }
    /// Its endpoints, for a backend that spreads work over several (empty otherwise).
    fn endpoints(&self) -> Vec<EndpointStatus> {
        Vec::new()
    }
}

/// A stable text key for a piece of work: what recordings are looked up by, and (with the
/// model identity) what the cache is keyed by.
pub fn work_key(kind: &WorkKind) -> String {
    match kind {
        WorkKind::Chat { messages, shape, sampling } => serde_json::json!({"chat": {"messages": messages, "shape": shape, "sampling": sampling}}).to_string(),
        WorkKind::Embed { text } => serde_json::json!({"embed": text}).to_string(),
    }
}
