//! Benchmarks that run the whole simulation (`simulacra bench day`, `sim` and `save`). Those of
//! one part alone stay with it: the LLM runtime's in `llm::bench` and `llm::bench_server`,
//! retrieval's in `memory::bench`.

pub mod day;
pub mod save;
pub mod scale;
