//! A JSON schema as a GBNF grammar, for the subset of JSON Schema that `shape::validate_schema`
//! checks (objects, arrays, strings with lengths, integers with bounds, numbers, booleans, enums,
//! consts): the language llama.cpp's own converter (`common/json-schema-to-grammar.cpp`) gives
//! for these, written here so the embedded build needs none of llama.cpp's `common` library.
//! Between JSON tokens at most one space (a small model that pretty-prints writes every
//! newline and indent one token at a time, for nothing). Anything outside the subset (`$ref`,
//! `anyOf`, `pattern`, a format) is an error naming where it is, not a looser grammar.

use serde_json::Value;
use std::collections::BTreeMap;

/// The grammar's characters of a JSON string: anything but a quote, a backslash or a control
/// character, or an escape.
const CHAR: &str = r#"[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})"#;

/// Rules for values of any kind (an object's properties beyond those named).
const ANY_VALUE: &[(&str, &str)] = &[
    ("value", "object | array | string | number | boolean | null"),
    (
        "object",
        r#""{" space ( string ":" space value ("," space string ":" space value)* )? space "}""#,
    ),
    (
        "array",
        r#""[" space ( value ("," space value)* )? space "]""#,
    ),
    ("string", r#""\"" char* "\"""#),
    ("char", CHAR),
    (
        "number",
        r#"("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?"#,
    ),
    ("integral-part", "[0] | [1-9] [0-9]{0,15}"),
    ("decimal-part", "[0-9]{1,16}"),
    ("boolean", r#"("true" | "false")"#),
    ("null", r#""null""#),
];

/// Escapes text for a GBNF string literal.
pub fn literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `item` repeated `min..=max` times (`max` None: unbounded), with `sep` between items: the
/// form llama.cpp's converter writes.
fn repetition(item: &str, min: u64, max: Option<u64>, sep: &str) -> String {
    if max == Some(0) {
        return String::new();
    }
    if min == 0 && max == Some(1) {
        return format!("{item}?");
    }
    if sep.is_empty() {
        return match (min, max) {
            (1, None) => format!("{item}+"),
            (0, None) => format!("{item}*"),
            (m, None) => format!("{item}{{{m},}}"),
            (m, Some(n)) => format!("{item}{{{m},{n}}}"),
        };
    }
    let rest = repetition(
        &format!("({sep} {item})"),
        min.saturating_sub(1),
        max.map(|n| n - 1),
        "",
    );
    let result = if rest.is_empty() {
        item.to_string()
    } else {
        format!("{item} {rest}")
    };
    if min == 0 {
        format!("({result})?")
    } else {
        result
    }
}

struct Builder {
    rules: BTreeMap<String, String>,
}

impl Builder {
    fn add(&mut self, name: &str, body: String) -> String {
        self.rules.insert(name.to_string(), body);
        name.to_string()
    }

    fn add_any_value(&mut self) -> String {
        for (n, b) in ANY_VALUE {
            self.rules.insert((*n).to_string(), (*b).to_string());
        }
        "value".into()
    }

    fn char_rule(&mut self) -> String {
        self.add("char", CHAR.into())
    }

    /// The rule for `schema` named `name`; `at` names the place for errors.
    fn visit(&mut self, schema: &Value, name: &str, at: &str) -> Result<String, String> {
        let obj = schema
            .as_object()
            .ok_or_else(|| format!("{at}: a schema must be an object"))?;
        for k in obj.keys() {
            if !matches!(
                k.as_str(),
                "type"
                    | "properties"
                    | "required"
                    | "additionalProperties"
                    | "items"
                    | "minItems"
                    | "maxItems"
                    | "minLength"
                    | "maxLength"
                    | "minimum"
                    | "maximum"
                    | "enum"
                    | "const"
                    | "description"
                    | "title"
            ) {
                return Err(format!("{at}: \"{k}\" is not supported in an output shape"));
            }
        }
        if let Some(c) = obj.get("const") {
            return Ok(self.add(name, literal(&c.to_string())));
        }
        if let Some(options) = obj.get("enum") {
            let options = options
                .as_array()
                .filter(|o| !o.is_empty())
                .ok_or_else(|| format!("{at}: \"enum\" must be a list of at least one value"))?;
            let alts: Vec<String> = options.iter().map(|v| literal(&v.to_string())).collect();
            return Ok(self.add(name, format!("({})", alts.join(" | "))));
        }
        let count = |k: &str| -> Result<Option<u64>, String> {
            match obj.get(k) {
                None => Ok(None),
                Some(v) => v
                    .as_u64()
                    .map(Some)
                    .ok_or_else(|| format!("{at}: \"{k}\" must be a whole number, not {v}")),
            }
        };
        let bound = |k: &str| -> Result<Option<i64>, String> {
            match obj.get(k) {
                None => Ok(None),
                Some(v) => v
                    .as_i64()
                    .map(Some)
                    .ok_or_else(|| format!("{at}: \"{k}\" must be an integer, not {v}")),
            }
        };
        match obj.get("type").and_then(Value::as_str) {
            Some("object") => self.object(obj, name, at),
            Some("array") => {
                let item_schema = obj
                    .get("items")
                    .ok_or_else(|| format!("{at}: an array needs \"items\""))?;
                let item = self.visit(item_schema, &format!("{name}-item"), &format!("{at}[]"))?;
                let (min, max) = (count("minItems")?.unwrap_or(0), count("maxItems")?);
                if max.is_some_and(|m| m < min) {
                    return Err(format!("{at}: maxItems is below minItems"));
                }
                let body = repetition(&item, min, max, r#""," space"#);
                Ok(self.add(name, format!(r#""[" space {body} space "]""#)))
            }
            Some("string") => {
                let (min, max) = (count("minLength")?.unwrap_or(0), count("maxLength")?);
                if max.is_some_and(|m| m < min) {
                    return Err(format!("{at}: maxLength is below minLength"));
                }
                let ch = self.char_rule();
                let body = repetition(&ch, min, max, "");
                Ok(self.add(name, format!(r#""\"" {body} "\"""#)))
            }
            Some("integer") => {
                let (lo, hi) = (bound("minimum")?, bound("maximum")?);
                match (lo, hi) {
                    (Some(lo), Some(hi)) if hi < lo => {
                        Err(format!("{at}: maximum {hi} is below minimum {lo}"))
                    }
                    (Some(lo), Some(hi)) if hi - lo <= 256 => {
                        let alts: Vec<String> =
                            (lo..=hi).map(|i| literal(&i.to_string())).collect();
                        Ok(self.add(name, format!("({})", alts.join(" | "))))
                    }
                    // Digits only; the bounds are checked when the answer is validated.
                    _ => {
                        self.add_any_value();
                        Ok(self.add(name, r#"("-"? integral-part)"#.into()))
                    }
                }
            }
            Some("number") => {
                self.add_any_value();
                Ok(self.add(name, "number".into()))
            }
            Some("boolean") => Ok(self.add(name, r#"("true" | "false")"#.into())),
            Some("null") => Ok(self.add(name, r#""null""#.into())),
            Some(other) => Err(format!("{at}: type \"{other}\" is not supported")),
            None => Err(format!(
                "{at}: a schema needs a \"type\", \"enum\" or \"const\""
            )),
        }
    }

    /// An object: its required properties in order, then the optional ones in order (each may
    /// be left out), then, unless `additionalProperties` is false, more pairs of any value.
    fn object(
        &mut self,
        obj: &serde_json::Map<String, Value>,
        name: &str,
        at: &str,
    ) -> Result<String, String> {
        let empty = serde_json::Map::new();
        let props = match obj.get("properties") {
            None => &empty,
            Some(p) => p
                .as_object()
                .ok_or_else(|| format!("{at}: \"properties\" must be an object"))?,
        };
        let required: Vec<&str> = match obj.get("required") {
            None => Vec::new(),
            Some(r) => r
                .as_array()
                .ok_or_else(|| format!("{at}: \"required\" must be a list"))?
                .iter()
                .map(|k| {
                    k.as_str()
                        .filter(|k| props.contains_key(*k))
                        .ok_or_else(|| format!("{at}: required {k} is not a property"))
                })
                .collect::<Result<_, _>>()?,
        };
        let mut req = Vec::new();
        let mut opt = Vec::new();
        for (k, sub) in props {
            let sub_name = format!("{name}-{}", rule_part(k));
            let value = self.visit(sub, &sub_name, &format!("{at}.{k}"))?;
            let kv = self.add(
                &format!("{sub_name}-kv"),
                format!(
                    r#"{} space ":" space {value}"#,
                    literal(&Value::from(k.as_str()).to_string())
                ),
            );
            if required.contains(&k.as_str()) {
                req.push(kv);
            } else {
                opt.push(kv);
            }
        }
        match obj.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            None | Some(Value::Bool(true)) => {
                let v = self.add_any_value();
                opt.push(self.add(
                    &format!("{name}-additional-kv"),
                    format!(r#"string ":" space {v}"#),
                ));
            }
            Some(_) => {
                return Err(format!(
                    "{at}: \"additionalProperties\" may only be true or false"
                ));
            }
        }
        let mut body = String::from(r#""{" space "#);
        body.push_str(&req.join(r#" "," space "#));
        if !opt.is_empty() {
            // Each optional pair may be left out, in order: `a? b? c?` with commas that only
            // stand between pairs written.
            let comma = if req.is_empty() { "" } else { r#""," space "# };
            // The pairs beyond the named ones (last, if any) may come any number of times.
            let open = obj.get("additionalProperties") != Some(&Value::Bool(false));
            let many = |kv: &String| open && Some(kv) == opt.last();
            let mut alts = Vec::new();
            for i in 0..opt.len() {
                let mut alt = opt[i].clone();
                if many(&opt[i]) {
                    alt.push_str(&format!(r#" ( "," space {} )*"#, opt[i]));
                }
                for later in &opt[i + 1..] {
                    let times = if many(later) { "*" } else { "?" };
                    alt.push_str(&format!(r#" ( "," space {later} ){times}"#));
                }
                alts.push(alt);
            }
            body.push_str(&format!(" ( {comma}( {} ) )?", alts.join(" | ")));
        }
        body.push_str(r#" space "}""#);
        Ok(self.add(name, body))
    }
}

/// A property's name as part of a rule name (letters, digits and dashes).
fn rule_part(k: &str) -> String {
    let s: String = k
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if s.is_empty() { "p".into() } else { s }
}

/// The GBNF grammar (root rule `root`) of a JSON schema in the subset output shapes use.
pub fn grammar(schema: &Value) -> Result<String, String> {
    let mut b = Builder {
        rules: BTreeMap::new(),
    };
    b.visit(schema, "root", "schema")?;
    b.rules.insert("space".into(), r#"| " ""#.into());
    Ok(b.rules
        .iter()
        .map(|(n, body)| format!("{n} ::= {body}\n"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repetition_is_written_as_llama_cpp_writes_it() {
        assert_eq!(repetition("x", 0, Some(1), ""), "x?");
        assert_eq!(repetition("x", 1, None, ""), "x+");
        assert_eq!(repetition("x", 3, Some(60), ""), "x{3,60}");
        assert_eq!(
            repetition("x", 5, Some(8), r#""," space"#),
            r#"x ("," space x){4,7}"#
        );
        assert_eq!(
            repetition("x", 0, None, r#""," space"#),
            r#"(x ("," space x)*)?"#
        );
        assert_eq!(repetition("x", 1, Some(1), r#""," space"#), "x");
    }

    #[test]
    fn an_object_of_required_fields() {
        let g = grammar(&json!({
            "type": "object",
            "properties": {"b": {"type": "integer", "enum": [5, 10]}, "a": {"type": "string", "maxLength": 4}},
            "required": ["b", "a"],
            "additionalProperties": false
        }))
        .unwrap();
        assert!(
            // Properties in the order the schema's map gives (serde_json's: by name), as the
            // text llama.cpp's converter was given.
            g.contains(r#"root ::= "{" space root-a-kv "," space root-b-kv space "}""#),
            "{g}"
        );
        assert!(g.contains(r#"root-b ::= ("5" | "10")"#), "{g}");
        assert!(g.contains(r#"root-a ::= "\"" char{0,4} "\"""#), "{g}");
        assert!(g.contains("space ::= | \" \""), "{g}");
    }

    #[test]
    fn optional_fields_and_open_objects() {
        let g = grammar(&json!({
            "type": "object",
            "properties": {"a": {"type": "boolean"}, "b": {"type": "boolean"}},
            "required": ["a"]
        }))
        .unwrap();
        assert!(g.contains("root-additional-kv ::="), "{g}");
        assert!(g.contains("value ::="), "{g}");
        assert!(
            g.contains(r#"( "," space ( root-b-kv ( "," space root-additional-kv )* | root-additional-kv ( "," space root-additional-kv )* ) )?"#),
            "{g}"
        );
    }

    #[test]
    fn what_is_outside_the_subset_is_named() {
        let e = grammar(
            &json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "a+"}}}),
        )
        .unwrap_err();
        assert!(e.contains("schema.x") && e.contains("pattern"), "{e}");
        let e = grammar(&json!({"type": "integer", "minimum": 5, "maximum": 1})).unwrap_err();
        assert!(e.contains("below"), "{e}");
        let e = grammar(&json!({"type": "array"})).unwrap_err();
        assert!(e.contains("items"), "{e}");
    }
}
