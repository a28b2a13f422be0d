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
            "{} is missing: run ./scripts/test.sh or ./scripts/setup.sh test (it installs llama-cpp-python[server]=={LLAMA_CPP_PYTHON} there; SIMULACRA_VENV names another place)",
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
    /// Leave the log when dropped (a start that failed names it in its error).
    keep_log: bool,
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

/// Where a starting server stands, from what can be seen of it.
#[derive(Debug, PartialEq, Eq)]
enum Readiness {
    /// Ours answers on its port.
    Ready,
    /// Not yet (loading the model, or something else answers while ours has not bound).
    Waiting,
}

/// Whether our server is ready: `/v1/models` on the port answered 200, our child still runs,
/// and its log says uvicorn runs on that very port. Any server on the port answers the first
/// (a port found free can be taken before our child binds it, and it loads the model before
/// binding); only ours writes the last.
fn readiness(status_line: Option<&str>, child_running: bool, log: &str, port: u16) -> Readiness {
    let answered = status_line.is_some_and(|s| s.contains(" 200"));
    let ours = log.contains(&format!("Uvicorn running on http://127.0.0.1:{port} "));
    if answered && child_running && ours {
        Readiness::Ready
    } else {
        Readiness::Waiting
    }
}

impl LocalServer {
    /// Starts `python -m llama_cpp.server --model MODEL --host 127.0.0.1 --port PORT
    /// --embedding true EXTRA…` and waits until `/v1/models` answers (up to `ready_within`).
    /// When it cannot, its log is kept and named in the error.
    pub fn start(model: &Path, extra: &[&str], ready_within: Duration) -> Result<Self, String> {
        let python = venv_python()?;
        Self::start_with(&python, model, extra, ready_within)
    }

