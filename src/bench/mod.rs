//! The benchmarks (`simulacra bench …`) and the servers they and the tests start, kept out of the
//! library's own folders: the whole simulation ([`day`]: `bench day` and `bench sim`; [`save`];
//! [`scale`]: generated towns on a pool of servers), the LLM runtime alone ([`llm`]: `bench
//! llm`; [`server`]: the embedded model against a real server), retrieval and the embedders
//! ([`retrieval`]); stand-in servers and llama-cpp-python's server ([`serve`]). `bench frames`
//! needs the window and is in `game`.

pub mod day;
pub mod llm;
pub mod retrieval;
pub mod save;
pub mod scale;
pub mod serve;
pub mod server;
