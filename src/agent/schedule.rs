//! The day's schedule as data and pure functions: blocks of minutes that cover the day without
//! gaps; an hour-long activity refined into 5–15-minute subtasks whose durations always add up
//! to the block they refine; and the rewrite of a window of the day around an inserted action
//! (a conversation, a wait) so that the window's durations still add up.

use serde::{Deserialize, Serialize};

/// One entry of a day's schedule: what, where, and when (minutes since midnight, end exclusive).
/// An hourly activity may be refined into subtasks, each a block of its own that keeps the
/// activity's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Block {
    /// Start minute.
    pub start: u32,
    /// End minute (exclusive, ≤ 1440).
    pub end: u32,
    /// What the person does, e.g. "having breakfast" or "having breakfast (frying eggs)".
    pub description: String,
    /// A short emoji for the action (empty until decided).
    pub emoji: String,
    /// Canonical address where it happens (empty until decided).
    pub address: String,
    /// Id of this block within the day's plan.
    #[serde(default)]
    pub id: u32,
    /// Id of the hour-sized piece of activity it belongs to (its own id when not refined).
    #[serde(default)]
    pub activity: u32,
    /// Id of the activity as first planned (consecutive hours of the same activity share it,
    /// and share a place).
    #[serde(default)]
    pub group: u32,
    /// Whether this is a subtask of a refined activity.
    #[serde(default)]
    pub subtask: bool,
    /// What the object at `address` does meanwhile ("being slept in"); empty for none.
    #[serde(default)]
    pub object_state: String,
}

impl Block {
    /// Minutes long.
    pub fn minutes(&self) -> u32 {
        self.end - self.start
    }

    /// Whether place and annotations are decided.
    pub fn decided(&self) -> bool {
        !self.address.is_empty() && !self.emoji.is_empty()
    }

    /// The words of the activity it is part of: a subtask's description less its step
    /// ("having breakfast (frying eggs)" → "having breakfast"), any other block's description.
    pub fn activity_words(&self) -> &str {
        match self.description.strip_suffix(')') {
            Some(d) if self.subtask => d.rsplit_once(" (").map_or(&self.description, |(a, _)| a),
            _ => &self.description,
        }
    }
}

/// Rounds to the nearest multiple of 5 (at least 5).
fn round5(m: u32) -> u32 {
    (m.saturating_add(2) / 5 * 5).max(5)
}

/// Splits `total` minutes among tasks (each with the duration asked for): every task gets a
/// multiple of 5 between 5 and 15 minutes and the durations sum to `total` exactly. Too long:
/// the last tasks are shortened, then dropped. Too short: tasks are lengthened in turn, then the
/// last task is continued. (When `total` is not a multiple of 5 the last task absorbs the rest.)
pub fn fit_durations(tasks: &[(String, u32)], total: u32) -> Vec<(String, u32)> {
    if total == 0 {
        return Vec::new();
    }
    let tasks: Vec<(String, u32)> = if tasks.is_empty() {
        vec![("continuing".to_string(), total)]
    } else {
        tasks.to_vec()
    };
    if total < 5 {
        return vec![(tasks[0].0.clone(), total)];
    }
    let mut out: Vec<(String, u32)> = tasks
        .iter()
        .map(|(t, m)| (t.clone(), round5(*m).min(15)))
        .collect();
    let target = total / 5 * 5;
    let sum = |v: &Vec<(String, u32)>| v.iter().map(|(_, m)| *m).sum::<u32>();
    // Too long: shorten from the end, then drop from the end.
    while sum(&out) > target {
        let excess = sum(&out) - target;
        if let Some(i) = (0..out.len()).rev().find(|i| out[*i].1 > 5) {
            let cut = (out[i].1 - 5).min(excess);
            out[i].1 -= cut;
        } else {
            out.pop();
        }
    }
    // Too short: lengthen in turn, then continue the last task.
    let mut i = 0;
    while sum(&out) < target {
        let short = target - sum(&out);
        if out.iter().all(|(_, m)| *m >= 15) {
            let last = out
                .last()
                .map(|(t, _)| t.clone())
                .unwrap_or_else(|| "continuing".into());
            out.push((last, short.min(15)));
            continue;
        }
        let k = i % out.len();
        if out[k].1 < 15 {
            out[k].1 += 5.min(short);
        }
        i += 1;
    }
    if let Some(last) = out.last_mut() {
        last.1 += total - target;
    }
    out
}

/// Whether the blocks cover 0..1440 in order without gaps or overlaps.
pub fn covers_the_day(blocks: &[Block]) -> bool {
    !blocks.is_empty()
        && blocks[0].start == 0
        && blocks.last().is_some_and(|b| b.end == 1440)
        && blocks.windows(2).all(|w| w[0].end == w[1].start)
        && blocks.iter().all(|b| b.end > b.start)
}

