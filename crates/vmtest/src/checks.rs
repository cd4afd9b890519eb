//! A list of named checks for one VM boot: every check is evaluated and
//! reported, and the test fails at the end naming each failed one, so one
//! boot (tens of seconds under TCG) tells about all of them at once.

/// Named checks and their outcomes.
#[derive(Debug, Default)]
pub struct Checks {
    results: Vec<(String, Result<(), String>)>,
}

impl Checks {
    /// No checks yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `name` as passed when `ok`, else failed with `detail`.
    pub fn check(&mut self, name: &str, ok: bool, detail: impl FnOnce() -> String) {
        let r = if ok { Ok(()) } else { Err(detail()) };
        self.results.push((name.to_string(), r));
    }

    /// Records the outcome of a check written as a closure returning
    /// `Err(reason)` on failure.
    pub fn run(&mut self, name: &str, f: impl FnOnce() -> Result<(), String>) {
        self.results.push((name.to_string(), f()));
    }

    /// Names of the failed checks with their reasons.
    pub fn failures(&self) -> Vec<String> {
        self.results
            .iter()
            .filter_map(|(n, r)| r.as_ref().err().map(|e| format!("{n}: {e}")))
            .collect()
    }

    /// Prints every outcome (failures first), then panics listing the failures (with
    /// `context` appended) if there are any.
    pub fn finish(self, context: &str) {
        // Failures first: a log cut to its first lines still names them.
        for f in self.failures() {
            println!("check FAILED: {f}");
        }
        for (n, r) in &self.results {
            if r.is_ok() {
                println!("check ok:     {n}");
            }
        }
        let failed = self.failures();
        assert!(
            failed.is_empty(),
            "{} of {} checks failed:\n{}\n{context}",
            failed.len(),
            self.results.len(),
            failed.join("\n")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_name_the_check_and_reason() {
        let mut c = Checks::new();
        c.check("one", true, || unreachable!());
        c.check("two", false, || "bad".into());
        c.run("three", || Err("worse".into()));
        assert_eq!(
            c.failures(),
            vec!["two: bad".to_string(), "three: worse".to_string()]
        );
    }

    #[test]
    #[should_panic(expected = "1 of 2 checks failed")]
    fn finish_panics_when_any_failed() {
        let mut c = Checks::new();
        c.check("a", true, String::new);
        c.check("deliberately failing", false, || "as intended".into());
        c.finish("ctx");
    }
}
