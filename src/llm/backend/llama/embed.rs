//! The embedding context: a llama.cpp context in embedding mode that embeds a few texts at once.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use std::num::NonZeroU32;

/// A context in embedding mode with mean pooling, one sequence per text.
pub struct Embedder<'m> {
    ctx: LlamaContext<'m>,
    /// The threads the context decodes with.
    threads: i32,
    batch: LlamaBatch<'static>,
}

impl<'m> Embedder<'m> {
    /// Texts embedded together.
    pub const SEQS: usize = 8;
    /// Longest text in tokens (longer ones are cut).
    pub const MAX_TOKENS: usize = 256;

    /// A new embedding context on a model.
    pub fn new(
        model: &'m LlamaModel,
        backend: &LlamaBackend,
        threads: i32,
        flash_attention: bool,
    ) -> Result<Self, String> {
        let n = (Self::SEQS * Self::MAX_TOKENS) as u32;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n))
            .with_n_batch(n)
            .with_n_ubatch(n)
            .with_n_seq_max(Self::SEQS as u32)
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
            batch: LlamaBatch::new(n as usize, 1),
        })
    }

    /// Embeds with `n` threads from now on (see [`super::threads`]).
    pub fn set_threads(&mut self, n: i32) {
        if n != self.threads && super::threads::set_threads(&self.ctx, n) {
            self.threads = n;
        }
    }

    /// Unit vectors (and token counts) for up to [`Self::SEQS`] texts.
    pub fn embed(
        &mut self,
        model: &LlamaModel,
        texts: &[&str],
    ) -> Vec<Result<(Vec<f32>, u32), String>> {
        self.ctx.clear_kv_cache();
        self.batch.clear();
        let mut counts = Vec::new();
        for (k, t) in texts.iter().enumerate() {
            let mut toks = model.vocab().tokenize(t.as_bytes(), true, false);
            toks.truncate(Self::MAX_TOKENS);
            if toks.is_empty() {
                toks.push(model.vocab().bos());
            }
            counts.push(toks.len() as u32);
            if let Err(e) = self.batch.add_sequence(&toks, k as i32, true) {
                return texts
                    .iter()
                    .map(|_| Err(format!("embedding batch: {e}")))
                    .collect();
            }
        }
        if let Err(e) = self.ctx.decode(&mut self.batch) {
            return texts
                .iter()
                .map(|_| Err(format!("embedding decode: {e}")))
                .collect();
        }
        (0..texts.len())
            .map(|k| {
                let v = self
                    .ctx
                    .embeddings_seq_ith(k as i32)
                    .map_err(|e| e.to_string())?;
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                Ok((v.iter().map(|x| x / n).collect(), counts[k]))
            })
            .collect()
    }
}
