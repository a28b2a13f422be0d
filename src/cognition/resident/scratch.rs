//! Short-term state (the original's scratch), per resident: the reflection counter and the
//! cool-downs that keep a resident from starting the same conversation or reaction again at
//! once. Settings (vision radius, attention bandwidth, retention, recency decay) are not copied
//! here: every system reads them from the [`Cognition`](crate::cognition::config::Cognition) config in force.
//! Whom a resident is talking with is [`Talking`](crate::agent::conversation::Talking).

use crate::agent::Resident;
use crate::cognition::config::CognitionConfig;
use crate::memory::reflect::ReflectionTrigger;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};

/// A resident's short-term state.
#[derive(Component, Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scratch {
    /// Counts importance down to the next reflection.
    pub reflection: ReflectionTrigger,
    /// Person → until when a new conversation with them is not started (after a talk).
    #[serde(default)]
    pub chat_cooldown: std::collections::BTreeMap<String, GameTime>,
    /// Person → until when a sighting of them is not considered again.
    #[serde(default)]
    pub react_cooldown: std::collections::BTreeMap<String, GameTime>,
    /// Activities this resident refined before (as planned, compared without case) with the
    /// subtasks the model gave them, the most recent last, at most [`KEPT_SUBTASKS`]: an
    /// activity that comes again is refined the same way without asking (as Affordable
    /// Generative Agents reused plans).
    #[serde(default)]
    pub subtasks: Vec<(String, Vec<(String, u32)>)>,
    /// What each step of those activities looked like where it was done (the arena's address
    /// and the step's words → the object used, the emoji, the object's state), the most recent
    /// last, at most [`KEPT_DETAILS`]: a step done again in the same place takes them without
    /// asking.
    #[serde(default)]
    pub details: Vec<KeptDetails>,
    /// Activities this resident placed before (as planned, compared without case) with the
    /// arena the model chose for them (`world:sector:arena`), the most recent last, at most
    /// [`KEPT_PLACES`]: an activity that comes again goes to the same place without asking,
    /// where that place is still among those it could be offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub places: Vec<(String, String)>,
    /// Person → what this resident knows of them, in a few words the model wrote at the end
    /// of their last conversation (from what it knew before and what was said). A line of a
    /// conversation with them reads it, instead of a relationship worked out again from
    /// retrieved memories at every talk. The model's words only: where it gave none that held
    /// up, what was known before stays.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub acquaintances: std::collections::BTreeMap<String, String>,
    /// Activities' words (as planned, compared without case) with their embedding, packed, the
    /// most recent last, at most [`KEPT_VECTORS`] (`cognition.reuse_likeness`): an activity
    /// whose words differ from those kept is refined or placed as a kept one whose embedding is
    /// close enough. An empty vector: its embedding failed (it is like nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vectors: Vec<(String, PackedVector)>,
}

/// An embedding kept small: each component scaled to the largest and rounded to a byte, the
/// bytes in base64 (384 dimensions take 512 characters in a save). Likeness is computed on the
/// bytes, so a town compares the same numbers before and after it is saved and loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PackedVector(String);

