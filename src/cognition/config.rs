//! Cognition settings: the `cognition:` section of `config/simulacra.ron` (documented in
//! `config/README.md`). Perception and reflection defaults are the Smallville bootstrap values
//! (vision 8, attention 8, retention 8) with the paper's reflection threshold of 150.

use crate::data_error::{DataError, SourceLines};
use crate::memory::RetrievalParams;
use bevy::prelude::Resource;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Which parts of the architecture run (the paper's ablation conditions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Ablation {
    /// Memory, reflection and planning.
    #[default]
    Full,
    /// No reflection.
    NoReflection,
    /// No reflection and no planning memory (plans are not stored or retrieved as memories).
    NoReflectionNoPlanning,
    /// No memory at all: agents act from their identity alone.
    NoMemory,
}

impl Ablation {
    /// Whether agents keep and retrieve memories.
    pub fn memory(self) -> bool {
        self != Ablation::NoMemory
    }
    /// Whether agents reflect.
    pub fn reflection(self) -> bool {
        self == Ablation::Full
    }
    /// Whether plans are stored as (retrievable) memories.
    pub fn planning_memory(self) -> bool {
        matches!(self, Ablation::Full | Ablation::NoReflection)
    }
    /// Whether a memory may be recalled under this condition: none without memory, no
    /// reflections without reflection, no plan thoughts without planning (so one town, saved
    /// under the full architecture, can be interviewed under every condition, as the paper did).
    pub fn keeps(self, n: &crate::memory::stream::MemoryNode) -> bool {
        self.memory()
            && (self.reflection() || !n.is_reflection())
            && (self.planning_memory() || !is_plan_thought(n))
    }
    /// The names the lab and the config use.
    pub const ALL: [Ablation; 4] = [
        Ablation::Full,
        Ablation::NoReflection,
        Ablation::NoReflectionNoPlanning,
        Ablation::NoMemory,
    ];
    /// The paper's name of the condition.
    pub fn label(self) -> &'static str {
        match self {
            Ablation::Full => "full architecture",
            Ablation::NoReflection => "no reflection",
            Ablation::NoReflectionNoPlanning => "no reflection, no planning",
            Ablation::NoMemory => "no memory, reflection or planning",
        }
    }
}

/// Whether a memory is a plan the resident made (its day's plan, a commitment), which the
/// "no planning" conditions leave out.
pub fn is_plan_thought(n: &crate::memory::stream::MemoryNode) -> bool {
    n.kind == crate::memory::stream::NodeKind::Thought
        && (n.predicate == "plan" || n.keywords.iter().any(|k| k == "plan"))
}

/// How game time relates to pending LLM work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Pacing {
    /// A step runs only when every answer due by then has been applied: the same run on a slow
    /// or a fast machine (and with record/replay) gives the same result.
    #[default]
    Wait,
    /// Steps never wait; answers are applied when they arrive (agents without a decision carry
    /// on with their plan). Not reproducible.
    RealTime,
    /// The day's plan (outlook, broad plan, hours, subtasks, places) and memory scoring and
    /// embedding never hold game time: each resident follows its routine until its own plan
    /// arrives and is placed, then switches to it; every other answer (reflection, reactions,
    /// talk) waits as in `Wait`. The window's default (a living town at once); not reproducible.
    Live,
}

/// How a new memory's importance (1 to 10) is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImportanceBy {
    /// The chat model rates each memory (the original's prompt, `importance.txt`), memories
    /// gathered into batches.
    Model,
    /// The memory's embedding is compared with the scale's examples
    /// (`importance_scale.txt` beside the prompts): no request. For a small model, whose
    /// ratings are counts ("[1, 2, 3, 4, 5]").
    Likeness,
}

/// Who plans the residents' days.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Planning {
    /// Each resident plans with the model: wake-up hour, broad plan, hourly schedule, subtasks,
    /// places; the daily routine is used only when the model gives no answer.
    #[default]
    Model,
    /// The deterministic daily routine only (no planning calls).
    Routine,
}

