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
        (name.trim().eq_ignore_ascii_case("boundary") && !value.is_empty() && value.len() <= 70).then(|| value.to_owned())
    })
}

/// The parts of `body`, delimited by `boundary`; an error says what is malformed.
pub(crate) fn parts(body: &bytes::Bytes, boundary: &str) -> Result<Vec<Part>, String> {
    let delimiter = format!("--{boundary}");
    let finder = memchr::memmem::Finder::new(delimiter.as_bytes());
    let mut at = finder.find(body).ok_or("no part starts")? + delimiter.len();
    let mut parts = Vec::new();
    loop {
        if body[at..].starts_with(b"--") {
            return Ok(parts);
        }
        at += crlf(&body[at..]).ok_or("a delimiter is not followed by a line break")?;
        let next = at + finder.find(&body[at..]).ok_or("the last part does not end")?;
        // The part ends with the line break before the next delimiter.
        let end = next
            .checked_sub(2)
            .filter(|end| *end >= at && &body[*end..next] == b"\r\n")
            .ok_or("a part does not end with a line break")?;
        parts.push(part(body.slice(at..end))?);
        at = next + delimiter.len();
    }
}

fn crlf(bytes: &[u8]) -> Option<usize> {
    bytes.starts_with(b"\r\n").then_some(2)
}

/// One part: its headers up to the empty line, then its body.
fn part(bytes: bytes::Bytes) -> Result<Part, String> {
    let split = memchr::memmem::find(&bytes, b"\r\n\r\n").ok_or("a part's headers do not end")?;
    let headers = std::str::from_utf8(&bytes[..split]).map_err(|_| "a part's headers are not text")?;
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
    let name = name.ok_or("a part has no field name")?;
    Ok(Part { name, filename, content_type, body: bytes.slice(split + 4..) })
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
            None => after.split_once(';').map_or((after, ""), |(text, _)| (text, &after[text.len()..])),
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
        let found = parts(&bytes::Bytes::from(body), &super::boundary(&content_type).unwrap()).unwrap();
        assert_eq!(found.len(), 3);
        assert_eq!((found[0].name.as_str(), &found[0].body[..]), ("title", &b"Kites; and \"more\""[..]));
        assert_eq!(found[1].filename.as_deref(), Some("kite.png"));
        assert_eq!(found[1].content_type.as_deref(), Some("image/png"));
        assert_eq!(&found[1].body[..], b"PNG\r\n\x1a\n--not-the-boundary");
        assert_eq!((found[2].filename.as_deref(), found[2].body.len()), (Some(""), 0));
    }

    #[test]
    fn a_malformed_form_is_refused_with_what_is_wrong() {
        assert_eq!(boundary("application/x-www-form-urlencoded"), None);
        assert_eq!(boundary("multipart/form-data"), None);
        let cut = bytes::Bytes::from_static(b"--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno end");
        assert!(parts(&cut, "b").unwrap_err().contains("does not end"));
        let nameless = bytes::Bytes::from_static(b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--");
        assert!(parts(&nameless, "b").unwrap_err().contains("no field name"));
    }
}
