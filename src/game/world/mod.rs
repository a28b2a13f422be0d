//! The town as it is drawn: the pixel art ([`art`], [`sprites`]), the tiles ([`town`], or the
//! town's own Tiled art: [`tiled_art`]), objects and their states ([`objects`]), people and what
//! they say ([`people`]), and the light of the hour ([`daylight`]).

pub mod art;
pub mod daylight;
pub mod objects;
pub mod people;
pub mod sprites;
pub mod tiled_art;
pub mod town;