/// Everything about how agents perceive, remember, reflect, plan, react and talk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CognitionConfig {
    /// Square vision radius in tiles.
    pub vision_radius: u32,
    /// Nearest events attended per step.
    pub attention_bandwidth: usize,
    /// An event whose triple is among this many newest events is not stored again.
    pub retention: usize,
    /// An event (the same triple) remembered within this many game minutes is not stored
    /// again (0: only `retention` applies, as in the original).
    pub repeat_minutes: u32,
    /// Summed importance of new events that triggers a reflection, on the scale of importance
    /// asked of the model (`importance_by: Model`; the paper's 150).
    pub reflection_threshold: u32,
    /// The same threshold where importance is by likeness to the scale's examples, which rate
    /// a day's events higher than the paper's model did: at 150 the 25-resident town's residents
    /// began 4.1 reflections a day each (102 in its first day, aids none, f2ca6f1), the paper's
    /// about two or three, so this is 150 scaled by 4.1 / 2.5. A setting for the scorer, not a
    /// cap: the count is whatever the day's events add up to.
    pub reflection_threshold_likeness: u32,
    /// Questions asked per reflection.
    pub reflection_questions: usize,
    /// Insights asked per question.
    pub reflection_insights: usize,
    /// Newest memories a reflection looks at to find its questions.
    pub reflection_material: usize,
    /// Memories retrieved per question.
    pub reflection_retrieve: usize,
    /// Most retrieved memories listed in one prompt: a conversation line's (the original's 15),
    /// a reflection question's evidence (`reflection_retrieve`) and the morning's revision of
    /// who one is (the original's 30) each list at most this many. A small model reads them all
    /// and uses a few (the default model's answers cite the first ones), so the default lists
    /// 10; a big server model may take 30, the original's prompts.
    pub prompt_memories: usize,
    /// Days after which a thought is no longer retrieved.
    pub thought_expiry_days: u32,
    /// Retrieval weights, decay and recency mode.
    pub retrieval: RetrievalParams,
    /// Which parts of the architecture run.
    pub ablation: Ablation,
    /// Folder of prompt templates (one file per purpose).
    pub prompts: String,
    /// Whether game time waits for pending answers.
    pub pacing: Pacing,
    /// The pacing of the window (`play`); `pacing` is that of headless runs, labs and benches.
    pub play_pacing: Pacing,
    /// Steps an answer about memory (importance, embedding, reflection) may take before game
    /// time waits for it.
    pub memory_slack_steps: u32,
    /// How a new memory's importance is found: asked of the model, or by likeness to the scale's
    /// examples (the bundled config's choice for the small default model).
    pub importance_by: ImportanceBy,
    /// Most memories scored in one importance request.
    pub importance_batch: usize,
    /// Game minutes new memories may gather before they are scored together (fewer, fuller
    /// importance requests; a score arrives at most this late, plus `memory_slack_steps`).
    pub importance_gather_minutes: u32,
    /// Who plans the days.
    pub planning: Planning,
    /// How far ahead subtasks and places are decided (game minutes), so the model works while
    /// agents walk.
    pub prefetch_minutes: u32,
    /// An activity a resident refined before (the same words, without case) is refined into the
    /// subtasks the model gave it then, without asking again, and a step it did before in the
    /// same place takes the object, emoji and object state it had then (false: every activity
    /// and every step's details are asked).
    pub reuse_subtasks: bool,
    /// With `reuse_subtasks`, an activity someone else in town refined before (the same words)
    /// is refined into their subtasks when the resident has none of its own (of those who
    /// did, the first by name), without asking (false: only a resident's own are reused).
    pub share_subtasks: bool,
    /// An activity a resident placed before (the same words, without case) goes to the arena
    /// the model chose for it then, without asking again, where that arena is still among
    /// those it would be offered (known, allowed, open at that hour) (false: every place is
    /// asked).
    pub reuse_places: bool,
    /// With `reuse_subtasks` and `reuse_places`, an activity whose words were not refined or
    /// placed before is embedded, and one kept whose embedding is at least this like it (cosine)
    /// gives its subtasks and place without asking (0: only the same words are reused). The
    /// default is set on the bundled embedder, all-MiniLM-L6-v2: the same activity in other
    /// words 0.94 or more, another activity 0.82 or less (`memory_real::the_likeness_threshold…`).
    pub reuse_likeness: f32,
    /// Most lines in a conversation (both speakers together).
    pub max_utterances: usize,
    /// Game minutes before two residents who talked may start another conversation (the
    /// original's 800 steps ≈ 133 minutes).
    pub chat_cooldown_minutes: u32,
    /// Game minutes before a resident considers reacting to the same person again.
    pub react_cooldown_minutes: u32,
    /// Steps a reaction or a line of conversation may take before game time waits for it.
    pub decision_slack_steps: u32,
    /// Most tiles between the player's avatar and a resident it starts talking with.
    pub talk_max_tiles: u32,
    /// Game minutes a resident who spoke to the avatar waits for an answer before going on (when
    /// the player has not joined the conversation).
    pub player_reply_minutes: u32,
    /// Real seconds the window holds a resident who spoke to the avatar while its words are on
    /// screen unanswered (game time goes on; the resident waits for the answer, or for Leave).
    pub player_reply_seconds: u32,
    /// An interview becomes an in-world conversation the resident remembers (default: the
    /// resident's memory is left as it was).
    pub interview_in_world: bool,
    /// A line about a fact or an invitation whose embedding is less similar than this (cosine)
    /// to its topic, sharing no word of four letters or more with it, is off topic: asked again
    /// once, then said by a template.
    pub topic_min_similarity: f32,
    /// A line that does not hold up (a flaw, or off its topic) is asked for again once, sampled,
    /// before its topic's template is said (false: the template is said at once).
    pub ask_lines_again: bool,
    /// A conversation between two residents is written by one request (the original's older
    /// `agent_chat_v1`: both speakers' memories and topics, every line), its lines then said in
    /// turn; false: line by line, each asked of its speaker.
    pub whole_dialogue: bool,
    /// Sampling temperature of conversation lines (0: greedy, the same town every run; the
    /// lab's `--seeds` runs use 0.7 so that towns differ by their seed).
    pub talk_temperature: f32,
    /// Seed of sampled conversation lines (with `talk_temperature` above 0).
    pub seed: u32,
    /// The town's social mechanisms, each a switch a lab can turn off.
    pub social: SocialConfig,
    /// Aids: rules that make an outcome a resident's model did not (off unless asked; every
    /// report and the window's status name those on).
    pub aids: Aids,
}

