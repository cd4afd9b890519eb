//! fio's verify state (`verify_state_save`, `verify_state_load`): a
//! writing job with `verify` that ends before it has written all it was
//! to write leaves a state file saying how far it got, under fio's name
//! (`local-JOB-N-verify.state` in the current directory, N the job's
//! place in the run from 0); a later job with `verify_state_load` (most
//! often `verify_only`) then checks only what that run wrote, instead of
//! failing on blocks it never reached, as fio's `verify_state_should_stop`
//! (verify.c) stops it.
//!
//! The file is drivelab's own, one line: what it records is the number of
//! I/Os the job issued, from which the job's generator (the same job file
//! gives the same generator) lists the blocks written. fio's state holds
//! its generator's state and its headers' write numbers, which drivelab's
//! verify blocks do not carry, so neither tool reads the other's file.
//! A job that wrote everything leaves no file (its state would say:
//! check everything, as no state does).

/// The first word of a state file.
const HEAD: &str = "drivelab verify state 1:";

/// The state file's name for job `name`, the run's job `index` (from 0),
/// in `dir` (fio's `--aux-path`) or the current directory.
pub fn path(dir: Option<&std::path::Path>, name: &str, index: usize) -> String {
    let file = format!("local-{name}-{index}-verify.state");
    match dir {
        Some(d) => d.join(file).display().to_string(),
        None => file,
    }
}

/// Save that job `name` (`index`) issued `ios` I/Os, in `dir`.
pub fn save(
    dir: Option<&std::path::Path>,
    name: &str,
    index: usize,
    ios: u64,
) -> Result<(), String> {
    let p = path(dir, name, index);
    drivelab_device::output::Output::new(&p)
        .option("verify_state_save")
        .write(format!("{HEAD} ios={ios}\n").as_bytes())
        .map_err(|e| format!("verify_state_save: {p}: {e}"))
}

/// The I/Os job `name` (`index`) issued, as its state file in `dir` says.
pub fn load(dir: Option<&std::path::Path>, name: &str, index: usize) -> Result<u64, String> {
    let p = path(dir, name, index);
    let text = drivelab_device::input::read_string(
        std::path::Path::new(&p),
        drivelab_device::input::Kind::Journal,
    )
    .map_err(|e| {
        format!(
            "verify_state_load: {p}: {e} (a writing job with verify that ended early leaves it)"
        )
    })?;
    parse(&text).ok_or_else(|| {
        format!("verify_state_load: {p} is not a drivelab verify state ('{HEAD} ios=N'); fio's own state files are not read")
    })
}

fn parse(text: &str) -> Option<u64> {
    text.trim()
        .strip_prefix(HEAD)?
        .trim()
        .strip_prefix("ios=")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_read_back_and_anything_else_refused() {
        assert_eq!(parse("drivelab verify state 1: ios=20\n"), Some(20));
        assert_eq!(parse("drivelab verify state 1: ios=x"), None);
        assert_eq!(parse("\u{1}\0\0\0"), None);
        assert_eq!(path(None, "write", 0), "local-write-0-verify.state");
    }
}
