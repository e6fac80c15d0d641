//! `pods/exec` and `pods/attach` over the WebSocket channel protocols (`v5.channel.k8s.io`,
//! `v4.channel.k8s.io`): every binary message starts with its channel (0 stdin, 1 stdout,
//! 2 stderr, 3 error, 4 resize; v5 adds 255, "close this channel"). The command's end is one
//! Status on the error channel, as the kubelet writes it: `Success`, or `Failure` with reason
//! `NonZeroExitCode` and an `ExitCode` cause carrying the code (kubectl exits with it).

use std::sync::Arc;

use apimachinery::ApiError;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Path, Request, State};
use axum::response::Response;
use karmada_apiserver::ApiServer;
use karmada_apiserver::respond::error_response;
use serde_json::{Value, json};

use super::{
    admit, bad_request, check_enterable, first, flag, offered_protocols, query_pairs, until_stopped,
};
use crate::container::{self, Container};
use crate::meta;
use crate::shell::{self, Output};

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
/// v5: the client will send no more on the channel in the next byte.
const CLOSE: u8 = 255;

/// How long a container runtime takes to start an exec'd process before it can print. The
/// delay is load-bearing: client-go's WebSocket executor starts its reader before it creates
/// the stream pipes, and drops a message for a stream it has not created yet ("Unknown stream
/// id"). A real runtime's start-up latency hides that race; answering instantly exposes it
/// on a loaded machine.
const EXEC_START: std::time::Duration = std::time::Duration::from_millis(200);

const V5: &str = "v5.channel.k8s.io";
const V4: &str = "v4.channel.k8s.io";

/// Which streams the client asked for.
#[derive(Clone, Copy, Debug)]
struct Streams {
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Exec,
    Attach,
}

pub async fn exec(
    State(server): State<Arc<ApiServer>>,
    Path((namespace, name)): Path<(String, String)>,
    request: Request,
) -> Response {
    start(server, namespace, name, request, Mode::Exec)
        .await
        .unwrap_or_else(|e| error_response(&e))
}

pub async fn attach(
    State(server): State<Arc<ApiServer>>,
    Path((namespace, name)): Path<(String, String)>,
    request: Request,
) -> Response {
    start(server, namespace, name, request, Mode::Attach)
        .await
        .unwrap_or_else(|e| error_response(&e))
}

async fn start(
    server: Arc<ApiServer>,
    namespace: String,
    name: String,
    request: Request,
    mode: Mode,
) -> Result<Response, ApiError> {
    let (mut parts, _body) = request.into_parts();
    let (subresource, action) = match mode {
        Mode::Exec => ("exec", "exec into"),
        Mode::Attach => ("attach", "attach to"),
    };
    let pod = admit(&server, &parts, &namespace, &name, subresource).await?;
    let query = query_pairs(&parts);
    let spec = container::choose(&pod, first(&query, "container")).map_err(bad_request)?;
    let streams = Streams {
        stdin: flag(&query, "stdin"),
        stdout: flag(&query, "stdout"),
        stderr: flag(&query, "stderr"),
        tty: flag(&query, "tty"),
    };
    let argv: Vec<String> = query
        .iter()
        .filter(|(k, _)| k == "command")
        .map(|(_, v)| v.clone())
        .collect();
    if mode == Mode::Exec && argv.is_empty() {
        return Err(ApiError::bad_request(
            "you must specify at least 1 command (command=... in the query)",
        ));
    }
    if !(streams.stdin || streams.stdout || streams.stderr) {
        return Err(ApiError::bad_request(
            "you must specify at least one of stdin, stdout, stderr",
        ));
    }
    check_enterable(&pod, meta::str_at(spec, "/name"), action)?;
    let view = container::view(&pod, spec, &super::referenced(&server, &pod, spec).await?);
    let echoes_stdin = spec.get("stdin").and_then(Value::as_bool) == Some(true);
    let stdin_once = spec.get("stdinOnce").and_then(Value::as_bool) == Some(true);

    let protocol = offered_protocols(&parts.headers)
        .into_iter()
        .find(|p| p == V5 || p == V4);
    let upgrade = WebSocketUpgrade::from_request_parts(&mut parts, &()).await;
    let (Some(protocol), Ok(upgrade)) = (protocol, upgrade) else {
        return Err(ApiError::bad_request(format!(
            "member-sim serves pods/{subresource} over WebSocket (GET, Upgrade: websocket) with subprotocol {V5} or {V4}; SPDY is not served"
        )));
    };
    let v5 = protocol == V5;
    Ok(upgrade
        .protocols([protocol])
        .on_upgrade(move |socket| async move {
            let session = Session {
                socket,
                v5,
                streams,
            };
            let run = async move {
                match mode {
                    Mode::Exec => session.exec(argv, view).await,
                    Mode::Attach => session.attach(echoes_stdin, stdin_once).await,
                }
            };
            until_stopped(&server, run).await;
        }))
}

