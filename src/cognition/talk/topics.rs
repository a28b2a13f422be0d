//! What a turn can be about, and the plain words that say it. Before each line the speaker is
//! offered a short list of topics ([`candidates`]) drawn from what it just retrieved and from its
//! current concerns: an invitation to a gathering it organises or goes to, facts it holds that
//! this partner has not heard from it (told, whispered, known from the start; the newest first,
//! one slot kept for its own news, none naming the partner), a reply to what was just said, its
//! own plan, a question for the partner, small talk. The model picks one by number (the shape
//! allows only a listed number) and writes the line; what the listener hears is what the words
//! carry (a line that does not hold up is a filler; only with the `template_lines` aid does
//! [`template_line`] say the topic, and any fact it carries, instead). A listener
//! told a fact it held already owes its next line to saying so, and from whom
//! ([`already_heard`]), as an invitation is owed its answer.

use crate::agent::conversation::{Topic, TopicKind};
use crate::memory::news::{Gathering, fact_of, first_hand};
use crate::memory::stream::{MemoryNode, MemoryStream, NodeId, NodeKind};
use crate::sim::time::GameTime;
use std::collections::HashSet;

/// What the topics of a turn are drawn from.
pub struct TopicInput<'a> {
    /// The speaker.
    pub speaker: &'a str,
    /// The partner.
    pub partner: &'a str,
    /// Now.
    pub now: GameTime,
    /// Memories: those just retrieved, then the speaker's current concerns, best first.
    pub memories: Vec<&'a MemoryNode>,
    /// Facts (and gatherings, as [`Gathering::describe`] writes them) the speaker already told
    /// this partner, or heard from them.
    pub known_to_partner: &'a HashSet<String>,
    /// The topics of this conversation so far.
    pub said_here: &'a [Topic],
    /// The partner's last line, if any.
    pub last_line: Option<&'a str>,
    /// The speaker's next plan item ("serving customers at the counter until 8 PM").
    pub plan_next: Option<String>,
    /// A gathering told as news carries the gathering, so the listener may choose to go
    /// (`cognition.social.hearsay_invites`).
    pub hearsay: bool,
    /// One fact slot is kept for the speaker's own news (`cognition.social.own_news`).
    pub own_news: bool,
}

/// At most this many facts are offered in one turn.
pub const MAX_FACTS: usize = 2;

/// The first word of a name.
fn first_name(n: &str) -> &str {
    n.split_whitespace().next().unwrap_or(n)
}

/// Whether a text names a person: their first name as a word of its own, a possessive included
/// ("Tom's"; not "Tomorrow").
fn names(text: &str, person: &str) -> bool {
    let first = first_name(person);
    if first.is_empty() {
        return false;
    }
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .map(|w| {
            w.trim_end_matches("'s")
                .trim_end_matches("\u{2019}s")
                .trim_matches(|c| c == '\'' || c == '\u{2019}')
        })
        .any(|w| w == first)
}

/// Words that keep something from a person: they name the person and say it is a secret
/// ("a surprise for Klaus", "Tom must not hear of it", "don't tell Maria").
fn kept_from(words: &str, person: &str) -> bool {
    const SECRECY: [&str; 9] = [
        "surprise",
        "secret",
        "must not",
        "mustn't",
        "don't tell",
        "do not tell",
        "not to tell",
        "not find out",
        "not know",
    ];
    if !names(words, person) {
        return false;
    }
    let lower = words.to_lowercase().replace('\u{2019}', "'");
    SECRECY.iter().any(|m| lower.contains(m))
}

/// Whether news was not for a person's ears, as the topics judge it: the fact told names them,
/// or the speaker's memory it came from (`source`, in its words) keeps it from them. What the
/// lab counts as indiscretion in a run's memories.
pub fn about_person(fact: &str, source: Option<&str>, person: &str) -> bool {
    names(fact, person) || source.is_some_and(|w| kept_from(w, person))
}

/// The fact an invitation leaves with the listener.
pub fn gathering_fact(g: &Gathering) -> String {
    if g.organiser.is_empty() {
        format!("there is {}", g.describe())
    } else {
        format!("{} is holding {}", g.organiser, g.describe())
    }
}