impl PackedVector {
    /// `v` packed (nothing for an empty or all-zero vector).
    pub fn pack(v: &[f32]) -> Self {
        use base64::Engine;
        let most = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        if most <= 0.0 || !most.is_finite() {
            return Self::default();
        }
        let bytes: Vec<u8> = v
            .iter()
            .map(|x| ((x / most * 127.0).round().clamp(-127.0, 127.0) as i8) as u8)
            .collect();
        Self(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// The components as bytes (none when empty or not base64: like nothing).
    fn ints(&self) -> Vec<i8> {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(&self.0)
            .map(|b| b.into_iter().map(|x| x as i8).collect())
            .unwrap_or_default()
    }

    /// Cosine likeness of two packed vectors (0 when either is empty or they differ in length).
    pub fn likeness(&self, other: &Self) -> f32 {
        let (a, b) = (self.ints(), other.ints());
        if a.is_empty() || a.len() != b.len() {
            return 0.0;
        }
        let (mut ab, mut aa, mut bb) = (0i64, 0i64, 0i64);
        for (x, y) in a.iter().zip(&b) {
            let (x, y) = (*x as i64, *y as i64);
            ab += x * y;
            aa += x * x;
            bb += y * y;
        }
        if aa == 0 || bb == 0 {
            return 0.0;
        }
        (ab as f64 / ((aa as f64).sqrt() * (bb as f64).sqrt())) as f32
    }

    /// Whether it holds no vector (the embedding failed).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What the activities kept hold for new words, by likeness.
#[derive(Debug, Clone, PartialEq)]
pub enum Alike<T> {
    /// The new words have no embedding yet: it must be asked before they can be compared.
    NoVector,
    /// The closest kept activity at or over the threshold, with what is kept for it.
    Found(T),
    /// None close enough.
    Nothing,
}

/// How a step of an activity looked where it was done ([`Scratch::details`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptDetails {
    /// The arena's address (`world:sector:arena`).
    pub arena: String,
    /// The step, as planned.
    pub step: String,
    /// The object used (one of the arena's).
    pub object: String,
    /// The emoji shown.
    pub emoji: String,
    /// What the object did meanwhile (may be empty).
    pub state: String,
}

/// Most steps whose details a resident keeps for reuse.
pub const KEPT_DETAILS: usize = 96;

/// Most activities whose subtasks a resident keeps for reuse.
pub const KEPT_SUBTASKS: usize = 48;

/// Most activities whose place a resident keeps for reuse.
pub const KEPT_PLACES: usize = 48;

/// Most activities whose embedding a resident keeps (one for each activity it may keep
/// subtasks or a place for).
pub const KEPT_VECTORS: usize = KEPT_SUBTASKS + KEPT_PLACES;

/// The words an activity's subtasks are found by: two descriptions with the same key are the
/// same activity for [`Scratch::subtasks_of`] (trimmed, without case).
pub fn subtasks_key(activity: &str) -> String {
    activity.trim().to_ascii_lowercase()
}

/// The longest note a resident keeps of another, in characters (the model is asked for one or
/// two sentences; a save's note longer than this is cut to it when read into a prompt).
pub const NOTE_MAX_CHARS: usize = 200;

impl Scratch {
    /// What this resident knows of `person` (the note of their last conversation), if any.
    pub fn note_of(&self, person: &str) -> Option<&str> {
        let n = self.acquaintances.get(person)?;
        Some(match n.char_indices().nth(NOTE_MAX_CHARS) {
            Some((i, _)) => &n[..i],
            None => n,
        })
    }

    /// The subtasks this resident gave `activity` before, if it keeps them.
    pub fn subtasks_of(&self, activity: &str) -> Option<&[(String, u32)]> {
        kept_for(&self.subtasks, activity).map(Vec::as_slice)
    }

    /// Keeps `tasks` as the subtasks of `activity` (replacing what it had), the oldest
    /// forgotten beyond [`KEPT_SUBTASKS`].
    pub fn keep_subtasks(&mut self, activity: &str, tasks: Vec<(String, u32)>) {
        keep_for(&mut self.subtasks, activity, tasks, KEPT_SUBTASKS);
    }

    /// The arena this resident's model chose for `activity` before, if it keeps it.
    pub fn place_of(&self, activity: &str) -> Option<&str> {
        kept_for(&self.places, activity).map(String::as_str)
    }

    /// Keeps `arena` as the place of `activity` (replacing what it had), the oldest forgotten
    /// beyond [`KEPT_PLACES`].
    pub fn keep_place(&mut self, activity: &str, arena: &str) {
        keep_for(&mut self.places, activity, arena.to_string(), KEPT_PLACES);
    }

    /// The embedding of `activity`'s words, if it keeps one.
    pub fn vector_of(&self, activity: &str) -> Option<&PackedVector> {
        kept_for(&self.vectors, activity)
    }

    /// Keeps `v` as the embedding of `activity`'s words, the oldest forgotten beyond
    /// [`KEPT_VECTORS`].
    pub fn keep_vector(&mut self, activity: &str, v: PackedVector) {
        keep_for(&mut self.vectors, activity, v, KEPT_VECTORS);
    }

    /// Those of `kept` (activity → what) whose words' embedding is at least `threshold` like
    /// `activity`'s, the closest first (ties: the most recently kept first); [`Alike::NoVector`]
    /// when `activity` has no embedding kept.
    fn alike<'a, T>(
        &self,
        kept: &'a [(String, T)],
        activity: &str,
        threshold: f32,
    ) -> Alike<Vec<(&'a str, &'a T)>> {
        let Some(mine) = self.vector_of(activity) else {
            return Alike::NoVector;
        };
        let mut found: Vec<(f32, usize, &str, &T)> = kept
            .iter()
            .enumerate()
            .filter_map(|(i, (words, what))| {
                let l = mine.likeness(self.vector_of(words)?);
                (l >= threshold).then_some((l, i, words.as_str(), what))
            })
            .collect();
        if found.is_empty() {
            return Alike::Nothing;
        }
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        Alike::Found(found.into_iter().map(|(_, _, w, t)| (w, t)).collect())
    }

    /// The subtasks of the kept activity most like `activity` (its words' embedding at least
    /// `threshold` like theirs), with its words.
    pub fn alike_subtasks(
        &self,
        activity: &str,
        threshold: f32,
    ) -> Alike<(&str, &[(String, u32)])> {
        match self.alike(&self.subtasks, activity, threshold) {
            Alike::NoVector => Alike::NoVector,
            Alike::Nothing => Alike::Nothing,
            Alike::Found(f) => Alike::Found((f[0].0, f[0].1.as_slice())),
        }
    }

    /// The arenas of the kept activities like `activity` (at least `threshold`), the closest
    /// first, each with its activity's words.
    pub fn alike_places(&self, activity: &str, threshold: f32) -> Alike<Vec<(&str, &str)>> {
        match self.alike(&self.places, activity, threshold) {
            Alike::NoVector => Alike::NoVector,
            Alike::Nothing => Alike::Nothing,
            Alike::Found(f) => Alike::Found(f.into_iter().map(|(w, a)| (w, a.as_str())).collect()),
        }
    }

    /// How `step` looked when this resident did it in `arena` before, if it keeps that.
    pub fn details_of(&self, arena: &str, step: &str) -> Option<&KeptDetails> {
        let s = step.trim();
        self.details
            .iter()
            .rev()
            .find(|d| d.arena == arena && d.step.eq_ignore_ascii_case(s))
    }

    /// Keeps how a step looked (replacing what it had for the same place and words), the
    /// oldest forgotten beyond [`KEPT_DETAILS`].
    pub fn keep_details(&mut self, mut d: KeptDetails) {
        d.step = d.step.trim().to_string();
        self.details
            .retain(|k| !(k.arena == d.arena && k.step.eq_ignore_ascii_case(&d.step)));
        self.details.push(d);
        let over = self.details.len().saturating_sub(KEPT_DETAILS);
        self.details.drain(..over);
    }
}

/// What is kept for `activity` in a list of (activity, what) (the words trimmed, without case).
fn kept_for<'a, T>(list: &'a [(String, T)], activity: &str) -> Option<&'a T> {
    let a = activity.trim();
    list.iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(a))
        .map(|(_, t)| t)
}

