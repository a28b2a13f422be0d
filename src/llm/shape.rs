//! Output shapes by construction: each shape becomes a GBNF grammar (for llama.cpp's sampler)
//! and a JSON schema (for servers that enforce one), and every answer is validated again
//! before it reaches a caller. A failure here is counted and answered with the fail-safe.

use super::types::{LlmValue, OutputShape};
use serde_json::{Value, json};

use super::schema_grammar::literal as gbnf_literal;

/// The GBNF grammar for a shape (root rule `root`), or `None` for free text.
pub fn grammar(shape: &OutputShape) -> Result<Option<String>, String> {
    Ok(match shape {
        OutputShape::Text => None,
        OutputShape::Integer { min, max } => {
            if max < min {
                return Err(format!("integer range {min}..={max} is empty"));
            }
            if max - min <= 256 {
                let alts: Vec<String> = (*min..=*max)
                    .map(|i| gbnf_literal(&i.to_string()))
                    .collect();
                Some(format!("root ::= {}\n", alts.join(" | ")))
            } else {
                // Digits only; the range is checked by validation.
                Some("root ::= \"-\"? [0-9] [0-9]? [0-9]? [0-9]? [0-9]? [0-9]? [0-9]? [0-9]? [0-9]?\n".into())
            }
        }
        OutputShape::Choice(options) => {
            if options.is_empty() {
                return Err("a choice needs at least one option".into());
            }
            let alts: Vec<String> = options.iter().map(|o| gbnf_literal(o)).collect();
            Some(format!("root ::= {}\n", alts.join(" | ")))
        }
        OutputShape::YesNo => Some("root ::= \"yes\" | \"no\"\n".into()),
        OutputShape::Lines(n) => {
            if *n == 0 {
                return Err("zero lines asked".into());
            }
            let lines = vec!["line"; *n].join(" ");
            Some(format!(
                "root ::= {lines}\nline ::= [^\\n\\r] [^\\n\\r]* \"\\n\"\n"
            ))
        }
        OutputShape::Integers { count, min, max } => {
            if max < min || max - min > 256 {
                return Err(format!(
                    "integer range {min}..={max} must hold 1 to 257 values"
                ));
            }
            if *count == 0 || *count > 64 {
                return Err(format!("{count} integers asked (1..=64)"));
            }
            let alts: Vec<String> = (*min..=*max)
                .map(|i| gbnf_literal(&i.to_string()))
                .collect();
            let items = vec!["num"; *count].join(" sep ");
            Some(format!(
                "root ::= \"[\" {items} \"]\"\nsep ::= \",\" \" \"?\nnum ::= {}\n",
                alts.join(" | ")
            ))
        }
        OutputShape::Json(schema) => Some(
            super::schema_grammar::grammar(schema).map_err(|e| format!("schema → grammar: {e}"))?,
        ),
    })
}

/// The JSON schema a server should enforce: the shape wrapped as `{"value": ...}` (servers take
/// objects), or `None` for free text.
pub fn wrapped_schema(shape: &OutputShape) -> Option<Value> {
    let inner = match shape {
        OutputShape::Text => return None,
        OutputShape::Integer { min, max } => {
            json!({"type": "integer", "minimum": min, "maximum": max})
        }
        OutputShape::Choice(options) => json!({"type": "string", "enum": options}),
        OutputShape::YesNo => json!({"type": "string", "enum": ["yes", "no"]}),
        OutputShape::Lines(n) => {
            json!({"type": "array", "items": {"type": "string"}, "minItems": n, "maxItems": n})
        }
        OutputShape::Integers { count, min, max } => {
            json!({"type": "array", "items": {"type": "integer", "minimum": min, "maximum": max}, "minItems": count, "maxItems": count})
        }
        OutputShape::Json(schema) => return Some(schema.clone()),
    };
    Some(
        json!({"type": "object", "properties": {"value": inner}, "required": ["value"], "additionalProperties": false}),
    )
}

/// An instruction to add to a prompt when the server cannot enforce the shape.
pub fn instruction(shape: &OutputShape) -> Option<String> {
    Some(match shape {
        OutputShape::Text => return None,
        OutputShape::Integer { min, max } => {
            format!("Answer with a single integer from {min} to {max} and nothing else.")
        }
        OutputShape::Choice(o) => format!(
            "Answer with exactly one of: {}. Nothing else.",
            o.join(" | ")
        ),
        OutputShape::YesNo => "Answer with yes or no and nothing else.".into(),
        OutputShape::Lines(n) => {
            format!("Answer with exactly {n} lines, one item per line, and nothing else.")
        }
        OutputShape::Integers { count, min, max } => format!(
            "Answer with a JSON list of exactly {count} integers, each from {min} to {max}, and nothing else."
        ),
        OutputShape::Json(s) => format!("Answer with only a JSON object matching this schema: {s}"),
    })
}

