//! Conversations as data: who is talking with whom ([`Talking`]), the conversation itself
//! ([`Conversation`]), the line being said ([`Speech`]), the town's log of every line
//! ([`ConversationLog`]) and the player's side ([`PlayerChat`]); starting a conversation (both
//! walk to meet) and saying a line. What is said is decided in `cognition::converse` (residents)
//! and `play::talk` (the player).

use super::{ActionSource, CurrentAction, GridPos, STAY_HERE, WalkPath};
use crate::memory::NodeId;
use crate::memory::news::Gathering;
use crate::sim::clock::SimClock;
use crate::sim::map::{Tile, WorldMap};
use crate::sim::objects_state::ObjectStates;
use crate::sim::path::path_to_any;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use std::collections::VecDeque;

/// Someone in a conversation (their plan waits meanwhile).
#[derive(Component, Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Talking {
    /// The conversation entity.
    #[serde(with = "crate::sim::entity_serde::entity_bits")]
    pub conversation: Entity,
    /// The other person.
    #[serde(with = "crate::sim::entity_serde::entity_bits")]
    pub partner: Entity,
}

/// A conversation between two people (kept after it ends, for the log).
#[derive(Component, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Conversation {
    /// The two people; the first started it.
    #[serde(with = "crate::sim::entity_serde::entity_pair_bits")]
    pub people: [Entity; 2],
    /// Their names.
    pub names: [String; 2],
    /// (speaker, line), in order.
    pub lines: Vec<(String, String)>,
    /// Index in `people` of who speaks next.
    pub next: usize,
    /// When it began.
    pub started: GameTime,
    /// When it ended.
    pub ended: Option<GameTime>,
    /// A speaker asked to end it; it ends at the next turn.
    pub closing: bool,
    /// Most lines.
    pub max_lines: usize,
    /// When the last line is done being said (the next may start then).
    pub next_turn: GameTime,
    /// What each line was about, in the order of `lines`.
    #[serde(default)]
    pub topics: Vec<Topic>,
    /// A topic each side must speak to next (the answer to an invitation, or that it had heard
    /// the news already), by index in `people`.
    #[serde(default)]
    pub owed: [Option<Topic>; 2],
    /// Whether the whole conversation was asked for in one request
    /// (`cognition.whole_dialogue`).
    #[serde(default)]
    pub whole: bool,
    /// The lines that request wrote, each with its speaker (index in `people`), said in turn as
    /// their time comes.
    #[serde(default)]
    pub script: std::collections::VecDeque<(usize, Line)>,
}

/// What a line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum TopicKind {
    /// A fact the speaker holds (told, whispered, known from the start).
    Fact,
    /// An invitation to a gathering.
    Invitation,
    /// The answer to an invitation.
    Answer,
    /// That the speaker had heard already the fact the partner just told, and from whom.
    AlreadyHeard,
    /// The speaker's own plan for today.
    Plan,
    /// A question about the partner.
    Question,
    /// A reply to what was just said.
    Reply,
    /// Small talk.
    SmallTalk,
}

impl Topic {
    /// A topic of a kind about something, from no memory.
    pub fn new(kind: TopicKind, about: impl Into<String>) -> Self {
        Topic {
            kind,
            about: about.into(),
            source: None,
            fact: None,
            gathering: None,
            answer: None,
        }
    }
}

impl TopicKind {
    /// Whether a line of this kind carries news (something the listener learns).
    pub fn news(self) -> bool {
        matches!(self, TopicKind::Fact | TopicKind::Invitation)
    }
}

/// What a line is about: chosen before the line is written, and recorded with it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Topic {
    /// Which kind.
    pub kind: TopicKind,
    /// What the line should be about, as the prompt shows it.
    pub about: String,
    /// The speaker's memory it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<NodeId>,
    /// The fact the listener learns (facts and invitations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact: Option<String>,
    /// The gathering (invitations and answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gathering: Option<Gathering>,
    /// For an answer: accepted, and why; for news heard already: true, and who had told it to
    /// the speaker (a name, or nothing for what it held first-hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<(bool, String)>,
}

impl Conversation {
    /// How memories name it: "Klaus Mueller and Maria Lopez, 2023-02-13 07:09".
    pub fn label(&self) -> String {
        format!(
            "{} and {}, {} {}",
            self.names[0],
            self.names[1],
            self.started.date_string(),
            self.started.hh_mm()
        )
    }

