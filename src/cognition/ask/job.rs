//! What a resident will do with an answer it waits for ([`Job`], one variant per kind of
//! request), and the step by which it is due.

use crate::agent::conversation::Topic;
use crate::memory::NodeId;
use bevy::prelude::*;

/// What to do with an answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Job {
    /// Importance scores of these memories, in order.
    Importance(Vec<NodeId>),
    /// An embedding for these memories (all share the embedded text).
    Embed(Vec<NodeId>),
    /// The embedding of the importance scale's example at this index (asked by the town's
    /// [`ScaleAsker`](crate::cognition::mind::remember::ScaleAsker), never saved).
    ScaleExample(usize),
    /// A reflection's questions.
    ReflectQuestions,
    /// The embedding of a reflection question, to retrieve its evidence.
    ReflectQuery {
        /// The question.
        question: String,
    },
    /// Insights answering a question, citing the numbered memories shown.
    ReflectInsights {
        /// The question.
        question: String,
        /// The memories shown, in the order they were numbered.
        shown: Vec<NodeId>,
    },
    /// The embedding of the new-day question ("what happened, what was planned").
    ReviseQuery {
        /// The day being planned.
        day: i64,
    },
    /// A revised outlook (`currently`, plan requirement) from yesterday's memories.
    Revise {
        /// The day being planned.
        day: i64,
    },
    /// The wake-up hour and the day in broad strokes.
    PlanDay {
        /// The day being planned.
        day: i64,
    },
    /// The hourly schedule.
    PlanHours {
        /// The day being planned.
        day: i64,
        /// The activities the hours were chosen from (empty in a save from before the hours
        /// were a choice: its answer is free text).
        #[serde(default)]
        options: Vec<String>,
    },
    /// The subtasks of an hourly activity.
    Decompose {
        /// The plan's day.
        day: i64,
        /// The activity's id.
        activity: u32,
    },
    /// The embedding of an activity's words, to find one done before that is like it
    /// (`cognition.reuse_likeness`).
    ActivityVector {
        /// The activity's words, as planned.
        words: String,
    },
    /// The sector where an activity happens.
    Sector {
        /// The plan's day.
        day: i64,
        /// The activity's id.
        activity: u32,
    },
    /// The arena of the chosen sector.
    Arena {
        /// The plan's day.
        day: i64,
        /// The activity's id.
        activity: u32,
        /// The chosen sector (`world:sector`).
        sector: String,
    },
    /// The object, emoji and object state of each block of an activity.
    Details {
        /// The plan's day.
        day: i64,
        /// The activity's id.
        activity: u32,
        /// The blocks, in the order asked.
        blocks: Vec<u32>,
        /// The objects offered.
        objects: Vec<String>,
    },
    /// The rest of the day re-planned after a whisper.
    Replan {
        /// The plan's day.
        day: i64,
        /// The minute the new plan starts.
        from: u32,
    },
    /// Whether and how to deal with an object in an unusual state.
    ReactObject {
        /// The object's address.
        address: String,
    },
    /// Whether to talk to, wait for, or ignore someone just seen.
    React {
        /// Whom.
        #[serde(with = "crate::sim::entity_serde::entity_bits")]
        target: Entity,
        /// The options offered, in order.
        options: Vec<Reaction>,
    },
    /// The embedding of what the next line is about, to retrieve memories for it.
    ChatQuery {
        /// The conversation.
        #[serde(with = "crate::sim::entity_serde::entity_bits")]
        conversation: Entity,
    },
    /// The embedding of what a whole conversation starts from, to retrieve both speakers'
    /// memories for it (`cognition.whole_dialogue`).
    DialogueQuery {
        /// The conversation.
        #[serde(with = "crate::sim::entity_serde::entity_bits")]
        conversation: Entity,
    },
    /// A whole conversation written in one answer: its lines, each by one of the two, about one
    /// of the topics offered.
    Dialogue {
        /// The conversation.
        #[serde(with = "crate::sim::entity_serde::entity_bits")]
        conversation: Entity,
        /// The topics offered, in the order numbered, each with whose it is (index in the
        /// conversation's `people`).
        topics: Vec<(usize, Topic)>,
    },
    /// The next line of a conversation: the topic chosen from those offered, and the words.
    Utterance {
        /// The conversation.
        #[serde(with = "crate::sim::entity_serde::entity_bits")]
        conversation: Entity,
        /// The topics offered, in the order numbered (empty in a save from before topics).
        #[serde(default)]
        topics: Vec<Topic>,
        /// Whether this is the second asking (after a line that did not hold up).
        #[serde(default)]
        retry: bool,
    },
    /// The embedding of a line, to check that it is on its topic before it is said.
    LineCheck {
        /// The conversation.
        #[serde(with = "crate::sim::entity_serde::entity_bits")]
        conversation: Entity,
        /// Its topic.
        topic: Topic,
        /// The words.
        text: String,
        /// Whether the speaker ends the conversation with it.
        end: bool,
        /// Whether it was the second asking.
        retry: bool,
    },
    /// Whether to accept an invitation just heard.
    InviteAnswer {
        /// The conversation.
        #[serde(with = "crate::sim::entity_serde::entity_bits")]
        conversation: Entity,
        /// The invitation as the asker said it.
        topic: Topic,
        /// Who asked.
        asker: String,
    },
    /// What a finished conversation leaves in memory: a summary, a planning thought, a memo.
    ChatMemory {
        /// The conversation.
        #[serde(with = "crate::sim::entity_serde::entity_bits")]
        conversation: Entity,
    },
    /// The embedding of a question the player asks in an interview (applied by the play layer,
    /// paused or not; due [`NEVER_DUE`]: game time does not wait for it).
    InterviewQuery {
        /// The question.
        question: String,
    },
    /// The resident's answer to an interview question.
    InterviewAnswer {
        /// The question.
        question: String,
        /// The memory that bears most on it (said in the answer's place if the answer does not
        /// hold up).
        #[serde(default)]
        best: String,
        /// The next memories that bear on it, in order (said instead of `best` when that was
        /// said already in the interview).
        #[serde(default)]
        others: Vec<String>,
    },
}

