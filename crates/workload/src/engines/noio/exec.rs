//! fio's `ioengine=exec`: a job that moves no data and runs a program for
//! its runtime, typically a monitor beside the jobs that load the machine
//! (fio's examples/exec.fio runs turbostat while cpuio jobs burn).
//!
//! The options, as fio's (HOWTO, engines/exec.c):
//!
//! - `program` (required): the program, found on `PATH` when it has no
//!   '/' (execvp).
//! - `arguments`: its arguments, split at spaces (no quoting, as fio);
//!   `%r` is replaced by the job's runtime in whole seconds (0 without
//!   one), then `%n` by the job's name.
//! - `grace_time` (s, default 1): at the end of the runtime the program
//!   gets SIGTERM, then this long to end before SIGKILL.
//! - `std_redirect` (default 1): the program's standard output and error
//!   go to `<jobname>.stdout` and `<jobname>.stderr` in the current
//!   directory (created, truncated, mode 0644); with 0 they are
//!   drivelab's own.
//!
//! The program starts when the job starts; the job looks at it every
//! 50 ms (fio's engine sleeps 50 ms per "I/O" and thinks 50 ms after it),
//! each look one "I/O" of no bytes ([`crate::engines::noio`]).
//!
//! Where drivelab differs from fio 3.33, each time to say what happened:
//!
//! - The program's end is reflected in the job's error: a program that
//!   ends on its own before the job's end with a non-zero status (or by
//!   a signal drivelab did not send) fails the job, its `error` the exit
//!   status (128 + the signal for a signal, as a shell's `$?`) and its
//!   error detail saying so. fio never collects the program's status (its
//!   `error` stays 0). Ending on its own with status 0 is no error, and
//!   the job goes on to its runtime, as fio's does. How the program ends
//!   after drivelab's SIGTERM or SIGKILL is no error either.
//! - After SIGTERM, the job waits for the program at most `grace_time`,
//!   not always the whole of it as fio does, and collects it.
//! - A job without a runtime lasts as long as its program (fio's never
//!   ends: it sends SIGTERM every 100 ms).
//! - `program` is looked for before anything runs: one that is not found
//!   or not executable is refused (exit status 2) rather than failing in
//!   fio's forked child.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use drivelab_device::output::{Output, OutputFile};

use crate::engines::noio::tally::{End, Tally};
pub use crate::engines::opts::noio::ExecOpts;
use crate::job::outcome::JobError;
pub use crate::job::types::ProgramFailure;

/// How long each look at the program sleeps, and the think time after it
/// (fio's engine sets both to 50 ms).
pub const POLL: Duration = Duration::from_millis(50);

/// `arguments` with fio's `%r` (the runtime in whole seconds) and then
/// `%n` (the job's name) replaced.
pub fn expand(arguments: &str, runtime_s: u64, name: &str) -> String {
    arguments
        .replace("%r", &runtime_s.to_string())
        .replace("%n", name)
}

