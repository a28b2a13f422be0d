//! The scripted backend: deterministic answers from rules (first match by purpose and prompt
//! text), else a valid answer of the request's shape chosen by a hash of the prompt. Tests and
//! model-free runs use it behind the same API as the real backends.

use super::{Backend, Health, Work, WorkDone, WorkKind, WorkOutcome};
use crate::llm::config::{ScriptRule, ScriptedConfig};
use crate::llm::types::OutputShape;
use crossbeam_channel::Sender;
use serde_json::Value;

/// Scripted answers.
pub struct ScriptedBackend {
    index: usize,
    name: String,
    rules: Vec<ScriptRule>,
    load_error: Option<String>,
}

impl ScriptedBackend {
    /// From config (rules inline and from a file).
    pub fn from_config(index: usize, c: &ScriptedConfig) -> Self {
        let mut rules = c.rules.clone();
        let mut load_error = None;
        if let Some(f) = &c.file {
            match crate::data_error::read_ron::<Vec<ScriptRule>>(&crate::data::resolve_data("", f))
            {
                Ok((more, _)) => rules.extend(more),
                Err(e) => load_error = Some(format!("fatal: {e}")),
            }
        }
        Self {
            index,
            name: if c.name.is_empty() {
                "scripted".into()
            } else {
                c.name.clone()
            },
            rules,
            load_error,
        }
    }
}

use crate::sim::hash::text_hash;

/// A made-up vector for scripted embeddings: words hashed into 64 buckets, so texts sharing
/// words are closer (enough for retrieval tests without a model).
pub fn bag_of_words_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 64];
    for w in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        v[(text_hash(w) % 64) as usize] += 1.0;
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

/// A valid answer of a shape, picked by `h`.
pub fn default_answer(shape: &OutputShape, h: u64) -> String {
    match shape {
        OutputShape::Text => "Okay.".into(),
        OutputShape::Integer { min, max } => {
            (min + (h % ((max - min + 1).max(1) as u64)) as i64).to_string()
        }
        OutputShape::Choice(o) => o
            .get((h % o.len().max(1) as u64) as usize)
            .cloned()
            .unwrap_or_default(),
        OutputShape::YesNo => if h.is_multiple_of(2) { "yes" } else { "no" }.into(),
        OutputShape::Lines(n) => (1..=*n)
            .map(|i| format!("item {i}"))
            .collect::<Vec<_>>()
            .join("\n"),
        OutputShape::Integers { count, min, max } => {
            let span = (max - min + 1).max(1) as u64;
            let v: Vec<String> = (0..*count as u64)
                .map(|i| (min + (h.rotate_left(i as u32 * 7) % span) as i64).to_string())
                .collect();
            format!("[{}]", v.join(", "))
        }
        OutputShape::Json(schema) => example_for_schema(schema).to_string(),
    }
}

/// The simplest value matching a schema: the first option, the fewest items, the least
/// number, no, and "a scripted answer" (lengthened or cut to fit).
pub fn example_for_schema(schema: &Value) -> Value {
    crate::llm::shape::schema_value(schema, &Simplest, "")
}

/// The chooser of [`example_for_schema`]: always the simplest.
struct Simplest;

impl crate::llm::shape::Chooser for Simplest {
    fn property(&self, _: usize) -> Self {
        Simplest
    }
    fn item(&self, _: usize) -> Self {
        Simplest
    }
    fn option(&self, _: usize) -> usize {
        0
    }
    fn count(&self, min: u64, _: Option<u64>) -> u64 {
        min
    }
    fn integer(&self, lo: i64, _: Option<i64>) -> i64 {
        lo
    }
    fn boolean(&self) -> bool {
        false
    }
    fn text(&self, _: &str, min: usize, max: Option<usize>) -> String {
        let mut s = "a scripted answer".to_string();
        while s.len() < min {
            s.push_str(" again");
        }
        s.truncate(max.unwrap_or(usize::MAX).max(min));
        s
    }
}

impl Backend for ScriptedBackend {
    fn name(&self) -> &str {
        &self.name
    }
    fn model_id(&self) -> String {
        format!("scripted:{}", self.name)
    }
    fn capacity(&self) -> usize {
        64
    }
    fn start(&mut self, work: Work, done: Sender<WorkDone>) {
        let mut delay_ms = 0;
        let outcome = match &work.kind {
            WorkKind::Embed { text } => WorkOutcome::Vector {
                vector: bag_of_words_vector(text),
                model: self.model_id(),
                prompt_tokens: 0,
            },
            WorkKind::Chat {
                messages, shape, ..
            } => {
                let prompt: String = messages
                    .iter()
                    .map(|m| m.content.as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                let rule = self.rules.iter().find(|r| {
                    r.purpose.as_ref().is_none_or(|p| *p == work.purpose)
                        && r.contains
                            .as_ref()
                            .is_none_or(|c| prompt.contains(c.as_str()))
                });
                delay_ms = rule.map_or(0, |r| r.delay_ms);
                let text = match (rule, shape) {
                    // One number answers a list of numbers: the same number for each.
                    (Some(r), OutputShape::Integers { count, .. })
                        if r.reply.trim().parse::<i64>().is_ok() =>
                    {
                        format!("[{}]", vec![r.reply.trim(); *count].join(", "))
                    }
                    (Some(r), _) => r.reply.clone(),
                    (None, _) => default_answer(shape, text_hash(&prompt)),
                };
                WorkOutcome::Text {
                    text,
                    prompt_tokens: 0,
                    cached_tokens: 0,
                    gen_tokens: 0,
                    looped: None,
                }
            }
        };
        let finished = WorkDone {
            id: work.id,
            backend: self.index,
            endpoint: None,
            outcome,
        };
        if delay_ms == 0 {
            let _ = done.send(finished);
        } else {
            // A slow answer: the others go on meanwhile.
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(delay_ms));
                let _ = done.send(finished);
            });
        }
    }
    fn health(&self) -> (Health, String) {
        match &self.load_error {
            Some(e) => (Health::Down, e.clone()),
            None => (Health::Ok, format!("{} rules", self.rules.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::shape::parse;
    use serde_json::json;

    #[test]
    fn defaults_fit_their_shapes() {
        let shapes = [
            OutputShape::Text,
            OutputShape::Integer { min: 1, max: 10 },
            OutputShape::Choice(vec!["a".into(), "b".into()]),
            OutputShape::YesNo,
            OutputShape::Lines(3),
            OutputShape::Integers {
                count: 4,
                min: 1,
                max: 10,
            },
            OutputShape::Json(
                json!({"type":"object","properties":{"n":{"type":"integer","minimum":2},"t":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["n","t"]}),
            ),
        ];
        for s in &shapes {
            for h in 0..20 {
                assert!(parse(s, &default_answer(s, h)).is_ok(), "{s:?}");
            }
        }
    }

    #[test]
    fn bag_of_words_is_closer_for_shared_words() {
        let a = bag_of_words_vector("Isabella plans a party at the cafe");
        let b = bag_of_words_vector("a party at the cafe is planned by Isabella");
        let c = bag_of_words_vector("Klaus studies sociology in the library");
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!(dot(&a, &b) > dot(&a, &c));
    }
}
