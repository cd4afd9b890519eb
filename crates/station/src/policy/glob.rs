//! Shell-style patterns for bays, models and serials: `*` (any run of
//! characters, `/` included, as in udev's by-path names which hold none),
//! `?` (one character) and `[abc]` / `[a-z]` / `[!a-z]` (one of a set).
//! A pattern matches the whole name.

/// Whether `pattern` matches all of `name`.
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matching with one backtrack point for the last `*`:
    // linear in practice, never exponential.
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
            continue;
        }
        if pi < p.len() {
            if let Some((ok, len)) = one(&p[pi..], n[ni]) {
                if ok {
                    pi += len;
                    ni += 1;
                    continue;
                }
            }
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Match one character against the pattern element at the start of `p`:
/// (matched, elements used), or None when `p` is empty.
fn one(p: &[char], c: char) -> Option<(bool, usize)> {
    match p.first()? {
        '?' => Some((true, 1)),
        '[' => match p.iter().skip(1).position(|x| *x == ']') {
            // "[]" or "[!]" alone, or no closing bracket: a literal '['.
            Some(close) if close > 0 => {
                let set = &p[1..=close];
                let (negate, set) = match set.first() {
                    Some('!') | Some('^') => (true, &set[1..]),
                    _ => (false, set),
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= set[i] <= c && c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == c;
                        i += 1;
                    }
                }
                Some((hit != negate, close + 2))
            }
            _ => Some((c == '[', 1)),
        },
        x => Some((*x == c, 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns_match_whole_names() {
        let table = [
            ("pci-0000:00:1f.2-ata-*", "pci-0000:00:1f.2-ata-3", true),
            ("pci-0000:00:1f.2-ata-*", "pci-0000:00:1f.2-ata-3.0", true),
            ("pci-0000:00:1f.2-ata-?", "pci-0000:00:1f.2-ata-12", false),
            ("pci-*-nvme-[1-4]", "pci-0000:03:00.0-nvme-2", true),
            ("pci-*-nvme-[1-4]", "pci-0000:03:00.0-nvme-5", false),
            ("pci-*-nvme-[!1]", "pci-0000:03:00.0-nvme-1", false),
            ("/dev/loop*", "/dev/loop12", true),
            ("/dev/loop1", "/dev/loop12", false),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("[", "[", true),
            ("WDC*", "WDC WD10EZEX", true),
        ];
        for (p, n, want) in table {
            assert_eq!(matches(p, n), want, "{p:?} vs {n:?}");
        }
    }
}