    fn start_with(
        python: &Path,
        model: &Path,
        extra: &[&str],
        ready_within: Duration,
    ) -> Result<Self, String> {
        if !model.exists() {
            return Err(format!(
                "{} is missing: run ./scripts/setup.sh",
                model.display()
            ));
        }
        let mut last_err = String::new();
        // Logs of tries that failed: the last is kept for the error, the others are removed.
        let mut failed_logs: Vec<PathBuf> = Vec::new();
        let remove = |logs: &[PathBuf]| {
            for l in logs {
                let _ = std::fs::remove_file(l);
            }
        };
        let started_all = Instant::now();
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
            let child = Command::new(python)
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
                keep_log: false,
            };
            loop {
                let answer = http_get(port, "/v1/models");
                let exited = me.child.try_wait().ok().flatten();
                let log_text = match &answer {
                    Some(_) => std::fs::read_to_string(&me.log).unwrap_or_default(),
                    None => String::new(),
                };
                if readiness(
                    answer.as_ref().map(|(s, _)| s.as_str()),
                    exited.is_none(),
                    &log_text,
                    port,
                ) == Readiness::Ready
                {
                    me.startup = started.elapsed();
                    remove(&failed_logs);
                    return Ok(me);
                }
                if let Some(st) = exited {
                    last_err = format!(
                        "llama-cpp-python's server exited ({st}) before answering{}; its log ({}):\n{}",
                        if answer.is_some() {
                            format!(" (another program answers on port {port})")
                        } else {
                            String::new()
                        },
                        me.log.display(),
                        tail(&me.log, 15)
                    );
                    me.keep_log = true;
                    failed_logs.push(me.log.clone());
                    break;
                }
                if started_all.elapsed() > ready_within {
                    remove(&failed_logs);
                    me.keep_log = true;
                    return Err(format!(
                        "llama-cpp-python's server did not answer /v1/models within {} s{}; its log ({}):\n{}",
                        ready_within.as_secs(),
                        if answer.is_some() {
                            format!(
                                " (something answers on port {port}, but the log does not say our server runs there)"
                            )
                        } else {
                            String::new()
                        },
                        me.log.display(),
                        tail(&me.log, 15)
                    ));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        if let Some((_, earlier)) = failed_logs.split_last() {
            remove(earlier);
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
        if !self.keep_log {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A folder for one test, with a stand-in model file and a stand-in "python" running `script`.
    fn stand_in(name: &str, script: &str) -> (PathBuf, PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "simulacra-server-test-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let model = dir.join("model.gguf");
        std::fs::write(&model, "not a model").unwrap();
        let python = dir.join("python");
        std::fs::write(&python, script.replace("DIR", &dir.display().to_string())).unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        (dir, python, model)
    }

    /// The log path an error names.
    fn named_log(err: &str) -> PathBuf {
        let start = err.find("its log (").expect("the error names the log") + 9;
        let end = start + err[start..].find(')').unwrap();
        PathBuf::from(&err[start..end])
    }

    #[test]
    fn only_our_own_server_on_its_port_is_ready() {
        let ok = Some("HTTP/1.1 200 OK");
        let log = "INFO:     Uvicorn running on http://127.0.0.1:41557 (Press CTRL+C to quit)";
        assert_eq!(readiness(ok, true, log, 41557), Readiness::Ready);
        // Someone else answers while ours loads its model, or after ours has exited.
        assert_eq!(readiness(ok, true, "loading…", 41557), Readiness::Waiting);
        assert_eq!(readiness(ok, false, log, 41557), Readiness::Waiting);
        // Another port's line (a prefix of ours) is not ours.
        assert_eq!(readiness(ok, true, log, 4155), Readiness::Waiting);
        assert_eq!(readiness(None, true, log, 41557), Readiness::Waiting);
        assert_eq!(
            readiness(Some("HTTP/1.1 503 Service Unavailable"), true, log, 41557),
            Readiness::Waiting
        );
    }

    #[test]
    fn a_server_that_exits_leaves_its_log_for_the_error() {
        let (dir, python, model) = stand_in(
            "exits",
            "#!/bin/sh\necho 'ERROR: [Errno 98] error while attempting to bind: address already in use' >&2\nexit 1\n",
        );
        let err = LocalServer::start_with(&python, &model, &[], Duration::from_secs(20))
            .err()
            .expect("the stand-in never answers");
        assert!(err.contains("exited") && err.contains("Errno 98"), "{err}");
        let log = named_log(&err);
        let text =
            std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        assert!(text.contains("Errno 98"), "{text}");
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn another_program_answering_on_the_port_is_not_taken_for_ours() {
        // The stand-in never binds; it says which port it was given, and a foreign "server"
        // takes that port and answers /v1/models with 200.
        let (dir, python, model) = stand_in(
            "foreign",
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --port ]; then echo \"$2\" > DIR/port.tmp; mv DIR/port.tmp DIR/port; fi\n  shift\ndone\nexec sleep 30\n",
        );
        // Another program's server on the port the stand-in is given: the shared HTTP server,
        // answering `{}` to everything.
        let answered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let foreign = {
            let (dir, answered) = (dir.clone(), answered.clone());
            std::thread::spawn(move || {
                let port: u16 = loop {
                    if let Some(p) = std::fs::read_to_string(dir.join("port"))
                        .ok()
                        .and_then(|t| t.trim().parse().ok())
                    {
                        break p;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                };
                super::super::http::HttpServer::start(
                    std::sync::Arc::new(move |_: &str, _: &[u8]| {
                        answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        Some((200, "{}".to_string()))
                    }),
                    super::super::http::Options {
                        addr: Some(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
                        ..Default::default()
                    },
                )
                .unwrap()
            })
        };
        let err = LocalServer::start_with(&python, &model, &[], Duration::from_secs(2))
            .err()
            .expect("a foreign server is not ours");
        let foreign = foreign.join().unwrap();
        assert!(
            answered.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "the foreign server was asked"
        );
        drop(foreign);
        assert!(err.contains("something answers on port"), "{err}");
        let log = named_log(&err);
        assert!(log.is_file(), "{err}");
        let _ = std::fs::remove_file(log);
        let _ = std::fs::remove_dir_all(dir);
    }
}
