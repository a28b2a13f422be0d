//! What an answer of a shape must say next: the text its grammar leaves no choice about. A
//! line's answer opens with `{`; once the model has put its space or not, `"end_conversation"`
//! follows; a choice among places is whole once its first words name one place. A backend that
//! samples token by token (the embedded llama.cpp) writes such text into the answer as read
//! tokens, several in one decode, instead of sampling them one decode each, and ends an answer
//! the moment it is whole instead of decoding once more for the end-of-text token.
//!
//! Where the grammar allows a space or none, the model chooses: the text forced stops there. A
//! small model decides differently after text laid out otherwise than it writes itself: forcing
//! `{"end_conversation":` where it writes `{ "end_conversation" :` made it end 52 of 56 recorded
//! conversation turns instead of 17; with the spaces left to it, 20 (and 7 of the 32 that
//! `llm_real::forced_text_leaves_the_models_decision_to_end_a_conversation_as_it_was` replays,
//! as many as when it samples every token). Every token of the text is checked against the
//! grammar before it is taken.
//!
//! Shapes are walked as [`crate::llm::schema_grammar`] writes them: an object's properties in
//! the order of its schema's map, a space or none after `{`, `[`, `:` and `,` and before `:`, `}`
//! and `]`; a list of integers ([`OutputShape::Integers`]) only after its commas. An object with
//! optional properties or further pairs, and anything not read here, is left to the model.

use super::types::OutputShape;
use serde_json::{Value, json};

/// What must come next in an answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Next {
    /// The text every answer of the shape that begins with what was written goes on with.
    pub text: String,
    /// Once `text` is written the answer is whole: nothing more may follow.
    pub complete: bool,
}

/// Reads an answer of one shape as it is written (made once per request).
#[derive(Debug, Clone)]
pub enum Forcer {
    /// Nothing is forced (free text, or a shape not read here).
    Free,
    /// One of these texts, verbatim.
    Alternatives(Vec<String>),
    /// Exactly this many lines.
    Lines(usize),
    /// JSON of this schema (`tight`: spaces only after commas, as the integers' grammar has).
    Json(Value, bool),
}

impl Forcer {
    /// The reader of answers of `shape`.
    pub fn for_shape(shape: &OutputShape) -> Forcer {
        match shape {
            OutputShape::Text => Forcer::Free,
            OutputShape::Integer { min, max } if max >= min && max - min <= 256 => {
                Forcer::Alternatives((*min..=*max).map(|i| i.to_string()).collect())
            }
            OutputShape::Integer { .. } => Forcer::Free,
            OutputShape::Choice(options) => Forcer::Alternatives(options.clone()),
            OutputShape::YesNo => Forcer::Alternatives(vec!["yes".into(), "no".into()]),
            OutputShape::Lines(n) => Forcer::Lines(*n),
            OutputShape::Integers { count, min, max } => Forcer::Json(
                json!({
                    "type": "array", "minItems": count, "maxItems": count,
                    "items": {"type": "integer", "minimum": min, "maximum": max}
                }),
                true,
            ),
            OutputShape::Json(schema) => Forcer::Json(schema.clone(), false),
        }
    }

    /// What must follow `written` (the answer so far, as bytes: a token may end inside a
    /// character). Nothing forced when `written` is not a beginning this reader knows.
    pub fn next(&self, written: &[u8]) -> Next {
        match self {
            Forcer::Free => Next::default(),
            Forcer::Alternatives(alts) => {
                let alts: Vec<&[u8]> = alts.iter().map(|a| a.as_bytes()).collect();
                let mut c = Cursor::new(written, false);
                match c.alternatives(&alts) {
                    Ok(()) if c.i == written.len() => Next {
                        text: c.forced.unwrap_or_default(),
                        complete: true,
                    },
                    Err(Stop::Open(text)) => Next {
                        text,
                        complete: false,
                    },
                    _ => Next::default(),
                }
            }
            Forcer::Lines(n) => Next {
                text: String::new(),
                complete: written.iter().filter(|&&b| b == b'\n').count() >= *n,
            },
            Forcer::Json(schema, tight) => {
                let mut c = Cursor::new(written, *tight);
                match c.value(schema) {
                    Ok(()) if c.i == written.len() => Next {
                        text: c.forced.unwrap_or_default(),
                        complete: true,
                    },
                    Err(Stop::Open(text)) => Next {
                        text,
                        complete: false,
                    },
                    _ => Next::default(),
                }
            }
        }
    }
}