/// Aids: each forces something a lab counts (what is said, heard, decided or done) where the
/// model's answer did not give it, and is named after what it forces. All are off by default: a
/// resident whose model fails does less. A game preset may turn them on for a livelier town;
/// every report (`lab diffusion --aids`) and the window's status then say which are on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Aids {
    /// A line that fails its checks twice is said by its topic's template ("Did you hear? …",
    /// "I'm holding a party …"), which carries the topic's fact, and a line with no usable
    /// answer takes the first topic offered (the invitation, or the newest news); a summary
    /// the model did not give is written from the topics. Off: a short filler, and the
    /// conversation ends; a failed line is small talk; no summary.
    pub template_lines: bool,
    /// A line about news leaves the listener the topic's fact ("Klaus told me that …") whatever
    /// its words said. Off: only a line whose words carry the fact is heard as it
    /// ([`crate::agent::carry`]), and the listener keeps the words said.
    pub heard_from_topic: bool,
    /// An accepted gathering is put into the resident's plan for its day at its place and time,
    /// and put back into any plan made later. Off: the acceptance is a memory and a commitment
    /// that the day's planning is shown; whether the resident goes is its plan's.
    pub plan_gatherings: bool,
    /// Every teller of a gathering asks the listener again, and the question shows only what it
    /// remembers of the one who asks. Off: one answer per resident, gathering and teller, news
    /// heard second-hand asks at most once a day, and the question shows its earlier answers to
    /// the gathering and to whom.
    pub ask_until_yes: bool,
}

impl Aids {
    /// Every aid by name, with what it forces (the docs' and reports' words).
    pub const NAMES: [(&'static str, &'static str); 4] = [
        (
            "template_lines",
            "a failed line is said by its topic's template, carrying its fact",
        ),
        (
            "heard_from_topic",
            "a line about news leaves the listener the topic's fact whatever its words",
        ),
        (
            "plan_gatherings",
            "an accepted gathering is put into the plan by rule",
        ),
        (
            "ask_until_yes",
            "every teller asks again, without the earlier answers shown",
        ),
    ];

    /// All of them on.
    pub fn all() -> Self {
        Self {
            template_lines: true,
            heard_from_topic: true,
            plan_gatherings: true,
            ask_until_yes: true,
        }
    }

    /// Whether the aid of this name is on (`None`: no such aid).
    pub fn get(&self, name: &str) -> Option<bool> {
        Some(match name {
            "template_lines" => self.template_lines,
            "heard_from_topic" => self.heard_from_topic,
            "plan_gatherings" => self.plan_gatherings,
            "ask_until_yes" => self.ask_until_yes,
            _ => return None,
        })
    }