struct Session {
    socket: WebSocket,
    v5: bool,
    streams: Streams,
}

/// What came in on the socket.
enum Incoming {
    Stdin(Vec<u8>),
    /// The client closed its stdin (v5) or the whole connection.
    StdinClosed,
    Closed,
    Other,
}

impl Session {
    async fn send(&mut self, channel: u8, bytes: &[u8]) -> bool {
        let mut message = Vec::with_capacity(bytes.len() + 1);
        message.push(channel);
        message.extend_from_slice(bytes);
        self.socket
            .send(Message::Binary(message.into()))
            .await
            .is_ok()
    }

    fn classify(&self, data: &[u8]) -> Incoming {
        match data.first() {
            Some(&STDIN) => Incoming::Stdin(data[1..].to_vec()),
            Some(&CLOSE) if self.v5 && data.get(1) == Some(&STDIN) => Incoming::StdinClosed,
            _ => Incoming::Other,
        }
    }

    async fn next(&mut self) -> Incoming {
        match self.socket.recv().await {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => Incoming::Closed,
            // Text frames carry channel bytes too (the Python client sends str stdin as text), as
            // kube-apiserver's WebSocket reader takes both.
            Some(Ok(Message::Binary(data))) => self.classify(&data),
            Some(Ok(Message::Text(text))) => self.classify(text.as_bytes()),
            Some(Ok(_)) => Incoming::Other,
        }
    }

    /// Writes a program's output to the channels asked for; a terminal has one output stream
    /// and turns newlines into CR LF.
    async fn write_output(&mut self, output: &Output) {
        if self.streams.tty {
            let mut merged = output.stdout.clone();
            merged.extend_from_slice(&output.stderr);
            let text = crlf(&merged);
            if self.streams.stdout && !text.is_empty() {
                self.send(STDOUT, &text).await;
            }
            return;
        }
        if self.streams.stdout && !output.stdout.is_empty() {
            self.send(STDOUT, &output.stdout).await;
        }
        if self.streams.stderr && !output.stderr.is_empty() {
            self.send(STDERR, &output.stderr).await;
        }
    }

    async fn finish(mut self, status: Value) {
        self.send(ERROR, status.to_string().as_bytes()).await;
        let _ = self
            .socket
            .send(Message::Close(Some(CloseFrame {
                code: axum::extract::ws::close_code::NORMAL,
                reason: "".into(),
            })))
            .await;
    }

    async fn exec(mut self, argv: Vec<String>, view: Container) {
        let reads_stdin = self.streams.stdin && shell::reads_stdin(&argv);
        if !reads_stdin || self.streams.tty {
            // Nothing arrives from the client before the first output: give it the runtime's
            // start-up time to set up its streams (see EXEC_START).
            tokio::time::sleep(EXEC_START).await;
        }
        if reads_stdin && self.streams.tty {
            return self.interactive(argv, view).await;
        }
        let mut stdin = Vec::new();
        if reads_stdin {
            loop {
                match self.next().await {
                    Incoming::Stdin(bytes) => stdin.extend_from_slice(&bytes),
                    Incoming::StdinClosed => break,
                    Incoming::Closed => return,
                    Incoming::Other => {}
                }
            }
        }
        let status = match shell::run(&argv, &view, &stdin) {
            Ok(output) => {
                self.write_output(&output).await;
                exit_status(&argv, output.exit_code)
            }
            Err(error) => start_failure(&error),
        };
        self.finish(status).await;
    }

