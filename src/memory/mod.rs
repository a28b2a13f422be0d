//! What an agent remembers, as data and pure functions (no App, no systems): the memory stream
//! and its indexes ([`stream`]), spatial memory ([`spatial`]), retrieval scoring
//! ([`retrieve`]), importance by likeness to a scale's examples ([`importance`]), the reflection trigger ([`reflect`]) and the original project's history
//! files ([`history`]). The systems that fill and read these live in `cognition/`.
//! Everything here serialises with serde, so saves can hold it as it is.

pub mod history;
pub mod importance;
pub mod news;
pub mod reflect;
pub mod retrieve;
pub mod spatial;
pub mod stream;

pub use retrieve::{RecencyMode, RetrievalParams, Scored, retrieve};
pub use spatial::SpatialMemory;
pub use stream::{MemoryNode, MemoryStream, NodeId, NodeKind};