/// The due step of work game time never waits for (the player's interviews).
pub const NEVER_DUE: u64 = u64::MAX;

impl Job {
    /// Whether [`Pacing::Live`](crate::cognition::config::Pacing) never holds game time for the job: the
    /// day's plan and its places (a resident follows its routine meanwhile), and scoring and
    /// embedding memories (applied when they come).
    pub fn is_live(&self) -> bool {
        self.makes_the_day_plan()
            || matches!(
                self,
                Job::Importance(_)
                    | Job::Embed(_)
                    | Job::ScaleExample(_)
                    | Job::Decompose { .. }
                    | Job::ActivityVector { .. }
                    | Job::Sector { .. }
                    | Job::Arena { .. }
                    | Job::Details { .. }
            )
    }

    /// Whether the job makes the day's plan itself (the outlook, the broad plan, the hours):
    /// a resident with one pending has no plan of its own for the day yet.
    pub fn makes_the_day_plan(&self) -> bool {
        matches!(
            self,
            Job::ReviseQuery { .. }
                | Job::Revise { .. }
                | Job::PlanDay { .. }
                | Job::PlanHours { .. }
        )
    }

    /// Whether the job belongs to a reflection in progress.
    pub fn is_reflection(&self) -> bool {
        matches!(
            self,
            Job::ReflectQuestions | Job::ReflectQuery { .. } | Job::ReflectInsights { .. }
        )
    }
}

/// What a resident may do about someone it sees (the options of a [`Job::React`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Reaction {
    /// Start a conversation.
    Talk,
    /// Wait until they are done (both are heading for the same place).
    Wait,
    /// Carry on with the plan.
    CarryOn,
}

/// The one way to take answers: those of one kind of [`Job`] whose answer has come and is due
/// (as [`Pending::take_ready`](super::pending::Pending::take_ready)), each with the job's own
/// fields, in the order they were asked:
///
/// ```ignore
/// for ((day, activity), reply) in take!(pending, clock.step, cog.real_time(), Decompose { day, activity }) { … }
/// for (ids, reply) in take!(pending, clock.step, cog.real_time(), Importance(ids)) { … }
/// for ((), reply) in take!(pending, clock.step, cog.real_time(), ReflectQuestions) { … }
/// ```
macro_rules! take {
    ($pending:expr, $step:expr, $real_time:expr, $v:ident { $f:ident $(,)? }) => {
        $pending
            .take_ready($step, $real_time, |j| {
                matches!(j, $crate::cognition::ask::job::Job::$v { .. })
            })
            .into_iter()
            .filter_map(|(j, reply)| match j {
                $crate::cognition::ask::job::Job::$v { $f, .. } => Some(($f, reply)),
                _ => None,
            })
    };
    ($pending:expr, $step:expr, $real_time:expr, $v:ident { $($f:ident),+ $(,)? }) => {
        $pending
            .take_ready($step, $real_time, |j| {
                matches!(j, $crate::cognition::ask::job::Job::$v { .. })
            })
            .into_iter()
            .filter_map(|(j, reply)| match j {
                $crate::cognition::ask::job::Job::$v { $($f,)+ .. } => Some((($($f),+), reply)),
                _ => None,
            })
    };
    ($pending:expr, $step:expr, $real_time:expr, $v:ident ( $f:ident )) => {
        $pending
            .take_ready($step, $real_time, |j| {
                matches!(j, $crate::cognition::ask::job::Job::$v(_))
            })
            .into_iter()
            .filter_map(|(j, reply)| match j {
                $crate::cognition::ask::job::Job::$v($f) => Some(($f, reply)),
                _ => None,
            })
    };
    ($pending:expr, $step:expr, $real_time:expr, $v:ident) => {
        $pending
            .take_ready($step, $real_time, |j| {
                matches!(j, $crate::cognition::ask::job::Job::$v)
            })
            .into_iter()
            .map(|(_, reply)| ((), reply))
    };
}
pub(crate) use take;