/// Why a walk stopped before the value's end.
enum Stop {
    /// The written text ends here: this text is forced, then the model chooses.
    Open(String),
    /// The written text is not a beginning of the shape (or the shape is not read here).
    Bad,
}

/// A walk over the written text. Once the text is used up, `forced` collects what must
/// follow, until a choice is left to the model.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
    forced: Option<String>,
    /// Spaces only after commas.
    tight: bool,
}

/// The length of the prefix all of `alts` share.
fn common_prefix(alts: &[&[u8]]) -> usize {
    let Some(first) = alts.first() else {
        return 0;
    };
    let mut n = first.len();
    for a in &alts[1..] {
        n = n.min(
            a.iter()
                .zip(first.iter())
                .take_while(|(x, y)| x == y)
                .count(),
        );
    }
    n
}

/// Whole characters of `b` as text (a cut inside a character is left out).
fn text_of(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(e) => String::from_utf8_lossy(&b[..e.valid_up_to()]).to_string(),
    }
}

impl<'a> Cursor<'a> {
    fn new(s: &'a [u8], tight: bool) -> Self {
        Cursor {
            s,
            i: 0,
            forced: None,
            tight,
        }
    }

    /// Stops here: what was forced so far, then the model's choice.
    fn open(&mut self) -> Stop {
        Stop::Open(self.forced.take().unwrap_or_default())
    }

    fn at_end(&self) -> bool {
        self.forced.is_some() || self.i == self.s.len()
    }

    /// A literal the grammar requires.
    fn lit(&mut self, t: &str) -> Result<(), Stop> {
        if let Some(f) = self.forced.as_mut() {
            f.push_str(t);
            return Ok(());
        }
        let rest = &self.s[self.i..];
        let tb = t.as_bytes();
        if rest.starts_with(tb) {
            self.i += tb.len();
            Ok(())
        } else if tb.starts_with(rest) {
            let tail = &tb[rest.len()..];
            let text = text_of(tail);
            self.i = self.s.len();
            if text.len() < tail.len() {
                // The text ends inside a character of the literal: no more than its end.
                self.forced = Some(text);
                return Err(self.open());
            }
            self.forced = Some(text);
            Ok(())
        } else {
            Err(Stop::Bad)
        }
    }

    /// A place where the grammar allows one space or none (`after_comma`: the only place a
    /// tight grammar has one): the model chooses, so what is forced stops here.
    fn space(&mut self, after_comma: bool) -> Result<(), Stop> {
        if self.tight && !after_comma {
            return Ok(());
        }
        if self.at_end() {
            return Err(self.open());
        }
        if self.s[self.i] == b' ' {
            self.i += 1;
        }
        Ok(())
    }

    /// Exactly one of `alts`.
    fn alternatives(&mut self, alts: &[&[u8]]) -> Result<(), Stop> {
        if alts.is_empty() {
            return Err(Stop::Bad);
        }
        let rest: &[u8] = if self.forced.is_some() {
            b""
        } else {
            &self.s[self.i..]
        };
        // Those the text ends inside of, and the longest the text holds whole.
        let inside: Vec<&[u8]> = alts
            .iter()
            .copied()
            .filter(|a| a.len() > rest.len() && a.starts_with(rest))
            .collect();
        let whole = alts
            .iter()
            .copied()
            .filter(|a| rest.starts_with(a))
            .max_by_key(|a| a.len());
        if inside.is_empty() {
            let Some(a) = whole else {
                return Err(Stop::Bad);
            };
            if self.forced.is_none() {
                self.i += a.len();
            }
            return Ok(());
        }
        if whole.is_some_and(|a| a.len() == rest.len()) {
            // Whole already, or the start of a longer one: the model says which.
            return Err(self.open());
        }
        let n = common_prefix(&inside);
        let tail = &inside[0][rest.len()..n];
        let text = text_of(tail);
        let done = text.len() == tail.len() && inside.iter().all(|a| a.len() == n);
        self.i = self.s.len();
        self.forced.get_or_insert_with(String::new).push_str(&text);
        if done { Ok(()) } else { Err(self.open()) }
    }