/// Rewrites the window `[now, window_end)` around an action of `inserted_min` minutes that
/// starts now: the current activity is cut at `now`, the inserted action follows, then what was
/// left of the window in its order, shifted later and cut at the window's end (pieces shorter
/// than 5 minutes are dropped into their neighbour). The blocks still cover the day.
pub fn insert_action(blocks: Vec<Block>, now: u32, inserted: Block, window_end: u32) -> Vec<Block> {
    let now = now.min(1439);
    let inserted_end = (now + (inserted.end - inserted.start).max(1)).min(1440);
    let window_end = window_end.clamp(inserted_end, 1440);
    let mut before: Vec<Block> = Vec::new();
    let mut rest: Vec<Block> = Vec::new(); // pieces of [now, window_end) in order
    let mut after: Vec<Block> = Vec::new();
    for b in blocks {
        if b.end <= now {
            before.push(b);
            continue;
        }
        if b.start >= window_end {
            after.push(b);
            continue;
        }
        if b.start < now {
            let mut head = b.clone();
            head.end = now;
            before.push(head);
        }
        let tail = (b.end > window_end).then(|| {
            let mut tail = b.clone();
            tail.start = window_end;
            tail
        });
        let mut mid = b;
        mid.start = mid.start.max(now);
        mid.end = mid.end.min(window_end);
        if mid.end > mid.start {
            rest.push(mid);
        }
        after.extend(tail);
    }
    let mut out = before;
    out.push(Block {
        start: now,
        end: inserted_end,
        ..inserted
    });
    let mut t = inserted_end;
    for mut b in rest {
        if t >= window_end {
            break;
        }
        let len = b.end - b.start;
        b.start = t;
        b.end = (t + len).min(window_end);
        t = b.end;
        out.push(b);
    }
    // Fill to the window's end with the last piece (or the inserted action).
    if t < window_end
        && let Some(last) = out.last_mut()
    {
        last.end = window_end;
    }
    out.extend(after);
    // Slivers under 5 minutes join the block before them.
    let mut merged: Vec<Block> = Vec::new();
    for b in out {
        match merged.last_mut() {
            Some(prev) if b.end - b.start < 5 && b.start != now => prev.end = b.end,
            _ => merged.push(b),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subtasks_activity_words_are_its_description_less_its_step() {
        let b = |description: &str, subtask: bool| Block {
            description: description.into(),
            subtask,
            ..Default::default()
        };
        let words = |d: &str, s: bool| b(d, s).activity_words().to_string();
        assert_eq!(
            words("having breakfast (frying eggs)", true),
            "having breakfast"
        );
        assert_eq!(
            words("reading (a novel) in the library (turning pages)", true),
            "reading (a novel) in the library"
        );
        assert_eq!(words("having breakfast", true), "having breakfast");
        assert_eq!(words("meeting (book club)", false), "meeting (book club)");
    }

    fn tasks(ms: &[u32]) -> Vec<(String, u32)> {
        ms.iter()
            .enumerate()
            .map(|(i, m)| (format!("t{i}"), *m))
            .collect()
    }

    #[test]
    fn durations_always_add_up_and_stay_in_5_to_15() {
        let cases: Vec<(Vec<u32>, u32)> = vec![
            (vec![10, 10, 10], 60),
            (vec![5; 30], 60),
            (vec![60], 60),
            (vec![], 45),
            (vec![7, 13, 22, 3], 120),
            (vec![15, 15, 15, 15, 15], 30),
            (vec![1], 5),
            (vec![10, 10], 180),
        ];
        for (ms, total) in cases {
            let out = fit_durations(&tasks(&ms), total);
            assert_eq!(
                out.iter().map(|(_, m)| m).sum::<u32>(),
                total,
                "{ms:?} into {total}: {out:?}"
            );
            assert!(
                out.iter().all(|(_, m)| (5..=15).contains(m) && m % 5 == 0),
                "{ms:?} into {total}: {out:?}"
            );
        }
        let odd = fit_durations(&tasks(&[10, 10]), 23);
        assert_eq!(odd.iter().map(|(_, m)| m).sum::<u32>(), 23);
        assert_eq!(fit_durations(&tasks(&[10]), 3), vec![("t0".to_string(), 3)]);
        assert!(fit_durations(&tasks(&[10]), 0).is_empty());
        // Order is kept; the first tasks keep what they asked for when there is room.
        let out = fit_durations(&tasks(&[5, 10, 15]), 30);
        assert_eq!(out, tasks(&[5, 10, 15]));
    }

    fn b(start: u32, end: u32, d: &str) -> Block {
        Block {
            start,
            end,
            description: d.into(),
            ..Default::default()
        }
    }

    #[test]
    fn an_inserted_action_keeps_the_window_adding_up() {
        let day = vec![
            b(0, 480, "sleep"),
            b(480, 540, "breakfast"),
            b(540, 600, "walk"),
            b(600, 720, "work"),
            b(720, 1440, "rest"),
        ];
        let out = insert_action(day.clone(), 500, b(0, 30, "chat"), 600);
        assert!(covers_the_day(&out), "{out:?}");
        let names: Vec<(&str, u32, u32)> = out
            .iter()
            .map(|x| (x.description.as_str(), x.start, x.end))
            .collect();
        assert_eq!(
            names,
            vec![
                ("sleep", 0, 480),
                ("breakfast", 480, 500),
                ("chat", 500, 530),
                ("breakfast", 530, 570),
                ("walk", 570, 600),
                ("work", 600, 720),
                ("rest", 720, 1440)
            ]
        );
        // The window [480, 600) still adds up to 120 minutes, and the day outside is untouched.
        let in_window: u32 = out
            .iter()
            .filter(|x| x.start >= 480 && x.end <= 600)
            .map(|x| x.end - x.start)
            .sum();
        assert_eq!(in_window, 120);
        // A long insertion runs past the window: later blocks start later but the day is whole.
        let out = insert_action(day.clone(), 590, b(0, 45, "chat"), 600);
        assert!(covers_the_day(&out), "{out:?}");
        assert!(
            out.iter()
                .any(|x| x.description == "chat" && x.start == 590 && x.end == 635)
        );
        // At the very start of a block.
        let out = insert_action(day.clone(), 540, b(0, 10, "wait"), 600);
        assert!(covers_the_day(&out), "{out:?}");
        assert_eq!(
            out.iter()
                .find(|x| x.description == "wait")
                .map(|x| (x.start, x.end)),
            Some((540, 550))
        );
    }
}
