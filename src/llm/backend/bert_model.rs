//! The BERT encoder the sentence embedder runs (all-MiniLM-L6-v2 by default): token, position
//! and segment embeddings, then layers of self-attention and feed-forward, each closed by a
//! residual sum and a layer norm. Written after candle-transformers' `models::bert` (MIT OR
//! Apache-2.0, the Candle authors), the same operations in the same order (so the same
//! vectors), keeping only what an embedder uses: absolute positions, no dropout (inference), no
//! masked-LM head. The build then needs none of candle-transformers' other models.

use candle_core::{D, DType, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, Module, VarBuilder, embedding, layer_norm, linear};
use serde::Deserialize;

/// The activation between a layer's two feed-forward matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HiddenAct {
    Gelu,
    GeluApproximate,
    Relu,
}

/// How positions are embedded: only absolute positions are supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PositionEmbeddingType {
    #[default]
    Absolute,
}

/// The fields of a model's `config.json` that the encoder uses (others are ignored).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: HiddenAct,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub position_embedding_type: PositionEmbeddingType,
    pub model_type: Option<String>,
}

struct Embeddings {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    norm: LayerNorm,
}

impl Embeddings {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        Ok(Self {
            word: embedding(c.vocab_size, c.hidden_size, vb.pp("word_embeddings"))?,
            position: embedding(
                c.max_position_embeddings,
                c.hidden_size,
                vb.pp("position_embeddings"),
            )?,
            token_type: embedding(
                c.type_vocab_size,
                c.hidden_size,
                vb.pp("token_type_embeddings"),
            )?,
            norm: layer_norm(c.hidden_size, c.layer_norm_eps, vb.pp("LayerNorm"))?,
        })
    }

    fn forward(&self, input_ids: &Tensor, token_type_ids: &Tensor) -> Result<Tensor> {
        let (_batch, seq_len) = input_ids.dims2()?;
        let words = self.word.forward(input_ids)?;
        let types = self.token_type.forward(token_type_ids)?;
        let positions: Vec<u32> = (0..seq_len as u32).collect();
        let positions = Tensor::new(&positions[..], input_ids.device())?;
        let sum = (&words + types)?.broadcast_add(&self.position.forward(&positions)?)?;
        self.norm.forward(&sum)
    }
}

/// One encoder layer.
struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    act: HiddenAct,
    out: Linear,
    out_norm: LayerNorm,
    heads: usize,
    head_size: usize,
}

impl Layer {
    fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        let head_size = c.hidden_size / c.num_attention_heads;
        let all = c.num_attention_heads * head_size;
        let attn = vb.pp("attention");
        let own = attn.pp("self");
        let norm = |vb: VarBuilder| layer_norm(c.hidden_size, c.layer_norm_eps, vb);
        Ok(Self {
            query: linear(c.hidden_size, all, own.pp("query"))?,
            key: linear(c.hidden_size, all, own.pp("key"))?,
            value: linear(c.hidden_size, all, own.pp("value"))?,
            attention_out: linear(c.hidden_size, c.hidden_size, attn.pp("output").pp("dense"))?,
            attention_norm: norm(attn.pp("output").pp("LayerNorm"))?,
            intermediate: linear(
                c.hidden_size,
                c.intermediate_size,
                vb.pp("intermediate").pp("dense"),
            )?,
            act: c.hidden_act,
            out: linear(
                c.intermediate_size,
                c.hidden_size,
                vb.pp("output").pp("dense"),
            )?,
            out_norm: norm(vb.pp("output").pp("LayerNorm"))?,
            heads: c.num_attention_heads,
            head_size,
        })
    }

    /// (batch, seq, hidden) → (batch, heads, seq, head size).
    fn heads_of(&self, xs: &Tensor) -> Result<Tensor> {
        let mut shape = xs.dims().to_vec();
        shape.pop();
        shape.push(self.heads);
        shape.push(self.head_size);
        xs.reshape(shape.as_slice())?.transpose(1, 2)?.contiguous()
    }

    fn forward(&self, hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
        // Self-attention.
        let q = self.heads_of(&self.query.forward(hidden)?)?;
        let k = self.heads_of(&self.key.forward(hidden)?)?;
        let v = self.heads_of(&self.value.forward(hidden)?)?;
        let scores = q.matmul(&k.t()?)?;
        let scores = (scores / (self.head_size as f64).sqrt())?;
        let scores = scores.broadcast_add(mask)?;
        let probs = candle_nn::ops::softmax(&scores, D::Minus1)?;
        let context = probs.matmul(&v)?;
        let context = context.transpose(1, 2)?.contiguous()?;
        let context = context.flatten_from(D::Minus2)?;
        let attended = self.attention_out.forward(&context)?;
        let attended = self.attention_norm.forward(&(attended + hidden)?)?;
        // Feed-forward.
        let inner = self.intermediate.forward(&attended)?;
        let inner = match self.act {
            HiddenAct::Gelu => inner.gelu_erf()?,
            HiddenAct::GeluApproximate => inner.gelu()?,
            HiddenAct::Relu => inner.relu()?,
        };
        let out = self.out.forward(&inner)?;
        self.out_norm.forward(&(out + attended)?)
    }
}

/// The encoder: embeddings and layers.
pub struct BertModel {
    embeddings: Embeddings,
    layers: Vec<Layer>,
}

impl BertModel {
    fn load_at(vb: VarBuilder, c: &Config) -> Result<Self> {
        let embeddings = Embeddings::load(vb.pp("embeddings"), c)?;
        let layers = (0..c.num_hidden_layers)
            .map(|i| Layer::load(vb.pp(format!("encoder.layer.{i}")), c))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { embeddings, layers })
    }

    /// Loads the weights, at the top of the file, under `bert.` or under the config's
    /// `model_type`.
    pub fn load(vb: VarBuilder, c: &Config) -> Result<Self> {
        let vb = if vb.contains_tensor("bert") {
            vb.pp("bert")
        } else {
            vb
        };
        match Self::load_at(vb.clone(), c) {
            Ok(m) => Ok(m),
            Err(e) => match &c.model_type {
                Some(t) => Self::load_at(vb.pp(t), c).map_err(|_| e),
                None => Err(e),
            },
        }
    }

    /// The last layer's hidden states, (batch, seq, hidden); `attention_mask` (batch, seq) is
    /// 1 for tokens and 0 for padding.
    pub fn forward(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let mut hidden = self.embeddings.forward(input_ids, token_type_ids)?;
        let mask = match attention_mask {
            Some(m) => m.clone(),
            None => input_ids.ones_like()?,
        };
        let mask = extended_mask(&mask, hidden.dtype())?;
        for layer in &self.layers {
            hidden = layer.forward(&hidden, &mask)?;
        }
        Ok(hidden)
    }
}

/// (batch, seq) of 1 and 0 → (batch, 1, 1, seq) of 0 and the most negative number: added to the
/// attention scores, padding gets no attention.
fn extended_mask(mask: &Tensor, dtype: DType) -> Result<Tensor> {
    let mask = match mask.rank() {
        3 => mask.unsqueeze(1)?,
        2 => mask.unsqueeze(1)?.unsqueeze(1)?,
        _ => candle_core::bail!("Wrong shape for input_ids or attention_mask"),
    };
    let mask = mask.to_dtype(dtype)?;
    (mask.ones_like()? - &mask)?.broadcast_mul(
        &Tensor::try_from(f32::MIN)?
            .to_device(mask.device())?
            .to_dtype(dtype)?,
    )
}