/// What a listener says next when told a fact it holds already (`held`, its memory of it):
/// that it had heard it, and from whom (its memory's teller, or none for what it holds
/// first-hand: whispered, known from the start).
pub fn already_heard(teller: &str, fact: &str, held: &MemoryNode) -> Topic {
    let from = held
        .told
        .as_ref()
        .map(|t| t.speaker.clone())
        .unwrap_or_default();
    let whom = match from.as_str() {
        "" => String::new(),
        f if f == teller => " from them".into(),
        f => format!(" from {f}"),
    };
    Topic {
        kind: TopicKind::AlreadyHeard,
        about: format!("tell {teller} you had already heard{whom} that {fact}"),
        source: Some(held.id),
        fact: Some(fact.to_string()),
        gathering: None,
        answer: Some((true, from)),
    }
}

/// Whether a speaker may invite others to a gathering it knows of through this memory: it
/// organises it, accepted it (a commitment), or holds it first-hand (whispered, known).
fn may_invite(n: &MemoryNode, speaker: &str) -> bool {
    let Some(g) = &n.gathering else { return false };
    g.organiser == speaker || n.predicate == "will attend" || first_hand(n)
}

/// The topics a turn may take, best first. An owed answer (to an invitation, or to news heard
/// already) is the only one.
pub fn candidates(input: &TopicInput, owed: Option<&Topic>) -> Vec<Topic> {
    if let Some(t) = owed {
        return vec![t.clone()];
    }
    let said_facts: HashSet<&str> = input
        .said_here
        .iter()
        .filter_map(|t| t.fact.as_deref())
        .collect();
    let mut out: Vec<Topic> = Vec::new();
    // An invitation: one gathering still ahead that the partner has not been invited to.
    if let Some((n, g)) = input.memories.iter().find_map(|n| {
        let g = n.gathering.as_ref()?;
        // Nobody is invited to a gathering about them ("a party for Klaus": the organiser
        // arranges it with them, it is not news) or kept from them.
        (may_invite(n, input.speaker)
            && g.ends() > input.now
            && g.organiser != input.partner
            && !names(&g.describe(), input.partner)
            && !fact_of(n).is_some_and(|w| kept_from(&w, input.partner))
            && !input.known_to_partner.contains(&g.describe())
            && !said_facts.contains(gathering_fact(g).as_str()))
        .then_some((n, g))
    }) {
        out.push(Topic {
            kind: TopicKind::Invitation,
            about: format!("invite {} to {}", input.partner, g.describe()),
            source: Some(n.id),
            fact: Some(gathering_fact(g)),
            gathering: Some(g.clone()),
            answer: None,
        });
    }
    // Facts the partner has not heard from the speaker. Fresh news first ("Did you hear?"):
    // newest first, retrieval order among equals; with `own_news`, the last slot goes to the
    // speaker's own news if none is offered yet.
    let mut newest: Vec<&MemoryNode> = input.memories.to_vec();
    newest.sort_by_key(|n| std::cmp::Reverse(n.created));
    let mut offerable: Vec<(&MemoryNode, String)> = Vec::new();
    for n in newest {
        let Some(words) = fact_of(n) else {
            continue;
        };
        // A gathering is told in its own words, whoever held it first.
        let f = n
            .gathering
            .as_ref()
            .map(gathering_fact)
            .unwrap_or_else(|| words.clone());
        let heard_from_partner = n.told.as_ref().is_some_and(|t| t.speaker == input.partner);
        // Nobody is told news about themselves (wherever the fact names them: "Jane feels
        // that Tom has grown distant" is not for Tom), nor what its memory keeps from them
        // ("Tom must not hear of the dinner at Hobbs Cafe", told as "there is a dinner …").
        let about_partner = names(&f, input.partner) || kept_from(&words, input.partner);
        if heard_from_partner
            || about_partner
            || offerable.iter().any(|(_, o)| *o == f)
            || said_facts.contains(f.as_str())
            || input.known_to_partner.contains(&f)
            || out.iter().any(|t| t.fact.as_deref() == Some(f.as_str()))
        {
            continue;
        }
        offerable.push((n, f));
    }
    let mut chosen: Vec<usize> = (0..offerable.len().min(MAX_FACTS)).collect();
    if input.own_news {
        // The speaker's own news: a fact it holds first-hand that names it, the most important
        // (the newest among equals). It is only offered; the speaker still chooses.
        // A gathering that is over is not news.
        let own = |i: &usize| {
            let (n, f) = &offerable[*i];
            first_hand(n)
                && names(f, input.speaker)
                && n.gathering.as_ref().is_none_or(|g| g.ends() > input.now)
        };
        if !chosen.iter().any(own)
            && let Some(best) = (0..offerable.len())
                .filter(own)
                .max_by_key(|i| (offerable[*i].0.importance, std::cmp::Reverse(*i)))
        {
            chosen.truncate(MAX_FACTS - 1);
            chosen.push(best);
        }
    }
    for i in chosen {
        let (n, f) = (offerable[i].0, offerable[i].1.clone());
        // News of a gathering still ahead leaves the listener the choice to go, unless it is
        // kept from them (checked above) or the listener organises it.
        let gathering = n
            .gathering
            .as_ref()
            .filter(|g| input.hearsay && g.ends() > input.now && g.organiser != input.partner)
            .cloned();
        out.push(Topic {
            kind: TopicKind::Fact,
            about: format!("tell {}: {f}", input.partner),
            source: Some(n.id),
            fact: Some(f),
            gathering,
            answer: None,
        });
    }
    if let Some(l) = input.last_line {
        out.push(Topic::new(
            TopicKind::Reply,
            format!("reply to what {} just said: \"{l}\"", input.partner),
        ));
    }
    let said_kind = |k: TopicKind| input.said_here.iter().any(|t| t.kind == k);
    if let Some(p) = &input.plan_next
        && !said_kind(TopicKind::Plan)
    {
        out.push(Topic::new(
            TopicKind::Plan,
            format!("{}'s plan: {p}", input.speaker),
        ));
    }
    out.push(Topic::new(
        TopicKind::Question,
        format!("ask {} how their day is going", input.partner),
    ));
    out.push(Topic::new(
        TopicKind::SmallTalk,
        format!("small talk with {}", input.partner),
    ));
    out
}

