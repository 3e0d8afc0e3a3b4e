//! Why the settings were refused: which setting, the value it holds, and what it must be, as
//! data, so that a test or a caller tells the cases apart by variant rather than by the words.

/// A setting the handler cannot start with. `Display` says which setting and what to write
/// instead; the value is echoed except where it is a secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The value is not of the form the setting takes (a port, an address, a name, a number).
    #[error("{name} must be {expected}, not {value:?}")]
    Invalid {
        /// The setting.
        name: &'static str,
        /// What it holds.
        value: String,
        /// What it must be, in words.
        expected: &'static str,
    },
    /// The value is none of the words the setting takes.
    #[error("{name} must be {}, not {value:?}", one_of(allowed))]
    NotOneOf {
        /// The setting.
        name: &'static str,
        /// What it holds.
        value: String,
        /// The words it takes.
        allowed: Vec<&'static str>,
    },
    /// The value is not a whole number within the setting's range.
    #[error("{name} must be {what} from {min} to {max}, not {value:?}")]
    OutOfRange {
        /// The setting.
        name: &'static str,
        /// What it holds.
        value: String,
        /// What the number counts.
        what: &'static str,
        /// The least it may be.
        min: u64,
        /// The most it may be.
        max: u64,
    },
    /// A secret is shorter than a key must be; its value is never repeated.
    #[error(
        "{name} must be at least {min} characters (a random secret, the same on every instance); it has {length}"
    )]
    TooShort {
        /// The setting.
        name: &'static str,
        /// How many characters it holds.
        length: usize,
        /// The fewest it may hold.
        min: usize,
    },
    /// Two settings that say the same thing two ways are both set.
    #[error("set either {first} or {second}, not both")]
    Conflict {
        /// One of them.
        first: &'static str,
        /// The other.
        second: &'static str,
    },
    /// `BLOG_WRITE_BURST` is set while `BLOG_WRITES_PER_MINUTE=off` turns the limit off.
    #[error("BLOG_WRITE_BURST is set, but BLOG_WRITES_PER_MINUTE is off")]
    BurstWithoutLimit,
    /// `BLOG_SCRIPTS=server` on the embedded store, which cannot run scripts.
    #[error("BLOG_SCRIPTS=server needs a Cosmos DB account; the embedded store cannot run scripts")]
    ServerScriptsWithoutAccount,
    /// `BLOG_AUTH=platform` where App Service Authentication is off: nothing would vouch for the
    /// headers it trusts.
    #[error("BLOG_AUTH=platform needs App Service Authentication on (WEBSITE_AUTH_ENABLED=true)")]
    PlatformAuthOff,
    /// `BLOG_AUTH=development` where App Service Authentication is on, that is, on Azure.
    #[cfg(feature = "embedded")]
    #[error("BLOG_AUTH=development is refused where App Service Authentication is on")]
    DevelopmentAuthOnPlatform,
    /// Neither account setting is set, in a build without the embedded store.
    #[cfg(not(feature = "embedded"))]
    #[error(
        "no Cosmos DB account configured: set {} (connection string) or {} (Entra ID); this build has no embedded store",
        super::CONNECTION_SETTING,
        super::ACCOUNT_ENDPOINT_SETTING
    )]
    NoAccount,
}

/// `a`, `a or b`, `a, b or c`.
fn one_of(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [only] => (*only).to_owned(),
        [first @ .., last] => format!("{} or {last}", first.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::{ConfigError, one_of};

    #[test]
    fn choices_are_listed_as_a_sentence_says_them() {
        assert_eq!(one_of(&["true"]), "true");
        assert_eq!(one_of(&["true", "false"]), "true or false");
        assert_eq!(one_of(&["platform", "none", "development"]), "platform, none or development");
        let refused = ConfigError::NotOneOf {
            name: "BLOG_CHANGE_FEED",
            value: "sometimes".into(),
            allowed: vec!["local", "host"],
        };
        assert_eq!(
            refused.to_string(),
            "BLOG_CHANGE_FEED must be local or host, not \"sometimes\""
        );
    }

    #[test]
    fn a_short_secret_is_not_repeated() {
        let refused = ConfigError::TooShort { name: "BLOG_TOKEN_KEY", length: 6, min: 16 };
        assert!(
            refused.to_string().starts_with("BLOG_TOKEN_KEY must be at least 16 characters"),
            "{refused}"
        );
    }
}