    /// A value of `schema`.
    fn value(&mut self, schema: &Value) -> Result<(), Stop> {
        let obj = schema.as_object().ok_or(Stop::Bad)?;
        let literals = |vs: &[Value]| vs.iter().map(Value::to_string).collect::<Vec<_>>();
        if let Some(c) = obj.get("const") {
            return self.alternatives(&[c.to_string().as_bytes()]);
        }
        if let Some(options) = obj.get("enum") {
            let texts = literals(options.as_array().ok_or(Stop::Bad)?.as_slice());
            let alts: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
            return self.alternatives(&alts);
        }
        let count = |k: &str| obj.get(k).and_then(Value::as_u64);
        match obj.get("type").and_then(Value::as_str) {
            Some("object") => self.object(obj),
            Some("array") => self.array(
                obj.get("items").ok_or(Stop::Bad)?,
                count("minItems").unwrap_or(0),
                count("maxItems"),
            ),
            Some("string") => self.string(count("minLength").unwrap_or(0), count("maxLength")),
            Some("integer") => {
                let (lo, hi) = (
                    obj.get("minimum").and_then(Value::as_i64),
                    obj.get("maximum").and_then(Value::as_i64),
                );
                match (lo, hi) {
                    (Some(lo), Some(hi)) if hi >= lo && hi - lo <= 256 => {
                        let texts: Vec<String> = (lo..=hi).map(|i| i.to_string()).collect();
                        let alts: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
                        self.alternatives(&alts)
                    }
                    _ => self.number(),
                }
            }
            Some("number") => self.number(),
            Some("boolean") => self.alternatives(&[b"true".as_slice(), b"false".as_slice()]),
            Some("null") => self.lit("null"),
            _ => Err(Stop::Bad),
        }
    }

    /// Digits (and a sign, a point, an exponent): the model says where they end.
    fn number(&mut self) -> Result<(), Stop> {
        if self.forced.is_some() {
            return Err(self.open());
        }
        let start = self.i;
        while self.i < self.s.len() && b"-+0123456789.eE".contains(&self.s[self.i]) {
            self.i += 1;
        }
        if self.i == self.s.len() {
            return Err(self.open());
        }
        if self.i == start {
            return Err(Stop::Bad);
        }
        Ok(())
    }

    /// A string of `min..=max` characters (an escape is one).
    fn string(&mut self, min: u64, max: Option<u64>) -> Result<(), Stop> {
        self.lit("\"")?;
        if self.forced.is_some() {
            if max == Some(0) {
                return self.lit("\"");
            }
            return Err(self.open());
        }
        let mut n: u64 = 0;
        loop {
            if self.i == self.s.len() {
                if Some(n) == max {
                    self.forced = Some("\"".into());
                    return Ok(());
                }
                return Err(self.open());
            }
            match self.s[self.i] {
                b'"' => {
                    if n < min {
                        return Err(Stop::Bad);
                    }
                    self.i += 1;
                    return Ok(());
                }
                b'\\' => {
                    let len = if self.s.get(self.i + 1) == Some(&b'u') {
                        6
                    } else {
                        2
                    };
                    if self.i + len > self.s.len() {
                        return Err(Stop::Open(String::new()));
                    }
                    self.i += len;
                    n += 1;
                }
                b => {
                    if b & 0xC0 != 0x80 {
                        n += 1;
                    }
                    self.i += 1;
                    // The text ends inside a character: the model finishes it.
                    if self.i == self.s.len() && std::str::from_utf8(&self.s[..self.i]).is_err() {
                        return Err(Stop::Open(String::new()));
                    }
                }
            }
        }
    }

