//! The vocabulary of the LLM API: messages, output shapes, sampling, priorities, values.

use serde::{Deserialize, Serialize};

/// One chat message. Two are equal when their role and text are (`stable` is a hint).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatMessage {
    /// "system", "user" or "assistant".
    pub role: String,
    /// The text.
    pub content: String,
    /// How many bytes of `content` open the same resident's next request of this purpose too
    /// (a conversation's lines so far): a backend that keeps prompt prefixes may keep the prompt
    /// up to there. A hint only: not sent, not part of a cached answer's key, not saved.
    #[serde(skip)]
    pub stable: Option<usize>,
}

impl PartialEq for ChatMessage {
    fn eq(&self, other: &Self) -> bool {
        self.role == other.role && self.content == other.content
    }
}

impl Eq for ChatMessage {}

impl std::hash::Hash for ChatMessage {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.role.hash(state);
        self.content.hash(state);
    }
}

impl ChatMessage {
    /// A system message.
    pub fn system(c: impl Into<String>) -> Self {
        Self {
            role: "system".into(),
            content: c.into(),
            stable: None,
        }
    }
    /// A user message.
    pub fn user(c: impl Into<String>) -> Self {
        Self {
            role: "user".into(),
            content: c.into(),
            stable: None,
        }
    }
    /// An assistant message.
    pub fn assistant(c: impl Into<String>) -> Self {
        Self {
            role: "assistant".into(),
            content: c.into(),
            stable: None,
        }
    }
}

/// The shape an answer must have. Enforced while sampling (grammar on llama.cpp, JSON schema
/// on servers that take one), then validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum OutputShape {
    /// Free text.
    Text,
    /// An integer in `min..=max`.
    Integer {
        /// Smallest allowed.
        min: i64,
        /// Largest allowed.
        max: i64,
    },
    /// Exactly one of the options (verbatim).
    Choice(Vec<String>),
    /// "yes" or "no".
    YesNo,
    /// Exactly `n` non-empty lines.
    Lines(usize),
    /// A list of exactly `count` integers, each in `min..=max` (written as a JSON array).
    Integers {
        /// How many.
        count: usize,
        /// Smallest allowed.
        min: i64,
        /// Largest allowed.
        max: i64,
    },
    /// A JSON object matching the schema (a subset of JSON Schema: type, properties, required,
    /// enum, minimum, maximum, items, minItems, maxItems, maxLength).
    Json(serde_json::Value),
}

/// Sampling settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// 0 means greedy (and makes the request cacheable).
    pub temperature: f32,
    /// Nucleus sampling.
    pub top_p: f32,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Seed for the random sampler.
    pub seed: u32,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            top_p: 0.95,
            max_tokens: 128,
            seed: 42,
        }
    }
}

impl Sampling {
    /// Greedy with a token limit.
    pub fn greedy(max_tokens: u32) -> Self {
        Self {
            max_tokens,
            ..Default::default()
        }
    }
    /// Whether the answer depends only on the prompt (cacheable).
    pub fn deterministic(&self) -> bool {
        self.temperature <= 0.0
    }
}

/// Who waits on a request. Higher runs first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub enum Priority {
    /// Work for later (tomorrow's plan).
    Background,
    /// Ordinary cognition.
    #[default]
    Normal,
    /// The player is waiting (a conversation with the avatar).
    Interactive,
}

/// A validated answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LlmValue {
    /// Free text.
    Text(String),
    /// An integer.
    Integer(i64),
    /// The index and text of the chosen option.
    Choice(usize, String),
    /// Yes (true) or no.
    Bool(bool),
    /// Lines.
    Lines(Vec<String>),
    /// Integers, in order.
    Integers(Vec<i64>),
    /// A JSON value that matched its schema.
    Json(serde_json::Value),
    /// An embedding.
    Embedding(Embedding),
}

impl LlmValue {
    /// The text, if this is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            LlmValue::Text(t) => Some(t),
            _ => None,
        }
    }
    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            LlmValue::Integer(i) => Some(*i),
            _ => None,
        }
    }
}