/// Keeps `what` for `activity` (replacing what it had), the oldest forgotten beyond `most`.
fn keep_for<T>(list: &mut Vec<(String, T)>, activity: &str, what: T, most: usize) {
    let a = activity.trim();
    list.retain(|(k, _)| !k.eq_ignore_ascii_case(a));
    list.push((a.to_string(), what));
    let over = list.len().saturating_sub(most);
    list.drain(..over);
}

impl Scratch {
    /// A fresh scratch whose reflection triggers at `reflection_threshold` summed importance.
    pub fn new(reflection_threshold: u32) -> Self {
        Self {
            reflection: ReflectionTrigger::new(reflection_threshold),
            chat_cooldown: Default::default(),
            react_cooldown: Default::default(),
            subtasks: Vec::new(),
            details: Vec::new(),
            places: Vec::new(),
            acquaintances: Default::default(),
            vectors: Vec::new(),
        }
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new(CognitionConfig::default().reflection_threshold)
    }
}

/// Every resident has a scratch (spawning gives it the configured threshold).
pub(crate) fn plugin(app: &mut App) {
    app.register_required_components::<Resident, Scratch>();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtasks_are_found_without_case_replaced_when_given_again_and_the_oldest_forgotten() {
        let mut s = Scratch::default();
        let t = |x: &str| vec![(x.to_string(), 10)];
        s.keep_subtasks("Painting in the studio", t("mix paints"));
        assert_eq!(
            s.subtasks_of(" painting in the studio"),
            Some(&t("mix paints")[..])
        );
        s.keep_subtasks("painting in the studio", t("clean brushes"));
        assert_eq!(s.subtasks.len(), 1);
        assert_eq!(
            s.subtasks_of("Painting in the studio"),
            Some(&t("clean brushes")[..])
        );
        for i in 0..KEPT_SUBTASKS {
            s.keep_subtasks(&format!("activity {i}"), t("step"));
        }
        assert_eq!(s.subtasks.len(), KEPT_SUBTASKS);
        assert_eq!(
            s.subtasks_of("painting in the studio"),
            None,
            "the oldest went first"
        );
        assert!(s.subtasks_of("activity 0").is_some());
    }

    #[test]
    fn places_are_found_without_case_replaced_when_chosen_again_and_the_oldest_forgotten() {
        let mut s = Scratch::default();
        assert_eq!(s.place_of("eating lunch"), None);
        s.keep_place("Eating lunch ", "w:cafe:seating");
        assert_eq!(s.place_of("eating LUNCH"), Some("w:cafe:seating"));
        s.keep_place("eating lunch", "w:home:kitchen");
        assert_eq!(s.place_of("Eating lunch"), Some("w:home:kitchen"));
        assert_eq!(s.places.len(), 1);
        for i in 0..KEPT_PLACES {
            s.keep_place(&format!("activity {i}"), "w:park:garden");
        }
        assert_eq!(s.places.len(), KEPT_PLACES);
        assert_eq!(s.place_of("eating lunch"), None, "the oldest forgotten");
    }

    #[test]
    fn packed_vectors_keep_their_likeness_and_an_empty_one_is_like_nothing() {
        let a = [0.6f32, -0.8, 0.0, 0.1];
        let b = [0.5f32, -0.7, 0.2, 0.1];
        let exact = {
            let dot: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            dot / (n(&a) * n(&b))
        };
        let (pa, pb) = (PackedVector::pack(&a), PackedVector::pack(&b));
        assert!(
            (pa.likeness(&pb) - exact).abs() < 0.01,
            "{} against {exact}",
            pa.likeness(&pb)
        );
        assert!((pa.likeness(&pa) - 1.0).abs() < 1e-6);
        // Scale does not matter, and a save's text reads back the same.
        assert_eq!(PackedVector::pack(&a.map(|x| x * 3.0)), pa);
        let text = ron::to_string(&pa).unwrap();
        assert_eq!(ron::from_str::<PackedVector>(&text).unwrap(), pa);
        let none = PackedVector::pack(&[0.0, 0.0]);
        assert!(none.is_empty());
        assert_eq!(none.likeness(&none), 0.0);
        assert_eq!(
            pa.likeness(&PackedVector::pack(&[1.0, 0.0])),
            0.0,
            "another length"
        );
        assert_eq!(PackedVector("not base64!".into()).likeness(&pa), 0.0);
    }

    #[test]
    fn kept_activities_are_found_by_the_likeness_of_their_words_the_closest_first() {
        let mut s = Scratch::default();
        let t = |x: &str| vec![(x.to_string(), 10)];
        s.keep_subtasks("painting in the studio", t("mix paints"));
        s.keep_subtasks("eating lunch", t("eat"));
        s.keep_place("painting in the studio", "w:studio:easel room");
        s.keep_place("painting at home", "w:home:living room");
        s.keep_vector(
            "painting in the studio",
            PackedVector::pack(&[1.0, 0.1, 0.0]),
        );
        s.keep_vector("painting at home", PackedVector::pack(&[1.0, 0.3, 0.0]));
        s.keep_vector("eating lunch", PackedVector::pack(&[0.0, 0.0, 1.0]));
        assert_eq!(
            s.alike_subtasks("Painting in my studio", 0.9),
            Alike::NoVector
        );
        s.keep_vector(
            "Painting in my studio",
            PackedVector::pack(&[1.0, 0.12, 0.0]),
        );
        assert_eq!(
            s.alike_subtasks("painting in my studio", 0.9),
            Alike::Found(("painting in the studio", &t("mix paints")[..]))
        );
        assert_eq!(
            s.alike_places("painting in my studio", 0.9),
            Alike::Found(vec![
                ("painting in the studio", "w:studio:easel room"),
                ("painting at home", "w:home:living room")
            ]),
            "the closest first"
        );
        assert_eq!(
            s.alike_subtasks("painting in my studio", 0.99999),
            Alike::Nothing
        );
        // A failed embedding is like nothing.
        s.keep_vector("gardening", PackedVector::default());
        assert_eq!(s.alike_places("gardening", 0.1), Alike::Nothing);
        for i in 0..KEPT_VECTORS {
            s.keep_vector(&format!("activity {i}"), PackedVector::pack(&[1.0]));
        }
        assert_eq!(s.vectors.len(), KEPT_VECTORS);
        assert!(
            s.vector_of("eating lunch").is_none(),
            "the oldest forgotten"
        );
    }

    #[test]
    fn a_steps_details_are_found_by_place_and_words_replaced_and_the_oldest_forgotten() {
        let mut s = Scratch::default();
        let d = |arena: &str, step: &str, object: &str| KeptDetails {
            arena: arena.into(),
            step: step.into(),
            object: object.into(),
            emoji: "🍳".into(),
            state: "heating a pan".into(),
        };
        s.keep_details(d("w:home:kitchen", "Frying eggs ", "stove"));
        assert_eq!(
            s.details_of("w:home:kitchen", "frying eggs")
                .map(|k| k.object.as_str()),
            Some("stove")
        );
        assert!(
            s.details_of("w:cafe:kitchen", "frying eggs").is_none(),
            "another place"
        );
        s.keep_details(d("w:home:kitchen", "frying eggs", "pan"));
        assert_eq!(s.details.len(), 1);
        assert_eq!(
            s.details_of("w:home:kitchen", "Frying eggs")
                .unwrap()
                .object,
            "pan"
        );
        for i in 0..KEPT_DETAILS {
            s.keep_details(d("w:home:kitchen", &format!("step {i}"), "sink"));
        }
        assert_eq!(s.details.len(), KEPT_DETAILS);
        assert!(
            s.details_of("w:home:kitchen", "frying eggs").is_none(),
            "the oldest went first"
        );
    }
}