    /// An object whose every property is required and which has no others: `{"a": 1, "b": 2}`.
    fn object(&mut self, obj: &serde_json::Map<String, Value>) -> Result<(), Stop> {
        let props = obj
            .get("properties")
            .and_then(Value::as_object)
            .ok_or(Stop::Bad)?;
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if props.is_empty()
            || obj.get("additionalProperties") != Some(&Value::Bool(false))
            || props.keys().any(|k| !required.contains(&k.as_str()))
        {
            return Err(Stop::Bad);
        }
        self.lit("{")?;
        self.space(false)?;
        for (n, (k, sub)) in props.iter().enumerate() {
            if n > 0 {
                self.lit(",")?;
                self.space(true)?;
            }
            self.lit(&Value::from(k.as_str()).to_string())?;
            self.space(false)?;
            self.lit(":")?;
            self.space(false)?;
            self.value(sub)?;
        }
        self.space(false)?;
        self.lit("}")
    }

    /// An array of `min..=max` items.
    fn array(&mut self, item: &Value, min: u64, max: Option<u64>) -> Result<(), Stop> {
        self.lit("[")?;
        self.space(false)?;
        if max == Some(0) {
            self.space(false)?;
            return self.lit("]");
        }
        if min == 0 {
            if self.at_end() {
                return Err(self.open());
            }
            if self.s[self.i] == b']' {
                self.i += 1;
                return Ok(());
            }
        }
        let mut count = 0;
        loop {
            self.value(item)?;
            count += 1;
            if Some(count) == max {
                self.space(false)?;
                return self.lit("]");
            }
            if count < min {
                self.lit(",")?;
                self.space(true)?;
                continue;
            }
            if self.at_end() {
                return Err(self.open());
            }
            if self.s[self.i] == b',' {
                self.i += 1;
                self.space(true)?;
                continue;
            }
            self.space(false)?;
            return self.lit("]");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(f: &Forcer, w: &str) -> (String, bool) {
        let n = f.next(w.as_bytes());
        (n.text, n.complete)
    }

    /// A conversation line's shape (as `talk::line_request` asks it, with three topics).
    fn line() -> Forcer {
        Forcer::for_shape(&OutputShape::Json(json!({
            "type": "object",
            "properties": {
                "end_conversation": {"type": "boolean"},
                "topic": {"type": "integer", "minimum": 1, "maximum": 3},
                "utterance": {"type": "string", "minLength": 1, "maxLength": 200}
            },
            "required": ["end_conversation", "topic", "utterance"],
            "additionalProperties": false
        })))
    }

    /// A decomposition's shape (as `day::decompose` asks it).
    fn decomposition() -> Forcer {
        Forcer::for_shape(&OutputShape::Json(json!({
            "type": "object",
            "properties": {
                "subtasks": {
                    "type": "array", "minItems": 2, "maxItems": 8,
                    "items": {"type": "string", "minLength": 3, "maxLength": 40}
                },
                "subtasks_minutes": {
                    "type": "array", "minItems": 2, "maxItems": 8,
                    "items": {"type": "integer", "enum": [5, 10, 15]}
                }
            },
            "required": ["subtasks", "subtasks_minutes"],
            "additionalProperties": false
        })))
    }

    /// Writes `answer` as a model would beside the reader: a character at a time where nothing
    /// is forced, the forced text where there is some (which must be the answer's own). Returns
    /// how many characters were forced; the answer must be whole exactly at its end.
    fn write(f: &Forcer, answer: &str) -> usize {
        let mut written = String::new();
        let mut forced = 0;
        loop {
            let n = f.next(written.as_bytes());
            assert!(
                answer[written.len()..].starts_with(&n.text),
                "{n:?} forced after {written:?}, not the answer's {answer:?}"
            );
            written.push_str(&n.text);
            forced += n.text.len();
            if n.complete {
                assert_eq!(written, answer, "whole before its end");
                return forced;
            }
            let c = answer[written.len()..]
                .chars()
                .next()
                .expect("whole at its end");
            written.push(c);
        }
    }

    #[test]
    fn a_lines_keys_are_forced_between_the_spaces_the_model_chooses() {
        let f = line();
        assert_eq!(next(&f, ""), ("{".into(), false));
        assert_eq!(next(&f, "{"), (String::new(), false));
        assert_eq!(next(&f, "{ "), ("\"end_conversation\"".into(), false));
        assert_eq!(next(&f, "{ \"end_"), ("conversation\"".into(), false));
        assert_eq!(next(&f, "{\"end_conversation\" :"), (String::new(), false));
        assert_eq!(
            next(&f, "{\"end_conversation\": f"),
            ("alse,".into(), false)
        );
        assert_eq!(
            next(&f, "{\"end_conversation\": false, "),
            ("\"topic\"".into(), false)
        );
        // A topic of 1 to 3 is whole at one digit.
        assert_eq!(
            next(&f, "{\"end_conversation\": false, \"topic\": 2"),
            (",".into(), false)
        );
        assert_eq!(
            next(
                &f,
                "{\"end_conversation\": false, \"topic\": 2, \"utterance\": \"Hi \\\"you"
            ),
            (String::new(), false)
        );
        // After the string a space may come before the brace: the model writes the brace.
        assert_eq!(
            next(
                &f,
                "{\"end_conversation\": false, \"topic\": 2, \"utterance\": \"Hi\""
            ),
            (String::new(), false)
        );
        assert_eq!(
            next(
                &f,
                "{\"end_conversation\": false, \"topic\": 2, \"utterance\": \"Hi\" }"
            ),
            (String::new(), true)
        );
        // Not a beginning of the shape: nothing forced.
        assert_eq!(next(&f, "{\"topic\": 2"), (String::new(), false));
        assert_eq!(
            next(
                &f,
                "{\"end_conversation\": false, \"topic\": 2, \"utterance\": \"Hi\"} x"
            ),
            (String::new(), false)
        );
    }

    #[test]
    fn answers_in_any_spacing_are_written_with_only_their_own_text_forced() {
        let f = line();
        let spaced = "{ \"end_conversation\" : true, \"topic\" : 3, \"utterance\" : \"Bye.\" }";
        let tight = "{\"end_conversation\":true,\"topic\":3,\"utterance\":\"Bye.\"}";
        // "{", the three keys (less their opening quote where no space came before it), "rue,"
        // and the other comma; where the model put a space, the key's opening quote, the colons,
        // the string's opening quote and the closing brace are forced too.
        assert_eq!(write(&f, tight), 1 + 17 + 4 + 6 + 1 + 10);
        assert_eq!(write(&f, spaced), 1 + 18 + 4 + 7 + 1 + 11 + 3 + 1 + 1);
        let d = decomposition();
        assert!(
            write(
                &d,
                "{ \"subtasks\": [ \"wake up\", \"eat\" ], \"subtasks_minutes\": [ 10, 5 ] }"
            ) >= 30
        );
        assert!(
            write(
                &d,
                "{\"subtasks\":[\"wake up\",\"eat\",\"nap\"],\"subtasks_minutes\":[15,5,10]}"
            ) >= 30
        );
        let ints = Forcer::for_shape(&OutputShape::Integers {
            count: 3,
            min: 1,
            max: 10,
        });
        write(&ints, "[4, 10, 9]");
        write(&ints, "[4,1,9]");
        let choice = Forcer::for_shape(&OutputShape::Choice(vec![
            "Hobbs Cafe".into(),
            "Home".into(),
        ]));
        // "Ho", which both options open with, then all but the "b" that picks one.
        assert_eq!(write(&choice, "Hobbs Cafe"), 9);
    }

    #[test]
    fn a_choice_is_whole_once_one_option_is_left_and_numbers_wait_for_their_last_digit() {
        let f = Forcer::for_shape(&OutputShape::Choice(vec![
            "Hobbs Cafe".into(),
            "Oak Hill College".into(),
            "Oak Hill College library".into(),
            "The Rose and Crown Pub".into(),
        ]));
        assert_eq!(next(&f, ""), (String::new(), false));
        assert_eq!(next(&f, "H"), ("obbs Cafe".into(), true));
        assert_eq!(next(&f, "Oak"), (" Hill College".into(), false));
        assert_eq!(next(&f, "Oak Hill College"), (String::new(), false));
        assert_eq!(next(&f, "Oak Hill College l"), ("ibrary".into(), true));
        assert_eq!(next(&f, "Pub"), (String::new(), false));
        let n = Forcer::for_shape(&OutputShape::Integer { min: 1, max: 10 });
        assert_eq!(next(&n, "1"), (String::new(), false));
        assert_eq!(next(&n, "10"), (String::new(), true));
        assert_eq!(next(&n, "7"), (String::new(), true));
        let yn = Forcer::for_shape(&OutputShape::YesNo);
        assert_eq!(next(&yn, "y"), ("es".into(), true));
        let lines = Forcer::for_shape(&OutputShape::Lines(2));
        assert_eq!(next(&lines, "a\n"), (String::new(), false));
        assert_eq!(next(&lines, "a\nb\n"), (String::new(), true));
    }

    #[test]
    fn lists_force_their_separators_until_their_least_and_close_at_their_most() {
        let f = Forcer::for_shape(&OutputShape::Integers {
            count: 3,
            min: 1,
            max: 10,
        });
        assert_eq!(next(&f, ""), ("[".into(), false));
        assert_eq!(next(&f, "[4"), (",".into(), false));
        assert_eq!(next(&f, "[4,"), (String::new(), false));
        assert_eq!(next(&f, "[4, 1"), (String::new(), false));
        assert_eq!(next(&f, "[4, 10"), (",".into(), false));
        // The integers' grammar has no space before the bracket.
        assert_eq!(next(&f, "[4, 10, 9"), ("]".into(), true));
        let d = decomposition();
        assert_eq!(next(&d, ""), ("{".into(), false));
        assert_eq!(next(&d, "{"), (String::new(), false));
        assert_eq!(next(&d, "{\"subtasks\": [\"wake up\""), (",".into(), false));
        assert_eq!(
            next(&d, "{\"subtasks\": [\"wake up\", "),
            ("\"".into(), false)
        );
        assert_eq!(
            next(&d, "{\"subtasks\": [\"wake up\", \"eat\""),
            (String::new(), false)
        );
        assert_eq!(
            next(&d, "{\"subtasks\": [\"wake up\", \"eat\"]"),
            (",".into(), false)
        );
        assert_eq!(
            next(&d, "{\"subtasks\": [\"wake up\", \"eat\"], "),
            ("\"subtasks_minutes\"".into(), false)
        );
        assert_eq!(
            next(
                &d,
                "{\"subtasks\": [\"wake up\", \"eat\"], \"subtasks_minutes\": [1"
            ),
            (String::new(), false)
        );
        assert_eq!(
            next(
                &d,
                "{\"subtasks\": [\"wake up\", \"eat\"], \"subtasks_minutes\": [10, 5]}"
            ),
            (String::new(), true)
        );
    }

    #[test]
    fn open_objects_and_free_text_force_nothing() {
        let open = Forcer::for_shape(&OutputShape::Json(
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
        ));
        assert_eq!(next(&open, ""), (String::new(), false));
        assert_eq!(
            next(&Forcer::for_shape(&OutputShape::Text), "x"),
            (String::new(), false)
        );
        let capped = Forcer::for_shape(&OutputShape::Json(json!({
            "type": "object", "additionalProperties": false, "required": ["s"],
            "properties": {"s": {"type": "string", "maxLength": 2}}
        })));
        assert_eq!(next(&capped, "{\"s\": \"ab"), ("\"".into(), false));
        assert_eq!(next(&capped, "{\"s\": \"a"), (String::new(), false));
    }
}
