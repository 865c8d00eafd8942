//! The shell process that holds a server: it runs the commands it reads, one per line, answers
//! each with one line, and on end-of-file (the test process gone) runs its clean-up.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    sync::Mutex,
};

#[derive(Debug)]
pub(crate) struct Guardian {
    what: &'static str,
    inner: Mutex<Pipes>,
    /// Kept so the guardian is reaped when the server is dropped.
    child: Mutex<Child>,
}

#[derive(Debug)]
struct Pipes {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Guardian {
    /// Starts `script` under `sh`, with `args` as `$1`…, as the user `command` is set up for.
    pub(crate) fn start(
        what: &'static str,
        mut command: Command,
        script: &str,
        args: &[&str],
    ) -> Self {
        command
            .arg("-c")
            .arg(script)
            .arg("guardian")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start the {what} guardian: {error}"));
        let stdin = child.stdin.take().expect("a piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("a piped stdout"));
        Self {
            what,
            inner: Mutex::new(Pipes { stdin, stdout }),
            child: Mutex::new(child),
        }
    }

    /// Sends `command` and returns the guardian's one-line answer.
    pub(crate) fn ask(&self, command: &str) -> String {
        let mut pipes = self
            .inner
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if !command.is_empty() {
            writeln!(pipes.stdin, "{command}")
                .and_then(|()| pipes.stdin.flush())
                .unwrap_or_else(|error| panic!("the {} guardian is gone: {error}", self.what));
        }
        let mut line = String::new();
        let read = pipes
            .stdout
            .read_line(&mut line)
            .unwrap_or_else(|error| panic!("the {} guardian is gone: {error}", self.what));
        assert!(read > 0, "the {} guardian exited", self.what);
        line.trim_end().to_owned()
    }

    /// Sends `command` and panics unless the answer is `ok`.
    pub(crate) fn expect_ok(&self, command: &str) {
        let answer = self.ask(command);
        assert_eq!(answer, "ok", "{} {command}: {answer}", self.what);
    }
}

impl Drop for Guardian {
    fn drop(&mut self) {
        // Closing its stdin is the guardian's signal to clean up; then wait for it to finish.
        let pipes = self
            .inner
            .get_mut()
            .unwrap_or_else(|poison| poison.into_inner());
        let _ = writeln!(pipes.stdin, "quit");
        let child = self
            .child
            .get_mut()
            .unwrap_or_else(|poison| poison.into_inner());
        let _ = child.wait();
    }
}