    /// A shell on a terminal: the terminal echoes keys, Enter runs the line, `exit` or Ctrl-D
    /// on an empty line ends it.
    async fn interactive(mut self, argv: Vec<String>, view: Container) {
        const PROMPT: &[u8] = b"# ";
        let shell_name = argv.first().cloned().unwrap_or_else(|| "sh".into());
        let mut line: Vec<u8> = Vec::new();
        let mut last = 0;
        self.send(STDOUT, PROMPT).await;
        loop {
            let bytes = match self.next().await {
                Incoming::Stdin(bytes) => bytes,
                Incoming::StdinClosed => break,
                Incoming::Closed => return,
                Incoming::Other => continue,
            };
            for byte in bytes {
                match byte {
                    b'\r' | b'\n' => {
                        self.send(STDOUT, b"\r\n").await;
                        let script = String::from_utf8_lossy(&line).into_owned();
                        line.clear();
                        let command = vec![shell_name.clone(), "-c".into(), script];
                        let output = shell::run(&command, &view, b"").unwrap_or_default();
                        self.write_output(&output).await;
                        last = output.exit_code;
                        if output.exited {
                            return self.finish(exit_status(&argv, last)).await;
                        }
                        self.send(STDOUT, PROMPT).await;
                    }
                    // Ctrl-D on an empty line ends the shell.
                    0x04 if line.is_empty() => {
                        self.send(STDOUT, b"exit\r\n").await;
                        return self.finish(exit_status(&argv, last)).await;
                    }
                    // Backspace / DEL.
                    0x7f | 0x08 => {
                        if line.pop().is_some() {
                            self.send(STDOUT, b"\x08 \x08").await;
                        }
                    }
                    // Ctrl-C drops the line.
                    0x03 => {
                        line.clear();
                        self.send(STDOUT, b"^C\r\n").await;
                        self.send(STDOUT, PROMPT).await;
                    }
                    byte => {
                        line.push(byte);
                        self.send(STDOUT, &[byte]).await;
                    }
                }
            }
        }
        self.finish(exit_status(&argv, last)).await;
    }

    /// The container's main process: echoes its stdin when its spec keeps stdin open
    /// (`stdin: true`), prints nothing otherwise; the session lasts until the client leaves,
    /// or until it closes stdin of a `stdinOnce` container.
    async fn attach(mut self, echoes_stdin: bool, stdin_once: bool) {
        loop {
            match self.next().await {
                Incoming::Stdin(bytes) if echoes_stdin && self.streams.stdout => {
                    let bytes = if self.streams.tty {
                        crlf(&bytes)
                    } else {
                        bytes
                    };
                    if !self.send(STDOUT, &bytes).await {
                        return;
                    }
                }
                Incoming::StdinClosed if stdin_once => {
                    return self
                        .finish(json!({"metadata": {}, "status": "Success"}))
                        .await;
                }
                Incoming::Closed => return,
                _ => {}
            }
        }
    }
}

fn crlf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 8);
    for &b in bytes {
        if b == b'\n' {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

/// The error-channel Status for a finished command, as the kubelet encodes it (a plain Go
/// `metav1.Status`: no kind, empty metadata).
fn exit_status(argv: &[String], code: i32) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!(
            "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
            argv.join(" ")
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
    })
}

/// The error-channel Status when the runtime could not start the command (an internal error,
/// kubectl exits 1 printing it).
fn start_failure(error: &shell::StartError) -> Value {
    let cause = format!(
        "error executing command in container: failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: {error}: unknown"
    );
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("Internal error occurred: {cause}"),
        "reason": "InternalError",
        "details": {"causes": [{"message": cause}]},
        "code": 500,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_carry_the_code_as_kubectl_reads_it() {
        let argv = vec!["sh".to_string(), "-c".to_string(), "exit 3".to_string()];
        assert_eq!(
            exit_status(&argv, 0).to_string(),
            r#"{"metadata":{},"status":"Success"}"#
        );
        assert_eq!(
            exit_status(&argv, 3).to_string(),
            r#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#
        );
        let failed = start_failure(&shell::StartError::NotFound("nginx".into()));
        assert_eq!(failed["reason"], "InternalError");
        assert_eq!(failed["code"], 500);
    }

    #[test]
    fn terminals_get_crlf() {
        assert_eq!(crlf(b"a\nb\n"), b"a\r\nb\r\n");
    }
}
