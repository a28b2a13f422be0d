//! What an endpoint is known to do: the dialect its shaped requests are written in, and
//! whether and how it makes embeddings.

use crate::llm::backend::dialect::Negotiation;
use crate::llm::config::Dialect;

/// What an endpoint is known to do: shared by the backend and its requests in flight.
#[derive(Debug, Clone)]
pub struct Talk {
    /// How shaped requests are written.
    pub negotiation: Negotiation,
    /// Whether and how it makes embeddings.
    pub embeddings: Embeddings,
}

impl Talk {
    /// Before first contact.
    pub fn new(dialect: Dialect) -> Self {
        Self {
            negotiation: Negotiation::new(dialect),
            embeddings: Embeddings::Unknown,
        }
    }
}

/// An endpoint's embeddings.
#[derive(Debug, Clone, PartialEq)]
pub enum Embeddings {
    /// Not asked yet.
    Unknown,
    /// It makes them.
    Yes {
        /// Vector size.
        dim: usize,
        /// One vector per token came back, mean-pooled here.
        per_token: bool,
        /// Where they come from.
        route: EmbedRoute,
    },
    /// It makes none: the server's words.
    No(String),
}

/// The route embeddings are asked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedRoute {
    /// `{base}/embeddings` (OpenAI's).
    OpenAi,
    /// llama-server's own `{root}/embedding` (per-token vectors when the model has no pooling).
    LlamaServer,
}

impl Embeddings {
    /// In words.
    pub fn describe(&self) -> String {
        match self {
            Embeddings::Unknown => "not asked yet".into(),
            Embeddings::Yes {
                dim,
                per_token,
                route,
            } => format!(
                "{dim}d{}{}",
                if *per_token {
                    " (token vectors, mean-pooled here)"
                } else {
                    ""
                },
                if *route == EmbedRoute::LlamaServer {
                    " from /embedding"
                } else {
                    ""
                }
            ),
            Embeddings::No(why) => format!("no ({why})"),
        }
    }
}

/// The model identity recorded with an endpoint's vectors: per-token vectors pooled here are
/// not the same vectors as a pooling model's, so the pooling is part of the name.
pub fn embedding_identity(model: &str, per_token: bool) -> String {
    if per_token {
        format!("openai:{model} (mean of token vectors)")
    } else {
        format!("openai:{model}")
    }
}
