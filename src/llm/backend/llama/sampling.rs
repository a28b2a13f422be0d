//! Sampling for one request: the output shape's grammar (checked lazily) and the sampling chain.

use crate::llm::shape;
use crate::llm::types::{OutputShape, Sampling};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

/// A sampler for one request: the output shape's grammar (if any) and the sampling chain.
///
/// The grammar is checked lazily, as llama.cpp's own `common_sampler` does: the chain picks a
/// token from the raw logits, and only that one token is checked against the grammar; only when
/// the grammar rejects it is the grammar applied to the whole vocabulary and the token picked
/// again. Applying a JSON grammar to all 49k candidates on every token cost far more than the
/// model's forward pass with many requests in flight; the tokens chosen are the same.
pub struct ShapedSampler {
    grammar: Option<LlamaSampler>,
    chain: LlamaSampler,
    /// The end of the answer, given when the grammar allows no token at all (llama.cpp would
    /// throw on accepting a token its grammar rejects, and a C++ exception ends the program).
    end: LlamaToken,
}

impl ShapedSampler {
    fn candidates(logits: &[f32]) -> LlamaTokenDataArray {
        LlamaTokenDataArray::new(
            logits
                .iter()
                .enumerate()
                .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0))
                .collect(),
            false,
        )
    }

    /// Picks (and accepts) the next token from the `idx`-th logits of the last decode.
    pub fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> LlamaToken {
        let logits = ctx.get_logits_ith(idx);
        let mut cur = Self::candidates(logits);
        self.chain.apply(&mut cur);
        let mut tok = cur.selected_token().unwrap_or(LlamaToken(0));
        if let Some(g) = self.grammar.as_mut() {
            if !allows(g, tok) {
                let mut all = Self::candidates(logits);
                g.apply(&mut all);
                if !all.data.iter().any(|d| d.logit().is_finite()) {
                    return self.end;
                }
                self.chain.apply(&mut all);
                tok = all.selected_token().unwrap_or(self.end);
                let allowed = all
                    .data
                    .iter()
                    .any(|d| d.id() == tok && d.logit().is_finite());
                if !allowed {
                    return self.end;
                }
            }
            g.accept(tok);
        }
        self.chain.accept(tok);
        tok
    }
}

impl ShapedSampler {
    /// Takes `tok` as the answer's next token without sampling it (text the shape forces,
    /// `llm::forced`), when the grammar allows it; false, and nothing taken, when it does not.
    pub fn force(&mut self, tok: LlamaToken) -> bool {
        if let Some(g) = self.grammar.as_mut() {
            if !allows(g, tok) {
                return false;
            }
            g.accept(tok);
        }
        self.chain.accept(tok);
        true
    }
}

/// Whether the grammar, in its present state, allows `tok` next (it is checked alone).
fn allows(g: &mut LlamaSampler, tok: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(tok, 1.0, 0.0)], false);
    g.apply(&mut one);
    one.data[0].logit().is_finite()
}

/// The sampler for an output shape and sampling settings.
pub fn build_sampler(
    model: &LlamaModel,
    shape_: &OutputShape,
    s: &Sampling,
) -> Result<ShapedSampler, String> {
    let grammar = match shape::grammar(shape_)? {
        Some(g) => Some(
            LlamaSampler::grammar(model, &g, "root")
                .map_err(|e| format!("grammar rejected: {e}"))?,
        ),
        None => None,
    };
    let chain = if s.deterministic() {
        LlamaSampler::greedy()
    } else {
        LlamaSampler::chain_simple([
            LlamaSampler::top_k(40),
            LlamaSampler::top_p(s.top_p, 1),
            LlamaSampler::temp(s.temperature),
            LlamaSampler::dist(s.seed),
        ])
    };
    Ok(ShapedSampler {
        grammar,
        chain,
        end: model.vocab().eos(),
    })
}
