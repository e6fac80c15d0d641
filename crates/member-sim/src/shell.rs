//! The simulated container's programs, for `pods/exec`: `echo`, `env`, `printenv`, `hostname`,
//! `cat`, `ls`, `true`, `false`, `pwd`, `exit N`, and a shell (`sh`/`bash`/`ash`) that runs a
//! script of those: `;`, `&&`, `||` and newlines between commands, single and double quotes,
//! backslash escapes, `$NAME`, `${NAME}` and `$?`. No pipes, redirections, globs or loops.
//!
//! Pure: a command line, the container's view ([`Container`]) and its standard input in; the
//! bytes written to stdout and stderr and the exit status out.

use crate::container::Container;

/// What a finished command produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
    /// The script ran `exit` (an interactive shell then ends).
    pub exited: bool,
}

/// Why a command could not start at all (the runtime's error, not a program's exit status).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    #[error("no command given")]
    Empty,
    #[error(
        "exec: \"{0}\": executable file not found in $PATH (member-sim's containers run echo, env, printenv, hostname, cat, ls, true, false, pwd, exit and sh -c)"
    )]
    NotFound(String),
}

/// Whether `argv` reads its standard input (then the caller gathers stdin before [`run`]).
pub fn reads_stdin(argv: &[String]) -> bool {
    match argv.first().map(|a| program(a)) {
        Some("cat") => argv.len() == 1,
        Some(shell) if is_shell(shell) => !argv.iter().skip(1).any(|a| a == "-c"),
        _ => false,
    }
}

fn program(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn is_shell(name: &str) -> bool {
    matches!(name, "sh" | "bash" | "ash" | "dash")
}

/// Runs `argv` as the container's runtime would exec it.
pub fn run(argv: &[String], container: &Container, stdin: &[u8]) -> Result<Output, StartError> {
    let first = argv.first().ok_or(StartError::Empty)?;
    if !is_known(program(first)) {
        return Err(StartError::NotFound(first.clone()));
    }
    let mut state = State {
        container,
        env: container.env.clone(),
        output: Output::default(),
        last: 0,
        exited: None,
        depth: 0,
        top_exited: false,
    };
    let code = state.command(argv, stdin);
    state.output.exit_code = state.exited.unwrap_or(code);
    state.output.exited = state.top_exited || state.exited.is_some();
    Ok(state.output)
}

fn is_known(name: &str) -> bool {
    is_shell(name)
        || matches!(
            name,
            "echo" | "env" | "printenv" | "hostname" | "cat" | "ls" | "true" | "false" | "pwd"
        )
}

struct State<'a> {
    container: &'a Container,
    env: Vec<(String, String)>,
    output: Output,
    /// `$?`.
    last: i32,
    /// Set by `exit`: the script stops.
    exited: Option<i32>,
    /// Shells nested in shells (`sh -c "sh -c 'exit 2'"`): an inner `exit` ends only its own.
    depth: usize,
    /// The outermost shell ran `exit`.
    top_exited: bool,
}