/// Turns a server's `{"value": ...}` answer back into plain text for [`parse`].
pub fn unwrap_json_answer(shape: &OutputShape, text: &str) -> Result<String, String> {
    if matches!(shape, OutputShape::Text | OutputShape::Json(_)) {
        return Ok(text.to_string());
    }
    let v: Value = serde_json::from_str(extract_json(text).unwrap_or(text))
        .map_err(|e| format!("not JSON: {e}"))?;
    let inner = v.get("value").ok_or("no \"value\" field")?;
    if matches!(shape, OutputShape::Integers { .. }) {
        return Ok(inner.to_string());
    }
    Ok(match inner {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x.to_string())
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    })
}

/// The first balanced `{...}` in a text (models sometimes wrap JSON in prose or fences).
fn extract_json(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let mut depth = 0i32;
    let mut in_str = false;
    let mut esc = false;
    for (i, c) in text[start..].char_indices() {
        if in_str {
            match c {
                _ if esc => esc = false,
                '\\' => esc = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..start + i + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Validates an answer against its shape. Lenient where it is safe (case, surrounding space,
/// a number inside a sentence from an unconstrained server), strict on the result.
pub fn parse(shape: &OutputShape, text: &str) -> Result<LlmValue, String> {
    let t = text.trim();
    match shape {
        OutputShape::Text => {
            if t.is_empty() {
                Err("empty answer".into())
            } else {
                Ok(LlmValue::Text(t.to_string()))
            }
        }
        OutputShape::Integer { min, max } => {
            let n = first_integer(t).ok_or_else(|| format!("no integer in {t:?}"))?;
            if n < *min || n > *max {
                return Err(format!("{n} is outside {min}..={max}"));
            }
            Ok(LlmValue::Integer(n))
        }
        OutputShape::Choice(options) => {
            if let Some(i) = options.iter().position(|o| o == t) {
                return Ok(LlmValue::Choice(i, options[i].clone()));
            }
            let lower = t.to_lowercase();
            let lower = lower
                .trim_matches(|c: char| c == '"' || c == '\'' || c == '.' || c == '{' || c == '}');
            if let Some(i) = options.iter().position(|o| o.to_lowercase() == lower) {
                return Ok(LlmValue::Choice(i, options[i].clone()));
            }
            // One option named inside a longer answer, and only one.
            let hits: Vec<usize> = options
                .iter()
                .enumerate()
                .filter(|(_, o)| lower.contains(&o.to_lowercase()))
                .map(|(i, _)| i)
                .collect();
            match hits.as_slice() {
                [i] => Ok(LlmValue::Choice(*i, options[*i].clone())),
                _ => Err(format!("{t:?} is not one of {} options", options.len())),
            }
        }
        OutputShape::YesNo => {
            let l = t.to_lowercase();
            let w = l.trim_matches(|c: char| !c.is_alphanumeric());
            match w.split_whitespace().next() {
                Some("yes") => Ok(LlmValue::Bool(true)),
                Some("no") => Ok(LlmValue::Bool(false)),
                _ => Err(format!("{t:?} is not yes or no")),
            }
        }
        OutputShape::Lines(n) => {
            let lines: Vec<String> = t
                .lines()
                .map(|l| {
                    l.trim()
                        .trim_start_matches(|c: char| {
                            c.is_ascii_digit() || c == '.' || c == ')' || c == '-' || c == '*'
                        })
                        .trim()
                        .to_string()
                })
                .filter(|l| !l.is_empty())
                .collect();
            if lines.len() < *n {
                return Err(format!("{} lines, {n} wanted", lines.len()));
            }
            Ok(LlmValue::Lines(lines.into_iter().take(*n).collect()))
        }
        OutputShape::Integers { count, min, max } => {
            // A JSON list as enforced, or numbers separated by commas, spaces or lines.
            let nums: Vec<i64> = match serde_json::from_str::<Vec<i64>>(t) {
                Ok(v) => v,
                Err(_) => t
                    .trim_matches(|c| c == '[' || c == ']')
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|w| !w.is_empty())
                    .map(|w| {
                        w.trim_matches(|c: char| !c.is_ascii_digit() && c != '-')
                            .parse::<i64>()
                            .map_err(|_| format!("{w:?} is not an integer"))
                    })
                    .collect::<Result<_, _>>()?,
            };
            if nums.len() != *count {
                return Err(format!("{} integers, {count} wanted", nums.len()));
            }
            if let Some(bad) = nums.iter().find(|n| **n < *min || **n > *max) {
                return Err(format!("{bad} is outside {min}..={max}"));
            }
            Ok(LlmValue::Integers(nums))
        }
        OutputShape::Json(schema) => {
            let body = extract_json(t).unwrap_or(t);
            let mut v: Value = serde_json::from_str(body).map_err(|e| format!("not JSON: {e}"))?;
            // Escapes decoded ("\u001b") are text from outside too: cleaned as the raw text was.
            without_controls(&mut v);
            validate_schema(schema, &v, "$")?;
            Ok(LlmValue::Json(v))
        }
    }
}

/// Removes control characters (but newlines and tabs) from every string of a JSON value, keys
/// included.
pub fn without_controls(v: &mut Value) {
    let clean = |s: &str| crate::data::clean_text(s).into_owned();
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(c) = crate::data::clean_text(s) {
                *s = c;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(without_controls),
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (k, mut item) in old {
                without_controls(&mut item);
                map.insert(clean(&k), item);
            }
        }
        _ => {}
    }
}

fn first_integer(t: &str) -> Option<i64> {
    let bytes = t.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let neg = i > 0 && bytes[i - 1] == b'-';
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let n: i64 = t[start..i].parse().ok()?;
            return Some(if neg { -n } else { n });
        }
        i += 1;
    }
    None
}

/// Checks a JSON value against the subset of JSON Schema we generate and accept.
pub fn validate_schema(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(v)
    {
        return Err(format!(
            "{at}: {v} is not one of {}",
            Value::Array(options.clone())
        ));
    }
    let ty = schema.get("type").and_then(Value::as_str);
    match ty {
        Some("object") => {
            let obj = v
                .as_object()
                .ok_or_else(|| format!("{at}: expected an object"))?;
            if let Some(req) = schema.get("required").and_then(Value::as_array) {
                for r in req.iter().filter_map(Value::as_str) {
                    if !obj.contains_key(r) {
                        return Err(format!("{at}: missing field \"{r}\""));
                    }
                }
            }
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, sub) in props {
                    if let Some(x) = obj.get(k) {
                        validate_schema(sub, x, &format!("{at}.{k}"))?;
                    }
                }
                if schema.get("additionalProperties") == Some(&Value::Bool(false))
                    && let Some(extra) = obj.keys().find(|k| !props.contains_key(*k))
                {
                    return Err(format!("{at}: unexpected field \"{extra}\""));
                }
            }
        }
        Some("array") => {
            let arr = v
                .as_array()
                .ok_or_else(|| format!("{at}: expected an array"))?;
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (arr.len() as u64) < min
            {
                return Err(format!("{at}: {} items, at least {min} wanted", arr.len()));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && (arr.len() as u64) > max
            {
                return Err(format!("{at}: {} items, at most {max} wanted", arr.len()));
            }
            if let Some(items) = schema.get("items") {
                for (i, x) in arr.iter().enumerate() {
                    validate_schema(items, x, &format!("{at}[{i}]"))?;
                }
            }
        }
        Some("string") => {
            let s = v
                .as_str()
                .ok_or_else(|| format!("{at}: expected a string"))?;
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && s.chars().count() as u64 > max
            {
                return Err(format!("{at}: longer than {max} characters"));
            }
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && (s.chars().count() as u64) < min
            {
                return Err(format!("{at}: shorter than {min} characters"));
            }
        }
        Some("integer") | Some("number") => {
            let n = v
                .as_f64()
                .ok_or_else(|| format!("{at}: expected a number"))?;
            if ty == Some("integer") && v.as_i64().is_none() {
                return Err(format!("{at}: expected an integer"));
            }
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                && n < min
            {
                return Err(format!("{at}: {n} < minimum {min}"));
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                && n > max
            {
                return Err(format!("{at}: {n} > maximum {max}"));
            }
        }
        Some("boolean") => {
            v.as_bool()
                .ok_or_else(|| format!("{at}: expected true or false"))?;
        }
        _ => {}
    }
    Ok(())
}

/// How a value is made up where no model made it: the scripted backend's answers, the stand-in
/// servers' and the runtime's fail-safes each choose differently, and [`schema_value`] and
/// [`fail_safe`] are the one walk over a shape that they share.
pub trait Chooser: Sized {
    /// The chooser for the `i`th property of an object.
    fn property(&self, i: usize) -> Self;
    /// The chooser for the `i`th item of an array.
    fn item(&self, i: usize) -> Self;
    /// One of `n` options (an enum's), by its index.
    fn option(&self, n: usize) -> usize;
    /// How many items an array of at least `min` (and at most `max`) holds.
    fn count(&self, min: u64, max: Option<u64>) -> u64;
    /// A whole number from `lo` (up to `hi`).
    fn integer(&self, lo: i64, hi: Option<i64>) -> i64;
    /// A yes or no.
    fn boolean(&self) -> bool;
    /// A string for the property `field`, `min` characters or more (at most `max`).
    fn text(&self, field: &str, min: usize, max: Option<usize>) -> String;
}

/// A value that follows `schema` (the subset our shapes use: objects, arrays with item counts,
/// strings with lengths, integers with bounds, enums), as `c` chooses; `field` is the property
/// it is for ("" at the top).
pub fn schema_value<C: Chooser>(schema: &Value, c: &C, field: &str) -> Value {
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.is_empty()
    {
        return options[c.option(options.len()).min(options.len() - 1)].clone();
    }
    let int = |k: &str| schema.get(k).and_then(Value::as_i64);
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut m = serde_json::Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (i, (k, s)) in props.iter().enumerate() {
                    m.insert(k.clone(), schema_value(s, &c.property(i), k));
                }
            }
            Value::Object(m)
        }
        Some("array") => {
            let min = int("minItems").unwrap_or(0).max(0) as u64;
            let max = int("maxItems").map(|m| m.max(0) as u64);
            let items = schema.get("items").unwrap_or(&Value::Null);
            Value::Array(
                (0..c.count(min, max))
                    .map(|i| schema_value(items, &c.item(i as usize), field))
                    .collect(),
            )
        }
        Some("integer") | Some("number") => {
            serde_json::json!(c.integer(int("minimum").unwrap_or(0), int("maximum")))
        }
        Some("boolean") => Value::Bool(c.boolean()),
        Some("string") => {
            let min = int("minLength").unwrap_or(0).max(0) as usize;
            let max = int("maxLength").map(|m| m.max(0) as usize);
            Value::String(c.text(field, min, max))
        }
        _ => Value::Null,
    }
}

