//! `--param key=value` pairs, with typed access that rejects unknown keys
//! and malformed values, naming the key.

use crate::PolicyError;
use std::collections::BTreeMap;
use std::str::FromStr;

/// Parameters given to a policy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    values: BTreeMap<String, String>,
}

/// One parameter a policy accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    /// Key.
    pub key: &'static str,
    /// What it means, with its unit and default.
    pub help: &'static str,
}

impl Params {
    /// Parse `key=value` strings.
    pub fn parse<'a>(pairs: impl IntoIterator<Item = &'a str>) -> Result<Self, PolicyError> {
        let mut values = BTreeMap::new();
        for pair in pairs {
            let (k, v) = pair.split_once('=').ok_or_else(|| PolicyError::BadParam {
                key: pair.to_string(),
                value: String::new(),
                reason: "expected key=value".into(),
            })?;
            values.insert(k.trim().to_string(), v.trim().to_string());
        }
        Ok(Params { values })
    }

    /// Set one value.
    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.values.insert(key.to_string(), value.to_string());
        self
    }

    /// Fail on any key not in `specs`.
    pub fn check_keys(&self, policy: &str, specs: &[ParamSpec]) -> Result<(), PolicyError> {
        for key in self.values.keys() {
            if !specs.iter().any(|s| s.key == key) {
                return Err(PolicyError::UnknownParam {
                    policy: policy.to_string(),
                    key: key.clone(),
                    valid: specs.iter().map(|s| s.key.to_string()).collect(),
                });
            }
        }
        Ok(())
    }

    /// A typed value, if given.
    pub fn get<T: FromStr>(&self, key: &str) -> Result<Option<T>, PolicyError>
    where
        T::Err: std::fmt::Display,
    {
        self.values
            .get(key)
            .map(|v| {
                v.parse::<T>().map_err(|e| PolicyError::BadParam {
                    key: key.to_string(),
                    value: v.clone(),
                    reason: e.to_string(),
                })
            })
            .transpose()
    }

    /// Every key and value, for reports.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_types() {
        let p = Params::parse(["freq_mhz=1600", "cpus = 0-3"]).unwrap();
        assert_eq!(p.get::<u64>("freq_mhz").unwrap(), Some(1600));
        assert_eq!(p.get::<String>("cpus").unwrap().as_deref(), Some("0-3"));
        assert_eq!(p.get::<u64>("absent").unwrap(), None);
        assert!(p.get::<u64>("cpus").is_err());
        assert!(Params::parse(["novalue"]).is_err());
    }

    #[test]
    fn unknown_key_lists_valid_ones() {
        let p = Params::parse(["freq=1"]).unwrap();
        let err = p
            .check_keys(
                "fixed",
                &[ParamSpec {
                    key: "freq_mhz",
                    help: "",
                }],
            )
            .unwrap_err();
        assert!(
            err.to_string().contains("valid parameters: freq_mhz"),
            "{err}"
        );
    }
}