    /// Whether it is still going on.
    pub fn active(&self) -> bool {
        self.ended.is_none()
    }
}

/// A line being said, shown over the speaker's head until `until`.
#[derive(Component, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Speech {
    /// The words.
    pub text: String,
    /// Shown until then.
    pub until: GameTime,
}

/// One line in the town's conversation log.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoggedLine {
    /// When it was said.
    pub at: GameTime,
    /// The conversation.
    #[serde(with = "crate::sim::entity_serde::entity_bits")]
    pub conversation: Entity,
    /// Who said it.
    pub speaker: String,
    /// To whom.
    pub listener: String,
    /// The words.
    pub text: String,
    /// What it was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<Topic>,
    /// Why the model's own line was not used, when a template or a filler said it instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// For a line about news: whether its words carried the news (`agent::carry`); a line whose
    /// words did not has told nothing, whatever its topic (`None`: not about news, or said
    /// before this was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<bool>,
}

/// Every line said in town, in order.
#[derive(Resource, Debug, Default, Clone)]
pub struct ConversationLog {
    /// The lines (add with [`ConversationLog::push`], which keeps the news index).
    pub lines: Vec<LoggedLine>,
    /// Lines before this index have been heard (their news reached the listener).
    pub heard: usize,
    /// Derived: the lines that carried a fact or a gathering, by the pair of people.
    news: PairNews,
}

/// For each pair of people (names in order), the indices of the lines between them that carried
/// a fact or a gathering, for the lines before `upto` (a town of a thousand says a million lines
/// a day; what two people told each other is looked up for every line they ask for).
#[derive(Debug, Default, Clone)]
struct PairNews {
    upto: usize,
    by_pair: std::collections::HashMap<(String, String), Vec<u32>>,
}

/// The pair's key: the two names in order.
fn pair_key(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// Whether a line told a fact or a gathering: about one, and its words carried it.
fn carries_news(l: &LoggedLine) -> bool {
    l.carried != Some(false)
        && l.topic
            .as_ref()
            .is_some_and(|t| t.fact.is_some() || t.gathering.is_some())
}

impl ConversationLog {
    /// A log of `lines`, the first `heard` of them heard.
    pub fn new(lines: Vec<LoggedLine>, heard: usize) -> Self {
        let mut log = Self {
            lines,
            heard,
            news: PairNews::default(),
        };
        log.index_news();
        log
    }

    /// Adds a line.
    pub fn push(&mut self, line: LoggedLine) {
        self.lines.push(line);
        self.index_news();
    }

    fn index_news(&mut self) {
        for i in self.news.upto..self.lines.len() {
            let l = &self.lines[i];
            if carries_news(l) {
                self.news
                    .by_pair
                    .entry(pair_key(&l.speaker, &l.listener))
                    .or_default()
                    .push(i as u32);
            }
        }
        self.news.upto = self.lines.len();
    }

    /// The lines between `a` and `b` (either way) that carried a fact or a gathering, in order.
    pub fn news_between<'a>(
        &'a self,
        a: &'a str,
        b: &'a str,
    ) -> impl Iterator<Item = &'a LoggedLine> {
        let upto = self.news.upto.min(self.lines.len());
        let indexed = self
            .news
            .by_pair
            .get(&pair_key(a, b))
            .into_iter()
            .flatten()
            .filter_map(|i| self.lines.get(*i as usize));
        // Lines pushed onto `lines` directly are looked through.
        let rest = self.lines[upto..].iter().filter(move |l| {
            carries_news(l)
                && ((l.speaker == a && l.listener == b) || (l.speaker == b && l.listener == a))
        });
        indexed.chain(rest)
    }
}

/// One side of a conversation being started.
pub struct Party<'a> {
    /// The person.
    pub entity: Entity,
    /// Their name.
    pub name: String,
    /// Their action (becomes "chatting with …").
    pub action: &'a mut CurrentAction,
    /// Their walk (they meet halfway).
    pub walk: &'a mut WalkPath,
    /// Where they stand.
    pub pos: GridPos,
    /// Whether the simulation walks them (the player walks on their own).
    pub walks: bool,
}

/// Game seconds it takes to say a line (30 words a minute, at least 10 s).
pub fn speaking_secs(text: &str) -> i64 {
    (text.split_whitespace().count() as i64 * 2).clamp(10, 60)
}

