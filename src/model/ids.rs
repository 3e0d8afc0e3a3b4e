//! Ids: which strings can be the id of a Cosmos DB item here.

/// The longest id accepted in a path: Cosmos allows 255 bytes.
pub(crate) const MAX_ID_BYTES: usize = 255;

/// How the ids of the records of keyed requests start (`app::idempotency`): items read by their
/// id alone, never listed, which the embedded store therefore keeps on disk only. No other item
/// may have such an id ([`validate_id`]), so the prefix alone tells a record.
pub(crate) const REQUEST_RECORD_PREFIX: &str = "request-";

/// Why `id` cannot be a Cosmos item id, if it cannot. An id travels as one segment of a
/// resource path (`dbs/blog/colls/posts/docs/{id}`, in the SDK's requests and in the scripts'
/// links), so it must be one that such a segment carries unchanged:
/// - not `/ \ ? #`, which Cosmos DB refuses in ids (they end or split a path);
/// - not `%`, which a path reads as the start of an escape (`a%2Fb` would be read as `a/b`);
/// - not `.` or `..` alone, which a path resolves as "this" and "the parent" segment;
/// - printable ASCII only (ids are generated here as UUIDs and `like-<userId>`, and principal ids
///   are GUIDs), 1 to 255 bytes;
/// - not starting with [`REQUEST_RECORD_PREFIX`], which is the blog's own records'.
pub fn validate_id(id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        return Err(IdError::Empty);
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong { length: id.len() });
    }
    if id == "." || id == ".." {
        return Err(IdError::RelativeSegment { id: id.to_owned() });
    }
    if let Some((at, character)) =
        id.char_indices().find(|(_, c)| matches!(c, '/' | '\\' | '?' | '#' | '%'))
    {
        return Err(IdError::PathCharacter { character, at });
    }
    if let Some((at, character)) = id.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        return Err(IdError::NotPrintable { character, at });
    }
    if id.starts_with(REQUEST_RECORD_PREFIX) {
        return Err(IdError::RequestRecord);
    }
    Ok(())
}

/// Why a string cannot be an id ([`validate_id`]). `Display` is the sentence the API answers
/// with (its problem's `detail`), so it names the rule and not the request's field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The id is empty.
    #[error("The id must not be empty.")]
    Empty,
    /// The id is longer than Cosmos DB takes.
    #[error("The id must be at most {} bytes long.", MAX_ID_BYTES)]
    TooLong {
        /// Its length in bytes.
        length: usize,
    },
    /// The id is `.` or `..`.
    #[error("The id must not be {id:?}: a resource path reads it as a relative segment.")]
    RelativeSegment {
        /// The id.
        id: String,
    },
    /// The id holds a character that ends, splits or escapes a path segment.
    #[error(
        "The id must not contain {character:?}: a Cosmos DB resource path cannot carry / \\ ? # % in an id."
    )]
    PathCharacter {
        /// The first such character.
        character: char,
        /// Its byte offset in the id.
        at: usize,
    },
    /// The id holds a character that is not printable ASCII, or a space.
    #[error("The id must not contain {character:?}: ids are printable ASCII without spaces.")]
    NotPrintable {
        /// The first such character.
        character: char,
        /// Its byte offset in the id.
        at: usize,
    },
    /// The id starts as the blog's records of keyed requests do.
    #[error(
        "The id must not start with {:?}: such ids are the blog's records of keyed requests.",
        REQUEST_RECORD_PREFIX
    )]
    RequestRecord,
}

/// `bytes` in lowercase hex, as the ids and names made from a SHA-256 carry it.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::{IdError, MAX_ID_BYTES, validate_id};

    #[test]
    fn a_refusal_locates_the_broken_rule() {
        assert_eq!(validate_id(""), Err(IdError::Empty));
        assert_eq!(validate_id(&"x".repeat(300)), Err(IdError::TooLong { length: 300 }));
        assert_eq!(validate_id(".."), Err(IdError::RelativeSegment { id: "..".into() }));
        assert_eq!(validate_id("ab/c"), Err(IdError::PathCharacter { character: '/', at: 2 }));
        assert_eq!(validate_id("é b"), Err(IdError::NotPrintable { character: 'é', at: 0 }));
        assert_eq!(validate_id("a b"), Err(IdError::NotPrintable { character: ' ', at: 1 }));
        assert_eq!(validate_id("request-1"), Err(IdError::RequestRecord));
        // The API's detail, unchanged.
        assert_eq!(
            IdError::PathCharacter { character: '/', at: 2 }.to_string(),
            "The id must not contain '/': a Cosmos DB resource path cannot carry / \\ ? # % in an id."
        );
        assert_eq!(
            IdError::TooLong { length: 300 }.to_string(),
            format!("The id must be at most {MAX_ID_BYTES} bytes long.")
        );
    }

    #[test]
    fn ids_cosmos_cannot_store_are_refused() {
        for bad in [
            "",
            "  ",
            "a b",
            "é",
            "request-1",
            "a/b",
            "a\\b",
            "a?b",
            "a#b",
            "a%2Fb",
            "%",
            ".",
            "..",
            "a\u{0}b",
            "a\nb",
            &"x".repeat(256),
        ] {
            assert!(validate_id(bad).is_err(), "{bad:?} should be refused");
        }
        for good in [
            "0b7d6c1e-8a6f-4b6e-9f1e-2d3c4b5a6978",
            "like-u1",
            "requests",
            "a-request-1",
            "!$&'()*+,-.:;<=>@[]^_`{|}~",
            "...",
            ".a",
            "a..b",
            &"x".repeat(255),
        ] {
            assert!(validate_id(good).is_ok(), "{good:?} should be accepted");
        }
    }
}
