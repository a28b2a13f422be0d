//! Places found again: an activity a resident's model placed before (the same words,
//! `cognition.reuse_places`), or one like it by its words' embedding (`cognition.reuse_likeness`,
//! [`likeness`]), goes to the arena chosen then, where that arena is still one it would be
//! offered, without asking.

use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::pending::Pending;
use crate::cognition::day::likeness;
use crate::cognition::resident::scratch::{Alike, Scratch};
use bevy::prelude::*;

/// What a resident would be offered for an activity's place now.
pub struct Offer<'a> {
    /// The sectors the model would be offered (the first the fixed one where nothing is asked).
    pub options: &'a [String],
    /// How many of the first options the activity's words name (over 0: the sector is fixed).
    pub named: usize,
    /// The resident's home sector (fixed when there is no option).
    pub home: &'a str,
    /// The arenas of a sector the resident would be offered.
    pub arenas: &'a dyn Fn(&str) -> Vec<String>,
    /// The world's name.
    pub world: &'a str,
}

impl Offer<'_> {
    /// The sector fixed without asking, if one is (one option, or one the activity names).
    fn fixed(&self) -> Option<&str> {
        (self.options.len() <= 1 || self.named > 0)
            .then(|| self.options.first().map_or(self.home, String::as_str))
    }

    /// Whether a place would be asked of the model at all (a sector to choose, or an arena in
    /// the fixed sector).
    fn asks(&self) -> bool {
        match self.fixed() {
            None => true,
            Some(s) => (self.arenas)(s).len() > 1,
        }
    }

    /// The sector of a kept place (`world:sector:arena`) where it may be reused now, with the
    /// first question reusing it saves (`choose_sector`, or `choose_arena` where the sector is
    /// fixed): the sector is the fixed one or among those the model would be offered, and the
    /// arena among that sector's arenas on offer (`None` also where the place would be found
    /// without asking anyway).
    pub fn reusable<'a>(&self, arena: &'a str) -> Option<(&'a str, &'static str)> {
        let mut parts = arena.split(':');
        let (w, sector, a) = (parts.next()?, parts.next()?, parts.next()?);
        if w != self.world || parts.next().is_some() {
            return None;
        }
        let arenas = (self.arenas)(sector);
        if !arenas.iter().any(|x| x == a) {
            return None;
        }
        match self.fixed() {
            Some(fixed) => {
                (fixed == sector && arenas.len() > 1).then_some((sector, "choose_arena"))
            }
            None => self
                .options
                .iter()
                .any(|o| o == sector)
                .then_some((sector, "choose_sector")),
        }
    }
}

/// What a resident's kept places give an activity.
#[derive(Debug, Clone, PartialEq)]
pub enum Kept {
    /// A place kept for it: the arena (`world:sector:arena`), its sector, and the question it
    /// saves.
    Place(String, String, &'static str),
    /// Its words' embedding is asked: nothing is decided until it comes.
    Wait,
    /// Nothing kept holds: the place is asked.
    Ask,
}

/// The place kept for the activity `words` (starting at `start`), if one may be reused under
/// `offer`: the model's place for the same words, else (with likeness in use, where a place
/// would be asked) for the closest like words still offered, asking the words' embedding first.
pub fn kept_place(
    ask: &mut Asker,
    (agent, pending, kept): (Entity, &mut Pending, Option<&Scratch>),
    words: &str,
    start: u32,
    offer: &Offer,
) -> Kept {
    let cfg = &ask.cfg.0;
    let (Some(kept), true) = (kept, cfg.reuse_places) else {
        return Kept::Ask;
    };
    let found = |arena: &str| {
        let (sector, saved) = offer.reusable(arena)?;
        Some(Kept::Place(arena.to_string(), sector.to_string(), saved))
    };
    if let Some(k) = kept.place_of(words).and_then(found) {
        return k;
    }
    if !likeness::in_use(cfg) || !offer.asks() {
        return Kept::Ask;
    }
    if likeness::vector_asked(pending, words) {
        return Kept::Wait;
    }
    match kept.alike_places(words, cfg.reuse_likeness) {
        Alike::NoVector => {
            likeness::ask_vector(ask, agent, pending, words, start);
            Kept::Wait
        }
        Alike::Found(alike) => alike
            .iter()
            .find_map(|(_, arena)| found(arena))
            .unwrap_or(Kept::Ask),
        Alike::Nothing => Kept::Ask,
    }
}