impl State<'_> {
    fn out(&mut self, text: impl AsRef<[u8]>) {
        self.output.stdout.extend_from_slice(text.as_ref());
    }

    fn err(&mut self, text: impl AsRef<[u8]>) {
        self.output.stderr.extend_from_slice(text.as_ref());
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// One command; its exit status.
    fn command(&mut self, argv: &[String], stdin: &[u8]) -> i32 {
        let Some(first) = argv.first() else {
            return 0;
        };
        let args = &argv[1..];
        match program(first) {
            "echo" => {
                let (newline, words) = match args.first().map(String::as_str) {
                    Some("-n") => (false, &args[1..]),
                    _ => (true, args),
                };
                let mut line = words.join(" ");
                if newline {
                    line.push('\n');
                }
                self.out(line);
                0
            }
            "env" => {
                let text: String = self.env.iter().map(|(n, v)| format!("{n}={v}\n")).collect();
                self.out(text);
                0
            }
            "printenv" => {
                if args.is_empty() {
                    return self.command(&["env".to_string()], stdin);
                }
                let mut code = 0;
                for name in args {
                    match self.var(name).map(str::to_string) {
                        Some(value) => self.out(format!("{value}\n")),
                        None => code = 1,
                    }
                }
                code
            }
            "hostname" => {
                let name = format!("{}\n", self.container.hostname);
                self.out(name);
                0
            }
            "pwd" => {
                self.out("/\n");
                0
            }
            "true" => 0,
            "false" => 1,
            "cat" => self.cat(args, stdin),
            "ls" => self.ls(args),
            "exit" => {
                let code = match args.first() {
                    None => self.last,
                    Some(text) => match text.parse::<i64>() {
                        // A process's status is one byte.
                        Ok(n) => (n & 0xff) as i32,
                        Err(_) => {
                            self.err(format!("sh: exit: Illegal number: {text}\n"));
                            2
                        }
                    },
                };
                self.exited = Some(code);
                code
            }
            shell if is_shell(shell) => {
                self.depth += 1;
                let code = self.shell(shell, args, stdin);
                self.depth -= 1;
                if self.exited.take().is_some() && self.depth == 0 {
                    self.top_exited = true;
                }
                code
            }
            other => {
                self.err(format!("sh: {other}: not found\n"));
                127
            }
        }
    }

    fn shell(&mut self, shell: &str, args: &[String], stdin: &[u8]) -> i32 {
        match args {
            [flag, script, ..] if flag == "-c" => self.script(script),
            [flag] if flag == "-c" => {
                self.err(format!("{shell}: -c: option requires an argument\n"));
                2
            }
            [] => self.script(&String::from_utf8_lossy(stdin)),
            [path, ..] => match self.container.files.get(path.as_str()) {
                Some(bytes) => self.script(&String::from_utf8_lossy(bytes)),
                None => {
                    self.err(format!("{shell}: can't open '{path}': No such file\n"));
                    2
                }
            },
        }
    }

    fn cat(&mut self, args: &[String], stdin: &[u8]) -> i32 {
        if args.is_empty() {
            self.out(stdin);
            return 0;
        }
        let mut code = 0;
        for path in args {
            if path == "-" {
                self.out(stdin);
            } else if let Some(bytes) = self.container.files.get(path.as_str()) {
                let bytes = bytes.clone();
                self.out(bytes);
            } else if self.is_dir(path) {
                self.err(format!("cat: {path}: Is a directory\n"));
                code = 1;
            } else {
                self.err(format!("cat: {path}: No such file or directory\n"));
                code = 1;
            }
        }
        code
    }

    fn is_dir(&self, path: &str) -> bool {
        let prefix = format!("{}/", path.trim_end_matches('/'));
        path == "/" || self.container.files.keys().any(|f| f.starts_with(&prefix))
    }

    fn ls(&mut self, args: &[String]) -> i32 {
        let target = args.first().map(String::as_str).unwrap_or("/");
        if self.container.files.contains_key(target) {
            self.out(format!("{target}\n"));
            return 0;
        }
        if !self.is_dir(target) {
            self.err(format!(
                "ls: cannot access '{target}': No such file or directory\n"
            ));
            return 2;
        }
        let prefix = format!("{}/", target.trim_end_matches('/'));
        let mut entries: Vec<&str> = self
            .container
            .files
            .keys()
            .filter_map(|f| f.strip_prefix(&prefix))
            .map(|rest| rest.split('/').next().unwrap_or(rest))
            .collect();
        entries.dedup();
        let text: String = entries.iter().map(|e| format!("{e}\n")).collect();
        self.out(text);
        0
    }

    /// A script: lists of commands joined by `;`, `&&`, `||`. Variables are expanded as each
    /// command runs, so `$?` is the status of the one before.
    fn script(&mut self, text: &str) -> i32 {
        let tokens = match tokenize(text) {
            Ok(tokens) => tokens,
            Err(message) => {
                self.err(format!("sh: syntax error: {message}\n"));
                return 2;
            }
        };
        let mut words: Vec<Word> = Vec::new();
        let mut skip = false;
        let mut code = self.last;
        for token in tokens.into_iter().chain([Token::Op(Op::Seq)]) {
            match token {
                Token::Word(word) => words.push(word),
                Token::Op(op) => {
                    if !words.is_empty() && !skip {
                        let argv: Vec<String> = words.iter().map(|w| self.expand(w)).collect();
                        code = self.command(&argv, &[]);
                        self.last = code;
                        if self.exited.is_some() {
                            return code;
                        }
                    }
                    words.clear();
                    skip = match op {
                        Op::Seq => false,
                        Op::And => code != 0,
                        Op::Or => code == 0,
                    };
                }
            }
        }
        code
    }

    fn expand(&self, word: &Word) -> String {
        word.iter()
            .map(|piece| match piece {
                Piece::Text(text) => text.clone(),
                Piece::Var(name) if name == "?" => self.last.to_string(),
                Piece::Var(name) => self.var(name).unwrap_or_default().to_string(),
            })
            .collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Seq,
    And,
    Or,
}

/// Part of a word: literal text, or a variable expanded when its command runs.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Var(String),
}

