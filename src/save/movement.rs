//! The movement log: for every step, only what changed for each person (tile, emoji, action and
//! its address, the line being said) and for each object's state. A save writes it as JSON lines
//! (`movement.jsonl`, one step per line) and `simulacra replay` plays it back without the model.

use crate::agent::conversation::Speech;
use crate::agent::{CurrentAction, GridPos, Identity};
use crate::sim::clock::SimClock;
use crate::sim::objects_state::ObjectStates;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How one person looks at the end of a step.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Look {
    /// Tile (x, y).
    pub tile: (i32, i32),
    /// The action's emoji.
    pub emoji: String,
    /// The action.
    pub action: String,
    /// What they are saying (empty: nothing).
    pub say: String,
    /// Where the action takes place (its address; empty: none).
    #[serde(default)]
    pub at: String,
}

/// How one person looks now, borrowed from the world (see [`Look`]).
#[derive(Debug, Clone, Copy)]
pub struct LookRef<'a> {
    /// Tile (x, y).
    pub tile: (i32, i32),
    /// The action's emoji.
    pub emoji: &'a str,
    /// The action.
    pub action: &'a str,
    /// What they are saying (empty: nothing).
    pub say: &'a str,
    /// Where the action takes place (empty: none).
    pub at: &'a str,
}

impl LookRef<'_> {
    /// The look, owned.
    pub fn owned(&self) -> Look {
        Look {
            tile: self.tile,
            emoji: self.emoji.to_string(),
            action: self.action.to_string(),
            say: self.say.to_string(),
            at: self.at.to_string(),
        }
    }
}

/// What changed for one person in a step (absent fields did not change).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Change {
    /// Who.
    pub who: String,
    /// New tile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile: Option<(i32, i32)>,
    /// New emoji.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
    /// New action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// New line said ("" when they stopped speaking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub say: Option<String>,
    /// New address of the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// An object whose state changed in a step: its address and the new state ("" when idle again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectChange {
    /// The object's address.
    pub at: String,
    /// Its state now ("" for idle).
    pub state: String,
}

/// The changes of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The step.
    pub step: u64,
    /// Game time when it began.
    pub time: GameTime,
    /// What changed for people.
    pub changes: Vec<Change>,
    /// Objects whose state changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ObjectChange>,
}

/// How the town looked at some step: every person, and every object not idle.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scene {
    /// Person → look.
    pub people: BTreeMap<String, Look>,
    /// Object address → state.
    pub objects: BTreeMap<String, String>,
}

impl Scene {
    /// Applies one frame.
    pub fn apply(&mut self, f: &Frame) {
        for c in &f.changes {
            c.apply(self.people.entry(c.who.clone()).or_default());
        }
        for o in &f.objects {
            if o.state.is_empty() {
                self.objects.remove(&o.at);
            } else {
                self.objects.insert(o.at.clone(), o.state.clone());
            }
        }
    }
}

/// Every step's changes since the simulation began (kept across saves and loads).
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct MovementLog {
    /// Frames with at least one change, in order.
    pub frames: Vec<Frame>,
    /// How the town looked after the last frame.
    pub last: Scene,
}

impl Change {
    /// Applies to a look.
    pub fn apply(&self, look: &mut Look) {
        if let Some(t) = self.tile {
            look.tile = t;
        }
        if let Some(e) = &self.emoji {
            look.emoji.clone_from(e);
        }
        if let Some(a) = &self.action {
            look.action.clone_from(a);
        }
        if let Some(s) = &self.say {
            look.say.clone_from(s);
        }
        if let Some(a) = &self.at {
            look.at.clone_from(a);
        }
    }
}

impl MovementLog {
    /// A log read back from frames (the looks rebuilt by playing them).
    pub fn from_frames(frames: Vec<Frame>) -> Self {
        let mut last = Scene::default();
        for f in &frames {
            last.apply(f);
        }
        Self { frames, last }
    }

