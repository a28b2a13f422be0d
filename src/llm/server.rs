//! A real OpenAI-compatible server on this machine: llama-cpp-python's, from the virtual
//! environment set-up makes, on 127.0.0.1 and a free port, for the tests and the benchmark
//! against a real server. The guard stops it when dropped (also when a test panics), and the
//! server also stops by itself when this process dies (it watches its standard input).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The pinned llama-cpp-python version set-up installs.
pub const LLAMA_CPP_PYTHON: &str = "0.3.36";

/// The virtual environment set-up installs the server into: `$SIMULACRA_VENV`, or
/// `~/.cache/simulacra/venv` (outside the clone, like the build's target directory).
pub fn venv_dir() -> PathBuf {
    match std::env::var_os("SIMULACRA_VENV") {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            home.join(".cache/simulacra/venv")
        }
    }
}

/// The virtual environment's Python, or what to do when it is missing.
pub fn venv_python() -> Result<PathBuf, String> {
    let p = venv_dir().join("bin/python");
    if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "{} is missing: run ./scripts/setup.sh (it installs llama-cpp-python[server]=={LLAMA_CPP_PYTHON} there; SIMULACRA_VENV names another place)",
            p.display()
        ))
    }
}

/// A running llama-cpp-python server; stopped when dropped.
pub struct LocalServer {
    child: Child,
    /// Base URL for an `OpenAi` backend (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    /// Its port.
    pub port: u16,
    /// Where its output goes.
    pub log: PathBuf,
    /// Seconds from start until `/v1/models` answered.
    pub startup: Duration,
}

/// A port nobody listens on now.
fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// A plain HTTP GET's status line and body, or `None` when nothing answers.
fn http_get(port: u16, path: &str) -> Option<(String, String)> {
    let mut s = TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(500),
    )
    .ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    Some((
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    ))
}

/// The last lines of a log file.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Stops the server when this process's end of its standard input closes (this process exited
/// or was killed), then runs llama-cpp-python's server module with the given arguments.
const WATCHED_SERVER: &str = "import os, runpy, sys, threading\n\
def watch():\n    sys.stdin.read()\n    os._exit(0)\n\
threading.Thread(target=watch, daemon=True).start()\n\
sys.argv = ['llama_cpp.server'] + sys.argv[1:]\n\
runpy.run_module('llama_cpp.server', run_name='__main__')\n";

impl LocalServer {
    /// Starts `python -m llama_cpp.server --model MODEL --host 127.0.0.1 --port PORT
    /// --embedding true EXTRA…` and waits until `/v1/models` answers (up to `ready_within`).
    pub fn start(model: &Path, extra: &[&str], ready_within: Duration) -> Result<Self, String> {
        let python = venv_python()?;
        if !model.exists() {
            return Err(format!(
                "{} is missing: run ./scripts/setup.sh",
                model.display()
            ));
        }
        let mut last_err = String::new();
        // A port found free may be taken before the server binds it: then another one.
        for _ in 0..3 {
            let port = free_port()?;
            let log = std::env::temp_dir().join(format!(
                "simulacra-llama-cpp-python-{}-{port}.log",
                std::process::id()
            ));
            let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
            let err = out
                .try_clone()
                .map_err(|e| format!("{}: {e}", log.display()))?;
            let started = Instant::now();
            let child = Command::new(&python)
                .arg("-c")
                .arg(WATCHED_SERVER)
                .arg("--model")
                .arg(model)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--embedding", "true"])
                .args(extra)
                .stdin(Stdio::piped())
                .stdout(Stdio::from(out))
                .stderr(Stdio::from(err))
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
            let mut me = Self {
                child,
                url: format!("http://127.0.0.1:{port}/v1"),
                port,
                log,
                startup: Duration::ZERO,
            };
            loop {
                if let Some((status, _)) = http_get(port, "/v1/models")
                    && status.contains(" 200")
                {
                    me.startup = started.elapsed();
                    return Ok(me);
                }
                if let Ok(Some(st)) = me.child.try_wait() {
                    last_err = format!(
                        "llama-cpp-python's server exited ({st}) before answering; its log ({}):\n{}",
                        me.log.display(),
                        tail(&me.log, 15)
                    );
                    break;
                }
                if started.elapsed() > ready_within {
                    return Err(format!(
                        "llama-cpp-python's server did not answer /v1/models within {} s; its log ({}):\n{}",
                        ready_within.as_secs(),
                        me.log.display(),
                        tail(&me.log, 15)
                    ));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Err(last_err)
    }

    /// The server's `/v1/models` answer (a check that it still runs).
    pub fn models(&self) -> Option<String> {
        http_get(self.port, "/v1/models").map(|(_, b)| b)
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}