/// The longest embedding vector taken (the largest embedders make 4,096 numbers; a save or a
/// server giving more is damaged or broken).
pub const MAX_EMBEDDING_DIM: usize = 16_384;

/// What is wrong with an embedding from any backend, as a save's reader would refuse it: none
/// at all, longer than [`MAX_EMBEDDING_DIM`], or a number inside that is not finite (`1e300`
/// read as a 32-bit float). `None` when it can be taken.
pub fn vector_problem(v: &[f32]) -> Option<String> {
    if v.is_empty() {
        Some("an empty vector".into())
    } else if v.len() > MAX_EMBEDDING_DIM {
        Some(format!(
            "{} numbers: more than the {MAX_EMBEDDING_DIM} of any embedder",
            v.len()
        ))
    } else if v.iter().any(|x| !x.is_finite()) {
        Some("a number inside that is not finite".into())
    } else {
        None
    }
}

/// A vector with the model that made it, so vectors of different models are never mixed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Embedding {
    /// Model identity (backend kind and model file or name), one shared name per model (see
    /// [`model_name`]): a town of a thousand holds millions of vectors, and retrieval checks
    /// each one's model.
    pub model: std::sync::Arc<str>,
    /// Unit-length vector, shared by every memory with the same text (a town of a thousand
    /// holds millions of memories but far fewer different texts).
    pub vector: std::sync::Arc<[f32]>,
}

/// The one shared copy of a model's name (names are few: one or two per run).
pub fn model_name(name: &str) -> std::sync::Arc<str> {
    static NAMES: std::sync::Mutex<Vec<std::sync::Arc<str>>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| &***n == name) {
        return n.clone();
    }
    let n: std::sync::Arc<str> = name.into();
    names.push(n.clone());
    n
}

impl Embedding {
    /// A vector of `model`, scaled to unit length (a zero vector stays as it is).
    pub fn unit(model: &str, mut vector: Vec<f32>) -> Self {
        let n = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n > 0.0 && (n - 1.0).abs() > 1e-6 {
            vector.iter_mut().for_each(|x| *x /= n);
        }
        Self {
            model: model_name(model),
            vector: vector.into(),
        }
    }

    /// Whether this vector comes from `model` (the shared name is recognised without reading
    /// it).
    pub fn is_of(&self, model: &std::sync::Arc<str>) -> bool {
        std::sync::Arc::ptr_eq(&self.model, model) || self.model == *model
    }

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.vector.len()
    }

    /// Cosine similarity, or an error when the two come from different models or sizes.
    pub fn cosine(&self, other: &Embedding) -> Result<f32, EmbeddingMismatch> {
        self.check_compatible(&other.model, other.dim())?;
        let dot: f32 = self
            .vector
            .iter()
            .zip(other.vector.iter())
            .map(|(a, b)| a * b)
            .sum();
        let na: f32 = self.vector.iter().map(|a| a * a).sum::<f32>().sqrt();
        let nb: f32 = other.vector.iter().map(|a| a * a).sum::<f32>().sqrt();
        Ok(if na > 0.0 && nb > 0.0 {
            dot / (na * nb)
        } else {
            0.0
        })
    }

    /// Whether a stored vector can be compared with vectors of `model`/`dim`; a mismatch means
    /// the stored one must be embedded again.
    pub fn check_compatible(&self, model: &str, dim: usize) -> Result<(), EmbeddingMismatch> {
        if &*self.model != model || self.dim() != dim {
            return Err(EmbeddingMismatch {
                stored: format!("{} ({}d)", self.model, self.dim()),
                current: format!("{model} ({dim}d)"),
            });
        }
        Ok(())
    }
}

/// Vectors from different models or sizes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("embedding from {stored} cannot be compared with {current}: re-embed it")]
pub struct EmbeddingMismatch {
    /// What the stored vector came from.
    pub stored: String,
    /// What the current embedder makes.
    pub current: String,
}