/// A resident's current concerns: the news it holds and the gatherings it knows of that are
/// still ahead, most important first, then newest (at most four). With `own_first` (the
/// resident's name, `cognition.social.gatherings_first`), the gatherings it organises or will
/// attend come before the rest.
pub fn concerns(stream: &MemoryStream, now: GameTime, own_first: Option<&str>) -> Vec<NodeId> {
    let mut v: Vec<&MemoryNode> = stream
        .ids_of(NodeKind::Thought)
        .iter()
        .filter_map(|i| stream.get(*i))
        .filter(|n| n.alive(now))
        .filter(|n| match &n.gathering {
            Some(g) => g.ends() > now,
            None => fact_of(n).is_some(),
        })
        .collect();
    let own = |n: &MemoryNode| {
        own_first.is_some_and(|me| {
            n.gathering
                .as_ref()
                .is_some_and(|g| g.organiser == me || n.predicate == "will attend")
        })
    };
    v.sort_by_key(|n| {
        (
            std::cmp::Reverse(own(n)),
            std::cmp::Reverse(n.importance),
            std::cmp::Reverse(n.created),
        )
    });
    v.into_iter().take(4).map(|n| n.id).collect()
}

/// A sentence ends with a full stop (or its own mark).
fn sentence(s: &str) -> String {
    let s = s.trim();
    if s.ends_with(['.', '!', '?']) {
        s.to_string()
    } else {
        format!("{s}.")
    }
}

/// The plain words for a topic, said when the model's own line does not hold up.
pub fn template_line(t: &Topic, speaker: &str, partner: &str) -> String {
    let (partner_name, partner) = (partner, first_name(partner));
    match t.kind {
        TopicKind::Fact => format!(
            "Did you hear? {}",
            sentence(t.fact.as_deref().unwrap_or(&t.about))
        ),
        TopicKind::Invitation => match &t.gathering {
            Some(g) if g.organiser == speaker => format!(
                "I'm holding {}. Would you like to come, {partner}?",
                g.describe()
            ),
            Some(g) if !g.organiser.is_empty() => format!(
                "{} is holding {}. Would you like to come, {partner}?",
                g.organiser,
                g.describe()
            ),
            Some(g) => format!(
                "There is {}. Would you like to come, {partner}?",
                g.describe()
            ),
            None => sentence(&t.about),
        },
        TopicKind::Answer => match (&t.answer, &t.gathering) {
            (Some((true, _)), Some(g)) => format!(
                "I'd love to come to {} {}!",
                crate::memory::news::strip_article(&g.what),
                g.when_words()
            ),
            (Some((false, why)), _) if !why.is_empty() => {
                format!("Sorry, I can't come: {}", sentence(why))
            }
            _ => "Sorry, I can't come.".into(),
        },
        TopicKind::AlreadyHeard => match t.answer.as_ref().map(|(_, f)| f.as_str()) {
            Some("") | None => "Yes, I knew that already.".into(),
            Some(f) if f == partner_name => "Yes, you told me that already.".into(),
            Some(f) => format!("Yes, I had heard that already, from {}.", first_name(f)),
        },
        TopicKind::Plan => format!(
            "Today I'm {}",
            sentence(t.about.split_once(": ").map(|(_, p)| p).unwrap_or(&t.about))
        ),
        TopicKind::Question => format!("How is your day going, {partner}?"),
        TopicKind::Reply => format!("I see what you mean, {partner}."),
        TopicKind::SmallTalk => format!("Nice to see you, {partner}. How have you been?"),
    }
}