/// Starts a conversation: `a` and `b` walk to meet halfway; both are "chatting" (and leave the objects they
/// were using).
pub fn start_conversation(
    commands: &mut Commands,
    map: &WorldMap,
    clock: &SimClock,
    objects: &mut ObjectStates,
    a: Party,
    b: Party,
    max_lines: usize,
) -> Entity {
    let now = clock.now;
    for p in [&a, &b] {
        if !p.action.address.is_empty() {
            objects.clear_if_by(&p.action.address, &p.name);
        }
    }
    let conv = commands
        .spawn((
            Name::new(format!("conversation of {} and {}", a.name, b.name)),
            Conversation {
                people: [a.entity, b.entity],
                names: [a.name.clone(), b.name.clone()],
                lines: Vec::new(),
                next: 0,
                started: now,
                ended: None,
                closing: false,
                max_lines,
                next_turn: now,
                topics: Vec::new(),
                owed: [None, None],
                whole: false,
                script: Default::default(),
            },
        ))
        .id();
    commands.entity(a.entity).insert(Talking {
        conversation: conv,
        partner: b.entity,
    });
    commands.entity(b.entity).insert(Talking {
        conversation: conv,
        partner: a.entity,
    });
    for (me, other) in [(&a.name, &b.name), (&b.name, &a.name)] {
        let action = if me == &a.name {
            &mut *a.action
        } else {
            &mut *b.action
        };
        *action = CurrentAction {
            description: format!("chatting with {other}"),
            emoji: "💬".into(),
            address: STAY_HERE.into(),
            start: now,
            duration_min: 0,
            source: ActionSource::Reaction,
            event: Some((me.clone(), "chat with".into(), other.clone())),
            object_state: String::new(),
        };
    }
    let goals: Vec<Tile> = b
        .pos
        .tile
        .neighbours()
        .into_iter()
        .filter(|t| map.walkable(*t))
        .collect();
    let path = if a.pos.tile.manhattan(b.pos.tile) <= 1 {
        Vec::new()
    } else {
        path_to_any(map, a.pos.tile, &goals, &|_| false).unwrap_or_default()
    };
    let (to_a, to_b) = if b.walks {
        meeting_walks(&path)
    } else {
        (path, Vec::new())
    };
    a.walk.destination = None;
    a.walk.tiles = to_a.into();
    b.walk.destination = None;
    b.walk.tiles = to_b.into();
    conv
}

/// A line to say: the words, what they are about, and why a template said them (if it did).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Line {
    /// The words.
    pub text: String,
    /// The topic.
    pub topic: Option<Topic>,
    /// The flaw of the model's own line that a template or a filler replaced.
    pub fallback: Option<String>,
    /// About news: whether its words carry it.
    pub carried: Option<bool>,
}

impl From<String> for Line {
    fn from(text: String) -> Self {
        Line {
            text,
            ..Default::default()
        }
    }
}

/// Says a line: it joins the conversation, the town's log and a speech bubble, and the turn
/// passes to the other.
pub fn say_line(
    commands: &mut Commands,
    log: &mut ConversationLog,
    now: GameTime,
    conversation: Entity,
    conv: &mut Conversation,
    speaker: Entity,
    line: impl Into<Line>,
) {
    let Line {
        text,
        topic,
        fallback,
        carried,
    } = line.into();
    let k = if conv.people[0] == speaker { 0 } else { 1 };
    let listener = conv.names[1 - k].clone();
    let name = conv.names[k].clone();
    conv.lines.push((name.clone(), text.clone()));
    // `topics` runs beside `lines` (a conversation from an older save may have none yet).
    while conv.topics.len() + 1 < conv.lines.len() {
        conv.topics.push(Topic {
            kind: TopicKind::Reply,
            about: String::new(),
            source: None,
            fact: None,
            gathering: None,
            answer: None,
        });
    }
    conv.topics.push(topic.clone().unwrap_or(Topic {
        kind: TopicKind::Reply,
        about: String::new(),
        source: None,
        fact: None,
        gathering: None,
        answer: None,
    }));
    conv.next = 1 - k;
    let until = now.plus_secs(speaking_secs(&text));
    conv.next_turn = until;
    log.push(LoggedLine {
        at: now,
        conversation,
        speaker: name,
        listener,
        text: text.clone(),
        topic,
        fallback,
        carried,
    });
    commands.entity(speaker).insert(Speech {
        text,
        until: until.plus_secs(20),
    });
}

