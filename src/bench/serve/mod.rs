//! Servers that benchmarks and tests start: stand-ins that answer every shape after a modelled
//! delay, with no model ([`standin`]), and llama-cpp-python's OpenAI-compatible server on the
//! bundled model ([`llama_cpp_python`]); the HTTP server the stand-ins and the tests' scripted
//! servers are made of ([`http`]).

pub mod http;
pub mod llama_cpp_python;
pub mod standin;
