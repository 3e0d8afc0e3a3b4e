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
pub fn validate_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("The id must not be empty.".into());
    }
    if id.len() > MAX_ID_BYTES {
        return Err(format!("The id must be at most {MAX_ID_BYTES} bytes long."));
    }
    if id == "." || id == ".." {
        return Err(format!("The id must not be {id:?}: a resource path reads it as a relative segment."));
    }
    if let Some(bad) = id.chars().find(|c| matches!(c, '/' | '\\' | '?' | '#' | '%')) {
        return Err(format!("The id must not contain {bad:?}: a Cosmos DB resource path cannot carry / \\ ? # % in an id."));
    }
    if let Some(bad) = id.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!("The id must not contain {bad:?}: ids are printable ASCII without spaces."));
    }
    if id.starts_with(REQUEST_RECORD_PREFIX) {
        return Err(format!(
            "The id must not start with {REQUEST_RECORD_PREFIX:?}: such ids are the blog's records of keyed requests."
        ));
    }
    Ok(())
}

/// `bytes` in lowercase hex, as the ids and names made from a SHA-256 carry it.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::validate_id;

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