    /// Turns the aid of this name on or off.
    pub fn set(&mut self, name: &str, on: bool) -> Result<(), String> {
        let slot = match name {
            "template_lines" => &mut self.template_lines,
            "heard_from_topic" => &mut self.heard_from_topic,
            "plan_gatherings" => &mut self.plan_gatherings,
            "ask_until_yes" => &mut self.ask_until_yes,
            _ => {
                return Err(format!(
                    "no aid named {name:?}; the aids: {}",
                    Self::NAMES.map(|(n, _)| n).join(", ")
                ));
            }
        };
        *slot = on;
        Ok(())
    }

    /// The aids of a command line's list: `none`, `all`, or names separated by commas.
    pub fn parse(list: &str) -> Result<Self, String> {
        let list = list.trim();
        match list {
            "" | "none" => return Ok(Self::default()),
            "all" => return Ok(Self::all()),
            _ => {}
        }
        let mut aids = Self::default();
        for name in list.split(',') {
            aids.set(name.trim(), true)?;
        }
        Ok(aids)
    }

    /// The names of those on, in order.
    pub fn on(&self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .filter(|(n, _)| self.get(n) == Some(true))
            .map(|(n, _)| *n)
            .collect()
    }

    /// "none", or the names of those on ("template_lines, plan_gatherings").
    pub fn words(&self) -> String {
        let on = self.on();
        if on.is_empty() {
            "none".into()
        } else {
            on.join(", ")
        }
    }
}

/// How news of gatherings travels (`--set cognition.social.hearsay_invites=false` ablates one).
/// Every decision stays the resident's: these only decide what it is offered to say and asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SocialConfig {
    /// A gathering still ahead that a resident organises or will attend comes first among its
    /// concerns (what it may bring up in any conversation), whatever the model scored its
    /// importance: an organiser has her party on her mind when she meets people.
    pub gatherings_first: bool,
    /// A gathering heard of as news (from someone who may not invite to it) carries the
    /// gathering: the listener is asked whether it goes, as an invitation is answered, and one
    /// who accepts plans it, goes and may invite others. Off: such news is only a fact.
    pub hearsay_invites: bool,
    /// An invitation for a day not yet planned is weighed against the resident's usual day (its
    /// daily routine: work, meals, favourite places) at that time, and a refusal that speaks of
    /// it is a conflict; off: the answer is asked with "no plan made yet".
    pub usual_day: bool,
    /// One of a turn's fact slots is kept for the speaker's own news (the most important fact it
    /// holds first-hand that names it: "Sam Moore is running for mayor"), so that what a resident
    /// heard this morning does not always crowd out what it has to tell of itself; off: facts are
    /// offered newest first only.
    pub own_news: bool,
    /// A listener told a fact it holds already (heard from someone else, whispered, known from
    /// the start) keeps no second hearing of it and says next that it had heard it, and from
    /// whom (news of a gathering that leaves the choice to go is heard again). Off: every
    /// telling is heard as news, again.
    pub already_heard: bool,
    /// An answer to an invitation names what in the plan for that time is in the way (a plan
    /// item shown, or "nothing") before it decides, as a person looks at the day before saying
    /// yes or no; off: the decision first, then what is in the way.
    pub weigh_first: bool,
}

impl Default for SocialConfig {
    fn default() -> Self {
        Self {
            gatherings_first: true,
            hearsay_invites: true,
            usual_day: true,
            own_news: true,
            already_heard: true,
            weigh_first: true,
        }
    }
}

impl Default for CognitionConfig {
    fn default() -> Self {
        Self {
            vision_radius: 8,
            attention_bandwidth: 8,
            retention: 8,
            repeat_minutes: 60,
            reflection_threshold: 150,
            reflection_threshold_likeness: 245,
            reflection_questions: 3,
            reflection_insights: 5,
            reflection_material: 100,
            reflection_retrieve: 30,
            prompt_memories: 10,
            thought_expiry_days: 30,
            retrieval: RetrievalParams::default(),
            ablation: Ablation::Full,
            prompts: "config/prompts".into(),
            pacing: Pacing::Wait,
            play_pacing: Pacing::Live,
            memory_slack_steps: 30,
            importance_by: ImportanceBy::Model,
            importance_batch: 20,
            importance_gather_minutes: 10,
            planning: Planning::Model,
            prefetch_minutes: 120,
            reuse_subtasks: true,
            share_subtasks: true,
            reuse_places: true,
            reuse_likeness: 0.92,
            max_utterances: 12,
            chat_cooldown_minutes: 133,
            react_cooldown_minutes: 60,
            decision_slack_steps: 6,
            talk_max_tiles: 8,
            player_reply_minutes: 10,
            player_reply_seconds: 180,
            interview_in_world: false,
            topic_min_similarity: 0.3,
            ask_lines_again: true,
            whole_dialogue: false,
            talk_temperature: 0.0,
            seed: 42,
            social: SocialConfig::default(),
            aids: Aids::default(),
        }
    }
}