type Word = Vec<Piece>;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(Word),
    Op(Op),
}

/// A word being read.
#[derive(Default)]
struct Reading {
    pieces: Word,
    text: String,
    started: bool,
}

impl Reading {
    fn push(&mut self, c: char) {
        self.started = true;
        self.text.push(c);
    }

    fn var(&mut self, name: String) {
        self.started = true;
        if !self.text.is_empty() {
            self.pieces
                .push(Piece::Text(std::mem::take(&mut self.text)));
        }
        self.pieces.push(Piece::Var(name));
    }

    /// Ends the word, if one was started (`''` is an empty word).
    fn finish(&mut self, tokens: &mut Vec<Token>) {
        if !self.started {
            return;
        }
        if !self.text.is_empty() || self.pieces.is_empty() {
            self.pieces
                .push(Piece::Text(std::mem::take(&mut self.text)));
        }
        tokens.push(Token::Word(std::mem::take(&mut self.pieces)));
        self.started = false;
    }
}

/// The variable name after a `$`, if one is there (`$` alone is a literal dollar).
fn variable(chars: &mut std::iter::Peekable<std::str::Chars>) -> Option<String> {
    match chars.peek() {
        Some('{') => {
            chars.next();
            Some(chars.by_ref().take_while(|c| *c != '}').collect())
        }
        Some('?') => {
            chars.next();
            Some("?".to_string())
        }
        Some(c) if c.is_ascii_alphabetic() || *c == '_' => {
            let mut name = String::new();
            while let Some(c) = chars.peek().copied() {
                if c.is_ascii_alphanumeric() || c == '_' {
                    name.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            Some(name)
        }
        _ => None,
    }
}

/// Splits a script into words (quotes removed, variables marked) and operators. No
/// assignments: the environment is the container's.
fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut word = Reading::default();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => word.finish(&mut tokens),
            '\n' | ';' => {
                word.finish(&mut tokens);
                tokens.push(Token::Op(Op::Seq));
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                word.finish(&mut tokens);
                tokens.push(Token::Op(Op::And));
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                word.finish(&mut tokens);
                tokens.push(Token::Op(Op::Or));
            }
            '|' | '&' | '<' | '>' | '`' | '(' | ')' => {
                return Err(format!(
                    "{c:?} is not simulated (only ;, &&, || and quoting)"
                ));
            }
            '#' if !word.started => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        tokens.push(Token::Op(Op::Seq));
                        break;
                    }
                }
            }
            '\'' => {
                word.started = true;
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == '\'' {
                        closed = true;
                        break;
                    }
                    word.push(c);
                }
                if !closed {
                    return Err("unterminated quoted string".into());
                }
            }
            '"' => {
                word.started = true;
                let mut closed = false;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => match chars.next() {
                            Some(n @ ('"' | '\\' | '$' | '`')) => word.push(n),
                            Some('\n') | None => {}
                            Some(n) => {
                                word.push('\\');
                                word.push(n);
                            }
                        },
                        '$' => match variable(&mut chars) {
                            Some(name) => word.var(name),
                            None => word.push('$'),
                        },
                        c => word.push(c),
                    }
                }
                if !closed {
                    return Err("unterminated quoted string".into());
                }
            }
            '\\' => match chars.next() {
                Some('\n') | None => word.started = true,
                Some(n) => word.push(n),
            },
            '$' => match variable(&mut chars) {
                Some(name) => word.var(name),
                None => word.push('$'),
            },
            c => word.push(c),
        }
    }
    word.finish(&mut tokens);
    Ok(tokens)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn container() -> Container {
        Container {
            name: "app".into(),
            hostname: "web-0".into(),
            env: vec![
                ("PATH".into(), "/bin".into()),
                ("GREETING".into(), "hello there".into()),
            ],
            files: [
                ("/etc/hostname".to_string(), b"web-0\n".to_vec()),
                ("/etc/app/mode".to_string(), b"fast".to_vec()),
            ]
            .into(),
        }
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    fn sh(script: &str) -> Output {
        run(&argv(&["sh", "-c", script]), &container(), b"").unwrap()
    }

    fn out(stdout: &str, stderr: &str, exit_code: i32) -> Output {
        Output {
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            exit_code,
            exited: false,
        }
    }

    fn same(got: &Output, want: &Output) -> bool {
        (&got.stdout, &got.stderr, got.exit_code) == (&want.stdout, &want.stderr, want.exit_code)
    }

    #[test]
    fn commands_and_scripts() {
        let cases: &[(&str, Output)] = &[
            ("echo hi", out("hi\n", "", 0)),
            ("echo -n a  b", out("a b", "", 0)),
            (
                "echo \"$GREETING\"'!' ${GREETING}",
                out("hello there! hello there\n", "", 0),
            ),
            ("echo 'a;b' \"c && d\"", out("a;b c && d\n", "", 0)),
            ("hostname; cat /etc/app/mode", out("web-0\nfast", "", 0)),
            ("exit 3", out("", "", 3)),
            ("exit 300", out("", "", 44)),
            ("echo a; exit 4; echo b", out("a\n", "", 4)),
            ("false || echo recovered", out("recovered\n", "", 0)),
            ("false && echo never", out("", "", 1)),
            ("false; echo $?", out("1\n", "", 0)),
            ("true && echo yes || echo no", out("yes\n", "", 0)),
            ("printenv GREETING NOPE", out("hello there\n", "", 1)),
            (
                "cat /nope",
                out("", "cat: /nope: No such file or directory\n", 1),
            ),
            ("cat /etc", out("", "cat: /etc: Is a directory\n", 1)),
            ("ls /etc/app", out("mode\n", "", 0)),
            ("ls /etc", out("app\nhostname\n", "", 0)),
            ("frobnicate", out("", "sh: frobnicate: not found\n", 127)),
            ("echo # a comment\necho next", out("\nnext\n", "", 0)),
            (
                "echo a | cat",
                out(
                    "",
                    "sh: syntax error: '|' is not simulated (only ;, &&, || and quoting)\n",
                    2,
                ),
            ),
            (
                "echo 'open",
                out("", "sh: syntax error: unterminated quoted string\n", 2),
            ),
            ("sh -c 'exit 7'", out("", "", 7)),
            ("sh -c 'exit 7'; echo after $?", out("after 7\n", "", 0)),
        ];
        for (script, want) in cases {
            let got = sh(script);
            assert!(
                same(&got, want),
                "{script:?}: got stdout {:?} stderr {:?}",
                String::from_utf8_lossy(&got.stdout),
                String::from_utf8_lossy(&got.stderr)
            );
        }
    }

    #[test]
    fn direct_exec_env_and_stdin() {
        let env = run(&argv(&["/usr/bin/env"]), &container(), b"").unwrap();
        assert_eq!(
            String::from_utf8(env.stdout).unwrap(),
            "PATH=/bin\nGREETING=hello there\n"
        );
        let echoed = run(&argv(&["cat"]), &container(), b"piped\n").unwrap();
        assert_eq!(echoed.stdout, b"piped\n");
        let script = run(&argv(&["sh"]), &container(), b"echo from stdin\nexit 2\n").unwrap();
        assert!(same(&script, &out("from stdin\n", "", 2)));
        assert!(script.exited);
        assert!(!sh("echo exit").exited);
        assert!(reads_stdin(&argv(&["cat"])));
        assert!(reads_stdin(&argv(&["/bin/sh"])));
        assert!(!reads_stdin(&argv(&["sh", "-c", "cat"])));
        assert_eq!(
            run(&argv(&["nginx", "-s"]), &container(), b""),
            Err(StartError::NotFound("nginx".into()))
        );
        assert_eq!(run(&[], &container(), b""), Err(StartError::Empty));
    }

    proptest! {
        /// Any single-quoted text comes back from `echo` unchanged.
        #[test]
        fn single_quotes_keep_text(text in "[^'\\x00]{0,40}") {
            let got = sh(&format!("echo '{text}'"));
            prop_assert_eq!(got.stdout, format!("{text}\n").into_bytes());
            prop_assert_eq!(got.exit_code, 0);
        }

        /// `exit N` reports N modulo 256, whatever ran before it.
        #[test]
        fn exit_codes_are_one_byte(code in 0i64..100_000, before in "(echo x; |true; |false; )*") {
            let got = sh(&format!("{before}exit {code}"));
            prop_assert_eq!(i64::from(got.exit_code), code % 256);
        }
    }
}
