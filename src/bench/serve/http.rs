//! The HTTP side of every server this program and its tests start on this machine: hyper's
//! HTTP/1.1 server on a tokio runtime of its own, plain or over TLS (rustls), with the answer
//! written by a plain function of the request's path and body. The stand-in servers of `bench
//! scale` and the pool tests ([`super::standin`]) and the OpenAI-backend tests' scripted servers
//! are all this one server with their own answers.
//!
//! The answer function runs on a thread of its own for each request (tokio's blocking pool), so
//! it may take its time (a modelled delay, a hang the test asks for) without holding any other
//! request back, as a server on another machine would not.

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;

/// The status and body (JSON) for a request's path and body; `None` hangs up without an answer.
pub type Answer = dyn Fn(&str, &[u8]) -> Option<(u16, String)> + Send + Sync;

/// How a server runs.
#[derive(Clone, Default)]
pub struct Options {
    /// The address to listen on; `None` takes a free port on 127.0.0.1.
    pub addr: Option<SocketAddr>,
    /// Keep a connection open for the next request (HTTP/1.1 keep-alive); otherwise each
    /// answer closes its connection.
    pub keep_alive: bool,
    /// Serve HTTPS with this configuration.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Run every thread of the server at the lowest scheduling priority (a stand-in plays a
    /// server on another machine and must not take the simulation's core).
    pub lowest_priority: bool,
}

/// A running server; stops when dropped (requests being answered finish on their own threads).
pub struct HttpServer {
    /// Where it listens.
    pub addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

/// This thread at the lowest scheduling priority (nice 19).
pub fn lowest_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority on this thread's own id changes only its nice value.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
    }
}

impl HttpServer {
    /// Starts a server answering with `answer`.
    pub fn start(answer: Arc<Answer>, options: Options) -> std::io::Result<Self> {
        let low = options.lowest_priority;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            // A thread per request being answered, as many as a pool of a thousand residents
            // keeps open at once.
            .max_blocking_threads(4096)
            .thread_name("http-server")
            .on_thread_start(move || {
                if low {
                    lowest_priority();
                }
            })
            .enable_io()
            .enable_time()
            .build()?;
        let addr = options
            .addr
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let listener = runtime.block_on(tokio::net::TcpListener::bind(addr))?;
        let addr = listener.local_addr()?;
        let tls = options.tls.clone().map(tokio_rustls::TlsAcceptor::from);
        let keep_alive = options.keep_alive;
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let (answer, tls) = (answer.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        Some(acceptor) => {
                            // A failed handshake (a client that does not trust us) ends here.
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                serve(TokioIo::new(stream), answer, keep_alive).await;
                            }
                        }
                        None => serve(TokioIo::new(tcp), answer, keep_alive).await,
                    }
                });
            }
        });
        Ok(Self {
            addr,
            runtime: Some(runtime),
        })
    }

    /// The base URL of an OpenAI-compatible API here (`http://127.0.0.1:PORT/v1`, or `https`).
    pub fn url(&self, https: bool) -> String {
        format!(
            "{}://{}/v1",
            if https { "https" } else { "http" },
            self.addr
        )
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Why a request went unanswered: the answer said to hang up, or its thread failed.
#[derive(Debug)]
struct HangUp;

impl std::fmt::Display for HangUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hung up without an answer")
    }
}

impl std::error::Error for HangUp {}

/// One connection: its requests answered one after another.
async fn serve<I>(io: I, answer: Arc<Answer>, keep_alive: bool)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = service_fn(move |req: Request<Incoming>| {
        let answer = answer.clone();
        async move {
            let path = req.uri().path().to_string();
            let body = req
                .into_body()
                .collect()
                .await
                .map_err(|_| HangUp)?
                .to_bytes();
            let (status, payload) = tokio::task::spawn_blocking(move || answer(&path, &body))
                .await
                .ok()
                .flatten()
                .ok_or(HangUp)?;
            let mut resp = Response::new(Full::new(Bytes::from(payload)));
            *resp.status_mut() =
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            resp.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            Ok::<_, HangUp>(resp)
        }
    });
    // An error (the client went away, an answer that hung up) closes the connection, unanswered.
    let _ = hyper::server::conn::http1::Builder::new()
        .keep_alive(keep_alive)
        .serve_connection(io, service)
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Duration;

    fn raw(addr: SocketAddr, request: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn answers_with_the_functions_status_and_body_and_hangs_up_when_told() {
        let server = HttpServer::start(
            Arc::new(|path: &str, body: &[u8]| {
                (path != "/hang").then(|| (201, format!("{{\"len\": {}}}", body.len())))
            }),
            Options::default(),
        )
        .unwrap();
        // A header's name in any case is read.
        let out = raw(
            server.addr,
            "POST /v1/x HTTP/1.1\r\nHost: h\r\ncontent-LENGTH: 5\r\n\r\nhello",
        );
        assert!(out.starts_with("HTTP/1.1 201"), "{out}");
        assert!(out.contains("content-type: application/json"), "{out}");
        assert!(out.ends_with("{\"len\": 5}"), "{out}");
        let out = raw(server.addr, "GET /hang HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(out, "", "no answer, the connection closed");
    }
}