impl CognitionConfig {
    /// Checks values serde cannot.
    pub fn validate(&self, path: &Path, lines: &SourceLines) -> Result<(), DataError> {
        let bad = |field: &str, msg: &str| {
            Err(DataError::new(
                path,
                lines.line_near(field, 0),
                format!("cognition.{field}"),
                msg.to_string(),
            ))
        };
        if self.vision_radius == 0 || self.vision_radius > 64 {
            return bad("vision_radius", "must be 1..=64 tiles");
        }
        if !(0.0..=2.0).contains(&self.talk_temperature) {
            return bad("talk_temperature", "must be between 0 and 2");
        }
        if !(0.0..=1.0).contains(&self.reuse_likeness) {
            return bad("reuse_likeness", "must be between 0 (off) and 1");
        }
        if !(0.0..=1.0).contains(&self.topic_min_similarity) {
            return bad("topic_min_similarity", "must be between 0 and 1");
        }
        if self.repeat_minutes > 24 * 60 {
            return bad("repeat_minutes", "must be 0..=1440 game minutes");
        }
        if self.attention_bandwidth == 0 {
            return bad("attention_bandwidth", "must be at least 1");
        }
        if self.reflection_threshold == 0 {
            return bad("reflection_threshold", "must be at least 1");
        }
        if self.reflection_threshold_likeness == 0 {
            return bad("reflection_threshold_likeness", "must be at least 1");
        }
        if !(1..=10).contains(&self.reflection_questions) {
            return bad("reflection_questions", "must be 1..=10");
        }
        if !(1..=10).contains(&self.reflection_insights) {
            return bad("reflection_insights", "must be 1..=10");
        }
        if self.reflection_retrieve == 0 || self.reflection_retrieve > 100 {
            return bad("reflection_retrieve", "must be 1..=100");
        }
        if self.reflection_material == 0 {
            return bad("reflection_material", "must be at least 1");
        }
        if !(self.retrieval.decay > 0.0 && self.retrieval.decay <= 1.0) {
            return bad("decay", "must be in (0, 1]");
        }
        let w = &self.retrieval;
        if [w.recency_weight, w.relevance_weight, w.importance_weight]
            .iter()
            .any(|x| !x.is_finite() || *x < 0.0)
        {
            return bad("retrieval", "weights must be finite and not negative");
        }
        if self.importance_gather_minutes > 120 {
            return bad("importance_gather_minutes", "must be 0..=120");
        }
        if self.importance_batch == 0 || self.importance_batch > 32 {
            return bad("importance_batch", "must be 1..=32");
        }
        if !(2..=40).contains(&self.max_utterances) {
            return bad("max_utterances", "must be 2..=40");
        }
        if self.prefetch_minutes > 24 * 60 {
            return bad("prefetch_minutes", "must be at most a day (1440)");
        }
        if w.recency_weight + w.relevance_weight + w.importance_weight > 1e6 {
            return bad("retrieval", "weights must add up to at most 1000000");
        }
        // Every other number, in the unit it is counted in: a value past these ranges is a
        // typo (or a hostile file), and none is a setting a run can use.
        const WEEK: u64 = 7 * 24 * 60;
        #[rustfmt::skip]
        let ranges: [(&str, u64, u64, u64, &str); 20] = [
            ("attention_bandwidth", self.attention_bandwidth as u64, 1, 1000, "events"),
            ("retention", self.retention as u64, 0, 100_000, "events"),
            ("reflection_threshold", self.reflection_threshold as u64, 1, 1_000_000, "importance points"),
            ("reflection_threshold_likeness", self.reflection_threshold_likeness as u64, 1, 1_000_000, "importance points"),
            ("reflection_material", self.reflection_material as u64, 1, 100_000, "memories"),
            ("thought_expiry_days", self.thought_expiry_days as u64, 1, 36_500, "days"),
            ("memory_slack_steps", self.memory_slack_steps as u64, 0, 86_400, "steps"),
            ("importance_gather_minutes", self.importance_gather_minutes as u64, 0, 120, "game minutes"),
            ("chat_cooldown_minutes", self.chat_cooldown_minutes as u64, 0, WEEK, "game minutes"),
            ("react_cooldown_minutes", self.react_cooldown_minutes as u64, 0, WEEK, "game minutes"),
            ("decision_slack_steps", self.decision_slack_steps as u64, 0, 86_400, "steps"),
            ("talk_max_tiles", self.talk_max_tiles as u64, 1, 1024, "tiles"),
            ("player_reply_minutes", self.player_reply_minutes as u64, 0, WEEK, "game minutes"),
            ("player_reply_seconds", self.player_reply_seconds as u64, 0, 86_400, "real seconds"),
            ("vision_radius", self.vision_radius as u64, 1, 64, "tiles"),
            ("reflection_retrieve", self.reflection_retrieve as u64, 1, 100, "memories"),
            ("prompt_memories", self.prompt_memories as u64, 1, 100, "memories"),
            ("importance_batch", self.importance_batch as u64, 1, 32, "memories"),
            ("max_utterances", self.max_utterances as u64, 2, 40, "lines"),
            ("repeat_minutes", self.repeat_minutes as u64, 0, 1440, "game minutes"),
        ];
        for (field, v, least, most, unit) in ranges {
            if !(least..=most).contains(&v) {
                return bad(field, &format!("{v} is not {least} to {most} {unit}"));
            }
        }
        if self.prompts.trim().is_empty() {
            return bad(
                "prompts",
                "names the folder of prompt templates; it is empty",
            );
        }
        Ok(())
    }
}