/// The command line fio runs: the program and its expanded arguments,
/// split at spaces (empty pieces dropped).
pub fn argv(program: &str, arguments: Option<&str>, runtime_s: u64, name: &str) -> Vec<String> {
    let line = match arguments {
        Some(a) => format!("{program} {}", expand(a, runtime_s, name)),
        None => program.to_string(),
    };
    line.split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where `program` is: itself when it holds a '/', else the first
/// executable of that name on `PATH` (as execvp looks).
fn locate(program: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

/// An exec job's checks before anything runs: a program, found and
/// executable (the message names the key).
pub fn check(spec: &crate::JobSpec) -> Result<(), String> {
    let Some(program) = spec.engine.noio.exec.program.as_deref() else {
        return Err(format!(
            "job '{}': ioengine=exec needs program (the program to run, e.g. program=/usr/bin/vmstat)",
            spec.name
        ));
    };
    let first = argv(program, None, 0, &spec.name)
        .into_iter()
        .next()
        .unwrap_or_default();
    if locate(&first).is_none() {
        return Err(format!(
            "job '{}': program={program}: no executable file of that name{}; give its path",
            spec.name,
            if first.contains('/') { "" } else { " on PATH" }
        ));
    }
    Ok(())
}

/// The program's standard output and error files (`std_redirect`).
pub fn redirect_names(job: &str) -> (String, String) {
    (format!("{job}.stdout"), format!("{job}.stderr"))
}

/// A redirect file through the device crate's output rules: the program
/// writes a temporary file beside it, put in place when the job ends.
fn output_file(name: &str) -> Result<(OutputFile, std::fs::File), JobError> {
    let mut f = Output::new(name)
        .option("std_redirect")
        .mode(0o644)
        .create()
        .map_err(|e| JobError::Config(e.to_string()))?;
    let fd = f
        .try_clone_file()
        .map_err(|e| JobError::Config(format!("cannot create {name}: {e}")))?;
    Ok((f, fd))
}

/// Start the program as the job's options say; with `std_redirect`, also
/// the files its output goes to, to commit when it has ended.
fn start(
    spec: &crate::JobSpec,
    runtime: Option<Duration>,
) -> Result<(Child, Vec<OutputFile>), JobError> {
    let o = &spec.engine.noio.exec;
    let program = o.program.as_deref().unwrap_or_default();
    let runtime_s = runtime.map_or(0, |r| r.as_secs());
    let args = argv(program, o.arguments.as_deref(), runtime_s, &spec.name);
    let Some((first, rest)) = args.split_first() else {
        return Err(JobError::Config(format!(
            "job '{}': program is empty",
            spec.name
        )));
    };
    let mut cmd = Command::new(first);
    cmd.args(rest);
    let mut files = Vec::new();
    if o.std_redirect {
        let (out, err) = redirect_names(&spec.name);
        let (out, out_fd) = output_file(&out)?;
        let (err, err_fd) = output_file(&err)?;
        cmd.stdout(Stdio::from(out_fd));
        cmd.stderr(Stdio::from(err_fd));
        files = vec![out, err];
    }
    let child = cmd
        .spawn()
        .map_err(|e| JobError::Config(format!("cannot run program {program}: {e}")))?;
    Ok((child, files))
}

/// A status in a shell's terms: the exit code, or 128 + the signal.
fn shell_status(s: ExitStatus) -> i32 {
    s.code()
        .or_else(|| s.signal().map(|n| 128 + n))
        .unwrap_or(1)
}

/// Whether a program that ended on its own failed, and how.
fn failure(program: &str, s: ExitStatus) -> Option<ProgramFailure> {
    if s.success() {
        return None;
    }
    let words = match (s.code(), s.signal()) {
        (Some(c), _) => format!("program {program} exited with status {c} before the job's end"),
        (None, Some(n)) => {
            format!("program {program} was killed by signal {n} before the job's end")
        }
        _ => format!("program {program} ended with {s} before the job's end"),
    };
    Some(ProgramFailure {
        status: shell_status(s),
        words,
    })
}

/// End a program still running: SIGTERM, up to `grace` for it to end,
/// then SIGKILL; collect it either way.
fn end_program(child: &mut Child, grace: Duration) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    // Not collected yet, so the id is still this child's.
    if drivelab_engine::sys::terminate(child.id()).is_ok() {
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10).min(until - Instant::now()));
        }
    }
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Run the job: start the program, look at it every [`POLL`] until the
/// end, then end it. Returns the program's failure when it ended on its
/// own with one.
pub(crate) fn run(
    spec: &crate::JobSpec,
    runtime: Option<Duration>,
    end: &End<'_>,
    tally: &mut Tally,
) -> Result<Option<ProgramFailure>, JobError> {
    let program = spec.engine.noio.exec.program.clone().unwrap_or_default();
    let t = Instant::now();
    let (mut child, files) = start(spec, runtime)?;
    tally.record(t, Instant::now());
    let mut exited: Option<ExitStatus> = None;
    loop {
        if end.reached(Instant::now()) {
            break;
        }
        if exited.is_none() {
            exited = child.try_wait().ok().flatten();
            // Without a runtime the job lasts as long as its program.
            if exited.is_some() && end.deadline.is_none() {
                break;
            }
        }
        let t = Instant::now();
        end.sleep(POLL);
        tally.record(t, Instant::now());
        end.sleep(POLL);
    }
    let t = Instant::now();
    if exited.is_none() {
        exited = child.try_wait().ok().flatten();
    }
    match exited {
        Some(_) => {}
        None => end_program(
            &mut child,
            Duration::from_secs(spec.engine.noio.exec.grace_s),
        ),
    }
    // fio counts the end, grace time included, as the job's last "I/O".
    tally.record(t, Instant::now());
    for f in files {
        f.commit().map_err(|e| JobError::Config(e.to_string()))?;
    }
    Ok(exited.and_then(|s| failure(&program, s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_expand_and_split_as_fios() {
        assert_eq!(expand("%r %n %r", 30, "mon"), "30 mon 30");
        assert_eq!(
            argv("/bin/sleep", Some("%r"), 10, "sleep"),
            vec!["/bin/sleep", "10"]
        );
        assert_eq!(
            argv(
                "/usr/sbin/turbostat",
                Some("-c package  -qS --interval 5 -s Busy%,Bzy_MHz %n"),
                30,
                "monitoring_noop"
            ),
            vec![
                "/usr/sbin/turbostat",
                "-c",
                "package",
                "-qS",
                "--interval",
                "5",
                "-s",
                "Busy%,Bzy_MHz",
                "monitoring_noop"
            ]
        );
        assert_eq!(argv("true", None, 0, "x"), vec!["true"]);
        assert_eq!(
            redirect_names("m"),
            ("m.stdout".to_string(), "m.stderr".to_string())
        );
    }

    #[test]
    fn an_early_failure_is_the_jobs_error_in_a_shells_terms() {
        let s = |code: i32| ExitStatus::from_raw(code << 8);
        assert_eq!(failure("p", s(0)), None);
        let f = failure("p", s(3)).unwrap();
        assert_eq!(f.status, 3);
        assert!(f.words.contains("status 3"), "{}", f.words);
        let k = failure("p", ExitStatus::from_raw(libc::SIGKILL)).unwrap();
        assert_eq!(k.status, 128 + libc::SIGKILL);
        assert!(k.words.contains("signal 9"), "{}", k.words);
    }

    #[test]
    fn a_program_that_ignores_sigterm_is_killed_after_its_grace() {
        let mut c = Command::new("sh")
            .args(["-c", "trap '' TERM; while :; do sleep 0.05; done"])
            .spawn()
            .unwrap();
        // Let the shell set its trap.
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        end_program(&mut c, Duration::from_millis(300));
        assert!(t.elapsed() >= Duration::from_millis(300));
        assert!(matches!(c.try_wait(), Ok(Some(s)) if s.signal() == Some(libc::SIGKILL)));
        let mut d = Command::new("sleep").arg("30").spawn().unwrap();
        end_program(&mut d, Duration::from_secs(5));
        assert!(matches!(d.try_wait(), Ok(Some(s)) if s.signal() == Some(libc::SIGTERM)));
    }
}