    /// Records how everyone and every object look now, keeping what changed. `objects` is every
    /// object's (address, state) in address order. Only what changed is copied: in a town of a
    /// thousand almost nobody changes in a step, and copying every look was a sixteenth of it.
    pub fn record<'a>(
        &mut self,
        step: u64,
        time: GameTime,
        now: impl IntoIterator<Item = (&'a str, LookRef<'a>)>,
        objects: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        self.record_changed(step, time, now, Some(objects));
    }

    /// [`record`](Self::record) given only the people who may have changed (those left out
    /// look as they did) and the objects' states only when they may have changed (`None`: as
    /// they were).
    pub fn record_changed<'a, O: IntoIterator<Item = (&'a str, &'a str)>>(
        &mut self,
        step: u64,
        time: GameTime,
        now: impl IntoIterator<Item = (&'a str, LookRef<'a>)>,
        objects: Option<O>,
    ) {
        let mut changes = Vec::new();
        for (who, look) in now {
            let c = match self.last.people.get_mut(who) {
                Some(before) => {
                    let diff = |b: &mut String, v: &str| {
                        (b.as_str() != v).then(|| {
                            v.clone_into(b);
                            v.to_string()
                        })
                    };
                    Change {
                        who: who.to_string(),
                        tile: (before.tile != look.tile).then(|| {
                            before.tile = look.tile;
                            look.tile
                        }),
                        emoji: diff(&mut before.emoji, look.emoji),
                        action: diff(&mut before.action, look.action),
                        say: diff(&mut before.say, look.say),
                        at: diff(&mut before.at, look.at),
                    }
                }
                None => {
                    self.last.people.insert(who.to_string(), look.owned());
                    Change {
                        who: who.to_string(),
                        tile: Some(look.tile),
                        emoji: Some(look.emoji.to_string()),
                        action: Some(look.action.to_string()),
                        say: Some(look.say.to_string()),
                        at: Some(look.at.to_string()),
                    }
                }
            };
            if c.tile.is_some()
                || c.emoji.is_some()
                || c.action.is_some()
                || c.say.is_some()
                || c.at.is_some()
            {
                changes.push(c);
            }
        }
        changes.sort_by(|a, b| a.who.cmp(&b.who));
        // Both in address order: one pass finds the new, changed and ended states.
        let objects_given = objects.is_some();
        let mut object_changes = Vec::new();
        let mut ended = Vec::new();
        let mut last = self.last.objects.iter().peekable();
        let mut changed = Vec::new();
        for (at, state) in objects.into_iter().flatten() {
            while let Some((gone, _)) = last.next_if(|(k, _)| k.as_str() < at) {
                ended.push(gone.clone());
            }
            match last.next_if(|(k, _)| k.as_str() == at) {
                Some((_, was)) if was == state => {}
                _ => changed.push((at.to_string(), state.to_string())),
            }
        }
        if objects_given {
            ended.extend(last.map(|(k, _)| k.clone()));
        }
        for (at, state) in changed {
            self.last.objects.insert(at.clone(), state.clone());
            object_changes.push(ObjectChange { at, state });
        }
        for at in ended {
            self.last.objects.remove(&at);
            object_changes.push(ObjectChange {
                at,
                state: String::new(),
            });
        }
        if changes.is_empty() && object_changes.is_empty() {
            return;
        }
        // Residents on clocks of their own record their steps out of order: a step behind the
        // last frame joins its frame or goes in before the frames after it.
        match self.frames.binary_search_by_key(&step, |f| f.step) {
            Err(i) => self.frames.insert(
                i,
                Frame {
                    step,
                    time,
                    changes,
                    objects: object_changes,
                },
            ),
            Ok(i) => {
                let f = &mut self.frames[i];
                f.changes.extend(changes);
                f.changes.sort_by(|a, b| a.who.cmp(&b.who));
                f.objects.extend(object_changes);
            }
        }
    }

    /// How the town looked at the end of `step` (from the frames up to it).
    pub fn scene_at(&self, step: u64) -> Scene {
        let mut scene = Scene::default();
        for f in self.frames.iter().take_while(|f| f.step <= step) {
            scene.apply(f);
        }
        scene
    }

    /// The first and last recorded steps.
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((self.frames.first()?.step, self.frames.last()?.step))
    }

    /// The JSON-lines text (one frame per line).
    pub fn to_jsonl(&self) -> String {
        let mut s = String::new();
        for f in &self.frames {
            s.push_str(&serde_json::to_string(f).expect("frames are plain data"));
            s.push('\n');
        }
        s
    }

    /// Reads JSON lines; an error names the line.
    pub fn from_jsonl(text: &str) -> Result<Self, (usize, String)> {
        Self::from_reader(text.as_bytes())
    }

    /// The longest line read: one step of a town's changes (a thousand residents all moving
    /// and talking make a few hundred KB).
    pub const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;

    /// Reads JSON lines from a stream, a line at a time: memory follows the frames read, never
    /// the file's size (a damaged or sparse file of 20 GB without a new line is refused at its
    /// first line's limit). An error names the line.
    pub fn from_reader(mut r: impl std::io::BufRead) -> Result<Self, (usize, String)> {
        use std::io::{BufRead, Read};
        let mut frames = Vec::new();
        let mut buf = Vec::new();
        for i in 1.. {
            buf.clear();
            let n = (&mut r)
                .take(Self::MAX_LINE_BYTES + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| (i, e.to_string()))?;
            if n == 0 {
                break;
            }
            if buf.len() as u64 > Self::MAX_LINE_BYTES {
                return Err((
                    i,
                    format!(
                        "a line longer than {} bytes (no step's changes are so long): the file is damaged",
                        Self::MAX_LINE_BYTES
                    ),
                ));
            }
            let line = std::str::from_utf8(&buf).map_err(|_| (i, "not UTF-8 text".to_string()))?;
            if line.trim().is_empty() {
                continue;
            }
            let f: Frame = serde_json::from_str(line).map_err(|e| (i, e.to_string()))?;
            if frames.last().is_some_and(|p: &Frame| p.step >= f.step) {
                return Err((i, format!("step {} is not after the one before", f.step)));
            }
            frames.push(f);
        }
        Ok(Self::from_frames(frames))
    }
}

