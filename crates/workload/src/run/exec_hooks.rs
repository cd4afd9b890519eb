//! fio's `exec_prerun` and `exec_postrun`: a shell command run before a
//! job's I/O and one after it, its output (stdout and stderr of its last
//! command, as fio's `CMD > FILE 2>&1` gives) in `JOBNAME.prerun.txt` /
//! `JOBNAME.postrun.txt` in the current directory, as fio's
//! `exec_string` writes them. A prerun command that
//! fails ends the job before any I/O, as in fio. One family
//! ([`ExecHooks`]).

use std::process::Command;

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::SpecError;

/// The commands run around a job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecHooks {
    /// `exec_prerun`.
    pub prerun: Option<String>,
    /// `exec_postrun`.
    pub postrun: Option<String>,
}

impl ExecHooks {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "exec_prerun",
            [],
            Text,
            "",
            "run this shell command before the job's I/O, its output in JOBNAME.prerun.txt; a failure ends the job"
        ),
        opt!(
            "exec_postrun",
            [],
            Text,
            "",
            "run this shell command after the job, its output in JOBNAME.postrun.txt"
        ),
    ];

    /// Run the `mode` ("prerun" or "postrun") command of job `job`, if
    /// set: Err names the command and what went wrong.
    pub fn run(&self, job: &str, mode: &str) -> Result<(), String> {
        let cmd = match mode {
            "prerun" => &self.prerun,
            _ => &self.postrun,
        };
        let Some(cmd) = cmd else { return Ok(()) };
        let key = format!("exec_{mode}");
        let fail = |what: String| format!("{key}: '{cmd}': {what}");
        let out = drivelab_device::output::Output::new(format!("{job}.{mode}.txt")).option(&key);
        let mut file = out.create().map_err(|e| fail(e.to_string()))?;
        let stdout = file.try_clone_file().map_err(|e| fail(e.to_string()))?;
        // fio runs `CMD > JOB.MODE.txt 2>&1` with system(): the redirection
        // is the last command's. The file (made by Output) comes in as
        // fd 0, moved to fd 3 for that redirection.
        let status = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("exec 3<&0 0</dev/null; {cmd} >&3 2>&1"))
            .stdin(stdout)
            .status()
            .map_err(|e| fail(e.to_string()))?;
        file.commit().map_err(|e| fail(e.to_string()))?;
        if status.success() {
            Ok(())
        } else {
            Err(fail(format!("exited with {status}")))
        }
    }
}

impl OptionFamily for ExecHooks {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let cmd = v.trim();
        if cmd.is_empty() {
            return Err(SpecError::MissingValue(key.to_string()));
        }
        let slot = match key {
            "exec_prerun" => &mut self.prerun,
            _ => &mut self.postrun,
        };
        *slot = Some(cmd.to_string());
        Ok(())
    }
}
