//! The movement log: for every step, only what changed for each person (tile, emoji, action,
//! the line being said). A save writes it as JSON lines (`movement.jsonl`, one step per line)
//! and `simulacra replay` plays it back without the model.

use crate::agent::{CurrentAction, GridPos, Identity};
use crate::cognition::converse::Speech;
use crate::sim::clock::SimClock;
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
}

/// The changes of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The step that ended.
    pub step: u64,
    /// Game time at its end.
    pub time: GameTime,
    /// What changed.
    pub changes: Vec<Change>,
}

/// Every step's changes since the simulation began (kept across saves and loads).
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct MovementLog {
    /// Frames with at least one change, in order.
    pub frames: Vec<Frame>,
    /// How everyone looked after the last frame.
    pub last: BTreeMap<String, Look>,
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
    }
}

impl MovementLog {
    /// A log read back from frames (the looks rebuilt by playing them).
    pub fn from_frames(frames: Vec<Frame>) -> Self {
        let mut last = BTreeMap::new();
        for f in &frames {
            fold(&mut last, f);
        }
        Self { frames, last }
    }

    /// Records how everyone looks now, keeping what changed.
    pub fn record(&mut self, step: u64, time: GameTime, now: Vec<(String, Look)>) {
        let mut changes = Vec::new();
        for (who, look) in now {
            let before = self.last.get(&who);
            let diff = |f: fn(&Look) -> &String| -> Option<String> {
                let v = f(&look);
                (before.map(f) != Some(v)).then(|| v.clone())
            };
            let c = Change {
                who: who.clone(),
                tile: (before.map(|b| b.tile) != Some(look.tile)).then_some(look.tile),
                emoji: diff(|l| &l.emoji),
                action: diff(|l| &l.action),
                say: diff(|l| &l.say),
            };
            if c.tile.is_some() || c.emoji.is_some() || c.action.is_some() || c.say.is_some() {
                changes.push(c);
            }
            self.last.insert(who, look);
        }
        if !changes.is_empty() {
            self.frames.push(Frame {
                step,
                time,
                changes,
            });
        }
    }

    /// How everyone looked at the end of `step` (from the frames up to it).
    pub fn looks_at(&self, step: u64) -> BTreeMap<String, Look> {
        let mut looks = BTreeMap::new();
        for f in self.frames.iter().take_while(|f| f.step <= step) {
            fold(&mut looks, f);
        }
        looks
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
        let mut frames = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let f: Frame = serde_json::from_str(line).map_err(|e| (i + 1, e.to_string()))?;
            if frames.last().is_some_and(|p: &Frame| p.step >= f.step) {
                return Err((i + 1, format!("step {} is not after the one before", f.step)));
            }
            frames.push(f);
        }
        Ok(Self::from_frames(frames))
    }
}

fn fold(looks: &mut BTreeMap<String, Look>, f: &Frame) {
    for c in &f.changes {
        c.apply(looks.entry(c.who.clone()).or_default());
    }
}

/// Records the step's changes (at the end of the step, before the clock moves on).
pub fn record_movement(
    clock: Res<SimClock>,
    mut log: ResMut<MovementLog>,
    people: Query<(&Identity, &GridPos, &CurrentAction, Option<&Speech>)>,
) {
    let mut now: Vec<(String, Look)> = people
        .iter()
        .map(|(id, pos, act, speech)| {
            (
                id.name.clone(),
                Look {
                    tile: (pos.tile.x, pos.tile.y),
                    emoji: act.emoji.clone(),
                    action: act.description.clone(),
                    say: speech.map(|s| s.text.clone()).unwrap_or_default(),
                },
            )
        })
        .collect();
    now.sort_by(|a, b| a.0.cmp(&b.0));
    log.record(clock.step, clock.now, now);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(x: i32, action: &str) -> Look {
        Look {
            tile: (x, 0),
            emoji: "🙂".into(),
            action: action.into(),
            say: String::new(),
        }
    }

    #[test]
    fn only_changes_are_kept_and_any_step_can_be_rebuilt() {
        let mut log = MovementLog::default();
        log.record(1, GameTime(10), vec![("A".into(), look(1, "walking"))]);
        log.record(2, GameTime(20), vec![("A".into(), look(1, "walking"))]);
        log.record(3, GameTime(30), vec![("A".into(), look(2, "walking"))]);
        assert_eq!(log.frames.len(), 2, "a step without change leaves no frame");
        assert_eq!(
            log.frames[1].changes,
            vec![Change {
                who: "A".into(),
                tile: Some((2, 0)),
                ..default()
            }]
        );
        assert_eq!(log.looks_at(2)["A"].tile, (1, 0));
        assert_eq!(log.looks_at(3)["A"].tile, (2, 0));
        let back = MovementLog::from_jsonl(&log.to_jsonl()).unwrap();
        assert_eq!(back, log);
        let bad = "{\"step\":1,\"time\":0,\"changes\":[]}\n{\"step\":oops}\n";
        assert_eq!(MovementLog::from_jsonl(bad).unwrap_err().0, 2);
    }
}