/// Records the step's changes (at the end of the step, before the clock moves on). Only people
/// whose place, action or line changed since the last step are compared (at a thousand most do
/// not change in a step; comparing everyone's look was a twentieth of the step), and the objects
/// only when their states may have changed; everyone when the log itself was replaced (a load).
#[expect(
    clippy::type_complexity,
    reason = "a person's look is read from three components"
)]
pub fn record_movement(
    clock: Res<SimClock>,
    objects: Res<ObjectStates>,
    mut log: ResMut<MovementLog>,
    mut speakers: Local<Vec<Entity>>,
    talking: Query<Entity, With<Speech>>,
    people: Query<(
        Entity,
        &Identity,
        Ref<GridPos>,
        Ref<CurrentAction>,
        Option<Ref<Speech>>,
    )>,
) {
    let all = log.is_changed();
    // Those who spoke at their last step and no longer do (a line's end changes no component
    // the filter below sees). Those elsewhere (residents on clocks of their own not in this
    // pass) are kept for their next.
    let mut hushed: Vec<Entity> = speakers
        .iter()
        .copied()
        .filter(|e| people.contains(*e) && !talking.contains(*e))
        .collect();
    hushed.sort_unstable();
    speakers.retain(|e| !people.contains(*e));
    speakers.extend(talking.iter());
    let now = people
        .iter()
        .filter(|(e, _, pos, act, speech)| {
            all || pos.is_changed()
                || act.is_changed()
                || speech.as_ref().is_some_and(|s| s.is_changed())
                || hushed.binary_search(e).is_ok()
        })
        .map(|(_, id, pos, act, speech)| {
            let act = act.into_inner();
            (
                id.name.as_str(),
                LookRef {
                    tile: (pos.tile.x, pos.tile.y),
                    emoji: &act.emoji,
                    action: &act.description,
                    say: speech.map_or("", |s| s.into_inner().text.as_str()),
                    at: &act.address,
                },
            )
        });
    let objects = (all || objects.is_changed()).then(|| {
        objects
            .states
            .iter()
            .map(|(at, s)| (at.as_str(), s.state.as_str()))
    });
    log.record_changed(clock.step, clock.now, now, objects);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(x: i32, action: &str) -> LookRef<'_> {
        LookRef {
            tile: (x, 0),
            emoji: "🙂",
            action,
            say: "",
            at: "",
        }
    }

    fn states(m: &BTreeMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
        m.iter().map(|(a, s)| (a.as_str(), s.as_str()))
    }

    #[test]
    fn only_changes_are_kept_and_any_step_can_be_rebuilt() {
        let mut log = MovementLog::default();
        let none = BTreeMap::new();
        let stove: BTreeMap<String, String> =
            [("v:h:k:stove".to_string(), "burning".to_string())].into();
        log.record(1, GameTime(10), [("A", look(1, "walking"))], states(&none));
        log.record(2, GameTime(20), [("A", look(1, "walking"))], states(&none));
        log.record(3, GameTime(30), [("A", look(2, "walking"))], states(&none));
        log.record(4, GameTime(40), [("A", look(2, "walking"))], states(&stove));
        log.record(5, GameTime(50), [("A", look(2, "walking"))], states(&stove));
        log.record(6, GameTime(60), [("A", look(2, "walking"))], states(&none));
        assert_eq!(log.frames.len(), 4, "a step without change leaves no frame");
        assert_eq!(
            log.frames[1].changes,
            vec![Change {
                who: "A".into(),
                tile: Some((2, 0)),
                ..default()
            }]
        );
        assert_eq!(log.scene_at(2).people["A"].tile, (1, 0));
        assert_eq!(log.scene_at(3).people["A"].tile, (2, 0));
        assert_eq!(log.scene_at(5).objects["v:h:k:stove"], "burning");
        assert!(log.scene_at(6).objects.is_empty(), "the state ended");
        assert_eq!(log.span(), Some((1, 6)));
        let back = MovementLog::from_jsonl(&log.to_jsonl()).unwrap();
        assert_eq!(back, log);
        let bad = "{\"step\":1,\"time\":0,\"changes\":[]}\n{\"step\":oops}\n";
        let back_text = log.to_jsonl();
        assert!(
            back_text.contains("\"objects\":[{\"at\":\"v:h:k:stove\",\"state\":\"\"}]"),
            "{back_text}"
        );
        assert_eq!(MovementLog::from_jsonl(bad).unwrap_err().0, 2);
        // A line past the limit (a damaged or sparse file) is refused at that line, read no
        // further than the limit.
        let mut long = log.to_jsonl().into_bytes();
        long.extend(std::iter::repeat_n(
            0u8,
            MovementLog::MAX_LINE_BYTES as usize + 10,
        ));
        let e = MovementLog::from_reader(&long[..]).unwrap_err();
        assert_eq!(e.0, log.frames.len() + 1, "{e:?}");
        assert!(e.1.contains("a line longer than"), "{e:?}");
    }

    /// Objects are compared in one pass in address order: new, changed and ended states, each
    /// once, in the order a replay applies them.
    #[test]
    fn object_states_are_compared_in_address_order() {
        let m = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
            v.iter()
                .map(|(a, s)| (a.to_string(), s.to_string()))
                .collect()
        };
        let mut log = MovementLog::default();
        log.record(
            1,
            GameTime(10),
            [],
            states(&m(&[("a", "x"), ("c", "y"), ("e", "q")])),
        );
        log.record(
            2,
            GameTime(20),
            [],
            states(&m(&[("b", "z"), ("c", "w"), ("e", "q")])),
        );
        log.record(
            3,
            GameTime(30),
            [],
            states(&m(&[("b", "z"), ("c", "w"), ("e", "q")])),
        );
        let ch = |f: &Frame| -> Vec<(String, String)> {
            f.objects
                .iter()
                .map(|o| (o.at.clone(), o.state.clone()))
                .collect()
        };
        assert_eq!(log.frames.len(), 2, "nothing changed at step 3");
        assert_eq!(
            ch(&log.frames[1]),
            vec![
                ("b".into(), "z".into()),
                ("c".into(), "w".into()),
                ("a".into(), String::new())
            ]
        );
        assert_eq!(log.last.objects, m(&[("b", "z"), ("c", "w"), ("e", "q")]));
        assert_eq!(log.scene_at(2).objects, log.last.objects);
    }
}
