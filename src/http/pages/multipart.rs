//! `multipart/form-data` (RFC 7578), as browsers send a form with a file: the one form here
//! that has one is the post's, with its picture. The body is whole by the time a handler runs
//! (the front door reads it within its limit), so this splits bytes in memory: a few dozen
//! lines instead of a streaming parser and its dependencies.

/// One part of the form: its field's name, and its file's name and declared type where it is
/// a file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Part {
    /// The field's name.
    pub name: String,
    /// The file's name, for a file (`Some("")`: a file input left empty).
    pub filename: Option<String>,
    /// The declared media type, if any.
    pub content_type: Option<String>,
    /// The value or the file's bytes.
    pub body: bytes::Bytes,
}

/// The boundary a `Content-Type: multipart/form-data; boundary=...` declares, if it is one.
pub(crate) fn boundary(content_type: &str) -> Option<String> {
    let mut parameters = content_type.split(';');
    if !parameters.next()?.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    parameters.find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        let value = value.trim().trim_matches('"');
        (name.trim().eq_ignore_ascii_case("boundary") && !value.is_empty() && value.len() <= 70)
            .then(|| value.to_owned())
    })
}

/// The parts of `body`, delimited by `boundary`; an error says what is malformed, and where.
pub(crate) fn parts(body: &bytes::Bytes, boundary: &str) -> Result<Vec<Part>, MultipartError> {
    let delimiter = format!("--{boundary}");
    let finder = memchr::memmem::Finder::new(delimiter.as_bytes());
    let mut at = finder.find(body).ok_or(MultipartError::NoPart)? + delimiter.len();
    let mut parts = Vec::new();
    loop {
        if body[at..].starts_with(b"--") {
            return Ok(parts);
        }
        at += crlf(&body[at..]).ok_or(MultipartError::NoLineBreakAfterDelimiter { at })?;
        let next = at + finder.find(&body[at..]).ok_or(MultipartError::LastPartUnended { at })?;
        // The part ends with the line break before the next delimiter.
        let end = next
            .checked_sub(2)
            .filter(|end| *end >= at && &body[*end..next] == b"\r\n")
            .ok_or(MultipartError::NoLineBreakAtEnd { at: next })?;
        parts.push(part(body.slice(at..end), at)?);
        at = next + delimiter.len();
    }
}

fn crlf(bytes: &[u8]) -> Option<usize> {
    bytes.starts_with(b"\r\n").then_some(2)
}

/// One part, starting at byte `at` of the body: its headers up to the empty line, then its
/// body.
fn part(bytes: bytes::Bytes, at: usize) -> Result<Part, MultipartError> {
    let split =
        memchr::memmem::find(&bytes, b"\r\n\r\n").ok_or(MultipartError::HeadersUnended { at })?;
    let headers =
        std::str::from_utf8(&bytes[..split]).map_err(|_| MultipartError::HeadersNotText { at })?;
    let (mut name, mut filename, mut content_type) = (None, None, None);
    for line in headers.split("\r\n") {
        let Some((header, value)) = line.split_once(':') else { continue };
        if header.trim().eq_ignore_ascii_case("content-disposition") {
            name = parameter(value, "name");
            filename = parameter(value, "filename");
        } else if header.trim().eq_ignore_ascii_case("content-type") {
            content_type = Some(value.trim().to_owned());
        }
    }
    let name = name.ok_or(MultipartError::NoFieldName { at })?;
    Ok(Part { name, filename, content_type, body: bytes.slice(split + 4..) })
}