/// What a line is checked against for being on topic: the fact, else what the topic is about.
/// `None` for topics any line fits (a reply, a question, small talk).
pub fn topic_text(t: &Topic) -> Option<&str> {
    match t.kind {
        TopicKind::Fact | TopicKind::Invitation => t.fact.as_deref().or(Some(&t.about)),
        TopicKind::Answer | TopicKind::AlreadyHeard | TopicKind::Plan => Some(&t.about),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::news::Told;
    use crate::memory::stream::NewNode;

    fn now() -> GameTime {
        GameTime::parse("2023-02-13 09:00").unwrap()
    }

    /// The topics of a conversation's first turn: `speaker`, holding all of `stream`, to
    /// `partner`, who has heard nothing from it.
    fn first_offers(speaker: &str, partner: &str, stream: &MemoryStream) -> Vec<Topic> {
        let known = HashSet::new();
        candidates(
            &TopicInput {
                speaker,
                partner,
                now: now(),
                memories: stream.nodes().iter().collect(),
                known_to_partner: &known,
                said_here: &[],
                last_line: None,
                plan_next: None,
                hearsay: false,
                own_news: true,
            },
            None,
        )
    }

    #[test]
    fn topics_offer_news_the_partner_has_not_heard_then_the_rest() {
        let mut s = MemoryStream::default();
        let knows = |d: &str| NewNode {
            predicate: "knows".into(),
            description: d.into(),
            ..Default::default()
        };
        let mayor = s.add(
            NodeKind::Thought,
            knows("Sam Moore is running for mayor"),
            now(),
        );
        let party = s.add(
            NodeKind::Thought,
            NewNode {
                gathering: Some(party()),
                ..knows("Isabella is throwing a party at Hobbs Cafe tomorrow from 5pm to 7pm")
            },
            now(),
        );
        let heard = s.add(
            NodeKind::Thought,
            NewNode {
                told: Some(Told {
                    speaker: "Maria Lopez".into(),
                    source: None,
                    conversation: "c".into(),
                    fact: "Maria likes physics".into(),
                }),
                ..knows("Maria Lopez told me that Maria likes physics")
            },
            now(),
        );
        s.add(
            NodeKind::Event,
            NewNode {
                description: "the bed is idle".into(),
                ..Default::default()
            },
            now(),
        );
        let nodes: Vec<&MemoryNode> = s.nodes().iter().collect();
        let known = HashSet::new();
        let input = TopicInput {
            speaker: "Isabella Rodriguez",
            partner: "Maria Lopez",
            now: now(),
            memories: nodes.clone(),
            known_to_partner: &known,
            said_here: &[],
            last_line: Some("Hi!"),
            plan_next: Some("serving customers until 8 PM".into()),
            hearsay: false,
            own_news: true,
        };
        let c = candidates(&input, None);
        let kinds: Vec<TopicKind> = c.iter().map(|t| t.kind).collect();
        assert_eq!(
            kinds,
            [
                TopicKind::Invitation,
                TopicKind::Fact,
                TopicKind::Reply,
                TopicKind::Plan,
                TopicKind::Question,
                TopicKind::SmallTalk
            ],
            "{c:#?}"
        );
        assert_eq!(c[0].source, Some(party));
        assert_eq!(
            c[1].source,
            Some(mayor),
            "what Maria told is not told back to her"
        );
        assert_ne!(c[1].source, Some(heard));
        assert_eq!(
            template_line(&c[0], "Isabella Rodriguez", "Maria Lopez"),
            "I'm holding a party at Hobbs Cafe on February 14 from 5 PM to 7 PM. Would you like to come, Maria?"
        );
        assert_eq!(
            template_line(&c[1], "Isabella Rodriguez", "Maria Lopez"),
            "Did you hear? Sam Moore is running for mayor."
        );
        // Once told (here or before), a fact and an invitation are not offered again.
        let said = vec![c[0].clone(), c[1].clone()];
        let again = candidates(
            &TopicInput {
                said_here: &said,
                ..input
            },
            None,
        );
        assert!(again.iter().all(|t| !t.kind.news()), "{again:#?}");
        let mut known = HashSet::new();
        known.insert("Sam Moore is running for mayor".to_string());
        let input = TopicInput {
            speaker: "Isabella Rodriguez",
            partner: "Maria Lopez",
            now: now(),
            memories: nodes,
            known_to_partner: &known,
            said_here: &[],
            last_line: None,
            plan_next: None,
            hearsay: false,
            own_news: true,
        };
        let c = candidates(&input, None);
        assert!(c.iter().all(|t| t.kind != TopicKind::Fact));
        // An answer owed is the only topic.
        let owed = Topic::new(TopicKind::Answer, "answer");
        assert_eq!(candidates(&input, Some(&owed)), vec![owed]);
    }

    fn party() -> Gathering {
        Gathering::party_on(now().day() + 1)
    }

    #[test]
    fn a_speakers_own_news_keeps_a_fact_slot_among_fresher_hearsay() {
        let mut s = MemoryStream::default();
        let midnight = GameTime::parse("2023-02-13 00:00").unwrap();
        let knows = |d: &str, importance: u8| NewNode {
            predicate: "knows".into(),
            description: d.into(),
            importance: Some(importance),
            ..Default::default()
        };
        let mayor = s.add(
            NodeKind::Thought,
            knows("Sam Moore is running for mayor", 7),
            midnight,
        );
        let married = s.add(
            NodeKind::Thought,
            knows("Sam Moore is married to Jennifer Moore", 3),
            midnight,
        );
        let heard = |who: &str, fact: &str| NewNode {
            told: Some(Told {
                speaker: who.into(),
                source: None,
                conversation: "c".into(),
                fact: fact.into(),
            }),
            ..knows(&format!("{who} told me that {fact}"), 4)
        };
        let abigail = s.add(
            NodeKind::Thought,
            heard("Latoya Williams", "Abigail likes Rajiv's paintings"),
            GameTime::parse("2023-02-13 08:24").unwrap(),
        );
        let hailey = s.add(
            NodeKind::Thought,
            heard("Hailey Johnson", "Hailey wants to start dating"),
            GameTime::parse("2023-02-13 08:39").unwrap(),
        );
        let facts = |s: &MemoryStream, partner: &str, known: &HashSet<String>, own_news: bool| {
            candidates(
                &TopicInput {
                    speaker: "Sam Moore",
                    partner,
                    now: now(),
                    memories: s.nodes().iter().collect(),
                    known_to_partner: known,
                    said_here: &[],
                    last_line: None,
                    plan_next: None,
                    hearsay: false,
                    own_news,
                },
                None,
            )
            .into_iter()
            .filter(|t| t.kind == TopicKind::Fact)
            .map(|t| t.source.unwrap())
            .collect::<Vec<_>>()
        };
        let none = HashSet::new();
        // The newest hearsay, then the most important of his own news.
        assert_eq!(facts(&s, "Wolfgang Schulz", &none, true), [hailey, mayor]);
        // Off: newest first only, his own news crowded out.
        assert_eq!(
            facts(&s, "Wolfgang Schulz", &none, false),
            [hailey, abigail]
        );
        // Told already: the next of his own news.
        let told: HashSet<String> = ["Sam Moore is running for mayor".to_string()].into();
        assert_eq!(facts(&s, "Wolfgang Schulz", &told, true), [hailey, married]);
        // A fact naming the partner is not theirs to hear, his own or not; none left: hearsay.
        assert_eq!(facts(&s, "Jennifer Moore", &told, true), [hailey, abigail]);
        // Own news already among the newest keeps both slots for news.
        let fresh = s.add(
            NodeKind::Thought,
            knows("Sam Moore will speak at the town hall", 5),
            GameTime::parse("2023-02-13 08:50").unwrap(),
        );
        assert_eq!(facts(&s, "Wolfgang Schulz", &none, true), [fresh, hailey]);
    }

    #[test]
    fn a_gathering_heard_as_news_leaves_the_listener_the_choice_to_go_when_hearsay_is_on() {
        let mut s = MemoryStream::default();
        s.add(
            NodeKind::Thought,
            NewNode {
                predicate: "was told by".into(),
                description: "Klaus Mueller told me that Isabella Rodriguez is holding a party"
                    .into(),
                told: Some(Told {
                    speaker: "Klaus Mueller".into(),
                    source: None,
                    conversation: "c".into(),
                    fact: "Isabella Rodriguez is holding a party".into(),
                }),
                gathering: Some(party()),
                ..Default::default()
            },
            now(),
        );
        let known = HashSet::new();
        let offers = |partner: &str, hearsay: bool| {
            candidates(
                &TopicInput {
                    speaker: "Maria Lopez",
                    partner,
                    now: now(),
                    memories: s.nodes().iter().collect(),
                    known_to_partner: &known,
                    said_here: &[],
                    last_line: None,
                    plan_next: None,
                    hearsay,
                    own_news: true,
                },
                None,
            )
        };
        // Heard second-hand: told as news, not as an invitation (Maria may not invite).
        let on = offers("Tom Moreno", true);
        assert!(
            on.iter().all(|t| t.kind != TopicKind::Invitation),
            "{on:#?}"
        );
        let fact = on.iter().find(|t| t.kind == TopicKind::Fact).unwrap();
        assert_eq!(
            fact.gathering,
            Some(party()),
            "the listener may choose to go"
        );
        let off = offers("Tom Moreno", false);
        let fact = off.iter().find(|t| t.kind == TopicKind::Fact).unwrap();
        assert_eq!(fact.gathering, None, "switched off: only a fact");
        // Its organiser is told nothing to choose.
        let to_her = offers("Isabella Rodriguez", true);
        assert!(to_her.iter().all(|t| t.gathering.is_none()), "{to_her:#?}");
    }

    #[test]
    fn an_organisers_own_gathering_comes_first_among_its_concerns_when_switched_on() {
        let mut s = MemoryStream::default();
        let thought = |d: &str, importance: u8, gathering: Option<Gathering>| NewNode {
            predicate: "knows".into(),
            description: d.into(),
            importance: Some(importance),
            gathering,
            ..Default::default()
        };
        let own = s.add(
            NodeKind::Thought,
            thought(
                "Isabella is throwing a party at Hobbs Cafe",
                1,
                Some(party()),
            ),
            now(),
        );
        for (i, d) in [
            "Sam Moore is running for mayor",
            "Klaus is writing a paper on gentrification",
            "Maria is studying physics",
            "Tom grows tomatoes",
        ]
        .into_iter()
        .enumerate()
        {
            s.add(NodeKind::Thought, thought(d, 5 + i as u8, None), now());
        }
        let by_score = concerns(&s, now(), None);
        assert_eq!(by_score.len(), 4);
        assert!(
            !by_score.contains(&own),
            "scored lowest, the party is not among four concerns by importance"
        );
        let own_first = concerns(&s, now(), Some("Isabella Rodriguez"));
        assert_eq!(own_first[0], own, "{own_first:?}");
        assert_eq!(own_first.len(), 4);
        // Someone else's gathering has no such place.
        assert!(!concerns(&s, now(), Some("Maria Lopez")).contains(&own));
    }

    #[test]
    fn a_fact_that_names_the_partner_anywhere_is_not_offered_to_them() {
        let mut s = MemoryStream::default();
        let fact = s.add(
            NodeKind::Thought,
            NewNode {
                predicate: "knows".into(),
                description: "Jane feels that Tom has grown distant".into(),
                ..Default::default()
            },
            now(),
        );
        let offered_to = |partner: &str| {
            first_offers("Jane Moreno", partner, &s)
                .iter()
                .any(|t| t.source == Some(fact))
        };
        assert!(
            !offered_to("Tom Moreno"),
            "not told to the person it is about"
        );
        assert!(offered_to("John Lin"), "told to someone else");
        assert!(names("Tom's garden is flooded", "Tom Moreno"));
        assert!(names("a gift for Tom\u{2019}s birthday", "Tom Moreno"));
        assert!(!names("Tomorrow is Sunday", "Tom Moreno"));
    }

    /// A gathering about a person ("a surprise party for Klaus") is neither an invitation nor
    /// news for them, and neither is one whose memory says they must not hear of it; others
    /// are invited and told.
    #[test]
    fn a_gathering_about_the_partner_or_kept_from_them_is_not_offered_to_them() {
        let party = |what: &str| Gathering {
            what: what.into(),
            ..party()
        };
        // A stream holding one gathering known in these words.
        let holding = |words: &str, what: &str| {
            let mut s = MemoryStream::default();
            let id = s.add(
                NodeKind::Thought,
                NewNode {
                    predicate: "knows".into(),
                    description: words.into(),
                    gathering: Some(party(what)),
                    ..Default::default()
                },
                now(),
            );
            (s, id)
        };
        let (s, surprise) = holding(
            "Isabella is throwing a surprise party for Klaus at Hobbs Cafe tomorrow from 5pm to 7pm",
            "a surprise party for Klaus",
        );
        let (s2, kept) = holding(
            "Tom must not hear of the dinner at Hobbs Cafe tomorrow from 5pm to 7pm",
            "a dinner",
        );
        let offered = |s: &MemoryStream, partner: &str, id: NodeId| {
            first_offers("Isabella Rodriguez", partner, s)
                .iter()
                .filter(|t| t.source == Some(id))
                .map(|t| t.kind)
                .collect::<Vec<_>>()
        };
        assert!(offered(&s, "Klaus Mueller", surprise).is_empty());
        assert_eq!(
            offered(&s, "Maria Lopez", surprise),
            vec![TopicKind::Invitation]
        );
        assert!(
            offered(&s2, "Tom Moreno", kept).is_empty(),
            "neither told nor invited: it is kept from him"
        );
        assert_eq!(
            offered(&s2, "Maria Lopez", kept),
            vec![TopicKind::Invitation]
        );
        assert!(kept_from(
            "Don\u{2019}t tell Maria about the cake",
            "Maria Lopez"
        ));
        assert!(!kept_from(
            "Isabella wants to invite Maria to the party",
            "Maria Lopez"
        ));
    }

    /// News heard already is said to be known, from whom: the teller of the listener's memory,
    /// the partner itself, or nobody for what the listener holds first-hand.
    #[test]
    fn news_heard_already_is_said_to_be_known_and_from_whom() {
        let fact = "Sam Moore is running for mayor";
        let mut s = MemoryStream::default();
        let heard = |from: &str| NewNode {
            predicate: "was told by".into(),
            description: format!("{from} told me that {fact}"),
            told: Some(Told {
                speaker: from.into(),
                source: None,
                conversation: "c".into(),
                fact: fact.into(),
            }),
            ..Default::default()
        };
        let klaus = s.add(NodeKind::Thought, heard("Klaus Mueller"), now());
        let isabella = s.add(NodeKind::Thought, heard("Isabella Rodriguez"), now());
        let knew = s.add(
            NodeKind::Thought,
            NewNode {
                predicate: "knows".into(),
                description: fact.into(),
                ..Default::default()
            },
            now(),
        );
        let said = |id: NodeId| {
            let t = already_heard("Isabella Rodriguez", fact, s.get(id).unwrap());
            assert_eq!(
                (t.kind, t.source, t.fact.as_deref()),
                (TopicKind::AlreadyHeard, Some(id), Some(fact))
            );
            assert_eq!(topic_text(&t), Some(t.about.as_str()));
            (
                t.about.clone(),
                template_line(&t, "Maria Lopez", "Isabella Rodriguez"),
            )
        };
        assert_eq!(
            said(klaus),
            (
                format!(
                    "tell Isabella Rodriguez you had already heard from Klaus Mueller that {fact}"
                ),
                "Yes, I had heard that already, from Klaus.".into()
            )
        );
        assert_eq!(
            said(isabella),
            (
                format!("tell Isabella Rodriguez you had already heard from them that {fact}"),
                "Yes, you told me that already.".into()
            )
        );
        assert_eq!(
            said(knew),
            (
                format!("tell Isabella Rodriguez you had already heard that {fact}"),
                "Yes, I knew that already.".into()
            )
        );
    }
}