/// How two people meet halfway along the path from one to (a tile beside) the other: the first
/// walks the first half, the second walks back along the rest, and they end side by side. A path
/// of two tiles or fewer is walked by the first alone.
pub fn meeting_walks(path: &[Tile]) -> (Vec<Tile>, Vec<Tile>) {
    let n = path.len();
    if n <= 2 {
        return (path.to_vec(), Vec::new());
    }
    let k = n / 2;
    (
        path[..k].to_vec(),
        path[k..].iter().rev().copied().collect(),
    )
}

/// The player's side of conversations.
#[derive(Resource, Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlayerChat {
    /// A conversation asked for (the resident), started in this frame's update.
    #[serde(with = "crate::sim::entity_serde::opt_entity_bits")]
    pub wants: Option<Entity>,
    /// The conversation the player is in (the chat box is open on it).
    #[serde(with = "crate::sim::entity_serde::opt_entity_bits")]
    pub conversation: Option<Entity>,
    /// Lines typed and not yet said.
    pub outbox: VecDeque<String>,
    /// The last problem starting a conversation (shown by the game; also in the console log).
    pub notice: Option<String>,
    /// A window shows a resident's words to the avatar, unanswered: that resident waits for the
    /// answer instead of going on after `cognition.player_reply_minutes` (the game sets it while
    /// the chat box is open, for at most `cognition.player_reply_seconds` real seconds).
    #[serde(skip)]
    pub hold: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The news between two people is found through the index for pushed lines and by a look
    /// through the rest for lines put on the list directly, either way round, in order.
    #[test]
    fn news_between_two_people_is_found_either_way_and_in_order() {
        let line = |i: i64, speaker: &str, listener: &str, fact: Option<&str>| LoggedLine {
            at: GameTime(i),
            conversation: Entity::PLACEHOLDER,
            speaker: speaker.into(),
            listener: listener.into(),
            text: format!("line {i}"),
            topic: Some(Topic {
                kind: TopicKind::Fact,
                about: String::new(),
                source: None,
                fact: fact.map(str::to_string),
                gathering: None,
                answer: None,
            }),
            fallback: None,
            carried: None,
        };
        let mut log = ConversationLog::new(vec![line(0, "Ann", "Bo", Some("a"))], 0);
        log.push(line(1, "Bo", "Ann", Some("b")));
        log.push(line(2, "Ann", "Cy", Some("c")));
        log.push(line(3, "Ann", "Bo", None));
        log.lines.push(line(4, "Bo", "Ann", Some("d")));
        let facts = |a: &str, b: &str| -> Vec<String> {
            log.news_between(a, b)
                .filter_map(|l| l.topic.as_ref()?.fact.clone())
                .collect()
        };
        assert_eq!(facts("Ann", "Bo"), ["a", "b", "d"]);
        assert_eq!(facts("Bo", "Ann"), ["a", "b", "d"]);
        assert_eq!(facts("Cy", "Ann"), ["c"]);
        assert!(facts("Bo", "Cy").is_empty());
        let scan: Vec<&LoggedLine> = log
            .lines
            .iter()
            .filter(|l| carries_news(l) && [&l.speaker, &l.listener].contains(&&"Ann".to_string()))
            .filter(|l| [&l.speaker, &l.listener].contains(&&"Bo".to_string()))
            .collect();
        assert_eq!(log.news_between("Ann", "Bo").collect::<Vec<_>>(), scan);
    }

    #[test]
    fn two_people_meet_halfway_side_by_side() {
        let path: Vec<Tile> = (1..=7).map(|x| Tile::new(x, 0)).collect(); // a at 0, b at 8
        let (a, b) = meeting_walks(&path);
        assert_eq!(a.last(), Some(&Tile::new(3, 0)));
        assert_eq!(
            b,
            vec![
                Tile::new(7, 0),
                Tile::new(6, 0),
                Tile::new(5, 0),
                Tile::new(4, 0)
            ]
        );
        assert_eq!(a.len() + b.len(), path.len(), "each tile walked once");
        let (a, b) = meeting_walks(&path[..2]);
        assert_eq!(
            (a.len(), b.len()),
            (2, 0),
            "a short way is walked by the first alone"
        );
        assert_eq!(meeting_walks(&[]), (vec![], vec![]));
    }
}