impl CognitionConfig {
    /// The reflection threshold for the importance scorer in use.
    pub fn reflection_threshold_in_use(&self) -> u32 {
        match self.importance_by {
            ImportanceBy::Likeness => self.reflection_threshold_likeness,
            ImportanceBy::Model => self.reflection_threshold,
        }
    }

    /// Settings for a chat model of `parameters` (`--model`): from [`BIG_MODEL_PARAMETERS`] on,
    /// the original's prompts (`prompt_memories` 30) and importance asked of the model (the
    /// bundled config's 10 memories and importance by likeness are for the small default
    /// model). True when they were changed.
    pub fn suit_model(&mut self, parameters: u64) -> bool {
        if parameters < BIG_MODEL_PARAMETERS {
            return false;
        }
        self.prompt_memories = 30;
        self.importance_by = ImportanceBy::Model;
        true
    }

    /// How many retrieved memories a prompt whose original lists `original` lists here.
    pub fn memories_listed(&self, original: usize) -> usize {
        original.min(self.prompt_memories).max(1)
    }
}

/// Parameters from which `--model` takes a model as big ([`CognitionConfig::suit_model`]).
pub const BIG_MODEL_PARAMETERS: u64 = 1_000_000_000;

/// The cognition settings in force.
#[derive(Resource, Debug, Clone, Default)]
pub struct Cognition(pub CognitionConfig);

impl Cognition {
    /// Whether answers apply at once (real-time pacing).
    pub fn real_time(&self) -> bool {
        self.0.pacing == Pacing::RealTime
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_big_model_gets_the_originals_prompts_and_its_own_importance_a_small_one_the_config() {
        let shipped = CognitionConfig {
            prompt_memories: 10,
            importance_by: ImportanceBy::Likeness,
            ..Default::default()
        };
        let mut small = shipped.clone();
        assert!(!small.suit_model(135_000_000));
        assert_eq!(small, shipped);
        let mut big = shipped.clone();
        assert!(big.suit_model(3_200_000_000));
        assert_eq!(
            (big.prompt_memories, big.importance_by),
            (30, ImportanceBy::Model)
        );
        assert_eq!(big.reflection_threshold_in_use(), big.reflection_threshold);
    }

    #[test]
    fn the_reflection_threshold_is_the_one_for_the_importance_scorer_in_use() {
        let mut c = CognitionConfig {
            reflection_threshold: 150,
            reflection_threshold_likeness: 245,
            ..Default::default()
        };
        c.importance_by = ImportanceBy::Model;
        assert_eq!(c.reflection_threshold_in_use(), 150);
        c.importance_by = ImportanceBy::Likeness;
        assert_eq!(c.reflection_threshold_in_use(), 245);
    }
}
