//! The embedding context: a llama.cpp context in embedding mode that embeds a few texts at once
//! (a chat model's, or the sentence embedder's BERT).

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use std::num::NonZeroU32;

/// A context in embedding mode with mean pooling: each text a decode of its own (see
/// [`Embedder::embed_tokens`]).
pub struct Embedder<'m> {
    ctx: LlamaContext<'m>,
    /// The threads the context decodes with.
    threads: i32,
    batch: LlamaBatch<'static>,
    room: usize,
}

impl<'m> Embedder<'m> {
    /// Texts embedded together by a chat model's embedding context.
    pub const SEQS: usize = 8;
    /// Longest text in tokens (longer ones are cut).
    pub const MAX_TOKENS: usize = 256;

    /// A new embedding context on a chat model: [`Self::SEQS`] texts of up to
    /// [`Self::MAX_TOKENS`] tokens at once.
    pub fn new(
        model: &'m LlamaModel,
        backend: &LlamaBackend,
        threads: i32,
        flash_attention: bool,
    ) -> Result<Self, String> {
        Self::sized(
            model,
            backend,
            threads,
            flash_attention,
            Self::SEQS,
            Self::SEQS * Self::MAX_TOKENS,
        )
    }

    /// A new embedding context for up to `seqs` texts and `room` tokens in one decode (an
    /// encoder such as BERT reads a decode's tokens in one pass: the room is that pass's size).
    pub fn sized(
        model: &'m LlamaModel,
        backend: &LlamaBackend,
        threads: i32,
        flash_attention: bool,
        seqs: usize,
        room: usize,
    ) -> Result<Self, String> {
        let (seqs, room) = (seqs.clamp(1, 256), room.max(8));
        let n = room as u32;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n))
            .with_n_batch(n)
            .with_n_ubatch(n)
            .with_n_seq_max(seqs as u32)
            .with_embeddings(true)
            .with_pooling_type(LlamaPoolingType::Mean)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_flash_attention_policy(super::flash_attention(flash_attention));
        let ctx = model
            .new_context(backend, params)
            .map_err(|e| e.to_string())?;
        Ok(Self {
            ctx,
            threads,
            batch: LlamaBatch::new(room, 1),
            room,
        })
    }

    /// The most tokens one text may have.
    pub fn room(&self) -> usize {
        self.room
    }

    /// Embeds with `n` threads from now on (see [`super::threads`]).
    pub fn set_threads(&mut self, n: i32) {
        if n != self.threads && super::threads::set_threads(&self.ctx, n) {
            self.threads = n;
        }
    }

    /// Unit vectors (and token counts) for texts, each cut to [`Self::MAX_TOKENS`] tokens.
    pub fn embed(
        &mut self,
        model: &LlamaModel,
        texts: &[&str],
    ) -> Vec<Result<(Vec<f32>, u32), String>> {
        let tokens: Vec<Vec<LlamaToken>> = texts
            .iter()
            .map(|t| {
                let mut toks = model.vocab().tokenize(t.as_bytes(), true, false);
                toks.truncate(Self::MAX_TOKENS.min(self.room));
                if toks.is_empty() {
                    toks.push(model.vocab().bos());
                }
                toks
            })
            .collect();
        self.embed_tokens(&tokens)
    }

    /// Unit vectors (and token counts) for tokenised texts, each at most [`Self::room`] tokens
    /// and not empty. Each text is a decode of its own: in a decode shared with others its
    /// attention sums over their (masked) places too, in another order, and the vector differs
    /// in its last bits with what shares it (1e-5 on all-MiniLM-L6-v2), enough to turn a
    /// likeness at a threshold or the order of two memories. Alone, a text has one vector
    /// whatever was asked beside it and when.
    pub fn embed_tokens(
        &mut self,
        texts: &[Vec<LlamaToken>],
    ) -> Vec<Result<(Vec<f32>, u32), String>> {
        texts
            .iter()
            .flat_map(|t| self.decode_group(std::slice::from_ref(t)))
            .collect()
    }

    /// One decode of texts that fit together.
    fn decode_group(&mut self, texts: &[Vec<LlamaToken>]) -> Vec<Result<(Vec<f32>, u32), String>> {
        let all_fail = |e: String| texts.iter().map(|_| Err(e.clone())).collect();
        self.ctx.clear_kv_cache();
        self.batch.clear();
        for (k, toks) in texts.iter().enumerate() {
            if toks.is_empty() || toks.len() > self.room {
                return all_fail(format!(
                    "embedding batch: a text of {} tokens (1 to {} fit)",
                    toks.len(),
                    self.room
                ));
            }
            if let Err(e) = self.batch.add_sequence(toks, k as i32, true) {
                return all_fail(format!("embedding batch: {e}"));
            }
        }
        if let Err(e) = self.ctx.decode(&mut self.batch) {
            return all_fail(format!("embedding decode: {e}"));
        }
        (0..texts.len())
            .map(|k| {
                let v = self
                    .ctx
                    .embeddings_seq_ith(k as i32)
                    .map_err(|e| e.to_string())?;
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                Ok((v.iter().map(|x| x / n).collect(), texts[k].len() as u32))
            })
            .collect()
    }
}
