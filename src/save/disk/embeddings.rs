//! `embeddings.bin`, the memories' vectors of a save: magic, the model names, then (agent, node,
//! model, dim, floats) records, then a checksum; read back with every vector of one text and
//! model shared again.

use crate::llm::Embedding;
use crate::memory::stream::NodeId;
use crate::sim::hash::fnv1a_64 as fnv;

const MAGIC: &[u8; 8] = b"SIMEMB01";

/// `embeddings.bin`: magic, the model names, then (agent, node, model, dim, floats) records,
/// then a checksum of everything before it. Little-endian.
pub fn encode_embeddings(list: &[(u32, NodeId, Embedding)]) -> Vec<u8> {
    let mut models: Vec<&str> = Vec::new();
    for (_, _, e) in list {
        if !models.contains(&&*e.model) {
            models.push(&e.model);
        }
    }
    let mut out = Vec::with_capacity(16 + list.len() * (20 + 4 * 384));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(models.len() as u32).to_le_bytes());
    for m in &models {
        out.extend_from_slice(&(m.len() as u32).to_le_bytes());
        out.extend_from_slice(m.as_bytes());
    }
    out.extend_from_slice(&(list.len() as u32).to_le_bytes());
    for (a, id, e) in list {
        let m = models.iter().position(|x| *x == &*e.model).unwrap_or(0) as u32;
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&id.0.to_le_bytes());
        out.extend_from_slice(&m.to_le_bytes());
        out.extend_from_slice(&(e.vector.len() as u32).to_le_bytes());
        for x in e.vector.iter() {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    let sum = fnv(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or_else(|| format!("cut off at byte {} while reading {what}", self.b.len()))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4 bytes"),
        ))
    }
}

/// Reads `embeddings.bin` for a save of `agents` people.
pub fn decode_embeddings(b: &[u8], agents: usize) -> Result<Vec<(u32, NodeId, Embedding)>, String> {
    if b.len() < MAGIC.len() + 8 || &b[..MAGIC.len()] != MAGIC {
        return Err("not an embeddings file of ours (bad magic bytes)".into());
    }
    let (body, sum) = b.split_at(b.len() - 8);
    if fnv(body) != u64::from_le_bytes(sum.try_into().expect("8 bytes")) {
        return Err("checksum mismatch: the file is damaged".into());
    }
    let mut r = Reader {
        b: body,
        at: MAGIC.len(),
    };
    let n_models = r.u32("the model count")? as usize;
    if n_models > 64 {
        return Err(format!("{n_models} models: damaged"));
    }
    let mut models = Vec::new();
    for _ in 0..n_models {
        let len = r.u32("a model name's length")? as usize;
        let s = r.take(len, "a model name")?;
        models.push(crate::llm::types::model_name(&String::from_utf8_lossy(s)));
    }
    let n = r.u32("the vector count")? as usize;
    let mut out = Vec::with_capacity(n.min(1 << 20));
    // One vector per different text and model, shared as it was before the save (every memory
    // of the same text has the same vector): the file repeats it for each memory.
    let mut shared: std::collections::HashMap<(usize, u64), Vec<std::sync::Arc<[f32]>>> =
        Default::default();
    for i in 0..n {
        let at = r.at;
        let a = r.u32("an agent index")?;
        let id = r.u32("a node id")?;
        let m = r.u32("a model index")? as usize;
        let dim = r.u32("a vector length")? as usize;
        if a as usize >= agents {
            return Err(format!(
                "vector {i} (byte {at}): agent {a}, but the save has {agents} people"
            ));
        }
        let model = models
            .get(m)
            .ok_or_else(|| format!("vector {i} (byte {at}): model {m} of {n_models}"))?
            .clone();
        if dim == 0 || dim > crate::llm::types::MAX_EMBEDDING_DIM {
            return Err(format!("vector {i} (byte {at}): length {dim}"));
        }
        let raw = r.take(dim * 4, "a vector")?;
        let same = shared.entry((m, fnv(raw))).or_default();
        let bits = |v: &[f32]| {
            v.iter().map(|x| x.to_bits()).eq(raw
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))))
        };
        let vector = match same.iter().find(|v| v.len() == dim && bits(v)) {
            Some(v) => v.clone(),
            None => {
                let vector: Vec<f32> = raw
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect();
                if vector.iter().any(|x| !x.is_finite()) {
                    return Err(format!("vector {i} (byte {at}): not a number inside"));
                }
                let vector: std::sync::Arc<[f32]> = vector.into();
                same.push(vector.clone());
                vector
            }
        };
        out.push((a, NodeId(id), Embedding { model, vector }));
    }
    if r.at != body.len() {
        return Err(format!("{} bytes after the last vector", body.len() - r.at));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_round_trip_and_damage_is_named() {
        let list = vec![
            (
                0,
                NodeId(3),
                Embedding {
                    model: "bert:x".into(),
                    vector: vec![0.6, 0.8].into(),
                },
            ),
            (
                1,
                NodeId(9),
                Embedding {
                    model: "hash".into(),
                    vector: vec![1.0, 0.0, 0.0].into(),
                },
            ),
        ];
        let b = encode_embeddings(&list);
        assert_eq!(decode_embeddings(&b, 2).unwrap(), list);
        let mut bad = b.clone();
        bad[20] ^= 0xff;
        assert!(decode_embeddings(&bad, 2).unwrap_err().contains("checksum"));
        assert!(decode_embeddings(&b[..b.len() - 3], 2).is_err());
        assert!(
            decode_embeddings(b"garbage!garbage!", 2)
                .unwrap_err()
                .contains("magic")
        );
        assert!(decode_embeddings(&b, 1).unwrap_err().contains("agent 1"));
    }

    /// The file holds a vector once per memory; read back, memories of the same text and model
    /// share one vector again (a day's save of a thousand residents holds millions).
    #[test]
    fn equal_vectors_of_one_model_are_read_back_shared() {
        let e = |model: &str, v: &[f32]| Embedding {
            model: model.into(),
            vector: v.into(),
        };
        let list = vec![
            (0, NodeId(1), e("m", &[0.6, 0.8])),
            (1, NodeId(2), e("m", &[0.6, 0.8])),
            (1, NodeId(3), e("n", &[0.6, 0.8])),
            (0, NodeId(4), e("m", &[0.8, 0.6])),
        ];
        let back = decode_embeddings(&encode_embeddings(&list), 2).unwrap();
        assert_eq!(back, list);
        let v = |i: usize| &back[i].2.vector;
        assert!(std::sync::Arc::ptr_eq(v(0), v(1)), "same text, same model");
        assert!(!std::sync::Arc::ptr_eq(v(0), v(2)), "another model");
        assert!(!std::sync::Arc::ptr_eq(v(0), v(3)), "another vector");
        assert!(std::sync::Arc::ptr_eq(&back[0].2.model, &back[1].2.model));
    }
}