/// What is malformed in a multipart body, and at which byte of it: the offset is for a test or
/// a log line, the sentence (`Display`) for the person who sent the form, as the page says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MultipartError {
    /// The boundary never occurs.
    #[error("no part starts")]
    NoPart,
    /// A delimiter is followed by something other than a line break or `--`.
    #[error("a delimiter is not followed by a line break")]
    NoLineBreakAfterDelimiter {
        /// Where the line break should be.
        at: usize,
    },
    /// No delimiter follows the part that starts at `at`.
    #[error("the last part does not end")]
    LastPartUnended {
        /// Where the part starts.
        at: usize,
    },
    /// The delimiter at `at` is not preceded by a line break.
    #[error("a part does not end with a line break")]
    NoLineBreakAtEnd {
        /// Where the delimiter starts.
        at: usize,
    },
    /// The headers of the part that starts at `at` have no empty line after them.
    #[error("a part's headers do not end")]
    HeadersUnended {
        /// Where the part starts.
        at: usize,
    },
    /// The headers of the part that starts at `at` are not UTF-8.
    #[error("a part's headers are not text")]
    HeadersNotText {
        /// Where the part starts.
        at: usize,
    },
    /// The part that starts at `at` names no field.
    #[error("a part has no field name")]
    NoFieldName {
        /// Where the part starts.
        at: usize,
    },
}

/// The parameter `wanted` of a `Content-Disposition` value (`form-data; name="title"`).
/// Browsers escape `"` in names as `%22` (the HTML standard's multipart encoding), so a quoted
/// value ends at the next quote.
fn parameter(value: &str, wanted: &str) -> Option<String> {
    let mut rest = value;
    while let Some(at) = rest.find(';') {
        rest = rest[at + 1..].trim_start();
        let (name, after) = rest.split_once('=')?;
        let quoted = after.strip_prefix('"');
        let (text, remaining) = match quoted {
            Some(quoted) => {
                let end = quoted.find('"')?;
                (&quoted[..end], &quoted[end + 1..])
            }
            None => {
                after.split_once(';').map_or((after, ""), |(text, _)| (text, &after[text.len()..]))
            }
        };
        if name.trim().eq_ignore_ascii_case(wanted) {
            return Some(text.trim().to_owned());
        }
        rest = remaining;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A form as Chromium sends it (`FormData` of a `<form enctype="multipart/form-data">`),
    /// with a text field, a file and a file input left empty.
    #[test]
    fn a_browsers_form_is_read_field_by_field() {
        let boundary = "----WebKitFormBoundaryx8Hk3rXj2Ly6QeZn";
        let body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nKites; and \"more\"\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"picture\"; filename=\"kite.png\"\r\nContent-Type: image/png\r\n\r\n\
             PNG\r\n\x1a\n--not-the-boundary\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"other\"; filename=\"\"\r\nContent-Type: application/octet-stream\r\n\r\n\r\n\
             --{boundary}--\r\n"
        );
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let found =
            parts(&bytes::Bytes::from(body), &super::boundary(&content_type).unwrap()).unwrap();
        assert_eq!(found.len(), 3);
        assert_eq!(
            (found[0].name.as_str(), &found[0].body[..]),
            ("title", &b"Kites; and \"more\""[..])
        );
        assert_eq!(found[1].filename.as_deref(), Some("kite.png"));
        assert_eq!(found[1].content_type.as_deref(), Some("image/png"));
        assert_eq!(&found[1].body[..], b"PNG\r\n\x1a\n--not-the-boundary");
        assert_eq!((found[2].filename.as_deref(), found[2].body.len()), (Some(""), 0));
    }

    #[test]
    fn a_malformed_form_is_refused_with_what_is_wrong() {
        assert_eq!(boundary("application/x-www-form-urlencoded"), None);
        assert_eq!(boundary("multipart/form-data"), None);
        let cut = bytes::Bytes::from_static(
            b"--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno end",
        );
        assert_eq!(parts(&cut, "b"), Err(MultipartError::LastPartUnended { at: 5 }));
        let nameless =
            bytes::Bytes::from_static(b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--");
        assert_eq!(parts(&nameless, "b"), Err(MultipartError::NoFieldName { at: 5 }));
        assert_eq!(parts(&nameless, "c"), Err(MultipartError::NoPart));
        let glued = bytes::Bytes::from_static(
            b"--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx--b--",
        );
        assert_eq!(parts(&glued, "b"), Err(MultipartError::NoLineBreakAtEnd { at: 50 }));
        assert_eq!(MultipartError::NoFieldName { at: 5 }.to_string(), "a part has no field name");
    }
}
