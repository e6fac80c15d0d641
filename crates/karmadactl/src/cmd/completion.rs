//! `karmadactl completion SHELL`: the shell completion script, generated from the command definitions so it
//! never drifts from them. Load it as kubectl's: `source <(karmadactl completion bash)`.

use clap_complete::Shell;

#[derive(clap::Args, Debug)]
pub struct CompletionArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the script for `args.shell` completing `command` to `out`.
pub fn run(args: &CompletionArgs, mut command: clap::Command, out: &mut dyn std::io::Write) {
    let name = command.get_name().to_string();
    clap_complete::generate(args.shell, &mut command, name, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use std::io::Write;
    use std::process::{Command, Stdio};

    fn script(shell: Shell) -> String {
        let mut out = Vec::new();
        run(&CompletionArgs { shell }, crate::Cli::command(), &mut out);
        String::from_utf8(out).expect("a script is text")
    }

    #[test]
    fn every_shell_completes_every_subcommand() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = script(shell);
            for subcommand in ["local-up", "join", "get", "plan", "completion"] {
                assert!(text.contains(subcommand), "{shell}: no {subcommand}");
            }
        }
    }

    #[test]
    fn the_bash_script_parses() {
        let mut bash = Command::new("bash")
            .arg("-n")
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("bash is needed to check the script: install bash");
        bash.stdin
            .take()
            .expect("stdin")
            .write_all(script(Shell::Bash).as_bytes())
            .expect("script written");
        let output = bash.wait_with_output().expect("bash ran");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
