//! Environment files as systemd's `EnvironmentFile=` reads them: `NAME=value` lines, `#` and
//! `;` comments, blank lines, and values optionally wrapped in single or double quotes.

use std::collections::BTreeMap;

/// The variables of an environment file; a malformed line is an error naming its number.
pub fn parse_env_file(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut variables = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            return Err(format!("line {}: expected NAME=value", number + 1));
        };
        let name = name.trim();
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("line {}: `{name}` is not a variable name", number + 1));
        }
        let value = value.trim();
        let unquoted = ['"', '\'']
            .iter()
            .find_map(|quote| value.strip_prefix(*quote).and_then(|rest| rest.strip_suffix(*quote)))
            .unwrap_or(value);
        variables.insert(name.to_owned(), unquoted.to_owned());
    }
    Ok(variables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_assignments_comments_and_quotes() {
        let parsed =
            parse_env_file("# comment\n; another\n\nA=1\nB = \"two words\"\nexport C='x'\nD=\n").expect("parses");
        assert_eq!(parsed["A"], "1");
        assert_eq!(parsed["B"], "two words");
        assert_eq!(parsed["C"], "x");
        assert_eq!(parsed["D"], "");
    }

    #[test]
    fn refuses_malformed_lines() {
        assert_eq!(
            parse_env_file("A=1\nnot an assignment").expect_err("malformed"),
            "line 2: expected NAME=value"
        );
        assert!(parse_env_file("1A=x").is_err());
        assert!(parse_env_file("A-B=x").is_err());
    }
}
