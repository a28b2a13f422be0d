//! The memories of a person made for the original: their `associative_memory/nodes.json` read
//! into seed memories with their times, importance and evidence.

use super::report::PeopleReport;
use super::{line_of_key, read_json};
use crate::agent::persona::SeedNode;
use crate::data_error::DataError;
use crate::memory::stream::NodeKind;
use serde_json::Value;
use std::path::Path;

/// A persona's `associative_memory/nodes.json` as memories with their times and importance,
/// oldest first (the original replays them in `node_count` order). Evidence is kept as places in
/// that list; embeddings are not read (ours are made again by our embedder). Lenient where the
/// original is (a bare string as a thought's evidence), strict where a node could not be read.
pub(super) fn read_nodes(
    path: &Path,
    start: &str,
    name: &str,
    report: &mut PeopleReport,
) -> Result<Vec<SeedNode>, DataError> {
    let v = read_json(path)?;
    let Some(obj) = v.as_object() else {
        return Err(DataError::new(
            path,
            1,
            "",
            "must be an object of nodes (\"node_1\": {...})",
        ));
    };
    let bad = |key: &str, field: &str, msg: String| {
        DataError::new(path, line_of_key(path, key), format!("{key}.{field}"), msg)
    };
    let mut list: Vec<(u64, &String, &Value)> = Vec::new();
    for (key, n) in obj {
        let count = n
            .get("node_count")
            .and_then(Value::as_u64)
            .or_else(|| key.strip_prefix("node_")?.parse().ok())
            .ok_or_else(|| bad(key, "node_count", "needs a whole number".into()))?;
        list.push((count, key, n));
    }
    list.sort_by_key(|(c, _, _)| *c);
    let position: std::collections::HashMap<&str, usize> = list
        .iter()
        .enumerate()
        .map(|(i, (_, k, _))| (k.as_str(), i + 1))
        .collect();
    let (mut dropped, mut clamped, mut late) = (0usize, 0usize, 0usize);
    let mut out: Vec<SeedNode> = Vec::new();
    for (i, (_, key, n)) in list.iter().enumerate() {
        let s = |f: &str| {
            n.get(f)
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string()
        };
        let kind = match s("type").as_str() {
            "event" => NodeKind::Event,
            "thought" => NodeKind::Thought,
            "chat" => NodeKind::Chat,
            other => {
                return Err(bad(
                    key,
                    "type",
                    format!("{other:?} is not event, thought or chat"),
                ));
            }
        };
        let time = |f: &str| -> Result<Option<String>, DataError> {
            match n.get(f) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(t)) if crate::sim::time::GameTime::parse(t).is_some() => {
                    Ok(Some(t.trim().to_string()))
                }
                Some(other) => Err(bad(
                    key,
                    f,
                    format!("{other} is not a time like \"2023-02-13 21:11:20\""),
                )),
            }
        };
        let mut created =
            time("created")?.ok_or_else(|| bad(key, "created", "is missing".into()))?;
        if crate::sim::time::GameTime::parse(&created) > crate::sim::time::GameTime::parse(start) {
            created = start.to_string();
            late += 1;
        }
        let description = s("description");
        if description.is_empty() {
            return Err(bad(key, "description", "is empty".into()));
        }
        let raw = n.get("poignancy").and_then(Value::as_f64).unwrap_or(1.0);
        let importance = raw.round().clamp(1.0, 10.0) as u8;
        if f64::from(importance) != raw {
            clamped += 1;
        }
        // Evidence: node ids ("node_4", or one bare string); a chat's filling is its lines.
        let filling = n.get("filling").cloned().unwrap_or(Value::Null);
        let mut evidence = Vec::new();
        let mut chat = Vec::new();
        if kind == NodeKind::Chat {
            for l in filling.as_array().into_iter().flatten() {
                if let (Some(who), Some(said)) = (
                    l.get(0).and_then(Value::as_str),
                    l.get(1).and_then(Value::as_str),
                ) {
                    chat.push((who.to_string(), said.to_string()));
                }
            }
        } else {
            let ids: Vec<&str> = match &filling {
                Value::String(one) => vec![one.as_str()],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            for id in ids {
                match position.get(id) {
                    Some(p) if *p <= i => evidence.push(*p),
                    _ => dropped += 1,
                }
            }
        }
        let embedding_key = s("embedding_key");
        out.push(SeedNode {
            kind,
            created,
            expiry: time("expiration")?,
            importance,
            subject: s("subject"),
            predicate: s("predicate"),
            object: s("object"),
            embedding_key: (!embedding_key.is_empty() && embedding_key != description)
                .then_some(embedding_key),
            description,
            keywords: n
                .get("keywords")
                .and_then(Value::as_array)
                .map(|k| {
                    k.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            evidence,
            chat,
        });
    }
    if !out.is_empty() {
        let count = |k: NodeKind| out.iter().filter(|n| n.kind == k).count();
        report.read.push(format!(
            "{name}: {} memories from nodes.json with their times and importance ({} events, {} thoughts, {} chats); embeddings are made again by our embedder (embeddings.json is not read)",
            out.len(),
            count(NodeKind::Event),
            count(NodeKind::Thought),
            count(NodeKind::Chat)
        ));
    }
    if dropped > 0 {
        report.notes.push(format!(
            "{name}: {dropped} evidence link(s) in nodes.json name no earlier node and were dropped"
        ));
    }
    if clamped > 0 {
        report.notes.push(format!(
            "{name}: {clamped} poignancy value(s) in nodes.json were not whole numbers 1 to 10 and were rounded into that range"
        ));
    }
    if late > 0 {
        report.notes.push(format!(
            "{name}: {late} node(s) in nodes.json were made after the start ({start}); they are dated at the start"
        ));
    }
    Ok(out)
}