/// The fail-safe value of a shape when a request comes back with no answer and its caller gave
/// none: the middle of a range, the first option, no, empty lines, and for JSON nothing (`null`,
/// which every reader of a JSON answer treats as no answer).
pub fn fail_safe(shape: &OutputShape) -> LlmValue {
    match shape {
        OutputShape::Text => LlmValue::Text(String::new()),
        OutputShape::Integer { min, max } => {
            LlmValue::Integer((*min).max((*min + *max) / 2).min(*max))
        }
        OutputShape::Choice(o) => LlmValue::Choice(0, o.first().cloned().unwrap_or_default()),
        OutputShape::YesNo => LlmValue::Bool(false),
        OutputShape::Lines(n) => LlmValue::Lines(vec![String::new(); *n]),
        OutputShape::Integers { count, min, max } => {
            LlmValue::Integers(vec![(*min).max((*min + *max) / 2).min(*max); *count])
        }
        OutputShape::Json(_) => LlmValue::Json(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_in_a_json_answer_do_not_survive_decoding() {
        let shape = OutputShape::Json(
            json!({"type": "object", "properties": {"utterance": {"type": "string"}}, "required": ["utterance"]}),
        );
        let v = parse(&shape, r#"{"utterance": "hi\u001b[2J there\u0007\n"}"#).unwrap();
        assert_eq!(v, LlmValue::Json(json!({"utterance": "hi[2J there\n"})));
    }

    #[test]
    fn json_grammars_allow_no_pretty_printing() {
        let g = grammar(&OutputShape::Json(
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
        ))
        .unwrap()
        .unwrap();
        let space: Vec<&str> = g.lines().filter(|l| l.starts_with("space ::=")).collect();
        assert_eq!(space, vec!["space ::= | \" \""], "{g}");
    }

    #[test]
    fn parses_each_shape() {
        assert_eq!(
            parse(&OutputShape::Integer { min: 1, max: 10 }, " 7"),
            Ok(LlmValue::Integer(7))
        );
        assert_eq!(
            parse(&OutputShape::Integer { min: 1, max: 10 }, "Rating: 4/10"),
            Ok(LlmValue::Integer(4))
        );
        assert!(parse(&OutputShape::Integer { min: 1, max: 10 }, "11").is_err());
        assert!(parse(&OutputShape::Integer { min: 1, max: 10 }, "none").is_err());
        let c = OutputShape::Choice(vec!["kitchen".into(), "bathroom".into()]);
        assert_eq!(
            parse(&c, "kitchen"),
            Ok(LlmValue::Choice(0, "kitchen".into()))
        );
        assert_eq!(
            parse(&c, "{Bathroom}"),
            Ok(LlmValue::Choice(1, "bathroom".into()))
        );
        assert_eq!(
            parse(&c, "I would go to the kitchen."),
            Ok(LlmValue::Choice(0, "kitchen".into()))
        );
        assert!(parse(&c, "garden").is_err());
        assert!(
            parse(&c, "kitchen or bathroom").is_err(),
            "ambiguous answers are rejected"
        );
        assert_eq!(parse(&OutputShape::YesNo, "Yes."), Ok(LlmValue::Bool(true)));
        assert_eq!(parse(&OutputShape::YesNo, "no"), Ok(LlmValue::Bool(false)));
        assert!(parse(&OutputShape::YesNo, "maybe").is_err());
        assert_eq!(
            parse(&OutputShape::Lines(2), "1. a\n2) b\nc"),
            Ok(LlmValue::Lines(vec!["a".into(), "b".into()]))
        );
        assert!(parse(&OutputShape::Lines(3), "a\nb").is_err());
        let ints = OutputShape::Integers {
            count: 3,
            min: 1,
            max: 10,
        };
        assert_eq!(
            parse(&ints, "[3, 10,1]"),
            Ok(LlmValue::Integers(vec![3, 10, 1]))
        );
        assert_eq!(
            parse(&ints, "3\n7\n2"),
            Ok(LlmValue::Integers(vec![3, 7, 2]))
        );
        assert!(parse(&ints, "[3, 10]").is_err());
        assert!(parse(&ints, "[3, 11, 1]").is_err());
        assert!(parse(&ints, "three").is_err());
        assert_eq!(
            unwrap_json_answer(&ints, r#"{"value": [1, 2, 3]}"#).unwrap(),
            "[1,2,3]"
        );
    }

    #[test]
    fn json_schema_subset() {
        let schema = json!({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},
            "tags":{"type":"array","items":{"type":"string"},"maxItems":2}},"required":["name","age"]});
        let s = OutputShape::Json(schema);
        assert!(parse(&s, r#"{"name":"Ann","age":30}"#).is_ok());
        assert!(parse(&s, r#"Sure! ```{"name":"Ann","age":30,"tags":["a"]}```"#).is_ok());
        assert!(parse(&s, r#"{"name":"Ann"}"#).unwrap_err().contains("age"));
        assert!(parse(&s, r#"{"name":"Ann","age":-1}"#).is_err());
        assert!(parse(&s, r#"{"name":"Ann","age":3,"tags":["a","b","c"]}"#).is_err());
        assert!(parse(&s, r#"{"name":"Ann","age":"3"}"#).is_err());
        assert!(parse(&s, "not json").is_err());
    }

    #[test]
    fn wrapped_answers_round_trip() {
        let shape = OutputShape::Integer { min: 1, max: 10 };
        assert_eq!(unwrap_json_answer(&shape, r#"{"value": 6}"#).unwrap(), "6");
        let lines = OutputShape::Lines(2);
        assert_eq!(
            unwrap_json_answer(&lines, r#"{"value": ["a","b"]}"#).unwrap(),
            "a\nb"
        );
        assert!(wrapped_schema(&OutputShape::Text).is_none());
        let s = wrapped_schema(&shape).unwrap();
        assert!(validate_schema(&s, &json!({"value": 3}), "$").is_ok());
        assert!(validate_schema(&s, &json!({"value": 30}), "$").is_err());
    }

    #[test]
    fn grammars_are_generated() {
        let g = grammar(&OutputShape::Choice(vec!["a \"b\"".into(), "c".into()]))
            .unwrap()
            .unwrap();
        assert_eq!(g, "root ::= \"a \\\"b\\\"\" | \"c\"\n");
        let g = grammar(&OutputShape::Integer { min: 1, max: 3 })
            .unwrap()
            .unwrap();
        assert_eq!(g, "root ::= \"1\" | \"2\" | \"3\"\n");
        assert!(grammar(&OutputShape::Text).unwrap().is_none());
        assert!(grammar(&OutputShape::Choice(vec![])).is_err());
        let g = grammar(&OutputShape::Integers {
            count: 2,
            min: 1,
            max: 2,
        })
        .unwrap()
        .unwrap();
        assert_eq!(
            g,
            "root ::= \"[\" num sep num \"]\"\nsep ::= \",\" \" \"?\nnum ::= \"1\" | \"2\"\n"
        );
    }
}
